/* SPDX-License-Identifier: MIT */
/*
 * world.c: coroutines, the scheduler, workers and requests.
 *
 * A schedule is a loop: pick, from the generator, one thing to happen (a
 * parked coroutine resumes until its next yield, the clock jumps, a worker
 * dies), then check every invariant.  Requests run the real application
 * entry point on the coroutine's own stack; since yields happen only in
 * the simulator's wrappers, no library lock is ever held across one.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "check.h"
#include "crypto.h"
#include "glue.h"
#include "request.h"
#include "response.h"
#include "simstore.h"
#include "resume.h"
#include "sim.h"

#if defined(__SANITIZE_ADDRESS__)
#define SIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SIM_ASAN 1
#endif
#endif

#ifdef SIM_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

struct world W;

static ucontext_t sched_ctx;
static const void *sched_bottom;
static size_t sched_size;

#define SIM_MAX_REQS 8192
static struct sim_req *reqs[SIM_MAX_REQS];
static size_t nreqs;

/*
 * AddressSanitizer must be told about every stack switch
 * (sanitizer/common_interface_defs.h), or it reports the coroutines'
 * frames as overflows of the scheduler's stack.
 */
static void
asan_start(void **fake, const void *bottom, size_t size)
{
#ifdef SIM_ASAN
	__sanitizer_start_switch_fiber(fake, bottom, size);
#else
	(void)fake;
	(void)bottom;
	(void)size;
#endif
}

static void
asan_finish(void *fake)
{
#ifdef SIM_ASAN
	__sanitizer_finish_switch_fiber(fake, &sched_bottom, &sched_size);
#else
	(void)fake;
#endif
}

static void
co_stack_free(struct co *c)
{
#ifdef SIM_ASAN
	/* A dead coroutine's frames leave poisoned shadow behind. */
	__asan_unpoison_memory_region(c->stack, SIM_STACK);
#endif
	free(c->stack);
	c->stack = NULL;
	c->state = CO_FREE;
}

static void
co_trampoline(void)
{
	struct co *c = W.cur;

	asan_finish(NULL);
	c->fn(c->arg);
	/* Done: the scheduler frees the stack; this fiber is destroyed. */
	c->state = CO_DEAD;
	asan_start(NULL, sched_bottom, sched_size);
	swapcontext(&c->ctx, &sched_ctx);
	abort();
}

struct co *
co_spawn(enum co_kind kind, int worker, void (*fn)(void *), void *arg)
{
	struct co *c = NULL;
	int i;

	for (i = 0; i < SIM_MAX_COS; i++)
		if (W.cos[i].state == CO_FREE && W.cos[i].stack == NULL) {
			c = &W.cos[i];
			break;
		}
	if (c == NULL) {
		fprintf(stderr, "sim: out of coroutines\n");
		abort();
	}
	memset(c, 0, sizeof(*c));
	c->id = i;
	c->kind = kind;
	c->worker = worker;
	c->incarnation = worker >= 0 ? W.workers[worker].incarnation : 0;
	c->fn = fn;
	c->arg = arg;
	c->where = "start";
	if ((c->stack = malloc(SIM_STACK)) == NULL)
		abort();
	if (getcontext(&c->ctx) != 0)
		abort();
	c->ctx.uc_stack.ss_sp = c->stack;
	c->ctx.uc_stack.ss_size = SIM_STACK;
	c->ctx.uc_link = NULL;
	makecontext(&c->ctx, co_trampoline, 0);
	c->state = CO_READY;
	return c;
}

void
co_wake(struct co *c)
{
	if (c->state == CO_WAITING) {
		c->woken = 1;
		c->state = CO_READY;
	}
}

static void
co_switch_out(void)
{
	struct co *c = W.cur;

	asan_start(&c->fake, sched_bottom, sched_size);
	swapcontext(&c->ctx, &sched_ctx);
	asan_finish(c->fake);
}

void
sim_yield(const char *where)
{
	/*
	 * Never inside a store operation: it may hold the store's write
	 * lock, and it must stay atomic with respect to other requests.
	 */
	if (W.cur == NULL || W.in_store)
		return;
	W.cur->where = where;
	W.cur->state = CO_READY;
	co_switch_out();
}

