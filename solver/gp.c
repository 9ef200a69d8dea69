/* gp: see gp.h. */
#include "config.h"

#include "solver/gp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/nelder_mead.h"
#include "base/util.h"

/* LAPACK's Fortran entry points (liblapack). */
extern void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info);
extern void dpotrs_(const char *uplo, const int *n, const int *nrhs, const double *a,
		    const int *lda, double *b, const int *ldb, int *info);
extern void dtrtrs_(const char *uplo, const char *trans, const char *diag, const int *n,
		    const int *nrhs, const double *a, const int *lda, double *b, const int *ldb,
		    int *info);

#define SQRT5      2.23606797749978969641
#define LOG_LS_MIN (-4.6)  /* 0.01 */
#define LOG_LS_MAX (4.6)   /* 100 */
#define LOG_SN_MIN (-18.4) /* 1e-8 */
#define LOG_SN_MAX (0.0)

double hx_gp_kernel(const double *a, const double *b, int d, const double *ls, double sf2)
{
	double r2 = 0, r;
	for (int k = 0; k < d; k++) {
		double t = (a[k] - b[k]) / ls[k];
		r2 += t * t;
	}
	r = sqrt(r2);
	return sf2 * (1 + SQRT5 * r + 5.0 / 3.0 * r2) * exp(-SQRT5 * r);
}

/* Factor K (+ jitter) into L; *JITTER gets what was added.  0 or -1. */
static int factor(const double *x, int n, int d, const double *ls, double sf2, double sn2,
		  double *L, double *jitter)
{
	double jit = 0;
	for (int attempt = 0; attempt < 8; attempt++) {
		int info = 0;
		for (int j = 0; j < n; j++)
			for (int i = j; i < n; i++)
				L[(size_t)j * n + i] =
				    hx_gp_kernel(x + (size_t)i * d, x + (size_t)j * d, d, ls,
						 sf2) +
				    (i == j ? sn2 + jit : 0);
		dpotrf_("L", &n, L, &n, &info);
		if (info == 0) {
			for (int j = 0; j < n; j++) /* zero the upper part dpotrf leaves */
				for (int i = 0; i < j; i++)
					L[(size_t)j * n + i] = 0;
			*jitter = jit;
			return 0;
		}
		jit = jit == 0 ? 1e-10 * sf2 : jit * 10;
	}
	return -1;
}

/* Log marginal likelihood given the factor L of K and y; alpha = K^-1 y. */
static double lml_of(const double *L, const double *y, double *alpha, int n)
{
	int one = 1, info = 0;
	double q = 0, logdet = 0;
	memcpy(alpha, y, (size_t)n * sizeof(double));
	dpotrs_("L", &n, &one, L, &n, alpha, &n, &info);
	for (int i = 0; i < n; i++) {
		q += y[i] * alpha[i];
		logdet += log(L[(size_t)i * n + i]);
	}
	return -0.5 * q - logdet - 0.5 * n * log(2 * 3.14159265358979323846);
}

double hx_gp_log_likelihood(const double *x, const double *y, int n, int d, const double *ls,
			    double sf2, double sn2)
{
	double *L = hx_xmalloc((size_t)n * n * sizeof(double)),
	       *alpha = hx_xmalloc((size_t)n * sizeof(double));
	double jit, v = -INFINITY;
	if (factor(x, n, d, ls, sf2, sn2, L, &jit) == 0)
		v = lml_of(L, y, alpha, n);
	free(L);
	free(alpha);
	return v;
}

static int condition(hx_gp *gp)
{
	int n = gp->n;
	gp->L = hx_xmalloc((size_t)n * n * sizeof(double));
	gp->alpha = hx_xmalloc((size_t)n * sizeof(double));
	if (factor(gp->x, n, gp->d, gp->ls, gp->sf2, gp->sn2, gp->L, &gp->jitter)) {
		hx_gp_release(gp);
		return -1;
	}
	gp->lml = lml_of(gp->L, gp->y, gp->alpha, n);
	return 0;
}

/* Copy X and standardize Y into GP. */
static void load(hx_gp *gp, const double *x, const double *y, int n, int d)
{
	double m = 0, v = 0;
	memset(gp, 0, sizeof(*gp));
	gp->n = n;
	gp->d = d;
	gp->x = hx_xmalloc((size_t)n * d * sizeof(double));
	memcpy(gp->x, x, (size_t)n * d * sizeof(double));
	gp->y = hx_xmalloc((size_t)n * sizeof(double));
	for (int i = 0; i < n; i++)
		m += y[i];
	m /= n;
	for (int i = 0; i < n; i++)
		v += (y[i] - m) * (y[i] - m);
	v = n > 1 ? sqrt(v / n) : 0;
	gp->ymean = m;
	gp->ystd = v > 1e-12 ? v : 1;
	for (int i = 0; i < n; i++)
		gp->y[i] = (y[i] - m) / gp->ystd;
}

