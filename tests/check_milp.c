/* Check suite: the GLPK wrapper against brute force, its statuses, its
 * error hook. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "solver/milp.h"
#include "check_util.h"

/* Random small knapsacks with 2 resources and integer counts: the MILP's
 * optimum equals exhaustive search. */
START_TEST(test_brute_force)
{
	hx_rng r;
	hx_rng_seed(&r, 42);
	for (int trial = 0; trial < 40; trial++) {
		int n = 2 + (int)(hx_rng_uniform(&r) * 3), cap[2], use[5][2], ub[5];
		double val[5], best = 0;
		hx_milp *m = hx_milp_new(1);
		hx_milp_result res;
		hx_err err = {0};
		int idx[5], x[5] = {0};
		double coef[5];

		cap[0] = 4 + (int)(hx_rng_uniform(&r) * 12);
		cap[1] = 4 + (int)(hx_rng_uniform(&r) * 12);
		for (int i = 0; i < n; i++) {
			use[i][0] = 1 + (int)(hx_rng_uniform(&r) * 4);
			use[i][1] = (int)(hx_rng_uniform(&r) * 4);
			val[i] = floor(hx_rng_uniform(&r) * 1000) / 100;
			ub[i] = cap[0] / use[i][0];
			hx_milp_add_var(m, "n", HX_MILP_INT, 0, ub[i], val[i]);
		}
		for (int k = 0; k < 2; k++) {
			for (int i = 0; i < n; i++) {
				idx[i] = i;
				coef[i] = use[i][k];
			}
			hx_milp_add_row(m, "cap", n, idx, coef, -INFINITY, cap[k]);
		}
		/* exhaustive */
		for (;;) {
			int u0 = 0, u1 = 0, i;
			double v = 0;
			for (i = 0; i < n; i++) {
				u0 += x[i] * use[i][0];
				u1 += x[i] * use[i][1];
				v += x[i] * val[i];
			}
			if (u0 <= cap[0] && u1 <= cap[1] && v > best)
				best = v;
			for (i = 0; i < n && ++x[i] > ub[i]; i++)
				x[i] = 0;
			if (i == n)
				break;
		}
		ck_assert(hx_milp_solve(m, NULL, &res, &err) == 0);
		ck_assert_int_eq(res.status, HX_MILP_OPTIMAL);
		ck_assert_msg(fabs(res.objective - best) < 1e-6, "trial %d: %g vs %g", trial,
			      res.objective, best);
		ck_assert(fabs(res.bound - res.objective) < 1e-9 && res.gap < 1e-9);
		free(res.x);
		hx_milp_free(m);
	}
}
END_TEST

START_TEST(test_infeasible_unbounded)
{
	hx_milp *m = hx_milp_new(0);
	hx_milp_result res;
	hx_err err = {0};
	int i0 = 0;
	double one = 1;

	hx_milp_add_var(m, "x", HX_MILP_INT, 0, 3, 1);
	hx_milp_add_row(m, "need", 1, &i0, &one, 5, INFINITY);
	ck_assert(hx_milp_solve(m, NULL, &res, &err) == 0);
	ck_assert_int_eq(res.status, HX_MILP_INFEASIBLE);
	free(res.x);
	hx_milp_free(m);

	m = hx_milp_new(1);
	hx_milp_add_var(m, "y", HX_MILP_CONT, 0, INFINITY, 1);
	ck_assert(hx_milp_solve(m, NULL, &res, &err) == 0);
	ck_assert(res.status == HX_MILP_UNBOUNDED || res.status == HX_MILP_ERROR ||
		  res.status == HX_MILP_NO_SOLUTION);
	free(res.x);
	hx_milp_free(m);
}
END_TEST

/* An internal GLPK error becomes an error status; the process lives on and
 * the next solve works. */
