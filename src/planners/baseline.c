/*
 * plan_baseline: the yardstick (DESIGN §6).  On each node, as many replicas
 * as fit, each on the smallest power-of-two TP (dividing the node's GPUs and
 * the model's heads) that holds the model with a KV reserve; a model that
 * fits no single node uses the fewest whole nodes of one GPU type with PP
 * across them, as many such replicas as the nodes allow; aggregated
 * prefill+decode; requests split in proportion to replica capacity.
 * Also the helpers every planner shares (planners.h).
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/cost.h"
#include "planners/planners.h"

double hx_plan_kv_reserve(const hx_workload *w)
{
	double q = w->slo.percentile / 100;
	double need = hx_dist_quantile(&w->prompt, q) + hx_dist_quantile(&w->output, q);
	return fmax(need, HX_KV_RESERVE_TOKENS);
}

/* Does a replica of TP x PP GPUs of node type G hold the model with the
 * reserve?  Links between stages do not matter for memory. */
static int fits(const hx_problem *pb, const hx_gpu *g, int tp, int pp)
{
	hx_replica r;
	hx_memory m;

	if (hx_replica_uniform(&r, pb->model, g, tp, pp, pb->model->a.dtype, HX_DT_FP16, 100, 0,
			       NULL))
		return 0;
	hx_cost_memory(&r, pb->workload->serving.mem_util, &m);
	return m.fits && m.kv_tokens >= hx_plan_kv_reserve(pb->workload);
}

/* The group of shape (gpu, tp, pp), made on first use. */
static hx_plan_group *group_for(hx_plan *p, const hx_problem *pb, const hx_gpu *g, int tp,
				int pp)
{
	hx_plan_group *grp;
	hx_replica even;

	for (int i = 0; i < p->ngroups; i++) {
		grp = &p->groups[i];
		if (strcmp(grp->stage[0].gpu, g->name) == 0 && grp->stage[0].tp == tp &&
		    grp->nstages == pp)
			return grp;
	}
	grp = hx_plan_add_group(p);
	snprintf(grp->name, sizeof(grp->name), "g%d", p->ngroups - 1);
	hx_strlcpy(grp->model, pb->model->name, sizeof(grp->model));
	grp->role = HX_ROLE_AGGREGATED;
	grp->wdt = pb->model->a.dtype;
	grp->kvdt = HX_DT_FP16;
	grp->nstages = pp;
	/* the cost model's even split (fits() priced the same shape) */
	hx_replica_uniform(&even, pb->model, g, tp, pp, grp->wdt, grp->kvdt, 100, 0, NULL);
	for (int s = 0; s < pp; s++) {
		hx_strlcpy(grp->stage[s].gpu, g->name, sizeof(grp->stage[s].gpu));
		grp->stage[s].tp = tp;
		grp->stage[s].first = even.stage[s].first;
		grp->stage[s].last = even.stage[s].last;
	}
	return grp;
}

static void add_replica(hx_plan_group *grp, const hx_cluster *c, const int *nodes, int first_gpu)
{
	hx_plan_replica *r = hx_plan_add_replica(grp);
	int tp = grp->stage[0].tp;

	{
		char id[128];
		snprintf(id, sizeof(id), "%sr%d", grp->name, grp->nreplicas - 1);
		hx_strlcpy(r->id, id, sizeof(r->id));
	}
	for (int s = 0; s < grp->nstages; s++) {
		r->ngpus[s] = tp;
		r->gpus[s] = hx_xcalloc((size_t)tp, sizeof(hx_gpu_ref));
		for (int k = 0; k < tp; k++) {
			hx_strlcpy(r->gpus[s][k].node, c->nodes[nodes[s]].name, sizeof(r->gpus[s][k].node));
			r->gpus[s][k].index = first_gpu + k;
		}
		if (s + 1 < grp->nstages)
			r->link[s] = hx_cluster_link(c, nodes[s], nodes[s + 1]);
	}
}

static int largest_pow2_tp(int count, int heads)
{
	int tp = 1;
	while (tp * 2 <= count && heads % (tp * 2) == 0)
		tp *= 2;
	return tp;
}

