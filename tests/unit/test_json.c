/* SPDX-License-Identifier: MIT */
/*
 * test_json.c: the strict JSON parser (RFC 8259) and the canonical form
 * the fingerprint hashes; in a build that found cJSON, the trees json.c
 * reads compared with cJSON's (suite "json and cJSON").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_CJSON
#include <dirent.h>
#include <sys/stat.h>
#endif

#include "buf.h"
#include "err.h"
#include "harness.h"
#include "json.h"
#ifdef HAVE_CJSON
#include "json_cjson.h"
#endif

/* Parses len bytes of text and returns the status; the tree is freed. */
static enum json_status
json_status_of(const char *text, size_t len)
{
	struct json_value *v = NULL;
	enum json_status st;
	char err[128];

	st = json_parse(text, len, &v, err, sizeof(err));
	if (st == JSON_OK) {
		CU_ASSERT_PTR_NOT_NULL(v);
	} else {
		CU_ASSERT_PTR_NULL(v);
	}
	json_free(v);
	return st;
}

static void
json_expect(const char *text, enum json_status want, int line)
{
	enum json_status st = json_status_of(text, strlen(text));

	if (st != want)
		fprintf(stderr, "  line %d: %s: status %d, want %d\n", line,
		    text, (int)st, (int)want);
	HARNESS_EQ(st, want);
}

#define JSON_EXPECT(text, want) json_expect((text), (want), __LINE__)

/* The canonical form of text, which must parse; the caller frees it. */
static char *
json_canon_of(const char *text)
{
	struct json_value *v = NULL;
	struct buf b = BUF_INIT;
	char err[128];

	if (json_parse(text, strlen(text), &v, err, sizeof(err)) != JSON_OK) {
		fprintf(stderr, "  %s: %s\n", text, err);
		CU_FAIL("text did not parse");
		return strdup("(error)");
	}
	CU_ASSERT_EQUAL(json_canonical(v, &b), IDEM_OK);
	json_free(v);
	if (b.data == NULL)
		return strdup("");
	return b.data;
}

static void
json_expect_canon(const char *text, const char *want, int line)
{
	char *got = json_canon_of(text);

	if (strcmp(got, want) != 0)
		fprintf(stderr, "  line %d: canonical(%s) = %s, want %s\n",
		    line, text, got, want);
	CU_ASSERT_STRING_EQUAL(got, want);
	free(got);
}

#define JSON_CANON(text, want) json_expect_canon((text), (want), __LINE__)

static void
test_rfc_examples(void)
{
	/* RFC 8259 section 13, the two examples, and section 2's scalars. */
	JSON_EXPECT("{\n"
	    "  \"Image\": {\n"
	    "    \"Width\":  800,\n"
	    "    \"Height\": 600,\n"
	    "    \"Title\":  \"View from 15th Floor\",\n"
	    "    \"Thumbnail\": {\n"
	    "      \"Url\":    \"http://www.example.com/image/481989943\",\n"
	    "      \"Height\": 125,\n"
	    "      \"Width\":  100\n"
	    "    },\n"
	    "    \"Animated\" : false,\n"
	    "    \"IDs\": [116, 943, 234, 38793]\n"
	    "  }\n"
	    "}", JSON_OK);
	JSON_EXPECT("[\n"
	    "  {\n"
	    "     \"precision\": \"zip\",\n"
	    "     \"Latitude\":  37.7668,\n"
	    "     \"Longitude\": -122.3959,\n"
	    "     \"Address\":   \"\",\n"
	    "     \"City\":      \"SAN FRANCISCO\",\n"
	    "     \"State\":     \"CA\",\n"
	    "     \"Zip\":       \"94107\",\n"
	    "     \"Country\":   \"US\"\n"
	    "  },\n"
	    "  {\n"
	    "     \"precision\": \"zip\",\n"
	    "     \"Latitude\":  37.371991,\n"
	    "     \"Longitude\": -122.026020,\n"
	    "     \"Address\":   \"\",\n"
	    "     \"City\":      \"SUNNYVALE\",\n"
	    "     \"State\":     \"CA\",\n"
	    "     \"Zip\":       \"94085\",\n"
	    "     \"Country\":   \"US\"\n"
	    "  }\n"
	    "]", JSON_OK);
	JSON_EXPECT("\"Hello world!\"", JSON_OK);
	JSON_EXPECT("42", JSON_OK);
	JSON_EXPECT("true", JSON_OK);
	JSON_EXPECT("false", JSON_OK);
	JSON_EXPECT("null", JSON_OK);
	JSON_EXPECT("{}", JSON_OK);
	JSON_EXPECT("[]", JSON_OK);
	JSON_EXPECT("{\"amount\": 100.00, \"currency\": \"BRL\"}", JSON_OK);
}

