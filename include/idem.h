/* SPDX-License-Identifier: MIT */
/*
 * idem.h: the idempotency-key library.  This is its only public header:
 * it needs nothing but the standard headers, and every name it declares
 * starts with idem_ or IDEM_.
 *
 * An application opens one handle per store (idem_open), registering its
 * own tables by name.  A keyed request runs like this:
 *
 *	idem_fingerprint(...)                 what the request looks like
 *	idem_begin(...)                       replay, 409, 422, 429, or a claim
 *	    IDEM_RUN / IDEM_RESUME:           the caller owns the claim
 *	        idem_checkpoint(...)          a recovery point, if it needs one
 *	        ... the work, outside any transaction ...
 *	        idem_finish(...)              stored answer + rows, one commit
 *	     or idem_release(...)             failed, nothing happened
 *	     or idem_abandon(...)             failed, something may have
 *	idem_call_free(...)
 *
 * Work that has no effect outside the store (its rows) may instead use
 * idem_once, which claims, stores the work's rows and its answer in one
 * write.
 *
 * A claim holds a lease; a caller that dies (or outlives its lease) loses
 * it to the next retry, which gets IDEM_RESUME with the recovery point.
 * Every write to a claim checks that the claim is still the caller's:
 * IDEM_ELOST when another attempt has taken it over (nothing written).
 *
 * Every write is durable when the call returns IDEM_OK.  Writes of one
 * process are group-committed: several callers' writes share one
 * transaction and one sync.  A handle may be used by many threads at
 * once.  Open it after fork, in the process that uses it.
 *
 * Times are milliseconds since the Unix epoch, from the clock the options
 * give (or the system's).
 *
 * The interface is stable from 0.2.0 on, the first release of the
 * shared library libidem.so.1: a program built with this header runs on
 * every later libidem.so.1.  Later releases add functions, and grow
 * struct idem_options at its end only (idem_open reads as much of it as
 * the caller's options.size covers); they never remove a function,
 * change its arguments or what its results mean, renumber an enum, add
 * a verdict, or change another struct.  They may append error codes
 * (IDEM_ERR__MAX grows): a caller treats any non-zero return as a
 * failure and names it with idem_strerror.  A program built with a newer
 * header needs a library at least as new: an older one lacks the newer
 * functions, and refuses options larger than it knows (IDEM_EINVAL).  A
 * change that would break any of this makes a new soname instead
 * (libidem.so.2).
 */
#ifndef IDEM_H
#define IDEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * This header's version.  IDEM_VERSION_NUMBER is MAJOR * 10000 +
 * MINOR * 100 + PATCH (MINOR and PATCH stay below 100), so that versions
 * compare as integers: a program may check at run time that the library
 * is at least the header it was built with,
 * idem_version_number() >= IDEM_VERSION_NUMBER.
 */
#define IDEM_VERSION_MAJOR 0
#define IDEM_VERSION_MINOR 6
#define IDEM_VERSION_PATCH 0
#define IDEM_VERSION_NUMBER (IDEM_VERSION_MAJOR * 10000 + \
	IDEM_VERSION_MINOR * 100 + IDEM_VERSION_PATCH)

/*
 * The library's version, which may be newer than the header's: as a
 * static string "MAJOR.MINOR.PATCH" (never NULL, never to be freed), and
 * as IDEM_VERSION_NUMBER encodes it.  Cannot fail.
 */
const char *idem_version(void);
int idem_version_number(void);

/*
 * Every function that can fail returns IDEM_OK (0) or one of these.
 * Backend codes (LMDB's, errno) never cross this interface.  The values
 * never change; later releases may append codes before IDEM_ERR__MAX,
 * which therefore only bounds the codes of the header a program was
 * built with.
 */
