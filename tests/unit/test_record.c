/* SPDX-License-Identifier: MIT */
/*
 * test_record.c: the record codec.
 *
 * Round trips of every shape a record takes, and every way stored bytes
 * can be wrong: the decoder reads what came off the disk and must refuse
 * it cleanly, never crash or read past it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "record.h"

#include "harness.h"

/* Offsets into a version 1 encoding, per record.c's layout comment. */
#define OFF_VERSION 0
#define OFF_STATE 1
#define OFF_GEN (2 + FP_SIZE + REC_TOKEN_SIZE + 8 * 3 + 4 * 2)
#define OFF_CPLEN (OFF_GEN + 8)
#define FIXED_LEN (OFF_CPLEN + 2)

static const uint8_t body_bin[] = { '{', 0, 1, 2, 0xff, 0, '}', 0 };
static const uint8_t cp_bin[] = { 's', 't', 0, 'g', 0xfe, 0 };

static void
fill_in_progress(struct rec *r)
{
	size_t i;

	memset(r, 0, sizeof(*r));
	r->state = REC_IN_PROGRESS;
	for (i = 0; i < FP_SIZE; i++)
		r->fp[i] = (uint8_t)(i * 7 + 1);
	for (i = 0; i < REC_TOKEN_SIZE; i++)
		r->token[i] = (uint8_t)(0xa0 + i);
	r->created_ms = 1700000000123ULL;
	r->expires_ms = 1700086400123ULL;
	r->lease_ms = UINT64_MAX - 1;
	r->attempts = 3;
	r->stage = 0x01020304;
	r->gen = 0x0506;
}

static void
fill_completed(struct rec *r)
{
	fill_in_progress(r);
	r->state = REC_COMPLETED;
	memset(r->token, 0, sizeof(r->token));
	r->resp.status = 201;
	r->resp.nheaders = 3;
	r->resp.headers[0].name = (char *)"Content-Type";
	r->resp.headers[0].value = (char *)"application/json";
	r->resp.headers[1].name = (char *)"Location";
	r->resp.headers[1].value = (char *)"/payments/pay_123";
	r->resp.headers[2].name = (char *)"ETag";
	r->resp.headers[2].value = (char *)"\"abc\"";
	r->resp.body = (uint8_t *)body_bin;
	r->resp.bodylen = sizeof(body_bin);
}

static void
assert_same(const struct rec *a, const struct rec *b)
{
	size_t i;

	HARNESS_EQ(a->state, b->state);
	CU_ASSERT(memcmp(a->fp, b->fp, FP_SIZE) == 0);
	CU_ASSERT(memcmp(a->token, b->token, REC_TOKEN_SIZE) == 0);
	CU_ASSERT(a->created_ms == b->created_ms);
	CU_ASSERT(a->expires_ms == b->expires_ms);
	CU_ASSERT(a->lease_ms == b->lease_ms);
	HARNESS_EQ(a->attempts, b->attempts);
	HARNESS_EQ(a->stage, b->stage);
	CU_ASSERT(a->gen == b->gen);
	HARNESS_EQ(a->cplen, b->cplen);
	if (a->cplen == b->cplen && a->cplen > 0)
		CU_ASSERT(memcmp(a->cp, b->cp, a->cplen) == 0);
	if (a->state != REC_COMPLETED)
		return;
	HARNESS_EQ(a->resp.status, b->resp.status);
	HARNESS_EQ(a->resp.nheaders, b->resp.nheaders);
	for (i = 0; i < a->resp.nheaders && i < b->resp.nheaders; i++) {
		CU_ASSERT_STRING_EQUAL(a->resp.headers[i].name,
		    b->resp.headers[i].name);
		CU_ASSERT_STRING_EQUAL(a->resp.headers[i].value,
		    b->resp.headers[i].value);
	}
	HARNESS_EQ(a->resp.bodylen, b->resp.bodylen);
	if (a->resp.bodylen == b->resp.bodylen && a->resp.bodylen > 0)
		CU_ASSERT(memcmp(a->resp.body, b->resp.body,
		    a->resp.bodylen) == 0);
}