static void
test_invalid_documents(void)
{
	static const char *const bad[] = {
		"", " ", "{", "}", "[", "[1,]", "[,1]", "{\"a\":1,}",
		"{\"a\" 1}", "{\"a\":}", "{a:1}", "{'a':1}", "{1:1}", "[1 2]",
		"01", "-01", "1.", ".5", "+1", "-", "1e", "1e+", "1.e3",
		"0x10", "NaN", "Infinity", "-Infinity", "tru", "nul",
		"nulll", "True", "[1]x", "[1]]", "{}{}", "\"abc", "\"\\x\"",
		"\"\\u12\"", "\"\\u12G4\"", "\"a\tb\"", "\"a\nb\"",
		"\xef\xbb\xbf{}", "/* c */ 1", "[1] // c", "\"\\",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		JSON_EXPECT(bad[i], JSON_ESYNTAX);
	/* A NUL outside a string is not white space. */
	HARNESS_EQ(json_status_of("[1]\0", 4), JSON_ESYNTAX);
	HARNESS_EQ(json_status_of("\0", 1), JSON_ESYNTAX);
}

static void
test_whitespace_around(void)
{
	JSON_EXPECT(" \t\r\n{ \"a\" : [ 1 , 2 ] } \t\r\n", JSON_OK);
	/* Only the four RFC 8259 white space characters count. */
	JSON_EXPECT("\f1", JSON_ESYNTAX);
	JSON_EXPECT("1\v", JSON_ESYNTAX);
	JSON_EXPECT("\xc2\xa0" "1", JSON_ESYNTAX);
}

static void
test_length_not_nul_terminated(void)
{
	const char text[] = "[1,2]trailing";

	HARNESS_EQ(json_status_of(text, 5), JSON_OK);
	HARNESS_EQ(json_status_of(text, 4), JSON_ESYNTAX);
	HARNESS_EQ(json_status_of("\"ab\"", 3), JSON_ESYNTAX);
	HARNESS_EQ(json_status_of("1e5", 2), JSON_ESYNTAX);
	HARNESS_EQ(json_status_of("true", 3), JSON_ESYNTAX);
}

static void
test_duplicates(void)
{
	JSON_EXPECT("{\"a\":1,\"a\":2}", JSON_EDUPLICATE);
	JSON_EXPECT("{\"a\":1,\"b\":2,\"a\":1}", JSON_EDUPLICATE);
	/* Names compare unescaped: these are all the name "a". */
	JSON_EXPECT("{\"a\":1,\"\\u0061\":2}", JSON_EDUPLICATE);
	JSON_EXPECT("{\"\\u0061\":1,\"\\u0061\":2}", JSON_EDUPLICATE);
	JSON_EXPECT("{\"/\":1,\"\\/\":2}", JSON_EDUPLICATE);
	JSON_EXPECT("{\"\xc3\xa9\":1,\"\\u00e9\":2}", JSON_EDUPLICATE);
	JSON_EXPECT("{\"x\":{\"a\":1,\"a\":1}}", JSON_EDUPLICATE);
	JSON_EXPECT("[{\"a\":1},{\"a\":{\"b\":1,\"b\":2}}]",
	    JSON_EDUPLICATE);
	JSON_EXPECT("{\"\":1,\"\":2}", JSON_EDUPLICATE);
	/* Different names, and the same name in different objects. */
	JSON_EXPECT("{\"a\":1,\"A\":2,\"a \":3,\"a\\u0001\":4}", JSON_OK);
	JSON_EXPECT("[{\"a\":1},{\"a\":1}]", JSON_OK);
	JSON_EXPECT("{\"a\":{\"a\":1}}", JSON_OK);
}

/* n nested arrays (or objects) around a 0. */
static char *
json_nest(int n, int objects)
{
	char *s = malloc((size_t)n * 6 + 2);
	size_t k = 0;
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	for (i = 0; i < n; i++) {
		if (objects) {
			memcpy(s + k, "{\"a\":", 5);
			k += 5;
		} else
			s[k++] = '[';
	}
	s[k++] = '0';
	for (i = 0; i < n; i++)
		s[k++] = objects ? '}' : ']';
	s[k] = '\0';
	return s;
}

static void
test_depth_limit(void)
{
	char *s;

	s = json_nest(JSON_MAX_DEPTH, 0);
	JSON_EXPECT(s, JSON_OK);
	free(s);
	s = json_nest(JSON_MAX_DEPTH + 1, 0);
	JSON_EXPECT(s, JSON_EDEPTH);
	free(s);
	s = json_nest(JSON_MAX_DEPTH, 1);
	JSON_EXPECT(s, JSON_OK);
	free(s);
	s = json_nest(JSON_MAX_DEPTH + 1, 1);
	JSON_EXPECT(s, JSON_EDEPTH);
	free(s);
	/* Far too deep, and unterminated: refused without recursing. */
	s = json_nest(100000, 0);
	s[100000] = '\0';
	JSON_EXPECT(s, JSON_EDEPTH);
	free(s);
}

static void
test_utf8_valid(void)
{
	struct json_value *v;
	const char *t;
	size_t len;

	/* U+00E9, U+20AC, U+FFFF, U+10000, U+10FFFF raw. */
	JSON_EXPECT("\"\xc3\xa9 \xe2\x82\xac \xef\xbf\xbf "
	    "\xf0\x90\x80\x80 \xf4\x8f\xbf\xbf\"", JSON_OK);
	HARNESS_EQ(json_parse("\"\xe2\x82\xac\"", 5, &v, NULL, 0), JSON_OK);
	t = json_text(v, &len);
	HARNESS_EQ(len, 3);
	CU_ASSERT(memcmp(t, "\xe2\x82\xac", 3) == 0);
	json_free(v);
}

static void
test_utf8_invalid(void)
{
	static const char *const bad[] = {
		"\"\xc0\x80\"",			/* overlong NUL */
		"\"\xc1\xbf\"",			/* overlong 0x7F */
		"\"\xe0\x80\x80\"",		/* overlong 3 bytes */
		"\"\xe0\x9f\xbf\"",		/* overlong U+07FF */
		"\"\xf0\x80\x80\x80\"",		/* overlong 4 bytes */
		"\"\xf0\x8f\xbf\xbf\"",		/* overlong U+FFFF */
		"\"\xed\xa0\x80\"",		/* U+D800 in UTF-8 */
		"\"\xed\xbf\xbf\"",		/* U+DFFF in UTF-8 */
		"\"\xf4\x90\x80\x80\"",		/* U+110000 */
		"\"\xf5\x80\x80\x80\"",
		"\"\xff\"",
		"\"\x80\"",			/* lone continuation */
		"\"\xc3\"",			/* truncated */
		"\"\xe2\x82\"",
		"\"\xf0\x9f\x98\"",
		"\"\xc3\x28\"",			/* bad continuation */
		"{\"\xc3\":1}",			/* in a member name */
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		JSON_EXPECT(bad[i], JSON_EUTF8);
	/* Truncated by the length, not by a quote. */
	HARNESS_EQ(json_status_of("\"\xe2\x82\xac\"", 3), JSON_EUTF8);
}

static void
test_surrogate_escapes(void)
{
	struct json_value *v;
	const char *t;
	size_t len;

	/* A valid pair becomes one 4-byte character: U+1F600. */
	HARNESS_EQ(json_parse("\"\\uD83D\\uDE00\"", 14, &v, NULL, 0),
	    JSON_OK);
	t = json_text(v, &len);
	HARNESS_EQ(len, 4);
	CU_ASSERT(memcmp(t, "\xf0\x9f\x98\x80", 4) == 0);
	json_free(v);
	JSON_CANON("\"\\ud83d\\ude00\"", "\"\xf0\x9f\x98\x80\"");

	JSON_EXPECT("\"\\uD800\"", JSON_EUTF8);
	JSON_EXPECT("\"\\uDBFF\"", JSON_EUTF8);
	JSON_EXPECT("\"\\uDC00\"", JSON_EUTF8);
	JSON_EXPECT("\"\\uDE00\\uD83D\"", JSON_EUTF8);
	JSON_EXPECT("\"\\uD800\\u0041\"", JSON_EUTF8);
	JSON_EXPECT("\"\\uD800\\uD800\"", JSON_EUTF8);
	JSON_EXPECT("\"\\uD800x\"", JSON_EUTF8);
	JSON_EXPECT("\"\\uD800\\n\"", JSON_EUTF8);
	JSON_EXPECT("\"\\uD800\\u12\"", JSON_ESYNTAX);
	JSON_EXPECT("{\"\\uD800\":1}", JSON_EUTF8);
}

static void
test_string_values(void)
{
	struct json_value *v;
	const char *t;
	size_t len;
	const char *doc = "\"a\\u0001b\\\"\\\\\\/\\b\\f\\n\\r\\t\"";

	HARNESS_EQ(json_parse(doc, strlen(doc), &v, NULL, 0), JSON_OK);
	HARNESS_EQ(json_type(v), JSON_STRING);
	t = json_text(v, &len);
	HARNESS_EQ(len, 11);
	HARNESS_EQ(strlen(t), 11);
	CU_ASSERT(memcmp(t, "a\001b\"\\/\b\f\n\r\t", 11) == 0);
	json_free(v);

	HARNESS_EQ(json_parse("\"\"", 2, &v, NULL, 0), JSON_OK);
	t = json_text(v, &len);
	CU_ASSERT_PTR_NOT_NULL(t);
	HARNESS_EQ(len, 0);
	json_free(v);
}

/*
 * A C consumer would read "BRL\u0000junk" as "BRL", so a string that
 * decodes to a NUL is refused wherever it is; U+0001 is an ordinary
 * control character and stays accepted.
 */
static void
test_nul_refused(void)
{
	static const char *const bad[] = {
		"{\"currency\": \"BRL\\u0000junk\"}",
		"\"\\u0000\"",
		"\"abc\\u0000\"",
		"{\"a\\u0000\":1}",
		"{\"\\u0000\":1}",
		"[1, {\"x\": [\"ok\", {\"y\": \"\\u0000\"}]}]",
		"{\"x\": {\"\\u0000y\": 2}}",
		"[\"\\ud83d\\ude00\\u0000\"]",
	};
	struct json_value *v = (struct json_value *)&v;
	const char *doc = "{\"currency\": \"BRL\\u0000junk\"}";
	char err[160];
	size_t i, len;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		JSON_EXPECT(bad[i], JSON_ENUL);
	/* The escape's offset, as for every other error. */
	HARNESS_EQ(json_parse(doc, strlen(doc), &v, err, sizeof(err)),
	    JSON_ENUL);
	CU_ASSERT_PTR_NULL(v);
	CU_ASSERT(strstr(err, "byte 17") != NULL);
	CU_ASSERT(strstr(err, "NUL") != NULL);
	/* A raw NUL byte stays a syntax error: it is an unescaped control. */
	HARNESS_EQ(json_status_of("\"a\0b\"", 5), JSON_ESYNTAX);

	JSON_EXPECT("{\"currency\": \"BRL\\u0001junk\"}", JSON_OK);
	JSON_EXPECT("{\"\\u0001\": [\"\\u0001\"]}", JSON_OK);
	HARNESS_EQ(json_parse("\"\\u0001\"", 8, &v, NULL, 0), JSON_OK);
	CU_ASSERT_STRING_EQUAL(json_text(v, &len), "\001");
	HARNESS_EQ(len, 1);
	json_free(v);
}

static void
test_accessors(void)
{
	struct json_value *v;
	const struct json_value *a;
	const char *t;
	size_t len;
	const char *doc = "{\"amount\": 100.00, \"currency\": \"BRL\", "
	    "\"tags\": [1, null, true, false], \"\": 0}";

	HARNESS_EQ(json_parse(doc, strlen(doc), &v, NULL, 0), JSON_OK);
	HARNESS_EQ(json_type(v), JSON_OBJECT);
	HARNESS_EQ(json_count(v), 4);

	/* Numbers keep their source text: money never becomes a double. */
	a = json_get(v, "amount");
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	HARNESS_EQ(json_type(a), JSON_NUMBER);
	t = json_text(a, &len);
	CU_ASSERT_STRING_EQUAL(t, "100.00");
	HARNESS_EQ(len, 6);

	a = json_get(v, "currency");
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	HARNESS_EQ(json_type(a), JSON_STRING);
	CU_ASSERT_STRING_EQUAL(json_text(a, NULL), "BRL");

	a = json_get(v, "tags");
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	HARNESS_EQ(json_type(a), JSON_ARRAY);
	HARNESS_EQ(json_count(a), 4);
	CU_ASSERT_PTR_NULL(json_text(a, NULL));
	CU_ASSERT_PTR_NULL(json_get(a, "amount"));

	CU_ASSERT_PTR_NOT_NULL(json_get(v, ""));
	CU_ASSERT_PTR_NULL(json_get(v, "Amount"));
	CU_ASSERT_PTR_NULL(json_get(v, "amoun"));
	CU_ASSERT_PTR_NULL(json_get(v, "amounts"));
	HARNESS_EQ(json_count(json_get(v, "amount")), 0);

	/* By position: members in the order of their names. */
	CU_ASSERT_STRING_EQUAL(json_member_name(v, 0, &len), "");
	HARNESS_EQ(len, 0);
	CU_ASSERT_STRING_EQUAL(json_member_name(v, 3, &len), "tags");
	HARNESS_EQ(len, 4);
	CU_ASSERT_PTR_EQUAL(json_at(v, 1), json_get(v, "amount"));
	CU_ASSERT_PTR_EQUAL(json_at(v, 3), json_get(v, "tags"));
	CU_ASSERT_PTR_NULL(json_at(v, 4));
	CU_ASSERT_PTR_NULL(json_member_name(v, 4, NULL));
	a = json_get(v, "tags");
	HARNESS_EQ(json_type(json_at(a, 0)), JSON_NUMBER);
	HARNESS_EQ(json_type(json_at(a, 3)), JSON_FALSE);
	CU_ASSERT_PTR_NULL(json_at(a, 4));
	CU_ASSERT_PTR_NULL(json_member_name(a, 0, NULL));
	CU_ASSERT_PTR_NULL(json_at(json_at(a, 0), 0));
	CU_ASSERT_PTR_NULL(json_at(NULL, 0));
	json_free(v);
}

static void
test_error_sentence(void)
{
	struct json_value *v = (struct json_value *)&v;	/* not NULL */
	char err[128];

	HARNESS_EQ(json_parse("[1, x]", 6, &v, err, sizeof(err)),
	    JSON_ESYNTAX);
	CU_ASSERT_PTR_NULL(v);
	CU_ASSERT(strstr(err, "byte 4") != NULL);

	HARNESS_EQ(json_parse("{\"a\":1, \"a\":2}", 14, &v, err,
	    sizeof(err)), JSON_EDUPLICATE);
	CU_ASSERT(strstr(err, "byte 8") != NULL);

	/* A short buffer is truncated, never overrun. */
	memset(err, 'x', sizeof(err));
	HARNESS_EQ(json_parse("[", 1, &v, err, 8), JSON_ESYNTAX);
	HARNESS_EQ(strlen(err), 7);
	CU_ASSERT(err[8] == 'x');
	/* No buffer at all is fine. */
	HARNESS_EQ(json_parse("[", 1, &v, NULL, 0), JSON_ESYNTAX);
}

static void
test_strstatus(void)
{
	int st;

	for (st = 0; st < JSON_STATUS__MAX; st++)
		CU_ASSERT_PTR_NOT_NULL(json_strstatus((enum json_status)st));
	CU_ASSERT_PTR_NOT_NULL(json_strstatus(JSON_STATUS__MAX));
}

/*
 * Memory.  Each shape below is one that cost the most per byte of text
 * with one allocation per value (up to 84 bytes per byte for [0,0,...]);
 * json.h promises at most JSON_MEM_PER_BYTE per byte whatever the shape.
 */
#define MEM_TEXT (64 * 1024)

/* Asserts the bound of json.h for text, which must parse. */
static void
json_expect_bounded(const char *what, const char *text, size_t len)
{
	struct json_value *v = NULL;
	char err[160];
	size_t mem;

	if (json_parse(text, len, &v, err, sizeof(err)) != JSON_OK) {
		fprintf(stderr, "  %s: %s\n", what, err);
		CU_FAIL("text did not parse");
		return;
	}
	mem = json_mem(v);
	if (mem > JSON_MEM_PER_BYTE * len + JSON_MEM_FIXED)
		fprintf(stderr, "  %s: %zu bytes of text hold %zu bytes "
		    "(%.1f per byte)\n", what, len, mem, (double)mem / len);
	CU_ASSERT(mem > 0);
	CU_ASSERT(mem <= JSON_MEM_PER_BYTE * len + JSON_MEM_FIXED);
	json_free(v);
}

/* "[item,item,...]" of at most MEM_TEXT bytes; the caller frees it. */
static char *
json_repeat(const char *item, size_t *len)
{
	struct buf b = BUF_INIT;
	size_t n = strlen(item);

	CU_ASSERT_FATAL(buf_putc(&b, '[') == IDEM_OK);
	while (b.len + n + 2 <= MEM_TEXT) {
		if (b.len > 1)
			CU_ASSERT_FATAL(buf_putc(&b, ',') == IDEM_OK);
		CU_ASSERT_FATAL(buf_append(&b, item, n) == IDEM_OK);
	}
	CU_ASSERT_FATAL(buf_putc(&b, ']') == IDEM_OK);
	*len = b.len;
	return b.data;
}

static void
test_memory_arrays(void)
{
	static const char *const items[] = {
		"\"\"", "0", "[]", "{}", "1.5", "true", "null", "[0]",
		"{\"\":0}", "\"\\u00e9\"", "\"\\ud83d\\ude00\"", "-0e-7",
	};
	size_t i, len;
	char *s;

	for (i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
		s = json_repeat(items[i], &len);
		json_expect_bounded(items[i], s, len);
		free(s);
	}
}

/* Appends code point cp, neither '"' nor '\\' nor a surrogate, as UTF-8. */
static void
json_put_char(struct buf *b, unsigned cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else {
		u[0] = (char)(0xe0 | cp >> 12);
		u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	}
	CU_ASSERT_FATAL(buf_append(b, u, n) == IDEM_OK);
}

/*
 * An object of many members named by one character each, in descending
 * order so that every one must move; and json_get still finds each.
 */
static void
test_memory_members(void)
{
	struct buf b = BUF_INIT, name = BUF_INIT, canon = BUF_INIT;
	struct json_value *v;
	const struct json_value *m;
	unsigned cp, last;
	size_t n = 0, len = 2;

	/* The names that fit, U+0020 up; each member costs 6 to 8 bytes. */
	for (last = 0x20; len + 8 <= MEM_TEXT; last++)
		if (last != '"' && last != '\\')
			len += last < 0x80 ? 6 : last < 0x800 ? 7 : 8;
	CU_ASSERT_FATAL(buf_putc(&b, '{') == IDEM_OK);
	for (cp = last; cp-- > 0x20;) {
		if (cp == '"' || cp == '\\')
			continue;
		if (n++ > 0)
			CU_ASSERT_FATAL(buf_putc(&b, ',') == IDEM_OK);
		CU_ASSERT_FATAL(buf_putc(&b, '"') == IDEM_OK);
		json_put_char(&b, cp);
		CU_ASSERT_FATAL(buf_puts(&b, "\":0") == IDEM_OK);
	}
	CU_ASSERT_FATAL(buf_putc(&b, '}') == IDEM_OK);
	HARNESS_EQ(b.len, len - 1);
	json_expect_bounded("one-character members", b.data, b.len);

	HARNESS_EQ(json_parse(b.data, b.len, &v, NULL, 0), JSON_OK);
	HARNESS_EQ(json_count(v), n);
	for (cp = 0x20; cp < last; cp++) {
		if (cp == '"' || cp == '\\')
			continue;
		buf_reset(&name);
		json_put_char(&name, cp);
		m = json_get(v, name.data);
		CU_ASSERT_PTR_NOT_NULL(m);
		HARNESS_EQ(json_type(m), JSON_NUMBER);
	}
	CU_ASSERT_PTR_NULL(json_get(v, "\""));
	CU_ASSERT_PTR_NULL(json_get(v, "ab"));
	CU_ASSERT_PTR_NULL(json_get(v, ""));
	/* Sorted bytewise: ASCII names first, the widest last. */
	CU_ASSERT_EQUAL(json_canonical(v, &canon), IDEM_OK);
	CU_ASSERT(strncmp(canon.data, "{\" \":0,\"!\":0,\"#\":0,", 19) == 0);
	buf_reset(&name);
	CU_ASSERT_FATAL(buf_puts(&name, ",\"") == IDEM_OK);
	json_put_char(&name, last - 1);
	CU_ASSERT_FATAL(buf_puts(&name, "\":0}") == IDEM_OK);
	CU_ASSERT(canon.len > name.len && strcmp(canon.data + canon.len -
	    name.len, name.data) == 0);
	json_free(v);
	buf_free(&b);
	buf_free(&name);
	buf_free(&canon);
}

/* Nesting to JSON_MAX_DEPTH, alone and repeated to fill the text. */
static void
test_memory_deep(void)
{
	struct buf b = BUF_INIT;
	char *one;
	int objects;

	for (objects = 0; objects <= 1; objects++) {
		one = json_nest(JSON_MAX_DEPTH, objects);
		json_expect_bounded("nested to the limit", one, strlen(one));
		free(one);
		/* Inside an array, so one level less each. */
		one = json_nest(JSON_MAX_DEPTH - 1, objects);
		buf_reset(&b);
		CU_ASSERT_FATAL(buf_putc(&b, '[') == IDEM_OK);
		while (b.len + strlen(one) + 2 <= MEM_TEXT) {
			if (b.len > 1)
				CU_ASSERT_FATAL(buf_putc(&b, ',') == IDEM_OK);
			CU_ASSERT_FATAL(buf_puts(&b, one) == IDEM_OK);
		}
		CU_ASSERT_FATAL(buf_putc(&b, ']') == IDEM_OK);
		json_expect_bounded("many nested to the limit", b.data, b.len);
		free(one);
	}
	buf_free(&b);
}

/* The smallest documents, where the fixed part dominates. */
static void
test_memory_small(void)
{
	static const char *const docs[] = {
		"0", "[]", "{}", "\"\"", "true", "[0]", "{\"\":0}", " 0 ",
	};
	size_t i;

	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
		json_expect_bounded(docs[i], docs[i], strlen(docs[i]));
	HARNESS_EQ(json_mem(NULL), 0);
}

/*
 * Duplicates in large objects, where the sort has moved the members
 * around: the error still names the second occurrence of the smallest
 * repeated name.
 */
static void
test_duplicates_large(void)
{
	struct buf b = BUF_INIT;
	struct json_value *v = (struct json_value *)&v;
	char err[160], want[32];
	size_t i, off = 0;

	CU_ASSERT_FATAL(buf_putc(&b, '{') == IDEM_OK);
	for (i = 0; i < 3000; i++) {
		if (i == 2000) {
			CU_ASSERT_FATAL(buf_putc(&b, ',') == IDEM_OK);
			off = b.len;
			CU_ASSERT_FATAL(buf_puts(&b, "\"k1234\":1") ==
			    IDEM_OK);
		}
		CU_ASSERT_FATAL(buf_printf(&b, "%s\"k%zu\":%zu",
		    i > 0 ? "," : "", (i * 7919) % 3000, i) == IDEM_OK);
	}
	CU_ASSERT_FATAL(buf_putc(&b, '}') == IDEM_OK);
	HARNESS_EQ(json_parse(b.data, b.len, &v, err, sizeof(err)),
	    JSON_EDUPLICATE);
	CU_ASSERT_PTR_NULL(v);
	/* The other k1234 is member 1886 (1886 * 7919 mod 3000 = 1234). */
	snprintf(want, sizeof(want), "byte %zu", off);
	if (strstr(err, want) == NULL)
		fprintf(stderr, "  %s, want %s\n", err, want);
	CU_ASSERT(strstr(err, want) != NULL);
	buf_free(&b);

	HARNESS_EQ(json_parse("{\"b\":1,\"a\":2,\"b\":3,\"a\":4}", 25, &v,
	    err, sizeof(err)), JSON_EDUPLICATE);
	CU_ASSERT(strstr(err, "byte 19") != NULL);
	HARNESS_EQ(json_parse("{\"a\":1,\"a\":2,\"a\":3}", 19, &v, err,
	    sizeof(err)), JSON_EDUPLICATE);
	CU_ASSERT(strstr(err, "byte 7") != NULL);
}

static void
test_canonical_member_order(void)
{
	/* The same payload re-serialised with reordered members. */
	JSON_CANON("{\"currency\": \"BRL\", \"amount\": 100.00}",
	    "{\"amount\":1e2,\"currency\":\"BRL\"}");
	JSON_CANON("{\"amount\":100.00,\"currency\":\"BRL\"}",
	    "{\"amount\":1e2,\"currency\":\"BRL\"}");
	/* Bytewise order of the unescaped names, a prefix first. */
	JSON_CANON("{\"b\":1,\"\xc3\xa9\":2,\"aa\":3,\"a\":4,\"B\":5,\"\":6}",
	    "{\"\":6,\"B\":5,\"a\":4,\"aa\":3,\"b\":1,\"\xc3\xa9\":2}");
	JSON_CANON("{\"\\u0062\":1,\"a\":2}", "{\"a\":2,\"b\":1}");
}

static void
test_canonical_whitespace(void)
{
	JSON_CANON(" { \"a\" :\t[ 1 ,\r\n 2 , { } , [ ] ] } ",
	    "{\"a\":[1,2,{},[]]}");
	JSON_CANON("\n\ttrue\n", "true");
	JSON_CANON("[null,false,true]", "[null,false,true]");
	/* Array order is significant and kept. */
	JSON_CANON("[2,1]", "[2,1]");
}

static void
test_canonical_nested_sorted(void)
{
	JSON_CANON("{\"b\":{\"d\":1,\"c\":2},\"a\":[{\"z\":1,\"y\":2}]}",
	    "{\"a\":[{\"y\":2,\"z\":1}],\"b\":{\"c\":2,\"d\":1}}");
}

static void
test_canonical_numbers_equal(void)
{
	static const char *const hundred[] = {
		"100", "100.00", "1e2", "1E2", "1e+2", "1.000E+2", "10e1",
		"1000e-1", "0.1e3", "100.0e0", "1e0000000000000000000002",
	};
	size_t i;

	for (i = 0; i < sizeof(hundred) / sizeof(hundred[0]); i++)
		JSON_CANON(hundred[i], "1e2");
	JSON_CANON("-100.50", "-1005e-1");
	JSON_CANON("1.5", "15e-1");
	JSON_CANON("0.001", "1e-3");
	JSON_CANON("123", "123");
	JSON_CANON("-7", "-7");
	JSON_CANON("12.3400e2", "1234");
	JSON_CANON("1e-0", "1");
}

static void
test_canonical_zero(void)
{
	static const char *const zeros[] = {
		"0", "-0", "0.0", "-0.0", "0e5", "0E-5", "-0.000e+99",
		"0e999999999", "-0.0e-99999999999999999999999999",
	};
	size_t i;

	for (i = 0; i < sizeof(zeros) / sizeof(zeros[0]); i++)
		JSON_CANON(zeros[i], "0");
}

static void
test_canonical_numbers_differ(void)
{
	char *a, *b;

	/* Values that differ only far past double precision stay apart. */
	a = json_canon_of("1");
	b = json_canon_of("1.0000000000000000000000000001");
	CU_ASSERT(strcmp(a, b) != 0);
	free(a);
	free(b);
	a = json_canon_of("9007199254740993");
	b = json_canon_of("9007199254740992");
	CU_ASSERT(strcmp(a, b) != 0);
	free(a);
	free(b);
	JSON_CANON("1.0000000000000000000000000001",
	    "10000000000000000000000000001e-28");
}

static void
test_canonical_huge_exponents(void)
{
	/*
	 * Exponents are exact up to the limit, refused past it; the limit
	 * is on the normalised exponent, so every canonical form reparses.
	 */
	JSON_CANON("1e1000000000", "1e1000000000");
	JSON_CANON("-1e-1000000000", "-1e-1000000000");
	JSON_CANON("15e-1000000000", "15e-1000000000");
	JSON_CANON("0.01e1000000002", "1e1000000000");
	JSON_CANON("1000e999999997", "1e1000000000");
	JSON_EXPECT("1e1000000001", JSON_ESYNTAX);
	JSON_EXPECT("10e1000000000", JSON_ESYNTAX);
	JSON_EXPECT("1.5e-1000000000", JSON_ESYNTAX);
	JSON_EXPECT("1e-99999999999999999999999999999", JSON_ESYNTAX);
	JSON_EXPECT("1e9223372036854775807", JSON_ESYNTAX);
	JSON_EXPECT("1e18446744073709551616", JSON_ESYNTAX);
}

static void
test_canonical_string_not_number(void)
{
	char *a, *b;

	/* A loose deep-equal would call these the same request. */
	a = json_canon_of("{\"amount\":\"100\"}");
	b = json_canon_of("{\"amount\":100}");
	CU_ASSERT(strcmp(a, b) != 0);
	free(a);
	free(b);
	a = json_canon_of("[true]");
	b = json_canon_of("[\"true\"]");
	CU_ASSERT(strcmp(a, b) != 0);
	free(a);
	free(b);
}

static void
test_canonical_strings(void)
{
	/* Escapes that are not needed are dropped. */
	JSON_CANON("\"\\u0041\\/\\u00e9\"", "\"A/\xc3\xa9\"");
	/* Those that are needed take their shortest form. */
	JSON_CANON("\"\\u0022\\u005c\\u000a\\u0008\\u000C\\r\\t\"",
	    "\"\\\"\\\\\\n\\b\\f\\r\\t\"");
	JSON_CANON("\"\\u0001\\u001F\\u007f\"", "\"\\u0001\\u001f\x7f\"");
	JSON_CANON("{\"a\\nb\":\"\"}", "{\"a\\nb\":\"\"}");
}

static void
test_canonical_is_fixed_point(void)
{
	static const char *const docs[] = {
		("{\"z\":[1.50,-0,\"\\u0001\",{\"b\":null,\"a\":1e-7}],"
		    "\"a\":\"\\ud83d\\ude00\"}"),
		"[0.1e1, 12e-3, -5E+3, \"x\\\\y\", {}]",
		"\"\\u2028\"",
	};
	size_t i;
	char *once, *twice;

	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		once = json_canon_of(docs[i]);
		twice = json_canon_of(once);
		CU_ASSERT_STRING_EQUAL(once, twice);
		free(once);
		free(twice);
	}
}

/*
 * Every byte, NUL included, written inside a string: '"' and '\\' and the
 * control characters escaped (the short forms where RFC 8259 section 7
 * has them, else \u00xx in lowercase), everything else as it is.
 */
static void
test_writer_every_byte(void)
{
	struct json_writer w;
	struct buf b = BUF_INIT;
	char s[3], want[16];
	unsigned c;

	for (c = 0; c < 256; c++) {
		s[0] = 'a';
		s[1] = (char)c;
		s[2] = 'z';
		switch (c) {
		case '"': strcpy(want, "\"a\\\"z\""); break;
		case '\\': strcpy(want, "\"a\\\\z\""); break;
		case '\b': strcpy(want, "\"a\\bz\""); break;
		case '\f': strcpy(want, "\"a\\fz\""); break;
		case '\n': strcpy(want, "\"a\\nz\""); break;
		case '\r': strcpy(want, "\"a\\rz\""); break;
		case '\t': strcpy(want, "\"a\\tz\""); break;
		default:
			if (c < 0x20)
				snprintf(want, sizeof(want), "\"a\\u%04xz\"", c);
			else
				snprintf(want, sizeof(want), "\"a%cz\"", (int)c);
		}
		buf_reset(&b);
		json_write_init(&w, &b);
		json_write_string(&w, s, sizeof(s));
		CU_ASSERT_FATAL(json_write_done(&w) == IDEM_OK);
		HARNESS_EQ(b.len, strlen(want));
		CU_ASSERT(memcmp(b.data, want, b.len) == 0);
	}
	buf_free(&b);
}

/*
 * The writer: commas between values and members at every level, names
 * and strings escaped as the canonical form escapes them, raw values and
 * integers as given; an unbalanced close is an error that sticks.
 */
static void
test_writer(void)
{
	struct json_writer w;
	struct buf b = BUF_INIT;

	json_write_init(&w, &b);
	json_write_open(&w, '{');
	json_write_name(&w, "a\"b");
	json_write_open(&w, '[');
	json_write_int(&w, -42);
	json_write_str(&w, "x\n\001/\xc3\xa9");
	json_write_open(&w, '{');
	json_write_close(&w, '}');
	json_write_raw(&w, "{\"k\":1}", 7);
	json_write_close(&w, ']');
	json_write_name(&w, "t");
	json_write_raw(&w, "true", 4);
	json_write_close(&w, '}');
	HARNESS_EQ(json_write_done(&w), IDEM_OK);
	CU_ASSERT_STRING_EQUAL(b.data, "{\"a\\\"b\":[-42,\"x\\n\\u0001/\xc3\xa9\","
	    "{},{\"k\":1}],\"t\":true}");
	json_write_close(&w, '}');
	HARNESS_EQ(json_write_done(&w), IDEM_EINVAL);
	buf_free(&b);
}

/*
 * A stored object extended with a member: its bytes up to the closing
 * brace unchanged, the new member after a comma; anything but a
 * non-empty object is refused and leaves nothing behind.
 */
static void
test_writer_extend(void)
{
	const char *stored = "{\"id\":\"p\", \"n\":1}";
	struct json_writer w;
	struct buf b = BUF_INIT;

	HARNESS_EQ(json_write_extend(&w, &b, stored, strlen(stored)), IDEM_OK);
	json_write_name(&w, "more");
	json_write_raw(&w, "2.50", 4);
	json_write_close(&w, '}');
	HARNESS_EQ(json_write_done(&w), IDEM_OK);
	CU_ASSERT_STRING_EQUAL(b.data,
	    "{\"id\":\"p\", \"n\":1,\"more\":2.50}");
	buf_reset(&b);
	HARNESS_EQ(json_write_extend(&w, &b, "{}", 2), IDEM_EINVAL);
	HARNESS_EQ(json_write_extend(&w, &b, "[1]", 3), IDEM_EINVAL);
	HARNESS_EQ(json_write_extend(&w, &b, "{\"a\":1", 6), IDEM_EINVAL);
	CU_ASSERT_EQUAL(b.len, 0);
	buf_free(&b);
}

#ifdef HAVE_CJSON
/*
 * Parses len bytes of text with json.c and with cJSON.  1 when both
 * accept it, after checking that they read the same tree; 0 when either
 * refuses it, and nothing is compared.
 */
static int
json_both(const char *what, const char *text, size_t len)
{
	struct json_value *v = NULL;
	cJSON *c;
	char why[512];
	int both = 0;

	c = json_cjson_parse(text, len);
	if (json_parse(text, len, &v, NULL, 0) == JSON_OK && c != NULL) {
		both = 1;
		if (json_cjson_same(v, c, why, sizeof(why)) != 0) {
			fprintf(stderr, "  %s: json.c and cJSON differ: %s\n",
			    what, why);
			CU_FAIL("json.c and cJSON read different trees");
		}
	}
	json_free(v);
	cJSON_Delete(c);
	return both;
}

/*
 * The seeds of the JSON fuzz target.  Every seed but "duplicate" (a name
 * given twice, which json.c refuses) is valid JSON that both parsers
 * read; a seed added or removed changes the counts here.
 */
static void
test_cjson_corpus(void)
{
	char path[4096];
	struct dirent *de;
	struct stat sb;
	size_t files = 0, both = 0, len;
	char *text;
	FILE *f;
	DIR *d;

	d = opendir(JSON_CORPUS);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((de = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "%s/%s", JSON_CORPUS,
		    de->d_name);
		if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
			continue;
		f = fopen(path, "rb");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		text = malloc((size_t)sb.st_size + 1);
		CU_ASSERT_PTR_NOT_NULL_FATAL(text);
		len = fread(text, 1, (size_t)sb.st_size, f);
		HARNESS_EQ(len, sb.st_size);
		fclose(f);
		files++;
		both += (size_t)json_both(path, text, len);
		free(text);
	}
	closedir(d);
	HARNESS_EQ(files, 8);
	HARNESS_EQ(both, 7);
}

/* Documents both parsers must accept, and read alike. */
static const char *const json_cjson_docs[] = {
	"{\"a\":{\"b\":{\"c\":[1,[2,[3,{}]]]}},\"d\":[]}",
	"[[],{},[[]],[{}],{\"\":{}},[[[]]],{\"a\":[]}]",
	"{\"a\":[{\"b\":\"c\"}],\"b\":{\"a\":[\"c\"]},\"c\":[[\"a\",\"b\"]]}",
	/* Members out of order, and names that sort before their prefix. */
	"{\"z\":1,\"y\":2,\"b\":3,\"a1\":4,\"a\":5,\"A\":6,\"\":7,\"ab\":8}",
	" \t\n\r{ \"k\" : [ 1 , 2 , { } ] , \"l\" :\"m\" } \n",
	"[true,false,null,true]",
	"null", "true", "0", "-0", "\"\"", "{}", "[]",
	/* Escapes. */
	"\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"",
	"[\"\\u0001\\u001f\\u007f\\u0080\\u07ff\\u0800\\uffff\"]",
	"\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00\\uDBFF\\uDFFF\\ud800\\udc00\"",
	"\"a\\nb\\u000Ac\\\\nd\"",
	/* Raw UTF-8, up to four bytes. */
	"\"d\xc3\xad" "a \xe2\x98\x83 \xf0\x9d\x84\x9e \xf4\x8f\xbf\xbf\"",
	/* Names escaped and not, non-ASCII, one written two ways apart. */
	"{\"\\u00e9t\\u00e9\":1,\"hiver\":2,\"\xe6\x97\xa5\xe6\x9c\xac\":3,"
	    "\"\\ud83d\\ude00\":4,\"\\\"q\\\"\":5,\"a\\u0062\":6,\"ac\":7}",
	/* Numbers: forms, signs, exponents, the edges of a double. */
	"[0,-0,1,-1,0.5,-0.5,10,100,1e2,1E2,1e+2,1E-2,0e0,0.0e-0,-0.0]",
	"[1.5E-300,2.5e308,1e400,-1e400,1e-400,-1e-400,4.9e-324,"
	    "2.2250738585072014e-308,1.7976931348623157e308,"
	    "1.7976931348623159e308]",
	"[0.1,0.2,0.3,9007199254740993,-9007199254740993,"
	    "18446744073709551616,3.141592653589793238462643383279]",
	"[123456789012345678901234567890123456789012345678901234567890"
	    "1234567890123456789012345678901234567890,"
	    "0.00000000000000000000000000000000000000000000000000000000000"
	    "0000000000000000000000000000000000000001]",
	"[1e1000000000,-1E+1000000000,1e-1000000000,12.340e-2]",
	"{\"amount\": 100.00, \"currency\": \"BRL\", \"n\": [1, 2.50]}",
};

static void
test_cjson_documents(void)
{
	size_t i, n = sizeof(json_cjson_docs) / sizeof(json_cjson_docs[0]);
	size_t both = 0;
	char *deep;

	for (i = 0; i < n; i++)
		both += (size_t)json_both(json_cjson_docs[i],
		    json_cjson_docs[i], strlen(json_cjson_docs[i]));
	HARNESS_EQ(both, n);
	deep = json_nest(JSON_MAX_DEPTH, 0);
	HARNESS_EQ(json_both("nested arrays", deep, strlen(deep)), 1);
	free(deep);
	deep = json_nest(JSON_MAX_DEPTH, 1);
	HARNESS_EQ(json_both("nested objects", deep, strlen(deep)), 1);
	free(deep);
}

/*
 * Documents only one parser accepts are not compared: cJSON accepts
 * these, against RFC 8259 or json.c's policy, and json.c refuses them.
 */
static void
test_cjson_only(void)
{
	static const char *const docs[] = {
		"-01", "2.", "[\"a\tb\"]", "[\"a\nb\"]", "\"\\u00G0\"",
		"{\"a\":1,\"a\":2}", "\"a\\u0000b\"",
	};
	size_t i;
	cJSON *c;

	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		c = json_cjson_parse(docs[i], strlen(docs[i]));
		if (c == NULL)
			fprintf(stderr, "  cJSON refuses %s\n", docs[i]);
		CU_ASSERT_PTR_NOT_NULL(c);
		cJSON_Delete(c);
		HARNESS_EQ(json_both(docs[i], docs[i], strlen(docs[i])), 0);
	}
}

