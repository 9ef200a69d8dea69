/*
 * plan_cascade: model cascades and routing splits (Cascadia; DESIGN §6),
 * from the workload's quality profile (quality.h).
 *
 * Deployment level (one GLPK MILP per thresholds theta): integer n_{i,c}
 * counts the replicas of candidate shape c (candidates.h) of model i, each
 * priced on the requests that reach model i (their lengths from the
 * profile's sample); the node classes' GPUs are shared by all models.
 *   capacity: max kappa  s.t.  sum_c cap_{i,c} n_{i,c} >= reach_i * kappa
 *   cost:     min sum usd n  s.t.  sum_c cap_{i,c} n_{i,c} >= reach_i * rate
 * An escalated request pays every stage it visits: its first token from
 * model i comes after whole answers from models 0..i-1.  Each of the C
 * stages (models some request reaches) is therefore held to a TTFT budget
 * a = (TTFT SLO - (C-1) * G) / C, where G =
 * (percentile output length - 1) * TPOT SLO bounds one earlier answer, so
 * a request escalated through all C models still meets the SLO.
 *
 * Routing level: thresholds theta on a grid of 5 points (0..100, and
 * "skip": a threshold above 100 leaves its model out) are
 * searched by a weighted Tchebycheff scalarization of (latency, quality):
 *   T(theta) = max(W_LAT * (f - f*) / f*,  W_QUAL * (Q* - Q) / (Q* - floor))
 * where f is 1/kappa (seconds of cluster time per request, the deployment's
 * latency figure) or the cost, f* the ideal (everything answered by the
 * first model), Q* the best quality any theta reaches; subject to Q(theta)
 * >= the floor.  The search starts at the feasible theta with the least
 * estimated work (traffic reaching each model over its best capacity per
 * GPU), moves to the best neighbour (one threshold +- step, a model
 * skipped, or a skipped one back at a grid value) while T
 * improves, halves the step (20, 10, 5) when it does not, and stops after
 * STABLE_ITERS iterations without improvement, or at the evaluation limit
 * (work_limit) or the time limit (time_limit).
 *
 * route: one stage.  Fractions z_i of the traffic go to model i (each sees
 * the whole workload), within one MILP: max kappa (or min cost at the rate)
 * s.t. sum_c cap_{i,c} n_{i,c} >= z_i, sum_i z_i = kappa (or the rate) and
 * sum_i (meanscore_i - floor) z_i >= 0: the quality floor is linear in the
 * fractions, so the MILP's optimum is the plan's.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "planners/candidates.h"
#include "solver/milp.h"
#include "planners/cascade.h"
#include "model/quality.h"

#define W_LAT        0.9
#define W_QUAL       0.1
#define STABLE_ITERS 3
#define MAX_EVALS    60
#define GRID         5.0
#define MAXM         HX_QUALITY_MAX_MODELS
#define HX_FILL_CAP  2.0 /* headroom counted up to twice what kappa asks */

typedef struct cset {
	int model, ok, full;
	double prefix[MAXM]; /* thresholds of the models before it */
	double budget_ms;    /* the TTFT its candidates were priced at */
	hx_workload w;
	hx_candset s;
} cset;

/* A deployment the search solved (under a time limit): the plan falls back
 * on it when its own solve, on what is left of the limit, finds none. */
typedef struct solved {
	double theta[MAXM];
	hx_milp_result res;
	double val;
} solved;

typedef struct ctx {
	const hx_problem *pb;
	hx_model models[MAXM]; /* the profile's, resolved */
	const hx_plan_opts *o;
	const hx_quality *q;
	int route, even;   /* even: each serving model gets at most its equal share of GPUs */
	double out_ms;     /* G: one earlier answer at the percentile output and TPOT SLO */
	double fill_kappa; /* > 0: keep kappa >= this, spend the spare GPUs (see choose) */
	int final;         /* the plan's own solves: they run even past the deadline */
	cset **cache;
	int ncache;
	long nodes, iterations;
	int evals, time_cut, work_cut;
	int unpriced;    /* 1 + the model none of whose shapes the search priced in time */
	double deadline; /* hx_deadline of the call's time limit */
	solved *kept;    /* the search's deployments, under a time limit */
	int nkept;
} ctx;

/* Each stage's TTFT budget in a cascade of STAGES models (route: the SLO). */
static double budget(const ctx *x, int stages)
{
	double t = x->pb->workload->slo.ttft_ms;
	if (x->route || stages <= 1)
		return t;
	return (t - (stages - 1) * x->out_ms) / stages;
}

/* The candidates of model M for the requests that reach it under THETA
 * (NULL: the whole sample), priced with TTFT budget BUDGET_MS until the
 * call's deadline; cached by the thresholds before M.  A set the deadline
 * cut short keeps its s.cut in the cache: once the deadline has passed,
 * pricing again would only cut sooner.  NULL with ERR on error. */
static cset *cands_cached(ctx *x, int m, const double *theta, double budget_ms, hx_err *err)
{
	cset *c;
	hx_problem pb = *x->pb;
	hx_cand_opts co = {0, x->deadline};

	/* Every request reaches the first model unless it is skipped: the
	 * whole sample's set is its set (at the same budget), priced once. */
	if (theta && m == 0 && !(x->q->nmodels > 1 && theta[0] > 100))
		theta = NULL;
	for (int i = 0; i < x->ncache; i++) {
		c = x->cache[i];
		if (c->model == m && c->full == !theta && c->budget_ms == budget_ms &&
		    (!theta || memcmp(c->prefix, theta, (size_t)m * sizeof(double)) == 0))
			return c;
	}
	c = hx_xcalloc(1, sizeof(cset));
	c->model = m;
	c->full = !theta;
	c->budget_ms = budget_ms;
	if (theta)
		memcpy(c->prefix, theta, (size_t)m * sizeof(double));
	x->cache = hx_xrealloc(x->cache, (size_t)(x->ncache + 1) * sizeof(cset *));
	x->cache[x->ncache++] = c;
	if (hx_cascade_model_workload(x->q, x->pb->workload, theta, m, &c->w, NULL))
		return c; /* nothing reaches M: no candidates, ok 0 */
	c->w.slo.ttft_ms = budget_ms;
	pb.model = &x->models[m];
	pb.workload = &c->w;
	if (hx_candidates(&pb, &co, &c->s, err))
		return NULL;
	c->ok = 1;
	return c;
}

