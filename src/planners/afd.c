/*
 * plan_afd: attention/FFN disaggregated decode (issue 22).  (1) Every unit
 * shape: attention GPU type and FFN (or expert) GPU type of the cluster
 * (the same allowed), attention instances a of TP t_a and FFN instances f
 * of TP t_f (each instance on one node; a mixture of experts splits its
 * experts over the f instances, hx_afd_check), micro-batches m in
 * 1..HX_AFD_MAX_MICRO; its batch B the largest whose step (hx_cost_afd at
 * the workload's length-biased decode context, hx_cost_decode_ctx) meets
 * the TPOT SLO, whose KV cache the attention side holds (and one request
 * at the SLO percentile each instance) and at most the engine's max_seqs;
 * its capacity B / (E[output] * step).  The link between the sides: the
 * slowest between any two nodes of the two types (their NICs included),
 * or the GPU's own NVLink/PCIe when the types share one node and no
 * other.  (2) The TTFT SLO is split, as in disagg, between the prefill
 * and a transfer reserve R (hx_kv_reserves; each tried, smallest first):
 * shapes ranked by decode capacity per GPU; units placed one by one,
 * each the best shape the free GPUs still hold (attention instances on
 * nodes of their type, FFN on theirs, lowest free GPUs first), and after
 * each the free GPUs priced as one-node prefill replicas (each node its
 * best TP, at the TTFT SLO less R); this for every cap on a unit's GPUs
 * (the shapes' sizes), the count of units whose smaller side (prefill or
 * decode capacity) is the largest scored by its KV flow (aflow_solve:
 * each link and NIC carrying the transfers that end within R,
 * hx_kv_link_rps), and the plan keeps the reserve, cap and count of the
 * highest flow.  (3) The plan: a prefill group per node the flow uses,
 * an AFD decode group per unit shape, ingress and KV routes by the flow
 * (spread evenly); the predicted TTFT adds the slowest used route's
 * transfer at the served rate.  The bound: the best shape's capacity per
 * GPU times the cluster's GPUs.  (4) The plan simulated whole (simulate
 * --capacity's search), its capacity recorded.  Under a time limit the
 * shapes are priced until half of it, the reserves share the rest.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/verify.h"
#include "sim/sim.h"
#include "solver/flow.h"
#include "planners/afd.h"

#define NTP 8 /* TP 1, 2, 4, ... 128 */

typedef struct shape {
	int at, ft; /* GPU types */
	int atp, an, ftp, fn, m;
	int gpus;
	double batch, step_s, cap; /* cap: one unit's decode requests/s */
	double per_gpu;
	int order; /* enumeration order (ties) */
} shape;

typedef struct actx {
	const hx_problem *pb;
	const hx_cluster *c;
	int ntype;
	int *type_node;    /* per type: its first node */
	int *node_type;    /* per node */
	int *type_gpus;    /* per type: GPUs in all */
	int *type_maxn;    /* per type: the most on one node */
	hx_linkspec *link; /* per type pair, at * ntype + ft */
	double ctx, mem_util, reserve, out_mean;
	double q_tokens;     /* the SLO-percentile prompt's tokens */
	double kv_req_bytes; /* KV bytes of a mean prompt */
	double reserve_s;    /* the part of the TTFT SLO left for the KV transfer */
	hx_workload wp;      /* the TTFT SLO less reserve_s */
	double stop;         /* the pricing and search stop here (0: never) */
	int cut;             /* they stopped before the end */
	hx_cost_lens kl;     /* the workload's lengths for the occupancy test */
	double *pre_cap;     /* per type * NTP + log2(tp): a prefill replica's rps */
	shape *sh;
	int nsh;
} actx;

/* Free GPUs as units take them. */
typedef struct place {
	char *busy; /* per GPU, node i's at off[i] */
	int *off, *nfree;
	double *pre;    /* per node: its free GPUs' prefill capacity */
	int *pre_tp;    /* and their TP (0: none) */
	double pre_sum; /* over nodes */
} place;

static int ilog2(int v)
{
	int k = 0;
	while ((1 << (k + 1)) <= v)
		k++;
	return k;
}

static void types_init(actx *x)
{
	const hx_cluster *c = x->c;
	int n = c->nnodes;

	x->type_node = hx_xcalloc((size_t)n, sizeof(int));
	x->node_type = hx_xcalloc((size_t)n, sizeof(int));
	x->type_gpus = hx_xcalloc((size_t)n, sizeof(int));
	x->type_maxn = hx_xcalloc((size_t)n, sizeof(int));
	for (int i = 0; i < n; i++) {
		int t = 0;
		while (t < x->ntype &&
		       strcmp(c->nodes[x->type_node[t]].gpu.name, c->nodes[i].gpu.name) != 0)
			t++;
		if (t == x->ntype)
			x->type_node[x->ntype++] = i;
		x->node_type[i] = t;
		x->type_gpus[t] += c->nodes[i].count;
		if (c->nodes[i].count > x->type_maxn[t])
			x->type_maxn[t] = c->nodes[i].count;
	}
}

/* Every type pair's link into X->LINK (at * ntype + ft): the slowest
 * between a node of the one type and another node of the other (NICs
 * included), else, when no such pair exists, the GPU's own.  One pass over
 * the node pairs, not one per type pair. */
static void pair_links(actx *x)
{
	const hx_cluster *c = x->c;
	int nt = x->ntype;
	char *any = hx_xcalloc((size_t)(nt * nt), 1);

	x->link = hx_xcalloc((size_t)(nt * nt), sizeof(hx_linkspec));
	for (int k = 0; k < nt * nt; k++)
		x->link[k] = (hx_linkspec){INFINITY, 0};
	for (int i = 0; i < c->nnodes; i++)
		for (int j = 0; j < c->nnodes; j++) {
			hx_linkspec *l = &x->link[x->node_type[i] * nt + x->node_type[j]], k;
			if (j == i)
				continue;
			k = hx_cluster_nic_link(c, i, j);
			l->bw_gbps = fmin(l->bw_gbps, k.bw_gbps);
			l->latency_ms = fmax(l->latency_ms, k.latency_ms);
			any[x->node_type[i] * nt + x->node_type[j]] = 1;
		}
	for (int a = 0; a < nt; a++)
		for (int f = 0; f < nt; f++) {
			hx_linkspec *l = &x->link[a * nt + f];
			if (!any[a * nt + f])
				*l = hx_gpu_own_link(&c->nodes[x->type_node[a]].gpu);
			l->bw_gbps = hx_round6(l->bw_gbps);
			l->latency_ms = hx_round6(l->latency_ms);
		}
	free(any);
}

