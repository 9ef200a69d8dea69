/*
 * plan_pipeline: layers of one model across many loosely connected nodes
 * (Helix, ASPLOS'25; Parallax; DESIGN §6).  Every node serves one contiguous
 * layer range with all its GPUs as one TP group; requests flow node to node.
 *
 * Node capacity for k layers (generated tokens/s) comes from the cost model:
 * in steady state an iteration of a node carries b decoding sequences (at the
 * capacity rule's mean context, hx_cost_decode_ctx: P + E[O^2]/2E[O],
 * length-biased) and the prompt tokens they amortize (b/O prompts of P
 * tokens, P and O the workload's mean lengths), so its time is T(b) = k
 * layers of that batch + the GPU's iteration overhead.  b is the largest
 * batch that (a) fits the KV cache left after the node's weights (P + O
 * tokens per sequence), (b) is at most the engine's max_seqs, and (c) keeps
 * T(b) within the node's share of the TPOT SLO, tpot * k / L, so that a
 * path's iteration times add up to at most the SLO.  Capacity = min(b / T(b),
 * NIC bandwidth / activation bytes per generated token), activations being
 * hidden * 2 bytes for each generated token and each prompt token it
 * amortizes.  A node may hold k layers when weights + reserve + the
 * workload's KV reserve fit (with the embedding when it holds layer 0, the
 * head when it holds the last).
 *
 * A placement is scored by the max-flow of the node-split graph (pipeline.h).
 * Search: four constructions (separate pipelines per GPU type; balanced
 * pipelines for every pipeline count, Parallax-style, with water-filled
 * splits; a greedy fill by speed; Swarm-style stages), then a seeded local
 * search scored by max-flow from the best of them (stages, and the search
 * from the two best, with --objective throughput only; see search()): move
 * a shared boundary, resize a range, re-home a node after another, copy
 * another node's range, swap two nodes, drop a node; bounded by a number
 * of flow evaluations; --time-limit stops it early (solver.status
 * time_limit).  Bound: sum_i max_k k thr_i(k) / L.
 *
 * This file prices the nodes, computes a placement's flow and runs the
 * planner; pipeline_search.c has the constructions and the local search,
 * pipeline_emit.c turns the chosen placement into a plan (their context:
 * pipeline_int.h).
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/flow.h"
#include "planners/pipeline_int.h"

/* ---- max-flow of a placement ----------------------------------------------- */

/* Tokens/s over NET's link I -> J: its table, else its function. */
static double net_link_tps(const hx_pipe_net *net, int i, int j)
{
	return net->link_tps ? net->link_tps[(size_t)i * net->n + j]
			     : net->link_at(net->link_ctx, i, j);
}

int hx_pipe_flow_eval(const hx_pipe_net *net, const int *first, const int *last,
		      hx_pipe_flow *f, hx_err *err)
{
	int n = net->n, L = net->layers, rc;
	int *through_e = hx_xmalloc((size_t)(n + 1) * sizeof(int));
	int *src_e = hx_xmalloc((size_t)(n + 1) * sizeof(int));
	int *hop_e = NULL, nhop = 0, *hop_from = NULL, *hop_to = NULL;
	int **by_first = hx_xcalloc((size_t)L + 1, sizeof(int *)),
	    *nby = hx_xcalloc((size_t)L + 1, sizeof(int));
	hx_graph g;
	hx_flow_result res;
	double inf = 1;

	/* "Unbounded" source and sink edges: more than every node together
	 * carries (a huge constant would swallow the flows' digits in
	 * push-relabel's excess arithmetic). */
	for (int i = 0; i < n; i++)
		inf += fmax(net->node_tps[i], 0);
	memset(f, 0, sizeof(*f));
	f->through = hx_xcalloc((size_t)n + 1, sizeof(double));
	f->src = hx_xcalloc((size_t)n + 1, sizeof(double));
	for (int i = 0; i < n; i++)
		if (first[i] >= 0 && first[i] < last[i] && last[i] <= L) {
			by_first[first[i]] = hx_xrealloc(
			    by_first[first[i]], (size_t)(nby[first[i]] + 1) * sizeof(int));
			by_first[first[i]][nby[first[i]]++] = i;
		}
	/* vertices: 0 source, 1 sink, in(i) = 2 + 2i, out(i) = 3 + 2i */
	hx_graph_init(&g, 2 + 2 * n);
	for (int i = 0; i < n; i++) {
		through_e[i] = src_e[i] = -1;
		if (!(first[i] >= 0 && first[i] < last[i] && last[i] <= L))
			continue;
		through_e[i] =
		    hx_graph_add_edge(&g, 2 + 2 * i, 3 + 2 * i, fmax(net->node_tps[i], 0));
		if (first[i] == 0)
			src_e[i] = hx_graph_add_edge(&g, 0, 2 + 2 * i, inf);
		if (last[i] == L)
			hx_graph_add_edge(&g, 3 + 2 * i, 1, inf);
		else
			for (int k = 0; k < (net->overlap ? n : nby[last[i]]); k++) {
				int j = net->overlap ? k : by_first[last[i]][k];
				if (net->overlap &&
				    (j == i || first[j] < 0 || first[j] > last[i] ||
				     last[j] <= last[i] || last[j] > L))
					continue;
				hop_e = hx_xrealloc(hop_e, (size_t)(nhop + 1) * sizeof(int));
				hop_from =
				    hx_xrealloc(hop_from, (size_t)(nhop + 1) * sizeof(int));
				hop_to = hx_xrealloc(hop_to, (size_t)(nhop + 1) * sizeof(int));
				hop_e[nhop] = hx_graph_add_edge(
				    &g, 3 + 2 * i, 2 + 2 * j, fmax(net_link_tps(net, i, j), 0));
				hop_from[nhop] = i;
				hop_to[nhop++] = j;
			}
	}
	rc = hx_flow_max(&g, 0, 1, &res, err);
	if (rc == 0) {
		f->value = res.value;
		for (int i = 0; i < n; i++) {
			if (through_e[i] >= 0)
				f->through[i] = res.flow[through_e[i]];
			if (src_e[i] >= 0)
				f->src[i] = res.flow[src_e[i]];
		}
		f->hop = hx_xcalloc((size_t)nhop + 1, sizeof(double));
		for (int h = 0; h < nhop; h++)
			f->hop[h] = res.flow[hop_e[h]];
		f->nhop = nhop;
		f->hop_from = hop_from;
		f->hop_to = hop_to;
		hop_from = hop_to = NULL;
	}
	hx_flow_result_release(&res);
	hx_graph_release(&g);
	for (int l = 0; l <= L; l++)
		free(by_first[l]);
	free(by_first);
	free(nby);
	free(hop_e);
	free(hop_from);
	free(hop_to);
	free(src_e);
	free(through_e);
	if (rc)
		hx_pipe_flow_release(f);
	return rc;
}

