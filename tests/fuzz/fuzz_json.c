/* SPDX-License-Identifier: MIT */
/*
 * fuzz_json.c: libFuzzer target for the JSON parser and canonical form.
 *
 * Besides not crashing, the canonical form must be a fixed point: for any
 * x that parses, canonical(x) parses too and canonical(canonical(x)) is
 * canonical(x) byte for byte.  Otherwise two retries of one request could
 * fingerprint differently depending on who serialised the body.
 *
 * And the promises of json.h: a tree holds at most JSON_MEM_PER_BYTE
 * bytes per byte of text plus JSON_MEM_FIXED; no string holds a NUL; and
 * the parser never runs out of the room it counted before parsing, which
 * it would report as JSON_ENOMEM (a real allocation failure cannot happen
 * here: libFuzzer's malloc limit stops the run first).
 *
 * And the fingerprint exclusions agree (json.h): for an object, what
 * json_strip_members leaves of the text parses, names none of the
 * members left out, and its canonical form is json_canonical_except's.
 * So the raw and the canonical fingerprint leave out the same members,
 * and no text can make the raw one keep or drop something else.
 *
 * And, in a build that found cJSON (HAVE_CJSON), the tree is the one
 * cJSON reads from the same text whenever cJSON accepts it too
 * (json_cjson_same), so a parser that is wrong without crashing is
 * caught.  Text only one of them accepts is not compared.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "json.h"
#ifdef HAVE_CJSON
#include "json_cjson.h"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Names that seeds and mutations meet often: short, and one escaped. */
static const char *const fuzz_omit[] = { "a", "t_1", "", NULL };

/* Aborts unless the raw and the canonical exclusions of v agree. */
static void
fuzz_json_strip(const uint8_t *data, size_t size, const struct json_value *v)
{
	struct buf raw = BUF_INIT, a = BUF_INIT, b = BUF_INIT;
	struct json_value *w = NULL;
	int rc;

	rc = json_strip_members((const char *)data, size, fuzz_omit, &raw);
	if (json_type(v) != JSON_OBJECT) {
		if (rc != IDEM_EINVAL)
			abort();
		goto out;
	}
	if (rc == IDEM_ENOMEM)
		goto out;
	if (rc != IDEM_OK ||
	    json_parse(raw.data, raw.len, &w, NULL, 0) != JSON_OK ||
	    json_count_named(w, fuzz_omit) != 0 ||
	    json_count(w) + json_count_named(v, fuzz_omit) != json_count(v))
		abort();
	if (json_canonical_except(v, fuzz_omit, &a) != IDEM_OK ||
	    json_canonical(w, &b) != IDEM_OK)
		goto out;
	if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
		abort();
out:
	json_free(w);
	buf_free(&raw);
	buf_free(&a);
	buf_free(&b);
}

#ifdef HAVE_CJSON
/* Aborts unless cJSON refuses the text or reads the tree v from it. */
static void
fuzz_json_cjson(const uint8_t *data, size_t size,
    const struct json_value *v)
{
	char why[512];
	cJSON *c;

	if ((c = json_cjson_parse((const char *)data, size)) == NULL)
		return;
	if (json_cjson_same(v, c, why, sizeof(why)) != 0) {
		fprintf(stderr, "json.c and cJSON differ: %s\n", why);
		abort();
	}
	cJSON_Delete(c);
}
#endif

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_value *v = NULL, *w = NULL;
	struct buf once = BUF_INIT, twice = BUF_INIT;
	char err[128];
	enum json_status st;
	const char *text;
	size_t len;

	st = json_parse((const char *)data, size, &v, err, sizeof(err));
	if ((unsigned)st >= JSON_STATUS__MAX || st == JSON_ENOMEM)
		abort();
	if (st != JSON_OK) {
		if (v != NULL || memchr(err, '\0', sizeof(err)) == NULL)
			abort();
		return 0;
	}
	if (json_mem(v) > JSON_MEM_PER_BYTE * size + JSON_MEM_FIXED)
		abort();
	if ((text = json_text(v, &len)) != NULL && strlen(text) != len)
		abort();
#ifdef HAVE_CJSON
	fuzz_json_cjson(data, size, v);
#endif
	fuzz_json_strip(data, size, v);
	if (json_canonical(v, &once) != IDEM_OK)
		goto out;
	if (json_parse(once.data, once.len, &w, err, sizeof(err)) != JSON_OK)
		abort();
	if (json_canonical(w, &twice) != IDEM_OK)
		goto out;
	if (once.len != twice.len || memcmp(once.data, twice.data,
	    once.len) != 0)
		abort();
	/* Canonical text has no insignificant white space at its ends. */
	if (once.len == 0 || once.data[0] == ' ' ||
	    once.data[once.len - 1] == ' ')
		abort();
out:
	json_free(v);
	json_free(w);
	buf_free(&once);
	buf_free(&twice);
	return 0;
}
