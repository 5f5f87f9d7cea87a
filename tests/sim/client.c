/* SPDX-License-Identifier: MIT */
/*
 * client.c: the simulated clients.
 *
 * Each client belongs to one account and runs a script of payments, drawn
 * from the schedule's generator: a fresh key per payment, the body
 * serialised anew on every retry (members in either order, spaces or
 * none: the same payment), retries with the same key after a timeout, a
 * 409 (after its Retry-After) or a 5xx, sometimes the same request twice
 * at once (a double click, a gateway's retry), sometimes giving up,
 * sometimes coming back only after the TTL, sometimes reusing a key with
 * another body, at once or after the key expired, and sometimes asking
 * for its payments, or for another account's.  Clients refund payments
 * they (or another client of their account) got a 201 for: part of it or
 * all that is left ({}), several at once under different keys so that
 * they race for what is left, retried like payments, a refund key reused
 * with another amount, and another account's payment, which must be a
 * 404.  Clients assert nothing themselves: every answer passes through
 * the checker on its way.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sim.h"

struct sim_client {
	int idx;
	int account;
	char scope[16];
	struct co *co;
	struct sim_req *waiting;
	struct sim_resp answer;
};

/* Payment ids seen in 201s, for GETs and for other accounts' probes. */
#define SEEN_MAX 128
static struct {
	char path[80];
	int account;
} seen[SEEN_MAX];
static int nseen;

static struct sim_client clients[SIM_MAX_CLIENTS];

struct order {
	const char *amount, *currency;
};

/* Mostly valid payments; a few that the handler refuses (stored 400s). */
static const struct order orders[] = {
	{ "10.00", "BRL" }, { "250", "USD" }, { "0.5", "EUR" },
	{ "99.99", "BRL" }, { "1e2", "USD" }, { "700", "JPY" },
	{ "12.345", "BRL" }, { "-5", "USD" }, { "1.5", "JPY" },
};

/* Writes one serialisation of what a request asks for into out. */
typedef void body_fn(const void *what, char *out, size_t len);

static void
order_body(const void *what, char *out, size_t len)
{
	const struct order *o = what;

	switch (sim_below(3)) {
	case 0:
		snprintf(out, len, "{\"amount\":%s,\"currency\":\"%s\"}",
		    o->amount, o->currency);
		break;
	case 1:
		snprintf(out, len, "{\"currency\":\"%s\",\"amount\":%s}",
		    o->currency, o->amount);
		break;
	default:
		snprintf(out, len, "{ \"amount\" : %s , \"currency\" : \"%s\" }",
		    o->amount, o->currency);
		break;
	}
}

static const struct order *
order_pick(void)
{
	size_t n = sizeof(orders) / sizeof(orders[0]);

	/* Two in three draws from the valid ones. */
	return &orders[sim_below(3) ? sim_below(6) : sim_below(n)];
}

int
sim_client_index(const struct sim_client *cl)
{
	return cl != NULL ? cl->idx : -1;
}

void
client_deliver(struct sim_req *rq, const struct sim_resp *r)
{
	struct sim_client *cl = rq->cl;

	if (cl == NULL || cl->waiting != rq)
		return;
	sim_resp_free(&cl->answer);
	cl->answer = *r;
	if ((cl->answer.body = strdup(r->body)) == NULL)
		abort();
	co_wake(cl->co);
}

static struct sim_req *
client_req(struct sim_client *cl, const char *method, const char *path,
    const char *key)
{
	struct sim_req *rq = sim_req_new();

	if (rq == NULL)
		return NULL;
	rq->cl = cl;
	rq->account = cl->account;
	snprintf(rq->scope, sizeof(rq->scope), "%s", cl->scope);
	snprintf(rq->method, sizeof(rq->method), "%s", method);
	snprintf(rq->path, sizeof(rq->path), "%s", path);
	snprintf(rq->key, sizeof(rq->key), "%s", key);
	return rq;
}

