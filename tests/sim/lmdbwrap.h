/* SPDX-License-Identifier: MIT */
/* lmdbwrap.h: the LMDB backend with the simulator's yields (lmdbwrap.c). */
#ifndef SIM_LMDBWRAP_H
#define SIM_LMDBWRAP_H

#include "buf.h"
#include "record.h"
#include "store.h"

extern const struct store_ops lmdbwrap_ops;

/* Committed state, without yielding, for the checker. */
int lmdbwrap_lookup(struct store *s, const char *scope, const char *key,
    struct rec *out);
int lmdbwrap_row(struct store *s, const char *table, const void *key,
    size_t keylen, struct buf *out);

#endif
