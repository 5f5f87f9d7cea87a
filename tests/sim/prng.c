/* SPDX-License-Identifier: MIT */
/*
 * prng.c: xoshiro256** and splitmix64 (public domain reference code by
 * David Blackman and Sebastiano Vigna, prng.di.unimi.it), written out here.
 */
#include <stdint.h>

#include "prng.h"

uint64_t
prng_splitmix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void
prng_seed(struct prng *p, uint64_t seed)
{
	int i;

	for (i = 0; i < 4; i++)
		p->s[i] = prng_splitmix(&seed);
}

static uint64_t
prng_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t
prng_next(struct prng *p)
{
	uint64_t *s = p->s;
	uint64_t result = prng_rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = prng_rotl(s[3], 45);
	return result;
}

uint64_t
prng_below(struct prng *p, uint64_t n)
{
	/* Rejection keeps the result uniform whatever n is. */
	uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;

	do
		x = prng_next(p);
	while (x >= lim);
	return x % n;
}

int
prng_ppm(struct prng *p, uint32_t ppm)
{
	return prng_below(p, 1000000) < ppm;
}
