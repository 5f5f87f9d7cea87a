/* SPDX-License-Identifier: MIT */
/*
 * test_engine.c: the decision table, boundary times included.
 *
 * The engine reads no clock, so every test passes its own "now".
 */
#include <stdint.h>
#include <string.h>

#include "crypto.h"
#include "engine.h"
#include "err.h"
#include "record.h"

#include "harness.h"

#define NOW 1700000000000ULL

static uint8_t fp_a[FP_SIZE];
static uint8_t fp_b[FP_SIZE];

static int
suite_init(void)
{
	if (crypto_init() != IDEM_OK)
		return -1;
	memset(fp_a, 0xaa, sizeof(fp_a));
	memset(fp_b, 0xaa, sizeof(fp_b));
	/* Differs in the last byte only: the comparison must see all 32. */
	fp_b[FP_SIZE - 1] = 0xab;
	return 0;
}

static void
make(struct rec *r, enum rec_state state, uint64_t expires_ms,
    uint64_t lease_ms)
{
	memset(r, 0, sizeof(*r));
	r->state = state;
	memcpy(r->fp, fp_a, FP_SIZE);
	r->created_ms = NOW - 1000;
	r->expires_ms = expires_ms;
	r->lease_ms = lease_ms;
	r->attempts = 1;
}

static enum engine_decision
decide(const struct rec *r, const uint8_t *fp, uint64_t now,
    uint32_t *retry_after)
{
	*retry_after = 12345;
	return engine_decide(r, fp, now, retry_after);
}

static void
test_absent_claims(void)
{
	uint32_t ra;

	HARNESS_EQ(decide(NULL, fp_a, NOW, &ra), ENGINE_CLAIM);
	HARNESS_EQ(ra, 0);
	HARNESS_EQ(decide(NULL, fp_b, 0, &ra), ENGINE_CLAIM);
}

static void
test_expired_completed_claims(void)
{
	struct rec r;
	uint32_t ra;

	make(&r, REC_COMPLETED, NOW - 1, 0);
	HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_CLAIM);
	HARNESS_EQ(ra, 0);
}

/* Expired wins over everything, a mismatch included. */
static void
test_expired_mismatch_claims(void)
{
	struct rec r;
	uint32_t ra;

	make(&r, REC_COMPLETED, NOW - 1, 0);
	HARNESS_EQ(decide(&r, fp_b, NOW, &ra), ENGINE_CLAIM);
	make(&r, REC_IN_PROGRESS, NOW - 1, NOW + 30000);
	HARNESS_EQ(decide(&r, fp_b, NOW, &ra), ENGINE_CLAIM);
}

/* An expired claim is absent even while its lease still runs. */
static void
test_expired_in_progress_claims(void)
{
	struct rec r;
	uint32_t ra;

	make(&r, REC_IN_PROGRESS, NOW, NOW + 30000);
	HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_CLAIM);
	HARNESS_EQ(ra, 0);
}

/*
 * A claim that recorded a recovery point may have charged: past its
 * expiry it is still resumed, never claimed afresh.
 */
static void
test_expired_checkpointed_claim_is_kept(void)
{
	struct rec r;
	uint32_t ra;

	make(&r, REC_IN_PROGRESS, NOW - 1, NOW - 1);
	r.stage = 1;
	HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_TAKEOVER);
	HARNESS_EQ(decide(&r, fp_b, NOW, &ra), ENGINE_MISMATCH);
	r.lease_ms = NOW + 1500;
	HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_CONFLICT);
	HARNESS_EQ(ra, 2);
}

static void
test_expires_boundary(void)
{
	struct rec r;
	uint32_t ra;

	make(&r, REC_COMPLETED, NOW, 0);
	HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_CLAIM);
	HARNESS_EQ(decide(&r, fp_a, NOW - 1, &ra), ENGINE_REPLAY);
	HARNESS_EQ(decide(&r, fp_a, NOW + 1, &ra), ENGINE_CLAIM);
}