enum idem_err {
	IDEM_OK = 0,
	IDEM_ENOMEM,    /* an allocation failed */
	IDEM_EINVAL,    /* an argument or an input is invalid */
	IDEM_ENOTFOUND, /* no such key, record or row */
	IDEM_EEXIST,    /* the row exists already */
	IDEM_EFULL,     /* the store is full */
	IDEM_EIO,       /* the store failed to read or write */
	IDEM_EROFS,     /* the store is read-only or not writable by us */
	IDEM_ECORRUPT,  /* a stored record could not be decoded */
	IDEM_ELOST,     /* the claim is no longer ours: taken over or gone */
	IDEM_ETOOBIG,   /* a value exceeds a limit */
	IDEM_ELIMIT,    /* the scope holds as many live keys as it may */
	IDEM_EREFUSED,  /* an application hook refused (see idem_tx_fn) */
	IDEM_ESEAL,     /* a sealed value did not open: wrong or unknown key,
	                   changed bytes, or moved to another place */
	IDEM_EBUSY,     /* the store cannot serve this now: retry later */
	IDEM_EUNSAFE,   /* the store's commits would not wait for a
	                   synchronous standby: nothing is written */
	IDEM_ERR__MAX
};

/*
 * A static, human-readable description of err: never NULL, never to be
 * freed; "unknown error" for a code this library does not know.
 */
const char *idem_strerror(int err);

/* The request fingerprint. */
#define IDEM_FP_SIZE 32

enum idem_fp_mode {
	IDEM_FP_CANONICAL = 0, /* body is the canonical form of a JSON body */
	IDEM_FP_RAW = 1        /* body is the bytes as received */
};

/*
 * SHA-256 over a domain tag naming mode and four fields, method, path,
 * query and body, each preceded by its length as 8 bytes big-endian, so
 * no two different requests hash the same input.  NULL strings count as
 * empty.  Cannot fail.
 */
void idem_fingerprint(enum idem_fp_mode mode, const char *method,
    const char *path, const char *query, const void *body, size_t bodylen,
    uint8_t out[IDEM_FP_SIZE]);

/* The most headers a stored response keeps, and recovery point bytes. */
#define IDEM_MAX_HEADERS 8
#define IDEM_MAX_POINT 4096
/*
 * The most bytes of an answer idem_finish stores: its body and its
 * headers' names and values.  A larger answer is not stored in part:
 * idem_finish (or the hook's idem_tx_respond) refuses it with
 * IDEM_ETOOBIG, and the claim is still the caller's (since 0.4.0).
 */
#define IDEM_MAX_ANSWER (1024 * 1024)

struct idem_header {
	const char *name;
	const char *value;
};

/*
 * A final answer, as stored for replay: the status, the headers clients
 * rely on (Content-Type, Location, ETag: never request headers, never
 * per-request ones) and the body.
 */
struct idem_response {
	int status;
	const struct idem_header *headers;
	size_t nheaders;       /* at most IDEM_MAX_HEADERS */
	const void *body;
	size_t bodylen;
};

/* A clock for the library: milliseconds since the Unix epoch. */
typedef uint64_t (*idem_clock_fn)(void *ctx);

/*
 * What idem_open is told.  Start from IDEM_OPTIONS_INIT, which sets size
 * and zeroes the rest (every field's zero is its default), then set the
 * fields you need:
 *
 *	struct idem_options opt = IDEM_OPTIONS_INIT;
 *
 *	opt.dir = "/var/lib/app/store";
 *
 * or, in C, name size in the initialiser:
 * { .size = sizeof(struct idem_options), .dir = ... }.  Later releases
 * append fields; a program built before them passes a smaller size, and
 * idem_open takes the fields it does not cover as zero.
 */
