/* SPDX-License-Identifier: MIT */
/*
 * get.c: GET /payments/{id} and GET /payments (get.h).
 */
#include <stdlib.h>
#include <string.h>

#include "get.h"
#include "idem.h"
#include "json.h"
#include "list.h"
#include "payment.h"
#include "problem.h"
#include "refund.h"
#include "rowkey.h"

/* The payment's refunded total, 0 before its first refund. */
static int
pay_refunded(struct idem *idem, const char *payment,
    const uint8_t name[ROWKEY_LEN], int64_t *refunded)
{
	struct refund_totals t;
	void *v = NULL;
	size_t len = 0;
	int rc;

	*refunded = 0;
	rc = rowkey_get_named(idem, REFUND_TABLE_TOTALS, name, payment,
	    PAY_ID_LEN, &v, &len);
	if (rc == IDEM_ENOTFOUND)
		return IDEM_OK;
	if (rc == IDEM_OK && (rc = refund_totals_decode(v, len, &t)) ==
	    IDEM_OK)
		*refunded = t.refunded;
	free(v);
	return rc;
}

/*
 * Appends the representation GET /payments/{id} shows: the stored body of
 * the payment, as its 201 had it (same bytes, same ETag) until a refund
 * completes, and from then on with the refunded total as its last member,
 * "amount_refunded".  The 201 of POST /payments, and its replays, stay as
 * stored.  f->name is rowkey(payment), which names its refunds' totals
 * too.
 */
static int
pay_view(struct idem *idem, const char *payment, const struct pay_found *f,
    struct buf *out)
{
	const struct currency *cur;
	int64_t paid, refunded;
	int rc;

	if ((rc = pay_refunded(idem, payment, f->name, &refunded)) != IDEM_OK)
		return rc;
	if (refunded == 0)
		return buf_append(out, f->body, f->blen);
	if ((rc = refund_payment_money(f->body, f->blen, &paid, &cur)) !=
	    IDEM_OK)
		return rc;
	return refund_payment_view(f->body, f->blen, refunded, cur, out);
}

void
pay_get(const struct pay_call *c)
{
	struct response *resp = c->resp;
	struct buf view = BUF_INIT;
	struct pay_found f;
	int rc;

	if (c->env->idem == NULL) {
		if (!pay_id_valid(c->param[0]))
			problem_build(resp, PROBLEM_NOT_FOUND, "No such "
			    "payment.");
		else
			pay_store_error(resp, c->env->open_rc);
		return;
	}
	if (pay_find_owned(c->env, c->param[0], c->scope, 0, &f, resp) !=
	    IDEM_OK)
		goto out;
	if ((rc = pay_view(c->env->idem, c->param[0], &f, &view)) !=
	    IDEM_OK) {
		pay_read_error(resp, rc);
		goto out;
	}
	/* Its ETag changes only when a refund is made. */
	pay_answer_read(c->req, resp, view.data, view.len);
out:
	buf_free(&view);
	pay_found_free(&f);
}

/* GET /payments's index: the account's entries in by_account. */
struct pay_list_ctx {
	const struct pay_env *env;
	const char *scope;
	struct buf view;
};

static int
pay_list_scan(void *ctx, const void *from, size_t fromlen, int reverse,
    idem_row_fn fn, void *fn_ctx)
{
	const struct pay_list_ctx *l = ctx;

	return idem_row_scan_from(l->env->idem, PAY_TABLE_BY_ACCOUNT, l->scope,
	    strlen(l->scope) + 1, from, fromlen, reverse, 0, fn, fn_ctx);
}

/*
 * Where payment id's entry sorts in the account's index: the scope,
 * its NUL and the payment's time (post.c writes the entry so), read
 * from the payment's row; IDEM_ENOTFOUND for an id that is no payment
 * of the account (another account's, or none).  A row whose time
 * cannot be read leaves key empty: the page walks.
 */
static int
pay_list_place(void *ctx, const char *id, struct buf *key)
{
	struct pay_list_ctx *l = ctx;
	const uint8_t *s, *b;
	struct json_value *doc = NULL;
	const struct json_value *at;
	struct pay_found f;
	size_t rowlen, slen, blen, tlen;
	const char *t;
	uint64_t ms;
	int rc;

	buf_reset(key);
	if (!pay_id_valid(id))
		return IDEM_ENOTFOUND;
	memset(&f, 0, sizeof(f));
	rowkey(id, PAY_ID_LEN, f.name);
	if ((rc = rowkey_get_named(l->env->idem, PAY_TABLE_PAYMENTS, f.name,
	    id, PAY_ID_LEN, &f.row, &rowlen)) != IDEM_OK)
		return rc;
	rc = pay_row_decode(f.row, rowlen, &s, &slen, &b, &blen);
	if (rc == IDEM_OK && (slen != strlen(l->scope) ||
	    memcmp(s, l->scope, slen) != 0))
		rc = IDEM_ENOTFOUND;
	if (rc == IDEM_OK && json_parse((const char *)b, blen, &doc, NULL,
	    0) == JSON_OK && (at = json_get(doc, "created_at")) != NULL &&
	    (t = json_text(at, &tlen)) != NULL &&
	    pay_time_parse(t, tlen, &ms) == 0 &&
	    (rc = buf_append(key, l->scope, slen + 1)) == IDEM_OK)
		rc = buf_put_u64(key, ms);
	json_free(doc);
	pay_found_free(&f);
	return rc;
}

/* A listed payment as GET shows it. */
static int
pay_list_item(void *ctx, const char *id, struct json_writer *w)
{
	struct pay_list_ctx *l = ctx;
	const uint8_t *s, *b = NULL;
	struct pay_found f;
	size_t rowlen, slen;
	int rc;

	memset(&f, 0, sizeof(f));
	rowkey(id, PAY_ID_LEN, f.name);
	rc = rowkey_get_named(l->env->idem, PAY_TABLE_PAYMENTS, f.name, id,
	    PAY_ID_LEN, &f.row, &rowlen);
	if (rc == IDEM_OK)
		rc = pay_row_decode(f.row, rowlen, &s, &slen, &b, &f.blen);
	f.body = b;
	buf_reset(&l->view);
	if (rc == IDEM_OK)
		rc = pay_view(l->env->idem, id, &f, &l->view);
	if (rc == IDEM_OK)
		json_write_raw(w, l->view.data, l->view.len);
	pay_found_free(&f);
	return rc;
}

void
pay_list(const struct pay_call *c)
{
	struct pay_list_ctx l = { c->env, c->scope, BUF_INIT };
	struct list_index ix = { "payments", PAY_ID_LEN, 0, pay_list_scan,
	    pay_list_item, &l, pay_list_place };
	struct list_query q;

	if (list_query_parse(c->req->query, &q, c->resp) != 0)
		return;
	if (c->env->idem == NULL) {
		pay_store_error(c->resp, c->env->open_rc);
		return;
	}
	list_answer(&ix, &q, c->resp);
	buf_free(&l.view);
}
