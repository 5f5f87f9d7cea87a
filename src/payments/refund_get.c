/* SPDX-License-Identifier: MIT */
/*
 * refund_get.c: the refunds' routes, GET /payments/{id}/refunds/{rid},
 * GET /payments/{id}/refunds (newest first), and the amount refunded
 * that GET /payments/{id} shows.  POST is in refund_post.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers.h"
#include "idem.h"
#include "payment.h"
#include "problem.h"
#include "refund.h"
#include "rowkey.h"

#define REFUND_LIST_DEFAULT 20
#define REFUND_LIST_MAX 100

enum refund_path
refund_path_parse(const char *path, char payment[PAY_ID_LEN + 1],
    char refund[REFUND_ID_LEN + 1])
{
	const char *p, *slash;
	size_t n;

	if (strncmp(path, "/payments/", 10) != 0)
		return REFUND_PATH_NONE;
	p = path + 10;
	if ((slash = strchr(p, '/')) == NULL ||
	    strncmp(slash, "/refunds", 8) != 0 ||
	    (slash[8] != '\0' && slash[8] != '/'))
		return REFUND_PATH_NONE;
	/* An id of the wrong length is kept short: it answers 404 anyway. */
	n = (size_t)(slash - p);
	if (n > PAY_ID_LEN)
		n = 0;
	memcpy(payment, p, n);
	payment[n] = '\0';
	if (slash[8] == '\0')
		return REFUND_PATH_LIST;
	p = slash + 9;
	n = strlen(p);
	if (n > REFUND_ID_LEN)
		n = 0;
	memcpy(refund, p, n);
	refund[n] = '\0';
	return REFUND_PATH_ONE;
}