struct idem_options {
	size_t size;               /* sizeof(struct idem_options) */
	/*
	 * The store: an LMDB directory (created if missing), or a
	 * PostgreSQL database named by a libpq URI, postgresql://... or
	 * postgres://..., whose schema idemctl migrate created.
	 */
	const char *dir;
	size_t map_size;           /* bytes; 0: the backend's default */
	uint64_t lease_ms;         /* how long a claim is held (0: 30 s) */
	uint64_t ttl_ms;           /* how long a key is kept (0: 24 h) */
	/*
	 * The most live keys one scope may hold (0: no bound): past it a
	 * new key is IDEM_LIMITED, so one scope cannot fill the store.
	 */
	uint64_t max_keys_per_scope;
	/*
	 * The most microseconds a group commit waits for more writes when
	 * the last one carried more than one; it stops waiting once as many
	 * are queued as that one carried (0: never waits).
	 */
	unsigned commit_delay_us;
	/*
	 * The application's tables, by name, NULL-terminated (NULL: none).
	 * Names are 1 to 63 bytes; "keys", "expiry", "pending" and "quota"
	 * are the library's own.  At most IDEM_MAX_TABLES.
	 */
	const char *const *tables;
	idem_clock_fn clock;       /* NULL: the system clock */
	void *clock_ctx;
	int read_only;             /* no writes: for operators' tools */
	/*
	 * A key file (made by idemctl new-secret): when set, stored
	 * responses, recovery points and rows are sealed at rest with
	 * XChaCha20-Poly1305 under its first key, and opened under any key
	 * it lists; a value that does not open is IDEM_ESEAL.  NULL: the
	 * store keeps them in the clear.
	 */
	const char *secret_file;
	/*
	 * PostgreSQL only (0: the defaults, 5 s, 5000 ms, 2000 ms and
	 * 2000 ms): seconds to open a session when the URI sets no
	 * connect_timeout, milliseconds a statement may run and wait for a
	 * lock, milliseconds a call may wait for a free session.  A wait
	 * past its bound fails the call with IDEM_EBUSY (or IDEM_EIO for a
	 * session that cannot be opened) and writes nothing.
	 */
	unsigned pg_connect_timeout_s;
	unsigned pg_statement_timeout_ms;
	unsigned pg_lock_timeout_ms;
	unsigned pg_pool_wait_ms;
	/*
	 * Bytes of memory the handle may hold completed answers in, to
	 * replay them without reading the store (0: none, every replay
	 * reads it).  Only an answer read from the store as completed is
	 * kept, and only until the record's expiry by the handle's clock;
	 * the least recently replayed go first when the bytes are spent.
	 * A stored answer never changes before it expires, so a replay
	 * from memory is the one the store would give, 422 included
	 * (doc/DESIGN.md, "The replay cache", says what an operator's
	 * changes to the store do to it).  Since 0.4.0.
	 */
	size_t replay_cache_bytes;
	/* New fields go here, at the end, and only here. */
};

/*
 * Options with size set and every other field zero, as an initialiser:
 * C99, or C++20 (before C++20, set size after value-initialising:
 * idem_options opt = {}; opt.size = sizeof opt;).
 */
#define IDEM_OPTIONS_INIT { .size = sizeof(struct idem_options) }

#define IDEM_MAX_TABLES 16

struct idem;

/*
 * Opens the store in opt->dir.  idem_open reads the first opt->size
 * bytes of *opt and nothing past them; the fields they do not cover
 * count as zero.  On IDEM_OK *out is the caller's, to be closed with
 * idem_close; opt and the strings it points to are copied, so they may
 * go as soon as idem_open returns.  Errors, *out NULL: IDEM_EINVAL (opt
 * or opt->dir NULL; a bad option; a key file that cannot be read, does
 * not parse or that others may read; opt->size smaller than the options
 * of 0.2.0, or larger than this library's: a program built with a newer
 * idem.h than the library, which idem_open also says on standard error),
 * IDEM_ENOTFOUND (read-only and no store there), IDEM_EROFS,
 * IDEM_ENOMEM, IDEM_EIO.
 */
int idem_open(const struct idem_options *opt, struct idem **out);

