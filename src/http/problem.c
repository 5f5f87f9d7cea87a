/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idem.h"
#include "json.h"
#include "problem.h"

static const struct {
	const char *slug;
	int status;
	const char *title;
} problem_table[PROBLEM__MAX] = {
	[PROBLEM_MISSING_KEY] = { "missing-key", 400,
	    "Idempotency-Key header required" },
	[PROBLEM_INVALID_KEY] = { "invalid-key", 400,
	    "Idempotency-Key header is malformed" },
	[PROBLEM_UNAUTHORIZED] = { "unauthorized", 401,
	    "Authentication required" },
	[PROBLEM_FORBIDDEN] = { "forbidden", 403,
	    "Not allowed for this account" },
	[PROBLEM_NOT_FOUND] = { "not-found", 404, "Not found" },
	[PROBLEM_METHOD] = { "method-not-allowed", 405,
	    "Method not allowed" },
	[PROBLEM_IN_PROGRESS] = { "request-in-progress", 409,
	    "A request with this key is still in progress" },
	[PROBLEM_BODY_TOO_LARGE] = { "body-too-large", 413,
	    "Request body too large" },
	[PROBLEM_BAD_LENGTH] = { "bad-content-length", 400,
	    "Content-Length does not match the body" },
	[PROBLEM_MEDIA_TYPE] = { "unsupported-media-type", 415,
	    "Request body must be JSON" },
	[PROBLEM_MALFORMED_JSON] = { "malformed-json", 400,
	    "Request body is not valid JSON" },
	[PROBLEM_INVALID_PAYMENT] = { "invalid-payment", 400,
	    "Payment request is invalid" },
	[PROBLEM_KEY_REUSED] = { "key-reused", 422,
	    "Idempotency-Key reused with a different request" },
	[PROBLEM_DECLINED] = { "payment-declined", 402,
	    "Payment declined" },
	[PROBLEM_PROVIDER_FAILED] = { "provider-failed", 502,
	    "Payment provider unavailable" },
	[PROBLEM_PROVIDER_TIMEOUT] = { "provider-timeout", 504,
	    "Payment provider did not answer" },
	[PROBLEM_STORE_UNAVAILABLE] = { "store-unavailable", 503,
	    "Storage unavailable" },
	[PROBLEM_INTERNAL] = { "internal-error", 500,
	    "Internal server error" },
	[PROBLEM_BAD_REQUEST] = { "bad-request", 400, "Bad request" },
	[PROBLEM_TOO_MANY_KEYS] = { "too-many-keys", 429,
	    "Too many live Idempotency-Keys for this account" },
	[PROBLEM_INVALID_REFUND] = { "invalid-refund", 400,
	    "Refund request is invalid" },
	[PROBLEM_REFUND_EXCEEDS] = { "refund-exceeds-payment", 400,
	    "Refund exceeds what is left of the payment" },
};

static const char *problem_base = "/problems/";

void
problem_instance_of(const char *id, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p;

	for (p = (const unsigned char *)id; *p != '\0'; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' ||
		    *p == '_' || *p == '~') {
			*out++ = (char)*p;
			continue;
		}
		*out++ = '%';
		*out++ = hex[*p >> 4];
		*out++ = hex[*p & 0x0f];
	}
	*out = '\0';
}

void
problem_set_base(const char *base)
{
	problem_base = base;
}

const char *
problem_slug(enum problem p)
{
	return problem_table[p].slug;
}

int
problem_status(enum problem p)
{
	return problem_table[p].status;
}

/*
 * The length of the well-formed UTF-8 sequence at s (RFC 3629 section 4:
 * no overlong forms, no surrogates, nothing past U+10FFFF), or 0.
 */
static size_t
problem_utf8_len(const unsigned char *s)
{
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

/*
 * A copy of s (the caller frees it) in which every byte that does not
 * begin a well-formed UTF-8 sequence is U+FFFD: a detail may quote what
 * a client sent, and it is stored and replayed as JSON, which must be
 * UTF-8 (RFC 8259 section 8.1).
 */
static char *
problem_utf8_clean(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), n, o = 0;
	char *out;

	if (len > (SIZE_MAX - 1) / 3 || (out = malloc(3 * len + 1)) == NULL)
		return NULL;
	while (*p != '\0') {
		if ((n = problem_utf8_len(p)) == 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			p++;
			continue;
		}
		memcpy(out + o, p, n);
		o += n;
		p += n;
	}
	out[o] = '\0';
	return out;
}

int
problem_build(struct response *resp, enum problem p, const char *fmt, ...)
{
	struct json_writer w;
	char *raw = NULL, *detail = NULL, *type = NULL, *instance = NULL;
	va_list ap;
	int rc = IDEM_ENOMEM;

	resp_reset(resp);
	va_start(ap, fmt);
	if (vasprintf(&raw, fmt, ap) < 0)
		raw = NULL;
	va_end(ap);
	if (raw == NULL || (detail = problem_utf8_clean(raw)) == NULL)
		goto out;
	if (asprintf(&type, "%s%s.html", problem_base,
	    problem_table[p].slug) < 0) {
		type = NULL;
		goto out;
	}
	if (resp->instance != NULL) {
		if ((instance = malloc(3 * strlen(resp->instance) + 1)) ==
		    NULL)
			goto out;
		problem_instance_of(resp->instance, instance);
	}
	resp->status = problem_table[p].status;
	if ((rc = resp_header(resp, "Content-Type",
	    "application/problem+json")) != IDEM_OK)
		goto out;
	/* RFC 9457 section 3.1: type, title, status, detail, instance. */
	json_write_init(&w, &resp->body);
	json_write_open(&w, '{');
	json_write_name(&w, "type");
	json_write_str(&w, type);
	json_write_name(&w, "title");
	json_write_str(&w, problem_table[p].title);
	json_write_name(&w, "status");
	json_write_int(&w, problem_table[p].status);
	json_write_name(&w, "detail");
	json_write_str(&w, detail);
	if (instance != NULL) {
		json_write_name(&w, "instance");
		json_write_str(&w, instance);
	}
	json_write_close(&w, '}');
	rc = json_write_done(&w);
out:
	free(instance);
	free(type);
	free(detail);
	free(raw);
	return rc;
}