void hx_pipe_flow_release(hx_pipe_flow *f)
{
	free(f->through);
	free(f->src);
	free(f->hop);
	free(f->hop_from);
	free(f->hop_to);
	memset(f, 0, sizeof(*f));
}

/* Seconds of one layer for TOKENS from the rows of (GPU, TP, PHASE), by
 * linear interpolation in tokens (and extrapolation along the nearest
 * segment, never below 0); -1 when the table has no such rows. */
static double table_layer_s(const hx_layer_cost *lc, int nlc, const char *gpu, int tp,
			    int phase, double tokens)
{
	int lo = -1, hi = -1, n = 0, lo2 = -1, hi2 = -1;

	for (int i = 0; i < nlc; i++) {
		const hx_layer_cost *x = &lc[i];
		if (strcmp(x->gpu, gpu) != 0 || x->tp != tp || x->phase != phase)
			continue;
		n++;
		if (x->tokens <= tokens && (lo < 0 || x->tokens > lc[lo].tokens))
			lo = i;
		if (x->tokens >= tokens && (hi < 0 || x->tokens < lc[hi].tokens))
			hi = i;
	}
	if (n == 0)
		return -1;
	if (lo >= 0 && hi >= 0) {
		if (lc[hi].tokens == lc[lo].tokens)
			return lc[lo].ms * 1e-3;
		return (lc[lo].ms + (lc[hi].ms - lc[lo].ms) * (tokens - lc[lo].tokens) /
					(lc[hi].tokens - lc[lo].tokens)) *
		       1e-3;
	}
	if (n == 1)
		return lc[lo >= 0 ? lo : hi].ms * 1e-3;
	/* outside the rows: the segment of the two nearest */
	for (int i = 0; i < nlc; i++) {
		const hx_layer_cost *x = &lc[i];
		double d;
		if (strcmp(x->gpu, gpu) != 0 || x->tp != tp || x->phase != phase)
			continue;
		d = fabs(x->tokens - tokens);
		if (lo2 < 0 || d < fabs(lc[lo2].tokens - tokens)) {
			hi2 = lo2;
			lo2 = i;
		} else if (hi2 < 0 || d < fabs(lc[hi2].tokens - tokens)) {
			hi2 = i;
		}
	}
	return fmax(0, (lc[lo2].ms + (lc[hi2].ms - lc[lo2].ms) * (tokens - lc[lo2].tokens) /
					 (lc[hi2].tokens - lc[lo2].tokens)) *
			   1e-3);
}

/* ---- node tables ------------------------------------------------------------ */

/* A replica view of TP GPUs of G holding [f, f + k) (padded, see
 * hx_plan_fragment_cost); returns the index of that stage. */
static int view(const pctx *c, const hx_gpu *g, int tp, int f, int k, hx_replica *r)
{
	const hx_model *m = c->pb->model;
	int s = 0;

	memset(r, 0, sizeof(*r));
	r->model = m;
	r->wdt = m->a.dtype;
	r->kvdt = HX_DT_FP16;
	if (f > 0)
		r->stage[s++] = (hx_stage){g, tp, 0, f, 0, 0, 100, 0};
	r->stage[s++] = (hx_stage){g, tp, f, f + k, 0, 0, 100, 0};
	if (f + k < c->L)
		r->stage[s++] = (hx_stage){g, tp, f + k, c->L, 0, 0, 100, 0};
	r->nstages = s;
	return f > 0;
}

