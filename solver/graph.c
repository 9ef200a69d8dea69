/* graph: see graph.h. */
#include "config.h"

#include "solver/graph.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

void hx_graph_init(hx_graph *g, int n)
{
	memset(g, 0, sizeof(*g));
	g->n = n;
}

void hx_graph_release(hx_graph *g)
{
	free(g->from);
	free(g->to);
	free(g->cap);
	memset(g, 0, sizeof(*g));
}

int hx_graph_add_edge(hx_graph *g, int u, int v, double cap)
{
	if (g->m == g->capm) {
		g->capm = g->capm ? 2 * g->capm : 64;
		g->from = hx_xrealloc(g->from, (size_t)g->capm * sizeof(int));
		g->to = hx_xrealloc(g->to, (size_t)g->capm * sizeof(int));
		g->cap = hx_xrealloc(g->cap, (size_t)g->capm * sizeof(double));
	}
	g->from[g->m] = u;
	g->to[g->m] = v;
	g->cap[g->m] = cap;
	return g->m++;
}
