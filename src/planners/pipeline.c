/*
 * plan_pipeline: layers of one model across many loosely connected nodes
 * (Helix, ASPLOS'25; Parallax; DESIGN §6).  Every node serves one contiguous
 * layer range with all its GPUs as one TP group; requests flow node to node.
 *
 * Node capacity for k layers (generated tokens/s) comes from the cost
 * model: in steady state an iteration of a node carries b decoding sequences
 * and the prompt tokens they amortize (b/O prompts of P tokens, P and O the
 * workload's mean lengths), so its time is T(b) = k layers of that batch +
 * the GPU's iteration overhead.  b is the largest batch that (a) fits the KV
 * cache left after the node's weights (P + O tokens per sequence), (b) is at
 * most the engine's max_seqs, and (c) keeps T(b) within the node's share of
 * the TPOT SLO, tpot * k / L, so that a path's iteration times add up to at
 * most the SLO.  Capacity = min(b / T(b), NIC bandwidth / activation bytes
 * per generated token), activations being hidden * 2 bytes for each
 * generated token and each prompt token it amortizes.  A node may hold k
 * layers when weights + reserve + the workload's KV reserve fit (with the
 * embedding when it holds layer 0, the head when it holds the last).
 *
 * A placement is scored by the max-flow of the node-split graph (pipeline.h).
 * Search: three constructions (separate pipelines per GPU type; balanced
 * pipelines for every pipeline count, Parallax-style, with water-filled
 * splits; a greedy fill by speed), then a seeded local search scored by
 * max-flow from the best of them (move a shared boundary, resize a range,
 * re-home a node after another, copy another node's range, swap two nodes,
 * drop a node) bounded by a number of flow evaluations; --time-limit stops
 * it early (solver.status time_limit).  Bound: sum_i max_k k thr_i(k) / L.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solver/flow.h"
#include "planners/pipeline.h"

/* ---- max-flow of a placement ----------------------------------------------- */

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
	f->hop = hx_xcalloc((size_t)n * n + 1, sizeof(double));
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
			for (int k = 0; k < nby[last[i]]; k++) {
				int j = by_first[last[i]][k];
				hop_e = hx_xrealloc(hop_e, (size_t)(nhop + 1) * sizeof(int));
				hop_from =
				    hx_xrealloc(hop_from, (size_t)(nhop + 1) * sizeof(int));
				hop_to = hx_xrealloc(hop_to, (size_t)(nhop + 1) * sizeof(int));
				hop_e[nhop] =
				    hx_graph_add_edge(&g, 3 + 2 * i, 2 + 2 * j,
						      fmax(net->link_tps[i * n + j], 0));
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
		for (int h = 0; h < nhop; h++)
			f->hop[hop_from[h] * n + hop_to[h]] = res.flow[hop_e[h]];
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

/* A token reaching a node mid-iteration waits for it to end before its own:
 * half an iteration on average, so a node adds 1.5 iterations to a path. */
#define HX_PIPE_WAIT 1.5

/* What one node type (GPU profile, count, NIC) does with k layers. */
typedef struct ntype {
	const hx_node *proto;
	int tp;
	int kmax[4]; /* most layers it holds; index: (holds layer 0) | (holds the last) << 1 */
	double *thr; /* [k], k = 0..L: capacity, tokens/s (0: cannot) */
	double *iter_s; /* [k]: decode iteration time at its batch */
	double *pre_s;  /* [k]: prefill of the percentile prompt alone */
	double *batch;  /* [k] */
	double speed;   /* max_k k thr(k): layer-tokens/s */
} ntype;

typedef struct pctx {
	const hx_problem *pb;
	int n, L;
	int *type; /* per node */
	ntype *ty;
	int nty;
	int *region; /* per node: rank of its region */
	double tok_bytes;
	hx_pipe_net net;
	double *lat_s;                 /* n * n link latency */
	double *hop_tok_s;             /* n * n: one token's activations over the link */
	double prompt_q;               /* the percentile prompt, tokens */
	double *path_tpot, *path_ttft; /* per node: scratch of worst_paths */
	long flows;
	double deadline; /* monotonic seconds; 0: none */
	int timed_out;
	double bound, gap; /* stop the search once (bound - flow) / flow <= gap (gap > 0) */
	int gap_reached;
	hx_err *err;
	int failed;
	const hx_layer_cost *lc; /* measured per-layer costs (may be NULL) */
	int nlc;
} pctx;

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
	if (mem.st[si].kv_b < 0)
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
	double nic = hx_gbps_bytes_s(t->proto->nic_gbps) / c->tok_bytes;
	int L = c->L;

	t->tp = pick_tp(t->proto, c->pb->model->a.heads);
	t->thr = hx_xcalloc((size_t)L + 1, sizeof(double));
	t->iter_s = hx_xcalloc((size_t)L + 1, sizeof(double));
	t->pre_s = hx_xcalloc((size_t)L + 1, sizeof(double));
	t->batch = hx_xcalloc((size_t)L + 1, sizeof(double));
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
		double kv, budget = w->slo.tpot_ms * 1e-3 * k / L,
			   over = t->proto->gpu.iter_overhead_ms * 1e-3;

		if (k > t->kmax[0] && k > t->kmax[1] && k > t->kmax[2] && k > t->kmax[3])
			break;
		si = view(c, &t->proto->gpu, t->tp, f, k, &r);
		kv = fmax(kv_tokens(c, t, f, k), 0);
		/* the largest batch within KV, max_seqs and the TPOT share */
		hi = (int)fmin(floor(kv / (P + O)), w->serving.max_seqs);
		lo = 0;
		while (lo < hi) {
			int mid = (lo + hi + 1) / 2;
			double T =
			    k * layer_time(c, t, &r, si, f, mid, P + O / 2, mid / O, P) + over;
			if (HX_PIPE_WAIT * T <= budget)
				lo = mid;
			else
				hi = mid - 1;
		}
		t->pre_s[k] = k * layer_time(c, t, &r, si, f, 0, 0, 1, Pq) + over;
		if (lo >= 1) {
			t->iter_s[k] =
			    k * layer_time(c, t, &r, si, f, lo, P + O / 2, lo / O, P) + over;
			t->batch[k] = lo;
			/* Little's law: a sequence holds KV here for its whole
			 * life, one token per path round trip (at most the TPOT
			 * SLO), so the node carries at most KV seqs / TPOT. */
			t->thr[k] = fmin(fmin(lo / t->iter_s[k], nic),
					 floor(kv / (P + O)) / (w->slo.tpot_ms * 1e-3));
		}
		t->speed = fmax(t->speed, k * t->thr[k]);
	}
}

