/* SPDX-License-Identifier: MIT */
/*
 * record.c: the stored form of one (scope, key).
 *
 * Layout of version 2, every integer big-endian:
 *
 *	version u8, state u8, fp[32], token[16],
 *	created_ms u64, expires_ms u64, lease_ms u64,
 *	attempts u32, stage u32, gen u64, cplen u16, cp[cplen],
 *	and, for a completed record only:
 *	status u16, nheaders u8,
 *	nheaders times: namelen u16, name, valuelen u16, value,
 *	bodylen u32, body[bodylen].
 *
 * Version 1, written by releases before the key generation, is the same
 * without gen; it decodes with gen REC_GEN_LEGACY, and is written again
 * as version 2 with that value, so a claim keeps the provider key it was
 * made with.
 *
 * rec_decode reads bytes that came off the disk, so it trusts none of
 * them: every length is checked against what is left before anything is
 * copied or allocated, and the whole input must be consumed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "record.h"

/*
 * HTTP status codes are three digits (RFC 9110 §15).  Anything else in a
 * record is either a caller's bug (encode) or damage (decode).
 */
#define REC_STATUS_MIN 100
#define REC_STATUS_MAX 999

/*
 * Checks a response before a byte of it is appended, and adds the size of
 * its encoding (rec_put_response) to *size, so the buffer grows once.
 */
static int
rec_check_response(const struct rec_response *resp, size_t *size)
{
	size_t i, nlen, vlen;

	if (resp->status < REC_STATUS_MIN || resp->status > REC_STATUS_MAX)
		return IDEM_EINVAL;
	if (resp->nheaders > REC_MAX_HEADERS)
		return IDEM_ETOOBIG;
	*size += 2 + 1 + 4;
	for (i = 0; i < resp->nheaders; i++) {
		if (resp->headers[i].name == NULL ||
		    resp->headers[i].value == NULL)
			return IDEM_EINVAL;
		nlen = strlen(resp->headers[i].name);
		vlen = strlen(resp->headers[i].value);
		if (nlen > UINT16_MAX || vlen > UINT16_MAX)
			return IDEM_ETOOBIG;
		*size += 2 + nlen + 2 + vlen;
	}
	if (resp->bodylen > UINT32_MAX)
		return IDEM_ETOOBIG;
	if (resp->bodylen > 0 && resp->body == NULL)
		return IDEM_EINVAL;
	*size += resp->bodylen;
	return IDEM_OK;
}

/*
 * Refuses what rec_decode would refuse, before a byte is appended, and
 * sets *size to the size of the encoding (rec_put).
 */
static int
rec_check(const struct rec *r, size_t *size)
{
	if (r->state != REC_IN_PROGRESS && r->state != REC_COMPLETED)
		return IDEM_EINVAL;
	if (r->cplen > REC_MAX_CHECKPOINT)
		return IDEM_ETOOBIG;
	if (r->cplen > 0 && r->cp == NULL)
		return IDEM_EINVAL;
	*size = 1 + 1 + FP_SIZE + REC_TOKEN_SIZE + 4 * 8 + 2 * 4 + 2 +
	    r->cplen;
	if (r->state == REC_COMPLETED)
		return rec_check_response(&r->resp, size);
	return IDEM_OK;
}

static int
rec_put_string(struct buf *out, const char *s)
{
	size_t len = strlen(s);
	int rc;

	if ((rc = buf_put_u16(out, (uint16_t)len)) != IDEM_OK)
		return rc;
	return buf_append(out, s, len);
}

static int
rec_put_response(struct buf *out, const struct rec_response *resp)
{
	size_t i;
	int rc;

	if ((rc = buf_put_u16(out, (uint16_t)resp->status)) != IDEM_OK ||
	    (rc = buf_put_u8(out, (uint8_t)resp->nheaders)) != IDEM_OK)
		return rc;
	for (i = 0; i < resp->nheaders; i++) {
		if ((rc = rec_put_string(out, resp->headers[i].name)) !=
		    IDEM_OK ||
		    (rc = rec_put_string(out, resp->headers[i].value)) !=
		    IDEM_OK)
			return rc;
	}
	if ((rc = buf_put_u32(out, (uint32_t)resp->bodylen)) != IDEM_OK)
		return rc;
	return buf_append(out, resp->body, resp->bodylen);
}

