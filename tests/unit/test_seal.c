/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of sealing at rest: seal.c's cipher and key files, and the
 * library sealing what it stores (idem.c): round trips, changed bytes,
 * values moved to another place in the raw store, unknown key ids, and
 * rewriting rows under a new key in batches.  A handle without the key
 * file on the same store plays the raw store: it reads and writes the
 * sealed bytes as they are.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crypto.h"
#include "err.h"
#include "harness.h"
#include "idem.h"
#include "metrics.h"
#include "seal.h"
#include "store.h"

static char dir[512];
static char key1[600], key2[600], both[600];
static const char *const tables[] = { "t", "u", NULL };
static uint8_t fp[IDEM_FP_SIZE];

static void
up(void)
{
	char err[256];

	harness_mkdtemp(dir, sizeof(dir));
	(void)harness_store(dir, 1);
	snprintf(key1, sizeof(key1), "%s/key1", dir);
	snprintf(key2, sizeof(key2), "%s/key2", dir);
	snprintf(both, sizeof(both), "%s/both", dir);
	CU_ASSERT_EQUAL(seal_new_file(key1, err, sizeof(err)), IDEM_OK);
	CU_ASSERT_EQUAL(seal_new_file(key2, err, sizeof(err)), IDEM_OK);
	memset(fp, 0x5a, sizeof(fp));
}

static void
down(void)
{
	metrics_close();
	harness_rmdir(dir);
}

/* A key file holding key2 then key1: key2 seals, both open. */
static void
write_both(void)
{
	char buf[256];
	FILE *out, *in;
	size_t n;
	const char *src[] = { key2, key1 };
	int i, fd;

	fd = open(both, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	out = fdopen(fd, "w");
	for (i = 0; i < 2; i++) {
		in = fopen(src[i], "r");
		CU_ASSERT_PTR_NOT_NULL_FATAL(in);
		while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
			fwrite(buf, 1, n, out);
		fclose(in);
	}
	fclose(out);
}

static struct idem *
open_idem(const char *secret)
{
	struct idem_options opt;
	struct idem *h = NULL;

	memset(&opt, 0, sizeof(opt));
	opt.size = sizeof(opt);
	opt.dir = harness_store(dir, 0);
	opt.tables = tables;
	opt.secret_file = secret;
	CU_ASSERT_EQUAL(idem_open(&opt, &h), IDEM_OK);
	return h;
}

static struct sealer *
load(const char *path)
{
	struct sealer *s = NULL;
	char err[256];

	CU_ASSERT_EQUAL(seal_load(path, &s, err, sizeof(err)), IDEM_OK);
	return s;
}

static const struct seal_ad ad_a = { "row", "t", 1, "a", 1 };
static const struct seal_ad ad_b = { "row", "t", 1, "b", 1 };

static void
test_round_trip(void)
{
	static const size_t lens[] = { 0, 1, 16, 1000, 70000 };
	struct sealer *s = load(key1);
	struct buf sealed = BUF_INIT, plain = BUF_INIT;
	uint8_t *in, id[SEAL_ID_SIZE];
	size_t i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	in = malloc(70000);
	crypto_random(in, 70000);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		buf_reset(&sealed);
		buf_reset(&plain);
		CU_ASSERT_EQUAL(seal_seal(s, &ad_a, in, lens[i], &sealed),
		    IDEM_OK);
		HARNESS_EQ(sealed.len, lens[i] + SEAL_OVERHEAD);
		CU_ASSERT(seal_is_current(s, sealed.data, sealed.len));
		CU_ASSERT_EQUAL(seal_open(s, &ad_a, sealed.data, sealed.len,
		    &plain, id), IDEM_OK);
		HARNESS_EQ(plain.len, lens[i]);
		CU_ASSERT(memcmp(plain.data, in, lens[i]) == 0);
		CU_ASSERT(memcmp(id, s->keys[0].id, SEAL_ID_SIZE) == 0);
		/* Random nonces: the same value seals differently. */
		buf_reset(&plain);
		CU_ASSERT_EQUAL(seal_seal(s, &ad_a, in, lens[i], &plain),
		    IDEM_OK);
		CU_ASSERT(memcmp(plain.data, sealed.data, sealed.len) != 0);
	}
	free(in);
	buf_free(&sealed);
	buf_free(&plain);
	seal_free(s);
}

