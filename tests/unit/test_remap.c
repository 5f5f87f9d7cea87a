/* SPDX-License-Identifier: MIT */
/*
 * test_remap.c: an LMDB store whose data file another process grows past
 * this process's map.  The process adopts the new size (MDB_MAP_RESIZED)
 * only once no transaction of its own is active on the environment, so a
 * walk in one thread reads on, undisturbed, while another thread waits to
 * remap; a nested read of the walking thread fails (IDEM_EBUSY) instead
 * of waiting for a remap that waits for it, and so does a write asked
 * for inside a transaction.
 *
 * LMDB-only: the map belongs to LMDB, so these tests look at the
 * backend's environment (store_lmdb.h) and run on no other store.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lmdb.h>

#include "buf.h"
#include "engine.h"
#include "record.h"
#include "err.h"
#include "store.h"
#include "store_lmdb.h"

#include "harness.h"

#define PARENT_MAP ((size_t)1 << 20)
#define CHILD_MAP ((size_t)64 << 20)
/* Rows the walk reads: a few dozen leaf pages. */
#define WALK_ROWS 400
#define WALK_VAL 64
/* What the other process writes: four times the parent's whole map. */
#define BIG_VAL 4000
#define CHILD_ROWS 1024
/* How long the test waits for a thread to reach a point. */
#define REACH_MS 20000

static const char *const tables[] = { "payments", NULL };
static char dir[512];
static struct store *st;

static void
walk_key(int i, char *key, size_t len)
{
	snprintf(key, len, "row-%04d", i);
}

static void
walk_val(int i, uint8_t *val)
{
	int j;

	for (j = 0; j < WALK_VAL; j++)
		val[j] = (uint8_t)(i * 7 + j);
}

static void
remap_up(void)
{
	struct store_config cfg = { NULL, PARENT_MAP, 0, 0, 0, tables, NULL,
	    0, 0, 0, 0 };
	uint8_t val[WALK_VAL];
	char key[32];
	int i, rc = IDEM_OK;

	harness_mkdtemp(dir, sizeof(dir));
	cfg.dir = dir;
	st = NULL;
	if (store_open(&cfg, &st) != IDEM_OK) {
		fprintf(stderr, "store_open %s failed\n", dir);
		st = NULL;
		return;
	}
	for (i = 0; i < WALK_ROWS && rc == IDEM_OK; i++) {
		walk_key(i, key, sizeof(key));
		walk_val(i, val);
		rc = store_insert_once(st, "payments", key, strlen(key), val,
		    sizeof(val), NULL);
	}
	if (rc != IDEM_OK) {
		fprintf(stderr, "filling %s: %s\n", dir, idem_strerror(rc));
		store_close(st);
		st = NULL;
	}
}

static void
remap_down(void)
{
	store_close(st);
	st = NULL;
	harness_rmdir(dir);
}

static unsigned
remaps_waiting(void)
{
	unsigned waiting, done;

	lstore_remap_counts(st, &waiting, &done);
	return waiting;
}

static unsigned
remaps_done(void)
{
	unsigned waiting, done;

	lstore_remap_counts(st, &waiting, &done);
	return done;
}

/* The map size this process has now. */
static size_t
map_size(void)
{
	MDB_envinfo info;

	if (mdb_env_info(lstore_of(st)->e->env, &info) != 0)
		return 0;
	return info.me_mapsize;
}

/*
 * Polls until *flag is set or cond() holds, for at most REACH_MS: a
 * bound on how long a thread may take to reach a point, not a way to
 * order anything.  1 when one of them came true.
 */
