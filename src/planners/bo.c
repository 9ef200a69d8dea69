/* plan_bo: see plan_bo.h. */
#include "config.h"

#include "planners/bo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planners/candidates.h"
#include "solver/gp.h"
#include "solver/mobo.h"
#include "model/gen.h"
#include "model/quality.h"
#include "sim/sim.h"

#define FSTEPS       20 /* routing fractions in steps of 1/FSTEPS */
#define MAXM         HX_BO_MAX_MODELS
#define NFEAT        4        /* GP inputs per model */
#define POOL         400      /* random candidates per iteration */
#define MUTATIONS    12       /* neighbours of each front point */
#define REFIT_EVERY  5        /* iterations between hyper-parameter fits */
#define NQUAD        32       /* normal quantiles for the ParEGO expectation */
#define ENUM_MAX     5000000L /* exhaustive and grid enumerate at most this */
#define GP_MAX_TRAIN 200      /* evaluations the GP is fitted on */
#define MAXC         12       /* shapes per model searched */

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
	long evals_seen; /* the exhaustive search's evaluations (it keeps only its front) */
	hx_trace trace;  /* --evaluate sim: the requests every evaluation replays */
	int have_trace;
} bo;

static int build_plan(bo *b, const cfg *k, double quality, hx_plan *p, hx_err *err);

static const hx_candidate *shape(const bo *b, int m, int c)
{
	return &b->s[m].c[b->cand[m][c]];
}

static int cfg_eq(const cfg *a, const cfg *b)
{
	return memcmp(a, b, sizeof(cfg)) == 0;
}

static int seen(const bo *b, const cfg *k)
{
	for (int i = 0; i < b->nev; i++)
		if (cfg_eq(&b->ev[i].k, k))
			return 1;
	return 0;
}

static int widest(const hx_candidate *c)
{
	int w = 0;
	for (int t = 0; t < c->nstages; t++)
		w = c->st[t].tp > w ? c->st[t].tp : w;
	return w;
}

/* Whether K's replicas pack onto the nodes (first fit, widest stage
 * first, as the plan places them); NODE (may be NULL) gets, for each
 * model, shape, replica and stage, the node it takes. */
static int packs(bo *b, const cfg *k, int *node)
{
	const hx_cluster *cl = b->pb->cluster;
	int order[MAXM * MAXC][2], no = 0;
	for (int i = 0; i < cl->nnodes; i++)
		b->free_gpus[i] = cl->nodes[i].count;
	for (int m = 0; m < b->nm; m++)
		for (int c = 0; c < b->nc[m]; c++)
			if (k->n[m][c] > 0) {
				int j = no++;
				/* insertion by decreasing width (stable) */
				while (j > 0 &&
				       widest(shape(b, order[j - 1][0], order[j - 1][1])) <
					   widest(shape(b, m, c))) {
					order[j][0] = order[j - 1][0];
					order[j][1] = order[j - 1][1];
					j--;
				}
				order[j][0] = m;
				order[j][1] = c;
			}
	for (int oi = 0; oi < no; oi++) {
		int m = order[oi][0], c = order[oi][1];
		const hx_candset *s = &b->s[m];
		const hx_candidate *cd = shape(b, m, c);
		for (int r = 0; r < k->n[m][c]; r++)
			for (int t = 0; t < cd->nstages; t++) {
				const hx_node_class *kl = &s->cls[cd->st[t].cls];
				int at = -1;
				for (int j = 0; j < kl->nnodes && at < 0; j++)
					if (b->free_gpus[kl->nodes[j]] >= cd->st[t].tp)
						at = kl->nodes[j];
				if (at < 0)
					return 0;
				b->free_gpus[at] -= cd->st[t].tp;
				if (node)
					node[(((size_t)m * MAXC + (size_t)c) * 256 +
					      (size_t)r) *
						 HX_CAND_MAX_STAGES +
					     (size_t)t] = at;
			}
	}
	return 1;
}

static double model_cost(const bo *b, const cfg *k, int m)
{
	double usd = 0;
	for (int c = 0; c < b->nc[m]; c++)
		usd += k->n[m][c] * shape(b, m, c)->usd_per_hour;
	return usd;
}

static double model_cap(const bo *b, const cfg *k, int m)
{
	double cap = 0;
	for (int c = 0; c < b->nc[m]; c++)
		cap += k->n[m][c] * shape(b, m, c)->capacity_rps;
	return cap;
}

static double cfg_cost(const bo *b, const cfg *k)
{
	double usd = 0;
	for (int m = 0; m < b->nm; m++)
		usd += model_cost(b, k, m);
	return usd;
}

static double cfg_quality(const bo *b, const cfg *k)
{
	/* hx_route_quality, with the means computed once (a hot path) */
	double sum = 0;
	for (int m = 0; m < b->q->nmodels; m++)
		sum += (m < b->nm ? (double)k->u[m] / FSTEPS : 0) * b->qmean[m];
	return sum;
}

static double model_rate(const bo *b, const cfg *k, int m)
{
	return (double)k->u[m] / FSTEPS * b->lambda;
}

/* Budget, inventory, quality floor and the capacity at the SLO of each
 * model's replicas (from the candidates' pricing): what is known before
 * evaluating.  A model without traffic has no replicas. */
static int feasible(bo *b, const cfg *k)
{
	for (int m = 0; m < b->nm; m++) {
		double cap = model_cap(b, k, m);
		if (k->u[m] == 0 ? cap > 0 : cap < model_rate(b, k, m) * (1 - 1e-9))
			return 0;
	}
	return cfg_cost(b, k) <= b->budget + 1e-9 && cfg_quality(b, k) >= b->q->floor - 1e-9 &&
	       packs(b, k, NULL);
}

/* The GP's inputs for K: per model its fraction, log load (its rate over
 * its replicas' capacity at the SLO), its share of the GPUs and of the
 * budget. */
static void features(const bo *b, const cfg *k, double *x)
{
	for (int m = 0; m < b->nm; m++) {
		double *f = x + m * NFEAT, cap = model_cap(b, k, m);
		int gpus = 0;
		f[0] = (double)k->u[m] / FSTEPS;
		for (int c = 0; c < b->nc[m]; c++)
			gpus += k->n[m][c] * shape(b, m, c)->gpus;
		f[1] = cap > 0 ? fmax(log(fmax(model_rate(b, k, m) / cap, 1e-6)) / 3, -2) : -2;
		f[2] = (double)gpus / b->totgpus;
		f[3] = model_cost(b, k, m) / b->budget;
	}
}

/* Evaluate K with the cost model into E: each model's rate spread over
 * its replicas in proportion to capacity (as the plan's ingress does). */