static double kv_reserve(const pctx *c)
{
	return hx_plan_kv_reserve(c->pb->workload);
}

/* KV tokens a node of type T holds with [f, f + k); < 0: weights do not fit. */
static double kv_tokens(const pctx *c, const ntype *t, int f, int k)
{
	hx_replica r;
	hx_memory mem;
	int si = view(c, &t->proto->gpu, t->tp, f, k, &r);

	hx_cost_memory(&r, c->pb->workload->serving.mem_util, &mem);
	if (mem.st[si].kv_b < 0 || mem.st[si].weights_b > c->wfrac * mem.st[si].capacity_b)
		return -1;
	return mem.st[si].kv_tokens;
}

static int pick_tp(const hx_node *nd, int heads)
{
	for (int tp = nd->count; tp > 1; tp--)
		if (nd->count % tp == 0 && heads % tp == 0)
			return tp;
	return 1;
}

/* Seconds of one layer (index F) of node type T on a batch of DEC decoding
 * sequences at context CTX and PRE prompts of PTOK tokens each: measured
 * (--layer-costs) where the table has the node's GPU and TP for a phase,
 * else the cost model. */
static double layer_time(const pctx *c, const ntype *t, const hx_replica *r, int si, int f,
			 double dec, double ctx, double pre, double ptok)
{
	double td = -1, tpre = -1, s = 0;
	hx_batch b = {0};

	if (c->lc) {
		if (dec > 0)
			td = table_layer_s(c->lc, c->nlc, t->proto->gpu.name, t->tp,
					   HX_LC_DECODE, dec);
		if (pre > 0)
			tpre = table_layer_s(c->lc, c->nlc, t->proto->gpu.name, t->tp,
					     HX_LC_PREFILL, pre * ptok);
	}
	if (dec > 0 && td < 0)
		hx_batch_add_decode(&b, dec, ctx);
	if (pre > 0 && tpre < 0)
		hx_batch_add_prefill(&b, pre, ptok, 0);
	if (b.decode_seqs > 0 || b.prefill_tokens > 0)
		s = hx_cost_layer(r, &r->stage[si], f, &b, NULL);
	return s + fmax(td, 0) + fmax(tpre, 0);
}

static void price_type(pctx *c, ntype *t)
{
	const hx_workload *w = c->pb->workload;
	double P = hx_dist_mean(&w->prompt), O = hx_dist_mean(&w->output);
	double Pq = hx_dist_quantile(&w->prompt, w->slo.percentile / 100);
	/* the batch's mean context by the capacity rule's (length-biased) */
	double ctx = hx_cost_decode_ctx(w);
	double nic = hx_gbps_bytes_s(t->proto->nic_gbps) / c->tok_bytes;
	int L = c->L;

	t->tp = pick_tp(t->proto, c->pb->model->a.heads);
	t->thr = hx_xcalloc((size_t)L + 1, sizeof(double));
	t->iter_s = hx_xcalloc((size_t)L + 1, sizeof(double));
	t->pre_s = hx_xcalloc((size_t)L + 1, sizeof(double));
	t->batch = hx_xcalloc((size_t)L + 1, sizeof(double));
	t->kvseq = hx_xcalloc((size_t)L + 1, sizeof(double));
	for (int pos = 0; pos < 4; pos++) {
		t->kmax[pos] = 0;
		for (int k = 1; k <= L; k++) {
			int f = (pos & 1) ? 0 : (pos & 2) ? L - k : 1;
			if (f < 0 || (!(pos & 1) && f == 0) || (!(pos & 2) && f + k >= L) ||
			    ((pos & 1) && (pos & 2) && k != L))
				continue;
			if (kv_tokens(c, t, f, k) < kv_reserve(c))
				break;
			t->kmax[pos] = k;
		}
	}
	for (int k = 1; k <= L; k++) {
		int f = k <= L - 2 ? 1 : 0, si, lo, hi;
		hx_replica r;
		double kv, budget = c->throughput ? INFINITY : w->slo.tpot_ms * 1e-3 * k / L,
			   over = t->proto->gpu.iter_overhead_ms * 1e-3;

		if (k > t->kmax[0] && k > t->kmax[1] && k > t->kmax[2] && k > t->kmax[3])
			break;
		si = view(c, &t->proto->gpu, t->tp, f, k, &r);
		kv = fmax(kv_tokens(c, t, f, k), 0);
		t->kvseq[k] = floor(kv / (P + O));
		/* the largest batch within KV, max_seqs and the TPOT share.
		 * Little's law: a sequence holds its KV here for the whole
		 * path round trip but is in this node's batch for k / L of it
		 * (HX_PIPE_WAIT iterations per visit, paths of like nodes), so
		 * KV for N sequences carries a batch of N k / (L WAIT). */
		hi = (int)fmin(floor(floor(kv / (P + O)) * k / (L * HX_PIPE_WAIT)),
			       w->serving.max_seqs);
		lo = 0;
		while (lo < hi) {
			int mid = (lo + hi + 1) / 2;
			double T = k * layer_time(c, t, &r, si, f, mid, ctx, mid / O, P) + over;
			if (HX_PIPE_WAIT * T <= budget)
				lo = mid;
			else
				hi = mid - 1;
		}
		t->pre_s[k] = k * layer_time(c, t, &r, si, f, 0, 0, 1, Pq) + over;
		if (lo >= 1) {
			t->iter_s[k] =
			    k * layer_time(c, t, &r, si, f, lo, ctx, lo / O, P) + over;
			t->batch[k] = lo;
			t->thr[k] = fmin(lo / t->iter_s[k], nic);
		}
		t->speed = fmax(t->speed, k * t->thr[k]);
	}
}

