/*
 * main.c: the simulator's command line.
 *
 *   sim run SEED [-v]           one schedule; its trace if it fails (all
 *                               of it with -v)
 *   sim sweep SECONDS [--seed S] [--plant NAME]
 *                               random schedules for a time; each failing
 *                               seed is printed with its trace
 *   sim regress FILE            the seeds listed in FILE (regressions)
 *                               for this binary's store ("SEED sim" or
 *                               "SEED lmdb" lines)
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
#include "glue.h"
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

/* Runs one seed; prints its failure and trace.  1 if it failed. */
static int
one(uint64_t seed, int verbose, struct tally *t)
{
	uint64_t steps;
	int failed;

	failed = sim_run(seed, verbose, &steps);
	t->seeds++;
	t->steps += steps;
	t->faults += W.faults;
	if (!failed)
		return 0;
	t->failed++;
	printf("sim: seed %" PRIu64 " FAILED: %s\n", seed, W.failure);
	if (!verbose)
		trace_print(stdout, 200);
	printf("sim: reproduce with tests/sim/run %" PRIu64 "\n", seed);
	fflush(stdout);
	return 1;
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
	fprintf(stdout, "usage: sim run SEED [-v]\n"
	    "       sim sweep SECONDS [--seed S] [--plant NAME]\n"
	    "       sim regress FILE\n");
	return 2;
}

static int
sweep(double secs, uint64_t base, const char *plant)
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
		if (one(seed, 0, &t) && plant != NULL)
			break;
	}
	if (plant != NULL) {
		struct tally r = t;

		if (t.failed > 0)
			printf("sim: planted bug %s caught after %" PRIu64
			    " seeds, %.1f s\n", plant, t.seeds,
			    seconds() - t.start);
		else
			printf("sim: planted bug %s NOT caught in %.0f s\n",
			    plant, secs);
		/* Catching the planted bug is what passes here. */
		r.seeds = 1;
		r.failed = t.failed > 0 ? 0 : 1;
		printf("sim: seeds %" PRIu64 ", steps %" PRIu64 ", faults %"
		    PRIu64 "\n", t.seeds, t.steps, t.faults);
		printf("sim: %" PRIu64 " passed, %" PRIu64 " failed\n",
		    r.seeds - r.failed, r.failed);
		return r.failed ? 1 : 0;
	}
	summary(&t);
	return t.failed ? 1 : 0;
}

static int
regress(const char *path)
{
	struct tally t = { 0, 0, 0, 0, seconds() };
	char line[256], *end;
	uint64_t seed;
	FILE *f;

	if ((f = fopen(path, "r")) == NULL) {
		printf("sim: cannot open %s\n", path);
		return 2;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		if (line[0] < '0' || line[0] > '9')
			continue;
		seed = strtoull(line, &end, 10);
		/* "SEED BACKEND ...": a seed names a schedule on one backend. */
		while (*end == ' ' || *end == '\t')
			end++;
		if (strncmp(end, backend_name(), strlen(backend_name())) != 0)
			continue;
		(void)one(seed, 0, &t);
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

		verbose = argc >= 4 && strcmp(argv[3], "-v") == 0;
		rc = one(strtoull(argv[2], NULL, 10), verbose, &t);
		if (!rc)
			printf("sim: seed %s passed (%" PRIu64 " steps, %"
			    PRIu64 " faults)\n", argv[2], t.steps, t.faults);
		return rc;
	}
	if (argc >= 3 && strcmp(argv[1], "sweep") == 0) {
		base = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
		for (i = 3; i + 1 < argc; i += 2) {
			if (strcmp(argv[i], "--seed") == 0)
				base = strtoull(argv[i + 1], NULL, 10);
			else if (strcmp(argv[i], "--plant") == 0)
				plant = argv[i + 1];
			else
				return usage();
		}
		return sweep(strtod(argv[2], NULL), base, plant);
	}
	if (argc == 3 && strcmp(argv[1], "regress") == 0)
		return regress(argv[2]);
	return usage();
}