/* ---- placements ---------------------------------------------------------------- */

static int pos_of(const pctx *c, int f, int l)
{
	return (f == 0) | (l == c->L) << 1;
}

/* Can node I hold [F, L)? */
static int holds(const pctx *c, int i, int f, int l)
{
	const ntype *t = &c->ty[c->type[i]];
	return f >= 0 && f < l && l <= c->L && l - f <= t->kmax[pos_of(c, f, l)] &&
	       t->thr[l - f] > 0;
}

static double node_thr(const pctx *c, int i, int k)
{
	return c->ty[c->type[i]].thr[k];
}

/* The slowest path of placement F/L through every hop it allows: *TPOT_S
 * (one decode step: iterations, link latencies and one token's transfer)
 * and *TTFT_S (the percentile prompt's prefill and transfers). */
static void worst_paths(const pctx *c, const int *f, const int *l, double *tpot_s,
			double *ttft_s)
{
	int n = c->n, L = c->L;
	double *a = c->path_tpot, *b = c->path_ttft;

	*tpot_s = *ttft_s = 0;
	/* layers only grow along a path: relax the nodes by first layer */
	for (int start = 0; start < L; start++)
		for (int i = 0; i < n; i++) {
			const ntype *t;
			int k;
			if (f[i] != start)
				continue;
			t = &c->ty[c->type[i]];
			k = l[i] - f[i];
			a[i] = start == 0 ? HX_PIPE_WAIT * t->iter_s[k] : -1;
			b[i] = start == 0 ? t->pre_s[k] : -1;
			for (int j = 0; j < n; j++) {
				if (f[j] < 0 || l[j] != start || a[j] < 0)
					continue;
				a[i] = fmax(a[i], a[j] + HX_PIPE_WAIT * t->iter_s[k] +
						      c->lat_s[j * n + i] +
						      c->hop_tok_s[j * n + i]);
				b[i] = fmax(b[i], b[j] + t->pre_s[k] + c->lat_s[j * n + i] +
						      c->hop_tok_s[j * n + i] * c->prompt_q);
			}
			if (l[i] == L && a[i] >= 0) {
				*tpot_s = fmax(*tpot_s, a[i]);
				*ttft_s = fmax(*ttft_s, b[i]);
			}
		}
}

