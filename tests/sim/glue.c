/*
 * glue.c: the application opened on the simulation store and provider.
 *
 * The provider (simprov.c) implements provider.h and is linked in place
 * of provider.c; the clock and fault points (simenv.c) replace fault.c;
 * the store is the simulation store (simstore.c) or the real LMDB store
 * with yields around its operations (lmdbwrap.c), whichever the binary
 * was linked with (backend_*).  Each worker gets its own struct app, as
 * each worker process has its own.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "check.h"
#include "err.h"
#include "glue.h"
#include "handlers.h"
#include "sim.h"
#include "simprov.h"

static void
glue_config(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->ttl_ms = W.ttl_ms;
	cfg->lease_ms = W.lease_ms;
	cfg->body_limit = 65536;
	cfg->fp_mode = FP_CANONICAL;
	cfg->auth_mode = AUTH_MODE_REMOTE_USER;
	strcpy(cfg->metrics_account, "metrics");
	strcpy(cfg->problem_base, "/problems/");
}

void *
glue_app_open(int worker)
{
	struct store_config sc;
	struct provider_config pc = { "sim", 0, 0, PROVIDER_FAIL_NONE, 0 };
	struct app *a;

	(void)worker;
	if ((a = calloc(1, sizeof(*a))) == NULL)
		abort();
	glue_config(&a->cfg);
	backend_store_config(&sc);
	a->cfg.keys_per_account = sc.max_keys_per_scope;
	if (pthread_mutex_init(&a->open_mu, NULL) != 0 ||
	    store_open(&sc, &a->store) != IDEM_OK ||
	    provider_open(&pc, &a->provider) != IDEM_OK)
		abort();
	/* A fixed log secret: keyhashes only name keys in the log. */
	memset(a->secret, 7, sizeof(a->secret));
	a->have_secret = 1;
	return a;
}

void
glue_app_crash(void *app)
{
	glue_app_close(app);
}

void
glue_app_close(void *app)
{
	app_close(app);
}

void
glue_app_handle(void *app, enum req_status st, const struct request *req,
    struct response *resp)
{
	app_handle(app, st, req, resp);
}
