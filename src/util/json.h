/* SPDX-License-Identifier: MIT */
/*
 * json.h: a strict JSON parser (RFC 8259) for request bodies, and the
 * canonical form the fingerprint hashes.
 *
 * Numbers keep their source text, so money is never passed through binary
 * floating point.  Duplicate member names are an error (RFC 8259 section 4
 * leaves them undefined; we refuse to guess which one a client meant).
 * Strings must be valid UTF-8 with valid escapes, and must not contain
 * the NUL character (the escape \u0000): every consumer of a string is C,
 * where "BRL\u0000junk" would silently read as "BRL".  Nesting is limited
 * to JSON_MAX_DEPTH.
 *
 * The canonical form: object members sorted by their unescaped names
 * (bytewise), no insignificant white space, strings re-escaped minimally
 * (only '"', '\\' and control characters, as \uXXXX except the short
 * escapes \b \f \n \r \t), numbers normalised so that equal decimal values
 * print alike: 100, 100.0, 1e2 and 1.00E+2 all print as the same text, and
 * -0 prints as 0.  Strings and numbers never compare equal: "100" and 100
 * have different canonical forms.
 *
 * Memory.  A tree costs at most JSON_MEM_PER_BYTE bytes per byte of text,
 * plus JSON_MEM_FIXED, whatever the shape of the document: for any text
 * of len bytes that parses, json_mem(root) <= JSON_MEM_PER_BYTE * len +
 * JSON_MEM_FIXED.  A parse makes that one allocation and no other; text
 * that fails to parse costs at most JSON_MEM_PER_BYTE * (len +
 * JSON_MAX_DEPTH) + JSON_MEM_FIXED until json_parse returns.
 */
#ifndef IDEM_JSON_H
#define IDEM_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define JSON_MAX_DEPTH 64
#define JSON_MEM_PER_BYTE 13
#define JSON_MEM_FIXED 64

enum json_type {
	JSON_NULL,
	JSON_FALSE,
	JSON_TRUE,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT,
	JSON_TYPE__MAX
};

enum json_status {
	JSON_OK = 0,
	JSON_ESYNTAX,    /* not JSON */
	JSON_EDEPTH,     /* nested deeper than JSON_MAX_DEPTH */
	JSON_EDUPLICATE, /* an object names a member twice */
	JSON_EUTF8,      /* invalid UTF-8 or a lone surrogate escape */
	JSON_ENUL,       /* a string or member name holds \u0000 */
	JSON_ENOMEM,
	JSON_STATUS__MAX
};

struct json_value;

/*
 * Parses len bytes of text (not NUL-terminated) into a tree owned by the
 * caller, freed with json_free.  On failure *out is NULL and, when err is
 * not NULL, a sentence naming the byte offset is written to err.  The
 * tree keeps no pointer into text, which the caller may free at once.
 * Every value in the tree lives until json_free of its root.
 */
enum json_status json_parse(const char *text, size_t len,
    struct json_value **out, char *err, size_t errlen);

/*
 * Frees a whole tree.  root must be what json_parse gave (or NULL), never
 * a value inside a tree.
 */
void json_free(struct json_value *root);

/* Bytes of heap the tree of root holds (see "Memory" above); 0 for NULL. */
size_t json_mem(const struct json_value *root);

enum json_type json_type(const struct json_value *v);

/* Object member by name, or NULL when v is not an object or has none. */
const struct json_value *json_get(const struct json_value *v, const char *name);

/* Number of members of an object or elements of an array; 0 otherwise. */
size_t json_count(const struct json_value *v);

/*
 * Element i of an array, or the value of member i of an object, whose
 * members are in the order of their names (bytewise, as the canonical
 * form prints them); NULL when v is neither or i >= json_count(v).
 */
const struct json_value *json_at(const struct json_value *v, size_t i);

/*
 * The unescaped name of member i of an object, NUL-terminated, with its
 * length in *len when len is not NULL; NULL when v is not an object or
 * i >= json_count(v).  Valid while the tree lives.
 */
const char *json_member_name(const struct json_value *v, size_t i,
    size_t *len);

/*
 * A number's source text or a string's unescaped bytes, NUL-terminated;
 * *len, when not NULL, gets the length, which is the text's strlen since
 * no string holds a NUL.  NULL for other types.  Valid while the tree
 * lives.
 */
const char *json_text(const struct json_value *v, size_t *len);

