/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "crypto.h"
#include "idem.h"
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

/* The meta-variables a request is read from (RFC 3875 section 4.1). */
#define REQ_VARS(X)                                 \
	X(REQ_VAR_METHOD, "REQUEST_METHOD")         \
	X(REQ_VAR_SCRIPT, "SCRIPT_NAME")            \
	X(REQ_VAR_INFO, "PATH_INFO")                \
	X(REQ_VAR_QUERY, "QUERY_STRING")            \
	X(REQ_VAR_TYPE, "CONTENT_TYPE")             \
	X(REQ_VAR_USER, "REMOTE_USER")              \
	X(REQ_VAR_AUTH, "HTTP_AUTHORIZATION")       \
	X(REQ_VAR_KEY, "HTTP_IDEMPOTENCY_KEY")      \
	X(REQ_VAR_INM, "HTTP_IF_NONE_MATCH")        \
	X(REQ_VAR_ADDR, "REMOTE_ADDR")              \
	X(REQ_VAR_RID, "REQUEST_ID")                \
	X(REQ_VAR_UID, "UNIQUE_ID")                 \
	X(REQ_VAR_CRID, "HTTP_X_REQUEST_ID")        \
	X(REQ_VAR_LENGTH, "CONTENT_LENGTH")

enum req_var {
#define REQ_VAR_ENUM(v, s) v,
	REQ_VARS(REQ_VAR_ENUM)
#undef REQ_VAR_ENUM
	REQ_VAR__MAX
};

static const struct {
	const char *name;
	size_t len;
} req_vars[REQ_VAR__MAX] = {
#define REQ_VAR_ENTRY(v, s) [v] = { s, sizeof(s) - 1 },
	REQ_VARS(REQ_VAR_ENTRY)
#undef REQ_VAR_ENTRY
};

/*
 * Longer than every name above; names are matched on their length, then
 * on their first 8 bytes as one word, then whole.
 */
#define REQ_NAME_LIMIT 32
#define REQ_NAME_HEAD 8
#define REQ_VAR_SHORT(v, s) \
	_Static_assert(sizeof(s) - 1 < REQ_NAME_LIMIT && \
	    sizeof(s) - 1 >= REQ_NAME_HEAD, s " is too long or too short");
REQ_VARS(REQ_VAR_SHORT)
#undef REQ_VAR_SHORT
_Static_assert(REQ_VAR__MAX <= 32, "one bit per name in an unsigned");

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

/*
 * The path is SCRIPT_NAME + PATH_INFO less the mount, when the mount is a
 * whole leading segment of it.  Returns the path's length and sets *skip
 * to the bytes of script + info before it; the two parts are joined only
 * when copied.
 */
static size_t
req_path_len(const char *script, const char *info, const char *mount,
    size_t *skip)
{
	size_t slen = strlen(script), ilen = strlen(info);
	size_t mlen = mount == NULL ? 0 : strlen(mount), at;
	char c;

	*skip = 0;
	if (mlen == 0 || mlen > slen + ilen)
		return slen + ilen;
	for (at = 0; at < mlen; at++) {
		c = at < slen ? script[at] : info[at - slen];
		if (c != mount[at])
			return slen + ilen;
	}
	c = mlen < slen ? script[mlen] : info[mlen - slen];
	if (c == '/' || c == '\0')
		*skip = mlen;
	return slen + ilen - *skip;
}

/* Copies s (not NULL) to *p and advances it; returns the copy. */
static char *
req_put(char **p, const char *s, size_t len)
{
	char *out = *p;

	memcpy(out, s, len);
	out[len] = '\0';
	*p += len + 1;
	return out;
}

/* The same, for a meta-variable that may be unset. */
static char *
req_put_opt(char **p, const char *s)
{
	return s == NULL ? NULL : req_put(p, s, strlen(s));
}

/*
 * A request id is sent back (Request-Id) and logged: one that could not be
 * quoted as it is (too long, or holding a byte outside printable ASCII, a
 * space, a quote or a backslash) is dropped, and req_id makes one up.  A
 * client's X-Request-Id is held to the same rule, though it is only
 * logged.
 */
static int
req_id_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	for (n = 0; p[n] != '\0'; n++)
		if (n >= REQ_ID_MAX || p[n] <= 0x20 || p[n] >= 0x7f ||
		    p[n] == '"' || p[n] == '\\')
			return 0;
	return n > 0;
}

