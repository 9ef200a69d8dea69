/*
 * plan_disagg: disaggregated prefill/decode (DESIGN §6; HexGen-2's three
 * phases).  (1) Partition the node graph, links weighted by bandwidth, into
 * k groups of high internal bandwidth (solver/partition, k = 2..8).  (2) Give
 * each group a role; every node of a role runs replicas of the TP that
 * gives it the most capacity for that phase (cost model, one node per
 * replica).  (3) Score a role assignment by a max-flow in requests/s:
 * source -> prefill replicas (their prefill capacity at the TTFT SLO, less
 * the KV transfer) -> the prefill node's NIC -> the link between the two
 * nodes -> the decode node's NIC -> decode replicas (their capacity at the
 * TPOT SLO) -> sink, each NIC and link a capacity shared by every pair that
 * crosses it (bandwidth / KV bytes of a mean prompt).  The edge flows give
 * the ingress and KV routing weights (a node's decode replicas share what
 * reaches the node evenly).  (4) Refine: flip single nodes'
 * roles (moving them between the prefill and decode sides) while the flow
 * grows.  The bound is the best split ignoring links (nodes sorted by
 * prefill/decode ratio, the last one split fractionally).  (5) The
 * simulator's check (DESIGN §8): the best few assignments by flow are built
 * and simulated whole; the plan is the one the simulator rates highest.
 */
#include "config.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "solver/flow.h"
#include "solver/partition.h"
#include "planners/disagg.h"

typedef struct node_role {
	int tp[2];       /* best TP for prefill (0) and decode (1); 0: cannot */
	double cap[2];   /* per replica, requests/s */
	int reps[2];     /* replicas on the node */
	double total[2]; /* the node's capacity in each role */
} node_role;

typedef struct dctx {
	const hx_problem *pb;
	hx_workload wp; /* the workload with the TTFT SLO less the KV transfer */
	node_role *nr;
	int n;
	double kv_req_bytes; /* KV bytes of a mean prompt */
	long flows;          /* max-flows solved */
} dctx;

/* The best few role assignments the search scored (distinct, by flow
 * value, best first): the simulator judges them at the end. */
#define DISAGG_SIM_TOP 3
typedef struct topk {
	int n, nnodes;
	double v[DISAGG_SIM_TOP];
	int *role[DISAGG_SIM_TOP];
} topk;

static void topk_add(topk *t, const int *role, double v)
{
	int at;
	if (!(v > 0))
		return;
	for (int i = 0; i < t->n; i++)
		if (!memcmp(t->role[i], role, (size_t)t->nnodes * sizeof(int)))
			return;
	if (t->n == DISAGG_SIM_TOP && v <= t->v[t->n - 1])
		return;
	if (t->n < DISAGG_SIM_TOP)
		t->role[t->n++] = hx_xmalloc((size_t)t->nnodes * sizeof(int));
	{
		int *spare = t->role[t->n - 1];
		for (at = t->n - 1; at > 0 && t->v[at - 1] < v; at--) {
			t->v[at] = t->v[at - 1];
			t->role[at] = t->role[at - 1];
		}
		t->v[at] = v;
		t->role[at] = spare;
		memcpy(spare, role, (size_t)t->nnodes * sizeof(int));
	}
}

static hx_replica one_node_replica(const hx_problem *pb, const hx_gpu *g, int tp)
{
	hx_replica r;
	hx_replica_uniform(&r, pb->model, g, tp, 1, pb->model->a.dtype, HX_DT_FP16, 100, 0,
			   NULL);
	return r;
}

