/* SPDX-License-Identifier: MIT */
/*
 * glue.c: the payments application opened for a schedule.
 *
 * app_open_with puts the schedule's store backend (the simulation store,
 * simstore.c, or LMDB with the simulator's yields, lmdbwrap.c) and clock
 * in place; the provider (simprov.c) and the fault points and clock of
 * simenv.c are linked in place of provider.c and fault.c.  Each worker
 * gets its own application, as each worker process has its own; they
 * share one directory per schedule (the LMDB environment, the metrics
 * file, the log secret and the key file that seals the store at rest),
 * on /dev/shm when there is one.  The checks read the store below the
 * library, and open what it sealed as the library does.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "cfg.h"
#include "check.h"
#include "err.h"
#include "fault.h"
#include "glue.h"
#include "idem_backend.h"
#include "lmdbwrap.h"
#include "problem.h"
#include "resume.h"
#include "seal.h"
#include "shared.h"
#include "sim.h"
#include "simprov.h"
#include "simstore.h"
#include "store.h"

static char dir[64];
static char secret[96];
static struct sealer *sealer;
static struct store *purger;

static const struct store_ops *
backend(void)
{
	return W.backend == SIM_LMDB ? &lmdbwrap_ops : &sim_store_ops;
}

const char *
backend_name(void)
{
	return backend()->name;
}

static uint64_t
glue_clock(void *ctx)
{
	(void)ctx;
	return clock_now_ms();
}

static void
glue_config(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->db_dir, sizeof(cfg->db_dir), "%s", dir);
	snprintf(cfg->provider_dir, sizeof(cfg->provider_dir), "%s", dir);
	/* simprov.c, linked in place of the in-process provider. */
	cfg->provider = CONFIG_PROVIDER_SIMULATED;
	snprintf(cfg->keys_file, sizeof(cfg->keys_file), "%s/keys", dir);
	snprintf(cfg->secret_file, sizeof(cfg->secret_file), "%s", secret);
	cfg->ttl_ms = W.ttl_ms;
	cfg->lease_ms = W.lease_ms;
	cfg->body_limit = 65536;
	cfg->map_size = 16 << 20;
	cfg->keys_per_account = W.backend == SIM_LMDB ?
	    W.pf.keys_per_account : 0;
	cfg->fp_mode = IDEM_FP_CANONICAL;
	cfg->auth_mode = AUTH_MODE_REMOTE_USER;
	strcpy(cfg->metrics_account, "metrics");
	strcpy(cfg->problem_base, "/problems/");
}

static void
dir_remove(void)
{
	struct dirent *de;
	char path[512];
	DIR *d;

	if (dir[0] == '\0' || (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
	dir[0] = '\0';
}

void
glue_world_begin(void)
{
	struct store_config sc;
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" :
	    getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
	char err[256];

	snprintf(dir, sizeof(dir), "%s/idem-sim-XXXXXX", base);
	if (mkdtemp(dir) == NULL) {
		perror("sim: mkdtemp");
		abort();
	}
	snprintf(secret, sizeof(secret), "%s/secret", dir);
	if (seal_new_file(secret, err, sizeof(err)) != IDEM_OK ||
	    seal_load(secret, &sealer, err, sizeof(err)) != IDEM_OK) {
		fprintf(stdout, "sim: %s\n", err);
		abort();
	}
	simstore_reset();
	simprov_reset();
	memset(&sc, 0, sizeof(sc));
	sc.dir = dir;
	sc.map_size = 16 << 20;
	sc.tables = pay_tables;
	sc.backend = backend();
	if (store_open(&sc, &purger) != IDEM_OK)
		abort();
}

void
glue_world_end(void)
{
	store_close(purger);
	purger = NULL;
	seal_free(sealer);
	sealer = NULL;
	simstore_reset();
	simprov_reset();
	dir_remove();
}

/* The app's handle, on the schedule's backend. */
static int
glue_open_idem(const struct idem_options *opt, struct idem **out)
{
	return idem__open_backend(opt, backend(), out);
}

void *
glue_app_open(int worker)
{
	struct app_inject inj = { glue_open_idem, glue_clock, NULL, NULL };
	struct config cfg;
	struct app *a;
	char err[256];

	(void)worker;
	glue_config(&cfg);
	if (app_open_with(&cfg, &inj, &a, err, sizeof(err)) != 0) {
		fprintf(stdout, "sim: app_open: %s\n", err);
		abort();
	}
	/*
	 * app_open points the problem types' base at its own configuration
	 * (problem_set_base: the string must outlive every problem), which
	 * is one process's lifetime in production; here workers die and
	 * restart within one process, so the base is a literal.
	 */
	problem_set_base("/problems/");
	return a;
}

void
glue_app_crash(void *app)
{
	app_close(app);
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

int
glue_purge(uint64_t now_ms, size_t max, size_t *purged)
{
	return store_purge(purger, now_ms, max, purged);
}

int
glue_resume(void *app, size_t batch, size_t limit, int all,
    void (*taking)(void *ctx, const char *scope, const char *key),
    void *ctx, struct pay_resume_counts *counts)
{
	struct pay_resume_opts o;
	struct pay_env env;

	memset(counts, 0, sizeof(*counts));
	app_env(app, &env);
	if (env.open_rc != IDEM_OK)
		return -1;
	memset(&o, 0, sizeof(o));
	o.batch = batch;
	o.limit = limit;
	o.all = all;
	o.taking = taking;
	o.taking_ctx = ctx;
	return pay_resume_run(&env, &o, counts) == IDEM_OK ? 0 : -1;
}

int
truth_lookup(const char *scope, const char *key, struct rec *out)
{
	void *mem = NULL;
	int rc;

	rc = W.backend == SIM_LMDB ? lmdbwrap_lookup(purger, scope, key, out) :
	    simstore_peek(scope, key, out);
	if (rc != IDEM_OK)
		return rc;
	if (out->state == REC_IN_PROGRESS)
		rc = store_unseal_point(sealer, scope, key, out);
	else if ((rc = store_unseal_response(sealer, scope, key, out, &mem)) ==
	    IDEM_OK && mem != NULL) {
		/* A completed record keeps no recovery point in its block. */
		free(out->mem);
		out->mem = mem;
	}
	if (rc != IDEM_OK)
		rec_free(out);
	return rc;
}

int
truth_row(const char *table, const void *key, size_t keylen,
    struct buf *out)
{
	struct buf raw = BUF_INIT;
	int rc;

	rc = W.backend == SIM_LMDB ?
	    lmdbwrap_row(purger, table, key, keylen, &raw) :
	    simstore_row(table, key, keylen, &raw);
	if (rc == IDEM_OK)
		rc = store_unseal_row(sealer, table, key, keylen, raw.data,
		    raw.len, out);
	buf_free(&raw);
	return rc;
}
