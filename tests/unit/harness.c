#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "harness.h"

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
	printf("\n%s: %u passed, %u failed\n", name, run - failed, failed);
	return failed == 0 ? 0 : 1;
}