/* cands_cached's set, or NULL with ERR on error and (HX_ELIMIT) when the
 * deadline passed before any of M's shapes was priced. */
static cset *cands(ctx *x, int m, const double *theta, double budget_ms, hx_err *err)
{
	cset *c = cands_cached(x, m, theta, budget_ms, err);

	if (c && c->ok && c->s.cut && c->s.n == 0) {
		hx_plan_err_unpriced(err, x->models[m].name);
		return NULL;
	}
	return c;
}

static void cache_free(ctx *x)
{
	for (int i = 0; i < x->ncache; i++) {
		if (x->cache[i]->ok)
			hx_candset_release(&x->cache[i]->s);
		hx_workload_release(&x->cache[i]->w);
		free(x->cache[i]);
	}
	free(x->cache);
	for (int i = 0; i < x->nkept; i++)
		free(x->kept[i].res.x);
	free(x->kept);
}

/* One integer variable per model and candidate shape: its replicas (cost:
 * priced).  BASE[i] is model i's first; returns the count. */
static int add_counts(hx_milp *m, cset **sets, int nm, int cost, int *base)
{
	int nv = 0;

	for (int i = 0; i < nm; i++) {
		base[i] = nv;
		if (!sets[i] || !sets[i]->ok)
			continue;
		for (int c = 0; c < sets[i]->s.n; c++) {
			const hx_candset *s = &sets[i]->s;
			const hx_candidate *cd = &s->c[c];
			double ub = INFINITY;
			char name[160];
			for (int k = 0; k < s->ncls; k++) {
				int u = hx_cand_use(cd, k);
				if (u > 0)
					ub = fmin(ub, floor((double)s->cls[k].nnodes *
							    s->cls[k].gpus_per_node / u));
			}
			snprintf(name, sizeof(name), "n_m%d_%d_%s_tp%d_pp%d", i, c,
				 s->cls[cd->st[0].cls].gpu->name, cd->st[0].tp, cd->nstages);
			hx_milp_add_var(m, name, HX_MILP_INT, 0, ub,
					cost ? cd->usd_per_hour : 0);
			nv++;
		}
	}
	return nv;
}

/* GPUs of each node class of S0, shared by all models. */
static void add_gpu_rows(hx_milp *m, const hx_candset *s0, cset **sets, int nm, const int *base,
			 int *idx, double *v)
{
	for (int k = 0; k < s0->ncls; k++) {
		int n = 0;
		char name[160];
		for (int i = 0; i < nm; i++)
			for (int c = 0; sets[i] && sets[i]->ok && c < sets[i]->s.n; c++) {
				int u = hx_cand_use(&sets[i]->s.c[c], k);
				if (u > 0) {
					idx[n] = base[i] + c;
					v[n++] = u;
				}
			}
		snprintf(name, sizeof(name), "gpus_%s_class%d", s0->cls[k].gpu->name, k);
		if (n > 0)
			hx_milp_add_row(m, name, n, idx, v, -INFINITY,
					(double)s0->cls[k].nnodes * s0->cls[k].gpus_per_node);
	}
}

/* An even split: no model gets more than its share of the cluster's GPUs. */
static void add_even_rows(const ctx *x, hx_milp *m, cset **sets, int nm, const int *base,
			  int *idx, double *v)
{
	int k = 0, gpus = hx_cluster_gpus(x->pb->cluster);
	for (int i = 0; i < nm; i++)
		k += sets[i] != NULL;
	for (int i = 0; i < nm; i++) {
		int n = 0;
		char name[32];
		for (int c = 0; sets[i] && sets[i]->ok && c < sets[i]->s.n; c++) {
			idx[n] = base[i] + c;
			v[n++] = sets[i]->s.c[c].gpus;
		}
		snprintf(name, sizeof(name), "even_m%d", i);
		if (n > 0)
			hx_milp_add_row(m, name, n, idx, v, -INFINITY, floor((double)gpus / k));
	}
}

/* One deployment: the MILP for THETA (cascade) or the split (route).  On
 * return *VAL is kappa (capacity) or the cost, 0 / INFINITY when no
 * deployment carries the traffic; SETS get each model's candidates and RES
 * the solution (caller frees res->x).  LP: write the model. */
