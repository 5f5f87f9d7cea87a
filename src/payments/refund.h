/* SPDX-License-Identifier: MIT */
/*
 * refund.h: a refund's shapes: the request (the validated body of POST
 * /payments/{id}/refunds), its JSON representation, its stored row, the
 * per-payment totals that keep refunds within the payment, the hold a
 * claim places on them, its recovery point and its id.
 */
#ifndef PAY_REFUND_H
#define PAY_REFUND_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "json.h"
#include "money.h"
#include "payment.h"

#define REFUND_ID_HEX 24
#define REFUND_ID_LEN (3 + REFUND_ID_HEX)   /* "re_" and the hex digits */
#define REFUND_ROW_VERSION 1
#define REFUND_TOTALS_VERSION 1
#define REFUND_HOLD_VERSION 1
#define REFUND_CP_VERSION 1

/*
 * The application's tables for refunds (idem_options.tables); rows named
 * by an id are stored under rowkey(id) (rowkey.h).
 */
#define REFUND_TABLE_REFUNDS "refunds"         /* refund id -> refund row */
#define REFUND_TABLE_BY_PAYMENT "refunds_by_payment"
				/* rowkey(payment) be64 time rowkey(refund) -> refund id */
#define REFUND_TABLE_TOTALS "refund_totals"    /* payment id -> totals */
#define REFUND_TABLE_HOLDS "refund_holds"      /* refund id -> hold */

/* Recovery points of POST /payments/{id}/refunds, in the claim's stage. */
enum refund_stage {
	REFUND_STAGE_STARTED = 0,   /* claimed; nothing held, nothing sent */
	REFUND_STAGE_HELD,          /* refund id fixed, amount decided in the
				       claim's transaction (a hold row) */
	REFUND_STAGE__MAX
};

/*
 * What a payment allows to be refunded, in its currency's minor units:
 * refunded + reserved <= amount always (the invariant of doc/DESIGN.md).
 */
struct refund_totals {
	int64_t amount;    /* the payment's amount */
	int64_t refunded;  /* refunds completed */
	int64_t reserved;  /* refunds claimed and not yet completed */
};

/*
 * What a refund's claim decided in its own transaction: the amount it
 * holds (0: none, the request exceeds what is left) and what was left to
 * refund before it.
 */
struct refund_hold {
	char payment[PAY_ID_LEN + 1];
	int64_t amount;
	int64_t left;
};

/* The recovery point a refund's claim starts with. */
struct refund_cp {
	char id[REFUND_ID_LEN + 1];
	uint64_t created_ms;
};

/* What POST /payments/{id}/refunds asks for, once validated. */
struct refund_ask {
	int64_t minor;   /* 0: all that is left */
};

/*
 * Validates the body: an object with at most "amount", a JSON number
 * exact to cur's minor unit and positive.  0, or -1 with the reason
 * (stored and replayed as the 400's detail) in detail.
 */
int refund_ask_parse(const struct json_value *doc,
    const char *const *ignore, const struct currency *cur,
    struct refund_ask *ask, char *detail, size_t len);

/*
 * Decides a refund against the totals: on 0 *amount is what it holds (ask
 * or all that is left) and t->reserved includes it; -1 when it would
 * exceed what is left (t unchanged).
 */
int refund_reserve(struct refund_totals *t, const struct refund_ask *ask,
    int64_t *amount);

/* What is left to refund. */
int64_t refund_left(const struct refund_totals *t);

/* Appends the JSON representation of a refund to out. */
int refund_render(const struct refund_cp *cp, const char *payment,
    int64_t minor, const struct currency *cur, struct buf *out);

/*
 * Reads a payment's amount and currency from its JSON representation (as
 * pay_render writes it).  IDEM_ECORRUPT when it has neither.
 */
int refund_payment_money(const void *body, size_t len, int64_t *minor,
    const struct currency **cur);

/*
 * A payment's representation with "amount_refunded" as its last member:
 * body (pay_render's object) with refunded minor units of cur appended
 * to out.
 */
int refund_payment_view(const void *body, size_t len, int64_t refunded,
    const struct currency *cur, struct buf *out);

/* A refund row: version, owner's scope, payment id, representation. */
int refund_row_encode(const char *scope, const char *payment,
    const struct buf *body, struct buf *out);
/* Points at the parts of an encoded row (borrowed). */
int refund_row_decode(const void *row, size_t len, const uint8_t **scope,
    size_t *slen, const uint8_t **payment, const uint8_t **body,
    size_t *blen);

int refund_totals_encode(const struct refund_totals *t, struct buf *out);
int refund_totals_decode(const void *v, size_t len, struct refund_totals *t);
int refund_hold_encode(const struct refund_hold *h, struct buf *out);
int refund_hold_decode(const void *v, size_t len, struct refund_hold *h);
int refund_cp_encode(const struct refund_cp *cp, struct buf *out);
int refund_cp_decode(const void *point, size_t len, struct refund_cp *cp);

/* A new refund's id (random) and time. */
void refund_cp_new(uint64_t now_ms, struct refund_cp *cp);

/* Whether id has the shape of a refund id. */
int refund_id_valid(const char *id);

#endif