/* Flow of a placement (-1 on a failed max-flow: the search stops), less a
 * penalty when a path breaks the TPOT or TTFT SLO: flow * (slo / worst)^4,
 * so that the search is drawn back within the SLO. */
static double score(pctx *c, const int *first, const int *last, hx_pipe_flow *keep)
{
	hx_pipe_flow f;
	double v, tpot, ttft;
	const hx_slo *slo = &c->pb->workload->slo;

	for (int i = 0; i < c->n; i++)
		c->net.node_tps[i] = first[i] >= 0 ? node_thr(c, i, last[i] - first[i]) : 0;
	c->flows++;
	if (hx_pipe_flow_eval(&c->net, first, last, &f, c->err)) {
		c->failed = 1;
		return -1;
	}
	v = f.value;
	worst_paths(c, first, last, &tpot, &ttft);
	if (tpot * 1e3 > slo->tpot_ms)
		v *= pow(slo->tpot_ms / (tpot * 1e3), 4);
	if (ttft * 1e3 > slo->ttft_ms)
		v *= pow(slo->ttft_ms / (ttft * 1e3), 4);
	if (keep)
		*keep = f;
	else
		hx_pipe_flow_release(&f);
	return v;
}

/* Water-fill L layers over the chain NODES[0..m) (in that order): the
 * largest T such that every node takes the most layers it can serve at
 * T or more and they cover L; the surplus comes off the slowest nodes.
 * Nodes left with no layers are skipped.  Writes FIRST/LAST; returns 0,
 * or -1 when the chain cannot hold the model. */
static int chain_split(const pctx *c, const int *nodes, int m, int *first, int *last)
{
	int L = c->L, *k = hx_xcalloc((size_t)m + 1, sizeof(int)), sum, at = 0, ok = -1;
	double lo = 0, hi = 0;

	for (int j = 0; j < m; j++)
		hi = fmax(hi, node_thr(c, nodes[j], 1));
	for (int it = 0; it < 100; it++) {
		double T = it == 0 ? 0 : (lo + hi) / 2;
		sum = 0;
		for (int j = 0; j < m; j++) {
			const ntype *t = &c->ty[c->type[nodes[j]]];
			int cap = t->kmax[(j == 0) | (j == m - 1) << 1], kk = 0;
			for (int q = 1; q <= cap; q++)
				if (t->thr[q] > 0 && t->thr[q] >= T)
					kk = q;
			sum += kk;
		}
		if (it == 0) {
			if (sum < L)
				goto out;
			continue;
		}
		if (sum >= L)
			lo = T;
		else
			hi = T;
	}
	sum = 0;
	for (int j = 0; j < m; j++) {
		const ntype *t = &c->ty[c->type[nodes[j]]];
		int cap = t->kmax[(j == 0) | (j == m - 1) << 1];
		k[j] = 0;
		for (int q = 1; q <= cap; q++)
			if (t->thr[q] > 0 && t->thr[q] >= lo)
				k[j] = q;
		sum += k[j];
	}
	while (sum > L) { /* take from the slowest node at its share */
		int worst = -1;
		for (int j = 0; j < m; j++)
			if (k[j] > 1 && (worst < 0 || node_thr(c, nodes[j], k[j]) <
							  node_thr(c, nodes[worst], k[worst])))
				worst = j;
		if (worst < 0)
			break;
		k[worst]--;
		sum--;
	}
	if (sum != L)
		goto out;
	for (int j = 0; j < m; j++) {
		if (k[j] == 0)
			continue;
		first[nodes[j]] = at;
		last[nodes[j]] = at + k[j];
		at += k[j];
	}
	/* the ends hold the embedding and the head: check the final ranges */
	for (int j = 0; j < m; j++)
		if (k[j] && !holds(c, nodes[j], first[nodes[j]], last[nodes[j]])) {
			for (int q = 0; q < m; q++)
				first[nodes[q]] = last[nodes[q]] = -1;
			goto out;
		}
	ok = 0;
out:
	free(k);
	return ok;
}