static void price_nodes(dctx *d)
{
	const hx_cluster *c = d->pb->cluster;
	int heads = d->pb->model->a.heads;

	for (int i = 0; i < d->n; i++) {
		node_role *nr = &d->nr[i];
		int j;
		/* A node with the same GPU profile and count as an earlier one
		 * prices the same (one-node replicas do not see links). */
		for (j = 0; j < i; j++)
			if (c->nodes[j].count == c->nodes[i].count &&
			    hx_gpu_same(&c->nodes[j].gpu, &c->nodes[i].gpu))
				break;
		if (j < i) {
			*nr = d->nr[j];
			continue;
		}
		for (int phase = 0; phase < 2; phase++) {
			for (int tp = 1; tp <= c->nodes[i].count; tp++) {
				hx_replica r;
				hx_capacity cap;
				double tot;
				if (c->nodes[i].count % tp || heads % tp)
					continue;
				r = one_node_replica(d->pb, &c->nodes[i].gpu, tp);
				hx_cost_capacity_phase(
				    &r, phase ? d->pb->workload : &d->wp,
				    phase ? HX_SERVE_DECODE : HX_SERVE_PREFILL, &cap);
				tot = cap.rps * (c->nodes[i].count / tp);
				if (cap.rps > 0 && tot > nr->total[phase]) {
					nr->tp[phase] = tp;
					nr->cap[phase] = cap.rps;
					nr->reps[phase] = c->nodes[i].count / tp;
					nr->total[phase] = tot;
				}
			}
		}
	}
}

static double gbps_to_rps(const dctx *d, double gbps)
{
	return hx_gbps_bytes_s(gbps) / d->kv_req_bytes;
}

/* The flow network of a role assignment (ROLE[i]: 0 prefill, 1 decode, -1
 * unused).  Vertex layout: 0 source, 1 sink, then per node: replica block
 * start (REP0), egress in/out, ingress in/out; then per (prefill, decode)
 * node pair a link in/out. */
typedef struct net {
	hx_graph g;
	int *rep0, *nrep, *eg_in, *eg_out, *in_in, *in_out;
	int *pair;     /* n*n: link-in vertex of (a, b) or -1 */
	int *rep_edge; /* per vertex of a replica: its source or sink edge */
} net;

static void net_release(net *x)
{
	hx_graph_release(&x->g);
	free(x->rep0);
	free(x->nrep);
	free(x->eg_in);
	free(x->eg_out);
	free(x->in_in);
	free(x->in_out);
	free(x->pair);
	free(x->rep_edge);
}

static void build(const dctx *d, const int *role, net *x)
{
	const hx_cluster *c = d->pb->cluster;
	int n = d->n, v = 2;
	double inf = 1;

	/* "Unbounded" edges: more than all replicas together carry (1e18
	 * swallowed the flows' digits in push-relabel's excess arithmetic,
	 * which skews the per-edge flows the routing weights come from). */
	for (int i = 0; i < n; i++)
		inf += d->nr[i].total[0] + d->nr[i].total[1];
	memset(x, 0, sizeof(*x));
	x->rep0 = hx_xcalloc((size_t)n, sizeof(int));
	x->nrep = hx_xcalloc((size_t)n, sizeof(int));
	x->eg_in = hx_xcalloc((size_t)n, sizeof(int));
	x->eg_out = hx_xcalloc((size_t)n, sizeof(int));
	x->in_in = hx_xcalloc((size_t)n, sizeof(int));
	x->in_out = hx_xcalloc((size_t)n, sizeof(int));
	x->pair = hx_xmalloc((size_t)n * n * sizeof(int));
	for (int i = 0; i < n * n; i++)
		x->pair[i] = -1;
	for (int i = 0; i < n; i++) {
		x->rep0[i] = v;
		x->nrep[i] = role[i] < 0 ? 0 : d->nr[i].reps[role[i]];
		v += x->nrep[i];
		x->eg_in[i] = v++;
		x->eg_out[i] = v++;
		x->in_in[i] = v++;
		x->in_out[i] = v++;
	}
	for (int a = 0; a < n; a++)
		for (int b = 0; b < n; b++)
			if (role[a] == 0 && role[b] == 1) {
				x->pair[a * n + b] = v;
				v += 2;
			}
	hx_graph_init(&x->g, v);
	x->rep_edge = hx_xcalloc((size_t)v, sizeof(int));
	for (int i = 0; i < n; i++) {
		double nic = gbps_to_rps(d, c->nodes[i].nic_gbps);
		hx_graph_add_edge(&x->g, x->eg_in[i], x->eg_out[i], nic);
		hx_graph_add_edge(&x->g, x->in_in[i], x->in_out[i], nic);
		for (int k = 0; k < x->nrep[i]; k++) {
			int rv = x->rep0[i] + k;
			if (role[i] == 0) {
				x->rep_edge[rv] =
				    hx_graph_add_edge(&x->g, 0, rv, d->nr[i].cap[0]);
				hx_graph_add_edge(&x->g, rv, x->eg_in[i], inf);
			} else {
				hx_graph_add_edge(&x->g, x->in_out[i], rv, inf);
				x->rep_edge[rv] =
				    hx_graph_add_edge(&x->g, rv, 1, d->nr[i].cap[1]);
			}
		}
	}
	for (int a = 0; a < n; a++)
		for (int b = 0; b < n; b++) {
			int lv = x->pair[a * n + b];
			if (lv < 0)
				continue;
			hx_graph_add_edge(&x->g, x->eg_out[a], lv, inf);
			hx_graph_add_edge(&x->g, lv, lv + 1,
					  gbps_to_rps(d, hx_cluster_link(c, a, b).bw_gbps));
			hx_graph_add_edge(&x->g, lv + 1, x->in_in[b], inf);
		}
}

