/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the library's entry point (idem.h): the keyed lifecycle,
 * hooks inside the store's transactions, application rows by table name,
 * and Retry-After, each on its own store and its own clock.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "idem.h"
#include "idem_backend.h"
#include "idem_int.h"
#include "buf.h"
#include "metrics.h"
#include "replay_cache.h"
#include "store.h"

#define T0 1700000000000ULL
#define LEASE 30000ULL
#define TTL 86400000ULL

static char dir[512];
static struct idem *idem;
static uint64_t now_ms;
static uint8_t fp_a[IDEM_FP_SIZE], fp_b[IDEM_FP_SIZE];
static const char *const tables[] = { "rows", "counter", NULL };

static uint64_t stall_ms;  /* the clock moves this much after each reading */

/* Atomic: the threads of the concurrency test read it at once. */
static uint64_t
test_clock(void *ctx)
{
	return __atomic_fetch_add((uint64_t *)ctx, stall_ms, __ATOMIC_SEQ_CST);
}

static struct idem *
open_with(uint64_t max_keys)
{
	struct idem_options opt;
	struct idem *h = NULL;

	memset(&opt, 0, sizeof(opt));
	opt.size = sizeof(opt);
	opt.dir = harness_store(dir, 0);
	opt.lease_ms = LEASE;
	opt.ttl_ms = TTL;
	opt.max_keys_per_scope = max_keys;
	opt.tables = tables;
	opt.clock = test_clock;
	opt.clock_ctx = &now_ms;
	if (idem_open(&opt, &h) != IDEM_OK)
		return NULL;
	return h;
}

static int
suite_init(void)
{
	memset(fp_a, 0xaa, sizeof(fp_a));
	memset(fp_b, 0xbb, sizeof(fp_b));
	return 0;
}

static void
up(void)
{
	harness_mkdtemp(dir, sizeof(dir));
	(void)harness_store(dir, 1);
	now_ms = T0;
	idem = open_with(0);
}

static void
down(void)
{
	metrics_close();
	idem_close(idem);
	harness_rmdir(dir);
}

static const char cp[] = "pay_123";

/* Makes the recovery point, and counts how often it was asked for. */
static int
make_start(void *ctx, struct idem_start *out)
{
	(*(int *)ctx)++;
	out->stage = 1;
	out->point = cp;
	out->len = sizeof(cp);
	return IDEM_OK;
}

static enum idem_verdict
begin(const char *key, const uint8_t *fp, struct idem_call **c)
{
	int rc;

	*c = NULL;
	rc = idem_begin(idem, "s", key, fp, NULL, NULL, c);
	HARNESS_EQ(rc, IDEM_OK);
	return rc == IDEM_OK ? idem_call_verdict(*c) : IDEM_VERDICT__MAX;
}

/*
 * A completion whose write waited after idem_finish read the time (for
 * the write lock, in a stalled process) keeps its answer a whole TTL from
 * when it committed, not from that reading: the retry whose answer was
 * lost replays it instead of claiming the key afresh and running again.
 */
static void
test_finish_dated_at_commit(void)
{
	struct idem_response r = { 201, NULL, 0, "ok", 2 };
	struct idem_call *c;
	uint64_t read_at;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idem);
	HARNESS_EQ(begin("late", fp_a, &c), IDEM_RUN);
	read_at = now_ms = T0 + 10 * TTL;
	stall_ms = TTL;
	HARNESS_EQ(idem_finish(c, &r, NULL, NULL), IDEM_OK);
	stall_ms = 0;
	idem_call_free(c);
	/* The write committed at least a TTL after idem_finish read the time. */
	CU_ASSERT(now_ms >= read_at + 2 * TTL);
	now_ms -= 1;
	HARNESS_EQ(begin("late", fp_a, &c), IDEM_REPLAY);
	idem_call_free(c);
}

/*
 * A fresh claim carries the recovery point it was given, in the claim's
 * own write; a duplicate sees it in progress; a take-over keeps it.  The
 * point is made only when a claim is about to be made: never for a
 * conflict or a mismatch answered from the read transaction.
 */
static void
test_claim_with_start(void)
{
	struct idem_call *c, *d;
	const void *p;
	size_t len;
	int made = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idem);
	HARNESS_EQ(idem_begin(idem, "s", "k", fp_a, make_start, &made, &c),
	    IDEM_OK);
	HARNESS_EQ(made, 1);
	HARNESS_EQ(idem_call_verdict(c), IDEM_RUN);
	HARNESS_EQ(idem_call_stage(c), 1);
	p = idem_call_point(c, &len);
	CU_ASSERT(len == sizeof(cp) && memcmp(p, cp, sizeof(cp)) == 0);
	HARNESS_EQ(idem_call_created_ms(c), T0);
	HARNESS_EQ(idem_call_attempts(c), 1);

	now_ms = T0 + 1;
	HARNESS_EQ(idem_begin(idem, "s", "k", fp_a, make_start, &made, &d),
	    IDEM_OK);
	HARNESS_EQ(idem_call_verdict(d), IDEM_CONFLICT);
	CU_ASSERT(idem_call_retry_after(d) >= 1);
	CU_ASSERT_PTR_NULL(idem_call_response(d));
	/* Only the owner may end a claim. */
	HARNESS_EQ(idem_abandon(d), IDEM_EINVAL);
	idem_call_free(d);
	HARNESS_EQ(idem_begin(idem, "s", "k", fp_b, make_start, &made, &d),
	    IDEM_OK);
	HARNESS_EQ(idem_call_verdict(d), IDEM_MISMATCH);
	idem_call_free(d);
	HARNESS_EQ(made, 1);

	/* A take-over's own start goes unused: the claim's point stands. */
	now_ms = T0 + LEASE;
	HARNESS_EQ(idem_begin(idem, "s", "k", fp_a, make_start, &made, &d),
	    IDEM_OK);
	HARNESS_EQ(idem_call_verdict(d), IDEM_RESUME);
	HARNESS_EQ(idem_call_stage(d), 1);
	HARNESS_EQ(idem_call_attempts(d), 2);
	HARNESS_EQ(idem_call_created_ms(d), T0);
	/* The first attempt lost its claim: nothing it writes lands. */
	HARNESS_EQ(idem_checkpoint(c, 2, "x", 1), IDEM_ELOST);
	idem_call_free(c);
	HARNESS_EQ(idem_checkpoint(d, 2, "xy", 2), IDEM_OK);
	HARNESS_EQ(idem_call_stage(d), 2);
	p = idem_call_point(d, &len);
	CU_ASSERT(len == 2 && memcmp(p, "xy", 2) == 0);
	idem_call_free(d);
}

/* The rows a finish hook writes, and the response it may choose. */
struct finish_ctx {
	const char *row;
	const struct idem_response *instead;
	int runs;
};

static int
finish_hook(void *ctx, struct idem_tx *tx)
{
	struct finish_ctx *f = ctx;
	int rc;

	f->runs++;
	if ((rc = idem_tx_put(tx, "rows", f->row, strlen(f->row), "v", 1)) !=
	    IDEM_OK)
		return rc;
	return f->instead != NULL ? idem_tx_respond(tx, f->instead) : IDEM_OK;
}

