/* SPDX-License-Identifier: MIT */
/*
 * test_payment.c: the texts a payment's answer is made of, which must be
 * exactly what the printf formats they are written without would print,
 * the provider key it is charged under, and the fingerprint of its
 * request with the members its route leaves out.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "err.h"
#include "harness.h"
#include "keyed.h"
#include "payment.h"
#include "routes.h"

/* pay_time as the format "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ" has it. */
static void
time_by_printf(uint64_t ms, char out[64])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	CU_ASSERT_PTR_NOT_NULL_FATAL(gmtime_r(&t, &tm));
	snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, (unsigned)(ms % 1000));
}

static void
test_time(void)
{
	/* Every field at its narrowest and widest, and 5-digit years. */
	static const uint64_t when[] = {
		0, 1, 9, 10, 99, 100, 999, 1000, 59999, 60000, 3599999,
		86399999, 86400000, 951782400000ULL,	/* 2000-02-29 */
		1767225599999ULL, 1767225600000ULL,	/* the new year 2026 */
		1785398400123ULL, 253402300799999ULL,	/* 9999-12-31 */
		253402300800000ULL, 2534023008000000ULL,
	};
	char want[64], got[64];
	uint64_t ms;
	size_t i;

	for (i = 0; i < sizeof(when) / sizeof(when[0]); i++) {
		time_by_printf(when[i], want);
		pay_time(when[i], got);
		CU_ASSERT_STRING_EQUAL(got, want);
	}
	/* A second's worth of milliseconds, then days across the years. */
	for (ms = 1767225599000ULL; ms < 1767225601000ULL; ms += 7) {
		time_by_printf(ms, want);
		pay_time(ms, got);
		CU_ASSERT_STRING_EQUAL(got, want);
	}
	for (ms = 0; ms < 4102444800000ULL; ms += 86400000ULL * 13 + 3661001) {
		time_by_printf(ms, want);
		pay_time(ms, got);
		CU_ASSERT_STRING_EQUAL(got, want);
	}
}

static void
test_etag(void)
{
	static const char *const bodies[] = { "", "{}", "{\"id\":\"pay_1\"}" };
	uint8_t d[CRYPTO_SHA256_SIZE];
	char hex[2 * CRYPTO_SHA256_SIZE + 1], want[PAY_ETAG_SIZE];
	char got[PAY_ETAG_SIZE];
	size_t i, n;

	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		n = strlen(bodies[i]);
		crypto_sha256(bodies[i], n, d);
		crypto_hex(d, sizeof(d), hex);
		snprintf(want, sizeof(want), "\"%.16s\"", hex);
		memset(got, 'x', sizeof(got));
		pay_etag(bodies[i], n, got);
		CU_ASSERT_STRING_EQUAL(got, want);
	}
	/* SHA-256("") begins e3b0c442 98fc1c14. */
	pay_etag("", 0, got);
	CU_ASSERT_STRING_EQUAL(got, "\"e3b0c44298fc1c14\"");
}

/*
 * The provider key: from scope, key, a fingerprint's first 16 bytes and
 * the generation; a claim of a release before generations keeps its
 * claim-time key.  Both are contracts with a provider's ledger: pin them.
 */
