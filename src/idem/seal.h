/* SPDX-License-Identifier: MIT */
/*
 * seal.h: values sealed at rest, and the keys that seal them.
 *
 * A sealed value is the plaintext encrypted and authenticated with
 * XChaCha20-Poly1305 (libsodium's crypto_aead_xchacha20poly1305_ietf,
 * through crypto.h) under a random 24-byte nonce per write:
 *
 *	version u8 (SEAL_VERSION), key id [4], nonce [24],
 *	ciphertext [len], tag [16]
 *
 * The associated data names the value's place (a record's scope and key,
 * or a row's table and key, with what the value is), so a sealed value
 * copied to another place does not open; the version and key id are
 * authenticated with it.  The key id is the first 4 bytes of the
 * SHA-256 of a domain tag and the key, so a value says which key sealed
 * it without saying anything about the key.
 *
 * A key file is text: one key a line, 64 hex digits (32 bytes), the
 * first the current key that seals, the others older keys that still
 * open what they sealed; blank lines and lines starting with '#' are
 * skipped.  `idemctl new-secret FILE` makes one.  A loaded sealer is
 * only read, so threads may share it.
 */
#ifndef IDEM_SEAL_H
#define IDEM_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define SEAL_VERSION 1
#define SEAL_KEY_SIZE 32
#define SEAL_ID_SIZE 4
#define SEAL_NONCE_SIZE 24
#define SEAL_TAG_SIZE 16
#define SEAL_HEADER_SIZE (1 + SEAL_ID_SIZE)
#define SEAL_OVERHEAD (SEAL_HEADER_SIZE + SEAL_NONCE_SIZE + SEAL_TAG_SIZE)
#define SEAL_MAX_KEYS 8
#define SEAL_FILE_MAX 4096

struct seal_key {
	uint8_t id[SEAL_ID_SIZE];
	uint8_t key[SEAL_KEY_SIZE];
};

struct sealer {
	size_t nkeys;                      /* 1 to SEAL_MAX_KEYS */
	struct seal_key keys[SEAL_MAX_KEYS]; /* keys[0] seals */
};

/*
 * What a sealed value is bound to: its kind ("record-point",
 * "record-response", "row") and its place, two byte strings (a scope
 * and a key, or a table name and a row key).
 */
struct seal_ad {
	const char *kind;
	const void *place;
	size_t placelen;
	const void *name;
	size_t namelen;
};

/*
 * Parses a key file's text (len bytes) into *s.  IDEM_OK, or
 * IDEM_EINVAL with a sentence in err: a line that is not 64 hex digits,
 * no key, more than SEAL_MAX_KEYS, two keys with one id.  The text is
 * outside input (a file an operator edits): it is fuzzed.
 */
int seal_parse(const char *text, size_t len, struct sealer *s, char *err,
    size_t errlen);

/*
 * Reads and parses the key file at path.  A file that others than its
 * owner and group may read is refused.  On IDEM_OK *out is the caller's
 * (seal_free).  IDEM_EINVAL or IDEM_ENOTFOUND with a sentence in err,
 * which never holds a key.
 */
int seal_load(const char *path, struct sealer **out, char *err,
    size_t errlen);

/* Wipes and frees s (may be NULL). */
void seal_free(struct sealer *s);

/*
 * Appends the sealing of in (len bytes) under the current key, bound to
 * ad, to out.  IDEM_OK, IDEM_ENOMEM, IDEM_ETOOBIG.
 */
int seal_seal(const struct sealer *s, const struct seal_ad *ad,
    const void *in, size_t len, struct buf *out);

/*
 * Appends the plaintext of the sealed value in (len bytes), bound to ad,
 * to out.  IDEM_ESEAL when it does not open: not a sealed value, a key
 * id the sealer does not hold, another place, or bytes changed; id then
 * gets the value's key id (zero when it has none).  id may be NULL.
 */
int seal_open(const struct sealer *s, const struct seal_ad *ad,
    const void *in, size_t len, struct buf *out, uint8_t id[SEAL_ID_SIZE]);

/*
 * The key id of a sealed value: IDEM_OK, or IDEM_ESEAL when in is too
 * short or of another version to be one.
 */
int seal_value_id(const void *in, size_t len, uint8_t id[SEAL_ID_SIZE]);

/* Whether a sealed value was sealed under s's current key. */
int seal_is_current(const struct sealer *s, const void *in, size_t len);

/* The key id as 8 lowercase hex digits and a NUL. */
void seal_id_hex(const uint8_t id[SEAL_ID_SIZE],
    char out[2 * SEAL_ID_SIZE + 1]);

/*
 * Creates the key file path holding one fresh random key, mode 0600,
 * refusing to replace anything there.  IDEM_OK, or IDEM_EEXIST /
 * IDEM_EIO with a sentence in err.
 */
int seal_new_file(const char *path, char *err, size_t errlen);

#endif
