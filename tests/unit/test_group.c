/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of group commit: many threads writing through one store
 * handle at once, as the threads of a worker do.
 */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "crypto.h"
#include "err.h"
#include "harness.h"
#include "metrics.h"
#include "store.h"

/*
 * Idempotency records, all or one scope's (scope NULL: all), counted
 * from a walk as idemctl stats counts them.
 */
struct count_ctx {
	const char *scope;
	size_t n;
};

static int
count_one(void *ctx, const char *scope, const char *key, const struct rec *r)
{
	struct count_ctx *c = ctx;

	(void)key;
	(void)r;
	if (c->scope == NULL || strcmp(c->scope, scope) == 0)
		c->n++;
	return 0;
}

static int
count_records(struct store *st, const char *scope, size_t *n)
{
	struct count_ctx c = { scope, 0 };
	int rc = store_each(st, count_one, &c);

	*n = c.n;
	return rc;
}

#define T0 1700000000000ULL
#define LEASE 30000ULL
#define TTL 86400000ULL
#define NTHREADS 16
#define NDUP 40     /* keys every thread claims: exactly one wins each */
#define NOWN 60     /* keys of each thread's own */

static const char *const tables[] = { "ledger", NULL };
static char dir[512];
static struct store *st;
static uint8_t fp[FP_SIZE];

struct worker {
	pthread_t tid;
	int n;
	int claimed_dup;       /* ENGINE_CLAIM answers on the shared keys */
	int other_dup;         /* conflicts or replays on them */
	int own_done;          /* own keys claimed and completed */
	int errors;
};

static int
suite_init(void)
{
	if (crypto_init() != IDEM_OK)
		return -1;
	memset(fp, 0x42, sizeof(fp));
	return 0;
}

static void
up(void)
{
	struct store_config cfg = { NULL, 0, 0, 0, 0, tables, NULL,
	    0, 0, 0, 0 };

	harness_mkdtemp(dir, sizeof(dir));
	cfg.dir = harness_store(dir, 1);
	st = NULL;
	if (store_open(&cfg, &st) != IDEM_OK)
		st = NULL;
	metrics_open(dir);
}

static void
down(void)
{
	metrics_close();
	store_close(st);
	harness_rmdir(dir);
}

static void
token(uint8_t t[REC_TOKEN_SIZE], int n, int i)
{
	memset(t, 0, REC_TOKEN_SIZE);
	t[0] = (uint8_t)n;
	t[1] = (uint8_t)i;
	t[2] = 1;
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct rec_response resp;
	struct store_claim c;
	uint8_t t[REC_TOKEN_SIZE];
	char key[32];
	int i;

	memset(&resp, 0, sizeof(resp));
	resp.status = 201;
	for (i = 0; i < NDUP + NOWN; i++) {
		if (i < NDUP)
			snprintf(key, sizeof(key), "dup-%d", i);
		else
			snprintf(key, sizeof(key), "own-%d-%d", w->n, i);
		token(t, w->n, i);
		if (store_claim(st, "acct", key, fp, t, T0, LEASE, TTL, NULL,
		    &c) != IDEM_OK) {
			w->errors++;
			continue;
		}
		if (c.decision == ENGINE_CLAIM) {
			if (i < NDUP)
				w->claimed_dup++;
			if (store_complete(st, "acct", key, t, &resp, NULL, NULL,
			    T0 + 1, TTL) != IDEM_OK)
				w->errors++;
			else if (i >= NDUP)
				w->own_done++;
		} else if (i < NDUP)
			w->other_dup++;
		else
			w->errors++;
		rec_free(&c.rec);
	}
	return NULL;
}

/*
 * Invariant 1 inside one process: every thread claims the same keys at
 * once through one handle, and each key is claimed exactly once; every
 * thread's own keys are all claimed and completed, whatever commit their
 * writes shared.
 */
static void
test_threads_exactly_once(void)
{
	struct worker w[NTHREADS];
	int i, claimed = 0, others = 0, own = 0, errors = 0;
	size_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	memset(w, 0, sizeof(w));
	for (i = 0; i < NTHREADS; i++) {
		w[i].n = i;
		CU_ASSERT_FATAL(pthread_create(&w[i].tid, NULL, worker_main,
		    &w[i]) == 0);
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(w[i].tid, NULL);
		claimed += w[i].claimed_dup;
		others += w[i].other_dup;
		own += w[i].own_done;
		errors += w[i].errors;
	}
	HARNESS_EQ(errors, 0);
	HARNESS_EQ(claimed, NDUP);
	HARNESS_EQ(others, NDUP * (NTHREADS - 1));
	HARNESS_EQ(own, NOWN * NTHREADS);
	HARNESS_EQ(count_records(st, NULL, &n), IDEM_OK);
	HARNESS_EQ(n, NDUP + NOWN * NTHREADS);
}

