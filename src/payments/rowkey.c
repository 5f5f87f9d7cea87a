/* SPDX-License-Identifier: MIT */
/*
 * rowkey.c: rows named by the digest of a payment or refund id (rowkey.h).
 */
#include <string.h>

#include "crypto.h"
#include "rowkey.h"

void
rowkey(const char *id, size_t len, uint8_t out[ROWKEY_LEN])
{
	uint8_t d[CRYPTO_SHA256_SIZE];
	struct crypto_sha256 h;

	crypto_sha256_init(&h);
	crypto_sha256_update(&h, id, len);
	crypto_sha256_final(&h, d);
	memcpy(out, d, ROWKEY_LEN);
}

int
rowkey_get(struct idem *idem, const char *table, const char *id, size_t len,
    void **val, size_t *vallen)
{
	uint8_t k[ROWKEY_LEN];

	rowkey(id, len, k);
	return rowkey_get_named(idem, table, k, id, len, val, vallen);
}

int
rowkey_get_named(struct idem *idem, const char *table,
    const uint8_t name[ROWKEY_LEN], const char *id, size_t len, void **val,
    size_t *vallen)
{
	int rc;

	rc = idem_row_get(idem, table, name, ROWKEY_LEN, val, vallen);
	if (rc == IDEM_ENOTFOUND)
		rc = idem_row_get(idem, table, id, len, val, vallen);
	return rc;
}

int
rowkey_tx_get(struct idem_tx *tx, const char *table, const char *id,
    size_t len, const void **val, size_t *vallen)
{
	uint8_t k[ROWKEY_LEN];
	int rc;

	rowkey(id, len, k);
	rc = idem_tx_get(tx, table, k, sizeof(k), val, vallen);
	if (rc == IDEM_ENOTFOUND)
		rc = idem_tx_get(tx, table, id, len, val, vallen);
	return rc;
}

int
rowkey_tx_put(struct idem_tx *tx, const char *table, const char *id,
    size_t len, const void *val, size_t vallen)
{
	uint8_t k[ROWKEY_LEN];

	rowkey(id, len, k);
	return idem_tx_put(tx, table, k, sizeof(k), val, vallen);
}

int
rowkey_tx_del(struct idem_tx *tx, const char *table, const char *id,
    size_t len)
{
	uint8_t k[ROWKEY_LEN];
	int rc;

	rowkey(id, len, k);
	rc = idem_tx_del(tx, table, k, sizeof(k));
	if (rc == IDEM_ENOTFOUND)
		rc = idem_tx_del(tx, table, id, len);
	return rc;
}

/* Counts the rows rowkey_scan passes on, and whether fn stopped it. */
struct rowkey_walk {
	idem_row_fn fn;
	void *ctx;
	size_t n;
	int stopped;
};

static int
rowkey_walk_one(void *ctx, const void *key, size_t keylen, const void *val,
    size_t vallen)
{
	struct rowkey_walk *w = ctx;

	w->n++;
	if (w->fn(w->ctx, key, keylen, val, vallen) != 0)
		w->stopped = 1;
	return w->stopped;
}

int
rowkey_scan(struct idem *idem, const char *table, const char *id,
    size_t len, int reverse, size_t limit, idem_row_fn fn, void *ctx)
{
	struct rowkey_walk w = { fn, ctx, 0, 0 };
	uint8_t k[ROWKEY_LEN];
	const void *name[2];
	size_t namelen[2];
	int i, rc = IDEM_OK;

	rowkey(id, len, k);
	/* Newest first, the digest's rows come first. */
	name[!reverse] = k;
	namelen[!reverse] = sizeof(k);
	name[reverse] = id;
	namelen[reverse] = len;
	for (i = 0; i < 2 && rc == IDEM_OK && !w.stopped; i++) {
		if (limit != 0 && w.n >= limit)
			break;
		rc = idem_row_scan(idem, table, name[i], namelen[i], reverse,
		    limit == 0 ? 0 : limit - w.n, rowkey_walk_one, &w);
	}
	return rc;
}