static void evaluate(bo *b, const cfg *k, evalpt *e)
{
	double lat = 0;
	int ok = 1;
	e->k = *k;
	e->cost = cfg_cost(b, k);
	e->q = cfg_quality(b, k);
	if (b->have_trace) {
		/* the simulator's percentile end to end, the SLO met when the
		 * attainment reaches the workload's target */
		const hx_workload *w = b->pb->workload;
		hx_plan p;
		hx_sim_report r;
		hx_sim_opts so = {b->pb->seed, 0, NULL, NULL};
		double pc = w->slo.percentile;
		int at = pc <= 50 ? 0 : pc <= 90 ? 1 : pc <= 95 ? 2 : 3;
		e->ok = 0;
		e->lat = 4 * b->slo_ms;
		hx_err err = {0};
		if (build_plan(b, k, e->q, &p, &err) == 0) {
			memset(&r, 0, sizeof(r));
			if (hx_simulate(&p, w, &b->trace, &so, &r, &err) == 0) {
				if (isfinite(r.e2e_ms[at]) && r.finished > 0) {
					e->lat = r.e2e_ms[at];
					e->ok = r.slo_attainment >= w->slo.attainment &&
						e->lat <= b->slo_ms;
				}
				hx_sim_report_release(&r);
			}
			hx_plan_release(&p);
		}
		features(b, k, e->x);
		return;
	}
	for (int m = 0; m < b->nm; m++) {
		double load = k->u[m] ? model_rate(b, k, m) / model_cap(b, k, m) : 0;
		for (int c = 0; c < b->nc[m]; c++) {
			const hx_candidate *cd = shape(b, m, c);
			hx_replica rep;
			hx_capacity at;
			double rate = load * cd->capacity_rps, l;
			if (k->n[m][c] == 0)
				continue;
			hx_cand_replica(&b->pbm[m], &b->s[m], cd, &rep);
			hx_cost_at_rate(&rep, b->pb->workload, rate, &at);
			l = at.ttft_ms + b->outq * at.tpot_ms;
			if (!isfinite(l)) {
				ok = 0;
				l = 4 * b->slo_ms;
			}
			lat = fmax(lat, l);
		}
	}
	e->lat = lat;
	e->ok = ok && lat <= b->slo_ms;
	features(b, k, e->x);
}

/* The least a model costs at U / FSTEPS of the rate with replicas of one
 * shape (INFINITY: none carries it within the inventory). */
static double min_cost(const bo *b, int m, int u)
{
	double best = INFINITY, need = (double)u / FSTEPS * b->lambda;
	if (u == 0)
		return 0;
	/* mixing shapes costs at least the best capacity per dollar */
	for (int c = 0; c < b->nc[m]; c++) {
		const hx_candidate *cd = shape(b, m, c);
		best = fmin(best, need / cd->capacity_rps * cd->usd_per_hour);
	}
	return best;
}

/* The routing splits worth sampling: on the grid, quality at the floor,
 * and a lower bound of their cost within the budget. */
static void list_splits(bo *b)
{
	int u[MAXM] = {0};
	b->nsplits = 0;
	for (;;) {
		int sum = 0;
		for (int m = 0; m + 1 < b->nm; m++)
			sum += u[m];
		if (sum <= FSTEPS) {
			cfg k;
			double cost = 0;
			memset(&k, 0, sizeof(k));
			for (int m = 0; m + 1 < b->nm; m++)
				k.u[m] = u[m];
			k.u[b->nm - 1] = FSTEPS - sum;
			for (int m = 0; m < b->nm; m++)
				cost += min_cost(b, m, k.u[m]);
			if (cost <= b->budget + 1e-9 &&
			    cfg_quality(b, &k) >= b->q->floor - 1e-9) {
				b->splits = hx_xrealloc(b->splits,
							(size_t)(b->nsplits + 1) * sizeof(cfg));
				b->splits[b->nsplits++] = k;
			}
		}
		{ /* next u[0 .. nm-2] in odometer order */
			int m = 0;
			while (m + 1 < b->nm && ++u[m] > FSTEPS)
				u[m++] = 0;
			if (m + 1 >= b->nm)
				break;
		}
	}
}

/* GPUs of each class that K's replicas take. */
static void class_use(const bo *b, const cfg *k, int *use)
{
	for (int i = 0; i < b->ncls; i++)
		use[i] = 0;
	for (int m = 0; m < b->nm; m++)
		for (int c = 0; c < b->nc[m]; c++)
			if (k->n[m][c])
				for (int i = 0; i < b->ncls; i++)
					use[i] += k->n[m][c] * hx_cand_use(shape(b, m, c), i);
}

/* Add one replica of a random shape of model M that still fits the class
 * inventory and the budget; 0, or -1 when none does. */
static int add_random_replica(bo *b, cfg *k, int m, int *use, double *left)
{
	int ok[MAXC], n = 0;
	for (int c = 0; c < b->nc[m]; c++) {
		const hx_candidate *cd = shape(b, m, c);
		int fits = cd->usd_per_hour <= *left + 1e-9 && k->n[m][c] < 255;
		for (int i = 0; i < b->ncls && fits; i++)
			fits = use[i] + hx_cand_use(cd, i) <= b->cls_gpus[i];
		if (fits)
			ok[n++] = c;
	}
	if (n == 0)
		return -1;
	{
		int c = ok[(int)(hx_rng_uniform(&b->rng) * n)];
		const hx_candidate *cd = shape(b, m, c);
		k->n[m][c]++;
		*left -= cd->usd_per_hour;
		for (int i = 0; i < b->ncls; i++)
			use[i] += hx_cand_use(cd, i);
	}
	return 0;
}

/* A random feasible configuration (0), or -1 after many tries: a split
 * drawn from list_splits, then replicas of random shapes added to each
 * model (in random order) until it carries its share, then a few more at
 * random while the budget and inventory allow. */
static int random_cfg(bo *b, cfg *k)
{
	if (b->nsplits == 0)
		return -1;
	for (int tries = 0; tries < 100; tries++) {
		int order[MAXM], use[64], ok = 1, extra;
		double left = b->budget;
		*k = b->splits[(int)(hx_rng_uniform(&b->rng) * b->nsplits)];
		for (int m = 0; m < b->nm; m++) {
			int j = (int)(hx_rng_uniform(&b->rng) * (m + 1));
			order[m] = order[j];
			order[j] = m;
		}
		class_use(b, k, use);
		for (int i = 0; i < b->nm && ok; i++) {
			int m = order[i];
			if (k->u[m] == 0)
				continue;
			while (ok && model_cap(b, k, m) < model_rate(b, k, m) * (1 - 1e-9))
				ok = add_random_replica(b, k, m, use, &left) == 0;
		}
		extra = (int)(hx_rng_uniform(&b->rng) * 4);
		for (int t = 0; t < extra && ok; t++) {
			int m = order[(int)(hx_rng_uniform(&b->rng) * b->nm)];
			if (k->u[m] > 0)
				add_random_replica(b, k, m, use, &left);
		}
		if (ok && feasible(b, k))
			return 0;
	}
	return -1;
}

