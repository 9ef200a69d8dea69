/* dist: prompt and output length distributions (problem.h). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonio.h"
#include "model/problem.h"

/* ---- length distributions ---------------------------------------------- */

double hx_dist_mean(const hx_dist *d)
{
	if (d->kind == HX_DIST_LOGNORMAL) {
		/* E[min(X, max)] of a lognormal capped at max. */
		double s = d->sigma, lm = log(d->max);
		if (s < 1e-12)
			return fmin(d->p50, d->max);
		return exp(d->mu + s * s / 2) * hx_norm_cdf((lm - d->mu - s * s) / s) +
		       d->max * (1 - hx_norm_cdf((lm - d->mu) / s));
	}
	double m = 0;
	for (int i = 0; i < d->nb; i++)
		m += d->tokens[i] * d->weight[i];
	return m;
}

double hx_dist_quantile(const hx_dist *d, double q)
{
	if (d->kind == HX_DIST_LOGNORMAL)
		return fmin(exp(d->mu + d->sigma * hx_norm_quantile(q)), d->max);
	if (d->cum) {
		/* The first bucket whose cumulative weight reaches q: the sums are
		 * the linear scan's, and nondecreasing, so the bucket is its. */
		int lo = 0, hi = d->nb;
		while (lo < hi) {
			int mid = lo + (hi - lo) / 2;
			if (d->cum[mid] >= q - 1e-12)
				hi = mid;
			else
				lo = mid + 1;
		}
		return d->tokens[lo < d->nb ? lo : d->nb - 1];
	}
	double acc = 0;
	for (int i = 0; i < d->nb; i++) {
		acc += d->weight[i];
		if (acc >= q - 1e-12)
			return d->tokens[i];
	}
	return d->tokens[d->nb - 1];
}

double hx_dist_sample(const hx_dist *d, hx_rng *r)
{
	double u = hx_rng_uniform(r);

	if (d->kind == HX_DIST_LOGNORMAL) {
		double x = floor(exp(d->mu + d->sigma * hx_norm_quantile(u)) + 0.5);
		return fmax(1, fmin(x, d->max));
	}
	return hx_dist_quantile(d, u);
}

double hx_dist_cv2(const hx_dist *d)
{
	double m, m2 = 0;

	if (d->kind == HX_DIST_LOGNORMAL)
		return exp(d->sigma * d->sigma) - 1;
	m = hx_dist_mean(d);
	for (int i = 0; i < d->nb; i++)
		m2 += d->tokens[i] * d->tokens[i] * d->weight[i];
	return m > 0 ? m2 / (m * m) - 1 : 0;
}

void hx_dist_release(hx_dist *d)
{
	free(d->tokens);
	free(d->weight);
	free(d->cum);
	d->tokens = d->weight = d->cum = NULL;
	d->nb = 0;
}

void hx_dist_index(hx_dist *d)
{
	double acc = 0;

	free(d->cum);
	d->cum = NULL;
	if (d->kind != HX_DIST_BUCKETS || d->nb <= 0)
		return;
	d->cum = hx_xmalloc((size_t)d->nb * sizeof(double));
	for (int i = 0; i < d->nb; i++)
		d->cum[i] = acc += d->weight[i];
}

static int cmp_tw(const void *a, const void *b)
{
	const hx_tw *x = a, *y = b;
	return (x->t > y->t) - (x->t < y->t);
}

/* Turn N (tokens, weight) pairs into a normalized, sorted, merged bucket
 * distribution.  Takes ownership of P. */
void hx_dist_from_pairs(hx_dist *d, hx_tw *p, int n)
{
	double total = 0;
	int k = 0;

	qsort(p, (size_t)n, sizeof(*p), cmp_tw);
	d->kind = HX_DIST_BUCKETS;
	d->tokens = hx_xmalloc((size_t)n * sizeof(double));
	d->weight = hx_xmalloc((size_t)n * sizeof(double));
	for (int i = 0; i < n; i++) {
		total += p[i].w;
		if (k > 0 && d->tokens[k - 1] == p[i].t) {
			d->weight[k - 1] += p[i].w;
			continue;
		}
		d->tokens[k] = p[i].t;
		d->weight[k++] = p[i].w;
	}
	for (int i = 0; i < k; i++)
		d->weight[i] /= total;
	d->nb = k;
	d->cum = NULL;
	hx_dist_index(d);
	d->max = d->tokens[k - 1];
	d->p50 = hx_dist_quantile(d, 0.5);
	d->mean = hx_dist_mean(d);
	free(p);
}
