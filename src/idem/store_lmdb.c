/*
 * store_lmdb.c: the store on LMDB.
 *
 * This is the only file that includes lmdb.h; MDB_* and errno values are
 * translated to enum idem_err here (store_err) and nowhere else.
 *
 * One environment in cfg->dir, with these named databases:
 *
 *	keys		scope NUL key -> record (record.h encoding)
 *	expiry		be64(purge time) scope NUL key -> empty
 *	pending		scope NUL key -> empty
 *	quota		scope -> be64(live records of the scope)
 *	payments, by_account, ledger
 *			one per enum store_table, for the application
 *
 * Every record has exactly one index entry (store_index_of): a claim past
 * stage 0 may have left a side effect and never expires, so it is listed
 * in pending; every other record is in expiry at the time it may be
 * purged (its expiry, or the end of its lease if that comes later).  The
 * expiry index sorts by time, so store_purge reads only what it deletes,
 * and nothing it must keep can pile up in front of it.  A record, its
 * index entry and its scope's count change in the same transaction.
 * Scope cannot contain a NUL, so "scope NUL key" names exactly one
 * (scope, key): no scope can reach into another's keys.
 *
 * Every write is one write transaction with LMDB's default, durable sync
 * (never MDB_NOSYNC, MDB_NOMETASYNC or an asynchronous MDB_WRITEMAP): when
 * a call returns IDEM_OK its effect is on disk (doc/DESIGN.md, invariant
 * 2).  Write transactions do no I/O of their own beyond LMDB's and never
 * wait on anything outside this file, so the write lock is held briefly.
 *
 * Processes are single-threaded (one request at a time per worker), so the
 * table of open environments below needs no lock.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <lmdb.h>

#include "buf.h"
#include "crypto.h"
#include "engine.h"
#include "err.h"
#include "fault.h"
#include "metrics.h"
#include "record.h"
#include "store.h"

#define STORE_DEFAULT_MAP_SIZE ((size_t)32 << 30)
/* keys, expiry, pending, quota, and one per application table. */
#define STORE_MAX_DBS (4 + STORE_TABLE__MAX)
/*
 * Room for the longest LMDB key (511 bytes in a default build, see
 * mdb_env_get_maxkeysize), so keys are built on the stack.
 */
#define STORE_KEY_BUF 512
#define STORE_EXPIRY_PREFIX 8
/*
 * store_purge may step over index entries that delete no record (stale
 * ones, a record it cannot decode); it steps over at most this many
 * beyond max, so one call stays one short transaction.
 */
#define STORE_PURGE_SLACK 64
/*
 * A claim that finds its scope at its bound first purges up to this many
 * expired records, so a scope whose keys have expired is not held to
 * its bound until an operator purges.
 */
#define STORE_LIMIT_PURGE 64
/*
 * New keys are refused (IDEM_EFULL) once the map is this full, in
 * percent, so that the rest is kept for the writes that must not fail
 * for want of room: the completion of a claim that charged, checkpoints,
 * releases and purge itself, which needs pages to delete.
 */
#define STORE_CLAIM_FILL_MAX 90
/*
 * Reader slots: with MDB_NOTLS a slot belongs to a read transaction, so
 * this bounds the read transactions open at once in every process of
 * the store together (threads of every worker, idemctl).
 */
#define STORE_MAX_READERS 2048

static const char *const store_table_names[STORE_TABLE__MAX] = {
	[STORE_PAYMENTS] = "payments",
	[STORE_BY_ACCOUNT] = "by_account",
	[STORE_LEDGER] = "ledger",
};

/*
 * One open LMDB environment.  LMDB forbids opening the same environment
 * twice in one process (closing either would drop the other's POSIX
 * locks), so every store handle of this process on the same directory
 * shares one, counted by refs.  pid tells an environment inherited across
 * fork, which must never be used, from our own.
 */
/*
 * A write waiting for the next group commit of its environment.  fn runs
 * inside the batch's transaction and sets *wrote when it wrote something
 * to keep: all of its writes succeeded (or, for a claim refused at its
 * scope's bound, the purge it did on the way).  A job that fails must
 * fail before it writes, or with an error that store_rc_clean does not
 * accept, which makes the batch run again one job per transaction: so fn
 * may run twice, and must start each time from its arguments, not from
 * what an earlier run left in its results.
 */
typedef int (*store_job_fn)(struct store *s, MDB_txn *txn, void *arg,
    int *wrote);

struct store_job {
	struct store_job *next;
	struct store *s;
	store_job_fn fn;
	void *arg;
	int rc;
	int wrote;
	int done;
};

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
	MDB_dbi tables[STORE_TABLE__MAX];
	/* Group commit (store_write): jobs queued, and whether one leads. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct store_job *queue;
	struct store_job **queue_tail;
	int leading;
	size_t last_batch;          /* jobs in the last batch committed */
	unsigned gather_us;         /* see store_config.commit_delay_us */
};

struct store {
	struct store_env *e;
	int read_only;
	uint64_t max_keys;
};

/* A key built on the stack: a record key, or an expiry key. */
struct store_key {
	size_t len;
	uint8_t data[STORE_KEY_BUF];
};

/* The environments open in this process, and the lock over the list. */
static struct store_env *store_envs;
static pthread_mutex_t store_envs_mu = PTHREAD_MUTEX_INITIALIZER;

/* The one place where LMDB and errno codes become enum idem_err. */
static int
store_err(int rc)
{
	switch (rc) {
	case MDB_SUCCESS:
		return IDEM_OK;
	case MDB_NOTFOUND:
		return IDEM_ENOTFOUND;
	case MDB_KEYEXIST:
		return IDEM_EEXIST;
	case MDB_MAP_FULL:
	case MDB_TXN_FULL:
		return IDEM_EFULL;
	case MDB_BAD_VALSIZE:
		return IDEM_ETOOBIG;
	case EACCES:
	case EROFS:
		return IDEM_EROFS;
	case ENOMEM:
		return IDEM_ENOMEM;
	default:
		/* MDB_CORRUPTED, MDB_PANIC, EIO, ENOSPC and the rest. */
		return IDEM_EIO;
	}
}

static void
store_be64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t
store_get_be64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* now + span, saturating: a huge TTL means "never", not "long ago". */
static uint64_t
store_add_ms(uint64_t now_ms, uint64_t span_ms)
{
	return span_ms > UINT64_MAX - now_ms ? UINT64_MAX : now_ms + span_ms;
}

static int
store_table_ok(enum store_table t)
{
	return (unsigned)t < STORE_TABLE__MAX;
}

/*
 * Builds "scope NUL key".  The expiry key is eight bytes longer, and it
 * too must fit LMDB's key limit, so that limit is checked here, once.
 */
static int
store_key_make(const struct store *s, const char *scope, const char *key,
    struct store_key *k)
{
	size_t slen, klen;

	if (scope == NULL || key == NULL || *scope == '\0' || *key == '\0')
		return IDEM_EINVAL;
	slen = strlen(scope);
	klen = strlen(key);
	if (slen > s->e->maxkey || klen > s->e->maxkey ||
	    STORE_EXPIRY_PREFIX + slen + 1 + klen > s->e->maxkey)
		return IDEM_ETOOBIG;
	memcpy(k->data, scope, slen);
	k->data[slen] = '\0';
	memcpy(k->data + slen + 1, key, klen);
	k->len = slen + 1 + klen;
	return IDEM_OK;
}

