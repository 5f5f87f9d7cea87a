/* SPDX-License-Identifier: MIT */
/*
 * harness.h: the common main of the CUnit test programs.
 *
 * A test program defines harness_suites(), which adds its suites to the
 * CUnit registry, and links harness.c, whose main runs them and prints
 * the closing line "<program>: N passed, N failed" that quickstart sums.
 */
#ifndef IDEM_TEST_HARNESS_H
#define IDEM_TEST_HARNESS_H

#include <stddef.h>

#include <CUnit/CUnit.h>

/* Defined by each test program: adds its suites; returns 0 or -1. */
int harness_suites(void);

/*
 * Makes a fresh empty directory under $TMPDIR (or /tmp) and writes its
 * path to out.  harness_rmdir removes it and everything in it.
 */
void harness_mkdtemp(char *out, size_t outlen);
void harness_rmdir(const char *path);

/*
 * Where a test's store is: dir, or with IDEM_TEST_PG set (a PostgreSQL
 * URI) that database, migrated, and emptied when fresh is set.
 */
const char *harness_store(const char *dir, int fresh);
/* Whether the tests run on PostgreSQL (IDEM_TEST_PG). */
int harness_pg(void);

/*
 * The value of the sample line "name value" in a Prometheus text
 * exposition (a count, or seconds), or -1 when there is none.
 */
double harness_sample(const char *text, const char *name);

/* Asserts two integers equal, printing both when they are not. */
#define HARNESS_EQ(a, b) do {						\
	long long harness_a_ = (long long)(a), harness_b_ = (long long)(b); \
	if (harness_a_ != harness_b_)					\
		fprintf(stderr, "  %s:%d: %s == %lld, %s == %lld\n",	\
		    __FILE__, __LINE__, #a, harness_a_, #b, harness_b_); \
	CU_ASSERT_EQUAL(harness_a_, harness_b_);			\
} while (0)

#endif
