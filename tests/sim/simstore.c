/*
 * simstore.c: the store interface (src/idem/store.h) for simulation.
 *
 * What it keeps is what a disk would keep: an ordered map of committed
 * (table, key) -> value pairs, shared by every worker of the schedule.  A
 * write transaction collects its changes in a write set and copies them
 * into the map when it commits, so a transaction that fails part way, or
 * a worker that dies before the commit, leaves the map as it was.
 *
 * The semantics follow store_lmdb.c: one record per (scope, key), encoded
 * with rec_encode (so the codec runs too), the engine's decision taken
 * inside the claim's transaction, owner tokens checked on every write to a
 * claim, expiry moved to at least now+TTL by completions and take-overs,
 * and purge by each record's index time (its expiry, or its lease when
 * later; never for a claim past stage 0).  Per-scope quotas are not
 * modelled (the simulation runs without a bound).
 *
 * Each operation yields before it runs (a crash there loses the write)
 * and after it commits (a crash there loses only the answer); nothing
 * yields inside a transaction, which is what makes it atomic.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "check.h"
#include "crypto.h"
#include "engine.h"
#include "err.h"
#include "record.h"
#include "sim.h"
#include "store.h"
#include "simstore.h"
#include "glue.h"
#include "simprov.h"

#define T_RECORDS STORE_TABLE__MAX   /* scope NUL key -> encoded record */
#define TXN_MAX 16

struct store {
	int worker;
};

struct ent {
	unsigned t;
	uint8_t *k, *v;
	size_t kl, vl;
};

/* The committed state: the simulated disk. */
static struct ent *map;
static size_t nmap, capmap;

struct wop {
	struct ent e;
	int del;
};

struct txn {
	struct wop ops[TXN_MAX];
	int n;
};

static int
ent_cmp(unsigned t, const void *k, size_t kl, const struct ent *e)
{
	size_t n = kl < e->kl ? kl : e->kl;
	int c;

	if (t != e->t)
		return t < e->t ? -1 : 1;
	if ((c = memcmp(k, e->k, n)) != 0)
		return c;
	return kl < e->kl ? -1 : kl > e->kl;
}

/* The first entry not below (t, k); *found when it is (t, k). */
static size_t
map_find(unsigned t, const void *k, size_t kl, int *found)
{
	size_t lo = 0, hi = nmap, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ent_cmp(t, k, kl, &map[mid]) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < nmap && ent_cmp(t, k, kl, &map[lo]) == 0;
	return lo;
}

static void *
dup_bytes(const void *p, size_t n)
{
	void *q = malloc(n > 0 ? n : 1);

	if (q == NULL)
		abort();
	if (n > 0)
		memcpy(q, p, n);
	return q;
}

static void
map_put(const struct ent *e)
{
	int found;
	size_t i = map_find(e->t, e->k, e->kl, &found);

	if (found) {
		free(map[i].v);
		map[i].v = dup_bytes(e->v, e->vl);
		map[i].vl = e->vl;
		return;
	}
	if (nmap == capmap) {
		capmap = capmap ? 2 * capmap : 64;
		if ((map = realloc(map, capmap * sizeof(*map))) == NULL)
			abort();
	}
	memmove(&map[i + 1], &map[i], (nmap - i) * sizeof(*map));
	map[i].t = e->t;
	map[i].k = dup_bytes(e->k, e->kl);
	map[i].kl = e->kl;
	map[i].v = dup_bytes(e->v, e->vl);
	map[i].vl = e->vl;
	nmap++;
}

static void
map_del(unsigned t, const void *k, size_t kl)
{
	int found;
	size_t i = map_find(t, k, kl, &found);

	if (!found)
		return;
	free(map[i].k);
	free(map[i].v);
	memmove(&map[i], &map[i + 1], (nmap - i - 1) * sizeof(*map));
	nmap--;
}

