/* SPDX-License-Identifier: MIT */
/*
 * test_random.c: crypto_random draws from libsodium's randombytes on
 * every call, keeping nothing between calls that a fork child could
 * hand out again.
 */
#include <sodium.h>
#include <stdint.h>
#include <string.h>

#include "crypto.h"
#include "harness.h"

/* A generator whose output is its position: byte i of the stream is i. */
static uint32_t counter;

static const char *
counter_name(void)
{
	return "counter";
}

static uint32_t
counter_u32(void)
{
	return counter++;
}

static void
counter_buf(void *const buf, const size_t size)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < size; i++)
		p[i] = (uint8_t)counter++;
}

static randombytes_implementation counter_impl = {
	.implementation_name = counter_name,
	.random = counter_u32,
	.buf = counter_buf,
};

/*
 * Each draw is the generator's next bytes, exactly as many as asked:
 * with the stream started again the draw starts again too, so nothing
 * was drawn ahead and kept.
 */
static void
test_every_call_draws(void)
{
	uint8_t a[16], b[16], want[16];
	size_t i;

	randombytes_set_implementation(&counter_impl);
	counter = 0;
	crypto_random(a, sizeof(a));
	crypto_random(b, sizeof(b));
	for (i = 0; i < sizeof(want); i++)
		want[i] = (uint8_t)i;
	CU_ASSERT(memcmp(a, want, sizeof(a)) == 0);
	for (i = 0; i < sizeof(want); i++)
		want[i] = (uint8_t)(16 + i);
	CU_ASSERT(memcmp(b, want, sizeof(b)) == 0);
	HARNESS_EQ(counter, 32);
	counter = 0;
	crypto_random(b, sizeof(b));
	CU_ASSERT(memcmp(a, b, sizeof(a)) == 0);
}

int
harness_suites(void)
{
	CU_pSuite s;

	if ((s = CU_add_suite("random", NULL, NULL)) == NULL ||
	    CU_add_test(s, "every call draws from libsodium",
	    test_every_call_draws) == NULL)
		return -1;
	return 0;
}
