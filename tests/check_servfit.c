/* Check suite: serving runs read as documented, and a fit to runs that the
 * simulator itself made with known constants reproduces their figures. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/catalog.h"
#include "sim/servfit.h"
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

/* tests/data/serving/runs.json: the load and lengths each result records. */
START_TEST(test_reads_runs)
{
	hx_serv_runs rs;
	hx_err err = {0};

	ck_assert_msg(hx_serv_runs_load(&rs, hx_check_src("tests/data/serving/runs.json"), &cat,
					&err) == 0,
		      "%s", err.msg);
	ck_assert_int_eq(rs.n, 2);
	/* vllm-bench: one stage at its request_rate, lengths per request */
	ck_assert_str_eq(rs.r[0].name, "vllm-4rps");
	ck_assert_int_eq(rs.r[0].format, HX_RESULT_VLLM_BENCH);
	ck_assert_int_eq(rs.r[0].nst, 1);
	ck_assert(rs.r[0].st[0].rate_rps == 4);
	ck_assert(rs.r[0].st[0].steady);
	ck_assert_int_eq(rs.r[0].w.prompt.nb, 2); /* 450 and 550, from input_lens */
	ck_assert(fabs(rs.r[0].w.serving.token_budget - 2048) < 1e-9);
	/* inference-perf: a stage per stage file, rates from load_summary */
	ck_assert_int_eq(rs.r[1].format, HX_RESULT_INFERENCE_PERF);
	ck_assert_int_eq(rs.r[1].tp, 2);
	ck_assert_int_eq(rs.r[1].nst, 2);
	ck_assert(rs.r[1].st[0].rate_rps == 3 && rs.r[1].st[1].rate_rps == 6);
	ck_assert(rs.r[1].st[1].duration_s == 20);
	ck_assert(fabs(hx_dist_mean(&rs.r[1].w.prompt) / 900 - 1) < 0.1);
	/* short runs are simulated whole */
	ck_assert(rs.r[1].w.stages[1].duration_s == 20);
	ck_assert_int_gt(rs.r[1].trace.n, 100);
	hx_serv_runs_release(&rs);
}
END_TEST

/* Runs "measured" by the simulator with a slower host (iteration and
 * request overheads) are fitted back: the fitted constants reproduce the
 * figures, and the same fit twice gives the same constants. */
START_TEST(test_fits_its_own_runs)
{
	hx_serv_runs rs;
	hx_gpu truth = *hx_catalog_gpu(&cat, "h100-sxm");
	hx_servfit fit, again;
	hx_err err = {0};
	double e2e[4], ttft[4];

	ck_assert_msg(hx_serv_runs_load(&rs, hx_check_src("tests/data/serving/runs.json"), &cat,
					&err) == 0,
		      "%s", err.msg);
	truth.iter_overhead_ms *= 1.5;
	truth.request_overhead_ms += 15;
	for (int i = 0; i < rs.n; i++) {
		ck_assert(hx_serv_simulate(&rs.r[i], &truth, e2e, ttft, &err) == 0);
		for (int k = 0; k < rs.r[i].nst; k++) {
			rs.r[i].st[k].e2e_s = e2e[k];
			rs.r[i].st[k].ttft_s = ttft[k];
		}
	}
	ck_assert_msg(hx_servfit_run(&rs, hx_catalog_gpu(&cat, "h100-sxm"), NULL, &fit, &err) ==
			  0,
		      "%s", err.msg);
	ck_assert_int_eq(fit.stages, 3);
	ck_assert_int_eq(fit.nkeys, 6); /* tp 2 and no shared prefix */
	ck_assert_msg(fit.objective_after < 0.02 * fit.objective_before, "%g -> %g",
		      fit.objective_before, fit.objective_after);
	for (int i = 0; i < rs.n; i++) {
		ck_assert(hx_serv_simulate(&rs.r[i], &fit.fitted, e2e, ttft, &err) == 0);
		for (int k = 0; k < rs.r[i].nst; k++) {
			ck_assert_msg(fabs(e2e[k] / rs.r[i].st[k].e2e_s - 1) < 0.03,
				      "%s/%d e2e", rs.r[i].name, k);
			ck_assert_msg(fabs(ttft[k] / rs.r[i].st[k].ttft_s - 1) < 0.05,
				      "%s/%d ttft", rs.r[i].name, k);
		}
	}
	ck_assert(hx_servfit_run(&rs, hx_catalog_gpu(&cat, "h100-sxm"), NULL, &again, &err) ==
		  0);
	ck_assert(memcmp(&again.fitted, &fit.fitted, sizeof(fit.fitted)) == 0);
	hx_serv_runs_release(&rs);
}
END_TEST

/* The prior: on the same synthetic runs, a heavy prior keeps the catalog's
 * constants (the data's pull is outweighed) and a unit one stops between the
 * catalog's iteration overhead and the one that made the runs, fitting the
 * runs less closely than the plain least squares does. */
START_TEST(test_prior_pulls_to_catalog)
{
	hx_serv_runs rs;
	const hx_gpu *g = hx_catalog_gpu(&cat, "h100-sxm");
	hx_gpu truth = *g;
	hx_servfit plain, unit, heavy;
	hx_err err = {0};
	double e2e[4], ttft[4];

	ck_assert(hx_serv_runs_load(&rs, hx_check_src("tests/data/serving/runs.json"), &cat,
				    &err) == 0);
	truth.iter_overhead_ms *= 3;
	for (int i = 0; i < rs.n; i++) {
		ck_assert(hx_serv_simulate(&rs.r[i], &truth, e2e, ttft, &err) == 0);
		for (int k = 0; k < rs.r[i].nst; k++) {
			rs.r[i].st[k].e2e_s = e2e[k];
			rs.r[i].st[k].ttft_s = ttft[k];
		}
	}
	hx_servfit_opts o0 = {0, NULL, 0}, o1 = {1, NULL, 0}, o2 = {1e4, NULL, 0};

	ck_assert(hx_servfit_run(&rs, g, &o0, &plain, &err) == 0);
	ck_assert(hx_servfit_run(&rs, g, &o1, &unit, &err) == 0);
	ck_assert(hx_servfit_run(&rs, g, &o2, &heavy, &err) == 0);
	for (int k = 0; k < heavy.nkeys; k++) {
		double v = *hx_gpu_field(&heavy.fitted, heavy.keys[k]);
		double v0 = *hx_gpu_field((hx_gpu *)g, heavy.keys[k]);
		ck_assert_msg(fabs(v / v0 - 1) < 0.02, "%s %g vs %g", heavy.keys[k], v, v0);
	}
	ck_assert_msg(unit.fitted.iter_overhead_ms > g->iter_overhead_ms * 1.01 &&
			  unit.fitted.iter_overhead_ms < truth.iter_overhead_ms * 1.02,
		      "iteration overhead %g (catalog %g, truth %g)",
		      unit.fitted.iter_overhead_ms, g->iter_overhead_ms,
		      truth.iter_overhead_ms);
	/* The objective includes the prior: the plain fit's is the data's alone. */
	ck_assert(plain.objective_after <= unit.objective_after);
	hx_serv_runs_release(&rs);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("servfit");
	TCase *tc = tcase_create("servfit");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_reads_runs);
	tcase_add_test(tc, test_fits_its_own_runs);
	tcase_add_test(tc, test_prior_pulls_to_catalog);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run(suite());
}
