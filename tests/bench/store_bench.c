/* SPDX-License-Identifier: MIT */
/*
 * store_bench: the idempotency store alone, against the reference design's
 * store, for tests/bench/run.py.
 *
 *   store_bench lmdb   -d DIR [-T SECONDS] [-n KEYS] [-t THREADS]
 *   store_bench sqlite -d DIR [-s full|normal] [-T SECONDS] [-n KEYS]
 *                      [-t THREADS]
 *   store_bench fill   -d DIR -n KEYS -S SCOPE -p PREFIX [-x]
 *                      [-f canonical|raw] [-B BODY] [-R ANSWER] [-L LOCATION]
 *   store_bench payments -d DIR -n PAYMENTS -S SCOPE -o IDS [-k KEYFILE]
 *                      [-t THREADS]
 *
 * lmdb and sqlite time the two writes every fresh keyed request makes, a
 * claim and then a completion, for fresh keys, until KEYS keys are done or
 * SECONDS have passed, and print one JSON line with keys per second.
 *
 * lmdb goes through the project's store (store.h): store_claim, then
 * store_complete with a stored 201, each a durable transaction.
 *
 * sqlite is the store of the reference article (shared/reference): one
 * table keyed by (scope, key) in WAL mode; the claim is its single
 * statement INSERT ... ON CONFLICT (scope, key) DO UPDATE ... WHERE
 * expires_at <= now, which claimed the key when it changed one row; the
 * completion is an UPDATE guarded by state = 'in_progress'.  Each
 * statement commits on its own, as in the article, with
 * PRAGMA synchronous FULL or NORMAL (in WAL mode NORMAL does not sync at
 * commit, only at checkpoints: faster, but a power cut may lose the last
 * commits, which idem never allows).
 *
 * fill writes KEYS completed records with the project's store, as the
 * responder would have written them for POST /payments with body BODY
 * (fingerprinted as IDEM_FINGERPRINT does) under the keys PREFIX0,
 * PREFIX1, ... of scope SCOPE, each holding the answer ANSWER with its
 * Location.  With -x the records are written as if a day and an hour ago,
 * so all of them have expired (for purge).  It runs as fast as the
 * directory's file system syncs: the benchmark points it at a tmpfs and
 * copies the file.
 *
 * payments writes PAYMENTS payments of scope SCOPE as POST /payments
 * leaves them (post.c): each its row in "payments", named by rowkey(id)
 * and holding pay_row_encode of its JSON representation, and its entry
 * in the account's index "by_account" (scope, NUL, the time as 8 bytes
 * big-endian, rowkey(id)) whose value is the id.  Ids are random, as
 * pay_cp_new makes them; payment i (from 0) is made i milliseconds after
 * the first, and the last one now, so no two share a millisecond.  Each
 * is written through libidem (idem_row_insert_once), so with -k the
 * values are sealed under KEYFILE's first key as a responder given that
 * IDEM_SECRET_FILE seals them, and in the clear without it.  The ids are
 * written to the file IDS, newest first, one a line.
 *
 * Every mode runs its work on THREADS threads (default 1), each with its
 * own connection (SQLite) or sharing the one store handle (lmdb), whose
 * writes from concurrent threads share group commits.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "buf.h"
#include "crypto.h"
#include "engine.h"
#include "err.h"
#include "fault.h"
#include "fp.h"
#include "json.h"
#include "key.h"
#include "record.h"
#include "store.h"

#include "idem.h"
#include "money.h"
#include "payment.h"
#include "rowkey.h"
#include "shared.h"

#define SB_MAX_THREADS 64
#define SB_TTL_MS ((uint64_t)86400 * 1000)
#define SB_LEASE_MS ((uint64_t)30 * 1000)
#define SB_MAP_SIZE ((size_t)4 << 30)
#define SB_SCOPE "acct_bench"

/* What a fresh payment stores: the size of a real 201 answer. */
#define SB_BODY "{\"amount\": 100.00, \"currency\": \"BRL\"}"
#define SB_LOCATION "/payments/pay_0123456789abcdef0123456789abcdef"
#define SB_ANSWER "{\"id\":\"pay_0123456789abcdef0123456789abcdef\"," \
    "\"status\":\"succeeded\",\"amount\":\"100.00\",\"currency\":\"BRL\"," \
    "\"charge\":\"ch_0123456789abcdef0123456789abcdef\"," \
    "\"created\":\"2025-01-01T00:00:00Z\"}"

