/* SPDX-License-Identifier: MIT */
/*
 * refund_get.c: GET /payments/{id}/refunds/{rid} and GET
 * /payments/{id}/refunds (refund_get.h).  POST is in refund_post.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idem.h"
#include "list.h"
#include "payment.h"
#include "problem.h"
#include "refund.h"
#include "refund_get.h"
#include "rowkey.h"

void
refund_get(const struct pay_call *c)
{
	const char *payment = c->param[0], *id = c->param[1];
	struct response *resp = c->resp;
	const uint8_t *s, *p, *b;
	size_t rowlen = 0, slen, blen;
	void *row = NULL;
	int rc;

	if (c->env->idem == NULL) {
		pay_store_error(resp, c->env->open_rc);
		return;
	}
	if (!refund_id_valid(id) || !pay_id_valid(payment)) {
		problem_build(resp, PROBLEM_NOT_FOUND, "No such refund.");
		return;
	}
	rc = rowkey_get(c->env->idem, REFUND_TABLE_REFUNDS, id, REFUND_ID_LEN,
	    &row, &rowlen);
	if (rc == IDEM_OK)
		rc = refund_row_decode(row, rowlen, &s, &slen, &p, &b, &blen);
	if (rc == IDEM_OK && (slen != strlen(c->scope) ||
	    memcmp(s, c->scope, slen) != 0 || memcmp(p, payment, PAY_ID_LEN)))
		rc = IDEM_ENOTFOUND;
	if (rc == IDEM_ENOTFOUND) {
		problem_build(resp, PROBLEM_NOT_FOUND, "No such refund.");
		goto out;
	}
	if (rc != IDEM_OK) {
		pay_read_error(resp, rc);
		goto out;
	}
	/* A refund never changes: its ETag is the one its 201 had. */
	pay_answer_read(c->req, resp, b, blen);
out:
	free(row);
}

/* GET /payments/{id}/refunds's index: the payment's refunds_by_payment. */
struct refund_list_ctx {
	const struct pay_env *env;
	const char *payment;
};

/* Newest first, under either of the payment's row names. */
static int
refund_list_scan(void *ctx, const void *from, size_t fromlen, int reverse,
    idem_row_fn fn, void *fn_ctx)
{
	const struct refund_list_ctx *l = ctx;

	/* A payment's refunds are few: its pages walk, and never seek. */
	if (fromlen > 0 || from != NULL)
		return IDEM_EINVAL;
	return rowkey_scan(l->env->idem, REFUND_TABLE_BY_PAYMENT, l->payment,
	    PAY_ID_LEN, reverse, 0, fn, fn_ctx);
}

/* A listed refund: its stored representation. */
static int
refund_list_item(void *ctx, const char *id, struct json_writer *w)
{
	const struct refund_list_ctx *l = ctx;
	const uint8_t *s, *p, *b;
	size_t rowlen, slen, blen;
	void *row = NULL;
	int rc;

	rc = rowkey_get(l->env->idem, REFUND_TABLE_REFUNDS, id, REFUND_ID_LEN,
	    &row, &rowlen);
	if (rc == IDEM_OK)
		rc = refund_row_decode(row, rowlen, &s, &slen, &p, &b, &blen);
	if (rc == IDEM_OK)
		json_write_raw(w, b, blen);
	free(row);
	return rc;
}

void
refund_list(const struct pay_call *c)
{
	struct refund_list_ctx l = { c->env, c->param[0] };
	/* A legacy entry: the payment's id, the time, the refund's id. */
	struct list_index ix = { "refunds", REFUND_ID_LEN,
	    PAY_ID_LEN + 8 + REFUND_ID_LEN, refund_list_scan, refund_list_item,
	    &l, NULL };
	struct list_query q;
	struct pay_found f;

	if (c->env->idem == NULL) {
		pay_store_error(c->resp, c->env->open_rc);
		return;
	}
	if (list_query_parse(c->req->query, &q, c->resp) != 0)
		return;
	if (pay_find_owned(c->env, l.payment, c->scope, 0, &f, c->resp) ==
	    IDEM_OK)
		list_answer(&ix, &q, c->resp);
	pay_found_free(&f);
}
