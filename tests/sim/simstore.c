/* SPDX-License-Identifier: MIT */
/*
 * simstore.c: a store backend (struct store_ops, src/idem/store.h) for
 * simulation.
 *
 * What it keeps is what a disk would keep: an ordered map of committed
 * (table, key) -> value pairs, shared by every worker of the schedule.  A
 * write transaction collects its changes in a write set and copies them
 * into the map when it commits, so a transaction that fails part way, or
 * a worker that dies before the commit, leaves the map as it was.
 *
 * The semantics follow store_lmdb.c: one record per (scope, key), encoded
 * with rec_encode (so the codec runs too), the engine's decision taken
 * inside the claim's transaction, owner tokens checked on every write to a
 * claim, expiry moved to at least now+TTL by completions and take-overs,
 * and purge by each record's index time (its expiry, or its lease when
 * later; never for a claim past stage 0).  Per-scope quotas are not
 * modelled (the simulation runs without a bound).
 *
 * Each operation yields before it runs (a crash there loses the write)
 * and after it commits (a crash there loses only the answer); nothing
 * yields inside a transaction, which is what makes it atomic.
 *
 * Writes are group-committed as store_lmdb.c commits them (lstore_write):
 * one write transaction is open at a time (LMDB's write lock), owned by
 * one worker (a process: a group commit is per environment and process).
 * The write that finds none open leads one; while its leader gathers
 * (yields), writes of the same worker join it, each reading the writes
 * of the jobs before it, and writes of other workers wait for the lock.
 * The leader then commits once, or the commit fails after its jobs ran
 * (the profile's commit_fail_ppm, as a disk that cannot take the pages):
 * then every job of the batch fails with it, the jobs that only read
 * too, since their verdicts were taken on the batch's writes.  A worker
 * that dies while its batch is open loses the batch.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "check.h"
#include "crypto.h"
#include "engine.h"
#include "err.h"
#include "record.h"
#include "sim.h"
#include "store.h"
#include "simstore.h"
#include "glue.h"
#include "simprov.h"

#define T_MAX (IDEM_MAX_TABLES + 1)

#define T_RECORDS 0   /* scope NUL key -> encoded record; then the app's */
#define T_GENS T_MAX  /* scope NUL key -> be64 generation (store.h) */
#define TXN_MAX 256
#define BATCH_MAX 64

struct simstore {
	struct store base;
};

/* Table names: index 0 is the records, then the application's tables. */
static char tables[T_MAX][STORE_TABLE_NAME_MAX + 1];
static unsigned ntables;

static int
table_id(const char *name, unsigned *t)
{
	unsigned i;

	for (i = 1; i < ntables; i++)
		if (strcmp(tables[i], name) == 0) {
			*t = i;
			return IDEM_OK;
		}
	return IDEM_EINVAL;
}

struct ent {
	unsigned t;
	uint8_t *k, *v;
	size_t kl, vl;
};

/* The committed state: the simulated disk. */
static struct ent *map;
static size_t nmap, capmap;

struct wop {
	struct ent e;
	int del;
};

struct txn {
	struct wop ops[TXN_MAX];
	int n;
};

static int
ent_cmp(unsigned t, const void *k, size_t kl, const struct ent *e)
{
	size_t n = kl < e->kl ? kl : e->kl;
	int c;

	if (t != e->t)
		return t < e->t ? -1 : 1;
	if ((c = memcmp(k, e->k, n)) != 0)
		return c;
	return kl < e->kl ? -1 : kl > e->kl;
}

/* The first entry not below (t, k); *found when it is (t, k). */
static size_t
map_find(unsigned t, const void *k, size_t kl, int *found)
{
	size_t lo = 0, hi = nmap, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ent_cmp(t, k, kl, &map[mid]) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < nmap && ent_cmp(t, k, kl, &map[lo]) == 0;
	return lo;
}

static void *
dup_bytes(const void *p, size_t n)
{
	void *q = malloc(n > 0 ? n : 1);

	if (q == NULL)
		abort();
	if (n > 0)
		memcpy(q, p, n);
	return q;
}

