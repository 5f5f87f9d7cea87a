/* SPDX-License-Identifier: MIT */
/*
 * store_pg.h: the PostgreSQL backend's internal interface, shared by its
 * files and by nothing else.  Only the store_pg*.c files include
 * libpq-fe.h; SQLSTATEs and libpq statuses become enum idem_err here.
 *
 *	store_pg.c		connections, the pool, transactions with
 *				their retries, the schema and its
 *				migrations, open/close, the operations table
 *	store_pg_ops.c		lookup, claim, the writes to an owned claim,
 *				purge, application rows, walks (through
 *				server-side cursors), hooks
 *
 * The schema (version PG_SCHEMA_VERSION, applied by idemctl migrate):
 *
 *	idem_schema_version	the migrations applied: version, when,
 *				and compat, the oldest program schema
 *				version that runs on the schema it left
 *	idem_keys		(scope, key) -> rec (record.h encoding),
 *				purge_at: when purge may delete the record
 *				(store_lmdb.h's expiry index time), NULL
 *				for a claim past stage 0 (pending)
 *	idem_keys_expiry	partial index on purge_at, non-pending rows
 *	idem_keys_pending	partial index on (scope, key), pending rows
 *	idem_rows		(tbl, k) -> v: every application table
 *	idem_quota		(scope, slot) -> records added less records
 *				deleted by the sessions of that slot, as
 *				in idem_counts: a scope's count (the
 *				per-scope bound) is the sum of its slots;
 *				a: the slot's allowance of the bound b it
 *				was granted under (pg_quota_claim)
 *	idem_counts		(tbl, slot) -> rows added less rows
 *				deleted by the sessions whose server
 *				process id is slot modulo PG_COUNT_SLOTS:
 *				a table's count is the sum of its slots
 *	idem_gens		(scope, key) -> gen: how many lifetimes of
 *				the key have ended (store.h), written by
 *				purge and by a claim that replaces an
 *				expired record
 *
 * scope and key are bytea, so rows sort bytewise as in LMDB.
 */
#ifndef IDEM_STORE_PG_H
#define IDEM_STORE_PG_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <libpq-fe.h>

#include "buf.h"
#include "record.h"
#include "store.h"

#define PG_SCHEMA_VERSION 5
/*
 * The compat the migrations leave (store_pg.c): the oldest program
 * schema version that runs on PG_SCHEMA_VERSION.
 */
#define PG_SCHEMA_COMPAT 4
/* Connections per process: the writers that run at once. */
#define PG_POOL_MAX 16
/* Serialization failures and deadlocks retried before IDEM_EIO. */
#define PG_RETRIES 32
/* The longest row key, as in LMDB's default build. */
#define PG_ROW_KEY_MAX 511
/*
 * Rows a walk (each, each_pending, scan) fetches at a time from its
 * server-side cursor: its memory is this, not the table's size.
 */
#define PG_WALK_BATCH 256
/* Scopes a session remembers holding an allowance in (pgconn.granted). */
#define PG_GRANT_HINTS 64
/* Rows a count is spread over (idem_counts.slot, idem_quota.slot). */
#define PG_COUNT_SLOTS 1024
#define PG_STR_(x) #x
#define PG_STR(x) PG_STR_(x)
/* An internal result: roll back and run the transaction again. */
#define PG_RETRY (-2)
/* An internal result: COMMIT was sent and its answer lost with the session. */
#define PG_LOST (-3)

/*
 * The defaults of the waits every session has (store_config.pg_*: 0
 * takes these): seconds to open a session, milliseconds a statement
 * may run (and a COMMIT may take to answer), milliseconds a statement
 * may wait for a lock, and milliseconds a call may wait for a session
 * of the pool.  Each bounds one wait of a write well inside a claim's
 * 30 s lease, so that a stalled server answers 503 and not never.
 */
#define PG_CONNECT_TIMEOUT_S 5
#define PG_STATEMENT_TIMEOUT_MS 5000
#define PG_LOCK_TIMEOUT_MS 2000
#define PG_POOL_WAIT_MS 2000

/*
 * How often a running program reads the schema's version again besides
 * when it opens a session (pg_schema_check): after a contract migration
 * past its range, its calls fail within this (doc/DESIGN.md, "Rolling
 * upgrade").
 */
