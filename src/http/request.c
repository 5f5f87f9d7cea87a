#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "request.h"

static const char *const req_statusstr[REQ__MAX] = {
	[REQ_OK] = "request read",
	[REQ_TOO_LARGE] = "the request body is larger than this server accepts",
	[REQ_BAD_LENGTH] = "the Content-Length header is not a decimal number",
	[REQ_SHORT_BODY] = "the request body is shorter than its Content-Length",
	[REQ_BAD_METHOD] = "the request method is missing or malformed",
	[REQ_NOMEM] = "out of memory reading the request",
	[REQ_IO] = "the request body could not be read",
};

const char *
req_strstatus(enum req_status s)
{
	if ((unsigned)s >= REQ__MAX)
		return "unknown request status";
	return req_statusstr[s];
}

int
req_parse_length(const char *s, size_t *len)
{
	size_t v = 0;

	if (s == NULL || *s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		/*
		 * A well-formed length too large for size_t is still a length:
		 * it saturates, so the caller answers 413, not "not a number".
		 */
		if (v > (SIZE_MAX - 9) / 10)
			v = SIZE_MAX;
		else
			v = v * 10 + (size_t)(*s - '0');
	}
	*len = v;
	return 0;
}

int
req_is_json(const char *ct)
{
	size_t n;

	if (ct == NULL)
		return 0;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	n = strcspn(ct, "; \t");
	if (n == 16 && strncasecmp(ct, "application/json", 16) == 0)
		return 1;
	/* RFC 6839 section 3.1: the +json structured syntax suffix. */
	return n > 5 && strncasecmp(ct + n - 5, "+json", 5) == 0 &&
	    memchr(ct, '/', n) != NULL;
}

/* Duplicates s, or returns NULL; NULL in, NULL out. */
static char *
req_dup(const char *s)
{
	return s == NULL ? NULL : strdup(s);
}

static int
req_method_ok(const char *m)
{
	size_t n = 0;

	if (m == NULL || *m == '\0')
		return 0;
	/* RFC 9110 section 9.1: a method is a token; we allow upper case. */
	for (; *m != '\0'; m++, n++)
		if (!isupper((unsigned char)*m) || n >= 16)
			return 0;
	return 1;
}

static enum req_status
req_read_body(struct request *r, req_read_fn rd, void *rctx, size_t want)
{
	long got;

	if (buf_reserve(&r->body, want) != IDEM_OK)
		return REQ_NOMEM;
	while (r->body.len < want) {
		got = rd(rctx, r->body.data + r->body.len, want - r->body.len);
		if (got < 0)
			return REQ_IO;
		if (got == 0)
			return REQ_SHORT_BODY;
		r->body.len += (size_t)got;
	}
	r->body.data[r->body.len] = '\0';
	return REQ_OK;
}

static int
req_set_path(struct request *r, const char *script, const char *info,
    const char *mount)
{
	struct buf p = BUF_INIT;
	size_t mlen = mount == NULL ? 0 : strlen(mount);
	const char *s;

	if (buf_puts(&p, script == NULL ? "" : script) != IDEM_OK ||
	    buf_puts(&p, info == NULL ? "" : info) != IDEM_OK) {
		buf_free(&p);
		return -1;
	}
	s = p.data == NULL ? "" : p.data;
	if (mlen > 0 && strncmp(s, mount, mlen) == 0 &&
	    (s[mlen] == '/' || s[mlen] == '\0'))
		s += mlen;
	r->path = strdup(*s == '\0' ? "/" : s);
	buf_free(&p);
	return r->path == NULL ? -1 : 0;
}

enum req_status
req_read(struct request *r, req_param_fn param, void *pctx, req_read_fn rd,
    void *rctx, size_t limit, const char *mount)
{
	const char *v;
	size_t len = 0;

	memset(r, 0, sizeof(*r));
	buf_init(&r->body);
	v = param(pctx, "REQUEST_METHOD");
	if (!req_method_ok(v))
		return REQ_BAD_METHOD;
	r->method = req_dup(v);
	if (req_set_path(r, param(pctx, "SCRIPT_NAME"),
	    param(pctx, "PATH_INFO"), mount) != 0)
		return REQ_NOMEM;
	v = param(pctx, "QUERY_STRING");
	r->query = req_dup(v == NULL ? "" : v);
	r->content_type = req_dup(param(pctx, "CONTENT_TYPE"));
	v = param(pctx, "REMOTE_USER");
	r->remote_user = req_dup(v != NULL && *v != '\0' ? v : NULL);
	r->authorization = req_dup(param(pctx, "HTTP_AUTHORIZATION"));
	r->idempotency_key = req_dup(param(pctx, "HTTP_IDEMPOTENCY_KEY"));
	r->if_none_match = req_dup(param(pctx, "HTTP_IF_NONE_MATCH"));
	v = param(pctx, "REMOTE_ADDR");
	r->remote_addr = req_dup(v == NULL ? "-" : v);
	if (r->method == NULL || r->query == NULL || r->remote_addr == NULL)
		return REQ_NOMEM;

	/*
	 * RFC 3875 section 4.1.2: CONTENT_LENGTH is set only when there is a
	 * body, and is then 1*digit.  The body is bounded before a byte of it
	 * is read, so a large declared length costs nothing.
	 */
	v = param(pctx, "CONTENT_LENGTH");
	if (v != NULL && *v != '\0' && req_parse_length(v, &len) != 0)
		return REQ_BAD_LENGTH;
	if (len > limit)
		return REQ_TOO_LARGE;
	return req_read_body(r, rd, rctx, len);
}

void
req_free(struct request *r)
{
	free(r->method);
	free(r->path);
	free(r->query);
	free(r->content_type);
	free(r->remote_user);
	free(r->authorization);
	free(r->idempotency_key);
	free(r->if_none_match);
	free(r->remote_addr);
	buf_free(&r->body);
	memset(r, 0, sizeof(*r));
}
