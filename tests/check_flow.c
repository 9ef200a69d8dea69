/* Check suite: max-flow against an independent Edmonds-Karp and the cut it
 * reports; graph partition. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/flow.h"
#include "solver/ighook.h"
#include "solver/partition.h"
#include "check_util.h"

/* Edmonds-Karp on a dense residual matrix: the test's own max-flow. */
static double edmonds_karp(const hx_graph *g, int s, int t)
{
	int n = g->n, *prev = malloc(sizeof(int) * n), *queue = malloc(sizeof(int) * n);
	double *r = calloc((size_t)n * n, sizeof(double)), total = 0;

	for (int e = 0; e < g->m; e++)
		r[g->from[e] * n + g->to[e]] += g->cap[e];
	for (;;) {
		int head = 0, tail = 0;
		double aug = INFINITY;
		for (int i = 0; i < n; i++)
			prev[i] = -1;
		prev[s] = s;
		queue[tail++] = s;
		while (head < tail && prev[t] < 0) {
			int u = queue[head++];
			for (int v = 0; v < n; v++)
				if (prev[v] < 0 && r[u * n + v] > 1e-12) {
					prev[v] = u;
					queue[tail++] = v;
				}
		}
		if (prev[t] < 0)
			break;
		for (int v = t; v != s; v = prev[v])
			aug = fmin(aug, r[prev[v] * n + v]);
		for (int v = t; v != s; v = prev[v]) {
			r[prev[v] * n + v] -= aug;
			r[v * n + prev[v]] += aug;
		}
		total += aug;
	}
	free(prev);
	free(queue);
	free(r);
	return total;
}

START_TEST(test_random_graphs)
{
	hx_rng rng;
	hx_rng_seed(&rng, 2024);
	for (int seed = 0; seed < 150; seed++) {
		int n = 2 + (int)(hx_rng_uniform(&rng) * 14),
		    m = (int)(hx_rng_uniform(&rng) * n * 4);
		hx_graph g;
		hx_flow_result res;
		hx_err err = {0};
		double cut = 0, *net;

		hx_graph_init(&g, n);
		for (int e = 0; e < m; e++) {
			int u = (int)(hx_rng_uniform(&rng) * n),
			    v = (int)(hx_rng_uniform(&rng) * n);
			if (u == v)
				continue;
			hx_graph_add_edge(&g, u, v, floor(hx_rng_uniform(&rng) * 100) / 4);
		}
		ck_assert_msg(hx_flow_max(&g, 0, n - 1, &res, &err) == 0, "%s", err.msg);
		net = calloc((size_t)n, sizeof(double));
		for (int e = 0; e < g.m; e++) {
			/* capacities respected */
			ck_assert(res.flow[e] >= -1e-9 && res.flow[e] <= g.cap[e] + 1e-9);
			net[g.from[e]] -= res.flow[e];
			net[g.to[e]] += res.flow[e];
			if (res.source_side[g.from[e]] && !res.source_side[g.to[e]])
				cut += g.cap[e];
		}
		/* conservation at every vertex but the source and the sink */
		for (int i = 1; i < n - 1; i++)
			ck_assert_msg(fabs(net[i]) < 1e-6, "seed %d vertex %d", seed, i);
		ck_assert(fabs(net[n - 1] - res.value) < 1e-6);
		ck_assert(res.source_side[0] && !res.source_side[n - 1]);
		/* max-flow = min-cut, and the test's own max-flow agrees */
		ck_assert_msg(fabs(cut - res.value) < 1e-6, "seed %d: cut %g flow %g", seed,
			      cut, res.value);
		ck_assert_msg(fabs(edmonds_karp(&g, 0, n - 1) - res.value) < 1e-6, "seed %d",
			      seed);
		free(net);
		hx_flow_result_release(&res);
		hx_graph_release(&g);
	}
}
END_TEST

START_TEST(test_bad_input)
{
	hx_graph g;
	hx_flow_result res;
	hx_err err = {0};
	hx_graph_init(&g, 3);
	hx_graph_add_edge(&g, 0, 7, 1);
	ck_assert_int_eq(hx_flow_max(&g, 0, 2, &res, &err), HX_EINPUT);
	hx_flow_result_release(&res);
	ck_assert_int_eq(hx_flow_max(&g, 1, 1, &res, &err), HX_EINPUT);
	hx_flow_result_release(&res);
	hx_graph_release(&g);
}
END_TEST