/* The payment's refunded total, 0 before its first refund. */
static int
refund_refunded(struct idem *idem, const char *payment,
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

int
refund_payment_extend(struct idem *idem, const char *payment,
    const uint8_t name[ROWKEY_LEN], const void *body, size_t len,
    struct buf *out)
{
	const struct currency *cur;
	int64_t paid, refunded;
	int rc;

	if ((rc = refund_refunded(idem, payment, name, &refunded)) != IDEM_OK)
		return rc;
	if (refunded == 0)
		return buf_append(out, body, len);
	if ((rc = refund_payment_money(body, len, &paid, &cur)) != IDEM_OK)
		return rc;
	return refund_payment_view(body, len, refunded, cur, out);
}

/*
 * Whether the caller owns the payment: 0, or -1 with the 404 (another
 * account's payment is indistinguishable from none) or 503 in resp.
 */
static int
refund_payment_owned(const struct pay_env *env, const char *payment,
    const char *scope, struct response *resp)
{
	const uint8_t *s, *b;
	size_t rowlen = 0, slen, blen;
	void *row = NULL;
	int rc;

	if (!pay_id_valid(payment)) {
		problem_build(resp, PROBLEM_NOT_FOUND, "No such payment.");
		return -1;
	}
	rc = rowkey_get(env->idem, PAY_TABLE_PAYMENTS, payment, PAY_ID_LEN,
	    &row, &rowlen);
	if (rc == IDEM_OK)
		rc = pay_row_decode(row, rowlen, &s, &slen, &b, &blen);
	if (rc == IDEM_OK && (slen != strlen(scope) ||
	    memcmp(s, scope, slen) != 0))
		rc = IDEM_ENOTFOUND;
	free(row);
	if (rc == IDEM_ENOTFOUND)
		problem_build(resp, PROBLEM_NOT_FOUND, "No such payment.");
	else if (rc != IDEM_OK)
		pay_read_error(resp, rc);
	return rc == IDEM_OK ? 0 : -1;
}

static void
refund_get(const struct pay_env *env, const char *payment, const char *id,
    const char *scope, struct response *resp)
{
	const uint8_t *s, *p, *b;
	size_t rowlen = 0, slen, blen;
	char etag[PAY_ETAG_SIZE];
	void *row = NULL;
	int rc;

	if (!refund_id_valid(id) || !pay_id_valid(payment)) {
		problem_build(resp, PROBLEM_NOT_FOUND, "No such refund.");
		return;
	}
	rc = rowkey_get(env->idem, REFUND_TABLE_REFUNDS, id, REFUND_ID_LEN,
	    &row, &rowlen);
	if (rc == IDEM_OK)
		rc = refund_row_decode(row, rowlen, &s, &slen, &p, &b, &blen);
	if (rc == IDEM_OK && (slen != strlen(scope) ||
	    memcmp(s, scope, slen) != 0 || memcmp(p, payment, PAY_ID_LEN)))
		rc = IDEM_ENOTFOUND;
	if (rc == IDEM_ENOTFOUND) {
		problem_build(resp, PROBLEM_NOT_FOUND, "No such refund.");
		goto out;
	}
	if (rc != IDEM_OK) {
		pay_read_error(resp, rc);
		goto out;
	}
	pay_etag(b, blen, etag);
	resp_reset(resp);
	resp->status = 200;
	if ((rc = resp_header(resp, "Content-Type", "application/json")) !=
	    IDEM_OK ||
	    (rc = resp_header(resp, "ETag", "%s", etag)) != IDEM_OK ||
	    (rc = buf_append(&resp->body, b, blen)) != IDEM_OK)
		problem_build(resp, PROBLEM_INTERNAL, "%s.", idem_strerror(rc));
out:
	free(row);
}

/* Collects refund ids from the payment's index, newest first. */
struct refund_ids {
	char ids[REFUND_LIST_MAX + 1][REFUND_ID_LEN + 1];
	size_t n;
	int rc;         /* IDEM_ECORRUPT: an entry that names no id */
};

static int
refund_collect(void *ctx, const void *key, size_t keylen, const void *val,
    size_t vallen)
{
	struct refund_ids *r = ctx;
	const char *id;

	/*
	 * The id is the entry's value; entries written when ids named rows
	 * have none, and end their key with the id instead.
	 */
	if (vallen == REFUND_ID_LEN)
		id = val;
	else if (vallen == 0 && keylen == PAY_ID_LEN + 8 + REFUND_ID_LEN)
		id = (const char *)key + PAY_ID_LEN + 8;
	else {
		r->rc = IDEM_ECORRUPT;
		return 1;
	}
	if (r->n > REFUND_LIST_MAX)
		return 1;
	memcpy(r->ids[r->n], id, REFUND_ID_LEN);
	r->ids[r->n][REFUND_ID_LEN] = '\0';
	r->n++;
	return 0;
}

/*
 * Appends the listed refunds' stored representations to w's array.  A
 * refund that cannot be read fails the list with the store's error, so
 * that no page lacks what the store holds; an index entry whose row is
 * not there names nothing and is passed over.
 */
static int
refund_list_items(const struct pay_env *env, const struct refund_ids *ids,
    size_t limit, struct json_writer *w)
{
	const uint8_t *s, *p, *b;
	size_t rowlen, slen, blen, i;
	void *row;
	int rc = IDEM_OK;

	for (i = 0; rc == IDEM_OK && i < ids->n && i < limit; i++) {
		row = NULL;
		rc = rowkey_get(env->idem, REFUND_TABLE_REFUNDS, ids->ids[i],
		    REFUND_ID_LEN, &row, &rowlen);
		if (rc == IDEM_OK)
			rc = refund_row_decode(row, rowlen, &s, &slen, &p, &b,
			    &blen);
		if (rc == IDEM_OK)
			json_write_raw(w, b, blen);
		else if (rc == IDEM_ENOTFOUND)
			rc = IDEM_OK;
		free(row);
	}
	return rc;
}

static void
refund_list(const struct pay_env *env, const struct request *req,
    const char *payment, const char *scope, struct response *resp)
{
	struct refund_ids *ids = NULL;
	struct json_writer w;
	long limit;
	int rc;

	if ((limit = pay_query_limit(req->query, REFUND_LIST_MAX)) < 0) {
		problem_build(resp, PROBLEM_BAD_REQUEST, "limit must be a "
		    "whole number from 1 to %d.", REFUND_LIST_MAX);
		return;
	}
	if (limit == 0)
		limit = REFUND_LIST_DEFAULT;
	if (refund_payment_owned(env, payment, scope, resp) != 0)
		return;
	if ((ids = calloc(1, sizeof(*ids))) == NULL) {
		problem_build(resp, PROBLEM_INTERNAL, "Out of memory.");
		return;
	}
	/* Newest first, under either of the payment's row names. */
	rc = rowkey_scan(env->idem, REFUND_TABLE_BY_PAYMENT, payment,
	    PAY_ID_LEN, 1, (size_t)limit + 1, refund_collect, ids);
	if (rc == IDEM_OK)
		rc = ids->rc;
	if (rc != IDEM_OK) {
		pay_read_error(resp, rc);
		goto out;
	}
	resp_reset(resp);
	resp->status = 200;
	rc = resp_header(resp, "Content-Type", "application/json");
	json_write_init(&w, &resp->body);
	json_write_open(&w, '{');
	json_write_name(&w, "data");
	json_write_open(&w, '[');
	if (rc == IDEM_OK &&
	    (rc = refund_list_items(env, ids, (size_t)limit, &w)) != IDEM_OK) {
		pay_read_error(resp, rc);
		goto out;
	}
	json_write_close(&w, ']');
	json_write_name(&w, "has_more");
	if (ids->n > (size_t)limit)
		json_write_raw(&w, "true", 4);
	else
		json_write_raw(&w, "false", 5);
	json_write_close(&w, '}');
	if (rc == IDEM_OK)
		rc = json_write_done(&w);
	if (rc != IDEM_OK)
		problem_build(resp, PROBLEM_INTERNAL, "%s.", idem_strerror(rc));
out:
	free(ids);
}

void
refund_route(const struct pay_env *env, struct pay_note *note,
    const struct request *req, enum req_status st, const char *scope,
    struct response *resp)
{
	char payment[PAY_ID_LEN + 1], refund[REFUND_ID_LEN + 1];
	enum refund_path kind;

	kind = refund_path_parse(req->path, payment, refund);
	if (strcmp(req->method, "POST") == 0) {
		refund_post(env, note, req, st, payment, scope, resp);
		return;
	}
	if (st != REQ_OK) {
		pay_bad_request(st, env->cfg, resp);
		return;
	}
	if (env->idem == NULL) {
		pay_store_error(resp, env->open_rc);
		return;
	}
	if (kind == REFUND_PATH_LIST)
		refund_list(env, req, payment, scope, resp);
	else
		refund_get(env, payment, refund, scope, resp);
}
