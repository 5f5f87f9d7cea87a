/* SPDX-License-Identifier: MIT */
/*
 * check.c: the invariants, checked against the ground-truth log.
 *
 * The log is small (a schedule has a few dozen keys), so it is kept in
 * fixed arrays and searched linearly; what matters is that every check is
 * obviously right, not fast.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "check.h"
#include "err.h"
#include "payment.h"
#include "refund.h"
#include "rowkey.h"
#include "sim.h"

#define CHECK_MAX 1024
#define ID_LEN 28          /* "pay_" or "ch_" and 24 hex digits, at most */
#define NEVER UINT64_MAX

/* A charge or a refund the provider made afresh. */
struct charge {
	char scope[16], key[48], id[64];
	int refund;                /* a refund of payment */
	char payment[64];
	int64_t amount;
	uint64_t at_ms, created_ms;
	uint64_t recorded_ms;      /* the completion that holds it, or NEVER */
	int rows;                  /* payment (refund) rows that name it */
};

/* The answer stored last for (scope, key). */
struct stored {
	char scope[16], key[48];
	struct sim_resp resp;
};

/* Who an identifier that may appear in a body belongs to. */
struct owner {
	char id[64];
	char scope[16];
	char *body;                /* a payment's representation, or NULL */
	int64_t amount;            /* a payment's, in minor units, or -1 */
};

static struct {
	struct charge charges[CHECK_MAX];
	size_t ncharges;
	struct stored stored[CHECK_MAX];
	size_t nstored;
	struct owner owners[CHECK_MAX];
	size_t nowners;
} C;

void
sim_resp_free(struct sim_resp *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}

int
sim_resp_same(const struct sim_resp *a, const struct sim_resp *b)
{
	return a->status == b->status && strcmp(a->ctype, b->ctype) == 0 &&
	    strcmp(a->location, b->location) == 0 &&
	    strcmp(a->etag, b->etag) == 0 && a->bodylen == b->bodylen &&
	    memcmp(a->body, b->body, a->bodylen) == 0;
}

static void
sim_resp_body(struct sim_resp *out, const void *body, size_t len)
{
	if ((out->body = malloc(len + 1)) == NULL)
		abort();
	if (len > 0)
		memcpy(out->body, body, len);
	out->body[len] = '\0';
	out->bodylen = len;
}

static void
copy_header(char *dst, size_t dstlen, const char *v)
{
	snprintf(dst, dstlen, "%s", v != NULL ? v : "");
}

void
sim_resp_from_rec(const struct rec_response *in, struct sim_resp *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	out->status = in->status;
	for (i = 0; i < in->nheaders; i++) {
		const char *n = in->headers[i].name, *v = in->headers[i].value;

		if (strcmp(n, "Content-Type") == 0)
			copy_header(out->ctype, sizeof(out->ctype), v);
		else if (strcmp(n, "Location") == 0)
			copy_header(out->location, sizeof(out->location), v);
		else if (strcmp(n, "ETag") == 0)
			copy_header(out->etag, sizeof(out->etag), v);
	}
	sim_resp_body(out, in->body, in->bodylen);
}

void
sim_resp_from_rec_copy(const struct sim_resp *in, struct sim_resp *out)
{
	*out = *in;
	sim_resp_body(out, in->body, in->bodylen);
}

void
sim_resp_from_http(const struct response *in, struct sim_resp *out)
{
	const char *v;

	memset(out, 0, sizeof(*out));
	out->status = in->status;
	copy_header(out->ctype, sizeof(out->ctype),
	    resp_get_header(in, "Content-Type"));
	copy_header(out->location, sizeof(out->location),
	    resp_get_header(in, "Location"));
	copy_header(out->etag, sizeof(out->etag), resp_get_header(in, "ETag"));
	v = resp_get_header(in, "Idempotent-Replayed");
	out->replayed = v != NULL && strcmp(v, "true") == 0;
	if ((v = resp_get_header(in, "Retry-After")) != NULL)
		out->retry_after = (uint32_t)strtoul(v, NULL, 10);
	sim_resp_body(out, in->body.data, in->body.len);
}