static int same_type(const hx_node *a, const hx_node *b)
{
	return a->count == b->count && a->nic_gbps == b->nic_gbps &&
	       hx_gpu_same(&a->gpu, &b->gpu);
}

static void ctx_release(pctx *c)
{
	for (int t = 0; t < c->nty; t++) {
		free(c->ty[t].thr);
		free(c->ty[t].iter_s);
		free(c->ty[t].pre_s);
		free(c->ty[t].batch);
		free(c->ty[t].kvseq);
	}
	free(c->ty);
	free(c->type);
	free(c->region);
	free(c->net.node_tps);
	free(c->adj_start);
	free(c->adj);
	free(c->path_tpot);
	free(c->path_ttft);
	free((void *)c->lc);
}

/* Sort C's nodes into types (pricing each type once) and regions; add up
 * the layers their memory holds (MEM_LAYERS), those held by nodes that meet
 * their TPOT share (SERVED_K) and the bound's terms (BOUND). */
static void find_types(pctx *c, int *mem_layers, int *served_k, double *bound)
{
	const hx_cluster *cl = c->pb->cluster;
	int n = c->n, L = c->L;

	for (int i = 0; i < n; i++) {
		int t = 0;
		while (t < c->nty && !same_type(c->ty[t].proto, &cl->nodes[i]))
			t++;
		if (t == c->nty) {
			c->ty[c->nty].proto = &cl->nodes[i];
			price_type(c, &c->ty[c->nty]);
			c->nty++;
		}
		c->type[i] = t;
		c->region[i] = i;
		for (int j = 0; j < i; j++)
			if (strcmp(cl->nodes[j].region, cl->nodes[i].region) == 0) {
				c->region[i] = c->region[j];
				break;
			}
		*mem_layers += node_cap(c, i);
		if (c->ty[t].speed > 0)
			*served_k += node_cap(c, i);
		*bound += c->ty[t].speed / L;
	}
}

/* Order of two entries of a node's explicit links: by the node across. */
static int adj_cmp(const void *a, const void *b)
{
	const pipe_adj *x = a, *y = b;
	return x->to != y->to ? (x->to > y->to) - (x->to < y->to)
			      : (x->link > y->link) - (x->link < y->link);
}

/* Each node's explicit links, sorted by the node across, for pipe_link:
 * the pairs without one (all but 2 x 16,384 of the 16.7M at the node
 * limit) take the region's default, so no table over all pairs. */
static void index_links(pctx *c)
{
	const hx_cluster *cl = c->pb->cluster;
	int n = c->n, *fill = hx_xcalloc((size_t)n + 1, sizeof(int));

	c->adj_start = hx_xcalloc((size_t)n + 2, sizeof(int));
	c->adj = hx_xmalloc((size_t)2 * cl->nlinks * sizeof(pipe_adj) + 1);
	for (int k = 0; k < cl->nlinks; k++) {
		c->adj_start[cl->links[k].a + 1]++;
		c->adj_start[cl->links[k].b + 1]++;
	}
	for (int i = 0; i < n; i++)
		c->adj_start[i + 1] += c->adj_start[i];
	for (int k = 0; k < cl->nlinks; k++) {
		int a = cl->links[k].a, b = cl->links[k].b;
		c->adj[c->adj_start[a] + fill[a]++] = (pipe_adj){b, k};
		c->adj[c->adj_start[b] + fill[b]++] = (pipe_adj){a, k};
	}
	for (int i = 0; i < n; i++)
		qsort(c->adj + c->adj_start[i], (size_t)(c->adj_start[i + 1] - c->adj_start[i]),
		      sizeof(pipe_adj), adj_cmp);
	free(fill);
}

/* hx_pipe_net's link_at: tokens/s over the link I -> J of the pctx CTX. */
static double link_at(const void *ctx, int i, int j)
{
	return pipe_link_tps(ctx, i, j);
}

/* C's tables for PB's cluster and workload (layer costs from PO, may be
 * NULL): node types priced, links, scratch; *MEM_LAYERS, *SERVED_K and
 * *BOUND as find_types.  Returns 0 (release C with ctx_release either way)
 * or an error. */
