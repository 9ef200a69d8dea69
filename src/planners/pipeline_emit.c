/* The pipeline planner's plan of a placement (pipeline.c has the
 * overview): the nodes and hops that carry flow become groups and routes. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planners/pipeline_int.h"

/* Keep the nodes and hops that carry flow and lie on a source-to-sink path:
 * drop what carries (next to) nothing, then, until nothing changes, nodes
 * with no way in or out left (over FL's hops, not over every node pair:
 * 16.7M of them at the node limit, a sweep each round).  HOP_KEPT: per
 * hop of FL. */
static void prune(const pctx *c, const int *f, const int *l, const hx_pipe_flow *fl, int *kept,
		  int *hop_kept)
{
	int n = c->n, changed = 1;
	int *has_in = hx_xmalloc((size_t)n * sizeof(int) + 1),
	    *has_out = hx_xmalloc((size_t)n * sizeof(int) + 1);
	double eps = 1e-9 * fmax(fl->value, 1e-300);

	for (int i = 0; i < n; i++)
		kept[i] = f[i] >= 0 && fl->through[i] > eps;
	for (int h = 0; h < fl->nhop; h++)
		hop_kept[h] = fl->hop[h] > eps;
	while (changed) {
		changed = 0;
		memset(has_in, 0, (size_t)n * sizeof(int));
		memset(has_out, 0, (size_t)n * sizeof(int));
		for (int h = 0; h < fl->nhop; h++)
			if (hop_kept[h] && kept[fl->hop_from[h]] && kept[fl->hop_to[h]]) {
				has_out[fl->hop_from[h]] = 1;
				has_in[fl->hop_to[h]] = 1;
			}
		for (int i = 0; i < n; i++) {
			int in = (f[i] == 0 && fl->src[i] > eps) || has_in[i],
			    out = l[i] == c->L || has_out[i];
			if (kept[i] && (!in || !out)) {
				kept[i] = 0;
				changed = 1;
			}
		}
	}
	for (int h = 0; h < fl->nhop; h++)
		hop_kept[h] &= kept[fl->hop_from[h]] && kept[fl->hop_to[h]];
	free(has_in);
	free(has_out);
}

/* The slowest path over the nodes and hops kept: *TPOT_S (one decode step)
 * and *TTFT_S (the percentile prompt's prefill); nodes relaxed by their
 * last layer, which grows along every path, each by the kept hops into it. */
static void kept_paths(const pctx *c, const int *f, const int *l, const int *kept,
		       const hx_pipe_flow *fl, const int *hop_kept, double *tpot_s,
		       double *ttft_s)
{
	const hx_workload *w = c->pb->workload;
	int n = c->n, *in_start = hx_xcalloc((size_t)n + 2, sizeof(int)),
	    *in_hop = hx_xmalloc((size_t)fl->nhop * sizeof(int) + 1),
	    *fill = hx_xcalloc((size_t)n + 1, sizeof(int));
	double Pq = hx_dist_quantile(&w->prompt, w->slo.percentile / 100);
	double bytes_tok = hx_cost_act_bytes_per_token(c->pb->model);
	double *tpot = hx_xcalloc((size_t)n + 1, sizeof(double)),
	       *ttft = hx_xcalloc((size_t)n + 1, sizeof(double));

	for (int h = 0; h < fl->nhop; h++)
		if (hop_kept[h])
			in_start[fl->hop_to[h] + 1]++;
	for (int i = 0; i < n; i++)
		in_start[i + 1] += in_start[i];
	for (int h = 0; h < fl->nhop; h++)
		if (hop_kept[h])
			in_hop[in_start[fl->hop_to[h]] + fill[fl->hop_to[h]]++] = h;
	*tpot_s = *ttft_s = 0;
	for (int end = 1; end <= c->L; end++)
		for (int i = 0; i < n; i++) {
			const ntype *t = &c->ty[c->type[i]];
			int k = l[i] - f[i];
			if (!kept[i] || l[i] != end)
				continue;
			tpot[i] = HX_PIPE_WAIT * t->iter_s[k];
			ttft[i] = t->pre_s[k];
			for (int q = in_start[i]; q < in_start[i + 1]; q++) {
				int j = fl->hop_from[in_hop[q]];
				const hx_linkspec *ls = pipe_link(c, j, i);
				double bw = hx_gbps_bytes_s(ls->bw_gbps),
				       lat = ls->latency_ms * 1e-3;
				tpot[i] = fmax(tpot[i], HX_PIPE_WAIT * t->iter_s[k] + tpot[j] +
							    lat + bytes_tok / bw);
				ttft[i] = fmax(ttft[i], t->pre_s[k] + ttft[j] + lat +
							    Pq * bytes_tok / bw);
			}
			if (l[i] == c->L) {
				*tpot_s = fmax(*tpot_s, tpot[i]);
				*ttft_s = fmax(*ttft_s, ttft[i]);
			}
		}
	free(tpot);
	free(ttft);
	free(in_start);
	free(in_hop);
	free(fill);
}

