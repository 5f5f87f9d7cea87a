/* SPDX-License-Identifier: MIT */
/*
 * resume.c: the completer (resume.h).  It finds the claims whose lease
 * ran out, takes each over the way a client's retry would, and hands it
 * to the endpoint's own claimed part (pay_claimed in post.c,
 * refund_claimed in refund_post.c): what a take-over does is written
 * once, for the client and the completer.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "crypto.h"
#include "idem.h"
#include "keyed.h"
#include "metrics.h"
#include "payment.h"
#include "post.h"
#include "refund.h"
#include "refund_post.h"
#include "resume.h"
#include "rowkey.h"

/* A stuck claim found by a walk, to be taken over after it. */
struct resume_item {
	char *scope;
	char *key;
	uint8_t fp[IDEM_FP_SIZE];
};

/* One walk: up to max new claims whose lease ended before now. */
struct resume_walk {
	uint64_t now;
	size_t max;
	struct resume_item *items;
	size_t n;
	/* Claims this run has looked at, as sorted 64-bit names. */
	uint64_t *seen;
	size_t nseen;
	size_t cap;
	size_t skipped; /* stuck claims it cannot resume (counted once) */
	int rc;
};

/*
 * Adds (scope, key) to the run's set of claims looked at, kept as sorted
 * 64-bit names (the first bytes of SHA-256 over scope, NUL, key): 1 when
 * it is new, 0 when it was there already, -1 out of memory.
 */
