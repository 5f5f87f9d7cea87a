/* SPDX-License-Identifier: MIT */
/*
 * fuzz_key.c: libFuzzer target for the Idempotency-Key field parser.
 *
 * The field reaches key_parse as a C string, so the input is cut at its
 * first NUL.  Besides not crashing, a key that parses must honour the
 * promises of key.h: at most KEY_MAX bytes, NUL-terminated, of visible
 * ASCII or space, and the same key when it is quoted again and reparsed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "key.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Quotes key as an sf-string (RFC 8941 section 4.1.6) into out. */
static void
fuzz_quote(const char *key, size_t len, char *out)
{
	size_t i, n = 0;

	out[n++] = '"';
	for (i = 0; i < len; i++) {
		if (key[i] == '"' || key[i] == '\\')
			out[n++] = '\\';
		out[n++] = key[i];
	}
	out[n++] = '"';
	out[n] = '\0';
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *field, out[KEY_MAX + 1], again[KEY_MAX + 1];
	char quoted[2 * KEY_MAX + 3];
	size_t len, len2, i;
	enum key_status st;

	if ((field = malloc(size + 1)) == NULL)
		return 0;
	memcpy(field, data, size);
	field[size] = '\0';

	st = key_parse(field, out, &len);
	if ((unsigned)st >= KEY__MAX)
		abort();
	if (key_strstatus(st) == NULL)
		abort();
	if (st == KEY_OK) {
		if (len == 0 || len > KEY_MAX || out[len] != '\0')
			abort();
		for (i = 0; i < len; i++)
			if ((unsigned char)out[i] < 0x20 ||
			    (unsigned char)out[i] > 0x7e)
				abort();
		fuzz_quote(out, len, quoted);
		if (key_parse(quoted, again, &len2) != KEY_OK ||
		    len2 != len || memcmp(out, again, len) != 0)
			abort();
	}
	free(field);
	return 0;
}