int hx_plan_baseline(const hx_problem *pb, hx_plan *p, hx_err *err)
{
	const hx_cluster *c = pb->cluster;
	int heads = pb->model->a.heads, *unfit = hx_xcalloc((size_t)c->nnodes + 1, sizeof(int));
	int nunfit = 0, rc;

	hx_plan_init(p);
	strcpy(p->mode, "baseline");
	if (c->nnodes == 0) {
		free(unfit);
		return hx_errf(err, HX_EINFEASIBLE,
			       "the cluster has offers but no nodes: baseline plans fixed nodes only");
	}
	for (int i = 0; i < c->nnodes; i++) {
		const hx_node *n = &c->nodes[i];
		int tp;
		for (tp = 1; tp <= n->count; tp *= 2) {
			if (n->count % tp || heads % tp)
				continue;
			if (fits(pb, &n->gpu, tp, 1))
				break;
		}
		if (tp > n->count || n->count % tp || heads % tp) {
			unfit[nunfit++] = i;
			continue;
		}
		{
			hx_plan_group *g = group_for(p, pb, &n->gpu, tp, 1);
			for (int k = 0; k + tp <= n->count; k += tp)
				add_replica(g, c, &i, k);
		}
	}
	/* Nodes that hold no replica alone: the fewest whole nodes of one type. */
	for (int a = 0; a < nunfit; a++) {
		int same[HX_MAX_STAGES * 4], nsame = 0, tp, pp;
		const hx_node *na;
		if (unfit[a] < 0)
			continue;
		na = &c->nodes[unfit[a]];
		tp = largest_pow2_tp(na->count, heads);
		for (int b = a; b < nunfit && nsame < (int)HX_ARRAY_LEN(same); b++) {
			const hx_node *nb;
			if (unfit[b] < 0)
				continue;
			nb = &c->nodes[unfit[b]];
			if (strcmp(nb->gpu.name, na->gpu.name) == 0 &&
			    largest_pow2_tp(nb->count, heads) == tp)
				same[nsame++] = b;
		}
		for (pp = 2; pp <= nsame && pp <= HX_MAX_STAGES; pp++)
			if (fits(pb, &na->gpu, tp, pp))
				break;
		if (pp > nsame || pp > HX_MAX_STAGES) {
			for (int k = 0; k < nsame; k++)
				unfit[same[k]] = -1; /* this type cannot hold the model */
			continue;
		}
		for (int k = 0; k + pp <= nsame; k += pp) {
			int nodes[HX_MAX_STAGES];
			for (int s = 0; s < pp; s++)
				nodes[s] = unfit[same[k + s]];
			add_replica(group_for(p, pb, &na->gpu, tp, pp), c, nodes, 0);
		}
		for (int k = 0; k < nsame; k++)
			unfit[same[k]] = -1;
	}
	free(unfit);
	if (p->ngroups == 0) {
		double need = hx_model_params(&pb->model->a) * hx_dtype_bytes(pb->model->a.dtype);
		hx_plan_release(p);
		return hx_errf(err, HX_EINFEASIBLE,
			       "%s fits on no node nor on any set of nodes of one GPU type: its weights "
			       "alone are %.1f GiB, plus a KV reserve of %.0f tokens per replica",
			       pb->model->name, need / HX_GIB, hx_plan_kv_reserve(pb->workload));
	}
	if ((rc = hx_plan_finish(pb, p, 1, err)))
		hx_plan_release(p);
	return rc;
}

/* ---- shared by every planner ---------------------------------------------- */

static const hx_node *node_named(const hx_cluster *c, const char *name)
{
	for (int i = 0; i < c->nnodes; i++)
		if (strcmp(c->nodes[i].name, name) == 0)
			return &c->nodes[i];
	return NULL;
}

static int phase_of(hx_role r)
{
	return r == HX_ROLE_PREFILL ? HX_SERVE_PREFILL
	       : r == HX_ROLE_DECODE ? HX_SERVE_DECODE : HX_SERVE_BOTH;
}

/* The first replica of GRP whose links equal replica R's (R itself when
 * none before it does). */
static int first_alike(const hx_plan_group *grp, int r)
{
	const hx_plan_replica *x = &grp->replicas[r];
	size_t n = (size_t)grp->nstages * sizeof(hx_linkspec);

	for (int q = 0; q < r; q++) {
		const hx_plan_replica *y = &grp->replicas[q];
		if (memcmp(x->link, y->link, n) == 0 && memcmp(x->tp_link, y->tp_link, n) == 0)
			return q;
	}
	return r;
}

