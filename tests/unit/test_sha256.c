/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of SHA-256 and HMAC-SHA-256 as crypto.h gives them over
 * libsodium: the published vectors, a message fed in pieces, and a
 * prepared HMAC key used again and again, as keyhash.c and seal.c use it.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "crypto.h"
#include "err.h"
#include "harness.h"

static void
check_hex(const uint8_t d[CRYPTO_SHA256_SIZE], const char *want)
{
	char hex[2 * CRYPTO_SHA256_SIZE + 1];

	crypto_hex(d, CRYPTO_SHA256_SIZE, hex);
	CU_ASSERT_STRING_EQUAL(hex, want);
	if (strcmp(hex, want) != 0)
		fprintf(stderr, "  got %s, want %s\n", hex, want);
}

/*
 * FIPS 180-2 appendix B: the one-block and the two-block message, and a
 * million "a"s fed in pieces of every size from 1 to 97 bytes.
 */
static void
test_vectors(void)
{
	static const char two[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmn"
	    "lmnomnopnopq";
	uint8_t d[CRYPTO_SHA256_SIZE], a[97];
	struct crypto_sha256 h;
	size_t left, n, step = 1;

	crypto_sha256("abc", 3, d);
	check_hex(d, "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad");
	crypto_sha256(two, strlen(two), d);
	check_hex(d, "248d6a61d20638b8e5c026930c3e6039"
	    "a33ce45964ff2167f6ecedd419db06c1");
	memset(a, 'a', sizeof(a));
	crypto_sha256_init(&h);
	for (left = 1000000; left > 0; left -= n) {
		n = step < left ? step : left;
		crypto_sha256_update(&h, a, n);
		step = step % sizeof(a) + 1;
	}
	crypto_sha256_final(&h, d);
	check_hex(d, "cdc76e5c9914fb9281a1c7e284d73e67"
	    "f1809a48a497200e046d39ccc7112cd0");
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

/*
 * Each case under a key prepared once, the message whole and then in two
 * parts, and the prepared key used again after: each MAC starts from a
 * copy of the prepared state, never from what the last one left.
 */
static void
test_hmac_rfc4231(void)
{
	uint8_t key[131], data[200], d[CRYPTO_SHA256_SIZE];
	size_t keylen, datalen, i;
	struct crypto_hmac h;
	struct crypto_part parts[2];

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
		crypto_hmac_init(&h, key, keylen);
		parts[0].data = data;
		parts[0].len = datalen;
		crypto_hmac_sha256(&h, parts, 1, d);
		check_hex(d, c->mac);
		parts[0].len = datalen / 3;
		parts[1].data = data + datalen / 3;
		parts[1].len = datalen - datalen / 3;
		crypto_hmac_sha256(&h, parts, 2, d);
		check_hex(d, c->mac);
		parts[0].len = datalen;
		crypto_hmac_sha256(&h, parts, 1, d);
		check_hex(d, c->mac);
	}
}

int
harness_suites(void)
{
	CU_pSuite s;

	if ((s = CU_add_suite("sha256", NULL, NULL)) == NULL ||
	    CU_add_test(s, "FIPS 180-2 vectors, whole and in pieces",
	    test_vectors) == NULL ||
	    CU_add_test(s, "HMAC: RFC 4231 under a prepared key",
	    test_hmac_rfc4231) == NULL)
		return -1;
	return 0;
}
