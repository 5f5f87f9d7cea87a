/* SPDX-License-Identifier: MIT */
/*
 * test_store_pg.c: what only the PostgreSQL backend has to show, on the
 * database IDEM_TEST_PG names (tests/lib/pg.py; without it, no test):
 * walks through server-side cursors in batches (more rows than one
 * batch, in order, complete; a callback that stops early), the counts
 * kept beside the rows (a scope's records under its bound, exactly,
 * with many threads claiming at once, far from the bound and near it,
 * round after round, under two bounds at once; a claim that reads its
 * slot's allowance, not the sum; a scope's claims that do not queue on
 * its count; a table's rows), and
 * the migrations that start those counts from what is stored.
 *
 * With fault points, a write whose transaction fails as it begins
 * leaves nothing, and a session left in its pipeline is replaced.
 *
 * The test reads the database itself through libpq to set up many rows
 * at once and to compare the kept counts with count(*).
 */
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "crypto.h"
#include "engine.h"
#include "err.h"
#include "idem.h"
#include "record.h"
#include "store.h"
#include "store_pg.h"

#include "harness.h"

#define T0 1700000000000ULL
#define LEASE 30000ULL
#define TTL 86400000ULL
/* More rows than two batches and a part of one. */
#define MANY (2 * PG_WALK_BATCH + 37)

static const char *const tables[] = { "payments", "by_account", NULL };
static uint8_t fp_a[FP_SIZE];

static int
suite_init(void)
{
	if (crypto_init() != IDEM_OK)
		return -1;
	memset(fp_a, 0x11, sizeof(fp_a));
	return 0;
}

/* The test's database, emptied first when fresh is set. */
static struct store *
open_store(uint64_t max_keys, int fresh)
{
	struct store_config cfg = { NULL, 0, 0, 0, 0, tables, NULL,
	    0, 0, 0, 0 };
	struct store *s = NULL;

	cfg.dir = harness_store(NULL, fresh);
	cfg.max_keys_per_scope = max_keys;
	if (store_open(&cfg, &s) != IDEM_OK)
		return NULL;
	return s;
}

/* Runs sql on the test's database; the first column of the first row. */
static long long
sql(const char *q)
{
	PGconn *c = PQconnectdb(getenv("IDEM_TEST_PG"));
	PGresult *r;
	long long v = -1;

	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "  connect: %s", PQerrorMessage(c));
		PQfinish(c);
		return -1;
	}
	r = PQexec(c, q);
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0)
		v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	else if (PQresultStatus(r) == PGRES_COMMAND_OK)
		v = 0;
	else
		fprintf(stderr, "  %s: %s", q, PQresultErrorMessage(r));
	PQclear(r);
	PQfinish(c);
	return v;
}

static int
claim(struct store *s, const char *scope, const char *key, int token,
    uint64_t now)
{
	struct store_claim c;
	uint8_t t[REC_TOKEN_SIZE];
	int rc;

	memset(t, token, sizeof(t));
	if ((rc = store_claim(s, scope, key, fp_a, t, now, LEASE, TTL, NULL,
	    &c)) != IDEM_OK)
		return -rc;
	rec_free(&c.rec);
	return (int)c.decision;
}

/* What a walk saw: how many, whether in order, and where it stopped. */
struct seen {
	size_t n, stop_at;
	int out_of_order;
	char last[64];
	int reverse;
};

static int
seen_key(struct seen *w, const char *k, size_t klen)
{
	char cur[64];
	int cmp;

	snprintf(cur, sizeof(cur), "%.*s", (int)klen, k);
	if (w->n > 0) {
		cmp = strcmp(w->last, cur);
		if (w->reverse ? cmp <= 0 : cmp >= 0)
			w->out_of_order++;
	}
	snprintf(w->last, sizeof(w->last), "%s", cur);
	w->n++;
	return w->stop_at != 0 && w->n == w->stop_at;
}

static int
seen_rec(void *ctx, const char *scope, const char *key, const struct rec *r)
{
	char both[64];

	(void)r;
	snprintf(both, sizeof(both), "%s/%s", scope, key);
	return seen_key(ctx, both, strlen(both));
}

static int
seen_row(void *ctx, const void *key, size_t keylen, const void *val,
    size_t vallen)
{
	(void)val;
	(void)vallen;
	return seen_key(ctx, key, keylen);
}

/*
 * MANY records (MANY - 37 of them pending) copied from one claim by SQL,
 * and MANY payments rows with the prefix "p", between rows outside it.
 */
static void
fill(struct store *s)
{
	char q[512];

	HARNESS_EQ(claim(s, "acct", "k", 1, T0), ENGINE_CLAIM);
	snprintf(q, sizeof(q), "INSERT INTO idem_keys (scope, key, rec, "
	    "purge_at) SELECT scope, convert_to('k' || lpad(g::text, 5, '0'), "
	    "'UTF8'), rec, CASE WHEN g > 37 THEN purge_at END FROM "
	    "idem_keys, generate_series(1, %d) g", MANY - 1);
	HARNESS_EQ(sql(q), 0);
	snprintf(q, sizeof(q), "INSERT INTO idem_rows (tbl, k, v) SELECT "
	    "'payments', convert_to(p || lpad(g::text, 5, '0'), 'UTF8'), "
	    "'\\x00' FROM generate_series(1, %d) g, (VALUES ('o'), ('p'), "
	    "('q')) t(p) WHERE p = 'p' OR g < 3", MANY);
	HARNESS_EQ(sql(q), 0);
}

static void
test_walk_batches(void)
{
	struct store *s = open_store(0, 1);
	struct seen w;
	char last[16];

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	fill(s);
	memset(&w, 0, sizeof(w));
	HARNESS_EQ(store_each(s, seen_rec, &w), IDEM_OK);
	HARNESS_EQ(w.n, MANY);
	HARNESS_EQ(w.out_of_order, 0);
	memset(&w, 0, sizeof(w));
	HARNESS_EQ(store_each_pending(s, seen_rec, &w), IDEM_OK);
	HARNESS_EQ(w.n, 37);
	HARNESS_EQ(w.out_of_order, 0);
	memset(&w, 0, sizeof(w));
	HARNESS_EQ(store_scan(s, "payments", "p", 1, 0, 0, seen_row, &w),
	    IDEM_OK);
	HARNESS_EQ(w.n, MANY);
	HARNESS_EQ(w.out_of_order, 0);
	snprintf(last, sizeof(last), "p%05d", MANY);
	CU_ASSERT_STRING_EQUAL(w.last, last);
	memset(&w, 0, sizeof(w));
	w.reverse = 1;
	HARNESS_EQ(store_scan(s, "payments", "p", 1, 1, 0, seen_row, &w),
	    IDEM_OK);
	HARNESS_EQ(w.n, MANY);
	HARNESS_EQ(w.out_of_order, 0);
	CU_ASSERT_STRING_EQUAL(w.last, "p00001");
	memset(&w, 0, sizeof(w));
	HARNESS_EQ(store_scan(s, "payments", "p", 1, 0, PG_WALK_BATCH + 1,
	    seen_row, &w), IDEM_OK);
	HARNESS_EQ(w.n, PG_WALK_BATCH + 1);
	memset(&w, 0, sizeof(w));
	HARNESS_EQ(store_scan(s, "payments", NULL, 0, 0, 0, seen_row, &w),
	    IDEM_OK);
	HARNESS_EQ(w.n, MANY + 4);
	store_close(s);
}

/*
 * A callback that stops past the first batch ends the walk there, and
 * the walk gives its connection back: more walks than the pool holds,
 * then a write, all go through.
 */
