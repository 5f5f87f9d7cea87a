/* SPDX-License-Identifier: MIT */
/*
 * list.c: the lists' walker (list.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "idem.h"
#include "json.h"
#include "list.h"
#include "problem.h"
#include "shared.h"

/*
 * The ids of one page, and one more to tell whether there are more.  For
 * ending_before, ids is a ring of the last max ids seen before the
 * cursor; list_page_order puts them newest first.
 */
struct list_page {
	const struct list_index *ix;
	const struct list_query *q;
	char (*ids)[LIST_ID_MAX + 1];
	size_t max;             /* the page's limit, plus one */
	size_t n;               /* ids held */
	size_t seen;            /* ending_before: entries before the cursor */
	int found;              /* the cursor's entry was met */
	int rc;                 /* IDEM_ECORRUPT: an entry that names no id */
	/*
	 * A seek's place (list_index.place): until the cursor is found,
	 * every entry starts with it, and the first that does not means
	 * the index has no entry for the cursor.  NULL: a walk.
	 */
	const struct buf *place;
};

/*
 * How many 0xff bytes after a place sort past every entry that starts
 * with it: more than any entry's tail (an id, or a row's name).
 */
#define LIST_PLACE_TAIL 64

/* The id an index entry names, or NULL when it names none. */
static const char *
list_entry_id(const struct list_index *ix, const void *key, size_t keylen,
    const void *val, size_t vallen)
{
	/*
	 * The id is the entry's value; entries written when ids named rows
	 * have none, and end their key with the id instead.
	 */
	if (vallen == ix->idlen)
		return val;
	if (vallen == 0 && (ix->legacy_keylen != 0 ?
	    keylen == ix->legacy_keylen : keylen > ix->idlen))
		return (const char *)key + keylen - ix->idlen;
	return NULL;
}

static void
list_keep(struct list_page *p, size_t slot, const char *id)
{
	memcpy(p->ids[slot], id, p->ix->idlen);
	p->ids[slot][p->ix->idlen] = '\0';
}

static int
list_collect(void *ctx, const void *key, size_t keylen, const void *val,
    size_t vallen)
{
	struct list_page *p = ctx;
	const char *id;
	int cursor;

	if ((id = list_entry_id(p->ix, key, keylen, val, vallen)) == NULL) {
		p->rc = IDEM_ECORRUPT;
		return 1;
	}
	cursor = p->q->from != LIST_FROM_NEWEST &&
	    strlen(p->q->cursor) == p->ix->idlen &&
	    memcmp(id, p->q->cursor, p->ix->idlen) == 0;
	/* A seek: skip to the cursor among its millisecond's entries. */
	if (p->place != NULL && !p->found) {
		if (keylen < p->place->len ||
		    memcmp(key, p->place->data, p->place->len) != 0)
			return 1;
		p->found = cursor;
		return 0;
	}
	if (p->place != NULL) {
		list_keep(p, p->n, id);
		return ++p->n == p->max;
	}
	switch (p->q->from) {
	case LIST_AFTER:
		if (!p->found) {
			p->found = cursor;
			return 0;
		}
		break;
	case LIST_BEFORE:
		if (cursor) {
			p->found = 1;
			return 1;
		}
		list_keep(p, p->seen++ % p->max, id);
		p->n = p->seen < p->max ? p->seen : p->max;
		return 0;
	case LIST_FROM_NEWEST:
	default:
		break;
	}
	list_keep(p, p->n, id);
	return ++p->n == p->max;
}

/*
 * An ending_before page: the limit ids just before the cursor, newest
 * first, then the one more that makes has_more, when there was one.
 * The ring (the first max ids) is copied in that order into the second
 * max, which list_answer allocated for it, and back.
 */
static void
list_page_order(struct list_page *p)
{
	char (*out)[LIST_ID_MAX + 1] = p->ids + p->max;
	size_t i, first;

	if (p->seen <= p->q->limit)
		return;     /* the ring never wrapped: in order already */
	/* The farthest from the cursor, the extra one, is at seen % max. */
	first = p->seen % p->max;
	for (i = 0; i < p->q->limit; i++)
		memcpy(out[i], p->ids[(first + 1 + i) % p->max],
		    sizeof(*out));
	memcpy(out[p->q->limit], p->ids[first], sizeof(*out));
	memcpy(p->ids, out, p->max * sizeof(*out));
}

/*
 * An ending_before page read by a seek, oldest first: its limit ids
 * newest first, then the one more that makes has_more, when there was
 * one.
 */