#define PG_SCHEMA_CHECK_MS 10000
/*
 * How long a session of the pool is used without checking its server
 * again (store_pg_sync.c, pg_sync_recheck): the replication settings,
 * and whether the server is still the primary this process should use.
 * Well below any failover manager's ttl, so that a primary that paused
 * through a failover is checked before a session to it is used again.
 */
#define PG_SYNC_CHECK_MS 1000
/*
 * idemctl migrate: how long a migration's statement waits for a lock
 * (well below the writers' PG_LOCK_TIMEOUT_MS, so that the writers that
 * queue behind it get through when it gives up), the pause before it
 * tries again, and how many times it tries.
 */
#define PG_MIGRATE_LOCK_MS 500
#define PG_MIGRATE_PAUSE_MS 1000
#define PG_MIGRATE_TRIES 120
/*
 * The database's clock (store_pg.c, pg_clock): each session measures
 * how far its host's clock is from the server's when it first writes,
 * and again once this many milliseconds have passed; a difference
 * within the slack counts as none.
 */
#define PG_CLOCK_CHECK_MS 60000
#define PG_CLOCK_SLACK_MS 100

struct pglimits {
	unsigned connect_s;
	unsigned statement_ms;    /* 0: none (idemctl migrate) */
	unsigned lock_ms;         /* 0: none (idemctl migrate) */
	unsigned pool_wait_ms;
};

/* What a write transaction did to its record (pg_note_put, pg_note_del). */
enum pg_noted {
	PG_NOTED_NONE,
	PG_NOTED_PUT,     /* wrote note_rec as the record */
	PG_NOTED_DEL      /* deleted the record */
};

struct pgstore;

struct pgconn {
	PGconn *c;
	struct pgstore *s;    /* the store whose pool this is in */
	int busy;
	int retry;        /* this transaction failed to serialize */
	int begin;        /* BEGIN goes with the next statement */
	int broken;       /* left in a state no statement can use */
	/*
	 * Opened and not yet checked: the schema and the standbys are
	 * checked on a session's first use (pg_session_checks), wherever it
	 * was opened.
	 */
	int fresh;
	/*
	 * The transaction ended in its own pipeline (pg_send_tx): there is
	 * nothing to commit or roll back.
	 */
	int ended;
	/* The statements of pg_send_tx prepared on this session, by id. */
	uint32_t prepared;
	/*
	 * The scopes (pg_claim's gate hashes, PG_GRANT_HINTS places, by
	 * the hash) whose bound this session's slot last held an allowance
	 * of: a hint of which claim to send first, never the bound's check.
	 */
	uint64_t granted[PG_GRANT_HINTS];
	/*
	 * The server's clock less the host's, in milliseconds, as measured
	 * at clock_at (CLOCK_MONOTONIC ms; 0: not yet) (pg_clock).
	 */
	int64_t clock_off;
	uint64_t clock_at;
	/* When its server was last checked (pg_sync_recheck; 0: never). */
	uint64_t checked_at;
	/*
	 * Set by the notice receiver when a WARNING came that a COMMIT
	 * reads as its wait for synchronous replication cancelled.
	 */
	int warned;
	/*
	 * The record the transaction wrote last, for reading it back when
	 * its COMMIT's answer is lost: scope and key are borrowed from the
	 * write's arguments, note_rec its encoding.
	 */
	enum pg_noted noted;
	const char *note_scope, *note_key;
	struct buf note_rec;
	/*
	 * Where 8 bytes of note_rec are the server's to fill (a claim's
	 * generation), left out of the comparison; 0: none.
	 */
	size_t note_skip;
};

/*
 * A claim this process holds and the record it last wrote for it, byte
 * for byte: what a write to the claim guards its statement with, in
 * place of reading the record first (store_pg_ops.c).
 */
#define PG_OWNED_MAX 256
struct pgowned {
	int used;
	uint8_t token[REC_TOKEN_SIZE];
	char *names;      /* scope, NUL, key, NUL */
	struct buf rec;
};

