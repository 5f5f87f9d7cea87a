/* SPDX-License-Identifier: MIT */
/*
 * refund_post.c: POST /payments/{id}/refunds, a keyed request on the
 * idempotency library, built like post.c (refund_post.h).
 *
 * What is the refund's own here: the hold, decided in the claim's own
 * transaction against the payment's totals (so refunds never exceed the
 * payment, however many run at once); the provider call with a key
 * derived from ours; the completion that turns the hold into a refund in
 * the transaction that stores the answer; the release that gives the
 * hold back when nothing reached the provider.  An abandoned claim keeps
 * its hold: it is past stage 0, so it never expires, and the take-over
 * resumes with the same refund id and provider key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idem.h"
#include "json.h"
#include "keyed.h"
#include "money.h"
#include "payment.h"
#include "problem.h"
#include "refund.h"
#include "refund_post.h"
#include "rowkey.h"

/* One refund on its claim. */
struct refund_run {
	const struct pay_env *env;
	struct pay_note *note;
	const char *scope;
	const char *key;
	const char *payment;
	const struct currency *cur;
	struct idem_call *call;
	/* Whether an attempt before ours may have reached the provider. */
	int reached_before;
};

/* What a claim's start and its hook share; the hook's part is reset. */
struct refund_first {
	struct idem *idem;
	const char *payment;
	int64_t paid;
	struct refund_ask ask;
	struct refund_cp cp;
	struct buf bytes;
};

/* What the completion and the release hooks work on. */
struct refund_settle {
	const char *id;
	const char *payment;
	int64_t amount;          /* the hold's amount */
	const struct buf *row;   /* the refund row (completion only) */
	const struct buf *idx;   /* its index key (completion only) */
};

/* Reads the payment's totals; a payment without refunds has none yet. */
static int
refund_totals_read(struct idem_tx *tx, const char *payment, int64_t paid,
    struct refund_totals *t)
{
	const void *v;
	size_t len;
	int rc;

	rc = rowkey_tx_get(tx, REFUND_TABLE_TOTALS, payment, PAY_ID_LEN, &v,
	    &len);
	if (rc == IDEM_ENOTFOUND) {
		t->amount = paid;
		t->refunded = t->reserved = 0;
		return IDEM_OK;
	}
	if (rc != IDEM_OK)
		return rc;
	return refund_totals_decode(v, len, t);
}

static int
refund_totals_write(struct idem_tx *tx, const char *payment,
    const struct refund_totals *t)
{
	struct buf b = BUF_INIT;
	int rc;

	if ((rc = refund_totals_encode(t, &b)) == IDEM_OK)
		rc = rowkey_tx_put(tx, REFUND_TABLE_TOTALS, payment, PAY_ID_LEN,
		    b.data, b.len);
	buf_free(&b);
	return rc;
}

/*
 * The claim's hook: decides the refund against the totals, in the claim's
 * transaction, and records the decision as the refund's hold (amount 0:
 * it exceeds what is left, and will be answered with the stored 400).
 * What it reads cannot change before the claim commits, so two claims
 * never hold the same money.
 */
static int
refund_hold_place(void *ctx, struct idem_tx *tx)
{
	struct refund_first *f = ctx;
	struct refund_totals t;
	struct refund_hold h;
	struct buf b = BUF_INIT;
	int rc;

	if ((rc = refund_totals_read(tx, f->payment, f->paid, &t)) != IDEM_OK)
		return rc;
	memcpy(h.payment, f->payment, PAY_ID_LEN + 1);
	h.left = refund_left(&t);
#ifdef IDEM_PLANT_REFUND_UNCHECKED	/* planted for tests/sim, never defined */
	h.amount = f->ask.minor > 0 ? f->ask.minor : h.left;
	t.reserved += h.amount;
	if (h.amount <= 0)
#else
	if (refund_reserve(&t, &f->ask, &h.amount) != 0)
#endif
		h.amount = 0;
	else if ((rc = refund_totals_write(tx, f->payment, &t)) != IDEM_OK)
		return rc;
	if ((rc = refund_hold_encode(&h, &b)) == IDEM_OK)
		rc = rowkey_tx_put(tx, REFUND_TABLE_HOLDS, f->cp.id,
		    REFUND_ID_LEN, b.data, b.len);
	buf_free(&b);
	return rc;
}

/* A fresh claim's recovery point (a new id and time) and its hook. */
static int
refund_first_make(void *ctx, struct idem_start *out)
{
	struct refund_first *f = ctx;
	int rc;

	refund_cp_new(idem_now_ms(f->idem), &f->cp);
	buf_reset(&f->bytes);
	if ((rc = refund_cp_encode(&f->cp, &f->bytes)) != IDEM_OK)
		return rc;
	out->stage = REFUND_STAGE_HELD;
	out->point = f->bytes.data;
	out->len = f->bytes.len;
	out->hook = refund_hold_place;
	out->hook_ctx = f;
	return IDEM_OK;
}

