/* SPDX-License-Identifier: MIT */
/*
 * post.c: POST /payments, a keyed request on the idempotency library
 * (post.h).
 *
 * What is the payment's own here: the order, the provider call and its
 * derived key, the stages, and which failure means release (nothing can
 * have happened) and which abandon (a charge may exist).  Replay, 409,
 * 422, 429, the claim and its lease are the library's (idem.h), and
 * what every keyed endpoint answers alike is in keyed.c.
 */
#include <stdio.h>
#include <string.h>

#ifdef IDEM_PLANT_RANDOM_PROVIDER_KEY
#include "crypto.h"
#endif
#include "idem.h"
#include "json.h"
#include "keyed.h"
#include "metrics.h"
#include "money.h"
#include "payment.h"
#include "post.h"
#include "problem.h"
#include "rowkey.h"

/* What a claim has done in the world by the time it ends. */
enum pay_effect {
	PAY_EFFECT_NONE = 0,  /* nothing reached the provider */
	PAY_EFFECT_DECLINED,  /* the provider declined: no charge */
	PAY_EFFECT_CHARGED    /* the provider charged the card */
};

/* One POST /payments on its claim. */
struct pay_run {
	const struct pay_env *env;
	struct pay_note *note;
	const char *scope;
	const char *key;
	struct idem_call *call;
	/*
	 * Whether an attempt before ours may have reached the provider: only
	 * a take-over of a claim that had recorded its payment can say so.
	 */
	int reached_before;
};

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
 * Stores resp as the final answer of our claim, with the rows hook
 * writes, if any.  When that fails the claim is released if nothing
 * reached the provider, and otherwise kept, with its lease ended, for
 * the retry to resume (keyed_complete).
 */
static enum keyed_end
pay_complete(struct pay_run *r, idem_tx_fn hook, void *hook_ctx,
    enum pay_effect effect, struct response *resp)
{
	int rc;

	rc = keyed_complete(r->call, r->note, hook, hook_ctx,
	    effect == PAY_EFFECT_NONE, NULL, NULL, resp);
	if (rc != IDEM_OK && rc != IDEM_ELOST)
		pay_complete_failed(resp, rc, effect);
	return keyed_end_of(rc, effect == PAY_EFFECT_NONE);
}

/* The 201 of a charged payment, rendered into resp. */
static int
pay_created(const struct pay_cp *cp, const struct pay_order *o,
    const char *charge_id, struct response *resp)
{
	static const char base[] = "/payments/";
	char etag[PAY_ETAG_SIZE], location[sizeof(base) + PAY_ID_LEN];
	int rc;

	resp_reset(resp);
	resp->status = 201;
	if ((rc = pay_render(cp, o, charge_id, &resp->body)) != IDEM_OK)
		return rc;
	pay_etag(resp->body.data, resp->body.len, etag);
	memcpy(location, base, sizeof(base) - 1);
	memcpy(location + sizeof(base) - 1, cp->id, PAY_ID_LEN + 1);
	if ((rc = resp_header(resp, "Content-Type", "application/json")) !=
	    IDEM_OK ||
	    (rc = resp_header(resp, "Location", "%s", location)) != IDEM_OK)
		return rc;
	return resp_header(resp, "ETag", "%s", etag);
}

/* The rows of a charged payment, written with its completion. */
struct pay_rows {
	const char *id;
	uint8_t name[ROWKEY_LEN];	/* rowkey(id), made once */
	struct buf row;
	struct buf idx;
};

/*
 * The completion's hook: the payment row and its account index entry,
 * in the completion's transaction (invariant 6).  It reads nothing and
 * writes the same bytes however often it runs.
 */
static int
pay_rows_write(void *ctx, struct idem_tx *tx)
{
	struct pay_rows *p = ctx;
	int rc;

	/* rowkey_tx_put, with the name already made. */
	if ((rc = idem_tx_put(tx, PAY_TABLE_PAYMENTS, p->name, sizeof(p->name),
	    p->row.data, p->row.len)) != IDEM_OK)
		return rc;
	/* The index key ends with the row's name; its value is the id. */
	return idem_tx_put(tx, PAY_TABLE_BY_ACCOUNT, p->idx.data, p->idx.len,
	    p->id, PAY_ID_LEN);
}

