/*
 * crypto.c: hashing, randomness, sealing and constant-time comparison.
 *
 * This is the only file of the project that includes sodium.h, so that a
 * change of cryptographic library touches one file.  SHA-256 and its
 * HMAC run on sha256.c; libsodium does the rest.
 */
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sodium.h>

#include "buf.h"
#include "crypto.h"
#include "err.h"
#include "sha256.h"

/*
 * SHA-256 is the project's own (sha256.c): libsodium 1.0.18 has only a
 * portable one, and SHA-256 is a large share of a request's work.  One
 * incremental hash below (buffering and padding, FIPS 180-4 5.1.1) runs
 * on one compression function, chosen once by crypto_init: SHA-NI where
 * the processor has it, portable C elsewhere.
 */
struct crypto_sha256_state {
	uint32_t h[8];
	uint64_t len;               /* bytes hashed so far */
	uint8_t buf[SHA256_BLOCK];  /* the last len % 64 of them */
};

/* The HMAC's two states, each after its 64-byte pad. */
struct crypto_hmac_state {
	struct crypto_sha256_state inner, outer;
};

/*
 * Callers hold the states in crypto.h's opaque buffers, on the stack;
 * if a state ever outgrows its buffer the build must fail here.
 */
_Static_assert(sizeof(struct crypto_sha256_state) <=
    sizeof(((struct crypto_sha256 *)0)->opaque),
    "struct crypto_sha256_state does not fit struct crypto_sha256");
_Static_assert(alignof(struct crypto_sha256_state) <= 16,
    "struct crypto_sha256_state needs more alignment than crypto.h gives");
_Static_assert(sizeof(struct crypto_hmac_state) <=
    sizeof(((struct crypto_hmac *)0)->opaque),
    "struct crypto_hmac_state does not fit struct crypto_hmac");
_Static_assert(alignof(struct crypto_hmac_state) <= 16,
    "struct crypto_hmac_state needs more alignment than crypto.h gives");
_Static_assert(crypto_aead_xchacha20poly1305_ietf_KEYBYTES ==
    CRYPTO_AEAD_KEY_SIZE &&
    crypto_aead_xchacha20poly1305_ietf_NPUBBYTES == CRYPTO_AEAD_NONCE_SIZE &&
    crypto_aead_xchacha20poly1305_ietf_ABYTES == CRYPTO_AEAD_TAG_SIZE,
    "the CRYPTO_AEAD_ sizes disagree with libsodium");
