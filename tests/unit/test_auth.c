/* SPDX-License-Identifier: MIT */
/*
 * test_auth.c: the keys file, Bearer parsing and principal selection.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "crypto.h"
#include "err.h"
#include "harness.h"

#define BEARER AUTH_MODE_BEARER
#define REMOTE AUTH_MODE_REMOTE_USER

static char dir[4096];
static char path[4200];

static void
setup(void)
{
	harness_mkdtemp(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/keys", dir);
}

static void
teardown(void)
{
	harness_rmdir(dir);
}

/* The hex SHA-256 of secret, as an operator would put in the keys file. */
static void
digest_hex(const char *secret, char out[2 * CRYPTO_SHA256_SIZE + 1])
{
	uint8_t d[CRYPTO_SHA256_SIZE];

	crypto_sha256(secret, strlen(secret), d);
	crypto_hex(d, sizeof(d), out);
}

static void
write_file(const char *text)
{
	FILE *f = fopen(path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

/* Writes a keys file for alice ("sk_alice") and bob ("sk_bob"). */
static struct auth_keys *
load_two(void)
{
	char a[65], b[65], text[512], err[256];
	struct auth_keys *k = NULL;

	digest_hex("sk_alice", a);
	digest_hex("sk_bob", b);
	snprintf(text, sizeof(text),
	    "# account   sha256(secret)\n"
	    "\n"
	    "acct_alice %s\n"
	    "   \t\n"
	    "  # an indented comment\n"
	    "bob@example.com\t \t%s\r\n", a, b);
	write_file(text);
	HARNESS_EQ(auth_keys_load(path, &k, err, sizeof(err)), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(k);
	return k;
}

/* Loads text and expects an error mentioning ":<line>:". */
static void
expect_load_error(const char *text, int line)
{
	struct auth_keys *k = NULL;
	char err[256], want[32];

	write_file(text);
	HARNESS_EQ(auth_keys_load(path, &k, err, sizeof(err)), IDEM_EINVAL);
	CU_ASSERT_PTR_NULL(k);
	snprintf(want, sizeof(want), ":%d:", line);
	if (strstr(err, want) == NULL)
		fprintf(stderr, "  error \"%s\" lacks \"%s\"\n", err, want);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
	auth_keys_free(k);
}

static void
test_load_good(void)
{
	char p[AUTH_PRINCIPAL_MAX + 1];
	struct auth_keys *k = load_two();

	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer sk_alice", p), AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "acct_alice");
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer sk_bob", p), AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "bob@example.com");
	auth_keys_free(k);
}

/* The example in auth.h: sha256("test"), a published test vector. */
static void
test_load_known_vector(void)
{
	char p[AUTH_PRINCIPAL_MAX + 1], err[256];
	struct auth_keys *k = NULL;

	write_file("acct_alice  9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b"
	    "822cd15d6c15b0f00a08\n");
	HARNESS_EQ(auth_keys_load(path, &k, err, sizeof(err)), IDEM_OK);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer test", p), AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "acct_alice");
	auth_keys_free(k);
}

static void
test_load_missing_file(void)
{
	char p[AUTH_PRINCIPAL_MAX + 1], err[256];
	struct auth_keys *k = NULL;

	HARNESS_EQ(auth_keys_load(path, &k, err, sizeof(err)), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(k);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer sk_alice", p),
	    AUTH_INVALID);
	/* remote-user mode does not need the keys file. */
	HARNESS_EQ(auth_principal(k, REMOTE, "alice", NULL, p), AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "alice");
	auth_keys_free(k);
}

static void
test_load_bad_hex(void)
{
	char a[65], text[512];

	digest_hex("x", a);
	/* A 'g' where a hex digit belongs. */
	snprintf(text, sizeof(text), "# keys\n\nacct g%.63s\n", a + 1);
	expect_load_error(text, 3);
	/* 63 digits. */
	snprintf(text, sizeof(text), "acct %.63s\n", a);
	expect_load_error(text, 1);
	/* 65 digits. */
	snprintf(text, sizeof(text), "acct %s0\n", a);
	expect_load_error(text, 1);
	/* No digest at all. */
	expect_load_error("# keys\nacct\n", 2);
}

static void
test_load_bad_name(void)
{
	char a[65], text[512], name[80];

	digest_hex("x", a);
	snprintf(text, sizeof(text), "\nacct!x %s\n", a);
	expect_load_error(text, 2);
	snprintf(text, sizeof(text), "acct/x %s\n", a);
	expect_load_error(text, 1);
	/* 65 characters is one too many. */
	memset(name, 'a', 65);
	name[65] = '\0';
	snprintf(text, sizeof(text), "%s %s\n", name, a);
	expect_load_error(text, 1);
}

static void
test_load_name_limit(void)
{
	char a[65], text[512], name[80], p[AUTH_PRINCIPAL_MAX + 1], err[256];
	struct auth_keys *k = NULL;

	digest_hex("sk_long", a);
	memset(name, 'n', 64);
	name[64] = '\0';
	snprintf(text, sizeof(text), "%s %s\n", name, a);
	write_file(text);
	HARNESS_EQ(auth_keys_load(path, &k, err, sizeof(err)), IDEM_OK);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer sk_long", p), AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, name);
	auth_keys_free(k);
}

static void
test_load_trailing_and_duplicate(void)
{
	char a[65], text[512];

	digest_hex("x", a);
	snprintf(text, sizeof(text), "acct %s extra\n", a);
	expect_load_error(text, 1);
	/* One secret naming two accounts would make the scope ambiguous. */
	snprintf(text, sizeof(text), "one %s\ntwo %s\n", a, a);
	expect_load_error(text, 2);
}

static void
test_bearer_wrong(void)
{
	char p[AUTH_PRINCIPAL_MAX + 1];
	struct auth_keys *k = load_two();

	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer sk_carol", p), AUTH_INVALID);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer sk_alic", p), AUTH_INVALID);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer sk_alicee", p),
	    AUTH_INVALID);
	CU_ASSERT_STRING_EQUAL(p, "");
	auth_keys_free(k);
}

