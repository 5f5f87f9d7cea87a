/* SPDX-License-Identifier: MIT */
/*
 * test_key.c: the Idempotency-Key field parser against RFC 8941 and the
 * leniencies DESIGN.md promises (bare keys, parameters ignored).
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "key.h"

/*
 * Parses field and asserts the status and, when want is not NULL, the key.
 * line is the caller's, so a failure names the case that failed.
 */
static void
key_expect(const char *field, enum key_status status, const char *want,
    int line)
{
	char out[KEY_MAX + 1];
	size_t len = (size_t)-1;
	enum key_status st;

	st = key_parse(field, out, &len);
	if (st != status)
		fprintf(stderr, "  line %d: status %d, want %d\n", line,
		    (int)st, (int)status);
	HARNESS_EQ(st, status);
	if (st == KEY_OK && want != NULL) {
		HARNESS_EQ(len, strlen(want));
		CU_ASSERT_STRING_EQUAL(out, want);
	}
}

#define KEY_EXPECT(field, status, want)					\
	key_expect((field), (status), (want), __LINE__)

static void
test_quoted_simple(void)
{
	KEY_EXPECT("\"8e03978e-40d5-43e8-bc93-6894a57f9324\"", KEY_OK,
	    "8e03978e-40d5-43e8-bc93-6894a57f9324");
	KEY_EXPECT("\"a\"", KEY_OK, "a");
	/* Spaces and the other visible characters are fine inside quotes. */
	KEY_EXPECT("\"a b;c=d,e\"", KEY_OK, "a b;c=d,e");
}

static void
test_bare_uuid(void)
{
	KEY_EXPECT("8e03978e-40d5-43e8-bc93-6894a57f9324", KEY_OK,
	    "8e03978e-40d5-43e8-bc93-6894a57f9324");
	KEY_EXPECT("abc+/=:?!~", KEY_OK, "abc+/=:?!~");
}

static void
test_quoted_and_bare_same_key(void)
{
	char a[KEY_MAX + 1], b[KEY_MAX + 1];
	size_t alen, blen;

	HARNESS_EQ(key_parse("\"k-1\"", a, &alen), KEY_OK);
	HARNESS_EQ(key_parse("k-1", b, &blen), KEY_OK);
	HARNESS_EQ(alen, blen);
	CU_ASSERT_STRING_EQUAL(a, b);
}

static void
test_escapes(void)
{
	KEY_EXPECT("\"a\\\"b\"", KEY_OK, "a\"b");
	KEY_EXPECT("\"a\\\\b\"", KEY_OK, "a\\b");
	KEY_EXPECT("\"\\\\\\\"\"", KEY_OK, "\\\"");
}

static void
test_bad_escapes(void)
{
	/* RFC 8941 section 4.2.5: only \" and \\ are escapes. */
	KEY_EXPECT("\"a\\nb\"", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"a\\u0041\"", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"a\\'\"", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"a\\\"", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"a\\", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"a\\\x01\"", KEY_BAD_CHAR, NULL);
}

static void
test_unterminated(void)
{
	KEY_EXPECT("\"abc", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("  \"abc  ", KEY_BAD_SYNTAX, NULL);
}

static void
test_ows_trimmed(void)
{
	KEY_EXPECT("  \"abc\"  ", KEY_OK, "abc");
	KEY_EXPECT("\t\"abc\"\t", KEY_OK, "abc");
	KEY_EXPECT(" \t abc \t ", KEY_OK, "abc");
	/* The white space inside the quotes is part of the key. */
	KEY_EXPECT("\" abc \"", KEY_OK, " abc ");
}

static void
test_parameters_ignored(void)
{
	KEY_EXPECT("\"abc\";a", KEY_OK, "abc");
	KEY_EXPECT("\"abc\";a=1;b=\"x;y,z\"", KEY_OK, "abc");
	KEY_EXPECT("\"abc\"; a=?0; *b-c.d_e=-1.25;f=tok/en:1", KEY_OK,
	    "abc");
	KEY_EXPECT("\"abc\";sig=:cHJldGVuZA==:", KEY_OK, "abc");
	KEY_EXPECT("\"abc\";a=?1 ", KEY_OK, "abc");
	KEY_EXPECT("\"abc\";a=123456789012345", KEY_OK, "abc");
	KEY_EXPECT("\"abc\";a=123456789012.123", KEY_OK, "abc");
}

static void
test_bad_parameters(void)
{
	KEY_EXPECT("\"abc\";", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"abc\";A=1", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"abc\";1a=1", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"abc\";a=", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"abc\";a=?2", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"abc\";a=1.", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"abc\";a=1.2345", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"abc\";a=1234567890123456", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"abc\";a=1234567890123.5", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"abc\";a=-", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"abc\";a=:abc", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"abc\";a=\"x", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"abc\";a=\"\\x\"", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"abc\";a=1 b", KEY_BAD_SYNTAX, NULL);
	/* RFC 8941 section 4.2.3.2: no space before the ";". */
	KEY_EXPECT("\"abc\" ;a", KEY_BAD_SYNTAX, NULL);
}

static void
test_bare_key_takes_no_parameters(void)
{
	/*
	 * Reading bare "k;a" and "k;b" both as "k" would let two
	 * operations share one key; the client must quote instead.
	 */
	KEY_EXPECT("abc;a=1", KEY_BARE_SEPARATOR, NULL);
	KEY_EXPECT("abc;", KEY_BARE_SEPARATOR, NULL);
}

/*
 * A bare key with a space in it is told so, and how to send it: not a
 * lesson in Structured Field escapes it never used.
 */
static void
test_bare_key_with_space(void)
{
	const char *why;

	KEY_EXPECT("order 42", KEY_BARE_SEPARATOR, NULL);
	KEY_EXPECT("a b c", KEY_BARE_SEPARATOR, NULL);
	/* Spaces around the key are not part of it. */
	KEY_EXPECT("  order-42  ", KEY_OK, "order-42");
	why = key_strstatus(KEY_BARE_SEPARATOR);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "space"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "\"order 42\""));
	CU_ASSERT_PTR_NULL(strstr(why, "escape"));
}