/*
 * What the store's counters tell an operator of these writes: every
 * write a commit carried, and where its time went.  Each commit is waited
 * for by every write it carried, so the writers' waits add up to at least
 * the commits' time, which is more than nothing.
 */
static void
test_time_counted(void)
{
	struct buf b = BUF_INIT;
	double commits, writes, commit_s, wait_s;

	test_threads_exactly_once();
	HARNESS_EQ(metrics_render(&b), IDEM_OK);
	commits = harness_sample(b.data, "idem_store_commits_total");
	writes = harness_sample(b.data, "idem_store_writes_total");
	commit_s = harness_sample(b.data, "idem_store_commit_seconds_total");
	wait_s = harness_sample(b.data, "idem_store_write_wait_seconds_total");
	/*
	 * On LMDB, each key's one claim and its completion wrote; the claims
	 * that met a claimed key only read.  PostgreSQL's commits are its
	 * own: only their time is counted.
	 */
	if (!harness_pg()) {
		HARNESS_EQ((long)writes, 2L * (NDUP + NTHREADS * NOWN));
		CU_ASSERT(commits >= 1 && commits <= writes);
	}
	CU_ASSERT(commit_s > 0);
	CU_ASSERT(wait_s >= commit_s);
	buf_free(&b);
}

#ifdef IDEM_FAULT_POINTS
struct mixed {
	pthread_t tid;
	int n;
	int failing;           /* completes (which fail) or claims and rows */
	int ok, efull, other;
	int rows_ok;           /* rows found once, their value exactly */
};

static void *
mixed_main(void *arg)
{
	struct mixed *m = arg;
	static const char cp[] = "a recovery point";
	struct store_first first = { 1, cp, sizeof(cp), NULL, NULL, NULL };
	struct rec_response resp;
	struct store_claim c;
	struct buf existing = BUF_INIT;
	uint8_t t[REC_TOKEN_SIZE];
	char key[32];
	int i, rc;

	memset(&resp, 0, sizeof(resp));
	resp.status = 201;
	for (i = 0; i < NOWN; i++) {
		/*
		 * A row that exists: the stored value comes back once, even
		 * when its batch is redone.
		 */
		if (!m->failing) {
			buf_reset(&existing);
			if (store_insert_once(st, "ledger", "row", 3, "other",
			    5, &existing) == IDEM_EEXIST && existing.len == 5 &&
			    memcmp(existing.data, "value", 5) == 0)
				m->rows_ok++;
		}
		snprintf(key, sizeof(key), "%s-%d-%d",
		    m->failing ? "done" : "new", m->n, i);
		token(t, m->n, i);
		if (m->failing)
			rc = store_complete(st, "acct", key, t, &resp, NULL, NULL,
			    T0 + 1, TTL);
		else {
			rc = store_claim(st, "acct", key, fp, t, T0, LEASE, TTL,
			    &first, &c);
			if (rc == IDEM_OK && c.decision != ENGINE_CLAIM)
				rc = -1;
			rec_free(&c.rec);
		}
		if (rc == IDEM_OK)
			m->ok++;
		else if (rc == IDEM_EFULL)
			m->efull++;
		else
			m->other++;
	}
	buf_free(&existing);
	return NULL;
}

/*
 * A write that fails halfway (here every completion, by the fault point
 * store_complete:fail, as on a full map) shares batches with claims and
 * row inserts that succeed: the failing writes undo only themselves,
 * every claim commits, and the jobs run again alone leave no trace of
 * their first run (no leak, no value appended twice).
 */
