/* SPDX-License-Identifier: MIT */
/*
 * store.h: durable storage for claims, responses and application rows.
 *
 * The store is an interface: an operations table (struct store_ops) that
 * a backend fills.  store_lmdb_ops (store_lmdb*.c, the only files that
 * include lmdb.h) is the one backend today; a PostgreSQL backend or a
 * simulated one for a deterministic simulator plugs in through
 * store_config.backend without touching the engine, idem.c or any
 * application.  The functions below dispatch to the handle's table.
 *
 * Every write is one transaction that is durable before the call returns,
 * so a caller that got IDEM_OK may show the result to the world.  A
 * backend may group-commit (the LMDB one does: writes waiting when a
 * commit starts share it, and a write that fails halfway makes the batch
 * run again one write per transaction, so it rolls back alone): hooks
 * (idem_tx_fn) may therefore run more than once.  A store handle may be
 * used by many threads at once.
 *
 * Keys are addressed by (scope, key): scope is the authenticated
 * principal, key the client's Idempotency-Key.  Neither may contain a NUL
 * byte.  Application rows live in tables the application names when it
 * opens the store (store_config.tables); the store knows nothing else of
 * them.
 *
 * Open the store after fork, once per process (the LMDB backend's rule:
 * an environment must not be used across fork).
 */
#ifndef IDEM_STORE_H
#define IDEM_STORE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "engine.h"
#include "idem.h"
#include "record.h"

struct store_ops;

struct store_config {
	const char *dir;      /* created if missing */
	size_t map_size;      /* bytes; 0 for the default (32 GiB, sparse) */
	int read_only;
	/*
	 * The most live records one scope may hold (0: no bound), so one
	 * scope cannot fill the store that every scope shares.  A record
	 * counts from its claim until it is released or purged.
	 */
	uint64_t max_keys_per_scope;
	/*
	 * The most microseconds a group commit's leader waits for more
	 * writes when the last commit carried more than one; it stops once as
	 * many are queued as that commit carried (0: never waits).  Set by
	 * the first handle to open the environment in this process.
	 */
	unsigned commit_delay_us;
	/*
	 * The application's tables, by name, NULL-terminated (NULL: none);
	 * see idem_options.tables.  A table a second handle names that the
	 * first did not is opened then.
	 */
	const char *const *tables;
	const struct store_ops *backend;  /* NULL: store_lmdb_ops */
	/*
	 * The PostgreSQL backend's bounds on its waits (0: the defaults of
	 * store_pg.h): seconds to open a session (when the URI sets no
	 * connect_timeout), milliseconds a statement may run and may wait
	 * for a lock, and milliseconds a call may wait for a session of
	 * the pool.
	 */
	unsigned pg_connect_timeout_s;
	unsigned pg_statement_timeout_ms;
	unsigned pg_lock_timeout_ms;
	unsigned pg_pool_wait_ms;
};

/*
 * Every handle starts with its backend's table; the backend's own
 * handle type embeds this as its first member.
 */
struct store {
	const struct store_ops *ops;
	/*
	 * The clock read inside the write transaction of a completion or a
	 * take-over (set by idem_open; NULL: now_ms alone).  The record's
	 * expiry is at least a TTL from the later of now_ms and this reading,
	 * so a write that waited after its caller read the time (for the
	 * write lock, in a stalled process) still leaves its answer a whole
	 * TTL to live.
	 */
	idem_clock_fn clock;
	void *clock_ctx;
};

/*
 * The time a completion or take-over on s is dated by: now_ms, or the
 * handle's clock when that reads later.  For backends, inside the write.
 */
uint64_t store_commit_ms(const struct store *s, uint64_t now_ms);

/*
 * A hook's transaction (idem.h): the store handle, the backend's
 * transaction, and for a completion the response the hook chose.
 */
struct idem_tx {
	struct store *s;
	void *impl;
	int may_respond;                     /* in store_complete's hook */
	const struct idem_response *respond; /* set by idem_tx_respond */
	/*
	 * Set by idem.c's wrapper around every application hook (NULL
	 * outside one): what seals and opens the rows the hook touches.
	 */
	void *seal;
};

/*
 * On IDEM_OK *out is the caller's, released with store_close.
 * IDEM_EINVAL, IDEM_ENOTFOUND (read-only and nothing there), IDEM_EROFS,
 * IDEM_ENOMEM, IDEM_EIO.
 */
