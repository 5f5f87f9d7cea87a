/* SPDX-License-Identifier: MIT */
/*
 * store_pg.c: the PostgreSQL backend (store_pg.h): connections and
 * their pool, statements, transactions and their retries, the schema's
 * migrations, open and close.
 *
 * libpq connections are not thread-safe, so each process keeps a pool
 * of at most PG_POOL_MAX, opened when first needed (after fork: a
 * connection is never used by another process than its opener's), and a
 * thread holds one for one statement or one transaction; threads wait
 * for a free one, for the pool wait at most (IDEM_EBUSY past it).  A
 * connection found broken (the server restarted) is reset when next
 * taken; the call that met the break, and any made while the server is
 * away, fail with IDEM_EIO and write nothing, except a claim or a write
 * to an owned claim whose COMMIT's answer was lost, which reads its
 * record back on a new session to learn whether it committed
 * (pg_write_verified).  Every wait of a session is bounded (a connect
 * timeout, TCP keepalives, a statement and a lock timeout, a deadline
 * on COMMIT's answer), so that a stalled server fails calls, and does
 * not hold threads.
 *
 * A fresh claim, and a write to a claim the process holds, is one
 * transaction of one round trip: its statements (prepared once per
 * session) and a Sync in one pipeline, with no BEGIN nor COMMIT
 * (pg_send_tx).  Other writes begin with BEGIN in the pipeline of their
 * first statement and end with COMMIT.
 *
 * Writes run at READ COMMITTED with two-phase locking of what they
 * touch, so that they behave as if they ran one at a time, as under
 * LMDB's single writer: the record's row is locked (FOR UPDATE) before
 * anything is decided, and each application row a hook reads or writes
 * is locked by a transaction-scoped advisory lock on its (table, key)
 * before it is read, whether it exists or not, until the commit.
 * SERIALIZABLE would give the same guarantee, but its predicate locks
 * on index pages abort most concurrent claims of neighbouring keys.  A
 * transaction PostgreSQL aborts anyway (a deadlock between hooks that
 * lock rows in different orders, a serialization failure) runs again,
 * up to PG_RETRIES times, so hooks may run more than once (store.h).
 *
 * Every session runs with synchronous_commit = on, whatever the server's
 * default: a commit is flushed to the write-ahead log before it returns,
 * so IDEM_OK means durable (doc/DESIGN.md, invariant 2); a COMMIT that
 * warns that its wait for synchronous replication was cancelled
 * committed only locally, and fails its write (invariant 11).  Commits of
 * concurrent requests share their flushes by PostgreSQL's own group
 * commit (commit_delay and commit_siblings, server settings).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "err.h"
#include "fault.h"
#include "metrics.h"
#include "store_pg.h"

/*
 * The schema's migrations, in order; migration i brings the schema to
 * version i + 1.  Never edit one that has shipped: add the next.
 *
 * Each says which programs run on the schema it leaves (compat: the
 * oldest schema version a program may have and still run on it; the
 * rule is in pg_schema_fits), and idemctl migrate records that beside
 * its version, so that a program can judge a newer database without
 * knowing the migrations that made it.  An expand migration leaves
 * compat as it was: it only adds what older programs do not see
 * (tables, nullable columns, indexes), and the newer program works with
 * what the older ones write.  A contract migration raises compat: it
 * removes or changes what programs below compat use, which must all be
 * gone before it runs (doc/DESIGN.md, "Rolling upgrade").  Migrations 1
 * to 4 are contract migrations to their own version: each added what a
 * program of the schema before would not keep (counts, generations) or
 * changed what it wrote (idem_quota's key), so the fleet stops for them.
 *
 * A migration runs in a transaction of its own with a lock timeout,
 * again after a pause when it timed out (pg_migrate_step); one that
 * names an index is a single CREATE INDEX CONCURRENTLY, which runs
 * outside a transaction and takes no lock that stops writers.
 */
struct pg_migration {
	enum { PG_EXPAND, PG_CONTRACT } kind;
	int compat;
	const char *index;      /* built concurrently: its name, else NULL */
	const char *sql;
};

static const struct pg_migration pg_migrations[PG_SCHEMA_VERSION] = {
	/* 1: records with their indexes, application rows */
	{ PG_CONTRACT, 1, NULL,
	"CREATE TABLE idem_keys ("
	"  scope bytea NOT NULL,"
	"  key bytea NOT NULL,"
	"  rec bytea NOT NULL,"
	"  purge_at bigint,"
	"  PRIMARY KEY (scope, key));"
	"CREATE INDEX idem_keys_expiry ON idem_keys (purge_at)"
	"  WHERE purge_at IS NOT NULL;"
	"CREATE INDEX idem_keys_pending ON idem_keys (scope, key)"
	"  WHERE purge_at IS NULL;"
	"CREATE TABLE idem_rows ("
	"  tbl text NOT NULL,"
	"  k bytea NOT NULL,"
	"  v bytea NOT NULL,"
	"  PRIMARY KEY (tbl, k));" },
	/*
	 * 2: the count of each scope's records (the per-scope bound) and of
	 * each table's rows, kept by the writes, from what is there now
	 */
	{ PG_CONTRACT, 2, NULL,
	"CREATE TABLE idem_quota ("
	"  scope bytea PRIMARY KEY,"
	"  n bigint NOT NULL);"
	"INSERT INTO idem_quota (scope, n)"
	"  SELECT scope, count(*) FROM idem_keys GROUP BY scope;"
	"CREATE TABLE idem_counts ("
	"  tbl text NOT NULL,"
	"  slot integer NOT NULL,"
	"  n bigint NOT NULL,"
	"  PRIMARY KEY (tbl, slot));"
	"INSERT INTO idem_counts (tbl, slot, n)"
	"  SELECT tbl, 0, count(*) FROM idem_rows GROUP BY tbl;" },
	/*
	 * 3: each scope's count spread over slots, as the tables' counts
	 * are, so that one scope's claims do not queue on one row
	 */
	{ PG_CONTRACT, 3, NULL,
	"ALTER TABLE idem_quota ADD COLUMN slot integer NOT NULL DEFAULT 0;"
	"ALTER TABLE idem_quota ALTER COLUMN slot DROP DEFAULT;"
	"ALTER TABLE idem_quota DROP CONSTRAINT idem_quota_pkey;"
	"ALTER TABLE idem_quota ADD PRIMARY KEY (scope, slot);" },
	/*
	 * 4: each key's generation, which outlives its records: how many of
	 * its lifetimes have ended (store.h)
	 */
	{ PG_CONTRACT, 4, NULL,
	"CREATE TABLE idem_gens ("
	"  scope bytea NOT NULL,"
	"  key bytea NOT NULL,"
	"  gen bigint NOT NULL,"
	"  PRIMARY KEY (scope, key));" },
	/*
	 * 5: each slot's allowance of its scope's bound (a) and the bound
	 * it was granted under (b), so that a claim far from the bound
	 * reads its own slot, not the sum (store_pg_ops.c, pg_quota_claim).
	 * An expand migration: columns with a constant default, which a
	 * program of schema 4 does not name, and whose 0 a newer program
	 * reads as no allowance.
	 */
	{ PG_EXPAND, PG_SCHEMA_COMPAT, NULL,
	"ALTER TABLE idem_quota ADD COLUMN a bigint DEFAULT 0,"
	"  ADD COLUMN b bigint DEFAULT 0;" }
};

/*
 * The sessions of idemctl migrate and of the tests' wipe: a connect
 * timeout, and no statement timeout, since a migration may rewrite a
 * large table; each migration sets its own lock timeout
 * (pg_migrate_step).
 */
static const struct pglimits pg_tool_limits = { PG_CONNECT_TIMEOUT_S, 0, 0,
    0 };

/* Any number, the same in every process: serialises migrations. */
#define PG_MIGRATE_LOCK "7137801"

static int pg_schema_check(struct pgstore *s, struct pgconn *pc, int opened);

struct pgstore *
pgstore_of(struct store *s)
{
	return (struct pgstore *)s;
}

int
store_pg_uri(const char *where)
{
	return where != NULL && (strncmp(where, "postgresql://", 13) == 0 ||
	    strncmp(where, "postgres://", 11) == 0);
}

void
pg_arg_bytes(struct pgargs *a, const void *p, size_t n)
{
	a->v[a->n] = n > 0 ? p : "";
	a->len[a->n] = (int)n;
	a->fmt[a->n] = 1;
	a->n++;
}

