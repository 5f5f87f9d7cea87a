/* SPDX-License-Identifier: MIT */
/*
 * store_lmdb_rows.c: the LMDB backend's application rows (get, insert
 * once, scan, count, and the rows of a hook's transaction) and its walks
 * over records for operators (store_lmdb.h).
 */
#include <stdint.h>
#include <string.h>

#include <lmdb.h>

#include "buf.h"
#include "err.h"
#include "record.h"
#include "store_lmdb.h"

/* Finds the table and checks the row key: IDEM_EINVAL, IDEM_ETOOBIG. */
static int
lstore_row_key(const struct lstore *s, const char *table, const void *key,
    size_t keylen, MDB_dbi *dbi)
{
	int rc;

	if ((rc = lstore_table(s, table, dbi)) != IDEM_OK)
		return rc;
	if (key == NULL || keylen == 0)
		return IDEM_EINVAL;
	if (keylen > s->e->maxkey)
		return IDEM_ETOOBIG;
	return IDEM_OK;
}

/* Appends the row's value to out (the caller's buffer). */
int
lstore_get(struct store *base, const char *table, const void *key,
    size_t keylen, struct buf *out)
{
	struct lstore *s = lstore_of(base);
	MDB_dbi dbi;
	MDB_txn *txn;
	MDB_val k = { .mv_size = keylen, .mv_data = (void *)key };
	MDB_val v;
	int rc;

	if ((rc = lstore_row_key(s, table, key, keylen, &dbi)) != IDEM_OK)
		return rc;
	if ((rc = lstore_txn_begin(s, 0, &txn)) != IDEM_OK)
		return rc;
	if ((rc = lstore_err(mdb_get(txn, dbi, &k, &v))) ==
	    IDEM_OK)
		rc = buf_append(out, v.mv_data, v.mv_size);
	lstore_txn_abort(txn);
	return rc;
}

struct store_insert_job {
	MDB_dbi dbi;
	MDB_val k, v;
	struct buf *existing;
	size_t existing_len;    /* its length before the job, for a rerun */
};

static int
lstore_insert_run(struct lstore *s, MDB_txn *txn, void *arg, int *wrote)
{
	struct store_insert_job *a = arg;
	MDB_val v = a->v;
	int rc;

	(void)s;
	if (a->existing != NULL)
		a->existing->len = a->existing_len;
	rc = lstore_err(mdb_put(txn, a->dbi, &a->k, &v, MDB_NOOVERWRITE));
	if (rc == IDEM_EEXIST) {
		/* On MDB_KEYEXIST LMDB points v at the stored value. */
		if (a->existing != NULL &&
		    buf_append(a->existing, v.mv_data, v.mv_size) != IDEM_OK)
			rc = IDEM_ENOMEM;
		return rc;
	}
	if (rc == IDEM_OK)
		*wrote = 1;
	return rc;
}

int
lstore_insert_once(struct store *base, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen, struct buf *existing)
{
	struct lstore *s = lstore_of(base);
	struct store_insert_job a;
	int rc;

	if ((rc = lstore_row_key(s, table, key, keylen, &a.dbi)) != IDEM_OK)
		return rc;
	if (vallen > 0 && val == NULL)
		return IDEM_EINVAL;
	a.k.mv_size = keylen;
	a.k.mv_data = (void *)key;
	a.v.mv_size = vallen;
	a.v.mv_data = (void *)val;
	a.existing = existing;
	a.existing_len = existing != NULL ? existing->len : 0;
	return lstore_write(s, lstore_insert_run, &a);
}

static int
lstore_has_prefix(const MDB_val *key, const void *prefix, size_t prefixlen)
{
	if (prefixlen == 0)
		return 1;
	return key->mv_size >= prefixlen &&
	    memcmp(key->mv_data, prefix, prefixlen) == 0;
}

/*
 * Places c on the last key that starts with prefix, if any.  Every such
 * key sorts before the prefix's successor (the prefix with its trailing
 * 0xff bytes dropped and its last byte incremented), so find the first
 * key at or after the successor and step back once.  A prefix of only
 * 0xff bytes, or none, has no successor: start from the last key.
 */