void
simstore_reset(void)
{
	size_t i;

	for (i = 0; i < nmap; i++) {
		free(map[i].k);
		free(map[i].v);
	}
	free(map);
	map = NULL;
	nmap = capmap = 0;
}

static void
txn_op(struct txn *tx, unsigned t, const void *k, size_t kl, const void *v,
    size_t vl, int del)
{
	struct wop *o;

	if (tx->n == TXN_MAX)
		abort();
	o = &tx->ops[tx->n++];
	o->e.t = t;
	o->e.k = dup_bytes(k, kl);
	o->e.kl = kl;
	o->e.v = del ? NULL : dup_bytes(v, vl);
	o->e.vl = del ? 0 : vl;
	o->del = del;
}

/* Reads through the write set: the transaction sees its own writes. */
static int
txn_get(const struct txn *tx, unsigned t, const void *k, size_t kl,
    const uint8_t **v, size_t *vl)
{
	int i, found;
	size_t at;

	for (i = tx->n - 1; i >= 0; i--)
		if (ent_cmp(t, k, kl, &tx->ops[i].e) == 0) {
			if (tx->ops[i].del)
				return IDEM_ENOTFOUND;
			*v = tx->ops[i].e.v;
			*vl = tx->ops[i].e.vl;
			return IDEM_OK;
		}
	at = map_find(t, k, kl, &found);
	if (!found)
		return IDEM_ENOTFOUND;
	*v = map[at].v;
	*vl = map[at].vl;
	return IDEM_OK;
}

static void
txn_end(struct txn *tx, int commit)
{
	int i;

	for (i = 0; i < tx->n; i++) {
		if (commit && tx->ops[i].del)
			map_del(tx->ops[i].e.t, tx->ops[i].e.k, tx->ops[i].e.kl);
		else if (commit)
			map_put(&tx->ops[i].e);
		free(tx->ops[i].e.k);
		free(tx->ops[i].e.v);
	}
	tx->n = 0;
}

struct rkey {
	uint8_t data[512];
	size_t len;
};

static int
rkey_make(const char *scope, const char *key, struct rkey *k)
{
	size_t sl = strlen(scope), kl = strlen(key);

	if (sl == 0 || kl == 0 || sl + 1 + kl > sizeof(k->data))
		return IDEM_EINVAL;
	memcpy(k->data, scope, sl + 1);
	memcpy(k->data + sl + 1, key, kl);
	k->len = sl + 1 + kl;
	return IDEM_OK;
}

static int
rec_get(const struct txn *tx, const struct rkey *k, struct rec *r)
{
	const uint8_t *v;
	size_t vl;
	int rc;

	memset(r, 0, sizeof(*r));
	if ((rc = txn_get(tx, T_RECORDS, k->data, k->len, &v, &vl)) != IDEM_OK)
		return rc;
	return rec_decode(v, vl, r);
}

static int
rec_put(struct txn *tx, const struct rkey *k, const struct rec *r)
{
	struct buf b = BUF_INIT;
	int rc;

	if ((rc = rec_encode(r, &b)) == IDEM_OK)
		txn_op(tx, T_RECORDS, k->data, k->len, b.data, b.len, 0);
	buf_free(&b);
	return rc;
}

static uint64_t
add_ms(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int
simstore_peek(const char *scope, const char *key, struct rec *out)
{
	struct txn tx = { .n = 0 };
	struct rkey k;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = rkey_make(scope, key, &k)) != IDEM_OK)
		return rc;
	return rec_get(&tx, &k, out);
}

int
store_open(const struct store_config *cfg, struct store **out)
{
	(void)cfg;
	if ((*out = calloc(1, sizeof(**out))) == NULL)
		return IDEM_ENOMEM;
	return IDEM_OK;
}

void
store_close(struct store *s)
{
	free(s);
}

int
store_lookup(struct store *s, const char *scope, const char *key,
    struct rec *out)
{
	(void)s;
	sim_yield("store_lookup");
	return simstore_peek(scope, key, out);
}