static void
map_put(const struct ent *e)
{
	int found;
	size_t i = map_find(e->t, e->k, e->kl, &found);

	if (found) {
		free(map[i].v);
		map[i].v = dup_bytes(e->v, e->vl);
		map[i].vl = e->vl;
		return;
	}
	if (nmap == capmap) {
		capmap = capmap ? 2 * capmap : 64;
		if ((map = realloc(map, capmap * sizeof(*map))) == NULL)
			abort();
	}
	memmove(&map[i + 1], &map[i], (nmap - i) * sizeof(*map));
	map[i].t = e->t;
	map[i].k = dup_bytes(e->k, e->kl);
	map[i].kl = e->kl;
	map[i].v = dup_bytes(e->v, e->vl);
	map[i].vl = e->vl;
	nmap++;
}

static void
map_del(unsigned t, const void *k, size_t kl)
{
	int found;
	size_t i = map_find(t, k, kl, &found);

	if (!found)
		return;
	free(map[i].k);
	free(map[i].v);
	memmove(&map[i], &map[i + 1], (nmap - i - 1) * sizeof(*map));
	nmap--;
}

static void batch_reset(void);

void
simstore_reset(void)
{
	size_t i;

	for (i = 0; i < nmap; i++) {
		free(map[i].k);
		free(map[i].v);
	}
	free(map);
	map = NULL;
	nmap = capmap = 0;
	ntables = 1;
	strcpy(tables[0], "keys");
	batch_reset();
}

static void
txn_op(struct txn *tx, unsigned t, const void *k, size_t kl, const void *v,
    size_t vl, int del)
{
	struct wop *o;

	if (tx->n == TXN_MAX)
		abort();
	o = &tx->ops[tx->n++];
	o->e.t = t;
	o->e.k = dup_bytes(k, kl);
	o->e.kl = kl;
	o->e.v = del ? NULL : dup_bytes(v, vl);
	o->e.vl = del ? 0 : vl;
	o->del = del;
}

/* Reads through the write set: the transaction sees its own writes. */
static int
txn_get(const struct txn *tx, unsigned t, const void *k, size_t kl,
    const uint8_t **v, size_t *vl)
{
	int i, found;
	size_t at;

	for (i = tx->n - 1; i >= 0; i--)
		if (ent_cmp(t, k, kl, &tx->ops[i].e) == 0) {
			if (tx->ops[i].del)
				return IDEM_ENOTFOUND;
			*v = tx->ops[i].e.v;
			*vl = tx->ops[i].e.vl;
			return IDEM_OK;
		}
	at = map_find(t, k, kl, &found);
	if (!found)
		return IDEM_ENOTFOUND;
	*v = map[at].v;
	*vl = map[at].vl;
	return IDEM_OK;
}

static void
txn_end(struct txn *tx, int commit)
{
	int i;

	for (i = 0; i < tx->n; i++) {
		if (commit && tx->ops[i].del)
			map_del(tx->ops[i].e.t, tx->ops[i].e.k, tx->ops[i].e.kl);
		else if (commit)
			map_put(&tx->ops[i].e);
		free(tx->ops[i].e.k);
		free(tx->ops[i].e.v);
	}
	tx->n = 0;
}

/* A job of the open batch, as its leader ends it. */
struct bjob {
	struct sim_req *rq;       /* the request it serves, or NULL */
	int wrote;
	int *rc;                  /* the job's result, on its parked stack */
	const char *scope, *key;  /* a completion's, for the checker */
};

/* The open batch: the write transaction, and the jobs it carries. */
static struct {
	int open;
	int worker;               /* whose process holds the write lock */
	int closing;              /* its leader is committing it */
	uint64_t ended;           /* batches ended so far */
	struct txn tx;
	struct bjob jobs[BATCH_MAX];
	int njobs;
} B;

/* A store operation's place in its batch. */
struct op {
	int lead;
	int mark;                 /* B.tx.n when the job began */
	uint64_t batch;           /* B.ended when it joined */
	const char *scope, *key;  /* set by a completion */
};

/*
 * A write operation begins: it yields (a crash there loses the write),
 * waits while another worker's batch holds the write lock, then joins
 * the open batch of its own worker or opens one and leads it.  It then
 * runs with yields off (W.in_store): one job, atomic with respect to
 * every other request, however the code it calls (hooks, the clock)
 * behaves.
 */
