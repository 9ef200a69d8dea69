/* candidates: see candidates.h. */
#include "config.h"

#include "planners/candidates.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_pow2(int x)
{
	return x > 0 && (x & (x - 1)) == 0;
}

static int has_own_link(const hx_cluster *c, int node)
{
	for (int i = 0; i < c->nlinks; i++)
		if (c->links[i].a == node || c->links[i].b == node)
			return 1;
	return 0;
}

static int same_class(const hx_cluster *c, int a, int b)
{
	const hx_node *x = &c->nodes[a], *y = &c->nodes[b];
	return memcmp(&x->gpu, &y->gpu, sizeof(hx_gpu)) == 0 && x->count == y->count &&
	       strcmp(x->region, y->region) == 0 && x->nic_gbps == y->nic_gbps &&
	       x->usd_per_hour == y->usd_per_hour && x->preempt_per_hour == y->preempt_per_hour;
}

static void make_classes(const hx_cluster *c, hx_candset *s)
{
	s->cls = hx_xcalloc((size_t)c->nnodes + 1, sizeof(hx_node_class));
	for (int i = 0; i < c->nnodes; i++) {
		int k, alone = !is_pow2(c->nodes[i].count) || has_own_link(c, i);
		for (k = 0; !alone && k < s->ncls; k++) {
			hx_node_class *cl = &s->cls[k];
			int first = cl->nodes[0];
			if (is_pow2(c->nodes[first].count) && !has_own_link(c, first) &&
			    same_class(c, first, i))
				break;
		}
		if (alone || k == s->ncls) {
			hx_node_class *cl = &s->cls[s->ncls++];
			cl->nodes = hx_xcalloc((size_t)c->nnodes, sizeof(int));
			cl->gpus_per_node = c->nodes[i].count;
			cl->gpu = &c->nodes[i].gpu;
			cl->usd_per_hour = c->nodes[i].usd_per_hour;
			cl->preempt_per_hour = c->nodes[i].preempt_per_hour;
			k = s->ncls - 1;
		}
		s->cls[k].nodes[s->cls[k].nnodes++] = i;
	}
}

void hx_candset_release(hx_candset *s)
{
	for (int k = 0; k < s->ncls; k++)
		free(s->cls[k].nodes);
	free(s->cls);
	free(s->c);
	memset(s, 0, sizeof(*s));
}

int hx_cand_use(const hx_candidate *c, int k)
{
	int n = 0;
	for (int i = 0; i < c->nstages; i++)
		if (c->st[i].cls == k)
			n += c->st[i].tp;
	return n;
}

void hx_cand_replica(const hx_problem *pb, const hx_candset *s, const hx_candidate *c,
		     hx_replica *out)
{
	memset(out, 0, sizeof(*out));
	out->model = pb->model;
	out->wdt = pb->model->a.dtype;
	out->kvdt = HX_DT_FP16;
	out->nstages = c->nstages;
	for (int i = 0; i < c->nstages; i++) {
		hx_stage *st = &out->stage[i];
		st->gpu = s->cls[c->st[i].cls].gpu;
		st->tp = c->st[i].tp;
		st->first = c->st[i].first;
		st->last = c->st[i].last;
		st->next_bw_gbps =
		    c->link[i].bw_gbps > 0 ? c->link[i].bw_gbps : HX_DEFAULT_NIC_GBPS;
		st->next_latency_ms = c->link[i].latency_ms;
		/* As the plan's stage is priced (hx_plan_replica_cost): on one
		 * node no NIC; over several, the placement's GPUs a node and
		 * the replica's tp_link (attention ranks stay in a node, so
		 * their all-reduces too). */
		st->ep = c->st[i].ep;
		st->dp = c->st[i].dp;
		st->redundant_experts = c->st[i].redundant;
		if (hx_stage_is_ep(st))
			st->micro_batches = 2;
		if (c->st[i].nic.bw_gbps > 0) {
			st->gpus_per_node = s->cls[c->st[i].cls].gpus_per_node;
			st->nic_gbps = c->st[i].nic.bw_gbps;
			st->nic_latency_us = c->st[i].nic.latency_ms * 1e3;
		}
	}
}

