/* SPDX-License-Identifier: MIT */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "crypto.h"
#include "file.h"
#include "keyhash.h"

static int
keyhash_read(const char *path, uint8_t secret[KEYHASH_SECRET_SIZE])
{
	ssize_t n;
	int fd;

	if ((fd = file_open_regular(path)) == FILE_NOT_REGULAR) {
		errno = EINVAL;
		return -1;
	}
	if (fd == -1)
		return -1;
	n = read(fd, secret, KEYHASH_SECRET_SIZE);
	close(fd);
	if (n != KEYHASH_SECRET_SIZE) {
		errno = n < 0 ? errno : EINVAL;
		return -1;
	}
	return 0;
}

/*
 * Writes a fresh secret to a file of our own and links it into place:
 * link fails if another process got there first, and nobody ever reads a
 * half-written secret.
 */
static int
keyhash_create(const char *path)
{
	uint8_t secret[KEYHASH_SECRET_SIZE];
	char tmp[PATH_MAX];
	int fd, rc = -1, saved;

	if (snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long)getpid()) >=
	    (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) == -1)
		return -1;
	crypto_random(secret, sizeof(secret));
	if (write(fd, secret, sizeof(secret)) == (ssize_t)sizeof(secret) &&
	    fsync(fd) == 0 && (link(tmp, path) == 0 || errno == EEXIST))
		rc = 0;
	saved = errno;
	close(fd);
	unlink(tmp);
	memset(secret, 0, sizeof(secret));
	errno = saved;
	return rc;
}

int
keyhash_secret_load(const char *dir, int create,
    uint8_t secret[KEYHASH_SECRET_SIZE], char *err, size_t errlen)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s", dir, KEYHASH_FILE) >=
	    (int)sizeof(path)) {
		snprintf(err, errlen, "%s/%s: path too long", dir,
		    KEYHASH_FILE);
		return -1;
	}
	if (keyhash_read(path, secret) == 0)
		return 0;
	if (errno == ENOENT && create && keyhash_create(path) == 0 &&
	    keyhash_read(path, secret) == 0)
		return 0;
	snprintf(err, errlen, "%s: %s", path, strerror(errno));
	return -1;
}

void
keyhash_init(struct keyhash *kh, const uint8_t secret[KEYHASH_SECRET_SIZE])
{
	crypto_hmac_init(&kh->hmac, secret, KEYHASH_SECRET_SIZE);
}

void
keyhash_compute(const struct keyhash *kh, const char *scope, const char *key,
    char out[KEYHASH_HEX + 1])
{
	uint8_t mac[CRYPTO_SHA256_SIZE];
	struct crypto_part parts[3] = {
		{ scope, strlen(scope) }, { "", 1 }, { key, strlen(key) },
	};

	crypto_hmac_sha256(&kh->hmac, parts, 3, mac);
	crypto_hex(mac, KEYHASH_HEX / 2, out);
}
