/* SPDX-License-Identifier: MIT */
/*
 * store_pg_ops.c: the PostgreSQL backend's operations (store_pg.h), each
 * with the contract of store.h and the LMDB backend's semantics.
 *
 * A write is one transaction (pg_write).  A claim is first one
 * statement after the scope's gate (pg_claim_fast): it inserts a fresh
 * record, or returns the one there, on which a replay, a 409 or a 422
 * is decided with nothing written.  A write to a claim this process
 * holds is one statement guarded by the record it wrote last
 * (pg_own_fast), the hook's puts in it.  Anything else (a take-over,
 * the bound near, a guard that did not match, a hook that reads) runs
 * as a transaction of statements that locks the record's row first
 * (SELECT ... FOR UPDATE) and decides on what it read there; a fresh
 * claim there inserts with ON CONFLICT DO NOTHING, and when another
 * transaction inserted the same key first the whole transaction runs
 * again and finds that row.  Nothing is written on a decision made on
 * a read outside the write.  Times are the database's (pg_now).
 */
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "buf.h"
#include "engine.h"
#include "err.h"
#include "fault.h"
#include "record.h"
#include "store_pg.h"

/*
 * IDEM_EINVAL for a missing or empty scope or key, IDEM_ETOOBIG past
 * the LMDB backend's bound (lstore_key_make), so that a key one store
 * takes the other takes too.
 */
static int
pg_names_check(const char *scope, const char *key)
{
	return store_names_check(scope, key, PG_ROW_KEY_MAX);
}

/* Reads the record (locked when lock is set): IDEM_ENOTFOUND. */
static int
pg_rec_get(struct pgconn *pc, const char *scope, const char *key, int lock,
    struct rec *r)
{
	struct pgargs a = { 0 };
	PGresult *res;
	int rc;

	memset(r, 0, sizeof(*r));
	pg_arg_bytes(&a, scope, strlen(scope));
	pg_arg_bytes(&a, key, strlen(key));
	if ((rc = pg_exec(pc, lock ?
	    "SELECT rec FROM idem_keys WHERE scope = $1 AND key = $2 "
	    "FOR UPDATE" :
	    "SELECT rec FROM idem_keys WHERE scope = $1 AND key = $2",
	    &a, &res)) != IDEM_OK)
		return rc;
	if (PQntuples(res) == 0)
		rc = IDEM_ENOTFOUND;
	else
		rc = rec_decode(PQgetvalue(res, 0, 0), (size_t)PQgetlength(res,
		    0, 0), r);
	PQclear(res);
	return rc;
}

/*
 * Writes r as the record of (scope, key) with its index column: insert
 * (IDEM_EEXIST when the key exists: another claim got there first) or
 * update.
 */
static int
pg_rec_put(struct pgconn *pc, const char *scope, const char *key,
    const struct rec *r, int insert)
{
	struct buf b = BUF_INIT;
	struct pgargs a = { 0 };
	PGresult *res;
	uint64_t at;
	int rc;

	if ((rc = rec_encode(r, &b)) != IDEM_OK)
		goto out;
	pg_arg_bytes(&a, scope, strlen(scope));
	pg_arg_bytes(&a, key, strlen(key));
	pg_arg_bytes(&a, b.data, b.len);
	if (store_rec_expiry_at(r, &at))
		pg_arg_u64(&a, at);
	else
		pg_arg_null(&a);
	rc = pg_exec(pc, insert ?
	    "INSERT INTO idem_keys (scope, key, rec, purge_at) "
	    "VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING" :
	    "UPDATE idem_keys SET rec = $3, purge_at = $4 "
	    "WHERE scope = $1 AND key = $2", &a, &res);
	if (rc == IDEM_OK) {
		if (strcmp(PQcmdTuples(res), "1") != 0)
			rc = insert ? IDEM_EEXIST : IDEM_ENOTFOUND;
		PQclear(res);
	}
	/* What a lost COMMIT's answer is read back against. */
	if (rc == IDEM_OK)
		rc = pg_note_put(pc, scope, key, b.data, b.len);
out:
	buf_free(&b);
	return rc;
}

/*
 * The claims this process holds (pgstore.owned), each with the record
 * it last wrote: a write to the claim updates its row only where the row
 * is still that record (then no one has taken the claim over, nor
 * changed it), and needs no read first.  A claim not found here (more
 * than PG_OWNED_MAX held at once, another process's, a record not
 * written by this store) is written as before: read and locked, then
 * decided on.
 */
void
pg_owned_free(struct pgstore *s)
{
	size_t i;

	for (i = 0; i < PG_OWNED_MAX; i++) {
		free(s->owned[i].names);
		buf_free(&s->owned[i].rec);
	}
}

/* The entry of token for (scope, key) (s->owned_mu held), or NULL. */
static struct pgowned *
pg_owned_find(struct pgstore *s, const char *scope, const char *key,
    const uint8_t *token)
{
	struct pgowned *o;
	size_t i;

	for (i = 0; i < PG_OWNED_MAX; i++) {
		o = &s->owned[i];
		if (o->used && memcmp(o->token, token, REC_TOKEN_SIZE) == 0 &&
		    strcmp(o->names, scope) == 0 &&
		    strcmp(o->names + strlen(scope) + 1, key) == 0)
			return o;
	}
	return NULL;
}

/* Forgets token's claim of (scope, key). */
static void
pg_owned_drop(struct pgstore *s, const char *scope, const char *key,
    const uint8_t *token)
{
	struct pgowned *o;

	pthread_mutex_lock(&s->owned_mu);
	if ((o = pg_owned_find(s, scope, key, token)) != NULL)
		o->used = 0;
	pthread_mutex_unlock(&s->owned_mu);
}

/* Remembers rec (len bytes) as what token's claim wrote last. */
static void
pg_owned_put(struct pgstore *s, const char *scope, const char *key,
    const uint8_t *token, const void *rec, size_t len)
{
	struct pgowned *o;
	size_t ls = strlen(scope), lk = strlen(key);

	pthread_mutex_lock(&s->owned_mu);
	if ((o = pg_owned_find(s, scope, key, token)) == NULL) {
		o = &s->owned[s->owned_next];
		s->owned_next = (s->owned_next + 1) % PG_OWNED_MAX;
		o->used = 0;
		free(o->names);
		if ((o->names = malloc(ls + lk + 2)) == NULL)
			goto out;
		memcpy(o->names, scope, ls + 1);
		memcpy(o->names + ls + 1, key, lk + 1);
		memcpy(o->token, token, REC_TOKEN_SIZE);
	}
	buf_reset(&o->rec);
	o->used = buf_append(&o->rec, rec, len) == IDEM_OK;
out:
	pthread_mutex_unlock(&s->owned_mu);
}

/* The record token's claim wrote last, into out: 1, or 0 when unknown. */
static int
pg_owned_get(struct pgstore *s, const char *scope, const char *key,
    const uint8_t *token, struct buf *out)
{
	struct pgowned *o;
	int ok = 0;

	pthread_mutex_lock(&s->owned_mu);
	if ((o = pg_owned_find(s, scope, key, token)) != NULL)
		ok = buf_append(out, o->rec.data, o->rec.len) == IDEM_OK;
	pthread_mutex_unlock(&s->owned_mu);
	return ok;
}

/* pg_owned_put of a record to encode. */
static void
pg_owned_put_rec(struct pgstore *s, const char *scope, const char *key,
    const uint8_t *token, const struct rec *r)
{
	struct buf b = BUF_INIT;

	if (rec_encode(r, &b) == IDEM_OK)
		pg_owned_put(s, scope, key, token, b.data, b.len);
	buf_free(&b);
}

#ifdef IDEM_FAULT_POINTS
/*
 * Whether IDEM_FAULT names point: a write that one of the points
 * between its statements and its COMMIT is named for (a test holds or
 * kills it there) runs as a transaction of statements, so that the
 * point stands where it always has.
 */
static int
pg_fault_named(const char *point)
{
	const char *f = getenv("IDEM_FAULT");
	size_t n = strlen(point);

	return f != NULL && strncmp(f, point, n) == 0 &&
	    (f[n] == ':' || f[n] == '.');
}
#else
#define pg_fault_named(point) 0
#endif

int
pg_lookup(struct store *base, const char *scope, const char *key,
    struct rec *out)
{
	struct pgstore *s = pgstore_of(base);
	struct pgconn *pc;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = pg_names_check(scope, key)) != IDEM_OK)
		return rc;
	if ((rc = pg_acquire(s, &pc)) != IDEM_OK)
		return rc;
	rc = pg_rec_get(pc, scope, key, 0, out);
	pg_release(s, pc);
	return rc;
}

/* The most rows a hook may put for its write to stay one statement. */
#define PG_PUT_ROWS 4

/* A row a hook put, buffered for the write's one statement. */
struct pg_put {
	const char *table;        /* s->tables' */
	struct buf key, val;
};

/* A hook's transaction; the results its reads point into. */
struct pg_tx {
	struct pgstore *s;
	struct pgconn *pc;
	PGresult **held;
	size_t nheld;
	/* Rows added (less rows deleted) per table, by s->tables index. */
	long long delta[IDEM_MAX_TABLES];
	/*
	 * Buffered: the hook's puts are kept in puts, to be written by the
	 * write's statement; a read, a delete or a put past PG_PUT_ROWS
	 * sets live instead, and the write runs the hook again in a
	 * transaction of statements.
	 */
	int buffered, live;
	struct pg_put puts[PG_PUT_ROWS];
	size_t nputs;
};

/* The slot of the session's counts (idem_counts, idem_quota). */
static uint64_t
pg_slot(const struct pgconn *pc)
{
	return (uint64_t)PQbackendPID(pc->c) % PG_COUNT_SLOTS;
}

