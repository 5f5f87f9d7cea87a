#include <string.h>

#include "crypto.h"
#include "idem.h"

int
idem_begin(struct store *s, const char *scope, const char *key,
    const uint8_t fp[FP_SIZE], uint64_t now_ms, const struct idem_policy *pol,
    struct idem_claim *out)
{
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

	crypto_random(out->token, sizeof(out->token));
	memset(&sc, 0, sizeof(sc));
	rc = store_claim(s, scope, key, fp, out->token, now_ms, pol->lease_ms,
	    pol->ttl_ms, &sc);
	if (rc != IDEM_OK) {
		out->retry_after = sc.retry_after;
		return rc;
	}
	out->decision = sc.decision;
	out->retry_after = sc.retry_after;
	out->rec = sc.rec;
	return IDEM_OK;
}
