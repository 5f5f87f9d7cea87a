#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "crypto.h"
#include "err.h"
#include "fault.h"
#include "handlers.h"
#include "metrics.h"
#include "problem.h"

int
app_open(const struct config *cfg, struct app **out, char *err, size_t errlen)
{
	struct app *a;

	if ((a = calloc(1, sizeof(*a))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	a->cfg = *cfg;
	if (auth_keys_load(cfg->keys_file, &a->keys, err, errlen) != 0) {
		free(a);
		return -1;
	}
	problem_set_base(a->cfg.problem_base);
	/*
	 * The store may be unavailable now and come back later (a full disk
	 * freed, a mount restored): requests answer 503 until it opens.
	 */
	if (app_ensure_open(a) != IDEM_OK)
		fprintf(stderr, "idem: store %s not available yet\n",
		    cfg->db_dir);
	*out = a;
	return 0;
}

void
app_close(struct app *a)
{
	if (a == NULL)
		return;
	provider_close(a->provider);
	metrics_close();
	store_close(a->store);
	auth_keys_free(a->keys);
	free(a);
}

int
app_ensure_open(struct app *a)
{
	struct store_config sc = { a->cfg.db_dir, a->cfg.map_size, 0 };
	struct provider_config pc = { a->cfg.provider_dir, a->cfg.map_size,
	    a->cfg.provider_latency_ms, a->cfg.provider_fail };
	int rc;

	if (a->store == NULL) {
		if ((rc = store_open(&sc, &a->store)) != IDEM_OK) {
			a->store = NULL;
			return rc;
		}
		/* Counting is best effort: a failure leaves it off. */
		if (metrics_open(a->cfg.db_dir) != IDEM_OK)
			fprintf(stderr, "idem: metrics off: cannot map %s/"
			    "metrics\n", a->cfg.db_dir);
	}
	if (a->provider == NULL &&
	    (rc = provider_open(&pc, &a->provider)) != IDEM_OK) {
		a->provider = NULL;
		return rc;
	}
	return IDEM_OK;
}

void
app_bad_request(enum req_status st, const struct app *a,
    struct response *resp)
{
	switch (st) {
	case REQ_TOO_LARGE:
		problem_build(resp, PROBLEM_BODY_TOO_LARGE, "The body may be "
		    "at most %zu bytes.", a->cfg.body_limit);
		break;
	case REQ_BAD_LENGTH:
	case REQ_SHORT_BODY:
		problem_build(resp, PROBLEM_BAD_LENGTH, "%s.",
		    req_strstatus(st));
		break;
	case REQ_BAD_METHOD:
		problem_build(resp, PROBLEM_BAD_REQUEST, "%s.",
		    req_strstatus(st));
		break;
	default:
		problem_build(resp, PROBLEM_INTERNAL, "%s.",
		    req_strstatus(st));
		break;
	}
}

/*
 * The 401 names what the deployment expects: an API key, or the
 * credentials the web server in front checks (RFC 9110 section 11.6.1
 * requires a challenge either way).
 */
static void
app_unauthorized(const struct app *a, enum auth_status st,
    struct response *resp)
{
	if (a->cfg.auth_mode == AUTH_MODE_REMOTE_USER) {
		problem_build(resp, PROBLEM_UNAUTHORIZED, "%s",
		    st == AUTH_MISSING ? "Sign in with the credentials this "
		    "server asks for." : "The credentials were not accepted.");
		resp_header(resp, "WWW-Authenticate", "Basic realm=\"idem\"");
		return;
	}
	problem_build(resp, PROBLEM_UNAUTHORIZED, "%s",
	    st == AUTH_MISSING ? "Send your API key as \"Authorization: "
	    "Bearer <key>\"." : "The credentials were not accepted.");
	/* RFC 6750 section 3. */
	resp_header(resp, "WWW-Authenticate", "Bearer realm=\"idem\"%s",
	    st == AUTH_MISSING ? "" : ", error=\"invalid_token\"");
}

static int
app_authenticate(struct app *a, const struct request *req,
    char principal[AUTH_PRINCIPAL_MAX + 1], struct response *resp)
{
	enum auth_status st;

	st = auth_principal(a->keys, a->cfg.auth_mode, req->remote_user,
	    req->authorization, principal);
	if (st == AUTH_OK)
		return 0;
	app_unauthorized(a, st, resp);
	return -1;
}

/*
 * The metrics account (IDEM_METRICS_ACCOUNT) reads /metrics, which shows
 * the volume of every account together, and nothing else; every other
 * account may use the payments endpoints and not /metrics.  So the
 * credential a monitoring system holds can neither pay nor read a
 * payment, and a customer's key learns nothing about other customers.
 */
static int
app_authorize(const struct app *a, const char *principal, int metrics,
    struct response *resp)
{
	if ((strcmp(principal, a->cfg.metrics_account) == 0) == metrics)
		return 0;
	problem_build(resp, PROBLEM_FORBIDDEN, "%s", metrics ?
	    "Only the monitoring account may read the metrics." :
	    "The monitoring account may only read the metrics.");
	return -1;
}

static void
app_method_not_allowed(struct response *resp, const char *allow)
{
	problem_build(resp, PROBLEM_METHOD, "This resource allows %s.",
	    allow);
	resp_header(resp, "Allow", "%s", allow);
}

/*
 * Routes a request.  A body that could not be read (st) is reported only
 * after the route, the credentials and, for POST /payments, the key were
 * checked, so the answer names the most basic fault first.
 */
static void
app_route(struct app *a, enum req_status st, const struct request *req,
    struct response *resp)
{
	char principal[AUTH_PRINCIPAL_MAX + 1];
	const char *p = req->path;
	int get = strcmp(req->method, "GET") == 0 ||
	    strcmp(req->method, "HEAD") == 0;

	if (strcmp(p, "/metrics") == 0) {
		if (!get)
			app_method_not_allowed(resp, "GET, HEAD");
		else if (app_authenticate(a, req, principal, resp) == 0 &&
		    app_authorize(a, principal, 1, resp) == 0)
			pay_metrics(a, resp);
		return;
	}
	if (strcmp(p, "/healthz") == 0) {
		if (!get)
			app_method_not_allowed(resp, "GET, HEAD");
		else if (st != REQ_OK)
			app_bad_request(st, a, resp);
		else
			pay_healthz(a, resp);
		return;
	}
	if (strcmp(p, "/payments") != 0 && strncmp(p, "/payments/", 10) != 0) {
		problem_build(resp, PROBLEM_NOT_FOUND, "There is nothing at "
		    "this path.");
		return;
	}
	if (strcmp(p, "/payments") == 0 && strcmp(req->method, "POST") != 0 &&
	    !get) {
		app_method_not_allowed(resp, "GET, HEAD, POST");
		return;
	}
	if (strcmp(p, "/payments") != 0 && !get) {
		app_method_not_allowed(resp, "GET, HEAD");
		return;
	}
	if (app_authenticate(a, req, principal, resp) != 0 ||
	    app_authorize(a, principal, 0, resp) != 0)
		return;
	if (strcmp(req->method, "POST") == 0)
		pay_post(a, req, st, principal, resp);
	else if (st != REQ_OK)
		app_bad_request(st, a, resp);
	else if (strcmp(p, "/payments") != 0)
		pay_get(a, req, p + 10, principal, resp);
	else
		pay_list(a, req, principal, resp);
}

/*
 * One line per request on stderr (the web server's error log).  The key
 * is logged only as a hash of scope and key, never in the clear.
 */
static void
app_log(const struct app *a, const struct request *req,
    const struct response *resp, uint64_t ms)
{
	uint8_t d[CRYPTO_SHA256_SIZE];
	char hex[2 * CRYPTO_SHA256_SIZE + 1] = "-";

	if (req->idempotency_key != NULL) {
		crypto_sha256(req->idempotency_key,
		    strlen(req->idempotency_key), d);
		crypto_hex(d, 6, hex);
	}
	fprintf(stderr, "idem: %s %s %s %d key=%s outcome=%s ms=%llu\n",
	    req->remote_addr ? req->remote_addr : "-",
	    req->method ? req->method : "-", req->path ? req->path : "-",
	    resp->status, hex, a->outcome ? a->outcome : "-",
	    (unsigned long long)ms);
}

static void
app_count(int status, uint64_t ms)
{
	metrics_inc(METRIC_REQUESTS);
	if (status >= 500)
		metrics_inc(METRIC_RESPONSES_5XX);
	else if (status >= 400)
		metrics_inc(METRIC_RESPONSES_4XX);
	else if (status >= 200 && status < 300)
		metrics_inc(METRIC_RESPONSES_2XX);
	metrics_observe_ms(ms);
}

void
app_handle(void *app, enum req_status st, const struct request *req,
    struct response *resp)
{
	struct app *a = app;
	uint64_t start = clock_now_ms(), ms;

	a->outcome = NULL;
	if (st == REQ_BAD_METHOD || st == REQ_NOMEM || req->path == NULL)
		app_bad_request(st, a, resp);
	else
		app_route(a, st, req, resp);
	/* Payment data is never to be kept by caches on the way. */
	resp_header(resp, "Cache-Control", "no-store");
	resp->head = req->method != NULL && strcmp(req->method, "HEAD") == 0;
	ms = clock_now_ms() - start;
	app_count(resp->status, ms);
	app_log(a, req, resp, ms);
}
