/* SPDX-License-Identifier: MIT */
/*
 * payment.h: a payment's shapes: the order (the validated body of POST
 * /payments), its JSON representation, its stored row, its recovery
 * point, its id.
 */
#ifndef PAY_PAYMENT_H
#define PAY_PAYMENT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "json.h"
#include "money.h"

#define PAY_ID_HEX 24
#define PAY_ID_LEN (4 + PAY_ID_HEX)   /* "pay_" and the hex digits */
#define PAY_ROW_VERSION 1
#define PAY_CP_VERSION 2     /* 1: id and time only, still read */
#define PAY_ETAG_SIZE 20

/* The application's tables (idem_options.tables). */
#define PAY_TABLE_PAYMENTS "payments"     /* rowkey(id) -> payment row */
#define PAY_TABLE_BY_ACCOUNT "by_account"
				/* scope NUL be64 time rowkey(id) -> id */

/* What POST /payments asks for, once validated. */
struct pay_order {
	int64_t minor;
	const struct currency *cur;
};

/*
 * The recovery point kept in the claim from PAY_STAGE_CHARGE_REQUESTED:
 * the payment's id and time, and what it charges, so that a completer
 * (resume.h), which has no request, can ask the provider for the same
 * charge.  A point written by an older release (version 1) has no order:
 * order.cur is then NULL.
 */
struct pay_cp {
	char id[PAY_ID_LEN + 1];
	uint64_t created_ms;
	struct pay_order order;
};

/*
 * Validates the body: an object with exactly "amount" and "currency".
 * 0, or -1 with the reason (stored and replayed as the 400's detail) in
 * detail.
 */
int pay_order_parse(const struct json_value *doc,
    const char *const *ignore, struct pay_order *o, char *detail, size_t len);

/* Appends the JSON representation of a charged payment to out. */
int pay_render(const struct pay_cp *cp, const struct pay_order *o,
    const char *charge_id, struct buf *out);

/* A strong ETag: the first 64 bits of the representation's SHA-256. */
void pay_etag(const void *body, size_t len, char out[PAY_ETAG_SIZE]);

/* RFC 3339 UTC time with milliseconds. */
void pay_time(uint64_t ms, char out[64]);
/*
 * The milliseconds of a time pay_time wrote (len bytes, exactly its
 * form: 2026-01-31T12:00:00.000Z): 0, or -1 for anything else.
 */
int pay_time_parse(const char *s, size_t len, uint64_t *ms);

/* A payment row: version, the owner's scope, the JSON representation. */
int pay_row_encode(const char *scope, const struct buf *body, struct buf *out);

/* Points at the scope and body inside an encoded row (borrowed). */
int pay_row_decode(const void *row, size_t len, const uint8_t **scope,
    size_t *slen, const uint8_t **body, size_t *blen);

int pay_cp_encode(const struct pay_cp *cp, struct buf *out);
int pay_cp_decode(const void *point, size_t len, struct pay_cp *cp);

/* A new payment's id (random) and time, for the order o. */
void pay_cp_new(uint64_t now_ms, const struct pay_order *o,
    struct pay_cp *cp);

/* Whether id is prefix and lowercase hex digits, len bytes in all. */
int pay_id_shape(const char *id, const char *prefix, size_t len);
/* Whether id has the shape of a payment id. */
int pay_id_valid(const char *id);

#endif
