/* SPDX-License-Identifier: MIT */
/*
 * test_handlers.c: the lists (GET /payments in get.c, GET
 * /payments/{id}/refunds in refund_get.c) on a store whose index holds
 * an entry that names no payment or refund.  The list fails with the
 * store's error; it never ends there as if it were complete, a 200 whose
 * page lacks what the store holds and says "has_more": false.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cfg.h"
#include "err.h"
#include "get.h"
#include "harness.h"
#include "idem.h"
#include "json.h"
#include "metrics.h"
#include "payment.h"
#include "refund.h"
#include "refund_get.h"
#include "request.h"
#include "response.h"
#include "rowkey.h"
#include "shared.h"

static char dir[256];
static struct idem *idem;
static struct config cfg;

static const char scope[] = "acct_a";
static const char pay_id[] = "pay_0123456789abcdef01234567";
static const char pay_body[] = "{\"id\":\"pay_0123456789abcdef01234567\","
    "\"amount\":1.00,\"currency\":\"BRL\",\"status\":\"succeeded\"}";

static void
up(void)
{
	struct idem_options opt;

	harness_mkdtemp(dir, sizeof(dir));
	memset(&opt, 0, sizeof(opt));
	opt.size = sizeof(opt);
	opt.dir = harness_store(dir, 1);
	opt.tables = pay_tables;
	idem = NULL;
	HARNESS_EQ(idem_open(&opt, &idem), IDEM_OK);
}

static void
down(void)
{
	metrics_close();
	idem_close(idem);
	harness_rmdir(dir);
}

static void
put(const char *table, const void *key, size_t keylen, const void *val,
    size_t vallen)
{
	HARNESS_EQ(idem_row_insert_once(idem, table, key, keylen, val, vallen,
	    NULL, NULL), IDEM_OK);
}

/* The payment's row, and its entry in the account's index at time t. */
static void
put_payment(uint64_t t)
{
	struct buf body = BUF_INIT, row = BUF_INIT, idx = BUF_INIT;
	uint8_t name[ROWKEY_LEN];

	rowkey(pay_id, PAY_ID_LEN, name);
	CU_ASSERT_FATAL(buf_append(&body, pay_body, strlen(pay_body)) ==
	    IDEM_OK);
	CU_ASSERT_FATAL(pay_row_encode(scope, &body, &row) == IDEM_OK);
	put(PAY_TABLE_PAYMENTS, name, sizeof(name), row.data, row.len);
	CU_ASSERT_FATAL(buf_append(&idx, scope, sizeof(scope)) == IDEM_OK &&
	    buf_put_u64(&idx, t) == IDEM_OK &&
	    buf_append(&idx, name, sizeof(name)) == IDEM_OK);
	put(PAY_TABLE_BY_ACCOUNT, idx.data, idx.len, pay_id, PAY_ID_LEN);
	buf_free(&idx);
	buf_free(&row);
	buf_free(&body);
}

/*
 * Runs GET /payments (payment NULL) or GET /payments/{payment}/refunds
 * (query "") as scope, as the route table's handler; the status.
 */
static int
get_query(const char *payment, const char *q, struct response *resp)
{
	struct pay_env env = { &cfg, idem, NULL, IDEM_OK, NULL };
	char method[] = "GET", query[256];
	struct pay_note note;
	struct request req;
	struct pay_call c;

	memset(&req, 0, sizeof(req));
	memset(&note, 0, sizeof(note));
	memset(&c, 0, sizeof(c));
	snprintf(query, sizeof(query), "%s", q);
	req.method = method;
	req.query = query;
	resp_init(resp);
	c.env = &env;
	c.note = &note;
	c.req = &req;
	c.scope = scope;
	c.param[0] = payment;
	c.resp = resp;
	if (payment == NULL)
		pay_list(&c);
	else
		refund_list(&c);
	return resp->status;
}

static int
get(const char *payment, struct response *resp)
{
	return get_query(payment, "", resp);
}

#define SEEK_N 40

/* Payment i's id: pay_ and 24 hex digits. */
static void
seek_id(int i, char id[PAY_ID_LEN + 1])
{
	snprintf(id, PAY_ID_LEN + 1, "pay_%024x", (unsigned)i + 0x1000);
}

/*
 * Payment i of the account (as owner), its row showing its time, and
 * its index entry at that time; i 21 shares 20's millisecond.
 */
