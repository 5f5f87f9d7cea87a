/* SPDX-License-Identifier: MIT */
/*
 * store_lmdb_claim.c: the LMDB backend's keyed operations: lookup, the
 * claim (with the scope bound and the room check), and the writes to a
 * claim we own, which share one transaction shape (lstore_own_run).
 */
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "buf.h"
#include "engine.h"
#include "err.h"
#include "fault.h"
#include "record.h"
#include "store_lmdb.h"

/*
 * New keys are refused (IDEM_EFULL) once the map is this full, in
 * percent, so that the rest is kept for the writes that must not fail
 * for want of room: the completion of a claim that charged, checkpoints,
 * releases and purge itself, which needs pages to delete.
 */
#define STORE_CLAIM_FILL_MAX 90

int
lstore_lookup(struct store *base, const char *scope, const char *key,
    struct rec *out)
{
	struct lstore *s = lstore_of(base);
	struct store_key k;
	MDB_txn *txn;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = lstore_key_make(s, scope, key, &k)) != IDEM_OK)
		return rc;
	if ((rc = lstore_txn_begin(s, 0, &txn)) != IDEM_OK)
		return rc;
	/* rec_decode copies, so the record outlives the transaction. */
	rc = lstore_rec_get(s, txn, &k, out);
	lstore_txn_abort(txn);
	return rc;
}

/*
 * Replaces whatever is in *r (an expired record, or nothing) with a fresh
 * claim of the key's generation, and writes it, its index entry and, for
 * a new key, its scope's count; an expired record's end counts in the
 * key's generation first.
 */
static int
lstore_claim_fresh(struct lstore *s, MDB_txn *txn, const struct store_key *k,
    int stale, const uint8_t fp[FP_SIZE], const uint8_t token[REC_TOKEN_SIZE],
    uint64_t now_ms, uint64_t lease_ms, uint64_t ttl_ms,
    const struct store_first *first, struct rec *r)
{
	/*
	 * Only the fields lstore_index_of reads are used from old: its
	 * pointers go with r's memory.
	 */
	struct rec old = *r;
	uint64_t gen;
	int rc;

	/* An expired record's lifetime ends here (store.h). */
	if ((stale && (rc = lstore_gen_end(s, txn, k)) != IDEM_OK) ||
	    (rc = lstore_gen_get(s, txn, k, &gen)) != IDEM_OK)
		return rc;
	if ((rc = store_rec_fresh(r, fp, token, now_ms, lease_ms, ttl_ms,
	    gen, first)) != IDEM_OK)
		return rc;
	if ((rc = lstore_rec_put(s, txn, k, r)) != IDEM_OK ||
	    (rc = lstore_index_move(s, txn, k, stale ? &old : NULL, r)) !=
	    IDEM_OK)
		return rc;
	return stale ? IDEM_OK : lstore_quota_add(s, txn, k, 1);
}

/*
 * A take-over resumes the original request: the claim keeps its creation
 * time (and so its provider key).  Its expiry moves to at least
 * now+ttl_ms, so that the answer this attempt stores stays for a whole
 * TTL after the retry that may still be waiting for it.
 */
static int
lstore_claim_takeover(struct lstore *s, MDB_txn *txn, const struct store_key *k,
    const uint8_t token[REC_TOKEN_SIZE], uint64_t now_ms, uint64_t lease_ms,
    uint64_t ttl_ms, struct rec *r)
{
	struct rec old = *r;
	int rc;

	store_rec_takeover(&s->base, r, token, now_ms, lease_ms, ttl_ms);
	if ((rc = lstore_rec_put(s, txn, k, r)) != IDEM_OK)
		return rc;
	return lstore_index_move(s, txn, k, &old, r);
}

/*
 * Pages on LMDB's freelist, which later transactions reuse: each entry
 * of the free database (handle 0) lists page numbers after a count.
 * LMDB opens that database to read transactions only, so this takes one
 * of its own (MDB_NOTLS lets a thread hold it beside its write
 * transaction, and nested in it, it never waits for the remap gate); it
 * sees the last commit, close enough for a threshold.
 */
static size_t
lstore_free_pages(struct lstore *s)
{
	MDB_txn *txn;
	MDB_cursor *c;
	MDB_val k, v;
	size_t n = 0, cnt;
	int op = MDB_FIRST;

	if (lstore_txn_begin(s, 0, &txn) != IDEM_OK)
		return 0;
	if (mdb_cursor_open(txn, 0, &c) == 0) {
		while (mdb_cursor_get(c, &k, &v, op) == 0) {
			op = MDB_NEXT;
			if (v.mv_size >= sizeof(cnt)) {
				memcpy(&cnt, v.mv_data, sizeof(cnt));
				n += cnt;
			}
		}
		mdb_cursor_close(c);
	}
	lstore_txn_abort(txn);
	return n;
}

