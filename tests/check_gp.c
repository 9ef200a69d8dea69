/* Gaussian-process regression (solver/gp): a hand-checked case, and that
 * the posterior passes through its training points. */
#include "config.h"

#include <math.h>

#include "check_util.h"
#include "solver/gp.h"
#include "base/util.h"

/* Two points (0, 0) and (1, 1), ls 1, sf2 1, no noise.  Standardized
 * targets are -1 and 1 (mean 0.5, std 0.5); with rho = k(1) =
 * (1 + sqrt5 + 5/3) e^-sqrt5 = 0.5239941088 and k* = (k(|x|), k(|x - 1|)),
 * the mean is 0.5 + 0.5 k*^T K^-1 (-1, 1) and the variance
 * 0.25 (1 - k*^T K^-1 k*): at 0.5 by symmetry the mean is 0.5 and the
 * variance 0.25 (1 - 2 k(0.5)^2 / (1 + rho)) = 0.0247171734; at 2, with
 * k(2) = 0.1385..., the mean is 0.9047574797 and the variance
 * 0.1749918649 (worked in Python by the formulas above). */
START_TEST(test_hand_1d)
{
	double x[2] = {0, 1}, y[2] = {0, 1}, ls = 1, m, v, xs;
	hx_gp gp;
	ck_assert_int_eq(hx_gp_set(&gp, x, y, 2, 1, &ls, 1, 0), 0);
	ck_assert_double_eq_tol(hx_gp_kernel(&x[0], &x[1], 1, &ls, 1), 0.5239941088318203,
				1e-12);
	xs = 0.5;
	hx_gp_predict(&gp, &xs, &m, &v);
	ck_assert_double_eq_tol(m, 0.5, 1e-9);
	ck_assert_double_eq_tol(v, 0.024717173363407507, 1e-9);
	xs = 2;
	hx_gp_predict(&gp, &xs, &m, &v);
	ck_assert_double_eq_tol(m, 0.9047574797316658, 1e-9);
	ck_assert_double_eq_tol(v, 0.17499186490273977, 1e-9);
	/* far away: the prior (mean of the targets, their variance) */
	xs = 100;
	hx_gp_predict(&gp, &xs, &m, &v);
	ck_assert_double_eq_tol(m, 0.5, 1e-9);
	ck_assert_double_eq_tol(v, 0.25, 1e-9);
	hx_gp_release(&gp);
}
END_TEST

static double f2(const double *x)
{
	return sin(3 * x[0]) + 0.5 * cos(5 * x[1]) + x[0] * x[1];
}

START_TEST(test_interpolates)
{
	enum { N = 20, D = 2 };
	double x[N * D], y[N], ls[D] = {0.3, 0.3}, m, v, var_y = 0, mean_y = 0;
	hx_rng rng;
	hx_gp gp;
	hx_rng_seed(&rng, 7);
	for (int i = 0; i < N; i++) {
		x[i * D] = hx_rng_uniform(&rng);
		x[i * D + 1] = hx_rng_uniform(&rng);
		y[i] = f2(x + i * D);
		mean_y += y[i] / N;
	}
	for (int i = 0; i < N; i++)
		var_y += (y[i] - mean_y) * (y[i] - mean_y) / N;
	/* Fixed tiny noise: the mean passes through every point, the variance
	 * vanishes there. */
	ck_assert_int_eq(hx_gp_set(&gp, x, y, N, D, ls, 1, 1e-10), 0);
	for (int i = 0; i < N; i++) {
		hx_gp_predict(&gp, x + i * D, &m, &v);
		ck_assert_double_eq_tol(m, y[i], 1e-4);
		ck_assert_msg(v < 1e-6 * var_y, "variance %g at training point %d", v, i);
	}
	/* and is positive between them */
	{
		double mid[D] = {0.5 * (x[0] + x[2]), 0.5 * (x[1] + x[3])};
		hx_gp_predict(&gp, mid, &m, &v);
		ck_assert(v > 1e-8);
	}
	hx_gp_release(&gp);
	/* Fitted hyper-parameters: the likelihood is no worse than at the
	 * first start, and a noise-free smooth function is still interpolated
	 * (the fit keeps the noise small). */
	ck_assert_int_eq(hx_gp_fit(&gp, x, y, N, D, 3, 300, 1), 0);
	{
		double l0[D] = {0.5, 0.5};
		ck_assert(gp.lml >= hx_gp_log_likelihood(gp.x, gp.y, N, D, l0, 1, 1e-4) - 1e-9);
	}
	for (int i = 0; i < N; i++) {
		hx_gp_predict(&gp, x + i * D, &m, &v);
		ck_assert_msg(fabs(m - y[i]) < 1e-2 * sqrt(var_y), "mean %g vs %g at %d", m,
			      y[i], i);
		ck_assert_msg(v < 1e-2 * var_y, "variance %g at training point %d", v, i);
	}
	/* held-out points: the fit predicts the function */
	{
		double err = 0;
		for (int i = 0; i < 50; i++) {
			double p[D] = {hx_rng_uniform(&rng), hx_rng_uniform(&rng)};
			hx_gp_predict(&gp, p, &m, &v);
			err += (m - f2(p)) * (m - f2(p)) / 50;
		}
		ck_assert_msg(err < 0.1 * var_y, "held-out MSE %g vs variance %g", err, var_y);
	}
	hx_gp_release(&gp);
}
END_TEST

/* Repeated points without noise make K singular: jitter factors it. */
START_TEST(test_jitter)
{
	double x[3] = {0.2, 0.2, 0.7}, y[3] = {1, 1, 2}, ls = 0.5, m, v;
	hx_gp gp;
	ck_assert_int_eq(hx_gp_set(&gp, x, y, 3, 1, &ls, 1, 0), 0);
	ck_assert(gp.jitter > 0);
	hx_gp_predict(&gp, &x[0], &m, &v);
	ck_assert_double_eq_tol(m, 1, 1e-3);
	hx_gp_release(&gp);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("gp");
	TCase *tc = tcase_create("gp");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_hand_1d);
	tcase_add_test(tc, test_interpolates);
	tcase_add_test(tc, test_jitter);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run(suite());
}
