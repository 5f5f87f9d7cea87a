/* SPDX-License-Identifier: MIT */
/*
 * replay_cache.h: completed answers kept in memory, so that a replay is
 * served without reading the store (idem_options.replay_cache_bytes).
 *
 * A completed record never changes before it expires (doc/DESIGN.md,
 * "The replay cache"): what a read of the store found completed is what
 * every later read would find until then.  So the cache holds only
 * records read from the store as completed, with their response in the
 * clear, and gives one back only before its expiry; the engine then
 * decides on it as on the store's (engine_decide: replay, or 422 for
 * another fingerprint).  Entries are keyed by (scope, key), hashed with
 * a secret key so that clients cannot choose colliding keys, within a
 * byte budget: the least recently used go first.  One mutex guards it,
 * held for a lookup and a copy, never across a call to the store.
 */
#ifndef IDEM_REPLAY_CACHE_H
#define IDEM_REPLAY_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"

struct rcache;

/*
 * A cache of at most bytes bytes into *out (rcache_free).  bytes 0: *out
 * NULL, no cache, and every function below takes NULL as an empty one.
 * IDEM_ENOMEM.
 */
int rcache_new(size_t bytes, struct rcache **out);
void rcache_free(struct rcache *rc);

/*
 * The completed record of (scope, key) as it was read, when the cache
 * holds it and it has not expired at now_ms (an expired one is dropped):
 * IDEM_OK, *r its times, fingerprint, generation and attempts, and its
 * response, whose parts live in *mem (the caller frees it; r->mem is
 * NULL).  IDEM_ENOTFOUND otherwise, IDEM_ENOMEM; *r is then zeroed.
 */
int rcache_get(struct rcache *rc, const char *scope, const char *key,
    uint64_t now_ms, struct rec *r, void **mem);

/*
 * Keeps r, a completed record just read from the store with its
 * response in the clear, for (scope, key), replacing what was kept for
 * it, and dropping the least recently used entries to stay within the
 * budget.  A record larger than the whole budget, or one that cannot be
 * copied, is not kept: the next replay reads the store, as without a
 * cache.  Cannot fail.
 */
void rcache_put(struct rcache *rc, const char *scope, const char *key,
    const struct rec *r);

/* The bytes the entries hold now (0 for NULL). */
size_t rcache_bytes(struct rcache *rc);

#endif
