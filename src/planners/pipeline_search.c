/* The pipeline planner's search (pipeline.c has the overview): placements
 * scored by their flow, four constructions and a seeded local search. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planners/pipeline_int.h"

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

/* Relax node I of placement F/L by the nodes J[0..m) that may feed it
 * (A, B: worst_paths' partial paths). */
static void relax(const pctx *c, const int *f, const int *l, int i, const int *j, int m,
		  double *a, double *b)
{
	int k = l[i] - f[i];
	const ntype *t = &c->ty[c->type[i]];

	a[i] = f[i] == 0 ? HX_PIPE_WAIT * t->iter_s[k] : -1;
	b[i] = f[i] == 0 ? t->pre_s[k] : -1;
	for (int q = 0; q < m; q++) {
		int x = j[q];
		if (!pipe_feeds(c, f, l, x, i) || a[x] < 0)
			continue;
		double lat = pipe_lat_s(c, x, i), tok = pipe_hop_tok_s(c, x, i);
		a[i] = fmax(a[i], a[x] + HX_PIPE_WAIT * t->iter_s[k] + lat + tok);
		b[i] = fmax(b[i], b[x] + t->pre_s[k] + lat + tok * c->prompt_q);
	}
}

/* The slowest path of placement F/L through every hop it allows: *TPOT_S
 * (one decode step: iterations, link latencies and one token's transfer)
 * and *TTFT_S (the percentile prompt's prefill and transfers).  The nodes
 * are bucketed by their last layer, so that each is relaxed once, by the
 * nodes that end where it starts (every node when hops may overlap), not
 * by every node at every layer: O(nodes + hops) without overlap. */
static void worst_paths(const pctx *c, const int *f, const int *l, double *tpot_s,
			double *ttft_s)
{
	int n = c->n, L = c->L;
	double *a = c->path_tpot, *b = c->path_ttft;
	int *start = hx_xcalloc((size_t)L + 2, sizeof(int));
	int *by = hx_xmalloc((size_t)n * sizeof(int) + 1), *all = NULL;

	*tpot_s = *ttft_s = 0;
	/* by[start[e] .. start[e + 1]): the nodes whose last layer is e, in
	 * node order */
	for (int i = 0; i < n; i++)
		if (f[i] >= 0 && l[i] >= 1 && l[i] <= L)
			start[l[i] + 1]++;
	for (int e = 0; e <= L; e++)
		start[e + 1] += start[e];
	{
		int *fill = hx_xmalloc(((size_t)L + 1) * sizeof(int));
		memcpy(fill, start, ((size_t)L + 1) * sizeof(int));
		for (int i = 0; i < n; i++)
			if (f[i] >= 0 && l[i] >= 1 && l[i] <= L)
				by[fill[l[i]]++] = i;
		free(fill);
	}
	if (c->net.overlap) {
		all = hx_xmalloc((size_t)n * sizeof(int) + 1);
		for (int i = 0; i < n; i++)
			all[i] = i;
	}
	/* the last layer grows along a path: relax the nodes by it */
	for (int end = 1; end <= L; end++)
		for (int q = start[end]; q < start[end + 1]; q++) {
			int i = by[q];
			if (all)
				relax(c, f, l, i, all, n, a, b);
			else
				relax(c, f, l, i, by + start[f[i]],
				      start[f[i] + 1] - start[f[i]], a, b);
			if (l[i] == L && a[i] >= 0) {
				*tpot_s = fmax(*tpot_s, a[i]);
				*ttft_s = fmax(*ttft_s, b[i]);
			}
		}
	free(start);
	free(by);
	free(all);
}

/* Flow of a placement (-1 on a failed max-flow: the search stops), less a
 * penalty when a path breaks the TPOT or TTFT SLO: flow * (slo / worst)^4,
 * so that the search is drawn back within the SLO; in a replan, less
 * HX_PIPE_MOVE_COST of it per node off its range before. */
void hx_pipe_node_caps(pctx *c, const int *first, const int *last, double *tpot_s,
		       double *ttft_s)
{
	worst_paths(c, first, last, tpot_s, ttft_s);
	/* Little's law: a sequence holds its KV on every node of its path for
	 * the whole round trip (at most the slowest path's), one token per
	 * trip, so a node whose KV holds N sequences passes at most N / trip
	 * tokens/s whatever its batch */
	for (int i = 0; i < c->n; i++) {
		int k = last[i] - first[i];
		double cap;
		if (first[i] < 0) {
			c->net.node_tps[i] = 0;
			continue;
		}
		cap = node_thr(c, i, k);
		if (*tpot_s > 0)
			cap = fmin(cap, c->ty[c->type[i]].kvseq[k] / *tpot_s);
		c->net.node_tps[i] = cap;
	}
}