static double score(dctx *d, const int *role, hx_err *err)
{
	net x;
	hx_flow_result res;
	double v = -1;
	int np = 0, nd = 0;

	for (int i = 0; i < d->n; i++) {
		np += role[i] == 0;
		nd += role[i] == 1;
	}
	if (!np || !nd)
		return 0;
	build(d, role, &x);
	if (hx_flow_max(&x.g, 0, 1, &res, err) == 0)
		v = res.value;
	d->flows++;
	hx_flow_result_release(&res);
	net_release(&x);
	return v;
}

/* The best role split ignoring links: an upper bound on any flow. */
static double split_bound(const dctx *d)
{
	int *idx = hx_xmalloc((size_t)d->n * sizeof(int));
	double best = 0, P = 0, D = 0;

	for (int i = 0; i < d->n; i++) {
		idx[i] = i;
		D += d->nr[i].total[1];
	}
	/* prefill-rich nodes first */
	for (int i = 0; i < d->n; i++)
		for (int j = i + 1; j < d->n; j++) {
			const node_role *a = &d->nr[idx[i]], *b = &d->nr[idx[j]];
			if (a->total[0] * (b->total[1] + 1e-12) <
			    b->total[0] * (a->total[1] + 1e-12)) {
				int t = idx[i];
				idx[i] = idx[j];
				idx[j] = t;
			}
		}
	for (int i = 0; i < d->n; i++) {
		const node_role *a = &d->nr[idx[i]];
		double p2 = P + a->total[0], d2 = D - a->total[1];
		if (p2 >= d2) { /* split this node fractionally */
			double f = (D - P) / fmax(a->total[0] + a->total[1], 1e-12);
			best = fmax(best, P + f * a->total[0]);
			break;
		}
		P = p2;
		D = d2;
		best = fmax(best, fmin(P, D));
	}
	free(idx);
	return best;
}

