/* SPDX-License-Identifier: MIT */
/*
 * crypto.h: the library's wall around libsodium.
 *
 * Only crypto.c includes sodium.h.  crypto_init must succeed once per
 * process before anything else here is called (idem_open calls it).
 * Every primitive behind it is libsodium's.
 */
#ifndef IDEM_CRYPTO_H
#define IDEM_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#define CRYPTO_SHA256_SIZE 32

/* Returns IDEM_OK, or IDEM_EINVAL when libsodium cannot start. */
int crypto_init(void);

/* Incremental SHA-256. */
struct crypto_sha256 {
	/* Large enough for crypto.c's state, checked there. */
	unsigned char opaque[128] __attribute__((aligned(16)));
};

void crypto_sha256_init(struct crypto_sha256 *h);
void crypto_sha256_update(struct crypto_sha256 *h, const void *data, size_t len);
void crypto_sha256_final(struct crypto_sha256 *h, uint8_t out[CRYPTO_SHA256_SIZE]);
void crypto_sha256(const void *data, size_t len, uint8_t out[CRYPTO_SHA256_SIZE]);

/*
 * Fills buf with len bytes from libsodium's randombytes_buf (the
 * system's CSPRNG), every call afresh.
 */
void crypto_random(void *buf, size_t len);

/*
 * HMAC-SHA-256 (RFC 2104) under a key prepared once: crypto_hmac_init
 * hashes the key's inner and outer pads, which is most of the work of a
 * short message's HMAC, and each crypto_hmac_sha256 starts from a copy of
 * that state.  A prepared key is only read, so threads may share it.
 */
struct crypto_hmac {
	/* Large enough for crypto.c's two states, checked there. */
	unsigned char opaque[256] __attribute__((aligned(16)));
};

void crypto_hmac_init(struct crypto_hmac *h, const uint8_t *key,
    size_t keylen);

/* The HMAC of the concatenation of the n parts under h's key. */
struct crypto_part {
	const void *data;
	size_t len;
};
void crypto_hmac_sha256(const struct crypto_hmac *h,
    const struct crypto_part *parts, size_t n,
    uint8_t out[CRYPTO_SHA256_SIZE]);

/*
 * SipHash-2-4 of len bytes under a secret key (libsodium's
 * crypto_shorthash): for hash tables whose keys outsiders choose, so
 * that they cannot make them collide.
 */
#define CRYPTO_SIPHASH_KEY_SIZE 16
uint64_t crypto_siphash(const uint8_t key[CRYPTO_SIPHASH_KEY_SIZE],
    const void *data, size_t len);

/* Compares len bytes in time that does not depend on their contents; 1 if equal. */
int crypto_equal(const void *a, const void *b, size_t len);

/*
 * XChaCha20-Poly1305 (IETF construction): crypto_aead_seal writes len
 * bytes of ciphertext and the CRYPTO_AEAD_TAG_SIZE-byte tag to out;
 * crypto_aead_open writes len - CRYPTO_AEAD_TAG_SIZE bytes of plaintext
 * and returns IDEM_OK, or IDEM_ESEAL when the tag does not match.  ad is
 * authenticated, not encrypted.
 */
#define CRYPTO_AEAD_KEY_SIZE 32
#define CRYPTO_AEAD_NONCE_SIZE 24
#define CRYPTO_AEAD_TAG_SIZE 16
void crypto_aead_seal(uint8_t *out, const void *in, size_t len,
    const void *ad, size_t adlen, const uint8_t nonce[CRYPTO_AEAD_NONCE_SIZE],
    const uint8_t key[CRYPTO_AEAD_KEY_SIZE]);
int crypto_aead_open(uint8_t *out, const void *in, size_t len,
    const void *ad, size_t adlen, const uint8_t nonce[CRYPTO_AEAD_NONCE_SIZE],
    const uint8_t key[CRYPTO_AEAD_KEY_SIZE]);

/* Zeroes len bytes in a way the compiler does not optimise away. */
void crypto_wipe(void *buf, size_t len);

/*
 * Has the len bytes at p, thread-local storage of the calling thread,
 * wiped when that thread exits (a few regions per thread).  Registering
 * the same p again does nothing.  Returns 0, or -1 when it cannot be
 * arranged: the caller must then not keep secrets there.
 */
int crypto_wipe_at_exit(void *p, size_t len);

/* Writes 2*len lowercase hex digits and a NUL to out. */
void crypto_hex(const uint8_t *in, size_t len, char *out);

/* Parses exactly 2*len hex digits from in; IDEM_OK or IDEM_EINVAL. */
int crypto_unhex(const char *in, uint8_t *out, size_t len);

#endif
