/* SPDX-License-Identifier: MIT */
/*
 * fuzz_record.c: libFuzzer target for the stored-record decoder.
 *
 * rec_decode reads bytes that came off the disk and trusts none of them.
 * Besides not crashing or leaking, a record that decodes must encode
 * again (rec_encode accepts every record rec_decode makes), the encoding
 * must be the input byte for byte (the layout has one encoding per
 * record; a version 1 record's is its version 2 form, fuzz_reencoded),
 * and it must decode to an equal record.  The decoded record
 * then goes where a stored one goes: to the engine.
 *
 * The seeds are real encodings, written at run time by seed_record.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "engine.h"
#include "err.h"
#include "record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
fuzz_same_response(const struct rec_response *a, const struct rec_response *b)
{
	size_t i;

	if (a->status != b->status || a->nheaders != b->nheaders ||
	    a->bodylen != b->bodylen)
		return 0;
	for (i = 0; i < a->nheaders; i++)
		if (strcmp(a->headers[i].name, b->headers[i].name) != 0 ||
		    strcmp(a->headers[i].value, b->headers[i].value) != 0)
			return 0;
	return a->bodylen == 0 || memcmp(a->body, b->body, a->bodylen) == 0;
}

static int
fuzz_same(const struct rec *a, const struct rec *b)
{
	if (a->state != b->state || memcmp(a->fp, b->fp, FP_SIZE) != 0 ||
	    memcmp(a->token, b->token, REC_TOKEN_SIZE) != 0 ||
	    a->created_ms != b->created_ms || a->expires_ms != b->expires_ms ||
	    a->lease_ms != b->lease_ms || a->attempts != b->attempts ||
	    a->stage != b->stage || a->cplen != b->cplen)
		return 0;
	if (a->cplen > 0 && memcmp(a->cp, b->cp, a->cplen) != 0)
		return 0;
	return a->state != REC_COMPLETED ||
	    fuzz_same_response(&a->resp, &b->resp);
}

/* The engine on a stored record, at times around those it carries. */
static void
fuzz_engine(const struct rec *r)
{
	const uint64_t when[] = { 0, r->created_ms, r->lease_ms,
	    r->lease_ms + 1, r->expires_ms, r->expires_ms + 1, UINT64_MAX };
	uint8_t other[FP_SIZE];
	uint32_t retry;
	size_t i;

	memcpy(other, r->fp, FP_SIZE);
	other[0] ^= 1;
	for (i = 0; i < sizeof(when) / sizeof(when[0]); i++) {
		if (engine_decide(r, r->fp, when[i], &retry) >= ENGINE__MAX ||
		    engine_decide(r, other, when[i], &retry) >= ENGINE__MAX)
			abort();
	}
}

/*
 * Where version 1 and 2 differ: version 2 has gen, eight bytes, after
 * version, state, fp, token, the three times, attempts and stage.
 */
#define FUZZ_GEN_AT (1 + 1 + FP_SIZE + REC_TOKEN_SIZE + 3 * 8 + 2 * 4)

/*
 * A record decoded from data encodes to data again, byte for byte; one of
 * version 1 encodes to the same as version 2 with gen REC_GEN_LEGACY
 * inserted, which is how an older release's claim keeps its provider key.
 */
static int
fuzz_reencoded(const uint8_t *data, size_t size, const struct buf *b)
{
	const uint8_t *e = (const uint8_t *)b->data;

	if (data[0] == REC_VERSION)
		return b->len == size && memcmp(e, data, size) == 0;
	return data[0] == 1 && size >= FUZZ_GEN_AT && b->len == size + 8 &&
	    e[0] == REC_VERSION &&
	    memcmp(e + 1, data + 1, FUZZ_GEN_AT - 1) == 0 &&
	    be_get(e + FUZZ_GEN_AT, 8) == REC_GEN_LEGACY &&
	    memcmp(e + FUZZ_GEN_AT + 8, data + FUZZ_GEN_AT,
	    size - FUZZ_GEN_AT) == 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rec r, again;
	struct buf b = BUF_INIT;
	int rc;

	rc = rec_decode(data, size, &r);
	if (rc != IDEM_OK) {
		if (rc != IDEM_ECORRUPT && rc != IDEM_ENOMEM)
			abort();
		/* A failed decode leaves nothing to free. */
		if (r.mem != NULL || r.cp != NULL || r.resp.body != NULL ||
		    r.resp.nheaders != 0)
			abort();
		return 0;
	}
	if (r.state != REC_IN_PROGRESS && r.state != REC_COMPLETED)
		abort();
	if (rec_encode(&r, &b) != IDEM_OK)
		abort();
	if (!fuzz_reencoded(data, size, &b))
		abort();
	if (rec_decode(b.data, b.len, &again) != IDEM_OK)
		abort();
	if (!fuzz_same(&r, &again))
		abort();
	fuzz_engine(&r);
	rec_free(&again);
	rec_free(&r);
	buf_free(&b);
	return 0;
}