void
sim_sleep(uint64_t ms, const char *where)
{
	if (W.cur == NULL)
		return;
	W.cur->where = where;
	W.cur->state = CO_SLEEPING;
	W.cur->wake_ms = W.now + ms;
	co_switch_out();
}

int
sim_wait(uint64_t ms, const char *where)
{
	if (W.cur == NULL)
		return 0;
	W.cur->where = where;
	W.cur->state = CO_WAITING;
	W.cur->woken = 0;
	W.cur->wake_ms = W.now + ms;
	co_switch_out();
	return W.cur->woken;
}

int
sim_chance(uint32_t ppm)
{
	return prng_ppm(&W.rng, ppm);
}

uint64_t
sim_below(uint64_t n)
{
	return prng_below(&W.rng, n);
}

struct sim_req *
sim_current_req(void)
{
	return W.cur != NULL && (W.cur->kind == CO_REQUEST ||
	    W.cur->kind == CO_COMPLETER) ? W.cur->req : NULL;
}

/*
 * A worker dies as kill -9 would leave it: every request it was running
 * stops where it was parked and never runs again, its memory (the
 * application, the requests' heap) is gone, and only what the store
 * committed survives.  The requests' allocations are leaked on purpose:
 * freeing them would run code the dead process never ran.
 */
static void
worker_crash(int w, const char *where)
{
	struct worker *wk = &W.workers[w];
	int i;

	trace("CRASH worker %d (%s)", w, where);
	W.faults++;
	wk->alive = 0;
	wk->restart_ms = W.now + sim_below(3000);
	for (i = 0; i < SIM_MAX_COS; i++) {
		struct co *c = &W.cos[i];

		if (c->state == CO_FREE || c->worker != w)
			continue;
		c->state = CO_DEAD;
		if (c != W.cur)
			co_stack_free(c);
	}
	simstore_worker_crash(w);
	glue_app_crash(wk->app);
	wk->app = NULL;
}

void
sim_crash_here(const char *where)
{
	struct co *c = W.cur;

	if (c == NULL || c->worker < 0)
		return;
	worker_crash(c->worker, where);
	asan_start(NULL, sched_bottom, sched_size);
	swapcontext(&c->ctx, &sched_ctx);
	abort();
}

static void
worker_start(int w)
{
	struct worker *wk = &W.workers[w];

	wk->alive = 1;
	wk->incarnation++;
	wk->app = glue_app_open(w);
	trace("worker %d up (incarnation %d)", w, wk->incarnation);
}

/* CGI meta-variables of a simulated request (RFC 3875 section 4.1). */
static const char *
request_param(void *ctx, const char *name)
{
	static char len[24];
	struct sim_req *rq = ctx;

	if (strcmp(name, "REQUEST_METHOD") == 0)
		return rq->method;
	if (strcmp(name, "SCRIPT_NAME") == 0)
		return rq->path;
	if (strcmp(name, "REMOTE_USER") == 0)
		return rq->scope;
	if (strcmp(name, "HTTP_IDEMPOTENCY_KEY") == 0)
		return rq->key[0] != '\0' ? rq->key : NULL;
	if (strcmp(rq->method, "POST") != 0)
		return NULL;
	if (strcmp(name, "CONTENT_TYPE") == 0)
		return "application/json";
	if (strcmp(name, "CONTENT_LENGTH") == 0) {
		snprintf(len, sizeof(len), "%zu", strlen(rq->body));
		return len;
	}
	return NULL;
}

struct body_reader {
	const char *p;
	size_t left;
};

static long
request_read(void *ctx, void *buf, size_t len)
{
	struct body_reader *r = ctx;

	if (len > r->left)
		len = r->left;
	memcpy(buf, r->p, len);
	r->p += len;
	r->left -= len;
	return (long)len;
}

