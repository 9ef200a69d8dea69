/* Check suite: the colocated planner equals exhaustive search on small
 * clusters, and its plans pass the independent check. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "planners/candidates.h"
#include "planners/baseline.h"
#include "planners/cascade.h"
#include "planners/colocated.h"
#include "planners/compose.h"
#include "planners/disagg.h"
#include "planners/pipeline.h"
#include "plan/verify.h"
#include "sim/sim.h"
#include "check_util.h"

static hx_catalog cat;
static hx_workload chat;

static void setup(void)
{
	hx_err err = {0};
	char path[1024];
	snprintf(path, sizeof(path), "%s/examples/workloads/chat.json",
		 getenv("top_srcdir") ? getenv("top_srcdir") : ".");
	ck_assert_msg(hx_catalog_load(&cat, NULL, &err) == 0, "%s", err.msg);
	ck_assert_msg(hx_workload_load(&chat, path, &err) == 0, "%s", err.msg);
}

static void teardown(void)
{
	hx_workload_release(&chat);
	hx_catalog_release(&cat);
}

/* Best objective over all integer counts of the candidates (DFS). */
static void dfs(const hx_candset *s, int c, int *left, double cap, double usd, int cost_mode,
		double rate, double *best)
{
	if (c == s->n) {
		if (!cost_mode && cap > *best)
			*best = cap;
		if (cost_mode && cap >= rate - 1e-9 && usd < *best)
			*best = usd;
		return;
	}
	for (int n = 0;; n++) {
		int ok = 1;
		for (int k = 0; k < s->ncls; k++)
			ok &= n * hx_cand_use(&s->c[c], k) <= left[k];
		if (!ok)
			break;
		for (int k = 0; k < s->ncls; k++)
			left[k] -= n * hx_cand_use(&s->c[c], k);
		dfs(s, c + 1, left, cap + n * s->c[c].capacity_rps,
		    usd + n * s->c[c].usd_per_hour, cost_mode, rate, best);
		for (int k = 0; k < s->ncls; k++)
			left[k] += n * hx_cand_use(&s->c[c], k);
	}
}

static const char *write_cluster(const char *json)
{
	static char path[64];
	int fd;
	strcpy(path, "/tmp/hx-coloc-XXXXXX");
	fd = mkstemp(path);
	ck_assert(fd >= 0);
	ck_assert(write(fd, json, strlen(json)) == (ssize_t)strlen(json));
	close(fd);
	return path;
}

