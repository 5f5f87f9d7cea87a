/* SPDX-License-Identifier: MIT */
/*
 * request.h: an HTTP request as a CGI or FastCGI responder receives it.
 *
 * The request is read once, at the edge, from the CGI meta-variables (RFC
 * 3875 section 4.1) and the body on standard input.  Everything is copied:
 * the request outlives the FastCGI parameters it came from.
 */
#ifndef HTTP_REQUEST_H
#define HTTP_REQUEST_H

#include <stddef.h>

#include "buf.h"

/* Returns a meta-variable's value, or NULL when it is not set. */
typedef const char *(*req_param_fn)(void *ctx, const char *name);
/* Reads up to len body bytes; returns the count, 0 at end, -1 on error. */
typedef long (*req_read_fn)(void *ctx, void *buf, size_t len);

/* The longest request id kept; a longer one is ignored. */
#define REQ_ID_MAX 128
/* Characters of a request id made up here: "req_" and 24 hex digits. */
#define REQ_ID_MADE 28

struct request {
	char *method;          /* REQUEST_METHOD */
	char *path;            /* SCRIPT_NAME + PATH_INFO, less the mount */
	char *query;           /* QUERY_STRING, "" when unset */
	char *content_type;    /* CONTENT_TYPE, NULL when unset */
	char *remote_user;     /* REMOTE_USER, NULL when unset or empty */
	char *authorization;   /* HTTP_AUTHORIZATION, NULL when unset */
	char *idempotency_key; /* HTTP_IDEMPOTENCY_KEY, NULL when unset */
	char *if_none_match;   /* HTTP_IF_NONE_MATCH, NULL when unset */
	char *remote_addr;     /* REMOTE_ADDR, "-" when unset */
	/*
	 * The web server's own id for the request: REQUEST_ID (the nginx
	 * sites pass $request_id), else UNIQUE_ID (Apache's mod_unique_id);
	 * NULL when neither is set as 1 to REQ_ID_MAX printable ASCII
	 * characters other than space, '"' and '\\'.  No request header
	 * can set either.
	 */
	char *request_id;
	/*
	 * HTTP_X_REQUEST_ID, the id the client sent, under the same rule.
	 * It is logged beside the request's id and is never the request's
	 * id: a client could give its requests another account's.
	 */
	char *client_request_id;
	struct buf body;
	char *strings;         /* owns every string above */
	size_t strings_cap;    /* bytes allocated at strings */
};

/* Memory a recycled request keeps for the next one (req_recycle). */
#define REQ_KEEP 16384

enum req_status {
	REQ_OK = 0,
	REQ_TOO_LARGE,   /* Content-Length (or the body) over the limit: 413 */
	REQ_BAD_LENGTH,  /* Content-Length not a decimal number: 400 */
	REQ_SHORT_BODY,  /* the body ended before Content-Length: 400 */
	REQ_BAD_METHOD,  /* no or malformed REQUEST_METHOD: 400 */
	REQ_NOMEM,
	REQ_IO,
	REQ__MAX
};

/*
 * Reads a request.  mount, when not NULL or empty, is a path prefix that
 * is removed from the path (the responder mounted below "/api", say).
 * On any status the request may be partly filled; free it with
 * req_free either way.
 */
enum req_status req_read(struct request *r, req_param_fn param, void *pctx,
    req_read_fn rd, void *rctx, size_t limit, const char *mount);

/*
 * The same, with the meta-variables from an environment array (a FastCGI
 * request's envp, or environ), read in one pass.
 */
enum req_status req_read_env(struct request *r, char *const *envp,
    req_read_fn rd, void *rctx, size_t limit, const char *mount);

/*
 * The same again into a request that req_init set up or that was read
 * before and then given to req_recycle: the strings and body buffer it
 * kept are used again instead of allocated anew.
 */
enum req_status req_reread_env(struct request *r, char *const *envp,
    req_read_fn rd, void *rctx, size_t limit, const char *mount);

/* An empty request, for req_reread_env. */
void req_init(struct request *r);

/*
 * Ends a request read into r but keeps its memory (up to REQ_KEEP
 * bytes of strings and of body) for req_reread_env; req_free releases
 * it.
 */
void req_recycle(struct request *r);

void req_free(struct request *r);

/*
 * Parses a CONTENT_LENGTH value per RFC 3875 section 4.1.2: one or more
 * decimal digits, nothing else.  Returns 0 and sets *len, or -1.
 */
int req_parse_length(const char *s, size_t *len);

/*
 * The id a request is answered (Request-Id) and logged under: given, the
 * web server's own id (request_id above), when it is 1 to REQ_ID_MAX
 * printable ASCII characters other than space, '"' and '\\' (as
 * request_id above keeps it); otherwise "req_" and 96 random bits in
 * hexadecimal, written to made.  Returns given or made; given may be
 * NULL.
 */
const char *req_id(const char *given, char made[REQ_ID_MADE + 1]);

/* 1 when the media type (parameters ignored) is application/json or *+json. */
int req_is_json(const char *content_type);

const char *req_strstatus(enum req_status s);

#endif
