/* SPDX-License-Identifier: MIT */
/*
 * file.c: opening a file a program reads at start without blocking on
 * one that is not a file (file.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"

int
file_open_regular(const char *path)
{
	struct stat st;
	int fd, flags, saved;

	while ((fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY |
	    O_CLOEXEC)) == -1 && errno == EINTR)
		;
	if (fd == -1)
		return -1;
	if (fstat(fd, &st) != 0) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return FILE_NOT_REGULAR;
	}
	if ((flags = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}
