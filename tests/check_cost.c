/* Check suite: the cost model's limits, monotonicity and memory rules. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/catalog.h"
#include "model/cost.h"
#include "check_util.h"

static hx_catalog cat;

static void setup(void)
{
	hx_err err = {0};
	ck_assert_msg(hx_catalog_load(&cat, NULL, &err) == 0, "%s", err.msg);
}

static void teardown(void)
{
	hx_catalog_release(&cat);
}

static const hx_model *M(const char *n)
{
	return hx_catalog_model(&cat, n);
}
static const hx_gpu *G(const char *n)
{
	return hx_catalog_gpu(&cat, n);
}

static void uniform(hx_replica *r, const char *m, const char *g, int tp, int pp)
{
	hx_err err = {0};
	ck_assert_msg(hx_replica_uniform(r, M(m), G(g), tp, pp, HX_DT_BF16, HX_DT_FP16, 100,
					 0.02, &err) == 0,
		      "%s", err.msg);
}

/* Large batches are compute-bound, one token memory-bound. */
START_TEST(test_roofline_limits)
{
	const hx_model *m = M("llama-3.1-70b");
	const hx_gpu *g = G("h100-sxm");
	double per_layer = hx_layer_params(&m->a, 0), tokens = 65536;
	double t_big = hx_cost_linear(m, g, 1, HX_DT_BF16, 0, tokens);
	double compute = 2 * tokens * per_layer / (g->tflops_bf16 * 1e12 * g->e_compute);
	double t_one = hx_cost_linear(m, g, 1, HX_DT_BF16, 0, 1);
	double stream = per_layer * 2 / (g->mem_bw_gb_s * 1e9 * g->e_mem);

	/* GEMMs at peak * e_compute, plus the memory-bound ops around them. */
	ck_assert_msg(t_big >= compute && t_big < 1.08 * compute, "big %g vs %g", t_big,
		      compute);
	ck_assert_msg(t_one >= stream && t_one < stream * 1.5, "one %g vs %g", t_one, stream);
	/* FP8 weights halve the streamed bytes at one token. */
	ck_assert(hx_cost_linear(m, g, 1, HX_DT_FP8, 0, 1) < 0.6 * t_one + 1e-5);
}
END_TEST

START_TEST(test_monotone)
{
	hx_replica r;
	double prev = 0;

	uniform(&r, "llama-3.1-8b", "a100-80g", 1, 1);
	for (int b = 1; b <= 512; b *= 2) {
		hx_batch x = {0};
		hx_iter it;
		hx_batch_add_decode(&x, b, 2000);
		hx_cost_iter(&r, &x, &it);
		ck_assert(it.latency_s > prev);
		prev = it.latency_s;
	}
	prev = 0;
	for (int n = 16; n <= 16384; n *= 2) {
		hx_batch x = {0};
		hx_iter it;
		hx_batch_add_prefill(&x, 1, n, 0);
		hx_cost_iter(&r, &x, &it);
		ck_assert(it.latency_s > prev);
		prev = it.latency_s;
	}
}
END_TEST

/* TP splits the GEMMs and adds two all-reduces per layer. */
START_TEST(test_tensor_parallel)
{
	hx_replica r1, r4;
	hx_batch x = {0};
	hx_iter a, b;

	uniform(&r1, "llama-3.1-70b", "h100-sxm", 2, 1);
	uniform(&r4, "llama-3.1-70b", "h100-sxm", 8, 1);
	hx_batch_add_prefill(&x, 4, 2048, 0);
	hx_cost_iter(&r1, &x, &a);
	hx_cost_iter(&r4, &x, &b);
	ck_assert(b.sum.linear_s < a.sum.linear_s / 3);
	ck_assert(b.sum.comm_s > 0 && a.sum.comm_s > 0);
	ck_assert(b.latency_s < a.latency_s);
}
END_TEST

START_TEST(test_memory)
{
	hx_replica r;
	hx_memory m;

	uniform(&r, "llama-3.1-70b", "h100-sxm", 1, 1);
	hx_cost_memory(&r, 0.9, &m);
	ck_assert(!m.fits && m.short_b > 50 * HX_GIB);
	uniform(&r, "llama-3.1-70b", "h100-sxm", 4, 1);
	hx_cost_memory(&r, 0.9, &m);
	ck_assert(m.fits);
	/* weights per GPU about a quarter of 141 GB */
	ck_assert(m.st[0].weights_b > 30e9 && m.st[0].weights_b < 38e9);
	ck_assert(m.kv_tokens > 100000);
	/* PP: the stages together hold the whole model once (tied head aside). */
	uniform(&r, "llama-3.1-70b", "h100-sxm", 2, 2);
	hx_cost_memory(&r, 0.9, &m);
	ck_assert(fabs(m.weights_b / hx_model_weight_bytes(M("llama-3.1-70b"), HX_DT_BF16) -
		       1) < 0.01);
}
END_TEST

