/* SPDX-License-Identifier: MIT */
/*
 * idem.c: the library's entry point (idem.h): the keyed lifecycle over
 * the store interface, the metrics it produces, and application rows by
 * table name.
 *
 * idem_begin answers replays, conflicts and mismatches from a read
 * transaction, so retries never queue behind the write lock, and only
 * then claims, in a write transaction where the engine decides again on
 * what is stored at that moment (doc/DESIGN.md, "Storage").
 *
 * With a key file (idem_options.secret_file) what the store keeps is
 * sealed and opened on its way through here, by idem_seal.c's adapter
 * (idem_int.h), which also rolls keys.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "crypto.h"
#include "engine.h"
#include "err.h"
#include "fault.h"
#include "fp.h"
#include "idem.h"
#include "idem_backend.h"
#include "idem_int.h"
#include "metrics.h"
#include "record.h"
#include "seal.h"
#include "store.h"

#define IDEM_DEFAULT_LEASE_MS 30000ULL
#define IDEM_DEFAULT_TTL_MS (24ULL * 3600 * 1000)

/* idem.h's version is the release's (configure.ac's AC_INIT). */
#if IDEM_VERSION_MAJOR != IDEM_PACKAGE_MAJOR || \
    IDEM_VERSION_MINOR != IDEM_PACKAGE_MINOR || \
    IDEM_VERSION_PATCH != IDEM_PACKAGE_PATCH
#error "idem.h's IDEM_VERSION_* differ from configure.ac's version"
#endif

/*
 * The smallest struct idem_options a caller may pass: 0.2.0's, the first
 * with a size, which ends with secret_file.  A struct of that release may
 * carry padding past it, so its sizeof is at least this.
 */
#define IDEM_OPTIONS_SIZE_0_2 (offsetof(struct idem_options, secret_file) + \
	sizeof(((struct idem_options *)0)->secret_file))

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
	void *resp_mem;                 /* an opened response's parts */
};

/*
 * The wrapper around an application's hook (idem_tx_fn): it lets
 * idem_tx_get and idem_tx_put seal and open, keeps what they opened
 * until the hook returns, and seals a response the hook chose.
 */
