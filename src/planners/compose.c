/* compose: see compose.h. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planners/candidates.h"
#include "planners/compose.h"
#include "model/gen.h"
#include "sim/sim.h"
#include "plan/spot.h"

/* ---- the MILP -------------------------------------------------------------- */

void hx_compose_out_release(hx_compose_out *out)
{
	free(out->y);
	free(out->x);
	free(out->z);
	free(out->res.x);
	memset(out, 0, sizeof(*out));
}

int hx_compose_solve(const hx_compose_in *in, const hx_milp_opts *o, hx_compose_out *out,
		     hx_err *err)
{
	const int nc = in->nc, nw = in->nw, nk = in->nk, budget = in->budget > 0;
	hx_milp *m = hx_milp_new(budget);
	int *yv = hx_xcalloc((size_t)nc + 1, sizeof(int));
	int *xv = hx_xcalloc((size_t)nk + 1, sizeof(int));
	int *zv = hx_xcalloc((size_t)(nc * nw) + 1, sizeof(int));
	int nmax = nc + nk + nc * nw + 2, kv = -1, rc;
	int *idx = hx_xcalloc((size_t)nmax, sizeof(int));
	double *val = hx_xcalloc((size_t)nmax, sizeof(double));
	double usd_max = 0;
	char name[64];

	memset(out, 0, sizeof(*out));
	for (int k = 0; k < nk; k++)
		usd_max += in->pool_usd[k] * in->pool_nodes[k];
	for (int c = 0; c < nc; c++) {
		double ub = INFINITY;
		int gpus = 0;
		for (int k = 0; k < nk; k++) {
			int u = in->use[c * nk + k];
			gpus += u;
			if (u > 0)
				ub = fmin(ub, floor((double)in->pool_nodes[k] *
						    in->pool_gpus[k] / u));
		}
		snprintf(name, sizeof(name), "y_%d", c);
		/* The tie-break: fewer GPUs at equal rent (cost); nothing here
		 * with a budget (rent breaks ties there). */
		yv[c] = hx_milp_add_var(m, name, HX_MILP_INT, 0, ub, budget ? 0 : 1e-4 * gpus);
	}
	for (int k = 0; k < nk; k++) {
		snprintf(name, sizeof(name), "x_%d", k);
		xv[k] = hx_milp_add_var(m, name, HX_MILP_INT, 0, in->pool_nodes[k],
					budget ? -1e-6 * in->pool_usd[k] / fmax(usd_max, 1e-9)
					       : in->pool_usd[k]);
	}
	for (int c = 0; c < nc; c++)
		for (int w = 0; w < nw; w++) {
			zv[c * nw + w] = -1;
			if (in->h[c * nw + w] <= 0 || in->lambda[w] <= 0)
				continue;
			snprintf(name, sizeof(name), "z_%d_%d", c, w);
			zv[c * nw + w] = hx_milp_add_var(m, name, HX_MILP_CONT, 0, INFINITY, 0);
		}
	if (budget)
		kv = hx_milp_add_var(m, "kappa", HX_MILP_CONT, 0, INFINITY, 1);
	/* capacity */
	for (int c = 0; c < nc; c++) {
		int n = 0;
		for (int w = 0; w < nw; w++)
			if (zv[c * nw + w] >= 0) {
				idx[n] = zv[c * nw + w];
				val[n++] = 1 / in->h[c * nw + w];
			}
		if (n == 0)
			continue;
		idx[n] = yv[c];
		val[n++] = -in->util;
		snprintf(name, sizeof(name), "cap_%d", c);
		hx_milp_add_row(m, name, n, idx, val, -INFINITY, 0);
	}
	/* demand */
	for (int w = 0; w < nw; w++) {
		int n = 0;
		if (in->lambda[w] <= 0)
			continue;
		for (int c = 0; c < nc; c++)
			if (zv[c * nw + w] >= 0) {
				idx[n] = zv[c * nw + w];
				val[n++] = 1;
			}
		snprintf(name, sizeof(name), "demand_%d", w);
		if (budget) {
			idx[n] = kv;
			val[n++] = -in->lambda[w];
			hx_milp_add_row(m, name, n, idx, val, 0, 0);
		} else {
			hx_milp_add_row(m, name, n, idx, val, in->lambda[w], in->lambda[w]);
		}
	}
	/* nodes */
	for (int k = 0; k < nk; k++) {
		int n = 0;
		for (int c = 0; c < nc; c++)
			if (in->use[c * nk + k] > 0) {
				idx[n] = yv[c];
				val[n++] = in->use[c * nk + k];
			}
		if (n == 0)
			continue;
		idx[n] = xv[k];
		val[n++] = -in->pool_gpus[k];
		snprintf(name, sizeof(name), "nodes_%d", k);
		hx_milp_add_row(m, name, n, idx, val, -INFINITY, 0);
	}
	if (budget) {
		for (int k = 0; k < nk; k++) {
			idx[k] = xv[k];
			val[k] = in->pool_usd[k];
		}
		hx_milp_add_row(m, "budget", nk, idx, val, -INFINITY, in->budget);
	}
	if ((rc = hx_milp_solve(m, o, &out->res, err)))
		goto out;
	if (out->res.status == HX_MILP_INFEASIBLE || out->res.status == HX_MILP_UNBOUNDED) {
		rc = hx_errf(err, HX_EINFEASIBLE, "the composition MILP is %s",
			     hx_milp_status_name(out->res.status));
		goto out;
	}
	if (out->res.status > HX_MILP_TIME_LIMIT) {
		rc =
		    hx_errf(err, out->res.status == HX_MILP_NO_SOLUTION ? HX_ELIMIT : HX_EINPUT,
			    "the composition MILP %s",
			    out->res.status == HX_MILP_NO_SOLUTION
				? "reached its limit before finding any plan"
				: "failed");
		goto out;
	}
	out->y = hx_xcalloc((size_t)nc + 1, sizeof(int));
	out->x = hx_xcalloc((size_t)nk + 1, sizeof(int));
	out->z = hx_xcalloc((size_t)(nc * nw) + 1, sizeof(double));
	for (int c = 0; c < nc; c++)
		out->y[c] = (int)floor(out->res.x[yv[c]] + 0.5);
	for (int k = 0; k < nk; k++) {
		out->x[k] = (int)floor(out->res.x[xv[k]] + 0.5);
		out->usd_per_hour += out->x[k] * in->pool_usd[k];
	}
	for (int i = 0; i < nc * nw; i++)
		out->z[i] = zv[i] >= 0 ? fmax(0, out->res.x[zv[i]]) : 0;
	out->kappa = budget ? out->res.x[kv] : 1;
out:
	if (rc) {
		free(out->res.x);
		memset(out, 0, sizeof(*out));
	}
	hx_milp_free(m);
	free(yv);
	free(xv);
	free(zv);
	free(idx);
	free(val);
	return rc;
}

