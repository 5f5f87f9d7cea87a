/* SPDX-License-Identifier: MIT */
/*
 * key.h: syntax of the Idempotency-Key request header field.
 *
 * draft-ietf-httpapi-idempotency-key-header-07 section 2 defines the field
 * as an Item Structured Header (RFC 8941 section 3.3) whose value is a
 * String (RFC 8941 section 3.3.3).  Many clients send the key bare, so a
 * bare run of visible characters is accepted too.  Parameters on the item
 * (RFC 8941 section 3.1.2) are parsed and ignored.  A CGI or FastCGI server
 * joins repeated header lines with ", ", so a list of more than one member
 * is reported as KEY_MULTIPLE.
 */
#ifndef IDEM_KEY_H
#define IDEM_KEY_H

#include <stddef.h>

#define KEY_MAX 255

enum key_status {
	KEY_OK = 0,
	KEY_MISSING,    /* no field at all (NULL) */
	KEY_EMPTY,      /* "" or only white space */
	KEY_TOO_LONG,   /* more than KEY_MAX characters once unquoted */
	KEY_BAD_CHAR,   /* a control, non-ASCII or otherwise forbidden byte */
	KEY_BAD_SYNTAX, /* unterminated string, bad escape, junk after the item */
	KEY_MULTIPLE,   /* more than one key (a list) */
	KEY_BARE_SEPARATOR, /* a space or ";" inside a key sent unquoted */
	KEY__MAX
};

/*
 * Parses the field value, which may be NULL when the header is absent.
 * On KEY_OK the unquoted key is written NUL-terminated to out and its
 * length to *outlen; on any other status out is unspecified.
 */
enum key_status key_parse(const char *field, char out[KEY_MAX + 1],
    size_t *outlen);

/* A static sentence explaining status, for a problem's detail. */
const char *key_strstatus(enum key_status status);

#endif
