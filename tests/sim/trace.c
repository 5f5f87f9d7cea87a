/* SPDX-License-Identifier: MIT */
/*
 * trace.c: the last events of a schedule, printed when it fails.
 *
 * A ring of fixed-size lines, each stamped with the step, the simulated
 * time and who acted, so that the first violation can be read as a story:
 * who claimed, who crashed where, what the provider did, who was answered
 * what.  Formatting costs a little on every event; a sweep of thousands of
 * schedules still spends most of its time in the code under test.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "sim.h"

#define TRACE_LINES 4096
#define TRACE_WIDTH 400

static char ring[TRACE_LINES][TRACE_WIDTH];
static size_t head, count;

void
trace_reset(void)
{
	head = 0;
	count = 0;
}

void
trace(const char *fmt, ...)
{
	char *line = ring[head];
	const char *who;
	char whobuf[32];
	va_list ap;
	int n;

	if (W.cur == NULL)
		who = "sched";
	else {
		if (W.cur->kind == CO_REQUEST && W.cur->req != NULL)
			snprintf(whobuf, sizeof(whobuf), "r%d@w%d",
			    W.cur->req->id, W.cur->worker);
		else if (W.cur->kind == CO_COMPLETER && W.cur->req != NULL)
			snprintf(whobuf, sizeof(whobuf), "resume r%d",
			    W.cur->req->id);
		else if (W.cur->kind == CO_COMPLETER)
			snprintf(whobuf, sizeof(whobuf), "completer");
		else if (W.cur->kind == CO_CLIENT)
			snprintf(whobuf, sizeof(whobuf), "client %d",
			    sim_client_index(W.cur->cl));
		else
			snprintf(whobuf, sizeof(whobuf), "purger");
		who = whobuf;
	}
	n = snprintf(line, TRACE_WIDTH, "%6" PRIu64 " t=%-12" PRIu64 " %-14s ",
	    W.steps, (uint64_t)(W.now - 1700000000000ULL), who);
	if (n < 0 || n >= TRACE_WIDTH)
		n = 0;
	va_start(ap, fmt);
	vsnprintf(line + n, TRACE_WIDTH - (size_t)n, fmt, ap);
	va_end(ap);
	if (W.verbose)
		fprintf(stdout, "%s\n", line);
	head = (head + 1) % TRACE_LINES;
	if (count < TRACE_LINES)
		count++;
}

void
trace_print(FILE *out, size_t last)
{
	size_t n = last < count ? last : count, i;

	if (n < count)
		fprintf(out, "  ... %zu earlier events\n", count - n);
	for (i = 0; i < n; i++)
		fprintf(out, "  %s\n", ring[(head + TRACE_LINES - n + i) %
		    TRACE_LINES]);
}

const char *
trace_decision(int decision)
{
	static const char *const names[ENGINE__MAX] = {
		[ENGINE_CLAIM] = "claim",
		[ENGINE_TAKEOVER] = "take-over",
		[ENGINE_REPLAY] = "replay",
		[ENGINE_CONFLICT] = "conflict",
		[ENGINE_MISMATCH] = "mismatch",
	};

	return decision >= 0 && decision < ENGINE__MAX ? names[decision] : "?";
}