void
check_reset(void)
{
	size_t i;

	for (i = 0; i < C.nstored; i++)
		sim_resp_free(&C.stored[i].resp);
	for (i = 0; i < C.nowners; i++)
		free(C.owners[i].body);
	memset(&C, 0, sizeof(C));
}

void
violation(const char *fmt, ...)
{
	va_list ap;

	if (W.failed)
		return;
	W.failed = 1;
	va_start(ap, fmt);
	vsnprintf(W.failure, sizeof(W.failure), fmt, ap);
	va_end(ap);
	trace("VIOLATION: %s", W.failure);
}

static struct owner *
owner_find(const char *id)
{
	size_t i;

	for (i = 0; i < C.nowners; i++)
		if (strcmp(C.owners[i].id, id) == 0)
			return &C.owners[i];
	return NULL;
}

static struct owner *
owner_add(const char *id, const char *scope)
{
	struct owner *o;

	if ((o = owner_find(id)) != NULL)
		return o;
	if (C.nowners == CHECK_MAX)
		abort();
	o = &C.owners[C.nowners++];
	snprintf(o->id, sizeof(o->id), "%s", id);
	snprintf(o->scope, sizeof(o->scope), "%s", scope);
	o->amount = -1;
	return o;
}

/*
 * A new entry for an answer of (scope, key): one per key lifetime, never
 * overwritten, since a replay read in one lifetime may be delivered after
 * the key expired and a later lifetime stored another answer.
 */
static struct stored *
stored_add(const char *scope, const char *key)
{
	struct stored *s;

	if (C.nstored == CHECK_MAX)
		abort();
	s = &C.stored[C.nstored++];
	snprintf(s->scope, sizeof(s->scope), "%s", scope);
	snprintf(s->key, sizeof(s->key), "%s", key);
	return s;
}

/*
 * The answer of (scope, key) that resp is, byte for byte, or else the
 * newest one stored (NULL: none ever was).
 */
static struct stored *
stored_match(const char *scope, const char *key, const struct sim_resp *resp,
    int *same)
{
	struct stored *newest = NULL;
	size_t i;

	*same = 0;
	for (i = 0; i < C.nstored; i++) {
		if (strcmp(C.stored[i].scope, scope) != 0 ||
		    strcmp(C.stored[i].key, key) != 0)
			continue;
		newest = &C.stored[i];
		if (sim_resp_same(&newest->resp, resp)) {
			*same = 1;
			return newest;
		}
	}
	return newest;
}

/* Records a new charge or refund, after invariant 1 for its key. */
static struct charge *
ledger_note(const struct sim_req *rq, const char *charge_id,
    int64_t amount, uint64_t claim_created_ms)
{
	struct charge *c;
	size_t i;

	/*
	 * Invariant 1 and 5: one charge per key lifetime.  An earlier charge
	 * of the same key that no completion holds yet may still be resumed,
	 * so any new charge is a second one; one that a completion holds
	 * keeps the key for a TTL from that completion (doc/DESIGN.md: never
	 * less than a TTL after the answer was stored).
	 */
	for (i = 0; i < C.ncharges; i++) {
		c = &C.charges[i];
		if (strcmp(c->scope, rq->scope) != 0 ||
		    strcmp(c->key, rq->key) != 0)
			continue;
		if (c->recorded_ms == NEVER)
			violation("double charge: %s key %s charged again (%s, "
			    "request r%d) while its first charge %s is not "
			    "recorded yet", rq->scope, rq->key, charge_id,
			    rq->id, c->id);
		else if (W.now < c->recorded_ms + W.ttl_ms)
			violation("double charge: %s key %s charged again (%s, "
			    "request r%d) %" PRIu64 " ms after its charge %s "
			    "was recorded, within the TTL of %" PRIu64 " ms",
			    rq->scope, rq->key, charge_id, rq->id,
			    W.now - c->recorded_ms, c->id, W.ttl_ms);
	}
	if (C.ncharges == CHECK_MAX)
		abort();
	c = &C.charges[C.ncharges++];
	snprintf(c->scope, sizeof(c->scope), "%s", rq->scope);
	snprintf(c->key, sizeof(c->key), "%s", rq->key);
	snprintf(c->id, sizeof(c->id), "%s", charge_id);
	c->amount = amount;
	c->at_ms = W.now;
	c->created_ms = claim_created_ms;
	c->recorded_ms = NEVER;
	owner_add(charge_id, rq->scope);
	return c;
}

