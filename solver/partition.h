/*
 * partition: split an undirected weighted graph (the edges' capacities are
 * weights; direction is ignored) into K connected groups with high internal
 * weight: recursive spectral bisection, each cut at the Fiedler vector of
 * the weighted Laplacian (by power iteration, orthogonal to the constant
 * vector), placed so the two sides' node weights match the numbers of
 * groups each side will hold; then a balancing pass moves boundary vertices
 * from the heaviest group to a lighter neighbour while that evens the node
 * weights without disconnecting a group.  Connectivity is checked with
 * igraph.  Deterministic for a given seed.
 */
#ifndef HX_PARTITION_H
#define HX_PARTITION_H

#include <stdint.h>

#include "solver/graph.h"
#include "base/util.h"

/* GROUP[v] in 0..K-1 for each vertex of G (K <= G's vertices), balancing
 * NODE_W (NULL: 1 each).  Returns 0 or HX_EINPUT with ERR. */
int hx_partition(const hx_graph *g, const double *node_w, int k, uint64_t seed, int *group,
		 hx_err *err);

/* 1 when the vertices with GROUP[v] == G are connected in graph G (igraph). */
int hx_partition_connected(const hx_graph *g, const int *group, int which);

#endif