/*
 * Reads the claim's hold inside tx.  Its amount must be the one the
 * caller acted on: a hold is written once, by the claim, so anything
 * else is damage.
 */
static int
refund_hold_take(struct idem_tx *tx, const struct refund_settle *s)
{
	struct refund_hold h;
	const void *v;
	size_t len;
	int rc;

	rc = rowkey_tx_get(tx, REFUND_TABLE_HOLDS, s->id, REFUND_ID_LEN, &v,
	    &len);
	if (rc != IDEM_OK)
		return rc;
	if ((rc = refund_hold_decode(v, len, &h)) != IDEM_OK)
		return rc;
	if (h.amount != s->amount ||
	    memcmp(h.payment, s->payment, PAY_ID_LEN) != 0)
		return IDEM_ECORRUPT;
	return rowkey_tx_del(tx, REFUND_TABLE_HOLDS, s->id, REFUND_ID_LEN);
}

/*
 * The release's hook (nothing reached the provider): gives the hold's
 * amount back to the payment.  Also the completion's hook for a refund
 * that held nothing (the stored 400): the hold row goes either way.
 */
static int
refund_hold_free(void *ctx, struct idem_tx *tx)
{
	const struct refund_settle *s = ctx;
	struct refund_totals t;
	int rc;

	if ((rc = refund_hold_take(tx, s)) != IDEM_OK)
		return rc == IDEM_ENOTFOUND ? IDEM_OK : rc;
	if (s->amount == 0)
		return IDEM_OK;
	if ((rc = refund_totals_read(tx, s->payment, 0, &t)) != IDEM_OK)
		return rc;
	if (t.reserved < s->amount)
		return IDEM_ECORRUPT;
	t.reserved -= s->amount;
	return refund_totals_write(tx, s->payment, &t);
}

/*
 * The completion's hook for a refund the provider made: the hold becomes
 * refunded, checked again against the payment, and the refund row and
 * its index entry are written, with the stored answer, in one commit.
 */
static int
refund_hold_settle(void *ctx, struct idem_tx *tx)
{
	const struct refund_settle *s = ctx;
	struct refund_totals t;
	int rc;

	if ((rc = refund_hold_take(tx, s)) != IDEM_OK ||
	    (rc = refund_totals_read(tx, s->payment, 0, &t)) != IDEM_OK)
		return rc;
	if (t.reserved < s->amount || t.refunded + s->amount > t.amount)
		return IDEM_ECORRUPT;
	t.reserved -= s->amount;
	t.refunded += s->amount;
	if ((rc = refund_totals_write(tx, s->payment, &t)) != IDEM_OK ||
	    (rc = rowkey_tx_put(tx, REFUND_TABLE_REFUNDS, s->id, REFUND_ID_LEN,
	    s->row->data, s->row->len)) != IDEM_OK)
		return rc;
	/* The index key ends with the row's name; its value is the id. */
	return idem_tx_put(tx, REFUND_TABLE_BY_PAYMENT, s->idx->data,
	    s->idx->len, s->id, REFUND_ID_LEN);
}

/* The 503 of a refund the provider made whose answer was not stored. */
static void
refund_complete_failed(struct response *resp, int rc, int refunded)
{
	if (refunded)
		problem_build(resp, PROBLEM_STORE_UNAVAILABLE, "The refund "
		    "was made, but it could not be recorded (%s). It is kept "
		    "under this Idempotency-Key: retry with the same key and "
		    "body to get it; nothing will be refunded twice.",
		    idem_strerror(rc));
	else
		problem_build(resp, PROBLEM_STORE_UNAVAILABLE, "The answer "
		    "could not be recorded (%s). Nothing was refunded; retry "
		    "with the same Idempotency-Key.", idem_strerror(rc));
	resp_header(resp, "Retry-After", "1");
}

/* The 201 of a refund, rendered into resp. */
static int
refund_created(const struct refund_run *r, const struct refund_cp *cp,
    int64_t amount, struct response *resp)
{
	char etag[PAY_ETAG_SIZE];
	int rc;

	resp_reset(resp);
	resp->status = 201;
	if ((rc = refund_render(cp, r->payment, amount, r->cur,
	    &resp->body)) != IDEM_OK)
		return rc;
	pay_etag(resp->body.data, resp->body.len, etag);
	if ((rc = resp_header(resp, "Content-Type", "application/json")) !=
	    IDEM_OK ||
	    (rc = resp_header(resp, "Location", "/payments/%s/refunds/%s",
	    r->payment, cp->id)) != IDEM_OK)
		return rc;
	return resp_header(resp, "ETag", "%s", etag);
}