static void
test_walk_stops_early(void)
{
	struct store *s = open_store(0, 1);
	struct seen w;
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	fill(s);
	for (i = 0; i < 2 * PG_POOL_MAX; i++) {
		memset(&w, 0, sizeof(w));
		w.stop_at = PG_WALK_BATCH + 10;
		w.reverse = i % 4 == 1;
		if (i % 2 == 0)
			HARNESS_EQ(store_each(s, seen_rec, &w), IDEM_OK);
		else
			HARNESS_EQ(store_scan(s, "payments", "p", 1, i % 4 == 1,
			    0, seen_row, &w), IDEM_OK);
		HARNESS_EQ(w.n, PG_WALK_BATCH + 10);
		HARNESS_EQ(w.out_of_order, 0);
	}
	HARNESS_EQ(claim(s, "acct", "after", 1, T0), ENGINE_CLAIM);
	store_close(s);
}

/* Many threads claim new keys of one scope at once, against its bound. */
#define BOUND 24
#define THREADS 8
#define TRIES 12

struct claimer {
	pthread_t tid;
	struct store *s;
	const char *prefix;
	int id, tries, ok, limited, other;
};

static void *
claimer_main(void *arg)
{
	struct claimer *c = arg;
	char key[32];
	int i, d;

	for (i = 0; i < c->tries; i++) {
		snprintf(key, sizeof(key), "%s%d-%d", c->prefix, c->id, i);
		d = claim(c->s, "greedy", key, c->id + 1, T0 + (uint64_t)i);
		if (d == ENGINE_CLAIM)
			c->ok++;
		else if (d == -IDEM_ELIMIT)
			c->limited++;
		else
			c->other++;
	}
	return NULL;
}

/*
 * THREADS threads claim tries new keys each of "greedy", named from
 * prefix: how many went in.
 */
static int
claim_keys(struct store *s, const char *prefix, int tries)
{
	struct claimer c[THREADS];
	int i, ok = 0, limited = 0, other = 0;

	for (i = 0; i < THREADS; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i].s = s;
		c[i].prefix = prefix;
		c[i].id = i;
		c[i].tries = tries;
		CU_ASSERT_FATAL(pthread_create(&c[i].tid, NULL, claimer_main,
		    &c[i]) == 0);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(c[i].tid, NULL);
		ok += c[i].ok;
		limited += c[i].limited;
		other += c[i].other;
	}
	HARNESS_EQ(other, 0);
	HARNESS_EQ(ok + limited, THREADS * tries);
	return ok;
}

static int
claim_many(struct store *s, int tries)
{
	return claim_keys(s, "t", tries);
}

static int
claim_all(struct store *s)
{
	return claim_many(s, TRIES);
}

/*
 * The bound holds exactly under concurrency: of THREADS * TRIES new keys
 * claimed at once, exactly BOUND are claimed; the kept count is the
 * records' count through releases and purges, and a scope's count does
 * not depend on another's.
 */
static void
test_quota_concurrent(void)
{
	struct store *s = open_store(BOUND, 1);
	uint8_t t[REC_TOKEN_SIZE];
	size_t purged;
	char key[32];
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	HARNESS_EQ(claim(s, "other", "o1", 1, T0), ENGINE_CLAIM);
	HARNESS_EQ(claim_all(s), BOUND);
	HARNESS_EQ(sql("SELECT count(*) FROM idem_keys WHERE scope = "
	    "'greedy'"), BOUND);
	HARNESS_EQ(sql("SELECT sum(n) FROM idem_quota WHERE scope = 'greedy'"),
	    BOUND);
	HARNESS_EQ(sql("SELECT sum(n) FROM idem_quota WHERE scope = 'other'"), 1);
	/* One released (the first claimed key found): one more goes in. */
	for (i = 0; i < THREADS * TRIES; i++) {
		snprintf(key, sizeof(key), "t%d-%d", i / TRIES, i % TRIES);
		if (claim(s, "greedy", key, 1, T0) == ENGINE_CONFLICT)
			break;
	}
	memset(t, i / TRIES + 1, sizeof(t));
	HARNESS_EQ(store_release(s, "greedy", key, t, NULL, NULL), IDEM_OK);
	HARNESS_EQ(sql("SELECT sum(n) FROM idem_quota WHERE scope = 'greedy'"),
	    BOUND - 1);
	HARNESS_EQ(claim(s, "greedy", "x1", 9, T0), ENGINE_CLAIM);
	HARNESS_EQ(claim(s, "greedy", "x2", 9, T0), -IDEM_ELIMIT);
	/*
	 * After the TTL everything may go: purge takes the records off the
	 * count, and the threads again get exactly the bound.
	 */
	HARNESS_EQ(store_purge(s, T0 + TTL + LEASE, 1000, &purged), IDEM_OK);
	HARNESS_EQ(purged, BOUND + 1);
	HARNESS_EQ(sql("SELECT sum(n) FROM idem_quota WHERE scope = 'greedy'"), 0);
	HARNESS_EQ(sql("SELECT sum(n) FROM idem_quota WHERE scope = 'other'"), 0);
	HARNESS_EQ(claim_all(s), BOUND);
	HARNESS_EQ(sql("SELECT count(*) FROM idem_keys WHERE scope = "
	    "'greedy'"), BOUND);
	store_close(s);
}

/* The scope's count, kept (the sum of its slots) and counted. */
static void
greedy_count_is(long long n)
{
	HARNESS_EQ(sql("SELECT sum(n) FROM idem_quota WHERE scope = "
	    "'greedy'"), n);
	HARNESS_EQ(sql("SELECT count(*) FROM idem_keys WHERE scope = "
	    "'greedy'"), n);
}

/*
 * The bound is exact, round after round, with the sessions' allowances
 * granted and used up: with a bound of 50, THREADS threads claiming 96
 * new keys at once get exactly 50; after 10 releases exactly 10 more go
 * in; after a purge of everything, exactly 50 again.
 */
static void
test_quota_rounds(void)
{
	struct store *s = open_store(50, 1);
	uint8_t t[REC_TOKEN_SIZE];
	struct rec r;
	char prefix[8], key[32];
	size_t purged;
	int round, i, released;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	for (round = 0; round < 3; round++) {
		snprintf(prefix, sizeof(prefix), "r%d-", round);
		HARNESS_EQ(claim_keys(s, prefix, TRIES), 50);
		greedy_count_is(50);
		/* Ten of the keys claimed, found by a lookup. */
		released = 0;
		for (i = 0; i < THREADS * TRIES && released < 10; i++) {
			snprintf(key, sizeof(key), "%s%d-%d", prefix,
			    i / TRIES, i % TRIES);
			if (store_lookup(s, "greedy", key, &r) != IDEM_OK)
				continue;
			rec_free(&r);
			memset(t, i / TRIES + 1, sizeof(t));
			HARNESS_EQ(store_release(s, "greedy", key, t, NULL,
			    NULL), IDEM_OK);
			released++;
		}
		HARNESS_EQ(released, 10);
		greedy_count_is(40);
		snprintf(prefix, sizeof(prefix), "x%d-", round);
		HARNESS_EQ(claim_keys(s, prefix, 4), 10);
		greedy_count_is(50);
		HARNESS_EQ(store_purge(s, T0 + TTL + LEASE + 1000, 1000,
		    &purged), IDEM_OK);
		HARNESS_EQ(purged, 50);
		greedy_count_is(0);
	}
	store_close(s);
}

/*
 * Two handles on one store with different bounds (a host with a bound
 * of 50, then one configured with 20): each holds its own at once.  30
 * records in, the second refuses every claim, concurrent or not, while
 * the first still admits up to its 50; once everything is purged, the
 * second admits exactly 20, and the first exactly 30 more.
 */
