/* SPDX-License-Identifier: MIT */
/*
 * test_provider.c: the simulated provider deduplicates on its key.
 *
 * Each test has its own ledger directory.  A change of failure mode is a
 * close and a reopen, as it is for the responder, which reads the mode
 * from its configuration at start.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/wait.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crypto.h"
#include "err.h"
#include "harness.h"
#include "provider.h"

static char dir[4096];
static char ledger[4200];
static struct provider *prov;

static void
reopen(enum provider_fail fail, unsigned latency_ms)
{
	struct provider_config cfg;

	provider_close(prov);
	prov = NULL;
	memset(&cfg, 0, sizeof(cfg));
	cfg.dir = ledger;
	cfg.map_size = 16u << 20;
	cfg.latency_ms = latency_ms;
	cfg.fail = fail;
	HARNESS_EQ(provider_open(&cfg, &prov), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(prov);
}

static void
setup(void)
{
	harness_mkdtemp(dir, sizeof(dir));
	snprintf(ledger, sizeof(ledger), "%s/ledger", dir);
	prov = NULL;
	reopen(PROVIDER_FAIL_NONE, 0);
}

static void
teardown(void)
{
	provider_close(prov);
	prov = NULL;
	harness_rmdir(dir);
}

static struct provider_charge
charge(const char *key, int64_t amount, const char *currency)
{
	struct provider_charge c;

	memset(&c, 0x5a, sizeof(c));
	HARNESS_EQ(provider_charge(prov, key, amount, currency,
	    1700000000000ULL, &c), IDEM_OK);
	return c;
}

static void
expect_counts(size_t charges, size_t declines)
{
	size_t c = 99, d = 99;

	HARNESS_EQ(provider_count(prov, &c, &d), IDEM_OK);
	HARNESS_EQ(c, charges);
	HARNESS_EQ(d, declines);
}

static size_t
charges_for(const char *key)
{
	size_t n = 99;

	HARNESS_EQ(provider_charges_for(prov, key, &n), IDEM_OK);
	return n;
}

/* "ch_" and 24 lowercase hex digits. */
static int
id_ok(const char *id)
{
	size_t i;

	if (strlen(id) != 27 || strncmp(id, "ch_", 3) != 0)
		return 0;
	for (i = 3; i < 27; i++)
		if (strchr("0123456789abcdef", id[i]) == NULL)
			return 0;
	return 1;
}

static void
test_empty(void)
{
	expect_counts(0, 0);
	HARNESS_EQ(charges_for("charge:alice:k1"), 0);
}

static void
test_once_per_key(void)
{
	struct provider_charge a, b;

	a = charge("charge:alice:k1", 10000, "BRL");
	HARNESS_EQ(a.outcome, PROVIDER_CHARGED);
	HARNESS_EQ(a.replayed, 0);
	CU_ASSERT(id_ok(a.id));
	b = charge("charge:alice:k1", 10000, "BRL");
	HARNESS_EQ(b.outcome, PROVIDER_CHARGED);
	HARNESS_EQ(b.replayed, 1);
	CU_ASSERT_STRING_EQUAL(b.id, a.id);
	expect_counts(1, 0);
	HARNESS_EQ(charges_for("charge:alice:k1"), 1);
}

static void
test_different_keys(void)
{
	struct provider_charge a, b, c;

	a = charge("charge:alice:k1", 10000, "BRL");
	b = charge("charge:alice:k2", 10000, "BRL");
	/* The same client key in another scope is another charge. */
	c = charge("charge:bob:k1", 10000, "BRL");
	HARNESS_EQ(a.replayed + b.replayed + c.replayed, 0);
	CU_ASSERT_STRING_NOT_EQUAL(a.id, b.id);
	CU_ASSERT_STRING_NOT_EQUAL(a.id, c.id);
	CU_ASSERT_STRING_NOT_EQUAL(b.id, c.id);
	expect_counts(3, 0);
	HARNESS_EQ(charges_for("charge:alice:k"), 0);
}

static void
test_key_reused(void)
{
	struct provider_charge a, b;

	a = charge("charge:alice:k1", 10000, "BRL");
	b = charge("charge:alice:k1", 10001, "BRL");
	HARNESS_EQ(b.outcome, PROVIDER_KEY_REUSED);
	HARNESS_EQ(b.replayed, 1);
	/* A misused key is not told the original charge's id. */
	CU_ASSERT_STRING_EQUAL(b.id, "");
	b = charge("charge:alice:k1", 10000, "USD");
	HARNESS_EQ(b.outcome, PROVIDER_KEY_REUSED);
	/* The original is untouched, and still answers its own retries. */
	b = charge("charge:alice:k1", 10000, "BRL");
	HARNESS_EQ(b.outcome, PROVIDER_CHARGED);
	CU_ASSERT_STRING_EQUAL(b.id, a.id);
	expect_counts(1, 0);
}