static void
test_completed_replays(void)
{
	struct rec r;
	uint32_t ra;

	make(&r, REC_COMPLETED, NOW + 86400000, 0);
	HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_REPLAY);
	HARNESS_EQ(ra, 0);
	/* A completed record's lease means nothing. */
	r.lease_ms = NOW + 30000;
	HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_REPLAY);
	HARNESS_EQ(ra, 0);
}

static void
test_completed_mismatch(void)
{
	struct rec r;
	uint32_t ra;

	make(&r, REC_COMPLETED, NOW + 86400000, 0);
	HARNESS_EQ(decide(&r, fp_b, NOW, &ra), ENGINE_MISMATCH);
	HARNESS_EQ(ra, 0);
}

static void
test_in_progress_mismatch(void)
{
	struct rec r;
	uint32_t ra;

	make(&r, REC_IN_PROGRESS, NOW + 86400000, NOW + 30000);
	HARNESS_EQ(decide(&r, fp_b, NOW, &ra), ENGINE_MISMATCH);
	HARNESS_EQ(ra, 0);
	make(&r, REC_IN_PROGRESS, NOW + 86400000, NOW - 1);
	HARNESS_EQ(decide(&r, fp_b, NOW, &ra), ENGINE_MISMATCH);
}

static void
test_mismatch_first_byte(void)
{
	struct rec r;
	uint8_t fp[FP_SIZE];
	uint32_t ra;

	memcpy(fp, fp_a, FP_SIZE);
	fp[0] ^= 1;
	make(&r, REC_COMPLETED, NOW + 1, 0);
	HARNESS_EQ(decide(&r, fp, NOW, &ra), ENGINE_MISMATCH);
}

static void
test_in_progress_conflict(void)
{
	struct rec r;
	uint32_t ra;

	make(&r, REC_IN_PROGRESS, NOW + 86400000, NOW + 30000);
	HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_CONFLICT);
	HARNESS_EQ(ra, 30);
}

static void
test_lease_boundary(void)
{
	struct rec r;
	uint32_t ra;

	make(&r, REC_IN_PROGRESS, NOW + 86400000, NOW);
	HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_TAKEOVER);
	HARNESS_EQ(ra, 0);
	HARNESS_EQ(decide(&r, fp_a, NOW - 1, &ra), ENGINE_CONFLICT);
	HARNESS_EQ(ra, 1);
	HARNESS_EQ(decide(&r, fp_a, NOW + 1, &ra), ENGINE_TAKEOVER);
}

static void
test_lease_over_takes_over(void)
{
	struct rec r;
	uint32_t ra;

	make(&r, REC_IN_PROGRESS, NOW + 86400000, NOW - 60000);
	HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_TAKEOVER);
	HARNESS_EQ(ra, 0);
	/* An abandoned claim (lease set to 0) too. */
	r.lease_ms = 0;
	HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_TAKEOVER);
}

/* Retry-After is ceil(ms left / 1000), never 0. */
static void
test_retry_after_rounding(void)
{
	struct rec r;
	uint32_t ra, s;

	make(&r, REC_IN_PROGRESS, NOW + 86400000, 0);
	for (s = 1; s <= 30; s++) {
		r.lease_ms = NOW + s * 1000;
		HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_CONFLICT);
		HARNESS_EQ(ra, s);
		r.lease_ms = NOW + s * 1000 - 999;
		HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_CONFLICT);
		HARNESS_EQ(ra, s);
		r.lease_ms = NOW + s * 1000 + 1;
		HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_CONFLICT);
		HARNESS_EQ(ra, s + 1);
	}
}

