/* SPDX-License-Identifier: MIT */
/*
 * problem.h: errors as RFC 9457 application/problem+json.
 *
 * Each problem type has a page under www/problems/ explaining it; the
 * type URI is the base URI (IDEM_PROBLEM_BASE, default "/problems/")
 * followed by the slug.  The instance (RFC 9457 section 3.1.5) is the
 * id of the request being answered, its Request-Id, which the response
 * carries (struct response's instance): a problem a handler stores with
 * a key's answer keeps the id of the request that made it, the
 * occurrence it describes, when it is replayed (doc/DESIGN.md, "Problem
 * details").
 */
#ifndef HTTP_PROBLEM_H
#define HTTP_PROBLEM_H

#include "response.h"

enum problem {
	PROBLEM_MISSING_KEY = 0,   /* 400 */
	PROBLEM_INVALID_KEY,       /* 400 */
	PROBLEM_UNAUTHORIZED,      /* 401 */
	PROBLEM_FORBIDDEN,         /* 403 */
	PROBLEM_NOT_FOUND,         /* 404 */
	PROBLEM_METHOD,            /* 405 */
	PROBLEM_IN_PROGRESS,       /* 409 */
	PROBLEM_BODY_TOO_LARGE,    /* 413 */
	PROBLEM_BAD_LENGTH,        /* 400 */
	PROBLEM_MEDIA_TYPE,        /* 415 */
	PROBLEM_MALFORMED_JSON,    /* 400 */
	PROBLEM_INVALID_PAYMENT,   /* 400 */
	PROBLEM_KEY_REUSED,        /* 422 */
	PROBLEM_DECLINED,          /* 402 */
	PROBLEM_PROVIDER_FAILED,   /* 502 */
	PROBLEM_PROVIDER_TIMEOUT,  /* 504 */
	PROBLEM_STORE_UNAVAILABLE, /* 503 */
	PROBLEM_INTERNAL,          /* 500 */
	PROBLEM_BAD_REQUEST,       /* 400 */
	PROBLEM_TOO_MANY_KEYS,     /* 429 */
	PROBLEM_INVALID_REFUND,    /* 400 */
	PROBLEM_REFUND_EXCEEDS,    /* 400 */
	PROBLEM__MAX
};

/* Sets the base of type URIs; the string must outlive every problem. */
void problem_set_base(const char *base);

/*
 * The instance URI reference of a request id: every byte but RFC 3986's
 * unreserved characters (letters, digits, "-", ".", "_", "~")
 * percent-encoded, so that any id is a relative reference of one path
 * segment (a ":" could otherwise read as a scheme).  out holds at least
 * 3 * strlen(id) + 1 bytes.
 */
void problem_instance_of(const char *id, char *out);

const char *problem_slug(enum problem p);
int problem_status(enum problem p);

/*
 * Resets resp to the problem p with a detail sentence, and resp->instance
 * as its instance when it is set.  Returns IDEM_OK or IDEM_ENOMEM.
 */
int problem_build(struct response *resp, enum problem p, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
