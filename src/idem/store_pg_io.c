/* SPDX-License-Identifier: MIT */
/*
 * store_pg_io.c: every wait of the PostgreSQL backend for a server's
 * answer, bounded by a deadline of its own.
 *
 * A server that is connected but silent (its process stopped, a VM
 * paused, a disk that does not answer) never closes the session, and
 * its kernel acknowledges what is sent and every keepalive: TCP's own
 * timers never fire, and a blocking libpq call (PQexec, PQgetResult,
 * PQcancel) waits for as long as the server is silent.  So the backend
 * sends with libpq's asynchronous calls and waits here, by poll, until
 * a deadline; at the deadline it asks the server to cancel the
 * statement (a COMMIT waiting for a synchronous standby ends so, with
 * a WARNING that fails the write), and gives the answer
 * PG_CANCEL_GRACE_MS more to come.  A session whose answer did not
 * come is given up: the caller marks it broken, and the pool closes
 * it.
 *
 * libpq's PQcancel opens a connection to the server and waits for it to
 * close, which a stopped server never does: the cancel request is sent
 * from a detached thread of its own, which nobody waits for, so that
 * the caller's deadline holds whatever the cancel meets.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>

#include <libpq-fe.h>

#include "err.h"
#include "store_pg.h"

static void *
pg_cancel_run(void *arg)
{
	PGcancel *cancel = arg;
	char err[256];

	(void)PQcancel(cancel, err, sizeof(err));
	PQfreeCancel(cancel);
	return NULL;
}

void
pg_cancel(PGconn *c)
{
	PGcancel *cancel;
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	if ((cancel = PQgetCancel(c)) == NULL)
		return;
	if (pthread_attr_init(&attr) != 0) {
		PQfreeCancel(cancel);
		return;
	}
	(void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, pg_cancel_run, cancel);
	pthread_attr_destroy(&attr);
	/* No thread: the grace after the deadline still bounds the wait. */
	if (rc != 0)
		PQfreeCancel(cancel);
}

void
pg_wait_init(struct pgwait *w, unsigned ms)
{
	w->deadline = pg_mono_ms() + (ms != 0 ? ms : PG_STATEMENT_TIMEOUT_MS) +
	    PG_DEADLINE_SLACK_MS;
	w->cancelled = 0;
}

int
pg_wait_answer(PGconn *c, struct pgwait *w)
{
	struct pollfd p;
	uint64_t now;
	int n;

	p.fd = PQsocket(c);
	p.events = POLLIN;
	if (p.fd < 0)
		return -1;
	while (PQisBusy(c)) {
		now = pg_mono_ms();
		if (now >= w->deadline) {
			if (w->cancelled)
				return 1;
			pg_cancel(c);
			w->cancelled = 1;
			w->deadline = now + PG_CANCEL_GRACE_MS;
			continue;
		}
		p.revents = 0;
		n = poll(&p, 1, (int)(w->deadline - now));
		if (n == -1 && errno != EINTR)
			return -1;
		if (n == 1 && !PQconsumeInput(c))
			return -1;
	}
	return 0;
}

int
pg_wait_result(PGconn *c, struct pgwait *w, PGresult **r)
{
	int rc;

	*r = NULL;
	if ((rc = pg_wait_answer(c, w)) != 0)
		return -1;
	*r = PQgetResult(c);
	return 0;
}

PGresult *
pg_exec_by(PGconn *c, const char *sql, const struct pgargs *a, int binary,
    struct pgwait *w)
{
	PGresult *r, *last = NULL;
	int sent;

	if (a == NULL)
		sent = PQsendQuery(c, sql);
	else
		sent = PQsendQueryParams(c, sql, a->n, NULL, a->v, a->len,
		    a->fmt, binary);
	/* A session in blocking mode (libpq's default) has sent it all. */
	if (sent != 1)
		return NULL;
	/* As PQexec: the last result, the error if there was one. */
	for (;;) {
		if (pg_wait_result(c, w, &r) != 0) {
			PQclear(last);
			return NULL;
		}
		if (r == NULL)
			return last;
		if (last != NULL && PQresultStatus(last) ==
		    PGRES_FATAL_ERROR) {
			PQclear(r);
			continue;
		}
		PQclear(last);
		last = r;
	}
}
