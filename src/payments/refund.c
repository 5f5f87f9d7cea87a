/* SPDX-License-Identifier: MIT */
/*
 * refund.c: what a refund is, in bytes: the body of POST
 * /payments/{id}/refunds, the JSON representation, the stored rows (the
 * refund, the payment's totals, a claim's hold) and the recovery point.
 */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "crypto.h"
#include "idem.h"
#include "json.h"
#include "money.h"
#include "payment.h"
#include "refund.h"

/*
 * Validates the body of a refund: an object with at most "amount", and
 * whichever of the members named in ignore (the route's fp_ignore) it
 * carries, which are not read.  The currency is the payment's, so it is
 * not given; an unknown member is refused so that a misspelt field is an
 * error, not a silent full refund.
 */
int
refund_ask_parse(const struct json_value *doc, const char *const *ignore,
    const struct currency *cur, struct refund_ask *ask, char *detail,
    size_t len)
{
	const struct json_value *amount;
	enum money_status ms;

	ask->minor = 0;
	if (json_type(doc) != JSON_OBJECT) {
		snprintf(detail, len, "The body must be a JSON object, "
		    "{\"amount\": 10.00} or {} for all that is left.");
		return -1;
	}
	amount = json_get(doc, "amount");
	if (json_count(doc) != (amount != NULL ? 1u : 0u) +
	    json_count_named(doc, ignore)) {
		snprintf(detail, len, "Only \"amount\" may be given; the "
		    "currency is the payment's.");
		return -1;
	}
	if (amount == NULL)
		return 0;
	if (json_type(amount) != JSON_NUMBER) {
		snprintf(detail, len, "\"amount\" must be a JSON number, such "
		    "as 10.00.");
		return -1;
	}
	ms = money_parse(json_text(amount, NULL), cur, &ask->minor);
	if (ms != MONEY_OK) {
		snprintf(detail, len, "%s", money_strstatus(ms));
		return -1;
	}
	return 0;
}

int64_t
refund_left(const struct refund_totals *t)
{
	return t->amount - t->refunded - t->reserved;
}

int
refund_reserve(struct refund_totals *t, const struct refund_ask *ask,
    int64_t *amount)
{
	int64_t left = refund_left(t);

	*amount = ask->minor > 0 ? ask->minor : left;
	if (*amount <= 0 || *amount > left)
		return -1;
	t->reserved += *amount;
	return 0;
}

int
refund_render(const struct refund_cp *cp, const char *payment, int64_t minor,
    const struct currency *cur, struct buf *out)
{
	char amount[48], when[64];
	struct json_writer w;

	money_format(minor, cur, amount, sizeof(amount));
	pay_time(cp->created_ms, when);
	json_write_init(&w, out);
	json_write_open(&w, '{');
	json_write_name(&w, "id");
	json_write_str(&w, cp->id);
	json_write_name(&w, "payment");
	json_write_str(&w, payment);
	json_write_name(&w, "amount");
	json_write_raw(&w, amount, strlen(amount));
	json_write_name(&w, "currency");
	json_write_str(&w, cur->code);
	json_write_name(&w, "status");
	json_write_str(&w, "succeeded");
	json_write_name(&w, "created_at");
	json_write_str(&w, when);
	json_write_close(&w, '}');
	return json_write_done(&w);
}

int
refund_payment_money(const void *body, size_t len, int64_t *minor,
    const struct currency **cur)
{
	const struct json_value *a, *c;
	struct json_value *doc = NULL;
	char err[80];
	int rc = IDEM_ECORRUPT;

	if (json_parse(body, len, &doc, err, sizeof(err)) != JSON_OK)
		return IDEM_ECORRUPT;
	a = json_get(doc, "amount");
	c = json_get(doc, "currency");
	if (a != NULL && c != NULL && json_type(a) == JSON_NUMBER &&
	    json_type(c) == JSON_STRING &&
	    (*cur = money_currency(json_text(c, NULL))) != NULL &&
	    money_parse(json_text(a, NULL), *cur, minor) == MONEY_OK)
		rc = IDEM_OK;
	json_free(doc);
	return rc;
}

int
refund_payment_view(const void *body, size_t len, int64_t refunded,
    const struct currency *cur, struct buf *out)
{
	char amount[48];
	struct json_writer w;
	int rc;

	money_format(refunded, cur, amount, sizeof(amount));
	if ((rc = json_write_extend(&w, out, body, len)) != IDEM_OK)
		return rc == IDEM_EINVAL ? IDEM_ECORRUPT : rc;
	json_write_name(&w, "amount_refunded");
	json_write_raw(&w, amount, strlen(amount));
	json_write_close(&w, '}');
	return json_write_done(&w);
}

int
refund_row_encode(const char *scope, const char *payment,
    const struct buf *body, struct buf *out)
{
	size_t slen = strlen(scope);

	if (buf_put_u8(out, REFUND_ROW_VERSION) != IDEM_OK ||
	    buf_put_u16(out, (uint16_t)slen) != IDEM_OK ||
	    buf_append(out, scope, slen) != IDEM_OK ||
	    buf_append(out, payment, PAY_ID_LEN) != IDEM_OK ||
	    buf_put_u32(out, (uint32_t)body->len) != IDEM_OK ||
	    buf_append(out, body->data, body->len) != IDEM_OK)
		return IDEM_ENOMEM;
	return IDEM_OK;
}