/* A neighbour of K: one replica more or less, one replica changing shape,
 * or 5% of the traffic moved between two models (replicas added to carry
 * it, and a model left without traffic losing its replicas). */
static int mutate(bo *b, const cfg *k, cfg *out)
{
	for (int tries = 0; tries < 20; tries++) {
		int m = (int)(hx_rng_uniform(&b->rng) * b->nm),
		    kind = (int)(hx_rng_uniform(&b->rng) * 4);
		int c = (int)(hx_rng_uniform(&b->rng) * b->nc[m]), use[64];
		double left;
		*out = *k;
		if (out->u[m] == 0 && kind != 3)
			continue;
		if (kind == 0) {
			if (out->n[m][c] == 255)
				continue;
			out->n[m][c]++;
		} else if (kind == 1) {
			if (out->n[m][c] == 0)
				continue;
			out->n[m][c]--;
		} else if (kind == 2) {
			int c2 = (int)(hx_rng_uniform(&b->rng) * b->nc[m]);
			if (out->n[m][c] == 0 || c2 == c || out->n[m][c2] == 255)
				continue;
			out->n[m][c]--;
			out->n[m][c2]++;
		} else {
			int m2;
			if (b->nm < 2)
				continue;
			m2 = (m + 1 + (int)(hx_rng_uniform(&b->rng) * (b->nm - 1))) % b->nm;
			if (out->u[m2] == 0)
				continue;
			out->u[m2]--;
			out->u[m]++;
			if (out->u[m2] == 0)
				memset(out->n[m2], 0, sizeof(out->n[m2]));
			class_use(b, out, use);
			left = b->budget - cfg_cost(b, out);
			while (model_cap(b, out, m) < model_rate(b, out, m) * (1 - 1e-9))
				if (add_random_replica(b, out, m, use, &left))
					break;
		}
		if (!cfg_eq(out, k) && feasible(b, out))
			return 0;
	}
	return -1;
}

static void add_eval(bo *b, const evalpt *e)
{
	if (b->nev == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 64;
		b->ev = hx_xrealloc(b->ev, (size_t)b->cap * sizeof(evalpt));
	}
	b->ev[b->nev++] = *e;
}

/* Whether E counts towards the front: SLO met (the filters hold for every
 * evaluated configuration). */
static int on_front_ok(const evalpt *e)
{
	return e->ok;
}

/* Mark in KEEP the evaluated points on the Pareto front; returns how many. */
static int front_mark(const bo *b, int *keep)
{
	double *p = hx_xmalloc((size_t)(b->nev + 1) * 3 * sizeof(double));
	int *idx = hx_xmalloc((size_t)(b->nev + 1) * sizeof(int)),
	    *kp = hx_xmalloc((size_t)(b->nev + 1) * sizeof(int));
	int n = 0, kept;
	for (int i = 0; i < b->nev; i++) {
		keep[i] = 0;
		if (!on_front_ok(&b->ev[i]))
			continue;
		p[3 * n] = b->ev[i].cost;
		p[3 * n + 1] = b->ev[i].lat;
		p[3 * n + 2] = -b->ev[i].q;
		idx[n++] = i;
	}
	hx_mobo_pareto_mark(p, n, 3, kp);
	kept = 0;
	for (int i = 0; i < n; i++)
		if (kp[i]) {
			keep[idx[i]] = 1;
			kept++;
		}
	free(p);
	free(idx);
	free(kp);
	return kept;
}

/* Hypervolume of the evaluated points, as a fraction of the box. */
static double hypervolume(const bo *b)
{
	double *p = hx_xmalloc((size_t)(b->nev + 1) * 3 * sizeof(double));
	double r[3] = {b->budget, b->slo_ms, 100 - b->q->floor}, v;
	int n = 0;
	for (int i = 0; i < b->nev; i++) {
		if (!on_front_ok(&b->ev[i]))
			continue;
		p[3 * n] = b->ev[i].cost;
		p[3 * n + 1] = b->ev[i].lat;
		p[3 * n + 2] = 100 - b->ev[i].q;
		n++;
	}
	v = hx_mobo_hv3(p, n, r) / (r[0] * r[1] * r[2]);
	free(p);
	return v;
}

static double logit_q(double q)
{
	double x = fmin(fmax(q / 100, 1e-3), 1 - 1e-3);
	return log(x / (1 - x));
}

/* The transformed objectives of a point (cost, log latency, -logit Q). */
static void transformed(double cost, double lat, double q, double *t)
{
	t[0] = cost;
	t[1] = log(fmax(lat, 1e-6));
	t[2] = -logit_q(q);
}

typedef struct acq {
	int ehvi;
	double lo[3], hi[3], w[3], best;
	double *front; /* ehvi: (cost, log latency) of the front */
	int nfront;
	double ref[2];
} acq;

static double parego_of(const acq *a, const double *t)
{
	double f[3];
	for (int k = 0; k < 3; k++)
		f[k] = (t[k] - a->lo[k]) / fmax(a->hi[k] - a->lo[k], 1e-12);
	return hx_mobo_parego(f, a->w, 3);
}

/* The acquisition value of K under the latency GP. */
static double acquire(const bo *b, const acq *a, const hx_gp *gp, const cfg *k)
{
	double x[HX_GP_MAXD], mu, var, sd, pof, cost = cfg_cost(b, k), q = cfg_quality(b, k);
	features(b, k, x);
	hx_gp_predict(gp, x, &mu, &var);
	sd = sqrt(var);
	pof = hx_mobo_pof(mu, sd, log(b->slo_ms));
	if (a->ehvi) {
		double m2[2] = {cost, mu}, s2[2] = {0, sd};
		return hx_mobo_ehvi2(a->front, a->nfront, a->ref, m2, s2) * pof;
	}
	{
		/* E[max(0, best - s(L))], L ~ N(mu, sd) on the log scale, by
		 * NQUAD equally likely quantiles. */
		double e = 0, t[3];
		transformed(cost, 1, q, t);
		for (int j = 0; j < NQUAD; j++) {
			t[1] = mu + sd * hx_norm_quantile((j + 0.5) / NQUAD);
			e += fmax(a->best - parego_of(a, t), 0);
		}
		return e / NQUAD * pof;
	}
}

