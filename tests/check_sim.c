/* Check suite: the simulator's invariants. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/catalog.h"
#include "model/cost.h"
#include "model/gen.h"
#include "plan/plan.h"
#include "planners/baseline.h"
#include "planners/cascade.h"
#include "planners/colocated.h"
#include "planners/compose.h"
#include "planners/disagg.h"
#include "planners/pipeline.h"
#include "sim/sim.h"
#include "check_util.h"

static hx_catalog cat;
static hx_workload chat;
static void setup(void)
{
	hx_err err = {0};
	ck_assert_msg(hx_catalog_load(&cat, NULL, &err) == 0, "%s", err.msg);
	ck_assert_msg(
	    hx_workload_load(&chat, hx_check_src("examples/workloads/chat.json"), &err) == 0,
	    "%s", err.msg);
}

static void teardown(void)
{
	hx_workload_release(&chat);
	hx_catalog_release(&cat);
}

static void baseline(const char *cluster, const char *model, hx_plan *p)
{
	hx_cluster c;
	hx_model m;
	hx_problem pb;
	hx_err err = {0};
	char cpath[1024];

	hx_strlcpy(cpath, hx_check_src(cluster), sizeof(cpath));
	ck_assert_msg(hx_cluster_load(&c, cpath, &cat, &err) == 0, "%s", err.msg);
	ck_assert(hx_model_resolve(&cat, model, &m, &err) == 0);
	pb = (hx_problem){&cat, &c, &chat, &m, 1, cpath, cpath, NULL};
	ck_assert_msg(hx_plan_baseline(&pb, p, &err) == 0, "%s", err.msg);
	hx_cluster_release(&c);
}

static void one_request(hx_trace *t, double at, int in, int out)
{
	memset(t, 0, sizeof(*t));
	t->n = 1;
	t->arrival_s = hx_xmalloc(sizeof(double));
	t->input = hx_xmalloc(sizeof(int));
	t->output = hx_xmalloc(sizeof(int));
	t->arrival_s[0] = at;
	t->input[0] = in;
	t->output[0] = out;
}

/* A single request on an idle replica takes exactly the request overhead
 * and the cost model's prefill and decode iterations; the client sees a
 * token when the iteration after the one that computed it ends (the first
 * decode's for the first token), at once when none follows (the last). */
START_TEST(test_single_request_exact)
{
	hx_plan p;
	hx_trace t;
	hx_sim_report r;
	hx_sim_opts o = {1, 1, NULL, NULL};
	hx_replica rep;
	hx_iter it;
	hx_err err = {0};
	double want_first = 0, want_end;
	const int in = 1000, out = 50;

	baseline("examples/clusters/h100-node.json", "llama-3.1-8b", &p);
	one_request(&t, 2.5, in, out);
	ck_assert(hx_simulate(&p, &chat, &t, &o, &r, &err) == 0);
	ck_assert(
	    hx_plan_replica_cost(&p, &p.groups[0], &p.groups[0].replicas[0], &rep, &err) == 0);
	{
		hx_batch b = {0};
		hx_batch_add_prefill(&b, 1, in, 0);
		want_end =
		    2.5 + p.gpus[0].request_overhead_ms * 1e-3 + hx_cost_cycle(&rep, &b, &it);
	}
	for (int k = 1; k < out; k++) {
		hx_batch b = {0};
		hx_batch_add_decode(&b, 1, in + k - 1);
		want_end += hx_cost_cycle(&rep, &b, &it);
		if (k == 1)
			want_first = want_end;
	}
	ck_assert_int_eq(r.finished, 1);
	ck_assert_msg(fabs(r.records[0].first_token_s - want_first) < 1e-9,
		      "first %.9f vs %.9f", r.records[0].first_token_s, want_first);
	ck_assert_msg(fabs(r.records[0].finish_s - want_end) < 1e-9, "end %.9f vs %.9f",
		      r.records[0].finish_s, want_end);
	hx_sim_report_release(&r);
	hx_trace_release(&t);
	hx_plan_release(&p);
}
END_TEST

