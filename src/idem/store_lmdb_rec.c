/* SPDX-License-Identifier: MIT */
/*
 * store_lmdb_rec.c: records of the LMDB backend, with their index
 * entries and their scopes' counts, which change together (see
 * store_lmdb.h).
 */
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "buf.h"
#include "err.h"
#include "record.h"
#include "store_lmdb.h"

/*
 * Reads and decodes the record of k into *r (rec_free), zeroed when
 * there is none: IDEM_ENOTFOUND.
 */
int
lstore_rec_get(struct lstore *s, MDB_txn *txn, const struct store_key *k,
    struct rec *r)
{
	MDB_val key = { .mv_size = k->len, .mv_data = (void *)k->data };
	MDB_val val;
	int rc;

	memset(r, 0, sizeof(*r));
	if ((rc = lstore_err(mdb_get(txn, s->e->keys, &key, &val))) != IDEM_OK)
		return rc;
	return rec_decode(val.mv_data, val.mv_size, r);
}

int
lstore_rec_put(struct lstore *s, MDB_txn *txn, const struct store_key *k,
    const struct rec *r)
{
	MDB_val key = { .mv_size = k->len, .mv_data = (void *)k->data };
	MDB_val val;
	struct buf b = BUF_INIT;
	int rc;

	if ((rc = rec_encode(r, &b)) != IDEM_OK)
		goto out;
	val.mv_size = b.len;
	val.mv_data = b.data;
	rc = lstore_err(mdb_put(txn, s->e->keys, &key, &val, 0));
out:
	buf_free(&b);
	return rc;
}

static int
lstore_expiry_put(struct lstore *s, MDB_txn *txn, uint64_t expires_ms,
    const struct store_key *k)
{
	struct store_key ek;
	MDB_val key, val = { .mv_size = 0, .mv_data = NULL };

	lstore_expiry_make(expires_ms, k, &ek);
	key.mv_size = ek.len;
	key.mv_data = ek.data;
	return lstore_err(mdb_put(txn, s->e->expiry, &key, &val, 0));
}

/* An index entry already missing is no error: the goal is its absence. */
static int
lstore_expiry_del(struct lstore *s, MDB_txn *txn, uint64_t expires_ms,
    const struct store_key *k)
{
	struct store_key ek;
	MDB_val key;
	int rc;

	lstore_expiry_make(expires_ms, k, &ek);
	key.mv_size = ek.len;
	key.mv_data = ek.data;
	rc = lstore_err(mdb_del(txn, s->e->expiry, &key, NULL));
	return rc == IDEM_ENOTFOUND ? IDEM_OK : rc;
}

/* The index entry of r: store_rec_expiry_at's rule. */
enum store_index
lstore_index_of(const struct rec *r, uint64_t *at)
{
	return store_rec_expiry_at(r, at) ? STORE_INDEX_EXPIRY :
	    STORE_INDEX_PENDING;
}

static int
lstore_pending_put(struct lstore *s, MDB_txn *txn, const struct store_key *k)
{
	MDB_val key = { .mv_size = k->len, .mv_data = (void *)k->data };
	MDB_val val = { .mv_size = 0, .mv_data = NULL };

	return lstore_err(mdb_put(txn, s->e->pending, &key, &val, 0));
}

static int
lstore_pending_del(struct lstore *s, MDB_txn *txn, const struct store_key *k)
{
	MDB_val key = { .mv_size = k->len, .mv_data = (void *)k->data };
	int rc;

	rc = lstore_err(mdb_del(txn, s->e->pending, &key, NULL));
	return rc == IDEM_ENOTFOUND ? IDEM_OK : rc;
}

/*
 * Moves the index entry of k from where old put it to where new puts it.
 * old NULL: the record is new; new NULL: the record is being deleted.
 */
int
lstore_index_move(struct lstore *s, MDB_txn *txn, const struct store_key *k,
    const struct rec *old, const struct rec *new)
{
	enum store_index oi = STORE_INDEX_EXPIRY, ni = STORE_INDEX_EXPIRY;
	uint64_t oat = 0, nat = 0;
	int rc;

	if (old != NULL)
		oi = lstore_index_of(old, &oat);
	if (new != NULL)
		ni = lstore_index_of(new, &nat);
	if (old != NULL && new != NULL && oi == ni && oat == nat)
		return IDEM_OK;
	if (old != NULL) {
		rc = oi == STORE_INDEX_PENDING ? lstore_pending_del(s, txn, k) :
		    lstore_expiry_del(s, txn, oat, k);
		if (rc != IDEM_OK)
			return rc;
	}
	if (new == NULL)
		return IDEM_OK;
	return ni == STORE_INDEX_PENDING ? lstore_pending_put(s, txn, k) :
	    lstore_expiry_put(s, txn, nat, k);
}

