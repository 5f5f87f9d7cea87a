/* SPDX-License-Identifier: MIT */
/*
 * test_store.c: the store interface, on LMDB, and on PostgreSQL when
 * IDEM_TEST_PG names a database (tests/lib/pg.py).
 *
 * Each test gets a fresh directory and store, and a clock of its own:
 * times are passed explicitly, so leases and expiries are stepped over
 * without sleeping.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "crypto.h"
#include "engine.h"
#include "err.h"
#include "idem.h"
#include "record.h"
#include "store.h"

#include "harness.h"

/*
 * Idempotency records, all or one scope's (scope NULL: all), counted
 * from a walk as idemctl stats counts them.
 */
struct count_ctx {
	const char *scope;
	size_t n;
};

static int
count_one(void *ctx, const char *scope, const char *key, const struct rec *r)
{
	struct count_ctx *c = ctx;

	(void)key;
	(void)r;
	if (c->scope == NULL || strcmp(c->scope, scope) == 0)
		c->n++;
	return 0;
}

static int
count_records(struct store *st, const char *scope, size_t *n)
{
	struct count_ctx c = { scope, 0 };
	int rc = store_each(st, count_one, &c);

	*n = c.n;
	return rc;
}

#define T0 1700000000000ULL
#define LEASE 30000ULL
#define TTL 86400000ULL

static char dir[512];
static const char *where;  /* dir, or the PostgreSQL store */
static const char *const tables[] = {
	"payments", "by_account", "ledger", NULL
};

/* Rows a completion writes, through its hook. */
struct test_put {
	const char *table;
	const void *key;
	size_t keylen;
	const void *val;
	size_t vallen;
};

struct test_puts {
	const struct test_put *p;
	size_t n;
};

static int
test_puts(void *ctx, struct idem_tx *tx)
{
	const struct test_puts *w = ctx;
	size_t i;
	int rc;

	for (i = 0; i < w->n; i++)
		if ((rc = idem_tx_put(tx, w->p[i].table, w->p[i].key,
		    w->p[i].keylen, w->p[i].val, w->p[i].vallen)) != IDEM_OK)
			return rc;
	return IDEM_OK;
}
static struct store *st;

static uint8_t fp_a[FP_SIZE];
static uint8_t fp_b[FP_SIZE];

static const uint8_t body_bin[] = {
	'{', '"', 'i', 'd', '"', ':', 0, 0xff, 0x00, 0x7f, '}', 0
};

static int
suite_init(void)
{
	if (crypto_init() != IDEM_OK)
		return -1;
	memset(fp_a, 0x11, sizeof(fp_a));
	memset(fp_b, 0x11, sizeof(fp_b));
	fp_b[FP_SIZE - 1] = 0x12;
	return 0;
}

static void
store_up(void)
{
	struct store_config cfg = { NULL, 0, 0, 0, 0, tables, NULL,
	    0, 0, 0, 0 };

	harness_mkdtemp(dir, sizeof(dir));
	cfg.dir = where = harness_store(dir, 1);
	st = NULL;
	if (store_open(&cfg, &st) != IDEM_OK) {
		fprintf(stderr, "store_open %s failed\n", dir);
		st = NULL;
	}
}

static void
store_down(void)
{
	store_close(st);
	st = NULL;
	harness_rmdir(dir);
}

static void
tok(uint8_t t[REC_TOKEN_SIZE], int n)
{
	memset(t, n, REC_TOKEN_SIZE);
}

static void
response(struct rec_response *r)
{
	memset(r, 0, sizeof(*r));
	r->status = 201;
	r->nheaders = 3;
	r->headers[0].name = (char *)"Content-Type";
	r->headers[0].value = (char *)"application/json";
	r->headers[1].name = (char *)"Location";
	r->headers[1].value = (char *)"/payments/pay_1";
	r->headers[2].name = (char *)"ETag";
	r->headers[2].value = (char *)"\"v1\"";
	r->body = (uint8_t *)body_bin;
	r->bodylen = sizeof(body_bin);
}

static void
assert_response(const struct rec_response *got)
{
	HARNESS_EQ(got->status, 201);
	HARNESS_EQ(got->nheaders, 3);
	if (got->nheaders == 3) {
		CU_ASSERT_STRING_EQUAL(got->headers[0].name, "Content-Type");
		CU_ASSERT_STRING_EQUAL(got->headers[0].value,
		    "application/json");
		CU_ASSERT_STRING_EQUAL(got->headers[1].name, "Location");
		CU_ASSERT_STRING_EQUAL(got->headers[1].value,
		    "/payments/pay_1");
		CU_ASSERT_STRING_EQUAL(got->headers[2].value, "\"v1\"");
	}
	HARNESS_EQ(got->bodylen, sizeof(body_bin));
	if (got->bodylen == sizeof(body_bin))
		CU_ASSERT(memcmp(got->body, body_bin, sizeof(body_bin)) == 0);
}

/* Claims (scope, key) and returns the decision; the record is dropped. */
static int
claim(struct store *s, const char *scope, const char *key, const uint8_t *fp,
    int token, uint64_t now, uint32_t *retry_after)
{
	struct store_claim c;
	uint8_t t[REC_TOKEN_SIZE];
	int rc;

	tok(t, token);
	if ((rc = store_claim(s, scope, key, fp, t, now, LEASE, TTL, NULL, &c)) !=
	    IDEM_OK)
		return -rc;
	if (retry_after != NULL)
		*retry_after = c.retry_after;
	rec_free(&c.rec);
	return (int)c.decision;
}

static int
complete(struct store *s, const char *scope, const char *key, int token,
    uint64_t now)
{
	struct rec_response r;
	uint8_t t[REC_TOKEN_SIZE];

	tok(t, token);
	response(&r);
	return store_complete(s, scope, key, t, &r, NULL, NULL, now, TTL);
}

static void
test_claim_fresh(void)
{
	struct store_claim c;
	struct rec r;
	uint8_t t[REC_TOKEN_SIZE];
	size_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	tok(t, 1);
	HARNESS_EQ(store_lookup(st, "acct", "k1", &r), IDEM_ENOTFOUND);
	HARNESS_EQ(store_claim(st, "acct", "k1", fp_a, t, T0, LEASE, TTL, NULL, &c),
	    IDEM_OK);
	HARNESS_EQ(c.decision, ENGINE_CLAIM);
	HARNESS_EQ(c.rec.state, REC_IN_PROGRESS);
	HARNESS_EQ(c.rec.attempts, 1);
	CU_ASSERT(c.rec.created_ms == T0);
	CU_ASSERT(c.rec.lease_ms == T0 + LEASE);
	CU_ASSERT(c.rec.expires_ms == T0 + TTL);
	CU_ASSERT(memcmp(c.rec.token, t, REC_TOKEN_SIZE) == 0);
	rec_free(&c.rec);

	HARNESS_EQ(store_lookup(st, "acct", "k1", &r), IDEM_OK);
	HARNESS_EQ(r.state, REC_IN_PROGRESS);
	CU_ASSERT(memcmp(r.fp, fp_a, FP_SIZE) == 0);
	CU_ASSERT(memcmp(r.token, t, REC_TOKEN_SIZE) == 0);
	CU_ASSERT(r.expires_ms == T0 + TTL);
	rec_free(&r);
	HARNESS_EQ(count_records(st, NULL, &n), IDEM_OK);
	HARNESS_EQ(n, 1);
}

static void
test_claim_conflict(void)
{
	struct store_claim c;
	struct rec r;
	uint8_t t[REC_TOKEN_SIZE];

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	tok(t, 2);
	HARNESS_EQ(store_claim(st, "acct", "k", fp_a, t, T0 + 5000, LEASE,
	    TTL, NULL, &c), IDEM_OK);
	HARNESS_EQ(c.decision, ENGINE_CONFLICT);
	HARNESS_EQ(c.retry_after, 25);
	/* The record is the first claimant's, and was not rewritten. */
	tok(t, 1);
	CU_ASSERT(memcmp(c.rec.token, t, REC_TOKEN_SIZE) == 0);
	rec_free(&c.rec);
	HARNESS_EQ(store_lookup(st, "acct", "k", &r), IDEM_OK);
	CU_ASSERT(memcmp(r.token, t, REC_TOKEN_SIZE) == 0);
	CU_ASSERT(r.lease_ms == T0 + LEASE);
	HARNESS_EQ(r.attempts, 1);
	rec_free(&r);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 3, T0 + LEASE - 1, NULL),
	    ENGINE_CONFLICT);
}

