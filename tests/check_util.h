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

/* Run suite S with the scratch directory TMPDIR (a mkdtemp template) made
 * first and removed after. */
static inline int hx_check_run_in(Suite *s, char *tmpdir)
{
	char cmd[300];
	int failed;

	if (!mkdtemp(tmpdir))
		return 99;
	failed = hx_check_run(s) != EXIT_SUCCESS;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		failed = 1;
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* REL under the source tree ($top_srcdir, else "."): a static buffer. */
static inline const char *hx_check_src(const char *rel)
{
	static char path[1024];
	snprintf(path, sizeof(path), "%s/%s", getenv("top_srcdir") ? getenv("top_srcdir") : ".",
		 rel);
	return path;
}

#endif
