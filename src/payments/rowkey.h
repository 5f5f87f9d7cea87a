/* SPDX-License-Identifier: MIT */
/*
 * rowkey.h: the store's names for rows named by a payment or refund id.
 *
 * An id is what a client holds and looks a payment up by; the store keeps
 * it only inside values, which are sealed when sealing is on (seal.h).
 * A row named by an id is stored under the first ROWKEY_LEN bytes of the
 * id's SHA-256.  Ids are random (80 bits), so the digest neither shows an
 * id nor lets anyone list them from a copy of the store, and it needs no
 * secret: every host names a row the same way, before and after a key
 * roll.  Rows written when ids named rows directly stay where they are;
 * readers look there when the digest finds nothing.  The two names never
 * meet: a digest is shorter than any id.
 */
#ifndef IDEM_ROWKEY_H
#define IDEM_ROWKEY_H

#include <stddef.h>
#include <stdint.h>

#include "idem.h"

#define ROWKEY_LEN 16

/* The store key of the row that id (len bytes) names. */
void rowkey(const char *id, size_t len, uint8_t out[ROWKEY_LEN]);

/*
 * idem_row_get, idem_tx_get, idem_tx_put and idem_tx_del on the row that
 * id names: gets and deletes find rows under either name, puts write
 * under the digest.
 */
int rowkey_get(struct idem *idem, const char *table, const char *id,
    size_t len, void **val, size_t *vallen);
int rowkey_tx_get(struct idem_tx *tx, const char *table, const char *id,
    size_t len, const void **val, size_t *vallen);
int rowkey_tx_put(struct idem_tx *tx, const char *table, const char *id,
    size_t len, const void *val, size_t vallen);
int rowkey_tx_del(struct idem_tx *tx, const char *table, const char *id,
    size_t len);
/*
 * rowkey_get with the row's name, rowkey(id, len), already made: for a
 * caller that reads several rows named by one id and hashes it once.
 */
int rowkey_get_named(struct idem *idem, const char *table,
    const uint8_t name[ROWKEY_LEN], const char *id, size_t len, void **val,
    size_t *vallen);

/*
 * idem_row_scan over the rows whose keys begin with the name of the row
 * that id names, under either name: newest first (reverse) those under
 * the digest, then those written when the id itself named them, which
 * are all older; oldest first, the other way round.  At most limit rows
 * in all (0: no limit); fn returning non-zero stops both.
 */
int rowkey_scan(struct idem *idem, const char *table, const char *id,
    size_t len, int reverse, size_t limit, idem_row_fn fn, void *ctx);

#endif
