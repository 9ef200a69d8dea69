/*
 * plan_disagg: disaggregated prefill/decode (DESIGN §6; HexGen-2's three
 * phases).  (1) Partition the node graph, links weighted by bandwidth, into
 * k groups of high internal bandwidth (solver/partition, k = 2..8; above
 * 256 nodes a graph of classes of like nodes stands for it).  (2) Give
 * each group a role; every node of a role runs replicas of the shape that
 * gives it the most capacity for that phase (cost model, one node per
 * replica): a TP, or for a mixture of experts also an expert-parallel
 * shape with data-parallel attention, its EP size chosen per role.  (3) Score a role assignment
 * by a max-flow in requests/s: source -> prefill replicas (their prefill capacity at the TTFT
 * SLO, less the KV transfer) -> the prefill node's NIC -> the link between the two nodes -> the
 * decode node's NIC -> decode replicas (their capacity at the TPOT SLO) -> sink, each NIC and
 * link a capacity shared by every pair that crosses it (bandwidth / KV bytes of a mean prompt);
 * above DISAGG_FULL_PAIRS pairs each prefill node is joined to its linked decode nodes and a
 * few spread over the rest, not to all, so that a flow stays near-linear in the nodes.
 * The edge flows give the ingress and KV routing weights (a node's decode replicas share what
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
#include "planners/candidates.h"
#include "planners/disagg.h"

typedef struct node_role {
	int tp[2];        /* best TP for prefill (0) and decode (1); 0: cannot */
	int ep[2], dp[2]; /* its expert parallelism and attention ranks (an EP
			   * shape of a MoE model, ep = tp); 0: none */
	double cap[2];    /* per replica, requests/s */
	int reps[2];      /* replicas on the node */
	double total[2];  /* the node's capacity in each role */
	/* An EP shape over SPAN alike nodes (same GPUs, count, NIC and region;
	 * 1 or 0: one node): the node holds its share, one replica vertex of
	 * cap = the replica's capacity / span (its attention ranks there);
	 * the all-to-all crosses NIC. */
	int span[2];
	hx_linkspec nic;
} node_role;

/* The cluster's links by node, so that one node's links to all others
 * cost O(nodes + its links), not a lookup per pair: at the node limit a
 * pair's lookup (hx_cluster_link, a key printed and hashed) over all pairs
 * took seconds, once for the partition graph and again per flow. */
typedef struct linktab {
	int *region; /* per node: its region as a number */
	int *start;  /* n + 1: node a's explicit links at link[start[a] .. start[a + 1]) */
	int *link;   /* indexes into the cluster's links, the last one first */
} linktab;

typedef struct dctx {
	const hx_problem *pb;
	int *kind;      /* per node: the first node alike (EP sets group by it) */
	int multi;      /* some node's shape spans nodes */
	hx_workload wp; /* the workload with the TTFT SLO less the transfer reserve */
	node_role *nr;
	int n;
	double kv_req_bytes; /* KV bytes of a mean prompt */
	double q_tokens;     /* the SLO-percentile prompt's tokens */
	double reserve_s;    /* the part of the TTFT SLO left for the KV transfer */
	double bound;        /* the best split_bound over the reserves tried */
	double deadline;     /* the plan's time limit (0: none) */
	long flows;          /* max-flows solved */
	linktab lt;
	double score_s; /* the longest a score has taken (s) */
	double big_s;   /* the time of the score with the most node pairs, */
	long big_pairs; /* and those pairs: what the next may take, in
			 * proportion to its pairs when it has more */
} dctx;

static void linktab_init(linktab *t, const hx_cluster *c)
{
	hx_map regions = {0};
	int n = c->nnodes, nreg = 0, *fill;

	t->region = hx_xmalloc((size_t)n * sizeof(int) + 1);
	for (int i = 0; i < n; i++) {
		int r = hx_map_put(&regions, c->nodes[i].region, nreg);
		t->region[i] = r >= 0 ? r : nreg++;
	}
	hx_map_release(&regions);
	t->start = hx_xcalloc((size_t)n + 1, sizeof(int));
	for (int l = 0; l < c->nlinks; l++) {
		t->start[c->links[l].a + 1]++;
		if (c->links[l].b != c->links[l].a)
			t->start[c->links[l].b + 1]++;
	}
	for (int i = 0; i < n; i++)
		t->start[i + 1] += t->start[i];
	fill = hx_xmalloc((size_t)n * sizeof(int) + 1);
	memcpy(fill, t->start, (size_t)n * sizeof(int));
	t->link = hx_xmalloc((size_t)t->start[n] * sizeof(int) + 1);
	/* The last first: linktab_row applies them in order, so that the
	 * first link of a pair wins, as in hx_cluster_link. */
	for (int l = c->nlinks - 1; l >= 0; l--) {
		t->link[fill[c->links[l].a]++] = l;
		if (c->links[l].b != c->links[l].a)
			t->link[fill[c->links[l].b]++] = l;
	}
	free(fill);
}

static void linktab_release(linktab *t)
{
	free(t->region);
	free(t->start);
	free(t->link);
}

/* BW[b]: the bandwidth (Gb/s) of hx_cluster_link(C, A, b) for every node
 * b of C. */
static void linktab_row(const linktab *t, const hx_cluster *c, int a, double *bw)
{
	for (int b = 0; b < c->nnodes; b++)
		bw[b] = t->region[b] == t->region[a] ? c->same_region.bw_gbps
						     : c->cross_region.bw_gbps;
	for (int k = t->start[a]; k < t->start[a + 1]; k++) {
		const hx_link *l = &c->links[t->link[k]];
		bw[l->a == a ? l->b : l->a] = l->spec.bw_gbps;
	}
}

/* Node A's explicit links: for each node b it has one to, MARK[b] = A
 * and SPEC[b] its bandwidth and latency, the first link of a pair winning
 * as in hx_cluster_link; O(A's links), where linktab_row is O(nodes). */
static void linktab_mark(const linktab *t, const hx_cluster *c, int a, hx_linkspec *spec,
			 int *mark)
{
	for (int k = t->start[a]; k < t->start[a + 1]; k++) {
		const hx_link *l = &c->links[t->link[k]];
		int b = l->a == a ? l->b : l->a;
		mark[b] = a;
		spec[b] = l->spec;
	}
}

/* The best few role assignments the search scored (distinct, by flow
 * value, best first), each with its flow: the simulator judges them at the
 * end. */
#define DISAGG_SIM_TOP 3
typedef struct kvflow kvflow;
static void kvflow_free(kvflow *k);
typedef struct topk {
	int n, nnodes;
	double v[DISAGG_SIM_TOP];
	int *role[DISAGG_SIM_TOP];
	kvflow *flow[DISAGG_SIM_TOP];
} topk;

/* Keep ROLE, of flow value V, if among the best; takes K (its flow). */
static void topk_add(topk *t, const int *role, double v, kvflow *k)
{
	int at;
	if (!(v > 0) || !k) {
		kvflow_free(k);
		return;
	}
	for (int i = 0; i < t->n; i++)
		if (!memcmp(t->role[i], role, (size_t)t->nnodes * sizeof(int))) {
			kvflow_free(k);
			return;
		}
	if (t->n == DISAGG_SIM_TOP && v <= t->v[t->n - 1]) {
		kvflow_free(k);
		return;
	}
	if (t->n < DISAGG_SIM_TOP) {
		t->role[t->n] = hx_xmalloc((size_t)t->nnodes * sizeof(int));
		t->flow[t->n++] = NULL;
	}
	{
		int *spare = t->role[t->n - 1];
		kvflow_free(t->flow[t->n - 1]);
		for (at = t->n - 1; at > 0 && t->v[at - 1] < v; at--) {
			t->v[at] = t->v[at - 1];
			t->role[at] = t->role[at - 1];
			t->flow[at] = t->flow[at - 1];
		}
		t->v[at] = v;
		t->role[at] = spare;
		t->flow[at] = k;
		memcpy(spare, role, (size_t)t->nnodes * sizeof(int));
	}
}

