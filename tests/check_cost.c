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

/* The decode batch's mean context is length-biased: the prompt's mean plus
 * E[O^2] / 2E[O], for a lognormal output E[O] e^(sigma^2) / 2 (mean 1,500,
 * median 1,200, practically uncapped: 1,500 x 1.25^2 / 2 = 1,171.9), not
 * E[O] / 2 = 750 (the rule's 256 quantiles see 1,153 of it: the far tail
 * is thin); capped at 8,000 it is less.  Planners that price a batch themselves (pipeline) read
 * it here. */
START_TEST(test_decode_ctx)
{
	hx_workload w;
	double ctx, tail, capped;

	chat(&w, 50, 2000);
	w.output = (hx_dist){HX_DIST_LOGNORMAL,
			     1500,
			     1200,
			     1e12,
			     log(1200),
			     sqrt(2 * log(1500.0 / 1200)),
			     0,
			     0,
			     0};
	ctx = hx_cost_decode_ctx(&w);
	tail = ctx - hx_dist_mean(&w.prompt);
	ck_assert_msg(fabs(tail - 1500 * 1.25 * 1.25 / 2) < 0.025 * 1171.9, "E[O^2]/2E[O] %g",
		      tail);
	w.output.max = 8000;
	capped = hx_cost_decode_ctx(&w);
	ck_assert(capped < ctx &&
		  capped > hx_dist_mean(&w.prompt) + hx_dist_mean(&w.output) / 2);
}
END_TEST

/* An EP stage of Mixtral-8x7B over 8 H100 of one node (bf16, fp16 KV): EP
 * 8, DP attention over R ranks. */
static void ep_mixtral(hx_replica *r, int ep, int dp, int redundant)
{
	hx_err err = {0};
	uniform(r, "mixtral-8x7b", "h100-sxm", 8, 1);
	r->stage[0].ep = ep;
	r->stage[0].dp = dp;
	r->stage[0].redundant_experts = redundant;
	r->stage[0].gpus_per_node = 8;
	ck_assert_msg(hx_replica_check(r, &err) == 0, "%s", err.msg);
}

/* Hand-computed: one GPU of EP 8 / DP 8 holds, per layer, attention (qkv
 * 4096 x (32 + 2 * 8) * 128, o 4096 x 4096) and the router (4096 x 8)
 * whole, its 8 / 8 = 1 expert (3 x 4096 x 14336), two RMSNorms, at 2
 * bytes; plus the whole embedding and head (32000 x 4096 each).  Its KV
 * is 2 * 8 heads * 128 * 2 bytes a token a layer, for its own sequences:
 * the replica holds 8 times one GPU's. */
START_TEST(test_ep_memory)
{
	hx_replica r;
	hx_memory mem;
	double layer = (4096.0 * 48 * 128 + 4096.0 * 4096 + 4096.0 * 8) * 2 +
		       3.0 * 4096 * 14336 * 2 + 2.0 * 4096 * 2;
	double want = 32 * layer + 2 * 32000.0 * 4096 * 2, kv_b, tokens;

	ck_assert_double_eq(want, 14485553152.0);
	ep_mixtral(&r, 8, 8, 0);
	hx_cost_memory(&r, 0.9, &mem);
	ck_assert_double_eq_tol(mem.st[0].weights_b, want, 1);
	ck_assert_double_eq_tol(mem.weights_b, 8 * want, 8);
	kv_b = 79.6 * HX_GIB * 0.9 - want - 2.0 * HX_GIB;
	tokens = 8 * floor(kv_b / (2.0 * 8 * 128 * 2 * 32));
	ck_assert_double_eq_tol(mem.kv_tokens, tokens, 0.5);
	/* Under TP 8 Mixtral's 8 KV heads are one a GPU, not duplicated:
	 * DP attention saves no KV there and holds the attention whole, so
	 * it holds fewer tokens. */
	{
		hx_replica t;
		hx_memory tm;
		uniform(&t, "mixtral-8x7b", "h100-sxm", 8, 1);
		hx_cost_memory(&t, 0.9, &tm);
		ck_assert(mem.st[0].weights_b > tm.st[0].weights_b);
		ck_assert(mem.kv_tokens < tm.kv_tokens);
	}
	/* 8 redundant experts: two per GPU, 32 layers of one more expert. */
	ep_mixtral(&r, 8, 8, 8);
	hx_cost_memory(&r, 0.9, &mem);
	ck_assert_double_eq_tol(mem.st[0].weights_b, want + 32 * 3.0 * 4096 * 14336 * 2, 1);
	/* EP with TP attention (dp 1): attention and head split by 8. */
	ep_mixtral(&r, 8, 0, 0);
	hx_cost_memory(&r, 0.9, &mem);
	layer = (4096.0 * 48 * 128 + 4096.0 * 4096 + 4096.0 * 8 * 8) * 2 / 8 +
		3.0 * 4096 * 14336 * 2 + 2.0 * 4096 * 2;
	ck_assert_double_eq_tol(mem.st[0].weights_b, 32 * layer + 2 * 32000.0 * 4096 * 2 / 8,
				1);
}
END_TEST