/*
 * The comparison finds what differs: a json.c tree of one document
 * against cJSON's of another must not compare the same.
 */
static void
test_cjson_differences(void)
{
	static const char *const pairs[][2] = {
		{ "{\"a\":1}", "{\"a\":2}" },
		{ "{\"a\":1}", "{\"b\":1}" },
		{ "{\"a\":1}", "{\"a\":1,\"b\":1}" },
		{ "{\"a\":1,\"b\":1}", "{\"a\":1,\"a\":1}" },
		{ "{\"a\":1}", "[1]" },
		{ "[1,2]", "[2,1]" },
		{ "[1,2]", "[1,2,3]" },
		{ "[[1]]", "[[1,[]]]" },
		{ "\"ab\"", "\"a\\u0000b\"" },
		{ "\"ab\"", "\"abc\"" },
		{ "\"\\u00e9\"", "\"e\"" },
		{ "1e400", "1e300" },
		{ "1e400", "-1e400" },
		{ "0.1", "0.10000000000000002" },
		{ "1", "\"1\"" },
		{ "true", "false" },
		{ "null", "false" },
		{ "{\"a\":{\"b\":[1,{\"c\":\"x\"}]}}",
		    "{\"a\":{\"b\":[1,{\"c\":\"y\"}]}}" },
	};
	struct json_value *v;
	char why[512];
	size_t i;
	cJSON *c;

	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		v = NULL;
		HARNESS_EQ(json_parse(pairs[i][0], strlen(pairs[i][0]), &v,
		    NULL, 0), JSON_OK);
		c = json_cjson_parse(pairs[i][1], strlen(pairs[i][1]));
		CU_ASSERT_PTR_NOT_NULL(c);
		if (v != NULL && c != NULL && json_cjson_same(v, c, why,
		    sizeof(why)) == 0) {
			fprintf(stderr, "  %s and %s compare the same\n",
			    pairs[i][0], pairs[i][1]);
			CU_FAIL("a difference was not found");
		}
		json_free(v);
		cJSON_Delete(c);
	}
	/* The sentence names where. */
	v = NULL;
	c = json_cjson_parse(pairs[17][1], strlen(pairs[17][1]));
	HARNESS_EQ(json_parse(pairs[17][0], strlen(pairs[17][0]), &v, NULL,
	    0), JSON_OK);
	CU_ASSERT_EQUAL(json_cjson_same(v, c, why, sizeof(why)), -1);
	CU_ASSERT_STRING_EQUAL(why, "$.a.b[1].c: strings that differ");
	json_free(v);
	cJSON_Delete(c);
}

