/* SPDX-License-Identifier: MIT */
/*
 * test_rowkey.c: rows named by an id live under its digest, and rows
 * written when the id itself named them are still found, listed and
 * deleted.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "err.h"
#include "harness.h"
#include "idem.h"
#include "metrics.h"
#include "rowkey.h"

static const char *const tables[] = { "t", NULL };
static char dir[256];
static struct idem *idem;
static uint8_t fp[IDEM_FP_SIZE];

static const char id[] = "pay_0123456789abcdef01234567";

static void
up(void)
{
	struct idem_options opt;

	harness_mkdtemp(dir, sizeof(dir));
	memset(&opt, 0, sizeof(opt));
	opt.size = sizeof(opt);
	opt.dir = harness_store(dir, 1);
	opt.tables = tables;
	idem = NULL;
	HARNESS_EQ(idem_open(&opt, &idem), IDEM_OK);
}

static void
down(void)
{
	metrics_close();
	idem_close(idem);
	harness_rmdir(dir);
}

/* The name is part of what is on disk: it must never change. */
static void
test_name(void)
{
	uint8_t k[ROWKEY_LEN], k2[ROWKEY_LEN];
	char hex[2 * ROWKEY_LEN + 1];

	rowkey(id, strlen(id), k);
	crypto_hex(k, sizeof(k), hex);
	CU_ASSERT_STRING_EQUAL(hex, "6118efa88f03f5e56b44a4d95c78505b");
	rowkey("pay_0123456789abcdef01234568", strlen(id), k2);
	CU_ASSERT(memcmp(k, k2, sizeof(k)) != 0);
	CU_ASSERT(ROWKEY_LEN < strlen(id));
}

/* Outside a transaction: the digest first, then the id itself. */
static void
test_get(void)
{
	uint8_t k[ROWKEY_LEN];
	void *val = NULL;
	size_t len;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idem);
	HARNESS_EQ(rowkey_get(idem, "t", id, strlen(id), &val, &len),
	    IDEM_ENOTFOUND);
	HARNESS_EQ(idem_row_insert_once(idem, "t", id, strlen(id), "old", 3,
	    NULL, NULL), IDEM_OK);
	HARNESS_EQ(rowkey_get(idem, "t", id, strlen(id), &val, &len), IDEM_OK);
	CU_ASSERT(len == 3 && memcmp(val, "old", 3) == 0);
	free(val);
	rowkey(id, strlen(id), k);
	HARNESS_EQ(idem_row_insert_once(idem, "t", k, sizeof(k), "new", 3,
	    NULL, NULL), IDEM_OK);
	HARNESS_EQ(rowkey_get(idem, "t", id, strlen(id), &val, &len), IDEM_OK);
	CU_ASSERT(len == 3 && memcmp(val, "new", 3) == 0);
	free(val);
	/* The same with the name made by the caller. */
	HARNESS_EQ(rowkey_get_named(idem, "t", k, id, strlen(id), &val, &len),
	    IDEM_OK);
	CU_ASSERT(len == 3 && memcmp(val, "new", 3) == 0);
	free(val);
}

/* What the hooks below saw and did. */
struct seen {
	int get_rc, del_rc[3];
	char got[4];
};

static int
start(void *ctx, struct idem_start *out)
{
	(void)ctx;
	out->stage = 0;
	out->point = "p";
	out->len = 1;
	return IDEM_OK;
}

/* Reads the old row, writes a new one, then deletes both and finds none. */
static int
hook(void *ctx, struct idem_tx *tx)
{
	struct seen *s = ctx;
	const void *v;
	size_t len;
	int rc;

	s->get_rc = rowkey_tx_get(tx, "t", id, strlen(id), &v, &len);
	if (s->get_rc == IDEM_OK && len == 3)
		memcpy(s->got, v, 3);
	if ((rc = rowkey_tx_put(tx, "t", id, strlen(id), "new", 3)) !=
	    IDEM_OK)
		return rc;
	s->del_rc[0] = rowkey_tx_del(tx, "t", id, strlen(id));
	s->del_rc[1] = rowkey_tx_del(tx, "t", id, strlen(id));
	s->del_rc[2] = rowkey_tx_del(tx, "t", id, strlen(id));
	return rowkey_tx_put(tx, "t", id, strlen(id), "fin", 3);
}

static const struct idem_response answer = { 201, NULL, 0, "{}", 2 };