/* A kept hop by the places of its ends in the plan's group order. */
typedef struct hop_key {
	int from_q, to_q, h;
} hop_key;

static int hop_key_cmp(const void *a, const void *b)
{
	const hop_key *x = a, *y = b;
	if (x->from_q != y->from_q)
		return (x->from_q > y->from_q) - (x->from_q < y->from_q);
	return (x->to_q > y->to_q) - (x->to_q < y->to_q);
}

/* FL's kept hops (HOP_KEPT) into *KEYS, by the place (POS) of the node
 * they leave, then of the node they reach; returns how many. */
static int kept_hops(const hx_pipe_flow *fl, const int *hop_kept, const int *pos,
		     hop_key **keys)
{
	int nk = 0;

	*keys = hx_xmalloc((size_t)fl->nhop * sizeof(hop_key) + 1);
	for (int h = 0; h < fl->nhop; h++)
		if (hop_kept[h])
			(*keys)[nk++] = (hop_key){pos[fl->hop_from[h]], pos[fl->hop_to[h]], h};
	qsort(*keys, (size_t)nk, sizeof(hop_key), hop_key_cmp);
	return nk;
}

int hx_pipe_emit(pctx *c, const int *f, const int *l, hx_plan *p, double *value, hx_err *err)
{
	const hx_cluster *cl = c->pb->cluster;
	const hx_workload *w = c->pb->workload;
	int n = c->n, rc, *kept = hx_xcalloc((size_t)n, sizeof(int)),
	    *gi = hx_xcalloc((size_t)n, sizeof(int));
	int *hop_kept = NULL, *order = hx_xmalloc((size_t)n * sizeof(int)),
	    *pos = hx_xmalloc((size_t)n * sizeof(int) + 1), nk, at_k = 0;
	hop_key *keys = NULL;
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
	hop_kept = hx_xcalloc((size_t)fl.nhop + 1, sizeof(int));
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
	for (int q = 0; q < n; q++)
		pos[order[q]] = q;
	nk = kept_hops(&fl, hop_kept, pos, &keys);
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
	kept_paths(c, f, l, kept, &fl, hop_kept, &worst_tpot, &worst_ttft);
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
			while (at_k < nk && keys[at_k].from_q < q)
				at_k++;
			for (; at_k < nk && keys[at_k].from_q == q; at_k++) {
				int j = order[keys[at_k].to_q];
				hx_route *rt = hx_plan_add_route(&p->hops, &p->nhops);
				snprintf(rt->from, sizeof(rt->from), "%s/s0",
					 p->groups[gi[i]].replicas[0].id);
				snprintf(rt->to, sizeof(rt->to), "%s/s0",
					 p->groups[gi[j]].replicas[0].id);
				rt->weight = fl.hop[keys[at_k].h];
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
	free(pos);
	free(keys);
	free(hop_kept);
	free(gi);
	free(kept);
	return rc;
}
