/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the HTTP adapter: reading a request from CGI
 * meta-variables and a body, writing a CGI response, problem+json.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "crypto.h"
#include "err.h"
#include "harness.h"
#include "json.h"
#include "problem.h"
#include "request.h"
#include "response.h"

/* A request's meta-variables as NAME=value strings, NULL-terminated. */
struct fake {
	const char *const *vars;
	const char *body;
	size_t off, len;
	size_t chunk; /* bytes per read, to exercise short reads */
};

static const char *
fake_param(void *ctx, const char *name)
{
	struct fake *f = ctx;
	size_t n = strlen(name);
	const char *const *v;

	for (v = f->vars; *v != NULL; v++)
		if (strncmp(*v, name, n) == 0 && (*v)[n] == '=')
			return *v + n + 1;
	return NULL;
}

static long
fake_read(void *ctx, void *buf, size_t len)
{
	struct fake *f = ctx;
	size_t n = f->len - f->off;

	if (n > len)
		n = len;
	if (f->chunk > 0 && n > f->chunk)
		n = f->chunk;
	memcpy(buf, f->body + f->off, n);
	f->off += n;
	return (long)n;
}

static enum req_status
fake_request(struct request *r, const char *const *vars, const char *body,
    size_t limit, const char *mount)
{
	struct fake f = { vars, body, 0, body ? strlen(body) : 0, 3 };

	return req_read(r, fake_param, &f, fake_read, &f, limit, mount);
}

static void
test_read_full(void)
{
	const char *vars[] = { "REQUEST_METHOD=POST", "SCRIPT_NAME=",
	    "PATH_INFO=/payments", "QUERY_STRING=a=1",
	    "CONTENT_TYPE=application/json", "CONTENT_LENGTH=11",
	    "HTTP_IDEMPOTENCY_KEY=\"k\"", "HTTP_AUTHORIZATION=Bearer x",
	    "REMOTE_ADDR=127.0.0.1", NULL };
	struct request r;

	HARNESS_EQ(fake_request(&r, vars, "{\"a\": 1.50}", 100, NULL), REQ_OK);
	CU_ASSERT_STRING_EQUAL(r.method, "POST");
	CU_ASSERT_STRING_EQUAL(r.path, "/payments");
	CU_ASSERT_STRING_EQUAL(r.query, "a=1");
	CU_ASSERT_STRING_EQUAL(r.idempotency_key, "\"k\"");
	CU_ASSERT_STRING_EQUAL(r.authorization, "Bearer x");
	CU_ASSERT_PTR_NULL(r.remote_user);
	HARNESS_EQ(r.body.len, 11);
	CU_ASSERT_NSTRING_EQUAL(r.body.data, "{\"a\": 1.50}", 11);
	req_free(&r);
}

static void
test_read_path_joins_script_name(void)
{
	const char *vars[] = { "REQUEST_METHOD=GET", "SCRIPT_NAME=/payments",
	    "PATH_INFO=/pay_1", NULL };
	struct request r;

	HARNESS_EQ(fake_request(&r, vars, NULL, 100, NULL), REQ_OK);
	CU_ASSERT_STRING_EQUAL(r.path, "/payments/pay_1");
	CU_ASSERT_STRING_EQUAL(r.query, "");
	req_free(&r);
}

static void
test_read_mount_stripped_only_at_boundary(void)
{
	const char *a[] = { "REQUEST_METHOD=GET", "SCRIPT_NAME=/api",
	    "PATH_INFO=/payments", NULL };
	const char *b[] = { "REQUEST_METHOD=GET", "SCRIPT_NAME=/apix/payments",
	    NULL };
	struct request r;

	HARNESS_EQ(fake_request(&r, a, NULL, 100, "/api"), REQ_OK);
	CU_ASSERT_STRING_EQUAL(r.path, "/payments");
	req_free(&r);
	HARNESS_EQ(fake_request(&r, b, NULL, 100, "/api"), REQ_OK);
	CU_ASSERT_STRING_EQUAL(r.path, "/apix/payments");
	req_free(&r);
}

