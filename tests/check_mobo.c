/* Multi-objective pieces (solver/mobo): hypervolumes of hand-made fronts,
 * the exact EHVI against Monte Carlo, dominance. */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "check_util.h"
#include "solver/mobo.h"

START_TEST(test_hv2)
{
	double f[] = {1, 3, 2, 2, 3, 1}, r[] = {4, 4};
	/* staircase: 3 x 1 + 2 x 1 + 1 x 1 */
	ck_assert_double_eq_tol(hx_mobo_hv2(f, 3, r), 6, 1e-12);
	/* a dominated point and one outside R change nothing */
	{
		double g[] = {3, 1, 1, 3, 2.5, 2.5, 2, 2, 0, 5};
		ck_assert_double_eq_tol(hx_mobo_hv2(g, 5, r), 6, 1e-12);
	}
	ck_assert_double_eq(hx_mobo_hv2(f, 0, r), 0);
}
END_TEST

START_TEST(test_hv3)
{
	double a[] = {1, 1, 1}, ra[] = {2, 3, 4};
	double b[] = {0, 0, 1, 1, 1, 0}, rb[] = {2, 2, 2};
	ck_assert_double_eq_tol(hx_mobo_hv3(a, 1, ra), 6, 1e-12);
	/* 2 x 2 x 1 + 1 x 1 x 2 - overlap 1 x 1 x 1 */
	ck_assert_double_eq_tol(hx_mobo_hv3(b, 2, rb), 5, 1e-12);
	/* all on one level: the 2-D volume times the depth */
	{
		double c[] = {1, 3, 0.5, 2, 2, 0.5, 3, 1, 0.5}, c2[] = {1, 3, 2, 2, 3, 1};
		double r3[] = {4, 4, 2}, r2[] = {4, 4};
		ck_assert_double_eq_tol(hx_mobo_hv3(c, 3, r3), 1.5 * hx_mobo_hv2(c2, 3, r2),
					1e-12);
	}
	/* random fronts against a Monte-Carlo count */
	{
		hx_rng rng;
		double p[8 * 3], r[3] = {1, 1, 1};
		int hit = 0, n = 200000;
		hx_rng_seed(&rng, 3);
		for (int i = 0; i < 8 * 3; i++)
			p[i] = hx_rng_uniform(&rng);
		for (int s = 0; s < n; s++) {
			double z[3] = {hx_rng_uniform(&rng), hx_rng_uniform(&rng),
				       hx_rng_uniform(&rng)};
			for (int i = 0; i < 8; i++)
				if (p[3 * i] <= z[0] && p[3 * i + 1] <= z[1] &&
				    p[3 * i + 2] <= z[2]) {
					hit++;
					break;
				}
		}
		ck_assert_double_eq_tol(hx_mobo_hv3(p, 8, r), (double)hit / n, 4e-3);
	}
}
END_TEST

START_TEST(test_pareto)
{
	double p[] = {1, 3, 2, 2, 2.5, 2.5, 3, 1, 2, 2, 4, 0.5};
	int keep[6], want[6] = {1, 1, 0, 1, 0, 1};
	ck_assert_int_eq(hx_mobo_pareto_mark(p, 6, 2, keep), 4);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(keep[i], want[i]);
}
END_TEST

START_TEST(test_ehvi_dominated)
{
	double f[] = {1, 3, 2, 2, 3, 1}, r[] = {4, 4};
	double mu[2] = {2.5, 2.5}, s0[2] = {0, 0};
	ck_assert_double_eq(hx_mobo_ehvi2(f, 3, r, mu, s0), 0);
	/* outside R */
	mu[0] = 5;
	mu[1] = 0;
	ck_assert_double_eq(hx_mobo_ehvi2(f, 3, r, mu, s0), 0);
	/* a known point: its exact improvement */
	{
		double g[] = {1, 3, 2, 2, 3, 1, 1.5, 1.5};
		mu[0] = mu[1] = 1.5;
		ck_assert_double_eq_tol(hx_mobo_ehvi2(f, 3, r, mu, s0),
					hx_mobo_hv2(g, 4, r) - hx_mobo_hv2(f, 3, r), 1e-12);
		/* [1.5, 4]^2 is 6.25, of which the front held 0.5 + 2 + 2.5 */
		ck_assert_double_eq_tol(hx_mobo_hv2(g, 4, r) - hx_mobo_hv2(f, 3, r), 1.25,
					1e-12);
	}
}
END_TEST