/*
 * Closes the store and frees the handle: every call made on it must have
 * been freed (idem_call_free) and no thread may be using it.  idem may
 * be NULL.
 */
void idem_close(struct idem *idem);

/* The time by the handle's clock.  Cannot fail. */
uint64_t idem_now_ms(const struct idem *idem);

/*
 * An application's view of the store inside one of its write
 * transactions, given to hooks (idem_tx_fn).  Rows are addressed by
 * table name and key bytes (1 to 511 bytes in the LMDB backend).
 */
struct idem_tx;

/*
 * A hook runs inside the store's write transaction, atomically with the
 * write it belongs to (a claim, a completion, a release): what it reads
 * cannot change before that write commits, and what it writes commits
 * with it or not at all.  It returns IDEM_OK, or an error that undoes
 * everything the transaction did for this call and is returned by the
 * call (IDEM_EREFUSED for a refusal of the application's own).
 *
 * Writes are group-committed, and a batch in which one write fails is
 * run again one write per transaction: so a hook may run more than once
 * for one call.  It must depend only on what it reads through tx and on
 * ctx, start afresh each time (reset what it records in ctx), have no
 * effect outside tx, and not block.
 */
typedef int (*idem_tx_fn)(void *ctx, struct idem_tx *tx);

/*
 * Points *val at the row's value: valid until the hook writes through tx
 * or returns, whichever comes first; copy it to keep it.  IDEM_ENOTFOUND,
 * IDEM_EINVAL (no such table), IDEM_ETOOBIG, IDEM_EIO.
 */
int idem_tx_get(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void **val, size_t *vallen);

/*
 * Writes key -> val (copied), replacing any value; a value read through
 * tx before is no longer valid.  IDEM_EINVAL (no such table, an empty
 * key, val NULL with vallen not 0), IDEM_ETOOBIG (the key), IDEM_EFULL,
 * IDEM_EIO, IDEM_ENOMEM (sealing the value).
 */
int idem_tx_put(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen);

/*
 * Deletes the row.  IDEM_ENOTFOUND when there is none, IDEM_EINVAL (no
 * such table, an empty key), IDEM_ETOOBIG (the key), IDEM_EIO.
 */
int idem_tx_del(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen);

/*
 * In idem_finish's hook only: stores resp instead of the response given
 * to idem_finish (a decision taken on what the transaction reads).  resp
 * and what it points to must live until idem_finish returns.  IDEM_EINVAL
 * in any other hook, or for a response with too many headers.
 */
int idem_tx_respond(struct idem_tx *tx, const struct idem_response *resp);

/* What idem_begin decided. */
enum idem_verdict {
	IDEM_RUN = 0,  /* claimed afresh: run the request */
	IDEM_RESUME,   /* an earlier attempt's lease ran out: taken over */
	IDEM_REPLAY,   /* completed: answer idem_call_response */
	IDEM_CONFLICT, /* in progress: 409, Retry-After idem_call_retry_after */
	IDEM_MISMATCH, /* the key was used with another request: 422 */
	IDEM_LIMITED,  /* a new key past the scope's bound: 429 + Retry-After */
	IDEM_VERDICT__MAX
};

/*
 * "claim", "takeover", "replay", "conflict", "mismatch", "limited": a
 * static string, never NULL; "unknown" for any other value.
 */
const char *idem_strverdict(enum idem_verdict v);

/*
 * What a fresh claim starts with, filled by an idem_start_fn: its first
 * recovery point (stage and bytes; the bytes must live until idem_begin
 * returns), and a hook run in the claim's own write transaction (e.g.
 * reserving an amount), on a fresh claim only, never on a take-over.
 */
struct idem_start {
	uint32_t stage;
	const void *point;
	size_t len;            /* at most IDEM_MAX_POINT */
	idem_tx_fn hook;       /* NULL: none */
	void *hook_ctx;
};

