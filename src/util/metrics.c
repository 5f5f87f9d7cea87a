/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "idem.h"
#include "metrics.h"

#define METRICS_MAGIC 0x6964656d6d657436ULL /* "idemmet6" */
#define METRICS_FILE "metrics"

#define METRICS_RESUMES_HELP "Stuck claims the completer ended " \
	"(completed: answer stored; released: the provider was never " \
	"called) or left for its next run."
#define METRICS_RESPONSES_HELP "Responses by status class."
#define METRICS_REPLAY_CACHE_HELP "Keyed requests looked up in the " \
	"replay cache: hit, answered from memory; miss, read from the store."

/* Upper bounds of the latency histogram, in milliseconds. */
static const uint64_t metrics_le_ms[] = { 1, 2, 5, 10, 25, 50, 100, 250,
	500, 1000, 2500, 10000 };
#define METRICS_NBUCKETS (sizeof(metrics_le_ms) / sizeof(metrics_le_ms[0]))

/*
 * The shared file.  Only fixed-width integers, so every process maps the
 * same layout; a file with another magic or size is rebuilt.
 */
struct metrics_file {
	uint64_t magic;
	uint64_t counters[METRIC__MAX];
	uint64_t buckets[METRICS_NBUCKETS + 1]; /* the last is +Inf */
	uint64_t sum_ms;
	uint64_t run_ewma_ms;   /* claimed requests: a moving average */
};

/*
 * Counters of one family are adjacent and share name and help; label,
 * when set, tells them apart.
 */
static const struct {
	const char *name;
	const char *help;
	const char *label;
} metrics_names[METRIC__MAX] = {
	[METRIC_REQUESTS] = { "idem_requests_total",
	    "Requests answered.", NULL },
	[METRIC_RESPONSES_2XX] = { "idem_responses_total",
	    METRICS_RESPONSES_HELP, "code=\"2xx\"" },
	[METRIC_RESPONSES_3XX] = { "idem_responses_total",
	    METRICS_RESPONSES_HELP, "code=\"3xx\"" },
	[METRIC_RESPONSES_4XX] = { "idem_responses_total",
	    METRICS_RESPONSES_HELP, "code=\"4xx\"" },
	[METRIC_RESPONSES_5XX] = { "idem_responses_total",
	    METRICS_RESPONSES_HELP, "code=\"5xx\"" },
	[METRIC_CLAIMS] = { "idem_claims_total",
	    "Keys claimed afresh.", NULL },
	[METRIC_TAKEOVERS] = { "idem_takeovers_total",
	    "Claims taken over after their lease ran out.", NULL },
	[METRIC_REPLAYS] = { "idem_replays_total",
	    "Stored responses replayed.", NULL },
	[METRIC_CONFLICTS] = { "idem_conflicts_total",
	    "Requests answered 409: the key's first request still runs.",
	    NULL },
	[METRIC_MISMATCHES] = { "idem_mismatches_total",
	    "Requests answered 422: key reused with another request.", NULL },
	[METRIC_KEY_MISSING] = { "idem_key_missing_total",
	    "Requests without an Idempotency-Key where one is required.",
	    NULL },
	[METRIC_KEY_INVALID] = { "idem_key_invalid_total",
	    "Requests with a malformed Idempotency-Key.", NULL },
	[METRIC_COMPLETIONS] = { "idem_completions_total",
	    "Claims completed with a stored response.", NULL },
	[METRIC_RELEASES] = { "idem_releases_total",
	    "Claims released after a failure without side effects.", NULL },
	[METRIC_ABANDONS] = { "idem_abandons_total",
	    "Claims kept for take-over after a failure.", NULL },
	[METRIC_LOST] = { "idem_lost_claims_total",
	    "Claims found taken over when their worker came to finish.", NULL },
	[METRIC_PURGED] = { "idem_purged_total",
	    "Expired keys deleted.", NULL },
	[METRIC_STORE_ERRORS] = { "idem_store_errors_total",
	    "Requests answered 503 because the store failed.", NULL },
	[METRIC_LIMITED] = { "idem_limited_total",
	    "New keys refused (429): the account held as many as it may.",
	    NULL },
	[METRIC_STORE_SYNCS] = { "idem_store_syncs_total",
	    "Durable syncs of the store and the ledger (two per commit).",
	    NULL },
	[METRIC_STORE_COMMITS] = { "idem_store_commits_total",
	    "Write transactions committed (each a group of writes).", NULL },
	[METRIC_STORE_WRITES] = { "idem_store_writes_total",
	    "Writes carried by those commits.", NULL },
	[METRIC_STORE_STATEMENTS] = { "idem_store_statements_total",
	    "Statements sent to a PostgreSQL store.", NULL },
	[METRIC_STORE_ROUND_TRIPS] = { "idem_store_round_trips_total",
	    "Waits for a PostgreSQL store's answer.", NULL },
	[METRIC_STORE_COMMIT_US] = { "idem_store_commit_seconds_total",
	    "Time the store's commits took: page writes and both syncs.",
	    NULL },
	[METRIC_STORE_WAIT_US] = { "idem_store_write_wait_seconds_total",
	    "Time writes waited, from their queueing to their durable commit.",
	    NULL },
	[METRIC_RESUMES_COMPLETED] = { "idem_resumes_total",
	    METRICS_RESUMES_HELP, "outcome=\"completed\"" },
	[METRIC_RESUMES_RELEASED] = { "idem_resumes_total",
	    METRICS_RESUMES_HELP, "outcome=\"released\"" },
	[METRIC_RESUMES_LEFT] = { "idem_resumes_total",
	    METRICS_RESUMES_HELP, "outcome=\"left\"" },
	[METRIC_REPLAY_CACHE_HITS] = { "idem_replay_cache_lookups_total",
	    METRICS_REPLAY_CACHE_HELP, "result=\"hit\"" },
	[METRIC_REPLAY_CACHE_MISSES] = { "idem_replay_cache_lookups_total",
	    METRICS_REPLAY_CACHE_HELP, "result=\"miss\"" },
};

