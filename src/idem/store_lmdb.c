/* SPDX-License-Identifier: MIT */
/*
 * store_lmdb.c: the LMDB backend's environments (open, close, the
 * open-after-fork rule), group commit, and its operations table
 * (store_lmdb.h has the whole backend's layout; transactions begin and
 * end in store_lmdb_txn.c).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <lmdb.h>

#include "buf.h"
#include "err.h"
#include "fault.h"
#include "metrics.h"
#include "store_lmdb.h"

/* The environments open in this process, and the lock over the list. */
static struct store_env *lstore_envs;
static pthread_mutex_t lstore_envs_mu = PTHREAD_MUTEX_INITIALIZER;

/* The one place where LMDB and errno codes become enum idem_err. */
int
lstore_err(int rc)
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
	case MDB_MAP_RESIZED:
		/*
		 * A grown map that this begin could not adopt: it is nested
		 * in a transaction of its thread, or the map kept growing.
		 */
		return IDEM_EBUSY;
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

struct lstore *
lstore_of(struct store *s)
{
	return (struct lstore *)s;
}

int
lstore_table(const struct lstore *s, const char *name, MDB_dbi *dbi)
{
	size_t i;

	if (name == NULL)
		return IDEM_EINVAL;
	for (i = 0; i < s->e->ntables; i++)
		if (strcmp(s->e->tables[i].name, name) == 0) {
			*dbi = s->e->tables[i].dbi;
			return IDEM_OK;
		}
	return IDEM_EINVAL;
}

/*
 * Builds "scope NUL key".  The expiry key is eight bytes longer, and it
 * too must fit LMDB's key limit: store_names_check's rule.
 */
int
lstore_key_make(const struct lstore *s, const char *scope, const char *key,
    struct store_key *k)
{
	size_t slen, klen;
	int rc;

	if ((rc = store_names_check(scope, key, s->e->maxkey)) != IDEM_OK)
		return rc;
	slen = strlen(scope);
	klen = strlen(key);
	memcpy(k->data, scope, slen);
	k->data[slen] = '\0';
	memcpy(k->data + slen + 1, key, klen);
	k->len = slen + 1 + klen;
	return IDEM_OK;
}

void
lstore_expiry_make(uint64_t expires_ms, const struct store_key *k,
    struct store_key *ek)
{
	be_put(ek->data, 8, expires_ms);
	memcpy(ek->data + STORE_EXPIRY_PREFIX, k->data, k->len);
	ek->len = STORE_EXPIRY_PREFIX + k->len;
}

/*
 * IDEM_EINVAL when dir's data.mdb or lock.mdb exists and is not a
 * regular file: LMDB would open a FIFO there and then wait for ever on
 * its first read, and a device or a directory is no store either.  stat
 * does not open, so it waits for nothing; a symbolic link to a regular
 * file is one.
 */
static int
lstore_files_check(const char *dir)
{
	static const char *const names[] = { "data.mdb", "lock.mdb" };
	char path[PATH_MAX];
	struct stat st;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
		    names[i]) >= sizeof(path))
			return IDEM_EINVAL;
		if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
			return IDEM_EINVAL;
	}
	return IDEM_OK;
}

/*
 * Creates dir and its missing parents, mode 0700: the store holds stored
 * responses, which are nobody else's business.
 */
static int
lstore_mkdirs(const char *dir)
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
			return lstore_err(errno);
		path[i] = dir[i];
	}
	if (stat(dir, &st) == -1)
		return lstore_err(errno);
	if (!S_ISDIR(st.st_mode))
		return IDEM_EINVAL;
	return IDEM_OK;
}

/*
 * Opens, in txn, every table of names that e has not opened yet.  A
 * table's handle is ours only once txn commits, so the caller commits
 * before it counts the new entries (ntables).  LMDB codes
 * come back raw.
 */
static int
lstore_tables_open(struct store_env *e, MDB_txn *txn,
    const char *const *names, unsigned int flags, size_t *n)
{
	MDB_dbi dbi;
	size_t i, j;
	int rc, have;

	*n = e->ntables;
	for (i = 0; names != NULL && names[i] != NULL; i++) {
		for (j = 0, have = 0; j < *n && !have; j++)
			have = strcmp(e->tables[j].name, names[i]) == 0;
		if (have)
			continue;
		if (*n >= IDEM_MAX_TABLES)
			return EINVAL;
		if ((rc = mdb_dbi_open(txn, names[i], flags, &dbi)) != 0)
			return rc;
		memcpy(e->tables[*n].name, names[i], strlen(names[i]) + 1);
		e->tables[*n].dbi = dbi;
		(*n)++;
	}
	return 0;
}

