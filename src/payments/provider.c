/* SPDX-License-Identifier: MIT */
/*
 * provider.c: the simulated payment provider and its ledger.
 *
 * The ledger is a separate store (its own LMDB environment), because a
 * real provider is outside our transactions: nothing we commit or roll
 * back can undo a charge.  Each row is keyed by the caller's idempotency
 * key and written with idem_row_insert_once, so "have I seen this key" and
 * "record this charge" are one atomic step even with many worker
 * processes calling at once; that is what makes the provider charge at
 * most once per key, the way a real one does.
 *
 * In PROVIDER_FAIL_TIMEOUT mode a new charge is made and recorded and the
 * answer is then lost.  A key that is already in the ledger is answered
 * from the ledger in every mode but PROVIDER_FAIL_UNAVAILABLE, timeouts
 * included: a retry after a timeout recovers the original charge id
 * instead of charging again or losing it a second time.  DECLINE mode
 * likewise only decides the fate of new keys.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "crypto.h"
#include "fault.h"
#include "idem.h"
#include "provider.h"
#include "provider_http.h"

/*
 * Ledger row, version 1, big-endian:
 *     u8  version (1)
 *     u8  outcome (PROVIDER_CHARGED, PROVIDER_DECLINED or
 *         PROVIDER_REFUNDED)
 *     u64 amount in minor units
 *     u64 time of the charge, ms since the epoch
 *     u8  length of the currency code, then its bytes
 *     u8  length of the charge id, then its bytes
 */
#define LEDGER_VERSION 1
#define LEDGER_CURRENCY_MAX 15
#define LEDGER_ID_RANDOM 12 /* bytes: 24 hex digits */
/* The ledger's one table: derived key -> ledger row. */
#define PROVIDER_TABLE "ledger"

struct provider {
	struct provider_http *http;  /* set: the service, no ledger here */
	struct idem *ledger;
	unsigned latency_ms;
	enum provider_fail fail;
};

struct ledger_row {
	enum provider_outcome outcome;
	int64_t amount;
	uint64_t time_ms;
	char currency[LEDGER_CURRENCY_MAX + 1];
	char id[PROVIDER_ID_SIZE];
};

static const char *const provider_fail_names[PROVIDER_FAIL__MAX] = {
	[PROVIDER_FAIL_NONE] = "none",
	[PROVIDER_FAIL_DECLINE] = "decline",
	[PROVIDER_FAIL_UNAVAILABLE] = "unavailable",
	[PROVIDER_FAIL_TIMEOUT] = "timeout",
};

int
provider_open(const struct provider_config *cfg, struct provider **out)
{
	static const char *const tables[] = { PROVIDER_TABLE, NULL };
	struct idem_options opt;
	struct provider *p;
	int rc;

	if (cfg == NULL || cfg->dir == NULL || (int)cfg->fail < 0 ||
	    cfg->fail >= PROVIDER_FAIL__MAX)
		return IDEM_EINVAL;
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return IDEM_ENOMEM;
	if (cfg->url != NULL) {
		if ((rc = provider_http_open(cfg->url, cfg->timeout_ms,
		    &p->http)) != IDEM_OK) {
			free(p);
			return rc;
		}
		*out = p;
		return IDEM_OK;
	}
	memset(&opt, 0, sizeof(opt));
	opt.size = sizeof(opt);
	opt.dir = cfg->dir;
	opt.map_size = cfg->map_size;
	opt.commit_delay_us = cfg->commit_delay_us;
	opt.tables = tables;
	if ((rc = idem_open(&opt, &p->ledger)) != IDEM_OK) {
		free(p);
		return rc;
	}
	p->latency_ms = cfg->latency_ms;
	p->fail = cfg->fail;
	*out = p;
	return IDEM_OK;
}

void
provider_close(struct provider *p)
{
	if (p == NULL)
		return;
	provider_http_close(p->http);
	idem_close(p->ledger);
	free(p);
}

/* Sleeps ms milliseconds, resuming after signals. */
static void
provider_sleep(unsigned ms)
{
	struct timespec ts, rem;

	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &rem) == -1 && errno == EINTR)
		ts = rem;
}

static int
ledger_encode(const struct ledger_row *r, struct buf *b)
{
	size_t clen = strlen(r->currency), ilen = strlen(r->id);

	if (buf_put_u8(b, LEDGER_VERSION) != IDEM_OK ||
	    buf_put_u8(b, (uint8_t)r->outcome) != IDEM_OK ||
	    buf_put_u64(b, (uint64_t)r->amount) != IDEM_OK ||
	    buf_put_u64(b, r->time_ms) != IDEM_OK ||
	    buf_put_u8(b, (uint8_t)clen) != IDEM_OK ||
	    buf_append(b, r->currency, clen) != IDEM_OK ||
	    buf_put_u8(b, (uint8_t)ilen) != IDEM_OK ||
	    buf_append(b, r->id, ilen) != IDEM_OK)
		return IDEM_ENOMEM;
	return IDEM_OK;
}

