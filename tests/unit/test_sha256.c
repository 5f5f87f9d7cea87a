/*
 * Unit tests of SHA-256 and HMAC-SHA-256 (crypto.c on sha256.c): the
 * published vectors, and agreement with libsodium's implementations over
 * every short length and random longer ones fed in random pieces, on
 * both compression functions, the portable one and SHA-NI (where the
 * processor has it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "crypto.h"
#include "err.h"
#include "harness.h"

/* Whether this machine runs the SHA-NI function; set by the suite. */
static int have_shani;

/* A fixed-seed generator (xorshift64), so that a failure repeats. */
static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void
fill(uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(next() >> 32);
}

/*
 * The paths to run a check on: the portable function, then SHA-NI when
 * this processor has it.  crypto_sha256_use_portable(0) is left in force.
 */
static int
paths(void)
{
	return have_shani ? 2 : 1;
}

static void
use_path(int i)
{
	HARNESS_EQ(crypto_sha256_use_portable(i == 0), i == 1);
}

static void
check_hex(const uint8_t d[CRYPTO_SHA256_SIZE], const char *want, int path)
{
	char hex[2 * CRYPTO_SHA256_SIZE + 1];

	crypto_hex(d, CRYPTO_SHA256_SIZE, hex);
	if (strcmp(hex, want) != 0)
		fprintf(stderr, "  %s path: %s, want %s\n",
		    path ? "SHA-NI" : "portable", hex, want);
	CU_ASSERT_STRING_EQUAL(hex, want);
}

/*
 * The processor's flags in /proc/cpuinfo agree with the choice
 * crypto_init made, so that a machine with SHA-NI does use it.  Valgrind
 * (whose preload library is in LD_PRELOAD) hides the SHA extensions from
 * cpuid, not from /proc/cpuinfo: there, the comparison is skipped.
 */
static void
test_detection(void)
{
	const char *preload = getenv("LD_PRELOAD");
	char line[8192];
	int flags = -1;
	FILE *f;

	if (preload != NULL && strstr(preload, "vgpreload") != NULL) {
		fprintf(stderr, "  under valgrind: detection not compared\n");
		return;
	}

#if defined(__x86_64__) || defined(__i386__)
	f = fopen("/proc/cpuinfo", "r");
	if (f != NULL) {
		while (flags < 0 && fgets(line, sizeof(line), f) != NULL)
			if (strncmp(line, "flags", 5) == 0)
				flags = strstr(line, " sha_ni") != NULL &&
				    strstr(line, " ssse3") != NULL &&
				    strstr(line, " sse4_1") != NULL;
		fclose(f);
	}
#else
	(void)line;
	(void)f;
	flags = 0;
#endif
	if (flags < 0) {
		fprintf(stderr, "  no flags in /proc/cpuinfo to compare\n");
		return;
	}
	HARNESS_EQ(have_shani, flags);
	HARNESS_EQ(crypto_sha256_use_portable(0), flags);
}

/* FIPS 180-2 appendix B; the million a's in pieces of 1,000. */
static void
test_vectors(void)
{
	static const char two_blocks[] =
	    "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	struct crypto_sha256 h;
	uint8_t d[CRYPTO_SHA256_SIZE];
	char a[1000];
	int i, path;

	memset(a, 'a', sizeof(a));
	for (path = 0; path < paths(); path++) {
		use_path(path);
		crypto_sha256("abc", 3, d);
		check_hex(d, "ba7816bf8f01cfea414140de5dae2223"
		    "b00361a396177a9cb410ff61f20015ad", path);
		crypto_sha256(two_blocks, strlen(two_blocks), d);
		check_hex(d, "248d6a61d20638b8e5c026930c3e6039"
		    "a33ce45964ff2167f6ecedd419db06c1", path);
		crypto_sha256("", 0, d);
		check_hex(d, "e3b0c44298fc1c149afbf4c8996fb924"
		    "27ae41e4649b934ca495991b7852b855", path);
		crypto_sha256_init(&h);
		for (i = 0; i < 1000; i++)
			crypto_sha256_update(&h, a, sizeof(a));
		crypto_sha256_final(&h, d);
		check_hex(d, "cdc76e5c9914fb9281a1c7e284d73e67"
		    "f1809a48a497200e046d39ccc7112cd0", path);
	}
	crypto_sha256_use_portable(0);
}

