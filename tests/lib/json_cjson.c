/* SPDX-License-Identifier: MIT */
/*
 * json_cjson.c: json.c's trees compared with cJSON's (json_cjson.h).
 *
 * The walk goes down both trees at once, json.c's members by position (in
 * the order of their names) and cJSON's by name, since cJSON keeps the
 * order of the text.  A path to the place being compared, $ for the root,
 * is kept for the sentence that names a difference.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_cjson.h"

struct json_cjson_walk {
	char	 path[256];
	size_t	 plen;
	char	*why;
	size_t	 whylen;
};

cJSON *
json_cjson_parse(const char *text, size_t len)
{
	cJSON *t;
	char *s;

	if ((s = malloc(len + 1)) == NULL)
		return NULL;
	memcpy(s, text, len);
	s[len] = '\0';
	/*
	 * With require_null_terminated, cJSON wants the NUL within the
	 * length it is given: after the value and its white space, the next
	 * byte must be that NUL, so nothing may follow the value.
	 */
	t = cJSON_ParseWithLengthOpts(s, len + 1, NULL, 1);
	free(s);
	return t;
}

/* cJSON's type as json.c names it, or JSON_TYPE__MAX for cJSON_Raw. */
static enum json_type
json_cjson_type(const cJSON *b)
{
	if (cJSON_IsNull(b))
		return JSON_NULL;
	if (cJSON_IsFalse(b))
		return JSON_FALSE;
	if (cJSON_IsTrue(b))
		return JSON_TRUE;
	if (cJSON_IsNumber(b))
		return JSON_NUMBER;
	if (cJSON_IsString(b))
		return JSON_STRING;
	if (cJSON_IsArray(b))
		return JSON_ARRAY;
	if (cJSON_IsObject(b))
		return JSON_OBJECT;
	return JSON_TYPE__MAX;
}

static int
json_cjson_differ(struct json_cjson_walk *w, const char *what)
{
	if (w->whylen > 0)
		snprintf(w->why, w->whylen, "%.*s: %s", (int)w->plen, w->path,
		    what);
	return -1;
}

/*
 * Appends a step to the path; returns the length to cut it back to.  A
 * path too long for the buffer is cut short, which only shortens the
 * sentence.
 */
static size_t
json_cjson_push(struct json_cjson_walk *w, const char *name, size_t len,
    size_t index)
{
	size_t was = w->plen, room = sizeof(w->path) - w->plen;
	int n;

	if (name != NULL)
		n = snprintf(w->path + w->plen, room, ".%.*s",
		    len > 64 ? 64 : (int)len, name);
	else
		n = snprintf(w->path + w->plen, room, "[%zu]", index);
	if (n > 0)
		w->plen += (size_t)n < room ? (size_t)n : room - 1;
	return was;
}

/* Whether a cJSON string (NUL-terminated) is the len bytes of s. */
static int
json_cjson_bytes(const char *c, const char *s, size_t len)
{
	return c != NULL && strlen(c) == len && memcmp(c, s, len) == 0;
}

static int json_cjson_value(struct json_cjson_walk *,
    const struct json_value *, const cJSON *);

static int
json_cjson_array(struct json_cjson_walk *w, const struct json_value *a,
    const cJSON *b)
{
	const cJSON *e;
	size_t i, n = json_count(a), was;

	if ((size_t)cJSON_GetArraySize(b) != n)
		return json_cjson_differ(w, "arrays of different lengths");
	for (i = 0, e = b->child; i < n; i++, e = e->next) {
		was = json_cjson_push(w, NULL, 0, i);
		if (json_cjson_value(w, json_at(a, i), e) != 0)
			return -1;
		w->plen = was;
	}
	return 0;
}

static int
json_cjson_object(struct json_cjson_walk *w, const struct json_value *a,
    const cJSON *b)
{
	const cJSON *e, *found;
	const char *name;
	size_t i, n = json_count(a), len, times, was;

	if ((size_t)cJSON_GetArraySize(b) != n)
		return json_cjson_differ(w,
		    "objects with different numbers of members");
	for (i = 0; i < n; i++) {
		name = json_member_name(a, i, &len);
		was = json_cjson_push(w, name, len, 0);
		found = NULL;
		times = 0;
		for (e = b->child; e != NULL; e = e->next)
			if (json_cjson_bytes(e->string, name, len)) {
				found = e;
				times++;
			}
		if (times != 1)
			return json_cjson_differ(w, times == 0 ?
			    "a member cJSON does not have" :
			    "a member cJSON has more than once");
		if (json_cjson_value(w, json_at(a, i), found) != 0)
			return -1;
		w->plen = was;
	}
	return 0;
}

static int
json_cjson_value(struct json_cjson_walk *w, const struct json_value *a,
    const cJSON *b)
{
	const char *text;
	size_t len;

	if (a == NULL || b == NULL)
		return json_cjson_differ(w, "a value missing");
	if (json_type(a) != json_cjson_type(b))
		return json_cjson_differ(w, "values of different types");
	switch (json_type(a)) {
	case JSON_NUMBER:
		/*
		 * Equal as doubles: an overflow is an infinity of the same
		 * sign on both sides, and infinities of one sign compare
		 * equal.  No JSON number reads as a NaN.
		 */
		if (strtod(json_text(a, NULL), NULL) != b->valuedouble)
			return json_cjson_differ(w, "numbers that differ");
		return 0;
	case JSON_STRING:
		text = json_text(a, &len);
		if (!json_cjson_bytes(b->valuestring, text, len))
			return json_cjson_differ(w, "strings that differ");
		return 0;
	case JSON_ARRAY:
		return json_cjson_array(w, a, b);
	case JSON_OBJECT:
		return json_cjson_object(w, a, b);
	default:
		return 0;
	}
}

int
json_cjson_same(const struct json_value *a, const cJSON *b, char *why,
    size_t whylen)
{
	struct json_cjson_walk w;

	w.path[0] = '$';
	w.path[1] = '\0';
	w.plen = 1;
	w.why = why;
	w.whylen = whylen;
	if (whylen > 0)
		why[0] = '\0';
	return json_cjson_value(&w, a, b);
}
