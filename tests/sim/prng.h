/* SPDX-License-Identifier: MIT */
/*
 * prng.h: the simulator's one source of choices.
 *
 * xoshiro256** (Blackman and Vigna, 2018), seeded by expanding the 64-bit
 * seed with splitmix64, as its authors recommend.  Every choice a schedule
 * makes (who runs next, what a client sends, which fault strikes, every
 * byte libsodium is asked for) is drawn from one generator, so a seed names
 * exactly one schedule.
 */
#ifndef SIM_PRNG_H
#define SIM_PRNG_H

#include <stdint.h>

struct prng {
	uint64_t s[4];
};

void prng_seed(struct prng *p, uint64_t seed);
uint64_t prng_next(struct prng *p);
/* Uniform in [0, n), n > 0 . */
uint64_t prng_below(struct prng *p, uint64_t n);
/* 1 with probability ppm / 1,000,000. */
int prng_ppm(struct prng *p, uint32_t ppm);
/* splitmix64 step: also used to derive the sweep's seeds from its own. */
uint64_t prng_splitmix(uint64_t *state);

#endif
