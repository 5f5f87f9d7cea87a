/* SPDX-License-Identifier: MIT */
/*
 * fault.c: fault points and the injectable clock.
 *
 * The crash and concurrency tests need a worker to die, or to hold still,
 * at an exact line: between the claim and the provider call, between the
 * provider call and the completion, and so on.  A fault point names such
 * a line; IDEM_FAULT, read at each point, says what happens there.  All
 * of it is compiled only into test builds (./configure
 * --enable-fault-points), so a production binary cannot be made to die
 * or to lie about the time by its environment.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fault.h"

static uint64_t
clock_real_ms(void)
{
	struct timespec ts;

	/*
	 * CLOCK_REALTIME because expiry times are stored and compared across
	 * processes and restarts; a monotonic clock means nothing to another
	 * boot.
	 */
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#ifdef IDEM_FAULT_POINTS

/*
 * Blocks until the test opens the fifo for writing, then until it closes
 * its end (EOF): the test decides when this process may go on.
 */
static void
fault_wait(const char *path)
{
	char scratch[64];
	ssize_t n;
	int fd;

	while ((fd = open(path, O_RDONLY)) == -1 && errno == EINTR)
		continue;
	if (fd == -1) {
		fprintf(stderr, "fault: open %s: %s\n", path, strerror(errno));
		return;
	}
	for (;;) {
		n = read(fd, scratch, sizeof(scratch));
		if (n > 0 || (n == -1 && errno == EINTR))
			continue;
		break;
	}
	close(fd);
}

/*
 * Milliseconds that jump= actions have added to this process's clock: a
 * stall (a write lock held long, a stopped process) stood in for without
 * waiting.
 */
static uint64_t fault_clock_skew;

/*
 * Acts on one "action" of a "point:action" entry that named this point:
 * kill, killonce=MARKER, wait=FIFO, jump=MS (the clock moves MS ahead),
 * or fail (returns 1: the caller fails as if the store were full).
 */
static int
fault_path(const char *p, size_t len, char *out, size_t outlen)
{
	if (len >= outlen) {
		fprintf(stderr, "fault: path too long\n");
		return -1;
	}
	memcpy(out, p, len);
	out[len] = '\0';
	return 0;
}

static void
fault_jump(const char *ms, size_t len)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < len && i < 15; i++) {
		if (ms[i] < '0' || ms[i] > '9')
			break;
		v = v * 10 + (uint64_t)(ms[i] - '0');
	}
	if (i == 0 || i != len) {
		fprintf(stderr, "fault: jump wants milliseconds, 1 to 15 "
		    "digits\n");
		return;
	}
	__atomic_add_fetch(&fault_clock_skew, v, __ATOMIC_SEQ_CST);
}

static int
fault_act(const char *action, size_t len)
{
	char path[4096];
	int fd;

	if (len == 4 && strncmp(action, "fail", 4) == 0)
		return 1;
	if (len == 4 && strncmp(action, "kill", 4) == 0) {
		/*
		 * SIGKILL, not exit or abort: no stdio flush, no atexit, no
		 * core, exactly what kill -9 from outside would leave behind.
		 */
		raise(SIGKILL);
		return 0;
	}
	if (len > 9 && strncmp(action, "killonce=", 9) == 0) {
		/*
		 * Dies only in the first process to get here: the marker file
		 * is created exclusively, so among many workers sharing one
		 * environment exactly one dies and the retry goes through.
		 */
		if (fault_path(action + 9, len - 9, path, sizeof(path)) == 0 &&
		    (fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600)) != -1) {
			close(fd);
			raise(SIGKILL);
		}
		return 0;
	}
	if (len > 5 && strncmp(action, "wait=", 5) == 0) {
		if (fault_path(action + 5, len - 5, path, sizeof(path)) == 0)
			fault_wait(path);
		return 0;
	}
	if (len > 5 && strncmp(action, "jump=", 5) == 0) {
		fault_jump(action + 5, len - 5);
		return 0;
	}
	fprintf(stderr, "fault: unknown action \"%.*s\"\n", (int)len, action);
	return 0;
}

/*
 * Whether the point of an entry, the len bytes at p, is name, or (sub
 * not NULL) name.sub.
 */
static int
fault_names(const char *p, size_t len, const char *name, const char *sub)
{
	size_t namelen = strlen(name);

	if (len < namelen || strncmp(p, name, namelen) != 0)
		return 0;
	if (len == namelen)
		return 1;
	return sub != NULL && p[namelen] == '.' &&
	    len - namelen - 1 == strlen(sub) &&
	    strncmp(p + namelen + 1, sub, len - namelen - 1) == 0;
}

/*
 * IDEM_FAULT is a comma-separated list of "point:action" entries; every
 * entry that names this point is acted on, in order.
 */
int
fault_point_in(const char *name, const char *sub)
{
	const char *spec, *entry, *end, *colon;
	int fail = 0;

	if ((spec = getenv("IDEM_FAULT")) == NULL || *spec == '\0')
		return 0;
	for (entry = spec; *entry != '\0'; entry = *end ? end + 1 : end) {
		if ((end = strchr(entry, ',')) == NULL)
			end = entry + strlen(entry);
		colon = memchr(entry, ':', (size_t)(end - entry));
		if (colon == NULL ||
		    !fault_names(entry, (size_t)(colon - entry), name, sub))
			continue;
		fail |= fault_act(colon + 1, (size_t)(end - colon - 1));
	}
	return fail;
}

int
fault_point(const char *name)
{
	return fault_point_in(name, NULL);
}

/*
 * IDEM_TEST_NOW_MS pins the clock so that the fixture tests can step
 * over leases and expiries without sleeping.  A value that is not a
 * plain decimal number is ignored rather than read as 0.  jump= actions
 * move either clock ahead.
 */
uint64_t
clock_now_ms(void)
{
	const char *s = getenv("IDEM_TEST_NOW_MS");
	uint64_t skew = __atomic_load_n(&fault_clock_skew, __ATOMIC_SEQ_CST);
	unsigned long long v;
	char *end;

	if (s != NULL && *s >= '0' && *s <= '9') {
		errno = 0;
		v = strtoull(s, &end, 10);
		if (errno == 0 && *end == '\0')
			return (uint64_t)v + skew;
	}
	return clock_real_ms() + skew;
}

#else /* !IDEM_FAULT_POINTS */

int
fault_point(const char *name)
{
	(void)name;
	return 0;
}

int
fault_point_in(const char *name, const char *sub)
{
	(void)name;
	(void)sub;
	return 0;
}

uint64_t
clock_now_ms(void)
{
	return clock_real_ms();
}

#endif