static void
store_expiry_make(uint64_t expires_ms, const struct store_key *k,
    struct store_key *ek)
{
	store_be64(ek->data, expires_ms);
	memcpy(ek->data + STORE_EXPIRY_PREFIX, k->data, k->len);
	ek->len = STORE_EXPIRY_PREFIX + k->len;
}

/*
 * Creates dir and its missing parents, mode 0700: the store holds stored
 * responses, which are nobody else's business.
 */
static int
store_mkdirs(const char *dir)
{
	char path[PATH_MAX];
	size_t len = strlen(dir), i;
	struct stat st;

	if (len >= sizeof(path))
		return IDEM_EINVAL;
	memcpy(path, dir, len + 1);
	for (i = 1; i <= len; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0700) == -1 && errno != EEXIST)
			return store_err(errno);
		path[i] = dir[i];
	}
	if (stat(dir, &st) == -1)
		return store_err(errno);
	if (!S_ISDIR(st.st_mode))
		return IDEM_EINVAL;
	return IDEM_OK;
}

static int
store_dbis_open(struct store_env *e, MDB_txn *txn, unsigned int flags)
{
	int rc, i;

	if ((rc = mdb_dbi_open(txn, "keys", flags, &e->keys)) != 0 ||
	    (rc = mdb_dbi_open(txn, "expiry", flags, &e->expiry)) != 0 ||
	    (rc = mdb_dbi_open(txn, "pending", flags, &e->pending)) != 0 ||
	    (rc = mdb_dbi_open(txn, "quota", flags, &e->quota)) != 0)
		return rc;
	for (i = 0; i < STORE_TABLE__MAX; i++)
		if ((rc = mdb_dbi_open(txn, store_table_names[i], flags,
		    &e->tables[i])) != 0)
			return rc;
	return 0;
}

static size_t
store_map_size(size_t want)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t psz = page > 0 ? (size_t)page : 4096;

	if (want == 0)
		want = STORE_DEFAULT_MAP_SIZE;
	if (want > SIZE_MAX - psz)
		return want - want % psz;
	return (want + psz - 1) / psz * psz;
}

/*
 * Opens the environment and its databases.  LMDB error codes come back
 * raw; the caller translates them.
 */
static int
store_env_open(const struct store_config *cfg, const struct stat *st,
    struct store_env **out)
{
	struct store_env *e;
	MDB_txn *txn;
	unsigned int flags = MDB_NOTLS;
	int rc, dead, maxkey;

	if ((e = calloc(1, sizeof(*e))) == NULL)
		return ENOMEM;
	if ((rc = mdb_env_create(&e->env)) != 0)
		goto fail_free;
	if ((rc = mdb_env_set_maxdbs(e->env, STORE_MAX_DBS)) != 0 ||
	    (rc = mdb_env_set_maxreaders(e->env, STORE_MAX_READERS)) != 0 ||
	    (rc = mdb_env_set_mapsize(e->env,
	    store_map_size(cfg->map_size))) != 0)
		goto fail_env;
	if (cfg->read_only)
		flags |= MDB_RDONLY;
	if ((rc = mdb_env_open(e->env, cfg->dir, flags, 0600)) != 0)
		goto fail_env;
	/*
	 * A worker killed inside a read transaction leaves its reader slot
	 * behind, and that slot pins old pages until someone clears it.
	 */
	if ((rc = mdb_reader_check(e->env, &dead)) != 0)
		goto fail_env;
	if ((rc = mdb_txn_begin(e->env, NULL, cfg->read_only ? MDB_RDONLY : 0,
	    &txn)) != 0)
		goto fail_env;
	if ((rc = store_dbis_open(e, txn, cfg->read_only ? 0 : MDB_CREATE)) !=
	    0)
		goto fail_txn;
	/* Handles opened in a transaction are ours only once it commits. */
	if ((rc = mdb_txn_commit(txn)) != 0)
		goto fail_env;
	maxkey = mdb_env_get_maxkeysize(e->env);
	e->maxkey = maxkey > 0 && maxkey < STORE_KEY_BUF ?
	    (size_t)maxkey : STORE_KEY_BUF;
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->pid = getpid();
	e->refs = 1;
	e->read_only = cfg->read_only;
	if ((rc = pthread_mutex_init(&e->mu, NULL)) != 0)
		goto fail_env;
	if ((rc = pthread_cond_init(&e->cv, NULL)) != 0) {
		pthread_mutex_destroy(&e->mu);
		goto fail_env;
	}
	e->queue_tail = &e->queue;
	e->gather_us = cfg->commit_delay_us;
	*out = e;
	return 0;

fail_txn:
	mdb_txn_abort(txn);
fail_env:
	mdb_env_close(e->env);
fail_free:
	free(e);
	return rc;
}

static struct store_env *
store_env_find(const struct stat *st)
{
	struct store_env *e;
	pid_t pid = getpid();

	for (e = store_envs; e != NULL; e = e->next)
		if (e->dev == st->st_dev && e->ino == st->st_ino &&
		    e->pid == pid)
			return e;
	return NULL;
}

/*
 * On IDEM_OK *out is the caller's, released with store_close.  A second
 * open of the same directory in this process shares the first one's
 * environment, whose map size stays as first set.  IDEM_EINVAL,
 * IDEM_ENOTFOUND (read-only and nothing there), IDEM_EROFS, IDEM_ENOMEM,
 * IDEM_EIO.
 */
int
store_open(const struct store_config *cfg, struct store **out)
{
	struct store_env *e;
	struct store *s;
	struct stat st;
	int rc;

	*out = NULL;
	if (cfg == NULL || cfg->dir == NULL || *cfg->dir == '\0')
		return IDEM_EINVAL;
	if (!cfg->read_only && (rc = store_mkdirs(cfg->dir)) != IDEM_OK)
		return rc;
	if (stat(cfg->dir, &st) == -1)
		return errno == ENOENT ? IDEM_ENOTFOUND : store_err(errno);
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return IDEM_ENOMEM;
	s->read_only = cfg->read_only;
	s->max_keys = cfg->max_keys_per_scope;
	pthread_mutex_lock(&store_envs_mu);
	if ((e = store_env_find(&st)) != NULL) {
		/* A read-only environment cannot serve a writer. */
		if (e->read_only && !cfg->read_only) {
			rc = IDEM_EROFS;
			goto fail;
		}
		e->refs++;
	} else {
		if ((rc = store_env_open(cfg, &st, &e)) != 0) {
			rc = rc == ENOENT || rc == MDB_NOTFOUND ?
			    IDEM_ENOTFOUND : store_err(rc);
			goto fail;
		}
		e->next = store_envs;
		store_envs = e;
	}
	pthread_mutex_unlock(&store_envs_mu);
	s->e = e;
	*out = s;
	return IDEM_OK;

fail:
	pthread_mutex_unlock(&store_envs_mu);
	free(s);
	return rc;
}