enum sb_backend {
	SB_LMDB = 0,
	SB_SQLITE,
	SB_FILL,
	SB_PAYMENTS,
	SB_BACKEND__MAX
};

static const char *const sb_backend_names[SB_BACKEND__MAX] = {
	[SB_LMDB] = "lmdb",
	[SB_SQLITE] = "sqlite",
	[SB_FILL] = "fill",
	[SB_PAYMENTS] = "payments",
};

struct sb_options {
	enum sb_backend backend;
	const char *dir;
	const char *sync;         /* sqlite: FULL or NORMAL */
	const char *scope;
	const char *prefix;
	const char *body;
	const char *answer;
	const char *location;
	const char *ids;          /* payments: where the ids are written */
	const char *secret_file;  /* payments: NULL writes in the clear */
	enum fp_mode fp_mode;
	int expired;
	long threads;
	uint64_t keys;            /* 0: until the time is up */
	double seconds;
};

/* State shared by the threads of one run. */
struct sb_run {
	const struct sb_options *o;
	uint8_t fp[FP_SIZE];
	char fphex[2 * FP_SIZE + 1];
	char runid[17];
	uint64_t now_ms;          /* the claims' clock (fill) */
	uint64_t next;            /* the next key index, taken atomically */
	struct timespec start;
	struct store *store;      /* lmdb and fill: one per process */
	struct idem *idem;        /* payments */
	char (*ids)[PAY_ID_LEN + 1];  /* payments: payment i's id */
	int failed;
};

/* One thread's share of the run. */
struct sb_thread {
	struct sb_run *run;
	pthread_t tid;
	uint64_t done;
	char err[640];
};

static double
sb_elapsed(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - since->tv_sec) +
	    (double)(now.tv_nsec - since->tv_nsec) / 1e9;
}

/*
 * The next key index for this thread, or -1 when the run is over: every
 * key was handed out, the time is up, or a thread failed.
 */
static int
sb_take(struct sb_run *r, uint64_t *i)
{
	if (__atomic_load_n(&r->failed, __ATOMIC_RELAXED))
		return -1;
	if (r->o->seconds > 0 && sb_elapsed(&r->start) >= r->o->seconds)
		return -1;
	*i = __atomic_fetch_add(&r->next, 1, __ATOMIC_RELAXED);
	if (r->o->keys > 0 && *i >= r->o->keys)
		return -1;
	return 0;
}

static void
sb_key(const struct sb_run *r, uint64_t i, char *out, size_t len)
{
	if (r->o->backend == SB_FILL)
		snprintf(out, len, "%s%" PRIu64, r->o->prefix, i);
	else
		snprintf(out, len, "sb-%s-%" PRIu64, r->runid, i);
}

/* ---------------------------------------------------------------- LMDB */

