/* SPDX-License-Identifier: MIT */
/*
 * store_lmdb.h: the LMDB backend's internal interface, shared by its
 * files and by nothing else.  Only the store_lmdb*.c files include
 * lmdb.h; MDB_* and errno values become enum idem_err in lstore_err and
 * nowhere else.
 *
 *	store_lmdb.c		environments, open/close, group commit,
 *				the operations table
 *	store_lmdb_txn.c	transactions' begin and end, the map size
 *				and the remap gate
 *	store_lmdb_rec.c	records, their index entries, scope counts
 *	store_lmdb_claim.c	lookup, claim, and the writes to an owned
 *				claim (checkpoint, complete, release, abandon)
 *	store_lmdb_purge.c	purge of what has expired
 *	store_lmdb_rows.c	application rows: get, insert, scan, counts,
 *				hook transactions; walks over records
 *
 * One environment per directory, with these named databases:
 *
 *	keys		scope NUL key -> record (record.h encoding)
 *	expiry		be64(purge time) scope NUL key -> empty
 *	pending		scope NUL key -> empty
 *	quota		scope -> be64(live records of the scope)
 *	<table>		one per application table, named by the application
 *
 * Every record has exactly one index entry (lstore_index_of): a claim past
 * stage 0 may have left a side effect and never expires, so it is listed
 * in pending; every other record is in expiry at the time it may be
 * purged (its expiry, or the end of its lease if that comes later).  The
 * expiry index sorts by time, so purge reads only what it deletes, and
 * nothing it must keep can pile up in front of it.  A record, its index
 * entry and its scope's count change in the same transaction.  Scope
 * cannot contain a NUL, so "scope NUL key" names exactly one (scope,
 * key): no scope can reach into another's keys.
 *
 * Every write is one write transaction with LMDB's default, durable sync
 * (never MDB_NOSYNC, MDB_NOMETASYNC or an asynchronous MDB_WRITEMAP): when
 * a call returns IDEM_OK its effect is on disk (doc/DESIGN.md, invariant
 * 2).  Write transactions do no I/O of their own beyond LMDB's and never
 * wait on anything outside the backend (hooks must not block), so the
 * write lock is held briefly.
 *
 * LMDB's rules live here: an environment is opened after fork, in the
 * process that uses it (one per directory per process, shared by its
 * handles), and mdb_reader_check clears the reader slots of dead
 * processes when it opens.
 *
 * The map moves only when no transaction of this process is active on
 * the environment.  Another process may open the store with a larger
 * map and grow the data file past ours; the next begin here then fails
 * with MDB_MAP_RESIZED, and mdb_env_set_mapsize(env, 0) adopts the new
 * size by unmapping the old map, which would pull the pages from under
 * any read transaction, cursor or value pointer of another thread.  So
 * every transaction (read or write: requests, the group commit, purge,
 * walks and scans, hook transactions, lstore_free_pages) begins with
 * lstore_txn_begin or lstore_env_txn_begin and ends with
 * lstore_txn_commit, lstore_txn_abort or lstore_env_txn_end
 * (store_lmdb_txn.c), on the thread that began it; LMDB's own calls are
 * poisoned in every other file of the backend.  A thread holds the remap
 * gate, a writer-preferring rwlock, shared from its first transaction on
 * the environment to the end of its last; the thread that meets
 * MDB_MAP_RESIZED, holding none, waits for the gate exclusive, remaps
 * unless another thread did meanwhile, and begins again.  While it waits,
 * a thread's first begin waits behind it, and begins nested in a
 * transaction the thread holds go ahead (that transaction keeps the map
 * where it is, and the remap waits for it anyway); a nested begin that
 * meets MDB_MAP_RESIZED itself fails with IDEM_EBUSY.  So no thread that
 * holds a transaction may wait for anything that needs a transaction of
 * another thread of this process: a walk's or scan's callback and a hook
 * never wait, and lstore_write refuses (IDEM_EBUSY) a thread inside a
 * transaction of its own.  mdb_env_info and mdb_env_stat read the map
 * too: they are called inside a transaction.
 */