/* Price candidate C: memory with the KV reserve, then capacity. */
static int price(const hx_problem *pb, const hx_candset *s, hx_candidate *c)
{
	hx_replica r;
	hx_memory m;
	hx_capacity cap;

	hx_cand_replica(pb, s, c, &r);
	if (hx_replica_check(&r, NULL))
		return 0;
	hx_cost_memory(&r, pb->workload->serving.mem_util, &m);
	/* The long request is one attention rank's. */
	if (!m.fits ||
	    m.kv_tokens / hx_stage_dp(&r.stage[0]) < hx_plan_kv_reserve(pb->workload))
		return 0;
	hx_cost_capacity(&r, pb->workload, &cap);
	if (cap.rps <= 0)
		return 0;
	c->capacity_rps = cap.rps;
	c->ttft_ms = cap.ttft_ms;
	c->gpus = 0;
	c->usd_per_hour = 0;
	for (int i = 0; i < c->nstages; i++) {
		c->gpus += c->st[i].tp;
		c->usd_per_hour += c->st[i].tp * s->cls[c->st[i].cls].usd_per_hour;
	}
	return 1;
}

static void push(hx_candset *s, const hx_candidate *c, int *cap)
{
	if (s->n == *cap) {
		*cap = *cap ? 2 * *cap : 64;
		s->c = hx_xrealloc(s->c, (size_t)*cap * sizeof(hx_candidate));
	}
	s->c[s->n++] = *c;
}

/* Per-layer time of one stage shape at a representative mixed batch: what
 * the layer split weighs stages by. */
static double layer_time(const hx_problem *pb, const hx_gpu *g, int tp)
{
	hx_replica r;
	hx_batch b = {0};
	double P = hx_dist_mean(&pb->workload->prompt), O = hx_dist_mean(&pb->workload->output);

	memset(&r, 0, sizeof(r));
	r.model = pb->model;
	r.wdt = pb->model->a.dtype;
	r.kvdt = HX_DT_FP16;
	r.nstages = 1;
	r.stage[0] = (hx_stage){g, tp, 0, pb->model->a.layers, 0, 0, 100, 0};
	hx_batch_add_decode(&b, 32, P + O / 2);
	hx_batch_add_prefill(&b, 1, 512, 0);
	return hx_cost_layer(&r, &r.stage[0], pb->model->a.layers - 1, &b, NULL);
}

/* The most layers a stage of TP GPUs of type G can hold with the KV
 * reserve; FIRST/LAST: it also holds the embedding / the output head. */
static int max_layers(const hx_problem *pb, const hx_gpu *g, int tp, int first, int last)
{
	const hx_arch *a = &pb->model->a;
	double wb = hx_dtype_bytes(a->dtype), h = a->hidden;
	double free_b = g->mem_gib * HX_GIB * pb->workload->serving.mem_util -
			g->runtime_reserve_gib * HX_GIB;
	double per_layer = hx_layer_params(a, a->layers - 1) * wb / tp +
			   hx_plan_kv_reserve(pb->workload) *
			       hx_kv_bytes_token_layer_gpu(pb->model, tp, HX_DT_FP16);

	if (first)
		free_b -= ((double)a->vocab / tp + a->learned_pos) * h * wb;
	if (last)
		free_b -= (double)a->vocab / tp * h * wb;
	return free_b > 0 ? (int)floor(free_b / per_layer) : 0;
}

/* Split L layers over N stages in proportion to SPEED, each within CAP
 * (water-filling), rounded by largest remainders.  0 when they cannot. */