static int
lstore_scan_last(MDB_cursor *c, const void *prefix, size_t prefixlen,
    MDB_val *key, MDB_val *val)
{
	uint8_t succ[STORE_KEY_BUF];
	size_t n = prefixlen;
	int rc;

	if (prefixlen > 0)
		memcpy(succ, prefix, prefixlen);
	while (n > 0 && succ[n - 1] == 0xff)
		n--;
	if (n == 0)
		return mdb_cursor_get(c, key, val, MDB_LAST);
	succ[n - 1]++;
	key->mv_size = n;
	key->mv_data = succ;
	rc = mdb_cursor_get(c, key, val, MDB_SET_RANGE);
	if (rc == MDB_NOTFOUND)
		return mdb_cursor_get(c, key, val, MDB_LAST);
	if (rc != 0)
		return rc;
	return mdb_cursor_get(c, key, val, MDB_PREV);
}

static int
lstore_scan_first(MDB_cursor *c, const void *prefix, size_t prefixlen,
    MDB_val *key, MDB_val *val)
{
	if (prefixlen == 0)
		return mdb_cursor_get(c, key, val, MDB_FIRST);
	key->mv_size = prefixlen;
	key->mv_data = (void *)prefix;
	return mdb_cursor_get(c, key, val, MDB_SET_RANGE);
}

/* LMDB's default order of keys: bytes, then the shorter first. */
static int
lstore_key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen;
}

/*
 * Places c on the first key at or past from in the scan's order: the
 * first at or after it, or, reverse, the last at or before it.  A key
 * before the prefix's rows (forward) or past them (reverse) starts at
 * the prefix's first or last row instead.
 */
static int
lstore_scan_at(MDB_cursor *c, const void *prefix, size_t prefixlen,
    const void *from, size_t fromlen, int reverse, MDB_val *key, MDB_val *val)
{
	int rc;

	if (!reverse) {
		if (lstore_key_cmp(from, fromlen, prefix, prefixlen) < 0)
			return lstore_scan_first(c, prefix, prefixlen, key, val);
		key->mv_size = fromlen;
		key->mv_data = (void *)from;
		return mdb_cursor_get(c, key, val, MDB_SET_RANGE);
	}
	key->mv_size = fromlen;
	key->mv_data = (void *)from;
	rc = mdb_cursor_get(c, key, val, MDB_SET_RANGE);
	if (rc == MDB_NOTFOUND)
		return mdb_cursor_get(c, key, val, MDB_LAST);
	if (rc != 0)
		return rc;
	if (lstore_key_cmp(key->mv_data, key->mv_size, from, fromlen) == 0)
		return 0;
	return mdb_cursor_get(c, key, val, MDB_PREV);
}