static void
test_provider_key(void)
{
	uint8_t fp[IDEM_FP_SIZE];
	struct buf b = BUF_INIT;
	size_t i;

	for (i = 0; i < sizeof(fp); i++)
		fp[i] = (uint8_t)(0xf0 + i);
	HARNESS_EQ(keyed_provider_key_of("charge", "acct_a", "k-1", fp, 0,
	    1796042096789ULL, &b), IDEM_OK);
	HARNESS_EQ(buf_putc(&b, '\0'), IDEM_OK);
	CU_ASSERT_STRING_EQUAL((char *)b.data, "charge:acct_a:k-1:"
	    "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff:0");
	b.len = 0;
	HARNESS_EQ(keyed_provider_key_of("refund", "acct_a", "k-1", fp, 12,
	    1796042096789ULL, &b), IDEM_OK);
	HARNESS_EQ(buf_putc(&b, '\0'), IDEM_OK);
	CU_ASSERT_STRING_EQUAL((char *)b.data, "refund:acct_a:k-1:"
	    "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff:12");
	b.len = 0;
	HARNESS_EQ(keyed_provider_key_of("charge", "acct_a", "k-1", fp,
	    IDEM_GEN_LEGACY, 1796042096789ULL, &b), IDEM_OK);
	HARNESS_EQ(buf_putc(&b, '\0'), IDEM_OK);
	CU_ASSERT_STRING_EQUAL((char *)b.data,
	    "charge:acct_a:k-1:1796042096789");
	buf_free(&b);
}

static void
test_id_shape(void)
{
	CU_ASSERT(pay_id_valid("pay_0123456789abcdef01234567"));
	CU_ASSERT(!pay_id_valid("pay_0123456789abcdef0123456"));
	CU_ASSERT(!pay_id_valid("pay_0123456789abcdef012345678"));
	CU_ASSERT(!pay_id_valid("pay_0123456789ABCDEF01234567"));
	CU_ASSERT(!pay_id_valid("pay_0123456789abcdeg01234567"));
	CU_ASSERT(!pay_id_valid("pay_0123456789abcde/01234567"));
	CU_ASSERT(!pay_id_valid("pay_0123456789abcde:01234567"));
	CU_ASSERT(!pay_id_valid("pax_0123456789abcdef01234567"));
	CU_ASSERT(!pay_id_valid("re_0123456789abcdef012345678"));
	CU_ASSERT(!pay_id_valid(""));
	CU_ASSERT(pay_id_shape("re_00ff", "re_", 7));
	CU_ASSERT(!pay_id_shape("re_00fF", "re_", 7));
	CU_ASSERT(!pay_id_shape("re_00ff", "pay_", 7));
}

/*
 * Fingerprints of POST /payments that releases before fingerprint
 * exclusions stored: the canonical and the raw fingerprint of FP_BODY,
 * computed independently with Python's hashlib over fp.c's layout (see
 * tests/unit/test_fp.c), tagged "idem-fp-v1" over the canonical form
 * {"amount":1e2,"currency":"BRL"} and "idem-fp-v1-raw" over the bytes.
 */
#define FP_BODY "{\"amount\": 100.00, \"currency\": \"BRL\"}"
#define FP_BODY_CANON \
	"5e9781bef1ffaca2046ce6d7aafb5b1c792efd7d2402b201f57a0dd1578189d8"
#define FP_BODY_RAW \
	"a6d76179816239919ad3a0fb3c035e7510074d509c74d15f340b1be987db1b01"

/* keyed_fingerprint of a POST /payments of body, in hex. */
static void
fp_of(enum idem_fp_mode mode, const char *body, char hex[2 * IDEM_FP_SIZE + 1])
{
	struct request req;
	struct json_value *doc = NULL;
	uint8_t fp[IDEM_FP_SIZE];

	memset(&req, 0, sizeof(req));
	req.method = (char *)"POST";
	req.path = (char *)"/payments";
	req.query = (char *)"";
	req.body.data = (char *)body;
	req.body.len = strlen(body);
	CU_ASSERT_FATAL(json_parse(body, strlen(body), &doc, NULL, 0) ==
	    JSON_OK);
	CU_ASSERT_EQUAL_FATAL(keyed_fingerprint(mode, &req, doc,
	    routes[ROUTE_PAYMENT_CREATE].fp_ignore, fp), IDEM_OK);
	crypto_hex(fp, sizeof(fp), hex);
	json_free(doc);
}

