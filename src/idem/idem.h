/*
 * idem.h: the idempotency-key library's entry point.
 *
 * A keyed request goes through idem_begin, which answers replays,
 * conflicts and mismatches from a read transaction (no write lock) and
 * only then claims the key in a write transaction, where the decision is
 * made again on what is stored at that moment.  The caller that got
 * ENGINE_CLAIM or ENGINE_TAKEOVER owns the key through out->token and
 * must end the claim with store_complete, store_release or store_abandon
 * (or die, and the lease hands the key to the next retry).
 */
#ifndef IDEM_IDEM_H
#define IDEM_IDEM_H

#include <stdint.h>

#include "engine.h"
#include "err.h"
#include "fp.h"
#include "record.h"
#include "store.h"

struct idem_claim {
	enum engine_decision decision;
	uint32_t retry_after;           /* ENGINE_CONFLICT */
	uint8_t token[REC_TOKEN_SIZE];  /* ENGINE_CLAIM, ENGINE_TAKEOVER */
	struct rec rec;                 /* as stored (rec_free) */
};

struct idem_policy {
	uint64_t lease_ms;
	uint64_t ttl_ms;
};

/*
 * Fills *out with the recovery point a fresh claim starts with (its bytes
 * must live until idem_begin returns).  idem_begin calls it only when it
 * is about to claim, never for a replay, a conflict or a mismatch, so
 * the work of making a point (a new payment id) is not done for those.
 * Returns IDEM_OK, or an error that idem_begin returns.
 */
typedef int (*idem_first_fn)(void *ctx, struct store_first *out);

/*
 * Decides and, where it should, claims (scope, key) for a request whose
 * fingerprint is fp, at now_ms; a fresh claim starts at the recovery
 * point first makes (first NULL: none, stage 0).  Returns IDEM_OK with
 * out filled (free out->rec with rec_free), or a store error, after which
 * nothing is claimed: IDEM_ELIMIT (the scope holds as many live keys as
 * it may) comes with out->retry_after.
 */
int idem_begin(struct store *s, const char *scope, const char *key,
    const uint8_t fp[FP_SIZE], uint64_t now_ms, const struct idem_policy *pol,
    idem_first_fn first, void *first_ctx, struct idem_claim *out);

/*
 * For an ENGINE_CONFLICT: the seconds a duplicate should wait, from how
 * long claimed requests typically run (metrics) and how long this one has
 * run, at least 1 and at most c->retry_after (what is left of the lease).
 * lease_ms is the lease length of the policy.
 */
uint32_t idem_retry_after(const struct idem_claim *c, uint64_t now_ms,
    uint64_t lease_ms);

#endif