static struct metrics_file *metrics_map;

static int metrics_render_counters(struct buf *out);

/* Counters of microseconds, rendered in seconds. */
static int
metrics_in_us(size_t i)
{
	return i == METRIC_STORE_COMMIT_US || i == METRIC_STORE_WAIT_US;
}

int
metrics_open(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;
	void *p;
	int fd, rc = IDEM_EIO;

	if (metrics_map != NULL)
		return IDEM_OK;
	if (snprintf(path, sizeof(path), "%s/%s", dir, METRICS_FILE) >=
	    (int)sizeof(path))
		return IDEM_EINVAL;
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) == -1)
		return errno == EACCES || errno == EROFS ? IDEM_EROFS : IDEM_EIO;
	/* A short file is extended with zeros, which is a valid state. */
	if (fstat(fd, &st) != 0 ||
	    ((size_t)st.st_size != sizeof(struct metrics_file) &&
	    ftruncate(fd, sizeof(struct metrics_file)) != 0))
		goto out;
	p = mmap(NULL, sizeof(struct metrics_file), PROT_READ | PROT_WRITE,
	    MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto out;
	metrics_map = p;
	/* Another layout's numbers would be read as ours: start at zero. */
	if (__atomic_load_n(&metrics_map->magic, __ATOMIC_ACQUIRE) !=
	    METRICS_MAGIC) {
		memset((char *)metrics_map + sizeof(metrics_map->magic), 0,
		    sizeof(*metrics_map) - sizeof(metrics_map->magic));
		__atomic_store_n(&metrics_map->magic, METRICS_MAGIC,
		    __ATOMIC_RELEASE);
	}
	rc = IDEM_OK;
out:
	close(fd);
	return rc;
}

void
metrics_close(void)
{
	if (metrics_map != NULL)
		munmap(metrics_map, sizeof(struct metrics_file));
	metrics_map = NULL;
}

void
metrics_add(enum metric m, uint64_t n)
{
	if (metrics_map != NULL && (unsigned)m < METRIC__MAX)
		__atomic_fetch_add(&metrics_map->counters[m], n,
		    __ATOMIC_RELAXED);
}

