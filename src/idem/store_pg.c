/*
 * store_pg.c: the PostgreSQL backend (store_pg.h): connections and
 * their pool, statements, transactions and their retries, the schema's
 * migrations, open and close.
 *
 * libpq connections are not thread-safe, so each process keeps a pool
 * of at most PG_POOL_MAX, opened when first needed (after fork: a
 * connection is never used by another process than its opener's), and a
 * thread holds one for one statement or one transaction; threads wait
 * for a free one.  A connection found broken (the server restarted) is
 * reset when next taken; the call that met the break, and any made while
 * the server is away, fail with IDEM_EIO and write nothing.
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
 * so IDEM_OK means durable (doc/DESIGN.md, invariant 2).  Commits of
 * concurrent requests share their flushes by PostgreSQL's own group
 * commit (commit_delay and commit_siblings, server settings).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int
pg_exec(struct pgconn *pc, const char *sql, struct pgargs *a,
    PGresult **res)
{
	static const struct pgargs none;
	const struct pgargs *p = a != NULL ? a : &none;
	PGresult *r;
	const char *state;
	ExecStatusType st;
	int rc;

	*res = NULL;
	if (pc->broken)
		return IDEM_EIO;
	if (pc->begin) {
		pc->begin = 0;
		r = pg_exec_begin(pc, sql, p);
	} else
		r = PQexecParams(pc->c, sql, p->n, NULL, p->v, p->len, p->fmt,
		    1);
	if (r == NULL)
		return pc->broken ? IDEM_EIO : IDEM_ENOMEM;
	st = PQresultStatus(r);
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		*res = r;
		return IDEM_OK;
	}
	state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	rc = IDEM_EIO;
	if (state != NULL && (strcmp(state, "40001") == 0 ||
	    strcmp(state, "40P01") == 0)) {
		pc->retry = 1;
		rc = PG_RETRY;
	} else if (state != NULL && strcmp(state, "23505") == 0)
		rc = IDEM_EEXIST;
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

/* Opens a session with the settings every session of the store has. */
static PGconn *
pg_connect(const char *conninfo, int read_only)
{
	PGconn *c = PQconnectdb(conninfo);
	PGresult *r;

	if (c == NULL)
		return NULL;
	if (PQstatus(c) != CONNECTION_OK) {
		PQfinish(c);
		return NULL;
	}
	r = PQexec(c, read_only ?
	    "SET synchronous_commit TO on; SET client_min_messages TO warning;"
	    "SET default_transaction_read_only TO on" :
	    "SET synchronous_commit TO on; SET client_min_messages TO warning");
	if (r == NULL || PQresultStatus(r) != PGRES_COMMAND_OK) {
		PQclear(r);
		PQfinish(c);
		return NULL;
	}
	PQclear(r);
	return c;
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

int
pg_acquire(struct pgstore *s, struct pgconn **out)
{
	struct pgconn *pc = NULL;
	size_t i;

	*out = NULL;
	/* A connection opened by a parent process is never ours to use. */
	if (getpid() != s->pid)
		return IDEM_EIO;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		for (i = 0; i < PG_POOL_MAX; i++)
			if (!s->conns[i].busy) {
				pc = &s->conns[i];
				break;
			}
		if (pc != NULL)
			break;
		pthread_cond_wait(&s->cv, &s->mu);
	}
	pc->busy = 1;
	pthread_mutex_unlock(&s->mu);
	/*
	 * A server that went away (a restart) has closed the socket, which
	 * reading what is pending finds without a round trip: start a new
	 * session now rather than fail the call.
	 */
	if (pc->c != NULL && (pc->broken || !pg_alive(pc->c))) {
		PQfinish(pc->c);
		pc->c = NULL;
	}
	pc->broken = 0;
	pc->begin = 0;
	if (pc->c == NULL &&
	    (pc->c = pg_connect(s->conninfo, s->read_only)) == NULL) {
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
 * Ends a write transaction with what (COMMIT or ROLLBACK): nothing to
 * send when no statement took its BEGIN to the server.
 */
static int
pg_end(struct pgconn *pc, const char *what)
{
	if (pc->begin) {
		pc->begin = 0;
		return IDEM_OK;
	}
	return pg_run(pc, what, NULL);
}

/*
 * Runs fn in a write transaction of its own and commits it, again from
 * the start when it failed to serialize.  The store's time counters see
 * each COMMIT (it returns once PostgreSQL has flushed it) and the write's
 * whole wait, a connection from the pool included; syncs, commits and
 * writes are LMDB's group commit's to count (PostgreSQL flushes on its
 * own, and a transaction here may have written nothing).
 */
int
pg_write(struct pgstore *s, pg_tx_fn fn, void *arg)
{
	struct pgconn *pc;
	uint64_t t0 = metrics_now_us(), c0;
	int rc, crc, commit, attempt;

	if (s->read_only)
		return IDEM_EROFS;
	if ((rc = pg_acquire(s, &pc)) != IDEM_OK)
		return rc;
	for (attempt = 0; attempt < PG_RETRIES; attempt++) {
		/*
		 * Set by any statement of the transaction that failed to
		 * serialize: the statements after it fail too (the
		 * transaction is aborted), and a hook may report any error.
		 */
		pc->retry = 0;
		pc->begin = 1;
		/*
		 * As the LMDB backend's writer does when it gets the lock:
		 * a failure there fails the write before it runs.
		 */
		if (fault_point("store_wait")) {
			(void)pg_end(pc, "ROLLBACK");
			rc = IDEM_EFULL;
			break;
		}
		commit = 0;
		rc = fn(s, pc, arg, &commit);
		if (rc != IDEM_OK && pc->retry)
			rc = PG_RETRY;
		if (rc == PG_RETRY || (rc != IDEM_OK && !commit)) {
			(void)pg_end(pc, "ROLLBACK");
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
			(void)pg_end(pc, "ROLLBACK");
			crc = IDEM_EIO;
		} else
			crc = pg_end(pc, "COMMIT");
		metrics_add(METRIC_STORE_COMMIT_US, metrics_now_us() - c0);
		if (crc == PG_RETRY)
			continue;
		if (crc != IDEM_OK)
			rc = IDEM_EIO;
		break;
	}
	if (rc == PG_RETRY)
		rc = IDEM_EIO;
	pg_release(s, pc);
	metrics_add(METRIC_STORE_WAIT_US, metrics_now_us() - t0);
	return rc;
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
	if ((c = pg_connect(conninfo, 0)) == NULL) {
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

	if ((c = pg_connect(conninfo, 0)) == NULL)
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
	s->read_only = cfg->read_only;
	s->max_keys = cfg->max_keys_per_scope;
	s->pid = getpid();
	for (i = 0; cfg->tables != NULL && cfg->tables[i] != NULL; i++)
		snprintf(s->tables[i], sizeof(s->tables[i]), "%s",
		    cfg->tables[i]);
	s->ntables = i;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
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