static struct txn *
op_begin(const char *name, struct op *op)
{
	int w = W.cur != NULL ? W.cur->worker : -1;

	memset(op, 0, sizeof(*op));
	sim_point(name);
	while (B.open && (B.worker != w || B.closing ||
	    B.njobs == BATCH_MAX || B.tx.n > TXN_MAX / 2))
		sim_yield("store_lock");
	if (!B.open) {
		B.open = 1;
		B.worker = w;
		B.njobs = 0;
		op->lead = 1;
	}
	op->mark = B.tx.n;
	op->batch = B.ended;
	W.in_store = 1;
	return &B.tx;
}

/* Drops the writes of the open batch from mark on: a job that failed. */
static void
batch_truncate(int mark)
{
	while (B.tx.n > mark) {
		B.tx.n--;
		free(B.tx.ops[B.tx.n].e.k);
		free(B.tx.ops[B.tx.n].e.v);
	}
}

/*
 * The leader ends its batch: one commit, or a commit that fails after
 * the jobs ran, which fails every job (the planted bug
 * IDEM_PLANT_BATCH_READERS, as in store_lmdb.c: only the jobs that wrote).
 * The checker hears of each completion committed, and of each request
 * whose job rode a commit that failed.
 */
static void
batch_end(void)
{
	int i, fail = B.tx.n > 0 && sim_chance(W.pf.commit_fail_ppm);
	struct bjob *j;

	if (fail) {
		W.faults++;
		trace("commit of a batch of %d fails after its jobs ran",
		    B.njobs);
	}
	txn_end(&B.tx, !fail);
	for (i = 0; i < B.njobs; i++) {
		j = &B.jobs[i];
		if (fail) {
			check_on_failed_commit(j->rq);
#ifdef IDEM_PLANT_BATCH_READERS
			if (!j->wrote)
				continue;
#endif
			*j->rc = IDEM_EIO;
		} else if (j->scope != NULL && *j->rc == IDEM_OK)
			check_on_complete(j->scope, j->key, j->rq);
	}
	B.open = 0;
	B.closing = 0;
	B.njobs = 0;
	B.ended++;
}

/*
 * A write operation ends with its job's result rc: a failed job's writes
 * are dropped (the rest of the batch stands), and the job waits for its
 * batch's commit, which the leader first delays by a few yields so that
 * others may join.  Returns the job's final result.
 */
static int
op_end(struct op *op, int rc)
{
	struct bjob *j;
	int n;

	if (rc != IDEM_OK)
		batch_truncate(op->mark);
	j = &B.jobs[B.njobs++];
	j->rq = sim_current_req();
	j->wrote = rc == IDEM_OK && B.tx.n > op->mark;
	j->rc = &rc;
	j->scope = op->scope;
	j->key = op->key;
	W.in_store = 0;
	if (op->lead) {
		for (n = (int)sim_below(4); n > 0; n--)
			sim_yield("store_gather");
		B.closing = 1;
		batch_end();
	} else
		while (B.ended == op->batch)
			sim_yield("store_batch_wait");
	return rc;
}

int
simstore_committing(void)
{
	return B.open && B.njobs > 0;
}

static void
batch_reset(void)
{
	batch_truncate(0);
	memset(&B, 0, sizeof(B));
}

void
simstore_worker_crash(int worker)
{
	if (!B.open || B.worker != worker)
		return;
	trace("the batch of worker %d dies uncommitted", worker);
	batch_truncate(0);
	B.open = 0;
	B.closing = 0;
	B.njobs = 0;
	B.ended++;
}

struct rkey {
	uint8_t data[512];
	size_t len;
};

static int
rkey_make(const char *scope, const char *key, struct rkey *k)
{
	size_t sl = strlen(scope), kl = strlen(key);

	if (sl == 0 || kl == 0 || sl + 1 + kl > sizeof(k->data))
		return IDEM_EINVAL;
	memcpy(k->data, scope, sl + 1);
	memcpy(k->data + sl + 1, key, kl);
	k->len = sl + 1 + kl;
	return IDEM_OK;
}

static int
rec_get(const struct txn *tx, const struct rkey *k, struct rec *r)
{
	const uint8_t *v;
	size_t vl;
	int rc;

	memset(r, 0, sizeof(*r));
	if ((rc = txn_get(tx, T_RECORDS, k->data, k->len, &v, &vl)) != IDEM_OK)
		return rc;
	return rec_decode(v, vl, r);
}