static void
test_read_too_large_before_reading(void)
{
	const char *vars[] = { "REQUEST_METHOD=POST", "PATH_INFO=/payments",
	    "CONTENT_LENGTH=101", NULL };
	struct request r;

	/* The declared length alone decides: no body byte is read. */
	HARNESS_EQ(fake_request(&r, vars, "", 100, NULL), REQ_TOO_LARGE);
	req_free(&r);
}

/*
 * A decimal length too large to represent is a body too large (413), not
 * a malformed header: 2^64-1 and beyond, and nothing is read.
 */
static void
test_read_huge_length_too_large(void)
{
	static const char *const huge[] = {
	    "CONTENT_LENGTH=18446744073709551615",
	    "CONTENT_LENGTH=18446744073709551616",
	    "CONTENT_LENGTH=99999999999999999999999", NULL };
	const char *vars[] = { "REQUEST_METHOD=POST", "PATH_INFO=/payments",
	    NULL, NULL };
	struct request r;
	size_t i, n;

	for (i = 0; huge[i] != NULL; i++) {
		vars[2] = huge[i];
		HARNESS_EQ(fake_request(&r, vars, "", 65536, NULL),
		    REQ_TOO_LARGE);
		req_free(&r);
		HARNESS_EQ(req_parse_length(huge[i] + 15, &n), 0);
		HARNESS_EQ(n, SIZE_MAX);
	}
}

static void
test_read_limit_is_inclusive(void)
{
	const char *vars[] = { "REQUEST_METHOD=POST", "PATH_INFO=/payments",
	    "CONTENT_LENGTH=4", NULL };
	struct request r;

	HARNESS_EQ(fake_request(&r, vars, "1234", 4, NULL), REQ_OK);
	HARNESS_EQ(r.body.len, 4);
	req_free(&r);
}

static void
test_read_short_body(void)
{
	const char *vars[] = { "REQUEST_METHOD=POST", "PATH_INFO=/payments",
	    "CONTENT_LENGTH=40", NULL };
	struct request r;

	HARNESS_EQ(fake_request(&r, vars, "{}", 100, NULL), REQ_SHORT_BODY);
	req_free(&r);
}

static void
test_read_bad_lengths(void)
{
	static const char *const bad[] = { "CONTENT_LENGTH=-1",
	    "CONTENT_LENGTH=1e3", "CONTENT_LENGTH= 5", "CONTENT_LENGTH=5 ",
	    "CONTENT_LENGTH=0x10",
	    NULL };
	const char *vars[] = { "REQUEST_METHOD=POST", NULL, NULL };
	struct request r;
	size_t i;

	for (i = 0; bad[i] != NULL; i++) {
		vars[1] = bad[i];
		HARNESS_EQ(fake_request(&r, vars, "12345", 100, NULL),
		    REQ_BAD_LENGTH);
		req_free(&r);
	}
}

static void
test_read_bad_method(void)
{
	const char *none[] = { "PATH_INFO=/payments", NULL };
	const char *lower[] = { "REQUEST_METHOD=post", NULL };
	struct request r;

	HARNESS_EQ(fake_request(&r, none, NULL, 100, NULL), REQ_BAD_METHOD);
	req_free(&r);
	HARNESS_EQ(fake_request(&r, lower, NULL, 100, NULL), REQ_BAD_METHOD);
	req_free(&r);
}

static void
test_parse_length(void)
{
	size_t n = 7;

	HARNESS_EQ(req_parse_length("0", &n), 0);
	HARNESS_EQ(n, 0);
	HARNESS_EQ(req_parse_length("65536", &n), 0);
	HARNESS_EQ(n, 65536);
	HARNESS_EQ(req_parse_length("", &n), -1);
	HARNESS_EQ(req_parse_length("+1", &n), -1);
	HARNESS_EQ(req_parse_length(NULL, &n), -1);
}

