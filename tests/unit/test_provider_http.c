/* SPDX-License-Identifier: MIT */
/*
 * test_provider_http.c: the HTTP provider client's reading of answers and
 * its outcome mapping, first on bodies and statuses alone, then over real
 * loopback sockets: a one-shot server thread answers, drops or stays
 * silent, and a closed port stands for the service being down.
 */
#include "config.h"

#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crypto.h"
#include "err.h"
#include "harness.h"
#include "provider.h"
#include "provider_http.h"

#define ID_CH "ch_0123456789abcdef01234567"
#define ID_DC "dc_0123456789abcdef01234567"
#define ID_RF "rf_0123456789abcdef01234567"

static enum provider_outcome
parse(long status, const char *body, int refund, char *id)
{
	struct provider_charge ch;

	HARNESS_EQ(provider_http_parse(status, body, body != NULL ?
	    strlen(body) : 0, refund, &ch), IDEM_OK);
	if (id != NULL)
		snprintf(id, PROVIDER_ID_SIZE, "%s", ch.id);
	return ch.outcome;
}

static void
test_parse_final(void)
{
	char id[PROVIDER_ID_SIZE];

	HARNESS_EQ(parse(201, "{\"amount\":100,\"currency\":\"EUR\",\"id\":\""
	    ID_CH "\",\"status\":\"charged\"}", 0, id), PROVIDER_CHARGED);
	CU_ASSERT_STRING_EQUAL(id, ID_CH);
	HARNESS_EQ(parse(201, "{\"status\":\"refunded\",\"id\":\"" ID_RF
	    "\"}", 1, id), PROVIDER_REFUNDED);
	CU_ASSERT_STRING_EQUAL(id, ID_RF);
	HARNESS_EQ(parse(402, "{\"status\":\"declined\",\"id\":\"" ID_DC
	    "\"}", 0, id), PROVIDER_DECLINED);
	CU_ASSERT_STRING_EQUAL(id, ID_DC);
}

/* Whatever may have charged without a readable answer is unknown. */
static void
test_parse_unknown(void)
{
	char id[PROVIDER_ID_SIZE];
	static const char *const bad201[] = {
		"",
		"not json",
		"[]",
		"{\"status\":\"charged\"}",
		"{\"id\":\"" ID_CH "\"}",
		"{\"status\":\"refunded\",\"id\":\"" ID_CH "\"}",
		"{\"status\":\"charged\",\"id\":\"" ID_RF "\"}",
		"{\"status\":\"charged\",\"id\":\"ch_0123\"}",
		"{\"status\":\"charged\",\"id\":\"ch_0123456789ABCDEF01234567\"}",
		"{\"status\":\"charged\",\"id\":\"ch_0123456789abcdef012345678\"}",
		"{\"status\":\"charged\",\"id\":\"ch_0123456789abcdef0123456\\u0000\"}",
		"{\"status\":\"charged\",\"id\":7}",
		"{\"status\":1,\"id\":\"" ID_CH "\"}",
		"{\"status\":\"charged\",\"id\":\"" ID_CH "\",\"id\":\"" ID_CH
		    "\"}",
		"{\"status\":\"charged\",\"id\":\"" ID_CH "\"",
	};
	size_t i;

	for (i = 0; i < sizeof(bad201) / sizeof(bad201[0]); i++) {
		HARNESS_EQ(parse(201, bad201[i], 0, id), PROVIDER_TIMEOUT);
		CU_ASSERT_STRING_EQUAL(id, "");
	}
	HARNESS_EQ(parse(201, NULL, 0, NULL), PROVIDER_TIMEOUT);
	/* A refund is never declined; a decline with a charge's id is odd. */
	HARNESS_EQ(parse(402, "{\"status\":\"declined\",\"id\":\"" ID_DC
	    "\"}", 1, NULL), PROVIDER_TIMEOUT);
	HARNESS_EQ(parse(402, "{\"status\":\"declined\",\"id\":\"" ID_CH
	    "\"}", 0, NULL), PROVIDER_TIMEOUT);
	/* A good body under a status that does not mean it. */
	HARNESS_EQ(parse(200, "{\"status\":\"charged\",\"id\":\"" ID_CH
	    "\"}", 0, NULL), PROVIDER_TIMEOUT);
	HARNESS_EQ(parse(302, "", 0, NULL), PROVIDER_TIMEOUT);
	HARNESS_EQ(parse(409, "{\"status\":\"in_progress\"}", 0, NULL),
	    PROVIDER_TIMEOUT);
	HARNESS_EQ(parse(500, "", 0, NULL), PROVIDER_TIMEOUT);
	HARNESS_EQ(parse(502, "", 0, NULL), PROVIDER_TIMEOUT);
	HARNESS_EQ(parse(504, "", 0, NULL), PROVIDER_TIMEOUT);
	HARNESS_EQ(parse(0, "", 0, NULL), PROVIDER_TIMEOUT);
}