static void
test_missing(void)
{
	char p[AUTH_PRINCIPAL_MAX + 1];
	struct auth_keys *k = load_two();

	HARNESS_EQ(auth_principal(k, BEARER, NULL, NULL, p), AUTH_MISSING);
	HARNESS_EQ(auth_principal(k, BEARER, "", NULL, p), AUTH_MISSING);
	HARNESS_EQ(auth_principal(k, BEARER, "", "", p), AUTH_MISSING);
	HARNESS_EQ(auth_principal(NULL, BEARER, NULL, NULL, p), AUTH_MISSING);
	HARNESS_EQ(auth_principal(k, REMOTE, NULL, NULL, p), AUTH_MISSING);
	HARNESS_EQ(auth_principal(k, REMOTE, "", "", p), AUTH_MISSING);
	HARNESS_EQ(auth_principal(NULL, REMOTE, NULL, NULL, p), AUTH_MISSING);
	auth_keys_free(k);
}

/* RFC 9110 section 11.1: the auth-scheme is case-insensitive. */
static void
test_scheme_case(void)
{
	char p[AUTH_PRINCIPAL_MAX + 1];
	struct auth_keys *k = load_two();

	HARNESS_EQ(auth_principal(k, BEARER, NULL, "bearer sk_alice", p), AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "acct_alice");
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "BEARER sk_alice", p), AUTH_OK);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "bEaReR sk_alice", p), AUTH_OK);
	/* The token itself is case-sensitive. */
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer SK_ALICE", p), AUTH_INVALID);
	auth_keys_free(k);
}

static void
test_spaces(void)
{
	char p[AUTH_PRINCIPAL_MAX + 1];
	struct auth_keys *k = load_two();

	/* RFC 6750 section 2.1: "Bearer" 1*SP b64token. */
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer    sk_alice", p), AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "acct_alice");
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "  Bearer sk_alice  ", p), AUTH_OK);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearersk_alice", p), AUTH_INVALID);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer\tsk_alice", p),
	    AUTH_INVALID);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer", p), AUTH_INVALID);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer ", p), AUTH_INVALID);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer sk_alice sk_bob", p),
	    AUTH_INVALID);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer sk_alice,", p),
	    AUTH_INVALID);
	auth_keys_free(k);
}

static void
test_other_schemes(void)
{
	char p[AUTH_PRINCIPAL_MAX + 1];
	struct auth_keys *k = load_two();

	/* "sk_alice:" in base64, the shape of Basic credentials. */
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Basic c2tfYWxpY2U6", p),
	    AUTH_INVALID);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Basic sk_alice", p), AUTH_INVALID);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Token sk_alice", p), AUTH_INVALID);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "sk_alice", p), AUTH_INVALID);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearers sk_alice", p),
	    AUTH_INVALID);
	auth_keys_free(k);
}