/*
 * Adds the rows a transaction added to or deleted from each table to
 * the tables' counts (idem_counts), last in the transaction: the rows
 * of the counts are locked for as short a time as may be, after every
 * other lock the transaction takes, in table order.  A session writes
 * the slot of its server process's id, so that concurrent writes, of
 * one process or of many hosts, seldom queue on one row (two sessions
 * that share a slot only wait for each other); store_count sums a
 * table's slots, at most PG_COUNT_SLOTS rows.
 */
static int
pg_counts_apply(struct pgstore *s, struct pgconn *pc, const long long *delta)
{
	struct pgargs a;
	char n[24];
	size_t i, j, order[IDEM_MAX_TABLES], k;
	int rc;

	for (i = 0; i < s->ntables; i++) {
		for (j = i; j > 0 && strcmp(s->tables[order[j - 1]],
		    s->tables[i]) > 0; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (k = 0; k < s->ntables; k++) {
		i = order[k];
		if (delta[i] == 0)
			continue;
		memset(&a, 0, sizeof(a));
		snprintf(n, sizeof(n), "%lld", delta[i]);
		pg_arg_str(&a, s->tables[i]);
		pg_arg_u64(&a, pg_slot(pc));
		pg_arg_str(&a, n);
		if ((rc = pg_run(pc, "INSERT INTO idem_counts AS c (tbl, slot, n) "
		    "VALUES ($1, $2, $3) ON CONFLICT (tbl, slot) DO UPDATE SET "
		    "n = c.n + $3::bigint", &a)) != IDEM_OK)
			return rc;
	}
	return IDEM_OK;
}

/* The table's place in s->tables (pg_table_ok holds). */
static size_t
pg_table_index(const struct pgstore *s, const char *table)
{
	size_t i;

	for (i = 0; i < s->ntables; i++)
		if (strcmp(s->tables[i], table) == 0)
			break;
	return i;
}

static void
pg_tx_end(struct pg_tx *t)
{
	size_t i;

	for (i = 0; i < t->nputs; i++) {
		buf_free(&t->puts[i].key);
		buf_free(&t->puts[i].val);
	}
	t->nputs = 0;
	for (i = 0; i < t->nheld; i++)
		PQclear(t->held[i]);
	free(t->held);
	t->held = NULL;
	t->nheld = 0;
}

static int
pg_run_hook(struct pgstore *s, struct pgconn *pc, idem_tx_fn hook, void *ctx,
    struct idem_tx *tx)
{
	struct pg_tx t;
	struct idem_tx own;
	int rc;

	memset(&t, 0, sizeof(t));
	t.s = s;
	t.pc = pc;
	if (tx == NULL) {
		memset(&own, 0, sizeof(own));
		tx = &own;
	}
	tx->s = &s->base;
	tx->impl = &t;
	tx->respond = NULL;
	if ((rc = hook(ctx, tx)) == IDEM_OK)
		rc = pg_counts_apply(s, pc, t.delta);
	pg_tx_end(&t);
	return rc;
}

/*
 * Deletes up to max records whose time is up, counts the end of each
 * one's lifetime in its key's generation (store.h), and takes them off
 * their scopes' counts, in the session's slot, in the same statement (the
 * slots' rows locked in scope order, so that two purges of one slot do
 * not lock them in opposite orders).
 */
static int
pg_purge_tx(struct pgconn *pc, uint64_t now_ms, size_t max, size_t *purged)
{
	struct pgargs a = { 0 };
	PGresult *res;
	int rc;

	*purged = 0;
	pg_arg_u64(&a, now_ms);
	pg_arg_u64(&a, max);
	pg_arg_u64(&a, pg_slot(pc));
	if ((rc = pg_exec(pc, "WITH d AS (DELETE FROM idem_keys WHERE ctid IN ("
	    "SELECT ctid FROM idem_keys WHERE purge_at <= $1 "
	    "ORDER BY purge_at LIMIT $2 FOR UPDATE SKIP LOCKED) "
	    "RETURNING scope, key), "
	    "g AS (INSERT INTO idem_gens AS g (scope, key, gen) "
	    "SELECT scope, key, 1 FROM d ORDER BY scope, key "
	    "ON CONFLICT (scope, key) DO UPDATE SET gen = g.gen + 1), "
	    "c AS (SELECT scope, count(*) AS n FROM d GROUP BY scope), "
	    "u AS (INSERT INTO idem_quota AS q (scope, slot, n) "
	    "SELECT scope, $3, -n FROM c ORDER BY scope "
	    "ON CONFLICT (scope, slot) DO UPDATE SET n = q.n + excluded.n) "
	    "SELECT count(*) FROM d", &a, &res)) != IDEM_OK)
		return rc;
	*purged = (size_t)pg_get_u64(res, 0, 0);
	PQclear(res);
	return IDEM_OK;
}

/*
 * A 63-bit hash (FNV-1a) of what an advisory lock stands for: a tag
 * ('s' a scope, 'r' an application row), then a name and bytes.  Two
 * things that share a hash only wait for each other.
 */
static uint64_t
pg_lock_hash(char tag, const char *name, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 14695981039346656037ULL;
	size_t i;

	h = (h ^ (uint8_t)tag) * 1099511628211ULL;
	for (; *name != '\0'; name++)
		h = (h ^ (uint8_t)*name) * 1099511628211ULL;
	h = h * 1099511628211ULL;
	for (i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h >> 1;
}

static int
pg_lock(struct pgconn *pc, uint64_t h)
{
	struct pgargs a = { 0 };

	pg_arg_u64(&a, h);
	return pg_run(pc, "SELECT pg_advisory_xact_lock($1::bigint)", &a);
}

/* How a write to a scope's count passes the scope's gate. */
enum pg_gate {
	PG_GATE_NONE,     /* a delete: it cannot take a scope past its bound */
	PG_GATE_SHARED,   /* a claim far from the bound */
	PG_GATE_ALONE     /* a claim that counts exactly */
};

/*
 * Adds delta to the count of scope's records, in the session's slot
 * (whose row stays locked to the commit; only sessions that share the
 * slot wait for each other there), after passing the scope's gate, a
 * transaction-scoped advisory lock.  Taken shared, the lock is in the
 * statement that adds, so that a claim pays no round trip for it.  With
 * within set, *within says whether the slot's row, as added to, is
 * within an allowance granted under bound (pg_quota_claim).
 */
static int
pg_quota_add(struct pgconn *pc, const char *scope, int delta,
    enum pg_gate gate, uint64_t bound, int *within)
{
	struct pgargs a = { 0 };
	PGresult *res;
	uint64_t h = pg_lock_hash('s', "", scope, strlen(scope));
	int rc;

	if (gate == PG_GATE_ALONE && (rc = pg_lock(pc, h)) != IDEM_OK)
		return rc;
	pg_arg_bytes(&a, scope, strlen(scope));
	pg_arg_u64(&a, pg_slot(pc));
	pg_arg_str(&a, delta > 0 ? "1" : "-1");
	pg_arg_u64(&a, bound);
	if (gate == PG_GATE_SHARED)
		pg_arg_u64(&a, h);
	if ((rc = pg_exec(pc, gate != PG_GATE_SHARED ?
	    "INSERT INTO idem_quota AS q (scope, slot, n) "
	    "VALUES ($1, $2, $3) ON CONFLICT (scope, slot) DO UPDATE SET "
	    "n = q.n + excluded.n "
	    "RETURNING coalesce(q.b = $4::bigint AND q.n <= q.a, false)"
	    "::integer" :
	    "INSERT INTO idem_quota AS q (scope, slot, n) "
	    "SELECT $1, $2, $3 FROM (SELECT pg_advisory_xact_lock_shared("
	    "$5::bigint)) g ON CONFLICT (scope, slot) DO UPDATE SET "
	    "n = q.n + excluded.n "
	    "RETURNING coalesce(q.b = $4::bigint AND q.n <= q.a, false)"
	    "::integer", &a, &res)) != IDEM_OK)
		return rc;
	if (within != NULL)
		*within = PQntuples(res) == 1 && pg_get_u64(res, 0, 0) == 1;
	PQclear(res);
	return IDEM_OK;
}

/*
 * The count of scope's records as this transaction sees it (what is
 * committed and its own writes).  The sum of bigints is a numeric,
 * sent back as an integer: pg_get_u64 reads only integers.
 */
static int
pg_quota_sum(struct pgconn *pc, const char *scope, uint64_t *n)
{
	struct pgargs a = { 0 };
	PGresult *res;
	int rc;

	pg_arg_bytes(&a, scope, strlen(scope));
	if ((rc = pg_exec(pc, "SELECT greatest(coalesce(sum(n), 0), 0)::bigint "
	    "FROM idem_quota WHERE scope = $1", &a, &res)) != IDEM_OK)
		return rc;
	*n = pg_get_u64(res, 0, 0);
	PQclear(res);
	return IDEM_OK;
}

/*
 * Grants the slots of scope allowances under bound, with the gate
 * passed exclusive and the scope's count exact: every slot's row gets
 * a = n + g and b = bound, where the grants g share at most half of
 * room (bound less the count, this claim's 1 included) evenly over the
 * scope's rows, and the claiming session's slot gets at least 1 of it
 * when there is any.  The sum of the grants is at most room, so the
 * sum of the allowances is at most the bound (doc/DESIGN.md, "The
 * per-scope bound").  Rows a delete inserts meanwhile keep b = 0.
 */
static int
pg_quota_grant(struct pgconn *pc, const char *scope, uint64_t bound,
    uint64_t room)
{
	struct pgargs a = { 0 };

	pg_arg_bytes(&a, scope, strlen(scope));
	pg_arg_u64(&a, pg_slot(pc));
	pg_arg_u64(&a, room);
	pg_arg_u64(&a, bound);
	return pg_run(pc, "UPDATE idem_quota AS q SET b = $4::bigint, "
	    "a = q.n + CASE WHEN q.slot = $2::integer THEN "
	    "greatest(least($3::bigint, 1), $3::bigint / (2 * k.k)) "
	    "ELSE $3::bigint / (2 * k.k) END "
	    "FROM (SELECT count(*) AS k FROM idem_quota WHERE scope = $1) k "
	    "WHERE q.scope = $1", &a);
}

/*
 * Counts the new record a fresh claim of scope is about to write:
 * IDEM_OK, or IDEM_ELIMIT when the scope is at its bound even after
 * purging what has expired (which *changed reports), or PG_RETRY to run
 * the transaction again with *exclusive set.
 *
 * Every claim of a new key adds 1 to its session's slot of the count
 * behind the scope's gate, taken shared, so that the claims of one
 * scope's new keys do not queue on one row.  Each slot has an
 * allowance (a) of the bound (b) it was granted under; the allowances
 * of a scope sum to at most its bound, and a slot's count stays within
 * its allowance, so a claim whose slot is still within its allowance,
 * its own 1 included, keeps the bound without reading the other slots
 * (its row is locked by the add, so a session sharing the slot waits).
 * Otherwise the claim runs again with the gate taken exclusive: no
 * other claim of the scope is then under way, the count (the sum of
 * the slots) is exact, two claims cannot both take the last place, and
 * when there is room, the slots' allowances are granted again
 * (pg_quota_grant).  Without a bound the count is still kept (behind
 * the gate, as another host's claims may be bounded), so that a bound
 * set later is right at once: it finds no allowance granted under it.
 */
static int
pg_quota_claim(struct pgstore *s, struct pgconn *pc, const char *scope,
    uint64_t now_ms, uint64_t ttl_ms, int *exclusive, uint32_t *retry_after,
    int *changed)
{
	PGresult *res;
	uint64_t n, at = 0;
	size_t purged = 0;
	int rc, have, within;

	if ((rc = pg_quota_add(pc, scope, 1, *exclusive ? PG_GATE_ALONE :
	    PG_GATE_SHARED, s->max_keys, &within)) != IDEM_OK ||
	    s->max_keys == 0)
		return rc;
	if (!*exclusive) {
		if (within)
			return IDEM_OK;
		*exclusive = 1;
		return PG_RETRY;
	}
	if ((rc = pg_quota_sum(pc, scope, &n)) != IDEM_OK)
		return rc;
	if (n > s->max_keys) {
		if ((rc = pg_purge_tx(pc, now_ms, STORE_CLAIM_PURGE_MAX,
		    &purged)) != IDEM_OK ||
		    (rc = pg_quota_sum(pc, scope, &n)) != IDEM_OK)
			return rc;
		*changed = purged > 0;
	}
	if (n <= s->max_keys)
		return pg_quota_grant(pc, scope, s->max_keys,
		    s->max_keys - n);
	if ((rc = pg_quota_add(pc, scope, -1, PG_GATE_NONE, 0, NULL)) !=
	    IDEM_OK ||
	    (rc = pg_exec(pc, "SELECT purge_at FROM idem_keys WHERE purge_at "
	    "IS NOT NULL ORDER BY purge_at LIMIT 1", NULL, &res)) != IDEM_OK)
		return rc;
	have = PQntuples(res) == 1;
	if (have)
		at = pg_get_u64(res, 0, 0);
	PQclear(res);
	*retry_after = store_limit_retry(have, at, now_ms, ttl_ms);
	return IDEM_ELIMIT;
}

struct pg_claim_job {
	const char *scope, *key;
	const uint8_t *fp, *token;
	const struct store_first *first;
	uint64_t now_ms, lease_ms, ttl_ms;
	struct store_claim *out;
	int exclusive;    /* pass the scope's gate alone (pg_quota_claim) */
	int lost;         /* the one statement's answer was lost */
	uint64_t now_raw; /* now_ms by the caller's clock (pg_now) */
};

/* The ids of the statements pg_send_tx prepares (pgstmt.id). */
enum pg_stmt_id {
	PG_STMT_GATE,
	PG_STMT_CLAIM,
	PG_STMT_OWN_PUT,
	PG_STMT_OWN_DEL,
	PG_STMT_GATE_ALONE,
	PG_STMT_CLAIM_GRANT
};

/*
 * Where a record's generation is in its encoding (record.c, rec_put:
 * version, state, fingerprint, token, three times, attempts, stage),
 * counted from 1 as SQL's overlay counts.
 */
#define PG_REC_GEN_POS 83
_Static_assert(PG_REC_GEN_POS == 1 + 1 + 1 + FP_SIZE + REC_TOKEN_SIZE +
    3 * 8 + 4 + 4, "the generation's place in a record");

/*
 * A claim as one statement, after the scope's gate is passed shared
 * (PG_STMT_GATE, a statement before it in the same transaction, so that
 * this one's snapshot is taken inside the gate, after any grant of
 * allowances, which passes it exclusive): the key's record inserted,
 * unless it exists, with the key's generation put in its place ($3
 * carries 0 there), and counted in the session's slot of the scope's
 * count; or, with a bound ($6), nothing written unless the slot's row
 * holds an allowance granted under that bound with room for one more
 * (pg_quota_claim: the claim then runs with the gate exclusive).  The
 * row is read FOR UPDATE, so that its count is the latest committed
 * and no session sharing the slot adds to it before this one commits;
 * no other slot is read.  Each row says what happened: 1 and the
 * record inserted; 2 and the record that was there; 3: no allowance.
 * No row: a claim of the key committed after the snapshot, and the
 * claim runs again on the row.
 */
#define PG_SQL_CLAIM \
	"WITH g AS (SELECT coalesce((SELECT gen FROM idem_gens WHERE " \
	"scope = $1::bytea AND key = $2::bytea), 0) AS gen), " \
	"own AS (SELECT n, a FROM idem_quota WHERE $6::bigint <> 0 AND " \
	"scope = $1::bytea AND slot = $5::integer AND b = $6::bigint " \
	"FOR UPDATE), " \
	"ok AS (SELECT $6::bigint = 0 OR EXISTS (SELECT 1 FROM own WHERE " \
	"own.n < own.a) AS pass), " \
	"ins AS (INSERT INTO idem_keys (scope, key, rec, purge_at) " \
	"SELECT $1::bytea, $2::bytea, overlay($3::bytea PLACING " \
	"int8send(g.gen) FROM " PG_STR(PG_REC_GEN_POS) " FOR 8), " \
	"$4::bigint FROM g, ok WHERE ok.pass ON CONFLICT DO NOTHING " \
	"RETURNING rec), " \
	"cnt AS (INSERT INTO idem_quota AS q (scope, slot, n) " \
	"SELECT $1::bytea, $5::integer, 1 FROM ins ON CONFLICT (scope, slot) " \
	"DO UPDATE SET n = q.n + excluded.n) " \
	"SELECT 1, rec FROM ins UNION ALL " \
	"SELECT 2, rec FROM idem_keys WHERE scope = $1::bytea AND " \
	"key = $2::bytea UNION ALL " \
	"SELECT 3, NULL FROM ok WHERE NOT ok.pass"
#define PG_SQL_GATE "SELECT pg_advisory_xact_lock_shared($1::bigint)"

/*
 * A claim as one statement, as PG_SQL_CLAIM, for a session with no
 * allowance of the bound ($6, not 0), after the scope's gate is passed
 * exclusive (PG_STMT_GATE_ALONE), so that no other claim of the scope
 * is under way and the count this statement sees (c: the sum of the
 * slots, and how many there are with the session's own) is exact: when
 * there is room for this claim (ok), the record inserted and the
 * allowances granted, as pg_quota_grant grants them (the session's own
 * slot counts its 1 and takes at least 1 of what room is left; the
 * other slots' rows, updated apart, since one statement updates a row
 * once).  Rows as PG_SQL_CLAIM's, 3: no room (the claim runs with the
 * gate exclusive as a transaction of statements, which purges).
 */
#define PG_SQL_CLAIM_GRANT \
	"WITH g AS (SELECT coalesce((SELECT gen FROM idem_gens WHERE " \
	"scope = $1::bytea AND key = $2::bytea), 0) AS gen), " \
	"c AS (SELECT greatest(coalesce(sum(n), 0), 0) AS n, count(*) + " \
	"1 - count(*) FILTER (WHERE slot = $5::integer) AS k FROM " \
	"idem_quota WHERE scope = $1::bytea), " \
	"ok AS (SELECT c.n + 1 <= $6::bigint AS pass, " \
	"greatest($6::bigint - c.n - 1, 0) AS room, c.k FROM c), " \
	"ins AS (INSERT INTO idem_keys (scope, key, rec, purge_at) " \
	"SELECT $1::bytea, $2::bytea, overlay($3::bytea PLACING " \
	"int8send(g.gen) FROM " PG_STR(PG_REC_GEN_POS) " FOR 8), " \
	"$4::bigint FROM g, ok WHERE ok.pass ON CONFLICT DO NOTHING " \
	"RETURNING rec), " \
	"cnt AS (INSERT INTO idem_quota AS q (scope, slot, n, a, b) " \
	"SELECT $1::bytea, $5::integer, 1, 1 + greatest(least(ok.room, 1), " \
	"ok.room / (2 * ok.k)), $6::bigint FROM ins, ok " \
	"ON CONFLICT (scope, slot) DO UPDATE SET n = q.n + excluded.n, " \
	"a = q.n + excluded.a, b = excluded.b), " \
	"oth AS (UPDATE idem_quota AS q SET a = q.n + ok.room / (2 * ok.k), " \
	"b = $6::bigint FROM ok WHERE q.scope = $1::bytea AND " \
	"q.slot <> $5::integer AND EXISTS (SELECT 1 FROM ins)) " \
	"SELECT 1, rec FROM ins UNION ALL " \
	"SELECT 2, rec FROM idem_keys WHERE scope = $1::bytea AND " \
	"key = $2::bytea UNION ALL " \
	"SELECT 3, NULL FROM ok WHERE NOT ok.pass"
#define PG_SQL_GATE_ALONE "SELECT pg_advisory_xact_lock($1::bigint)"

/*
 * The rows a hook put (struct pg_put), as the last statement's CTE r,
 * after the CTE named by w has written the record: each row's lock
 * (pg_tx_put's) then its insert or update, and the tables' counts in
 * the session's slot ($s), by the rows inserted.  Parameters $b to
 * $b+15: table, key, value and lock of PG_PUT_ROWS rows, NULL past the
 * last.
 */
#define PG_SQL_ROW(a, b, c, d) \
	"($" #a "::text, $" #b "::bytea, $" #c "::bytea, $" #d "::bigint)"
#define PG_SQL_ROWS(w, s, a1, a2, a3, a4, b1, b2, b3, b4, c1, c2, c3, c4, \
    d1, d2, d3, d4) \
	"r AS (INSERT INTO idem_rows AS o (tbl, k, v) " \
	"SELECT x.t, x.k, x.v FROM (VALUES " PG_SQL_ROW(a1, a2, a3, a4) \
	", " PG_SQL_ROW(b1, b2, b3, b4) ", " PG_SQL_ROW(c1, c2, c3, c4) \
	", " PG_SQL_ROW(d1, d2, d3, d4) ") AS x(t, k, v, h), " \
	"LATERAL (SELECT pg_advisory_xact_lock(x.h)) l " \
	"WHERE x.t IS NOT NULL AND EXISTS (SELECT 1 FROM " w ") " \
	"ON CONFLICT (tbl, k) DO UPDATE SET v = excluded.v " \
	"RETURNING o.tbl, o.xmax = 0 AS fresh), " \
	"c AS (INSERT INTO idem_counts AS c (tbl, slot, n) " \
	"SELECT tbl, $" #s "::integer, count(*) FROM r WHERE fresh " \
	"GROUP BY tbl ORDER BY tbl ON CONFLICT (tbl, slot) DO UPDATE " \
	"SET n = c.n + excluded.n) "

/*
 * A write to an owned claim as one statement: the record replaced
 * where it is still what the claim wrote last ($5), with the rows its
 * hook put; the count of records replaced (0: not ours as we knew it).
 */
#define PG_SQL_OWN_PUT \
	"WITH u AS (UPDATE idem_keys SET rec = $3::bytea, " \
	"purge_at = $4::bigint WHERE scope = $1::bytea AND key = $2::bytea " \
	"AND rec = $5::bytea RETURNING 1), " \
	PG_SQL_ROWS("u", 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, \
	    19, 20, 21, 22) \
	"SELECT count(*) FROM u"

/*
 * A release as one statement: the record deleted where it is still
 * what the claim wrote last ($3), taken off the scope's count in the
 * session's slot ($4), with the rows its hook put.
 */
#define PG_SQL_OWN_DEL \
	"WITH d AS (DELETE FROM idem_keys WHERE scope = $1::bytea AND " \
	"key = $2::bytea AND rec = $3::bytea RETURNING 1), " \
	"q AS (INSERT INTO idem_quota AS q (scope, slot, n) " \
	"SELECT $1::bytea, $4::integer, -1 FROM d ON CONFLICT (scope, slot) " \
	"DO UPDATE SET n = q.n + excluded.n), " \
	PG_SQL_ROWS("d", 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, \
	    17, 18, 19, 20) \
	"SELECT count(*) FROM d"


/*
 * The key's generation for a fresh claim (store.h): read, or, when the
 * claim replaces an expired record (stale), that lifetime's end counted
 * first, in the claim's transaction.
 */
static int
pg_gen_for_claim(struct pgconn *pc, const char *scope, const char *key,
    int stale, uint64_t *gen)
{
	struct pgargs a = { 0 };
	PGresult *res;
	int rc;

	*gen = 0;
	pg_arg_bytes(&a, scope, strlen(scope));
	pg_arg_bytes(&a, key, strlen(key));
	if ((rc = pg_exec(pc, stale ?
	    "INSERT INTO idem_gens AS g (scope, key, gen) VALUES ($1, $2, 1) "
	    "ON CONFLICT (scope, key) DO UPDATE SET gen = g.gen + 1 "
	    "RETURNING gen" :
	    "SELECT gen FROM idem_gens WHERE scope = $1 AND key = $2",
	    &a, &res)) != IDEM_OK)
		return rc;
	if (PQntuples(res) == 1)
		*gen = pg_get_u64(res, 0, 0);
	PQclear(res);
	return IDEM_OK;
}

static int
pg_claim_fresh(struct pg_claim_job *a, struct pgconn *pc, int stale,
    struct rec *r)
{
	uint64_t gen;
	int rc;

	if ((rc = pg_gen_for_claim(pc, a->scope, a->key, stale, &gen)) !=
	    IDEM_OK)
		return rc;
	return store_rec_fresh(r, a->fp, a->token, a->now_ms, a->lease_ms,
	    a->ttl_ms, gen, a->first);
}

/*
 * A claim in one round trip: the gate, then the claim (PG_SQL_CLAIM;
 * with grant set, the gate exclusive and PG_SQL_CLAIM_GRANT), one
 * transaction.  IDEM_OK with *slow clear when it decided: a fresh
 * claim committed, or the record there answers (replay, conflict,
 * mismatch), which needs no write; *slow set when the claim is to run
 * otherwise (the record there is to be taken over or replaced, the
 * key was claimed since the snapshot; a->exclusive set: the session
 * has no allowance, or with grant set, the scope is at its bound); an
 * error as pg_send_tx's.
 */
static int
pg_claim_fast(struct pgstore *s, struct pgconn *pc, struct pg_claim_job *a,
    int grant, int *slow)
{
	struct store_claim *out = a->out;
	struct pgargs ga = { 0 }, ca = { 0 };
	struct pgstmt st[2];
	struct buf b = BUF_INIT;
	struct rec fresh;
	PGresult *res = NULL;
	uint64_t at, gate, *hint;
	int rc, i, kind, got[4] = { -1, -1, -1, -1 };

	*slow = 0;
	gate = pg_lock_hash('s', "", a->scope, strlen(a->scope));
	memset(&fresh, 0, sizeof(fresh));
	if ((rc = store_rec_fresh(&fresh, a->fp, a->token, a->now_ms,
	    a->lease_ms, a->ttl_ms, 0, a->first)) != IDEM_OK ||
	    (rc = rec_encode(&fresh, &b)) != IDEM_OK ||
	    (rc = pg_note_put(pc, a->scope, a->key, b.data, b.len)) != IDEM_OK)
		goto out;
	pc->note_skip = PG_REC_GEN_POS - 1;
	pg_arg_u64(&ga, gate);
	pg_arg_bytes(&ca, a->scope, strlen(a->scope));
	pg_arg_bytes(&ca, a->key, strlen(a->key));
	pg_arg_bytes(&ca, b.data, b.len);
	if (store_rec_expiry_at(&fresh, &at))
		pg_arg_u64(&ca, at);
	else
		pg_arg_null(&ca);
	pg_arg_u64(&ca, pg_slot(pc));
	pg_arg_u64(&ca, s->max_keys);
	st[0] = grant ?
	    (struct pgstmt){ PG_STMT_GATE_ALONE, PG_SQL_GATE_ALONE, &ga } :
	    (struct pgstmt){ PG_STMT_GATE, PG_SQL_GATE, &ga };
	st[1] = grant ?
	    (struct pgstmt){ PG_STMT_CLAIM_GRANT, PG_SQL_CLAIM_GRANT, &ca } :
	    (struct pgstmt){ PG_STMT_CLAIM, PG_SQL_CLAIM, &ca };
	if ((rc = pg_send_tx(s, pc, st, 2, &res)) != IDEM_OK) {
		a->lost = rc == PG_LOST;
		goto out;
	}
	pc->noted = PG_NOTED_NONE;
	for (i = 0; i < PQntuples(res); i++) {
		kind = (int)pg_get_u64(res, i, 0);
		if (kind >= 1 && kind <= 3)
			got[kind] = i;
	}
	/*
	 * The allowance to try first next time: granted now, or found (or
	 * to be granted by the next claim: a replay taken with the gate
	 * exclusive takes it so once); none at the bound.
	 */
	hint = &pc->granted[gate % PG_GRANT_HINTS];
	if (got[3] >= 0 && *hint == gate)
		*hint = 0;
	else if (s->max_keys != 0 && (got[1] >= 0 || (grant && got[2] >= 0)))
		*hint = gate;
	if (got[1] < 0 && got[2] < 0) {
		a->exclusive = got[3] >= 0;
		*slow = 1;
		goto out;
	}
	i = got[1] >= 0 ? got[1] : got[2];
	if ((rc = rec_decode(PQgetvalue(res, i, 1), (size_t)PQgetlength(res,
	    i, 1), &out->rec)) != IDEM_OK)
		goto out;
	if (got[1] >= 0) {
		out->decision = ENGINE_CLAIM;
		fault_point("store_claim_commit");
		goto out;
	}
	out->decision = engine_decide(&out->rec, a->fp, a->now_ms,
	    &out->retry_after);
	if (out->decision == ENGINE_CLAIM || out->decision == ENGINE_TAKEOVER) {
		rec_free(&out->rec);
		memset(out, 0, sizeof(*out));
		*slow = 1;
	}
out:
	PQclear(res);
	buf_free(&b);
	rec_free(&fresh);
	return rc;
}

/*
 * Whether a claim may run as one statement: not with a hook (which may
 * read rows), nor completed in its transaction (store_first.done), nor
 * inside the scope's gate taken exclusive, nor when a test stands at a
 * point between its statements.
 */
static int
pg_claim_fast_ok(const struct pg_claim_job *a)
{
	return !a->exclusive && (a->first == NULL ||
	    (a->first->hook == NULL && a->first->done == NULL)) &&
	    !pg_fault_named("store_claim") &&
	    !pg_fault_named("store_claim_commit");
}

/*
 * Whether the session is to try its allowance of scope's bound first:
 * no bound, or the session's slot held one when it last claimed there.
 * A session that holds none takes the gate exclusive at once, sparing
 * the round trip that would find so.
 */
static int
pg_claim_granted(const struct pgstore *s, const struct pgconn *pc,
    const char *scope)
{
	uint64_t gate = pg_lock_hash('s', "", scope, strlen(scope));

	return s->max_keys == 0 || pc->granted[gate % PG_GRANT_HINTS] == gate;
}

/*
 * A fresh claim completed in its own transaction (store_first.done):
 * its record cur written again completed with the response, after the
 * hook's rows, so the claim, the rows and the answer are one commit.
 */
static int
pg_claim_done(struct pgstore *s, struct pgconn *pc, struct pg_claim_job *a,
    const struct rec *cur)
{
	struct rec done;
	int rc;

	if (fault_point("store_complete"))
		return IDEM_EFULL;
	if ((rc = store_rec_completed(&s->base, cur, a->first->done, NULL,
	    a->now_ms, a->ttl_ms, &done)) != IDEM_OK)
		return rc;
	return pg_rec_put(pc, a->scope, a->key, &done, 0);
}

static int
pg_claim_run(struct pgstore *s, struct pgconn *pc, void *arg, int *commit)
{
	struct pg_claim_job *a = arg;
	struct store_claim *out = a->out;
	int rc, found, purged = 0, slow;

	/* A transaction run again starts from its arguments. */
	rec_free(&out->rec);
	memset(out, 0, sizeof(*out));
	a->lost = 0;
	a->now_ms = pg_now(pc, a->now_raw);
	/*
	 * A session with no allowance of the bound claims again with the
	 * gate exclusive, in one round trip still, and is granted one.
	 */
	if (pg_claim_fast_ok(a)) {
		if (!pg_claim_granted(s, pc, a->scope))
			a->exclusive = 1;
		else if ((rc = pg_claim_fast(s, pc, a, 0, &slow)) != IDEM_OK ||
		    !slow)
			return rc;
		else
			pg_tx_again(pc);
		if (a->exclusive) {
			if ((rc = pg_claim_fast(s, pc, a, 1, &slow)) !=
			    IDEM_OK || !slow)
				return rc;
			pg_tx_again(pc);
		}
	}
	rc = pg_rec_get(pc, a->scope, a->key, 1, &out->rec);
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
		if (!found &&
		    (rc = pg_quota_claim(s, pc, a->scope, a->now_ms, a->ttl_ms,
		    &a->exclusive, &out->retry_after, &purged)) != IDEM_OK) {
			*commit = rc == IDEM_ELIMIT && purged;
			return rc;
		}
		if ((rc = pg_claim_fresh(a, pc, found, &out->rec)) != IDEM_OK)
			return rc;
		rc = pg_rec_put(pc, a->scope, a->key, &out->rec, !found);
		/* Another transaction inserted the key: decide again. */
		if (rc == IDEM_EEXIST)
			return PG_RETRY;
		if (rc == IDEM_OK && a->first != NULL &&
		    a->first->hook != NULL)
			rc = pg_run_hook(s, pc, a->first->hook,
			    a->first->hook_ctx, NULL);
		if (rc == IDEM_OK && a->first != NULL &&
		    a->first->done != NULL)
			rc = pg_claim_done(s, pc, a, &out->rec);
		break;
	case ENGINE_TAKEOVER:
		store_rec_takeover(&s->base, &out->rec, a->token, a->now_ms,
		    a->lease_ms, a->ttl_ms);
		rc = pg_rec_put(pc, a->scope, a->key, &out->rec, 0);
		break;
	default:
		return IDEM_OK;
	}
	if (rc != IDEM_OK)
		return rc;
	fault_point("store_claim_commit");
	*commit = 1;
	return IDEM_OK;
}

int
pg_claim(struct store *base, const char *scope, const char *key,
    const uint8_t fp[FP_SIZE], const uint8_t token[REC_TOKEN_SIZE],
    uint64_t now_ms, uint64_t lease_ms, uint64_t ttl_ms,
    const struct store_first *first, struct store_claim *out)
{
	struct pg_claim_job a = { scope, key, fp, token, first, now_ms,
	    lease_ms, ttl_ms, out, 0, 0, now_ms };
	struct pgstore *s = pgstore_of(base);
	uint32_t retry_after;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = store_claim_args_check(lease_ms, ttl_ms, first)) !=
	    IDEM_OK ||
	    (rc = pg_names_check(scope, key)) != IDEM_OK)
		return rc;
	rc = pg_write_verified(s, pg_claim_run, &a);
	/*
	 * A claim whose one statement's answer was lost, and which the
	 * read-back found committed: its record, generation included, is
	 * what is there now, if it still has our token.
	 */
	if (rc == IDEM_OK && a.lost) {
		rec_free(&out->rec);
		memset(out, 0, sizeof(*out));
		if (pg_lookup(base, scope, key, &out->rec) != IDEM_OK ||
		    out->rec.state != REC_IN_PROGRESS ||
		    memcmp(out->rec.token, token, REC_TOKEN_SIZE) != 0)
			rc = IDEM_EIO;
		out->decision = ENGINE_CLAIM;
	}
	if (rc == IDEM_OK) {
		/* A claim completed in its write is no one's to write to. */
		if ((out->decision == ENGINE_CLAIM && (first == NULL ||
		    first->done == NULL)) || out->decision == ENGINE_TAKEOVER)
			pg_owned_put_rec(s, scope, key, token, &out->rec);
		return IDEM_OK;
	}
	retry_after = out->retry_after;
	rec_free(&out->rec);
	memset(out, 0, sizeof(*out));
	if (rc == IDEM_ELIMIT)
		out->retry_after = retry_after;
	return rc;
}