static int
claim_run(struct txn *tx, const struct rkey *k, const uint8_t *fp,
    const uint8_t *token, uint64_t now_ms, uint64_t lease_ms,
    uint64_t ttl_ms, const struct store_first *first, struct store_claim *out)
{
	int rc, found;
	uint64_t exp;

	rc = rec_get(tx, k, &out->rec);
	if (rc != IDEM_OK && rc != IDEM_ENOTFOUND)
		return rc;
	found = rc == IDEM_OK;
	out->decision = engine_decide(found ? &out->rec : NULL, fp, now_ms,
	    &out->retry_after);
	if (out->decision != ENGINE_CLAIM && out->decision != ENGINE_TAKEOVER)
		return IDEM_OK;
	if (sim_store_fails("store_claim"))
		return IDEM_EFULL;
	if (out->decision == ENGINE_CLAIM) {
		rec_free(&out->rec);
		out->rec.state = REC_IN_PROGRESS;
		memcpy(out->rec.fp, fp, FP_SIZE);
		out->rec.created_ms = now_ms;
		out->rec.expires_ms = add_ms(now_ms, ttl_ms);
		out->rec.attempts = 1;
		if (first != NULL) {
			out->rec.stage = first->stage;
			if (first->cplen > 0) {
				out->rec.cp = dup_bytes(first->cp, first->cplen);
				out->rec.cplen = first->cplen;
			}
		}
	} else {
		exp = add_ms(now_ms, ttl_ms);
#ifndef IDEM_PLANT_LATE_TTL
		if (exp > out->rec.expires_ms)
			out->rec.expires_ms = exp;
#else
		(void)exp;
#endif
		if (out->rec.attempts < UINT32_MAX)
			out->rec.attempts++;
	}
	memcpy(out->rec.token, token, REC_TOKEN_SIZE);
	out->rec.lease_ms = add_ms(now_ms, lease_ms);
	return rec_put(tx, k, &out->rec);
}

int
store_claim(struct store *s, const char *scope, const char *key,
    const uint8_t fp[FP_SIZE], const uint8_t token[REC_TOKEN_SIZE],
    uint64_t now_ms, uint64_t lease_ms, uint64_t ttl_ms,
    const struct store_first *first, struct store_claim *out)
{
	struct txn tx = { .n = 0 };
	struct rkey k;
	int rc, wrote;

	(void)s;
	memset(out, 0, sizeof(*out));
	if (lease_ms == 0 || ttl_ms == 0)
		return IDEM_EINVAL;
	if ((rc = rkey_make(scope, key, &k)) != IDEM_OK)
		return rc;
	sim_point("store_claim");
	rc = claim_run(&tx, &k, fp, token, now_ms, lease_ms, ttl_ms, first,
	    out);
	wrote = tx.n > 0;
	txn_end(&tx, rc == IDEM_OK);
	if (rc != IDEM_OK) {
		rec_free(&out->rec);
		memset(out, 0, sizeof(*out));
		return rc;
	}
	trace("claim %s/%s: %s (attempt %u, stage %u)", scope, key,
	    engine_strdecision(out->decision), out->rec.attempts,
	    out->rec.stage);
	if (wrote)
		sim_point("store_claim_commit");
	return IDEM_OK;
}

/* Loads our claim; IDEM_ELOST when it is gone, done or someone else's. */
static int
own(const struct txn *tx, const struct rkey *k, const uint8_t *token,
    struct rec *r)
{
	int rc = rec_get(tx, k, r);

	if (rc == IDEM_ENOTFOUND)
		return IDEM_ELOST;
	if (rc != IDEM_OK)
		return rc;
	if (r->state != REC_IN_PROGRESS ||
	    !crypto_equal(r->token, token, REC_TOKEN_SIZE)) {
		rec_free(r);
		return IDEM_ELOST;
	}
	return IDEM_OK;
}

