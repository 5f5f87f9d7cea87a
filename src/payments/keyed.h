/* SPDX-License-Identifier: MIT */
/*
 * keyed.h: what every keyed endpoint of the payments API shares on the
 * idempotency library (idem.h): the checks before the store, the answers
 * to idem_begin's verdicts other than a claim, the stored form of a
 * response and its replay, and the completion of a claim.  What is an
 * endpoint's own (its body, its stages, its provider call, which failure
 * releases and which abandons) stays in the endpoint: post.c for
 * payments, refund_post.c for refunds.
 */
#ifndef PAY_KEYED_H
#define PAY_KEYED_H

#include <stdint.h>

#include "idem.h"
#include "json.h"
#include "key.h"
#include "shared.h"

/*
 * The checks before the store, in the contract's order: key (400), body
 * read (413/400), media type (415), JSON (400).  what names the resource
 * in the 415's detail ("payment", "refund"); ignore (NULL-terminated, or
 * NULL) the body's top-level members the fingerprint leaves out (the
 * route's fp_ignore, routes.h).  Returns 0 with *doc the caller's
 * (json_free) and fp the request's fingerprint, or -1 with resp the
 * answer.
 */
int keyed_precheck(const struct pay_env *env, const struct request *req,
    enum req_status st, const char *what, const char *const *ignore,
    char key[KEY_MAX + 1], struct json_value **doc,
    uint8_t fp[IDEM_FP_SIZE], struct response *resp);

/*
 * The fingerprint of a request whose body parsed as doc, in mode, with
 * the top-level members of the body named in ignore left out: over the
 * canonical form without them (IDEM_FP_CANONICAL), or over the body's
 * bytes with their spans removed (IDEM_FP_RAW, json_strip_members).  A
 * body that names none of them hashes exactly as it did before routes
 * could name any.  IDEM_OK or IDEM_ENOMEM.
 */
int keyed_fingerprint(enum idem_fp_mode mode, const struct request *req,
    const struct json_value *doc, const char *const *ignore,
    uint8_t fp[IDEM_FP_SIZE]);

/*
 * Answers a verdict that is not a claim (replay, 409, 422, 429) and
 * returns 1; returns 0, answering nothing, for IDEM_RUN and IDEM_RESUME,
 * whose claim the caller owns.  what names the resource ("payment").
 */
int keyed_answer(const struct pay_env *env, const struct idem_call *c,
    const char *what, struct response *resp);

/*
 * Answers a request whose claim could not be carried on: IDEM_ELOST means
 * another attempt took it over (that attempt will answer), anything else
 * is a store failure (503), noted in note->store_err.
 */
void keyed_lost_or_failed(struct pay_note *note, int rc,
    struct response *resp);

/*
 * How a claimed keyed request ended: what the client's request and the
 * completer (resume.h) both report.
 */
enum keyed_end {
	KEYED_COMPLETED = 0, /* an answer stored */
	KEYED_RELEASED,      /* released: nothing reached the provider */
	KEYED_KEPT,          /* kept, lease ended: a retry resumes it */
	KEYED_LOST           /* another attempt took the claim over */
};

/*
 * How a claim ended after keyed_complete returned rc, given whether
 * nothing had happened (released on failure) or something may have
 * (abandoned).
 */
enum keyed_end keyed_end_of(int rc, int nothing_happened);

/*
 * Releases a claim after which nothing can have happened, with undo (may
 * be NULL) in the release's transaction; a release that cannot be
 * written leaves the claim abandoned (idem_release), and its error is
 * noted in note->store_err.
 */
enum keyed_end keyed_release(struct idem_call *call, struct pay_note *note,
    idem_tx_fn undo, void *undo_ctx);

/*
 * Stores resp as the final answer of the claim, with the rows hook
 * writes (hook may be NULL).  Returns IDEM_OK, or the error: on
 * IDEM_ELOST resp has been made the answer; on any other error the claim
 * has been ended, released with undo (may be NULL) in the release's
 * transaction when nothing_happened is set, else abandoned for the retry
 * to resume, and the caller says in resp what did happen; the error is
 * noted in note->store_err.
 */
int keyed_complete(struct idem_call *call, struct pay_note *note,
    idem_tx_fn hook, void *hook_ctx, int nothing_happened, idem_tx_fn undo,
    void *undo_ctx, struct response *resp);

/*
 * The key the provider deduplicates on, derived from what every retry of
 * the request carries, so that a retry whose claim record was lost (a
 * failover that lost commits, a restore) asks the provider under the same
 * key and gets its replay instead of a second charge (doc/DESIGN.md, "The
 * provider key"): "what:scope:key:fp:gen", fp the first KEYED_FP_BYTES of
 * the request's fingerprint in hex and gen the key's generation
 * (idem_call_generation), which tells this lifetime of the key from a
 * later one after it expired.  A claim of a release before generations
 * (IDEM_GEN_LEGACY) keeps the key it was charged under,
 * "what:scope:key:created", created the claim's creation time in
 * milliseconds.  Appended to out; IDEM_OK or IDEM_ENOMEM.
 */
#define KEYED_FP_BYTES 16
int keyed_provider_key(const char *what, const struct idem_call *call,
    const char *scope, const char *key, struct buf *out);
/* The same from its parts. */
int keyed_provider_key_of(const char *what, const char *scope,
    const char *key, const uint8_t fp[IDEM_FP_SIZE], uint64_t gen,
    uint64_t created_ms, struct buf *out);

#endif
