/* SPDX-License-Identifier: MIT */
/*
 * options.c: --help, --version and usage errors for the FastCGI programs.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "options.h"

void
options_read(int argc, char *argv[], const char *name, const char *usage)
{
	static const struct option longs[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int ch;

	if (getenv("GATEWAY_INTERFACE") != NULL)
		return;
	while ((ch = getopt_long(argc, argv, "hV", longs, NULL)) != -1) {
		switch (ch) {
		case 'h':
			fputs(usage, stdout);
			exit(fflush(stdout) == 0 ? 0 : 1);
		case 'V':
			printf("%s (%s) %s\n", name, PACKAGE_NAME,
			    PACKAGE_VERSION);
			exit(fflush(stdout) == 0 ? 0 : 1);
		default:
			fputs(usage, stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		fputs(usage, stderr);
		exit(2);
	}
}
