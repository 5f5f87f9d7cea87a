/* SPDX-License-Identifier: MIT */
/*
 * store.c: the store interface, dispatched to the handle's backend.
 *
 * Nothing here knows a backend: each function passes its call to the
 * operations table the handle was opened with (store.h).  What every
 * backend must do alike is decided here, once: what a claim, a take-over
 * and a completion make of a record, and a checkpoint and an abandon;
 * who owns a claim; which arguments a claim and a checkpoint refuse; the
 * bound on a key's length, where a record is indexed, how much a claim
 * may purge and how long one refused at its scope's bound waits.  The reads pass
 * a fault point first (fault.h: store_lookup, store_get, store_scan,
 * store_each, store_count), so that tests can make any backend's read
 * fail as an I/O error would, and see what the caller then answers.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "err.h"
#include "fault.h"
#include "store.h"

/*
 * Whether a read op (of table, or NULL) is to fail, by IDEM_FAULT: in a
 * build with fault points, and not in the simulator (tests/sim), which
 * builds this file with fault points of its own and fails its store's
 * writes itself.
 */
static int
store_read_fails(const char *op, const char *table)
{
#if defined(IDEM_FAULT_POINTS) && !defined(IDEM_SIMULATOR)
	return fault_point_in(op, table);
#else
	(void)op;
	(void)table;
	return 0;
#endif
}

/* The library's own databases; an application table may not take one. */
static const char *const store_reserved[] = {
	"keys", "expiry", "pending", "quota", "gens"
};

int
store_table_name_ok(const char *name)
{
	size_t i, len;

	if (name == NULL)
		return 0;
	len = strlen(name);
	if (len == 0 || len > STORE_TABLE_NAME_MAX)
		return 0;
	for (i = 0; i < sizeof(store_reserved) / sizeof(store_reserved[0]);
	    i++)
		if (strcmp(name, store_reserved[i]) == 0)
			return 0;
	return 1;
}

int
store_names_check(const char *scope, const char *key, size_t max)
{
	size_t slen, klen;

	if (scope == NULL || key == NULL || *scope == '\0' || *key == '\0')
		return IDEM_EINVAL;
	slen = strlen(scope);
	klen = strlen(key);
	if (slen > max || klen > max ||
	    STORE_INDEX_PREFIX + slen + 1 + klen > max)
		return IDEM_ETOOBIG;
	return IDEM_OK;
}

int
store_rec_pending(const struct rec *r)
{
	return r->state == REC_IN_PROGRESS && r->stage != 0;
}

int
store_rec_expiry_at(const struct rec *r, uint64_t *at)
{
	*at = 0;
	if (store_rec_pending(r))
		return 0;
	*at = r->expires_ms;
	if (r->state == REC_IN_PROGRESS && r->lease_ms > *at)
		*at = r->lease_ms;
	return 1;
}

int
store_open(const struct store_config *cfg, struct store **out)
{
	const struct store_ops *ops;
	size_t i;

	*out = NULL;
	if (cfg == NULL)
		return IDEM_EINVAL;
	for (i = 0; cfg->tables != NULL && cfg->tables[i] != NULL; i++)
		if (i >= IDEM_MAX_TABLES || !store_table_name_ok(cfg->tables[i]))
			return IDEM_EINVAL;
	ops = cfg->backend != NULL ? cfg->backend :
	    store_pg_uri(cfg->dir) ? &store_pg_ops : &store_lmdb_ops;
	return ops->open(cfg, out);
}

uint64_t
store_commit_ms(const struct store *s, uint64_t now_ms)
{
	uint64_t t;

	if (s->clock == NULL)
		return now_ms;
	t = s->clock(s->clock_ctx);
	return t > now_ms ? t : now_ms;
}

void
store_close(struct store *s)
{
	if (s != NULL)
		s->ops->close(s);
}

int
store_lookup(struct store *s, const char *scope, const char *key,
    struct rec *out)
{
	if (store_read_fails("store_lookup", NULL)) {
		memset(out, 0, sizeof(*out));
		return IDEM_EIO;
	}
	return s->ops->lookup(s, scope, key, out);
}

int
store_claim(struct store *s, const char *scope, const char *key,
    const uint8_t fp[FP_SIZE], const uint8_t token[REC_TOKEN_SIZE],
    uint64_t now_ms, uint64_t lease_ms, uint64_t ttl_ms,
    const struct store_first *first, struct store_claim *out)
{
	return s->ops->claim(s, scope, key, fp, token, now_ms, lease_ms,
	    ttl_ms, first, out);
}

int
store_checkpoint(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint32_t stage, const void *cp,
    size_t cplen, uint64_t now_ms, uint64_t lease_ms)
{
	return s->ops->checkpoint(s, scope, key, token, stage, cp, cplen,
	    now_ms, lease_ms);
}

