/*
 * plan_colocated: HexGen's heterogeneous replicas (DESIGN §6), chosen by a
 * MILP.  Integer n_c counts the replicas of candidate shape c (candidates.h);
 * each node class k offers G_k GPUs: sum_c use_{c,k} n_c <= G_k.
 *   capacity: max sum_c cap_c n_c;
 *   cost:     min sum_c usd_c n_c  s.t. sum_c cap_c n_c >= the workload's rate;
 *   latency:  the lowest threshold T such that the shapes whose percentile
 *             TTFT bound at the rate's share is <= T still carry the rate
 *             (bisection over the shapes' bounds, one capacity MILP each).
 * Requests split in proportion to capacity.  Classes of interchangeable
 * nodes keep the MILP small whatever the GPU count, and packing the chosen
 * replicas onto concrete nodes is exact (powers of two, first fit
 * decreasing), so the MILP's optimum is the plan's.
 *
 * The simulator checks the MILP's choice (DESIGN §8): each chosen shape's
 * capacity is replaced by what one replica of it sustains in the simulator,
 * and where that moves a capacity by more than COLO_SIM_TOL the MILP is
 * solved again, for at most COLO_SIM_ROUNDS rounds.  The ingress splits by
 * the simulated capacities, and the plan records their sum beside the cost
 * model's.  When the corrections changed the MILP's choice, both choices are
 * simulated whole and the better kept (shapes simulated alone miss what the
 * whole plan adds), and the plan records that whole-plan figure.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planners/candidates.h"
#include "sim/sim.h"
#include "solver/milp.h"
#include "planners/colocated.h"

/* Build and solve the MILP over candidates flagged in USE (NULL: all). */
static int solve(const hx_problem *pb, const hx_plan_opts *o, double deadline,
		 const hx_candset *s, const char *use, int objective, hx_milp_result *res,
		 hx_err *err)
{
	hx_milp *m = hx_milp_new(objective == HX_OBJ_CAPACITY);
	hx_milp_opts mo = hx_plan_milp_opts(o, deadline);
	int *idx = hx_xmalloc((size_t)s->n * sizeof(int) + 1);
	double *val = hx_xmalloc((size_t)s->n * sizeof(double) + 1);
	int rc;

	for (int c = 0; c < s->n; c++) {
		const hx_candidate *x = &s->c[c];
		double ub = INFINITY;
		char name[160];
		for (int k = 0; k < s->ncls; k++) {
			int u = hx_cand_use(x, k);
			if (u > 0)
				ub = fmin(ub, floor((double)s->cls[k].nnodes *
						    s->cls[k].gpus_per_node / u));
		}
		if (use && !use[c])
			ub = 0;
		if (x->st[0].ep > 1) /* an EP shape says so */
			snprintf(name, sizeof(name), "n_%d_%s_ep%d_dp%d", c,
				 s->cls[x->st[0].cls].gpu->name, x->st[0].ep,
				 x->st[0].dp > 1 ? x->st[0].dp : 1);
		else
			snprintf(name, sizeof(name), "n_%d_%s_tp%d_pp%d", c,
				 s->cls[x->st[0].cls].gpu->name, x->st[0].tp, x->nstages);
		hx_milp_add_var(m, name, HX_MILP_INT, 0, ub,
				objective == HX_OBJ_COST ? x->usd_per_hour : x->capacity_rps);
	}
	for (int k = 0; k < s->ncls; k++) {
		int n = 0;
		char name[160];
		for (int c = 0; c < s->n; c++) {
			int u = hx_cand_use(&s->c[c], k);
			if (u > 0) {
				idx[n] = c;
				val[n++] = u;
			}
		}
		snprintf(name, sizeof(name), "gpus_%s_class%d", s->cls[k].gpu->name, k);
		if (n > 0)
			hx_milp_add_row(m, name, n, idx, val, -INFINITY,
					(double)s->cls[k].nnodes * s->cls[k].gpus_per_node);
	}
	if (objective == HX_OBJ_COST) {
		for (int c = 0; c < s->n; c++) {
			idx[c] = c;
			val[c] = s->c[c].capacity_rps;
		}
		hx_milp_add_row(m, "demand", s->n, idx, val, pb->workload->rate_rps, INFINITY);
	}
	rc = hx_milp_solve(m, &mo, res, err);
	hx_milp_free(m);
	free(idx);
	free(val);
	return rc;
}

