#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "fault.h"
#include "response.h"

void
resp_init(struct response *r)
{
	memset(r, 0, sizeof(*r));
	r->status = 500;
	buf_init(&r->body);
}

static void
resp_free_headers(struct response *r)
{
	size_t i;

	for (i = 0; i < r->nheaders; i++) {
		free(r->headers[i].name);
		free(r->headers[i].value);
	}
	r->nheaders = 0;
}

void
resp_free(struct response *r)
{
	resp_free_headers(r);
	buf_free(&r->body);
}

void
resp_reset(struct response *r)
{
	resp_free_headers(r);
	buf_reset(&r->body);
	r->status = 500;
}

int
resp_header(struct response *r, const char *name, const char *fmt, ...)
{
	struct resp_header *h = NULL;
	va_list ap;
	char *value;
	size_t i;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&value, fmt, ap);
	va_end(ap);
	if (n < 0)
		return IDEM_ENOMEM;
	/* Header values never carry line breaks (RFC 9110 section 5.5). */
	if (strpbrk(value, "\r\n") != NULL) {
		free(value);
		return IDEM_EINVAL;
	}
	for (i = 0; i < r->nheaders; i++)
		if (strcasecmp(r->headers[i].name, name) == 0)
			h = &r->headers[i];
	if (h != NULL) {
		free(h->value);
		h->value = value;
		return IDEM_OK;
	}
	if (r->nheaders == RESP_MAX_HEADERS) {
		free(value);
		return IDEM_ETOOBIG;
	}
	h = &r->headers[r->nheaders];
	if ((h->name = strdup(name)) == NULL) {
		free(value);
		return IDEM_ENOMEM;
	}
	h->value = value;
	r->nheaders++;
	return IDEM_OK;
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

int
resp_write(const struct response *r, resp_write_fn wr, void *ctx)
{
	struct buf head = BUF_INIT;
	size_t i, half;
	int rc = IDEM_ENOMEM, nobody;

	/* RFC 3875 section 6.3.3: the Status header carries the status. */
	if (buf_printf(&head, "Status: %d %s\r\n", r->status,
	    resp_reason(r->status)) != IDEM_OK)
		goto out;
	for (i = 0; i < r->nheaders; i++)
		if (buf_printf(&head, "%s: %s\r\n", r->headers[i].name,
		    r->headers[i].value) != IDEM_OK)
			goto out;
	/* RFC 9110 sections 8.6 and 15.4.5: a 304 or 204 has no content. */
	nobody = r->status == 304 || r->status == 204;
	if ((nobody ? buf_puts(&head, "\r\n") : buf_printf(&head,
	    "Content-Length: %zu\r\n\r\n", r->body.len)) != IDEM_OK)
		goto out;
	rc = IDEM_EIO;
	if (wr(ctx, head.data, head.len) != 0)
		goto out;
	/* RFC 9110 section 9.3.2: HEAD gets GET's headers and no content. */
	if (r->head || nobody) {
		rc = IDEM_OK;
		goto out;
	}
	half = r->body.len / 2;
	if (half > 0 && wr(ctx, r->body.data, half) != 0)
		goto out;
	fault_point("mid_response");
	if (r->body.len > half &&
	    wr(ctx, r->body.data + half, r->body.len - half) != 0)
		goto out;
	rc = IDEM_OK;
out:
	buf_free(&head);
	return rc;
}
