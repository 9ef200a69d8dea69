/* bo: see bo.h.  This file sets the search up, runs the method asked for,
 * builds the plans of the front and picks one; bo_space.c has the search
 * space, bo_acq.c the evaluation and acquisition (their context:
 * bo_int.h), bo_front.c the front's JSON and SVG. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planners/bo_int.h"
#include "model/gen.h"

/* The plan of configuration K: a group per shape in use, placed as
 * hx_bo_packs() packs it; the ingress sends each model its fraction, over its
 * groups in proportion to their capacity. */
int hx_bo_build_plan(bo *b, const cfg *k, double quality, hx_plan *p, hx_err *err)
{
	const hx_cluster *cl = b->pb->cluster;
	size_t per = (size_t)MAXC * 256 * HX_CAND_MAX_STAGES;
	int *node = hx_xcalloc((size_t)b->nm * per, sizeof(int)), *next, first = -1, rc;
	double cap = INFINITY;
	hx_problem pb1;

	hx_plan_init(p);
	strcpy(p->mode, "bo");
	if (!hx_bo_packs(b, k, node)) {
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
			hx_plan_group_stages(g, cd->nstages);
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
						rep->link[t] =
						    hx_gpu_own_link(&cl->nodes[nd[t]].gpu);
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
	hx_cand_opts co = {0, hx_deadline(o->time_limit_s)};
	memset(b, 0, sizeof(*b));
	b->pb = pb;
	b->o = bo_o;
	b->q = q;
	for (int m = 0; m < q->nmodels; m++)
		b->qmean[m] = hx_quality_mean(q, m);
	b->deadline = co.deadline;
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
		if (hx_candidates(&b->pbm[m], &co, &b->s[m], err))
			return HX_EINPUT;
		b->have_s[m] = 1;
		/* shapes the deadline left unpriced: the search runs on the
		 * others and its plans say time_limit */
		if (b->s[m].cut && b->s[m].n == 0)
			return hx_plan_err_unpriced(err, b->models[m].name);
		b->cands_cut |= b->s[m].cut;
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
		if ((rc = hx_bo_build_plan(b, &b->ev[i].k, b->ev[i].q, p, err)))
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

/* No random deployment was found: ERR names the rate when it rules every
 * deployment out whatever the budget, else the budget and the GPUs.
 * Returns HX_EINFEASIBLE. */
static int no_start(const bo *b, hx_err *err)
{
	if (hx_bo_rate_binds(b))
		return hx_errf(
		    err, HX_EINFEASIBLE,
		    "the workload's rate of %g req/s binds: the GPUs carry less at the SLO with quality >= %g, whatever the budget",
		    b->pb->workload->rate_rps, b->q->floor);
	return hx_errf(
	    err, HX_EINFEASIBLE,
	    "no deployment fits the budget of $%g/h and the GPUs with quality >= %g (%d random tries)",
	    b->budget, b->q->floor, 200);
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
	hx_bo_list_splits(&b);
	{
		cfg k;
		if (hx_bo_random_cfg(&b, &k)) {
			rc = b.cands_cut ? hx_errf(err, HX_ELIMIT,
						   "the time limit was reached before any plan")
					 : no_start(&b, err);
			goto out;
		}
	}
	switch (bo_o->method) {
	case HX_BO_BAYES: {
		int n0 = 2 * b.nm * NFEAT + 2;
		n0 = n0 < 8 ? 8 : n0 > max_evals / 2 ? max_evals / 2 : n0;
		hx_bo_initial_design(&b, n0);
		hx_bo_search(&b, max_evals, f);
		strcpy(f->acquisition, b.nm == 1 ? "ehvi" : "parego");
		break;
	}
	case HX_BO_RANDOM:
		for (int i = 0; i < 50 * max_evals && b.nev < max_evals; i++) {
			cfg k;
			if (hx_bo_random_cfg(&b, &k) == 0 && !hx_bo_seen(&b, &k))
				hx_bo_visit(&b, &k);
		}
		strcpy(f->status, "work_limit");
		strcpy(f->acquisition, "random");
		break;
	case HX_BO_GRID: {
		/* every (n / N)-th configuration of the enumeration when it can
		 * be enumerated, else of the structured grid */
		long n = hx_bo_enumerate(&b, 0, 0, 0);
		if (n < ENUM_MAX) {
			f->space = (int)n;
			hx_bo_enumerate(&b, n > max_evals ? n / max_evals : 1, 1, max_evals);
		} else {
			n = hx_bo_grid(&b, 0, 0, 0);
			f->space = (int)n;
			hx_bo_grid(&b, n > max_evals ? n / max_evals : 1, 1, max_evals);
		}
		strcpy(f->status, "work_limit");
		strcpy(f->acquisition, "grid");
		break;
	}
	case HX_BO_EXHAUSTIVE: {
		long n = hx_bo_enumerate(&b, 0, 0, 0);
		f->space = (int)n;
		if (n >= ENUM_MAX) {
			rc = hx_errf(
			    err, HX_ELIMIT,
			    "more than %ld configurations (or %ld partial ones) to enumerate",
			    ENUM_MAX, 20 * ENUM_MAX);
			goto out;
		}
		hx_bo_enumerate(&b, 1, 1, 0);
		strcpy(f->status, "converged");
		strcpy(f->acquisition, "all");
		break;
	}
	}
	if (b.cands_cut) /* searched on the shapes priced in time */
		strcpy(f->status, "time_limit");
	f->evals = bo_o->method == HX_BO_EXHAUSTIVE ? (int)b.evals_seen : b.nev;
	f->hypervolume = hx_bo_hypervolume(&b);
	keep = hx_xcalloc((size_t)b.nev + 1, sizeof(int));
	hx_bo_front_mark(&b, keep);
	for (int i = 0; i < b.nev; i++)
		f->n += keep[i];
	if (f->n == 0) {
		if ((b.time_cut && b.nev == 0) || b.cands_cut)
			rc = hx_errf(err, HX_ELIMIT,
				     "the time limit was reached before any plan");
		else
			rc = hx_errf(
			    err, HX_EINFEASIBLE,
			    "none of the %d deployments evaluated meets the SLO (end to end %.6g ms: TTFT %g ms + %g more tokens at %g ms) within the budget of $%g/h",
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
