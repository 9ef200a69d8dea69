/* baseline: the yardstick mode (baseline.c). */
#ifndef HX_PLANNERS_BASELINE_H
#define HX_PLANNERS_BASELINE_H

#include "planners/common.h"

/* baseline: what an operator does by hand (DESIGN §6).  Exit-3 problems
 * (the model fits on no node or set of nodes) return HX_EINFEASIBLE with ERR
 * saying what binds. */
int hx_plan_baseline(const hx_problem *pb, hx_plan *out, hx_err *err);
#endif