int store_open(const struct store_config *cfg, struct store **out);
void store_close(struct store *s);

/*
 * Read-only lookup of (scope, key), from a read transaction without the
 * write lock.  On IDEM_OK *out owns its data (rec_free).  IDEM_ENOTFOUND
 * only when there is no record; IDEM_EIO, IDEM_ECORRUPT (a record that
 * does not decode), IDEM_ETOOBIG, IDEM_ENOMEM otherwise.
 */
int store_lookup(struct store *s, const char *scope, const char *key,
    struct rec *out);

/* The outcome of store_claim. */
struct store_claim {
	enum engine_decision decision;
	uint32_t retry_after; /* ENGINE_CONFLICT */
	struct rec rec;       /* the record as it now stands (rec_free) */
};

/*
 * The recovery point a fresh claim starts with, written in the claim's
 * own transaction: a request that knows before it claims what it will
 * record (an id and a time) saves a write of its own.
 */
struct store_first {
	uint32_t stage;
	const void *cp;
	size_t cplen;
	/*
	 * Run in the claim's transaction after the fresh claim is written
	 * (never on a take-over); its failure undoes the claim (idem_tx_fn).
	 */
	idem_tx_fn hook;
	void *hook_ctx;
	/*
	 * When set, a fresh claim is completed in its own transaction, after
	 * its hook: the record is written completed with this response
	 * (store_rec_completed), owned by no one, so the claim, the hook's
	 * rows and the answer are one commit (idem_once).  The fault point
	 * store_complete fails it there, after the claim and the hook wrote,
	 * and the whole transaction goes.  Not used on a take-over: the
	 * caller completes that claim with store_complete.
	 */
	const struct rec_response *done;
};

/*
 * What a claim, a take-over and a completion make of a record: the same
 * for every backend, which only reads the record, calls these inside its
 * write, and stores the result.  Times saturate (store_add_ms).
 *
 * store_rec_fresh makes *r (freed first) a new in-progress claim owned by
 * token, leased until now+lease_ms, expiring at now+ttl_ms, of generation
 * gen (below), starting at first's stage and a copy of its checkpoint
 * (first may be NULL).  IDEM_ENOMEM.
 *
 * store_rec_takeover hands r to token with a new lease, attempts+1,
 * keeping its creation time (and so the provider key derived from it),
 * stage and checkpoint.  store_rec_complete marks r completed, owned by
 * no one, its lease ended now and its checkpoint dropped (r only borrows
 * it: r is a shallow copy to be encoded, never freed); the caller sets
 * its response.  Both move the expiry to at least a TTL after the
 * write's own time (store_commit_ms), so that an answer stored late, or
 * after a write that waited, still outlives the retry that may be
 * waiting for it.
 */
uint64_t store_add_ms(uint64_t now_ms, uint64_t span_ms);
int store_rec_fresh(struct rec *r, const uint8_t fp[FP_SIZE],
    const uint8_t token[REC_TOKEN_SIZE], uint64_t now_ms, uint64_t lease_ms,
    uint64_t ttl_ms, uint64_t gen, const struct store_first *first);
void store_rec_takeover(const struct store *s, struct rec *r,
    const uint8_t token[REC_TOKEN_SIZE], uint64_t now_ms, uint64_t lease_ms,
    uint64_t ttl_ms);
void store_rec_complete(const struct store *s, struct rec *r,
    uint64_t now_ms, uint64_t ttl_ms);

/*
 * A key's generation: how many lifetimes of (scope, key) have ended, kept
 * by every backend apart from the records ("gens": LMDB's named database,
 * PostgreSQL's idem_gens), where a key that never ended one has none (0).
 * A lifetime ends when its record goes because its time is up: purge
 * deleting it, or a fresh claim replacing it after its expiry; each adds
 * one to the count, in the same transaction.  Nothing else does: a
 * release (nothing happened) and a record lost to a failover or a restore
 * leave it where it was.  A fresh claim records the count (after its own
 * increment, when it replaces an expired record) as its rec.gen, which the
 * application's provider key is derived from (keyed.h): a retry of a
 * claim whose record was lost claims again under the same generation and
 * the same provider key, and gets the provider's replay; a key reused
 * after it expired gets a new one.
 *
 * Claims (scope, key) in one write transaction: reads what is stored,
 * asks engine_decide, and on ENGINE_CLAIM writes a fresh in-progress
 * record owned by token (lease now+lease_ms, expiry now+ttl_ms); on
 * ENGINE_TAKEOVER rewrites the record with the new token and lease,
 * attempts+1, keeping its stage and checkpoint, and moves its expiry to
 * at least now+ttl_ms.  A fresh claim starts at first's stage and
 * checkpoint (first may be NULL: stage 0, none).  Other decisions write nothing.  out->rec is the
 * record as it now stands.
 *
 * IDEM_ELIMIT when claiming a new key would take the scope past
 * max_keys_per_scope (after purging what has expired, up to a bound):
 * nothing is claimed, and out->retry_after gets the seconds until the
 * oldest record of the store expires, at least 1.
 */