static void clear(const pctx *c, int *first, int *last)
{
	for (int i = 0; i < c->n; i++)
		first[i] = last[i] = -1;
}

/* Order nodes (insertion sort: a few hundred at most).  BY_REGION: by the
 * rank of their region in the cluster, then by speed, so that each region's
 * nodes sit together in a pipeline and slow cross-region links are crossed
 * as few times as possible; else by speed alone, fastest first. */
static int before(const pctx *c, int x, int y, int by_region)
{
	double sx = c->ty[c->type[x]].speed, sy = c->ty[c->type[y]].speed;
	if (by_region && c->region[x] != c->region[y])
		return c->region[x] < c->region[y];
	if (sx != sy)
		return sx > sy;
	return x < y;
}

static void sort_nodes(const pctx *c, int *v, int m, int by_region)
{
	for (int a = 1; a < m; a++) {
		int x = v[a], b = a;
		while (b > 0 && before(c, x, v[b - 1], by_region)) {
			v[b] = v[b - 1];
			b--;
		}
		v[b] = x;
	}
}

/* Nodes of the cluster that can serve some layers, fastest first. */
static int usable(const pctx *c, int *v)
{
	int m = 0;
	for (int i = 0; i < c->n; i++)
		if (c->ty[c->type[i]].speed > 0)
			v[m++] = i;
	sort_nodes(c, v, m, 0);
	return m;
}

/* (1) Separate pipelines per GPU type: each type's nodes, in the cluster's
 * order, cut into as many pipelines as hold the model. */
static void build_per_type(pctx *c, int *first, int *last)
{
	int *v = hx_xmalloc((size_t)c->n * sizeof(int));

	clear(c, first, last);
	for (int t = 0; t < c->nty; t++) {
		const ntype *ty = &c->ty[t];
		int m = 0, need = 0, have = 0, np;
		if (ty->speed <= 0)
			continue;
		for (int i = 0; i < c->n; i++)
			if (c->type[i] == t)
				v[m++] = i;
		/* nodes one pipeline needs */
		while (have < c->L && need < m) {
			have += ty->kmax[0];
			need++;
		}
		if (have < c->L || need == 0)
			continue;
		np = m / need;
		for (int q = 0; q < np; q++) {
			int a = q * m / np, b = (q + 1) * m / np;
			chain_split(c, v + a, b - a, first, last);
		}
	}
	free(v);
}

/* (2) Balanced pipelines, Parallax-style: for every pipeline count p, the
 * nodes (fastest first) go to the pipeline with the least speed so far;
 * each pipeline is ordered by region and water-filled.  The count whose
 * placement flows most wins. */
static void build_balanced(pctx *c, int *first, int *last)
{
	int n = c->n, *v = hx_xmalloc((size_t)n * sizeof(int)), m = usable(c, v);
	int *pf = hx_xmalloc((size_t)n * sizeof(int)),
	    *pl = hx_xmalloc((size_t)n * sizeof(int));
	int *pipe = hx_xmalloc((size_t)n * sizeof(int)),
	    *mem = hx_xmalloc((size_t)n * sizeof(int));
	double best = -1, total = 0, *load = hx_xcalloc((size_t)n + 1, sizeof(double));

	clear(c, first, last);
	for (int j = 0; j < m; j++)
		total += c->ty[c->type[v[j]]].kmax[0];
	for (int p = 1; p <= m && p * c->L <= total && !c->failed; p++) {
		double s;
		clear(c, pf, pl);
		for (int q = 0; q < p; q++)
			load[q] = 0;
		for (int j = 0; j < m; j++) {
			int q = 0;
			for (int r = 1; r < p; r++)
				if (load[r] < load[q])
					q = r;
			pipe[j] = q;
			load[q] += c->ty[c->type[v[j]]].speed;
		}
		for (int q = 0; q < p; q++) {
			int k = 0;
			for (int j = 0; j < m; j++)
				if (pipe[j] == q)
					mem[k++] = v[j];
			sort_nodes(c, mem, k, 1);
			chain_split(c, mem, k, pf, pl);
		}
		s = score(c, pf, pl, NULL);
		if (s > best * (1 + 1e-9)) {
			best = s;
			memcpy(first, pf, (size_t)n * sizeof(int));
			memcpy(last, pl, (size_t)n * sizeof(int));
		}
	}
	free(load);
	free(mem);
	free(pipe);
	free(pl);
	free(pf);
	free(v);
}

