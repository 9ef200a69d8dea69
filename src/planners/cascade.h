/* cascade and route: several models from a quality profile (cascade.c). */
#ifndef HX_PLANNERS_CASCADE_H
#define HX_PLANNERS_CASCADE_H

#include "planners/common.h"

/* cascade (Cascadia) and route: several models from the workload's quality
 * profile (quality.h), resolved in PB->cat; PB->model is ignored.  cascade searches
 * thresholds by a weighted Tchebycheff scalarization of (latency, quality)
 * under the quality floor, with a deployment MILP per candidate; route
 * splits the traffic by fraction among the models in one MILP.  Both
 * maximize capacity at the SLO (or minimize cost at the workload's rate). */
int hx_plan_cascade(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out, hx_err *err);
int hx_plan_route(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out, hx_err *err);
/* The cascade's deployment level alone, at thresholds THETA (nmodels - 1 of
 * them, 0-100): solver.objective is the MILP's optimum.  Each model's
 * candidates are priced on the requests that reach it with the TTFT budget
 * a = (TTFT SLO - (C - 1) * (p-th percentile output - 1) * TPOT SLO) / C. */
int hx_plan_cascade_at(const hx_problem *pb, const hx_plan_opts *o, const double *theta,
		       hx_plan *out, hx_err *err);
/* The same with every model that gets traffic held to an equal share of the
 * cluster's GPUs (floor(GPUs / models)): the even-split yardstick of
 * bench/cascade. */
int hx_plan_cascade_even(const hx_problem *pb, const hx_plan_opts *o, const double *theta,
			 hx_plan *out, hx_err *err);
#endif
