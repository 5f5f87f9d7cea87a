/* SPDX-License-Identifier: MIT */
/*
 * metrics_proc.c: the process_* metrics every Prometheus client library
 * exports (client_golang's process collector names them), read from
 * procfs for the process that answers the scrape.
 *
 * Each worker is its own process, so these describe the worker that
 * answered this scrape, not the service; Prometheus tells scrapes apart
 * by target, and a deployment of several workers behind one address
 * sees each in turn.  A file that cannot be read or does not parse
 * leaves its metrics out of the answer rather than showing a 0 that
 * would read as a measurement.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "idem.h"
#include "metrics.h"

/* /proc/self/stat is one line of about 300 bytes. */
#define PROC_STAT_MAX 1024

/* Fields of /proc/self/stat (proc(5)), counted from 1. */
#define PROC_STAT_UTIME 14
#define PROC_STAT_STIME 15
#define PROC_STAT_STARTTIME 22
#define PROC_STAT_VSIZE 23
#define PROC_STAT_RSS 24

/*
 * Reads the file proc/name into buf (NUL-terminated, at most len - 1
 * bytes).  Returns the bytes read, or -1.
 */
static ssize_t
proc_read(const char *proc, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n, got = 0;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", proc, name) >=
	    (int)sizeof(path))
		return -1;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	while ((size_t)got < len - 1) {
		n = read(fd, buf + got, len - 1 - (size_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	close(fd);
	buf[got] = '\0';
	return got;
}

/*
 * The numeric fields of /proc/self/stat, v[4] to v[nv - 1] (v[0] to v[3]
 * are left 0): the second field (the command's name in parentheses) may
 * hold spaces and parentheses itself, so parsing starts after its last
 * ')', and the third is a letter.  0, or -1 when the line is not of
 * that form.
 */
static int
proc_stat_fields(const char *line, unsigned long long *v, size_t nv)
{
	const char *p = strrchr(line, ')');
	char *end;
	size_t i;

	if (p == NULL || p[1] != ' ')
		return -1;
	for (p += 2; *p != '\0' && *p != ' '; p++)
		continue;
	memset(v, 0, 4 * sizeof(*v));
	for (i = 4; i < nv; i++) {
		while (*p == ' ')
			p++;
		errno = 0;
		v[i] = strtoull(p, &end, 10);
		if (end == p || errno != 0)
			return -1;
		p = end;
	}
	return 0;
}

/* The boot time in seconds since the epoch, from proc/stat; 0 or -1. */
static int
proc_btime(const char *proc, unsigned long long *btime)
{
	char *buf, *p;
	size_t len = 1 << 16;
	int rc = -1;

	if ((buf = malloc(len)) == NULL)
		return -1;
	if (proc_read(proc, "stat", buf, len) > 0 &&
	    (p = strstr(buf, "\nbtime ")) != NULL &&
	    sscanf(p + 7, "%llu", btime) == 1)
		rc = 0;
	free(buf);
	return rc;
}

/* Open descriptors: the entries of proc/self/fd but the one reading it. */
static int
proc_open_fds(const char *proc, unsigned long long *count)
{
	char path[PATH_MAX], self[32];
	struct dirent *e;
	DIR *d;

	if (snprintf(path, sizeof(path), "%s/self/fd", proc) >=
	    (int)sizeof(path) || (d = opendir(path)) == NULL)
		return -1;
	snprintf(self, sizeof(self), "%d", dirfd(d));
	*count = 0;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' && strcmp(e->d_name, self) != 0)
			(*count)++;
	closedir(d);
	return 0;
}

/* Appends a value in ticks of hz as exact decimal seconds. */
static int
proc_put_ticks(struct buf *out, const char *name, unsigned long long base,
    unsigned long long ticks, unsigned long long hz)
{
	return buf_printf(out, "%s %llu.%06llu\n", name, base + ticks / hz,
	    (ticks % hz) * 1000000 / hz);
}

static int
proc_head(struct buf *out, const char *name, const char *type,
    const char *help)
{
	return buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help,
	    name, type);
}

int
metrics_render_process(struct buf *out, const char *proc)
{
	unsigned long long v[PROC_STAT_RSS + 1], btime, fds;
	char line[PROC_STAT_MAX];
	long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	int stat_ok, rc = IDEM_OK;
	struct rlimit rl;

	stat_ok = hz > 0 && page > 0 &&
	    proc_read(proc, "self/stat", line, sizeof(line)) > 0 &&
	    proc_stat_fields(line, v, sizeof(v) / sizeof(v[0])) == 0;
	if (stat_ok) {
		rc = proc_head(out, "process_cpu_seconds_total", "counter",
		    "Total user and system CPU time spent in seconds.");
		if (rc == IDEM_OK)
			rc = proc_put_ticks(out, "process_cpu_seconds_total", 0,
			    v[PROC_STAT_UTIME] + v[PROC_STAT_STIME],
			    (unsigned long long)hz);
		if (rc == IDEM_OK)
			rc = proc_head(out, "process_resident_memory_bytes",
			    "gauge", "Resident memory size in bytes.");
		if (rc == IDEM_OK)
			rc = buf_printf(out, "process_resident_memory_bytes "
			    "%llu\n", v[PROC_STAT_RSS] *
			    (unsigned long long)page);
		if (rc == IDEM_OK)
			rc = proc_head(out, "process_virtual_memory_bytes",
			    "gauge", "Virtual memory size in bytes.");
		if (rc == IDEM_OK)
			rc = buf_printf(out, "process_virtual_memory_bytes "
			    "%llu\n", v[PROC_STAT_VSIZE]);
	}
	if (rc == IDEM_OK && stat_ok && proc_btime(proc, &btime) == 0) {
		rc = proc_head(out, "process_start_time_seconds", "gauge",
		    "Start time of the process since unix epoch in seconds.");
		if (rc == IDEM_OK)
			rc = proc_put_ticks(out, "process_start_time_seconds",
			    btime, v[PROC_STAT_STARTTIME],
			    (unsigned long long)hz);
	}
	if (rc == IDEM_OK && proc_open_fds(proc, &fds) == 0) {
		rc = proc_head(out, "process_open_fds", "gauge",
		    "Number of open file descriptors.");
		if (rc == IDEM_OK)
			rc = buf_printf(out, "process_open_fds %llu\n", fds);
	}
	if (rc == IDEM_OK && getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY) {
		rc = proc_head(out, "process_max_fds", "gauge",
		    "Maximum number of open file descriptors.");
		if (rc == IDEM_OK)
			rc = buf_printf(out, "process_max_fds %llu\n",
			    (unsigned long long)rl.rlim_cur);
	}
	return rc;
}