/* Refusals before anything happened, and a reused key. */
static void
test_parse_refused(void)
{
	HARNESS_EQ(parse(503, "{\"status\":\"unavailable\"}", 0, NULL),
	    PROVIDER_UNAVAILABLE);
	HARNESS_EQ(parse(503, "", 1, NULL), PROVIDER_UNAVAILABLE);
	HARNESS_EQ(parse(400, "", 0, NULL), PROVIDER_UNAVAILABLE);
	HARNESS_EQ(parse(404, "", 0, NULL), PROVIDER_UNAVAILABLE);
	HARNESS_EQ(parse(413, "", 0, NULL), PROVIDER_UNAVAILABLE);
	HARNESS_EQ(parse(422, "{\"status\":\"key_reused\"}", 0, NULL),
	    PROVIDER_KEY_REUSED);
	HARNESS_EQ(parse(422, "", 1, NULL), PROVIDER_KEY_REUSED);
}

static void
test_failed_transfer(void)
{
	HARNESS_EQ(provider_http_failed(0), PROVIDER_UNAVAILABLE);
	HARNESS_EQ(provider_http_failed(1), PROVIDER_TIMEOUT);
}

static void
test_parse_stats(void)
{
	size_t c = 9, d = 9, r = 9;
	static const char *const bad[] = {
		"", "{}", "{\"charges\":1,\"declines\":2}",
		"{\"charges\":-1,\"declines\":2,\"refunds\":3}",
		"{\"charges\":1.5,\"declines\":2,\"refunds\":3}",
		"{\"charges\":01,\"declines\":2,\"refunds\":3}",
		"{\"charges\":\"1\",\"declines\":2,\"refunds\":3}",
		"{\"charges\":1e3,\"declines\":2,\"refunds\":3}",
		"{\"charges\":1234567890123456789,\"declines\":2,\"refunds\":3}",
	};
	const char *ok = "{\"charges\":12,\"declines\":0,\"refunds\":3}";
	size_t i;

	HARNESS_EQ(provider_http_parse_stats(ok, strlen(ok), &c, &d, &r),
	    IDEM_OK);
	HARNESS_EQ(c, 12);
	HARNESS_EQ(d, 0);
	HARNESS_EQ(r, 3);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		HARNESS_EQ(provider_http_parse_stats(bad[i], strlen(bad[i]),
		    &c, &d, &r), IDEM_EINVAL);
	HARNESS_EQ(provider_http_parse_stats(NULL, 0, &c, &d, &r),
	    IDEM_EINVAL);
}

static void
test_open_invalid(void)
{
	struct provider_http *h = NULL;
	char longurl[PROVIDER_HTTP_URL_MAX + 8];

	HARNESS_EQ(provider_http_open(NULL, 0, &h), IDEM_EINVAL);
	HARNESS_EQ(provider_http_open("ftp://127.0.0.1:1", 0, &h),
	    IDEM_EINVAL);
	HARNESS_EQ(provider_http_open("127.0.0.1:1", 0, &h), IDEM_EINVAL);
	memset(longurl, 'a', sizeof(longurl) - 1);
	memcpy(longurl, "http://", 7);
	longurl[sizeof(longurl) - 1] = '\0';
	HARNESS_EQ(provider_http_open(longurl, 0, &h), IDEM_EINVAL);
	CU_ASSERT_PTR_NULL(h);
}

