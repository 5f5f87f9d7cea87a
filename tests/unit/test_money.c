/* SPDX-License-Identifier: MIT */
/*
 * test_money.c: exact parsing and formatting of amounts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "money.h"

static const struct currency *
cur(const char *code)
{
	const struct currency *c = money_currency(code);

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	return c;
}

/* Parses text in code and expects status st (and value want when OK). */
static void
expect(const char *text, const char *code, enum money_status st,
    int64_t want)
{
	int64_t got = -12345;
	enum money_status s;

	s = money_parse(text, cur(code), &got);
	if (s != st)
		fprintf(stderr, "  money_parse(\"%s\", %s)\n", text, code);
	HARNESS_EQ(s, st);
	if (st == MONEY_OK)
		HARNESS_EQ(got, want);
	else
		HARNESS_EQ(got, -12345);
}

static void
test_currency_table(void)
{
	const char *codes[] = { "BRL", "USD", "EUR", "GBP", "JPY", "CHF",
	    "CAD", "AUD", "MXN", "ARS", "CLP", "COP", "KRW", "INR", "CNY",
	    "KWD", "BHD" };
	size_t i;

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		CU_ASSERT_PTR_NOT_NULL(money_currency(codes[i]));
	HARNESS_EQ(cur("BRL")->digits, 2);
	HARNESS_EQ(cur("USD")->digits, 2);
	HARNESS_EQ(cur("JPY")->digits, 0);
	HARNESS_EQ(cur("CLP")->digits, 0);
	HARNESS_EQ(cur("KRW")->digits, 0);
	HARNESS_EQ(cur("KWD")->digits, 3);
	HARNESS_EQ(cur("BHD")->digits, 3);
	CU_ASSERT_STRING_EQUAL(cur("EUR")->code, "EUR");
}

static void
test_currency_unknown(void)
{
	CU_ASSERT_PTR_NULL(money_currency("brl"));
	CU_ASSERT_PTR_NULL(money_currency("XXX"));
	CU_ASSERT_PTR_NULL(money_currency("BRLX"));
	CU_ASSERT_PTR_NULL(money_currency("BR"));
	CU_ASSERT_PTR_NULL(money_currency(""));
	CU_ASSERT_PTR_NULL(money_currency(NULL));
}

struct each_ctx {
	char prev[8];
	size_t n;
	int sorted;
};

static void
each_fn(void *ctx, const struct currency *c)
{
	struct each_ctx *e = ctx;

	if (e->n > 0 && strcmp(e->prev, c->code) >= 0)
		e->sorted = 0;
	snprintf(e->prev, sizeof(e->prev), "%s", c->code);
	e->n++;
	/* Every listed currency must be found by its code. */
	CU_ASSERT_PTR_EQUAL(money_currency(c->code), c);
}

/* bsearch needs the table in strict code order; money_each promises it. */
static void
test_each_sorted(void)
{
	struct each_ctx e = { "", 0, 1 };

	money_each(each_fn, &e);
	CU_ASSERT(e.n >= 17);
	CU_ASSERT(e.sorted);
}

static void
test_parse_plain(void)
{
	expect("100.00", "BRL", MONEY_OK, 10000);
	expect("100", "BRL", MONEY_OK, 10000);
	expect("100.0", "BRL", MONEY_OK, 10000);
	expect("0.01", "BRL", MONEY_OK, 1);
	expect("0.1", "BRL", MONEY_OK, 10);
	expect("12.34", "USD", MONEY_OK, 1234);
	expect("100", "JPY", MONEY_OK, 100);
	expect("1.234", "KWD", MONEY_OK, 1234);
	expect("0.001", "BHD", MONEY_OK, 1);
}

