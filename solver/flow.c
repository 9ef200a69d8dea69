/* flow: see flow.h.  With partition.c, the only modules that include igraph. */
#include "config.h"

#include "solver/flow.h"
#include "solver/ighook.h"

#include <igraph/igraph.h>
#include <stdlib.h>
#include <string.h>

typedef struct flow_ctx {
	const hx_graph *g;
	int s, t;
	hx_flow_result *res;
} flow_ctx;

static int flow_inner(void *arg)
{
	flow_ctx *c = arg;
	const hx_graph *g = c->g;
	int rc;
	igraph_t ig;
	igraph_vector_int_t edges, part;
	igraph_vector_t cap, flow;
	igraph_real_t value;

	igraph_vector_int_init(&edges, 2 * g->m);
	for (int e = 0; e < g->m; e++) {
		VECTOR(edges)[2 * e] = g->from[e];
		VECTOR(edges)[2 * e + 1] = g->to[e];
	}
	igraph_vector_init(&cap, g->m);
	for (int e = 0; e < g->m; e++)
		VECTOR(cap)[e] = g->cap[e];
	igraph_vector_init(&flow, 0);
	igraph_vector_int_init(&part, 0);
	rc = igraph_create(&ig, &edges, g->n, IGRAPH_DIRECTED);
	if (rc == IGRAPH_SUCCESS) {
		rc = igraph_maxflow(&ig, &value, &flow, NULL, &part, NULL, c->s, c->t, &cap,
				    NULL);
		if (rc == IGRAPH_SUCCESS) {
			c->res->value = value;
			for (int e = 0; e < g->m; e++)
				c->res->flow[e] = VECTOR(flow)[e];
			for (igraph_integer_t i = 0; i < igraph_vector_int_size(&part); i++)
				c->res->source_side[VECTOR(part)[i]] = 1;
		}
		igraph_destroy(&ig);
	}
	igraph_vector_int_destroy(&part);
	igraph_vector_destroy(&flow);
	igraph_vector_destroy(&cap);
	igraph_vector_int_destroy(&edges);
	return rc;
}

int hx_flow_max(const hx_graph *g, int s, int t, hx_flow_result *res, hx_err *err)
{
	flow_ctx c;

	memset(res, 0, sizeof(*res));
	res->flow = hx_xcalloc((size_t)g->m + 1, sizeof(double));
	res->source_side = hx_xcalloc((size_t)g->n + 1, sizeof(int));
	if (s < 0 || s >= g->n || t < 0 || t >= g->n || s == t)
		return hx_errf(err, HX_EINPUT, "max-flow: bad source or sink");
	for (int e = 0; e < g->m; e++)
		if (g->from[e] < 0 || g->from[e] >= g->n || g->to[e] < 0 || g->to[e] >= g->n ||
		    !(g->cap[e] >= 0))
			return hx_errf(err, HX_EINPUT, "max-flow: bad edge %d", e);
	c = (flow_ctx){g, s, t, res};
	return hx_igraph_guard(flow_inner, &c, "max-flow", err);
}

void hx_flow_result_release(hx_flow_result *res)
{
	free(res->flow);
	free(res->source_side);
	memset(res, 0, sizeof(*res));
}