static void
test_is_json(void)
{
	CU_ASSERT_TRUE(req_is_json("application/json"));
	CU_ASSERT_TRUE(req_is_json("application/json; charset=utf-8"));
	CU_ASSERT_TRUE(req_is_json("Application/JSON"));
	CU_ASSERT_TRUE(req_is_json("application/merge-patch+json"));
	CU_ASSERT_FALSE(req_is_json("text/plain"));
	CU_ASSERT_FALSE(req_is_json("application/jsonx"));
	CU_ASSERT_FALSE(req_is_json("+json"));
	CU_ASSERT_FALSE(req_is_json(NULL));
}

static int
collect(void *ctx, const void *data, size_t len)
{
	return buf_append(ctx, data, len) == IDEM_OK ? 0 : -1;
}

static void
test_write_cgi_response(void)
{
	struct response r;
	struct buf out = BUF_INIT;

	resp_init(&r);
	r.status = 201;
	CU_ASSERT_EQUAL(resp_header(&r, "Location", "/payments/%s", "p1"),
	    IDEM_OK);
	CU_ASSERT_EQUAL(resp_header(&r, "location", "/payments/%s", "p2"),
	    IDEM_OK);
	buf_puts(&r.body, "{}");
	HARNESS_EQ(resp_write(&r, collect, &out), IDEM_OK);
	CU_ASSERT_STRING_EQUAL(out.data, "Status: 201 Created\r\n"
	    "Location: /payments/p2\r\nContent-Length: 2\r\n\r\n{}");
	buf_free(&out);
	resp_free(&r);
}

/*
 * Headers beyond what the response holds in itself (long values, many
 * replacements) are kept all the same, in order, and a reset response
 * starts again with none.
 */
static void
test_headers_beyond_room(void)
{
	struct response r;
	struct buf out = BUF_INIT, want = BUF_INIT;
	char name[16], value[400];
	int i, round;

	resp_init(&r);
	for (round = 0; round < 2; round++) {
		buf_reset(&want);
		buf_puts(&want, "Status: 200 OK\r\n");
		for (i = 0; i < RESP_MAX_HEADERS; i++) {
			snprintf(name, sizeof(name), "X-H%d", i);
			memset(value, 'a' + i, sizeof(value) - 1);
			value[sizeof(value) - 1] = '\0';
			value[i * 20] = '\0';
			HARNESS_EQ(resp_header(&r, name, "old"), IDEM_OK);
			HARNESS_EQ(resp_header(&r, name, "%s", value), IDEM_OK);
			buf_printf(&want, "%s: %s\r\n", name, value);
		}
		HARNESS_EQ(resp_header(&r, "X-One-Too-Many", "x"),
		    IDEM_ETOOBIG);
		memset(value, 'a' + 3, 60);
		value[60] = '\0';
		CU_ASSERT_STRING_EQUAL(resp_get_header(&r, "x-h3"), value);
		r.status = 200;
		buf_puts(&want, "Content-Length: 0\r\n\r\n");
		buf_reset(&out);
		HARNESS_EQ(resp_write(&r, collect, &out), IDEM_OK);
		CU_ASSERT_STRING_EQUAL(out.data, want.data);
		resp_reset(&r);
		CU_ASSERT_PTR_NULL(resp_get_header(&r, "X-H0"));
	}
	buf_free(&out);
	buf_free(&want);
	resp_free(&r);
}

/*
 * A thread reads request after request into the same struct request:
 * each sees only its own meta-variables and body, whatever the one
 * before held (longer, shorter, with or without credentials), and a
 * recycled request no longer holds the credentials it carried.
 */
