/* SPDX-License-Identifier: MIT */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "harness.h"
#include "store.h"

int
harness_pg(void)
{
	const char *pg = getenv("IDEM_TEST_PG");

	return pg != NULL && *pg != '\0';
}

double
harness_sample(const char *text, const char *name)
{
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), "\n%s ", name);
	if ((p = strstr(text, pat)) == NULL)
		return -1;
	return atof(p + strlen(pat));
}

const char *
harness_store(const char *dir, int fresh)
{
	static int migrated;
	const char *pg = getenv("IDEM_TEST_PG");
	char err[256];
	int from, to;

	if (!harness_pg())
		return dir;
	if (!migrated) {
		if (store_pg_migrate(pg, &from, &to, err, sizeof(err)) != 0) {
			fprintf(stderr, "migrate %s: %s\n", pg, err);
			exit(2);
		}
		migrated = 1;
	}
	if (fresh && store_pg_wipe(pg) != 0) {
		fprintf(stderr, "wipe %s failed\n", pg);
		exit(2);
	}
	return pg;
}

void
harness_mkdtemp(char *out, size_t outlen)
{
	const char *tmp = getenv("TMPDIR");

	if (tmp == NULL || *tmp == '\0')
		tmp = "/tmp";
	snprintf(out, outlen, "%s/idem-unit-XXXXXX", tmp);
	if (mkdtemp(out) == NULL) {
		perror("mkdtemp");
		exit(2);
	}
}

static int
harness_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void
harness_rmdir(const char *path)
{
	nftw(path, harness_rm, 16, FTW_DEPTH | FTW_PHYS);
}

int
main(int argc, char *argv[])
{
	const char *name = argc > 0 ? argv[0] : "test";
	const char *slash = strrchr(name, '/');
	unsigned run, failed;

	if (slash != NULL)
		name = slash + 1;
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	if (harness_suites() != 0) {
		fprintf(stderr, "%s: could not add suites: %s\n", name,
		    CU_get_error_msg());
		CU_cleanup_registry();
		return 2;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	run = CU_get_number_of_tests_run();
	failed = CU_get_number_of_tests_failed();
	CU_cleanup_registry();
	printf("\n%s%s: %u passed, %u failed\n", name, harness_pg() ? "-pg" :
	    "", run - failed, failed);
	return failed == 0 ? 0 : 1;
}
