/* SPDX-License-Identifier: MIT */
/*
 * response.h: a response built in memory and written in one go.
 *
 * Handlers fill a struct response; the server writes it only after the
 * handler returned, that is, after anything stored for it is durable.
 */
#ifndef HTTP_RESPONSE_H
#define HTTP_RESPONSE_H

#include <stddef.h>

#include "buf.h"

#define RESP_MAX_HEADERS 16
/* Bytes of header names and values kept in the response itself. */
#define RESP_HEADER_ROOM 1024

/*
 * name and value share one block: in the response's room when it fits,
 * else an allocation, which name owns.
 */
struct resp_header {
	char *name;
	char *value;
};

/* Not to be copied: the headers may point into room. */
struct response {
	int status;
	int head;   /* a HEAD request: headers only, the body is not sent */
	/*
	 * The id of the request being answered (its Request-Id), which a
	 * problem built into this response names as its instance (problem.h);
	 * NULL outside a request.  Borrowed: set and cleared by whoever
	 * answers the request (app_handle), kept by resp_reset.
	 */
	const char *instance;
	size_t nheaders;
	struct resp_header headers[RESP_MAX_HEADERS];
	struct buf body;
	size_t used;                    /* bytes of room taken */
	char room[RESP_HEADER_ROOM];
};

typedef int (*resp_write_fn)(void *ctx, const void *data, size_t len);

void resp_init(struct response *r);
void resp_free(struct response *r);
/* Body memory a recycled response keeps for the next one. */
#define RESP_KEEP 16384
/*
 * Makes r a new response (as resp_init) but keeps its body's memory, up
 * to RESP_KEEP bytes, for the next request on the same thread.
 */
void resp_recycle(struct response *r);
/* Forgets headers and body, keeps the memory of neither. */
void resp_reset(struct response *r);

/* Adds a header (copies); replaces one of the same name.  IDEM_OK or error. */
int resp_header(struct response *r, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The value of a header, or NULL. */
const char *resp_get_header(const struct response *r, const char *name);

/*
 * Writes the CGI response (RFC 3875 section 6): a Status header, the
 * headers, a blank line, the body.  The write stops after half of the
 * body when the fault point "mid_response" is armed.
 */
int resp_write(const struct response *r, resp_write_fn wr, void *ctx);

const char *resp_reason(int status);

#endif
