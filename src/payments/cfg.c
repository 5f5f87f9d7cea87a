/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "idem.h"

#ifndef IDEM_LOCALSTATEDIR
#define IDEM_LOCALSTATEDIR "/var"
#endif
#ifndef IDEM_SYSCONFDIR
#define IDEM_SYSCONFDIR "/etc"
#endif

/*
 * The largest request body that can be configured.  Payment requests are
 * a few dozen bytes; parsing costs a small multiple of the body, and a
 * worker holds many bodies at once, so a limit far above any real
 * request only serves an attacker.
 */
#define CONFIG_BODY_LIMIT_MAX (1ULL << 20)
/* Map bytes per key an account may hold by default (see config_load). */
#define CONFIG_KEY_SHARE 4096

/* Parses an unsigned decimal with an optional K, M or G suffix. */
static int
config_number(const char *s, int suffixes, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	uint64_t mul = 1;
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	if (suffixes && *end != '\0' && end[1] == '\0') {
		switch (*end) {
		case 'K': case 'k': mul = 1ULL << 10; end++; break;
		case 'M': case 'm': mul = 1ULL << 20; end++; break;
		case 'G': case 'g': mul = 1ULL << 30; end++; break;
		default: return -1;
		}
	}
	if (*end != '\0' || v > max / mul)
		return -1;
	*out = v * mul;
	return 0;
}

static int
config_u64(const char *name, int suffixes, uint64_t min, uint64_t max,
    uint64_t *out, char *err, size_t errlen)
{
	const char *s = getenv(name);
	uint64_t v;

	if (s == NULL || *s == '\0')
		return 0;
	if (config_number(s, suffixes, max, &v) != 0 || v < min) {
		snprintf(err, errlen, "%s must be a whole number from %llu "
		    "to %llu%s, not \"%s\"", name, (unsigned long long)min,
		    (unsigned long long)max, suffixes ? " (K, M, G allowed)" :
		    "", s);
		return -1;
	}
	*out = v;
	return 0;
}

static int
config_string(const char *name, const char *dflt, char *out, size_t outlen,
    char *err, size_t errlen)
{
	const char *s = getenv(name);

	if (s == NULL || *s == '\0')
		s = dflt;
	if (strlen(s) >= outlen) {
		snprintf(err, errlen, "%s is too long", name);
		return -1;
	}
	strcpy(out, s);
	return 0;
}

/*
 * IDEM_AUTH says where the principal comes from.  Nothing in a request
 * may choose it, so a value that is not understood stops the worker
 * rather than falling back to either mode.
 */
static int
config_auth(struct config *cfg, char *err, size_t errlen)
{
	const char *s = getenv("IDEM_AUTH");

	cfg->auth_mode = AUTH_MODE_BEARER;
	if (s != NULL && *s != '\0' &&
	    auth_mode_parse(s, &cfg->auth_mode) != IDEM_OK) {
		snprintf(err, errlen, "IDEM_AUTH must be \"bearer\" or "
		    "\"remote-user\", not \"%s\"", s);
		return -1;
	}
	if (config_string("IDEM_METRICS_ACCOUNT", "metrics",
	    cfg->metrics_account, sizeof(cfg->metrics_account), err,
	    errlen) != 0)
		return -1;
	if (!auth_principal_valid(cfg->metrics_account)) {
		snprintf(err, errlen, "IDEM_METRICS_ACCOUNT must be "
		    AUTH_PRINCIPAL_RULE ", not \"%s\"", cfg->metrics_account);
		return -1;
	}
	return 0;
}

/* IDEM_LOG: the request log as text lines (the default) or JSON lines. */
static int
config_log(struct config *cfg, char *err, size_t errlen)
{
	const char *s = getenv("IDEM_LOG");

	cfg->log_format = CONFIG_LOG_TEXT;
	if (s == NULL || *s == '\0' || strcmp(s, "text") == 0)
		return 0;
	if (strcmp(s, "json") == 0) {
		cfg->log_format = CONFIG_LOG_JSON;
		return 0;
	}
	snprintf(err, errlen, "IDEM_LOG must be \"text\" or \"json\", not "
	    "\"%s\"", s);
	return -1;
}

/*
 * The PostgreSQL store's bounds on its waits.  Each ends a wait that a
 * stalled server, standby or network would make endless with a 503 and
 * Retry-After; all of them together stay well inside a claim's lease.
 */
static int
config_pg(struct config *cfg, char *err, size_t errlen)
{
	uint64_t connect = 5, statement = 5000, lock = 2000, pool = 2000;

	/* libpq takes whole seconds, and reads 1 as 2. */
	if (config_u64("IDEM_PG_CONNECT_TIMEOUT", 0, 2, 600, &connect, err,
	    errlen) != 0 ||
	    config_u64("IDEM_PG_STATEMENT_TIMEOUT_MS", 0, 10, 600000,
	    &statement, err, errlen) != 0 ||
	    config_u64("IDEM_PG_LOCK_TIMEOUT_MS", 0, 10, 600000, &lock, err,
	    errlen) != 0 ||
	    config_u64("IDEM_PG_POOL_WAIT_MS", 0, 1, 600000, &pool, err,
	    errlen) != 0)
		return -1;
	cfg->pg_connect_timeout_s = (unsigned)connect;
	cfg->pg_statement_timeout_ms = (unsigned)statement;
	cfg->pg_lock_timeout_ms = (unsigned)lock;
	cfg->pg_pool_wait_ms = (unsigned)pool;
	return 0;
}