/* ------------------------------------------------ a one-shot server */

enum stub_mode {
	STUB_ANSWER,   /* sends answer, then closes */
	STUB_DROP,     /* reads the request, closes without a byte */
	STUB_SILENT,   /* reads the request, waits until the client leaves */
	STUB_KEEP      /* answers every request on its one connection */
};

struct stub {
	int lfd;
	int port;
	enum stub_mode mode;
	const char *answer;
	char request[4096];
	size_t reqlen;
	int requests;  /* STUB_KEEP: requests answered */
	pthread_t tid;
};

/* Reads one request (headers and a short body) into s->request; 0 at EOF. */
static int
stub_read(struct stub *s, int fd)
{
	ssize_t n;

	s->reqlen = 0;
	s->request[0] = '\0';
	while (s->reqlen < sizeof(s->request) - 1 &&
	    (n = read(fd, s->request + s->reqlen,
	    sizeof(s->request) - 1 - s->reqlen)) > 0) {
		s->reqlen += (size_t)n;
		s->request[s->reqlen] = '\0';
		if (strstr(s->request, "}") != NULL ||
		    (strncmp(s->request, "GET", 3) == 0 &&
		    strstr(s->request, "\r\n\r\n") != NULL))
			return 1;
	}
	return s->reqlen > 0;
}

static void *
stub_run(void *arg)
{
	struct stub *s = arg;
	char c;
	int fd;

	if ((fd = accept(s->lfd, NULL, NULL)) < 0)
		return NULL;
	if (s->mode == STUB_KEEP) {
		while (stub_read(s, fd) &&
		    write(fd, s->answer, strlen(s->answer)) > 0)
			s->requests++;
		close(fd);
		return NULL;
	}
	(void)stub_read(s, fd);
	if (s->mode == STUB_ANSWER)
		(void)!write(fd, s->answer, strlen(s->answer));
	else if (s->mode == STUB_SILENT)
		while (read(fd, &c, 1) > 0)
			;	/* until the client times out and closes */
	close(fd);
	return NULL;
}

static void
stub_start(struct stub *s, enum stub_mode mode, const char *answer)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);

	memset(s, 0, sizeof(*s));
	s->mode = mode;
	s->answer = answer;
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	CU_ASSERT_FATAL(s->lfd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CU_ASSERT_FATAL(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) == 0);
	CU_ASSERT_FATAL(listen(s->lfd, 4) == 0);
	CU_ASSERT_FATAL(getsockname(s->lfd, (struct sockaddr *)&a,
	    &alen) == 0);
	s->port = ntohs(a.sin_port);
	CU_ASSERT_FATAL(pthread_create(&s->tid, NULL, stub_run, s) == 0);
}

static void
stub_join(struct stub *s)
{
	pthread_join(s->tid, NULL);
	close(s->lfd);
}

static enum provider_outcome
call_stub(struct stub *s, unsigned timeout_ms, int refund, char *id)
{
	struct provider_http *h = NULL;
	struct provider_charge ch;
	char url[64];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s->port);
	HARNESS_EQ(provider_http_open(url, timeout_ms, &h), IDEM_OK);
	HARNESS_EQ(provider_http_call(h, refund, "charge:acct:k 1:17", 1234,
	    "EUR", &ch), IDEM_OK);
	provider_http_close(h);
	stub_join(s);
	if (id != NULL)
		snprintf(id, PROVIDER_ID_SIZE, "%s", ch.id);
	return ch.outcome;
}

