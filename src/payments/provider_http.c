/* SPDX-License-Identifier: MIT */
/*
 * provider_http.c: the provider over HTTP, with libcurl (provider_http.h).
 *
 * The outcome of a call decides whether idem may forget it: only a
 * request that never left us (connection refused, no such host) or that
 * the service refused before doing anything (503) is "unavailable", and
 * releases the client's key.  Everything that may have reached the
 * service without a readable final answer is "unknown" (504): the claim
 * is kept, and the retry asks again under the same derived key, which
 * the service answers with the original charge.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "idem.h"
#include "json.h"
#include "provider_http.h"

#define PROVIDER_HTTP_TIMEOUT_MS 10000
#define PROVIDER_HTTP_ID_HEX 24
/*
 * Transfer handles kept between calls, each with the connection its last
 * call left open: about as many as calls run at once, so the service
 * sees that many connections, not one per thread that ever called.
 */
#define PROVIDER_HTTP_IDLE_MAX 64

struct provider_http {
	char base[PROVIDER_HTTP_URL_MAX];
	unsigned timeout_ms;
	pthread_mutex_t mu;		/* guards idle and nidle */
	CURL *idle[PROVIDER_HTTP_IDLE_MAX];
	size_t nidle;
};

/* The answer's body, bounded: a longer one fails the transfer. */
struct http_body {
	char data[PROVIDER_HTTP_BODY_MAX];
	size_t len;
};

int
provider_http_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? IDEM_OK :
	    IDEM_ENOMEM;
}

int
provider_http_open(const char *url, unsigned timeout_ms,
    struct provider_http **out)
{
	struct provider_http *h;
	size_t len;

	if (url == NULL || (strncmp(url, "http://", 7) != 0 &&
	    strncmp(url, "https://", 8) != 0) ||
	    (len = strlen(url)) >= sizeof(h->base))
		return IDEM_EINVAL;
	if ((h = calloc(1, sizeof(*h))) == NULL)
		return IDEM_ENOMEM;
	while (len > 0 && url[len - 1] == '/')
		len--;
	memcpy(h->base, url, len);
	h->base[len] = '\0';
	h->timeout_ms = timeout_ms > 0 ? timeout_ms : PROVIDER_HTTP_TIMEOUT_MS;
	if (pthread_mutex_init(&h->mu, NULL) != 0) {
		free(h);
		return IDEM_ENOMEM;
	}
	*out = h;
	return IDEM_OK;
}