/* ---- the planner ----------------------------------------------------------- */

/* The simulator is the judge (DESIGN §5): a composed plan is simulated on
 * requests drawn from the workload, and the shapes whose requests miss the
 * SLO attainment target have their capacities derated and the MILP solved
 * again, until the plan meets the target, for at most COMPOSE_ROUNDS rounds
 * and while a round raises the attainment (by 0.001 at least, within two
 * rounds); the plan returned is the first that meets the target, else the
 * one with the best attainment.  The cost model's capacity assumes a steady batch; bursts
 * at high load push the p99 TPOT past the SLO on some shapes. */
#define COMPOSE_UTIL    HX_SPOT_UTIL /* 0.9; spot need_rps is the rate over it */
#define COMPOSE_DERATE  0.85
#define COMPOSE_ROUNDS  8
#define COMPOSE_BUCKETS 3

typedef struct cpick {
	int cand, n, width;
} cpick;

static int cmp_cpick(const void *a, const void *b)
{
	const cpick *x = a, *y = b;
	if (x->width != y->width)
		return y->width - x->width;
	return x->cand - y->cand;
}

/* The cost form was infeasible: ERR says how much the whole fleet carries
 * (the budget form with every node rented, USD_ALL, is always feasible).
 * Returns HX_EINFEASIBLE with ERR set. */
static int fleet_short(const hx_compose_in *in, const hx_milp_opts *mo, double usd_all,
		       double rate_rps, double util, hx_err *err)
{
	int rc = HX_EINFEASIBLE;
	/* Say how much the whole fleet carries: the budget form with every
	 * node rented is always feasible. */
	hx_compose_out all = {0};
	hx_compose_in in2 = *in;
	hx_milp_opts mo2 = *mo;
	mo2.lp_text = NULL;
	in2.budget = usd_all + 1;
	if (hx_compose_solve(&in2, &mo2, &all, NULL) == 0)
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "the workload's rate of %g req/s is above what all the nodes and offers carry at the SLO at %g%% utilization (at most %.3f req/s)",
		    rate_rps, util * 100, all.kappa * rate_rps);
	hx_compose_out_release(&all);
	return rc;
}

