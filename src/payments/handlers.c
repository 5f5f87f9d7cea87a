#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "err.h"
#include "fault.h"
#include "handlers.h"
#include "idem.h"
#include "json.h"
#include "key.h"
#include "metrics.h"
#include "money.h"
#include "problem.h"

#define PAY_ID_HEX 24
#define PAY_ID_LEN (4 + PAY_ID_HEX)   /* "pay_" and the hex digits */
#define PAY_ROW_VERSION 1
#define PAY_CP_VERSION 1
#define PAY_LIST_DEFAULT 20
#define PAY_LIST_MAX 100

/* What POST /payments asks for, once validated. */
struct pay_order {
	int64_t minor;
	const struct currency *cur;
};

/* The recovery point kept in the claim from PAY_STAGE_CHARGE_REQUESTED. */
struct pay_cp {
	char id[PAY_ID_LEN + 1];
	uint64_t created_ms;
};

/* What a claim has done in the world by the time it ends. */
enum pay_effect {
	PAY_EFFECT_NONE = 0,  /* nothing reached the provider */
	PAY_EFFECT_DECLINED,  /* the provider declined: no charge */
	PAY_EFFECT_CHARGED    /* the provider charged the card */
};

/*
 * Ends a claim after a failure that left no side effect: key free again.
 * When even that write fails (a full store), ending the lease is the next
 * best thing, so the client's retry need not wait for the lease.
 */
static void
pay_release(struct app *a, const char *scope, const char *key,
    const uint8_t *token)
{
	int rc;

	rc = store_release(a->store, scope, key, token);
	if (rc == IDEM_OK)
		metrics_inc(METRIC_RELEASES);
	else if (rc != IDEM_ELOST &&
	    store_abandon(a->store, scope, key, token, clock_now_ms()) ==
	    IDEM_OK)
		metrics_inc(METRIC_ABANDONS);
}

/*
 * Ends our lease after a failure that may have left a side effect: the
 * claim and its recovery point stay for the retry to take over.
 */
static void
pay_abandon(struct app *a, const char *scope, const char *key,
    const uint8_t *token)
{
	if (store_abandon(a->store, scope, key, token, clock_now_ms()) ==
	    IDEM_OK)
		metrics_inc(METRIC_ABANDONS);
}

void
pay_store_error(struct response *resp, int err)
{
	metrics_inc(METRIC_STORE_ERRORS);
	problem_build(resp, PROBLEM_STORE_UNAVAILABLE,
	    "The payment store cannot be used right now (%s). Nothing was "
	    "recorded for this request; retry it with the same "
	    "Idempotency-Key.", idem_strerror(err));
	resp_header(resp, "Retry-After", "1");
}

/*
 * The 429 of a scope that holds as many live keys as it may: new keys
 * wait until some of its keys expire; retries of keys it holds still
 * replay.
 */
static void
pay_limit(struct app *a, struct response *resp, uint32_t retry_after)
{
	metrics_inc(METRIC_LIMITED);
	problem_build(resp, PROBLEM_TOO_MANY_KEYS, "This account holds "
	    "%llu live Idempotency-Keys, as many as it may; a new key can be "
	    "used once older ones expire. Nothing was recorded or charged.",
	    (unsigned long long)a->cfg.keys_per_account);
	resp_header(resp, "Retry-After", "%u", retry_after);
}

/* A strong ETag: the first 64 bits of the representation's SHA-256. */
static void
pay_etag(const void *body, size_t len, char out[20])
{
	uint8_t d[CRYPTO_SHA256_SIZE];
	char hex[2 * CRYPTO_SHA256_SIZE + 1];

	crypto_sha256(body, len, d);
	crypto_hex(d, sizeof(d), hex);
	snprintf(out, 20, "\"%.16s\"", hex);
}

static void
pay_time(uint64_t ms, char out[64])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, (unsigned)(ms % 1000));
}

/* 1 to 8 letters and digits: safe to quote back to the client. */
static int
pay_code_printable(const char *code)
{
	size_t i;

	for (i = 0; code[i] != '\0'; i++)
		if (i >= 8 || !((code[i] >= 'A' && code[i] <= 'Z') ||
		    (code[i] >= 'a' && code[i] <= 'z') ||
		    (code[i] >= '0' && code[i] <= '9')))
			return 0;
	return i > 0;
}

