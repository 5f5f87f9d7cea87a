/*
 * idemctl: the operator's tool for an idem store.
 *
 *   idemctl stats             counts of keys, payments, charges, refunds
 *   idemctl purge [-n N] [-w MS]
 *                             delete expired keys, N per transaction, with
 *                             a pause of MS between transactions
 *   idemctl inspect SCOPE KEY one key's record (the key given, never listed)
 *   idemctl stuck             claims that may have charged and whose lease
 *                             ran out, keys shown by their keyhash
 *   idemctl hash-key [SECRET] the keys-file digest of an API secret
 *   idemctl new-key ACCOUNT   a fresh API secret and its keys-file line
 *
 * The store and ledger directories come from IDEM_DB_DIR and
 * IDEM_PROVIDER_DIR, as for the responder, or from -d and -p.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cfg.h"
#include "crypto.h"
#include "err.h"
#include "fault.h"
#include "handlers.h"
#include "idemctl_seal.h"
#include "keyhash.h"
#include "metrics.h"
#include "payment.h"
#include "provider.h"
#include "refund.h"
#include "store.h"

static struct config ctl_cfg;

static void
ctl_usage(void)
{
	fprintf(stderr, "usage: idemctl [-d db_dir] [-s store_uri] "
	    "[-p provider_dir]\n"
	    "               stats | purge [-n N] [-w MS] | inspect SCOPE KEY |"
	    " stuck |\n"
	    "               hash-key [SECRET] | new-key ACCOUNT | migrate\n");
	exit(2);
}

/* The idempotency store: IDEM_STORE or -s, else the LMDB one in db_dir. */
static const char *
ctl_where(void)
{
	return ctl_cfg.store[0] != '\0' ? ctl_cfg.store : ctl_cfg.db_dir;
}

/*
 * Brings a PostgreSQL store's schema up to date; an LMDB store needs
 * nothing.
 */
static int
ctl_migrate(void)
{
	char err[512];
	int from, to;

	if (!store_pg_uri(ctl_cfg.store)) {
		printf("schema: nothing to migrate (LMDB store)\n");
		return 0;
	}
	if (store_pg_migrate(ctl_cfg.store, &from, &to, err,
	    sizeof(err)) != 0) {
		fprintf(stderr, "idemctl: migrate: %s\n", err);
		return 1;
	}
	printf("schema: version %d%s\n", to, from == to ? " (up to date)" :
	    "");
	return 0;
}

static struct store *
ctl_store(int read_only)
{
	const char *where = ctl_where();
	struct store_config sc = { where, ctl_cfg.map_size, read_only,
	    ctl_cfg.keys_per_account, 0, pay_tables, NULL };
	struct store *s;
	int rc;

	if ((rc = store_open(&sc, &s)) != IDEM_OK) {
		fprintf(stderr, "idemctl: store %s: %s\n", where,
		    idem_strerror(rc));
		exit(1);
	}
	return s;
}

struct ctl_stats {
	size_t keys, completed, in_progress, stuck, pending;
	uint64_t now;
};

static int
ctl_count(void *ctx, const char *scope, const char *key, const struct rec *r)
{
	struct ctl_stats *st = ctx;

	(void)scope;
	(void)key;
	st->keys++;
	if (r->state == REC_COMPLETED)
		st->completed++;
	else {
		st->in_progress++;
		if (r->lease_ms <= st->now)
			st->stuck++;
		if (r->stage != 0)
			st->pending++;
	}
	return 0;
}

static int
ctl_stats(void)
{
	struct provider_config pc = { ctl_cfg.provider_dir, ctl_cfg.map_size,
	    0, PROVIDER_FAIL_NONE, 0,
	    ctl_cfg.provider_url[0] != '\0' ? ctl_cfg.provider_url : NULL,
	    ctl_cfg.provider_timeout_ms };
	struct ctl_stats st = { 0, 0, 0, 0, 0, clock_now_ms() };
	struct provider *p;
	struct store *s = ctl_store(0);
	size_t payments = 0, charges = 0, declines = 0, refunds = 0;
	size_t refunded = 0;
	int rc;

	if ((rc = store_each(s, ctl_count, &st)) != IDEM_OK ||
	    (rc = store_count(s, PAY_TABLE_PAYMENTS, &payments)) != IDEM_OK ||
	    (rc = store_count(s, REFUND_TABLE_REFUNDS, &refunds)) != IDEM_OK) {
		fprintf(stderr, "idemctl: %s\n", idem_strerror(rc));
		store_close(s);
		return 1;
	}
	store_close(s);
	p = NULL;
	if ((rc = provider_open(&pc, &p)) != IDEM_OK ||
	    (rc = provider_count(p, &charges, &declines)) != IDEM_OK ||
	    (rc = provider_count_refunds(p, &refunded)) != IDEM_OK) {
		fprintf(stderr, "idemctl: provider %s: %s\n",
		    pc.url != NULL ? pc.url : ctl_cfg.provider_dir,
		    idem_strerror(rc));
		provider_close(p);	/* NULL when it did not open */
		return 1;
	}
	provider_close(p);
	printf("keys: %zu\ncompleted: %zu\nin_progress: %zu\nstuck: %zu\n"
	    "pending: %zu\npayments: %zu\ncharges: %zu\ndeclines: %zu\n"
	    "refunds: %zu\nprovider_refunds: %zu\n",
	    st.keys, st.completed, st.in_progress, st.stuck, st.pending,
	    payments, charges, declines, refunds, refunded);
	return 0;
}