static const char config_provider_help[] = "set IDEM_PROVIDER_URL="
    "http://HOST:PORT for the provider service (idem-provider), or "
    "IDEM_PROVIDER=simulated for the in-process simulator (tests and "
    "demonstrations only)";

/*
 * IDEM_PROVIDER and IDEM_PROVIDER_URL: which provider charges.  A
 * simulator is never chosen by default, nor alongside a service's URL,
 * since a payment charged against a ledger nobody else reads is lost.
 */
static int
config_provider_load(struct config *cfg, char *err, size_t errlen)
{
	const char *s = getenv("IDEM_PROVIDER");
	int url = cfg->provider_url[0] != '\0';

	if (url && strncmp(cfg->provider_url, "http://", 7) != 0 &&
	    strncmp(cfg->provider_url, "https://", 8) != 0) {
		snprintf(err, errlen, "IDEM_PROVIDER_URL must start with "
		    "http:// or https://, not \"%s\"", cfg->provider_url);
		return -1;
	}
	if (s == NULL || *s == '\0' || strcmp(s, "service") == 0) {
		if (s != NULL && *s != '\0' && !url) {
			snprintf(err, errlen, "IDEM_PROVIDER=service needs "
			    "IDEM_PROVIDER_URL=http://HOST:PORT");
			return -1;
		}
		cfg->provider = url ? CONFIG_PROVIDER_SERVICE :
		    CONFIG_PROVIDER_NONE;
		return 0;
	}
	if (strcmp(s, "simulated") != 0) {
		snprintf(err, errlen, "IDEM_PROVIDER must be \"service\" or "
		    "\"simulated\", not \"%s\"", s);
		return -1;
	}
	if (url) {
		snprintf(err, errlen, "IDEM_PROVIDER=simulated and "
		    "IDEM_PROVIDER_URL=%s name two providers: unset one",
		    cfg->provider_url);
		return -1;
	}
	cfg->provider = CONFIG_PROVIDER_SIMULATED;
	return 0;
}

int
config_provider_check(const struct config *cfg, char *err, size_t errlen)
{
	if (cfg->provider == CONFIG_PROVIDER_SERVICE ||
	    cfg->provider == CONFIG_PROVIDER_SIMULATED)
		return 0;
	snprintf(err, errlen, "no payment provider is configured: %s",
	    config_provider_help);
	return -1;
}

void
config_provider(const struct config *cfg, struct provider_config *pc)
{
	memset(pc, 0, sizeof(*pc));
	pc->dir = cfg->provider_dir;
	pc->map_size = cfg->map_size;
	pc->latency_ms = cfg->provider_latency_ms;
	pc->fail = cfg->provider_fail;
	pc->commit_delay_us = cfg->commit_delay_us;
	pc->url = cfg->provider == CONFIG_PROVIDER_SERVICE ?
	    cfg->provider_url : NULL;
	pc->timeout_ms = cfg->provider_timeout_ms;
}

/*
 * Whether IDEM_STORE names a PostgreSQL store: a libpq URI, as
 * idem_options.dir takes one (idem.h).
 */
static int
config_pg_uri(const char *s)
{
	return strncmp(s, "postgresql://", 13) == 0 ||
	    strncmp(s, "postgres://", 11) == 0;
}

/* IDEM_FINGERPRINT: "canonical" or "raw" (idem.h, enum idem_fp_mode). */
static int
config_fp_mode(const char *s, enum idem_fp_mode *mode)
{
	if (strcmp(s, "canonical") == 0)
		*mode = IDEM_FP_CANONICAL;
	else if (strcmp(s, "raw") == 0)
		*mode = IDEM_FP_RAW;
	else
		return -1;
	return 0;
}