typedef struct dense {
	double d; /* capacity per GPU */
	int c;
} dense;

static int cmp_density(const void *a, const void *b)
{
	const dense *x = a, *y = b;
	if (x->d != y->d)
		return x->d > y->d ? -1 : 1;
	return x->c - y->c;
}

/* When the time limit stops the MILP before its first integer solution: a
 * feasible one by greed into RES->x.  Capacity: densest capacity per GPU
 * first, as many copies as the classes' GPUs allow.  Cost (LAMBDA > 0):
 * cheapest capacity first, copies until they carry LAMBDA; RES->status
 * stays no_solution when all the GPUs do not. */
static void greedy(const hx_candset *s, double lambda, hx_milp_result *res)
{
	dense *order = hx_xmalloc((size_t)s->n * sizeof(dense) + 1);
	double carried = 0;
	double *left = hx_xcalloc((size_t)s->ncls + 1, sizeof(double));

	for (int k = 0; k < s->ncls; k++)
		left[k] = (double)s->cls[k].nnodes * s->cls[k].gpus_per_node;
	for (int c = 0; c < s->n; c++)
		order[c] =
		    (dense){lambda > 0 ? s->c[c].capacity_rps / fmax(s->c[c].usd_per_hour, 1e-9)
				       : s->c[c].capacity_rps / s->c[c].gpus,
			    c};
	qsort(order, (size_t)s->n, sizeof(dense), cmp_density);
	free(res->x);
	res->x = hx_xcalloc((size_t)s->n + 1, sizeof(double));
	res->objective = 0;
	for (int i = 0; i < s->n && !(lambda > 0 && carried >= lambda); i++) {
		const hx_candidate *x = &s->c[order[i].c];
		double n = INFINITY;
		for (int k = 0; k < s->ncls; k++)
			if (hx_cand_use(x, k) > 0)
				n = fmin(n, floor(left[k] / hx_cand_use(x, k)));
		if (lambda > 0)
			n = fmin(n, ceil((lambda - carried) / x->capacity_rps));
		if (!(n >= 1))
			continue;
		for (int k = 0; k < s->ncls; k++)
			left[k] -= n * hx_cand_use(x, k);
		res->x[order[i].c] = n;
		carried += n * x->capacity_rps;
		res->objective += n * (lambda > 0 ? x->usd_per_hour : x->capacity_rps);
	}
	if (lambda > 0 && carried < lambda) {
		free(order);
		free(left);
		return;
	}
	res->status = HX_MILP_TIME_LIMIT;
	if (lambda > 0) {
		/* no bound on the cost is known: report none rather than a wrong one */
		res->bound = res->objective;
		res->gap = 0;
		free(order);
		free(left);
		return;
	}
	res->bound = fmax(res->bound, res->objective);
	res->gap = fabs(res->bound - res->objective) / fmax(res->objective, 1e-9);
	free(order);
	free(left);
}

static double max_capacity(const hx_candset *s)
{
	/* An upper bound on any plan's capacity: each class alone at its best
	 * capacity per GPU. */
	double b = 0;
	for (int k = 0; k < s->ncls; k++) {
		double best = 0;
		for (int c = 0; c < s->n; c++)
			if (hx_cand_use(&s->c[c], k) == s->c[c].gpus)
				best = fmax(best, s->c[c].capacity_rps / s->c[c].gpus);
		b += best * s->cls[k].nnodes * s->cls[k].gpus_per_node;
	}
	return b;
}

typedef struct pick {
	int cand, n, width;
} pick;

/* ---- the simulator's check ------------------------------------------------ */

#define COLO_SIM_ROUNDS 4
#define COLO_SIM_TOL    0.05
/* A quick check: 500 requests per rate, or a minute or 20 request lives of
 * arrivals when that is more, bisected to 2% (simulate --capacity: 4000,
 * two minutes, 50 lives, 1%). */
#define COLO_SIM_REQUESTS 500
#define COLO_SIM_LIVES    20
#define COLO_SIM_MIN_S    60
#define COLO_SIM_TOL_BIS  0.02

/* A new colocated plan P holding the NPICKS picks in that order, each
 * placed on the cluster's free GPUs (hx_cand_place). */
