/* Check suite: calibration recovers known constants and its file applies. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/calib.h"
#include "model/catalog.h"
#include "check_util.h"

static hx_catalog cat;

static void setup(void)
{
	hx_err err = {0};
	ck_assert_msg(hx_catalog_load(&cat, NULL, &err) == 0, "%s", err.msg);
}

static void teardown(void)
{
	hx_catalog_release(&cat);
}

/* Points made by the model itself with known constants are fitted back. */
START_TEST(test_recovers_constants)
{
	const hx_model *m = hx_catalog_model(&cat, "llama-3.1-8b");
	hx_gpu truth = *hx_catalog_gpu(&cat, "l40s"), start = truth;
	hx_meas x[64];
	hx_fit fit;
	hx_err err = {0};
	int n = 0;

	truth.e_compute = 0.52;
	truth.e_mem = 0.71;
	truth.kernel_floor_us = 6;
	truth.iter_overhead_ms = 5;
	truth.e_attn = 0.4;
	truth.allreduce_latency_us = 30;
	for (int tp = 1; tp <= 2; tp++) {
		for (int k = 0; k < 4; k++) {
			int tok[] = {64, 512, 2048, 8192}, bs[] = {1, 8, 64, 256};
			x[n] = (hx_meas){
			    "l40s", "llama-3.1-8b", tp, HX_PHASE_PREFILL, 1, tok[k], 0, 0, n};
			x[n].ms = hx_calib_predict(m, &truth, &x[n]);
			n++;
			x[n] = (hx_meas){
			    "l40s", "llama-3.1-8b", tp, HX_PHASE_DECODE, bs[k], 1, 1000, 0, n};
			x[n].ms = hx_calib_predict(m, &truth, &x[n]);
			n++;
			x[n] = (hx_meas){"l40s", "llama-3.1-8b", tp, HX_PHASE_LINEAR,
					 1,      tok[k] / 64,    0,  0,
					 n};
			x[n].ms = hx_calib_predict(m, &truth, &x[n]);
			n++;
		}
	}
	ck_assert_msg(hx_calib_fit(m, &start, x, n, &fit, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(fit.nkeys, 6);
	ck_assert_msg(fit.median_ape_after < 0.5, "median after %g", fit.median_ape_after);
	ck_assert(fit.median_ape_after < fit.median_ape_before);
	ck_assert_msg(fabs(fit.fitted.e_compute / 0.52 - 1) < 0.05, "e_compute %g",
		      fit.fitted.e_compute);
	ck_assert_msg(fabs(fit.fitted.e_mem / 0.71 - 1) < 0.05, "e_mem %g", fit.fitted.e_mem);
	ck_assert_msg(fabs(fit.fitted.iter_overhead_ms / 5 - 1) < 0.05, "overhead %g",
		      fit.fitted.iter_overhead_ms);
	hx_fit_release(&fit);
}
END_TEST

/* Only linear points: overheads are not identifiable and stay untouched. */
START_TEST(test_identifiable_only)
{
	const hx_model *m = hx_catalog_model(&cat, "llama-2-7b");
	const hx_gpu *g = hx_catalog_gpu(&cat, "a40");
	hx_meas x[3] = {{"a40", "llama-2-7b", 1, HX_PHASE_LINEAR, 1, 1, 0, 0.3, 2},
			{"a40", "llama-2-7b", 1, HX_PHASE_LINEAR, 1, 512, 0, 1.2, 3},
			{"a40", "llama-2-7b", 1, HX_PHASE_LINEAR, 1, 4096, 0, 8.5, 4}};
	hx_fit fit;
	hx_err err = {0};

	ck_assert(hx_calib_fit(m, g, x, 3, &fit, &err) == 0);
	ck_assert_int_eq(fit.nkeys, 3);
	ck_assert(fit.fitted.iter_overhead_ms == g->iter_overhead_ms);
	hx_fit_release(&fit);
}
END_TEST

START_TEST(test_file_applies)
{
	char path[] = "/tmp/hx-calib-XXXXXX";
	int fd = mkstemp(path);
	const char *text =
	    "{\"schema\": \"hexplan.calibration\", \"version\": 1,"
	    " \"gpus\": {\"a40\": {\"e_compute\": 0.61, \"kernel_floor_us\": 3}}}";
	hx_calib c;
	hx_err err = {0};

	ck_assert(fd >= 0);
	ck_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	ck_assert_msg(hx_calib_load(&c, path, &cat, &err) == 0, "%s", err.msg);
	hx_calib_apply(&c, &cat);
	ck_assert(hx_catalog_gpu(&cat, "a40")->e_compute == 0.61);
	ck_assert(hx_catalog_gpu(&cat, "a40")->kernel_floor_us == 3);
	hx_calib_release(&c);
	unlink(path);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("calib");
	TCase *tc = tcase_create("calib");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_recovers_constants);
	tcase_add_test(tc, test_identifiable_only);
	tcase_add_test(tc, test_file_applies);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run(suite());
}
