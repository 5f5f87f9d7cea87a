/* SPDX-License-Identifier: MIT */
/*
 * simprov.c: the provider interface (src/payments/provider.h) for
 * simulation.
 *
 * A card processor outside our transactions, as a real one behaves: it
 * deduplicates on the idempotency key it is given (a charge under a known
 * key returns the original outcome, the same key with another amount is
 * refused), it takes its time, it declines, it is sometimes down (nothing
 * happens), and sometimes it charges and the answer never comes back.
 * Its ledger survives every worker crash, as the provider's own would.
 * Every charge it makes afresh goes to the checker with the request that
 * caused it.  Refunds share the ledger and its faults (outages, slowness
 * past the lease, answers lost after refunding); a refund is never
 * declined, and every refund it makes afresh goes to the checker with
 * its key, amount and the payment its request names.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "err.h"
#include "provider.h"
#include "sim.h"
#include "simprov.h"

#define LEDGER_MAX 2048

struct provider {
	int unused;
};

struct entry {
	char *key;
	int64_t amount;
	char currency[8];
	enum provider_outcome outcome;   /* PROVIDER_REFUNDED: a refund */
	char id[PROVIDER_ID_SIZE];
};

static struct entry ledger[LEDGER_MAX];
static size_t nledger;

void
simprov_reset(void)
{
	while (nledger > 0)
		free(ledger[--nledger].key);
}

int
provider_open(const struct provider_config *cfg, struct provider **out)
{
	(void)cfg;
	if ((*out = calloc(1, sizeof(**out))) == NULL)
		return IDEM_ENOMEM;
	return IDEM_OK;
}

void
provider_close(struct provider *p)
{
	free(p);
}

static struct entry *
ledger_find(const char *key)
{
	size_t i;

	for (i = 0; i < nledger; i++)
		if (strcmp(ledger[i].key, key) == 0)
			return &ledger[i];
	return NULL;
}

static struct entry *
ledger_add(const char *key, int64_t amount, const char *currency,
    enum provider_outcome outcome)
{
	struct entry *e;

	if (nledger == LEDGER_MAX)
		abort();
	e = &ledger[nledger++];
	if ((e->key = strdup(key)) == NULL)
		abort();
	e->amount = amount;
	snprintf(e->currency, sizeof(e->currency), "%s", currency);
	e->outcome = outcome;
	snprintf(e->id, sizeof(e->id), "%s%012" PRIx64 "%012" PRIx64,
	    outcome == PROVIDER_CHARGED ? "ch_" : outcome ==
	    PROVIDER_REFUNDED ? "rf_" : "dc_",
	    sim_below(1ULL << 48), sim_below(1ULL << 48));
	return e;
}

int
provider_charge(struct provider *p, const char *key, int64_t amount,
    const char *currency, uint64_t now_ms, struct provider_charge *out)
{
	struct sim_req *rq = sim_current_req();
	struct entry *e;
	struct rec r;
	uint64_t created = 0;

	(void)p;
	(void)now_ms;
	memset(out, 0, sizeof(*out));
	sim_point("in_provider");
	if (sim_chance(W.pf.outage_ppm)) {
		W.faults++;
		trace("provider unavailable for %s", key);
		out->outcome = PROVIDER_UNAVAILABLE;
		return IDEM_OK;
	}
	if (sim_chance(W.pf.prov_slow_ppm))
		sim_sleep(W.lease_ms + sim_below(W.lease_ms), "provider slow");
	else
		sim_sleep(sim_below(2000), "provider");
	if ((e = ledger_find(key)) != NULL) {
		if (e->outcome == PROVIDER_REFUNDED || e->amount != amount ||
		    strcmp(e->currency, currency) != 0)
			out->outcome = PROVIDER_KEY_REUSED;
		else {
			out->outcome = e->outcome;
			out->replayed = 1;
			snprintf(out->id, sizeof(out->id), "%s", e->id);
		}
		trace("provider %s under known key %s: %s", out->replayed ?
		    "replays" : "refuses", key, e->id);
	} else {
		e = ledger_add(key, amount, currency, sim_chance(
		    W.pf.decline_ppm) ? PROVIDER_DECLINED : PROVIDER_CHARGED);
		out->outcome = e->outcome;
		snprintf(out->id, sizeof(out->id), "%s", e->id);
		trace("provider %s %" PRId64 " %s under %s: %s",
		    e->outcome == PROVIDER_CHARGED ? "charges" : "declines",
		    amount, currency, key, e->id);
		if (e->outcome == PROVIDER_CHARGED && rq != NULL) {
			if (truth_lookup(rq->scope, rq->key, &r) == IDEM_OK) {
				created = r.created_ms;
				rec_free(&r);
			}
			check_on_charge(rq, e->id, amount, created);
		}
	}
	sim_point("after_charge");
	if (sim_chance(W.pf.prov_lost_ppm)) {
		W.faults++;
		trace("provider answer lost (%s)", out->id);
		memset(out, 0, sizeof(*out));
		out->outcome = PROVIDER_TIMEOUT;
	}
	return IDEM_OK;
}