static void
test_multiple(void)
{
	/* What a server makes of two Idempotency-Key lines. */
	KEY_EXPECT("\"a\", \"b\"", KEY_MULTIPLE, NULL);
	KEY_EXPECT("a, b", KEY_MULTIPLE, NULL);
	KEY_EXPECT("a,b", KEY_MULTIPLE, NULL);
	KEY_EXPECT("\"a\";x=1, \"b\"", KEY_MULTIPLE, NULL);
	KEY_EXPECT("\"a\",", KEY_MULTIPLE, NULL);
	KEY_EXPECT(", a", KEY_MULTIPLE, NULL);
	KEY_EXPECT("a, a", KEY_MULTIPLE, NULL);
}

static void
test_comma_inside_string_is_one_key(void)
{
	KEY_EXPECT("\"a,b\"", KEY_OK, "a,b");
	KEY_EXPECT("\"a, b\";p=\"c,d\"", KEY_OK, "a, b");
}

static void
test_length_limit(void)
{
	char field[KEY_MAX + 16], want[KEY_MAX + 2];

	memset(want, 'x', KEY_MAX);
	want[KEY_MAX] = '\0';
	snprintf(field, sizeof(field), "\"%s\"", want);
	KEY_EXPECT(field, KEY_OK, want);
	KEY_EXPECT(want, KEY_OK, want);

	memset(want, 'x', KEY_MAX + 1);
	want[KEY_MAX + 1] = '\0';
	snprintf(field, sizeof(field), "\"%s\"", want);
	KEY_EXPECT(field, KEY_TOO_LONG, NULL);
	KEY_EXPECT(want, KEY_TOO_LONG, NULL);
}

static void
test_length_counted_after_unquoting(void)
{
	char field[2 * KEY_MAX + 16], want[KEY_MAX + 2];
	size_t i, n;

	/* 255 escaped quotes: 512 bytes of field, 255 characters of key. */
	n = 0;
	field[n++] = '"';
	for (i = 0; i < KEY_MAX; i++) {
		field[n++] = '\\';
		field[n++] = '"';
		want[i] = '"';
	}
	field[n++] = '"';
	field[n] = '\0';
	want[KEY_MAX] = '\0';
	KEY_EXPECT(field, KEY_OK, want);

	/* One more escaped character makes 256 once unquoted. */
	memmove(field + 3, field + 1, n);
	field[1] = '\\';
	field[2] = '\\';
	KEY_EXPECT(field, KEY_TOO_LONG, NULL);
}

static void
test_empty(void)
{
	KEY_EXPECT("\"\"", KEY_EMPTY, NULL);
	KEY_EXPECT("", KEY_EMPTY, NULL);
	KEY_EXPECT("   ", KEY_EMPTY, NULL);
	KEY_EXPECT("\t \t", KEY_EMPTY, NULL);
	KEY_EXPECT(" \"\";a=1 ", KEY_EMPTY, NULL);
}

static void
test_missing(void)
{
	char out[KEY_MAX + 1];
	size_t len;

	HARNESS_EQ(key_parse(NULL, out, &len), KEY_MISSING);
}