static void place_picks(const hx_problem *pb, const hx_candset *s, const pick *picks,
			int npicks, hx_plan *p)
{
	const hx_cluster *cl = pb->cluster;
	int *free_gpus = hx_xcalloc((size_t)cl->nnodes + 1, sizeof(int));
	int *next = hx_xcalloc((size_t)cl->nnodes + 1, sizeof(int));

	hx_plan_init(p);
	strcpy(p->mode, "colocated");
	for (int i = 0; i < cl->nnodes; i++)
		free_gpus[i] = cl->nodes[i].count;
	for (int i = 0; i < npicks; i++)
		hx_cand_place(pb, s, &s->c[picks[i].cand], picks[i].n, free_gpus, next, p);
	free(free_gpus);
	free(next);
}

/* The capacity at the SLO of one replica of candidate C alone, in the
 * simulator, on requests drawn with the problem's seed. */
static int shape_sim(const hx_problem *pb, const hx_candset *s, int c, double deadline,
		     double *rps, hx_err *err)
{
	hx_sim_opts so = {pb->seed,         0,       NULL, NULL, COLO_SIM_LIVES, COLO_SIM_MIN_S,
			  COLO_SIM_TOL_BIS, deadline};
	pick one = {c, 1, 0};
	hx_plan q;
	int rc;

	place_picks(pb, s, &one, 1, &q);
	rc = hx_plan_finish(pb, &q, HX_FINISH_WEIGHTS, err);
	if (!rc)
		rc = hx_sim_capacity(&q, pb->workload, COLO_SIM_REQUESTS, &so, rps, NULL, err);
	hx_plan_release(&q);
	return rc;
}

/* Simulate the shapes RES chose that SIMCAP (< 0: not yet) lacks and put
 * their simulated capacities into S; MOVED is set when one moved by more
 * than COLO_SIM_TOL.  Stops at the deadline (the rest stay unsimulated). */
static int sim_picks(const hx_problem *pb, double deadline, hx_candset *s,
		     const hx_milp_result *res, double *simcap, int *moved, hx_err *err)
{
	*moved = 0;
	for (int c = 0; c < s->n; c++) {
		double rps = 0, cap = s->c[c].capacity_rps;
		int rc;
		if (floor(res->x[c] + 0.5) < 1 || simcap[c] >= 0)
			continue;
		if (hx_past(deadline))
			return 0;
		if ((rc = shape_sim(pb, s, c, deadline, &rps, err)))
			return rc == HX_ELIMIT ? 0 : rc; /* the rest stay unsimulated */
		simcap[c] = rps;
		*moved |= fabs(rps - cap) > COLO_SIM_TOL * cap;
		s->c[c].capacity_rps = rps;
	}
	return 0;
}

/* Scale the shapes not simulated yet by what the simulated ones showed (the
 * ratio of their summed simulated to summed predicted capacities, PRED the
 * cost model's), so the MILP does not swap a checked shape for an unchecked
 * one that the cost model overrates alike. */
static void scale_unsimulated(hx_candset *s, const double *pred, const double *simcap)
{
	double a = 0, b = 0;

	for (int c = 0; c < s->n; c++)
		if (simcap[c] >= 0) {
			a += simcap[c];
			b += pred[c];
		}
	if (b <= 0)
		return;
	for (int c = 0; c < s->n; c++)
		if (simcap[c] < 0)
			s->c[c].capacity_rps = pred[c] * a / b;
}

/* The simulator's check of RES (objective capacity or cost): correct the
 * chosen shapes' capacities and solve again while they move. */
static int sim_check(const hx_problem *pb, const hx_plan_opts *o, double deadline,
		     hx_candset *s, int objective, double *simcap, hx_milp_result *res,
		     hx_err *err)
{
	double *pred = hx_xmalloc((size_t)s->n * sizeof(double) + 1);
	int rc = 0, moved;

	for (int c = 0; c < s->n; c++)
		pred[c] = s->c[c].capacity_rps;
	for (int round = 0; round < COLO_SIM_ROUNDS; round++) {
		hx_milp_result r2 = {0};
		if ((rc = sim_picks(pb, deadline, s, res, simcap, &moved, err)))
			goto out;
		if (!moved || hx_past(deadline) || round + 1 == COLO_SIM_ROUNDS)
			break;
		scale_unsimulated(s, pred, simcap);
		if ((rc = solve(pb, o, deadline, s, NULL, objective, &r2, err)))
			goto out;
		if (r2.status > HX_MILP_TIME_LIMIT) {
			free(r2.x); /* the corrected MILP has no plan: keep RES */
			break;
		}
		free(res->x);
		*res = r2;
	}
	/* The shapes of a last re-solve, for the record. */
	rc = sim_picks(pb, deadline, s, res, simcap, &moved, err);
out:
	free(pred);
	return rc;
}

