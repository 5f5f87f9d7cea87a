/* SPDX-License-Identifier: MIT */
/*
 * main.c: the simulator's command line.
 *
 *   sim run SEED [sim|lmdb] [-v]
 *                               one schedule, on one store or both; its
 *                               trace if it fails (all of it with -v)
 *   sim sweep SECONDS [--seed S] [--store sim|lmdb|both] [--plant NAME]
 *                               random schedules for a time; each failing
 *                               seed is printed with its trace
 *   sim regress FILE            the seeds listed in FILE (regressions)
 *                               ("SEED sim", "SEED lmdb" or "SEED" lines)
 *
 * The closing line of sweep and regress is "sim: N passed, N failed"
 * (schedules), after a summary of seeds, steps, faults and seeds/s.  With
 * --plant NAME the binary must have been built with that planted bug;
 * the sweep then stops at the first failure and passes if there was one.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crypto.h"
#include "problem.h"
#include "sim.h"

#if defined(__SANITIZE_ADDRESS__)
#define SIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SIM_ASAN 1
#endif
#endif

#ifdef SIM_ASAN
/*
 * A crashed worker's requests stop where they stand and never free what
 * they allocated (a killed process frees nothing either), so every crash
 * "leaks" by design; LeakSanitizer would report each one.  Every other
 * check of AddressSanitizer stays on.
 */
const char *__asan_default_options(void);
const char *
__asan_default_options(void)
{
	return "detect_leaks=0";
}
#endif

/* The planted bug this binary was built with, if any. */
static const char *
planted(void)
{
#if defined(IDEM_PLANT_LATE_TTL)
	return "late-ttl";
#elif defined(IDEM_PLANT_RANDOM_PROVIDER_KEY)
	return "random-provider-key";
#elif defined(IDEM_PLANT_REFUND_UNCHECKED)
	return "refund-unchecked";
#elif defined(IDEM_PLANT_RESUME_RELEASES)
	return "resume-releases";
#elif defined(IDEM_PLANT_BATCH_READERS)
	return "batch-readers";
#else
	return NULL;
#endif
}

static double
seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct tally {
	uint64_t seeds, failed, steps, faults;
	double start;
};

/* Which stores each seed runs on: bit 0 the simulation store, 1 LMDB. */
#define ON_SIM 1
#define ON_LMDB 2

static const char *const store_names[] = { "sim", "lmdb" };

/* Runs one seed on the stores in `on`; prints a failure and its trace. */
static int
one(uint64_t seed, int on, int verbose, struct tally *t)
{
	uint64_t steps;
	int b, failed = 0;

	for (b = 0; b < 2 && !failed; b++) {
		if (!(on & (1 << b)))
			continue;
		failed = sim_run(seed, (enum sim_backend)b, verbose, &steps);
		t->steps += steps;
		t->faults += W.faults;
		if (!failed)
			continue;
		printf("sim: seed %" PRIu64 " on the %s store FAILED: %s\n",
		    seed, store_names[b], W.failure);
		if (!verbose)
			trace_print(stdout, 200);
		printf("sim: reproduce with tests/sim/run %" PRIu64 " %s\n",
		    seed, store_names[b]);
		fflush(stdout);
	}
	t->seeds++;
	t->failed += failed;
	return failed;
}

static void
summary(const struct tally *t)
{
	double el = seconds() - t->start;

	if (el <= 0)
		el = 1e-9;
	printf("sim: seeds %" PRIu64 ", steps %" PRIu64 ", faults %" PRIu64
	    ", %.1f seeds/s, %.0f steps/s, %.1f s\n", t->seeds, t->steps,
	    t->faults, (double)t->seeds / el, (double)t->steps / el, el);
	printf("sim: %" PRIu64 " passed, %" PRIu64 " failed\n",
	    t->seeds - t->failed, t->failed);
}

static int
usage(void)
{
	fprintf(stdout, "usage: sim run SEED [sim|lmdb] [-v]\n"
	    "       sim sweep SECONDS [--seed S] [--store sim|lmdb|both] "
	    "[--plant NAME]\n"
	    "       sim regress FILE\n");
	return 2;
}

static int
store_parse(const char *s)
{
	if (strcmp(s, "sim") == 0)
		return ON_SIM;
	if (strcmp(s, "lmdb") == 0)
		return ON_LMDB;
	if (strcmp(s, "both") == 0)
		return ON_SIM | ON_LMDB;
	return 0;
}