int
store_checkpoint(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint32_t stage, const void *cp,
    size_t cplen, uint64_t now_ms, uint64_t lease_ms)
{
	struct txn tx = { .n = 0 };
	struct rec cur, next;
	struct rkey k;
	int rc;

	(void)s;
	if (cplen > REC_MAX_CHECKPOINT)
		return IDEM_ETOOBIG;
	if ((rc = rkey_make(scope, key, &k)) != IDEM_OK)
		return rc;
	sim_point("store_checkpoint");
	if ((rc = own(&tx, &k, token, &cur)) != IDEM_OK)
		return rc;
	if (sim_store_fails("store_checkpoint"))
		rc = IDEM_EFULL;
	else {
		next = cur;
		next.stage = stage;
		next.cp = (uint8_t *)cp;
		next.cplen = cplen;
		next.lease_ms = add_ms(now_ms, lease_ms);
		rc = rec_put(&tx, &k, &next);
	}
	rec_free(&cur);
	txn_end(&tx, rc == IDEM_OK);
	if (rc == IDEM_OK) {
		trace("checkpoint %s/%s stage %u", scope, key, stage);
		sim_point("store_checkpoint_commit");
	}
	return rc;
}

int
store_complete(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], const struct rec_response *resp,
    const struct store_put *puts, size_t nputs, uint64_t now_ms,
    uint64_t ttl_ms)
{
	struct txn tx = { .n = 0 };
	uint64_t exp = add_ms(now_ms, ttl_ms);
	struct rec cur, done;
	struct rkey k;
	size_t i;
	int rc;

	(void)s;
	if (resp == NULL || (nputs > 0 && puts == NULL))
		return IDEM_EINVAL;
	for (i = 0; i < nputs; i++)
		if ((unsigned)puts[i].table >= STORE_TABLE__MAX ||
		    puts[i].keylen == 0)
			return IDEM_EINVAL;
	if ((rc = rkey_make(scope, key, &k)) != IDEM_OK)
		return rc;
	sim_point("store_complete");
	if ((rc = own(&tx, &k, token, &cur)) != IDEM_OK)
		return rc;
	if (sim_store_fails("store_complete"))
		rc = IDEM_EFULL;
	else {
		done = cur;
		done.state = REC_COMPLETED;
		memset(done.token, 0, sizeof(done.token));
		done.lease_ms = now_ms;
#ifndef IDEM_PLANT_LATE_TTL
		if (exp > done.expires_ms)
			done.expires_ms = exp;
#else
		(void)exp;
#endif
		done.cp = NULL;
		done.cplen = 0;
		done.resp = *resp;
		rc = rec_put(&tx, &k, &done);
		for (i = 0; rc == IDEM_OK && i < nputs; i++)
			txn_op(&tx, puts[i].table, puts[i].key, puts[i].keylen,
			    puts[i].val, puts[i].vallen, 0);
	}
	rec_free(&cur);
	txn_end(&tx, rc == IDEM_OK);
	if (rc != IDEM_OK)
		return rc;
	trace("complete %s/%s: %d, %zu rows", scope, key, resp->status,
	    nputs);
	check_on_complete(scope, key, resp, puts, nputs, now_ms,
	    sim_current_req());
	sim_point("store_complete_commit");
	return IDEM_OK;
}

/* Release and abandon: end a claim we own. */
static int
end_claim(const char *scope, const char *key, const uint8_t *token,
    uint64_t now_ms, int release)
{
	struct txn tx = { .n = 0 };
	struct rec cur, next;
	struct rkey k;
	int rc;

	if ((rc = rkey_make(scope, key, &k)) != IDEM_OK)
		return rc;
	sim_point(release ? "store_release" : "store_abandon");
	if ((rc = own(&tx, &k, token, &cur)) != IDEM_OK)
		return rc;
	if (release)
		txn_op(&tx, T_RECORDS, k.data, k.len, NULL, 0, 1);
	else {
		next = cur;
		next.lease_ms = now_ms;
		rc = rec_put(&tx, &k, &next);
	}
	rec_free(&cur);
	txn_end(&tx, rc == IDEM_OK);
	if (rc == IDEM_OK) {
		trace("%s %s/%s", release ? "release" : "abandon", scope, key);
		sim_point(release ? "store_release_commit" :
		    "store_abandon_commit");
	}
	return rc;
}

