/* SPDX-License-Identifier: MIT */
/*
 * shared.c: what every payments endpoint shares (shared.h): the answers
 * worded alike and the ownership check.
 */
#include <stdlib.h>
#include <string.h>

#include "idem.h"
#include "metrics.h"
#include "payment.h"
#include "problem.h"
#include "refund.h"
#include "rowkey.h"
#include "shared.h"

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
pay_answer_read(const struct request *req, struct response *resp,
    const void *body, size_t blen)
{
	char etag[PAY_ETAG_SIZE];
	int rc;

	pay_etag(body, blen, etag);
	resp_reset(resp);
	if ((rc = resp_header(resp, "ETag", "%s", etag)) != IDEM_OK)
		goto fail;
	if (req->if_none_match != NULL && (strcmp(req->if_none_match,
	    "*") == 0 || strstr(req->if_none_match, etag) != NULL)) {
		resp->status = 304;
		return;
	}
	resp->status = 200;
	if ((rc = resp_header(resp, "Content-Type", "application/json")) ==
	    IDEM_OK && (rc = buf_append(&resp->body, body, blen)) == IDEM_OK)
		return;
fail:
	problem_build(resp, PROBLEM_INTERNAL, "%s.", idem_strerror(rc));
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

int
pay_find_owned(const struct pay_env *env, const char *id,
    const char *scope, int keyed, struct pay_found *f,
    struct response *resp)
{
	const uint8_t *s;
	size_t rowlen = 0, slen;
	int rc;

	memset(f, 0, sizeof(*f));
	if (!pay_id_valid(id)) {
		problem_build(resp, PROBLEM_NOT_FOUND, "No such payment.");
		return IDEM_ENOTFOUND;
	}
	rowkey(id, PAY_ID_LEN, f->name);
	rc = rowkey_get_named(env->idem, PAY_TABLE_PAYMENTS, f->name, id,
	    PAY_ID_LEN, &f->row, &rowlen);
	if (rc == IDEM_OK)
		rc = pay_row_decode(f->row, rowlen, &s, &slen, &f->body,
		    &f->blen);
	if (rc == IDEM_OK && (slen != strlen(scope) ||
	    memcmp(s, scope, slen) != 0))
		rc = IDEM_ENOTFOUND;
	if (rc == IDEM_ENOTFOUND)
		problem_build(resp, PROBLEM_NOT_FOUND, "No such payment.");
	else if (rc != IDEM_OK && keyed)
		pay_store_error(resp, rc);
	else if (rc != IDEM_OK)
		pay_read_error(resp, rc);
	return rc;
}

void
pay_found_free(struct pay_found *f)
{
	free(f->row);
	f->row = NULL;
}
