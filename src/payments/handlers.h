/*
 * handlers.h: the payments endpoints, behind the router in app.c.
 *
 * Each handler gets a request that has been read and authenticated (where
 * the endpoint needs it) and fills resp.  Handlers of keyed requests own
 * the claim they make and end it before they return.
 */
#ifndef PAY_HANDLERS_H
#define PAY_HANDLERS_H

#include <pthread.h>

#include "auth.h"
#include "cfg.h"
#include "keyhash.h"
#include "provider.h"
#include "request.h"
#include "response.h"
#include "store.h"

/* Recovery points of POST /payments, kept in the claim's stage. */
enum pay_stage {
	PAY_STAGE_STARTED = 0,       /* claimed; nothing sent to the provider */
	PAY_STAGE_CHARGE_REQUESTED,  /* payment id fixed; a charge may exist */
	PAY_STAGE__MAX
};

/*
 * Shared by every thread of the worker: what app_ensure_open sets is set
 * under open_mu, once, and only read after that.
 */
struct app {
	struct config cfg;
	pthread_mutex_t open_mu;
	struct store *store;        /* NULL until it opens */
	struct provider *provider;  /* NULL until it opens */
	struct auth_keys *keys;
	int have_secret;            /* keyhash secret loaded */
	uint8_t secret[KEYHASH_SECRET_SIZE];
};

/* What the handling of one request notes for its log line. */
struct app_note {
	const char *outcome;           /* replay, claim, ... */
	char keyhash[KEYHASH_HEX + 1]; /* keyhash of scope and key, or "" */
};

/* Opens the store and the provider if they are not open; IDEM_OK or error. */
int app_ensure_open(struct app *a);

/* Maps a request that could not be read (st != REQ_OK) to its problem. */
void app_bad_request(enum req_status st, const struct app *a,
    struct response *resp);

void pay_post(struct app *a, struct app_note *note, const struct request *req,
    enum req_status st, const char *scope, struct response *resp);
void pay_get(struct app *a, const struct request *req, const char *id,
    const char *scope, struct response *resp);
void pay_list(struct app *a, const struct request *req, const char *scope,
    struct response *resp);
void pay_healthz(struct app *a, struct response *resp);
/* Prometheus text format: counters of every worker of this store. */
void pay_metrics(struct app *a, struct response *resp);

/* The 503 for a store error: problem+json with Retry-After. */
void pay_store_error(struct response *resp, int err);

#endif