/* Every changed byte, and a value bound to another place, fail. */
static void
test_tamper_and_place(void)
{
	struct sealer *s = load(key1);
	struct buf sealed = BUF_INIT, plain = BUF_INIT;
	struct seal_ad other_kind = { "record-point", "t", 1, "a", 1 };
	struct seal_ad shifted = { "row", "ta", 2, "", 0 };
	size_t i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(seal_seal(s, &ad_a, "amount 100.00", 13, &sealed),
	    IDEM_OK);
	for (i = 0; i < sealed.len; i++) {
		sealed.data[i] ^= 0x01;
		buf_reset(&plain);
		HARNESS_EQ(seal_open(s, &ad_a, sealed.data, sealed.len, &plain,
		    NULL), IDEM_ESEAL);
		sealed.data[i] ^= 0x01;
	}
	HARNESS_EQ(seal_open(s, &ad_a, sealed.data, sealed.len - 1, &plain,
	    NULL), IDEM_ESEAL);
	HARNESS_EQ(seal_open(s, &ad_a, sealed.data, 3, &plain, NULL),
	    IDEM_ESEAL);
	HARNESS_EQ(seal_open(s, &ad_b, sealed.data, sealed.len, &plain, NULL),
	    IDEM_ESEAL);
	HARNESS_EQ(seal_open(s, &other_kind, sealed.data, sealed.len, &plain,
	    NULL), IDEM_ESEAL);
	HARNESS_EQ(seal_open(s, &shifted, sealed.data, sealed.len, &plain,
	    NULL), IDEM_ESEAL);
	buf_reset(&plain);
	HARNESS_EQ(seal_open(s, &ad_a, sealed.data, sealed.len, &plain, NULL),
	    IDEM_OK);
	buf_free(&sealed);
	buf_free(&plain);
	seal_free(s);
}

/* A key id the file does not list does not open, and is reported. */
static void
test_unknown_key_id(void)
{
	struct sealer *s1 = load(key1), *s2 = load(key2);
	struct buf sealed = BUF_INIT, plain = BUF_INIT;
	uint8_t id[SEAL_ID_SIZE];

	CU_ASSERT_PTR_NOT_NULL_FATAL(s1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s2);
	CU_ASSERT(memcmp(s1->keys[0].id, s2->keys[0].id, SEAL_ID_SIZE) != 0);
	CU_ASSERT_EQUAL(seal_seal(s1, &ad_a, "x", 1, &sealed), IDEM_OK);
	HARNESS_EQ(seal_open(s2, &ad_a, sealed.data, sealed.len, &plain, id),
	    IDEM_ESEAL);
	CU_ASSERT(memcmp(id, s1->keys[0].id, SEAL_ID_SIZE) == 0);
	CU_ASSERT(!seal_is_current(s2, sealed.data, sealed.len));
	/* The same id with another key behind it: the tag fails. */
	memcpy(s2->keys[0].id, s1->keys[0].id, SEAL_ID_SIZE);
	HARNESS_EQ(seal_open(s2, &ad_a, sealed.data, sealed.len, &plain, id),
	    IDEM_ESEAL);
	buf_free(&sealed);
	buf_free(&plain);
	seal_free(s1);
	seal_free(s2);
}