static void
test_claim_mismatch(void)
{
	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(claim(st, "acct", "k", fp_b, 2, T0 + 1, NULL),
	    ENGINE_MISMATCH);
	HARNESS_EQ(complete(st, "acct", "k", 1, T0 + 2), IDEM_OK);
	HARNESS_EQ(claim(st, "acct", "k", fp_b, 2, T0 + 3, NULL),
	    ENGINE_MISMATCH);
	/* Even after the lease: a mismatch is never a take-over. */
	HARNESS_EQ(claim(st, "acct", "k", fp_b, 2, T0 + LEASE * 10, NULL),
	    ENGINE_MISMATCH);
}

static void
test_complete_replay(void)
{
	struct store_claim c;
	struct rec r;
	uint8_t t[REC_TOKEN_SIZE], zero[REC_TOKEN_SIZE];

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	memset(zero, 0, sizeof(zero));
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(complete(st, "acct", "k", 1, T0 + 100), IDEM_OK);

	HARNESS_EQ(store_lookup(st, "acct", "k", &r), IDEM_OK);
	HARNESS_EQ(r.state, REC_COMPLETED);
	CU_ASSERT(memcmp(r.token, zero, REC_TOKEN_SIZE) == 0);
	assert_response(&r.resp);
	rec_free(&r);

	tok(t, 9);
	HARNESS_EQ(store_claim(st, "acct", "k", fp_a, t, T0 + 200, LEASE, TTL, NULL,
	    &c), IDEM_OK);
	HARNESS_EQ(c.decision, ENGINE_REPLAY);
	HARNESS_EQ(c.retry_after, 0);
	assert_response(&c.rec.resp);
	rec_free(&c.rec);
	/* Completing twice is not possible: the claim is nobody's now. */
	HARNESS_EQ(complete(st, "acct", "k", 1, T0 + 300), IDEM_ELOST);
}

static void
test_release_then_claim(void)
{
	struct store_claim c;
	struct rec r;
	uint8_t t[REC_TOKEN_SIZE];
	size_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	tok(t, 1);
	HARNESS_EQ(store_release(st, "acct", "k", t, NULL, NULL), IDEM_OK);
	HARNESS_EQ(store_lookup(st, "acct", "k", &r), IDEM_ENOTFOUND);
	HARNESS_EQ(count_records(st, NULL, &n), IDEM_OK);
	HARNESS_EQ(n, 0);
	HARNESS_EQ(store_release(st, "acct", "k", t, NULL, NULL), IDEM_ELOST);

	tok(t, 2);
	HARNESS_EQ(store_claim(st, "acct", "k", fp_b, t, T0 + 1, LEASE, TTL, NULL,
	    &c), IDEM_OK);
	HARNESS_EQ(c.decision, ENGINE_CLAIM);
	HARNESS_EQ(c.rec.attempts, 1);
	rec_free(&c.rec);
	/* The released claim's expiry entry went with it. */
	HARNESS_EQ(store_purge(st, UINT64_MAX, 100, &n), IDEM_OK);
	HARNESS_EQ(n, 1);
}

static void
test_takeover_keeps_checkpoint(void)
{
	struct store_claim c;
	uint8_t t[REC_TOKEN_SIZE];
	static const uint8_t cp[] = { 'c', 0, 'p', 0xff };

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	tok(t, 1);
	HARNESS_EQ(store_checkpoint(st, "acct", "k", t, 2, cp, sizeof(cp),
	    T0 + 1000, LEASE), IDEM_OK);
	/* The checkpoint renewed the lease to T0 + 1000 + LEASE. */
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 2, T0 + LEASE + 500, NULL),
	    ENGINE_CONFLICT);

	tok(t, 2);
	HARNESS_EQ(store_claim(st, "acct", "k", fp_a, t, T0 + 1000 + LEASE,
	    LEASE, TTL, NULL, &c), IDEM_OK);
	HARNESS_EQ(c.decision, ENGINE_TAKEOVER);
	HARNESS_EQ(c.rec.attempts, 2);
	HARNESS_EQ(c.rec.stage, 2);
	HARNESS_EQ(c.rec.cplen, sizeof(cp));
	if (c.rec.cplen == sizeof(cp))
		CU_ASSERT(memcmp(c.rec.cp, cp, sizeof(cp)) == 0);
	CU_ASSERT(memcmp(c.rec.token, t, REC_TOKEN_SIZE) == 0);
	CU_ASSERT(c.rec.lease_ms == T0 + 1000 + 2 * LEASE);
	/*
	 * A take-over resumes the request: it keeps its creation time (and
	 * so its provider key), and its expiry moves to a TTL from now, so
	 * the answer it stores outlives any retry still waiting for it.
	 */
	CU_ASSERT(c.rec.expires_ms == T0 + 1000 + LEASE + TTL);
	CU_ASSERT(c.rec.created_ms == T0);
	rec_free(&c.rec);
}

static void
test_old_token_lost(void)
{
	struct rec_response resp;
	struct test_put put = { "payments", "pay_1", 5, "row", 3 };
	struct rec r;
	struct buf b = BUF_INIT;
	uint8_t old[REC_TOKEN_SIZE];
	const uint64_t later = T0 + LEASE;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 2, later, NULL),
	    ENGINE_TAKEOVER);
	tok(old, 1);
	response(&resp);
	HARNESS_EQ(store_checkpoint(st, "acct", "k", old, 5, "x", 1, later,
	    LEASE), IDEM_ELOST);
	HARNESS_EQ(store_complete(st, "acct", "k", old, &resp, test_puts,
	    &(struct test_puts){ &put, 1 }, later, TTL),
	    IDEM_ELOST);
	HARNESS_EQ(store_release(st, "acct", "k", old, NULL, NULL), IDEM_ELOST);
	HARNESS_EQ(store_abandon(st, "acct", "k", old, later), IDEM_ELOST);

	/* None of them wrote anything. */
	HARNESS_EQ(store_lookup(st, "acct", "k", &r), IDEM_OK);
	HARNESS_EQ(r.state, REC_IN_PROGRESS);
	HARNESS_EQ(r.stage, 0);
	HARNESS_EQ(r.attempts, 2);
	CU_ASSERT(r.lease_ms == later + LEASE);
	rec_free(&r);
	HARNESS_EQ(store_get(st, "payments", "pay_1", 5, &b),
	    IDEM_ENOTFOUND);
	/* The new owner still holds it. */
	HARNESS_EQ(complete(st, "acct", "k", 2, later + 1), IDEM_OK);
	buf_free(&b);
}

static void
test_abandon_then_takeover(void)
{
	struct rec r;
	uint8_t t[REC_TOKEN_SIZE];

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	tok(t, 1);
	HARNESS_EQ(store_checkpoint(st, "acct", "k", t, 7, "cp", 2, T0 + 10,
	    LEASE), IDEM_OK);
	HARNESS_EQ(store_abandon(st, "acct", "k", t, T0 + 20), IDEM_OK);
	HARNESS_EQ(store_lookup(st, "acct", "k", &r), IDEM_OK);
	CU_ASSERT(r.lease_ms == T0 + 20);
	HARNESS_EQ(r.stage, 7);
	HARNESS_EQ(r.cplen, 2);
	rec_free(&r);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 2, T0 + 20, NULL),
	    ENGINE_TAKEOVER);
}

static void
test_complete_puts_atomic(void)
{
	struct rec_response resp;
	struct test_put puts[2] = {
		{ "payments", "pay_1", 5, "{\"amount\":1}", 12 },
		{ "by_account", "acct\0t1", 7, "pay_1", 5 },
	};
	struct buf b = BUF_INIT;
	uint8_t t[REC_TOKEN_SIZE];
	size_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	response(&resp);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	tok(t, 2);
	HARNESS_EQ(store_complete(st, "acct", "k", t, &resp, test_puts,
	    &(struct test_puts){ puts, 2 }, T0 + 1, TTL),
	    IDEM_ELOST);
	HARNESS_EQ(store_count(st, "payments", &n), IDEM_OK);
	HARNESS_EQ(n, 0);
	HARNESS_EQ(store_count(st, "by_account", &n), IDEM_OK);
	HARNESS_EQ(n, 0);

	tok(t, 1);
	HARNESS_EQ(store_complete(st, "acct", "k", t, &resp, test_puts,
	    &(struct test_puts){ puts, 2 }, T0 + 1, TTL),
	    IDEM_OK);
	HARNESS_EQ(store_get(st, "payments", "pay_1", 5, &b), IDEM_OK);
	HARNESS_EQ(b.len, 12);
	CU_ASSERT(memcmp(b.data, "{\"amount\":1}", 12) == 0);
	buf_reset(&b);
	HARNESS_EQ(store_get(st, "by_account", "acct\0t1", 7, &b),
	    IDEM_OK);
	CU_ASSERT(b.len == 5 && memcmp(b.data, "pay_1", 5) == 0);
	buf_free(&b);
}