static hx_afd shape_afd(const actx *x, const shape *s)
{
	const hx_cluster *c = x->c;
	hx_afd g;

	memset(&g, 0, sizeof(g));
	g.model = x->pb->model;
	g.wdt = x->pb->model->a.dtype;
	g.kvdt = HX_DT_FP16;
	g.attn_gpu = &c->nodes[x->type_node[s->at]].gpu;
	g.ffn_gpu = &c->nodes[x->type_node[s->ft]].gpu;
	g.attn_n = s->an;
	g.attn_tp = s->atp;
	g.ffn_n = s->fn;
	g.ffn_tp = s->ftp;
	g.micro_batches = s->m;
	g.link = x->link[s->at * x->ntype + s->ft];
	return g;
}

/* Whether G's two sides hold the model, and one percentile request on
 * each attention instance; *KV the tokens of KV the attention side holds. */
static int shape_fits(const actx *x, const hx_afd *g, double *kv)
{
	hx_afd_step st;

	hx_cost_afd_memory(g, x->mem_util, &st);
	*kv = st.attn_kv_tokens;
	return st.attn_kv_tokens > 0 && st.attn_kv_tokens / g->attn_n >= x->reserve &&
	       st.ffn_weights_b + st.ffn_reserve_b <= st.ffn_capacity_b;
}

/* Whether a batch of B decodes fits G: its step meets the TPOT SLO and
 * the KV cache of KV tokens holds it by the capacity rule's occupancy test
 * (hx_cost_decode_kv_need), *ST its step. */
static int batch_ok(const actx *x, const hx_afd *g, double kv, int b, hx_afd_step *st)
{
	hx_cost_afd(g, b, x->ctx, x->mem_util, st);
	return st->step_s <= x->pb->workload->slo.tpot_ms * 1e-3 &&
	       hx_cost_decode_kv_need(&x->kl, b) <= kv;
}

/* S's batch: the largest B (at most max_seqs an attention instance) that
 * batch_ok takes; 0 when not even one sequence does. */
static int size_batch(const actx *x, const hx_afd *g, double kv, shape *s)
{
	const hx_workload *w = x->pb->workload;
	/* each attention instance an engine of max_seqs sequences */
	int lo = 1, hi = (int)fmin(w->serving.max_seqs * g->attn_n, floor(kv / x->ctx));
	hx_afd_step st;

	if (hi < 1 || !batch_ok(x, g, kv, 1, &st))
		return 0;
	while (lo < hi) {
		int mid = lo + (hi - lo + 1) / 2;
		if (batch_ok(x, g, kv, mid, &st))
			lo = mid;
		else
			hi = mid - 1;
	}
	batch_ok(x, g, kv, lo, &st);
	s->batch = lo;
	s->step_s = st.step_s;
	s->cap = lo / (x->out_mean * st.step_s);
	s->per_gpu = s->cap / s->gpus;
	return 1;
}

/* Shapes of attention type A, FFN type F and TPs ATP, FTP into X. */
static void enumerate_tp(actx *x, int a, int f, int atp, int ftp)
{
	for (int an = 1; an <= HX_AFD_MAX_INSTANCES && an * atp <= x->type_gpus[a]; an++)
		for (int fn = 1; fn <= HX_AFD_MAX_INSTANCES; fn++) {
			shape s = {a, f, atp, an, ftp, fn, 1, an * atp + fn * ftp,
				   0, 0, 0,   0,  0};
			hx_afd g;
			double kv;
			if (a == f ? s.gpus > x->type_gpus[a] : fn * ftp > x->type_gpus[f])
				break;
			g = shape_afd(x, &s);
			if (hx_afd_check(&g, NULL) || !shape_fits(x, &g, &kv))
				continue;
			for (int m = 1; m <= HX_AFD_MAX_MICRO; m++) {
				s.m = g.micro_batches = m;
				if (!size_batch(x, &g, kv, &s))
					continue;
				s.order = x->nsh;
				x->sh =
				    hx_xrealloc(x->sh, (size_t)(x->nsh + 1) * sizeof(shape));
				x->sh[x->nsh++] = s;
			}
		}
}

static int cmp_shape(const void *p, const void *q)
{
	const shape *a = p, *b = q;
	if (a->per_gpu != b->per_gpu)
		return a->per_gpu > b->per_gpu ? -1 : 1;
	if (a->gpus != b->gpus)
		return a->gpus < b->gpus ? -1 : 1;
	return a->order - b->order;
}

static void enumerate(actx *x)
{
	int nt = x->ntype;

	pair_links(x);
	for (int a = 0; a < nt && !x->cut; a++)
		for (int f = 0; f < nt && !x->cut; f++)
			for (int atp = 1; atp <= x->type_maxn[a] && !x->cut; atp *= 2)
				for (int ftp = 1; ftp <= x->type_maxn[f]; ftp *= 2) {
					/* past the deadline, with a shape in hand */
					if (x->nsh > 0 && hx_past(x->stop)) {
						x->cut = 1;
						break;
					}
					enumerate_tp(x, a, f, atp, ftp);
				}
	if (x->nsh > 1)
		qsort(x->sh, (size_t)x->nsh, sizeof(shape), cmp_shape);
}