/* The budget form served nothing: ERR says the least rent that serves a
 * sliver of every class, or that the budget rents nothing that does.
 * Returns HX_EINFEASIBLE. */
static int budget_short(const hx_compose_in *in, const hx_milp_opts *mo, double budget,
			hx_err *err)
{
	int rc;
	/* The least rent that serves a sliver of every class. */
	hx_compose_out least = {0};
	hx_compose_in in2 = *in;
	hx_milp_opts mo2 = *mo;
	double *tiny = hx_xcalloc((size_t)in->nw, sizeof(double));
	for (int k = 0; k < in->nw; k++)
		tiny[k] = in->lambda[k] * 1e-6;
	mo2.lp_text = NULL;
	in2.budget = 0;
	in2.lambda = tiny;
	if (hx_compose_solve(&in2, &mo2, &least, NULL) == 0)
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "the budget of %g USD/h is too small: serving every class of the workload at the SLO takes at least %.2f USD/h of rent",
		    budget, least.usd_per_hour);
	else
		rc = hx_errf(err, HX_EINFEASIBLE,
			     "the budget of %g USD/h rents nothing that serves every class",
			     budget);
	hx_compose_out_release(&least);
	free(tiny);
	return rc;
}

/* The candidates the MILP chose (Y replicas each), widest stages first, in
 * *PICKS (new); returns their count. */
static int pick_replicas(const hx_candset *s, const int *y, cpick **picks)
{
	int n = 0;

	*picks = hx_xcalloc((size_t)s->n + 1, sizeof(cpick));
	for (int c = 0; c < s->n; c++) {
		int wd = 0;
		for (int i = 0; i < s->c[c].nstages; i++)
			wd = s->c[c].st[i].tp > wd ? s->c[c].st[i].tp : wd;
		if (y[c] > 0)
			(*picks)[n++] = (cpick){c, y[c], wd};
	}
	qsort(*picks, (size_t)n, sizeof(cpick), cmp_cpick);
	return n;
}

/* Route each class of CLS by the MILP's flows Z over the picked replicas
 * (group I of P is PICKS[I]), and record ranged classes in P. */
static void route_classes(hx_plan *p, const hx_len_class *cls, int ncls, const cpick *picks,
			  int npicks, const double *z_all)
{
	/* Route each class by its flows. */
	for (int k = 0; k < ncls; k++) {
		int first = p->ningress;
		double tot = 0;
		for (int i = 0; i < npicks; i++)
			tot += z_all[picks[i].cand * ncls + k];
		if (tot <= 0)
			continue;
		for (int i = 0; i < npicks; i++) {
			double z = z_all[picks[i].cand * ncls + k];
			hx_route *rt;
			if (z <= tot * 1e-9)
				continue;
			rt = hx_plan_add_route(&p->ingress, &p->ningress);
			hx_strlcpy(rt->from, cls[k].name, sizeof(rt->from));
			hx_strlcpy(rt->to, p->groups[i].name, sizeof(rt->to));
			rt->weight = z / tot;
		}
		hx_routes_normalize(p->ingress + first, p->ningress - first);
	}
	if (cls[0].prompt_hi) {
		p->classes = hx_xcalloc((size_t)ncls, sizeof(*p->classes));
		for (int k = 0; k < ncls; k++) {
			hx_plan_class *pc = &p->classes[p->nclasses++];
			hx_strlcpy(pc->name, cls[k].name, sizeof(pc->name));
			pc->prompt_lo = cls[k].prompt_lo;
			pc->prompt_hi = cls[k].prompt_hi;
			pc->output_lo = cls[k].output_lo;
			pc->output_hi = cls[k].output_hi;
			pc->share = hx_round6(cls[k].share);
		}
	}
}

/* LAMBDA[k]: the rate of class k; HX_EINFEASIBLE with ERR when a class with
 * traffic has no candidate (of NCAND) that serves it (H[c * ncls + k] > 0). */
