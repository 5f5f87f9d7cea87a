/*
 * err.h: the library's one error enum.
 *
 * Every function of the library that can fail returns IDEM_OK (0) or one
 * of these values.  LMDB and errno codes are translated at the store's
 * edge; nothing above the store sees an MDB_* value.
 */
#ifndef IDEM_ERR_H
#define IDEM_ERR_H

enum idem_err {
	IDEM_OK = 0,
	IDEM_ENOMEM,    /* an allocation failed */
	IDEM_EINVAL,    /* an argument or an input is invalid */
	IDEM_ENOTFOUND, /* no such key, record or row */
	IDEM_EEXIST,    /* the row exists already */
	IDEM_EFULL,     /* the store's map is full (MDB_MAP_FULL, MDB_TXN_FULL) */
	IDEM_EIO,       /* the store failed to read or write */
	IDEM_EROFS,     /* the store is read-only or not writable by us */
	IDEM_ECORRUPT,  /* a stored record could not be decoded */
	IDEM_ELOST,     /* the claim is no longer ours: taken over or gone */
	IDEM_ETOOBIG,   /* a value exceeds a limit */
	IDEM_ELIMIT,    /* the scope holds as many live keys as it may */
	IDEM_ERR__MAX
};

/* Returns a static, human-readable description of err. */
const char *idem_strerror(int err);

#endif
