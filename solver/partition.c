/* partition: see partition.h. */
#include "config.h"

#include "solver/partition.h"
#include "solver/ighook.h"

#include <igraph/igraph.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Symmetric weight of the pair (i, j) among the vertices V[0..n). */
static double *dense_weights(const hx_graph *g, const int *v, int n)
{
	double *w = hx_xcalloc((size_t)n * n + 1, sizeof(double));
	int *pos = hx_xmalloc((size_t)g->n * sizeof(int) + 1);

	for (int i = 0; i < g->n; i++)
		pos[i] = -1;
	for (int i = 0; i < n; i++)
		pos[v[i]] = i;
	for (int e = 0; e < g->m; e++) {
		int a = pos[g->from[e]], b = pos[g->to[e]];
		if (a < 0 || b < 0 || a == b)
			continue;
		w[a * n + b] += g->cap[e];
		w[b * n + a] += g->cap[e];
	}
	free(pos);
	return w;
}

/* The Fiedler vector of the weighted Laplacian of the N vertices (power
 * iteration on c I - L, the constant vector projected out). */
static void fiedler(const double *w, int n, hx_rng *rng, double *x)
{
	double *deg = hx_xcalloc((size_t)n, sizeof(double)),
	       *y = hx_xcalloc((size_t)n, sizeof(double));
	double c = 0;

	for (int i = 0; i < n; i++) {
		for (int j = 0; j < n; j++)
			deg[i] += w[i * n + j];
		c = fmax(c, 2 * deg[i]);
	}
	c += 1e-9;
	for (int i = 0; i < n; i++)
		x[i] = hx_rng_uniform(rng) - 0.5;
	for (int it = 0; it < 3000; it++) {
		double mean = 0, norm = 0;
		for (int i = 0; i < n; i++)
			mean += x[i] / n;
		for (int i = 0; i < n; i++)
			x[i] -= mean;
		for (int i = 0; i < n; i++) {
			double lx = deg[i] * x[i];
			for (int j = 0; j < n; j++)
				lx -= w[i * n + j] * x[j];
			y[i] = c * x[i] - lx;
		}
		for (int i = 0; i < n; i++)
			norm += y[i] * y[i];
		norm = sqrt(norm);
		if (norm < 1e-300)
			break;
		/* Converged when an iteration moves no entry by more than
		 * 1e-12 (the caller rounds the vector well above that). */
		{
			double moved = 0;
			for (int i = 0; i < n; i++) {
				moved = fmax(moved, fabs(y[i] / norm - x[i]));
				x[i] = y[i] / norm;
			}
			if (moved < 1e-12)
				break;
		}
	}
	free(deg);
	free(y);
}

typedef struct keyed {
	double key;
	int v;
} keyed;

static int cmp_keyed(const void *a, const void *b)
{
	const keyed *x = a, *y = b;
	if (x->key != y->key)
		return (x->key > y->key) - (x->key < y->key);
	return x->v - y->v;
}

typedef struct conn_ctx {
	const hx_graph *g;
	const int *pos;
	int n;
	igraph_bool_t conn;
} conn_ctx;

static int connected_inner(void *arg)
{
	conn_ctx *c = arg;
	igraph_t ig;
	igraph_vector_int_t edges;
	int rc;

	igraph_vector_int_init(&edges, 0);
	for (int e = 0; e < c->g->m; e++) {
		int a = c->pos[c->g->from[e]], b = c->pos[c->g->to[e]];
		if (a >= 0 && b >= 0 && a != b && c->g->cap[e] > 0) {
			igraph_vector_int_push_back(&edges, a);
			igraph_vector_int_push_back(&edges, b);
		}
	}
	rc = igraph_create(&ig, &edges, c->n, IGRAPH_UNDIRECTED);
	if (rc == IGRAPH_SUCCESS) {
		rc = igraph_is_connected(&ig, &c->conn, IGRAPH_WEAK);
		igraph_destroy(&ig);
	}
	igraph_vector_int_destroy(&edges);
	return rc;
}

static int connected_set(const hx_graph *g, const int *v, int n);

