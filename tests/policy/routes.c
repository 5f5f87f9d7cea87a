/* SPDX-License-Identifier: MIT */
/*
 * routes.c: prints, from the route table (src/payments/routes.h), the
 * policy page's list of the endpoints that require an Idempotency-Key,
 * as www/policy.html holds it between its "keyed" marks:
 * tests/policy.test compares the two, and "make www-policy" writes the
 * page's list again.
 */
#include <stdio.h>

#include "routes.h"

int
main(void)
{
	const char *sep = "";
	size_t i;

	for (i = 0; i < ROUTE__MAX; i++) {
		if (!routes[i].keyed)
			continue;
		printf("%s<code>%s %s</code>", sep,
		    route_method_name(routes[i].method), routes[i].pattern);
		sep = ", ";
	}
	printf("\n");
	return ferror(stdout) || fflush(stdout) != 0;
}