/* b64token allows "-._~+/" and trailing '=' padding, and nothing else. */
static void
test_token_charset(void)
{
	char a[65], text[512], err[256], p[AUTH_PRINCIPAL_MAX + 1];
	struct auth_keys *k = NULL;

	digest_hex("Ab9-._~+/==", a);
	snprintf(text, sizeof(text), "acct %s\n", a);
	write_file(text);
	HARNESS_EQ(auth_keys_load(path, &k, err, sizeof(err)), IDEM_OK);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer Ab9-._~+/==", p), AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "acct");
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer Ab9=-", p), AUTH_INVALID);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer =", p), AUTH_INVALID);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer a\"b", p), AUTH_INVALID);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer a\xc3\xa9", p),
	    AUTH_INVALID);
	auth_keys_free(k);
}

static void
test_token_too_long(void)
{
	char p[AUTH_PRINCIPAL_MAX + 1], *h;
	struct auth_keys *k = load_two();
	size_t n = 100000;

	h = malloc(n + 8);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	memcpy(h, "Bearer ", 7);
	memset(h + 7, 'a', n);
	h[7 + n] = '\0';
	HARNESS_EQ(auth_principal(k, BEARER, NULL, h, p), AUTH_INVALID);
	free(h);
	auth_keys_free(k);
}

static void
test_mode_names(void)
{
	enum auth_mode m = AUTH_MODE__MAX;

	HARNESS_EQ(auth_mode_parse("bearer", &m), IDEM_OK);
	HARNESS_EQ(m, AUTH_MODE_BEARER);
	HARNESS_EQ(auth_mode_parse("remote-user", &m), IDEM_OK);
	HARNESS_EQ(m, AUTH_MODE_REMOTE_USER);
	CU_ASSERT_STRING_EQUAL(auth_mode_name(AUTH_MODE_BEARER), "bearer");
	CU_ASSERT_STRING_EQUAL(auth_mode_name(AUTH_MODE_REMOTE_USER),
	    "remote-user");
	/* No guessing: case, spelling and emptiness all matter. */
	HARNESS_EQ(auth_mode_parse("Bearer", &m), IDEM_EINVAL);
	HARNESS_EQ(auth_mode_parse("remote_user", &m), IDEM_EINVAL);
	HARNESS_EQ(auth_mode_parse("REMOTE_USER", &m), IDEM_EINVAL);
	HARNESS_EQ(auth_mode_parse("both", &m), IDEM_EINVAL);
	HARNESS_EQ(auth_mode_parse("", &m), IDEM_EINVAL);
	HARNESS_EQ(auth_mode_parse(NULL, &m), IDEM_EINVAL);
	HARNESS_EQ(m, AUTH_MODE_REMOTE_USER);
}

/*
 * In bearer mode REMOTE_USER is ignored, whatever it holds: nginx fills
 * $remote_user from any "Authorization: Basic" field without checking a
 * password, so a REMOTE_USER there names whoever the client claims.
 */
static void
test_bearer_ignores_remote_user(void)
{
	char p[AUTH_PRINCIPAL_MAX + 1];
	struct auth_keys *k = load_two();

	/* Alone, it authenticates nobody. */
	HARNESS_EQ(auth_principal(k, BEARER, "acct_alice", NULL, p),
	    AUTH_MISSING);
	CU_ASSERT_STRING_EQUAL(p, "");
	/* With the Basic field it came from: still nobody. */
	HARNESS_EQ(auth_principal(k, BEARER, "acct_alice",
	    "Basic YWNjdF9hbGljZTphbnl0aGluZw==", p), AUTH_INVALID);
	CU_ASSERT_STRING_EQUAL(p, "");
	/* Beside a valid key, the key decides the scope, not the name. */
	HARNESS_EQ(auth_principal(k, BEARER, "acct_alice", "Bearer sk_bob", p),
	    AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "bob@example.com");
	/* Beside a wrong key, a good name rescues nothing. */
	HARNESS_EQ(auth_principal(k, BEARER, "acct_alice", "Bearer sk_carol",
	    p), AUTH_INVALID);
	CU_ASSERT_STRING_EQUAL(p, "");
	/* A malformed REMOTE_USER does not matter either. */
	HARNESS_EQ(auth_principal(k, BEARER, "bad user", "Bearer sk_alice",
	    p), AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "acct_alice");
	auth_keys_free(k);
}