/* Sends rq and waits for its answer; 1 with cl->answer set, or 0. */
static int
client_exchange(struct sim_client *cl, struct sim_req *rq)
{
	int got;

	if (sim_send(rq) != 0) {
		trace("r%d refused: no worker is up", rq->id);
		return 0;
	}
	cl->waiting = rq;
	got = sim_wait(5000 + sim_below(25000), "awaiting answer");
	cl->waiting = NULL;
	if (!got)
		trace("r%d: client timed out", rq->id);
	return got;
}

static int
client_final(int status)
{
	return status == 201 || status == 402 || status == 400 ||
	    status == 422 || status == 404;
}

/*
 * One keyed POST of what (serialised anew by fn on every attempt) to
 * path under key, retried until a final answer, or until the client
 * gives up.  Returns 1 with the final answer in cl->answer.
 */
static int
client_keyed(struct sim_client *cl, const char *path, const char *key,
    body_fn *fn, const void *what)
{
	struct sim_req *rq, *dup;
	uint64_t wait;
	int attempt;

	for (attempt = 1;; attempt++) {
		if ((rq = client_req(cl, "POST", path, key)) == NULL)
			return 0;
		rq->attempt = attempt;
		fn(what, rq->body, sizeof(rq->body));
		if (sim_chance(W.pf.dup_ppm) &&
		    (dup = client_req(cl, "POST", path, key)) != NULL) {
			memcpy(dup->body, rq->body, sizeof(dup->body));
			dup->cl = NULL;
			(void)sim_send(dup);
		}
		if (client_exchange(cl, rq)) {
			if (client_final(cl->answer.status))
				return 1;
			wait = cl->answer.status == 409 ?
			    1000 * (uint64_t)cl->answer.retry_after :
			    500 + sim_below(5000);
		} else
			wait = sim_below(5000);
		if (attempt >= 12 || sim_chance(W.pf.giveup_ppm)) {
			trace("client gives up on %s", key);
			return 0;
		}
		if (sim_chance(W.pf.late_ppm)) {
			wait = W.ttl_ms + sim_below(2 * W.lease_ms);
			trace("client comes back to %s after the TTL", key);
		}
		sim_sleep(wait, "backoff");
	}
}

static void client_get(struct sim_client *cl, const char *path);

static int
client_pay(struct sim_client *cl, const char *key, const struct order *o)
{
	return client_keyed(cl, "/payments", key, order_body, o);
}

/*
 * Refund amounts, whole units so that most are valid in every currency:
 * "" is {} (all that is left); "2.50" is a stored 400 on a JPY payment.
 */
static const char *const refund_amounts[] = {
	"", "1", "2.50", "5", "100", ""
};

static void
refund_body(const void *what, char *out, size_t len)
{
	const char *amount = what;

	if (amount[0] == '\0')
		snprintf(out, len, "%s", sim_below(2) ? "{}" : "{ }");
	else if (sim_below(2))
		snprintf(out, len, "{\"amount\":%s}", amount);
	else
		snprintf(out, len, "{ \"amount\" : %s }", amount);
}

static const char *
refund_pick(void)
{
	return refund_amounts[sim_below(sizeof(refund_amounts) /
	    sizeof(refund_amounts[0]))];
}

/* A refund sent and not waited for: one more racer for what is left. */
static void
client_refund_racer(struct sim_client *cl, const char *path, int n)
{
	struct sim_req *rq;
	char key[48];

	snprintf(key, sizeof(key), "x%d.%d.%04" PRIx64, cl->idx, n,
	    sim_below(0x10000));
	if ((rq = client_req(cl, "POST", path, key)) == NULL)
		return;
	rq->cl = NULL;
	refund_body(refund_pick(), rq->body, sizeof(rq->body));
	trace("client races a refund of %s under %s", path, key);
	(void)sim_send(rq);
}

/*
 * Refunds of the payment at location (/payments/{id}): one to three in
 * turn, each retried under its own key, some raced by others at once,
 * some followed by the same key with another amount (a 422, or a new
 * refund once the key expired).
 */