/*
 * Hashes len bytes in random pieces (some empty) and whole, on each
 * path, and compares every digest with libsodium's.
 */
static void
check_against_sodium(const uint8_t *p, size_t len)
{
	uint8_t want[crypto_hash_sha256_BYTES], d[CRYPTO_SHA256_SIZE];
	struct crypto_sha256 h;
	size_t at, piece;
	int path;

	crypto_hash_sha256(want, p, (unsigned long long)len);
	for (path = 0; path < paths(); path++) {
		use_path(path);
		crypto_sha256(p, len, d);
		if (memcmp(d, want, sizeof(d)) != 0)
			fprintf(stderr, "  length %zu, path %d: differs\n",
			    len, path);
		CU_ASSERT(memcmp(d, want, sizeof(d)) == 0);
		crypto_sha256_init(&h);
		for (at = 0; at < len; at += piece) {
			piece = (size_t)(next() % (len - at + 1));
			/* Now and then a piece of a block or a few. */
			if (next() % 4 == 0 && piece > 130)
				piece = (size_t)(next() % 130);
			crypto_sha256_update(&h, p + at, piece);
		}
		crypto_sha256_final(&h, d);
		if (memcmp(d, want, sizeof(d)) != 0)
			fprintf(stderr, "  length %zu in pieces, path %d: "
			    "differs\n", len, path);
		CU_ASSERT(memcmp(d, want, sizeof(d)) == 0);
	}
	crypto_sha256_use_portable(0);
}

static void
test_against_sodium(void)
{
	static uint8_t buf[10000];
	size_t len, off;
	int i;

	fill(buf, sizeof(buf));
	for (len = 0; len <= 300; len++)
		check_against_sodium(buf, len);
	for (i = 0; i < 200; i++) {
		/* At an unaligned start, too. */
		off = (size_t)(next() % 8);
		len = (size_t)(next() % (sizeof(buf) - off + 1));
		check_against_sodium(buf + off, len);
	}
}

struct hmac_case {
	const char *key;       /* hex */
	const char *data;      /* hex, or text when data_text */
	int data_text;
	const char *mac;
};

