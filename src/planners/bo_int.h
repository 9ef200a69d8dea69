/* The bo planner's private header: the search space, the evaluated
 * points and the context its files share (bo.c: set-up, plans and the
 * choice from the front; bo_space.c: configurations, their feasibility,
 * random ones, neighbours and enumeration; bo_acq.c: evaluation, the
 * Pareto front, the surrogate and the acquisition).  Only they include it. */
#ifndef HX_PLANNERS_BO_INT_H
#define HX_PLANNERS_BO_INT_H

#include <string.h>

#include "planners/bo.h"
#include "planners/candidates.h"
#include "solver/gp.h"
#include "model/quality.h"

#define FSTEPS   20 /* routing fractions in steps of 1/FSTEPS */
#define MAXM     HX_BO_MAX_MODELS
#define NFEAT    4        /* GP inputs per model */
#define ENUM_MAX 5000000L /* exhaustive and grid enumerate at most this */
#define MAXC     12       /* shapes per model searched */

typedef struct cfg {
	int u[MAXM];                 /* fraction u / FSTEPS */
	unsigned char n[MAXM][MAXC]; /* replicas of each candidate shape */
} cfg;

typedef struct evalpt {
	cfg k;
	double cost, lat, q;
	int ok; /* the SLO holds */
	double x[HX_GP_MAXD];
} evalpt;

typedef struct bo {
	const hx_problem *pb;
	const hx_bo_opts *o;
	const hx_quality *q;
	double qmean[HX_QUALITY_MAX_MODELS]; /* each model's mean score, once */
	int nm;
	hx_model models[MAXM];
	hx_problem pbm[MAXM];
	hx_candset s[MAXM];
	int have_s[MAXM];
	int nc[MAXM];         /* shapes searched: the first MAXC by capacity per dollar */
	int cand[MAXM][MAXC]; /* their indexes in s */
	int ncls;
	int cls_gpus[64];     /* GPUs of each node class */
	int maxn[MAXM][MAXC]; /* most replicas of a shape (inventory, budget) */
	double budget, slo_ms, outq, lambda;
	double deadline;
	hx_rng rng;
	cfg *splits; /* list_splits */
	int nsplits;
	evalpt *ev;
	int nev, cap;
	int *free_gpus; /* scratch: per node */
	int totgpus;
	int time_cut;
	int cands_cut;   /* the deadline cut some model's pricing short */
	long evals_seen; /* the exhaustive search's evaluations (it keeps only its front) */
	hx_trace trace;  /* --evaluate sim: the requests every evaluation replays */
	int have_trace;
} bo;

static inline const hx_candidate *shape(const bo *b, int m, int c)
{
	return &b->s[m].c[b->cand[m][c]];
}

static inline int cfg_eq(const cfg *a, const cfg *b)
{
	return memcmp(a, b, sizeof(cfg)) == 0;
}

static inline double model_cost(const bo *b, const cfg *k, int m)
{
	double usd = 0;
	for (int c = 0; c < b->nc[m]; c++)
		usd += k->n[m][c] * shape(b, m, c)->usd_per_hour;
	return usd;
}

static inline double model_cap(const bo *b, const cfg *k, int m)
{
	double cap = 0;
	for (int c = 0; c < b->nc[m]; c++)
		cap += k->n[m][c] * shape(b, m, c)->capacity_rps;
	return cap;
}

static inline double cfg_cost(const bo *b, const cfg *k)
{
	double usd = 0;
	for (int m = 0; m < b->nm; m++)
		usd += model_cost(b, k, m);
	return usd;
}

static inline double cfg_quality(const bo *b, const cfg *k)
{
	/* hx_route_quality, with the means computed once (a hot path) */
	double sum = 0;
	for (int m = 0; m < b->q->nmodels; m++)
		sum += (m < b->nm ? (double)k->u[m] / FSTEPS : 0) * b->qmean[m];
	return sum;
}

static inline double model_rate(const bo *b, const cfg *k, int m)
{
	return (double)k->u[m] / FSTEPS * b->lambda;
}

/* bo_space.c */

/* Whether K was evaluated already. */
int hx_bo_seen(const bo *b, const cfg *k);
/* Whether K's replicas pack onto the nodes; NODE (may be NULL) gets the
 * node of each model, shape, replica and stage (see there). */
int hx_bo_packs(bo *b, const cfg *k, int *node);
/* The routing splits worth sampling, into B->splits. */
void hx_bo_list_splits(bo *b);
/* A random feasible configuration into K (0), or -1 after many tries. */
int hx_bo_random_cfg(bo *b, cfg *k);
/* Whether the rate alone rules every deployment out: for every routing
 * split that meets the quality floor, the GPUs, each at the best capacity
 * per GPU of the shapes searched for its model, carry less than the rate
 * (whatever the budget). */
int hx_bo_rate_binds(const bo *b);
/* A feasible neighbour of K into OUT (0), or -1. */
int hx_bo_mutate(bo *b, const cfg *k, cfg *out);
/* The feasible configurations in a fixed order (hx_bo_enumerate: every
 * one; hx_bo_grid: the structured grid), every STRIDE-th evaluated when
 * EVALUATE_THEM (at most LIMIT, 0: no limit); return how many there are. */
long hx_bo_enumerate(bo *b, long stride, int evaluate_them, int limit);
long hx_bo_grid(bo *b, long stride, int evaluate_them, int limit);

/* bo_acq.c */

/* Evaluate K (feasible, not seen) and note it. */
void hx_bo_visit(bo *b, const cfg *k);
/* Evaluate K and keep it only if it joins the front of what is kept. */
void hx_bo_visit_front(bo *b, const cfg *k);
/* The seeded space-filling initial design of N configurations. */
void hx_bo_initial_design(bo *b, int n);
/* The BO loop proper, after the initial design (F: status, iterations). */
void hx_bo_search(bo *b, int max_evals, hx_bo_front *f);
/* Mark in KEEP the evaluated points on the Pareto front; returns how many. */
int hx_bo_front_mark(const bo *b, int *keep);
/* Hypervolume of the evaluated points, as a fraction of the box. */
double hx_bo_hypervolume(const bo *b);

/* bo.c */

/* The plan of configuration K (the caller releases it); 0 or an error. */
int hx_bo_build_plan(bo *b, const cfg *k, double quality, hx_plan *p, hx_err *err);

#endif