static int deploy(ctx *x, const double *theta, char **lp, cset **sets, hx_milp_result *res,
		  double *val, hx_err *err)
{
	const hx_quality *q = x->q;
	const hx_candset *s0 = NULL;
	int cost = x->o->objective == HX_OBJ_COST, nm = q->nmodels, rc, kappa = -1, z0 = -1;
	int base[MAXM], nv = 0, h0 = -1;
	double lambda = x->pb->workload->rate_rps;
	hx_cascade_eval ev;
	hx_milp *m;
	hx_milp_opts mo;
	int *idx;
	double *v;

	double bud;

	memset(res, 0, sizeof(*res));
	*val = cost ? INFINITY : 0;
	if (!x->route)
		hx_cascade_evaluate(q, theta, &ev);
	bud = budget(x, x->route ? 1 : ev.stages);
	if (bud <= 0)
		return 0; /* too many stages for the TTFT SLO */
	for (int i = 0; i < nm; i++) {
		if (!x->route && ev.reach[i] <= 0) {
			sets[i] = NULL;
			continue;
		}
		if (!(sets[i] = cands(x, i, x->route ? NULL : theta, bud, err))) {
			if (err->code != HX_ELIMIT || x->final)
				return err->code ? err->code : HX_EINPUT;
			/* the search stops; choose says why if it has no plan */
			x->time_cut = 1;
			x->unpriced = i + 1;
			return 0;
		}
		/* a plan on shapes the deadline cut short is itself cut short */
		if (sets[i]->ok && sets[i]->s.cut)
			x->time_cut = 1;
		if (sets[i]->ok && sets[i]->s.n > 0)
			s0 = &sets[i]->s;
		else if (!x->route)
			return 0; /* a model that must serve has no shape */
	}
	if (!s0)
		return 0;
	/* Every solve gets what is left of the limit; the search's stop when
	 * nothing is, the plan's own still run (with at least a millisecond). */
	if (!x->final && hx_past(x->deadline)) {
		x->time_cut = 1;
		return 0;
	}
	mo = hx_plan_milp_opts(x->o, x->deadline);
	mo.lp_text = lp;
	m = hx_milp_new(!cost);
	nv = add_counts(m, sets, nm, cost, base);
	if (!cost)
		kappa = nv++,
		hx_milp_add_var(m, "kappa", HX_MILP_CONT,
				x->fill_kappa > 0 ? x->fill_kappa * (1 - 1e-9) : 0, INFINITY,
				x->fill_kappa > 0 ? 0 : 1);
	if (x->fill_kappa > 0 && !x->route) {
		h0 = nv;
		for (int i = 0; i < nm; i++) {
			char name[32];
			snprintf(name, sizeof(name), "headroom_m%d", i);
			hx_milp_add_var(m, name, HX_MILP_CONT, 0, sets[i] ? HX_FILL_CAP : 0, 1);
			nv++;
		}
	}
	if (x->route) {
		z0 = nv;
		for (int i = 0; i < nm; i++) {
			char name[32];
			snprintf(name, sizeof(name), "z_m%d", i);
			hx_milp_add_var(m, name, HX_MILP_CONT, 0, INFINITY, 0);
			nv++;
		}
	}
	idx = hx_xmalloc((size_t)(nv + 1) * sizeof(int));
	v = hx_xmalloc((size_t)(nv + 1) * sizeof(double));
	/* GPUs of each node class, shared by all models. */
	add_gpu_rows(m, s0, sets, nm, base, idx, v);
	/* Each model carries what reaches it. */
	for (int i = 0; i < nm; i++) {
		int n = 0;
		double lo = 0;
		char name[32];
		if (!sets[i])
			continue;
		for (int c = 0; sets[i]->ok && c < sets[i]->s.n; c++) {
			idx[n] = base[i] + c;
			v[n++] = sets[i]->s.c[c].capacity_rps;
		}
		if (x->route) {
			idx[n] = z0 + i;
			v[n++] = -1;
		} else if (!cost) {
			idx[n] = kappa;
			v[n++] = -ev.reach[i];
		} else {
			lo = ev.reach[i] * lambda;
		}
		snprintf(name, sizeof(name), "serve_m%d", i);
		hx_milp_add_row(m, name, n, idx, v, lo, INFINITY);
		if (h0 >= 0) { /* headroom_i <= capacity_i / (reach_i kappa*) */
			n = 0;
			for (int c = 0; sets[i]->ok && c < sets[i]->s.n; c++) {
				idx[n] = base[i] + c;
				v[n++] = sets[i]->s.c[c].capacity_rps /
					 (ev.reach[i] * x->fill_kappa);
			}
			idx[n] = h0 + i;
			v[n++] = -1;
			snprintf(name, sizeof(name), "headroom_row_m%d", i);
			hx_milp_add_row(m, name, n, idx, v, 0, INFINITY);
		}
	}
	if (x->even)
		add_even_rows(x, m, sets, nm, base, idx, v);
	if (x->route) {
		for (int i = 0; i < nm; i++) {
			idx[i] = z0 + i;
			v[i] = 1;
		}
		if (!cost) {
			idx[nm] = kappa;
			v[nm] = -1;
			hx_milp_add_row(m, "split", nm + 1, idx, v, 0, 0);
		} else {
			hx_milp_add_row(m, "split", nm, idx, v, lambda, lambda);
		}
		for (int i = 0; i < nm; i++)
			v[i] = hx_quality_mean(q, i) - q->floor;
		hx_milp_add_row(m, "quality_floor", nm, idx, v, 0, INFINITY);
	}
	rc = hx_milp_solve(m, &mo, res, err);
	hx_milp_free(m);
	free(idx);
	free(v);
	if (rc)
		return rc;
	x->evals++;
	x->nodes += res->nodes;
	x->iterations += res->iterations;
	if (res->status == HX_MILP_TIME_LIMIT || res->status == HX_MILP_NO_SOLUTION)
		x->time_cut |= x->o->time_limit_s > 0;
	if (res->status <= HX_MILP_TIME_LIMIT)
		*val = cost ? res->objective : (kappa >= 0 ? res->x[kappa] : 0);
	return 0;
}

/* Score of a deployment value: f = 1/kappa or the cost (lower is better). */
static double f_of(const ctx *x, double val)
{
	if (x->o->objective == HX_OBJ_COST)
		return val;
	return val > 0 ? 1 / val : INFINITY;
}