static int
rec_put(struct buf *out, const struct rec *r)
{
	int rc;

	if ((rc = buf_put_u8(out, REC_VERSION)) != IDEM_OK ||
	    (rc = buf_put_u8(out, (uint8_t)r->state)) != IDEM_OK ||
	    (rc = buf_append(out, r->fp, FP_SIZE)) != IDEM_OK ||
	    (rc = buf_append(out, r->token, REC_TOKEN_SIZE)) != IDEM_OK ||
	    (rc = buf_put_u64(out, r->created_ms)) != IDEM_OK ||
	    (rc = buf_put_u64(out, r->expires_ms)) != IDEM_OK ||
	    (rc = buf_put_u64(out, r->lease_ms)) != IDEM_OK ||
	    (rc = buf_put_u32(out, r->attempts)) != IDEM_OK ||
	    (rc = buf_put_u32(out, r->stage)) != IDEM_OK ||
	    (rc = buf_put_u64(out, r->gen)) != IDEM_OK ||
	    (rc = buf_put_u16(out, (uint16_t)r->cplen)) != IDEM_OK ||
	    (rc = buf_append(out, r->cp, r->cplen)) != IDEM_OK)
		return rc;
	if (r->state == REC_COMPLETED)
		return rec_put_response(out, &r->resp);
	return IDEM_OK;
}

int
rec_encode(const struct rec *r, struct buf *out)
{
	size_t start = out->len, size;
	int rc;

	if ((rc = rec_check(r, &size)) != IDEM_OK ||
	    (rc = buf_reserve(out, size)) != IDEM_OK)
		return rc;
	/*
	 * A failed append leaves only itself undone; cut the buffer back so
	 * that the caller never sees half a record.
	 */
	if ((rc = rec_put(out, r)) != IDEM_OK) {
		out->len = start;
		if (out->data != NULL)
			out->data[start] = '\0';
	}
	return rc;
}

/*
 * Decoding copies the variable parts (strings, recovery point, body) out
 * of the encoding, which belongs to a transaction, into one block: each is
 * a piece of the encoding, and each string gains a NUL, so len +
 * 2 * REC_MAX_HEADERS bytes hold them all.
 */
struct rec_block {
	uint8_t *p;
};

/* A string: u16 length and bytes, without NUL; copied NUL-terminated. */
static int
rec_get_string(struct rd *r, struct rec_block *b, char **out)
{
	const uint8_t *p;
	uint16_t len;
	int rc;

	if ((rc = rd_u16(r, &len)) != IDEM_OK ||
	    (rc = rd_bytes(r, len, &p)) != IDEM_OK)
		return rc;
	if (memchr(p, '\0', len) != NULL)
		return IDEM_ECORRUPT;
	*out = (char *)b->p;
	memcpy(b->p, p, len);
	b->p[len] = '\0';
	b->p += (size_t)len + 1;
	return IDEM_OK;
}

/* Copies len bytes; NULL for none. */
static int
rec_get_blob(struct rd *r, struct rec_block *b, size_t len, uint8_t **out)
{
	const uint8_t *p;
	int rc;

	*out = NULL;
	if ((rc = rd_bytes(r, len, &p)) != IDEM_OK)
		return rc;
	if (len == 0)
		return IDEM_OK;
	*out = b->p;
	memcpy(b->p, p, len);
	b->p += len;
	return IDEM_OK;
}

static int
rec_get_response(struct rd *r, struct rec_block *b, struct rec_response *resp)
{
	uint16_t status;
	uint8_t n;
	uint32_t bodylen;
	size_t i;
	int rc;

	if ((rc = rd_u16(r, &status)) != IDEM_OK ||
	    (rc = rd_u8(r, &n)) != IDEM_OK)
		return rc;
	if (status < REC_STATUS_MIN || status > REC_STATUS_MAX ||
	    n > REC_MAX_HEADERS)
		return IDEM_ECORRUPT;
	resp->status = status;
	for (i = 0; i < n; i++) {
		struct rec_header *h = &resp->headers[i];

		if ((rc = rec_get_string(r, b, &h->name)) != IDEM_OK ||
		    (rc = rec_get_string(r, b, &h->value)) != IDEM_OK)
			return rc;
		resp->nheaders = i + 1;
	}
	if ((rc = rd_u32(r, &bodylen)) != IDEM_OK ||
	    (rc = rec_get_blob(r, b, bodylen, &resp->body)) != IDEM_OK)
		return rc;
	resp->bodylen = bodylen;
	return IDEM_OK;
}