static void
test_failure_rolls_back_alone(void)
{
	struct mixed m[NTHREADS];
	uint8_t t[REC_TOKEN_SIZE];
	struct store_claim c;
	char key[32];
	size_t n;
	int i, j, claims = 0, efull = 0, other = 0, rows = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(store_insert_once(st, "ledger", "row", 3, "value", 5,
	    NULL), IDEM_OK);
	/* Claims for the completions to fail on. */
	for (i = 0; i < NTHREADS / 2; i++)
		for (j = 0; j < NOWN; j++) {
			snprintf(key, sizeof(key), "done-%d-%d", i, j);
			token(t, i, j);
			HARNESS_EQ(store_claim(st, "acct", key, fp, t, T0, LEASE,
			    TTL, NULL, &c), IDEM_OK);
			rec_free(&c.rec);
		}
	setenv("IDEM_FAULT", "store_complete:fail", 1);
	memset(m, 0, sizeof(m));
	for (i = 0; i < NTHREADS; i++) {
		m[i].n = i % (NTHREADS / 2);
		m[i].failing = i < NTHREADS / 2;
		CU_ASSERT_FATAL(pthread_create(&m[i].tid, NULL, mixed_main,
		    &m[i]) == 0);
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(m[i].tid, NULL);
		if (m[i].failing)
			efull += m[i].efull;
		else
			claims += m[i].ok;
		rows += m[i].rows_ok;
		other += m[i].other + (m[i].failing ? m[i].ok : m[i].efull);
	}
	unsetenv("IDEM_FAULT");
	HARNESS_EQ(other, 0);
	HARNESS_EQ(efull, NOWN * NTHREADS / 2);
	HARNESS_EQ(claims, NOWN * NTHREADS / 2);
	HARNESS_EQ(rows, NOWN * NTHREADS / 2);
	HARNESS_EQ(count_records(st, NULL, &n), IDEM_OK);
	HARNESS_EQ(n, NOWN * NTHREADS);
}

/*
 * A batch whose transaction fails before its jobs run (the fault point
 * store_wait:fail) fails every write it carried and writes nothing; the
 * next batch commits as usual.
 */
static void
test_failed_begin(void)
{
	uint8_t t[REC_TOKEN_SIZE];
	struct store_claim c;
	struct buf existing = BUF_INIT;
	size_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	token(t, 0, 0);
	setenv("IDEM_FAULT", "store_wait:fail", 1);
	HARNESS_EQ(store_claim(st, "acct", "k", fp, t, T0, LEASE, TTL, NULL,
	    &c), IDEM_EFULL);
	rec_free(&c.rec);
	HARNESS_EQ(store_insert_once(st, "ledger", "row", 3, "value", 5,
	    NULL), IDEM_EFULL);
	unsetenv("IDEM_FAULT");
	HARNESS_EQ(count_records(st, NULL, &n), IDEM_OK);
	HARNESS_EQ(n, 0);
	HARNESS_EQ(store_claim(st, "acct", "k", fp, t, T0, LEASE, TTL, NULL,
	    &c), IDEM_OK);
	HARNESS_EQ(c.decision, ENGINE_CLAIM);
	rec_free(&c.rec);
	HARNESS_EQ(store_insert_once(st, "ledger", "row", 3, "value", 5,
	    &existing), IDEM_OK);
	buf_free(&existing);
}
#endif

/*
 * A write whose commit fails after it ran (the fault point
 * batch_commit:fail: on LMDB the batch's transaction is aborted, on
 * PostgreSQL its COMMIT becomes a ROLLBACK) fails and leaves nothing.
 */
static void
test_failed_commit(void)
{
	uint8_t t[REC_TOKEN_SIZE];
	struct store_claim c;
	struct buf b = BUF_INIT;
	struct rec r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	token(t, 0, 0);
	setenv("IDEM_FAULT", "batch_commit:fail", 1);
	HARNESS_EQ(store_claim(st, "acct", "k", fp, t, T0, LEASE, TTL, NULL,
	    &c), IDEM_EIO);
	rec_free(&c.rec);
	HARNESS_EQ(store_insert_once(st, "ledger", "row", 3, "value", 5,
	    NULL), IDEM_EIO);
	unsetenv("IDEM_FAULT");
	HARNESS_EQ(store_lookup(st, "acct", "k", &r), IDEM_ENOTFOUND);
	HARNESS_EQ(store_get(st, "ledger", "row", 3, &b), IDEM_ENOTFOUND);
	buf_free(&b);
}

/* One write of test_failed_commit_fails_all, on a thread of its own. */
struct held_write {
	pthread_t tid;
	const char *key;
	int kind;              /* 0 claim, 1 complete (token 1), 2 row */
	uint8_t fp[FP_SIZE];
	int rc;
	struct store_claim c;
};

static void *
held_write_main(void *arg)
{
	struct held_write *w = arg;
	struct rec_response resp;
	uint8_t t[REC_TOKEN_SIZE];

	memset(&resp, 0, sizeof(resp));
	resp.status = 201;
	token(t, w->kind == 1, 9);
	if (w->kind == 2)
		w->rc = store_insert_once(st, "ledger", w->key, strlen(w->key),
		    "v", 1, NULL);
	else if (w->kind == 1)
		w->rc = store_complete(st, "acct", w->key, t, &resp, NULL, NULL,
		    T0 + 1, TTL);
	else
		w->rc = store_claim(st, "acct", w->key, w->fp, t, T0 + 1, LEASE,
		    TTL, NULL, &w->c);
	return NULL;
}