typedef struct eval {
	double theta[MAXM];
	double val, f, quality, tcheb;
} eval;

/* Values a threshold takes on the grid: 0, GRID, ..., 100, then skip. */
#define NVALS ((int)(100 / GRID) + 2)
static double grid_value(int k)
{
	return k == NVALS - 1 ? HX_CASCADE_SKIP : GRID * k;
}

/* Evaluate E.theta (a deployment unless SEEN has it); 1 when it was new. */
static int visit(ctx *x, eval *e, eval *seen, int *nev, double fstar, double qstar, int *rc,
		 hx_err *err)
{
	cset *sets[MAXM];
	hx_milp_result res;
	hx_cascade_eval ev;
	double lt, qt;

	for (int k = 0; k < *nev; k++)
		if (memcmp(seen[k].theta, e->theta, sizeof(e->theta)) == 0) {
			*e = seen[k];
			return 0;
		}
	hx_cascade_evaluate(x->q, e->theta, &ev);
	e->quality = ev.quality;
	if ((*rc = deploy(x, e->theta, NULL, sets, &res, &e->val, err)))
		return 0;
	if (x->o->time_limit_s > 0 && res.x && res.status <= HX_MILP_TIME_LIMIT) {
		x->kept = hx_xrealloc(x->kept, (size_t)(x->nkept + 1) * sizeof(solved));
		memcpy(x->kept[x->nkept].theta, e->theta, sizeof(e->theta));
		x->kept[x->nkept].res = res;
		x->kept[x->nkept++].val = e->val;
	} else {
		free(res.x);
	}
	e->f = f_of(x, e->val);
	lt = isfinite(fstar) && fstar > 0 ? (e->f - fstar) / fstar : e->f;
	qt = (qstar - e->quality) / fmax(qstar - x->q->floor, 1);
	e->tcheb = isfinite(e->f) ? fmax(W_LAT * lt, W_QUAL * qt) : INFINITY;
	seen[(*nev)++] = *e;
	return 1;
}

/* Whether model M has no shape at the SLO only because of the TPOT SLO:
 * with the TPOT SLO lifted (the stage's TTFT budget kept) some shape
 * carries traffic. */
static int tpot_binds(ctx *x, int m)
{
	hx_err ignore = {0};
	cset *c = cands(x, m, NULL, budget(x, 1), &ignore);
	hx_problem pb = *x->pb;
	hx_cand_opts co = {0, x->deadline};
	hx_workload w;
	hx_candset s;
	int binds = 0;

	if (!c || !c->ok || c->s.n > 0)
		return 0;
	w = c->w;
	w.slo.tpot_ms = 1e12;
	pb.model = &x->models[m];
	pb.workload = &w;
	if (hx_candidates(&pb, &co, &s, NULL))
		return 0;
	/* a set the deadline cut short says nothing */
	for (int k = 0; k < s.n && !s.cut; k++)
		binds |= s.c[k].capacity_rps > 0;
	hx_candset_release(&s);
	return binds;
}

/* The first model no GPU set serves within the TPOT SLO: ERR says that
 * SLO binds and HX_EINFEASIBLE is returned; 0 when every model has a set. */
static int tpot_binding(ctx *x, hx_err *err)
{
	for (int i = 0; i < x->q->nmodels; i++)
		if (tpot_binds(x, i))
			return hx_errf(
			    err, HX_EINFEASIBLE,
			    "the TPOT SLO of %g ms binds: no GPU set serves %s within it, and the quality floor of %g needs it",
			    x->pb->workload->slo.tpot_ms, x->models[i].name, x->q->floor);
	return 0;
}

/* No thresholds meet the floor with every model they reach served: ERR
 * says which SLO binds (the TPOT SLO, when no shape of a model meets it)
 * or that the floor is out of reach.  Returns HX_EINFEASIBLE. */
static int unreachable(ctx *x, double qstar, double qreach, hx_err *err)
{
	const hx_quality *q = x->q;
	int rc;

	if (qreach >= q->floor - 1e-9 && (rc = tpot_binding(x, err)))
		return rc;
	if (qreach >= q->floor - 1e-9)
		return hx_errf(
		    err, HX_EINFEASIBLE,
		    "no deployment carries any traffic at the SLO with quality >= %g (a model that must serve fits no GPU set)",
		    q->floor);
	return hx_errf(
	    err, HX_EINFEASIBLE,
	    "the quality floor of %g is above what any thresholds reach (at most %.2f)",
	    q->floor, qstar);
}