static int emit(dctx *d, const int *role, hx_plan *p, double *value, hx_err *err)
{
	const hx_cluster *c = d->pb->cluster;
	net x;
	hx_flow_result res;
	int n = d->n, *group_of = hx_xmalloc((size_t)n * sizeof(int)), rc;
	double *pair_flow;

	build(d, role, &x);
	if ((rc = hx_flow_max(&x.g, 0, 1, &res, err))) {
		net_release(&x);
		free(group_of);
		return rc;
	}
	*value = res.value;
	/* One group per used node and role: its replicas share the node. */
	for (int i = 0; i < n; i++) {
		hx_plan_group *g;
		char name[128];
		group_of[i] = -1;
		if (role[i] < 0 || x.nrep[i] == 0)
			continue;
		g = hx_plan_add_group(p);
		group_of[i] = p->ngroups - 1;
		snprintf(name, sizeof(name), "%s%d", role[i] ? "d" : "p", p->ngroups - 1);
		hx_strlcpy(g->name, name, sizeof(g->name));
		hx_strlcpy(g->model, d->pb->model->name, sizeof(g->model));
		g->role = role[i] ? HX_ROLE_DECODE : HX_ROLE_PREFILL;
		g->wdt = d->pb->model->a.dtype;
		g->kvdt = HX_DT_FP16;
		hx_plan_group_stages(g, 1);
		hx_strlcpy(g->stage[0].gpu, c->nodes[i].gpu.name, sizeof(g->stage[0].gpu));
		g->stage[0].tp = d->nr[i].tp[role[i]];
		g->stage[0].first = 0;
		g->stage[0].last = d->pb->model->a.layers;
		for (int k = 0; k < x.nrep[i]; k++) {
			hx_plan_replica *r = hx_plan_add_replica(g);
			int tp = g->stage[0].tp;
			snprintf(name, sizeof(name), "%sr%d", g->name, k);
			hx_strlcpy(r->id, name, sizeof(r->id));
			r->ngpus[0] = tp;
			r->gpus[0] = hx_xcalloc((size_t)tp, sizeof(hx_gpu_ref));
			for (int t = 0; t < tp; t++) {
				hx_strlcpy(r->gpus[0][t].node, c->nodes[i].name,
					   sizeof(r->gpus[0][t].node));
				r->gpus[0][t].index = k * tp + t;
			}
		}
	}
	/* Ingress: each prefill group's share of the flow. */
	for (int i = 0; i < n; i++) {
		double f = 0;
		hx_route *rt;
		if (group_of[i] < 0 || role[i] != 0)
			continue;
		for (int k = 0; k < x.nrep[i]; k++)
			f += fmax(0, res.flow[x.rep_edge[x.rep0[i] + k]]);
		rt = hx_plan_add_route(&p->ingress, &p->ningress);
		hx_strlcpy(rt->to, p->groups[group_of[i]].name, sizeof(rt->to));
		rt->weight = res.value > 0 ? f / res.value : 0;
	}
	hx_routes_normalize(p->ingress, p->ningress);
	/* KV: from each prefill replica of node a to each decode replica of
	 * node b, in proportion to the flow on link (a, b) and to the decode
	 * replicas' shares of what reaches b. */
	pair_flow = hx_xcalloc((size_t)n * n, sizeof(double));
	{
		/* the link edge of a pair is the one edge lv -> lv + 1 */
		int *link_edge = hx_xmalloc((size_t)x.g.n * sizeof(int) + 1);
		for (int e = 0; e < x.g.m; e++)
			if (x.g.to[e] == x.g.from[e] + 1)
				link_edge[x.g.from[e]] = e;
		for (int a = 0; a < n; a++)
			for (int b = 0; b < n; b++) {
				int lv = x.pair[a * n + b];
				/* The solver's flows carry rounding: a flow a hair
				 * below 0 is none (a negative weight breaks the plan). */
				if (lv >= 0)
					pair_flow[a * n + b] = fmax(0, res.flow[link_edge[lv]]);
			}
		free(link_edge);
	}
	for (int a = 0; a < n; a++) {
		double out = 0;
		if (group_of[a] < 0 || role[a] != 0)
			continue;
		for (int b = 0; b < n; b++)
			out += pair_flow[a * n + b];
		for (int k = 0; k < x.nrep[a]; k++) {
			const hx_plan_replica *from = &p->groups[group_of[a]].replicas[k];
			int first = p->nkv;
			for (int b = 0; b < n; b++) {
				if (group_of[b] < 0 || role[b] != 1)
					continue;
				for (int j = 0; j < x.nrep[b]; j++) {
					double share =
					    out > 0 ? pair_flow[a * n + b] / out : 1.0;
					/* A node's decode replicas are alike: spread over
					 * all of them (the flow's own split among equal
					 * edges is arbitrary, often all on one). */
					double dj = 1.0 / x.nrep[b];
					hx_route *rt;
					if (share * dj <= 0 && out > 0)
						continue;
					rt = hx_plan_add_route(&p->kv, &p->nkv);
					hx_strlcpy(rt->from, from->id, sizeof(rt->from));
					hx_strlcpy(rt->to,
						   p->groups[group_of[b]].replicas[j].id,
						   sizeof(rt->to));
					rt->weight = share * dj;
					hx_route_set_link(rt, c, a, b);
				}
			}
			hx_routes_normalize(p->kv + first, p->nkv - first);
		}
	}
	free(pair_flow);
	free(group_of);
	hx_flow_result_release(&res);
	net_release(&x);
	return 0;
}

