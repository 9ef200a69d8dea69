/* mobo: see mobo.h. */
#include "config.h"

#include "solver/mobo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int dominates(const double *a, const double *b, int m)
{
	int strict = 0;
	for (int k = 0; k < m; k++) {
		if (a[k] > b[k])
			return 0;
		strict |= a[k] < b[k];
	}
	return strict;
}

int hx_mobo_pareto_mark(const double *p, int n, int m, int *keep)
{
	int kept = 0;
	for (int i = 0; i < n; i++) {
		keep[i] = 1;
		for (int j = 0; j < n && keep[i]; j++) {
			if (j == i)
				continue;
			if (dominates(p + (size_t)j * m, p + (size_t)i * m, m) ||
			    (j < i && memcmp(p + (size_t)j * m, p + (size_t)i * m,
					     (size_t)m * sizeof(double)) == 0))
				keep[i] = 0;
		}
		kept += keep[i];
	}
	return kept;
}

static int cmp_first(const void *a, const void *b)
{
	const double *x = a, *y = b;
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* The points of P (N x M) inside R, their first two objectives (and the
 * third when M is 3) copied into a new array; *K gets their count. */
static double *inside(const double *p, int n, int m, const double *r, int *k)
{
	double *q = hx_xmalloc((size_t)(n + 1) * (size_t)m * sizeof(double));
	*k = 0;
	for (int i = 0; i < n; i++) {
		int in = 1;
		for (int j = 0; j < m; j++)
			in &= p[(size_t)i * m + j] < r[j];
		if (in)
			memcpy(q + (size_t)(*k)++ * m, p + (size_t)i * m,
			       (size_t)m * sizeof(double));
	}
	return q;
}

/* 2-D volume of the sorted points Q (K x 2, stride STRIDE) inside R. */
static double hv2_sorted(const double *q, int k, int stride, const double *r)
{
	double v = 0, top = r[1];
	for (int i = 0; i < k; i++) {
		const double *a = q + (size_t)i * stride;
		if (a[1] < top) {
			v += (r[0] - a[0]) * (top - a[1]);
			top = a[1];
		}
	}
	return v;
}

double hx_mobo_hv2(const double *p, int n, const double *r)
{
	int k;
	double *q = inside(p, n, 2, r, &k), v;
	qsort(q, (size_t)k, 2 * sizeof(double), cmp_first);
	v = hv2_sorted(q, k, 2, r);
	free(q);
	return v;
}

static int cmp_third(const void *a, const void *b)
{
	const double *x = a, *y = b;
	return x[2] < y[2] ? -1 : x[2] > y[2];
}

double hx_mobo_hv3(const double *p, int n, const double *r)
{
	int k;
	double *q = inside(p, n, 3, r, &k), *s, v = 0;
	/* Slices along the third objective: between consecutive levels the
	 * dominated region's cross-section is the 2-D volume of the points
	 * at or below the level. */
	qsort(q, (size_t)k, 3 * sizeof(double), cmp_third);
	s = hx_xmalloc((size_t)(k + 1) * 3 * sizeof(double));
	for (int i = 0; i < k; i++) {
		double z1 = i + 1 < k ? q[(size_t)(i + 1) * 3 + 2] : r[2];
		memcpy(s, q, (size_t)(i + 1) * 3 * sizeof(double));
		if (z1 <= q[(size_t)i * 3 + 2])
			continue;
		qsort(s, (size_t)(i + 1), 3 * sizeof(double), cmp_first);
		v += hv2_sorted(s, i + 1, 3, r) * (z1 - q[(size_t)i * 3 + 2]);
	}
	free(s);
	free(q);
	return v;
}

/* E[max(0, c - p)] for p ~ N(mu, sigma). */
static double g(double c, double mu, double sigma)
{
	double z;
	if (isinf(c))
		return c > 0 ? INFINITY : 0;
	if (sigma <= 0)
		return fmax(c - mu, 0);
	z = (c - mu) / sigma;
	return (c - mu) * hx_norm_cdf(z) + sigma * exp(-0.5 * z * z) / 2.50662827463100050242;
}

double hx_mobo_ehvi2(const double *front, int n, const double *r, const double *mu,
		     const double *sigma)
{
	int k, *keep;
	double *q = inside(front, n, 2, r, &k), *f, v = 0;
	keep = hx_xmalloc((size_t)(k + 1) * sizeof(int));
	/* Only the non-dominated points bound the strips. */
	hx_mobo_pareto_mark(q, k, 2, keep);
	f = hx_xmalloc((size_t)(k + 1) * 2 * sizeof(double));
	{
		int j = 0;
		for (int i = 0; i < k; i++)
			if (keep[i]) {
				f[2 * j] = q[2 * i];
				f[2 * j + 1] = q[2 * i + 1];
				j++;
			}
		k = j;
	}
	qsort(f, (size_t)k, 2 * sizeof(double), cmp_first);
	for (int i = 1; i <= k + 1; i++) {
		double l = i == 1 ? -INFINITY : f[2 * (i - 2)];
		double u = i == k + 1 ? r[0] : f[2 * (i - 1)];
		double h = i == 1 ? r[1] : f[2 * (i - 2) + 1];
		double a = g(u, mu[0], sigma[0]) - g(l, mu[0], sigma[0]);
		v += fmax(a, 0) * g(h, mu[1], sigma[1]);
	}
	free(f);
	free(keep);
	free(q);
	return v;
}

double hx_mobo_ei(double mu, double sigma, double best)
{
	return g(best, mu, sigma);
}

double hx_mobo_pof(double mu, double sigma, double limit)
{
	if (sigma <= 0)
		return mu <= limit ? 1 : 0;
	return hx_norm_cdf((limit - mu) / sigma);
}

double hx_mobo_parego(const double *f, const double *w, int m)
{
	double mx = -INFINITY, s = 0;
	for (int k = 0; k < m; k++) {
		mx = fmax(mx, w[k] * f[k]);
		s += w[k] * f[k];
	}
	return mx + 0.05 * s;
}

void hx_mobo_simplex_weights(hx_rng *rng, int m, double *w)
{
	/* Exponential spacings normalized: uniform on the simplex. */
	double s = 0;
	for (int k = 0; k < m; k++)
		s += w[k] = -log(hx_rng_uniform(rng));
	for (int k = 0; k < m; k++)
		w[k] /= s;
}