static int class_demand(const hx_workload *w, const hx_len_class *cls, int ncls,
			const double *h, int ncand, double *lambda, hx_err *err)
{
	int rc;

	for (int k = 0; k < ncls; k++) {
		int any = 0;
		lambda[k] = w->rate_rps * cls[k].share;
		for (int c = 0; c < ncand && !any; c++)
			any = h[c * ncls + k] > 0;
		if (!any && lambda[k] > 0) {
			rc =
			    cls[k].prompt_hi
				? hx_errf(
				      err, HX_EINFEASIBLE,
				      "no GPU set of the nodes and offers serves class %s (prompts of [%d, %d) tokens, outputs of [%d, %d)) within TTFT %g ms and TPOT %g ms",
				      cls[k].name, cls[k].prompt_lo, cls[k].prompt_hi,
				      cls[k].output_lo, cls[k].output_hi, w->slo.ttft_ms,
				      w->slo.tpot_ms)
				: hx_errf(
				      err, HX_EINFEASIBLE,
				      "no GPU set of the nodes and offers serves class %s within TTFT %g ms and TPOT %g ms",
				      cls[k].name, w->slo.ttft_ms, w->slo.tpot_ms);
			return rc;
		}
	}
	return 0;
}

/* One composition at utilization UTIL with each candidate's capacities
 * scaled by *DERATE (allocated here, all 1, when NULL); *GCAND gets the
 * candidate of each group of P (new). */
/* Whether candidate C takes GPUs of spot nodes (of S's classes). */
static int cand_spot(const hx_candset *s, const hx_candidate *c)
{
	for (int i = 0; i < c->nstages; i++)
		if (s->cls[c->st[i].cls].preempt_per_hour > 0)
			return 1;
	return 0;
}

/* H[c * NCLS + k]: the capacity of a replica of candidate c of S serving
 * class k of CLS alone, times DERATE[c], and times 1 - SPOT_F on spot
 * nodes; USE[c * S->ncls + k]: its GPUs of node class k.  Past DEADLINE
 * (hx_deadline) the shapes not yet rated stay at capacity 0, which the
 * program never picks: returns 1 then, else 0. */
static int cand_capacities(const hx_problem *pb, const hx_candset *s, const hx_len_class *cls,
			   int ncls, const double *derate, double spot_f, double deadline,
			   double *h, int *use)
{
	int cut = 0;

	for (int c = 0; c < s->n; c++) {
		hx_replica r;
		for (int k = 0; k < s->ncls; k++)
			use[c * s->ncls + k] = hx_cand_use(&s->c[c], k);
		if (c > 0 && hx_past(deadline)) {
			cut = 1;
			continue;
		}
		hx_cand_replica(pb, s, &s->c[c], &r);
		for (int k = 0; k < ncls; k++) {
			hx_workload wk = hx_len_class_workload(pb->workload, &cls[k]);
			hx_capacity cap;
			hx_cost_capacity(&r, &wk, &cap);
			h[c * ncls + k] = cap.rps > 0 ? cap.rps * derate[c] : 0;
			if (cand_spot(s, &s->c[c]))
				h[c * ncls + k] *= spot_f < 1 ? 1 - spot_f : 0;
		}
	}
	return cut;
}

/* SPOT_F: the fraction of spot replicas' capacity that the plan may not
 * count on (their loss at the SLO probability, spot_cover). */