void
check_on_charge(const struct sim_req *rq, const char *charge_id,
    int64_t amount, uint64_t claim_created_ms)
{
	(void)ledger_note(rq, charge_id, amount, claim_created_ms);
}

/* What the provider refunded of payment, made afresh (ground truth). */
static int64_t
refunds_made(const char *payment, int recorded_only)
{
	int64_t sum = 0;
	size_t i;

	for (i = 0; i < C.ncharges; i++)
		if (C.charges[i].refund &&
		    strcmp(C.charges[i].payment, payment) == 0 &&
		    (!recorded_only || C.charges[i].rows > 0))
			sum += C.charges[i].amount;
	return sum;
}

void
check_on_refund(const struct sim_req *rq, const char *refund_id,
    const char *payment, int64_t amount, uint64_t claim_created_ms)
{
	struct charge *c;
	struct owner *o;
	int64_t sum;

	c = ledger_note(rq, refund_id, amount, claim_created_ms);
	c->refund = 1;
	snprintf(c->payment, sizeof(c->payment), "%s", payment);
	/* Invariant 8: the provider never refunds more than was paid. */
	o = owner_find(payment);
	if (o == NULL || o->amount < 0) {
		violation("refund %s (%s key %s, r%d) of %s, a payment never "
		    "recorded", refund_id, rq->scope, rq->key, rq->id,
		    payment);
		return;
	}
	if (strcmp(o->scope, rq->scope) != 0)
		violation("isolation: %s key %s refunded %s of %s", rq->scope,
		    rq->key, payment, o->scope);
	sum = refunds_made(payment, 0);
	if (sum > o->amount)
		violation("over-refund: the provider refunded %" PRId64 " of "
		    "payment %s of %" PRId64 " (last: %s, %" PRId64 ", %s key "
		    "%s, r%d)", sum, payment, o->amount, refund_id, amount,
		    rq->scope, rq->key, rq->id);
}

static struct charge *
charge_find(const char *id)
{
	size_t i;

	for (i = 0; i < C.ncharges; i++)
		if (strcmp(C.charges[i].id, id) == 0)
			return &C.charges[i];
	return NULL;
}

/* Copies the string value of "name":"..." in a JSON body into out. */
/* The row the id names, where the application stores it (rowkey.h). */
static int
truth_named(const char *table, const char *id, struct buf *out)
{
	uint8_t k[ROWKEY_LEN];

	rowkey(id, strlen(id), k);
	return truth_row(table, k, sizeof(k), out);
}

void
check_claim_path(const char *scope, const char *key, char *path, size_t len)
{
	struct refund_hold h;
	struct refund_cp cp;
	struct buf row = BUF_INIT;
	struct rec r;

	snprintf(path, len, "/payments");
	if (truth_lookup(scope, key, &r) != IDEM_OK)
		return;
	if (r.state == REC_IN_PROGRESS && r.stage == REFUND_STAGE_HELD &&
	    refund_cp_decode(r.cp, r.cplen, &cp) == IDEM_OK &&
	    truth_named(REFUND_TABLE_HOLDS, cp.id, &row) == IDEM_OK &&
	    refund_hold_decode(row.data, row.len, &h) == IDEM_OK)
		snprintf(path, len, "/payments/%s/refunds", h.payment);
	buf_free(&row);
	rec_free(&r);
}

