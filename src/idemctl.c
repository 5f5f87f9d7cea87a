/* SPDX-License-Identifier: MIT */
/*
 * idemctl: the operator's tool for an idem store.
 *
 *   idemctl stats [--json]    counts of keys, payments, charges, refunds
 *   idemctl purge [-n N] [-w MS] [--json]
 *                             delete expired keys, N per transaction, with
 *                             a pause of MS between transactions
 *   idemctl resume [-n N] [--limit N] [--all] [--json]
 *                             end the claims whose lease ran out, without
 *                             their clients (resume.h)
 *   idemctl inspect [--json] SCOPE KEY
 *                             one key's record (the key given, never listed)
 *   idemctl stuck [--json]    claims that may have charged and whose lease
 *                             ran out, keys shown by their keyhash
 *   idemctl hash-key [SECRET] the keys-file digest of an API secret
 *   idemctl new-key ACCOUNT   a fresh API secret and its keys-file line
 *   idemctl migrate [--to V]  bring a PostgreSQL store's schema up to date,
 *                             or to version V (a rolling upgrade's expand)
 *   idemctl new-secret FILE, idemctl rekey
 *                             the keys that seal the store (idemctl_seal.c)
 *
 * The configuration is the responder's: IDEM_* variables (cfg.h), with
 * -d, -p and -s over them.  Exit statuses are in idemctl.h.
 */
#include <sys/stat.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "crypto.h"
#include "err.h"
#include "idemctl.h"
#include "idemctl_seal.h"
#include "json.h"
#include "provider.h"
#include "shared.h"

struct config ctl_cfg;
int ctl_json;

static const char ctl_usage_text[] =
    "usage: idemctl [-d db_dir] [-s store_uri] [-p provider_dir] [--json]\n"
    "               COMMAND [ARGS]\n"
    "       idemctl --help | --version\n"
    "commands:\n"
    "  stats [--json]                    counts of keys, payments, charges\n"
    "  purge [-n N] [-w MS] [--json]     delete expired keys in batches\n"
    "  resume [-n N] [--limit N] [--all] [--json]\n"
    "                                    end stuck claims without clients\n"
    "  inspect [--json] SCOPE KEY        one key's record\n"
    "  stuck [--json]                    claims whose lease ran out\n"
    "  hash-key [SECRET]                 keys-file digest of a secret\n"
    "  new-key ACCOUNT                   a fresh API secret\n"
    "  migrate [--to VERSION]            PostgreSQL schema up to date\n"
    "  new-secret FILE                   a key file to seal the store\n"
    "  rekey [-n N] [-w MS] [-P]         reseal under the current key\n"
    "exit: 0 ok, 1 failure, 2 usage, 3 inspect: no such key\n";

void
ctl_usage(void)
{
	fputs(ctl_usage_text, stderr);
	exit(CTL_USAGE);
}

long long
ctl_number(const char *s, long long max)
{
	char *end;
	long long v;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	v = strtoll(s, &end, 10);
	return *end == '\0' && v >= 1 && v <= max ? v : -1;
}

int
ctl_options(int argc, char *argv[], const char *opts,
    int (*fn)(void *ctx, int ch, const char *arg), void *ctx)
{
	static const struct option longs[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "batch", required_argument, NULL, 'n' },
		{ "limit", required_argument, NULL, 'l' },
		{ "all", no_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 }
	};
	char spec[32];
	int ch;

	snprintf(spec, sizeof(spec), "+j%s", opts);
	optind = 1;
	while ((ch = getopt_long(argc, argv, spec, longs, NULL)) != -1) {
		if (ch == 'j') {
			ctl_json = 1;
			continue;
		}
		if (ch == '?' || ch == ':' || strchr(opts, ch) == NULL ||
		    fn == NULL || fn(ctx, ch, optarg) != 0)
			ctl_usage();
	}
	return optind;
}

/* The idempotency store: IDEM_STORE or -s, else the LMDB one in db_dir. */
static const char *
ctl_where(void)
{
	return ctl_cfg.store[0] != '\0' ? ctl_cfg.store : ctl_cfg.db_dir;
}

void
ctl_need_lmdb(const char *what, const char *dir)
{
	char path[PATH_MAX];
	struct stat st;

	if ((size_t)snprintf(path, sizeof(path), "%s/data.mdb", dir) >=
	    sizeof(path)) {
		fprintf(stderr, "idemctl: %s %s: the name is too long\n", what,
		    dir);
		exit(CTL_FAIL);
	}
	if (stat(path, &st) == 0) {
		if (S_ISREG(st.st_mode))
			return;
		errno = ENOENT;
	}
	if (errno == ENOENT || errno == ENOTDIR)
		fprintf(stderr, "idemctl: %s %s: no store there (idem-fcgi "
		    "creates it at its first start; idemctl never does)\n",
		    what, dir);
	else
		fprintf(stderr, "idemctl: %s %s: %s\n", what, dir,
		    strerror(errno));
	exit(CTL_FAIL);
}