static void
test_key_file_parse(void)
{
	static const char k1[] =
	    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
	static const char k2[] =
	    "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";
	struct sealer s;
	char text[1024], err[256];

	snprintf(text, sizeof(text), "# current first\r\n%s  \n\n%s\n", k1, k2);
	HARNESS_EQ(seal_parse(text, strlen(text), &s, err, sizeof(err)),
	    IDEM_OK);
	HARNESS_EQ(s.nkeys, 2);
	CU_ASSERT(s.keys[0].key[0] == 0x00 && s.keys[1].key[0] == 0xff);
	snprintf(text, sizeof(text), "%s", k1);   /* no end of line */
	HARNESS_EQ(seal_parse(text, strlen(text), &s, err, sizeof(err)),
	    IDEM_OK);
	HARNESS_EQ(seal_parse("", 0, &s, err, sizeof(err)), IDEM_EINVAL);
	HARNESS_EQ(seal_parse("# none\n", 7, &s, err, sizeof(err)),
	    IDEM_EINVAL);
	snprintf(text, sizeof(text), "%s\n%s\n", k1, k1);
	HARNESS_EQ(seal_parse(text, strlen(text), &s, err, sizeof(err)),
	    IDEM_EINVAL);
	CU_ASSERT(strstr(err, "line 2") != NULL);
	snprintf(text, sizeof(text), "%.63s\n", k1);
	HARNESS_EQ(seal_parse(text, strlen(text), &s, err, sizeof(err)),
	    IDEM_EINVAL);
	snprintf(text, sizeof(text), "%.63sg\n", k1);
	HARNESS_EQ(seal_parse(text, strlen(text), &s, err, sizeof(err)),
	    IDEM_EINVAL);
	memcpy(text, k1, 64);
	text[10] = '\0';
	HARNESS_EQ(seal_parse(text, 64, &s, err, sizeof(err)), IDEM_EINVAL);
}

