/*
 * plan_bo: --mode bo (BOute; DESIGN §6), multi-objective Bayesian
 * optimization of routing and deployment over the models of the workload's
 * quality profile.  A configuration sends fraction f_i (a multiple of 5%)
 * of the requests to model i and serves each model that gets traffic with
 * replicas of one or more candidate shapes (candidates.h: GPU type(s), TP,
 * PP; the replicas are the DP degree; the 12 shapes with the most capacity
 * per dollar), the model's rate spread over them in proportion to
 * capacity.  Three objectives: cost ($/h, exact),
 * latency (the end-to-end percentile: TTFT + (percentile output - 1) TPOT
 * at each replica's share of the rate, the worst model's; the cost model's
 * prediction, or with --evaluate sim the simulator's percentile
 * end-to-end latency, the SLO then holding when the simulated attainment
 * meets the workload's target) and quality (Q of the split, exact from the profile).  Budget,
 * GPU inventory (the replicas pack onto the nodes) and the quality floor
 * are filters applied before the surrogate; the SLO (the latency bound
 * TTFT SLO + (percentile output - 1) TPOT SLO, and every replica within its
 * capacity at the SLO) is an outcome constraint weighed by its probability
 * of feasibility under the latency GP.  The latency is the one objective
 * that needs evaluating, so it is the one with a Gaussian process (log
 * latency); cost and quality are closed forms of the configuration.
 * Acquisition: exact EHVI in (cost, log latency) when the profile has one
 * model, else ParEGO (augmented Tchebycheff of the normalized transformed
 * objectives: cost, log latency, -logit(Q/100), with fresh random weights
 * each iteration) with the expected improvement of the scalarization under
 * the latency GP; over a candidate set of random feasible configurations
 * and neighbours of the front.  Stops when the Pareto set is unchanged for
 * 20 iterations, at the evaluation limit or at the time limit.
 */
#ifndef HX_PLAN_BO_H
#define HX_PLAN_BO_H

#include "planners/common.h"

enum { HX_PREFER_BALANCED, HX_PREFER_COST, HX_PREFER_LATENCY, HX_PREFER_QUALITY };
/* How configurations are chosen: BO, or the yardsticks of bench/bo. */
enum { HX_BO_BAYES, HX_BO_RANDOM, HX_BO_GRID, HX_BO_EXHAUSTIVE };

typedef struct hx_bo_opts {
	int prefer;                 /* HX_PREFER_* */
	double budget_usd_per_hour; /* 0: the whole cluster's price */
	int max_evals;              /* 0: HX_BO_MAX_EVALS */
	int method;                 /* HX_BO_* */
	int simulate;               /* score latency by the simulator (HX_BO_SIM_REQUESTS
				     * requests at the workload's rate), not the cost model */
	/* Called after each iteration (may be NULL): iteration, evaluations,
	 * hypervolume (fraction of the reference box). */
	void (*progress)(void *ctx, int iter, int evals, double hv);
	void *progress_ctx;
} hx_bo_opts;

#define HX_BO_MAX_EVALS    200
#define HX_BO_SIM_REQUESTS 1000
#define HX_BO_STABLE_ITERS 20
#define HX_BO_MAX_MODELS   3

typedef struct hx_bo_point {
	double usd_per_hour, latency_ms, quality;
	double fraction[HX_BO_MAX_MODELS];
	int eval; /* which evaluation it was (from 0) */
	hx_plan plan;
	int has_plan;
} hx_bo_point;

typedef struct hx_bo_front {
	int nmodels;
	char model[HX_BO_MAX_MODELS][64];
	hx_bo_point *pt; /* sorted by cost, then latency */
	int n;
	int chosen; /* index of the plan hx_plan_bo returned */
	int prefer;
	double ref[3];                /* usd_per_hour, latency_ms, quality floor */
	double hypervolume;           /* of (cost, latency, 100 - Q) in the box from
				       * (0, 0, 0) to (budget, SLO, 100 - floor), as a
				       * fraction of it */
	int evals, iterations, space; /* space: configurations enumerated (grid, exhaustive) */
	char status[16];              /* converged, work_limit, time_limit */
	char acquisition[8];          /* ehvi, parego, random, grid, all */
	double seconds;               /* wall time of the search (bench only: never written) */
} hx_bo_front;

/* Search, fill FRONT (plans for each point when PLANS) and OUT with the
 * chosen point's plan (the caller releases both: hx_plan_release,
 * hx_bo_front_release).  HX_EINFEASIBLE when no configuration is within the
 * budget, inventory and floor or none meets the SLO; HX_ELIMIT when the
 * time limit came before any. */
int hx_plan_bo(const hx_problem *pb, const hx_plan_opts *o, const hx_bo_opts *bo, int plans,
	       hx_plan *out, hx_bo_front *front, hx_err *err);
void hx_bo_front_release(hx_bo_front *f);

/* The front as JSON (schema hexplan.front, each point with its plan
 * embedded) and as a standalone SVG; new strings. */
char *hx_bo_front_dump(const hx_bo_front *f, uint64_t seed);
char *hx_bo_front_svg(const hx_bo_front *f);

#endif