/* Completes a refund the provider made: hold, rows and answer at once. */
static enum keyed_end
refund_succeed(struct refund_run *r, const struct refund_cp *cp,
    int64_t amount, struct response *resp)
{
	struct buf row = BUF_INIT, idx = BUF_INIT;
	struct refund_settle s = { cp->id, r->payment, amount, &row, &idx };
	uint8_t pname[ROWKEY_LEN], rname[ROWKEY_LEN];
	int rc;
	enum keyed_end end = KEYED_KEPT;

	rowkey(r->payment, PAY_ID_LEN, pname);
	rowkey(cp->id, REFUND_ID_LEN, rname);
	if ((rc = refund_created(r, cp, amount, resp)) != IDEM_OK ||
	    (rc = refund_row_encode(r->scope, r->payment, &resp->body,
	    &row)) != IDEM_OK ||
	    (rc = buf_append(&idx, pname, sizeof(pname))) != IDEM_OK ||
	    (rc = buf_put_u64(&idx, cp->created_ms)) != IDEM_OK ||
	    (rc = buf_append(&idx, rname, sizeof(rname))) != IDEM_OK) {
		idem_abandon(r->call);
		refund_complete_failed(resp, rc, 1);
		goto out;
	}
	rc = keyed_complete(r->call, r->note, refund_hold_settle, &s, 0, NULL,
	    NULL, resp);
	if (rc != IDEM_OK && rc != IDEM_ELOST)
		refund_complete_failed(resp, rc, 1);
	end = keyed_end_of(rc, 0);
out:
	buf_free(&idx);
	buf_free(&row);
	return end;
}

/*
 * Stores a final answer that refunded nothing (an invalid body, or more
 * than is left), giving back the claim's hold, if any, in the same
 * transaction.
 */
static enum keyed_end
refund_final_nothing(struct refund_run *r, const struct refund_settle *s,
    struct response *resp)
{
	int rc;

	rc = keyed_complete(r->call, r->note, s != NULL ? refund_hold_free :
	    NULL, (void *)s, !r->reached_before, s != NULL ?
	    refund_hold_free : NULL, (void *)s, resp);
	if (rc != IDEM_OK && rc != IDEM_ELOST)
		refund_complete_failed(resp, rc, 0);
	return keyed_end_of(rc, !r->reached_before);
}

/* Ends the claim of a refund that reached the provider with ch. */
static enum keyed_end
refund_answer_provider(struct refund_run *r, const struct refund_cp *cp,
    const struct refund_settle *s, const struct provider_charge *ch,
    struct response *resp)
{
	switch (ch->outcome) {
	case PROVIDER_REFUNDED:
		return refund_succeed(r, cp, s->amount, resp);
	case PROVIDER_UNAVAILABLE:
		/*
		 * Nothing happened in this call; the hold is given back only
		 * if no earlier attempt may have reached the provider either.
		 */
		problem_build(resp, PROBLEM_PROVIDER_FAILED, "The payment "
		    "provider is unavailable and nothing was refunded; retry "
		    "with the same Idempotency-Key.");
		if (!r->reached_before)
			return keyed_release(r->call, r->note, refund_hold_free,
			    (void *)s);
		idem_abandon(r->call);
		return KEYED_KEPT;
	case PROVIDER_KEY_REUSED:
		idem_abandon(r->call);
		problem_build(resp, PROBLEM_INTERNAL, "The payment provider "
		    "refused the refund's key.");
		return KEYED_KEPT;
	case PROVIDER_TIMEOUT:
	default:
		/* A refund may have been made: keep the claim and its hold. */
		idem_abandon(r->call);
		problem_build(resp, PROBLEM_PROVIDER_TIMEOUT, "The payment "
		    "provider did not confirm the refund; retry with the same "
		    "Idempotency-Key and the original refund will be "
		    "returned, never a second one.");
		return KEYED_KEPT;
	}
}

/* Reads the claim's recovery point and its hold (outside a hook). */
static int
refund_resume_point(struct refund_run *r, struct refund_cp *cp,
    struct refund_hold *h)
{
	const void *point;
	void *v = NULL;
	size_t len, vlen = 0;
	int rc;

	point = idem_call_point(r->call, &len);
	if (idem_call_stage(r->call) != REFUND_STAGE_HELD ||
	    (rc = refund_cp_decode(point, len, cp)) != IDEM_OK)
		return IDEM_ECORRUPT;
	rc = rowkey_get(r->env->idem, REFUND_TABLE_HOLDS, cp->id,
	    REFUND_ID_LEN, &v, &vlen);
	if (rc == IDEM_OK)
		rc = refund_hold_decode(v, vlen, h);
	free(v);
	if (rc == IDEM_OK && memcmp(h->payment, r->payment, PAY_ID_LEN) != 0)
		rc = IDEM_ECORRUPT;
	return rc;
}

