/* SPDX-License-Identifier: MIT */
/*
 * shared.h: the floor every payments endpoint stands on: what a handler
 * is given (struct pay_env, struct pay_call), what it notes for the log
 * line (struct pay_note), the answers every handler words alike (a
 * request that could not be read, a store that cannot be used), and the
 * one ownership check, pay_find_owned: "this payment is this account's,
 * else 404".
 *
 * Nothing here calls a handler or the router: the handlers (get.c,
 * post.c, refund_get.c, refund_post.c, status.c) and the completer
 * (resume.c) call down into it, the route table (routes.c) calls them.
 */
#ifndef PAY_SHARED_H
#define PAY_SHARED_H

#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "idem.h"
#include "json.h"
#include "keyhash.h"
#include "payment.h"
#include "provider.h"
#include "request.h"
#include "response.h"
#include "rowkey.h"

/*
 * What the handlers use, opened by the router before it dispatches.
 * idem and provider are NULL when they could not be opened (open_rc
 * says why): a handler answers 503 at the point where it would first
 * use them, so the checks before that keep their order.
 */
struct pay_env {
	const struct config *cfg;
	struct idem *idem;
	struct provider *provider;
	int open_rc;
	const struct keyhash *keyhash; /* the log's key names; NULL: none */
};

/* What the handling of one request notes for its log line. */
struct pay_note {
	const char *outcome;           /* replay, claim, ... */
	char keyhash[KEYHASH_HEX + 1]; /* keyhash of scope and key, or "" */
	char account[AUTH_PRINCIPAL_MAX + 1]; /* who asked, or "" */
	/*
	 * The store's error when a write to the claim failed (its checkpoint,
	 * completion or release), else IDEM_OK: the completer reports it.
	 */
	int store_err;
};

/* The most {parameters} a route's path pattern names (routes.h). */
#define PAY_PARAMS_MAX 2
/*
 * The longest parameter kept; a longer path segment is handed over as
 * "", which names nothing (no id is that long), so it answers 404.
 */
#define PAY_PARAM_MAX 64

/*
 * One request, routed: what the router (app.c, on the table in
 * routes.c) hands the handler of the route it matched.  Every pointer
 * is borrowed for the call.  A keyed route's request has been through
 * keyed_precheck (keyed.h) before the handler runs: key, doc and fp are
 * then set; otherwise they are NULL, and the request's body was read.
 */
struct pay_call {
	const struct pay_env *env;
	struct pay_note *note;
	const struct request *req;
	const char *scope;      /* the authenticated account; "" for anyone */
	const char *param[PAY_PARAMS_MAX]; /* the path's {parameters} */
	const char *key;                   /* keyed: the Idempotency-Key */
	const struct json_value *doc;      /* keyed: the parsed body */
	const uint8_t *fp;                 /* keyed: its fingerprint */
	/*
	 * keyed: the body's members the fingerprint left out (the route's
	 * fp_ignore), which the handler accepts and ignores; or NULL.
	 */
	const char *const *fp_ignore;
	struct response *resp;
};

/* A route's handler. */
typedef void (*pay_handler_fn)(const struct pay_call *c);

/* The tables payments keeps in the store (idem_options.tables). */
extern const char *const pay_tables[];

/* Maps a request that could not be read (st != REQ_OK) to its problem. */
void pay_bad_request(enum req_status st, const struct config *cfg,
    struct response *resp);

/*
 * The 503 for a store error, in the words of a keyed request (nothing
 * was recorded; retry with the same key): problem+json with Retry-After.
 * A value that does not open (IDEM_ESEAL) is the 500 of pay_read_error.
 */
void pay_store_error(struct response *resp, int err);

/*
 * The same for a read that failed, in words for a request that records
 * nothing (a GET, /healthz): the 503, or the 500 of a value that does
 * not open (IDEM_ESEAL).  Never a 404 or a 200 with less than is stored.
 */
void pay_read_error(struct response *resp, int err);

/*
 * The answer to a GET of one stored representation (a payment, a
 * refund): resp reset to its ETag (PAY_ETAG_SIZE, pay_etag) and then a
 * 304 without a body when the request's If-None-Match names that ETag or
 * is "*" (RFC 9110 section 13.1.2: weak comparison, which a list of
 * quoted tags passes by containing it), else the 200 with the body.
 */
void pay_answer_read(const struct request *req, struct response *resp,
    const void *body, size_t blen);

/* A payment found by pay_find_owned: its stored row, and in it its body. */
struct pay_found {
	uint8_t name[ROWKEY_LEN];   /* rowkey(id) */
	void *row;                  /* owned: pay_found_free */
	const uint8_t *body;        /* the representation, in row */
	size_t blen;
};

/*
 * Finds the payment id if it belongs to scope.  Another account's
 * payment is indistinguishable from none.  IDEM_OK with *f filled (the
 * caller frees it, pay_found_free, whatever the result), or the error
 * with resp the answer: IDEM_ENOTFOUND (404, also for an id of the
 * wrong shape), or the store's (the 503 of pay_store_error when keyed
 * is set, else of pay_read_error).  env->idem must be open.
 */
int pay_find_owned(const struct pay_env *env, const char *id,
    const char *scope, int keyed, struct pay_found *f,
    struct response *resp);
void pay_found_free(struct pay_found *f);

#endif
