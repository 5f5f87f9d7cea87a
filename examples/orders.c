/* SPDX-License-Identifier: MIT */
/*
 * orders.c: POST /orders on libidem, safe to retry with an Idempotency-Key;
 * FastCGI, or CGI when stdin is no socket; the store in $ORDERS_DB.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcgiapp.h>
#include <idem.h>

extern char **environ;
static FCGX_Stream *out;	/* NULL under CGI: stdout */

static void
answer(const struct idem_response *r, const char *extra)
{
	char b[4096];	/* every answer is ours, and small: it fits */
	int n = snprintf(b, sizeof(b), "Status: %d\r\n%s", r->status, extra);

	for (size_t i = 0; i < r->nheaders; i++)
		n += snprintf(b + n, sizeof(b) - (size_t)n, "%s: %s\r\n",
		    r->headers[i].name, r->headers[i].value);
	n += snprintf(b + n, sizeof(b) - (size_t)n, "\r\n%.*s",
	    (int)r->bodylen, (const char *)r->body);
	out != NULL ? (void)FCGX_PutStr(b, n, out) : (void)fwrite(b, 1,
	    (size_t)n, stdout);
}

static void
fail(int status, const char *msg)
{
	static const struct idem_header h = { "Content-Type", "text/plain" };
	answer(&(struct idem_response){ status, &h, 1, msg, strlen(msg) }, "");
}

/* A claim: the order, named by its claim time and fingerprint. */
static void
place(struct idem_call *c, const uint8_t *fp)
{
	char loc[56], json[80];
	struct idem_header h[2] = { { "Content-Type", "application/json" },
	    { "Location", loc } };

	snprintf(loc, sizeof(loc), "/orders/ord_%llu_%02x%02x%02x%02x", (unsigned
	    long long)idem_call_created_ms(c), fp[0], fp[1], fp[2], fp[3]);
	struct idem_response r = { 201, h, 2, json, (size_t)snprintf(json,
	    sizeof(json), "{\"id\":\"%s\"}\n", loc + 8) };
	if (idem_finish(c, &r, NULL, NULL) == IDEM_OK)
		answer(&r, "");
	else	/* nothing happened: release the key for the retry */
		idem_release(c, NULL, NULL), fail(503, "store unavailable");
}

static void
serve(struct idem *db, char **env, FCGX_Stream *in)
{
	const char *method = FCGX_GetParam("REQUEST_METHOD", env);
	const char *key = FCGX_GetParam("HTTP_IDEMPOTENCY_KEY", env);
	const char *cl = FCGX_GetParam("CONTENT_LENGTH", env);
	size_t len = cl != NULL ? strtoul(cl, NULL, 10) : 0;
	uint8_t fp[IDEM_FP_SIZE];
	struct idem_call *c = NULL;
	char body[1024];

	if (method == NULL || strcmp(method, "POST") != 0 || key == NULL ||
	    *key == '\0' || len > sizeof(body) || (in != NULL ? (size_t)
	    FCGX_GetStr(body, (int)len, in) : fread(body, 1, len, stdin)) != len)
		fail(400, "a POST with an Idempotency-Key and a body");
	/* The key as the query: the fingerprint names the order too. */
	else if (idem_fingerprint(IDEM_FP_RAW, method, "/orders", key, body,
	    len, fp), idem_begin(db, "demo", key, fp, NULL, NULL, &c) != 0)
		fail(503, "store unavailable");
	else if (idem_call_verdict(c) <= IDEM_RESUME)	/* RUN or RESUME */
		place(c, fp);
	else if (idem_call_verdict(c) == IDEM_REPLAY)
		answer(idem_call_response(c), "Idempotent-Replayed: true\r\n");
	else	/* 422 for a mismatch; 409 (or 429): retry later */
		fail(idem_call_verdict(c) == IDEM_MISMATCH ? 422 : 409,
		    idem_strverdict(idem_call_verdict(c)));
	idem_call_free(c);
}

int
main(void)
{
	struct idem_options opt = IDEM_OPTIONS_INIT;
	struct idem *db;
	FCGX_Request req;

	if ((opt.dir = getenv("ORDERS_DB")) == NULL || FCGX_Init() != 0 ||
	    idem_open(&opt, &db) != 0)
		return 1;
	if (FCGX_IsCGI())
		serve(db, environ, NULL);
	else if (FCGX_InitRequest(&req, 0, 0) == 0)
		while (FCGX_Accept_r(&req) >= 0 && (out = req.out) != NULL)
			serve(db, req.envp, req.in);	/* finished by the next */
	idem_close(db);
	return 0;
}