static int ctx_init(pctx *c, const hx_problem *pb, const hx_pipe_opts *po, int *mem_layers,
		    int *served_k, double *bound, hx_err *err)
{
	const hx_workload *w = pb->workload;
	int n = pb->cluster->nnodes, rc;
	double P = hx_dist_mean(&w->prompt), O = hx_dist_mean(&w->output);

	memset(c, 0, sizeof(*c));
	c->pb = pb;
	c->n = n;
	c->L = pb->model->a.layers;
	c->err = err;
	c->throughput = po && po->throughput;
	c->wfrac = po && po->weights_mem_frac > 0 ? po->weights_mem_frac : 1;
	c->tok_bytes = hx_cost_act_bytes_per_token(pb->model) * (1 + P / O);
	if (po && po->layer_costs) {
		hx_layer_cost *lc = NULL;
		if ((rc = hx_layer_costs_load(&lc, &c->nlc, po->layer_costs, err)))
			return rc;
		c->lc = lc;
	}
	c->type = hx_xcalloc((size_t)n + 1, sizeof(int));
	c->region = hx_xcalloc((size_t)n + 1, sizeof(int));
	c->ty = hx_xcalloc((size_t)n + 1, sizeof(ntype));
	find_types(c, mem_layers, served_k, bound);
	c->net.n = n;
	c->net.layers = c->L;
	c->net.node_tps = hx_xcalloc((size_t)n + 1, sizeof(double));
	c->net.link_at = link_at;
	c->net.link_ctx = c;
	c->act_bytes = hx_cost_act_bytes_per_token(pb->model);
	c->path_tpot = hx_xcalloc((size_t)n + 1, sizeof(double));
	c->path_ttft = hx_xcalloc((size_t)n + 1, sizeof(double));
	c->prompt_q = hx_dist_quantile(&w->prompt, w->slo.percentile / 100);
	index_links(c);
	return 0;
}

static int can_hold(const pctx *c, int i, int f, int l);

/* One line "NODE,FIRST,LAST" of a placement file (SHOWN, line LINENO) into
 * FIRST/LAST; 0 or an error naming the line. */
static int placement_line(const pctx *c, char *line, const char *shown, int lineno, int *first,
			  int *last, hx_err *err)
{
	const hx_cluster *cl = c->pb->cluster;
	char *f1 = strchr(line, ','), *f2 = f1 ? strchr(f1 + 1, ',') : NULL, *end;
	long a, b;
	int i = 0;

	if (!f1 || !f2 || strchr(f2 + 1, ','))
		return hx_errf(err, HX_EINPUT, "%s:%d: expected 3 fields", shown, lineno);
	*f1++ = *f2++ = '\0';
	while (i < c->n && strcmp(cl->nodes[i].name, line) != 0)
		i++;
	if (i == c->n)
		return hx_errf(err, HX_EINPUT, "%s:%d: no node \"%.64s\" in the cluster", shown,
			       lineno, line);
	if (first[i] >= 0)
		return hx_errf(err, HX_EINPUT, "%s:%d: node \"%.64s\" placed twice", shown,
			       lineno, line);
	a = strtol(f1, &end, 10);
	if (!*f1 || *end || a < 0 || a >= c->L)
		return hx_errf(err, HX_EINPUT, "%s:%d: first must be a layer from 0 to %d",
			       shown, lineno, c->L - 1);
	b = strtol(f2, &end, 10);
	if (!*f2 || *end || b <= a || b > c->L)
		return hx_errf(err, HX_EINPUT,
			       "%s:%d: last must be a layer after first, at most %d", shown,
			       lineno, c->L);
	if (!can_hold(c, i, (int)a, (int)b))
		return hx_errf(
		    err, HX_EINFEASIBLE,
		    "%s:%d: node \"%.64s\" cannot hold layers [%ld, %ld) of %s (memory, with a KV reserve of %.0f tokens)",
		    shown, lineno, line, a, b, c->pb->model->name, kv_reserve(c));
	first[i] = (int)a;
	last[i] = (int)b;
	return 0;
}

/* The placement of file PATH (header "node,first,last", then a node's
 * layers [first, last) a line) into FIRST/LAST; 0 or an error. */
static int load_placement(const pctx *c, const char *path, int *first, int *last, hx_err *err)
{
	char *text, *cur, *nl;
	const char *shown = hx_display_path(path);
	int lineno = 0, rc = 0;

	hx_pipe_clear(c, first, last);
	if (!(text = hx_read_text_max(path, HX_MAX_CSV_BYTES, NULL, err)))
		return HX_EINPUT;
	for (cur = text; cur && *cur && !rc; cur = nl) {
		char *line = cur;
		if ((nl = strchr(cur, '\n')))
			*nl++ = '\0';
		lineno++;
		if (*line && line[strlen(line) - 1] == '\r')
			line[strlen(line) - 1] = '\0';
		if (lineno == 1 && strcmp(line, "node,first,last") != 0)
			rc = hx_errf(err, HX_EINPUT,
				     "%s:1: expected the header \"node,first,last\"", shown);
		else if (lineno > 1 && *line)
			rc = placement_line(c, line, shown, lineno, first, last, err);
	}
	free(text);
	return rc;
}