int store_claim(struct store *s, const char *scope, const char *key,
    const uint8_t fp[FP_SIZE], const uint8_t token[REC_TOKEN_SIZE],
    uint64_t now_ms, uint64_t lease_ms, uint64_t ttl_ms,
    const struct store_first *first, struct store_claim *out);

/*
 * Records a recovery point on a claim we own, and renews its lease to
 * now+lease_ms.  IDEM_ELOST when the claim is not ours any more.
 */
int store_checkpoint(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint32_t stage, const void *cp,
    size_t cplen, uint64_t now_ms, uint64_t lease_ms);

/*
 * Completes a claim we own: runs hook (may be NULL), which may write rows
 * and replace resp (idem_tx_respond), and stores the response, all in one
 * transaction, so the rows and the completion commit together or not at
 * all.  The record's expiry moves to at least now+ttl_ms: a retry of the
 * stored answer, however late the answer came, finds it for a whole TTL
 * instead of claiming afresh (and charging again).  IDEM_ELOST when the
 * claim is not ours any more (nothing written).
 */
int store_complete(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], const struct rec_response *resp,
    idem_tx_fn hook, void *hook_ctx, uint64_t now_ms, uint64_t ttl_ms);

/*
 * Deletes a claim we own, so the key can be used afresh, and runs hook
 * (may be NULL) in the same transaction.  Only for a failure after which
 * no side effect can have happened.  IDEM_ELOST.
 */
int store_release(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], idem_tx_fn hook, void *hook_ctx);

/*
 * Ends our lease now but keeps the claim and its recovery point, for a
 * failure after which a side effect may have happened: the next retry
 * takes it over and resumes.  IDEM_ELOST.
 */
int store_abandon(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint64_t now_ms);

/*
 * Deletes at most max records whose time is up, walking the expiry index
 * in order, so the cost is what has expired, not what is stored.  A
 * record is indexed by its expiry, or by the end of its lease when that
 * comes later; a claim past stage 0 (it may have left a side effect)
 * never expires and lives in a separate index (store_each_pending), so
 * no number of such claims can stand between purge and what expired.
 * *purged gets the count.
 */
int store_purge(struct store *s, uint64_t now_ms, size_t max, size_t *purged);

/* Application rows. */
int store_get(struct store *s, const char *table, const void *key,
    size_t keylen, struct buf *out);

/*
 * Inserts key -> val unless the key exists, atomically.  When it exists,
 * IDEM_EEXIST and the stored value is appended to existing (if not NULL).
 */
int store_insert_once(struct store *s, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen, struct buf *existing);

/*
 * Calls fn for each row of table whose key starts with prefix, in key
 * order (reverse order when reverse is set), until fn returns non-zero or
 * limit rows were visited (0: no limit).  key and val are valid only
 * during the call.  One read transaction.
 */
typedef int (*store_scan_fn)(void *ctx, const void *key, size_t keylen,
    const void *val, size_t vallen);
int store_scan(struct store *s, const char *table, const void *prefix,
    size_t prefixlen, int reverse, size_t limit, store_scan_fn fn, void *ctx);
/*
 * store_scan from a place: the first row visited is the first whose key
 * is at or past from in the scan's order (at or after it; at or before
 * it when reverse is set), among those that start with prefix; fromlen
 * 0 starts at the prefix's first (last) row as store_scan does.  A seek,
 * not a walk: the rows before from cost nothing.
 */
int store_scan_from(struct store *s, const char *table, const void *prefix,
    size_t prefixlen, const void *from, size_t fromlen, int reverse,
    size_t limit, store_scan_fn fn, void *ctx);

/*
 * Calls fn for each idempotency record (scope, key, record), in key
 * order, from one read transaction; records are valid only during the
 * call.  For operators: statistics and stuck claims.
 */