double hx_pipe_score(pctx *c, const int *first, const int *last, hx_pipe_flow *keep)
{
	hx_pipe_flow f;
	double v, tpot, ttft;
	const hx_slo *slo = &c->pb->workload->slo;

	hx_pipe_node_caps(c, first, last, &tpot, &ttft);
	c->flows++;
	if (hx_pipe_flow_eval(&c->net, first, last, &f, c->err)) {
		c->failed = 1;
		return -1;
	}
	v = f.value;
	/* --objective throughput: no latency SLO */
	if (!c->throughput && tpot * 1e3 > slo->tpot_ms)
		v *= pow(slo->tpot_ms / (tpot * 1e3), 4);
	if (!c->throughput && ttft * 1e3 > slo->ttft_ms)
		v *= pow(slo->ttft_ms / (ttft * 1e3), 4);
	if (c->home_f) {
		int moved = 0;
		for (int i = 0; i < c->n; i++)
			moved += first[i] != c->home_f[i] || last[i] != c->home_l[i];
		v *= fmax(0, 1 - HX_PIPE_MOVE_COST * moved);
	}
	if (keep)
		*keep = f;
	else
		hx_pipe_flow_release(&f);
	return v;
}

/* Whether chain position A of NODES (holding K[A] layers) gives up a layer
 * before B: the slower at its share, the earlier on a tie. */
static int trim_before(const pctx *c, const int *nodes, const int *k, int a, int b)
{
	double ta = node_thr(c, nodes[a], k[a]), tb = node_thr(c, nodes[b], k[b]);
	return ta < tb || (ta == tb && a < b);
}

/* Sift position H[AT] of the heap H[0..N) down (by trim_before). */
static void trim_sift(const pctx *c, const int *nodes, const int *k, int *h, int n, int at)
{
	for (;;) {
		int m = at, l = 2 * at + 1, r = l + 1, x;
		if (l < n && trim_before(c, nodes, k, h[l], h[m]))
			m = l;
		if (r < n && trim_before(c, nodes, k, h[r], h[m]))
			m = r;
		if (m == at)
			return;
		x = h[at];
		h[at] = h[m];
		h[m] = x;
		at = m;
	}
}

/* Take layers off the chain NODES[0..m) holding K[j] layers (SUM in all)
 * until it holds L: each from the node (of those with two or more) that is
 * slowest at its share, the first in the chain on a tie.  A heap picks it:
 * a chain at the node limit has thousands of nodes whose alike types all
 * pass the water level together, many times L layers to give back, and a
 * scan per layer took minutes.  Returns the layers left. */
