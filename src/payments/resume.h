/* SPDX-License-Identifier: MIT */
/*
 * resume.h: the completer.  A payment or a refund whose client gave up
 * (a provider timeout, a crashed worker, a lost 504) waits in its claim
 * until the client retries.  pay_resume_run drives each such claim, whose
 * lease ran out, to its end without the client: it takes the claim over
 * exactly as a retry would (idem_begin with the claim's own fingerprint,
 * so a client retry meanwhile gets 409 and two completers never resume
 * one claim twice), then runs the endpoint's claimed part (pay_claimed
 * from post.h, refund_claimed from refund_post.h: what the client's
 * request runs after its claim) from the recovery point: the provider is
 * asked again under the same derived key, and the claim completes (rows
 * and answer stored for the client's retry to replay), or is stored
 * declined, or is left for the next run when the provider cannot answer.
 * Only a claim whose recovery point proves the provider was never called
 * (stage 0) is released.
 */
#ifndef PAY_RESUME_H
#define PAY_RESUME_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "shared.h"

/* What a run of the completer did, claim by claim. */
struct pay_resume_counts {
	size_t seen;      /* stuck claims looked at */
	size_t completed; /* ended with a stored answer */
	size_t released;  /* released: the provider was never called */
	size_t left;      /* left for the next run: provider unavailable or
	                     timed out, or a claim it cannot resume */
	size_t busy;      /* held by another attempt (a client, a completer) */
};

struct pay_resume_opts {
	size_t batch;   /* claims gathered per walk of the index (>= 1) */
	size_t limit;   /* stop after this many claims (0: no limit) */
	/*
	 * Also walk every key for stage-0 claims (not in the index of
	 * claims that may have charged): the cost is the store's size.
	 */
	int all;
	/* Set (by a signal handler) to stop after the claim at hand. */
	volatile sig_atomic_t *stop;
	/* Called after each claim (may be NULL): progress reports. */
	void (*progress)(void *ctx, const struct pay_resume_counts *c);
	void *progress_ctx;
	/*
	 * Called for each claim taken over (may be NULL), with its outcome
	 * ("completed", "released", "left", "busy"): the log.
	 */
	void (*ended)(void *ctx, const char *scope, const char *key,
	    uint32_t attempts, const char *outcome);
	void *ended_ctx;
	/*
	 * Called before each claim is taken over (may be NULL): whoever
	 * watches the run learns which claim the calls that follow are for.
	 */
	void (*taking)(void *ctx, const char *scope, const char *key);
	void *taking_ctx;
};

/*
 * Resumes the claims whose lease ran out by env->idem's clock, in
 * batches.  env needs idem and provider open.  Each claim's outcome is
 * added to *counts (zeroed first) and to the shared counters (metrics.h:
 * METRIC_RESUMES_*).  Returns IDEM_OK, or the store's error when the
 * walk failed, or when a claim could not be taken over or a write that
 * ends it failed (that claim is counted left, and the run stops there):
 * counts then says what was done before.
 */
int pay_resume_run(const struct pay_env *env,
    const struct pay_resume_opts *opts, struct pay_resume_counts *counts);

/*
 * *n gets the number of claims that may have charged and whose lease
 * ended before now_ms: the work waiting for a retry or the completer.
 * Walks the index of such claims only.
 */
int pay_stuck_count(struct idem *idem, uint64_t now_ms, size_t *n);

#endif
