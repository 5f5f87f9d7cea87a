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
 * numbers); within those limits the canonical form is exact.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "json.h"

/*
 * Limits on numbers, far beyond any value a payment can carry, and small
 * enough that exponent arithmetic cannot overflow an int64_t:
 * JSON_EXP_LIMIT bounds the normalised exponent, JSON_DIGITS_MAX the
 * digits of the significand, and an exponent as written saturates at
 * JSON_EXP_SAT, which is past any exponent those two allow.
 */
#define JSON_EXP_LIMIT	1000000000LL
#define JSON_DIGITS_MAX	100000000
#define JSON_EXP_SAT	1000000000000000000LL

struct json_member {
	char			*name;	/* unescaped, NUL-terminated */
	size_t			 namelen;
	size_t			 off;	/* byte offset of the name */
	struct json_value	*value;
};

struct json_value {
	enum json_type		 type;
	union {
		struct {
			char	*text;	/* source text */
			size_t	 len;
			char	*canon;	/* normalised, see above */
		} num;
		struct {
			char	*data;	/* unescaped, NUL-terminated */
			size_t	 len;
		} str;
		struct {
			struct json_value **items;
			size_t	 n;
		} arr;
		struct {
			struct json_member *members;
			size_t	 n;
		} obj;
	} u;
};