static const struct idem_header created_headers[] = {
	{ "Content-Type", "application/json" },
	{ "Location", "/things/1" },
};
static const struct idem_response created = {
	201, created_headers, 2, "{\"id\":1}", 8
};

/*
 * The stored answer is built from fields and replayed as given; the rows
 * of the hook commit with it.
 */
static void
test_finish_and_replay(void)
{
	const struct idem_response *r;
	struct finish_ctx f = { "row-1", NULL, 0 };
	struct idem_call *c;
	void *val;
	size_t len;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idem);
	HARNESS_EQ(begin("k", fp_a, &c), IDEM_RUN);
	HARNESS_EQ(idem_finish(c, &created, finish_hook, &f), IDEM_OK);
	HARNESS_EQ(f.runs, 1);
	/* Finished: the claim is no longer the caller's. */
	HARNESS_EQ(idem_abandon(c), IDEM_ELOST);
	idem_call_free(c);

	HARNESS_EQ(begin("k", fp_a, &c), IDEM_REPLAY);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = idem_call_response(c));
	HARNESS_EQ(r->status, 201);
	HARNESS_EQ(r->nheaders, 2);
	CU_ASSERT_STRING_EQUAL(r->headers[1].name, "Location");
	CU_ASSERT_STRING_EQUAL(r->headers[1].value, "/things/1");
	CU_ASSERT(r->bodylen == 8 && memcmp(r->body, "{\"id\":1}", 8) == 0);
	idem_call_free(c);

	HARNESS_EQ(idem_row_get(idem, "rows", "row-1", 5, &val, &len),
	    IDEM_OK);
	CU_ASSERT(len == 1 && memcmp(val, "v", 1) == 0);
	free(val);
}

/*
 * A hook may decide the stored answer inside the transaction (a refund
 * beyond its payment becomes a stored 400).
 */
static void
test_finish_hook_chooses_response(void)
{
	static const struct idem_response refused = { 400, NULL, 0, "no", 2 };
	struct finish_ctx f = { "row-2", &refused, 0 };
	struct idem_call *c;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idem);
	HARNESS_EQ(begin("k", fp_a, &c), IDEM_RUN);
	HARNESS_EQ(idem_finish(c, &created, finish_hook, &f), IDEM_OK);
	idem_call_free(c);
	HARNESS_EQ(begin("k", fp_a, &c), IDEM_REPLAY);
	HARNESS_EQ(idem_call_response(c)->status, 400);
	HARNESS_EQ(idem_call_response(c)->bodylen, 2);
	idem_call_free(c);
}

static int
del_hook(void *ctx, struct idem_tx *tx)
{
	return idem_tx_del(tx, "rows", ctx, strlen(ctx));
}

static int
put_hook(void *ctx, struct idem_tx *tx)
{
	return idem_tx_put(tx, "rows", ctx, strlen(ctx), "r", 1);
}

static int
respond_hook(void *ctx, struct idem_tx *tx)
{
	(void)ctx;
	return idem_tx_respond(tx, &created);
}

static int
copy_start(void *ctx, struct idem_start *out)
{
	*out = *(const struct idem_start *)ctx;
	return IDEM_OK;
}

/*
 * Release frees the key and runs its hook in the same transaction (undo
 * a reservation); abandon keeps the claim for an immediate take-over.
 * The claim hook runs on a fresh claim only.
 */
static void
test_release_and_abandon(void)
{
	static char reserved[] = "reserved";
	struct idem_start st = { 0, NULL, 0, put_hook, reserved };
	struct idem_call *c;
	void *val;
	size_t len;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idem);
	/* The claim hook's row is written with the claim... */
	HARNESS_EQ(idem_begin(idem, "s", "k2", fp_a, copy_start, &st, &c),
	    IDEM_OK);
	HARNESS_EQ(idem_row_get(idem, "rows", "reserved", 8, &val, &len),
	    IDEM_OK);
	free(val);
	/*
	 * ...only a finish hook may choose a response (the failed release
	 * falls back to abandon, which keeps the claim ours)...
	 */
	HARNESS_EQ(idem_release(c, respond_hook, NULL), IDEM_EINVAL);
	/* ...and the release's hook undoes it with the release. */
	HARNESS_EQ(idem_release(c, del_hook, reserved), IDEM_OK);
	idem_call_free(c);
	HARNESS_EQ(idem_row_get(idem, "rows", "reserved", 8, &val, &len),
	    IDEM_ENOTFOUND);
	HARNESS_EQ(begin("k2", fp_b, &c), IDEM_RUN);
	HARNESS_EQ(idem_abandon(c), IDEM_OK);
	idem_call_free(c);
	HARNESS_EQ(begin("k2", fp_b, &c), IDEM_RESUME);
	idem_call_free(c);
}

/* A scope at its bound gets IDEM_LIMITED, with a Retry-After. */
static void
test_limited(void)
{
	struct idem_call *c;

	idem_close(idem);
	CU_ASSERT_PTR_NOT_NULL_FATAL(idem = open_with(1));
	HARNESS_EQ(begin("k1", fp_a, &c), IDEM_RUN);
	HARNESS_EQ(idem_finish(c, &created, NULL, NULL), IDEM_OK);
	idem_call_free(c);
	HARNESS_EQ(begin("k2", fp_a, &c), IDEM_LIMITED);
	CU_ASSERT(idem_call_retry_after(c) >= 1);
	idem_call_free(c);
	/* Keys the scope holds still replay. */
	HARNESS_EQ(begin("k1", fp_a, &c), IDEM_REPLAY);
	idem_call_free(c);
	/* Once its key expired, the scope may claim again. */
	now_ms = T0 + TTL + 1;
	HARNESS_EQ(begin("k2", fp_a, &c), IDEM_RUN);
	idem_call_free(c);
}

static int
collect(void *ctx, const void *key, size_t keylen, const void *val,
    size_t vallen)
{
	(void)key;
	(void)val;
	(void)vallen;
	*(size_t *)ctx += keylen;
	return 0;
}

/* Rows outside keyed calls, by table name. */
static void
test_rows(void)
{
	void *val = NULL;
	size_t len = 0, n = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idem);
	HARNESS_EQ(idem_row_insert_once(idem, "rows", "a1", 2, "x", 1, NULL,
	    NULL), IDEM_OK);
	HARNESS_EQ(idem_row_insert_once(idem, "rows", "a2", 2, NULL, 0, NULL,
	    NULL), IDEM_OK);
	HARNESS_EQ(idem_row_insert_once(idem, "rows", "a1", 2, "y", 1, &val,
	    &len), IDEM_EEXIST);
	CU_ASSERT(len == 1 && val != NULL && memcmp(val, "x", 1) == 0);
	free(val);
	HARNESS_EQ(idem_row_get(idem, "rows", "a2", 2, &val, &len), IDEM_OK);
	CU_ASSERT(val == NULL && len == 0);
	HARNESS_EQ(idem_row_count(idem, "rows", &n), IDEM_OK);
	HARNESS_EQ(n, 2);
	n = 0;
	HARNESS_EQ(idem_row_scan(idem, "rows", "a", 1, 1, 1, collect, &n),
	    IDEM_OK);
	HARNESS_EQ(n, 2);
	HARNESS_EQ(idem_row_count(idem, "nosuch", &n), IDEM_EINVAL);
	HARNESS_EQ(idem_row_get(idem, "keys", "a", 1, &val, &len),
	    IDEM_EINVAL);
}