static void
test_http_charged(void)
{
	struct stub s;
	char id[PROVIDER_ID_SIZE];
	const char *ans = "HTTP/1.1 201 Created\r\nContent-Type: "
	    "application/json\r\nContent-Length: 55\r\nConnection: close\r\n"
	    "\r\n{\"status\":\"charged\",\"id\":\"" ID_CH "\"}";

	stub_start(&s, STUB_ANSWER, ans);
	HARNESS_EQ(call_stub(&s, 2000, 0, id), PROVIDER_CHARGED);
	CU_ASSERT_STRING_EQUAL(id, ID_CH);
	/* What the service was sent: the path, the key, the body. */
	CU_ASSERT_PTR_NOT_NULL(strstr(s.request, "POST /charges HTTP/1.1"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s.request,
	    "Idempotency-Key: charge:acct:k 1:17\r\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s.request,
	    "{\"amount\":1234,\"currency\":\"EUR\"}"));
}

static void
test_http_unavailable(void)
{
	struct stub s;
	const char *ans = "HTTP/1.1 503 Service Unavailable\r\n"
	    "Content-Length: 0\r\nConnection: close\r\n\r\n";

	stub_start(&s, STUB_ANSWER, ans);
	HARNESS_EQ(call_stub(&s, 2000, 1, NULL), PROVIDER_UNAVAILABLE);
	CU_ASSERT_PTR_NOT_NULL(strstr(s.request, "POST /refunds HTTP/1.1"));
}

/* The connection closes after the request went out: unknown. */
static void
test_http_dropped(void)
{
	struct stub s;

	stub_start(&s, STUB_DROP, NULL);
	HARNESS_EQ(call_stub(&s, 2000, 0, NULL), PROVIDER_TIMEOUT);
}

/* No answer within the timeout: unknown. */
static void
test_http_timeout(void)
{
	struct stub s;

	stub_start(&s, STUB_SILENT, NULL);
	HARNESS_EQ(call_stub(&s, 200, 0, NULL), PROVIDER_TIMEOUT);
}

/* An answer past PROVIDER_HTTP_BODY_MAX is not read: unknown. */
static void
test_http_body_too_long(void)
{
	struct stub s;
	char *ans;
	size_t n = PROVIDER_HTTP_BODY_MAX + 100, head;

	ans = malloc(n + 200);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ans);
	head = (size_t)snprintf(ans, 200, "HTTP/1.1 201 Created\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n", n);
	memset(ans + head, ' ', n);
	ans[head + n] = '\0';
	stub_start(&s, STUB_ANSWER, ans);
	HARNESS_EQ(call_stub(&s, 2000, 0, NULL), PROVIDER_TIMEOUT);
	free(ans);
}

/*
 * Calls one after the other reuse one connection: a payment does not pay
 * for a TCP handshake with the provider, nor leave a socket in TIME_WAIT
 * behind it.  The stub accepts one connection only: a second would get
 * no answer, and the call would time out.
 */
static void
test_http_reuse(void)
{
	struct stub s;
	struct provider_http *h = NULL;
	struct provider_charge ch;
	char url[64];
	int i, fl;
	const char *ans = "HTTP/1.1 201 Created\r\nContent-Type: "
	    "application/json\r\nContent-Length: 55\r\n"
	    "\r\n{\"status\":\"charged\",\"id\":\"" ID_CH "\"}";

	stub_start(&s, STUB_KEEP, ans);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", s.port);
	HARNESS_EQ(provider_http_open(url, 2000, &h), IDEM_OK);
	for (i = 0; i < 3; i++) {
		HARNESS_EQ(provider_http_call(h, 0, "charge:acct:k:1", 1234,
		    "EUR", &ch), IDEM_OK);
		HARNESS_EQ(ch.outcome, PROVIDER_CHARGED);
	}
	/* Closing the handle closes the connection: the stub sees EOF. */
	provider_http_close(h);
	pthread_join(s.tid, NULL);
	HARNESS_EQ(s.requests, 3);
	/* And no other connection was made. */
	fl = fcntl(s.lfd, F_GETFL);
	CU_ASSERT_FATAL(fl >= 0 && fcntl(s.lfd, F_SETFL, fl | O_NONBLOCK) == 0);
	CU_ASSERT(accept(s.lfd, NULL, NULL) < 0);
	close(s.lfd);
}