/*
 * IDEM_EFULL when the map is past STORE_CLAIM_FILL_MAX percent used.  The
 * high-water mark is read first, and the freelist walked only when that
 * is past the line, so a store with room pays nothing.
 */
static int
lstore_room_for_claim(struct lstore *s)
{
	MDB_envinfo info;
	MDB_stat st;
	size_t pages, used, free;

	if (mdb_env_info(s->e->env, &info) != 0 ||
	    mdb_env_stat(s->e->env, &st) != 0 || st.ms_psize == 0)
		return IDEM_OK;
	pages = info.me_mapsize / st.ms_psize;
	used = info.me_last_pgno + 1;
	if (used / STORE_CLAIM_FILL_MAX < pages / 100)
		return IDEM_OK;
	free = lstore_free_pages(s);
	used = used > free ? used - free : 0;
	return used / STORE_CLAIM_FILL_MAX < pages / 100 ? IDEM_OK : IDEM_EFULL;
}

/*
 * The Retry-After of a claim refused at its scope's bound, from the
 * first entry of the expiry index (store_limit_retry).
 */
static uint32_t
lstore_limit_retry(struct lstore *s, MDB_txn *txn, uint64_t now_ms,
    uint64_t ttl_ms)
{
	uint64_t at = 0;
	MDB_cursor *c;
	MDB_val key, val;
	int have = 0;

	if (mdb_cursor_open(txn, s->e->expiry, &c) == 0) {
		if (mdb_cursor_get(c, &key, &val, MDB_FIRST) == 0 &&
		    key.mv_size >= STORE_EXPIRY_PREFIX) {
			at = be_get(key.mv_data, 8);
			have = 1;
		}
		mdb_cursor_close(c);
	}
	return store_limit_retry(have, at, now_ms, ttl_ms);
}

/*
 * IDEM_OK when k's scope may hold one more record, IDEM_ELIMIT (with
 * *retry_after) when it may not.  A scope at its bound first purges what
 * has expired, which *changed reports, so that the caller commits that
 * work even when it claims nothing.
 */
static int
lstore_limit_check(struct lstore *s, MDB_txn *txn, const struct store_key *k,
    uint64_t now_ms, uint64_t ttl_ms, uint32_t *retry_after, int *changed)
{
	const uint8_t *nul = memchr(k->data, '\0', k->len);
	size_t slen = (size_t)(nul - k->data), purged = 0;
	uint64_t n;
	int rc;

	if ((rc = lstore_quota_get(s, txn, k->data, slen, &n)) != IDEM_OK)
		return rc;
	if (n < s->max_keys)
		return IDEM_OK;
	if ((rc = lstore_purge_txn(s, txn, now_ms, STORE_CLAIM_PURGE_MAX, &purged,
	    changed)) != IDEM_OK ||
	    (rc = lstore_quota_get(s, txn, k->data, slen, &n)) != IDEM_OK)
		return rc;
	if (n < s->max_keys)
		return IDEM_OK;
	*retry_after = lstore_limit_retry(s, txn, now_ms, ttl_ms);
	return IDEM_ELIMIT;
}

/*
 * A fresh claim completed in its own transaction (store_first.done): its
 * record cur written again completed with resp, and moved to the expiry
 * index at its expiry.
 */
static int
lstore_claim_done(struct lstore *s, MDB_txn *txn, const struct store_key *k,
    const struct rec_response *resp, uint64_t now_ms, uint64_t ttl_ms,
    const struct rec *cur)
{
	struct rec done;
	int rc;

	if (fault_point("store_complete"))
		return IDEM_EFULL;
	if ((rc = store_rec_completed(&s->base, cur, resp, NULL, now_ms,
	    ttl_ms, &done)) != IDEM_OK ||
	    (rc = lstore_rec_put(s, txn, k, &done)) != IDEM_OK)
		return rc;
	return lstore_index_move(s, txn, k, cur, &done);
}

/* lstore_claim's arguments and result, for its job. */
struct store_claim_job {
	const struct store_key *k;
	const uint8_t *fp;
	const uint8_t *token;
	const struct store_first *first;
	uint64_t now_ms, lease_ms, ttl_ms;
	struct store_claim *out;
};