int
store_complete(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], const struct rec_response *resp,
    idem_tx_fn hook, void *hook_ctx, uint64_t now_ms, uint64_t ttl_ms)
{
	return s->ops->complete(s, scope, key, token, resp, hook, hook_ctx,
	    now_ms, ttl_ms);
}

int
store_release(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], idem_tx_fn hook, void *hook_ctx)
{
	return s->ops->release(s, scope, key, token, hook, hook_ctx);
}

int
store_abandon(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint64_t now_ms)
{
	return s->ops->abandon(s, scope, key, token, now_ms);
}

int
store_purge(struct store *s, uint64_t now_ms, size_t max, size_t *purged)
{
	return s->ops->purge(s, now_ms, max, purged);
}

int
store_get(struct store *s, const char *table, const void *key,
    size_t keylen, struct buf *out)
{
	if (store_read_fails("store_get", table))
		return IDEM_EIO;
	return s->ops->get(s, table, key, keylen, out);
}

int
store_insert_once(struct store *s, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen, struct buf *existing)
{
	return s->ops->insert_once(s, table, key, keylen, val, vallen,
	    existing);
}

int
store_scan(struct store *s, const char *table, const void *prefix,
    size_t prefixlen, int reverse, size_t limit, store_scan_fn fn, void *ctx)
{
	if (store_read_fails("store_scan", table))
		return IDEM_EIO;
	return s->ops->scan(s, table, prefix, prefixlen, NULL, 0, reverse,
	    limit, fn, ctx);
}

int
store_scan_from(struct store *s, const char *table, const void *prefix,
    size_t prefixlen, const void *from, size_t fromlen, int reverse,
    size_t limit, store_scan_fn fn, void *ctx)
{
	if (store_read_fails("store_scan", table))
		return IDEM_EIO;
	if (fromlen > 0 && from == NULL)
		return IDEM_EINVAL;
	return s->ops->scan(s, table, prefix, prefixlen, from, fromlen,
	    reverse, limit, fn, ctx);
}

int
store_each(struct store *s, store_each_fn fn, void *ctx)
{
	if (store_read_fails("store_each", NULL))
		return IDEM_EIO;
	return s->ops->each(s, fn, ctx);
}

int
store_each_pending(struct store *s, store_each_fn fn, void *ctx)
{
	if (store_read_fails("store_each", NULL))
		return IDEM_EIO;
	return s->ops->each_pending(s, fn, ctx);
}

int
store_count(struct store *s, const char *table, size_t *n)
{
	if (store_read_fails("store_count", table)) {
		*n = 0;
		return IDEM_EIO;
	}
	return s->ops->count(s, table, n);
}

int
store_reseal(struct store *s, const char *const *scopes,
    const char *const *keys, size_t n, store_reseal_fn fn, void *ctx)
{
	if (s->ops->reseal == NULL || fn == NULL ||
	    (n > 0 && (scopes == NULL || keys == NULL)))
		return IDEM_EINVAL;
	return s->ops->reseal(s, scopes, keys, n, fn, ctx);
}

int
store_tx_get(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void **val, size_t *vallen)
{
	return tx->s->ops->tx_get(tx, table, key, keylen, val, vallen);
}

int
store_tx_put(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen)
{
	return tx->s->ops->tx_put(tx, table, key, keylen, val, vallen);
}

int
store_tx_del(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen)
{
	return tx->s->ops->tx_del(tx, table, key, keylen);
}

uint64_t
store_add_ms(uint64_t now_ms, uint64_t span_ms)
{
	return span_ms > UINT64_MAX - now_ms ? UINT64_MAX : now_ms + span_ms;
}

int
store_rec_fresh(struct rec *r, const uint8_t fp[FP_SIZE],
    const uint8_t token[REC_TOKEN_SIZE], uint64_t now_ms, uint64_t lease_ms,
    uint64_t ttl_ms, uint64_t gen, const struct store_first *first)
{
	void *cp;

	rec_free(r);
	r->gen = gen;
	r->state = REC_IN_PROGRESS;
	memcpy(r->fp, fp, FP_SIZE);
	memcpy(r->token, token, REC_TOKEN_SIZE);
	r->created_ms = now_ms;
	r->expires_ms = store_add_ms(now_ms, ttl_ms);
	r->lease_ms = store_add_ms(now_ms, lease_ms);
	r->attempts = 1;
	if (first == NULL)
		return IDEM_OK;
	r->stage = first->stage;
	if (first->cplen == 0)
		return IDEM_OK;
	if ((cp = malloc(first->cplen)) == NULL)
		return IDEM_ENOMEM;
	memcpy(cp, first->cp, first->cplen);
	rec_adopt_cp(r, cp, first->cplen);
	return IDEM_OK;
}