/* The routing level's search (see the header); BEST gets the chosen theta. */
static int search(ctx *x, eval *best, hx_err *err)
{
	const hx_quality *q = x->q;
	int nt = q->nmodels - 1, rc = 0, nev = 0, stable = 0, budget_bound = 0;
	double fstar, qstar = 0, qreach = -1, proxy_best = INFINITY, gpu_rate[MAXM];
	double step = 20;
	eval *seen, cur;
	long npts = 1;

	/* Q* and the starting point: the best quality on the grid, and the
	 * feasible theta with the least estimated work. */
	for (int i = 0; i < q->nmodels; i++) {
		cset *c;
		gpu_rate[i] = 0;
		if (!(c = cands(x, i, NULL, budget(x, 1), err)))
			return err->code ? err->code : HX_EINPUT;
		for (int k = 0; c->ok && k < c->s.n; k++)
			gpu_rate[i] =
			    fmax(gpu_rate[i], c->s.c[k].capacity_rps / c->s.c[k].gpus);
	}
	for (int i = 0; i < nt; i++)
		npts *= NVALS;
	memset(&cur, 0, sizeof(cur));
	cur.quality = -1;
	for (long p = 0; p < npts; p++) {
		double th[MAXM] = {0}, proxy = 0;
		hx_cascade_eval ev;
		long r = p;
		for (int i = 0; i < nt; i++) {
			th[i] = grid_value((int)(r % NVALS));
			r /= NVALS;
		}
		hx_cascade_evaluate(q, th, &ev);
		if (budget(x, ev.stages) <= 0) {
			budget_bound |= ev.quality >= q->floor - 1e-9;
			continue;
		}
		qstar = fmax(qstar, ev.quality);
		if (ev.quality < q->floor - 1e-9)
			continue;
		qreach = fmax(qreach, ev.quality);
		for (int i = 0; i < q->nmodels; i++)
			proxy += ev.reach[i] > 0
				     ? (gpu_rate[i] > 0 ? ev.reach[i] / gpu_rate[i] : INFINITY)
				     : 0;
		if (proxy < proxy_best - 1e-12 ||
		    (fabs(proxy - proxy_best) <= 1e-12 && ev.quality > cur.quality)) {
			proxy_best = proxy;
			memcpy(cur.theta, th, sizeof(th));
			cur.quality = ev.quality;
		}
	}
	if (cur.quality < 0 && budget_bound) {
		double op = hx_dist_quantile(&x->pb->workload->output,
					     x->pb->workload->slo.percentile / 100);
		return hx_errf(
		    err, HX_EINFEASIBLE,
		    "the TTFT SLO of %g ms cannot cover a request escalated through the models the quality floor of %g needs: each earlier answer may take %.0f ms (%.0f tokens, the p%g output, at the TPOT SLO of %g ms)",
		    x->pb->workload->slo.ttft_ms, q->floor, x->out_ms, op,
		    x->pb->workload->slo.percentile, x->pb->workload->slo.tpot_ms);
	}
	if (cur.quality < 0)
		return unreachable(x, qstar, qreach, err);
	/* The ideal: everything answered by the first model. */
	{
		double zero[MAXM] = {0};
		cset *sets[MAXM];
		hx_milp_result res;
		double val;
		if ((rc = deploy(x, zero, NULL, sets, &res, &val, err)))
			return rc;
		free(res.x);
		fstar = f_of(x, val);
	}
	seen = hx_xmalloc(sizeof(eval) * (MAX_EVALS + 2));
	visit(x, &cur, seen, &nev, fstar, qstar, &rc, err);
	while (!rc && stable < STABLE_ITERS && !x->time_cut) {
		eval nb = cur;
		nb.tcheb = INFINITY;
		/* Neighbours: one threshold up or down by the step; a model
		 * skipped, or a skipped one back at a grid value. */
		for (int i = 0; i < nt && !rc && !x->time_cut; i++)
			for (int k = -1; k <= (int)(100 / step) && !rc; k++) {
				eval e;
				hx_cascade_eval ev;
				memcpy(e.theta, cur.theta, sizeof(e.theta));
				if (cur.theta[i] > 100) {
					if (k < 0)
						continue;
					e.theta[i] = k * step;
				} else if (k == -1) {
					e.theta[i] = HX_CASCADE_SKIP;
				} else if (k <= 1) {
					e.theta[i] += (k ? 1 : -1) * step;
					if (e.theta[i] < 0 || e.theta[i] > 100)
						continue;
				} else {
					continue;
				}
				hx_cascade_evaluate(q, e.theta, &ev);
				if (ev.quality < q->floor - 1e-9)
					continue;
				if (nev >= MAX_EVALS) {
					int known = 0;
					for (int j = 0; j < nev && !known; j++)
						known = memcmp(seen[j].theta, e.theta,
							       sizeof(e.theta)) == 0;
					if (!known) {
						x->work_cut = 1;
						goto out;
					}
				}
				visit(x, &e, seen, &nev, fstar, qstar, &rc, err);
				if (e.tcheb < nb.tcheb - 1e-12)
					nb = e;
			}
		if (nb.tcheb < cur.tcheb - 1e-9) {
			cur = nb;
		} else {
			stable++;
			if (step > GRID)
				step /= 2;
		}
	}
out:
	*best = cur;
	free(seen);
	return rc;
}

typedef struct pick {
	int model, cand, n, width;
} pick;

static int cmp_pick(const void *a, const void *b)
{
	const pick *x = a, *y = b;
	if (x->width != y->width)
		return y->width - x->width;
	if (x->model != y->model)
		return x->model - y->model;
	return x->cand - y->cand;
}

/* Place N replicas of candidate C of model MD as a new group. */
static void place(const hx_problem *pb, const hx_model *md, const hx_candset *s,
		  const hx_candidate *c, int n, int *free_gpus, int *next, hx_plan *p)
{
	hx_problem pm = *pb;
	pm.model = md;
	hx_cand_place(&pm, s, c, n, free_gpus, next, p);
}

/* What the final deployment chose: its thresholds, each model's candidates,
 * the MILP's solution and the replicas to place (run frees res.x and
 * picks; the sets belong to the ctx's cache). */
typedef struct chosen {
	eval best;
	cset *sets[MAXM];
	hx_milp_result res;
	double val, kappa_opt;
	hx_cascade_eval ev;         /* cascade: each model's reach at best.theta */
	double served[MAXM], total; /* route: each model's traffic */
	pick *picks;
	int npicks, first;
} chosen;

/* Resolve the profile's models into X and refuse what the planner cannot
 * plan (MODE names it in the errors).  X is zeroed but for its deadline. */