void
pg_arg_u64(struct pgargs *a, uint64_t x)
{
	snprintf(a->num[a->n], sizeof(a->num[a->n]), "%llu",
	    (unsigned long long)(x > INT64_MAX ? INT64_MAX : x));
	a->v[a->n] = a->num[a->n];
	a->len[a->n] = 0;
	a->fmt[a->n] = 0;
	a->n++;
}

void
pg_arg_null(struct pgargs *a)
{
	a->v[a->n] = NULL;
	a->len[a->n] = 0;
	a->fmt[a->n] = 0;
	a->n++;
}

void
pg_arg_str(struct pgargs *a, const char *str)
{
	a->v[a->n] = str;
	a->len[a->n] = 0;
	a->fmt[a->n] = 0;
	a->n++;
}

uint64_t
pg_get_u64(const PGresult *r, int row, int col)
{
	const uint8_t *p = (const uint8_t *)PQgetvalue(r, row, col);
	int len = PQgetlength(r, row, col);
	uint64_t x = 0;
	int i;

	for (i = 0; i < len; i++)
		x = x << 8 | p[i];
	return x;
}

void
pg_cost(struct pgconn *pc, unsigned stmts, unsigned trips)
{
	if (pc->s != NULL) {
		__atomic_fetch_add(&pc->s->stmts, stmts, __ATOMIC_RELAXED);
		__atomic_fetch_add(&pc->s->trips, trips, __ATOMIC_RELAXED);
	}
	metrics_add(METRIC_STORE_STATEMENTS, stmts);
	metrics_add(METRIC_STORE_ROUND_TRIPS, trips);
}

/*
 * A write transaction's BEGIN and its first statement in one round trip
 * (libpq's pipeline mode; the Sync that ends the pipeline does not end
 * a transaction that BEGIN opened): the statement's result, or NULL.
 * A session whose pipeline failed or could not be left is marked
 * broken, and the pool opens a new one in its place.
 */
static PGresult *
pg_exec_begin(struct pgconn *pc, const char *sql,
    const struct pgargs *a)
{
	PGconn *c = pc->c;
	PGresult *r, *out = NULL;
	struct pgwait w;
	int i, ok = 1;

	if (PQenterPipelineMode(c) != 1) {
		pc->broken = 1;
		return NULL;
	}
	pg_wait_init(&w, pc->s != NULL ? pc->s->lim.statement_ms : 0);
	/* store_pg_pipeline:fail leaves the results unread, as a lost read would. */
	if (PQsendQueryParams(c, "BEGIN", 0, NULL, NULL, NULL, NULL, 1) ==
	    1 && PQsendQueryParams(c, sql, a->n, NULL, a->v, a->len, a->fmt,
	    1) == 1 && PQpipelineSync(c) == 1 &&
	    !fault_point("store_pg_pipeline")) {
		/* Each statement's results end with NULL; then the Sync. */
		for (i = 0; i < 2 && ok; i++)
			while ((ok = pg_wait_result(c, &w, &r) == 0) &&
			    r != NULL) {
				if (i == 1 && out == NULL)
					out = r;
				else
					PQclear(r);
			}
		if (ok && pg_wait_result(c, &w, &r) == 0)
			PQclear(r);
		else
			ok = 0;
	}
	/* An answer that did not come leaves the pipeline: the session goes. */
	if (!ok || w.cancelled || PQexitPipelineMode(c) != 1) {
		PQclear(out);
		out = NULL;
	}
	if (out == NULL)
		pc->broken = 1;
	return out;
}

/*
 * The error of a statement that failed with SQLSTATE state (NULL: one
 * of libpq's own, such as a lost connection).  A lock or statement
 * timeout (55P03, 57014) is IDEM_EBUSY: nothing was written and a retry
 * may pass.  A connection exception (class 08) or an error without a
 * SQLSTATE marks the session broken.
 */
static int
pg_state_err(struct pgconn *pc, const char *state)
{
	if (state == NULL || strncmp(state, "08", 2) == 0) {
		pc->broken = 1;
		return IDEM_EIO;
	}
	if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0) {
		pc->retry = 1;
		return PG_RETRY;
	}
	if (strcmp(state, "23505") == 0)
		return IDEM_EEXIST;
	if (strcmp(state, "55P03") == 0 || strcmp(state, "57014") == 0)
		return IDEM_EBUSY;
	return IDEM_EIO;
}

int
pg_exec(struct pgconn *pc, const char *sql, struct pgargs *a,
    PGresult **res)
{
	static const struct pgargs none;
	const struct pgargs *p = a != NULL ? a : &none;
	PGresult *r;
	ExecStatusType st;
	struct pgwait w;
	int rc;

	*res = NULL;
	if (pc->broken)
		return IDEM_EIO;
	if (pc->begin) {
		pc->begin = 0;
		pg_cost(pc, 2, 1);
		r = pg_exec_begin(pc, sql, p);
	} else {
		pg_cost(pc, 1, 1);
		pg_wait_init(&w, pc->s != NULL ? pc->s->lim.statement_ms : 0);
		r = pg_exec_by(pc->c, sql, p, 1, &w);
		if (w.cancelled)
			pc->broken = 1;
	}
	/* No answer in time is a session lost, as a broken one is. */
	if (r == NULL || PQstatus(pc->c) != CONNECTION_OK)
		pc->broken = 1;
	if (r == NULL)
		return IDEM_EIO;
	st = PQresultStatus(r);
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		*res = r;
		return IDEM_OK;
	}
	rc = pg_state_err(pc, PQresultErrorField(r, PG_DIAG_SQLSTATE));
	PQclear(r);
	return rc;
}

int
pg_run(struct pgconn *pc, const char *sql, struct pgargs *a)
{
	PGresult *r;
	int rc;

	if ((rc = pg_exec(pc, sql, a, &r)) == IDEM_OK)
		PQclear(r);
	return rc;
}

/*
 * Opens a session with the settings every session of the store has.
 * The URI (dbname, expanded) comes last, so that what it sets overrides
 * the defaults before it: a connect timeout, and TCP keepalives with a
 * user timeout, which end a session whose server went silent (a peer
 * black-holed) in about 11 s where TCP alone waits for many minutes.
 * lim's statement and lock timeouts are set for the session (0: none).
 */
/*
 * libpq's reason for a failed connection (PQerrorMessage), on one line:
 * its line feeds (one message per address tried) become "; ".
 */
static void
pg_connect_reason(PGconn *c, char *err, size_t errlen)
{
	const char *m = c != NULL ? PQerrorMessage(c) : "out of memory";
	size_t i = 0;

	if (errlen == 0)
		return;
	for (; *m != '\0' && i + 3 < errlen; m++) {
		if (*m == '\n') {
			while (m[1] == ' ' || m[1] == '\t')
				m++;
			if (m[1] != '\0' && i > 0) {
				err[i++] = ';';
				err[i++] = ' ';
			}
		} else if (*m != '\r')
			err[i++] = *m;
	}
	err[i] = '\0';
}