/* In a transaction: the same lookups, and deletes reach both names. */
static void
test_tx(void)
{
	struct seen s = { 0, { 0, 0, 0 }, "" };
	struct idem_call *c = NULL;
	uint8_t k[ROWKEY_LEN];
	void *val = NULL;
	size_t len;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idem);
	HARNESS_EQ(idem_row_insert_once(idem, "t", id, strlen(id), "old", 3,
	    NULL, NULL), IDEM_OK);
	HARNESS_EQ(idem_begin(idem, "s", "k", fp, start, NULL, &c), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	HARNESS_EQ(idem_call_verdict(c), IDEM_RUN);
	HARNESS_EQ(idem_finish(c, &answer, hook, &s), IDEM_OK);
	idem_call_free(c);
	HARNESS_EQ(s.get_rc, IDEM_OK);
	CU_ASSERT_STRING_EQUAL(s.got, "old");
	/* The new row under the digest, then the old one under the id. */
	HARNESS_EQ(s.del_rc[0], IDEM_OK);
	HARNESS_EQ(s.del_rc[1], IDEM_OK);
	HARNESS_EQ(s.del_rc[2], IDEM_ENOTFOUND);
	/* Committed: the last write is under the digest, nothing under id. */
	rowkey(id, strlen(id), k);
	HARNESS_EQ(idem_row_get(idem, "t", k, sizeof(k), &val, &len), IDEM_OK);
	CU_ASSERT(len == 3 && memcmp(val, "fin", 3) == 0);
	free(val);
	HARNESS_EQ(idem_row_get(idem, "t", id, strlen(id), &val, &len),
	    IDEM_ENOTFOUND);
}

/* Collects the first byte of each value rowkey_scan passes on. */
struct got {
	char v[16];
	size_t n;
	size_t stop_at;         /* returns non-zero on this row (1-based) */
};

static int
collect(void *ctx, const void *key, size_t keylen, const void *val,
    size_t vallen)
{
	struct got *g = ctx;

	(void)key;
	(void)keylen;
	CU_ASSERT_FATAL(vallen == 1 && g->n < sizeof(g->v) - 1);
	g->v[g->n++] = *(const char *)val;
	return g->n == g->stop_at;
}

/* Puts the row prefix || suffix -> val. */
static void
put(const void *prefix, size_t prefixlen, char suffix, char val)
{
	uint8_t key[64];

	memcpy(key, prefix, prefixlen);
	key[prefixlen] = (uint8_t)suffix;
	HARNESS_EQ(idem_row_insert_once(idem, "t", key, prefixlen + 1, &val, 1,
	    NULL, NULL), IDEM_OK);
}

/* Scans id's rows with limit and reverse, from stop_at; the values seen. */
static const char *
scan(int reverse, size_t limit, size_t stop_at, struct got *g)
{
	memset(g, 0, sizeof(*g));
	g->stop_at = stop_at;
	HARNESS_EQ(rowkey_scan(idem, "t", id, strlen(id), reverse, limit,
	    collect, g), IDEM_OK);
	return g->v;
}

/*
 * A scan under an id sees its rows under both names: newest first, the
 * digest's (written later) before the id's own, and the limit and an
 * early stop count across both.  Rows of another id are never seen.
 */
static void
test_scan(void)
{
	static const char other[] = "pay_0123456789abcdef01234568";
	uint8_t k[ROWKEY_LEN], k2[ROWKEY_LEN];
	struct got g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idem);
	CU_ASSERT_STRING_EQUAL(scan(1, 0, 0, &g), "");
	rowkey(id, strlen(id), k);
	rowkey(other, strlen(other), k2);
	/* Oldest a, b under the id; then c, d, e under the digest. */
	put(id, strlen(id), '1', 'a');
	put(id, strlen(id), '2', 'b');
	put(k, sizeof(k), '3', 'c');
	put(k, sizeof(k), '4', 'd');
	put(k, sizeof(k), '5', 'e');
	put(other, strlen(other), '6', 'x');
	put(k2, sizeof(k2), '7', 'y');
	CU_ASSERT_STRING_EQUAL(scan(1, 0, 0, &g), "edcba");
	CU_ASSERT_STRING_EQUAL(scan(0, 0, 0, &g), "abcde");
	CU_ASSERT_STRING_EQUAL(scan(1, 2, 0, &g), "ed");
	CU_ASSERT_STRING_EQUAL(scan(1, 3, 0, &g), "edc");
	CU_ASSERT_STRING_EQUAL(scan(1, 4, 0, &g), "edcb");
	CU_ASSERT_STRING_EQUAL(scan(0, 3, 0, &g), "abc");
	CU_ASSERT_STRING_EQUAL(scan(1, 9, 0, &g), "edcba");
	CU_ASSERT_STRING_EQUAL(scan(1, 0, 2, &g), "ed");
	CU_ASSERT_STRING_EQUAL(scan(1, 0, 3, &g), "edc");
	CU_ASSERT_STRING_EQUAL(scan(0, 0, 1, &g), "a");
}

int
harness_suites(void)
{
	CU_pSuite s;

	if ((s = CU_add_suite("rowkey", NULL, NULL)) == NULL ||
	    CU_add_test(s, "name on disk", test_name) == NULL ||
	    (s = CU_add_suite_with_setup_and_teardown("rowkey store", NULL,
	    NULL, up, down)) == NULL ||
	    CU_add_test(s, "get falls back", test_get) == NULL ||
	    CU_add_test(s, "in a transaction", test_tx) == NULL ||
	    CU_add_test(s, "scan under both names", test_scan) == NULL)
		return -1;
	return 0;
}