void
ctl_need_store(void)
{
	if (ctl_cfg.store[0] == '\0')
		ctl_need_lmdb("store", ctl_cfg.db_dir);
}

void
ctl_need_provider(void)
{
	char err[512];

	if (config_provider_check(&ctl_cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "idemctl: %s\n", err);
		exit(CTL_FAIL);
	}
}

void
ctl_need_ledger(void)
{
	if (ctl_cfg.provider == CONFIG_PROVIDER_SIMULATED)
		ctl_need_lmdb("provider ledger", ctl_cfg.provider_dir);
}

struct store *
ctl_store(int read_only)
{
	const char *where = ctl_where();
	struct store_config sc = { where, ctl_cfg.map_size, read_only,
	    ctl_cfg.keys_per_account, 0, pay_tables, NULL,
	    ctl_cfg.pg_connect_timeout_s, ctl_cfg.pg_statement_timeout_ms,
	    ctl_cfg.pg_lock_timeout_ms, ctl_cfg.pg_pool_wait_ms };
	struct store *s;
	int rc;

	ctl_need_store();
	if ((rc = store_open(&sc, &s)) != IDEM_OK) {
		fprintf(stderr, "idemctl: store %s: %s\n", where,
		    idem_strerror(rc));
		exit(CTL_FAIL);
	}
	return s;
}

void
ctl_idem_options(struct idem_options *opt)
{
	memset(opt, 0, sizeof(*opt));
	opt->size = sizeof(*opt);
	opt->dir = ctl_where();
	opt->map_size = ctl_cfg.map_size;
	opt->lease_ms = ctl_cfg.lease_ms;
	opt->ttl_ms = ctl_cfg.ttl_ms;
	opt->max_keys_per_scope = ctl_cfg.keys_per_account;
	opt->commit_delay_us = ctl_cfg.commit_delay_us;
	opt->tables = pay_tables;
	opt->pg_connect_timeout_s = ctl_cfg.pg_connect_timeout_s;
	opt->pg_statement_timeout_ms = ctl_cfg.pg_statement_timeout_ms;
	opt->pg_lock_timeout_ms = ctl_cfg.pg_lock_timeout_ms;
	opt->pg_pool_wait_ms = ctl_cfg.pg_pool_wait_ms;
	opt->secret_file = ctl_cfg.secret_file[0] != '\0' ?
	    ctl_cfg.secret_file : NULL;
}

struct idem *
ctl_idem(const struct idem_options *opt)
{
	struct idem *idem;
	int rc;

	ctl_need_store();
	if ((rc = idem_open(opt, &idem)) != IDEM_OK) {
		fprintf(stderr, "idemctl: store %s: %s\n", opt->dir,
		    idem_strerror(rc));
		exit(CTL_FAIL);
	}
	return idem;
}

int
ctl_print(const struct buf *b)
{
	/* An empty buffer may have no data at all: nothing to write. */
	if ((b->len > 0 && fwrite(b->data, 1, b->len, stdout) != b->len) ||
	    fflush(stdout) != 0) {
		perror("idemctl: stdout");
		return CTL_FAIL;
	}
	return CTL_OK;
}

int
ctl_print_fields(const struct ctl_field *f, size_t n, int interrupted)
{
	struct buf b = BUF_INIT;
	struct json_writer w;
	size_t i;
	int rc;

	if (ctl_json) {
		json_write_init(&w, &b);
		json_write_open(&w, '{');
		for (i = 0; i < n; i++) {
			json_write_name(&w, f[i].name);
			json_write_int(&w, (long long)f[i].value);
		}
		if (interrupted >= 0) {
			json_write_name(&w, "interrupted");
			json_write_raw(&w, interrupted ? "true" : "false",
			    interrupted ? 4 : 5);
		}
		json_write_close(&w, '}');
		rc = json_write_done(&w);
		if (rc == IDEM_OK)
			rc = buf_puts(&b, "\n");
	} else
		for (i = 0, rc = IDEM_OK; i < n && rc == IDEM_OK; i++)
			rc = buf_printf(&b, "%s: %llu\n", f[i].name,
			    f[i].value);
	rc = rc == IDEM_OK ? ctl_print(&b) : CTL_FAIL;
	buf_free(&b);
	return rc;
}

int
ctl_progress_on(void)
{
	return isatty(STDERR_FILENO);
}

/*
 * Brings a PostgreSQL store's schema up to date, or up to --to VERSION
 * (the expand step of a rolling upgrade); an LMDB store needs nothing.
 * Prints the version and the oldest program schema that runs on it.
 */