/* Hand-computed all-to-all volumes and times. */
START_TEST(test_ep_all_to_all)
{
	hx_replica r;
	double d, c, t;
	const hx_gpu *g = G("h100-sxm");

	ep_mixtral(&r, 8, 8, 0);
	/* 1024 tokens over 8 GPUs, 4096 hidden, 2 experts a token, 2 bytes. */
	hx_cost_a2a_bytes(&r, &r.stage[0], 1024, &d, &c);
	ck_assert_double_eq(d, 128.0 * 4096 * 2 * 2);
	ck_assert_double_eq(c, 128.0 * 4096 * 2 * 2);
	/* FP8 weights dispatch in FP8, combine in BF16. */
	r.wdt = HX_DT_FP8;
	hx_cost_a2a_bytes(&r, &r.stage[0], 1024, &d, &c);
	ck_assert_double_eq(d, 128.0 * 4096 * 2);
	ck_assert_double_eq(c, 128.0 * 4096 * 2 * 2);
	/* One node: NVLink only. */
	t = hx_cost_a2a_s(&r.stage[0], 1e6);
	ck_assert_double_eq_tol(t, g->intra_latency_us * 1e-6 + 1e6 / (g->intra_bw_gb_s * 1e9),
				1e-12);
	/* Two nodes of 8 (EP 16 over 16 GPUs, 400 Gb/s NICs): half the bytes
	 * leave the node, 8 GPUs' worth through one NIC. */
	r.stage[0].tp = 16;
	r.stage[0].ep = 16;
	r.stage[0].nic_gbps = 400;
	r.stage[0].nic_latency_us = 20;
	t = hx_cost_a2a_s(&r.stage[0], 1e6);
	ck_assert_double_eq_tol(t, 20e-6 + 1e6 * 0.5 * 8 / 50e9, 1e-12);
	/* The cross-node fraction is (nodes - 1) / nodes: 3/4 on 4 nodes. */
	r.stage[0].tp = 32;
	t = hx_cost_a2a_s(&r.stage[0], 1e6);
	ck_assert_double_eq_tol(t, 20e-6 + 1e6 * 0.75 * 8 / 50e9, 1e-12);
}
END_TEST

/* The shape rules of EP and DP attention. */
START_TEST(test_ep_check)
{
	hx_replica r;
	hx_err err = {0};

	uniform(&r, "mixtral-8x7b", "h100-sxm", 2, 1);
	r.stage[0].tp = 6;
	r.stage[0].ep = 6;
	r.stage[0].dp = 6;
	ck_assert_int_eq(hx_replica_check(&r, &err), HX_EINPUT);
	ck_assert_str_eq(err.msg,
			 "expert parallel size 6 must divide the 8 experts of mixtral-8x7b");
	r.stage[0].redundant_experts = 4; /* 12 physical experts: 2 a GPU */
	ck_assert_int_eq(hx_replica_check(&r, &err), 0);
	r.stage[0].redundant_experts = 2;
	ck_assert_int_eq(hx_replica_check(&r, &err), HX_EINPUT);
	ck_assert_str_eq(err.msg, "expert parallel size 6 must divide the 8 experts of "
				  "mixtral-8x7b plus 2 redundant");
	r.stage[0].redundant_experts = 0;
	r.stage[0].tp = r.stage[0].ep = 8;
	r.stage[0].dp = 3;
	ck_assert_int_eq(hx_replica_check(&r, &err), HX_EINPUT);
	ck_assert_str_eq(err.msg, "data-parallel attention of 3 ranks does not fit on 8 GPUs: "
				  "the ranks must divide the GPUs");
	r.stage[0].ep = 4;
	r.stage[0].dp = 8;
	ck_assert_int_eq(hx_replica_check(&r, &err), HX_EINPUT);
	uniform(&r, "llama-3.1-8b", "h100-sxm", 8, 1);
	r.stage[0].ep = 8;
	ck_assert_int_eq(hx_replica_check(&r, &err), HX_EINPUT);
	ck_assert_str_eq(
	    err.msg,
	    "expert parallelism needs a mixture-of-experts model: llama-3.1-8b is dense");
}
END_TEST

