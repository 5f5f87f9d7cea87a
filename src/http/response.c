/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fault.h"
#include "idem.h"
#include "response.h"

/* Room for a number in decimal, sign included. */
#define RESP_NUM_MAX (BUF_DEC_MAX + 1)
/* Answers up to this size are put together on the stack. */
#define RESP_WRITE_STACK 4096

void
resp_init(struct response *r)
{
	memset(r, 0, sizeof(*r));
	r->status = 500;
	buf_init(&r->body);
}

/* 1 when a header's block was allocated, not taken from the room. */
static int
resp_allocated(const struct response *r, const char *block)
{
	return block < r->room || block >= r->room + sizeof(r->room);
}

/*
 * A header's name and value share one block: in the room (given back
 * all at once) or allocated, owned by name.
 */
static void
resp_free_headers(struct response *r)
{
	size_t i;

	for (i = 0; i < r->nheaders; i++)
		if (resp_allocated(r, r->headers[i].name))
			free(r->headers[i].name);
	r->nheaders = 0;
	r->used = 0;
}

void
resp_free(struct response *r)
{
	resp_free_headers(r);
	buf_free(&r->body);
}

void
resp_recycle(struct response *r)
{
	struct buf body;

	resp_free_headers(r);
	if (r->body.cap > RESP_KEEP)
		buf_free(&r->body);
	body = r->body;
	resp_init(r);
	r->body = body;
	buf_reset(&r->body);
}

void
resp_reset(struct response *r)
{
	resp_free_headers(r);
	buf_reset(&r->body);
	r->status = 500;
}

/* Sets name to the len bytes of value (not yet checked), copying both. */
static int
resp_header_set(struct response *r, const char *name, const char *value,
    size_t len)
{
	struct resp_header *h = NULL;
	size_t i, nlen, need;
	char *block;

	/* Header values never carry line breaks (RFC 9110 section 5.5). */
	if (memchr(value, '\r', len) != NULL || memchr(value, '\n', len) != NULL)
		return IDEM_EINVAL;
	for (i = 0; i < r->nheaders; i++)
		if (strcasecmp(r->headers[i].name, name) == 0)
			h = &r->headers[i];
	if (h == NULL && r->nheaders == RESP_MAX_HEADERS)
		return IDEM_ETOOBIG;
	/* A replaced header keeps the spelling of its name. */
	if (h != NULL)
		name = h->name;
	nlen = strlen(name);
	need = nlen + len + 2;
	/* A replaced header's room is not reused: replacing is rare. */
	if (need <= sizeof(r->room) - r->used) {
		block = r->room + r->used;
		r->used += need;
	} else if ((block = malloc(need)) == NULL)
		return IDEM_ENOMEM;
	memcpy(block, name, nlen + 1);
	memcpy(block + nlen + 1, value, len);
	block[nlen + 1 + len] = '\0';
	if (h != NULL) {
		if (resp_allocated(r, h->name))
			free(h->name);
	} else
		h = &r->headers[r->nheaders++];
	h->name = block;
	h->value = block + nlen + 1;
	return IDEM_OK;
}

/*
 * Nearly every header is a literal or one "%s": those are copied as they
 * are, and only other formats pay for vasprintf.
 */
int
resp_header(struct response *r, const char *name, const char *fmt, ...)
{
	const char *s;
	va_list ap;
	char *value;
	int n, rc;

	if (strchr(fmt, '%') == NULL)
		return resp_header_set(r, name, fmt, strlen(fmt));
	if (strcmp(fmt, "%s") == 0) {
		va_start(ap, fmt);
		s = va_arg(ap, const char *);
		va_end(ap);
		if (s != NULL)
			return resp_header_set(r, name, s, strlen(s));
	}
	va_start(ap, fmt);
	n = vasprintf(&value, fmt, ap);
	va_end(ap);
	if (n < 0)
		return IDEM_ENOMEM;
	rc = resp_header_set(r, name, value, (size_t)n);
	free(value);
	return rc;
}

const char *
resp_get_header(const struct response *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nheaders; i++)
		if (strcasecmp(r->headers[i].name, name) == 0)
			return r->headers[i].value;
	return NULL;
}

