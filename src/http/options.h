/* SPDX-License-Identifier: MIT */
/*
 * options.h: the command line of a FastCGI program (idem-fcgi,
 * idem-provider), read before anything else.
 */
#ifndef HTTP_OPTIONS_H
#define HTTP_OPTIONS_H

/*
 * Answers --help (usage on stdout) and --version ("name (package)
 * version") and exits 0, or exits 2 with usage on stderr for any other
 * option or argument; returns when there are none.  Nothing is read from
 * the configuration and nothing is created first.  A CGI server may pass
 * a query string without "=" as arguments (RFC 3875 section 4.4, the
 * search string), which a script may ignore: with GATEWAY_INTERFACE set
 * the arguments are the request's, not ours, and this returns at once.
 */
void options_read(int argc, char *argv[], const char *name,
    const char *usage);

#endif
