/* SPDX-License-Identifier: MIT */
/*
 * err.h: the library's one error enum, enum idem_err, is public and
 * lives in idem.h; internal files include this header for it.
 *
 * LMDB and errno codes are translated at the store's edge; nothing above
 * the store sees an MDB_* value.
 */
#ifndef IDEM_ERR_H
#define IDEM_ERR_H

#include "idem.h"

#endif
