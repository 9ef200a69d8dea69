/* Check suite: the disaggregated planner on toy clusters whose optimum is
 * computed by hand from the cost model, and its plans pass check. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/cost.h"
#include "planners/baseline.h"
#include "planners/cascade.h"
#include "planners/colocated.h"
#include "planners/compose.h"
#include "planners/disagg.h"
#include "planners/pipeline.h"
#include "plan/verify.h"
#include "check_util.h"

static hx_catalog cat;
static hx_workload code;

static void setup(void)
{
	hx_err err = {0};
	ck_assert_msg(hx_catalog_load(&cat, NULL, &err) == 0, "%s", err.msg);
	ck_assert_msg(
	    hx_workload_load(&code, hx_check_src("examples/workloads/code.json"), &err) == 0,
	    "%s", err.msg);
}

static void teardown(void)
{
	hx_workload_release(&code);
	hx_catalog_release(&cat);
}

/* The most a node of COUNT GPUS carries in PHASE (best TP), as the planner
 * prices it (prefill against the TTFT SLO less the transfer reserve). */
static double node_cap(const hx_model *m, const char *gpu, int count, int phase,
		       const hx_workload *w)
{
	double best = 0;
	for (int tp = 1; tp <= count; tp++) {
		hx_replica r;
		hx_capacity c;
		if (count % tp || m->a.heads % tp)
			continue;
		hx_replica_uniform(&r, m, hx_catalog_gpu(&cat, gpu), tp, 1, m->a.dtype,
				   HX_DT_FP16, 100, 0, NULL);
		hx_cost_capacity_phase(&r, w, phase, &c);
		best = fmax(best, c.rps * (count / tp));
	}
	return best;
}

/* The KV transfers/s a link of GBPS and LAT_MS carries when the percentile
 * prompt's transfer, shared by processor sharing, must end within the
 * reserve R (s): load rho <= 1 - bytes(Pq) / (bandwidth (R - latency)). */
static double hand_link(const hx_model *m, double gbps, double lat_ms, double R)
{
	double kv = hx_kv_bytes_per_token(m, HX_DT_FP16), B = gbps * 1e9 / 8;
	double Pq = hx_dist_quantile(&code.prompt, code.slo.percentile / 100);
	double rho = 1 - kv * Pq / (B * (R - lat_ms * 1e-3));
	return rho > 0 ? rho * B / (kv * hx_dist_mean(&code.prompt)) : 0;
}

/* Two 4-GPU nodes, an H100 and an L40S, NICs of 400 Gb/s, joined by a
 * link of LINK_GBPS (0.02 ms): the optimum over the planner's reserves
 * (2, 4, ... 32 times the percentile prompt's transfer over each link kind
 * of KINDS Gb/s, under the TTFT SLO) and the two orientations, of min(the
 * prefill node, the link, the NICs, the decode node). */
static double hand_optimum(const hx_model *m, double link_gbps, const double *kinds, int nk)
{
	double best = 0, kv = hx_kv_bytes_per_token(m, HX_DT_FP16);
	double Pq = hx_dist_quantile(&code.prompt, code.slo.percentile / 100);
	double da = node_cap(m, "h100-sxm", 4, HX_SERVE_DECODE, &code);
	double db = node_cap(m, "l40s", 4, HX_SERVE_DECODE, &code);

	for (int k = 0; k < nk; k++)
		for (int mul = 2; mul <= 32; mul *= 2) {
			double R = 0.02e-3 + mul * kv * Pq / (fmin(kinds[k], 400) * 1e9 / 8);
			hx_workload wp = code;
			double pa, pb, link;
			if (R >= code.slo.ttft_ms * 1e-3)
				continue;
			wp.slo.ttft_ms -= 1e3 * R;
			pa = node_cap(m, "h100-sxm", 4, HX_SERVE_PREFILL, &wp);
			pb = node_cap(m, "l40s", 4, HX_SERVE_PREFILL, &wp);
			link = fmin(hand_link(m, link_gbps, 0.02, R), hand_link(m, 400, 0, R));
			best = fmax(best,
				    fmax(fmin(fmin(pa, link), db), fmin(fmin(pb, link), da)));
		}
	return best;
}

/* Two nodes joined by one link: the optimum is the better of the two
 * orientations, min(prefill of one, link, NICs, decode of the other), at
 * the best transfer reserve. */
START_TEST(test_two_node_optimum)
{
	static const char *json =
	    "{\"version\": 1, \"nodes\": [{\"name\": \"a\", \"gpu\": \"h100-sxm\", \"count\": "
	    "4, \"nic_gbps\": 400},"
	    " {\"name\": \"b\", \"gpu\": \"l40s\", \"count\": 4, \"nic_gbps\": 400}],"
	    " \"links\": [{\"a\": \"a\", \"b\": \"b\", \"bw_gbps\": 25, \"latency_ms\": 0.02}],"
	    " \"defaults\": {\"same_region\": {\"bw_gbps\": 25, \"latency_ms\": 0.02}}}";
	char path[] = "/tmp/hx-disagg-XXXXXX";
	int fd = mkstemp(path);
	hx_cluster c;
	hx_model m;
	hx_problem pb;
	hx_plan p;
	hx_plan_opts o = {0, 0, 0, 0, NULL, 0, 0};
	hx_err err = {0};
	hx_violation *v = NULL;
	int nv = 0;
	double want, kinds[1] = {25};

	ck_assert(write(fd, json, strlen(json)) == (ssize_t)strlen(json));
	close(fd);
	ck_assert_msg(hx_cluster_load(&c, path, &cat, &err) == 0, "%s", err.msg);
	ck_assert(hx_model_resolve(&cat, "llama-3.1-8b", &m, &err) == 0);
	want = hand_optimum(&m, 25, kinds, 1);

	pb = (hx_problem){&cat, &c, &code, &m, 1, path, path, NULL};
	ck_assert_msg(hx_plan_disagg(&pb, &o, &p, &err) == 0, "%s", err.msg);
	ck_assert_msg(fabs(p.predicted.capacity_rps - want) <= 1e-4 * want,
		      "planner %.6f vs hand %.6f", p.predicted.capacity_rps, want);
	ck_assert(p.solver.bound >= p.predicted.capacity_rps - 1e-9);
	ck_assert(hx_verify_plan(&p, &c, &v, &nv) == 0);
	ck_assert_msg(nv == 0, "%s", nv ? v[0].msg : "");
	free(v);
	hx_plan_release(&p);
	hx_cluster_release(&c);
	unlink(path);
}
END_TEST

