/*
 * idem.c: the library's entry point (idem.h): the keyed lifecycle over
 * the store interface, the metrics it produces, and application rows by
 * table name.
 *
 * idem_begin answers replays, conflicts and mismatches from a read
 * transaction, so retries never queue behind the write lock, and only
 * then claims, in a write transaction where the engine decides again on
 * what is stored at that moment (doc/DESIGN.md, "Storage").
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "crypto.h"
#include "engine.h"
#include "err.h"
#include "fault.h"
#include "fp.h"
#include "idem.h"
#include "metrics.h"
#include "record.h"
#include "store.h"

#define IDEM_DEFAULT_LEASE_MS 30000ULL
#define IDEM_DEFAULT_TTL_MS (24ULL * 3600 * 1000)

struct idem {
	struct store *store;
	uint64_t lease_ms;
	uint64_t ttl_ms;
	idem_clock_fn clock;
	void *clock_ctx;
};

struct idem_call {
	struct idem *idem;
	char *scope;
	char *key;
	enum idem_verdict verdict;
	int claimed;                    /* IDEM_RUN, IDEM_RESUME */
	uint32_t retry_after;
	uint64_t start_ms;
	uint8_t token[REC_TOKEN_SIZE];
	struct rec rec;                 /* as read or claimed */
	struct idem_header headers[REC_MAX_HEADERS];
	struct idem_response resp;      /* IDEM_REPLAY: borrows from rec */
};

static const char *const idem_verdict_names[IDEM_VERDICT__MAX] = {
	[IDEM_RUN] = "claim",
	[IDEM_RESUME] = "takeover",
	[IDEM_REPLAY] = "replay",
	[IDEM_CONFLICT] = "conflict",
	[IDEM_MISMATCH] = "mismatch",
	[IDEM_LIMITED] = "limited",
};

static const enum metric idem_verdict_metric[IDEM_VERDICT__MAX] = {
	[IDEM_RUN] = METRIC_CLAIMS,
	[IDEM_RESUME] = METRIC_TAKEOVERS,
	[IDEM_REPLAY] = METRIC_REPLAYS,
	[IDEM_CONFLICT] = METRIC_CONFLICTS,
	[IDEM_MISMATCH] = METRIC_MISMATCHES,
	[IDEM_LIMITED] = METRIC_LIMITED,
};

static const enum idem_verdict idem_of_decision[ENGINE__MAX] = {
	[ENGINE_CLAIM] = IDEM_RUN,
	[ENGINE_TAKEOVER] = IDEM_RESUME,
	[ENGINE_REPLAY] = IDEM_REPLAY,
	[ENGINE_CONFLICT] = IDEM_CONFLICT,
	[ENGINE_MISMATCH] = IDEM_MISMATCH,
};

const char *
idem_strverdict(enum idem_verdict v)
{
	if ((unsigned)v >= IDEM_VERDICT__MAX)
		return "unknown";
	return idem_verdict_names[v];
}

void
idem_fingerprint(enum idem_fp_mode mode, const char *method,
    const char *path, const char *query, const void *body, size_t bodylen,
    uint8_t out[IDEM_FP_SIZE])
{
	fp_compute(mode == IDEM_FP_RAW ? FP_RAW : FP_CANONICAL, method, path,
	    query, body, bodylen, out);
}

/* The handle's clock, as the store reads it inside its writes. */
static uint64_t
idem_store_clock(void *ctx)
{
	return idem_now_ms(ctx);
}

int
idem_open(const struct idem_options *opt, struct idem **out)
{
	return idem_open_backend(opt, NULL, out);
}

int
idem_open_backend(const struct idem_options *opt,
    const struct store_ops *backend, struct idem **out)
{
	struct store_config sc;
	struct idem *idem;
	int rc;

	*out = NULL;
	if (opt == NULL || opt->dir == NULL)
		return IDEM_EINVAL;
	if ((idem = calloc(1, sizeof(*idem))) == NULL)
		return IDEM_ENOMEM;
	memset(&sc, 0, sizeof(sc));
	sc.dir = opt->dir;
	sc.map_size = opt->map_size;
	sc.read_only = opt->read_only;
	sc.max_keys_per_scope = opt->max_keys_per_scope;
	sc.commit_delay_us = opt->commit_delay_us;
	sc.tables = opt->tables;
	sc.backend = backend;
	if ((rc = store_open(&sc, &idem->store)) != IDEM_OK) {
		free(idem);
		return rc;
	}
	idem->lease_ms = opt->lease_ms != 0 ? opt->lease_ms :
	    IDEM_DEFAULT_LEASE_MS;
	idem->ttl_ms = opt->ttl_ms != 0 ? opt->ttl_ms : IDEM_DEFAULT_TTL_MS;
	idem->clock = opt->clock;
	idem->clock_ctx = opt->clock_ctx;
	idem->store->clock = idem_store_clock;
	idem->store->clock_ctx = idem;
	*out = idem;
	return IDEM_OK;
}

