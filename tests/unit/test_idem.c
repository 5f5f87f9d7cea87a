/*
 * Unit tests of the library's entry point: idem_begin (the fast path and
 * the claim) and idem_retry_after.
 */
#include <stdio.h>
#include <string.h>

#include "crypto.h"
#include "err.h"
#include "harness.h"
#include "idem.h"
#include "metrics.h"

#define T0 1700000000000ULL
#define LEASE 30000ULL
#define TTL 86400000ULL

static char dir[512];
static struct store *st;
static uint8_t fp_a[FP_SIZE], fp_b[FP_SIZE];
static const struct idem_policy pol = { LEASE, TTL };

static int
suite_init(void)
{
	if (crypto_init() != IDEM_OK)
		return -1;
	memset(fp_a, 0xaa, sizeof(fp_a));
	memset(fp_b, 0xbb, sizeof(fp_b));
	return 0;
}

static void
up(void)
{
	struct store_config cfg = { NULL, 0, 0, 0, 0 };

	harness_mkdtemp(dir, sizeof(dir));
	cfg.dir = dir;
	st = NULL;
	if (store_open(&cfg, &st) != IDEM_OK)
		st = NULL;
}

static void
down(void)
{
	metrics_close();
	store_close(st);
	harness_rmdir(dir);
}

static const char cp[] = "pay_123";

/* Makes the recovery point, and counts how often it was asked for. */
static int
make_first(void *ctx, struct store_first *out)
{
	(*(int *)ctx)++;
	*out = (struct store_first){ 1, cp, sizeof(cp) };
	return IDEM_OK;
}

/*
 * A fresh claim carries the recovery point it was given, in the claim's
 * own write; a duplicate sees it in progress; a take-over keeps it.  The
 * point is made only when a claim is about to be made: never for a
 * conflict or a mismatch answered from the read transaction.
 */
static void
test_claim_with_first(void)
{
	struct idem_claim c;
	int made = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(idem_begin(st, "s", "k", fp_a, T0, &pol, make_first, &made,
	    &c), IDEM_OK);
	HARNESS_EQ(made, 1);
	HARNESS_EQ(c.decision, ENGINE_CLAIM);
	HARNESS_EQ(c.rec.stage, 1);
	HARNESS_EQ(c.rec.cplen, sizeof(cp));
	CU_ASSERT(c.rec.cplen == sizeof(cp) &&
	    memcmp(c.rec.cp, cp, sizeof(cp)) == 0);
	rec_free(&c.rec);

	HARNESS_EQ(idem_begin(st, "s", "k", fp_a, T0 + 1, &pol, make_first,
	    &made, &c), IDEM_OK);
	HARNESS_EQ(c.decision, ENGINE_CONFLICT);
	rec_free(&c.rec);
	HARNESS_EQ(idem_begin(st, "s", "k", fp_b, T0 + 1, &pol, make_first,
	    &made, &c), IDEM_OK);
	HARNESS_EQ(c.decision, ENGINE_MISMATCH);
	rec_free(&c.rec);
	HARNESS_EQ(made, 1);

	/* The take-over's own first is ignored: the claim's point stands. */
	HARNESS_EQ(idem_begin(st, "s", "k", fp_a, T0 + LEASE, &pol, make_first,
	    &made, &c), IDEM_OK);
	HARNESS_EQ(c.decision, ENGINE_TAKEOVER);
	HARNESS_EQ(c.rec.stage, 1);
	HARNESS_EQ(c.rec.attempts, 2);
	rec_free(&c.rec);
}

/* A conflict at elapsed ms into a 30 s lease that has lease_left s left. */
static uint32_t
wait_at(uint64_t elapsed, uint32_t lease_left)
{
	struct idem_claim c;

	memset(&c, 0, sizeof(c));
	c.decision = ENGINE_CONFLICT;
	c.retry_after = lease_left;
	c.rec.lease_ms = T0 + LEASE;
	return idem_retry_after(&c, T0 + elapsed, LEASE);
}

/*
 * Retry-After tells a duplicate about when the first request will be
 * done, from the typical run time measured by the workers, instead of the
 * whole lease: at least 1, never past the lease, rounded up.
 */
static void
test_retry_after_from_typical_run(void)
{
	CU_ASSERT_FATAL(metrics_open(dir) == IDEM_OK);
	/* Nothing measured yet: come back in a second and ask again. */
	HARNESS_EQ(wait_at(0, 30), 1);
	metrics_observe_run_ms(2500);
	HARNESS_EQ(metrics_typical_run_ms(), 2500);
	HARNESS_EQ(wait_at(0, 30), 3);
	HARNESS_EQ(wait_at(1000, 29), 2);
	HARNESS_EQ(wait_at(1500, 29), 1);
	HARNESS_EQ(wait_at(2400, 28), 1);
	HARNESS_EQ(wait_at(10000, 20), 1);
	/* Never past the lease. */
	HARNESS_EQ(wait_at(0, 2), 2);
	/* One slow run moves the typical value by an eighth of the gap. */
	metrics_observe_run_ms(60000);
	CU_ASSERT(metrics_typical_run_ms() >= 9680 &&
	    metrics_typical_run_ms() <= 9690);
	HARNESS_EQ(wait_at(0, 30), 10);
	HARNESS_EQ(wait_at(0, 5), 5);
}

int
harness_suites(void)
{
	CU_pSuite s;

	s = CU_add_suite_with_setup_and_teardown("idem", suite_init, NULL, up,
	    down);
	if (s == NULL ||
	    CU_add_test(s, "claim with its first recovery point",
	    test_claim_with_first) == NULL ||
	    CU_add_test(s, "Retry-After from the typical run",
	    test_retry_after_from_typical_run) == NULL)
		return -1;
	return 0;
}