static void one_case(const char *json, const char *model, int objective, double rate)
{
	const char *path = write_cluster(json);
	hx_cluster c;
	hx_model m;
	hx_problem pb;
	hx_candset s;
	hx_plan p;
	/* By name: a field added before no_sim_check (slo_probability) took
	 * its place in the positional form, and the brute force then met the
	 * simulator's corrections. */
	hx_plan_opts o = {.objective = objective, .no_sim_check = 1};
	hx_err err = {0};
	hx_violation *v = NULL;
	int nv = 0, left[64];
	double best, saved = chat.rate_rps;

	ck_assert_msg(hx_cluster_load(&c, path, &cat, &err) == 0, "%s", err.msg);
	ck_assert(hx_model_resolve(&cat, model, &m, &err) == 0);
	chat.rate_rps = rate;
	pb = (hx_problem){&cat, &c, &chat, &m, 1, path, path, NULL};
	/* The shapes colocated considers: EP ones too (for MoE models). */
	ck_assert(hx_candidates(&pb, &(hx_cand_opts){0, 0, 1}, &s, &err) == 0);
	ck_assert(s.n > 0);
	for (int k = 0; k < s.ncls; k++)
		left[k] = s.cls[k].nnodes * s.cls[k].gpus_per_node;
	best = objective == HX_OBJ_COST ? INFINITY : 0;
	dfs(&s, 0, left, 0, 0, objective == HX_OBJ_COST, rate, &best);
	ck_assert_msg(hx_plan_colocated(&pb, &o, &p, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(p.solver.status, "optimal");
	ck_assert_msg(fabs(p.solver.objective - best) <= 1e-5 * fmax(1, best),
		      "%s: MILP %.6f vs exhaustive %.6f", model, p.solver.objective, best);
	ck_assert(hx_verify_plan(&p, &c, &v, &nv) == 0);
	ck_assert_msg(nv == 0, "%s", nv ? v[0].msg : "");
	free(v);
	hx_plan_release(&p);
	hx_candset_release(&s);
	hx_cluster_release(&c);
	unlink(path);
	chat.rate_rps = saved;
}

static const char *const small[] = {
    "{\"version\": 1, \"nodes\": [{\"name\": \"a\", \"gpu\": \"h100-sxm\", \"count\": 4},"
    " {\"name\": \"b\", \"gpu\": \"a100-80g\", \"count\": 4}, {\"name\": \"c\", \"gpu\": "
    "\"l40s\", \"count\": 4}]}",
    "{\"version\": 1, \"nodes\": [{\"name\": \"a\", \"gpu\": \"a100-40g\", \"count\": 8},"
    " {\"name\": \"b\", \"gpu\": \"l4\", \"count\": 4}]}",
    "{\"version\": 1, \"nodes\": [{\"name\": \"a\", \"gpu\": \"l40s\", \"count\": 2},"
    " {\"name\": \"b\", \"gpu\": \"l40s\", \"count\": 2}, {\"name\": \"c\", \"gpu\": "
    "\"a6000\", \"count\": 4},"
    " {\"name\": \"d\", \"gpu\": \"rtx4090\", \"count\": 4}]}",
    NULL};

START_TEST(test_capacity_equals_exhaustive)
{
	static const char *const models[] = {"llama-3.1-8b", "qwen3-30b-a3b", "llama-3.1-70b"};
	for (int i = 0; small[i]; i++)
		for (size_t k = 0; k < 3; k++) {
			if (i == 2 && k == 2)
				continue; /* 70B does not fit there at all */
			one_case(small[i], models[k], HX_OBJ_CAPACITY, 1);
		}
}
END_TEST

START_TEST(test_cost_equals_exhaustive)
{
	for (int i = 0; small[i]; i++) {
		one_case(small[i], "llama-3.1-8b", HX_OBJ_COST, 5);
		one_case(small[i], "llama-3.1-8b", HX_OBJ_COST, 20);
	}
}
END_TEST

/* Above what the cluster carries: exit 3 and say so. */
START_TEST(test_rate_too_high)
{
	const char *path = write_cluster(small[1]);
	hx_cluster c;
	hx_model m;
	hx_problem pb;
	hx_plan p;
	hx_plan_opts o = {HX_OBJ_COST, 0, 0, 0, NULL, 0, 0};
	hx_err err = {0};
	double saved = chat.rate_rps;

	ck_assert(hx_cluster_load(&c, path, &cat, &err) == 0);
	ck_assert(hx_model_resolve(&cat, "llama-3.1-8b", &m, &err) == 0);
	chat.rate_rps = 100000;
	pb = (hx_problem){&cat, &c, &chat, &m, 1, path, path, NULL};
	ck_assert_int_eq(hx_plan_colocated(&pb, &o, &p, &err), HX_EINFEASIBLE);
	ck_assert_msg(strstr(err.msg, "above what all the GPUs carry") != NULL, "%s", err.msg);
	chat.rate_rps = saved;
	hx_cluster_release(&c);
	unlink(path);
}
END_TEST

/* A model no node holds alone: pipelines over mixed GPU types. */
START_TEST(test_asymmetric_pipeline)
{
	const char *path =
	    write_cluster("{\"version\": 1, \"nodes\": [{\"name\": \"a\", \"gpu\": "
			  "\"a100-40g\", \"count\": 2},"
			  " {\"name\": \"b\", \"gpu\": \"l40s\", \"count\": 2}]}");
	hx_cluster c;
	hx_model m;
	hx_problem pb;
	hx_plan p;
	hx_plan_opts o = {HX_OBJ_CAPACITY, 0, 0, 0, NULL, 0, 0};
	hx_err err = {0};
	hx_violation *v = NULL;
	int nv = 0;

	ck_assert(hx_cluster_load(&c, path, &cat, &err) == 0);
	ck_assert(hx_model_resolve(&cat, "llama-3.1-70b", &m, &err) == 0);
	pb = (hx_problem){&cat, &c, &chat, &m, 1, path, path, NULL};
	/* Neither node holds 70B alone: one pipeline over both types. */
	ck_assert_msg(hx_plan_colocated(&pb, &o, &p, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(p.ngroups, 1);
	ck_assert_int_eq(p.groups[0].nstages, 2);
	ck_assert(strcmp(p.groups[0].stage[0].gpu, p.groups[0].stage[1].gpu) != 0);
	ck_assert(hx_verify_plan(&p, &c, &v, &nv) == 0);
	ck_assert_msg(nv == 0, "%s", nv ? v[0].msg : "");
	free(v);
	hx_plan_release(&p);
	hx_cluster_release(&c);
	unlink(path);
}
END_TEST

/* The simulator's check: the plan records what its replicas sustain in the
 * simulator, the whole plan simulated agrees with that sum, and the ingress
 * splits by it. */
START_TEST(test_sim_check)
{
	const char *path = write_cluster(small[1]);
	hx_cluster c;
	hx_model m;
	hx_problem pb;
	hx_plan p;
	hx_plan_opts o = {HX_OBJ_CAPACITY, 0, 0, 0, NULL, 0, 0};
	hx_sim_opts so = {1, 0, NULL, NULL};
	hx_err err = {0};
	hx_violation *v = NULL;
	int nv = 0;
	double whole = 0, sum = 0;

	ck_assert(hx_cluster_load(&c, path, &cat, &err) == 0);
	ck_assert(hx_model_resolve(&cat, "llama-3.1-8b", &m, &err) == 0);
	pb = (hx_problem){&cat, &c, &chat, &m, 1, path, path, NULL};
	ck_assert_msg(hx_plan_colocated(&pb, &o, &p, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(p.simulated.requests, 500);
	ck_assert_str_eq(p.simulated.method, "replicas");
	ck_assert(p.simulated.capacity_rps > 0);
	ck_assert(hx_verify_plan(&p, &c, &v, &nv) == 0);
	ck_assert_msg(nv == 0, "%s", nv ? v[0].msg : "");
	for (int i = 0; i < p.ningress; i++)
		sum += p.ingress[i].weight;
	ck_assert(fabs(sum - 1) < 1e-9);
	ck_assert_msg(hx_sim_capacity(&p, &chat, 1000, &so, &whole, NULL, &err) == 0, "%s",
		      err.msg);
	ck_assert_msg(fabs(whole / p.simulated.capacity_rps - 1) < 0.15,
		      "whole plan %.3f vs replicas %.3f req/s", whole,
		      p.simulated.capacity_rps);
	free(v);
	hx_plan_release(&p);
	hx_cluster_release(&c);
	unlink(path);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("colocated");
	TCase *tc = tcase_create("colocated");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_capacity_equals_exhaustive);
	tcase_add_test(tc, test_cost_equals_exhaustive);
	tcase_add_test(tc, test_rate_too_high);
	tcase_add_test(tc, test_asymmetric_pipeline);
	tcase_add_test(tc, test_sim_check);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run(suite());
}
