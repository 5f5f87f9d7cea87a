/* SPDX-License-Identifier: MIT */
/*
 * sim.h: the deterministic simulator's shared state (internal header).
 *
 * One OS thread runs a whole schedule.  Clients, requests and the purger
 * are cooperative coroutines (ucontext); a coroutine runs until it yields,
 * and it yields only in the simulator's own wrappers: store operations,
 * provider calls, clock reads and fault points.  The scheduler then picks,
 * from the seeded generator, what happens next: a coroutine resumes, the
 * clock jumps, a worker crashes.  See tests/sim/README.md.
 */
#ifndef SIM_H
#define SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <ucontext.h>

#include "prng.h"

#define SIM_MAX_WORKERS 4
#define SIM_MAX_COS 256
#define SIM_MAX_CLIENTS 16
#define SIM_STACK (256 * 1024)

enum co_state {
	CO_FREE = 0,
	CO_READY,     /* parked at a yield point, may run now */
	CO_SLEEPING,  /* runnable from wake_ms on */
	CO_WAITING,   /* runnable when woken, or at wake_ms (a timeout) */
	CO_DEAD       /* its worker crashed: never runs again */
};

enum co_kind {
	CO_CLIENT,
	CO_REQUEST,
	CO_PURGER,
	CO_COMPLETER
};

/* The completer's process: the worker slot after every request worker's. */
#define SIM_COMPLETER (SIM_MAX_WORKERS - 1)

struct sim_req;
struct sim_client;

struct co {
	int id;
	enum co_kind kind;
	enum co_state state;
	int worker;               /* CO_REQUEST, CO_PURGER, CO_COMPLETER;
	                             -1 for clients */
	int incarnation;          /* of its worker when it started */
	uint64_t wake_ms;
	int woken;                /* CO_WAITING: woken before the timeout */
	ucontext_t ctx;
	void *stack;
	void *fake;               /* AddressSanitizer's fake stack handle */
	void (*fn)(void *);
	void *arg;
	const char *where;        /* the yield point it is parked at */
	struct sim_req *req;      /* CO_REQUEST; CO_COMPLETER: the claim it
	                             is taking over, or NULL */
	struct sim_client *cl;    /* CO_CLIENT */
};

/* What varies from one schedule to the next (swarm testing). */
struct profile {
	int workers, accounts, clients, ops;
	uint32_t crash_ppm;        /* a worker crashes at a scheduling step */
	uint32_t fault_crash_ppm;  /* a worker crashes at its fault point */
	const char *fault_target;  /* the fault point this schedule favours */
	uint32_t lost_ppm;         /* an answer is lost on its way back */
	uint32_t jump_ppm;         /* the clock jumps across a lease or TTL */
	uint32_t store_fail_ppm;   /* a store write fails (full map) */
	uint32_t outage_ppm, decline_ppm, prov_lost_ppm, prov_slow_ppm;
	uint32_t dup_ppm;          /* a request is sent twice at once */
	uint32_t giveup_ppm, late_ppm, reuse_ppm, probe_ppm;
	uint32_t refund_ppm;       /* a client refunds a payment it saw */
	uint32_t race_ppm;         /* other refunds race a client's own */
	uint32_t commit_fail_ppm;  /* a commit fails after its jobs ran */
	uint64_t keys_per_account;  /* LMDB only: the per-scope bound */
	int purge;
	int completer;             /* idemctl resume runs beside the workers */
};

struct worker {
	int alive;
	int incarnation;
	uint64_t restart_ms;
	void *app;                 /* struct app, owned by world.c */
};

/* The store a schedule runs on. */
enum sim_backend {
	SIM_STORE = 0,   /* the simulation store (simstore.c) */
	SIM_LMDB         /* the LMDB store (lmdbwrap.c) */
};

struct world {
	uint64_t seed;
	enum sim_backend backend;
	struct prng rng;
	uint64_t now;              /* the simulated clock, ms since the epoch */
	uint64_t steps, max_steps;
	uint64_t faults;           /* crashes, failed writes, provider faults */
	uint64_t ttl_ms, lease_ms;
	struct profile pf;
	struct co cos[SIM_MAX_COS];
	struct co *cur;            /* running coroutine, NULL in the scheduler */
	struct worker workers[SIM_MAX_WORKERS];
	int clients_left;
	int failed;                /* an invariant broke */
	char failure[512];
	int verbose;
	int in_store;               /* inside a store operation: no yields */
};

extern struct world W;

/* Coroutines (world.c). */
struct co *co_spawn(enum co_kind kind, int worker, void (*fn)(void *),
    void *arg);
void co_wake(struct co *c);
/* Parks the running coroutine at a named point; no-op outside one. */
void sim_yield(const char *where);
void sim_sleep(uint64_t ms, const char *where);
/* Waits to be woken or for ms; returns 1 if woken. */
int sim_wait(uint64_t ms, const char *where);
/* The running coroutine's worker dies here (kill -9): never returns. */
void sim_crash_here(const char *where);
int sim_chance(uint32_t ppm);
uint64_t sim_below(uint64_t n);
/*
 * A named point where the running request may lose its worker: it yields
 * there, and the worker may crash (most often at the profile's target).
 */
void sim_point(const char *name);
/* 1 when the store write at name is to fail as on a full map. */
int sim_store_fails(const char *name);
/* The request the running coroutine serves, or NULL. */
struct sim_req *sim_current_req(void);

/* Trace ring (trace.c). */
/* The engine's decision as the trace names it (claim, take-over, ...). */
const char *trace_decision(int decision);

void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void trace_reset(void);
void trace_print(FILE *out, size_t last);

/* A response as a client (or the checker) sees it. */
struct sim_resp {
	int status;
	int replayed;               /* Idempotent-Replayed: true */
	char ctype[64], location[64], etag[32];
	uint32_t retry_after;
	char *body;                 /* malloc'd, NUL-terminated */
	size_t bodylen;
};

/* One HTTP request a client sent, and what the checker knows of it. */
struct sim_req {
	int id;
	int account;
	char scope[16];
	char key[48];               /* the Idempotency-Key, "" for none */
	char method[8];
	char path[80];
	char body[160];
	struct sim_client *cl;      /* NULL: a duplicate nobody waits for */
	int attempt;
	int worker;
	int committed;              /* its own completion committed */
	int uncommitted;            /* a store call of it rode a commit that
	                               failed */
	struct sim_resp committed_resp;
};

void sim_resp_free(struct sim_resp *r);
/* 1 when status, stored headers and body are byte-identical. */
int sim_resp_same(const struct sim_resp *a, const struct sim_resp *b);

/* Clients (client.c). */
void client_start_all(void);
/* Hands a request's answer to its client, if it still waits for it. */
void client_deliver(struct sim_req *rq, const struct sim_resp *r);
int sim_client_index(const struct sim_client *cl);

/* Requests (world.c): runs rq on a live worker; 0, or -1 if none is up. */
struct sim_req *sim_req_new(void);
int sim_send(struct sim_req *rq);

/* One schedule; returns 1 if an invariant broke (W.failure says which). */
int sim_run(uint64_t seed, enum sim_backend backend, int verbose,
    uint64_t *steps);

/* Randomness for libsodium, from the schedule's generator (random.c). */
void sim_random_install(void);

#endif