struct pgstore {
	struct store base;
	char *conninfo;
	int read_only;
	uint64_t max_keys;
	pid_t pid;
	char tables[IDEM_MAX_TABLES][STORE_TABLE_NAME_MAX + 1];
	size_t ntables;
	struct pglimits lim;
	/*
	 * Statements the store's sessions sent (BEGIN, COMMIT and ROLLBACK
	 * included, a prepared statement's Parse not) and the round trips
	 * they took (each wait for the server's answer), since it opened:
	 * also idem_store_statements_total and idem_store_round_trips_total.
	 */
	uint64_t stmts, trips;
	/*
	 * The host's clock, ms since the epoch (NULL: CLOCK_REALTIME): a
	 * test's, to play a host whose clock is wrong.
	 */
	uint64_t (*host_clock)(void);
	pthread_mutex_t owned_mu;
	struct pgowned owned[PG_OWNED_MAX];
	size_t owned_next;            /* the entry a new claim replaces */
	pthread_mutex_t mu;
	pthread_cond_t cv;            /* on CLOCK_MONOTONIC */
	struct pgconn conns[PG_POOL_MAX];
	/*
	 * The schema check (pg_schema_check), under mu: when the next is
	 * due (ms of CLOCK_MONOTONIC), the version and compat it saw last,
	 * and whether they were past this program's range.
	 */
	uint64_t schema_due_ms;
	long schema_v, schema_compat;
	int schema_bad;
	int repl;                     /* enum pg_repl (pg_sync_mode) */
	int sync_why;                 /* store_pg_sync.c's last verdict */
	/*
	 * The highest timeline and WAL position of a primary whose session
	 * this process accepted (store_pg_sync.c, pg_behind), under mu.
	 */
	uint32_t seen_timeline;
	uint64_t seen_lsn;
};

/* Parameters of one statement: bytea in binary, numbers as text. */
#define PG_MAX_ARGS 24
struct pgargs {
	int n;
	const char *v[PG_MAX_ARGS];
	int len[PG_MAX_ARGS];
	int fmt[PG_MAX_ARGS];
	char num[PG_MAX_ARGS][24];
};

/*
 * A statement that pg_send_tx prepares once per session, as idem_<id>,
 * and runs with a's parameters.
 */
struct pgstmt {
	unsigned id;      /* below 32: its bit of pgconn.prepared */
	const char *sql;
	const struct pgargs *a;
};

/* A transaction's body: *commit set to commit whatever it returns. */
typedef int (*pg_tx_fn)(struct pgstore *s, struct pgconn *pc, void *arg,
    int *commit);

struct pgstore *pgstore_of(struct store *s);
void pg_arg_bytes(struct pgargs *a, const void *p, size_t n);
void pg_arg_u64(struct pgargs *a, uint64_t x);
void pg_arg_null(struct pgargs *a);
void pg_arg_str(struct pgargs *a, const char *str);
/*
 * Runs sql with a's parameters (a may be NULL), binary results.  *res
 * (PQclear) on IDEM_OK; PG_RETRY for a serialization failure or a
 * deadlock, IDEM_EEXIST for a unique violation, IDEM_EBUSY for a lock
 * or statement timeout, IDEM_EIO otherwise (the session marked broken
 * when it was lost).
 */
int pg_exec(struct pgconn *pc, const char *sql, struct pgargs *a,
    PGresult **res);
/* pg_exec without a result. */
int pg_run(struct pgconn *pc, const char *sql, struct pgargs *a);
uint64_t pg_get_u64(const PGresult *r, int row, int col);
/* Counts statements sent and round trips taken on pc (pgstore.stmts). */
void pg_cost(struct pgconn *pc, unsigned stmts, unsigned trips);
/*
 * A session of the pool for one statement or one transaction, waiting
 * at most the pool wait for one to be free: IDEM_EBUSY when none was,
 * IDEM_EIO when none could be opened.
 */
int pg_acquire(struct pgstore *s, struct pgconn **pc);
void pg_release(struct pgstore *s, struct pgconn *pc);
/*
 * One transaction, retried when it fails to serialize.  A COMMIT that
 * warned that its wait for synchronous replication was cancelled fails
 * it with IDEM_EIO, as does a COMMIT whose answer was lost.
 */
