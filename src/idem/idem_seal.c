/* SPDX-License-Identifier: MIT */
/*
 * idem_seal.c: sealing at rest, and key rolling (idem_int.h, store.h).
 *
 * With a key file (idem_options.secret_file) every stored response,
 * recovery point and row value is sealed here (seal.h), above the store,
 * so every backend stores only sealed bytes: a response as its status,
 * a marker header and the sealing of the whole response; a recovery
 * point and a row value as their sealing.  Each is bound to its place:
 * a record's scope and key, a row's table and key.  idem.c calls the
 * adapter on every write and read; idemctl rekey rewrites what an older
 * key sealed (store_reseal_*).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "crypto.h"
#include "engine.h"
#include "err.h"
#include "fp.h"
#include "idem.h"
#include "idem_int.h"
#include "record.h"
#include "seal.h"
#include "store.h"

/*
 * One line on stderr (the web server's error log), written at once so
 * that threads' lines never interleave.  It names the key id, never a
 * key, a scope or a value.
 */
static void
idem_seal_log(const char *what, const char *where, const uint8_t *id)
{
	char line[256], hex[2 * SEAL_ID_SIZE + 1];
	ssize_t w;
	int n;

	static const uint8_t none[SEAL_ID_SIZE];

	if (id != NULL && memcmp(id, none, SEAL_ID_SIZE) == 0)
		n = snprintf(line, sizeof(line), "idem: %s%s%s is not a "
		    "sealed value (no key id)\n", what, where != NULL ?
		    " of table " : "", where != NULL ? where : "");
	else if (id != NULL) {
		seal_id_hex(id, hex);
		n = snprintf(line, sizeof(line), "idem: %s%s%s did not open "
		    "under key id %s: a wrong or unknown key, or changed "
		    "bytes\n", what, where != NULL ? " of table " : "",
		    where != NULL ? where : "", hex);
	} else
		n = snprintf(line, sizeof(line), "idem: %s is %s\n", what,
		    where);
	if (n > 0) {
		w = write(STDERR_FILENO, line, (size_t)n < sizeof(line) ?
		    (size_t)n : sizeof(line) - 1);
		(void)w;
	}
}

int
idem__seal_load(const char *path, struct sealer **out)
{
	char err[512];
	int rc;

	if ((rc = seal_load(path, out, err, sizeof(err))) != IDEM_OK) {
		idem_seal_log("the key file", err, NULL);
		return rc == IDEM_ENOMEM ? rc : IDEM_EINVAL;
	}
	return IDEM_OK;
}

static void
idem_ad_record(struct seal_ad *ad, const char *kind, const char *scope,
    const char *key)
{
	ad->kind = kind;
	ad->place = scope;
	ad->placelen = strlen(scope);
	ad->name = key;
	ad->namelen = strlen(key);
}

static void
idem_ad_row(struct seal_ad *ad, const char *table, const void *key,
    size_t keylen)
{
	ad->kind = "row";
	ad->place = table;
	ad->placelen = strlen(table);
	ad->name = key;
	ad->namelen = keylen;
}

/* Seals a recovery point (none stays none) into out. */
int
idem__seal_point(struct idem *idem, const char *scope, const char *key,
    const void *point, size_t len, struct buf *out)
{
	struct seal_ad ad;

	if (len == 0)
		return IDEM_OK;
	idem_ad_record(&ad, "record-point", scope, key);
	return seal_seal(idem->seal, &ad, point, len, out);
}

int
idem__seal_response(struct idem *idem, const char *scope, const char *key,
    const struct rec_response *in, struct idem_sealed *out)
{
	struct seal_ad ad;
	int rc;

	buf_reset(&out->plain);
	buf_reset(&out->blob);
	idem_ad_record(&ad, "record-response", scope, key);
	if ((rc = rec_response_pack(in, &out->plain)) != IDEM_OK ||
	    (rc = seal_seal(idem->seal, &ad, out->plain.data, out->plain.len,
	    &out->blob)) != IDEM_OK)
		return rc;
	out->ih.name = "";
	out->ih.value = REC_SEALED_VALUE;
	memset(&out->rr, 0, sizeof(out->rr));
	out->rr.status = in->status;
	out->rr.nheaders = 1;
	out->rr.headers[0].name = (char *)"";
	out->rr.headers[0].value = (char *)REC_SEALED_VALUE;
	out->rr.body = (uint8_t *)out->blob.data;
	out->rr.bodylen = out->blob.len;
	out->ir.status = in->status;
	out->ir.headers = &out->ih;
	out->ir.nheaders = 1;
	out->ir.body = out->blob.data;
	out->ir.bodylen = out->blob.len;
	return IDEM_OK;
}

void
idem__sealed_free(struct idem_sealed *s)
{
	buf_free(&s->plain);
	buf_free(&s->blob);
}