typedef int (*store_each_fn)(void *ctx, const char *scope, const char *key,
    const struct rec *r);
int store_each(struct store *s, store_each_fn fn, void *ctx);

/*
 * Like store_each, for the claims past stage 0 only (those that may have
 * left a side effect and wait for a retry or a completer), from their
 * own index: the cost is theirs, not the store's.
 */
int store_each_pending(struct store *s, store_each_fn fn, void *ctx);

/* Number of rows in table. */
int store_count(struct store *s, const char *table, size_t *n);

/*
 * Rewrites records in place, for key rolling: in one write transaction,
 * for each of the n (scope, key) pairs, reads the record (one that is
 * gone is skipped) and calls fn, which may change its recovery point or
 * response (borrowing memory of its own, valid until the next call) and
 * sets *changed; a changed record is written back with its index entry
 * as it was (fn changes no time or state).  IDEM_EINVAL from a backend
 * without it (the LMDB and PostgreSQL ones have it).
 */
typedef int (*store_reseal_fn)(void *ctx, const char *scope,
    const char *key, struct rec *r, int *changed);
int store_reseal(struct store *s, const char *const *scopes,
    const char *const *keys, size_t n, store_reseal_fn fn, void *ctx);

/* Rows inside a hook's transaction: see idem_tx_get in idem.h. */
int store_tx_get(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void **val, size_t *vallen);
int store_tx_put(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen);
int store_tx_del(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen);

/*
 * A backend: one function per operation above, with the same contract.
 * open sets (*out)->ops.
 */
struct store_ops {
	const char *name;
	int (*open)(const struct store_config *cfg, struct store **out);
	void (*close)(struct store *s);
	int (*lookup)(struct store *s, const char *scope, const char *key,
	    struct rec *out);
	int (*claim)(struct store *s, const char *scope, const char *key,
	    const uint8_t fp[FP_SIZE], const uint8_t token[REC_TOKEN_SIZE],
	    uint64_t now_ms, uint64_t lease_ms, uint64_t ttl_ms,
	    const struct store_first *first, struct store_claim *out);
	int (*checkpoint)(struct store *s, const char *scope, const char *key,
	    const uint8_t token[REC_TOKEN_SIZE], uint32_t stage,
	    const void *cp, size_t cplen, uint64_t now_ms, uint64_t lease_ms);
	int (*complete)(struct store *s, const char *scope, const char *key,
	    const uint8_t token[REC_TOKEN_SIZE],
	    const struct rec_response *resp, idem_tx_fn hook, void *hook_ctx,
	    uint64_t now_ms, uint64_t ttl_ms);
	int (*release)(struct store *s, const char *scope, const char *key,
	    const uint8_t token[REC_TOKEN_SIZE], idem_tx_fn hook,
	    void *hook_ctx);
	int (*abandon)(struct store *s, const char *scope, const char *key,
	    const uint8_t token[REC_TOKEN_SIZE], uint64_t now_ms);
	int (*purge)(struct store *s, uint64_t now_ms, size_t max,
	    size_t *purged);
	int (*get)(struct store *s, const char *table, const void *key,
	    size_t keylen, struct buf *out);
	int (*insert_once)(struct store *s, const char *table,
	    const void *key, size_t keylen, const void *val, size_t vallen,
	    struct buf *existing);
	int (*scan)(struct store *s, const char *table, const void *prefix,
	    size_t prefixlen, const void *from, size_t fromlen, int reverse,
	    size_t limit, store_scan_fn fn, void *ctx);
	int (*each)(struct store *s, store_each_fn fn, void *ctx);
	int (*each_pending)(struct store *s, store_each_fn fn, void *ctx);
	int (*count)(struct store *s, const char *table, size_t *n);
	int (*tx_get)(struct idem_tx *tx, const char *table, const void *key,
	    size_t keylen, const void **val, size_t *vallen);
	int (*tx_put)(struct idem_tx *tx, const char *table, const void *key,
	    size_t keylen, const void *val, size_t vallen);
	int (*tx_del)(struct idem_tx *tx, const char *table, const void *key,
	    size_t keylen);
	/* Optional (NULL: IDEM_EINVAL). */
	int (*reseal)(struct store *s, const char *const *scopes,
	    const char *const *keys, size_t n, store_reseal_fn fn, void *ctx);
};

