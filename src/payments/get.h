/* SPDX-License-Identifier: MIT */
/*
 * get.h: the payments' reads: GET /payments/{id} (the payment as its 201
 * had it, with the amount refunded once a refund completes) and GET
 * /payments (the account's payments, newest first, in pages: list.h).
 * Handlers of the route table (routes.h): param[0] is the payment id.
 */
#ifndef PAY_GET_H
#define PAY_GET_H

#include "shared.h"

void pay_get(const struct pay_call *c);
void pay_list(const struct pay_call *c);

#endif