#ifndef IDEM_STORE_LMDB_H
#define IDEM_STORE_LMDB_H

#include <pthread.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <lmdb.h>

#include "record.h"
#include "store.h"

/*
 * Only store_lmdb_txn.c begins, ends or remaps (see the remap gate
 * above): anywhere else these are errors.
 */
#ifndef LSTORE_TXN_OWNER
#pragma GCC poison mdb_txn_begin mdb_txn_commit mdb_txn_abort
#pragma GCC poison mdb_txn_reset mdb_txn_renew mdb_env_set_mapsize
#endif

#define STORE_DEFAULT_MAP_SIZE ((size_t)32 << 30)
/* keys, expiry, pending, quota, and the application's tables. */
#define STORE_MAX_DBS (5 + IDEM_MAX_TABLES)
/*
 * Room for the longest LMDB key (511 bytes in a default build, see
 * mdb_env_get_maxkeysize), so keys are built on the stack.
 */
#define STORE_KEY_BUF 512
#define STORE_EXPIRY_PREFIX STORE_INDEX_PREFIX
/*
 * Reader slots: with MDB_NOTLS a slot belongs to a read transaction, so
 * this bounds the read transactions open at once in every process of
 * the store together (threads of every worker, idemctl).
 */
#define STORE_MAX_READERS 2048
/*
 * What a job sets *wrote to when it failed after it may have written (a
 * hook that failed): its batch is rolled back and run again one job per
 * transaction, whatever the error.
 */
#define LSTORE_TAINTED (-1)

struct lstore;

/*
 * A write waiting for the next group commit of its environment.  fn runs
 * inside the batch's transaction and sets *wrote to 1 when it wrote
 * something to keep: all of its writes succeeded (or, for a claim refused
 * at its scope's bound, the purge it did on the way).  A job that fails
 * must fail before it writes, or with an error that lstore_rc_clean does
 * not accept, or with *wrote set to LSTORE_TAINTED, which makes the batch
 * run again one job per transaction: so fn may run twice, and must start
 * each time from its arguments, not from what an earlier run left in its
 * results.
 */
typedef int (*store_job_fn)(struct lstore *s, MDB_txn *txn, void *arg,
    int *wrote);

struct store_job {
	struct store_job *next;
	struct lstore *s;
	store_job_fn fn;
	void *arg;
	int rc;
	int wrote;
	int done;           /* set by the leader before it posts wake */
	int lead;           /* the job's thread leads the next commit */
	sem_t wake;         /* posted for lead, and for done */
};

/* An application table of an environment. */
struct store_table {
	char name[STORE_TABLE_NAME_MAX + 1];
	MDB_dbi dbi;
};

/*
 * One open LMDB environment.  LMDB forbids opening the same environment
 * twice in one process (closing either would drop the other's POSIX
 * locks), so every store handle of this process on the same directory
 * shares one, counted by refs.  pid tells an environment inherited across
 * fork, which must never be used, from our own.
 */
