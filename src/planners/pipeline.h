/*
 * pipeline: the scoring engine of `plan --mode pipeline` (Helix, Parallax;
 * DESIGN §6), apart from the planner so that tests reach it.  A placement
 * gives each node a contiguous layer range [first, last) or nothing
 * (first < 0).  Its throughput is the max-flow, in generated tokens/s, of
 * the node-split graph: source -> in(i) for nodes holding layer 0, in(i) ->
 * out(i) with the node's capacity for its range, out(i) -> in(j) wherever
 * last(i) == first(j) with the link's capacity, out(i) -> sink for nodes
 * holding the last layer.
 */
#ifndef HX_PIPELINE_H
#define HX_PIPELINE_H

#include "model/tables.h"
#include "planners/common.h"
#include "base/util.h"

typedef struct hx_pipe_net {
	int n;            /* nodes */
	int layers;       /* L */
	double *node_tps; /* per node: capacity for its range (tokens/s) */
	double *link_tps; /* n * n: capacity of the link i -> j (tokens/s), or NULL: */
	int overlap;      /* hops also where first(j) < last(i) < last(j) (Helix's rule) */
	/* the capacity of the link i -> j when link_tps is NULL (an n x n
	 * table is 134 MB at the node limit, where most pairs share a
	 * region's default) */
	double (*link_at)(const void *ctx, int i, int j);
	const void *link_ctx;
} hx_pipe_net;

typedef struct hx_pipe_flow {
	double value;    /* tokens/s */
	double *through; /* per node: flow through it */
	double *src;     /* per node: flow from the source */
	/* the hops out(i) -> in(j) of the graph, by i then j: hop[h] flows
	 * from node hop_from[h] to hop_to[h] (nhop of them; not n x n, which
	 * at the node limit is 134 MB a flow) */
	int nhop;
	int *hop_from, *hop_to;
	double *hop;
} hx_pipe_flow;

/* Max-flow of the placement FIRST/LAST (per node; first < 0: unused) over
 * NET.  Fills F (release with hx_pipe_flow_release); returns 0 or
 * HX_EINPUT with ERR (a failed max-flow). */
int hx_pipe_flow_eval(const hx_pipe_net *net, const int *first, const int *last,
		      hx_pipe_flow *f, hx_err *err);
void hx_pipe_flow_release(hx_pipe_flow *f);

/* The planner with what bench/ and tests look at. */
#define HX_PIPE_NCONSTRUCTIONS 4 /* per-type, balanced, greedy, staged */
#define HX_PIPE_STAGED         3 /* built with --objective throughput only */
const char *hx_pipe_construction_name(int k);

typedef struct hx_pipe_opts {
	long
	    work; /* flow evaluations of the local search (0: 2000 n + 20000, at most 150000) */
	int no_search; /* the best construction alone */
	const char
	    *layer_costs; /* a layer-cost CSV to use instead of the cost model (may be NULL) */
	int throughput;   /* no latency SLO: plain max-flow (set from --objective throughput) */
	double weights_mem_frac; /* weights take at most this share of a GPU's memory (0: 1) */
	const char
	    *placement; /* evaluate this placement (CSV node,first,last) instead of searching */
} hx_pipe_opts;

typedef struct hx_pipe_stats {
	double construction[HX_PIPE_NCONSTRUCTIONS]; /* flow of each, tokens/s */
	double flow, bound;                          /* the plan's, tokens/s */
	long flows;                                  /* max-flows solved */
	double seconds;                              /* wall clock (never in the plan) */
} hx_pipe_stats;

/* hx_plan_pipeline with options PO (may be NULL) and statistics ST (may be
 * NULL). */
int hx_plan_pipeline_run(const hx_problem *pb, const hx_plan_opts *o, const hx_pipe_opts *po,
			 hx_plan *p, hx_pipe_stats *st, hx_err *err);

/* pipeline (Helix, Parallax): each node holds a contiguous layer range;
 * a placement is scored by the max-flow of generated tokens/s through the
 * node-split graph (below); constructions and a seeded local search.
 * One group per node (one stage, one replica); routing.ingress reaches the
 * nodes holding layer 0 and routing.hops carry the flow node to node. */
int hx_plan_pipeline(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out, hx_err *err);

/* replan of a pipeline plan: FIRST/LAST per node of PB's cluster (-1:
 * none) hold the fragments that survive; each lost fragment [LOST_FIRST[k],
 * LOST_LAST[k]) is re-placed on free nodes (the fewest, front to back,
 * each holding the most it can), then the placement is repaired for flow
 * (the best single-node changes, then the planner's local search, each
 * node moved costing HX_PIPE_MOVE_COST of the flow), and its flow gives
 * the hops and ingress, as the planner's own (nodes that carry no flow
 * dropped).  FIRST/LAST are updated.  OUT gets the plan (groups named g0.. in layer
 * order; the caller renames).  Returns 0, HX_EINFEASIBLE when no chain is
 * left, or an error. */
int hx_pipe_adapt(const hx_problem *pb, int *first, int *last, const int *lost_first,
		  const int *lost_last, int nlost, hx_plan *out, hx_err *err);

#endif
