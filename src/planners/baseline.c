/*
 * baseline: the yardstick (DESIGN §6).  On each node, as many replicas
 * as fit, each on the smallest power-of-two TP (dividing the node's GPUs and
 * the model's heads) that holds the model with a KV reserve; a model that
 * fits no single node uses the fewest whole nodes of one GPU type with PP
 * across them, as many such replicas as the nodes allow; aggregated
 * prefill+decode; requests split in proportion to replica capacity.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/cost.h"
#include "planners/baseline.h"

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
	hx_plan_group_stages(grp, pp);
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

static void add_replica(hx_plan_group *grp, const hx_cluster *c, const int *nodes,
			int first_gpu)
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
			hx_strlcpy(r->gpus[s][k].node, c->nodes[nodes[s]].name,
				   sizeof(r->gpus[s][k].node));
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
		return hx_errf(
		    err, HX_EINFEASIBLE,
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
		double need =
		    hx_model_params(&pb->model->a) * hx_dtype_bytes(pb->model->a.dtype);
		hx_plan_release(p);
		return hx_errf(
		    err, HX_EINFEASIBLE,
		    "%s fits on no node nor on any set of nodes of one GPU type: its weights alone are %.1f GiB, plus a KV reserve of %.0f tokens per replica",
		    pb->model->name, need / HX_GIB, hx_plan_kv_reserve(pb->workload));
	}
	if ((rc = hx_plan_finish(pb, p, HX_FINISH_WEIGHTS, err)))
		hx_plan_release(p);
	return rc;
}