/*
 * Validates the body of POST /payments: an object with exactly "amount"
 * (a JSON number, exact to the currency's minor unit, positive) and
 * "currency" (a supported ISO 4217 code).  Unknown members are refused so
 * that a misspelt field is an error, not a silent default.
 */
static int
pay_order_parse(const struct json_value *doc, struct pay_order *o,
    char *detail, size_t len)
{
	const struct json_value *amount, *currency;
	enum money_status ms;
	const char *code;
	size_t n = 0;

	if (json_type(doc) != JSON_OBJECT) {
		snprintf(detail, len, "The body must be a JSON object with "
		    "\"amount\" and \"currency\".");
		return -1;
	}
	amount = json_get(doc, "amount");
	currency = json_get(doc, "currency");
	n += amount != NULL;
	n += currency != NULL;
	if (n != json_count(doc)) {
		snprintf(detail, len, "Only \"amount\" and \"currency\" may be "
		    "given.");
		return -1;
	}
	if (currency == NULL || json_type(currency) != JSON_STRING) {
		snprintf(detail, len, "\"currency\" is required: an ISO 4217 "
		    "code such as \"BRL\".");
		return -1;
	}
	code = json_text(currency, NULL);
	if ((o->cur = money_currency(code)) == NULL) {
		/*
		 * Echo the code only when it looks like one: the detail is
		 * stored and replayed, and must stay short, valid UTF-8.
		 */
		if (pay_code_printable(code))
			snprintf(detail, len, "Currency \"%s\" is not "
			    "supported.", code);
		else
			snprintf(detail, len, "\"currency\" must be an ISO "
			    "4217 code of three capital letters, such as "
			    "\"BRL\".");
		return -1;
	}
	if (amount == NULL || json_type(amount) != JSON_NUMBER) {
		snprintf(detail, len, "\"amount\" is required and must be a "
		    "JSON number, such as 100.00.");
		return -1;
	}
	ms = money_parse(json_text(amount, NULL), o->cur, &o->minor);
	if (ms != MONEY_OK) {
		snprintf(detail, len, "%s", money_strstatus(ms));
		return -1;
	}
	return 0;
}

static int
pay_render(const struct pay_cp *cp, const struct pay_order *o,
    const char *charge_id, struct buf *out)
{
	char amount[48], when[64];

	money_format(o->minor, o->cur, amount, sizeof(amount));
	pay_time(cp->created_ms, when);
	return buf_printf(out, "{\"id\":\"%s\",\"amount\":%s,\"currency\":"
	    "\"%s\",\"status\":\"succeeded\",\"charge_id\":\"%s\","
	    "\"created_at\":\"%s\"}", cp->id, amount, o->cur->code, charge_id,
	    when);
}

/* A payment row: version, the owner's scope, the JSON representation. */
static int
pay_row_encode(const char *scope, const struct buf *body, struct buf *out)
{
	size_t slen = strlen(scope);

	if (buf_put_u8(out, PAY_ROW_VERSION) != IDEM_OK ||
	    buf_put_u16(out, (uint16_t)slen) != IDEM_OK ||
	    buf_append(out, scope, slen) != IDEM_OK ||
	    buf_put_u32(out, (uint32_t)body->len) != IDEM_OK ||
	    buf_append(out, body->data, body->len) != IDEM_OK)
		return IDEM_ENOMEM;
	return IDEM_OK;
}

/* Points at the scope and body inside an encoded row (borrowed). */
static int
pay_row_decode(const struct buf *row, const uint8_t **scope, size_t *slen,
    const uint8_t **body, size_t *blen)
{
	struct rd r;
	uint8_t v;
	uint16_t sl;
	uint32_t bl;

	rd_init(&r, row->data, row->len);
	if (rd_u8(&r, &v) != IDEM_OK || v != PAY_ROW_VERSION ||
	    rd_u16(&r, &sl) != IDEM_OK || rd_bytes(&r, sl, scope) != IDEM_OK ||
	    rd_u32(&r, &bl) != IDEM_OK || rd_bytes(&r, bl, body) != IDEM_OK ||
	    r.left != 0)
		return IDEM_ECORRUPT;
	*slen = sl;
	*blen = bl;
	return IDEM_OK;
}