/* Split the ingress by the groups' simulated capacities (group i holds
 * PICKS[i]) and record their sum, when every chosen shape was simulated. */
static void sim_record(const hx_problem *pb, const pick *picks, int npicks,
		       const double *simcap, hx_plan *p)
{
	double total = 0;

	for (int i = 0; i < npicks; i++) {
		if (simcap[picks[i].cand] < 0)
			return;
		total += picks[i].n * simcap[picks[i].cand];
	}
	hx_plan_set_simulated(p, pb, "replicas", total, COLO_SIM_REQUESTS);
	if (total <= 0 || p->ningress != npicks)
		return;
	for (int i = 0; i < npicks; i++)
		p->ingress[i].weight = picks[i].n * simcap[picks[i].cand] / total;
	hx_routes_normalize(p->ingress, p->ningress);
}

static int cmp_pick(const void *a, const void *b)
{
	const pick *x = a, *y = b;
	if (x->width != y->width)
		return y->width - x->width;
	return x->cand - y->cand;
}

/* Latency: bisection over the shapes' TTFT bounds for the smallest bound
 * whose shapes still carry LAMBDA, then the capacity MILP over them into
 * RES. */
static int latency_solve(const hx_problem *pb, const hx_plan_opts *o, double deadline,
			 const hx_candset *s, double lambda, hx_milp_result *res, hx_err *err)
{
	int rc = 0;
	double *bounds = hx_xmalloc((size_t)s->n * sizeof(double));
	char *use = hx_xcalloc((size_t)s->n, 1);
	int lo = 0, hi = s->n - 1;
	double all = max_capacity(s);
	for (int c = 0; c < s->n; c++) {
		hx_replica r;
		hx_capacity cap;
		hx_cand_replica(pb, s, &s->c[c], &r);
		/* at the share of the rate it would carry if the
		 * whole cluster ran at the rate's utilization */
		hx_cost_at_rate(&r, pb->workload,
				s->c[c].capacity_rps * fmin(1, lambda / fmax(all, 1e-9)), &cap);
		bounds[c] = isfinite(cap.ttft_ms) ? cap.ttft_ms : s->c[c].ttft_ms;
	}
	{
		double *sorted = hx_xmalloc((size_t)s->n * sizeof(double));
		memcpy(sorted, bounds, (size_t)s->n * sizeof(double));
		hx_quantile(sorted, (size_t)s->n, 0.5); /* sorts */
		while (lo < hi && !hx_past(deadline)) {
			int mid = (lo + hi) / 2;
			hx_milp_result r2 = {0};
			for (int c = 0; c < s->n; c++)
				use[c] = bounds[c] <= sorted[mid];
			rc = solve(pb, o, deadline, s, use, HX_OBJ_CAPACITY, &r2, err);
			if (rc) {
				free(r2.x);
				break;
			}
			if (r2.status <= HX_MILP_TIME_LIMIT && r2.objective >= lambda)
				hi = mid;
			else
				lo = mid + 1;
			free(r2.x);
		}
		for (int c = 0; c < s->n; c++)
			use[c] = bounds[c] <= sorted[lo];
		free(sorted);
	}
	if (!rc)
		rc = solve(pb, o, deadline, s, use, HX_OBJ_CAPACITY, res, err);
	free(bounds);
	free(use);
	return rc;
}

/* The refusal when nothing is placed: with the simulator's check (SIMCAP),
 * say that the shapes the cost model chose sustain nothing in it. */
static int no_shape(const hx_problem *pb, const hx_candset *s, const double *simcap,
		    hx_err *err)
{
	const hx_slo *slo = &pb->workload->slo;
	double best = 0;
	int n = 0;

	for (int c = 0; simcap && c < s->n; c++)
		if (simcap[c] >= 0) {
			n++;
			best = fmax(best, simcap[c]);
		}
	if (n > 0 && best <= 0)
		return hx_errf(
		    err, HX_EINFEASIBLE,
		    "no replica shape meets the SLO in the simulator: the %d shape%s the cost model chose sustain%s 0 req/s at TTFT %g ms and TPOT %g ms (p%g, %g%% of requests); loosen the SLO or use faster GPUs",
		    n, n == 1 ? "" : "s", n == 1 ? "s" : "", slo->ttft_ms, slo->tpot_ms,
		    slo->percentile, 100 * slo->attainment);
	return hx_errf(err, HX_EINFEASIBLE, "no replica shape is worth placing");
}

