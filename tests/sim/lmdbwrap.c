/*
 * lmdbwrap.c: the real LMDB store (store_lmdb.c) under the simulator.
 *
 * The application's calls to the store are routed through these wrappers
 * (the linker's --wrap: a call to store_claim from handlers.c or idem.c
 * lands in __wrap_store_claim, which calls the real one as
 * __real_store_claim, so each operation yields before it runs and after
 * it commits, exactly as the simulation store does, while the store's own
 * code runs unchanged: its transactions, group commit (always a batch of
 * one here: there is one thread)), indexes, quota and purge.  Nothing
 * yields inside a transaction, so LMDB's write lock is never held across
 * a yield.  Each schedule gets a fresh environment in a directory on
 * /dev/shm (syncs cost nothing there; LMDB's crash safety is LMDB's to
 * prove, the simulator checks what idem builds on it).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "err.h"
#include "glue.h"
#include "sim.h"
#include "simprov.h"
#include "store.h"

static char dir[64];
static int real_rc;

/*
 * Calls the real store with yields off (sim_yield does nothing while
 * W.in_store is set), whatever the store calls inside.
 */
#define REAL(call) (W.in_store = 1, real_rc = (call), W.in_store = 0, real_rc)
static struct store *purger;

int __real_store_lookup(struct store *, const char *, const char *,
    struct rec *);
int __real_store_claim(struct store *, const char *, const char *,
    const uint8_t *, const uint8_t *, uint64_t, uint64_t, uint64_t,
    const struct store_first *, struct store_claim *);
int __real_store_checkpoint(struct store *, const char *, const char *,
    const uint8_t *, uint32_t, const void *, size_t, uint64_t, uint64_t);
int __real_store_complete(struct store *, const char *, const char *,
    const uint8_t *, const struct rec_response *, const struct store_put *,
    size_t, uint64_t, uint64_t);
int __real_store_release(struct store *, const char *, const char *,
    const uint8_t *);
int __real_store_abandon(struct store *, const char *, const char *,
    const uint8_t *, uint64_t);
int __real_store_purge(struct store *, uint64_t, size_t, size_t *);
int __real_store_get(struct store *, enum store_table, const void *, size_t,
    struct buf *);
int __real_store_scan(struct store *, enum store_table, const void *,
    size_t, int, size_t, store_scan_fn, void *);

int __wrap_store_lookup(struct store *, const char *, const char *,
    struct rec *);
int __wrap_store_claim(struct store *, const char *, const char *,
    const uint8_t *, const uint8_t *, uint64_t, uint64_t, uint64_t,
    const struct store_first *, struct store_claim *);
int __wrap_store_checkpoint(struct store *, const char *, const char *,
    const uint8_t *, uint32_t, const void *, size_t, uint64_t, uint64_t);
int __wrap_store_complete(struct store *, const char *, const char *,
    const uint8_t *, const struct rec_response *, const struct store_put *,
    size_t, uint64_t, uint64_t);
int __wrap_store_release(struct store *, const char *, const char *,
    const uint8_t *);
int __wrap_store_abandon(struct store *, const char *, const char *,
    const uint8_t *, uint64_t);
int __wrap_store_purge(struct store *, uint64_t, size_t, size_t *);
int __wrap_store_get(struct store *, enum store_table, const void *, size_t,
    struct buf *);
int __wrap_store_scan(struct store *, enum store_table, const void *,
    size_t, int, size_t, store_scan_fn, void *);

int
__wrap_store_lookup(struct store *s, const char *scope, const char *key,
    struct rec *out)
{
	sim_yield("store_lookup");
	return REAL(__real_store_lookup(s, scope, key, out));
}

int
__wrap_store_claim(struct store *s, const char *scope, const char *key,
    const uint8_t *fp, const uint8_t *token, uint64_t now_ms,
    uint64_t lease_ms, uint64_t ttl_ms, const struct store_first *first,
    struct store_claim *out)
{
	int rc;

	sim_point("store_claim");
	rc = REAL(__real_store_claim(s, scope, key, fp, token, now_ms, lease_ms,
	    ttl_ms, first, out));
	if (rc != IDEM_OK) {
		trace("claim %s/%s: %s", scope, key, idem_strerror(rc));
		return rc;
	}
	trace("claim %s/%s: %s (attempt %u, stage %u)", scope, key,
	    engine_strdecision(out->decision), out->rec.attempts,
	    out->rec.stage);
	if (out->decision == ENGINE_CLAIM || out->decision == ENGINE_TAKEOVER)
		sim_point("store_claim_commit");
	return IDEM_OK;
}