/* A write to a claim we own (store_lmdb_claim.c's store_own_job). */
struct pg_own_job;
typedef int (*pg_own_fn)(struct pgstore *s, struct pgconn *pc,
    struct pg_own_job *a, const struct rec *cur);

enum pg_own_kind {
	PG_OWN_CHECKPOINT,
	PG_OWN_ABANDON,
	PG_OWN_COMPLETE,
	PG_OWN_RELEASE
};

struct pg_own_job {
	const char *scope, *key;
	const uint8_t *token;
	enum pg_own_kind kind;
	pg_own_fn fn;
	uint64_t now_raw;     /* now_ms by the caller's clock (pg_now) */
	struct buf old;       /* what the claim wrote last, when known */
	struct buf written;   /* what this write wrote as the record */
	uint64_t now_ms, span_ms;
	uint32_t stage;
	const void *cp;
	size_t cplen;
	const struct rec_response *resp;
	idem_tx_fn hook;
	void *hook_ctx;
};

/* The next record of a fast own write (checkpoint, abandon, complete). */
static int
pg_own_next(struct pgstore *s, struct pg_own_job *a, const struct rec *cur,
    const struct idem_tx *tx, struct buf *b)
{
	struct rec next;
	int rc;

	switch (a->kind) {
	case PG_OWN_CHECKPOINT:
		store_rec_checkpointed(cur, a->stage, a->cp, a->cplen,
		    a->now_ms, a->span_ms, &next);
		break;
	case PG_OWN_ABANDON:
		store_rec_abandoned(cur, a->now_ms, &next);
		break;
	default:
		if ((rc = store_rec_completed(&s->base, cur, a->resp, tx,
		    a->now_ms, a->span_ms, &next)) != IDEM_OK)
			return rc;
		break;
	}
	return rec_encode(&next, b);
}