int
lstore_scan(struct store *base, const char *table, const void *prefix,
    size_t prefixlen, const void *from, size_t fromlen, int reverse,
    size_t limit, store_scan_fn fn, void *ctx)
{
	struct lstore *s = lstore_of(base);
	MDB_dbi dbi;
	MDB_txn *txn;
	MDB_cursor *c;
	MDB_val key, val;
	size_t n = 0;
	int rc, past = 0;

	if (lstore_table(s, table, &dbi) != IDEM_OK || fn == NULL ||
	    (prefixlen > 0 && prefix == NULL))
		return IDEM_EINVAL;
	/* No stored key is longer than LMDB's limit, so none can match. */
	if (prefixlen > s->e->maxkey)
		return IDEM_OK;
	/*
	 * A place longer than any key sorts right after its first maxkey
	 * bytes: every key at or before it is at or before those bytes, and
	 * every key after it after them (skip, below, when forward).
	 */
	if (fromlen > s->e->maxkey) {
		fromlen = s->e->maxkey;
		past = !reverse;
	}
	if ((rc = lstore_txn_begin(s, 0, &txn)) != IDEM_OK)
		return rc;
	if ((rc = lstore_err(mdb_cursor_open(txn, dbi, &c))) !=
	    IDEM_OK)
		goto fail_txn;
	if (fromlen > 0) {
		rc = lstore_err(lstore_scan_at(c, prefix, prefixlen, from,
		    fromlen, reverse, &key, &val));
		if (rc == IDEM_OK && past && lstore_key_cmp(key.mv_data,
		    key.mv_size, from, fromlen) == 0)
			rc = lstore_err(mdb_cursor_get(c, &key, &val,
			    MDB_NEXT));
	} else
		rc = lstore_err(reverse ?
		    lstore_scan_last(c, prefix, prefixlen, &key, &val) :
		    lstore_scan_first(c, prefix, prefixlen, &key, &val));
	while (rc == IDEM_OK && lstore_has_prefix(&key, prefix, prefixlen) &&
	    (limit == 0 || n < limit)) {
		n++;
		if (fn(ctx, key.mv_data, key.mv_size, val.mv_data,
		    val.mv_size) != 0)
			break;
		rc = lstore_err(mdb_cursor_get(c, &key, &val,
		    reverse ? MDB_PREV : MDB_NEXT));
	}
	if (rc == IDEM_ENOTFOUND)
		rc = IDEM_OK;
	mdb_cursor_close(c);
fail_txn:
	lstore_txn_abort(txn);
	return rc;
}

/*
 * Splits a record key into NUL-terminated scope and key, in out (which
 * holds STORE_KEY_BUF + 1 bytes).
 */
static int
lstore_key_split(const MDB_val *k, char *out, const char **scope,
    const char **key)
{
	const char *nul;

	if (k->mv_size > STORE_KEY_BUF ||
	    (nul = memchr(k->mv_data, '\0', k->mv_size)) == NULL)
		return IDEM_ECORRUPT;
	memcpy(out, k->mv_data, k->mv_size);
	out[k->mv_size] = '\0';
	*scope = out;
	*key = out + (nul - (const char *)k->mv_data) + 1;
	return IDEM_OK;
}

/*
 * Calls fn for each record named by the keys of database dbi, in key
 * order, from one read transaction.  dbi is keys itself (every record),
 * or the pending index, whose records are looked up and passed on only
 * while pending (an entry cannot outlive that: it changes with its
 * record).  IDEM_ECORRUPT, after the records before it, at a record it
 * cannot read.
 */
static int
lstore_walk(struct lstore *s, MDB_dbi dbi, store_each_fn fn, void *ctx)
{
	char names[STORE_KEY_BUF + 1];
	const char *scope, *key;
	MDB_txn *txn;
	MDB_cursor *c;
	MDB_val k, v;
	struct rec r;
	int rc, stop = 0, index = dbi != s->e->keys;

	if (fn == NULL)
		return IDEM_EINVAL;
	if ((rc = lstore_txn_begin(s, 0, &txn)) != IDEM_OK)
		return rc;
	if ((rc = lstore_err(mdb_cursor_open(txn, dbi, &c))) != IDEM_OK)
		goto fail_txn;
	rc = lstore_err(mdb_cursor_get(c, &k, &v, MDB_FIRST));
	while (rc == IDEM_OK && !stop) {
		if ((rc = lstore_key_split(&k, names, &scope, &key)) != IDEM_OK)
			break;
		if (index && (rc = lstore_err(mdb_get(txn, s->e->keys, &k,
		    &v))) != IDEM_OK && rc != IDEM_ENOTFOUND)
			break;
		if (rc == IDEM_OK) {
			if ((rc = rec_decode(v.mv_data, v.mv_size, &r)) !=
			    IDEM_OK)
				break;
			if (!index || store_rec_pending(&r))
				stop = fn(ctx, scope, key, &r);
			rec_free(&r);
		}
		rc = lstore_err(mdb_cursor_get(c, &k, &v, MDB_NEXT));
	}
	if (rc == IDEM_ENOTFOUND)
		rc = IDEM_OK;
	mdb_cursor_close(c);
fail_txn:
	lstore_txn_abort(txn);
	return rc;
}

