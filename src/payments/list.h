/* SPDX-License-Identifier: MIT */
/*
 * list.h: the one walker of the API's lists (GET /payments, GET
 * /payments/{id}/refunds): an index read newest first, a page of ids
 * collected from it, each shown as its endpoint shows it, in
 * {"data": [...], "has_more": ...}.  The endpoint says how to walk its
 * index and how to show one item (struct list_index); the walker owns
 * the query's parameters, the page and the answer.
 */
#ifndef PAY_LIST_H
#define PAY_LIST_H

#include <stddef.h>

#include "idem.h"
#include "json.h"
#include "response.h"

#define LIST_LIMIT_DEFAULT 20
#define LIST_LIMIT_MAX 100
#define LIST_ID_MAX 32          /* the longest id a list holds */

/* A list's index and how to show its items. */
struct list_index {
	const char *what;       /* the items' name, plural ("payments") */
	size_t idlen;           /* its ids' length (at most LIST_ID_MAX) */
	/*
	 * The key length of an entry written when ids named rows: its value
	 * is empty and its key ends with the id.  0: any key longer than
	 * an id.
	 */
	size_t legacy_keylen;
	/*
	 * Walks the index newest first, calling fn for each entry until fn
	 * returns non-zero (idem_row_scan's contract).
	 */
	int (*scan)(void *ctx, idem_row_fn fn, void *fn_ctx);
	/*
	 * Appends the item id names to w's array: IDEM_OK, IDEM_ENOTFOUND
	 * when the entry's row is not there (it names nothing and is passed
	 * over), or the store's error, which fails the page: no page lacks
	 * what the store holds.
	 */
	int (*item)(void *ctx, const char *id, struct json_writer *w);
	void *ctx;
};

/* A list request's parameters, from its query. */
struct list_query {
	size_t limit;           /* 1..LIST_LIMIT_MAX */
};

/*
 * Reads the query's limit (LIST_LIMIT_DEFAULT when absent).  0, or -1
 * with resp the 400.
 */
int list_query_parse(const char *query, struct list_query *q,
    struct response *resp);

/*
 * Answers the list: the 200 with the page, or the store's error (the
 * 503 or 500 of pay_read_error).  The index's store must be open.
 */
void list_answer(const struct list_index *ix, const struct list_query *q,
    struct response *resp);

#endif
