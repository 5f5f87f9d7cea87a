/* SPDX-License-Identifier: MIT */
/*
 * idemctl_run.c: the commands that work through the store in batches,
 * purge and resume: a progress line on stderr when it is a terminal,
 * and SIGINT or SIGTERM ends them after the batch or claim at hand.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "fault.h"
#include "idemctl.h"
#include "metrics.h"
#include "problem.h"
#include "resume.h"
#include "shared.h"

static volatile sig_atomic_t ctl_stop;

static void
ctl_on_signal(int sig)
{
	(void)sig;
	ctl_stop = 1;
}

/*
 * SIGINT and SIGTERM set ctl_stop; system calls restart, so the write
 * at hand finishes and the command stops at its next check.
 */
static void
ctl_catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = ctl_on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

struct ctl_purge_opts {
	size_t batch;
	unsigned long ms;
};

static int
ctl_purge_opt(void *ctx, int ch, const char *arg)
{
	struct ctl_purge_opts *o = ctx;
	long long v;

	if (ch == 'n' && (v = ctl_number(arg, 1000000)) > 0)
		o->batch = (size_t)v;
	else if (ch == 'w' && (strcmp(arg, "0") == 0 ||
	    (v = ctl_number(arg, 1000)) > 0))
		o->ms = strcmp(arg, "0") == 0 ? 0 : (unsigned long)v;
	else
		return -1;
	return 0;
}

/* How many keys a purge deleted, as text or (--json) a JSON object. */
static int
ctl_purge_print(size_t total)
{
	const struct ctl_field f[] = { { "purged", total } };

	return ctl_print_fields(f, 1, ctl_stop);
}

int
ctl_purge(int argc, char *argv[])
{
	struct ctl_purge_opts o = { 1000, 2 };
	struct timespec pause;
	struct store *s;
	size_t n, total = 0;
	int rc, progress = ctl_progress_on();

	if (ctl_options(argc, argv, "n:w:", ctl_purge_opt, &o) != argc)
		ctl_usage();
	pause.tv_sec = (time_t)(o.ms / 1000);
	pause.tv_nsec = (long)(o.ms % 1000) * 1000000L;
	ctl_catch_signals();
	s = ctl_store(0);
	metrics_open(ctl_cfg.db_dir);
	/* Bounded batches keep each write transaction short. */
	do {
		if ((rc = store_purge(s, clock_now_ms(), o.batch, &n)) !=
		    IDEM_OK) {
			fprintf(stderr, "%sidemctl: purge: %s\n",
			    progress && total > 0 ? "\n" : "",
			    idem_strerror(rc));
			store_close(s);
			return CTL_FAIL;
		}
		total += n;
		metrics_add(METRIC_PURGED, n);
		if (progress)
			fprintf(stderr, "\rpurged: %zu", total);
		/*
		 * LMDB's write lock is not fair: taken again at once, it could
		 * shut the responders' commits out for the whole purge.  A
		 * short pause between batches lets them in.
		 */
		if (n == o.batch && o.ms > 0 && !ctl_stop)
			nanosleep(&pause, NULL);
	} while (n == o.batch && !ctl_stop);
	store_close(s);
	if (progress)
		fputs("\n", stderr);
	if (ctl_stop)
		fprintf(stderr, "idemctl: purge: interrupted; the rest waits "
		    "for the next run\n");
	return ctl_purge_print(total);
}

static int
ctl_resume_opt(void *ctx, int ch, const char *arg)
{
	struct pay_resume_opts *o = ctx;
	long long v = 0;

	if (ch == 'a') {
		o->all = 1;
		return 0;
	}
	if ((v = ctl_number(arg, 1000000000)) < 0)
		return -1;
	if (ch == 'n')
		o->batch = (size_t)v;
	else if (ch == 'l')
		o->limit = (size_t)v;
	else
		return -1;
	return 0;
}

static void
ctl_resume_progress(void *ctx, const struct pay_resume_counts *c)
{
	(void)ctx;
	fprintf(stderr, "\rresume: %zu seen, %zu completed, %zu released, "
	    "%zu left, %zu busy", c->seen, c->completed, c->released, c->left,
	    c->busy);
}

/*
 * One line per claim taken over, on stderr (the journal, under the
 * timer), with the key as its keyhash, as the responder logs it.
 */
static void
ctl_resume_ended(void *ctx, const char *scope, const char *key,
    uint32_t attempts, const char *outcome)
{
	char hash[KEYHASH_HEX + 1];
	int *progress = ctx;

	ctl_keyhash(scope, key, hash);
	fprintf(stderr, "%sidemctl: resume: scope=%s key=%s attempts=%u "
	    "outcome=%s\n", *progress ? "\r\033[K" : "", scope, hash,
	    attempts, outcome);
}

/* Opens what the payment code needs: the library handle, the provider. */
static int
ctl_resume_env(struct pay_env *env)
{
	struct idem_options opt;
	struct provider_config pc;
	int rc;

	ctl_need_provider();
	ctl_need_store();
	ctl_need_ledger();
	ctl_idem_options(&opt);
	config_provider(&ctl_cfg, &pc);
	memset(env, 0, sizeof(*env));
	env->cfg = &ctl_cfg;
	/* A stored decline names its problem type as the responder does. */
	problem_set_base(ctl_cfg.problem_base);
	if ((rc = idem_open(&opt, &env->idem)) != IDEM_OK) {
		fprintf(stderr, "idemctl: store %s: %s\n", opt.dir,
		    idem_strerror(rc));
		return -1;
	}
	if ((rc = provider_open(&pc, &env->provider)) != IDEM_OK) {
		fprintf(stderr, "idemctl: provider %s: %s\n", pc.url != NULL ?
		    pc.url : pc.dir, idem_strerror(rc));
		idem_close(env->idem);
		return -1;
	}
	metrics_open(ctl_cfg.db_dir);
	return 0;
}

static int
ctl_resume_print(const struct pay_resume_counts *c)
{
	const struct ctl_field f[] = {
		{ "seen", c->seen }, { "completed", c->completed },
		{ "released", c->released }, { "left", c->left },
		{ "busy", c->busy },
	};

	return ctl_print_fields(f, sizeof(f) / sizeof(f[0]), ctl_stop);
}

int
ctl_resume(int argc, char *argv[])
{
	struct pay_resume_opts o = { 100, 0, 0, &ctl_stop, NULL, NULL,
	    ctl_resume_ended, NULL, NULL, NULL };
	struct pay_resume_counts c;
	struct pay_env env;
	int rc, progress = ctl_progress_on();

	if (ctl_options(argc, argv, "n:l:a", ctl_resume_opt, &o) != argc)
		ctl_usage();
	if (progress)
		o.progress = ctl_resume_progress;
	o.ended_ctx = &progress;
	ctl_catch_signals();
	if (ctl_resume_env(&env) != 0)
		return CTL_FAIL;
	rc = pay_resume_run(&env, &o, &c);
	provider_close(env.provider);
	idem_close(env.idem);
	if (progress && c.seen > 0)
		fputs("\n", stderr);
	if (ctl_stop)
		fprintf(stderr, "idemctl: resume: interrupted; the rest waits "
		    "for the next run\n");
	if (rc != IDEM_OK) {
		fprintf(stderr, "idemctl: resume: %s\n", idem_strerror(rc));
		ctl_resume_print(&c);
		return CTL_FAIL;
	}
	return ctl_resume_print(&c);
}
