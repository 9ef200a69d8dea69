/* replan's private header: what replan.c (plans of one model without
 * hops) shares with replan_pipeline.c (pipeline plans) and
 * replan_cascade.c (cascade and route plans).  Only they include it. */
#ifndef HX_PLANNERS_REPLAN_INT_H
#define HX_PLANNERS_REPLAN_INT_H

#include "planners/replan.h"

/* A new move of KIND appended to MV: a pointer into MV, zeroed but for
 * the kind. */
hx_move *hx_replan_move(hx_moves *mv, int kind);

/* The index of the node named NAME in C, or -1. */
int hx_replan_node(const hx_cluster *c, const char *name);

/* The GPUs of replica R of G. */
int hx_replan_replica_gpus(const hx_plan_group *g, const hx_plan_replica *r);

/* Whether replica R of G still has all its GPUs in CL (same node, index and
 * GPU type); WHY[NWHY] says what is gone when not. */
int hx_replan_alive(const hx_plan_group *g, const hx_plan_replica *r, const hx_cluster *cl,
		    char *why, size_t nwhy);

/* Mark P short of W's rate (P->shortage) when its predicted capacity falls
 * below rate / HX_REPLAN_UTIL; clear the mark otherwise. */
void hx_replan_mark_short(hx_plan *p, const hx_workload *w);

/* Keep the replicas of P whose GPUs survive on CL (a stop move in MV for
 * each other one) and drop the groups left empty; BEFORE[g] (of the kept
 * groups, P->ngroups + 1 of room) is their replica count before.  Returns
 * whether P has a disaggregated group. */
int hx_replan_keep(hx_plan *p, const hx_cluster *cl, hx_moves *mv, int *before);

/* Ingress after replicas stopped: each route's weight scaled by the share
 * of its group's replicas kept (BEFORE, as hx_replan_keep gives), per
 * class; a class left with no weight goes to every serving group by
 * capacity. */
void hx_replan_reroute(hx_plan *p, const int *before);

/* P's price from its GPUs on CL and its capacity from the group capacities
 * it records (no workload to price them at). */
void hx_replan_recorded_predictions(hx_plan *p, const hx_cluster *cl);

/* A weight move in MV for each ingress route whose weight differs between
 * OLD and P. */
void hx_replan_weight_moves(const hx_plan *old, const hx_plan *p, hx_moves *mv);

/* Cascade and route plans (P a copy of OLD, CL with offers expanded):
 * the replicas that survive stay, with the capacities OLD records; a
 * cascade keeps its thresholds, its ingress to the first model's kept
 * groups by their kept shares; a route plan keeps each model's fraction,
 * spread over the model's kept groups.  Arguments and returns as
 * hx_replan's (P released on error). */
int hx_replan_cascade(const hx_plan *old, const hx_cluster *cl, const hx_workload *w,
		      const hx_replan_opts *ro, hx_plan *p, hx_moves *mv, hx_err *err);

/* Pipeline plans (OLD has hops): the fragments on nodes that survive in CL
 * stay, those of lost nodes are re-placed on free nodes and the hops
 * re-routed around the lost ones (RO->pipe); kept fragments keep their
 * group and replica names.  Arguments and returns as hx_replan's; CL has
 * its offers expanded. */
int hx_replan_pipeline(const hx_plan *old, const hx_cluster *cl, const hx_workload *w,
		       const hx_problem *pb, const hx_replan_opts *ro, hx_plan *p, hx_moves *mv,
		       hx_err *err);

/* The KV links' limits on disaggregated plans (replan_kv.c).  The KV
 * bytes of a mean prompt of W for P's model (at its prefill groups'
 * KV dtype). */
double hx_replan_kv_bytes(const hx_plan *p, const hx_workload *w);

/* The requests/s whose KV a replica on node NODE of CL could move to (a
 * PREFILL one) or from (a decode one) the replicas of the other role in
 * P: its NIC and the links to their nodes (bandwidth / KV_BYTES), and
 * unbounded when one of them shares its node. */
double hx_replan_kv_limit(const hx_plan *p, const hx_cluster *cl, int node, int prefill,
			  double kv_bytes);

/* What P's prefill and decode replicas carry through the NICs and links
 * of CL between them (a max-flow in requests/s, as the disagg planner
 * scores a plan) in *CAP; with REROUTE, the ingress to the prefill groups
 * and the kv routes follow the flow.  Returns 0 or the flow solver's
 * error. */
int hx_replan_kv_flow(hx_plan *p, const hx_cluster *cl, const hx_workload *w, int reroute,
		      double *cap, hx_err *err);

#endif
