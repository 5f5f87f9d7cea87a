/* SPDX-License-Identifier: MIT */
/*
 * handlers.h: the payments endpoints, behind the router in app.c.
 *
 * Each handler gets a request that has been read and authenticated (where
 * the endpoint needs it), and what it needs in a struct pay_env, and
 * fills resp.  Keyed requests run on the idempotency library (idem.h):
 * the handler owns the claim it makes and ends it before it returns.
 */
#ifndef PAY_HANDLERS_H
#define PAY_HANDLERS_H

#include <stdint.h>

#include "cfg.h"
#include "idem.h"
#include "keyhash.h"
#include "provider.h"
#include "refund.h"
#include "request.h"
#include "response.h"
#include "rowkey.h"

/* Recovery points of POST /payments, kept in the claim's stage. */
enum pay_stage {
	PAY_STAGE_STARTED = 0,       /* claimed; nothing sent to the provider */
	PAY_STAGE_CHARGE_REQUESTED,  /* payment id fixed; a charge may exist */
	PAY_STAGE__MAX
};

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

/* The tables payments keeps in the store (idem_options.tables). */
extern const char *const pay_tables[];

/* Maps a request that could not be read (st != REQ_OK) to its problem. */
void pay_bad_request(enum req_status st, const struct config *cfg,
    struct response *resp);

void pay_post(const struct pay_env *env, struct pay_note *note,
    const struct request *req, enum req_status st, const char *scope,
    struct response *resp);
void pay_get(const struct pay_env *env, const struct request *req,
    const char *id, const char *scope, struct response *resp);
void pay_list(const struct pay_env *env, const struct request *req,
    const char *scope, struct response *resp);
void pay_healthz(const struct pay_env *env, struct response *resp);
/* Prometheus text format: counters of every worker of this store. */
void pay_metrics(const struct pay_env *env, struct response *resp);

/*
 * The limit parameter of a list's query: 0 when absent, -1 when it is not
 * a whole number from 1 to max.
 */
long pay_query_limit(const char *query, long max);

/* Where a path below /payments/ is in the refunds' part of the API. */
enum refund_path {
	REFUND_PATH_NONE = 0,  /* not a refunds path */
	REFUND_PATH_LIST,      /* /payments/{id}/refunds */
	REFUND_PATH_ONE        /* /payments/{id}/refunds/{refund id} */
};

/*
 * Classifies path and copies the ids it names (each "" when longer than
 * an id can be: such a path answers 404).
 */
enum refund_path refund_path_parse(const char *path,
    char payment[PAY_ID_LEN + 1], char refund[REFUND_ID_LEN + 1]);

/*
 * Answers a request on a refunds path (refund_path_parse): POST to the
 * list creates a refund, GET reads the list or one refund.
 */
void refund_route(const struct pay_env *env, struct pay_note *note,
    const struct request *req, enum req_status st, const char *scope,
    struct response *resp);

void refund_post(const struct pay_env *env, struct pay_note *note,
    const struct request *req, enum req_status st, const char *payment,
    const char *scope, struct response *resp);

/*
 * Appends the representation GET /payments/{id} shows: the stored body of
 * the payment, as its 201 had it (same bytes, same ETag) until a refund
 * completes, and from then on with the refunded total as its last member,
 * "amount_refunded".  The 201 of POST /payments, and its replays, stay as
 * stored.  name is rowkey(payment), which names its refunds' totals too.
 */
int refund_payment_extend(struct idem *idem, const char *payment,
    const uint8_t name[ROWKEY_LEN], const void *body, size_t len,
    struct buf *out);

/* The 503 for a store error: problem+json with Retry-After. */
void pay_store_error(struct response *resp, int err);

/*
 * The same for a read that failed, in words for a request that records
 * nothing (a GET, /healthz): the 503, or the 500 of a value that does
 * not open (IDEM_ESEAL).  Never a 404 or a 200 with less than is stored.
 */
void pay_read_error(struct response *resp, int err);

#endif
