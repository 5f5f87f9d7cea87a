/* SPDX-License-Identifier: MIT */
/*
 * crypto.c: hashing, randomness, sealing and constant-time comparison.
 *
 * This is the only file of the project that includes sodium.h, so that a
 * change of cryptographic library touches one file.  Every primitive is
 * libsodium's: SHA-256, HMAC-SHA-256, random bytes, the AEAD, constant-
 * time comparison and wiping.
 */
#include <pthread.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sodium.h>

#include "buf.h"
#include "crypto.h"
#include "idem.h"

/*
 * Callers hold libsodium's states in crypto.h's opaque buffers, on the
 * stack; if a state ever outgrows its buffer the build must fail here.
 */
_Static_assert(sizeof(crypto_hash_sha256_state) <=
    sizeof(((struct crypto_sha256 *)0)->opaque),
    "crypto_hash_sha256_state does not fit struct crypto_sha256");
_Static_assert(alignof(crypto_hash_sha256_state) <= 16,
    "crypto_hash_sha256_state needs more alignment than crypto.h gives");
_Static_assert(sizeof(crypto_auth_hmacsha256_state) <=
    sizeof(((struct crypto_hmac *)0)->opaque),
    "crypto_auth_hmacsha256_state does not fit struct crypto_hmac");
_Static_assert(alignof(crypto_auth_hmacsha256_state) <= 16,
    "crypto_auth_hmacsha256_state needs more alignment than crypto.h gives");
_Static_assert(crypto_aead_xchacha20poly1305_ietf_KEYBYTES ==
    CRYPTO_AEAD_KEY_SIZE &&
    crypto_aead_xchacha20poly1305_ietf_NPUBBYTES == CRYPTO_AEAD_NONCE_SIZE &&
    crypto_aead_xchacha20poly1305_ietf_ABYTES == CRYPTO_AEAD_TAG_SIZE,
    "the CRYPTO_AEAD_ sizes disagree with libsodium");
_Static_assert(crypto_hash_sha256_BYTES == CRYPTO_SHA256_SIZE &&
    crypto_auth_hmacsha256_BYTES == CRYPTO_SHA256_SIZE,
    "CRYPTO_SHA256_SIZE disagrees with libsodium");

/*
 * Thread-local secrets to wipe when their thread exits: one key, whose
 * destructor wipes every region its thread registered.
 */
#define CRYPTO_EXIT_SLOTS 4

struct crypto_exit {
	size_t n;
	struct {
		void *p;
		size_t len;
	} slot[CRYPTO_EXIT_SLOTS];
};

static _Thread_local struct crypto_exit crypto_exit;
static pthread_key_t crypto_exit_key;
static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;
static int crypto_exit_ready;

static void
crypto_exit_wipe(void *arg)
{
	struct crypto_exit *e = arg;
	size_t i;

	for (i = 0; i < e->n; i++)
		sodium_memzero(e->slot[i].p, e->slot[i].len);
	e->n = 0;
}

static void
crypto_setup(void)
{
	crypto_exit_ready = pthread_key_create(&crypto_exit_key,
	    crypto_exit_wipe) == 0;
}

int
crypto_wipe_at_exit(void *p, size_t len)
{
	struct crypto_exit *e = &crypto_exit;
	size_t i;

	pthread_once(&crypto_once, crypto_setup);
	for (i = 0; i < e->n; i++)
		if (e->slot[i].p == p)
			return 0;
	if (!crypto_exit_ready || e->n == CRYPTO_EXIT_SLOTS ||
	    (e->n == 0 && pthread_setspecific(crypto_exit_key, e) != 0))
		return -1;
	e->slot[e->n].p = p;
	e->slot[e->n].len = len;
	e->n++;
	return 0;
}

int
crypto_init(void)
{
	/*
	 * sodium_init returns 1 when it already ran, which is fine: workers
	 * forked from an initialised parent call it again.
	 */
	if (sodium_init() < 0)
		return IDEM_EINVAL;
	return IDEM_OK;
}

static crypto_hash_sha256_state *
crypto_sha256_state(struct crypto_sha256 *h)
{
	return (crypto_hash_sha256_state *)(void *)h->opaque;
}

void
crypto_sha256_init(struct crypto_sha256 *h)
{
	crypto_hash_sha256_init(crypto_sha256_state(h));
}

void
crypto_sha256_update(struct crypto_sha256 *h, const void *data, size_t len)
{
	/* Zero bytes change nothing, and data may then be NULL. */
	if (len == 0)
		return;
	crypto_hash_sha256_update(crypto_sha256_state(h), data,
	    (unsigned long long)len);
}

