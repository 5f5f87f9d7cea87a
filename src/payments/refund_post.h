/* SPDX-License-Identifier: MIT */
/*
 * refund_post.h: POST /payments/{id}/refunds, a keyed request on the
 * idempotency library: the handler of the route table (routes.h), and
 * the claim's part of a refund, which the completer (resume.h) runs too.
 */
#ifndef PAY_REFUND_POST_H
#define PAY_REFUND_POST_H

#include <stdint.h>

#include "idem.h"
#include "keyed.h"
#include "money.h"
#include "shared.h"

/* The handler: c is keyed; param[0] is the payment id. */
void refund_post(const struct pay_call *c);

/*
 * Runs a refund of payment (its id; cur its currency) on a claim the
 * caller owns, and ends the claim: the hold made with the claim is
 * refunded at the provider and settled, or given back (release), or kept
 * (abandon).  invalid: the 400's detail for an invalid body, else NULL.
 */
enum keyed_end refund_claimed(const struct pay_env *env,
    struct pay_note *note, const char *scope, const char *key,
    const char *payment, const struct currency *cur, struct idem_call *call,
    const char *invalid, struct response *resp);

/*
 * The payment a refund names, if it belongs to scope (pay_find_owned):
 * its amount and currency.  IDEM_OK, or the error with resp the answer:
 * IDEM_ENOTFOUND (404: none, or another account's), or the store's (503).
 */
int refund_payment_find(const struct pay_env *env, const char *payment,
    const char *scope, int64_t *paid, const struct currency **cur,
    struct response *resp);

#endif