static int compose_at(const hx_problem *pb, const hx_plan_opts *o, double util, double spot_f,
		      double **derate, int **gcand, hx_plan *p, double *kappa, hx_err *err)
{
	const hx_workload *w = pb->workload;
	hx_cluster cl;
	hx_problem pb2;
	hx_candset s = {0};
	hx_cand_opts co = {2, hx_deadline(o->time_limit_s)};
	hx_len_class *cls = NULL;
	hx_compose_in in = {0};
	hx_compose_out out = {0};
	hx_milp_opts mo = hx_plan_milp_opts(o, 0);
	double *h = NULL, *lambda = NULL, *pool_usd = NULL, usd = 0;
	int *use = NULL, *pool_nodes = NULL, *pool_gpus = NULL, *free_gpus = NULL, *next = NULL;
	int ncls = 0, rc, have_cl = 0, npicks = 0;
	cpick *picks = NULL;

	hx_plan_init(p);
	strcpy(p->mode, "compose");
	if ((rc = hx_cluster_expand_offers(pb->cluster, 1, &cl, err)))
		return rc;
	have_cl = 1;
	pb2 = *pb;
	pb2.cluster = &cl;
	if ((rc = hx_candidates(&pb2, &co, &s, err)))
		goto out;
	if (s.n == 0 && s.cut) {
		rc = hx_errf(err, HX_ELIMIT,
			     "the time limit was reached before any replica shape was priced");
		goto out;
	}
	if (s.n == 0) {
		double need =
		    hx_model_params(&pb->model->a) * hx_dtype_bytes(pb->model->a.dtype);
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "%s fits on no GPU set of the nodes and offers at the SLO: its weights alone are %.1f GiB, plus a KV reserve of %.0f tokens per replica, and no replica shape meets TTFT %g ms and TPOT %g ms",
		    pb->model->name, need / HX_GIB, hx_plan_kv_reserve(w), w->slo.ttft_ms,
		    w->slo.tpot_ms);
		goto out;
	}
	ncls = hx_len_classes(w, COMPOSE_BUCKETS, &cls);
	if (!*derate) {
		*derate = hx_xmalloc((size_t)s.n * sizeof(double) + 1);
		for (int c = 0; c < s.n; c++)
			(*derate)[c] = 1;
	}
	h = hx_xcalloc((size_t)(s.n * ncls), sizeof(double));
	use = hx_xcalloc((size_t)(s.n * s.ncls), sizeof(int));
	lambda = hx_xcalloc((size_t)ncls, sizeof(double));
	s.cut |= cand_capacities(&pb2, &s, cls, ncls, *derate, spot_f, co.deadline, h, use);
	if ((rc = class_demand(w, cls, ncls, h, s.n, lambda, err))) {
		if (spot_f >= 1)
			rc = hx_errf(
			    err, HX_EINFEASIBLE,
			    "no mix of spot and on-demand capacity keeps the SLO with probability %g: the on-demand nodes and offers alone serve no class %s",
			    o->slo_probability > 0 ? o->slo_probability
						   : HX_SPOT_SLO_PROBABILITY,
			    cls[0].name);
		goto out;
	}
	pool_nodes = hx_xcalloc((size_t)s.ncls + 1, sizeof(int));
	pool_gpus = hx_xcalloc((size_t)s.ncls + 1, sizeof(int));
	pool_usd = hx_xcalloc((size_t)s.ncls + 1, sizeof(double));
	for (int k = 0; k < s.ncls; k++) {
		pool_nodes[k] = s.cls[k].nnodes;
		pool_gpus[k] = s.cls[k].gpus_per_node;
		pool_usd[k] = s.cls[k].usd_per_hour * s.cls[k].gpus_per_node;
		usd += pool_usd[k] * pool_nodes[k];
	}
	in = (hx_compose_in){s.n,
			     ncls,
			     s.ncls,
			     h,
			     use,
			     pool_nodes,
			     pool_gpus,
			     pool_usd,
			     lambda,
			     util,
			     o->budget_usd_per_hour};
	rc = hx_compose_solve(&in, &mo, &out, err);
	if (rc == HX_EINFEASIBLE && !(o->budget_usd_per_hour > 0))
		rc = fleet_short(&in, &mo, usd, w->rate_rps, util, err);
	if (rc == HX_EINFEASIBLE && s.cut) {
		/* the shapes the deadline left unpriced may carry the rest */
		char msg[sizeof(err->msg)];
		snprintf(
		    msg, sizeof(msg),
		    "the time limit was reached before enough replica shapes were priced (with those priced, %.900s)",
		    err->msg);
		rc = hx_errf(err, HX_ELIMIT, "%s", msg);
	}
	if (rc)
		goto out;
	if (o->budget_usd_per_hour > 0 && out.kappa <= 1e-9) {
		rc = budget_short(&in, &mo, o->budget_usd_per_hour, err);
		goto out;
	}
	/* Place the chosen replicas, widest stages first. */
	npicks = pick_replicas(&s, out.y, &picks);
	free_gpus = hx_xcalloc((size_t)cl.nnodes + 1, sizeof(int));
	next = hx_xcalloc((size_t)cl.nnodes + 1, sizeof(int));
	for (int i = 0; i < cl.nnodes; i++)
		free_gpus[i] = cl.nodes[i].count;
	for (int i = 0; i < npicks; i++)
		hx_cand_place(&pb2, &s, &s.c[picks[i].cand], picks[i].n, free_gpus, next, p);
	if (p->ngroups == 0) {
		rc = hx_errf(err, HX_EINFEASIBLE, "no replica is worth renting");
		goto out;
	}
	*gcand = hx_xcalloc((size_t)npicks + 1, sizeof(int));
	for (int i = 0; i < npicks; i++)
		(*gcand)[i] = picks[i].cand;
	route_classes(p, cls, ncls, picks, npicks, out.z);
	hx_plan_solver_milp(p, "glpk", &out.res); /* objective: set below */
	if ((rc = hx_plan_finish(&pb2, p, 0, err)))
		goto out;
	hx_plan_price_rent(p, &cl, pb->cluster, w,
			   fmin(w->rate_rps * out.kappa, p->predicted.capacity_rps));
	p->solver.objective =
	    hx_round6(o->budget_usd_per_hour > 0 ? out.kappa : out.usd_per_hour);
	*kappa = out.kappa;
