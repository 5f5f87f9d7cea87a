/* SPDX-License-Identifier: MIT */
#include "err.h"

static const char *const idem_errstr[IDEM_ERR__MAX] = {
	[IDEM_OK] = "success",
	[IDEM_ENOMEM] = "out of memory",
	[IDEM_EINVAL] = "invalid argument or input",
	[IDEM_ENOTFOUND] = "not found",
	[IDEM_EEXIST] = "already exists",
	[IDEM_EFULL] = "store is full",
	[IDEM_EIO] = "store input/output error",
	[IDEM_EROFS] = "store is read-only",
	[IDEM_ECORRUPT] = "stored record is corrupt",
	[IDEM_ELOST] = "claim was taken over or is gone",
	[IDEM_ETOOBIG] = "value too large",
	[IDEM_ELIMIT] = "too many live keys for this scope",
	[IDEM_EREFUSED] = "refused by the application",
	[IDEM_ESEAL] = "a sealed value could not be opened",
	[IDEM_EBUSY] = "store is busy",
	[IDEM_EUNSAFE] = ("store's commits would not wait for a synchronous "
	    "standby"),
};

const char *
idem_strerror(int err)
{
	if (err < 0 || err >= IDEM_ERR__MAX)
		return "unknown error";
	return idem_errstr[err];
}