/*
 * A write to an owned claim in one statement (PG_SQL_OWN_PUT, _DEL),
 * guarded by the record the claim wrote last (a->old), the hook's puts
 * buffered into it.  IDEM_OK with *slow clear when it committed; *slow
 * set when the write is to run as a transaction of statements (the
 * record is not as the claim left it, the hook reads or deletes rows);
 * an error as pg_send_tx's, or the hook's.
 */
static int
pg_own_fast(struct pgstore *s, struct pgconn *pc, struct pg_own_job *a,
    int *slow)
{
	struct pgargs args = { 0 };
	struct pgstmt st;
	struct pg_tx t;
	struct idem_tx tx;
	struct buf b = BUF_INIT;
	struct rec cur;
	PGresult *res = NULL;
	uint64_t at;
	size_t i;
	int rc, del = a->kind == PG_OWN_RELEASE;

	*slow = 1;
	memset(&t, 0, sizeof(t));
	if (rec_decode(a->old.data, a->old.len, &cur) != IDEM_OK)
		return IDEM_OK;
	if (store_rec_owned(&cur, a->token) != IDEM_OK) {
		rc = IDEM_OK;
		goto out;
	}
	if ((a->kind == PG_OWN_CHECKPOINT && fault_point("store_checkpoint")) ||
	    (a->kind == PG_OWN_COMPLETE && fault_point("store_complete"))) {
		rc = IDEM_EFULL;
		goto out;
	}
	t.s = s;
	t.pc = pc;
	t.buffered = 1;
	memset(&tx, 0, sizeof(tx));
	tx.s = &s->base;
	tx.impl = &t;
	tx.may_respond = a->kind == PG_OWN_COMPLETE;
	rc = a->hook != NULL ? a->hook(a->hook_ctx, &tx) : IDEM_OK;
	if (t.live) {
		rc = IDEM_OK;
		goto out;
	}
	if (rc != IDEM_OK ||
	    (!del && (rc = pg_own_next(s, a, &cur, &tx, &b)) != IDEM_OK))
		goto out;
	pg_arg_bytes(&args, a->scope, strlen(a->scope));
	pg_arg_bytes(&args, a->key, strlen(a->key));
	if (!del) {
		struct rec next;

		pg_arg_bytes(&args, b.data, b.len);
		if ((rc = rec_decode(b.data, b.len, &next)) != IDEM_OK)
			goto out;
		if (store_rec_expiry_at(&next, &at))
			pg_arg_u64(&args, at);
		else
			pg_arg_null(&args);
		rec_free(&next);
	}
	pg_arg_bytes(&args, a->old.data, a->old.len);
	pg_arg_u64(&args, pg_slot(pc));
	for (i = 0; i < PG_PUT_ROWS; i++) {
		if (i < t.nputs) {
			pg_arg_str(&args, t.puts[i].table);
			pg_arg_bytes(&args, t.puts[i].key.data,
			    t.puts[i].key.len);
			pg_arg_bytes(&args, t.puts[i].val.data,
			    t.puts[i].val.len);
			pg_arg_u64(&args, pg_lock_hash('r', t.puts[i].table,
			    t.puts[i].key.data, t.puts[i].key.len));
		} else {
			pg_arg_null(&args);
			pg_arg_null(&args);
			pg_arg_null(&args);
			pg_arg_null(&args);
		}
	}
	if (del)
		pg_note_del(pc, a->scope, a->key);
	else if ((rc = pg_note_put(pc, a->scope, a->key, b.data, b.len)) !=
	    IDEM_OK)
		goto out;
	st = del ? (struct pgstmt){ PG_STMT_OWN_DEL, PG_SQL_OWN_DEL, &args } :
	    (struct pgstmt){ PG_STMT_OWN_PUT, PG_SQL_OWN_PUT, &args };
	*slow = 0;
	if ((rc = pg_send_tx(s, pc, &st, 1, &res)) != IDEM_OK)
		goto out;
	if (pg_get_u64(res, 0, 0) != 1) {
		/* Not the record we knew: decide on what is there. */
		pc->noted = PG_NOTED_NONE;
		*slow = 1;
		goto out;
	}
	if (!del)
		rc = buf_append(&a->written, b.data, b.len);
	if (a->kind == PG_OWN_COMPLETE)
		fault_point("store_complete_commit");
out:
	pg_tx_end(&t);
	PQclear(res);
	buf_free(&b);
	rec_free(&cur);
	return rc;
}

