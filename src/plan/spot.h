/* Spot capacity: what a plan's spot nodes risk.  A spot node is taken back
 * at its offer's rate and its replicas stay lost for a window (a
 * replacement node plus loading the weights); the plan keeps its SLO while
 * the spot nodes lost at once are no more than it carries its rate
 * without.  Everything here reads the plan alone (its rent entries and
 * per-replica capacities), so that check recomputes what compose wrote. */
#ifndef HX_PLAN_SPOT_H
#define HX_PLAN_SPOT_H

#include "plan/plan.h"

/* The probability that the SLO holds when spot capacity is planned for:
 * the default of --slo-probability. */
#define HX_SPOT_SLO_PROBABILITY 0.99

/* The utilization compose plans at: the capacity a rate needs is the rate
 * over it (spot.need_rps). */
#define HX_SPOT_UTIL 0.9

/* How long a preempted spot node's replicas of model M stay lost when the
 * node loads weights at LOAD_GBPS: HX_SPOT_REPLACE_S plus the model's
 * weights' bytes over that bandwidth. */
double hx_spot_window_s(const hx_model *m, double load_gbps);

/* The chance that a spot node of rent entry R is down at a given moment
 * (lost within the last window): 1 - exp(-rate * window). */
double hx_spot_down(const hx_plan_rent *r);

/* Assess P's spot nodes against NEED_RPS (the capacity the rate needs, at
 * most all of P's: the plan as made carries its rate):
 * OUT->nodes, survives_nodes, slo_probability and expected_usd_per_hour
 * (OUT->target untouched; OUT->on set when P uses spot nodes).  The most
 * nodes the plan survives losing is counted by losing the spot nodes that
 * host the most capacity first; the number lost at once is the sum of
 * independent Bernoulli(hx_spot_down) draws, one per spot node. */
void hx_spot_assess(const hx_plan *p, double need_rps, hx_plan_spot *out);

/* OUT as hx_spot_assess fills it when P survives losing K spot nodes
 * (need_rps and target untouched), and the capacity that P keeps when the K
 * (LEFT_RPS[0]) and K + 1 (LEFT_RPS[1]; -1 past the last) spot nodes
 * hosting the most are lost. */
void hx_spot_at(const hx_plan *p, int k, hx_plan_spot *out, double left_rps[2]);

#endif
