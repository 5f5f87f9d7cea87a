/* SPDX-License-Identifier: MIT */
/*
 * idemctl.h: what the commands of idemctl share (idemctl.c holds main,
 * the options and the dispatch; each idemctl_*.c a group of commands).
 *
 * Exit statuses (doc/idemctl.8): CTL_OK, CTL_FAIL (the store, the
 * provider or the system failed), CTL_USAGE (the command line is
 * wrong), CTL_ABSENT (inspect: no such key).
 */
#ifndef IDEMCTL_H
#define IDEMCTL_H

#include <stdint.h>

#include "buf.h"
#include "cfg.h"
#include "keyhash.h"
#include "store.h"

enum ctl_exit {
	CTL_OK = 0,
	CTL_FAIL = 1,
	CTL_USAGE = 2,
	CTL_ABSENT = 3
};

/* The configuration: the responder's environment, then -d, -p, -s. */
extern struct config ctl_cfg;
/* Set by --json: commands that can print JSON do. */
extern int ctl_json;

/* Prints the usage on stderr and exits with CTL_USAGE. */
void ctl_usage(void) __attribute__((noreturn));

/*
 * Parses a command's options: --json (and -j) for every command, and
 * the letters in opts (getopt(3) syntax) passed to fn, which returns 0
 * or -1 for a bad value.  Returns optind; exits with CTL_USAGE on
 * anything else.
 */
int ctl_options(int argc, char *argv[], const char *opts,
    int (*fn)(void *ctx, int ch, const char *arg), void *ctx);

/* A whole number from 1 to max, or -1. */
long long ctl_number(const char *s, long long max);

/*
 * The store, opened; exits with CTL_FAIL (after a message) when it fails
 * or does not exist (ctl_need_store).
 */
struct store *ctl_store(int read_only);

/*
 * The library's options as the configuration gives them (the store, its
 * bounds, the application's tables, the key file), for the commands that
 * work through idem.h.  ctl_idem opens a handle with opt; exits with
 * CTL_FAIL (after a message) when it fails or the store does not exist
 * (ctl_need_store).
 */
struct idem_options;
void ctl_idem_options(struct idem_options *opt);
struct idem *ctl_idem(const struct idem_options *opt);

/*
 * Exits with CTL_FAIL, after a message naming what and dir, unless dir
 * holds an LMDB environment.  idemctl reads and changes stores and never
 * makes one: a mistyped directory or a forgotten variable must fail, not
 * show an empty store's zero counts (the responder creates the store).
 */
void ctl_need_lmdb(const char *what, const char *dir);

/* ctl_need_lmdb for the idempotency store, unless it is PostgreSQL's. */
void ctl_need_store(void);

/*
 * Exits with CTL_FAIL, after a message naming the settings, unless the
 * configuration names the payment provider (config_provider_check).
 * Every command that calls the provider calls this first, before it
 * opens the store.
 */
void ctl_need_provider(void);

/* ctl_need_lmdb for the simulated provider's ledger, when it is the one. */
void ctl_need_ledger(void);

/* The key's name in the responder's log ("-" without the secret). */
void ctl_keyhash(const char *scope, const char *key,
    char out[KEYHASH_HEX + 1]);

/* Writes b to stdout; CTL_OK, or CTL_FAIL when it cannot. */
int ctl_print(const struct buf *b);

/* A list of named counts, printed as lines or as one JSON object. */
struct ctl_field {
	const char *name;
	unsigned long long value;
};

/*
 * Prints f as "name: value" lines or, with --json, one JSON object;
 * interrupted, unless negative, is the object's "interrupted" member
 * (a command a signal ended before its work was done).
 */
int ctl_print_fields(const struct ctl_field *f, size_t n, int interrupted);

/*
 * Whether progress lines go to stderr: only when it is a terminal, so
 * that logs and pipes get the summary alone.
 */
int ctl_progress_on(void);

/* The commands. */
int ctl_stats(int argc, char *argv[]);
int ctl_inspect(int argc, char *argv[]);
int ctl_stuck(int argc, char *argv[]);
int ctl_purge(int argc, char *argv[]);
int ctl_resume(int argc, char *argv[]);

#endif