void
idem_close(struct idem *idem)
{
	if (idem == NULL)
		return;
	store_close(idem->store);
	free(idem);
}

struct store *
store_of(struct idem *idem)
{
	return idem->store;
}

uint64_t
idem_now_ms(const struct idem *idem)
{
	return idem->clock != NULL ? idem->clock(idem->clock_ctx) :
	    clock_now_ms();
}

/*
 * The whole lease is the longest a duplicate may have to wait, not the
 * likely wait: a request that takes a second holds a 30-second lease.  A
 * client that honours Retry-After should come back about when the first
 * request is done, so the answer is the typical run time measured by
 * every worker, less what this run has had already, rounded up to whole
 * seconds (RFC 9110 section 10.2.3), at least 1 and never past the lease
 * (lease_left, from engine_decide).
 */
static uint32_t
idem_retry_after(const struct rec *r, uint64_t now_ms, uint64_t lease_ms,
    uint32_t lease_left)
{
	uint64_t start, elapsed, typical, wait, secs;

	/* The lease was last set, by the claim or a renewal, to now+lease. */
	start = r->lease_ms > lease_ms ? r->lease_ms - lease_ms : 0;
	elapsed = now_ms > start ? now_ms - start : 0;
	typical = metrics_typical_run_ms();
	wait = typical > elapsed ? typical - elapsed : 0;
	secs = wait / 1000 + (wait % 1000 != 0);
	if (secs < 1)
		secs = 1;
	if (secs > lease_left)
		secs = lease_left;
	return (uint32_t)secs;
}

/* A replay's response, pointing into the stored record. */
static void
idem_call_view(struct idem_call *c)
{
	size_t i;

	for (i = 0; i < c->rec.resp.nheaders && i < REC_MAX_HEADERS; i++) {
		c->headers[i].name = c->rec.resp.headers[i].name;
		c->headers[i].value = c->rec.resp.headers[i].value;
	}
	c->resp.status = c->rec.resp.status;
	c->resp.headers = c->headers;
	c->resp.nheaders = i;
	c->resp.body = c->rec.resp.body;
	c->resp.bodylen = c->rec.resp.bodylen;
}

/* Claims in a write transaction; IDEM_ELIMIT becomes IDEM_LIMITED. */
static int
idem_claim(struct idem_call *c, const uint8_t fp[IDEM_FP_SIZE],
    idem_start_fn start, void *start_ctx)
{
	struct idem *idem = c->idem;
	struct idem_start st;
	struct store_first first, *firstp = NULL;
	struct store_claim sc;
	int rc;

	if (start != NULL) {
		memset(&st, 0, sizeof(st));
		if ((rc = start(start_ctx, &st)) != IDEM_OK)
			return rc;
		if (st.len > IDEM_MAX_POINT)
			return IDEM_ETOOBIG;
		first = (struct store_first){ st.stage, st.point, st.len,
		    st.hook, st.hook_ctx };
		firstp = &first;
	}
	crypto_random(c->token, sizeof(c->token));
	memset(&sc, 0, sizeof(sc));
	rc = store_claim(idem->store, c->scope, c->key, fp, c->token,
	    c->start_ms, idem->lease_ms, idem->ttl_ms, firstp, &sc);
	if (rc == IDEM_ELIMIT) {
		c->verdict = IDEM_LIMITED;
		c->retry_after = sc.retry_after;
		return IDEM_OK;
	}
	if (rc != IDEM_OK)
		return rc;
	c->verdict = idem_of_decision[sc.decision];
	c->retry_after = sc.retry_after;
	c->rec = sc.rec;
	return IDEM_OK;
}