/* (3) Greedy by speed: the fastest free nodes form a pipeline as soon as
 * they hold the model; repeat. */
static void build_greedy(pctx *c, int *first, int *last)
{
	int n = c->n, *v = hx_xmalloc((size_t)n * sizeof(int)), m = usable(c, v), a = 0;
	int *mem = hx_xmalloc((size_t)n * sizeof(int));

	clear(c, first, last);
	while (a < m) {
		int k = 0, have = 0;
		while (a < m && have < c->L) {
			mem[k++] = v[a];
			have += c->ty[c->type[v[a]]].kmax[0];
			a++;
		}
		if (have < c->L)
			break;
		sort_nodes(c, mem, k, 1);
		chain_split(c, mem, k, first, last);
	}
	free(mem);
	free(v);
}

/* ---- local search -------------------------------------------------------------- */

static int rnd(hx_rng *r, int n)
{
	return n <= 1 ? 0 : (int)(hx_rng_next(r) % (uint64_t)n);
}

/* One random move on F/Lt (copies of the current placement); returns 1
 * when it made a valid placement. */
static int propose(const pctx *c, hx_rng *r, int *f, int *lt)
{
	int n = c->n, L = c->L, i = rnd(r, n), j = rnd(r, n), move = rnd(r, 6),
	    d = rnd(r, 2) ? 1 : -1;

	switch (move) {
	case 0: { /* move the boundary after i (every node starting there follows) */
		int b;
		if (f[i] < 0 || lt[i] == L)
			return 0;
		b = lt[i];
		for (int q = 0; q < n; q++) {
			if (f[q] >= 0 && lt[q] == b)
				lt[q] += d;
			if (f[q] >= 0 && f[q] == b)
				f[q] += d;
		}
		break;
	}
	case 1: /* resize one end of i */
		if (f[i] < 0)
			return 0;
		if (rnd(r, 2))
			lt[i] += d;
		else
			f[i] += d;
		break;
	case 2: { /* re-home i after j: start where j ends, as many layers as fit */
		int k;
		if (i == j || f[j] < 0 || lt[j] == L)
			return 0;
		f[i] = lt[j];
		k = c->ty[c->type[i]].kmax[pos_of(c, f[i], L)];
		if (f[i] + k >= L)
			lt[i] = L;
		else {
			/* end on a boundary some node starts at, else at its capacity */
			int best = -1;
			for (int q = 0; q < n; q++)
				if (f[q] > f[i] && f[q] <= f[i] + k && f[q] > best && q != i)
					best = f[q];
			lt[i] = best > 0 ? best : f[i] + k;
		}
		break;
	}
	case 3: /* copy j's range onto i */
		if (i == j || f[j] < 0)
			return 0;
		f[i] = f[j];
		lt[i] = lt[j];
		break;
	case 4: { /* swap */
		int a = f[i], b = lt[i];
		if (i == j)
			return 0;
		f[i] = f[j];
		lt[i] = lt[j];
		f[j] = a;
		lt[j] = b;
		break;
	}
	default: /* drop */
		if (f[i] < 0)
			return 0;
		f[i] = lt[i] = -1;
	}
	for (int q = 0; q < n; q++)
		if (f[q] >= 0 && !holds(c, q, f[q], lt[q]))
			return 0;
	return 1;
}

