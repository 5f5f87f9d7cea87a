/* SPDX-License-Identifier: MIT */
/*
 * fuzz_provider.c: libFuzzer target for the reading of the provider
 * service's answers (provider_http_parse, provider_http_parse_stats).
 *
 * The input is a status (two bytes, folded into 100..599), a charge or
 * refund flag (one byte) and the body.  Besides not crashing: an outcome
 * is one of those the reading may give, a final one carries an id of the
 * service's shape for its kind and every other none; 503 is always
 * "unavailable" and 422 always "key reused"; and "charged", "declined"
 * or "refunded" come only with 201, 402 and 201.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "provider_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_id(const char *id, const char *prefix)
{
	size_t i, len = strnlen(id, PROVIDER_ID_SIZE);

	if (len != 27 || memcmp(id, prefix, 3) != 0)
		abort();
	for (i = 3; i < len; i++)
		if (!((id[i] >= '0' && id[i] <= '9') ||
		    (id[i] >= 'a' && id[i] <= 'f')))
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct provider_charge ch;
	size_t c, d, r;
	long status;
	int refund;

	if (size < 3)
		return 0;
	status = 100 + (long)(((unsigned)data[0] << 8 | data[1]) % 500);
	refund = data[2] & 1;
	data += 3;
	size -= 3;
	if (provider_http_parse(status, (const char *)data, size, refund,
	    &ch) != IDEM_OK)
		abort();
	switch (ch.outcome) {
	case PROVIDER_CHARGED:
		if (status != 201 || refund)
			abort();
		check_id(ch.id, "ch_");
		break;
	case PROVIDER_REFUNDED:
		if (status != 201 || !refund)
			abort();
		check_id(ch.id, "rf_");
		break;
	case PROVIDER_DECLINED:
		if (status != 402 || refund)
			abort();
		check_id(ch.id, "dc_");
		break;
	case PROVIDER_UNAVAILABLE:
	case PROVIDER_TIMEOUT:
	case PROVIDER_KEY_REUSED:
		if (ch.id[0] != '\0')
			abort();
		break;
	default:
		abort();
	}
	if (status == 503 && ch.outcome != PROVIDER_UNAVAILABLE)
		abort();
	if ((status == 422) != (ch.outcome == PROVIDER_KEY_REUSED))
		abort();
	(void)provider_http_parse_stats((const char *)data, size, &c, &d, &r);
	return 0;
}