/* A one-node prefill replica of TP GPUs of type T, its rps (cached). */
static double pre_cap(actx *x, int t, int tp)
{
	double *slot = &x->pre_cap[t * NTP + ilog2(tp)];

	if (*slot < 0) {
		const hx_problem *pb = x->pb;
		hx_replica r;
		hx_capacity cap;
		*slot = 0;
		if (hx_replica_uniform(&r, pb->model, &x->c->nodes[x->type_node[t]].gpu, tp, 1,
				       pb->model->a.dtype, HX_DT_FP16, 100, 0, NULL) == 0 &&
		    hx_cost_capacity_phase(&r, &x->wp, HX_SERVE_PREFILL, &cap) == 0 &&
		    cap.rps > 0)
			*slot = cap.rps;
	}
	return *slot;
}

/* Node I's free GPUs as prefill replicas: the TP of the most capacity. */
static void price_node(actx *x, place *pl, int i)
{
	int t = x->node_type[i], nf = pl->nfree[i];
	double best = 0;
	int btp = 0;

	for (int tp = 1; tp <= nf && ilog2(tp) < NTP; tp *= 2) {
		double v = pre_cap(x, t, tp) * (nf / tp);
		if (v > best * (1 + 1e-12)) {
			best = v;
			btp = tp;
		}
	}
	pl->pre_sum += best - pl->pre[i];
	pl->pre[i] = best;
	pl->pre_tp[i] = btp;
}

static void place_init(actx *x, place *pl)
{
	const hx_cluster *c = x->c;
	int n = c->nnodes, tot = 0;

	pl->off = hx_xcalloc((size_t)n + 1, sizeof(int));
	pl->nfree = hx_xcalloc((size_t)n + 1, sizeof(int));
	pl->pre = hx_xcalloc((size_t)n + 1, sizeof(double));
	pl->pre_tp = hx_xcalloc((size_t)n + 1, sizeof(int));
	pl->pre_sum = 0;
	for (int i = 0; i < n; i++) {
		pl->off[i] = tot;
		pl->nfree[i] = c->nodes[i].count;
		tot += c->nodes[i].count;
	}
	pl->busy = hx_xcalloc((size_t)tot + 1, 1);
	for (int i = 0; i < n; i++)
		price_node(x, pl, i);
}

static void place_release(place *pl)
{
	free(pl->busy);
	free(pl->off);
	free(pl->nfree);
	free(pl->pre);
	free(pl->pre_tp);
}

/* TP free GPUs of type T on one node (the first that has them, lowest
 * indexes) into REFS as node, index pairs: 1, or 0 when none has. */
static int take(const actx *x, place *pl, int t, int tp, int *refs)
{
	for (int i = 0; i < x->c->nnodes; i++) {
		int k = 0;
		if (x->node_type[i] != t || pl->nfree[i] < tp)
			continue;
		for (int g = 0; g < x->c->nodes[i].count && k < tp; g++)
			if (!pl->busy[pl->off[i] + g]) {
				pl->busy[pl->off[i] + g] = 1;
				refs[2 * k] = i;
				refs[2 * k + 1] = g;
				k++;
			}
		pl->nfree[i] -= tp;
		return 1;
	}
	return 0;
}

static void give_back(place *pl, const int *refs, int n)
{
	for (int k = 0; k < n; k++) {
		pl->busy[pl->off[refs[2 * k]] + refs[2 * k + 1]] = 0;
		pl->nfree[refs[2 * k]]++;
	}
}

/* A unit of shape S on PL's free GPUs, its GPUs into REFS (attention
 * instances first): 1, or 0 (nothing taken) when they do not hold it. */
static int place_unit(actx *x, place *pl, const shape *s, int *refs)
{
	int k = 0;

	for (int i = 0; i < s->an + s->fn; i++) {
		int at = i < s->an, tp = at ? s->atp : s->ftp;
		if (!take(x, pl, at ? s->at : s->ft, tp, refs + 2 * k)) {
			give_back(pl, refs, k);
			return 0;
		}
		k += tp;
	}
	for (int i = 0; i < k; i++)
		if (i == 0 || refs[2 * i] != refs[2 * i - 2])
			price_node(x, pl, refs[2 * i]);
	return 1;
}

/* Units placed one by one, at most MAXU (-1: as many as fit), each the
 * best shape of at most MAXG GPUs that fits (a shape that did not fit
 * does not later): their shapes into UNITS and GPUs into REFS (x->sh's
 * gpus each, 2 ints a GPU); the count placed.  When MAXU < 0, *BEST_K gets
 * the count whose min(prefill, decode) is the highest when above *BEST_V,
 * and *BEST_V that value. */
static int place_units(actx *x, place *pl, int maxu, int maxg, int *units, int **refs,
		       int *best_k, double *best_v)
{
	int nu = 0, cur = 0;
	double dec = 0;

	while ((maxu < 0 || nu < maxu) && cur < x->nsh) {
		const shape *s = &x->sh[cur];
		int *r;
		if (s->gpus > maxg) {
			cur++;
			continue;
		}
		r = hx_xmalloc((size_t)s->gpus * 2 * sizeof(int));
		if (!place_unit(x, pl, s, r)) {
			free(r);
			cur++;
			continue;
		}
		units[nu] = cur;
		refs[nu++] = r;
		dec += s->cap;
		if (maxu < 0 && fmin(dec, pl->pre_sum) > *best_v * (1 + 1e-12)) {
			*best_v = fmin(dec, pl->pre_sum);
			*best_k = nu;
		}
	}
	return nu;
}

static void set_ref(hx_gpu_ref *g, const hx_cluster *c, int node, int index)
{
	hx_strlcpy(g->node, c->nodes[node].name, sizeof(g->node));
	g->index = index;
}

static hx_plan_group *add_group(const actx *x, hx_plan *p, hx_role role, int type, int tp)
{
	hx_plan_group *g = hx_plan_add_group(p);
	const hx_model *m = x->pb->model;

	char name[64];

	snprintf(name, sizeof(name), "%s%d", role == HX_ROLE_PREFILL ? "p" : "d",
		 p->ngroups - 1);
	hx_strlcpy(g->name, name, sizeof(g->name));
	hx_strlcpy(g->model, m->name, sizeof(g->model));
	g->role = role;
	g->wdt = m->a.dtype;
	g->kvdt = HX_DT_FP16;
	hx_plan_group_stages(g, 1);
	hx_strlcpy(g->stage[0].gpu, x->c->nodes[x->type_node[type]].gpu.name,
		   sizeof(g->stage[0].gpu));
	g->stage[0].tp = tp;
	g->stage[0].first = 0;
	g->stage[0].last = m->a.layers;
	return g;
}