static long search(pctx *c, int *best_f, int *best_l, double *best_v, long work)
{
	int n = c->n;
	int *cf = hx_xmalloc((size_t)n * sizeof(int)),
	    *cl = hx_xmalloc((size_t)n * sizeof(int));
	int *tf = hx_xmalloc((size_t)n * sizeof(int)),
	    *tl = hx_xmalloc((size_t)n * sizeof(int));
	double cur = *best_v;
	long moves = 0, since = 0, patience = work / 20 > 1000 ? work / 20 : 1000;
	hx_rng r;

	hx_rng_seed(&r, c->pb->seed);
	memcpy(cf, best_f, (size_t)n * sizeof(int));
	memcpy(cl, best_l, (size_t)n * sizeof(int));
	for (long it = 0, evals = 0; evals < work && it < 20 * work && !c->failed; it++) {
		double v;
		if (c->deadline > 0 && (it & 63) == 0 && hx_now() > c->deadline) {
			c->timed_out = 1;
			break;
		}
		if (c->gap > 0 && *best_v > 0 && (c->bound - *best_v) / *best_v <= c->gap) {
			c->gap_reached = 1;
			break;
		}
		if (since >= patience) {
			/* stuck: restart from the best with a few random moves
			 * (iterated local search) */
			int kicks = 0;
			memcpy(cf, best_f, (size_t)n * sizeof(int));
			memcpy(cl, best_l, (size_t)n * sizeof(int));
			for (int tries = 0; tries < 100 && kicks < 4; tries++) {
				memcpy(tf, cf, (size_t)n * sizeof(int));
				memcpy(tl, cl, (size_t)n * sizeof(int));
				if (propose(c, &r, tf, tl)) {
					memcpy(cf, tf, (size_t)n * sizeof(int));
					memcpy(cl, tl, (size_t)n * sizeof(int));
					kicks++;
				}
			}
			cur = score(c, cf, cl, NULL);
			since = 0;
			continue;
		}
		memcpy(tf, cf, (size_t)n * sizeof(int));
		memcpy(tl, cl, (size_t)n * sizeof(int));
		if (!propose(c, &r, tf, tl))
			continue;
		moves++;
		evals++;
		v = score(c, tf, tl, NULL);
		since++;
		/* improvements, and sideways steps now and then (plateaus are wide:
		 * most moves leave the min cut where it is) */
		if (v > cur * (1 + 1e-9) || (v >= cur * (1 - 1e-12) && rnd(&r, 4) == 0)) {
			cur = v;
			memcpy(cf, tf, (size_t)n * sizeof(int));
			memcpy(cl, tl, (size_t)n * sizeof(int));
		}
		if (cur > *best_v * (1 + 1e-9)) {
			*best_v = cur;
			memcpy(best_f, cf, (size_t)n * sizeof(int));
			memcpy(best_l, cl, (size_t)n * sizeof(int));
			since = 0;
		}
	}
	free(tl);
	free(tf);
	free(cl);
	free(cf);
	return moves;
}

/* ---- the plan ------------------------------------------------------------------ */

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

