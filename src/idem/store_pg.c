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
 */
static const char *const pg_migrations[PG_SCHEMA_VERSION] = {
	/* 1: records with their indexes, application rows */
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
	"  PRIMARY KEY (tbl, k));",
	/*
	 * 2: the count of each scope's records (the per-scope bound) and of
	 * each table's rows, kept by the writes, from what is there now
	 */
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
	"  SELECT tbl, 0, count(*) FROM idem_rows GROUP BY tbl;",
	/*
	 * 3: each scope's count spread over slots, as the tables' counts
	 * are, so that one scope's claims do not queue on one row
	 */
	"ALTER TABLE idem_quota ADD COLUMN slot integer NOT NULL DEFAULT 0;"
	"ALTER TABLE idem_quota ALTER COLUMN slot DROP DEFAULT;"
	"ALTER TABLE idem_quota DROP CONSTRAINT idem_quota_pkey;"
	"ALTER TABLE idem_quota ADD PRIMARY KEY (scope, slot);",
	/*
	 * 4: each key's generation, which outlives its records: how many of
	 * its lifetimes have ended (store.h)
	 */
	"CREATE TABLE idem_gens ("
	"  scope bytea NOT NULL,"
	"  key bytea NOT NULL,"
	"  gen bigint NOT NULL,"
	"  PRIMARY KEY (scope, key));"
};

/*
 * The sessions of idemctl migrate and of the tests' wipe: a connect
 * timeout, and neither a statement nor a lock timeout, since a
 * migration may rewrite a large table and wait for running writers.
 */
static const struct pglimits pg_tool_limits = { PG_CONNECT_TIMEOUT_S, 0, 0,
    0 };

