/* SPDX-License-Identifier: MIT */
/*
 * fuzz_seal.c: libFuzzer target for the key file parser and for opening
 * sealed values (seal.h).
 *
 * The input is a key file's text.  Besides not crashing: a file that
 * parses holds 1 to SEAL_MAX_KEYS keys with distinct ids, and a value
 * sealed under it opens to the same bytes under it; and the input taken
 * as a sealed value never opens under a fixed key, since no input can
 * carry a valid tag without the key.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "err.h"
#include "seal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char fixed[] =
    "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct seal_ad ad = { "row", "t", 1, "k", 1 };
	struct buf sealed = BUF_INIT, plain = BUF_INIT;
	struct sealer s, f;
	char err[256];
	size_t i, j;

	if (crypto_init() != IDEM_OK)
		abort();
	if (seal_parse((const char *)data, size, &s, err, sizeof(err)) ==
	    IDEM_OK) {
		if (s.nkeys < 1 || s.nkeys > SEAL_MAX_KEYS)
			abort();
		for (i = 0; i < s.nkeys; i++)
			for (j = i + 1; j < s.nkeys; j++)
				if (memcmp(s.keys[i].id, s.keys[j].id,
				    SEAL_ID_SIZE) == 0)
					abort();
		if (seal_seal(&s, &ad, data, size, &sealed) != IDEM_OK ||
		    seal_open(&s, &ad, sealed.data, sealed.len, &plain,
		    NULL) != IDEM_OK || plain.len != size ||
		    (size > 0 && memcmp(plain.data, data, size) != 0))
			abort();
	} else if (strlen(err) == 0)
		abort();
	if (seal_parse(fixed, sizeof(fixed) - 1, &f, err, sizeof(err)) !=
	    IDEM_OK)
		abort();
	buf_reset(&plain);
	if (seal_open(&f, &ad, data, size, &plain, NULL) != IDEM_ESEAL)
		abort();
	buf_free(&sealed);
	buf_free(&plain);
	return 0;
}