static int
json_cjson_suite(void)
{
	CU_pSuite r;

	if ((r = CU_add_suite("json and cJSON", NULL, NULL)) == NULL ||
	    CU_add_test(r, "the fuzz corpus", test_cjson_corpus) == NULL ||
	    CU_add_test(r, "documents both accept",
	    test_cjson_documents) == NULL ||
	    CU_add_test(r, "documents only cJSON accepts",
	    test_cjson_only) == NULL ||
	    CU_add_test(r, "the comparison finds differences",
	    test_cjson_differences) == NULL)
		return -1;
	return 0;
}
#endif

/* The members the exclusion tests leave out. */
static const char *const strip_names[] = { "trace_id", "client_timestamp",
    NULL };

/*
 * json_strip_members and json_canonical_except agree: what strip leaves
 * parses, and its canonical form is the canonical form without the
 * members.  So the raw and the canonical fingerprint leave out the same.
 */
static void
strip_agrees(const char *in)
{
	struct json_value *v = NULL, *w = NULL;
	struct buf raw = BUF_INIT, a = BUF_INIT, b = BUF_INIT;

	CU_ASSERT_FATAL(json_parse(in, strlen(in), &v, NULL, 0) == JSON_OK);
	CU_ASSERT_FATAL(json_strip_members(in, strlen(in), strip_names,
	    &raw) == IDEM_OK);
	CU_ASSERT_FATAL(json_parse(raw.data, raw.len, &w, NULL, 0) ==
	    JSON_OK);
	CU_ASSERT_FATAL(json_canonical_except(v, strip_names, &a) ==
	    IDEM_OK);
	CU_ASSERT_FATAL(json_canonical(w, &b) == IDEM_OK);
	CU_ASSERT(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
	CU_ASSERT_EQUAL(json_count_named(w, strip_names), 0);
	json_free(v);
	json_free(w);
	buf_free(&raw);
	buf_free(&a);
	buf_free(&b);
}

static void
test_strip_members(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		/* Nothing named: the bytes as they are. */
		{ "{\"amount\": 1.00, \"currency\": \"BRL\"}",
		  "{\"amount\": 1.00, \"currency\": \"BRL\"}" },
		{ " { } ", " { } " },
		{ "{\"trace_id\": 1}", "{}" },
		{ " {\n  \"trace_id\": 1\n} ", " {\n  \n} " },
		/* Last, first, middle, all, with their separators. */
		{ "{\"a\": 1, \"trace_id\": \"x\"}", "{\"a\": 1}" },
		{ "{\"trace_id\": \"x\", \"a\": 1}", "{\"a\": 1}" },
		{ "{\"a\": 1, \"trace_id\": \"x\", \"b\": 2}",
		  "{\"a\": 1, \"b\": 2}" },
		{ "{\"trace_id\":1,\"a\":1,\"client_timestamp\":2,\"b\":2}",
		  "{\"a\":1,\"b\":2}" },
		{ "{\n  \"a\": 1,\n  \"trace_id\": \"x\"\n}\n",
		  "{\n  \"a\": 1\n}\n" },
		/* A name is matched unescaped, as the tree reads it. */
		{ "{\"a\":1,\"trace\\u005fid\":2}", "{\"a\":1}" },
		{ "{\"a\":1,\"\\u0074race_id\":2}", "{\"a\":1}" },
		/* Near names are other members. */
		{ "{\"a\":1,\"trace_id \":2,\"Trace_id\":3,\"trace_i\":4}",
		  "{\"a\":1,\"trace_id \":2,\"Trace_id\":3,\"trace_i\":4}" },
		/* Only the top level: nested members count. */
		{ "{\"a\":{\"trace_id\":1},\"b\":[{\"trace_id\":2}]}",
		  "{\"a\":{\"trace_id\":1},\"b\":[{\"trace_id\":2}]}" },
		/* A value that looks like members is one value, removed whole. */
		{ "{\"a\":1,\"trace_id\":\"\\\",\\\"a\\\":5\",\"b\":2}",
		  "{\"a\":1,\"b\":2}" },
		{ "{\"trace_id\":{\"a\":[1,{\"b\":\"}\"}]},\"a\":1}",
		  "{\"a\":1}" },
		{ "{\"a\":1,\"trace_id\":\"x\\\\\",\"b\":\"y\"}",
		  "{\"a\":1,\"b\":\"y\"}" },
		{ "{\"a\":\"trace_id\",\"trace_id\":true}",
		  "{\"a\":\"trace_id\"}" },
	};
	struct buf out = BUF_INIT;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		out.len = 0;
		CU_ASSERT_EQUAL_FATAL(json_strip_members(cases[i].in,
		    strlen(cases[i].in), strip_names, &out), IDEM_OK);
		if (out.len != strlen(cases[i].out) ||
		    memcmp(out.data, cases[i].out, out.len) != 0) {
			fprintf(stderr, "strip %s: got %.*s, want %s\n",
			    cases[i].in, (int)out.len, out.data,
			    cases[i].out);
			CU_FAIL("json_strip_members");
		}
		strip_agrees(cases[i].in);
	}
	/* Not an object: refused, so the caller never hashes a guess. */
	CU_ASSERT_EQUAL(json_strip_members("[1]", 3, strip_names, &out),
	    IDEM_EINVAL);
	CU_ASSERT_EQUAL(json_strip_members("\"x\"", 3, strip_names, &out),
	    IDEM_EINVAL);
	buf_free(&out);
}