void
store_close(struct store *s)
{
	struct store_env **pp;
	struct store_env *e;

	if (s == NULL)
		return;
	e = s->e;
	free(s);
	pthread_mutex_lock(&store_envs_mu);
	if (--e->refs > 0) {
		pthread_mutex_unlock(&store_envs_mu);
		return;
	}
	for (pp = &store_envs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	pthread_mutex_unlock(&store_envs_mu);
	/*
	 * An environment inherited across fork belongs to the parent: closing
	 * it here could clear the parent's state, so only forget it.
	 */
	if (e->pid == getpid()) {
		mdb_env_close(e->env);
		pthread_cond_destroy(&e->cv);
		pthread_mutex_destroy(&e->mu);
	}
	free(e);
}

static int
store_txn_begin(struct store *s, int write, MDB_txn **txn)
{
	MDB_env *env = s->e->env;
	unsigned int flags = write ? 0 : MDB_RDONLY;
	int rc;

	*txn = NULL;
	if (write && s->read_only)
		return IDEM_EROFS;
	rc = mdb_txn_begin(env, NULL, flags, txn);
	if (rc == MDB_MAP_RESIZED) {
		/* Another process grew the map: adopt its size and go on. */
		if ((rc = mdb_env_set_mapsize(env, 0)) == 0)
			rc = mdb_txn_begin(env, NULL, flags, txn);
	}
	return store_err(rc);
}

/*
 * Commits txn.  Whatever the outcome, txn is gone afterwards: a failed
 * mdb_txn_commit has already freed it, so callers never abort after this.
 */
static int
store_txn_commit(MDB_txn *txn)
{
	return store_err(mdb_txn_commit(txn));
}

/*
 * Whether a job that failed with rc left the transaction as it found it.
 * These errors come before a job writes anything (a claim taken over, a
 * row that exists, a scope at its bound: the purge on the way, if any,
 * is complete and kept).  Any other (a full map, an I/O error, a value
 * too big halfway through a job's writes) may have left half a job
 * behind, or a transaction that LMDB will no longer commit.
 */
static int
store_rc_clean(int rc)
{
	return rc == IDEM_OK || rc == IDEM_ELOST || rc == IDEM_EEXIST ||
	    rc == IDEM_ELIMIT;
}

/*
 * Runs jobs one to a transaction, each committed alone when it wrote and
 * rolled back alone when it failed: the batch's way out when a job did
 * not fail cleanly.
 */
static void
store_batch_alone(struct store *any, struct store_job *batch)
{
	struct store_job *j;
	MDB_txn *txn;
	int rc;

	for (j = batch; j != NULL; j = j->next) {
		j->wrote = 0;
		if ((rc = store_txn_begin(any, 1, &txn)) != IDEM_OK) {
			j->rc = rc;
			continue;
		}
		j->rc = j->fn(j->s, txn, j->arg, &j->wrote);
		if (!j->wrote || !store_rc_clean(j->rc)) {
			/* Nothing to keep, or half a job: either way, undone. */
			mdb_txn_abort(txn);
			j->wrote = 0;
			continue;
		}
		fault_point("batch_commit");
		if ((rc = store_txn_commit(txn)) != IDEM_OK) {
			j->rc = rc;
			j->wrote = 0;
			continue;
		}
		metrics_add(METRIC_STORE_SYNCS, 2);
		metrics_inc(METRIC_STORE_COMMITS);
		metrics_inc(METRIC_STORE_WRITES);
	}
}

/*
 * Runs a batch of jobs in the write transaction txn and commits it once:
 * one durable sync for the whole batch.  A job's result is final only
 * after that commit; if it fails, every job that wrote gets its error,
 * since none of their writes happened.  Jobs fail cleanly, before they
 * write, in all but rare cases (store_rc_clean); when one does not, the
 * batch is rolled back and each job run again in a transaction of its
 * own, so one request's failure never undoes another's write.
 */
static void
store_batch_run(struct store *any, MDB_txn *txn, struct store_job *batch)
{
	struct store_job *j;
	size_t kept = 0;
	int rc;

	for (j = batch; j != NULL; j = j->next) {
		j->wrote = 0;
		j->rc = j->fn(j->s, txn, j->arg, &j->wrote);
		if (!store_rc_clean(j->rc)) {
			mdb_txn_abort(txn);
			store_batch_alone(any, batch);
			return;
		}
		kept += j->wrote != 0;
	}
	if (kept == 0) {
		/* Nothing to write: give the lock back without a sync. */
		mdb_txn_abort(txn);
		return;
	}
	fault_point("batch_commit");
	if ((rc = store_txn_commit(txn)) != IDEM_OK) {
		for (j = batch; j != NULL; j = j->next)
			if (j->wrote)
				j->rc = rc;
		return;
	}
	/* LMDB's durable commit: the data pages, then the meta page. */
	metrics_add(METRIC_STORE_SYNCS, 2);
	metrics_inc(METRIC_STORE_COMMITS);
	metrics_add(METRIC_STORE_WRITES, kept);
}

/*
 * When the last batch carried more than one write, other writes are
 * likely on their way: the leader waits gather_us before it takes the
 * queue, so that they share this commit instead of each paying for the
 * next one (PostgreSQL's commit_delay).  A lone writer never waits.
 */
static void
store_gather(struct store_env *e)
{
	struct timespec ts;

	if (e->gather_us == 0 || e->last_batch < 2)
		return;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)e->gather_us * 1000L;
	nanosleep(&ts, NULL);
}

/*
 * Runs fn(s, txn, arg) in the next group commit of s's environment and
 * returns its result once that commit is durable.  The first thread to
 * find no commit under way leads: it begins the write transaction, which
 * may wait for LMDB's write lock while another process commits, and only
 * then takes every job queued so far (its own included), so that jobs
 * that arrived during that wait ride along; it runs them, commits, and
 * wakes their threads.  Jobs queued meanwhile wait for the next leader,
 * who is one of them.  So a lone request commits at once, and concurrent
 * ones share one sync: group commit without a thread of its own, the
 * same in a single-threaded CGI process.  The write transaction stays on
 * the leader's thread from begin to commit, as LMDB requires.
 */
static int
store_write(struct store *s, store_job_fn fn, void *arg)
{
	struct store_env *e = s->e;
	struct store_job job, *batch, *j, *next;
	MDB_txn *txn;
	int rc;

	if (s->read_only)
		return IDEM_EROFS;
	memset(&job, 0, sizeof(job));
	job.s = s;
	job.fn = fn;
	job.arg = arg;
	pthread_mutex_lock(&e->mu);
	*e->queue_tail = &job;
	e->queue_tail = &job.next;
	while (!job.done) {
		if (e->leading) {
			pthread_cond_wait(&e->cv, &e->mu);
			continue;
		}
		e->leading = 1;
		pthread_mutex_unlock(&e->mu);
		rc = store_txn_begin(s, 1, &txn);
		store_gather(e);
		pthread_mutex_lock(&e->mu);
		for (e->last_batch = 0, j = e->queue; j != NULL; j = j->next)
			e->last_batch++;
		batch = e->queue;
		e->queue = NULL;
		e->queue_tail = &e->queue;
		pthread_mutex_unlock(&e->mu);
		if (rc == IDEM_OK)
			store_batch_run(s, txn, batch);
		else
			for (j = batch; j != NULL; j = j->next)
				j->rc = rc;
		pthread_mutex_lock(&e->mu);
		for (j = batch; j != NULL; j = next) {
			/* j may be gone as soon as done is seen: read next first. */
			next = j->next;
			j->done = 1;
		}
		e->leading = 0;
		pthread_cond_broadcast(&e->cv);
	}
	pthread_mutex_unlock(&e->mu);
	return job.rc;
}

/*
 * Reads and decodes the record of k into *r (rec_free), zeroed when
 * there is none: IDEM_ENOTFOUND.
 */
