/* SPDX-License-Identifier: MIT */
/*
 * glue.h: what the simulator needs from the code under test.
 *
 * The one place that knows how the application is opened with an
 * injected store, provider and clock, so the scheduler and the checker
 * stay independent of those seams.
 */
#ifndef SIM_GLUE_H
#define SIM_GLUE_H

#include <stddef.h>
#include <stdint.h>

#include "request.h"
#include "response.h"

/* A fresh durable world (empty store and provider ledger) per schedule. */
void glue_world_begin(void);
void glue_world_end(void);

/* One worker's application: opened at start and at each restart. */
void *glue_app_open(int worker);
/* The worker died: drop its memory, keep what the store committed. */
void glue_app_crash(void *app);
void glue_app_close(void *app);
void glue_app_handle(void *app, enum req_status st,
    const struct request *req, struct response *resp);

/* idemctl purge, as an operator runs it next to the workers. */
int glue_purge(uint64_t now_ms, size_t max, size_t *purged);

/*
 * idemctl resume, through app's store and provider, as its timer runs it
 * next to the workers: claims gathered batch at a time, at most limit (0:
 * no limit), every key walked for stage-0 claims when all is set.
 * taking(ctx, scope, key) is called before each claim is taken over.
 * Returns 0 with *counts set, or -1 when the store could not be opened or
 * walked.
 */
struct pay_resume_counts;
int glue_resume(void *app, size_t batch, size_t limit, int all,
    void (*taking)(void *ctx, const char *scope, const char *key),
    void *ctx, struct pay_resume_counts *counts);

/* The schedule's store backend: "sim" or "lmdb". */
const char *backend_name(void);

#endif
