/* SPDX-License-Identifier: MIT */
/*
 * check.h: the invariant checker and its ground-truth log.
 *
 * The checker learns what happened from the simulator's side of every
 * boundary, never from the code under test's own account of it: each new
 * charge the simulated provider makes (and for which request), each
 * completion the store commits (with its rows and answer), each answer on
 * its way to a client.  It checks the invariants of doc/DESIGN.md against
 * that log after every step, and the first violation ends the schedule.
 */
#ifndef SIM_CHECK_H
#define SIM_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "response.h"
#include "sim.h"
#include "store.h"

void check_reset(void);

/* Records the first violation (printf-style); later ones are ignored. */
void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * A charge the provider made afresh (not a replay under a known key), for
 * rq; claim_created_ms is the creation time of the claim committed for
 * (scope, key) at that moment (0 if none).
 */
void check_on_charge(const struct sim_req *rq, const char *charge_id,
    int64_t amount, uint64_t claim_created_ms);

/*
 * A refund the provider made afresh of payment (the id in rq's path), for
 * rq, as check_on_charge.
 */
void check_on_refund(const struct sim_req *rq, const char *refund_id,
    const char *payment, int64_t amount, uint64_t claim_created_ms);

/*
 * A completion of (scope, key) the store committed just now, by rq (NULL
 * if no request): the checker reads what it stored, and its payment row.
 */
void check_on_complete(const char *scope, const char *key,
    struct sim_req *rq);

/*
 * The path of the request whose claim of (scope, key) the store holds,
 * from the store: /payments/{id}/refunds for a refund's (its hold names
 * the payment), else /payments.  For a claim the completer takes over.
 */
void check_claim_path(const char *scope, const char *key, char *path,
    size_t len);

/* A record the store purged. */
void check_on_purge(const char *scope, const char *key, const struct rec *r);

/*
 * A store call of rq (NULL: of no request) rode a commit that failed
 * after its job ran: whatever verdict it took was taken on writes that
 * never reached the disk.
 */
void check_on_failed_commit(struct sim_req *rq);

/* An answer about to be written to the client of rq. */
void check_on_answer(struct sim_req *rq, const struct sim_resp *r);

/* After every step, and once more at the end of the schedule. */
void check_step(void);

/* Converts a stored response or a live one into the checker's form. */
void sim_resp_from_rec(const struct rec_response *in, struct sim_resp *out);
void sim_resp_from_http(const struct response *in, struct sim_resp *out);
void sim_resp_from_rec_copy(const struct sim_resp *in, struct sim_resp *out);

/*
 * The durable record of (scope, key) as the backend under test holds it
 * (the backend's glue implements it).  IDEM_OK, IDEM_ENOTFOUND.
 */
int truth_lookup(const char *scope, const char *key, struct rec *out);
/* A committed application row, appended to out.  IDEM_ENOTFOUND. */
int truth_row(const char *table, const void *key, size_t keylen,
    struct buf *out);

#endif