/* Tables the library keeps for itself cannot be an application's. */
static void
test_reserved_table(void)
{
	static const char *const bad[] = { "quota", NULL };
	struct idem_options opt;
	struct idem *h;

	memset(&opt, 0, sizeof(opt));
	opt.size = sizeof(opt);
	opt.dir = dir;
	opt.tables = bad;
	HARNESS_EQ(idem_open(&opt, &h), IDEM_EINVAL);
}

/*
 * idem_open takes the options' size from the caller: the struct of 0.2.0
 * or larger up to this library's, read no further than size (the block
 * below is exactly that big, so ASan sees a read past it); smaller, and
 * larger (a newer idem.h's), are IDEM_EINVAL with the handle NULL.
 */
static void
test_options_size(void)
{
	static const size_t bad[] = { 0, sizeof(size_t),
	    offsetof(struct idem_options, secret_file),
	    sizeof(struct idem_options) + 1,
	    sizeof(struct idem_options) + 64 };
	struct idem_options init = IDEM_OPTIONS_INIT, *exact;
	struct idem *h;
	size_t i;

	HARNESS_EQ(init.size, sizeof(struct idem_options));
	HARNESS_EQ(init.dir == NULL && init.tables == NULL &&
	    init.clock == NULL && init.secret_file == NULL, 1);
	init.dir = harness_store(dir, 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		h = (struct idem *)&init;
		init.size = bad[i];
		HARNESS_EQ(idem_open(&init, &h), IDEM_EINVAL);
		HARNESS_EQ(h == NULL, 1);
	}
	HARNESS_EQ(idem_open(NULL, &h), IDEM_EINVAL);
	init.size = sizeof(init);
	exact = malloc(sizeof(*exact));
	CU_ASSERT_FATAL(exact != NULL);
	memcpy(exact, &init, sizeof(init));
	HARNESS_EQ(idem_open(exact, &h), IDEM_OK);
	free(exact);
	idem_close(h);
}

/* The library's version is the header's and the release's. */
static void
test_version(void)
{
	char s[32];

	snprintf(s, sizeof(s), "%d.%d.%d", IDEM_VERSION_MAJOR,
	    IDEM_VERSION_MINOR, IDEM_VERSION_PATCH);
	CU_ASSERT_STRING_EQUAL(idem_version(), s);
	CU_ASSERT_STRING_EQUAL(idem_version(), PACKAGE_VERSION);
	HARNESS_EQ(idem_version_number(), IDEM_VERSION_NUMBER);
	HARNESS_EQ(IDEM_VERSION_NUMBER, IDEM_VERSION_MAJOR * 10000 +
	    IDEM_VERSION_MINOR * 100 + IDEM_VERSION_PATCH);
}

/*
 * Retry-After tells a duplicate about when the first request will be
 * done, from the typical run time measured by the workers, instead of the
 * whole lease: at least 1, never past the lease, rounded up.
 */
static struct idem_call *owners[8];
static size_t nowners;

/*
 * The claims stay open until the test ends: freeing a claimed call
 * records its run time, which would move the typical value under test.
 */
static uint32_t
wait_at(const char *key, uint64_t elapsed)
{
	struct idem_call *c;
	uint32_t w;

	now_ms = T0;
	if (begin(key, fp_a, &c) != IDEM_RUN || nowners == 8) {
		idem_call_free(c);
		return 0;
	}
	owners[nowners++] = c;
	now_ms = T0 + elapsed;
	HARNESS_EQ(begin(key, fp_a, &c), IDEM_CONFLICT);
	w = idem_call_retry_after(c);
	idem_call_free(c);
	return w;
}

static void
test_retry_after_from_typical_run(void)
{
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idem);
	CU_ASSERT_FATAL(metrics_open(dir) == IDEM_OK);
	/* Nothing measured yet: come back in a second and ask again. */
	HARNESS_EQ(wait_at("w1", 0), 1);
	metrics_observe_run_ms(2500);
	HARNESS_EQ(wait_at("w2", 0), 3);
	HARNESS_EQ(wait_at("w3", 1000), 2);
	HARNESS_EQ(wait_at("w4", 2400), 1);
	/* One slow run moves the typical value by an eighth of the gap. */
	metrics_observe_run_ms(60000);
	HARNESS_EQ(wait_at("w5", 0), 10);
	/* Never past the lease. */
	for (i = 0; i < 64; i++)
		metrics_observe_run_ms(60000);
	HARNESS_EQ(wait_at("w6", 0), 30);
	HARNESS_EQ(wait_at("w7", LEASE - 2000), 2);
	while (nowners > 0)
		idem_call_free(owners[--nowners]);
}

/*
 * A program that uses only idem.h, with no counters file of the
 * responder's mapped (down() unmaps it), gets the same Retry-After: the
 * handle measures how long its own claims ran.  Everything here is
 * idem.h's.
 */
static void
test_retry_after_idem_h_alone(void)
{
	struct idem_response r = { 201, NULL, 0, "ok", 2 };
	struct idem_call *c, *d;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idem);
	/* Nothing measured yet: come back in a second and ask again. */
	HARNESS_EQ(begin("first", fp_a, &c), IDEM_RUN);
	HARNESS_EQ(begin("first", fp_a, &d), IDEM_CONFLICT);
	HARNESS_EQ(idem_call_retry_after(d), 1);
	idem_call_free(d);
	/* It runs 4.5 s, and its run is counted when it is freed. */
	now_ms += 4500;
	HARNESS_EQ(idem_finish(c, &r, NULL, NULL), IDEM_OK);
	idem_call_free(c);
	/* A duplicate of the next request, 1.2 s into its run: 3.3 s left. */
	HARNESS_EQ(begin("second", fp_a, &c), IDEM_RUN);
	now_ms += 1200;
	HARNESS_EQ(begin("second", fp_a, &d), IDEM_CONFLICT);
	HARNESS_EQ(idem_call_retry_after(d), 4);
	idem_call_free(d);
	idem_call_free(c);
}

/*
 * Concurrency: threads claim distinct keys, and each claim's hook
 * reserves one unit from a shared counter row bounded at BOUND, after
 * first writing a row of its own.  The check and the reservation are
 * atomic with the claim: the bound is never exceeded, and a refused
 * claim rolls back alone (its own row and its claim are gone) while the
 * claims it shared a group commit with stand.
 */
#define THREADS 8
#define PER_THREAD 12
#define BOUND 40

struct reserve {
	char key[32];
};

static int
reserve_hook(void *ctx, struct idem_tx *tx)
{
	const struct reserve *r = ctx;
	const void *val;
	size_t len;
	unsigned n = 0;
	int rc;

	if ((rc = idem_tx_put(tx, "rows", r->key, strlen(r->key), "t", 1)) !=
	    IDEM_OK)
		return rc;
	rc = idem_tx_get(tx, "counter", "c", 1, &val, &len);
	if (rc == IDEM_OK && len == sizeof(n))
		memcpy(&n, val, sizeof(n));
	else if (rc != IDEM_ENOTFOUND)
		return rc == IDEM_OK ? IDEM_ECORRUPT : rc;
	if (n >= BOUND)
		return IDEM_EREFUSED;
	n++;
	return idem_tx_put(tx, "counter", "c", 1, &n, sizeof(n));
}