static void
test_reread_recycled(void)
{
	static char long_body[20000];
	const char *big[] = { "REQUEST_METHOD=POST", "PATH_INFO=/payments",
		"QUERY_STRING=a=1&b=2", "HTTP_AUTHORIZATION=Bearer sk_secret",
		"HTTP_IDEMPOTENCY_KEY=k-1", "CONTENT_LENGTH=5",
		"SERVER_NAME=example", "REMOTE_USER=alice", NULL };
	const char *small[] = { "REQUEST_METHOD=GET", "PATH_INFO=/h",
		"SERVER_PORT=80", NULL };
	char len[32], method[] = "REQUEST_METHOD=PUT";
	char *huge[] = { method, len, NULL };
	struct fake f = { NULL, "hello", 0, 5, 2 };
	struct request r;
	char *auth;
	int round;

	memset(long_body, 'b', sizeof(long_body) - 1);
	snprintf(len, sizeof(len), "CONTENT_LENGTH=%zu",
	    sizeof(long_body) - 1);
	req_init(&r);
	for (round = 0; round < 3; round++) {
		f.off = 0;
		f.body = "hello";
		f.len = 5;
		HARNESS_EQ(req_reread_env(&r, (char *const *)big, fake_read, &f,
		    65536, NULL), REQ_OK);
		CU_ASSERT_STRING_EQUAL(r.method, "POST");
		CU_ASSERT_STRING_EQUAL(r.path, "/payments");
		CU_ASSERT_STRING_EQUAL(r.query, "a=1&b=2");
		CU_ASSERT_STRING_EQUAL(r.authorization, "Bearer sk_secret");
		CU_ASSERT_STRING_EQUAL(r.idempotency_key, "k-1");
		CU_ASSERT_STRING_EQUAL(r.remote_user, "alice");
		HARNESS_EQ(r.body.len, (size_t)5);
		CU_ASSERT_STRING_EQUAL(r.body.data, "hello");
		auth = r.authorization;
		req_recycle(&r);
		CU_ASSERT_PTR_NULL(r.authorization);
		if (r.strings != NULL)  /* kept: the secret is gone from it */
			CU_ASSERT(memcmp(auth, "Bearer sk_secret", 16) != 0);

		f.off = 0;
		f.len = 0;
		HARNESS_EQ(req_reread_env(&r, (char *const *)small, fake_read,
		    &f, 65536, NULL), REQ_OK);
		CU_ASSERT_STRING_EQUAL(r.method, "GET");
		CU_ASSERT_STRING_EQUAL(r.path, "/h");
		CU_ASSERT_STRING_EQUAL(r.query, "");
		CU_ASSERT_PTR_NULL(r.authorization);
		CU_ASSERT_PTR_NULL(r.idempotency_key);
		CU_ASSERT_PTR_NULL(r.remote_user);
		CU_ASSERT_PTR_NULL(r.content_type);
		HARNESS_EQ(r.body.len, (size_t)0);
		req_recycle(&r);

		/* A body past what is kept is read whole, then let go. */
		f.off = 0;
		f.body = long_body;
		f.len = sizeof(long_body) - 1;
		f.chunk = 4096;
		HARNESS_EQ(req_reread_env(&r, huge, fake_read, &f, 65536, NULL),
		    REQ_OK);
		HARNESS_EQ(r.body.len, sizeof(long_body) - 1);
		CU_ASSERT_STRING_EQUAL(r.body.data, long_body);
		req_recycle(&r);
		CU_ASSERT(r.body.cap <= REQ_KEEP);
		f.chunk = 2;
	}
	req_free(&r);
}

/* A recycled response is a new one: status, HEAD, headers, body. */
static void
test_resp_recycled(void)
{
	struct response r;
	struct buf out = BUF_INIT;

	resp_init(&r);
	r.status = 201;
	r.head = 1;
	HARNESS_EQ(resp_header(&r, "Location", "/payments/p1"), IDEM_OK);
	buf_puts(&r.body, "{\"id\":\"p1\"}");
	resp_recycle(&r);
	HARNESS_EQ(r.status, 500);
	HARNESS_EQ(r.head, 0);
	HARNESS_EQ(r.nheaders, (size_t)0);
	HARNESS_EQ(r.body.len, (size_t)0);
	r.status = 200;
	buf_puts(&r.body, "{}");
	HARNESS_EQ(resp_write(&r, collect, &out), IDEM_OK);
	CU_ASSERT_STRING_EQUAL(out.data, "Status: 200 OK\r\n"
	    "Content-Length: 2\r\n\r\n{}");
	buf_free(&out);
	resp_free(&r);
}