static int
reach(const int *flag, unsigned (*cond)(void))
{
	struct timespec ts = { 0, 1000000L };
	int ms;

	for (ms = 0; ms < REACH_MS; ms++) {
		if (__atomic_load_n(flag, __ATOMIC_SEQ_CST) || cond() > 0)
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

/*
 * A walk over the parent's rows that stops at its first row, inside its
 * read transaction with its cursor open, until the test lets it go on:
 * it says so on held and waits on go.  With nested set it then reads a
 * row itself, from inside the walk, into nested_rc.
 */
struct walk {
	int held[2];
	int go[2];
	int nested;
	int nested_rc;
	int n;
	int bad;
	int remapped;      /* rows seen after a remap had happened */
	int rc;
};

static int
walk_one(void *ctx, const void *key, size_t keylen, const void *val,
    size_t vallen)
{
	struct walk *w = ctx;
	struct buf got = BUF_INIT;
	uint8_t want[WALK_VAL];
	char name[32];
	char c = 'h';

	if (w->n == 0) {
		if (write(w->held[1], &c, 1) != 1 || read(w->go[0], &c, 1) != 1)
			w->bad++;
		if (w->nested) {
			w->nested_rc = store_get(st, "payments", "row-0001", 8,
			    &got);
			buf_free(&got);
		}
	}
	walk_key(w->n, name, sizeof(name));
	walk_val(w->n, want);
	if (keylen != strlen(name) || memcmp(key, name, keylen) != 0 ||
	    vallen != sizeof(want) || memcmp(val, want, vallen) != 0)
		w->bad++;
	if (remaps_done() > 0)
		w->remapped++;
	w->n++;
	return w->n == WALK_ROWS;
}

static void *
walk_run(void *arg)
{
	struct walk *w = arg;

	w->rc = store_scan(st, "payments", "row-", 4, 0, 0, walk_one, w);
	return NULL;
}

/* A write that meets the grown map as it begins. */
struct late {
	int rc;
	int done;
};

static void *
late_run(void *arg)
{
	struct late *l = arg;
	static uint8_t val[BIG_VAL];

	l->rc = store_insert_once(st, "payments", "late", 4, val, sizeof(val),
	    NULL);
	__atomic_store_n(&l->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/*
 * The other process: it opens the same directory with a larger map,
 * after fork, as LMDB requires, and writes past the parent's map.
 */
static void
grow_child(void)
{
	struct store_config cfg = { NULL, CHILD_MAP, 0, 0, 0, tables, NULL,
	    0, 0, 0, 0 };
	struct store *s;
	static uint8_t val[BIG_VAL];
	char key[32];
	int i, rc;

	cfg.dir = dir;
	if (store_open(&cfg, &s) != IDEM_OK)
		_exit(2);
	for (i = 0, rc = IDEM_OK; i < CHILD_ROWS && rc == IDEM_OK; i++) {
		snprintf(key, sizeof(key), "child-%04d", i);
		memset(val, i, sizeof(val));
		rc = store_insert_once(s, "payments", key, strlen(key), val,
		    sizeof(val), NULL);
	}
	store_close(s);
	_exit(rc == IDEM_OK ? 0 : 3);
}

static int
grow(void)
{
	pid_t pid;
	int status;

	if ((pid = fork()) == -1)
		return -1;
	if (pid == 0)
		grow_child();
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/*
 * One thread walks, holding its read transaction and cursor; another
 * process grows the file past this process's map; a third thread begins
 * a write, meets MDB_MAP_RESIZED and waits for the walk; the walk then
 * reads every row as it was, and only after it may the map move.
 */
static void
run_walk_and_remap(struct walk *w)
{
	pthread_t walker, writer;
	struct late l = { IDEM_EIO, 0 };
	char c = 'g';
	int reached;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	CU_ASSERT_FATAL(pipe(w->held) == 0);
	CU_ASSERT_FATAL(pipe(w->go) == 0);
	CU_ASSERT_FATAL(pthread_create(&walker, NULL, walk_run, w) == 0);
	CU_ASSERT_FATAL(read(w->held[0], &c, 1) == 1);
	HARNESS_EQ(grow(), 0);
	CU_ASSERT_FATAL(pthread_create(&writer, NULL, late_run, &l) == 0);
	reached = reach(&l.done, remaps_waiting);
	CU_ASSERT(reached);
	/* The write cannot finish before the walk has. */
	HARNESS_EQ(__atomic_load_n(&l.done, __ATOMIC_SEQ_CST), 0);
	HARNESS_EQ(remaps_done(), 0);
	c = 'g';
	CU_ASSERT_FATAL(write(w->go[1], &c, 1) == 1);
	pthread_join(walker, NULL);
	pthread_join(writer, NULL);
	HARNESS_EQ(w->rc, IDEM_OK);
	HARNESS_EQ(w->n, WALK_ROWS);
	HARNESS_EQ(w->bad, 0);
	HARNESS_EQ(w->remapped, 0);
	HARNESS_EQ(l.rc, IDEM_OK);
	HARNESS_EQ(remaps_done(), 1);
	HARNESS_EQ(remaps_waiting(), 0);
	close(w->held[0]);
	close(w->held[1]);
	close(w->go[0]);
	close(w->go[1]);
}

/* After a remap: the other process's rows, and room for writes of ours. */
static void
assert_adopted(void)
{
	static uint8_t val[BIG_VAL];
	struct buf got = BUF_INIT;
	char key[32];
	int i, rc = IDEM_OK;

	CU_ASSERT(map_size() >= CHILD_MAP);
	HARNESS_EQ(store_get(st, "payments", "child-0007", 10, &got), IDEM_OK);
	HARNESS_EQ(got.len, BIG_VAL);
	if (got.len == BIG_VAL)
		CU_ASSERT(got.data[0] == 7 && got.data[BIG_VAL - 1] == 7);
	buf_free(&got);
	/* More than the old map could ever have held. */
	for (i = 0; i < 2 * CHILD_ROWS && rc == IDEM_OK; i++) {
		snprintf(key, sizeof(key), "after-%04d", i);
		rc = store_insert_once(st, "payments", key, strlen(key), val,
		    sizeof(val), NULL);
	}
	HARNESS_EQ(rc, IDEM_OK);
	HARNESS_EQ(remaps_done(), 1);
}

static void
test_remap_waits_for_walk(void)
{
	struct walk w;

	memset(&w, 0, sizeof(w));
	run_walk_and_remap(&w);
	assert_adopted();
}

/*
 * The walking thread reads again, inside its walk, while the remap
 * waits: its own transaction keeps the map where it is, so its nested
 * read neither waits (that would never end) nor remaps, and says the
 * store is busy.
 */
static void
test_nested_read_while_remap_waits(void)
{
	struct walk w;

	memset(&w, 0, sizeof(w));
	w.nested = 1;
	w.nested_rc = -1;
	run_walk_and_remap(&w);
	HARNESS_EQ(w.nested_rc, IDEM_EBUSY);
	assert_adopted();
}

/* A nested read with no remap in sight is an ordinary read. */
static int
nested_one(void *ctx, const void *key, size_t keylen, const void *val,
    size_t vallen)
{
	struct buf got = BUF_INIT;
	int *rc = ctx;

	(void)vallen;
	(void)val;
	*rc = store_get(st, "payments", key, keylen, &got);
	if (*rc == IDEM_OK && got.len != WALK_VAL)
		*rc = IDEM_ECORRUPT;
	buf_free(&got);
	return *rc != IDEM_OK;
}

static void
test_nested_read(void)
{
	int rc = -1;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(store_scan(st, "payments", "row-", 4, 0, 0, nested_one,
	    &rc), IDEM_OK);
	HARNESS_EQ(rc, IDEM_OK);
	HARNESS_EQ(remaps_done(), 0);
}

/*
 * A write asked for inside a scan would wait for a commit whose leader
 * may wait, behind a remap, for the scan to end: it is refused.
 */
static int
write_one(void *ctx, const void *key, size_t keylen, const void *val,
    size_t vallen)
{
	int *rc = ctx;

	(void)key;
	(void)keylen;
	(void)val;
	(void)vallen;
	*rc = store_insert_once(st, "payments", "inside", 6, "v", 1, NULL);
	return 1;
}

static void
test_write_inside_scan(void)
{
	struct buf got = BUF_INIT;
	int rc = -1;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(store_scan(st, "payments", "row-", 4, 0, 0, write_one,
	    &rc), IDEM_OK);
	HARNESS_EQ(rc, IDEM_EBUSY);
	HARNESS_EQ(store_get(st, "payments", "inside", 6, &got),
	    IDEM_ENOTFOUND);
	buf_free(&got);
	HARNESS_EQ(store_insert_once(st, "payments", "inside", 6, "v", 1,
	    NULL), IDEM_OK);
}

/*
 * The other process, for a store it gives a larger map: it writes rows
 * until the data fills more than 93% of the parent's map, and stops
 * short of all of it, so that nothing the parent does meets
 * MDB_MAP_RESIZED.  Exit 0 when it stopped there.
 */
static void
fill_child(void)
{
	struct store_config cfg = { NULL, CHILD_MAP, 0, 0, 0, tables, NULL,
	    0, 0, 0, 0 };
	struct store *s;
	MDB_envinfo info;
	MDB_stat ms;
	static uint8_t val[BIG_VAL];
	char key[32];
	size_t used = 0;
	int i, rc;

	cfg.dir = dir;
	if (store_open(&cfg, &s) != IDEM_OK)
		_exit(2);
	for (i = 0, rc = IDEM_OK; rc == IDEM_OK && i < CHILD_ROWS; i++) {
		/* One thread, no transaction: the map cannot move here. */
		if (mdb_env_info(lstore_of(s)->e->env, &info) != 0 ||
		    mdb_env_stat(lstore_of(s)->e->env, &ms) != 0)
			_exit(4);
		used = (info.me_last_pgno + 1) * ms.ms_psize;
		if (used > PARENT_MAP / 100 * 93)
			break;
		snprintf(key, sizeof(key), "fill-%04d", i);
		memset(val, i, sizeof(val));
		rc = store_insert_once(s, "payments", key, strlen(key), val,
		    sizeof(val), NULL);
	}
	store_close(s);
	_exit(rc == IDEM_OK && used > PARENT_MAP / 100 * 93 &&
	    used < PARENT_MAP ? 0 : 3);
}

/*
 * A process whose map is smaller than the one another process gave the
 * store judges the store's room by the store's size: once the other
 * process has filled more than 90% of this one's map (less than all of
 * it), a new key here is claimed, not refused as full, and the map it
 * then has is the other's.
 */
static void
test_smaller_map_claims(void)
{
	struct store_claim c;
	uint8_t fp[FP_SIZE], token[REC_TOKEN_SIZE];
	pid_t pid;
	int status = -1;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	if ((pid = fork()) == 0)
		fill_child();
	CU_ASSERT_FATAL(pid > 0);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		continue;
	CU_ASSERT_FATAL(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CU_ASSERT(map_size() < CHILD_MAP);
	memset(fp, 1, sizeof(fp));
	memset(token, 2, sizeof(token));
	HARNESS_EQ(store_claim(st, "acct", "new-key", fp, token,
	    1700000000000ULL, 30000, 86400000, NULL, &c), IDEM_OK);
	HARNESS_EQ(c.decision, ENGINE_CLAIM);
	rec_free(&c.rec);
	CU_ASSERT(map_size() >= CHILD_MAP);
}

int
harness_suites(void)
{
	CU_pSuite s;

	if (harness_pg())
		return 0;
	s = CU_add_suite_with_setup_and_teardown("remap", NULL, NULL,
	    remap_up, remap_down);
	if (s == NULL ||
	    CU_add_test(s, "a remap waits for a walk in another thread",
	    test_remap_waits_for_walk) == NULL ||
	    CU_add_test(s, "a nested read while a remap waits: busy",
	    test_nested_read_while_remap_waits) == NULL ||
	    CU_add_test(s, "a nested read", test_nested_read) == NULL ||
	    CU_add_test(s, "a write inside a scan is refused",
	    test_write_inside_scan) == NULL ||
	    CU_add_test(s, "a smaller map than the store's: claims go on",
	    test_smaller_map_claims) == NULL)
		return -1;
	return 0;
}