struct idem_hook {
	struct idem *idem;
	idem_tx_fn fn;
	void *ctx;
	const char *scope;
	const char *key;
	struct buf scratch;
	struct buf *opened;
	size_t nopened;
	size_t capopened;
	struct idem_sealed chosen;
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

static void
idem_hook_init(struct idem_hook *h, struct idem *idem, idem_tx_fn fn,
    void *ctx, const char *scope, const char *key)
{
	memset(h, 0, sizeof(*h));
	h->idem = idem;
	h->fn = fn;
	h->ctx = ctx;
	h->scope = scope;
	h->key = key;
}

/* Frees what the hook's reads opened: it has returned. */
static void
idem_hook_clear(struct idem_hook *h)
{
	size_t i;

	for (i = 0; i < h->nopened; i++)
		buf_free(&h->opened[i]);
	h->nopened = 0;
}

static void
idem_hook_done(struct idem_hook *h)
{
	idem_hook_clear(h);
	free(h->opened);
	buf_free(&h->scratch);
	idem__sealed_free(&h->chosen);
}

/* A buffer that lives until the hook returns. */
static int
idem_hook_slot(struct idem_hook *h, struct buf **out)
{
	struct buf *p;
	size_t cap;

	if (h->nopened == h->capopened) {
		cap = h->capopened != 0 ? 2 * h->capopened : 4;
		if ((p = realloc(h->opened, cap * sizeof(*p))) == NULL)
			return IDEM_ENOMEM;
		h->opened = p;
		h->capopened = cap;
	}
	*out = &h->opened[h->nopened++];
	buf_init(*out);
	return IDEM_OK;
}

static int
idem_hook_run(void *ctx, struct idem_tx *tx)
{
	struct idem_hook *h = ctx;
	struct rec_response rr;
	int rc;

	tx->seal = h;
	rc = h->fn(h->ctx, tx);
	idem_hook_clear(h);
	tx->seal = NULL;
	if (rc != IDEM_OK || h->idem->seal == NULL || tx->respond == NULL)
		return rc;
	/* What the hook chose is stored as the response: sealed too. */
	if ((rc = rec_response_borrow(tx->respond, &rr)) != IDEM_OK ||
	    (rc = idem__seal_response(h->idem, h->scope, h->key, &rr,
	    &h->chosen)) != IDEM_OK)
		return rc;
	tx->respond = &h->chosen.ir;
	return IDEM_OK;
}

/* The hook to hand the store: the wrapper, or none. */
static idem_tx_fn
idem_hook_fn(const struct idem_hook *h)
{
	return h->fn != NULL ? idem_hook_run : NULL;
}

const char *
idem_version(void)
{
	return PACKAGE_VERSION;
}

int
idem_version_number(void)
{
	return IDEM_VERSION_NUMBER;
}

/*
 * The caller's options as this library's struct: its first opt->size
 * bytes and zeros after them, so that a program built before a field was
 * appended gets that field's default.  No byte past opt->size is read:
 * the caller's struct may be that small.  A size past this library's
 * struct comes from a newer idem.h, whose fields this library would
 * ignore: refused, and said, since the program cannot tell that from any
 * other IDEM_EINVAL.
 */
static int
idem_options_read(const struct idem_options *opt, struct idem_options *out)
{
	char line[256];
	ssize_t w;
	int n;

	if (opt->size >= IDEM_OPTIONS_SIZE_0_2 && opt->size <= sizeof(*out)) {
		memset(out, 0, sizeof(*out));
		memcpy(out, opt, opt->size);
		return IDEM_OK;
	}
	if (opt->size > sizeof(*out))
		n = snprintf(line, sizeof(line), "idem: idem_open: options of "
		    "%zu bytes, this libidem %s knows %zu: the program was "
		    "built with a newer idem.h and needs a newer libidem\n",
		    opt->size, PACKAGE_VERSION, sizeof(*out));
	else
		n = snprintf(line, sizeof(line), "idem: idem_open: options of "
		    "%zu bytes, at least %zu: set size with IDEM_OPTIONS_INIT "
		    "or sizeof(struct idem_options)\n", opt->size,
		    (size_t)IDEM_OPTIONS_SIZE_0_2);
	if (n > 0) {
		w = write(STDERR_FILENO, line, (size_t)n < sizeof(line) ?
		    (size_t)n : sizeof(line) - 1);
		(void)w;
	}
	return IDEM_EINVAL;
}

int
idem_open(const struct idem_options *opt, struct idem **out)
{
	return idem__open_backend(opt, NULL, out);
}

int
idem__open_backend(const struct idem_options *caller,
    const struct store_ops *backend, struct idem **out)
{
	struct idem_options o, *opt = &o;
	struct store_config sc;
	struct idem *idem;
	int rc;

	*out = NULL;
	if (caller == NULL || (rc = idem_options_read(caller, &o)) != IDEM_OK)
		return IDEM_EINVAL;
	if (opt->dir == NULL)
		return IDEM_EINVAL;
	/*
	 * libsodium starts here for a program that uses only idem.h;
	 * sodium_init is thread-safe and does nothing the second time.
	 */
	if ((rc = crypto_init()) != IDEM_OK)
		return rc;
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
	sc.pg_connect_timeout_s = opt->pg_connect_timeout_s;
	sc.pg_statement_timeout_ms = opt->pg_statement_timeout_ms;
	sc.pg_lock_timeout_ms = opt->pg_lock_timeout_ms;
	sc.pg_pool_wait_ms = opt->pg_pool_wait_ms;
	if (opt->secret_file != NULL && opt->secret_file[0] != '\0' &&
	    (rc = idem__seal_load(opt->secret_file, &idem->seal)) != IDEM_OK) {
		free(idem);
		return rc;
	}
	if ((rc = rcache_new(opt->replay_cache_bytes, &idem->rcache)) !=
	    IDEM_OK || (rc = store_open(&sc, &idem->store)) != IDEM_OK) {
		rcache_free(idem->rcache);
		seal_free(idem->seal);
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
	rcache_free(idem->rcache);
	seal_free(idem->seal);
	free(idem);
}

uint64_t
idem_now_ms(const struct idem *idem)
{
	return idem->clock != NULL ? idem->clock(idem->clock_ctx) :
	    clock_now_ms();
}

/*
 * How long claimed requests typically run: the figure every worker of the
 * host shares when the counters file is mapped (metrics_open, which the
 * responder calls), else this handle's own, so that a program that uses
 * only idem.h gets a meaningful Retry-After too.
 */
static uint64_t
idem_typical_run_ms(const struct idem *idem)
{
	uint64_t shared = metrics_typical_run_ms();

	return shared > 0 ? shared : metrics_ewma_get(&idem->run_ewma_ms);
}

/*
 * The whole lease is the longest a duplicate may have to wait, not the
 * likely wait: a request that takes a second holds a 30-second lease.  A
 * client that honours Retry-After should come back about when the first
 * request is done, so the answer is the typical run time, less what this
 * run has had already, rounded up to whole seconds (RFC 9110 section
 * 10.2.3), at least 1 and never past the lease (lease_left, from
 * engine_decide).
 */
static uint32_t
idem_retry_after(const struct idem *idem, const struct rec *r,
    uint64_t now_ms, uint32_t lease_left)
{
	uint64_t start, elapsed, typical, wait, secs;

	/* The lease was last set, by the claim or a renewal, to now+lease. */
	start = r->lease_ms > idem->lease_ms ? r->lease_ms - idem->lease_ms : 0;
	elapsed = now_ms > start ? now_ms - start : 0;
	typical = idem_typical_run_ms(idem);
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
	struct idem_hook hk;
	struct buf sealed = BUF_INIT;
	void *copy;
	int rc;

	memset(&st, 0, sizeof(st));
	idem_hook_init(&hk, idem, NULL, NULL, c->scope, c->key);
	if (start != NULL) {
		if ((rc = start(start_ctx, &st)) != IDEM_OK)
			return rc;
		if (st.len > IDEM_MAX_POINT)
			return IDEM_ETOOBIG;
		hk.fn = st.hook;
		hk.ctx = st.hook_ctx;
		first = (struct store_first){ st.stage, st.point, st.len,
		    idem_hook_fn(&hk), &hk, NULL };
		if (idem->seal != NULL && st.len > 0) {
			if ((rc = idem__seal_point(idem, c->scope, c->key,
			    st.point, st.len, &sealed)) != IDEM_OK)
				goto out;
			first.cp = sealed.data;
			first.cplen = sealed.len;
		}
		firstp = &first;
	}
	crypto_random(c->token, sizeof(c->token));
	memset(&sc, 0, sizeof(sc));
	rc = store_claim(idem->store, c->scope, c->key, fp, c->token,
	    c->start_ms, idem->lease_ms, idem->ttl_ms, firstp, &sc);
	if (rc == IDEM_ELIMIT) {
		c->verdict = IDEM_LIMITED;
		c->retry_after = sc.retry_after;
		rc = IDEM_OK;
		goto out;
	}
	if (rc != IDEM_OK)
		goto out;
	c->verdict = idem_of_decision[sc.decision];
	c->retry_after = sc.retry_after;
	c->rec = sc.rec;
	if (idem->seal == NULL)
		goto out;
	if (c->verdict == IDEM_RUN && st.len > 0) {
		/* Ours, just written: no need to open what we sealed. */
		if ((copy = malloc(st.len)) == NULL) {
			rc = IDEM_ENOMEM;
			goto out;
		}
		memcpy(copy, st.point, st.len);
		rec_adopt_cp(&c->rec, copy, st.len);
	} else if (c->verdict == IDEM_RESUME &&
	    (rc = store_unseal_point(idem->seal, c->scope, c->key, &c->rec)) !=
	    IDEM_OK)
		/* Let the next retry see the same answer at once. */
		(void)store_abandon(idem->store, c->scope, c->key, c->token,
		    idem_now_ms(idem));
out:
	buf_free(&sealed);
	idem_hook_done(&hk);
	return rc;
}

/*
 * Answers c from the handle's replay cache when it holds (scope, key):
 * the engine decides on the kept record as on the store's, at the same
 * time, so a hit is the replay or the 422 a read of the store would
 * give (a kept record is completed and live: nothing else can come of
 * it, and anything else goes to the store).  Returns 1 when answered.
 */
static int
idem_cached(struct idem_call *c, const uint8_t fp[IDEM_FP_SIZE])
{
	struct idem *idem = c->idem;
	enum engine_decision d;

	if (idem->rcache == NULL)
		return 0;
	if (rcache_get(idem->rcache, c->scope, c->key, c->start_ms, &c->rec,
	    &c->resp_mem) != IDEM_OK) {
		metrics_inc(METRIC_REPLAY_CACHE_MISSES);
		return 0;
	}
	d = engine_decide(&c->rec, fp, c->start_ms, &c->retry_after);
	if (d != ENGINE_REPLAY && d != ENGINE_MISMATCH) {
		rec_free(&c->rec);
		free(c->resp_mem);
		c->resp_mem = NULL;
		metrics_inc(METRIC_REPLAY_CACHE_MISSES);
		return 0;
	}
	metrics_inc(METRIC_REPLAY_CACHE_HITS);
	c->verdict = idem_of_decision[d];
	metrics_inc(idem_verdict_metric[c->verdict]);
	if (c->verdict == IDEM_REPLAY)
		idem_call_view(c);
	return 1;
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

/*
 * What a write step does where a call would claim the key (idem_claim
 * for idem_begin, idem_once_write for idem_once): it sets c's verdict
 * and record; arg carries the caller's function and context.
 */
typedef int (*idem_write_fn)(struct idem_call *c,
    const uint8_t fp[IDEM_FP_SIZE], void *arg);

/*
 * The decision idem_begin and idem_once share: the replay cache, then a
 * read (no write lock), and write's step only where the key is to be
 * claimed; then the verdict counted and the replay or conflict made
 * ready.  claims: the call holds a claim when its verdict is to run
 * (idem_begin), as against work already written (idem_once).
 */
static int
idem_decide(struct idem *idem, const char *scope, const char *key,
    const uint8_t fp[IDEM_FP_SIZE], idem_write_fn write, void *arg,
    int claims, struct idem_call **out)
{
	struct idem_call *c;
	int rc;

	if ((rc = idem_call_new(idem, scope, key, &c)) != IDEM_OK)
		return rc;
	if (idem_cached(c, fp)) {
		*out = c;
		return IDEM_OK;
	}
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
	    (rc = write(c, fp, arg)) != IDEM_OK)
		goto fail;
	metrics_inc(idem_verdict_metric[c->verdict]);
	switch (c->verdict) {
	case IDEM_REPLAY:
		if ((rc = store_unseal_response(idem->seal, c->scope, c->key,
		    &c->rec, &c->resp_mem)) != IDEM_OK)
			goto fail;
		rcache_put(idem->rcache, c->scope, c->key, &c->rec);
		idem_call_view(c);
		break;
	case IDEM_CONFLICT:
		c->retry_after = idem_retry_after(idem, &c->rec, c->start_ms,
		    c->retry_after);
		break;
	case IDEM_RUN:
	case IDEM_RESUME:
		if (claims) {
			c->claimed = 1;
			fault_point("after_claim");
		}
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

/* idem_begin's write step: the claim, with the caller's start. */
struct idem_begin_arg {
	idem_start_fn start;
	void *start_ctx;
};

static int
idem_begin_write(struct idem_call *c, const uint8_t fp[IDEM_FP_SIZE],
    void *arg)
{
	struct idem_begin_arg *a = arg;

	return idem_claim(c, fp, a->start, a->start_ctx);
}

int
idem_begin(struct idem *idem, const char *scope, const char *key,
    const uint8_t fp[IDEM_FP_SIZE], idem_start_fn start, void *start_ctx,
    struct idem_call **out)
{
	struct idem_begin_arg a = { start, start_ctx };

	*out = NULL;
	if (idem == NULL || scope == NULL || key == NULL || fp == NULL)
		return IDEM_EINVAL;
	return idem_decide(idem, scope, key, fp, idem_begin_write, &a, 1, out);
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

uint64_t
idem_call_generation(const struct idem_call *c)
{
	return c->rec.gen;
}

const uint8_t *
idem_call_fingerprint(const struct idem_call *c)
{
	return c->rec.fp;
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
	struct buf sealed = BUF_INIT;
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
	if (idem->seal != NULL && (rc = idem__seal_point(idem, c->scope,
	    c->key, point, len, &sealed)) != IDEM_OK) {
		free(copy);
		return rc;
	}
	rc = store_checkpoint(idem->store, c->scope, c->key, c->token, stage,
	    sealed.len > 0 ? sealed.data : point,
	    sealed.len > 0 ? sealed.len : len, idem_now_ms(idem),
	    idem->lease_ms);
	buf_free(&sealed);
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

/*
 * Whether resp is larger than IDEM_MAX_ANSWER, counting its body and its
 * headers' names and values (a missing one counts nothing here: the
 * record's own checks refuse it).
 */
static int
idem_answer_too_big(const struct idem_response *resp)
{
	size_t n = resp->bodylen, i;

	if (n > IDEM_MAX_ANSWER)
		return 1;
	for (i = 0; resp->headers != NULL && i < resp->nheaders; i++) {
		if (resp->headers[i].name != NULL)
			n += strlen(resp->headers[i].name);
		if (resp->headers[i].value != NULL)
			n += strlen(resp->headers[i].value);
		if (n > IDEM_MAX_ANSWER)
			return 1;
	}
	return 0;
}

int
idem_finish(struct idem_call *c, const struct idem_response *resp,
    idem_tx_fn hook, void *hook_ctx)
{
	struct idem *idem = c->idem;
	struct idem_sealed own;
	struct idem_hook hk;
	struct rec_response rr;
	const struct rec_response *stored = &rr;
	int rc;

	if (!c->claimed || resp == NULL)
		return IDEM_EINVAL;
	if ((rc = rec_response_borrow(resp, &rr)) != IDEM_OK)
		return rc;
	if (idem_answer_too_big(resp))
		return IDEM_ETOOBIG;
	memset(&own, 0, sizeof(own));
	if (idem->seal != NULL) {
		if ((rc = idem__seal_response(idem, c->scope, c->key, &rr,
		    &own)) != IDEM_OK) {
			idem__sealed_free(&own);
			return rc;
		}
		stored = &own.rr;
	}
	idem_hook_init(&hk, idem, hook, hook_ctx, c->scope, c->key);
	rc = store_complete(idem->store, c->scope, c->key, c->token, stored,
	    idem_hook_fn(&hk), &hk, idem_now_ms(idem), idem->ttl_ms);
	idem_hook_done(&hk);
	idem__sealed_free(&own);
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
	struct idem_hook hk;
	int rc;

	if (!c->claimed)
		return IDEM_EINVAL;
	idem_hook_init(&hk, idem, hook, hook_ctx, c->scope, c->key);
	rc = store_release(idem->store, c->scope, c->key, c->token,
	    idem_hook_fn(&hk), &hk);
	idem_hook_done(&hk);
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
	uint64_t ran;

	if (c == NULL)
		return;
	/* How long claimed requests run is what a duplicate waits for. */
	if (c->claimed) {
		ran = idem_now_ms(c->idem) - c->start_ms;
		metrics_observe_run_ms(ran);
		metrics_ewma_add(&c->idem->run_ewma_ms, ran);
	}
	rec_free(&c->rec);
	free(c->resp_mem);
	free(c->scope);
	free(c->key);
	free(c);
}

/* The hook's wrapper when the handle seals, else NULL. */
static struct idem_hook *
idem_tx_sealing(const struct idem_tx *tx)
{
	struct idem_hook *h = tx->seal;

	return h != NULL && h->idem->seal != NULL ? h : NULL;
}

int
idem_tx_get(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void **val, size_t *vallen)
{
	struct idem_hook *h = idem_tx_sealing(tx);
	const void *raw;
	size_t rawlen;
	struct buf *b;
	int rc;

	if (h == NULL)
		return store_tx_get(tx, table, key, keylen, val, vallen);
	if ((rc = store_tx_get(tx, table, key, keylen, &raw, &rawlen)) !=
	    IDEM_OK ||
	    (rc = idem_hook_slot(h, &b)) != IDEM_OK ||
	    (rc = idem__open_row(h->idem, table, key, keylen, raw, rawlen,
	    b)) != IDEM_OK)
		return rc;
	*val = b->data;
	*vallen = b->len;
	return IDEM_OK;
}

int
idem_tx_put(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen)
{
	struct idem_hook *h = idem_tx_sealing(tx);
	int rc;

	if (h == NULL)
		return store_tx_put(tx, table, key, keylen, val, vallen);
	buf_reset(&h->scratch);
	if ((rc = idem__seal_row(h->idem, table, key, keylen, val, vallen,
	    &h->scratch)) != IDEM_OK)
		return rc;
	return store_tx_put(tx, table, key, keylen, h->scratch.data,
	    h->scratch.len);
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
	if (idem_answer_too_big(resp))
		return IDEM_ETOOBIG;
	tx->respond = resp;
	return IDEM_OK;
}

/* Replaces the sealed value in b with its plaintext, when sealing. */
static int
idem_row_opened(struct idem *idem, const char *table, const void *key,
    size_t keylen, struct buf *b)
{
	struct buf plain = BUF_INIT;
	int rc;

	if (idem->seal == NULL)
		return IDEM_OK;
	if ((rc = idem__open_row(idem, table, key, keylen, b->data, b->len,
	    &plain)) != IDEM_OK) {
		buf_free(&plain);
		return rc;
	}
	buf_free(b);
	*b = plain;
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
	if ((rc = store_get(idem->store, table, key, keylen, &b)) == IDEM_OK &&
	    (rc = idem_row_opened(idem, table, key, keylen, &b)) == IDEM_OK)
		idem_buf_give(&b, val, vallen);
	buf_free(&b);
	return rc;
}

int
idem_row_insert_once(struct idem *idem, const char *table,
    const void *key, size_t keylen, const void *val, size_t vallen,
    void **existing, size_t *existinglen)
{
	struct buf b = BUF_INIT, sealed = BUF_INIT;
	int rc, orc;

	if (existing != NULL) {
		*existing = NULL;
		*existinglen = 0;
	}
	if (idem->seal != NULL && (rc = idem__seal_row(idem, table, key, keylen,
	    val, vallen, &sealed)) != IDEM_OK)
		return rc;
	if (idem->seal != NULL) {
		val = sealed.data;
		vallen = sealed.len;
	}
	rc = store_insert_once(idem->store, table, key, keylen, val, vallen,
	    existing != NULL ? &b : NULL);
	buf_free(&sealed);
	if (rc == IDEM_EEXIST && existing != NULL) {
		if ((orc = idem_row_opened(idem, table, key, keylen, &b)) !=
		    IDEM_OK)
			rc = orc;
		else
			idem_buf_give(&b, existing, existinglen);
	}
	buf_free(&b);
	return rc;
}

/* A scan of sealed rows: each value opened before fn sees it. */
struct idem_scan {
	struct idem *idem;
	const char *table;
	idem_row_fn fn;
	void *ctx;
	struct buf plain;
	int rc;
};

static int
idem_scan_one(void *ctx, const void *key, size_t keylen, const void *val,
    size_t vallen)
{
	struct idem_scan *sc = ctx;

	buf_reset(&sc->plain);
	if ((sc->rc = idem__open_row(sc->idem, sc->table, key, keylen, val,
	    vallen, &sc->plain)) != IDEM_OK)
		return 1;
	return sc->fn(sc->ctx, key, keylen, sc->plain.data, sc->plain.len);
}

int
idem_row_scan_from(struct idem *idem, const char *table, const void *prefix,
    size_t prefixlen, const void *from, size_t fromlen, int reverse,
    size_t limit, idem_row_fn fn, void *ctx)
{
	struct idem_scan sc = { idem, table, fn, ctx, BUF_INIT, IDEM_OK };
	int rc;

	if (idem->seal == NULL)
		return store_scan_from(idem->store, table, prefix, prefixlen,
		    from, fromlen, reverse, limit, fn, ctx);
	rc = store_scan_from(idem->store, table, prefix, prefixlen, from,
	    fromlen, reverse, limit, idem_scan_one, &sc);
	buf_free(&sc.plain);
	return sc.rc != IDEM_OK ? sc.rc : rc;
}

int
idem_row_scan(struct idem *idem, const char *table, const void *prefix,
    size_t prefixlen, int reverse, size_t limit, idem_row_fn fn, void *ctx)
{
	return idem_row_scan_from(idem, table, prefix, prefixlen, NULL, 0,
	    reverse, limit, fn, ctx);
}

int
idem_row_count(struct idem *idem, const char *table, size_t *n)
{
	return store_count(idem->store, table, n);
}


/*
 * idem_once's write where idem_begin would claim: fn's answer (sealed
 * when the store seals) and hook, as the fresh claim's first
 * (store_first.done), so the claim, the rows and the answer commit
 * together.  A take-over is completed with a write of its own.
 */
static int
idem_once_write(struct idem_call *c, const uint8_t fp[IDEM_FP_SIZE],
    idem_once_fn fn, void *ctx)
{
	struct idem *idem = c->idem;
	struct idem_outcome oc;
	struct idem_sealed own;
	struct idem_hook hk;
	struct rec_response rr;
	const struct rec_response *stored = &rr;
	struct store_first first;
	struct store_claim sc;
	int rc;

	memset(&oc, 0, sizeof(oc));
	memset(&own, 0, sizeof(own));
	if ((rc = fn(ctx, &oc)) != IDEM_OK ||
	    (rc = rec_response_borrow(&oc.resp, &rr)) != IDEM_OK)
		return rc;
	if (idem_answer_too_big(&oc.resp))
		return IDEM_ETOOBIG;
	if (idem->seal != NULL) {
		if ((rc = idem__seal_response(idem, c->scope, c->key, &rr,
		    &own)) != IDEM_OK) {
			idem__sealed_free(&own);
			return rc;
		}
		stored = &own.rr;
	}
	idem_hook_init(&hk, idem, oc.hook, oc.hook_ctx, c->scope, c->key);
	memset(&first, 0, sizeof(first));
	first.hook = idem_hook_fn(&hk);
	first.hook_ctx = &hk;
	first.done = stored;
	crypto_random(c->token, sizeof(c->token));
	memset(&sc, 0, sizeof(sc));
	rc = store_claim(idem->store, c->scope, c->key, fp, c->token,
	    c->start_ms, idem->lease_ms, idem->ttl_ms, &first, &sc);
	if (rc == IDEM_ELIMIT) {
		c->verdict = IDEM_LIMITED;
		c->retry_after = sc.retry_after;
		rc = IDEM_OK;
		goto out;
	}
	if (rc != IDEM_OK)
		goto out;
	c->verdict = idem_of_decision[sc.decision];
	c->retry_after = sc.retry_after;
	c->rec = sc.rec;
	if (c->verdict == IDEM_RESUME) {
		/* Taken over: ours to complete, as idem_finish would. */
		rc = store_complete(idem->store, c->scope, c->key, c->token,
		    stored, idem_hook_fn(&hk), &hk, idem_now_ms(idem),
		    idem->ttl_ms);
		if (rc == IDEM_ELOST)
			metrics_inc(METRIC_LOST);
		else if (rc != IDEM_OK && store_abandon(idem->store, c->scope,
		    c->key, c->token, idem_now_ms(idem)) == IDEM_OK)
			metrics_inc(METRIC_ABANDONS);
	}
	if (rc == IDEM_OK && (c->verdict == IDEM_RUN ||
	    c->verdict == IDEM_RESUME))
		metrics_inc(METRIC_COMPLETIONS);
out:
	idem_hook_done(&hk);
	idem__sealed_free(&own);
	return rc;
}

/* idem_once's write step: fn's answer, written as the claim's. */
struct idem_once_arg {
	idem_once_fn fn;
	void *ctx;
};

static int
idem_once_step(struct idem_call *c, const uint8_t fp[IDEM_FP_SIZE],
    void *arg)
{
	struct idem_once_arg *a = arg;

	return idem_once_write(c, fp, a->fn, a->ctx);
}

int
idem_once(struct idem *idem, const char *scope, const char *key,
    const uint8_t fp[IDEM_FP_SIZE], idem_once_fn fn, void *ctx,
    struct idem_call **out)
{
	struct idem_once_arg a = { fn, ctx };

	*out = NULL;
	if (idem == NULL || scope == NULL || key == NULL || fp == NULL ||
	    fn == NULL)
		return IDEM_EINVAL;
	return idem_decide(idem, scope, key, fp, idem_once_step, &a, 0, out);
}
