/* SPDX-License-Identifier: MIT */
/*
 * test_buf.c: the growable buffer and its decimal numbers, which must
 * print exactly what printf prints.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "harness.h"

/* 0, and 10^k - 1 and 10^k for every digit count a uint64_t has. */
static size_t
edge_values(uint64_t *v)
{
	uint64_t p = 1;
	size_t n = 0;

	v[n++] = 0;
	for (;;) {
		v[n++] = p - 1;
		v[n++] = p;
		v[n++] = p + 1;
		if (p > UINT64_MAX / 10)
			break;
		p *= 10;
	}
	v[n++] = UINT64_MAX - 1;
	v[n++] = UINT64_MAX;
	v[n++] = (uint64_t)INT64_MAX;
	v[n++] = (uint64_t)INT64_MAX + 1;
	return n;
}

static void
test_fmt_uint(void)
{
	char want[64], got[64];
	uint64_t v[80];
	size_t n, i, len;
	unsigned width;

	n = edge_values(v);
	for (i = 0; i < n; i++) {
		for (width = 0; width <= BUF_DEC_MAX + 2; width++) {
			snprintf(want, sizeof(want), "%0*llu", (int)width,
			    (unsigned long long)v[i]);
			memset(got, 'x', sizeof(got));
			len = buf_fmt_uint(got, v[i], width);
			HARNESS_EQ(len, strlen(want));
			/* Nothing is written past what is returned. */
			CU_ASSERT(got[len] == 'x');
			got[len] = '\0';
			CU_ASSERT_STRING_EQUAL(got, want);
		}
	}
}

static void
test_fmt_int(void)
{
	char want[64], got[64];
	uint64_t v[80];
	int64_t x[4];
	size_t n, i, j, len;

	n = edge_values(v);
	for (i = 0; i < n; i++) {
		/* From INT64_MIN (-INT64_MAX - 1) to INT64_MAX. */
		x[0] = (int64_t)(v[i] & INT64_MAX);
		x[1] = -x[0];
		x[2] = x[0] - 1;
		x[3] = -x[0] - 1;
		for (j = 0; j < 4; j++) {
			snprintf(want, sizeof(want), "%lld", (long long)x[j]);
			memset(got, 'x', sizeof(got));
			len = buf_fmt_int(got, x[j]);
			HARNESS_EQ(len, strlen(want));
			CU_ASSERT(got[len] == 'x');
			got[len] = '\0';
			CU_ASSERT_STRING_EQUAL(got, want);
		}
	}
	len = buf_fmt_int(got, INT64_MIN);
	got[len] = '\0';
	CU_ASSERT_STRING_EQUAL(got, "-9223372036854775808");
}

static void
test_put_int(void)
{
	struct buf b = BUF_INIT;

	CU_ASSERT_FATAL(buf_puts(&b, "e") == IDEM_OK);
	CU_ASSERT_FATAL(buf_put_int(&b, -42) == IDEM_OK);
	CU_ASSERT_FATAL(buf_putc(&b, ',') == IDEM_OK);
	CU_ASSERT_FATAL(buf_put_int(&b, INT64_MAX) == IDEM_OK);
	CU_ASSERT_STRING_EQUAL(b.data, "e-42,9223372036854775807");
	HARNESS_EQ(b.len, strlen(b.data));
	buf_free(&b);
}

/*
 * Appends of every size, one byte to a few blocks, across every growth:
 * the bytes are kept, the text is NUL-terminated, and the terminator
 * always has room.
 */
static void
test_append_growth(void)
{
	char want[5000], chunk[700];
	struct buf b = BUF_INIT;
	size_t n = 0, k, step;

	for (k = 0; k < sizeof(chunk); k++)
		chunk[k] = (char)('a' + k % 26);
	for (step = 0; n + step < sizeof(want); step = (step * 7 + 3) % 700) {
		if (step % 3 == 1) {
			CU_ASSERT_FATAL(buf_putc(&b, chunk[step]) == IDEM_OK);
			want[n++] = chunk[step];
		} else {
			CU_ASSERT_FATAL(buf_append(&b, chunk, step) ==
			    IDEM_OK);
			memcpy(want + n, chunk, step);
			n += step;
		}
		HARNESS_EQ(b.len, n);
		CU_ASSERT_FATAL(b.len < b.cap);
		CU_ASSERT(b.data[b.len] == '\0');
		CU_ASSERT(memcmp(b.data, want, n) == 0);
	}
	buf_free(&b);
	CU_ASSERT_PTR_NULL(b.data);
}

/* A buffer filled exactly to its last byte grows on the next byte. */
static void
test_append_to_the_brim(void)
{
	struct buf b = BUF_INIT;
	char fill[4096];
	size_t cap;

	memset(fill, 'z', sizeof(fill));
	CU_ASSERT_FATAL(buf_append(&b, "", 0) == IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b.data);
	CU_ASSERT_STRING_EQUAL(b.data, "");
	cap = b.cap;
	CU_ASSERT_FATAL(buf_append(&b, fill, cap - 1) == IDEM_OK);
	HARNESS_EQ(b.cap, cap);
	CU_ASSERT(b.data[cap - 1] == '\0');
	CU_ASSERT_FATAL(buf_putc(&b, 'y') == IDEM_OK);
	CU_ASSERT(b.cap > cap);
	HARNESS_EQ(b.len, cap);
	CU_ASSERT(b.data[cap - 1] == 'y' && b.data[cap] == '\0');
	buf_reset(&b);
	HARNESS_EQ(b.len, 0);
	CU_ASSERT_STRING_EQUAL(b.data, "");
	buf_free(&b);
}

/* A reservation makes room without appending. */
static void
test_reserve(void)
{
	struct buf b = BUF_INIT;
	const char *data;

	CU_ASSERT_FATAL(buf_reserve(&b, 1000) == IDEM_OK);
	CU_ASSERT(b.cap > 1000);
	HARNESS_EQ(b.len, 0);
	data = b.data;
	CU_ASSERT_FATAL(buf_printf(&b, "%0500d", 7) == IDEM_OK);
	CU_ASSERT_FATAL(buf_append(&b, b.data, 500) == IDEM_OK);
	CU_ASSERT(b.data == data);
	HARNESS_EQ(b.len, 1000);
	HARNESS_EQ(strlen(b.data), 1000);
	CU_ASSERT(buf_reserve(&b, SIZE_MAX - 5) == IDEM_ENOMEM);
	HARNESS_EQ(b.len, 1000);
	buf_free(&b);
}

static const struct {
	const char *name;
	void (*fn)(void);
} buf_tests[] = {
	{ "unsigned as printf", test_fmt_uint },
	{ "signed as printf", test_fmt_int },
	{ "put a number", test_put_int },
	{ "appends across growth", test_append_growth },
	{ "append to the brim", test_append_to_the_brim },
	{ "reserve", test_reserve },
};

int
harness_suites(void)
{
	CU_pSuite s;
	size_t i;

	if ((s = CU_add_suite("buf", NULL, NULL)) == NULL)
		return -1;
	for (i = 0; i < sizeof(buf_tests) / sizeof(buf_tests[0]); i++)
		if (CU_add_test(s, buf_tests[i].name, buf_tests[i].fn) == NULL)
			return -1;
	return 0;
}