/*
 * Called by idem_begin only when it is about to claim, never for a
 * replay, a conflict or a mismatch answered from a read, so work done
 * for a claim (a new id) is not done for those.  When the write finds a
 * take-over instead, what it filled goes unused: the claim keeps its
 * recovery point and the hook does not run.  out is zeroed before.
 * Returns IDEM_OK, or an error that idem_begin returns.
 */
typedef int (*idem_start_fn)(void *ctx, struct idem_start *out);

/* One keyed request, from idem_begin to idem_call_free. */
struct idem_call;

/*
 * Decides what to do with a request for (scope, key) whose fingerprint
 * is fp, and claims the key where it should.  Replays, conflicts and
 * mismatches are answered from a read transaction without the write
 * lock (a replay or a mismatch of an answer the handle's replay cache
 * holds, from memory: replay_cache_bytes); a claim is decided again
 * inside the write transaction.  start
 * may be NULL (a fresh claim at stage 0, no hook).  scope is the
 * authenticated principal (never a header the client controls); neither
 * scope nor key may be empty or hold a NUL.
 *
 * On IDEM_OK *out is the caller's (idem_call_free), with a verdict; on
 * IDEM_RUN and IDEM_RESUME the caller owns the claim and must end it with
 * idem_finish, idem_release or idem_abandon (or die: the lease hands it
 * to the next retry).  Other errors leave nothing claimed and *out NULL:
 * IDEM_EFULL, IDEM_EIO, IDEM_EROFS, IDEM_ENOMEM, IDEM_EINVAL,
 * IDEM_ETOOBIG (key too long), IDEM_ECORRUPT (the stored record does not
 * decode), IDEM_ESEAL (a stored answer or recovery point that does not
 * open), the start function's or its hook's error.  No error is a
 * verdict: a record that cannot be read is never taken for none.
 */
int idem_begin(struct idem *idem, const char *scope, const char *key,
    const uint8_t fp[IDEM_FP_SIZE], idem_start_fn start, void *start_ctx,
    struct idem_call **out);

enum idem_verdict idem_call_verdict(const struct idem_call *c);

/*
 * IDEM_REPLAY: the stored answer, valid until idem_call_free.  NULL for
 * any other verdict.
 */
const struct idem_response *idem_call_response(const struct idem_call *c);

/*
 * IDEM_CONFLICT: seconds a duplicate should wait, from how long claimed
 * requests typically run (a moving average of the handle's claims, or of
 * every worker's where the responder shares one) and how long this one
 * has run, at least 1 and never past its lease.  IDEM_LIMITED: seconds
 * until the store's oldest key expires, at least 1.  0 otherwise.
 */
uint32_t idem_call_retry_after(const struct idem_call *c);

/*
 * The claim's recovery point (IDEM_RUN, IDEM_RESUME): its stage, and its
 * bytes (*len set; NULL when none), valid until the next checkpoint or
 * idem_call_free.
 */
uint32_t idem_call_stage(const struct idem_call *c);
const void *idem_call_point(const struct idem_call *c, size_t *len);

/*
 * When the key was first claimed in this lifetime of the key (kept
 * across take-overs; a key claimed afresh after it expired has a new
 * one): with scope and key, it names the work for outside systems.
 */
uint64_t idem_call_created_ms(const struct idem_call *c);

/*
 * The key's generation when this lifetime began: how many lifetimes of
 * (scope, key) had ended before it (a record purged or replaced after its
 * expiry; the store keeps the count apart from the record, so a record
 * lost to a failover or a restore does not take it along), kept across
 * take-overs.  IDEM_GEN_LEGACY for a claim made by a release that kept
 * none, whose outside work is named by its creation time instead.  With
 * scope, key and the fingerprint it names the work for outside systems
 * in a way that survives the loss of the record.
 */
#define IDEM_GEN_LEGACY UINT64_MAX
uint64_t idem_call_generation(const struct idem_call *c);