/*
 * In remote-user mode the web server authenticated the request: only
 * REMOTE_USER counts, and the Authorization field (the credentials the
 * server checked, or anything else) is not consulted.
 */
static void
test_remote_user(void)
{
	char p[AUTH_PRINCIPAL_MAX + 1];
	struct auth_keys *k = load_two();

	HARNESS_EQ(auth_principal(k, REMOTE, "carol", NULL, p), AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "carol");
	HARNESS_EQ(auth_principal(k, REMOTE, "carol", "Bearer sk_alice", p),
	    AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "carol");
	HARNESS_EQ(auth_principal(k, REMOTE, "carol", "Basic Y2Fyb2w6cHc=",
	    p), AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "carol");
	HARNESS_EQ(auth_principal(k, REMOTE, "carol@example.org", NULL, p),
	    AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "carol@example.org");
	/* The keys file plays no part: no keys at all is fine. */
	HARNESS_EQ(auth_principal(NULL, REMOTE, "carol", NULL, p), AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "carol");
	auth_keys_free(k);
}

/*
 * A valid Bearer key is no way into a remote-user deployment: the server
 * did not authenticate the request, so nobody did.
 */
static void
test_remote_user_ignores_bearer(void)
{
	char p[AUTH_PRINCIPAL_MAX + 1];
	struct auth_keys *k = load_two();

	HARNESS_EQ(auth_principal(k, REMOTE, NULL, "Bearer sk_alice", p),
	    AUTH_MISSING);
	CU_ASSERT_STRING_EQUAL(p, "");
	/* An empty REMOTE_USER means the server did not authenticate. */
	HARNESS_EQ(auth_principal(k, REMOTE, "", "Bearer sk_alice", p),
	    AUTH_MISSING);
	CU_ASSERT_STRING_EQUAL(p, "");
	HARNESS_EQ(auth_principal(k, REMOTE, "", "Basic Y2Fyb2w6cHc=", p),
	    AUTH_MISSING);
	auth_keys_free(k);
}

static void
test_remote_user_invalid(void)
{
	char p[AUTH_PRINCIPAL_MAX + 1], name[80];
	struct auth_keys *k = load_two();

	/* A bad REMOTE_USER is not rescued by a good Bearer key. */
	HARNESS_EQ(auth_principal(k, REMOTE, "carol smith",
	    "Bearer sk_alice", p), AUTH_INVALID);
	CU_ASSERT_STRING_EQUAL(p, "");
	HARNESS_EQ(auth_principal(k, REMOTE, "a/b", NULL, p), AUTH_INVALID);
	HARNESS_EQ(auth_principal(k, REMOTE, "a\nb", NULL, p), AUTH_INVALID);
	memset(name, 'u', 65);
	name[65] = '\0';
	HARNESS_EQ(auth_principal(k, REMOTE, name, NULL, p), AUTH_INVALID);
	name[64] = '\0';
	HARNESS_EQ(auth_principal(k, REMOTE, name, NULL, p), AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, name);
	auth_keys_free(k);
}

/* An unknown mode authenticates nobody. */
static void
test_mode_unknown(void)
{
	char p[AUTH_PRINCIPAL_MAX + 1];
	struct auth_keys *k = load_two();

	HARNESS_EQ(auth_principal(k, AUTH_MODE__MAX, "carol",
	    "Bearer sk_alice", p), AUTH_INVALID);
	CU_ASSERT_STRING_EQUAL(p, "");
	auth_keys_free(k);
}

static void
test_principal_valid(void)
{
	CU_ASSERT_TRUE(auth_principal_valid("metrics"));
	CU_ASSERT_TRUE(auth_principal_valid("ops@example.org"));
	CU_ASSERT_FALSE(auth_principal_valid(""));
	CU_ASSERT_FALSE(auth_principal_valid(NULL));
	CU_ASSERT_FALSE(auth_principal_valid("two words"));
	CU_ASSERT_FALSE(auth_principal_valid("a/b"));
}

