/* SPDX-License-Identifier: MIT */
/*
 * file.h: opening a file a program reads at start (a key file, the API
 * keys, a log secret) without blocking on one that is not a file.
 *
 * open(2) of a FIFO for reading waits for a writer, and a device's may
 * never return: a configuration that names one would hang a start, or
 * idem-fcgi --check-config, for ever.  So the file is opened with
 * O_NONBLOCK, which such an open does not wait with, checked with fstat
 * to be a regular file, and only then read, in blocking mode again.
 */
#ifndef IDEM_FILE_H
#define IDEM_FILE_H

/* What file_open_regular returns for a path that is not a regular file. */
#define FILE_NOT_REGULAR (-2)

/*
 * Opens path for reading: a descriptor (close-on-exec, blocking) that the
 * caller closes; FILE_NOT_REGULAR when path names something other than a
 * regular file (a FIFO, a device, a directory, a socket), having waited
 * for nothing; -1 with errno when it cannot be opened.
 */
int file_open_regular(const char *path);

#endif
