/* SPDX-License-Identifier: MIT */
/*
 * json_cjson.h: json.c's trees compared with cJSON's, for the tests.
 *
 * cJSON is the independent reference the strict parser is checked
 * against: where both accept a document, both must read the same tree
 * from it.  Where only one accepts, nothing is compared: cJSON accepts
 * documents RFC 8259 does not (leading zeros, "2.", raw control
 * characters in strings), keeps duplicate member names and cuts a string
 * at \u0000, which json.c refuses by its policy (json.h).
 */
#ifndef IDEM_TEST_JSON_CJSON_H
#define IDEM_TEST_JSON_CJSON_H

#include <stddef.h>

#include <cJSON.h>

#include "json.h"

/*
 * Parses len bytes of text with cJSON as json_parse reads them: the whole
 * text is one value with nothing after it but white space (a copy, NUL
 * terminated, given to cJSON_ParseWithLengthOpts with its NUL and
 * require_null_terminated).  The tree is the caller's, freed with
 * cJSON_Delete; NULL when cJSON refuses the text or runs out of memory.
 */
cJSON *json_cjson_parse(const char *text, size_t len);

/*
 * 0 when a (json.c's) and b (cJSON's) are the same tree: the same type
 * at every place; arrays of the same length whose elements are the same
 * pairwise; objects with as many members, each of a's names found in b
 * exactly once, with the same value; strings and names equal byte for
 * byte; numbers equal as doubles (a's text read with strtod against b's
 * valuedouble, so an overflow is an infinity on both sides).  Otherwise
 * -1, and a sentence naming the first difference and where it is (a path
 * such as $.a[2]) is written to why.
 */
int json_cjson_same(const struct json_value *a, const cJSON *b, char *why,
    size_t whylen);

#endif