static int
pay_cp_encode(const struct pay_cp *cp, struct buf *out)
{
	if (buf_put_u8(out, PAY_CP_VERSION) != IDEM_OK ||
	    buf_append(out, cp->id, PAY_ID_LEN) != IDEM_OK ||
	    buf_put_u64(out, cp->created_ms) != IDEM_OK)
		return IDEM_ENOMEM;
	return IDEM_OK;
}

static int
pay_cp_decode(const struct rec *r, struct pay_cp *cp)
{
	const uint8_t *id;
	struct rd rd;
	uint8_t v;

	rd_init(&rd, r->cp, r->cplen);
	if (rd_u8(&rd, &v) != IDEM_OK || v != PAY_CP_VERSION ||
	    rd_bytes(&rd, PAY_ID_LEN, &id) != IDEM_OK ||
	    rd_u64(&rd, &cp->created_ms) != IDEM_OK || rd.left != 0)
		return IDEM_ECORRUPT;
	memcpy(cp->id, id, PAY_ID_LEN);
	cp->id[PAY_ID_LEN] = '\0';
	return IDEM_OK;
}

static int
pay_id_valid(const char *id)
{
	size_t i;

	if (strlen(id) != PAY_ID_LEN || strncmp(id, "pay_", 4) != 0)
		return 0;
	for (i = 4; i < PAY_ID_LEN; i++)
		if (strchr("0123456789abcdef", id[i]) == NULL || id[i] == '\0')
			return 0;
	return 1;
}

/* The response as it is stored for replay: status, kept headers, body. */
static void
pay_to_record(const struct response *resp, struct rec_response *out)
{
	static const char *const kept[] = { "Content-Type", "Location", "ETag" };
	const char *v;
	size_t i;

	memset(out, 0, sizeof(*out));
	out->status = resp->status;
	for (i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		if ((v = resp_get_header(resp, kept[i])) == NULL)
			continue;
		out->headers[out->nheaders].name = (char *)kept[i];
		out->headers[out->nheaders].value = (char *)v;
		out->nheaders++;
	}
	out->body = (uint8_t *)resp->body.data;
	out->bodylen = resp->body.len;
}

/*
 * Replays a stored response: the same status, stored headers and body
 * bytes, marked with Idempotent-Replayed.  A replay cut short would not
 * be faithful: if any part cannot be copied the answer is a 500 instead.
 */
static void
pay_replay(const struct rec *r, struct response *resp)
{
	size_t i;
	int rc = IDEM_OK;

	resp_reset(resp);
	resp->status = r->resp.status;
	for (i = 0; i < r->resp.nheaders && rc == IDEM_OK; i++)
		rc = resp_header(resp, r->resp.headers[i].name, "%s",
		    r->resp.headers[i].value);
	if (rc == IDEM_OK)
		rc = buf_append(&resp->body, r->resp.body, r->resp.bodylen);
	if (rc == IDEM_OK)
		rc = resp_header(resp, "Idempotent-Replayed", "true");
	if (rc != IDEM_OK)
		problem_build(resp, PROBLEM_INTERNAL, "The stored answer could "
		    "not be sent (%s); retry with the same Idempotency-Key.",
		    idem_strerror(rc));
}

/*
 * Answers a request whose claim could not be carried on: IDEM_ELOST means
 * another attempt took the claim over after our lease ran out (that
 * attempt will answer); anything else is a store failure.
 */
static void
pay_end_lost_or_failed(struct app_note *note, int rc, struct response *resp)
{
	if (rc != IDEM_ELOST) {
		pay_store_error(resp, rc);
		return;
	}
	note->outcome = "lost";
	metrics_inc(METRIC_LOST);
	problem_build(resp, PROBLEM_IN_PROGRESS, "This request outlived its "
	    "lease and another attempt took it over; retry to get that "
	    "attempt's answer.");
	resp_header(resp, "Retry-After", "1");
}

/*
 * The 503 of a claim whose answer could not be stored, in words that say
 * what did happen: a client told "nothing was recorded" after a charge
 * might pay again under a new key.
 */