static void
test_canonical_except(void)
{
	static const char *const none[] = { NULL };
	const char *in = "{\"b\":[{\"trace_id\":1}],\"trace_id\":\"x\","
	    "\"a\":1.0,\"client_timestamp\":3}";
	struct json_value *v = NULL;
	struct buf a = BUF_INIT, b = BUF_INIT;

	CU_ASSERT_FATAL(json_parse(in, strlen(in), &v, NULL, 0) == JSON_OK);
	CU_ASSERT_EQUAL(json_count_named(v, strip_names), 2);
	CU_ASSERT_EQUAL(json_count_named(v, NULL), 0);
	CU_ASSERT_EQUAL(json_canonical_except(v, strip_names, &a), IDEM_OK);
	buf_putc(&a, '\0');
	CU_ASSERT_STRING_EQUAL(a.data, "{\"a\":1,\"b\":[{\"trace_id\":1}]}");
	/* Nothing to leave out: json_canonical byte for byte. */
	a.len = 0;
	CU_ASSERT_EQUAL(json_canonical_except(v, none, &a), IDEM_OK);
	CU_ASSERT_EQUAL(json_canonical(v, &b), IDEM_OK);
	CU_ASSERT(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
	json_free(v);
	buf_free(&a);
	buf_free(&b);
}

int
harness_suites(void)
{
	CU_pSuite s, c, m;

	if ((s = CU_add_suite("json parse", NULL, NULL)) == NULL ||
	    (c = CU_add_suite("json canonical", NULL, NULL)) == NULL ||
	    (m = CU_add_suite("json memory", NULL, NULL)) == NULL)
		return -1;
	if (CU_add_test(s, "RFC 8259 examples", test_rfc_examples) == NULL ||
	    CU_add_test(s, "invalid documents",
	    test_invalid_documents) == NULL ||
	    CU_add_test(s, "white space around",
	    test_whitespace_around) == NULL ||
	    CU_add_test(s, "length, not NUL",
	    test_length_not_nul_terminated) == NULL ||
	    CU_add_test(s, "duplicate names", test_duplicates) == NULL ||
	    CU_add_test(s, "depth limit", test_depth_limit) == NULL ||
	    CU_add_test(s, "valid UTF-8", test_utf8_valid) == NULL ||
	    CU_add_test(s, "invalid UTF-8", test_utf8_invalid) == NULL ||
	    CU_add_test(s, "surrogate escapes",
	    test_surrogate_escapes) == NULL ||
	    CU_add_test(s, "string values", test_string_values) == NULL ||
	    CU_add_test(s, "NUL refused", test_nul_refused) == NULL ||
	    CU_add_test(s, "accessors", test_accessors) == NULL ||
	    CU_add_test(s, "error sentence", test_error_sentence) == NULL ||
	    CU_add_test(s, "status strings", test_strstatus) == NULL ||
	    CU_add_test(s, "duplicates in large objects",
	    test_duplicates_large) == NULL)
		return -1;
	if (CU_add_test(m, "arrays of the cheapest values",
	    test_memory_arrays) == NULL ||
	    CU_add_test(m, "one-character members", test_memory_members) ==
	    NULL ||
	    CU_add_test(m, "nesting to the limit", test_memory_deep) == NULL ||
	    CU_add_test(m, "small documents", test_memory_small) == NULL)
		return -1;
	if (CU_add_test(c, "member order", test_canonical_member_order) ==
	    NULL ||
	    CU_add_test(c, "white space", test_canonical_whitespace) == NULL ||
	    CU_add_test(c, "nested objects sorted",
	    test_canonical_nested_sorted) == NULL ||
	    CU_add_test(c, "equal numbers print alike",
	    test_canonical_numbers_equal) == NULL ||
	    CU_add_test(c, "zeros", test_canonical_zero) == NULL ||
	    CU_add_test(c, "different numbers differ",
	    test_canonical_numbers_differ) == NULL ||
	    CU_add_test(c, "huge exponents",
	    test_canonical_huge_exponents) == NULL ||
	    CU_add_test(c, "\"100\" is not 100",
	    test_canonical_string_not_number) == NULL ||
	    CU_add_test(c, "string escaping", test_canonical_strings) ==
	    NULL ||
	    CU_add_test(c, "canonical is a fixed point",
	    test_canonical_is_fixed_point) == NULL ||
	    CU_add_test(c, "the writer", test_writer) == NULL ||
	    CU_add_test(c, "the writer escapes every byte",
	    test_writer_every_byte) == NULL ||
	    CU_add_test(c, "the writer extends a stored object",
	    test_writer_extend) == NULL ||
	    CU_add_test(c, "members left out of the raw form",
	    test_strip_members) == NULL ||
	    CU_add_test(c, "members left out of the canonical form",
	    test_canonical_except) == NULL)
		return -1;
#ifdef HAVE_CJSON
	if (json_cjson_suite() != 0)
		return -1;
#endif
	return 0;
}
