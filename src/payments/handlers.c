/* SPDX-License-Identifier: MIT */
/*
 * handlers.c: the payments endpoints that read (GET /payments/{id}, GET
 * /payments, /healthz, /metrics) and the answers every handler shares.
 * POST /payments is in post.c; the refunds are in refund_post.c and
 * refund_get.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers.h"
#include "idem.h"
#include "json.h"
#include "metrics.h"
#include "payment.h"
#include "problem.h"
#include "resume.h"
#include "rowkey.h"

#define PAY_LIST_DEFAULT 20
#define PAY_LIST_MAX 100

const char *const pay_tables[] = {
	PAY_TABLE_PAYMENTS, PAY_TABLE_BY_ACCOUNT, REFUND_TABLE_REFUNDS,
	REFUND_TABLE_BY_PAYMENT, REFUND_TABLE_TOTALS, REFUND_TABLE_HOLDS, NULL
};

/*
 * A stored value that does not open will not open on a retry either: a
 * 500 that says so, not a 503 that invites retrying.  The library has
 * logged its key id.  1 when that is the answer.
 */
static int
pay_seal_error(struct response *resp, int err)
{
	metrics_inc(METRIC_STORE_ERRORS);
	if (err != IDEM_ESEAL)
		return 0;
	problem_build(resp, PROBLEM_INTERNAL, "A stored value could not be "
	    "opened with the server's keys. The operator has been told (see "
	    "the server's log).");
	return 1;
}

void
pay_store_error(struct response *resp, int err)
{
	if (pay_seal_error(resp, err))
		return;
	problem_build(resp, PROBLEM_STORE_UNAVAILABLE,
	    "The payment store cannot be used right now (%s). Nothing was "
	    "recorded for this request; retry it with the same "
	    "Idempotency-Key.", idem_strerror(err));
	resp_header(resp, "Retry-After", "1");
}

void
pay_read_error(struct response *resp, int err)
{
	if (pay_seal_error(resp, err))
		return;
	problem_build(resp, PROBLEM_STORE_UNAVAILABLE,
	    "The payment store cannot be read right now (%s); retry the "
	    "request.", idem_strerror(err));
	resp_header(resp, "Retry-After", "1");
}

void
pay_bad_request(enum req_status st, const struct config *cfg,
    struct response *resp)
{
	switch (st) {
	case REQ_TOO_LARGE:
		problem_build(resp, PROBLEM_BODY_TOO_LARGE, "The body may be "
		    "at most %zu bytes.", cfg->body_limit);
		break;
	case REQ_BAD_LENGTH:
	case REQ_SHORT_BODY:
		problem_build(resp, PROBLEM_BAD_LENGTH, "%s.",
		    req_strstatus(st));
		break;
	case REQ_BAD_METHOD:
		problem_build(resp, PROBLEM_BAD_REQUEST, "%s.",
		    req_strstatus(st));
		break;
	default:
		problem_build(resp, PROBLEM_INTERNAL, "%s.",
		    req_strstatus(st));
		break;
	}
}

void
pay_get(const struct pay_env *env, const struct request *req, const char *id,
    const char *scope, struct response *resp)
{
	struct buf view = BUF_INIT;
	void *row = NULL;
	const uint8_t *s, *b;
	uint8_t name[ROWKEY_LEN];
	size_t rowlen = 0, slen, blen;
	char etag[PAY_ETAG_SIZE];
	int rc;

	if (!pay_id_valid(id)) {
		problem_build(resp, PROBLEM_NOT_FOUND, "No such payment.");
		return;
	}
	if (env->idem == NULL) {
		pay_store_error(resp, env->open_rc);
		return;
	}
	rowkey(id, PAY_ID_LEN, name);
	rc = rowkey_get_named(env->idem, PAY_TABLE_PAYMENTS, name, id,
	    PAY_ID_LEN, &row, &rowlen);
	if (rc == IDEM_OK)
		rc = pay_row_decode(row, rowlen, &s, &slen, &b, &blen);
	/* Another account's payment is indistinguishable from none. */
	if (rc == IDEM_ENOTFOUND || (rc == IDEM_OK && (slen != strlen(scope) ||
	    memcmp(s, scope, slen) != 0))) {
		problem_build(resp, PROBLEM_NOT_FOUND, "No such payment.");
		goto out;
	}
	if (rc == IDEM_OK)
		rc = refund_payment_extend(env->idem, id, name, b, blen,
		    &view);
	if (rc != IDEM_OK) {
		pay_read_error(resp, rc);
		goto out;
	}
	pay_etag(view.data, view.len, etag);
	resp_reset(resp);
	resp_header(resp, "ETag", "%s", etag);
	/* RFC 9110 section 13.1.2; it changes only when a refund is made. */
	if (req->if_none_match != NULL && (strcmp(req->if_none_match,
	    "*") == 0 || strstr(req->if_none_match, etag) != NULL)) {
		resp->status = 304;
		goto out;
	}
	resp->status = 200;
	if ((rc = resp_header(resp, "Content-Type", "application/json")) !=
	    IDEM_OK ||
	    (rc = buf_append(&resp->body, view.data, view.len)) != IDEM_OK)
		problem_build(resp, PROBLEM_INTERNAL, "%s.", idem_strerror(rc));
out:
	buf_free(&view);
	free(row);
}

/* Collects payment ids from the account index, newest first. */
struct pay_ids {
	char ids[PAY_LIST_MAX + 1][PAY_ID_LEN + 1];
	size_t n;
	int rc;         /* IDEM_ECORRUPT: an entry that names no id */
};