static int
reserve_start(void *ctx, struct idem_start *out)
{
	out->hook = reserve_hook;
	out->hook_ctx = ctx;
	return IDEM_OK;
}

struct worker {
	int id;
	int run, refused, other;
};

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct idem_call *c;
	struct reserve r;
	int i, rc;

	for (i = 0; i < PER_THREAD; i++) {
		snprintf(r.key, sizeof(r.key), "t%d-%d", w->id, i);
		rc = idem_begin(idem, "s", r.key, fp_a, reserve_start, &r, &c);
		if (rc == IDEM_OK && idem_call_verdict(c) == IDEM_RUN)
			w->run++;
		else if (rc == IDEM_EREFUSED)
			w->refused++;
		else
			w->other++;
		idem_call_free(c);
	}
	return NULL;
}

static void
test_hook_atomic_under_concurrency(void)
{
	pthread_t th[THREADS];
	struct worker w[THREADS];
	int i, run = 0, refused = 0, other = 0;
	void *val;
	size_t len, rows = 0;
	unsigned n = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idem);
	for (i = 0; i < THREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].id = i;
		CU_ASSERT_FATAL(pthread_create(&th[i], NULL, worker_main,
		    &w[i]) == 0);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		run += w[i].run;
		refused += w[i].refused;
		other += w[i].other;
	}
	HARNESS_EQ(other, 0);
	HARNESS_EQ(run, BOUND);
	HARNESS_EQ(refused, THREADS * PER_THREAD - BOUND);
	HARNESS_EQ(idem_row_get(idem, "counter", "c", 1, &val, &len), IDEM_OK);
	if (len == sizeof(n))
		memcpy(&n, val, sizeof(n));
	free(val);
	HARNESS_EQ(n, BOUND);
	/* Each refused hook's own row went with its claim. */
	HARNESS_EQ(idem_row_count(idem, "rows", &rows), IDEM_OK);
	HARNESS_EQ(rows, BOUND);
}

/* What a walk of pending claims saw, claim by claim. */
struct seen {
	size_t n;
	size_t stop_at;     /* stop after this many (0: never) */
	char names[8][16];  /* "scope/key" */
	uint32_t stage[8];
	char point[8][8];
	uint32_t attempts[8];
	uint64_t created[8];
	uint64_t lease[8];
	uint64_t expires[8];
	int fp_ok[8];
};

static int
see(void *ctx, struct idem_pending *p)
{
	struct seen *w = ctx;
	const void *pt;
	size_t len, i = w->n;

	if (i >= 8)
		return 1;
	snprintf(w->names[i], sizeof(w->names[i]), "%s/%s",
	    idem_pending_scope(p), idem_pending_key(p));
	w->stage[i] = idem_pending_stage(p);
	w->attempts[i] = idem_pending_attempts(p);
	w->created[i] = idem_pending_created_ms(p);
	w->lease[i] = idem_pending_lease_ms(p);
	w->expires[i] = idem_pending_expires_ms(p);
	w->fp_ok[i] = memcmp(idem_pending_fingerprint(p), fp_a,
	    IDEM_FP_SIZE) == 0;
	HARNESS_EQ(idem_pending_point(p, &pt, &len), IDEM_OK);
	if (len > 0 && len < sizeof(w->point[i]))
		memcpy(w->point[i], pt, len);
	else
		CU_ASSERT(pt == NULL && len == 0);
	w->n++;
	return w->stop_at != 0 && w->n == w->stop_at;
}

/* A claim of (s, key) under fp_a at stage, with point (or none). */
static struct idem_call *
claim_at(const char *key, uint32_t stage, const char *point)
{
	struct idem_call *c = NULL;

	HARNESS_EQ(idem_begin(idem, "s", key, fp_a, NULL, NULL, &c), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	HARNESS_EQ(idem_call_verdict(c), IDEM_RUN);
	if (stage != 0)
		HARNESS_EQ(idem_checkpoint(c, stage, point, strlen(point)),
		    IDEM_OK);
	return c;
}

/*
 * idem_pending_each hands out the claims in progress, never a completed
 * key: with IDEM_PENDING_STARTED those past stage 0 (their index), with
 * IDEM_PENDING_ALL every one; each with its scope, key, fingerprint,
 * stage, recovery point, attempts, creation time, lease and expiry, as
 * a take-over leaves them; a non-zero return stops it.
 */
static void
test_pending_walk(void)
{
	struct idem_response r = { 201, NULL, 0, "{}", 2 };
	struct idem_call *a, *b, *c, *d, *t = NULL;
	struct seen w;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idem);
	a = claim_at("a", 0, NULL);
	now_ms = T0 + 5;
	b = claim_at("b", 2, "pt-b");
	c = claim_at("c", 1, "pt-c");
	HARNESS_EQ(idem_finish(c, &r, NULL, NULL), IDEM_OK);
	d = claim_at("d", 1, "pt-d");
	HARNESS_EQ(idem_abandon(d), IDEM_OK);

	memset(&w, 0, sizeof(w));
	HARNESS_EQ(idem_pending_each(idem, IDEM_PENDING_STARTED, see, &w),
	    IDEM_OK);
	HARNESS_EQ(w.n, 2);
	CU_ASSERT_STRING_EQUAL(w.names[0], "s/b");
	CU_ASSERT_STRING_EQUAL(w.names[1], "s/d");
	HARNESS_EQ(w.stage[0], 2);
	CU_ASSERT_STRING_EQUAL(w.point[0], "pt-b");
	CU_ASSERT_STRING_EQUAL(w.point[1], "pt-d");
	HARNESS_EQ(w.attempts[0], 1);
	HARNESS_EQ(w.created[0], T0 + 5);
	HARNESS_EQ(w.lease[0], T0 + 5 + LEASE);
	/* Abandoned: its lease ended when it was. */
	HARNESS_EQ(w.lease[1], T0 + 5);
	HARNESS_EQ(w.expires[0], T0 + 5 + TTL);
	HARNESS_EQ(w.expires[1], T0 + 5 + TTL);
	CU_ASSERT(w.fp_ok[0] && w.fp_ok[1]);

	memset(&w, 0, sizeof(w));
	HARNESS_EQ(idem_pending_each(idem, IDEM_PENDING_ALL, see, &w),
	    IDEM_OK);
	HARNESS_EQ(w.n, 3);
	CU_ASSERT_STRING_EQUAL(w.names[0], "s/a");
	CU_ASSERT_STRING_EQUAL(w.names[1], "s/b");
	CU_ASSERT_STRING_EQUAL(w.names[2], "s/d");
	HARNESS_EQ(w.stage[0], 0);
	CU_ASSERT_STRING_EQUAL(w.point[0], "");
	HARNESS_EQ(w.created[0], T0);
	HARNESS_EQ(w.expires[0], T0 + TTL);

	memset(&w, 0, sizeof(w));
	w.stop_at = 1;
	HARNESS_EQ(idem_pending_each(idem, IDEM_PENDING_ALL, see, &w),
	    IDEM_OK);
	HARNESS_EQ(w.n, 1);

	/* A take-over: attempts 2, created and point kept. */
	now_ms = T0 + 10;
	HARNESS_EQ(idem_begin(idem, "s", "d", fp_a, NULL, NULL, &t), IDEM_OK);
	HARNESS_EQ(idem_call_verdict(t), IDEM_RESUME);
	memset(&w, 0, sizeof(w));
	HARNESS_EQ(idem_pending_each(idem, IDEM_PENDING_STARTED, see, &w),
	    IDEM_OK);
	HARNESS_EQ(w.n, 2);
	HARNESS_EQ(w.attempts[1], 2);
	HARNESS_EQ(w.created[1], T0 + 5);
	HARNESS_EQ(w.lease[1], T0 + 10 + LEASE);
	/* A take-over leaves the answer it stores a whole TTL. */
	HARNESS_EQ(w.expires[1], T0 + 10 + TTL);
	CU_ASSERT_STRING_EQUAL(w.point[1], "pt-d");

	HARNESS_EQ(idem_pending_each(idem, IDEM_PENDING_ALL, NULL, &w),
	    IDEM_EINVAL);
	HARNESS_EQ(idem_pending_each(idem, (enum idem_pending_walk)7, see,
	    &w), IDEM_EINVAL);
	idem_call_free(t);
	idem_call_free(a);
	idem_call_free(b);
	idem_call_free(c);
	idem_call_free(d);
}

