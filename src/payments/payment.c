/* SPDX-License-Identifier: MIT */
/*
 * payment.c: what a payment is, in bytes: the body of POST /payments,
 * the JSON representation, the stored row and the recovery point.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "crypto.h"
#include "idem.h"
#include "json.h"
#include "money.h"
#include "payment.h"

/* A strong ETag: the first 64 bits of the representation's SHA-256. */
void
pay_etag(const void *body, size_t len, char out[PAY_ETAG_SIZE])
{
	uint8_t d[CRYPTO_SHA256_SIZE];

	/* The closing quote takes the place of crypto_hex's NUL. */
	crypto_sha256(body, len, d);
	out[0] = '"';
	crypto_hex(d, 8, out + 1);
	out[17] = '"';
	out[18] = '\0';
}

/* Writes v with at least width digits, then c; returns the end. */
static char *
pay_time_field(char *p, unsigned v, unsigned width, char c)
{
	p += buf_fmt_uint(p, v, width);
	*p++ = c;
	return p;
}

/* The decimal digits s[0..n), which must all be digits. */
static int
pay_time_digits(const char *s, size_t n, unsigned *v)
{
	size_t i;

	*v = 0;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		*v = *v * 10 + (unsigned)(s[i] - '0');
	}
	return 0;
}

int
pay_time_parse(const char *s, size_t len, uint64_t *ms)
{
	static const char shape[] = "0000-00-00T00:00:00.000Z";
	static const size_t at[7][2] = { { 0, 4 }, { 5, 2 }, { 8, 2 },
	    { 11, 2 }, { 14, 2 }, { 17, 2 }, { 20, 3 } };
	unsigned v[7];
	struct tm tm;
	time_t t;
	size_t i;
	char back[64];

	if (len != sizeof(shape) - 1)
		return -1;
	for (i = 0; i < len; i++)
		if ((shape[i] == '0') != (s[i] >= '0' && s[i] <= '9') ||
		    (shape[i] != '0' && s[i] != shape[i]))
			return -1;
	for (i = 0; i < 7; i++)
		if (pay_time_digits(s + at[i][0], at[i][1], &v[i]) != 0)
			return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = (int)v[0] - 1900;
	tm.tm_mon = (int)v[1] - 1;
	tm.tm_mday = (int)v[2];
	tm.tm_hour = (int)v[3];
	tm.tm_min = (int)v[4];
	tm.tm_sec = (int)v[5];
	if ((t = timegm(&tm)) == (time_t)-1 || t < 0)
		return -1;
	*ms = (uint64_t)t * 1000 + v[6];
	/* Only what pay_time writes: no 31 February, no leap second. */
	pay_time(*ms, back);
	return memcmp(back, s, len) == 0 ? 0 : -1;
}

/* RFC 3339 in UTC with milliseconds: 2026-01-31T12:00:00.000Z. */
void
pay_time(uint64_t ms, char out[64])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char *p = out;

	gmtime_r(&t, &tm);
	p = pay_time_field(p, (unsigned)(tm.tm_year + 1900), 4, '-');
	p = pay_time_field(p, (unsigned)(tm.tm_mon + 1), 2, '-');
	p = pay_time_field(p, (unsigned)tm.tm_mday, 2, 'T');
	p = pay_time_field(p, (unsigned)tm.tm_hour, 2, ':');
	p = pay_time_field(p, (unsigned)tm.tm_min, 2, ':');
	p = pay_time_field(p, (unsigned)tm.tm_sec, 2, '.');
	p = pay_time_field(p, (unsigned)(ms % 1000), 3, 'Z');
	*p = '\0';
}

/* 1 to 8 letters and digits: safe to quote back to the client. */
static int
pay_code_printable(const char *code)
{
	size_t i;

	for (i = 0; code[i] != '\0'; i++)
		if (i >= 8 || !((code[i] >= 'A' && code[i] <= 'Z') ||
		    (code[i] >= 'a' && code[i] <= 'z') ||
		    (code[i] >= '0' && code[i] <= '9')))
			return 0;
	return i > 0;
}

