/* SPDX-License-Identifier: MIT */
/*
 * money.h: exact amounts in integer minor units, and ISO 4217 currencies.
 *
 * Amounts arrive as JSON number text ("100.00", "1e2") and are converted
 * to minor units without binary floating point.  An amount with more
 * fractional digits than the currency has (after dropping trailing zeros),
 * a zero or negative amount, or one that does not fit MONEY_MAX_MINOR is
 * refused.
 */
#ifndef PAY_MONEY_H
#define PAY_MONEY_H

#include <stddef.h>
#include <stdint.h>

/* The largest amount accepted, in minor units (well inside int64). */
#define MONEY_MAX_MINOR 100000000000000LL /* 10^14 */

struct currency {
	const char *code;    /* "BRL" */
	unsigned digits;     /* minor-unit digits: 2 for BRL, 0 for JPY */
};

/* The supported currency with this code (exact, upper case), or NULL. */
const struct currency *money_currency(const char *code);

/* Calls fn for each supported currency, in code order. */
void money_each(void (*fn)(void *ctx, const struct currency *c), void *ctx);

enum money_status {
	MONEY_OK = 0,
	MONEY_SYNTAX,       /* not a JSON number */
	MONEY_NOT_POSITIVE, /* zero or negative */
	MONEY_PRECISION,    /* more fractional digits than the currency has */
	MONEY_RANGE,        /* larger than MONEY_MAX_MINOR */
	MONEY__MAX
};

/* Converts JSON number text to minor units of cur. */
enum money_status money_parse(const char *text, const struct currency *cur,
    int64_t *minor);

/* Writes minor as a decimal with cur's digits ("100.00", "5") to out. */
void money_format(int64_t minor, const struct currency *cur, char *out,
    size_t outlen);

const char *money_strstatus(enum money_status s);

#endif