static PGconn *
pg_connect(const char *conninfo, int read_only, const struct pglimits *lim,
    char *err, size_t errlen)
{
	const char *keys[] = { "connect_timeout", "keepalives",
	    "keepalives_idle", "keepalives_interval", "keepalives_count",
	    "tcp_user_timeout", "dbname", NULL };
	const char *vals[sizeof(keys) / sizeof(keys[0])];
	char connect[16], set[1024];
	struct pgwait w;
	PGconn *c;
	PGresult *r;

	snprintf(connect, sizeof(connect), "%u", lim->connect_s != 0 ?
	    lim->connect_s : PG_CONNECT_TIMEOUT_S);
	vals[0] = connect;
	vals[1] = "1";
	vals[2] = "5";
	vals[3] = "2";
	vals[4] = "3";
	vals[5] = "10000";
	vals[6] = conninfo;
	vals[7] = NULL;
	if ((c = PQconnectdbParams(keys, vals, 1)) == NULL) {
		pg_connect_reason(NULL, err, errlen);
		return NULL;
	}
	if (PQstatus(c) != CONNECTION_OK) {
		pg_connect_reason(c, err, errlen);
		PQfinish(c);
		return NULL;
	}
	/*
	 * The server's side of the session is bounded as well: a
	 * transaction left open by a host that went silent (a partition,
	 * a middlebox that stops forwarding while both sockets stay open)
	 * holds its locks (an account's gate) until
	 * idle_in_transaction_session_timeout ends it, as long as a
	 * statement may run; a client gone while a statement runs is found
	 * every second (client_connection_check_interval, PostgreSQL 14),
	 * and the server's TCP keepalives and user timeout end a session
	 * whose host vanished, as the host's do.  Settings an older server
	 * lacks are left out (pg_settings), not refused.
	 */
	snprintf(set, sizeof(set), "SET synchronous_commit TO on; "
	    "SET client_min_messages TO warning; "
	    "SET statement_timeout TO %u; SET lock_timeout TO %u; "
	    "SELECT set_config(name, v, false) FROM (VALUES "
	    "('idle_in_transaction_session_timeout', '%u'), "
	    "('client_connection_check_interval', '1000'), "
	    "('tcp_keepalives_idle', '5'), ('tcp_keepalives_interval', '2'), "
	    "('tcp_keepalives_count', '3'), ('tcp_user_timeout', '10000')) "
	    "AS t(name, v) WHERE name IN (SELECT name FROM pg_settings)%s",
	    lim->statement_ms, lim->lock_ms, lim->statement_ms, read_only ?
	    "; SET default_transaction_read_only TO on" : "");
	pg_wait_init(&w, PG_STATEMENT_TIMEOUT_MS);
	r = pg_exec_by(c, set, NULL, 0, &w);
	if (r == NULL || (PQresultStatus(r) != PGRES_COMMAND_OK &&
	    PQresultStatus(r) != PGRES_TUPLES_OK)) {
		pg_connect_reason(c, err, errlen);
		PQclear(r);
		PQfinish(c);
		return NULL;
	}
	PQclear(r);
	return c;
}

/*
 * Notices of the store's sessions: each goes to stderr, as libpq's own
 * receiver does, and a WARNING with SQLSTATE 01000 (a WARNING's default,
 * which syncrep.c's "canceling wait for synchronous replication due to
 * user request" has) or 57P01 ("canceling the wait for synchronous
 * replication and terminating connection") sets pc->warned.  Both say
 * that the transaction committed locally and may not be on any
 * standby.  The SQLSTATE decides, not the message, which the server's
 * lc_messages may translate; nothing else of the store's raises either
 * as a WARNING while it commits.
 */
static void
pg_notice(void *arg, const PGresult *r)
{
	struct pgconn *pc = arg;
	const char *sev = PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);
	const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);

	if (sev == NULL)
		sev = PQresultErrorField(r, PG_DIAG_SEVERITY);
	fprintf(stderr, "idem: postgresql: %s", PQresultErrorMessage(r));
	if (sev != NULL && strcmp(sev, "WARNING") == 0 && state != NULL &&
	    (strcmp(state, "01000") == 0 || strcmp(state, "57P01") == 0))
		pc->warned = 1;
}

/*
 * Opens pc's session, which its notices reach pg_notice on, if its
 * commits would wait for a synchronous standby (pg_sync_check: else
 * IDEM_EUNSAFE, and no session).
 */
static int
pg_session_open(struct pgstore *s, struct pgconn *pc)
{
	char why[512];
	int rc;

	pc->broken = 0;
	pc->begin = 0;
	pc->prepared = 0;
	pc->fresh = 1;
	memset(pc->granted, 0, sizeof(pc->granted));
	pc->clock_at = 0;
	pc->checked_at = 0;
	if ((pc->c = pg_connect(s->conninfo, s->read_only, &s->lim, why,
	    sizeof(why))) == NULL) {
		/* The log says why, in libpq's words; the caller, IDEM_EIO. */
		fprintf(stderr, "idem: postgresql: cannot connect: %s\n", why);
		return IDEM_EIO;
	}
	if ((rc = pg_sync_check(s, pc->c)) != IDEM_OK) {
		PQfinish(pc->c);
		pc->c = NULL;
		return rc;
	}
	PQsetNoticeReceiver(pc->c, pg_notice, pc);
	return IDEM_OK;
}

/*
 * The checks of a session's first use, and the periodic ones after it:
 * the schema (pg_schema_check) and, for a writer, the synchronous
 * standbys (pg_sync_recheck).  A session is fresh from pg_session_open
 * until they pass, wherever it was opened (pg_acquire, or pg_read_back
 * in a session's place), so that no statement runs on a new session
 * before its schema is known to fit.
 */
static int
pg_session_checks(struct pgstore *s, struct pgconn *pc)
{
	int rc;

	if ((rc = pg_schema_check(s, pc, pc->fresh)) != IDEM_OK ||
	    (rc = pg_sync_recheck(s, pc, pc->fresh)) != IDEM_OK)
		return rc;
	pc->fresh = 0;
	return IDEM_OK;
}

/* Closes pc's session, if it has one. */
static void
pg_session_close(struct pgconn *pc)
{
	if (pc->c != NULL)
		PQfinish(pc->c);
	pc->c = NULL;
}

/*
 * Whether an idle session is still up: whatever the server sent it while
 * idle (a shutdown's FATAL message, then the end of the stream) is read
 * without blocking, and libpq marks the session bad at the end.
 */
static int
pg_alive(PGconn *c)
{
	struct pollfd p;
	int i;

	p.fd = PQsocket(c);
	p.events = POLLIN;
	for (i = 0; i < 4 && PQstatus(c) == CONNECTION_OK; i++) {
		p.revents = 0;
		if (p.fd < 0 || poll(&p, 1, 0) != 1)
			break;
		if (!PQconsumeInput(c))
			return 0;
	}
	return PQstatus(c) == CONNECTION_OK;
}

/* A free session of the pool, or NULL (s->mu held). */
static struct pgconn *
pg_free(struct pgstore *s)
{
	size_t i;

	for (i = 0; i < PG_POOL_MAX; i++)
		if (!s->conns[i].busy)
			return &s->conns[i];
	return NULL;
}

int
pg_acquire(struct pgstore *s, struct pgconn **out)
{
	struct pgconn *pc;
	struct timespec until;
	int rc;

	*out = NULL;
	/* A connection opened by a parent process is never ours to use. */
	if (getpid() != s->pid)
		return IDEM_EIO;
	/*
	 * A thread waits for a session for the pool wait at most: past it
	 * the server is slower than the requests coming (each session held
	 * that long is a statement or a lock wait within its own bounds),
	 * and a 503 with Retry-After serves the client better than a
	 * queue that holds every thread of the process.
	 */
	store_deadline(&until, (uint64_t)s->lim.pool_wait_ms * 1000);
	pthread_mutex_lock(&s->mu);
	while ((pc = pg_free(s)) == NULL)
		if (pthread_cond_timedwait(&s->cv, &s->mu, &until) ==
		    ETIMEDOUT && (pc = pg_free(s)) == NULL) {
			pthread_mutex_unlock(&s->mu);
			return IDEM_EBUSY;
		}
	pc->busy = 1;
	pthread_mutex_unlock(&s->mu);
	/*
	 * A server that went away (a restart) has closed the socket, which
	 * reading what is pending finds without a round trip: start a new
	 * session now rather than fail the call.
	 */
	if (pc->c != NULL && (pc->broken || !pg_alive(pc->c)))
		pg_session_close(pc);
	pc->broken = 0;
	pc->begin = 0;
	if (pc->c == NULL && (rc = pg_session_open(s, pc)) != IDEM_OK) {
		pg_release(s, pc);
		return rc;
	}
	if ((rc = pg_session_checks(s, pc)) != IDEM_OK) {
		pg_release(s, pc);
		return rc;
	}
	*out = pc;
	return IDEM_OK;
}