static int
json_field(const char *body, const char *name, char *out, size_t outlen)
{
	char pat[64];
	const char *p, *e;

	snprintf(pat, sizeof(pat), "\"%s\":\"", name);
	if ((p = strstr(body, pat)) == NULL)
		return -1;
	p += strlen(pat);
	if ((e = strchr(p, '"')) == NULL || (size_t)(e - p) >= outlen)
		return -1;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
	return 0;
}

/* A payment row: version, u16 scope length, scope, u32 body length, body. */
static void
check_payment_row(const char *scope, const char *key, const uint8_t *v,
    size_t vallen)
{
	char rowscope[64], *body, id[64], chid[64];
	size_t sl, bl;
	struct charge *c;
	struct owner *o;

	if (vallen < 7 || v[0] != 1) {
		violation("%s key %s: unreadable payment row", scope, key);
		return;
	}
	sl = (size_t)v[1] << 8 | v[2];
	if (sl >= sizeof(rowscope) || 3 + sl + 4 > vallen) {
		violation("%s key %s: unreadable payment row", scope, key);
		return;
	}
	memcpy(rowscope, v + 3, sl);
	rowscope[sl] = '\0';
	bl = (size_t)v[3 + sl] << 24 | (size_t)v[4 + sl] << 16 |
	    (size_t)v[5 + sl] << 8 | v[6 + sl];
	if (7 + sl + bl != vallen) {
		violation("%s key %s: unreadable payment row", scope, key);
		return;
	}
	if (strcmp(rowscope, scope) != 0)
		violation("isolation: %s key %s wrote a payment row owned by "
		    "%s", scope, key, rowscope);
	if ((body = malloc(bl + 1)) == NULL)
		abort();
	memcpy(body, v + 7 + sl, bl);
	body[bl] = '\0';
	if (json_field(body, "id", id, sizeof(id)) != 0 ||
	    json_field(body, "charge_id", chid, sizeof(chid)) != 0) {
		violation("%s key %s: payment row without id or charge_id: %s",
		    scope, key, body);
		free(body);
		return;
	}
	if ((c = charge_find(chid)) == NULL)
		violation("%s key %s: payment %s records charge %s, which the "
		    "provider never made", scope, key, id, chid);
	else if (strcmp(c->scope, scope) != 0 || strcmp(c->key, key) != 0)
		violation("%s key %s: payment %s records charge %s of %s key "
		    "%s", scope, key, id, chid, c->scope, c->key);
	else {
		if (++c->rows > 1)
			violation("charge %s of %s key %s recorded in %d "
			    "payments", chid, scope, key, c->rows);
		/*
		 * When it committed, not the time the handler read before
		 * calling the store: the key must live a TTL after its
		 * answer was stored, however long the write waited.
		 */
		c->recorded_ms = W.now;
	}
	o = owner_add(id, scope);
	if (c != NULL)
		o->amount = c->amount;
	if (o->body != NULL)
		violation("payment %s written twice", id);
	free(o->body);
	o->body = body;
}

static uint32_t
be_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

static uint64_t
be_u64(const uint8_t *p)
{
	return (uint64_t)be_u32(p) << 32 | be_u32(p + 4);
}

/*
 * A refund's 201, committed just now for (scope, key) in the lifetime
 * created_ms: its refund row (version, u16 scope length, scope, payment
 * id, u32 body length, body) must have committed with it, hold the same
 * body, and name the refund the provider made in that lifetime.
 */
