/* SPDX-License-Identifier: MIT */
/*
 * old.c: a program built with the baseline idem.h (tests/abi/), run by
 * tests/abi.test on this build's shared library.  Its options are the
 * baseline's struct, in a block exactly that large (so ASan sees any read
 * past it): what it sets must be what the library uses (the TTL, the
 * clock, the tables), and what it leaves zero must be the default (a
 * 30-second lease).  Smaller options are refused.  Prints "old: ok" and
 * exits 0, or names the first check that failed and exits 1.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <idem.h>

#define T0 1700000000000ULL
#define TTL_MS 60000ULL

#define CHECK(c) do {							\
	if (!(c)) {							\
		fprintf(stderr, "old: line %d: %s\n", __LINE__, #c);	\
		return 1;						\
	}								\
} while (0)

static uint64_t now_ms = T0;

static uint64_t
old_clock(void *ctx)
{
	return *(const uint64_t *)ctx;
}

static int
old_row(void *ctx, struct idem_tx *tx)
{
	return idem_tx_put(tx, "orders", ctx, strlen(ctx), "paid", 4);
}

/* idem_begin's verdict for key, the call in *c (NULL on an error). */
static int
old_begin(struct idem *db, const char *key, const uint8_t *fp,
    struct idem_call **c)
{
	if (idem_begin(db, "acct", key, fp, NULL, NULL, c) != IDEM_OK) {
		*c = NULL;
		return -1;
	}
	return (int)idem_call_verdict(*c);
}

static int
old_run(struct idem *db)
{
	static const struct idem_header h = { "Content-Type", "text/plain" };
	const struct idem_response resp = { 201, &h, 1, "made", 4 };
	uint8_t fp[IDEM_FP_SIZE], other[IDEM_FP_SIZE];
	struct idem_call *first, *c;
	void *val;
	size_t len, n;

	idem_fingerprint(IDEM_FP_RAW, "POST", "/orders", NULL, "a", 1, fp);
	idem_fingerprint(IDEM_FP_RAW, "POST", "/orders", NULL, "b", 1, other);
	CHECK(old_begin(db, "k1", fp, &first) == IDEM_RUN);
	/* The default lease: 30 s, so a duplicate at 29 s waits... */
	now_ms = T0 + 29000;
	CHECK(old_begin(db, "k1", fp, &c) == IDEM_CONFLICT);
	CHECK(idem_call_retry_after(c) == 1);	/* the lease's last second */
	idem_call_free(c);
	/* ...and one at 31 s takes the claim over. */
	now_ms = T0 + 31000;
	CHECK(old_begin(db, "k1", fp, &c) == IDEM_RESUME);
	CHECK(idem_call_attempts(c) == 2);
	CHECK(idem_finish(first, &resp, NULL, NULL) == IDEM_ELOST);
	idem_call_free(first);
	CHECK(idem_finish(c, &resp, old_row, "k1") == IDEM_OK);
	idem_call_free(c);

	CHECK(old_begin(db, "k1", fp, &c) == IDEM_REPLAY);
	CHECK(idem_call_response(c)->status == 201);
	CHECK(idem_call_response(c)->bodylen == 4 &&
	    memcmp(idem_call_response(c)->body, "made", 4) == 0);
	idem_call_free(c);
	CHECK(old_begin(db, "k1", other, &c) == IDEM_MISMATCH);
	idem_call_free(c);
	CHECK(idem_row_get(db, "orders", "k1", 2, &val, &len) == IDEM_OK);
	CHECK(len == 4 && memcmp(val, "paid", 4) == 0);
	free(val);
	CHECK(idem_row_count(db, "orders", &n) == IDEM_OK && n == 1);

	/* The TTL it set, one minute by its clock: then the key is new. */
	now_ms = T0 + 31000 + TTL_MS + 1000;
	CHECK(old_begin(db, "k1", other, &c) == IDEM_RUN);
	CHECK(idem_call_attempts(c) == 1);
	CHECK(idem_release(c, NULL, NULL) == IDEM_OK);
	idem_call_free(c);
	return 0;
}

int
main(int argc, char **argv)
{
	static const char *const tables[] = { "orders", NULL };
	struct idem_options *opt;
	struct idem *db;
	unsigned major, minor, patch;
	int rc;

	CHECK(argc == 2);
	CHECK(idem_version_number() >= IDEM_VERSION_NUMBER);
	CHECK(sscanf(idem_version(), "%u.%u.%u", &major, &minor, &patch) == 3);
	CHECK((int)(major * 10000 + minor * 100 + patch) ==
	    idem_version_number());

	CHECK((opt = malloc(sizeof(*opt))) != NULL);
	memset(opt, 0, sizeof(*opt));
	opt->dir = argv[1];
	opt->ttl_ms = TTL_MS;
	opt->tables = tables;
	opt->clock = old_clock;
	opt->clock_ctx = &now_ms;
	opt->size = 0;
	CHECK(idem_open(opt, &db) == IDEM_EINVAL && db == NULL);
	opt->size = offsetof(struct idem_options, secret_file);
	CHECK(idem_open(opt, &db) == IDEM_EINVAL && db == NULL);
	opt->size = sizeof(*opt);
	CHECK(idem_open(opt, &db) == IDEM_OK);
	free(opt);

	rc = old_run(db);
	idem_close(db);
	if (rc == 0)
		printf("old: ok\n");
	return rc;
}
