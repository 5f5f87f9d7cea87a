/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the request edge.  The input is split at NUL bytes
 * into CGI meta-variable values (method, path, query, content type,
 * content length, idempotency key, authorization, request id) and a body;
 * the request is read as the responder reads it, then the key and the
 * body go through their parsers and the fingerprint, as POST /payments
 * does.  A request id that was kept must be one the log can quote as it
 * is (request.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fp.h"
#include "json.h"
#include "key.h"
#include "request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { F_METHOD, F_SCRIPT, F_PATH, F_QUERY, F_CTYPE, F_LENGTH, F_KEY,
	F_AUTH, F_CRID, F_RID, F_UID, F__MAX };

static const char *const fuzz_names[F__MAX] = { "REQUEST_METHOD",
	"SCRIPT_NAME", "PATH_INFO", "QUERY_STRING", "CONTENT_TYPE",
	"CONTENT_LENGTH", "HTTP_IDEMPOTENCY_KEY", "HTTP_AUTHORIZATION",
	"HTTP_X_REQUEST_ID", "REQUEST_ID", "UNIQUE_ID" };

struct fuzz_req {
	char *vals[F__MAX];
	const uint8_t *body;
	size_t left;
};

static const char *
fuzz_param(void *ctx, const char *name)
{
	struct fuzz_req *f = ctx;
	int i;

	for (i = 0; i < F__MAX; i++)
		if (strcmp(fuzz_names[i], name) == 0)
			return f->vals[i];
	return NULL;
}

static long
fuzz_read(void *ctx, void *buf, size_t len)
{
	struct fuzz_req *f = ctx;

	if (len > f->left)
		len = f->left;
	memcpy(buf, f->body, len);
	f->body += len;
	f->left -= len;
	return (long)len;
}

/* What request.h promises of a kept X-Request-Id. */
static int
fuzz_id_ok(const char *id)
{
	size_t n = strlen(id), i;

	if (n == 0 || n > REQ_ID_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if ((unsigned char)id[i] <= ' ' || (unsigned char)id[i] >= 0x7f ||
		    id[i] == '"' || id[i] == '\\')
			return 0;
	return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_req f;
	struct request r;
	struct json_value *doc = NULL;
	struct buf canon = BUF_INIT;
	char key[KEY_MAX + 1], err[128];
	uint8_t fp[FP_SIZE];
	size_t i, keylen, n;

	memset(&f, 0, sizeof(f));
	for (i = 0; i < F__MAX; i++) {
		n = strnlen((const char *)data, size);
		if (n == size)
			break;
		f.vals[i] = strndup((const char *)data, n);
		data += n + 1;
		size -= n + 1;
	}
	f.body = data;
	f.left = size;
	if (req_read(&r, fuzz_param, &f, fuzz_read, &f, 4096, "/api") ==
	    REQ_OK) {
		if (r.request_id != NULL && !fuzz_id_ok(r.request_id))
			abort();
		(void)key_parse(r.idempotency_key, key, &keylen);
		(void)req_is_json(r.content_type);
		if (json_parse(r.body.data, r.body.len, &doc, err,
		    sizeof(err)) == JSON_OK && json_canonical(doc, &canon) == 0)
			fp_compute(FP_CANONICAL, r.method, r.path, r.query, canon.data,
			    canon.len, fp);
		json_free(doc);
		buf_free(&canon);
	}
	req_free(&r);
	for (i = 0; i < F__MAX; i++)
		free(f.vals[i]);
	return 0;
}