uint64_t
metrics_now_us(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void
metrics_inc(enum metric m)
{
	metrics_add(m, 1);
}

void
metrics_observe_ms(uint64_t ms)
{
	size_t i;

	if (metrics_map == NULL)
		return;
	for (i = 0; i < METRICS_NBUCKETS && ms > metrics_le_ms[i]; i++)
		continue;
	__atomic_fetch_add(&metrics_map->buckets[i], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&metrics_map->sum_ms, ms, __ATOMIC_RELAXED);
}

/*
 * An exponentially weighted moving average (weight 1/8 for the newest),
 * updated with compare-and-swap since every thread of every worker may
 * share it.  The slot holds the average plus 1, so that 0 means nothing
 * measured yet.
 */
void
metrics_ewma_add(uint64_t *slot, uint64_t ms)
{
	uint64_t old, next;

	old = __atomic_load_n(slot, __ATOMIC_RELAXED);
	do {
		next = old == 0 ? ms + 1 : old - old / 8 + (ms + 1) / 8;
		if (next == 0)
			next = 1;
	} while (!__atomic_compare_exchange_n(slot, &old, next, 1,
	    __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

uint64_t
metrics_ewma_get(const uint64_t *slot)
{
	uint64_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);

	return v > 0 ? v - 1 : 0;
}

void
metrics_observe_run_ms(uint64_t ms)
{
	if (metrics_map != NULL)
		metrics_ewma_add(&metrics_map->run_ewma_ms, ms);
}

uint64_t
metrics_typical_run_ms(void)
{
	return metrics_map != NULL ?
	    metrics_ewma_get(&metrics_map->run_ewma_ms) : 0;
}

static uint64_t
metrics_load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/*
 * The build, as Prometheus exporters name theirs: a gauge of 1 whose
 * label carries the version, so that a dashboard can tell which
 * release answered (and see an upgrade roll through the workers).
 */
static int
metrics_render_build(struct buf *out)
{
	return buf_printf(out, "# HELP idem_build_info The idem release "
	    "serving, in its version label; always 1.\n"
	    "# TYPE idem_build_info gauge\n"
	    "idem_build_info{version=\"%s\"} 1\n", PACKAGE_VERSION);
}

int
metrics_render(struct buf *out)
{
	int rc;

	if (metrics_map != NULL && (rc = metrics_render_counters(out)) !=
	    IDEM_OK)
		return rc;
	if ((rc = metrics_render_build(out)) != IDEM_OK)
		return rc;
	return metrics_render_process(out, "/proc");
}

/* The shared counters and the latency histogram. */
static int
metrics_render_counters(struct buf *out)
{
	uint64_t cum = 0, v;
	size_t i;
	int rc = IDEM_OK;

	for (i = 0; i < METRIC__MAX && rc == IDEM_OK; i++) {
		if (i == 0 || strcmp(metrics_names[i].name,
		    metrics_names[i - 1].name) != 0)
			rc = buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n",
			    metrics_names[i].name, metrics_names[i].help,
			    metrics_names[i].name);
		if (rc != IDEM_OK)
			break;
		v = metrics_load(&metrics_map->counters[i]);
		rc = buf_printf(out, "%s%s%s%s ", metrics_names[i].name,
		    metrics_names[i].label != NULL ? "{" : "",
		    metrics_names[i].label != NULL ?
		    metrics_names[i].label : "",
		    metrics_names[i].label != NULL ? "}" : "");
		if (rc == IDEM_OK && metrics_in_us(i))
			rc = buf_printf(out, "%llu.%06llu\n",
			    (unsigned long long)(v / 1000000),
			    (unsigned long long)(v % 1000000));
		else if (rc == IDEM_OK)
			rc = buf_printf(out, "%llu\n", (unsigned long long)v);
	}
	if (rc == IDEM_OK)
		rc = buf_puts(out, "# HELP idem_request_duration_seconds "
		    "Time to answer a request.\n"
		    "# TYPE idem_request_duration_seconds histogram\n");
	for (i = 0; i <= METRICS_NBUCKETS && rc == IDEM_OK; i++) {
		cum += metrics_load(&metrics_map->buckets[i]);
		if (i < METRICS_NBUCKETS)
			rc = buf_printf(out, "idem_request_duration_seconds_bucket"
			    "{le=\"%llu.%03llu\"} %llu\n",
			    (unsigned long long)(metrics_le_ms[i] / 1000),
			    (unsigned long long)(metrics_le_ms[i] % 1000),
			    (unsigned long long)cum);
		else
			rc = buf_printf(out, "idem_request_duration_seconds_bucket"
			    "{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
	}
	if (rc == IDEM_OK) {
		uint64_t sum = metrics_load(&metrics_map->sum_ms);

		rc = buf_printf(out, "idem_request_duration_seconds_sum "
		    "%llu.%03llu\nidem_request_duration_seconds_count %llu\n",
		    (unsigned long long)(sum / 1000),
		    (unsigned long long)(sum % 1000), (unsigned long long)cum);
	}
	return rc;
}

int
metrics_render_gauge(struct buf *out, const char *name, const char *help,
    uint64_t value)
{
	return buf_printf(out, "# HELP %s %s\n# TYPE %s gauge\n%s %llu\n",
	    name, help, name, name, (unsigned long long)value);
}