static int
resume_mark(struct resume_walk *w, const char *scope, const char *key)
{
	uint8_t d[CRYPTO_SHA256_SIZE];
	struct buf b = BUF_INIT;
	size_t lo = 0, hi = w->nseen, mid, i;
	uint64_t v = 0, *p;

	if (buf_append(&b, scope, strlen(scope) + 1) != IDEM_OK ||
	    buf_append(&b, key, strlen(key)) != IDEM_OK) {
		buf_free(&b);
		return -1;
	}
	crypto_sha256(b.data, b.len, d);
	buf_free(&b);
	for (i = 0; i < 8; i++)
		v = v << 8 | d[i];
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (w->seen[mid] == v)
			return 0;
		if (w->seen[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (w->nseen == w->cap) {
		w->cap = w->cap == 0 ? 64 : w->cap * 2;
		if ((p = realloc(w->seen, w->cap * sizeof(*p))) == NULL)
			return -1;
		w->seen = p;
	}
	memmove(w->seen + lo + 1, w->seen + lo,
	    (w->nseen - lo) * sizeof(*w->seen));
	w->seen[lo] = v;
	w->nseen++;
	return 1;
}

/*
 * What a claim's recovery point says it is.  Payments and refunds share
 * stage numbers; their points do not decode as each other's (a payment's
 * id is longer, and its version 2 is no refund's version).
 */
enum resume_kind {
	RESUME_NONE = 0,   /* nothing the completer can carry on */
	RESUME_STAGE0,     /* the provider was never called: release */
	RESUME_PAYMENT,    /* a payment's point with its order */
	RESUME_REFUND      /* a refund's point (its hold is a row) */
};

static enum resume_kind
resume_kind_of(uint32_t stage, const void *point, size_t len,
    struct pay_cp *pcp, struct refund_cp *rcp)
{
	if (stage == PAY_STAGE_STARTED)
		return RESUME_STAGE0;
	if (stage == PAY_STAGE_CHARGE_REQUESTED &&
	    pay_cp_decode(point, len, pcp) == IDEM_OK)
		/* A point from a release that did not record the order. */
		return pcp->order.cur != NULL ? RESUME_PAYMENT : RESUME_NONE;
	if (stage == REFUND_STAGE_HELD &&
	    refund_cp_decode(point, len, rcp) == IDEM_OK)
		return RESUME_REFUND;
	return RESUME_NONE;
}

/*
 * Whether the completer can carry the claim to its end: its recovery
 * point opens and says what to do.
 */
static int
resume_can(struct idem_pending *p)
{
	struct pay_cp pcp;
	struct refund_cp rcp;
	const void *point;
	size_t len;

	if (idem_pending_point(p, &point, &len) != IDEM_OK)
		return 0;
	return resume_kind_of(idem_pending_stage(p), point, len, &pcp,
	    &rcp) != RESUME_NONE;
}

/* Whether the claim's lease ended by the walk's time. */
static int
resume_stuck(const struct resume_walk *w, const struct idem_pending *p)
{
	return idem_pending_lease_ms(p) <= w->now;
}

static int
resume_gather(void *ctx, struct idem_pending *p)
{
	struct resume_walk *w = ctx;
	const char *scope = idem_pending_scope(p), *key = idem_pending_key(p);
	struct resume_item *it;
	int m;

	if (!resume_stuck(w, p))
		return 0;
	if ((m = resume_mark(w, scope, key)) <= 0) {
		w->rc = m < 0 ? IDEM_ENOMEM : IDEM_OK;
		return m < 0;
	}
	if (!resume_can(p)) {
		w->skipped++;
		return 0;
	}
	it = &w->items[w->n];
	if ((it->scope = strdup(scope)) == NULL ||
	    (it->key = strdup(key)) == NULL) {
		free(it->scope);
		w->rc = IDEM_ENOMEM;
		return 1;
	}
	memcpy(it->fp, idem_pending_fingerprint(p), IDEM_FP_SIZE);
	w->n++;
	return w->n == w->max;
}

static void
resume_items_free(struct resume_walk *w)
{
	size_t i;

	for (i = 0; i < w->n; i++) {
		free(w->items[i].scope);
		free(w->items[i].key);
	}
	w->n = 0;
}

static const char *const resume_outcome[] = {
	[KEYED_COMPLETED] = "completed",
	[KEYED_RELEASED] = "released",
	[KEYED_KEPT] = "left",
	[KEYED_LOST] = "busy",
};

static void
resume_count(struct pay_resume_counts *c, enum keyed_end end)
{
	switch (end) {
	case KEYED_COMPLETED:
		c->completed++;
		metrics_inc(METRIC_RESUMES_COMPLETED);
		break;
	case KEYED_RELEASED:
		c->released++;
		metrics_inc(METRIC_RESUMES_RELEASED);
		break;
	case KEYED_LOST:
		c->busy++;
		break;
	case KEYED_KEPT:
	default:
		c->left++;
		metrics_inc(METRIC_RESUMES_LEFT);
		break;
	}
}

/*
 * The payment a refund's claim is for, from the hold its claim wrote
 * (refund_holds), and that payment's currency.  IDEM_OK, or an error:
 * IDEM_ENOTFOUND or IDEM_ECORRUPT when there is nothing to carry on (the
 * claim then waits for its client), else the store's.
 */
static int
resume_refund_of(const struct pay_env *env, const char *scope,
    const struct refund_cp *cp, struct refund_hold *h,
    const struct currency **cur, struct response *resp)
{
	void *v = NULL;
	size_t vlen = 0;
	int64_t paid;
	int rc;

	rc = rowkey_get(env->idem, REFUND_TABLE_HOLDS, cp->id,
	    REFUND_ID_LEN, &v, &vlen);
	if (rc == IDEM_OK)
		rc = refund_hold_decode(v, vlen, h);
	free(v);
	if (rc == IDEM_OK)
		rc = refund_payment_find(env, h->payment, scope, &paid, cur,
		    resp);
	return rc;
}

/*
 * Ends a claim taken over: stage 0 is released (nothing reached the
 * provider); a payment or a refund goes on from its recovery point, on
 * the path its client's retry would take.  *err gets the store's error
 * when a read or a write on the way failed, else IDEM_OK.
 */
static enum keyed_end
resume_claim(const struct pay_env *env, const struct resume_item *it,
    struct idem_call *call, int *err)
{
	struct pay_note note;
	const struct currency *cur;
	struct refund_hold h;
	struct refund_cp rcp;
	struct response resp;
	struct pay_cp pcp;
	const void *point;
	enum keyed_end end = KEYED_KEPT;
	size_t len;
	int rc;

	memset(&note, 0, sizeof(note));
	note.outcome = "resume";
	point = idem_call_point(call, &len);
	resp_init(&resp);
	switch (resume_kind_of(idem_call_stage(call), point, len, &pcp,
	    &rcp)) {
	case RESUME_STAGE0:
		end = keyed_release(call, &note, NULL, NULL);
		break;
#ifdef IDEM_PLANT_RESUME_RELEASES	/* planted for tests/sim, never defined */
	case RESUME_PAYMENT:
		end = keyed_release(call, &note, NULL, NULL);
		break;
#else
	case RESUME_PAYMENT:
		end = pay_claimed(env, &note, it->scope, it->key, call,
		    &pcp.order, NULL, &resp);
		break;
#endif
	case RESUME_REFUND:
		if ((rc = resume_refund_of(env, it->scope, &rcp, &h, &cur,
		    &resp)) == IDEM_OK) {
			end = refund_claimed(env, &note, it->scope, it->key,
			    h.payment, cur, call, NULL, &resp);
			break;
		}
		if (rc != IDEM_ENOTFOUND && rc != IDEM_ECORRUPT)
			note.store_err = rc;
		/* FALLTHROUGH */
	default:
		/* Nothing to carry on: keep it, as it was, for its client. */
		idem_abandon(call);
		break;
	}
	resp_free(&resp);
	*err = note.store_err;
	return end;
}

/*
 * Takes one claim over, as a retry of its request would (its own
 * fingerprint), and ends it.  Whatever happened to the claim since the
 * walk decides: completed or gone is nothing to do; held by another
 * attempt is busy.  Returns IDEM_OK, or the store's error when the take-
 * over or a write that ends the claim failed: the claim is then left,
 * and the caller stops.
 */
static int
resume_one(const struct pay_env *env, const struct pay_resume_opts *o,
    const struct resume_item *it, struct pay_resume_counts *c)
{
	struct idem_call *call = NULL;
	enum keyed_end end;
	int rc;

	c->seen++;
	if (o->taking != NULL)
		o->taking(o->taking_ctx, it->scope, it->key);
	if ((rc = idem_begin(env->idem, it->scope, it->key, it->fp, NULL,
	    NULL, &call)) != IDEM_OK) {
		resume_count(c, KEYED_KEPT);
		return rc;
	}
	switch (idem_call_verdict(call)) {
	case IDEM_RESUME:
		end = resume_claim(env, it, call, &rc);
		resume_count(c, end);
		if (o->ended != NULL)
			o->ended(o->ended_ctx, it->scope, it->key,
			    idem_call_attempts(call), resume_outcome[end]);
		break;
	case IDEM_RUN:
		/*
		 * The key ended and went between the walk and now, and this
		 * made a fresh claim of it: give it back at once.
		 */
		if ((rc = idem_release(call, NULL, NULL)) == IDEM_ELOST)
			rc = IDEM_OK;
		break;
	case IDEM_CONFLICT:
		c->busy++;
		break;
	default:
		/* Completed by a retry meanwhile: nothing left to do. */
		break;
	}
	idem_call_free(call);
	return rc;
}

static int
resume_stopped(const struct pay_resume_opts *o,
    const struct pay_resume_counts *c)
{
	return (o->stop != NULL && *o->stop) ||
	    (o->limit > 0 && c->seen >= o->limit);
}

int
pay_resume_run(const struct pay_env *env, const struct pay_resume_opts *opts,
    struct pay_resume_counts *counts)
{
	struct resume_walk w;
	size_t i;
	int rc = IDEM_OK;

	memset(counts, 0, sizeof(*counts));
	memset(&w, 0, sizeof(w));
	w.max = opts->batch > 0 ? opts->batch : 1;
	if ((w.items = calloc(w.max, sizeof(*w.items))) == NULL)
		return IDEM_ENOMEM;
	/*
	 * Each walk gathers up to a batch of stuck claims not seen yet in
	 * this run, and they are resumed after it, outside its read
	 * transaction; the run ends when a walk finds nothing new.  A claim
	 * left for the next run is not tried twice in one.
	 */
	while (!resume_stopped(opts, counts)) {
		w.now = idem_now_ms(env->idem);
		w.rc = IDEM_OK;
		w.skipped = 0;
		rc = idem_pending_each(env->idem, opts->all ?
		    IDEM_PENDING_ALL : IDEM_PENDING_STARTED, resume_gather, &w);
		if (rc == IDEM_OK)
			rc = w.rc;
		counts->left += w.skipped;
		metrics_add(METRIC_RESUMES_LEFT, w.skipped);
		if (rc != IDEM_OK || w.n == 0)
			break;
		for (i = 0; i < w.n && rc == IDEM_OK &&
		    !resume_stopped(opts, counts); i++) {
			rc = resume_one(env, opts, &w.items[i], counts);
			if (opts->progress != NULL)
				opts->progress(opts->progress_ctx, counts);
		}
		resume_items_free(&w);
		if (rc != IDEM_OK)
			break;
	}
	resume_items_free(&w);
	free(w.items);
	free(w.seen);
	return rc;
}

static int
resume_count_stuck(void *ctx, struct idem_pending *p)
{
	struct resume_walk *w = ctx;

	if (resume_stuck(w, p))
		w->n++;
	return 0;
}

int
pay_stuck_count(struct idem *idem, uint64_t now_ms, size_t *n)
{
	struct resume_walk w;
	int rc;

	memset(&w, 0, sizeof(w));
	w.now = now_ms;
	rc = idem_pending_each(idem, IDEM_PENDING_STARTED, resume_count_stuck,
	    &w);
	*n = w.n;
	return rc;
}