/* ROLE's flow in T, or NULL. */
static const kvflow *topk_flow(const topk *t, const int *role)
{
	for (int i = 0; i < t->n; i++)
		if (!memcmp(t->role[i], role, (size_t)t->nnodes * sizeof(int)))
			return t->flow[i];
	return NULL;
}

static void topk_release(topk *t)
{
	for (int i = 0; i < t->n; i++) {
		free(t->role[i]);
		kvflow_free(t->flow[i]);
	}
}

/* The one-node replica of TP GPUs of type G, expert parallel over them
 * (EP = TP) with DP attention ranks when EP > 1, as the plan's stage is
 * priced (hx_plan_replica_cost: one node, so no NIC). */
static hx_replica one_node_replica(const hx_problem *pb, const hx_gpu *g, int tp, int ep,
				   int dp)
{
	hx_replica r;
	hx_replica_uniform(&r, pb->model, g, ep > 1 ? 1 : tp, 1, pb->model->a.dtype, HX_DT_FP16,
			   100, 0, NULL);
	if (ep > 1) {
		r.stage[0].tp = tp;
		r.stage[0].ep = ep;
		r.stage[0].dp = dp > 1 ? dp : 0;
		r.stage[0].micro_batches = 2;
	}
	return r;
}

/* Price node I's shape (TP, EP, DP) for PHASE into NR when its node total
 * is higher than the best so far.  An EP shape's longest request is one
 * attention rank's: each rank must hold it. */
static void price_shape(const dctx *d, int i, int phase, int tp, int ep, int dp, node_role *nr)
{
	const hx_node *nd = &d->pb->cluster->nodes[i];
	const hx_workload *w = phase ? d->pb->workload : &d->wp;
	hx_replica r = one_node_replica(d->pb, &nd->gpu, tp, ep, dp);
	int span = tp > nd->count ? tp / nd->count : 1;
	hx_capacity cap;
	double tot;

	if (span > 1) { /* as the plan's tp_link prices it */
		r.stage[0].gpus_per_node = nd->count;
		r.stage[0].nic_gbps = nr->nic.bw_gbps;
		r.stage[0].nic_latency_us = nr->nic.latency_ms * 1e3;
	}
	if (ep > 1) {
		hx_memory m;
		double q = w->slo.percentile / 100;
		if (hx_replica_check(&r, NULL))
			return;
		hx_cost_memory(&r, w->serving.mem_util, &m);
		if (!m.fits || m.kv_tokens / hx_stage_dp(&r.stage[0]) <
				   hx_dist_quantile(&w->prompt, q) +
				       (phase ? hx_dist_quantile(&w->output, q) : 0))
			return;
	}
	hx_cost_capacity_phase(&r, w, phase ? HX_SERVE_DECODE : HX_SERVE_PREFILL, &cap);
	tot = span > 1 ? cap.rps / span : cap.rps * (nd->count / tp);
	if (cap.rps > 0 && tot > nr->total[phase]) {
		nr->tp[phase] = tp;
		nr->ep[phase] = ep;
		nr->dp[phase] = dp > 1 ? dp : 0;
		nr->cap[phase] = span > 1 ? tot : cap.rps;
		nr->reps[phase] = span > 1 ? 1 : nd->count / tp;
		nr->total[phase] = tot;
		nr->span[phase] = span;
	}
}

/* Node I's EP shapes over 2, 4, ... nodes alike (at most ALIKE) for
 * PHASE into NR: ep = tp = every GPU dividing the experts,
 * attention TP dividing the node and the heads, while the wider shapes
 * raise the node's best.  0 when DEADLINE passed. */
static int price_multi(const dctx *d, int i, int phase, int alike, double deadline,
		       node_role *nr)
{
	const hx_arch *a = &d->pb->model->a;
	int gpn = d->pb->cluster->nodes[i].count;

	if (gpn & (gpn - 1))
		return 1;
	for (int n = 2; n <= alike && n <= HX_CAND_EP_MAX_NODES; n *= 2) {
		double before = nr->total[phase];
		if (a->experts % (n * gpn))
			break;
		for (int atp = 1; atp <= gpn; atp *= 2) {
			if (hx_past(deadline))
				return 0;
			if (a->heads % atp == 0)
				price_shape(d, i, phase, n * gpn, n * gpn, n * gpn / atp, nr);
		}
		if (!(nr->total[phase] > before))
			break;
	}
	return 1;
}

/* Whether nodes A and B are alike: the same GPU profile, count, NIC and
 * region (one-node shapes price the same; EP sets span alike nodes). */
static int alike(const hx_cluster *c, int a, int b)
{
	return c->nodes[a].count == c->nodes[b].count &&
	       c->nodes[a].nic_gbps == c->nodes[b].nic_gbps &&
	       strcmp(c->nodes[a].region, c->nodes[b].region) == 0 &&
	       hx_gpu_same(&c->nodes[a].gpu, &c->nodes[b].gpu);
}

/* Each node's best shape for each role: a TP dividing its GPUs and the
 * heads; for a MoE model also the EP shapes of a node (ep = tp dividing
 * its GPUs and the experts, dp attention ranks dividing tp with the
 * attention TP tp / dp dividing the heads) and over 2, 4, ... nodes alike,
 * up to half of them (price_multi), which win only by more capacity, so that the roles' EP
 * sizes are chosen apart.  PHASES: 2 both roles, 1 the prefill role
 * alone (anew, as when the transfer reserve changes).  EP shapes are not
 * priced past DEADLINE (0: none): 1 when some were left out. */
static int price_nodes(dctx *d, int phases, double deadline)
{
	int cut = 0, *nalike = hx_xcalloc((size_t)d->n + 1, sizeof(int));

	const hx_cluster *c = d->pb->cluster;
	const hx_arch *a = &d->pb->model->a;

	/* A node alike an earlier one prices the same (one-node replicas do
	 * not see links, EP sets are of alike nodes): the earlier ones are
	 * found by GPU name, count, NIC and region (a map), then compared
	 * whole, the first alike winning as a scan of all earlier nodes would
	 * find it. */
	hx_map kinds = {0};
	int *next = hx_xmalloc((size_t)d->n * sizeof(int) + 1);

	if (!d->kind)
		d->kind = hx_xcalloc((size_t)d->n + 1, sizeof(int));
	for (int i = 0; i < d->n; i++) {
		int j = -1, head, last;
		char key[160];
		snprintf(key, sizeof(key), "%d/%g/%s/%s", c->nodes[i].count,
			 c->nodes[i].nic_gbps, c->nodes[i].region, c->nodes[i].gpu.name);
		next[i] = -1;
		if ((head = hx_map_put(&kinds, key, i)) >= 0) {
			for (j = last = head; j >= 0; last = j, j = next[j])
				if (alike(c, j, i))
					break;
			if (j < 0)
				next[last] = i; /* a profile of its own under this key */
		}
		d->kind[i] = j >= 0 ? j : i;
		nalike[d->kind[i]]++;
	}
	hx_map_release(&kinds);
	free(next);
	for (int i = 0; i < d->n; i++) {
		node_role *nr = &d->nr[i];
		int count = c->nodes[i].count;
		if (d->kind[i] < i) {
			*nr = d->nr[d->kind[i]];
			continue;
		}
		if (nalike[i] > 1) {
			int b = i + 1;
			while (d->kind[b] != i)
				b++;
			nr->nic = hx_cluster_nic_link(c, i, b);
		}
		for (int phase = 0; phase < phases; phase++) {
			nr->tp[phase] = nr->ep[phase] = nr->dp[phase] = 0;
			nr->reps[phase] = nr->span[phase] = 0;
			nr->cap[phase] = nr->total[phase] = 0;
			for (int tp = 1; tp <= count; tp++)
				if (count % tp == 0 && a->heads % tp == 0)
					price_shape(d, i, phase, tp, 0, 0, nr);
			for (int tp = 2; a->experts > 1 && tp <= count && !cut; tp++) {
				if (count % tp || a->experts % tp)
					continue;
				if (hx_past(deadline)) {
					cut = 1;
					break;
				}
				for (int dp = 1; dp <= tp; dp++)
					if (tp % dp == 0 && a->heads % (tp / dp) == 0)
						price_shape(d, i, phase, tp, tp, dp, nr);
			}
			/* A set of at most half the alike nodes leaves the
			 * other role as many (a wider one could hold no role
			 * beside it on a cluster of one kind). */
			if (a->experts > 1 && !cut && nalike[i] > 3)
				cut = !price_multi(d, i, phase, nalike[i] / 2, deadline, nr);
			d->multi |= nr->span[phase] > 1;
		}
	}
	free(nalike);
	return cut;
}

