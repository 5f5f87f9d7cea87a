/* SPDX-License-Identifier: MIT */
/*
 * idemctl_seal.h: idemctl's commands for the keys that seal the store
 * at rest (idemctl(8): new-secret, rekey).
 */
#ifndef IDEMCTL_SEAL_H
#define IDEMCTL_SEAL_H

#include "cfg.h"

/* idemctl new-secret FILE.  argv[0] is the command's name. */
int ctl_new_secret(int argc, char **argv);

/* idemctl rekey [-n N] [-w MS] [-P], on the store cfg names. */
int ctl_rekey(const struct config *cfg, int argc, char **argv);

#endif