out:
	free(picks);
	free(free_gpus);
	free(next);
	free(h);
	free(use);
	free(lambda);
	free(pool_nodes);
	free(pool_gpus);
	free(pool_usd);
	hx_compose_out_release(&out);
	if (cls)
		hx_len_classes_free(cls, ncls);
	hx_candset_release(&s);
	if (have_cl)
		hx_cluster_release(&cl);
	if (rc)
		hx_plan_release(p);
	return rc;
}

/* Requests the judge draws per seed: five minutes of arrivals, 5000 to
 * 20000. */
static int judge_requests(double rate)
{
	double n = rate * 300;
	return n < 5000 ? 5000 : n > 20000 ? 20000 : (int)n;
}

/* Whether plan P meets W's attainment target at RATE on requests drawn with
 * two seeds (one draw is too noisy a judge at p99); when it does not, MISS
 * (one per group, zeroed here); ATTAIN gets the mean attainment flags the groups whose own
 * requests miss it.  HX_ELIMIT once past DEADLINE (hx_deadline; 0: none). */
static int judge(const hx_plan *p, const hx_workload *w, double rate, uint64_t seed,
		 double deadline, int *met, double *attain, char *miss, hx_err *err)
{
	long *n = hx_xcalloc((size_t)p->ngroups + 1, sizeof(long));
	long *good = hx_xcalloc((size_t)p->ngroups + 1, sizeof(long));
	int rc = 0;

	*met = 1;
	*attain = 0;
	memset(miss, 0, (size_t)p->ngroups);
	for (int i = 0; i < 2 && !rc; i++) {
		hx_trace t;
		hx_sim_report rep;
		hx_sim_opts so = {
		    .seed = seed + 7919 * (uint64_t)i, .keep_records = 1, .deadline = deadline};
		if ((rc = hx_gen_workload(w, rate, judge_requests(rate), 0, so.seed, &t, err)))
			break;
		rc = hx_simulate(p, w, &t, &so, &rep, err);
		hx_trace_release(&t);
		if (rc)
			break;
		*met &= rep.slo_attainment >= w->slo.attainment;
		*attain += rep.slo_attainment / 2;
		for (int k = 0; k < rep.nrecords; k++) {
			int g = rep.records[k].group;
			if (g < 0 || g >= p->ngroups)
				continue;
			n[g]++;
			good[g] += rep.records[k].met_slo && !rep.records[k].dropped;
		}
		hx_sim_report_release(&rep);
	}
	for (int g = 0; g < p->ngroups; g++)
		miss[g] = n[g] > 0 && (double)good[g] / n[g] < w->slo.attainment;
	free(n);
	free(good);
	return rc;
}

/* Spill-over: the composition with every offer's availability ignored
 * (each offer as large as the whole cluster, owned GPUs and offers
 * together) is the preferred plan.  When ROUND0 (the first composition on
 * the real offers, before the simulator derated any shape) uses other GPU
 * types than it, P lists the substitutions against it.  Nothing changes
 * when the preferred plan cannot be made. */
static void spill_over(const hx_problem *pb, const hx_plan_opts *o, double spot_f,
		       const hx_plan *round0, hx_plan *p)
{
	hx_cluster cl = *pb->cluster;
	hx_problem pb2 = *pb;
	hx_plan_opts o2 = *o;
	hx_plan pref, r0;
	double *derate = NULL, kappa = 1;
	int *gcand = NULL, total = 0, raised = 0;

	for (int i = 0; i < cl.nnodes; i++)
		total += cl.nodes[i].count;
	for (int i = 0; i < cl.noffers; i++)
		total += cl.offers[i].max_count;
	if (total > HX_MAX_OFFER_GPUS)
		total = HX_MAX_OFFER_GPUS;
	cl.offers = hx_xcalloc((size_t)cl.noffers + 1, sizeof(hx_offer));
	for (int i = 0; i < cl.noffers; i++) {
		cl.offers[i] = pb->cluster->offers[i];
		raised |= cl.offers[i].max_count < total;
		if (cl.offers[i].max_count < total)
			cl.offers[i].max_count = total;
	}
	pb2.cluster = &cl;
	/* --lp writes the plan's own program, not this one */
	o2.lp_path = NULL;
	o2.lp_text = NULL;
	if (raised && compose_at(&pb2, &o2, COMPOSE_UTIL, spot_f, &derate, &gcand, &pref,
				 &kappa, NULL) == 0) {
		if (hx_plan_copy(round0, &r0, NULL) == 0) {
			if (hx_plan_spill_against(&r0, &pref, pref.predicted.usd_per_hour) > 0)
				hx_plan_spill_against(p, &pref, pref.predicted.usd_per_hour);
			hx_plan_release(&r0);
		}
		hx_plan_release(&pref);
	}
	free(derate);
	free(gcand);
	free(cl.offers);
}