/* An invalid put fails the whole completion: no half of it lands. */
static void
test_complete_bad_put_writes_nothing(void)
{
	struct rec_response resp;
	struct test_put puts[2] = {
		{ "payments", "pay_1", 5, "row", 3 },
		{ "ledger", "", 0, "x", 1 },
	};
	struct rec r;
	uint8_t t[REC_TOKEN_SIZE];
	size_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	response(&resp);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	tok(t, 1);
	HARNESS_EQ(store_complete(st, "acct", "k", t, &resp, test_puts,
	    &(struct test_puts){ puts, 2 }, T0 + 1, TTL),
	    IDEM_EINVAL);
	HARNESS_EQ(store_count(st, "payments", &n), IDEM_OK);
	HARNESS_EQ(n, 0);
	HARNESS_EQ(store_lookup(st, "acct", "k", &r), IDEM_OK);
	HARNESS_EQ(r.state, REC_IN_PROGRESS);
	rec_free(&r);
	/* A response the codec refuses leaves everything as it was, too. */
	resp.status = 7;
	HARNESS_EQ(store_complete(st, "acct", "k", t, &resp, test_puts,
	    &(struct test_puts){ puts, 1 }, T0 + 1, TTL),
	    IDEM_EINVAL);
	HARNESS_EQ(store_count(st, "payments", &n), IDEM_OK);
	HARNESS_EQ(n, 0);
}

static void
test_expired_completed_claims_fresh(void)
{
	struct store_claim c;
	uint8_t t[REC_TOKEN_SIZE];
	size_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(complete(st, "acct", "k", 1, T0), IDEM_OK);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 2, T0 + TTL - 1, NULL),
	    ENGINE_REPLAY);
	tok(t, 3);
	HARNESS_EQ(store_claim(st, "acct", "k", fp_b, t, T0 + TTL, LEASE, TTL, NULL,
	    &c), IDEM_OK);
	HARNESS_EQ(c.decision, ENGINE_CLAIM);
	HARNESS_EQ(c.rec.state, REC_IN_PROGRESS);
	HARNESS_EQ(c.rec.attempts, 1);
	CU_ASSERT(c.rec.created_ms == T0 + TTL);
	CU_ASSERT(c.rec.expires_ms == T0 + 2 * TTL);
	CU_ASSERT(memcmp(c.rec.fp, fp_b, FP_SIZE) == 0);
	rec_free(&c.rec);
	/*
	 * The old expiry entry went with the old record: a purge between the
	 * two expiries has nothing to do, and the fresh claim survives it.
	 */
	HARNESS_EQ(store_purge(st, T0 + TTL + LEASE + 1, 100, &n), IDEM_OK);
	HARNESS_EQ(n, 0);
	HARNESS_EQ(count_records(st, NULL, &n), IDEM_OK);
	HARNESS_EQ(n, 1);
}

/* The generation a claim of (scope, key) at now gets; -1 if none. */
static long long
claim_gen(struct store *s, const char *key, int token, uint64_t now,
    int want)
{
	struct store_claim c;
	uint8_t t[REC_TOKEN_SIZE];
	long long gen = -1;

	tok(t, token);
	HARNESS_EQ(store_claim(s, "acct", key, fp_a, t, now, LEASE, TTL, NULL,
	    &c), IDEM_OK);
	HARNESS_EQ(c.decision, want);
	if (c.decision == ENGINE_CLAIM || c.decision == ENGINE_TAKEOVER)
		gen = (long long)c.rec.gen;
	rec_free(&c.rec);
	return gen;
}

/*
 * A key's generation (store.h) counts the lifetimes that ended, and only
 * those: purge and a claim over an expired record add one; a release, a
 * take-over and a record lost without either (here: released by its
 * owner's token, as a failover or a restore loses it) leave it, so the
 * retry of a lost claim derives the provider key it was charged under.
 */
static void
test_generation(void)
{
	uint8_t t[REC_TOKEN_SIZE];
	size_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(claim_gen(st, "g", 1, T0, ENGINE_CLAIM), 0);
	HARNESS_EQ(claim_gen(st, "g", 2, T0 + LEASE, ENGINE_TAKEOVER), 0);
	tok(t, 2);
	HARNESS_EQ(store_release(st, "acct", "g", t, NULL, NULL), IDEM_OK);
	HARNESS_EQ(claim_gen(st, "g", 3, T0 + LEASE + 1, ENGINE_CLAIM), 0);
	HARNESS_EQ(complete(st, "acct", "g", 3, T0 + LEASE + 1), IDEM_OK);
	/* Replaced after its expiry: the first lifetime ended. */
	HARNESS_EQ(claim_gen(st, "g", 4, T0 + LEASE + 1 + TTL, ENGINE_CLAIM),
	    1);
	tok(t, 4);
	HARNESS_EQ(store_release(st, "acct", "g", t, NULL, NULL), IDEM_OK);
	HARNESS_EQ(claim_gen(st, "g", 5, T0 + 3 * TTL, ENGINE_CLAIM), 1);
	HARNESS_EQ(complete(st, "acct", "g", 5, T0 + 3 * TTL), IDEM_OK);
	/* Purged: the second lifetime ended. */
	HARNESS_EQ(store_purge(st, T0 + 5 * TTL, 100, &n), IDEM_OK);
	HARNESS_EQ(n, 1);
	HARNESS_EQ(claim_gen(st, "g", 6, T0 + 5 * TTL, ENGINE_CLAIM), 2);
	/* The record lost, the generation stays. */
	tok(t, 6);
	HARNESS_EQ(store_release(st, "acct", "g", t, NULL, NULL), IDEM_OK);
	HARNESS_EQ(claim_gen(st, "g", 7, T0 + 5 * TTL + 1, ENGINE_CLAIM), 2);
	/* Every key has its own. */
	HARNESS_EQ(claim_gen(st, "h", 8, T0 + 5 * TTL, ENGINE_CLAIM), 0);
}

static void
test_purge_batches(void)
{
	char key[32];
	size_t n, total = 0;
	int i, calls = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	/* Keys 0..9 claimed at T0 + i; each expires at T0 + i + TTL. */
	for (i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		HARNESS_EQ(claim(st, "acct", key, fp_a, 1, T0 + i, NULL),
		    ENGINE_CLAIM);
		if (i % 2 == 0)
			HARNESS_EQ(complete(st, "acct", key, 1, T0 + i),
			    IDEM_OK);
	}
	HARNESS_EQ(store_purge(st, T0 + TTL - 1, 100, &n), IDEM_OK);
	HARNESS_EQ(n, 0);
	/* Now keys 0..6 have expired, in progress or not. */
	do {
		HARNESS_EQ(store_purge(st, T0 + TTL + 6, 3, &n), IDEM_OK);
		CU_ASSERT(n <= 3);
		total += n;
		calls++;
	} while (n > 0 && calls < 10);
	HARNESS_EQ(total, 7);
	HARNESS_EQ(calls, 4);
	HARNESS_EQ(count_records(st, NULL, &n), IDEM_OK);
	HARNESS_EQ(n, 3);
	for (i = 0; i < 10; i++) {
		struct rec r;

		snprintf(key, sizeof(key), "k%d", i);
		HARNESS_EQ(store_lookup(st, "acct", key, &r),
		    i < 7 ? IDEM_ENOTFOUND : IDEM_OK);
		rec_free(&r);
	}
	HARNESS_EQ(store_purge(st, UINT64_MAX, 0, &n), IDEM_OK);
	HARNESS_EQ(n, 0);
}

/*
 * A stage-0 claim whose lease outlives its expiry is still running: it is
 * indexed at the end of its lease, so purge keeps it until then.
 */
