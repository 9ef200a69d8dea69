/*
 * flow: s-t maximum flow over igraph (push-relabel), with the flow on every
 * edge and the minimum cut.  igraph runs under hx_igraph_guard (ighook.h),
 * so an igraph failure becomes an error status, never an abort.
 */
#ifndef HX_FLOW_H
#define HX_FLOW_H

#include "solver/graph.h"
#include "base/util.h"

typedef struct hx_flow_result {
	double value;
	double *flow;     /* per edge */
	int *source_side; /* per vertex: 1 when on the source side of the min cut */
} hx_flow_result;

/* Maximum flow from S to T in G.  Fills RES (release with
 * hx_flow_result_release); returns 0 or HX_EINPUT with ERR. */
int hx_flow_max(const hx_graph *g, int s, int t, hx_flow_result *res, hx_err *err);
void hx_flow_result_release(hx_flow_result *res);

#endif
