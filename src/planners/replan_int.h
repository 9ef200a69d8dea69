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

/* Pipeline plans (OLD has hops): the fragments on nodes that survive in CL
 * stay, those of lost nodes are re-placed on free nodes and the hops
 * re-routed around the lost ones (RO->pipe); kept fragments keep their
 * group and replica names.  Arguments and returns as hx_replan's; CL has
 * its offers expanded. */
int hx_replan_pipeline(const hx_plan *old, const hx_cluster *cl, const hx_workload *w,
		       const hx_problem *pb, const hx_replan_opts *ro, hx_plan *p, hx_moves *mv,
		       hx_err *err);

#endif
