/* SPDX-License-Identifier: MIT */
/*
 * fault.h: fault points and an injectable clock, for tests.
 *
 * Compiled in only with ./configure --enable-fault-points (the test build);
 * otherwise every call is a no-op and the clock is the system's.
 *
 * IDEM_FAULT names one point and what happens there:
 *     IDEM_FAULT=after_claim:kill          the process dies as kill -9 would
 *     IDEM_FAULT=after_charge:killonce=/m  the first process to get here
 *                                          (it creates the file /m) dies
 *     IDEM_FAULT=in_provider:wait=/path    block until the fifo at /path
 *                                          is opened for writing and then
 *                                          closed by the test
 *     IDEM_FAULT=store_claim:fail          fault_point returns 1 there: the
 *                                          store write fails (IDEM_EFULL);
 *                                          also store_checkpoint,
 *                                          store_complete, and store_wait
 *                                          (every write of the batch);
 *                                          batch_commit: the commit fails
 *                                          after the batch's jobs ran;
 *                                          store_pg_pipeline: the first
 *                                          statement's results are left
 *                                          unread (PostgreSQL);
 *                                          store_pg_commit_lost: COMMIT
 *                                          answered, the session closed
 *                                          unread; store_pg_commit_unsent:
 *                                          closed before COMMIT is sent;
 *                                          store_pg_schema_due: the call
 *                                          reads the schema's version
 *                                          again, as every 10 s
 *     IDEM_FAULT=store_wait:jump=86400000  the clock moves a day ahead
 *                                          each time a group commit's
 *                                          leader holds the write lock
 *     IDEM_FAULT=store_get:fail            the store read fails
 *                                          (IDEM_EIO); also store_lookup,
 *                                          store_scan, store_each (both
 *                                          walks), store_count; a row
 *                                          read may name its table, as in
 *                                          store_get.payments:fail
 * IDEM_TEST_NOW_MS, when set, is the clock in milliseconds since the epoch.
 */
#ifndef IDEM_FAULT_H
#define IDEM_FAULT_H

#include <stdint.h>

/* 1 when IDEM_FAULT says this point fails ("fail"), else 0. */
int fault_point(const char *name);

/*
 * The same for a point that IDEM_FAULT may name alone or qualified by
 * sub (name.sub: one table's reads); sub NULL: by name alone.
 */
int fault_point_in(const char *name, const char *sub);

/* Milliseconds since the Unix epoch. */
uint64_t clock_now_ms(void);

#endif