static void
test_decline(void)
{
	struct provider_charge a, b;

	reopen(PROVIDER_FAIL_DECLINE, 0);
	a = charge("charge:alice:k1", 500, "USD");
	HARNESS_EQ(a.outcome, PROVIDER_DECLINED);
	HARNESS_EQ(a.replayed, 0);
	CU_ASSERT(id_ok(a.id));
	b = charge("charge:alice:k1", 500, "USD");
	HARNESS_EQ(b.outcome, PROVIDER_DECLINED);
	HARNESS_EQ(b.replayed, 1);
	CU_ASSERT_STRING_EQUAL(b.id, a.id);
	expect_counts(0, 1);
	HARNESS_EQ(charges_for("charge:alice:k1"), 0);

	/* A decline is final: it survives the card being fixed. */
	reopen(PROVIDER_FAIL_NONE, 0);
	b = charge("charge:alice:k1", 500, "USD");
	HARNESS_EQ(b.outcome, PROVIDER_DECLINED);
	CU_ASSERT_STRING_EQUAL(b.id, a.id);
	expect_counts(0, 1);
}

/* DECLINE mode decides only new keys; a settled charge stays charged. */
static void
test_decline_mode_keeps_charges(void)
{
	struct provider_charge a, b;

	a = charge("charge:alice:k1", 500, "USD");
	reopen(PROVIDER_FAIL_DECLINE, 0);
	b = charge("charge:alice:k1", 500, "USD");
	HARNESS_EQ(b.outcome, PROVIDER_CHARGED);
	HARNESS_EQ(b.replayed, 1);
	CU_ASSERT_STRING_EQUAL(b.id, a.id);
	expect_counts(1, 0);
}

static void
test_unavailable(void)
{
	struct provider_charge a;

	reopen(PROVIDER_FAIL_UNAVAILABLE, 0);
	a = charge("charge:alice:k1", 10000, "BRL");
	HARNESS_EQ(a.outcome, PROVIDER_UNAVAILABLE);
	HARNESS_EQ(a.replayed, 0);
	CU_ASSERT_STRING_EQUAL(a.id, "");
	expect_counts(0, 0);
	HARNESS_EQ(charges_for("charge:alice:k1"), 0);

	/* Nothing was recorded, so the retry is a first charge. */
	reopen(PROVIDER_FAIL_NONE, 0);
	a = charge("charge:alice:k1", 10000, "BRL");
	HARNESS_EQ(a.outcome, PROVIDER_CHARGED);
	HARNESS_EQ(a.replayed, 0);
	expect_counts(1, 0);
}

/*
 * A timeout is the dangerous case: the money moved but the caller never
 * heard.  The retry under the same key must recover that charge, not
 * make a second one.
 */
static void
test_timeout_then_retry(void)
{
	struct provider_charge a, b, c;

	reopen(PROVIDER_FAIL_TIMEOUT, 0);
	a = charge("charge:alice:k1", 10000, "BRL");
	HARNESS_EQ(a.outcome, PROVIDER_TIMEOUT);
	HARNESS_EQ(a.replayed, 0);
	CU_ASSERT_STRING_EQUAL(a.id, "");
	expect_counts(1, 0);
	HARNESS_EQ(charges_for("charge:alice:k1"), 1);

	/* Still in TIMEOUT mode: a known key is answered from the ledger. */
	b = charge("charge:alice:k1", 10000, "BRL");
	HARNESS_EQ(b.outcome, PROVIDER_CHARGED);
	HARNESS_EQ(b.replayed, 1);
	CU_ASSERT(id_ok(b.id));

	reopen(PROVIDER_FAIL_NONE, 0);
	c = charge("charge:alice:k1", 10000, "BRL");
	HARNESS_EQ(c.outcome, PROVIDER_CHARGED);
	HARNESS_EQ(c.replayed, 1);
	CU_ASSERT_STRING_EQUAL(c.id, b.id);
	expect_counts(1, 0);
}

