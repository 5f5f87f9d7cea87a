/*
 * sha256_bench: what SHA-256 costs, on libsodium's code and on the
 * project's two compression functions (crypto.c, sha256.c).
 *
 *   sha256_bench [-n ROUNDS]
 *
 * Prints one JSON line per implementation: nanoseconds per 64-byte block
 * over a 16 KiB message, per SHA-256 of a 100-byte message (two blocks
 * with the padding, like a request's fingerprint), and per HMAC-SHA-256
 * of a 40-byte message under a prepared key (two blocks, like a keyhash).
 * Each figure is the best of ROUNDS (default 20) timed runs, so that
 * other work on the machine moves it little.  Under valgrind, whose
 * processor has no SHA extensions, the "shani" line is missing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "crypto.h"
#include "err.h"

#define LONG_LEN 16384
#define SHORT_LEN 100
#define MAC_LEN 40

enum impl { SODIUM, PORTABLE, SHANI };

static uint8_t msg[LONG_LEN];
/* Keeps the results alive, so that no call is optimised away. */
static volatile uint8_t sink;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Runs one operation reps times; returns nanoseconds per operation. */
static double
run(enum impl impl, int what, long reps)
{
	static const uint8_t key[32] = { 1, 2, 3 };
	uint8_t d[CRYPTO_SHA256_SIZE];
	crypto_auth_hmacsha256_state st, prepared;
	struct crypto_hmac h;
	struct crypto_part part = { msg, MAC_LEN };
	size_t len = what == 0 ? LONG_LEN : SHORT_LEN;
	double t0;
	long i;

	crypto_hmac_init(&h, key, sizeof(key));
	crypto_auth_hmacsha256_init(&prepared, key, sizeof(key));
	t0 = now();
	for (i = 0; i < reps; i++) {
		msg[0] = (uint8_t)i;
		if (what < 2 && impl == SODIUM)
			crypto_hash_sha256(d, msg, len);
		else if (what < 2)
			crypto_sha256(msg, len, d);
		else if (impl == SODIUM) {
			st = prepared;
			crypto_auth_hmacsha256_update(&st, msg, MAC_LEN);
			crypto_auth_hmacsha256_final(&st, d);
		} else
			crypto_hmac_sha256(&h, &part, 1, d);
		sink ^= d[0];
	}
	return (now() - t0) / (double)reps;
}

static double
best(enum impl impl, int what, long reps, int rounds)
{
	double b = 0, t;
	int r;

	for (r = 0; r < rounds; r++) {
		t = run(impl, what, reps);
		if (r == 0 || t < b)
			b = t;
	}
	return b;
}

int
main(int argc, char **argv)
{
	static const char *const names[] = { "libsodium", "portable",
	    "shani" };
	int rounds = 20, opt, impl, shani;

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt != 'n' || (rounds = atoi(optarg)) < 1) {
			fprintf(stderr, "usage: sha256_bench [-n ROUNDS]\n");
			return 2;
		}
	}
	if (crypto_init() != IDEM_OK) {
		fprintf(stderr, "sha256_bench: crypto_init failed\n");
		return 1;
	}
	memset(msg, 'x', sizeof(msg));
	shani = crypto_sha256_use_portable(0);
	for (impl = SODIUM; impl <= SHANI; impl++) {
		if (impl == SHANI && !shani)
			break;
		crypto_sha256_use_portable(impl != SHANI);
		printf("{\"impl\": \"%s\", \"ns_per_block\": %.1f, "
		    "\"ns_per_sha256_100\": %.1f, \"ns_per_hmac_40\": %.1f}\n",
		    names[impl],
		    best(impl, 0, 20, rounds) / (LONG_LEN / 64),
		    best(impl, 1, 2000, rounds), best(impl, 2, 2000, rounds));
	}
	return 0;
}