static int
idem_call_new(struct idem *idem, const char *scope, const char *key,
    struct idem_call **out)
{
	struct idem_call *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return IDEM_ENOMEM;
	c->idem = idem;
	if ((c->scope = strdup(scope)) == NULL ||
	    (c->key = strdup(key)) == NULL) {
		free(c->scope);
		free(c);
		return IDEM_ENOMEM;
	}
	c->start_ms = idem_now_ms(idem);
	*out = c;
	return IDEM_OK;
}

int
idem_begin(struct idem *idem, const char *scope, const char *key,
    const uint8_t fp[IDEM_FP_SIZE], idem_start_fn start, void *start_ctx,
    struct idem_call **out)
{
	struct idem_call *c;
	int rc;

	*out = NULL;
	if (idem == NULL || scope == NULL || key == NULL || fp == NULL)
		return IDEM_EINVAL;
	if ((rc = idem_call_new(idem, scope, key, &c)) != IDEM_OK)
		return rc;
	/* The fast path: a read transaction, no write lock. */
	rc = store_lookup(idem->store, scope, key, &c->rec);
	if (rc == IDEM_OK) {
		c->verdict = idem_of_decision[engine_decide(&c->rec, fp,
		    c->start_ms, &c->retry_after)];
		if (c->verdict == IDEM_RUN || c->verdict == IDEM_RESUME)
			rec_free(&c->rec);
	} else if (rc != IDEM_ENOTFOUND)
		goto fail;
	if ((rc != IDEM_OK || c->verdict == IDEM_RUN ||
	    c->verdict == IDEM_RESUME) &&
	    (rc = idem_claim(c, fp, start, start_ctx)) != IDEM_OK)
		goto fail;
	metrics_inc(idem_verdict_metric[c->verdict]);
	switch (c->verdict) {
	case IDEM_REPLAY:
		idem_call_view(c);
		break;
	case IDEM_CONFLICT:
		c->retry_after = idem_retry_after(&c->rec, c->start_ms,
		    idem->lease_ms, c->retry_after);
		break;
	case IDEM_RUN:
	case IDEM_RESUME:
		c->claimed = 1;
		fault_point("after_claim");
		break;
	default:
		break;
	}
	*out = c;
	return IDEM_OK;

fail:
	idem_call_free(c);
	return rc;
}

enum idem_verdict
idem_call_verdict(const struct idem_call *c)
{
	return c->verdict;
}

const struct idem_response *
idem_call_response(const struct idem_call *c)
{
	return c->verdict == IDEM_REPLAY ? &c->resp : NULL;
}

uint32_t
idem_call_retry_after(const struct idem_call *c)
{
	return c->verdict == IDEM_CONFLICT || c->verdict == IDEM_LIMITED ?
	    c->retry_after : 0;
}

uint32_t
idem_call_stage(const struct idem_call *c)
{
	return c->rec.stage;
}

const void *
idem_call_point(const struct idem_call *c, size_t *len)
{
	*len = c->rec.cplen;
	return c->rec.cplen > 0 ? c->rec.cp : NULL;
}

uint64_t
idem_call_created_ms(const struct idem_call *c)
{
	return c->rec.created_ms;
}

uint32_t
idem_call_attempts(const struct idem_call *c)
{
	return c->rec.attempts;
}

int
idem_checkpoint(struct idem_call *c, uint32_t stage, const void *point,
    size_t len)
{
	struct idem *idem = c->idem;
	uint8_t *copy = NULL;
	int rc;

	if (!c->claimed)
		return IDEM_EINVAL;
	if (len > IDEM_MAX_POINT)
		return IDEM_ETOOBIG;
	if (len > 0) {
		if (point == NULL)
			return IDEM_EINVAL;
		if ((copy = malloc(len)) == NULL)
			return IDEM_ENOMEM;
		memcpy(copy, point, len);
	}
	rc = store_checkpoint(idem->store, c->scope, c->key, c->token, stage,
	    point, len, idem_now_ms(idem), idem->lease_ms);
	if (rc != IDEM_OK) {
		free(copy);
		if (rc == IDEM_ELOST)
			metrics_inc(METRIC_LOST);
		return rc;
	}
	rec_adopt_cp(&c->rec, copy, len);
	c->rec.stage = stage;
	return IDEM_OK;
}

