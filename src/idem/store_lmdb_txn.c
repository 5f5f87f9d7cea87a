/*
 * store_lmdb_txn.c: the LMDB backend's transactions and its map.  Every
 * transaction of the backend begins and ends here, and the map moves
 * only here, so that what LMDB asks of a transaction's begin and end,
 * and of mdb_env_set_mapsize, is kept in one place.
 */
#define LSTORE_TXN_OWNER 1

#include <stdint.h>
#include <unistd.h>

#include <lmdb.h>

#include "err.h"
#include "store_lmdb.h"

static size_t
lstore_map_size(size_t want)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t psz = page > 0 ? (size_t)page : 4096;

	if (want == 0)
		want = STORE_DEFAULT_MAP_SIZE;
	if (want > SIZE_MAX - psz)
		return want - want % psz;
	return (want + psz - 1) / psz * psz;
}

int
lstore_map_init(MDB_env *env, size_t want)
{
	return mdb_env_set_mapsize(env, lstore_map_size(want));
}

int
lstore_env_txn_begin(struct store_env *e, unsigned int flags, MDB_txn **txn)
{
	int rc;

	*txn = NULL;
	rc = mdb_txn_begin(e->env, NULL, flags, txn);
	if (rc == MDB_MAP_RESIZED) {
		/* Another process grew the map: adopt its size and go on. */
		if ((rc = mdb_env_set_mapsize(e->env, 0)) == 0)
			rc = mdb_txn_begin(e->env, NULL, flags, txn);
	}
	return rc;
}

/* Ends txn.  A failed commit has freed txn too. */
int
lstore_env_txn_end(MDB_txn *txn, int commit)
{
	if (commit)
		return mdb_txn_commit(txn);
	mdb_txn_abort(txn);
	return 0;
}

int
lstore_txn_begin(struct lstore *s, int write, MDB_txn **txn)
{
	*txn = NULL;
	if (write && s->read_only)
		return IDEM_EROFS;
	return lstore_err(lstore_env_txn_begin(s->e, write ? 0 : MDB_RDONLY,
	    txn));
}

int
lstore_txn_commit(MDB_txn *txn)
{
	return lstore_err(lstore_env_txn_end(txn, 1));
}

void
lstore_txn_abort(MDB_txn *txn)
{
	(void)lstore_env_txn_end(txn, 0);
}