static int
store_rec_get(struct store *s, MDB_txn *txn, const struct store_key *k,
    struct rec *r)
{
	MDB_val key = { .mv_size = k->len, .mv_data = (void *)k->data };
	MDB_val val;
	int rc;

	memset(r, 0, sizeof(*r));
	if ((rc = store_err(mdb_get(txn, s->e->keys, &key, &val))) != IDEM_OK)
		return rc;
	return rec_decode(val.mv_data, val.mv_size, r);
}

static int
store_rec_put(struct store *s, MDB_txn *txn, const struct store_key *k,
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
	rc = store_err(mdb_put(txn, s->e->keys, &key, &val, 0));
out:
	buf_free(&b);
	return rc;
}

static int
store_expiry_put(struct store *s, MDB_txn *txn, uint64_t expires_ms,
    const struct store_key *k)
{
	struct store_key ek;
	MDB_val key, val = { .mv_size = 0, .mv_data = NULL };

	store_expiry_make(expires_ms, k, &ek);
	key.mv_size = ek.len;
	key.mv_data = ek.data;
	return store_err(mdb_put(txn, s->e->expiry, &key, &val, 0));
}

/* An index entry already missing is no error: the goal is its absence. */
static int
store_expiry_del(struct store *s, MDB_txn *txn, uint64_t expires_ms,
    const struct store_key *k)
{
	struct store_key ek;
	MDB_val key;
	int rc;

	store_expiry_make(expires_ms, k, &ek);
	key.mv_size = ek.len;
	key.mv_data = ek.data;
	rc = store_err(mdb_del(txn, s->e->expiry, &key, NULL));
	return rc == IDEM_ENOTFOUND ? IDEM_OK : rc;
}

/* Where a record is indexed (see the top of this file). */
enum store_index {
	STORE_INDEX_EXPIRY,
	STORE_INDEX_PENDING
};

/*
 * The index entry of r: pending for a claim past stage 0, else expiry at
 * *at, the later of its expiry and (in progress) the end of its lease, so
 * that when purge reaches the entry the record is expired by
 * engine_decide's rule and no running claim is in the way.
 */
static enum store_index
store_index_of(const struct rec *r, uint64_t *at)
{
	*at = 0;
	if (r->state == REC_IN_PROGRESS && r->stage != 0)
		return STORE_INDEX_PENDING;
	*at = r->expires_ms;
	if (r->state == REC_IN_PROGRESS && r->lease_ms > *at)
		*at = r->lease_ms;
	return STORE_INDEX_EXPIRY;
}

static int
store_pending_put(struct store *s, MDB_txn *txn, const struct store_key *k)
{
	MDB_val key = { .mv_size = k->len, .mv_data = (void *)k->data };
	MDB_val val = { .mv_size = 0, .mv_data = NULL };

	return store_err(mdb_put(txn, s->e->pending, &key, &val, 0));
}

static int
store_pending_del(struct store *s, MDB_txn *txn, const struct store_key *k)
{
	MDB_val key = { .mv_size = k->len, .mv_data = (void *)k->data };
	int rc;

	rc = store_err(mdb_del(txn, s->e->pending, &key, NULL));
	return rc == IDEM_ENOTFOUND ? IDEM_OK : rc;
}

/*
 * Moves the index entry of k from where old put it to where new puts it.
 * old NULL: the record is new; new NULL: the record is being deleted.
 */
static int
store_index_move(struct store *s, MDB_txn *txn, const struct store_key *k,
    const struct rec *old, const struct rec *new)
{
	enum store_index oi = STORE_INDEX_EXPIRY, ni = STORE_INDEX_EXPIRY;
	uint64_t oat = 0, nat = 0;
	int rc;

	if (old != NULL)
		oi = store_index_of(old, &oat);
	if (new != NULL)
		ni = store_index_of(new, &nat);
	if (old != NULL && new != NULL && oi == ni && oat == nat)
		return IDEM_OK;
	if (old != NULL) {
		rc = oi == STORE_INDEX_PENDING ? store_pending_del(s, txn, k) :
		    store_expiry_del(s, txn, oat, k);
		if (rc != IDEM_OK)
			return rc;
	}
	if (new == NULL)
		return IDEM_OK;
	return ni == STORE_INDEX_PENDING ? store_pending_put(s, txn, k) :
	    store_expiry_put(s, txn, nat, k);
}

/* The scope's live-record count; 0 when it has no row. */
static int
store_quota_get(struct store *s, MDB_txn *txn, const uint8_t *scope,
    size_t slen, uint64_t *n)
{
	MDB_val key = { .mv_size = slen, .mv_data = (void *)scope };
	MDB_val val;
	int rc;

	*n = 0;
	rc = store_err(mdb_get(txn, s->e->quota, &key, &val));
	if (rc == IDEM_ENOTFOUND)
		return IDEM_OK;
	if (rc != IDEM_OK)
		return rc;
	if (val.mv_size != 8)
		return IDEM_ECORRUPT;
	*n = store_get_be64(val.mv_data);
	return IDEM_OK;
}

/*
 * Adds delta (+1 or -1) to the count of the scope of record key k.  The
 * count never goes below 0: a store written before counts were kept
 * holds records that were never counted.
 */
static int
store_quota_add(struct store *s, MDB_txn *txn, const struct store_key *k,
    int delta)
{
	const uint8_t *nul = memchr(k->data, '\0', k->len);
	size_t slen = nul == NULL ? k->len : (size_t)(nul - k->data);
	MDB_val key = { .mv_size = slen, .mv_data = (void *)k->data };
	MDB_val val;
	uint8_t be[8];
	uint64_t n;
	int rc;

	if ((rc = store_quota_get(s, txn, k->data, slen, &n)) != IDEM_OK)
		return rc;
	if (delta > 0)
		n++;
	else if (n > 0)
		n--;
	if (n == 0) {
		rc = store_err(mdb_del(txn, s->e->quota, &key, NULL));
		return rc == IDEM_ENOTFOUND ? IDEM_OK : rc;
	}
	store_be64(be, n);
	val.mv_size = sizeof(be);
	val.mv_data = be;
	return store_err(mdb_put(txn, s->e->quota, &key, &val, 0));
}

/*
 * Loads the record of k into *r and checks that it is an in-progress
 * claim held by token.  IDEM_ELOST (and *r empty) when it is gone,
 * completed, or taken over by someone else.
 */
static int
store_rec_own(struct store *s, MDB_txn *txn, const struct store_key *k,
    const uint8_t token[REC_TOKEN_SIZE], struct rec *r)
{
	int rc;

	rc = store_rec_get(s, txn, k, r);
	if (rc == IDEM_ENOTFOUND)
		return IDEM_ELOST;
	if (rc != IDEM_OK)
		return rc;
	if (r->state != REC_IN_PROGRESS ||
	    !crypto_equal(r->token, token, REC_TOKEN_SIZE)) {
		rec_free(r);
		return IDEM_ELOST;
	}
	return IDEM_OK;
}

int
store_lookup(struct store *s, const char *scope, const char *key,
    struct rec *out)
{
	struct store_key k;
	MDB_txn *txn;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = store_key_make(s, scope, key, &k)) != IDEM_OK)
		return rc;
	if ((rc = store_txn_begin(s, 0, &txn)) != IDEM_OK)
		return rc;
	/* rec_decode copies, so the record outlives the transaction. */
	rc = store_rec_get(s, txn, &k, out);
	mdb_txn_abort(txn);
	return rc;
}

