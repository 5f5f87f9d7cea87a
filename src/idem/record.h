/* SPDX-License-Identifier: MIT */
/*
 * record.h: what the store keeps for one (scope, key).
 *
 * Encoded records start with a version byte (REC_VERSION) so their layout
 * can change; rec_decode refuses versions it does not know.  All integers
 * are big-endian.  Times are milliseconds since the Unix epoch.
 */
#ifndef IDEM_RECORD_H
#define IDEM_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "fp.h"
#include "idem.h"

#define REC_VERSION 2
/*
 * The generation of a record written by a release before version 2, which
 * knew none: its provider key is derived from its creation time
 * (keyed.h).  A take-over keeps it, so such a claim keeps its key.
 */
#define REC_GEN_LEGACY IDEM_GEN_LEGACY
#define REC_TOKEN_SIZE 16
#define REC_MAX_HEADERS 8
/* A recovery point of IDEM_MAX_POINT bytes, sealed (seal.h) or not. */
#define REC_MAX_CHECKPOINT (IDEM_MAX_POINT + 64)

enum rec_state {
	REC_IN_PROGRESS = 1,
	REC_COMPLETED = 2
};

/* A stored response header, e.g. Content-Type, Location, ETag. */
struct rec_header {
	char *name;
	char *value;
};

/*
 * The answer kept for replay.  Only headers that clients rely on are kept
 * (never request headers, never per-request ones such as a request id).
 */
struct rec_response {
	int status;
	size_t nheaders;
	struct rec_header headers[REC_MAX_HEADERS];
	uint8_t *body;
	size_t bodylen;
};

struct rec {
	enum rec_state state;
	uint8_t fp[FP_SIZE];
	uint8_t token[REC_TOKEN_SIZE]; /* owner of the claim; zero once completed */
	uint64_t created_ms;           /* first claim */
	uint64_t expires_ms;           /* created_ms + TTL */
	uint64_t lease_ms;             /* in progress: the lease ends here */
	uint32_t attempts;             /* 1 at the first claim, +1 per take-over */
	/*
	 * The key's generation when it was claimed: how many lifetimes of
	 * (scope, key) had ended before this one (the store keeps the count
	 * apart from the record, so losing the record does not lose it), or
	 * REC_GEN_LEGACY.  Kept across take-overs.
	 */
	uint64_t gen;
	/*
	 * Recovery point: an application-defined stage and bytes, written by
	 * checkpoints and kept across take-overs.
	 */
	uint32_t stage;
	uint8_t *cp;
	size_t cplen;
	struct rec_response resp;      /* REC_COMPLETED only */
	/*
	 * What rec_free frees: the one block behind cp and resp's parts
	 * (rec_decode, rec_adopt_cp); NULL for a record whose parts are
	 * borrowed, to be encoded only.
	 */
	void *mem;
};

/* Appends the encoding of r to out.  IDEM_OK, IDEM_ENOMEM or IDEM_ETOOBIG. */
int rec_encode(const struct rec *r, struct buf *out);

/*
 * Decodes len bytes into *r, which then owns copies of every variable
 * part, all in one allocation (free with rec_free; the source may go
 * away).  IDEM_ECORRUPT for a truncated, trailing or unknown-version
 * encoding, IDEM_ENOMEM.
 */
int rec_decode(const void *data, size_t len, struct rec *r);
void rec_free(struct rec *r);

/*
 * Gives an in-progress record cp (len bytes, malloc'd) as its recovery
 * point, freeing what the record held: rec_free frees cp.
 */
void rec_adopt_cp(struct rec *r, void *cp, size_t len);

/*
 * Points dst at the parts of src, copying nothing: dst is only to be
 * encoded, never freed, while src lives.  IDEM_EINVAL for more than
 * REC_MAX_HEADERS headers, a header without a name or value, or a body
 * length without a body.
 */
int rec_response_borrow(const struct idem_response *src,
    struct rec_response *dst);

/*
 * A sealed response (see idem.c) is stored as its status, one header
 * with the empty name (no HTTP field has it) and REC_SEALED_VALUE as
 * its marker, and a body that is the sealing of rec_response_pack's
 * encoding of the whole response.
 */
#define REC_SEALED_VALUE "idem-sealed-v1"
int rec_response_is_sealed(const struct rec_response *resp);

/*
 * Appends resp's encoding (status, headers, body, as in a record) to
 * out.  IDEM_OK, IDEM_ENOMEM, IDEM_EINVAL, IDEM_ETOOBIG.
 */
int rec_response_pack(const struct rec_response *resp, struct buf *out);

/*
 * Decodes rec_response_pack's encoding into *resp, whose parts all live
 * in one allocation, *mem (the caller frees it).  IDEM_ECORRUPT,
 * IDEM_ENOMEM.
 */
int rec_response_unpack(const void *data, size_t len,
    struct rec_response *resp, void **mem);

#endif