void
provider_http_close(struct provider_http *h)
{
	if (h == NULL)
		return;
	while (h->nidle > 0)
		curl_easy_cleanup(h->idle[--h->nidle]);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

/*
 * A transfer handle for one call: the one put back last, whose connection
 * is the likeliest still open, or a new one.
 */
static CURL *
http_take(struct provider_http *h)
{
	CURL *c = NULL;

	pthread_mutex_lock(&h->mu);
	if (h->nidle > 0)
		c = h->idle[--h->nidle];
	pthread_mutex_unlock(&h->mu);
	return c != NULL ? c : curl_easy_init();
}

/*
 * Puts c back after a call that ended with cc, its options dropped
 * (curl_easy_reset: it keeps no pointer into the call's memory, and
 * keeps its connection).  After a failed transfer (a timeout, a dropped
 * connection) the handle goes, and its connection with it: the next call
 * starts on a connection of its own.
 */
static void
http_give(struct provider_http *h, CURL *c, CURLcode cc)
{
	if (cc == CURLE_OK) {
		curl_easy_reset(c);
		pthread_mutex_lock(&h->mu);
		if (h->nidle < PROVIDER_HTTP_IDLE_MAX) {
			h->idle[h->nidle++] = c;
			c = NULL;
		}
		pthread_mutex_unlock(&h->mu);
	}
	if (c != NULL)
		curl_easy_cleanup(c);
}

enum provider_outcome
provider_http_failed(int sent)
{
	return sent ? PROVIDER_TIMEOUT : PROVIDER_UNAVAILABLE;
}

/* An id the service gives: prefix and 24 lowercase hex digits. */
static int
http_id_valid(const char *id, size_t len, const char *prefix)
{
	size_t i;

	if (len != 3 + PROVIDER_HTTP_ID_HEX || len >= PROVIDER_ID_SIZE ||
	    memcmp(id, prefix, 3) != 0)
		return 0;
	for (i = 3; i < len; i++)
		if (!((id[i] >= '0' && id[i] <= '9') ||
		    (id[i] >= 'a' && id[i] <= 'f')))
			return 0;
	return 1;
}

/*
 * Reads {"status": want, "id": prefix...} into out->id; 0, or -1 when
 * the body is not that.
 */
static int
http_read_final(const char *body, size_t len, const char *want,
    const char *prefix, struct provider_charge *out)
{
	struct json_value *root = NULL;
	const struct json_value *st, *id;
	const char *s;
	size_t n;
	int rc = -1;

	if (json_parse(body, len, &root, NULL, 0) != JSON_OK ||
	    json_type(root) != JSON_OBJECT ||
	    (st = json_get(root, "status")) == NULL ||
	    (id = json_get(root, "id")) == NULL ||
	    (s = json_text(st, NULL)) == NULL || json_type(st) != JSON_STRING ||
	    strcmp(s, want) != 0 || json_type(id) != JSON_STRING ||
	    (s = json_text(id, &n)) == NULL || !http_id_valid(s, n, prefix))
		goto out;
	memcpy(out->id, s, n + 1);
	rc = 0;
out:
	json_free(root);
	return rc;
}

int
provider_http_parse(long status, const char *body, size_t len, int refund,
    struct provider_charge *out)
{
	memset(out, 0, sizeof(*out));
	out->outcome = PROVIDER_TIMEOUT;
	if (body == NULL)
		len = 0, body = "";
	if (status == 201 && http_read_final(body, len, refund ? "refunded" :
	    "charged", refund ? "rf_" : "ch_", out) == 0)
		out->outcome = refund ? PROVIDER_REFUNDED : PROVIDER_CHARGED;
	else if (status == 402 && !refund &&
	    http_read_final(body, len, "declined", "dc_", out) == 0)
		out->outcome = PROVIDER_DECLINED;
	else if (status == 422)
		out->outcome = PROVIDER_KEY_REUSED;
	else if (status == 503 ||
	    (status >= 400 && status < 500 && status != 409 && status != 402))
		out->outcome = PROVIDER_UNAVAILABLE;
	if (out->outcome == PROVIDER_TIMEOUT || out->outcome ==
	    PROVIDER_UNAVAILABLE || out->outcome == PROVIDER_KEY_REUSED)
		out->id[0] = '\0';
	return IDEM_OK;
}

/* Reads a count: a non-negative integer of at most 18 digits. */
static int
http_count(const struct json_value *root, const char *name, size_t *out)
{
	const struct json_value *v = json_get(root, name);
	const char *t;
	size_t len, i;
	uint64_t n = 0;

	if (v == NULL || json_type(v) != JSON_NUMBER ||
	    (t = json_text(v, &len)) == NULL || len == 0 || len > 18 ||
	    (len > 1 && t[0] == '0'))
		return -1;
	for (i = 0; i < len; i++) {
		if (t[i] < '0' || t[i] > '9')
			return -1;
		n = n * 10 + (uint64_t)(t[i] - '0');
	}
	if (n > SIZE_MAX)
		return -1;
	*out = (size_t)n;
	return 0;
}

int
provider_http_parse_stats(const char *body, size_t len, size_t *charges,
    size_t *declines, size_t *refunds)
{
	struct json_value *root = NULL;
	int rc = IDEM_EINVAL;

	if (body != NULL && json_parse(body, len, &root, NULL, 0) == JSON_OK &&
	    json_type(root) == JSON_OBJECT &&
	    http_count(root, "charges", charges) == 0 &&
	    http_count(root, "declines", declines) == 0 &&
	    http_count(root, "refunds", refunds) == 0)
		rc = IDEM_OK;
	json_free(root);
	return rc;
}

/* A key the service takes (idem-provider(8)), safe in a header. */
static int
http_key_valid(const char *key)
{
	size_t i, len;

	if (key == NULL || (len = strlen(key)) == 0 ||
	    len > PROVIDER_HTTP_KEY_MAX || key[0] == ' ' || key[len - 1] == ' ')
		return 0;
	for (i = 0; i < len; i++)
		if (key[i] < 0x20 || key[i] > 0x7e)
			return 0;
	return 1;
}

static size_t
http_write(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct http_body *b = ctx;
	size_t n = size * nmemb;

	if (n > sizeof(b->data) - b->len)
		return 0;	/* too long: the transfer fails */
	memcpy(b->data + b->len, data, n);
	b->len += n;
	return n;
}

/*
 * One request: path on the service, with body (NULL: a GET) and key.
 * Returns the curl result; *status and *sent (whether any byte of the
 * request went out) are set either way.
 */
static CURLcode
http_request(struct provider_http *h, const char *path, const char *key,
    const char *body, struct http_body *resp, long *status, int *sent)
{
	char url[PROVIDER_HTTP_URL_MAX + 16];
	char hkey[sizeof("Idempotency-Key: ") + PROVIDER_HTTP_KEY_MAX];
	struct curl_slist *hdrs = NULL, *tmp;
	long reqsize = 0;
	CURLcode cc = CURLE_OUT_OF_MEMORY;
	CURL *c;

	*status = 0;
	*sent = 0;
	resp->len = 0;
	snprintf(url, sizeof(url), "%s%s", h->base, path);
	if ((c = http_take(h)) == NULL)
		return cc;
	if (body != NULL) {
		if ((tmp = curl_slist_append(hdrs,
		    "Content-Type: application/json")) == NULL)
			goto out;
		hdrs = tmp;
		snprintf(hkey, sizeof(hkey), "Idempotency-Key: %s", key);
		if ((tmp = curl_slist_append(hdrs, hkey)) == NULL)
			goto out;
		hdrs = tmp;
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	}
	/* No "Expect: 100-continue" round trip for a small body. */
	if ((tmp = curl_slist_append(hdrs, "Expect:")) == NULL)
		goto out;
	hdrs = tmp;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)h->timeout_ms);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, http_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	if (curl_easy_getinfo(c, CURLINFO_REQUEST_SIZE, &reqsize) !=
	    CURLE_OK)
		reqsize = 1;	/* unknown: assume it went out */
	*sent = reqsize > 0 || *status != 0;