/* Nothing listens: the request never left, nothing can have happened. */
static void
test_http_refused(void)
{
	struct stub s;
	struct provider_http *h = NULL;
	struct provider_charge ch;
	size_t c, d, r;
	char url[64];

	stub_start(&s, STUB_DROP, NULL);
	/* Take the port out of service: connect, let the stub close. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", s.port);
	HARNESS_EQ(provider_http_open(url, 2000, &h), IDEM_OK);
	HARNESS_EQ(provider_http_call(h, 0, "k", 1, "EUR", &ch), IDEM_OK);
	stub_join(&s);
	HARNESS_EQ(provider_http_call(h, 0, "k", 1, "EUR", &ch), IDEM_OK);
	HARNESS_EQ(ch.outcome, PROVIDER_UNAVAILABLE);
	HARNESS_EQ(provider_http_stats(h, &c, &d, &r), IDEM_EIO);
	provider_http_close(h);
}

/* provider.h dispatches to the service when the configuration says so. */
static void
test_provider_dispatch(void)
{
	struct provider_config cfg;
	struct provider *p = NULL;
	struct provider_charge ch;
	struct stub s;
	size_t n, c, d;
	char url[64];
	const char *ans = "HTTP/1.1 200 OK\r\nContent-Length: 38\r\n"
	    "Connection: close\r\n\r\n"
	    "{\"charges\":4,\"declines\":1,\"refunds\":2}";

	stub_start(&s, STUB_ANSWER, ans);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", s.port);
	memset(&cfg, 0, sizeof(cfg));
	cfg.dir = "/nonexistent/never/opened";
	cfg.url = url;
	cfg.timeout_ms = 2000;
	HARNESS_EQ(provider_open(&cfg, &p), IDEM_OK);
	HARNESS_EQ(provider_count(p, &c, &d), IDEM_OK);
	stub_join(&s);
	HARNESS_EQ(c, 4);
	HARNESS_EQ(d, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(s.request, "GET /stats HTTP/1.1"));
	HARNESS_EQ(provider_charges_for(p, "k", &n), IDEM_EINVAL);
	/* Keys that cannot travel in a header are never sent. */
	HARNESS_EQ(provider_charge(p, "a\r\nX: y", 1, "EUR", 0, &ch),
	    IDEM_EINVAL);
	HARNESS_EQ(provider_charge(p, " k", 1, "EUR", 0, &ch), IDEM_EINVAL);
	HARNESS_EQ(provider_charge(p, "k\x7f", 1, "EUR", 0, &ch), IDEM_EINVAL);
	HARNESS_EQ(provider_charge(p, "", 1, "EUR", 0, &ch), IDEM_EINVAL);
	provider_close(p);
}

static int
suite_init(void)
{
	return crypto_init() == IDEM_OK && provider_global_init() == IDEM_OK ?
	    0 : -1;
}

static const struct {
	const char *name;
	CU_TestFunc fn;
} http_tests[] = {
	{ "final answers", test_parse_final },
	{ "unknown outcomes", test_parse_unknown },
	{ "refusals and reused keys", test_parse_refused },
	{ "failed transfers", test_failed_transfer },
	{ "stats", test_parse_stats },
	{ "invalid URLs", test_open_invalid },
	{ "charged over a socket", test_http_charged },
	{ "503 over a socket", test_http_unavailable },
	{ "dropped after the request", test_http_dropped },
	{ "timeout", test_http_timeout },
	{ "answer too long", test_http_body_too_long },
	{ "connection refused", test_http_refused },
	{ "one connection for calls in turn", test_http_reuse },
	{ "provider.h dispatch", test_provider_dispatch },
};

int
harness_suites(void)
{
	CU_pSuite s;
	size_t i;

	s = CU_add_suite("provider_http", suite_init, NULL);
	if (s == NULL)
		return -1;
	for (i = 0; i < sizeof(http_tests) / sizeof(http_tests[0]); i++)
		if (CU_add_test(s, http_tests[i].name, http_tests[i].fn) ==
		    NULL)
			return -1;
	return 0;
}
