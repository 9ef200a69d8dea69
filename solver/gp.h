/*
 * gp: Gaussian-process regression for the surrogates of --mode bo (DESIGN
 * §6).  A zero-mean GP on the standardized targets with a Matérn 5/2
 * kernel and one length scale per input dimension,
 *   k(x, x') = sf2 (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r),
 *   r^2 = sum_k ((x_k - x'_k) / ls_k)^2,
 * plus noise sn2 on the diagonal.  Hyper-parameters are fitted by
 * maximizing the log marginal likelihood (Nelder-Mead in log space, from a
 * fixed start and a few seeded restarts).  The linear algebra is LAPACK's
 * (Cholesky dpotrf, solves dpotrs/dtrtrs); a factorization that fails gets
 * jitter on the diagonal, growing tenfold until it succeeds.
 */
#ifndef HX_GP_H
#define HX_GP_H

#include <stdint.h>

#define HX_GP_MAXD 14

typedef struct hx_gp {
	int n, d;
	double *x;                       /* n * d, row-major */
	double *y;                       /* n, standardized */
	double ymean, ystd;              /* of the raw targets */
	double ls[HX_GP_MAXD], sf2, sn2; /* kernel on the standardized targets */
	double jitter;                   /* added to the diagonal to factor it */
	double *L;                       /* n * n Cholesky factor (column-major, lower) */
	double *alpha;                   /* K^-1 y */
	double lml;                      /* log marginal likelihood at the hyper-parameters */
} hx_gp;

/* Condition GP on X (N points of D dimensions, D <= HX_GP_MAXD) and targets
 * Y with the given hyper-parameters (LS: D length scales; SF2, SN2 in
 * standardized units).  Copies what it keeps; release with hx_gp_release.
 * Returns 0, or -1 when the kernel matrix cannot be factored even with
 * jitter (GP is then empty). */
int hx_gp_set(hx_gp *gp, const double *x, const double *y, int n, int d, const double *ls,
	      double sf2, double sn2);

/* The same with hyper-parameters that maximize the log marginal likelihood:
 * Nelder-Mead from ls = 0.5, sf2 = 1, sn2 = 1e-4 and RESTARTS more starts
 * drawn from SEED, each with at most MAX_EVALS evaluations. */
int hx_gp_fit(hx_gp *gp, const double *x, const double *y, int n, int d, int restarts,
	      int max_evals, uint64_t seed);

/* Predictive mean and variance of the latent function at XS (D values),
 * in the targets' units; VAR may be NULL. */
void hx_gp_predict(const hx_gp *gp, const double *xs, double *mean, double *var);

/* Log marginal likelihood of standardized targets under the
 * hyper-parameters (the same arguments as hx_gp_set); -INFINITY when the
 * matrix cannot be factored. */
double hx_gp_log_likelihood(const double *x, const double *y, int n, int d, const double *ls,
			    double sf2, double sn2);

void hx_gp_release(hx_gp *gp);

/* The Matérn 5/2 kernel between A and B (D values). */
double hx_gp_kernel(const double *a, const double *b, int d, const double *ls, double sf2);

#endif