static const struct {
	int status;
	const char *reason;
} resp_reasons[] = {
	{ 200, "OK" },
	{ 201, "Created" },
	{ 204, "No Content" },
	{ 304, "Not Modified" },
	{ 400, "Bad Request" },
	{ 401, "Unauthorized" },
	{ 402, "Payment Required" },
	{ 403, "Forbidden" },
	{ 404, "Not Found" },
	{ 405, "Method Not Allowed" },
	{ 409, "Conflict" },
	{ 411, "Length Required" },
	{ 413, "Content Too Large" },
	{ 415, "Unsupported Media Type" },
	{ 422, "Unprocessable Content" },
	{ 429, "Too Many Requests" },
	{ 500, "Internal Server Error" },
	{ 502, "Bad Gateway" },
	{ 503, "Service Unavailable" },
	{ 504, "Gateway Timeout" },
};

const char *
resp_reason(int status)
{
	size_t i;

	for (i = 0; i < sizeof(resp_reasons) / sizeof(resp_reasons[0]); i++)
		if (resp_reasons[i].status == status)
			return resp_reasons[i].reason;
	return "Unknown";
}

/* Copies len bytes of s to p; returns the end.  The caller sized p. */
static char *
resp_put(char *p, const char *s, size_t len)
{
	memcpy(p, s, len);
	return p + len;
}

/*
 * The head and the body go out in one buffer (on the stack when they fit,
 * which they nearly always do), in two writes: up to half the body, then
 * the rest, so the fault point "mid_response" can cut the answer there.
 * Only the status and the length are numbers: no printf.
 */
int
resp_write(const struct response *r, resp_write_fn wr, void *ctx)
{
	char stackbuf[RESP_WRITE_STACK], *out = stackbuf, *p;
	const char *reason = resp_reason(r->status);
	size_t i, need, half, headlen, body;
	int rc = IDEM_ENOMEM, nobody;

	/* RFC 9110 sections 8.6 and 15.4.5: a 304 or 204 has no content. */
	nobody = r->status == 304 || r->status == 204;
	/* RFC 9110 section 9.3.2: HEAD gets GET's headers and no content. */
	body = r->head || nobody ? 0 : r->body.len;
	need = sizeof("Status:  \r\n") + RESP_NUM_MAX + strlen(reason) +
	    sizeof("Content-Length: \r\n\r\n") + RESP_NUM_MAX + body;
	for (i = 0; i < r->nheaders; i++)
		need += strlen(r->headers[i].name) + sizeof(": \r\n") +
		    strlen(r->headers[i].value);
	if (need > sizeof(stackbuf) && (out = malloc(need)) == NULL)
		return rc;
	/* RFC 3875 section 6.3.3: the Status header carries the status. */
	p = resp_put(out, "Status: ", 8);
	p += buf_fmt_int(p, r->status);
	*p++ = ' ';
	p = resp_put(p, reason, strlen(reason));
	p = resp_put(p, "\r\n", 2);
	for (i = 0; i < r->nheaders; i++) {
		p = resp_put(p, r->headers[i].name, strlen(r->headers[i].name));
		p = resp_put(p, ": ", 2);
		p = resp_put(p, r->headers[i].value,
		    strlen(r->headers[i].value));
		p = resp_put(p, "\r\n", 2);
	}
	if (!nobody) {
		p = resp_put(p, "Content-Length: ", 16);
		p += buf_fmt_int(p, (int64_t)r->body.len);
		p = resp_put(p, "\r\n", 2);
	}
	p = resp_put(p, "\r\n", 2);
	headlen = (size_t)(p - out);
	if (body > 0)
		memcpy(p, r->body.data, body);
	half = body / 2;
	rc = IDEM_EIO;
	if (wr(ctx, out, headlen + half) != 0)
		goto out;
	fault_point("mid_response");
	if (body > half && wr(ctx, out + headlen + half, body - half) != 0)
		goto out;
	rc = IDEM_OK;
out:
	if (out != stackbuf)
		free(out);
	return rc;
}