int hx_gp_set(hx_gp *gp, const double *x, const double *y, int n, int d, const double *ls,
	      double sf2, double sn2)
{
	load(gp, x, y, n, d);
	memcpy(gp->ls, ls, (size_t)d * sizeof(double));
	gp->sf2 = sf2;
	gp->sn2 = sn2;
	return condition(gp);
}

typedef struct nm_ctx {
	const hx_gp *gp;
	double *L, *alpha;
} nm_ctx;

/* Negative log marginal likelihood at log-parameters T (d length scales,
 * sf2, sn2), clamped to their box. */
static double neg_lml(const double *t, void *vctx)
{
	nm_ctx *c = vctx;
	const hx_gp *gp = c->gp;
	double ls[HX_GP_MAXD], jit, pen = 0;
	int d = gp->d;
	for (int k = 0; k < d; k++) {
		double v = fmin(fmax(t[k], LOG_LS_MIN), LOG_LS_MAX);
		pen += fabs(v - t[k]);
		ls[k] = exp(v);
	}
	double lsf = fmin(fmax(t[d], -4.6), 4.6),
	       lsn = fmin(fmax(t[d + 1], LOG_SN_MIN), LOG_SN_MAX);
	pen += fabs(lsf - t[d]) + fabs(lsn - t[d + 1]);
	if (factor(gp->x, gp->n, d, ls, exp(lsf), exp(lsn), c->L, &jit))
		return 1e30;
	return -lml_of(c->L, gp->y, c->alpha, gp->n) + 1e3 * pen;
}

int hx_gp_fit(hx_gp *gp, const double *x, const double *y, int n, int d, int restarts,
	      int max_evals, uint64_t seed)
{
	nm_ctx c;
	hx_rng rng;
	double best[HX_GP_MAXD + 2], bestv = INFINITY;
	load(gp, x, y, n, d);
	c.gp = gp;
	c.L = hx_xmalloc((size_t)n * n * sizeof(double));
	c.alpha = hx_xmalloc((size_t)n * sizeof(double));
	hx_rng_seed(&rng, seed);
	for (int r = 0; r <= restarts; r++) {
		double t[HX_GP_MAXD + 2], v;
		for (int k = 0; k < d; k++)
			t[k] = r == 0
				   ? log(0.5)
				   : log(0.05) + hx_rng_uniform(&rng) * (log(5.0) - log(0.05));
		t[d] = r == 0 ? 0 : -1 + 2 * hx_rng_uniform(&rng);
		t[d + 1] = r == 0 ? log(1e-4)
				  : log(1e-6) + hx_rng_uniform(&rng) * (log(1e-1) - log(1e-6));
		v = hx_nm_minimize(neg_lml, &c, t, d + 2, 0.5, max_evals, 1e-6, NULL);
		if (v < bestv) {
			bestv = v;
			memcpy(best, t, sizeof(t));
		}
	}
	free(c.L);
	free(c.alpha);
	for (int k = 0; k < d; k++)
		gp->ls[k] = exp(fmin(fmax(best[k], LOG_LS_MIN), LOG_LS_MAX));
	gp->sf2 = exp(fmin(fmax(best[d], -4.6), 4.6));
	gp->sn2 = exp(fmin(fmax(best[d + 1], LOG_SN_MIN), LOG_SN_MAX));
	return condition(gp);
}

void hx_gp_predict(const hx_gp *gp, const double *xs, double *mean, double *var)
{
	int n = gp->n, one = 1, info = 0;
	double *k = hx_xmalloc((size_t)n * sizeof(double)), m = 0, v;
	for (int i = 0; i < n; i++) {
		k[i] = hx_gp_kernel(xs, gp->x + (size_t)i * gp->d, gp->d, gp->ls, gp->sf2);
		m += k[i] * gp->alpha[i];
	}
	*mean = gp->ymean + gp->ystd * m;
	if (var) {
		dtrtrs_("L", "N", "N", &n, &one, gp->L, &n, k, &n, &info);
		v = gp->sf2;
		for (int i = 0; i < n; i++)
			v -= k[i] * k[i];
		*var = fmax(v, 0) * gp->ystd * gp->ystd;
	}
	free(k);
}

void hx_gp_release(hx_gp *gp)
{
	free(gp->x);
	free(gp->y);
	free(gp->L);
	free(gp->alpha);
	gp->x = gp->y = gp->L = gp->alpha = NULL;
	gp->n = 0;
}