static void
request_main(void *arg)
{
	struct sim_req *rq = arg;
	struct body_reader rd = { rq->body, strlen(rq->body) };
	struct request req;
	struct response resp;
	struct sim_resp sr;
	enum req_status st;

	trace("r%d %s %s %s key=%s %s", rq->id, rq->scope, rq->method,
	    rq->path, rq->key[0] ? rq->key : "-", rq->body);
	memset(&req, 0, sizeof(req));
	st = req_read(&req, request_param, rq, request_read, &rd, 65536, "");
	resp_init(&resp);
	glue_app_handle(W.workers[W.cur->worker].app, st, &req, &resp);
	sim_resp_from_http(&resp, &sr);
	resp_free(&resp);
	req_free(&req);
	/* The response is written only now: a crash here loses it. */
	sim_point("mid_response");
	check_on_answer(rq, &sr);
	trace("r%d answered %d%s %s", rq->id, sr.status,
	    sr.replayed ? " (replayed)" : "", sr.bodylen > 120 ? "..." :
	    sr.body);
	if (sim_chance(W.pf.lost_ppm)) {
		W.faults++;
		trace("r%d answer lost on the way", rq->id);
	} else
		client_deliver(rq, &sr);
	sim_resp_free(&sr);
}

struct sim_req *
sim_req_new(void)
{
	struct sim_req *rq;

	if (nreqs == SIM_MAX_REQS || (rq = calloc(1, sizeof(*rq))) == NULL)
		return NULL;
	rq->id = (int)nreqs;
	reqs[nreqs++] = rq;
	return rq;
}

int
sim_send(struct sim_req *rq)
{
	int alive[SIM_MAX_WORKERS], n = 0, w;
	struct co *c;

	for (w = 0; w < W.pf.workers; w++)
		if (W.workers[w].alive)
			alive[n++] = w;
	if (n == 0)
		return -1;
	rq->worker = alive[sim_below((uint64_t)n)];
	c = co_spawn(CO_REQUEST, rq->worker, request_main, rq);
	c->req = rq;
	return 0;
}

/* The clock jumps across the times that matter: leases and the TTL. */
static void
clock_jump(void)
{
	uint64_t d;

	switch (sim_below(3)) {
	case 0:
		d = W.lease_ms + sim_below(W.lease_ms);
		break;
	case 1:
		d = W.ttl_ms - W.lease_ms + sim_below(3 * W.lease_ms);
		break;
	default:
		d = sim_below(W.lease_ms);
		break;
	}
	W.faults++;
	trace("clock jumps %" PRIu64 " ms", d);
	W.now += d;
}

static void
resume(struct co *c)
{
	void *fake = NULL;

	W.cur = c;
	asan_start(&fake, c->stack, SIM_STACK);
	swapcontext(&sched_ctx, &c->ctx);
	asan_finish(fake);
	W.cur = NULL;
	if (c->state == CO_DEAD && c->stack != NULL)
		co_stack_free(c);
}

static void completer_start(void);

static int
runnable(const struct co *c)
{
	return c->state == CO_READY || ((c->state == CO_SLEEPING ||
	    c->state == CO_WAITING) && c->wake_ms <= W.now);
}

static void
schedule(void)
{
	struct co *ready[SIM_MAX_COS];
	uint64_t next;
	int i, n, w, live;

	while (!W.failed && W.steps < W.max_steps) {
		for (w = 0; w < W.pf.workers; w++)
			if (!W.workers[w].alive &&
			    W.workers[w].restart_ms <= W.now)
				worker_start(w);
		if (W.pf.completer && W.clients_left > 0 &&
		    !W.workers[SIM_COMPLETER].alive &&
		    W.workers[SIM_COMPLETER].restart_ms <= W.now)
			completer_start();
		n = live = 0;
		next = UINT64_MAX;
		for (i = 0; i < SIM_MAX_COS; i++) {
			struct co *c = &W.cos[i];

			if (c->state == CO_FREE || c->state == CO_DEAD)
				continue;
			live++;
			if (runnable(c))
				ready[n++] = c;
			else if (c->wake_ms < next)
				next = c->wake_ms;
		}
		if (live == 0)
			break;
		if (n == 0) {
			W.now = next;
			continue;
		}
		W.steps++;
		if (sim_chance(W.pf.crash_ppm)) {
			w = (int)sim_below((uint64_t)W.pf.workers +
			    (W.pf.completer ? 1 : 0));
			if (w == W.pf.workers)
				w = SIM_COMPLETER;
			if (W.workers[w].alive)
				worker_crash(w, "between steps");
		} else if (!simstore_committing() && sim_chance(W.pf.jump_ppm))
			clock_jump();
		else {
			W.now += sim_below(20);
			resume(ready[sim_below((uint64_t)n)]);
		}
		check_step();
	}
}

