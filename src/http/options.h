/* SPDX-License-Identifier: MIT */
/*
 * options.h: the command line of a FastCGI program (idem-fcgi,
 * idem-provider), read before anything else, and what --check-config
 * looks at without changing it.
 */
#ifndef HTTP_OPTIONS_H
#define HTTP_OPTIONS_H

#include <stddef.h>

/* What the command line asks for. */
enum options_mode {
	OPTIONS_SERVE,         /* no options: serve (FastCGI or one CGI) */
	OPTIONS_CHECK_CONFIG   /* --check-config */
};

/*
 * Answers --help (usage on stdout) and --version ("name (package)
 * version") and exits 0, or exits 2 with usage on stderr for any other
 * option or argument; returns OPTIONS_CHECK_CONFIG for --check-config and
 * OPTIONS_SERVE when there are none.  Nothing is read from the
 * configuration and nothing is created first.  A CGI server may pass a
 * query string without "=" as arguments (RFC 3875 section 4.4, the
 * search string), which a script may ignore: with GATEWAY_INTERFACE set
 * the arguments are the request's, not ours, and this returns
 * OPTIONS_SERVE at once.
 */
enum options_mode options_read(int argc, char *argv[], const char *name,
    const char *usage);

/*
 * Looks at dir, the LMDB store directory that variable var names, as
 * --check-config does: opening nothing for writing and creating nothing.
 * Absent, or present without a store, is fine (a start creates it); a
 * store there must open for reading.  0 with a note on what is there
 * in note, or -1 with a sentence naming var in err.
 */
int options_check_lmdb(const char *var, const char *dir, char *note,
    size_t notelen, char *err, size_t errlen);

/*
 * Whether the file at path, which variable var names, opens for reading.
 * 0, or -1 with a sentence naming var in err.
 */
int options_check_file(const char *var, const char *path, char *err,
    size_t errlen);

#endif