static hx_plan_replica *add_replica(hx_plan_group *g, int ngpus)
{
	hx_plan_replica *r = hx_plan_add_replica(g);
	char id[128];

	snprintf(id, sizeof(id), "%sr%d", g->name, g->nreplicas - 1);
	hx_strlcpy(r->id, id, sizeof(r->id));
	r->ngpus[0] = ngpus;
	r->gpus[0] = hx_xcalloc((size_t)ngpus, sizeof(hx_gpu_ref));
	return r;
}

/* A prefill group per node of PL's free GPUs, their replicas on the
 * lowest free GPUs; *NODE_OF (per group) the node. */
static void emit_prefill(const actx *x, place *pl, hx_plan *p, int *node_of)
{
	const hx_cluster *c = x->c;

	for (int i = 0; i < c->nnodes; i++) {
		int tp = pl->pre_tp[i], g0 = 0;
		hx_plan_group *g;
		if (!tp)
			continue;
		node_of[p->ngroups] = i;
		g = add_group(x, p, HX_ROLE_PREFILL, x->node_type[i], tp);
		g->capacity_rps = hx_round6(pre_cap((actx *)x, x->node_type[i], tp));
		for (int k = 0; k < pl->nfree[i] / tp; k++) {
			hx_plan_replica *r = add_replica(g, tp);
			for (int t = 0; t < tp; t++) {
				while (pl->busy[pl->off[i] + g0])
					g0++;
				pl->busy[pl->off[i] + g0] = 1;
				set_ref(&r->gpus[0][t], c, i, g0);
			}
		}
	}
}

/* The link a KV transfer from node A to node B takes (hx_route_set_node_link's). */
static hx_linkspec kv_link(const actx *x, int a, int b)
{
	return a == b ? hx_gpu_own_link(&x->c->nodes[a].gpu) : hx_cluster_nic_link(x->c, a, b);
}

static double kv_rps(const actx *x, hx_linkspec l)
{
	return hx_kv_link_rps(x->pb->model, x->q_tokens, x->kv_req_bytes, x->reserve_s,
			      l.bw_gbps, l.latency_ms);
}

static double kv_time_s(const actx *x, double gbps, double latency_ms, double rps)
{
	return hx_kv_link_time_s(x->pb->model, x->q_tokens, x->kv_req_bytes, gbps, latency_ms,
				 rps);
}

/* The KV flow of a split (disagg's, with units for decode nodes): source ->
 * each node's prefill replicas (their capacity at the TTFT SLO less the
 * reserve) -> its NIC -> the link to the node of a unit's first attention
 * GPU (where its KV route goes) -> that node's NIC -> its units (their
 * decode capacity) -> sink, each NIC and link carrying the transfers that
 * end within the reserve (hx_kv_link_rps); a transfer within one node
 * takes the GPU's own link and no NIC. */
typedef struct apair {
	int a, b;    /* prefill node, unit node */
	int e;       /* the pair's link edge */
	double flow; /* KV from a to b (requests/s) */
} apair;

typedef struct aflow {
	double value;
	double *pin;  /* per node: requests/s into its prefill replicas */
	apair *pairs; /* the node pairs with a link edge, by a then b */
	int npairs;
	int *first;   /* per node a (n + 1): its pairs are first[a]..first[a+1]-1 */
	double *bin;  /* per node: KV into its units */
	double *unit; /* per unit: requests/s it decodes */
} aflow;

static void aflow_release(aflow *f)
{
	free(f->pin);
	free(f->pairs);
	free(f->first);
	free(f->bin);
	free(f->unit);
}

/* The network of PL's prefill and the NU units (first GPUs in REFS) into
 * G; *PE (per node) the prefill edges, *UE (per unit) the unit edges, F's
 * pairs (and first) the pair edges, only the pairs that get one: a list,
 * not an n x n table, for at the node limit (4096) that table alone is
 * 16.8M entries. */
static void aflow_net(const actx *x, const place *pl, int *const *refs, int nu, hx_graph *g,
		      int *pe, int *ue, aflow *f)
{
	int cap = 0;
	int n = x->c->nnodes, v = 2 + 5 * n, *has = hx_xcalloc((size_t)n + 1, sizeof(int));
	double inf = 1;

	/* "Unbounded": more than all prefill replicas together carry */
	for (int i = 0; i < n; i++)
		inf += pl->pre[i];
	for (int u = 0; u < nu; u++)
		has[refs[u][0]] = 1;
	hx_graph_init(g, v + nu);
	f->first = hx_xcalloc((size_t)n + 1, sizeof(int));
	/* node i: 2+5i prefill, +1/+2 egress NIC, +3/+4 ingress NIC (+4 the units' hub) */
	for (int i = 0; i < n; i++) {
		int b0 = 2 + 5 * i;
		hx_linkspec nic = {x->c->nodes[i].nic_gbps, 0};
		pe[i] = hx_graph_add_edge(g, 0, b0, pl->pre_tp[i] ? pl->pre[i] : 0);
		hx_graph_add_edge(g, b0, b0 + 1, inf);
		hx_graph_add_edge(g, b0 + 1, b0 + 2, kv_rps(x, nic));
		hx_graph_add_edge(g, b0 + 3, b0 + 4, kv_rps(x, nic));
	}
	for (int u = 0; u < nu; u++) {
		int b = refs[u][0];
		hx_graph_add_edge(g, 2 + 5 * b + 4, v + u, inf);
		ue[u] = hx_graph_add_edge(g, v + u, 1, 0);
	}
	v += nu;
	for (int a = 0; a < n; a++) {
		f->first[a] = f->npairs;
		if (!pl->pre_tp[a] || !(pl->pre[a] > 0))
			continue;
		for (int b = 0; b < n; b++) {
			double r;
			apair *q;
			if (!has[b] || !((r = kv_rps(x, kv_link(x, a, b))) > 0))
				continue; /* no unit, or the link misses the reserve */
			if (f->npairs == cap) {
				cap = cap ? 2 * cap : 64;
				f->pairs = hx_xrealloc(f->pairs, (size_t)cap * sizeof(apair));
			}
			q = &f->pairs[f->npairs++];
			q->a = a;
			q->b = b;
			q->flow = 0;
			hx_graph_add_edge(g, a == b ? 2 + 5 * a : 2 + 5 * a + 2, v, inf);
			q->e = hx_graph_add_edge(g, v, v + 1, r);
			hx_graph_add_edge(g, v + 1, 2 + 5 * b + (a == b ? 4 : 3), inf);
			v += 2;
		}
	}
	f->first[n] = f->npairs;
	/* Only the vertices used: declaring room for every pair (2 n^2, 33.5M
	 * at 4,096 nodes) took 4.4 GiB in the solver's arrays.  igraph's split
	 * among equal paths depends on the count, so two example plans'
	 * routes moved with this (the same capacities; bench/README, limits). */
	g->n = v;
	free(has);
}