static int split_layers(int L, int n, const double *speed, const int *cap, int *out)
{
	double share[HX_CAND_MAX_STAGES], rem[HX_CAND_MAX_STAGES];
	int fixed[HX_CAND_MAX_STAGES] = {0}, total = 0, left = L;

	for (int i = 0; i < n; i++)
		total += cap[i];
	if (total < L)
		return 0;
	for (;;) {
		double sp = 0;
		int changed = 0;
		for (int i = 0; i < n; i++)
			if (!fixed[i])
				sp += speed[i];
		for (int i = 0; i < n; i++) {
			if (fixed[i])
				continue;
			share[i] = left * speed[i] / sp;
			if (share[i] > cap[i]) {
				share[i] = cap[i];
				fixed[i] = 1;
				left -= cap[i];
				changed = 1;
			}
		}
		if (!changed)
			break;
	}
	total = 0;
	for (int i = 0; i < n; i++) {
		out[i] = (int)floor(share[i]);
		rem[i] = share[i] - out[i];
		total += out[i];
	}
	while (total < L) {
		int best = -1;
		for (int i = 0; i < n; i++)
			if (out[i] < cap[i] && (best < 0 || rem[i] > rem[best]))
				best = i;
		if (best < 0)
			return 0;
		out[best]++;
		rem[best] = -1;
		total++;
	}
	for (int i = 0; i < n; i++)
		if (out[i] < 1)
			return 0;
	return 1;
}

static hx_linkspec class_link(const hx_problem *pb, const hx_candset *s, int a, int b)
{
	const hx_cluster *c = pb->cluster;
	int na = s->cls[a].nodes[0], nb = s->cls[b].nodes[0];

	if (na == nb && s->cls[a].nnodes > 1)
		nb = s->cls[a].nodes[1];
	if (na == nb) { /* one node: stages talk over its own link */
		return hx_gpu_own_link(s->cls[a].gpu);
	}
	return hx_cluster_link(c, na, nb);
}

/* Pipelines over the stage shapes SH (class, tp) taken as multisets. */
static void pipelines(const hx_problem *pb, hx_candset *s, const int (*sh)[2], int nsh,
		      const int *alone, int max_stages, double deadline, int *cap)
{
	int idx[HX_CAND_MAX_STAGES];
	const int L = pb->model->a.layers;

	if (nsh == 0) /* no node takes a stage (e.g. none has a free GPU) */
		return;
	for (int n = 2; n <= max_stages; n++) {
		for (int i = 0; i < n; i++)
			idx[i] = 0;
		for (;;) {
			int ok = 0, need[64] = {0};
			/* Not when every stage holds the model alone: separate
			 * replicas serve better than a pipeline of them. */
			for (int i = 0; i < n; i++)
				ok |= !alone[idx[i]];
			for (int i = 0; ok && i < n; i++) {
				int k = sh[idx[i]][0];
				if (k < 64) {
					need[k] += sh[idx[i]][1];
					if (need[k] >
					    s->cls[k].nnodes * s->cls[k].gpus_per_node)
						ok = 0;
				}
			}
			if (ok) {
				hx_candidate c;
				double speed[HX_CAND_MAX_STAGES];
				int capl[HX_CAND_MAX_STAGES], lay[HX_CAND_MAX_STAGES],
				    first = 0;
				memset(&c, 0, sizeof(c));
				c.nstages = n;
				for (int i = 0; i < n; i++) {
					const hx_node_class *cl = &s->cls[sh[idx[i]][0]];
					speed[i] = 1 / layer_time(pb, cl->gpu, sh[idx[i]][1]);
					capl[i] = max_layers(pb, cl->gpu, sh[idx[i]][1], i == 0,
							     i == n - 1);
				}
				if (hx_past(deadline)) {
					s->cut = 1;
					return;
				}
				if (split_layers(L, n, speed, capl, lay)) {
					for (int i = 0; i < n; i++) {
						c.st[i] = (hx_cand_stage){sh[idx[i]][0],
									  sh[idx[i]][1], first,
									  first + lay[i]};
						first += lay[i];
						if (i + 1 < n)
							c.link[i] =
							    class_link(pb, s, sh[idx[i]][0],
								       sh[idx[i + 1]][0]);
					}
					s->considered++;
					if (price(pb, s, &c))
						push(s, &c, cap);
				}
			}
			/* next multiset (non-decreasing indexes) */
			{
				int i = n - 1;
				while (i >= 0 && idx[i] == nsh - 1)
					i--;
				if (i < 0)
					break;
				idx[i]++;
				for (int j = i + 1; j < n; j++)
					idx[j] = idx[i];
			}
		}
	}
}