/* Set up A for this iteration: ParEGO's weights and bounds, or EHVI's
 * front. */
static void acq_setup(bo *b, acq *a, const int *keep)
{
	memset(a, 0, sizeof(*a));
	a->ehvi = b->nm == 1;
	if (a->ehvi) {
		a->front = hx_xmalloc((size_t)(b->nev + 1) * 2 * sizeof(double));
		for (int i = 0; i < b->nev; i++)
			if (keep[i]) {
				a->front[2 * a->nfront] = b->ev[i].cost;
				a->front[2 * a->nfront + 1] = log(b->ev[i].lat);
				a->nfront++;
			}
		a->ref[0] = b->budget;
		a->ref[1] = log(b->slo_ms);
		return;
	}
	hx_mobo_simplex_weights(&b->rng, 3, a->w);
	{
		double tr[3];
		transformed(b->budget, b->slo_ms, b->q->floor, tr);
		for (int k = 0; k < 3; k++)
			a->lo[k] = a->hi[k] = tr[k];
	}
	for (int i = 0; i < b->nev; i++) {
		double t[3];
		transformed(b->ev[i].cost, b->ev[i].lat, b->ev[i].q, t);
		for (int k = 0; k < 3; k++) {
			a->lo[k] = fmin(a->lo[k], t[k]);
			a->hi[k] = fmax(a->hi[k], t[k]);
		}
	}
	a->best = INFINITY;
	for (int i = 0; i < b->nev; i++) {
		double t[3];
		if (!b->ev[i].ok)
			continue;
		transformed(b->ev[i].cost, b->ev[i].lat, b->ev[i].q, t);
		a->best = fmin(a->best, parego_of(a, t));
	}
	if (!isfinite(a->best)) { /* nothing meets the SLO yet: the reference */
		double t[3];
		transformed(b->budget, b->slo_ms, b->q->floor, t);
		a->best = parego_of(a, t);
	}
}

/* Evaluate K (feasible, not seen) and note it. */
static void visit(bo *b, const cfg *k)
{
	evalpt e;
	evaluate(b, k, &e);
	add_eval(b, &e);
}

/* Evaluate K and keep it only if it joins the front of what is kept (the
 * exhaustive search: what it drops could never be on the front). */
static void visit_front(bo *b, const cfg *k)
{
	evalpt e;
	int j = 0;
	evaluate(b, k, &e);
	b->evals_seen++;
	if (!e.ok)
		return;
	for (int i = 0; i < b->nev; i++) {
		const evalpt *a = &b->ev[i];
		if (a->cost <= e.cost && a->lat <= e.lat && a->q >= e.q)
			return; /* dominated or equal */
	}
	for (int i = 0; i < b->nev; i++) {
		const evalpt *a = &b->ev[i];
		if (!(e.cost <= a->cost && e.lat <= a->lat && e.q >= a->q))
			b->ev[j++] = *a;
	}
	b->nev = j;
	add_eval(b, &e);
}

/* The seeded space-filling initial design: N configurations chosen from
 * random feasible ones by greedy maximin distance in the GP's inputs. */
static void initial_design(bo *b, int n)
{
	int npool = 0, d = b->nm * NFEAT;
	cfg *pool = hx_xmalloc(20 * (size_t)n * sizeof(cfg));
	double *x = hx_xmalloc(20 * (size_t)n * HX_GP_MAXD * sizeof(double));
	double *dmin = hx_xmalloc(20 * (size_t)n * sizeof(double));
	for (int i = 0; i < 20 * n; i++) {
		cfg k;
		int dup = 0;
		if (random_cfg(b, &k))
			break;
		for (int j = 0; j < npool && !dup; j++)
			dup = cfg_eq(&pool[j], &k);
		if (dup)
			continue;
		pool[npool] = k;
		features(b, &k, x + (size_t)npool * HX_GP_MAXD);
		dmin[npool++] = INFINITY;
	}
	for (int t = 0; t < n && t < npool; t++) {
		int pick = 0;
		for (int i = 1; i < npool; i++)
			if (dmin[i] > dmin[pick])
				pick = i;
		if (dmin[pick] <= 0)
			break;
		visit(b, &pool[pick]);
		for (int i = 0; i < npool; i++) {
			double s = 0;
			for (int j = 0; j < d; j++) {
				double u = x[(size_t)i * HX_GP_MAXD + j] -
					   x[(size_t)pick * HX_GP_MAXD + j];
				s += u * u;
			}
			dmin[i] = fmin(dmin[i], s);
		}
	}
	free(pool);
	free(x);
	free(dmin);
}

/* Enumerate the feasible configurations (in a fixed order), calling VISIT
 * on those whose index I satisfies (I - OFFSET) % STRIDE == 0 when
 * STRIDE > 0; returns how many there are (stops counting at ENUM_MAX). */
typedef struct enum_st {
	bo *b;
	long count, stride, next;
	int evaluate, limit; /* limit: evaluations at most (0: none) */
	long work;           /* partial configurations visited */
} enum_st;

/* Counts for shape C of model M onwards (cost so far USD, class use USE). */
static void enum_rec(enum_st *es, cfg *k, int m, int c, double usd, int *use)
{
	bo *b = es->b;
	if (es->count >= ENUM_MAX || ++es->work > 20 * ENUM_MAX) {
		es->count = ENUM_MAX; /* too many to enumerate */
		return;
	}
	if (m == b->nm) {
		if (!feasible(b, k))
			return;
		if (es->evaluate && es->count == es->next &&
		    (!es->limit || b->nev < es->limit)) {
			if (es->stride == 1 && es->b->o->method == HX_BO_EXHAUSTIVE)
				visit_front(b, k);
			else
				visit(b, k);
			es->next += es->stride;
		}
		es->count++;
		return;
	}
	if (c == b->nc[m] || k->u[m] == 0) {
		/* a model done: it must carry its share */
		if (k->u[m] > 0 && model_cap(b, k, m) < model_rate(b, k, m) * (1 - 1e-9))
			return;
		enum_rec(es, k, m + 1, 0, usd, use);
		return;
	}
	{
		const hx_candidate *cd = shape(b, m, c);
		int n = 0;
		for (;;) {
			int fits = 1;
			k->n[m][c] = (unsigned char)n;
			enum_rec(es, k, m, c + 1, usd + n * cd->usd_per_hour, use);
			if (n == b->maxn[m][c] ||
			    usd + (n + 1) * cd->usd_per_hour > b->budget + 1e-9)
				break;
			for (int i = 0; i < b->ncls; i++)
				fits &= use[i] + hx_cand_use(cd, i) <= b->cls_gpus[i];
			if (!fits)
				break;
			for (int i = 0; i < b->ncls; i++)
				use[i] += hx_cand_use(cd, i);
			n++;
		}
		for (int i = 0; i < b->ncls; i++)
			use[i] -= n * hx_cand_use(cd, i);
		k->n[m][c] = 0;
	}
}

