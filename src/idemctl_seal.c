/* SPDX-License-Identifier: MIT */
/*
 * idemctl_seal.c: idemctl new-secret and idemctl rekey.
 *
 * new-secret makes a key file and prints nothing of the key: only its
 * id, which sealed values and log lines carry.  rekey rewrites every
 * row not sealed under the file's first key, table by table, in
 * batches of N rows, each batch one write transaction of its own (so it
 * runs while the responders serve), with a pause between batches for
 * the responders' writes, and prints its progress; then the idempotency
 * records the same way, where the store can rewrite them (LMDB; on
 * PostgreSQL they go with their TTL).  A second run finds nothing to do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "idem.h"
#include "idemctl.h"
#include "idemctl_seal.h"
#include "seal.h"
#include "shared.h"
#include "store.h"

int
ctl_new_secret(int argc, char **argv)
{
	char err[512], hex[2 * SEAL_ID_SIZE + 1];
	struct sealer *s;

	if (argc != 2) {
		fprintf(stderr, "usage: idemctl new-secret FILE\n");
		return 2;
	}
	if (seal_new_file(argv[1], err, sizeof(err)) != IDEM_OK ||
	    seal_load(argv[1], &s, err, sizeof(err)) != IDEM_OK) {
		fprintf(stderr, "idemctl: new-secret: %s\n", err);
		return 1;
	}
	seal_id_hex(s->keys[0].id, hex);
	seal_free(s);
	printf("key file: %s\nkey id: %s\n", argv[1], hex);
	return 0;
}

struct ctl_rekey {
	struct idem *idem;
	size_t batch;
	struct timespec pause;
	int plaintext;
	size_t moved;
	size_t failed;
};

/* One table: its stale keys listed once, then rewritten in batches. */
static int
ctl_rekey_table(struct ctl_rekey *k, const char *table)
{
	struct buf keys = BUF_INIT;
	size_t n, done = 0, off = 0, step, moved, failed;
	int rc;

	if ((rc = store_reseal_scan(k->idem, table, &keys, &n)) != IDEM_OK)
		goto out;
	while (done < n) {
		step = n - done < k->batch ? n - done : k->batch;
		if ((rc = store_reseal_rows(k->idem, table, &keys, &off, step,
		    k->plaintext, &moved, &failed)) != IDEM_OK)
			goto out;
		done += step;
		k->moved += moved;
		k->failed += failed;
		printf("rekey: %s %zu/%zu\n", table, done, n);
		fflush(stdout);
		/* As purge: LMDB's write lock is not fair. */
		if (done < n)
			nanosleep(&k->pause, NULL);
	}
out:
	buf_free(&keys);
	if (rc != IDEM_OK)
		fprintf(stderr, "idemctl: rekey: %s: %s\n", table,
		    idem_strerror(rc));
	return rc;
}

/* The idempotency records sealed under older keys, in batches. */
static int
ctl_rekey_records(struct ctl_rekey *k)
{
	struct buf list = BUF_INIT;
	size_t n, done = 0, off = 0, step;
	int rc;

	if ((rc = store_reseal_record_scan(k->idem, &list, &n)) != IDEM_OK)
		goto out;
	while (done < n) {
		step = n - done < k->batch ? n - done : k->batch;
		if ((rc = store_reseal_record_batch(k->idem, &list, &off,
		    step)) != IDEM_OK)
			goto out;
		done += step;
		printf("rekey: records %zu/%zu\n", done, n);
		fflush(stdout);
		if (done < n)
			nanosleep(&k->pause, NULL);
	}
out:
	buf_free(&list);
	if (rc != IDEM_OK)
		fprintf(stderr, "idemctl: rekey: records: %s\n",
		    idem_strerror(rc));
	return rc;
}

int
ctl_rekey(const struct config *cfg, int argc, char **argv)
{
	struct idem_options opt;
	struct ctl_rekey k;
	unsigned long ms = 2;
	size_t i, stale = 0;
	char *end;
	int ch, rc = IDEM_OK;

	memset(&k, 0, sizeof(k));
	k.batch = 500;
	optind = 1;
	while ((ch = getopt(argc, argv, "n:w:P")) != -1) {
		if (ch == 'n' && (k.batch = strtoul(optarg, &end, 10)) > 0 &&
		    *end == '\0')
			continue;
		if (ch == 'w' && (ms = strtoul(optarg, &end, 10)) <= 1000 &&
		    *end == '\0')
			continue;
		if (ch == 'P') {
			k.plaintext = 1;
			continue;
		}
		fprintf(stderr, "usage: idemctl rekey [-n N] [-w MS] [-P]\n");
		return 2;
	}
	if (cfg->secret_file[0] == '\0') {
		fprintf(stderr, "idemctl: rekey: IDEM_SECRET_FILE names no "
		    "key file\n");
		return 1;
	}
	k.pause.tv_sec = (time_t)(ms / 1000);
	k.pause.tv_nsec = (long)(ms % 1000) * 1000000L;
	ctl_need_store();
	memset(&opt, 0, sizeof(opt));
	opt.size = sizeof(opt);
	opt.dir = cfg->store[0] != '\0' ? cfg->store : cfg->db_dir;
	opt.map_size = cfg->map_size;
	opt.tables = pay_tables;
	opt.secret_file = cfg->secret_file;
	if ((rc = idem_open(&opt, &k.idem)) != IDEM_OK) {
		fprintf(stderr, "idemctl: store %s: %s\n", opt.dir,
		    idem_strerror(rc));
		return 1;
	}
	for (i = 0; pay_tables[i] != NULL && rc == IDEM_OK; i++)
		rc = ctl_rekey_table(&k, pay_tables[i]);
	if (rc == IDEM_OK)
		rc = ctl_rekey_records(&k);
	if (rc == IDEM_OK)
		rc = store_reseal_records(k.idem, &stale);
	idem_close(k.idem);
	if (rc != IDEM_OK)
		return 1;
	printf("rows resealed: %zu\nrows that did not open: %zu\n"
	    "records under older keys: %zu\n", k.moved, k.failed, stale);
	return k.failed != 0;
}