/* Place the replicas RES chose into P (widest stages first), finish it and,
 * when SIMCAP holds every chosen shape's simulated capacity, record their
 * sum and split the ingress by them. */
static int place(const hx_problem *pb, const hx_candset *s, const hx_milp_result *res,
		 const double *simcap, double deadline, hx_plan *p, hx_err *err)
{
	pick *picks = hx_xcalloc((size_t)s->n + 1, sizeof(pick));
	int npicks = 0, rc;

	for (int c = 0; c < s->n; c++) {
		int n = (int)floor(res->x[c] + 0.5), w = 0;
		for (int i = 0; i < s->c[c].nstages; i++)
			w = s->c[c].st[i].tp > w ? s->c[c].st[i].tp : w;
		if (n > 0)
			picks[npicks++] = (pick){c, n, w};
	}
	qsort(picks, (size_t)npicks, sizeof(pick), cmp_pick);
	place_picks(pb, s, picks, npicks, p);
	if (p->ngroups == 0) {
		rc = no_shape(pb, s, simcap, err);
		goto out;
	}
	hx_plan_solver_milp(p, "glpk", res);
	if (s->cut || hx_past(deadline))
		strcpy(p->solver.status, "time_limit"); /* not every shape was tried */
	if ((rc = hx_plan_finish(pb, p, HX_FINISH_WEIGHTS, err)))
		goto out;
	if (simcap)
		sim_record(pb, picks, npicks, simcap, p);
	/* hx_plan_finish sets the objective to the capacity; keep the MILP's. */
	p->solver.objective = hx_round6(res->objective);
out:
	free(picks);
	if (rc)
		hx_plan_release(p);
	return rc;
}

/* Whether plan A (simulated capacity CA) serves OBJECTIVE better than B: the
 * higher capacity, or for cost the cheaper of those that carry the rate. */
static int better(const hx_problem *pb, int objective, const hx_plan *a, double ca,
		  const hx_plan *b, double cb)
{
	double lambda = pb->workload->rate_rps;
	if (objective == HX_OBJ_COST) {
		int ma = ca >= lambda, mb = cb >= lambda;
		if (ma != mb)
			return ma;
		if (ma)
			return a->predicted.usd_per_hour < b->predicted.usd_per_hour;
	}
	return ca > cb;
}

/* The MILP's first choice RAW and the simulator-corrected CHECKED differ:
 * simulate both whole and keep the better in P (CHECKED is there already),
 * recording its whole-plan figure.  Single replicas simulated alone miss
 * what a whole plan adds (the router's split across unequal groups), so a
 * correction can lose capacity; this keeps it from doing so. */
static int keep_better(const hx_problem *pb, const hx_plan_opts *o, const hx_candset *s,
		       const hx_milp_result *raw, double deadline, hx_plan *p, hx_err *err)
{
	hx_plan q;
	double cp = 0, cq = 0;
	int rc;

	if (hx_past(deadline) || !(p->simulated.requests > 0))
		return 0;
	/* RAW as first planned: its ingress split by the cost model's
	 * capacities (no SIMCAP). */
	{
		hx_err e2 = {0};
		if (place(pb, s, raw, NULL, deadline, &q, &e2))
			return 0; /* RAW does not place: keep CHECKED */
	}
	/* Shapes simulated alone are too coarse (the quick check, about 10%)
	 * to rank two plans: both are searched as simulate --capacity does. */
	if ((rc = hx_plan_sim_capacity(pb, p, deadline, &cp, err)) ||
	    (rc = hx_plan_sim_capacity(pb, &q, deadline, &cq, err))) {
		hx_plan_release(&q);
		return rc == HX_ELIMIT ? 0 : rc; /* out of time: keep CHECKED */
	}
	if (better(pb, o->objective, &q, cq, p, cp)) {
		hx_plan_release(p);
		*p = q;
		cp = cq;
	} else {
		hx_plan_release(&q);
	}
	hx_plan_set_simulated(p, pb, "plan", hx_round6(cp), HX_CAP_REQUESTS);
	return 0;
}

