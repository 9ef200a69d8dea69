/*
 * planners: every mode turns the same problem into the same struct plan
 * (plan.h).  plan_<mode>.c holds one mode; the helpers here are what all of
 * them share: the problem they read, the shape of a replica on concrete
 * GPUs, and the predictions and digests every plan carries.
 */
#ifndef HX_PLANNERS_H
#define HX_PLANNERS_H

#include <stdint.h>

#include "model/catalog.h"
#include "plan/plan.h"
#include "model/problem.h"

typedef struct hx_problem {
	const hx_catalog *cat;
	const hx_cluster *cluster;
	const hx_workload *workload;
	const hx_model *model;
	uint64_t seed;
	const char *cluster_path, *workload_path, *calibration_path; /* for digests */
} hx_problem;

/* baseline: what an operator does by hand (DESIGN §6).  Exit-3 problems
 * (the model fits on no node or set of nodes) return HX_EINFEASIBLE with ERR
 * saying what binds. */
int hx_plan_baseline(const hx_problem *pb, hx_plan *out, hx_err *err);

enum { HX_OBJ_CAPACITY, HX_OBJ_COST, HX_OBJ_LATENCY };

typedef struct hx_plan_opts {
	int objective;       /* HX_OBJ_* */
	double time_limit_s; /* safety stop from the call (0: none): the search
			      * stops then and the plan is finished */
	double gap;          /* relative MIP gap to stop at (0: optimal) */
	long node_limit;     /* branch-and-bound nodes per solve (0: default) */
	const char *lp_path; /* write the (last) MILP in CPLEX LP format */
	int verbose;
	double budget_usd_per_hour; /* compose: > 0 maximizes capacity within it */
} hx_plan_opts;

/* colocated (HexGen): asymmetric TP/PP replicas over mixed GPUs chosen by a
 * MILP over the candidate shapes (candidates.h): maximize capacity at the
 * SLO, or the cheapest set that carries the workload's rate, or the lowest
 * percentile TTFT bound at that rate. */
int hx_plan_colocated(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out, hx_err *err);

/* disagg (HexGen-2, ThunderServe): prefill and decode on different nodes.
 * The node graph (links weighted by bandwidth) is partitioned into groups;
 * each group takes a role; a max-flow in requests/s from prefill replicas
 * through the NICs and links that carry their KV caches to decode replicas
 * scores the assignment and gives the routing weights; single nodes then
 * flip roles while that raises the flow. */
int hx_plan_disagg(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out, hx_err *err);

/* pipeline (Helix, Parallax): each node holds a contiguous layer range;
 * a placement is scored by the max-flow of generated tokens/s through the
 * node-split graph (pipeline.h); constructions and a seeded local search.
 * One group per node (one stage, one replica); routing.ingress reaches the
 * nodes holding layer 0 and routing.hops carry the flow node to node. */
int hx_plan_pipeline(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out, hx_err *err);
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
/* compose (Mélange): which GPUs to rent from the cluster's offers (plus its
 * owned nodes, free at the margin) so that every length class of the
 * workload is served at the SLO at least cost, or, with a budget, the
 * largest multiple of the workload's rate (compose.h). */
int hx_plan_compose(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out, hx_err *err);

/* The KV reserve (tokens) a replica of the workload's model needs: one
 * request at the SLO percentile, and at least HX_KV_RESERVE_TOKENS. */
double hx_plan_kv_reserve(const hx_workload *w);

/* Fill what every plan carries besides its groups: digests, embedded GPU
 * profiles of the nodes it uses, per-group capacity, ingress weights in
 * proportion to capacity (when WEIGHTS is set) and the plan's predictions at
 * the workload's rate. */
int hx_plan_finish(const hx_problem *pb, hx_plan *p, int weights, hx_err *err);

#endif