/*
 * A store that counts the reads of records a keyed request may make (the
 * read of idem_begin's fast path, and the claim's write, which reads the
 * record inside it), over the backend the tests run on.
 */
static struct store_ops counting_ops;
static const struct store_ops *counted_ops;
static unsigned long record_reads;

static int
counting_lookup(struct store *s, const char *scope, const char *key,
    struct rec *out)
{
	__atomic_add_fetch(&record_reads, 1, __ATOMIC_SEQ_CST);
	return counted_ops->lookup(s, scope, key, out);
}

static int
counting_claim(struct store *s, const char *scope, const char *key,
    const uint8_t fp[FP_SIZE], const uint8_t token[REC_TOKEN_SIZE],
    uint64_t now, uint64_t lease_ms, uint64_t ttl_ms,
    const struct store_first *first, struct store_claim *out)
{
	__atomic_add_fetch(&record_reads, 1, __ATOMIC_SEQ_CST);
	return counted_ops->claim(s, scope, key, fp, token, now, lease_ms,
	    ttl_ms, first, out);
}

static int
counting_open(const struct store_config *cfg, struct store **out)
{
	int rc;

	if ((rc = counted_ops->open(cfg, out)) == IDEM_OK)
		(*out)->ops = &counting_ops;
	return rc;
}

/* The handle of the tests, on the counting store, with a replay cache. */
static struct idem *
open_cached(size_t bytes)
{
	struct idem_options opt = IDEM_OPTIONS_INIT;
	struct idem *h = NULL;

	counted_ops = harness_pg() ? &store_pg_ops : &store_lmdb_ops;
	counting_ops = *counted_ops;
	counting_ops.open = counting_open;
	counting_ops.lookup = counting_lookup;
	counting_ops.claim = counting_claim;
	record_reads = 0;
	opt.dir = harness_store(dir, 0);
	opt.lease_ms = LEASE;
	opt.ttl_ms = TTL;
	opt.tables = tables;
	opt.clock = test_clock;
	opt.clock_ctx = &now_ms;
	opt.replay_cache_bytes = bytes;
	if (idem__open_backend(&opt, &counting_ops, &h) != IDEM_OK)
		return NULL;
	return h;
}

/* Completes (s, key) with resp on the test's handle. */
static void
complete_key(const char *key, const struct idem_response *resp)
{
	struct idem_call *c;

	HARNESS_EQ(begin(key, fp_a, &c), IDEM_RUN);
	HARNESS_EQ(idem_finish(c, resp, NULL, NULL), IDEM_OK);
	idem_call_free(c);
}

/* Whether a replay of key gives resp exactly, marked a replay. */
static void
replayed_as(const char *key, const struct idem_response *resp)
{
	const struct idem_response *r;
	struct idem_call *c;
	size_t i;

	HARNESS_EQ(begin(key, fp_a, &c), IDEM_REPLAY);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = idem_call_response(c));
	HARNESS_EQ(r->status, resp->status);
	HARNESS_EQ(r->nheaders, resp->nheaders);
	for (i = 0; i < r->nheaders && i < resp->nheaders; i++) {
		CU_ASSERT_STRING_EQUAL(r->headers[i].name,
		    resp->headers[i].name);
		CU_ASSERT_STRING_EQUAL(r->headers[i].value,
		    resp->headers[i].value);
	}
	CU_ASSERT(r->bodylen == resp->bodylen &&
	    memcmp(r->body, resp->body, r->bodylen) == 0);
	CU_ASSERT(memcmp(idem_call_fingerprint(c), fp_a, IDEM_FP_SIZE) == 0);
	HARNESS_EQ(idem_call_created_ms(c), T0);
	HARNESS_EQ(idem_call_attempts(c), 1);
	idem_call_free(c);
}

/* A hook that answers with the response its context points to. */
static int
respond_with(void *ctx, struct idem_tx *tx)
{
	return idem_tx_respond(tx, ctx);
}

/*
 * An answer is stored whole up to IDEM_MAX_ANSWER bytes (its body and
 * its headers' names and values) and replayed as given; a larger one,
 * given to idem_finish or by its hook, is not stored at all: IDEM_ETOOBIG,
 * nothing written, and the claim still the caller's, whose release
 * leaves the key to be used afresh.
 */
static void
test_answer_bound(void)
{
	static const struct idem_header h[] = {
		{ "Content-Type", "application/json" },
	};
	size_t hbytes = strlen(h[0].name) + strlen(h[0].value);
	struct idem_response big = { 200, h, 1, NULL, 0 };
	struct idem_call *c;
	char *body;

	CU_ASSERT_PTR_NOT_NULL_FATAL(body = malloc(IDEM_MAX_ANSWER + 1));
	memset(body, 'x', IDEM_MAX_ANSWER + 1);
	big.body = body;
	/* Exactly the bound: stored, and replayed byte for byte. */
	big.bodylen = IDEM_MAX_ANSWER - hbytes;
	complete_key("fits", &big);
	HARNESS_EQ(begin("fits", fp_a, &c), IDEM_REPLAY);
	CU_ASSERT_FATAL(idem_call_response(c) != NULL);
	HARNESS_EQ(idem_call_response(c)->bodylen, big.bodylen);
	idem_call_free(c);
	/* One byte more, in the body or in a header: not stored. */
	big.bodylen = IDEM_MAX_ANSWER - hbytes + 1;
	HARNESS_EQ(begin("big", fp_a, &c), IDEM_RUN);
	HARNESS_EQ(idem_finish(c, &big, NULL, NULL), IDEM_ETOOBIG);
	HARNESS_EQ(idem_finish(c, &created, respond_with, &big),
	    IDEM_ETOOBIG);
	HARNESS_EQ(idem_release(c, NULL, NULL), IDEM_OK);
	idem_call_free(c);
	HARNESS_EQ(begin("big", fp_a, &c), IDEM_RUN);
	HARNESS_EQ(idem_finish(c, &created, NULL, NULL), IDEM_OK);
	idem_call_free(c);
	free(body);
}

/*
 * With a replay cache, an answer read from the store once is replayed
 * again without reading it, byte for byte as the store gave it; the same
 * key with another request is a 422 without reading it either.
 */
