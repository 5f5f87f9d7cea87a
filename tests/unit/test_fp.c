/* SPDX-License-Identifier: MIT */
/*
 * test_fp.c: the request fingerprint, and the crypto wall under it.
 *
 * The expected digests were computed independently of this code, with
 * Python's hashlib over the same length-prefixed layout:
 *
 *     import hashlib, struct
 *     def fp(*fields):
 *         h = hashlib.sha256()
 *         for f in [b"idem-fp-v1", *fields]:
 *             h.update(struct.pack(">Q", len(f)) + f)
 *         return h.hexdigest()
 *
 * with fields (method, path, query, body) as given beside each value.
 */
#include <sys/wait.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "crypto.h"
#include "err.h"
#include "fp.h"
#include "harness.h"
#include "json.h"

/* fp(b"", b"", b"", b"") */
#define FP_EMPTY \
	"eb219c8fbf57d96097b6048971beb339d701d30d473295804bc27a2abddb6a62"
/* fp(b"POST", b"/payments", b"", b'{"amount":1e2,"currency":"BRL"}') */
#define FP_POST_CANON \
	"5e9781bef1ffaca2046ce6d7aafb5b1c792efd7d2402b201f57a0dd1578189d8"
/* fp(b"POST", b"/payments", b"", b'{"amount": 100.00, "currency": "BRL"}') */
#define FP_POST_RAW \
	"85d11b7556292c04bbcb8deb66ad550573aa6c32a9ea8a7896dd5404620e0685"
/* fp(b"GET", b"/payments", b"limit=10", b"") */
#define FP_GET_QUERY \
	"761c1a70b903764cabf22bc864f70192a6ce51a8d2e94c275ebbcacad06875ee"
/* fp(b"POST", b"/payments", b"", b"x" * 65536) */
#define FP_POST_64K \
	"5586b48acc38174db9f6e7d190e79478b455170c07ea9ecc6d21b6db81a79759"

#define RAW_BODY "{\"amount\": 100.00, \"currency\": \"BRL\"}"

/* The fingerprint of the arguments, as lowercase hex. */
static void
fp_hex(const char *method, const char *path, const char *query,
    const void *body, size_t bodylen, char hex[2 * FP_SIZE + 1])
{
	uint8_t d[FP_SIZE];

	fp_compute(FP_CANONICAL, method, path, query, body, bodylen, d);
	crypto_hex(d, sizeof(d), hex);
}

/* 1 when the two requests have the same fingerprint. */
static int
fp_same(const char *m1, const char *p1, const char *q1, const char *b1,
    const char *m2, const char *p2, const char *q2, const char *b2)
{
	uint8_t x[FP_SIZE], y[FP_SIZE];

	fp_compute(FP_CANONICAL, m1, p1, q1, b1, strlen(b1), x);
	fp_compute(FP_CANONICAL, m2, p2, q2, b2, strlen(b2), y);
	return memcmp(x, y, FP_SIZE) == 0;
}

/* The fingerprint of a POST /payments whose body is hashed canonically. */
static void
fp_canon_hex(const char *body, char hex[2 * FP_SIZE + 1])
{
	struct json_value *v = NULL;
	struct buf b = BUF_INIT;

	HARNESS_EQ(json_parse(body, strlen(body), &v, NULL, 0), JSON_OK);
	HARNESS_EQ(json_canonical(v, &b), IDEM_OK);
	fp_hex("POST", "/payments", "", b.data, b.len, hex);
	json_free(v);
	buf_free(&b);
}

static int
fp_suite_init(void)
{
	return crypto_init() == IDEM_OK ? 0 : -1;
}

static void
test_known_empty(void)
{
	char hex[2 * FP_SIZE + 1];

	fp_hex("", "", "", "", 0, hex);
	CU_ASSERT_STRING_EQUAL(hex, FP_EMPTY);
}

static void
test_known_post(void)
{
	char hex[2 * FP_SIZE + 1];
	const char *canon = "{\"amount\":1e2,\"currency\":\"BRL\"}";

	fp_hex("POST", "/payments", "", canon, strlen(canon), hex);
	CU_ASSERT_STRING_EQUAL(hex, FP_POST_CANON);
	fp_hex("POST", "/payments", "", RAW_BODY, strlen(RAW_BODY), hex);
	CU_ASSERT_STRING_EQUAL(hex, FP_POST_RAW);
}

static void
test_known_query(void)
{
	char hex[2 * FP_SIZE + 1];

	fp_hex("GET", "/payments", "limit=10", NULL, 0, hex);
	CU_ASSERT_STRING_EQUAL(hex, FP_GET_QUERY);
}

