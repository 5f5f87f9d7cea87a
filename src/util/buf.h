/* SPDX-License-Identifier: MIT */
/*
 * buf.h: a growable byte buffer.
 *
 * The buffer owns its memory; buf_free releases it.  data is always
 * NUL-terminated past len (the terminator is not counted), so text can be
 * handed to string functions.  Out-of-memory is reported, never fatal: each
 * append returns IDEM_OK or IDEM_ENOMEM, and a failed append leaves the
 * buffer as it was.
 */
#ifndef IDEM_BUF_H
#define IDEM_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
	char *data;
	size_t len;
	size_t cap;
};

#define BUF_INIT { NULL, 0, 0 }

void buf_init(struct buf *b);
void buf_free(struct buf *b);
void buf_reset(struct buf *b);
int buf_reserve(struct buf *b, size_t extra);
int buf_append(struct buf *b, const void *data, size_t len);
int buf_puts(struct buf *b, const char *s);
int buf_putc(struct buf *b, char c);
int buf_printf(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/*
 * Decimal numbers without printf, for the numbers of answers, records and
 * log lines.  buf_fmt_uint writes v as printf's "%0*llu" does with width:
 * at least width digits, zero-padded on the left.  buf_fmt_int writes v
 * as "%lld" does.  Both write to p only the characters they return the
 * count of (BUF_DEC_MAX or width at most, and a sign), and no NUL.
 * buf_put_int appends v as buf_fmt_int writes it.
 */
#define BUF_DEC_MAX 20	/* the digits of UINT64_MAX */
size_t buf_fmt_uint(char *p, uint64_t v, unsigned width);
size_t buf_fmt_int(char *p, int64_t v);
int buf_put_int(struct buf *b, int64_t v);
/*
 * Big-endian fixed-width integers, for record encodings and keys: the one
 * writer and reader of them.  be_put writes the low n bytes of v (n at
 * most 8) to p; be_get reads n bytes.
 */
void be_put(uint8_t *p, size_t n, uint64_t v);
uint64_t be_get(const uint8_t *p, size_t n);
int buf_put_u8(struct buf *b, uint8_t v);
int buf_put_u16(struct buf *b, uint16_t v);
int buf_put_u32(struct buf *b, uint32_t v);
int buf_put_u64(struct buf *b, uint64_t v);

/*
 * A bounds-checked reader over borrowed bytes.  Each get returns IDEM_OK,
 * or IDEM_ECORRUPT when fewer bytes remain than asked for.
 */
struct rd {
	const uint8_t *p;
	size_t left;
};

void rd_init(struct rd *r, const void *data, size_t len);
int rd_u8(struct rd *r, uint8_t *v);
int rd_u16(struct rd *r, uint16_t *v);
int rd_u32(struct rd *r, uint32_t *v);
int rd_u64(struct rd *r, uint64_t *v);
/* Points *p at the next len bytes, still owned by the reader's source. */
int rd_bytes(struct rd *r, size_t len, const uint8_t **p);

#endif