static int
ctl_migrate(int argc, char *argv[])
{
	char err[512];
	long long target = 0;
	int from, to, compat;

	if (argc == 3 && strcmp(argv[1], "--to") == 0) {
		if ((target = ctl_number(argv[2], INT_MAX)) < 0)
			ctl_usage();
	} else if (argc != 1)
		ctl_usage();
	if (!store_pg_uri(ctl_cfg.store)) {
		printf("schema: nothing to migrate (LMDB store)\n");
		return CTL_OK;
	}
	if (store_pg_migrate_to(ctl_cfg.store, (int)target, &from, &to,
	    &compat, err, sizeof(err)) != 0) {
		if (to != from)
			fprintf(stderr, "idemctl: migrate: applied %d to %d\n",
			    from + 1, to);
		fprintf(stderr, "idemctl: migrate: %s\n", err);
		return CTL_FAIL;
	}
	printf("schema: version %d%s; programs of schema %d to %d run on "
	    "it\n", to, from == to ? " (up to date)" : "", compat, to);
	return CTL_OK;
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
	return CTL_OK;
}

/*
 * The account is checked by the rule the keys file is read with, so the
 * line printed always parses: a line that did not would stop every
 * worker at start.
 */
static int
ctl_new_key(const char *account)
{
	char secret[64], hex[2 * CRYPTO_SHA256_SIZE + 1];
	uint8_t raw[24], d[CRYPTO_SHA256_SIZE];

	if (!auth_principal_valid(account)) {
		fprintf(stderr, "idemctl: new-key: an account name is "
		    AUTH_PRINCIPAL_RULE "\n");
		return CTL_USAGE;
	}

	crypto_random(raw, sizeof(raw));
	memcpy(secret, "sk_", 3);
	crypto_hex(raw, sizeof(raw), secret + 3);
	crypto_sha256(secret, strlen(secret), d);
	crypto_hex(d, sizeof(d), hex);
	printf("secret: %s\nkeys file line: %s %s\n", secret, account, hex);
	return CTL_OK;
}

/* The options before the command; exits for --help, --version, errors. */
static void
ctl_global_options(int argc, char *argv[])
{
	static const struct option longs[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 }
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "+d:p:s:hVj", longs,
	    NULL)) != -1) {
		switch (ch) {
		case 's':
			if (!store_pg_uri(optarg) ||
			    strlen(optarg) >= sizeof(ctl_cfg.store)) {
				fprintf(stderr, "idemctl: -s takes a "
				    "postgresql:// URI\n");
				exit(CTL_USAGE);
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
		case 'j':
			ctl_json = 1;
			break;
		case 'h':
			fputs(ctl_usage_text, stdout);
			exit(fflush(stdout) == 0 ? CTL_OK : CTL_FAIL);
		case 'V':
			printf("idemctl (%s) %s\n", PACKAGE_NAME,
			    PACKAGE_VERSION);
			exit(fflush(stdout) == 0 ? CTL_OK : CTL_FAIL);
		default:
			ctl_usage();
		}
	}
}

int
main(int argc, char *argv[])
{
	char err[256];

	if (crypto_init() != IDEM_OK || provider_global_init() != IDEM_OK) {
		fprintf(stderr, "idemctl: cannot initialise the libraries\n");
		return CTL_FAIL;
	}
	if (config_load(&ctl_cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "idemctl: %s\n", err);
		return CTL_FAIL;
	}
	ctl_global_options(argc, argv);
	argc -= optind;
	argv += optind;
	if (argc < 1)
		ctl_usage();
	if (strcmp(argv[0], "stats") == 0)
		return ctl_stats(argc, argv);
	if (strcmp(argv[0], "purge") == 0)
		return ctl_purge(argc, argv);
	if (strcmp(argv[0], "resume") == 0)
		return ctl_resume(argc, argv);
	if (strcmp(argv[0], "inspect") == 0)
		return ctl_inspect(argc, argv);
	if (strcmp(argv[0], "stuck") == 0)
		return ctl_stuck(argc, argv);
	if (strcmp(argv[0], "hash-key") == 0 && argc <= 2)
		return ctl_hash_key(argc == 2 ? argv[1] : NULL);
	if (strcmp(argv[0], "new-key") == 0 && argc == 2)
		return ctl_new_key(argv[1]);
	if (strcmp(argv[0], "migrate") == 0)
		return ctl_migrate(argc, argv);
	if (strcmp(argv[0], "new-secret") == 0)
		return ctl_new_secret(argc, argv);
	if (strcmp(argv[0], "rekey") == 0)
		return ctl_rekey(&ctl_cfg, argc, argv);
	if (strcmp(argv[0], "hash-key") != 0 && strcmp(argv[0], "new-key") != 0)
		fprintf(stderr, "idemctl: unknown command \"%s\"\n", argv[0]);
	ctl_usage();
}