/* Replica ids sorted, to find a KV route's ends. */
typedef struct idref {
	const char *id;
	int flat; /* index over all groups' replicas in plan order */
} idref;

static int cmp_idref(const void *a, const void *b)
{
	return strcmp(((const idref *)a)->id, ((const idref *)b)->id);
}

static int find_id(const idref *ids, int n, const char *id)
{
	idref key = {id, 0}, *hit = bsearch(&key, ids, (size_t)n, sizeof(idref), cmp_idref);
	return hit ? hit->flat : -1;
}

/* The worst TTFT and TPOT (ms) of P's replicas at request rate LAMBDA,
 * replica by replica: a prefill replica gets its group's ingress share, a
 * decode replica what the KV routes bring it. */
static void operating_point(const hx_problem *pb, hx_plan *p, double lambda, double *ttft,
			    double *tpot)
{
	int R = 0, f = 0;
	double *rate;
	idref *ids;
	for (int gi = 0; gi < p->ngroups; gi++)
		R += p->groups[gi].nreplicas;
	rate = hx_xcalloc((size_t)R + 1, sizeof(double));
	ids = hx_xcalloc((size_t)R + 1, sizeof(idref));
	for (int gi = 0; gi < p->ngroups; gi++) {
		hx_plan_group *gp = &p->groups[gi];
		double share = 0;
		if (gp->role == HX_ROLE_PREFILL)
			for (int i = 0; i < p->ningress; i++)
				if (strcmp(p->ingress[i].to, gp->name) == 0)
					share += p->ingress[i].weight;
		for (int r = 0; r < gp->nreplicas; r++, f++) {
			ids[f] = (idref){gp->replicas[r].id, f};
			rate[f] = lambda * share / gp->nreplicas;
		}
	}
	qsort(ids, (size_t)R, sizeof(idref), cmp_idref);
	{
		/* decode replicas get what the KV routes bring them */
		double *in = hx_xcalloc((size_t)R + 1, sizeof(double));
		for (int k = 0; k < p->nkv; k++) {
			int a = find_id(ids, R, p->kv[k].from),
			    b = find_id(ids, R, p->kv[k].to);
			if (a >= 0 && b >= 0)
				in[b] += rate[a] * p->kv[k].weight;
		}
		f = 0;
		for (int gi = 0; gi < p->ngroups; gi++)
			for (int r = 0; r < p->groups[gi].nreplicas; r++, f++)
				if (p->groups[gi].role != HX_ROLE_PREFILL)
					rate[f] = in[f];
		free(in);
	}
	f = 0;
	for (int gi = 0; gi < p->ngroups; gi++) {
		hx_plan_group *gp = &p->groups[gi];
		for (int r = 0; r < gp->nreplicas; r++, f++) {
			hx_replica rep;
			hx_capacity cap;
			if (rate[f] <= 0)
				continue;
			hx_plan_replica_cost(p, gp, &gp->replicas[r], &rep, NULL);
			hx_cost_at_rate_phase(&rep, pb->workload,
					      gp->role == HX_ROLE_PREFILL ? HX_SERVE_PREFILL
									  : HX_SERVE_DECODE,
					      fmin(rate[f], gp->capacity_rps), &cap);
			if (gp->role == HX_ROLE_PREFILL && isfinite(cap.ttft_ms))
				*ttft = fmax(*ttft, cap.ttft_ms);
			if (gp->role == HX_ROLE_DECODE && isfinite(cap.tpot_ms))
				*tpot = fmax(*tpot, cap.tpot_ms);
		}
	}
	free(rate);
	free(ids);
}

/* The plan of role assignment ROLE into P, with its predictions at the
 * workload's rate. */