int pg_write(struct pgstore *s, pg_tx_fn fn, void *arg);
/*
 * pg_write for a write whose outcome its record tells (a claim, the
 * writes to an owned claim): when COMMIT's answer is lost, the record
 * is read once on a new session.  It committed, and the write returns
 * what fn did, when the record is what the transaction noted it wrote
 * (pg_note_put: byte for byte, the claim's random token and times
 * included), or is gone after a noted delete, or, when nothing was
 * noted, always (fn decided on what was committed); else IDEM_EIO.  The
 * read-back itself writes and commits, so that it counts only once the
 * synchronous standbys have everything before it.
 */
int pg_write_verified(struct pgstore *s, pg_tx_fn fn, void *arg);
/*
 * Runs the n statements of st as one transaction of their own, in one
 * round trip: sent in a pipeline (each prepared on the session first
 * when it is not yet), then a Sync, which commits them (an implicit
 * transaction, no BEGIN nor COMMIT sent), or rolls them all back when
 * one fails.  Called by a pg_write body as the first thing of its
 * transaction; pc->ended tells pg_write that nothing is left to commit,
 * and the body may begin another (pg_tx_again).  Returns IDEM_OK and
 * *last, the last statement's result (PQclear), when the transaction
 * is durable; PG_LOST when its answer was lost (it may have committed:
 * return it from the body, after noting what it wrote, for the
 * read-back); PG_RETRY, IDEM_EBUSY, IDEM_EIO as pg_exec and pg_commit
 * do, when nothing committed or it committed only locally.
 */
int pg_send_tx(struct pgstore *s, struct pgconn *pc, const struct pgstmt *st,
    int n, PGresult **last);
/*
 * now_ms, a time by the caller's clock, as the database's clock reads:
 * moved by how far the session's host clock is from the server's
 * (pgconn.clock_off).  Every time a write compares or writes is this.
 */
uint64_t pg_now(const struct pgconn *pc, uint64_t now_ms);
/* After pg_send_tx, a pg_write body's next statement begins again. */
void pg_tx_again(struct pgconn *pc);
/* What the transaction on pc wrote as (scope, key)'s record. */
int pg_note_put(struct pgconn *pc, const char *scope, const char *key,
    const void *rec, size_t len);
void pg_note_del(struct pgconn *pc, const char *scope, const char *key);
int pg_table_ok(const struct pgstore *s, const char *name);

/* store_pg_sync.c */
enum pg_repl {
	PG_REPL_AUTO,     /* the database may declare a single server */
	PG_REPL_SYNC,     /* synchronous_standby_names, always */
	PG_REPL_NONE      /* also a server from which nothing streams */
};
/*
 * The replication the host asks for, from IDEM_PG_REPLICATION: unset
 * (PG_REPL_AUTO), "synchronous" or "none"; IDEM_EINVAL for another
 * value, which is said on stderr.
 */
int pg_sync_mode(int *mode);
/*
 * Whether c, a session just opened or taken from the pool, may be used:
 * IDEM_OK when its commits wait for a synchronous standby (one is
 * synchronous now, where the role may see it), or the server was
 * declared to stand alone and none streams from it, and the server is
 * not behind what this process has seen (its timeline and WAL position,
 * store_pg_sync.c); IDEM_EUNSAFE when its commits would not wait
 * (said once on stderr, with why); IDEM_EIO when the server is a
 * standby, is behind, has no synchronous standby now, or cannot be
 * read.
 */
int pg_sync_check(struct pgstore *s, PGconn *c);
/*
 * The same check when a call takes pc's session from the pool, if it
 * was last checked PG_SYNC_CHECK_MS ago or more; a session it refuses
 * is marked broken, and closed.  opened: pc's session was just opened
 * (and checked).
 */
int pg_sync_recheck(struct pgstore *s, struct pgconn *pc, int opened);

/* Milliseconds of CLOCK_MONOTONIC. */
uint64_t pg_mono_ms(void);

/* store_pg_io.c */
/*
 * How long an answer may still come after its deadline, once the
 * statement was cancelled: a server that answers at all answers a
 * cancel within this.
 */
#define PG_CANCEL_GRACE_MS 1000
/*
 * How much longer than the server's statement timeout the host waits
 * before it cancels: the server's own timeout, which answers at once,
 * comes first, and a cancel is sent only to a server that is silent or
 * to a COMMIT's wait for a standby, which no timeout of the server's
 * bounds.
 */