static void
pay_complete_failed(struct response *resp, int rc, enum pay_effect effect)
{
	metrics_inc(METRIC_STORE_ERRORS);
	switch (effect) {
	case PAY_EFFECT_CHARGED:
		problem_build(resp, PROBLEM_STORE_UNAVAILABLE, "The card was "
		    "charged, but the payment could not be recorded (%s). "
		    "The charge is kept under this Idempotency-Key: retry "
		    "with the same key and body to get this payment; the "
		    "card will not be charged again.", idem_strerror(rc));
		break;
	case PAY_EFFECT_DECLINED:
		problem_build(resp, PROBLEM_STORE_UNAVAILABLE, "The card was "
		    "declined and nothing was charged, but the answer could "
		    "not be recorded (%s). Retry with the same "
		    "Idempotency-Key to get it.", idem_strerror(rc));
		break;
	default:
		problem_build(resp, PROBLEM_STORE_UNAVAILABLE, "The answer "
		    "could not be recorded (%s). Nothing was charged; retry "
		    "with the same Idempotency-Key.", idem_strerror(rc));
		break;
	}
	resp_header(resp, "Retry-After", "1");
}

/*
 * Stores resp as the final answer of our claim (with rows, if any).  When
 * that fails the claim is released if nothing reached the provider, and
 * otherwise kept, with its lease ended, for the retry to resume.
 */
static void
pay_complete(struct app *a, struct app_note *note, const char *scope,
    const char *key, const uint8_t *token, const struct store_put *puts,
    size_t nputs, enum pay_effect effect, struct response *resp)
{
	struct rec_response rr;
	int rc;

	pay_to_record(resp, &rr);
	rc = store_complete(a->store, scope, key, token, &rr, puts, nputs,
	    clock_now_ms(), a->cfg.ttl_ms);
	if (rc == IDEM_OK) {
		metrics_inc(METRIC_COMPLETIONS);
		fault_point("after_complete");
		return;
	}
	if (rc == IDEM_ELOST) {
		pay_end_lost_or_failed(note, rc, resp);
		return;
	}
	if (effect == PAY_EFFECT_NONE)
		pay_release(a, scope, key, token);
	else
		pay_abandon(a, scope, key, token);
	pay_complete_failed(resp, rc, effect);
}

/* The 201 of a charged payment, rendered into resp. */
static int
pay_created(const struct pay_cp *cp, const struct pay_order *o,
    const char *charge_id, struct response *resp)
{
	char etag[20];
	int rc;

	resp_reset(resp);
	resp->status = 201;
	if ((rc = pay_render(cp, o, charge_id, &resp->body)) != IDEM_OK)
		return rc;
	pay_etag(resp->body.data, resp->body.len, etag);
	if ((rc = resp_header(resp, "Content-Type", "application/json")) !=
	    IDEM_OK ||
	    (rc = resp_header(resp, "Location", "/payments/%s", cp->id)) !=
	    IDEM_OK)
		return rc;
	return resp_header(resp, "ETag", "%s", etag);
}

/* Completes a charged payment: the row, the index and the answer at once. */
static void
pay_succeed(struct app *a, struct app_note *note, const char *scope,
    const char *key, const uint8_t *token, const struct pay_cp *cp,
    const struct pay_order *o, const char *charge_id, struct response *resp)
{
	struct buf row = BUF_INIT, idx = BUF_INIT;
	struct store_put puts[2];
	int rc;

	if ((rc = pay_created(cp, o, charge_id, resp)) != IDEM_OK ||
	    (rc = pay_row_encode(scope, &resp->body, &row)) != IDEM_OK ||
	    (rc = buf_append(&idx, scope, strlen(scope) + 1)) != IDEM_OK ||
	    (rc = buf_put_u64(&idx, cp->created_ms)) != IDEM_OK ||
	    (rc = buf_append(&idx, cp->id, PAY_ID_LEN)) != IDEM_OK) {
		pay_abandon(a, scope, key, token);
		pay_complete_failed(resp, rc, PAY_EFFECT_CHARGED);
		goto out;
	}
	puts[0] = (struct store_put){ STORE_PAYMENTS, cp->id, PAY_ID_LEN,
	    row.data, row.len };
	/* The id ends the index key already: the entry needs no value. */
	puts[1] = (struct store_put){ STORE_BY_ACCOUNT, idx.data, idx.len,
	    NULL, 0 };
	pay_complete(a, note, scope, key, token, puts, 2, PAY_EFFECT_CHARGED,
	    resp);
out:
	buf_free(&idx);
	buf_free(&row);
}

/* A new payment's id and time, fixed before the provider is called. */
static void
pay_cp_new(struct pay_cp *cp)
{
	uint8_t raw[PAY_ID_HEX / 2];

	crypto_random(raw, sizeof(raw));
	memcpy(cp->id, "pay_", 4);
	crypto_hex(raw, sizeof(raw), cp->id + 4);
	cp->created_ms = clock_now_ms();
}