/* A body that names no member the route leaves out hashes as before. */
static void
test_fp_unchanged(void)
{
	char hex[2 * IDEM_FP_SIZE + 1];

	fp_of(IDEM_FP_CANONICAL, FP_BODY, hex);
	CU_ASSERT_STRING_EQUAL(hex, FP_BODY_CANON);
	fp_of(IDEM_FP_RAW, FP_BODY, hex);
	CU_ASSERT_STRING_EQUAL(hex, FP_BODY_RAW);
}

/*
 * A body that differs only in the members the route leaves out, added,
 * changed or in another place, has the stored fingerprint in both
 * modes; a body that differs anywhere else has another.
 */
static void
test_fp_exclusions(void)
{
	static const char *const same[] = {
		"{\"amount\": 100.00, \"currency\": \"BRL\", \"trace_id\": "
		    "\"4bf92f3577b34da6\"}",
		"{\"trace_id\": 7, \"amount\": 100.00, \"currency\": \"BRL\"}",
		"{\"amount\": 100.00, \"client_timestamp\": "
		    "\"2026-12-02T11:00:00Z\", \"currency\": \"BRL\"}",
		"{\"amount\": 100.00, \"currency\": \"BRL\", \"trace\\u005fid\":"
		    " \"\\\", \\\"amount\\\": 1\", \"client_timestamp\": 1}",
	};
	static const char *const other[] = {
		"{\"amount\": 100.01, \"currency\": \"BRL\", \"trace_id\": 1}",
		"{\"amount\": 100.00, \"currency\": \"USD\", \"trace_id\": 1}",
		"{\"amount\": 100.00, \"currency\": \"BRL\", \"trace_id \": 1}",
		"{\"amount\": 100.00, \"currency\": \"BRL\", \"Trace_id\": 1}",
		("{\"amount\": 100.00, \"currency\": \"BRL\", \"metadata\": "
		    "{\"trace_id\": 1}}"),
	};
	char hex[2 * IDEM_FP_SIZE + 1];
	size_t i;

	for (i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		fp_of(IDEM_FP_CANONICAL, same[i], hex);
		CU_ASSERT_STRING_EQUAL(hex, FP_BODY_CANON);
		fp_of(IDEM_FP_RAW, same[i], hex);
		CU_ASSERT_STRING_EQUAL(hex, FP_BODY_RAW);
	}
	for (i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		fp_of(IDEM_FP_CANONICAL, other[i], hex);
		CU_ASSERT_STRING_NOT_EQUAL(hex, FP_BODY_CANON);
		fp_of(IDEM_FP_RAW, other[i], hex);
		CU_ASSERT_STRING_NOT_EQUAL(hex, FP_BODY_RAW);
	}
}

/* Every member a client sends to say what to pay still counts. */
static void
test_fp_ignore_names(void)
{
	static const char *const counted[] = { "amount", "currency",
	    "description", "metadata", "customer", "source", NULL };
	const char *const *n;
	size_t i, r;

	for (r = 0; r < ROUTE__MAX; r++)
		for (n = routes[r].fp_ignore; n != NULL && *n != NULL; n++) {
			CU_ASSERT(routes[r].keyed);
			for (i = 0; counted[i] != NULL; i++)
				CU_ASSERT_STRING_NOT_EQUAL(*n, counted[i]);
		}
}

int
harness_suites(void)
{
	CU_pSuite s;

	if (crypto_init() != IDEM_OK ||
	    (s = CU_add_suite("payment", NULL, NULL)) == NULL ||
	    CU_add_test(s, "time as printf", test_time) == NULL ||
	    CU_add_test(s, "etag as printf", test_etag) == NULL ||
	    CU_add_test(s, "provider key", test_provider_key) == NULL ||
	    CU_add_test(s, "id shapes", test_id_shape) == NULL ||
	    CU_add_test(s, "fingerprints stored before exclusions",
	    test_fp_unchanged) == NULL ||
	    CU_add_test(s, "fingerprint exclusions", test_fp_exclusions) ==
	    NULL ||
	    CU_add_test(s, "no member that says what to pay is excluded",
	    test_fp_ignore_names) == NULL)
		return -1;
	return 0;
}
