/* SPDX-License-Identifier: MIT */
/*
 * service.h: the payment provider service's requests and answers,
 * without any FastCGI: main.c reads a request, psvc_handle decides its
 * answer, and main.c writes it (or, for the failure modes, holds it back
 * or drops the connection).
 *
 * The service is a keyed application of libidem like any other: each
 * POST /charges or POST /refunds runs under its Idempotency-Key (the key
 * idem derives, "charge:SCOPE:KEY:CREATED_MS") with idem_once, so the
 * same key answers the original charge or refund, the same key with
 * another body is 422, and two requests for one new key at once make one
 * charge that both answer.  The ledger rows (one per charge, decline and
 * refund, in tables of those names) commit with the key's claim and its
 * stored answer in one transaction: one durable commit per charge.
 */
#ifndef PROVIDER_SERVICE_H
#define PROVIDER_SERVICE_H

#include <stddef.h>

enum psvc_fail {
	PSVC_FAIL_NONE = 0,
	PSVC_FAIL_DECLINE,     /* new charges are declined (402, stored) */
	PSVC_FAIL_UNAVAILABLE, /* 503 before anything is read or written */
	PSVC_FAIL_TIMEOUT,     /* new work commits, its answer waits hold_ms */
	PSVC_FAIL_DROP,        /* new work commits, the connection is dropped */
	PSVC_FAIL__MAX
};

struct psvc_config {
	const char *dir;       /* the service's own store */
	size_t map_size;       /* 0: the library's default */
	enum psvc_fail fail;
	unsigned latency_ms;   /* every new charge or refund, and every 503 */
	unsigned hold_ms;      /* PSVC_FAIL_TIMEOUT: the answer's delay */
};

/* A request as read from the web server; strings NUL-terminated. */
struct psvc_request {
	const char *method;
	const char *path;
	const char *key;       /* the Idempotency-Key header, or NULL */
	const char *body;
	size_t bodylen;
};

#define PSVC_BODY_MAX 4096     /* the largest request body read */
#define PSVC_ANSWER_MAX 512

/* What to send back, and how. */
struct psvc_answer {
	int status;
	int replayed;          /* the answer is a stored one */
	unsigned retry_after;  /* seconds, for 409; 0: no header */
	unsigned delay_ms;     /* wait this long before answering */
	int drop;              /* close the connection without an answer */
	char body[PSVC_ANSWER_MAX];
	size_t bodylen;
};

struct psvc;

/* Opens the store in cfg->dir.  IDEM_OK or the library's error. */
int psvc_open(const struct psvc_config *cfg, struct psvc **out);
void psvc_close(struct psvc *s);

/* Answers one request; safe on many threads at once. */
void psvc_handle(struct psvc *s, const struct psvc_request *rq,
    struct psvc_answer *a);

/* "none", "decline", "unavailable", "timeout", "drop".  0 or -1. */
int psvc_fail_parse(const char *s, enum psvc_fail *fail);

#endif