struct json_parser {
	const unsigned char	*start;
	const unsigned char	*p;
	const unsigned char	*end;
	enum json_status	 st;
	const char		*why;	/* static, for the error sentence */
	size_t			 off;	/* where the error was found */
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
 * Records the first error only: callers unwind by returning NULL, and
 * the innermost failure is the one worth reporting.
 */
static void *
json_fail(struct json_parser *ps, enum json_status st, const char *why,
    const unsigned char *at)
{
	if (ps->st == JSON_OK) {
		ps->st = st;
		ps->why = why;
		ps->off = (size_t)(at - ps->start);
	}
	return NULL;
}

static struct json_value *
json_new(struct json_parser *ps, enum json_type type)
{
	struct json_value *v;

	if ((v = calloc(1, sizeof(*v))) == NULL)
		return json_fail(ps, JSON_ENOMEM, "out of memory", ps->p);
	v->type = type;
	return v;
}

void
json_free(struct json_value *v)
{
	size_t i;

	if (v == NULL)
		return;
	switch (v->type) {
	case JSON_NUMBER:
		free(v->u.num.text);
		free(v->u.num.canon);
		break;
	case JSON_STRING:
		free(v->u.str.data);
		break;
	case JSON_ARRAY:
		for (i = 0; i < v->u.arr.n; i++)
			json_free(v->u.arr.items[i]);
		free(v->u.arr.items);
		break;
	case JSON_OBJECT:
		for (i = 0; i < v->u.obj.n; i++) {
			free(v->u.obj.members[i].name);
			json_free(v->u.obj.members[i].value);
		}
		free(v->u.obj.members);
		break;
	default:
		break;
	}
	free(v);
}

/* RFC 8259 section 2: ws = *( %x20 / %x09 / %x0A / %x0D ). */
static void
json_skip_ws(struct json_parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' ||
	    *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static int
json_is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Reallocates an array of *cap elements of size sz to twice as many (4 at
 * first) and updates *cap; NULL when that fails, base still valid.
 */
static void *
json_grow(void *base, size_t *cap, size_t sz)
{
	size_t ncap = *cap ? *cap * 2 : 4;
	void *p;

	if (ncap < *cap || ncap > SIZE_MAX / sz)
		return NULL;
	if ((p = realloc(base, ncap * sz)) != NULL)
		*cap = ncap;
	return p;
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

static int
json_put_utf8(struct buf *b, uint32_t cp)
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
	return buf_append(b, s, n);
}

/*
 * Parses the \uXXXX escape whose "u" is at ps->p (RFC 8259 section 7),
 * joining a surrogate pair into one code point.  A high surrogate must be
 * followed at once by an escaped low one, and a low one must not stand
 * alone: a lone surrogate names no character and cannot become UTF-8.
 */
static int
json_parse_uescape(struct json_parser *ps, struct buf *b)
{
	const unsigned char *at = ps->p - 1;
	uint32_t cp, lo;

	if (json_hex4(ps->p + 1, ps->end, &cp) != 0) {
		json_fail(ps, JSON_ESYNTAX, "\\u must be followed by four "
		    "hexadecimal digits", at);
		return -1;
	}
	ps->p += 5;
	if (cp >= 0xdc00 && cp <= 0xdfff) {
		json_fail(ps, JSON_EUTF8, "a low surrogate escape is not "
		    "preceded by a high surrogate", at);
		return -1;
	}
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (ps->end - ps->p < 2 || ps->p[0] != '\\' ||
		    ps->p[1] != 'u') {
			json_fail(ps, JSON_EUTF8, "a high surrogate escape is "
			    "not followed by a low surrogate", at);
			return -1;
		}
		if (json_hex4(ps->p + 2, ps->end, &lo) != 0) {
			json_fail(ps, JSON_ESYNTAX, "\\u must be followed by "
			    "four hexadecimal digits", ps->p);
			return -1;
		}
		if (lo < 0xdc00 || lo > 0xdfff) {
			json_fail(ps, JSON_EUTF8, "a high surrogate escape is "
			    "not followed by a low surrogate", at);
			return -1;
		}
		ps->p += 6;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	/*
	 * JSON allows U+0000 in a string, but every reader of a string here
	 * is C and would stop at it: "BRL\u0000junk" would pass as "BRL".
	 * A raw NUL byte is already refused as a control character.
	 */
	if (cp == 0) {
		json_fail(ps, JSON_ENUL, "the escape \\u0000", at);
		return -1;
	}
	if (json_put_utf8(b, cp) != IDEM_OK) {
		json_fail(ps, JSON_ENOMEM, "out of memory", at);
		return -1;
	}
	return 0;
}

/*
 * Parses a string whose opening quote is at ps->p into b, unescaped
 * (RFC 8259 section 7).  Raw control characters are refused; raw bytes
 * of 0x80 and above must form well-formed UTF-8 (RFC 8259 section 8.1).
 */
static int
json_parse_string(struct json_parser *ps, struct buf *b)
{
	const unsigned char *run;
	size_t n;
	char c;

	ps->p++;
	for (;;) {
		/* Copy the longest run that needs no attention at once. */
		for (run = ps->p; ps->p < ps->end && *ps->p >= 0x20 &&
		    *ps->p < 0x80 && *ps->p != '"' && *ps->p != '\\'; ps->p++)
			continue;
		if (buf_append(b, run, (size_t)(ps->p - run)) != IDEM_OK) {
			json_fail(ps, JSON_ENOMEM, "out of memory", ps->p);
			return -1;
		}
		if (ps->p >= ps->end) {
			json_fail(ps, JSON_ESYNTAX, "unterminated string",
			    ps->p);
			return -1;
		}
		if (*ps->p == '"') {
			ps->p++;
			return 0;
		}
		if (*ps->p < 0x20) {
			json_fail(ps, JSON_ESYNTAX, "a control character "
			    "must be escaped inside a string", ps->p);
			return -1;
		}
		if (*ps->p >= 0x80) {
			if ((n = json_utf8_len(ps->p, ps->end)) == 0) {
				json_fail(ps, JSON_EUTF8, "invalid UTF-8 "
				    "sequence", ps->p);
				return -1;
			}
			if (buf_append(b, ps->p, n) != IDEM_OK) {
				json_fail(ps, JSON_ENOMEM, "out of memory",
				    ps->p);
				return -1;
			}
			ps->p += n;
			continue;
		}
		/* A backslash. */
		if (++ps->p >= ps->end) {
			json_fail(ps, JSON_ESYNTAX, "unterminated string",
			    ps->p);
			return -1;
		}
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
			if (json_parse_uescape(ps, b) != 0)
				return -1;
			continue;
		default:
			json_fail(ps, JSON_ESYNTAX, "invalid escape sequence",
			    ps->p - 1);
			return -1;
		}
		if (buf_putc(b, c) != IDEM_OK) {
			json_fail(ps, JSON_ENOMEM, "out of memory", ps->p);
			return -1;
		}
		ps->p++;
	}
}

/*
 * A number as sign, significant digits and exponent: the value is
 * (-1)^neg * D * 10^exp, where D is the run of digits [lead, end) of the
 * integer digits followed by the fraction digits, with no leading and no
 * trailing zero.  Zero has lead == end.
 */
struct json_decimal {
	int			 neg;
	const unsigned char	*ip;	/* integer digits */
	size_t			 ni;
	const unsigned char	*fp;	/* fraction digits */
	size_t			 nf;
	size_t			 lead;
	size_t			 end;
	int64_t			 exp;
};

static unsigned char
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

/* The canonical text of a normalised number, or NULL when out of memory. */
static char *
json_decimal_canon(const struct json_decimal *d)
{
	struct buf b = BUF_INIT;
	size_t a, z;

	if (d->lead == d->end) {
		if (buf_putc(&b, '0') != IDEM_OK)
			return NULL;
		return b.data;
	}
	if (d->neg && buf_putc(&b, '-') != IDEM_OK)
		goto fail;
	/* The significant digits [lead, end) may span the two runs. */
	z = d->end < d->ni ? d->end : d->ni;
	if (d->lead < z && buf_append(&b, d->ip + d->lead, z - d->lead) !=
	    IDEM_OK)
		goto fail;
	a = d->lead > d->ni ? d->lead : d->ni;
	if (d->end > a && buf_append(&b, d->fp + (a - d->ni), d->end - a) !=
	    IDEM_OK)
		goto fail;
	if (d->exp != 0 && buf_printf(&b, "e%" PRId64, d->exp) != IDEM_OK)
		goto fail;
	return b.data;
fail:
	buf_free(&b);
	return NULL;
}

/*
 * Parses a number (RFC 8259 section 6):
 *     [ "-" ] ( "0" / 1-9 *DIGIT ) [ "." 1*DIGIT ] [ ( "e" / "E" )
 *     [ "+" / "-" ] 1*DIGIT ]
 * The exponent is read with saturation, so any number of its digits is
 * safe.
 */
static struct json_value *
json_parse_number(struct json_parser *ps)
{
	const unsigned char *s = ps->p;
	struct json_decimal d;
	int eneg = 0;
	struct json_value *v;

	memset(&d, 0, sizeof(d));
	if (ps->p < ps->end && *ps->p == '-') {
		d.neg = 1;
		ps->p++;
	}
	d.ip = ps->p;
	if (ps->p >= ps->end || !json_is_digit(*ps->p))
		return json_fail(ps, JSON_ESYNTAX, "a number needs a digit",
		    ps->p);
	if (*ps->p == '0') {
		ps->p++;
		if (ps->p < ps->end && json_is_digit(*ps->p))
			return json_fail(ps, JSON_ESYNTAX, "a number must "
			    "not have leading zeros", d.ip);
	} else
		while (ps->p < ps->end && json_is_digit(*ps->p))
			ps->p++;
	d.ni = (size_t)(ps->p - d.ip);

	if (ps->p < ps->end && *ps->p == '.') {
		d.fp = ++ps->p;
		while (ps->p < ps->end && json_is_digit(*ps->p))
			ps->p++;
		if ((d.nf = (size_t)(ps->p - d.fp)) == 0)
			return json_fail(ps, JSON_ESYNTAX, "a decimal point "
			    "must be followed by a digit", ps->p);
	}
	if (d.ni + d.nf > JSON_DIGITS_MAX)
		return json_fail(ps, JSON_ESYNTAX, "a number has too many "
		    "digits", s);

	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			eneg = *ps->p++ == '-';
		if (ps->p >= ps->end || !json_is_digit(*ps->p))
			return json_fail(ps, JSON_ESYNTAX, "an exponent "
			    "needs a digit", ps->p);
		for (; ps->p < ps->end && json_is_digit(*ps->p); ps->p++)
			if (d.exp < JSON_EXP_SAT / 10)
				d.exp = d.exp * 10 + (*ps->p - '0');
			else
				d.exp = JSON_EXP_SAT;
		if (eneg)
			d.exp = -d.exp;
	}
	if (json_decimal_normalise(&d) != 0)
		return json_fail(ps, JSON_ESYNTAX, "a number is out of range",
		    s);

