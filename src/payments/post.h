/* SPDX-License-Identifier: MIT */
/*
 * post.h: POST /payments, a keyed request on the idempotency library:
 * the handler of the route table (routes.h), and the claim's part of a
 * payment, which the completer (resume.h) runs too.
 */
#ifndef PAY_POST_H
#define PAY_POST_H

#include "idem.h"
#include "keyed.h"
#include "payment.h"
#include "shared.h"

/* Recovery points of POST /payments, kept in the claim's stage. */
enum pay_stage {
	PAY_STAGE_STARTED = 0,       /* claimed; nothing sent to the provider */
	PAY_STAGE_CHARGE_REQUESTED,  /* payment id fixed; a charge may exist */
	PAY_STAGE__MAX
};

/* The handler: c is keyed (c->key, c->doc, c->fp are set). */
void pay_post(const struct pay_call *c);

/*
 * Runs a payment on a claim the caller owns (IDEM_RUN or IDEM_RESUME),
 * and ends the claim: the provider under the derived key, then complete,
 * release or abandon.  o is the order (NULL for an invalid body, whose
 * 400 with the detail invalid is stored).  resp gets the answer; note
 * the log's outcome when the claim was lost.
 */
enum keyed_end pay_claimed(const struct pay_env *env, struct pay_note *note,
    const char *scope, const char *key, struct idem_call *call,
    const struct pay_order *o, const char *invalid, struct response *resp);

#endif