int
store_unseal_row(const struct sealer *seal, const char *table,
    const void *key, size_t keylen, const void *val, size_t vallen,
    struct buf *out)
{
	uint8_t id[SEAL_ID_SIZE];
	struct seal_ad ad;
	int rc;

	idem_ad_row(&ad, table, key, keylen);
	if ((rc = seal_open(seal, &ad, val, vallen, out, id)) == IDEM_ESEAL)
		idem_seal_log("a row", table, id);
	return rc;
}

/* Opens a row's value into out (appended). */
int
idem__open_row(struct idem *idem, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen, struct buf *out)
{
	return store_unseal_row(idem->seal, table, key, keylen, val, vallen,
	    out);
}

int
idem__seal_row(struct idem *idem, const char *table, const void *key,
    size_t keylen, const void *val, size_t vallen, struct buf *out)
{
	struct seal_ad ad;

	idem_ad_row(&ad, table, key, keylen);
	return seal_seal(idem->seal, &ad, val, vallen, out);
}

/*
 * A replay's stored response, opened when sealed.  A store with a key
 * file takes only sealed responses, and one without cannot open them:
 * either mismatch is IDEM_ESEAL, never the stored bytes as they are.
 */
int
store_unseal_response(const struct sealer *seal, const char *scope,
    const char *key, struct rec *r, void **mem)
{
	struct buf plain = BUF_INIT;
	uint8_t id[SEAL_ID_SIZE];
	struct seal_ad ad;
	int sealed = rec_response_is_sealed(&r->resp), rc;

	if (seal == NULL && !sealed)
		return IDEM_OK;
	if (seal == NULL || !sealed) {
		idem_seal_log("a stored response", sealed ? "sealed, and no "
		    "key file is configured" : "not sealed, and a key file "
		    "is configured", NULL);
		return IDEM_ESEAL;
	}
	idem_ad_record(&ad, "record-response", scope, key);
	rc = seal_open(seal, &ad, r->resp.body, r->resp.bodylen, &plain, id);
	if (rc == IDEM_ESEAL)
		idem_seal_log("a stored response", NULL, id);
	if (rc == IDEM_OK)
		rc = rec_response_unpack(plain.data, plain.len, &r->resp, mem);
	buf_free(&plain);
	return rc;
}

int
store_unseal_point(const struct sealer *seal, const char *scope,
    const char *key, struct rec *r)
{
	struct buf plain = BUF_INIT;
	uint8_t id[SEAL_ID_SIZE];
	struct seal_ad ad;
	int rc;

	if (seal == NULL || r->cplen == 0)
		return IDEM_OK;
	idem_ad_record(&ad, "record-point", scope, key);
	rc = seal_open(seal, &ad, r->cp, r->cplen, &plain, id);
	if (rc != IDEM_OK) {
		if (rc == IDEM_ESEAL)
			idem_seal_log("a recovery point", NULL, id);
		buf_free(&plain);
		return rc;
	}
	if (plain.len == 0) {
		buf_free(&plain);
		rec_adopt_cp(r, NULL, 0);
	} else
		rec_adopt_cp(r, plain.data, plain.len);
	return IDEM_OK;
}

/* Key rolling: see store.h. */

struct idem_stale {
	const struct sealer *seal;
	struct buf *keys;
	size_t n;
	int rc;
};

static int
idem_stale_one(void *ctx, const void *key, size_t keylen, const void *val,
    size_t vallen)
{
	struct idem_stale *st = ctx;

	(void)keylen;
	if (seal_is_current(st->seal, val, vallen))
		return 0;
	if (keylen > UINT16_MAX ||
	    (st->rc = buf_put_u16(st->keys, (uint16_t)keylen)) != IDEM_OK ||
	    (st->rc = buf_append(st->keys, key, keylen)) != IDEM_OK)
		return 1;
	st->n++;
	return 0;
}

int
store_reseal_scan(struct idem *idem, const char *table, struct buf *keys,
    size_t *n)
{
	struct idem_stale st = { idem->seal, keys, 0, IDEM_OK };
	int rc;

	*n = 0;
	if (idem->seal == NULL)
		return IDEM_EINVAL;
	rc = store_scan(idem->store, table, NULL, 0, 0, 0, idem_stale_one,
	    &st);
	*n = st.n;
	return st.rc != IDEM_OK ? st.rc : rc;
}

struct idem_reseal {
	struct idem *idem;
	const char *table;
	const struct buf *keys;
	size_t off;          /* where this batch starts */
	size_t end;          /* where it ends, once run */
	size_t n;
	int plaintext;
	size_t moved;
	size_t failed;
	struct buf plain;
	struct buf sealed;
};