void
pg_release(struct pgstore *s, struct pgconn *pc)
{
	pthread_mutex_lock(&s->mu);
	pc->busy = 0;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/*
 * Ends a write transaction with ROLLBACK: nothing to send when no
 * statement took its BEGIN to the server.
 */
static void
pg_rollback(struct pgconn *pc)
{
	if (pc->begin) {
		pc->begin = 0;
		return;
	}
	(void)pg_run(pc, "ROLLBACK", NULL);
}

uint64_t
pg_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
pg_check_due(uint64_t *due_ms, uint64_t now, unsigned period_ms, int force)
{
	if (!force && now < *due_ms)
		return 0;
	*due_ms = now + period_ms;
	return 1;
}

/*
 * Sends COMMIT and reads its answer: IDEM_OK when the transaction is
 * durable; PG_RETRY when it failed to serialize; PG_LOST when the answer
 * did not come (the session broke: the transaction may have committed
 * or not); IDEM_EIO when it did not commit, or committed only locally
 * (a WARNING that the wait for synchronous replication was cancelled,
 * pg_notice: a failover may lose it, so it is not a success).
 *
 * The statement timeout does not cover a COMMIT's wait for synchronous
 * replication (the server ends it before it commits), so a stalled
 * standby would hold the session for as long as it stalls: past the
 * statement timeout the COMMIT is cancelled (store_pg_io.c), which ends
 * the wait with that WARNING, and the write fails.  A session whose
 * server does not answer even the cancel within PG_CANCEL_GRACE_MS is
 * given up: PG_LOST.
 */
static int
pg_commit(struct pgstore *s, struct pgconn *pc)
{
	PGresult *r, *last = NULL;
	struct pgwait w;
	int rc;

	if (pc->begin) {
		pc->begin = 0;
		return IDEM_OK;
	}
	pc->warned = 0;
	pg_cost(pc, 1, 1);
	if (PQsendQueryParams(pc->c, "COMMIT", 0, NULL, NULL, NULL, NULL,
	    1) != 1) {
		pc->broken = 1;
		return PG_LOST;
	}
	pg_wait_init(&w, s->lim.statement_ms);
	for (;;) {
		if (pg_wait_result(pc->c, &w, &r) != 0) {
			PQclear(last);
			pc->broken = 1;
			return pc->warned ? IDEM_EIO : PG_LOST;
		}
		if (r == NULL)
			break;
		PQclear(last);
		last = r;
	}
	if (last == NULL || w.cancelled || PQstatus(pc->c) != CONNECTION_OK)
		pc->broken = 1;
	if (last != NULL && PQresultStatus(last) == PGRES_COMMAND_OK)
		rc = IDEM_OK;
	else if (last != NULL)
		rc = pg_state_err(pc, PQresultErrorField(last,
		    PG_DIAG_SQLSTATE));
	else
		rc = IDEM_EIO;
	PQclear(last);
	/*
	 * A committed write that was not replicated is no success, nor is
	 * one that may have been: a warning decides before a lost answer.
	 */
	if (pc->warned) {
		fprintf(stderr, "idem: a COMMIT's wait for synchronous "
		    "replication was cancelled: the write fails\n");
		return IDEM_EIO;
	}
	if (rc != IDEM_OK && rc != PG_RETRY && pc->broken)
		return PG_LOST;
	return rc == IDEM_OK || rc == PG_RETRY ? rc : IDEM_EIO;
}

#ifdef IDEM_FAULT_POINTS
/*
 * The fault points of a write's COMMIT on a session that is then lost:
 * store_pg_commit_unsent closes the session before COMMIT is sent (the
 * server rolls the transaction back); store_pg_commit_lost sends it,
 * waits up to 10 s for the answer to arrive and closes the session
 * without reading it (the server has committed).  PG_LOST when one of
 * them fired, else 0.
 */
static int
pg_commit_fault(struct pgconn *pc)
{
	struct pollfd p;

	if (fault_point("store_pg_commit_unsent")) {
		PQfinish(pc->c);
	} else if (fault_point("store_pg_commit_lost")) {
		if (PQsendQuery(pc->c, "COMMIT") == 1 && PQflush(pc->c) == 0) {
			p.fd = PQsocket(pc->c);
			p.events = POLLIN;
			(void)poll(&p, 1, 10000);
		}
		PQfinish(pc->c);
	} else
		return 0;
	pc->c = NULL;
	pc->broken = 1;
	return PG_LOST;
}
#else
#define pg_commit_fault(pc) 0
#endif

void
pg_tx_again(struct pgconn *pc)
{
	pc->ended = 0;
	pc->begin = 1;
}

/*
 * Ends a pipeline whose Sync was never sent: the session is closed, so
 * that the server rolls back what it ran of it.
 */
static int
pg_send_unsent(struct pgconn *pc)
{
	PQfinish(pc->c);
	pc->c = NULL;
	pc->broken = 1;
	return IDEM_EIO;
}

#ifdef IDEM_FAULT_POINTS
/* store_pg_commit_lost in a pipeline: the answer comes, and is not read. */
static int
pg_send_lost(struct pgconn *pc)
{
	struct pollfd p;

	if (!fault_point("store_pg_commit_lost"))
		return 0;
	p.fd = PQsocket(pc->c);
	p.events = POLLIN;
	(void)poll(&p, 1, 10000);
	PQfinish(pc->c);
	pc->c = NULL;
	pc->broken = 1;
	return 1;
}
#else
#define pg_send_lost(pc) 0
#endif

/* What each command of a pipeline was. */
enum pg_sent {
	PG_SENT_PREPARE,
	PG_SENT_EXEC
};

/*
 * Reads a pipeline's results up to its Sync's, waiting for ms (then
 * cancelling the transaction, as pg_commit does, and giving it
 * PG_CANCEL_GRACE_MS more: store_pg_io.c): 0, with *last the last statement's result and
 * state the first error's SQLSTATE ("" none, "?" one without); -1 when
 * the answer did not come.  A statement that was not prepared after all
 * loses its bit of pc->prepared.
 */
static int
pg_send_read(struct pgconn *pc, const enum pg_sent *kind, const unsigned *id,
    int sent, unsigned ms, PGresult **last, char state[6])
{
	struct pgwait w;
	PGresult *r;
	ExecStatusType st;
	const char *e;
	int idx = 0;

	state[0] = '\0';
	pg_wait_init(&w, ms);
	for (;;) {
		if (pg_wait_result(pc->c, &w, &r) != 0)
			return -1;
		if (w.cancelled)
			pc->broken = 1;
		if (r == NULL) {
			/* Each command's results end with NULL. */
			if (++idx > sent + 1)
				return -1;
			continue;
		}
		st = PQresultStatus(r);
		if (st == PGRES_PIPELINE_SYNC) {
			PQclear(r);
			return 0;
		}
		if (idx < sent && kind[idx] == PG_SENT_PREPARE &&
		    st != PGRES_COMMAND_OK)
			pc->prepared &= ~(1u << id[idx]);
		if (st == PGRES_FATAL_ERROR && state[0] == '\0') {
			e = PQresultErrorField(r, PG_DIAG_SQLSTATE);
			snprintf(state, 6, "%s", e != NULL ? e : "?");
		}
		if (idx == sent - 1 && kind[idx] == PG_SENT_EXEC &&
		    (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)) {
			PQclear(*last);
			*last = r;
		} else
			PQclear(r);
	}
}

int
pg_send_tx(struct pgstore *s, struct pgconn *pc, const struct pgstmt *st,
    int n, PGresult **last)
{
	unsigned ms = s->lim.statement_ms != 0 ? s->lim.statement_ms :
	    PG_STATEMENT_TIMEOUT_MS;
	enum pg_sent kind[2 * 8];
	unsigned id[2 * 8];
	char name[16], state[6];
	PGconn *c = pc->c;
	int i, sent = 0, rc;

	*last = NULL;
	pc->begin = 0;
	pc->ended = 1;
	if (pc->broken || n > 8)
		return IDEM_EIO;
	/* As pg_write's commit does: the write does not go through. */
	if (fault_point("batch_commit"))
		return IDEM_EIO;
	pc->warned = 0;
	if (PQenterPipelineMode(c) != 1) {
		pc->broken = 1;
		return IDEM_EIO;
	}
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "idem_%u", st[i].id);
		if (!(pc->prepared & 1u << st[i].id)) {
			if (PQsendPrepare(c, name, st[i].sql, st[i].a->n,
			    NULL) != 1)
				return pg_send_unsent(pc);
			pc->prepared |= 1u << st[i].id;
			kind[sent] = PG_SENT_PREPARE;
			id[sent++] = st[i].id;
		}
		if (PQsendQueryPrepared(c, name, st[i].a->n, st[i].a->v,
		    st[i].a->len, st[i].a->fmt, 1) != 1)
			return pg_send_unsent(pc);
		kind[sent] = PG_SENT_EXEC;
		id[sent++] = st[i].id;
	}
	/*
	 * store_pg_pipeline and store_pg_commit_unsent: the session is
	 * lost before the Sync that would commit.
	 */
	if (fault_point("store_pg_pipeline") ||
	    fault_point("store_pg_commit_unsent"))
		return pg_send_unsent(pc);
	pg_cost(pc, (unsigned)n, 1);
	/* A Sync that may have gone out in part: what it did is unknown. */
	if (PQpipelineSync(c) != 1) {
		pc->broken = 1;
		return PG_LOST;
	}
	if (pg_send_lost(pc))
		return PG_LOST;
	if (pg_send_read(pc, kind, id, sent, ms, last, state) != 0) {
		PQclear(*last);
		*last = NULL;
		pc->broken = 1;
		return pc->warned ? IDEM_EIO : PG_LOST;
	}
	if (PQexitPipelineMode(c) != 1 || PQstatus(c) != CONNECTION_OK)
		pc->broken = 1;
	if (pc->warned) {
		fprintf(stderr, "idem: a COMMIT's wait for synchronous "
		    "replication was cancelled: the write fails\n");
		rc = IDEM_EIO;
	} else if (strcmp(state, "26000") == 0) {
		/*
		 * The server does not have a statement this session
		 * prepared (a pooler's other session, DISCARD ALL):
		 * prepare them all again, in the write's next run.
		 */
		pc->prepared = 0;
		pc->retry = 1;
		rc = PG_RETRY;
	} else if (state[0] != '\0')
		rc = pg_state_err(pc, strcmp(state, "?") != 0 ? state : NULL);
	else if (*last == NULL)
		rc = IDEM_EIO;
	else
		return IDEM_OK;
	PQclear(*last);
	*last = NULL;
	return rc;
}