/*
 * Copies the meta-variables the request keeps into one allocation,
 * r->strings, which req_free releases.
 */
static int
req_copy(struct request *r, const char *v[REQ_VAR__MAX], const char *mount)
{
	const char *script = v[REQ_VAR_SCRIPT] ? v[REQ_VAR_SCRIPT] : "";
	const char *info = v[REQ_VAR_INFO] ? v[REQ_VAR_INFO] : "";
	size_t plen, skip, slen, n, need = 0;
	enum req_var i;
	char *p;

	if (v[REQ_VAR_QUERY] == NULL)
		v[REQ_VAR_QUERY] = "";
	if (v[REQ_VAR_USER] != NULL && *v[REQ_VAR_USER] == '\0')
		v[REQ_VAR_USER] = NULL;
	if (v[REQ_VAR_ADDR] == NULL)
		v[REQ_VAR_ADDR] = "-";
	/*
	 * The web server's own id comes in a meta-variable no request header
	 * becomes (those are HTTP_*): REQUEST_ID, which the nginx sites set
	 * to $request_id, else UNIQUE_ID, which mod_unique_id puts in every
	 * request's environment under Apache.  X-Request-Id is the client's
	 * to choose, so it names nothing but itself.
	 */
	if (v[REQ_VAR_RID] == NULL || !req_id_ok(v[REQ_VAR_RID]))
		v[REQ_VAR_RID] = v[REQ_VAR_UID];
	if (v[REQ_VAR_RID] != NULL && !req_id_ok(v[REQ_VAR_RID]))
		v[REQ_VAR_RID] = NULL;
	v[REQ_VAR_UID] = NULL;
	if (v[REQ_VAR_CRID] != NULL && !req_id_ok(v[REQ_VAR_CRID]))
		v[REQ_VAR_CRID] = NULL;
	for (i = 0; i < REQ_VAR__MAX; i++)
		if (v[i] != NULL && i != REQ_VAR_SCRIPT && i != REQ_VAR_INFO &&
		    i != REQ_VAR_LENGTH)
			need += strlen(v[i]) + 1;
	plen = req_path_len(script, info, mount, &skip);
	need += plen + 2;
	if (need > r->strings_cap) {
		free(r->strings);
		r->strings_cap = 0;
		if ((r->strings = malloc(need)) == NULL)
			return -1;
		r->strings_cap = need;
	}
	p = r->strings;
	r->method = req_put(&p, v[REQ_VAR_METHOD], strlen(v[REQ_VAR_METHOD]));
	/* The path, joined from its two parts past the mount, or "/". */
	r->path = p;
	if (plen == 0)
		*p++ = '/';
	else {
		slen = strlen(script);
		n = skip < slen ? slen - skip : 0;
		memcpy(p, script + slen - n, n);
		memcpy(p + n, info + (skip > slen ? skip - slen : 0), plen - n);
		p += plen;
	}
	*p++ = '\0';
	r->query = req_put_opt(&p, v[REQ_VAR_QUERY]);
	r->content_type = req_put_opt(&p, v[REQ_VAR_TYPE]);
	r->remote_user = req_put_opt(&p, v[REQ_VAR_USER]);
	r->authorization = req_put_opt(&p, v[REQ_VAR_AUTH]);
	r->idempotency_key = req_put_opt(&p, v[REQ_VAR_KEY]);
	r->if_none_match = req_put_opt(&p, v[REQ_VAR_INM]);
	r->remote_addr = req_put_opt(&p, v[REQ_VAR_ADDR]);
	r->request_id = req_put_opt(&p, v[REQ_VAR_RID]);
	r->client_request_id = req_put_opt(&p, v[REQ_VAR_CRID]);
	return 0;
}

/* Validates and copies the meta-variables in v, then reads the body. */
static enum req_status
req_fill(struct request *r, const char *v[REQ_VAR__MAX], req_read_fn rd,
    void *rctx, size_t limit, const char *mount)
{
	const char *cl = v[REQ_VAR_LENGTH];
	char *strings = r->strings;
	size_t len = 0, cap = r->strings_cap;
	struct buf body = r->body;

	/* What req_recycle kept is used again; everything else starts anew. */
	memset(r, 0, sizeof(*r));
	r->strings = strings;
	r->strings_cap = cap;
	r->body = body;
	if (!req_method_ok(v[REQ_VAR_METHOD]))
		return REQ_BAD_METHOD;
	if (req_copy(r, v, mount) != 0)
		return REQ_NOMEM;

	/*
	 * RFC 3875 section 4.1.2: CONTENT_LENGTH is set only when there is a
	 * body, and is then 1*digit.  The body is bounded before a byte of it
	 * is read, so a large declared length costs nothing.
	 */
	if (cl != NULL && *cl != '\0' && req_parse_length(cl, &len) != 0)
		return REQ_BAD_LENGTH;
	if (len > limit)
		return REQ_TOO_LARGE;
	return req_read_body(r, rd, rctx, len);
}

