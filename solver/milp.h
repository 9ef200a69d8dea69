/*
 * milp: a thin, generic mixed-integer programming layer over GLPK (it knows
 * nothing of GPUs).  A model is built in plain arrays; each solve creates
 * its own GLPK problem and environment and frees them, so an internal GLPK
 * error (caught by glp_error_hook, which longjmps out and frees the
 * environment) never leaves state behind and never aborts the process.
 * GLPK's terminal output goes to stderr only when asked, never to stdout.
 * Searches are bounded by work (branch-and-bound nodes) so results are
 * deterministic; a time limit is a safety stop.  GLPK reports no bound
 * after glp_intopt, so the best bound is tracked in the branch-and-bound
 * callback.
 */
#ifndef HX_MILP_H
#define HX_MILP_H

#include "base/util.h"

typedef struct hx_milp hx_milp;

enum { HX_MILP_CONT, HX_MILP_INT, HX_MILP_BIN };

typedef enum hx_milp_status {
	HX_MILP_OPTIMAL,
	HX_MILP_GAP_LIMIT,  /* stopped at the requested relative gap */
	HX_MILP_WORK_LIMIT, /* stopped at the node limit, a solution in hand */
	HX_MILP_TIME_LIMIT, /* stopped at the time limit, a solution in hand */
	HX_MILP_INFEASIBLE,
	HX_MILP_UNBOUNDED,
	HX_MILP_NO_SOLUTION, /* a limit was reached before any solution */
	HX_MILP_ERROR
} hx_milp_status;

const char *hx_milp_status_name(hx_milp_status s);
/* A plan's solver.status (DESIGN §7) for a solve that has a solution:
 * optimal, gap_limit, work_limit or time_limit (work_limit for any other). */
const char *hx_milp_plan_status(hx_milp_status s);

/* A new empty model, maximizing when MAXIMIZE is set.  Free with
 * hx_milp_free. */
hx_milp *hx_milp_new(int maximize);
void hx_milp_free(hx_milp *m);

/* Add a variable of KIND with bounds [LO, HI] (+-INFINITY for none) and
 * objective coefficient OBJ; returns its index.  NAME is copied and made
 * legal for the CPLEX LP format. */
int hx_milp_add_var(hx_milp *m, const char *name, int kind, double lo, double hi, double obj);
/* Add the row LO <= sum VAL[i] x[IDX[i]] <= HI; returns its index. */
int hx_milp_add_row(hx_milp *m, const char *name, int n, const int *idx, const double *val,
		    double lo, double hi);
int hx_milp_nvars(const hx_milp *m);

typedef struct hx_milp_opts {
	double mip_gap;      /* relative gap to stop at (0: prove optimality) */
	long node_limit;     /* branch-and-bound nodes (0: 200000) */
	double time_limit_s; /* safety stop (0: none) */
	int verbose;         /* GLPK's messages to stderr */
	char **lp_text;      /* the model in CPLEX LP format, a new string in
			      * *lp_text (the old one freed): for --lp */
} hx_milp_opts;

typedef struct hx_milp_result {
	hx_milp_status status;
	double objective, bound, gap;
	long nodes, iterations;
	int retried; /* numerical trouble made the solve restart once */
	double *x;   /* values, hx_milp_nvars of them; caller frees */
} hx_milp_result;

/* Solve M.  Returns 0 with RES filled (check res->status: a solution is in
 * x when the status is optimal, gap_limit, work_limit or time_limit), or
 * HX_EINPUT with ERR when GLPK failed or the LP text could not be rendered. */
int hx_milp_solve(const hx_milp *m, const hx_milp_opts *o, hx_milp_result *res, hx_err *err);

/* For tests: make the next solve hit an internal GLPK error (an invalid
 * row index), to exercise the error hook. */
void hx_milp_force_error(hx_milp *m);
/* For tests: the first N solve attempts of M report numerical trouble
 * (GLP_EFAIL), as GLPK does on an unstable LP.  hx_milp_solve retries once
 * (the problem rescaled, an advanced basis, the dual simplex, no presolve),
 * so N = 1 still solves and N = 2 reports the trouble. */
void hx_milp_force_trouble(hx_milp *m, int n);

#endif
