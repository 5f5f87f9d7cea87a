/* SPDX-License-Identifier: MIT */
/*
 * lmdbwrap.c: the real LMDB store (store_lmdb_ops) under the simulator.
 *
 * A backend that decorates store_lmdb_ops: each operation yields before
 * it runs and after it commits, exactly where the simulation store
 * yields, and calls the LMDB backend in between with yields off, so the
 * store's own code runs unchanged: its transactions, group commit (always
 * a batch of one here: there is one thread), indexes, quota and purge.
 * Nothing yields inside a transaction, so LMDB's write lock is never held
 * across a yield.  Each schedule gets a fresh environment in a directory
 * on /dev/shm (syncs cost nothing there; LMDB's crash safety is LMDB's to
 * prove, the simulator checks what idem builds on it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "err.h"
#include "lmdbwrap.h"
#include "sim.h"
#include "store.h"

/* A handle: ours first (idem sets its clock), the LMDB one inside. */
struct wrap {
	struct store base;
	struct store *in;
};

static struct store *
inner(struct store *s)
{
	struct wrap *w = (struct wrap *)s;

	/* Completions and take-overs date themselves by idem's clock. */
	w->in->clock = w->base.clock;
	w->in->clock_ctx = w->base.clock_ctx;
	W.in_store = 1;
	return w->in;
}

static int
done(int rc)
{
	W.in_store = 0;
	return rc;
}

static int
w_open(const struct store_config *cfg, struct store **out)
{
	struct wrap *w;
	int rc;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return IDEM_ENOMEM;
	if ((rc = store_lmdb_ops.open(cfg, &w->in)) != IDEM_OK) {
		free(w);
		return rc;
	}
	w->base.ops = &lmdbwrap_ops;
	*out = &w->base;
	return IDEM_OK;
}

static void
w_close(struct store *s)
{
	struct wrap *w = (struct wrap *)s;

	store_lmdb_ops.close(w->in);
	free(w);
}

static int
w_lookup(struct store *s, const char *scope, const char *key,
    struct rec *out)
{
	sim_yield("store_lookup");
	return done(store_lmdb_ops.lookup(inner(s), scope, key, out));
}

static int
w_claim(struct store *s, const char *scope, const char *key,
    const uint8_t fp[FP_SIZE], const uint8_t token[REC_TOKEN_SIZE],
    uint64_t now_ms, uint64_t lease_ms, uint64_t ttl_ms,
    const struct store_first *first, struct store_claim *out)
{
	int rc;

	sim_point("store_claim");
	rc = done(store_lmdb_ops.claim(inner(s), scope, key, fp, token, now_ms,
	    lease_ms, ttl_ms, first, out));
	if (rc != IDEM_OK) {
		trace("claim %s/%s: %s", scope, key, idem_strerror(rc));
		return rc;
	}
	trace("claim %s/%s: %s (attempt %u, stage %u)", scope, key,
	    trace_decision((int)out->decision), out->rec.attempts,
	    out->rec.stage);
	if (out->decision == ENGINE_CLAIM || out->decision == ENGINE_TAKEOVER)
		sim_point("store_claim_commit");
	return IDEM_OK;
}

static int
w_checkpoint(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint32_t stage, const void *cp,
    size_t cplen, uint64_t now_ms, uint64_t lease_ms)
{
	int rc;

	sim_point("store_checkpoint");
	rc = done(store_lmdb_ops.checkpoint(inner(s), scope, key, token, stage,
	    cp, cplen, now_ms, lease_ms));
	if (rc == IDEM_OK) {
		trace("checkpoint %s/%s stage %u", scope, key, stage);
		sim_point("store_checkpoint_commit");
	}
	return rc;
}

static int
w_complete(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], const struct rec_response *resp,
    idem_tx_fn hook, void *hook_ctx, uint64_t now_ms, uint64_t ttl_ms)
{
	int rc;

	sim_point("store_complete");
	rc = done(store_lmdb_ops.complete(inner(s), scope, key, token, resp,
	    hook, hook_ctx, now_ms, ttl_ms));
	if (rc != IDEM_OK) {
		trace("complete %s/%s: %s", scope, key, idem_strerror(rc));
		return rc;
	}
	trace("complete %s/%s: %d", scope, key, resp->status);
	check_on_complete(scope, key, sim_current_req());
	sim_point("store_complete_commit");
	return IDEM_OK;
}

