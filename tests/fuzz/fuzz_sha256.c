/*
 * fuzz_sha256.c: libFuzzer target for SHA-256 and HMAC-SHA-256
 * (crypto.c on sha256.c).
 *
 * The input's first two bytes choose a split point and its third a key
 * length; the key is the bytes that follow, the message the rest.  The
 * message hashed in two updates split there, and its HMAC under the key
 * in two parts split there, must equal libsodium's SHA-256 and HMAC of
 * the same bytes, on the portable compression function and on SHA-NI
 * (where the processor has it).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "crypto.h"
#include "err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t want[CRYPTO_SHA256_SIZE], want_mac[CRYPTO_SHA256_SIZE];
	uint8_t d[CRYPTO_SHA256_SIZE];
	crypto_auth_hmacsha256_state st;
	struct crypto_part parts[2];
	struct crypto_sha256 h;
	struct crypto_hmac mac;
	const uint8_t *key, *msg;
	size_t split, keylen, len;
	int portable;

	if (crypto_init() != IDEM_OK)
		abort();
	if (size < 3)
		return 0;
	split = (size_t)data[0] << 8 | data[1];
	keylen = data[2];
	key = data + 3;
	if (keylen > size - 3)
		keylen = size - 3;
	msg = key + keylen;
	len = size - 3 - keylen;
	split %= len + 1;

	crypto_hash_sha256(want, msg, (unsigned long long)len);
	crypto_auth_hmacsha256_init(&st, key, keylen);
	crypto_auth_hmacsha256_update(&st, msg, (unsigned long long)len);
	crypto_auth_hmacsha256_final(&st, want_mac);
	parts[0].data = msg;
	parts[0].len = split;
	parts[1].data = msg + split;
	parts[1].len = len - split;
	for (portable = 1; portable >= 0; portable--) {
		crypto_sha256_use_portable(portable);
		crypto_sha256_init(&h);
		crypto_sha256_update(&h, msg, split);
		crypto_sha256_update(&h, msg + split, len - split);
		crypto_sha256_final(&h, d);
		if (memcmp(d, want, sizeof(d)) != 0)
			abort();
		crypto_sha256(msg, len, d);
		if (memcmp(d, want, sizeof(d)) != 0)
			abort();
		crypto_hmac_init(&mac, key, keylen);
		crypto_hmac_sha256(&mac, parts, 2, d);
		if (memcmp(d, want_mac, sizeof(d)) != 0)
			abort();
	}
	return 0;
}
