/* SPDX-License-Identifier: MIT */
/*
 * list.c: the lists' walker (list.h).
 */
#include <stdlib.h>
#include <string.h>

#include "idem.h"
#include "json.h"
#include "list.h"
#include "problem.h"
#include "shared.h"

/* The ids of one page, and one more to tell whether there are more. */
struct list_page {
	const struct list_index *ix;
	char (*ids)[LIST_ID_MAX + 1];
	size_t max;             /* the page's limit, plus one */
	size_t n;
	int rc;                 /* IDEM_ECORRUPT: an entry that names no id */
};

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

static int
list_collect(void *ctx, const void *key, size_t keylen, const void *val,
    size_t vallen)
{
	struct list_page *p = ctx;
	const char *id;

	if ((id = list_entry_id(p->ix, key, keylen, val, vallen)) == NULL) {
		p->rc = IDEM_ECORRUPT;
		return 1;
	}
	memcpy(p->ids[p->n], id, p->ix->idlen);
	p->ids[p->n][p->ix->idlen] = '\0';
	return ++p->n == p->max;
}

int
list_query_parse(const char *query, struct list_query *q,
    struct response *resp)
{
	const char *p = query;
	char *end;
	long v;

	q->limit = LIST_LIMIT_DEFAULT;
	while (p != NULL && *p != '\0') {
		if (strncmp(p, "limit=", 6) == 0) {
			v = strtol(p + 6, &end, 10);
			if (end == p + 6 || (*end != '\0' && *end != '&') ||
			    v < 1 || v > LIST_LIMIT_MAX) {
				problem_build(resp, PROBLEM_BAD_REQUEST, "limit "
				    "must be a whole number from 1 to %d.",
				    LIST_LIMIT_MAX);
				return -1;
			}
			q->limit = (size_t)v;
			return 0;
		}
		p = strchr(p, '&');
		if (p != NULL)
			p++;
	}
	return 0;
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
	struct list_page p = { ix, NULL, q->limit + 1, 0, IDEM_OK };
	struct json_writer w;
	int rc;

	if ((p.ids = calloc(p.max, sizeof(*p.ids))) == NULL) {
		problem_build(resp, PROBLEM_INTERNAL, "Out of memory.");
		return;
	}
	rc = ix->scan(ix->ctx, list_collect, &p);
	if (rc == IDEM_OK)
		rc = p.rc;
	if (rc != IDEM_OK) {
		pay_read_error(resp, rc);
		goto out;
	}
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
	free(p.ids);
}