static int trim_layers(const pctx *c, const int *nodes, int m, int *k, int sum)
{
	int *h = hx_xmalloc((size_t)m * sizeof(int) + 1), n = 0;

	for (int j = 0; j < m; j++)
		if (k[j] > 1)
			h[n++] = j;
	for (int at = n / 2 - 1; at >= 0; at--)
		trim_sift(c, nodes, k, h, n, at);
	while (sum > c->L && n > 0) {
		k[h[0]]--;
		sum--;
		if (k[h[0]] <= 1)
			h[0] = h[--n];
		trim_sift(c, nodes, k, h, n, 0);
	}
	free(h);
	return sum;
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
	if (sum > L)
		sum = trim_layers(c, nodes, m, k, sum);
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

void hx_pipe_clear(const pctx *c, int *first, int *last)
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

/* Layers a chain of the M nodes NODES holds, each at its position (first,
 * middle, last; a single node is first and last). */
static int chain_cap(const pctx *c, const int *nodes, int m)
{
	int have = 0;
	for (int j = 0; j < m; j++)
		have += c->ty[c->type[nodes[j]]].kmax[(j == 0) | (j == m - 1) << 1];
	return have;
}

/* (1) Separate pipelines per GPU type: each type's nodes, in the cluster's
 * order, cut into as many pipelines as hold the model. */
static void build_per_type(pctx *c, int *first, int *last)
{
	int *v = hx_xmalloc((size_t)c->n * sizeof(int));

	hx_pipe_clear(c, first, last);
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
			need++;
			have = chain_cap(c, v, need);
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

/* Whether a construction stops trying more once it or an earlier one has
 * a placement that flows (BEST > 0, C->placed): the deadline has passed
 * (each try is a chain split per pipeline and a score, a max-flow that
 * takes a second at the node limit, and a construction may try one per
 * pipeline count). */
static int construct_out_of_time(pctx *c, double best)
{
	int have = best > 0 || c->placed;
	if (have && c->deadline > 0 && hx_now() > c->deadline)
		c->timed_out = 1;
	return have && c->timed_out;
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

	hx_pipe_clear(c, first, last);
	for (int j = 0; j < m; j++)
		total += node_cap(c, v[j]);
	for (int p = 1; p <= m && p * c->L <= total && !c->failed; p++) {
		double s;
		if (construct_out_of_time(c, best))
			break;
		hx_pipe_clear(c, pf, pl);
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
		s = hx_pipe_score(c, pf, pl, NULL);
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

	hx_pipe_clear(c, first, last);
	while (a < m) {
		int k = 0, have = 0;
		while (a < m && have < c->L) {
			mem[k++] = v[a];
			have = chain_cap(c, mem, k);
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

/* (4) Stages, Swarm-style: the layers cut into stages of k layers (the last
 * shorter), each usable node (fastest first) given the stage it can hold
 * whose capacity so far is least, every node of a stage passing to every
 * node of the next; the k whose placement flows most wins. */
static void build_staged(pctx *c, int *first, int *last)
{
	int n = c->n, L = c->L, *v = hx_xmalloc((size_t)n * sizeof(int)), m = usable(c, v);
	int *pf = hx_xmalloc((size_t)n * sizeof(int)),
	    *pl = hx_xmalloc((size_t)n * sizeof(int));
	double best = -1, *cap = hx_xcalloc((size_t)L + 1, sizeof(double));

	hx_pipe_clear(c, first, last);
	for (int k = 1; k <= L && !c->failed; k++) {
		int S = (L + k - 1) / k, whole = 1;
		double sc;
		if (construct_out_of_time(c, best))
			break;
		hx_pipe_clear(c, pf, pl);
		for (int s = 0; s < S; s++)
			cap[s] = 0;
		for (int j = 0; j < m; j++) {
			int i = v[j], bs = -1;
			for (int s = 0; s < S; s++)
				if (holds(c, i, s * k, s * k + k < L ? s * k + k : L) &&
				    (bs < 0 || cap[s] < cap[bs]))
					bs = s;
			if (bs < 0)
				continue;
			pf[i] = bs * k;
			pl[i] = bs * k + k < L ? bs * k + k : L;
			cap[bs] += node_thr(c, i, pl[i] - pf[i]);
		}
		for (int s = 0; s < S; s++)
			whole &= cap[s] > 0;
		if (!whole)
			continue;
		sc = hx_pipe_score(c, pf, pl, NULL);
		if (sc > best * (1 + 1e-9)) {
			best = sc;
			memcpy(first, pf, (size_t)n * sizeof(int));
			memcpy(last, pl, (size_t)n * sizeof(int));
		}
	}
	free(cap);
	free(pl);
	free(pf);
	free(v);
}

static const char *const construction_names[HX_PIPE_NCONSTRUCTIONS] = {"per-type", "balanced",
								       "greedy", "staged"};

const char *hx_pipe_construction_name(int k)
{
	return k >= 0 && k < HX_PIPE_NCONSTRUCTIONS ? construction_names[k] : "?";
}

void hx_pipe_construct(pctx *c, int k, int *first, int *last)
{
	if (k == 0)
		build_per_type(c, first, last);
	else if (k == 1)
		build_balanced(c, first, last);
	else if (k == 2)
		build_greedy(c, first, last);
	else
		build_staged(c, first, last);
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

long hx_pipe_search(pctx *c, int *best_f, int *best_l, double *best_v, long work)
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
		/* Every iteration: at the node limit a score takes ~0.5 s. */
		if (c->deadline > 0 && hx_now() > c->deadline) {
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
			cur = hx_pipe_score(c, cf, cl, NULL);
			since = 0;
			continue;
		}
		memcpy(tf, cf, (size_t)n * sizeof(int));
		memcpy(tl, cl, (size_t)n * sizeof(int));
		if (!propose(c, &r, tf, tl))
			continue;
		moves++;
		evals++;
		v = hx_pipe_score(c, tf, tl, NULL);
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