static int
sweep(double secs, uint64_t base, int on, const char *plant)
{
	struct tally t = { 0, 0, 0, 0, seconds() };
	uint64_t seed;

	if (plant != NULL && (planted() == NULL ||
	    strcmp(plant, planted()) != 0)) {
		printf("sim: this binary was not built with the planted bug "
		    "\"%s\"\n", plant);
		return 2;
	}
	printf("sim: sweep of %.0f s from seed %" PRIu64 "%s%s\n", secs, base,
	    plant ? ", planted bug " : "", plant ? plant : "");
	fflush(stdout);
	while (seconds() - t.start < secs) {
		seed = prng_splitmix(&base);
		if (one(seed, on, 0, &t) && plant != NULL)
			break;
	}
	if (plant != NULL) {
		if (t.failed > 0)
			printf("sim: planted bug %s caught after %" PRIu64
			    " seeds, %.1f s\n", plant, t.seeds,
			    seconds() - t.start);
		else
			printf("sim: planted bug %s NOT caught in %.0f s\n",
			    plant, secs);
		printf("sim: seeds %" PRIu64 ", steps %" PRIu64 ", faults %"
		    PRIu64 "\n", t.seeds, t.steps, t.faults);
		/* Catching the planted bug is what passes here. */
		printf("sim: %d passed, %d failed\n", t.failed > 0,
		    t.failed == 0);
		return t.failed > 0 ? 0 : 1;
	}
	summary(&t);
	return t.failed ? 1 : 0;
}

/* Lines "SEED [sim|lmdb] ...": the seed on that store, or on both. */
static int
regress(const char *path)
{
	struct tally t = { 0, 0, 0, 0, seconds() };
	char line[256], *end, word[8];
	uint64_t seed;
	int on;
	FILE *f;

	if ((f = fopen(path, "r")) == NULL) {
		printf("sim: cannot open %s\n", path);
		return 2;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		if (line[0] < '0' || line[0] > '9')
			continue;
		seed = strtoull(line, &end, 10);
		on = sscanf(end, "%7s", word) == 1 ? store_parse(word) : 0;
		(void)one(seed, on != 0 ? on : ON_SIM | ON_LMDB, 0, &t);
	}
	fclose(f);
	summary(&t);
	return t.failed ? 1 : 0;
}

int
main(int argc, char **argv)
{
	const char *plant = NULL;
	uint64_t base;
	FILE *quiet;
	int i, verbose = 0, rc;

	/*
	 * The application logs one line per request on stderr; the
	 * simulator's own output goes to stdout.  Sanitizer reports write to
	 * file descriptor 2 directly and still show.
	 */
	if ((quiet = fopen("/dev/null", "w")) != NULL)
		stderr = quiet;
	setvbuf(stdout, NULL, _IOLBF, 0);
	sim_random_install();
	if (crypto_init() != 0)
		return 1;
	problem_set_base("/problems/");
	if (argc >= 3 && strcmp(argv[1], "run") == 0) {
		struct tally t = { 0, 0, 0, 0, seconds() };
		int on = ON_SIM | ON_LMDB;

		for (i = 3; i < argc; i++) {
			if (strcmp(argv[i], "-v") == 0)
				verbose = 1;
			else if ((on = store_parse(argv[i])) == 0)
				return usage();
		}
		rc = one(strtoull(argv[2], NULL, 10), on, verbose, &t);
		if (!rc)
			printf("sim: seed %s passed (%" PRIu64 " steps, %"
			    PRIu64 " faults)\n", argv[2], t.steps, t.faults);
		return rc;
	}
	if (argc >= 3 && strcmp(argv[1], "sweep") == 0) {
		int on = ON_SIM | ON_LMDB;

		base = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
		for (i = 3; i + 1 < argc; i += 2) {
			if (strcmp(argv[i], "--seed") == 0)
				base = strtoull(argv[i + 1], NULL, 10);
			else if (strcmp(argv[i], "--plant") == 0)
				plant = argv[i + 1];
			else if (strcmp(argv[i], "--store") == 0 &&
			    (on = store_parse(argv[i + 1])) != 0)
				continue;
			else
				return usage();
		}
		return sweep(strtod(argv[2], NULL), base, on, plant);
	}
	if (argc == 3 && strcmp(argv[1], "regress") == 0)
		return regress(argv[2]);
	return usage();
}