/*
 * What idem.c does to what it reads, for readers of the store below it
 * (a simulator's checks): with seal NULL, a sealed value is refused and
 * any other left as it is.  store_unseal_response opens a completed
 * record's sealed response into r->resp, whose parts then live in *mem
 * (the caller frees it; r->mem still holds the rest).
 * store_unseal_point opens an in-progress record's recovery point in
 * place.  store_unseal_row appends a row's plaintext to out.  IDEM_ESEAL
 * (logged, with the key id), IDEM_ECORRUPT, IDEM_ENOMEM.
 */
struct sealer;
int store_unseal_response(const struct sealer *seal, const char *scope,
    const char *key, struct rec *r, void **mem);
int store_unseal_point(const struct sealer *seal, const char *scope,
    const char *key, struct rec *r);
int store_unseal_row(const struct sealer *seal, const char *table,
    const void *key, size_t keylen, const void *val, size_t vallen,
    struct buf *out);

/*
 * Key rolling (idemctl rekey).  store_reseal_scan lists the keys of the
 * rows of table that are not sealed under the handle's current key, in
 * key order, into *keys (each a u16 length and the bytes; the caller
 * frees it with buf_free), and their number into *n, from one read
 * transaction.  store_reseal_rows rewrites the rows of up to n of those
 * keys (read from keys at *off, which it advances) under the current key,
 * in one write transaction, re-reading each inside it: a row that was
 * deleted or rewritten meanwhile is left as it is.  With plaintext set,
 * a value that is not a sealed value of a key the file lists is taken
 * as stored in the clear (a store that was written before it had a key
 * file) and sealed; without it, such a value is counted in *failed and
 * left.  *moved counts the rows rewritten.  Both need a handle with a
 * key file: IDEM_EINVAL otherwise.
 */
int store_reseal_scan(struct idem *idem, const char *table, struct buf *keys,
    size_t *n);
int store_reseal_rows(struct idem *idem, const char *table,
    const struct buf *keys, size_t *off, size_t n, int plaintext,
    size_t *moved, size_t *failed);

/*
 * store_reseal_records counts the idempotency records with a recovery
 * point or a response that is not sealed under the current key.
 * store_reseal_record_scan lists them ((scope NUL key NUL) each, *n of
 * them) from one read; store_reseal_record_batch rewrites up to n of
 * them from *off (which it advances) under the current key in one write
 * transaction (store_reseal), each read again inside it: a record that
 * changed meanwhile is rewritten as it now is, one gone is skipped, one
 * that does not open is left (logged).  IDEM_EINVAL from a backend that
 * cannot rewrite records (store_reseal): those go with their TTL.
 */
int store_reseal_records(struct idem *idem, size_t *stale);
int store_reseal_record_scan(struct idem *idem, struct buf *list, size_t *n);
int store_reseal_record_batch(struct idem *idem, const struct buf *list,
    size_t *off, size_t n);

/* The LMDB backend (store_lmdb*.c). */
extern const struct store_ops store_lmdb_ops;

/*
 * The PostgreSQL backend (store_pg*.c): store_config.dir is then a
 * libpq connection URI, postgresql://... or postgres://..., which
 * store_open recognises (store_pg_uri) when no backend is named.
 */
extern const struct store_ops store_pg_ops;
int store_pg_uri(const char *where);
/*
 * Brings the database's schema to the version this library knows, each
 * migration in a transaction of its own; nothing to do is success, as
 * is a database newer than the library whose recorded compat the
 * library's version reaches (it runs on it: store_pg.c, pg_schema_fits).
 * *from and *to get the versions before and after.  -1 with a message
 * in err when it cannot connect, when a migration fails (those before
 * it stay applied, *to says up to where), or when the database is newer
 * than the library and past its range.
 */
int store_pg_migrate(const char *conninfo, int *from, int *to, char *err,
    size_t errlen);
/*
 * store_pg_migrate up to version target at most (0: all): the expand
 * step of a rolling upgrade stops before the release's contract
 * migrations.  A database at or past target is left as it is.
 * *compat gets the oldest program version that runs on the schema it
 * leaves.  -1 also when target is past the library's last migration.
 */
int store_pg_migrate_to(const char *conninfo, int target, int *from,
    int *to, int *compat, char *err, size_t errlen);
/* Deletes every record and row of a migrated database: for tests. */
int store_pg_wipe(const char *conninfo);

