/* SPDX-License-Identifier: MIT */
/*
 * json.c: a strict JSON parser (RFC 8259) and the canonical form that the
 * request fingerprint hashes.
 *
 * The parser is recursive descent with an explicit depth bound, so the C
 * stack it uses is bounded by JSON_MAX_DEPTH whatever the input.  Every
 * read is checked against the end of the text, which need not be
 * NUL-terminated.  Objects are sorted by member name as they are parsed:
 * that finds duplicate names in O(n log n), lets json_get search by
 * bisection, and is the order the canonical form prints.
 *
 * Memory.  A tree is one allocation (struct json_doc): a header, an array
 * of nodes, and an arena holding the text of every string and number.
 * Before parsing, one pass over the text counts the values it can hold
 * (json_count_values); for valid JSON the count is exact, so the node
 * array is neither grown nor wasted.  The arena is len + 1 bytes: a
 * string unescaped, plus its NUL, is never longer than its quoted source,
 * and a number's text needs one more byte than it has, which the byte
 * that ends it pays for.  So a tree of valid JSON costs at most one node
 * per two bytes of text (every value takes a byte, and every value but
 * the last a separator or bracket) plus the text again, the bound json.h
 * promises and the _Static_asserts below check.
 *
 * An array's elements, and an object's members, must be contiguous, but a
 * recursive descent finishes a child's own children before the child.  So
 * the node array is used from both ends: a value is pushed on a stack at
 * the low end when it starts, and when its container closes, its
 * children, then the top of the stack, move in one block to the high end,
 * where nothing moves again.  A value is either on the stack or placed,
 * never both, so the ends never meet.  The root stays at the bottom of the
 * stack, nodes[0], which is what json_free and json_mem find the header
 * from.
 *
 * Canonical numbers.  A JSON number is a decimal value m * 10^e.  It is
 * printed as an optional "-", the significant digits of m with no leading
 * and no trailing zeros, and, when the exponent is not zero, "e" and the
 * exponent in decimal: 100, 100.00, 1e2 and 1.000E+2 all print "1e2";
 * 1.5 prints "15e-1"; 0.001 prints "1e-3"; 123 prints "123".  Every zero
 * (0, -0, 0.0, 0e5, 0e99999999999) prints "0".  The form is itself JSON
 * and parses back to the same text.  The arithmetic is on digit strings
 * and a 64-bit exponent, never floating point.  A non-zero number whose
 * normalised exponent is beyond +-JSON_EXP_LIMIT, or whose significand
 * has more than JSON_DIGITS_MAX digits, is refused as a syntax error
 * (RFC 8259 section 9 lets a parser limit the range and precision of
 * numbers); within those limits the canonical form is exact.  The tree
 * keeps only a number's source text; json_canonical reads it again.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "idem.h"
#include "json.h"

/*
 * Limits on numbers, far beyond any amount an application can carry, and small
 * enough that exponent arithmetic cannot overflow an int64_t:
 * JSON_EXP_LIMIT bounds the normalised exponent, JSON_DIGITS_MAX the
 * digits of the significand, and an exponent as written saturates at
 * JSON_EXP_SAT, which is past any exponent those two allow.
 */
#define JSON_EXP_LIMIT	1000000000LL
#define JSON_DIGITS_MAX	100000000
#define JSON_EXP_SAT	1000000000000000000LL

/*
 * A value.  What n and u hold depends on the type:
 *
 *	JSON_NUMBER	u.text: the source text, n bytes, NUL-terminated
 *	JSON_STRING	u.text: the n unescaped bytes, NUL-terminated
 *	JSON_ARRAY	u.kids: the n elements
 *	JSON_OBJECT	u.kids: 2n nodes, each member's name (a
 *			JSON_STRING) followed by its value, sorted by name
 *
 * Texts live in the arena.  Until its object is finished, a member name's
 * n is the byte offset of the name in the text, for the duplicate error;
 * json_object_finish replaces it by the length.
 */
struct json_value {
	enum json_type		 type;
	size_t			 n;
	union {
		char			*text;
		struct json_value	*kids;
	} u;
};

/* The one allocation of a tree: nodes[0] is the root; the arena follows. */
struct json_doc {
	size_t			 mem;	/* bytes, header included */
	struct json_value	 nodes[];
};

/*
 * The bounds of json.h.  Valid JSON of len bytes: at most (len + 1) / 2
 * nodes, len + 1 bytes of arena, and the header.  Text that fails: at
 * most len / 2 + JSON_MAX_DEPTH / 2 + 2 nodes (json_doc_new).
 */
#define JSON_NODE_HALF	((sizeof(struct json_value) + 1) / 2)
_Static_assert(JSON_NODE_HALF + 1 <= JSON_MEM_PER_BYTE,
    "JSON_MEM_PER_BYTE is too small for the node size");
_Static_assert(sizeof(struct json_doc) + JSON_NODE_HALF + 1 <= JSON_MEM_FIXED,
    "JSON_MEM_FIXED is too small for the header");
_Static_assert(4 * JSON_NODE_HALF + sizeof(struct json_doc) + 1 <=
    JSON_MAX_DEPTH + JSON_MEM_FIXED,
    "JSON_MEM_FIXED is too small for text that fails to parse");

struct json_parser {
	const unsigned char	*start;
	const unsigned char	*p;
	const unsigned char	*end;
	enum json_status	 st;
	const char		*why;	/* static, for the error sentence */
	size_t			 off;	/* where the error was found */
	/* nodes[0, sp) is the stack, nodes[fp, cap) the placed values. */
	struct json_value	*nodes;
	size_t			 sp;
	size_t			 fp;
	char			*bp;	/* the arena's next free byte */
	char			*bend;	/* and its end */
};

