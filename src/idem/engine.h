/* SPDX-License-Identifier: MIT */
/*
 * engine.h: the decision at the heart of idem.
 *
 * Given what the store holds for (scope, key), if anything, the incoming
 * request's fingerprint and the time, decide what to do.  It does no I/O
 * and reads no clock, so it is tested directly with any time.  The store
 * calls it twice: from a read transaction for the fast path, and again
 * inside the write transaction before it claims.
 */
#ifndef IDEM_ENGINE_H
#define IDEM_ENGINE_H

#include <stdint.h>

#include "record.h"

enum engine_decision {
	ENGINE_CLAIM = 0, /* nothing live is stored: claim the key */
	ENGINE_TAKEOVER,  /* in progress, lease over: take the claim over */
	ENGINE_REPLAY,    /* completed: replay the stored response */
	ENGINE_CONFLICT,  /* in progress, lease valid: 409 + Retry-After */
	ENGINE_MISMATCH,  /* same key, other fingerprint: 422 */
	ENGINE__MAX
};

/*
 * existing may be NULL.  A record whose expires_ms <= now_ms counts as
 * absent, unless it is in progress with a stage other than 0: a claim
 * that may have left a side effect never expires.  On ENGINE_CONFLICT *retry_after gets the whole seconds left on
 * the lease, rounded up and at least 1; otherwise 0.
 */
enum engine_decision engine_decide(const struct rec *existing,
    const uint8_t fp[FP_SIZE], uint64_t now_ms, uint32_t *retry_after);

#endif