#define PG_DEADLINE_SLACK_MS 200
/* A wait for one query's answers (pg_wait_init). */
struct pgwait {
	uint64_t deadline;    /* ms of CLOCK_MONOTONIC */
	int cancelled;        /* the cancel was sent, the grace runs */
};
/*
 * A wait of ms (0: PG_STATEMENT_TIMEOUT_MS) and PG_DEADLINE_SLACK_MS
 * from now.
 */
void pg_wait_init(struct pgwait *w, unsigned ms);
/*
 * Waits until c has an answer to read without blocking: 0; at w's
 * deadline the statement is cancelled (pg_cancel) and the wait goes on
 * for PG_CANCEL_GRACE_MS; 1 when that ran out too, -1 when the session
 * failed.  c is unusable after 1 or -1: the caller marks it broken.  A
 * session that was sent a cancel (w->cancelled) is closed after its
 * call even when the answer came: the request may yet reach the server
 * late, and cancel the session's next statement.
 */
int pg_wait_answer(PGconn *c, struct pgwait *w);
/*
 * PQgetResult once pg_wait_answer has the answer: 0 and *r (NULL at the
 * end of a command's results, as PQgetResult), or -1 as pg_wait_answer
 * fails (*r NULL).
 */
int pg_wait_result(PGconn *c, struct pgwait *w, PGresult **r);
/*
 * Asks c's server to cancel what c runs, without waiting for it: the
 * request goes from a detached thread of its own (PQcancel blocks until
 * the server closes the cancel's connection, which a stopped server
 * does not).
 */
void pg_cancel(PGconn *c);
/*
 * PQexec (a NULL: sql may hold several statements, text results) or
 * PQexecParams (binary results when binary is set) within w: the last
 * result (the error, when one failed), which the caller clears; NULL
 * when it could not be sent or its answer did not come, and c is then
 * unusable.
 */
PGresult *pg_exec_by(PGconn *c, const char *sql, const struct pgargs *a,
    int binary, struct pgwait *w);
/*
 * The timer of a periodic server check (the schema's version, the
 * replication), called under s->mu with the check's next-due time: 1
 * when the check is due at now or force is set, and the next is then
 * set period_ms on, so that one thread checks and the others go on with
 * what the last check found; else 0.
 */
int pg_check_due(uint64_t *due_ms, uint64_t now, unsigned period_ms,
    int force);

/* store_pg_ops.c */
/* Frees what the store knows of the claims it holds. */
void pg_owned_free(struct pgstore *s);
int pg_lookup(struct store *base, const char *scope, const char *key,
    struct rec *out);
int pg_claim(struct store *base, const char *scope, const char *key,
    const uint8_t fp[FP_SIZE], const uint8_t token[REC_TOKEN_SIZE],
    uint64_t now_ms, uint64_t lease_ms, uint64_t ttl_ms,
    const struct store_first *first, struct store_claim *out);
int pg_checkpoint(struct store *base, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint32_t stage, const void *cp,
    size_t cplen, uint64_t now_ms, uint64_t lease_ms);
int pg_complete(struct store *base, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], const struct rec_response *resp,
    idem_tx_fn hook, void *hook_ctx, uint64_t now_ms, uint64_t ttl_ms);
int pg_release_claim(struct store *base, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], idem_tx_fn hook, void *hook_ctx);
int pg_abandon(struct store *base, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint64_t now_ms);
int pg_purge(struct store *base, uint64_t now_ms, size_t max,
    size_t *purged);
int pg_reseal(struct store *base, const char *const *scopes,
    const char *const *keys, size_t n, store_reseal_fn fn, void *ctx);
int pg_get(struct store *base, const char *table, const void *key,
    size_t keylen, struct buf *out);
int pg_insert_once(struct store *base, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen, struct buf *existing);
int pg_scan(struct store *base, const char *table, const void *prefix,
    size_t prefixlen, const void *from, size_t fromlen, int reverse,
    size_t limit, store_scan_fn fn, void *ctx);
int pg_each(struct store *base, store_each_fn fn, void *ctx);
int pg_each_pending(struct store *base, store_each_fn fn, void *ctx);
int pg_count(struct store *base, const char *table, size_t *n);
int pg_tx_get(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void **val, size_t *vallen);
int pg_tx_put(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen);
int pg_tx_del(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen);

#endif