static int
pg_own_run(struct pgstore *s, struct pgconn *pc, void *arg, int *commit)
{
	struct pg_own_job *a = arg;
	struct rec cur;
	int rc, slow;

	(void)commit;
	a->written.len = 0;
	a->now_ms = pg_now(pc, a->now_raw);
	if (a->old.len > 0 && !pg_fault_named("store_complete_commit")) {
		if ((rc = pg_own_fast(s, pc, a, &slow)) != IDEM_OK || !slow)
			return rc;
		if (pc->ended)
			pg_tx_again(pc);
	}
	rc = pg_rec_get(pc, a->scope, a->key, 1, &cur);
	if (rc == IDEM_ENOTFOUND)
		return IDEM_ELOST;
	if (rc != IDEM_OK)
		return rc;
	if ((rc = store_rec_owned(&cur, a->token)) == IDEM_OK)
		rc = a->fn(s, pc, a, &cur);
	rec_free(&cur);
	if (rc == IDEM_OK && pc->noted == PG_NOTED_PUT)
		rc = buf_append(&a->written, pc->note_rec.data,
		    pc->note_rec.len);
	return rc;
}

static int
pg_own_write(struct store *base, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], struct pg_own_job *a)
{
	struct pgstore *s = pgstore_of(base);
	int rc;

	if (token == NULL)
		return IDEM_EINVAL;
	if ((rc = pg_names_check(scope, key)) != IDEM_OK)
		return rc;
	a->scope = scope;
	a->key = key;
	a->token = token;
	a->now_raw = a->now_ms;
	(void)pg_owned_get(s, scope, key, token, &a->old);
	rc = pg_write_verified(s, pg_own_run, a);
	/*
	 * What the claim wrote last, for its next write; a claim ended,
	 * lost, or whose write's outcome is unknown is forgotten.
	 */
	if (rc == IDEM_OK && a->written.len > 0 &&
	    (a->kind == PG_OWN_CHECKPOINT || a->kind == PG_OWN_ABANDON))
		pg_owned_put(s, scope, key, token, a->written.data,
		    a->written.len);
	else
		pg_owned_drop(s, scope, key, token);
	buf_free(&a->old);
	buf_free(&a->written);
	return rc;
}

