/* SPDX-License-Identifier: MIT */
/*
 * app.c: the payments application: it opens what the handlers use,
 * routes on the route table (routes.h), authenticates, and writes one
 * log line per request.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "auth.h"
#include "buf.h"
#include "fault.h"
#include "idem.h"
#include "json.h"
#include "keyed.h"
#include "keyhash.h"
#include "metrics.h"
#include "payment.h"
#include "problem.h"
#include "provider.h"
#include "routes.h"
#include "shared.h"

/*
 * Shared by every thread of the worker: what app_ensure_open sets is set
 * under open_mu, once, and only read after that.
 */
struct app {
	struct config cfg;
	pthread_mutex_t open_mu;
	struct idem *idem;          /* NULL until it opens */
	struct provider *provider;  /* NULL until it opens */
	struct auth_keys *keys;
	int have_secret;            /* keyhash secret loaded */
	struct keyhash keyhash;     /* under the secret, once loaded */
	struct app_inject inj;      /* what a harness put in (app_open_with) */
};

static int app_ensure_open(struct app *a);
static int app_open_locked(struct app *a);

int
app_open(const struct config *cfg, struct app **out, char *err, size_t errlen)
{
	return app_open_with(cfg, NULL, out, err, errlen);
}

int
app_open_with(const struct config *cfg, const struct app_inject *inj,
    struct app **out, char *err, size_t errlen)
{
	struct app *a;
	int rc;

