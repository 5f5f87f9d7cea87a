/* SPDX-License-Identifier: MIT */
/*
 * cfg.h: the responder's configuration, from environment variables.
 *
 * spawn-fcgi passes its environment on, mod_fcgid sets FcgidInitialEnv,
 * and a CGI fixture sets the variables per invocation, so one mechanism
 * serves every deployment.  Unset variables take the defaults below;
 * a malformed value is a start-up error, never silently ignored.
 *
 *   IDEM_DB_DIR               store directory          LOCALSTATEDIR/lib/idem/db
 *   IDEM_PROVIDER_DIR         provider ledger          LOCALSTATEDIR/lib/idem/provider
 *   IDEM_KEYS_FILE            API key digests          SYSCONFDIR/idem/keys
 *   IDEM_SECRET_FILE          keys that seal stored    "" (stored in the
 *                             responses and rows       clear)
 *   IDEM_TTL                  key lifetime, seconds    86400
 *   IDEM_LEASE                claim lease, seconds     30
 *   IDEM_BODY_LIMIT           request body, bytes      65536 (at most 1M)
 *   IDEM_MAP_SIZE             LMDB map, bytes (K/M/G)  32G
 *   IDEM_THREADS              requests one worker      64
 *                             serves at once
 *   IDEM_COMMIT_DELAY_US      group commit gathering   1000
 *   IDEM_KEYS_PER_ACCOUNT     live keys per account    map size / 4 KiB
 *                             (0: no bound)
 *   IDEM_FINGERPRINT          canonical | raw          canonical
 *   IDEM_PROVIDER_URL         the provider service     "" (none)
 *                             (http://HOST:PORT)
 *   IDEM_PROVIDER             service | simulated      "" (none; see below)
 *   IDEM_PROVIDER_LATENCY_MS  simulated provider delay 0
 *   IDEM_PROVIDER_FAIL        none | decline | unavailable | timeout
 *   IDEM_PROVIDER_TIMEOUT_MS  one call to the service  10000
 *   IDEM_MOUNT                path prefix to strip     ""
 *   IDEM_PROBLEM_BASE         problem type URI base    /problems/
 *   IDEM_AUTH                 bearer | remote-user     bearer
 *   IDEM_METRICS_ACCOUNT      who may read /metrics    metrics
 *   IDEM_LOG                  text | json              text
 *   IDEM_PG_CONNECT_TIMEOUT   PostgreSQL: opening a    5 (unless the URI
 *                             session, seconds         sets connect_timeout)
 *   IDEM_PG_STATEMENT_TIMEOUT_MS  a statement, and a   5000
 *                             COMMIT's answer
 *   IDEM_PG_LOCK_TIMEOUT_MS   a lock wait              2000
 *   IDEM_PG_POOL_WAIT_MS      a wait for a session     2000
 *                             of the worker's pool
 *
 * The payment provider has no default.  IDEM_PROVIDER_URL names the
 * provider service (IDEM_PROVIDER may then say "service" or nothing);
 * IDEM_PROVIDER=simulated, alone, chooses the in-process simulator and
 * its ledger in IDEM_PROVIDER_DIR, for tests and demonstrations.  With
 * neither, config_load succeeds (idemctl's commands that never charge
 * need no provider) and config_provider_check fails: every program that
 * may call the provider calls it at start, before it opens anything, so
 * that a forgotten setting can never charge against a simulator.
 */
#ifndef PAY_CFG_H
#define PAY_CFG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "idem.h"
#include "provider.h"

/* The payment provider (IDEM_PROVIDER, IDEM_PROVIDER_URL). */
enum config_provider {
	CONFIG_PROVIDER_NONE,       /* not configured: may not charge */
	CONFIG_PROVIDER_SERVICE,    /* idem-provider at provider_url */
	CONFIG_PROVIDER_SIMULATED,  /* in-process, ledger in provider_dir */
	CONFIG_PROVIDER__MAX
};

/* The form of the request log (IDEM_LOG): one line of each per request. */
enum config_log {
	CONFIG_LOG_TEXT,
	CONFIG_LOG_JSON,
	CONFIG_LOG__MAX
};

struct config {
	char db_dir[PATH_MAX];
	/*
	 * IDEM_STORE: where the idempotency store is, a postgresql:// (or
	 * postgres://) URI; empty for the LMDB store in db_dir.
	 */
	char store[PATH_MAX];
	char provider_dir[PATH_MAX];
	char keys_file[PATH_MAX];
	/*
	 * The key file that seals stored responses and rows at rest
	 * (idem_options.secret_file); empty: they are stored in the clear.
	 */
	char secret_file[PATH_MAX];
	uint64_t ttl_ms;
	uint64_t lease_ms;
	size_t body_limit;
	size_t map_size;
	uint64_t keys_per_account;
	unsigned threads;
	unsigned commit_delay_us;
	size_t replay_cache_bytes;  /* idem_options.replay_cache_bytes */
	enum idem_fp_mode fp_mode;
	enum config_provider provider;
	unsigned provider_latency_ms;
	enum provider_fail provider_fail;
	char provider_url[512];
	unsigned provider_timeout_ms;
	char mount[256];
	char problem_base[256];
	enum auth_mode auth_mode;
	char metrics_account[AUTH_PRINCIPAL_MAX + 1];
	enum config_log log_format;
	/* The PostgreSQL store's waits (idem_options.pg_*). */
	unsigned pg_connect_timeout_s;
	unsigned pg_statement_timeout_ms;
	unsigned pg_lock_timeout_ms;
	unsigned pg_pool_wait_ms;
};

/*
 * Fills cfg from the environment.  Returns 0, or -1 with a sentence
 * naming the variable at fault in err.
 */
int config_load(struct config *cfg, char *err, size_t errlen);

/*
 * Whether cfg names a payment provider.  Returns 0, or -1 with a sentence
 * naming the settings that choose one in err.
 */
int config_provider_check(const struct config *cfg, char *err,
    size_t errlen);

/*
 * Fills *pc for provider_open from cfg, whose provider must be set
 * (config_provider_check).  The strings pc points to are cfg's.
 */
void config_provider(const struct config *cfg, struct provider_config *pc);

#endif