int
lstore_each(struct store *base, store_each_fn fn, void *ctx)
{
	struct lstore *s = lstore_of(base);
	return lstore_walk(s, s->e->keys, fn, ctx);
}

int
lstore_each_pending(struct store *base, store_each_fn fn, void *ctx)
{
	struct lstore *s = lstore_of(base);
	return lstore_walk(s, s->e->pending, fn, ctx);
}

static int
lstore_count_dbi(struct lstore *s, MDB_dbi dbi, size_t *n)
{
	MDB_txn *txn;
	MDB_stat st;
	int rc;

	*n = 0;
	if ((rc = lstore_txn_begin(s, 0, &txn)) != IDEM_OK)
		return rc;
	if ((rc = lstore_err(mdb_stat(txn, dbi, &st))) == IDEM_OK)
		*n = st.ms_entries;
	lstore_txn_abort(txn);
	return rc;
}

int
lstore_count(struct store *base, const char *table, size_t *n)
{
	struct lstore *s = lstore_of(base);
	MDB_dbi dbi;
	int rc;

	if ((rc = lstore_table(s, table, &dbi)) != IDEM_OK)
		return rc;
	return lstore_count_dbi(s, dbi, n);
}

/* A hook's transaction, as the backend knows it. */
struct lstore_tx {
	struct lstore *s;
	MDB_txn *txn;
};

/*
 * Runs hook in txn.  tx may be NULL, or hold what the caller wants back
 * from the hook (a response it chose); its store fields are set here.
 */
int
lstore_run_hook(struct lstore *s, MDB_txn *txn, idem_tx_fn hook, void *ctx,
    struct idem_tx *tx)
{
	struct lstore_tx ltx = { s, txn };
	struct idem_tx own;

	if (tx == NULL) {
		memset(&own, 0, sizeof(own));
		tx = &own;
	}
	tx->s = &s->base;
	tx->impl = &ltx;
	tx->respond = NULL;
	return hook(ctx, tx);
}

static int
lstore_tx_row(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, MDB_dbi *dbi, MDB_val *k)
{
	struct lstore_tx *ltx = tx->impl;
	int rc;

	if ((rc = lstore_row_key(ltx->s, table, key, keylen, dbi)) != IDEM_OK)
		return rc;
	k->mv_size = keylen;
	k->mv_data = (void *)key;
	return IDEM_OK;
}

int
lstore_tx_get(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void **val, size_t *vallen)
{
	struct lstore_tx *ltx = tx->impl;
	MDB_dbi dbi;
	MDB_val k, v;
	int rc;

	*val = NULL;
	*vallen = 0;
	if ((rc = lstore_tx_row(tx, table, key, keylen, &dbi, &k)) != IDEM_OK)
		return rc;
	if ((rc = lstore_err(mdb_get(ltx->txn, dbi, &k, &v))) != IDEM_OK)
		return rc;
	*val = v.mv_data;
	*vallen = v.mv_size;
	return IDEM_OK;
}

int
lstore_tx_put(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen)
{
	struct lstore_tx *ltx = tx->impl;
	MDB_dbi dbi;
	MDB_val k, v = { .mv_size = vallen, .mv_data = (void *)val };
	int rc;

	if (vallen > 0 && val == NULL)
		return IDEM_EINVAL;
	if ((rc = lstore_tx_row(tx, table, key, keylen, &dbi, &k)) != IDEM_OK)
		return rc;
	return lstore_err(mdb_put(ltx->txn, dbi, &k, &v, 0));
}

int
lstore_tx_del(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen)
{
	struct lstore_tx *ltx = tx->impl;
	MDB_dbi dbi;
	MDB_val k;
	int rc;

	if ((rc = lstore_tx_row(tx, table, key, keylen, &dbi, &k)) != IDEM_OK)
		return rc;
	return lstore_err(mdb_del(ltx->txn, dbi, &k, NULL));
}
