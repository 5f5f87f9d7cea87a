/* SPDX-License-Identifier: MIT */
/*
 * idem-fcgi: the idem payments responder.
 *
 * Under a FastCGI process manager (spawn-fcgi, mod_fcgid, lighttpd) it
 * answers requests until told to stop; run as a CGI program it answers
 * one.  Configuration comes from the environment (see cfg.h and
 * idem-fcgi(8)); the command line takes only --help, --version and
 * --check-config.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "app.h"
#include "auth.h"
#include "cfg.h"
#include "crypto.h"
#include "err.h"
#include "options.h"
#include "problem.h"
#include "request.h"
#include "seal.h"
#include "server.h"
#include "store.h"

/*
 * Refuses to serve with a broken configuration.  The reason goes to the
 * log; a CGI client gets a 500 problem that does not leak it, with a
 * Request-Id (the web server's own, as request.h reads it, or one made
 * up; never the client's X-Request-Id) that the log line names.
 */
static int
fail(const char *why)
{
	struct response resp;
	char made[REQ_ID_MADE + 1];
	const char *given = getenv("REQUEST_ID");
	const char *rid;

	if (given == NULL || *given == '\0')
		given = getenv("UNIQUE_ID");
	rid = req_id(given, made);

	resp_init(&resp);
	resp.instance = rid;
	problem_build(&resp, PROBLEM_INTERNAL, "The service is not configured "
	    "correctly; nothing was done.  Retry later.");
	resp_header(&resp, "Cache-Control", "no-store");
	resp_header(&resp, "Request-Id", "%s", rid);
	if (server_fail(&resp))
		fprintf(stderr, "idem-fcgi: %s; answered 500 rid=%s\n", why,
		    rid);
	else
		fprintf(stderr, "idem-fcgi: %s\n", why);
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

/*
 * --check-config: reads the configuration as a start does (config_load,
 * config_provider_check, the key file and the keys file as the worker
 * loads them) and looks at the stores without creating or writing
 * anything: the LMDB directories are looked at, a PostgreSQL store is
 * opened read-only (no migration).  Prints what it found on stdout and
 * exits 0, or the first error on stderr and exits 1.
 */
static int
check_config(void)
{
	struct auth_keys *keys;
	struct config cfg;
	struct store *st;
	char err[PATH_MAX + 256], note[128], pnote[128];
	int rc;

	if (crypto_init() != IDEM_OK) {
		fprintf(stderr, "idem-fcgi: libsodium failed to start\n");
		return 1;
	}
	if (config_load(&cfg, err, sizeof(err)) != 0 ||
	    config_provider_check(&cfg, err, sizeof(err)) != 0)
		goto fail;
	if (cfg.secret_file[0] != '\0' &&
	    (options_check_file("IDEM_SECRET_FILE", cfg.secret_file, err,
	    sizeof(err)) != 0 ||
	    check_secret(cfg.secret_file, err, sizeof(err)) != 0))
		goto fail;
	if (app_keys_load(&cfg, &keys, err, sizeof(err)) != 0)
		goto fail;
	auth_keys_free(keys);
	if (cfg.store[0] != '\0') {
		struct store_config sc = { cfg.store, cfg.map_size, 1, 0, 0,
		    NULL, NULL, cfg.pg_connect_timeout_s,
		    cfg.pg_statement_timeout_ms, cfg.pg_lock_timeout_ms,
		    cfg.pg_pool_wait_ms };

		if ((rc = store_open(&sc, &st)) != IDEM_OK) {
			snprintf(err, sizeof(err), "IDEM_STORE: the PostgreSQL "
			    "store does not open: %s", idem_strerror(rc));
			goto fail;
		}
		store_close(st);
		snprintf(note, sizeof(note), "PostgreSQL, opens");
	} else if (options_check_lmdb("IDEM_DB_DIR", cfg.db_dir, note,
	    sizeof(note), err, sizeof(err)) != 0)
		goto fail;
	if (cfg.provider == CONFIG_PROVIDER_SIMULATED &&
	    options_check_lmdb("IDEM_PROVIDER_DIR", cfg.provider_dir, pnote,
	    sizeof(pnote), err, sizeof(err)) != 0)
		goto fail;
	printf("idem-fcgi: configuration ok\n"
	    "store: %s (%s)\n"
	    "keys file: %s (IDEM_AUTH=%s)\n"
	    "secret file: %s\n",
	    cfg.store[0] != '\0' ? "IDEM_STORE" : cfg.db_dir, note,
	    cfg.keys_file, auth_mode_name(cfg.auth_mode),
	    cfg.secret_file[0] != '\0' ? cfg.secret_file :
	    "none (stored in the clear)");
	if (cfg.replay_cache_bytes > 0)
		printf("replay cache: %zu bytes a worker\n",
		    cfg.replay_cache_bytes);
	else
		printf("replay cache: none\n");
	if (cfg.provider == CONFIG_PROVIDER_SIMULATED)
		printf("provider: simulated, ledger %s (%s)\n",
		    cfg.provider_dir, pnote);
	else
		printf("provider: service at %s\n", cfg.provider_url);
	return fflush(stdout) == 0 ? 0 : 1;
fail:
	fprintf(stderr, "idem-fcgi: %s\n", err);
	return 1;
}

static const char usage_text[] =
    "usage: idem-fcgi\n"
    "       idem-fcgi --check-config | --help | --version\n"
    "A FastCGI responder (or, with no FastCGI socket on standard input, one\n"
    "CGI request), configured by IDEM_* environment variables: see\n"
    "idem-fcgi(8).  The payment provider must be named: IDEM_PROVIDER_URL=\n"
    "http://HOST:PORT, or IDEM_PROVIDER=simulated for tests.\n"
    "  --check-config  validate the configuration and exit (0 ok, 1 not);\n"
    "                  nothing is created or written\n"
    "  --help          this text\n"
    "  --version       the program's name and version\n";

int
main(int argc, char *argv[])
{
	struct server_config sc;
	struct config cfg;
	struct app *app;
	char err[256];
	int rc;

	if (options_read(argc, argv, "idem-fcgi", usage_text) ==
	    OPTIONS_CHECK_CONFIG)
		return check_config();
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