/* Price the one-stage EP shape of class K over TP GPUs with DP attention
 * ranks (0: off) and the all-to-all link NIC (bw 0: one node) into S.  0
 * when DEADLINE passed (S->cut set). */
static int ep_shape(const hx_problem *pb, hx_candset *s, int k, int tp, int dp, hx_linkspec nic,
		    int redundant, double deadline, int *cap)
{
	hx_candidate c;

	if (hx_past(deadline)) {
		s->cut = 1;
		return 0;
	}
	memset(&c, 0, sizeof(c));
	c.nstages = 1;
	c.st[0] =
	    (hx_cand_stage){k, tp, 0, pb->model->a.layers, tp, dp > 1 ? dp : 0, nic, redundant};
	s->considered++;
	if (price(pb, s, &c))
		push(s, &c, cap);
	return 1;
}

/* The best capacity per GPU among S's shapes from index FROM on (0: none). */
static double best_per_gpu(const hx_candset *s, int from)
{
	double best = 0;

	for (int i = from; i < s->n; i++)
		best = fmax(best, s->c[i].capacity_rps / s->c[i].gpus);
	return best;
}

/* The multi-node EP shapes of class K over N whole nodes (ep = tp = every
 * GPU) into S, with REDUNDANT experts: each attention TP dividing the node
 * and the heads (an attention rank in one node, as the engines start
 * them), the all-to-all over NIC.  0: the deadline passed. */
static int ep_nodes(const hx_problem *pb, hx_candset *s, int k, int n, hx_linkspec nic,
		    int redundant, double deadline, int *cap)
{
	int gpn = s->cls[k].gpus_per_node, tp = n * gpn;

	for (int atp = 1; atp <= gpn; atp *= 2)
		if (pb->model->a.heads % atp == 0 &&
		    !ep_shape(pb, s, k, tp, tp / atp, nic, redundant, deadline, cap))
			return 0;
	return 1;
}

/* The EP shapes of class K into S (none for a dense model): on one node,
 * ep = tp over TP GPUs dividing the node and the experts, each DP that
 * divides tp with attention TP dividing the heads; then over 2, 4, ...
 * whole nodes (a power-of-two node size), ep = tp = every GPU dividing
 * the experts (ep_nodes).  The nodes double while the best of the wider
 * shapes carries more per GPU than the best so far.  Then, when the class
 * has more nodes than the last power of two tried (and at most
 * HX_CAND_EP_MAX_NODES), over all of them, with the fewest redundant
 * experts that make ep divide the experts plus them (EPLB's replicas, as
 * DeepSeek's 9-node decode runs 256 + 32 experts on EP 72): a class of 3
 * or 5 nodes is otherwise left partly idle by a model that needs more
 * than one node. */
static void ep_shapes(const hx_problem *pb, hx_candset *s, int k, double deadline, int *cap)
{
	const hx_arch *a = &pb->model->a;
	const hx_node_class *cl = &s->cls[k];
	const int gpn = cl->gpus_per_node;
	hx_linkspec none = {0, 0}, nic;
	double best;
	int from = s->n, n;

	if (a->experts <= 1)
		return;
	for (int tp = 2; tp <= gpn; tp++) {
		if (gpn % tp || a->experts % tp)
			continue;
		for (int dp = 1; dp <= tp; dp++)
			if (tp % dp == 0 && a->heads % (tp / dp) == 0 &&
			    !ep_shape(pb, s, k, tp, dp, none, 0, deadline, cap))
				return;
	}
	if (cl->nnodes < 2 || !is_pow2(gpn))
		return;
	nic = hx_cluster_nic_link(pb->cluster, cl->nodes[0], cl->nodes[1]);
	best = best_per_gpu(s, from);
	for (n = 2; n <= cl->nnodes && n <= HX_CAND_EP_MAX_NODES; n *= 2) {
		int tp = n * gpn, at = s->n;
		double got;
		if (a->experts % tp)
			return;
		if (!ep_nodes(pb, s, k, n, nic, 0, deadline, cap))
			return;
		got = best_per_gpu(s, at);
		if (!(got > best))
			return; /* wider shapes stopped paying */
		best = got;
	}
	/* All the class's nodes, between the last power of two and the next. */
	if (n > cl->nnodes && cl->nnodes > n / 2 && cl->nnodes <= HX_CAND_EP_MAX_NODES) {
		int tp = cl->nnodes * gpn, r = (tp - a->experts % tp) % tp;
		if (r < a->experts)
			ep_nodes(pb, s, k, cl->nnodes, nic, r, deadline, cap);
	}
}