struct store_env {
	struct store_env *next;
	dev_t dev;
	ino_t ino;
	pid_t pid;
	int refs;
	int read_only;
	size_t maxkey;
	MDB_env *env;
	MDB_dbi keys;
	MDB_dbi expiry;
	MDB_dbi pending;
	MDB_dbi quota;
	/*
	 * Each key's generation (store.h), from scope NUL key to be64.  A
	 * store opened read-only that an older release wrote has none
	 * (has_gens 0): only writes use it.
	 */
	MDB_dbi gens;
	int has_gens;
	/*
	 * The application's tables.  A handle that names a table not yet
	 * open adds it under lstore_envs_mu, before it is returned; the
	 * entries before ntables never change.
	 */
	struct store_table tables[IDEM_MAX_TABLES];
	size_t ntables;
	/* Group commit (lstore_write): jobs queued, and whether one leads. */
	pthread_mutex_t mu;
	struct store_job *queue;
	struct store_job **queue_tail;
	int leading;
	size_t queued;              /* jobs in queue */
	size_t last_batch;          /* jobs in the last batch committed */
	unsigned gather_us;         /* see store_config.commit_delay_us */
	/*
	 * A gathering leader waits on gathered until queued reaches
	 * gather_want (0: no leader gathers), posted by the job that
	 * brings it there.
	 */
	pthread_cond_t gathered;
	size_t gather_want;
	/*
	 * The remap gate (the top of this file): held shared by every
	 * thread with a transaction on the environment, exclusive by a
	 * remap.  held counts each thread's transactions here; map_rc is
	 * a remap's failure, which leaves no usable map, written with the
	 * gate exclusive.  remaps (remaps done) and remap_waiting (threads
	 * waiting for the gate to remap) are atomic, and tests read them.
	 */
	pthread_rwlock_t gate;
	pthread_key_t held;
	int map_rc;
	unsigned remaps;
	unsigned remap_waiting;
	size_t map_want;            /* this process's size (0: the default) */
	uint64_t adopt_due_ms;      /* lstore_map_adopt_due's, atomic */
};

/* A handle: the interface's base first, then the backend's state. */
struct lstore {
	struct store base;
	struct store_env *e;
	int read_only;
	uint64_t max_keys;
};

/* A key built on the stack: a record key, or an expiry key. */
struct store_key {
	size_t len;
	uint8_t data[STORE_KEY_BUF];
};

/* The handle behind the interface's base. */
struct lstore *lstore_of(struct store *s);

/* store_lmdb.c */
int lstore_err(int rc);
int lstore_key_make(const struct lstore *s, const char *scope,
    const char *key, struct store_key *k);
void lstore_expiry_make(uint64_t expires_ms, const struct store_key *k,
    struct store_key *ek);
int lstore_write(struct lstore *s, store_job_fn fn, void *arg);
/* The table's database; IDEM_EINVAL when no table has that name. */
int lstore_table(const struct lstore *s, const char *name, MDB_dbi *dbi);

/* store_lmdb_txn.c */
/* Sets the map size of env, not yet open: want, or the default for 0. */
int lstore_map_init(MDB_env *env, size_t want);
/* The gate of e, once its env is open and before its first transaction. */
int lstore_gate_init(struct store_env *e);
/*
 * Maps the larger of this process's size (e->map_want) and the one the
 * meta page records (the largest any process that wrote gave it), once
 * no transaction of this process is active on e: the caller holds none,
 * and waits for the gate exclusive.  *grew set when the map grew: a
 * process started with a smaller IDEM_MAP_SIZE than another's judges
 * the store's room by the store's own size.  0, or LMDB's error.
 */
int lstore_map_adopt(struct store_env *e, int *grew);
/*
 * Whether a full claim may adopt now: once per LSTORE_ADOPT_MS an
 * environment, whichever thread asks first (CLOCK_MONOTONIC).
 */
#define LSTORE_ADOPT_MS 1000
int lstore_map_adopt_due(struct store_env *e);
void lstore_gate_destroy(struct store_env *e);
/*
 * Every transaction's begin and end.  The env forms give LMDB's codes
 * (MDB_MAP_RESIZED for a nested begin that met a grown map); the others
 * translate them (IDEM_EBUSY for that one).  The end gives the gate
 * back whatever the outcome, and a failed commit has freed the
 * transaction: it is never aborted after that.
 */
int lstore_env_txn_begin(struct store_env *e, unsigned int flags,
    MDB_txn **txn);
int lstore_env_txn_end(MDB_txn *txn, int commit);
int lstore_txn_begin(struct lstore *s, int write, MDB_txn **txn);
int lstore_txn_commit(MDB_txn *txn);
void lstore_txn_abort(MDB_txn *txn);
/* Whether this thread has a transaction on e. */
int lstore_txn_held(const struct store_env *e);
/* For tests: threads waiting to remap, and remaps done, in base's env. */
void lstore_remap_counts(struct store *base, unsigned *waiting,
    unsigned *done);