static void
test_purge_keeps_live_lease(void)
{
	uint8_t t[REC_TOKEN_SIZE];
	size_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(claim(st, "acct", "live", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(claim(st, "acct", "dead", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	tok(t, 1);
	HARNESS_EQ(store_checkpoint(st, "acct", "live", t, 0, NULL, 0,
	    T0 + TTL - 1, LEASE), IDEM_OK);
	HARNESS_EQ(store_purge(st, T0 + TTL, 100, &n), IDEM_OK);
	HARNESS_EQ(n, 1);
	HARNESS_EQ(count_records(st, NULL, &n), IDEM_OK);
	HARNESS_EQ(n, 1);
	/*
	 * It completes normally; the answer stays a TTL from its completion,
	 * and a purge after that takes it.
	 */
	HARNESS_EQ(complete(st, "acct", "live", 1, T0 + TTL + 1), IDEM_OK);
	HARNESS_EQ(store_purge(st, T0 + 2 * TTL, 100, &n), IDEM_OK);
	HARNESS_EQ(n, 0);
	HARNESS_EQ(store_purge(st, T0 + 2 * TTL + 1, 100, &n), IDEM_OK);
	HARNESS_EQ(n, 1);
	HARNESS_EQ(count_records(st, NULL, &n), IDEM_OK);
	HARNESS_EQ(n, 0);
}

/*
 * A claim that recorded a recovery point and then lost its worker may
 * have left a charge behind: purge keeps it past its expiry, for the
 * retry that resumes it, while a stage-0 claim (nothing happened) goes.
 */
static void
test_purge_keeps_checkpointed_claim(void)
{
	uint8_t t[REC_TOKEN_SIZE];
	size_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(claim(st, "acct", "charged", fp_a, 1, T0, NULL),
	    ENGINE_CLAIM);
	HARNESS_EQ(claim(st, "acct", "idle", fp_a, 2, T0, NULL), ENGINE_CLAIM);
	tok(t, 1);
	HARNESS_EQ(store_checkpoint(st, "acct", "charged", t, 1, "cp", 2,
	    T0 + 1, LEASE), IDEM_OK);
	HARNESS_EQ(store_purge(st, T0 + TTL + LEASE + 10, 100, &n), IDEM_OK);
	HARNESS_EQ(n, 1);
	HARNESS_EQ(count_records(st, NULL, &n), IDEM_OK);
	HARNESS_EQ(n, 1);
	/* The retry after the TTL takes it over, recovery point intact. */
	HARNESS_EQ(claim(st, "acct", "charged", fp_a, 3, T0 + TTL + LEASE + 20,
	    NULL), ENGINE_TAKEOVER);
}

/* Enough entries to span many pages, deleted in several batches. */
static void
test_purge_many(void)
{
	char key[32];
	size_t n, total = 0;
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	for (i = 0; i < 600; i++) {
		snprintf(key, sizeof(key), "key-%04d", i);
		HARNESS_EQ(claim(st, i % 2 ? "a" : "b", key, fp_a, 1,
		    T0 + (uint64_t)(i % 7), NULL), ENGINE_CLAIM);
	}
	do {
		HARNESS_EQ(store_purge(st, T0 + TTL + 3, 100, &n), IDEM_OK);
		CU_ASSERT(n <= 100);
		total += n;
	} while (n > 0);
	HARNESS_EQ(total, 600 / 7 * 4 + 4);
	HARNESS_EQ(count_records(st, NULL, &n), IDEM_OK);
	HARNESS_EQ(n, 600 - total);
	do {
		HARNESS_EQ(store_purge(st, UINT64_MAX, 128, &n), IDEM_OK);
		total += n;
	} while (n > 0);
	HARNESS_EQ(total, 600);
	HARNESS_EQ(count_records(st, NULL, &n), IDEM_OK);
	HARNESS_EQ(n, 0);
}

static void
test_scopes_isolated(void)
{
	struct rec r;
	uint8_t t[REC_TOKEN_SIZE];

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(claim(st, "alice", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(claim(st, "bob", "k", fp_b, 2, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(complete(st, "alice", "k", 1, T0 + 1), IDEM_OK);
	HARNESS_EQ(store_lookup(st, "bob", "k", &r), IDEM_OK);
	HARNESS_EQ(r.state, REC_IN_PROGRESS);
	rec_free(&r);
	/* Bob's token does nothing to Alice's key, and the other way round. */
	tok(t, 2);
	HARNESS_EQ(store_release(st, "bob", "k", t, NULL, NULL), IDEM_OK);
	HARNESS_EQ(store_lookup(st, "alice", "k", &r), IDEM_OK);
	HARNESS_EQ(r.state, REC_COMPLETED);
	rec_free(&r);
	tok(t, 1);
	HARNESS_EQ(store_release(st, "bob", "k", t, NULL, NULL), IDEM_ELOST);

	/* Concatenations that look alike are different keys. */
	HARNESS_EQ(claim(st, "ab", "c", fp_a, 3, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(claim(st, "a", "bc", fp_b, 4, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(claim(st, "abc", "k", fp_a, 5, T0, NULL), ENGINE_CLAIM);
}

static void
test_insert_once(void)
{
	struct buf b = BUF_INIT;
	size_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(store_insert_once(st, "ledger", "charge:a:k", 10,
	    "first", 5, &b), IDEM_OK);
	HARNESS_EQ(b.len, 0);
	HARNESS_EQ(store_insert_once(st, "ledger", "charge:a:k", 10,
	    "second", 6, &b), IDEM_EEXIST);
	CU_ASSERT(b.len == 5 && memcmp(b.data, "first", 5) == 0);
	HARNESS_EQ(store_insert_once(st, "ledger", "charge:a:k", 10,
	    "third", 5, NULL), IDEM_EEXIST);
	buf_reset(&b);
	HARNESS_EQ(store_get(st, "ledger", "charge:a:k", 10, &b), IDEM_OK);
	CU_ASSERT(b.len == 5 && memcmp(b.data, "first", 5) == 0);
	HARNESS_EQ(store_count(st, "ledger", &n), IDEM_OK);
	HARNESS_EQ(n, 1);
	/* Tables are separate key spaces. */
	HARNESS_EQ(store_insert_once(st, "payments", "charge:a:k", 10,
	    "p", 1, NULL), IDEM_OK);
	buf_free(&b);
}

struct collect {
	char seen[32][16];
	size_t n;
	size_t stop_after;
};

static int
collect_fn(void *ctx, const void *key, size_t keylen, const void *val,
    size_t vallen)
{
	struct collect *c = ctx;

	(void)val;
	(void)vallen;
	if (c->n < 32 && keylen < 16) {
		memcpy(c->seen[c->n], key, keylen);
		c->seen[c->n][keylen] = '\0';
	}
	c->n++;
	return c->stop_after != 0 && c->n >= c->stop_after;
}

static void
put_rows(const char *const *keys, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		HARNESS_EQ(store_insert_once(st, "by_account", keys[i],
		    strlen(keys[i]), "v", 1, NULL), IDEM_OK);
}

/* A scan from a place; the keys it visited, joined by spaces, in out. */
static void
scan_from(const char *prefix, const char *from, size_t fromlen, int reverse,
    size_t limit, char *out, size_t outlen)
{
	struct collect c;
	size_t i;

	memset(&c, 0, sizeof(c));
	HARNESS_EQ(store_scan_from(st, "by_account", prefix, strlen(prefix),
	    from, fromlen, reverse, limit, collect_fn, &c), IDEM_OK);
	out[0] = '\0';
	for (i = 0; i < c.n && i < 32; i++)
		snprintf(out + strlen(out), outlen - strlen(out), "%s%s",
		    i > 0 ? " " : "", c.seen[i]);
}

/*
 * A scan from a place seeks to it: forward from the first key at or
 * after it, reverse from the last at or before it, within the prefix's
 * rows either way; a place that is a key starts there, one between
 * keys at the next in the scan's order, one before or past the
 * prefix's rows at its first or last row.
 */
static void
test_scan_from(void)
{
	static const char *const keys[] = {
		"a", "b", "b1", "b2", "b3", "ba", "c", "c1"
	};
	char got[256], past[80];

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	put_rows(keys, sizeof(keys) / sizeof(keys[0]));
	scan_from("b", "b2", 2, 0, 0, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "b2 b3 ba");
	scan_from("b", "b2", 2, 1, 0, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "b2 b1 b");
	scan_from("b", "b25", 3, 0, 0, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "b3 ba");
	scan_from("b", "b25", 3, 1, 0, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "b2 b1 b");
	scan_from("b", "b2", 2, 1, 2, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "b2 b1");
	/* Before the prefix's rows, and past them, in either order. */
	scan_from("b", "a", 1, 0, 0, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "b b1 b2 b3 ba");
	scan_from("b", "a", 1, 1, 0, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "");
	scan_from("b", "bz", 2, 1, 0, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "ba b3 b2 b1 b");
	scan_from("b", "bz", 2, 0, 0, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "");
	/* A place of 0xff bytes after the prefix: past all of its rows. */
	memset(past, 0xff, sizeof(past));
	past[0] = 'b';
	scan_from("b", past, sizeof(past), 1, 0, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "ba b3 b2 b1 b");
	scan_from("", "b3", 2, 0, 0, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "b3 ba c c1");
	scan_from("", "b3", 2, 1, 0, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "b3 b2 b1 b a");
	/* No place: the scan's own start. */
	scan_from("b", NULL, 0, 1, 0, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "ba b3 b2 b1 b");
}

static void
test_scan_prefix(void)
{
	static const char *const keys[] = {
		"a", "b", "b1", "b2", "b3", "ba", "c", "c1"
	};
	struct collect c;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	put_rows(keys, sizeof(keys) / sizeof(keys[0]));
	memset(&c, 0, sizeof(c));
	HARNESS_EQ(store_scan(st, "by_account", "b", 1, 0, 0, collect_fn,
	    &c), IDEM_OK);
	HARNESS_EQ(c.n, 5);
	CU_ASSERT_STRING_EQUAL(c.seen[0], "b");
	CU_ASSERT_STRING_EQUAL(c.seen[4], "ba");

	memset(&c, 0, sizeof(c));
	HARNESS_EQ(store_scan(st, "by_account", "b", 1, 1, 0, collect_fn,
	    &c), IDEM_OK);
	HARNESS_EQ(c.n, 5);
	CU_ASSERT_STRING_EQUAL(c.seen[0], "ba");
	CU_ASSERT_STRING_EQUAL(c.seen[1], "b3");
	CU_ASSERT_STRING_EQUAL(c.seen[4], "b");

	memset(&c, 0, sizeof(c));
	HARNESS_EQ(store_scan(st, "by_account", "b", 1, 1, 2, collect_fn,
	    &c), IDEM_OK);
	HARNESS_EQ(c.n, 2);

	memset(&c, 0, sizeof(c));
	c.stop_after = 3;
	HARNESS_EQ(store_scan(st, "by_account", "b", 1, 0, 0, collect_fn,
	    &c), IDEM_OK);
	HARNESS_EQ(c.n, 3);

	/* The last range in the table, and one that matches nothing. */
	memset(&c, 0, sizeof(c));
	HARNESS_EQ(store_scan(st, "by_account", "c", 1, 1, 0, collect_fn,
	    &c), IDEM_OK);
	HARNESS_EQ(c.n, 2);
	CU_ASSERT_STRING_EQUAL(c.seen[0], "c1");
	memset(&c, 0, sizeof(c));
	HARNESS_EQ(store_scan(st, "by_account", "bb", 2, 1, 0, collect_fn,
	    &c), IDEM_OK);
	HARNESS_EQ(c.n, 0);
	memset(&c, 0, sizeof(c));
	HARNESS_EQ(store_scan(st, "by_account", "bb", 2, 0, 0, collect_fn,
	    &c), IDEM_OK);
	HARNESS_EQ(c.n, 0);
	memset(&c, 0, sizeof(c));
	HARNESS_EQ(store_scan(st, "by_account", NULL, 0, 1, 0, collect_fn,
	    &c), IDEM_OK);
	HARNESS_EQ(c.n, 8);
	CU_ASSERT_STRING_EQUAL(c.seen[0], "c1");
}

/* The prefix's successor must skip trailing 0xff bytes. */
static void
test_scan_reverse_ff(void)
{
	static const char *const keys[] = {
		"a\xff", "a\xff\x01", "a\xff\xff", "a\xff\xff\x02", "b",
		"\xff", "\xff\xff"
	};
	struct collect c;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	put_rows(keys, sizeof(keys) / sizeof(keys[0]));
	memset(&c, 0, sizeof(c));
	HARNESS_EQ(store_scan(st, "by_account", "a\xff", 2, 1, 0,
	    collect_fn, &c), IDEM_OK);
	HARNESS_EQ(c.n, 4);
	CU_ASSERT_STRING_EQUAL(c.seen[0], "a\xff\xff\x02");
	CU_ASSERT_STRING_EQUAL(c.seen[3], "a\xff");

	memset(&c, 0, sizeof(c));
	HARNESS_EQ(store_scan(st, "by_account", "a\xff\xff", 3, 1, 0,
	    collect_fn, &c), IDEM_OK);
	HARNESS_EQ(c.n, 2);

	memset(&c, 0, sizeof(c));
	HARNESS_EQ(store_scan(st, "by_account", "\xff", 1, 1, 0,
	    collect_fn, &c), IDEM_OK);
	HARNESS_EQ(c.n, 2);
	CU_ASSERT_STRING_EQUAL(c.seen[0], "\xff\xff");
	memset(&c, 0, sizeof(c));
	HARNESS_EQ(store_scan(st, "by_account", "\xff\xff", 2, 1, 0,
	    collect_fn, &c), IDEM_OK);
	HARNESS_EQ(c.n, 1);
}

struct each {
	size_t n, in_progress, completed;
	int saw_bob;
};

static int
each_fn(void *ctx, const char *scope, const char *key, const struct rec *r)
{
	struct each *e = ctx;

	e->n++;
	if (r->state == REC_IN_PROGRESS)
		e->in_progress++;
	else
		e->completed++;
	if (strcmp(scope, "bob") == 0 && strcmp(key, "k2") == 0)
		e->saw_bob = 1;
	return 0;
}

static void
test_each_and_count(void)
{
	struct each e;
	size_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(claim(st, "alice", "k1", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(claim(st, "bob", "k2", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(claim(st, "bob", "k3", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(complete(st, "bob", "k3", 1, T0), IDEM_OK);
	memset(&e, 0, sizeof(e));
	HARNESS_EQ(store_each(st, each_fn, &e), IDEM_OK);
	HARNESS_EQ(e.n, 3);
	HARNESS_EQ(e.in_progress, 2);
	HARNESS_EQ(e.completed, 1);
	HARNESS_EQ(e.saw_bob, 1);
	HARNESS_EQ(count_records(st, NULL, &n), IDEM_OK);
	HARNESS_EQ(n, 3);
	HARNESS_EQ(store_count(st, "payments", &n), IDEM_OK);
	HARNESS_EQ(n, 0);
	HARNESS_EQ(store_count(st, "nosuch", &n), IDEM_EINVAL);
}

static void
test_bad_arguments(void)
{
	struct store_claim c;
	struct rec r;
	uint8_t t[REC_TOKEN_SIZE];
	char big[600];

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	tok(t, 1);
	HARNESS_EQ(store_claim(st, "", "k", fp_a, t, T0, LEASE, TTL, NULL, &c),
	    IDEM_EINVAL);
	HARNESS_EQ(store_claim(st, "a", "", fp_a, t, T0, LEASE, TTL, NULL, &c),
	    IDEM_EINVAL);
	HARNESS_EQ(store_claim(st, "a", "k", fp_a, t, T0, 0, TTL, NULL, &c),
	    IDEM_EINVAL);
	HARNESS_EQ(store_claim(st, "a", "k", fp_a, t, T0, LEASE, 0, NULL, &c),
	    IDEM_EINVAL);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	HARNESS_EQ(store_claim(st, "a", big, fp_a, t, T0, LEASE, TTL, NULL, &c),
	    IDEM_ETOOBIG);
	HARNESS_EQ(store_lookup(st, big, "k", &r), IDEM_ETOOBIG);
	/* The longest key the interface promises (255) with a long scope. */
	big[255] = '\0';
	HARNESS_EQ(claim(st, "a-scope-of-some-length", big, fp_a, 1, T0, NULL),
	    ENGINE_CLAIM);
	HARNESS_EQ(claim(st, "a", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(store_checkpoint(st, "a", "k", t, 1, big,
	    REC_MAX_CHECKPOINT + 1, T0, LEASE), IDEM_ETOOBIG);
}

/* The small map below fills after a few thousand records. */
#define SMALL_MAP (1024 * 1024)

/* A checkpoint at stage 1 for token n: the claim may now have charged. */
static int
checkpoint(struct store *s, const char *scope, const char *key, int token,
    uint64_t now)
{
	uint8_t t[REC_TOKEN_SIZE];

	tok(t, token);
	return store_checkpoint(s, scope, key, t, 1, "cp", 2, now, LEASE);
}

/*
 * Finding: a claim that may have charged, completed by a take-over after
 * its TTL, kept its old expiry, so a retry a moment later found it
 * expired and claimed afresh (a new provider key: a second charge).  The
 * completion moves the expiry to a TTL from now.
 */
static void
test_late_completion_outlives_retry(void)
{
	struct store_claim c;
	uint8_t t[REC_TOKEN_SIZE];
	size_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(checkpoint(st, "acct", "k", 1, T0 + 1), IDEM_OK);
	/* The worker gave up (provider timeout); a retry comes at 2 TTL. */
	tok(t, 1);
	HARNESS_EQ(store_abandon(st, "acct", "k", t, T0 + 2), IDEM_OK);
	tok(t, 2);
	HARNESS_EQ(store_claim(st, "acct", "k", fp_a, t, T0 + 2 * TTL, LEASE,
	    TTL, NULL, &c), IDEM_OK);
	HARNESS_EQ(c.decision, ENGINE_TAKEOVER);
	CU_ASSERT(c.rec.created_ms == T0);
	rec_free(&c.rec);
	HARNESS_EQ(complete(st, "acct", "k", 2, T0 + 2 * TTL + 1), IDEM_OK);
	/* Its 201 was lost too: the next retry replays, now and later. */
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 3, T0 + 2 * TTL + 1000, NULL),
	    ENGINE_REPLAY);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 3, T0 + 3 * TTL, NULL),
	    ENGINE_REPLAY);
	/* Purge agrees: nothing to do until a TTL after the completion. */
	HARNESS_EQ(store_purge(st, T0 + 3 * TTL, 100, &n), IDEM_OK);
	HARNESS_EQ(n, 0);
	HARNESS_EQ(store_purge(st, T0 + 3 * TTL + 1, 100, &n), IDEM_OK);
	HARNESS_EQ(n, 1);
}

static int
count_pending(void *ctx, const char *scope, const char *key,
    const struct rec *r)
{
	(void)scope;
	(void)key;
	CU_ASSERT(r->state == REC_IN_PROGRESS && r->stage != 0);
	(*(size_t *)ctx)++;
	return 0;
}

/*
 * Finding: claims past stage 0 stayed at the head of the expiry index and
 * purge walked at most batch + 64 entries, so 1,070 of them hid every
 * expired record behind them.  They live in their own index now.
 */
static void
test_purge_not_blocked_by_pending(void)
{
	char key[32];
	size_t n, total = 0, pending = 0;
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	for (i = 0; i < 1070; i++) {
		snprintf(key, sizeof(key), "stuck-%d", i);
		HARNESS_EQ(claim(st, "acct", key, fp_a, 1, T0, NULL),
		    ENGINE_CLAIM);
		HARNESS_EQ(checkpoint(st, "acct", key, 1, T0 + 1), IDEM_OK);
	}
	for (i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "done-%d", i);
		HARNESS_EQ(claim(st, "acct", key, fp_a, 1, T0 + 10, NULL),
		    ENGINE_CLAIM);
		HARNESS_EQ(complete(st, "acct", key, 1, T0 + 10), IDEM_OK);
	}
	HARNESS_EQ(store_purge(st, T0 + 10 * TTL, 1, &n), IDEM_OK);
	HARNESS_EQ(n, 1);
	total = n;
	do {
		HARNESS_EQ(store_purge(st, T0 + 10 * TTL, 1000, &n), IDEM_OK);
		total += n;
	} while (n > 0);
	HARNESS_EQ(total, 5);
	HARNESS_EQ(count_records(st, NULL, &n), IDEM_OK);
	HARNESS_EQ(n, 1070);
	HARNESS_EQ(store_each_pending(st, count_pending, &pending), IDEM_OK);
	HARNESS_EQ(pending, 1070);
	/* A pending claim that completes leaves the pending index. */
	HARNESS_EQ(complete(st, "acct", "stuck-0", 1, T0 + 10 * TTL), IDEM_OK);
	pending = 0;
	HARNESS_EQ(store_each_pending(st, count_pending, &pending), IDEM_OK);
	HARNESS_EQ(pending, 1069);
}

/* A store whose scopes may hold at most max live keys each. */
static struct store *
open_limited(char *d, size_t dlen, uint64_t max)
{
	struct store_config cfg = { NULL, 0, 0, max, 0, tables, NULL,
	    0, 0, 0, 0 };
	struct store *s = NULL;

	harness_mkdtemp(d, dlen);
	cfg.dir = d;
	HARNESS_EQ(store_open(&cfg, &s), IDEM_OK);
	return s;
}

/*
 * Finding: one tenant's invalid requests (each a stored 400) filled the
 * shared store and locked the other tenant out.  A scope at its bound
 * gets IDEM_ELIMIT for new keys, with a Retry-After; its own keys still
 * replay; another scope is untouched; releases and purges give room.
 */
static void
test_scope_limit(void)
{
	struct store_claim c;
	uint8_t t[REC_TOKEN_SIZE];
	char d[512], key[32];
	struct store *s;
	size_t n;
	int i;

	s = open_limited(d, sizeof(d), 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	for (i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		HARNESS_EQ(claim(s, "greedy", key, fp_a, 1, T0 + i, NULL),
		    ENGINE_CLAIM);
		HARNESS_EQ(complete(s, "greedy", key, 1, T0 + i), IDEM_OK);
	}
	HARNESS_EQ(count_records(s, "greedy", &n), IDEM_OK);
	HARNESS_EQ(n, 3);
	tok(t, 1);
	HARNESS_EQ(store_claim(s, "greedy", "k3", fp_a, t, T0 + 1000, LEASE,
	    TTL, NULL, &c), IDEM_ELIMIT);
	/* Retry-After: until the oldest record expires, T0 + TTL. */
	HARNESS_EQ(c.retry_after, (TTL - 1000) / 1000);
	HARNESS_EQ(claim(s, "greedy", "k0", fp_a, 1, T0 + 1000, NULL),
	    ENGINE_REPLAY);
	HARNESS_EQ(claim(s, "other", "k3", fp_a, 1, T0 + 1000, NULL),
	    ENGINE_CLAIM);
	/* A released claim gives its place back. */
	HARNESS_EQ(claim(s, "other", "k4", fp_a, 1, T0 + 1000, NULL),
	    ENGINE_CLAIM);
	HARNESS_EQ(claim(s, "other", "k5", fp_a, 1, T0 + 1000, NULL),
	    ENGINE_CLAIM);
	HARNESS_EQ(claim(s, "other", "k6", fp_a, 1, T0 + 1000, NULL),
	    -IDEM_ELIMIT);
	tok(t, 1);
	HARNESS_EQ(store_release(s, "other", "k5", t, NULL, NULL), IDEM_OK);
	HARNESS_EQ(claim(s, "other", "k6", fp_a, 1, T0 + 1000, NULL),
	    ENGINE_CLAIM);
	/*
	 * Once the greedy scope's keys expire, its next claim purges them on
	 * the way, with no operator, and goes through.
	 */
	HARNESS_EQ(claim(s, "greedy", "k3", fp_a, 1, T0 + TTL + 5, NULL),
	    ENGINE_CLAIM);
	HARNESS_EQ(count_records(s, "greedy", &n), IDEM_OK);
	HARNESS_EQ(n, 1);
	store_close(s);
	harness_rmdir(d);
}

/*
 * Finding: on a full store a payment that charged could fail to record
 * and lose its claim.  New keys stop short of the end of the map, so the
 * completion of a claim already made always finds room.
 */
static void
test_full_store_keeps_room_to_complete(void)
{
	struct store_config cfg = { NULL, SMALL_MAP, 0, 0, 0, tables, NULL,
	    0, 0, 0, 0 };
	struct test_put put = { "payments", "pay_1", 5, "row", 3 };
	struct rec_response resp;
	uint8_t t[REC_TOKEN_SIZE];
	char key[64], fdir[512];
	struct store *s;
	struct rec r;
	int i, rc = ENGINE_CLAIM;

	harness_mkdtemp(fdir, sizeof(fdir));
	cfg.dir = fdir;
	HARNESS_EQ(store_open(&cfg, &s), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	HARNESS_EQ(claim(s, "scope", "charged", fp_a, 7, T0, NULL),
	    ENGINE_CLAIM);
	HARNESS_EQ(checkpoint(s, "scope", "charged", 7, T0 + 1), IDEM_OK);
	for (i = 0; i < 100000 && rc == ENGINE_CLAIM; i++) {
		snprintf(key, sizeof(key), "key-%06d-padding-padding-padding",
		    i);
		rc = claim(s, "scope", key, fp_a, 1, T0, NULL);
	}
	HARNESS_EQ(rc, -IDEM_EFULL);
	response(&resp);
	tok(t, 7);
	HARNESS_EQ(store_complete(s, "scope", "charged", t, &resp, test_puts,
	    &(struct test_puts){ &put, 1 },
	    T0 + 2, TTL), IDEM_OK);
	HARNESS_EQ(store_lookup(s, "scope", "charged", &r), IDEM_OK);
	HARNESS_EQ(r.state, REC_COMPLETED);
	rec_free(&r);
	store_close(s);
	harness_rmdir(fdir);
}

static void
test_map_full(void)
{
	struct store_config cfg = { NULL, SMALL_MAP, 0, 0, 0, tables, NULL,
	    0, 0, 0, 0 };
	struct rec_response resp;
	struct test_put put = { "payments", "pay", 3, NULL, 0 };
	struct store *s;
	struct rec r;
	static const char first[] = "key-000000-padding-padding-padding";
	char key[64], fdir[512];
	uint8_t *big, t[REC_TOKEN_SIZE];
	size_t n, total;
	int i, rc = ENGINE_CLAIM, ok = 0;

	harness_mkdtemp(fdir, sizeof(fdir));
	cfg.dir = fdir;
	HARNESS_EQ(store_open(&cfg, &s), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	for (i = 0; i < 100000 && rc == ENGINE_CLAIM; i++) {
		snprintf(key, sizeof(key), "key-%06d-padding-padding-padding",
		    i);
		rc = claim(s, "scope", key, fp_a, 1, T0, NULL);
		if (rc == ENGINE_CLAIM)
			ok++;
	}
	HARNESS_EQ(rc, -IDEM_EFULL);
	CU_ASSERT(ok > 10);
	/* What failed is not there; what succeeded is intact. */
	HARNESS_EQ(store_lookup(s, "scope", key, &r), IDEM_ENOTFOUND);
	HARNESS_EQ(count_records(s, NULL, &n), IDEM_OK);
	HARNESS_EQ(n, ok);
	HARNESS_EQ(store_lookup(s, "scope", first, &r), IDEM_OK);
	HARNESS_EQ(r.state, REC_IN_PROGRESS);
	rec_free(&r);

	/*
	 * A completion too big for the map, once in its response and once in
	 * its row (written after the record, in the same transaction):
	 * neither the record nor the row lands.
	 */
	big = calloc(1, SMALL_MAP);
	CU_ASSERT_PTR_NOT_NULL_FATAL(big);
	response(&resp);
	resp.body = big;
	resp.bodylen = SMALL_MAP;
	put.val = big;
	put.vallen = 10;
	tok(t, 1);
	HARNESS_EQ(store_complete(s, "scope", first, t, &resp, test_puts,
	    &(struct test_puts){ &put, 1 },
	    T0 + 1, TTL), IDEM_EFULL);
	response(&resp);
	put.vallen = SMALL_MAP;
	HARNESS_EQ(store_complete(s, "scope", first, t, &resp, test_puts,
	    &(struct test_puts){ &put, 1 },
	    T0 + 1, TTL), IDEM_EFULL);
	HARNESS_EQ(store_lookup(s, "scope", first, &r), IDEM_OK);
	HARNESS_EQ(r.state, REC_IN_PROGRESS);
	rec_free(&r);
	HARNESS_EQ(store_count(s, "payments", &n), IDEM_OK);
	HARNESS_EQ(n, 0);

	/*
	 * Purging works on a full store (new keys stopped short of the end
	 * of the map, leaving it room), and makes room again.
	 */
	total = 0;
	do {
		HARNESS_EQ(store_purge(s, UINT64_MAX, 1000, &n), IDEM_OK);
		total += n;
	} while (n > 0);
	HARNESS_EQ(total, ok);
	HARNESS_EQ(claim(s, "scope", key, fp_a, 1, T0, NULL), ENGINE_CLAIM);
	free(big);
	store_close(s);
	harness_rmdir(fdir);
}

static void
test_reopen_persists(void)
{
	struct store_config cfg = { NULL, 0, 0, 0, 0, tables, NULL,
	    0, 0, 0, 0 };
	struct rec r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(complete(st, "acct", "k", 1, T0 + 1), IDEM_OK);
	HARNESS_EQ(store_insert_once(st, "ledger", "c", 1, "v", 1, NULL),
	    IDEM_OK);
	store_close(st);
	st = NULL;
	cfg.dir = where;
	HARNESS_EQ(store_open(&cfg, &st), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(store_lookup(st, "acct", "k", &r), IDEM_OK);
	HARNESS_EQ(r.state, REC_COMPLETED);
	assert_response(&r.resp);
	rec_free(&r);
	HARNESS_EQ(store_insert_once(st, "ledger", "c", 1, "w", 1, NULL),
	    IDEM_EEXIST);
}

static void
test_two_handles(void)
{
	struct store_config cfg = { NULL, 0, 0, 0, 0, tables, NULL,
	    0, 0, 0, 0 };
	struct store *s2;
	struct rec r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	cfg.dir = where;
	HARNESS_EQ(store_open(&cfg, &s2), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s2);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(claim(s2, "acct", "k", fp_a, 2, T0 + 1, NULL),
	    ENGINE_CONFLICT);
	HARNESS_EQ(complete(st, "acct", "k", 1, T0 + 2), IDEM_OK);
	HARNESS_EQ(store_lookup(s2, "acct", "k", &r), IDEM_OK);
	HARNESS_EQ(r.state, REC_COMPLETED);
	rec_free(&r);
	HARNESS_EQ(claim(s2, "acct", "k2", fp_a, 2, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(claim(st, "acct", "k2", fp_b, 3, T0, NULL),
	    ENGINE_MISMATCH);
	/* Closing one handle leaves the other working. */
	store_close(s2);
	HARNESS_EQ(store_lookup(st, "acct", "k2", &r), IDEM_OK);
	rec_free(&r);
	HARNESS_EQ(claim(st, "acct", "k3", fp_a, 3, T0, NULL), ENGINE_CLAIM);
}

static void
test_read_only(void)
{
	struct store_config cfg = { NULL, 0, 1, 0, 0, tables, NULL,
	    0, 0, 0, 0 };
	struct store *ro;
	struct rec r;
	char missing[600];

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	cfg.dir = where;
	HARNESS_EQ(store_open(&cfg, &ro), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ro);
	HARNESS_EQ(store_lookup(ro, "acct", "k", &r), IDEM_OK);
	rec_free(&r);
	HARNESS_EQ(claim(ro, "acct", "k2", fp_a, 1, T0, NULL), -IDEM_EROFS);
	HARNESS_EQ(store_insert_once(ro, "ledger", "c", 1, "v", 1, NULL),
	    IDEM_EROFS);
	store_close(ro);
	if (harness_pg())
		return;
	snprintf(missing, sizeof(missing), "%s/not/there", dir);
	cfg.dir = missing;
	HARNESS_EQ(store_open(&cfg, &ro), IDEM_ENOTFOUND);
}

/*
 * PostgreSQL only: the server restarts under an open store.  What was
 * committed is there afterwards, and the next calls reconnect instead of
 * failing.
 */
static void
test_pg_restart(void)
{
	const char *restart = getenv("IDEM_TEST_PG_RESTART");
	struct rec r;
	size_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	CU_ASSERT_PTR_NOT_NULL_FATAL(restart);
	HARNESS_EQ(claim(st, "acct", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(complete(st, "acct", "k", 1, T0 + 1), IDEM_OK);
	HARNESS_EQ(system(restart), 0);
	HARNESS_EQ(store_lookup(st, "acct", "k", &r), IDEM_OK);
	HARNESS_EQ(r.state, REC_COMPLETED);
	rec_free(&r);
	HARNESS_EQ(claim(st, "acct", "k2", fp_a, 2, T0, NULL), ENGINE_CLAIM);
	HARNESS_EQ(count_records(st, NULL, &n), IDEM_OK);
	HARNESS_EQ(n, 2);
}

/*
 * PostgreSQL only: a database that was never migrated is refused; the
 * migration brings it to the current version once, and again changes
 * nothing.
 */
static void
test_pg_migrate(void)
{
	const char *bare = getenv("IDEM_TEST_PG_BARE");
	struct store_config cfg = { NULL, 0, 0, 0, 0, tables, NULL,
	    0, 0, 0, 0 };
	struct store *s;
	char err[256];
	int from, to;

	CU_ASSERT_PTR_NOT_NULL_FATAL(bare);
	cfg.dir = bare;
	HARNESS_EQ(store_open(&cfg, &s), IDEM_EIO);
	HARNESS_EQ(store_pg_migrate(bare, &from, &to, err, sizeof(err)), 0);
	HARNESS_EQ(from, 0);
	HARNESS_EQ(to, 5);
	HARNESS_EQ(store_pg_migrate(bare, &from, &to, err, sizeof(err)), 0);
	HARNESS_EQ(from, 5);
	HARNESS_EQ(to, 5);
	HARNESS_EQ(store_open(&cfg, &s), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	HARNESS_EQ(claim(s, "acct", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	store_close(s);
}

static void
test_open_creates_dir(void)
{
	struct store_config cfg = { NULL, 0, 0, 0, 0, tables, NULL,
	    0, 0, 0, 0 };
	struct store *s;
	struct stat sb;
	char nested[600];

	snprintf(nested, sizeof(nested), "%s/a/b/var", dir);
	cfg.dir = nested;
	HARNESS_EQ(store_open(&cfg, &s), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	HARNESS_EQ(stat(nested, &sb), 0);
	HARNESS_EQ(sb.st_mode & 0777, 0700);
	HARNESS_EQ(claim(s, "acct", "k", fp_a, 1, T0, NULL), ENGINE_CLAIM);
	store_close(s);
	cfg.dir = "";
	HARNESS_EQ(store_open(&cfg, &s), IDEM_EINVAL);
}

/*
 * The storage rules kept in one place (store.c) hold on every backend
 * alike: a key whose longest index key (8 bytes of time, scope, NUL,
 * key) is 511 bytes is claimed, one a byte longer is IDEM_ETOOBIG and
 * writes nothing; and a record is pending exactly while it is a claim
 * past stage 0, else in the expiry index at the later of its expiry and
 * its lease.
 */
static void
test_shared_rules(void)
{
	char scope[] = "acct", key[512];
	struct store_claim c;
	struct rec r;
	uint8_t t[REC_TOKEN_SIZE];
	uint64_t at;
	size_t fit = 511 - STORE_INDEX_PREFIX - 1 - strlen(scope);

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	tok(t, 1);
	memset(key, 'k', fit + 1);
	key[fit + 1] = '\0';
	HARNESS_EQ(store_claim(st, scope, key, fp_a, t, T0, LEASE, TTL, NULL,
	    &c), IDEM_ETOOBIG);
	HARNESS_EQ(store_names_check(scope, key, 511), IDEM_ETOOBIG);
	key[fit] = '\0';
	HARNESS_EQ(store_lookup(st, scope, key, &r), IDEM_ENOTFOUND);
	HARNESS_EQ(store_names_check(scope, key, 511), IDEM_OK);
	memset(&c, 0, sizeof(c));
	HARNESS_EQ(store_claim(st, scope, key, fp_a, t, T0, LEASE, TTL, NULL,
	    &c), IDEM_OK);
	HARNESS_EQ(c.decision, ENGINE_CLAIM);
	rec_free(&c.rec);
	HARNESS_EQ(store_names_check("", key, 511), IDEM_EINVAL);
	HARNESS_EQ(store_names_check(scope, "", 511), IDEM_EINVAL);

	memset(&r, 0, sizeof(r));
	r.state = REC_IN_PROGRESS;
	r.expires_ms = T0 + TTL;
	r.lease_ms = T0 + TTL + 5;
	CU_ASSERT(!store_rec_pending(&r));
	HARNESS_EQ(store_rec_expiry_at(&r, &at), 1);
	CU_ASSERT(at == T0 + TTL + 5);
	r.stage = 1;
	CU_ASSERT(store_rec_pending(&r));
	HARNESS_EQ(store_rec_expiry_at(&r, &at), 0);
	CU_ASSERT(at == 0);
	r.state = REC_COMPLETED;
	CU_ASSERT(!store_rec_pending(&r));
	HARNESS_EQ(store_rec_expiry_at(&r, &at), 1);
	CU_ASSERT(at == T0 + TTL);
}

int
harness_suites(void)
{
	static const struct {
		const char *name;
		CU_TestFunc fn;
	} tests[] = {
		{ "claim fresh", test_claim_fresh },
		{ "claim again: conflict + retry_after", test_claim_conflict },
		{ "other fingerprint: mismatch", test_claim_mismatch },
		{ "complete then replay", test_complete_replay },
		{ "release then claim afresh", test_release_then_claim },
		{ "takeover keeps stage and checkpoint",
		    test_takeover_keeps_checkpoint },
		{ "old token lost after takeover", test_old_token_lost },
		{ "abandon then takeover", test_abandon_then_takeover },
		{ "complete puts commit together", test_complete_puts_atomic },
		{ "complete with bad put writes nothing",
		    test_complete_bad_put_writes_nothing },
		{ "expired completed: claim fresh",
		    test_expired_completed_claims_fresh },
		{ "purge in batches", test_purge_batches },
		{ "purge keeps live lease", test_purge_keeps_live_lease },
		{ "purge keeps checkpointed claim",
		    test_purge_keeps_checkpointed_claim },
		{ "purge many", test_purge_many },
		{ "generation counts ended lifetimes", test_generation },
		{ "scopes isolated", test_scopes_isolated },
		{ "insert once", test_insert_once },
		{ "scan prefix forward and reverse", test_scan_prefix },
		{ "scan from a place", test_scan_from },
		{ "scan reverse with 0xff prefixes", test_scan_reverse_ff },
		{ "each and count", test_each_and_count },
		{ "bad arguments", test_bad_arguments },
		{ "map full", test_map_full },
		{ "late completion outlives the retry",
		    test_late_completion_outlives_retry },
		{ "purge not blocked by pending claims",
		    test_purge_not_blocked_by_pending },
		{ "per-scope limit", test_scope_limit },
		{ "full store keeps room to complete",
		    test_full_store_keeps_room_to_complete },
		{ "reopen persists", test_reopen_persists },
		{ "two handles in one process", test_two_handles },
		{ "read only", test_read_only },
		{ "open creates dir 0700", test_open_creates_dir },
		{ "storage rules shared by the backends", test_shared_rules },
		{ "PostgreSQL restart: reconnect, nothing lost",
		    test_pg_restart },
		{ "PostgreSQL: unmigrated refused, migrate once",
		    test_pg_migrate },
	};
	/* What only an LMDB store has: a map size, a directory. */
	static const CU_TestFunc lmdb_only[] = {
		test_map_full, test_full_store_keeps_room_to_complete,
		test_open_creates_dir,
	};
	CU_pSuite s;
	size_t i, j;
	const size_t nlmdb_only = sizeof(lmdb_only) / sizeof(lmdb_only[0]);
	int pg = harness_pg();

	s = CU_add_suite_with_setup_and_teardown(pg ? "store-pg" :
	    "store", suite_init, NULL, store_up, store_down);
	if (s == NULL)
		return -1;
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (!pg && (tests[i].fn == test_pg_restart ||
		    tests[i].fn == test_pg_migrate))
			continue;
		for (j = 0; pg && j < nlmdb_only; j++)
			if (tests[i].fn == lmdb_only[j])
				break;
		if (pg && j < nlmdb_only)
			continue;
		if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL)
			return -1;
	}
	return 0;
}