static const char *const json_statusstr[JSON_STATUS__MAX] = {
	[JSON_OK] = "success",
	[JSON_ESYNTAX] = "the body is not valid JSON",
	[JSON_EDEPTH] = "the JSON body is nested too deeply",
	[JSON_EDUPLICATE] = "a JSON object names the same member twice",
	[JSON_EUTF8] = "the JSON body is not valid UTF-8",
	[JSON_ENUL] = "a JSON string holds the NUL character",
	[JSON_ENOMEM] = "out of memory while parsing JSON",
};

const char *
json_strstatus(enum json_status status)
{
	if ((unsigned)status >= JSON_STATUS__MAX)
		return "unknown JSON error";
	return json_statusstr[status];
}

/*
 * Records the first error only and returns -1: callers unwind by
 * returning -1, and the innermost failure is the one worth reporting.
 */
static int
json_fail(struct json_parser *ps, enum json_status st, const char *why,
    const unsigned char *at)
{
	if (ps->st == JSON_OK) {
		ps->st = st;
		ps->why = why;
		ps->off = (size_t)(at - ps->start);
	}
	return -1;
}

/* RFC 8259 section 2: ws = *( %x20 / %x09 / %x0A / %x0D ). */
static int
json_is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void
json_skip_ws(struct json_parser *ps)
{
	while (ps->p < ps->end && json_is_ws(*ps->p))
		ps->p++;
}

static int
json_is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/*
 * An upper bound on the nodes that parsing s can make.  A value (a
 * member name counts: it is a node too) is the root, or comes after the
 * '[' or '{' of a non-empty container, or after a ',' or a ':', so for
 * valid JSON the count is exact.  Strings are skipped as the parser reads
 * them (a backslash escapes the next byte), so on any prefix the parser
 * accepts the two agree, and the count bounds what it makes before it
 * finds an error too.
 */
static size_t
json_count_values(const unsigned char *s, size_t len)
{
	size_t i, n = 1;
	unsigned char last = 0;

	for (i = 0; i < len; i++) {
		switch (s[i]) {
		case '"':
			for (i++; i < len && s[i] != '"'; i++)
				if (s[i] == '\\')
					i++;
			last = '"';
			break;
		case '[':
		case '{':
		case ',':
		case ':':
			n++;
			last = s[i];
			break;
		case ']':
		case '}':
			/* An empty container: its opening had no value. */
			if (last == '[' || last == '{')
				n--;
			last = s[i];
			break;
		default:
			if (!json_is_ws(s[i]))
				last = s[i];
			break;
		}
	}
	return n;
}

/*
 * Allocates the tree for the text of ps and points the parser at it.
 * Nodes: the count above, but never more than (len + JSON_MAX_DEPTH + 3)
 * / 2, which no input can exceed either: what the parser has made at any
 * moment is part of a valid document at most JSON_MAX_DEPTH + 2 bytes
 * longer than the text read (close every open container, give a pending
 * name its value), and a valid document of n bytes has at most (n + 1) / 2
 * values.  That caps garbage such as ",,,," or "[[[[" that would fool the
 * count.
 */
static struct json_doc *
json_doc_new(struct json_parser *ps)
{
	size_t len = (size_t)(ps->end - ps->start), cap, limit, size;
	struct json_doc *doc;

	cap = json_count_values(ps->start, len);
	limit = len / 2 + JSON_MAX_DEPTH / 2 + 2;
	if (cap > limit)
		cap = limit;
	if (len > SIZE_MAX / 2 - sizeof(*doc) ||
	    cap > (SIZE_MAX / 2 - sizeof(*doc) - len) / sizeof(doc->nodes[0]))
		return NULL;
	size = sizeof(*doc) + cap * sizeof(doc->nodes[0]) + len + 1;
	if ((doc = malloc(size)) == NULL)
		return NULL;
	doc->mem = size;
	ps->nodes = doc->nodes;
	ps->sp = 0;
	ps->fp = cap;
	ps->bp = (char *)(doc->nodes + cap);
	ps->bend = ps->bp + len + 1;
	return doc;
}

static struct json_doc *
json_doc_of(const struct json_value *root)
{
	return (struct json_doc *)(uintptr_t)((const char *)root -
	    offsetof(struct json_doc, nodes));
}

void
json_free(struct json_value *root)
{
	if (root != NULL)
		free(json_doc_of(root));
}

size_t
json_mem(const struct json_value *root)
{
	return root != NULL ? json_doc_of(root)->mem : 0;
}

/*
 * Pushes a new value on the stack.  json_doc_new made room for every
 * value the text can hold, so running out is a bug in the count; it is
 * refused, never overrun.
 */
static struct json_value *
json_push(struct json_parser *ps, enum json_type type)
{
	struct json_value *v;

	if (ps->sp >= ps->fp) {
		json_fail(ps, JSON_ENOMEM, "more values than counted", ps->p);
		return NULL;
	}
	v = &ps->nodes[ps->sp++];
	v->type = type;
	v->n = 0;
	v->u.kids = NULL;
	return v;
}

/*
 * Moves the top k values of the stack, all the children of the container
 * below them, to the placed end, and returns where they went.  The blocks
 * may overlap when the array is full.
 */
static struct json_value *
json_place(struct json_parser *ps, size_t k)
{
	ps->sp -= k;
	ps->fp -= k;
	memmove(&ps->nodes[ps->fp], &ps->nodes[ps->sp],
	    k * sizeof(ps->nodes[0]));
	return &ps->nodes[ps->fp];
}