START_TEST(test_error_hook)
{
	hx_milp *m = hx_milp_new(1);
	hx_milp_result res;
	hx_err err = {0};
	int i0 = 0;
	double one = 1;

	hx_milp_add_var(m, "x", HX_MILP_INT, 0, 3, 1);
	hx_milp_add_row(m, "r", 1, &i0, &one, -INFINITY, 2);
	hx_milp_force_error(m);
	ck_assert_int_eq(hx_milp_solve(m, NULL, &res, &err), HX_EINPUT);
	ck_assert_int_eq(res.status, HX_MILP_ERROR);
	ck_assert(strstr(err.msg, "internal GLPK error") != NULL);
	free(res.x);
	hx_milp_free(m);

	m = hx_milp_new(1);
	hx_milp_add_var(m, "x", HX_MILP_INT, 0, 3, 1);
	hx_milp_add_row(m, "r", 1, &i0, &one, -INFINITY, 2);
	ck_assert(hx_milp_solve(m, NULL, &res, &err) == 0);
	ck_assert_int_eq(res.status, HX_MILP_OPTIMAL);
	ck_assert(fabs(res.objective - 2) < 1e-9);
	free(res.x);
	hx_milp_free(m);
}
END_TEST

/* Numerical trouble (GLP_EFAIL) is retried once from a scaled start without
 * presolve; trouble that persists is an error that says so. */
START_TEST(test_numerical_trouble)
{
	hx_milp_result res;
	hx_err err = {0};
	int idx[2] = {0, 1};
	double a[2] = {3, 2};

	for (int n = 1; n <= 2; n++) {
		hx_milp *m = hx_milp_new(1);
		hx_milp_add_var(m, "x", HX_MILP_INT, 0, 10, 2);
		hx_milp_add_var(m, "y", HX_MILP_CONT, 0, 10, 1);
		hx_milp_add_row(m, "r", 2, idx, a, -INFINITY, 12.5);
		hx_milp_force_trouble(m, n);
		if (n == 1) {
			ck_assert_int_eq(hx_milp_solve(m, NULL, &res, &err), 0);
			ck_assert_int_eq(res.status, HX_MILP_OPTIMAL);
			ck_assert_int_eq(res.retried, 1);
			/* max 2x + y, 3x + 2y <= 12.5: x = 4, y = 0.25 */
			ck_assert(fabs(res.objective - 8.25) < 1e-9);
			ck_assert(fabs(res.x[0] - 4) < 1e-9);
		} else {
			ck_assert_int_eq(hx_milp_solve(m, NULL, &res, &err), HX_EINPUT);
			ck_assert_int_eq(res.status, HX_MILP_ERROR);
			ck_assert_msg(strstr(err.msg, "numerical trouble") != NULL, "%s",
				      err.msg);
		}
		free(res.x);
		hx_milp_free(m);
	}
}
END_TEST

/* The LP text keeps the objective sense and legal names, and no
 * temporary file is left. */
START_TEST(test_lp_file)
{
	char *text = NULL;
	hx_milp *m = hx_milp_new(1);
	hx_milp_opts o = {0, 0, 0, 0, &text};
	hx_milp_result res;
	hx_err err = {0};

	hx_milp_add_var(m, "n:h100 tp4", HX_MILP_INT, 0, 5, 2.5);
	{
		int i0 = 0;
		double two = 2;
		hx_milp_add_row(m, "gpus h100", 1, &i0, &two, -INFINITY, 8);
	}
	ck_assert(hx_milp_solve(m, &o, &res, &err) == 0);
	ck_assert(text != NULL);
	ck_assert(strstr(text, "Maximize") != NULL);
	ck_assert(strstr(text, "n_h100_tp4") != NULL);
	ck_assert(strstr(text, "n:h100") == NULL);
	free(text);
	free(res.x);
	hx_milp_free(m);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("milp");
	TCase *tc = tcase_create("milp");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_brute_force);
	tcase_add_test(tc, test_numerical_trouble);
	tcase_add_test(tc, test_infeasible_unbounded);
	tcase_add_test(tc, test_error_hook);
	tcase_add_test(tc, test_lp_file);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run(suite());
}