static int
pg_checkpoint_op(struct pgstore *s, struct pgconn *pc, struct pg_own_job *a,
    const struct rec *cur)
{
	struct rec next;

	(void)s;
	if (fault_point("store_checkpoint"))
		return IDEM_EFULL;
	store_rec_checkpointed(cur, a->stage, a->cp, a->cplen, a->now_ms,
	    a->span_ms, &next);
	return pg_rec_put(pc, a->scope, a->key, &next, 0);
}

int
pg_checkpoint(struct store *base, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint32_t stage, const void *cp,
    size_t cplen, uint64_t now_ms, uint64_t lease_ms)
{
	struct pg_own_job a;
	int rc;

	if ((rc = store_checkpoint_args_check(cp, cplen)) != IDEM_OK)
		return rc;
	memset(&a, 0, sizeof(a));
	a.fn = pg_checkpoint_op;
	a.kind = PG_OWN_CHECKPOINT;
	a.now_ms = now_ms;
	a.span_ms = lease_ms;
	a.stage = stage;
	a.cp = cp;
	a.cplen = cplen;
	return pg_own_write(base, scope, key, token, &a);
}

static int
pg_complete_op(struct pgstore *s, struct pgconn *pc, struct pg_own_job *a,
    const struct rec *cur)
{
	struct idem_tx tx;
	struct rec done;
	int rc;

	if (fault_point("store_complete"))
		return IDEM_EFULL;
	memset(&tx, 0, sizeof(tx));
	tx.may_respond = 1;
	if (a->hook != NULL &&
	    (rc = pg_run_hook(s, pc, a->hook, a->hook_ctx, &tx)) != IDEM_OK)
		return rc;
	/* The clock is read with the row locked: the commit's time. */
	rc = store_rec_completed(&s->base, cur, a->resp, &tx, a->now_ms,
	    a->span_ms, &done);
	if (rc != IDEM_OK ||
	    (rc = pg_rec_put(pc, a->scope, a->key, &done, 0)) != IDEM_OK)
		return rc;
	fault_point("store_complete_commit");
	return IDEM_OK;
}

int
pg_complete(struct store *base, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], const struct rec_response *resp,
    idem_tx_fn hook, void *hook_ctx, uint64_t now_ms, uint64_t ttl_ms)
{
	struct pg_own_job a;

	if (resp == NULL)
		return IDEM_EINVAL;
	memset(&a, 0, sizeof(a));
	a.fn = pg_complete_op;
	a.kind = PG_OWN_COMPLETE;
	a.now_ms = now_ms;
	a.span_ms = ttl_ms;
	a.resp = resp;
	a.hook = hook;
	a.hook_ctx = hook_ctx;
	return pg_own_write(base, scope, key, token, &a);
}

static int
pg_release_op(struct pgstore *s, struct pgconn *pc, struct pg_own_job *a,
    const struct rec *cur)
{
	struct pgargs args = { 0 };
	int rc;

	(void)cur;
	/*
	 * The record's count before the hook's rows: every write takes its
	 * locks in one order (record, count, rows), so none waits in a
	 * circle.
	 */
	pg_arg_bytes(&args, a->scope, strlen(a->scope));
	pg_arg_bytes(&args, a->key, strlen(a->key));
	if ((rc = pg_run(pc, "DELETE FROM idem_keys WHERE scope = $1 AND "
	    "key = $2", &args)) != IDEM_OK ||
	    (rc = pg_quota_add(pc, a->scope, -1, PG_GATE_NONE, 0, NULL)) !=
	    IDEM_OK)
		return rc;
	pg_note_del(pc, a->scope, a->key);
	if (a->hook != NULL)
		rc = pg_run_hook(s, pc, a->hook, a->hook_ctx, NULL);
	return rc;
}

int
pg_release_claim(struct store *base, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], idem_tx_fn hook, void *hook_ctx)
{
	struct pg_own_job a;

	memset(&a, 0, sizeof(a));
	a.fn = pg_release_op;
	a.kind = PG_OWN_RELEASE;
	a.hook = hook;
	a.hook_ctx = hook_ctx;
	return pg_own_write(base, scope, key, token, &a);
}

static int
pg_abandon_op(struct pgstore *s, struct pgconn *pc, struct pg_own_job *a,
    const struct rec *cur)
{
	struct rec next;

	(void)s;
	store_rec_abandoned(cur, a->now_ms, &next);
	return pg_rec_put(pc, a->scope, a->key, &next, 0);
}

int
pg_abandon(struct store *base, const char *scope, const char *key,
    const uint8_t token[REC_TOKEN_SIZE], uint64_t now_ms)
{
	struct pg_own_job a;

	memset(&a, 0, sizeof(a));
	a.fn = pg_abandon_op;
	a.kind = PG_OWN_ABANDON;
	a.now_ms = now_ms;
	return pg_own_write(base, scope, key, token, &a);
}

