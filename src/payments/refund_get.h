/* SPDX-License-Identifier: MIT */
/*
 * refund_get.h: the refunds' reads: GET /payments/{id}/refunds/{rid}
 * (one refund, as its 201 had it) and GET /payments/{id}/refunds (the
 * payment's refunds, newest first, in pages: list.h).  Handlers of the
 * route table (routes.h): param[0] is the payment id, param[1] the
 * refund's.
 */
#ifndef PAY_REFUND_GET_H
#define PAY_REFUND_GET_H

#include "shared.h"

void refund_get(const struct pay_call *c);
void refund_list(const struct pay_call *c);

#endif