static void
test_replay_cache_hit(void)
{
	struct idem_call *c;

	idem_close(idem);
	CU_ASSERT_PTR_NOT_NULL_FATAL(idem = open_cached(1 << 20));
	complete_key("k", &created);
	replayed_as("k", &created);
	record_reads = 0;
	replayed_as("k", &created);
	replayed_as("k", &created);
	HARNESS_EQ(record_reads, 0);
	HARNESS_EQ(begin("k", fp_b, &c), IDEM_MISMATCH);
	HARNESS_EQ(idem_call_response(c) == NULL, 1);
	idem_call_free(c);
	HARNESS_EQ(record_reads, 0);
	/* Another scope's key of the same name is another record. */
	HARNESS_EQ(idem_begin(idem, "t", "k", fp_b, NULL, NULL, &c), IDEM_OK);
	HARNESS_EQ(idem_call_verdict(c), IDEM_RUN);
	idem_call_free(c);
	HARNESS_EQ(record_reads > 0, 1);
}

/*
 * A claim in progress is never kept: its duplicate gets the 409 the
 * store gives, and once it completes, its answer.  An answer is not
 * replayed from memory at its expiry, by the handle's clock: the key is
 * then claimed afresh, as the store would have it.
 */
static void
test_replay_cache_expiry(void)
{
	struct idem_call *c, *d;

	idem_close(idem);
	CU_ASSERT_PTR_NOT_NULL_FATAL(idem = open_cached(1 << 20));
	HARNESS_EQ(begin("k", fp_a, &c), IDEM_RUN);
	HARNESS_EQ(begin("k", fp_a, &d), IDEM_CONFLICT);
	idem_call_free(d);
	HARNESS_EQ(begin("k", fp_a, &d), IDEM_CONFLICT);
	idem_call_free(d);
	HARNESS_EQ(idem_finish(c, &created, NULL, NULL), IDEM_OK);
	idem_call_free(c);
	replayed_as("k", &created);
	now_ms = T0 + TTL - 1;
	record_reads = 0;
	replayed_as("k", &created);
	HARNESS_EQ(record_reads, 0);
	now_ms = T0 + TTL;
	HARNESS_EQ(begin("k", fp_a, &c), IDEM_RUN);
	idem_call_free(c);
	HARNESS_EQ(record_reads > 0, 1);
}

/*
 * /metrics counts the cache's lookups: a miss for each keyed call the
 * cache could not answer, a hit for each it did (the replay and the 422
 * alike).
 */
static void
test_replay_cache_metrics(void)
{
	struct buf b = BUF_INIT;
	struct idem_call *c;

	idem_close(idem);
	CU_ASSERT_PTR_NOT_NULL_FATAL(idem = open_cached(1 << 20));
	CU_ASSERT_FATAL(metrics_open(dir) == IDEM_OK);
	complete_key("k", &created);	/* a miss: nothing kept yet */
	replayed_as("k", &created);	/* a miss, read and then kept */
	replayed_as("k", &created);	/* a hit */
	HARNESS_EQ(begin("k", fp_b, &c), IDEM_MISMATCH);	/* a hit */
	idem_call_free(c);
	HARNESS_EQ(metrics_render(&b), IDEM_OK);
	HARNESS_EQ((long long)harness_sample(b.data,
	    "idem_replay_cache_lookups_total{result=\"hit\"}"), 2);
	HARNESS_EQ((long long)harness_sample(b.data,
	    "idem_replay_cache_lookups_total{result=\"miss\"}"), 2);
	buf_free(&b);
}

/*
 * idem_once: work with no outside effect, its answer and rows stored in
 * the claim's own write.  What the work function made, and how often it
 * and its hook ran.
 */
struct once {
	const char *row;          /* the row its hook writes */
	char body[32];
	struct idem_header h;
	int made;                 /* times the function ran */
	int hooked;               /* times its hook ran */
};

static int
once_hook(void *ctx, struct idem_tx *tx)
{
	struct once *o = ctx;

	__atomic_add_fetch(&o->hooked, 1, __ATOMIC_SEQ_CST);
	return idem_tx_put(tx, "rows", o->row, strlen(o->row), o->body,
	    strlen(o->body));
}

static int
once_make(void *ctx, struct idem_outcome *out)
{
	struct once *o = ctx;
	int n = __atomic_add_fetch(&o->made, 1, __ATOMIC_SEQ_CST);

	snprintf(o->body, sizeof(o->body), "{\"n\":%d}", n);
	o->h.name = "Content-Type";
	o->h.value = "application/json";
	out->resp.status = 201;
	out->resp.headers = &o->h;
	out->resp.nheaders = 1;
	out->resp.body = o->body;
	out->resp.bodylen = strlen(o->body);
	out->hook = once_hook;
	out->hook_ctx = o;
	return IDEM_OK;
}

static enum idem_verdict
once(const char *key, const uint8_t *fp, struct once *o,
    struct idem_call **c)
{
	int rc;

	*c = NULL;
	rc = idem_once(idem, "s", key, fp, once_make, o, c);
	HARNESS_EQ(rc, IDEM_OK);
	return rc == IDEM_OK ? idem_call_verdict(*c) : IDEM_VERDICT__MAX;
}

/*
 * A new key runs the work once and stores its answer with its row; the
 * same request again replays that answer without running it; another
 * request under the key is a mismatch, also without running it; a claim
 * in progress is a conflict until its lease runs out, and is then taken
 * over and completed with the work's answer.
 */
static void
test_once_fresh_replay_mismatch(void)
{
	struct once o = { .row = "r1" };
	struct idem_call *c, *d;
	const struct idem_response *r;
	void *val;
	size_t len, rows = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idem);
	HARNESS_EQ(once("k", fp_a, &o, &c), IDEM_RUN);
	HARNESS_EQ(o.made, 1);
	HARNESS_EQ(o.hooked, 1);
	idem_call_free(c);
	HARNESS_EQ(idem_row_get(idem, "rows", "r1", 2, &val, &len), IDEM_OK);
	CU_ASSERT(len == 7 && memcmp(val, "{\"n\":1}", 7) == 0);
	free(val);
	/* Stored completed: idem_begin replays it too. */
	HARNESS_EQ(begin("k", fp_a, &c), IDEM_REPLAY);
	idem_call_free(c);
	HARNESS_EQ(once("k", fp_a, &o, &c), IDEM_REPLAY);
	HARNESS_EQ(o.made, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = idem_call_response(c));
	HARNESS_EQ(r->status, 201);
	CU_ASSERT(r->bodylen == 7 && memcmp(r->body, "{\"n\":1}", 7) == 0);
	CU_ASSERT(r->nheaders == 1 &&
	    strcmp(r->headers[0].value, "application/json") == 0);
	idem_call_free(c);
	HARNESS_EQ(once("k", fp_b, &o, &c), IDEM_MISMATCH);
	HARNESS_EQ(o.made, 1);
	HARNESS_EQ(o.hooked, 1);
	idem_call_free(c);
	HARNESS_EQ(idem_row_count(idem, "rows", &rows), IDEM_OK);
	HARNESS_EQ(rows, 1);
	HARNESS_EQ(begin("k2", fp_a, &c), IDEM_RUN);
	HARNESS_EQ(once("k2", fp_a, &o, &d), IDEM_CONFLICT);
	CU_ASSERT(idem_call_retry_after(d) >= 1);
	idem_call_free(d);
	HARNESS_EQ(o.made, 1);
	idem_call_free(c);
	now_ms = T0 + LEASE;
	HARNESS_EQ(once("k2", fp_a, &o, &c), IDEM_RESUME);
	idem_call_free(c);
	HARNESS_EQ(o.made, 2);
	HARNESS_EQ(once("k2", fp_a, &o, &c), IDEM_REPLAY);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = idem_call_response(c));
	CU_ASSERT(r->bodylen == 7 && memcmp(r->body, "{\"n\":2}", 7) == 0);
	idem_call_free(c);
}

