/* What every Check suite shares: running it, and finding source files. */
#ifndef HX_CHECK_UTIL_H
#define HX_CHECK_UTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

/* Run suite S; the exit status 'make check' reads. */
static inline int hx_check_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* REL under the source tree ($top_srcdir, else "."): a static buffer. */
static inline const char *hx_check_src(const char *rel)
{
	static char path[1024];
	snprintf(path, sizeof(path), "%s/%s", getenv("top_srcdir") ? getenv("top_srcdir") : ".", rel);
	return path;
}

#endif