/* The KV transfers (requests/s) a link or NIC of GBPS and LATENCY_MS
 * carries within the transfer reserve (hx_kv_link_rps). */
static double kv_rps(const dctx *d, double gbps, double latency_ms)
{
	return hx_kv_link_rps(d->pb->model, d->q_tokens, d->kv_req_bytes, d->reserve_s, gbps,
			      latency_ms);
}

/* The mean time (s) of the percentile prompt's KV over a link of GBPS and
 * LATENCY_MS that carries RPS of KV transfers (hx_kv_link_time_s). */
static double kv_time_s(const dctx *d, double gbps, double latency_ms, double rps)
{
	return hx_kv_link_time_s(d->pb->model, d->q_tokens, d->kv_req_bytes, gbps, latency_ms,
				 rps);
}

/* Above this many (prefill, decode) node pairs the flow network does not
 * join every pair: a flow over all of them (~2,000 x 2,000 pairs, 12M
 * edges at the node limit) took ~10 s, more than a short time limit.
 * Each prefill node then reaches the decode nodes it has an explicit link
 * to and DISAGG_PARTNERS more spread evenly over the decode nodes (each
 * decode node reached by about as many), enough to fill its NIC over
 * default links; the network is near-linear in the nodes and links.  Up
 * to this many pairs (a cluster of up to 256 nodes) it is complete. */
#define DISAGG_FULL_PAIRS (128L * 128)
#define DISAGG_PARTNERS   8

/* The flow network of a role assignment (ROLE[i]: 0 prefill, 1 decode, -1
 * unused).  Vertex layout: 0 source, 1 sink, then per node: replica block
 * start (REP0), egress in/out, ingress in/out; then per (prefill, decode)
 * node pair of the network, by prefill node and then decode node in
 * order, a link in/out.  The pairs are listed, not held in an n-by-n
 * table (64 MiB at the node limit). */
typedef struct net {
	hx_graph g;
	int *rep0, *nrep, *eg_in, *eg_out, *in_in, *in_out;
	int *dec; /* the decode nodes, in order; nd of them */
	int nd;
	int *pstart;   /* n + 1: node a's pairs are pstart[a] .. pstart[a + 1] */
	int *pto;      /* per pair: its decode node */
	int link_e0;   /* pair q's link edge is link_e0 + 3 * q + 1 */
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
	free(x->dec);
	free(x->pstart);
	free(x->pto);
	free(x->rep_edge);
}

