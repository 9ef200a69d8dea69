/* Check suite: the pipeline mode.  The max-flow of a placement against a
 * brute-force minimum cut and a path decomposition on small random
 * placements; plans on a small mixed cluster: valid for check, every path
 * covering each layer once, deterministic, never below the constructions
 * nor above the bound; the verifier's path rules; the simulator on a hops
 * plan. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/gen.h"
#include "planners/pipeline.h"
#include "planners/baseline.h"
#include "planners/cascade.h"
#include "planners/colocated.h"
#include "planners/compose.h"
#include "planners/disagg.h"
#include "planners/pipeline.h"
#include "sim/sim.h"
#include "plan/verify.h"
#include "check_util.h"

static char tmpdir[] = "/tmp/hx-check-pipeline-XXXXXX";
static hx_catalog cat;
static hx_workload wl;
static hx_model m70;

static void setup(void)
{
	hx_err err = {0};
	ck_assert_msg(hx_catalog_load(&cat, NULL, &err) == 0, "%s", err.msg);
	ck_assert_msg(
	    hx_workload_load(&wl, hx_check_src("examples/workloads/pipeline.json"), &err) == 0,
	    "%s", err.msg);
	ck_assert_msg(hx_model_resolve(&cat, "llama-2-70b", &m70, &err) == 0, "%s", err.msg);
}

static void teardown(void)
{
	hx_workload_release(&wl);
	hx_catalog_release(&cat);
}

/* ---- flow against brute force ---------------------------------------------------- */

/* Minimum s-t cut of the node-split graph by enumerating every side of its
 * 2n inner vertices (source always on S, sink on T). */
static double brute_min_cut(const hx_pipe_net *net, const int *f, const int *l)
{
	int n = net->n, L = net->layers;
	double best = INFINITY;
	const double inf = 1e18;

	for (unsigned mask = 0; mask < (1u << (2 * n)); mask++) {
		double cut = 0;
#define IN_S(v) (((mask >> (v)) & 1u) != 0) /* v: 2i in(i), 2i+1 out(i) */
		for (int i = 0; i < n; i++) {
			if (f[i] < 0)
				continue;
			if (f[i] == 0 && !IN_S(2 * i))
				cut += inf; /* source -> in(i) */
			if (IN_S(2 * i) && !IN_S(2 * i + 1))
				cut += net->node_tps[i];
			if (l[i] == L && IN_S(2 * i + 1))
				cut += inf; /* out(i) -> sink */
			for (int j = 0; j < n; j++)
				if (f[j] >= 0 && l[i] == f[j] && l[i] < L && IN_S(2 * i + 1) &&
				    !IN_S(2 * j))
					cut += net->link_tps[i * n + j];
		}
#undef IN_S
		if (cut < best)
			best = cut;
	}
	return best >= 1e17 ? 0 : best;
}

/* Decompose F's flow into source-to-sink paths (repeatedly take a path of
 * positive flow through the hops and subtract its bottleneck): each path
 * covers [0, L) once, and the paths add up to the value. */
static double decompose(const hx_pipe_net *net, const int *f, const int *l, hx_pipe_flow *fl)
{
	int n = net->n, L = net->layers;
	double total = 0, *src = hx_xmalloc((size_t)n * sizeof(double));
	double *hop = hx_xcalloc((size_t)n * n, sizeof(double));

	memcpy(src, fl->src, (size_t)n * sizeof(double));
	for (int h = 0; h < fl->nhop; h++) {
		/* the hops come by their first node, then their second, once each */
		if (h > 0)
			ck_assert(fl->hop_from[h - 1] < fl->hop_from[h] ||
				  (fl->hop_from[h - 1] == fl->hop_from[h] &&
				   fl->hop_to[h - 1] < fl->hop_to[h]));
		hop[fl->hop_from[h] * n + fl->hop_to[h]] = fl->hop[h];
	}
	for (int guard = 0; guard < 1000; guard++) {
		int path[16], len = 0, at = -1, covered = 0;
		double b;
		for (int i = 0; i < n && at < 0; i++)
			if (src[i] > 1e-9)
				at = i;
		if (at < 0)
			break;
		b = src[at];
		while (at >= 0 && len < 16) {
			int next = -1;
			path[len++] = at;
			ck_assert_int_eq(f[at], covered); /* contiguous */
			covered = l[at];
			if (l[at] == L)
				break;
			for (int j = 0; j < n && next < 0; j++)
				if (hop[at * n + j] > 1e-9) {
					next = j;
					b = fmin(b, hop[at * n + j]);
				}
			ck_assert_msg(next >= 0, "flow stops at node %d (layer %d)", at, l[at]);
			at = next;
		}
		ck_assert_int_eq(covered, L); /* every layer exactly once */
		src[path[0]] -= b;
		for (int k = 0; k + 1 < len; k++)
			hop[path[k] * n + path[k + 1]] -= b;
		total += b;
	}
	free(src);
	free(hop);
	return total;
}