/*
 * Key rolling (store_reseal): each listed record locked and read again
 * in one transaction, and the ones fn changed written back.  Only the
 * recovery point or response changes, so purge_at, which pg_rec_put
 * derives from the record's times and state, stays as it was.
 */
struct pg_reseal_job {
	const char *const *scopes;
	const char *const *keys;
	size_t n;
	store_reseal_fn fn;
	void *ctx;
};

static int
pg_reseal_run(struct pgstore *s, struct pgconn *pc, void *arg, int *commit)
{
	struct pg_reseal_job *a = arg;
	struct rec cur;
	size_t i;
	int rc = IDEM_OK, changed;

	(void)s;
	(void)commit;
	for (i = 0; i < a->n && rc == IDEM_OK; i++) {
		if ((rc = pg_names_check(a->scopes[i], a->keys[i])) != IDEM_OK)
			break;
		rc = pg_rec_get(pc, a->scopes[i], a->keys[i], 1, &cur);
		if (rc == IDEM_ENOTFOUND) {
			rc = IDEM_OK;
			continue;
		}
		if (rc != IDEM_OK)
			break;
		changed = 0;
		if ((rc = a->fn(a->ctx, a->scopes[i], a->keys[i], &cur,
		    &changed)) == IDEM_OK && changed)
			rc = pg_rec_put(pc, a->scopes[i], a->keys[i], &cur, 0);
		rec_free(&cur);
	}
	return rc;
}

int
pg_reseal(struct store *base, const char *const *scopes,
    const char *const *keys, size_t n, store_reseal_fn fn, void *ctx)
{
	struct pg_reseal_job a = { scopes, keys, n, fn, ctx };

	return pg_write(pgstore_of(base), pg_reseal_run, &a);
}

struct pg_purge_job {
	uint64_t now_ms;
	size_t max;
	size_t *purged;
};

static int
pg_purge_run(struct pgstore *s, struct pgconn *pc, void *arg, int *commit)
{
	struct pg_purge_job *a = arg;

	(void)s;
	(void)commit;
	return pg_purge_tx(pc, pg_now(pc, a->now_ms), a->max, a->purged);
}

int
pg_purge(struct store *base, uint64_t now_ms, size_t max, size_t *purged)
{
	struct pg_purge_job a = { now_ms, max, purged };

	*purged = 0;
	if (max == 0)
		return IDEM_OK;
	return pg_write(pgstore_of(base), pg_purge_run, &a);
}

/* Checks the table and the row key: IDEM_EINVAL, IDEM_ETOOBIG. */
static int
pg_row_key(const struct pgstore *s, const char *table, const void *key,
    size_t keylen)
{
	if (!pg_table_ok(s, table) || key == NULL || keylen == 0)
		return IDEM_EINVAL;
	return keylen > PG_ROW_KEY_MAX ? IDEM_ETOOBIG : IDEM_OK;
}

/*
 * Reads a row; lock: in a write, which first locks the row's name
 * (existing or not) until it commits.
 */
static int
pg_row_read(struct pgconn *pc, const char *table, const void *key,
    size_t keylen, int lock, PGresult **res)
{
	struct pgargs a = { 0 };
	int rc;

	if (lock && (rc = pg_lock(pc, pg_lock_hash('r', table, key,
	    keylen))) != IDEM_OK)
		return rc;
	pg_arg_str(&a, table);
	pg_arg_bytes(&a, key, keylen);
	if ((rc = pg_exec(pc, "SELECT v FROM idem_rows WHERE tbl = $1 AND "
	    "k = $2", &a, res)) != IDEM_OK)
		return rc;
	if (PQntuples(*res) == 0) {
		PQclear(*res);
		*res = NULL;
		return IDEM_ENOTFOUND;
	}
	return IDEM_OK;
}

int
pg_get(struct store *base, const char *table, const void *key,
    size_t keylen, struct buf *out)
{
	struct pgstore *s = pgstore_of(base);
	struct pgconn *pc;
	PGresult *res;
	int rc;

	if ((rc = pg_row_key(s, table, key, keylen)) != IDEM_OK)
		return rc;
	if ((rc = pg_acquire(s, &pc)) != IDEM_OK)
		return rc;
	if ((rc = pg_row_read(pc, table, key, keylen, 0, &res)) == IDEM_OK) {
		rc = buf_append(out, PQgetvalue(res, 0, 0),
		    (size_t)PQgetlength(res, 0, 0));
		PQclear(res);
	}
	pg_release(s, pc);
	return rc;
}

struct pg_insert_job {
	const char *table;
	const void *key, *val;
	size_t keylen, vallen;
	struct buf *existing;
	size_t existing_len;
};

static int
pg_insert_run(struct pgstore *s, struct pgconn *pc, void *arg, int *commit)
{
	struct pg_insert_job *a = arg;
	struct pgargs args = { 0 };
	PGresult *res;
	int rc;

	(void)commit;
	if (a->existing != NULL)
		a->existing->len = a->existing_len;
	pg_arg_str(&args, a->table);
	pg_arg_bytes(&args, a->key, a->keylen);
	pg_arg_bytes(&args, a->val, a->vallen);
	if ((rc = pg_exec(pc, "INSERT INTO idem_rows (tbl, k, v) VALUES "
	    "($1, $2, $3) ON CONFLICT DO NOTHING", &args, &res)) != IDEM_OK)
		return rc;
	rc = strcmp(PQcmdTuples(res), "1") == 0 ? IDEM_OK : IDEM_EEXIST;
	PQclear(res);
	if (rc == IDEM_OK) {
		long long delta[IDEM_MAX_TABLES] = { 0 };

		delta[pg_table_index(s, a->table)] = 1;
		return pg_counts_apply(s, pc, delta);
	}
	/* The row that was there first: it is visible to this statement. */
	if ((rc = pg_row_read(pc, a->table, a->key, a->keylen, 0, &res)) ==
	    IDEM_ENOTFOUND)
		return PG_RETRY;
	if (rc != IDEM_OK)
		return rc;
	rc = IDEM_EEXIST;
	if (a->existing != NULL && buf_append(a->existing,
	    PQgetvalue(res, 0, 0), (size_t)PQgetlength(res, 0, 0)) != IDEM_OK)
		rc = IDEM_ENOMEM;
	PQclear(res);
	return rc;
}

int
pg_insert_once(struct store *base, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen, struct buf *existing)
{
	struct pgstore *s = pgstore_of(base);
	struct pg_insert_job a = { table, key, val, keylen, vallen, existing,
	    existing != NULL ? existing->len : 0 };
	int rc;

	if ((rc = pg_row_key(s, table, key, keylen)) != IDEM_OK)
		return rc;
	if (vallen > 0 && val == NULL)
		return IDEM_EINVAL;
	return pg_write(s, pg_insert_run, &a);
}

/*
 * One row of a walk (pg_cursor): IDEM_OK to go on, with *stop set when
 * the caller's function asked to stop; any other value ends the walk
 * with it.
 */
typedef int (*pg_row_fn)(void *ctx, const PGresult *res, int row,
    int *stop);

/*
 * Runs sql (a SELECT with a's parameters) through a server-side cursor
 * in one read-only REPEATABLE READ transaction, so that the walk sees
 * one snapshot, as LMDB's read transaction does, while this process
 * holds at most PG_WALK_BATCH rows at a time however many there are.
 * The connection is held until the walk ends: fn may call the store (it
 * takes another connection of the pool), not walk it PG_POOL_MAX deep.
 */
static int
pg_cursor(struct pgstore *s, const char *sql, struct pgargs *a,
    pg_row_fn fn, void *ctx)
{
	char declare[512];
	struct pgconn *pc;
	PGresult *res;
	int rc, i, n, stop = 0;

	if ((size_t)snprintf(declare, sizeof(declare), "DECLARE idem_walk "
	    "NO SCROLL CURSOR FOR %s", sql) >= sizeof(declare))
		return IDEM_EINVAL;
	if ((rc = pg_acquire(s, &pc)) != IDEM_OK)
		return rc;
	if ((rc = pg_run(pc, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
	    NULL)) != IDEM_OK)
		goto out;
	rc = pg_run(pc, declare, a);
	while (rc == IDEM_OK && !stop) {
		if ((rc = pg_exec(pc, "FETCH " PG_STR(PG_WALK_BATCH) " FROM "
		    "idem_walk", NULL, &res)) != IDEM_OK)
			break;
		n = PQntuples(res);
		for (i = 0; i < n && rc == IDEM_OK && !stop; i++)
			rc = fn(ctx, res, i, &stop);
		PQclear(res);
		if (n < PG_WALK_BATCH)
			break;
	}
	/* The end of the transaction closes the cursor. */
	if (pg_run(pc, rc == IDEM_OK ? "COMMIT" : "ROLLBACK", NULL) !=
	    IDEM_OK && rc == IDEM_OK)
		rc = IDEM_EIO;
out:
	pg_release(s, pc);
	return rc == PG_RETRY ? IDEM_EIO : rc;
}

struct pg_scan_walk {
	store_scan_fn fn;
	void *ctx;
};

static int
pg_scan_row(void *ctx, const PGresult *res, int i, int *stop)
{
	struct pg_scan_walk *w = ctx;

	*stop = w->fn(w->ctx, PQgetvalue(res, i, 0), (size_t)PQgetlength(res,
	    i, 0), PQgetvalue(res, i, 1), (size_t)PQgetlength(res, i, 1)) != 0;
	return IDEM_OK;
}

/*
 * The scans' statements, by direction and whether they start from a
 * place ($5): each a range on the primary key (tbl, k), which bytea
 * orders as LMDB orders keys (bytes, then the shorter first).
 */