/* Bisection steps of the balance, per side. */
#define AFD_BALANCE_STEPS 10

/* F: the max-flow of PL's prefill into the NU units (first GPUs in
 * REFS, decode capacity x->sh[UNITS[u]].cap), spread evenly as disagg's
 * balance does: the same value with each side's edges capped at the least
 * share of their capacity that still carries it (the decode side first),
 * for the max-flow's own split among equal paths is arbitrary; with EVEN.
 * 0, or the solver's error (ERR). */
static int aflow_solve(const actx *x, const place *pl, const int *units, int *const *refs,
		       int nu, int even, aflow *f, hx_err *err)
{
	int n = x->c->nnodes, rc;
	int *pe = hx_xcalloc((size_t)n + 1, sizeof(int)),
	    *ue = hx_xcalloc((size_t)nu + 1, sizeof(int));
	double u[2] = {1, 1}, value;
	hx_graph g;
	hx_flow_result res = {0};

	memset(f, 0, sizeof(*f));
	aflow_net(x, pl, refs, nu, &g, pe, ue, f);
	for (int k = 0; k < nu; k++)
		g.cap[ue[k]] = x->sh[units[k]].cap;
	if ((rc = hx_flow_max(&g, 0, 1, &res, err)))
		goto out;
	value = res.value;
	for (int side = 1; even && side >= 0 && value > 0; side--) {
		double tot = 0, lo, hi = 1;
		for (int k = 0; k < (side ? nu : n); k++)
			tot += side ? x->sh[units[k]].cap : (pl->pre_tp[k] ? pl->pre[k] : 0);
		lo = tot > 0 ? fmin(1, value / tot) : 1;
		for (int it = 0; it < AFD_BALANCE_STEPS && lo < hi && !hx_past(x->stop); it++) {
			hx_flow_result r2;
			hx_err e2 = {0};
			u[side] = (lo + hi) / 2;
			for (int i = 0; i < n; i++)
				g.cap[pe[i]] = (pl->pre_tp[i] ? pl->pre[i] : 0) * u[0];
			for (int k = 0; k < nu; k++)
				g.cap[ue[k]] = x->sh[units[k]].cap * u[1];
			if (hx_flow_max(&g, 0, 1, &r2, &e2) == 0 &&
			    r2.value >= value * (1 - 1e-9)) {
				hi = u[side];
				hx_flow_result_release(&res);
				res = r2;
			} else {
				lo = u[side];
				hx_flow_result_release(&r2);
			}
		}
		u[side] = hi;
	}
	/* The solver's flows carry rounding: a flow a hair below 0 is none. */
	f->value = value;
	f->pin = hx_xcalloc((size_t)n + 1, sizeof(double));
	f->bin = hx_xcalloc((size_t)n + 1, sizeof(double));
	f->unit = hx_xcalloc((size_t)nu + 1, sizeof(double));
	for (int i = 0; i < n; i++)
		f->pin[i] = fmax(0, res.flow[pe[i]]);
	for (int k = 0; k < nu; k++) {
		f->unit[k] = fmax(0, res.flow[ue[k]]);
		f->bin[refs[k][0]] += f->unit[k];
	}
	for (int i = 0; i < f->npairs; i++)
		f->pairs[i].flow = fmax(0, res.flow[f->pairs[i].e]);
out:
	if (rc) { /* none of F on an error */
		aflow_release(f);
		memset(f, 0, sizeof(*f));
	}
	hx_flow_result_release(&res);
	hx_graph_release(&g);
	free(pe);
	free(ue);
	return rc;
}

/* An AFD group per shape of the NU UNITS (GPUs REFS), in the order of
 * their first unit; unit u's replica is P's group *GOF[u], replica
 * *ROF[u]. */
static void emit_units(const actx *x, const int *units, int *const *refs, int nu, hx_plan *p,
		       int *gof, int *rof)
{
	for (int u = 0; u < nu; u++) {
		const shape *s = &x->sh[units[u]];
		hx_plan_group *g;
		int seen = 0;
		for (int v = 0; v < u && !seen; v++)
			seen = units[v] == units[u];
		if (seen)
			continue;
		g = add_group(x, p, HX_ROLE_DECODE, s->at, s->atp);
		g->afd.on = 1;
		g->afd.attn_n = s->an;
		hx_strlcpy(g->afd.ffn_gpu, x->c->nodes[x->type_node[s->ft]].gpu.name,
			   sizeof(g->afd.ffn_gpu));
		g->afd.ffn_n = s->fn;
		g->afd.ffn_tp = s->ftp;
		g->afd.micro_batches = s->m;
		g->afd.batch = s->batch;
		g->afd.context = x->ctx;
		g->afd.step_ms = ceil(s->step_s * 1e7) / 1e4;
		g->capacity_rps = hx_round6(s->cap);
		g->max_batch = s->batch;
		for (int v = u; v < nu; v++) {
			int na = s->an * s->atp, nf = s->fn * s->ftp;
			hx_plan_replica *r;
			if (units[v] != units[u])
				continue;
			gof[v] = p->ngroups - 1;
			rof[v] = g->nreplicas;
			r = add_replica(g, na);
			r->ffn = hx_xcalloc((size_t)nf, sizeof(hx_gpu_ref));
			r->nffn = nf;
			for (int k = 0; k < na + nf; k++)
				set_ref(k < na ? &r->gpus[0][k] : &r->ffn[k - na], x->c,
					refs[v][2 * k], refs[v][2 * k + 1]);
			r->afd_link = x->link[s->at * x->ntype + s->ft];
		}
	}
}