static void
test_header_refuses_line_breaks(void)
{
	struct response r;

	resp_init(&r);
	HARNESS_EQ(resp_header(&r, "X", "a\r\nSet-Cookie: b"), IDEM_EINVAL);
	CU_ASSERT_PTR_NULL(resp_get_header(&r, "X"));
	resp_free(&r);
}

static void
test_problem_json(void)
{
	static const char want[] = "{\"type\":\"https://idem.example/problems/"
	    "key-reused.html\",\"title\":\"Idempotency-Key reused with a "
	    "different request\",\"status\":422,\"detail\":\"key \\\"k\\\"\\n"
	    "\\u0001\"}";
	struct response r;

	resp_init(&r);
	problem_set_base("https://idem.example/problems/");
	HARNESS_EQ(problem_build(&r, PROBLEM_KEY_REUSED, "key \"%s\"\n\001",
	    "k"), IDEM_OK);
	HARNESS_EQ(r.status, 422);
	CU_ASSERT_STRING_EQUAL(resp_get_header(&r, "Content-Type"),
	    "application/problem+json");
	/* RFC 9457's members in this order, escaped as JSON strings. */
	CU_ASSERT_STRING_EQUAL(r.body.data, want);
	problem_set_base("/problems/");
	resp_free(&r);
}

/*
 * With the request's id set on the response, a problem names it as its
 * instance, percent-encoded outside RFC 3986's unreserved characters;
 * without one (outside a request) it has none.
 */
static void
test_problem_instance(void)
{
	static const char want[] = "{\"type\":\"/problems/not-found.html\","
	    "\"title\":\"Not found\",\"status\":404,\"detail\":\"x\","
	    "\"instance\":\"req_00ff-._~%2F%3A%25%3F%23%20%22%5C%C3%A9\"}";
	char out[3 * 16 + 1];
	struct response r;

	problem_instance_of("req_0123abcdef", out);
	CU_ASSERT_STRING_EQUAL(out, "req_0123abcdef");
	resp_init(&r);
	r.instance = "req_00ff-._~/:%?# \"\\\xc3\xa9";
	HARNESS_EQ(problem_build(&r, PROBLEM_NOT_FOUND, "x"), IDEM_OK);
	r.instance = NULL;
	CU_ASSERT_STRING_EQUAL(r.body.data, want);
	HARNESS_EQ(problem_build(&r, PROBLEM_NOT_FOUND, "x"), IDEM_OK);
	CU_ASSERT_PTR_NULL(strstr(r.body.data, "instance"));
	resp_free(&r);
}

/* The detail of a problem document, parsed back (the caller frees). */
static struct json_value *
problem_detail(const struct response *r, const char **detail)
{
	struct json_value *o = NULL;

	if (json_parse(r->body.data, r->body.len, &o, NULL, 0) != JSON_OK)
		return NULL;
	*detail = json_text(json_get(o, "detail"), NULL);
	return o;
}

/*
 * A detail that quotes broken UTF-8 (a code cut in the middle of a
 * character, an overlong form, a surrogate, a stray continuation byte)
 * comes out as valid UTF-8, each bad byte replaced by U+FFFD, and good
 * characters kept.
 */
static void
test_problem_utf8_safe(void)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{ "BR\xc3", "BR\xef\xbf\xbd" },
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "a\x80" "b", "a\xef\xbf\xbd" "b" },
		{ "R$ \xe2\x82\xac \xf0\x9f\x92\xb3",
		    "R$ \xe2\x82\xac \xf0\x9f\x92\xb3" },
	};
	struct json_value *o;
	struct response r;
	const char *detail;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		resp_init(&r);
		HARNESS_EQ(problem_build(&r, PROBLEM_INVALID_PAYMENT, "%s",
		    cases[i].in), IDEM_OK);
		o = problem_detail(&r, &detail);
		CU_ASSERT_PTR_NOT_NULL_FATAL(o);
		CU_ASSERT_PTR_NOT_NULL_FATAL(detail);
		CU_ASSERT_STRING_EQUAL(detail, cases[i].want);
		json_free(o);
		resp_free(&r);
	}
}