/* RFC 4231, test cases 1 to 4, 6 and 7 (5 is a truncated MAC). */
static const struct hmac_case rfc4231[] = {
	{ "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "Hi There", 1,
	  "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
	{ "4a656665", "what do ya want for nothing?", 1,
	  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
	{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	  "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
	  "dddddddddddddddddddddddddddddddddddd", 0,
	  "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe" },
	{ "0102030405060708090a0b0c0d0e0f10111213141516171819",
	  "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"
	  "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd", 0,
	  "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b" },
	{ NULL, "Test Using Larger Than Block-Size Key - Hash Key First", 1,
	  "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" },
	{ NULL, "This is a test using a larger than block-size key and a "
	  "larger than block-size data. The key needs to be hashed before "
	  "being used by the HMAC algorithm.", 1,
	  "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2" },
};

static void
test_hmac_rfc4231(void)
{
	uint8_t key[131], data[200], d[CRYPTO_SHA256_SIZE];
	size_t keylen, datalen, i;
	struct crypto_hmac h;
	struct crypto_part parts[2];
	int path;

	for (i = 0; i < sizeof(rfc4231) / sizeof(rfc4231[0]); i++) {
		const struct hmac_case *c = &rfc4231[i];

		if (c->key == NULL) {
			/* Cases 6 and 7: 131 bytes of 0xaa. */
			keylen = 131;
			memset(key, 0xaa, keylen);
		} else {
			keylen = strlen(c->key) / 2;
			HARNESS_EQ(crypto_unhex(c->key, key, keylen), IDEM_OK);
		}
		if (c->data_text) {
			datalen = strlen(c->data);
			memcpy(data, c->data, datalen);
		} else {
			datalen = strlen(c->data) / 2;
			HARNESS_EQ(crypto_unhex(c->data, data, datalen),
			    IDEM_OK);
		}
		for (path = 0; path < paths(); path++) {
			use_path(path);
			crypto_hmac_init(&h, key, keylen);
			parts[0].data = data;
			parts[0].len = datalen;
			crypto_hmac_sha256(&h, parts, 1, d);
			check_hex(d, c->mac, path);
			/* The same message in two parts. */
			parts[0].len = datalen / 3;
			parts[1].data = data + datalen / 3;
			parts[1].len = datalen - datalen / 3;
			crypto_hmac_sha256(&h, parts, 2, d);
			check_hex(d, c->mac, path);
		}
	}
	crypto_sha256_use_portable(0);
}

/*
 * Keys of every length around the block size and beyond, messages of
 * random lengths in random parts: the MAC is libsodium's, and a prepared
 * key gives it again and again.
 */
static void
test_hmac_against_sodium(void)
{
	static uint8_t key[300], msg[3000];
	uint8_t want[crypto_auth_hmacsha256_BYTES], d[CRYPTO_SHA256_SIZE];
	crypto_auth_hmacsha256_state st;
	struct crypto_part parts[3];
	struct crypto_hmac h;
	size_t keylen, len, cut1, cut2;
	int path, again;

	fill(key, sizeof(key));
	fill(msg, sizeof(msg));
	for (keylen = 0; keylen <= sizeof(key); keylen += 1 + keylen / 16) {
		len = (size_t)(next() % (sizeof(msg) + 1));
		cut1 = (size_t)(next() % (len + 1));
		cut2 = cut1 + (size_t)(next() % (len - cut1 + 1));
		crypto_auth_hmacsha256_init(&st, key, keylen);
		crypto_auth_hmacsha256_update(&st, msg,
		    (unsigned long long)len);
		crypto_auth_hmacsha256_final(&st, want);
		parts[0].data = msg;
		parts[0].len = cut1;
		parts[1].data = msg + cut1;
		parts[1].len = cut2 - cut1;
		parts[2].data = msg + cut2;
		parts[2].len = len - cut2;
		for (path = 0; path < paths(); path++) {
			use_path(path);
			crypto_hmac_init(&h, key, keylen);
			for (again = 0; again < 2; again++) {
				crypto_hmac_sha256(&h, parts, 3, d);
				if (memcmp(d, want, sizeof(d)) != 0)
					fprintf(stderr, "  key %zu, message "
					    "%zu, path %d: differs\n", keylen,
					    len, path);
				CU_ASSERT(memcmp(d, want, sizeof(d)) == 0);
			}
		}
	}
	crypto_sha256_use_portable(0);
}

int
harness_suites(void)
{
	CU_pSuite s;

	if (crypto_init() != IDEM_OK)
		return -1;
	have_shani = crypto_sha256_use_portable(0);
	if (!have_shani)
		fprintf(stderr, "test_sha256: no SHA-NI here, the portable "
		    "path only\n");
	s = CU_add_suite("sha256", NULL, NULL);
	if (s == NULL ||
	    CU_add_test(s, "SHA-NI detection", test_detection) == NULL ||
	    CU_add_test(s, "FIPS 180-2 vectors", test_vectors) == NULL ||
	    CU_add_test(s, "against libsodium", test_against_sodium) ==
	    NULL ||
	    CU_add_test(s, "HMAC RFC 4231", test_hmac_rfc4231) == NULL ||
	    CU_add_test(s, "HMAC against libsodium",
	    test_hmac_against_sodium) == NULL)
		return -1;
	return 0;
}