/* Ingress to the prefill groups (the first NPRE of P's) by the flow F
 * into their nodes (NODE_OF), and from each prefill replica KV routes to
 * the units its node's flow reaches: to each node b in proportion to the
 * flow to it, and there to its units (unit u: P's group GOF[u], replica
 * ROF[u]) in proportion to theirs, over the link between the nodes. */
static void emit_routes(const actx *x, hx_plan *p, int npre, const int *node_of,
			int *const *refs, int nu, const int *gof, const int *rof,
			const aflow *f)
{
	const hx_cluster *c = x->c;
	int n = c->nnodes;
	double *row = hx_xcalloc((size_t)n + 1, sizeof(double)); /* node a's pairs' flows */

	for (int g = 0; g < npre; g++) {
		hx_route *rt = hx_plan_add_route(&p->ingress, &p->ningress);
		hx_strlcpy(rt->to, p->groups[g].name, sizeof(rt->to));
		rt->weight = f->pin[node_of[g]];
	}
	hx_routes_normalize(p->ingress, p->ningress);
	for (int g = 0; g < npre; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++) {
			int first = p->nkv, a = node_of[g];
			for (int i = f->first[a]; i < f->first[a + 1]; i++)
				row[f->pairs[i].b] = f->pairs[i].flow;
			for (int u = 0; u < nu; u++) {
				int b = refs[u][0];
				double w = f->bin[b] > 0 ? row[b] * f->unit[u] / f->bin[b] : 0;
				hx_route *rt;
				if (!(w > 0))
					continue;
				rt = hx_plan_add_route(&p->kv, &p->nkv);
				hx_strlcpy(rt->from, p->groups[g].replicas[r].id,
					   sizeof(rt->from));
				hx_strlcpy(rt->to, p->groups[gof[u]].replicas[rof[u]].id,
					   sizeof(rt->to));
				rt->weight = w;
				hx_route_set_node_link(rt, c, a, b);
			}
			for (int i = f->first[a]; i < f->first[a + 1]; i++)
				row[f->pairs[i].b] = 0;
			hx_routes_normalize(p->kv + first, p->nkv - first);
		}
	free(row);
}

/* The longest mean time (s) of the percentile prompt's KV over the node
 * pairs F uses, at the fraction SCALE of its flow: over the pair's link
 * and, between two nodes, the two NICs, the slowest of them. */
static double kv_worst_s(const actx *x, const aflow *f, double scale)
{
	const hx_cluster *c = x->c;
	int n = c->nnodes;
	double worst = 0, *out = hx_xcalloc((size_t)n + 1, sizeof(double)),
	       *in = hx_xcalloc((size_t)n + 1, sizeof(double));

	for (int i = 0; i < f->npairs; i++) /* the NICs' loads */
		if (f->pairs[i].a != f->pairs[i].b) {
			out[f->pairs[i].a] += f->pairs[i].flow;
			in[f->pairs[i].b] += f->pairs[i].flow;
		}
	for (int i = 0; i < f->npairs; i++) {
		int a = f->pairs[i].a, b = f->pairs[i].b;
		hx_linkspec l;
		double t;
		if (!(f->pairs[i].flow > 0))
			continue;
		l = kv_link(x, a, b);
		t = kv_time_s(x, l.bw_gbps, l.latency_ms, scale * f->pairs[i].flow);
		if (a != b) {
			t = fmax(t, kv_time_s(x, c->nodes[a].nic_gbps, l.latency_ms,
					      scale * out[a]));
			t = fmax(
			    t, kv_time_s(x, c->nodes[b].nic_gbps, l.latency_ms, scale * in[b]));
		}
		worst = fmax(worst, t);
	}
	free(out);
	free(in);
	return worst;
}

/* The split search at X's reserve: for each cap on a unit's GPUs (the
 * shapes' sizes, smallest first; a big unit first could leave no GPU for
 * prefill), the greedy placement, each prefix of its units priced links
 * aside (the smaller of prefill and decode capacity); the best prefix of
 * each cap, when that beats BEST (the best flow so far) and the best flow
 * of this search, placed again and scored by its KV flow (aflow_solve,
 * not spread).  *MAXG and *K: the cap and unit count of the highest flow,
 * *V that flow (0: none carries traffic), *BOUND the highest value links
 * aside (no flow at this reserve is higher).  Returns the units placed in
 * all, or -1 when the solver fails (ERR). */
static long search_split(actx *x, int *units, int **refs, double best, int *maxg, int *k,
			 double *v, double *bound, hx_err *err)
{
	long tried = 0;

	*v = *bound = 0;
	*k = *maxg = 0;
	for (int g = 1; g <= 2 * HX_AFD_MAX_INSTANCES * 128; g++) {
		int any = 0, n, bk = 0, rc = 0;
		double bv = 0;
		place pl;
		aflow f;
		for (int i = 0; i < x->nsh && !any; i++)
			any = x->sh[i].gpus == g;
		if (!any)
			continue;
		if (*v > 0 && hx_past(x->stop)) { /* the caps left untried */
			x->cut = 1;
			break;
		}
		place_init(x, &pl);
		n = place_units(x, &pl, -1, g, units, refs, &bk, &bv);
		place_release(&pl);
		for (int u = 0; u < n; u++) {
			free(refs[u]);
			refs[u] = NULL;
		}
		tried += n;
		*bound = fmax(*bound, bv);
		if (!(bv > fmax(*v, best) * (1 + 1e-9)))
			continue;
		place_init(x, &pl);
		n = place_units(x, &pl, bk, g, units, refs, &bk, &bv);
		rc = aflow_solve(x, &pl, units, refs, n, 0, &f, err);
		place_release(&pl);
		for (int u = 0; u < n; u++) {
			free(refs[u]);
			refs[u] = NULL;
		}
		if (rc)
			return -1;
		if (f.value > *v * (1 + 1e-9)) {
			*v = f.value;
			*k = bk;
			*maxg = g;
		}
		aflow_release(&f);
	}
	return tried;
}