static int
rec_put(struct txn *tx, const struct rkey *k, const struct rec *r)
{
	struct buf b = BUF_INIT;
	int rc;

	if ((rc = rec_encode(r, &b)) == IDEM_OK)
		txn_op(tx, T_RECORDS, k->data, k->len, b.data, b.len, 0);
	buf_free(&b);
	return rc;
}

/* The generation of k as tx sees it: 0 when it has none. */
static uint64_t
gen_get(const struct txn *tx, const struct rkey *k)
{
	const uint8_t *v;
	size_t vl;

	if (txn_get(tx, T_GENS, k->data, k->len, &v, &vl) != IDEM_OK ||
	    vl != 8)
		return 0;
	return be_get(v, 8);
}

static void
gen_encode(uint64_t gen, uint8_t be[8])
{
	be_put(be, 8, gen);
}

static uint64_t
add_ms(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int
simstore_peek(const char *scope, const char *key, struct rec *out)
{
	struct txn tx = { .n = 0 };
	struct rkey k;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = rkey_make(scope, key, &k)) != IDEM_OK)
		return rc;
	return rec_get(&tx, &k, out);
}

int
simstore_row(const char *table, const void *key, size_t keylen,
    struct buf *out)
{
	unsigned t;
	int found;
	size_t i;

	if (table_id(table, &t) != IDEM_OK)
		return IDEM_EINVAL;
	i = map_find(t, key, keylen, &found);
	if (!found)
		return IDEM_ENOTFOUND;
	return buf_append(out, map[i].v, map[i].vl);
}