static int store_purge_txn(struct store *s, MDB_txn *txn, uint64_t now_ms,
    size_t max, size_t *purged, int *changed);

/*
 * Replaces whatever is in *r (an expired record, or nothing) with a fresh
 * claim, and writes it, its index entry and, for a new key, its scope's
 * count.
 */
static int
store_claim_fresh(struct store *s, MDB_txn *txn, const struct store_key *k,
    int stale, const uint8_t fp[FP_SIZE], const uint8_t token[REC_TOKEN_SIZE],
    uint64_t now_ms, uint64_t lease_ms, uint64_t ttl_ms,
    const struct store_first *first, struct rec *r)
{
	/* Only the fields store_index_of reads are used from old. */
	struct rec old = *r;
	int rc;

	rec_free(r);
	r->state = REC_IN_PROGRESS;
	memcpy(r->fp, fp, FP_SIZE);
	memcpy(r->token, token, REC_TOKEN_SIZE);
	r->created_ms = now_ms;
	r->expires_ms = store_add_ms(now_ms, ttl_ms);
	r->lease_ms = store_add_ms(now_ms, lease_ms);
	r->attempts = 1;
	if (first != NULL) {
		r->stage = first->stage;
		if (first->cplen > 0) {
			if ((r->cp = malloc(first->cplen)) == NULL)
				return IDEM_ENOMEM;
			memcpy(r->cp, first->cp, first->cplen);
			r->cplen = first->cplen;
		}
	}
	if ((rc = store_rec_put(s, txn, k, r)) != IDEM_OK ||
	    (rc = store_index_move(s, txn, k, stale ? &old : NULL, r)) !=
	    IDEM_OK)
		return rc;
	return stale ? IDEM_OK : store_quota_add(s, txn, k, 1);
}

/*
 * A take-over resumes the original request: the claim keeps its creation
 * time (and so its provider key).  Its expiry moves to at least
 * now+ttl_ms, so that the answer this attempt stores stays for a whole
 * TTL after the retry that may still be waiting for it.
 */
static int
store_claim_takeover(struct store *s, MDB_txn *txn, const struct store_key *k,
    const uint8_t token[REC_TOKEN_SIZE], uint64_t now_ms, uint64_t lease_ms,
    uint64_t ttl_ms, struct rec *r)
{
	struct rec old = *r;
	uint64_t exp = store_add_ms(now_ms, ttl_ms);
	int rc;

	memcpy(r->token, token, REC_TOKEN_SIZE);
	r->lease_ms = store_add_ms(now_ms, lease_ms);
	if (exp > r->expires_ms)
		r->expires_ms = exp;
	if (r->attempts < UINT32_MAX)
		r->attempts++;
	if ((rc = store_rec_put(s, txn, k, r)) != IDEM_OK)
		return rc;
	return store_index_move(s, txn, k, &old, r);
}

/*
 * Pages on LMDB's freelist, which later transactions reuse: each entry
 * of the free database (handle 0) lists page numbers after a count.
 * LMDB opens that database to read transactions only, so this takes one
 * of its own (MDB_NOTLS lets a thread hold it beside its write
 * transaction); it sees the last commit, close enough for a threshold.
 */
static size_t
store_free_pages(struct store *s)
{
	MDB_txn *txn;
	MDB_cursor *c;
	MDB_val k, v;
	size_t n = 0, cnt;
	int op = MDB_FIRST;

	if (mdb_txn_begin(s->e->env, NULL, MDB_RDONLY, &txn) != 0)
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
	mdb_txn_abort(txn);
	return n;
}

/*
 * IDEM_EFULL when the map is past STORE_CLAIM_FILL_MAX percent used.  The
 * high-water mark is read first, and the freelist walked only when that
 * is past the line, so a store with room pays nothing.
 */
static int
store_room_for_claim(struct store *s)
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
	free = store_free_pages(s);
	used = used > free ? used - free : 0;
	return used / STORE_CLAIM_FILL_MAX < pages / 100 ? IDEM_OK : IDEM_EFULL;
}

/*
 * Seconds until the oldest entry of the expiry index comes due, at least
 * 1 and at most the TTL: the soonest a scope at its bound can have room.
 */
static uint32_t
store_limit_retry(struct store *s, MDB_txn *txn, uint64_t now_ms,
    uint64_t ttl_ms)
{
	uint64_t wait = ttl_ms, secs, at;
	MDB_cursor *c;
	MDB_val key, val;

	if (mdb_cursor_open(txn, s->e->expiry, &c) == 0) {
		if (mdb_cursor_get(c, &key, &val, MDB_FIRST) == 0 &&
		    key.mv_size >= STORE_EXPIRY_PREFIX) {
			at = store_get_be64(key.mv_data);
			wait = at > now_ms ? at - now_ms : 0;
			if (wait > ttl_ms)
				wait = ttl_ms;
		}
		mdb_cursor_close(c);
	}
	secs = wait / 1000 + (wait % 1000 != 0);
	if (secs < 1)
		secs = 1;
	return secs > UINT32_MAX ? UINT32_MAX : (uint32_t)secs;
}

/*
 * IDEM_OK when k's scope may hold one more record, IDEM_ELIMIT (with
 * *retry_after) when it may not.  A scope at its bound first purges what
 * has expired, which *changed reports, so that the caller commits that
 * work even when it claims nothing.
 */
static int
store_limit_check(struct store *s, MDB_txn *txn, const struct store_key *k,
    uint64_t now_ms, uint64_t ttl_ms, uint32_t *retry_after, int *changed)
{
	const uint8_t *nul = memchr(k->data, '\0', k->len);
	size_t slen = (size_t)(nul - k->data), purged = 0;
	uint64_t n;
	int rc;

	if ((rc = store_quota_get(s, txn, k->data, slen, &n)) != IDEM_OK)
		return rc;
	if (n < s->max_keys)
		return IDEM_OK;
	if ((rc = store_purge_txn(s, txn, now_ms, STORE_LIMIT_PURGE, &purged,
	    changed)) != IDEM_OK ||
	    (rc = store_quota_get(s, txn, k->data, slen, &n)) != IDEM_OK)
		return rc;
	if (n < s->max_keys)
		return IDEM_OK;
	*retry_after = store_limit_retry(s, txn, now_ms, ttl_ms);
	return IDEM_ELIMIT;
}

/* store_claim's arguments and result, for its job. */
struct store_claim_job {
	const struct store_key *k;
	const uint8_t *fp;
	const uint8_t *token;
	const struct store_first *first;
	uint64_t now_ms, lease_ms, ttl_ms;
	struct store_claim *out;
};

