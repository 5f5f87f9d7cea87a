/* SPDX-License-Identifier: MIT */
/*
 * store_lmdb_txn.c: the LMDB backend's transactions and its map.  Every
 * transaction of the backend begins and ends here, and the map moves
 * only here, so that LMDB's rule for mdb_env_set_mapsize ("may only be
 * called if no transactions are active in this process") is kept in one
 * place: see the remap gate in store_lmdb.h.
 */
#define LSTORE_TXN_OWNER 1

#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <lmdb.h>

#include "err.h"
#include "store_lmdb.h"

/*
 * How many times a begin adopts a grown map before it gives up
 * (IDEM_EBUSY): each time means that another process grew the file
 * again while this one remapped.
 */
#define LSTORE_REMAP_TRIES 4

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
lstore_gate_init(struct store_env *e)
{
	pthread_rwlockattr_t attr;
	int rc;

	if ((rc = pthread_rwlockattr_init(&attr)) != 0)
		return rc;
#ifdef __GLIBC__
	/*
	 * glibc's default rwlock lets a reader in while a writer waits, so
	 * under a steady stream of requests a remap would wait for ever.
	 * This kind holds new readers back behind a waiting writer, and so
	 * deadlocks a thread that read-locks twice: a thread takes the gate
	 * for its first transaction only (e->held).
	 */
	rc = pthread_rwlockattr_setkind_np(&attr,
	    PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
	if (rc == 0)
		rc = pthread_rwlock_init(&e->gate, &attr);
	pthread_rwlockattr_destroy(&attr);
	if (rc != 0)
		return rc;
	if ((rc = pthread_key_create(&e->held, NULL)) != 0)
		goto fail_gate;
	/* A transaction's end finds its environment through this. */
	if ((rc = mdb_env_set_userctx(e->env, e)) != 0)
		goto fail_key;
	e->map_rc = 0;
	e->remaps = 0;
	e->remap_waiting = 0;
	return 0;

fail_key:
	pthread_key_delete(e->held);
fail_gate:
	pthread_rwlock_destroy(&e->gate);
	return rc;
}

void
lstore_gate_destroy(struct store_env *e)
{
	pthread_key_delete(e->held);
	pthread_rwlock_destroy(&e->gate);
}

/* How many transactions on e this thread has begun and not ended. */
static uintptr_t
lstore_held(const struct store_env *e)
{
	return (uintptr_t)pthread_getspecific(e->held);
}

/*
 * Adopts the size another process gave the map, once no transaction of
 * this process is active on e: the caller holds none, and waits for the
 * gate exclusive.  seen is e->remaps as the caller read it under the
 * gate when its begin met MDB_MAP_RESIZED: when it has changed, another
 * thread remapped meanwhile and the caller only begins again.
 */
/*
 * Takes e's gate exclusive, counted among the threads waiting to remap
 * while it waits (tests read the count).
 */
static int
lstore_gate_wrlock(struct store_env *e)
{
	int rc;

	__atomic_add_fetch(&e->remap_waiting, 1, __ATOMIC_SEQ_CST);
	rc = pthread_rwlock_wrlock(&e->gate);
	__atomic_sub_fetch(&e->remap_waiting, 1, __ATOMIC_SEQ_CST);
	return rc;
}

static int
lstore_remap(struct store_env *e, unsigned seen)
{
	int rc;

	if ((rc = lstore_gate_wrlock(e)) != 0)
		return rc;
	if (__atomic_load_n(&e->remaps, __ATOMIC_SEQ_CST) == seen &&
	    e->map_rc == 0) {
		/*
		 * Size 0: the size in the meta page, which the process that
		 * grew the map wrote.  A failure here may leave no map at
		 * all, so every later begin fails with it.
		 */
		if ((rc = mdb_env_set_mapsize(e->env, 0)) != 0)
			e->map_rc = rc;
		else
			__atomic_add_fetch(&e->remaps, 1, __ATOMIC_SEQ_CST);
	}
	pthread_rwlock_unlock(&e->gate);
	return rc;
}

int
lstore_map_adopt_due(struct store_env *e)
{
	struct timespec ts;
	uint64_t now, due;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	due = __atomic_load_n(&e->adopt_due_ms, __ATOMIC_RELAXED);
	return now >= due && __atomic_compare_exchange_n(&e->adopt_due_ms,
	    &due, now + LSTORE_ADOPT_MS, 0, __ATOMIC_RELAXED,
	    __ATOMIC_RELAXED);
}

int
lstore_map_adopt(struct store_env *e, int *grew)
{
	MDB_envinfo before, after;
	size_t want = lstore_map_size(e->map_want);
	int rc;

	*grew = 0;
	if ((rc = lstore_gate_wrlock(e)) != 0)
		return rc;
	if (e->map_rc != 0 || (rc = mdb_env_info(e->env, &before)) != 0)
		goto out;
	/*
	 * Size 0 maps what the meta page records: the largest size any
	 * process that wrote gave the map.  A smaller one than this
	 * process's own is set back to its own.
	 */
	if ((rc = mdb_env_set_mapsize(e->env, 0)) != 0 ||
	    (rc = mdb_env_info(e->env, &after)) != 0)
		goto fail;
	if (after.me_mapsize < want &&
	    ((rc = mdb_env_set_mapsize(e->env, want)) != 0 ||
	    (rc = mdb_env_info(e->env, &after)) != 0))
		goto fail;
	if (after.me_mapsize != before.me_mapsize)
		__atomic_add_fetch(&e->remaps, 1, __ATOMIC_SEQ_CST);
	*grew = after.me_mapsize > before.me_mapsize;
	goto out;
fail:
	/* As lstore_remap: a failed remap may have left no map at all. */
	e->map_rc = rc;
out:
	pthread_rwlock_unlock(&e->gate);
	return rc;
}

/*
 * A thread's first transaction on e takes the gate shared, and its last
 * one to end gives it back; a nested one (the thread holds one already)
 * never touches the gate, so it never waits behind a remap that waits
 * for this very thread.  A nested begin that meets MDB_MAP_RESIZED
 * cannot remap (its own transaction pins the map) and fails with it,
 * which lstore_err makes IDEM_EBUSY.
 */
int
lstore_env_txn_begin(struct store_env *e, unsigned int flags, MDB_txn **txn)
{
	uintptr_t held = lstore_held(e);
	unsigned seen;
	int rc, tries;

	*txn = NULL;
	for (tries = 0;; tries++) {
		if (held == 0 && (rc = pthread_rwlock_rdlock(&e->gate)) != 0)
			return rc;
		if ((rc = e->map_rc) == 0 &&
		    (rc = mdb_txn_begin(e->env, NULL, flags, txn)) == 0) {
			if ((rc = pthread_setspecific(e->held,
			    (void *)(held + 1))) == 0)
				return 0;
			mdb_txn_abort(*txn);
			*txn = NULL;
		}
		if (held > 0)
			return rc;
		seen = __atomic_load_n(&e->remaps, __ATOMIC_SEQ_CST);
		pthread_rwlock_unlock(&e->gate);
		if (rc != MDB_MAP_RESIZED || tries == LSTORE_REMAP_TRIES)
			return rc;
		if ((rc = lstore_remap(e, seen)) != 0)
			return rc;
	}
}

/*
 * Ends txn, on the thread that began it, and gives the gate back with
 * the thread's last transaction.  A failed commit has freed txn too.
 */
int
lstore_env_txn_end(MDB_txn *txn, int commit)
{
	struct store_env *e = mdb_env_get_userctx(mdb_txn_env(txn));
	uintptr_t held = lstore_held(e);
	int rc = 0;

	if (commit)
		rc = mdb_txn_commit(txn);
	else
		mdb_txn_abort(txn);
	/*
	 * The thread's slot was set when txn began, so setting it again
	 * allocates nothing and cannot fail.
	 */
	(void)pthread_setspecific(e->held, (void *)(held - 1));
	if (held == 1)
		pthread_rwlock_unlock(&e->gate);
	return rc;
}

int
lstore_txn_held(const struct store_env *e)
{
	return lstore_held(e) > 0;
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

void
lstore_remap_counts(struct store *base, unsigned *waiting, unsigned *done)
{
	struct store_env *e = lstore_of(base)->e;

	*waiting = __atomic_load_n(&e->remap_waiting, __ATOMIC_SEQ_CST);
	*done = __atomic_load_n(&e->remaps, __ATOMIC_SEQ_CST);
}