static int build_plan(dctx *d, const int *role, int cut, long iterations, hx_plan *p,
		      hx_err *err)
{
	const hx_problem *pb = d->pb;
	double value = 0, P = hx_dist_mean(&pb->workload->prompt);
	int rc;

	hx_plan_init(p);
	strcpy(p->mode, "disagg");
	if ((rc = emit(d, role, p, &value, err)) || (rc = hx_plan_finish(pb, p, 0, err))) {
		hx_plan_release(p);
		return rc;
	}
	{
		double bound = split_bound(d), lambda = fmin(pb->workload->rate_rps, value),
		       ttft = 0, tpot = 0;
		double O = hx_dist_mean(&pb->workload->output);
		/* The operating point at the workload's rate */
		operating_point(pb, p, lambda, &ttft, &tpot);
		/* Prefill groups as the flow saw them (TTFT less the transfer);
		 * the user's TTFT adds the percentile prompt's transfer. */
		for (int gi = 0; gi < p->ngroups; gi++) {
			hx_plan_group *gp = &p->groups[gi];
			hx_replica rep;
			hx_capacity cap;
			if (gp->role != HX_ROLE_PREFILL)
				continue;
			hx_plan_replica_cost(p, gp, &gp->replicas[0], &rep, NULL);
			hx_cost_capacity_phase(&rep, &d->wp, HX_SERVE_PREFILL, &cap);
			gp->capacity_rps = hx_round6(cap.rps);
		}
		if (ttft > 0)
			ttft += pb->workload->slo.ttft_ms - d->wp.slo.ttft_ms;
		p->predicted.capacity_rps = hx_round6(value);
		p->predicted.throughput_tps = hx_round6(lambda * O);
		p->predicted.ttft_ms_p99 = hx_round6(ttft);
		p->predicted.tpot_ms_p99 = hx_round6(tpot);
		p->predicted.usd_per_m_tokens =
		    hx_round6(hx_usd_per_mtok(p->predicted.usd_per_hour, lambda, P + O));
		hx_plan_solver_search(p, "igraph", cut ? "time_limit" : "heuristic", value,
				      bound, d->flows, iterations);
	}
	return 0;
}

/* The simulator's check (DESIGN §8): the best few role assignments TK,
 * built and simulated whole with the search of simulate --capacity while
 * the time limit allows; P gets the one whose simulated capacity is
 * highest, with that figure recorded.  When the limit leaves no room to
 * simulate even the first (the best by flow), P is that one, unrecorded. */
static int sim_check(dctx *d, const topk *tk, int cut, long iterations, double deadline,
		     hx_plan *p, hx_err *err)
{
	double best = -1;
	int rc;

	for (int i = 0; i < tk->n; i++) {
		hx_plan q;
		double rps = 0;
		if (i > 0 && hx_past(deadline))
			break;
		if ((rc = build_plan(d, tk->role[i], cut, iterations, &q, err)))
			return rc;
		rc = hx_plan_sim_capacity(d->pb, &q, deadline, &rps, err);
		if (rc == HX_ELIMIT && i == 0) {
			*p = q; /* out of time: the best by flow, unchecked */
			return 0;
		}
		if (rc) {
			hx_plan_release(&q);
			if (rc == HX_ELIMIT)
				break;
			return rc;
		}
		if (rps > best) {
			hx_plan_release(p);
			*p = q;
			best = rps;
		} else {
			hx_plan_release(&q);
		}
	}
	hx_plan_set_simulated(p, d->pb, "plan", hx_round6(best), HX_CAP_REQUESTS);
	return 0;
}

