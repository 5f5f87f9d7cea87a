/* SPDX-License-Identifier: MIT */
/*
 * routes.c: prints, from the route table (src/payments/routes.h), the
 * policy page's lists as www/policy.html holds them between its marks,
 * one line each, the mark's name, a tab and the list: "keyed", the
 * endpoints that require an Idempotency-Key, and "fp-ignore", the body
 * members each leaves out of the fingerprint.
 * tests/policy.test compares them, and "make www-policy" writes the
 * page's lists again.
 */
#include <stdio.h>

#include "routes.h"

int
main(void)
{
	const char *sep = "", *nsep;
	const char *const *n;
	size_t i;

	printf("keyed\t");
	for (i = 0; i < ROUTE__MAX; i++) {
		if (!routes[i].keyed)
			continue;
		printf("%s<code>%s %s</code>", sep,
		    route_method_name(routes[i].method), routes[i].pattern);
		sep = ", ";
	}
	printf("\nfp-ignore\t");
	sep = "";
	for (i = 0; i < ROUTE__MAX; i++) {
		if (routes[i].fp_ignore == NULL || routes[i].fp_ignore[0] ==
		    NULL)
			continue;
		printf("%s<code>%s %s</code>: ", sep,
		    route_method_name(routes[i].method), routes[i].pattern);
		nsep = "";
		for (n = routes[i].fp_ignore; *n != NULL; n++) {
			printf("%s<code>%s</code>", nsep, *n);
			nsep = ", ";
		}
		sep = "; ";
	}
	printf("%s\n", *sep == '\0' ? "none" : "");
	return ferror(stdout) || fflush(stdout) != 0;
}
