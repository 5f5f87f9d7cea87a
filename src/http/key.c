/* SPDX-License-Identifier: MIT */
/*
 * key.c: parser of the Idempotency-Key request header field.
 *
 * draft-ietf-httpapi-idempotency-key-header-07 section 2 makes the field an
 * Item Structured Header Field (RFC 8941 section 3.3) whose bare item is a
 * String (RFC 8941 section 3.3.3).  The grammar implemented here:
 *
 *     field      = OWS item OWS
 *     item       = ( sf-string / bare-key ) parameters
 *     sf-string  = DQUOTE *( unescaped / "\" ( DQUOTE / "\" ) ) DQUOTE
 *     unescaped  = %x20-21 / %x23-5B / %x5D-7E
 *     bare-key   = 1*( %x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E )
 *     parameters = *( ";" *SP key [ "=" bare-item ] )
 *
 * A field value is one line: the server has already removed the CRLF and
 * joined repeated lines with ", " (RFC 9110 section 5.3), so a top-level
 * comma means the client sent more than one key.
 *
 * The parser reads the field once, left to right, and stops at the first
 * error, so its cost is bounded by KEY_MAX plus the length of whatever
 * parameters precede the error.
 */
#include <stddef.h>
#include <string.h>

#include "key.h"

static const char *const key_statusstr[KEY__MAX] = {
	[KEY_OK] = "The Idempotency-Key header is valid.",
	[KEY_MISSING] = "This request needs an Idempotency-Key header: send "
	    "a unique key, such as a random UUID, and reuse it on every "
	    "retry of the same operation.",
	[KEY_EMPTY] = "The Idempotency-Key header is empty: send a unique "
	    "key, such as a random UUID, and reuse it on every retry of the "
	    "same operation.",
	[KEY_TOO_LONG] = "The Idempotency-Key is longer than 255 "
	    "characters; use a shorter key, such as a random UUID.",
	[KEY_BAD_CHAR] = "The Idempotency-Key contains a control character, "
	    "a non-ASCII byte or a tab inside a quoted string; only visible "
	    "ASCII characters and spaces are allowed.",
	[KEY_BAD_SYNTAX] = "The Idempotency-Key is not a valid Structured "
	    "Field String (RFC 8941 section 3.3.3): check the quotes, the "
	    "escapes (only \\\" and \\\\ are allowed) and the parameters.",
	[KEY_MULTIPLE] = "The request carries more than one Idempotency-Key; "
	    "send exactly one key per request.",
	[KEY_BARE_SEPARATOR] = "The Idempotency-Key has a space or a \";\" "
	    "in it: send a key without them, such as a random UUID, or send "
	    "the whole key in double quotes, as in Idempotency-Key: "
	    "\"order 42\".",
};

const char *
key_strstatus(enum key_status status)
{
	if ((unsigned)status >= KEY__MAX)
		return "The Idempotency-Key header could not be checked.";
	return key_statusstr[status];
}

/*
 * A byte that no rule of the grammar allows at this point is a bad
 * character when it could never appear in a header key at all (controls,
 * DEL, bytes of a non-ASCII encoding), and a syntax error otherwise.
 */
static enum key_status
key_reject(unsigned char c)
{
	if (c < 0x20 || c >= 0x7f)
		return KEY_BAD_CHAR;
	return KEY_BAD_SYNTAX;
}

static int
key_is_ows(unsigned char c)
{
	return c == ' ' || c == '\t';
}

static int
key_is_lcalpha(unsigned char c)
{
	return c >= 'a' && c <= 'z';
}