static int setup(ctx *x, const hx_problem *pb, const hx_plan_opts *o, int route, int even,
		 const char *mode, hx_err *err)
{
	const hx_quality *q = pb->workload->quality;
	const hx_workload *w = pb->workload;
	int nm;

	if (!q)
		return hx_errf(err, HX_EINPUT,
			       "%s plans need the workload's quality profile (\"quality\")",
			       mode);
	nm = q->nmodels;
	for (int i = 0; i < nm; i++)
		if (hx_model_resolve(pb->cat, q->model[i], &x->models[i], err)) {
			char msg[sizeof(err->msg)];
			snprintf(msg, sizeof(msg), "%s: /quality/models/%d: %.900s",
				 hx_display_path(pb->workload_path), i, err->msg);
			hx_strlcpy(err->msg, msg, sizeof(err->msg));
			return HX_EINPUT;
		}
	if (o->objective == HX_OBJ_LATENCY)
		return hx_errf(err, HX_EUSAGE,
			       "%s plans maximize capacity or minimize cost, not latency",
			       mode);
	if (pb->cluster->nnodes == 0)
		return hx_errf(err, HX_EINFEASIBLE,
			       "the cluster has offers but no nodes: %s plans fixed nodes",
			       mode);
	x->pb = pb;
	x->o = o;
	x->q = q;
	x->route = route;
	x->even = even;
	x->out_ms =
	    fmax(hx_dist_quantile(&w->output, w->slo.percentile / 100) - 1, 0) * w->slo.tpot_ms;
	if (route) {
		int top = 0;
		for (int i = 1; i < nm; i++)
			if (hx_quality_mean(q, i) > hx_quality_mean(q, top))
				top = i;
		if (hx_quality_mean(q, top) < q->floor - 1e-9)
			return hx_errf(
			    err, HX_EINFEASIBLE,
			    "the quality floor of %g is above what any split reaches (at most %.2f, everything to %s)",
			    q->floor, hx_quality_mean(q, top), q->model[top]);
	}
	return 0;
}

/* The thresholds (THETA when given, else the search's; none for route) and
 * their deployment into D, the spare GPUs spent on headroom; an error when
 * it carries no traffic. */
static int choose(ctx *x, const double *theta, chosen *d, hx_err *err)
{
	const hx_quality *q = x->q;
	const hx_plan_opts *o = x->o;
	int route = x->route, rc, nm = q->nmodels;

	if (theta) {
		hx_cascade_eval e0;
		memcpy(d->best.theta, theta, (size_t)(nm - 1) * sizeof(double));
		hx_cascade_evaluate(q, d->best.theta, &e0);
		if (e0.quality < q->floor - 1e-9)
			return hx_errf(
			    err, HX_EINFEASIBLE,
			    "these thresholds reach quality %.2f, below the floor of %g",
			    e0.quality, q->floor);
	} else if (!route && (rc = search(x, &d->best, err))) {
		return rc;
	}
	/* Once the search has an incumbent, a time limit it hit does not take
	 * the plan away: the incumbent's solves run on what is left. */
	x->final = theta || route || d->best.val > 0;
	if ((rc = deploy(x, d->best.theta, o->lp_path ? o->lp_text : NULL, d->sets, &d->res,
			 &d->val, err)))
		return rc;
	/* what was left was too little for that solve: the search's own */
	for (int i = 0; i < x->nkept && d->res.status > HX_MILP_TIME_LIMIT; i++)
		if (memcmp(x->kept[i].theta, d->best.theta, sizeof(d->best.theta)) == 0) {
			free(d->res.x);
			d->res = x->kept[i].res;
			d->val = x->kept[i].val;
			x->kept[i].res.x = NULL;
			x->time_cut = 1;
		}
	/* The MILP's optimum is a bottleneck: only the model that binds kappa
	 * needs all it has, and GPUs may be left over.  A second program keeps
	 * kappa and spends what is left on the models' headroom (capacity over
	 * what kappa asks of each, counted up to HX_FILL_CAP, summed), since the
	 * cost model's errors differ between models. */
	d->kappa_opt = d->val;
	if (!route && o->objective != HX_OBJ_COST && d->res.status <= HX_MILP_TIME_LIMIT &&
	    d->val > 0) {
		hx_milp_result r2;
		double v2;
		x->fill_kappa = d->val;
		if ((rc = deploy(x, d->best.theta, NULL, d->sets, &r2, &v2, err)))
			return rc;
		x->fill_kappa = 0;
		if (r2.status <= HX_MILP_TIME_LIMIT) {
			free(d->res.x);
			d->res.x = r2.x;
			if (r2.status > d->res.status)
				d->res.status = r2.status;
		} else {
			free(r2.x);
		}
	}
	if (d->res.status > HX_MILP_TIME_LIMIT ||
	    (o->objective == HX_OBJ_COST ? !isfinite(d->val) : d->val <= 0)) {
		if (x->unpriced)
			return hx_plan_err_unpriced(err, x->models[x->unpriced - 1].name);
		if (x->time_cut || d->res.status == HX_MILP_NO_SOLUTION)
			return hx_errf(err, HX_ELIMIT,
				       "the time limit was reached before any plan");
		if (o->objective == HX_OBJ_COST)
			return hx_errf(
			    err, HX_EINFEASIBLE,
			    "the workload's rate of %g req/s is above what the cluster carries at the SLO with quality >= %g",
			    x->pb->workload->rate_rps, q->floor);
		if ((rc = tpot_binding(x, err)))
			return rc;
		return hx_errf(
		    err, HX_EINFEASIBLE,
		    "no deployment carries any traffic at the SLO with quality >= %g (a model that must serve fits no GPU set, or its stage's TTFT budget is too short)",
		    q->floor);
	}
	return 0;
}

