/* SPDX-License-Identifier: MIT */
/*
 * options.c: --help, --version, --check-config and usage errors for the
 * FastCGI programs.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "options.h"

enum options_mode
options_read(int argc, char *argv[], const char *name, const char *usage)
{
	static const struct option longs[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "check-config", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 }
	};
	enum options_mode mode = OPTIONS_SERVE;
	int ch;

	if (getenv("GATEWAY_INTERFACE") != NULL)
		return OPTIONS_SERVE;
	while ((ch = getopt_long(argc, argv, "hV", longs, NULL)) != -1) {
		switch (ch) {
		case 'h':
			fputs(usage, stdout);
			exit(fflush(stdout) == 0 ? 0 : 1);
		case 'V':
			printf("%s (%s) %s\n", name, PACKAGE_NAME,
			    PACKAGE_VERSION);
			exit(fflush(stdout) == 0 ? 0 : 1);
		case 'c':
			mode = OPTIONS_CHECK_CONFIG;
			break;
		default:
			fputs(usage, stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		fputs(usage, stderr);
		exit(2);
	}
	return mode;
}

int
options_check_file(const char *var, const char *path, char *err,
    size_t errlen)
{
	int fd;

	if ((fd = file_open_regular(path)) == FILE_NOT_REGULAR) {
		snprintf(err, errlen, "%s %s: not a regular file (a FIFO, a "
		    "device or a directory)", var, path);
		return -1;
	}
	if (fd == -1) {
		snprintf(err, errlen, "%s %s: %s", var, path, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

int
options_check_lmdb(const char *var, const char *dir, char *note,
    size_t notelen, char *err, size_t errlen)
{
	char path[4096];
	struct stat st;

	if (stat(dir, &st) != 0) {
		if (errno != ENOENT) {
			snprintf(err, errlen, "%s %s: %s", var, dir,
			    strerror(errno));
			return -1;
		}
		snprintf(note, notelen, "absent: a start creates it");
		return 0;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s %s: not a directory", var, dir);
		return -1;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/data.mdb", dir) >=
	    sizeof(path)) {
		snprintf(err, errlen, "%s %s: the name is too long", var, dir);
		return -1;
	}
	if (access(path, F_OK) != 0 && errno == ENOENT) {
		snprintf(note, notelen, "no store yet: a start creates it");
		return 0;
	}
	if (options_check_file(var, path, err, errlen) != 0)
		return -1;
	snprintf(note, notelen, "a store, readable");
	return 0;
}
