/* SPDX-License-Identifier: MIT */
/*
 * money.c: ISO 4217 currencies and exact conversion of JSON numbers to
 * integer minor units.
 *
 * No binary floating point is involved anywhere: "0.1" must become
 * exactly 10 cents, and 1e2 must become exactly 10000, which a double
 * cannot promise for every input.  The number is read as a string of
 * significant digits and a power of ten, and only an integer that is
 * known in advance to fit is ever built from it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "money.h"

/*
 * The supported currencies, sorted by code for bsearch, with the
 * minor-unit digits published in ISO 4217 (List One).  A currency whose
 * minor unit is not in practical use still keeps its ISO digits here
 * (COP, IDR): the amount is exact either way, and the provider decides
 * what it can settle.
 */
static const struct currency money_table[] = {
	{ "AED", 2 },
	{ "ARS", 2 },
	{ "AUD", 2 },
	{ "BHD", 3 },
	{ "BRL", 2 },
	{ "CAD", 2 },
	{ "CHF", 2 },
	{ "CLP", 0 },
	{ "CNY", 2 },
	{ "COP", 2 },
	{ "CZK", 2 },
	{ "DKK", 2 },
	{ "EUR", 2 },
	{ "GBP", 2 },
	{ "HKD", 2 },
	{ "HUF", 2 },
	{ "IDR", 2 },
	{ "ILS", 2 },
	{ "INR", 2 },
	{ "ISK", 0 },
	{ "JOD", 3 },
	{ "JPY", 0 },
	{ "KRW", 0 },
	{ "KWD", 3 },
	{ "MXN", 2 },
	{ "NOK", 2 },
	{ "NZD", 2 },
	{ "OMR", 3 },
	{ "PEN", 2 },
	{ "PHP", 2 },
	{ "PLN", 2 },
	{ "PYG", 0 },
	{ "SAR", 2 },
	{ "SEK", 2 },
	{ "SGD", 2 },
	{ "THB", 2 },
	{ "TND", 3 },
	{ "TRY", 2 },
	{ "TWD", 2 },
	{ "UGX", 0 },
	{ "USD", 2 },
	{ "UYU", 2 },
	{ "VND", 0 },
	{ "ZAR", 2 },
};

#define MONEY_NCURRENCY (sizeof(money_table) / sizeof(money_table[0]))

/*
 * MONEY_MAX_MINOR is 10^14, a 15-digit number: an integer with more
 * than this many digits is out of range without being built.
 */
#define MONEY_MAX_DIGITS 15

static const char *const money_strs[MONEY__MAX] = {
	[MONEY_OK] = "The amount is valid.",
	[MONEY_SYNTAX] = "The amount must be a JSON number, such as "
	    "100.00 or 1e2, not a string or another value.",
	[MONEY_NOT_POSITIVE] = "The amount must be greater than zero.",
	[MONEY_PRECISION] = "The amount has more decimal places than the "
	    "currency's minor unit allows.",
	[MONEY_RANGE] = "The amount is larger than the largest amount "
	    "this service accepts.",
};

static int
money_cmp(const void *key, const void *elem)
{
	const struct currency *c = elem;

	return strcmp(key, c->code);
}

const struct currency *
money_currency(const char *code)
{
	if (code == NULL)
		return NULL;
	return bsearch(code, money_table, MONEY_NCURRENCY,
	    sizeof(money_table[0]), money_cmp);
}

void
money_each(void (*fn)(void *ctx, const struct currency *c), void *ctx)
{
	size_t i;

	for (i = 0; i < MONEY_NCURRENCY; i++)
		fn(ctx, &money_table[i]);
}

const char *
money_strstatus(enum money_status s)
{
	if ((int)s < 0 || s >= MONEY__MAX)
		return "The amount is invalid.";
	return money_strs[s];
}

/* The k-th significant digit's value. */
static int
money_digit(const struct json_decimal *d, size_t k)
{
	return json_decimal_digit(d, k) - '0';
}

/*
 * The text is read by the JSON number grammar itself (json.h), so that an
 * amount is exactly the number the body held: the value is D * 10^exp,
 * D the significant digits [lead, end), without leading or trailing zeros.
 */
enum money_status
money_parse(const char *text, const struct currency *cur, int64_t *minor)
{
	struct json_decimal d;
	long long scale, ndig;
	int64_t v;
	size_t k;

	if (text == NULL || cur == NULL ||
	    json_decimal_parse(text, strlen(text), &d) != 0)
		return MONEY_SYNTAX;
	if (d.lead == d.end || d.neg)
		return MONEY_NOT_POSITIVE;

	/*
	 * In minor units the power of ten is exp + the currency's digits,
	 * which must not be negative or a fraction of the minor unit would
	 * be lost.  The exponent is within +-JSON_EXP_LIMIT (10^9) and the
	 * digits within JSON_DIGITS_MAX, so none of this can overflow.
	 */
	scale = (long long)d.exp + (long long)cur->digits;
	if (scale < 0)
		return MONEY_PRECISION;
	ndig = (long long)(d.end - d.lead);
	if (ndig + scale > MONEY_MAX_DIGITS)
		return MONEY_RANGE;

	/* At most 15 digits: the value fits int64 with room to spare. */
	v = 0;
	for (k = d.lead; k < d.end; k++)
		v = v * 10 + money_digit(&d, k);
	for (; scale > 0; scale--)
		v *= 10;
	if (v > MONEY_MAX_MINOR)
		return MONEY_RANGE;
	*minor = v;
	return MONEY_OK;
}

void
money_format(int64_t minor, const struct currency *cur, char *out,
    size_t outlen)
{
	/* A sign, the whole part, '.', and digits (3 at most, ISO 4217). */
	char text[2 * BUF_DEC_MAX + 2];
	uint64_t mag, pow10;
	unsigned digits, i;
	size_t n = 0;

	if (out == NULL || outlen == 0)
		return;
	digits = cur != NULL ? cur->digits : 0;

	/* The magnitude of INT64_MIN is representable only unsigned. */
	if (minor < 0)
		text[n++] = '-';
	mag = minor < 0 ? 0 - (uint64_t)minor : (uint64_t)minor;
	for (pow10 = 1, i = 0; i < digits; i++)
		pow10 *= 10;
	n += buf_fmt_uint(text + n, mag / pow10, 0);
	if (digits > 0) {
		text[n++] = '.';
		n += buf_fmt_uint(text + n, mag % pow10, digits);
	}
	/* Cut as snprintf would. */
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, text, n);
	out[n] = '\0';
}