/* The recovery point a fresh payment's claim starts with. */
struct pay_first {
	struct pay_cp cp;
	struct buf bytes;
};

/*
 * Makes the recovery point (a new id and the time) for idem_begin, which
 * asks only when it is about to claim: a replay or a 409 makes none.
 */
static int
pay_first_make(void *ctx, struct store_first *out)
{
	struct pay_first *f = ctx;
	int rc;

	pay_cp_new(&f->cp);
	buf_reset(&f->bytes);
	if ((rc = pay_cp_encode(&f->cp, &f->bytes)) != IDEM_OK)
		return rc;
	*out = (struct store_first){ PAY_STAGE_CHARGE_REQUESTED, f->bytes.data,
	    f->bytes.len };
	return IDEM_OK;
}

/*
 * The payment's id and time as the claim holds them: written with the
 * claim (or by the attempt that was taken over), so a take-over after a
 * crash resumes with the same payment.  A claim without them (one made
 * by an older release) gets them now, in a write of its own.
 */
static int
pay_checkpoint(struct app *a, const char *scope, const char *key,
    const struct idem_claim *c, struct pay_cp *cp)
{
	struct buf b = BUF_INIT;
	int rc;

	if (c->rec.stage == PAY_STAGE_CHARGE_REQUESTED &&
	    pay_cp_decode(&c->rec, cp) == IDEM_OK)
		return IDEM_OK;
	pay_cp_new(cp);
	if ((rc = pay_cp_encode(cp, &b)) == IDEM_OK)
		rc = store_checkpoint(a->store, scope, key, c->token,
		    PAY_STAGE_CHARGE_REQUESTED, b.data, b.len, cp->created_ms,
		    a->cfg.lease_ms);
	buf_free(&b);
	return rc;
}

/*
 * Whether an attempt before ours may have reached the provider: only a
 * take-over of a claim that had recorded its payment can say so.
 */
static int
pay_reached_before(const struct idem_claim *c)
{
	return c->decision == ENGINE_TAKEOVER &&
	    c->rec.stage != PAY_STAGE_STARTED;
}

/* Runs the payment for a claim we own, and ends the claim. */
static void
pay_run(struct app *a, struct app_note *note, const char *scope,
    const char *key, const struct idem_claim *c, const struct pay_order *o,
    const char *invalid, struct response *resp)
{
	struct provider_charge ch;
	struct pay_cp cp;
	char *pkey = NULL, amount[48];
	int rc;

	fault_point("after_claim");
	/* An invalid payment is a final answer: stored and replayed. */
	if (o == NULL) {
		problem_build(resp, PROBLEM_INVALID_PAYMENT, "%s", invalid);
		pay_complete(a, note, scope, key, c->token, NULL, 0,
		    pay_reached_before(c) ? PAY_EFFECT_CHARGED :
		    PAY_EFFECT_NONE, resp);
		return;
	}
	if ((rc = pay_checkpoint(a, scope, key, c, &cp)) != IDEM_OK) {
		/*
		 * Nothing reached the provider: a claim that never got its
		 * recovery point is released, so the retry runs at once
		 * instead of meeting 409s for the whole lease.
		 */
		if (rc != IDEM_ELOST && !pay_reached_before(c))
			pay_release(a, scope, key, c->token);
		pay_end_lost_or_failed(note, rc, resp);
		return;
	}
	/*
	 * The provider deduplicates on a key derived from ours.  The claim's
	 * creation time tells this lifetime of the key from a later one (after
	 * it expired), and is kept across take-overs.
	 */
	if (asprintf(&pkey, "charge:%s:%s:%llu", scope, key,
	    (unsigned long long)c->rec.created_ms) < 0) {
		pay_abandon(a, scope, key, c->token);
		problem_build(resp, PROBLEM_INTERNAL, "Out of memory; nothing "
		    "was charged. Retry with the same Idempotency-Key.");
		return;
	}
	rc = provider_charge(a->provider, pkey, o->minor, o->cur->code,
	    clock_now_ms(), &ch);
	free(pkey);
	if (rc != IDEM_OK)
		ch.outcome = PROVIDER_TIMEOUT;
	switch (ch.outcome) {
	case PROVIDER_CHARGED:
		pay_succeed(a, note, scope, key, c->token, &cp, o, ch.id,
		    resp);
		break;
	case PROVIDER_DECLINED:
		money_format(o->minor, o->cur, amount, sizeof(amount));
		problem_build(resp, PROBLEM_DECLINED, "The card was declined "
		    "for %s %s (decline %s).", amount, o->cur->code, ch.id);
		pay_complete(a, note, scope, key, c->token, NULL, 0,
		    PAY_EFFECT_DECLINED, resp);
		break;
	case PROVIDER_UNAVAILABLE:
		/*
		 * This call did nothing.  The key may be used afresh only if no
		 * earlier attempt reached the provider either; a take-over of
		 * one that did keeps the claim, so the retry still finds that
		 * attempt's charge under the same derived key.
		 */
		if (!pay_reached_before(c))
			pay_release(a, scope, key, c->token);
		else
			pay_abandon(a, scope, key, c->token);
		problem_build(resp, PROBLEM_PROVIDER_FAILED, "The payment "
		    "provider is unavailable and nothing was charged; retry "
		    "with the same Idempotency-Key.");
		break;
	case PROVIDER_KEY_REUSED:
		/* Cannot happen while fingerprints hold; keep the claim. */
		pay_abandon(a, scope, key, c->token);
		problem_build(resp, PROBLEM_INTERNAL, "The payment provider "
		    "refused the charge's key.");
		break;
	case PROVIDER_TIMEOUT:
	default:
		/*
		 * A charge may have been made: keep the claim and its recovery
		 * point, and end the lease so the retry resumes at once and
		 * finds that charge under the derived key.
		 */
		pay_abandon(a, scope, key, c->token);
		problem_build(resp, PROBLEM_PROVIDER_TIMEOUT, "The payment "
		    "provider did not confirm the charge; retry with the same "
		    "Idempotency-Key and the original charge will be "
		    "returned, never a second one.");
		break;
	}
}

