/* SPDX-License-Identifier: MIT */
/*
 * simenv.c: the simulated clock and fault points.
 *
 * The library reads the time through clock_now_ms and marks its fault
 * points with fault_point (src/util/fault.h); here both belong to the
 * simulator.  Reading the clock is a yield, so that time can pass, and
 * other requests run, between any two readings.  A fault point is a yield
 * where the worker may die; the store's own points ("store_claim" and so
 * on) fail the write, as a full map would, at the profile's rate.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "fault.h"
#include "sim.h"

void
sim_point(const char *name)
{
	uint32_t ppm;

	if (W.cur == NULL || W.in_store || W.cur->worker < 0) {
		sim_yield(name);
		return;
	}
	sim_yield(name);
	ppm = strcmp(name, W.pf.fault_target) == 0 ? W.pf.fault_crash_ppm :
	    W.pf.fault_crash_ppm / 50;
	if (sim_chance(ppm))
		sim_crash_here(name);
}

int
sim_store_fails(const char *name)
{
	if (!sim_chance(W.pf.store_fail_ppm))
		return 0;
	W.faults++;
	trace("store write fails at %s (as on a full map)", name);
	return 1;
}

/*
 * The store's own points sit inside a write transaction, which holds the
 * store's write lock: they never yield (the wrappers around each store
 * operation yield before and after it instead), and only make the write
 * fail.
 */
int
fault_point(const char *name)
{
	/* A group commit whose jobs ran, and whose commit fails. */
	if (strcmp(name, "batch_commit") == 0) {
		if (!sim_chance(W.pf.commit_fail_ppm))
			return 0;
		W.faults++;
		trace("commit fails after its jobs ran");
		/* One thread: the batch is the running request's job alone. */
		check_on_failed_commit(sim_current_req());
		return 1;
	}
	/* Only a write queued behind a leader gets here: never in one thread. */
	if (strcmp(name, "store_queued") == 0)
		return 0;
	if (strncmp(name, "store_", 6) == 0 ||
	    strncmp(name, "batch_", 6) == 0)
		return strstr(name, "_commit") == NULL &&
		    sim_store_fails(name);
	sim_point(name);
	return 0;
}

uint64_t
clock_now_ms(void)
{
	sim_point("clock");
	return W.now;
}