/* The expiry a take-over or a completion written now leaves r with. */
static void
store_rec_outlive(const struct store *s, struct rec *r, uint64_t now_ms,
    uint64_t ttl_ms)
{
	uint64_t exp = store_add_ms(store_commit_ms(s, now_ms), ttl_ms);

#ifdef IDEM_PLANT_LATE_TTL	/* a planted bug for tests/sim, never defined */
	exp = r->expires_ms;
#endif
	if (exp > r->expires_ms)
		r->expires_ms = exp;
}

void
store_rec_takeover(const struct store *s, struct rec *r,
    const uint8_t token[REC_TOKEN_SIZE], uint64_t now_ms, uint64_t lease_ms,
    uint64_t ttl_ms)
{
	memcpy(r->token, token, REC_TOKEN_SIZE);
	r->lease_ms = store_add_ms(now_ms, lease_ms);
	store_rec_outlive(s, r, now_ms, ttl_ms);
	if (r->attempts < UINT32_MAX)
		r->attempts++;
}

void
store_rec_complete(const struct store *s, struct rec *r, uint64_t now_ms,
    uint64_t ttl_ms)
{
	r->state = REC_COMPLETED;
	memset(r->token, 0, sizeof(r->token));
	r->lease_ms = now_ms;
	store_rec_outlive(s, r, now_ms, ttl_ms);
	r->cp = NULL;
	r->cplen = 0;
}

int
store_claim_args_check(uint64_t lease_ms, uint64_t ttl_ms,
    const struct store_first *first)
{
	if (lease_ms == 0 || ttl_ms == 0)
		return IDEM_EINVAL;
	if (first != NULL && (first->cplen > REC_MAX_CHECKPOINT ||
	    (first->cplen > 0 && first->cp == NULL)))
		return IDEM_EINVAL;
	return IDEM_OK;
}

int
store_checkpoint_args_check(const void *cp, size_t cplen)
{
	if (cplen > REC_MAX_CHECKPOINT)
		return IDEM_ETOOBIG;
	if (cplen > 0 && cp == NULL)
		return IDEM_EINVAL;
	return IDEM_OK;
}

int
store_rec_owned(const struct rec *r, const uint8_t token[REC_TOKEN_SIZE])
{
	if (r->state != REC_IN_PROGRESS ||
	    !crypto_equal(r->token, token, REC_TOKEN_SIZE))
		return IDEM_ELOST;
	return IDEM_OK;
}

void
store_rec_checkpointed(const struct rec *cur, uint32_t stage, const void *cp,
    size_t cplen, uint64_t now_ms, uint64_t lease_ms, struct rec *next)
{
	*next = *cur;
	next->stage = stage;
	next->cp = (uint8_t *)cp;
	next->cplen = cplen;
	next->lease_ms = store_add_ms(now_ms, lease_ms);
}

void
store_rec_abandoned(const struct rec *cur, uint64_t now_ms, struct rec *next)
{
	*next = *cur;
	next->lease_ms = now_ms;
}

/*
 * The completed record keeps the stage (how far the work went) but drops
 * the checkpoint bytes, which nothing reads once the answer is stored.
 */
int
store_rec_completed(const struct store *s, const struct rec *cur,
    const struct rec_response *resp, const struct idem_tx *tx,
    uint64_t now_ms, uint64_t ttl_ms, struct rec *next)
{
	*next = *cur;
	store_rec_complete(s, next, now_ms, ttl_ms);
	if (tx != NULL && tx->respond != NULL)
		return rec_response_borrow(tx->respond, &next->resp);
	next->resp = *resp;
	return IDEM_OK;
}

uint32_t
store_limit_retry(int have, uint64_t at, uint64_t now_ms, uint64_t ttl_ms)
{
	uint64_t wait = ttl_ms, secs;

	if (have) {
		wait = at > now_ms ? at - now_ms : 0;
		if (wait > ttl_ms)
			wait = ttl_ms;
	}
	secs = wait / 1000 + (wait % 1000 != 0);
	if (secs < 1)
		secs = 1;
	return secs > UINT32_MAX ? UINT32_MAX : (uint32_t)secs;
}

int
store_cond_init(pthread_cond_t *c)
{
	pthread_condattr_t ca;
	int rc;

	if ((rc = pthread_condattr_init(&ca)) != 0)
		return rc;
	if ((rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC)) == 0)
		rc = pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
	return rc;
}

void
store_deadline(struct timespec *at, uint64_t us)
{
	uint64_t ns;

	clock_gettime(CLOCK_MONOTONIC, at);
	ns = (uint64_t)at->tv_nsec + us * 1000;
	at->tv_sec += (time_t)(ns / 1000000000);
	at->tv_nsec = (long)(ns % 1000000000);
}