static int
lstore_claim_run(struct lstore *s, MDB_txn *txn, void *arg, int *wrote)
{
	struct store_claim_job *a = arg;
	struct store_claim *out = a->out;
	int rc, found, purged = 0;

	/* A batch redone one job at a time runs this twice (store_job_fn). */
	rec_free(&out->rec);
	memset(out, 0, sizeof(*out));
	/*
	 * The caller may have looked from a read transaction already; that
	 * view may be stale.  This read, under the write lock, is the one
	 * that decides (doc/DESIGN.md, "Storage").
	 */
	rc = lstore_rec_get(s, txn, a->k, &out->rec);
	if (rc != IDEM_OK && rc != IDEM_ENOTFOUND)
		return rc;
	found = rc == IDEM_OK;
	out->decision = engine_decide(found ? &out->rec : NULL, a->fp,
	    a->now_ms, &out->retry_after);
	if ((out->decision == ENGINE_CLAIM ||
	    out->decision == ENGINE_TAKEOVER) && fault_point("store_claim"))
		return IDEM_EFULL;
	switch (out->decision) {
	case ENGINE_CLAIM:
		if (!found && s->max_keys > 0 &&
		    (rc = lstore_limit_check(s, txn, a->k, a->now_ms, a->ttl_ms,
		    &out->retry_after, &purged)) != IDEM_OK) {
			/* Keep what the purge on the way did. */
			*wrote = rc == IDEM_ELIMIT && purged;
			return rc;
		}
		if ((rc = lstore_room_for_claim(s)) != IDEM_OK)
			return rc;
		rc = lstore_claim_fresh(s, txn, a->k, found, a->fp, a->token,
		    a->now_ms, a->lease_ms, a->ttl_ms, a->first, &out->rec);
		if (rc == IDEM_OK && a->first != NULL &&
		    a->first->hook != NULL &&
		    (rc = lstore_run_hook(s, txn, a->first->hook,
		    a->first->hook_ctx, NULL)) != IDEM_OK) {
			/* The claim is written: undo it with the batch. */
			*wrote = LSTORE_TAINTED;
			return rc;
		}
		if (rc == IDEM_OK && a->first != NULL &&
		    a->first->done != NULL &&
		    (rc = lstore_claim_done(s, txn, a->k, a->first->done,
		    a->now_ms, a->ttl_ms, &out->rec)) != IDEM_OK) {
			*wrote = LSTORE_TAINTED;
			return rc;
		}
		break;
	case ENGINE_TAKEOVER:
		rc = lstore_claim_takeover(s, txn, a->k, a->token, a->now_ms,
		    a->lease_ms, a->ttl_ms, &out->rec);
		break;
	default:
		return IDEM_OK;
	}
	if (rc != IDEM_OK)
		return rc;
	fault_point("store_claim_commit");
	*wrote = 1;
	return IDEM_OK;
}

int
lstore_claim(struct store *base, const char *scope, const char *key,
    const uint8_t fp[FP_SIZE], const uint8_t token[REC_TOKEN_SIZE],
    uint64_t now_ms, uint64_t lease_ms, uint64_t ttl_ms,
    const struct store_first *first, struct store_claim *out)
{
	struct lstore *s = lstore_of(base);
	struct store_key k;
	struct store_claim_job a = { &k, fp, token, first, now_ms, lease_ms,
	    ttl_ms, out };
	uint32_t retry_after;
	int rc, grew;

	memset(out, 0, sizeof(*out));
	if ((rc = store_claim_args_check(lease_ms, ttl_ms, first)) != IDEM_OK)
		return rc;
	if ((rc = lstore_key_make(s, scope, key, &k)) != IDEM_OK)
		return rc;
	rc = lstore_write(s, lstore_claim_run, &a);
	/*
	 * Full by this process's map: another process may have given the
	 * store a larger one, which its writes have not yet made this
	 * process meet (MDB_MAP_RESIZED).  Adopt it and claim again; at
	 * most once a second, since the adoption remaps with the gate
	 * exclusive, and a store that is full indeed refuses every claim.
	 */
	if (rc == IDEM_EFULL && !lstore_txn_held(s->e) &&
	    lstore_map_adopt_due(s->e) &&
	    lstore_map_adopt(s->e, &grew) == 0 && grew) {
		rec_free(&out->rec);
		memset(out, 0, sizeof(*out));
		rc = lstore_write(s, lstore_claim_run, &a);
	}
	if (rc == IDEM_OK)
		return IDEM_OK;
	retry_after = out->retry_after;
	rec_free(&out->rec);
	memset(out, 0, sizeof(*out));
	if (rc == IDEM_ELIMIT)
		out->retry_after = retry_after;
	return rc;
}