static int
key_is_alpha(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
key_is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* The characters of the lenient bare form of the key, defined above. */
static int
key_is_bare(unsigned char c)
{
	return c >= 0x21 && c <= 0x7e && c != '"' && c != ',' && c != ';' &&
	    c != '\\';
}

/* tchar, RFC 9110 section 5.6.2, the body of an sf-token. */
static int
key_is_tchar(unsigned char c)
{
	if (key_is_alpha(c) || key_is_digit(c))
		return 1;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int
key_is_base64(unsigned char c)
{
	return key_is_alpha(c) || key_is_digit(c) || c == '+' || c == '/' ||
	    c == '=';
}

/*
 * Parses an sf-string starting at the opening DQUOTE at *pp (RFC 8941
 * section 4.2.5) and leaves *pp after the closing one.  When out is not
 * NULL the unescaped value is written there, and a value longer than
 * KEY_MAX is refused as soon as it gets there; *len gets the length.
 * Parameter values (out NULL) are validated but not kept or bounded.
 */
static enum key_status
key_parse_string(const char **pp, char *out, size_t *len)
{
	const unsigned char *p = (const unsigned char *)*pp + 1;
	size_t n = 0;
	unsigned char c;

	for (;;) {
		c = *p++;
		if (c == '\0')
			return KEY_BAD_SYNTAX;
		if (c == '"')
			break;
		if (c == '\\') {
			/*
			 * Section 4.2.5 step 4.2: only DQUOTE and backslash
			 * may follow; anything else, the end included, fails.
			 */
			c = *p++;
			if (c != '"' && c != '\\')
				return c == '\0' ? KEY_BAD_SYNTAX :
				    key_reject(c);
		} else if (c < 0x20 || c >= 0x7f)
			return KEY_BAD_CHAR;
		if (out != NULL) {
			if (n == KEY_MAX)
				return KEY_TOO_LONG;
			out[n] = (char)c;
		}
		n++;
	}
	if (len != NULL)
		*len = n;
	*pp = (const char *)p;
	return KEY_OK;
}

/*
 * Parses an sf-integer or sf-decimal (RFC 8941 section 4.2.4): at most 15
 * digits for an integer, at most 12 before and 1 to 3 after the point for
 * a decimal.
 */
static enum key_status
key_parse_number(const char **pp)
{
	const unsigned char *p = (const unsigned char *)*pp;
	size_t ndig = 0, nfrac = 0;

	if (*p == '-')
		p++;
	while (key_is_digit(*p)) {
		if (++ndig > 15)
			return KEY_BAD_SYNTAX;
		p++;
	}
	if (ndig == 0)
		return KEY_BAD_SYNTAX;
	if (*p == '.') {
		if (ndig > 12)
			return KEY_BAD_SYNTAX;
		p++;
		while (key_is_digit(*p)) {
			if (++nfrac > 3)
				return KEY_BAD_SYNTAX;
			p++;
		}
		if (nfrac == 0)
			return KEY_BAD_SYNTAX;
	}
	*pp = (const char *)p;
	return KEY_OK;
}

/*
 * Parses a bare item used as a parameter value (RFC 8941 section 4.2.3.1):
 * string, number, boolean, byte sequence or token.  The value is checked
 * and then forgotten.
 */
static enum key_status
key_parse_bare_item(const char **pp)
{
	const unsigned char *p = (const unsigned char *)*pp;

	if (*p == '"')
		return key_parse_string(pp, NULL, NULL);
	if (*p == '-' || key_is_digit(*p))
		return key_parse_number(pp);
	if (*p == '?') {
		/* Section 4.2.8: a boolean is exactly ?0 or ?1. */
		if (p[1] != '0' && p[1] != '1')
			return p[1] == '\0' ? KEY_BAD_SYNTAX : key_reject(p[1]);
		*pp += 2;
		return KEY_OK;
	}
	if (*p == ':') {
		/* Section 4.2.7: base64 up to the closing colon. */
		for (p++; key_is_base64(*p); p++)
			continue;
		if (*p != ':')
			return *p == '\0' ? KEY_BAD_SYNTAX : key_reject(*p);
		*pp = (const char *)p + 1;
		return KEY_OK;
	}
	if (key_is_alpha(*p) || *p == '*') {
		/* Section 4.2.6: a token. */
		for (p++; key_is_tchar(*p) || *p == ':' || *p == '/'; p++)
			continue;
		*pp = (const char *)p;
		return KEY_OK;
	}
	return *p == '\0' ? KEY_BAD_SYNTAX : key_reject(*p);
}

/*
 * Parses the parameters after an item (RFC 8941 section 4.2.3.2):
 * ";" then optional SP, a key of lcalpha or "*" followed by lcalpha,
 * digits, "_", "-", "." or "*", and an optional "=" bare-item.  The
 * draft gives parameters of this field no meaning, so they are ignored;
 * a later duplicate would override an earlier one, which ignoring both
 * does too.
 */
static enum key_status
key_parse_params(const char **pp)
{
	const unsigned char *p = (const unsigned char *)*pp;
	enum key_status st;

	while (*p == ';') {
		p++;
		while (*p == ' ')
			p++;
		if (!key_is_lcalpha(*p) && *p != '*')
			return *p == '\0' ? KEY_BAD_SYNTAX : key_reject(*p);
		for (p++; key_is_lcalpha(*p) || key_is_digit(*p) ||
		    *p == '_' || *p == '-' || *p == '.' || *p == '*'; p++)
			continue;
		if (*p == '=') {
			p++;
			*pp = (const char *)p;
			if ((st = key_parse_bare_item(pp)) != KEY_OK)
				return st;
			p = (const unsigned char *)*pp;
		}
	}
	*pp = (const char *)p;
	return KEY_OK;
}

/*
 * Parses the lenient bare form.  A bare key takes no parameters: a client
 * that sends bare "k;a" and "k;b" for two operations means two keys, and
 * reading both as "k" with a parameter would replay one operation's
 * answer to the other.  So the ";" that would start parameters is a
 * syntax error here, and the client is told to quote the key.
 */
static enum key_status
key_parse_bare(const char **pp, char *out, size_t *len)
{
	const unsigned char *p = (const unsigned char *)*pp;
	size_t n = 0;

	while (key_is_bare(*p)) {
		if (n == KEY_MAX)
			return KEY_TOO_LONG;
		out[n++] = (char)*p++;
	}
	if (*p == ';')
		return KEY_BARE_SEPARATOR;
	*len = n;
	*pp = (const char *)p;
	return KEY_OK;
}

enum key_status
key_parse(const char *field, char out[KEY_MAX + 1], size_t *outlen)
{
	const char *p = field;
	enum key_status st;
	size_t n = 0;

	if (field == NULL)
		return KEY_MISSING;

	/* RFC 9110 section 5.5: OWS around a field value is not part of it. */
	while (key_is_ows((unsigned char)*p))
		p++;
	if (*p == '\0')
		return KEY_EMPTY;

	if (*p == '"') {
		if ((st = key_parse_string(&p, out, &n)) != KEY_OK)
			return st;
		if ((st = key_parse_params(&p)) != KEY_OK)
			return st;
	} else if (key_is_bare((unsigned char)*p)) {
		if ((st = key_parse_bare(&p, out, &n)) != KEY_OK)
			return st;
		/* More of the key after a space: it needed quotes. */
		while (key_is_ows((unsigned char)*p))
			p++;
		if (key_is_bare((unsigned char)*p) || *p == ';')
			return KEY_BARE_SEPARATOR;
	} else if (*p != ',')
		return key_reject((unsigned char)*p);

	while (key_is_ows((unsigned char)*p))
		p++;
	/*
	 * A comma outside a string starts another list member (RFC 8941
	 * section 4.2.1), even an empty one: "a, " and ", a" are what a
	 * server makes of a repeated header line, one of them empty.
	 */
	if (*p == ',')
		return KEY_MULTIPLE;
	if (*p != '\0')
		return key_reject((unsigned char)*p);
	if (n == 0)
		return KEY_EMPTY;
	out[n] = '\0';
	*outlen = n;
	return KEY_OK;
}