/* new-secret: mode 0600, one key, never over an existing file. */
static void
test_new_file(void)
{
	struct sealer *s;
	struct stat st;
	char err[256];

	CU_ASSERT_EQUAL(stat(key1, &st), 0);
	HARNESS_EQ(st.st_mode & 0777, 0600);
	HARNESS_EQ(seal_new_file(key1, err, sizeof(err)), IDEM_EEXIST);
	s = load(key1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	HARNESS_EQ(s->nkeys, 1);
	seal_free(s);
	/* A file others may read is refused. */
	CU_ASSERT_EQUAL(chmod(key1, 0604), 0);
	s = NULL;
	HARNESS_EQ(seal_load(key1, &s, err, sizeof(err)), IDEM_EINVAL);
	CU_ASSERT_PTR_NULL(s);
}

/* The record as the store holds it. */
static int
raw_lookup(const char *scope, const char *key, struct rec *out)
{
	struct store_config sc;
	struct store *st;
	int rc;

	memset(&sc, 0, sizeof(sc));
	sc.dir = harness_store(dir, 0);
	sc.tables = tables;
	if ((rc = store_open(&sc, &st)) != IDEM_OK)
		return rc;
	rc = store_lookup(st, scope, key, out);
	store_close(st);
	return rc;
}

/* Completes (scope, key) with a body, through h. */
static void
complete(struct idem *h, const char *scope, const char *key,
    const struct idem_response *r)
{
	struct idem_call *c = NULL;

	CU_ASSERT_EQUAL_FATAL(idem_begin(h, scope, key, fp, NULL, NULL, &c),
	    IDEM_OK);
	HARNESS_EQ(idem_call_verdict(c), IDEM_RUN);
	HARNESS_EQ(idem_finish(c, r, NULL, NULL), IDEM_OK);
	idem_call_free(c);
}

static void
expect_replay(struct idem *h, const char *scope, const char *key,
    const char *body, int want)
{
	const struct idem_response *r;
	struct idem_call *c = NULL;
	int rc;

	rc = idem_begin(h, scope, key, fp, NULL, NULL, &c);
	HARNESS_EQ(rc, want);
	if (rc != IDEM_OK)
		return;
	HARNESS_EQ(idem_call_verdict(c), IDEM_REPLAY);
	r = idem_call_response(c);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	HARNESS_EQ(r->status, 201);
	HARNESS_EQ(r->bodylen, strlen(body));
	CU_ASSERT(memcmp(r->body, body, strlen(body)) == 0);
	HARNESS_EQ(r->nheaders, 1);
	CU_ASSERT_STRING_EQUAL(r->headers[0].name, "Location");
	idem_call_free(c);
}

/*
 * A sealed response replays its bytes; the raw record holds neither
 * body nor header; the same raw response stored under another key or
 * another scope (a handle without the key file writes it there as it
 * is) does not open: IDEM_ESEAL, not the other record's answer.
 */
static void
test_records_bound_to_place(void)
{
	struct idem_header loc = { "Location", "/payments/pay_secret_1" };
	struct idem_response r1 = { 201, &loc, 1, "{\"amount\":1}", 12 };
	struct idem_header hraw[IDEM_MAX_HEADERS];
	struct idem_response raw;
	struct idem *sealed = open_idem(key1), *plain = open_idem(NULL);
	struct idem_call *c = NULL;
	struct rec rec;
	size_t i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(sealed);
	CU_ASSERT_PTR_NOT_NULL_FATAL(plain);
	complete(sealed, "s", "k1", &r1);
	expect_replay(sealed, "s", "k1", "{\"amount\":1}", IDEM_OK);
	CU_ASSERT_EQUAL_FATAL(raw_lookup("s", "k1", &rec), IDEM_OK);
	CU_ASSERT(rec.resp.bodylen > 12);
	CU_ASSERT(memmem(rec.resp.body, rec.resp.bodylen, "amount", 6) ==
	    NULL);
	for (i = 0; i < rec.resp.nheaders; i++)
		CU_ASSERT(strstr(rec.resp.headers[i].value, "pay_") == NULL);
	/* The raw record, as a handle without keys would copy it. */
	for (i = 0; i < rec.resp.nheaders; i++) {
		hraw[i].name = rec.resp.headers[i].name;
		hraw[i].value = rec.resp.headers[i].value;
	}
	raw.status = rec.resp.status;
	raw.headers = hraw;
	raw.nheaders = rec.resp.nheaders;
	raw.body = rec.resp.body;
	raw.bodylen = rec.resp.bodylen;
	complete(plain, "s", "k2", &raw);
	complete(plain, "other", "k1", &raw);
	rec_free(&rec);
	expect_replay(sealed, "s", "k2", "", IDEM_ESEAL);
	expect_replay(sealed, "other", "k1", "", IDEM_ESEAL);
	/* A store with keys that finds a response in the clear refuses it. */
	complete(plain, "s", "clear", &r1);
	expect_replay(sealed, "s", "clear", "", IDEM_ESEAL);
	/* And one without keys does not replay sealed bytes. */
	HARNESS_EQ(idem_begin(plain, "s", "k1", fp, NULL, NULL, &c),
	    IDEM_ESEAL);
	CU_ASSERT_PTR_NULL(c);
	/* Under another key file: the key id is unknown. */
	idem_close(plain);
	plain = open_idem(key2);
	expect_replay(plain, "s", "k1", "", IDEM_ESEAL);
	idem_close(plain);
	idem_close(sealed);
}

struct put {
	const char *table;
	const char *key;
	const void *val;
	size_t len;
};

static int
put_hook(void *ctx, struct idem_tx *tx)
{
	const struct put *p = ctx;

	return idem_tx_put(tx, p->table, p->key, strlen(p->key), p->val,
	    p->len);
}

/* Writes one row through h, in a keyed call's completion. */
static void
put_row(struct idem *h, const char *table, const char *key, const void *val,
    size_t len)
{
	struct idem_response r = { 201, NULL, 0, "", 0 };
	struct put p = { table, key, val, len };
	struct idem_call *c = NULL;
	char ikey[64];
	uint8_t rnd[8];

	crypto_random(rnd, sizeof(rnd));
	crypto_hex(rnd, sizeof(rnd), ikey);
	CU_ASSERT_EQUAL_FATAL(idem_begin(h, "rows", ikey, fp, NULL, NULL, &c),
	    IDEM_OK);
	HARNESS_EQ(idem_finish(c, &r, put_hook, &p), IDEM_OK);
	idem_call_free(c);
}

static void
expect_row(struct idem *h, const char *table, const char *key,
    const char *val, int want)
{
	void *v = NULL;
	size_t len = 0;

	HARNESS_EQ(idem_row_get(h, table, key, strlen(key), &v, &len), want);
	if (want == IDEM_OK && val != NULL) {
		HARNESS_EQ(len, strlen(val));
		CU_ASSERT(v != NULL && memcmp(v, val, len) == 0);
	}
	free(v);
}

/* A hook reads the sealed rows it reads in the clear, and they stay. */
static int
read_two_hook(void *ctx, struct idem_tx *tx)
{
	const void *a, *b;
	size_t alen, blen;
	int rc;

	(void)ctx;
	if ((rc = idem_tx_get(tx, "t", "a", 1, &a, &alen)) != IDEM_OK ||
	    (rc = idem_tx_get(tx, "t", "b", 1, &b, &blen)) != IDEM_OK)
		return rc;
	if (alen != 5 || memcmp(a, "alpha", 5) != 0 || blen != 4 ||
	    memcmp(b, "beta", 4) != 0)
		return IDEM_EREFUSED;
	return idem_tx_put(tx, "u", "ab", 2, "both", 4);
}

/*
 * Rows: sealed values open through every read (get, scan, a hook's
 * get); the raw value holds no plaintext; swapping two rows' values in
 * the raw store makes both fail to open.
 */
static void
test_rows_bound_to_place(void)
{
	struct idem_response r = { 201, NULL, 0, "", 0 };
	struct idem *sealed = open_idem(key1), *plain = open_idem(NULL);
	struct idem_call *c = NULL;
	void *va = NULL, *vb = NULL;
	size_t la = 0, lb = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(sealed);
	CU_ASSERT_PTR_NOT_NULL_FATAL(plain);
	put_row(sealed, "t", "a", "alpha", 5);
	put_row(sealed, "t", "b", "beta", 4);
	expect_row(sealed, "t", "a", "alpha", IDEM_OK);
	CU_ASSERT_EQUAL_FATAL(idem_begin(sealed, "rows", "reader", fp, NULL,
	    NULL, &c), IDEM_OK);
	HARNESS_EQ(idem_finish(c, &r, read_two_hook, NULL), IDEM_OK);
	idem_call_free(c);
	expect_row(sealed, "u", "ab", "both", IDEM_OK);
	CU_ASSERT_EQUAL(idem_row_get(plain, "t", "a", 1, &va, &la), IDEM_OK);
	CU_ASSERT_EQUAL(idem_row_get(plain, "t", "b", 1, &vb, &lb), IDEM_OK);
	HARNESS_EQ(la, 5 + SEAL_OVERHEAD);
	CU_ASSERT(va != NULL && memmem(va, la, "alpha", 5) == NULL);
	put_row(plain, "t", "a", vb, lb);
	put_row(plain, "t", "b", va, la);
	free(va);
	free(vb);
	expect_row(sealed, "t", "a", NULL, IDEM_ESEAL);
	expect_row(sealed, "t", "b", NULL, IDEM_ESEAL);
	/* A row in the clear is refused too, never read as it is. */
	put_row(plain, "t", "c", "clear", 5);
	expect_row(sealed, "t", "c", NULL, IDEM_ESEAL);
	idem_close(plain);
	idem_close(sealed);
}

static int
count_row(void *ctx, const void *key, size_t keylen, const void *val,
    size_t vallen)
{
	(void)key;
	(void)keylen;
	if (vallen == 3 && memcmp(val, "val", 3) == 0)
		(*(size_t *)ctx)++;
	return 0;
}

static size_t
stale_rows(struct idem *h)
{
	struct buf keys = BUF_INIT;
	size_t n = 0;

	CU_ASSERT_EQUAL(store_reseal_scan(h, "t", &keys, &n), IDEM_OK);
	buf_free(&keys);
	return n;
}

/*
 * Rolling: under a file listing key2 then key1, rows sealed under key1
 * still open and new ones are sealed under key2; rewriting in batches
 * of 3 moves 3, 3 and 1 of 7 rows, each batch leaving every row
 * readable; then the rows open under key2 alone, and a second run
 * finds nothing.
 */
static void
test_rekey_in_batches(void)
{
	struct idem *old = open_idem(key1), *h, *only;
	struct buf keys = BUF_INIT;
	size_t n, off = 0, moved, failed, seen, stale, i;
	size_t want[] = { 3, 3, 1 };
	char k[8];

	CU_ASSERT_PTR_NOT_NULL_FATAL(old);
	for (i = 0; i < 7; i++) {
		snprintf(k, sizeof(k), "r%zu", i);
		put_row(old, "t", k, "val", 3);
	}
	idem_close(old);
	write_both();
	h = open_idem(both);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	put_row(h, "t", "new", "val", 3);
	HARNESS_EQ(stale_rows(h), 7);
	CU_ASSERT_EQUAL(store_reseal_records(h, &stale), IDEM_OK);
	HARNESS_EQ(stale, 7);   /* the completions of the seven puts */
	CU_ASSERT_EQUAL_FATAL(store_reseal_scan(h, "t", &keys, &n), IDEM_OK);
	HARNESS_EQ(n, 7);
	for (i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(store_reseal_rows(h, "t", &keys, &off, 3, 0,
		    &moved, &failed), IDEM_OK);
		HARNESS_EQ(moved, want[i]);
		HARNESS_EQ(failed, 0);
		seen = 0;
		CU_ASSERT_EQUAL(idem_row_scan(h, "t", NULL, 0, 0, 0,
		    count_row, &seen), IDEM_OK);
		HARNESS_EQ(seen, 8);
	}
	HARNESS_EQ(off, keys.len);
	buf_free(&keys);
	HARNESS_EQ(stale_rows(h), 0);
	idem_close(h);
	only = open_idem(key2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(only);
	seen = 0;
	CU_ASSERT_EQUAL(idem_row_scan(only, "t", NULL, 0, 0, 0, count_row,
	    &seen), IDEM_OK);
	HARNESS_EQ(seen, 8);
	expect_row(only, "t", "r6", "val", IDEM_OK);
	idem_close(only);
}

static int
count_each(void *ctx, const char *scope, const char *key, const struct rec *r)
{
	(void)scope;
	(void)key;
	(void)r;
	(*(size_t *)ctx)++;
	return 0;
}

/* The records in the raw store's pending index (claims with a stage). */
static size_t
raw_pending(void)
{
	struct store_config sc;
	struct store *st;
	size_t n = 0;

	memset(&sc, 0, sizeof(sc));
	sc.dir = harness_store(dir, 0);
	sc.tables = tables;
	CU_ASSERT_EQUAL_FATAL(store_open(&sc, &st), IDEM_OK);
	CU_ASSERT_EQUAL(store_each_pending(st, count_each, &n), IDEM_OK);
	store_close(st);
	return n;
}

/* The record (s, key) has the state and times it had in *was (freed). */
static void
same_times(struct rec *was, const char *key)
{
	struct rec now;

	CU_ASSERT_EQUAL_FATAL(raw_lookup("s", key, &now), IDEM_OK);
	HARNESS_EQ(now.state, was->state);
	HARNESS_EQ(now.stage, was->stage);
	HARNESS_EQ(now.created_ms, was->created_ms);
	HARNESS_EQ(now.expires_ms, was->expires_ms);
	HARNESS_EQ(now.lease_ms, was->lease_ms);
	HARNESS_EQ(now.attempts, was->attempts);
	CU_ASSERT(memcmp(now.token, was->token, REC_TOKEN_SIZE) == 0);
	rec_free(&now);
	rec_free(was);
}

/*
 * Records: under key2 then key1, the records sealed under key1 (five
 * completed, one claim with a recovery point) are rewritten in batches
 * of 4 on every backend, with no time, state or index changed, and then
 * replay, and the claim's point opens, under key2 alone.
 */
static void
test_rekey_records(void)
{
	struct idem_header loc = { "Location", "/payments/pay_1" };
	struct idem_response r = { 201, &loc, 1, "{\"n\":1}", 7 };
	struct idem *old = open_idem(key1), *h, *only;
	struct buf list = BUF_INIT;
	struct idem_call *c = NULL;
	struct sealer *s2;
	struct rec rec, before[2];
	size_t n, off = 0, stale, i;
	char k[8];

	CU_ASSERT_PTR_NOT_NULL_FATAL(old);
	for (i = 0; i < 5; i++) {
		snprintf(k, sizeof(k), "c%zu", i);
		complete(old, "s", k, &r);
	}
	CU_ASSERT_EQUAL_FATAL(idem_begin(old, "s", "claim", fp, NULL, NULL,
	    &c), IDEM_OK);
	CU_ASSERT_EQUAL(idem_checkpoint(c, 1, "pay_point", 9), IDEM_OK);
	idem_call_free(c);
	idem_close(old);
	write_both();
	h = open_idem(both);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	CU_ASSERT_EQUAL_FATAL(store_reseal_record_scan(h, &list, &n), IDEM_OK);
	HARNESS_EQ(n, 6);
	CU_ASSERT_EQUAL_FATAL(raw_lookup("s", "claim", &before[0]), IDEM_OK);
	CU_ASSERT_EQUAL_FATAL(raw_lookup("s", "c0", &before[1]), IDEM_OK);
	HARNESS_EQ(raw_pending(), 1);
	HARNESS_EQ(store_reseal_record_batch(h, &list, &off, 4), IDEM_OK);
	CU_ASSERT_EQUAL(store_reseal_records(h, &stale), IDEM_OK);
	HARNESS_EQ(stale, 2);
	HARNESS_EQ(store_reseal_record_batch(h, &list, &off, 4), IDEM_OK);
	HARNESS_EQ(off, list.len);
	CU_ASSERT_EQUAL(store_reseal_records(h, &stale), IDEM_OK);
	HARNESS_EQ(stale, 0);
	buf_free(&list);
	idem_close(h);
	same_times(&before[0], "claim");
	same_times(&before[1], "c0");
	HARNESS_EQ(raw_pending(), 1);
	only = open_idem(key2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(only);
	for (i = 0; i < 5; i++) {
		snprintf(k, sizeof(k), "c%zu", i);
		expect_replay(only, "s", k, "{\"n\":1}", IDEM_OK);
	}
	idem_close(only);
	s2 = load(key2);
	CU_ASSERT_EQUAL_FATAL(raw_lookup("s", "claim", &rec), IDEM_OK);
	CU_ASSERT_EQUAL(store_unseal_point(s2, "s", "claim", &rec), IDEM_OK);
	HARNESS_EQ(rec.cplen, 9);
	CU_ASSERT(rec.cp != NULL && memcmp(rec.cp, "pay_point", 9) == 0);
	rec_free(&rec);
	seal_free(s2);
}

/* What a store_reseal callback saw; it fails at the record named fail. */
struct reseal_seen {
	size_t calls;
	char keys[4][8];
	const char *fail;
};

static int
reseal_change(void *ctx, const char *scope, const char *key, struct rec *r,
    int *changed)
{
	struct reseal_seen *x = ctx;

	(void)scope;
	if (x->calls < 4)
		snprintf(x->keys[x->calls], sizeof(x->keys[0]), "%s", key);
	x->calls++;
	if (x->fail != NULL && strcmp(key, x->fail) == 0)
		return IDEM_ECORRUPT;
	if (r->state != REC_IN_PROGRESS)
		return IDEM_OK;
	r->cp = (uint8_t *)"changed";
	r->cplen = 7;
	*changed = 1;
	return IDEM_OK;
}

/*
 * The backend's store_reseal: a listed record that is gone is skipped,
 * the others are read in list order and a changed one is written back;
 * a callback's error undoes the whole batch (one transaction).
 */
static void
test_reseal_contract(void)
{
	struct idem_response r = { 200, NULL, 0, "{}", 2 };
	const char *scopes[] = { "s", "s", "s" };
	const char *keys[] = { "claim", "gone", "done" };
	struct idem *h = open_idem(NULL);
	struct reseal_seen x;
	struct idem_call *c = NULL;
	struct store_config sc;
	struct store *st;
	struct rec rec;

	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	complete(h, "s", "done", &r);
	CU_ASSERT_EQUAL_FATAL(idem_begin(h, "s", "claim", fp, NULL, NULL,
	    &c), IDEM_OK);
	CU_ASSERT_EQUAL(idem_checkpoint(c, 2, "point", 5), IDEM_OK);
	idem_call_free(c);
	idem_close(h);
	memset(&sc, 0, sizeof(sc));
	sc.dir = harness_store(dir, 0);
	sc.tables = tables;
	CU_ASSERT_EQUAL_FATAL(store_open(&sc, &st), IDEM_OK);

	memset(&x, 0, sizeof(x));
	x.fail = "done";
	HARNESS_EQ(store_reseal(st, scopes, keys, 3, reseal_change, &x),
	    IDEM_ECORRUPT);
	CU_ASSERT_EQUAL(store_lookup(st, "s", "claim", &rec), IDEM_OK);
	CU_ASSERT(rec.cplen == 5 && memcmp(rec.cp, "point", 5) == 0);
	rec_free(&rec);

	memset(&x, 0, sizeof(x));
	HARNESS_EQ(store_reseal(st, scopes, keys, 3, reseal_change, &x),
	    IDEM_OK);
	HARNESS_EQ(x.calls, 2);
	CU_ASSERT_STRING_EQUAL(x.keys[0], "claim");
	CU_ASSERT_STRING_EQUAL(x.keys[1], "done");
	CU_ASSERT_EQUAL(store_lookup(st, "s", "claim", &rec), IDEM_OK);
	CU_ASSERT(rec.cplen == 7 && memcmp(rec.cp, "changed", 7) == 0);
	HARNESS_EQ(rec.stage, 2);
	rec_free(&rec);
	CU_ASSERT_EQUAL(store_lookup(st, "s", "gone", &rec), IDEM_ENOTFOUND);
	store_close(st);
}

/* What a walk of claims got from idem_pending_point. */
struct point_seen {
	int rc;
	char point[16];
	size_t n;
};

static int
point_of(void *ctx, struct idem_pending *p)
{
	struct point_seen *w = ctx;
	const void *pt;
	size_t len;

	w->n++;
	w->rc = idem_pending_point(p, &pt, &len);
	if (w->rc == IDEM_OK && len < sizeof(w->point))
		memcpy(w->point, pt, len);
	else
		CU_ASSERT(pt == NULL && len == 0);
	return 0;
}

/*
 * The walk of claims in progress opens a sealed recovery point for its
 * reader (the completer sees the plaintext), and one that does not open
 * under the handle's key file is IDEM_ESEAL, never its sealed bytes.
 */
static void
test_pending_point_opened(void)
{
	struct idem *h = open_idem(key1), *other;
	struct idem_call *c = NULL;
	struct point_seen w;

	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	CU_ASSERT_EQUAL_FATAL(idem_begin(h, "s", "claim", fp, NULL, NULL, &c),
	    IDEM_OK);
	CU_ASSERT_EQUAL(idem_checkpoint(c, 1, "pay_point", 9), IDEM_OK);
	idem_call_free(c);
	memset(&w, 0, sizeof(w));
	HARNESS_EQ(idem_pending_each(h, IDEM_PENDING_STARTED, point_of, &w),
	    IDEM_OK);
	HARNESS_EQ(w.n, 1);
	HARNESS_EQ(w.rc, IDEM_OK);
	CU_ASSERT_STRING_EQUAL(w.point, "pay_point");
	idem_close(h);
	other = open_idem(key2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(other);
	memset(&w, 0, sizeof(w));
	HARNESS_EQ(idem_pending_each(other, IDEM_PENDING_ALL, point_of, &w),
	    IDEM_OK);
	HARNESS_EQ(w.n, 1);
	HARNESS_EQ(w.rc, IDEM_ESEAL);
	idem_close(other);
}

int
harness_suites(void)
{
	CU_pSuite s;

	if (crypto_init() != IDEM_OK)
		return -1;
	s = CU_add_suite_with_setup_and_teardown("seal", NULL, NULL, up,
	    down);
	if (s == NULL ||
	    CU_add_test(s, "round trip", test_round_trip) == NULL ||
	    CU_add_test(s, "changed bytes and another place",
	    test_tamper_and_place) == NULL ||
	    CU_add_test(s, "unknown key id", test_unknown_key_id) == NULL ||
	    CU_add_test(s, "key file", test_key_file_parse) == NULL ||
	    CU_add_test(s, "new key file", test_new_file) == NULL ||
	    CU_add_test(s, "records bound to their place",
	    test_records_bound_to_place) == NULL ||
	    CU_add_test(s, "rows bound to their place",
	    test_rows_bound_to_place) == NULL ||
	    CU_add_test(s, "rekey in batches", test_rekey_in_batches) == NULL ||
	    CU_add_test(s, "rekey records", test_rekey_records) == NULL ||
	    CU_add_test(s, "reseal in one transaction",
	    test_reseal_contract) == NULL ||
	    CU_add_test(s, "pending claims' points opened",
	    test_pending_point_opened) == NULL)
		return -1;
	return 0;
}
