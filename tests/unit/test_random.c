/*
 * test_random.c: crypto_random's per-thread pool hands out each byte
 * once, and crypto_random_forget makes it draw afresh.
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
 * Draws from a stream that starts again: after forget, the first draw is
 * what the first draw was; without it, the pool goes on with bytes it
 * has not handed out, none of them a byte it has.
 */
static void
test_forget(void)
{
	uint8_t a[16], b[16], c[16];

	randombytes_set_implementation(&counter_impl);
	crypto_random_forget();
	counter = 0;
	crypto_random(a, sizeof(a));
	crypto_random(b, sizeof(b));
	CU_ASSERT(memcmp(a, b, sizeof(a)) != 0);
	counter = 0;
	crypto_random(c, sizeof(c));
	CU_ASSERT(memcmp(c, a, sizeof(a)) != 0);
	CU_ASSERT(memcmp(c, b, sizeof(b)) != 0);
	counter = 0;
	crypto_random_forget();
	crypto_random(c, sizeof(c));
	CU_ASSERT(memcmp(c, a, sizeof(a)) == 0);
}

int
harness_suites(void)
{
	CU_pSuite s;

	if ((s = CU_add_suite("random", NULL, NULL)) == NULL ||
	    CU_add_test(s, "forget draws afresh", test_forget) == NULL)
		return -1;
	return 0;
}