static int
w_release(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], idem_tx_fn hook, void *hook_ctx)
{
	int rc;

	sim_point("store_release");
	rc = done(store_lmdb_ops.release(inner(s), scope, key, token, hook,
	    hook_ctx));
	if (rc == IDEM_OK) {
		trace("release %s/%s", scope, key);
		sim_point("store_release_commit");
	}
	return rc;
}

static int
w_abandon(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint64_t now_ms)
{
	int rc;

	sim_point("store_abandon");
	rc = done(store_lmdb_ops.abandon(inner(s), scope, key, token, now_ms));
	if (rc == IDEM_OK) {
		trace("abandon %s/%s", scope, key);
		sim_point("store_abandon_commit");
	}
	return rc;
}

static int
w_purge(struct store *s, uint64_t now_ms, size_t max, size_t *purged)
{
	int rc;

	sim_point("store_purge");
	rc = done(store_lmdb_ops.purge(inner(s), now_ms, max, purged));
	if (rc == IDEM_OK && *purged > 0)
		sim_point("store_purge_commit");
	return rc;
}

static int
w_get(struct store *s, const char *table, const void *key, size_t keylen,
    struct buf *out)
{
	sim_yield("store_get");
	return done(store_lmdb_ops.get(inner(s), table, key, keylen, out));
}

static int
w_insert_once(struct store *s, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen, struct buf *existing)
{
	sim_point("store_insert");
	return done(store_lmdb_ops.insert_once(inner(s), table, key, keylen,
	    val, vallen, existing));
}

static int
w_scan(struct store *s, const char *table, const void *prefix,
    size_t prefixlen, const void *from, size_t fromlen, int reverse,
    size_t limit, store_scan_fn fn, void *ctx)
{
	sim_yield("store_scan");
	return done(store_lmdb_ops.scan(inner(s), table, prefix, prefixlen,
	    from, fromlen, reverse, limit, fn, ctx));
}

static int
w_each(struct store *s, store_each_fn fn, void *ctx)
{
	return done(store_lmdb_ops.each(inner(s), fn, ctx));
}

static int
w_each_pending(struct store *s, store_each_fn fn, void *ctx)
{
	return done(store_lmdb_ops.each_pending(inner(s), fn, ctx));
}

static int
w_count(struct store *s, const char *table, size_t *n)
{
	return done(store_lmdb_ops.count(inner(s), table, n));
}

/* Hooks get the LMDB backend's own transaction: these are not reached. */
static int
w_tx_get(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void **val, size_t *vallen)
{
	return store_lmdb_ops.tx_get(tx, table, key, keylen, val, vallen);
}

static int
w_tx_put(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen)
{
	return store_lmdb_ops.tx_put(tx, table, key, keylen, val, vallen);
}

static int
w_tx_del(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen)
{
	return store_lmdb_ops.tx_del(tx, table, key, keylen);
}

const struct store_ops lmdbwrap_ops = {
	.name = "lmdb",
	.open = w_open,
	.close = w_close,
	.lookup = w_lookup,
	.claim = w_claim,
	.checkpoint = w_checkpoint,
	.complete = w_complete,
	.release = w_release,
	.abandon = w_abandon,
	.purge = w_purge,
	.get = w_get,
	.insert_once = w_insert_once,
	.scan = w_scan,
	.each = w_each,
	.each_pending = w_each_pending,
	.count = w_count,
	.tx_get = w_tx_get,
	.tx_put = w_tx_put,
	.tx_del = w_tx_del,
};

/* The committed state, read past the yields, for the checker. */
int
lmdbwrap_lookup(struct store *s, const char *scope, const char *key,
    struct rec *out)
{
	return done(store_lmdb_ops.lookup(inner(s), scope, key, out));
}

int
lmdbwrap_row(struct store *s, const char *table, const void *key,
    size_t keylen, struct buf *out)
{
	return done(store_lmdb_ops.get(inner(s), table, key, keylen, out));
}
