/* The pipeline planner's plan of a placement (pipeline.c has the
 * overview): the nodes and hops that carry flow become groups and routes. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planners/pipeline_int.h"

static double link_latency_s(const pctx *c, int i, int j)
{
	return c->lat_s[i * c->n + j];
}

/* Keep the nodes and hops that carry flow and lie on a source-to-sink path:
 * drop what carries (next to) nothing, then, until nothing changes, nodes
 * with no way in or out left. */
static void prune(const pctx *c, const int *f, const int *l, const hx_pipe_flow *fl, int *kept,
		  int *hop_kept)
{
	int n = c->n, changed = 1;
	double eps = 1e-9 * fmax(fl->value, 1e-300);

	for (int i = 0; i < n; i++)
		kept[i] = f[i] >= 0 && fl->through[i] > eps;
	for (int i = 0; i < n * n; i++)
		hop_kept[i] = fl->hop[i] > eps;
	while (changed) {
		changed = 0;
		for (int i = 0; i < n; i++) {
			int in = f[i] == 0 && fl->src[i] > eps, out = l[i] == c->L;
			if (!kept[i])
				continue;
			for (int j = 0; j < n; j++) {
				in |= kept[j] && hop_kept[j * n + i];
				out |= kept[j] && hop_kept[i * n + j];
			}
			if (!in || !out) {
				kept[i] = 0;
				changed = 1;
			}
		}
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			hop_kept[i * n + j] &= kept[i] && kept[j];
}

/* The slowest path over the nodes and hops kept: *TPOT_S (one decode step)
 * and *TTFT_S (the percentile prompt's prefill); nodes relaxed by their
 * last layer, which grows along every path. */
static void kept_paths(const pctx *c, const int *f, const int *l, const int *kept,
		       const int *hop_kept, double *tpot_s, double *ttft_s)
{
	const hx_cluster *cl = c->pb->cluster;
	const hx_workload *w = c->pb->workload;
	int n = c->n;
	double Pq = hx_dist_quantile(&w->prompt, w->slo.percentile / 100);
	double bytes_tok = hx_cost_act_bytes_per_token(c->pb->model);
	double *tpot = hx_xcalloc((size_t)n + 1, sizeof(double)),
	       *ttft = hx_xcalloc((size_t)n + 1, sizeof(double));

	*tpot_s = *ttft_s = 0;
	for (int end = 1; end <= c->L; end++)
		for (int i = 0; i < n; i++) {
			const ntype *t = &c->ty[c->type[i]];
			int k = l[i] - f[i];
			if (!kept[i] || l[i] != end)
				continue;
			tpot[i] = HX_PIPE_WAIT * t->iter_s[k];
			ttft[i] = t->pre_s[k];
			for (int j = 0; j < n; j++) {
				double bw;
				if (!hop_kept[j * n + i])
					continue;
				bw = hx_gbps_bytes_s(hx_cluster_link(cl, j, i).bw_gbps);
				tpot[i] =
				    fmax(tpot[i], HX_PIPE_WAIT * t->iter_s[k] + tpot[j] +
						      link_latency_s(c, j, i) + bytes_tok / bw);
				ttft[i] = fmax(ttft[i], t->pre_s[k] + ttft[j] +
							    link_latency_s(c, j, i) +
							    Pq * bytes_tok / bw);
			}
			if (l[i] == c->L) {
				*tpot_s = fmax(*tpot_s, tpot[i]);
				*ttft_s = fmax(*ttft_s, ttft[i]);
			}
		}
	free(tpot);
	free(ttft);
}

int hx_pipe_emit(pctx *c, const int *f, const int *l, hx_plan *p, double *value, hx_err *err)
{
	const hx_cluster *cl = c->pb->cluster;
	const hx_workload *w = c->pb->workload;
	int n = c->n, rc, *kept = hx_xcalloc((size_t)n, sizeof(int)),
	    *gi = hx_xcalloc((size_t)n, sizeof(int));
	int *hop_kept = hx_xcalloc((size_t)n * n + 1, sizeof(int)),
	    *order = hx_xmalloc((size_t)n * sizeof(int));
	double O = hx_dist_mean(&w->output), P = hx_dist_mean(&w->prompt);
	double usd = 0, worst_tpot = 0, worst_ttft = 0, served;
	hx_pipe_flow fl;

	{
		/* the capacities the search scored; the paths are taken again
		 * below over the hops that carry flow */
		double scored_tpot, scored_ttft;
		hx_pipe_node_caps(c, f, l, &scored_tpot, &scored_ttft);
	}
	if ((rc = hx_pipe_flow_eval(&c->net, f, l, &fl, err)))
		goto out;
	*value = fl.value;
	prune(c, f, l, &fl, kept, hop_kept);
	/* groups in the order of their first layer, then of the cluster */
	for (int i = 0, m = 0; i < n; i++)
		order[m++] = i;
	for (int a = 1; a < n; a++) {
		int x = order[a], b = a;
		while (b > 0 && f[order[b - 1]] > f[x]) {
			order[b] = order[b - 1];
			b--;
		}
		order[b] = x;
	}
	for (int q = 0; q < n; q++) {
		int i = order[q], k = l[i] - f[i];
		const ntype *t = &c->ty[c->type[i]];
		hx_plan_group *g;
		hx_plan_replica *r;
		char name[64];
		gi[i] = -1;
		if (!kept[i])
			continue;
		g = hx_plan_add_group(p);
		gi[i] = p->ngroups - 1;
		snprintf(name, sizeof(name), "g%d", p->ngroups - 1);
		hx_strlcpy(g->name, name, sizeof(g->name));
		hx_strlcpy(g->model, c->pb->model->name, sizeof(g->model));
		g->role = HX_ROLE_AGGREGATED;
		g->wdt = c->pb->model->a.dtype;
		g->kvdt = HX_DT_FP16;
		hx_plan_group_stages(g, 1);
		hx_strlcpy(g->stage[0].gpu, cl->nodes[i].gpu.name, sizeof(g->stage[0].gpu));
		g->stage[0].tp = t->tp;
		g->stage[0].first = f[i];
		g->stage[0].last = l[i];
		g->capacity_rps = hx_round6(c->net.node_tps[i] / O);
		g->max_batch = t->batch[k];
		r = hx_plan_add_replica(g);
		snprintf(name, sizeof(name), "%sr0", g->name);
		hx_strlcpy(r->id, name, sizeof(r->id));
		r->ngpus[0] = t->tp;
		r->gpus[0] = hx_xcalloc((size_t)t->tp, sizeof(hx_gpu_ref));
		for (int x = 0; x < t->tp; x++) {
			hx_strlcpy(r->gpus[0][x].node, cl->nodes[i].name,
				   sizeof(r->gpus[0][x].node));
			r->gpus[0][x].index = x;
		}
		usd += cl->nodes[i].usd_per_hour * t->tp;
		if (!hx_plan_gpu(p, cl->nodes[i].gpu.name))
			hx_plan_add_gpu(p, &cl->nodes[i].gpu);
	}
	kept_paths(c, f, l, kept, hop_kept, &worst_tpot, &worst_ttft);
	for (int q = 0; q < n; q++) {
		int i = order[q];
		if (!kept[i])
			continue;
		if (f[i] == 0) {
			hx_route *rt = hx_plan_add_route(&p->ingress, &p->ningress);
			hx_strlcpy(rt->to, p->groups[gi[i]].name, sizeof(rt->to));
			rt->weight = fl.src[i];
		}
		if (l[i] < c->L) {
			int at = p->nhops;
			for (int q2 = 0; q2 < n; q2++) {
				int j = order[q2];
				hx_route *rt;
				if (!hop_kept[i * n + j])
					continue;
				rt = hx_plan_add_route(&p->hops, &p->nhops);
				snprintf(rt->from, sizeof(rt->from), "%s/s0",
					 p->groups[gi[i]].replicas[0].id);
				snprintf(rt->to, sizeof(rt->to), "%s/s0",
					 p->groups[gi[j]].replicas[0].id);
				rt->weight = fl.hop[i * n + j];
				hx_route_set_link(rt, cl, i, j);
			}
			hx_routes_normalize(p->hops + at, p->nhops - at);
		}
	}
	hx_routes_normalize(p->ingress, p->ningress);
	served = fmin(w->rate_rps, fl.value / O);
	p->predicted.capacity_rps = hx_round6(fl.value / O);
	p->predicted.flow_tps = hx_round6(fl.value);
	p->predicted.flow_total_tps = hx_round6(fl.value * (P + O) / O);
	p->predicted.throughput_tps = hx_round6(served * O);
	p->predicted.ttft_ms_p99 = hx_round6(worst_ttft * 1e3);
	p->predicted.tpot_ms_p99 = hx_round6(worst_tpot * 1e3);
	p->predicted.usd_per_hour = hx_round6(usd);
	p->predicted.usd_per_m_tokens = hx_round6(hx_usd_per_mtok(usd, served, P + O));
	hx_pipe_flow_release(&fl);
out:
	free(order);
	free(hop_kept);
	free(gi);
	free(kept);
	return rc;
}