/* Completes a charged payment: the row, the index and the answer at once. */
static enum keyed_end
pay_succeed(struct pay_run *r, const struct pay_cp *cp,
    const struct pay_order *o, const char *charge_id, struct response *resp)
{
	struct pay_rows rows = { cp->id, { 0 }, BUF_INIT, BUF_INIT };
	enum keyed_end end = KEYED_KEPT;
	int rc;

	rowkey(cp->id, PAY_ID_LEN, rows.name);

	if ((rc = pay_created(cp, o, charge_id, resp)) != IDEM_OK ||
	    (rc = pay_row_encode(r->scope, &resp->body, &rows.row)) !=
	    IDEM_OK ||
	    (rc = buf_append(&rows.idx, r->scope, strlen(r->scope) + 1)) !=
	    IDEM_OK ||
	    (rc = buf_put_u64(&rows.idx, cp->created_ms)) != IDEM_OK ||
	    (rc = buf_append(&rows.idx, rows.name, sizeof(rows.name))) !=
	    IDEM_OK) {
		idem_abandon(r->call);
		pay_complete_failed(resp, rc, PAY_EFFECT_CHARGED);
		goto out;
	}
	end = pay_complete(r, pay_rows_write, &rows, PAY_EFFECT_CHARGED, resp);
out:
	buf_free(&rows.idx);
	buf_free(&rows.row);
	return end;
}

/* The recovery point a fresh payment's claim starts with. */
struct pay_first {
	struct idem *idem;
	const struct pay_order *o;
	struct pay_cp cp;
	struct buf bytes;
};

/*
 * Makes the recovery point (a new id and the time) for idem_begin, which
 * asks only when it is about to claim: a replay or a 409 makes none.
 */
static int
pay_first_make(void *ctx, struct idem_start *out)
{
	struct pay_first *f = ctx;
	int rc;

	pay_cp_new(idem_now_ms(f->idem), f->o, &f->cp);
	buf_reset(&f->bytes);
	if ((rc = pay_cp_encode(&f->cp, &f->bytes)) != IDEM_OK)
		return rc;
	out->stage = PAY_STAGE_CHARGE_REQUESTED;
	out->point = f->bytes.data;
	out->len = f->bytes.len;
	return IDEM_OK;
}

/*
 * The payment's id and time as the claim holds them: written with the
 * claim (or by the attempt that was taken over), so a take-over after a
 * crash resumes with the same payment.  A claim without them (one made
 * by an older release) gets them now, in a write of its own.
 */
static int
pay_checkpoint(struct pay_run *r, const struct pay_order *o,
    struct pay_cp *cp)
{
	struct buf b = BUF_INIT;
	const void *point;
	size_t len;
	int rc;

	point = idem_call_point(r->call, &len);
	if (idem_call_stage(r->call) == PAY_STAGE_CHARGE_REQUESTED &&
	    pay_cp_decode(point, len, cp) == IDEM_OK)
		return IDEM_OK;
	pay_cp_new(idem_now_ms(r->env->idem), o, cp);
	if ((rc = pay_cp_encode(cp, &b)) == IDEM_OK)
		rc = idem_checkpoint(r->call, PAY_STAGE_CHARGE_REQUESTED,
		    b.data, b.len);
	buf_free(&b);
	return rc;
}

/* Ends the claim of a call that reached the provider with this outcome. */
static enum keyed_end
pay_charged(struct pay_run *r, const struct pay_cp *cp,
    const struct pay_order *o, const struct provider_charge *ch,
    struct response *resp)
{
	char amount[48];

	switch (ch->outcome) {
	case PROVIDER_CHARGED:
		return pay_succeed(r, cp, o, ch->id, resp);
	case PROVIDER_DECLINED:
		money_format(o->minor, o->cur, amount, sizeof(amount));
		problem_build(resp, PROBLEM_DECLINED, "The card was declined "
		    "for %s %s (decline %s).", amount, o->cur->code, ch->id);
		return pay_complete(r, NULL, NULL, PAY_EFFECT_DECLINED, resp);
	case PROVIDER_UNAVAILABLE:
		/*
		 * This call did nothing.  The key may be used afresh only if no
		 * earlier attempt reached the provider either; a take-over of
		 * one that did keeps the claim, so the retry still finds that
		 * attempt's charge under the same derived key.
		 */
		problem_build(resp, PROBLEM_PROVIDER_FAILED, "The payment "
		    "provider is unavailable and nothing was charged; retry "
		    "with the same Idempotency-Key.");
		if (!r->reached_before)
			return keyed_release(r->call, r->note, NULL, NULL);
		idem_abandon(r->call);
		return KEYED_KEPT;
	case PROVIDER_KEY_REUSED:
		/* Cannot happen while fingerprints hold; keep the claim. */
		idem_abandon(r->call);
		problem_build(resp, PROBLEM_INTERNAL, "The payment provider "
		    "refused the charge's key.");
		return KEYED_KEPT;
	case PROVIDER_TIMEOUT:
	default:
		/*
		 * A charge may have been made: keep the claim and its recovery
		 * point, and end the lease so the retry resumes at once and
		 * finds that charge under the derived key.
		 */
		idem_abandon(r->call);
		problem_build(resp, PROBLEM_PROVIDER_TIMEOUT, "The payment "
		    "provider did not confirm the charge; retry with the same "
		    "Idempotency-Key and the original charge will be "
		    "returned, never a second one.");
		return KEYED_KEPT;
	}
}

