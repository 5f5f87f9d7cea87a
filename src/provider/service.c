/* SPDX-License-Identifier: MIT */
/*
 * service.c: the payment provider service's decisions (service.h).
 *
 * A charge or refund is new work only when its key is free; everything
 * else (a replay, 409, 422) is the library's answer.  The work has no
 * effect outside the store (its ledger row), so it runs under idem_once:
 * it decides its outcome and its answer, and the claim, the ledger row
 * and the stored answer are one write transaction, one durable commit.
 * Only when that committed is the failure mode applied: in the timeout
 * and drop modes the money has moved and the caller does not learn it,
 * which is what a real provider's lost answer looks like.  A write that
 * fails stores nothing and charges nothing: 503.  A retry under the same
 * key is a replay in every mode but unavailable, so it recovers the
 * original charge; two requests for one new key at once make one ledger
 * row, and both answer it (the second as a replay).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "fault.h"
#include "idem.h"
#include "json.h"
#include "service.h"

/*
 * The keys idem derives hold its client's key (up to 255 characters,
 * spaces included) after a prefix and the account, and before 32 hex
 * digits of the request's fingerprint and the key's generation: at most
 * 381 characters.
 */
#define PSVC_KEY_MAX 400
#define PSVC_CURRENCY_MAX 15
#define PSVC_AMOUNT_DIGITS 18
#define PSVC_ID_RANDOM 12      /* bytes: 24 hex digits */
/*
 * How long a key answers its original: a week, well past idem's own key
 * lifetime (a day by default), so a payment resumed late still finds its
 * charge instead of making a second one.
 */
#define PSVC_TTL_MS (7ULL * 24 * 3600 * 1000)

struct psvc {
	struct idem *db;
	enum psvc_fail fail;
	unsigned latency_ms;
	unsigned hold_ms;
};

static const char *const psvc_fail_names[PSVC_FAIL__MAX] = {
	[PSVC_FAIL_NONE] = "none",
	[PSVC_FAIL_DECLINE] = "decline",
	[PSVC_FAIL_UNAVAILABLE] = "unavailable",
	[PSVC_FAIL_TIMEOUT] = "timeout",
	[PSVC_FAIL_DROP] = "drop",
};

/*
 * The ledger's tables: one row per outcome, keyed by its id (ch_, dc_,
 * rf_ and 24 random hex digits), the caller's key its value.  Not by the
 * key: a key lives PSVC_TTL_MS, and a charge made under it after that is
 * a second charge, which a row keyed by the key would overwrite, and
 * /stats would not count.
 */
static const char *const psvc_tables[] = { "charges", "declines", "refunds",
    NULL };

int
psvc_fail_parse(const char *s, enum psvc_fail *fail)
{
	int i;

	for (i = 0; s != NULL && i < PSVC_FAIL__MAX; i++)
		if (strcmp(s, psvc_fail_names[i]) == 0) {
			*fail = (enum psvc_fail)i;
			return 0;
		}
	return -1;
}

int
psvc_open(const struct psvc_config *cfg, struct psvc **out)
{
	struct idem_options opt;
	struct psvc *s;
	int rc;

	if (cfg == NULL || cfg->dir == NULL || (int)cfg->fail < 0 ||
	    cfg->fail >= PSVC_FAIL__MAX)
		return IDEM_EINVAL;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return IDEM_ENOMEM;
	memset(&opt, 0, sizeof(opt));
	opt.size = sizeof(opt);
	opt.dir = cfg->dir;
	opt.map_size = cfg->map_size;
	opt.ttl_ms = PSVC_TTL_MS;
	opt.tables = psvc_tables;
	if ((rc = idem_open(&opt, &s->db)) != IDEM_OK) {
		free(s);
		return rc;
	}
	s->fail = cfg->fail;
	s->latency_ms = cfg->latency_ms;
	s->hold_ms = cfg->hold_ms;
	*out = s;
	return IDEM_OK;
}

void
psvc_close(struct psvc *s)
{
	if (s == NULL)
		return;
	idem_close(s->db);
	free(s);
}

