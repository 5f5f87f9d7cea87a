/* SPDX-License-Identifier: MIT */
/*
 * server.h: the FastCGI accept loop, or one CGI request.
 *
 * With a FastCGI listening socket on standard input (spawn-fcgi, mod_fcgid,
 * lighttpd's own spawning) a pool of cfg->threads threads answers requests
 * until SIGTERM, SIGINT, SIGHUP or SIGUSR1, each finishing the request it
 * holds first.  Without one (FCGX_IsCGI) it answers exactly one request as
 * plain CGI.  The handler runs on many threads at once.  Only server.c
 * includes fcgiapp.h.
 */
#ifndef HTTP_SERVER_H
#define HTTP_SERVER_H

#include <stddef.h>

#include "request.h"
#include "response.h"

/*
 * Answers one request.  A handler that cannot even read its request gets
 * status (other than REQ_OK) and builds the problem itself.
 */
typedef void (*server_handler_fn)(void *app, enum req_status status,
    const struct request *req, struct response *resp);

struct server_config {
	size_t body_limit;
	const char *mount;
	unsigned threads;     /* requests served at once by one process */
};

/* Returns 0 after a clean shutdown, 1 on a fatal error. */
int server_run(const struct server_config *cfg, server_handler_fn fn,
    void *app);

/*
 * For a start-up failure: run as CGI, answers the one request with resp so
 * the client gets a problem instead of the web server's error page, and
 * returns 1; under FastCGI does nothing (the process manager logs the
 * worker's exit) and returns 0.
 */
int server_fail(const struct response *resp);

/* 1 once a shutdown signal arrived. */
int server_stopping(void);

#endif