static int
store_claim_run(struct store *s, MDB_txn *txn, void *arg, int *wrote)
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
	rc = store_rec_get(s, txn, a->k, &out->rec);
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
		    (rc = store_limit_check(s, txn, a->k, a->now_ms, a->ttl_ms,
		    &out->retry_after, &purged)) != IDEM_OK) {
			/* Keep what the purge on the way did. */
			*wrote = rc == IDEM_ELIMIT && purged;
			return rc;
		}
		if ((rc = store_room_for_claim(s)) != IDEM_OK)
			return rc;
		rc = store_claim_fresh(s, txn, a->k, found, a->fp, a->token,
		    a->now_ms, a->lease_ms, a->ttl_ms, a->first, &out->rec);
		break;
	case ENGINE_TAKEOVER:
		rc = store_claim_takeover(s, txn, a->k, a->token, a->now_ms,
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
store_claim(struct store *s, const char *scope, const char *key,
    const uint8_t fp[FP_SIZE], const uint8_t token[REC_TOKEN_SIZE],
    uint64_t now_ms, uint64_t lease_ms, uint64_t ttl_ms,
    const struct store_first *first, struct store_claim *out)
{
	struct store_key k;
	struct store_claim_job a = { &k, fp, token, first, now_ms, lease_ms,
	    ttl_ms, out };
	uint32_t retry_after;
	int rc;

	memset(out, 0, sizeof(*out));
	/* A zero lease or TTL would let the very next retry run again. */
	if (lease_ms == 0 || ttl_ms == 0)
		return IDEM_EINVAL;
	if (first != NULL && (first->cplen > REC_MAX_CHECKPOINT ||
	    (first->cplen > 0 && first->cp == NULL)))
		return IDEM_EINVAL;
	if ((rc = store_key_make(s, scope, key, &k)) != IDEM_OK)
		return rc;
	if ((rc = store_write(s, store_claim_run, &a)) == IDEM_OK)
		return IDEM_OK;
	retry_after = out->retry_after;
	rec_free(&out->rec);
	memset(out, 0, sizeof(*out));
	if (rc == IDEM_ELIMIT)
		out->retry_after = retry_after;
	return rc;
}

/* The arguments of the writes to a claim we own. */
struct store_own_job {
	const struct store_key *k;
	const uint8_t *token;
	uint64_t now_ms;
	uint64_t span_ms;                /* lease or TTL, by operation */
	uint32_t stage;                  /* checkpoint */
	const void *cp;
	size_t cplen;
	const struct rec_response *resp; /* complete */
	const struct store_put *puts;
	size_t nputs;
};

static int
store_checkpoint_run(struct store *s, MDB_txn *txn, void *arg, int *wrote)
{
	struct store_own_job *a = arg;
	struct rec cur, next;
	int rc;

	if ((rc = store_rec_own(s, txn, a->k, a->token, &cur)) != IDEM_OK)
		return rc;
	if (fault_point("store_checkpoint")) {
		rc = IDEM_EFULL;
		goto out;
	}
	/* next borrows cp from the caller and is only encoded, never freed. */
	next = cur;
	next.stage = a->stage;
	next.cp = (uint8_t *)a->cp;
	next.cplen = a->cplen;
	next.lease_ms = store_add_ms(a->now_ms, a->span_ms);
	if ((rc = store_rec_put(s, txn, a->k, &next)) != IDEM_OK ||
	    (rc = store_index_move(s, txn, a->k, &cur, &next)) != IDEM_OK)
		goto out;
	*wrote = 1;
out:
	rec_free(&cur);
	return rc;
}

int
store_checkpoint(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint32_t stage, const void *cp,
    size_t cplen, uint64_t now_ms, uint64_t lease_ms)
{
	struct store_key k;
	struct store_own_job a = { &k, token, now_ms, lease_ms, stage, cp,
	    cplen, NULL, NULL, 0 };
	int rc;

	if (cplen > REC_MAX_CHECKPOINT)
		return IDEM_ETOOBIG;
	if (cplen > 0 && cp == NULL)
		return IDEM_EINVAL;
	if ((rc = store_key_make(s, scope, key, &k)) != IDEM_OK)
		return rc;
	return store_write(s, store_checkpoint_run, &a);
}

static int
store_puts_check(const struct store *s, const struct store_put *puts,
    size_t nputs)
{
	size_t i;

	if (nputs > 0 && puts == NULL)
		return IDEM_EINVAL;
	for (i = 0; i < nputs; i++) {
		if (!store_table_ok(puts[i].table) || puts[i].key == NULL ||
		    puts[i].keylen == 0 ||
		    (puts[i].vallen > 0 && puts[i].val == NULL))
			return IDEM_EINVAL;
		if (puts[i].keylen > s->e->maxkey)
			return IDEM_ETOOBIG;
	}
	return IDEM_OK;
}

static int
store_puts_write(struct store *s, MDB_txn *txn, const struct store_put *puts,
    size_t nputs)
{
	MDB_val key, val;
	size_t i;
	int rc;

	for (i = 0; i < nputs; i++) {
		key.mv_size = puts[i].keylen;
		key.mv_data = (void *)puts[i].key;
		val.mv_size = puts[i].vallen;
		val.mv_data = (void *)puts[i].val;
		if ((rc = store_err(mdb_put(txn, s->e->tables[puts[i].table],
		    &key, &val, 0))) != IDEM_OK)
			return rc;
	}
	return IDEM_OK;
}

/*
 * The completed record keeps the stage (how far the work went) but drops
 * the checkpoint bytes, which nothing reads once the answer is stored.
 * Its token is zeroed, so no one owns it any more, its lease_ms becomes
 * the time of completion, and it moves from wherever it was indexed to
 * the expiry index at its (possibly later) expiry.
 */
static int
store_complete_run(struct store *s, MDB_txn *txn, void *arg, int *wrote)
{
	struct store_own_job *a = arg;
	uint64_t exp = store_add_ms(a->now_ms, a->span_ms);
	struct rec cur, done;
	int rc;

	if ((rc = store_rec_own(s, txn, a->k, a->token, &cur)) != IDEM_OK)
		return rc;
	if (fault_point("store_complete")) {
		rc = IDEM_EFULL;
		goto out;
	}
	/* done borrows resp from the caller and is only encoded. */
	done = cur;
	done.state = REC_COMPLETED;
	memset(done.token, 0, sizeof(done.token));
	done.lease_ms = a->now_ms;
	if (exp > done.expires_ms)
		done.expires_ms = exp;
	done.cp = NULL;
	done.cplen = 0;
	done.resp = *a->resp;
	if ((rc = store_rec_put(s, txn, a->k, &done)) != IDEM_OK ||
	    (rc = store_index_move(s, txn, a->k, &cur, &done)) != IDEM_OK ||
	    (rc = store_puts_write(s, txn, a->puts, a->nputs)) != IDEM_OK)
		goto out;
	fault_point("store_complete_commit");
	*wrote = 1;
out:
	rec_free(&cur);
	return rc;
}

int
store_complete(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], const struct rec_response *resp,
    const struct store_put *puts, size_t nputs, uint64_t now_ms,
    uint64_t ttl_ms)
{
	struct store_key k;
	struct store_own_job a = { &k, token, now_ms, ttl_ms, 0, NULL, 0,
	    resp, puts, nputs };
	int rc;

	if (resp == NULL)
		return IDEM_EINVAL;
	if ((rc = store_puts_check(s, puts, nputs)) != IDEM_OK)
		return rc;
	if ((rc = store_key_make(s, scope, key, &k)) != IDEM_OK)
		return rc;
	return store_write(s, store_complete_run, &a);
}

static int
store_release_run(struct store *s, MDB_txn *txn, void *arg, int *wrote)
{
	struct store_own_job *a = arg;
	struct rec cur;
	MDB_val dkey = { .mv_size = a->k->len, .mv_data = (void *)a->k->data };
	int rc;

	if ((rc = store_rec_own(s, txn, a->k, a->token, &cur)) != IDEM_OK)
		return rc;
	if ((rc = store_err(mdb_del(txn, s->e->keys, &dkey, NULL))) ==
	    IDEM_OK &&
	    (rc = store_index_move(s, txn, a->k, &cur, NULL)) == IDEM_OK &&
	    (rc = store_quota_add(s, txn, a->k, -1)) == IDEM_OK)
		*wrote = 1;
	rec_free(&cur);
	return rc;
}