/* Sets a's status and a JSON body written by printf-style fmt. */
static void
psvc_say(struct psvc_answer *a, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
psvc_say(struct psvc_answer *a, int status, const char *fmt, ...)
{
	va_list ap;
	int n;

	a->status = status;
	va_start(ap, fmt);
	n = vsnprintf(a->body, sizeof(a->body), fmt, ap);
	va_end(ap);
	a->bodylen = n < 0 ? 0 : (size_t)n < sizeof(a->body) ? (size_t)n :
	    sizeof(a->body) - 1;
}

/* GET /stats: the ledger's counts. */
static void
psvc_stats(struct psvc *s, struct psvc_answer *a)
{
	size_t n[3];
	int i, rc;

	for (i = 0; i < 3; i++)
		if ((rc = idem_row_count(s->db, psvc_tables[i], &n[i])) !=
		    IDEM_OK) {
			psvc_say(a, 503, "{\"status\":\"unavailable\"}\n");
			return;
		}
	psvc_say(a, 200, "{\"charges\":%zu,\"declines\":%zu,"
	    "\"refunds\":%zu}\n", n[0], n[1], n[2]);
}

/* The body's order: a positive amount in minor units and a currency. */
struct psvc_order {
	char amount[PSVC_AMOUNT_DIGITS + 1];
	char currency[PSVC_CURRENCY_MAX + 1];
};

/*
 * Reads {"amount": N, "currency": "XYZ"} and nothing else: N a positive
 * integer without sign, exponent or leading zero, the currency capital
 * letters.  0, or -1 with the body's canonical form unset.
 */
static int
psvc_order_read(const struct json_value *root, struct psvc_order *o)
{
	const struct json_value *amount, *currency;
	const char *t;
	size_t len, i;

	if (json_type(root) != JSON_OBJECT || json_count(root) != 2 ||
	    (amount = json_get(root, "amount")) == NULL ||
	    (currency = json_get(root, "currency")) == NULL ||
	    json_type(amount) != JSON_NUMBER ||
	    json_type(currency) != JSON_STRING)
		return -1;
	t = json_text(amount, &len);
	if (len == 0 || len > PSVC_AMOUNT_DIGITS || t[0] == '0')
		return -1;
	for (i = 0; i < len; i++)
		if (t[i] < '0' || t[i] > '9')
			return -1;
	memcpy(o->amount, t, len + 1);
	t = json_text(currency, &len);
	if (len == 0 || len > PSVC_CURRENCY_MAX)
		return -1;
	for (i = 0; i < len; i++)
		if (t[i] < 'A' || t[i] > 'Z')
			return -1;
	memcpy(o->currency, t, len + 1);
	return 0;
}

/*
 * An Idempotency-Key: 1 to PSVC_KEY_MAX printable ASCII characters, not
 * starting or ending with a space (a header field value cannot: RFC 9110
 * section 5.5).
 */
static int
psvc_key_valid(const char *key)
{
	size_t i, len;

	if (key == NULL || (len = strlen(key)) == 0 || len > PSVC_KEY_MAX ||
	    key[0] == ' ' || key[len - 1] == ' ')
		return 0;
	for (i = 0; i < len; i++)
		if (key[i] < 0x20 || key[i] > 0x7e)
			return 0;
	return 1;
}

struct psvc_row {
	const char *table;
	char id[4 + 2 * PSVC_ID_RANDOM];
	const char *key;
};

/* idem_once's hook: the ledger row, with the stored answer. */
static int
psvc_row_put(void *ctx, struct idem_tx *tx)
{
	const struct psvc_row *r = ctx;

	return idem_tx_put(tx, r->table, r->id, strlen(r->id), r->key,
	    strlen(r->key));
}

/* New work: what it decides, and where its answer is written. */
struct psvc_work {
	struct psvc *s;
	int refund;
	const struct psvc_order *o;
	struct psvc_answer *a;
	struct psvc_row row;
};

/*
 * idem_once's function: the outcome, its answer (in the caller's
 * answer, which a replay or a failure overwrites) and the ledger row's
 * hook.  Nothing here reaches outside: the write that follows commits
 * the row and the answer, or neither.
 */
static int
psvc_work_make(void *ctx, struct idem_outcome *out)
{
	static const struct idem_header h = { "Content-Type",
	    "application/json" };
	struct psvc_work *w = ctx;
	struct psvc_answer *a = w->a;
	uint8_t rnd[PSVC_ID_RANDOM];
	char *id = w->row.id;
	const char *status;
	int code;

	if (w->refund) {
		w->row.table = "refunds", status = "refunded", code = 201;
		memcpy(id, "rf_", 3);
	} else if (w->s->fail == PSVC_FAIL_DECLINE) {
		w->row.table = "declines", status = "declined", code = 402;
		memcpy(id, "dc_", 3);
	} else {
		w->row.table = "charges", status = "charged", code = 201;
		memcpy(id, "ch_", 3);
	}
	crypto_random(rnd, sizeof(rnd));
	crypto_hex(rnd, sizeof(rnd), id + 3);
	psvc_say(a, code, "{\"amount\":%s,\"currency\":\"%s\",\"id\":\"%s\","
	    "\"status\":\"%s\"}\n", w->o->amount, w->o->currency, id, status);
	fault_point("provider_work");
	out->resp.status = a->status;
	out->resp.headers = &h;
	out->resp.nheaders = 1;
	out->resp.body = a->body;
	out->resp.bodylen = a->bodylen;
	out->hook = psvc_row_put;
	out->hook_ctx = &w->row;
	return IDEM_OK;
}

/* New work committed: the failure mode's part. */
static void
psvc_worked(struct psvc *s, struct psvc_answer *a)
{
	fault_point("provider_committed");
	a->delay_ms = s->latency_ms;
	if (s->fail == PSVC_FAIL_TIMEOUT)
		a->delay_ms += s->hold_ms;
	else if (s->fail == PSVC_FAIL_DROP)
		a->drop = 1;
}

/* POST /charges or /refunds. */
static void
psvc_post(struct psvc *s, const struct psvc_request *rq, int refund,
    struct psvc_answer *a)
{
	struct json_value *root = NULL;
	struct psvc_order o;
	struct idem_call *c = NULL;
	const struct idem_response *stored;
	struct psvc_work w;
	struct buf canon = BUF_INIT;
	uint8_t fp[IDEM_FP_SIZE];
	const char *scope = refund ? "refunds" : "charges";

	if (s->fail == PSVC_FAIL_UNAVAILABLE) {
		a->delay_ms = s->latency_ms;
		psvc_say(a, 503, "{\"status\":\"unavailable\"}\n");
		return;
	}
	if (!psvc_key_valid(rq->key)) {
		psvc_say(a, 400, "{\"status\":\"invalid\",\"detail\":"
		    "\"Idempotency-Key\"}\n");
		return;
	}
	if (json_parse(rq->body, rq->bodylen, &root, NULL, 0) != JSON_OK ||
	    psvc_order_read(root, &o) != 0 ||
	    json_canonical(root, &canon) != IDEM_OK) {
		psvc_say(a, 400, "{\"status\":\"invalid\",\"detail\":"
		    "\"body\"}\n");
		goto out;
	}
	idem_fingerprint(IDEM_FP_CANONICAL, "POST", rq->path, NULL, canon.data,
	    canon.len, fp);
	memset(&w, 0, sizeof(w));
	w.s = s;
	w.refund = refund;
	w.o = &o;
	w.a = a;
	w.row.key = rq->key;
	if (idem_once(s->db, scope, rq->key, fp, psvc_work_make, &w, &c) !=
	    IDEM_OK) {
		/* Nothing committed: nothing charged, the key free. */
		memset(a, 0, sizeof(*a));
		psvc_say(a, 503, "{\"status\":\"unavailable\"}\n");
		goto out;
	}
	switch (idem_call_verdict(c)) {
	case IDEM_RUN:
	case IDEM_RESUME:
		psvc_worked(s, a);
		break;
	case IDEM_REPLAY:
		stored = idem_call_response(c);
		if (stored->bodylen >= sizeof(a->body)) {
			psvc_say(a, 500, "{\"status\":\"error\"}\n");
			break;
		}
		a->status = stored->status;
		memcpy(a->body, stored->body, stored->bodylen);
		a->bodylen = stored->bodylen;
		a->replayed = 1;
		break;
	case IDEM_MISMATCH:
		psvc_say(a, 422, "{\"status\":\"key_reused\"}\n");
		break;
	case IDEM_CONFLICT:
	default:
		a->retry_after = idem_call_retry_after(c);
		psvc_say(a, 409, "{\"status\":\"in_progress\"}\n");
		break;
	}
out:
	idem_call_free(c);
	buf_free(&canon);
	json_free(root);
}

void
psvc_handle(struct psvc *s, const struct psvc_request *rq,
    struct psvc_answer *a)
{
	memset(a, 0, sizeof(*a));
	if (rq->path == NULL || rq->method == NULL)
		psvc_say(a, 400, "{\"status\":\"invalid\"}\n");
	else if (strcmp(rq->path, "/stats") == 0)
		strcmp(rq->method, "GET") == 0 ? psvc_stats(s, a) :
		    psvc_say(a, 405, "{\"status\":\"method\"}\n");
	else if (strcmp(rq->path, "/charges") == 0 ||
	    strcmp(rq->path, "/refunds") == 0)
		strcmp(rq->method, "POST") == 0 ? psvc_post(s, rq,
		    rq->path[1] == 'r', a) :
		    psvc_say(a, 405, "{\"status\":\"method\"}\n");
	else
		psvc_say(a, 404, "{\"status\":\"not_found\"}\n");
}