/* store_lmdb_rec.c */
int lstore_reseal(struct store *base, const char *const *scopes,
    const char *const *keys, size_t n, store_reseal_fn fn, void *ctx);
int lstore_rec_get(struct lstore *s, MDB_txn *txn, const struct store_key *k,
    struct rec *r);
int lstore_rec_put(struct lstore *s, MDB_txn *txn, const struct store_key *k,
    const struct rec *r);
/* Where a record is indexed (see the top of this file). */
enum store_index {
	STORE_INDEX_EXPIRY,
	STORE_INDEX_PENDING
};
enum store_index lstore_index_of(const struct rec *r, uint64_t *at);
int lstore_index_move(struct lstore *s, MDB_txn *txn,
    const struct store_key *k, const struct rec *old, const struct rec *new);
int lstore_quota_get(struct lstore *s, MDB_txn *txn, const uint8_t *scope,
    size_t slen, uint64_t *n);
int lstore_quota_add(struct lstore *s, MDB_txn *txn,
    const struct store_key *k, int delta);
int lstore_rec_own(struct lstore *s, MDB_txn *txn, const struct store_key *k,
    const uint8_t token[REC_TOKEN_SIZE], struct rec *r);
/*
 * The generation of k (store.h): lstore_gen_get reads it into *gen (0 when
 * k has none), lstore_gen_end adds one for a lifetime that ended.
 */
int lstore_gen_get(struct lstore *s, MDB_txn *txn, const struct store_key *k,
    uint64_t *gen);
int lstore_gen_end(struct lstore *s, MDB_txn *txn, const struct store_key *k);

/* store_lmdb_claim.c */
int lstore_lookup(struct store *base, const char *scope, const char *key,
    struct rec *out);
int lstore_claim(struct store *base, const char *scope, const char *key,
    const uint8_t fp[FP_SIZE], const uint8_t token[REC_TOKEN_SIZE],
    uint64_t now_ms, uint64_t lease_ms, uint64_t ttl_ms,
    const struct store_first *first, struct store_claim *out);
int lstore_checkpoint(struct store *base, const char *scope,
    const char *key, const uint8_t token[REC_TOKEN_SIZE], uint32_t stage,
    const void *cp, size_t cplen, uint64_t now_ms, uint64_t lease_ms);
int lstore_complete(struct store *base, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], const struct rec_response *resp,
    idem_tx_fn hook, void *hook_ctx, uint64_t now_ms, uint64_t ttl_ms);
int lstore_release(struct store *base, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], idem_tx_fn hook, void *hook_ctx);
int lstore_abandon(struct store *base, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint64_t now_ms);

/* store_lmdb_purge.c */
int lstore_purge_txn(struct lstore *s, MDB_txn *txn, uint64_t now_ms,
    size_t max, size_t *purged, int *changed);
int lstore_purge(struct store *base, uint64_t now_ms, size_t max,
    size_t *purged);

/* store_lmdb_rows.c */
int lstore_run_hook(struct lstore *s, MDB_txn *txn, idem_tx_fn hook,
    void *ctx, struct idem_tx *tx);
int lstore_get(struct store *base, const char *table, const void *key,
    size_t keylen, struct buf *out);
int lstore_insert_once(struct store *base, const char *table,
    const void *key, size_t keylen, const void *val, size_t vallen,
    struct buf *existing);
int lstore_scan(struct store *base, const char *table, const void *prefix,
    size_t prefixlen, const void *from, size_t fromlen, int reverse,
    size_t limit, store_scan_fn fn, void *ctx);
int lstore_each(struct store *base, store_each_fn fn, void *ctx);
int lstore_each_pending(struct store *base, store_each_fn fn, void *ctx);
int lstore_count(struct store *base, const char *table, size_t *n);
int lstore_tx_get(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void **val, size_t *vallen);
int lstore_tx_put(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen);
int lstore_tx_del(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen);

#endif