/* EP off (0 or 1) is the plain TP stage; two micro-batches hide the
 * smaller of compute and all-to-all. */
START_TEST(test_ep_cost)
{
	hx_replica r, e;
	hx_batch b = {0};
	hx_iter a, x;
	hx_breakdown bd = {0};
	double c1, c2;

	uniform(&r, "mixtral-8x7b", "h100-sxm", 8, 1);
	hx_batch_add_decode(&b, 64, 1000);
	hx_cost_iter(&r, &b, &a);
	e = r;
	e.stage[0].ep = e.stage[0].dp = 1;
	hx_cost_iter(&e, &b, &x);
	ck_assert(a.latency_s == x.latency_s);
	ck_assert(!hx_stage_is_ep(&e.stage[0]));

	ep_mixtral(&e, 8, 8, 0);
	e.stage[0].micro_batches = 1;
	c1 = hx_cost_layer(&e, &e.stage[0], 5, &b, &bd);
	ck_assert(bd.a2a_s > 0 && bd.a2a_s < c1);
	e.stage[0].micro_batches = 2;
	c2 = hx_cost_layer(&e, &e.stage[0], 5, &b, NULL);
	ck_assert_msg(c2 <= c1, "overlap %g vs %g", c2, c1);
	/* Across 4 nodes of 100 Gb/s the all-to-all dominates and the
	 * overlap hides the compute: twice one micro-batch's all-to-all. */
	e.stage[0].tp = e.stage[0].ep = e.stage[0].dp = 32;
	e.stage[0].redundant_experts = 24;
	e.stage[0].nic_gbps = 100;
	{
		hx_batch p = {0}, mb;
		hx_breakdown h = {0};
		hx_batch_add_prefill(&p, 16, 2048, 0);
		mb = hx_batch_scale(&p, 0.5);
		e.stage[0].micro_batches = 1;
		hx_cost_layer(&e, &e.stage[0], 5, &mb, &h);
		e.stage[0].micro_batches = 2;
		c2 = hx_cost_layer(&e, &e.stage[0], 5, &p, NULL);
		ck_assert(h.a2a_s > h.linear_s + h.attention_s + h.comm_s - h.a2a_s);
		ck_assert_double_eq_tol(c2, 2 * h.a2a_s, 1e-12);
	}
}
END_TEST

/* DP attention ranks step together: a batch whose busiest rank holds an
 * even share costs what the even spread does; one that puts every prompt
 * on one rank costs more, and that rank sends all of the all-to-all
 * (hand-computed: the whole batch's tokens from its one GPU). */
START_TEST(test_ep_ranks)
{
	hx_replica e;
	hx_batch even = {0}, one = {0}, rk = {0};
	hx_iter a, x;
	hx_breakdown bd = {0};
	double db, cb;

	ep_mixtral(&e, 8, 8, 0);
	e.stage[0].micro_batches = 1;
	hx_batch_add_prefill(&even, 8, 2048, 0);
	one = even;
	hx_batch_add_prefill(&rk, 1, 2048, 0);
	hx_batch_rank_max(&one, &rk);
	hx_cost_cycle(&e, &even, &a);
	hx_cost_cycle(&e, &one, &x);
	ck_assert_double_eq_tol(a.cycle_s, x.cycle_s, 1e-12);
	rk = even;
	one = even;
	hx_batch_rank_max(&one, &rk);
	hx_cost_cycle(&e, &one, &x);
	ck_assert_msg(x.cycle_s > 2 * a.cycle_s, "one rank %g, even %g", x.cycle_s, a.cycle_s);
	hx_cost_layer(&e, &e.stage[0], 5, &one, &bd);
	hx_cost_a2a_bytes(&e, &e.stage[0], 8 * 2048 * 8, &db, &cb);
	ck_assert_double_eq_tol(
	    bd.a2a_s, hx_cost_a2a_s(&e.stage[0], db) + hx_cost_a2a_s(&e.stage[0], cb), 1e-15);
}
END_TEST