static const char *const fault_names[] = {
	"after_claim", "in_provider", "after_charge", "store_claim",
	"store_claim_commit", "store_checkpoint", "store_complete",
	"store_complete_commit", "after_complete", "mid_response",
	"store_release", "store_abandon", "clock", "after_refund"
};

/* Picks one of the values of a ppm table. */
static uint32_t
pick(const uint32_t *v, size_t n)
{
	return v[sim_below(n)];
}

#define PICK(...) pick((const uint32_t[]){ __VA_ARGS__ }, \
    sizeof((const uint32_t[]){ __VA_ARGS__ }) / sizeof(uint32_t))

/*
 * Swarm testing (Groce et al., ISSTA 2012): each schedule turns some
 * faults and behaviours off and others up, which finds more than one mix
 * of everything at once.
 */
static void
profile_draw(struct profile *p)
{
	p->workers = 1 + (int)sim_below(3);
	p->accounts = 1 + (int)sim_below(3);
	p->clients = 1 + (int)sim_below(3);
	p->ops = 1 + (int)sim_below(4);
	p->crash_ppm = PICK(0, 0, 2000, 10000, 30000);
	p->fault_target = fault_names[sim_below(sizeof(fault_names) /
	    sizeof(fault_names[0]))];
	p->fault_crash_ppm = PICK(0, 100000, 300000, 1000000);
	p->lost_ppm = PICK(0, 50000, 200000);
	p->jump_ppm = PICK(0, 5000, 20000);
	p->store_fail_ppm = PICK(0, 0, 10000, 50000);
	p->outage_ppm = PICK(0, 50000, 200000);
	p->decline_ppm = PICK(0, 50000, 200000);
	p->prov_lost_ppm = PICK(0, 100000, 300000);
	p->prov_slow_ppm = PICK(0, 50000, 200000);
	p->dup_ppm = PICK(0, 100000, 300000);
	p->giveup_ppm = PICK(0, 50000, 200000);
	p->late_ppm = PICK(0, 50000, 200000);
	p->reuse_ppm = PICK(0, 100000, 300000);
	p->probe_ppm = PICK(0, 200000);
	p->keys_per_account = PICK(0, 0, 4, 16);
	p->purge = (int)sim_below(2);
	p->refund_ppm = PICK(0, 300000, 700000, 1000000);
	p->race_ppm = PICK(0, 200000, 500000);
	p->completer = (int)sim_below(2);
	p->commit_fail_ppm = PICK(0, 0, 20000, 100000);
}

static void
purger_main(void *arg)
{
	size_t purged;

	(void)arg;
	while (W.clients_left > 0) {
		sim_sleep(1000 + sim_below(sim_below(2) ? W.lease_ms :
		    W.ttl_ms / 4), "purger idle");
		if (glue_purge(W.now, 1 + sim_below(64), &purged) == 0 &&
		    purged > 0)
			trace("purged %zu", purged);
	}
}

/*
 * The claim the completer takes over next, as a request nobody waits
 * for: the provider's charges and the store's completions that follow are
 * the checker's to see for that (scope, key), as a retry's would be.
 */
static void
completer_taking(void *ctx, const char *scope, const char *key)
{
	struct co *c = ctx;
	struct sim_req *rq = sim_req_new();

	c->req = rq;
	if (rq == NULL)
		return;
	snprintf(rq->scope, sizeof(rq->scope), "%s", scope);
	snprintf(rq->key, sizeof(rq->key), "%s", key);
	snprintf(rq->method, sizeof(rq->method), "POST");
	check_claim_path(scope, key, rq->path, sizeof(rq->path));
	rq->worker = SIM_COMPLETER;
	trace("completer takes %s key %s over (r%d)", scope, key, rq->id);
}

