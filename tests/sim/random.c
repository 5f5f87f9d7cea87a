/* SPDX-License-Identifier: MIT */
/*
 * random.c: libsodium's randomness, drawn from the schedule's generator.
 *
 * Owner tokens and payment ids come from crypto_random (randombytes_buf);
 * for a seed to name one schedule they must come from the seed too.
 * libsodium lets a program replace its generator before sodium_init
 * (randombytes_set_implementation), which is the one reason this file
 * includes sodium.h.  A simulator build must never serve real traffic.
 */
#include <sodium.h>
#include <string.h>

#include "sim.h"

static const char *
sim_random_name(void)
{
	return "idem-sim";
}

static uint32_t
sim_random_u32(void)
{
	return (uint32_t)prng_next(&W.rng);
}

static void
sim_random_buf(void *const buf, const size_t size)
{
	uint8_t *p = buf;
	uint64_t v;
	size_t i, n;

	for (i = 0; i < size; i += n) {
		v = prng_next(&W.rng);
		n = size - i < sizeof(v) ? size - i : sizeof(v);
		memcpy(p + i, &v, n);
	}
}

static randombytes_implementation sim_random_impl = {
	.implementation_name = sim_random_name,
	.random = sim_random_u32,
	.buf = sim_random_buf,
};

void
sim_random_install(void)
{
	randombytes_set_implementation(&sim_random_impl);
}