#define ONCE_THREADS 8

struct once_worker {
	pthread_barrier_t *go;
	struct once *o;
	enum idem_verdict v;
	int rc;
	char body[32];
};

static void *
once_worker_main(void *arg)
{
	struct once_worker *w = arg;
	struct idem_call *c = NULL;
	const struct idem_response *r;

	pthread_barrier_wait(w->go);
	w->rc = idem_once(idem, "s", "k", fp_a, once_make, w->o, &c);
	if (w->rc == IDEM_OK) {
		w->v = idem_call_verdict(c);
		if (w->v == IDEM_REPLAY && (r = idem_call_response(c)) !=
		    NULL && r->bodylen < sizeof(w->body))
			memcpy(w->body, r->body, r->bodylen);
	}
	idem_call_free(c);
	return NULL;
}

/*
 * Threads at once on one new key: exactly one stores its answer and its
 * row (IDEM_RUN); every other one replays that answer.  The work
 * function may run in more than one of them (it runs before the write),
 * but the hook, the only thing with an effect, runs in the winner alone.
 */
static void
test_once_threads(void)
{
	pthread_t th[ONCE_THREADS];
	struct once_worker w[ONCE_THREADS];
	struct once o[ONCE_THREADS];
	pthread_barrier_t go;
	void *val = NULL;
	size_t len = 0, rows = 0;
	int i, run = 0, replay = 0, winner = -1;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idem);
	pthread_barrier_init(&go, NULL, ONCE_THREADS);
	for (i = 0; i < ONCE_THREADS; i++) {
		memset(&o[i], 0, sizeof(o[i]));
		o[i].row = "r";
		memset(&w[i], 0, sizeof(w[i]));
		w[i].go = &go;
		w[i].o = &o[i];
		CU_ASSERT_FATAL(pthread_create(&th[i], NULL, once_worker_main,
		    &w[i]) == 0);
	}
	for (i = 0; i < ONCE_THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&go);
	for (i = 0; i < ONCE_THREADS; i++) {
		HARNESS_EQ(w[i].rc, IDEM_OK);
		if (w[i].v == IDEM_RUN) {
			run++;
			winner = i;
		} else if (w[i].v == IDEM_REPLAY)
			replay++;
	}
	HARNESS_EQ(run, 1);
	HARNESS_EQ(replay, ONCE_THREADS - 1);
	CU_ASSERT_FATAL(winner >= 0);
	for (i = 0; i < ONCE_THREADS; i++) {
		HARNESS_EQ(o[i].hooked > 0, i == winner);
		if (i != winner)
			CU_ASSERT(strcmp(w[i].body, o[winner].body) == 0);
	}
	HARNESS_EQ(idem_row_count(idem, "rows", &rows), IDEM_OK);
	HARNESS_EQ(rows, 1);
	HARNESS_EQ(idem_row_get(idem, "rows", "r", 1, &val, &len), IDEM_OK);
	CU_ASSERT(len == strlen(o[winner].body) &&
	    memcmp(val, o[winner].body, len) == 0);
	free(val);
}

/* idem_store_commits_total as /metrics says it now. */
static long long
commits_now(void)
{
	struct buf b = BUF_INIT;
	long long n;

	HARNESS_EQ(metrics_render(&b), IDEM_OK);
	n = (long long)harness_sample(b.data, "idem_store_commits_total");
	buf_free(&b);
	return n;
}

/*
 * The point of idem_once: a fresh key's answer and rows in one durable
 * commit, where idem_begin and idem_finish take two; a replay none.
 * (The LMDB store counts its commits; PostgreSQL's are its server's.)
 */
static void
test_once_one_commit(void)
{
	static const struct idem_response ok = { 201, NULL, 0, "ok", 2 };
	struct once o = { .row = "r" };
	struct idem_call *c;
	long long n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idem);
	if (harness_pg())
		return;
	CU_ASSERT_FATAL(metrics_open(dir) == IDEM_OK);
	n = commits_now();
	HARNESS_EQ(begin("k1", fp_a, &c), IDEM_RUN);
	HARNESS_EQ(idem_finish(c, &ok, NULL, NULL), IDEM_OK);
	idem_call_free(c);
	HARNESS_EQ(commits_now() - n, 2);
	n = commits_now();
	HARNESS_EQ(once("k2", fp_a, &o, &c), IDEM_RUN);
	idem_call_free(c);
	HARNESS_EQ(commits_now() - n, 1);
	n = commits_now();
	HARNESS_EQ(once("k2", fp_a, &o, &c), IDEM_REPLAY);
	idem_call_free(c);
	HARNESS_EQ(commits_now() - n, 0);
}

#ifdef IDEM_FAULT_POINTS
/*
 * A write of idem_once that fails leaves nothing: no record (the next
 * request runs afresh) and no row, and the call fails instead of giving
 * a verdict: the completed record failing to be written after the claim
 * and the hook's row were (store_complete), and the commit failing
 * (batch_commit).
 */
static void
test_once_failed_commit(void)
{
	struct once o = { .row = "r" };
	struct idem_call *c = NULL;
	size_t rows = 1;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idem);
	setenv("IDEM_FAULT", "store_complete:fail", 1);
	CU_ASSERT(idem_once(idem, "s", "k", fp_a, once_make, &o, &c) !=
	    IDEM_OK);
	unsetenv("IDEM_FAULT");
	CU_ASSERT(c == NULL);
	HARNESS_EQ(idem_row_count(idem, "rows", &rows), IDEM_OK);
	HARNESS_EQ(rows, 0);
	HARNESS_EQ(once("k", fp_a, &o, &c), IDEM_RUN);
	idem_call_free(c);
	HARNESS_EQ(idem_row_count(idem, "rows", &rows), IDEM_OK);
	HARNESS_EQ(rows, 1);
	o.row = "r3";
	setenv("IDEM_FAULT", "batch_commit:fail", 1);
	CU_ASSERT(idem_once(idem, "s", "k3", fp_a, once_make, &o, &c) !=
	    IDEM_OK);
	unsetenv("IDEM_FAULT");
	CU_ASSERT(c == NULL);
	HARNESS_EQ(idem_row_count(idem, "rows", &rows), IDEM_OK);
	HARNESS_EQ(rows, 1);
	HARNESS_EQ(once("k3", fp_a, &o, &c), IDEM_RUN);
	idem_call_free(c);
	HARNESS_EQ(idem_row_count(idem, "rows", &rows), IDEM_OK);
	HARNESS_EQ(rows, 2);
}