static void
test_control_chars(void)
{
	KEY_EXPECT("\"a\x01" "b\"", KEY_BAD_CHAR, NULL);
	KEY_EXPECT("a\x1f" "b", KEY_BAD_CHAR, NULL);
	KEY_EXPECT("\"a\x7f\"", KEY_BAD_CHAR, NULL);
	KEY_EXPECT("a\x7f", KEY_BAD_CHAR, NULL);
	KEY_EXPECT("\x01", KEY_BAD_CHAR, NULL);
	/* A tab is OWS around the item but not allowed in a string. */
	KEY_EXPECT("\"a\tb\"", KEY_BAD_CHAR, NULL);
	KEY_EXPECT("\"a\rb\"", KEY_BAD_CHAR, NULL);
	KEY_EXPECT("abc\n", KEY_BAD_CHAR, NULL);
}

static void
test_non_ascii(void)
{
	/* U+00E9 and U+1F600 in UTF-8, quoted and bare. */
	KEY_EXPECT("\"caf\xc3\xa9\"", KEY_BAD_CHAR, NULL);
	KEY_EXPECT("caf\xc3\xa9", KEY_BAD_CHAR, NULL);
	KEY_EXPECT("\xf0\x9f\x98\x80", KEY_BAD_CHAR, NULL);
	KEY_EXPECT("\"\xff\"", KEY_BAD_CHAR, NULL);
}

static void
test_junk_after_item(void)
{
	KEY_EXPECT("\"abc\"def", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\"abc\" \"def\"", KEY_BAD_SYNTAX, NULL);
	/* A bare key's space is told as such (test_bare_key_with_space). */
	KEY_EXPECT("abc def", KEY_BARE_SEPARATOR, NULL);
	KEY_EXPECT("abc\"def\"", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("ab\\c", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT("\\abc", KEY_BAD_SYNTAX, NULL);
	KEY_EXPECT(";a", KEY_BAD_SYNTAX, NULL);
}

static void
test_strstatus_sentences(void)
{
	int st;
	const char *s;

	for (st = 0; st < KEY__MAX; st++) {
		s = key_strstatus((enum key_status)st);
		CU_ASSERT_PTR_NOT_NULL_FATAL(s);
		/* A problem detail is a sentence: a capital and a stop. */
		CU_ASSERT(s[0] >= 'A' && s[0] <= 'Z');
		CU_ASSERT(s[strlen(s) - 1] == '.');
	}
	CU_ASSERT_PTR_NOT_NULL(key_strstatus(KEY__MAX));
	CU_ASSERT_PTR_NOT_NULL(key_strstatus((enum key_status)-1));
	CU_ASSERT(strstr(key_strstatus(KEY_TOO_LONG), "255") != NULL);
}

int
harness_suites(void)
{
	CU_pSuite s;

	if ((s = CU_add_suite("key", NULL, NULL)) == NULL)
		return -1;
	if (CU_add_test(s, "quoted key", test_quoted_simple) == NULL ||
	    CU_add_test(s, "bare UUID", test_bare_uuid) == NULL ||
	    CU_add_test(s, "quoted and bare give the same key",
	    test_quoted_and_bare_same_key) == NULL ||
	    CU_add_test(s, "escapes", test_escapes) == NULL ||
	    CU_add_test(s, "bad escapes", test_bad_escapes) == NULL ||
	    CU_add_test(s, "unterminated string", test_unterminated) == NULL ||
	    CU_add_test(s, "OWS trimmed", test_ows_trimmed) == NULL ||
	    CU_add_test(s, "parameters ignored",
	    test_parameters_ignored) == NULL ||
	    CU_add_test(s, "bad parameters", test_bad_parameters) == NULL ||
	    CU_add_test(s, "bare key takes no parameters",
	    test_bare_key_takes_no_parameters) == NULL ||
	    CU_add_test(s, "bare key with a space",
	    test_bare_key_with_space) == NULL ||
	    CU_add_test(s, "more than one key", test_multiple) == NULL ||
	    CU_add_test(s, "comma inside a string is one key",
	    test_comma_inside_string_is_one_key) == NULL ||
	    CU_add_test(s, "255 ok, 256 too long", test_length_limit) == NULL ||
	    CU_add_test(s, "length counted after unquoting",
	    test_length_counted_after_unquoting) == NULL ||
	    CU_add_test(s, "empty key", test_empty) == NULL ||
	    CU_add_test(s, "missing field", test_missing) == NULL ||
	    CU_add_test(s, "control characters", test_control_chars) == NULL ||
	    CU_add_test(s, "non-ASCII", test_non_ascii) == NULL ||
	    CU_add_test(s, "junk after the item",
	    test_junk_after_item) == NULL ||
	    CU_add_test(s, "status sentences",
	    test_strstatus_sentences) == NULL)
		return -1;
	return 0;
}
