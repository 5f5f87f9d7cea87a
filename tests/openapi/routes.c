/* SPDX-License-Identifier: MIT */
/*
 * routes.c: prints what the responder answers, for tests/openapi.test to
 * hold the OpenAPI description (www/openapi.json) against: a line
 * "route METHOD PATTERN WHO keyed|unkeyed" per row of the route table
 * (src/payments/routes.h), WHO one of route_who_names with spaces as
 * "-", and a line "problem SLUG STATUS" per problem type
 * (src/http/problem.h).
 */
#include <stdio.h>
#include <string.h>

#include "problem.h"
#include "routes.h"

int
main(void)
{
	const char *who;
	size_t i;

	for (i = 0; i < ROUTE__MAX; i++) {
		who = route_who_names[routes[i].who];
		printf("route %s %s ", route_method_name(routes[i].method),
		    routes[i].pattern);
		for (; *who != '\0'; who++)
			putchar(*who == ' ' ? '-' : *who);
		printf(" %s\n", routes[i].keyed ? "keyed" : "unkeyed");
	}
	for (i = 0; i < PROBLEM__MAX; i++)
		printf("problem %s %d\n", problem_slug((enum problem)i),
		    problem_status((enum problem)i));
	return ferror(stdout) || fflush(stdout) != 0;
}
