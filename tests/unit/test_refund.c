/* SPDX-License-Identifier: MIT */
/*
 * test_refund.c: a refund's body, its decision against the totals, its
 * representation, the payment's view, and its rows' encodings.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "harness.h"
#include "json.h"
#include "money.h"
#include "refund.h"

/* Parses body as a refund in code; returns refund_ask_parse's result. */
static int
ask(const char *body, const char *code, struct refund_ask *a)
{
	struct json_value *doc = NULL;
	char err[128], detail[256];
	int rc;

	CU_ASSERT_FATAL(json_parse(body, strlen(body), &doc, err,
	    sizeof(err)) == JSON_OK);
	detail[0] = '\0';
	rc = refund_ask_parse(doc, NULL, money_currency(code), a, detail,
	    sizeof(detail));
	if (rc != 0)
		CU_ASSERT(strlen(detail) > 10);
	json_free(doc);
	return rc;
}

static void
test_ask_parse(void)
{
	struct refund_ask a;

	HARNESS_EQ(ask("{\"amount\": 10.00}", "BRL", &a), 0);
	HARNESS_EQ(a.minor, 1000);
	HARNESS_EQ(ask("{\"amount\": 1e1}", "BRL", &a), 0);
	HARNESS_EQ(a.minor, 1000);
	HARNESS_EQ(ask("{}", "BRL", &a), 0);
	HARNESS_EQ(a.minor, 0);
	HARNESS_EQ(ask("{\"amount\": 5}", "JPY", &a), 0);
	HARNESS_EQ(a.minor, 5);
}

static void
test_ask_invalid(void)
{
	static const char *const bad[] = {
		"{\"amount\": 0}", "{\"amount\": -1.00}", "{\"amount\": 1.001}",
		"{\"amount\": \"1.00\"}", "{\"amount\": null}",
		"{\"amount\": 1.00, \"currency\": \"BRL\"}", "{\"amt\": 1}",
		"[1]", "1", "{\"amount\": 1e400}",
	};
	struct refund_ask a;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (ask(bad[i], "BRL", &a) != -1)
			fprintf(stderr, "  accepted %s\n", bad[i]);
		HARNESS_EQ(ask(bad[i], "BRL", &a), -1);
	}
	HARNESS_EQ(ask("{\"amount\": 1.5}", "JPY", &a), -1);
}

static void
test_reserve(void)
{
	struct refund_totals t = { 10000, 0, 0 };
	struct refund_ask a = { 3000 };
	int64_t amount;
	int i;

	for (i = 0; i < 3; i++) {
		HARNESS_EQ(refund_reserve(&t, &a, &amount), 0);
		HARNESS_EQ(amount, 3000);
	}
	HARNESS_EQ(refund_reserve(&t, &a, &amount), -1);
	HARNESS_EQ(t.reserved, 9000);
	HARNESS_EQ(refund_left(&t), 1000);
	a.minor = 0;
	HARNESS_EQ(refund_reserve(&t, &a, &amount), 0);
	HARNESS_EQ(amount, 1000);
	HARNESS_EQ(refund_left(&t), 0);
	/* Nothing left: even "all that is left" exceeds. */
	HARNESS_EQ(refund_reserve(&t, &a, &amount), -1);
	HARNESS_EQ(t.reserved, 10000);
}

static void
test_render(void)
{
	struct refund_cp cp = { "re_0123456789abcdef01234567", 1796042096789ULL };
	struct buf b = BUF_INIT;

	HARNESS_EQ(refund_render(&cp, "pay_0123456789abcdef01234567", 1050,
	    money_currency("BRL"), &b), IDEM_OK);
	HARNESS_EQ(buf_putc(&b, '\0'), IDEM_OK);
	CU_ASSERT_STRING_EQUAL((char *)b.data, "{\"id\":\"re_0123456789abcdef"
	    "01234567\",\"payment\":\"pay_0123456789abcdef01234567\","
	    "\"amount\":10.50,\"currency\":\"BRL\",\"status\":\"succeeded\","
	    "\"created_at\":\"2026-11-30T12:34:56.789Z\"}");
	buf_free(&b);
}