/* P's spot section: what the same inputs cost on demand only (none when
 * the on-demand capacity cannot carry the rate). */
static void spot_on_demand(const hx_problem *pb, const hx_plan_opts *o, double **derate,
			   hx_plan *p)
{
	int *gc = NULL;
	double kp = 1;
	hx_plan od;

	if (p->spot.on &&
	    compose_at(pb, o, COMPOSE_UTIL, 1, derate, &gc, &od, &kp, NULL) == 0) {
		p->spot.on_demand_usd_per_hour = od.predicted.usd_per_hour;
		hx_plan_release(&od);
	}
	free(gc);
}

/* Spot cover (SkyServe's mix of spot and on-demand replicas).  When P
 * (composed counting spot replicas whole) keeps the SLO with less than the
 * target probability, compose again counting only 1 - F of spot replicas'
 * capacity for F = 0.05, 0.1, ..., 1 (at 1 spot capacity counts for
 * nothing: on demand only), so that on-demand replicas or more spot ones
 * cover the loss, and keep the first plan that reaches the target: the
 * cheapest (with a budget: the one that carries the most), as counting less
 * spot capacity only shrinks what the program may choose, so its least rent
 * never falls (nor its most kappa rises) as F grows.  No single F fits:
 * how much spot capacity can be lost at the target depends on how many spot
 * nodes the plan rents, which F itself decides.  *SPOT_F gets the F kept;
 * P's spot section the outcome.  Returns 0, or HX_EINFEASIBLE (P released)
 * when no F reaches the target. */
#define SPOT_GRID 20

/* The capacity P needs for RATE, in its groups' predicted capacities (the
 * cost model's): the rate over the utilization, scaled up by the share of
 * those capacities that the simulator's judge took off (DERATE of each
 * group's candidate GCAND), since the MILP sized P with the derated ones. */
static double spot_need(const hx_plan *p, const int *gcand, const double *derate, double rate)
{
	double cap = 0, judged = 0;

	for (int g = 0; g < p->ngroups; g++) {
		double c = p->groups[g].nreplicas * p->groups[g].capacity_rps;
		cap += c;
		judged += c * derate[gcand[g]];
	}
	return rate / HX_SPOT_UTIL * (judged > 0 ? cap / judged : 1);
}

typedef struct spot_try {
	hx_plan p;
	int *gcand, have;
	double kappa, f;
} spot_try;

static int spot_cover(const hx_problem *pb, const hx_plan_opts *o, double *spot_f,
		      double **derate, int **gcand, hx_plan *p, double *kappa, hx_err *err)
{
	const double target =
	    o->slo_probability > 0 ? o->slo_probability : HX_SPOT_SLO_PROBABILITY;
	const double rate = pb->workload->rate_rps;
	spot_try best = {0}, t;
	double reach = 0;

	*spot_f = 0;
	hx_spot_assess(p, spot_need(p, *gcand, *derate, rate * *kappa), &p->spot);
	for (int i = 1; p->spot.on && p->spot.slo_probability < target - 1e-9 &&
			i <= SPOT_GRID && !best.have;
	     i++) {
		memset(&t, 0, sizeof(t));
		t.kappa = 1;
		t.f = (double)i / SPOT_GRID;
		if (compose_at(pb, o, COMPOSE_UTIL, t.f, derate, &t.gcand, &t.p, &t.kappa,
			       NULL)) {
			free(t.gcand);
			continue;
		}
		hx_spot_assess(&t.p, spot_need(&t.p, t.gcand, *derate, rate * t.kappa),
			       &t.p.spot);
		reach = fmax(reach, t.p.spot.on ? t.p.spot.slo_probability : 1);
		if (!t.p.spot.on || t.p.spot.slo_probability >= target - 1e-9) {
			best = t;
			best.have = 1;
		} else {
			hx_plan_release(&t.p);
			free(t.gcand);
		}
	}
	if (p->spot.on && p->spot.slo_probability < target - 1e-9) {
		reach = fmax(reach, p->spot.slo_probability);
		hx_plan_release(p);
		free(*gcand);
		*gcand = NULL;
		if (!best.have)
			return hx_errf(
			    err, HX_EINFEASIBLE,
			    "no mix of spot and on-demand capacity keeps the SLO with probability %g (at most %.6f)",
			    target, reach);
		*p = best.p;
		*gcand = best.gcand;
		*kappa = best.kappa;
		*spot_f = best.f;
	}
	p->spot.target = target;
	spot_on_demand(pb, o, derate, p);
	return 0;
}