static const enum metric pay_decision_metric[ENGINE__MAX] = {
	[ENGINE_CLAIM] = METRIC_CLAIMS,
	[ENGINE_TAKEOVER] = METRIC_TAKEOVERS,
	[ENGINE_REPLAY] = METRIC_REPLAYS,
	[ENGINE_CONFLICT] = METRIC_CONFLICTS,
	[ENGINE_MISMATCH] = METRIC_MISMATCHES,
};

void
pay_post(struct app *a, struct app_note *note, const struct request *req,
    enum req_status st, const char *scope, struct response *resp)
{
	struct idem_policy pol = { a->cfg.lease_ms, a->cfg.ttl_ms };
	struct json_value *doc = NULL;
	struct buf canon = BUF_INIT;
	struct pay_first first = { .bytes = BUF_INIT };
	struct idem_claim c;
	struct pay_order o;
	enum key_status ks;
	enum json_status js;
	char key[KEY_MAX + 1], err[160], invalid[256];
	uint8_t fp[FP_SIZE];
	uint64_t start;
	size_t keylen;
	int rc, valid;

	memset(&c, 0, sizeof(c));
	ks = key_parse(req->idempotency_key, key, &keylen);
	if (ks != KEY_OK) {
		metrics_inc(ks == KEY_MISSING ? METRIC_KEY_MISSING :
		    METRIC_KEY_INVALID);
		problem_build(resp, ks == KEY_MISSING ? PROBLEM_MISSING_KEY :
		    PROBLEM_INVALID_KEY, "%s", key_strstatus(ks));
		return;
	}
	if (st != REQ_OK) {
		app_bad_request(st, a, resp);
		return;
	}
	if (!req_is_json(req->content_type)) {
		problem_build(resp, PROBLEM_MEDIA_TYPE, "Send the payment as "
		    "Content-Type: application/json.");
		return;
	}
	js = json_parse(req->body.data, req->body.len, &doc, err, sizeof(err));
	if (js != JSON_OK) {
		problem_build(resp, PROBLEM_MALFORMED_JSON, "%s", err);
		return;
	}
	if (a->cfg.fp_mode == FP_CANONICAL) {
		if (json_canonical(doc, &canon) != IDEM_OK) {
			problem_build(resp, PROBLEM_INTERNAL, "Out of memory.");
			goto out;
		}
		fp_compute(FP_CANONICAL, req->method, req->path, req->query,
		    canon.data, canon.len, fp);
	} else
		fp_compute(FP_RAW, req->method, req->path, req->query,
		    req->body.data, req->body.len, fp);
	/*
	 * A valid payment's claim records its id and time in its own write:
	 * two writes per payment (claim, completion), not three.  Validity is
	 * only acted on after the claim, keeping the check order (the store's
	 * answers come first).
	 */
	valid = pay_order_parse(doc, &o, invalid, sizeof(invalid)) == 0;
	if ((rc = app_ensure_open(a)) == IDEM_OK && a->have_secret)
		keyhash_compute(a->secret, scope, key, note->keyhash);
	start = clock_now_ms();
	if (rc == IDEM_OK)
		rc = idem_begin(a->store, scope, key, fp, start, &pol,
		    valid ? pay_first_make : NULL, &first, &c);
	if (rc == IDEM_ELIMIT) {
		note->outcome = "limited";
		pay_limit(a, resp, c.retry_after);
		goto out;
	}
	if (rc != IDEM_OK) {
		pay_store_error(resp, rc);
		goto out;
	}
	note->outcome = engine_strdecision(c.decision);
	metrics_inc(pay_decision_metric[c.decision]);
	switch (c.decision) {
	case ENGINE_REPLAY:
		pay_replay(&c.rec, resp);
		break;
	case ENGINE_CONFLICT:
		c.retry_after = idem_retry_after(&c, start, a->cfg.lease_ms);
		problem_build(resp, PROBLEM_IN_PROGRESS, "The first request "
		    "with this Idempotency-Key is still being processed; "
		    "retry after %u seconds.", c.retry_after);
		resp_header(resp, "Retry-After", "%u", c.retry_after);
		break;
	case ENGINE_MISMATCH:
		problem_build(resp, PROBLEM_KEY_REUSED, "This Idempotency-Key "
		    "was used with a different request (method, path, query "
		    "or body). Use a new key for a new payment.");
		break;
	case ENGINE_CLAIM:
	case ENGINE_TAKEOVER:
	default:
		pay_run(a, note, scope, key, &c, valid ? &o : NULL, invalid,
		    resp);
		metrics_observe_run_ms(clock_now_ms() - start);
		break;
	}
out:
	rec_free(&c.rec);
	buf_free(&first.bytes);
	buf_free(&canon);
	json_free(doc);
}