/* One fresh key through the project's store: claim, then complete. */
static int
sb_lmdb_one(struct sb_thread *t, uint64_t i)
{
	const struct sb_options *o = t->run->o;
	struct rec_response resp;
	struct store_claim c;
	uint8_t token[REC_TOKEN_SIZE];
	uint64_t now = o->backend == SB_FILL ? t->run->now_ms : clock_now_ms();
	char key[KEY_MAX + 1];
	int rc;

	sb_key(t->run, i, key, sizeof(key));
	crypto_random(token, sizeof(token));
	memset(&c, 0, sizeof(c));
	rc = store_claim(t->run->store, o->scope, key, t->run->fp, token, now,
	    SB_LEASE_MS, SB_TTL_MS, NULL, &c);
	if (rc == IDEM_OK && c.decision != ENGINE_CLAIM) {
		snprintf(t->err, sizeof(t->err), "store_claim %s: decision "
		    "%d, not a claim", key, (int)c.decision);
		rec_free(&c.rec);
		return -1;
	}
	rec_free(&c.rec);
	if (rc != IDEM_OK) {
		snprintf(t->err, sizeof(t->err), "store_claim %s: %s", key,
		    idem_strerror(rc));
		return -1;
	}
	memset(&resp, 0, sizeof(resp));
	resp.status = 201;
	resp.nheaders = 2;
	resp.headers[0].name = (char *)"Content-Type";
	resp.headers[0].value = (char *)"application/json";
	resp.headers[1].name = (char *)"Location";
	resp.headers[1].value = (char *)o->location;
	resp.body = (uint8_t *)o->answer;
	resp.bodylen = strlen(o->answer);
	rc = store_complete(t->run->store, o->scope, key, token, &resp, NULL,
	    NULL, now, SB_TTL_MS);
	if (rc != IDEM_OK) {
		snprintf(t->err, sizeof(t->err), "store_complete %s: %s", key,
		    idem_strerror(rc));
		return -1;
	}
	return 0;
}