/* Two nodes of a cluster made by hand (no lookup maps), the link between
 * them narrower than their NICs: given twice, the first wins (as
 * hx_cluster_link has it); given by regions alone, the cross-region
 * default.  Either way the flow is bound by a 10 Gb/s link. */
START_TEST(test_link_rows)
{
	hx_node nodes[2];
	hx_link links[2] = {{0, 1, {10, 0.02}}, {1, 0, {400, 0.02}}};
	hx_cluster c;
	hx_model m;
	hx_problem pb;
	hx_plan_opts o = {0, 0, 0, 0, NULL, 0, 0};
	hx_err err = {0};
	double want, kinds[2] = {400, 10};
	const char *gpu[2] = {"h100-sxm", "l40s"};
	char wpath[1024];

	ck_assert(hx_model_resolve(&cat, "llama-3.1-8b", &m, &err) == 0);
	hx_strlcpy(wpath, hx_check_src("examples/workloads/code.json"), sizeof(wpath));
	memset(nodes, 0, sizeof(nodes));
	for (int i = 0; i < 2; i++) {
		snprintf(nodes[i].name, sizeof(nodes[i].name), "n%d", i);
		snprintf(nodes[i].region, sizeof(nodes[i].region), "r%d", i);
		nodes[i].gpu = *hx_catalog_gpu(&cat, gpu[i]);
		nodes[i].count = 4;
		nodes[i].nic_gbps = 400;
	}
	/* the reserves: the 400 Gb/s same-region default and the 10 Gb/s
	 * link (explicit, or the cross-region default) */
	want = hand_optimum(&m, 10, kinds, 2);
	for (int by_region = 0; by_region < 2; by_region++) {
		hx_plan p;
		memset(&c, 0, sizeof(c));
		c.nodes = nodes;
		c.nnodes = 2;
		c.links = by_region ? NULL : links;
		c.nlinks = by_region ? 0 : 2;
		c.same_region = (hx_linkspec){400, 0.02};
		c.cross_region = (hx_linkspec){by_region ? 10 : 400, 0.02};
		/* digests of some file: this cluster has none */
		pb = (hx_problem){&cat, &c, &code, &m, 1, wpath, wpath, NULL};
		ck_assert_msg(hx_plan_disagg(&pb, &o, &p, &err) == 0, "%s", err.msg);
		ck_assert_msg(fabs(p.predicted.capacity_rps - want) <= 1e-4 * want,
			      "by region %d: planner %.6f vs hand %.6f", by_region,
			      p.predicted.capacity_rps, want);
		for (int k = 0; k < p.nkv; k++)
			ck_assert_double_eq(p.kv[k].bw_gbps, 10);
		hx_plan_release(&p);
	}
}
END_TEST

/* The mixed example: valid plans, weights summing to one, one role per node. */
START_TEST(test_mixed_valid)
{
	hx_cluster c;
	hx_model m;
	hx_problem pb;
	hx_plan p;
	hx_plan_opts o = {0, 0, 0, 0, NULL, 0, 0};
	hx_err err = {0};
	hx_violation *v = NULL;
	int nv = 0, pre = 0, dec = 0;
	char path[1024];

	hx_strlcpy(path, hx_check_src("examples/clusters/mixed.json"), sizeof(path));
	ck_assert(hx_cluster_load(&c, path, &cat, &err) == 0);
	ck_assert(hx_model_resolve(&cat, "llama-3.1-8b", &m, &err) == 0);
	pb = (hx_problem){&cat, &c, &code, &m, 1, path, path, NULL};
	ck_assert_msg(hx_plan_disagg(&pb, &o, &p, &err) == 0, "%s", err.msg);
	for (int g = 0; g < p.ngroups; g++) {
		pre += p.groups[g].role == HX_ROLE_PREFILL;
		dec += p.groups[g].role == HX_ROLE_DECODE;
	}
	ck_assert(pre > 0 && dec > 0);
	ck_assert(p.nkv > 0);
	ck_assert(hx_verify_plan(&p, &c, &v, &nv) == 0);
	ck_assert_msg(nv == 0, "%s", nv ? v[0].msg : "");
	free(v);
	hx_plan_release(&p);
	hx_cluster_release(&c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("disagg");
	TCase *tc = tcase_create("disagg");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_two_node_optimum);
	tcase_add_test(tc, test_mixed_valid);
	tcase_add_test(tc, test_link_rows);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run(suite());
}
