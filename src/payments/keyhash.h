/* SPDX-License-Identifier: MIT */
/*
 * keyhash.h: the name under which logs and idemctl show an idempotency
 * key.
 *
 * Logs must let an operator follow one key through many lines without
 * holding the key, which is the client's secret handle on a payment.  A
 * plain hash of a key is no protection: keys are often guessable (order
 * numbers), and anyone with the log could confirm a guess.  So the name
 * is an HMAC-SHA-256 of "scope NUL key" under a random per-install
 * secret, kept beside the store (KEYHASH_FILE, mode 0600) and never
 * logged, truncated to 128 bits.
 */
#ifndef PAY_KEYHASH_H
#define PAY_KEYHASH_H

#include <stddef.h>
#include <stdint.h>

#include "crypto.h"

#define KEYHASH_FILE "log-secret"
#define KEYHASH_SECRET_SIZE 32
#define KEYHASH_HEX 32

/*
 * Reads dir/KEYHASH_FILE into secret, creating it first (atomically: the
 * first process to link it wins, the others read its secret) when it is
 * missing and create is set.  Returns 0, or -1 with a sentence in err.
 */
int keyhash_secret_load(const char *dir, int create,
    uint8_t secret[KEYHASH_SECRET_SIZE], char *err, size_t errlen);

/* The HMAC under a secret, prepared once (see crypto_hmac_init). */
struct keyhash {
	struct crypto_hmac hmac;
};

void keyhash_init(struct keyhash *kh,
    const uint8_t secret[KEYHASH_SECRET_SIZE]);

/* Writes the KEYHASH_HEX hex digits and a NUL to out. */
void keyhash_compute(const struct keyhash *kh, const char *scope,
    const char *key, char out[KEYHASH_HEX + 1]);

#endif