static void
test_known_large_body(void)
{
	static char body[65536];
	char hex[2 * FP_SIZE + 1];

	/* The default body limit: the 8-byte length covers any size. */
	memset(body, 'x', sizeof(body));
	fp_hex("POST", "/payments", "", body, sizeof(body), hex);
	CU_ASSERT_STRING_EQUAL(hex, FP_POST_64K);
}

static void
test_not_plain_sha256(void)
{
	uint8_t d[CRYPTO_SHA256_SIZE], f[FP_SIZE];

	/*
	 * The fingerprint is not the hash of the fields run together, which
	 * neighbouring fields could collide, and it is the same every call.
	 */
	crypto_sha256("POST/payments{}", 15, d);
	fp_compute(FP_CANONICAL, "POST", "/payments", "", "{}", 2, f);
	CU_ASSERT(memcmp(d, f, FP_SIZE) != 0);
	fp_compute(FP_CANONICAL, "POST", "/payments", "", "{}", 2, d);
	CU_ASSERT(memcmp(d, f, FP_SIZE) == 0);
	/* The query is hashed as sent: reordering it is another request. */
	CU_ASSERT(!fp_same("GET", "/p", "a=1&b=2", "", "GET", "/p", "b=2&a=1",
	    ""));
}

static void
test_null_is_empty(void)
{
	char a[2 * FP_SIZE + 1], b[2 * FP_SIZE + 1];

	/* CGI may leave QUERY_STRING unset or empty for one request. */
	fp_hex(NULL, NULL, NULL, NULL, 0, a);
	CU_ASSERT_STRING_EQUAL(a, FP_EMPTY);
	fp_hex("POST", "/payments", NULL, "x", 0, a);
	fp_hex("POST", "/payments", "", NULL, 0, b);
	CU_ASSERT_STRING_EQUAL(a, b);
}

static void
test_boundary_shifts(void)
{
	/* Moving bytes from one field to its neighbour is a new request. */
	CU_ASSERT(!fp_same("POST", "/a", "", "", "POS", "T/a", "", ""));
	CU_ASSERT(!fp_same("GET", "/pay", "ments", "", "GET", "/payments",
	    "", ""));
	CU_ASSERT(!fp_same("GET", "/p", "a", "b", "GET", "/p", "ab", ""));
	CU_ASSERT(!fp_same("GET", "/p", "a", "b", "GET", "/p", "", "ab"));
	CU_ASSERT(!fp_same("GET", "/p", "", "", "GET", "", "/p", ""));
	CU_ASSERT(!fp_same("", "", "", "x", "x", "", "", ""));
}

static void
test_each_field_counts(void)
{
	const char *base[4] = { "POST", "/payments", "a=1", "{}" };

	CU_ASSERT(fp_same(base[0], base[1], base[2], base[3],
	    "POST", "/payments", "a=1", "{}"));
	CU_ASSERT(!fp_same(base[0], base[1], base[2], base[3],
	    "PUT", "/payments", "a=1", "{}"));
	CU_ASSERT(!fp_same(base[0], base[1], base[2], base[3],
	    "POST", "/payment", "a=1", "{}"));
	CU_ASSERT(!fp_same(base[0], base[1], base[2], base[3],
	    "POST", "/payments", "a=2", "{}"));
	CU_ASSERT(!fp_same(base[0], base[1], base[2], base[3],
	    "POST", "/payments", "a=1", "{ }"));
	/* Case matters: the method and path are compared as sent. */
	CU_ASSERT(!fp_same(base[0], base[1], base[2], base[3],
	    "post", "/payments", "a=1", "{}"));
}

static void
test_body_length_not_strlen(void)
{
	uint8_t x[FP_SIZE], y[FP_SIZE];

	fp_compute(FP_CANONICAL, "POST", "/p", "", "a\0b", 3, x);
	fp_compute(FP_CANONICAL, "POST", "/p", "", "a\0c", 3, y);
	CU_ASSERT(memcmp(x, y, FP_SIZE) != 0);
	fp_compute(FP_CANONICAL, "POST", "/p", "", "a\0b", 1, y);
	CU_ASSERT(memcmp(x, y, FP_SIZE) != 0);
}

static void
test_canonical_vs_raw(void)
{
	char raw1[2 * FP_SIZE + 1], raw2[2 * FP_SIZE + 1];
	char can1[2 * FP_SIZE + 1], can2[2 * FP_SIZE + 1];
	const char *again = "{\"currency\":\"BRL\",\"amount\":1.000E+2}";

	/* A retry that re-serialises the payload: raw differs... */
	fp_hex("POST", "/payments", "", RAW_BODY, strlen(RAW_BODY), raw1);
	fp_hex("POST", "/payments", "", again, strlen(again), raw2);
	CU_ASSERT_STRING_NOT_EQUAL(raw1, raw2);
	/* ...canonical agrees, and matches the independent digest. */
	fp_canon_hex(RAW_BODY, can1);
	fp_canon_hex(again, can2);
	CU_ASSERT_STRING_EQUAL(can1, can2);
	CU_ASSERT_STRING_EQUAL(can1, FP_POST_CANON);
	CU_ASSERT_STRING_NOT_EQUAL(can1, raw1);
}