static int
ctl_purge(int argc, char *argv[])
{
	struct timespec pause = { 0, 0 };
	struct store *s;
	size_t batch = 1000, n, total = 0;
	unsigned long ms = 2;
	char *end;
	int rc, ch;

	optind = 1;
	while ((ch = getopt(argc, argv, "n:w:")) != -1) {
		if (ch == 'n' && (batch = strtoul(optarg, &end, 10)) > 0 &&
		    *end == '\0')
			continue;
		if (ch == 'w' && (ms = strtoul(optarg, &end, 10)) <= 1000 &&
		    *end == '\0')
			continue;
		ctl_usage();
	}
	pause.tv_sec = (time_t)(ms / 1000);
	pause.tv_nsec = (long)(ms % 1000) * 1000000L;
	s = ctl_store(0);
	metrics_open(ctl_cfg.db_dir);
	/* Bounded batches keep each write transaction short. */
	do {
		if ((rc = store_purge(s, clock_now_ms(), batch, &n)) !=
		    IDEM_OK) {
			fprintf(stderr, "idemctl: purge: %s\n",
			    idem_strerror(rc));
			store_close(s);
			return 1;
		}
		total += n;
		metrics_add(METRIC_PURGED, n);
		/*
		 * LMDB's write lock is not fair: taken again at once, it could
		 * shut the responders' commits out for the whole purge.  A
		 * short pause between batches lets them in.
		 */
		if (n == batch && ms > 0)
			nanosleep(&pause, NULL);
	} while (n == batch);
	store_close(s);
	printf("purged: %zu\n", total);
	return 0;
}

static const char *
ctl_state(const struct rec *r, uint64_t now)
{
	if (r->state == REC_COMPLETED)
		return "completed";
	return r->lease_ms > now ? "in_progress" : "lease_expired";
}

static void
ctl_show(const char *scope, const char *keyhash, const struct rec *r,
    uint64_t now)
{
	printf("scope: %s\nkeyhash: %s\nstate: %s\nattempts: %u\n"
	    "stage: %u\ncreated_ms: %llu\nexpires_ms: %llu\n", scope, keyhash,
	    ctl_state(r, now), r->attempts, r->stage,
	    (unsigned long long)r->created_ms,
	    (unsigned long long)r->expires_ms);
	if (r->state == REC_COMPLETED)
		printf("status: %d\nbody_bytes: %zu\n", r->resp.status,
		    r->resp.bodylen);
	else
		printf("lease_ms: %llu\n", (unsigned long long)r->lease_ms);
}

/*
 * The key as the responder's log names it (keyhash.h), so an operator
 * can find its lines; "-" when no worker has made the secret yet.  The
 * secret is only read here: created by idemctl running as another user,
 * it would lock the workers out of it.
 */
static void
ctl_keyhash(const char *scope, const char *key, char out[KEYHASH_HEX + 1])
{
	static struct keyhash kh;
	static int loaded = -1;
	uint8_t secret[KEYHASH_SECRET_SIZE];
	char err[64];

	if (loaded == -1 && (loaded = keyhash_secret_load(ctl_cfg.db_dir, 0,
	    secret, err, sizeof(err)) == 0))
		keyhash_init(&kh, secret);
	if (loaded)
		keyhash_compute(&kh, scope, key, out);
	else
		snprintf(out, KEYHASH_HEX + 1, "-");
}

static int
ctl_inspect(const char *scope, const char *key)
{
	char hash[KEYHASH_HEX + 1];
	struct store *s = ctl_store(0);
	struct rec r;
	int rc;

	rc = store_lookup(s, scope, key, &r);
	store_close(s);
	if (rc == IDEM_ENOTFOUND) {
		printf("absent\n");
		return 3;
	}
	if (rc != IDEM_OK) {
		fprintf(stderr, "idemctl: %s\n", idem_strerror(rc));
		return 1;
	}
	ctl_keyhash(scope, key, hash);
	ctl_show(scope, hash, &r, clock_now_ms());
	rec_free(&r);
	return 0;
}

