/* SPDX-License-Identifier: MIT */
/*
 * idem-fcgi: the idem payments responder.
 *
 * Under a FastCGI process manager (spawn-fcgi, mod_fcgid, lighttpd) it
 * answers requests until told to stop; run as a CGI program it answers
 * one.  Configuration comes from the environment (see cfg.h and
 * idem-fcgi(8)); the command line takes only --help and --version.
 */
#include <stdio.h>
#include <stdlib.h>

#include "app.h"
#include "cfg.h"
#include "crypto.h"
#include "err.h"
#include "options.h"
#include "problem.h"
#include "seal.h"
#include "server.h"

/*
 * Refuses to serve with a broken configuration.  The reason goes to the
 * log; a CGI client gets a 500 problem that does not leak it.
 */
static int
fail(const char *why)
{
	struct response resp;

	fprintf(stderr, "idem-fcgi: %s\n", why);
	resp_init(&resp);
	problem_build(&resp, PROBLEM_INTERNAL, "The service is not configured "
	    "correctly; nothing was done.  Retry later.");
	server_fail(&resp);
	resp_free(&resp);
	return 1;
}

/* Whether the key file at path loads: 0, or -1 with the reason in err. */
static int
check_secret(const char *path, char *err, size_t errlen)
{
	struct sealer *s;

	if (seal_load(path, &s, err, errlen) != IDEM_OK)
		return -1;
	seal_free(s);
	return 0;
}

static const char usage_text[] =
    "usage: idem-fcgi\n"
    "       idem-fcgi --help | --version\n"
    "A FastCGI responder (or, with no FastCGI socket on standard input, one\n"
    "CGI request), configured by IDEM_* environment variables: see\n"
    "idem-fcgi(8).  The payment provider must be named: IDEM_PROVIDER_URL=\n"
    "http://HOST:PORT, or IDEM_PROVIDER=simulated for tests.\n";

int
main(int argc, char *argv[])
{
	struct server_config sc;
	struct config cfg;
	struct app *app;
	char err[256];
	int rc;

	options_read(argc, argv, "idem-fcgi", usage_text);
	if (crypto_init() != IDEM_OK)
		return fail("libsodium failed to start");
	/* A worker that may not charge must not open the store either. */
	if (config_load(&cfg, err, sizeof(err)) != 0 ||
	    config_provider_check(&cfg, err, sizeof(err)) != 0)
		return fail(err);
	/*
	 * A key file that cannot be read or parsed stops the worker at
	 * start, with the reason, rather than answering every request with
	 * a 503 (the application opens its store lazily, and would).
	 */
	if (cfg.secret_file[0] != '\0' &&
	    check_secret(cfg.secret_file, err, sizeof(err)) != 0)
		return fail(err);
	/* Before any thread: the HTTP client's global state. */
	if (provider_global_init() != IDEM_OK)
		return fail("the HTTP client failed to start");
	/*
	 * The store is opened here, in the worker itself: spawn-fcgi and
	 * mod_fcgid fork before exec, so every worker has its own LMDB
	 * environment, as LMDB requires.
	 */
	if (app_open(&cfg, &app, err, sizeof(err)) != 0)
		return fail(err);
	sc.body_limit = cfg.body_limit;
	sc.mount = cfg.mount;
	sc.threads = cfg.threads;
	rc = server_run(&sc, app_handle, app);
	app_close(app);
	return rc;
}
