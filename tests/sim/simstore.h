/* simstore.h: the simulation store's own entry points (simstore.c). */
#ifndef SIM_SIMSTORE_H
#define SIM_SIMSTORE_H

#include "record.h"

/* Forgets everything: a fresh disk for the next schedule. */
void simstore_reset(void);
/* The committed record of (scope, key), without yielding. */
int simstore_peek(const char *scope, const char *key, struct rec *out);

#endif