static void
test_quota_bound_changed(void)
{
	struct store *s50 = open_store(50, 1), *s20 = open_store(20, 0);
	char key[16];
	size_t purged;
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s50);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s20);
	for (i = 0; i < 30; i++) {
		snprintf(key, sizeof(key), "first%d", i);
		HARNESS_EQ(claim(s50, "greedy", key, 1, T0), ENGINE_CLAIM);
	}
	HARNESS_EQ(claim(s20, "greedy", "over", 2, T0), -IDEM_ELIMIT);
	HARNESS_EQ(claim_keys(s20, "a", 2), 0);
	HARNESS_EQ(claim_keys(s50, "b", 4), 20);
	greedy_count_is(50);
	HARNESS_EQ(store_purge(s50, T0 + TTL + LEASE + 1000, 1000, &purged),
	    IDEM_OK);
	HARNESS_EQ(purged, 50);
	HARNESS_EQ(claim_keys(s20, "c", 4), 20);
	HARNESS_EQ(claim(s20, "greedy", "over", 2, T0), -IDEM_ELIMIT);
	HARNESS_EQ(claim_keys(s50, "d", 6), 30);
	greedy_count_is(50);
	store_close(s20);
	store_close(s50);
}

/*
 * A claim far from the bound reads its own slot of the count, not the
 * sum of the scope's slots: once its session holds an allowance, a
 * count that appears in another slot (as an older host's claims add in
 * a rolling upgrade, unseen by the allowances) does not refuse it, and
 * the claim costs its two statements in one round trip.  When the
 * allowance is used up, the claim reads the whole count, this one
 * included, and is refused.  One thread: the pool hands it the same
 * session each time.
 */
static void
test_quota_own_slot(void)
{
	struct store *s = open_store(1000000, 1);
	struct pgstore *ps;
	uint64_t stmts, trips;
	char key[16];
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	ps = pgstore_of(s);
	HARNESS_EQ(claim(s, "wide", "first", 1, T0), ENGINE_CLAIM);
	HARNESS_EQ(sql("INSERT INTO idem_quota (scope, slot, n) VALUES "
	    "('wide', 4096, 1000000)"), 0);
	for (i = 0; i < 4; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		stmts = __atomic_load_n(&ps->stmts, __ATOMIC_RELAXED);
		trips = __atomic_load_n(&ps->trips, __ATOMIC_RELAXED);
		HARNESS_EQ(claim(s, "wide", key, 1, T0), ENGINE_CLAIM);
		HARNESS_EQ(__atomic_load_n(&ps->stmts, __ATOMIC_RELAXED) -
		    stmts, 2);
		HARNESS_EQ(__atomic_load_n(&ps->trips, __ATOMIC_RELAXED) -
		    trips, 1);
	}
	HARNESS_EQ(sql("UPDATE idem_quota SET a = n WHERE scope = 'wide'"), 0);
	HARNESS_EQ(claim(s, "wide", "over", 1, T0), -IDEM_ELIMIT);
	HARNESS_EQ(sql("SELECT sum(n) FROM idem_quota WHERE scope = 'wide'"),
	    1000005);
	store_close(s);
}

/*
 * Far from its bound a scope's claims do not wait for each other: each
 * adds to its session's slot of the count, behind the scope's gate taken
 * shared.  Nearer than max_connections they pass the gate one at a time
 * and count exactly.  Here the first claims are far from the bound (the
 * count starts at 24, in a slot no session has, as if another host's),
 * the rest near it: exactly the bound's worth goes in.
 */