void
pay_get(struct app *a, const struct request *req, const char *id,
    const char *scope, struct response *resp)
{
	struct buf row = BUF_INIT;
	const uint8_t *s, *b;
	size_t slen, blen;
	char etag[20];
	int rc;

	if (!pay_id_valid(id)) {
		problem_build(resp, PROBLEM_NOT_FOUND, "No such payment.");
		return;
	}
	if ((rc = app_ensure_open(a)) != IDEM_OK) {
		pay_store_error(resp, rc);
		return;
	}
	rc = store_get(a->store, STORE_PAYMENTS, id, strlen(id), &row);
	if (rc == IDEM_OK)
		rc = pay_row_decode(&row, &s, &slen, &b, &blen);
	/* Another account's payment is indistinguishable from none. */
	if (rc == IDEM_ENOTFOUND || (rc == IDEM_OK && (slen != strlen(scope) ||
	    memcmp(s, scope, slen) != 0))) {
		problem_build(resp, PROBLEM_NOT_FOUND, "No such payment.");
		goto out;
	}
	if (rc != IDEM_OK) {
		pay_store_error(resp, rc);
		goto out;
	}
	pay_etag(b, blen, etag);
	resp_reset(resp);
	resp_header(resp, "ETag", "%s", etag);
	/* RFC 9110 section 13.1.2; a payment never changes once made. */
	if (req->if_none_match != NULL && (strcmp(req->if_none_match,
	    "*") == 0 || strstr(req->if_none_match, etag) != NULL)) {
		resp->status = 304;
		goto out;
	}
	resp->status = 200;
	if ((rc = resp_header(resp, "Content-Type", "application/json")) !=
	    IDEM_OK ||
	    (rc = buf_append(&resp->body, b, blen)) != IDEM_OK)
		problem_build(resp, PROBLEM_INTERNAL, "%s.", idem_strerror(rc));
out:
	buf_free(&row);
}

/* Collects payment ids from the account index, newest first. */
struct pay_ids {
	char ids[PAY_LIST_MAX + 1][PAY_ID_LEN + 1];
	size_t n;
};