static void enum_fracs(enum_st *es, cfg *k, int m, int left)
{
	if (m == es->b->nm - 1) {
		int use[64] = {0};
		k->u[m] = left;
		enum_rec(es, k, 0, 0, 0, use);
		return;
	}
	for (int u = 0; u <= left; u++) {
		k->u[m] = u;
		enum_fracs(es, k, m + 1, left - u);
	}
}

static long enumerate(bo *b, long stride, int evaluate_them, int limit)
{
	enum_st es = {b, 0, stride, 0, evaluate_them, limit, 0};
	cfg k;
	memset(&k, 0, sizeof(k));
	enum_fracs(&es, &k, 0, FSTEPS);
	return es.count;
}

/* The grid yardstick: every split of list_splits, one shape per model
 * with traffic, the fewest replicas of it that carry the model's share
 * plus 0, 1 or 2 (the same for every model); the feasible ones counted in
 * that order, those at index next, next + STRIDE, ... evaluated (at most
 * LIMIT).  Returns how many are feasible. */
static long grid(bo *b, long stride, int evaluate_them, int limit)
{
	long count = 0, next = 0;
	for (int sp = 0; sp < b->nsplits; sp++) {
		int c[MAXM] = {0};
		for (;;) {
			for (int extra = 0; extra <= 2; extra++) {
				cfg k = b->splits[sp];
				int ok = 1;
				for (int m = 0; m < b->nm && ok; m++) {
					double need;
					int n;
					if (k.u[m] == 0)
						continue;
					need = model_rate(b, &k, m) /
					       shape(b, m, c[m])->capacity_rps;
					n = (int)ceil(need - 1e-9);
					n = (n < 1 ? 1 : n) + extra;
					ok = n <= 255;
					k.n[m][c[m]] = (unsigned char)(ok ? n : 0);
				}
				if (!ok || !feasible(b, &k))
					continue;
				if (evaluate_them && count == next &&
				    (!limit || b->nev < limit)) {
					visit(b, &k);
					next += stride;
				}
				count++;
			}
			{ /* next shape tuple (models without traffic stay at 0) */
				int m = 0;
				while (m < b->nm &&
				       (b->splits[sp].u[m] == 0 || ++c[m] == b->nc[m])) {
					c[m] = 0;
					m++;
				}
				if (m == b->nm)
					break;
			}
		}
	}
	return count;
}

/* The plan of configuration K: a group per shape in use, placed as
 * packs() packs it; the ingress sends each model its fraction, over its
 * groups in proportion to their capacity. */
static int build_plan(bo *b, const cfg *k, double quality, hx_plan *p, hx_err *err)
{
	const hx_cluster *cl = b->pb->cluster;
	size_t per = (size_t)MAXC * 256 * HX_CAND_MAX_STAGES;
	int *node = hx_xcalloc((size_t)b->nm * per, sizeof(int)), *next, first = -1, rc;
	double cap = INFINITY;
	hx_problem pb1;

	hx_plan_init(p);
	strcpy(p->mode, "bo");
	if (!packs(b, k, node)) {
		free(node);
		return hx_errf(err, HX_EINPUT,
			       "internal: a configuration that packed no longer does");
	}
	next = hx_xcalloc((size_t)cl->nnodes + 1, sizeof(int));
	for (int m = 0; m < b->nm; m++)
		if (k->u[m] > 0 && !hx_plan_model(p, b->models[m].name))
			hx_plan_add_model(p, &b->models[m]);
	for (int m = 0; m < b->nm; m++) {
		const hx_candset *s = &b->s[m];
		double mcap = model_cap(b, k, m);
		if (k->u[m] == 0)
			continue;
		if (first < 0)
			first = m;
		cap = fmin(cap, mcap / ((double)k->u[m] / FSTEPS));
		for (int c = 0; c < b->nc[m]; c++) {
			const hx_candidate *cd = shape(b, m, c);
			hx_plan_group *g;
			hx_route *rt;
			if (k->n[m][c] == 0)
				continue;
			g = hx_plan_add_group(p);
			snprintf(g->name, sizeof(g->name), "g%d", p->ngroups - 1);
			hx_strlcpy(g->model, b->models[m].name, sizeof(g->model));
			g->role = HX_ROLE_AGGREGATED;
			g->wdt = b->models[m].a.dtype;
			g->kvdt = HX_DT_FP16;
			g->nstages = cd->nstages;
			for (int t = 0; t < cd->nstages; t++) {
				hx_strlcpy(g->stage[t].gpu, s->cls[cd->st[t].cls].gpu->name,
					   sizeof(g->stage[t].gpu));
				g->stage[t].tp = cd->st[t].tp;
				g->stage[t].first = cd->st[t].first;
				g->stage[t].last = cd->st[t].last;
			}
			for (int r = 0; r < k->n[m][c]; r++) {
				hx_plan_replica *rep = hx_plan_add_replica(g);
				const int *nd =
				    node + (((size_t)m * MAXC + (size_t)c) * 256 + (size_t)r) *
					       HX_CAND_MAX_STAGES;
				char id[128];
				snprintf(id, sizeof(id), "%sr%d", g->name, r);
				hx_strlcpy(rep->id, id, sizeof(rep->id));
				for (int t = 0; t < cd->nstages; t++) {
					int at = nd[t], tp = cd->st[t].tp;
					rep->ngpus[t] = tp;
					rep->gpus[t] =
					    hx_xcalloc((size_t)tp, sizeof(hx_gpu_ref));
					for (int i = 0; i < tp; i++) {
						hx_strlcpy(rep->gpus[t][i].node,
							   cl->nodes[at].name,
							   sizeof(rep->gpus[t][i].node));
						rep->gpus[t][i].index = next[at] + i;
					}
					next[at] += tp;
				}
				for (int t = 0; t + 1 < cd->nstages; t++) {
					if (nd[t] == nd[t + 1]) {
						const hx_gpu *gp = &cl->nodes[nd[t]].gpu;
						rep->link[t] =
						    (hx_linkspec){gp->intra_bw_gb_s * 8,
								  gp->intra_latency_us * 1e-3};
					} else {
						rep->link[t] =
						    hx_cluster_link(cl, nd[t], nd[t + 1]);
					}
				}
			}
			rt = hx_plan_add_route(&p->ingress, &p->ningress);
			hx_strlcpy(rt->to, g->name, sizeof(rt->to));
			rt->weight =
			    (double)k->u[m] / FSTEPS * k->n[m][c] * cd->capacity_rps / mcap;
		}
	}
	free(node);
	free(next);
	hx_routes_normalize(p->ingress, p->ningress);
	pb1 = *b->pb;
	pb1.model = &b->models[first];
	if ((rc = hx_plan_finish(&pb1, p, 0, err))) {
		hx_plan_release(p);
		return rc;
	}
	/* The split binds at the model with the least capacity for its share. */
	p->predicted.capacity_rps = hx_round6(cap);
	p->predicted.has_quality = 1;
	p->predicted.quality = hx_round6(quality);
	strcpy(p->solver.engine, "bo");
	return 0;
}

