/* SPDX-License-Identifier: MIT */
/* simstore.h: the simulation store's own entry points (simstore.c). */
#ifndef SIM_SIMSTORE_H
#define SIM_SIMSTORE_H

#include "buf.h"
#include "record.h"
#include "store.h"

/* The backend (struct store_ops) over the simulated disk. */
extern const struct store_ops sim_store_ops;

/* Forgets everything: a fresh disk for the next schedule. */
void simstore_reset(void);
/* The committed record of (scope, key), without yielding. */
int simstore_peek(const char *scope, const char *key, struct rec *out);
/* A committed application row, appended to out, without yielding. */
int simstore_row(const char *table, const void *key, size_t keylen,
    struct buf *out);

/*
 * Whether a batch has run jobs it has not committed yet.  store_lmdb.c's
 * leader runs its batch's jobs after it has gathered them, and commits
 * at once; here each job runs as it joins, so the clock must not jump
 * until the batch ends, or a job would date its record before a stall
 * that LMDB's would come after.
 */
int simstore_committing(void);
/* A worker died: its batch, if one is open, never commits. */
void simstore_worker_crash(int worker);

#endif