/*
 * Nothing but the secret chooses the scope: naming the account, or
 * presenting the digest from the keys file, gets nothing.
 */
static void
test_claim_without_secret(void)
{
	char p[AUTH_PRINCIPAL_MAX + 1], a[65], h[128];
	struct auth_keys *k = load_two();

	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer acct_alice", p),
	    AUTH_INVALID);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer bob@example.com", p),
	    AUTH_INVALID);
	digest_hex("sk_alice", a);
	snprintf(h, sizeof(h), "Bearer %s", a);
	HARNESS_EQ(auth_principal(k, BEARER, NULL, h, p), AUTH_INVALID);
	CU_ASSERT_STRING_EQUAL(p, "");
	auth_keys_free(k);
}

/* Writes a keys file naming account for each of the n secrets. */
static struct auth_keys *
load_secrets(const char *const *accounts, const char *const *secrets,
    size_t n)
{
	char hex[65], text[2048], err[256];
	struct auth_keys *k = NULL;
	size_t i, at = 0;

	for (i = 0; i < n; i++) {
		digest_hex(secrets[i], hex);
		at += (size_t)snprintf(text + at, sizeof(text) - at, "%s %s\n",
		    accounts[i], hex);
	}
	write_file(text);
	HARNESS_EQ(auth_keys_load(path, &k, err, sizeof(err)), IDEM_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(k);
	return k;
}

/*
 * A thread remembers the last secret it authenticated: asking again, in
 * any order, still answers exactly as the keys file says, and a secret
 * that differs from the remembered one in any way (a byte, a prefix, an
 * extension, the same length) is not taken for it.
 */
static void
test_bearer_repeated(void)
{
	char p[AUTH_PRINCIPAL_MAX + 1];
	struct auth_keys *k = load_two();
	int round;

	for (round = 0; round < 3; round++) {
		HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer sk_alice", p),
		    AUTH_OK);
		CU_ASSERT_STRING_EQUAL(p, "acct_alice");
		HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer sk_alice", p),
		    AUTH_OK);
		CU_ASSERT_STRING_EQUAL(p, "acct_alice");
		HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer sk_alicf", p),
		    AUTH_INVALID);
		CU_ASSERT_STRING_EQUAL(p, "");
		HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer sk_alic", p),
		    AUTH_INVALID);
		HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer sk_alicee", p),
		    AUTH_INVALID);
		HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer sk_bob", p),
		    AUTH_OK);
		CU_ASSERT_STRING_EQUAL(p, "bob@example.com");
		HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer sk_bob", p),
		    AUTH_OK);
		CU_ASSERT_STRING_EQUAL(p, "bob@example.com");
		HARNESS_EQ(auth_principal(k, BEARER, NULL, "Bearer sk_alice", p),
		    AUTH_OK);
		CU_ASSERT_STRING_EQUAL(p, "acct_alice");
	}
	auth_keys_free(k);
}

/*
 * What a thread remembers belongs to the key set it was found in: a set
 * loaded anew, where the secret names another account or nobody, is
 * answered from that set only.
 */
static void
test_bearer_reloaded(void)
{
	static const char *const acc1[] = { "acct_alice", "acct_bob" };
	static const char *const sec1[] = { "sk_alice", "sk_bob" };
	static const char *const acc2[] = { "acct_bob", "acct_alice" };
	static const char *const acc3[] = { "acct_carol" };
	static const char *const sec3[] = { "sk_carol" };
	char p[AUTH_PRINCIPAL_MAX + 1];
	struct auth_keys *k1, *k2, *k3;

	k1 = load_secrets(acc1, sec1, 2);
	HARNESS_EQ(auth_principal(k1, BEARER, NULL, "Bearer sk_alice", p),
	    AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "acct_alice");
	/* The same secrets, now naming each other's accounts. */
	k2 = load_secrets(acc2, sec1, 2);
	HARNESS_EQ(auth_principal(k2, BEARER, NULL, "Bearer sk_alice", p),
	    AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "acct_bob");
	/* The old set, freed, and a set without the secret at all. */
	auth_keys_free(k1);
	k3 = load_secrets(acc3, sec3, 1);
	HARNESS_EQ(auth_principal(k3, BEARER, NULL, "Bearer sk_alice", p),
	    AUTH_INVALID);
	CU_ASSERT_STRING_EQUAL(p, "");
	HARNESS_EQ(auth_principal(k3, BEARER, NULL, "Bearer sk_carol", p),
	    AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "acct_carol");
	HARNESS_EQ(auth_principal(k2, BEARER, NULL, "Bearer sk_alice", p),
	    AUTH_OK);
	CU_ASSERT_STRING_EQUAL(p, "acct_bob");
	auth_keys_free(k2);
	auth_keys_free(k3);
}

