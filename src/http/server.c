#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "server.h"

static volatile sig_atomic_t server_stop;

int
server_stopping(void)
{
	return server_stop != 0;
}

/*
 * A shutdown signal lets the current request finish.  FCGX_ShutdownPending
 * makes libfcgi's accept loop give up instead of retrying on EINTR; the
 * handler is installed without SA_RESTART so a blocked accept returns.
 */
static void
server_on_signal(int sig)
{
	(void)sig;
	server_stop = 1;
	FCGX_ShutdownPending();
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
	/* mod_fcgid sends SIGUSR1 for a graceful stop. */
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* CGI: meta-variables in the environment, body on stdin, answer on stdout. */

static const char *
cgi_param(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

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

/* FastCGI: the same three operations over an FCGX_Request. */

static const char *
fcgi_param(void *ctx, const char *name)
{
	FCGX_Request *rq = ctx;

	return FCGX_GetParam(name, rq->envp);
}

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

/* Reads one request, lets the handler answer it, writes the answer. */
static void
server_one(const struct server_config *cfg, server_handler_fn fn, void *app,
    req_param_fn param, req_read_fn rd, resp_write_fn wr, void *ctx)
{
	struct request req;
	struct response resp;
	enum req_status st;

	resp_init(&resp);
	st = req_read(&req, param, ctx, rd, ctx, cfg->body_limit, cfg->mount);
	fn(app, st, &req, &resp);
	if (resp_write(&resp, wr, ctx) != 0)
		fprintf(stderr, "idem: response not delivered: %s\n",
		    strerror(errno));
	resp_free(&resp);
	req_free(&req);
}

void
server_fail(const struct response *resp)
{
	if (FCGX_IsCGI())
		resp_write(resp, cgi_write, NULL);
}

int
server_run(const struct server_config *cfg, server_handler_fn fn, void *app)
{
	FCGX_Request rq;

	server_signals();
	if (FCGX_IsCGI()) {
		server_one(cfg, fn, app, cgi_param, cgi_read, cgi_write, NULL);
		return 0;
	}
	if (FCGX_Init() != 0 || FCGX_InitRequest(&rq, 0, 0) != 0) {
		fprintf(stderr, "idem: FastCGI initialisation failed\n");
		return 1;
	}
	while (!server_stop && FCGX_Accept_r(&rq) >= 0) {
		server_one(cfg, fn, app, fcgi_param, fcgi_read, fcgi_write,
		    &rq);
		FCGX_Finish_r(&rq);
	}
	FCGX_Free(&rq, 1);
	return 0;
}
