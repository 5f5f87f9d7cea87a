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
get(const char *payment, struct response *resp)
{
	struct pay_env env = { &cfg, idem, NULL, IDEM_OK, NULL };
	char method[] = "GET", query[] = "";
	struct pay_note note;
	struct request req;
	struct pay_call c;

	memset(&req, 0, sizeof(req));
	memset(&note, 0, sizeof(note));
	memset(&c, 0, sizeof(c));
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
	    test_refunds_bad_entry) == NULL)
		return -1;
	return 0;
}