int hx_plan_compose(const hx_problem *pb, const hx_plan_opts *o, hx_plan *p, hx_err *err)
{
	const hx_workload *w = pb->workload;
	double *derate = NULL, best_attain = -1;
	const double deadline = hx_deadline(o->time_limit_s);
	int rc = 0, have_best = 0, stale = 0, have_r0 = 0;
	double spot_f = 0;
	hx_plan best, r0;
	hx_plan_opts o2 = *o;

	for (int round = 0; round < COMPOSE_ROUNDS && stale < 2; round++) {
		double kappa = 1, attain = 0;
		int met = 0, any = 0, *gcand = NULL;
		char *miss;

		if (round > 0 && hx_past(deadline))
			break; /* keep the best so far: marked time_limit below */
		if (deadline > 0)
			o2.time_limit_s = hx_plan_time_left(deadline);
		if ((rc = compose_at(pb, &o2, COMPOSE_UTIL, 0, &derate, &gcand, p, &kappa,
				     err)) ||
		    (rc = spot_cover(pb, &o2, &spot_f, &derate, &gcand, p, &kappa, err)))
			break;
		if (round == 0 && pb->cluster->noffers > 0 &&
		    (rc = hx_plan_copy(p, &r0, err))) {
			free(gcand);
			hx_plan_release(p);
			break;
		}
		have_r0 |= round == 0 && pb->cluster->noffers > 0;
		miss = hx_xcalloc((size_t)p->ngroups + 1, 1);
		rc = hx_past(deadline) ? HX_ELIMIT
				       : judge(p, w, w->rate_rps * kappa, pb->seed, deadline,
					       &met, &attain, miss, err);
		if (rc == HX_ELIMIT) {
			/* no time left to judge it in the simulator: the plan as
			 * the cost model sees it (or the best judged before) */
			free(miss);
			free(gcand);
			rc = 0;
			if (have_best)
				hx_plan_release(p);
			else {
				best = *p;
				have_best = 1;
			}
			break;
		}
		if (!rc && !met) {
			/* Derate the shapes whose requests miss the SLO (all the
			 * plan's when none does alone) and solve again. */
			for (int g = 0; g < p->ngroups; g++)
				any |= miss[g];
			for (int g = 0; g < p->ngroups; g++)
				if (miss[g] || !any)
					derate[gcand[g]] *= COMPOSE_DERATE;
		}
		free(miss);
		free(gcand);
		if (rc) {
			hx_plan_release(p);
			break;
		}
		/* Keep the plan that meets the target, else the best so far;
		 * stop when derating stops helping. */
		stale = attain > best_attain + 1e-3 ? 0 : stale + 1;
		if (met || attain > best_attain) {
			if (have_best)
				hx_plan_release(&best);
			best = *p;
			have_best = 1;
			best_attain = attain;
		} else {
			hx_plan_release(p);
		}
		if (met)
			break;
	}
	free(derate);
	if (rc) {
		if (have_best)
			hx_plan_release(&best);
		if (have_r0)
			hx_plan_release(&r0);
		return rc;
	}
	*p = best;
	if (have_r0) {
		if (!hx_past(deadline)) {
			/* the preferred plan gets what is left of the time limit */
			if (deadline > 0)
				o2.time_limit_s = hx_plan_time_left(deadline);
			spill_over(pb, &o2, spot_f, &r0, p);
		}
		hx_plan_release(&r0);
	}
	if (hx_past(deadline))
		/* the time limit cut the shapes, the MILP or the rounds */
		strcpy(p->solver.status, "time_limit");
	return 0;
}