/* Traffic per model, and the replicas to place (D->picks, widest first). */
static void pick_replicas(const ctx *x, chosen *d)
{
	cset **sets = d->sets;
	int nm = x->q->nmodels, route = x->route;

	{
		int nv = 0, z0;
		for (int i = 0; i < nm; i++)
			nv += sets[i] && sets[i]->ok ? sets[i]->s.n : 0;
		z0 = nv + (x->o->objective == HX_OBJ_COST ? 0 : 1);
		if (route) {
			for (int i = 0; i < nm; i++)
				d->total += d->served[i] = fmax(d->res.x[z0 + i], 0);
		} else {
			hx_cascade_evaluate(x->q, d->best.theta, &d->ev);
		}
	}
	{
		size_t ncand = 1;
		for (int i = 0; i < nm; i++)
			ncand += sets[i] && sets[i]->ok ? (size_t)sets[i]->s.n : 0;
		d->picks = hx_xcalloc(ncand, sizeof(pick));
	}
	{
		int base = 0;
		for (int i = 0; i < nm; i++) {
			if (!sets[i] || !sets[i]->ok)
				continue;
			if (!route || d->served[i] > 1e-9 * fmax(d->total, 1e-9))
				for (int c = 0; c < sets[i]->s.n; c++) {
					int n = (int)floor(d->res.x[base + c] + 0.5), wd = 0;
					for (int k = 0; k < sets[i]->s.c[c].nstages; k++)
						wd = sets[i]->s.c[c].st[k].tp > wd
							 ? sets[i]->s.c[c].st[k].tp
							 : wd;
					if (n > 0)
						d->picks[d->npicks++] = (pick){i, c, n, wd};
				}
			base += sets[i]->s.n;
		}
	}
	qsort(d->picks, (size_t)d->npicks, sizeof(pick), cmp_pick);
}

/* P's models, groups, ingress and (cascade) steps from D's replicas. */
static void lay_out(ctx *x, chosen *d, hx_plan *p)
{
	const hx_problem *pb = x->pb;
	const pick *picks = d->picks;
	int nm = x->q->nmodels, route = x->route, npicks = d->npicks;
	int *free_gpus, *next;

	free_gpus = hx_xcalloc((size_t)pb->cluster->nnodes + 1, sizeof(int));
	next = hx_xcalloc((size_t)pb->cluster->nnodes + 1, sizeof(int));
	for (int i = 0; i < pb->cluster->nnodes; i++)
		free_gpus[i] = pb->cluster->nodes[i].count;
	for (int i = 0; i < nm; i++) /* models in cascade order */
		for (int k = 0; k < npicks; k++)
			if (picks[k].model == i && !hx_plan_model(p, x->models[i].name))
				hx_plan_add_model(p, &x->models[i]);
	for (int k = 0; k < npicks; k++) {
		const cset *c = d->sets[picks[k].model];
		place(pb, &x->models[picks[k].model], &c->s, &c->s.c[picks[k].cand], picks[k].n,
		      free_gpus, next, p);
	}
	free(free_gpus);
	free(next);
	/* Ingress: the cascade enters at its first model; a split sends each
	 * model its fraction, over its groups in proportion to capacity. */
	for (int i = nm - 1; i >= 0 && !route; i--)
		if (d->ev.reach[i] > 0)
			d->first = i;
	for (int k = 0; k < npicks; k++) {
		const cset *c = d->sets[picks[k].model];
		int i = picks[k].model;
		double cap = c->s.c[picks[k].cand].capacity_rps * picks[k].n, mcap = 0;
		hx_route *rt;
		if (!route && i != d->first)
			continue;
		for (int j = 0; j < npicks; j++)
			if (picks[j].model == i)
				mcap +=
				    d->sets[i]->s.c[picks[j].cand].capacity_rps * picks[j].n;
		rt = hx_plan_add_route(&p->ingress, &p->ningress);
		hx_strlcpy(rt->to, p->groups[k].name, sizeof(rt->to));
		rt->weight = (route ? d->served[i] / d->total : 1) * cap / mcap;
	}
	hx_routes_normalize(p->ingress, p->ningress);
	if (!route) {
		int last = 0;
		for (int i = 0; i < nm; i++)
			if (d->ev.reach[i] > 0)
				last = i;
		for (int i = 0; i <= last; i++) {
			hx_cascade_step *st;
			if (d->ev.reach[i] <= 0)
				continue; /* skipped */
			p->cascade =
			    hx_xrealloc(p->cascade, (size_t)(p->ncascade + 1) * sizeof(*st));
			st = &p->cascade[p->ncascade++];
			memset(st, 0, sizeof(*st));
			hx_strlcpy(st->model, x->models[i].name, sizeof(st->model));
			st->threshold = i < last ? d->best.theta[i] : 0;
			st->escalate = i < last ? hx_round6(d->ev.escalate[i]) : 0;
		}
	}
}

/* A cascade's end-to-end latency into P->predicted: each stage at its share
 * of the served rate (spread over its replicas by capacity, as the
 * simulator routes), and a request escalated through every stage waits for
 * each earlier stage's first token and whole answer (its percentile output
 * at that stage's TPOT) before the last stage's first token. */