/*
 * The mode is part of the input: the same body bytes hashed as received
 * and as a canonical form (which "{}" already is) are different inputs.
 */
static void
test_mode_in_input(void)
{
	uint8_t raw[FP_SIZE], canon[FP_SIZE], again[FP_SIZE];

	fp_compute(FP_RAW, "POST", "/payments", "", "{}", 2, raw);
	fp_compute(FP_CANONICAL, "POST", "/payments", "", "{}", 2, canon);
	fp_compute(FP_RAW, "POST", "/payments", "", "{}", 2, again);
	CU_ASSERT(memcmp(raw, canon, FP_SIZE) != 0);
	CU_ASSERT(memcmp(raw, again, FP_SIZE) == 0);
}

static void
test_canonical_string_amount_differs(void)
{
	char a[2 * FP_SIZE + 1], b[2 * FP_SIZE + 1];

	fp_canon_hex("{\"amount\":\"100\",\"currency\":\"BRL\"}", a);
	fp_canon_hex("{\"amount\":100,\"currency\":\"BRL\"}", b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
	fp_canon_hex("{\"amount\":100.01,\"currency\":\"BRL\"}", a);
	fp_canon_hex("{\"amount\":100.1,\"currency\":\"BRL\"}", b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
}

static void
test_mode_parse(void)
{
	enum fp_mode m;

	m = FP_RAW;
	HARNESS_EQ(fp_mode_parse("canonical", &m), IDEM_OK);
	HARNESS_EQ(m, FP_CANONICAL);
	HARNESS_EQ(fp_mode_parse("raw", &m), IDEM_OK);
	HARNESS_EQ(m, FP_RAW);

	/* A typo in the configuration is an error, never a default. */
	m = FP_RAW;
	HARNESS_EQ(fp_mode_parse("Raw", &m), IDEM_EINVAL);
	HARNESS_EQ(fp_mode_parse("", &m), IDEM_EINVAL);
	HARNESS_EQ(fp_mode_parse("canonical ", &m), IDEM_EINVAL);
	HARNESS_EQ(fp_mode_parse("canon", &m), IDEM_EINVAL);
	HARNESS_EQ(fp_mode_parse(NULL, &m), IDEM_EINVAL);
	HARNESS_EQ(m, FP_RAW);
}

static void
test_sha256_vectors(void)
{
	uint8_t d[CRYPTO_SHA256_SIZE];
	char hex[2 * CRYPTO_SHA256_SIZE + 1];
	struct crypto_sha256 h;

	/* FIPS 180-2 appendix B.1, and the empty string. */
	crypto_sha256("abc", 3, d);
	crypto_hex(d, sizeof(d), hex);
	CU_ASSERT_STRING_EQUAL(hex, "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad");
	crypto_sha256("", 0, d);
	crypto_hex(d, sizeof(d), hex);
	CU_ASSERT_STRING_EQUAL(hex, "e3b0c44298fc1c149afbf4c8996fb924"
	    "27ae41e4649b934ca495991b7852b855");

	/* Incremental updates hash the concatenation. */
	crypto_sha256_init(&h);
	crypto_sha256_update(&h, "a", 1);
	crypto_sha256_update(&h, NULL, 0);
	crypto_sha256_update(&h, "bc", 2);
	crypto_sha256_final(&h, d);
	crypto_hex(d, sizeof(d), hex);
	CU_ASSERT_STRING_EQUAL(hex, "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad");
}

static void
test_hex_roundtrip(void)
{
	const uint8_t in[4] = { 0x00, 0x9f, 0xa0, 0xff };
	uint8_t out[4];
	char hex[9];

	crypto_hex(in, sizeof(in), hex);
	CU_ASSERT_STRING_EQUAL(hex, "009fa0ff");
	HARNESS_EQ(crypto_unhex(hex, out, sizeof(out)), IDEM_OK);
	CU_ASSERT(memcmp(in, out, sizeof(in)) == 0);
	HARNESS_EQ(crypto_unhex("009FA0FF", out, sizeof(out)), IDEM_OK);
	CU_ASSERT(memcmp(in, out, sizeof(in)) == 0);
	HARNESS_EQ(crypto_unhex("009fa0f", out, sizeof(out)), IDEM_EINVAL);
	HARNESS_EQ(crypto_unhex("009fa0fg", out, sizeof(out)), IDEM_EINVAL);
	HARNESS_EQ(crypto_unhex("", out, sizeof(out)), IDEM_EINVAL);
}

static void
test_equal_and_random(void)
{
	uint8_t a[32], b[32];

	CU_ASSERT(crypto_equal("abcd", "abcd", 4));
	CU_ASSERT(!crypto_equal("abcd", "abce", 4));
	CU_ASSERT(crypto_equal("x", "y", 0));
	crypto_random(a, sizeof(a));
	crypto_random(b, sizeof(b));
	/* Two 256-bit draws collide with probability 2^-256. */
	CU_ASSERT(memcmp(a, b, sizeof(a)) != 0);
}

/* Draws of 16 bytes, across several refills of a thread's pool. */
#define DRAWS 200

static int
cmp16(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

/*
 * Every small draw is fresh: no two of many 16-byte draws (more than a
 * pool holds, so refills are crossed) are equal, nor is any all zero
 * (a pool handed out twice, or wiped before use, would show).
 */
static void
test_random_draws_distinct(void)
{
	static const uint8_t zero[16];
	uint8_t (*d)[16] = calloc(DRAWS, 16);
	size_t i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	for (i = 0; i < DRAWS; i++) {
		/* Odd sizes between the draws move the pool's position. */
		uint8_t skip[7];

		crypto_random(d[i], 16);
		crypto_random(skip, 1 + i % sizeof(skip));
	}
	qsort(d, DRAWS, 16, cmp16);
	for (i = 0; i < DRAWS; i++) {
		CU_ASSERT(memcmp(d[i], zero, 16) != 0);
		if (i > 0)
			CU_ASSERT(memcmp(d[i - 1], d[i], 16) != 0);
	}
	free(d);
}

/*
 * A fork child does not hand out the bytes its parent's pool still
 * holds: after a fork, parent and child draw different bytes.
 */
static void
test_random_fork(void)
{
	uint8_t mine[16], theirs[16], warm[1];
	int fds[2], status;
	pid_t pid;

	crypto_random(warm, sizeof(warm));      /* the pool is full now */
	CU_ASSERT_FATAL(pipe(fds) == 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		crypto_random(theirs, sizeof(theirs));
		_exit(write(fds[1], theirs, sizeof(theirs)) ==
		    (ssize_t)sizeof(theirs) ? 0 : 1);
	}
	close(fds[1]);
	crypto_random(mine, sizeof(mine));
	HARNESS_EQ(read(fds[0], theirs, sizeof(theirs)),
	    (ssize_t)sizeof(theirs));
	close(fds[0]);
	CU_ASSERT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0);
	CU_ASSERT(memcmp(mine, theirs, sizeof(mine)) != 0);
}

int
harness_suites(void)
{
	CU_pSuite s, c;

	if ((s = CU_add_suite("fp", fp_suite_init, NULL)) == NULL ||
	    (c = CU_add_suite("crypto", fp_suite_init, NULL)) == NULL)
		return -1;
	if (CU_add_test(s, "known digest, empty", test_known_empty) == NULL ||
	    CU_add_test(s, "known digest, POST", test_known_post) == NULL ||
	    CU_add_test(s, "known digest, query", test_known_query) == NULL ||
	    CU_add_test(s, "known digest, 64 KiB body",
	    test_known_large_body) == NULL ||
	    CU_add_test(s, "not plain SHA-256", test_not_plain_sha256) ==
	    NULL ||
	    CU_add_test(s, "NULL is empty", test_null_is_empty) == NULL ||
	    CU_add_test(s, "boundary shifts", test_boundary_shifts) == NULL ||
	    CU_add_test(s, "each field counts", test_each_field_counts) ==
	    NULL ||
	    CU_add_test(s, "body length, not strlen",
	    test_body_length_not_strlen) == NULL ||
	    CU_add_test(s, "canonical vs raw", test_canonical_vs_raw) ==
	    NULL ||
	    CU_add_test(s, "mode in the input", test_mode_in_input) == NULL ||
	    CU_add_test(s, "\"100\" and 100 differ",
	    test_canonical_string_amount_differs) == NULL ||
	    CU_add_test(s, "mode parse", test_mode_parse) == NULL)
		return -1;
	if (CU_add_test(c, "SHA-256 vectors", test_sha256_vectors) == NULL ||
	    CU_add_test(c, "hex round trip", test_hex_roundtrip) == NULL ||
	    CU_add_test(c, "equal and random", test_equal_and_random) == NULL ||
	    CU_add_test(c, "random: small draws distinct",
	    test_random_draws_distinct) == NULL ||
	    CU_add_test(c, "random: a fork child draws anew",
	    test_random_fork) == NULL)
		return -1;
	return 0;
}