static int
sim_open(const struct store_config *cfg, struct store **out)
{
	struct simstore *s;
	size_t i;

	/* Tables are registered once per schedule, by the first handle. */
	for (i = 0; cfg->tables != NULL && cfg->tables[i] != NULL; i++) {
		unsigned t;

		if (table_id(cfg->tables[i], &t) == IDEM_OK)
			continue;
		if (ntables == T_MAX)
			return IDEM_EINVAL;
		snprintf(tables[ntables++], sizeof(tables[0]), "%s",
		    cfg->tables[i]);
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return IDEM_ENOMEM;
	s->base.ops = &sim_store_ops;
	*out = &s->base;
	return IDEM_OK;
}

static void
sim_close(struct store *s)
{
	free(s);
}

static int
sim_lookup(struct store *s, const char *scope, const char *key,
    struct rec *out)
{
	(void)s;
	sim_yield("store_lookup");
	return simstore_peek(scope, key, out);
}

/* Runs an application hook on the transaction tx. */
static int
run_hook(struct store *s, struct txn *t, idem_tx_fn hook, void *ctx,
    struct idem_tx *tx)
{
	tx->s = s;
	tx->impl = t;
	return hook(ctx, tx);
}

static int
claim_run(struct store *s, struct txn *tx, const struct rkey *k,
    const uint8_t *fp, const uint8_t *token, uint64_t now_ms,
    uint64_t lease_ms, uint64_t ttl_ms, const struct store_first *first,
    struct store_claim *out)
{
	struct idem_tx htx;
	int rc, found;
	uint64_t exp;

	rc = rec_get(tx, k, &out->rec);
	if (rc != IDEM_OK && rc != IDEM_ENOTFOUND)
		return rc;
	found = rc == IDEM_OK;
	out->decision = engine_decide(found ? &out->rec : NULL, fp, now_ms,
	    &out->retry_after);
	if (out->decision != ENGINE_CLAIM && out->decision != ENGINE_TAKEOVER)
		return IDEM_OK;
	if (sim_store_fails("store_claim"))
		return IDEM_EFULL;
	if (out->decision == ENGINE_CLAIM) {
		uint8_t be[8];
		uint64_t gen = gen_get(tx, k);

		/* An expired record's lifetime ends here (store.h). */
		if (found) {
			gen_encode(++gen, be);
			txn_op(tx, T_GENS, k->data, k->len, be, sizeof(be), 0);
		}
		rec_free(&out->rec);
		out->rec.gen = gen;
		out->rec.state = REC_IN_PROGRESS;
		memcpy(out->rec.fp, fp, FP_SIZE);
		out->rec.created_ms = now_ms;
		out->rec.expires_ms = add_ms(now_ms, ttl_ms);
		out->rec.attempts = 1;
		if (first != NULL) {
			out->rec.stage = first->stage;
			if (first->cplen > 0) {
				out->rec.cp = dup_bytes(first->cp, first->cplen);
				out->rec.cplen = first->cplen;
			}
		}
	} else {
		exp = add_ms(store_commit_ms(s, now_ms), ttl_ms);
#ifdef IDEM_PLANT_LATE_TTL
		exp = out->rec.expires_ms;
#endif
		if (exp > out->rec.expires_ms)
			out->rec.expires_ms = exp;
		if (out->rec.attempts < UINT32_MAX)
			out->rec.attempts++;
	}
	memcpy(out->rec.token, token, REC_TOKEN_SIZE);
	out->rec.lease_ms = add_ms(now_ms, lease_ms);
	if ((rc = rec_put(tx, k, &out->rec)) != IDEM_OK)
		return rc;
	if (out->decision == ENGINE_CLAIM && first != NULL &&
	    first->hook != NULL) {
		memset(&htx, 0, sizeof(htx));
		return run_hook(s, tx, first->hook, first->hook_ctx, &htx);
	}
	return IDEM_OK;
}

static int
sim_claim(struct store *s, const char *scope, const char *key,
    const uint8_t fp[FP_SIZE], const uint8_t token[REC_TOKEN_SIZE],
    uint64_t now_ms, uint64_t lease_ms, uint64_t ttl_ms,
    const struct store_first *first, struct store_claim *out)
{
	struct txn *tx;
	struct rkey k;
	struct op op;
	int rc, wrote;

	memset(out, 0, sizeof(*out));
	if (lease_ms == 0 || ttl_ms == 0)
		return IDEM_EINVAL;
	if ((rc = rkey_make(scope, key, &k)) != IDEM_OK)
		return rc;
	tx = op_begin("store_claim", &op);
	rc = claim_run(s, tx, &k, fp, token, now_ms, lease_ms, ttl_ms, first,
	    out);
	wrote = tx->n > op.mark;
	rc = op_end(&op, rc);
	if (rc != IDEM_OK) {
		rec_free(&out->rec);
		memset(out, 0, sizeof(*out));
		trace("claim %s/%s: %s", scope, key, idem_strerror(rc));
		return rc;
	}
	trace("claim %s/%s: %s (attempt %u, stage %u)", scope, key,
	    trace_decision((int)out->decision), out->rec.attempts,
	    out->rec.stage);
	if (wrote)
		sim_point("store_claim_commit");
	return IDEM_OK;
}

/* Loads our claim; IDEM_ELOST when it is gone, done or someone else's. */
static int
own(const struct txn *tx, const struct rkey *k, const uint8_t *token,
    struct rec *r)
{
	int rc = rec_get(tx, k, r);

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

static int
sim_checkpoint(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint32_t stage, const void *cp,
    size_t cplen, uint64_t now_ms, uint64_t lease_ms)
{
	struct rec cur, next;
	struct txn *tx;
	struct rkey k;
	struct op op;
	int rc;

	(void)s;
	if (cplen > REC_MAX_CHECKPOINT)
		return IDEM_ETOOBIG;
	if ((rc = rkey_make(scope, key, &k)) != IDEM_OK)
		return rc;
	tx = op_begin("store_checkpoint", &op);
	if ((rc = own(tx, &k, token, &cur)) != IDEM_OK)
		return op_end(&op, rc);
	if (sim_store_fails("store_checkpoint"))
		rc = IDEM_EFULL;
	else {
		next = cur;
		next.stage = stage;
		next.cp = (uint8_t *)cp;
		next.cplen = cplen;
		next.lease_ms = add_ms(now_ms, lease_ms);
		rc = rec_put(tx, &k, &next);
	}
	rec_free(&cur);
	if ((rc = op_end(&op, rc)) == IDEM_OK) {
		trace("checkpoint %s/%s stage %u", scope, key, stage);
		sim_point("store_checkpoint_commit");
	}
	return rc;
}

static int
sim_complete(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], const struct rec_response *resp,
    idem_tx_fn hook, void *hook_ctx, uint64_t now_ms, uint64_t ttl_ms)
{
	struct rec_response chosen;
	struct idem_tx htx;
	struct rec cur, done;
	struct txn *tx;
	struct rkey k;
	struct op op;
	uint64_t exp;
	int rc;

	if (resp == NULL)
		return IDEM_EINVAL;
	if ((rc = rkey_make(scope, key, &k)) != IDEM_OK)
		return rc;
	tx = op_begin("store_complete", &op);
	if ((rc = own(tx, &k, token, &cur)) != IDEM_OK)
		return op_end(&op, rc);
	memset(&htx, 0, sizeof(htx));
	htx.may_respond = 1;
	memset(&chosen, 0, sizeof(chosen));
	if (sim_store_fails("store_complete"))
		rc = IDEM_EFULL;
	else if (hook != NULL)
		rc = run_hook(s, tx, hook, hook_ctx, &htx);
	if (rc == IDEM_OK && htx.respond != NULL)
		rc = rec_response_borrow(htx.respond, &chosen);
	if (rc == IDEM_OK) {
		exp = add_ms(store_commit_ms(s, now_ms), ttl_ms);
		done = cur;
		done.state = REC_COMPLETED;
		memset(done.token, 0, sizeof(done.token));
		done.lease_ms = now_ms;
#ifdef IDEM_PLANT_LATE_TTL
		exp = done.expires_ms;
#endif
		if (exp > done.expires_ms)
			done.expires_ms = exp;
		done.cp = NULL;
		done.cplen = 0;
		done.resp = htx.respond != NULL ? chosen : *resp;
		rc = rec_put(tx, &k, &done);
	}
	rec_free(&cur);
	/* The checker hears of the completion when its batch commits. */
	op.scope = scope;
	op.key = key;
	if ((rc = op_end(&op, rc)) != IDEM_OK) {
		trace("complete %s/%s: %s", scope, key, idem_strerror(rc));
		return rc;
	}
	trace("complete %s/%s: %d", scope, key, resp->status);
	sim_point("store_complete_commit");
	return IDEM_OK;
}

/* Release and abandon: end a claim we own. */
static int
end_claim(struct store *s, const char *scope, const char *key,
    const uint8_t *token, uint64_t now_ms, int release, idem_tx_fn hook,
    void *hook_ctx)
{
	struct idem_tx htx;
	struct rec cur, next;
	struct txn *tx;
	struct rkey k;
	struct op op;
	int rc;

	if ((rc = rkey_make(scope, key, &k)) != IDEM_OK)
		return rc;
	tx = op_begin(release ? "store_release" : "store_abandon", &op);
	if ((rc = own(tx, &k, token, &cur)) != IDEM_OK)
		return op_end(&op, rc);
	if (release) {
		txn_op(tx, T_RECORDS, k.data, k.len, NULL, 0, 1);
		memset(&htx, 0, sizeof(htx));
		if (hook != NULL)
			rc = run_hook(s, tx, hook, hook_ctx, &htx);
	} else {
		next = cur;
		next.lease_ms = now_ms;
		rc = rec_put(tx, &k, &next);
	}
	rec_free(&cur);
	if ((rc = op_end(&op, rc)) == IDEM_OK) {
		trace("%s %s/%s", release ? "release" : "abandon", scope, key);
		sim_point(release ? "store_release_commit" :
		    "store_abandon_commit");
	}
	return rc;
}

static int
sim_release(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], idem_tx_fn hook, void *hook_ctx)
{
	return end_claim(s, scope, key, token, 0, 1, hook, hook_ctx);
}