static void
put_seek_payment(int i, const char *owner)
{
	struct buf body = BUF_INIT, row = BUF_INIT, idx = BUF_INIT;
	uint8_t name[ROWKEY_LEN];
	char id[PAY_ID_LEN + 1], when[64];
	uint64_t t = 1700000000000ULL + 1000 * (uint64_t)(i == 21 ? 20 : i);

	seek_id(i, id);
	pay_time(t, when);
	rowkey(id, PAY_ID_LEN, name);
	CU_ASSERT_FATAL(buf_printf(&body, "{\"id\":\"%s\",\"amount\":1.00,"
	    "\"currency\":\"BRL\",\"status\":\"succeeded\",\"charge_id\":"
	    "\"ch_1\",\"created_at\":\"%s\"}", id, when) == IDEM_OK);
	CU_ASSERT_FATAL(pay_row_encode(owner, &body, &row) == IDEM_OK);
	put(PAY_TABLE_PAYMENTS, name, sizeof(name), row.data, row.len);
	CU_ASSERT_FATAL(buf_append(&idx, owner, strlen(owner) + 1) ==
	    IDEM_OK && buf_put_u64(&idx, t) == IDEM_OK &&
	    buf_append(&idx, name, sizeof(name)) == IDEM_OK);
	put(PAY_TABLE_BY_ACCOUNT, idx.data, idx.len, id, PAY_ID_LEN);
	buf_free(&idx);
	buf_free(&row);
	buf_free(&body);
}

/*
 * The ids of a page's data (at most SEEK_N), space-separated, then
 * " +" when has_more; "status N" for an answer other than 200.
 */
static void
page(const char *q, char *out, size_t len)
{
	struct response resp;
	struct json_value *doc = NULL;
	const struct json_value *data, *more;
	size_t i, n;
	int st = get_query(NULL, q, &resp);

	out[0] = '\0';
	if (st != 200) {
		snprintf(out, len, "status %d", st);
		resp_free(&resp);
		return;
	}
	CU_ASSERT_FATAL(json_parse(resp.body.data, resp.body.len, &doc, NULL,
	    0) == JSON_OK);
	data = json_get(doc, "data");
	more = json_get(doc, "has_more");
	CU_ASSERT_FATAL(data != NULL && more != NULL);
	n = json_count(data);
	for (i = 0; i < n; i++)
		snprintf(out + strlen(out), len - strlen(out), "%s%s",
		    i > 0 ? " " : "", json_text(json_get(json_at(data,
		    i), "id"), NULL));
	if (json_type(more) == JSON_TRUE)
		snprintf(out + strlen(out), len - strlen(out), " +");
	json_free(doc);
	resp_free(&resp);
}

/*
 * The limit ids around position at of the whole list's order (newest
 * first), as the page after it (after set) or before it must show them.
 */
static void
expected(char all[SEEK_N][PAY_ID_LEN + 1], int at, int after, int limit,
    char *out, size_t len)
{
	int i, from, to;

	out[0] = '\0';
	from = after ? at + 1 : (at - limit > 0 ? at - limit : 0);
	to = after ? (at + 1 + limit < SEEK_N ? at + 1 + limit : SEEK_N) : at;
	for (i = from; i < to; i++)
		snprintf(out + strlen(out), len - strlen(out), "%s%.*s",
		    i > from ? " " : "", PAY_ID_LEN, all[i]);
	if (after ? to < SEEK_N : from > 0)
		snprintf(out + strlen(out), len - strlen(out), " +");
}

/*
 * Pages from a cursor deep in a list are the list's own, in both
 * directions, wherever the cursor lies (two items share a millisecond),
 * and read only their own entries: with an entry that names nothing
 * made the newest of the index, a page of older items is still served
 * (a walk from the newest entry met it and failed: 503), and a cursor
 * that is no payment of the account is refused after one read.
 */