static int
rec_get(struct rd *r, struct rec_block *b, struct rec *out)
{
	const uint8_t *p;
	uint8_t version, state;
	uint16_t cplen;
	int rc;

	if ((rc = rd_u8(r, &version)) != IDEM_OK ||
	    (rc = rd_u8(r, &state)) != IDEM_OK)
		return rc;
	if (version != 1 && version != REC_VERSION)
		return IDEM_ECORRUPT;
	if (state != REC_IN_PROGRESS && state != REC_COMPLETED)
		return IDEM_ECORRUPT;
	out->state = (enum rec_state)state;
	if ((rc = rd_bytes(r, FP_SIZE, &p)) != IDEM_OK)
		return rc;
	memcpy(out->fp, p, FP_SIZE);
	if ((rc = rd_bytes(r, REC_TOKEN_SIZE, &p)) != IDEM_OK)
		return rc;
	memcpy(out->token, p, REC_TOKEN_SIZE);
	if ((rc = rd_u64(r, &out->created_ms)) != IDEM_OK ||
	    (rc = rd_u64(r, &out->expires_ms)) != IDEM_OK ||
	    (rc = rd_u64(r, &out->lease_ms)) != IDEM_OK ||
	    (rc = rd_u32(r, &out->attempts)) != IDEM_OK ||
	    (rc = rd_u32(r, &out->stage)) != IDEM_OK)
		return rc;
	out->gen = REC_GEN_LEGACY;
	if ((version != 1 && (rc = rd_u64(r, &out->gen)) != IDEM_OK) ||
	    (rc = rd_u16(r, &cplen)) != IDEM_OK)
		return rc;
	if (cplen > REC_MAX_CHECKPOINT)
		return IDEM_ECORRUPT;
	if ((rc = rec_get_blob(r, b, cplen, &out->cp)) != IDEM_OK)
		return rc;
	out->cplen = cplen;
	if (out->state == REC_COMPLETED)
		return rec_get_response(r, b, &out->resp);
	return IDEM_OK;
}

int
rec_decode(const void *data, size_t len, struct rec *r)
{
	struct rec_block b;
	struct rd rd;
	int rc;

	memset(r, 0, sizeof(*r));
	if (len > SIZE_MAX - 2 * REC_MAX_HEADERS ||
	    (r->mem = malloc(len + 2 * REC_MAX_HEADERS)) == NULL)
		return IDEM_ENOMEM;
	b.p = r->mem;
	rd_init(&rd, data, len);
	if ((rc = rec_get(&rd, &b, r)) == IDEM_OK && rd.left != 0)
		rc = IDEM_ECORRUPT;
	if (rc != IDEM_OK)
		rec_free(r);
	return rc;
}

void
rec_free(struct rec *r)
{
	free(r->mem);
	memset(r, 0, sizeof(*r));
}

void
rec_adopt_cp(struct rec *r, void *cp, size_t len)
{
	free(r->mem);
	r->mem = cp;
	r->cp = cp;
	r->cplen = len;
}

int
rec_response_borrow(const struct idem_response *src, struct rec_response *dst)
{
	size_t i;

	memset(dst, 0, sizeof(*dst));
	if (src->nheaders > REC_MAX_HEADERS ||
	    (src->nheaders > 0 && src->headers == NULL) ||
	    (src->bodylen > 0 && src->body == NULL))
		return IDEM_EINVAL;
	dst->status = src->status;
	for (i = 0; i < src->nheaders; i++) {
		if (src->headers[i].name == NULL ||
		    src->headers[i].value == NULL)
			return IDEM_EINVAL;
		dst->headers[i].name = (char *)src->headers[i].name;
		dst->headers[i].value = (char *)src->headers[i].value;
	}
	dst->nheaders = src->nheaders;
	dst->body = (uint8_t *)src->body;
	dst->bodylen = src->bodylen;
	return IDEM_OK;
}

int
rec_response_is_sealed(const struct rec_response *resp)
{
	return resp->nheaders == 1 && resp->headers[0].name != NULL &&
	    resp->headers[0].name[0] == '\0' &&
	    resp->headers[0].value != NULL &&
	    strcmp(resp->headers[0].value, REC_SEALED_VALUE) == 0;
}

int
rec_response_pack(const struct rec_response *resp, struct buf *out)
{
	size_t start = out->len, size = 0;
	int rc;

	if ((rc = rec_check_response(resp, &size)) != IDEM_OK ||
	    (rc = buf_reserve(out, size)) != IDEM_OK)
		return rc;
	if ((rc = rec_put_response(out, resp)) != IDEM_OK) {
		out->len = start;
		if (out->data != NULL)
			out->data[start] = '\0';
	}
	return rc;
}

int
rec_response_unpack(const void *data, size_t len, struct rec_response *resp,
    void **mem)
{
	struct rec_block b;
	struct rd rd;
	int rc;

	memset(resp, 0, sizeof(*resp));
	*mem = NULL;
	if (len > SIZE_MAX - 2 * REC_MAX_HEADERS ||
	    (*mem = malloc(len + 2 * REC_MAX_HEADERS)) == NULL)
		return IDEM_ENOMEM;
	b.p = *mem;
	rd_init(&rd, data, len);
	if ((rc = rec_get_response(&rd, &b, resp)) == IDEM_OK && rd.left != 0)
		rc = IDEM_ECORRUPT;
	if (rc != IDEM_OK) {
		free(*mem);
		*mem = NULL;
		memset(resp, 0, sizeof(*resp));
	}
	return rc;
}
