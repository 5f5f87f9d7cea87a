/* SPDX-License-Identifier: MIT */
/*
 * main.c: idem-provider, the payment provider as a FastCGI service of its
 * own (idem-provider(8)); plain CGI, one request, when standard input is
 * no FastCGI socket.  The decisions are service.c's; this file reads the
 * configuration, the requests and writes the answers, and alone includes
 * fcgiapp.h.
 *
 *   IDEM_PROVIDER_DB          the service's store  LOCALSTATEDIR/lib/idem/provider-service
 *   IDEM_PROVIDER_FAIL        none | decline | unavailable | timeout | drop
 *   IDEM_PROVIDER_LATENCY_MS  delay of new work, ms        0
 *   IDEM_PROVIDER_HOLD_MS     timeout mode's extra delay   30000
 *   IDEM_PROVIDER_THREADS     requests served at once      16
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fcgiapp.h>

#include "crypto.h"
#include "idem.h"
#include "options.h"
#include "service.h"

#define PROVIDER_THREADS_MAX 256

extern char **environ;

struct worker {
	struct psvc *svc;
	pthread_mutex_t *accept_mu;
};

/* Reads variable name as a number in [0, max]; 0 or -1 (and a message). */
static int
env_uint(const char *name, unsigned dflt, unsigned max, unsigned *out)
{
	const char *s = getenv(name);
	unsigned long long v;
	char *end;

	*out = dflt;
	if (s == NULL || *s == '\0')
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 || v > max) {
		fprintf(stderr, "idem-provider: %s must be a number from 0 to "
		    "%u, not \"%s\"\n", name, max, s);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

static void
sleep_ms(unsigned ms)
{
	struct timespec ts, rem;

	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &rem) == -1 && errno == EINTR)
		ts = rem;
}

/*
 * The request's path: REQUEST_URI without its query, which every web
 * server we deploy behind sets (RFC 3875 leaves it out; CGI tests set it).
 */
static void
request_path(const char *uri, char *path, size_t size)
{
	size_t n = uri != NULL ? strcspn(uri, "?") : 0;

	if (n >= size)
		n = 0;	/* no path of ours is that long: a 404 */
	memcpy(path, uri != NULL ? uri : "", n);
	path[n] = '\0';
}

/* Formats the answer's CGI header block; its length. */
static int
answer_head(const struct psvc_answer *a, char *b, size_t size)
{
	return snprintf(b, size, "Status: %d\r\nContent-Type: application/json"
	    "\r\nContent-Length: %zu\r\n%s%.0u%s%s\r\n", a->status, a->bodylen,
	    a->retry_after > 0 ? "Retry-After: " : "", a->retry_after,
	    a->retry_after > 0 ? "\r\n" : "",
	    a->replayed ? "Idempotent-Replayed: true\r\n" : "");
}

/*
 * Reads the body (at most PSVC_BODY_MAX bytes; CONTENT_LENGTH bounds it,
 * RFC 3875 section 4.1.2) with rd, and answers.  0, or -1 when the answer
 * is to be dropped.
 */
static int
serve(struct psvc *svc, const char *method, const char *uri, const char *key,
    const char *clen, long (*rd)(void *, char *, size_t), void *rdctx,
    struct psvc_answer *a)
{
	char body[PSVC_BODY_MAX + 1], path[64], *end;
	struct psvc_request rq;
	unsigned long long len = 0;
	long got;
	size_t have = 0;

	memset(a, 0, sizeof(*a));
	if (clen != NULL && *clen != '\0') {
		errno = 0;
		len = strtoull(clen, &end, 10);
		if (clen[0] < '0' || clen[0] > '9' || *end != '\0' ||
		    errno != 0 || len > PSVC_BODY_MAX) {
			a->status = 413;
			a->bodylen = (size_t)snprintf(a->body, sizeof(a->body),
			    "{\"status\":\"invalid\",\"detail\":\"body\"}\n");
			return 0;
		}
	}
	while (have < len && (got = rd(rdctx, body + have,
	    (size_t)len - have)) > 0)
		have += (size_t)got;
	body[have] = '\0';
	request_path(uri, path, sizeof(path));
	rq.method = method;
	rq.path = path;
	rq.key = key;
	rq.body = body;
	rq.bodylen = have;
	psvc_handle(svc, &rq, a);
	if (a->delay_ms > 0)
		sleep_ms(a->delay_ms);
	return a->drop ? -1 : 0;
}

static long
fcgi_read(void *ctx, char *buf, size_t len)
{
	return FCGX_GetStr(buf, (int)len, ctx);
}

static long
cgi_read(void *ctx, char *buf, size_t len)
{
	(void)ctx;
	return (long)fread(buf, 1, len, stdin);
}

static void *
worker_run(void *arg)
{
	struct worker *w = arg;
	struct psvc_answer a;
	FCGX_Request req;
	char head[256];
	int rc, n;

	if (FCGX_InitRequest(&req, 0, 0) != 0)
		return NULL;
	for (;;) {
		pthread_mutex_lock(w->accept_mu);
		rc = FCGX_Accept_r(&req);
		pthread_mutex_unlock(w->accept_mu);
		if (rc < 0)
			break;
		if (serve(w->svc, FCGX_GetParam("REQUEST_METHOD", req.envp),
		    FCGX_GetParam("REQUEST_URI", req.envp),
		    FCGX_GetParam("HTTP_IDEMPOTENCY_KEY", req.envp),
		    FCGX_GetParam("CONTENT_LENGTH", req.envp), fcgi_read,
		    req.in, &a) != 0) {
			/*
			 * The answer is lost: close the connection to the web
			 * server without ending the request, so the client
			 * sees the request fail after it was sent.
			 */
			FCGX_Free(&req, 1);
			continue;
		}
		n = answer_head(&a, head, sizeof(head));
		FCGX_PutStr(head, n, req.out);
		FCGX_PutStr(a.body, (int)a.bodylen, req.out);
		FCGX_Finish_r(&req);
	}
	FCGX_Free(&req, 1);
	return NULL;
}