/* Any number, the same in every process: serialises migrations. */
#define PG_MIGRATE_LOCK "7137801"

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
	int i;

	if (PQenterPipelineMode(c) != 1) {
		pc->broken = 1;
		return NULL;
	}
	/* store_pg_pipeline:fail leaves the results unread, as a lost read would. */
	if (PQsendQueryParams(c, "BEGIN", 0, NULL, NULL, NULL, NULL, 1) ==
	    1 && PQsendQueryParams(c, sql, a->n, NULL, a->v, a->len, a->fmt,
	    1) == 1 && PQpipelineSync(c) == 1 &&
	    !fault_point("store_pg_pipeline")) {
		/* Each statement's results end with NULL; then the Sync. */
		for (i = 0; i < 2; i++)
			while ((r = PQgetResult(c)) != NULL) {
				if (i == 1 && out == NULL)
					out = r;
				else
					PQclear(r);
			}
		if ((r = PQgetResult(c)) != NULL)
			PQclear(r);
	}
	if (PQexitPipelineMode(c) != 1) {
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
		r = PQexecParams(pc->c, sql, p->n, NULL, p->v, p->len, p->fmt,
		    1);
	}
	if (r == NULL || PQstatus(pc->c) != CONNECTION_OK)
		pc->broken = 1;
	if (r == NULL)
		return pc->broken ? IDEM_EIO : IDEM_ENOMEM;
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
static PGconn *
pg_connect(const char *conninfo, int read_only, const struct pglimits *lim)
{
	const char *keys[] = { "connect_timeout", "keepalives",
	    "keepalives_idle", "keepalives_interval", "keepalives_count",
	    "tcp_user_timeout", "dbname", NULL };
	const char *vals[sizeof(keys) / sizeof(keys[0])];
	char connect[16], set[256];
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
	if ((c = PQconnectdbParams(keys, vals, 1)) == NULL)
		return NULL;
	if (PQstatus(c) != CONNECTION_OK) {
		PQfinish(c);
		return NULL;
	}
	snprintf(set, sizeof(set), "SET synchronous_commit TO on; "
	    "SET client_min_messages TO warning; "
	    "SET statement_timeout TO %u; SET lock_timeout TO %u%s",
	    lim->statement_ms, lim->lock_ms, read_only ?
	    "; SET default_transaction_read_only TO on" : "");
	r = PQexec(c, set);
	if (r == NULL || PQresultStatus(r) != PGRES_COMMAND_OK) {
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

/* Opens pc's session, which its notices reach pg_notice on. */
static int
pg_session_open(struct pgstore *s, struct pgconn *pc)
{
	pc->broken = 0;
	pc->begin = 0;
	pc->prepared = 0;
	pc->clock_at = 0;
	if ((pc->c = pg_connect(s->conninfo, s->read_only, &s->lim)) == NULL)
		return IDEM_EIO;
	PQsetNoticeReceiver(pc->c, pg_notice, pc);
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
	uint64_t ns;

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
	clock_gettime(CLOCK_MONOTONIC, &until);
	ns = (uint64_t)until.tv_nsec + (uint64_t)s->lim.pool_wait_ms * 1000000;
	until.tv_sec += (time_t)(ns / 1000000000);
	until.tv_nsec = (long)(ns % 1000000000);
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
	if (pc->c == NULL && pg_session_open(s, pc) != IDEM_OK) {
		pg_release(s, pc);
		return IDEM_EIO;
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

/*
 * Waits until pc's session has its answer, or until the deadline (ms
 * of CLOCK_MONOTONIC): 0 when the answer is there, -1 when the session
 * failed, 1 at the deadline.
 */
static int
pg_answer_wait(struct pgconn *pc, uint64_t deadline)
{
	struct pollfd p;
	struct timespec ts;
	uint64_t now;
	int n;

	p.fd = PQsocket(pc->c);
	p.events = POLLIN;
	while (PQisBusy(pc->c)) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec /
		    1000000;
		if (now >= deadline)
			return 1;
		p.revents = 0;
		n = poll(&p, 1, (int)(deadline - now));
		if (n == -1 && errno != EINTR)
			return -1;
		if (n == 1 && !PQconsumeInput(pc->c))
			return -1;
	}
	return 0;
}

/* Milliseconds of CLOCK_MONOTONIC from now. */
static uint64_t
pg_deadline(unsigned ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 +
	    ms;
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
 * statement timeout the COMMIT is cancelled, which ends the wait with
 * that WARNING, and the write fails.  A session whose server does not
 * answer even the cancel within as long again is given up: PG_LOST.
 */
static int
pg_commit(struct pgstore *s, struct pgconn *pc)
{
	unsigned ms = s->lim.statement_ms != 0 ? s->lim.statement_ms :
	    PG_STATEMENT_TIMEOUT_MS;
	PGresult *r, *last = NULL;
	PGcancel *cancel;
	char err[256];
	int w, rc;

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
	w = pg_answer_wait(pc, pg_deadline(ms));
	if (w == 1) {
		if ((cancel = PQgetCancel(pc->c)) != NULL) {
			(void)PQcancel(cancel, err, sizeof(err));
			PQfreeCancel(cancel);
		}
		w = pg_answer_wait(pc, pg_deadline(ms));
	}
	if (w != 0) {
		pc->broken = 1;
		return pc->warned ? IDEM_EIO : PG_LOST;
	}
	while ((r = PQgetResult(pc->c)) != NULL) {
		PQclear(last);
		last = r;
	}
	if (last == NULL || PQstatus(pc->c) != CONNECTION_OK)
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
 * Reads a pipeline's results up to its Sync's, waiting until deadline
 * (cancelling the transaction once, as pg_commit does, and as long
 * again after that): 0, with *last the last statement's result and
 * state the first error's SQLSTATE ("" none, "?" one without); -1 when
 * the answer did not come.  A statement that was not prepared after all
 * loses its bit of pc->prepared.
 */
static int
pg_send_read(struct pgconn *pc, const enum pg_sent *kind, const unsigned *id,
    int sent, unsigned ms, PGresult **last, char state[6])
{
	uint64_t deadline = pg_deadline(ms);
	PGcancel *cancel;
	PGresult *r;
	ExecStatusType st;
	const char *e;
	char err[256];
	int idx = 0, w, cancelled = 0;

	state[0] = '\0';
	for (;;) {
		while ((w = pg_answer_wait(pc, deadline)) == 1 && !cancelled) {
			if ((cancel = PQgetCancel(pc->c)) != NULL) {
				(void)PQcancel(cancel, err, sizeof(err));
				PQfreeCancel(cancel);
			}
			cancelled = 1;
			deadline = pg_deadline(ms);
		}
		if (w != 0)
			return -1;
		if ((r = PQgetResult(pc->c)) == NULL) {
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
	if (pg_session_open(s, pc) != IDEM_OK)
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

/* Milliseconds of CLOCK_MONOTONIC. */
static uint64_t
pg_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
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

/*
 * The schema version of the database behind c: 0 for none, -1 when it
 * cannot be read.
 */
static long
pg_schema_version(PGconn *c)
{
	PGresult *r;
	long v = -1;

	r = PQexec(c, "SELECT coalesce(max(version), 0) FROM "
	    "idem_schema_version");
	if (r == NULL)
		return -1;
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		v = strtol(PQgetvalue(r, 0, 0), NULL, 10);
	else if (PQresultStatus(r) == PGRES_FATAL_ERROR &&
	    PQresultErrorField(r, PG_DIAG_SQLSTATE) != NULL &&
	    strcmp(PQresultErrorField(r, PG_DIAG_SQLSTATE), "42P01") == 0)
		v = 0;
	PQclear(r);
	return v;
}

static int
pg_exec_plain(PGconn *c, const char *sql, char *err, size_t errlen)
{
	PGresult *r = PQexec(c, sql);
	int ok = r != NULL && (PQresultStatus(r) == PGRES_COMMAND_OK ||
	    PQresultStatus(r) == PGRES_TUPLES_OK);

	if (!ok)
		snprintf(err, errlen, "%s", r != NULL ?
		    PQresultErrorMessage(r) : PQerrorMessage(c));
	PQclear(r);
	return ok ? 0 : -1;
}

int
store_pg_migrate(const char *conninfo, int *from, int *to, char *err,
    size_t errlen)
{
	char sql[128];
	PGconn *c;
	long v;
	int i, rc = -1;

	*from = *to = 0;
	if ((c = pg_connect(conninfo, 0, &pg_tool_limits)) == NULL) {
		snprintf(err, errlen, "cannot connect");
		return -1;
	}
	if (pg_exec_plain(c, "BEGIN", err, errlen) != 0 ||
	    pg_exec_plain(c, "SELECT pg_advisory_xact_lock(" PG_MIGRATE_LOCK
	    ")", err, errlen) != 0 ||
	    pg_exec_plain(c, "CREATE TABLE IF NOT EXISTS idem_schema_version ("
	    " version integer PRIMARY KEY,"
	    " applied_at timestamptz NOT NULL DEFAULT now())",
	    err, errlen) != 0)
		goto out;
	if ((v = pg_schema_version(c)) < 0) {
		snprintf(err, errlen, "cannot read the schema version");
		goto out;
	}
	*from = *to = (int)v;
	if (v > PG_SCHEMA_VERSION) {
		snprintf(err, errlen, "the database has schema version %ld, "
		    "newer than this program's %d", v, PG_SCHEMA_VERSION);
		goto out;
	}
	for (i = (int)v; i < PG_SCHEMA_VERSION; i++) {
		snprintf(sql, sizeof(sql), "INSERT INTO idem_schema_version "
		    "(version) VALUES (%d)", i + 1);
		if (pg_exec_plain(c, pg_migrations[i], err, errlen) != 0 ||
		    pg_exec_plain(c, sql, err, errlen) != 0)
			goto out;
	}
	if (pg_exec_plain(c, "COMMIT", err, errlen) != 0)
		goto out;
	*to = PG_SCHEMA_VERSION;
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

	if ((c = pg_connect(conninfo, 0, &pg_tool_limits)) == NULL)
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
	pthread_condattr_t ca;
	long v;
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
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv, &ca);
	pthread_condattr_destroy(&ca);
	/* The first connection checks the schema, and stays in the pool. */
	if ((rc = pg_acquire(s, &pc)) != IDEM_OK) {
		fprintf(stderr, "idem: cannot connect to the PostgreSQL "
		    "store\n");
		pg_close(&s->base);
		return rc;
	}
	v = pg_schema_version(pc->c);
	pg_release(s, pc);
	/*
	 * Never run on a schema this program does not know: an older one
	 * lacks what it writes, and a newer one may hold what it would
	 * misread or leave out of date (a downgrade is not a migration).
	 */
	if (v != PG_SCHEMA_VERSION) {
		if (v > PG_SCHEMA_VERSION)
			fprintf(stderr, "idem: the PostgreSQL store has schema "
			    "version %ld, newer than this program's %d: run "
			    "the program that migrated it\n", v,
			    PG_SCHEMA_VERSION);
		else
			fprintf(stderr, "idem: the PostgreSQL store has schema "
			    "version %ld, this program needs %d: run idemctl "
			    "migrate\n", v, PG_SCHEMA_VERSION);
		pg_close(&s->base);
		return IDEM_EIO;
	}
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
