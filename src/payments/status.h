/* SPDX-License-Identifier: MIT */
/*
 * status.h: the service's own state: GET /healthz (whether the store
 * answers a read) and GET /metrics (Prometheus text format: counters of
 * every worker of this store).  Handlers of the route table (routes.h).
 */
#ifndef PAY_STATUS_H
#define PAY_STATUS_H

#include "shared.h"

void pay_healthz(const struct pay_call *c);
void pay_metrics(const struct pay_call *c);

#endif