/* Appends the canonical form of v to out.  IDEM_OK or IDEM_ENOMEM. */
int json_canonical(const struct json_value *v, struct buf *out);

/*
 * Fingerprint exclusions: an endpoint may name top-level members of its
 * body that do not count toward the request's fingerprint (doc/DESIGN.md,
 * "Fingerprint exclusions").  names is a NULL-terminated list of
 * unescaped member names, or NULL for none; a name is matched after
 * unescaping, so "trace\u005fid" is the member trace_id, as json_get
 * finds it.
 */

/* How many members of the object v are named in names; 0 for others. */
size_t json_count_named(const struct json_value *v, const char *const *names);

/*
 * The canonical form of v with the top-level members named in omit left
 * out (when v is an object; nested members always count).  With no such
 * member it is json_canonical's output byte for byte.  IDEM_OK or
 * IDEM_ENOMEM.
 */
int json_canonical_except(const struct json_value *v,
    const char *const *omit, struct buf *out);

/*
 * The raw form of the same: text, which must be a JSON object that
 * json_parse accepted, with the span of each top-level member named in
 * omit removed, from its name's opening quote to the end of its value,
 * together with the separator before it (from the end of the previous
 * member's value), or, for the first member, the one after it.  So
 * {"a": 1, "t": 2} and {"t": 2, "a": 1} both give {"a": 1}, the bytes a
 * client that does not send "t" sends; everything else, the white space
 * inside and around the kept members, is kept as it is.  Appended to
 * out; IDEM_OK, IDEM_ENOMEM, or IDEM_EINVAL when text is not such an
 * object.
 */
int json_strip_members(const char *text, size_t len,
    const char *const *omit, struct buf *out);

/*
 * A writer of JSON text into a buffer: the one way JSON is written, by
 * the canonical form and by every response.  It places the commas and
 * escapes strings as the canonical form does (json_write_string); the
 * caller writes a well-formed document, opening and closing what it
 * opens.  The first error (IDEM_ENOMEM) sticks: later writes do nothing
 * and json_write_done returns it, so a writer's caller checks once.
 */
struct json_writer {
	struct buf	*out;
	int		 rc;
	int		 named;	/* a member name was just written */
	unsigned	 depth;
	unsigned char	 more[JSON_MAX_DEPTH + 1]; /* level has a value */
};

void json_write_init(struct json_writer *w, struct buf *out);
/*
 * Starts a writer that adds members to obj, a non-empty JSON object made
 * before (a stored representation): its text but the closing brace goes
 * to out, and the caller writes members and then closes it with
 * json_write_close(w, '}').  IDEM_EINVAL when obj is not such an object.
 */
int json_write_extend(struct json_writer *w, struct buf *out,
    const void *obj, size_t len);
/* Opens an object ('{') or an array ('['); closed by json_write_close. */
void json_write_open(struct json_writer *w, char c);
void json_write_close(struct json_writer *w, char c);
/* An object member's name; its value is the next thing written. */
void json_write_name(struct json_writer *w, const char *name);
/* A string value, len bytes of s, escaped. */
void json_write_string(struct json_writer *w, const char *s, size_t len);
/* A string value, NUL-terminated. */
void json_write_str(struct json_writer *w, const char *s);
/*
 * A value written as given: a number's text, true, false, null, or a
 * whole JSON value made before (a stored representation).
 */
void json_write_raw(struct json_writer *w, const void *text, size_t len);
void json_write_int(struct json_writer *w, long long v);
/* IDEM_OK, or the first error of the writer's writes. */
int json_write_done(const struct json_writer *w);

const char *json_strstatus(enum json_status status);

/*
 * A number as sign, significant digits and exponent: the value is
 * (-1)^neg * D * 10^exp, where D is the run of digits [lead, end) of the
 * integer digits followed by the fraction digits, with no leading and no
 * trailing zero.  Zero has lead == end (and neg 0, exp 0).  The digits
 * point into the text the number was read from.
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

/*
 * Reads len bytes of text, which must be one JSON number and nothing
 * else, by the grammar and within the bounds json_parse applies (RFC 8259
 * section 6; at most JSON_DIGITS_MAX digits, a normalised exponent within
 * +-JSON_EXP_LIMIT).  0, or -1 when json_parse would refuse it.
 */
int json_decimal_parse(const char *text, size_t len, struct json_decimal *d);

/* The i-th digit character of the integer digits then the fraction. */
unsigned char json_decimal_digit(const struct json_decimal *d, size_t i);

#endif
