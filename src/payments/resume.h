/* SPDX-License-Identifier: MIT */
/*
 * resume.h: the completer.  A payment or a refund whose client gave up
 * (a provider timeout, a crashed worker, a lost 504) waits in its claim
 * until the client retries.  pay_resume_run drives each such claim, whose
 * lease ran out, to its end without the client: it takes the claim over
 * exactly as a retry would (idem_begin with the claim's own fingerprint,
 * so a client retry meanwhile gets 409 and two completers never resume
 * one claim twice), then runs the endpoint's claimed part (pay_claimed
 * from post.c, refund_claimed from refund_post.c: what the client's
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

#include "handlers.h"
#include "keyed.h"
#include "payment.h"

/*
 * Runs a payment on a claim the caller owns (IDEM_RUN or IDEM_RESUME),
 * and ends the claim: the provider under the derived key, then complete,
 * release or abandon.  o is the order (NULL for an invalid body, whose
 * 400 with the detail invalid is stored).  resp gets the answer; note
 * the log's outcome when the claim was lost.
 */
enum keyed_end pay_claimed(const struct pay_env *env, struct pay_note *note,
    const char *scope, const char *key, struct idem_call *call,
    const struct pay_order *o, const char *invalid, struct response *resp);

/*
 * The same for a refund of payment (its id; cur its currency), from
 * refund_post.c: the hold made with the claim is refunded at the
 * provider and settled, or given back (release), or kept (abandon).
 * invalid: the 400's detail for an invalid body, else NULL.
 */
enum keyed_end refund_claimed(const struct pay_env *env,
    struct pay_note *note, const char *scope, const char *key,
    const char *payment, const struct currency *cur, struct idem_call *call,
    const char *invalid, struct response *resp);

/*
 * The payment a refund names, if it belongs to scope: its amount and
 * currency.  IDEM_OK, or the error with resp the answer: IDEM_ENOTFOUND
 * (404: none, or another account's), or the store's (503).
 */
int refund_payment_find(const struct pay_env *env, const char *payment,
    const char *scope, int64_t *paid, const struct currency **cur,
    struct response *resp);

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