/* Split vertices V[0..n) into K groups numbered from BASE. */
static void bisect(const hx_graph *g, const double *nw, int *v, int n, int k, int base,
		   hx_rng *rng, int *group)
{
	double *w, *x, total = 0, acc = 0;
	keyed *order;
	int k1, cut;

	if (k <= 1 || n <= 1) {
		for (int i = 0; i < n; i++)
			group[v[i]] = base;
		return;
	}
	w = dense_weights(g, v, n);
	x = hx_xcalloc((size_t)n, sizeof(double));
	fiedler(w, n, rng, x);
	order = hx_xcalloc((size_t)n, sizeof(keyed));
	for (int i = 0; i < n; i++) {
		/* Round away power-iteration noise so ties break by vertex. */
		order[i] = (keyed){floor(x[i] * 1e9 + 0.5) / 1e9, v[i]};
		total += nw ? nw[v[i]] : 1;
	}
	qsort(order, (size_t)n, sizeof(keyed), cmp_keyed);
	k1 = k / 2;
	/* Cut where the first side holds its share of the weight, leaving each
	 * side at least as many vertices as groups. */
	for (cut = 0; cut < n; cut++) {
		acc += nw ? nw[order[cut].v] : 1;
		if (acc >= total * k1 / k - 1e-12)
			break;
	}
	cut++;
	if (cut < k1)
		cut = k1;
	if (n - cut < k - k1)
		cut = n - (k - k1);
	/* Prefer a neighbouring cut that keeps both sides connected. */
	{
		int best = cut;
		for (int d = 0; d < n; d++) {
			int c2[2] = {cut - d, cut + d};
			int found = 0;
			for (int t = 0; t < 2 && !found; t++) {
				int cc = c2[t], *a, *b, ok;
				if (cc < k1 || n - cc < k - k1)
					continue;
				a = hx_xmalloc((size_t)n * sizeof(int));
				for (int i = 0; i < n; i++)
					a[i] = order[i].v;
				b = a + cc;
				ok = connected_set(g, a, cc) && connected_set(g, b, n - cc);
				free(a);
				if (ok) {
					best = cc;
					found = 1;
				}
			}
			if (found)
				break;
		}
		cut = best;
	}
	for (int i = 0; i < n; i++)
		v[i] = order[i].v;
	free(order);
	free(x);
	free(w);
	bisect(g, nw, v, cut, k1, base, rng, group);
	bisect(g, nw, v + cut, n - cut, k - k1, base + k1, rng, group);
}

/* igraph: are the vertices V[0..n) connected in G (edges both ways)? */
static int connected_set(const hx_graph *g, const int *v, int n)
{
	conn_ctx c = {0};
	int *pos;
	hx_err err = {0};

	if (n <= 1)
		return 1;
	pos = hx_xmalloc((size_t)g->n * sizeof(int) + 1);
	for (int i = 0; i < g->n; i++)
		pos[i] = -1;
	for (int i = 0; i < n; i++)
		pos[v[i]] = i;
	c.g = g;
	c.pos = pos;
	c.n = n;
	/* An igraph failure (out of memory) counts as not connected: the
	 * caller then keeps the set whole, which is always valid. */
	if (hx_igraph_guard(connected_inner, &c, "connectivity", &err) != 0)
		c.conn = 0;
	free(pos);
	return c.conn != 0;
}

int hx_partition_connected(const hx_graph *g, const int *group, int which)
{
	int *v = hx_xmalloc((size_t)g->n * sizeof(int) + 1), n = 0, ok;

	for (int i = 0; i < g->n; i++)
		if (group[i] == which)
			v[n++] = i;
	ok = connected_set(g, v, n);
	free(v);
	return ok;
}

/* Even out the groups' node weights: move a vertex from the heaviest group
 * to a group it has an edge to, when that lowers the heaviest weight and
 * keeps both groups connected and non-empty. */
static void balance(const hx_graph *g, const double *nw, int k, int *group)
{
	double *gw = hx_xcalloc((size_t)k, sizeof(double));
	int *size = hx_xcalloc((size_t)k, sizeof(int));

	for (int i = 0; i < g->n; i++) {
		gw[group[i]] += nw ? nw[i] : 1;
		size[group[i]]++;
	}
	for (int round = 0; round < 4 * g->n; round++) {
		int heavy = 0, moved = 0;
		for (int q = 1; q < k; q++)
			if (gw[q] > gw[heavy])
				heavy = q;
		for (int e = 0; e < 2 * g->m && !moved; e++) {
			int u = e < g->m ? g->from[e] : g->to[e - g->m];
			int x = e < g->m ? g->to[e] : g->from[e - g->m];
			int to = group[x];
			double wu = nw ? nw[u] : 1;
			if (group[u] != heavy || to == heavy || size[heavy] <= 1)
				continue;
			if (gw[to] + wu >= gw[heavy] - 1e-12)
				continue;
			group[u] = to;
			if (!hx_partition_connected(g, group, heavy) ||
			    !hx_partition_connected(g, group, to)) {
				group[u] = heavy;
				continue;
			}
			gw[heavy] -= wu;
			gw[to] += wu;
			size[heavy]--;
			size[to]++;
			moved = 1;
		}
		if (!moved)
			break;
	}
	free(gw);
	free(size);
}

int hx_partition(const hx_graph *g, const double *node_w, int k, uint64_t seed, int *group,
		 hx_err *err)
{
	hx_rng rng;
	int *v;

	if (k < 1 || k > g->n)
		return hx_errf(err, HX_EINPUT, "partition: %d groups of %d vertices", k, g->n);
	for (int e = 0; e < g->m; e++)
		if (g->from[e] < 0 || g->from[e] >= g->n || g->to[e] < 0 || g->to[e] >= g->n ||
		    !(g->cap[e] >= 0))
			return hx_errf(err, HX_EINPUT, "partition: bad edge %d", e);
	hx_rng_seed(&rng, seed);
	v = hx_xmalloc((size_t)g->n * sizeof(int) + 1);
	for (int i = 0; i < g->n; i++)
		v[i] = i;
	bisect(g, node_w, v, g->n, k, 0, &rng, group);
	free(v);
	balance(g, node_w, k, group);
	return 0;
}