/*
 * A write to a claim we own: the key, the owner's token, and what the
 * operation does once the claim is found to be ours (cur, which the
 * operation does not free).
 */
struct store_own_job;
typedef int (*store_own_fn)(struct lstore *s, MDB_txn *txn,
    struct store_own_job *a, const struct rec *cur, int *wrote);

struct store_own_job {
	struct store_key k;
	const uint8_t *token;
	store_own_fn fn;
	uint64_t now_ms;
	uint64_t span_ms;                /* lease or TTL, by operation */
	uint32_t stage;                  /* checkpoint */
	const void *cp;
	size_t cplen;
	const struct rec_response *resp; /* complete */
	idem_tx_fn hook;                 /* complete, release */
	void *hook_ctx;
};

/*
 * The transaction that checkpoint, complete, release and abandon share:
 * load the record and check, inside the write transaction, that it is
 * an in-progress claim held by our token (IDEM_ELOST, nothing written,
 * when it is not), then do the operation's part.
 */
static int
lstore_own_run(struct lstore *s, MDB_txn *txn, void *arg, int *wrote)
{
	struct store_own_job *a = arg;
	struct rec cur;
	int rc;

	if ((rc = lstore_rec_own(s, txn, &a->k, a->token, &cur)) != IDEM_OK)
		return rc;
	rc = a->fn(s, txn, a, &cur, wrote);
	rec_free(&cur);
	return rc;
}

/* Runs a->fn on the claim (scope, key) that token owns, in a group commit. */
static int
lstore_own_write(struct lstore *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], struct store_own_job *a)
{
	int rc;

	if (token == NULL)
		return IDEM_EINVAL;
	if ((rc = lstore_key_make(s, scope, key, &a->k)) != IDEM_OK)
		return rc;
	a->token = token;
	return lstore_write(s, lstore_own_run, a);
}

static int
lstore_checkpoint_op(struct lstore *s, MDB_txn *txn, struct store_own_job *a,
    const struct rec *cur, int *wrote)
{
	struct rec next;
	int rc;

	if (fault_point("store_checkpoint"))
		return IDEM_EFULL;
	store_rec_checkpointed(cur, a->stage, a->cp, a->cplen, a->now_ms,
	    a->span_ms, &next);
	if ((rc = lstore_rec_put(s, txn, &a->k, &next)) != IDEM_OK ||
	    (rc = lstore_index_move(s, txn, &a->k, cur, &next)) != IDEM_OK)
		return rc;
	*wrote = 1;
	return IDEM_OK;
}

int
lstore_checkpoint(struct store *base, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint32_t stage, const void *cp,
    size_t cplen, uint64_t now_ms, uint64_t lease_ms)
{
	struct store_own_job a;
	int rc;

	if ((rc = store_checkpoint_args_check(cp, cplen)) != IDEM_OK)
		return rc;
	memset(&a, 0, sizeof(a));
	a.fn = lstore_checkpoint_op;
	a.now_ms = now_ms;
	a.span_ms = lease_ms;
	a.stage = stage;
	a.cp = cp;
	a.cplen = cplen;
	return lstore_own_write(lstore_of(base), scope, key, token, &a);
}

/*
 * The completed record (store_rec_completed) moves from wherever it was
 * indexed to the expiry index at its (possibly later) expiry.  The hook
 * runs first, so the response it chooses (idem_tx_respond) is the one
 * stored.
 */
static int
lstore_complete_op(struct lstore *s, MDB_txn *txn, struct store_own_job *a,
    const struct rec *cur, int *wrote)
{
	struct idem_tx tx;
	struct rec done;
	int rc;

	if (fault_point("store_complete"))
		return IDEM_EFULL;
	memset(&tx, 0, sizeof(tx));
	tx.may_respond = 1;
	if (a->hook != NULL &&
	    (rc = lstore_run_hook(s, txn, a->hook, a->hook_ctx, &tx)) !=
	    IDEM_OK) {
		*wrote = LSTORE_TAINTED;
		return rc;
	}
	rc = store_rec_completed(&s->base, cur, a->resp, &tx, a->now_ms,
	    a->span_ms, &done);
	if (rc != IDEM_OK ||
	    (rc = lstore_rec_put(s, txn, &a->k, &done)) != IDEM_OK ||
	    (rc = lstore_index_move(s, txn, &a->k, cur, &done)) != IDEM_OK) {
		if (a->hook != NULL)
			*wrote = LSTORE_TAINTED;
		return rc;
	}
	fault_point("store_complete_commit");
	*wrote = 1;
	return IDEM_OK;
}