out:
	http_give(h, c, cc);
	curl_slist_free_all(hdrs);
	return cc;
}

int
provider_http_call(struct provider_http *h, int refund, const char *key,
    int64_t amount, const char *currency, struct provider_charge *out)
{
	struct http_body *resp;
	char body[128];
	long status;
	int sent, n;
	CURLcode cc;

	memset(out, 0, sizeof(*out));
	if (!http_key_valid(key) || currency == NULL ||
	    strlen(currency) > 15 || amount <= 0)
		return IDEM_EINVAL;
	n = snprintf(body, sizeof(body), "{\"amount\":%" PRId64 ",\"currency\":"
	    "\"%s\"}", amount, currency);
	if (n < 0 || (size_t)n >= sizeof(body))
		return IDEM_EINVAL;
	if ((resp = malloc(sizeof(*resp))) == NULL)
		return IDEM_ENOMEM;
	cc = http_request(h, refund ? "/refunds" : "/charges", key, body, resp,
	    &status, &sent);
	if (cc == CURLE_OUT_OF_MEMORY && !sent) {
		free(resp);
		return IDEM_ENOMEM;
	}
	if (cc != CURLE_OK)
		out->outcome = provider_http_failed(sent);
	else
		provider_http_parse(status, resp->data, resp->len, refund, out);
	free(resp);
	return IDEM_OK;
}

int
provider_http_stats(struct provider_http *h, size_t *charges,
    size_t *declines, size_t *refunds)
{
	struct http_body *resp;
	long status;
	int sent, rc = IDEM_EIO;

	if ((resp = malloc(sizeof(*resp))) == NULL)
		return IDEM_ENOMEM;
	if (http_request(h, "/stats", NULL, NULL, resp, &status, &sent) ==
	    CURLE_OK && status == 200)
		rc = provider_http_parse_stats(resp->data, resp->len, charges,
		    declines, refunds) == IDEM_OK ? IDEM_OK : IDEM_EIO;
	free(resp);
	return rc;
}