/* The TPOT (ms) of a replica of AFD group G at RATE requests/s: the step
 * at the batch b = rate * E[output] * step(b) (Little), by bisection. */
static double afd_tpot(const hx_plan *p, const hx_plan_group *g, const actx *x, double rate)
{
	double lo = 0, hi = g->afd.batch;
	hx_afd a;
	hx_afd_step st;

	if (hx_plan_afd_cost(p, g, &g->replicas[0], &a, NULL))
		return 0;
	for (int it = 0; it < 50; it++) {
		double mid = (lo + hi) / 2;
		hx_cost_afd(&a, fmax(mid, 1e-6), x->ctx, x->mem_util, &st);
		if (mid < rate * x->out_mean * st.step_s)
			lo = mid;
		else
			hi = mid;
	}
	hx_cost_afd(&a, fmax(hi, 1e-6), x->ctx, x->mem_util, &st);
	return st.step_s * 1e3;
}

/* P's predictions at the workload's rate (at capacity when above): the
 * capacity F's flow value; the TTFT the highest prefill replica's at the
 * rate its node's flow brings it plus the percentile prompt's KV transfer
 * over the slowest route F uses at that rate (kv_worst_s); the TPOT the
 * busiest unit's (unit u: P's group GOF[u]). */
static void predict(const actx *x, hx_plan *p, int npre, const int *node_of, const int *gof,
		    int nu, const aflow *f)
{
	const hx_workload *w = x->pb->workload;
	double cap = f->value, lambda = fmin(w->rate_rps, cap), ttft = 0, tpot = 0;
	double P = hx_dist_mean(&w->prompt), scale = cap > 0 ? lambda / cap : 0;

	for (int g = 0; g < npre; g++) {
		hx_plan_group *gp = &p->groups[g];
		hx_replica rep;
		hx_capacity c;
		hx_plan_replica_cost(p, gp, &gp->replicas[0], &rep, NULL);
		hx_cost_at_rate_phase(&rep, &x->wp, HX_SERVE_PREFILL,
				      scale * f->pin[node_of[g]] / gp->nreplicas, &c);
		if (isfinite(c.ttft_ms))
			ttft = fmax(ttft, c.ttft_ms);
	}
	if (ttft > 0)
		ttft += 1e3 * kv_worst_s(x, f, scale);
	for (int u = 0; u < nu; u++)
		tpot = fmax(tpot, afd_tpot(p, &p->groups[gof[u]], x, scale * f->unit[u]));
	p->predicted.capacity_rps = hx_round6(cap);
	p->predicted.throughput_tps = hx_round6(lambda * x->out_mean);
	p->predicted.ttft_ms_p99 = hx_round6(ttft);
	p->predicted.tpot_ms_p99 = hx_round6(tpot);
	p->predicted.usd_per_m_tokens =
	    hx_round6(hx_usd_per_mtok(p->predicted.usd_per_hour, lambda, P + x->out_mean));
}

static void actx_release(actx *x)
{
	free(x->type_node);
	free(x->node_type);
	free(x->type_gpus);
	free(x->type_maxn);
	free(x->link);
	free(x->pre_cap);
	free(x->sh);
}

/* The plan of X's first NU units of the search (UNITS, REFS) and the
 * prefill replicas of the GPUs they leave (PL) into P, its KV routes and
 * capacity the KV flow's (aflow_solve): prefill nodes and units the flow
 * leaves idle are left out. */
static int build(actx *x, place *pl, const int *units, int *const *refs, int nu, hx_plan *p,
		 hx_err *err)
{
	int n = x->c->nnodes, npre, rc, m = 0;
	int *node_of = hx_xcalloc((size_t)n + 1, sizeof(int));
	int *gof = hx_xcalloc((size_t)nu + 1, sizeof(int)),
	    *rof = hx_xcalloc((size_t)nu + 1, sizeof(int));
	int *un = hx_xcalloc((size_t)nu + 1, sizeof(int));
	int **rf = hx_xcalloc((size_t)nu + 1, sizeof(int *));
	double *cap;
	aflow f;

	if ((rc = aflow_solve(x, pl, units, refs, nu, 1, &f, err)))
		goto out;
	for (int i = 0; i < n; i++)
		if (!(f.pin[i] > 0))
			pl->pre_tp[i] = 0;
	for (int u = 0; u < nu; u++)
		if (f.unit[u] > 0) {
			un[m] = units[u];
			rf[m] = refs[u];
			f.unit[m++] = f.unit[u];
		}
	emit_prefill(x, pl, p, node_of);
	npre = p->ngroups;
	emit_units(x, un, rf, m, p, gof, rof);
	cap = hx_xcalloc((size_t)p->ngroups + 1, sizeof(double));
	for (int g = 0; g < p->ngroups; g++)
		cap[g] = p->groups[g].capacity_rps;
	emit_routes(x, p, npre, node_of, rf, m, gof, rof, &f);
	/* hx_plan_finish prices every group alone, the prefill groups at the
	 * whole TTFT SLO: they keep the search's capacities (the SLO less
	 * the transfer reserve), and the plan's capacity is the flow's. */
	if (!(rc = hx_plan_finish(x->pb, p, 0, err))) {
		for (int g = 0; g < p->ngroups; g++)
			p->groups[g].capacity_rps = cap[g];
		predict(x, p, npre, node_of, gof, m, &f);
	}
	free(cap);
	aflow_release(&f);
out:
	free(node_of);
	free(gof);
	free(rof);
	free(un);
	free(rf);
	return rc;
}

/* X priced at the transfer reserve R: prefill replicas at the TTFT SLO
 * less R (their cache cleared). */