static void
check_refund_row(const char *scope, const char *key, uint64_t created_ms,
    const char *id, const struct sim_resp *resp)
{
	struct buf row = BUF_INIT;
	char rowscope[64], payment[PAY_ID_LEN + 1];
	const uint8_t *v;
	struct charge *c = NULL;
	size_t i, sl, bl;

	if (truth_named(REFUND_TABLE_REFUNDS, id, &row) !=
	    IDEM_OK) {
		violation("%s key %s: refund 201 committed without its refund "
		    "row %s", scope, key, id);
		goto out;
	}
	v = (const uint8_t *)row.data;
	sl = row.len >= 3 ? (size_t)v[1] << 8 | v[2] : 0;
	if (row.len < 3 || v[0] != 1 || sl >= sizeof(rowscope) ||
	    3 + sl + PAY_ID_LEN + 4 > row.len) {
		violation("%s key %s: unreadable refund row %s", scope, key,
		    id);
		goto out;
	}
	memcpy(rowscope, v + 3, sl);
	rowscope[sl] = '\0';
	memcpy(payment, v + 3 + sl, PAY_ID_LEN);
	payment[PAY_ID_LEN] = '\0';
	bl = be_u32(v + 3 + sl + PAY_ID_LEN);
	if (3 + sl + PAY_ID_LEN + 4 + bl != row.len ||
	    strcmp(rowscope, scope) != 0 || bl != resp->bodylen ||
	    memcmp(v + 3 + sl + PAY_ID_LEN + 4, resp->body, bl) != 0) {
		violation("%s key %s: refund row %s is not the stored 201 (%s)",
		    scope, key, id, resp->body);
		goto out;
	}
	for (i = 0; i < C.ncharges; i++)
		if (C.charges[i].refund &&
		    strcmp(C.charges[i].scope, scope) == 0 &&
		    strcmp(C.charges[i].key, key) == 0 &&
		    C.charges[i].created_ms == created_ms)
			c = &C.charges[i];
	if (c == NULL) {
		violation("%s key %s: refund %s of %s recorded, but the "
		    "provider made no refund in this key's lifetime", scope,
		    key, id, payment);
		goto out;
	}
	if (strcmp(c->payment, payment) != 0)
		violation("%s key %s: refund %s records payment %s, the "
		    "provider refunded %s", scope, key, id, payment,
		    c->payment);
	if (++c->rows > 1)
		violation("provider refund %s of %s key %s recorded in %d "
		    "refunds", c->id, scope, key, c->rows);
	c->recorded_ms = W.now;
	if (owner_find(id) != NULL)
		violation("refund %s written twice", id);
	owner_add(id, scope);
out:
	buf_free(&row);
}

void
check_on_complete(const char *scope, const char *key, struct sim_req *rq)
{
	struct stored *s;
	struct buf row = BUF_INIT;
	struct rec r;
	uint64_t created;
	char id[64];
	int rc;

	if (truth_lookup(scope, key, &r) != IDEM_OK ||
	    r.state != REC_COMPLETED) {
		violation("%s key %s: completed, but no completed record is "
		    "stored", scope, key);
		return;
	}
	s = stored_add(scope, key);
	sim_resp_from_rec(&r.resp, &s->resp);
	created = r.created_ms;
	rec_free(&r);
	if (rq != NULL) {
		rq->committed = 1;
		sim_resp_free(&rq->committed_resp);
		sim_resp_from_rec_copy(&s->resp, &rq->committed_resp);
	}
	/* Invariant 6: the payment row and the 201 commit together. */
	if (s->resp.status != 201)
		return;
	if (json_field(s->resp.body, "id", id, sizeof(id)) != 0) {
		violation("%s key %s: a 201 without a payment id", scope, key);
		return;
	}
	if (strncmp(id, "re_", 3) == 0) {
		check_refund_row(scope, key, created, id, &s->resp);
		return;
	}
	rc = truth_named(PAY_TABLE_PAYMENTS, id, &row);
	if (rc != IDEM_OK)
		violation("%s key %s: 201 committed without its payment row %s",
		    scope, key, id);
	else
		check_payment_row(scope, key, (const uint8_t *)row.data,
		    row.len);
	buf_free(&row);
}

