/*
 * replan: a plan adapted to a changed cluster or workload (ThunderServe's
 * lightweight re-scheduling; DESIGN §6).  Every replica whose GPUs still
 * exist (same node, index and GPU type) is kept as it is, under its id;
 * the others stop.  When the kept replicas carry the workload's rate at the
 * SLO with the utilization margin, only routing changes: ingress weights in
 * proportion to what each group keeps (per length class where the plan
 * routes by class), KV routes of disaggregated plans pruned and
 * renormalized.  Otherwise the fewest new replicas (each loads the model's
 * weights once, so fewest replicas is fewest bytes moved) are placed on the
 * free GPUs by the colocated machinery (candidates and a MILP).  The moves
 * are reported beside the new plan, never inside it (DESIGN §7).
 */
#ifndef HX_REPLAN_H
#define HX_REPLAN_H

#include "planners/common.h"

/* Kept replicas must carry rate / HX_REPLAN_UTIL for routing alone to do. */
#define HX_REPLAN_UTIL 0.9

enum { HX_MOVE_STOP, HX_MOVE_START, HX_MOVE_ROLE, HX_MOVE_WEIGHT };

typedef struct hx_move {
	int kind;         /* HX_MOVE_* */
	char replica[48]; /* stop, start, role */
	char group[48];
	char cls[64];    /* weight: the ingress class ("" : all traffic) */
	char why[200];   /* stop: what vanished */
	double from, to; /* weight: old and new */
	double bytes;    /* start: weight bytes to load */
	int gpus;        /* start, stop: GPUs of the replica */
} hx_move;

typedef struct hx_moves {
	int replicas_before, kept, stopped, started, roles_flipped, weights_changed;
	int routing_only; /* no replica started */
	double bytes_to_load;
	double capacity_before_rps, capacity_after_rps; /* at the SLO */
	double rate_rps;                                /* the workload's (0 without one) */
	hx_move *m;
	int n;
} hx_moves;

void hx_moves_release(hx_moves *mv);

/* How a pipeline plan is adapted: hx_pipe_adapt (pipeline.h), which the
 * caller hands in (planners do not call one another; the command layer
 * wires them). */
typedef int (*hx_replan_pipe_fn)(const hx_problem *pb, int *first, int *last,
				 const int *lost_first, const int *lost_last, int nlost,
				 hx_plan *out, hx_err *err);

typedef struct hx_replan_opts {
	int strict;             /* no short plan: HX_EINFEASIBLE instead */
	hx_replan_pipe_fn pipe; /* NULL: pipeline plans are refused */
	/* Keep and re-route only: no replica starts and no role flips (what
	 * the plan already holds must carry the rate, as check
	 * --tolerate-failures asks); pipeline plans are refused. */
	int no_start;
	/* New replicas: the least USD/h of them first (then the fewest),
	 * rather than the fewest (each loads the weights once) with cost a
	 * tie-break; what plan --tolerate-failures asks of its insurance. */
	int cheapest;
} hx_replan_opts;

/* Make the weights of LIST (N routes) sum to exactly 1 per FROM key (each
 * length class, or "" for all traffic), as hx_routes_normalize does. */
void hx_replan_normalize_per_key(hx_route *list, int n);

/* Adapt OLD to cluster CL (as loaded: offers not yet expanded) and workload
 * W (NULL: keep and re-route only, with the capacities OLD records).  PB
 * gives the catalog, digests' paths, seed and model (PB->model: the plan's
 * model; PB->workload and PB->cluster are ignored).  OUT gets the new plan,
 * MV the moves (release both).  When the GPUs left cannot carry W's rate,
 * OUT is the plan with the most capacity they allow, marked short
 * (OUT->shortage), or, with RO->strict, there is none; with RO->no_start
 * OUT is the kept replicas re-routed, marked short when they fall short.
 * Returns 0,
 * HX_EINFEASIBLE when strict and the GPUs left cannot carry the rate, or
 * when no replica survives or fits (the message says how far short),
 * HX_EINPUT for a plan replan cannot adapt. */
int hx_replan(const hx_plan *old, const hx_cluster *cl, const hx_workload *w,
	      const hx_problem *pb, const hx_plan_opts *o, const hx_replan_opts *ro,
	      hx_plan *out, hx_moves *mv, hx_err *err);

#endif