/* On an EP replica with data-parallel attention (Qwen3-30B-A3B, EP 8 over
 * 8 ranks) a lone prompt is one rank's: its step costs the whole prompt
 * on the busiest rank (the ranks step together), more than the same
 * prompt spread over the 8 ranks. */
START_TEST(test_ep_prompt_one_rank)
{
	hx_plan p;
	hx_trace t;
	hx_sim_report r;
	hx_sim_opts o = {1, 1, NULL, NULL};
	hx_replica rep;
	hx_iter it, even;
	hx_err err = {0};
	hx_batch b = {0};
	double want;
	const int in = 4000;

	ck_assert_msg(
	    hx_plan_load(&p, hx_check_src("tests/data/ep/qwen3-30b-a3b-ep8.json"), &err) == 0,
	    "%s", err.msg);
	one_request(&t, 1.0, in, 1);
	ck_assert(hx_simulate(&p, &chat, &t, &o, &r, &err) == 0);
	ck_assert(
	    hx_plan_replica_cost(&p, &p.groups[0], &p.groups[0].replicas[0], &rep, &err) == 0);
	hx_batch_add_prefill(&b, 1, in, 0);
	hx_cost_cycle(&rep, &b, &even);
	hx_batch_rank_max(&b, &b);
	want = 1.0 + p.gpus[0].request_overhead_ms * 1e-3 + hx_cost_cycle(&rep, &b, &it);
	ck_assert(it.cycle_s > 1.5 * even.cycle_s);
	ck_assert_int_eq(r.finished, 1);
	ck_assert_msg(fabs(r.records[0].first_token_s - want) < 1e-9, "first %.9f vs %.9f",
		      r.records[0].first_token_s, want);
	hx_sim_report_release(&r);
	hx_trace_release(&t);
	hx_plan_release(&p);
}
END_TEST

/* Every request finishes or is dropped; KV never overflows; time runs on. */
START_TEST(test_conservation)
{
	hx_plan p;
	hx_trace t;
	hx_sim_report r, r2;
	hx_sim_opts o = {3, 1, NULL, NULL};
	hx_err err = {0};

	baseline("examples/clusters/mixed.json", "llama-3.1-70b", &p);
	/* Overload it (twice its capacity) so queues, KV pressure and
	 * preemptions all happen. */
	ck_assert(hx_gen_workload(&chat, 2 * p.predicted.capacity_rps, 6000, 0, 3, &t, &err) ==
		  0);
	ck_assert(hx_simulate(&p, &chat, &t, &o, &r, &err) == 0);
	ck_assert_int_eq(r.finished + r.dropped, 6000);
	ck_assert_int_eq(r.kv_overflows, 0);
	ck_assert_int_eq(r.time_reversals, 0);
	ck_assert(r.preemptions > 0);
	for (int i = 0; i < r.nrecords; i++) {
		const hx_sim_record *x = &r.records[i];
		if (x->dropped)
			continue;
		ck_assert(x->first_token_s >= x->arrival_s);
		ck_assert(x->finish_s >= x->first_token_s);
	}
	/* Deterministic: the same seed, the same figures. */
	ck_assert(hx_simulate(&p, &chat, &t, &o, &r2, &err) == 0);
	ck_assert(r2.ttft_ms[3] == r.ttft_ms[3] && r2.makespan_s == r.makespan_s);
	hx_sim_report_release(&r2);
	hx_sim_report_release(&r);
	hx_trace_release(&t);
	hx_plan_release(&p);
}
END_TEST

/* A request too long for any KV cache is dropped, not lost. */
START_TEST(test_drop_too_long)
{
	hx_plan p;
	hx_trace t;
	hx_sim_report r;
	hx_err err = {0};

	baseline("examples/clusters/h100-node.json", "llama-3.1-8b", &p);
	one_request(&t, 0, 5000000, 10);
	ck_assert(hx_simulate(&p, &chat, &t, NULL, &r, &err) == 0);
	ck_assert_int_eq(r.dropped, 1);
	ck_assert_int_eq(r.finished, 0);
	ck_assert(r.slo_attainment == 0);
	hx_sim_report_release(&r);
	hx_trace_release(&t);
	hx_plan_release(&p);
}
END_TEST