/* The constructions, then the local search from the best, the best end
 * into BF/BL (flow *BEST); the moves made into *MOVES.  TF/TL: scratch.
 * The first start is the construction that flows most among those every
 * objective builds, searched with the whole budget: the search of an SLO
 * that never binds, so that no SLO (--objective throughput) flows at least
 * as much as the loosest one.  With no SLO the stages construction too,
 * and a second start from the best other construction with half the
 * budget more (two starts of unlike shape, chains and stages, end on
 * unlike optima); under an SLO stages' long paths lose (on the helix
 * examples the search from them ends 10-50% lower), so the search keeps
 * one start. */
static void search(pctx *c, const hx_pipe_opts *po, int *bf, int *bl, int *tf, int *tl,
		   double *best, long *moves, hx_pipe_stats *st)
{
	int n = c->n, *cf = hx_xmalloc((size_t)n * HX_PIPE_NCONSTRUCTIONS * sizeof(int)),
	    *cl = hx_xmalloc((size_t)n * HX_PIPE_NCONSTRUCTIONS * sizeof(int));
	int start[2] = {-1, -1};
	double cv[HX_PIPE_NCONSTRUCTIONS] = {0};
	long work;

	hx_pipe_clear(c, bf, bl);
	for (int k = 0; k < HX_PIPE_NCONSTRUCTIONS && !c->failed; k++) {
		cv[k] = 0;
		if (k == HX_PIPE_STAGED && !c->throughput)
			continue;
		/* Past the deadline with a placement: the other constructions
		 * are not scored (each is a max-flow and a path search). */
		if (*best > 0 && c->deadline > 0 && hx_now() > c->deadline) {
			c->timed_out = 1;
			break;
		}
		hx_pipe_construct(c, k, cf + k * n, cl + k * n);
		cv[k] = hx_pipe_score(c, cf + k * n, cl + k * n, NULL);
		if (st)
			st->construction[k] = cv[k];
		c->placed |= cv[k] > 0;
		if (cv[k] > *best * (1 + 1e-9)) {
			*best = cv[k];
			memcpy(bf, cf + k * n, (size_t)n * sizeof(int));
			memcpy(bl, cl + k * n, (size_t)n * sizeof(int));
		}
	}
	work = po && po->work > 0 ? po->work : 2000L * n + 20000;
	if (work > 150000 && !(po && po->work > 0))
		work = 150000;
	for (int k = 0; k < HX_PIPE_NCONSTRUCTIONS; k++)
		if (cv[k] > 0 && k != HX_PIPE_STAGED && (start[0] < 0 || cv[k] > cv[start[0]]))
			start[0] = k;
	for (int k = 0; c->throughput && k < HX_PIPE_NCONSTRUCTIONS; k++)
		if (cv[k] > 0 && k != start[0] && (start[1] < 0 || cv[k] > cv[start[1]]))
			start[1] = k;
	for (int s = 0; s < 2 && !c->failed && !c->timed_out; s++) {
		int k = start[s];
		double v;
		if (po->no_search || k < 0)
			continue;
		v = cv[k];
		memcpy(tf, cf + k * n, (size_t)n * sizeof(int));
		memcpy(tl, cl + k * n, (size_t)n * sizeof(int));
		*moves += hx_pipe_search(c, tf, tl, &v, s == 0 ? work : work / 2);
		if (v > *best * (1 + 1e-9)) {
			*best = v;
			memcpy(bf, tf, (size_t)n * sizeof(int));
			memcpy(bl, tl, (size_t)n * sizeof(int));
		}
	}
	free(cf);
	free(cl);
}