/*
 * Opens fifo for writing, which returns once a fault point's wait= has
 * opened it for reading (the thread is there), and closes it, which lets
 * that thread go on.  A fifo a reader still holds would let the next
 * writer through at once, so the next wait gets a new fifo of the same
 * name.
 */
static void
fifo_release(const char *fifo)
{
	int fd = open(fifo, O_WRONLY);

	CU_ASSERT_FATAL(fd != -1);
	close(fd);
	CU_ASSERT_FATAL(unlink(fifo) == 0);
	CU_ASSERT_FATAL(mkfifo(fifo, 0600) == 0);
}

static void
held_start(struct held_write *w, const char *key, int kind)
{
	memset(w, 0, sizeof(*w));
	w->key = key;
	w->kind = kind;
	memcpy(w->fp, fp, FP_SIZE);
	CU_ASSERT_FATAL(pthread_create(&w->tid, NULL, held_write_main, w) ==
	    0);
}

/*
 * Invariant 9, no verdict on an uncommitted write.  One batch carries,
 * in this order: a claim of "lead" (its leader's, held at store_wait
 * until the others are queued), the completion of "done", a claim of
 * "done" (which reads that completion: a replay), the claim of "busy",
 * a second claim of "busy" (which reads the first: a 409), and a row
 * inserted twice (the second finds the first: "already there", as the
 * in-process ledger's "already charged").  The commit fails after they
 * ran (batch_commit:fail): every one of them fails, the replay, the 409
 * and the row found too, and the store holds what it held.
 */
static void
test_failed_commit_fails_all(void)
{
	char fifo_lead[600], fifo_queued[600], spec[1300];
	struct held_write lead, done, replay, busy, conflict, row, again;
	struct held_write *w[] = { &done, &replay, &busy, &conflict, &row,
	    &again };
	static const char *const keys[] = { "done", "done", "busy", "busy",
	    "row", "row" };
	static const int kinds[] = { 1, 0, 0, 0, 2, 2 };
	struct buf b = BUF_INIT;
	uint8_t t[REC_TOKEN_SIZE];
	struct store_claim c;
	struct rec r;
	size_t i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	token(t, 1, 9);
	HARNESS_EQ(store_claim(st, "acct", "done", fp, t, T0, LEASE, TTL, NULL,
	    &c), IDEM_OK);
	HARNESS_EQ(c.decision, ENGINE_CLAIM);
	rec_free(&c.rec);
	snprintf(fifo_lead, sizeof(fifo_lead), "%s/lead.fifo", dir);
	snprintf(fifo_queued, sizeof(fifo_queued), "%s/queued.fifo", dir);
	CU_ASSERT_FATAL(mkfifo(fifo_lead, 0600) == 0);
	CU_ASSERT_FATAL(mkfifo(fifo_queued, 0600) == 0);
	snprintf(spec, sizeof(spec), "store_wait:wait=%s,store_queued:wait=%s,"
	    "batch_commit:fail", fifo_lead, fifo_queued);
	setenv("IDEM_FAULT", spec, 1);
	held_start(&lead, "lead", 0);
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		held_start(w[i], keys[i], kinds[i]);
		fifo_release(fifo_queued);
	}
	fifo_release(fifo_lead);
	pthread_join(lead.tid, NULL);
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		pthread_join(w[i]->tid, NULL);
	unsetenv("IDEM_FAULT");
	HARNESS_EQ(lead.rc, IDEM_EIO);
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		HARNESS_EQ(w[i]->rc, IDEM_EIO);
		HARNESS_EQ(w[i]->c.decision, 0);
		rec_free(&w[i]->c.rec);
	}
	rec_free(&lead.c.rec);
	/* Only the claim made before is there, still in progress. */
	HARNESS_EQ(store_lookup(st, "acct", "lead", &r), IDEM_ENOTFOUND);
	HARNESS_EQ(store_lookup(st, "acct", "busy", &r), IDEM_ENOTFOUND);
	HARNESS_EQ(store_lookup(st, "acct", "done", &r), IDEM_OK);
	HARNESS_EQ(r.state, REC_IN_PROGRESS);
	rec_free(&r);
	HARNESS_EQ(store_get(st, "ledger", "row", 3, &b), IDEM_ENOTFOUND);
	buf_free(&b);
}