static void
list_page_reverse(struct list_page *p)
{
	char tmp[LIST_ID_MAX + 1];
	size_t i, n = p->n < p->q->limit ? p->n : p->q->limit;

	for (i = 0; i < n / 2; i++) {
		memcpy(tmp, p->ids[i], sizeof(tmp));
		memcpy(p->ids[i], p->ids[n - 1 - i], sizeof(tmp));
		memcpy(p->ids[n - 1 - i], tmp, sizeof(tmp));
	}
}

/*
 * Reads the page: from the newest entry, or, with a cursor on a list
 * whose index places its items, from the cursor's place (p->place is
 * then set): back from past its millisecond's last entry for
 * starting_after, on from its first for ending_before.  IDEM_ENOTFOUND
 * when the cursor is no item of the list.
 */
static int
list_read(const struct list_index *ix, struct list_page *p,
    struct buf *place)
{
	int rc;

	if (p->q->from == LIST_FROM_NEWEST || ix->place == NULL)
		return ix->scan(ix->ctx, NULL, 0, 1, list_collect, p);
	if ((rc = ix->place(ix->ctx, p->q->cursor, place)) != IDEM_OK)
		return rc;
	if (place->len == 0)
		return ix->scan(ix->ctx, NULL, 0, 1, list_collect, p);
	p->place = place;
	if (p->q->from == LIST_BEFORE)
		return ix->scan(ix->ctx, place->data, place->len, 0,
		    list_collect, p);
	/* The place and its tail of 0xff: past every entry of it. */
	if ((rc = buf_reserve(place, LIST_PLACE_TAIL)) != IDEM_OK)
		return rc;
	memset(place->data + place->len, 0xff, LIST_PLACE_TAIL);
	rc = ix->scan(ix->ctx, place->data, place->len + LIST_PLACE_TAIL, 1,
	    list_collect, p);
	return rc;
}

/* Whether name (len bytes) is the parameter want. */
static int
list_is(const char *name, size_t len, const char *want)
{
	return len == strlen(want) && memcmp(name, want, len) == 0;
}

/*
 * Appends name (len bytes of a query) to the detail at d, as printable
 * ASCII: another byte is shown as "?", a long name cut with "...", and
 * past a few names, the rest as one "...".
 */
static void
list_name_put(struct buf *d, const char *name, size_t len)
{
	size_t i;

	if (d->len >= 200) {
		if (d->len < 5 || memcmp(d->data + d->len - 5, ", ...", 5) != 0)
			buf_append(d, ", ...", 5);
		return;
	}
	if (d->len > 0)
		buf_append(d, ", ", 2);
	for (i = 0; i < len && i < 40; i++)
		buf_putc(d, name[i] > 0x20 && name[i] < 0x7f ? name[i] : '?');
	if (len > 40)
		buf_append(d, "...", 3);
}

/* Reads limit's value (len bytes at v). */
static int
list_limit_parse(const char *v, size_t len, size_t *limit)
{
	size_t i, n = 0;

	if (len == 0 || len > 3)
		return -1;
	for (i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		n = n * 10 + (size_t)(v[i] - '0');
	}
	if (n < 1 || n > LIST_LIMIT_MAX)
		return -1;
	*limit = n;
	return 0;
}

/* Checks one name=value of the query into q; the 400's detail if not. */
static int
list_param(const char *s, size_t len, struct list_query *q,
    unsigned *given, struct buf *unknown, char *why, size_t whylen)
{
	const char *eq = memchr(s, '=', len);
	size_t nlen = eq != NULL ? (size_t)(eq - s) : len;
	const char *v = eq != NULL ? eq + 1 : s + len;
	size_t vlen = len - nlen - (eq != NULL);
	unsigned bit;

	if (list_is(s, nlen, "limit"))
		bit = 1;
	else if (list_is(s, nlen, "starting_after"))
		bit = 2;
	else if (list_is(s, nlen, "ending_before"))
		bit = 4;
	else {
		list_name_put(unknown, s, nlen);
		return 0;
	}
	if (*given & bit) {
		snprintf(why, whylen, "%.*s may be given once.", (int)nlen, s);
		return -1;
	}
	*given |= bit;
	if (bit == 1) {
		if (list_limit_parse(v, vlen, &q->limit) != 0) {
			snprintf(why, whylen, "limit must be a whole number "
			    "from 1 to %d.", LIST_LIMIT_MAX);
			return -1;
		}
		return 0;
	}
	if (vlen == 0 || vlen > LIST_ID_MAX) {
		snprintf(why, whylen, "%.*s must be the id of an item of "
		    "this list.", (int)nlen, s);
		return -1;
	}
	q->from = bit == 2 ? LIST_AFTER : LIST_BEFORE;
	memcpy(q->cursor, v, vlen);
	q->cursor[vlen] = '\0';
	return 0;
}

