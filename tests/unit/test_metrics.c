/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the shared counters behind GET /metrics.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "err.h"
#include "harness.h"
#include "metrics.h"

static char dir[256];

static int
setup(void)
{
	harness_mkdtemp(dir, sizeof(dir));
	return metrics_open(dir) == IDEM_OK ? 0 : -1;
}

static int
teardown(void)
{
	metrics_close();
	harness_rmdir(dir);
	return 0;
}

/* A counter's value in the exposition: counts are whole. */
static long long
sample(const char *text, const char *name)
{
	return (long long)harness_sample(text, name);
}

static void
test_counts_and_format(void)
{
	struct buf b = BUF_INIT;

	metrics_inc(METRIC_CLAIMS);
	metrics_inc(METRIC_REPLAYS);
	metrics_add(METRIC_REPLAYS, 2);
	HARNESS_EQ(metrics_render(&b), IDEM_OK);
	HARNESS_EQ(sample(b.data, "idem_claims_total"), 1);
	HARNESS_EQ(sample(b.data, "idem_replays_total"), 3);
	HARNESS_EQ(sample(b.data, "idem_conflicts_total"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(b.data,
	    "# TYPE idem_claims_total counter\n"));
	buf_free(&b);
}

/* Counters of microseconds read as seconds, to the microsecond. */
static void
test_seconds(void)
{
	struct buf b = BUF_INIT;

	metrics_add(METRIC_STORE_COMMIT_US, 1234567);
	metrics_add(METRIC_STORE_WAIT_US, 42);
	HARNESS_EQ(metrics_render(&b), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL(strstr(b.data,
	    "\nidem_store_commit_seconds_total 1.234567\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(b.data,
	    "\nidem_store_write_wait_seconds_total 0.000042\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(b.data,
	    "# TYPE idem_store_commit_seconds_total counter\n"));
	buf_free(&b);
}

static void
test_histogram_cumulative(void)
{
	struct buf b = BUF_INIT;

	metrics_observe_ms(0);
	metrics_observe_ms(3);
	metrics_observe_ms(20000);
	HARNESS_EQ(metrics_render(&b), IDEM_OK);
	HARNESS_EQ(sample(b.data,
	    "idem_request_duration_seconds_bucket{le=\"0.001\"}"), 1);
	HARNESS_EQ(sample(b.data,
	    "idem_request_duration_seconds_bucket{le=\"0.005\"}"), 2);
	HARNESS_EQ(sample(b.data,
	    "idem_request_duration_seconds_bucket{le=\"10.000\"}"), 2);
	HARNESS_EQ(sample(b.data,
	    "idem_request_duration_seconds_bucket{le=\"+Inf\"}"), 3);
	HARNESS_EQ(sample(b.data, "idem_request_duration_seconds_count"), 3);
	CU_ASSERT_PTR_NOT_NULL(strstr(b.data,
	    "\nidem_request_duration_seconds_sum 20.003\n"));
	buf_free(&b);
}

/*
 * Workers are separate processes: four children each count 10000 times
 * into the same file at once, and no increment is lost.
 */
static void
test_processes_share_counts(void)
{
	struct buf b = BUF_INIT;
	pid_t pids[4];
	int i, j, status;

	for (i = 0; i < 4; i++) {
		if ((pids[i] = fork()) == 0) {
			metrics_close();
			if (metrics_open(dir) != IDEM_OK)
				_exit(1);
			for (j = 0; j < 10000; j++)
				metrics_inc(METRIC_TAKEOVERS);
			_exit(0);
		}
		CU_ASSERT_FATAL(pids[i] > 0);
	}
	for (i = 0; i < 4; i++) {
		CU_ASSERT(waitpid(pids[i], &status, 0) == pids[i]);
		CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	HARNESS_EQ(metrics_render(&b), IDEM_OK);
	HARNESS_EQ(sample(b.data, "idem_takeovers_total"), 40000);
	buf_free(&b);
}

static void
test_survives_reopen(void)
{
	struct buf b = BUF_INIT;

	metrics_inc(METRIC_PURGED);
	metrics_close();
	HARNESS_EQ(metrics_open(dir), IDEM_OK);
	HARNESS_EQ(metrics_render(&b), IDEM_OK);
	HARNESS_EQ(sample(b.data, "idem_purged_total"), 1);
	buf_free(&b);
}

static void
test_off_until_open(void)
{
	struct buf b = BUF_INIT;

	metrics_close();
	metrics_inc(METRIC_CLAIMS);
	HARNESS_EQ(metrics_render(&b), IDEM_OK);
	HARNESS_EQ(b.len, 0);
	HARNESS_EQ(metrics_open(dir), IDEM_OK);
	buf_free(&b);
}

int
harness_suites(void)
{
	CU_pSuite s;

	/* Each test gets its own directory, hence a suite per test. */
	static const struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {
		{ "counts and format", test_counts_and_format },
		{ "histogram is cumulative", test_histogram_cumulative },
		{ "processes share counts", test_processes_share_counts },
		{ "survives reopen", test_survives_reopen },
		{ "off until open", test_off_until_open },
		{ "microseconds read as seconds", test_seconds },
	};
	size_t i;

	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if ((s = CU_add_suite(tests[i].name, setup, teardown)) == NULL ||
		    CU_add_test(s, tests[i].name, tests[i].fn) == NULL)
			return -1;
	}
	return 0;
}
