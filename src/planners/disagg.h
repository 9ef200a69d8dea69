/* disagg: prefill and decode on different nodes (disagg.c). */
#ifndef HX_PLANNERS_DISAGG_H
#define HX_PLANNERS_DISAGG_H

#include "planners/common.h"

/* disagg (HexGen-2, ThunderServe): prefill and decode on different nodes.
 * The node graph (links weighted by bandwidth) is partitioned into groups;
 * each group takes a role; a max-flow in requests/s from prefill replicas
 * through the NICs and links that carry their KV caches to decode replicas
 * scores the assignment and gives the routing weights; single nodes then
 * flip roles while that raises the flow. */
int hx_plan_disagg(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out, hx_err *err);
#endif