/* Encodes r, decodes the bytes, and checks that nothing changed. */
static void
round_trip(const struct rec *r)
{
	struct buf b = BUF_INIT;
	struct rec d;

	HARNESS_EQ(rec_encode(r, &b), IDEM_OK);
	HARNESS_EQ(rec_decode(b.data, b.len, &d), IDEM_OK);
	assert_same(r, &d);
	rec_free(&d);
	buf_free(&b);
}

static void
encode_or_fail(const struct rec *r, struct buf *b)
{
	buf_init(b);
	HARNESS_EQ(rec_encode(r, b), IDEM_OK);
}

static void
test_round_trip_in_progress(void)
{
	struct rec r;

	fill_in_progress(&r);
	round_trip(&r);
}

static void
test_round_trip_checkpoint(void)
{
	struct rec r;

	fill_in_progress(&r);
	r.cp = (uint8_t *)cp_bin;
	r.cplen = sizeof(cp_bin);
	round_trip(&r);
}

static void
test_round_trip_max_checkpoint(void)
{
	static uint8_t cp[REC_MAX_CHECKPOINT];
	struct rec r;
	size_t i;

	for (i = 0; i < sizeof(cp); i++)
		cp[i] = (uint8_t)i;
	fill_in_progress(&r);
	r.cp = cp;
	r.cplen = sizeof(cp);
	round_trip(&r);
}

static void
test_round_trip_completed(void)
{
	struct rec r;

	fill_completed(&r);
	r.cp = (uint8_t *)cp_bin;
	r.cplen = sizeof(cp_bin);
	round_trip(&r);
}

static void
test_round_trip_completed_empty(void)
{
	struct rec r;

	fill_completed(&r);
	r.resp.status = 204;
	r.resp.nheaders = 0;
	r.resp.body = NULL;
	r.resp.bodylen = 0;
	round_trip(&r);
}

static void
test_round_trip_max_headers(void)
{
	static char names[REC_MAX_HEADERS][16], values[REC_MAX_HEADERS][16];
	struct rec r;
	size_t i;

	fill_completed(&r);
	for (i = 0; i < REC_MAX_HEADERS; i++) {
		snprintf(names[i], sizeof(names[i]), "X-H%zu", i);
		snprintf(values[i], sizeof(values[i]), "v%zu", i);
		r.resp.headers[i].name = names[i];
		r.resp.headers[i].value = i == 3 ? (char *)"" : values[i];
	}
	r.resp.nheaders = REC_MAX_HEADERS;
	round_trip(&r);
}

/* The layout is a contract with data already on disk: pin it. */
static void
test_layout_big_endian(void)
{
	struct buf b;
	struct rec r;
	const uint8_t *p;

	fill_in_progress(&r);
	encode_or_fail(&r, &b);
	p = (const uint8_t *)b.data;
	HARNESS_EQ(b.len, FIXED_LEN);
	HARNESS_EQ(p[OFF_VERSION], REC_VERSION);
	HARNESS_EQ(p[OFF_STATE], REC_IN_PROGRESS);
	HARNESS_EQ(p[2], r.fp[0]);
	/* attempts (u32) sits just before stage, then gen (u64), cplen. */
	HARNESS_EQ(p[OFF_GEN - 8], 0);
	HARNESS_EQ(p[OFF_GEN - 5], 3);
	HARNESS_EQ(p[OFF_GEN - 4], 0x01);
	HARNESS_EQ(p[OFF_GEN - 1], 0x04);
	HARNESS_EQ(p[OFF_GEN], 0);
	HARNESS_EQ(p[OFF_CPLEN - 2], 0x05);
	HARNESS_EQ(p[OFF_CPLEN - 1], 0x06);
	buf_free(&b);
}

/*
 * A record of version 1 (a release before generations: the same layout
 * without gen) still decodes, with gen REC_GEN_LEGACY, and is written
 * again with that value, so a claim in progress across an upgrade keeps
 * the provider key it was charged under.
 */
