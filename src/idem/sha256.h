/*
 * sha256.h: the SHA-256 compression function (FIPS 180-4, section 6.2.2),
 * which crypto.c's incremental hash and HMAC run on.
 *
 * Two implementations compute the same function: portable C, and on x86
 * processors with the SHA extensions one on the SHA-NI instructions.
 * sha256_shani_available tells at run time whether the second may run.
 */
#ifndef IDEM_SHA256_H
#define IDEM_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_BLOCK 64

/* Runs the compression over n consecutive 64-byte blocks at p. */
typedef void sha256_blocks_fn(uint32_t state[8], const uint8_t *p, size_t n);

sha256_blocks_fn sha256_blocks_portable;

/*
 * Whether this processor has the SHA, SSSE3 and SSE4.1 instructions that
 * sha256_blocks_shani uses; always 0 off x86.
 */
int sha256_shani_available(void);
#if defined(__x86_64__) || defined(__i386__)
sha256_blocks_fn sha256_blocks_shani;
#endif

#endif