static int
serve_fcgi(struct psvc *svc, unsigned nthreads)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_t tid[PROVIDER_THREADS_MAX];
	struct worker w = { svc, &mu };
	unsigned i, started = 0;

	for (i = 0; i < nthreads; i++) {
		if (pthread_create(&tid[i], NULL, worker_run, &w) != 0)
			break;
		started++;
	}
	for (i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	return started > 0 ? 0 : 1;
}

static int
serve_cgi(struct psvc *svc)
{
	struct psvc_answer a;
	char head[256];
	int n;

	if (serve(svc, getenv("REQUEST_METHOD"), getenv("REQUEST_URI"),
	    getenv("HTTP_IDEMPOTENCY_KEY"), getenv("CONTENT_LENGTH"),
	    cgi_read, NULL, &a) != 0)
		return 0;	/* dropped: no answer at all */
	n = answer_head(&a, head, sizeof(head));
	fwrite(head, 1, (size_t)n, stdout);
	fwrite(a.body, 1, a.bodylen, stdout);
	return fflush(stdout) == 0 ? 0 : 1;
}

/*
 * Reads the configuration from the environment, as a start and
 * --check-config both do.  0, or -1 after a message naming the variable.
 */
static int
provider_config(struct psvc_config *cfg, unsigned *threads)
{
	const char *s;

	memset(cfg, 0, sizeof(*cfg));
	cfg->dir = getenv("IDEM_PROVIDER_DB");
	if (cfg->dir == NULL || *cfg->dir == '\0')
		cfg->dir = IDEM_LOCALSTATEDIR "/lib/idem/provider-service";
	s = getenv("IDEM_PROVIDER_FAIL");
	if (s != NULL && *s != '\0' && psvc_fail_parse(s, &cfg->fail) != 0) {
		fprintf(stderr, "idem-provider: IDEM_PROVIDER_FAIL must be "
		    "none, decline, unavailable, timeout or drop, not "
		    "\"%s\"\n", s);
		return -1;
	}
	if (env_uint("IDEM_PROVIDER_LATENCY_MS", 0, 600000,
	    &cfg->latency_ms) != 0 ||
	    env_uint("IDEM_PROVIDER_HOLD_MS", 30000, 600000,
	    &cfg->hold_ms) != 0 ||
	    env_uint("IDEM_PROVIDER_THREADS", 16, PROVIDER_THREADS_MAX,
	    threads) != 0)
		return -1;
	if (*threads == 0)
		*threads = 1;
	return 0;
}

/*
 * --check-config: the configuration as a start reads it, and the store
 * looked at without creating or writing anything.  0 and what it found
 * on stdout, or 1 after the first error on stderr.
 */
static int
check_config(void)
{
	struct psvc_config cfg;
	char note[128], err[4096 + 128];
	unsigned threads;

	if (provider_config(&cfg, &threads) != 0)
		return 1;
	if (options_check_lmdb("IDEM_PROVIDER_DB", cfg.dir, note,
	    sizeof(note), err, sizeof(err)) != 0) {
		fprintf(stderr, "idem-provider: %s\n", err);
		return 1;
	}
	printf("idem-provider: configuration ok\nstore: %s (%s)\n"
	    "threads: %u\n", cfg.dir, note, threads);
	return fflush(stdout) == 0 ? 0 : 1;
}

static const char usage_text[] =
    "usage: idem-provider\n"
    "       idem-provider --check-config | --help | --version\n"
    "The payment provider service, a FastCGI responder (or, with no FastCGI\n"
    "socket on standard input, one CGI request), configured by\n"
    "IDEM_PROVIDER_* environment variables: see idem-provider(8).\n"
    "  --check-config  validate the configuration and exit (0 ok, 1 not);\n"
    "                  nothing is created or written\n"
    "  --help          this text\n"
    "  --version       the program's name and version\n";

int
main(int argc, char *argv[])
{
	struct psvc_config cfg;
	struct psvc *svc;
	unsigned threads;
	int rc;

	if (options_read(argc, argv, "idem-provider", usage_text) ==
	    OPTIONS_CHECK_CONFIG)
		return check_config();
	if (provider_config(&cfg, &threads) != 0)
		return 1;
	if (crypto_init() != IDEM_OK || FCGX_Init() != 0) {
		fprintf(stderr, "idem-provider: cannot start\n");
		return 1;
	}
	if ((rc = psvc_open(&cfg, &svc)) != IDEM_OK) {
		fprintf(stderr, "idem-provider: store %s: %s\n", cfg.dir,
		    idem_strerror(rc));
		return 1;
	}
	/*
	 * libfcgi catches SIGTERM only to end FCGX_Accept_r after its next
	 * request, which never comes to a thread blocked in accept.  Every
	 * answer is committed before it is sent, so a stop may end the
	 * process at once: the default action, as for SIGINT and SIGHUP.
	 */
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	rc = FCGX_IsCGI() ? serve_cgi(svc) : serve_fcgi(svc, threads);
	psvc_close(svc);
	return rc;
}