static int cmp_point(const void *x, const void *y)
{
	const hx_bo_point *a = x, *b = y;
	if (a->usd_per_hour != b->usd_per_hour)
		return a->usd_per_hour < b->usd_per_hour ? -1 : 1;
	if (a->latency_ms != b->latency_ms)
		return a->latency_ms < b->latency_ms ? -1 : 1;
	return a->quality > b->quality ? -1 : a->quality < b->quality;
}

/* The point PREFER picks: the least cost, latency or the best quality
 * (ties by the others in that order), or balanced: the least largest
 * objective normalized over the front's range (cost, latency, 100 - Q). */
static int choose(const hx_bo_front *f, int prefer)
{
	int best = 0;
	double lo[3] = {INFINITY, INFINITY, INFINITY},
	       hi[3] = {-INFINITY, -INFINITY, -INFINITY};
	for (int i = 0; i < f->n; i++) {
		double v[3] = {f->pt[i].usd_per_hour, f->pt[i].latency_ms,
			       100 - f->pt[i].quality};
		for (int k = 0; k < 3; k++) {
			lo[k] = fmin(lo[k], v[k]);
			hi[k] = fmax(hi[k], v[k]);
		}
	}
	for (int i = 1; i < f->n; i++) {
		const hx_bo_point *a = &f->pt[i], *c = &f->pt[best];
		double va[3] = {a->usd_per_hour, a->latency_ms, 100 - a->quality};
		double vc[3] = {c->usd_per_hour, c->latency_ms, 100 - c->quality};
		int better = 0;
		if (prefer == HX_PREFER_BALANCED) {
			double ma = 0, mc = 0;
			for (int k = 0; k < 3; k++) {
				double r = hi[k] - lo[k];
				ma = fmax(ma, r > 0 ? (va[k] - lo[k]) / r : 0);
				mc = fmax(mc, r > 0 ? (vc[k] - lo[k]) / r : 0);
			}
			better = ma < mc - 1e-12;
		} else {
			int o[3] = {0, 1, 2};
			if (prefer == HX_PREFER_LATENCY) {
				o[0] = 1;
				o[1] = 0;
			} else if (prefer == HX_PREFER_QUALITY) {
				o[0] = 2;
				o[1] = 0;
				o[2] = 1;
			}
			for (int j = 0; j < 3; j++)
				if (va[o[j]] != vc[o[j]]) {
					better = va[o[j]] < vc[o[j]];
					break;
				}
		}
		if (better)
			best = i;
	}
	return best;
}

static int setup(bo *b, const hx_problem *pb, const hx_plan_opts *o, const hx_bo_opts *bo_o,
		 hx_err *err)
{
	const hx_workload *w = pb->workload;
	const hx_quality *q = w->quality;
	memset(b, 0, sizeof(*b));
	b->pb = pb;
	b->o = bo_o;
	b->q = q;
	for (int m = 0; m < q->nmodels; m++)
		b->qmean[m] = hx_quality_mean(q, m);
	b->deadline = hx_deadline(o->time_limit_s);
	hx_rng_seed(&b->rng, pb->seed);
	if (!q)
		return hx_errf(err, HX_EINPUT,
			       "bo plans need the workload's quality profile (\"quality\")");
	if (q->nmodels > MAXM)
		return hx_errf(err, HX_EINPUT,
			       "%s: /quality/models: bo searches at most %d models, not %d",
			       hx_display_path(pb->workload_path), MAXM, q->nmodels);
	if (pb->cluster->nnodes == 0)
		return hx_errf(err, HX_EINFEASIBLE,
			       "the cluster has offers but no nodes: bo plans fixed nodes");
	b->nm = q->nmodels;
	b->lambda = w->rate_rps;
	b->outq = fmax(hx_dist_quantile(&w->output, w->slo.percentile / 100) - 1, 0);
	b->slo_ms = w->slo.ttft_ms + b->outq * w->slo.tpot_ms;
	b->free_gpus = hx_xcalloc((size_t)pb->cluster->nnodes + 1, sizeof(int));
	for (int i = 0; i < pb->cluster->nnodes; i++)
		b->totgpus += pb->cluster->nodes[i].count;
	b->budget = bo_o->budget_usd_per_hour;
	if (b->budget <= 0)
		for (int i = 0; i < pb->cluster->nnodes; i++)
			b->budget +=
			    pb->cluster->nodes[i].usd_per_hour * pb->cluster->nodes[i].count;
	if (bo_o->simulate) {
		if (hx_gen_workload(w, w->rate_rps, HX_BO_SIM_REQUESTS, 0, pb->seed, &b->trace,
				    err))
			return HX_EINPUT;
		b->have_trace = 1;
	}
	for (int m = 0; m < b->nm; m++) {
		if (hx_model_resolve(pb->cat, q->model[m], &b->models[m], err)) {
			char msg[sizeof(err->msg)];
			snprintf(msg, sizeof(msg), "%s: /quality/models/%d: %.900s",
				 hx_display_path(pb->workload_path), m, err->msg);
			hx_strlcpy(err->msg, msg, sizeof(err->msg));
			return HX_EINPUT;
		}
		b->pbm[m] = *pb;
		b->pbm[m].model = &b->models[m];
		if (hx_candidates(&b->pbm[m], NULL, &b->s[m], err))
			return HX_EINPUT;
		b->have_s[m] = 1;
		/* the MAXC shapes with the most capacity per dollar */
		for (int c = 0; c < b->s[m].n; c++) {
			const hx_candidate *cd = &b->s[m].c[c];
			int j = b->nc[m] < MAXC ? b->nc[m]++ : MAXC;
			while (j > 0 && b->s[m].c[b->cand[m][j - 1]].capacity_rps /
						b->s[m].c[b->cand[m][j - 1]].usd_per_hour <
					    cd->capacity_rps / cd->usd_per_hour) {
				if (j < MAXC)
					b->cand[m][j] = b->cand[m][j - 1];
				j--;
			}
			if (j < MAXC)
				b->cand[m][j] = c;
		}
		if (b->s[m].ncls > 64)
			return hx_errf(err, HX_EINPUT,
				       "bo plans clusters of at most 64 kinds of node, not %d",
				       b->s[m].ncls);
		if (m == 0) {
			b->ncls = b->s[m].ncls;
			for (int i = 0; i < b->ncls; i++)
				b->cls_gpus[i] =
				    b->s[m].cls[i].nnodes * b->s[m].cls[i].gpus_per_node;
		} else {
			int same = b->s[m].ncls == b->ncls;
			for (int i = 0; i < b->ncls && same; i++)
				same = b->s[m].cls[i].nodes[0] == b->s[0].cls[i].nodes[0];
			if (!same)
				return hx_errf(err, HX_EINPUT,
					       "internal: node classes differ between models");
		}
		for (int c = 0; c < b->nc[m]; c++) {
			const hx_candidate *cd = shape(b, m, c);
			int mx = cd->usd_per_hour > 0
				     ? (int)floor(b->budget / cd->usd_per_hour + 1e-9)
				     : 255;
			for (int i = 0; i < b->ncls; i++) {
				int use = hx_cand_use(cd, i);
				if (use > 0 && b->cls_gpus[i] / use < mx)
					mx = b->cls_gpus[i] / use;
			}
			b->maxn[m][c] = mx > 255 ? 255 : mx;
		}
	}
	return 0;
}