int
list_query_parse(const char *query, struct list_query *q,
    struct response *resp)
{
	struct buf unknown = BUF_INIT;
	const char *p = query != NULL ? query : "", *amp;
	char why[160];
	unsigned given = 0;
	size_t len;
	int rc = 0;

	memset(q, 0, sizeof(*q));
	q->limit = LIST_LIMIT_DEFAULT;
	for (; rc == 0 && *p != '\0'; p += len + (*amp == '&')) {
		amp = p + strcspn(p, "&");
		len = (size_t)(amp - p);
		/* An empty parameter ("a=1&&b=2", a trailing "&") is none. */
		if (len > 0)
			rc = list_param(p, len, q, &given, &unknown, why,
			    sizeof(why));
	}
	if (rc == 0 && (given & 6) == 6) {
		snprintf(why, sizeof(why), "Give starting_after or "
		    "ending_before, not both.");
		rc = -1;
	}
	if (rc != 0)
		problem_build(resp, PROBLEM_BAD_REQUEST, "%s", why);
	else if (unknown.len > 0) {
		problem_build(resp, PROBLEM_BAD_REQUEST, "Unknown query "
		    "parameter: %.*s. This list takes limit, starting_after "
		    "and ending_before.", (int)unknown.len,
		    (const char *)unknown.data);
		rc = -1;
	}
	buf_free(&unknown);
	return rc;
}

/* Writes the page's items and has_more into w's object. */
static int
list_write(const struct list_page *p, size_t limit, struct json_writer *w)
{
	size_t i;
	int rc = IDEM_OK;

	json_write_open(w, '{');
	json_write_name(w, "data");
	json_write_open(w, '[');
	for (i = 0; rc == IDEM_OK && i < p->n && i < limit; i++)
		if ((rc = p->ix->item(p->ix->ctx, p->ids[i], w)) ==
		    IDEM_ENOTFOUND)
			rc = IDEM_OK;
	json_write_close(w, ']');
	json_write_name(w, "has_more");
	if (p->n > limit)
		json_write_raw(w, "true", 4);
	else
		json_write_raw(w, "false", 5);
	json_write_close(w, '}');
	return rc;
}

void
list_answer(const struct list_index *ix, const struct list_query *q,
    struct response *resp)
{
	struct list_page p;
	struct json_writer w;
	struct buf place = BUF_INIT;
	int rc;

	memset(&p, 0, sizeof(p));
	p.ix = ix;
	p.q = q;
	p.max = q->limit + 1;
	/* ending_before's ring needs as much again to be put in order. */
	if ((p.ids = calloc(q->from == LIST_BEFORE ? 2 * p.max : p.max,
	    sizeof(*p.ids))) == NULL) {
		problem_build(resp, PROBLEM_INTERNAL, "Out of memory.");
		return;
	}
	rc = list_read(ix, &p, &place);
	if (rc == IDEM_OK)
		rc = p.rc;
	if (rc == IDEM_ENOTFOUND)
		p.found = 0;
	else if (rc != IDEM_OK) {
		pay_read_error(resp, rc);
		goto out;
	}
	if (q->from != LIST_FROM_NEWEST && !p.found) {
		problem_build(resp, PROBLEM_BAD_REQUEST, "%s names none of "
		    "these %s.", q->from == LIST_AFTER ? "starting_after" :
		    "ending_before", ix->what);
		goto out;
	}
	if (q->from == LIST_BEFORE && p.place != NULL)
		list_page_reverse(&p);
	else if (q->from == LIST_BEFORE)
		list_page_order(&p);
	resp_reset(resp);
	resp->status = 200;
	rc = resp_header(resp, "Content-Type", "application/json");
	json_write_init(&w, &resp->body);
	if (rc == IDEM_OK && (rc = list_write(&p, q->limit, &w)) != IDEM_OK) {
		pay_read_error(resp, rc);
		goto out;
	}
	if (rc == IDEM_OK)
		rc = json_write_done(&w);
	if (rc != IDEM_OK)
		problem_build(resp, PROBLEM_INTERNAL, "%s.", idem_strerror(rc));
out:
	buf_free(&place);
	free(p.ids);
}