int
store_release(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE])
{
	struct store_key k;
	struct store_own_job a = { &k, token, 0, 0, 0, NULL, 0, NULL, NULL,
	    0 };
	int rc;

	if ((rc = store_key_make(s, scope, key, &k)) != IDEM_OK)
		return rc;
	return store_write(s, store_release_run, &a);
}

static int
store_abandon_run(struct store *s, MDB_txn *txn, void *arg, int *wrote)
{
	struct store_own_job *a = arg;
	struct rec cur, next;
	int rc;

	if ((rc = store_rec_own(s, txn, a->k, a->token, &cur)) != IDEM_OK)
		return rc;
	/* engine_decide treats lease_ms <= now as over: a take-over is due. */
	next = cur;
	next.lease_ms = a->now_ms;
	if ((rc = store_rec_put(s, txn, a->k, &next)) == IDEM_OK &&
	    (rc = store_index_move(s, txn, a->k, &cur, &next)) == IDEM_OK)
		*wrote = 1;
	rec_free(&cur);
	return rc;
}

int
store_abandon(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint64_t now_ms)
{
	struct store_key k;
	struct store_own_job a = { &k, token, now_ms, 0, 0, NULL, 0, NULL,
	    NULL, 0 };
	int rc;

	if ((rc = store_key_make(s, scope, key, &k)) != IDEM_OK)
		return rc;
	return store_write(s, store_abandon_run, &a);
}

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
store_purge_stale(struct store *s, MDB_txn *txn, MDB_cursor *c,
    const struct store_key *k, const struct rec *r,
    enum store_purge_step *step)
{
	int rc;

	*step = STORE_PURGE_DROP;
	if ((rc = store_err(mdb_cursor_del(c, 0))) != IDEM_OK)
		return rc;
	return r == NULL ? IDEM_OK : store_index_move(s, txn, k, NULL, r);
}

/*
 * Decides about the expiry entry ek under the cursor, and deletes what
 * should go.  ek is a copy: deleting under the cursor invalidates the
 * bytes LMDB handed out.
 */
static int
store_purge_entry(struct store *s, MDB_txn *txn, MDB_cursor *c,
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
		return store_err(mdb_cursor_del(c, 0));
	}
	due = store_get_be64(ek->data);
	if (due > now_ms) {
		*step = STORE_PURGE_STOP;
		return IDEM_OK;
	}
	k.len = ek->len - STORE_EXPIRY_PREFIX;
	memcpy(k.data, ek->data + STORE_EXPIRY_PREFIX, k.len);
	rc = store_rec_get(s, txn, &k, &r);
	if (rc == IDEM_ECORRUPT || rc == IDEM_ENOTFOUND)
		return store_purge_stale(s, txn, c, &k, NULL, step);
	if (rc != IDEM_OK)
		return rc;
	if (store_index_of(&r, &at) != STORE_INDEX_EXPIRY || at != due) {
		rc = store_purge_stale(s, txn, c, &k, &r, step);
		rec_free(&r);
		return rc;
	}
	/*
	 * Its time is up: a completed record or a stage-0 claim past its
	 * expiry and its lease, which engine_decide counts as absent.
	 */
	rec_free(&r);
	key.mv_size = k.len;
	key.mv_data = k.data;
	if ((rc = store_err(mdb_del(txn, s->e->keys, &key, NULL))) !=
	    IDEM_OK ||
	    (rc = store_quota_add(s, txn, &k, -1)) != IDEM_OK)
		return rc;
	*step = STORE_PURGE_DELETE;
	return store_err(mdb_cursor_del(c, 0));
}

/*
 * Walks the expiry index from its oldest entry.  After a delete the
 * cursor is placed again with MDB_SET_RANGE on the deleted key, which
 * finds its successor without relying on where mdb_cursor_del leaves the
 * cursor.
 */
static int
store_purge_walk(struct store *s, MDB_txn *txn, MDB_cursor *c,
    uint64_t now_ms, size_t max, size_t *purged, int *changed)
{
	enum store_purge_step step;
	struct store_key ek;
	MDB_val key, val;
	size_t visits, limit;
	int rc;

	limit = max > SIZE_MAX - STORE_PURGE_SLACK ? SIZE_MAX :
	    max + STORE_PURGE_SLACK;
	rc = store_err(mdb_cursor_get(c, &key, &val, MDB_FIRST));
	for (visits = 0; rc == IDEM_OK && *purged < max && visits < limit;
	    visits++) {
		if (key.mv_size > sizeof(ek.data))
			return IDEM_ECORRUPT;
		ek.len = key.mv_size;
		memcpy(ek.data, key.mv_data, key.mv_size);
		if ((rc = store_purge_entry(s, txn, c, &ek, now_ms, &step)) !=
		    IDEM_OK)
			return rc;
		if (step == STORE_PURGE_STOP)
			return IDEM_OK;
		*changed = 1;
		if (step == STORE_PURGE_DELETE)
			(*purged)++;
		key.mv_size = ek.len;
		key.mv_data = ek.data;
		rc = store_err(mdb_cursor_get(c, &key, &val, MDB_SET_RANGE));
	}
	return rc == IDEM_ENOTFOUND ? IDEM_OK : rc;
}

/* Purges inside txn: the work of store_purge, for any write transaction. */
static int
store_purge_txn(struct store *s, MDB_txn *txn, uint64_t now_ms, size_t max,
    size_t *purged, int *changed)
{
	MDB_cursor *c;
	int rc;

	if ((rc = store_err(mdb_cursor_open(txn, s->e->expiry, &c))) !=
	    IDEM_OK)
		return rc;
	rc = store_purge_walk(s, txn, c, now_ms, max, purged, changed);
	mdb_cursor_close(c);
	return rc;
}

struct store_purge_job {
	uint64_t now_ms;
	size_t max;
	size_t purged;
};

static int
store_purge_run(struct store *s, MDB_txn *txn, void *arg, int *wrote)
{
	struct store_purge_job *a = arg;
	int rc;

	a->purged = 0;
	if ((rc = store_purge_txn(s, txn, a->now_ms, a->max, &a->purged,
	    wrote)) != IDEM_OK)
		*wrote = 0;
	return rc;
}

int
store_purge(struct store *s, uint64_t now_ms, size_t max, size_t *purged)
{
	struct store_purge_job a = { now_ms, max, 0 };
	int rc;

	*purged = 0;
	if (max == 0)
		return IDEM_OK;
	if ((rc = store_write(s, store_purge_run, &a)) == IDEM_OK)
		*purged = a.purged;
	return rc;
}

static int
store_row_key(const struct store *s, enum store_table t, const void *key,
    size_t keylen)
{
	if (!store_table_ok(t) || key == NULL || keylen == 0)
		return IDEM_EINVAL;
	if (keylen > s->e->maxkey)
		return IDEM_ETOOBIG;
	return IDEM_OK;
}

