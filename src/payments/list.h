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

#include "buf.h"
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
	 * Walks the index newest first (reverse set) or oldest first,
	 * calling fn for each entry until fn returns non-zero
	 * (idem_row_scan_from's contract): from its newest entry when
	 * fromlen is 0, else from the first entry at or past from.
	 */
	int (*scan)(void *ctx, const void *from, size_t fromlen, int reverse,
	    idem_row_fn fn, void *fn_ctx);
	/*
	 * Appends the item id names to w's array: IDEM_OK, IDEM_ENOTFOUND
	 * when the entry's row is not there (it names nothing and is passed
	 * over), or the store's error, which fails the page: no page lacks
	 * what the store holds.
	 */
	int (*item)(void *ctx, const char *id, struct json_writer *w);
	void *ctx;
	/*
	 * Where item id's entry sorts in the index, for a page to seek to
	 * its cursor: the start of the entry's key that places it (its
	 * parent and its time), which every entry of that time shares, in
	 * key (empty: the item's time cannot be told, and the page walks
	 * from the newest entry); IDEM_ENOTFOUND when id is no item of this
	 * list, found by one read, or the store's error.  NULL: the list is
	 * short, and pages walk from the newest entry.
	 */
	int (*place)(void *ctx, const char *id, struct buf *key);
};

/* Where a page starts: Stripe's cursors, ids of items of the list. */
enum list_cursor {
	LIST_FROM_NEWEST = 0,   /* no cursor: the newest items */
	LIST_AFTER,             /* starting_after: the items older than it */
	LIST_BEFORE             /* ending_before: the items newer than it */
};

/* A list request's parameters, from its query. */
struct list_query {
	size_t limit;           /* 1..LIST_LIMIT_MAX */
	enum list_cursor from;
	char cursor[LIST_ID_MAX + 1];   /* the cursor's id, as given */
};

/*
 * Reads the query: limit (1..LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT when
 * absent), and at most one of starting_after and ending_before, each
 * once.  Any other parameter is refused, named in the 400's detail, so
 * that a misspelt cursor is an error and not the first page again.  0,
 * or -1 with resp the 400 (problem bad-request).
 */
int list_query_parse(const char *query, struct list_query *q,
    struct response *resp);

/*
 * Answers the list: the 200 with the page, the 400 of a cursor that is
 * no item of this list (an id of another account's, one of another
 * list, or none), or the store's error (the 503 or 500 of
 * pay_read_error).  The index's store must be open.
 *
 * A page is cut from one walk of the index, newest first, in one read:
 * the cursor is an item's own entry in the index (its time, then its
 * name), never an offset, so items made while a client pages, which are
 * newer than every page it has read, neither shift the pages that
 * follow nor repeat an item.  starting_after gives the limit items just
 * older than the cursor, has_more whether there are older ones still;
 * ending_before the limit items just newer, newest first, has_more
 * whether there are newer ones still.  With a cursor, a list whose
 * index tells where an item's entry sorts (list_index.place) seeks
 * there (idem_row_scan_from) and reads only the entries of the cursor's
 * millisecond and the page: a page costs its own size wherever it lies,
 * and a cursor that names no item of the list is refused after one
 * read.  A list without place walks from the newest entry to the
 * cursor.
 */
void list_answer(const struct list_index *ix, const struct list_query *q,
    struct response *resp);

#endif