static void predict_latency(const ctx *x, const chosen *d, hx_plan *p)
{
	const hx_workload *w = x->pb->workload;
	cset *const *sets = d->sets;
	const pick *picks = d->picks;
	double served_rps = fmin(w->rate_rps, p->predicted.capacity_rps), e2e = 0, tpot = 0;
	int last = -1, nm = x->q->nmodels, npicks = d->npicks;

	for (int i = 0; i < nm; i++)
		if (d->ev.reach[i] > 0)
			last = i;
	for (int i = 0; i < nm; i++) {
		double cap = 0, t_ttft = 0, t_tpot = 0;
		hx_problem pi = *x->pb;
		if (d->ev.reach[i] <= 0)
			continue;
		pi.model = &x->models[i];
		pi.workload = &sets[i]->w;
		for (int j = 0; j < npicks; j++)
			if (picks[j].model == i)
				cap += sets[i]->s.c[picks[j].cand].capacity_rps * picks[j].n;
		for (int j = 0; j < npicks && cap > 0; j++) {
			const hx_candidate *cd = &sets[i]->s.c[picks[j].cand];
			hx_replica rep;
			hx_capacity at;
			if (picks[j].model != i)
				continue;
			hx_cand_replica(&pi, &sets[i]->s, cd, &rep);
			hx_cost_at_rate(&rep, &sets[i]->w,
					served_rps * d->ev.reach[i] * cd->capacity_rps / cap,
					&at);
			if (isfinite(at.ttft_ms))
				t_ttft = fmax(t_ttft, at.ttft_ms);
			if (isfinite(at.tpot_ms))
				t_tpot = fmax(t_tpot, at.tpot_ms);
		}
		tpot = fmax(tpot, t_tpot);
		e2e += t_ttft;
		if (i < last)
			e2e +=
			    fmax(hx_dist_quantile(&sets[i]->w.output, w->slo.percentile / 100) -
				     1,
				 0) *
			    t_tpot;
	}
	p->predicted.ttft_ms_p99 = hx_round6(e2e);
	p->predicted.tpot_ms_p99 = hx_round6(tpot);
}

/* P's predictions (capacity, latency, quality) and solver figures. */
static void predict(const ctx *x, const chosen *d, const double *theta, hx_plan *p)
{
	int nm = x->q->nmodels, route = x->route;

	if (x->o->objective != HX_OBJ_COST && route) {
		p->predicted.capacity_rps = hx_round6(d->val);
	} else if (x->o->objective != HX_OBJ_COST) {
		/* What the placed replicas carry: the model with the least
		 * capacity for its share binds (at least the MILP's kappa). */
		double k = INFINITY;
		for (int i = 0; i < nm; i++) {
			double cap = 0;
			if (d->ev.reach[i] <= 0)
				continue;
			for (int j = 0; j < d->npicks; j++)
				if (d->picks[j].model == i)
					cap += d->sets[i]->s.c[d->picks[j].cand].capacity_rps *
					       d->picks[j].n;
			k = fmin(k, cap / d->ev.reach[i]);
		}
		p->predicted.capacity_rps = hx_round6(fmax(k, d->kappa_opt));
	}
	if (!route)
		predict_latency(x, d, p);
	p->predicted.has_quality = 1;
	if (route) {
		double f[MAXM] = {0};
		for (int i = 0; i < nm; i++)
			f[i] = d->served[i] / d->total;
		p->predicted.quality = hx_round6(hx_route_quality(x->q, f));
	} else {
		p->predicted.quality = hx_round6(d->ev.quality);
	}
	p->solver.objective = hx_round6(d->val);
	p->solver.bound = hx_round6(route || theta ? d->res.bound : d->val);
	p->solver.gap = hx_round6(route || theta ? d->res.gap : 0);
	p->solver.nodes = x->nodes;
	p->solver.iterations = x->iterations;
}

static int run(const hx_problem *pb, const hx_plan_opts *o, int route, const double *theta,
	       int even, hx_plan *p, hx_err *err)
{
	ctx x;
	chosen d;
	int rc;

	hx_plan_init(p);
	strcpy(p->mode, route ? "route" : "cascade");
	memset(&x, 0, sizeof(x));
	memset(&d, 0, sizeof(d));
	x.deadline = hx_deadline(o->time_limit_s);
	if ((rc = setup(&x, pb, o, route, even, p->mode, err)))
		return rc;
	if ((rc = choose(&x, theta, &d, err)))
		goto out;
	pick_replicas(&x, &d);
	lay_out(&x, &d, p);
	strcpy(p->solver.engine, "glpk");
	if ((route || theta) && !x.time_cut)
		strcpy(p->solver.status, hx_milp_plan_status(d.res.status));
	else
		strcpy(p->solver.status, x.time_cut   ? "time_limit"
					 : x.work_cut ? "work_limit"
						      : "heuristic");
	{
		hx_problem pb1 = *pb;
		pb1.model = &x.models[d.first];
		if ((rc = hx_plan_finish(&pb1, p, 0, err)))
			goto out;
	}
	predict(&x, &d, theta, p);
out:
	free(d.picks);
	free(d.res.x);
	cache_free(&x);
	if (rc)
		hx_plan_release(p);
	return rc;
}

int hx_plan_cascade(const hx_problem *pb, const hx_plan_opts *o, hx_plan *p, hx_err *err)
{
	return run(pb, o, 0, NULL, 0, p, err);
}

int hx_plan_cascade_at(const hx_problem *pb, const hx_plan_opts *o, const double *theta,
		       hx_plan *p, hx_err *err)
{
	return run(pb, o, 0, theta, 0, p, err);
}

int hx_plan_cascade_even(const hx_problem *pb, const hx_plan_opts *o, const double *theta,
			 hx_plan *p, hx_err *err)
{
	return run(pb, o, 0, theta, 1, p, err);
}

int hx_plan_route(const hx_problem *pb, const hx_plan_opts *o, hx_plan *p, hx_err *err)
{
	return run(pb, o, 1, NULL, 0, p, err);
}