START_TEST(test_flow_equals_brute_force)
{
	hx_rng r;
	int checked = 0;

	hx_rng_seed(&r, 7);
	for (int inst = 0; inst < 400; inst++) {
		int n = 2 + (int)(hx_rng_next(&r) % 4), L = 2 + (int)(hx_rng_next(&r) % 4);
		int f[5], l[5];
		double node[5], link[25];
		hx_pipe_net net = {n, L, node, link};
		hx_pipe_flow fl;
		hx_err err = {0};
		double cut;

		for (int i = 0; i < n; i++) {
			if (hx_rng_next(&r) % 5 == 0) {
				f[i] = l[i] = -1;
			} else {
				f[i] = (int)(hx_rng_next(&r) % (uint64_t)L);
				l[i] = f[i] + 1 + (int)(hx_rng_next(&r) % (uint64_t)(L - f[i]));
			}
			node[i] = (double)(1 + hx_rng_next(&r) % 20);
			for (int j = 0; j < n; j++)
				link[i * n + j] = (double)(hx_rng_next(&r) % 15);
		}
		ck_assert_int_eq(hx_pipe_flow_eval(&net, f, l, &fl, &err), 0);
		cut = brute_min_cut(&net, f, l);
		ck_assert_msg(fabs(fl.value - cut) < 1e-6, "instance %d: flow %g, min cut %g",
			      inst, fl.value, cut);
		/* capacities and conservation */
		for (int i = 0; i < n; i++) {
			double in = fl.src[i], out = 0;
			ck_assert(fl.through[i] <= node[i] + 1e-9);
			for (int h = 0; h < fl.nhop; h++) {
				int a = fl.hop_from[h], b = fl.hop_to[h];
				in += b == i ? fl.hop[h] : 0;
				out += a == i ? fl.hop[h] : 0;
				ck_assert(fl.hop[h] <= link[a * n + b] + 1e-9);
				if (fl.hop[h] > 0)
					ck_assert_int_eq(l[a], f[b]);
			}
			ck_assert_msg(fabs(in - fl.through[i]) < 1e-6,
				      "inst %d node %d [%d,%d) L=%d in %g through %g src %g",
				      inst, i, f[i], l[i], L, in, fl.through[i], fl.src[i]);
			if (f[i] >= 0 && l[i] < L)
				ck_assert(fabs(out - fl.through[i]) < 1e-6);
		}
		ck_assert(fabs(decompose(&net, f, l, &fl) - fl.value) < 1e-6);
		checked += fl.value > 0;
		hx_pipe_flow_release(&fl);
	}
	ck_assert_int_gt(checked, 50); /* the instances do carry flow */
}
END_TEST

/* ---- plans ------------------------------------------------------------------------ */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* A small mixed cluster in two regions. */
static const char *SMALL =
    "{\"version\": 1, \"nodes\": ["
    "{\"name\": \"a0\", \"gpu\": \"a100-40g\", \"count\": 1, \"region\": \"x\", \"nic_gbps\": "
    "10},"
    "{\"name\": \"a1\", \"gpu\": \"a100-40g\", \"count\": 1, \"region\": \"x\", \"nic_gbps\": "
    "10},"
    "{\"name\": \"l0\", \"gpu\": \"l4\", \"count\": 2, \"region\": \"x\", \"nic_gbps\": 10},"
    "{\"name\": \"l1\", \"gpu\": \"l4\", \"count\": 1, \"region\": \"y\", \"nic_gbps\": 10},"
    "{\"name\": \"l2\", \"gpu\": \"l4\", \"count\": 1, \"region\": \"y\", \"nic_gbps\": 10},"
    "{\"name\": \"t0\", \"gpu\": \"t4\", \"count\": 1, \"region\": \"y\", \"nic_gbps\": 10},"
    "{\"name\": \"t1\", \"gpu\": \"t4\", \"count\": 1, \"region\": \"y\", \"nic_gbps\": 10}],"
    " \"defaults\": {\"same_region\": {\"bw_gbps\": 10, \"latency_ms\": 0.1},"
    " \"cross_region\": {\"bw_gbps\": 1, \"latency_ms\": 20}}}\n";