int
config_load(struct config *cfg, char *err, size_t errlen)
{
	uint64_t ttl = 86400, lease = 30, limit = 65536, map = 32ULL << 30;
	uint64_t latency = 0, per_account = UINT64_MAX, threads = 256;
	uint64_t delay = 1000, ptimeout = 10000, rcache = 16ULL << 20;
	enum idem_fp_mode mode = IDEM_FP_CANONICAL;
	const char *s;

	memset(cfg, 0, sizeof(*cfg));
	if (config_string("IDEM_DB_DIR", IDEM_LOCALSTATEDIR "/lib/idem/db",
	    cfg->db_dir, sizeof(cfg->db_dir), err, errlen) != 0 ||
	    config_string("IDEM_STORE", "", cfg->store, sizeof(cfg->store),
	    err, errlen) != 0 ||
	    config_string("IDEM_PROVIDER_DIR",
	    IDEM_LOCALSTATEDIR "/lib/idem/provider", cfg->provider_dir,
	    sizeof(cfg->provider_dir), err, errlen) != 0 ||
	    config_string("IDEM_KEYS_FILE", IDEM_SYSCONFDIR "/idem/keys",
	    cfg->keys_file, sizeof(cfg->keys_file), err, errlen) != 0 ||
	    config_string("IDEM_SECRET_FILE", "", cfg->secret_file,
	    sizeof(cfg->secret_file), err, errlen) != 0 ||
	    config_string("IDEM_MOUNT", "", cfg->mount, sizeof(cfg->mount),
	    err, errlen) != 0 ||
	    config_string("IDEM_PROBLEM_BASE", "/problems/",
	    cfg->problem_base, sizeof(cfg->problem_base), err, errlen) != 0 ||
	    config_auth(cfg, err, errlen) != 0 ||
	    config_log(cfg, err, errlen) != 0 ||
	    config_pg(cfg, err, errlen) != 0)
		return -1;
	if (cfg->store[0] != '\0' && !config_pg_uri(cfg->store)) {
		snprintf(err, errlen, "IDEM_STORE must be a postgresql:// URI");
		return -1;
	}
	/* A lease must outlast the slowest request; a TTL must outlast it. */
	if (config_u64("IDEM_TTL", 0, 1, 365ULL * 86400, &ttl, err,
	    errlen) != 0 ||
	    config_u64("IDEM_LEASE", 0, 1, 86400, &lease, err, errlen) != 0 ||
	    config_u64("IDEM_BODY_LIMIT", 1, 1, CONFIG_BODY_LIMIT_MAX, &limit,
	    err, errlen) != 0 ||
	    config_u64("IDEM_MAP_SIZE", 1, 1ULL << 20, 1ULL << 40, &map, err,
	    errlen) != 0 ||
	    config_u64("IDEM_PROVIDER_LATENCY_MS", 0, 0, 600000, &latency,
	    err, errlen) != 0 ||
	    config_u64("IDEM_KEYS_PER_ACCOUNT", 0, 0, UINT64_MAX - 1,
	    &per_account, err, errlen) != 0 ||
	    config_u64("IDEM_THREADS", 0, 1, 1024, &threads, err,
	    errlen) != 0 ||
	    config_u64("IDEM_COMMIT_DELAY_US", 0, 0, 100000, &delay, err,
	    errlen) != 0 ||
	    config_u64("IDEM_PROVIDER_TIMEOUT_MS", 0, 1, 600000, &ptimeout,
	    err, errlen) != 0 ||
	    config_u64("IDEM_REPLAY_CACHE", 1, 0, 1ULL << 40, &rcache, err,
	    errlen) != 0 ||
	    config_string("IDEM_PROVIDER_URL", "", cfg->provider_url,
	    sizeof(cfg->provider_url), err, errlen) != 0)
		return -1;
	if (config_provider_load(cfg, err, errlen) != 0)
		return -1;
	cfg->provider_timeout_ms = (unsigned)ptimeout;
	if (lease >= ttl) {
		snprintf(err, errlen, "IDEM_LEASE (%llu s) must be shorter "
		    "than IDEM_TTL (%llu s)", (unsigned long long)lease,
		    (unsigned long long)ttl);
		return -1;
	}
	cfg->ttl_ms = ttl * 1000;
	cfg->lease_ms = lease * 1000;
	cfg->body_limit = (size_t)limit;
	cfg->map_size = (size_t)map;
	/*
	 * By default one account may fill at most a quarter of the map, at
	 * about 1 KiB a key (a long key and a stored problem), so no single
	 * account can lock the others out of the store they share.
	 */
	cfg->keys_per_account = per_account != UINT64_MAX ? per_account :
	    map / CONFIG_KEY_SHARE;
	cfg->provider_latency_ms = (unsigned)latency;
	cfg->threads = (unsigned)threads;
	cfg->commit_delay_us = (unsigned)delay;
	cfg->replay_cache_bytes = (size_t)rcache;
	s = getenv("IDEM_FINGERPRINT");
	if (s != NULL && *s != '\0' && config_fp_mode(s, &mode) != 0) {
		snprintf(err, errlen, "IDEM_FINGERPRINT must be \"canonical\" "
		    "or \"raw\", not \"%s\"", s);
		return -1;
	}
	cfg->fp_mode = mode;
	s = getenv("IDEM_PROVIDER_FAIL");
	if (s != NULL && *s != '\0' &&
	    provider_fail_parse(s, &cfg->provider_fail) != 0) {
		snprintf(err, errlen, "IDEM_PROVIDER_FAIL must be none, "
		    "decline, unavailable or timeout, not \"%s\"", s);
		return -1;
	}
	return 0;
}