int hx_plan_pipeline_run(const hx_problem *pb, const hx_plan_opts *o, const hx_pipe_opts *po,
			 hx_plan *p, hx_pipe_stats *st, hx_err *err)
{
	const hx_cluster *cl = pb->cluster;
	pctx c;
	int n = cl->nnodes, L = pb->model->a.layers, rc = 0, *bf = NULL, *bl = NULL, *tf = NULL,
	    *tl = NULL;
	double best = -1, bound = 0, value = 0;
	double t0 = hx_now();
	long moves = 0;
	int mem_layers = 0, served_k = 0;
	hx_pipe_opts xo = {0};

	hx_plan_init(p);
	strcpy(p->mode, "pipeline");
	if (st)
		memset(st, 0, sizeof(*st));
	if (o->objective != HX_OBJ_CAPACITY && o->objective != HX_OBJ_THROUGHPUT)
		return hx_errf(
		    err, HX_EINPUT,
		    "the pipeline mode maximizes throughput: it takes --objective capacity or throughput only");
	if (po)
		xo = *po;
	xo.throughput |= o->objective == HX_OBJ_THROUGHPUT;
	po = &xo;
	if (o->lp_path)
		return hx_errf(err, HX_EINPUT,
			       "the pipeline mode solves no MILP: it has no --lp to write");
	if (n < 1)
		return hx_errf(err, HX_EINFEASIBLE,
			       "the pipeline mode needs nodes (the cluster has none)");
	if ((rc = ctx_init(&c, pb, po, &mem_layers, &served_k, &bound, err)))
		goto out;
	if (mem_layers < L) {
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "memory: the nodes hold %d of the %d layers of %s in all (each with a KV reserve of %.0f tokens); no placement covers the model",
		    mem_layers, L, pb->model->name, hx_plan_kv_reserve(pb->workload));
		goto out;
	}
	if (served_k < L) {
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "tpot: at the TPOT SLO of %g ms the nodes that meet their share (%g ms per layer) hold %d of the %d layers of %s",
		    pb->workload->slo.tpot_ms, pb->workload->slo.tpot_ms / L, served_k, L,
		    pb->model->name);
		goto out;
	}
	if (o->time_limit_s > 0)
		c.deadline = t0 + o->time_limit_s;
	c.bound = bound;
	c.gap = o->gap;
	bf = hx_xmalloc((size_t)n * sizeof(int));
	bl = hx_xmalloc((size_t)n * sizeof(int));
	tf = hx_xmalloc((size_t)n * sizeof(int));
	tl = hx_xmalloc((size_t)n * sizeof(int));
	if (po->placement) {
		/* evaluate the given placement, by Helix's rule for hops */
		c.net.overlap = 1;
		if ((rc = load_placement(&c, po->placement, bf, bl, err)))
			goto out;
		best = hx_pipe_score(&c, bf, bl, NULL);
	} else {
		search(&c, po, bf, bl, tf, tl, &best, &moves, st);
	}
	if (c.failed) {
		rc = HX_EINPUT;
		goto out;
	}
	if (best <= 0 && po->placement) {
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "%s: the placement carries no traffic (no chain of its nodes covers the %d layers of %s)",
		    hx_display_path(po->placement), L, pb->model->name);
		goto out;
	}
	if (best <= 0) {
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "links: no placement of %s carries traffic (no chain of nodes whose memory covers the %d layers could be formed)",
		    pb->model->name, L);
		goto out;
	}
	if ((rc = hx_pipe_emit(&c, bf, bl, p, &value, err)))
		goto out;
	if ((rc = hx_plan_finish(pb, p, HX_FINISH_INPUTS, err)))
		goto out;
	hx_plan_solver_search(p, "igraph",
			      c.timed_out     ? "time_limit"
			      : c.gap_reached ? "gap_limit"
					      : "heuristic",
			      value, bound, c.flows, moves);
	if (st) {
		st->flow = value;
		st->bound = fmax(bound, value);
		st->flows = c.flows;
		st->seconds = hx_now() - t0;
	}
out:
	free(bf);
	free(bl);
	free(tf);
	free(tl);
	ctx_release(&c);
	if (rc)
		hx_plan_release(p);
	return rc;
}

/* Whether node I of C can hold layers [F, L) (its memory with the
 * embedding or head where they sit, and some capacity). */
static int can_hold(const pctx *c, int i, int f, int l)
{
	const ntype *t = &c->ty[c->type[i]];
	return f >= 0 && f < l && l <= c->L && l - f <= t->kmax[(f == 0) | (l == c->L) << 1] &&
	       t->thr[l - f] > 0;
}

/* Cover layers [A, B) with free nodes of C (FIRST < 0), front to back:
 * each time the node that holds the most of what is left from the
 * current layer, the fastest at it among equals.  Returns the layers
 * covered (B - A when whole); the nodes taken keep their range even when
 * the cover stops short. */
static int cover(const pctx *c, int *first, int *last, int a, int b)
{
	int x = a;

	while (x < b) {
		int best = -1, bk = 0;
		for (int i = 0; i < c->n; i++) {
			int k = b - x;
			if (first[i] >= 0)
				continue;
			while (k > 0 && !can_hold(c, i, x, x + k))
				k--;
			if (k > bk ||
			    (k == bk && k > 0 && node_thr(c, i, k) > node_thr(c, best, k))) {
				best = i;
				bk = k;
			}
		}
		if (best < 0)
			break;
		first[best] = x;
		last[best] = x + bk;
		x += bk;
	}
	return x - a;
}

/* Flow evaluations hx_pipe_adapt may spend on N nodes: the repair
 * converges in a few rounds of about N x ranges each (1,969 evaluations on
 * the 64 nodes of bench/replan's pipeline), the search after it (which
 * raised the helix-24 case of tests/cli/replan.sh from 0.54 to 1.29
 * req/s) in about a thousand. */
static long repair_work(int n)
{
	return n < 90 ? 200L * n + 2000 : 20000;
}

static long search_work(int n)
{
	return n < 200 ? 20L * n + 1000 : 5000;
}

/* The distinct ranges of placement F/L and the N lost ones LF/LL into
 * RF/RL (room for c->n + N); returns how many. */
static int ranges_of(const pctx *c, const int *f, const int *l, const int *lf, const int *ll,
		     int nlost, int *rf, int *rl)
{
	int m = 0;

	for (int i = 0; i < c->n + nlost; i++) {
		int a = i < c->n ? f[i] : lf[i - c->n], b = i < c->n ? l[i] : ll[i - c->n],
		    q = 0;
		if (a < 0)
			continue;
		while (q < m && !(rf[q] == a && rl[q] == b))
			q++;
		if (q == m) {
			rf[m] = a;
			rl[m++] = b;
		}
	}
	return m;
}

