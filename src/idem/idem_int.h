/* SPDX-License-Identifier: MIT */
/*
 * idem_int.h: what idem.c (the keyed lifecycle, hooks and rows) and
 * idem_seal.c (sealing at rest and key rolling) share: the handle, and
 * the sealing adapter.  Internal: not installed, and every function here
 * is idem__, a name libidem never exports.
 */
#ifndef IDEM_INT_H
#define IDEM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "idem.h"
#include "record.h"
#include "replay_cache.h"
#include "seal.h"
#include "store.h"

struct idem {
	struct store *store;
	uint64_t lease_ms;
	uint64_t ttl_ms;
	idem_clock_fn clock;
	void *clock_ctx;
	struct sealer *seal;            /* NULL: values in the clear */
	struct rcache *rcache;          /* NULL: replays read the store */
	/*
	 * How long this handle's claimed requests ran, a moving average
	 * (metrics_ewma_add): what a duplicate waits for when no counters
	 * file shared by the workers says it (idem_typical_run_ms).
	 */
	uint64_t run_ewma_ms;
};

/*
 * A response sealed for the store, in both shapes the store takes: rr
 * for store_complete, ir for a hook's idem_tx_respond.  Both borrow from
 * blob; free with idem__sealed_free (a zeroed one is empty).
 */
struct idem_sealed {
	struct buf plain;
	struct buf blob;
	struct idem_header ih;
	struct rec_response rr;
	struct idem_response ir;
};

/*
 * Loads the key file at path into *out (seal_free).  IDEM_EINVAL for a
 * file that cannot be read or does not parse (said on stderr),
 * IDEM_ENOMEM.
 */
int idem__seal_load(const char *path, struct sealer **out);

/*
 * Seals a record's recovery point (len 0 stays none: out untouched),
 * bound to (scope, key), appending to out.  IDEM_ENOMEM.
 */
int idem__seal_point(struct idem *idem, const char *scope, const char *key,
    const void *point, size_t len, struct buf *out);

/*
 * Seals the response in, bound to (scope, key), into *out (reset first).
 * IDEM_ENOMEM, IDEM_EINVAL, IDEM_ETOOBIG.
 */
int idem__seal_response(struct idem *idem, const char *scope,
    const char *key, const struct rec_response *in, struct idem_sealed *out);
void idem__sealed_free(struct idem_sealed *s);

/*
 * A row's value, bound to (table, key): sealed into out, or opened into
 * out (appended), IDEM_ESEAL (logged) when it does not open.
 */
int idem__seal_row(struct idem *idem, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen, struct buf *out);
int idem__open_row(struct idem *idem, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen, struct buf *out);

#endif