int
idem_finish(struct idem_call *c, const struct idem_response *resp,
    idem_tx_fn hook, void *hook_ctx)
{
	struct idem *idem = c->idem;
	struct rec_response rr;
	int rc;

	if (!c->claimed || resp == NULL)
		return IDEM_EINVAL;
	if ((rc = rec_response_borrow(resp, &rr)) != IDEM_OK)
		return rc;
	rc = store_complete(idem->store, c->scope, c->key, c->token, &rr, hook,
	    hook_ctx, idem_now_ms(idem), idem->ttl_ms);
	if (rc == IDEM_ELOST)
		metrics_inc(METRIC_LOST);
	if (rc != IDEM_OK)
		return rc;
	metrics_inc(METRIC_COMPLETIONS);
	fault_point("after_complete");
	return IDEM_OK;
}

int
idem_release(struct idem_call *c, idem_tx_fn hook, void *hook_ctx)
{
	struct idem *idem = c->idem;
	int rc;

	if (!c->claimed)
		return IDEM_EINVAL;
	rc = store_release(idem->store, c->scope, c->key, c->token, hook,
	    hook_ctx);
	if (rc == IDEM_OK)
		metrics_inc(METRIC_RELEASES);
	else if (rc != IDEM_ELOST &&
	    store_abandon(idem->store, c->scope, c->key, c->token,
	    idem_now_ms(idem)) == IDEM_OK)
		metrics_inc(METRIC_ABANDONS);
	return rc;
}

int
idem_abandon(struct idem_call *c)
{
	struct idem *idem = c->idem;
	int rc;

	if (!c->claimed)
		return IDEM_EINVAL;
	rc = store_abandon(idem->store, c->scope, c->key, c->token,
	    idem_now_ms(idem));
	if (rc == IDEM_OK)
		metrics_inc(METRIC_ABANDONS);
	return rc;
}

void
idem_call_free(struct idem_call *c)
{
	if (c == NULL)
		return;
	/* How long claimed requests run is what a duplicate waits for. */
	if (c->claimed)
		metrics_observe_run_ms(idem_now_ms(c->idem) - c->start_ms);
	rec_free(&c->rec);
	free(c->scope);
	free(c->key);
	free(c);
}

int
idem_tx_get(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void **val, size_t *vallen)
{
	return store_tx_get(tx, table, key, keylen, val, vallen);
}

int
idem_tx_put(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen)
{
	return store_tx_put(tx, table, key, keylen, val, vallen);
}

int
idem_tx_del(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen)
{
	return store_tx_del(tx, table, key, keylen);
}

int
idem_tx_respond(struct idem_tx *tx, const struct idem_response *resp)
{
	if (!tx->may_respond || resp == NULL ||
	    resp->nheaders > IDEM_MAX_HEADERS)
		return IDEM_EINVAL;
	tx->respond = resp;
	return IDEM_OK;
}

/* Hands b's bytes to the caller (free(3)), NULL when there are none. */
static void
idem_buf_give(struct buf *b, void **val, size_t *len)
{
	*len = b->len;
	if (b->len == 0) {
		buf_free(b);
		*val = NULL;
		return;
	}
	*val = b->data;
	buf_init(b);
}

int
idem_row_get(struct idem *idem, const char *table, const void *key,
    size_t keylen, void **val, size_t *vallen)
{
	struct buf b = BUF_INIT;
	int rc;

	*val = NULL;
	*vallen = 0;
	if ((rc = store_get(idem->store, table, key, keylen, &b)) == IDEM_OK)
		idem_buf_give(&b, val, vallen);
	buf_free(&b);
	return rc;
}

int
idem_row_insert_once(struct idem *idem, const char *table,
    const void *key, size_t keylen, const void *val, size_t vallen,
    void **existing, size_t *existinglen)
{
	struct buf b = BUF_INIT;
	int rc;

	if (existing != NULL) {
		*existing = NULL;
		*existinglen = 0;
	}
	rc = store_insert_once(idem->store, table, key, keylen, val, vallen,
	    existing != NULL ? &b : NULL);
	if (rc == IDEM_EEXIST && existing != NULL)
		idem_buf_give(&b, existing, existinglen);
	buf_free(&b);
	return rc;
}

int
idem_row_scan(struct idem *idem, const char *table, const void *prefix,
    size_t prefixlen, int reverse, size_t limit, idem_row_fn fn, void *ctx)
{
	return store_scan(idem->store, table, prefix, prefixlen, reverse,
	    limit, fn, ctx);
}

int
idem_row_count(struct idem *idem, const char *table, size_t *n)
{
	return store_count(idem->store, table, n);
}