	if ((a = calloc(1, sizeof(*a))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* Never a simulator by default: the caller names the provider. */
	if ((inj == NULL || inj->provider == NULL) &&
	    config_provider_check(cfg, err, errlen) != 0) {
		free(a);
		return -1;
	}
	a->cfg = *cfg;
	if (inj != NULL) {
		a->inj = *inj;
		a->provider = inj->provider;
	}
	if (pthread_mutex_init(&a->open_mu, NULL) != 0) {
		snprintf(err, errlen, "cannot create a lock");
		free(a);
		return -1;
	}
	if (app_keys_load(cfg, &a->keys, err, errlen) != 0) {
		pthread_mutex_destroy(&a->open_mu);
		free(a);
		return -1;
	}
	problem_set_base(a->cfg.problem_base);
	/*
	 * The store may be unavailable now and come back later (a full disk
	 * freed, a mount restored): requests answer 503 until it opens.
	 */
	if ((rc = app_ensure_open(a)) != IDEM_OK)
		fprintf(stderr, "idem: store %s not available yet (%s); "
		    "idem-fcgi --check-config says why\n", cfg->store[0] !=
		    '\0' ? "IDEM_STORE" : cfg->db_dir, idem_strerror(rc));
	*out = a;
	return 0;
}

int
app_keys_load(const struct config *cfg, struct auth_keys **out, char *err,
    size_t errlen)
{
	char why[PATH_MAX + 128];

	if (cfg->auth_mode == AUTH_MODE_BEARER &&
	    access(cfg->keys_file, F_OK) != 0 && errno == ENOENT) {
		snprintf(err, errlen, "IDEM_KEYS_FILE %s: %s (with IDEM_AUTH="
		    "bearer no request could authenticate)", cfg->keys_file,
		    strerror(ENOENT));
		return -1;
	}
	if (auth_keys_load(cfg->keys_file, out, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "IDEM_KEYS_FILE %s", why);
		return -1;
	}
	return 0;
}

void
app_close(struct app *a)
{
	if (a == NULL)
		return;
	provider_close(a->provider);
	metrics_close();
	idem_close(a->idem);
	auth_keys_free(a->keys);
	pthread_mutex_destroy(&a->open_mu);
	free(a);
}

/*
 * Opens what is not open yet.  Every request thread calls it, so it works
 * under open_mu; once everything is open it costs one uncontended lock.
 */
static int
app_open_locked(struct app *a)
{
	struct idem_options opt = {
		.size = sizeof(struct idem_options),
		.dir = a->cfg.store[0] != '\0' ? a->cfg.store : a->cfg.db_dir,
		.map_size = a->cfg.map_size,
		.lease_ms = a->cfg.lease_ms,
		.ttl_ms = a->cfg.ttl_ms,
		.max_keys_per_scope = a->cfg.keys_per_account,
		.commit_delay_us = a->cfg.commit_delay_us,
		.tables = pay_tables,
		.pg_connect_timeout_s = a->cfg.pg_connect_timeout_s,
		.pg_statement_timeout_ms = a->cfg.pg_statement_timeout_ms,
		.pg_lock_timeout_ms = a->cfg.pg_lock_timeout_ms,
		.pg_pool_wait_ms = a->cfg.pg_pool_wait_ms,
		.replay_cache_bytes = a->cfg.replay_cache_bytes,
		.clock = a->inj.clock,
		.clock_ctx = a->inj.clock_ctx,
		.secret_file = a->cfg.secret_file[0] != '\0' ?
		    a->cfg.secret_file : NULL,
	};
	uint8_t secret[KEYHASH_SECRET_SIZE];
	char err[PATH_MAX + 64];
	struct provider_config pc;
	int rc;

	if (a->idem == NULL) {
		rc = a->inj.open_idem != NULL ?
		    a->inj.open_idem(&opt, &a->idem) :
		    idem_open(&opt, &a->idem);
		if (rc != IDEM_OK) {
			a->idem = NULL;
			return rc;
		}
		/* Counting is best effort: a failure leaves it off. */
		if (metrics_open(a->cfg.db_dir) != IDEM_OK)
			fprintf(stderr, "idem: metrics off: cannot map %s/"
			    "metrics\n", a->cfg.db_dir);
	}
	/* Without its secret a key is logged as "-", never in a weak form. */
	if (!a->have_secret) {
		if (keyhash_secret_load(a->cfg.db_dir, 1, secret, err,
		    sizeof(err)) == 0) {
			keyhash_init(&a->keyhash, secret);
			a->have_secret = 1;
		} else
			fprintf(stderr, "idem: keys logged as \"-\": %s\n",
			    err);
	}
	config_provider(&a->cfg, &pc);
	if (a->provider == NULL &&
	    (rc = provider_open(&pc, &a->provider)) != IDEM_OK) {
		a->provider = NULL;
		return rc;
	}
	return IDEM_OK;
}

static int
app_ensure_open(struct app *a)
{
	int rc;

	pthread_mutex_lock(&a->open_mu);
	rc = app_open_locked(a);
	pthread_mutex_unlock(&a->open_mu);
	return rc;
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

/* On success the account is also noted for the request's log line. */
static int
app_authenticate(struct app *a, struct pay_note *note,
    const struct request *req, char principal[AUTH_PRINCIPAL_MAX + 1],
    struct response *resp)
{
	enum auth_status st;

	st = auth_principal(a->keys, a->cfg.auth_mode, req->remote_user,
	    req->authorization, principal);
	if (st == AUTH_OK) {
		snprintf(note->account, sizeof(note->account), "%s", principal);
		return 0;
	}
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

/*
 * What the handlers use: the store and the provider, opened now if they
 * are not open yet (a store that was unavailable may have come back).
 */
void
app_env(struct app *a, struct pay_env *env)
{
	memset(env, 0, sizeof(*env));
	env->cfg = &a->cfg;
	pthread_mutex_lock(&a->open_mu);
	env->open_rc = app_open_locked(a);
	if (env->open_rc == IDEM_OK) {
		env->idem = a->idem;
		env->provider = a->provider;
		env->keyhash = a->have_secret ? &a->keyhash : NULL;
	}
	pthread_mutex_unlock(&a->open_mu);
}

static void
app_method_not_allowed(struct response *resp, const char *allow)
{
	problem_build(resp, PROBLEM_METHOD, "This resource allows %s.",
	    allow);
	resp_header(resp, "Allow", "%s", allow);
}

/*
 * Whether the caller may use route r: the credentials it asks for, and
 * the account they name allowed on it.  0, or -1 with resp the answer.
 */
static int
app_admit(struct app *a, const struct route *r, struct pay_note *note,
    const struct request *req, char principal[AUTH_PRINCIPAL_MAX + 1],
    struct response *resp)
{
	principal[0] = '\0';
	if (r->who == ROUTE_ANYONE)
		return 0;
	if (app_authenticate(a, note, req, principal, resp) != 0)
		return -1;
	return app_authorize(a, principal, r->who == ROUTE_METRICS, resp);
}

/*
 * Routes a request on the route table.  A body that could not be read
 * (st) is reported only after the route, the credentials and, for a
 * keyed route, the key were checked, so the answer names the most basic
 * fault first.
 */
static void
app_route(struct app *a, struct pay_note *note, enum req_status st,
    const struct request *req, struct response *resp)
{
	char principal[AUTH_PRINCIPAL_MAX + 1], allow[ROUTE_ALLOW_MAX];
	char params[PAY_PARAMS_MAX][PAY_PARAM_MAX + 1] = { { 0 } };
	char key[KEY_MAX + 1];
	struct json_value *doc = NULL;
	uint8_t fp[IDEM_FP_SIZE];
	const struct route *r;
	struct pay_env env;
	struct pay_call c;
	size_t i;

	switch (route_find(req->path, req->method, &r, params, allow)) {
	case ROUTE_NOT_FOUND:
		problem_build(resp, PROBLEM_NOT_FOUND, "There is nothing at "
		    "this path.");
		return;
	case ROUTE_NOT_ALLOWED:
		app_method_not_allowed(resp, allow);
		return;
	case ROUTE_FOUND:
		break;
	}
	if (app_admit(a, r, note, req, principal, resp) != 0)
		return;
	app_env(a, &env);
	memset(&c, 0, sizeof(c));
	c.env = &env;
	c.note = note;
	c.req = req;
	c.scope = principal;
	for (i = 0; i < PAY_PARAMS_MAX; i++)
		c.param[i] = params[i];
	c.resp = resp;
	if (r->keyed) {
		if (keyed_precheck(&env, req, st, r->noun, r->fp_ignore, key,
		    &doc, fp, resp) != 0)
			goto out;
		c.key = key;
		c.doc = doc;
		c.fp = fp;
		c.fp_ignore = r->fp_ignore;
	} else if (st != REQ_OK) {
		pay_bad_request(st, &a->cfg, resp);
		goto out;
	}
	r->handler(&c);
out:
	json_free(doc);
}

/* The longest field copied into a log line; the rest is cut with "...". */
#define APP_LOG_FIELD 256

/*
 * Copies a field of the request into out for the log: every byte outside
 * printable ASCII, and the backslash, becomes \xHH, so no request can
 * end the line early, forge another, or carry terminal escapes.
 */
static const char *
app_log_field(const char *v, char out[4 * APP_LOG_FIELD + 4])
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *p;
	size_t n = 0, i;

	if (v == NULL || *v == '\0')
		return "-";
	for (p = (const unsigned char *)v, i = 0; *p != '\0' &&
	    i < APP_LOG_FIELD; p++, i++) {
		if (*p > 0x20 && *p < 0x7f && *p != '\\') {
			out[n++] = (char)*p;
			continue;
		}
		out[n++] = '\\';
		out[n++] = 'x';
		out[n++] = digits[*p >> 4];
		out[n++] = digits[*p & 0x0f];
	}
	if (*p != '\0') {
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = '\0';
	return out;
}

/* Appends s to the line at p, cut at end. */
static char *
app_put(char *p, const char *end, const char *s)
{
	size_t n = strlen(s);

	if (n > (size_t)(end - p))
		n = (size_t)(end - p);
	memcpy(p, s, n);
	return p + n;
}

/* Appends v in decimal to the line at p, cut at end. */
static char *
app_put_num(char *p, const char *end, long long v)
{
	char digits[BUF_DEC_MAX + 2];

	digits[buf_fmt_int(digits, v)] = '\0';
	return app_put(p, end, digits);
}

/* Writes a whole log line with one write(2); see app_log. */
static void
app_log_write(const char *line, size_t len)
{
	const char *s, *end = line + len;
	ssize_t n;

	for (s = line; s < end; s += n)
		if ((n = write(STDERR_FILENO, s, (size_t)(end - s))) < 0) {
			if (errno != EINTR)
				return;
			n = 0;
		}
}

/* What the log knows of a request besides the request and its answer. */
struct app_log_info {
	const struct pay_note *note;
	const char *request_id;     /* the web server's, or one made up */
	const char *client_request_id; /* the client's X-Request-Id, or NULL */
	uint64_t now_ms;            /* when it ended (the service's clock) */
	uint64_t us;                /* how long it took, monotonic */
};

/*
 * One line per request on stderr (the web server's error log), starting
 * with when it ended (RFC 3339 in UTC, to the millisecond) so that a
 * file or a journal without its own stamps still orders and dates it,
 * and naming the account.  The key appears only as its keyhash
 * (keyhash.h), never in the clear; every field taken from the request
 * is escaped.  The line is made on the stack and written with one
 * write(2), so that threads share no stdio lock and lines from many
 * threads and workers never interleave.
 */
static void
app_log_text(const struct app_log_info *li, const struct request *req,
    const struct response *resp)
{
	char field[4 * APP_LOG_FIELD + 4], when[64];
	char line[4 * sizeof(field) + KEYHASH_HEX + 2 * REQ_ID_MAX + 224];
	const char *end = line + sizeof(line) - 1;
	const struct pay_note *note = li->note;
	char *p = line;

	pay_time(li->now_ms, when);
	p = app_put(p, end, when);
	p = app_put(p, end, " idem: ");
	p = app_put(p, end, app_log_field(req->remote_addr, field));
	p = app_put(p, end, " ");
	p = app_put(p, end, app_log_field(req->method, field));
	p = app_put(p, end, " ");
	p = app_put(p, end, app_log_field(req->path, field));
	p = app_put(p, end, " ");
	p = app_put_num(p, end, resp->status);
	p = app_put(p, end, " account=");
	p = app_put(p, end, app_log_field(note->account, field));
	p = app_put(p, end, " key=");
	p = app_put(p, end, note->keyhash[0] != '\0' ? note->keyhash : "-");
	p = app_put(p, end, " outcome=");
	p = app_put(p, end, note->outcome ? note->outcome : "-");
	p = app_put(p, end, " ms=");
	p = app_put_num(p, end, (long long)(li->us / 1000));
	p = app_put(p, end, " client_request_id=");
	p = app_put(p, end, li->client_request_id != NULL ?
	    li->client_request_id : "-");
	p = app_put(p, end, " rid=");
	p = app_put(p, end, li->request_id);
	*p++ = '\n';
	app_log_write(line, (size_t)(p - line));
}

/* A member whose value is s, or null when s is NULL or empty. */
static void
app_json_member(struct json_writer *w, const char *name, const char *s)
{
	json_write_name(w, name);
	if (s == NULL || *s == '\0')
		json_write_raw(w, "null", 4);
	else
		json_write_str(w, s);
}

/*
 * The same as one JSON object a line (IDEM_LOG=json), for log shippers:
 * the fields taken from the request are escaped as in the text line
 * first, so the line is ASCII and valid JSON whatever bytes the request
 * held.  The names are listed in idem-fcgi(8).
 */
static void
app_log_json(const struct app_log_info *li, const struct request *req,
    const struct response *resp)
{
	char field[4 * APP_LOG_FIELD + 4], when[64], ms[32];
	const struct pay_note *note = li->note;
	struct buf out = BUF_INIT;
	struct json_writer w;
	size_t n;

	pay_time(li->now_ms, when);
	n = buf_fmt_uint(ms, li->us / 1000, 0);
	ms[n++] = '.';
	n += buf_fmt_uint(ms + n, li->us % 1000, 3);
	json_write_init(&w, &out);
	json_write_open(&w, '{');
	app_json_member(&w, "time", when);
	app_json_member(&w, "request_id", li->request_id);
	app_json_member(&w, "client_request_id", li->client_request_id);
	app_json_member(&w, "remote", app_log_field(req->remote_addr, field));
	app_json_member(&w, "method", app_log_field(req->method, field));
	app_json_member(&w, "path", app_log_field(req->path, field));
	json_write_name(&w, "status");
	json_write_int(&w, resp->status);
	app_json_member(&w, "outcome", note->outcome);
	app_json_member(&w, "account", note->account);
	app_json_member(&w, "key", note->keyhash);
	json_write_name(&w, "latency_ms");
	json_write_raw(&w, ms, n);
	json_write_close(&w, '}');
	if (json_write_done(&w) == IDEM_OK && buf_putc(&out, '\n') == IDEM_OK)
		app_log_write(out.data, out.len);
	buf_free(&out);
}

/*
 * The request's line, under the id its answer carries (Request-Id): the
 * web server's own (REQUEST_ID, UNIQUE_ID) when it passed one, so that
 * its access log and ours can be joined, else one made up for the
 * request (req_id).  The client's X-Request-Id is a field of its own,
 * client_request_id: a client chooses it, so it may repeat another's.
 */
static void
app_log(const struct app *a, const struct pay_note *note,
    const struct request *req, const struct response *resp,
    const char *request_id, uint64_t start_us)
{
	struct app_log_info li = { note, request_id, req->client_request_id,
	    clock_now_ms(), metrics_now_us() - start_us };

	if (a->cfg.log_format == CONFIG_LOG_JSON)
		app_log_json(&li, req, resp);
	else
		app_log_text(&li, req, resp);
}

static void
app_count(int status, uint64_t ms)
{
	metrics_inc(METRIC_REQUESTS);
	if (status >= 500)
		metrics_inc(METRIC_RESPONSES_5XX);
	else if (status >= 400)
		metrics_inc(METRIC_RESPONSES_4XX);
	else if (status >= 300)
		metrics_inc(METRIC_RESPONSES_3XX);
	else if (status >= 200)
		metrics_inc(METRIC_RESPONSES_2XX);
	metrics_observe_ms(ms);
}

void
app_handle(void *app, enum req_status st, const struct request *req,
    struct response *resp)
{
	struct app *a = app;
	struct pay_note note;
	uint64_t start = clock_now_ms(), start_us = metrics_now_us(), ms;
	char made[REQ_ID_MADE + 1];
	const char *rid = req_id(req->request_id, made);

	memset(&note, 0, sizeof(note));
	/*
	 * Every problem built into this answer names the request as its
	 * instance; one stored with a key's answer keeps that name.
	 */
	resp->instance = rid;
	if (st == REQ_BAD_METHOD || st == REQ_NOMEM || req->path == NULL)
		pay_bad_request(st, &a->cfg, resp);
	else
		app_route(a, &note, st, req, resp);
	resp->instance = NULL;
	/* Payment data is never to be kept by caches on the way. */
	resp_header(resp, "Cache-Control", "no-store");
	/*
	 * Added after the handler, so never stored with an answer: a replay
	 * carries its own request's id, the one its log line has.
	 */
	resp_header(resp, "Request-Id", "%s", rid);
	resp->head = req->method != NULL && strcmp(req->method, "HEAD") == 0;
	ms = clock_now_ms() - start;
	app_count(resp->status, ms);
	app_log(a, &note, req, resp, rid, start_us);
}
