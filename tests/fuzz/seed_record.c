/* SPDX-License-Identifier: MIT */
/*
 * seed_record.c: writes the seed corpus of fuzz_record into a directory,
 * one file per record, each encoded by rec_encode from a record shaped
 * like those the store keeps: a fresh claim, a claim at its recovery
 * point, one taken over, and completed payments, declines and refusals.
 * The seeds are made when the fuzzer runs, not kept in the tree, so they
 * follow the encoding when it changes.
 *
 *	seed_record DIR
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "crypto.h"
#include "err.h"
#include "fp.h"
#include "record.h"

/* A time in 2025, in milliseconds, and the default TTL and lease. */
#define SEED_NOW	1748779200123ULL
#define SEED_TTL	(24ULL * 3600 * 1000)
#define SEED_LEASE	(30ULL * 1000)

/* The canonical form of {"amount": 100.00, "currency": "BRL"}. */
static const char seed_canon[] = "{\"amount\":1e2,\"currency\":\"BRL\"}";
static const char seed_id[] = "pay_3f9a0c1d2e4b5a6978c1d0e2";

static int
seed_write(const char *dir, const char *name, const struct rec *r)
{
	struct buf b = BUF_INIT;
	char path[4096];
	FILE *f;
	int ok;

	if (rec_encode(r, &b) != IDEM_OK) {
		fprintf(stderr, "seed_record: %s: cannot encode\n", name);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "wb")) == NULL) {
		perror(path);
		buf_free(&b);
		return -1;
	}
	ok = fwrite(b.data, 1, b.len, f) == b.len;
	if (fclose(f) != 0)
		ok = 0;
	if (!ok)
		perror(path);
	buf_free(&b);
	return ok ? 0 : -1;
}

/* A claim as store_claim makes it for the quick start's first payment. */
static void
seed_claim(struct rec *r)
{
	size_t i;

	memset(r, 0, sizeof(*r));
	r->state = REC_IN_PROGRESS;
	fp_compute(FP_CANONICAL, "POST", "/payments", "", seed_canon,
	    strlen(seed_canon), r->fp);
	for (i = 0; i < REC_TOKEN_SIZE; i++)
		r->token[i] = (uint8_t)(0x5a ^ (i * 37));
	r->created_ms = SEED_NOW;
	r->expires_ms = SEED_NOW + SEED_TTL;
	r->lease_ms = SEED_NOW + SEED_LEASE;
	r->attempts = 1;
}

/* The recovery point handlers.c writes: the payment id, be64 time. */
static void
seed_checkpoint(struct buf *cp)
{
	buf_append(cp, seed_id, strlen(seed_id));
	buf_put_u64(cp, SEED_NOW + 5);
}

/* A completed record: the claim, then the answer, token cleared. */
static void
seed_complete(struct rec *r, int status, const char *ctype,
    const char *body)
{
	r->state = REC_COMPLETED;
	memset(r->token, 0, sizeof(r->token));
	r->resp.status = status;
	r->resp.nheaders = 0;
	if (ctype != NULL) {
		r->resp.headers[0].name = (char *)"Content-Type";
		r->resp.headers[0].value = (char *)ctype;
		r->resp.nheaders = 1;
	}
	r->resp.body = (uint8_t *)body;
	r->resp.bodylen = body != NULL ? strlen(body) : 0;
}

static int
seed_all(const char *dir)
{
	static char names[REC_MAX_HEADERS][16], values[REC_MAX_HEADERS][24];
	static uint8_t bigcp[REC_MAX_CHECKPOINT];
	struct buf cp = BUF_INIT, body = BUF_INIT;
	struct rec r;
	char location[64], etag[20], hex[2 * CRYPTO_SHA256_SIZE + 1];
	uint8_t d[CRYPTO_SHA256_SIZE];
	size_t i;
	int rc = 0;

	seed_claim(&r);
	rc |= seed_write(dir, "claim", &r);

	seed_checkpoint(&cp);
	r.stage = 1;
	r.cp = (uint8_t *)cp.data;
	r.cplen = cp.len;
	rc |= seed_write(dir, "checkpoint", &r);

	/* Taken over twice after the lease ran out. */
	r.attempts = 3;
	r.lease_ms = SEED_NOW + 3 * SEED_LEASE + 7;
	rc |= seed_write(dir, "takeover", &r);

	/* The 201 the quick start's first payment is replayed from. */
	r.attempts = 1;
	buf_printf(&body, "{\"id\":\"%s\",\"amount\":100.00,\"currency\":"
	    "\"BRL\",\"status\":\"succeeded\",\"charge_id\":\"ch_%.24s\","
	    "\"created_at\":\"2025-06-01T12:00:00Z\"}", seed_id,
	    seed_id + 4);
	seed_complete(&r, 201, "application/json", body.data);
	snprintf(location, sizeof(location), "/payments/%s", seed_id);
	crypto_sha256(body.data, body.len, d);
	crypto_hex(d, sizeof(d), hex);
	snprintf(etag, sizeof(etag), "\"%.16s\"", hex);
	r.resp.headers[1].name = (char *)"Location";
	r.resp.headers[1].value = location;
	r.resp.headers[2].name = (char *)"ETag";
	r.resp.headers[2].value = etag;
	r.resp.nheaders = 3;
	rc |= seed_write(dir, "created", &r);

	seed_complete(&r, 402, "application/problem+json",
	    "{\"type\":\"/problems/payment-declined\",\"title\":\"Payment "
	    "declined\",\"status\":402,\"detail\":\"The card was declined.\"}");
	rc |= seed_write(dir, "declined", &r);

	/* A validation error is final and stored before any checkpoint. */
	r.stage = 0;
	r.cp = NULL;
	r.cplen = 0;
	seed_complete(&r, 400, "application/problem+json",
	    "{\"type\":\"/problems/invalid-amount\",\"title\":\"Invalid "
	    "amount\",\"status\":400,\"detail\":\"BRL has 2 minor units.\"}");
	rc |= seed_write(dir, "invalid", &r);

	seed_complete(&r, 204, NULL, NULL);
	rc |= seed_write(dir, "empty", &r);

	/* Every limit at once. */
	for (i = 0; i < sizeof(bigcp); i++)
		bigcp[i] = (uint8_t)(i * 131);
	r.stage = UINT32_MAX;
	r.cp = bigcp;
	r.cplen = sizeof(bigcp);
	r.attempts = UINT32_MAX;
	r.lease_ms = UINT64_MAX;
	r.expires_ms = UINT64_MAX;
	for (i = 0; i < REC_MAX_HEADERS; i++) {
		snprintf(names[i], sizeof(names[i]), "X-Seed-%zu", i);
		snprintf(values[i], sizeof(values[i]), "%zu", i * 1000003);
		r.resp.headers[i].name = names[i];
		r.resp.headers[i].value = i == 2 ? (char *)"" : values[i];
	}
	r.resp.nheaders = REC_MAX_HEADERS;
	r.resp.status = 999;
	rc |= seed_write(dir, "limits", &r);

	buf_free(&cp);
	buf_free(&body);
	return rc;
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: seed_record DIR\n");
		return 2;
	}
	if (crypto_init() != 0) {
		fprintf(stderr, "seed_record: cannot initialise libsodium\n");
		return 1;
	}
	return seed_all(argv[1]) == 0 ? 0 : 1;
}