int hx_plan_disagg(const hx_problem *pb, const hx_plan_opts *o, hx_plan *p, hx_err *err)
{
	const hx_cluster *c = pb->cluster;
	dctx d;
	int n = c->nnodes, *best = NULL, *role = NULL, *grp = NULL, rc = 0, kmax;
	double best_v = -1, P = hx_dist_mean(&pb->workload->prompt);
	double Pq = hx_dist_quantile(&pb->workload->prompt, pb->workload->slo.percentile / 100);
	long iterations = 0;
	hx_graph g;
	const double deadline = hx_deadline(o->time_limit_s);
	int cut = 0; /* the time limit stopped the search */
	topk tk = {0};

	hx_plan_init(p);
	strcpy(p->mode, "disagg");
	if (n < 2)
		return hx_errf(err, HX_EINFEASIBLE,
			       "disaggregation needs at least two nodes (this cluster has %d)",
			       n);
	memset(&d, 0, sizeof(d));
	d.pb = pb;
	d.n = n;
	d.nr = hx_xcalloc((size_t)n, sizeof(node_role));
	tk.nnodes = n;
	d.kv_req_bytes = hx_kv_bytes_per_token(pb->model, HX_DT_FP16) * P;
	/* Prefill replicas must leave room in the TTFT SLO for sending the
	 * percentile prompt's KV over a typical link of the cluster. */
	d.wp = *pb->workload;
	d.wp.slo.ttft_ms -=
	    1e3 * hx_cost_kv_transfer(pb->model, HX_DT_FP16, Pq, c->same_region.bw_gbps,
				      c->same_region.latency_ms);
	if (d.wp.slo.ttft_ms <= 0)
		d.wp.slo.ttft_ms = 1e-3;
	price_nodes(&d);
	/* (1) the node graph, links weighted by bandwidth; node weight memory */
	hx_graph_init(&g, n);
	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++)
			hx_graph_add_edge(&g, a, b, hx_cluster_link(c, a, b).bw_gbps);
	best = hx_xcalloc((size_t)n, sizeof(int));
	role = hx_xcalloc((size_t)n, sizeof(int));
	grp = hx_xcalloc((size_t)n, sizeof(int));
	kmax = n < 8 ? n : 8;
	{
		double *mem = hx_xcalloc((size_t)n, sizeof(double));
		for (int i = 0; i < n; i++)
			mem[i] = c->nodes[i].count * c->nodes[i].gpu.mem_gib;
		for (int k = 2; k <= kmax && !cut; k++) {
			if (best_v > 0 && hx_past(deadline)) {
				cut = 1;
				break;
			}
			if ((rc = hx_partition(&g, mem, k, pb->seed, grp, err)))
				break;
			/* (2) every role assignment of the k groups */
			for (int mask = 1; mask < (1 << k) - 1; mask++) {
				double v;
				if (best_v > 0 && hx_past(deadline)) {
					cut = 1;
					break;
				}
				for (int i = 0; i < n; i++) {
					int r = (mask >> grp[i]) & 1;
					role[i] = d.nr[i].tp[r] ? r : -1;
				}
				v = score(&d, role, err);
				topk_add(&tk, role, v);
				if (v > best_v + 1e-9) {
					best_v = v;
					memcpy(best, role, (size_t)n * sizeof(int));
				}
			}
		}
		free(mem);
	}
	hx_graph_release(&g);
	if (rc)
		goto out;
	/* (4) refine: flip single nodes while the flow grows */
	for (int pass = 0; pass < 4 * n && best_v > 0 && !cut; pass++) {
		int improved = 0;
		for (int i = 0; i < n; i++) {
			double v;
			if (hx_past(deadline)) {
				cut = 1;
				break;
			}
			memcpy(role, best, (size_t)n * sizeof(int));
			role[i] = best[i] == 0 ? 1 : best[i] == 1 ? 0 : (d.nr[i].tp[0] ? 0 : 1);
			if (!d.nr[i].tp[role[i]])
				continue;
			v = score(&d, role, err);
			topk_add(&tk, role, v);
			iterations++;
			if (v > best_v * (1 + 1e-9)) {
				best_v = v;
				memcpy(best, role, (size_t)n * sizeof(int));
				improved = 1;
			}
		}
		if (!improved)
			break;
	}
	if (best_v <= 0) {
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "no split of the nodes into prefill and decode carries any traffic at the SLO: %s needs a node that holds it for each role",
		    pb->model->name);
		goto out;
	}
	if (o->no_sim_check || tk.n == 0)
		rc = build_plan(&d, best, cut, iterations, p, err);
	else
		rc = sim_check(&d, &tk, cut, iterations, deadline, p, err);
out:
	for (int i = 0; i < tk.n; i++)
		free(tk.role[i]);
	free(best);
	free(role);
	free(grp);
	free(d.nr);
	if (rc)
		hx_plan_release(p);
	return rc;
}