int
store_release(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE])
{
	(void)s;
	return end_claim(scope, key, token, 0, 1);
}

int
store_abandon(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint64_t now_ms)
{
	(void)s;
	return end_claim(scope, key, token, now_ms, 0);
}

/* A record's place in the purge order; 0 for a claim that never expires. */
static int
purge_due(const struct rec *r, uint64_t *at)
{
	if (r->state == REC_IN_PROGRESS && r->stage != 0)
		return 0;
	*at = r->expires_ms;
	if (r->state == REC_IN_PROGRESS && r->lease_ms > *at)
		*at = r->lease_ms;
	return 1;
}

struct due {
	uint64_t at;
	size_t i;
};

static int
due_cmp(const void *a, const void *b)
{
	const struct due *x = a, *y = b;

	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

int
store_purge(struct store *s, uint64_t now_ms, size_t max, size_t *purged)
{
	struct due *d;
	struct rec r;
	size_t i, n = 0;
	uint64_t at;

	(void)s;
	*purged = 0;
	sim_point("store_purge");
	if ((d = calloc(nmap + 1, sizeof(*d))) == NULL)
		return IDEM_ENOMEM;
	for (i = 0; i < nmap; i++) {
		if (map[i].t != T_RECORDS ||
		    rec_decode(map[i].v, map[i].vl, &r) != IDEM_OK)
			continue;
		if (purge_due(&r, &at) && at <= now_ms)
			d[n++] = (struct due){ at, i };
		rec_free(&r);
	}
	/* Oldest first, as the expiry index is walked. */
	qsort(d, n, sizeof(*d), due_cmp);
	if (n > max)
		n = max;
	for (i = n; i-- > 0;) {
		struct ent *e = &map[d[i].i];
		const char *scope = (const char *)e->k;
		char key[512];
		size_t sl = strlen(scope);

		memcpy(key, e->k + sl + 1, e->kl - sl - 1);
		key[e->kl - sl - 1] = '\0';
		if (rec_decode(e->v, e->vl, &r) == IDEM_OK) {
			check_on_purge(scope, key, &r);
			rec_free(&r);
		}
	}
	/* Indexes in descending order, so each delete leaves the rest. */
	for (i = 0; i < n; i++)
		d[i].at = d[i].i;
	qsort(d, n, sizeof(*d), due_cmp);
	for (i = n; i-- > 0;) {
		struct ent *e = &map[d[i].i];

		free(e->k);
		free(e->v);
		memmove(e, e + 1, (nmap - d[i].i - 1) * sizeof(*map));
		nmap--;
	}
	free(d);
	*purged = n;
	if (n > 0)
		sim_point("store_purge_commit");
	return IDEM_OK;
}

int
store_get(struct store *s, enum store_table t, const void *key,
    size_t keylen, struct buf *out)
{
	int found;
	size_t i;

	(void)s;
	sim_yield("store_get");
	i = map_find(t, key, keylen, &found);
	if (!found)
		return IDEM_ENOTFOUND;
	return buf_append(out, map[i].v, map[i].vl);
}

int
store_insert_once(struct store *s, enum store_table t, const void *key,
    size_t keylen, const void *val, size_t vallen, struct buf *existing)
{
	struct ent e = { t, (uint8_t *)key, (uint8_t *)val, keylen, vallen };
	int found;
	size_t i;

	(void)s;
	sim_point("store_insert");
	i = map_find(t, key, keylen, &found);
	if (found) {
		if (existing != NULL)
			return buf_append(existing, map[i].v, map[i].vl) ==
			    IDEM_OK ? IDEM_EEXIST : IDEM_ENOMEM;
		return IDEM_EEXIST;
	}
	map_put(&e);
	sim_point("store_insert_commit");
	return IDEM_OK;
}

int
store_scan(struct store *s, enum store_table t, const void *prefix,
    size_t prefixlen, int reverse, size_t limit, store_scan_fn fn, void *ctx)
{
	size_t i, lo, hi, seen = 0;
	int found;

	(void)s;
	sim_yield("store_scan");
	lo = map_find(t, prefix, prefixlen, &found);
	for (hi = lo; hi < nmap && map[hi].t == (unsigned)t &&
	    map[hi].kl >= prefixlen &&
	    memcmp(map[hi].k, prefix, prefixlen) == 0; hi++)
		continue;
	for (i = 0; i < hi - lo && (limit == 0 || seen < limit); i++, seen++) {
		struct ent *e = &map[reverse ? hi - 1 - i : lo + i];

		if (fn(ctx, e->k, e->kl, e->v, e->vl) != 0)
			break;
	}
	return IDEM_OK;
}

static int
each(int pending, store_each_fn fn, void *ctx)
{
	struct rec r;
	size_t i, sl;
	char key[512];
	int stop;

	for (i = 0; i < nmap; i++) {
		if (map[i].t != T_RECORDS ||
		    rec_decode(map[i].v, map[i].vl, &r) != IDEM_OK)
			continue;
		stop = 0;
		if (!pending || (r.state == REC_IN_PROGRESS && r.stage != 0)) {
			sl = strlen((const char *)map[i].k);
			memcpy(key, map[i].k + sl + 1, map[i].kl - sl - 1);
			key[map[i].kl - sl - 1] = '\0';
			stop = fn(ctx, (const char *)map[i].k, key, &r);
		}
		rec_free(&r);
		if (stop)
			break;
	}
	return IDEM_OK;
}

int
store_each(struct store *s, store_each_fn fn, void *ctx)
{
	(void)s;
	return each(0, fn, ctx);
}

int
store_each_pending(struct store *s, store_each_fn fn, void *ctx)
{
	(void)s;
	return each(1, fn, ctx);
}

int
store_count_scope(struct store *s, const char *scope, uint64_t *n)
{
	size_t i, sl = strlen(scope) + 1;

	(void)s;
	*n = 0;
	for (i = 0; i < nmap; i++)
		if (map[i].t == T_RECORDS && map[i].kl > sl &&
		    memcmp(map[i].k, scope, sl) == 0)
			(*n)++;
	return IDEM_OK;
}

int
store_count(struct store *s, enum store_table t, size_t *n)
{
	size_t i;

	(void)s;
	*n = 0;
	for (i = 0; i < nmap; i++)
		*n += map[i].t == (unsigned)t;
	return IDEM_OK;
}

int
store_count_keys(struct store *s, size_t *n)
{
	return store_count(s, (enum store_table)T_RECORDS, n);
}

/* The backend functions of glue.h, for the simulation store. */
static struct store *purger;

const char *
backend_name(void)
{
	return "sim";
}

void
backend_store_config(struct store_config *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->dir = "sim";
}

void
glue_world_begin(void)
{
	struct store_config sc;

	backend_store_config(&sc);
	simstore_reset();
	simprov_reset();
	if (store_open(&sc, &purger) != IDEM_OK)
		abort();
}

void
glue_world_end(void)
{
	store_close(purger);
	purger = NULL;
	simstore_reset();
	simprov_reset();
}

int
glue_purge(uint64_t now_ms, size_t max, size_t *purged)
{
	return store_purge(purger, now_ms, max, purged);
}

int
truth_lookup(const char *scope, const char *key, struct rec *out)
{
	return simstore_peek(scope, key, out);
}
