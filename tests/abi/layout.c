/* SPDX-License-Identifier: MIT */
/*
 * layout.c: the binary interface of the idem.h it is compiled with, one
 * line per fact: "NAME VALUE", or "NAME VALUE grows" for what a later
 * release may make larger (the options' size, the error codes' bound,
 * the version).  tests/abi.test compiles it with the baseline header and
 * with this release's, and compares.  It names what the baseline has, so
 * it compiles with every later header of the same soname.
 */
#include <stddef.h>
#include <stdio.h>

#include <idem.h>

#define SIZE(s) printf("sizeof:%s %zu\n", #s, sizeof(struct s))
#define ENUM(e) printf("sizeof:enum:%s %zu\n", #e, sizeof(enum e))
#define FIELD(s, f) printf("%s.%s %zu+%zu\n", #s, #f,			\
	offsetof(struct s, f), sizeof(((struct s *)0)->f))
#define VALUE(v) printf("%s %lld\n", #v, (long long)(v))
#define GROWS(n, v) printf("%s %lld grows\n", n, (long long)(v))

int
main(void)
{
	GROWS("sizeof:idem_options", sizeof(struct idem_options));
	FIELD(idem_options, size);
	FIELD(idem_options, dir);
	FIELD(idem_options, map_size);
	FIELD(idem_options, lease_ms);
	FIELD(idem_options, ttl_ms);
	FIELD(idem_options, max_keys_per_scope);
	FIELD(idem_options, commit_delay_us);
	FIELD(idem_options, tables);
	FIELD(idem_options, clock);
	FIELD(idem_options, clock_ctx);
	FIELD(idem_options, read_only);
	FIELD(idem_options, secret_file);

	SIZE(idem_header);
	FIELD(idem_header, name);
	FIELD(idem_header, value);
	SIZE(idem_response);
	FIELD(idem_response, status);
	FIELD(idem_response, headers);
	FIELD(idem_response, nheaders);
	FIELD(idem_response, body);
	FIELD(idem_response, bodylen);
	SIZE(idem_start);
	FIELD(idem_start, stage);
	FIELD(idem_start, point);
	FIELD(idem_start, len);
	FIELD(idem_start, hook);
	FIELD(idem_start, hook_ctx);

	VALUE(IDEM_OK);
	VALUE(IDEM_ENOMEM);
	VALUE(IDEM_EINVAL);
	VALUE(IDEM_ENOTFOUND);
	VALUE(IDEM_EEXIST);
	VALUE(IDEM_EFULL);
	VALUE(IDEM_EIO);
	VALUE(IDEM_EROFS);
	VALUE(IDEM_ECORRUPT);
	VALUE(IDEM_ELOST);
	VALUE(IDEM_ETOOBIG);
	VALUE(IDEM_ELIMIT);
	VALUE(IDEM_EREFUSED);
	VALUE(IDEM_ESEAL);
	VALUE(IDEM_EBUSY);
	GROWS("IDEM_ERR__MAX", IDEM_ERR__MAX);
	VALUE(IDEM_RUN);
	VALUE(IDEM_RESUME);
	VALUE(IDEM_REPLAY);
	VALUE(IDEM_CONFLICT);
	VALUE(IDEM_MISMATCH);
	VALUE(IDEM_LIMITED);
	VALUE(IDEM_VERDICT__MAX);
	VALUE(IDEM_FP_CANONICAL);
	VALUE(IDEM_FP_RAW);
	VALUE(IDEM_FP_SIZE);
	VALUE(IDEM_MAX_HEADERS);
	VALUE(IDEM_MAX_POINT);
	VALUE(IDEM_MAX_TABLES);
	ENUM(idem_err);
	ENUM(idem_verdict);
	ENUM(idem_fp_mode);
	GROWS("IDEM_VERSION_NUMBER", IDEM_VERSION_NUMBER);
	return 0;
}