static int plan_small(hx_cluster *c, hx_plan *p, hx_pipe_stats *st, long work, uint64_t seed,
		      hx_err *err)
{
	char cpath[128];
	hx_problem pb;
	hx_plan_opts o = {HX_OBJ_CAPACITY, 0, 0, 0, NULL, 0};
	hx_pipe_opts po = {work, 0, NULL};

	snprintf(cpath, sizeof(cpath), "%s/small.json", tmpdir);
	write_file(cpath, SMALL);
	ck_assert_msg(hx_cluster_load(c, cpath, &cat, err) == 0, "%s", err->msg);
	pb = (hx_problem){&cat, c, &wl, &m70, seed, cpath, "-", NULL};
	return hx_plan_pipeline_run(&pb, &o, &po, p, st, err);
}

/* Layers covered along every path of P's hops from each ingress group. */
static void walk(const hx_plan *p, int g, int covered, int depth)
{
	const hx_plan_group *gr = &p->groups[g];
	char id[64];
	int out = 0;

	ck_assert_int_lt(depth, 64);
	ck_assert_int_eq(gr->stage[0].first, covered);
	covered = gr->stage[gr->nstages - 1].last;
	snprintf(id, sizeof(id), "%s/s%d", gr->replicas[0].id, gr->nstages - 1);
	for (int h = 0; h < p->nhops; h++) {
		char to[64], *slash;
		if (strcmp(p->hops[h].from, id) != 0)
			continue;
		out++;
		hx_strlcpy(to, p->hops[h].to, sizeof(to));
		slash = strrchr(to, '/');
		*slash = '\0';
		for (int k = 0; k < p->ngroups; k++)
			if (strcmp(p->groups[k].replicas[0].id, to) == 0)
				walk(p, k, covered, depth + 1);
	}
	if (!out)
		ck_assert_int_eq(covered, 80);
}