/* The fingerprint the claim was made with (IDEM_FP_SIZE bytes). */
const uint8_t *idem_call_fingerprint(const struct idem_call *c);

/* 1 for the first attempt, +1 per take-over. */
uint32_t idem_call_attempts(const struct idem_call *c);

/*
 * Records a recovery point (stage, len bytes of point, copied) on the
 * claim and renews its lease.  IDEM_ELOST (counted), IDEM_ETOOBIG (more
 * than IDEM_MAX_POINT), IDEM_EINVAL (not a claim), store errors.
 */
int idem_checkpoint(struct idem_call *c, uint32_t stage, const void *point,
    size_t len);

/*
 * Completes the claim: in one write transaction, runs hook (may be
 * NULL), which may read and write application rows and replace the
 * response (idem_tx_respond), then stores the response; the rows and the
 * stored answer commit together or not at all, and are on disk when this
 * returns IDEM_OK.  The key stays replayable for at least the TTL from
 * now.  IDEM_ELOST (counted; nothing written), IDEM_ETOOBIG (an answer
 * past IDEM_MAX_ANSWER; nothing written), the hook's error, store
 * errors; on an error other than IDEM_ELOST the claim is still the
 * caller's to release or abandon.
 */
int idem_finish(struct idem_call *c, const struct idem_response *resp,
    idem_tx_fn hook, void *hook_ctx);

/*
 * Ends the claim after a failure that left no side effect: the key can be
 * used afresh.  hook (may be NULL) runs in the same transaction, to undo
 * what the claim's own hook reserved.  When the release cannot be
 * written the claim is abandoned instead (without the hook), so the
 * retry need not wait for the lease; the release's error is returned.
 * IDEM_ELOST.
 */
int idem_release(struct idem_call *c, idem_tx_fn hook, void *hook_ctx);

/*
 * Ends the lease now but keeps the claim and its recovery point, after a
 * failure that may have left a side effect: the next retry takes it
 * over (IDEM_RESUME) at once.  IDEM_ELOST, IDEM_EINVAL (not a claim),
 * the store's errors (IDEM_EFULL, IDEM_EIO, IDEM_EROFS, IDEM_ENOMEM);
 * after one the lease still runs out in its time.
 */
int idem_abandon(struct idem_call *c);

/*
 * Work with no effect outside the store, answered in one write (since
 * 0.5.0): a stand-in for a remote service, a decision taken on the
 * request alone.  Where idem_begin would claim, idem_once asks fn for
 * the answer and a hook, then in one write transaction claims the key,
 * runs the hook (the work's rows) and stores the answer completed: one
 * durable commit where idem_begin and idem_finish take two, and no
 * claim in progress that a duplicate would see as a 409.
 */
struct idem_outcome {
	/*
	 * The answer to store and give; it and what it points to live
	 * until idem_once returns.
	 */
	struct idem_response resp;
	/*
	 * Run in the write transaction, on a fresh claim only (NULL:
	 * none): the work's rows.  idem_tx_respond is refused there.
	 */
	idem_tx_fn hook;
	void *hook_ctx;
};

/*
 * Makes the answer, out zeroed before.  Called only when the key is
 * free to claim, never for a replay, a conflict or a mismatch answered
 * from a read; but before the write, so two requests for one new key at
 * once may both be asked, and only the one whose write claims the key
 * has its hook run and its answer stored (the other replays it).  So
 * what fn does may not reach outside: its effects go in the hook.
 * Returns IDEM_OK, or an error that idem_once returns (nothing stored).
 */
typedef int (*idem_once_fn)(void *ctx, struct idem_outcome *out);