/* An igraph error or fatal error inside the guarded call becomes an error
 * status with igraph's reason; the process lives on and the next call works. */
START_TEST(test_igraph_faults)
{
	hx_graph g;
	hx_flow_result res;
	hx_err err = {0};

	hx_graph_init(&g, 2);
	hx_graph_add_edge(&g, 0, 1, 3);
	for (int mode = 1; mode <= 2; mode++) {
		hx_igraph_force_error(mode);
		ck_assert_int_eq(hx_flow_max(&g, 0, 1, &res, &err), HX_EINPUT);
		ck_assert_msg(
		    strstr(err.msg,
			   mode == 1 ? "max-flow failed: forced error for a test (igraph error"
				     : "max-flow failed: forced fatal error for a test (igraph "
				       "fatal error)"),
		    "%s", err.msg);
		hx_flow_result_release(&res);
		ck_assert_int_eq(hx_flow_max(&g, 0, 1, &res, &err), 0);
		ck_assert(fabs(res.value - 3) < 1e-12);
		hx_flow_result_release(&res);
	}
	hx_graph_release(&g);
}
END_TEST

/* Two dense cliques joined by one thin edge split along it. */
START_TEST(test_partition_cliques)
{
	hx_graph g;
	int group[12];
	hx_err err = {0};

	hx_graph_init(&g, 12);
	for (int a = 0; a < 6; a++)
		for (int b = a + 1; b < 6; b++) {
			hx_graph_add_edge(&g, a, b, 100);
			hx_graph_add_edge(&g, 6 + a, 6 + b, 100);
		}
	hx_graph_add_edge(&g, 2, 9, 1);
	ck_assert(hx_partition(&g, NULL, 2, 1, group, &err) == 0);
	for (int i = 1; i < 6; i++) {
		ck_assert_int_eq(group[i], group[0]);
		ck_assert_int_eq(group[6 + i], group[6]);
	}
	ck_assert_int_ne(group[0], group[6]);
	hx_graph_release(&g);
}
END_TEST

/* K groups, each connected, every vertex in one, same seed same answer. */
START_TEST(test_partition_k_connected)
{
	hx_rng rng;
	hx_rng_seed(&rng, 5);
	for (int trial = 0; trial < 30; trial++) {
		int n = 4 + (int)(hx_rng_uniform(&rng) * 20),
		    k = 1 + (int)(hx_rng_uniform(&rng) * 4);
		hx_graph g;
		int *grp = malloc(sizeof(int) * n), *again = malloc(sizeof(int) * n),
		    count[8] = {0};
		double *w = malloc(sizeof(double) * n);
		hx_err err = {0};

		hx_graph_init(&g, n);
		for (int i = 1; i < n; i++) /* a connected backbone */
			hx_graph_add_edge(&g, i - 1, i, 1 + floor(hx_rng_uniform(&rng) * 10));
		for (int e = 0; e < n; e++) {
			int u = (int)(hx_rng_uniform(&rng) * n),
			    v = (int)(hx_rng_uniform(&rng) * n);
			if (u != v)
				hx_graph_add_edge(&g, u, v, floor(hx_rng_uniform(&rng) * 50));
		}
		for (int i = 0; i < n; i++)
			w[i] = 1 + (int)(hx_rng_uniform(&rng) * 3);
		if (k > n)
			k = n;
		ck_assert(hx_partition(&g, w, k, 9, grp, &err) == 0);
		ck_assert(hx_partition(&g, w, k, 9, again, &err) == 0);
		for (int i = 0; i < n; i++) {
			ck_assert(grp[i] >= 0 && grp[i] < k);
			ck_assert_int_eq(grp[i], again[i]);
			count[grp[i]]++;
		}
		for (int q = 0; q < k; q++) {
			ck_assert_msg(count[q] > 0, "trial %d: group %d empty", trial, q);
			ck_assert_msg(hx_partition_connected(&g, grp, q),
				      "trial %d: group %d split", trial, q);
		}
		free(grp);
		free(again);
		free(w);
		hx_graph_release(&g);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("flow");
	TCase *tc = tcase_create("flow");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_random_graphs);
	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_igraph_faults);
	tcase_add_test(tc, test_partition_cliques);
	tcase_add_test(tc, test_partition_k_connected);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run(suite());
}