static int
sb_lmdb_open(struct sb_run *r, char *err, size_t errlen)
{
	struct store_config cfg;
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	cfg.dir = r->o->dir;
	cfg.map_size = SB_MAP_SIZE;
	cfg.max_keys_per_scope = 0;
	if ((rc = store_open(&cfg, &r->store)) != IDEM_OK) {
		snprintf(err, errlen, "store_open %s: %s", r->o->dir,
		    idem_strerror(rc));
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ payments */

/* A payment's row and index entry, as pay_succeed writes them. */
static int
sb_pay_one(struct sb_thread *t, uint64_t i)
{
	const struct sb_options *o = t->run->o;
	struct pay_order order = { 10000, money_currency("BRL") };
	struct buf body = BUF_INIT, row = BUF_INIT, idx = BUF_INIT;
	uint8_t name[ROWKEY_LEN], raw[PAY_ID_HEX / 2];
	struct pay_cp cp;
	char charge[3 + PAY_ID_HEX + 1];
	const char *what = "encoding";
	int rc;

	pay_cp_new(t->run->now_ms - (o->keys - 1 - i), &order, &cp);
	crypto_random(raw, sizeof(raw));
	memcpy(charge, "ch_", 3);
	crypto_hex(raw, sizeof(raw), charge + 3);
	rowkey(cp.id, PAY_ID_LEN, name);
	if ((rc = pay_render(&cp, &order, charge, &body)) != IDEM_OK ||
	    (rc = pay_row_encode(o->scope, &body, &row)) != IDEM_OK ||
	    (rc = buf_append(&idx, o->scope, strlen(o->scope) + 1)) !=
	    IDEM_OK ||
	    (rc = buf_put_u64(&idx, cp.created_ms)) != IDEM_OK ||
	    (rc = buf_append(&idx, name, sizeof(name))) != IDEM_OK)
		goto out;
	what = PAY_TABLE_PAYMENTS;
	if ((rc = idem_row_insert_once(t->run->idem, PAY_TABLE_PAYMENTS, name,
	    sizeof(name), row.data, row.len, NULL, NULL)) != IDEM_OK)
		goto out;
	what = PAY_TABLE_BY_ACCOUNT;
	rc = idem_row_insert_once(t->run->idem, PAY_TABLE_BY_ACCOUNT, idx.data,
	    idx.len, cp.id, PAY_ID_LEN, NULL, NULL);
out:
	if (rc == IDEM_OK)
		memcpy(t->run->ids[i], cp.id, sizeof(cp.id));
	else
		snprintf(t->err, sizeof(t->err), "payment %" PRIu64 ": %s: %s",
		    i, what, idem_strerror(rc));
	buf_free(&idx);
	buf_free(&row);
	buf_free(&body);
	return rc == IDEM_OK ? 0 : -1;
}

/* The store as the responder opens it: its tables, its key file. */
static int
sb_pay_open(struct sb_run *r, char *err, size_t errlen)
{
	struct idem_options opt = IDEM_OPTIONS_INIT;
	int rc;

	opt.dir = r->o->dir;
	opt.map_size = SB_MAP_SIZE;
	opt.tables = pay_tables;
	opt.secret_file = r->o->secret_file;
	r->ids = calloc((size_t)r->o->keys, sizeof(*r->ids));
	if (r->ids == NULL) {
		snprintf(err, errlen, "out of memory for %" PRIu64 " ids",
		    r->o->keys);
		return -1;
	}
	if ((rc = idem_open(&opt, &r->idem)) != IDEM_OK) {
		snprintf(err, errlen, "idem_open %s: %s", r->o->dir,
		    idem_strerror(rc));
		return -1;
	}
	return 0;
}

/* The ids, newest first (payment i is older than payment i + 1). */
static int
sb_pay_ids_write(const struct sb_run *r)
{
	FILE *f = fopen(r->o->ids, "w");
	uint64_t i;

	if (f == NULL) {
		fprintf(stderr, "store_bench: %s: %s\n", r->o->ids,
		    strerror(errno));
		return -1;
	}
	for (i = r->o->keys; i > 0; i--)
		fprintf(f, "%s\n", r->ids[i - 1]);
	if (ferror(f) != 0 || fclose(f) != 0) {
		fprintf(stderr, "store_bench: %s: write failed\n", r->o->ids);
		return -1;
	}
	return 0;
}

/* -------------------------------------------------------------- SQLite */

static const char sb_sqlite_schema[] =
    "CREATE TABLE IF NOT EXISTS idempotency_keys ("
    " scope TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('in_progress', 'completed')),"
    " status_code INTEGER NULL, content_type TEXT NULL,"
    " location TEXT NULL, body BLOB NULL,"
    " created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,"
    " PRIMARY KEY (scope, key));";

/* The article's claim: insert, or take over an expired row. */
static const char sb_sqlite_claim[] =
    "INSERT INTO idempotency_keys (scope, key, fingerprint, state,"
    " created_at, expires_at)"
    " VALUES (?1, ?2, ?3, 'in_progress', ?4, ?5)"
    " ON CONFLICT (scope, key) DO UPDATE SET"
    " fingerprint = excluded.fingerprint, state = 'in_progress',"
    " status_code = NULL, content_type = NULL, location = NULL,"
    " body = NULL, created_at = excluded.created_at,"
    " expires_at = excluded.expires_at"
    " WHERE idempotency_keys.expires_at <= excluded.created_at;";

static const char sb_sqlite_complete[] =
    "UPDATE idempotency_keys SET state = 'completed', status_code = ?1,"
    " content_type = ?2, location = ?3, body = ?4"
    " WHERE scope = ?5 AND key = ?6 AND state = 'in_progress';";

struct sb_sqlite {
	sqlite3 *db;
	sqlite3_stmt *claim;
	sqlite3_stmt *complete;
};

static void
sb_sqlite_close(struct sb_sqlite *q)
{
	sqlite3_finalize(q->complete);
	sqlite3_finalize(q->claim);
	sqlite3_close(q->db);
	memset(q, 0, sizeof(*q));
}

static int
sb_sqlite_exec(struct sb_sqlite *q, const char *sql, char *err, size_t len)
{
	char *msg = NULL;

	if (sqlite3_exec(q->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		snprintf(err, len, "sqlite: %s: %s", sql, msg ? msg : "?");
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* One connection, as every request of the article opens one. */
static int
sb_sqlite_open(const struct sb_options *o, struct sb_sqlite *q, char *err,
    size_t len)
{
	char path[4096], pragma[64];

	memset(q, 0, sizeof(*q));
	snprintf(path, sizeof(path), "%s/idempotency.db", o->dir);
	snprintf(pragma, sizeof(pragma), "PRAGMA synchronous = %s;", o->sync);
	if (sqlite3_open_v2(path, &q->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		snprintf(err, len, "sqlite: open %.400s: %s", path,
		    q->db ? sqlite3_errmsg(q->db) : "out of memory");
		goto fail;
	}
	sqlite3_busy_timeout(q->db, 10000);
	if (sb_sqlite_exec(q, "PRAGMA journal_mode = WAL;", err, len) != 0 ||
	    sb_sqlite_exec(q, pragma, err, len) != 0 ||
	    sb_sqlite_exec(q, sb_sqlite_schema, err, len) != 0)
		goto fail;
	if (sqlite3_prepare_v2(q->db, sb_sqlite_claim, -1, &q->claim,
	    NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(q->db, sb_sqlite_complete, -1, &q->complete,
	    NULL) != SQLITE_OK) {
		snprintf(err, len, "sqlite: prepare: %s",
		    sqlite3_errmsg(q->db));
		goto fail;
	}
	return 0;
fail:
	sb_sqlite_close(q);
	return -1;
}

static int
sb_sqlite_step(struct sb_thread *t, sqlite3 *db, sqlite3_stmt *st,
    const char *what)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE) {
		snprintf(t->err, sizeof(t->err), "sqlite %s: %s", what,
		    sqlite3_errmsg(db));
		return -1;
	}
	return 0;
}

/* One fresh key the article's way: the upsert claim, then the update. */
static int
sb_sqlite_one(struct sb_thread *t, struct sb_sqlite *q, uint64_t i)
{
	const struct sb_options *o = t->run->o;
	sqlite3_int64 now = (sqlite3_int64)clock_now_ms();
	char key[KEY_MAX + 1];

	sb_key(t->run, i, key, sizeof(key));
	sqlite3_bind_text(q->claim, 1, o->scope, -1, SQLITE_STATIC);
	sqlite3_bind_text(q->claim, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(q->claim, 3, t->run->fphex, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q->claim, 4, now);
	sqlite3_bind_int64(q->claim, 5, now + (sqlite3_int64)SB_TTL_MS);
	if (sb_sqlite_step(t, q->db, q->claim, "claim") != 0)
		return -1;
	if (sqlite3_changes(q->db) != 1) {
		snprintf(t->err, sizeof(t->err), "sqlite claim %s: not "
		    "claimed", key);
		return -1;
	}
	sqlite3_bind_int(q->complete, 1, 201);
	sqlite3_bind_text(q->complete, 2, "application/json", -1,
	    SQLITE_STATIC);
	sqlite3_bind_text(q->complete, 3, o->location, -1, SQLITE_STATIC);
	sqlite3_bind_blob(q->complete, 4, o->answer, (int)strlen(o->answer),
	    SQLITE_STATIC);
	sqlite3_bind_text(q->complete, 5, o->scope, -1, SQLITE_STATIC);
	sqlite3_bind_text(q->complete, 6, key, -1, SQLITE_STATIC);
	if (sb_sqlite_step(t, q->db, q->complete, "complete") != 0)
		return -1;
	if (sqlite3_changes(q->db) != 1) {
		snprintf(t->err, sizeof(t->err), "sqlite complete %s: not "
		    "completed", key);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------- threads */

static void *
sb_thread_main(void *arg)
{
	struct sb_thread *t = arg;
	struct sb_sqlite q;
	uint64_t i;
	int rc = 0;

	if (t->run->o->backend == SB_SQLITE &&
	    sb_sqlite_open(t->run->o, &q, t->err, sizeof(t->err)) != 0) {
		__atomic_store_n(&t->run->failed, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	while (rc == 0 && sb_take(t->run, &i) == 0) {
		if (t->run->o->backend == SB_SQLITE)
			rc = sb_sqlite_one(t, &q, i);
		else if (t->run->o->backend == SB_PAYMENTS)
			rc = sb_pay_one(t, i);
		else
			rc = sb_lmdb_one(t, i);
		if (rc == 0)
			t->done++;
	}
	if (rc != 0)
		__atomic_store_n(&t->run->failed, 1, __ATOMIC_RELAXED);
	if (t->run->o->backend == SB_SQLITE)
		sb_sqlite_close(&q);
	return NULL;
}

/*
 * The schema is made once, before the clock starts, so that threads do
 * not race to create it.
 */
static int
sb_prepare(struct sb_run *r, char *err, size_t len)
{
	struct sb_sqlite q;

	if (r->o->backend == SB_PAYMENTS)
		return sb_pay_open(r, err, len);
	if (r->o->backend != SB_SQLITE)
		return sb_lmdb_open(r, err, len);
	if (sb_sqlite_open(r->o, &q, err, len) != 0)
		return -1;
	sb_sqlite_close(&q);
	return 0;
}

static int
sb_fingerprint(struct sb_run *r, char *err, size_t len)
{
	const char *body = r->o->body;
	struct json_value *doc = NULL;
	struct buf canon = BUF_INIT;
	int rc = -1;

	if (r->o->fp_mode == FP_RAW) {
		fp_compute(FP_RAW, "POST", "/payments", "", body,
		    strlen(body), r->fp);
		rc = 0;
		goto out;
	}
	if (json_parse(body, strlen(body), &doc, err, len) != JSON_OK)
		goto out;
	if (json_canonical(doc, &canon) != IDEM_OK) {
		snprintf(err, len, "json_canonical: out of memory");
		goto out;
	}
	fp_compute(FP_CANONICAL, "POST", "/payments", "", canon.data,
	    canon.len, r->fp);
	rc = 0;
out:
	if (rc == 0)
		crypto_hex(r->fp, FP_SIZE, r->fphex);
	buf_free(&canon);
	json_free(doc);
	return rc;
}

static int
sb_run(const struct sb_options *o)
{
	struct sb_thread threads[SB_MAX_THREADS];
	struct sb_run r;
	uint8_t id[8];
	uint64_t done = 0;
	double secs;
	char err[640];
	long i, started;

	memset(&r, 0, sizeof(r));
	memset(threads, 0, sizeof(threads));
	r.o = o;
	crypto_random(id, sizeof(id));
	crypto_hex(id, sizeof(id), r.runid);
	/* A day and an hour ago: the records are past their TTL already. */
	r.now_ms = clock_now_ms() - (o->expired ? SB_TTL_MS + 3600000 : 0);
	if (sb_fingerprint(&r, err, sizeof(err)) != 0 ||
	    sb_prepare(&r, err, sizeof(err)) != 0) {
		fprintf(stderr, "store_bench: %s\n", err);
		idem_close(r.idem);
		free(r.ids);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &r.start);
	for (started = 0; started < o->threads; started++) {
		threads[started].run = &r;
		if (pthread_create(&threads[started].tid, NULL, sb_thread_main,
		    &threads[started]) != 0) {
			fprintf(stderr, "store_bench: pthread_create: %s\n",
			    strerror(errno));
			__atomic_store_n(&r.failed, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	for (i = 0; i < started; i++) {
		pthread_join(threads[i].tid, NULL);
		done += threads[i].done;
		if (threads[i].err[0] != '\0')
			fprintf(stderr, "store_bench: thread %ld: %s\n", i,
			    threads[i].err);
	}
	secs = sb_elapsed(&r.start);
	if (r.store != NULL)
		store_close(r.store);
	idem_close(r.idem);
	if (!r.failed && o->backend == SB_PAYMENTS && sb_pay_ids_write(&r) != 0)
		r.failed = 1;
	free(r.ids);
	if (r.failed)
		return 1;
	printf("{\"backend\":\"%s\",\"sync\":\"%s\",\"threads\":%ld,"
	    "\"keys\":%" PRIu64 ",\"seconds\":%.3f,\"keys_per_s\":%.1f}\n",
	    sb_backend_names[o->backend], o->backend == SB_SQLITE ? o->sync :
	    "lmdb", o->threads, done, secs, secs > 0 ? (double)done / secs : 0);
	return 0;
}

/* ------------------------------------------------------------- options */

static void
sb_usage(void)
{
	fprintf(stderr, "usage: store_bench lmdb -d DIR [-T SECONDS] [-n KEYS] "
	    "[-t THREADS]\n"
	    "       store_bench sqlite -d DIR [-s full|normal] [-T SECONDS] "
	    "[-n KEYS] [-t THREADS]\n"
	    "       store_bench fill -d DIR -n KEYS -S SCOPE -p PREFIX [-x] "
	    "[-f canonical|raw]\n"
	    "                        [-B BODY] [-R ANSWER] [-L LOCATION]\n"
	    "       store_bench payments -d DIR -n PAYMENTS -S SCOPE -o IDS "
	    "[-k KEYFILE]\n"
	    "                        [-t THREADS]\n");
	exit(2);
}

static int
sb_number(const char *s, double max, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno != 0 || end == s || *end != '\0' || *out < 0 ||
	    *out > max ? -1 : 0;
}

static void
sb_options_parse(int argc, char *argv[], struct sb_options *o)
{
	double v;
	int ch, b;

	memset(o, 0, sizeof(*o));
	o->sync = "FULL";
	o->scope = SB_SCOPE;
	o->body = SB_BODY;
	o->answer = SB_ANSWER;
	o->location = SB_LOCATION;
	o->threads = 1;
	o->seconds = 3;
	if (argc < 2)
		sb_usage();
	for (b = 0; b < SB_BACKEND__MAX; b++)
		if (strcmp(argv[1], sb_backend_names[b]) == 0)
			break;
	if (b == SB_BACKEND__MAX)
		sb_usage();
	o->backend = (enum sb_backend)b;
	optind = 2;
	while ((ch = getopt(argc, argv, "B:d:f:k:L:n:o:p:R:s:S:t:T:x")) !=
	    -1) {
		switch (ch) {
		case 'B': o->body = optarg; break;
		case 'd': o->dir = optarg; break;
		case 'f':
			if (fp_mode_parse(optarg, &o->fp_mode) != IDEM_OK)
				sb_usage();
			break;
		case 'k': o->secret_file = optarg; break;
		case 'L': o->location = optarg; break;
		case 'n':
			if (sb_number(optarg, 1e12, &v) != 0)
				sb_usage();
			o->keys = (uint64_t)v;
			break;
		case 'o': o->ids = optarg; break;
		case 'p': o->prefix = optarg; break;
		case 'R': o->answer = optarg; break;
		case 's':
			if (strcmp(optarg, "full") == 0)
				o->sync = "FULL";
			else if (strcmp(optarg, "normal") == 0)
				o->sync = "NORMAL";
			else
				sb_usage();
			break;
		case 'S': o->scope = optarg; break;
		case 't':
			if (sb_number(optarg, SB_MAX_THREADS, &v) != 0 ||
			    v < 1)
				sb_usage();
			o->threads = (long)v;
			break;
		case 'T':
			if (sb_number(optarg, 86400, &v) != 0)
				sb_usage();
			o->seconds = v;
			break;
		case 'x': o->expired = 1; break;
		default: sb_usage();
		}
	}
	if (optind != argc || o->dir == NULL)
		sb_usage();
	if (o->backend == SB_FILL) {
		if (o->keys == 0 || o->prefix == NULL)
			sb_usage();
		o->seconds = 0;
	}
	if (o->backend == SB_PAYMENTS) {
		if (o->keys == 0 || o->ids == NULL)
			sb_usage();
		o->seconds = 0;
	}
}

int
main(int argc, char *argv[])
{
	struct sb_options o;

	sb_options_parse(argc, argv, &o);
	if (crypto_init() != IDEM_OK) {
		fprintf(stderr, "store_bench: libsodium failed to start\n");
		return 1;
	}
	return sb_run(&o);
}