/*
 * Decides as idem_begin does, and where it would claim, asks fn (above)
 * and writes the claim, the hook's rows and the answer in one
 * transaction, durable when this returns IDEM_OK.  *out (the caller's,
 * idem_call_free) never holds a claim; its verdict is IDEM_RUN (the
 * answer fn made is stored), IDEM_RESUME (a claim of idem_begin's whose
 * lease ran out was taken over and completed with fn's answer: two
 * writes, as for idem_finish), IDEM_REPLAY (idem_call_response: the
 * answer stored by an earlier call, or by the request that won the
 * key), IDEM_CONFLICT (a claim of idem_begin's in progress), IDEM_
 * MISMATCH or IDEM_LIMITED, as idem_begin gives them.  Errors, *out
 * NULL, nothing stored and the key as it was (for a take-over, whose
 * completion failed: abandoned, so that the next retry takes it over at
 * once): idem_begin's, fn's or its hook's, IDEM_ETOOBIG (an answer past
 * IDEM_MAX_ANSWER), and the store's errors for the write.
 */
int idem_once(struct idem *idem, const char *scope, const char *key,
    const uint8_t fp[IDEM_FP_SIZE], idem_once_fn fn, void *ctx,
    struct idem_call **out);

/*
 * Frees c.  A claim still held is not ended (its lease will run out);
 * the run time of a claimed call feeds the typical run time behind
 * idem_call_retry_after.  c may be NULL.
 */
void idem_call_free(struct idem_call *c);

/*
 * Application rows outside keyed calls.  Each is its own transaction:
 * reads from a read transaction, writes durable on IDEM_OK.
 */

/*
 * Copies the row's value into *val (malloc'd; the caller frees it with
 * free(3); NULL for an empty value) and its length into *vallen.
 * IDEM_ENOTFOUND (no such row: only then), IDEM_EINVAL (no such table),
 * IDEM_ETOOBIG, IDEM_EIO, IDEM_ENOMEM, IDEM_ESEAL and IDEM_ECORRUPT (a
 * sealed value that does not open).
 */
int idem_row_get(struct idem *idem, const char *table, const void *key,
    size_t keylen, void **val, size_t *vallen);

/*
 * Inserts key -> val unless the key exists, atomically.  When it exists:
 * IDEM_EEXIST, and if existing is not NULL the stored value is copied
 * into *existing (malloc'd, freed by the caller) and *existinglen.
 * Otherwise the write's errors (IDEM_EFULL, IDEM_EIO, IDEM_EROFS, ...),
 * or the value's (IDEM_ESEAL when the stored one does not open).
 */
int idem_row_insert_once(struct idem *idem, const char *table,
    const void *key, size_t keylen, const void *val, size_t vallen,
    void **existing, size_t *existinglen);

/*
 * Calls fn for each row of table whose key starts with prefix (prefixlen
 * 0: every row), in key order (reverse when reverse is set), until fn
 * returns non-zero or limit rows were visited (0: no limit).  key and
 * val are valid only during the call.  One read transaction.  fn's
 * non-zero return ends the scan with IDEM_OK: a caller that stops for a
 * reason of its own keeps the reason itself.  IDEM_EINVAL (no such
 * table), IDEM_EIO, IDEM_ENOMEM, IDEM_ESEAL and IDEM_ECORRUPT (a sealed
 * value that does not open: the scan ends there).
 */
typedef int (*idem_row_fn)(void *ctx, const void *key, size_t keylen,
    const void *val, size_t vallen);
int idem_row_scan(struct idem *idem, const char *table, const void *prefix,
    size_t prefixlen, int reverse, size_t limit, idem_row_fn fn, void *ctx);

/*
 * idem_row_scan from a place (since 0.6.0): the first row visited is
 * the first whose key is at or past from (fromlen bytes) in the scan's
 * order, at or after it, or at or before it when reverse is set, among
 * the rows whose key starts with prefix; fromlen 0 is idem_row_scan.
 * The rows before the place are not read: a page deep in a long list
 * costs what its own rows cost.  Keys compare as bytes, a key that is
 * a prefix of another first.  The same errors as idem_row_scan, and
 * IDEM_EINVAL for a NULL from with fromlen > 0.
 */