/* One row, inside the batch's write transaction. */
static int
store_reseal_one(struct idem_reseal *r, struct idem_tx *tx, const void *key,
    size_t keylen)
{
	struct seal_ad ad;
	const void *val;
	size_t vallen;
	uint8_t id[SEAL_ID_SIZE];
	int rc;

	rc = store_tx_get(tx, r->table, key, keylen, &val, &vallen);
	if (rc == IDEM_ENOTFOUND)
		return IDEM_OK;
	if (rc != IDEM_OK)
		return rc;
	if (seal_is_current(r->idem->seal, val, vallen))
		return IDEM_OK;
	buf_reset(&r->plain);
	buf_reset(&r->sealed);
	idem_ad_row(&ad, r->table, key, keylen);
	rc = seal_open(r->idem->seal, &ad, val, vallen, &r->plain, id);
	if (rc == IDEM_ESEAL) {
		size_t i;
		int known = 0;

		for (i = 0; i < r->idem->seal->nkeys; i++)
			known |= seal_value_id(val, vallen, id) == IDEM_OK &&
			    memcmp(id, r->idem->seal->keys[i].id,
			    SEAL_ID_SIZE) == 0;
		if (!r->plaintext || known) {
			idem_seal_log("a row", r->table, id);
			r->failed++;
			return IDEM_OK;
		}
		buf_reset(&r->plain);
		rc = buf_append(&r->plain, val, vallen);
	}
	if (rc != IDEM_OK ||
	    (rc = seal_seal(r->idem->seal, &ad, r->plain.data, r->plain.len,
	    &r->sealed)) != IDEM_OK ||
	    (rc = store_tx_put(tx, r->table, key, keylen, r->sealed.data,
	    r->sealed.len)) != IDEM_OK)
		return rc;
	r->moved++;
	return IDEM_OK;
}

/* The batch's hook: it may run more than once, so it starts afresh. */
static int
store_reseal_hook(void *ctx, struct idem_tx *tx)
{
	struct idem_reseal *r = ctx;
	const uint8_t *key;
	struct rd rd;
	uint16_t len;
	size_t i;
	int rc;

	r->moved = r->failed = 0;
	rd_init(&rd, r->keys->data + r->off, r->keys->len - r->off);
	for (i = 0; i < r->n && rd.left > 0; i++) {
		if ((rc = rd_u16(&rd, &len)) != IDEM_OK ||
		    (rc = rd_bytes(&rd, len, &key)) != IDEM_OK ||
		    (rc = store_reseal_one(r, tx, key, len)) != IDEM_OK)
			return rc;
	}
	r->end = r->keys->len - rd.left;
	return IDEM_OK;
}

/*
 * The batch runs as the hook of a claim of a key of its own, in a scope
 * no principal can have, released at once: the one write transaction
 * with a hook that every backend offers.
 */
#define IDEM_RESEAL_SCOPE "idem:reseal"

int
store_reseal_rows(struct idem *idem, const char *table,
    const struct buf *keys, size_t *off, size_t n, int plaintext,
    size_t *moved, size_t *failed)
{
	struct idem_reseal r;
	struct store_first first = { 0, NULL, 0, store_reseal_hook, &r, NULL };
	struct store_claim sc;
	uint8_t fp[FP_SIZE], token[REC_TOKEN_SIZE], raw[16];
	char key[2 * sizeof(raw) + 1];
	int rc;

	*moved = *failed = 0;
	if (idem->seal == NULL)
		return IDEM_EINVAL;
	memset(&r, 0, sizeof(r));
	r.idem = idem;
	r.table = table;
	r.keys = keys;
	r.off = r.end = *off;
	r.n = n;
	r.plaintext = plaintext;
	memset(fp, 0, sizeof(fp));
	crypto_random(token, sizeof(token));
	crypto_random(raw, sizeof(raw));
	crypto_hex(raw, sizeof(raw), key);
	memset(&sc, 0, sizeof(sc));
	rc = store_claim(idem->store, IDEM_RESEAL_SCOPE, key, fp, token,
	    idem_now_ms(idem), idem->lease_ms, idem->lease_ms, &first, &sc);
	rec_free(&sc.rec);
	if (rc == IDEM_OK && sc.decision != ENGINE_CLAIM)
		rc = IDEM_EIO;
	if (rc == IDEM_OK) {
		/* A claim left behind expires with its lease. */
		(void)store_release(idem->store, IDEM_RESEAL_SCOPE, key,
		    token, NULL, NULL);
		*off = r.end;
		*moved = r.moved;
		*failed = r.failed;
	}
	buf_free(&r.plain);
	buf_free(&r.sealed);
	return rc;
}

/* Whether r holds a sealed part not sealed under the current key. */
static int
idem_rec_stale(const struct sealer *seal, const struct rec *r)
{
	return r->state == REC_COMPLETED ?
	    !rec_response_is_sealed(&r->resp) ||
	    !seal_is_current(seal, r->resp.body, r->resp.bodylen) :
	    r->cplen > 0 && !seal_is_current(seal, r->cp, r->cplen);
}