/*
 * An answer whose completion failed to commit is never replayed from
 * memory: the key's next call goes to the store, which still holds the
 * claim (a 409 while its lease runs), and the answer the handler gave
 * is told to no one.
 */
static void
test_replay_cache_failed_commit(void)
{
	struct idem_call *c, *d;

	idem_close(idem);
	CU_ASSERT_PTR_NOT_NULL_FATAL(idem = open_cached(1 << 20));
	HARNESS_EQ(begin("k", fp_a, &c), IDEM_RUN);
	setenv("IDEM_FAULT", "store_complete:fail", 1);
	CU_ASSERT(idem_finish(c, &created, NULL, NULL) != IDEM_OK);
	unsetenv("IDEM_FAULT");
	record_reads = 0;
	HARNESS_EQ(begin("k", fp_a, &d), IDEM_CONFLICT);
	CU_ASSERT(idem_call_response(d) == NULL);
	idem_call_free(d);
	HARNESS_EQ(record_reads > 0, 1);
	idem_call_free(c);
	/* Its lease run out, the claim is taken over; once that commits,
	 * the replay is its answer. */
	now_ms = T0 + LEASE;
	HARNESS_EQ(begin("k", fp_a, &c), IDEM_RESUME);
	HARNESS_EQ(idem_finish(c, &created, NULL, NULL), IDEM_OK);
	idem_call_free(c);
	HARNESS_EQ(begin("k", fp_a, &d), IDEM_REPLAY);
	idem_call_free(d);
}
#endif

/*
 * The cache never holds more than its bytes: the answers replayed least
 * recently go first, and an answer larger than the whole budget is never
 * kept.
 */
static void
test_replay_cache_budget(void)
{
	static char big[8192];
	struct idem_response large = { 201, created_headers, 2, big,
	    sizeof(big) };
	const size_t budget = 4096;
	char key[16];
	int i;

	idem_close(idem);
	CU_ASSERT_PTR_NOT_NULL_FATAL(idem = open_cached(budget));
	memset(big, 'x', sizeof(big));
	for (i = 0; i < 64; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		complete_key(key, &created);
		replayed_as(key, &created);
		CU_ASSERT(rcache_bytes(idem->rcache) <= budget);
	}
	CU_ASSERT(rcache_bytes(idem->rcache) > 0);
	record_reads = 0;
	replayed_as("k63", &created);
	HARNESS_EQ(record_reads, 0);
	replayed_as("k0", &created);
	HARNESS_EQ(record_reads, 1);
	complete_key("big", &large);
	replayed_as("big", &large);
	record_reads = 0;
	replayed_as("big", &large);
	HARNESS_EQ(record_reads, 1);
	CU_ASSERT(rcache_bytes(idem->rcache) <= budget);
}

#define CACHE_THREADS 4
#define CACHE_ROUNDS 300

/* Replays keys c0..c7 over and over, under a budget that evicts. */
static void *
replayer_main(void *arg)
{
	const struct idem_response *r;
	struct idem_call *c;
	char key[8];
	int i, *bad = arg;

	for (i = 0; i < CACHE_ROUNDS; i++) {
		snprintf(key, sizeof(key), "c%d", i % 8);
		if (idem_begin(idem, "s", key, fp_a, NULL, NULL, &c) !=
		    IDEM_OK) {
			(*bad)++;
			continue;
		}
		r = idem_call_response(c);
		if (idem_call_verdict(c) != IDEM_REPLAY || r == NULL ||
		    r->bodylen != created.bodylen ||
		    memcmp(r->body, created.body, r->bodylen) != 0)
			(*bad)++;
		idem_call_free(c);
	}
	return NULL;
}

/* Threads replaying at once through one handle's cache each get the answer. */
static void
test_replay_cache_threads(void)
{
	pthread_t th[CACHE_THREADS];
	int bad[CACHE_THREADS] = { 0 }, i;
	char key[8];

	idem_close(idem);
	CU_ASSERT_PTR_NOT_NULL_FATAL(idem = open_cached(1024));
	for (i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "c%d", i);
		complete_key(key, &created);
	}
	for (i = 0; i < CACHE_THREADS; i++)
		CU_ASSERT_FATAL(pthread_create(&th[i], NULL, replayer_main,
		    &bad[i]) == 0);
	for (i = 0; i < CACHE_THREADS; i++) {
		pthread_join(th[i], NULL);
		HARNESS_EQ(bad[i], 0);
	}
	CU_ASSERT(rcache_bytes(idem->rcache) <= 1024);
}

int
harness_suites(void)
{
	CU_pSuite s;

	s = CU_add_suite_with_setup_and_teardown("idem", suite_init, NULL, up,
	    down);
	if (s == NULL ||
	    CU_add_test(s, "claim with its start", test_claim_with_start) ==
	    NULL ||
	    CU_add_test(s, "finish dated at its commit",
	    test_finish_dated_at_commit) == NULL ||
	    CU_add_test(s, "finish and replay", test_finish_and_replay) ==
	    NULL ||
	    CU_add_test(s, "finish hook chooses the response",
	    test_finish_hook_chooses_response) == NULL ||
	    CU_add_test(s, "release and abandon", test_release_and_abandon) ==
	    NULL ||
	    CU_add_test(s, "limited", test_limited) == NULL ||
	    CU_add_test(s, "rows by table name", test_rows) == NULL ||
	    CU_add_test(s, "reserved table names", test_reserved_table) ==
	    NULL ||
	    CU_add_test(s, "options carry their size", test_options_size) ==
	    NULL ||
	    CU_add_test(s, "answers stored up to IDEM_MAX_ANSWER",
	    test_answer_bound) == NULL ||
	    CU_add_test(s, "version", test_version) == NULL ||
	    CU_add_test(s, "Retry-After from the typical run",
	    test_retry_after_from_typical_run) == NULL ||
	    CU_add_test(s, "Retry-After with idem.h alone",
	    test_retry_after_idem_h_alone) == NULL ||
	    CU_add_test(s, "hook atomic under concurrency",
	    test_hook_atomic_under_concurrency) == NULL ||
	    CU_add_test(s, "walk of pending claims", test_pending_walk) ==
	    NULL ||
	    CU_add_test(s, "replay cache: a hit reads no store",
	    test_replay_cache_hit) == NULL ||
	    CU_add_test(s, "replay cache: completed only, until expiry",
	    test_replay_cache_expiry) == NULL ||
	    CU_add_test(s, "replay cache: within its bytes",
	    test_replay_cache_budget) == NULL ||
	    CU_add_test(s, "replay cache: threads at once",
	    test_replay_cache_threads) == NULL ||
	    CU_add_test(s, "replay cache: lookups in /metrics",
	    test_replay_cache_metrics) == NULL ||
	    CU_add_test(s, "once: fresh, replay, mismatch",
	    test_once_fresh_replay_mismatch) == NULL ||
	    CU_add_test(s, "once: threads on one key", test_once_threads) ==
	    NULL ||
	    CU_add_test(s, "once: one commit", test_once_one_commit) == NULL)
		return -1;
#ifdef IDEM_FAULT_POINTS
	if (CU_add_test(s, "replay cache: a failed completion never enters",
	    test_replay_cache_failed_commit) == NULL ||
	    CU_add_test(s, "once: a failed write stores nothing",
	    test_once_failed_commit) == NULL)
		return -1;
#endif
	return 0;
}
