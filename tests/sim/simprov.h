/* SPDX-License-Identifier: MIT */
/* simprov.h: the simulated provider's own entry points (simprov.c). */
#ifndef SIM_SIMPROV_H
#define SIM_SIMPROV_H

/* Forgets the ledger: a fresh provider for the next schedule. */
void simprov_reset(void);

#endif
