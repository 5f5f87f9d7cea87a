/* SPDX-License-Identifier: MIT */
/*
 * claimctl: what the CGI fixtures cannot do through the programs they
 * test, done to the store of the scenario's environment (IDEM_STORE or
 * IDEM_DB_DIR, as idemctl reads them) below the library:
 *
 *	claimctl lose SCOPE KEY
 *		The in-progress record of (SCOPE, KEY) is gone, as a failover
 *		that lost commits or a restore from a backup loses it: deleted
 *		with its owner's token, which changes nothing else (the key's
 *		generation stays where it was).
 *
 *	claimctl legacy-charge SCOPE KEY AMOUNT CURRENCY
 *		The in-progress record of (SCOPE, KEY) becomes what a release
 *		before key generations left when its worker died after the
 *		provider charged: a record that knows no generation, and a
 *		charge of AMOUNT minor units under that release's provider key,
 *		"charge:SCOPE:KEY:CREATED" (IDEM_PROVIDER, IDEM_PROVIDER_DIR).
 *		Prints the charge's id.
 *
 * Exit 0, or 1 with a message on stderr.  For tests only: never
 * installed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cfg.h"
#include "err.h"
#include "provider.h"
#include "record.h"
#include "shared.h"
#include "store.h"

static struct store *
claimctl_store(const struct config *cfg)
{
	const char *where = cfg->store[0] != '\0' ? cfg->store : cfg->db_dir;
	struct store_config sc;
	struct store *s;
	int rc;

	memset(&sc, 0, sizeof(sc));
	sc.dir = where;
	sc.map_size = cfg->map_size;
	sc.max_keys_per_scope = cfg->keys_per_account;
	sc.tables = pay_tables;
	if ((rc = store_open(&sc, &s)) != IDEM_OK) {
		fprintf(stderr, "claimctl: store %s: %s\n", where,
		    idem_strerror(rc));
		exit(1);
	}
	return s;
}

static int
claimctl_lose(struct store *s, const char *scope, const char *key)
{
	struct rec r;
	int rc;

	if ((rc = store_lookup(s, scope, key, &r)) != IDEM_OK) {
		fprintf(stderr, "claimctl: %s %s: %s\n", scope, key,
		    idem_strerror(rc));
		return 1;
	}
	if (r.state != REC_IN_PROGRESS) {
		fprintf(stderr, "claimctl: %s %s: not in progress\n", scope,
		    key);
		rec_free(&r);
		return 1;
	}
	rc = store_release(s, scope, key, r.token, NULL, NULL);
	rec_free(&r);
	if (rc != IDEM_OK) {
		fprintf(stderr, "claimctl: release: %s\n", idem_strerror(rc));
		return 1;
	}
	return 0;
}

/* store_reseal's callback: the record forgets its generation. */
static int
claimctl_unknow_gen(void *ctx, const char *scope, const char *key,
    struct rec *r, int *changed)
{
	uint64_t *created = ctx;

	(void)scope;
	(void)key;
	*created = r->created_ms;
	r->gen = REC_GEN_LEGACY;
	*changed = 1;
	return IDEM_OK;
}

static int
claimctl_legacy_charge(const struct config *cfg, struct store *s,
    const char *scope, const char *key, const char *amount,
    const char *currency)
{
	struct provider_config pc;
	struct provider_charge ch;
	struct provider *p;
	struct buf pkey = BUF_INIT;
	uint64_t created = 0;
	char err[512];
	int rc;

	if ((rc = store_reseal(s, &scope, &key, 1, claimctl_unknow_gen,
	    &created)) != IDEM_OK || created == 0) {
		fprintf(stderr, "claimctl: %s %s: %s\n", scope, key,
		    rc != IDEM_OK ? idem_strerror(rc) : "no record");
		return 1;
	}
	if (config_provider_check(cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "claimctl: %s\n", err);
		return 1;
	}
	config_provider(cfg, &pc);
	if ((rc = provider_open(&pc, &p)) != IDEM_OK) {
		fprintf(stderr, "claimctl: provider: %s\n", idem_strerror(rc));
		return 1;
	}
	rc = buf_printf(&pkey, "charge:%s:%s:%" PRIu64, scope, key, created);
	if (rc == IDEM_OK)
		rc = provider_charge(p, pkey.data, strtoll(amount, NULL, 10),
		    currency, created, &ch);
	provider_close(p);
	buf_free(&pkey);
	if (rc != IDEM_OK || ch.outcome != PROVIDER_CHARGED) {
		fprintf(stderr, "claimctl: the provider did not charge\n");
		return 1;
	}
	printf("%s\n", ch.id);
	return 0;
}

int
main(int argc, char **argv)
{
	struct config cfg;
	struct store *s;
	char err[512];
	int rc;

	if (config_load(&cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "claimctl: %s\n", err);
		return 1;
	}
	if (argc == 4 && strcmp(argv[1], "lose") == 0) {
		s = claimctl_store(&cfg);
		rc = claimctl_lose(s, argv[2], argv[3]);
	} else if (argc == 6 && strcmp(argv[1], "legacy-charge") == 0) {
		s = claimctl_store(&cfg);
		rc = claimctl_legacy_charge(&cfg, s, argv[2], argv[3], argv[4],
		    argv[5]);
	} else {
		fprintf(stderr, "usage: claimctl lose SCOPE KEY\n"
		    "       claimctl legacy-charge SCOPE KEY AMOUNT CURRENCY\n");
		return 2;
	}
	store_close(s);
	return rc;
}