static int
lstore_dbis_open(struct store_env *e, MDB_txn *txn, unsigned int flags,
    const char *const *tables, size_t *n)
{
	int rc;

	if ((rc = mdb_dbi_open(txn, "keys", flags, &e->keys)) != 0 ||
	    (rc = mdb_dbi_open(txn, "expiry", flags, &e->expiry)) != 0 ||
	    (rc = mdb_dbi_open(txn, "pending", flags, &e->pending)) != 0 ||
	    (rc = mdb_dbi_open(txn, "quota", flags, &e->quota)) != 0)
		return rc;
	rc = mdb_dbi_open(txn, "gens", flags, &e->gens);
	if (rc != 0 && (rc != MDB_NOTFOUND || (flags & MDB_CREATE) != 0))
		return rc;
	e->has_gens = rc == 0;
	return lstore_tables_open(e, txn, tables, flags, n);
}

/*
 * A second handle on an environment that names tables the first did not:
 * they are opened now, in a transaction of their own, under
 * lstore_envs_mu.  Open every handle before the threads that use the
 * environment start.  LMDB codes come back raw.
 */
static int
lstore_tables_add(struct store_env *e, const struct store_config *cfg)
{
	MDB_txn *txn;
	size_t n;
	int rc;

	if ((rc = lstore_env_txn_begin(e, e->read_only ? MDB_RDONLY : 0,
	    &txn)) != 0)
		return rc;
	if ((rc = lstore_tables_open(e, txn, cfg->tables,
	    e->read_only ? 0 : MDB_CREATE, &n)) != 0) {
		lstore_env_txn_end(txn, 0);
		return rc;
	}
	if (n == e->ntables) {
		lstore_env_txn_end(txn, 0);
		return 0;
	}
	if ((rc = lstore_env_txn_end(txn, 1)) != 0)
		return rc;
	e->ntables = n;
	return 0;
}

/*
 * Opens the environment and its databases.  LMDB error codes come back
 * raw; the caller translates them.
 */
static int
lstore_env_open(const struct store_config *cfg, const struct stat *st,
    struct store_env **out)
{
	struct store_env *e;
	MDB_txn *txn;
	unsigned int flags = MDB_NOTLS;
	size_t n;
	int rc, dead, maxkey, grew;

	if ((e = calloc(1, sizeof(*e))) == NULL)
		return ENOMEM;
	if ((rc = mdb_env_create(&e->env)) != 0)
		goto fail_free;
	if ((rc = mdb_env_set_maxdbs(e->env, STORE_MAX_DBS)) != 0 ||
	    (rc = mdb_env_set_maxreaders(e->env, STORE_MAX_READERS)) != 0 ||
	    (rc = lstore_map_init(e->env, cfg->map_size)) != 0)
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
	if ((rc = lstore_gate_init(e)) != 0)
		goto fail_env;
	/* A store another process gave a larger map: that size, at once. */
	e->map_want = cfg->map_size;
	if (!cfg->read_only && (rc = lstore_map_adopt(e, &grew)) != 0)
		goto fail_gate;
	if ((rc = lstore_env_txn_begin(e, cfg->read_only ? MDB_RDONLY : 0,
	    &txn)) != 0)
		goto fail_gate;
	if ((rc = lstore_dbis_open(e, txn, cfg->read_only ? 0 : MDB_CREATE,
	    cfg->tables, &n)) != 0)
		goto fail_txn;
	/* Handles opened in a transaction are ours only once it commits. */
	if ((rc = lstore_env_txn_end(txn, 1)) != 0)
		goto fail_gate;
	e->ntables = n;
	maxkey = mdb_env_get_maxkeysize(e->env);
	e->maxkey = maxkey > 0 && maxkey < STORE_KEY_BUF ?
	    (size_t)maxkey : STORE_KEY_BUF;
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->pid = getpid();
	e->refs = 1;
	e->read_only = cfg->read_only;
	if ((rc = pthread_mutex_init(&e->mu, NULL)) != 0)
		goto fail_gate;
	if ((rc = store_cond_init(&e->gathered)) != 0) {
		pthread_mutex_destroy(&e->mu);
		goto fail_gate;
	}
	e->queue_tail = &e->queue;
	e->gather_us = cfg->commit_delay_us;
	*out = e;
	return 0;

fail_txn:
	lstore_env_txn_end(txn, 0);
fail_gate:
	lstore_gate_destroy(e);
fail_env:
	mdb_env_close(e->env);
fail_free:
	free(e);
	return rc;
}

