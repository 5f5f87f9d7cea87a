/* SPDX-License-Identifier: MIT */
/*
 * server.c: the FastCGI accept loop on a pool of threads, or one CGI
 * request.
 *
 * A few threads of the pool wait in FCGX_Accept_r on the shared listening
 * socket (server_take_turn); each answers the request it gets, so a
 * request that waits (on the payment provider, on a commit) holds its
 * thread, not the process.
 *
 * Shutdown: the signals that stop a worker are blocked in every thread
 * but the main one, which waits for them with sigwait.  It then marks the
 * server as stopping and wakes, with SIGUSR2, each thread that is idle in
 * accept (FCGI_FAIL_ACCEPT_ON_INTR makes that accept give up); a thread
 * busy with a request is never interrupted: it finishes the request, sees
 * the mark and leaves.  The main thread joins them all and returns.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "server.h"

/* Stack of each request thread: far above what a request uses. */
#define SERVER_STACK (1024 * 1024)

static volatile sig_atomic_t server_stop;

int
server_stopping(void)
{
	return server_stop != 0;
}

/* The signals that stop a worker; mod_fcgid sends SIGUSR1 to stop one. */
static void
server_stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR1);
}

/*
 * CGI and single-threaded use: a stop signal marks the server stopping and
 * makes libfcgi give up on the accept it may be blocked in.  Installed
 * without SA_RESTART so a blocked accept returns.
 */
static void
server_on_signal(int sig)
{
	(void)sig;
	server_stop = 1;
	FCGX_ShutdownPending();
}

/* SIGUSR2 only interrupts an idle accept; it has nothing to do. */
static void
server_on_wake(int sig)
{
	(void)sig;
}