static int
idem_stale_record(void *ctx, const char *scope, const char *key,
    const struct rec *r)
{
	struct idem_stale *st = ctx;

	if (!idem_rec_stale(st->seal, r))
		return 0;
	if (st->keys != NULL &&
	    ((st->rc = buf_append(st->keys, scope, strlen(scope) + 1)) !=
	    IDEM_OK ||
	    (st->rc = buf_append(st->keys, key, strlen(key) + 1)) != IDEM_OK))
		return 1;
	st->n++;
	return 0;
}

int
store_reseal_record_scan(struct idem *idem, struct buf *list, size_t *n)
{
	struct idem_stale st = { idem->seal, list, 0, IDEM_OK };
	int rc;

	*n = 0;
	if (idem->seal == NULL)
		return IDEM_EINVAL;
	rc = store_each(idem->store, idem_stale_record, &st);
	*n = st.n;
	return st.rc != IDEM_OK ? st.rc : rc;
}

/* What a record batch rewrites with; parts live until the next record. */
struct idem_rekey_rec {
	struct idem *idem;
	struct idem_sealed sealed;
	struct buf plain;
	struct buf point;
	void *mem;
};

/*
 * One record, inside the batch's write transaction.  Only what is
 * sealed under an older key is rewritten: a response in the clear is
 * left for its TTL, and one that does not open is left (and logged).
 */
static int
idem_rekey_rec(void *ctx, const char *scope, const char *key, struct rec *r,
    int *changed)
{
	struct idem_rekey_rec *x = ctx;
	const struct sealer *seal = x->idem->seal;
	uint8_t id[SEAL_ID_SIZE];
	struct seal_ad ad;
	void *mem = NULL;
	int rc;

	if (!idem_rec_stale(seal, r))
		return IDEM_OK;
	if (r->state == REC_COMPLETED) {
		if (!rec_response_is_sealed(&r->resp))
			return IDEM_OK;
		if ((rc = store_unseal_response(seal, scope, key, r, &mem)) !=
		    IDEM_OK)
			return rc == IDEM_ESEAL ? IDEM_OK : rc;
		free(x->mem);
		x->mem = mem;
		if ((rc = idem__seal_response(x->idem, scope, key, &r->resp,
		    &x->sealed)) != IDEM_OK)
			return rc;
		r->resp = x->sealed.rr;
		*changed = 1;
		return IDEM_OK;
	}
	buf_reset(&x->plain);
	buf_reset(&x->point);
	idem_ad_record(&ad, "record-point", scope, key);
	if ((rc = seal_open(seal, &ad, r->cp, r->cplen, &x->plain, id)) !=
	    IDEM_OK) {
		if (rc == IDEM_ESEAL)
			idem_seal_log("a recovery point", NULL, id);
		return rc == IDEM_ESEAL ? IDEM_OK : rc;
	}
	if ((rc = idem__seal_point(x->idem, scope, key, x->plain.data,
	    x->plain.len, &x->point)) != IDEM_OK)
		return rc;
	r->cp = (uint8_t *)x->point.data;
	r->cplen = x->point.len;
	*changed = 1;
	return IDEM_OK;
}

int
store_reseal_record_batch(struct idem *idem, const struct buf *list,
    size_t *off, size_t n)
{
	struct idem_rekey_rec x;
	const char **scopes, **keys;
	size_t i, pos = *off;
	int rc;

	if (idem->seal == NULL)
		return IDEM_EINVAL;
	if ((scopes = calloc(n + 1, sizeof(*scopes))) == NULL ||
	    (keys = calloc(n + 1, sizeof(*keys))) == NULL) {
		free(scopes);
		return IDEM_ENOMEM;
	}
	for (i = 0; i < n && pos < list->len; i++) {
		scopes[i] = list->data + pos;
		pos += strlen(scopes[i]) + 1;
		keys[i] = list->data + pos;
		pos += strlen(keys[i]) + 1;
	}
	memset(&x, 0, sizeof(x));
	x.idem = idem;
	rc = store_reseal(idem->store, scopes, keys, i, idem_rekey_rec, &x);
	if (rc == IDEM_OK)
		*off = pos;
	idem__sealed_free(&x.sealed);
	buf_free(&x.plain);
	buf_free(&x.point);
	free(x.mem);
	free(scopes);
	free(keys);
	return rc;
}

int
store_reseal_records(struct idem *idem, size_t *stale)
{
	struct idem_stale st = { idem->seal, NULL, 0, IDEM_OK };
	int rc;

	*stale = 0;
	if (idem->seal == NULL)
		return IDEM_EINVAL;
	rc = store_each(idem->store, idem_stale_record, &st);
	*stale = st.n;
	return rc;
}