static void teardown(bo *b)
{
	for (int m = 0; m < MAXM; m++) {
		if (b->have_s[m])
			hx_candset_release(&b->s[m]);
	}
	free(b->free_gpus);
	free(b->splits);
	if (b->have_trace)
		hx_trace_release(&b->trace);
	free(b->ev);
}

/* The BO loop proper, after the initial design. */
static void search(bo *b, int max_evals, hx_bo_front *f)
{
	int d = b->nm * NFEAT, stable = 0, iter = 0, *keep = NULL, *prev = NULL, nprev = -1;
	double ls[HX_GP_MAXD], sf2 = 1, sn2 = 1e-4;
	int have_hyp = 0;
	cfg *pool = hx_xmalloc((size_t)(POOL + MUTATIONS * (max_evals + 1)) * sizeof(cfg));
	strcpy(f->status, "work_limit");
	while (b->nev < max_evals) {
		hx_gp gp;
		acq a;
		double *x, *y, best = -1;
		int npool = 0, pick = -1, nkeep, changed, ntrain;
		if (hx_past(b->deadline)) {
			strcpy(f->status, "time_limit");
			b->time_cut = 1;
			break;
		}
		keep = hx_xrealloc(keep, (size_t)(b->nev + 1) * sizeof(int));
		nkeep = front_mark(b, keep);
		/* convergence: the same Pareto set for HX_BO_STABLE_ITERS iterations */
		changed = nkeep != nprev;
		for (int i = 0, j = 0; i < b->nev && !changed; i++)
			if (keep[i]) {
				changed = prev[j] != i;
				j++;
			}
		if (changed) {
			stable = 0;
			nprev = nkeep;
			prev = hx_xrealloc(prev, (size_t)(nkeep + 1) * sizeof(int));
			for (int i = 0, j = 0; i < b->nev; i++)
				if (keep[i])
					prev[j++] = i;
		} else if (nkeep > 0 && ++stable >= HX_BO_STABLE_ITERS) {
			strcpy(f->status, "converged");
			break;
		}
		/* the latency surrogate, on at most GP_MAX_TRAIN points: the
		 * front's, then the latest others (the cubic cost of the
		 * factorization bounds the rest) */
		x = hx_xmalloc((size_t)b->nev * d * sizeof(double));
		y = hx_xmalloc((size_t)b->nev * sizeof(double));
		ntrain = 0;
		for (int pass = 0; pass < 2; pass++)
			for (int i = pass ? b->nev - 1 : 0; pass ? i >= 0 : i < b->nev;
			     i += pass ? -1 : 1) {
				if (keep[i] != !pass || ntrain >= GP_MAX_TRAIN)
					continue;
				memcpy(x + (size_t)ntrain * d, b->ev[i].x,
				       (size_t)d * sizeof(double));
				y[ntrain++] = log(fmin(b->ev[i].lat, 4 * b->slo_ms));
			}
		if (!have_hyp || iter % REFIT_EVERY == 0) {
			if (hx_gp_fit(&gp, x, y, ntrain, d, 2, 150,
				      b->pb->seed + (uint64_t)iter) == 0) {
				memcpy(ls, gp.ls, sizeof(ls));
				sf2 = gp.sf2;
				sn2 = gp.sn2;
				have_hyp = 1;
			} else {
				for (int k = 0; k < d; k++)
					ls[k] = 0.5;
				hx_gp_set(&gp, x, y, ntrain, d, ls, sf2, sn2);
			}
		} else {
			hx_gp_set(&gp, x, y, ntrain, d, ls, sf2, sn2);
		}
		free(x);
		free(y);
		/* candidates: random feasible ones and neighbours of the front */
		for (int i = 0; i < POOL; i++)
			if (random_cfg(b, &pool[npool]) == 0 && !seen(b, &pool[npool]))
				npool++;
		for (int i = 0; i < b->nev; i++)
			if (keep[i])
				for (int t = 0; t < MUTATIONS; t++)
					if (mutate(b, &b->ev[i].k, &pool[npool]) == 0 &&
					    !seen(b, &pool[npool]))
						npool++;
		acq_setup(b, &a, keep);
		for (int i = 0; i < npool; i++) {
			double v = gp.n ? acquire(b, &a, &gp, &pool[i]) : 0;
			if (v > best) {
				best = v;
				pick = i;
			}
		}
		free(a.front);
		if (gp.n)
			hx_gp_release(&gp);
		if (pick < 0)
			break; /* nothing left to try */
		visit(b, &pool[pick]);
		iter++;
		if (b->o->progress)
			b->o->progress(b->o->progress_ctx, iter, b->nev, hypervolume(b));
	}
	f->iterations = iter;
	free(pool);
	free(keep);
	free(prev);
}

/* The plans of front F (the chosen one into OUT, every other one too when
 * PLANS is set), each with the search's solver record. */