static void
test_parse_exponent(void)
{
	expect("1e2", "BRL", MONEY_OK, 10000);
	expect("1E2", "BRL", MONEY_OK, 10000);
	expect("1e+2", "BRL", MONEY_OK, 10000);
	expect("1.5E1", "BRL", MONEY_OK, 1500);
	expect("1e-2", "BRL", MONEY_OK, 1);
	expect("12345e-2", "BRL", MONEY_OK, 12345);
	expect("0.5e1", "JPY", MONEY_OK, 5);
	expect("1000e-3", "JPY", MONEY_OK, 1);
	expect("0.00001e5", "BRL", MONEY_OK, 100);
	expect("1e-3", "BRL", MONEY_PRECISION, 0);
}

/* Trailing zeros of the fraction carry no value and are not precision. */
static void
test_parse_trailing_zeros(void)
{
	expect("100.000", "BRL", MONEY_OK, 10000);
	expect("100.0000", "BRL", MONEY_OK, 10000);
	expect("100.00000000000000000000000000000000000000", "BRL",
	    MONEY_OK, 10000);
	expect("100.0", "JPY", MONEY_OK, 100);
	expect("1.2340", "KWD", MONEY_OK, 1234);
	expect("5.10e1", "BRL", MONEY_OK, 5100);
}

static void
test_parse_precision(void)
{
	expect("100.001", "BRL", MONEY_PRECISION, 0);
	expect("0.001", "USD", MONEY_PRECISION, 0);
	expect("100.5", "JPY", MONEY_PRECISION, 0);
	expect("0.5", "CLP", MONEY_PRECISION, 0);
	expect("1.2345", "KWD", MONEY_PRECISION, 0);
	expect("1.5e-1", "BRL", MONEY_OK, 15);
	expect("1.55e-1", "BRL", MONEY_PRECISION, 0);
}

static void
test_parse_not_positive(void)
{
	expect("0", "BRL", MONEY_NOT_POSITIVE, 0);
	expect("0.00", "BRL", MONEY_NOT_POSITIVE, 0);
	expect("0e5", "BRL", MONEY_NOT_POSITIVE, 0);
	expect("-0", "BRL", MONEY_NOT_POSITIVE, 0);
	expect("-1", "BRL", MONEY_NOT_POSITIVE, 0);
	expect("-100.00", "BRL", MONEY_NOT_POSITIVE, 0);
	expect("-1e400", "BRL", MONEY_NOT_POSITIVE, 0);
}

static void
test_parse_range(void)
{
	/* 10^14 minor units is the largest amount; one more is not. */
	expect("1000000000000.00", "BRL", MONEY_OK, MONEY_MAX_MINOR);
	expect("1e12", "BRL", MONEY_OK, MONEY_MAX_MINOR);
	expect("100000000000000", "JPY", MONEY_OK, MONEY_MAX_MINOR);
	expect("1000000000000.01", "BRL", MONEY_RANGE, 0);
	expect("100000000000001", "JPY", MONEY_RANGE, 0);
	expect("999999999999999", "JPY", MONEY_RANGE, 0);
	expect("99999999999999999999", "BRL", MONEY_RANGE, 0);
	expect("1e13", "BRL", MONEY_RANGE, 0);
	expect("1e400", "BRL", MONEY_RANGE, 0);
	expect("1e999999999", "BRL", MONEY_RANGE, 0);
	/*
	 * Past an exponent of 10^9 the JSON grammar here refuses the number
	 * (json.h), so no body could bring it: refused as it would be.
	 */
	expect("1e9223372036854775807", "BRL", MONEY_SYNTAX, 0);
	expect("1e99999999999999999999999999999999", "BRL", MONEY_SYNTAX, 0);
	expect("184467440737095516160000", "JPY", MONEY_RANGE, 0);
}

/* Huge negative exponents are precision errors, never wrap-arounds. */
static void
test_parse_tiny(void)
{
	expect("1e-400", "BRL", MONEY_PRECISION, 0);
	expect("1e-999999999", "BRL", MONEY_PRECISION, 0);
	expect("1e-9223372036854775808", "BRL", MONEY_SYNTAX, 0);
	expect("1e-99999999999999999999999999999999", "JPY",
	    MONEY_SYNTAX, 0);
	/* A long digit string scaled back down into range is exact. */
	expect("100000000000000000000000000000000e-30", "BRL",
	    MONEY_OK, 10000);
	expect("0.0000000000000000000000000000001e31", "BRL", MONEY_OK,
	    100);
}