/* Reads a length-prefixed string of at most max bytes into out. */
static int
ledger_str(struct rd *rd, char *out, size_t max)
{
	const uint8_t *p;
	uint8_t len;

	if (rd_u8(rd, &len) != IDEM_OK || len > max ||
	    rd_bytes(rd, len, &p) != IDEM_OK)
		return IDEM_ECORRUPT;
	memcpy(out, p, len);
	out[len] = '\0';
	if (memchr(out, '\0', len) != NULL)
		return IDEM_ECORRUPT;
	return IDEM_OK;
}

static int
ledger_decode(const void *data, size_t len, struct ledger_row *r)
{
	struct rd rd;
	uint8_t version, outcome;
	uint64_t amount;

	memset(r, 0, sizeof(*r));
	rd_init(&rd, data, len);
	if (rd_u8(&rd, &version) != IDEM_OK || version != LEDGER_VERSION ||
	    rd_u8(&rd, &outcome) != IDEM_OK ||
	    (outcome != PROVIDER_CHARGED && outcome != PROVIDER_DECLINED &&
	    outcome != PROVIDER_REFUNDED) ||
	    rd_u64(&rd, &amount) != IDEM_OK ||
	    rd_u64(&rd, &r->time_ms) != IDEM_OK ||
	    ledger_str(&rd, r->currency, LEDGER_CURRENCY_MAX) != IDEM_OK ||
	    ledger_str(&rd, r->id, PROVIDER_ID_SIZE - 1) != IDEM_OK ||
	    rd.left != 0)
		return IDEM_ECORRUPT;
	r->outcome = (enum provider_outcome)outcome;
	r->amount = (int64_t)amount;
	return IDEM_OK;
}

/* A fresh id: prefix ("ch_", "rf_") and 24 random hex digits. */
static void
provider_new_id(const char *prefix, char id[PROVIDER_ID_SIZE])
{
	uint8_t rnd[LEDGER_ID_RANDOM];

	crypto_random(rnd, sizeof(rnd));
	memcpy(id, prefix, 3);
	crypto_hex(rnd, sizeof(rnd), id + 3);
}

/*
 * Answers a charge under a key the ledger already holds.  The same key
 * with another amount or currency is a client bug, not a retry, and must
 * not be told the original charge's id.
 */
static int
provider_replay(const void *stored, size_t storedlen, int refund,
    int64_t amount, const char *currency, struct provider_charge *out)
{
	struct ledger_row r;
	int rc;

	if ((rc = ledger_decode(stored, storedlen, &r)) != IDEM_OK)
		return rc;
	out->replayed = 1;
	if (r.amount != amount || strcmp(r.currency, currency) != 0 ||
	    (r.outcome == PROVIDER_REFUNDED) != refund) {
		out->outcome = PROVIDER_KEY_REUSED;
		return IDEM_OK;
	}
	out->outcome = r.outcome;
	memcpy(out->id, r.id, sizeof(out->id));
	return IDEM_OK;
}

/*
 * Records a new charge or refund (refund set) under key, or answers the
 * one the key already names.  after is the fault point just after the
 * ledger row committed.
 */
static int
provider_record(struct provider *p, int refund, const char *key,
    int64_t amount, const char *currency, uint64_t now_ms, const char *after,
    struct provider_charge *out)
{
	struct buf row = BUF_INIT;
	struct ledger_row r;
	void *stored = NULL;
	size_t klen, storedlen = 0;
	int rc;

	fault_point("in_provider");
	memset(out, 0, sizeof(*out));
	if (key == NULL || (klen = strlen(key)) == 0 || currency == NULL ||
	    strlen(currency) == 0 || strlen(currency) > LEDGER_CURRENCY_MAX ||
	    amount <= 0)
		return IDEM_EINVAL;

	/* The network is slow whatever the provider then decides. */
	if (p->latency_ms > 0)
		provider_sleep(p->latency_ms);
	if (p->fail == PROVIDER_FAIL_UNAVAILABLE) {
		out->outcome = PROVIDER_UNAVAILABLE;
		return IDEM_OK;
	}

	memset(&r, 0, sizeof(r));
	if (refund)
		r.outcome = PROVIDER_REFUNDED;
	else
		r.outcome = p->fail == PROVIDER_FAIL_DECLINE ?
		    PROVIDER_DECLINED : PROVIDER_CHARGED;
	r.amount = amount;
	r.time_ms = now_ms;
	memcpy(r.currency, currency, strlen(currency) + 1);
	provider_new_id(refund ? "rf_" : "ch_", r.id);
	if ((rc = ledger_encode(&r, &row)) != IDEM_OK)
		goto out;

