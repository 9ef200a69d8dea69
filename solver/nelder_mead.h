/*
 * nelder_mead: derivative-free minimization of a function of a few
 * unconstrained variables (Nelder and Mead's simplex method with the
 * standard coefficients).  Deterministic: no random restarts.
 */
#ifndef HX_NELDER_MEAD_H
#define HX_NELDER_MEAD_H

typedef double (*hx_nm_fn)(const double *x, void *ctx);

/* Minimize F from X[N] (at most 16 variables), the initial simplex
 * stepping STEP along each axis.  Stops after MAX_EVALS evaluations or when
 * the simplex's values differ by less than TOL.  X gets the best point;
 * returns its value.  *EVALS (may be NULL) gets the evaluations used. */
double hx_nm_minimize(hx_nm_fn f, void *ctx, double *x, int n, double step, int max_evals,
		      double tol, int *evals);

#endif