_Static_assert(crypto_hash_sha256_BYTES == CRYPTO_SHA256_SIZE,
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

/*
 * Random bytes are drawn from the system's CSPRNG a pool at a time
 * (randombytes_buf, one getrandom(2) call) and handed out from a
 * per-thread pool, each byte once and wiped as it goes: a request that
 * wants 16 bytes no longer makes a system call of its own.  A fork
 * child must not hand out bytes its parent also will: the pools belong
 * to a generation, which a fork child's handler moves on.
 */
#define CRYPTO_POOL 512
/* Larger requests go to the system directly. */
#define CRYPTO_POOL_DIRECT 64

struct crypto_pool {
	uint64_t gen;      /* crypto_pool_gen when filled; 0: never */
	size_t left;       /* unused bytes, at the start of bytes */
	uint8_t bytes[CRYPTO_POOL];
};

static _Thread_local struct crypto_pool crypto_pool;
static _Atomic uint64_t crypto_pool_gen = 1;

static void
crypto_exit_wipe(void *arg)
{
	struct crypto_exit *e = arg;
	size_t i;

	for (i = 0; i < e->n; i++)
		sodium_memzero(e->slot[i].p, e->slot[i].len);
	e->n = 0;
}

void
crypto_random_forget(void)
{
	/* gen 0 means "never pool": keep it, whoever set it. */
	uint64_t gen = atomic_load(&crypto_pool_gen);

	while (gen != 0 && !atomic_compare_exchange_weak(&crypto_pool_gen,
	    &gen, gen + 1))
		;
}

static void
crypto_on_fork_child(void)
{
	crypto_random_forget();
}

static void
crypto_setup(void)
{
	crypto_exit_ready = pthread_key_create(&crypto_exit_key,
	    crypto_exit_wipe) == 0;
	if (pthread_atfork(NULL, NULL, crypto_on_fork_child) != 0)
		atomic_store(&crypto_pool_gen, 0);
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

/* The compression function: portable until crypto_init chooses. */
static sha256_blocks_fn *_Atomic crypto_sha256_blocks =
    sha256_blocks_portable;

int
crypto_sha256_use_portable(int portable)
{
	sha256_blocks_fn *fn = sha256_blocks_portable;

#if defined(__x86_64__) || defined(__i386__)
	if (!portable && sha256_shani_available())
		fn = sha256_blocks_shani;
#else
	(void)portable;
#endif
	atomic_store_explicit(&crypto_sha256_blocks, fn, memory_order_relaxed);
	return fn != sha256_blocks_portable;
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
	(void)crypto_sha256_use_portable(0);
	return IDEM_OK;
}

static struct crypto_sha256_state *
crypto_sha256_state(struct crypto_sha256 *h)
{
	return (struct crypto_sha256_state *)(void *)h->opaque;
}

static void
crypto_sha256_start(struct crypto_sha256_state *st)
{
	/* FIPS 180-4, 5.3.3. */
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(st->h, iv, sizeof(iv));
	st->len = 0;
}

static void
crypto_sha256_add(struct crypto_sha256_state *st, const uint8_t *p,
    size_t len)
{
	sha256_blocks_fn *blocks = atomic_load_explicit(&crypto_sha256_blocks,
	    memory_order_relaxed);
	size_t have = (size_t)(st->len % SHA256_BLOCK), take;

	st->len += len;
	if (have > 0) {
		take = SHA256_BLOCK - have;
		if (len < take) {
			memcpy(st->buf + have, p, len);
			return;
		}
		memcpy(st->buf + have, p, take);
		blocks(st->h, st->buf, 1);
		p += take;
		len -= take;
	}
	if (len >= SHA256_BLOCK) {
		blocks(st->h, p, len / SHA256_BLOCK);
		p += len - len % SHA256_BLOCK;
		len %= SHA256_BLOCK;
	}
	if (len > 0)
		memcpy(st->buf, p, len);
}

/* Pads (FIPS 180-4, 5.1.1), writes the digest and wipes the state. */
static void
crypto_sha256_finish(struct crypto_sha256_state *st,
    uint8_t out[CRYPTO_SHA256_SIZE])
{
	sha256_blocks_fn *blocks = atomic_load_explicit(&crypto_sha256_blocks,
	    memory_order_relaxed);
	size_t have = (size_t)(st->len % SHA256_BLOCK);
	uint64_t bits = st->len * 8;
	int i;

	st->buf[have++] = 0x80;
	if (have > SHA256_BLOCK - 8) {
		memset(st->buf + have, 0, SHA256_BLOCK - have);
		blocks(st->h, st->buf, 1);
		have = 0;
	}
	memset(st->buf + have, 0, SHA256_BLOCK - 8 - have);
	be_put(st->buf + SHA256_BLOCK - 8, 8, bits);
	blocks(st->h, st->buf, 1);
	for (i = 0; i < 8; i++)
		be_put(out + 4 * i, 4, st->h[i]);
	sodium_memzero(st, sizeof(*st));
}

void
crypto_sha256_init(struct crypto_sha256 *h)
{
	crypto_sha256_start(crypto_sha256_state(h));
}

void
crypto_sha256_update(struct crypto_sha256 *h, const void *data, size_t len)
{
	/* Zero bytes change nothing, and data may then be NULL. */
	if (len == 0)
		return;
	crypto_sha256_add(crypto_sha256_state(h), data, len);
}

void
crypto_sha256_final(struct crypto_sha256 *h, uint8_t out[CRYPTO_SHA256_SIZE])
{
	crypto_sha256_finish(crypto_sha256_state(h), out);
}

void
crypto_sha256(const void *data, size_t len, uint8_t out[CRYPTO_SHA256_SIZE])
{
	struct crypto_sha256_state st;

	crypto_sha256_start(&st);
	if (len > 0)
		crypto_sha256_add(&st, data, len);
	crypto_sha256_finish(&st, out);
}

/*
 * RFC 2104: a key longer than a block is hashed first; the inner and
 * outer states have absorbed the key padded with 0x36s and 0x5cs.
 */
void
crypto_hmac_init(struct crypto_hmac *h, const uint8_t *key, size_t keylen)
{
	struct crypto_hmac_state *hs = (struct crypto_hmac_state *)(void *)
	    h->opaque;
	uint8_t k[SHA256_BLOCK], pad[SHA256_BLOCK];
	size_t i;

	memset(k, 0, sizeof(k));
	if (keylen > SHA256_BLOCK)
		crypto_sha256(key, keylen, k);
	else if (keylen > 0)
		memcpy(k, key, keylen);
	for (i = 0; i < SHA256_BLOCK; i++)
		pad[i] = k[i] ^ 0x36;
	crypto_sha256_start(&hs->inner);
	crypto_sha256_add(&hs->inner, pad, sizeof(pad));
	for (i = 0; i < SHA256_BLOCK; i++)
		pad[i] = k[i] ^ 0x5c;
	crypto_sha256_start(&hs->outer);
	crypto_sha256_add(&hs->outer, pad, sizeof(pad));
	sodium_memzero(k, sizeof(k));
	sodium_memzero(pad, sizeof(pad));
}

void
crypto_hmac_sha256(const struct crypto_hmac *h,
    const struct crypto_part *parts, size_t n,
    uint8_t out[CRYPTO_SHA256_SIZE])
{
	const struct crypto_hmac_state *hs =
	    (const struct crypto_hmac_state *)(const void *)h->opaque;
	struct crypto_sha256_state st;
	uint8_t inner[CRYPTO_SHA256_SIZE];
	size_t i;

	st = hs->inner;
	for (i = 0; i < n; i++)
		if (parts[i].len > 0)
			crypto_sha256_add(&st, parts[i].data, parts[i].len);
	crypto_sha256_finish(&st, inner);
	st = hs->outer;
	crypto_sha256_add(&st, inner, sizeof(inner));
	crypto_sha256_finish(&st, out);
	sodium_memzero(inner, sizeof(inner));
}

void
crypto_random(void *buf, size_t len)
{
	struct crypto_pool *pl = &crypto_pool;
	uint64_t gen;

	pthread_once(&crypto_once, crypto_setup);
	gen = atomic_load_explicit(&crypto_pool_gen, memory_order_relaxed);
	/* gen 0: forks cannot be told apart, so nothing is pooled. */
	if (len > CRYPTO_POOL_DIRECT || gen == 0) {
		randombytes_buf(buf, len);
		return;
	}
	if (pl->gen != gen || pl->left < len) {
		if (crypto_wipe_at_exit(pl, sizeof(*pl)) != 0) {
			randombytes_buf(buf, len);
			return;
		}
		randombytes_buf(pl->bytes, sizeof(pl->bytes));
		pl->left = sizeof(pl->bytes);
		pl->gen = gen;
	}
	pl->left -= len;
	memcpy(buf, pl->bytes + pl->left, len);
	sodium_memzero(pl->bytes + pl->left, len);
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