static int
pay_collect(void *ctx, const void *key, size_t keylen, const void *val,
    size_t vallen)
{
	struct pay_ids *p = ctx;
	const char *id;

	/*
	 * The id is the entry's value; entries written when ids named rows
	 * have none, and end their key with the id instead.
	 */
	if (vallen == PAY_ID_LEN)
		id = val;
	else if (vallen == 0 && keylen > PAY_ID_LEN)
		id = (const char *)key + keylen - PAY_ID_LEN;
	else {
		p->rc = IDEM_ECORRUPT;
		return 1;
	}
	if (p->n > PAY_LIST_MAX)
		return 1;
	memcpy(p->ids[p->n], id, PAY_ID_LEN);
	p->ids[p->n][PAY_ID_LEN] = '\0';
	p->n++;
	return 0;
}

long
pay_query_limit(const char *q, long max)
{
	const char *p = q;
	char *end;
	long v;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, "limit=", 6) == 0) {
			v = strtol(p + 6, &end, 10);
			if (end == p + 6 || (*end != '\0' && *end != '&') ||
			    v < 1 || v > max)
				return -1;
			return v;
		}
		p = strchr(p, '&');
		if (p != NULL)
			p++;
	}
	return 0;
}

/*
 * Appends the listed payments' representations, as GET shows each, to
 * w's array.  A payment that cannot be read fails the list with the
 * store's error, so that no page lacks what the store holds; an index
 * entry whose row is not there names nothing and is passed over.
 */
static int
pay_list_items(const struct pay_env *env, const struct pay_ids *ids,
    size_t limit, struct json_writer *w)
{
	struct buf view = BUF_INIT;
	const uint8_t *s, *b;
	uint8_t name[ROWKEY_LEN];
	size_t rowlen, slen, blen, i;
	void *row;
	int rc = IDEM_OK;

	for (i = 0; rc == IDEM_OK && i < ids->n && i < limit; i++) {
		row = NULL;
		rowkey(ids->ids[i], PAY_ID_LEN, name);
		rc = rowkey_get_named(env->idem, PAY_TABLE_PAYMENTS, name,
		    ids->ids[i], PAY_ID_LEN, &row, &rowlen);
		if (rc == IDEM_OK)
			rc = pay_row_decode(row, rowlen, &s, &slen, &b, &blen);
		buf_reset(&view);
		if (rc == IDEM_OK)
			rc = refund_payment_extend(env->idem, ids->ids[i],
			    name, b, blen, &view);
		if (rc == IDEM_OK)
			json_write_raw(w, view.data, view.len);
		else if (rc == IDEM_ENOTFOUND)
			rc = IDEM_OK;
		free(row);
	}
	buf_free(&view);
	return rc;
}

void
pay_list(const struct pay_env *env, const struct request *req, const char *scope,
    struct response *resp)
{
	struct pay_ids *ids = NULL;
	struct json_writer w;
	long limit;
	int rc;

	if ((limit = pay_query_limit(req->query, PAY_LIST_MAX)) < 0) {
		problem_build(resp, PROBLEM_BAD_REQUEST, "limit must be a "
		    "whole number from 1 to %d.", PAY_LIST_MAX);
		return;
	}
	if (limit == 0)
		limit = PAY_LIST_DEFAULT;
	if (env->idem == NULL) {
		pay_store_error(resp, env->open_rc);
		return;
	}
	if ((ids = calloc(1, sizeof(*ids))) == NULL) {
		problem_build(resp, PROBLEM_INTERNAL, "Out of memory.");
		return;
	}
	rc = idem_row_scan(env->idem, PAY_TABLE_BY_ACCOUNT, scope,
	    strlen(scope) + 1,
	    1, (size_t)limit + 1, pay_collect, ids);
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
	    (rc = pay_list_items(env, ids, (size_t)limit, &w)) != IDEM_OK) {
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
pay_metrics(const struct pay_env *env, struct response *resp)
{
	size_t stuck;

	if (env->idem == NULL) {
		pay_store_error(resp, env->open_rc);
		return;
	}
	resp_reset(resp);
	resp->status = 200;
	resp_header(resp, "Content-Type", "text/plain; version=0.0.4; "
	    "charset=utf-8");
	metrics_render(&resp->body);
	/* Counted when asked: the walk costs what is stuck, not the store. */
	if (pay_stuck_count(env->idem, idem_now_ms(env->idem), &stuck) ==
	    IDEM_OK)
		metrics_render_gauge(&resp->body, "idem_stuck_claims",
		    "Claims that may have charged and whose lease ran out: "
		    "waiting for their client's retry or the completer.",
		    (uint64_t)stuck);
}

/*
 * Healthy is a store that answers a read: one read transaction (a count
 * of the payments), so a worker whose store cannot be read is taken out
 * of the load balancer's rotation instead of answering every request
 * with a 503 behind a 200 here.
 */
void
pay_healthz(const struct pay_env *env, struct response *resp)
{
	struct json_writer w;
	size_t n;
	int rc;

	if (env->idem == NULL) {
		pay_store_error(resp, env->open_rc);
		return;
	}
	if ((rc = idem_row_count(env->idem, PAY_TABLE_PAYMENTS, &n)) !=
	    IDEM_OK) {
		pay_read_error(resp, rc);
		return;
	}
	resp_reset(resp);
	resp->status = 200;
	resp_header(resp, "Content-Type", "application/json");
	json_write_init(&w, &resp->body);
	json_write_open(&w, '{');
	json_write_name(&w, "status");
	json_write_str(&w, "ok");
	json_write_close(&w, '}');
}