static void
server_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = server_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = server_on_wake;
	sigaction(SIGUSR2, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* CGI: meta-variables in the environment, body on stdin, answer on stdout. */

extern char **environ;

static long
cgi_read(void *ctx, void *buf, size_t len)
{
	ssize_t n;

	(void)ctx;
	do
		n = read(STDIN_FILENO, buf, len);
	while (n < 0 && errno == EINTR);
	return (long)n;
}

static int
cgi_write(void *ctx, const void *data, size_t len)
{
	const char *p = data;
	ssize_t n;

	(void)ctx;
	while (len > 0) {
		n = write(STDOUT_FILENO, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* FastCGI: the same over an FCGX_Request (its envp holds the variables). */

static long
fcgi_read(void *ctx, void *buf, size_t len)
{
	FCGX_Request *rq = ctx;
	int n;

	if (len > 1 << 20)
		len = 1 << 20;
	n = FCGX_GetStr(buf, (int)len, rq->in);
	if (n < 0 || FCGX_GetError(rq->in) != 0)
		return -1;
	return n;
}

static int
fcgi_write(void *ctx, const void *data, size_t len)
{
	FCGX_Request *rq = ctx;
	const char *p = data;
	int chunk;

	while (len > 0) {
		chunk = len > 1 << 20 ? 1 << 20 : (int)len;
		if (FCGX_PutStr(p, chunk, rq->out) != chunk)
			return -1;
		p += chunk;
		len -= (size_t)chunk;
	}
	return 0;
}

/*
 * Reads one request into req, lets the handler answer it in resp, writes
 * the answer.  req and resp are the calling thread's, set up once
 * (req_init, resp_init) and recycled here, so that their memory serves
 * the next request too; the caller frees them.
 */
static void
server_one(const struct server_config *cfg, server_handler_fn fn, void *app,
    char *const *envp, req_read_fn rd, resp_write_fn wr, void *ctx,
    struct request *req, struct response *resp)
{
	enum req_status st;

	st = req_reread_env(req, envp, rd, ctx, cfg->body_limit, cfg->mount);
	fn(app, st, req, resp);
	if (resp_write(resp, wr, ctx) != 0)
		fprintf(stderr, "idem: response not delivered: %s\n",
		    strerror(errno));
	resp_recycle(resp);
	req_recycle(req);
}

int
server_fail(const struct response *resp)
{
	if (!FCGX_IsCGI())
		return 0;
	resp_write(resp, cgi_write, NULL);
	return 1;
}

/* One thread of the pool. */
struct server_thread {
	pthread_t tid;
	const struct server_config *cfg;
	server_handler_fn fn;
	void *app;
	int started;
	int idle;       /* in accept: may be woken (under server_mu) */
	int gone;       /* left its loop (under server_mu) */
	/* Waiting for its turn to accept (under server_mu): */
	pthread_cond_t turn;
	int handed;     /* the turn was handed to it */
	struct server_thread *below;
};

static pthread_mutex_t server_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t server_cv = PTHREAD_COND_INITIALIZER;
/*
 * At most SERVER_ACCEPTORS threads wait in accept at once; the others
 * wait on a stack and are woken, the most recently idle first, only when
 * no thread is left in accept.  Under load a thread that finishes a
 * request goes straight back to accept, warm, and no request pays for a
 * hand-over; the threads beyond are there for requests that wait (on the
 * provider).  (All threads in accept at once, each woken in turn with
 * cold caches, measured a third slower.)
 */
#define SERVER_ACCEPTORS 4
static int server_acceptors;
static struct server_thread *server_waiting;

/* Waits for a turn to accept; 0, or -1 once the server is stopping. */
static int
server_take_turn(struct server_thread *t)
{
	pthread_mutex_lock(&server_mu);
	if (server_acceptors >= SERVER_ACCEPTORS && !server_stop) {
		t->below = server_waiting;
		server_waiting = t;
		while (!t->handed && !server_stop)
			pthread_cond_wait(&t->turn, &server_mu);
		t->handed = 0;
	}
	if (server_stop) {
		pthread_mutex_unlock(&server_mu);
		return -1;
	}
	server_acceptors++;
	t->idle = 1;
	pthread_mutex_unlock(&server_mu);
	return 0;
}

/* Leaves accept; wakes a waiting thread if none is left in accept. */
static void
server_give_turn(struct server_thread *t)
{
	struct server_thread *next;

	pthread_mutex_lock(&server_mu);
	t->idle = 0;
	server_acceptors--;
	if (server_acceptors == 0 && (next = server_waiting) != NULL) {
		server_waiting = next->below;
		next->handed = 1;
		pthread_cond_signal(&next->turn);
	}
	pthread_mutex_unlock(&server_mu);
}

/* The thread left its loop: server_drain may stop waiting for it. */
static void
server_gone(struct server_thread *t)
{
	pthread_mutex_lock(&server_mu);
	t->gone = 1;
	pthread_cond_signal(&server_cv);
	pthread_mutex_unlock(&server_mu);
}

static void *
server_thread_main(void *arg)
{
	struct server_thread *t = arg;
	struct request req;
	struct response resp;
	FCGX_Request rq;
	int rc;

	req_init(&req);
	resp_init(&resp);
	if (FCGX_InitRequest(&rq, 0, FCGI_FAIL_ACCEPT_ON_INTR) != 0) {
		fprintf(stderr, "idem: FastCGI request set-up failed\n");
		server_gone(t);
		return NULL;
	}
	while (server_take_turn(t) == 0) {
		rc = FCGX_Accept_r(&rq);
		server_give_turn(t);
		if (rc < 0) {
			/* Woken to stop, or the socket failed: either way, go. */
			if (!server_stop && errno != EINTR)
				fprintf(stderr, "idem: accept failed: %s\n",
				    strerror(errno));
			if (server_stop || errno != EINTR)
				break;
			continue;
		}
		server_one(t->cfg, t->fn, t->app, rq.envp, fcgi_read,
		    fcgi_write, &rq, &req, &resp);
		FCGX_Finish_r(&rq);
	}
	req_free(&req);
	resp_free(&resp);
	FCGX_Free(&rq, 1);
	server_gone(t);
	return NULL;
}

/*
 * Stops the pool: wakes the idle threads until every thread has left.
 * A thread between its check of server_stop and its accept is woken on
 * the next pass, which comes when any thread leaves or after a short
 * wait, so none is left blocked.
 */
static void
server_drain(struct server_thread *th, unsigned n)
{
	struct timespec ts;
	unsigned i, left;

	pthread_mutex_lock(&server_mu);
	server_stop = 1;
	/* Those waiting for their turn see the stop and leave. */
	for (; server_waiting != NULL; server_waiting = server_waiting->below)
		pthread_cond_signal(&server_waiting->turn);
	for (;;) {
		for (i = 0, left = 0; i < n; i++) {
			if (!th[i].started || th[i].gone)
				continue;
			left++;
			if (th[i].idle)
				pthread_kill(th[i].tid, SIGUSR2);
		}
		if (left == 0)
			break;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&server_cv, &server_mu, &ts);
	}
	pthread_mutex_unlock(&server_mu);
	for (i = 0; i < n; i++)
		if (th[i].started)
			pthread_join(th[i].tid, NULL);
	for (i = 0; i < n; i++)
		pthread_cond_destroy(&th[i].turn);
}

static int
server_pool(const struct server_config *cfg, server_handler_fn fn, void *app)
{
	struct server_thread *th;
	pthread_attr_t attr;
	sigset_t stop, old;
	unsigned i, n = cfg->threads > 0 ? cfg->threads : 1, started = 0;
	int sig = 0, rc;

	if ((th = calloc(n, sizeof(*th))) == NULL)
		return 1;
	server_stop_signals(&stop);
	/* Threads inherit the mask: only the main thread takes stop signals. */
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, SERVER_STACK);
	for (i = 0; i < n; i++) {
		th[i].cfg = cfg;
		th[i].fn = fn;
		th[i].app = app;
		pthread_cond_init(&th[i].turn, NULL);
		if ((rc = pthread_create(&th[i].tid, &attr, server_thread_main,
		    &th[i])) != 0) {
			fprintf(stderr, "idem: thread %u of %u: %s\n", i + 1, n,
			    strerror(rc));
			break;
		}
		th[i].started = 1;
		started++;
	}
	pthread_attr_destroy(&attr);
	if (started > 0) {
		while (sigwait(&stop, &sig) != 0)
			continue;
		(void)sig;
	}
	server_drain(th, n);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	free(th);
	return started > 0 ? 0 : 1;
}

int
server_run(const struct server_config *cfg, server_handler_fn fn, void *app)
{
	server_signals();
	if (FCGX_IsCGI()) {
		struct request req;
		struct response resp;

		req_init(&req);
		resp_init(&resp);
		server_one(cfg, fn, app, environ, cgi_read, cgi_write, NULL,
		    &req, &resp);
		req_free(&req);
		resp_free(&resp);
		return 0;
	}
	if (FCGX_Init() != 0) {
		fprintf(stderr, "idem: FastCGI initialisation failed\n");
		return 1;
	}
	return server_pool(cfg, fn, app);
}
