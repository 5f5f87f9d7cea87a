/* SPDX-License-Identifier: MIT */
/*
 * keyed.c: the parts of a keyed request that every endpoint shares, on
 * the idempotency library: checks before the store, the answers that
 * come from idem_begin alone, replay, and completion.
 */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "crypto.h"
#include "idem.h"
#include "keyed.h"
#include "metrics.h"
#include "problem.h"

/* The headers a stored answer keeps for replay. */
static const char *const keyed_kept[] = { "Content-Type", "Location", "ETag" };
#define KEYED_KEPT (sizeof(keyed_kept) / sizeof(keyed_kept[0]))

int
keyed_fingerprint(enum idem_fp_mode mode, const struct request *req,
    const struct json_value *doc, const char *const *ignore,
    uint8_t fp[IDEM_FP_SIZE])
{
	struct buf body = BUF_INIT;
	int rc;

	if (mode == IDEM_FP_RAW && json_count_named(doc, ignore) == 0) {
		idem_fingerprint(IDEM_FP_RAW, req->method, req->path,
		    req->query, req->body.data, req->body.len, fp);
		return IDEM_OK;
	}
	if (mode == IDEM_FP_RAW)
		rc = json_strip_members(req->body.data, req->body.len, ignore,
		    &body);
	else
		rc = json_canonical_except(doc, ignore, &body);
	if (rc == IDEM_OK)
		idem_fingerprint(mode, req->method, req->path, req->query,
		    body.data, body.len, fp);
	buf_free(&body);
	return rc;
}

int
keyed_precheck(const struct pay_env *env, const struct request *req,
    enum req_status st, const char *what, const char *const *ignore,
    char key[KEY_MAX + 1], struct json_value **doc,
    uint8_t fp[IDEM_FP_SIZE], struct response *resp)
{
	enum key_status ks;
	enum json_status js;
	char err[160];
	size_t keylen;

	ks = key_parse(req->idempotency_key, key, &keylen);
	if (ks != KEY_OK) {
		metrics_inc(ks == KEY_MISSING ? METRIC_KEY_MISSING :
		    METRIC_KEY_INVALID);
		problem_build(resp, ks == KEY_MISSING ? PROBLEM_MISSING_KEY :
		    PROBLEM_INVALID_KEY, "%s", key_strstatus(ks));
		return -1;
	}
	if (st != REQ_OK) {
		pay_bad_request(st, env->cfg, resp);
		return -1;
	}
	if (!req_is_json(req->content_type)) {
		problem_build(resp, PROBLEM_MEDIA_TYPE, "Send the %s as "
		    "Content-Type: application/json.", what);
		return -1;
	}
	js = json_parse(req->body.data, req->body.len, doc, err, sizeof(err));
	if (js != JSON_OK) {
		problem_build(resp, PROBLEM_MALFORMED_JSON, "%s", err);
		return -1;
	}
	if (keyed_fingerprint(env->cfg->fp_mode, req, *doc, ignore, fp) !=
	    IDEM_OK) {
		/* json_strip_members reads what json_parse accepted. */
		problem_build(resp, PROBLEM_INTERNAL, "Out of memory.");
		json_free(*doc);
		*doc = NULL;
		return -1;
	}
	return 0;
}

/*
 * Replays a stored response: the same status, stored headers and body
 * bytes, marked with Idempotent-Replayed.  A replay cut short would not
 * be faithful: if any part cannot be copied the answer is a 500 instead.
 */
static void
keyed_replay(const struct idem_response *r, struct response *resp)
{
	size_t i;
	int rc = IDEM_OK;

	resp_reset(resp);
	resp->status = r->status;
	for (i = 0; i < r->nheaders && rc == IDEM_OK; i++)
		rc = resp_header(resp, r->headers[i].name, "%s",
		    r->headers[i].value);
	if (rc == IDEM_OK)
		rc = buf_append(&resp->body, r->body, r->bodylen);
	if (rc == IDEM_OK)
		rc = resp_header(resp, "Idempotent-Replayed", "true");
	if (rc != IDEM_OK)
		problem_build(resp, PROBLEM_INTERNAL, "The stored answer could "
		    "not be sent (%s); retry with the same Idempotency-Key.",
		    idem_strerror(rc));
}

int
keyed_answer(const struct pay_env *env, const struct idem_call *c,
    const char *what, struct response *resp)
{
	uint32_t wait;

	switch (idem_call_verdict(c)) {
	case IDEM_LIMITED:
		/*
		 * New keys wait until some of the scope's keys expire;
		 * retries of keys it holds still replay.
		 */
		problem_build(resp, PROBLEM_TOO_MANY_KEYS, "This account holds "
		    "%llu live Idempotency-Keys, as many as it may; a new key "
		    "can be used once older ones expire. Nothing was recorded "
		    "for this %s.", (unsigned long long)env->cfg->keys_per_account,
		    what);
		resp_header(resp, "Retry-After", "%u",
		    idem_call_retry_after(c));
		return 1;
	case IDEM_REPLAY:
		keyed_replay(idem_call_response(c), resp);
		return 1;
	case IDEM_CONFLICT:
		wait = idem_call_retry_after(c);
		problem_build(resp, PROBLEM_IN_PROGRESS, "The first request "
		    "with this Idempotency-Key is still being processed; "
		    "retry after %u second%s.", wait, wait == 1 ? "" : "s");
		resp_header(resp, "Retry-After", "%u", wait);
		return 1;
	case IDEM_MISMATCH:
		problem_build(resp, PROBLEM_KEY_REUSED, "This Idempotency-Key "
		    "was used with a different request (method, path, query "
		    "or body). Use a new key for a new %s.", what);
		return 1;
	case IDEM_RUN:
	case IDEM_RESUME:
	default:
		return 0;
	}
}

