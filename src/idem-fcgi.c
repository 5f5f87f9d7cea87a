/*
 * idem-fcgi: the idem payments responder.
 *
 * Under a FastCGI process manager (spawn-fcgi, mod_fcgid, lighttpd) it
 * answers requests until told to stop; run as a CGI program it answers
 * one.  Configuration comes from the environment (see cfg.h and
 * idem-fcgi(8)).
 */
#include <stdio.h>
#include <stdlib.h>

#include "app.h"
#include "cfg.h"
#include "crypto.h"
#include "err.h"
#include "server.h"

int
main(void)
{
	struct server_config sc;
	struct config cfg;
	struct app *app;
	char err[256];
	int rc;

	if (crypto_init() != IDEM_OK) {
		fprintf(stderr, "idem-fcgi: libsodium failed to start\n");
		return 1;
	}
	if (config_load(&cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "idem-fcgi: %s\n", err);
		return 1;
	}
	/*
	 * The store is opened here, in the worker itself: spawn-fcgi and
	 * mod_fcgid fork before exec, so every worker has its own LMDB
	 * environment, as LMDB requires.
	 */
	if (app_open(&cfg, &app, err, sizeof(err)) != 0) {
		fprintf(stderr, "idem-fcgi: %s\n", err);
		return 1;
	}
	sc.body_limit = cfg.body_limit;
	sc.mount = cfg.mount;
	rc = server_run(&sc, app_handle, app);
	app_close(app);
	return rc;
}