static void
test_decode_version_1(void)
{
	struct buf b, v1 = BUF_INIT;
	struct rec r, d, d2;

	fill_in_progress(&r);
	r.cp = (uint8_t *)"point";
	r.cplen = 5;
	encode_or_fail(&r, &b);
	HARNESS_EQ(buf_append(&v1, b.data, OFF_GEN), IDEM_OK);
	HARNESS_EQ(buf_append(&v1, b.data + OFF_CPLEN, b.len - OFF_CPLEN),
	    IDEM_OK);
	v1.data[OFF_VERSION] = 1;
	HARNESS_EQ(rec_decode(v1.data, v1.len, &d), IDEM_OK);
	CU_ASSERT(d.gen == REC_GEN_LEGACY);
	r.gen = REC_GEN_LEGACY;
	assert_same(&r, &d);
	buf_free(&b);
	encode_or_fail(&d, &b);
	HARNESS_EQ(b.data[OFF_VERSION], REC_VERSION);
	HARNESS_EQ(rec_decode(b.data, b.len, &d2), IDEM_OK);
	CU_ASSERT(d2.gen == REC_GEN_LEGACY);
	rec_free(&d2);
	rec_free(&d);
	buf_free(&b);
	buf_free(&v1);
}

static void
test_encode_appends(void)
{
	struct buf b = BUF_INIT;
	struct rec r, d;

	fill_in_progress(&r);
	HARNESS_EQ(buf_puts(&b, "prefix"), IDEM_OK);
	HARNESS_EQ(rec_encode(&r, &b), IDEM_OK);
	CU_ASSERT(memcmp(b.data, "prefix", 6) == 0);
	HARNESS_EQ(rec_decode(b.data + 6, b.len - 6, &d), IDEM_OK);
	assert_same(&r, &d);
	rec_free(&d);
	buf_free(&b);
}

static void
test_encode_limits(void)
{
	static uint8_t cp[REC_MAX_CHECKPOINT + 1];
	struct buf b = BUF_INIT;
	struct rec r;

	fill_in_progress(&r);
	r.cp = cp;
	r.cplen = sizeof(cp);
	HARNESS_EQ(rec_encode(&r, &b), IDEM_ETOOBIG);
	HARNESS_EQ(b.len, 0);

	fill_completed(&r);
	r.resp.nheaders = REC_MAX_HEADERS + 1;
	HARNESS_EQ(rec_encode(&r, &b), IDEM_ETOOBIG);
	HARNESS_EQ(b.len, 0);

	fill_completed(&r);
	r.resp.status = 42;
	HARNESS_EQ(rec_encode(&r, &b), IDEM_EINVAL);

	fill_completed(&r);
	r.resp.headers[1].value = NULL;
	HARNESS_EQ(rec_encode(&r, &b), IDEM_EINVAL);

	fill_in_progress(&r);
	r.state = (enum rec_state)7;
	HARNESS_EQ(rec_encode(&r, &b), IDEM_EINVAL);
	HARNESS_EQ(b.len, 0);
	buf_free(&b);
}

