/* The pipeline planner's private header: the context its three files
 * share (pipeline.c: node tables, the flow of a placement and the entry;
 * pipeline_search.c: the constructions and the local search;
 * pipeline_emit.c: the plan of a placement).  Only they include it. */
#ifndef HX_PLANNERS_PIPELINE_INT_H
#define HX_PLANNERS_PIPELINE_INT_H

#include "planners/pipeline.h"

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
	double *kvseq;  /* [k]: sequences of mean length its KV holds */
	double speed;   /* max_k k thr(k): layer-tokens/s */
} ntype;

/* An explicit link of a node: the node across and the cluster's link. */
typedef struct pipe_adj {
	int to, link;
} pipe_adj;

typedef struct pctx {
	const hx_problem *pb;
	int n, L;
	int *type; /* per node */
	ntype *ty;
	int nty;
	int *region; /* per node: rank of its region */
	double tok_bytes;
	hx_pipe_net net;
	double act_bytes; /* one token's activations */
	/* node i's explicit links, by the node across: adj[adj_start[i] ..
	 * adj_start[i + 1]) (pipe_link) */
	int *adj_start;
	pipe_adj *adj;
	double prompt_q;               /* the percentile prompt, tokens */
	double *path_tpot, *path_ttft; /* per node: scratch of worst_paths */
	long flows;
	double deadline; /* monotonic seconds; 0: none */
	int timed_out;
	int placed;        /* a construction so far found a placement that flows */
	double bound, gap; /* stop the search once (bound - flow) / flow <= gap (gap > 0) */
	int gap_reached;
	hx_err *err;
	int failed;
	const hx_layer_cost *lc; /* measured per-layer costs (may be NULL) */
	int nlc;
	int throughput; /* --objective throughput: no latency SLO (Helix) */
	double wfrac;   /* weights fit in this share of a GPU's memory (1: all) */
	/* replan (hx_pipe_adapt): each node's range before (NULL: planning);
	 * the score loses HX_PIPE_MOVE_COST of itself per node off it */
	const int *home_f, *home_l;
} pctx;

/* The link between nodes I and J (I != J) of C, as hx_cluster_link gives
 * it: the explicit link over the pair, else the default of the pair's
 * regions (same or crossing). */
static inline const hx_linkspec *pipe_link(const pctx *c, int i, int j)
{
	const hx_cluster *cl = c->pb->cluster;
	int lo = c->adj_start[i], hi = c->adj_start[i + 1];

	while (lo < hi) {
		int m = lo + (hi - lo) / 2;
		if (c->adj[m].to < j)
			lo = m + 1;
		else
			hi = m;
	}
	if (lo < c->adj_start[i + 1] && c->adj[lo].to == j)
		return &cl->links[c->adj[lo].link].spec;
	return c->region[i] == c->region[j] ? &cl->same_region : &cl->cross_region;
}

/* Tokens/s the link I -> J carries (each with the prompt tokens it
 * amortizes: c->tok_bytes). */
static inline double pipe_link_tps(const pctx *c, int i, int j)
{
	return hx_gbps_bytes_s(pipe_link(c, i, j)->bw_gbps) / c->tok_bytes;
}

/* The latency of the link I -> J, seconds. */
static inline double pipe_lat_s(const pctx *c, int i, int j)
{
	return pipe_link(c, i, j)->latency_ms * 1e-3;
}

/* Seconds one token's activations take over the link I -> J. */
static inline double pipe_hop_tok_s(const pctx *c, int i, int j)
{
	return c->act_bytes / hx_gbps_bytes_s(pipe_link(c, i, j)->bw_gbps);
}

/* The share of its flow a replan gives up per node it changes: a node is
 * moved (or started) for at least 0.3% more flow.  At 0.1% the bench's
 * pipeline (39 fragments, one lost) started 19 for 68.7 req/s, at 0.3% 10
 * for 66.0 (its rate needs 65.0), at 1% 9 for 64.8 (short). */
#define HX_PIPE_MOVE_COST 3e-3

/* Whether J passes tokens to I in placement F/L: J ends where I starts,
 * or (C->net.overlap, Helix's rule) inside I's range, I running from there. */
static inline int pipe_feeds(const pctx *c, const int *f, const int *l, int j, int i)
{
	if (f[j] < 0 || f[i] < 0 || j == i)
		return 0;
	return c->net.overlap ? f[i] <= l[j] && l[j] < l[i] : l[j] == f[i];
}

/* Capacity (tokens/s) of node I holding K layers. */
static inline double node_thr(const pctx *c, int i, int k)
{
	return c->ty[c->type[i]].thr[k];
}

/* The most layers node I holds in any position: a middle fragment at most
 * L - 2, a node that is first and last all L. */
static inline int node_cap(const pctx *c, int i)
{
	const ntype *t = &c->ty[c->type[i]];
	int k = 0;
	for (int pos = 0; pos < 4; pos++)
		k = t->kmax[pos] > k ? t->kmax[pos] : k;
	return k;
}

/* pipeline_search.c */

/* Each node's capacity (tokens/s) under placement FIRST/LAST into
 * c->net.node_tps: its batch's rate, at most the sequences its KV holds
 * per round trip of the slowest path; *TPOT_S and *TTFT_S get that path's
 * decode round trip and percentile prefill. */
void hx_pipe_node_caps(pctx *c, const int *first, const int *last, double *tpot_s,
		       double *ttft_s);

/* Flow of a placement (-1 on a failed max-flow: the search stops), less a
 * penalty when a path breaks the TPOT or TTFT SLO (see there) and, in a
 * replan, HX_PIPE_MOVE_COST per node moved; KEEP (may
 * be NULL) gets the flow, the caller releases it. */
double hx_pipe_score(pctx *c, const int *first, const int *last, hx_pipe_flow *keep);
/* No node holds anything. */
void hx_pipe_clear(const pctx *c, int *first, int *last);
/* Construction K (0 .. HX_PIPE_NCONSTRUCTIONS - 1) into FIRST/LAST. */
void hx_pipe_construct(pctx *c, int k, int *first, int *last);
/* The seeded local search from BEST_F/BEST_L (flow *BEST_V), at most WORK
 * flow evaluations; improves them in place and returns the moves made. */
long hx_pipe_search(pctx *c, int *best_f, int *best_l, double *best_v, long work);

/* pipeline_emit.c */

/* The plan of placement F/L into P (groups, hops, ingress, predictions;
 * not finished: see hx_plan_finish), *VALUE its flow; 0 or an error. */
int hx_pipe_emit(pctx *c, const int *f, const int *l, hx_plan *p, double *value, hx_err *err);

#endif