static int
ctl_stuck_one(void *ctx, const char *scope, const char *key,
    const struct rec *r)
{
	char hash[KEYHASH_HEX + 1];
	uint64_t now = *(uint64_t *)ctx;

	if (r->lease_ms > now)
		return 0;
	ctl_keyhash(scope, key, hash);
	printf("%s %s attempts=%u stage=%u lease_ended_s_ago=%llu\n",
	    scope, hash, r->attempts, r->stage,
	    (unsigned long long)((now - r->lease_ms) / 1000));
	return 0;
}

static int
ctl_stuck(void)
{
	struct store *s = ctl_store(0);
	uint64_t now = clock_now_ms();
	int rc;

	rc = store_each_pending(s, ctl_stuck_one, &now);
	store_close(s);
	if (rc != IDEM_OK) {
		fprintf(stderr, "idemctl: %s\n", idem_strerror(rc));
		return 1;
	}
	return 0;
}

static int
ctl_hash_key(const char *secret)
{
	char line[512], hex[2 * CRYPTO_SHA256_SIZE + 1];
	uint8_t d[CRYPTO_SHA256_SIZE];

	/* Reading the secret from stdin keeps it out of the process list. */
	if (secret == NULL) {
		if (fgets(line, sizeof(line), stdin) == NULL)
			ctl_usage();
		line[strcspn(line, "\r\n")] = '\0';
		secret = line;
	}
	crypto_sha256(secret, strlen(secret), d);
	crypto_hex(d, sizeof(d), hex);
	printf("%s\n", hex);
	return 0;
}

static int
ctl_new_key(const char *account)
{
	char secret[64], hex[2 * CRYPTO_SHA256_SIZE + 1];
	uint8_t raw[24], d[CRYPTO_SHA256_SIZE];

	crypto_random(raw, sizeof(raw));
	memcpy(secret, "sk_", 3);
	crypto_hex(raw, sizeof(raw), secret + 3);
	crypto_sha256(secret, strlen(secret), d);
	crypto_hex(d, sizeof(d), hex);
	printf("secret: %s\nkeys file line: %s %s\n", secret, account, hex);
	return 0;
}

int
main(int argc, char *argv[])
{
	char err[256];
	int ch;

	if (crypto_init() != IDEM_OK || provider_global_init() != IDEM_OK || config_load(&ctl_cfg, err,
	    sizeof(err)) != 0) {
		fprintf(stderr, "idemctl: %s\n", err);
		return 1;
	}
	while ((ch = getopt(argc, argv, "+d:p:s:")) != -1) {
		switch (ch) {
		case 's':
			if (!store_pg_uri(optarg) ||
			    strlen(optarg) >= sizeof(ctl_cfg.store)) {
				fprintf(stderr, "idemctl: -s takes a "
				    "postgresql:// URI\n");
				return 2;
			}
			snprintf(ctl_cfg.store, sizeof(ctl_cfg.store), "%s",
			    optarg);
			break;
		case 'd':
			snprintf(ctl_cfg.db_dir, sizeof(ctl_cfg.db_dir), "%s",
			    optarg);
			break;
		case 'p':
			snprintf(ctl_cfg.provider_dir,
			    sizeof(ctl_cfg.provider_dir), "%s", optarg);
			break;
		default:
			ctl_usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		ctl_usage();
	if (strcmp(argv[0], "stats") == 0 && argc == 1)
		return ctl_stats();
	if (strcmp(argv[0], "purge") == 0)
		return ctl_purge(argc, argv);
	if (strcmp(argv[0], "inspect") == 0 && argc == 3)
		return ctl_inspect(argv[1], argv[2]);
	if (strcmp(argv[0], "stuck") == 0 && argc == 1)
		return ctl_stuck();
	if (strcmp(argv[0], "hash-key") == 0 && argc <= 2)
		return ctl_hash_key(argc == 2 ? argv[1] : NULL);
	if (strcmp(argv[0], "new-key") == 0 && argc == 2)
		return ctl_new_key(argv[1]);
	if (strcmp(argv[0], "migrate") == 0 && argc == 1)
		return ctl_migrate();
	if (strcmp(argv[0], "new-secret") == 0)
		return ctl_new_secret(argc, argv);
	if (strcmp(argv[0], "rekey") == 0)
		return ctl_rekey(&ctl_cfg, argc, argv);
	ctl_usage();
	return 2;
}