static void
test_problem_table_complete(void)
{
	int p;

	for (p = 0; p < PROBLEM__MAX; p++) {
		CU_ASSERT_PTR_NOT_NULL(problem_slug(p));
		CU_ASSERT_TRUE(problem_status(p) >= 400 &&
		    problem_status(p) < 600);
	}
}

/*
 * The id an answer carries (Request-Id): the web server's when it can be
 * quoted as it is, else "req_" and 24 hex digits, a new one each time.
 */
static void
test_request_id(void)
{
	char made[REQ_ID_MADE + 1], other[REQ_ID_MADE + 1], longest[130];
	const char *id;
	size_t i;

	HARNESS_EQ(crypto_init(), IDEM_OK);
	CU_ASSERT_STRING_EQUAL(req_id("checkout-7f3a", made), "checkout-7f3a");
	memset(longest, 'r', 128);
	longest[128] = '\0';
	CU_ASSERT_PTR_EQUAL(req_id(longest, made), longest);
	longest[128] = 'r';
	longest[129] = '\0';
	CU_ASSERT_PTR_EQUAL(req_id(longest, made), made);
	CU_ASSERT_PTR_EQUAL(req_id("a b", made), made);
	CU_ASSERT_PTR_EQUAL(req_id("a\"b", made), made);
	CU_ASSERT_PTR_EQUAL(req_id("", made), made);
	id = req_id(NULL, made);
	CU_ASSERT_PTR_EQUAL(id, made);
	HARNESS_EQ(strlen(made), REQ_ID_MADE);
	CU_ASSERT_EQUAL(strncmp(made, "req_", 4), 0);
	for (i = 4; i < REQ_ID_MADE; i++)
		CU_ASSERT_PTR_NOT_NULL(strchr("0123456789abcdef", made[i]));
	req_id(NULL, other);
	CU_ASSERT_STRING_NOT_EQUAL(made, other);
}

int
harness_suites(void)
{
	CU_pSuite s;

	if ((s = CU_add_suite("request", NULL, NULL)) == NULL)
		return -1;
	CU_add_test(s, "reads a full request", test_read_full);
	CU_add_test(s, "path joins SCRIPT_NAME and PATH_INFO",
	    test_read_path_joins_script_name);
	CU_add_test(s, "mount stripped only at a boundary",
	    test_read_mount_stripped_only_at_boundary);
	CU_add_test(s, "too large refused before reading",
	    test_read_too_large_before_reading);
	CU_add_test(s, "limit is inclusive", test_read_limit_is_inclusive);
	CU_add_test(s, "short body", test_read_short_body);
	CU_add_test(s, "bad Content-Length values", test_read_bad_lengths);
	CU_add_test(s, "problem detail is UTF-8", test_problem_utf8_safe);
	CU_add_test(s, "huge Content-Length is 413",
	    test_read_huge_length_too_large);
	CU_add_test(s, "bad method", test_read_bad_method);
	CU_add_test(s, "parse length", test_parse_length);
	CU_add_test(s, "JSON media types", test_is_json);
	CU_add_test(s, "requests read again into one struct",
	    test_reread_recycled);
	CU_add_test(s, "request id given or made", test_request_id);
	if ((s = CU_add_suite("response", NULL, NULL)) == NULL)
		return -1;
	CU_add_test(s, "CGI response format", test_write_cgi_response);
	CU_add_test(s, "header refuses line breaks",
	    test_header_refuses_line_breaks);
	CU_add_test(s, "headers beyond its room", test_headers_beyond_room);
	CU_add_test(s, "response recycled", test_resp_recycled);
	CU_add_test(s, "problem+json body", test_problem_json);
	CU_add_test(s, "problem instance", test_problem_instance);
	CU_add_test(s, "problem table complete", test_problem_table_complete);
	return 0;
}