int
pg_note_put(struct pgconn *pc, const char *scope, const char *key,
    const void *rec, size_t len)
{
	pc->noted = PG_NOTED_NONE;
	pc->note_skip = 0;
	buf_reset(&pc->note_rec);
	if (buf_append(&pc->note_rec, rec, len) != IDEM_OK)
		return IDEM_ENOMEM;
	pc->noted = PG_NOTED_PUT;
	pc->note_scope = scope;
	pc->note_key = key;
	return IDEM_OK;
}

void
pg_note_del(struct pgconn *pc, const char *scope, const char *key)
{
	pc->noted = PG_NOTED_DEL;
	pc->note_scope = scope;
	pc->note_key = key;
}

/* Whether rec is what pc noted it wrote, but for its note_skip bytes. */
static int
pg_note_same(const struct pgconn *pc, const void *rec, size_t len)
{
	const uint8_t *a = rec;
	const uint8_t *b = (const uint8_t *)pc->note_rec.data;
	size_t k = pc->note_skip;

	if (len != pc->note_rec.len)
		return 0;
	if (k == 0 || k + 8 > len)
		return memcmp(a, b, len) == 0;
	return memcmp(a, b, k) == 0 && memcmp(a + k + 8, b + k + 8,
	    len - k - 8) == 0;
}

/*
 * The outcome of a write whose COMMIT's answer was lost, read on a new
 * session in pc's place (the old one is gone): IDEM_OK when it
 * committed, else IDEM_EIO, also when that cannot be told.  See
 * pg_write_verified.  The read-back adds 0 to a row of its own (table
 * '', never an application table's name, in idem_counts) so that its
 * COMMIT writes and waits for the synchronous standbys as a write's
 * does: what it read is durable once that COMMIT is (the write it read
 * committed before it, earlier in the log).
 */
static int
pg_read_back(struct pgstore *s, struct pgconn *pc)
{
	struct pgargs a = { 0 };
	PGresult *res;
	int rc, found, same;

	pg_session_close(pc);
	if (pg_session_open(s, pc) != IDEM_OK ||
	    pg_session_checks(s, pc) != IDEM_OK)
		return IDEM_EIO;
	pg_arg_u64(&a, (uint64_t)PQbackendPID(pc->c) % PG_COUNT_SLOTS);
	pc->begin = 1;
	if (pg_run(pc, "INSERT INTO idem_counts AS c (tbl, slot, n) "
	    "VALUES ('', $1, 0) ON CONFLICT (tbl, slot) DO UPDATE SET "
	    "n = c.n", &a) != IDEM_OK)
		goto fail;
	rc = IDEM_OK;
	if (pc->noted != PG_NOTED_NONE) {
		memset(&a, 0, sizeof(a));
		pg_arg_bytes(&a, pc->note_scope, strlen(pc->note_scope));
		pg_arg_bytes(&a, pc->note_key, strlen(pc->note_key));
		if (pg_exec(pc, "SELECT rec FROM idem_keys WHERE scope = $1 "
		    "AND key = $2", &a, &res) != IDEM_OK)
			goto fail;
		found = PQntuples(res) == 1;
		same = found && pg_note_same(pc, PQgetvalue(res, 0, 0),
		    (size_t)PQgetlength(res, 0, 0));
		PQclear(res);
		if (pc->noted == PG_NOTED_PUT ? !same : found)
			rc = IDEM_EIO;
	}
	if (rc != IDEM_OK)
		goto fail;
	return pg_commit(s, pc) == IDEM_OK ? IDEM_OK : IDEM_EIO;
fail:
	pg_rollback(pc);
	return IDEM_EIO;
}