void
check_on_purge(const char *scope, const char *key, const struct rec *r)
{
	if (r->state == REC_IN_PROGRESS && r->stage != 0)
		violation("purge removed %s key %s, a claim at stage %u that "
		    "may have charged", scope, key, r->stage);
}

/* Every pay_ and ch_ identifier in body must belong to scope. */
static void
check_isolation(const struct sim_req *rq, const struct sim_resp *r)
{
	static const char *const prefixes[] = { "pay_", "ch_", "re_" };
	const char *p;
	char id[ID_LEN + 1];
	struct owner *o;
	size_t i, n;

	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		for (p = r->body; (p = strstr(p, prefixes[i])) != NULL;
		    p += n) {
			n = strlen(prefixes[i]);
			while (n < ID_LEN && ((p[n] >= '0' && p[n] <= '9') ||
			    (p[n] >= 'a' && p[n] <= 'f')))
				n++;
			memcpy(id, p, n);
			id[n] = '\0';
			if ((o = owner_find(id)) != NULL &&
			    strcmp(o->scope, rq->scope) != 0)
				violation("isolation: %s was answered %s of %s "
				    "(request r%d %s %s)", rq->scope, id,
				    o->scope, rq->id, rq->method, rq->path);
		}
}

static int
stored_status(int status)
{
	return status == 201 || status == 402 || status == 400;
}

/*
 * Whether a GET of a payment answered what was recorded: its stored
 * representation, or the same object with "amount_refunded" as its last
 * member once a refund completed.
 */
static int
payment_view_same(const char *recorded, const char *got)
{
	size_t n = strlen(recorded);
	const char *tail = ",\"amount_refunded\":";

	if (strcmp(recorded, got) == 0)
		return 1;
	return n > 0 && strncmp(recorded, got, n - 1) == 0 &&
	    strncmp(got + n - 1, tail, strlen(tail)) == 0 &&
	    got[strlen(got) - 1] == '}';
}

/* The payment a refund's path names, if it is one (out, "" if not). */
static void
refund_path_payment(const struct sim_req *rq, char *out, size_t len)
{
	const char *p = rq->path + 10, *e;

	out[0] = '\0';
	if (strncmp(rq->path, "/payments/", 10) != 0 ||
	    (e = strchr(p, '/')) == NULL || strcmp(e, "/refunds") != 0 ||
	    (size_t)(e - p) >= len)
		return;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
}

void
check_on_failed_commit(struct sim_req *rq)
{
	if (rq != NULL)
		rq->uncommitted = 1;
}