static void set_reserve(actx *x, double R)
{
	x->reserve_s = R;
	x->wp = *x->pb->workload;
	x->wp.slo.ttft_ms -= 1e3 * R;
	for (int i = 0; i < x->ntype * NTP; i++)
		x->pre_cap[i] = -1;
}

/* X's inputs: the workload's figures, the GPU types and their links, the
 * unit shapes (priced until STOP once one is). */
static void actx_init(actx *x, const hx_problem *pb, double stop)
{
	const hx_workload *w = pb->workload;

	memset(x, 0, sizeof(*x));
	x->pb = pb;
	x->c = pb->cluster;
	x->stop = stop;
	x->ctx = ceil(hx_cost_decode_ctx(w));
	hx_cost_lens_of(w, &x->kl);
	x->mem_util = fmin(w->serving.mem_util, HX_VERIFY_MEM_UTIL);
	x->reserve = hx_plan_kv_reserve(w);
	x->out_mean = hx_dist_mean(&w->output);
	x->q_tokens = hx_dist_quantile(&w->prompt, w->slo.percentile / 100);
	x->kv_req_bytes =
	    hx_kv_bytes_per_token(pb->model, HX_DT_FP16) * hx_dist_mean(&w->prompt);
	x->wp = *w;
	types_init(x);
	x->pre_cap = hx_xmalloc((size_t)(x->ntype * NTP) * sizeof(double));
	enumerate(x);
}

int hx_plan_attn_ffn(const hx_problem *pb, const hx_plan_opts *o, hx_plan *p, hx_err *err)
{
	const double deadline = hx_deadline(o->time_limit_s);
	actx x;
	int total = hx_cluster_gpus(pb->cluster), nres, rc = 0, found = 0;
	long tried = 0;
	int *units = hx_xcalloc((size_t)total + 1, sizeof(int));
	int **refs = hx_xcalloc((size_t)total + 1, sizeof(int *));
	double best = 0, R[HX_KV_RESERVES];

	hx_plan_init(p);
	/* the unit shapes get an even share of the limit with the reserves */
	actx_init(&x, pb, deadline > 0 ? hx_now() + (deadline - hx_now()) / 2 : 0);
	if (x.nsh == 0) {
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "no attention/FFN unit of %s fits this cluster's GPUs and meets the TPOT SLO of %g ms (each side holding its weights, the attention side the KV of a request at the SLO percentile on each instance, a step of one sequence within the SLO; at most %d instances a side)",
		    pb->model->name, pb->workload->slo.tpot_ms, HX_AFD_MAX_INSTANCES);
		goto out;
	}
	if ((nres = hx_kv_reserves(pb, x.q_tokens, R)) == 0) {
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "the TTFT SLO (%g ms) leaves no time to send the KV cache of a %.0f-token prompt (the SLO's percentile) from prefill to decode: twice its time over the fastest link is longer",
		    pb->workload->slo.ttft_ms, x.q_tokens);
		goto out;
	}
	/* The TTFT SLO is shared by the prefill and the KV transfer, as in
	 * disagg: at each reserve (smallest first, each an even share of the
	 * time left) the split search prices prefill at the SLO less it, and
	 * the split it finds is scored by its KV flow, the links carrying what
	 * they send within it.  The search's own value (links aside) bounds
	 * the flow and falls as the reserve grows (less time for prefill):
	 * once it cannot beat the best flow no larger reserve can. */
	for (int r = 0; r < nres && rc == 0; r++) {
		double left = deadline > 0 ? deadline - hx_now() : 0, v, bound;
		long t;
		int maxg, k, nu;
		place pl;
		hx_plan q;
		if (deadline > 0 && left <= 0 && found) {
			x.cut = 1; /* reserves left untried */
			break;
		}
		set_reserve(&x, R[r]);
		x.stop = deadline > 0 ? hx_now() + left / (nres - r) : 0;
		if ((t = search_split(&x, units, refs, best, &maxg, &k, &v, &bound, err)) < 0) {
			rc = err && err->code ? err->code : HX_EINPUT;
			break;
		}
		tried += t;
		if (found && bound <= best * (1 + 1e-9))
			break;
		if (!(v > best * (1 + 1e-9)))
			continue;
		place_init(&x, &pl);
		nu = place_units(&x, &pl, k, maxg, units, refs, &k, &v);
		hx_plan_init(&q);
		strcpy(q.mode, "afd");
		rc = build(&x, &pl, units, refs, nu, &q, err);
		place_release(&pl);
		for (int u = 0; u < nu; u++) {
			free(refs[u]);
			refs[u] = NULL;
		}
		if (rc)
			break;
		if (q.predicted.capacity_rps > best * (1 + 1e-9)) {
			if (found)
				hx_plan_release(p);
			*p = q;
			best = q.predicted.capacity_rps;
			found = 1;
		} else {
			hx_plan_release(&q);
		}
	}
	if (rc)
		goto out;
	if (!found) {
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "no split of the cluster into attention/FFN decode units of %s and prefill replicas carries any traffic at the SLO: %s",
		    pb->model->name,
		    !tried
			? "no unit's GPUs are free together"
			: "the GPUs the units leave hold no prefill replica within the TTFT SLO less the time to send its KV to a unit");
		goto out;
	}
	hx_plan_solver_search(
	    p, "afd", x.cut ? "time_limit" : "heuristic", p->predicted.capacity_rps,
	    fmax(p->predicted.capacity_rps, x.sh[0].per_gpu * total), x.nsh, tried);
	if (!o->no_sim_check) { /* the simulator's check (DESIGN §8) */
		double rps = 0;
		hx_err e = {0};
		rc = hx_plan_sim_capacity(pb, p, deadline, &rps, &e);
		if (!rc)
			hx_plan_set_simulated(p, pb, "plan", hx_round6(rps), HX_CAP_REQUESTS);
		else if (rc == HX_ELIMIT)
			rc = 0; /* out of time (--time-limit): the plan, unchecked */
		else
			*err = e;
	}
out:
	free(units);
	free(refs);
	actx_release(&x);
	if (rc)
		hx_plan_release(p);
	return rc;
}
