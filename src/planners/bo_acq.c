/* The bo planner's evaluation and acquisition (bo.h has the overview):
 * configurations priced by the cost model or the simulator, the Pareto
 * front and its hypervolume, the latency GP, EHVI and ParEGO, and the
 * loop that picks what to evaluate next. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planners/bo_int.h"
#include "solver/mobo.h"
#include "sim/sim.h"

#define POOL         400 /* random candidates per iteration */
#define MUTATIONS    12  /* neighbours of each front point */
#define REFIT_EVERY  5   /* iterations between hyper-parameter fits */
#define NQUAD        32  /* normal quantiles for the ParEGO expectation */
#define GP_MAX_TRAIN 200 /* evaluations the GP is fitted on */

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
		if (hx_bo_build_plan(b, k, e->q, &p, &err) == 0) {
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
int hx_bo_front_mark(const bo *b, int *keep)
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
double hx_bo_hypervolume(const bo *b)
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
void hx_bo_visit(bo *b, const cfg *k)
{
	evalpt e;
	evaluate(b, k, &e);
	add_eval(b, &e);
}

/* Evaluate K and keep it only if it joins the front of what is kept (the
 * exhaustive search: what it drops could never be on the front). */
void hx_bo_visit_front(bo *b, const cfg *k)
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
void hx_bo_initial_design(bo *b, int n)
{
	int npool = 0, d = b->nm * NFEAT;
	cfg *pool = hx_xmalloc(20 * (size_t)n * sizeof(cfg));
	double *x = hx_xmalloc(20 * (size_t)n * HX_GP_MAXD * sizeof(double));
	double *dmin = hx_xmalloc(20 * (size_t)n * sizeof(double));
	for (int i = 0; i < 20 * n; i++) {
		cfg k;
		int dup = 0;
		if (hx_bo_random_cfg(b, &k))
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
		/* past the deadline the search stops too (time_limit), on
		 * what it has: at least one configuration */
		if (t > 0 && hx_past(b->deadline)) {
			b->time_cut = 1;
			break;
		}
		for (int i = 1; i < npool; i++)
			if (dmin[i] > dmin[pick])
				pick = i;
		if (dmin[pick] <= 0)
			break;
		hx_bo_visit(b, &pool[pick]);
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

/* The BO loop proper, after the initial design. */
void hx_bo_search(bo *b, int max_evals, hx_bo_front *f)
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
		nkeep = hx_bo_front_mark(b, keep);
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
			if (hx_bo_random_cfg(b, &pool[npool]) == 0 &&
			    !hx_bo_seen(b, &pool[npool]))
				npool++;
		for (int i = 0; i < b->nev; i++)
			if (keep[i])
				for (int t = 0; t < MUTATIONS; t++)
					if (hx_bo_mutate(b, &b->ev[i].k, &pool[npool]) == 0 &&
					    !hx_bo_seen(b, &pool[npool]))
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
		hx_bo_visit(b, &pool[pick]);
		iter++;
		if (b->o->progress)
			b->o->progress(b->o->progress_ctx, iter, b->nev, hx_bo_hypervolume(b));
	}
	f->iterations = iter;
	free(pool);
	free(keep);
	free(prev);
}
