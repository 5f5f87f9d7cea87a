/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "idem.h"

/* The first block of a buffer, in bytes. */
#define BUF_FIRST 256

void
buf_init(struct buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void
buf_free(struct buf *b)
{
	free(b->data);
	buf_init(b);
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

/*
 * Grows b to hold extra more bytes and the terminator.  The first block
 * is big enough for most of what a request builds (a representation, a
 * record, a key), so that a buffer is seldom moved more than once.
 */
int
buf_reserve(struct buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (extra > SIZE_MAX - b->len - 1)
		return IDEM_ENOMEM;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return IDEM_OK;
	cap = b->cap ? b->cap : BUF_FIRST;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if ((p = realloc(b->data, cap)) == NULL)
		return IDEM_ENOMEM;
	b->data = p;
	b->cap = cap;
	return IDEM_OK;
}

/*
 * Makes room for extra more bytes, growing b only when they do not fit.
 * A buffer with room has len < cap (the terminator takes one byte), so
 * extra bytes more fit exactly when extra < cap - len; an empty buffer
 * (cap 0) never passes and is grown.
 */
static int
buf_room(struct buf *b, size_t extra)
{
	if (extra < b->cap - b->len)
		return IDEM_OK;
	return buf_reserve(b, extra);
}

int
buf_append(struct buf *b, const void *data, size_t len)
{
	if (buf_room(b, len) != IDEM_OK)
		return IDEM_ENOMEM;
	if (len > 0)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return IDEM_OK;
}

int
buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int
buf_putc(struct buf *b, char c)
{
	if (buf_room(b, 1) != IDEM_OK)
		return IDEM_ENOMEM;
	b->data[b->len++] = c;
	b->data[b->len] = '\0';
	return IDEM_OK;
}

int
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return IDEM_EINVAL;
	if (buf_reserve(b, (size_t)n) != IDEM_OK)
		return IDEM_ENOMEM;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return IDEM_OK;
}

size_t
buf_fmt_uint(char *p, uint64_t v, unsigned width)
{
	char digits[BUF_DEC_MAX], *end = digits + sizeof(digits), *d = end;
	size_t n = 0;

	do
		*--d = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n + (size_t)(end - d) < width)
		p[n++] = '0';
	while (d < end)
		p[n++] = *d++;
	return n;
}

size_t
buf_fmt_int(char *p, int64_t v)
{
	/* The magnitude of INT64_MIN is representable only unsigned. */
	if (v < 0) {
		*p = '-';
		return 1 + buf_fmt_uint(p + 1, 0 - (uint64_t)v, 0);
	}
	return buf_fmt_uint(p, (uint64_t)v, 0);
}

int
buf_put_int(struct buf *b, int64_t v)
{
	char text[BUF_DEC_MAX + 1];

	return buf_append(b, text, buf_fmt_int(text, v));
}

/* Appends the low n bytes of v, big-endian. */
static int
buf_put_be(struct buf *b, size_t n, uint64_t v)
{
	if (buf_room(b, n) != IDEM_OK)
		return IDEM_ENOMEM;
	be_put((uint8_t *)b->data + b->len, n, v);
	b->len += n;
	b->data[b->len] = '\0';
	return IDEM_OK;
}

int
buf_put_u8(struct buf *b, uint8_t v)
{
	return buf_put_be(b, 1, v);
}

void
be_put(uint8_t *p, size_t n, uint64_t v)
{
	while (n-- > 0) {
		p[n] = (uint8_t)v;
		v >>= 8;
	}
}

uint64_t
be_get(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

int
buf_put_u16(struct buf *b, uint16_t v)
{
	return buf_put_be(b, 2, v);
}

int
buf_put_u32(struct buf *b, uint32_t v)
{
	return buf_put_be(b, 4, v);
}

int
buf_put_u64(struct buf *b, uint64_t v)
{
	return buf_put_be(b, 8, v);
}

void
rd_init(struct rd *r, const void *data, size_t len)
{
	r->p = data;
	r->left = len;
}

static int
rd_uint(struct rd *r, size_t n, uint64_t *v)
{
	if (r->left < n)
		return IDEM_ECORRUPT;
	*v = be_get(r->p, n);
	r->p += n;
	r->left -= n;
	return IDEM_OK;
}

int
rd_u8(struct rd *r, uint8_t *v)
{
	uint64_t x;
	int rc;

	if ((rc = rd_uint(r, 1, &x)) == IDEM_OK)
		*v = (uint8_t)x;
	return rc;
}

int
rd_u16(struct rd *r, uint16_t *v)
{
	uint64_t x;
	int rc;

	if ((rc = rd_uint(r, 2, &x)) == IDEM_OK)
		*v = (uint16_t)x;
	return rc;
}

int
rd_u32(struct rd *r, uint32_t *v)
{
	uint64_t x;
	int rc;

	if ((rc = rd_uint(r, 4, &x)) == IDEM_OK)
		*v = (uint32_t)x;
	return rc;
}

int
rd_u64(struct rd *r, uint64_t *v)
{
	return rd_uint(r, 8, v);
}

int
rd_bytes(struct rd *r, size_t len, const uint8_t **p)
{
	if (r->left < len)
		return IDEM_ECORRUPT;
	*p = r->p;
	r->p += len;
	r->left -= len;
	return IDEM_OK;
}