void
check_on_answer(struct sim_req *rq, const struct sim_resp *r)
{
	struct stored *s;
	struct owner *o;
	char payment[64];
	int post = strcmp(rq->method, "POST") == 0, same;

	check_isolation(rq, r);
	/*
	 * Invariant 9: no verdict on an uncommitted write.  A request whose
	 * store call rode a commit that failed may only say that it failed.
	 */
	if (rq->uncommitted && r->status < 500)
		violation("r%d: %s key %s answered %d from a store call whose "
		    "commit failed", rq->id, rq->scope, rq->key, r->status);
	refund_path_payment(rq, payment, sizeof(payment));
	if (post && payment[0] != '\0' && (o = owner_find(payment)) != NULL &&
	    strcmp(o->scope, rq->scope) != 0 && r->status != 404 &&
	    r->status < 500)
		/* Another account's payment is indistinguishable from none. */
		violation("isolation: r%d %s refunding %s of %s answered %d",
		    rq->id, rq->scope, payment, o->scope, r->status);
	if (post && r->replayed) {
		/* Invariant 3: a replay is the stored answer, byte for byte. */
		/*
		 * The answer of the lifetime it was read in: one read just
		 * before the key expired may be delivered after a later
		 * lifetime stored another.
		 */
		s = stored_match(rq->scope, rq->key, r, &same);
		if (s == NULL)
			violation("r%d: replay of %s key %s, which never "
			    "completed", rq->id, rq->scope, rq->key);
		else if (!same)
			violation("r%d: replay of %s key %s differs from the "
			    "stored answer (%d %s / %d %s)", rq->id, rq->scope,
			    rq->key, r->status, r->body, s->resp.status,
			    s->resp.body);
	} else if (post && rq->committed) {
		if (!sim_resp_same(&rq->committed_resp, r))
			violation("r%d: answered %d, but stored %d for %s key "
			    "%s", rq->id, r->status, rq->committed_resp.status,
			    rq->scope, rq->key);
	} else if (post && stored_status(r->status))
		/* Invariant 2: durable before visible. */
		violation("r%d: %s key %s answered %d before any commit of "
		    "it", rq->id, rq->scope, rq->key, r->status);
	if (!post && r->status == 200 && strncmp(rq->path, "/payments/",
	    10) == 0) {
		o = owner_find(rq->path + 10);
		if (o == NULL || o->body == NULL)
			violation("r%d: GET %s found a payment never recorded",
			    rq->id, rq->path);
		else if (!payment_view_same(o->body, r->body))
			violation("r%d: GET %s differs from the payment as "
			    "recorded", rq->id, rq->path);
	}
}

/*
 * Invariant 8 on the store: a payment's committed refund_totals (u8
 * version, be64 amount, refunded, reserved) keep refunded + reserved
 * within its amount, and refunded is what the recorded refunds add up to.
 */
static void
check_totals(const struct owner *o)
{
	struct buf row = BUF_INIT;
	const uint8_t *v;
	int64_t amount, refunded, reserved, recorded;

	if (o->amount < 0 || truth_named(REFUND_TABLE_TOTALS, o->id,
	    &row) != IDEM_OK)
		goto out;
	v = (const uint8_t *)row.data;
	if (row.len != 25 || v[0] != 1) {
		violation("refund totals of %s unreadable", o->id);
		goto out;
	}
	amount = (int64_t)be_u64(v + 1);
	refunded = (int64_t)be_u64(v + 9);
	reserved = (int64_t)be_u64(v + 17);
	recorded = refunds_made(o->id, 1);
	if (amount != o->amount || refunded < 0 || reserved < 0 ||
	    refunded + reserved > amount || refunded != recorded)
		violation("refund totals of %s (amount %" PRId64 "): refunded "
		    "%" PRId64 " + reserved %" PRId64 " stored; paid %" PRId64
		    ", refunds recorded %" PRId64, o->id, amount, refunded,
		    reserved, o->amount, recorded);
out:
	buf_free(&row);
}

void
check_step(void)
{
	struct charge *c;
	struct rec r;
	size_t i;
	int rc;

	for (i = 0; i < C.nowners && !W.failed; i++)
		check_totals(&C.owners[i]);
	/*
	 * Invariant 5: every charge ends in exactly one payment, or is held
	 * by a claim that can still resume it (in progress, past stage 0,
	 * of the same lifetime): otherwise the money is lost to the books.
	 */
	for (i = 0; i < C.ncharges && !W.failed; i++) {
		c = &C.charges[i];
		if (c->rows > 0)
			continue;
		rc = truth_lookup(c->scope, c->key, &r);
		if (rc == IDEM_OK && r.state == REC_IN_PROGRESS &&
		    r.stage != 0 && r.created_ms == c->created_ms) {
			rec_free(&r);
			continue;
		}
		violation("charge %s of %s key %s is in no payment and no claim "
		    "can resume it (the key is %s)", c->id, c->scope, c->key,
		    rc != IDEM_OK ? "gone" : r.state == REC_COMPLETED ?
		    "completed without it" : "claimed afresh");
		if (rc == IDEM_OK)
			rec_free(&r);
	}
}