/* Writes the digest, then wipes the state, which held the message. */
void
crypto_sha256_final(struct crypto_sha256 *h, uint8_t out[CRYPTO_SHA256_SIZE])
{
	crypto_hash_sha256_final(crypto_sha256_state(h), out);
	sodium_memzero(h->opaque, sizeof(h->opaque));
}

void
crypto_sha256(const void *data, size_t len, uint8_t out[CRYPTO_SHA256_SIZE])
{
	static const uint8_t none;

	crypto_hash_sha256(out, len > 0 ? data : &none,
	    (unsigned long long)len);
}

/*
 * RFC 2104, as libsodium does it: a key longer than a block is hashed
 * first, and the state then holds the inner and outer hashes after their
 * pads, which is most of the work of a short message's HMAC.
 */
void
crypto_hmac_init(struct crypto_hmac *h, const uint8_t *key, size_t keylen)
{
	static const uint8_t none;

	crypto_auth_hmacsha256_init((crypto_auth_hmacsha256_state *)(void *)
	    h->opaque, keylen > 0 ? key : &none, keylen);
}

void
crypto_hmac_sha256(const struct crypto_hmac *h,
    const struct crypto_part *parts, size_t n,
    uint8_t out[CRYPTO_SHA256_SIZE])
{
	crypto_auth_hmacsha256_state st;
	size_t i;

	memcpy(&st, h->opaque, sizeof(st));
	for (i = 0; i < n; i++)
		if (parts[i].len > 0)
			crypto_auth_hmacsha256_update(&st, parts[i].data,
			    (unsigned long long)parts[i].len);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}

/*
 * Every call draws from libsodium (getrandom(2) on Linux): nothing is
 * kept between calls, so a fork child can never hand out what its parent
 * also will.
 */
void
crypto_random(void *buf, size_t len)
{
	randombytes_buf(buf, len);
}

uint64_t
crypto_siphash(const uint8_t key[CRYPTO_SIPHASH_KEY_SIZE],
    const void *data, size_t len)
{
	unsigned char out[crypto_shorthash_BYTES];
	uint64_t h;

	_Static_assert(crypto_shorthash_KEYBYTES == CRYPTO_SIPHASH_KEY_SIZE,
	    "CRYPTO_SIPHASH_KEY_SIZE is libsodium's");
	_Static_assert(crypto_shorthash_BYTES == sizeof(h),
	    "a short hash is 64 bits");
	crypto_shorthash(out, data, len, key);
	memcpy(&h, out, sizeof(h));
	return h;
}

int
crypto_equal(const void *a, const void *b, size_t len)
{
	if (len == 0)
		return 1;
	return sodium_memcmp(a, b, len) == 0;
}

void
crypto_wipe(void *buf, size_t len)
{
	sodium_memzero(buf, len);
}

void
crypto_hex(const uint8_t *in, size_t len, char *out)
{
	sodium_bin2hex(out, 2 * len + 1, in, len);
}

int
crypto_unhex(const char *in, uint8_t *out, size_t len)
{
	size_t n;

	/*
	 * sodium_hex2bin stops at the first byte that is not a hex digit
	 * (a NUL included), so a short string is refused without reading
	 * past its end; exactly len bytes must come out.
	 */
	if (sodium_hex2bin(out, len, in, 2 * len, NULL, &n, NULL) != 0 ||
	    n != len)
		return IDEM_EINVAL;
	return IDEM_OK;
}

void
crypto_aead_seal(uint8_t *out, const void *in, size_t len, const void *ad,
    size_t adlen, const uint8_t nonce[CRYPTO_AEAD_NONCE_SIZE],
    const uint8_t key[CRYPTO_AEAD_KEY_SIZE])
{
	crypto_aead_xchacha20poly1305_ietf_encrypt(out, NULL, in,
	    (unsigned long long)len, ad, (unsigned long long)adlen, NULL,
	    nonce, key);
}

int
crypto_aead_open(uint8_t *out, const void *in, size_t len, const void *ad,
    size_t adlen, const uint8_t nonce[CRYPTO_AEAD_NONCE_SIZE],
    const uint8_t key[CRYPTO_AEAD_KEY_SIZE])
{
	if (len < CRYPTO_AEAD_TAG_SIZE ||
	    crypto_aead_xchacha20poly1305_ietf_decrypt(out, NULL, NULL, in,
	    (unsigned long long)len, ad, (unsigned long long)adlen, nonce,
	    key) != 0)
		return IDEM_ESEAL;
	return IDEM_OK;
}