static struct store_env *
lstore_env_find(const struct stat *st)
{
	struct store_env *e;
	pid_t pid = getpid();

	for (e = lstore_envs; e != NULL; e = e->next)
		if (e->dev == st->st_dev && e->ino == st->st_ino &&
		    e->pid == pid)
			return e;
	return NULL;
}

/*
 * On IDEM_OK *out is the caller's, released with lstore_close.  A second
 * open of the same directory in this process shares the first one's
 * environment, whose map size stays as first set.  IDEM_EINVAL,
 * IDEM_ENOTFOUND (read-only and nothing there, or a table missing from a
 * read-only store), IDEM_EROFS, IDEM_ENOMEM, IDEM_EIO.
 */
static int
lstore_open(const struct store_config *cfg, struct store **out)
{
	struct store_env *e;
	struct lstore *s;
	struct stat st;
	int rc;

	*out = NULL;
	if (cfg == NULL || cfg->dir == NULL || *cfg->dir == '\0')
		return IDEM_EINVAL;
	if (!cfg->read_only && (rc = lstore_mkdirs(cfg->dir)) != IDEM_OK)
		return rc;
	if (stat(cfg->dir, &st) == -1)
		return errno == ENOENT ? IDEM_ENOTFOUND : lstore_err(errno);
	if ((rc = lstore_files_check(cfg->dir)) != IDEM_OK)
		return rc;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return IDEM_ENOMEM;
	s->read_only = cfg->read_only;
	s->max_keys = cfg->max_keys_per_scope;
	pthread_mutex_lock(&lstore_envs_mu);
	if ((e = lstore_env_find(&st)) != NULL) {
		/* A read-only environment cannot serve a writer. */
		if (e->read_only && !cfg->read_only) {
			rc = IDEM_EROFS;
			goto fail;
		}
		if ((rc = lstore_tables_add(e, cfg)) != 0) {
			rc = rc == MDB_NOTFOUND ? IDEM_ENOTFOUND :
			    lstore_err(rc);
			goto fail;
		}
		e->refs++;
	} else {
		if ((rc = lstore_env_open(cfg, &st, &e)) != 0) {
			rc = rc == ENOENT || rc == MDB_NOTFOUND ?
			    IDEM_ENOTFOUND : lstore_err(rc);
			goto fail;
		}
		e->next = lstore_envs;
		lstore_envs = e;
	}
	pthread_mutex_unlock(&lstore_envs_mu);
	s->base.ops = &store_lmdb_ops;
	s->e = e;
	*out = &s->base;
	return IDEM_OK;

fail:
	pthread_mutex_unlock(&lstore_envs_mu);
	free(s);
	return rc;
}