	if ((v = json_new(ps, JSON_NUMBER)) == NULL)
		return NULL;
	v->u.num.len = (size_t)(ps->p - s);
	if ((v->u.num.text = malloc(v->u.num.len + 1)) == NULL)
		goto nomem;
	memcpy(v->u.num.text, s, v->u.num.len);
	v->u.num.text[v->u.num.len] = '\0';
	if ((v->u.num.canon = json_decimal_canon(&d)) == NULL)
		goto nomem;
	return v;
nomem:
	json_free(v);
	return json_fail(ps, JSON_ENOMEM, "out of memory", s);
}

static struct json_value *json_parse_value(struct json_parser *, int);

static struct json_value *
json_parse_array(struct json_parser *ps, int depth)
{
	struct json_value *v, *item, **items;
	size_t cap = 0;

	if ((v = json_new(ps, JSON_ARRAY)) == NULL)
		return NULL;
	ps->p++;
	json_skip_ws(ps);
	if (ps->p < ps->end && *ps->p == ']') {
		ps->p++;
		return v;
	}
	for (;;) {
		if ((item = json_parse_value(ps, depth)) == NULL)
			goto fail;
		if (v->u.arr.n == cap) {
			if ((items = json_grow(v->u.arr.items, &cap,
			    sizeof(*items))) == NULL) {
				json_free(item);
				json_fail(ps, JSON_ENOMEM, "out of memory",
				    ps->p);
				goto fail;
			}
			v->u.arr.items = items;
		}
		v->u.arr.items[v->u.arr.n++] = item;
		json_skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == ']') {
			ps->p++;
			return v;
		}
		json_fail(ps, JSON_ESYNTAX, "expected ',' or ']' after an "
		    "array element", ps->p);
		goto fail;
	}