/* Disaggregated plan: prefill, KV transfer, decode. */
START_TEST(test_disaggregated)
{
	hx_plan p;
	hx_trace t;
	hx_sim_report r;
	hx_err err = {0};
	hx_sim_opts o = {1, 1, NULL, NULL};
	int decode_side = 0;

	ck_assert_msg(
	    hx_plan_load(&p, hx_check_src("tests/data/plans/mixed-disagg.json"), &err) == 0,
	    "%s", err.msg);
	ck_assert(hx_gen_workload(&chat, 5, 2000, 0, 1, &t, &err) == 0);
	ck_assert_msg(hx_simulate(&p, &chat, &t, &o, &r, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(r.finished + r.dropped, 2000);
	ck_assert_int_eq(r.dropped, 0);
	ck_assert_int_eq(r.kv_overflows, 0);
	for (int i = 0; i < r.nrecords; i++) {
		const hx_sim_record *x = &r.records[i];
		decode_side += p.groups[x->group].role == HX_ROLE_DECODE || x->output == 1;
		/* TTFT includes the KV transfer: never before the prefill ends */
		ck_assert(x->first_token_s >= x->arrival_s && x->finish_s >= x->first_token_s);
	}
	ck_assert_int_eq(decode_side, 2000);
	hx_sim_report_release(&r);
	hx_trace_release(&t);
	hx_plan_release(&p);
}
END_TEST

/* Cascades: a share of requests escalates to the next model. */
START_TEST(test_cascade)
{
	hx_plan p, big;
	hx_trace t;
	hx_sim_report r;
	hx_err err = {0};
	hx_sim_opts o = {1, 1, NULL, NULL};
	long esc = 0;

	baseline("examples/clusters/h100-node.json", "llama-3.1-8b", &p);
	baseline("examples/clusters/mixed.json", "llama-3.1-70b", &big);
	/* Append the big model's first group to the small plan as step 2. */
	hx_plan_add_model(&p, &big.models[0]);
	hx_plan_add_gpu(&p, hx_plan_gpu(&big, "a100-80g"));
	{
		hx_plan_group *g = hx_plan_add_group(&p), *from = &big.groups[1];
		*g = *from;
		strcpy(g->name, "big");
		g->stage = NULL;
		hx_plan_group_stages(g, from->nstages);
		memcpy(g->stage, from->stage, (size_t)from->nstages * sizeof(*g->stage));
		g->replicas = NULL;
		g->nreplicas = 0;
		for (int i = 0; i < from->nreplicas; i++) {
			hx_plan_replica *nr = hx_plan_add_replica(g);
			snprintf(nr->id, sizeof(nr->id), "big%d", i);
			nr->ngpus[0] = from->replicas[i].ngpus[0];
			nr->gpus[0] = hx_xcalloc(2, sizeof(hx_gpu_ref));
			memcpy(nr->gpus[0], from->replicas[i].gpus[0], 2 * sizeof(hx_gpu_ref));
		}
	}
	p.cascade = hx_xcalloc(2, sizeof(hx_cascade_step));
	p.ncascade = 2;
	strcpy(p.cascade[0].model, "llama-3.1-8b");
	p.cascade[0].escalate = 0.3;
	strcpy(p.cascade[1].model, "llama-3.1-70b");
	ck_assert(hx_gen_workload(&chat, 5, 3000, 0, 1, &t, &err) == 0);
	ck_assert_msg(hx_simulate(&p, &chat, &t, &o, &r, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(r.finished, 3000);
	for (int i = 0; i < r.nrecords; i++)
		esc += r.records[i].escalations;
	ck_assert_msg(esc > 800 && esc < 1000, "%ld escalations of 3000 at 0.3", esc);
	hx_sim_report_release(&r);
	hx_trace_release(&t);
	hx_plan_release(&big);
	hx_plan_release(&p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sim");
	TCase *tc = tcase_create("sim");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_single_request_exact);
	tcase_add_test(tc, test_ep_prompt_one_rank);
	tcase_add_test(tc, test_conservation);
	tcase_add_test(tc, test_drop_too_long);
	tcase_add_test(tc, test_disaggregated);
	tcase_add_test(tc, test_cascade);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run(suite());
}