static void
test_counts(void)
{
	charge("charge:alice:k1", 100, "BRL");
	charge("charge:alice:k2", 200, "BRL");
	charge("charge:alice:k2", 200, "BRL");
	reopen(PROVIDER_FAIL_DECLINE, 0);
	charge("charge:alice:k3", 300, "BRL");
	charge("charge:alice:k4", 400, "BRL");
	charge("charge:alice:k1", 100, "BRL");
	reopen(PROVIDER_FAIL_UNAVAILABLE, 0);
	charge("charge:alice:k5", 500, "BRL");
	reopen(PROVIDER_FAIL_TIMEOUT, 0);
	charge("charge:alice:k6", 600, "BRL");
	expect_counts(3, 2);
	HARNESS_EQ(charges_for("charge:alice:k1"), 1);
	HARNESS_EQ(charges_for("charge:alice:k3"), 0);
	HARNESS_EQ(charges_for("charge:alice:k5"), 0);
	HARNESS_EQ(charges_for("charge:alice:k6"), 1);
}

static void
test_persistence(void)
{
	struct provider_charge a, b;

	a = charge("charge:alice:k1", 4200, "EUR");
	provider_close(prov);
	prov = NULL;
	reopen(PROVIDER_FAIL_NONE, 0);
	expect_counts(1, 0);
	b = charge("charge:alice:k1", 4200, "EUR");
	HARNESS_EQ(b.replayed, 1);
	CU_ASSERT_STRING_EQUAL(b.id, a.id);
	expect_counts(1, 0);
}

static void
test_invalid_arguments(void)
{
	struct provider_charge c;
	char cur[32];

	HARNESS_EQ(provider_charge(prov, "", 100, "BRL", 0, &c), IDEM_EINVAL);
	HARNESS_EQ(provider_charge(prov, NULL, 100, "BRL", 0, &c),
	    IDEM_EINVAL);
	HARNESS_EQ(provider_charge(prov, "k", 0, "BRL", 0, &c), IDEM_EINVAL);
	HARNESS_EQ(provider_charge(prov, "k", -5, "BRL", 0, &c),
	    IDEM_EINVAL);
	HARNESS_EQ(provider_charge(prov, "k", 100, NULL, 0, &c),
	    IDEM_EINVAL);
	HARNESS_EQ(provider_charge(prov, "k", 100, "", 0, &c), IDEM_EINVAL);
	memset(cur, 'X', sizeof(cur) - 1);
	cur[sizeof(cur) - 1] = '\0';
	HARNESS_EQ(provider_charge(prov, "k", 100, cur, 0, &c), IDEM_EINVAL);
	expect_counts(0, 0);
}

static void
test_latency(void)
{
	struct timespec t0, t1;
	long long ms;

	reopen(PROVIDER_FAIL_NONE, 30);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	charge("charge:alice:k1", 100, "BRL");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (long long)(t1.tv_sec - t0.tv_sec) * 1000 +
	    (t1.tv_nsec - t0.tv_nsec) / 1000000;
	CU_ASSERT(ms >= 30);
}

/*
 * Worker processes racing on one key: the atomic insert lets exactly
 * one of them make the charge, and every other one sees that charge.
 * Each child opens its own provider, as LMDB requires after fork.
 */
static void
test_concurrent_once(void)
{
	enum { N = 8 };
	struct provider_config cfg;
	struct provider_charge c;
	struct provider *p;
	pid_t pids[N];
	int i, status, fresh = 0, replayed = 0;

	provider_close(prov);
	prov = NULL;
	memset(&cfg, 0, sizeof(cfg));
	cfg.dir = ledger;
	cfg.map_size = 16u << 20;
	for (i = 0; i < N; i++) {
		if ((pids[i] = fork()) == 0) {
			if (provider_open(&cfg, &p) != IDEM_OK)
				_exit(3);
			if (provider_charge(p, "charge:alice:race", 777, "BRL",
			    0, &c) != IDEM_OK || c.outcome != PROVIDER_CHARGED)
				_exit(4);
			provider_close(p);
			_exit(c.replayed ? 1 : 0);
		}
		CU_ASSERT_FATAL(pids[i] > 0);
	}
	for (i = 0; i < N; i++) {
		CU_ASSERT(waitpid(pids[i], &status, 0) == pids[i]);
		CU_ASSERT(WIFEXITED(status));
		if (WEXITSTATUS(status) == 0)
			fresh++;
		else if (WEXITSTATUS(status) == 1)
			replayed++;
	}
	HARNESS_EQ(fresh, 1);
	HARNESS_EQ(replayed, N - 1);
	reopen(PROVIDER_FAIL_NONE, 0);
	expect_counts(1, 0);
}

#ifdef IDEM_FAULT_POINTS
/*
 * Runs one charge in a child process that IDEM_FAULT kills at point, and
 * checks that it died by SIGKILL, as kill -9 would leave it.
 */
