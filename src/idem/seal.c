/* SPDX-License-Identifier: MIT */
/*
 * seal.c: sealing values at rest under the keys of a key file (seal.h).
 *
 * The cipher is crypto.h's XChaCha20-Poly1305: its 24-byte nonces are
 * long enough to be drawn at random for every write without counting
 * them, which suits many processes writing one store.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crypto.h"
#include "err.h"
#include "file.h"
#include "seal.h"

#define SEAL_ID_TAG "idem-seal-key-id-v1"
#define SEAL_AD_TAG "idem-seal-v1"

_Static_assert(SEAL_KEY_SIZE == CRYPTO_AEAD_KEY_SIZE &&
    SEAL_NONCE_SIZE == CRYPTO_AEAD_NONCE_SIZE &&
    SEAL_TAG_SIZE == CRYPTO_AEAD_TAG_SIZE,
    "seal.h's sizes disagree with crypto.h");

static void
seal_key_id(const uint8_t key[SEAL_KEY_SIZE], uint8_t id[SEAL_ID_SIZE])
{
	struct crypto_sha256 h;
	uint8_t d[CRYPTO_SHA256_SIZE];

	crypto_sha256_init(&h);
	crypto_sha256_update(&h, SEAL_ID_TAG, sizeof(SEAL_ID_TAG));
	crypto_sha256_update(&h, key, SEAL_KEY_SIZE);
	crypto_sha256_final(&h, d);
	memcpy(id, d, SEAL_ID_SIZE);
}

void
seal_id_hex(const uint8_t id[SEAL_ID_SIZE], char out[2 * SEAL_ID_SIZE + 1])
{
	crypto_hex(id, SEAL_ID_SIZE, out);
}

/* One line of a key file, without its end of line; 1 for a key. */
static int
seal_line(const char *p, size_t len, struct sealer *s, size_t lineno,
    char *err, size_t errlen)
{
	char hex[2 * SEAL_KEY_SIZE + 1];
	struct seal_key *k;
	size_t i;

	while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t' ||
	    p[len - 1] == '\r'))
		len--;
	if (len == 0 || p[0] == '#')
		return 0;
	if (len != 2 * SEAL_KEY_SIZE) {
		snprintf(err, errlen, "line %zu is not a key of %d hex digits",
		    lineno, 2 * SEAL_KEY_SIZE);
		return -1;
	}
	if (s->nkeys == SEAL_MAX_KEYS) {
		snprintf(err, errlen, "more than %d keys", SEAL_MAX_KEYS);
		return -1;
	}
	memcpy(hex, p, len);
	hex[len] = '\0';
	k = &s->keys[s->nkeys];
	if (crypto_unhex(hex, k->key, SEAL_KEY_SIZE) != IDEM_OK) {
		crypto_wipe(hex, sizeof(hex));
		snprintf(err, errlen, "line %zu is not a key of %d hex digits",
		    lineno, 2 * SEAL_KEY_SIZE);
		return -1;
	}
	crypto_wipe(hex, sizeof(hex));
	seal_key_id(k->key, k->id);
	for (i = 0; i < s->nkeys; i++)
		if (memcmp(s->keys[i].id, k->id, SEAL_ID_SIZE) == 0) {
			snprintf(err, errlen, "line %zu repeats a key (or its "
			    "id)", lineno);
			return -1;
		}
	s->nkeys++;
	return 1;
}

int
seal_parse(const char *text, size_t len, struct sealer *s, char *err,
    size_t errlen)
{
	const char *p = text, *end = text + len, *nl;
	size_t lineno = 0;

	memset(s, 0, sizeof(*s));
	if (memchr(text, '\0', len) != NULL) {
		snprintf(err, errlen, "the key file holds a NUL byte");
		goto fail;
	}
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		lineno++;
		if (seal_line(p, (size_t)(nl - p), s, lineno, err, errlen) < 0)
			goto fail;
		p = nl + 1;
	}
	if (s->nkeys == 0) {
		snprintf(err, errlen, "the key file holds no key");
		goto fail;
	}
	return IDEM_OK;

fail:
	crypto_wipe(s, sizeof(*s));
	return IDEM_EINVAL;
}