static int
sim_abandon(struct store *s, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint64_t now_ms)
{
	return end_claim(s, scope, key, token, now_ms, 0, NULL, NULL);
}

/* A record's place in the purge order; 0 for a claim that never expires. */
static int
purge_due(const struct rec *r, uint64_t *at)
{
	if (r->state == REC_IN_PROGRESS && r->stage != 0)
		return 0;
	*at = r->expires_ms;
	if (r->state == REC_IN_PROGRESS && r->lease_ms > *at)
		*at = r->lease_ms;
	return 1;
}

struct due {
	uint64_t at;
	size_t i;
};

static int
due_cmp(const void *a, const void *b)
{
	const struct due *x = a, *y = b;

	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int
sim_purge(struct store *s, uint64_t now_ms, size_t max, size_t *purged)
{
	struct rkey *ended;
	struct due *d;
	struct rec r;
	size_t i, n = 0;
	uint64_t at;

	(void)s;
	*purged = 0;
	sim_point("store_purge");
	/* Purge writes the disk at once: it waits for the write lock. */
	while (B.open)
		sim_yield("store_lock");
	if ((d = calloc(nmap + 1, sizeof(*d))) == NULL)
		return IDEM_ENOMEM;
	for (i = 0; i < nmap; i++) {
		if (map[i].t != T_RECORDS ||
		    rec_decode(map[i].v, map[i].vl, &r) != IDEM_OK)
			continue;
		if (purge_due(&r, &at) && at <= now_ms)
			d[n++] = (struct due){ at, i };
		rec_free(&r);
	}
	/* Oldest first, as the expiry index is walked. */
	qsort(d, n, sizeof(*d), due_cmp);
	if (n > max)
		n = max;
	for (i = 0; i < n; i++) {
		struct ent *e = &map[d[i].i];
		const char *scope = (const char *)e->k;
		char key[512];
		size_t sl = strlen(scope);

		memcpy(key, e->k + sl + 1, e->kl - sl - 1);
		key[e->kl - sl - 1] = '\0';
		if (rec_decode(e->v, e->vl, &r) == IDEM_OK) {
			check_on_purge(scope, key, &r);
			rec_free(&r);
		}
	}
	/* Delete in descending order of index, so each leaves the rest. */
	for (i = 0; i < n; i++)
		d[i].at = d[i].i;
	qsort(d, n, sizeof(*d), due_cmp);
	if ((ended = calloc(n + 1, sizeof(*ended))) == NULL)
		abort();
	for (i = n; i-- > 0;) {
		struct ent *e = &map[d[i].i];

		ended[i].len = e->kl;
		memcpy(ended[i].data, e->k, e->kl);
		free(e->k);
		free(e->v);
		memmove(e, e + 1, (nmap - d[i].i - 1) * sizeof(*map));
		nmap--;
	}
	/* Each purged record's lifetime ends (store.h). */
	for (i = 0; i < n; i++) {
		struct txn none = { .n = 0 };
		struct ent g = { T_GENS, ended[i].data, NULL, ended[i].len, 8 };
		uint8_t be[8];

		gen_encode(gen_get(&none, &ended[i]) + 1, be);
		g.v = be;
		map_put(&g);
	}
	free(ended);
	free(d);
	*purged = n;
	if (n > 0)
		sim_point("store_purge_commit");
	return IDEM_OK;
}

static int
sim_get(struct store *s, const char *table, const void *key, size_t keylen,
    struct buf *out)
{
	(void)s;
	sim_yield("store_get");
	return simstore_row(table, key, keylen, out);
}

static int
sim_insert_once(struct store *s, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen, struct buf *existing)
{
	struct ent e = { 0, (uint8_t *)key, (uint8_t *)val, keylen, vallen };
	int found;
	size_t i;

	(void)s;
	if (table_id(table, &e.t) != IDEM_OK)
		return IDEM_EINVAL;
	sim_point("store_insert");
	while (B.open)
		sim_yield("store_lock");
	i = map_find(e.t, key, keylen, &found);
	if (found) {
		if (existing != NULL)
			return buf_append(existing, map[i].v, map[i].vl) ==
			    IDEM_OK ? IDEM_EEXIST : IDEM_ENOMEM;
		return IDEM_EEXIST;
	}
	map_put(&e);
	sim_point("store_insert_commit");
	return IDEM_OK;
}

static int
sim_scan(struct store *s, const char *table, const void *prefix,
    size_t prefixlen, const void *from, size_t fromlen, int reverse,
    size_t limit, store_scan_fn fn, void *ctx)
{
	size_t i, lo, hi, at, seen = 0;
	unsigned t;
	int found;

	(void)s;
	if (table_id(table, &t) != IDEM_OK)
		return IDEM_EINVAL;
	sim_yield("store_scan");
	lo = map_find(t, prefix, prefixlen, &found);
	for (hi = lo; hi < nmap && map[hi].t == t &&
	    map[hi].kl >= prefixlen &&
	    memcmp(map[hi].k, prefix, prefixlen) == 0; hi++)
		continue;
	/* From a place: the rows at or past it in the scan's order. */
	if (fromlen > 0) {
		at = map_find(t, from, fromlen, &found);
		if (!reverse && at > lo)
			lo = at < hi ? at : hi;
		else if (reverse && (found ? at + 1 : at) < hi)
			hi = (found ? at + 1 : at) > lo ? (found ? at + 1 : at) :
			    lo;
	}
	W.in_store = 1;
	for (i = 0; i < hi - lo && (limit == 0 || seen < limit); i++, seen++) {
		struct ent *e = &map[reverse ? hi - 1 - i : lo + i];

		if (fn(ctx, e->k, e->kl, e->v, e->vl) != 0)
			break;
	}
	W.in_store = 0;
	return IDEM_OK;
}

static int
each(int pending, store_each_fn fn, void *ctx)
{
	struct rec r;
	size_t i, sl;
	char key[512];
	int stop;

	for (i = 0; i < nmap; i++) {
		if (map[i].t != T_RECORDS ||
		    rec_decode(map[i].v, map[i].vl, &r) != IDEM_OK)
			continue;
		stop = 0;
		if (!pending || (r.state == REC_IN_PROGRESS && r.stage != 0)) {
			sl = strlen((const char *)map[i].k);
			memcpy(key, map[i].k + sl + 1, map[i].kl - sl - 1);
			key[map[i].kl - sl - 1] = '\0';
			stop = fn(ctx, (const char *)map[i].k, key, &r);
		}
		rec_free(&r);
		if (stop)
			break;
	}
	return IDEM_OK;
}

static int
sim_each(struct store *s, store_each_fn fn, void *ctx)
{
	(void)s;
	return each(0, fn, ctx);
}

static int
sim_each_pending(struct store *s, store_each_fn fn, void *ctx)
{
	(void)s;
	return each(1, fn, ctx);
}

static size_t
count_table(unsigned t)
{
	size_t i, n = 0;

	for (i = 0; i < nmap; i++)
		n += map[i].t == t;
	return n;
}

static int
sim_count(struct store *s, const char *table, size_t *n)
{
	unsigned t;

	(void)s;
	if (table_id(table, &t) != IDEM_OK)
		return IDEM_EINVAL;
	*n = count_table(t);
	return IDEM_OK;
}

static int
sim_tx_get(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void **val, size_t *vallen)
{
	const uint8_t *v;
	unsigned t;
	int rc;

	if (table_id(table, &t) != IDEM_OK)
		return IDEM_EINVAL;
	if ((rc = txn_get(tx->impl, t, key, keylen, &v, vallen)) == IDEM_OK)
		*val = v;
	return rc;
}

static int
sim_tx_put(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen)
{
	unsigned t;

	if (table_id(table, &t) != IDEM_OK)
		return IDEM_EINVAL;
	txn_op(tx->impl, t, key, keylen, val, vallen, 0);
	return IDEM_OK;
}

static int
sim_tx_del(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen)
{
	const uint8_t *v;
	size_t vl;
	unsigned t;

	if (table_id(table, &t) != IDEM_OK)
		return IDEM_EINVAL;
	if (txn_get(tx->impl, t, key, keylen, &v, &vl) != IDEM_OK)
		return IDEM_ENOTFOUND;
	txn_op(tx->impl, t, key, keylen, NULL, 0, 1);
	return IDEM_OK;
}

const struct store_ops sim_store_ops = {
	.name = "sim",
	.open = sim_open,
	.close = sim_close,
	.lookup = sim_lookup,
	.claim = sim_claim,
	.checkpoint = sim_checkpoint,
	.complete = sim_complete,
	.release = sim_release,
	.abandon = sim_abandon,
	.purge = sim_purge,
	.get = sim_get,
	.insert_once = sim_insert_once,
	.scan = sim_scan,
	.each = sim_each,
	.each_pending = sim_each_pending,
	.count = sim_count,
	.tx_get = sim_tx_get,
	.tx_put = sim_tx_put,
	.tx_del = sim_tx_del,
};