/* EHVI equals the mean improvement over normal draws (within 4 standard
 * errors) on random fronts and predictive distributions. */
START_TEST(test_ehvi_monte_carlo)
{
	hx_rng rng;
	hx_rng_seed(&rng, 11);
	for (int trial = 0; trial < 20; trial++) {
		int n = 1 + (int)(hx_rng_uniform(&rng) * 8), ns = 40000;
		double f[10 * 2], g[11 * 2], r[2] = {1, 1}, mu[2], sd[2], base, s = 0, s2 = 0,
					     e, se;
		for (int i = 0; i < 2 * n; i++)
			f[i] = hx_rng_uniform(&rng);
		mu[0] = hx_rng_uniform(&rng);
		mu[1] = hx_rng_uniform(&rng);
		sd[0] = 0.02 + 0.3 * hx_rng_uniform(&rng);
		sd[1] = 0.02 + 0.3 * hx_rng_uniform(&rng);
		base = hx_mobo_hv2(f, n, r);
		for (int i = 0; i < 2 * n; i++)
			g[i] = f[i];
		for (int k = 0; k < ns; k++) {
			double imp;
			g[2 * n] = mu[0] + sd[0] * hx_rng_normal(&rng);
			g[2 * n + 1] = mu[1] + sd[1] * hx_rng_normal(&rng);
			imp = hx_mobo_hv2(g, n + 1, r) - base;
			s += imp;
			s2 += imp * imp;
		}
		e = hx_mobo_ehvi2(f, n, r, mu, sd);
		se = sqrt(fmax(s2 / ns - (s / ns) * (s / ns), 0) / ns);
		ck_assert_msg(fabs(e - s / ns) <= 4 * se + 1e-6,
			      "trial %d: EHVI %g, Monte Carlo %g (se %g)", trial, e, s / ns,
			      se);
	}
}
END_TEST

START_TEST(test_scalars)
{
	double f[3] = {0.2, 0.5, 0.1}, w[3] = {0.5, 0.25, 0.25};
	hx_rng rng;
	ck_assert_double_eq_tol(hx_mobo_parego(f, w, 3), 0.125 + 0.05 * (0.1 + 0.125 + 0.025),
				1e-12);
	ck_assert_double_eq(hx_mobo_pof(1, 0, 2), 1);
	ck_assert_double_eq(hx_mobo_pof(3, 0, 2), 0);
	ck_assert_double_eq_tol(hx_mobo_pof(2, 1, 2), 0.5, 1e-9);
	ck_assert_double_eq_tol(hx_mobo_ei(0, 1, 0), 0.3989422804014327, 1e-9);
	ck_assert_double_eq(hx_mobo_ei(3, 0, 1), 0);
	hx_rng_seed(&rng, 5);
	for (int i = 0; i < 100; i++) {
		double s = 0;
		hx_mobo_simplex_weights(&rng, 3, w);
		for (int k = 0; k < 3; k++) {
			ck_assert(w[k] >= 0);
			s += w[k];
		}
		ck_assert_double_eq_tol(s, 1, 1e-12);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mobo");
	TCase *tc = tcase_create("mobo");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_hv2);
	tcase_add_test(tc, test_hv3);
	tcase_add_test(tc, test_pareto);
	tcase_add_test(tc, test_ehvi_dominated);
	tcase_add_test(tc, test_ehvi_monte_carlo);
	tcase_add_test(tc, test_scalars);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run(suite());
}
