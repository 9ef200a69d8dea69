/*
 * graph: a directed graph with a capacity (or weight) per edge, the plain
 * type solver/flow and solver/partition take (they build igraph's from it;
 * no GPU knowledge here).
 */
#ifndef HX_GRAPH_H
#define HX_GRAPH_H

typedef struct hx_graph {
	int n, m;
	int *from, *to;
	double *cap;
	int capm;
} hx_graph;

/* An empty graph of N vertices; release with hx_graph_release. */
void hx_graph_init(hx_graph *g, int n);
void hx_graph_release(hx_graph *g);
/* Add the edge U -> V with capacity CAP; returns its index. */
int hx_graph_add_edge(hx_graph *g, int u, int v, double cap);

#endif
