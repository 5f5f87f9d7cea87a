/* SPDX-License-Identifier: MIT */
/*
 * provider_http.h: the provider reached over HTTP (idem-provider(8)),
 * behind provider.h when IDEM_PROVIDER_URL is set.
 *
 * Every call is one request on a curl easy handle of its own for the
 * call; handles are kept between calls (up to 64, behind a mutex) with
 * the connection each left open, so calls one after another reuse a
 * connection instead of opening one each.  libcurl sends a request again
 * on a new connection when a kept one turns out closed before any answer
 * came: harmless, as every call carries its idempotency key, which the
 * service answers with the first outcome.  A handle whose transfer
 * failed is not kept.  provider_http_global_init must run once before
 * the threads start (curl_global_init is not thread-safe).
 *
 * What the service answers is outside input: the body is read up to
 * PROVIDER_HTTP_BODY_MAX bytes, parsed with json.c and checked field by
 * field, and anything unexpected after the request was sent counts as an
 * unknown outcome (PROVIDER_TIMEOUT), never as "nothing happened".
 */
#ifndef PAY_PROVIDER_HTTP_H
#define PAY_PROVIDER_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "provider.h"

#define PROVIDER_HTTP_BODY_MAX 4096
#define PROVIDER_HTTP_URL_MAX 512
/* The longest derived key sent (idem-provider(8) takes as many). */
#define PROVIDER_HTTP_KEY_MAX 400

struct provider_http;

/* Once per process, before any thread calls the provider.  IDEM_OK. */
int provider_http_global_init(void);

/*
 * A client of the service at url ("http://host:port", no trailing
 * slash needed), each call bounded by timeout_ms (0: 10 s).
 */
int provider_http_open(const char *url, unsigned timeout_ms,
    struct provider_http **out);
void provider_http_close(struct provider_http *h);

/* POST /charges or /refunds (refund set); outcomes as provider.h's. */
int provider_http_call(struct provider_http *h, int refund, const char *key,
    int64_t amount, const char *currency, struct provider_charge *out);

/* GET /stats.  IDEM_OK, or IDEM_EIO when the service cannot be read. */
int provider_http_stats(struct provider_http *h, size_t *charges,
    size_t *declines, size_t *refunds);

/*
 * How a transfer that ended without an HTTP answer is read: sent is 1
 * when any byte of the request left us.  Nothing sent (refused,
 * unresolvable, a connect timeout) is PROVIDER_UNAVAILABLE; anything
 * after (a timeout, a dropped connection) is PROVIDER_TIMEOUT.
 */
enum provider_outcome provider_http_failed(int sent);

/*
 * Reads the service's answer to a charge (refund 0) or a refund: status
 * and len bytes of body.  Fills out and returns IDEM_OK; the mapping:
 *   201 {"status":"charged"|"refunded","id":...}  PROVIDER_CHARGED/REFUNDED
 *   402 {"status":"declined","id":...} (charges)  PROVIDER_DECLINED
 *   503, and 4xx other than 409 and 422           PROVIDER_UNAVAILABLE
 *   422                                           PROVIDER_KEY_REUSED
 *   409, other 5xx, other statuses, a 201 or 402
 *   whose body does not read as above             PROVIDER_TIMEOUT
 */
int provider_http_parse(long status, const char *body, size_t len,
    int refund, struct provider_charge *out);

/* Reads GET /stats's body.  IDEM_OK or IDEM_EINVAL. */
int provider_http_parse_stats(const char *body, size_t len, size_t *charges,
    size_t *declines, size_t *refunds);

#endif