static void
test_quota_near_bound(void)
{
	long long conns = sql("SHOW max_connections");
	struct store *s;
	int tries;

	CU_ASSERT_FATAL(conns > 0);
	s = open_store((uint64_t)conns + 48, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	HARNESS_EQ(sql("INSERT INTO idem_quota (scope, slot, n) VALUES "
	    "('greedy', 4096, 24)"), 0);
	tries = (int)(conns + 24) / THREADS + 8;
	HARNESS_EQ(claim_many(s, tries), conns + 24);
	HARNESS_EQ(sql("SELECT count(*) FROM idem_keys WHERE scope = "
	    "'greedy'"), conns + 24);
	HARNESS_EQ(sql("SELECT sum(n) FROM idem_quota WHERE scope = 'greedy'"),
	    conns + 48);
	store_close(s);
}

/*
 * A scope's count is read right at any size: with a bound of 1,000,000
 * a scope holding 9,999, 10,000, 20,000 or 160,000 live records (as if
 * counted by another host, in a slot no session has) claims one more, and
 * one holding exactly the bound is refused.  sum() over bigint is a
 * numeric, whose binary form is not an integer's.
 */
static void
test_quota_large_counts(void)
{
	static const long long live[] = { 9999, 10000, 20000, 160000 };
	char q[160], key[32];
	struct store *s;
	size_t i;

	s = open_store(1000000, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	for (i = 0; i < sizeof(live) / sizeof(live[0]); i++) {
		snprintf(q, sizeof(q), "DELETE FROM idem_quota WHERE scope = "
		    "'big'; INSERT INTO idem_quota (scope, slot, n) VALUES "
		    "('big', 4096, %lld)", live[i]);
		HARNESS_EQ(sql(q), 0);
		snprintf(key, sizeof(key), "at-%lld", live[i]);
		HARNESS_EQ(claim(s, "big", key, 1, T0), ENGINE_CLAIM);
	}
	HARNESS_EQ(sql("DELETE FROM idem_quota WHERE scope = 'big'; INSERT "
	    "INTO idem_quota (scope, slot, n) VALUES ('big', 4096, 1000000)"),
	    0);
	HARNESS_EQ(claim(s, "big", "over", 1, T0), -IDEM_ELIMIT);
	store_close(s);
}

/*
 * Claims held inside their transactions: each one's hook counts itself
 * in, then waits until need of them are in (0: until the test lets them
 * go), 30 s at most; one that gave up counts in alone.
 */
struct hold {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int in, need, go, alone;
};

static int
hold_hook(void *ctx, struct idem_tx *tx)
{
	struct hold *h = ctx;
	struct timespec ts;

	(void)tx;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	pthread_mutex_lock(&h->mu);
	h->in++;
	pthread_cond_broadcast(&h->cv);
	while (!h->go && (h->need == 0 || h->in < h->need))
		if (pthread_cond_timedwait(&h->cv, &h->mu, &ts) != 0)
			break;
	if (!h->go && (h->need == 0 || h->in < h->need))
		h->alone++;
	pthread_mutex_unlock(&h->mu);
	return IDEM_OK;
}

static void
hold_init(struct hold *h, int need)
{
	memset(h, 0, sizeof(*h));
	h->need = need;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
}

static void
hold_release(struct hold *h)
{
	pthread_mutex_lock(&h->mu);
	h->go = 1;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

static void
hold_destroy(struct hold *h)
{
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->mu);
}

/* A claim of a new key on a thread of its own, held by h (NULL: not). */
struct held_claim {
	pthread_t tid;
	struct store *s;
	const char *scope, *key;
	struct hold *h;
	int rc, decision, done;
};

static void *
held_claim_main(void *arg)
{
	struct held_claim *w = arg;
	struct store_first first = { 0, NULL, 0, hold_hook, w->h, NULL };
	struct store_claim c;
	uint8_t t[REC_TOKEN_SIZE];

	memset(t, 9, sizeof(t));
	w->rc = store_claim(w->s, w->scope, w->key, fp_a, t, T0, LEASE, TTL,
	    w->h != NULL ? &first : NULL, &c);
	if (w->rc == IDEM_OK) {
		w->decision = (int)c.decision;
		rec_free(&c.rec);
	}
	__atomic_store_n(&w->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void
held_claim_start(struct held_claim *w, struct store *s, const char *scope,
    const char *key, struct hold *h)
{
	memset(w, 0, sizeof(*w));
	w->s = s;
	w->scope = scope;
	w->key = key;
	w->h = h;
	CU_ASSERT_FATAL(pthread_create(&w->tid, NULL, held_claim_main, w) ==
	    0);
}

/* Joins w: its key was claimed afresh. */
static void
held_claim_join(struct held_claim *w)
{
	pthread_join(w->tid, NULL);
	HARNESS_EQ(w->rc, IDEM_OK);
	HARNESS_EQ(w->decision, ENGINE_CLAIM);
}

/*
 * A claim whose session holds no allowance of the scope's bound passes
 * the scope's gate alone, and so waits for the claims inside: a claim A
 * with no allowance takes the gate exclusive (its grant) and waits
 * inside its transaction; a claim C, whose session has none either,
 * waits for the gate (the test sees its lock wait in pg_locks) until A
 * commits, then counts A.  Both are claimed.
 */
static void
test_quota_no_allowance(void)
{
	struct held_claim a, c;
	struct hold h;
	struct store *s;
	int i, waiting = 0;

	s = open_store(1000000, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	HARNESS_EQ(sql("INSERT INTO idem_quota (scope, slot, n) VALUES "
	    "('gated', 4096, 24)"), 0);
	hold_init(&h, 0);
	held_claim_start(&a, s, "gated", "a", &h);
	pthread_mutex_lock(&h.mu);
	while (h.in == 0 && !__atomic_load_n(&a.done, __ATOMIC_SEQ_CST))
		pthread_cond_wait(&h.cv, &h.mu);
	pthread_mutex_unlock(&h.mu);
	held_claim_start(&c, s, "gated", "c", NULL);
	/*
	 * C waits for the gate while A holds it: another server process's
	 * lock wait, seen only by asking, every 10 ms for 20 s at most.
	 */
	for (i = 0; i < 2000 && !waiting &&
	    !__atomic_load_n(&c.done, __ATOMIC_SEQ_CST); i++) {
		waiting = sql("SELECT count(*) FROM pg_locks WHERE locktype = "
		    "'advisory' AND NOT granted") > 0;
		if (!waiting)
			usleep(10000);
	}
	HARNESS_EQ(waiting, 1);
	HARNESS_EQ(__atomic_load_n(&c.done, __ATOMIC_SEQ_CST), 0);
	hold_release(&h);
	held_claim_join(&a);
	held_claim_join(&c);
	HARNESS_EQ(h.alone, 0);
	HARNESS_EQ(sql("SELECT sum(n) FROM idem_quota WHERE scope = 'gated'"),
	    24 + 2);
	hold_destroy(&h);
	store_close(s);
}

/*
 * Two new keys of one scope are claimed at once, each waiting in its
 * claim's transaction for the other to be there too: neither waits for
 * the other's commit, with a bound far off and an allowance in every
 * slot of the scope, as with none.
 */
static void
test_quota_no_queue(void)
{
	static const uint64_t bounds[] = { 1000000, 0 };
	struct held_claim w[2];
	struct hold h;
	struct store *s;
	size_t b;

	for (b = 0; b < sizeof(bounds) / sizeof(bounds[0]); b++) {
		s = open_store(bounds[b], 1);
		CU_ASSERT_PTR_NOT_NULL_FATAL(s);
		/* Every slot holds an allowance, as after a grant. */
		if (bounds[b] != 0)
			HARNESS_EQ(sql("INSERT INTO idem_quota (scope, slot, n, "
			    "a, b) SELECT 'busy', g, 0, 100, 1000000 FROM "
			    "generate_series(0, " PG_STR(PG_COUNT_SLOTS) " - 1) "
			    "g"), 0);
		hold_init(&h, 2);
		held_claim_start(&w[0], s, "busy", "k1", &h);
		held_claim_start(&w[1], s, "busy", "k2", &h);
		held_claim_join(&w[0]);
		held_claim_join(&w[1]);
		HARNESS_EQ(h.alone, 0);
		HARNESS_EQ(sql("SELECT sum(n) FROM idem_quota WHERE scope = "
		    "'busy'"), 2);
		hold_destroy(&h);
		store_close(s);
	}
}

/* The record of (scope, key) as the store reads it: its state, or -rc. */
static int
rec_state(struct store *s, const char *scope, const char *key, struct rec *r)
{
	int rc;

	if ((rc = store_lookup(s, scope, key, r)) != IDEM_OK)
		return -rc;
	return (int)r->state;
}

/*
 * A COMMIT that answers success with a warning that its wait for
 * synchronous replication was cancelled (by a query cancel: SQLSTATE
 * 01000, the default of a WARNING, as syncrep.c raises it; by a
 * termination: 57P01) committed only locally, and may be lost to a
 * failover: the write fails (IDEM_EIO), a claim as a completion.  A
 * deferred constraint trigger makes the server send that warning while
 * it commits, without a standby.
 */
static void
test_syncrep_cancelled(void)
{
	static const char *const codes[][2] = {
		{ "01000", "canceling wait for synchronous replication due "
		    "to user request" },
		{ "57P01", "canceling the wait for synchronous replication "
		    "and terminating connection due to administrator "
		    "command" },
	};
	struct store *s = open_store(0, 1);
	struct rec_response resp;
	struct rec r;
	uint8_t t[REC_TOKEN_SIZE];
	char q[1024], key[32];
	size_t i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	memset(&resp, 0, sizeof(resp));
	resp.status = 201;
	memset(t, 1, sizeof(t));
	HARNESS_EQ(sql("CREATE OR REPLACE FUNCTION idem_test_syncrep() "
	    "RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
	    "RAISE WARNING USING MESSAGE = TG_ARGV[1], DETAIL = 'The "
	    "transaction has already committed locally, but might not have "
	    "been replicated to the standby.', ERRCODE = TG_ARGV[0]; "
	    "RETURN NULL; END $$"), 0);
	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		snprintf(q, sizeof(q), "CREATE CONSTRAINT TRIGGER "
		    "idem_test_syncrep AFTER INSERT OR UPDATE OR DELETE ON "
		    "idem_keys DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
		    "EXECUTE FUNCTION idem_test_syncrep('%s', '%s')",
		    codes[i][0], codes[i][1]);
		HARNESS_EQ(sql(q), 0);
		snprintf(key, sizeof(key), "claim-%s", codes[i][0]);
		HARNESS_EQ(claim(s, "acct", key, 1, T0), -IDEM_EIO);
		HARNESS_EQ(sql("DROP TRIGGER idem_test_syncrep ON idem_keys"),
		    0);
		snprintf(key, sizeof(key), "done-%s", codes[i][0]);
		HARNESS_EQ(claim(s, "acct", key, 1, T0), ENGINE_CLAIM);
		HARNESS_EQ(sql(q), 0);
		HARNESS_EQ(store_complete(s, "acct", key, t, &resp, NULL, NULL,
		    T0, TTL), IDEM_EIO);
		HARNESS_EQ(sql("DROP TRIGGER idem_test_syncrep ON idem_keys"),
		    0);
		/* Without the warning the same writes go through. */
		snprintf(key, sizeof(key), "plain-%s", codes[i][0]);
		HARNESS_EQ(claim(s, "acct", key, 1, T0), ENGINE_CLAIM);
		HARNESS_EQ(store_complete(s, "acct", key, t, &resp, NULL, NULL,
		    T0, TTL), IDEM_OK);
		HARNESS_EQ(rec_state(s, "acct", key, &r), REC_COMPLETED);
		rec_free(&r);
	}
	HARNESS_EQ(sql("DROP FUNCTION idem_test_syncrep()"), 0);
	store_close(s);
}

/*
 * A COMMIT that does not answer within the statement timeout (which the
 * server does not apply to a COMMIT's wait for synchronous replication)
 * is cancelled, and the write fails, having written nothing: here a
 * deferred trigger sleeps for 60 s as the transaction commits, and the
 * store's statement timeout is 200 ms.
 */
static void
test_commit_deadline(void)
{
	struct store_config cfg = { NULL, 0, 0, 0, 0, tables, NULL,
	    0, 200, 0, 0 };
	struct store *s = NULL;
	int d;

	cfg.dir = harness_store(NULL, 1);
	HARNESS_EQ(store_open(&cfg, &s), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	HARNESS_EQ(sql("CREATE OR REPLACE FUNCTION idem_test_stall() "
	    "RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
	    "PERFORM pg_sleep(60); RETURN NULL; END $$; "
	    "CREATE CONSTRAINT TRIGGER idem_test_stall AFTER INSERT ON "
	    "idem_keys DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE "
	    "FUNCTION idem_test_stall()"), 0);
	d = claim(s, "acct", "k", 1, T0);
	CU_ASSERT(d == -IDEM_EBUSY || d == -IDEM_EIO);
	HARNESS_EQ(sql("DROP TRIGGER idem_test_stall ON idem_keys; "
	    "DROP FUNCTION idem_test_stall()"), 0);
	HARNESS_EQ(sql("SELECT count(*) FROM idem_keys"), 0);
	HARNESS_EQ(claim(s, "acct", "k", 1, T0), ENGINE_CLAIM);
	store_close(s);
}

/*
 * A server that stops answering (its backend stopped, as a paused VM or
 * a stuck disk leaves it: connected, silent, its kernel acknowledging
 * everything) fails a call within the statement timeout, the cancel's
 * grace and some slack, instead of holding it for as long as it is
 * silent: a read (one statement) and a claim (a pipeline) each on a
 * session whose backend is stopped.  A watchdog continues the backend
 * after 15 s whatever happens, so that a call that waits for the answer
 * ends and the test fails on its time instead of hanging.  The next
 * call opens a new session and goes through.
 */
struct stopped {
	pid_t pid;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
};

static void *
stopped_watchdog(void *arg)
{
	struct stopped *w = arg;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 15;
	pthread_mutex_lock(&w->mu);
	while (!w->done)
		if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) != 0)
			break;
	pthread_mutex_unlock(&w->mu);
	(void)kill(w->pid, SIGCONT);
	return NULL;
}

/* The backend of the session the next single-threaded call takes. */
static pid_t
next_backend(struct store *s)
{
	struct pgstore *ps = pgstore_of(s);

	return ps->conns[0].c != NULL ? (pid_t)PQbackendPID(ps->conns[0].c) :
	    -1;
}

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Runs op (0: a lookup, 1: a claim) with the next session's backend stopped. */
static void
silent_call(struct store *s, int op, const char *key)
{
	struct stopped w = { 0 };
	pthread_t t;
	struct rec r;
	uint64_t t0, ms;
	int rc;

	w.pid = next_backend(s);
	CU_ASSERT_FATAL(w.pid > 0);
	pthread_mutex_init(&w.mu, NULL);
	pthread_cond_init(&w.cv, NULL);
	HARNESS_EQ(kill(w.pid, SIGSTOP), 0);
	CU_ASSERT_FATAL(pthread_create(&t, NULL, stopped_watchdog, &w) == 0);
	t0 = mono_ms();
	if (op == 0) {
		rc = store_lookup(s, "acct", key, &r);
		if (rc == IDEM_OK)
			rec_free(&r);
	} else
		rc = -claim(s, "acct", key, 1, T0);
	ms = mono_ms() - t0;
	pthread_mutex_lock(&w.mu);
	w.done = 1;
	pthread_cond_signal(&w.cv);
	pthread_mutex_unlock(&w.mu);
	pthread_join(t, NULL);
	CU_ASSERT(rc == IDEM_EIO || rc == IDEM_EBUSY);
	if (rc != IDEM_EIO && rc != IDEM_EBUSY)
		fprintf(stderr, "  op %d: %d after %llu ms\n", op, rc,
		    (unsigned long long)ms);
	/* 300 ms, the slack and the grace: well under 15 s. */
	CU_ASSERT(ms < 300 + PG_DEADLINE_SLACK_MS + PG_CANCEL_GRACE_MS + 2000);
	if (ms >= 300 + PG_DEADLINE_SLACK_MS + PG_CANCEL_GRACE_MS + 2000)
		fprintf(stderr, "  %s on a stopped backend: %llu ms\n",
		    op == 0 ? "a lookup" : "a claim", (unsigned long long)ms);
	pthread_cond_destroy(&w.cv);
	pthread_mutex_destroy(&w.mu);
}

static void
test_silent_server(void)
{
	struct store_config cfg = { NULL, 0, 0, 0, 0, tables, NULL,
	    0, 300, 0, 0 };
	struct store *s = NULL;
	struct rec r;

	cfg.dir = harness_store(NULL, 1);
	HARNESS_EQ(store_open(&cfg, &s), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	HARNESS_EQ(claim(s, "acct", "before", 1, T0), ENGINE_CLAIM);
	silent_call(s, 0, "before");
	/* A new session in the stopped one's place. */
	HARNESS_EQ(store_lookup(s, "acct", "before", &r), IDEM_OK);
	rec_free(&r);
	silent_call(s, 1, "during");
	HARNESS_EQ(store_lookup(s, "acct", "before", &r), IDEM_OK);
	rec_free(&r);
	HARNESS_EQ(claim(s, "acct", "after", 1, T0), ENGINE_CLAIM);
	store_close(s);
}

/*
 * A session's server side is bounded as well: a transaction its host
 * leaves open (a partition that keeps both sockets open) ends after as
 * long as a statement may run, with its locks.
 */
static void
test_session_bounds(void)
{
	struct store_config cfg = { NULL, 0, 0, 0, 0, tables, NULL,
	    0, 300, 0, 0 };
	struct store *s = NULL;
	struct pgconn *pc;
	PGresult *res;

	cfg.dir = harness_store(NULL, 1);
	HARNESS_EQ(store_open(&cfg, &s), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	HARNESS_EQ(pg_acquire(pgstore_of(s), &pc), IDEM_OK);
	HARNESS_EQ(pg_exec(pc, "SELECT current_setting("
	    "'idle_in_transaction_session_timeout')::text", NULL, &res),
	    IDEM_OK);
	if (res != NULL) {
		CU_ASSERT_STRING_EQUAL(PQgetvalue(res, 0, 0), "300ms");
		PQclear(res);
	}
	/* Left idle in a transaction past it, the session is ended. */
	pc->begin = 1;
	HARNESS_EQ(pg_run(pc, "SELECT 1", NULL), IDEM_OK);
	HARNESS_EQ(sql("SELECT count(*) FROM pg_sleep(1.5)"), 1);
	CU_ASSERT(pg_run(pc, "SELECT 1", NULL) == IDEM_EIO);
	pg_release(pgstore_of(s), pc);
	store_close(s);
}

/*
 * A server behind what this process has seen of the store is refused,
 * on a session of the pool checked again as on a new one: on an older
 * timeline (a primary a failover left behind, continued after its
 * successor was used) or on the same timeline at a lower WAL position.
 * The marks are the test's to set; with them back, calls go through.
 */
static void
test_stale_refused(void)
{
	struct store *s = open_store(0, 1);
	struct pgstore *ps;
	struct rec r;
	uint32_t tl;
	uint64_t lsn;
	size_t i;
	int step;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	ps = pgstore_of(s);
	HARNESS_EQ(claim(s, "acct", "k", 1, T0), ENGINE_CLAIM);
	pthread_mutex_lock(&ps->mu);
	tl = ps->seen_timeline;
	lsn = ps->seen_lsn;
	pthread_mutex_unlock(&ps->mu);
	CU_ASSERT(tl >= 1);
	CU_ASSERT(lsn > 0);
	for (step = 0; step < 2; step++) {
		pthread_mutex_lock(&ps->mu);
		if (step == 0)
			ps->seen_timeline = tl + 1;
		else
			ps->seen_lsn = lsn + ((uint64_t)1 << 40);
		pthread_mutex_unlock(&ps->mu);
		/* Every session is due its check, as after a pause. */
		for (i = 0; i < PG_POOL_MAX; i++)
			ps->conns[i].checked_at = 1;
		HARNESS_EQ(store_lookup(s, "acct", "k", &r), IDEM_EIO);
		/* A new session to the same server is refused too. */
		HARNESS_EQ(store_lookup(s, "acct", "k", &r), IDEM_EIO);
		HARNESS_EQ(claim(s, "acct", "k2", 1, T0), -IDEM_EIO);
		pthread_mutex_lock(&ps->mu);
		ps->seen_timeline = tl;
		ps->seen_lsn = 0;
		pthread_mutex_unlock(&ps->mu);
		HARNESS_EQ(store_lookup(s, "acct", "k", &r), IDEM_OK);
		rec_free(&r);
	}
	HARNESS_EQ(sql("SELECT count(*) FROM idem_keys WHERE key = 'k2'"),
	    0);
	store_close(s);
}

/* A claim on a thread of its own, whose end the test can wait for. */
struct timed_claim {
	pthread_t tid;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct store *s;
	const char *key;
	int d, done;
};

static void *
timed_claim_main(void *arg)
{
	struct timed_claim *w = arg;
	int d = claim(w->s, "acct", w->key, 2, T0 + LEASE + 1);

	pthread_mutex_lock(&w->mu);
	w->d = d;
	w->done = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Whether w's claim ended within secs seconds. */
static int
timed_claim_wait(struct timed_claim *w, int secs)
{
	struct timespec ts;
	int done;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += secs;
	pthread_mutex_lock(&w->mu);
	while (!w->done)
		if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) != 0)
			break;
	done = w->done;
	pthread_mutex_unlock(&w->mu);
	return done;
}

/*
 * A claim that waits for a row lock another session holds gives up
 * after the lock timeout with IDEM_EBUSY (503 with Retry-After) instead
 * of waiting for as long as the other holds it: here a session of the
 * test's own holds the record's row (SELECT ... FOR UPDATE) and lets it
 * go only after the claim has answered, or after 60 s.  The claim comes
 * after the lease, to take the claim over, which it decides with the
 * row locked (a claim that only answers from the record, a 409 here
 * before the lease ends, reads it without waiting).
 */
static void
test_lock_timeout(void)
{
	struct store *s = open_store(0, 1);
	struct timed_claim w;
	PGconn *c;
	PGresult *r;
	int ended;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	HARNESS_EQ(claim(s, "acct", "k", 1, T0), ENGINE_CLAIM);
	c = PQconnectdb(getenv("IDEM_TEST_PG"));
	CU_ASSERT_FATAL(PQstatus(c) == CONNECTION_OK);
	r = PQexec(c, "BEGIN; SELECT 1 FROM idem_keys WHERE key = 'k' "
	    "FOR UPDATE");
	HARNESS_EQ(PQresultStatus(r), PGRES_TUPLES_OK);
	PQclear(r);
	memset(&w, 0, sizeof(w));
	w.s = s;
	w.key = "k";
	pthread_mutex_init(&w.mu, NULL);
	pthread_cond_init(&w.cv, NULL);
	CU_ASSERT_FATAL(pthread_create(&w.tid, NULL, timed_claim_main, &w) ==
	    0);
	ended = timed_claim_wait(&w, 60);
	r = PQexec(c, "ROLLBACK");
	PQclear(r);
	PQfinish(c);
	pthread_join(w.tid, NULL);
	HARNESS_EQ(ended, 1);
	HARNESS_EQ(w.d, -IDEM_EBUSY);
	/* The lock gone, the same claim is answered (another's claim). */
	HARNESS_EQ(claim(s, "acct", "k", 2, T0), ENGINE_CONFLICT);
	pthread_cond_destroy(&w.cv);
	pthread_mutex_destroy(&w.mu);
	store_close(s);
}

/*
 * A call that finds every session of the pool taken waits for one for
 * the pool wait, then fails with IDEM_EBUSY instead of waiting for as
 * long as they are held: here PG_POOL_MAX claims hold theirs in their
 * hooks until the test lets them go (or 30 s have passed).
 */
static void
test_pool_wait(void)
{
	struct store *s = open_store(0, 1);
	struct held_claim w[PG_POOL_MAX];
	struct timespec ts;
	struct hold h;
	char keys[PG_POOL_MAX][16];
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	hold_init(&h, 0);
	for (i = 0; i < PG_POOL_MAX; i++) {
		snprintf(keys[i], sizeof(keys[i]), "held%d", i);
		held_claim_start(&w[i], s, "acct", keys[i], &h);
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	pthread_mutex_lock(&h.mu);
	while (h.in < PG_POOL_MAX)
		if (pthread_cond_timedwait(&h.cv, &h.mu, &ts) != 0)
			break;
	HARNESS_EQ(h.in, PG_POOL_MAX);
	pthread_mutex_unlock(&h.mu);
	HARNESS_EQ(claim(s, "acct", "extra", 1, T0), -IDEM_EBUSY);
	hold_release(&h);
	for (i = 0; i < PG_POOL_MAX; i++)
		held_claim_join(&w[i]);
	HARNESS_EQ(h.alone, 0);
	HARNESS_EQ(claim(s, "acct", "extra", 1, T0), ENGINE_CLAIM);
	hold_destroy(&h);
	store_close(s);
}

/* A hook's rows: put, update, delete. */
struct rows_job {
	int id;
};

static int
rows_hook(void *ctx, struct idem_tx *tx)
{
	const struct rows_job *j = ctx;
	char k[32];
	int i, rc;

	for (i = 0; i < 6; i++) {
		snprintf(k, sizeof(k), "r%d-%d", j->id, i);
		if ((rc = idem_tx_put(tx, "payments", k, strlen(k), "a", 1)) !=
		    IDEM_OK ||
		    (rc = idem_tx_put(tx, "payments", k, strlen(k), "b", 1)) !=
		    IDEM_OK)
			return rc;
	}
	snprintf(k, sizeof(k), "r%d-0", j->id);
	if ((rc = idem_tx_del(tx, "payments", k, strlen(k))) != IDEM_OK)
		return rc;
	snprintf(k, sizeof(k), "i%d", j->id);
	return idem_tx_put(tx, "by_account", k, strlen(k), "c", 1);
}

struct rows_thread {
	pthread_t tid;
	struct store *s;
	int id, failed;
};

static void *
rows_main(void *arg)
{
	struct rows_thread *r = arg;
	struct rec_response resp;
	struct rows_job j;
	uint8_t t[REC_TOKEN_SIZE];
	char key[32];
	int i;

	memset(&resp, 0, sizeof(resp));
	resp.status = 201;
	memset(t, r->id + 1, sizeof(t));
	for (i = 0; i < 4; i++) {
		snprintf(key, sizeof(key), "c%d-%d", r->id, i);
		j.id = r->id * 10 + i;
		if (claim(r->s, "acct", key, r->id + 1, T0) != ENGINE_CLAIM ||
		    store_complete(r->s, "acct", key, t, &resp, rows_hook, &j,
		    T0, TTL) != IDEM_OK)
			r->failed++;
		snprintf(key, sizeof(key), "once%d", i);
		(void)store_insert_once(r->s, "by_account", key, strlen(key),
		    "v", 1, NULL);
	}
	return NULL;
}

/*
 * A table's count, kept by the writes of many threads at once (inserts,
 * updates, deletes in hooks; insert_once racing on the same keys), is
 * the rows' count.
 */
static void
test_counts(void)
{
	struct store *s = open_store(0, 1);
	struct rows_thread r[THREADS];
	size_t n;
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	for (i = 0; i < THREADS; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].s = s;
		r[i].id = i;
		CU_ASSERT_FATAL(pthread_create(&r[i].tid, NULL, rows_main,
		    &r[i]) == 0);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(r[i].tid, NULL);
		HARNESS_EQ(r[i].failed, 0);
	}
	HARNESS_EQ(store_count(s, "payments", &n), IDEM_OK);
	HARNESS_EQ(n, THREADS * 4 * 5);
	HARNESS_EQ(sql("SELECT count(*) FROM idem_rows WHERE tbl = "
	    "'payments'"), THREADS * 4 * 5);
	HARNESS_EQ(store_count(s, "by_account", &n), IDEM_OK);
	HARNESS_EQ(n, THREADS * 4 + 4);
	HARNESS_EQ(sql("SELECT count(*) FROM idem_rows WHERE tbl = "
	    "'by_account'"), THREADS * 4 + 4);
	store_close(s);
}

/*
 * The migration that adds the counts starts them from what is stored:
 * the database is taken back to version 1 with records and rows in it.
 */
static void
test_migrate_counts(void)
{
	struct store *s = open_store(0, 1);
	char err[256];
	size_t n;
	int from, to;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	fill(s);
	store_close(s);
	HARNESS_EQ(sql("DROP TABLE idem_quota, idem_counts, idem_gens; "
	    "DELETE FROM idem_schema_version WHERE version > 1"), 0);
	HARNESS_EQ(store_pg_migrate(getenv("IDEM_TEST_PG"), &from, &to, err,
	    sizeof(err)), 0);
	HARNESS_EQ(from, 1);
	HARNESS_EQ(to, PG_SCHEMA_VERSION);
	HARNESS_EQ(sql("SELECT sum(n) FROM idem_quota WHERE scope = 'acct'"),
	    MANY);
	s = open_store(0, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	HARNESS_EQ(store_count(s, "payments", &n), IDEM_OK);
	HARNESS_EQ(n, MANY + 4);
	store_close(s);
}

/* The completion's hook of a payment (payments/post.c): two rows put. */
static int
payment_rows_hook(void *ctx, struct idem_tx *tx)
{
	const char *key = ctx;
	int rc;

	if ((rc = store_tx_put(tx, "payments", key, strlen(key), "row", 3)) !=
	    IDEM_OK)
		return rc;
	return store_tx_put(tx, "by_account", key, strlen(key), "idx", 3);
}

/*
 * What a fresh payment costs the database: its claim (with the scope
 * bounded, as a payments host's is) and its completion, whose hook puts
 * the payment's two rows, take at most 4 statements and 3 round trips,
 * on a session that has run them before or not.  What they wrote is
 * all there: the completed record, both rows, the counts.
 */
static void
test_payment_cost(void)
{
	struct store *s = open_store(1000000, 1);
	struct pgstore *ps;
	struct rec_response resp;
	struct rec r;
	uint8_t t[REC_TOKEN_SIZE];
	uint64_t stmts, trips;
	size_t n;
	char key[16];
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	ps = pgstore_of(s);
	memset(&resp, 0, sizeof(resp));
	resp.status = 201;
	for (i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "pay%d", i);
		memset(t, i + 1, sizeof(t));
		stmts = __atomic_load_n(&ps->stmts, __ATOMIC_RELAXED);
		trips = __atomic_load_n(&ps->trips, __ATOMIC_RELAXED);
		HARNESS_EQ(claim(s, "acct", key, i + 1, T0), ENGINE_CLAIM);
		HARNESS_EQ(store_complete(s, "acct", key, t, &resp,
		    payment_rows_hook, key, T0, TTL), IDEM_OK);
		stmts = __atomic_load_n(&ps->stmts, __ATOMIC_RELAXED) - stmts;
		trips = __atomic_load_n(&ps->trips, __ATOMIC_RELAXED) - trips;
		printf("\n  payment %d: %llu statements, %llu round trips ", i,
		    (unsigned long long)stmts, (unsigned long long)trips);
		CU_ASSERT(stmts <= 4);
		CU_ASSERT(trips <= 3);
		HARNESS_EQ(rec_state(s, "acct", key, &r), REC_COMPLETED);
		HARNESS_EQ(r.resp.status, 201);
		rec_free(&r);
	}
	HARNESS_EQ(store_count(s, "payments", &n), IDEM_OK);
	HARNESS_EQ(n, 3);
	HARNESS_EQ(store_count(s, "by_account", &n), IDEM_OK);
	HARNESS_EQ(n, 3);
	HARNESS_EQ(sql("SELECT count(*) FROM idem_rows"), 6);
	HARNESS_EQ(sql("SELECT sum(n) FROM idem_quota WHERE scope = 'acct'"),
	    3);
	store_close(s);
}

/* The host clock of a host whose clock runs ahead by ahead_ms. */
static uint64_t ahead_ms;

static uint64_t
real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t
ahead_clock(void)
{
	return real_ms() + ahead_ms;
}

/*
 * Leases are judged by the database's clock.  Host B's clock runs a
 * lease and a second ahead (its system clock, and its handle's, which
 * reads it); host A's is right.  B does not take over A's live claim
 * (409), and what B writes is dated by the server's clock: its fresh
 * claim's creation and lease are the server's time, so A, too, sees it
 * live.
 */
static void
test_clock_ahead(void)
{
	struct store *a = open_store(0, 1), *b = open_store(0, 0);
	uint64_t now = real_ms();
	struct rec r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	ahead_ms = LEASE + 1000;
	pgstore_of(b)->host_clock = ahead_clock;
	HARNESS_EQ(claim(a, "acct", "k", 1, now), ENGINE_CLAIM);
	HARNESS_EQ(claim(b, "acct", "k", 2, ahead_clock()), ENGINE_CONFLICT);
	HARNESS_EQ(rec_state(a, "acct", "k", &r), REC_IN_PROGRESS);
	CU_ASSERT(r.token[0] == 1);
	rec_free(&r);
	HARNESS_EQ(claim(b, "acct", "k2", 2, ahead_clock()), ENGINE_CLAIM);
	HARNESS_EQ(rec_state(a, "acct", "k2", &r), REC_IN_PROGRESS);
	CU_ASSERT(r.created_ms >= now && r.created_ms < real_ms() + 1000);
	CU_ASSERT(r.lease_ms < real_ms() + LEASE + 1000);
	rec_free(&r);
	HARNESS_EQ(claim(a, "acct", "k2", 1, real_ms()), ENGINE_CONFLICT);
	store_close(b);
	store_close(a);
}

#ifdef IDEM_FAULT_POINTS
/*
 * A write whose transaction fails as it begins (the fault point
 * store_wait:fail) fails and leaves nothing; the next one commits.
 */
static void
test_failed_begin(void)
{
	struct store *s = open_store(0, 1);

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	setenv("IDEM_FAULT", "store_wait:fail", 1);
	HARNESS_EQ(claim(s, "acct", "k", 1, T0), -IDEM_EFULL);
	unsetenv("IDEM_FAULT");
	HARNESS_EQ(sql("SELECT count(*) FROM idem_keys"), 0);
	HARNESS_EQ(claim(s, "acct", "k", 1, T0), ENGINE_CLAIM);
	HARNESS_EQ(sql("SELECT count(*) FROM idem_keys"), 1);
	store_close(s);
}

/*
 * A session whose pipeline (BEGIN and the first statement) cannot be
 * left, its results unread (store_pg_pipeline:fail), fails its write,
 * which leaves nothing; the pool replaces it, so every later write
 * commits, on each of the pool's sessions.
 */
static void
test_pipeline_left(void)
{
	struct store *s = open_store(0, 1);
	char key[16];
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	setenv("IDEM_FAULT", "store_pg_pipeline:fail", 1);
	HARNESS_EQ(claim(s, "acct", "k", 1, T0), -IDEM_EIO);
	unsetenv("IDEM_FAULT");
	HARNESS_EQ(sql("SELECT count(*) FROM idem_keys"), 0);
	for (i = 0; i < 2 * PG_POOL_MAX; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		HARNESS_EQ(claim(s, "acct", key, 1, T0), ENGINE_CLAIM);
	}
	HARNESS_EQ(claim(s, "acct", "k", 1, T0), ENGINE_CLAIM);
	HARNESS_EQ(sql("SELECT count(*) FROM idem_keys"), 2 * PG_POOL_MAX + 1);
	store_close(s);
}
/*
 * A write whose COMMIT reached the server, which committed it and
 * answered, but whose answer was lost with the session
 * (store_pg_commit_lost:fail closes the session once the answer is
 * there, unread), is read back on a new session: the claim's token in
 * the record, in the state the write left, means it committed, and the
 * write succeeds with its decision.  Each write that carries the token
 * is read back so: claim, checkpoint, abandon, complete, release.
 */
static void
test_commit_lost(void)
{
	struct store *s = open_store(0, 1);
	struct rec_response resp;
	struct rec r;
	uint8_t t[REC_TOKEN_SIZE];

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	memset(&resp, 0, sizeof(resp));
	resp.status = 201;
	memset(t, 1, sizeof(t));
	setenv("IDEM_FAULT", "store_pg_commit_lost:fail", 1);
	HARNESS_EQ(claim(s, "acct", "k", 1, T0), ENGINE_CLAIM);
	HARNESS_EQ(store_checkpoint(s, "acct", "k", t, 1, "cp", 2, T0, LEASE),
	    IDEM_OK);
	HARNESS_EQ(store_abandon(s, "acct", "k", t, T0 + 1), IDEM_OK);
	HARNESS_EQ(store_complete(s, "acct", "k", t, &resp, NULL, NULL, T0,
	    TTL), IDEM_OK);
	HARNESS_EQ(claim(s, "acct", "gone", 1, T0), ENGINE_CLAIM);
	HARNESS_EQ(store_release(s, "acct", "gone", t, NULL, NULL), IDEM_OK);
	unsetenv("IDEM_FAULT");
	HARNESS_EQ(rec_state(s, "acct", "k", &r), REC_COMPLETED);
	HARNESS_EQ(r.stage, 1);
	HARNESS_EQ(r.resp.status, 201);
	rec_free(&r);
	HARNESS_EQ(rec_state(s, "acct", "gone", &r), -IDEM_ENOTFOUND);
	HARNESS_EQ(sql("SELECT count(*) FROM idem_keys"), 1);
	HARNESS_EQ(sql("SELECT sum(n) FROM idem_quota WHERE scope = 'acct'"),
	    1);
	store_close(s);
}

/*
 * A write whose session is lost before its COMMIT reaches the server
 * (store_pg_commit_unsent:fail) did not commit: the record read back
 * does not show it, and the write fails with IDEM_EIO, leaving nothing.
 */
static void
test_commit_unsent(void)
{
	struct store *s = open_store(0, 1);
	struct rec_response resp;
	struct rec r;
	uint8_t t[REC_TOKEN_SIZE];

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	memset(&resp, 0, sizeof(resp));
	resp.status = 201;
	memset(t, 1, sizeof(t));
	setenv("IDEM_FAULT", "store_pg_commit_unsent:fail", 1);
	HARNESS_EQ(claim(s, "acct", "k", 1, T0), -IDEM_EIO);
	unsetenv("IDEM_FAULT");
	HARNESS_EQ(sql("SELECT count(*) FROM idem_keys"), 0);
	HARNESS_EQ(claim(s, "acct", "k", 1, T0), ENGINE_CLAIM);
	setenv("IDEM_FAULT", "store_pg_commit_unsent:fail", 1);
	HARNESS_EQ(store_checkpoint(s, "acct", "k", t, 1, "cp", 2, T0, LEASE),
	    IDEM_EIO);
	HARNESS_EQ(store_complete(s, "acct", "k", t, &resp, NULL, NULL, T0,
	    TTL), IDEM_EIO);
	HARNESS_EQ(store_release(s, "acct", "k", t, NULL, NULL), IDEM_EIO);
	unsetenv("IDEM_FAULT");
	HARNESS_EQ(rec_state(s, "acct", "k", &r), REC_IN_PROGRESS);
	HARNESS_EQ(r.stage, 0);
	rec_free(&r);
	store_close(s);
}
#endif

int
harness_suites(void)
{
	static const struct {
		const char *name;
		CU_TestFunc fn;
	} tests[] = {
		{ "walks: more rows than a batch, in order",
		    test_walk_batches },
		{ "walks: the callback stops early", test_walk_stops_early },
		{ "per-scope bound exact under concurrency",
		    test_quota_concurrent },
		{ "per-scope bound exact from far to near",
		    test_quota_near_bound },
		{ "a scope's count read right past 9,999",
		    test_quota_large_counts },
		{ "the bound is exact, round after round",
		    test_quota_rounds },
		{ "a bound changed on a second handle holds at once",
		    test_quota_bound_changed },
		{ "a claim far from the bound reads its own slot",
		    test_quota_own_slot },
		{ "one scope's claims do not queue on its count",
		    test_quota_no_queue },
		{ "a claim with no allowance waits for those inside",
		    test_quota_no_allowance },
		{ "table counts under concurrency", test_counts },
		{ "a fresh payment: 4 statements, 3 round trips at most",
		    test_payment_cost },
		{ "leases judged by the database's clock", test_clock_ahead },
		{ "migration starts the counts", test_migrate_counts },
		{ "a COMMIT not replicated synchronously fails",
		    test_syncrep_cancelled },
		{ "a COMMIT that does not answer is cancelled",
		    test_commit_deadline },
		{ "a claim held up by a row lock gives up", test_lock_timeout },
		{ "a call finding the pool taken gives up", test_pool_wait },
		{ "a silent server fails calls in time", test_silent_server },
		{ "a session's server side is bounded", test_session_bounds },
		{ "a server behind what was seen is refused",
		    test_stale_refused },
#ifdef IDEM_FAULT_POINTS
		{ "a write that cannot begin leaves nothing",
		    test_failed_begin },
		{ "a session left in its pipeline is replaced",
		    test_pipeline_left },
		{ "a COMMIT whose answer is lost is read back",
		    test_commit_lost },
		{ "a COMMIT that never reached the server fails",
		    test_commit_unsent },
#endif
	};
	CU_pSuite s;
	size_t i;

	if (!harness_pg())
		return 0;
	if ((s = CU_add_suite("store_pg", suite_init, NULL)) == NULL)
		return -1;
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL)
			return -1;
	return 0;
}