START_TEST(test_pipeline)
{
	hx_replica r1, r2;
	hx_batch x = {0};
	hx_iter a, b;

	uniform(&r1, "llama-3.1-8b", "l40s", 1, 1);
	uniform(&r2, "llama-3.1-8b", "l40s", 1, 2);
	hx_batch_add_decode(&x, 64, 1500);
	hx_cost_iter(&r1, &x, &a);
	hx_cost_iter(&r2, &x, &b);
	/* Same work split in two plus a send: latency a bit higher. */
	ck_assert(b.latency_s > a.latency_s);
	ck_assert(b.transfer_s > 0);
	ck_assert(fabs(b.stage_s[0] + b.stage_s[1] - (a.stage_s[0])) < 0.01 * a.stage_s[0]);
	/* With micro-batches the cycle is no longer than the latency of the whole batch. */
	ck_assert(hx_cost_cycle(&r2, &x, &b) <= a.latency_s * 1.1);
}
END_TEST

START_TEST(test_moe_active_experts)
{
	const hx_model *m = M("mixtral-8x7b");
	const hx_gpu *g = G("h100-sxm");
	double t1 = hx_cost_linear(m, g, 1, HX_DT_BF16, 0, 1);
	double t64 = hx_cost_linear(m, g, 1, HX_DT_BF16, 0, 64);
	/* One token reads 2 of 8 experts; 64 tokens read nearly all of them. */
	ck_assert(t64 > 3 * t1);
	ck_assert(t64 < 5 * t1);
}
END_TEST

START_TEST(test_uniform_shapes)
{
	hx_replica r;
	hx_err err = {0};
	ck_assert_int_eq(hx_replica_uniform(&r, M("llama-3.1-8b"), G("l4"), 3, 1, HX_DT_BF16,
					    HX_DT_FP16, 100, 0, &err),
			 HX_EINPUT);
	ck_assert(strstr(err.msg, "must divide the 32 attention heads") != NULL);
	uniform(&r, "llama-3.1-405b", "h100-sxm", 8, 5); /* 126 layers over 5 stages */
	ck_assert_int_eq(r.stage[0].last - r.stage[0].first, 26);
	ck_assert_int_eq(r.stage[4].last, 126);
}
END_TEST

static void chat(hx_workload *w, double tpot_ms, double ttft_ms)
{
	memset(w, 0, sizeof(*w));
	w->rate_rps = 1;
	w->prompt = (hx_dist){HX_DIST_LOGNORMAL,
			      1155,
			      1020,
			      14050,
			      log(1020),
			      sqrt(2 * log(1155.0 / 1020)),
			      0,
			      0,
			      0};
	w->output = (hx_dist){HX_DIST_LOGNORMAL,          211, 129, 1000, log(129),
			      sqrt(2 * log(211.0 / 129)), 0,   0,   0};
	w->slo = (hx_slo){ttft_ms, tpot_ms, 99, 0.99};
	hx_serving_defaults(&w->serving);
}

START_TEST(test_capacity)
{
	hx_replica r;
	hx_workload w;
	hx_capacity c1, c2, c3;

	uniform(&r, "llama-3.1-8b", "h100-sxm", 1, 1);
	chat(&w, 50, 2000);
	hx_cost_capacity(&r, &w, &c1);
	ck_assert(c1.rps > 1 && c1.rps < 200);
	ck_assert(c1.tpot_ms <= 50 + 1e-6);
	ck_assert(c1.ttft_ms <= 2000 + 1e-6);
	ck_assert(c1.binding != NULL);
	chat(&w, 100, 2000); /* a looser SLO never lowers capacity */
	hx_cost_capacity(&r, &w, &c2);
	ck_assert(c2.rps >= c1.rps);
	chat(&w, 5, 2000); /* tighter than one idle iteration: nothing */
	hx_cost_capacity(&r, &w, &c3);
	ck_assert(c3.rps == 0);
	ck_assert_str_eq(c3.binding, "tpot");
	/* A model that does not fit has no capacity. */
	uniform(&r, "llama-3.1-70b", "l4", 1, 1);
	chat(&w, 50, 2000);
	hx_cost_capacity(&r, &w, &c3);
	ck_assert(c3.rps == 0);
	ck_assert_str_eq(c3.binding, "memory");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cost");
	TCase *tc = tcase_create("cost");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_roofline_limits);
	tcase_add_test(tc, test_monotone);
	tcase_add_test(tc, test_tensor_parallel);
	tcase_add_test(tc, test_memory);
	tcase_add_test(tc, test_pipeline);
	tcase_add_test(tc, test_moe_active_experts);
	tcase_add_test(tc, test_uniform_shapes);
	tcase_add_test(tc, test_capacity);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run(suite());
}
