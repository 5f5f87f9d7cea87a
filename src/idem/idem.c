#include <string.h>

#include "crypto.h"
#include "idem.h"
#include "metrics.h"

int
idem_begin(struct store *s, const char *scope, const char *key,
    const uint8_t fp[FP_SIZE], uint64_t now_ms, const struct idem_policy *pol,
    idem_first_fn first, void *first_ctx, struct idem_claim *out)
{
	struct store_first fr, *frp = NULL;
	struct store_claim sc;
	int rc;

	memset(out, 0, sizeof(*out));
	/*
	 * The fast path: a replay, a conflict or a mismatch is decided from a
	 * read transaction, so retries never queue behind the write lock.
	 */
	rc = store_lookup(s, scope, key, &out->rec);
	if (rc == IDEM_OK) {
		out->decision = engine_decide(&out->rec, fp, now_ms,
		    &out->retry_after);
		if (out->decision == ENGINE_REPLAY ||
		    out->decision == ENGINE_CONFLICT ||
		    out->decision == ENGINE_MISMATCH)
			return IDEM_OK;
		rec_free(&out->rec);
	} else if (rc != IDEM_ENOTFOUND)
		return rc;

	if (first != NULL) {
		memset(&fr, 0, sizeof(fr));
		if ((rc = first(first_ctx, &fr)) != IDEM_OK)
			return rc;
		frp = &fr;
	}
	crypto_random(out->token, sizeof(out->token));
	memset(&sc, 0, sizeof(sc));
	rc = store_claim(s, scope, key, fp, out->token, now_ms, pol->lease_ms,
	    pol->ttl_ms, frp, &sc);
	if (rc != IDEM_OK) {
		out->retry_after = sc.retry_after;
		return rc;
	}
	out->decision = sc.decision;
	out->retry_after = sc.retry_after;
	out->rec = sc.rec;
	return IDEM_OK;
}

/*
 * The whole lease is the longest a duplicate may have to wait, not the
 * likely wait: a payment that takes a second holds a 30-second lease.  A
 * client that honours Retry-After should come back about when the first
 * request is done, so the answer is the typical run time measured by
 * every worker, less what this run has had already, rounded up to whole
 * seconds (RFC 9110 section 10.2.3), at least 1 and never past the lease.
 */
uint32_t
idem_retry_after(const struct idem_claim *c, uint64_t now_ms,
    uint64_t lease_ms)
{
	uint64_t start, elapsed, typical, wait, secs;

	if (c->decision != ENGINE_CONFLICT)
		return 0;
	/* The lease was last set, by the claim or a renewal, to now+lease. */
	start = c->rec.lease_ms > lease_ms ? c->rec.lease_ms - lease_ms : 0;
	elapsed = now_ms > start ? now_ms - start : 0;
	typical = metrics_typical_run_ms();
	wait = typical > elapsed ? typical - elapsed : 0;
	secs = wait / 1000 + (wait % 1000 != 0);
	if (secs < 1)
		secs = 1;
	if (secs > c->retry_after)
		secs = c->retry_after;
	return (uint32_t)secs;
}