void
keyed_lost_or_failed(struct pay_note *note, int rc, struct response *resp)
{
	if (rc != IDEM_ELOST) {
		note->store_err = rc;
		pay_store_error(resp, rc);
		return;
	}
	note->outcome = "lost";
	problem_build(resp, PROBLEM_IN_PROGRESS, "This request outlived its "
	    "lease and another attempt took it over; retry to get that "
	    "attempt's answer.");
	resp_header(resp, "Retry-After", "1");
}

/*
 * The response as it is stored for replay: status, kept headers, body.
 * out borrows from resp, and headers must hold KEYED_KEPT entries.
 */
static void
keyed_to_stored(const struct response *resp, struct idem_header *headers,
    struct idem_response *out)
{
	const char *v;
	size_t i;

	memset(out, 0, sizeof(*out));
	out->status = resp->status;
	out->headers = headers;
	for (i = 0; i < KEYED_KEPT; i++) {
		if ((v = resp_get_header(resp, keyed_kept[i])) == NULL)
			continue;
		headers[out->nheaders].name = keyed_kept[i];
		headers[out->nheaders].value = v;
		out->nheaders++;
	}
	out->body = resp->body.data;
	out->bodylen = resp->body.len;
}

int
keyed_complete(struct idem_call *call, struct pay_note *note,
    idem_tx_fn hook, void *hook_ctx, int nothing_happened, idem_tx_fn undo,
    void *undo_ctx, struct response *resp)
{
	struct idem_header headers[KEYED_KEPT];
	struct idem_response stored;
	int rc;

	keyed_to_stored(resp, headers, &stored);
	rc = idem_finish(call, &stored, hook, hook_ctx);
	if (rc == IDEM_OK)
		return rc;
	if (rc == IDEM_ELOST) {
		keyed_lost_or_failed(note, rc, resp);
		return rc;
	}
	note->store_err = rc;
	if (nothing_happened)
		idem_release(call, undo, undo_ctx);
	else
		idem_abandon(call);
	return rc;
}

enum keyed_end
keyed_end_of(int rc, int nothing_happened)
{
	if (rc == IDEM_OK)
		return KEYED_COMPLETED;
	if (rc == IDEM_ELOST)
		return KEYED_LOST;
	return nothing_happened ? KEYED_RELEASED : KEYED_KEPT;
}

enum keyed_end
keyed_release(struct idem_call *call, struct pay_note *note, idem_tx_fn undo,
    void *undo_ctx)
{
	int rc = idem_release(call, undo, undo_ctx);

	if (rc == IDEM_OK)
		return KEYED_RELEASED;
	if (rc == IDEM_ELOST)
		return KEYED_LOST;
	note->store_err = rc;
	return KEYED_KEPT;
}

int
keyed_provider_key_of(const char *what, const char *scope, const char *key,
    const uint8_t fp[IDEM_FP_SIZE], uint64_t gen, uint64_t created_ms,
    struct buf *out)
{
	char num[BUF_DEC_MAX], hex[2 * KEYED_FP_BYTES + 1];
	int rc;

	if (buf_puts(out, what) != IDEM_OK || buf_putc(out, ':') != IDEM_OK ||
	    buf_puts(out, scope) != IDEM_OK || buf_putc(out, ':') != IDEM_OK ||
	    buf_puts(out, key) != IDEM_OK || buf_putc(out, ':') != IDEM_OK)
		return IDEM_ENOMEM;
	if (gen == IDEM_GEN_LEGACY)
		rc = buf_append(out, num, buf_fmt_uint(num, created_ms, 0));
	else {
		crypto_hex(fp, KEYED_FP_BYTES, hex);
		if ((rc = buf_puts(out, hex)) == IDEM_OK &&
		    (rc = buf_putc(out, ':')) == IDEM_OK)
			rc = buf_append(out, num, buf_fmt_uint(num, gen, 0));
	}
	return rc == IDEM_OK ? IDEM_OK : IDEM_ENOMEM;
}

int
keyed_provider_key(const char *what, const struct idem_call *call,
    const char *scope, const char *key, struct buf *out)
{
	return keyed_provider_key_of(what, scope, key,
	    idem_call_fingerprint(call), idem_call_generation(call),
	    idem_call_created_ms(call), out);
}