enum req_status
req_read(struct request *r, req_param_fn param, void *pctx, req_read_fn rd,
    void *rctx, size_t limit, const char *mount)
{
	const char *v[REQ_VAR__MAX];
	enum req_var i;

	for (i = 0; i < REQ_VAR__MAX; i++)
		v[i] = param(pctx, req_vars[i].name);
	req_init(r);
	return req_fill(r, v, rd, rctx, limit, mount);
}

/*
 * One pass over the environment instead of a search of it per variable;
 * the first entry of a name counts, as with getenv and FCGX_GetParam.
 * An entry is matched on its name's length first: only the names of that
 * length (a few, from byname) are compared.
 */
/* The environment's meta-variables into v, in one pass. */
static void
req_scan_env(char *const *envp, const char *v[REQ_VAR__MAX])
{
	const char *eq;
	unsigned byname[REQ_NAME_LIMIT] = { 0 }, m;
	uint64_t head[REQ_VAR__MAX], h;
	enum req_var i;
	size_t len;

	for (i = 0; i < REQ_VAR__MAX; i++) {
		byname[req_vars[i].len] |= 1U << i;
		memcpy(&head[i], req_vars[i].name, sizeof(head[i]));
	}
	for (; envp != NULL && *envp != NULL; envp++) {
		if ((eq = strchr(*envp, '=')) == NULL ||
		    (len = (size_t)(eq - *envp)) >= REQ_NAME_LIMIT ||
		    byname[len] == 0)
			continue;
		/* len is at least REQ_NAME_HEAD: the head is all name. */
		memcpy(&h, *envp, sizeof(h));
		for (m = byname[len]; m != 0; m &= m - 1) {
			i = (enum req_var)__builtin_ctz(m);
			if (h == head[i] && memcmp(*envp + REQ_NAME_HEAD,
			    req_vars[i].name + REQ_NAME_HEAD,
			    len - REQ_NAME_HEAD) == 0) {
				if (v[i] == NULL)
					v[i] = eq + 1;
				break;
			}
		}
	}
}

enum req_status
req_read_env(struct request *r, char *const *envp, req_read_fn rd,
    void *rctx, size_t limit, const char *mount)
{
	const char *v[REQ_VAR__MAX] = { NULL };

	req_scan_env(envp, v);
	req_init(r);
	return req_fill(r, v, rd, rctx, limit, mount);
}

enum req_status
req_reread_env(struct request *r, char *const *envp, req_read_fn rd,
    void *rctx, size_t limit, const char *mount)
{
	const char *v[REQ_VAR__MAX] = { NULL };

	req_scan_env(envp, v);
	return req_fill(r, v, rd, rctx, limit, mount);
}

void
req_init(struct request *r)
{
	memset(r, 0, sizeof(*r));
	buf_init(&r->body);
}

/* The credentials the request carried are not left in memory. */
static void
req_wipe_credentials(struct request *r)
{
	if (r->authorization != NULL)
		explicit_bzero(r->authorization, strlen(r->authorization));
	r->authorization = NULL;
}

void
req_recycle(struct request *r)
{
	req_wipe_credentials(r);
	if (r->strings_cap > REQ_KEEP) {
		free(r->strings);
		r->strings = NULL;
		r->strings_cap = 0;
	}
	if (r->body.cap > REQ_KEEP)
		buf_free(&r->body);
	buf_reset(&r->body);
}

void
req_free(struct request *r)
{
	req_wipe_credentials(r);
	free(r->strings);
	buf_free(&r->body);
	memset(r, 0, sizeof(*r));
}

const char *
req_id(const char *given, char made[REQ_ID_MADE + 1])
{
	uint8_t rnd[(REQ_ID_MADE - 4) / 2];

	if (given != NULL && req_id_ok(given))
		return given;
	crypto_random(rnd, sizeof(rnd));
	memcpy(made, "req_", 4);
	crypto_hex(rnd, sizeof(rnd), made + 4);
	return made;
}