/* Add the NIC and replica edges of every node of X (vertices numbered). */
static void build_nodes(const dctx *d, const int *role, double inf, net *x)
{
	const hx_cluster *c = d->pb->cluster;

	for (int i = 0; i < d->n; i++) {
		double nic = kv_rps(d, c->nodes[i].nic_gbps, 0);
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
}

/* SET[i]: the first node of the replica node I holds a share of under
 * ROLE (I itself for a one-node shape), or -1 when I has a role whose
 * shape spans nodes but too few alike nodes of that role are left to fill
 * a set: alike nodes of a role, in order, make sets of the shape's span. */
static void ep_sets(const dctx *d, const int *role, int *set)
{
	int n = d->n, *open, *fill;

	for (int i = 0; i < n; i++)
		set[i] = i;
	if (!d->multi)
		return;
	open = hx_xmalloc(2 * (size_t)n * sizeof(int));
	fill = hx_xcalloc((size_t)n, sizeof(int));
	for (int i = 0; i < 2 * n; i++)
		open[i] = -1;
	for (int i = 0; i < n; i++) {
		int r = role[i], *o, span;
		if (r < 0 || (span = d->nr[i].span[r]) <= 1)
			continue;
		o = &open[2 * d->kind[i] + r];
		if (*o < 0 || fill[*o] == span)
			*o = i;
		set[i] = *o;
		fill[*o]++;
	}
	for (int i = 0; i < n; i++)
		if (role[i] >= 0 && d->nr[i].span[role[i]] > 1 &&
		    fill[set[i]] < d->nr[i].span[role[i]])
			set[i] = -1;
	free(open);
	free(fill);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* The decode nodes (by their place in X->dec) prefill node A, the PA-th of
 * NP, reaches in a network that does not join every pair: those it has an
 * explicit link to, and DISAGG_PARTNERS spread over X->dec from a start
 * that moves with PA, into TO (sorted, each once); returns how many.
 * DBOF: per node, its place in X->dec or -1. */
static int partners(const dctx *d, const net *x, const int *dbof, int a, int pa, int np,
		    int *to)
{
	const hx_cluster *c = d->pb->cluster;
	const linktab *t = &d->lt;
	int m = 0, nd = x->nd, step = nd / DISAGG_PARTNERS > 0 ? nd / DISAGG_PARTNERS : 1;
	int first = (int)((long)pa * nd / np);

	for (int j = 0; j < DISAGG_PARTNERS && j < nd; j++)
		to[m++] = (first + j * step) % nd;
	for (int k = t->start[a]; k < t->start[a + 1]; k++) {
		const hx_link *l = &c->links[t->link[k]];
		int b = l->a == a ? l->b : l->a;
		if (dbof[b] >= 0)
			to[m++] = dbof[b];
	}
	qsort(to, (size_t)m, sizeof(int), cmp_int);
	{
		int u = 0;
		for (int i = 0; i < m; i++)
			if (u == 0 || to[i] != to[u - 1])
				to[u++] = to[i];
		m = u;
	}
	return m;
}

/* X->pstart and X->pto of ROLE: every (prefill, decode) pair up to
 * DISAGG_FULL_PAIRS pairs, else each prefill node's partners. */
static void pairs(const dctx *d, const int *role, int np, net *x)
{
	const linktab *t = &d->lt;
	int n = d->n, q = 0, pa = 0, cap, *dbof = NULL, *to = NULL;
	int full = (long)np * x->nd <= DISAGG_FULL_PAIRS;

	cap = full ? np * x->nd : np * DISAGG_PARTNERS + 2 * d->pb->cluster->nlinks;
	x->pstart = hx_xcalloc((size_t)n + 1, sizeof(int));
	x->pto = hx_xmalloc((size_t)cap * sizeof(int) + 1);
	if (!full) {
		dbof = hx_xmalloc((size_t)n * sizeof(int));
		for (int i = 0; i < n; i++)
			dbof[i] = -1;
		for (int db = 0; db < x->nd; db++)
			dbof[x->dec[db]] = db;
		to = hx_xmalloc(((size_t)DISAGG_PARTNERS + (size_t)t->start[n]) * sizeof(int) +
				1);
	}
	for (int a = 0; a < n; a++) {
		x->pstart[a] = q;
		if (role[a] != 0)
			continue;
		if (full) {
			for (int db = 0; db < x->nd; db++)
				x->pto[q++] = x->dec[db];
		} else {
			int m = partners(d, x, dbof, a, pa, np, to);
			for (int i = 0; i < m; i++)
				x->pto[q++] = x->dec[to[i]];
		}
		pa++;
	}
	x->pstart[n] = q;
	free(dbof);
	free(to);
}

static void build(const dctx *d, const int *role, net *x)
{
	const hx_cluster *c = d->pb->cluster;
	int n = d->n, v = 2, np = 0, pair0, *mark;
	double inf = 1;
	hx_linkspec *spec;

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
	x->dec = hx_xcalloc((size_t)n, sizeof(int));
	ep_sets(d, role, x->dec); /* borrowed until the decode nodes are listed */
	for (int i = 0; i < n; i++)
		x->nrep[i] = role[i] < 0 || x->dec[i] < 0 ? 0 : d->nr[i].reps[role[i]];
	for (int i = 0; i < n; i++) {
		x->rep0[i] = v;
		v += x->nrep[i];
		x->eg_in[i] = v++;
		x->eg_out[i] = v++;
		x->in_in[i] = v++;
		x->in_out[i] = v++;
		np += role[i] == 0;
		if (role[i] == 1)
			x->dec[x->nd++] = i;
	}
	pairs(d, role, np, x);
	pair0 = v;
	v += 2 * x->pstart[n];
	hx_graph_init(&x->g, v);
	x->rep_edge = hx_xcalloc((size_t)v, sizeof(int));
	build_nodes(d, role, inf, x);
	x->link_e0 = x->g.m;
	spec = hx_xmalloc((size_t)n * sizeof(*spec));
	mark = hx_xmalloc((size_t)n * sizeof(int));
	for (int i = 0; i < n; i++)
		mark[i] = -1;
	for (int a = 0; a < n; a++) {
		if (role[a] != 0)
			continue;
		linktab_mark(&d->lt, c, a, spec, mark);
		for (int q = x->pstart[a]; q < x->pstart[a + 1]; q++) {
			int lv = pair0 + 2 * q, b = x->pto[q];
			hx_linkspec l = mark[b] == a                         ? spec[b]
					: d->lt.region[b] == d->lt.region[a] ? c->same_region
									     : c->cross_region;
			hx_graph_add_edge(&x->g, x->eg_out[a], lv, inf);
			hx_graph_add_edge(&x->g, lv, lv + 1,
					  kv_rps(d, l.bw_gbps, l.latency_ms));
			hx_graph_add_edge(&x->g, lv + 1, x->in_in[b], inf);
		}
	}
	free(spec);
	free(mark);
}

/* What the plan needs of a role assignment's max-flow, kept from its
 * score so that the plan is not solved a second time: the flow value, the
 * flow into each prefill node's replicas and out over its links, and the
 * positive link flows by prefill node (pairs start[a] .. start[a + 1], to
 * decode nodes in order). */
typedef struct kvflow {
	double value;
	double *in, *out; /* per node */
	int *start, *to;
	double *flow;
} kvflow;

static void kvflow_free(kvflow *k)
{
	if (!k)
		return;
	free(k->in);
	free(k->out);
	free(k->start);
	free(k->to);
	free(k->flow);
	free(k);
}

/* The kvflow of RES, the max-flow of X for ROLE: a new one (kvflow_free). */
static kvflow *kvflow_of(const dctx *d, const int *role, const net *x,
			 const hx_flow_result *res)
{
	kvflow *k = hx_xcalloc(1, sizeof(*k));
	int n = d->n, npos = 0;

	k->value = res->value;
	k->in = hx_xcalloc((size_t)n, sizeof(double));
	k->out = hx_xcalloc((size_t)n, sizeof(double));
	k->start = hx_xcalloc((size_t)n + 1, sizeof(int));
	/* The solver's flows carry rounding: a flow a hair below 0 is none
	 * (a negative weight breaks the plan). */
	for (int e = x->link_e0 + 1; e < x->g.m; e += 3)
		npos += res->flow[e] > 0;
	k->to = hx_xmalloc((size_t)npos * sizeof(int) + 1);
	k->flow = hx_xmalloc((size_t)npos * sizeof(double) + 1);
	npos = 0;
	for (int a = 0; a < n; a++) {
		k->start[a] = npos;
		if (role[a] != 0)
			continue;
		for (int r = 0; r < x->nrep[a]; r++)
			k->in[a] += fmax(0, res->flow[x->rep_edge[x->rep0[a] + r]]);
		for (int q = x->pstart[a]; q < x->pstart[a + 1]; q++) {
			double f = fmax(0, res->flow[x->link_e0 + 3 * q + 1]);
			k->out[a] += f;
			if (f > 0) {
				k->to[npos] = x->pto[q];
				k->flow[npos++] = f;
			}
		}
	}
	k->start[n] = npos;
	return k;
}

/* The longest mean time (s) of the percentile prompt's KV over the node
 * pairs K's flow uses, at the fraction SCALE of that flow: over the pair's
 * link and the two NICs (kv_time_s), the slowest of the three. */
static double kv_worst_s(const dctx *d, const kvflow *k, double scale)
{
	const hx_cluster *c = d->pb->cluster;
	double worst = 0, *in = hx_xcalloc((size_t)d->n, sizeof(double));

	for (int q = 0; q < k->start[d->n]; q++)
		in[k->to[q]] += k->flow[q];
	for (int a = 0; a < d->n; a++)
		for (int q = k->start[a]; q < k->start[a + 1]; q++) {
			int b = k->to[q];
			hx_linkspec l = hx_cluster_link(c, a, b);
			double t = kv_time_s(d, l.bw_gbps, l.latency_ms, scale * k->flow[q]);
			t = fmax(t, kv_time_s(d, c->nodes[a].nic_gbps, l.latency_ms,
					      scale * k->out[a]));
			t = fmax(
			    t, kv_time_s(d, c->nodes[b].nic_gbps, l.latency_ms, scale * in[b]));
			worst = fmax(worst, t);
		}
	free(in);
	return worst;
}

/* The max-flow value of ROLE (0 without a node for each role; -1 when the
 * solver fails, with ERR), and with KEEP its kvflow into *KEEP (a new one,
 * NULL when there is no flow). */
static double score(dctx *d, const int *role, kvflow **keep, hx_err *err)
{
	net x;
	hx_flow_result res;
	double v = -1, t0 = hx_now();
	int np = 0, nd = 0;

	if (keep)
		*keep = NULL;
	for (int i = 0; i < d->n; i++) {
		np += role[i] == 0;
		nd += role[i] == 1;
	}
	if (!np || !nd)
		return 0;
	build(d, role, &x);
	if (hx_flow_max(&x.g, 0, 1, &res, err) == 0) {
		v = res.value;
		if (keep)
			*keep = kvflow_of(d, role, &x, &res);
	}
	d->flows++;
	hx_flow_result_release(&res);
	net_release(&x);
	t0 = hx_now() - t0;
	d->score_s = fmax(d->score_s, t0);
	if ((long)np * nd >= d->big_pairs) {
		d->big_pairs = (long)np * nd;
		d->big_s = t0;
	}
	return v;
}

/* Prefill-rich nodes first (the ratio prefill / decode total, cross
 * multiplied), then by node. */
static const node_role *cmp_nr;
static int cmp_ratio(const void *x, const void *y)
{
	int i = *(const int *)x, j = *(const int *)y;
	const node_role *a = &cmp_nr[i], *b = &cmp_nr[j];
	double l = a->total[0] * (b->total[1] + 1e-12), r = b->total[0] * (a->total[1] + 1e-12);
	return l > r ? -1 : l < r ? 1 : (i > j) - (i < j);
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
	cmp_nr = d->nr;
	qsort(idx, (size_t)d->n, sizeof(int), cmp_ratio);
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

/* The group of the NN nodes NODES in ROLE into P: one per used node and
 * role (its replicas share the node), or one replica over the NN nodes of
 * an EP set, its all-to-all over the slowest NIC or link among them. */
static void emit_group(const dctx *d, const int *nodes, int nn, int role, hx_plan *p)
{
	const hx_cluster *c = d->pb->cluster;
	hx_plan_group *g = hx_plan_add_group(p);
	const node_role *nr = &d->nr[nodes[0]];
	int tp = nr->tp[role], reps = nn > 1 ? 1 : nr->reps[role];
	char name[128];

	snprintf(name, sizeof(name), "%s%d", role ? "d" : "p", p->ngroups - 1);
	hx_strlcpy(g->name, name, sizeof(g->name));
	hx_strlcpy(g->model, d->pb->model->name, sizeof(g->model));
	g->role = role ? HX_ROLE_DECODE : HX_ROLE_PREFILL;
	g->wdt = d->pb->model->a.dtype;
	g->kvdt = HX_DT_FP16;
	hx_plan_group_stages(g, 1);
	hx_strlcpy(g->stage[0].gpu, c->nodes[nodes[0]].gpu.name, sizeof(g->stage[0].gpu));
	g->stage[0].tp = tp;
	g->stage[0].ep = nr->ep[role];
	g->stage[0].dp = nr->dp[role];
	g->stage[0].cross_node = nn > 1;
	g->stage[0].first = 0;
	g->stage[0].last = d->pb->model->a.layers;
	for (int k = 0; k < reps; k++) {
		hx_plan_replica *r = hx_plan_add_replica(g);
		snprintf(name, sizeof(name), "%sr%d", g->name, k);
		hx_strlcpy(r->id, name, sizeof(r->id));
		r->ngpus[0] = tp;
		r->gpus[0] = hx_xcalloc((size_t)tp, sizeof(hx_gpu_ref));
		for (int t = 0; t < tp; t++) {
			int at = nn > 1 ? nodes[t / c->nodes[nodes[0]].count] : nodes[0];
			hx_strlcpy(r->gpus[0][t].node, c->nodes[at].name,
				   sizeof(r->gpus[0][t].node));
			r->gpus[0][t].index = nn > 1 ? t % c->nodes[at].count : k * tp + t;
		}
		if (nn > 1) {
			hx_linkspec nic = nr->nic;
			for (int j = 0; j + 1 < nn; j++) {
				hx_linkspec l = hx_cluster_link(c, nodes[j], nodes[j + 1]);
				nic.bw_gbps = fmin(nic.bw_gbps, l.bw_gbps);
				nic.latency_ms = fmax(nic.latency_ms, l.latency_ms);
			}
			r->tp_link[0] = nic;
		}
	}
}

/* A KV route from FROM to TO of WEIGHT over the link of nodes A and B,
 * into P's routes from FIRST on: added to one already there when MERGE
 * (an EP set's nodes are one replica), else new. */
/* One more KV route in P (merged into one to the same replica from FIRST
 * on when MERGE), over the link of VIA (hx_route_set_link's fields).  P's
 * list grows by doubling, *CAP its room: one realloc per route copied
 * ~100k routes time and again at the node limit. */
static void kv_route(hx_plan *p, int *cap, int first, int merge, const char *from,
		     const char *to, double weight, const hx_route *via)
{
	hx_route *rt;

	for (int q = first; merge && q < p->nkv; q++)
		if (strcmp(p->kv[q].to, to) == 0) {
			p->kv[q].weight += weight;
			return;
		}
	if (p->nkv >= *cap) {
		*cap = *cap > 0 ? 2 * *cap : 256;
		p->kv = hx_xrealloc(p->kv, (size_t)*cap * sizeof(*p->kv));
	}
	rt = &p->kv[p->nkv++];
	memset(rt, 0, sizeof(*rt));
	hx_strlcpy(rt->from, from, sizeof(rt->from));
	hx_strlcpy(rt->to, to, sizeof(rt->to));
	rt->weight = weight;
	memcpy(rt->link, via->link, sizeof(rt->link));
	rt->bw_gbps = via->bw_gbps;
	rt->latency_ms = via->latency_ms;
}

/* KV routes from each replica of the prefill group of the NA nodes A
 * (group GROUP_OF[A[0]]) to the decode replicas of the nodes their link
 * flows in K reach, in proportion to those flows and evenly over each
 * group's replicas; to every decode replica when no flow leaves them.
 * Each node pair's link is looked up once, for the first replica. */
static void emit_kv(const dctx *d, const int *group_of, const kvflow *k, const int *A, int na,
		    hx_plan *p, int *cap)
{
	const hx_cluster *c = d->pb->cluster;
	const hx_plan_group *ga = &p->groups[group_of[A[0]]];
	double out = 0;
	int nq = 0;
	hx_route *via;

	for (int i = 0; i < na; i++)
		out += k->out[A[i]];
	for (int i = 0; i < (out > 0 ? na : 1); i++)
		nq += out > 0 ? k->start[A[i] + 1] - k->start[A[i]] : d->n;
	via = hx_xmalloc((size_t)(nq > 0 ? nq : 1) * sizeof(*via));
	for (int r = 0; r < ga->nreplicas; r++) {
		const hx_plan_replica *from = &ga->replicas[r];
		int first = p->nkv, t = 0;
		for (int i = 0; i < (out > 0 ? na : 1); i++) {
			int a = A[i], q0 = out > 0 ? k->start[a] : 0,
			    q1 = out > 0 ? k->start[a + 1] : d->n;
			for (int q = q0; q < q1; q++, t++) {
				int b = out > 0 ? k->to[q] : q;
				double share = out > 0 ? k->flow[q] / out : 1.0;
				const hx_plan_group *gb;
				if (group_of[b] < 0 ||
				    p->groups[group_of[b]].role != HX_ROLE_DECODE)
					continue;
				gb = &p->groups[group_of[b]];
				if (r == 0)
					hx_route_set_link(&via[t], c, a, b);
				for (int j = 0; j < gb->nreplicas; j++) {
					/* A node's decode replicas are alike:
					 * spread over all of them (the flow's
					 * own split among equal edges is
					 * arbitrary, often all on one). */
					double dj = 1.0 / gb->nreplicas;
					if (share * dj <= 0 && out > 0)
						continue;
					kv_route(p, cap, first,
						 na > 1 || gb->stage[0].cross_node, from->id,
						 gb->replicas[j].id, share * dj, &via[t]);
				}
			}
		}
		hx_routes_normalize(p->kv + first, p->nkv - first);
	}
	free(via);
}

/* The groups and routes of ROLE, whose max-flow is K, into P: a group per
 * used node, or per EP set of nodes (ep_sets). */
static void emit(dctx *d, const int *role, const kvflow *k, hx_plan *p)
{
	int n = d->n, *group_of = hx_xmalloc((size_t)n * sizeof(int));
	int *set = hx_xmalloc((size_t)n * sizeof(int)),
	    *mem = hx_xmalloc((size_t)n * sizeof(int));
	int *head = hx_xmalloc((size_t)n * sizeof(int)),
	    *size = hx_xcalloc((size_t)n, sizeof(int));
	double *in;
	int cap = p->nkv; /* the room of P's KV routes */

	ep_sets(d, role, set);
	for (int i = 0; i < n; i++)
		group_of[i] = -1;
	for (int i = 0; i < n; i++) {
		int nm = 0;
		if (role[i] < 0 || d->nr[i].reps[role[i]] == 0 || set[i] != i)
			continue;
		for (int j = i; j < n; j++)
			if (set[j] == i)
				mem[nm++] = j;
		emit_group(d, mem, nm, role[i], p);
		head[p->ngroups - 1] = i;
		size[p->ngroups - 1] = nm;
		for (int j = 0; j < nm; j++)
			group_of[mem[j]] = p->ngroups - 1;
	}
	/* Ingress: each prefill group's share of the flow. */
	in = hx_xcalloc((size_t)p->ngroups + 1, sizeof(double));
	for (int i = 0; i < n; i++)
		if (group_of[i] >= 0 && role[i] == 0)
			in[group_of[i]] += k->in[i];
	for (int gi = 0; gi < p->ngroups; gi++) {
		hx_route *rt;
		if (p->groups[gi].role != HX_ROLE_PREFILL)
			continue;
		rt = hx_plan_add_route(&p->ingress, &p->ningress);
		hx_strlcpy(rt->to, p->groups[gi].name, sizeof(rt->to));
		rt->weight = k->value > 0 ? in[gi] / k->value : 0;
	}
	hx_routes_normalize(p->ingress, p->ningress);
	for (int gi = 0; gi < p->ngroups; gi++) {
		int nm = 0;
		if (p->groups[gi].role != HX_ROLE_PREFILL)
			continue;
		for (int j = head[gi]; nm < size[gi]; j++)
			if (group_of[j] == gi)
				mem[nm++] = j;
		emit_kv(d, group_of, k, mem, nm, p, &cap);
	}
	free(in);
	free(head);
	free(size);
	free(mem);
	free(set);
	free(group_of);
}

/* The worst TTFT and TPOT (ms) of P's replicas at request rate LAMBDA,
 * replica by replica: a prefill replica gets its group's ingress share, a
 * decode replica what the KV routes bring it. */
static void operating_point(const hx_problem *pb, hx_plan *p, double lambda, hx_capmemo *memo,
			    double *ttft, double *tpot)
{
	int R = 0, f = 0;
	double *rate, *share = hx_xcalloc((size_t)p->ngroups + 1, sizeof(double));
	hx_map names = {0}, ids = {0}; /* replica ids: a KV route's ends */

	/* Each prefill group's share of the ingress, the routes in order. */
	for (int gi = 0; gi < p->ngroups; gi++) {
		R += p->groups[gi].nreplicas;
		hx_map_put(&names, p->groups[gi].name, gi);
	}
	for (int i = 0; i < p->ningress; i++) {
		int gi = hx_map_get(&names, p->ingress[i].to);
		if (gi >= 0 && p->groups[gi].role == HX_ROLE_PREFILL)
			share[gi] += p->ingress[i].weight;
	}
	hx_map_release(&names);
	rate = hx_xcalloc((size_t)R + 1, sizeof(double));
	for (int gi = 0; gi < p->ngroups; gi++) {
		hx_plan_group *gp = &p->groups[gi];
		for (int r = 0; r < gp->nreplicas; r++, f++) {
			hx_map_put(&ids, gp->replicas[r].id, f);
			rate[f] = lambda * share[gi] / gp->nreplicas;
		}
	}
	free(share);
	{
		/* decode replicas get what the KV routes bring them */
		double *in = hx_xcalloc((size_t)R + 1, sizeof(double));
		for (int k = 0; k < p->nkv; k++) {
			int a = hx_map_get(&ids, p->kv[k].from),
			    b = hx_map_get(&ids, p->kv[k].to);
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
			hx_capmemo_eval(memo, &rep, pb->workload,
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
	hx_map_release(&ids);
}

/* Bisection steps of balance, per role. */
#define DISAGG_BALANCE_STEPS 10

/* K's flow of ROLE spread evenly: the same value with each replica edge
 * of a role capped at the least share u of its capacity that still
 * carries it, u found by bisection for the decode role (the prefill one
 * at 1), then for the prefill role (the decode one at its u).  The
 * max-flow's own split among equal paths is arbitrary: it often fills
 * some nodes to their capacity at the SLO while others idle, where the
 * simulator, as a server, queues (Llama-3.1-8B chat on the mixed example:
 * the L40S decode nodes at 100% of theirs, the A100 ones at 29%).  A new
 * kvflow, or NULL when no narrower share carries it or the time limit
 * leaves no room (keep K). */
static kvflow *balance(dctx *d, const int *role, const kvflow *k)
{
	kvflow *best = NULL;
	hx_err err = {0};
	double u[2] = {1, 1}, *cap;
	net x;

	build(d, role, &x); /* once: the steps change the replica edges alone */
	cap = hx_xmalloc((size_t)x.g.m * sizeof(double) + 1);
	memcpy(cap, x.g.cap, (size_t)x.g.m * sizeof(double));
	for (int side = 1; side >= 0; side--) {
		double tot = 0, lo, hi = 1;
		for (int i = 0; i < d->n; i++)
			if (role[i] == side)
				tot += d->nr[i].total[side];
		lo = tot > 0 ? fmin(1, k->value / tot) : 1;
		for (int it = 0; it < DISAGG_BALANCE_STEPS && lo < hi; it++) {
			hx_flow_result res;
			if (d->deadline > 0 && hx_now() + d->score_s >= d->deadline)
				break;
			u[side] = (lo + hi) / 2;
			for (int i = 0; i < d->n; i++)
				for (int r = 0; r < x.nrep[i]; r++) {
					int e = x.rep_edge[x.rep0[i] + r];
					x.g.cap[e] = cap[e] * u[role[i]];
				}
			d->flows++;
			if (hx_flow_max(&x.g, 0, 1, &res, &err) == 0 &&
			    res.value >= k->value * (1 - 1e-9)) {
				hi = u[side];
				kvflow_free(best);
				best = kvflow_of(d, role, &x, &res);
			} else {
				lo = u[side];
			}
			hx_flow_result_release(&res);
		}
		u[side] = hi;
	}
	free(cap);
	net_release(&x);
	return best;
}

/* The plan of role assignment ROLE, whose max-flow (kept from its score)
 * is K, into P, with its predictions at the workload's rate: the flow's
 * value, its routes spread evenly (balance). */
static int build_plan(dctx *d, const int *role, const kvflow *k0, int cut, long iterations,
		      hx_plan *p, hx_err *err)
{
	const hx_problem *pb = d->pb;
	kvflow *even = balance(d, role, k0);
	const kvflow *k = even ? even : k0;
	double value = k0->value, P = hx_dist_mean(&pb->workload->prompt);
	int rc;

	hx_plan_init(p);
	strcpy(p->mode, "disagg");
	emit(d, role, k, p);
	if ((rc = hx_plan_finish(pb, p, 0, err))) {
		kvflow_free(even);
		hx_plan_release(p);
		return rc;
	}
	{
		double bound = d->bound, lambda = fmin(pb->workload->rate_rps, value), ttft = 0,
		       tpot = 0;
		double O = hx_dist_mean(&pb->workload->output);
		/* The operating point at the workload's rate */
		hx_capmemo memo = {0};
		operating_point(pb, p, lambda, &memo, &ttft, &tpot);
		/* Prefill groups as the flow saw them (TTFT less the transfer
		 * reserve); the user's TTFT adds the percentile prompt's
		 * transfer over the slowest route at this rate. */
		for (int gi = 0; gi < p->ngroups; gi++) {
			hx_plan_group *gp = &p->groups[gi];
			hx_replica rep;
			hx_capacity cap;
			if (gp->role != HX_ROLE_PREFILL)
				continue;
			hx_plan_replica_cost(p, gp, &gp->replicas[0], &rep, NULL);
			hx_capmemo_eval(&memo, &rep, &d->wp, HX_SERVE_PREFILL, -1, &cap);
			gp->capacity_rps = hx_round6(cap.rps);
		}
		hx_capmemo_release(&memo);
		if (ttft > 0 && value > 0)
			ttft += 1e3 * kv_worst_s(d, k, lambda / value);
		p->predicted.capacity_rps = hx_round6(value);
		p->predicted.throughput_tps = hx_round6(lambda * O);
		p->predicted.ttft_ms_p99 = hx_round6(ttft);
		p->predicted.tpot_ms_p99 = hx_round6(tpot);
		p->predicted.usd_per_m_tokens =
		    hx_round6(hx_usd_per_mtok(p->predicted.usd_per_hour, lambda, P + O));
		hx_plan_solver_search(p, "igraph", cut ? "time_limit" : "heuristic", value,
				      bound, d->flows, iterations);
	}
	kvflow_free(even);
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
		if ((rc = build_plan(d, tk->role[i], tk->flow[i], cut, iterations, &q, err)))
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

/* The search's state: the best role assignment so far, the best few, and
 * whether the deadline cut it short. */
typedef struct search {
	int *best, *role;
	double best_v;
	long iterations;
	int cut;
	double deadline;
	topk tk;
} search;

/* Whether the deadline comes before one more score and SPARE_S more
 * would end: the search stops with what it found (once it found
 * something) rather than overrun the limit.  The score is of ROLE (NULL:
 * any, as long as the longest so far): a flow's time grows with its node
 * pairs (~10 s at 2,000 x 2,000), so one with more than any so far is
 * expected to take longer in proportion. */
static int out_of_time(const dctx *d, search *s, const int *role, double spare_s)
{
	double est_s = d->score_s;

	if (s->best_v > 0 && s->deadline > 0 && role) {
		long np = 0, nd = 0;
		for (int i = 0; i < d->n; i++) {
			np += role[i] == 0;
			nd += role[i] == 1;
		}
		if (np * nd > d->big_pairs && d->big_pairs > 0)
			est_s =
			    fmax(est_s, d->big_s * (double)(np * nd) / (double)d->big_pairs);
	}
	if (s->best_v > 0 && s->deadline > 0 && hx_now() + est_s + spare_s >= s->deadline)
		s->cut = 1;
	return s->cut;
}

/* Score S->role, keep it among the best few, and make it S's best if it
 * beats that by a margin (relative in the refinement, REFINE; else
 * absolute); 1 when it did.  A failed flow scores nothing. */
static int try_role(dctx *d, search *s, int refine, hx_err *err)
{
	kvflow *k;
	double v = score(d, s->role, &k, err);

	topk_add(&s->tk, s->role, v, k);
	if (refine ? v > s->best_v * (1 + 1e-9) : v > s->best_v + 1e-9) {
		s->best_v = v;
		memcpy(s->best, s->role, (size_t)d->n * sizeof(int));
		return 1;
	}
	return 0;
}
/* Above this many nodes the partition runs on a graph of classes of
 * nodes, not of nodes: it is dense (a power iteration over an n-by-n
 * matrix) and took 75 s alone at 4,096 nodes with 16,384 links. */
#define DISAGG_PART_NODES 256

/* The graph the partition runs on: a vertex per node, or above
 * DISAGG_PART_NODES nodes per class of nodes (the same GPU, count and
 * region), each class dealt in turn into 8 vertices so that a cluster of
 * one kind still splits, and the vertices wrapping at DISAGG_PART_NODES.
 * Edges weigh the bandwidth of the links between their nodes, vertices
 * their nodes' memory. */
typedef struct pgraph {
	hx_graph g;
	int *of;     /* per node: its vertex */
	double *mem; /* per vertex: GiB */
} pgraph;

/* PG->of for a cluster above DISAGG_PART_NODES nodes; returns the number
 * of vertices. */
static int pgraph_classes(const dctx *d, pgraph *pg)
{
	const hx_cluster *c = d->pb->cluster;
	hx_map classes = {0};
	int ncls = 0, nv = 0, *dealt = hx_xcalloc((size_t)d->n, sizeof(int));
	int *vertex = hx_xmalloc((size_t)d->n * 8 * sizeof(int));

	for (int i = 0; i < d->n * 8; i++)
		vertex[i] = -1;
	for (int i = 0; i < d->n; i++) {
		char key[128];
		int cl, *v;
		snprintf(key, sizeof(key), "%s/%d/%d", c->nodes[i].gpu.name, c->nodes[i].count,
			 d->lt.region[i]);
		if ((cl = hx_map_put(&classes, key, ncls)) < 0)
			cl = ncls++;
		v = &vertex[cl * 8 + dealt[cl]++ % 8];
		if (*v < 0)
			*v = nv++ % DISAGG_PART_NODES;
		pg->of[i] = *v;
	}
	hx_map_release(&classes);
	free(dealt);
	free(vertex);
	return nv < DISAGG_PART_NODES ? nv : DISAGG_PART_NODES;
}

/* W[u * NV + v] (u < v): the bandwidth of all links between nodes of
 * vertices u and v of PG's class graph, in O(nodes x vertices + links),
 * not over every node pair: the default links by region counts (the
 * nodes of region r at each vertex), then each explicit link in place of
 * its pair's default. */
static void pgraph_class_weights(const dctx *d, const pgraph *pg, int nv, double *w)
{
	const hx_cluster *c = d->pb->cluster;
	const int *reg = d->lt.region;
	int n = d->n, nreg = 0;
	double same = c->same_region.bw_gbps, cross = c->cross_region.bw_gbps;
	double *cnt, *vcnt = hx_xcalloc((size_t)nv, sizeof(double));
	double *sr = hx_xcalloc((size_t)nv * nv, sizeof(double)); /* same-region pairs */

	for (int i = 0; i < n; i++)
		nreg = reg[i] + 1 > nreg ? reg[i] + 1 : nreg;
	cnt = hx_xcalloc((size_t)nreg * nv, sizeof(double));
	for (int i = 0; i < n; i++) {
		cnt[(size_t)reg[i] * nv + pg->of[i]]++;
		vcnt[pg->of[i]]++;
	}
	for (int i = 0; i < n; i++) {
		const double *row = &cnt[(size_t)reg[i] * nv];
		double *to = &sr[(size_t)pg->of[i] * nv];
		for (int v = 0; v < nv; v++)
			to[v] += row[v];
	}
	for (int u = 0; u < nv; u++)
		for (int v = u + 1; v < nv; v++)
			w[u * nv + v] =
			    cross * vcnt[u] * vcnt[v] + (same - cross) * sr[u * nv + v];
	for (int l = 0; l < c->nlinks; l++) {
		int a = c->links[l].a, b = c->links[l].b, u = pg->of[a], v = pg->of[b];
		if (u == v)
			continue;
		w[u < v ? u * nv + v : v * nv + u] +=
		    c->links[l].spec.bw_gbps - (reg[a] == reg[b] ? same : cross);
	}
	free(cnt);
	free(vcnt);
	free(sr);
}

static void pgraph_init(const dctx *d, pgraph *pg)
{
	const hx_cluster *c = d->pb->cluster;
	int n = d->n, nv = n;

	pg->of = hx_xmalloc((size_t)n * sizeof(int));
	for (int i = 0; i < n; i++)
		pg->of[i] = i;
	if (n > DISAGG_PART_NODES)
		nv = pgraph_classes(d, pg);
	pg->mem = hx_xcalloc((size_t)nv, sizeof(double));
	for (int i = 0; i < n; i++)
		pg->mem[pg->of[i]] += c->nodes[i].count * c->nodes[i].gpu.mem_gib;
	hx_graph_init(&pg->g, nv);
	if (n > DISAGG_PART_NODES) {
		double *w = hx_xcalloc((size_t)nv * nv, sizeof(double));
		pgraph_class_weights(d, pg, nv, w);
		for (int u = 0; u < nv; u++)
			for (int v = u + 1; v < nv; v++)
				hx_graph_add_edge(&pg->g, u, v, w[u * nv + v]);
		free(w);
	} else {
		/* Up to DISAGG_PART_NODES nodes, a vertex per node. */
		double *bw = hx_xmalloc((size_t)n * sizeof(double));
		for (int a = 0; a < n; a++) {
			linktab_row(&d->lt, c, a, bw);
			for (int b = a + 1; b < n; b++)
				hx_graph_add_edge(&pg->g, a, b, bw[b]);
		}
		free(bw);
	}
}

static void pgraph_release(pgraph *pg)
{
	hx_graph_release(&pg->g);
	free(pg->of);
	free(pg->mem);
}

/* (1) and (2): for k = 2..8, partition PG into k groups and score every
 * role assignment of the groups. */
static int search_partitions(dctx *d, search *s, const pgraph *pg, hx_err *err)
{
	int n = d->n, kmax = pg->g.n < 8 ? pg->g.n : 8, rc = 0;
	int *grp = hx_xcalloc((size_t)pg->g.n, sizeof(int));
	double part_s = 0; /* the longest a partition has taken */

	for (int k = 2; k <= kmax; k++) {
		double t0 = hx_now();
		if (out_of_time(d, s, NULL, part_s))
			break;
		if ((rc = hx_partition(&pg->g, pg->mem, k, d->pb->seed, grp, err)))
			break;
		part_s = fmax(part_s, hx_now() - t0);
		for (int mask = 1; mask < (1 << k) - 1; mask++) {
			for (int i = 0; i < n; i++) {
				int r = (mask >> grp[pg->of[i]]) & 1;
				s->role[i] = d->nr[i].tp[r] ? r : -1;
			}
			if (out_of_time(d, s, s->role, 0))
				break;
			try_role(d, s, 0, err);
		}
		if (s->cut)
			break;
	}
	free(grp);
	return rc;
}

/* (4) refine: flip single nodes while the flow grows. */
static void search_flips(dctx *d, search *s, hx_err *err)
{
	int n = d->n;

	for (int pass = 0; pass < 4 * n && s->best_v > 0 && !s->cut; pass++) {
		int improved = 0;
		for (int i = 0; i < n; i++) {
			const int *best = s->best;
			memcpy(s->role, best, (size_t)n * sizeof(int));
			s->role[i] = best[i] == 0   ? 1
				     : best[i] == 1 ? 0
						    : (d->nr[i].tp[0] ? 0 : 1);
			if (out_of_time(d, s, s->role, 0))
				break;
			if (!d->nr[i].tp[s->role[i]])
				continue;
			s->iterations++;
			improved |= try_role(d, s, 1, err);
		}
		if (!improved)
			break;
	}
}

/* Price D's nodes at reserve R: the prefill role (both the first time,
 * FIRST) at the TTFT SLO less R.  1 when EP shapes were left out. */
static int price_at(dctx *d, double R, int first, double deadline)
{
	d->reserve_s = R;
	d->wp = *d->pb->workload;
	d->wp.slo.ttft_ms -= 1e3 * R;
	return price_nodes(d, first ? 2 : 1, deadline);
}

static void search_release(search *s)
{
	topk_release(&s->tk);
	free(s->best);
	free(s->role);
}

int hx_plan_disagg(const hx_problem *pb, const hx_plan_opts *o, hx_plan *p, hx_err *err)
{
	const hx_cluster *c = pb->cluster;
	dctx d;
	int n = c->nnodes, rc = 0, nres, won = -1, priced = -1, any_cut = 0;
	long iterations = 0;
	double P = hx_dist_mean(&pb->workload->prompt), R[HX_KV_RESERVES];
	double Pq = hx_dist_quantile(&pb->workload->prompt, pb->workload->slo.percentile / 100);
	double deadline = hx_deadline(o->time_limit_s);
	pgraph pg;
	search s = {0}, w = {0}; /* the search at one reserve; the best of them */

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
	linktab_init(&d.lt, c);
	d.kv_req_bytes = hx_kv_bytes_per_token(pb->model, HX_DT_FP16) * P;
	d.q_tokens = Pq;
	d.deadline = deadline;
	w.best_v = -1;
	/* (1) the node graph, links weighted by bandwidth; node weight memory */
	pgraph_init(&d, &pg);
	/* The TTFT SLO is shared by the prefill and the KV transfer: the
	 * prefill role is priced at the SLO less a reserve, the links carry
	 * what they send within it (kv_rps).  The search runs at each reserve
	 * whose bound (links aside) beats the best flow so far, each given an
	 * even share of the time left; the best flow wins. */
	if ((nres = hx_kv_reserves(pb, Pq, R)) == 0) {
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "the TTFT SLO (%g ms) leaves no time to send the KV cache of a %.0f-token prompt (the SLO's percentile) from prefill to decode: twice its time over the fastest link is longer",
		    pb->workload->slo.ttft_ms, Pq);
		pgraph_release(&pg);
		goto out;
	}
	for (int r = 0; r < nres && rc == 0; r++) {
		double left = deadline > 0 ? deadline - hx_now() : 0, bound;
		int cut;
		if (deadline > 0 && left <= 0 && w.best_v > 0) {
			any_cut = 1; /* reserves left untried */
			break;
		}
		cut = price_at(&d, R[r], priced < 0, deadline);
		priced = r;
		bound = split_bound(&d);
		d.bound = fmax(d.bound, bound);
		if (w.best_v > 0 && bound <= w.best_v * (1 + 1e-9))
			continue;
		memset(&s, 0, sizeof(s));
		s.deadline = deadline > 0 ? hx_now() + left / (nres - r) : 0;
		s.best_v = -1;
		s.tk.nnodes = n;
		s.best = hx_xcalloc((size_t)n, sizeof(int));
		s.role = hx_xcalloc((size_t)n, sizeof(int));
		rc = search_partitions(&d, &s, &pg, err);
		if (rc == 0)
			search_flips(&d, &s, err);
		s.cut |= cut; /* the search went on without the shapes left out */
		any_cut |= s.cut;
		iterations += s.iterations;
		if (rc == 0 && s.best_v > w.best_v * (1 + 1e-9)) {
			search_release(&w);
			w = s;
			won = r;
		} else {
			search_release(&s);
		}
	}
	pgraph_release(&pg);
	if (rc)
		goto out;
	if (won < 0 || w.best_v <= 0) {
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "no split of the nodes into prefill and decode carries any traffic at the SLO: %s needs a node that holds it for each role",
		    pb->model->name);
		goto out;
	}
	if (won != priced) /* the plan is built from the winner's prices */
		price_at(&d, R[won], 0, 0);
	w.cut |= any_cut;
	w.iterations = iterations;
	if (o->no_sim_check) {
		const kvflow *k = topk_flow(&w.tk, w.best);
		kvflow *own = NULL;
		if (!k) /* pushed out of the best few by near ties */
			score(&d, w.best, &own, err);
		rc = (k || own)
			 ? build_plan(&d, w.best, k ? k : own, w.cut, w.iterations, p, err)
			 : -1;
		kvflow_free(own);
	} else {
		rc = sim_check(&d, &w.tk, w.cut, w.iterations, deadline, p, err);
	}
out:
	search_release(&w);
	free(d.nr);
	free(d.kind);
	linktab_release(&d.lt);
	if (rc)
		hx_plan_release(p);
	return rc;
}