static void
test_encode_long_header(void)
{
	struct buf b = BUF_INIT;
	struct rec r;
	char *big;

	big = malloc(UINT16_MAX + 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(big);
	memset(big, 'a', UINT16_MAX + 1);
	big[UINT16_MAX + 1] = '\0';
	fill_completed(&r);
	r.resp.headers[0].value = big;
	HARNESS_EQ(rec_encode(&r, &b), IDEM_ETOOBIG);
	big[UINT16_MAX] = '\0';
	round_trip(&r);
	free(big);
	buf_free(&b);
}

static void
test_decode_unknown_version(void)
{
	struct buf b;
	struct rec r, d;

	fill_in_progress(&r);
	encode_or_fail(&r, &b);
	b.data[OFF_VERSION] = REC_VERSION + 1;
	HARNESS_EQ(rec_decode(b.data, b.len, &d), IDEM_ECORRUPT);
	b.data[OFF_VERSION] = 0;
	HARNESS_EQ(rec_decode(b.data, b.len, &d), IDEM_ECORRUPT);
	buf_free(&b);
}

static void
test_decode_bad_state(void)
{
	struct buf b;
	struct rec r, d;

	fill_in_progress(&r);
	encode_or_fail(&r, &b);
	b.data[OFF_STATE] = 0;
	HARNESS_EQ(rec_decode(b.data, b.len, &d), IDEM_ECORRUPT);
	b.data[OFF_STATE] = 3;
	HARNESS_EQ(rec_decode(b.data, b.len, &d), IDEM_ECORRUPT);
	/* An in-progress record read as completed runs out of bytes. */
	b.data[OFF_STATE] = REC_COMPLETED;
	HARNESS_EQ(rec_decode(b.data, b.len, &d), IDEM_ECORRUPT);
	buf_free(&b);
}

static void
test_decode_trailing(void)
{
	struct buf b;
	struct rec r, d;

	fill_completed(&r);
	encode_or_fail(&r, &b);
	HARNESS_EQ(buf_putc(&b, 0), IDEM_OK);
	HARNESS_EQ(rec_decode(b.data, b.len, &d), IDEM_ECORRUPT);
	buf_free(&b);

	fill_in_progress(&r);
	encode_or_fail(&r, &b);
	HARNESS_EQ(buf_putc(&b, 'x'), IDEM_OK);
	HARNESS_EQ(rec_decode(b.data, b.len, &d), IDEM_ECORRUPT);
	buf_free(&b);
}

/* Every proper prefix of a valid encoding is a truncation. */
static void
test_decode_every_truncation(void)
{
	struct buf b;
	struct rec r, d;
	size_t n, bad = 0;

	fill_completed(&r);
	r.cp = (uint8_t *)cp_bin;
	r.cplen = sizeof(cp_bin);
	encode_or_fail(&r, &b);
	for (n = 0; n < b.len; n++)
		if (rec_decode(b.data, n, &d) != IDEM_ECORRUPT)
			bad++;
	HARNESS_EQ(bad, 0);
	HARNESS_EQ(rec_decode(NULL, 0, &d), IDEM_ECORRUPT);
	buf_free(&b);
}

static void
test_decode_checkpoint_too_big(void)
{
	struct buf b;
	struct rec r, d;
	uint8_t *p;

	fill_in_progress(&r);
	encode_or_fail(&r, &b);
	p = (uint8_t *)b.data;
	p[OFF_CPLEN] = (REC_MAX_CHECKPOINT + 1) >> 8;
	p[OFF_CPLEN + 1] = (REC_MAX_CHECKPOINT + 1) & 0xff;
	/* Give it the bytes, so only the limit can refuse it. */
	HARNESS_EQ(buf_reserve(&b, REC_MAX_CHECKPOINT + 1), IDEM_OK);
	memset(b.data + b.len, 0, REC_MAX_CHECKPOINT + 1);
	b.len += REC_MAX_CHECKPOINT + 1;
	HARNESS_EQ(rec_decode(b.data, b.len, &d), IDEM_ECORRUPT);
	buf_free(&b);
}

/* Builds a completed encoding by hand from after the fixed part. */
static void
completed_prefix(struct buf *b)
{
	struct rec r;

	fill_in_progress(&r);
	encode_or_fail(&r, b);
	b->data[OFF_STATE] = REC_COMPLETED;
}

static void
test_decode_too_many_headers(void)
{
	struct buf b;
	struct rec d;
	int i;

	completed_prefix(&b);
	buf_put_u16(&b, 200);
	buf_put_u8(&b, REC_MAX_HEADERS + 1);
	for (i = 0; i < REC_MAX_HEADERS + 1; i++) {
		buf_put_u16(&b, 1);
		buf_putc(&b, 'a');
		buf_put_u16(&b, 1);
		buf_putc(&b, 'b');
	}
	buf_put_u32(&b, 0);
	HARNESS_EQ(rec_decode(b.data, b.len, &d), IDEM_ECORRUPT);
	buf_free(&b);
}

static void
test_decode_bad_status(void)
{
	struct buf b;
	struct rec d;

	completed_prefix(&b);
	buf_put_u16(&b, 99);
	buf_put_u8(&b, 0);
	buf_put_u32(&b, 0);
	HARNESS_EQ(rec_decode(b.data, b.len, &d), IDEM_ECORRUPT);
	buf_free(&b);

	completed_prefix(&b);
	buf_put_u16(&b, 200);
	buf_put_u8(&b, 0);
	buf_put_u32(&b, 0);
	HARNESS_EQ(rec_decode(b.data, b.len, &d), IDEM_OK);
	rec_free(&d);
	buf_free(&b);
}

/* Header strings become C strings: a NUL inside one is damage. */
static void
test_decode_header_with_nul(void)
{
	struct buf b;
	struct rec d;

	completed_prefix(&b);
	buf_put_u16(&b, 200);
	buf_put_u8(&b, 1);
	buf_put_u16(&b, 3);
	buf_append(&b, "a\0b", 3);
	buf_put_u16(&b, 1);
	buf_putc(&b, 'v');
	buf_put_u32(&b, 0);
	HARNESS_EQ(rec_decode(b.data, b.len, &d), IDEM_ECORRUPT);
	buf_free(&b);
}

/* Lengths far beyond the input must fail before any allocation. */
static void
test_decode_huge_lengths(void)
{
	struct buf b;
	struct rec d;

	completed_prefix(&b);
	buf_put_u16(&b, 200);
	buf_put_u8(&b, 0);
	buf_put_u32(&b, UINT32_MAX);
	buf_append(&b, "short", 5);
	HARNESS_EQ(rec_decode(b.data, b.len, &d), IDEM_ECORRUPT);
	buf_free(&b);

	completed_prefix(&b);
	buf_put_u16(&b, 200);
	buf_put_u8(&b, 1);
	buf_put_u16(&b, UINT16_MAX);
	buf_append(&b, "abc", 3);
	HARNESS_EQ(rec_decode(b.data, b.len, &d), IDEM_ECORRUPT);
	buf_free(&b);
}

/*
 * Flipping each byte of a valid encoding, and feeding pseudo-random
 * garbage, must give IDEM_OK or IDEM_ECORRUPT and nothing else; the
 * sanitizer build catches any read out of bounds or leak on the way.
 */
static void
test_decode_garbage(void)
{
	struct buf b;
	struct rec r, d;
	uint8_t junk[512];
	uint32_t seed = 12345;
	size_t i, j, odd = 0;
	int rc;

	fill_completed(&r);
	encode_or_fail(&r, &b);
	for (i = 0; i < b.len; i++) {
		b.data[i] ^= 0x5a;
		rc = rec_decode(b.data, b.len, &d);
		if (rc == IDEM_OK)
			rec_free(&d);
		else if (rc != IDEM_ECORRUPT)
			odd++;
		b.data[i] ^= 0x5a;
	}
	for (i = 0; i < 2000; i++) {
		for (j = 0; j < sizeof(junk); j++) {
			seed = seed * 1103515245 + 12345;
			junk[j] = (uint8_t)(seed >> 16);
		}
		junk[0] = REC_VERSION;
		junk[1] = (uint8_t)(1 + i % 2);
		rc = rec_decode(junk, (i * 7) % sizeof(junk), &d);
		if (rc == IDEM_OK)
			rec_free(&d);
		else if (rc != IDEM_ECORRUPT)
			odd++;
	}
	HARNESS_EQ(odd, 0);
	buf_free(&b);
}

/* After a failed decode the record is empty and rec_free is harmless. */
static void
test_decode_failure_leaves_empty(void)
{
	struct buf b;
	struct rec r, d;

	fill_completed(&r);
	encode_or_fail(&r, &b);
	HARNESS_EQ(rec_decode(b.data, b.len - 1, &d), IDEM_ECORRUPT);
	CU_ASSERT_PTR_NULL(d.cp);
	CU_ASSERT_PTR_NULL(d.resp.body);
	HARNESS_EQ(d.resp.nheaders, 0);
	rec_free(&d);
	buf_free(&b);
}

/*
 * A decoded record owns its parts in one block: they outlive the
 * encoding, and lie inside the block rec_free releases.
 */
static void
test_decode_one_block(void)
{
	struct rec r, d;
	struct buf b = BUF_INIT;
	const uint8_t *lo, *hi;
	size_t i, len;

	fill_completed(&r);
	HARNESS_EQ(rec_encode(&r, &b), IDEM_OK);
	HARNESS_EQ(rec_decode(b.data, b.len, &d), IDEM_OK);
	len = b.len;
	memset(b.data, 0, b.len);
	buf_free(&b);
	lo = d.mem;
	hi = lo + len + 2 * REC_MAX_HEADERS;
	CU_ASSERT_PTR_NOT_NULL_FATAL(d.mem);
	HARNESS_EQ(d.resp.nheaders, 3);
	for (i = 0; i < d.resp.nheaders; i++) {
		CU_ASSERT((const uint8_t *)d.resp.headers[i].name >= lo &&
		    (const uint8_t *)d.resp.headers[i].name < hi);
		CU_ASSERT((const uint8_t *)d.resp.headers[i].value >= lo &&
		    (const uint8_t *)d.resp.headers[i].value < hi);
	}
	CU_ASSERT_STRING_EQUAL(d.resp.headers[1].value, "/payments/pay_123");
	CU_ASSERT(d.resp.body >= lo && d.resp.body < hi);
	CU_ASSERT(memcmp(d.resp.body, body_bin, sizeof(body_bin)) == 0);
	rec_free(&d);
	CU_ASSERT_PTR_NULL(d.mem);
}

int
harness_suites(void)
{
	CU_pSuite s;

	if ((s = CU_add_suite("record", NULL, NULL)) == NULL)
		return -1;
	if (CU_add_test(s, "round trip in progress",
	    test_round_trip_in_progress) == NULL ||
	    CU_add_test(s, "round trip checkpoint",
	    test_round_trip_checkpoint) == NULL ||
	    CU_add_test(s, "round trip max checkpoint",
	    test_round_trip_max_checkpoint) == NULL ||
	    CU_add_test(s, "round trip completed, binary body",
	    test_round_trip_completed) == NULL ||
	    CU_add_test(s, "round trip completed, empty",
	    test_round_trip_completed_empty) == NULL ||
	    CU_add_test(s, "round trip max headers",
	    test_round_trip_max_headers) == NULL ||
	    CU_add_test(s, "layout big-endian", test_layout_big_endian) ==
	    NULL ||
	    CU_add_test(s, "decode version 1", test_decode_version_1) ==
	    NULL ||
	    CU_add_test(s, "encode appends", test_encode_appends) == NULL ||
	    CU_add_test(s, "encode limits", test_encode_limits) == NULL ||
	    CU_add_test(s, "encode long header", test_encode_long_header) ==
	    NULL ||
	    CU_add_test(s, "decode unknown version",
	    test_decode_unknown_version) == NULL ||
	    CU_add_test(s, "decode bad state", test_decode_bad_state) ==
	    NULL ||
	    CU_add_test(s, "decode trailing bytes", test_decode_trailing) ==
	    NULL ||
	    CU_add_test(s, "decode every truncation",
	    test_decode_every_truncation) == NULL ||
	    CU_add_test(s, "decode checkpoint too big",
	    test_decode_checkpoint_too_big) == NULL ||
	    CU_add_test(s, "decode too many headers",
	    test_decode_too_many_headers) == NULL ||
	    CU_add_test(s, "decode bad status", test_decode_bad_status) ==
	    NULL ||
	    CU_add_test(s, "decode header with NUL",
	    test_decode_header_with_nul) == NULL ||
	    CU_add_test(s, "decode huge lengths", test_decode_huge_lengths) ==
	    NULL ||
	    CU_add_test(s, "decode garbage", test_decode_garbage) == NULL ||
	    CU_add_test(s, "decode failure leaves empty",
	    test_decode_failure_leaves_empty) == NULL ||
	    CU_add_test(s, "decoded parts in one block", test_decode_one_block) == NULL)
		return -1;
	return 0;
}