/* The host's clock: ms since the epoch. */
static uint64_t
pg_host_ms(const struct pgstore *s)
{
	struct timespec ts;

	if (s->host_clock != NULL)
		return s->host_clock();
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Measures how far the host's clock is from the server's, on a session
 * that has not yet or not for PG_CLOCK_CHECK_MS, outside a transaction:
 * the server's clock_timestamp() less the middle of the host's readings
 * before and after, which is off by half the round trip at most.  A
 * difference within PG_CLOCK_SLACK_MS and that half counts as none, so
 * that hosts whose clocks agree with the server's (NTP) keep their own
 * times to the millisecond, however slow the reading was.
 */
static int
pg_clock(struct pgstore *s, struct pgconn *pc)
{
	PGresult *res;
	uint64_t t0, t1, db;
	int64_t off, err;
	int rc;

	if (pc->clock_at != 0 && pg_mono_ms() - pc->clock_at <
	    PG_CLOCK_CHECK_MS)
		return IDEM_OK;
	t0 = pg_host_ms(s);
	if ((rc = pg_exec(pc, "SELECT (extract(epoch FROM clock_timestamp()) "
	    "* 1000)::bigint", NULL, &res)) != IDEM_OK)
		return rc;
	t1 = pg_host_ms(s);
	db = pg_get_u64(res, 0, 0);
	PQclear(res);
	off = (int64_t)db - (int64_t)(t0 + (t1 - t0) / 2);
	err = PG_CLOCK_SLACK_MS + (int64_t)(t1 - t0) / 2;
	pc->clock_off = off <= err && off >= -err ? 0 : off;
	pc->clock_at = pg_mono_ms();
	if (pc->clock_at == 0)
		pc->clock_at = 1;
	return IDEM_OK;
}

uint64_t
pg_now(const struct pgconn *pc, uint64_t now_ms)
{
	if (pc->clock_off < 0 && (uint64_t)-pc->clock_off > now_ms)
		return 0;
	return now_ms + (uint64_t)pc->clock_off;
}

/*
 * Runs fn in a write transaction of its own and commits it, again from
 * the start when it failed to serialize; verify: read the record back
 * when COMMIT's answer is lost (pg_write_verified).  The store's time
 * counters see each COMMIT (it returns once PostgreSQL has flushed it)
 * and the write's whole wait, a connection from the pool included;
 * syncs, commits and writes are LMDB's group commit's to count
 * (PostgreSQL flushes on its own, and a transaction here may have
 * written nothing).
 */
static int
pg_write_run(struct pgstore *s, pg_tx_fn fn, void *arg, int verify)
{
	struct pgconn *pc;
	uint64_t t0 = metrics_now_us(), c0;
	int rc, crc, commit, attempt;

	if (s->read_only)
		return IDEM_EROFS;
	if ((rc = pg_acquire(s, &pc)) != IDEM_OK)
		return rc;
	if ((rc = pg_clock(s, pc)) != IDEM_OK) {
		pg_release(s, pc);
		return rc == PG_RETRY ? IDEM_EIO : rc;
	}
	for (attempt = 0; attempt < PG_RETRIES; attempt++) {
		/*
		 * Set by any statement of the transaction that failed to
		 * serialize: the statements after it fail too (the
		 * transaction is aborted), and a hook may report any error.
		 */
		pc->retry = 0;
		pc->begin = 1;
		pc->noted = PG_NOTED_NONE;
		/*
		 * As the LMDB backend's writer does when it gets the lock:
		 * a failure there fails the write before it runs.
		 */
		if (fault_point("store_wait")) {
			pg_rollback(pc);
			rc = IDEM_EFULL;
			break;
		}
		pc->ended = 0;
		commit = 0;
		rc = fn(s, pc, arg, &commit);
		if (rc != IDEM_OK && pc->retry)
			rc = PG_RETRY;
		/* Its last transaction was a pipeline of its own, now over. */
		if (pc->ended) {
			if (rc == PG_RETRY)
				continue;
			if (rc == PG_LOST)
				rc = verify ? pg_read_back(s, pc) : IDEM_EIO;
			break;
		}
		if (rc == PG_RETRY || (rc != IDEM_OK && !commit)) {
			pg_rollback(pc);
			if (rc == PG_RETRY)
				continue;
			break;
		}
		/*
		 * As LMDB's group commit does before its commit; there a
		 * failure stands for a COMMIT that does not go through.
		 */
		c0 = metrics_now_us();
		if (fault_point("batch_commit")) {
			pg_rollback(pc);
			crc = IDEM_EIO;
		} else if (pc->begin || (crc = pg_commit_fault(pc)) == 0)
			crc = pg_commit(s, pc);
		metrics_add(METRIC_STORE_COMMIT_US, metrics_now_us() - c0);
		if (crc == PG_RETRY)
			continue;
		/*
		 * Only a write that returned IDEM_OK is worth reading back:
		 * any other result was a refusal or a failure already.
		 */
		if (crc == PG_LOST)
			crc = verify && rc == IDEM_OK ? pg_read_back(s, pc) :
			    IDEM_EIO;
		if (crc != IDEM_OK)
			rc = IDEM_EIO;
		break;
	}
	if (rc == PG_RETRY)
		rc = IDEM_EIO;
	pc->noted = PG_NOTED_NONE;
	pg_release(s, pc);
	metrics_add(METRIC_STORE_WAIT_US, metrics_now_us() - t0);
	return rc;
}

int
pg_write(struct pgstore *s, pg_tx_fn fn, void *arg)
{
	return pg_write_run(s, fn, arg, 0);
}

int
pg_write_verified(struct pgstore *s, pg_tx_fn fn, void *arg)
{
	return pg_write_run(s, fn, arg, 1);
}

int
pg_table_ok(const struct pgstore *s, const char *name)
{
	size_t i;

	if (name == NULL)
		return 0;
	for (i = 0; i < s->ntables; i++)
		if (strcmp(s->tables[i], name) == 0)
			return 1;
	return 0;
}

#ifdef IDEM_FAULT_POINTS
/*
 * Migrations for the tests of a rolling upgrade, after the real ones:
 * IDEM_TEST_PG_MIGRATION_n (n from 1) is version PG_SCHEMA_VERSION + n,
 * as "expand COMPAT SQL", "contract COMPAT SQL" or "index COMPAT NAME
 * SQL" (an expand migration that builds the index NAME concurrently).
 * Only idemctl migrate and the tests' store_pg_migrate read them; the
 * store's own version stays PG_SCHEMA_VERSION, so that a test plays an
 * older program on a database a newer one migrated.  Not in a
 * production build.
 */
#define PG_TEST_MIGRATIONS 4

static int
pg_test_migration(int n, struct pg_migration *m)
{
	static char names[PG_TEST_MIGRATIONS][64];
	char var[40], *end;
	const char *v;
	size_t len;

	snprintf(var, sizeof(var), "IDEM_TEST_PG_MIGRATION_%d", n);
	if (n > PG_TEST_MIGRATIONS || (v = getenv(var)) == NULL)
		return -1;
	memset(m, 0, sizeof(*m));
	if (strncmp(v, "expand ", 7) == 0 || strncmp(v, "index ", 6) == 0)
		m->kind = PG_EXPAND;
	else if (strncmp(v, "contract ", 9) == 0)
		m->kind = PG_CONTRACT;
	else
		return -1;
	m->compat = (int)strtol(strchr(v, ' ') + 1, &end, 10);
	if (*end != ' ')
		return -1;
	m->sql = end + 1;
	if (v[0] == 'i') {
		len = strcspn(m->sql, " ");
		if (len == 0 || len >= sizeof(names[0]) || m->sql[len] == '\0')
			return -1;
		memcpy(names[n - 1], m->sql, len);
		names[n - 1][len] = '\0';
		m->index = names[n - 1];
		m->sql += len + 1;
	}
	return 0;
}
#else
#define pg_test_migration(n, m) (-1)
#endif

/* Migration version (from 1) into *m: 0, or -1 when there is none. */
static int
pg_migration_at(int version, struct pg_migration *m)
{
	if (version < 1)
		return -1;
	if (version <= PG_SCHEMA_VERSION) {
		*m = pg_migrations[version - 1];
		return 0;
	}
	return pg_test_migration(version - PG_SCHEMA_VERSION, m);
}

/* The version the migrations this program has bring a database to. */
static int
pg_migration_last(void)
{
	struct pg_migration m;
	int v = PG_SCHEMA_VERSION;

	while (pg_migration_at(v + 1, &m) == 0)
		v++;
	return v;
}

/*
 * Whether a program of schema version P runs on a database of version v
 * whose recorded compat is compat: on its own version, and on a newer
 * one whose migrations since P were all expand migrations (compat at
 * most P).  Never on an older one, which lacks what it writes.
 */
static int
pg_schema_fits(long v, long compat, long p)
{
	return v == p || (v > p && compat <= p);
}

/*
 * The schema version of the database behind c into *v (0 for none) and
 * the oldest program version that runs on it into *compat (the version
 * itself when a program from before compat was recorded migrated it):
 * 0, or -1 with a message in err when they cannot be read.  The column
 * is read through to_jsonb, so that a database migrated before it
 * existed is read as well.
 */
static int
pg_schema_read(PGconn *c, long *v, long *compat, char *err, size_t errlen)
{
	PGresult *r;
	struct pgwait w;
	const char *state;
	int rc = -1;

	*v = *compat = 0;
	pg_wait_init(&w, PG_STATEMENT_TIMEOUT_MS);
	r = pg_exec_by(c, "SELECT version, coalesce((to_jsonb(s) ->> 'compat')"
	    "::integer, version) FROM idem_schema_version s "
	    "ORDER BY version DESC LIMIT 1", NULL, 0, &w);
	if (r == NULL) {
		snprintf(err, errlen, "%s", PQerrorMessage(c));
		return -1;
	}
	state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	if (PQresultStatus(r) == PGRES_TUPLES_OK) {
		if (PQntuples(r) == 1) {
			*v = strtol(PQgetvalue(r, 0, 0), NULL, 10);
			*compat = strtol(PQgetvalue(r, 0, 1), NULL, 10);
		}
		rc = 0;
	} else if (state != NULL && strcmp(state, "42P01") == 0)
		rc = 0;
	else
		snprintf(err, errlen, "%s", PQresultErrorMessage(r));
	PQclear(r);
	return rc;
}

/*
 * Why a program of schema version p does not run on a database of
 * version v and compat compat, in buf: the message the backend logs
 * and idemctl migrate prints.
 */
static void
pg_schema_why(long v, long compat, long p, char *buf, size_t len)
{
	if (v < p)
		snprintf(buf, len, "the PostgreSQL store has schema version "
		    "%ld, this program needs %ld: run idemctl migrate", v, p);
	else
		snprintf(buf, len, "the PostgreSQL store has schema version "
		    "%ld, newer than this program's %ld, and only programs of "
		    "schema %ld to %ld run on it: run the program that "
		    "migrated it", v, p, compat, v);
}

/*
 * The schema check of a running program, on pc's session: when it was
 * just opened (opened set), when PG_SCHEMA_CHECK_MS have passed since
 * the last check, and, with fault points, whenever
 * store_pg_schema_due:fail says so.  IDEM_OK when the database's
 * version runs this program (pg_schema_fits), else IDEM_EIO, as every
 * call gets until a check finds it fits again: a program never writes
 * to a schema past its range.  Each change of the version seen is
 * logged once, with both versions.  One thread checks when the time
 * comes; the others go on with what the last check found.
 */
static int
pg_schema_check(struct pgstore *s, struct pgconn *pc, int opened)
{
	char why[256];
	uint64_t now = pg_mono_ms();
	long v, compat;
	int due, bad, fits;

	due = opened || fault_point("store_pg_schema_due");
	pthread_mutex_lock(&s->mu);
	due = pg_check_due(&s->schema_due_ms, now, PG_SCHEMA_CHECK_MS, due);
	bad = s->schema_bad;
	pthread_mutex_unlock(&s->mu);
	if (!due)
		return bad ? IDEM_EIO : IDEM_OK;
	if (pg_schema_read(pc->c, &v, &compat, why, sizeof(why)) != 0) {
		/* Lost, or still running a read whose answer did not come. */
		if (PQstatus(pc->c) != CONNECTION_OK ||
		    PQtransactionStatus(pc->c) != PQTRANS_IDLE)
			pc->broken = 1;
		else
			fprintf(stderr, "idem: cannot read the PostgreSQL "
			    "store's schema version: %s", why);
		pthread_mutex_lock(&s->mu);
		s->schema_due_ms = 0;
		pthread_mutex_unlock(&s->mu);
		return IDEM_EIO;
	}
	fits = pg_schema_fits(v, compat, PG_SCHEMA_VERSION);
	pthread_mutex_lock(&s->mu);
	if (v != s->schema_v || compat != s->schema_compat) {
		if (!fits)
			pg_schema_why(v, compat, PG_SCHEMA_VERSION, why,
			    sizeof(why));
		else if (v != PG_SCHEMA_VERSION)
			snprintf(why, sizeof(why), "the PostgreSQL store has "
			    "schema version %ld, newer than this program's %d, "
			    "and programs of schema %ld to %ld run on it", v,
			    PG_SCHEMA_VERSION, compat, v);
		else
			snprintf(why, sizeof(why), "the PostgreSQL store has "
			    "schema version %ld again, this program's own", v);
		fprintf(stderr, "idem: %s\n", why);
		s->schema_v = v;
		s->schema_compat = compat;
	}
	s->schema_bad = !fits;
	pthread_mutex_unlock(&s->mu);
	return fits ? IDEM_OK : IDEM_EIO;
}

/*
 * Runs sql on a tool's session: 0; 1 when it waited for a lock past the
 * lock timeout (SQLSTATE 55P03: nothing done, try again); -1 on any
 * other failure, with the server's message in err.
 */
static int
pg_exec_tool(PGconn *c, const char *sql, char *err, size_t errlen)
{
	PGresult *r = PQexec(c, sql);
	const char *state;
	int rc = 0;

	if (r == NULL || (PQresultStatus(r) != PGRES_COMMAND_OK &&
	    PQresultStatus(r) != PGRES_TUPLES_OK)) {
		state = r != NULL ? PQresultErrorField(r, PG_DIAG_SQLSTATE) :
		    NULL;
		rc = state != NULL && strcmp(state, "55P03") == 0 ? 1 : -1;
		snprintf(err, errlen, "%s", r != NULL ?
		    PQresultErrorMessage(r) : PQerrorMessage(c));
	}
	PQclear(r);
	return rc;
}

static int
pg_exec_plain(PGconn *c, const char *sql, char *err, size_t errlen)
{
	return pg_exec_tool(c, sql, err, errlen) == 0 ? 0 : -1;
}

/*
 * One transaction of a migration: sql, then, for version > 0, the
 * version's row with its compat, all under a lock timeout of
 * PG_MIGRATE_LOCK_MS.  The result of pg_exec_tool; nothing committed
 * unless 0.
 */
static int
pg_migrate_tx(PGconn *c, const char *sql, int version, int compat,
    char *err, size_t errlen)
{
	char row[160];
	int rc;

	snprintf(row, sizeof(row), "INSERT INTO idem_schema_version "
	    "(version, compat) VALUES (%d, %d)", version, compat);
	if ((rc = pg_exec_tool(c, "BEGIN; SET LOCAL lock_timeout TO "
	    PG_STR(PG_MIGRATE_LOCK_MS), err, errlen)) != 0 ||
	    (rc = pg_exec_tool(c, sql, err, errlen)) != 0 ||
	    (version > 0 && (rc = pg_exec_tool(c, row, err, errlen)) != 0) ||
	    (rc = pg_exec_tool(c, "COMMIT", err, errlen)) != 0)
		(void)pg_exec_tool(c, "ROLLBACK", row, sizeof(row));
	return rc;
}

/*
 * A migration that builds one index concurrently: CREATE INDEX
 * CONCURRENTLY takes a lock that lets writers go on, but runs outside a
 * transaction, and one that fails (a lock timeout, a unique index over
 * duplicates, a session lost) leaves its index INVALID, which IF NOT
 * EXISTS would then take for built: such an index is dropped (also
 * concurrently) before the build, and the version is recorded only once
 * the index is valid.  The result of pg_exec_tool.
 */
static int
pg_migrate_index(PGconn *c, const struct pg_migration *m, int version,
    char *err, size_t errlen)
{
	char q[256];
	PGresult *r;
	int rc, valid = -1;

	snprintf(q, sizeof(q), "SELECT indisvalid FROM pg_index WHERE "
	    "indexrelid = to_regclass('%s')", m->index);
	if ((r = PQexec(c, q)) != NULL && PQresultStatus(r) ==
	    PGRES_TUPLES_OK && PQntuples(r) == 1)
		valid = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	if ((rc = pg_exec_tool(c, "SET lock_timeout TO "
	    PG_STR(PG_MIGRATE_LOCK_MS), err, errlen)) != 0)
		return rc;
	snprintf(q, sizeof(q), "DROP INDEX CONCURRENTLY IF EXISTS %s",
	    m->index);
	if ((valid != 0 || (rc = pg_exec_tool(c, q, err, errlen)) == 0) &&
	    (rc = pg_exec_tool(c, m->sql, err, errlen)) == 0) {
		snprintf(q, sizeof(q), "SELECT 1 FROM pg_index WHERE "
		    "indexrelid = to_regclass('%s') AND indisvalid",
		    m->index);
		r = PQexec(c, q);
		if (r == NULL || PQresultStatus(r) != PGRES_TUPLES_OK ||
		    PQntuples(r) != 1) {
			snprintf(err, errlen, "the index %s is not valid",
			    m->index);
			rc = -1;
		}
		PQclear(r);
	}
	(void)pg_exec_tool(c, "SET lock_timeout TO 0", q, sizeof(q));
	if (rc == 0)
		rc = pg_migrate_tx(c, "SELECT 1", version, m->compat, err,
		    errlen);
	return rc;
}

/*
 * Runs one step (sql in a transaction, or an index migration when m has
 * an index), again after PG_MIGRATE_PAUSE_MS each time it timed out
 * waiting for a lock, PG_MIGRATE_TRIES times at most: 0, or -1 with a
 * message in err.  The lock timeout keeps the writers that queue behind
 * a waiting ALTER TABLE from waiting longer than it, far less than
 * their own lock timeout; the pause lets them through.
 */
static int
pg_migrate_step(PGconn *c, const char *sql, const struct pg_migration *m,
    int version, char *err, size_t errlen)
{
	struct timespec pause = { PG_MIGRATE_PAUSE_MS / 1000,
	    (PG_MIGRATE_PAUSE_MS % 1000) * 1000000L };
	int rc, i;

	for (i = 1; ; i++) {
		rc = m != NULL && m->index != NULL ?
		    pg_migrate_index(c, m, version, err, errlen) :
		    pg_migrate_tx(c, sql, version, m != NULL ? m->compat : 0,
		    err, errlen);
		if (rc != 1)
			break;
		if (i == PG_MIGRATE_TRIES) {
			snprintf(err, errlen, "migration %d waited for its "
			    "locks %d times for %d ms and gave up: a "
			    "transaction holds them (pg_locks)", version, i,
			    PG_MIGRATE_LOCK_MS);
			return -1;
		}
		(void)nanosleep(&pause, NULL);
	}
	return rc == 0 ? 0 : -1;
}

/*
 * Whether migration version's kind and compat agree with the compat
 * before it: an expand migration keeps it, a contract migration raises
 * it no further than its own version.
 */
static int
pg_migration_ok(const struct pg_migration *m, int version, int before)
{
	return m->kind == PG_EXPAND ? m->compat == before :
	    m->compat > before && m->compat <= version;
}

/*
 * idem_schema_version, and its compat column, for a database made
 * before there was one (the ALTER takes its lock for an instant, under
 * the lock timeout).
 */
static int
pg_migrate_table(PGconn *c, char *err, size_t errlen)
{
	PGresult *r;
	int has;

	if (pg_exec_plain(c, "CREATE TABLE IF NOT EXISTS idem_schema_version ("
	    " version integer PRIMARY KEY,"
	    " applied_at timestamptz NOT NULL DEFAULT now(),"
	    " compat integer)", err, errlen) != 0)
		return -1;
	r = PQexec(c, "SELECT 1 FROM pg_attribute WHERE attrelid = "
	    "'idem_schema_version'::regclass AND attname = 'compat' AND "
	    "NOT attisdropped");
	has = r != NULL && PQresultStatus(r) == PGRES_TUPLES_OK &&
	    PQntuples(r) == 1;
	PQclear(r);
	return has ? 0 : pg_migrate_step(c, "ALTER TABLE idem_schema_version "
	    "ADD COLUMN IF NOT EXISTS compat integer", NULL, 0, err, errlen);
}

int
store_pg_migrate(const char *conninfo, int *from, int *to, char *err,
    size_t errlen)
{
	int compat;

	return store_pg_migrate_to(conninfo, 0, from, to, &compat, err,
	    errlen);
}

int
store_pg_migrate_to(const char *conninfo, int target, int *from, int *to,
    int *compat_out, char *err, size_t errlen)
{
	char why[512];
	struct pg_migration m;
	PGconn *c;
	long v, compat;
	int i, mine = pg_migration_last(), last, rc = -1;

	*from = *to = *compat_out = 0;
	if (target > mine) {
		snprintf(err, errlen, "this program's migrations go to version "
		    "%d, not %d", mine, target);
		return -1;
	}
	last = target > 0 ? target : mine;
	if ((c = pg_connect(conninfo, 0, &pg_tool_limits, why,
	    sizeof(why))) == NULL) {
		snprintf(err, errlen, "cannot connect: %s", why);
		return -1;
	}
	/* Held by the session to its end: one migrator at a time. */
	if (pg_exec_plain(c, "SELECT pg_advisory_lock(" PG_MIGRATE_LOCK ")",
	    err, errlen) != 0)
		goto out;
	if (pg_schema_read(c, &v, &compat, err, errlen) != 0)
		goto out;
	*from = *to = (int)v;
	*compat_out = (int)compat;
	if (v > mine && compat > mine) {
		snprintf(err, errlen, "the database has schema version %ld, "
		    "newer than this program's %d, and only programs of "
		    "schema %ld to %ld run on it", v, mine, compat, v);
		goto out;
	}
	if (pg_migrate_table(c, err, errlen) != 0)
		goto out;
	/* Newer, or at the target: nothing to do (never down). */
	if (v >= last) {
		rc = 0;
		goto out;
	}
	for (i = (int)v + 1; i <= last; i++) {
		if (pg_migration_at(i, &m) != 0 ||
		    !pg_migration_ok(&m, i, (int)compat)) {
			snprintf(err, errlen, "migration %d is not a valid "
			    "expand or contract migration", i);
			goto out;
		}
		if (pg_migrate_step(c, m.sql, &m, i, err, errlen) != 0)
			goto out;
		*to = i;
		*compat_out = m.compat;
		compat = m.compat;
	}
	rc = 0;
out:
	PQfinish(c);
	return rc;
}

int
store_pg_wipe(const char *conninfo)
{
	char err[256];
	PGconn *c;
	int rc;

	if ((c = pg_connect(conninfo, 0, &pg_tool_limits, NULL, 0)) == NULL)
		return IDEM_EIO;
	rc = pg_exec_plain(c, "TRUNCATE idem_keys, idem_rows, idem_quota, "
	    "idem_counts, idem_gens", err, sizeof(err)) == 0 ? IDEM_OK : IDEM_EIO;
	PQfinish(c);
	return rc;
}

static void pg_close(struct store *base);

static int
pg_open(const struct store_config *cfg, struct store **out)
{
	struct pgstore *s;
	struct pgconn *pc;
	size_t i;
	int rc;

	*out = NULL;
	if (!store_pg_uri(cfg->dir))
		return IDEM_EINVAL;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return IDEM_ENOMEM;
	if ((s->conninfo = strdup(cfg->dir)) == NULL) {
		free(s);
		return IDEM_ENOMEM;
	}
	s->base.ops = &store_pg_ops;
	for (i = 0; i < PG_POOL_MAX; i++)
		s->conns[i].s = s;
	s->read_only = cfg->read_only;
	s->max_keys = cfg->max_keys_per_scope;
	s->pid = getpid();
	if ((rc = pg_sync_mode(&s->repl)) != IDEM_OK) {
		free(s->conninfo);
		free(s);
		return rc;
	}
	for (i = 0; cfg->tables != NULL && cfg->tables[i] != NULL; i++)
		snprintf(s->tables[i], sizeof(s->tables[i]), "%s",
		    cfg->tables[i]);
	s->ntables = i;
	s->lim.connect_s = cfg->pg_connect_timeout_s != 0 ?
	    cfg->pg_connect_timeout_s : PG_CONNECT_TIMEOUT_S;
	s->lim.statement_ms = cfg->pg_statement_timeout_ms != 0 ?
	    cfg->pg_statement_timeout_ms : PG_STATEMENT_TIMEOUT_MS;
	s->lim.lock_ms = cfg->pg_lock_timeout_ms != 0 ?
	    cfg->pg_lock_timeout_ms : PG_LOCK_TIMEOUT_MS;
	s->lim.pool_wait_ms = cfg->pg_pool_wait_ms != 0 ?
	    cfg->pg_pool_wait_ms : PG_POOL_WAIT_MS;
	/* The pool's wait is bounded by a clock no one can set back. */
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->owned_mu, NULL);
	store_cond_init(&s->cv);
	/*
	 * The first connection checks the schema (pg_schema_check, as
	 * every new session does), and stays in the pool.  Never run on a
	 * schema this program does not know to be compatible: an older one
	 * lacks what it writes, and one past its range may have lost what
	 * it uses (a downgrade is not a migration).  What the check found
	 * last starts as what this program's own migrations record, so that
	 * only a schema other than that is logged.
	 */
	s->schema_v = PG_SCHEMA_VERSION;
	s->schema_compat = PG_SCHEMA_COMPAT;
	if ((rc = pg_acquire(s, &pc)) != IDEM_OK) {
		if (!s->schema_bad && rc != IDEM_EUNSAFE)
			fprintf(stderr, "idem: cannot connect to the "
			    "PostgreSQL store\n");
		pg_close(&s->base);
		return rc;
	}
	pg_release(s, pc);
	*out = &s->base;
	return IDEM_OK;
}