int
refund_row_decode(const void *row, size_t len, const uint8_t **scope,
    size_t *slen, const uint8_t **payment, const uint8_t **body,
    size_t *blen)
{
	struct rd r;
	uint8_t v;
	uint16_t sl;
	uint32_t bl;

	rd_init(&r, row, len);
	if (rd_u8(&r, &v) != IDEM_OK || v != REFUND_ROW_VERSION ||
	    rd_u16(&r, &sl) != IDEM_OK || rd_bytes(&r, sl, scope) != IDEM_OK ||
	    rd_bytes(&r, PAY_ID_LEN, payment) != IDEM_OK ||
	    rd_u32(&r, &bl) != IDEM_OK || rd_bytes(&r, bl, body) != IDEM_OK ||
	    r.left != 0)
		return IDEM_ECORRUPT;
	*slen = sl;
	*blen = bl;
	return IDEM_OK;
}

int
refund_totals_encode(const struct refund_totals *t, struct buf *out)
{
	if (buf_put_u8(out, REFUND_TOTALS_VERSION) != IDEM_OK ||
	    buf_put_u64(out, (uint64_t)t->amount) != IDEM_OK ||
	    buf_put_u64(out, (uint64_t)t->refunded) != IDEM_OK ||
	    buf_put_u64(out, (uint64_t)t->reserved) != IDEM_OK)
		return IDEM_ENOMEM;
	return IDEM_OK;
}

/* Amounts are within MONEY_MAX_MINOR, and the invariant holds. */
int
refund_totals_decode(const void *v, size_t len, struct refund_totals *t)
{
	uint64_t a, f, r;
	struct rd rd;
	uint8_t ver;

	rd_init(&rd, v, len);
	if (rd_u8(&rd, &ver) != IDEM_OK || ver != REFUND_TOTALS_VERSION ||
	    rd_u64(&rd, &a) != IDEM_OK || rd_u64(&rd, &f) != IDEM_OK ||
	    rd_u64(&rd, &r) != IDEM_OK || rd.left != 0 ||
	    a > (uint64_t)MONEY_MAX_MINOR || f > a || r > a - f)
		return IDEM_ECORRUPT;
	t->amount = (int64_t)a;
	t->refunded = (int64_t)f;
	t->reserved = (int64_t)r;
	return IDEM_OK;
}

int
refund_hold_encode(const struct refund_hold *h, struct buf *out)
{
	if (buf_put_u8(out, REFUND_HOLD_VERSION) != IDEM_OK ||
	    buf_append(out, h->payment, PAY_ID_LEN) != IDEM_OK ||
	    buf_put_u64(out, (uint64_t)h->amount) != IDEM_OK ||
	    buf_put_u64(out, (uint64_t)h->left) != IDEM_OK)
		return IDEM_ENOMEM;
	return IDEM_OK;
}

int
refund_hold_decode(const void *v, size_t len, struct refund_hold *h)
{
	const uint8_t *p;
	uint64_t a, l;
	struct rd rd;
	uint8_t ver;

	rd_init(&rd, v, len);
	if (rd_u8(&rd, &ver) != IDEM_OK || ver != REFUND_HOLD_VERSION ||
	    rd_bytes(&rd, PAY_ID_LEN, &p) != IDEM_OK ||
	    rd_u64(&rd, &a) != IDEM_OK || rd_u64(&rd, &l) != IDEM_OK ||
	    rd.left != 0 || a > (uint64_t)MONEY_MAX_MINOR ||
	    l > (uint64_t)MONEY_MAX_MINOR)
		return IDEM_ECORRUPT;
	memcpy(h->payment, p, PAY_ID_LEN);
	h->payment[PAY_ID_LEN] = '\0';
	h->amount = (int64_t)a;
	h->left = (int64_t)l;
	return IDEM_OK;
}

int
refund_cp_encode(const struct refund_cp *cp, struct buf *out)
{
	if (buf_put_u8(out, REFUND_CP_VERSION) != IDEM_OK ||
	    buf_append(out, cp->id, REFUND_ID_LEN) != IDEM_OK ||
	    buf_put_u64(out, cp->created_ms) != IDEM_OK)
		return IDEM_ENOMEM;
	return IDEM_OK;
}

int
refund_cp_decode(const void *point, size_t len, struct refund_cp *cp)
{
	const uint8_t *id;
	struct rd rd;
	uint8_t v;

	rd_init(&rd, point, len);
	if (rd_u8(&rd, &v) != IDEM_OK || v != REFUND_CP_VERSION ||
	    rd_bytes(&rd, REFUND_ID_LEN, &id) != IDEM_OK ||
	    rd_u64(&rd, &cp->created_ms) != IDEM_OK || rd.left != 0)
		return IDEM_ECORRUPT;
	memcpy(cp->id, id, REFUND_ID_LEN);
	cp->id[REFUND_ID_LEN] = '\0';
	return refund_id_valid(cp->id) ? IDEM_OK : IDEM_ECORRUPT;
}

void
refund_cp_new(uint64_t now_ms, struct refund_cp *cp)
{
	uint8_t raw[REFUND_ID_HEX / 2];

	crypto_random(raw, sizeof(raw));
	memcpy(cp->id, "re_", 3);
	crypto_hex(raw, sizeof(raw), cp->id + 3);
	cp->created_ms = now_ms;
}

int
refund_id_valid(const char *id)
{
	return pay_id_shape(id, "re_", REFUND_ID_LEN);
}