int
lstore_complete(struct store *base, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], const struct rec_response *resp,
    idem_tx_fn hook, void *hook_ctx, uint64_t now_ms, uint64_t ttl_ms)
{
	struct store_own_job a;

	if (resp == NULL)
		return IDEM_EINVAL;
	memset(&a, 0, sizeof(a));
	a.fn = lstore_complete_op;
	a.now_ms = now_ms;
	a.span_ms = ttl_ms;
	a.resp = resp;
	a.hook = hook;
	a.hook_ctx = hook_ctx;
	return lstore_own_write(lstore_of(base), scope, key, token, &a);
}

static int
lstore_release_op(struct lstore *s, MDB_txn *txn, struct store_own_job *a,
    const struct rec *cur, int *wrote)
{
	MDB_val dkey = { .mv_size = a->k.len, .mv_data = (void *)a->k.data };
	int rc;

	if (a->hook != NULL &&
	    (rc = lstore_run_hook(s, txn, a->hook, a->hook_ctx, NULL)) !=
	    IDEM_OK) {
		*wrote = LSTORE_TAINTED;
		return rc;
	}
	if ((rc = lstore_err(mdb_del(txn, s->e->keys, &dkey, NULL))) !=
	    IDEM_OK ||
	    (rc = lstore_index_move(s, txn, &a->k, cur, NULL)) != IDEM_OK ||
	    (rc = lstore_quota_add(s, txn, &a->k, -1)) != IDEM_OK) {
		if (a->hook != NULL)
			*wrote = LSTORE_TAINTED;
		return rc;
	}
	*wrote = 1;
	return IDEM_OK;
}

int
lstore_release(struct store *base, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], idem_tx_fn hook, void *hook_ctx)
{
	struct store_own_job a;

	memset(&a, 0, sizeof(a));
	a.fn = lstore_release_op;
	a.hook = hook;
	a.hook_ctx = hook_ctx;
	return lstore_own_write(lstore_of(base), scope, key, token, &a);
}

static int
lstore_abandon_op(struct lstore *s, MDB_txn *txn, struct store_own_job *a,
    const struct rec *cur, int *wrote)
{
	struct rec next;
	int rc;

	store_rec_abandoned(cur, a->now_ms, &next);
	if ((rc = lstore_rec_put(s, txn, &a->k, &next)) != IDEM_OK ||
	    (rc = lstore_index_move(s, txn, &a->k, cur, &next)) != IDEM_OK)
		return rc;
	*wrote = 1;
	return IDEM_OK;
}

int
lstore_abandon(struct store *base, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint64_t now_ms)
{
	struct store_own_job a;

	memset(&a, 0, sizeof(a));
	a.fn = lstore_abandon_op;
	a.now_ms = now_ms;
	return lstore_own_write(lstore_of(base), scope, key, token, &a);
}

/* Key rolling (store_reseal): records rewritten in place. */
struct store_reseal_job {
	const char *const *scopes;
	const char *const *keys;
	size_t n;
	store_reseal_fn fn;
	void *ctx;
};

static int
lstore_reseal_run(struct lstore *s, MDB_txn *txn, void *arg, int *wrote)
{
	struct store_reseal_job *a = arg;
	struct store_key k;
	struct rec cur;
	size_t i;
	int rc = IDEM_OK, changed;

	for (i = 0; i < a->n && rc == IDEM_OK; i++) {
		if ((rc = lstore_key_make(s, a->scopes[i], a->keys[i], &k)) !=
		    IDEM_OK)
			break;
		if ((rc = lstore_rec_get(s, txn, &k, &cur)) == IDEM_ENOTFOUND) {
			rc = IDEM_OK;
			continue;
		}
		if (rc != IDEM_OK)
			break;
		changed = 0;
		if ((rc = a->fn(a->ctx, a->scopes[i], a->keys[i], &cur,
		    &changed)) == IDEM_OK && changed) {
			if ((rc = lstore_rec_put(s, txn, &k, &cur)) == IDEM_OK)
				*wrote = 1;
		}
		rec_free(&cur);
	}
	if (rc != IDEM_OK && *wrote)
		*wrote = LSTORE_TAINTED;
	return rc;
}

int
lstore_reseal(struct store *base, const char *const *scopes,
    const char *const *keys, size_t n, store_reseal_fn fn, void *ctx)
{
	struct store_reseal_job a = { scopes, keys, n, fn, ctx };

	return lstore_write(lstore_of(base), lstore_reseal_run, &a);
}