int
__wrap_store_checkpoint(struct store *s, const char *scope, const char *key,
    const uint8_t *token, uint32_t stage, const void *cp, size_t cplen,
    uint64_t now_ms, uint64_t lease_ms)
{
	int rc;

	sim_point("store_checkpoint");
	rc = REAL(__real_store_checkpoint(s, scope, key, token, stage, cp, cplen,
	    now_ms, lease_ms));
	if (rc == IDEM_OK) {
		trace("checkpoint %s/%s stage %u", scope, key, stage);
		sim_point("store_checkpoint_commit");
	}
	return rc;
}

int
__wrap_store_complete(struct store *s, const char *scope, const char *key,
    const uint8_t *token, const struct rec_response *resp,
    const struct store_put *puts, size_t nputs, uint64_t now_ms,
    uint64_t ttl_ms)
{
	int rc;

	sim_point("store_complete");
	rc = REAL(__real_store_complete(s, scope, key, token, resp, puts, nputs,
	    now_ms, ttl_ms));
	if (rc != IDEM_OK) {
		trace("complete %s/%s: %s", scope, key, idem_strerror(rc));
		return rc;
	}
	trace("complete %s/%s: %d, %zu rows", scope, key, resp->status,
	    nputs);
	check_on_complete(scope, key, resp, puts, nputs, now_ms,
	    sim_current_req());
	sim_point("store_complete_commit");
	return IDEM_OK;
}

int
__wrap_store_release(struct store *s, const char *scope, const char *key,
    const uint8_t *token)
{
	int rc;

	sim_point("store_release");
	if ((rc = REAL(__real_store_release(s, scope, key, token))) == IDEM_OK) {
		trace("release %s/%s", scope, key);
		sim_point("store_release_commit");
	}
	return rc;
}

int
__wrap_store_abandon(struct store *s, const char *scope, const char *key,
    const uint8_t *token, uint64_t now_ms)
{
	int rc;

	sim_point("store_abandon");
	if ((rc = REAL(__real_store_abandon(s, scope, key, token, now_ms))) ==
	    IDEM_OK) {
		trace("abandon %s/%s", scope, key);
		sim_point("store_abandon_commit");
	}
	return rc;
}

int
__wrap_store_purge(struct store *s, uint64_t now_ms, size_t max,
    size_t *purged)
{
	int rc;

	sim_point("store_purge");
	rc = REAL(__real_store_purge(s, now_ms, max, purged));
	if (rc == IDEM_OK && *purged > 0)
		sim_point("store_purge_commit");
	return rc;
}

int
__wrap_store_get(struct store *s, enum store_table t, const void *key,
    size_t keylen, struct buf *out)
{
	sim_yield("store_get");
	return REAL(__real_store_get(s, t, key, keylen, out));
}

int
__wrap_store_scan(struct store *s, enum store_table t, const void *prefix,
    size_t prefixlen, int reverse, size_t limit, store_scan_fn fn, void *ctx)
{
	sim_yield("store_scan");
	return REAL(__real_store_scan(s, t, prefix, prefixlen, reverse, limit, fn,
	    ctx));
}

const char *
backend_name(void)
{
	return "lmdb";
}

void
backend_store_config(struct store_config *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->dir = dir;
	sc->map_size = 16 << 20;
	sc->max_keys_per_scope = W.pf.keys_per_account;
	sc->commit_delay_us = 0;
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

	snprintf(dir, sizeof(dir), "%s/idem-sim-XXXXXX", base);
	if (mkdtemp(dir) == NULL) {
		perror("sim: mkdtemp");
		abort();
	}
	simprov_reset();
	backend_store_config(&sc);
	if (store_open(&sc, &purger) != IDEM_OK)
		abort();
}

void
glue_world_end(void)
{
	store_close(purger);
	purger = NULL;
	simprov_reset();
	dir_remove();
}

int
glue_purge(uint64_t now_ms, size_t max, size_t *purged)
{
	return store_purge(purger, now_ms, max, purged);
}

int
truth_lookup(const char *scope, const char *key, struct rec *out)
{
	return REAL(__real_store_lookup(purger, scope, key, out));
}