/* Runs the payment for a claim we own, and ends the claim. */
static enum keyed_end
pay_run(struct pay_run *r, const struct pay_order *o, const char *invalid,
    struct response *resp)
{
	struct provider_charge ch;
	struct buf pkey = BUF_INIT;
	struct pay_cp cp;
	int rc;

	/* An invalid payment is a final answer: stored and replayed. */
	if (o == NULL) {
		problem_build(resp, PROBLEM_INVALID_PAYMENT, "%s", invalid);
		return pay_complete(r, NULL, NULL, r->reached_before ?
		    PAY_EFFECT_CHARGED : PAY_EFFECT_NONE, resp);
	}
	if ((rc = pay_checkpoint(r, o, &cp)) != IDEM_OK) {
		/*
		 * Nothing reached the provider: a claim that never got its
		 * recovery point is released, so the retry runs at once
		 * instead of meeting 409s for the whole lease.
		 */
		keyed_lost_or_failed(r->note, rc, resp);
		if (rc == IDEM_ELOST)
			return KEYED_LOST;
		if (!r->reached_before)
			return keyed_release(r->call, r->note, NULL, NULL);
		return KEYED_KEPT;
	}
	/* The provider deduplicates on a key derived from ours. */
#ifndef IDEM_PLANT_RANDOM_PROVIDER_KEY	/* for tests/sim, never defined */
	if (keyed_provider_key("charge", r->call, r->scope, r->key, &pkey) !=
	    IDEM_OK) {
#else
	uint64_t plant;

	crypto_random(&plant, sizeof(plant));
	if (buf_printf(&pkey, "charge:%s:%016llx", r->scope,
	    (unsigned long long)plant) != IDEM_OK) {
#endif
		buf_free(&pkey);
		idem_abandon(r->call);
		problem_build(resp, PROBLEM_INTERNAL, "Out of memory; nothing "
		    "was charged. Retry with the same Idempotency-Key.");
		return KEYED_KEPT;
	}
	rc = provider_charge(r->env->provider, pkey.data, o->minor,
	    o->cur->code, idem_now_ms(r->env->idem), &ch);
	buf_free(&pkey);
	if (rc != IDEM_OK)
		ch.outcome = PROVIDER_TIMEOUT;
	return pay_charged(r, &cp, o, &ch, resp);
}

/*
 * The claim's part of a payment, from the claim to its end: the same for
 * a client's request (pay_post) and for the completer (resume.c), so a
 * take-over ends alike whoever makes it.
 */
enum keyed_end
pay_claimed(const struct pay_env *env, struct pay_note *note,
    const char *scope, const char *key, struct idem_call *call,
    const struct pay_order *o, const char *invalid, struct response *resp)
{
	struct pay_run r = { env, note, scope, key, call, 0 };

	r.reached_before = idem_call_verdict(call) == IDEM_RESUME &&
	    idem_call_stage(call) != PAY_STAGE_STARTED;
	return pay_run(&r, o, invalid, resp);
}

void
pay_post(const struct pay_call *c)
{
	const struct pay_env *env = c->env;
	struct pay_first first = { env->idem, NULL, { "", 0, { 0, NULL } },
	    BUF_INIT };
	struct response *resp = c->resp;
	struct idem_call *call = NULL;
	struct pay_order o;
	char invalid[256];
	int rc, valid;

	/*
	 * A valid payment's claim records its id and time in its own write:
	 * two writes per payment (claim, completion), not three.  Validity is
	 * only acted on after the claim, keeping the check order (the store's
	 * answers come first).
	 */
	valid = pay_order_parse(c->doc, c->fp_ignore, &o, invalid,
	    sizeof(invalid)) == 0;
	first.o = &o;
	if (env->idem == NULL) {
		pay_store_error(resp, env->open_rc);
		goto out;
	}
	if (env->keyhash != NULL)
		keyhash_compute(env->keyhash, c->scope, c->key,
		    c->note->keyhash);
	rc = idem_begin(env->idem, c->scope, c->key, c->fp,
	    valid ? pay_first_make : NULL, &first, &call);
	if (rc != IDEM_OK) {
		pay_store_error(resp, rc);
		goto out;
	}
	c->note->outcome = idem_strverdict(idem_call_verdict(call));
	if (keyed_answer(env, call, "payment", resp))
		goto out;
	pay_claimed(env, c->note, c->scope, c->key, call, valid ? &o : NULL,
	    invalid, resp);
out:
	idem_call_free(call);
	buf_free(&first.bytes);
}