/* Runs the refund for a claim we own, and ends the claim. */
static enum keyed_end
refund_run(struct refund_run *r, const char *invalid, struct response *resp)
{
	struct provider_charge ch;
	struct buf pkey = BUF_INIT;
	struct refund_settle s;
	struct refund_hold h;
	struct refund_cp cp;
	char left[48];
	int rc;

	if (invalid != NULL) {
		problem_build(resp, PROBLEM_INVALID_REFUND, "%s", invalid);
		return refund_final_nothing(r, NULL, resp);
	}
	if ((rc = refund_resume_point(r, &cp, &h)) != IDEM_OK) {
		idem_abandon(r->call);
		keyed_lost_or_failed(r->note, rc, resp);
		return KEYED_KEPT;
	}
	memset(&s, 0, sizeof(s));
	s.id = cp.id;
	s.payment = r->payment;
	s.amount = h.amount;
	if (h.amount == 0) {
		money_format(h.left, r->cur, left, sizeof(left));
		problem_build(resp, PROBLEM_REFUND_EXCEEDS, "This refund would "
		    "exceed the payment: %s %s is left to refund.", left,
		    r->cur->code);
		return refund_final_nothing(r, &s, resp);
	}
	/* The provider deduplicates on a key derived from ours (post.c). */
	if (keyed_provider_key("refund", r->call, r->scope, r->key, &pkey) !=
	    IDEM_OK) {
		buf_free(&pkey);
		idem_abandon(r->call);
		problem_build(resp, PROBLEM_INTERNAL, "Out of memory; nothing "
		    "was refunded. Retry with the same Idempotency-Key.");
		return KEYED_KEPT;
	}
	rc = provider_refund(r->env->provider, pkey.data, h.amount,
	    r->cur->code, idem_now_ms(r->env->idem), &ch);
	buf_free(&pkey);
	if (rc != IDEM_OK)
		ch.outcome = PROVIDER_TIMEOUT;
	return refund_answer_provider(r, &cp, &s, &ch, resp);
}

enum keyed_end
refund_claimed(const struct pay_env *env, struct pay_note *note,
    const char *scope, const char *key, const char *payment,
    const struct currency *cur, struct idem_call *call, const char *invalid,
    struct response *resp)
{
	struct refund_run r = { env, note, scope, key, payment, cur, call, 0 };

	r.reached_before = idem_call_verdict(call) == IDEM_RESUME &&
	    idem_call_stage(call) != REFUND_STAGE_STARTED;
	return refund_run(&r, invalid, resp);
}

int
refund_payment_find(const struct pay_env *env, const char *payment,
    const char *scope, int64_t *paid, const struct currency **cur,
    struct response *resp)
{
	struct pay_found f;
	int rc;

	if ((rc = pay_find_owned(env, payment, scope, 1, &f, resp)) ==
	    IDEM_OK &&
	    (rc = refund_payment_money(f.body, f.blen, paid, cur)) != IDEM_OK)
		pay_store_error(resp, rc);
	pay_found_free(&f);
	return rc;
}

void
refund_post(const struct pay_call *c)
{
	const struct pay_env *env = c->env;
	const char *payment = c->param[0];
	struct response *resp = c->resp;
	struct refund_first first;
	struct idem_call *call = NULL;
	const struct currency *cur = NULL;
	char invalid[256];
	int rc, valid;

	memset(&first, 0, sizeof(first));
	buf_init(&first.bytes);
	if (env->idem == NULL) {
		pay_store_error(resp, env->open_rc);
		goto out;
	}
	/*
	 * The payment is looked up before the claim and a 404 is not stored:
	 * it says nothing about the key, which stays unused.
	 */
	if (refund_payment_find(env, payment, c->scope, &first.paid, &cur,
	    resp) != IDEM_OK)
		goto out;
	valid = refund_ask_parse(c->doc, c->fp_ignore, cur, &first.ask,
	    invalid, sizeof(invalid)) == 0;
	first.idem = env->idem;
	first.payment = payment;
	if (env->keyhash != NULL)
		keyhash_compute(env->keyhash, c->scope, c->key,
		    c->note->keyhash);
	rc = idem_begin(env->idem, c->scope, c->key, c->fp,
	    valid ? refund_first_make : NULL, &first, &call);
	if (rc != IDEM_OK) {
		pay_store_error(resp, rc);
		goto out;
	}
	c->note->outcome = idem_strverdict(idem_call_verdict(call));
	if (keyed_answer(env, call, "refund", resp))
		goto out;
	refund_claimed(env, c->note, c->scope, c->key, payment, cur, call,
	    valid ? NULL : invalid, resp);
out:
	idem_call_free(call);
	buf_free(&first.bytes);
}
