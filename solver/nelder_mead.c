/* nelder_mead: see nelder_mead.h. */
#include "config.h"

#include "solver/nelder_mead.h"

#include <math.h>
#include <string.h>

#define NM_MAX 16

double hx_nm_minimize(hx_nm_fn f, void *ctx, double *x, int n, double step, int max_evals,
		      double tol, int *evals)
{
	double s[NM_MAX + 1][NM_MAX], v[NM_MAX + 1], c[NM_MAX], xr[NM_MAX], xe[NM_MAX];
	int ne = 0, i, j;

	if (n < 1 || n > NM_MAX)
		return NAN;
	for (i = 0; i <= n; i++) {
		memcpy(s[i], x, sizeof(double) * (size_t)n);
		if (i > 0)
			s[i][i - 1] += step;
		v[i] = f(s[i], ctx);
		ne++;
	}
	while (ne < max_evals) {
		int lo = 0, hi = 0, nh = 0;
		double fr, fe;

		for (i = 1; i <= n; i++) {
			if (v[i] < v[lo])
				lo = i;
			if (v[i] > v[hi])
				hi = i;
		}
		nh = lo;
		for (i = 0; i <= n; i++)
			if (i != hi && v[i] >= v[nh])
				nh = i;
		if (fabs(v[hi] - v[lo]) <= tol * (fabs(v[lo]) + tol))
			break;
		for (j = 0; j < n; j++) {
			c[j] = 0;
			for (i = 0; i <= n; i++)
				if (i != hi)
					c[j] += s[i][j] / n;
		}
		for (j = 0; j < n; j++)
			xr[j] = c[j] + (c[j] - s[hi][j]);
		fr = f(xr, ctx);
		ne++;
		if (fr < v[lo]) {
			for (j = 0; j < n; j++)
				xe[j] = c[j] + 2 * (c[j] - s[hi][j]);
			fe = f(xe, ctx);
			ne++;
			if (fe < fr) {
				memcpy(s[hi], xe, sizeof(double) * (size_t)n);
				v[hi] = fe;
			} else {
				memcpy(s[hi], xr, sizeof(double) * (size_t)n);
				v[hi] = fr;
			}
		} else if (fr < v[nh]) {
			memcpy(s[hi], xr, sizeof(double) * (size_t)n);
			v[hi] = fr;
		} else {
			int outside = fr < v[hi];
			for (j = 0; j < n; j++)
				xr[j] = outside ? c[j] + 0.5 * (xr[j] - c[j])
						: c[j] + 0.5 * (s[hi][j] - c[j]);
			fe = f(xr, ctx);
			ne++;
			if (fe < (outside ? fr : v[hi])) {
				memcpy(s[hi], xr, sizeof(double) * (size_t)n);
				v[hi] = fe;
			} else {
				/* Shrink towards the best point. */
				for (i = 0; i <= n; i++) {
					if (i == lo)
						continue;
					for (j = 0; j < n; j++)
						s[i][j] = s[lo][j] + 0.5 * (s[i][j] - s[lo][j]);
					v[i] = f(s[i], ctx);
					ne++;
				}
			}
		}
	}
	j = 0;
	for (i = 1; i <= n; i++)
		if (v[i] < v[j])
			j = i;
	memcpy(x, s[j], sizeof(double) * (size_t)n);
	if (evals)
		*evals = ne;
	return v[j];
}
