/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the shared counters behind GET /metrics.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "err.h"
#include "harness.h"
#include "metrics.h"

static char dir[256];
/* When the tests were set up: the process started before. */
static time_t harness_started;

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

/*
 * Without the counters file there are no counters to show (not zeros),
 * but the build and the process are still described.
 */
static void
test_off_until_open(void)
{
	struct buf b = BUF_INIT;

	metrics_close();
	metrics_inc(METRIC_CLAIMS);
	HARNESS_EQ(metrics_render(&b), IDEM_OK);
	CU_ASSERT_PTR_NULL(strstr(b.data, "idem_claims_total"));
	CU_ASSERT_PTR_NULL(strstr(b.data, "idem_request_duration_seconds"));
	CU_ASSERT_PTR_NOT_NULL(strstr(b.data, "\nidem_build_info{"));
	CU_ASSERT(sample(b.data, "process_open_fds") > 0);
	HARNESS_EQ(metrics_open(dir), IDEM_OK);
	buf_free(&b);
}

/*
 * Prometheus' naming rules: the status class is a label of one counter
 * family, not a part of the name.
 */
static void
test_status_class_label(void)
{
	struct buf b = BUF_INIT;

	metrics_inc(METRIC_RESPONSES_2XX);
	metrics_inc(METRIC_RESPONSES_2XX);
	metrics_inc(METRIC_RESPONSES_4XX);
	metrics_add(METRIC_RESPONSES_5XX, 3);
	HARNESS_EQ(metrics_render(&b), IDEM_OK);
	HARNESS_EQ(sample(b.data, "idem_responses_total{code=\"2xx\"}"), 2);
	HARNESS_EQ(sample(b.data, "idem_responses_total{code=\"4xx\"}"), 1);
	HARNESS_EQ(sample(b.data, "idem_responses_total{code=\"5xx\"}"), 3);
	CU_ASSERT_PTR_NOT_NULL(strstr(b.data,
	    "# TYPE idem_responses_total counter\n"));
	CU_ASSERT_PTR_NULL(strstr(b.data, "idem_responses_2xx"));
	CU_ASSERT_PTR_NULL(strstr(b.data, "idem_responses_5xx"));
	buf_free(&b);
}

/* The release serving, as a gauge of 1 labelled with its version. */
static void
test_build_info(void)
{
	struct buf b = BUF_INIT;

	HARNESS_EQ(metrics_render(&b), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL(strstr(b.data,
	    "# TYPE idem_build_info gauge\n"
	    "idem_build_info{version=\"" PACKAGE_VERSION "\"} 1\n"));
	buf_free(&b);
}

/*
 * The process_* metrics describe this process: a descriptor opened is
 * one more open fd, the resident size is not 0, and it started just
 * before the tests were set up.
 */
static void
test_process(void)
{
	struct buf b = BUF_INIT, c = BUF_INIT;
	double fds, start;
	time_t before = time(NULL);
	int fd;

	HARNESS_EQ(metrics_render(&b), IDEM_OK);
	fds = sample(b.data, "process_open_fds");
	CU_ASSERT(fds >= 1);
	CU_ASSERT(harness_sample(b.data, "process_resident_memory_bytes") >
	    4096);
	CU_ASSERT(harness_sample(b.data, "process_virtual_memory_bytes") >
	    4096);
	CU_ASSERT(harness_sample(b.data, "process_cpu_seconds_total") >= 0);
	CU_ASSERT(harness_sample(b.data, "process_max_fds") >= fds);
	start = harness_sample(b.data, "process_start_time_seconds");
	CU_ASSERT(start <= (double)harness_started + 1 &&
	    start >= (double)harness_started - 60);
	CU_ASSERT(start <= (double)before + 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(b.data,
	    "# TYPE process_cpu_seconds_total counter\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(b.data,
	    "# TYPE process_start_time_seconds gauge\n"));
	CU_ASSERT_FATAL((fd = open("/dev/null", O_RDONLY)) >= 0);
	HARNESS_EQ(metrics_render(&c), IDEM_OK);
	HARNESS_EQ(sample(c.data, "process_open_fds"), (long long)fds + 1);
	close(fd);
	buf_free(&b);
	buf_free(&c);
}

/* Without procfs the values are left out, never shown as 0. */
static void
test_process_without_proc(void)
{
	struct buf b = BUF_INIT;

	HARNESS_EQ(metrics_render_process(&b, "/nonexistent-proc"), IDEM_OK);
	CU_ASSERT(b.len == 0 || strstr(b.data, "process_open_fds") == NULL);
	CU_ASSERT(b.len == 0 ||
	    strstr(b.data, "process_cpu_seconds_total") == NULL);
	CU_ASSERT(b.len == 0 ||
	    strstr(b.data, "process_start_time_seconds") == NULL);
	buf_free(&b);
}

int
harness_suites(void)
{
	CU_pSuite s;

	harness_started = time(NULL);
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
		{ "status class is a label", test_status_class_label },
		{ "build info", test_build_info },
		{ "process metrics", test_process },
		{ "process metrics without procfs", test_process_without_proc },
	};
	size_t i;

	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if ((s = CU_add_suite(tests[i].name, setup, teardown)) == NULL ||
		    CU_add_test(s, tests[i].name, tests[i].fn) == NULL)
			return -1;
	}
	return 0;
}