fail:
	json_free(v);
	return NULL;
}

/* Bytewise order of unescaped names; a prefix sorts first. */
static int
json_member_cmp(const void *a, const void *b)
{
	const struct json_member *x = a, *y = b;
	size_t n = x->namelen < y->namelen ? x->namelen : y->namelen;
	int c;

	if (n > 0 && (c = memcmp(x->name, y->name, n)) != 0)
		return c;
	return (x->namelen > y->namelen) - (x->namelen < y->namelen);
}

/*
 * Sorts the members and refuses a name given twice.  RFC 8259 section 4
 * says names SHOULD be unique and leaves duplicates to the parser; this
 * one will not guess which value the client meant.  Names compare after
 * unescaping, so "a" and "\u0061" are the same name.
 */
static int
json_object_finish(struct json_parser *ps, struct json_value *v)
{
	struct json_member *m = v->u.obj.members;
	size_t i, off;

	if (v->u.obj.n < 2)
		return 0;
	qsort(m, v->u.obj.n, sizeof(*m), json_member_cmp);
	for (i = 1; i < v->u.obj.n; i++)
		if (json_member_cmp(&m[i - 1], &m[i]) == 0) {
			off = m[i - 1].off > m[i].off ? m[i - 1].off :
			    m[i].off;
			json_fail(ps, JSON_EDUPLICATE, "an object names the "
			    "same member twice", ps->start + off);
			return -1;
		}
	return 0;
}