static void
charge_killed_at(const char *point)
{
	struct provider_config cfg;
	struct provider_charge c;
	struct provider *p;
	char spec[64];
	pid_t pid;
	int status;

	provider_close(prov);
	prov = NULL;
	memset(&cfg, 0, sizeof(cfg));
	cfg.dir = ledger;
	cfg.map_size = 16u << 20;
	snprintf(spec, sizeof(spec), "%s:kill", point);
	if ((pid = fork()) == 0) {
		if (setenv("IDEM_FAULT", spec, 1) != 0 ||
		    provider_open(&cfg, &p) != IDEM_OK)
			_exit(3);
		provider_charge(p, "charge:alice:k1", 10000, "BRL", 0, &c);
		_exit(0);
	}
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT(waitpid(pid, &status, 0) == pid);
	CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	reopen(PROVIDER_FAIL_NONE, 0);
}

/* Killed before anything was charged: the retry is a first charge. */
static void
test_crash_in_provider(void)
{
	struct provider_charge a;

	charge_killed_at("in_provider");
	expect_counts(0, 0);
	a = charge("charge:alice:k1", 10000, "BRL");
	HARNESS_EQ(a.outcome, PROVIDER_CHARGED);
	HARNESS_EQ(a.replayed, 0);
}

/* Killed after the charge committed: the retry finds it, once. */
static void
test_crash_after_charge(void)
{
	struct provider_charge a;

	charge_killed_at("after_charge");
	expect_counts(1, 0);
	HARNESS_EQ(charges_for("charge:alice:k1"), 1);
	a = charge("charge:alice:k1", 10000, "BRL");
	HARNESS_EQ(a.outcome, PROVIDER_CHARGED);
	HARNESS_EQ(a.replayed, 1);
	CU_ASSERT(id_ok(a.id));
	expect_counts(1, 0);
}
#endif

static void
test_fail_parse(void)
{
	enum provider_fail f;

	HARNESS_EQ(provider_fail_parse("none", &f), IDEM_OK);
	HARNESS_EQ(f, PROVIDER_FAIL_NONE);
	HARNESS_EQ(provider_fail_parse("decline", &f), IDEM_OK);
	HARNESS_EQ(f, PROVIDER_FAIL_DECLINE);
	HARNESS_EQ(provider_fail_parse("unavailable", &f), IDEM_OK);
	HARNESS_EQ(f, PROVIDER_FAIL_UNAVAILABLE);
	HARNESS_EQ(provider_fail_parse("timeout", &f), IDEM_OK);
	HARNESS_EQ(f, PROVIDER_FAIL_TIMEOUT);
	f = PROVIDER_FAIL_DECLINE;
	HARNESS_EQ(provider_fail_parse("", &f), IDEM_EINVAL);
	HARNESS_EQ(provider_fail_parse("Timeout", &f), IDEM_EINVAL);
	HARNESS_EQ(provider_fail_parse("timeouts", &f), IDEM_EINVAL);
	HARNESS_EQ(provider_fail_parse(NULL, &f), IDEM_EINVAL);
	HARNESS_EQ(f, PROVIDER_FAIL_DECLINE);
}

static int
suite_init(void)
{
	return crypto_init() == IDEM_OK ? 0 : -1;
}

static const struct {
	const char *name;
	CU_TestFunc fn;
} provider_tests[] = {
	{ "empty ledger", test_empty },
	{ "one charge per key", test_once_per_key },
	{ "different keys", test_different_keys },
	{ "key reused", test_key_reused },
	{ "decline recorded and replayed", test_decline },
	{ "decline mode keeps charges", test_decline_mode_keeps_charges },
	{ "unavailable records nothing", test_unavailable },
	{ "timeout, then retry", test_timeout_then_retry },
	{ "counts", test_counts },
	{ "persistence", test_persistence },
	{ "invalid arguments", test_invalid_arguments },
	{ "latency", test_latency },
	{ "concurrent workers, one charge", test_concurrent_once },
	{ "fail mode names", test_fail_parse },
#ifdef IDEM_FAULT_POINTS
	{ "killed in the provider", test_crash_in_provider },
	{ "killed after the charge", test_crash_after_charge },
#endif
};

int
harness_suites(void)
{
	CU_pSuite s;
	size_t i;

	s = CU_add_suite_with_setup_and_teardown("provider", suite_init, NULL,
	    setup, teardown);
	if (s == NULL)
		return -1;
	for (i = 0; i < sizeof(provider_tests) / sizeof(provider_tests[0]);
	    i++)
		if (CU_add_test(s, provider_tests[i].name,
		    provider_tests[i].fn) == NULL)
			return -1;
	return 0;
}
