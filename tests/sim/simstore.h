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

#endif