	rc = idem_row_insert_once(p->ledger, PROVIDER_TABLE, key, klen,
	    row.data, row.len, &stored, &storedlen);
	if (rc == IDEM_EEXIST) {
		rc = provider_replay(stored, storedlen, refund, amount,
		    currency, out);
		goto out;
	}
	if (rc != IDEM_OK)
		goto out;

	/*
	 * The row is committed: from here on the money has moved (or the
	 * decline is final) whatever happens to the caller, which is the
	 * window the crash tests aim at.
	 */
	fault_point(after);
	if (p->fail == PROVIDER_FAIL_TIMEOUT) {
		out->outcome = PROVIDER_TIMEOUT;
		goto out;
	}
	out->outcome = r.outcome;
	memcpy(out->id, r.id, sizeof(out->id));
out:
	free(stored);
	buf_free(&row);
	return rc;
}

int
provider_charge(struct provider *p, const char *key, int64_t amount,
    const char *currency, uint64_t now_ms, struct provider_charge *out)
{
	if (p->http != NULL) {
		fault_point("in_provider");
		return provider_http_call(p->http, 0, key, amount, currency,
		    out);
	}
	return provider_record(p, 0, key, amount, currency, now_ms,
	    "after_charge", out);
}

int
provider_refund(struct provider *p, const char *key, int64_t amount,
    const char *currency, uint64_t now_ms, struct provider_charge *out)
{
	if (p->http != NULL) {
		fault_point("in_provider");
		return provider_http_call(p->http, 1, key, amount, currency,
		    out);
	}
	return provider_record(p, 1, key, amount, currency, now_ms,
	    "after_refund", out);
}

struct provider_tally {
	size_t charges;
	size_t declines;
	size_t refunds;
	int err;
};

static int
provider_tally_row(void *ctx, const void *key, size_t keylen,
    const void *val, size_t vallen)
{
	struct provider_tally *t = ctx;
	struct ledger_row r;

	(void)key;
	(void)keylen;
	if ((t->err = ledger_decode(val, vallen, &r)) != IDEM_OK)
		return 1;
	if (r.outcome == PROVIDER_CHARGED)
		t->charges++;
	else if (r.outcome == PROVIDER_REFUNDED)
		t->refunds++;
	else
		t->declines++;
	return 0;
}

int
provider_count(struct provider *p, size_t *charges, size_t *declines)
{
	struct provider_tally t = { 0, 0, 0, IDEM_OK };
	int rc;

	if (p->http != NULL)
		return provider_http_stats(p->http, charges, declines,
		    &t.refunds);
	rc = idem_row_scan(p->ledger, PROVIDER_TABLE, NULL, 0, 0, 0,
	    provider_tally_row, &t);
	if (rc != IDEM_OK)
		return rc;
	if (t.err != IDEM_OK)
		return t.err;
	*charges = t.charges;
	*declines = t.declines;
	return IDEM_OK;
}

int
provider_count_refunds(struct provider *p, size_t *refunds)
{
	struct provider_tally t = { 0, 0, 0, IDEM_OK };
	int rc;

	if (p->http != NULL)
		return provider_http_stats(p->http, &t.charges, &t.declines,
		    refunds);
	rc = idem_row_scan(p->ledger, PROVIDER_TABLE, NULL, 0, 0, 0,
	    provider_tally_row, &t);
	if (rc != IDEM_OK)
		return rc;
	if (t.err != IDEM_OK)
		return t.err;
	*refunds = t.refunds;
	return IDEM_OK;
}

int
provider_charges_for(struct provider *p, const char *key, size_t *n)
{
	struct ledger_row r;
	void *val = NULL;
	size_t vallen = 0;
	int rc;

	if (key == NULL || key[0] == '\0' || p->http != NULL)
		return IDEM_EINVAL;
	rc = idem_row_get(p->ledger, PROVIDER_TABLE, key, strlen(key), &val,
	    &vallen);
	if (rc == IDEM_ENOTFOUND) {
		*n = 0;
		rc = IDEM_OK;
		goto out;
	}
	if (rc != IDEM_OK)
		goto out;
	if ((rc = ledger_decode(val, vallen, &r)) != IDEM_OK)
		goto out;
	*n = r.outcome == PROVIDER_CHARGED ? 1 : 0;
out:
	free(val);
	return rc;
}

int
provider_global_init(void)
{
	return provider_http_global_init();
}

int
provider_fail_parse(const char *s, enum provider_fail *fail)
{
	int i;

	if (s == NULL)
		return IDEM_EINVAL;
	for (i = 0; i < PROVIDER_FAIL__MAX; i++)
		if (strcmp(s, provider_fail_names[i]) == 0) {
			*fail = (enum provider_fail)i;
			return IDEM_OK;
		}
	return IDEM_EINVAL;
}
