/* SPDX-License-Identifier: MIT */
/*
 * routes.h: the API's route table, in kcgi's pages[] style: one row per
 * path pattern and method, saying who may call it, whether it needs an
 * Idempotency-Key, and its handler.  The router (app.c) answers from
 * it: 404 for a path no pattern matches, 405 with the Allow header the
 * table gives for a method the path does not answer, then the caller's
 * credentials, the key's checks (keyed_precheck) for a keyed route, and
 * the handler.  The policy page's list of keyed endpoints is made from
 * it too (make www-policy; tests/policy.test checks www/policy.html).
 *
 * A pattern is literal text and {name} parameters; a parameter matches
 * one path segment (no "/"; empty too: "/payments/" names the payment ""
 * and is the handler's 404), handed to the handler in pay_call.param in
 * the pattern's order.
 */
#ifndef PAY_ROUTES_H
#define PAY_ROUTES_H

#include <stddef.h>

#include "shared.h"

/* Who may call a route. */
enum route_who {
	ROUTE_ANYONE = 0,   /* no credentials asked (/healthz) */
	ROUTE_ACCOUNT,      /* an account, not the metrics account */
	ROUTE_METRICS,      /* only the metrics account (IDEM_METRICS_ACCOUNT) */
	ROUTE_WHO__MAX
};

/* A route's method; GET answers HEAD too (RFC 9110 section 9.3.2). */
#define ROUTE_GET 0x1u
#define ROUTE_POST 0x2u

/* The routes, in the table's order. */
enum route_id {
	ROUTE_PAYMENT_CREATE = 0,   /* POST /payments */
	ROUTE_PAYMENT_LIST,         /* GET /payments */
	ROUTE_PAYMENT_GET,          /* GET /payments/{id} */
	ROUTE_REFUND_CREATE,        /* POST /payments/{id}/refunds */
	ROUTE_REFUND_LIST,          /* GET /payments/{id}/refunds */
	ROUTE_REFUND_GET,           /* GET /payments/{id}/refunds/{refund_id} */
	ROUTE_HEALTHZ,              /* GET /healthz */
	ROUTE_METRICS_GET,          /* GET /metrics */
	ROUTE__MAX
};

struct route {
	const char *pattern;
	unsigned method;            /* ROUTE_GET or ROUTE_POST */
	enum route_who who;
	/*
	 * Whether the route requires an Idempotency-Key: its requests go
	 * through keyed_precheck before the handler, which gets the key,
	 * the parsed body and the fingerprint.
	 */
	int keyed;
	const char *noun;           /* keyed: what it makes ("payment") */
	/*
	 * keyed: the body's top-level members the fingerprint leaves out
	 * (NULL-terminated, or NULL for none): what a client may change
	 * between retries without it being another request, such as its
	 * own clock or a trace id.  The handler accepts them beside its
	 * own members and uses nothing of them, so no member that changes
	 * what is done may be named here (doc/DESIGN.md, "Fingerprint
	 * exclusions"); the policy page lists them.
	 */
	const char *const *fp_ignore;
	pay_handler_fn handler;
};

extern const struct route routes[ROUTE__MAX];
extern const char *const route_who_names[ROUTE_WHO__MAX];

/* The method's name as a request line has it ("GET", "POST"). */
const char *route_method_name(unsigned method);

/* The longest Allow value route_find writes ("GET, HEAD, POST"). */
#define ROUTE_ALLOW_MAX 32

enum route_status {
	ROUTE_FOUND = 0,
	ROUTE_NOT_FOUND,            /* 404: no pattern matches the path */
	ROUTE_NOT_ALLOWED           /* 405: allow lists what it answers */
};

/*
 * Finds the route of method on path.  ROUTE_FOUND with *out its row and
 * params its parameters (each "" when longer than PAY_PARAM_MAX);
 * ROUTE_NOT_ALLOWED with allow the methods the path answers;
 * ROUTE_NOT_FOUND.
 */
enum route_status route_find(const char *path, const char *method,
    const struct route **out, char params[PAY_PARAMS_MAX][PAY_PARAM_MAX + 1],
    char allow[ROUTE_ALLOW_MAX]);

#endif