static int front_plans(bo *b, hx_bo_front *f, int plans, hx_plan *out, hx_err *err)
{
	int rc;

	for (int j = 0; j < f->n; j++) {
		int i = f->pt[j].eval;
		hx_plan *p = j == f->chosen ? out : &f->pt[j].plan;
		if (!plans && j != f->chosen)
			continue;
		if ((rc = build_plan(b, &b->ev[i].k, b->ev[i].q, p, err)))
			return rc;
		strcpy(p->solver.status,
		       !strcmp(f->status, "converged") ? "heuristic" : f->status);
		p->solver.objective = hx_round6(f->hypervolume);
		p->solver.iterations = f->iterations;
		p->solver.nodes = f->evals;
		if (j == f->chosen && plans) {
			/* the front holds its own copy of the chosen plan */
			char *text = hx_plan_dump(out);
			rc = hx_plan_parse_text(&f->pt[j].plan, text, "bo", err);
			free(text);
			if (rc)
				return rc;
		}
		f->pt[j].has_plan = 1;
	}
	return 0;
}

int hx_plan_bo(const hx_problem *pb, const hx_plan_opts *o, const hx_bo_opts *bo_o, int plans,
	       hx_plan *out, hx_bo_front *f, hx_err *err)
{
	bo b;
	int rc, max_evals = bo_o->max_evals > 0 ? bo_o->max_evals : HX_BO_MAX_EVALS,
		*keep = NULL;
	double t0 = hx_now();

	memset(f, 0, sizeof(*f));
	hx_plan_init(out);
	if ((rc = setup(&b, pb, o, bo_o, err)))
		goto out;
	f->nmodels = b.nm;
	for (int m = 0; m < b.nm; m++)
		hx_strlcpy(f->model[m], b.models[m].name, sizeof(f->model[m]));
	f->prefer = bo_o->prefer;
	f->ref[0] = b.budget;
	f->ref[1] = b.slo_ms;
	f->ref[2] = b.q->floor;
	list_splits(&b);
	{
		cfg k;
		if (random_cfg(&b, &k)) {
			rc = hx_errf(err, HX_EINFEASIBLE,
				     "no deployment fits the budget of $%g/h and the GPUs with "
				     "quality >= %g "
				     "(%d random tries)",
				     b.budget, b.q->floor, 200);
			goto out;
		}
	}
	switch (bo_o->method) {
	case HX_BO_BAYES: {
		int n0 = 2 * b.nm * NFEAT + 2;
		n0 = n0 < 8 ? 8 : n0 > max_evals / 2 ? max_evals / 2 : n0;
		initial_design(&b, n0);
		search(&b, max_evals, f);
		strcpy(f->acquisition, b.nm == 1 ? "ehvi" : "parego");
		break;
	}
	case HX_BO_RANDOM:
		for (int i = 0; i < 50 * max_evals && b.nev < max_evals; i++) {
			cfg k;
			if (random_cfg(&b, &k) == 0 && !seen(&b, &k))
				visit(&b, &k);
		}
		strcpy(f->status, "work_limit");
		strcpy(f->acquisition, "random");
		break;
	case HX_BO_GRID: {
		/* every (n / N)-th configuration of the enumeration when it can
		 * be enumerated, else of the structured grid */
		long n = enumerate(&b, 0, 0, 0);
		if (n < ENUM_MAX) {
			f->space = (int)n;
			enumerate(&b, n > max_evals ? n / max_evals : 1, 1, max_evals);
		} else {
			n = grid(&b, 0, 0, 0);
			f->space = (int)n;
			grid(&b, n > max_evals ? n / max_evals : 1, 1, max_evals);
		}
		strcpy(f->status, "work_limit");
		strcpy(f->acquisition, "grid");
		break;
	}
	case HX_BO_EXHAUSTIVE: {
		long n = enumerate(&b, 0, 0, 0);
		f->space = (int)n;
		if (n >= ENUM_MAX) {
			rc = hx_errf(
			    err, HX_ELIMIT,
			    "more than %ld configurations (or %ld partial ones) to enumerate",
			    ENUM_MAX, 20 * ENUM_MAX);
			goto out;
		}
		enumerate(&b, 1, 1, 0);
		strcpy(f->status, "converged");
		strcpy(f->acquisition, "all");
		break;
	}
	}
	f->evals = bo_o->method == HX_BO_EXHAUSTIVE ? (int)b.evals_seen : b.nev;
	f->hypervolume = hypervolume(&b);
	keep = hx_xcalloc((size_t)b.nev + 1, sizeof(int));
	front_mark(&b, keep);
	for (int i = 0; i < b.nev; i++)
		f->n += keep[i];
	if (f->n == 0) {
		if (b.time_cut && b.nev == 0)
			rc = hx_errf(err, HX_ELIMIT,
				     "the time limit was reached before any plan");
		else
			rc = hx_errf(
			    err, HX_EINFEASIBLE,
			    "none of the %d deployments evaluated meets the SLO (end to end "
			    "%.6g ms: "
			    "TTFT %g ms + %g more tokens at %g ms) within the budget of $%g/h",
			    b.nev, b.slo_ms, pb->workload->slo.ttft_ms, b.outq,
			    pb->workload->slo.tpot_ms, b.budget);
		goto out;
	}
	f->pt = hx_xcalloc((size_t)f->n, sizeof(hx_bo_point));
	{
		int j = 0;
		for (int i = 0; i < b.nev; i++) {
			hx_bo_point *pt;
			if (!keep[i])
				continue;
			pt = &f->pt[j++];
			pt->usd_per_hour = hx_round6(b.ev[i].cost);
			pt->latency_ms = hx_round6(b.ev[i].lat);
			pt->quality = hx_round6(b.ev[i].q);
			for (int m = 0; m < b.nm; m++)
				pt->fraction[m] = (double)b.ev[i].k.u[m] / FSTEPS;
			pt->eval = i;
		}
	}
	qsort(f->pt, (size_t)f->n, sizeof(hx_bo_point), cmp_point);
	f->chosen = choose(f, bo_o->prefer);
	if ((rc = front_plans(&b, f, plans, out, err)))
		goto out;
	if (!plans)
		f->pt[f->chosen].has_plan = 0;
	f->seconds = hx_now() - t0;
out:
	free(keep);
	teardown(&b);
	if (rc) {
		hx_plan_release(out);
		hx_bo_front_release(f);
	}
	return rc;
}

void hx_bo_front_release(hx_bo_front *f)
{
	for (int i = 0; i < f->n; i++)
		if (f->pt[i].has_plan)
			hx_plan_release(&f->pt[i].plan);
	free(f->pt);
	f->pt = NULL;
	f->n = 0;
}