/*
 * idemctl resume from its timer: now and then, in batches of random size,
 * sometimes with a limit, sometimes walking every key (--all).  Its
 * process dies like a worker (at its fault points, or between steps) and
 * its timer starts it again.
 */
static void
completer_main(void *arg)
{
	struct pay_resume_counts n;
	struct co *self = W.cur;

	(void)arg;
	while (W.clients_left > 0) {
		sim_sleep(1000 + sim_below(sim_below(2) ? W.lease_ms :
		    4 * W.lease_ms), "completer idle");
		if (glue_resume(W.workers[SIM_COMPLETER].app,
		    1 + sim_below(8), sim_below(2) ? 0 : 1 + sim_below(4),
		    sim_below(4) == 0, completer_taking, self, &n) != 0)
			trace("completer: the store failed");
		else if (n.seen > 0)
			trace("completer: seen %zu, completed %zu, released "
			    "%zu, left %zu, busy %zu", n.seen, n.completed,
			    n.released, n.left, n.busy);
		self->req = NULL;
	}
}

static void
completer_start(void)
{
	worker_start(SIM_COMPLETER);
	co_spawn(CO_COMPLETER, SIM_COMPLETER, completer_main, NULL);
}

static void
world_free(void)
{
	int i;

	for (i = 0; i < SIM_MAX_COS; i++)
		if (W.cos[i].stack != NULL)
			co_stack_free(&W.cos[i]);
	for (i = 0; i < SIM_MAX_WORKERS; i++)
		if (W.workers[i].app != NULL) {
			glue_app_close(W.workers[i].app);
			W.workers[i].app = NULL;
		}
	while (nreqs > 0) {
		nreqs--;
		sim_resp_free(&reqs[nreqs]->committed_resp);
		free(reqs[nreqs]);
	}
	glue_world_end();
	check_reset();
}

int
sim_run(uint64_t seed, enum sim_backend backend, int verbose,
    uint64_t *steps)
{
	int w;

	memset(&W, 0, sizeof(W));
	W.seed = seed;
	W.backend = backend;
	W.verbose = verbose;
	prng_seed(&W.rng, seed);
	W.max_steps = 200000;
	W.ttl_ms = 24ULL * 3600 * 1000;
	W.lease_ms = 30 * 1000;
	W.now = 1700000000000ULL + sim_below(1000000000ULL);
	trace_reset();
	profile_draw(&W.pf);
	trace("seed %" PRIu64 " on the %s store: %d workers, %d accounts x "
	    "%d clients x %d ops; crash %u ppm, crash at %s %u ppm, lost %u, jump %u, store "
	    "fail %u, outage %u, decline %u, provider lost %u, slow %u, dup "
	    "%u, give up %u, late %u, reuse %u, probe %u, refund %u, race %u, "
	    "purge %d, completer %d, keys per account %" PRIu64
	    ", commit fail %u", seed,
	    backend_name(),
	    W.pf.workers, W.pf.accounts, W.pf.clients, W.pf.ops,
	    W.pf.crash_ppm, W.pf.fault_target, W.pf.fault_crash_ppm,
	    W.pf.lost_ppm, W.pf.jump_ppm, W.pf.store_fail_ppm,
	    W.pf.outage_ppm, W.pf.decline_ppm, W.pf.prov_lost_ppm,
	    W.pf.prov_slow_ppm, W.pf.dup_ppm, W.pf.giveup_ppm, W.pf.late_ppm,
	    W.pf.reuse_ppm, W.pf.probe_ppm, W.pf.refund_ppm, W.pf.race_ppm,
	    W.pf.purge, W.pf.completer, W.pf.keys_per_account,
	    W.pf.commit_fail_ppm);
	glue_world_begin();
	for (w = 0; w < W.pf.workers; w++)
		worker_start(w);
	client_start_all();
	if (W.pf.purge)
		co_spawn(CO_PURGER, -1, purger_main, NULL);
	if (W.pf.completer)
		completer_start();
	schedule();
	if (!W.failed)
		check_step();
	if (!W.failed && W.steps >= W.max_steps)
		trace("step bound reached");
	*steps = W.steps;
	world_free();
	return W.failed;
}