START_TEST(test_plan_small_cluster)
{
	hx_cluster c, c2;
	hx_plan p, q;
	hx_pipe_stats st;
	hx_err err = {0};
	hx_violation *v;
	int nv;
	char *a, *b;
	double best = 0;

	ck_assert_msg(plan_small(&c, &p, &st, 3000, 1, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(p.mode, "pipeline");
	nv = hx_verify_plan(&p, &c, &v, &nv);
	ck_assert_msg(nv == 0, "%d violations, first: %s: %s", nv, nv ? v[0].ptr : "",
		      nv ? v[0].msg : "");
	free(v);
	for (int k = 0; k < HX_PIPE_NCONSTRUCTIONS; k++)
		best = fmax(best, st.construction[k]);
	ck_assert(p.solver.objective >= best * (1 - 1e-6) - 1e-6);
	ck_assert(p.solver.objective > 0);
	ck_assert(p.solver.bound >= p.solver.objective);
	ck_assert(fabs(p.predicted.capacity_rps * hx_dist_mean(&wl.output) -
		       p.solver.objective) < 1e-3 * p.solver.objective + 1e-3);
	ck_assert_str_eq(p.solver.status, "heuristic");
	/* every path covers every layer once */
	for (int i = 0; i < p.ningress; i++)
		walk(&p, hx_plan_group_index(&p, p.ingress[i].to), 0, 0);
	/* deterministic */
	ck_assert_msg(plan_small(&c2, &q, NULL, 3000, 1, &err) == 0, "%s", err.msg);
	a = hx_plan_dump(&p);
	b = hx_plan_dump(&q);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	hx_plan_release(&q);
	hx_cluster_release(&c2);
	hx_plan_release(&p);
	hx_cluster_release(&c);
}
END_TEST

/* The verifier's path rules, on a plan broken three ways. */
START_TEST(test_verify_paths)
{
	hx_cluster c;
	hx_plan p;
	hx_err err = {0};
	hx_violation *v;
	int nv, last = -1, dead = 0, entry = 0, h;

	ck_assert_msg(plan_small(&c, &p, NULL, 500, 1, &err) == 0, "%s", err.msg);
	ck_assert_int_gt(p.nhops, 0);
	/* drop every hop out of the first hop's source: a dead end there */
	h = 0;
	for (int i = 0; i < p.nhops; i++)
		if (strcmp(p.hops[i].from, p.hops[h].from) != 0)
			p.hops[++last] = p.hops[i];
	p.nhops = last + 1;
	/* and let traffic enter at a group that does not hold layer 0 */
	for (int g = 0; g < p.ngroups; g++)
		if (p.groups[g].stage[0].first > 0) {
			hx_route *rt = hx_plan_add_route(&p.ingress, &p.ningress);
			hx_strlcpy(rt->to, p.groups[g].name, sizeof(rt->to));
			rt->weight = 0;
			break;
		}
	nv = hx_verify_plan(&p, &c, &v, &nv);
	for (int i = 0; i < nv; i++) {
		dead += strstr(v[i].msg, "dead end") != NULL;
		entry += strstr(v[i].msg, "traffic must enter at layer 0") != NULL;
	}
	free(v);
	ck_assert_int_ge(dead, 1);
	ck_assert_int_ge(entry, 1);
	hx_plan_release(&p);
	hx_cluster_release(&c);
}
END_TEST

/* A fragment too big for its GPU is a memory violation. */
START_TEST(test_verify_fragment_memory)
{
	hx_cluster c;
	hx_plan p;
	hx_err err = {0};
	hx_violation *v;
	int nv, mem = 0;

	ck_assert_msg(plan_small(&c, &p, NULL, 500, 1, &err) == 0, "%s", err.msg);
	for (int g = 0; g < p.ngroups; g++)
		if (strcmp(p.groups[g].stage[0].gpu, "t4") == 0 ||
		    strcmp(p.groups[g].stage[0].gpu, "l4") == 0) {
			p.groups[g].stage[0].last =
			    80; /* the rest of the model on one small GPU */
			break;
		}
	nv = hx_verify_plan(&p, &c, &v, &nv);
	for (int i = 0; i < nv; i++)
		mem += v[i].cls == HX_V_MEMORY;
	free(v);
	ck_assert_int_ge(mem, 1);
	hx_plan_release(&p);
	hx_cluster_release(&c);
}
END_TEST

/* The simulator follows the hops and conserves requests. */
START_TEST(test_simulate_hops)
{
	hx_cluster c;
	hx_plan p;
	hx_err err = {0};
	hx_trace t;
	hx_sim_report rep;
	hx_sim_opts so = {1, 1, NULL, NULL};

	ck_assert_msg(plan_small(&c, &p, NULL, 500, 1, &err) == 0, "%s", err.msg);
	ck_assert_msg(
	    hx_gen_workload(&wl, 0.5 * p.predicted.capacity_rps, 150, 0, 3, &t, &err) == 0,
	    "%s", err.msg);
	ck_assert_msg(hx_simulate(&p, &wl, &t, &so, &rep, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(rep.finished + rep.dropped, 150);
	ck_assert_int_eq(rep.dropped, 0);
	ck_assert_int_eq(rep.kv_overflows, 0);
	ck_assert_int_eq(rep.time_reversals, 0);
	ck_assert(rep.throughput_tps > 0);
	for (int i = 0; i < rep.nrecords; i++) {
		const hx_sim_record *x = &rep.records[i];
		/* requests finish on a fragment holding the last layer */
		ck_assert_int_eq(p.groups[x->group].stage[0].last, 80);
		ck_assert(x->first_token_s >= x->arrival_s && x->finish_s >= x->first_token_s);
	}
	hx_sim_report_release(&rep);
	hx_trace_release(&t);
	hx_plan_release(&p);
	hx_cluster_release(&c);
}
END_TEST

/* Too little memory for the model: exit 3, saying so. */
START_TEST(test_infeasible_memory)
{
	char cpath[128];
	hx_cluster c;
	hx_plan p;
	hx_problem pb;
	hx_err err = {0};
	hx_plan_opts o = {HX_OBJ_CAPACITY, 0, 0, 0, NULL, 0};

	snprintf(cpath, sizeof(cpath), "%s/tiny.json", tmpdir);
	write_file(
	    cpath,
	    "{\"version\": 1, \"nodes\": [{\"name\": \"t0\", \"gpu\": \"t4\", \"count\": 1},"
	    " {\"name\": \"t1\", \"gpu\": \"t4\", \"count\": 1}]}\n");
	ck_assert_msg(hx_cluster_load(&c, cpath, &cat, &err) == 0, "%s", err.msg);
	pb = (hx_problem){&cat, &c, &wl, &m70, 1, cpath, "-", NULL};
	ck_assert_int_eq(hx_plan_pipeline(&pb, &o, &p, &err), HX_EINFEASIBLE);
	ck_assert_msg(strncmp(err.msg, "memory: the nodes hold ", 23) == 0, "%s", err.msg);
	hx_cluster_release(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pipeline");
	TCase *tc = tcase_create("pipeline");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_flow_equals_brute_force);
	tcase_add_test(tc, test_plan_small_cluster);
	tcase_add_test(tc, test_verify_paths);
	tcase_add_test(tc, test_verify_fragment_memory);
	tcase_add_test(tc, test_simulate_hops);
	tcase_add_test(tc, test_infeasible_memory);
	suite_add_tcase(s, tc);
	return hx_check_run_in(s, tmpdir);
}