/* Very long digit strings are read exactly, without overflow. */
static void
test_parse_long_text(void)
{
	size_t n = 100000;
	char *t;

	t = malloc(n + 8);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	memcpy(t, "1.", 2);
	memset(t + 2, '0', n);
	t[2 + n] = '\0';
	expect(t, "BRL", MONEY_OK, 100);
	t[1 + n] = '1';
	expect(t, "BRL", MONEY_PRECISION, 0);
	memset(t, '9', n);
	t[n] = '\0';
	expect(t, "BRL", MONEY_RANGE, 0);
	memcpy(t + n - 5, "e-999", 5);
	expect(t, "BRL", MONEY_PRECISION, 0);
	free(t);
}

static void
test_parse_syntax(void)
{
	const char *bad[] = { "", "-", "+1", "01", "00", "-01", "1.", ".5",
	    "1.e2", "1e", "1e+", "1e-", "e2", " 1", "1 ", "1,00", "1.0.0",
	    "0x10", "\"100\"", "100BRL", "NaN", "Infinity", "-Infinity",
	    "1e2.5", "1..0", "--1", "1-", "true", "null" };
	int64_t v;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = -7;
		if (money_parse(bad[i], cur("BRL"), &v) != MONEY_SYNTAX)
			fprintf(stderr, "  accepted \"%s\"\n", bad[i]);
		HARNESS_EQ(money_parse(bad[i], cur("BRL"), &v), MONEY_SYNTAX);
		HARNESS_EQ(v, -7);
	}
	HARNESS_EQ(money_parse(NULL, cur("BRL"), &v), MONEY_SYNTAX);
	HARNESS_EQ(money_parse("1", NULL, &v), MONEY_SYNTAX);
	/* A single zero before the point is the one leading zero allowed. */
	expect("0.50", "BRL", MONEY_OK, 50);
}

static void
test_format(void)
{
	char out[64];

	money_format(10000, cur("BRL"), out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "100.00");
	money_format(1, cur("BRL"), out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "0.01");
	money_format(5, cur("JPY"), out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "5");
	money_format(1500, cur("KWD"), out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "1.500");
	money_format(MONEY_MAX_MINOR, cur("USD"), out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "1000000000000.00");
	money_format(-250, cur("EUR"), out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "-2.50");
	money_format(INT64_MIN, cur("JPY"), out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "-9223372036854775808");
}

static void
test_format_truncates(void)
{
	char out[4];

	memset(out, 'x', sizeof(out));
	money_format(10000, cur("BRL"), out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "100");
	money_format(10000, cur("BRL"), out, 0);
	CU_ASSERT_STRING_EQUAL(out, "100");
}