/* A is dominated by B when A's GPUs could hold k copies of B (k >= 1)
 * with at least A's capacity. */
static int dominated(const hx_candset *s, const hx_candidate *a, const hx_candidate *b)
{
	for (int k = 1; k * b->gpus <= a->gpus; k++) {
		int fits = 1;
		for (int c = 0; c < s->ncls && fits; c++)
			fits = k * hx_cand_use(b, c) <= hx_cand_use(a, c);
		if (fits && k * b->capacity_rps >= a->capacity_rps)
			return 1;
	}
	return 0;
}

int hx_candidates(const hx_problem *pb, const hx_cand_opts *o, hx_candset *s, hx_err *err)
{
	const int heads = pb->model->a.heads;
	int cap = 0, (*sh)[2] = NULL, nsh = 0, *alone = NULL;
	int max_stages = o && o->max_stages > 0 ? o->max_stages : 3;
	double deadline = o ? o->deadline : 0;
	char *drop;

	(void)err;
	memset(s, 0, sizeof(*s));
	if (max_stages > HX_CAND_MAX_STAGES)
		max_stages = HX_CAND_MAX_STAGES;
	make_classes(pb->cluster, s);
	sh = hx_xcalloc((size_t)s->ncls + 1, sizeof(*sh));
	alone = hx_xcalloc((size_t)s->ncls + 1, sizeof(int));
	for (int k = 0; k < s->ncls; k++) {
		const hx_node_class *cl = &s->cls[k];
		int widest = 0;
		for (int tp = 1; tp <= cl->gpus_per_node; tp++) {
			hx_candidate c;
			if (cl->gpus_per_node % tp || heads % tp)
				continue;
			if (hx_past(deadline)) {
				s->cut = 1;
				break;
			}
			widest = tp;
			memset(&c, 0, sizeof(c));
			c.nstages = 1;
			c.st[0] = (hx_cand_stage){k, tp, 0, pb->model->a.layers};
			s->considered++;
			if (price(pb, s, &c))
				push(s, &c, &cap);
		}
		/* Pipelines take whole nodes (the widest TP a node allows). */
		if (widest > 0 && !s->cut) {
			hx_candidate c;
			memset(&c, 0, sizeof(c));
			c.nstages = 1;
			c.st[0] = (hx_cand_stage){k, widest, 0, pb->model->a.layers};
			alone[nsh] = price(pb, s, &c);
			sh[nsh][0] = k;
			sh[nsh][1] = widest;
			nsh++;
		}
		if (o && o->ep && !s->cut)
			ep_shapes(pb, s, k, deadline, &cap);
	}
	if (!s->cut)
		pipelines(pb, s, (const int(*)[2])sh, nsh, alone, max_stages, deadline, &cap);
	free(sh);
	free(alone);
	/* Drop dominated shapes. */
	drop = hx_xcalloc((size_t)s->n + 1, 1);
	for (int i = 0; i < s->n; i++)
		for (int j = 0; j < s->n && !drop[i]; j++)
			if (i != j && !drop[j] && dominated(s, &s->c[i], &s->c[j]) &&
			    !(dominated(s, &s->c[j], &s->c[i]) && j > i))
				drop[i] = 1;
	{
		int k = 0;
		for (int i = 0; i < s->n; i++)
			if (!drop[i])
				s->c[k++] = s->c[i];
		s->pruned = s->n - k;
		s->n = k;
	}
	free(drop);
	return 0;
}

/* TP GPUs of class K on its first node with that many free into REFS;
 * that node.  Packing is exact, so there is one. */
