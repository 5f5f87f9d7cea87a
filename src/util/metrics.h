/* SPDX-License-Identifier: MIT */
/*
 * metrics.h: counters shared by every worker process, for GET /metrics.
 *
 * The counters live in a small file beside the store, mapped shared by
 * each process and updated with atomic adds: counting costs no lock, no
 * transaction and no sync, and survives a worker's death (counts are
 * operational, not durable: a machine crash may lose the last few).
 * Until metrics_open succeeds every call is a no-op.
 */
#ifndef IDEM_METRICS_H
#define IDEM_METRICS_H

#include <stdint.h>

#include "buf.h"

enum metric {
	METRIC_REQUESTS = 0,
	/* Responses by status class: idem_responses_total{code=...}. */
	METRIC_RESPONSES_2XX,
	METRIC_RESPONSES_3XX,
	METRIC_RESPONSES_4XX,
	METRIC_RESPONSES_5XX,
	METRIC_CLAIMS,        /* fresh claims */
	METRIC_TAKEOVERS,     /* claims taken over after a lease ran out */
	METRIC_REPLAYS,
	METRIC_CONFLICTS,     /* 409: in progress */
	METRIC_MISMATCHES,    /* 422: key reused with another request */
	METRIC_KEY_MISSING,
	METRIC_KEY_INVALID,
	METRIC_COMPLETIONS,
	METRIC_RELEASES,      /* claims released: nothing happened */
	METRIC_ABANDONS,      /* claims kept for take-over after a failure */
	METRIC_LOST,          /* our claim was taken over under us */
	METRIC_PURGED,        /* expired keys deleted */
	METRIC_STORE_ERRORS,
	METRIC_LIMITED,       /* 429: the scope holds as many keys as it may */
	METRIC_STORE_SYNCS,   /* durable syncs: two per commit */
	METRIC_STORE_COMMITS, /* write transactions committed */
	METRIC_STORE_WRITES,  /* writes those commits carried */
	/* PostgreSQL: statements sent, and the round trips they took */
	METRIC_STORE_STATEMENTS,
	METRIC_STORE_ROUND_TRIPS,
	/*
	 * Microseconds, rendered as seconds: LMDB's commits (page writes
	 * and both syncs), and writers' waits from queueing their job to
	 * its durable commit (leaders included).
	 */
	METRIC_STORE_COMMIT_US,
	METRIC_STORE_WAIT_US,
	/*
	 * Stuck claims the completer (idemctl resume, another process)
	 * ended, by outcome: one family, idem_resumes_total{outcome=...}.
	 */
	METRIC_RESUMES_COMPLETED,
	METRIC_RESUMES_RELEASED,
	METRIC_RESUMES_LEFT,  /* left for the next run */
	/*
	 * Keyed requests looked up in the replay cache (idem_options.
	 * replay_cache_bytes), by result: one family,
	 * idem_replay_cache_lookups_total{result=...}.
	 */
	METRIC_REPLAY_CACHE_HITS,
	METRIC_REPLAY_CACHE_MISSES,
	METRIC__MAX
};

/*
 * Maps (creating if needed) the counters file in dir.  Returns IDEM_OK or
 * an error, after which counting stays off.  Call after fork.
 */
int metrics_open(const char *dir);
void metrics_close(void);

void metrics_add(enum metric m, uint64_t n);
/* Microseconds on the monotonic clock, for durations. */
uint64_t metrics_now_us(void);
void metrics_inc(enum metric m);
/* Records one request's duration. */
void metrics_observe_ms(uint64_t ms);

/*
 * Records how long a claimed request ran, from its claim to its answer,
 * and gives a recent typical value (a moving average over every worker;
 * 0 before the first): what a duplicate can expect to wait.
 */
void metrics_observe_run_ms(uint64_t ms);
uint64_t metrics_typical_run_ms(void);

/*
 * The same moving average kept in a slot of the caller's (zero at
 * first), which any number of threads may update at once: the library
 * keeps one per handle (idem.c), so that a program without the counters
 * file still has a typical run time.
 */
void metrics_ewma_add(uint64_t *slot, uint64_t ms);
uint64_t metrics_ewma_get(const uint64_t *slot);

/*
 * Appends the Prometheus text exposition (format 0.0.4) to out: the
 * shared counters and the latency histogram (only once metrics_open
 * succeeded), then idem_build_info and the calling process's process_*
 * metrics (metrics_render_process on /proc), which need no file.
 * IDEM_OK, or IDEM_ENOMEM with out partly filled.
 */
int metrics_render(struct buf *out);

/*
 * Appends the process metrics of the Prometheus client libraries'
 * convention for the calling process, read from proc (a procfs mount,
 * "/proc"): process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_open_fds, process_max_fds and
 * process_start_time_seconds.  A value that cannot be read (no procfs,
 * a file of another form) is left out, never shown as 0.  IDEM_OK, or
 * IDEM_ENOMEM.
 */
int metrics_render_process(struct buf *out, const char *proc);

/*
 * Appends one gauge, a value computed when asked (not a shared counter),
 * in the same format: name and help are the caller's constants.
 */
int metrics_render_gauge(struct buf *out, const char *name, const char *help,
    uint64_t value);

#endif
