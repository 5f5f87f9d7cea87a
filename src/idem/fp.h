/* SPDX-License-Identifier: MIT */
/*
 * fp.h: the request fingerprint.
 *
 * SHA-256 over a domain tag and four length-prefixed fields: method, path,
 * query and body.  Each field is preceded by its length as an 8-byte
 * big-endian integer, so no two different requests hash the same input
 * (no field can borrow bytes from its neighbour).  Whether body is the raw
 * bytes or the canonical JSON form is the caller's choice (fp_mode), and
 * the mode is part of the hashed input (see fp.c).
 */
#ifndef IDEM_FP_H
#define IDEM_FP_H

#include <stddef.h>
#include <stdint.h>

#define FP_SIZE 32

enum fp_mode {
	FP_CANONICAL = 0, /* JSON bodies are hashed in canonical form */
	FP_RAW,           /* bodies are hashed as received */
	FP_MODE__MAX
};

void fp_compute(enum fp_mode mode, const char *method, const char *path,
    const char *query, const void *body, size_t bodylen, uint8_t out[FP_SIZE]);

/* Parses "canonical" or "raw"; IDEM_OK or IDEM_EINVAL. */
int fp_mode_parse(const char *s, enum fp_mode *mode);

#endif