int idem_row_scan_from(struct idem *idem, const char *table,
    const void *prefix, size_t prefixlen, const void *from, size_t fromlen,
    int reverse, size_t limit, idem_row_fn fn, void *ctx);

/* The number of rows in table.  IDEM_EINVAL (no such table), IDEM_EIO. */
int idem_row_count(struct idem *idem, const char *table, size_t *n);

/*
 * Claims in progress, for a completer: a program that carries to their
 * end the claims whose client gave up (a timeout, a crashed worker), by
 * taking each over as a retry would, idem_begin with the claim's own
 * fingerprint once its lease has run out (IDEM_RESUME), and going on
 * from its recovery point.  Since 0.3.0.
 */

/* Which claims idem_pending_each walks. */
enum idem_pending_walk {
	/*
	 * The claims past stage 0, those that may have left a side effect,
	 * from their own index: the cost is theirs, not the store's.
	 */
	IDEM_PENDING_STARTED = 0,
	/*
	 * Every claim in progress, stage 0 too: a walk of every key, whose
	 * cost is the store's size.
	 */
	IDEM_PENDING_ALL = 1
};

/* One claim in progress, as idem_pending_each hands it to its function. */
struct idem_pending;

/*
 * Called for each claim; a non-zero return ends the walk (idem_pending_
 * each then returns IDEM_OK).  p, and every pointer its functions give,
 * is valid only until fn returns: copy what outlives it.  fn may not call
 * the handle's other functions (the walk holds a read transaction or a
 * session of the store): gather what it needs, and take claims over
 * after the walk.
 */
typedef int (*idem_pending_fn)(void *ctx, struct idem_pending *p);

/*
 * Calls fn for each claim in progress that which names, in the order of
 * (scope, key), from one read of the store: a claim taken, ended or
 * taken over meanwhile is seen as it was.  Errors: IDEM_EINVAL (fn NULL,
 * which unknown), IDEM_EIO, IDEM_EBUSY, IDEM_ENOMEM, IDEM_ECORRUPT (a
 * stored record that does not decode: the walk ends there, after the
 * claims before it).
 */
int idem_pending_each(struct idem *idem, enum idem_pending_walk which,
    idem_pending_fn fn, void *ctx);

/*
 * The claim's scope and key (NUL-terminated), and the fingerprint it was
 * made with (IDEM_FP_SIZE bytes): what idem_begin takes to take it over.
 */
const char *idem_pending_scope(const struct idem_pending *p);
const char *idem_pending_key(const struct idem_pending *p);
const uint8_t *idem_pending_fingerprint(const struct idem_pending *p);

/* When its lease ends, or ended: a take-over waits until then. */
uint64_t idem_pending_lease_ms(const struct idem_pending *p);

/*
 * When its key expires, as the store keeps it: a claim at stage 0 may be
 * purged once both this and its lease's end have passed; one past stage 0
 * is never purged, whatever this says, and waits for a take-over.  A
 * take-over moves it to at least a TTL after itself.  Since 0.4.0.
 */
uint64_t idem_pending_expires_ms(const struct idem_pending *p);

/* As idem_call_created_ms and idem_call_attempts say. */
uint64_t idem_pending_created_ms(const struct idem_pending *p);
uint32_t idem_pending_attempts(const struct idem_pending *p);

/*
 * Its recovery point: the stage, and the bytes, opened when the store
 * seals them (*point NULL and *len 0 when there are none), valid until fn
 * returns.  The stage cannot fail; the bytes may: IDEM_ESEAL (they do not
 * open under the handle's key file, said on standard error), IDEM_ENOMEM,
 * and then *point is NULL and *len 0.
 */
uint32_t idem_pending_stage(const struct idem_pending *p);
int idem_pending_point(struct idem_pending *p, const void **point,
    size_t *len);

#ifdef __cplusplus
}
#endif

#endif