static void
test_payment_view(void)
{
	static const char pay[] = "{\"id\":\"pay_1\",\"amount\":100.00,"
	    "\"currency\":\"BRL\"}";
	const struct currency *cur;
	struct buf b = BUF_INIT;
	int64_t minor;

	HARNESS_EQ(refund_payment_money(pay, strlen(pay), &minor, &cur),
	    IDEM_OK);
	HARNESS_EQ(minor, 10000);
	CU_ASSERT_STRING_EQUAL(cur->code, "BRL");
	HARNESS_EQ(refund_payment_view(pay, strlen(pay), 9000, cur, &b),
	    IDEM_OK);
	HARNESS_EQ(buf_putc(&b, '\0'), IDEM_OK);
	CU_ASSERT_STRING_EQUAL((char *)b.data, "{\"id\":\"pay_1\",\"amount\":"
	    "100.00,\"currency\":\"BRL\",\"amount_refunded\":90.00}");
	buf_free(&b);
	HARNESS_EQ(refund_payment_money("{}", 2, &minor, &cur), IDEM_ECORRUPT);
	HARNESS_EQ(refund_payment_view("x", 1, 1, cur, &b), IDEM_ECORRUPT);
}

static void
test_rows(void)
{
	struct refund_totals t = { 10000, 3000, 6000 }, t2;
	struct refund_hold h = { "pay_0123456789abcdef01234567", 3000, 7000 }, h2;
	struct refund_cp cp, cp2;
	struct buf b = BUF_INIT;

	HARNESS_EQ(refund_totals_encode(&t, &b), IDEM_OK);
	HARNESS_EQ(refund_totals_decode(b.data, b.len, &t2), IDEM_OK);
	HARNESS_EQ(t2.amount, 10000);
	HARNESS_EQ(t2.refunded, 3000);
	HARNESS_EQ(t2.reserved, 6000);
	HARNESS_EQ(refund_totals_decode(b.data, b.len - 1, &t2), IDEM_ECORRUPT);
	buf_reset(&b);
	/* Totals past the payment are damage, never read as valid. */
	t.reserved = 8000;
	HARNESS_EQ(refund_totals_encode(&t, &b), IDEM_OK);
	HARNESS_EQ(refund_totals_decode(b.data, b.len, &t2), IDEM_ECORRUPT);
	buf_reset(&b);
	HARNESS_EQ(refund_hold_encode(&h, &b), IDEM_OK);
	HARNESS_EQ(refund_hold_decode(b.data, b.len, &h2), IDEM_OK);
	CU_ASSERT_STRING_EQUAL(h2.payment, h.payment);
	HARNESS_EQ(h2.amount, 3000);
	HARNESS_EQ(h2.left, 7000);
	buf_reset(&b);
	refund_cp_new(1796042096789ULL, &cp);
	CU_ASSERT(refund_id_valid(cp.id));
	HARNESS_EQ(refund_cp_encode(&cp, &b), IDEM_OK);
	HARNESS_EQ(refund_cp_decode(b.data, b.len, &cp2), IDEM_OK);
	CU_ASSERT_STRING_EQUAL(cp2.id, cp.id);
	HARNESS_EQ(cp2.created_ms, 1796042096789ULL);
	buf_free(&b);
	CU_ASSERT(!refund_id_valid("re_0123"));
	CU_ASSERT(!refund_id_valid("pay_0123456789abcdef01234567"));
	CU_ASSERT(!refund_id_valid("re_0123456789ABCDEF01234567"));
}

static const struct {
	const char *name;
	CU_TestFunc fn;
} refund_tests[] = {
	{ "body", test_ask_parse },
	{ "invalid bodies", test_ask_invalid },
	{ "reserve never exceeds", test_reserve },
	{ "render", test_render },
	{ "payment view", test_payment_view },
	{ "rows", test_rows },
};

int
harness_suites(void)
{
	CU_pSuite s;
	size_t i;

	if ((s = CU_add_suite("refund", NULL, NULL)) == NULL)
		return -1;
	for (i = 0; i < sizeof(refund_tests) / sizeof(refund_tests[0]); i++)
		if (CU_add_test(s, refund_tests[i].name,
		    refund_tests[i].fn) == NULL)
			return -1;
	return 0;
}