static struct json_value *
json_parse_object(struct json_parser *ps, int depth)
{
	struct json_value *v;
	struct json_member *m;
	struct buf name = BUF_INIT;
	size_t cap = 0, off;

	if ((v = json_new(ps, JSON_OBJECT)) == NULL)
		return NULL;
	ps->p++;
	json_skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '}') {
		ps->p++;
		return v;
	}
	for (;;) {
		json_skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != '"') {
			json_fail(ps, JSON_ESYNTAX, "expected a member name "
			    "in double quotes", ps->p);
			goto fail;
		}
		off = (size_t)(ps->p - ps->start);
		buf_reset(&name);
		if (json_parse_string(ps, &name) != 0)
			goto fail;
		json_skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != ':') {
			json_fail(ps, JSON_ESYNTAX, "expected ':' after a "
			    "member name", ps->p);
			goto fail;
		}
		ps->p++;
		if (v->u.obj.n == cap) {
			if ((m = json_grow(v->u.obj.members, &cap,
			    sizeof(*m))) == NULL) {
				json_fail(ps, JSON_ENOMEM, "out of memory",
				    ps->p);
				goto fail;
			}
			v->u.obj.members = m;
		}
		/* An empty name still needs its own allocation. */
		if (buf_reserve(&name, 0) != IDEM_OK) {
			json_fail(ps, JSON_ENOMEM, "out of memory", ps->p);
			goto fail;
		}
		m = &v->u.obj.members[v->u.obj.n];
		m->namelen = name.len;
		m->off = off;
		if ((m->value = json_parse_value(ps, depth)) == NULL)
			goto fail;
		m->name = name.data;
		buf_init(&name);
		v->u.obj.n++;
		json_skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == '}') {
			ps->p++;
			break;
		}
		json_fail(ps, JSON_ESYNTAX, "expected ',' or '}' after an "
		    "object member", ps->p);
		goto fail;
	}
	if (json_object_finish(ps, v) != 0)
		goto fail;
	return v;
fail:
	buf_free(&name);
	json_free(v);
	return NULL;
}

static struct json_value *
json_parse_literal(struct json_parser *ps, const char *word,
    enum json_type type)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return json_fail(ps, JSON_ESYNTAX, "unexpected character",
		    ps->p);
	ps->p += n;
	return json_new(ps, type);
}

/*
 * Parses one value (RFC 8259 section 3) with white space before it.
 * depth counts the arrays and objects that enclose it.
 */
static struct json_value *
json_parse_value(struct json_parser *ps, int depth)
{
	struct json_value *v;
	struct buf b = BUF_INIT;

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
		if (json_parse_string(ps, &b) != 0) {
			buf_free(&b);
			return NULL;
		}
		/* An empty string still gets its own allocation. */
		if (buf_reserve(&b, 0) != IDEM_OK) {
			buf_free(&b);
			return json_fail(ps, JSON_ENOMEM, "out of memory",
			    ps->p);
		}
		if ((v = json_new(ps, JSON_STRING)) == NULL) {
			buf_free(&b);
			return NULL;
		}
		v->u.str.data = b.data;
		v->u.str.len = b.len;
		return v;
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
	struct json_value *v;

	*out = NULL;
	memset(&ps, 0, sizeof(ps));
	ps.start = ps.p = (const unsigned char *)(text != NULL ? text : "");
	ps.end = ps.start + (text != NULL ? len : 0);
	ps.st = JSON_OK;

	/* RFC 8259 section 2: JSON-text = ws value ws, and nothing else. */
	if ((v = json_parse_value(&ps, 0)) != NULL) {
		json_skip_ws(&ps);
		if (ps.p < ps.end) {
			json_fail(&ps, JSON_ESYNTAX, "unexpected text after "
			    "the value", ps.p);
			json_free(v);
			v = NULL;
		}
	}
	if (v == NULL) {
		if (ps.st == JSON_OK)
			ps.st = JSON_ENOMEM;
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s: %s at byte %zu",
			    json_strstatus(ps.st),
			    ps.why != NULL ? ps.why : "failure", ps.off);
		return ps.st;
	}
	*out = v;
	return JSON_OK;
}

