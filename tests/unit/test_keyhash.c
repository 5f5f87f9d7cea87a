/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the keyhash: how logs and idemctl name an idempotency
 * key without revealing it.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crypto.h"
#include "err.h"
#include "harness.h"
#include "keyhash.h"

static char dir[256];

static int
suite_init(void)
{
	return crypto_init() == IDEM_OK ? 0 : -1;
}

static void
up(void)
{
	harness_mkdtemp(dir, sizeof(dir));
}

static void
down(void)
{
	harness_rmdir(dir);
}

/* The secret is made once, 0600, and read back the same afterwards. */
static void
test_secret_made_once(void)
{
	uint8_t a[KEYHASH_SECRET_SIZE], b[KEYHASH_SECRET_SIZE];
	char err[256], path[512];
	struct stat st;

	HARNESS_EQ(keyhash_secret_load(dir, 0, a, err, sizeof(err)), -1);
	CU_ASSERT(strstr(err, KEYHASH_FILE) != NULL);
	HARNESS_EQ(keyhash_secret_load(dir, 1, a, err, sizeof(err)), 0);
	HARNESS_EQ(keyhash_secret_load(dir, 0, b, err, sizeof(err)), 0);
	CU_ASSERT(memcmp(a, b, sizeof(a)) == 0);
	snprintf(path, sizeof(path), "%s/%s", dir, KEYHASH_FILE);
	HARNESS_EQ(stat(path, &st), 0);
	HARNESS_EQ(st.st_mode & 0777, 0600);
	HARNESS_EQ(st.st_size, KEYHASH_SECRET_SIZE);
}

/*
 * Workers start together and race to make the secret: every one of them
 * must end with the same secret, or their log lines would disagree.
 */
static void
test_secret_race(void)
{
	uint8_t mine[KEYHASH_SECRET_SIZE], theirs[KEYHASH_SECRET_SIZE];
	char err[256];
	int fds[8][2], i, status;
	pid_t pids[8];

	for (i = 0; i < 8; i++) {
		CU_ASSERT_FATAL(pipe(fds[i]) == 0);
		if ((pids[i] = fork()) == 0) {
			close(fds[i][0]);
			if (keyhash_secret_load(dir, 1, mine, err,
			    sizeof(err)) != 0 ||
			    write(fds[i][1], mine, sizeof(mine)) !=
			    (ssize_t)sizeof(mine))
				_exit(1);
			_exit(0);
		}
		close(fds[i][1]);
	}
	for (i = 0; i < 8; i++) {
		HARNESS_EQ(read(fds[i][0], theirs, sizeof(theirs)),
		    sizeof(theirs));
		close(fds[i][0]);
		HARNESS_EQ(waitpid(pids[i], &status, 0), pids[i]);
		CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		HARNESS_EQ(keyhash_secret_load(dir, 0, mine, err,
		    sizeof(err)), 0);
		CU_ASSERT(memcmp(mine, theirs, sizeof(mine)) == 0);
	}
}

/*
 * The name covers scope and key, depends on the secret, and is not a
 * plain hash of the key that anyone could compute from a guess.
 */
static void
test_keyhash_keyed(void)
{
	uint8_t s1[KEYHASH_SECRET_SIZE], s2[KEYHASH_SECRET_SIZE];
	uint8_t d[CRYPTO_SHA256_SIZE];
	struct keyhash k1, k2;
	char a[KEYHASH_HEX + 1], b[KEYHASH_HEX + 1], plain[65];
	size_t i;

	memset(s1, 1, sizeof(s1));
	memset(s2, 2, sizeof(s2));
	keyhash_init(&k1, s1);
	keyhash_init(&k2, s2);
	keyhash_compute(&k1, "acct_alice", "order-1001", a);
	/* HMAC-SHA-256 (RFC 2104) of "acct_alice NUL order-1001", cut. */
	CU_ASSERT_STRING_EQUAL(a, "5a8109fdd4e0431c7e930e2ea61c0b02");
	HARNESS_EQ(strlen(a), KEYHASH_HEX);
	for (i = 0; i < KEYHASH_HEX; i++)
		CU_ASSERT(strchr("0123456789abcdef", a[i]) != NULL);
	keyhash_compute(&k1, "acct_alice", "order-1001", b);
	CU_ASSERT_STRING_EQUAL(a, b);
	keyhash_compute(&k1, "acct_bob", "order-1001", b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
	keyhash_compute(&k2, "acct_alice", "order-1001", b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
	/* "scope NUL key": no two (scope, key) pairs share an input. */
	keyhash_compute(&k1, "acct_alic", "eorder-1001", b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
	crypto_sha256("order-1001", 10, d);
	crypto_hex(d, sizeof(d), plain);
	CU_ASSERT(strncmp(a, plain, 12) != 0);
}

int
harness_suites(void)
{
	CU_pSuite s;

	s = CU_add_suite_with_setup_and_teardown("keyhash", suite_init, NULL,
	    up, down);
	if (s == NULL ||
	    CU_add_test(s, "secret made once, 0600", test_secret_made_once) ==
	    NULL ||
	    CU_add_test(s, "workers racing share one secret",
	    test_secret_race) == NULL ||
	    CU_add_test(s, "keyhash keyed over scope and key",
	    test_keyhash_keyed) == NULL)
		return -1;
	return 0;
}