/* AFD (issue 22): the two halves of a layer are the colocated layer split,
 * on one GPU a side at m = 1; the weights split likewise; shapes checked. */
START_TEST(test_afd)
{
	const char *models[] = {"llama-3.1-8b", "mixtral-8x7b"};
	hx_err err = {0};

	for (int i = 0; i < 2; i++) {
		hx_afd g = {M(models[i]),
			    HX_DT_BF16,
			    HX_DT_FP16,
			    G("h100-sxm"),
			    G("h100-sxm"),
			    1,
			    1,
			    1,
			    1,
			    1,
			    {100, 0.02}};
		hx_afd_step st;
		hx_replica r;
		hx_memory mem;
		hx_batch b = {0};
		double layer;
		int moe = M(models[i])->a.experts > 0;

		ck_assert_int_eq(hx_afd_check(&g, &err), 0);
		uniform(&r, models[i], "h100-sxm", 1, 1);
		hx_batch_add_decode(&b, 48, 1500);
		layer = hx_cost_layer(&r, &r.stage[0], 5, &b, NULL);
		hx_cost_afd(&g, 48, 1500, 0.9, &st);
		ck_assert_int_eq(st.kind[moe].count, 32);
		ck_assert_double_eq_tol(st.kind[moe].attn_s + st.kind[moe].ffn_s, layer,
					1e-12 * layer);
		ck_assert_double_eq_tol(st.kind[moe].cycle_s * 32, st.pipeline_s,
					1e-12 * st.pipeline_s);
		/* 48 tokens of 4096 at 16 bits, once, or to each of 2 experts */
		ck_assert_double_eq(st.kind[moe].bytes_each_way, 48 * 4096 * 2 * (moe ? 2 : 1));
		hx_cost_memory(&r, 0.9, &mem);
		ck_assert_double_eq_tol(st.attn_weights_b + st.ffn_weights_b,
					mem.st[0].weights_b, 1e-9 * mem.st[0].weights_b);
		ck_assert_double_eq(
		    st.attn_kv_tokens,
		    floor(st.attn_kv_b / hx_kv_bytes_per_token(M(models[i]), HX_DT_FP16)));
		/* Two micro-batches halve what each side and the link carry at
		 * once. */
		g.micro_batches = 2;
		hx_cost_afd(&g, 48, 1500, 0.9, &st);
		ck_assert_double_eq(st.kind[moe].bytes_each_way, 48 * 4096 * 2 * (moe ? 2 : 1));
		ck_assert(st.kind[moe].xfer_s < 0.02e-3 + 48 * 4096 * 2 * 2 / 12.5e9);
	}
	{
		hx_afd g = {M("mixtral-8x7b"),
			    HX_DT_BF16,
			    HX_DT_FP16,
			    G("h100-sxm"),
			    G("l40s"),
			    2,
			    3,
			    8,
			    1,
			    2,
			    {100, 0.02}};
		ck_assert_int_eq(hx_afd_check(&g, &err), HX_EINPUT);
		ck_assert_str_eq(err.msg,
				 "attention tensor parallel degree 3 must divide the 32 "
				 "attention heads of mixtral-8x7b");
		g.attn_tp = 2;
		g.ffn_n = 3;
		ck_assert_int_eq(hx_afd_check(&g, &err), HX_EINPUT);
		ck_assert_str_eq(err.msg,
				 "3 FFN instances must divide the 8 experts of mixtral-8x7b");
		g.ffn_n = 4;
		g.link.bw_gbps = 0;
		ck_assert_int_eq(hx_afd_check(&g, &err), HX_EINPUT);
		g.link.bw_gbps = 100;
		g.micro_batches = 0;
		ck_assert_int_eq(hx_afd_check(&g, &err), HX_EINPUT);
		g.micro_batches = 2;
		ck_assert_int_eq(hx_afd_check(&g, &err), 0);
	}
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
	tcase_add_test(tc, test_decode_ctx);
	tcase_add_test(tc, test_moe_active_experts);
	tcase_add_test(tc, test_uniform_shapes);
	tcase_add_test(tc, test_capacity);
	tcase_add_test(tc, test_ep_memory);
	tcase_add_test(tc, test_ep_all_to_all);
	tcase_add_test(tc, test_ep_check);
	tcase_add_test(tc, test_ep_cost);
	tcase_add_test(tc, test_ep_ranks);
	tcase_add_test(tc, test_afd);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run(suite());
}