int
seal_load(const char *path, struct sealer **out, char *err, size_t errlen)
{
	char text[SEAL_FILE_MAX + 1];
	struct sealer *s;
	struct stat st;
	ssize_t n;
	size_t len = 0;
	int fd, rc;

	*out = NULL;
	if ((fd = file_open_regular(path)) == FILE_NOT_REGULAR) {
		snprintf(err, errlen, "the key file %s must be a regular file "
		    "that others cannot read (chmod 600), not a FIFO, a "
		    "device or a directory", path);
		return IDEM_EINVAL;
	}
	if (fd < 0) {
		snprintf(err, errlen, "cannot open the key file %s: %s", path,
		    strerror(errno));
		return errno == ENOENT ? IDEM_ENOTFOUND : IDEM_EINVAL;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (st.st_mode & S_IRWXO) != 0) {
		close(fd);
		snprintf(err, errlen, "the key file %s must be a regular file "
		    "that others cannot read (chmod 600)", path);
		return IDEM_EINVAL;
	}
	while (len < sizeof(text) &&
	    (n = read(fd, text + len, sizeof(text) - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		len += (size_t)n;
	}
	close(fd);
	if (len > SEAL_FILE_MAX) {
		crypto_wipe(text, sizeof(text));
		snprintf(err, errlen, "the key file %s is over %d bytes", path,
		    SEAL_FILE_MAX);
		return IDEM_EINVAL;
	}
	if ((s = malloc(sizeof(*s))) == NULL) {
		crypto_wipe(text, sizeof(text));
		snprintf(err, errlen, "out of memory");
		return IDEM_ENOMEM;
	}
	rc = seal_parse(text, len, s, err, errlen);
	crypto_wipe(text, sizeof(text));
	if (rc != IDEM_OK) {
		free(s);
		return rc;
	}
	*out = s;
	return IDEM_OK;
}

void
seal_free(struct sealer *s)
{
	if (s == NULL)
		return;
	crypto_wipe(s, sizeof(*s));
	free(s);
}

/*
 * The associated data: the tag, the header (version and key id), and
 * the kind and the two parts of the place, each preceded by its length,
 * so that no two places give one input.
 */
static int
seal_ad_make(const struct seal_ad *ad, const uint8_t hdr[SEAL_HEADER_SIZE],
    struct buf *out)
{
	size_t kindlen = strlen(ad->kind);
	int rc;

	if ((rc = buf_append(out, SEAL_AD_TAG, sizeof(SEAL_AD_TAG))) !=
	    IDEM_OK ||
	    (rc = buf_append(out, hdr, SEAL_HEADER_SIZE)) != IDEM_OK ||
	    (rc = buf_put_u32(out, (uint32_t)kindlen)) != IDEM_OK ||
	    (rc = buf_append(out, ad->kind, kindlen)) != IDEM_OK ||
	    (rc = buf_put_u32(out, (uint32_t)ad->placelen)) != IDEM_OK ||
	    (rc = buf_append(out, ad->place, ad->placelen)) != IDEM_OK ||
	    (rc = buf_put_u32(out, (uint32_t)ad->namelen)) != IDEM_OK)
		return rc;
	return buf_append(out, ad->name, ad->namelen);
}

int
seal_seal(const struct sealer *s, const struct seal_ad *ad, const void *in,
    size_t len, struct buf *out)
{
	const struct seal_key *k = &s->keys[0];
	uint8_t hdr[SEAL_HEADER_SIZE], *p;
	struct buf adb = BUF_INIT;
	int rc;

	if (len > UINT32_MAX || ad->placelen > UINT32_MAX ||
	    ad->namelen > UINT32_MAX)
		return IDEM_ETOOBIG;
	hdr[0] = SEAL_VERSION;
	memcpy(hdr + 1, k->id, SEAL_ID_SIZE);
	if ((rc = seal_ad_make(ad, hdr, &adb)) != IDEM_OK ||
	    (rc = buf_reserve(out, SEAL_OVERHEAD + len)) != IDEM_OK) {
		buf_free(&adb);
		return rc;
	}
	p = (uint8_t *)out->data + out->len;
	memcpy(p, hdr, SEAL_HEADER_SIZE);
	crypto_random(p + SEAL_HEADER_SIZE, SEAL_NONCE_SIZE);
	crypto_aead_seal(p + SEAL_HEADER_SIZE + SEAL_NONCE_SIZE, in, len,
	    adb.data, adb.len, p + SEAL_HEADER_SIZE, k->key);
	out->len += SEAL_OVERHEAD + len;
	out->data[out->len] = '\0';
	buf_free(&adb);
	return IDEM_OK;
}

int
seal_value_id(const void *in, size_t len, uint8_t id[SEAL_ID_SIZE])
{
	const uint8_t *p = in;

	if (len < SEAL_OVERHEAD || p[0] != SEAL_VERSION)
		return IDEM_ESEAL;
	memcpy(id, p + 1, SEAL_ID_SIZE);
	return IDEM_OK;
}

int
seal_is_current(const struct sealer *s, const void *in, size_t len)
{
	uint8_t id[SEAL_ID_SIZE];

	return seal_value_id(in, len, id) == IDEM_OK &&
	    memcmp(id, s->keys[0].id, SEAL_ID_SIZE) == 0;
}

int
seal_open(const struct sealer *s, const struct seal_ad *ad, const void *in,
    size_t len, struct buf *out, uint8_t id[SEAL_ID_SIZE])
{
	const uint8_t *p = in;
	const struct seal_key *k = NULL;
	uint8_t vid[SEAL_ID_SIZE];
	struct buf adb = BUF_INIT;
	size_t i, plen;
	int rc;

	memset(vid, 0, sizeof(vid));
	if (seal_value_id(in, len, vid) == IDEM_OK)
		for (i = 0; i < s->nkeys && k == NULL; i++)
			if (memcmp(s->keys[i].id, vid, SEAL_ID_SIZE) == 0)
				k = &s->keys[i];
	if (id != NULL)
		memcpy(id, vid, SEAL_ID_SIZE);
	if (k == NULL)
		return IDEM_ESEAL;
	plen = len - SEAL_OVERHEAD;
	if ((rc = seal_ad_make(ad, p, &adb)) != IDEM_OK ||
	    (rc = buf_reserve(out, plen)) != IDEM_OK) {
		buf_free(&adb);
		return rc;
	}
	rc = crypto_aead_open((uint8_t *)out->data + out->len,
	    p + SEAL_HEADER_SIZE + SEAL_NONCE_SIZE, len - SEAL_HEADER_SIZE -
	    SEAL_NONCE_SIZE, adb.data, adb.len, p + SEAL_HEADER_SIZE, k->key);
	buf_free(&adb);
	if (rc != IDEM_OK) {
		out->data[out->len] = '\0';
		return IDEM_ESEAL;
	}
	out->len += plen;
	out->data[out->len] = '\0';
	return IDEM_OK;
}

int
seal_new_file(const char *path, char *err, size_t errlen)
{
	uint8_t key[SEAL_KEY_SIZE];
	char line[2 * SEAL_KEY_SIZE + 2];
	size_t len, off = 0;
	ssize_t n;
	int fd, rc = IDEM_OK;

	/* O_EXCL: an existing file, or a link planted there, is left be. */
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
	    O_NOFOLLOW, 0600)) < 0) {
		snprintf(err, errlen, "%s: %s%s", path, strerror(errno),
		    errno == EEXIST ? " (a key file is never replaced)" : "");
		return errno == EEXIST ? IDEM_EEXIST : IDEM_EIO;
	}
	crypto_random(key, sizeof(key));
	crypto_hex(key, sizeof(key), line);
	crypto_wipe(key, sizeof(key));
	len = strlen(line);
	line[len++] = '\n';
	while (off < len) {
		n = write(fd, line + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	crypto_wipe(line, sizeof(line));
	if (off != len || fsync(fd) != 0) {
		snprintf(err, errlen, "%s: cannot write: %s", path,
		    strerror(errno));
		rc = IDEM_EIO;
	}
	if (close(fd) != 0 && rc == IDEM_OK) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		rc = IDEM_EIO;
	}
	if (rc != IDEM_OK)
		unlink(path);
	return rc;
}
