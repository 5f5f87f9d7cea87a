/* SPDX-License-Identifier: MIT */
/*
 * bare: the ceiling for tests/bench/run.py.
 *
 * A FastCGI responder that answers every request with the same small
 * JSON 200, doing nothing else: what lighttpd, spawn-fcgi and libfcgi
 * cost on their own.  The benchmark runs it with the same web server
 * configuration and the same number of workers as idem-fcgi, so the
 * ratio of idem's figures to this one is what idem itself costs.
 *
 * It reads IDEM_THREADS, the per-worker thread count the responder is
 * to honour, so the ceiling keeps the responder's shape when that
 * setting is used (1 when unset).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcgiapp.h>

#define BARE_MAX_THREADS 256

static const char bare_answer[] =
    "Status: 200 OK\r\n"
    "Content-Type: application/json\r\n"
    "Cache-Control: no-store\r\n"
    "\r\n"
    "{\"status\":\"ok\"}\n";

/*
 * libfcgi does not serialise accept() between threads on every
 * platform; its own threaded example holds a lock around it.
 */
static pthread_mutex_t bare_accept_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * A stop signal ends the process at once: it holds no state, and the
 * threads waiting for bare_accept_lock would never see
 * FCGX_ShutdownPending (only the one in accept is interrupted).
 */
static void
bare_on_signal(int sig)
{
	(void)sig;
	_exit(0);
}

static void
bare_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = bare_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* Answers requests until the listening socket fails or a signal came. */
static void *
bare_loop(void *arg)
{
	FCGX_Request rq;
	int rc;

	(void)arg;
	if (FCGX_InitRequest(&rq, 0, 0) != 0) {
		fprintf(stderr, "bare: FCGX_InitRequest failed\n");
		return NULL;
	}
	for (;;) {
		pthread_mutex_lock(&bare_accept_lock);
		rc = FCGX_Accept_r(&rq);
		pthread_mutex_unlock(&bare_accept_lock);
		if (rc < 0)
			break;
		FCGX_PutStr(bare_answer, (int)sizeof(bare_answer) - 1, rq.out);
		FCGX_Finish_r(&rq);
	}
	FCGX_Free(&rq, 1);
	return NULL;
}

/* IDEM_THREADS: 1 when unset; a malformed value stops the worker. */
static int
bare_threads(long *out)
{
	const char *v = getenv("IDEM_THREADS");
	char *end;

	*out = 1;
	if (v == NULL || *v == '\0')
		return 0;
	errno = 0;
	*out = strtol(v, &end, 10);
	if (errno != 0 || *end != '\0' || *out < 1 || *out > BARE_MAX_THREADS) {
		fprintf(stderr, "bare: IDEM_THREADS: not a count from 1 to "
		    "%d: %s\n", BARE_MAX_THREADS, v);
		return -1;
	}
	return 0;
}

int
main(void)
{
	pthread_t tids[BARE_MAX_THREADS];
	long n, i, started;

	if (bare_threads(&n) != 0)
		return 1;
	if (FCGX_IsCGI()) {
		fputs(bare_answer, stdout);
		return 0;
	}
	if (FCGX_Init() != 0) {
		fprintf(stderr, "bare: FastCGI initialisation failed\n");
		return 1;
	}
	bare_signals();
	for (started = 1; started < n; started++)
		if (pthread_create(&tids[started], NULL, bare_loop, NULL) != 0) {
			fprintf(stderr, "bare: only %ld threads started\n",
			    started);
			break;
		}
	bare_loop(NULL);
	for (i = 1; i < started; i++)
		pthread_join(tids[i], NULL);
	return 0;
}
