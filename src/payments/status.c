/* SPDX-License-Identifier: MIT */
/*
 * status.c: GET /healthz and GET /metrics (status.h).
 */
#include <stddef.h>

#include "idem.h"
#include "json.h"
#include "metrics.h"
#include "payment.h"
#include "resume.h"
#include "status.h"

void
pay_metrics(const struct pay_call *c)
{
	const struct pay_env *env = c->env;
	struct response *resp = c->resp;
	size_t stuck;

	if (env->idem == NULL) {
		pay_store_error(resp, env->open_rc);
		return;
	}
	resp_reset(resp);
	resp->status = 200;
	resp_header(resp, "Content-Type", "text/plain; version=0.0.4; "
	    "charset=utf-8");
	metrics_render(&resp->body);
	/* Counted when asked: the walk costs what is stuck, not the store. */
	if (pay_stuck_count(env->idem, idem_now_ms(env->idem), &stuck) ==
	    IDEM_OK)
		metrics_render_gauge(&resp->body, "idem_stuck_claims",
		    "Claims that may have charged and whose lease ran out: "
		    "waiting for their client's retry or the completer.",
		    (uint64_t)stuck);
}

/*
 * Healthy is a store that answers a read: one read transaction (a count
 * of the payments), so a worker whose store cannot be read is taken out
 * of the load balancer's rotation instead of answering every request
 * with a 503 behind a 200 here.
 */
void
pay_healthz(const struct pay_call *c)
{
	const struct pay_env *env = c->env;
	struct response *resp = c->resp;
	struct json_writer w;
	size_t n;
	int rc;

	if (env->idem == NULL) {
		pay_store_error(resp, env->open_rc);
		return;
	}
	if ((rc = idem_row_count(env->idem, PAY_TABLE_PAYMENTS, &n)) !=
	    IDEM_OK) {
		pay_read_error(resp, rc);
		return;
	}
	resp_reset(resp);
	resp->status = 200;
	resp_header(resp, "Content-Type", "application/json");
	json_write_init(&w, &resp->body);
	json_write_open(&w, '{');
	json_write_name(&w, "status");
	json_write_str(&w, "ok");
	json_write_close(&w, '}');
}