static void
lstore_close(struct store *base)
{
	struct lstore *s = lstore_of(base);
	struct store_env **pp;
	struct store_env *e;

	if (s == NULL)
		return;
	e = s->e;
	free(s);
	pthread_mutex_lock(&lstore_envs_mu);
	if (--e->refs > 0) {
		pthread_mutex_unlock(&lstore_envs_mu);
		return;
	}
	for (pp = &lstore_envs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	pthread_mutex_unlock(&lstore_envs_mu);
	/*
	 * An environment inherited across fork belongs to the parent: closing
	 * it here could clear the parent's state, so only forget it.
	 */
	if (e->pid == getpid()) {
		mdb_env_close(e->env);
		pthread_cond_destroy(&e->gathered);
		pthread_mutex_destroy(&e->mu);
		lstore_gate_destroy(e);
	}
	free(e);
}

/* A batch's commit, its time counted: the durable I/O writers wait for. */
static int
lstore_commit_timed(MDB_txn *txn)
{
	uint64_t t0 = metrics_now_us();
	int rc = lstore_txn_commit(txn);

	metrics_add(METRIC_STORE_COMMIT_US, metrics_now_us() - t0);
	return rc;
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
lstore_rc_clean(int rc)
{
	return rc == IDEM_OK || rc == IDEM_ELOST || rc == IDEM_EEXIST ||
	    rc == IDEM_ELIMIT;
}

/*
 * Commits a batch's transaction, or, at the fault point batch_commit
 * (fail), aborts it after its jobs ran and fails as a commit whose pages
 * cannot be written does.
 */
static int
lstore_batch_commit(MDB_txn *txn)
{
	if (fault_point("batch_commit")) {
		lstore_txn_abort(txn);
		return IDEM_EIO;
	}
	return lstore_commit_timed(txn);
}

/*
 * Runs jobs one to a transaction, each committed alone when it wrote and
 * rolled back alone when it failed: the batch's way out when a job did
 * not fail cleanly.
 */
static void
lstore_batch_alone(struct lstore *any, struct store_job *batch)
{
	struct store_job *j;
	MDB_txn *txn;
	int rc;

	for (j = batch; j != NULL; j = j->next) {
		j->wrote = 0;
		if ((rc = lstore_txn_begin(any, 1, &txn)) != IDEM_OK) {
			j->rc = rc;
			continue;
		}
		j->rc = j->fn(j->s, txn, j->arg, &j->wrote);
		if (j->wrote <= 0 || !lstore_rc_clean(j->rc)) {
			/* Nothing to keep, or half a job: either way, undone. */
			lstore_txn_abort(txn);
			j->wrote = 0;
			continue;
		}
		if ((rc = lstore_batch_commit(txn)) != IDEM_OK) {
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
 * after that commit.  If it fails, every job of the batch gets its error,
 * those that only read too: a job reads the writes of the jobs before it
 * in the batch, so a replay, a 409, a 422, a scope at its bound, a claim
 * found lost or a row found to exist may have been decided on writes that
 * never reached the disk (doc/DESIGN.md, invariant 9).  Jobs fail
 * cleanly, before they write, in all but rare cases (lstore_rc_clean);
 * when one does not, the batch is rolled back and each job run again in
 * a transaction of its own, so one request's failure never undoes
 * another's write.
 */
static void
lstore_batch_run(struct lstore *any, MDB_txn *txn, struct store_job *batch)
{
	struct store_job *j;
	size_t kept = 0;
	int rc;

	for (j = batch; j != NULL; j = j->next) {
		j->wrote = 0;
		j->rc = j->fn(j->s, txn, j->arg, &j->wrote);
		if (!lstore_rc_clean(j->rc) || j->wrote < 0) {
			lstore_txn_abort(txn);
			lstore_batch_alone(any, batch);
			return;
		}
		kept += j->wrote > 0;
	}
	if (kept == 0) {
		/* Nothing to write: give the lock back without a sync. */
		lstore_txn_abort(txn);
		return;
	}
	if ((rc = lstore_batch_commit(txn)) != IDEM_OK) {
		for (j = batch; j != NULL; j = j->next)
#ifdef IDEM_PLANT_BATCH_READERS
			/* The planted bug: only the writers hear of it. */
			if (j->wrote > 0)
#endif
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
 * likely on their way: the leader waits, up to gather_us, until as many
 * jobs are queued as the last batch carried, so that they share this
 * commit instead of each paying for the next one (PostgreSQL's
 * commit_delay, ended early once the writers it waits for are in).  A
 * lone writer never waits, nor does a leader that finds them queued
 * already.  Called and returns with e->mu held.
 */
static void
lstore_gather(struct store_env *e)
{
	struct timespec until;

	if (e->gather_us == 0 || e->last_batch < 2 ||
	    e->queued >= e->last_batch)
		return;
	store_deadline(&until, e->gather_us);
	e->gather_want = e->last_batch;
	while (e->queued < e->gather_want &&
	    pthread_cond_timedwait(&e->gathered, &e->mu, &until) == 0)
		;
	e->gather_want = 0;
}

/*
 * One group commit, led by the calling thread, whose own job is queued.
 * It begins the write transaction, which may wait for LMDB's write lock
 * while another process commits, and only then takes every job queued so
 * far (its own included), so that jobs that arrived during that wait
 * ride along; it runs them and commits.  Then it hands the lead to the
 * job now at the head of the queue, if any, so that the next commit
 * starts at once, and wakes every job of its batch, its own too.
 *
 * A job's thread may return, and its job vanish, as soon as its wake is
 * posted: the leader reads what it needs of a job before that.
 */
static void
lstore_lead(struct lstore *s)
{
	struct store_env *e = s->e;
	struct store_job *batch, *j, *next;
	MDB_txn *txn;
	int rc;

	rc = lstore_txn_begin(s, 1, &txn);
	/*
	 * Here a leader may have waited long for LMDB's write lock.  A
	 * failure here (a fault point's) fails the whole batch before any
	 * of its jobs runs, as a begin that fails does.
	 */
	if (rc == IDEM_OK && fault_point("store_wait")) {
		lstore_txn_abort(txn);
		rc = IDEM_EFULL;
	}
	pthread_mutex_lock(&e->mu);
	lstore_gather(e);
	e->last_batch = e->queued;
	e->queued = 0;
	batch = e->queue;
	e->queue = NULL;
	e->queue_tail = &e->queue;
	pthread_mutex_unlock(&e->mu);
	if (rc == IDEM_OK)
		lstore_batch_run(s, txn, batch);
	else
		for (j = batch; j != NULL; j = j->next)
			j->rc = rc;
	pthread_mutex_lock(&e->mu);
	if ((next = e->queue) == NULL)
		e->leading = 0;
	pthread_mutex_unlock(&e->mu);
	if (next != NULL) {
		next->lead = 1;
		sem_post(&next->wake);
	}
	for (j = batch; j != NULL; j = next) {
		next = j->next;
		j->done = 1;
		sem_post(&j->wake);
	}
}

/*
 * Runs fn(s, txn, arg) in the next group commit of s's environment and
 * returns its result once that commit is durable.  A thread that finds
 * no commit under way leads one (lstore_lead); the others wait on their
 * job's semaphore until a leader has committed their job or handed them
 * the lead.  So a lone request commits at once, and concurrent ones share
 * one sync: group commit without a thread of its own, the same in a
 * single-threaded CGI process.  The write transaction stays on the
 * leader's thread from begin to commit, as LMDB requires.
 *
 * e->mu guards only the queue and who leads; a leader wakes each waiting
 * thread with one post, and no woken thread waits for a lock the others
 * hold.
 */
int
lstore_write(struct lstore *s, store_job_fn fn, void *arg)
{
	struct store_env *e = s->e;
	struct store_job job;
	uint64_t t0;
	int lead;

	if (s->read_only)
		return IDEM_EROFS;
	/*
	 * A thread inside a transaction of its own would wait here for a
	 * leader that may be waiting, behind a remap, for that transaction
	 * to end (store_lmdb.h).
	 */
	if (lstore_txn_held(e))
		return IDEM_EBUSY;
	t0 = metrics_now_us();
	memset(&job, 0, sizeof(job));
	job.s = s;
	job.fn = fn;
	job.arg = arg;
	if (sem_init(&job.wake, 0, 0) != 0)
		return IDEM_ENOMEM;
	pthread_mutex_lock(&e->mu);
	*e->queue_tail = &job;
	e->queue_tail = &job.next;
	if (++e->queued == e->gather_want)
		pthread_cond_signal(&e->gathered);
	if ((lead = !e->leading) != 0)
		e->leading = 1;
	pthread_mutex_unlock(&e->mu);
	/* Tests hold a job here to know it is queued behind a leader. */
	if (!lead)
		fault_point("store_queued");
	for (;;) {
		/* Our job is queued, so a commit we lead carries it. */
		if (lead)
			lstore_lead(s);
		/* done and lead are the poster's, read only after its post. */
		while (sem_wait(&job.wake) != 0)
			;       /* EINTR: a signal, not a post */
		if (job.done)
			break;
		lead = job.lead;
	}
	sem_destroy(&job.wake);
	metrics_add(METRIC_STORE_WAIT_US, metrics_now_us() - t0);
	return job.rc;
}

const struct store_ops store_lmdb_ops = {
	.name = "lmdb",
	.open = lstore_open,
	.close = lstore_close,
	.lookup = lstore_lookup,
	.claim = lstore_claim,
	.checkpoint = lstore_checkpoint,
	.complete = lstore_complete,
	.release = lstore_release,
	.abandon = lstore_abandon,
	.purge = lstore_purge,
	.get = lstore_get,
	.insert_once = lstore_insert_once,
	.scan = lstore_scan,
	.each = lstore_each,
	.each_pending = lstore_each_pending,
	.count = lstore_count,
	.tx_get = lstore_tx_get,
	.tx_put = lstore_tx_put,
	.tx_del = lstore_tx_del,
	.reseal = lstore_reseal,
};
