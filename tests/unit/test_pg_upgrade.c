/* SPDX-License-Identifier: MIT */
/*
 * test_pg_upgrade.c: a rolling upgrade of the PostgreSQL store, on the
 * database IDEM_TEST_PG names (tests/lib/pg.py; without it, no test).
 *
 * The store opened here is a program of schema version P
 * (PG_SCHEMA_VERSION).  A newer release is played by writing the rows
 * its idemctl migrate records in idem_schema_version (its version and
 * compat) or, with fault points, by migrations of its own that
 * store_pg_migrate runs (IDEM_TEST_PG_MIGRATION_n, store_pg.c).  What is
 * shown: a running program goes on serving through an expand migration
 * and a new one opens on it; after a contract past its range the
 * running program fails closed at its next session or check, saying
 * both versions, and none opens; an index built concurrently that
 * failed is built again; a migration waiting for a lock does not hold
 * the writers queued behind it past their own lock timeout; migrate
 * stops at a version when told (the expand step of a release that
 * carries a contract too).
 *
 * Each test leaves idem_schema_version as it found it.
 */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
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
#define P PG_SCHEMA_VERSION
/* The compat an expand migration after P keeps. */
#define C PG_SCHEMA_COMPAT

static const char *const tables[] = { "payments", NULL };
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
open_store(int fresh)
{
	struct store_config cfg = { NULL, 0, 0, 0, 0, tables, NULL,
	    0, 0, 0, 0 };
	struct store *s = NULL;

	cfg.dir = harness_store(NULL, fresh);
	if (store_open(&cfg, &s) != IDEM_OK)
		return NULL;
	return s;
}

/*
 * Runs q on the test's database: the first column of the first row as a
 * number, 0 for a command, -1 on failure.
 */
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
	else if (PQresultStatus(r) == PGRES_COMMAND_OK ||
	    PQresultStatus(r) == PGRES_TUPLES_OK)
		v = 0;
	else
		fprintf(stderr, "  %s: %s", q, PQresultErrorMessage(r));
	PQclear(r);
	PQfinish(c);
	return v;
}