static int
pay_collect(void *ctx, const void *key, size_t keylen, const void *val,
    size_t vallen)
{
	struct pay_ids *p = ctx;
	const char *id;

	/*
	 * The id is the key's last PAY_ID_LEN bytes; entries written before
	 * that was relied on also carry it as their value.
	 */
	if (vallen == PAY_ID_LEN)
		id = val;
	else if (vallen == 0 && keylen > PAY_ID_LEN)
		id = (const char *)key + keylen - PAY_ID_LEN;
	else
		return 1;
	if (p->n > PAY_LIST_MAX)
		return 1;
	memcpy(p->ids[p->n], id, PAY_ID_LEN);
	p->ids[p->n][PAY_ID_LEN] = '\0';
	p->n++;
	return 0;
}

/* Parses the limit parameter of the query; 0 when absent, -1 if bad. */
static long
pay_query_limit(const char *q)
{
	const char *p = q;
	char *end;
	long v;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, "limit=", 6) == 0) {
			v = strtol(p + 6, &end, 10);
			if (end == p + 6 || (*end != '\0' && *end != '&') ||
			    v < 1 || v > PAY_LIST_MAX)
				return -1;
			return v;
		}
		p = strchr(p, '&');
		if (p != NULL)
			p++;
	}
	return 0;
}

void
pay_list(struct app *a, const struct request *req, const char *scope,
    struct response *resp)
{
	struct pay_ids *ids = NULL;
	struct buf row = BUF_INIT;
	const uint8_t *s, *b;
	size_t slen, blen, i, shown;
	long limit;
	int rc;

	if ((limit = pay_query_limit(req->query)) < 0) {
		problem_build(resp, PROBLEM_BAD_REQUEST, "limit must be a "
		    "whole number from 1 to %d.", PAY_LIST_MAX);
		return;
	}
	if (limit == 0)
		limit = PAY_LIST_DEFAULT;
	if ((rc = app_ensure_open(a)) != IDEM_OK) {
		pay_store_error(resp, rc);
		return;
	}
	if ((ids = calloc(1, sizeof(*ids))) == NULL) {
		problem_build(resp, PROBLEM_INTERNAL, "Out of memory.");
		return;
	}
	rc = store_scan(a->store, STORE_BY_ACCOUNT, scope, strlen(scope) + 1,
	    1, (size_t)limit + 1, pay_collect, ids);
	if (rc != IDEM_OK) {
		pay_store_error(resp, rc);
		goto out;
	}
	resp_reset(resp);
	resp->status = 200;
	rc = resp_header(resp, "Content-Type", "application/json");
	if (rc == IDEM_OK)
		rc = buf_puts(&resp->body, "{\"data\":[");
	for (i = 0, shown = 0; rc == IDEM_OK && i < ids->n &&
	    i < (size_t)limit; i++) {
		buf_reset(&row);
		if (store_get(a->store, STORE_PAYMENTS, ids->ids[i], PAY_ID_LEN,
		    &row) != IDEM_OK ||
		    pay_row_decode(&row, &s, &slen, &b, &blen) != IDEM_OK)
			continue;
		if (shown++ > 0 && (rc = buf_putc(&resp->body, ',')) != IDEM_OK)
			break;
		rc = buf_append(&resp->body, b, blen);
	}
	if (rc == IDEM_OK)
		rc = buf_printf(&resp->body, "],\"has_more\":%s}",
		    ids->n > (size_t)limit ? "true" : "false");
	if (rc != IDEM_OK)
		problem_build(resp, PROBLEM_INTERNAL, "%s.", idem_strerror(rc));
out:
	buf_free(&row);
	free(ids);
}

void
pay_metrics(struct app *a, struct response *resp)
{
	int rc;

	if ((rc = app_ensure_open(a)) != IDEM_OK) {
		pay_store_error(resp, rc);
		return;
	}
	resp_reset(resp);
	resp->status = 200;
	resp_header(resp, "Content-Type", "text/plain; version=0.0.4; "
	    "charset=utf-8");
	metrics_render(&resp->body);
}

void
pay_healthz(struct app *a, struct response *resp)
{
	int rc;

	if ((rc = app_ensure_open(a)) != IDEM_OK) {
		pay_store_error(resp, rc);
		return;
	}
	resp_reset(resp);
	resp->status = 200;
	resp_header(resp, "Content-Type", "application/json");
	buf_puts(&resp->body, "{\"status\":\"ok\"}");
}