/* Appends n bytes to the arena, which, like the stack, cannot run out. */
static int
json_put(struct json_parser *ps, const void *s, size_t n)
{
	if (n > (size_t)(ps->bend - ps->bp))
		return json_fail(ps, JSON_ENOMEM, "more text than counted",
		    ps->p);
	memcpy(ps->bp, s, n);
	ps->bp += n;
	return 0;
}

/*
 * Length of the well-formed UTF-8 sequence at p (Unicode 15, table 3-7),
 * or 0 when it is ill-formed: overlong forms, UTF-16 surrogates encoded
 * in UTF-8 and code points past U+10FFFF are all refused, as RFC 3629
 * section 3 requires.
 */
static size_t
json_utf8_len(const unsigned char *p, const unsigned char *end)
{
	size_t n, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		if (p[0] == 0xe0)
			lo = 0xa0;
		else if (p[0] == 0xed)
			hi = 0x9f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		if (p[0] == 0xf0)
			lo = 0x90;
		else if (p[0] == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

static int
json_hex4(const unsigned char *p, const unsigned char *end, uint32_t *out)
{
	uint32_t v = 0;
	int i;

	if (end - p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		v <<= 4;
		if (p[i] >= '0' && p[i] <= '9')
			v |= (uint32_t)(p[i] - '0');
		else if (p[i] >= 'a' && p[i] <= 'f')
			v |= (uint32_t)(p[i] - 'a' + 10);
		else if (p[i] >= 'A' && p[i] <= 'F')
			v |= (uint32_t)(p[i] - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/*
 * Writes code point cp as UTF-8.  Its escape took at least as many bytes
 * of text: 6 for up to 3 bytes of UTF-8, 12 (a surrogate pair) for 4.
 */
static int
json_put_utf8(struct json_parser *ps, uint32_t cp)
{
	char s[4];
	size_t n;

	if (cp < 0x80) {
		s[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		s[0] = (char)(0xc0 | cp >> 6);
		s[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		s[0] = (char)(0xe0 | cp >> 12);
		s[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		s[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		s[0] = (char)(0xf0 | cp >> 18);
		s[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		s[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		s[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return json_put(ps, s, n);
}

/*
 * Parses the \uXXXX escape whose "u" is at ps->p (RFC 8259 section 7),
 * joining a surrogate pair into one code point.  A high surrogate must be
 * followed at once by an escaped low one, and a low one must not stand
 * alone: a lone surrogate names no character and cannot become UTF-8.
 */
static int
json_parse_uescape(struct json_parser *ps)
{
	const unsigned char *at = ps->p - 1;
	uint32_t cp, lo;

	if (json_hex4(ps->p + 1, ps->end, &cp) != 0)
		return json_fail(ps, JSON_ESYNTAX, "\\u must be followed by "
		    "four hexadecimal digits", at);
	ps->p += 5;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return json_fail(ps, JSON_EUTF8, "a low surrogate escape is "
		    "not preceded by a high surrogate", at);
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (ps->end - ps->p < 2 || ps->p[0] != '\\' ||
		    ps->p[1] != 'u')
			return json_fail(ps, JSON_EUTF8, "a high surrogate "
			    "escape is not followed by a low surrogate", at);
		if (json_hex4(ps->p + 2, ps->end, &lo) != 0)
			return json_fail(ps, JSON_ESYNTAX, "\\u must be "
			    "followed by four hexadecimal digits", ps->p);
		if (lo < 0xdc00 || lo > 0xdfff)
			return json_fail(ps, JSON_EUTF8, "a high surrogate "
			    "escape is not followed by a low surrogate", at);
		ps->p += 6;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	/*
	 * JSON allows U+0000 in a string, but every reader of a string here
	 * is C and would stop at it: "BRL\u0000junk" would pass as "BRL".
	 * A raw NUL byte is already refused as a control character.
	 */
	if (cp == 0)
		return json_fail(ps, JSON_ENUL, "the escape \\u0000", at);
	return json_put_utf8(ps, cp);
}

/*
 * Parses a string whose opening quote is at ps->p into the arena,
 * unescaped and NUL-terminated (RFC 8259 section 7), and sets *out and
 * *len.  Raw control characters are refused; raw bytes of 0x80 and above
 * must form well-formed UTF-8 (RFC 8259 section 8.1).
 */
static int
json_parse_string(struct json_parser *ps, char **out, size_t *len)
{
	const unsigned char *run;
	char *start = ps->bp;
	size_t n;
	char c;

	ps->p++;
	for (;;) {
		/* Copy the longest run that needs no attention at once. */
		for (run = ps->p; ps->p < ps->end && *ps->p >= 0x20 &&
		    *ps->p < 0x80 && *ps->p != '"' && *ps->p != '\\'; ps->p++)
			continue;
		if (json_put(ps, run, (size_t)(ps->p - run)) != 0)
			return -1;
		if (ps->p >= ps->end)
			return json_fail(ps, JSON_ESYNTAX, "unterminated "
			    "string", ps->p);
		if (*ps->p == '"')
			break;
		if (*ps->p < 0x20)
			return json_fail(ps, JSON_ESYNTAX, "a control "
			    "character must be escaped inside a string", ps->p);
		if (*ps->p >= 0x80) {
			if ((n = json_utf8_len(ps->p, ps->end)) == 0)
				return json_fail(ps, JSON_EUTF8, "invalid "
				    "UTF-8 sequence", ps->p);
			if (json_put(ps, ps->p, n) != 0)
				return -1;
			ps->p += n;
			continue;
		}
		/* A backslash. */
		if (++ps->p >= ps->end)
			return json_fail(ps, JSON_ESYNTAX, "unterminated "
			    "string", ps->p);
		switch (*ps->p) {
		case '"':
		case '\\':
		case '/':
			c = (char)*ps->p;
			break;
		case 'b':
			c = '\b';
			break;
		case 'f':
			c = '\f';
			break;
		case 'n':
			c = '\n';
			break;
		case 'r':
			c = '\r';
			break;
		case 't':
			c = '\t';
			break;
		case 'u':
			if (json_parse_uescape(ps) != 0)
				return -1;
			continue;
		default:
			return json_fail(ps, JSON_ESYNTAX, "invalid escape "
			    "sequence", ps->p - 1);
		}
		if (json_put(ps, &c, 1) != 0)
			return -1;
		ps->p++;
	}
	ps->p++;
	if (json_put(ps, "", 1) != 0)
		return -1;
	*out = start;
	*len = (size_t)(ps->bp - start) - 1;
	return 0;
}

unsigned char
json_decimal_digit(const struct json_decimal *d, size_t i)
{
	return i < d->ni ? d->ip[i] : d->fp[i - d->ni];
}

/*
 * Strips the zeros and folds the fraction into the exponent, which on
 * entry is the exponent as written, saturated at +-JSON_EXP_SAT.  Returns
 * -1 when the exponent of the result is beyond +-JSON_EXP_LIMIT.  The
 * limit applies to the normalised exponent, so that the canonical text of
 * any number that parses parses again.
 */
static int
json_decimal_normalise(struct json_decimal *d)
{
	size_t nd = d->ni + d->nf, trail = 0;

	while (d->lead < nd && json_decimal_digit(d, d->lead) == '0')
		d->lead++;
	if (d->lead == nd) {
		d->end = nd;
		d->neg = 0;
		d->exp = 0;
		return 0;
	}
	while (json_decimal_digit(d, nd - 1 - trail) == '0')
		trail++;
	d->end = nd - trail;
	/*
	 * value = digits * 10^(exp - nf), and dropping the trailing zeros
	 * divides the digits by 10^trail.  nf and trail are at most
	 * JSON_DIGITS_MAX and |exp| at most JSON_EXP_SAT, so the sum stays
	 * far inside int64_t.
	 */
	d->exp = d->exp - (int64_t)d->nf + (int64_t)trail;
	if (d->exp > JSON_EXP_LIMIT || d->exp < -JSON_EXP_LIMIT)
		return -1;
	return 0;
}

/* Sets the reason and place of a number's error; returns -1. */
static int
json_decimal_bad(const char **why, const unsigned char **at,
    const char *reason, const unsigned char *where)
{
	*why = reason;
	*at = where;
	return -1;
}

/*
 * Reads and normalises a number (RFC 8259 section 6) at *pp:
 *     [ "-" ] ( "0" / 1-9 *DIGIT ) [ "." 1*DIGIT ] [ ( "e" / "E" )
 *     [ "+" / "-" ] 1*DIGIT ]
 * and leaves *pp after it.  The exponent is read with saturation, so any
 * number of its digits is safe.  On error, *why and *at say what and
 * where.  d points into the text, so it lives as long as the text.
 */
static int
json_decimal_read(struct json_decimal *d, const unsigned char **pp,
    const unsigned char *end, const char **why, const unsigned char **at)
{
	const unsigned char *s = *pp, *p = *pp;
	int eneg = 0;

	memset(d, 0, sizeof(*d));
	if (p < end && *p == '-') {
		d->neg = 1;
		p++;
	}
	d->ip = p;
	if (p >= end || !json_is_digit(*p))
		return json_decimal_bad(why, at, "a number needs a digit", p);
	if (*p == '0') {
		p++;
		if (p < end && json_is_digit(*p))
			return json_decimal_bad(why, at, "a number must not "
			    "have leading zeros", d->ip);
	} else
		while (p < end && json_is_digit(*p))
			p++;
	d->ni = (size_t)(p - d->ip);

	if (p < end && *p == '.') {
		d->fp = ++p;
		while (p < end && json_is_digit(*p))
			p++;
		if ((d->nf = (size_t)(p - d->fp)) == 0)
			return json_decimal_bad(why, at, "a decimal point must "
			    "be followed by a digit", p);
	}
	if (d->ni + d->nf > JSON_DIGITS_MAX)
		return json_decimal_bad(why, at, "a number has too many "
		    "digits", s);

	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			eneg = *p++ == '-';
		if (p >= end || !json_is_digit(*p))
			return json_decimal_bad(why, at, "an exponent needs a "
			    "digit", p);
		for (; p < end && json_is_digit(*p); p++)
			if (d->exp < JSON_EXP_SAT / 10)
				d->exp = d->exp * 10 + (*p - '0');
			else
				d->exp = JSON_EXP_SAT;
		if (eneg)
			d->exp = -d->exp;
	}
	if (json_decimal_normalise(d) != 0)
		return json_decimal_bad(why, at, "a number is out of range", s);
	*pp = p;
	return 0;
}

/* Appends the canonical text of a normalised number to out. */
static int
json_decimal_put(const struct json_decimal *d, struct buf *out)
{
	size_t a, z;
	int rc;

	if (d->lead == d->end)
		return buf_putc(out, '0');
	if (d->neg && (rc = buf_putc(out, '-')) != IDEM_OK)
		return rc;
	/* The significant digits [lead, end) may span the two runs. */
	z = d->end < d->ni ? d->end : d->ni;
	if (d->lead < z && (rc = buf_append(out, d->ip + d->lead,
	    z - d->lead)) != IDEM_OK)
		return rc;
	a = d->lead > d->ni ? d->lead : d->ni;
	if (d->end > a && (rc = buf_append(out, d->fp + (a - d->ni),
	    d->end - a)) != IDEM_OK)
		return rc;
	if (d->exp == 0)
		return IDEM_OK;
	if ((rc = buf_putc(out, 'e')) != IDEM_OK)
		return rc;
	return buf_put_int(out, d->exp);
}

int
json_decimal_parse(const char *text, size_t len, struct json_decimal *d)
{
	const unsigned char *p = (const unsigned char *)text, *at;
	const char *why;

	if (json_decimal_read(d, &p, p + len, &why, &at) != 0 ||
	    p != (const unsigned char *)text + len)
		return -1;
	return 0;
}

/* Parses a number into the arena: its source text, NUL-terminated. */
static int
json_parse_number(struct json_parser *ps)
{
	const unsigned char *s = ps->p, *at;
	struct json_decimal d;
	struct json_value *v;
	const char *why;
	char *text = ps->bp;

	if (json_decimal_read(&d, &ps->p, ps->end, &why, &at) != 0)
		return json_fail(ps, JSON_ESYNTAX, why, at);
	if (json_put(ps, s, (size_t)(ps->p - s)) != 0 ||
	    json_put(ps, "", 1) != 0)
		return -1;
	if ((v = json_push(ps, JSON_NUMBER)) == NULL)
		return -1;
	v->u.text = text;
	v->n = (size_t)(ps->p - s);
	return 0;
}

static int json_parse_value(struct json_parser *, int);

static int
json_parse_array(struct json_parser *ps, int depth)
{
	struct json_value *v;
	size_t self, k = 0;

	if ((v = json_push(ps, JSON_ARRAY)) == NULL)
		return -1;
	self = ps->sp - 1;
	ps->p++;
	json_skip_ws(ps);
	if (ps->p < ps->end && *ps->p == ']') {
		ps->p++;
		return 0;
	}
	for (;;) {
		if (json_parse_value(ps, depth) != 0)
			return -1;
		k++;
		json_skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == ']') {
			ps->p++;
			break;
		}
		return json_fail(ps, JSON_ESYNTAX, "expected ',' or ']' after "
		    "an array element", ps->p);
	}
	v = &ps->nodes[self];
	v->u.kids = json_place(ps, k);
	v->n = k;
	return 0;
}

/* The name of member i of an object whose nodes are kids. */
static const char *
json_name(const struct json_value *kids, size_t i)
{
	return kids[2 * i].u.text;
}

static void
json_member_swap(struct json_value *kids, size_t i, size_t j)
{
	struct json_value t[2];

	memcpy(t, &kids[2 * i], sizeof(t));
	memcpy(&kids[2 * i], &kids[2 * j], sizeof(t));
	memcpy(&kids[2 * j], t, sizeof(t));
}

/* Sifts member i down the max-heap made of the first n members. */
static void
json_member_sift(struct json_value *kids, size_t i, size_t n)
{
	size_t c;

	while ((c = 2 * i + 1) < n) {
		if (c + 1 < n && strcmp(json_name(kids, c),
		    json_name(kids, c + 1)) < 0)
			c++;
		if (strcmp(json_name(kids, i), json_name(kids, c)) >= 0)
			return;
		json_member_swap(kids, i, c);
		i = c;
	}
}

/*
 * Sorts n members bytewise by name (strcmp compares as unsigned char, and
 * no name holds a NUL, so a prefix sorts first).  Heapsort: in place and
 * O(n log n) at worst, so a large object costs no memory beyond its
 * nodes, where qsort may allocate a copy.
 */
static void
json_member_sort(struct json_value *kids, size_t n)
{
	size_t i;

	for (i = n / 2; i-- > 0;)
		json_member_sift(kids, i, n);
	for (i = n; i-- > 1;) {
		json_member_swap(kids, 0, i);
		json_member_sift(kids, 0, i);
	}
}

/*
 * Sorts the members and refuses a name given twice.  RFC 8259 section 4
 * says names SHOULD be unique and leaves duplicates to the parser; this
 * one will not guess which value the client meant.  Names compare after
 * unescaping, so "a" and "\u0061" are the same name.  The error names the
 * second occurrence in the text of the smallest name given twice.
 */
static int
json_object_finish(struct json_parser *ps, struct json_value *v)
{
	struct json_value *kids = v->u.kids;
	size_t i, j, first, second;

	json_member_sort(kids, v->n);
	for (i = 1; i < v->n; i++) {
		if (strcmp(json_name(kids, i - 1), json_name(kids, i)) != 0)
			continue;
		first = second = SIZE_MAX;
		for (j = i - 1; j < v->n && strcmp(json_name(kids, j),
		    json_name(kids, i)) == 0; j++) {
			if (kids[2 * j].n < first) {
				second = first;
				first = kids[2 * j].n;
			} else if (kids[2 * j].n < second)
				second = kids[2 * j].n;
		}
		return json_fail(ps, JSON_EDUPLICATE, "an object names the "
		    "same member twice", ps->start + second);
	}
	for (i = 0; i < v->n; i++)
		kids[2 * i].n = strlen(kids[2 * i].u.text);
	return 0;
}

static int
json_parse_object(struct json_parser *ps, int depth)
{
	struct json_value *v;
	size_t self, m = 0, off, len;
	char *name;

	if ((v = json_push(ps, JSON_OBJECT)) == NULL)
		return -1;
	self = ps->sp - 1;
	ps->p++;
	json_skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '}') {
		ps->p++;
		return 0;
	}
	for (;;) {
		json_skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != '"')
			return json_fail(ps, JSON_ESYNTAX, "expected a member "
			    "name in double quotes", ps->p);
		off = (size_t)(ps->p - ps->start);
		if (json_parse_string(ps, &name, &len) != 0)
			return -1;
		if ((v = json_push(ps, JSON_STRING)) == NULL)
			return -1;
		v->u.text = name;
		v->n = off;
		json_skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != ':')
			return json_fail(ps, JSON_ESYNTAX, "expected ':' after "
			    "a member name", ps->p);
		ps->p++;
		if (json_parse_value(ps, depth) != 0)
			return -1;
		m++;
		json_skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == '}') {
			ps->p++;
			break;
		}
		return json_fail(ps, JSON_ESYNTAX, "expected ',' or '}' after "
		    "an object member", ps->p);
	}
	v = &ps->nodes[self];
	v->u.kids = json_place(ps, 2 * m);
	v->n = m;
	return json_object_finish(ps, v);
}

static int
json_parse_literal(struct json_parser *ps, const char *word,
    enum json_type type)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return json_fail(ps, JSON_ESYNTAX, "unexpected character",
		    ps->p);
	ps->p += n;
	return json_push(ps, type) != NULL ? 0 : -1;
}

/*
 * Parses one value (RFC 8259 section 3) with white space before it and
 * pushes it, a single node whatever it holds.  depth counts the arrays
 * and objects that enclose it.
 */
static int
json_parse_value(struct json_parser *ps, int depth)
{
	struct json_value *v;
	char *s;
	size_t len;

	json_skip_ws(ps);
	if (ps->p >= ps->end)
		return json_fail(ps, JSON_ESYNTAX, "unexpected end of text",
		    ps->p);
	switch (*ps->p) {
	case '{':
	case '[':
		if (depth >= JSON_MAX_DEPTH)
			return json_fail(ps, JSON_EDEPTH, "arrays and objects "
			    "are nested too deeply", ps->p);
		return *ps->p == '{' ? json_parse_object(ps, depth + 1) :
		    json_parse_array(ps, depth + 1);
	case '"':
		if (json_parse_string(ps, &s, &len) != 0)
			return -1;
		if ((v = json_push(ps, JSON_STRING)) == NULL)
			return -1;
		v->u.text = s;
		v->n = len;
		return 0;
	case 't':
		return json_parse_literal(ps, "true", JSON_TRUE);
	case 'f':
		return json_parse_literal(ps, "false", JSON_FALSE);
	case 'n':
		return json_parse_literal(ps, "null", JSON_NULL);
	default:
		if (*ps->p == '-' || json_is_digit(*ps->p))
			return json_parse_number(ps);
		return json_fail(ps, JSON_ESYNTAX, "unexpected character",
		    ps->p);
	}
}

enum json_status
json_parse(const char *text, size_t len, struct json_value **out, char *err,
    size_t errlen)
{
	struct json_parser ps;
	struct json_doc *doc;

	*out = NULL;
	memset(&ps, 0, sizeof(ps));
	ps.start = ps.p = (const unsigned char *)(text != NULL ? text : "");
	ps.end = ps.start + (text != NULL ? len : 0);
	ps.st = JSON_OK;

	/* RFC 8259 section 2: JSON-text = ws value ws, and nothing else. */
	if ((doc = json_doc_new(&ps)) == NULL)
		json_fail(&ps, JSON_ENOMEM, "out of memory", ps.p);
	else if (json_parse_value(&ps, 0) == 0) {
		json_skip_ws(&ps);
		if (ps.p < ps.end)
			json_fail(&ps, JSON_ESYNTAX, "unexpected text after "
			    "the value", ps.p);
	}
	if (ps.st != JSON_OK) {
		free(doc);
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s: %s at byte %zu",
			    json_strstatus(ps.st),
			    ps.why != NULL ? ps.why : "failure", ps.off);
		return ps.st;
	}
	*out = &doc->nodes[0];
	return JSON_OK;
}

enum json_type
json_type(const struct json_value *v)
{
	return v != NULL ? v->type : JSON_NULL;
}

/* Bisection over the sorted names; strcmp is the order they were sorted by. */
const struct json_value *
json_get(const struct json_value *v, const char *name)
{
	size_t lo = 0, hi, mid;
	int c;

	if (v == NULL || v->type != JSON_OBJECT)
		return NULL;
	hi = v->n;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if ((c = strcmp(name, json_name(v->u.kids, mid))) == 0)
			return &v->u.kids[2 * mid + 1];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

size_t
json_count(const struct json_value *v)
{
	if (v == NULL)
		return 0;
	if (v->type == JSON_ARRAY || v->type == JSON_OBJECT)
		return v->n;
	return 0;
}

const struct json_value *
json_at(const struct json_value *v, size_t i)
{
	if (v == NULL || i >= json_count(v))
		return NULL;
	return v->type == JSON_ARRAY ? &v->u.kids[i] : &v->u.kids[2 * i + 1];
}

const char *
json_member_name(const struct json_value *v, size_t i, size_t *len)
{
	if (v == NULL || v->type != JSON_OBJECT || i >= v->n)
		return NULL;
	if (len != NULL)
		*len = v->u.kids[2 * i].n;
	return json_name(v->u.kids, i);
}

const char *
json_text(const struct json_value *v, size_t *len)
{
	if (v == NULL || (v->type != JSON_NUMBER && v->type != JSON_STRING))
		return NULL;
	if (len != NULL)
		*len = v->n;
	return v->u.text;
}

/*
 * What follows the backslash in a byte's escape: 0 for a byte written as
 * it is, 'u' for \u00xx.  Only '"', '\\' and the control characters are
 * escaped (RFC 8259 section 7), the latter in the short form where there
 * is one.
 */
static const char json_esc[256] = {
	'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',		/* 0x00 */
	'b', 't', 'n', 'u', 'f', 'r', 'u', 'u',		/* 0x08 */
	'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',		/* 0x10 */
	'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',		/* 0x18 */
	['"'] = '"',
	['\\'] = '\\',
};

/*
 * Writes a string escaped minimally: '"', '\\' and the control characters
 * only, the latter as \b \f \n \r \t where RFC 8259 section 7 has a short
 * form and as \u00xx (lowercase hex) otherwise.  Everything else,
 * including "/", DEL and non-ASCII UTF-8, is written as is.
 */
static int
json_escape(const char *s, size_t len, struct buf *out)
{
	static const char hex[] = "0123456789abcdef";
	char esc[7];
	size_t i, run = 0;
	unsigned char c;
	int rc;

	if ((rc = buf_putc(out, '"')) != IDEM_OK)
		return rc;
	for (i = 0; i < len; i++) {
		c = (unsigned char)s[i];
		if (json_esc[c] == 0)
			continue;
		if ((rc = buf_append(out, s + run, i - run)) != IDEM_OK)
			return rc;
		run = i + 1;
		esc[0] = '\\';
		esc[1] = json_esc[c];
		if (esc[1] == 'u') {
			memcpy(esc + 2, "00", 2);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 0x0f];
			rc = buf_append(out, esc, 6);
		} else
			rc = buf_append(out, esc, 2);
		if (rc != IDEM_OK)
			return rc;
	}
	if ((rc = buf_append(out, s + run, len - run)) != IDEM_OK)
		return rc;
	return buf_putc(out, '"');
}

void
json_write_init(struct json_writer *w, struct buf *out)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
}

int
json_write_extend(struct json_writer *w, struct buf *out, const void *obj,
    size_t len)
{
	json_write_init(w, out);
	if (len < 3 || ((const char *)obj)[0] != '{' ||
	    ((const char *)obj)[len - 1] != '}')
		return IDEM_EINVAL;
	if ((w->rc = buf_append(out, obj, len - 1)) != IDEM_OK)
		return w->rc;
	w->depth = 1;
	w->more[1] = 1;
	return IDEM_OK;
}

/*
 * Before a value or a member name: the comma that separates it from the
 * one before at its level.  0 when the writer may go on.
 */
static int
json_write_sep(struct json_writer *w)
{
	if (w->rc != IDEM_OK)
		return -1;
	if (w->named) {
		w->named = 0;
		return 0;
	}
	if (w->more[w->depth] && (w->rc = buf_putc(w->out, ',')) != IDEM_OK)
		return -1;
	w->more[w->depth] = 1;
	return 0;
}

void
json_write_open(struct json_writer *w, char c)
{
	if (json_write_sep(w) != 0)
		return;
	if (w->depth >= JSON_MAX_DEPTH) {
		w->rc = IDEM_EINVAL;
		return;
	}
	if ((w->rc = buf_putc(w->out, c)) == IDEM_OK)
		w->more[++w->depth] = 0;
}

void
json_write_close(struct json_writer *w, char c)
{
	if (w->rc != IDEM_OK)
		return;
	if (w->depth == 0) {
		w->rc = IDEM_EINVAL;
		return;
	}
	w->depth--;
	w->rc = buf_putc(w->out, c);
}

void
json_write_name(struct json_writer *w, const char *name)
{
	if (json_write_sep(w) != 0)
		return;
	if ((w->rc = json_escape(name, strlen(name), w->out)) == IDEM_OK &&
	    (w->rc = buf_putc(w->out, ':')) == IDEM_OK)
		w->named = 1;
}

void
json_write_string(struct json_writer *w, const char *s, size_t len)
{
	if (json_write_sep(w) == 0)
		w->rc = json_escape(s, len, w->out);
}

void
json_write_str(struct json_writer *w, const char *s)
{
	json_write_string(w, s, strlen(s));
}

void
json_write_raw(struct json_writer *w, const void *text, size_t len)
{
	if (json_write_sep(w) == 0)
		w->rc = buf_append(w->out, text, len);
}

void
json_write_int(struct json_writer *w, long long v)
{
	if (json_write_sep(w) == 0)
		w->rc = buf_put_int(w->out, v);
}

int
json_write_done(const struct json_writer *w)
{
	return w->rc;
}

/* A number's canonical text, from its source text read once more. */
static int
json_canon_number(const struct json_value *v, struct buf *out)
{
	const unsigned char *p = (const unsigned char *)v->u.text, *at;
	struct json_decimal d;
	const char *why;

	if (json_decimal_read(&d, &p, p + v->n, &why, &at) != 0)
		return IDEM_EINVAL;
	return json_decimal_put(&d, out);
}

static void
json_canon_value(const struct json_value *v, struct json_writer *w)
{
	size_t i;

	switch (v->type) {
	case JSON_NULL:
		json_write_raw(w, "null", 4);
		break;
	case JSON_FALSE:
		json_write_raw(w, "false", 5);
		break;
	case JSON_TRUE:
		json_write_raw(w, "true", 4);
		break;
	case JSON_NUMBER:
		if (json_write_sep(w) == 0)
			w->rc = json_canon_number(v, w->out);
		break;
	case JSON_STRING:
		json_write_string(w, v->u.text, v->n);
		break;
	case JSON_ARRAY:
		json_write_open(w, '[');
		for (i = 0; i < v->n && w->rc == IDEM_OK; i++)
			json_canon_value(&v->u.kids[i], w);
		json_write_close(w, ']');
		break;
	case JSON_OBJECT:
		/* Members were sorted by json_object_finish. */
		json_write_open(w, '{');
		for (i = 0; i < v->n && w->rc == IDEM_OK; i++) {
			json_write_name(w, v->u.kids[2 * i].u.text);
			json_canon_value(&v->u.kids[2 * i + 1], w);
		}
		json_write_close(w, '}');
		break;
	default:
		w->rc = IDEM_EINVAL;
	}
}

int
json_canonical(const struct json_value *v, struct buf *out)
{
	struct json_writer w;

	json_write_init(&w, out);
	json_canon_value(v, &w);
	return json_write_done(&w);
}

/* Whether name is one of names (NULL-terminated, or NULL for none). */
static int
json_name_in(const char *name, const char *const *names)
{
	for (; names != NULL && *names != NULL; names++)
		if (strcmp(name, *names) == 0)
			return 1;
	return 0;
}

size_t
json_count_named(const struct json_value *v, const char *const *names)
{
	size_t i, n = 0;

	if (v == NULL || v->type != JSON_OBJECT)
		return 0;
	for (i = 0; i < v->n; i++)
		n += json_name_in(json_name(v->u.kids, i), names);
	return n;
}

int
json_canonical_except(const struct json_value *v, const char *const *omit,
    struct buf *out)
{
	struct json_writer w;
	size_t i;

	if (v == NULL || v->type != JSON_OBJECT)
		return json_canonical(v, out);
	json_write_init(&w, out);
	json_write_open(&w, '{');
	for (i = 0; i < v->n && w.rc == IDEM_OK; i++) {
		if (json_name_in(json_name(v->u.kids, i), omit))
			continue;
		json_write_name(&w, v->u.kids[2 * i].u.text);
		json_canon_value(&v->u.kids[2 * i + 1], &w);
	}
	json_write_close(&w, '}');
	return json_write_done(&w);
}

/*
 * The span scanner of json_strip_members.  It reads only text json_parse
 * has accepted, so it needs no error paths of its own: it finds where a
 * string or a value ends and nothing more, and every read is still
 * bounded by end.
 */
static const unsigned char *
json_span_ws(const unsigned char *p, const unsigned char *end)
{
	while (p < end && json_is_ws(*p))
		p++;
	return p;
}

/* Past the string whose opening quote is at p. */
static const unsigned char *
json_span_string(const unsigned char *p, const unsigned char *end)
{
	for (p++; p < end && *p != '"'; p++)
		if (*p == '\\')
			p++;
	return p < end ? p + 1 : end;
}

/* Past the value that starts at p. */
static const unsigned char *
json_span_value(const unsigned char *p, const unsigned char *end)
{
	size_t depth = 0;

	while (p < end) {
		if (*p == '"') {
			p = json_span_string(p, end);
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if (*p == '}' || *p == ']') {
			if (depth == 0)
				return p;
			depth--;
		} else if (depth == 0 && (*p == ',' || json_is_ws(*p)))
			return p;
		p++;
	}
	return p;
}

/*
 * Whether the member name quoted in [p, q) is one of omit.  The name is
 * unescaped by json_parse itself (a quoted string is a JSON text), so a
 * name is matched exactly as the tree, and every handler, reads it.
 */
static int
json_span_named(const unsigned char *p, const unsigned char *q,
    const char *const *omit, int *named)
{
	struct json_value *v;
	enum json_status st;

	st = json_parse((const char *)p, (size_t)(q - p), &v, NULL, 0);
	if (st == JSON_ENOMEM)
		return IDEM_ENOMEM;
	if (st != JSON_OK || v->type != JSON_STRING) {
		json_free(v);
		return IDEM_EINVAL;
	}
	*named = json_name_in(v->u.text, omit);
	json_free(v);
	return IDEM_OK;
}

int
json_strip_members(const char *text, size_t len, const char *const *omit,
    struct buf *out)
{
	const unsigned char *s = (const unsigned char *)text, *end = s + len;
	const unsigned char *p, *name, *prev = NULL;
	int rc, named, kept = 0;

	p = json_span_ws(s, end);
	if (p == end || *p != '{')
		return IDEM_EINVAL;
	p = json_span_ws(p + 1, end);
	if (p == end)
		return IDEM_EINVAL;
	if (*p == '}')
		return buf_append(out, text, len);
	if ((rc = buf_append(out, s, (size_t)(p - s))) != IDEM_OK)
		return rc;
	for (;;) {
		if (*p != '"')
			return IDEM_EINVAL;
		name = p;
		p = json_span_string(p, end);
		if ((rc = json_span_named(name, p, omit, &named)) != IDEM_OK)
			return rc;
		p = json_span_ws(p, end);
		if (p == end || *p != ':')
			return IDEM_EINVAL;
		p = json_span_value(json_span_ws(p + 1, end), end);
		if (!named) {
			if (kept && (rc = buf_append(out, prev,
			    (size_t)(name - prev))) != IDEM_OK)
				return rc;
			if ((rc = buf_append(out, name, (size_t)(p - name))) !=
			    IDEM_OK)
				return rc;
			kept = 1;
		}
		prev = p;
		p = json_span_ws(p, end);
		if (p == end)
			return IDEM_EINVAL;
		if (*p == '}')
			break;
		if (*p != ',')
			return IDEM_EINVAL;
		p = json_span_ws(p + 1, end);
		if (p == end)
			return IDEM_EINVAL;
	}
	return buf_append(out, prev, (size_t)(end - prev));
}