int hx_plan_finish(const hx_problem *pb, hx_plan *p, int weights, hx_err *err)
{
	const hx_workload *w = pb->workload;
	double total = 0, usd = 0, lambda = w->rate_rps, served, P, O;
	double ttft = 0, tpot = 0;
	int rc;

	hx_file_digest(pb->cluster_path, p->cluster_digest);
	hx_file_digest(pb->workload_path, p->workload_digest);
	if (pb->calibration_path)
		hx_file_digest(pb->calibration_path, p->calibration);
	if (!hx_plan_model(p, pb->model->name))
		hx_plan_add_model(p, pb->model);
	p->solver.seed = pb->seed;
	/* Embed the profiles of the GPUs the plan uses, as the cluster gives them. */
	for (int g = 0; g < p->ngroups; g++) {
		hx_plan_group *grp = &p->groups[g];
		for (int r = 0; r < grp->nreplicas; r++)
			for (int s = 0; s < grp->nstages; s++)
				for (int k = 0; k < grp->replicas[r].ngpus[s]; k++) {
					const hx_node *n = node_named(pb->cluster, grp->replicas[r].gpus[s][k].node);
					if (!n)
						return hx_errf(err, HX_EINPUT, "internal: unknown node %s",
							       grp->replicas[r].gpus[s][k].node);
					if (!hx_plan_gpu(p, n->gpu.name))
						hx_plan_add_gpu(p, &n->gpu);
					usd += n->usd_per_hour;
				}
	}
	/* Capacity per replica (the slowest replica stands for its group).
	 * Replicas of a group differ to the cost model only by their links:
	 * one evaluation serves all that share them. */
	for (int g = 0; g < p->ngroups; g++) {
		hx_plan_group *grp = &p->groups[g];
		double cap = INFINITY, batch = 0;
		for (int r = 0; r < grp->nreplicas; r++) {
			hx_replica rep;
			hx_capacity c;
			if ((rc = hx_plan_replica_cost(p, grp, &grp->replicas[r], &rep, err)))
				return rc;
			if (first_alike(grp, r) < r)
				continue;
			hx_cost_capacity_phase(&rep, w, phase_of(grp->role), &c);
			if (c.rps < cap) {
				cap = c.rps;
				batch = c.max_batch;
			}
		}
		grp->capacity_rps = hx_round6(cap);
		grp->max_batch = batch;
		total += cap * grp->nreplicas;
	}
	if (weights) {
		free(p->ingress);
		p->ingress = NULL;
		p->ningress = 0;
		for (int g = 0; g < p->ngroups; g++) {
			hx_route *rt = hx_plan_add_route(&p->ingress, &p->ningress);
			hx_strlcpy(rt->to, p->groups[g].name, sizeof(rt->to));
			rt->weight = total > 0 ? p->groups[g].capacity_rps * p->groups[g].nreplicas / total
					       : 1.0 / p->ngroups;
		}
		hx_routes_normalize(p->ingress, p->ningress);
	}
	/* The operating point at the workload's rate (at capacity when above it). */
	served = fmin(lambda, total);
	for (int g = 0; g < p->ngroups && served > 0; g++) {
		hx_plan_group *grp = &p->groups[g];
		double share = 0;
		for (int i = 0; i < p->ningress; i++)
			if (strcmp(p->ingress[i].to, grp->name) == 0)
				share += p->ingress[i].weight;
		for (int r = 0; r < grp->nreplicas && share > 0; r++) {
			hx_replica rep;
			hx_capacity c;
			if (first_alike(grp, r) < r)
				continue; /* the same operating point as that one */
			hx_plan_replica_cost(p, grp, &grp->replicas[r], &rep, NULL);
			hx_cost_at_rate_phase(&rep, w, phase_of(grp->role),
					      fmin(served * share / grp->nreplicas, grp->capacity_rps), &c);
			if (isfinite(c.ttft_ms))
				ttft = fmax(ttft, c.ttft_ms);
			if (isfinite(c.tpot_ms))
				tpot = fmax(tpot, c.tpot_ms);
		}
	}
	P = hx_dist_mean(&w->prompt);
	O = hx_dist_mean(&w->output);
	p->predicted.capacity_rps = hx_round6(total);
	p->predicted.throughput_tps = hx_round6(served * O);
	p->predicted.ttft_ms_p99 = hx_round6(ttft);
	p->predicted.tpot_ms_p99 = hx_round6(tpot);
	p->predicted.usd_per_hour = hx_round6(usd);
	p->predicted.usd_per_m_tokens =
		served > 0 ? hx_round6(usd / (served * (P + O) * 3600 / 1e6)) : 0;
	p->solver.objective = p->predicted.capacity_rps;
	return 0;
}