/* sql with a printf format. */
static long long
sqlf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static long long
sqlf(const char *fmt, ...)
{
	char q[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	return sql(q);
}

/* A claim of (acct, key) with token byte t: its decision, or -error. */
static int
claim(struct store *s, const char *key, int t)
{
	struct store_claim c;
	uint8_t tok[REC_TOKEN_SIZE];
	int rc;

	memset(tok, t, sizeof(tok));
	if ((rc = store_claim(s, "acct", key, fp_a, tok, T0, LEASE, TTL, NULL,
	    &c)) != IDEM_OK)
		return -rc;
	rec_free(&c.rec);
	return (int)c.decision;
}

/* Claims and completes (acct, key): IDEM_OK or the first error. */
static int
pay(struct store *s, const char *key)
{
	struct rec_response resp;
	uint8_t tok[REC_TOKEN_SIZE];
	int rc;

	if ((rc = claim(s, key, 7)) != ENGINE_CLAIM)
		return rc < 0 ? -rc : IDEM_EIO;
	memset(&resp, 0, sizeof(resp));
	resp.status = 201;
	memset(tok, 7, sizeof(tok));
	return store_complete(s, "acct", key, tok, &resp, NULL, NULL, T0, TTL);
}

/*
 * Whether process pid has exited (gone, or a zombie): its sockets are
 * closed then.  The test's server runs on this host.
 */
static int
proc_gone(long pid)
{
	char path[64];
	FILE *f;
	int c, st = 0;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return 1;
	/* "pid (comm) S ...": the state follows the last ')'. */
	while ((c = fgetc(f)) != EOF)
		if (c == ')')
			st = 0;
		else if (st == 0 && c != ' ')
			st = c;
	fclose(f);
	return st == 'Z' || st == 'X';
}

/*
 * Ends every other session of the test's database, as a failover or a
 * server restart does, and waits (a bounded poll, 10 s) until they are
 * gone: out of pg_stat_activity and their processes exited, so that
 * their sockets are closed (a backend leaves pg_stat_activity before it
 * exits) and the store's next call opens a session of its own.
 */
static void
end_sessions(void)
{
	PGconn *c = PQconnectdb(getenv("IDEM_TEST_PG"));
	PGresult *r;
	long pids[64];
	int i, j, n = 0, left;

	/* The sessions ended, by pid, in one statement. */
	CU_ASSERT_FATAL(PQstatus(c) == CONNECTION_OK);
	r = PQexec(c, "SELECT pid, pg_terminate_backend(pid) FROM "
	    "pg_stat_activity WHERE datname = current_database() AND "
	    "pid <> pg_backend_pid()");
	CU_ASSERT(PQresultStatus(r) == PGRES_TUPLES_OK);
	for (i = 0; i < PQntuples(r) && n < 64; i++)
		pids[n++] = strtol(PQgetvalue(r, i, 0), NULL, 10);
	PQclear(r);
	PQfinish(c);
	for (i = 0; i < 1000; i++) {
		for (j = 0, left = 0; j < n; j++)
			left += !proc_gone(pids[j]);
		if (left == 0 && sql("SELECT count(*) FROM pg_stat_activity "
		    "WHERE datname = current_database() AND "
		    "pid <> pg_backend_pid()") == 0)
			return;
		usleep(10000);
	}
	CU_FAIL("the store's sessions did not end");
}

/* stderr into a file, so that a test can read what was logged. */
struct capture {
	FILE *f;
	int saved;
	char text[4096];
};

static void
capture_begin(struct capture *c)
{
	fflush(stderr);
	c->text[0] = '\0';
	c->f = tmpfile();
	c->saved = dup(2);
	if (c->f != NULL)
		dup2(fileno(c->f), 2);
}

/* Ends the capture; c->text holds what was written (and is echoed). */
static void
capture_end(struct capture *c)
{
	size_t n = 0;

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	if (c->f != NULL) {
		rewind(c->f);
		n = fread(c->text, 1, sizeof(c->text) - 1, c->f);
		fclose(c->f);
	}
	c->text[n] = '\0';
	fputs(c->text, stderr);
}

/* How many times needle is in text. */
static int
count_of(const char *text, const char *needle)
{
	const char *p;
	int n = 0;

	for (p = text; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

/* The refusal a program of schema P logs for version v, compat compat. */
static void
refusal(char *buf, size_t len, int v, int compat)
{
	snprintf(buf, len, "the PostgreSQL store has schema version %d, "
	    "newer than this program's %d, and only programs of schema %d to "
	    "%d run on it", v, P, compat, v);
}

/*
 * A newer release's expand (version P + 1, compat P, recorded as its
 * idemctl migrate does): the running program goes on, on its pooled
 * session and on a new one, and a program of schema P opens on it.  The
 * contract after it (P + 2, compat P + 1): the running program's next
 * session fails its calls with IDEM_EIO and logs both versions once; a
 * new one does not open.
 */
static void
test_session_recheck(void)
{
	struct store *s = open_store(1), *t;
	struct capture cap;
	char want[256];

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	HARNESS_EQ(pay(s, "before"), IDEM_OK);
	HARNESS_EQ(sqlf("INSERT INTO idem_schema_version (version, compat) "
	    "VALUES (%d, %d)", P + 1, P), 0);
	HARNESS_EQ(pay(s, "pooled"), IDEM_OK);
	end_sessions();
	HARNESS_EQ(pay(s, "expanded"), IDEM_OK);
	t = open_store(0);
	CU_ASSERT_PTR_NOT_NULL(t);
	if (t != NULL) {
		HARNESS_EQ(claim(t, "expanded", 7), ENGINE_REPLAY);
		store_close(t);
	}

	HARNESS_EQ(sqlf("INSERT INTO idem_schema_version (version, compat) "
	    "VALUES (%d, %d)", P + 2, P + 1), 0);
	end_sessions();
	capture_begin(&cap);
	HARNESS_EQ(claim(s, "contracted", 7), -IDEM_EIO);
	HARNESS_EQ(claim(s, "before", 7), -IDEM_EIO);
	t = open_store(0);
	capture_end(&cap);
	CU_ASSERT_PTR_NULL(t);
	if (t != NULL)
		store_close(t);
	refusal(want, sizeof(want), P + 2, P + 1);
	/* Logged once by the running program, once by the one refused. */
	HARNESS_EQ(count_of(cap.text, want), 2);
	HARNESS_EQ(sqlf("SELECT count(*) FROM idem_keys WHERE key = "
	    "'contracted'"), 0);

	HARNESS_EQ(sqlf("DELETE FROM idem_schema_version WHERE version > %d",
	    P), 0);
	store_close(s);
}

#ifdef IDEM_FAULT_POINTS
/*
 * Expand, deploy, contract with migrations of a newer release run by
 * store_pg_migrate (idemctl migrate): an expand that adds a column
 * (P + 1) and one that indexes it concurrently (P + 2), each recorded
 * with compat C, as P's own; a program of schema P keeps serving through both, its
 * periodic check (store_pg_schema_due) finding them compatible, and a
 * new one opens.  The contract that drops the column (P + 3, compat
 * P + 2) makes the running program's next check fail closed.
 */
static void
test_expand_contract(void)
{
	struct store *s = open_store(1), *t;
	struct capture cap;
	char err[256], want[256], m[256];
	int from, to;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	HARNESS_EQ(pay(s, "before"), IDEM_OK);
	snprintf(m, sizeof(m), "expand %d ALTER TABLE idem_keys ADD COLUMN "
	    "test_note text", C);
	setenv("IDEM_TEST_PG_MIGRATION_1", m, 1);
	snprintf(m, sizeof(m), "index %d idem_test_note CREATE INDEX "
	    "CONCURRENTLY IF NOT EXISTS idem_test_note ON idem_keys "
	    "(test_note)", C);
	setenv("IDEM_TEST_PG_MIGRATION_2", m, 1);
	HARNESS_EQ(store_pg_migrate(getenv("IDEM_TEST_PG"), &from, &to, err,
	    sizeof(err)), 0);
	HARNESS_EQ(from, P);
	HARNESS_EQ(to, P + 2);
	HARNESS_EQ(sqlf("SELECT count(*) FROM idem_schema_version WHERE "
	    "version > %d AND compat = %d", P, C), 2);
	HARNESS_EQ(sql("SELECT count(*) FROM pg_index WHERE indexrelid = "
	    "to_regclass('idem_test_note') AND indisvalid"), 1);

	setenv("IDEM_FAULT", "store_pg_schema_due:fail", 1);
	HARNESS_EQ(pay(s, "expanded"), IDEM_OK);
	HARNESS_EQ(claim(s, "before", 7), ENGINE_REPLAY);
	unsetenv("IDEM_FAULT");
	t = open_store(0);
	CU_ASSERT_PTR_NOT_NULL(t);
	if (t != NULL) {
		HARNESS_EQ(pay(t, "new host"), IDEM_OK);
		store_close(t);
	}

	snprintf(m, sizeof(m), "contract %d ALTER TABLE idem_keys DROP COLUMN "
	    "test_note", P + 2);
	setenv("IDEM_TEST_PG_MIGRATION_3", m, 1);
	HARNESS_EQ(store_pg_migrate(getenv("IDEM_TEST_PG"), &from, &to, err,
	    sizeof(err)), 0);
	HARNESS_EQ(from, P + 2);
	HARNESS_EQ(to, P + 3);
	capture_begin(&cap);
	setenv("IDEM_FAULT", "store_pg_schema_due:fail", 1);
	HARNESS_EQ(claim(s, "contracted", 7), -IDEM_EIO);
	unsetenv("IDEM_FAULT");
	HARNESS_EQ(claim(s, "before", 7), -IDEM_EIO);
	capture_end(&cap);
	refusal(want, sizeof(want), P + 3, P + 2);
	HARNESS_EQ(count_of(cap.text, want), 1);
	CU_ASSERT_PTR_NULL(open_store(0));

	/* idemctl migrate of schema P + 1 runs on P + 3 no more. */
	unsetenv("IDEM_TEST_PG_MIGRATION_2");
	unsetenv("IDEM_TEST_PG_MIGRATION_3");
	CU_ASSERT_EQUAL(store_pg_migrate(getenv("IDEM_TEST_PG"), &from, &to,
	    err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "newer than this program's"));
	unsetenv("IDEM_TEST_PG_MIGRATION_1");

	HARNESS_EQ(sqlf("DELETE FROM idem_schema_version WHERE version > %d",
	    P), 0);
	store_close(s);
}

/*
 * An index built concurrently whose build failed (a unique index over
 * two equal values) is left INVALID, and the version is not recorded;
 * once the duplicate is gone, migrate again drops it and builds it
 * valid.  IF NOT EXISTS alone would take the invalid index for built.
 */
static void
test_invalid_index(void)
{
	struct store *s = open_store(1);
	char err[256], m[256];
	int from, to;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	store_close(s);
	HARNESS_EQ(sql("INSERT INTO idem_rows (tbl, k, v) VALUES "
	    "('payments', 'a', 'same'), ('payments', 'b', 'same')"), 0);
	snprintf(m, sizeof(m), "index %d idem_test_v CREATE UNIQUE INDEX "
	    "CONCURRENTLY IF NOT EXISTS idem_test_v ON idem_rows (v)", C);
	setenv("IDEM_TEST_PG_MIGRATION_1", m, 1);
	HARNESS_EQ(store_pg_migrate(getenv("IDEM_TEST_PG"), &from, &to, err,
	    sizeof(err)), -1);
	HARNESS_EQ(to, P);
	HARNESS_EQ(sql("SELECT count(*) FROM pg_index WHERE indexrelid = "
	    "to_regclass('idem_test_v') AND NOT indisvalid"), 1);
	HARNESS_EQ(sql("SELECT max(version) FROM idem_schema_version"), P);

	HARNESS_EQ(sql("DELETE FROM idem_rows WHERE k = 'b'"), 0);
	HARNESS_EQ(store_pg_migrate(getenv("IDEM_TEST_PG"), &from, &to, err,
	    sizeof(err)), 0);
	HARNESS_EQ(to, P + 1);
	HARNESS_EQ(sql("SELECT count(*) FROM pg_index WHERE indexrelid = "
	    "to_regclass('idem_test_v') AND indisvalid"), 1);
	unsetenv("IDEM_TEST_PG_MIGRATION_1");

	HARNESS_EQ(sql("DROP INDEX idem_test_v"), 0);
	HARNESS_EQ(sqlf("DELETE FROM idem_schema_version WHERE version > %d",
	    P), 0);
}

/*
 * A release that carries an expand (P + 1) and a contract (P + 2):
 * store_pg_migrate_to stops at the expand (idemctl migrate --to), the
 * running program of schema P goes on, and the rest waits for the
 * contract step; never down, never past the program's migrations.
 */
static void
test_migrate_to(void)
{
	struct store *s = open_store(1);
	const char *uri = getenv("IDEM_TEST_PG");
	char err[256], m[256];
	int from, to, compat;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	snprintf(m, sizeof(m), "expand %d CREATE TABLE idem_test_t (x int)", C);
	setenv("IDEM_TEST_PG_MIGRATION_1", m, 1);
	snprintf(m, sizeof(m), "contract %d DROP TABLE idem_test_t", P + 1);
	setenv("IDEM_TEST_PG_MIGRATION_2", m, 1);
	HARNESS_EQ(store_pg_migrate_to(uri, P + 3, &from, &to, &compat, err,
	    sizeof(err)), -1);
	HARNESS_EQ(sql("SELECT max(version) FROM idem_schema_version"), P);
	HARNESS_EQ(store_pg_migrate_to(uri, P + 1, &from, &to, &compat, err,
	    sizeof(err)), 0);
	HARNESS_EQ(from, P);
	HARNESS_EQ(to, P + 1);
	HARNESS_EQ(compat, C);
	setenv("IDEM_FAULT", "store_pg_schema_due:fail", 1);
	HARNESS_EQ(pay(s, "expanded"), IDEM_OK);
	unsetenv("IDEM_FAULT");
	HARNESS_EQ(store_pg_migrate_to(uri, 0, &from, &to, &compat, err,
	    sizeof(err)), 0);
	HARNESS_EQ(from, P + 1);
	HARNESS_EQ(to, P + 2);
	HARNESS_EQ(compat, P + 1);
	HARNESS_EQ(store_pg_migrate_to(uri, P + 1, &from, &to, &compat, err,
	    sizeof(err)), 0);
	HARNESS_EQ(to, P + 2);
	HARNESS_EQ(sql("SELECT count(*) FROM pg_class WHERE relname = "
	    "'idem_test_t'"), 0);
	unsetenv("IDEM_TEST_PG_MIGRATION_1");
	unsetenv("IDEM_TEST_PG_MIGRATION_2");

	HARNESS_EQ(sqlf("DELETE FROM idem_schema_version WHERE version > %d",
	    P), 0);
	store_close(s);
}

struct migrator {
	pthread_t tid;
	int rc, to;
	char err[256];
};

static void *
migrate_main(void *arg)
{
	struct migrator *m = arg;
	int from;

	m->rc = store_pg_migrate(getenv("IDEM_TEST_PG"), &from, &m->to,
	    m->err, sizeof(m->err));
	return NULL;
}

/*
 * A migration's ALTER TABLE waits for a transaction that reads
 * idem_keys; the claims that queue behind its lock request wait only as
 * long as it does (PG_MIGRATE_LOCK_MS), not until that transaction
 * ends, and so commit within their own lock timeout.  Once the reader
 * ends, the migration, trying again, goes through.  Without the
 * migration's lock timeout every claim fails with IDEM_EBUSY.
 */
static void
test_migrate_lock_wait(void)
{
	struct store *s = open_store(1);
	struct migrator mg;
	char m[256], key[16];
	PGconn *c;
	PGresult *r;
	int i, waiting = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	HARNESS_EQ(pay(s, "before"), IDEM_OK);
	c = PQconnectdb(getenv("IDEM_TEST_PG"));
	CU_ASSERT_FATAL(PQstatus(c) == CONNECTION_OK);
	r = PQexec(c, "BEGIN; SELECT count(*) FROM idem_keys");
	CU_ASSERT(PQresultStatus(r) == PGRES_TUPLES_OK);
	PQclear(r);
	snprintf(m, sizeof(m), "expand %d ALTER TABLE idem_keys ADD COLUMN "
	    "test_note text", C);
	setenv("IDEM_TEST_PG_MIGRATION_1", m, 1);
	memset(&mg, 0, sizeof(mg));
	CU_ASSERT_FATAL(pthread_create(&mg.tid, NULL, migrate_main, &mg) == 0);
	for (i = 0; i < 2; i++) {
		/* Each claim goes in while the ALTER waits for its lock. */
		while (sql("SELECT count(*) FROM pg_locks WHERE relation = "
		    "'idem_keys'::regclass AND mode = 'AccessExclusiveLock' "
		    "AND NOT granted") != 1 && waiting++ < 3000)
			usleep(1000);
		snprintf(key, sizeof(key), "during%d", i);
		HARNESS_EQ(pay(s, key), IDEM_OK);
	}
	CU_ASSERT(waiting < 3000);
	r = PQexec(c, "COMMIT");
	PQclear(r);
	PQfinish(c);
	pthread_join(mg.tid, NULL);
	unsetenv("IDEM_TEST_PG_MIGRATION_1");
	if (mg.rc != 0)
		fprintf(stderr, "  migrate: %s\n", mg.err);
	HARNESS_EQ(mg.rc, 0);
	HARNESS_EQ(mg.to, P + 1);
	HARNESS_EQ(sql("SELECT count(*) FROM idem_keys WHERE "
	    "convert_from(key, 'UTF8') LIKE 'during%'"), 2);

	HARNESS_EQ(sql("ALTER TABLE idem_keys DROP COLUMN test_note"), 0);
	HARNESS_EQ(sqlf("DELETE FROM idem_schema_version WHERE version > %d",
	    P), 0);
	store_close(s);
}

/*
 * A session opened to read back a write whose COMMIT's answer was lost
 * is a new session like any other: it checks the schema before it reads
 * or writes, and the store's calls after it run only on a schema that
 * fits.  Here a contract (P + 2, compat P + 1) lands while the program's
 * session is between checks; its claim commits on that session, the
 * answer is lost (store_pg_commit_lost), and the read-back's session
 * finds the contract: the claim fails with IDEM_EIO, as its outcome
 * cannot be read on a schema this program does not run on, and so does
 * the next call, logged once.
 */
static void
test_read_back_rechecks(void)
{
	struct store *s = open_store(1);
	struct capture cap;
	char want[256];

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	HARNESS_EQ(pay(s, "before"), IDEM_OK);
	HARNESS_EQ(sqlf("INSERT INTO idem_schema_version (version, compat) "
	    "VALUES (%d, %d)", P + 2, P + 1), 0);
	capture_begin(&cap);
	setenv("IDEM_FAULT", "store_pg_commit_lost:fail", 1);
	HARNESS_EQ(claim(s, "lost", 7), -IDEM_EIO);
	unsetenv("IDEM_FAULT");
	HARNESS_EQ(claim(s, "before", 7), -IDEM_EIO);
	HARNESS_EQ(claim(s, "after", 7), -IDEM_EIO);
	capture_end(&cap);
	refusal(want, sizeof(want), P + 2, P + 1);
	HARNESS_EQ(count_of(cap.text, want), 1);
	HARNESS_EQ(sqlf("SELECT count(*) FROM idem_keys WHERE key = "
	    "'after'"), 0);
	HARNESS_EQ(sqlf("DELETE FROM idem_schema_version WHERE version > %d",
	    P), 0);
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
		{ "a new session rechecks the schema: expand, then contract",
		    test_session_recheck },
#ifdef IDEM_FAULT_POINTS
		{ "expand, deploy, contract with migrations run",
		    test_expand_contract },
		{ "an index whose concurrent build failed is built again",
		    test_invalid_index },
		{ "a migration waiting for a lock holds no writer long",
		    test_migrate_lock_wait },
		{ "migrate up to a version: the expand step alone",
		    test_migrate_to },
		{ "a read-back's new session checks the schema too",
		    test_read_back_rechecks },
#endif
	};
	CU_pSuite s;
	size_t i;

	if (!harness_pg())
		return 0;
	if ((s = CU_add_suite("pg_upgrade", suite_init, NULL)) == NULL)
		return -1;
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL)
			return -1;
	return 0;
}
