/* SPDX-License-Identifier: MIT */
/*
 * routes.c: the route table and its matcher (routes.h).
 */
#include <stdio.h>
#include <string.h>

#include "get.h"
#include "post.h"
#include "refund_get.h"
#include "refund_post.h"
#include "routes.h"
#include "status.h"

/*
 * What a client sends about its own attempt rather than about the
 * payment: the time on its clock when it sent it (any JSON value; a
 * retry sends a later one) and the id its tracing gave the attempt.
 * Neither is stored nor shown back; a retry that changes, adds or drops
 * them is the same request.
 */
static const char *const route_attempt_members[] = {
	"client_timestamp", "trace_id", NULL
};

const struct route routes[ROUTE__MAX] = {
	[ROUTE_PAYMENT_CREATE] = { "/payments", ROUTE_POST, ROUTE_ACCOUNT,
	    1, "payment", route_attempt_members, pay_post },
	[ROUTE_PAYMENT_LIST] = { "/payments", ROUTE_GET, ROUTE_ACCOUNT,
	    0, NULL, NULL, pay_list },
	[ROUTE_PAYMENT_GET] = { "/payments/{id}", ROUTE_GET, ROUTE_ACCOUNT,
	    0, NULL, NULL, pay_get },
	[ROUTE_REFUND_CREATE] = { "/payments/{id}/refunds", ROUTE_POST,
	    ROUTE_ACCOUNT, 1, "refund", route_attempt_members, refund_post },
	[ROUTE_REFUND_LIST] = { "/payments/{id}/refunds", ROUTE_GET,
	    ROUTE_ACCOUNT, 0, NULL, NULL, refund_list },
	[ROUTE_REFUND_GET] = { "/payments/{id}/refunds/{refund_id}",
	    ROUTE_GET, ROUTE_ACCOUNT, 0, NULL, NULL, refund_get },
	[ROUTE_HEALTHZ] = { "/healthz", ROUTE_GET, ROUTE_ANYONE, 0, NULL, NULL,
	    pay_healthz },
	[ROUTE_METRICS_GET] = { "/metrics", ROUTE_GET, ROUTE_METRICS, 0, NULL,
	    NULL, pay_metrics },
};

const char *const route_who_names[ROUTE_WHO__MAX] = {
	"anyone", "account", "metrics account"
};

const char *
route_method_name(unsigned method)
{
	return method == ROUTE_POST ? "POST" : "GET";
}

/* The route method a request's method is, 0 for none of the table's. */
static unsigned
route_method_of(const char *method)
{
	if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
		return ROUTE_GET;
	if (strcmp(method, "POST") == 0)
		return ROUTE_POST;
	return 0;
}

/* Whether path matches pat, its parameters copied into params. */
static int
route_match(const char *pat, const char *path,
    char params[PAY_PARAMS_MAX][PAY_PARAM_MAX + 1])
{
	size_t np = 0, n;

	while (*pat != '\0') {
		if (*pat != '{') {
			if (*pat++ != *path++)
				return 0;
			continue;
		}
		pat = strchr(pat, '}') + 1;
		if (np == PAY_PARAMS_MAX)
			return 0;
		n = strcspn(path, "/");
		if (n > PAY_PARAM_MAX)
			n = 0;
		memcpy(params[np], path, n);
		params[np++][n] = '\0';
		path += strcspn(path, "/");
	}
	return *path == '\0';
}

enum route_status
route_find(const char *path, const char *method, const struct route **out,
    char params[PAY_PARAMS_MAX][PAY_PARAM_MAX + 1],
    char allow[ROUTE_ALLOW_MAX])
{
	unsigned want = route_method_of(method), have = 0;
	size_t i;

	for (i = 0; i < ROUTE__MAX; i++) {
		if (!route_match(routes[i].pattern, path, params))
			continue;
		if (routes[i].method == want) {
			*out = &routes[i];
			return ROUTE_FOUND;
		}
		have |= routes[i].method;
	}
	if (have == 0)
		return ROUTE_NOT_FOUND;
	snprintf(allow, ROUTE_ALLOW_MAX, "%s%s%s",
	    have & ROUTE_GET ? "GET, HEAD" : "",
	    (have & ROUTE_GET) && (have & ROUTE_POST) ? ", " : "",
	    have & ROUTE_POST ? "POST" : "");
	return ROUTE_NOT_ALLOWED;
}