/* Appends the row's value to out (the caller's buffer). */
int
store_get(struct store *s, enum store_table t, const void *key,
    size_t keylen, struct buf *out)
{
	MDB_txn *txn;
	MDB_val k = { .mv_size = keylen, .mv_data = (void *)key };
	MDB_val v;
	int rc;

	if ((rc = store_row_key(s, t, key, keylen)) != IDEM_OK)
		return rc;
	if ((rc = store_txn_begin(s, 0, &txn)) != IDEM_OK)
		return rc;
	if ((rc = store_err(mdb_get(txn, s->e->tables[t], &k, &v))) ==
	    IDEM_OK)
		rc = buf_append(out, v.mv_data, v.mv_size);
	mdb_txn_abort(txn);
	return rc;
}

struct store_insert_job {
	MDB_dbi dbi;
	MDB_val k, v;
	struct buf *existing;
	size_t existing_len;    /* its length before the job, for a rerun */
};

static int
store_insert_run(struct store *s, MDB_txn *txn, void *arg, int *wrote)
{
	struct store_insert_job *a = arg;
	MDB_val v = a->v;
	int rc;

	(void)s;
	if (a->existing != NULL)
		a->existing->len = a->existing_len;
	rc = store_err(mdb_put(txn, a->dbi, &a->k, &v, MDB_NOOVERWRITE));
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
store_insert_once(struct store *s, enum store_table t, const void *key,
    size_t keylen, const void *val, size_t vallen, struct buf *existing)
{
	struct store_insert_job a;
	int rc;

	if ((rc = store_row_key(s, t, key, keylen)) != IDEM_OK)
		return rc;
	if (vallen > 0 && val == NULL)
		return IDEM_EINVAL;
	a.dbi = s->e->tables[t];
	a.k.mv_size = keylen;
	a.k.mv_data = (void *)key;
	a.v.mv_size = vallen;
	a.v.mv_data = (void *)val;
	a.existing = existing;
	a.existing_len = existing != NULL ? existing->len : 0;
	return store_write(s, store_insert_run, &a);
}

static int
store_has_prefix(const MDB_val *key, const void *prefix, size_t prefixlen)
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
store_scan_last(MDB_cursor *c, const void *prefix, size_t prefixlen,
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
store_scan_first(MDB_cursor *c, const void *prefix, size_t prefixlen,
    MDB_val *key, MDB_val *val)
{
	if (prefixlen == 0)
		return mdb_cursor_get(c, key, val, MDB_FIRST);
	key->mv_size = prefixlen;
	key->mv_data = (void *)prefix;
	return mdb_cursor_get(c, key, val, MDB_SET_RANGE);
}

int
store_scan(struct store *s, enum store_table t, const void *prefix,
    size_t prefixlen, int reverse, size_t limit, store_scan_fn fn, void *ctx)
{
	MDB_txn *txn;
	MDB_cursor *c;
	MDB_val key, val;
	size_t n = 0;
	int rc;

	if (!store_table_ok(t) || fn == NULL ||
	    (prefixlen > 0 && prefix == NULL))
		return IDEM_EINVAL;
	/* No stored key is longer than LMDB's limit, so none can match. */
	if (prefixlen > s->e->maxkey)
		return IDEM_OK;
	if ((rc = store_txn_begin(s, 0, &txn)) != IDEM_OK)
		return rc;
	if ((rc = store_err(mdb_cursor_open(txn, s->e->tables[t], &c))) !=
	    IDEM_OK)
		goto fail_txn;
	rc = store_err(reverse ?
	    store_scan_last(c, prefix, prefixlen, &key, &val) :
	    store_scan_first(c, prefix, prefixlen, &key, &val));
	while (rc == IDEM_OK && store_has_prefix(&key, prefix, prefixlen) &&
	    (limit == 0 || n < limit)) {
		n++;
		if (fn(ctx, key.mv_data, key.mv_size, val.mv_data,
		    val.mv_size) != 0)
			break;
		rc = store_err(mdb_cursor_get(c, &key, &val,
		    reverse ? MDB_PREV : MDB_NEXT));
	}
	if (rc == IDEM_ENOTFOUND)
		rc = IDEM_OK;
	mdb_cursor_close(c);
fail_txn:
	mdb_txn_abort(txn);
	return rc;
}

/*
 * Splits a record key into NUL-terminated scope and key, in out (which
 * holds STORE_KEY_BUF + 1 bytes).
 */
static int
store_key_split(const MDB_val *k, char *out, const char **scope,
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
store_walk(struct store *s, MDB_dbi dbi, store_each_fn fn, void *ctx)
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
	if ((rc = store_txn_begin(s, 0, &txn)) != IDEM_OK)
		return rc;
	if ((rc = store_err(mdb_cursor_open(txn, dbi, &c))) != IDEM_OK)
		goto fail_txn;
	rc = store_err(mdb_cursor_get(c, &k, &v, MDB_FIRST));
	while (rc == IDEM_OK && !stop) {
		if ((rc = store_key_split(&k, names, &scope, &key)) != IDEM_OK)
			break;
		if (index && (rc = store_err(mdb_get(txn, s->e->keys, &k,
		    &v))) != IDEM_OK && rc != IDEM_ENOTFOUND)
			break;
		if (rc == IDEM_OK) {
			if ((rc = rec_decode(v.mv_data, v.mv_size, &r)) !=
			    IDEM_OK)
				break;
			if (!index || (r.state == REC_IN_PROGRESS &&
			    r.stage != 0))
				stop = fn(ctx, scope, key, &r);
			rec_free(&r);
		}
		rc = store_err(mdb_cursor_get(c, &k, &v, MDB_NEXT));
	}
	if (rc == IDEM_ENOTFOUND)
		rc = IDEM_OK;
	mdb_cursor_close(c);
fail_txn:
	mdb_txn_abort(txn);
	return rc;
}

int
store_each(struct store *s, store_each_fn fn, void *ctx)
{
	return store_walk(s, s->e->keys, fn, ctx);
}

int
store_each_pending(struct store *s, store_each_fn fn, void *ctx)
{
	return store_walk(s, s->e->pending, fn, ctx);
}

int
store_count_scope(struct store *s, const char *scope, uint64_t *n)
{
	MDB_txn *txn;
	size_t slen;
	int rc;

	*n = 0;
	if (scope == NULL || *scope == '\0')
		return IDEM_EINVAL;
	if ((slen = strlen(scope)) > s->e->maxkey)
		return IDEM_ETOOBIG;
	if ((rc = store_txn_begin(s, 0, &txn)) != IDEM_OK)
		return rc;
	rc = store_quota_get(s, txn, (const uint8_t *)scope, slen, n);
	mdb_txn_abort(txn);
	return rc;
}

static int
store_count_dbi(struct store *s, MDB_dbi dbi, size_t *n)
{
	MDB_txn *txn;
	MDB_stat st;
	int rc;

	*n = 0;
	if ((rc = store_txn_begin(s, 0, &txn)) != IDEM_OK)
		return rc;
	if ((rc = store_err(mdb_stat(txn, dbi, &st))) == IDEM_OK)
		*n = st.ms_entries;
	mdb_txn_abort(txn);
	return rc;
}

int
store_count(struct store *s, enum store_table t, size_t *n)
{
	if (!store_table_ok(t))
		return IDEM_EINVAL;
	return store_count_dbi(s, s->e->tables[t], n);
}

int
store_count_keys(struct store *s, size_t *n)
{
	return store_count_dbi(s, s->e->keys, n);
}