/*
 * The group commit's gather (IDEM_COMMIT_DELAY_US): after a batch of two
 * writes, a leader alone in the queue waits for a second writer, takes it
 * into its commit (one commit for both), and commits as soon as it is
 * queued, not when the delay is over.  The store here gathers for up to
 * ten minutes: a leader that waited the whole delay would hold both
 * writers past the joins' deadline, and one that did not wait would
 * commit alone.
 */
static void
test_gather_ends_early(void)
{
	struct store_config cfg = { NULL, 0, 0, 0, 600000000u, tables, NULL,
	    0, 0, 0, 0 };
	char fifo_lead[600], fifo_queued[600], spec[1300];
	struct held_write first, second, alone, partner;
	struct buf b = BUF_INIT;
	struct timespec until;
	double commits;
	struct rec r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	store_close(st);
	cfg.dir = harness_store(dir, 0);
	st = NULL;
	HARNESS_EQ(store_open(&cfg, &st), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	/* A batch of two: the first leader held until the second is queued. */
	snprintf(fifo_lead, sizeof(fifo_lead), "%s/lead.fifo", dir);
	snprintf(fifo_queued, sizeof(fifo_queued), "%s/queued.fifo", dir);
	CU_ASSERT_FATAL(mkfifo(fifo_lead, 0600) == 0);
	CU_ASSERT_FATAL(mkfifo(fifo_queued, 0600) == 0);
	snprintf(spec, sizeof(spec), "store_wait:wait=%s,store_queued:wait=%s",
	    fifo_lead, fifo_queued);
	setenv("IDEM_FAULT", spec, 1);
	held_start(&first, "first", 0);
	held_start(&second, "second", 0);
	fifo_release(fifo_queued);
	fifo_release(fifo_lead);
	pthread_join(first.tid, NULL);
	pthread_join(second.tid, NULL);
	unsetenv("IDEM_FAULT");
	HARNESS_EQ(first.rc, IDEM_OK);
	HARNESS_EQ(second.rc, IDEM_OK);
	/* Then one leader alone, gathering, and a partner it waits for. */
	HARNESS_EQ(metrics_render(&b), IDEM_OK);
	commits = harness_sample(b.data, "idem_store_commits_total");
	held_start(&alone, "alone", 0);
	held_start(&partner, "partner", 0);
	CU_ASSERT_FATAL(clock_gettime(CLOCK_REALTIME, &until) == 0);
	until.tv_sec += 60;
	HARNESS_EQ(pthread_timedjoin_np(alone.tid, NULL, &until), 0);
	HARNESS_EQ(pthread_timedjoin_np(partner.tid, NULL, &until), 0);
	HARNESS_EQ(alone.rc, IDEM_OK);
	HARNESS_EQ(partner.rc, IDEM_OK);
	buf_reset(&b);
	HARNESS_EQ(metrics_render(&b), IDEM_OK);
	HARNESS_EQ(harness_sample(b.data, "idem_store_commits_total"),
	    commits + 1);
	buf_free(&b);
	HARNESS_EQ(store_lookup(st, "acct", "alone", &r), IDEM_OK);
	rec_free(&r);
	HARNESS_EQ(store_lookup(st, "acct", "partner", &r), IDEM_OK);
	rec_free(&r);
	rec_free(&first.c.rec);
	rec_free(&second.c.rec);
	rec_free(&alone.c.rec);
	rec_free(&partner.c.rec);
}

int
harness_suites(void)
{
	CU_pSuite s;

	s = CU_add_suite_with_setup_and_teardown("group commit", suite_init,
	    NULL, up, down);
	if (s == NULL ||
	    CU_add_test(s, "threads: exactly once", test_threads_exactly_once) ==
	    NULL)
		return -1;
	if (CU_add_test(s, "commit and wait times counted",
	    test_time_counted) == NULL)
		return -1;
#ifdef IDEM_FAULT_POINTS
	if (CU_add_test(s, "a failing write rolls back alone",
	    test_failure_rolls_back_alone) == NULL ||
	    CU_add_test(s, "a batch that cannot begin writes nothing",
	    test_failed_begin) == NULL)
		return -1;
	if (CU_add_test(s, "a write whose commit fails leaves nothing",
	    test_failed_commit) == NULL)
		return -1;
	/* PostgreSQL's transactions are one write each: no batch to share. */
	if (!harness_pg() &&
	    CU_add_test(s, "a failed commit fails every job of its batch",
	    test_failed_commit_fails_all) == NULL)
		return -1;
	/* PostgreSQL gathers commits in its server (commit_delay). */
	if (!harness_pg() &&
	    CU_add_test(s, "a gathering leader commits once its writers are in",
	    test_gather_ends_early) == NULL)
		return -1;
#endif
	return 0;
}
