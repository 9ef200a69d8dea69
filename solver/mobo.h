/*
 * mobo: the multi-objective pieces of Bayesian optimization (--mode bo,
 * DESIGN §6).  Every objective is minimized; a front is an array of points
 * of M objectives (row-major), and volumes are taken against a reference
 * point R that every counted point must strictly dominate (points that do
 * not are ignored).
 *
 * Expected hypervolume improvement in two objectives is exact: with the
 * front's points inside R sorted by the first objective (y_1 .. y_n) and
 * sentinels y_0 = (-inf, r_2), y_{n+1} = (r_1, -inf), the improvement of a
 * point p splits over the strips [y_{i-1,1}, y_{i,1}) as
 *   I(p) = sum_i (max(0, y_{i,1} - max(p_1, y_{i-1,1}))) * max(0, y_{i-1,2} - p_2),
 * and with p_1, p_2 independent normals each factor's expectation has a
 * closed form: E[max(0, u - max(p_1, l))] = g(u) - g(l) and
 * E[max(0, h - p_2)] = g_2(h), where g(c) = E[max(0, c - p)] =
 * (c - mu) Phi(z) + sigma phi(z), z = (c - mu) / sigma.
 */
#ifndef HX_MOBO_H
#define HX_MOBO_H

#include "base/util.h"

/* Mark in KEEP[N] the points of P (N x M) that no other point dominates
 * (<= in every objective, < in one); of equal points the first is kept.
 * Returns how many are kept. */
int hx_mobo_pareto_mark(const double *p, int n, int m, int *keep);

/* Hypervolume dominated by the N points of P (N x 2 or N x 3) inside R. */
double hx_mobo_hv2(const double *p, int n, const double *r);
double hx_mobo_hv3(const double *p, int n, const double *r);

/* Exact expected hypervolume improvement over FRONT (N x 2) inside R of a
 * point whose objectives are independent normals MU[2], SIGMA[2] (sigma 0:
 * a known point). */
double hx_mobo_ehvi2(const double *front, int n, const double *r, const double *mu,
		     const double *sigma);

/* Expected improvement below BEST of a normal MU, SIGMA (minimization). */
double hx_mobo_ei(double mu, double sigma, double best);

/* Probability that a normal MU, SIGMA is at most LIMIT. */
double hx_mobo_pof(double mu, double sigma, double limit);

/* ParEGO's augmented Tchebycheff scalarization of F[M] (normalized to
 * [0, 1]) with weights W[M]: max_k w_k f_k + 0.05 sum_k w_k f_k. */
double hx_mobo_parego(const double *f, const double *w, int m);

/* Weights W[M] drawn uniformly from the simplex. */
void hx_mobo_simplex_weights(hx_rng *rng, int m, double *w);

#endif
