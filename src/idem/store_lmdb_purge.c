/* SPDX-License-Identifier: MIT */
/*
 * store_lmdb_purge.c: the LMDB backend's purge of expired records, which
 * walks the expiry index from its oldest entry, so it costs what has
 * expired, not what is stored (store_lmdb.h).
 */
#include <stdint.h>
#include <string.h>

#include <lmdb.h>

#include "buf.h"
#include "err.h"
#include "record.h"
#include "store_lmdb.h"

/*
 * lstore_purge may step over index entries that delete no record (stale
 * ones, a record it cannot decode); it steps over at most this many
 * beyond max, so one call stays one short transaction.
 */
#define STORE_PURGE_SLACK 64

enum store_purge_step {
	STORE_PURGE_STOP,    /* the index has nothing older than now */
	STORE_PURGE_DROP,    /* the index entry was stale: deleted alone */
	STORE_PURGE_DELETE   /* record and index entry deleted */
};

/*
 * An expiry entry that does not name its record's index entry is stale
 * (the record is gone, was claimed afresh, or moved on): it is dropped,
 * and the record's own entry is written again, which changes nothing
 * when it is there already and mends a store written before claims past
 * stage 0 had an index of their own.  A record that cannot be decoded
 * loses its entry and stays, for an operator to look at: purge deletes
 * nothing it cannot read, and nothing it cannot read stops purge.
 */
static int
lstore_purge_stale(struct lstore *s, MDB_txn *txn, MDB_cursor *c,
    const struct store_key *k, const struct rec *r,
    enum store_purge_step *step)
{
	int rc;

	*step = STORE_PURGE_DROP;
	if ((rc = lstore_err(mdb_cursor_del(c, 0))) != IDEM_OK)
		return rc;
	return r == NULL ? IDEM_OK : lstore_index_move(s, txn, k, NULL, r);
}

/*
 * Decides about the expiry entry ek under the cursor, and deletes what
 * should go.  ek is a copy: deleting under the cursor invalidates the
 * bytes LMDB handed out.
 */
static int
lstore_purge_entry(struct lstore *s, MDB_txn *txn, MDB_cursor *c,
    const struct store_key *ek, uint64_t now_ms, enum store_purge_step *step)
{
	struct store_key k;
	struct rec r;
	MDB_val key;
	uint64_t due, at;
	int rc;

	if (ek->len <= STORE_EXPIRY_PREFIX) {
		/* Not an entry this file writes; it points nowhere. */
		*step = STORE_PURGE_DROP;
		return lstore_err(mdb_cursor_del(c, 0));
	}
	due = be_get(ek->data, 8);
	if (due > now_ms) {
		*step = STORE_PURGE_STOP;
		return IDEM_OK;
	}
	k.len = ek->len - STORE_EXPIRY_PREFIX;
	memcpy(k.data, ek->data + STORE_EXPIRY_PREFIX, k.len);
	rc = lstore_rec_get(s, txn, &k, &r);
	if (rc == IDEM_ECORRUPT || rc == IDEM_ENOTFOUND)
		return lstore_purge_stale(s, txn, c, &k, NULL, step);
	if (rc != IDEM_OK)
		return rc;
	if (lstore_index_of(&r, &at) != STORE_INDEX_EXPIRY || at != due) {
		rc = lstore_purge_stale(s, txn, c, &k, &r, step);
		rec_free(&r);
		return rc;
	}
	/*
	 * Its time is up: a completed record or a stage-0 claim past its
	 * expiry and its lease, which engine_decide counts as absent.  Its
	 * lifetime ends, and the key's generation counts it (store.h).
	 */
	rec_free(&r);
	key.mv_size = k.len;
	key.mv_data = k.data;
	if ((rc = lstore_err(mdb_del(txn, s->e->keys, &key, NULL))) !=
	    IDEM_OK ||
	    (rc = lstore_gen_end(s, txn, &k)) != IDEM_OK ||
	    (rc = lstore_quota_add(s, txn, &k, -1)) != IDEM_OK)
		return rc;
	*step = STORE_PURGE_DELETE;
	return lstore_err(mdb_cursor_del(c, 0));
}

/*
 * Walks the expiry index from its oldest entry.  After a delete the
 * cursor is placed again with MDB_SET_RANGE on the deleted key, which
 * finds its successor without relying on where mdb_cursor_del leaves the
 * cursor.
 */
static int
lstore_purge_walk(struct lstore *s, MDB_txn *txn, MDB_cursor *c,
    uint64_t now_ms, size_t max, size_t *purged, int *changed)
{
	enum store_purge_step step;
	struct store_key ek;
	MDB_val key, val;
	size_t visits, limit;
	int rc;

	limit = max > SIZE_MAX - STORE_PURGE_SLACK ? SIZE_MAX :
	    max + STORE_PURGE_SLACK;
	rc = lstore_err(mdb_cursor_get(c, &key, &val, MDB_FIRST));
	for (visits = 0; rc == IDEM_OK && *purged < max && visits < limit;
	    visits++) {
		if (key.mv_size > sizeof(ek.data))
			return IDEM_ECORRUPT;
		ek.len = key.mv_size;
		memcpy(ek.data, key.mv_data, key.mv_size);
		if ((rc = lstore_purge_entry(s, txn, c, &ek, now_ms, &step)) !=
		    IDEM_OK)
			return rc;
		if (step == STORE_PURGE_STOP)
			return IDEM_OK;
		*changed = 1;
		if (step == STORE_PURGE_DELETE)
			(*purged)++;
		key.mv_size = ek.len;
		key.mv_data = ek.data;
		rc = lstore_err(mdb_cursor_get(c, &key, &val, MDB_SET_RANGE));
	}
	return rc == IDEM_ENOTFOUND ? IDEM_OK : rc;
}

/* Purges inside txn: the work of lstore_purge, for any write transaction. */
int
lstore_purge_txn(struct lstore *s, MDB_txn *txn, uint64_t now_ms, size_t max,
    size_t *purged, int *changed)
{
	MDB_cursor *c;
	int rc;

	if ((rc = lstore_err(mdb_cursor_open(txn, s->e->expiry, &c))) !=
	    IDEM_OK)
		return rc;
	rc = lstore_purge_walk(s, txn, c, now_ms, max, purged, changed);
	mdb_cursor_close(c);
	return rc;
}

struct store_purge_job {
	uint64_t now_ms;
	size_t max;
	size_t purged;
};

static int
lstore_purge_run(struct lstore *s, MDB_txn *txn, void *arg, int *wrote)
{
	struct store_purge_job *a = arg;
	int rc;

	a->purged = 0;
	if ((rc = lstore_purge_txn(s, txn, a->now_ms, a->max, &a->purged,
	    wrote)) != IDEM_OK)
		*wrote = 0;
	return rc;
}

int
lstore_purge(struct store *base, uint64_t now_ms, size_t max, size_t *purged)
{
	struct lstore *s = lstore_of(base);
	struct store_purge_job a = { now_ms, max, 0 };
	int rc;

	*purged = 0;
	if (max == 0)
		return IDEM_OK;
	if ((rc = lstore_write(s, lstore_purge_run, &a)) == IDEM_OK)
		*purged = a.purged;
	return rc;
}