/* The claim time of rq's key now (0 if none): the lifetime it acts in. */
static uint64_t
simprov_claim_created(const struct sim_req *rq)
{
	uint64_t created = 0;
	struct rec r;

	if (rq != NULL && truth_lookup(rq->scope, rq->key, &r) == IDEM_OK) {
		created = r.created_ms;
		rec_free(&r);
	}
	return created;
}

/* The payment id in a path /payments/{id}/refunds, or "" (out). */
static void
simprov_payment_of(const struct sim_req *rq, char *out, size_t len)
{
	const char *p, *e;

	out[0] = '\0';
	if (rq == NULL || strncmp(rq->path, "/payments/", 10) != 0)
		return;
	p = rq->path + 10;
	if ((e = strchr(p, '/')) == NULL || (size_t)(e - p) >= len)
		return;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
}

int
provider_refund(struct provider *p, const char *key, int64_t amount,
    const char *currency, uint64_t now_ms, struct provider_charge *out)
{
	struct sim_req *rq = sim_current_req();
	char payment[64];
	struct entry *e;

	(void)p;
	(void)now_ms;
	memset(out, 0, sizeof(*out));
	sim_point("in_provider");
	if (sim_chance(W.pf.outage_ppm)) {
		W.faults++;
		trace("provider unavailable for %s", key);
		out->outcome = PROVIDER_UNAVAILABLE;
		return IDEM_OK;
	}
	if (sim_chance(W.pf.prov_slow_ppm))
		sim_sleep(W.lease_ms + sim_below(W.lease_ms), "provider slow");
	else
		sim_sleep(sim_below(2000), "provider");
	if ((e = ledger_find(key)) != NULL) {
		if (e->outcome != PROVIDER_REFUNDED || e->amount != amount ||
		    strcmp(e->currency, currency) != 0)
			out->outcome = PROVIDER_KEY_REUSED;
		else {
			out->outcome = PROVIDER_REFUNDED;
			out->replayed = 1;
			snprintf(out->id, sizeof(out->id), "%s", e->id);
		}
		trace("provider %s refund under known key %s: %s",
		    out->replayed ? "replays" : "refuses", key, e->id);
	} else {
		e = ledger_add(key, amount, currency, PROVIDER_REFUNDED);
		out->outcome = PROVIDER_REFUNDED;
		snprintf(out->id, sizeof(out->id), "%s", e->id);
		/*
		 * The completer's request stands for the claim it holds now,
		 * which may not be the one it listed: that one's own request
		 * may have released it since, and a retry claimed the key
		 * afresh.  Its path is the held claim's.
		 */
		if (rq != NULL && rq->worker == SIM_COMPLETER)
			check_claim_path(rq->scope, rq->key, rq->path,
			    sizeof(rq->path));
		simprov_payment_of(rq, payment, sizeof(payment));
		trace("provider refunds %" PRId64 " %s of %s under %s: %s",
		    amount, currency, payment, key, e->id);
		if (rq != NULL)
			check_on_refund(rq, e->id, payment, amount,
			    simprov_claim_created(rq));
	}
	sim_point("after_refund");
	if (sim_chance(W.pf.prov_lost_ppm)) {
		W.faults++;
		trace("provider answer lost (%s)", out->id);
		memset(out, 0, sizeof(*out));
		out->outcome = PROVIDER_TIMEOUT;
	}
	return IDEM_OK;
}

int
provider_count_refunds(struct provider *p, size_t *refunds)
{
	size_t i;

	(void)p;
	*refunds = 0;
	for (i = 0; i < nledger; i++)
		*refunds += ledger[i].outcome == PROVIDER_REFUNDED;
	return IDEM_OK;
}

int
provider_count(struct provider *p, size_t *charges, size_t *declines)
{
	size_t i;

	(void)p;
	*charges = *declines = 0;
	for (i = 0; i < nledger; i++) {
		*charges += ledger[i].outcome == PROVIDER_CHARGED;
		*declines += ledger[i].outcome == PROVIDER_DECLINED;
	}
	return IDEM_OK;
}

int
provider_charges_for(struct provider *p, const char *key, size_t *n)
{
	struct entry *e = ledger_find(key);

	(void)p;
	*n = e != NULL && e->outcome == PROVIDER_CHARGED;
	return IDEM_OK;
}

int
provider_fail_parse(const char *s, enum provider_fail *fail)
{
	static const char *const names[PROVIDER_FAIL__MAX] = {
		"none", "decline", "unavailable", "timeout"
	};
	int i;

	for (i = 0; i < PROVIDER_FAIL__MAX; i++)
		if (strcmp(s, names[i]) == 0) {
			*fail = (enum provider_fail)i;
			return IDEM_OK;
		}
	return IDEM_EINVAL;
}