static int emit(pctx *c, const int *f, const int *l, hx_plan *p, double *value, hx_err *err)
{
	const hx_cluster *cl = c->pb->cluster;
	const hx_workload *w = c->pb->workload;
	int n = c->n, rc, *kept = hx_xcalloc((size_t)n, sizeof(int)),
	    *gi = hx_xcalloc((size_t)n, sizeof(int));
	int *hop_kept = hx_xcalloc((size_t)n * n + 1, sizeof(int)),
	    *order = hx_xmalloc((size_t)n * sizeof(int));
	double O = hx_dist_mean(&w->output), P = hx_dist_mean(&w->prompt);
	double Pq = hx_dist_quantile(&w->prompt, w->slo.percentile / 100);
	double *tpot = hx_xcalloc((size_t)n, sizeof(double)),
	       *ttft = hx_xcalloc((size_t)n, sizeof(double));
	double usd = 0, worst_tpot = 0, worst_ttft = 0, served;
	double bytes_tok = hx_cost_act_bytes_per_token(c->pb->model);
	hx_pipe_flow fl;

	for (int i = 0; i < n; i++)
		c->net.node_tps[i] = f[i] >= 0 ? node_thr(c, i, l[i] - f[i]) : 0;
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
		g->nstages = 1;
		hx_strlcpy(g->stage[0].gpu, cl->nodes[i].gpu.name, sizeof(g->stage[0].gpu));
		g->stage[0].tp = t->tp;
		g->stage[0].first = f[i];
		g->stage[0].last = l[i];
		g->capacity_rps = hx_round6(t->thr[k] / O);
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
		/* path latencies: the slowest way here (groups come in layer order) */
		tpot[i] = HX_PIPE_WAIT * t->iter_s[k];
		ttft[i] = t->pre_s[k];
		for (int j = 0; j < n; j++) {
			double bw;
			if (!hop_kept[j * n + i])
				continue;
			bw = hx_gbps_bytes_s(hx_cluster_link(cl, j, i).bw_gbps);
			tpot[i] = fmax(tpot[i], HX_PIPE_WAIT * t->iter_s[k] + tpot[j] +
						    link_latency_s(c, j, i) + bytes_tok / bw);
			ttft[i] =
			    fmax(ttft[i], t->pre_s[k] + ttft[j] + link_latency_s(c, j, i) +
					      Pq * bytes_tok / bw);
		}
		if (l[i] == c->L) {
			worst_tpot = fmax(worst_tpot, tpot[i]);
			worst_ttft = fmax(worst_ttft, ttft[i]);
		}
	}
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
				{
					hx_linkspec ls = hx_cluster_link(cl, i, j);
					char link[160];
					snprintf(link, sizeof(link), "%s-%s", cl->nodes[i].name,
						 cl->nodes[j].name);
					hx_strlcpy(rt->link, link, sizeof(rt->link));
					rt->bw_gbps =
					    fmin(ls.bw_gbps, fmin(cl->nodes[i].nic_gbps,
								  cl->nodes[j].nic_gbps));
					rt->latency_ms = ls.latency_ms;
				}
			}
			hx_routes_normalize(p->hops + at, p->nhops - at);
		}
	}
	hx_routes_normalize(p->ingress, p->ningress);
	served = fmin(w->rate_rps, fl.value / O);
	p->predicted.capacity_rps = hx_round6(fl.value / O);
	p->predicted.throughput_tps = hx_round6(served * O);
	p->predicted.ttft_ms_p99 = hx_round6(worst_ttft * 1e3);
	p->predicted.tpot_ms_p99 = hx_round6(worst_tpot * 1e3);
	p->predicted.usd_per_hour = hx_round6(usd);
	p->predicted.usd_per_m_tokens = hx_round6(hx_usd_per_mtok(usd, served, P + O));
	hx_pipe_flow_release(&fl);
out:
	free(tpot);
	free(ttft);
	free(order);
	free(hop_kept);
	free(gi);
	free(kept);
	return rc;
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
	}
	free(c->ty);
	free(c->type);
	free(c->region);
	free(c->net.node_tps);
	free(c->net.link_tps);
	free(c->lat_s);
	free(c->hop_tok_s);
	free(c->path_tpot);
	free(c->path_ttft);
	free((void *)c->lc);
}

static const char *const construction_names[HX_PIPE_NCONSTRUCTIONS] = {"per-type", "balanced",
								       "greedy"};

const char *hx_pipe_construction_name(int k)
{
	return k >= 0 && k < HX_PIPE_NCONSTRUCTIONS ? construction_names[k] : "?";
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
		*mem_layers += c->ty[t].kmax[0];
		if (c->ty[t].speed > 0)
			*served_k += c->ty[t].kmax[0];
		*bound += c->ty[t].speed / L;
	}
}

/* Each ordered pair of C's nodes: tokens/s its link carries, its latency
 * and the seconds one token's activations take across it. */
static void price_links(pctx *c)
{
	const hx_cluster *cl = c->pb->cluster;
	int n = c->n;

	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j) {
				hx_linkspec ls = hx_cluster_link(cl, i, j);
				c->net.link_tps[i * n + j] =
				    hx_gbps_bytes_s(ls.bw_gbps) / c->tok_bytes;
				c->lat_s[i * n + j] = ls.latency_ms * 1e-3;
				c->hop_tok_s[i * n + j] =
				    hx_cost_act_bytes_per_token(c->pb->model) /
				    hx_gbps_bytes_s(ls.bw_gbps);
			}
}