static void
pg_close(struct store *base)
{
	struct pgstore *s = pgstore_of(base);
	size_t i;

	/* A child's copy closes nothing: the sessions are its parent's. */
	if (getpid() == s->pid)
		for (i = 0; i < PG_POOL_MAX; i++)
			if (s->conns[i].c != NULL)
				PQfinish(s->conns[i].c);
	for (i = 0; i < PG_POOL_MAX; i++)
		buf_free(&s->conns[i].note_rec);
	pg_owned_free(s);
	pthread_mutex_destroy(&s->owned_mu);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s->conninfo);
	free(s);
}

const struct store_ops store_pg_ops = {
	.name = "postgresql",
	.open = pg_open,
	.close = pg_close,
	.lookup = pg_lookup,
	.claim = pg_claim,
	.checkpoint = pg_checkpoint,
	.complete = pg_complete,
	.release = pg_release_claim,
	.abandon = pg_abandon,
	.purge = pg_purge,
	.get = pg_get,
	.insert_once = pg_insert_once,
	.scan = pg_scan,
	.each = pg_each,
	.each_pending = pg_each_pending,
	.count = pg_count,
	.tx_get = pg_tx_get,
	.tx_put = pg_tx_put,
	.tx_del = pg_tx_del,
	.reseal = pg_reseal,
};