/* Prints exactly what the printf formats it is written without print. */
static void
each_format_as_printf(void *ctx, const struct currency *c)
{
	int64_t v[4 * 20 + 4];
	uint64_t p10, pow10;
	char want[64], got[64];
	size_t n = 0, i;
	unsigned k;

	(void)ctx;
	/* 0, the extremes, and +-(10^k - 1), +-10^k for every digit count. */
	v[n++] = 0;
	v[n++] = INT64_MAX;
	v[n++] = INT64_MIN;
	v[n++] = INT64_MIN + 1;
	for (p10 = 1; p10 <= (uint64_t)INT64_MAX / 10; p10 *= 10) {
		v[n++] = (int64_t)p10;
		v[n++] = (int64_t)p10 - 1;
		v[n++] = -(int64_t)p10;
		v[n++] = 1 - (int64_t)p10;
	}
	for (pow10 = 1, k = 0; k < c->digits; k++)
		pow10 *= 10;
	for (i = 0; i < n; i++) {
		uint64_t mag = v[i] < 0 ? 0 - (uint64_t)v[i] : (uint64_t)v[i];

		if (c->digits == 0)
			snprintf(want, sizeof(want), "%s%llu", v[i] < 0 ?
			    "-" : "", (unsigned long long)mag);
		else
			snprintf(want, sizeof(want), "%s%llu.%0*llu",
			    v[i] < 0 ? "-" : "",
			    (unsigned long long)(mag / pow10), (int)c->digits,
			    (unsigned long long)(mag % pow10));
		money_format(v[i], c, got, sizeof(got));
		CU_ASSERT_STRING_EQUAL(got, want);
	}
	/* Cut short as snprintf cuts, at every length. */
	for (i = 1; i <= strlen(want) + 1; i++) {
		memset(got, 'x', sizeof(got));
		money_format(v[n - 1], c, got, i);
		HARNESS_EQ(strlen(got), i - 1);
		CU_ASSERT(memcmp(got, want, i - 1) == 0);
	}
}

static void
test_format_as_printf(void)
{
	money_each(each_format_as_printf, NULL);
}

/* Whatever money_format prints, money_parse reads back to the same value. */
static void
test_format_round_trip(void)
{
	const char *codes[] = { "BRL", "JPY", "KWD" };
	const int64_t vals[] = { 1, 9, 10, 99, 100, 101, 1000, 10000, 123456,
	    999999, 1000000007, MONEY_MAX_MINOR - 1, MONEY_MAX_MINOR };
	char out[64];
	int64_t back;
	size_t i, j;

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		for (j = 0; j < sizeof(vals) / sizeof(vals[0]); j++) {
			money_format(vals[j], cur(codes[i]), out, sizeof(out));
			back = 0;
			HARNESS_EQ(money_parse(out, cur(codes[i]), &back),
			    MONEY_OK);
			HARNESS_EQ(back, vals[j]);
		}
	}
}

static void
test_strstatus(void)
{
	int s;
	const char *m;

	for (s = 0; s < MONEY__MAX; s++) {
		m = money_strstatus((enum money_status)s);
		CU_ASSERT_PTR_NOT_NULL_FATAL(m);
		/* Details in problem+json are full sentences. */
		CU_ASSERT(strlen(m) > 10);
		CU_ASSERT(m[strlen(m) - 1] == '.');
	}
	CU_ASSERT_PTR_NOT_NULL(money_strstatus(MONEY__MAX));
	CU_ASSERT_PTR_NOT_NULL(money_strstatus((enum money_status)-1));
}

static const struct {
	const char *name;
	CU_TestFunc fn;
} money_tests[] = {
	{ "currency table", test_currency_table },
	{ "unknown currencies", test_currency_unknown },
	{ "money_each is sorted", test_each_sorted },
	{ "plain decimals", test_parse_plain },
	{ "exponents", test_parse_exponent },
	{ "trailing zeros", test_parse_trailing_zeros },
	{ "precision", test_parse_precision },
	{ "zero and negative", test_parse_not_positive },
	{ "range", test_parse_range },
	{ "tiny exponents", test_parse_tiny },
	{ "long digit strings", test_parse_long_text },
	{ "syntax", test_parse_syntax },
	{ "format", test_format },
	{ "format truncates", test_format_truncates },
	{ "format as printf", test_format_as_printf },
	{ "format round trip", test_format_round_trip },
	{ "status sentences", test_strstatus },
};

int
harness_suites(void)
{
	CU_pSuite s;
	size_t i;

	if ((s = CU_add_suite("money", NULL, NULL)) == NULL)
		return -1;
	for (i = 0; i < sizeof(money_tests) / sizeof(money_tests[0]); i++)
		if (CU_add_test(s, money_tests[i].name,
		    money_tests[i].fn) == NULL)
			return -1;
	return 0;
}