enum json_type
json_type(const struct json_value *v)
{
	return v != NULL ? v->type : JSON_NULL;
}

const struct json_value *
json_get(const struct json_value *v, const char *name)
{
	struct json_member key;
	const struct json_member *m;

	if (v == NULL || v->type != JSON_OBJECT || v->u.obj.n == 0)
		return NULL;
	memset(&key, 0, sizeof(key));
	key.name = (char *)(uintptr_t)name;
	key.namelen = strlen(name);
	m = bsearch(&key, v->u.obj.members, v->u.obj.n,
	    sizeof(*v->u.obj.members), json_member_cmp);
	return m != NULL ? m->value : NULL;
}

size_t
json_count(const struct json_value *v)
{
	if (v == NULL)
		return 0;
	if (v->type == JSON_ARRAY)
		return v->u.arr.n;
	if (v->type == JSON_OBJECT)
		return v->u.obj.n;
	return 0;
}

const char *
json_text(const struct json_value *v, size_t *len)
{
	if (v == NULL)
		return NULL;
	if (v->type == JSON_NUMBER) {
		if (len != NULL)
			*len = v->u.num.len;
		return v->u.num.text;
	}
	if (v->type == JSON_STRING) {
		if (len != NULL)
			*len = v->u.str.len;
		return v->u.str.data;
	}
	return NULL;
}

/*
 * Writes a string escaped minimally: '"', '\\' and the control characters
 * only, the latter as \b \f \n \r \t where RFC 8259 section 7 has a short
 * form and as \u00xx (lowercase hex) otherwise.  Everything else,
 * including "/", DEL and non-ASCII UTF-8, is written as is.
 */
static int
json_canon_string(const char *s, size_t len, struct buf *out)
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
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		if ((rc = buf_append(out, s + run, i - run)) != IDEM_OK)
			return rc;
		run = i + 1;
		esc[0] = '\\';
		switch (c) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 0x0f];
			if ((rc = buf_append(out, esc, 6)) != IDEM_OK)
				return rc;
			continue;
		}
		if ((rc = buf_append(out, esc, 2)) != IDEM_OK)
			return rc;
	}
	if ((rc = buf_append(out, s + run, len - run)) != IDEM_OK)
		return rc;
	return buf_putc(out, '"');
}

int
json_canonical(const struct json_value *v, struct buf *out)
{
	size_t i;
	int rc;

	switch (v->type) {
	case JSON_NULL:
		return buf_puts(out, "null");
	case JSON_FALSE:
		return buf_puts(out, "false");
	case JSON_TRUE:
		return buf_puts(out, "true");
	case JSON_NUMBER:
		return buf_puts(out, v->u.num.canon);
	case JSON_STRING:
		return json_canon_string(v->u.str.data, v->u.str.len, out);
	case JSON_ARRAY:
		if ((rc = buf_putc(out, '[')) != IDEM_OK)
			return rc;
		for (i = 0; i < v->u.arr.n; i++) {
			if (i > 0 && (rc = buf_putc(out, ',')) != IDEM_OK)
				return rc;
			if ((rc = json_canonical(v->u.arr.items[i], out)) !=
			    IDEM_OK)
				return rc;
		}
		return buf_putc(out, ']');
	case JSON_OBJECT:
		/* Members were sorted by json_object_finish. */
		if ((rc = buf_putc(out, '{')) != IDEM_OK)
			return rc;
		for (i = 0; i < v->u.obj.n; i++) {
			if (i > 0 && (rc = buf_putc(out, ',')) != IDEM_OK)
				return rc;
			if ((rc = json_canon_string(v->u.obj.members[i].name,
			    v->u.obj.members[i].namelen, out)) != IDEM_OK)
				return rc;
			if ((rc = buf_putc(out, ':')) != IDEM_OK)
				return rc;
			if ((rc = json_canonical(v->u.obj.members[i].value,
			    out)) != IDEM_OK)
				return rc;
		}
		return buf_putc(out, '}');
	default:
		return IDEM_EINVAL;
	}
}