/*
 * A be64 counter of dbi (a scope's count, a key's generation); 0 when it
 * has no row, IDEM_ECORRUPT when its value is not eight bytes.
 */
static int
lstore_u64_get(MDB_txn *txn, MDB_dbi dbi, const void *k, size_t klen,
    uint64_t *n)
{
	MDB_val key = { .mv_size = klen, .mv_data = (void *)k };
	MDB_val val;
	int rc;

	*n = 0;
	rc = lstore_err(mdb_get(txn, dbi, &key, &val));
	if (rc == IDEM_ENOTFOUND)
		return IDEM_OK;
	if (rc != IDEM_OK)
		return rc;
	if (val.mv_size != 8)
		return IDEM_ECORRUPT;
	*n = be_get(val.mv_data, 8);
	return IDEM_OK;
}

/* The scope's live-record count; 0 when it has no row. */
int
lstore_quota_get(struct lstore *s, MDB_txn *txn, const uint8_t *scope,
    size_t slen, uint64_t *n)
{
	return lstore_u64_get(txn, s->e->quota, scope, slen, n);
}

/*
 * Adds delta (+1 or -1) to the count of the scope of record key k.  The
 * count never goes below 0: a store written before counts were kept
 * holds records that were never counted.
 */
int
lstore_quota_add(struct lstore *s, MDB_txn *txn, const struct store_key *k,
    int delta)
{
	const uint8_t *nul = memchr(k->data, '\0', k->len);
	size_t slen = nul == NULL ? k->len : (size_t)(nul - k->data);
	MDB_val key = { .mv_size = slen, .mv_data = (void *)k->data };
	MDB_val val;
	uint8_t be[8];
	uint64_t n;
	int rc;

	if ((rc = lstore_quota_get(s, txn, k->data, slen, &n)) != IDEM_OK)
		return rc;
	if (delta > 0)
		n++;
	else if (n > 0)
		n--;
	if (n == 0) {
		rc = lstore_err(mdb_del(txn, s->e->quota, &key, NULL));
		return rc == IDEM_ENOTFOUND ? IDEM_OK : rc;
	}
	be_put(be, 8, n);
	val.mv_size = sizeof(be);
	val.mv_data = be;
	return lstore_err(mdb_put(txn, s->e->quota, &key, &val, 0));
}

int
lstore_gen_get(struct lstore *s, MDB_txn *txn, const struct store_key *k,
    uint64_t *gen)
{
	*gen = 0;
	if (!s->e->has_gens)
		return IDEM_OK;
	return lstore_u64_get(txn, s->e->gens, k->data, k->len, gen);
}

int
lstore_gen_end(struct lstore *s, MDB_txn *txn, const struct store_key *k)
{
	MDB_val key = { .mv_size = k->len, .mv_data = (void *)k->data };
	MDB_val val;
	uint8_t be[8];
	uint64_t gen;
	int rc;

	if (!s->e->has_gens)
		return IDEM_EROFS;
	if ((rc = lstore_gen_get(s, txn, k, &gen)) != IDEM_OK)
		return rc;
	/* REC_GEN_LEGACY is never a generation this store counts to. */
	if (gen < REC_GEN_LEGACY - 1)
		gen++;
	be_put(be, 8, gen);
	val.mv_size = sizeof(be);
	val.mv_data = be;
	return lstore_err(mdb_put(txn, s->e->gens, &key, &val, 0));
}

/*
 * Loads the record of k into *r and checks that it is an in-progress
 * claim held by token.  IDEM_ELOST (and *r empty) when it is gone,
 * completed, or taken over by someone else.
 */
int
lstore_rec_own(struct lstore *s, MDB_txn *txn, const struct store_key *k,
    const uint8_t token[REC_TOKEN_SIZE], struct rec *r)
{
	int rc;

	rc = lstore_rec_get(s, txn, k, r);
	if (rc == IDEM_ENOTFOUND)
		return IDEM_ELOST;
	if (rc != IDEM_OK)
		return rc;
	if ((rc = store_rec_owned(r, token)) != IDEM_OK)
		rec_free(r);
	return rc;
}
