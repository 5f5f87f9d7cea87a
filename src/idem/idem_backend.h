/* SPDX-License-Identifier: MIT */
/*
 * idem_backend.h: idem_open on a store backend of the caller's (a
 * simulated store, a wrapped LMDB one), for the tests and the simulator,
 * which reach it through the payments application's injection
 * (app_inject.backend).  It takes the internal operations table of
 * store.h, so it is no part of the library's interface: this header is
 * not installed, and the double underscore keeps the function out of
 * the names libidem exports (only idem_ followed by a letter).
 */
#ifndef IDEM_BACKEND_H
#define IDEM_BACKEND_H

#include "idem.h"

struct store_ops;

/*
 * idem_open on backend (NULL: the one opt->dir names, as idem_open);
 * otherwise the same as idem_open, errors included.
 */
int idem__open_backend(const struct idem_options *opt,
    const struct store_ops *backend, struct idem **out);

#endif