/*
 * Validates the body of POST /payments: an object with exactly "amount"
 * (a JSON number, exact to the currency's minor unit, positive) and
 * "currency" (a supported ISO 4217 code), and whichever of the members
 * named in ignore (the route's fp_ignore) it carries, which are not read.
 * Unknown members are refused so that a misspelt field is an error, not a
 * silent default.
 */
int
pay_order_parse(const struct json_value *doc, const char *const *ignore,
    struct pay_order *o, char *detail, size_t len)
{
	const struct json_value *amount, *currency;
	enum money_status ms;
	const char *code;
	size_t n = json_count_named(doc, ignore);

	if (json_type(doc) != JSON_OBJECT) {
		snprintf(detail, len, "The body must be a JSON object with "
		    "\"amount\" and \"currency\".");
		return -1;
	}
	amount = json_get(doc, "amount");
	currency = json_get(doc, "currency");
	n += amount != NULL;
	n += currency != NULL;
	if (n != json_count(doc)) {
		snprintf(detail, len, "Only \"amount\" and \"currency\" may be "
		    "given.");
		return -1;
	}
	if (currency == NULL || json_type(currency) != JSON_STRING) {
		snprintf(detail, len, "\"currency\" is required: an ISO 4217 "
		    "code such as \"BRL\".");
		return -1;
	}
	code = json_text(currency, NULL);
	if ((o->cur = money_currency(code)) == NULL) {
		/*
		 * Echo the code only when it looks like one: the detail is
		 * stored and replayed, and must stay short, valid UTF-8.
		 */
		if (pay_code_printable(code))
			snprintf(detail, len, "Currency \"%s\" is not "
			    "supported.", code);
		else
			snprintf(detail, len, "\"currency\" must be an ISO "
			    "4217 code of three capital letters, such as "
			    "\"BRL\".");
		return -1;
	}
	if (amount == NULL || json_type(amount) != JSON_NUMBER) {
		snprintf(detail, len, "\"amount\" is required and must be a "
		    "JSON number, such as 100.00.");
		return -1;
	}
	ms = money_parse(json_text(amount, NULL), o->cur, &o->minor);
	if (ms != MONEY_OK) {
		snprintf(detail, len, "%s", money_strstatus(ms));
		return -1;
	}
	return 0;
}

int
pay_render(const struct pay_cp *cp, const struct pay_order *o,
    const char *charge_id, struct buf *out)
{
	char amount[48], when[64];
	struct json_writer w;

	money_format(o->minor, o->cur, amount, sizeof(amount));
	pay_time(cp->created_ms, when);
	json_write_init(&w, out);
	json_write_open(&w, '{');
	json_write_name(&w, "id");
	json_write_str(&w, cp->id);
	json_write_name(&w, "amount");
	json_write_raw(&w, amount, strlen(amount));
	json_write_name(&w, "currency");
	json_write_str(&w, o->cur->code);
	json_write_name(&w, "status");
	json_write_str(&w, "succeeded");
	json_write_name(&w, "charge_id");
	json_write_str(&w, charge_id);
	json_write_name(&w, "created_at");
	json_write_str(&w, when);
	json_write_close(&w, '}');
	return json_write_done(&w);
}

/* A payment row: version, the owner's scope, the JSON representation. */
int
pay_row_encode(const char *scope, const struct buf *body, struct buf *out)
{
	size_t slen = strlen(scope);

	if (buf_put_u8(out, PAY_ROW_VERSION) != IDEM_OK ||
	    buf_put_u16(out, (uint16_t)slen) != IDEM_OK ||
	    buf_append(out, scope, slen) != IDEM_OK ||
	    buf_put_u32(out, (uint32_t)body->len) != IDEM_OK ||
	    buf_append(out, body->data, body->len) != IDEM_OK)
		return IDEM_ENOMEM;
	return IDEM_OK;
}

