/* colocated: HexGen-style asymmetric replicas (colocated.c). */
#ifndef HX_PLANNERS_COLOCATED_H
#define HX_PLANNERS_COLOCATED_H

#include "planners/common.h"

/* colocated (HexGen): asymmetric TP/PP replicas over mixed GPUs chosen by a
 * MILP over the candidate shapes (candidates.h): maximize capacity at the
 * SLO, or the cheapest set that carries the workload's rate, or the lowest
 * percentile TTFT bound at that rate. */
int hx_plan_colocated(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out, hx_err *err);
#endif