static const char *const pg_scan_sql[2][2] = {
	{ "SELECT k, v FROM idem_rows WHERE tbl = $1 AND k >= $2 AND "
	    "($3::bytea IS NULL OR k < $3) ORDER BY k LIMIT $4",
	  "SELECT k, v FROM idem_rows WHERE tbl = $1 AND k >= $2 AND "
	    "($3::bytea IS NULL OR k < $3) AND k >= $5 ORDER BY k LIMIT $4" },
	{ "SELECT k, v FROM idem_rows WHERE tbl = $1 AND k >= $2 AND "
	    "($3::bytea IS NULL OR k < $3) ORDER BY k DESC LIMIT $4",
	  "SELECT k, v FROM idem_rows WHERE tbl = $1 AND k >= $2 AND "
	    "($3::bytea IS NULL OR k < $3) AND k <= $5 ORDER BY k DESC "
	    "LIMIT $4" },
};

int
pg_scan(struct store *base, const char *table, const void *prefix,
    size_t prefixlen, const void *from, size_t fromlen, int reverse,
    size_t limit, store_scan_fn fn, void *ctx)
{
	struct pgstore *s = pgstore_of(base);
	struct pg_scan_walk w = { fn, ctx };
	uint8_t succ[PG_ROW_KEY_MAX];
	struct pgargs a = { 0 };
	size_t n = prefixlen;

	if (!pg_table_ok(s, table) || fn == NULL ||
	    (prefixlen > 0 && prefix == NULL))
		return IDEM_EINVAL;
	if (prefixlen > PG_ROW_KEY_MAX)
		return IDEM_OK;
	/*
	 * Keys with the prefix are at or after it and before its successor
	 * (store_lmdb_rows.c, lstore_scan_last): a range on the primary key.
	 */
	if (prefixlen > 0)
		memcpy(succ, prefix, prefixlen);
	while (n > 0 && succ[n - 1] == 0xff)
		n--;
	if (n > 0)
		succ[n - 1]++;
	pg_arg_str(&a, table);
	pg_arg_bytes(&a, prefix, prefixlen);
	if (n > 0)
		pg_arg_bytes(&a, succ, n);
	else
		pg_arg_null(&a);
	pg_arg_u64(&a, limit > 0 ? limit : INT64_MAX);
	if (fromlen > 0)
		pg_arg_bytes(&a, from, fromlen);
	return pg_cursor(s, pg_scan_sql[reverse != 0][fromlen > 0], &a,
	    pg_scan_row, &w);
}

struct pg_each_walk {
	store_each_fn fn;
	void *ctx;
};

static int
pg_each_row(void *ctx, const PGresult *res, int i, int *stop)
{
	struct pg_each_walk *w = ctx;
	struct rec r;
	char *scope, *key;
	int rc, slen, klen;

	slen = PQgetlength(res, i, 0);
	klen = PQgetlength(res, i, 1);
	if ((scope = malloc((size_t)slen + (size_t)klen + 2)) == NULL)
		return IDEM_ENOMEM;
	key = scope + slen + 1;
	memcpy(scope, PQgetvalue(res, i, 0), (size_t)slen);
	scope[slen] = '\0';
	memcpy(key, PQgetvalue(res, i, 1), (size_t)klen);
	key[klen] = '\0';
	if ((rc = rec_decode(PQgetvalue(res, i, 2),
	    (size_t)PQgetlength(res, i, 2), &r)) == IDEM_OK) {
		*stop = w->fn(w->ctx, scope, key, &r) != 0;
		rec_free(&r);
	}
	free(scope);
	return rc;
}

static int
pg_walk(struct store *base, const char *sql, store_each_fn fn, void *ctx)
{
	struct pg_each_walk w = { fn, ctx };

	if (fn == NULL)
		return IDEM_EINVAL;
	return pg_cursor(pgstore_of(base), sql, NULL, pg_each_row, &w);
}

int
pg_each(struct store *base, store_each_fn fn, void *ctx)
{
	return pg_walk(base, "SELECT scope, key, rec FROM idem_keys "
	    "ORDER BY scope, key", fn, ctx);
}

int
pg_each_pending(struct store *base, store_each_fn fn, void *ctx)
{
	return pg_walk(base, "SELECT scope, key, rec FROM idem_keys "
	    "WHERE purge_at IS NULL ORDER BY scope, key", fn, ctx);
}

int
pg_count(struct store *base, const char *table, size_t *n)
{
	struct pgstore *s = pgstore_of(base);
	struct pgargs a = { 0 };
	struct pgconn *pc;
	PGresult *res;
	int rc;

	*n = 0;
	if (!pg_table_ok(s, table))
		return IDEM_EINVAL;
	pg_arg_str(&a, table);
	if ((rc = pg_acquire(s, &pc)) != IDEM_OK)
		return rc;
	if ((rc = pg_exec(pc, "SELECT coalesce(sum(n), 0)::bigint FROM "
	    "idem_counts WHERE tbl = $1", &a, &res)) == IDEM_OK) {
		*n = (size_t)pg_get_u64(res, 0, 0);
		PQclear(res);
	}
	pg_release(s, pc);
	return rc;
}

int
pg_tx_get(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void **val, size_t *vallen)
{
	struct pg_tx *t = tx->impl;
	PGresult *res, **held;
	int rc;

	*val = NULL;
	*vallen = 0;
	if ((rc = pg_row_key(t->s, table, key, keylen)) != IDEM_OK)
		return rc;
	if (t->buffered) {
		t->live = 1;
		return IDEM_EIO;
	}
	if ((rc = pg_row_read(t->pc, table, key, keylen, 1, &res)) != IDEM_OK)
		return rc;
	/* The value lives as long as the hook's transaction. */
	if ((held = realloc(t->held, (t->nheld + 1) * sizeof(*held))) ==
	    NULL) {
		PQclear(res);
		return IDEM_ENOMEM;
	}
	t->held = held;
	t->held[t->nheld++] = res;
	*val = PQgetvalue(res, 0, 0);
	*vallen = (size_t)PQgetlength(res, 0, 0);
	return IDEM_OK;
}

/*
 * Keeps a buffered hook's put (the last value of a row put twice); one
 * past PG_PUT_ROWS sets t->live.
 */
static int
pg_put_buffer(struct pg_tx *t, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen)
{
	struct pg_put *p;
	size_t i;

	for (i = 0; i < t->nputs; i++) {
		p = &t->puts[i];
		if (strcmp(p->table, table) == 0 && p->key.len == keylen &&
		    memcmp(p->key.data, key, keylen) == 0)
			break;
	}
	if (i == PG_PUT_ROWS) {
		t->live = 1;
		return IDEM_EIO;
	}
	p = &t->puts[i];
	if (i == t->nputs) {
		memset(p, 0, sizeof(*p));
		p->table = t->s->tables[pg_table_index(t->s, table)];
		t->nputs++;
		if (buf_append(&p->key, key, keylen) != IDEM_OK)
			return IDEM_ENOMEM;
	}
	buf_reset(&p->val);
	return buf_append(&p->val, val, vallen);
}

int
pg_tx_put(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen)
{
	struct pg_tx *t = tx->impl;
	struct pgargs a = { 0 };
	PGresult *res;
	int rc, inserted;

	if (vallen > 0 && val == NULL)
		return IDEM_EINVAL;
	if ((rc = pg_row_key(t->s, table, key, keylen)) != IDEM_OK)
		return rc;
	if (t->buffered)
		return pg_put_buffer(t, table, key, keylen, val, vallen);
	pg_arg_str(&a, table);
	pg_arg_bytes(&a, key, keylen);
	pg_arg_bytes(&a, val, vallen);
	pg_arg_u64(&a, pg_lock_hash('r', table, key, keylen));
	/*
	 * The row's lock, then insert, else update: which of the two it
	 * was is the table's count.  The lock and the insert are one
	 * statement (the lock is taken before the insert looks for the
	 * row, which it does in what is committed, whatever the statement's
	 * snapshot); the update is another, so it sees what committed while
	 * the lock was awaited.  An insert_once of the same row that has
	 * not committed makes the insert wait for it, then do nothing.
	 */
	if ((rc = pg_exec(t->pc, "INSERT INTO idem_rows (tbl, k, v) "
	    "SELECT $1, $2, $3 FROM (SELECT pg_advisory_xact_lock($4::bigint)) "
	    "l ON CONFLICT DO NOTHING", &a, &res)) != IDEM_OK)
		return rc;
	inserted = strcmp(PQcmdTuples(res), "1") == 0;
	PQclear(res);
	if (inserted) {
		t->delta[pg_table_index(t->s, table)]++;
		return IDEM_OK;
	}
	a.n = 3;          /* the update takes all but the lock's hash */
	return pg_run(t->pc, "UPDATE idem_rows SET v = $3 WHERE tbl = $1 AND "
	    "k = $2", &a);
}

int
pg_tx_del(struct idem_tx *tx, const char *table, const void *key,
    size_t keylen)
{
	struct pg_tx *t = tx->impl;
	struct pgargs a = { 0 };
	PGresult *res;
	int rc;

	if ((rc = pg_row_key(t->s, table, key, keylen)) != IDEM_OK)
		return rc;
	if (t->buffered) {
		t->live = 1;
		return IDEM_EIO;
	}
	if ((rc = pg_lock(t->pc, pg_lock_hash('r', table, key, keylen))) !=
	    IDEM_OK)
		return rc;
	pg_arg_str(&a, table);
	pg_arg_bytes(&a, key, keylen);
	if ((rc = pg_exec(t->pc, "DELETE FROM idem_rows WHERE tbl = $1 AND "
	    "k = $2", &a, &res)) != IDEM_OK)
		return rc;
	rc = strcmp(PQcmdTuples(res), "0") == 0 ? IDEM_ENOTFOUND : IDEM_OK;
	PQclear(res);
	if (rc == IDEM_OK)
		t->delta[pg_table_index(t->s, table)]--;
	return rc;
}