/* Points at the scope and body inside an encoded row (borrowed). */
int
pay_row_decode(const void *row, size_t len, const uint8_t **scope,
    size_t *slen, const uint8_t **body, size_t *blen)
{
	struct rd r;
	uint8_t v;
	uint16_t sl;
	uint32_t bl;

	rd_init(&r, row, len);
	if (rd_u8(&r, &v) != IDEM_OK || v != PAY_ROW_VERSION ||
	    rd_u16(&r, &sl) != IDEM_OK || rd_bytes(&r, sl, scope) != IDEM_OK ||
	    rd_u32(&r, &bl) != IDEM_OK || rd_bytes(&r, bl, body) != IDEM_OK ||
	    r.left != 0)
		return IDEM_ECORRUPT;
	*slen = sl;
	*blen = bl;
	return IDEM_OK;
}

int
pay_cp_encode(const struct pay_cp *cp, struct buf *out)
{
	size_t clen = strlen(cp->order.cur->code);

	if (buf_put_u8(out, PAY_CP_VERSION) != IDEM_OK ||
	    buf_append(out, cp->id, PAY_ID_LEN) != IDEM_OK ||
	    buf_put_u64(out, cp->created_ms) != IDEM_OK ||
	    buf_put_u64(out, (uint64_t)cp->order.minor) != IDEM_OK ||
	    buf_put_u8(out, (uint8_t)clen) != IDEM_OK ||
	    buf_append(out, cp->order.cur->code, clen) != IDEM_OK)
		return IDEM_ENOMEM;
	return IDEM_OK;
}

/* The order of a version 2 point: a positive amount, a known currency. */
static int
pay_cp_decode_order(struct rd *rd, struct pay_order *o)
{
	const uint8_t *code;
	char c[8];
	uint64_t minor;
	uint8_t clen;

	if (rd_u64(rd, &minor) != IDEM_OK || minor == 0 ||
	    minor > (uint64_t)INT64_MAX || rd_u8(rd, &clen) != IDEM_OK ||
	    clen == 0 || clen >= sizeof(c) ||
	    rd_bytes(rd, clen, &code) != IDEM_OK)
		return IDEM_ECORRUPT;
	memcpy(c, code, clen);
	c[clen] = '\0';
	if ((o->cur = money_currency(c)) == NULL)
		return IDEM_ECORRUPT;
	o->minor = (int64_t)minor;
	return IDEM_OK;
}

int
pay_cp_decode(const void *point, size_t len, struct pay_cp *cp)
{
	const uint8_t *id;
	struct rd rd;
	uint8_t v;

	rd_init(&rd, point, len);
	if (rd_u8(&rd, &v) != IDEM_OK || (v != 1 && v != PAY_CP_VERSION) ||
	    rd_bytes(&rd, PAY_ID_LEN, &id) != IDEM_OK ||
	    rd_u64(&rd, &cp->created_ms) != IDEM_OK)
		return IDEM_ECORRUPT;
	cp->order.minor = 0;
	cp->order.cur = NULL;
	if ((v == PAY_CP_VERSION && pay_cp_decode_order(&rd, &cp->order) !=
	    IDEM_OK) || rd.left != 0)
		return IDEM_ECORRUPT;
	memcpy(cp->id, id, PAY_ID_LEN);
	cp->id[PAY_ID_LEN] = '\0';
	return IDEM_OK;
}

int
pay_id_shape(const char *id, const char *prefix, size_t len)
{
	size_t plen = strlen(prefix), i;

	if (strlen(id) != len || strncmp(id, prefix, plen) != 0)
		return 0;
	/* Lowercase hex, as crypto_hex writes it. */
	for (i = plen; i < len; i++)
		if (!((id[i] >= '0' && id[i] <= '9') ||
		    (id[i] >= 'a' && id[i] <= 'f')))
			return 0;
	return 1;
}

int
pay_id_valid(const char *id)
{
	return pay_id_shape(id, "pay_", PAY_ID_LEN);
}

/* A new payment's id and time, fixed before the provider is called. */
void
pay_cp_new(uint64_t now_ms, const struct pay_order *o, struct pay_cp *cp)
{
	uint8_t raw[PAY_ID_HEX / 2];

	crypto_random(raw, sizeof(raw));
	memcpy(cp->id, "pay_", 4);
	crypto_hex(raw, sizeof(raw), cp->id + 4);
	cp->created_ms = now_ms;
	cp->order = *o;
}