static void
test_payments_seek(void)
{
	char all[SEEK_N][PAY_ID_LEN + 1], q[160], want[2048], got[2048];
	char other[PAY_ID_LEN + 1];
	struct buf idx = BUF_INIT;
	char *p, *tok;
	int i, n = 0, after;

	for (i = 0; i < SEEK_N; i++)
		put_seek_payment(i, scope);
	put_seek_payment(SEEK_N, "acct_other");
	page("limit=100", got, sizeof(got));
	for (p = got; n < SEEK_N && (tok = strtok(p, " ")) != NULL; p = NULL)
		snprintf(all[n++], PAY_ID_LEN + 1, "%s", tok);
	HARNESS_EQ(n, SEEK_N);
	for (after = 0; after < 2; after++)
		for (i = 0; i < SEEK_N; i++) {
			snprintf(q, sizeof(q), "limit=3&%s=%.*s", after ?
			    "starting_after" : "ending_before", PAY_ID_LEN,
			    all[i]);
			expected(all, i, after, 3, want, sizeof(want));
			page(q, got, sizeof(got));
			CU_ASSERT_STRING_EQUAL(got, want);
		}
	/* Another account's payment, and none: 400. */
	seek_id(SEEK_N, other);
	snprintf(q, sizeof(q), "starting_after=%s", other);
	page(q, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "status 400");
	page("ending_before=pay_ffffffffffffffffffffffff", got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "status 400");

	/* An entry naming nothing, the newest: deep pages do not read it. */
	CU_ASSERT_FATAL(buf_append(&idx, scope, sizeof(scope)) == IDEM_OK &&
	    buf_put_u64(&idx, 1800000000000ULL) == IDEM_OK &&
	    buf_append(&idx, "0123456789abcdef", ROWKEY_LEN) == IDEM_OK);
	put(PAY_TABLE_BY_ACCOUNT, idx.data, idx.len, "junk", 4);
	page("", got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "status 503");
	snprintf(q, sizeof(q), "limit=3&starting_after=%.*s", PAY_ID_LEN,
	    all[30]);
	expected(all, 30, 1, 3, want, sizeof(want));
	page(q, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, want);
	snprintf(q, sizeof(q), "limit=3&ending_before=%.*s", PAY_ID_LEN,
	    all[30]);
	expected(all, 30, 0, 3, want, sizeof(want));
	page(q, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, want);
	buf_free(&idx);
}

/*
 * An index entry newer than the payment, whose value is neither an id
 * nor empty: the list must not stop there with the payment left out.
 */
static void
test_payments_bad_entry(void)
{
	struct buf idx = BUF_INIT;
	struct response resp;

	put_payment(1000);
	HARNESS_EQ(get(NULL, &resp), 200);
	CU_ASSERT(resp.body.len > 0 && memmem(resp.body.data, resp.body.len,
	    pay_id, PAY_ID_LEN) != NULL);
	resp_free(&resp);

	CU_ASSERT_FATAL(buf_append(&idx, scope, sizeof(scope)) == IDEM_OK &&
	    buf_put_u64(&idx, 2000) == IDEM_OK &&
	    buf_append(&idx, "0123456789abcdef", ROWKEY_LEN) == IDEM_OK);
	put(PAY_TABLE_BY_ACCOUNT, idx.data, idx.len, "junk", 4);
	HARNESS_EQ(get(NULL, &resp), 503);
	resp_free(&resp);
	buf_free(&idx);
}

/* The same for a payment's refunds. */
static void
test_refunds_bad_entry(void)
{
	struct buf idx = BUF_INIT;
	struct response resp;
	uint8_t name[ROWKEY_LEN];

	put_payment(1000);
	HARNESS_EQ(get(pay_id, &resp), 200);
	resp_free(&resp);

	rowkey(pay_id, PAY_ID_LEN, name);
	CU_ASSERT_FATAL(buf_append(&idx, name, sizeof(name)) == IDEM_OK &&
	    buf_put_u64(&idx, 2000) == IDEM_OK &&
	    buf_append(&idx, "0123456789abcdef", ROWKEY_LEN) == IDEM_OK);
	put(REFUND_TABLE_BY_PAYMENT, idx.data, idx.len, "junk", 4);
	HARNESS_EQ(get(pay_id, &resp), 503);
	resp_free(&resp);
	buf_free(&idx);
}

int
harness_suites(void)
{
	CU_pSuite s;

	if ((s = CU_add_suite_with_setup_and_teardown("lists", NULL, NULL, up,
	    down)) == NULL ||
	    CU_add_test(s, "payments: an entry naming no id",
	    test_payments_bad_entry) == NULL ||
	    CU_add_test(s, "refunds: an entry naming no id",
	    test_refunds_bad_entry) == NULL ||
	    CU_add_test(s, "payments: pages seek to their cursor",
	    test_payments_seek) == NULL)
		return -1;
	return 0;
}