static void
test_retry_after_minimum(void)
{
	struct rec r;
	uint32_t ra;

	make(&r, REC_IN_PROGRESS, NOW + 86400000, NOW + 1);
	HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_CONFLICT);
	HARNESS_EQ(ra, 1);
	r.lease_ms = NOW + 999;
	HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_CONFLICT);
	HARNESS_EQ(ra, 1);
	r.lease_ms = NOW + 1000;
	HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_CONFLICT);
	HARNESS_EQ(ra, 1);
	r.lease_ms = NOW + 1001;
	HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_CONFLICT);
	HARNESS_EQ(ra, 2);
}

static void
test_retry_after_huge_lease(void)
{
	struct rec r;
	uint32_t ra;

	make(&r, REC_IN_PROGRESS, UINT64_MAX, UINT64_MAX);
	HARNESS_EQ(decide(&r, fp_a, 0, &ra), ENGINE_CONFLICT);
	CU_ASSERT(ra == UINT32_MAX);
}

/* Only the record matters: the decision does not touch it. */
static void
test_record_untouched(void)
{
	struct rec r, before;
	uint32_t ra;

	make(&r, REC_IN_PROGRESS, NOW + 86400000, NOW - 1);
	memcpy(&before, &r, sizeof(r));
	HARNESS_EQ(decide(&r, fp_a, NOW, &ra), ENGINE_TAKEOVER);
	CU_ASSERT(memcmp(&before, &r, sizeof(r)) == 0);
}

static void
test_time_zero(void)
{
	struct rec r;
	uint32_t ra;

	make(&r, REC_IN_PROGRESS, 0, 0);
	HARNESS_EQ(decide(&r, fp_a, 0, &ra), ENGINE_CLAIM);
	make(&r, REC_IN_PROGRESS, 1, 1);
	HARNESS_EQ(decide(&r, fp_a, 0, &ra), ENGINE_CONFLICT);
	HARNESS_EQ(ra, 1);
}

int
harness_suites(void)
{
	CU_pSuite s;

	if ((s = CU_add_suite("engine", suite_init, NULL)) == NULL)
		return -1;
	if (CU_add_test(s, "absent: claim", test_absent_claims) == NULL ||
	    CU_add_test(s, "expired completed: claim",
	    test_expired_completed_claims) == NULL ||
	    CU_add_test(s, "expired with other fp: claim",
	    test_expired_mismatch_claims) == NULL ||
	    CU_add_test(s, "expired in progress, lease valid: claim",
	    test_expired_in_progress_claims) == NULL ||
	    CU_add_test(s, "expired checkpointed claim is kept",
	    test_expired_checkpointed_claim_is_kept) == NULL ||
	    CU_add_test(s, "expires_ms == now is expired",
	    test_expires_boundary) == NULL ||
	    CU_add_test(s, "completed: replay", test_completed_replays) ==
	    NULL ||
	    CU_add_test(s, "completed, other fp: mismatch",
	    test_completed_mismatch) == NULL ||
	    CU_add_test(s, "in progress, other fp: mismatch",
	    test_in_progress_mismatch) == NULL ||
	    CU_add_test(s, "fp differs in first byte: mismatch",
	    test_mismatch_first_byte) == NULL ||
	    CU_add_test(s, "in progress, lease valid: conflict",
	    test_in_progress_conflict) == NULL ||
	    CU_add_test(s, "lease_ms == now is over", test_lease_boundary) ==
	    NULL ||
	    CU_add_test(s, "lease over: takeover",
	    test_lease_over_takes_over) == NULL ||
	    CU_add_test(s, "retry_after rounding 1..30",
	    test_retry_after_rounding) == NULL ||
	    CU_add_test(s, "retry_after minimum 1",
	    test_retry_after_minimum) == NULL ||
	    CU_add_test(s, "retry_after huge lease",
	    test_retry_after_huge_lease) == NULL ||
	    CU_add_test(s, "record untouched", test_record_untouched) ==
	    NULL ||
	    CU_add_test(s, "time zero", test_time_zero) == NULL)
		return -1;
	return 0;
}
