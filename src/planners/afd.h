/* afd: attention/FFN disaggregated decode beside prefill replicas (afd.c). */
#ifndef HX_PLANNERS_AFD_H
#define HX_PLANNERS_AFD_H

#include "planners/common.h"

/* The most attention and FFN instances a unit of the afd mode has (each). */
#define HX_AFD_MAX_INSTANCES 8
/* The most micro-batches it tries. */
#define HX_AFD_MAX_MICRO 3

/* afd (issue 22): decode units of attention instances on one GPU type and
 * FFN (or expert) instances on another (or the same), the micro-batches in
 * flight and the batch chosen for the most decode capacity per GPU at the
 * TPOT SLO (hx_cost_afd); as many units as the nodes hold, the split
 * between them and one-node prefill replicas searched for the most plan
 * capacity (the smaller of the two sides).  HX_EINFEASIBLE when no unit
 * meets the SLO or no GPU is left for prefill. */
int hx_plan_attn_ffn(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out, hx_err *err);

#endif