/*
 * The storage rules every backend keeps, each in one place (store.c), so
 * that a key, a record or a bound that one store takes the other takes
 * too.
 *
 * store_names_check: IDEM_EINVAL for a missing or empty scope or key,
 * IDEM_ETOOBIG when a name, or the longest index key made of them (the
 * expiry index's: STORE_INDEX_PREFIX bytes of time, scope, NUL, key),
 * exceeds max, the backend's key bound (LMDB's key size, 511 bytes by
 * default; the PostgreSQL backend takes the same).
 */
#define STORE_INDEX_PREFIX 8
int store_names_check(const char *scope, const char *key, size_t max);

/*
 * Where a record is indexed.  A claim past stage 0 (it may have left a
 * side effect) is pending: it never expires, and store_each_pending walks
 * it.  Every other record is in the expiry index at *at, the later of its
 * expiry and (in progress) the end of its lease, so that when purge
 * reaches the entry the record is expired by engine_decide's rule and no
 * running claim is in the way.  store_rec_pending says which;
 * store_rec_expiry_at returns 0 for a pending record (*at 0), else 1.
 */
int store_rec_pending(const struct rec *r);
int store_rec_expiry_at(const struct rec *r, uint64_t *at);

/*
 * A claim that finds its scope at its bound first purges up to this many
 * expired records, so a scope whose keys have expired is not held to its
 * bound until an operator purges.
 */
#define STORE_CLAIM_PURGE_MAX 64

/*
 * A claim's arguments, as every backend checks them before it touches
 * anything: IDEM_EINVAL for a zero lease or TTL (the very next retry
 * would run again), or a first recovery point past REC_MAX_CHECKPOINT or
 * with bytes missing.  A checkpoint's: IDEM_ETOOBIG past
 * REC_MAX_CHECKPOINT, IDEM_EINVAL for bytes missing.
 */
int store_claim_args_check(uint64_t lease_ms, uint64_t ttl_ms,
    const struct store_first *first);
int store_checkpoint_args_check(const void *cp, size_t cplen);

/*
 * Whether r is a claim in progress held by token: IDEM_OK, else
 * IDEM_ELOST.  The tokens are compared in constant time.  Every write to
 * a claim we own (checkpoint, complete, release, abandon) asks this of
 * the record it read inside its write, and writes nothing on IDEM_ELOST.
 */
int store_rec_owned(const struct rec *r, const uint8_t token[REC_TOKEN_SIZE]);

/*
 * What a write to a claim we own makes of its record cur, into *next,
 * which borrows cur's memory and the arguments' (only to be encoded, never
 * freed).  store_rec_checkpointed: the new stage and recovery point, the
 * lease renewed to now+lease_ms.  store_rec_abandoned: the lease ended
 * now, so that the next retry takes the claim over (engine_decide treats
 * lease_ms <= now as over).  store_rec_completed: store_rec_complete's
 * record with its response, the one the completion's hook chose
 * (tx->respond, idem_tx_respond) when it chose one, else resp;
 * IDEM_ENOMEM, IDEM_EINVAL from rec_response_borrow.
 */
void store_rec_checkpointed(const struct rec *cur, uint32_t stage,
    const void *cp, size_t cplen, uint64_t now_ms, uint64_t lease_ms,
    struct rec *next);
void store_rec_abandoned(const struct rec *cur, uint64_t now_ms,
    struct rec *next);
int store_rec_completed(const struct store *s, const struct rec *cur,
    const struct rec_response *resp, const struct idem_tx *tx,
    uint64_t now_ms, uint64_t ttl_ms, struct rec *next);

/*
 * The Retry-After of a claim refused at its scope's bound (IDEM_ELIMIT):
 * the seconds until the first entry of the expiry index comes due (at,
 * when have is set; the TTL when the index is empty), rounded up, at
 * least 1 and at most the TTL: the soonest the scope can have room.
 */
uint32_t store_limit_retry(int have, uint64_t at, uint64_t now_ms,
    uint64_t ttl_ms);

/*
 * Whether name may be an application table: 1 to STORE_TABLE_NAME_MAX
 * bytes, none of the library's own names.
 */
#define STORE_TABLE_NAME_MAX 63
int store_table_name_ok(const char *name);

/*
 * Both backends' bounded waits run on CLOCK_MONOTONIC, a clock no one
 * can set back: store_cond_init makes a condition variable whose timed
 * waits use it, and store_deadline sets *at to us microseconds from now
 * on it, for pthread_cond_timedwait.
 */
struct timespec;
int store_cond_init(pthread_cond_t *c);
void store_deadline(struct timespec *at, uint64_t us);

#endif