/* Whether an earlier node than I of C is interchangeable with it in
 * placement F/L (same type, region and range, and no link of the cluster
 * set apart), so that moving it would score the same. */
static int twin_before(const pctx *c, const int *f, const int *l, int i)
{
	if (c->pb->cluster->nlinks > 0)
		return 0;
	for (int j = 0; j < i; j++)
		if (c->type[j] == c->type[i] && c->region[j] == c->region[i] && f[j] == f[i] &&
		    l[j] == l[i])
			return 1;
	return 0;
}

/* Repair placement F/L (score *V) one node at a time: each round tries
 * every node on every range the placement has (and the lost ones, and
 * none), and makes the single change that raises the score most (the
 * flow less HX_PIPE_MOVE_COST per node moved), until none raises it or
 * WORK flow evaluations are spent (a round cut short still makes its best
 * change).  Returns the changes made. */
static long repair(pctx *c, int *f, int *l, const int *lf, const int *ll, int nlost, double *v,
		   long work)
{
	int n = c->n, *rf = hx_xmalloc(((size_t)n + nlost + 1) * sizeof(int)),
	    *rl = hx_xmalloc(((size_t)n + nlost + 1) * sizeof(int));
	long changed = 0, evals = 0;

	while (evals < work && !c->failed) {
		int m = ranges_of(c, f, l, lf, ll, nlost, rf, rl), bi = -1, br = -1;
		double bv = *v * (1 + 1e-9);
		for (int i = 0; i < n && evals < work && !c->failed; i++) {
			int of = f[i], ol = l[i];
			if (twin_before(c, f, l, i))
				continue;
			for (int r = -1; r < m && evals < work; r++) {
				double s;
				f[i] = r < 0 ? -1 : rf[r];
				l[i] = r < 0 ? -1 : rl[r];
				if ((f[i] == of && l[i] == ol) ||
				    (f[i] >= 0 && !can_hold(c, i, f[i], l[i])))
					continue;
				s = hx_pipe_score(c, f, l, NULL);
				evals++;
				if (s > bv) {
					bv = s;
					bi = i;
					br = r;
				}
			}
			f[i] = of;
			l[i] = ol;
		}
		if (bi < 0)
			break;
		f[bi] = br < 0 ? -1 : rf[br];
		l[bi] = br < 0 ? -1 : rl[br];
		*v = bv;
		changed++;
	}
	free(rf);
	free(rl);
	return changed;
}

int hx_pipe_adapt(const hx_problem *pb, int *first, int *last, const int *lost_first,
		  const int *lost_last, int nlost, hx_plan *p, hx_err *err)
{
	pctx c;
	int rc, mem_layers = 0, served_k = 0, n = pb->cluster->nnodes;
	int *hf = hx_xmalloc(((size_t)n + 1) * sizeof(int)),
	    *hl = hx_xmalloc(((size_t)n + 1) * sizeof(int));
	double bound = 0, value = 0, v;
	long moves = 0;

	hx_plan_init(p);
	strcpy(p->mode, "pipeline");
	if ((rc = ctx_init(&c, pb, NULL, &mem_layers, &served_k, &bound, err)))
		goto out;
	for (int i = 0; i < n; i++)
		if (first[i] >= 0 && !can_hold(&c, i, first[i], last[i]))
			first[i] = last[i] = -1;
	memcpy(hf, first, (size_t)n * sizeof(int));
	memcpy(hl, last, (size_t)n * sizeof(int));
	c.home_f = hf;
	c.home_l = hl;
	for (int k = 0; k < nlost; k++)
		cover(&c, first, last, lost_first[k], lost_last[k]);
	/* The cover alone puts the lost layers where they fit, not where the
	 * flow needs them (one slow node for a fast node's range bounds the
	 * whole flow): the best single changes first, then the planner's
	 * local search for what takes several (boundaries that shift); both
	 * pay for each node they move. */
	v = hx_pipe_score(&c, first, last, NULL);
	if (!c.failed)
		moves =
		    repair(&c, first, last, lost_first, lost_last, nlost, &v, repair_work(n));
	if (!c.failed)
		moves += hx_pipe_search(&c, first, last, &v, search_work(n));
	if (c.failed) {
		rc = HX_EINPUT;
		goto out;
	}
	if ((rc = hx_pipe_emit(&c, first, last, p, &value, err)))
		goto out;
	if (p->ngroups == 0) {
		rc = hx_errf(err, HX_EINFEASIBLE,
			     "no chain of the nodes left covers the %d layers of %s", c.L,
			     pb->model->name);
		goto out;
	}
	rc = hx_plan_finish(pb, p, HX_FINISH_INPUTS, err);
	hx_plan_solver_search(p, "igraph", "heuristic", value, fmax(bound, value), c.flows,
			      moves);
out:
	free(hf);
	free(hl);
	ctx_release(&c);
	if (rc)
		hx_plan_release(p);
	return rc;
}

int hx_plan_pipeline(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out, hx_err *err)
{
	return hx_plan_pipeline_run(pb, o, NULL, out, NULL, err);
}