int hx_plan_pipeline_run(const hx_problem *pb, const hx_plan_opts *o, const hx_pipe_opts *po,
			 hx_plan *p, hx_pipe_stats *st, hx_err *err)
{
	const hx_cluster *cl = pb->cluster;
	const hx_workload *w = pb->workload;
	pctx c;
	int n = cl->nnodes, L = pb->model->a.layers, rc = 0, *bf = NULL, *bl = NULL, *tf = NULL,
	    *tl = NULL;
	double P = hx_dist_mean(&w->prompt), O = hx_dist_mean(&w->output), best = -1, bound = 0,
	       value = 0;
	double t0 = hx_now();
	long work, moves = 0;
	int mem_layers = 0, served_k = 0;

	hx_plan_init(p);
	strcpy(p->mode, "pipeline");
	if (st)
		memset(st, 0, sizeof(*st));
	if (o->objective != HX_OBJ_CAPACITY)
		return hx_errf(err, HX_EINPUT,
			       "the pipeline mode maximizes throughput: it takes --objective "
			       "capacity only");
	if (o->lp_path)
		return hx_errf(err, HX_EINPUT,
			       "the pipeline mode solves no MILP: it has no --lp to write");
	if (n < 1)
		return hx_errf(err, HX_EINFEASIBLE,
			       "the pipeline mode needs nodes (the cluster has none)");
	memset(&c, 0, sizeof(c));
	c.pb = pb;
	c.n = n;
	c.L = L;
	c.err = err;
	c.tok_bytes = hx_cost_act_bytes_per_token(pb->model) * (1 + P / O);
	if (po && po->layer_costs) {
		hx_layer_cost *lc = NULL;
		if ((rc = hx_layer_costs_load(&lc, &c.nlc, po->layer_costs, err)))
			return rc;
		c.lc = lc;
	}
	c.type = hx_xcalloc((size_t)n, sizeof(int));
	c.region = hx_xcalloc((size_t)n, sizeof(int));
	c.ty = hx_xcalloc((size_t)n, sizeof(ntype));
	find_types(&c, &mem_layers, &served_k, &bound);
	c.net.n = n;
	c.net.layers = L;
	c.net.node_tps = hx_xcalloc((size_t)n, sizeof(double));
	c.net.link_tps = hx_xcalloc((size_t)n * n, sizeof(double));
	c.lat_s = hx_xcalloc((size_t)n * n, sizeof(double));
	c.hop_tok_s = hx_xcalloc((size_t)n * n, sizeof(double));
	c.path_tpot = hx_xcalloc((size_t)n, sizeof(double));
	c.path_ttft = hx_xcalloc((size_t)n, sizeof(double));
	c.prompt_q = hx_dist_quantile(&w->prompt, w->slo.percentile / 100);
	price_links(&c);
	if (mem_layers < L) {
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "memory: the nodes hold %d of the %d layers of %s in all (each with a KV "
		    "reserve of %.0f tokens); no placement covers the model",
		    mem_layers, L, pb->model->name, hx_plan_kv_reserve(w));
		goto out;
	}
	if (served_k < L) {
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "tpot: at the TPOT SLO of %g ms the nodes that meet their share (%g ms "
		    "per layer) hold %d of the %d layers of %s",
		    w->slo.tpot_ms, w->slo.tpot_ms / L, served_k, L, pb->model->name);
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
	clear(&c, bf, bl);
	for (int k = 0; k < HX_PIPE_NCONSTRUCTIONS; k++) {
		double v;
		if (k == 0)
			build_per_type(&c, tf, tl);
		else if (k == 1)
			build_balanced(&c, tf, tl);
		else
			build_greedy(&c, tf, tl);
		v = score(&c, tf, tl, NULL);
		if (c.failed) {
			rc = HX_EINPUT;
			goto out;
		}
		if (st)
			st->construction[k] = v;
		if (v > best * (1 + 1e-9)) {
			best = v;
			memcpy(bf, tf, (size_t)n * sizeof(int));
			memcpy(bl, tl, (size_t)n * sizeof(int));
		}
	}
	work = po && po->work > 0 ? po->work : 2000L * n + 20000;
	if (work > 150000 && !(po && po->work > 0))
		work = 150000;
	if (!(po && po->no_search) && best > 0)
		moves = search(&c, bf, bl, &best, work);
	if (c.failed) {
		rc = HX_EINPUT;
		goto out;
	}
	if (best <= 0) {
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "links: no placement of %s carries traffic (no chain of nodes whose "
		    "memory covers the %d layers could be formed)",
		    pb->model->name, L);
		goto out;
	}
	if ((rc = emit(&c, bf, bl, p, &value, err)))
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

int hx_plan_pipeline(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out, hx_err *err)
{
	return hx_plan_pipeline_run(pb, o, NULL, out, NULL, err);
}
