/* SPDX-License-Identifier: MIT */
/*
 * provider.h: the simulated payment provider.
 *
 * It stands for a real card processor outside our transactions: its
 * ledger is its own store (a separate LMDB environment), and it
 * deduplicates charges on the idempotency key the caller sends, the way a
 * real provider does.  A charge under a key it has seen returns the
 * original outcome; the same key with another amount or currency is a
 * PROVIDER_KEY_REUSED error.
 *
 * Failure modes, for demonstrations and tests (provider_config.fail):
 *   PROVIDER_FAIL_NONE        every charge succeeds
 *   PROVIDER_FAIL_DECLINE     every new charge is declined (a final answer,
 *                             recorded under its key)
 *   PROVIDER_FAIL_UNAVAILABLE the provider refuses before doing anything
 *   PROVIDER_FAIL_TIMEOUT     the charge is made and recorded, then the
 *                             answer is lost: the caller sees a timeout
 *
 * With provider_config.url set the same calls go to the provider service
 * over HTTP instead (provider_http.h), with the same outcomes; the
 * service then has the ledger, and provider_charges_for is IDEM_EINVAL.
 *
 * Refunds (provider_refund) are recorded in the same ledger and
 * deduplicated the same way, under the caller's key for the refund; the
 * latency and the unavailable and timeout modes apply to them alike.  A
 * refund is never declined: PROVIDER_FAIL_DECLINE decides charges only.
 */
#ifndef PAY_PROVIDER_H
#define PAY_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#define PROVIDER_ID_SIZE 32 /* "ch_" + 24 hex digits + NUL, with room */

enum provider_fail {
	PROVIDER_FAIL_NONE = 0,
	PROVIDER_FAIL_DECLINE,
	PROVIDER_FAIL_UNAVAILABLE,
	PROVIDER_FAIL_TIMEOUT,
	PROVIDER_FAIL__MAX
};

enum provider_outcome {
	PROVIDER_CHARGED = 0,  /* charged; id is the charge id */
	PROVIDER_DECLINED,     /* declined, final; id is the decline's id */
	PROVIDER_UNAVAILABLE,  /* nothing happened; safe to try later */
	PROVIDER_TIMEOUT,      /* unknown: a charge may have been made */
	PROVIDER_KEY_REUSED,   /* key seen with another amount or currency */
	PROVIDER_REFUNDED,     /* refunded; id is the refund id */
	PROVIDER_OUTCOME__MAX
};

struct provider_config {
	const char *dir;
	size_t map_size;
	unsigned latency_ms;  /* added to every charge call */
	enum provider_fail fail;
	unsigned commit_delay_us;  /* the ledger's group commits */
	/*
	 * Set: the provider is the service at this URL (idem-provider(8),
	 * provider_http.h), each call bounded by timeout_ms (0: 10 s); dir,
	 * latency_ms and fail are then the service's own business.
	 */
	const char *url;
	unsigned timeout_ms;
};

struct provider_charge {
	enum provider_outcome outcome;
	char id[PROVIDER_ID_SIZE];
	int replayed;         /* 1 when the key was seen before */
};

struct provider;

int provider_open(const struct provider_config *cfg, struct provider **out);
void provider_close(struct provider *p);

/*
 * Charges amount minor units of currency under key.  Returns IDEM_OK with
 * out->outcome set, or a store error (the ledger could not be read or
 * written: treat as PROVIDER_UNAVAILABLE).
 */
int provider_charge(struct provider *p, const char *key, int64_t amount,
    const char *currency, uint64_t now_ms, struct provider_charge *out);

/*
 * Refunds amount minor units of currency under key, the way
 * provider_charge charges: the same key answers the original refund
 * (PROVIDER_REFUNDED with its "rf_" id), never a second one.  Outcomes:
 * PROVIDER_REFUNDED, PROVIDER_UNAVAILABLE, PROVIDER_TIMEOUT,
 * PROVIDER_KEY_REUSED (the key names a charge, or another amount).
 */
int provider_refund(struct provider *p, const char *key, int64_t amount,
    const char *currency, uint64_t now_ms, struct provider_charge *out);

/* The number of refunds in the ledger. */
int provider_count_refunds(struct provider *p, size_t *refunds);

/* Counts of successful charges and of declines in the ledger. */
int provider_count(struct provider *p, size_t *charges, size_t *declines);

/* Number of successful charges made under key: 0 or 1. */
int provider_charges_for(struct provider *p, const char *key, size_t *n);

/*
 * Once per process before threads start: what the HTTP client needs
 * (curl_global_init).  IDEM_OK.
 */
int provider_global_init(void);

/* Parses "none", "decline", "unavailable", "timeout". */
int provider_fail_parse(const char *s, enum provider_fail *fail);

#endif
