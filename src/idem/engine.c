/* SPDX-License-Identifier: MIT */
/*
 * engine.c: claim, take over, replay, 409 or 422.
 *
 * The order of the tests is the contract (doc/DESIGN.md, "HTTP
 * contract"): an expired record is as good as absent, unless it is a
 * claim that may have left a side effect (see engine_expired); a live
 * record with another fingerprint is a 422 whether it is running
 * or done (draft-ietf-httpapi-idempotency-key-header-07 §2.7, "Error
 * Scenarios": a key reused for another payload); only then do the state
 * and the lease matter.
 */
#include <stdint.h>

#include "crypto.h"
#include "engine.h"
#include "record.h"

/*
 * Retry-After is in whole seconds (RFC 9110 §10.2.3).  Rounding down
 * would invite a retry that still finds the lease held, and 0 would
 * invite an immediate one, so round up and never say less than 1.
 */
static uint32_t
engine_retry_after(uint64_t lease_ms, uint64_t now_ms)
{
	uint64_t left = lease_ms - now_ms;
	uint64_t secs = left / 1000 + (left % 1000 != 0);

	if (secs < 1)
		secs = 1;
	if (secs > UINT32_MAX)
		secs = UINT32_MAX;
	return (uint32_t)secs;
}

/*
 * A completed record, or a claim that never recorded a recovery point
 * (stage 0: nothing can have happened), is gone once expired.  A claim
 * past stage 0 may have charged a card: it never expires, so a retry that
 * comes after the TTL resumes it and finds that charge, instead of
 * claiming afresh and charging again.
 */
static int
engine_expired(const struct rec *r, uint64_t now_ms)
{
	if (r->expires_ms > now_ms)
		return 0;
	return r->state == REC_COMPLETED || r->stage == 0;
}

enum engine_decision
engine_decide(const struct rec *existing, const uint8_t fp[FP_SIZE],
    uint64_t now_ms, uint32_t *retry_after)
{
	*retry_after = 0;
	if (existing == NULL || engine_expired(existing, now_ms))
		return ENGINE_CLAIM;
	/*
	 * Constant time, so that a client probing keys learns nothing from
	 * how long the comparison took.
	 */
	if (!crypto_equal(existing->fp, fp, FP_SIZE))
		return ENGINE_MISMATCH;
	if (existing->state == REC_COMPLETED)
		return ENGINE_REPLAY;
	/* The lease covers [claim, lease_ms): at lease_ms it is over. */
	if (existing->lease_ms > now_ms) {
		*retry_after = engine_retry_after(existing->lease_ms, now_ms);
		return ENGINE_CONFLICT;
	}
	return ENGINE_TAKEOVER;
}