static void
client_refunds(struct sim_client *cl, const char *location, int op)
{
	char path[96], key[48];
	const char *amount;
	int i, j, n = 1 + (int)sim_below(3);

	snprintf(path, sizeof(path), "%s/refunds", location);
	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "r%d.%d.%d.%04" PRIx64, cl->idx, op,
		    i, sim_below(0x10000));
		if (sim_chance(W.pf.race_ppm))
			for (j = 1 + (int)sim_below(3); j > 0; j--)
				client_refund_racer(cl, path, op * 10 + i * 3 +
				    j);
		amount = refund_pick();
		if (!client_keyed(cl, path, key, refund_body, amount))
			continue;
		if (sim_chance(W.pf.reuse_ppm)) {
			trace("client reuses refund key %s, another amount",
			    key);
			(void)client_keyed(cl, path, key, refund_body,
			    amount[0] == '\0' ? "1" : "");
		}
		if (cl->answer.status == 201 && sim_below(2))
			client_get(cl, location);
	}
}

static void
client_get(struct sim_client *cl, const char *path)
{
	struct sim_req *rq = client_req(cl, "GET", path, "");

	if (rq != NULL)
		(void)client_exchange(cl, rq);
}

static void
client_remember(struct sim_client *cl)
{
	if (cl->answer.status != 201 || cl->answer.location[0] == '\0' ||
	    nseen == SEEN_MAX)
		return;
	snprintf(seen[nseen].path, sizeof(seen[nseen].path), "%s",
	    cl->answer.location);
	seen[nseen].account = cl->account;
	nseen++;
}

static void
client_main(void *arg)
{
	struct sim_client *cl = arg;
	const struct order *o;
	char key[48];
	int op, i, j;

	for (op = 0; op < W.pf.ops; op++) {
		snprintf(key, sizeof(key), "k%d.%d.%04" PRIx64, cl->idx, op,
		    sim_below(0x10000));
		o = order_pick();
		if (client_pay(cl, key, o)) {
			client_remember(cl);
			if (cl->answer.status == 201 && sim_below(2))
				client_get(cl, cl->answer.location);
			if (sim_chance(W.pf.reuse_ppm)) {
				/* Another payment under a key already used. */
				if (sim_below(2)) {
					trace("client reuses %s after the TTL",
					    key);
					sim_sleep(W.ttl_ms + sim_below(
					    2 * W.lease_ms), "key expiring");
				} else
					trace("client reuses %s at once", key);
				(void)client_pay(cl, key, order_pick());
				client_remember(cl);
			}
		}
		if (sim_chance(W.pf.probe_ppm) && nseen > 0) {
			i = (int)sim_below((uint64_t)nseen);
			client_get(cl, seen[i].path);
		}
		if (sim_chance(W.pf.refund_ppm) && nseen > 0) {
			/* Its account's (racing its other clients) or not. */
			i = (int)sim_below((uint64_t)nseen);
			for (j = nseen - 1; j >= 0 && seen[i].account !=
			    cl->account && sim_below(4) != 0; j--)
				if (seen[j].account == cl->account)
					i = j;
			if (seen[i].account != cl->account)
				trace("client refunds another account's %s",
				    seen[i].path);
			client_refunds(cl, seen[i].path, op);
		}
		if (sim_chance(W.pf.probe_ppm))
			client_get(cl, "/payments");
		sim_sleep(sim_below(5000), "thinking");
	}
	sim_resp_free(&cl->answer);
	W.clients_left--;
}

void
client_start_all(void)
{
	int a, i, n = 0;

	nseen = 0;
	for (a = 0; a < W.pf.accounts; a++)
		for (i = 0; i < W.pf.clients && n < SIM_MAX_CLIENTS; i++) {
			struct sim_client *cl = &clients[n];

			memset(cl, 0, sizeof(*cl));
			cl->idx = n++;
			cl->account = a;
			snprintf(cl->scope, sizeof(cl->scope), "acct_%d", a % 100);
			cl->co = co_spawn(CO_CLIENT, -1, client_main, cl);
			cl->co->cl = cl;
		}
	W.clients_left = n;
}