static int place_one(const hx_cluster *cl, const hx_node_class *k, int tp, int *free_gpus,
		     int *next, hx_gpu_ref *refs)
{
	int at = -1;

	for (int j = 0; j < k->nnodes && at < 0; j++)
		if (free_gpus[k->nodes[j]] >= tp)
			at = k->nodes[j];
	if (at < 0)
		at = k->nodes[0]; /* cannot happen: packing is exact */
	for (int t = 0; t < tp; t++) {
		hx_strlcpy(refs[t].node, cl->nodes[at].name, sizeof(refs[t].node));
		refs[t].index = next[at] + t;
	}
	next[at] += tp;
	free_gpus[at] -= tp;
	return at;
}

/* TP GPUs of class K, whole free nodes of it in order, into REFS (a
 * multi-node EP stage; placed first, the widest, so the nodes are free). */
static void place_nodes(const hx_cluster *cl, const hx_node_class *k, int tp, int *free_gpus,
			int *next, hx_gpu_ref *refs)
{
	int t = 0, gpn = k->gpus_per_node;

	for (int j = 0; j < k->nnodes && t < tp; j++) {
		int at = k->nodes[j];
		if (free_gpus[at] < gpn)
			continue;
		for (int g = 0; g < gpn; g++, t++) {
			hx_strlcpy(refs[t].node, cl->nodes[at].name, sizeof(refs[t].node));
			refs[t].index = next[at] + g;
		}
		next[at] += gpn;
		free_gpus[at] = 0;
	}
}

/* Place N replicas of candidate C on the classes' nodes (FREE: GPUs left
 * per node, NEXT: next free index per node) as a new group. */
void hx_cand_place(const hx_problem *pb, const hx_candset *s, const hx_candidate *c, int n,
		   int *free_gpus, int *next, hx_plan *p)
{
	hx_plan_group *g = hx_plan_add_group(p);
	const hx_cluster *cl = pb->cluster;

	snprintf(g->name, sizeof(g->name), "g%d", p->ngroups - 1);
	hx_strlcpy(g->model, pb->model->name, sizeof(g->model));
	g->role = HX_ROLE_AGGREGATED;
	g->wdt = pb->model->a.dtype;
	g->kvdt = HX_DT_FP16;
	hx_plan_group_stages(g, c->nstages);
	for (int i = 0; i < c->nstages; i++) {
		hx_strlcpy(g->stage[i].gpu, s->cls[c->st[i].cls].gpu->name,
			   sizeof(g->stage[i].gpu));
		g->stage[i].tp = c->st[i].tp;
		g->stage[i].first = c->st[i].first;
		g->stage[i].last = c->st[i].last;
		g->stage[i].ep = c->st[i].ep;
		g->stage[i].dp = c->st[i].dp;
		g->stage[i].redundant_experts = c->st[i].redundant;
		g->stage[i].cross_node = c->st[i].nic.bw_gbps > 0;
	}
	for (int r = 0; r < n; r++) {
		hx_plan_replica *rep = hx_plan_add_replica(g);
		int node[HX_CAND_MAX_STAGES];
		char id[128];
		snprintf(id, sizeof(id), "%sr%d", g->name, r);
		hx_strlcpy(rep->id, id, sizeof(rep->id));
		for (int i = 0; i < c->nstages; i++) {
			const hx_node_class *k = &s->cls[c->st[i].cls];
			int tp = c->st[i].tp;
			rep->ngpus[i] = tp;
			rep->gpus[i] = hx_xcalloc((size_t)tp, sizeof(hx_gpu_ref));
			if (c->st[i].nic.bw_gbps > 0) {
				place_nodes(cl, k, tp, free_gpus, next, rep->gpus[i]);
				rep->tp_link[i] = c->st[i].nic;
				node[i] = -1;
				continue;
			}
			node[i] = place_one(cl, k, tp, free_gpus, next, rep->gpus[i]);
		}
		for (int i = 0; i + 1 < c->nstages; i++) {
			if (node[i] < 0 || node[i + 1] < 0) /* no pipeline of EP stages */
				rep->link[i] = c->link[i];
			else if (node[i] == node[i + 1]) {
				rep->link[i] = hx_gpu_own_link(&cl->nodes[node[i]].gpu);
			} else {
				rep->link[i] = hx_cluster_link(cl, node[i], node[i + 1]);
			}
		}
	}
}