/*
 * Secrets longer than the remembered window, and ones sharing a long
 * prefix with a remembered one, are still told apart.
 */
static void
test_bearer_long_secrets(void)
{
	char s1[300], s2[300], h[320], p[AUTH_PRINCIPAL_MAX + 1];
	const char *acc[] = { "long_one", "long_two" };
	const char *sec[2];
	struct auth_keys *k;
	size_t lens[] = { 63, 64, 65, 200 }, i;
	int round;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		memset(s1, 'x', lens[i]);
		s1[lens[i]] = '\0';
		memcpy(s2, s1, lens[i] + 1);
		s2[lens[i] - 1] = 'y';
		sec[0] = s1;
		sec[1] = s2;
		k = load_secrets(acc, sec, 2);
		for (round = 0; round < 2; round++) {
			snprintf(h, sizeof(h), "Bearer %s", s1);
			HARNESS_EQ(auth_principal(k, BEARER, NULL, h, p),
			    AUTH_OK);
			CU_ASSERT_STRING_EQUAL(p, "long_one");
			snprintf(h, sizeof(h), "Bearer %s", s2);
			HARNESS_EQ(auth_principal(k, BEARER, NULL, h, p),
			    AUTH_OK);
			CU_ASSERT_STRING_EQUAL(p, "long_two");
			/* One byte more or less than a remembered secret. */
			snprintf(h, sizeof(h), "Bearer %sy", s2);
			HARNESS_EQ(auth_principal(k, BEARER, NULL, h, p),
			    AUTH_INVALID);
			h[strlen(h) - 2] = '\0';
			HARNESS_EQ(auth_principal(k, BEARER, NULL, h, p),
			    AUTH_INVALID);
		}
		auth_keys_free(k);
	}
}

static int
suite_init(void)
{
	return crypto_init() == IDEM_OK ? 0 : -1;
}

static const struct {
	const char *name;
	CU_TestFunc fn;
} auth_tests[] = {
	{ "keys file: good", test_load_good },
	{ "keys file: known vector", test_load_known_vector },
	{ "keys file: missing is empty", test_load_missing_file },
	{ "keys file: bad hex", test_load_bad_hex },
	{ "keys file: bad name", test_load_bad_name },
	{ "keys file: 64-character name", test_load_name_limit },
	{ "keys file: trailing text, duplicate",
	    test_load_trailing_and_duplicate },
	{ "bearer: wrong secret", test_bearer_wrong },
	{ "missing credentials", test_missing },
	{ "bearer: scheme case", test_scheme_case },
	{ "bearer: spaces", test_spaces },
	{ "other schemes", test_other_schemes },
	{ "bearer: token characters", test_token_charset },
	{ "bearer: token too long", test_token_too_long },
	{ "mode names", test_mode_names },
	{ "bearer: REMOTE_USER ignored", test_bearer_ignores_remote_user },
	{ "remote-user: REMOTE_USER is the principal", test_remote_user },
	{ "remote-user: Bearer ignored", test_remote_user_ignores_bearer },
	{ "remote-user: invalid REMOTE_USER", test_remote_user_invalid },
	{ "unknown mode", test_mode_unknown },
	{ "principal syntax", test_principal_valid },
	{ "account without secret", test_claim_without_secret },
	{ "bearer: the same secret again", test_bearer_repeated },
	{ "bearer: a key set loaded anew", test_bearer_reloaded },
	{ "bearer: long secrets", test_bearer_long_secrets },
};

int
harness_suites(void)
{
	CU_pSuite s;
	size_t i;

	s = CU_add_suite_with_setup_and_teardown("auth", suite_init, NULL,
	    setup, teardown);
	if (s == NULL)
		return -1;
	for (i = 0; i < sizeof(auth_tests) / sizeof(auth_tests[0]); i++)
		if (CU_add_test(s, auth_tests[i].name, auth_tests[i].fn) ==
		    NULL)
			return -1;
	return 0;
}