int hx_plan_colocated(const hx_problem *pb, const hx_plan_opts *o0, hx_plan *p, hx_err *err)
{
	const double deadline = hx_deadline(o0->time_limit_s);
	hx_cand_opts co = {0, deadline, 1}; /* EP shapes too, for MoE models */
	const hx_plan_opts *o = o0;
	hx_candset s;
	hx_milp_result res = {0}, raw = {0};
	int rc;
	double lambda = pb->workload->rate_rps, *simcap = NULL;

	hx_plan_init(p);
	strcpy(p->mode, "colocated");
	if (pb->cluster->nnodes == 0)
		return hx_errf(
		    err, HX_EINFEASIBLE,
		    "the cluster has offers but no nodes: colocated plans fixed nodes (see --mode compose)");
	if ((rc = hx_candidates(pb, &co, &s, err)))
		return rc;
	if (s.n == 0 && s.cut) {
		hx_candset_release(&s);
		return hx_errf(
		    err, HX_ELIMIT,
		    "the time limit of %g s was reached before any replica shape was priced",
		    o0->time_limit_s);
	}
	if (s.n == 0) {
		double need =
		    hx_model_params(&pb->model->a) * hx_dtype_bytes(pb->model->a.dtype);
		hx_candset_release(&s);
		return hx_errf(
		    err, HX_EINFEASIBLE,
		    "%s fits on no GPU set of this cluster at the SLO: its weights alone are %.1f GiB, plus a KV reserve of %.0f tokens per replica, and no replica shape meets TTFT %g ms and TPOT %g ms",
		    pb->model->name, need / HX_GIB, hx_plan_kv_reserve(pb->workload),
		    pb->workload->slo.ttft_ms, pb->workload->slo.tpot_ms);
	}
	if (o->objective == HX_OBJ_CAPACITY) {
		if ((rc = solve(pb, o, deadline, &s, NULL, HX_OBJ_CAPACITY, &res, err)))
			goto out;
	} else {
		/* Exact: the most the cluster carries at the SLO. */
		if ((rc = solve(pb, o, deadline, &s, NULL, HX_OBJ_CAPACITY, &res, err)))
			goto out;
		if (res.status <= HX_MILP_TIME_LIMIT && res.bound < lambda) {
			rc = hx_errf(
			    err, HX_EINFEASIBLE,
			    "the workload's rate of %g req/s is above what all the GPUs carry at the SLO (at most %.3f req/s)",
			    lambda, res.bound);
			goto out;
		}
		free(res.x);
		memset(&res, 0, sizeof(res));
		if (o->objective == HX_OBJ_COST) {
			if ((rc = solve(pb, o, deadline, &s, NULL, HX_OBJ_COST, &res, err)))
				goto out;
		} else if ((rc = latency_solve(pb, o, deadline, &s, lambda, &res, err))) {
			goto out;
		}
	}
	if (res.status == HX_MILP_NO_SOLUTION && o->objective != HX_OBJ_LATENCY &&
	    deadline > 0 && hx_past(deadline)) {
		if (o->objective == HX_OBJ_CAPACITY && !(res.bound > 0))
			res.bound = max_capacity(&s);
		greedy(&s, o->objective == HX_OBJ_COST ? lambda : 0, &res);
	}
	if (res.status <= HX_MILP_TIME_LIMIT && o->objective != HX_OBJ_LATENCY &&
	    !o->no_sim_check) {
		simcap = hx_xmalloc((size_t)s.n * sizeof(double) + 1);
		for (int c = 0; c < s.n; c++)
			simcap[c] = -1;
		raw = res;
		raw.x = hx_xmalloc((size_t)s.n * sizeof(double) + 1);
		memcpy(raw.x, res.x, (size_t)s.n * sizeof(double));
		if ((rc = sim_check(pb, o, deadline, &s, o->objective, simcap, &res, err)))
			goto out;
	}
	if (res.status > HX_MILP_TIME_LIMIT) {
		rc = res.status == HX_MILP_NO_SOLUTION
			 ? hx_errf(err, HX_ELIMIT,
				   "the MILP reached its limit before finding any plan")
			 : hx_errf(err, HX_EINFEASIBLE, "the MILP is %s",
				   hx_milp_status_name(res.status));
		goto out;
	}
	if ((rc = place(pb, &s, &res, simcap, deadline, p, err)))
		goto out;
	if (raw.x && memcmp(raw.x, res.x, (size_t)s.n * sizeof(double)))
		rc = keep_better(pb, o, &s, &raw, deadline, p, err);
out:
	free(simcap);
	free(res.x);
	free(raw.x);
	hx_candset_release(&s);
	if (rc)
		hx_plan_release(p);
	return rc;
}
