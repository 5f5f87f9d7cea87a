/* SPDX-License-Identifier: MIT */
/*
 * fp.c: the request fingerprint.
 *
 * The hashed input is
 *
 *     len(tag) tag
 *     len(method) method  len(path) path  len(query) query  len(body) body
 *
 * where the tag names the layout's version and the mode that made the
 * body field: "idem-fp-v1" for the canonical JSON form (the tag of the
 * first release, which every canonical fingerprint already stored
 * carries) and "idem-fp-v1-raw" for body bytes as received, so that the
 * two modes never hash the same input and a record tells which one made
 * it.
 *
 * where each len is the byte count as an 8-byte big-endian integer.  With
 * every field length-prefixed the encoding is injective: "GET" + "/ab"
 * and "GETS" + "/b" hash different inputs, as do a body that ends where
 * the query could have gone on.  The domain tag keeps these digests apart
 * from any other SHA-256 the project computes, and names the version of
 * this layout: a change to it must change the tag, since stored records
 * compare fingerprints across releases.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "crypto.h"
#include "err.h"
#include "fp.h"

static const char *const fp_tag[FP_MODE__MAX] = {
	[FP_CANONICAL] = "idem-fp-v1",
	[FP_RAW] = "idem-fp-v1-raw",
};

_Static_assert(FP_SIZE == CRYPTO_SHA256_SIZE, "FP_SIZE must be a SHA-256");

static const char *const fp_modestr[FP_MODE__MAX] = {
	[FP_CANONICAL] = "canonical",
	[FP_RAW] = "raw",
};

static void
fp_put_field(struct crypto_sha256 *h, const void *data, size_t len)
{
	uint8_t be[8];

	be_put(be, sizeof(be), (uint64_t)len);
	crypto_sha256_update(h, be, sizeof(be));
	crypto_sha256_update(h, data, len);
}

/*
 * A NULL method, path or query hashes as the empty string: CGI leaves
 * QUERY_STRING unset or empty for the same request depending on the
 * server, and both mean "no query".
 */
void
fp_compute(enum fp_mode mode, const char *method, const char *path,
    const char *query, const void *body, size_t bodylen, uint8_t out[FP_SIZE])
{
	const char *tag = fp_tag[(unsigned)mode < FP_MODE__MAX ? mode :
	    FP_RAW];
	struct crypto_sha256 h;

	crypto_sha256_init(&h);
	fp_put_field(&h, tag, strlen(tag));
	fp_put_field(&h, method != NULL ? method : "",
	    method != NULL ? strlen(method) : 0);
	fp_put_field(&h, path != NULL ? path : "",
	    path != NULL ? strlen(path) : 0);
	fp_put_field(&h, query != NULL ? query : "",
	    query != NULL ? strlen(query) : 0);
	fp_put_field(&h, body != NULL ? body : "", body != NULL ? bodylen : 0);
	crypto_sha256_final(&h, out);
}

int
fp_mode_parse(const char *s, enum fp_mode *mode)
{
	int i;

	if (s == NULL)
		return IDEM_EINVAL;
	for (i = 0; i < FP_MODE__MAX; i++)
		if (strcmp(s, fp_modestr[i]) == 0) {
			*mode = (enum fp_mode)i;
			return IDEM_OK;
		}
	return IDEM_EINVAL;
}
