/*
 * cost: see cost.h.  Per layer, every GEMM is a roofline of FLOPs / (peak *
 * e_compute) and bytes / (bandwidth * e_mem), its corner smoothed (the 2-norm
 * of the two), never below the kernel floor;
 * the per-token ops around them (norms, rotary, activation, residual adds)
 * are memory-bound kernels with the same floor; attention reads the KV cache
 * (decode) or does 4 n (c + n/2) d_head heads FLOPs (prefill chunks); TP adds
 * two ring all-reduces per layer; PP adds a send per stage boundary; every
 * iteration pays a fixed serving overhead.
 */
#include "config.h"

#include "model/cost.h"

#include <math.h>
#include <string.h>

static double ceil_div(double a, double b)
{
	return ceil(a / b);
}

/* KV heads each GPU holds: replicated when tp exceeds them. */
static double kv_heads_gpu(const hx_arch *a, int tp)
{
	return a->kv_heads >= tp ? (double)a->kv_heads / tp : 1;
}

/* KV bytes per token per layer held by one GPU of a TP group. */
static double kv_token_layer_gpu(const hx_arch *a, int tp, hx_dtype kvdt)
{
	if (a->kv_lora_rank > 0) /* MLA: the latent is not split by TP */
		return (double)(a->kv_lora_rank + a->qk_rope_head_dim) * hx_dtype_bytes(kvdt);
	return 2.0 * kv_heads_gpu(a, tp) * a->head_dim * hx_dtype_bytes(kvdt);
}

double hx_kv_bytes_token_layer_gpu(const hx_model *m, int tp, hx_dtype kvdt)
{
	return kv_token_layer_gpu(&m->a, tp, kvdt);
}

double hx_kv_bytes_per_token(const hx_model *m, hx_dtype kvdt)
{
	return kv_token_layer_gpu(&m->a, 1, kvdt) * m->a.layers;
}

/* A GEMM as one GPU of a TP group runs it. */
typedef struct gemm {
	double k, n;     /* weight matrix K x N per GPU */
	double resident; /* matrices held (all experts) */
	double read;     /* matrices read at this batch (active experts) */
	double m;        /* rows through all matrices together */
} gemm;

/* Active experts when TOKENS tokens each pick K of E. */
static double active_experts(const hx_arch *a, double tokens)
{
	double e = a->experts, k = a->experts_per_tok;
	if (tokens <= 0)
		return 0;
	return e * (1 - pow(1 - k / e, tokens));
}

/* How many of layer_gemms' GEMMs, first in its list, are attention's (the
 * rest are the MLP's or the MoE block's): attention/FFN disaggregation
 * puts them on different GPUs. */
static int attn_gemms_n(const hx_arch *a)
{
	if (a->kv_lora_rank > 0)
		return a->q_lora_rank > 0 ? 5 : 4;
	return 2;
}

/* The GEMMs of layer LAYER for M tokens on TP GPUs; returns how many. */
static int layer_gemms(const hx_arch *a, int tp, int layer, double m, gemm *g)
{
	int n = 0;
	double h = a->hidden, heads = (double)a->heads / tp;

	if (a->kv_lora_rank > 0) {
		double qk = a->qk_nope_head_dim + a->qk_rope_head_dim;
		if (a->q_lora_rank > 0) {
			g[n++] = (gemm){h, a->q_lora_rank, 1, 1, m};
			g[n++] = (gemm){a->q_lora_rank, heads * qk, 1, 1, m};
		} else {
			g[n++] = (gemm){h, heads * qk, 1, 1, m};
		}
		g[n++] = (gemm){h, a->kv_lora_rank + a->qk_rope_head_dim, 1, 1, m};
		g[n++] = (gemm){a->kv_lora_rank, heads * (a->qk_nope_head_dim + a->v_head_dim),
				1, 1, m};
		g[n++] = (gemm){heads * a->v_head_dim, h, 1, 1, m};
	} else {
		g[n++] = (gemm){h, (heads + 2 * kv_heads_gpu(a, tp)) * a->head_dim, 1, 1, m};
		g[n++] = (gemm){heads * a->head_dim, h, 1, 1, m};
	}
	double up = a->gated_mlp ? 2 : 1;
	if (hx_layer_is_moe(a, layer)) {
		double act = active_experts(a, m), mi = (double)a->moe_intermediate / tp;
		g[n++] = (gemm){h, a->experts, 1, 1, m}; /* router */
		g[n++] = (gemm){h, up * mi, a->experts, act, m * a->experts_per_tok};
		g[n++] = (gemm){mi, h, a->experts, act, m * a->experts_per_tok};
		if (a->shared_experts > 0) {
			double si = mi * a->shared_experts;
			g[n++] = (gemm){h, up * si, 1, 1, m};
			g[n++] = (gemm){si, h, 1, 1, m};
		}
	} else {
		double it = (double)a->intermediate / tp;
		g[n++] = (gemm){h, up * it, 1, 1, m};
		g[n++] = (gemm){it, h, 1, 1, m};
	}
	return n;
}

static double peak_flops(const hx_gpu *g, hx_dtype wdt)
{
	if (wdt == HX_DT_FP8 && g->tflops_fp8 > 0)
		return g->tflops_fp8 * 1e12;
	return g->tflops_bf16 * 1e12;
}

/* The shortest kernel of an iteration of TOKENS tokens: inside a CUDA graph
 * (an engine captures its steps of up to HX_GRAPH_MAX_TOKENS tokens) a kernel
 * pays no launch, only its shortest run; outside, the launch floor that
 * per-kernel timings measure.  MIXED: the step carries prompt tokens, whose
 * attention runs outside the graph (piecewise capture). */
static double floor_s(const hx_gpu *g, double tokens)
{
	if (g->graph_floor_us > 0 && tokens <= HX_GRAPH_MAX_TOKENS)
		return g->graph_floor_us * 1e-6;
	return g->kernel_floor_us * 1e-6;
}

/* Roofline of one kernel, never below the launch floor.  The corner is
 * smoothed (the 2-norm of compute and memory time rather than their max):
 * measured GEMMs between 64 and 512 rows are slower than either bound, as
 * tiles are neither full nor bandwidth-bound there. */
static double kernel_s(const hx_gpu *g, double flops, double peak, double e_c, double bytes,
		       double fl)
{
	double c = flops / (peak * e_c), m = bytes / (g->mem_bw_gb_s * 1e9 * g->e_mem);
	return fmax(sqrt(c * c + m * m), fl);
}

/* A GEMM; the experts of a MoE layer (resident > 1) run as one grouped GEMM
 * at e_moe of a dense GEMM's speed, whether compute- or memory-bound. */
static double gemm_s(const hx_gpu *g, hx_dtype wdt, const gemm *x, double fl)
{
	double flops = 2 * x->m * x->k * x->n;
	double bytes = x->read * x->k * x->n * hx_dtype_bytes(wdt) + x->m * (x->k + x->n) * 2;
	double t;

	if (x->m <= 0)
		return 0;
	t = kernel_s(g, flops, peak_flops(g, wdt), g->e_compute, bytes, fl);
	if (x->resident > 1 && g->e_moe > 0)
		t = fmax(t / g->e_moe, fl);
	return t;
}

/* A memory-bound per-token kernel moving BYTES. */
static double elementwise_s(const hx_gpu *g, double bytes, double fl)
{
	return fmax(bytes / (g->mem_bw_gb_s * 1e9 * g->e_mem), fl);
}

static double linear_part_s(const hx_model *m, const hx_gpu *g, int tp, hx_dtype wdt, int layer,
			    double tokens, double fl, int routed);

static double linear_s(const hx_model *m, const hx_gpu *g, int tp, hx_dtype wdt, int layer,
		       double tokens, double fl)
{
	return linear_part_s(m, g, tp, wdt, layer, tokens, fl, 1);
}

double hx_cost_linear(const hx_model *m, const hx_gpu *g, int tp, hx_dtype wdt, int layer,
		      double tokens)
{
	/* What per-kernel timings measure: every kernel launched on its own. */
	return linear_s(m, g, tp, wdt, layer, tokens, g->kernel_floor_us * 1e-6);
}

/* The linear kernels of one layer at TP on TOKENS tokens; without ROUTED,
 * all but a MoE layer's routed experts (their GEMMs and activation: an EP
 * stage prices them as a grouped GEMM of its own). */
static double linear_part_s(const hx_model *m, const hx_gpu *g, int tp, hx_dtype wdt, int layer,
			    double tokens, double fl, int routed)
{
	const hx_arch *a = &m->a;
	gemm gs[16];
	int n = layer_gemms(a, tp, layer, tokens, gs);
	double t = 0, h = a->hidden, heads = (double)a->heads / tp, kvh = kv_heads_gpu(a, tp);
	double inter, up = a->gated_mlp ? 3 : 2;

	if (tokens <= 0)
		return 0;
	for (int i = 0; i < n; i++)
		if (routed || gs[i].resident <= 1)
			t += gemm_s(g, wdt, &gs[i], fl);
	if (hx_layer_is_moe(a, layer))
		inter = (double)a->moe_intermediate / tp *
			((routed ? a->experts_per_tok : 0) + a->shared_experts);
	else
		inter = (double)a->intermediate / tp;
	t += 2 * elementwise_s(g, tokens * h * 2 * 2, fl);                       /* norms */
	t += elementwise_s(g, tokens * (heads + kvh) * a->head_dim * 2 * 2, fl); /* rotary */
	if (a->qk_norm)
		t += elementwise_s(g, tokens * (heads + kvh) * a->head_dim * 2 * 2, fl);
	if (inter > 0)
		t += elementwise_s(g, tokens * inter * up * 2, fl); /* activation */
	t += 2 * elementwise_s(g, tokens * h * 2 * 3, fl);          /* residual adds */
	return t;
}

/* Attention kernels of stage S on batch B.  MHA_PREFILL: an MLA model's
 * prompt chunks attend in the decompressed multi-head form (QK width
 * qk_nope + qk_rope, V width v_head_dim a head), as engines run MLA
 * prefill, rather than over the latent. */
static double attention_s_mla(const hx_replica *r, const hx_stage *s, const hx_batch *b,
			      int mha_prefill)
{
	const hx_arch *a = &r->model->a;
	const hx_gpu *g = s->gpu;
	double heads = (double)a->heads / s->tp, t = 0;
	double qk = a->kv_lora_rank > 0 ? a->kv_lora_rank + a->qk_rope_head_dim : a->head_dim;
	double v = a->kv_lora_rank > 0 ? a->kv_lora_rank : a->head_dim;
	double peak = g->tflops_bf16 * 1e12, tokens = b->prefill_tokens + b->decode_seqs;
	/* A step with prompt tokens runs attention outside the CUDA graph. */
	double fl = b->prefill_tokens > 0 ? g->kernel_floor_us * 1e-6 : floor_s(g, tokens);

	if (b->prefill_tokens > 0) {
		/* QK^T and PV over the chunk and what it attends to. */
		double pqk = qk, pv = v, flops;
		if (mha_prefill && a->kv_lora_rank > 0) {
			pqk = a->qk_nope_head_dim + a->qk_rope_head_dim;
			pv = a->v_head_dim;
		}
		flops = 2 * b->prefill_attn * heads * (pqk + pv);
		t += kernel_s(g, flops, peak, g->e_attn,
			      b->prefill_tokens * heads * (pqk + pv) * 2 * 2, fl);
	}
	if (b->decode_seqs > 0) {
		double bytes = b->decode_ctx * kv_token_layer_gpu(a, s->tp, r->kvdt);
		double flops = 2 * b->decode_ctx * heads * (qk + v);
		t += kernel_s(g, flops, peak, g->e_attn, bytes, fl);
	}
	return t;
}

static double attention_s(const hx_replica *r, const hx_stage *s, const hx_batch *b)
{
	return attention_s_mla(r, s, b, 0);
}

static double allreduce_s(const hx_stage *s, double bytes)
{
	double bw = (s->tp_bw_gb_s > 0 ? s->tp_bw_gb_s : s->gpu->intra_bw_gb_s) * 1e9;
	double lat =
	    (s->tp_latency_us > 0 ? s->tp_latency_us : s->gpu->allreduce_latency_us) * 1e-6;

	if (s->tp <= 1)
		return 0;
	return lat + 2.0 * (s->tp - 1) / s->tp * bytes / bw;
}

static double ep_layer_s(const hx_replica *r, const hx_stage *s, int layer, const hx_batch *b,
			 hx_breakdown *bd);
static hx_batch rank_batch(const hx_batch *b, int dp);

double hx_cost_layer(const hx_replica *r, const hx_stage *s, int layer, const hx_batch *b,
		     hx_breakdown *bd)
{
	double tokens = b->prefill_tokens + b->decode_seqs;
	double lin, att, comm;

	if (hx_stage_is_ep(s))
		return ep_layer_s(r, s, layer, b, bd);
	lin = linear_s(r->model, s->gpu, s->tp, r->wdt, layer, tokens, floor_s(s->gpu, tokens));
	att = attention_s(r, s, b);
	comm = 2 * allreduce_s(s, tokens * r->model->a.hidden * 2);
	if (bd) {
		bd->linear_s += lin;
		bd->attention_s += att;
		bd->comm_s += comm;
	}
	return lin + att + comm;
}

/* The output head on the last stage: logits for every sequence that emits a
 * token this iteration. */
static double head_s(const hx_replica *r, const hx_stage *s, const hx_batch *b)
{
	const hx_arch *a = &r->model->a;
	gemm x = {a->hidden, (double)a->vocab / s->tp, 1, 1, b->prefill_seqs + b->decode_seqs};
	double fl = floor_s(s->gpu, b->prefill_tokens + b->decode_seqs);

	if (hx_stage_is_ep(s)) {
		/* Data parallel: each rank's head, split by its attention TP,
		 * for its own sequences. */
		int dp = hx_stage_dp(s);
		hx_batch rb = rank_batch(b, dp);
		x.n = (double)a->vocab / (s->tp / dp);
		x.m = rb.prefill_seqs + rb.decode_seqs;
		fl = floor_s(s->gpu, rb.prefill_tokens + rb.decode_seqs);
	}

	return gemm_s(s->gpu, r->wdt, &x, fl) +
	       elementwise_s(s->gpu, x.m * a->hidden * 2 * 2, fl);
}

void hx_cost_iter(const hx_replica *r, const hx_batch *b, hx_iter *out)
{
	double tokens = b->prefill_tokens + b->decode_seqs;
	double over = 0;

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < r->nstages; i++) {
		const hx_stage *s = &r->stage[i];
		const hx_arch *a = &r->model->a;
		double t = 0;
		/* Layers of one kind (dense or MoE) cost the same: price one of
		 * each kind and multiply (the simulator calls this per iteration). */
		int ndense = 0, nmoe = 0, dense_at = -1, moe_at = -1;
		for (int l = s->first; l < s->last; l++) {
			if (hx_layer_is_moe(a, l)) {
				nmoe++;
				moe_at = l;
			} else {
				ndense++;
				dense_at = l;
			}
		}
		for (int k = 0; k < 2; k++) {
			hx_breakdown one = {0};
			int n = k ? nmoe : ndense;
			if (n == 0)
				continue;
			t += n * hx_cost_layer(r, s, k ? moe_at : dense_at, b, &one);
			out->sum.linear_s += n * one.linear_s;
			out->sum.attention_s += n * one.attention_s;
			out->sum.comm_s += n * one.comm_s;
			out->sum.a2a_s += n * one.a2a_s;
		}
		if (i == r->nstages - 1) {
			double h = head_s(r, s, b);
			t += h;
			out->sum.linear_s += h;
		}
		out->stage_s[i] = t;
		out->latency_s += t;
		if (t > out->bottleneck_s)
			out->bottleneck_s = t;
		if (i + 1 < r->nstages) {
			double bytes = tokens * hx_cost_act_bytes_per_token(r->model);
			out->transfer_s += s->next_latency_ms * 1e-3 +
					   bytes / hx_gbps_bytes_s(s->next_bw_gbps);
		}
		{
			/* The host's share: the step's fixed cost and one per
			 * sequence (inputs, sampling, outputs); each DP rank
			 * of an EP stage schedules its own. */
			hx_batch rb = hx_stage_is_ep(s) ? rank_batch(b, hx_stage_dp(s)) : *b;
			double h =
			    s->gpu->iter_overhead_ms * 1e-3 +
			    s->gpu->seq_overhead_us * 1e-6 * (rb.decode_seqs + rb.prefill_seqs);
			if (h > over)
				over = h;
		}
	}
	out->overhead_s = over;
	out->sum.overhead_s = over;
	out->latency_s += out->transfer_s + over;
	out->cycle_s = out->latency_s;
}

double hx_cost_cycle(const hx_replica *r, const hx_batch *b, hx_iter *out)
{
	/* As many micro-batches as stages, but no more than there are
	 * sequences to split (one sequence passes the stages one by one). */
	double units = b->decode_seqs + b->prefill_seqs;
	int m = (int)fmin(r->nstages, fmax(1, ceil(units - 1e-9)));
	hx_batch mb;

	if (m <= 1) {
		hx_cost_iter(r, b, out);
		return out->cycle_s;
	}
	mb = hx_batch_scale(b, 1.0 / m);
	hx_cost_iter(r, &mb, out);
	out->cycle_s = fmax(out->latency_s, m * out->bottleneck_s + out->overhead_s);
	return out->cycle_s;
}

void hx_batch_add_prefill(hx_batch *b, double seqs, double tokens, double cached)
{
	b->prefill_tokens += seqs * tokens;
	b->prefill_attn += seqs * tokens * (cached + tokens / 2);
	b->prefill_seqs += seqs;
}

void hx_batch_add_decode(hx_batch *b, double seqs, double context)
{
	b->decode_seqs += seqs;
	b->decode_ctx += seqs * context;
}

hx_batch hx_batch_scale(const hx_batch *b, double f)
{
	hx_batch x = {b->prefill_tokens * f,    b->prefill_attn * f,
		      b->prefill_seqs * f,      b->decode_seqs * f,
		      b->decode_ctx * f,        b->rank_prefill_tokens * f,
		      b->rank_prefill_attn * f, b->rank_prefill_seqs * f,
		      b->rank_decode_seqs * f,  b->rank_decode_ctx * f};
	return x;
}

void hx_batch_rank_max(hx_batch *b, const hx_batch *rank)
{
	b->rank_prefill_tokens = fmax(b->rank_prefill_tokens, rank->prefill_tokens);
	b->rank_prefill_attn = fmax(b->rank_prefill_attn, rank->prefill_attn);
	b->rank_prefill_seqs = fmax(b->rank_prefill_seqs, rank->prefill_seqs);
	b->rank_decode_seqs = fmax(b->rank_decode_seqs, rank->decode_seqs);
	b->rank_decode_ctx = fmax(b->rank_decode_ctx, rank->decode_ctx);
}

/* The busiest of DP attention ranks' batches in B: its own fields where
 * B says which, else an even 1/DP of B. */
static hx_batch rank_batch(const hx_batch *b, int dp)
{
	hx_batch x;

	if (b->rank_prefill_tokens + b->rank_decode_seqs <= 0)
		return hx_batch_scale(b, 1.0 / dp);
	x = (hx_batch){b->rank_prefill_tokens, b->rank_prefill_attn, b->rank_prefill_seqs,
		       b->rank_decode_seqs, b->rank_decode_ctx};
	return x;
}

/* ---- expert parallelism and data-parallel attention ---------------------- */

/*
 * An EP stage (hx_stage.ep, .dp) of tp GPUs runs each layer as its
 * deployments do (SGLang's DeepSeek-V3 deployment on 96 H100, LMSYS blog
 * "Deploying DeepSeek with PD Disaggregation and Large-scale Expert
 * Parallelism on 96 H100 GPUs", 2025-05-05):
 *   - attention: each of dp ranks (tp / dp GPUs, heads split by that TP)
 *     for its own 1/dp of the sequences, its KV cache only on its GPUs
 *     (an MLA latent unsplit, as under TP; MLA decode attends over the
 *     latent, MLA prefill in the multi-head form); the dense MLPs, the router,
 *     the shared experts and the LM head are data parallel alike.  A
 *     sequence is one rank's and the ranks step together (every MoE
 *     layer's all-to-all waits for all of them), so a step costs its
 *     busiest rank's share (hx_batch's rank_ fields; an even 1/dp when
 *     they are unset): a prompt's chunk on one rank stalls them all;
 *   - routed experts: (experts + redundant) / ep on each GPU; every token
 *     goes to experts_per_tok of them by an all-to-all dispatch and comes
 *     back by a combine (hx_cost_a2a_bytes, hx_cost_a2a_s); the busiest GPU
 *     gets `imbalance` times the mean load (EPLB's residue);
 *   - the experts of a GPU run as one grouped GEMM whose every expert's
 *     rows are padded to a whole tile of HX_GROUPED_GEMM_ROWS rows: the
 *     efficiency of a grouped GEMM by tokens per expert;
 *   - two micro-batches (micro_batches = 2): while one computes, the
 *     other's dispatch or combine runs, so a layer takes twice the larger
 *     of one micro-batch's compute and its all-to-all, not their sum
 *     (where that is less than the whole batch's sum).
 *
 * Constants, fixed before any comparison:
 *   HX_GROUPED_GEMM_ROWS 128: DeepGEMM's grouped GEMM (contiguous layout,
 *     the prefill kernel DeepEP's normal dispatch feeds) aligns every
 *     expert's rows to get_m_alignment_for_contiguous_layout() = 128.
 *   HX_EPLB_IMBALANCE 1.06: with EPLB, SGLang's prefill throughput came
 *     within 5.6% of DeepSeek's profile data, which assumes a perfectly
 *     balanced load (LMSYS blog above); all of that gap is put on the
 *     imbalance, 1 / (1 - 0.056) = 1.06: an upper bound of its cost.
 *     The stage's imbalance field sets another.
 *   Two-batch overlap: SGLang's ablation in the same blog measures 27-35%
 *     more prefill throughput with it; the model's gain follows from the
 *     two terms it overlaps, not from that figure.
 *   HX_EP_NIC_LATENCY_US 20: one RDMA all-to-all's start across nodes
 *     (estimate's latency for a link between nodes).
 *   Dispatch in FP8 when the weights are FP8 and combine in BF16: DeepEP's
 *     kernels (deepseek-ai/DeepEP README: "FP8 dispatching and BF16
 *     combining").
 * Bandwidths are the GPU profile's NVLink all-reduce bus bandwidth
 * (intra_bw_gb_s) inside a node and the node's NIC (nic_gbps) across
 * nodes; the two links run at once.
 */

int hx_stage_is_ep(const hx_stage *s)
{
	return s->ep > 1 || s->dp > 1;
}

int hx_stage_dp(const hx_stage *s)
{
	return s->dp > 1 ? s->dp : 1;
}

static int stage_ep(const hx_stage *s)
{
	return s->ep > 1 ? s->ep : 1;
}

static double stage_imbalance(const hx_stage *s)
{
	return s->imbalance > 0 ? s->imbalance : HX_EPLB_IMBALANCE;
}

void hx_cost_a2a_bytes(const hx_replica *r, const hx_stage *s, double tokens,
		       double *dispatch_b, double *combine_b)
{
	const hx_arch *a = &r->model->a;
	double per_gpu = tokens / s->tp * a->hidden * a->experts_per_tok;
	double db = r->wdt == HX_DT_FP8 && s->gpu->tflops_fp8 > 0 ? 1 : 2;

	*dispatch_b = per_gpu * db;
	*combine_b = per_gpu * 2;
}

double hx_cost_a2a_s(const hx_stage *s, double bytes)
{
	int gpn = s->gpus_per_node > 0 && s->gpus_per_node < s->tp ? s->gpus_per_node : s->tp;
	int nodes = (s->tp + gpn - 1) / gpn;
	double cross = (double)(nodes - 1) / nodes;
	double nic = hx_gbps_bytes_s(s->nic_gbps > 0 ? s->nic_gbps : HX_DEFAULT_NIC_GBPS);
	double nic_lat =
	    (s->nic_latency_us > 0 ? s->nic_latency_us : HX_EP_NIC_LATENCY_US) * 1e-6;
	double intra = s->gpu->intra_latency_us * 1e-6 +
		       bytes * (1 - cross) / (s->gpu->intra_bw_gb_s * 1e9);
	double inter = 0;

	if (bytes <= 0 || s->tp <= 1)
		return 0;
	if (nodes > 1) /* every GPU of the node sends its share through the NIC */
		inter = nic_lat + bytes * cross * gpn / nic;
	return fmax(intra, inter);
}

/* The routed experts of one GPU as a grouped GEMM: READ of its experts
 * active, ROWS token-expert pairs, each active expert's rows padded to a
 * whole tile; K x N each. */
static double grouped_gemm_s(const hx_gpu *g, hx_dtype wdt, double k, double n, double read,
			     double rows, double fl)
{
	double per, padded, flops, bytes, t;

	if (rows <= 0 || read <= 0)
		return 0;
	per = rows / read;
	padded = ceil(per / HX_GROUPED_GEMM_ROWS - 1e-9) * HX_GROUPED_GEMM_ROWS * read;
	flops = 2 * padded * k * n;
	bytes = read * k * n * hx_dtype_bytes(wdt) + rows * (k + n) * 2;
	t = kernel_s(g, flops, peak_flops(g, wdt), g->e_compute, bytes, fl);
	if (g->e_moe > 0)
		t = fmax(t / g->e_moe, fl);
	return t;
}

/* One micro-batch B (the whole stage's) of layer LAYER on an EP stage:
 * COMPUTE (one GPU's kernels) and A2A (its dispatch and combine), split
 * into BD's fields. */
static void ep_micro_s(const hx_replica *r, const hx_stage *s, int layer, const hx_batch *b,
		       double *compute, double *a2a, hx_breakdown *bd)
{
	const hx_arch *a = &r->model->a;
	const hx_gpu *g = s->gpu;
	int dp = hx_stage_dp(s), atp = s->tp / dp, moe = hx_layer_is_moe(a, layer);
	/* The busiest attention rank's batch: the ranks step together. */
	hx_batch rb = rank_batch(b, dp);
	double tokens = b->prefill_tokens + b->decode_seqs,
	       rt = rb.prefill_tokens + rb.decode_seqs;
	/* DeepEP's normal (prefill) dispatch cannot run in a CUDA graph, its
	 * low-latency (decode) one can. */
	double fl = b->prefill_tokens > 0 ? g->kernel_floor_us * 1e-6 : floor_s(g, rt);
	double h = a->hidden, lin, att, comm, up = a->gated_mlp ? 3 : 2, x = 0;
	hx_stage rs = *s;

	*compute = *a2a = 0;
	if (tokens <= 0)
		return;
	/* One attention rank: the stage's GPUs at its TP, its sequences. */
	rs.tp = atp;
	rs.ep = rs.dp = 0;
	/* The routed experts are below. */
	lin = linear_part_s(r->model, g, atp, r->wdt, layer, rt, fl, 0);
	att = attention_s_mla(r, &rs, &rb, 1);
	/* The attention rank's all-reduces: two on a dense layer, one (after
	 * attention) where the combine ends the MoE block. */
	comm = (moe ? 1 : 2) * allreduce_s(&rs, rt * h * 2);
	if (moe) {
		int ep = stage_ep(s);
		double E = a->experts, k = a->experts_per_tok;
		double local = (E + s->redundant_experts) / ep;
		double mi = a->moe_intermediate, imb = stage_imbalance(s);
		double rows = tokens * k / ep * imb;
		double act = local * (1 - pow(1 - k / E, tokens));
		double gu = a->gated_mlp ? 2 : 1, db, cb;

		lin += grouped_gemm_s(g, r->wdt, h, gu * mi, act, rows, fl);
		lin += grouped_gemm_s(g, r->wdt, mi, h, act, rows, fl);
		lin += elementwise_s(g, rows * mi * up * 2, fl);
		/* A GPU's all-to-all moves the larger of what its rank sends
		 * (its tokens' copies, over the rank's GPUs) and what its
		 * experts take in (the stage's, imbalanced). */
		hx_cost_a2a_bytes(r, s, fmax(rt * dp, tokens * imb), &db, &cb);
		x = hx_cost_a2a_s(s, db) + hx_cost_a2a_s(s, cb);
	}
	*compute = lin + att + comm;
	*a2a = x;
	if (bd) {
		bd->linear_s += lin;
		bd->attention_s += att;
		bd->comm_s += comm;
		bd->a2a_s += x;
	}
}

static double ep_layer_s(const hx_replica *r, const hx_stage *s, int layer, const hx_batch *b,
			 hx_breakdown *bd)
{
	double tokens = b->prefill_tokens + b->decode_seqs, c, x, t, c2, x2;
	hx_breakdown one = {0}, two = {0};
	hx_batch mb;

	ep_micro_s(r, s, layer, b, &c, &x, &one);
	t = c + x; /* alone, the all-to-all waits for the compute and back */
	if (s->micro_batches >= 2 && tokens >= 2) {
		/* Two micro-batches: each resource is busy twice its half's
		 * share.  Halves read the weights twice, so at small batches
		 * the overlap loses; an engine runs it where it gains
		 * (SGLang's TBO has a token threshold), and so does the model. */
		mb = hx_batch_scale(b, 0.5);
		ep_micro_s(r, s, layer, &mb, &c2, &x2, &two);
		if (2 * fmax(c2, x2) < t) {
			t = 2 * fmax(c2, x2);
			one.linear_s = 2 * two.linear_s;
			one.attention_s = 2 * two.attention_s;
			one.a2a_s = 2 * two.a2a_s;
		}
	}
	if (bd) {
		bd->linear_s += one.linear_s;
		bd->attention_s += one.attention_s;
		bd->comm_s += t - one.linear_s - one.attention_s;
		bd->a2a_s += one.a2a_s;
	}
	return t;
}

/* ---- shapes ------------------------------------------------------------- */

/* An EP stage's shape: experts split evenly, attention ranks that fit. */
static int ep_check(const hx_replica *r, const hx_stage *s, hx_err *err)
{
	const hx_arch *a = &r->model->a;
	int ep = stage_ep(s), dp = hx_stage_dp(s);

	if (s->tp < 1 || s->ep < 0 || s->dp < 0 || s->redundant_experts < 0)
		return hx_errf(err, HX_EINPUT, "an expert-parallel stage needs positive sizes");
	if (ep > 1 && a->experts <= 1)
		return hx_errf(
		    err, HX_EINPUT,
		    "expert parallelism needs a mixture-of-experts model: %s is dense",
		    r->model->name);
	if (ep > 1 && ep != s->tp)
		return hx_errf(err, HX_EINPUT,
			       "expert parallel size %d must equal the stage's %d GPUs", ep,
			       s->tp);
	if (dp > 1 && ep <= 1 && a->experts > 1)
		/* Its experts would be whole on every GPU: not modelled. */
		return hx_errf(err, HX_EINPUT,
			       "data-parallel attention on %s, a mixture of experts, needs "
			       "expert parallelism",
			       r->model->name);
	if (s->redundant_experts > 0 && ep <= 1)
		return hx_errf(err, HX_EINPUT, "redundant experts need expert parallelism");
	if (ep > 1 && (a->experts + s->redundant_experts) % ep) {
		if (s->redundant_experts == 0)
			return hx_errf(
			    err, HX_EINPUT,
			    "expert parallel size %d must divide the %d experts of %s", ep,
			    a->experts, r->model->name);
		return hx_errf(err, HX_EINPUT,
			       "expert parallel size %d must divide the %d experts of %s plus "
			       "%d redundant",
			       ep, a->experts, r->model->name, s->redundant_experts);
	}
	if (s->tp % dp)
		return hx_errf(
		    err, HX_EINPUT,
		    "data-parallel attention of %d ranks does not fit on %d GPUs: the "
		    "ranks must divide the GPUs",
		    dp, s->tp);
	if (a->heads % (s->tp / dp))
		return hx_errf(
		    err, HX_EINPUT,
		    "attention tensor parallel degree %d (%d GPUs over %d ranks) must "
		    "divide the %d attention heads of %s",
		    s->tp / dp, s->tp, dp, a->heads, r->model->name);
	return 0;
}

int hx_replica_check(const hx_replica *r, hx_err *err)
{
	const hx_arch *a = &r->model->a;
	int next = 0;

	if (r->nstages < 1 || r->nstages > HX_MAX_STAGES)
		return hx_errf(err, HX_EINPUT, "a replica needs 1 to %d stages", HX_MAX_STAGES);
	for (int i = 0; i < r->nstages; i++) {
		const hx_stage *s = &r->stage[i];
		if (hx_stage_is_ep(s)) {
			int rc = ep_check(r, s, err);
			if (rc)
				return rc;
		} else if (s->tp < 1 || a->heads % s->tp)
			return hx_errf(err, HX_EINPUT,
				       "tensor parallel degree %d must divide the %d attention "
				       "heads of %s",
				       s->tp, a->heads, r->model->name);
		if (s->first != next || s->last <= s->first)
			return hx_errf(err, HX_EINPUT, "stage %d must hold layers from %d on",
				       i, next);
		next = s->last;
	}
	if (next != a->layers)
		return hx_errf(err, HX_EINPUT, "the stages cover %d of %d layers", next,
			       a->layers);
	return 0;
}

int hx_replica_uniform(hx_replica *r, const hx_model *m, const hx_gpu *g, int tp, int pp,
		       hx_dtype wdt, hx_dtype kvdt, double bw_gbps, double latency_ms,
		       hx_err *err)
{
	int layers = m->a.layers, first = 0;

	memset(r, 0, sizeof(*r));
	if (pp < 1 || pp > HX_MAX_STAGES || pp > layers)
		return hx_errf(err, HX_EINPUT, "pipeline degree %d must be between 1 and %d",
			       pp, layers < HX_MAX_STAGES ? layers : HX_MAX_STAGES);
	r->model = m;
	r->wdt = wdt;
	r->kvdt = kvdt;
	r->nstages = pp;
	for (int i = 0; i < pp; i++) {
		hx_stage *s = &r->stage[i];
		int n = layers / pp + (i < layers % pp);
		s->gpu = g;
		s->tp = tp;
		s->first = first;
		s->last = first + n;
		s->next_bw_gbps = bw_gbps;
		s->next_latency_ms = latency_ms;
		first += n;
	}
	return hx_replica_check(r, err);
}

/* ---- memory ------------------------------------------------------------- */

/* Weight bytes one GPU of EP stage S (index SI) holds: what is not a
 * routed expert split by the attention TP (replicated on every DP rank),
 * its (experts + redundant) / ep routed experts whole. */
static double ep_weights_b(const hx_replica *r, const hx_stage *s, int si)
{
	const hx_arch *a = &r->model->a;
	int atp = s->tp / hx_stage_dp(s);
	double wb = hx_dtype_bytes(r->wdt), total = 0, h = a->hidden;
	double local = (double)(a->experts + s->redundant_experts) / stage_ep(s);
	double expert = (a->gated_mlp ? 3.0 : 2.0) * h * a->moe_intermediate * wb;
	gemm gs[16];

	for (int l = s->first; l < s->last; l++) {
		int n = layer_gemms(a, atp, l, 1, gs);
		for (int i = 0; i < n; i++)
			if (gs[i].resident <= 1)
				total += gs[i].k * gs[i].n * wb;
		if (hx_layer_is_moe(a, l))
			total += local * expert;
		total += 2.0 * h * (a->norm_layer ? 2 : 1) * 2;
	}
	if (si == 0)
		total += ((double)a->vocab / atp + a->learned_pos) * h * wb;
	if (si == r->nstages - 1 && (!a->tied_embeddings || r->nstages > 1))
		total += (double)a->vocab / atp * h * wb;
	return total;
}

/* Weight bytes one GPU of stage S holds. */
static double stage_weights_b(const hx_replica *r, int si)
{
	const hx_stage *s = &r->stage[si];
	const hx_arch *a = &r->model->a;
	double wb = hx_dtype_bytes(r->wdt), total = 0, h = a->hidden;
	gemm gs[16];

	if (hx_stage_is_ep(s))
		return ep_weights_b(r, s, si);
	for (int l = s->first; l < s->last; l++) {
		int n = layer_gemms(a, s->tp, l, 1, gs);
		for (int i = 0; i < n; i++)
			total += gs[i].resident * gs[i].k * gs[i].n * wb;
		total += 2.0 * h * (a->norm_layer ? 2 : 1) * 2; /* norms, 16-bit */
	}
	/* Embeddings are vocab-parallel; the head too (a tied head is a second
	 * copy once the embedding and the head sit on different stages). */
	if (si == 0)
		total += ((double)a->vocab / s->tp + a->learned_pos) * h * wb;
	if (si == r->nstages - 1 && (!a->tied_embeddings || r->nstages > 1))
		total += (double)a->vocab / s->tp * h * wb;
	return total;
}

void hx_cost_memory(const hx_replica *r, double mem_util, hx_memory *out)
{
	const hx_arch *a = &r->model->a;

	memset(out, 0, sizeof(*out));
	out->fits = 1;
	out->kv_tokens = INFINITY;
	for (int i = 0; i < r->nstages; i++) {
		const hx_stage *s = &r->stage[i];
		hx_mem_stage *m = &out->st[i];
		m->capacity_b = s->gpu->mem_gib * HX_GIB * mem_util;
		m->weights_b = stage_weights_b(r, i);
		m->reserve_b = s->gpu->runtime_reserve_gib * HX_GIB;
		m->kv_b = m->capacity_b - m->weights_b - m->reserve_b;
		/* Each DP rank (one, but for EP stages) holds its own
		 * sequences' KV over its GPUs. */
		if (m->kv_b > 0) {
			int dp = hx_stage_dp(s);
			m->kv_tokens =
			    dp * floor(m->kv_b / (kv_token_layer_gpu(a, s->tp / dp, r->kvdt) *
						  (s->last - s->first)));
		} else {
			m->kv_tokens = 0;
		}
		out->weights_b += m->weights_b * s->tp;
		if (m->kv_b < 0 && -m->kv_b > out->short_b) {
			out->fits = 0;
			out->short_b = -m->kv_b;
			out->worst_stage = i;
		}
		if (m->kv_tokens < out->kv_tokens)
			out->kv_tokens = m->kv_tokens;
	}
}

double hx_model_weight_bytes(const hx_model *m, hx_dtype wdt)
{
	return hx_model_params(&m->a) * hx_dtype_bytes(wdt);
}

double hx_weights_load_s(const hx_model *m, hx_dtype wdt, double load_gbps)
{
	return hx_model_weight_bytes(m, wdt) /
	       hx_gbps_bytes_s(load_gbps > 0 ? load_gbps : HX_DEFAULT_LOAD_GBPS);
}

double hx_cost_act_bytes_per_token(const hx_model *m)
{
	return m->a.hidden * 2.0;
}

double hx_usd_per_mtok(double usd_per_hour, double rps, double tokens_per_req)
{
	return rps > 0 ? usd_per_hour / (rps * tokens_per_req * 3600 / 1e6) : 0;
}

double hx_cost_kv_transfer(const hx_model *m, hx_dtype kvdt, double tokens, double bw_gbps,
			   double latency_ms)
{
	return latency_ms * 1e-3 +
	       tokens * hx_kv_bytes_per_token(m, kvdt) / hx_gbps_bytes_s(bw_gbps);
}

/* ---- capacity at the SLO ------------------------------------------------- */

/*
 * The rule (the simulator is its judge).  At a request rate L a replica runs
 * iterations of mean time t (with PP: the micro-batch cycle).  By Little's
 * law the decode batch is B = L * O * t (O: mean output tokens) and each
 * iteration also carries p = L * P * t prompt tokens (P: mean prompt;
 * chunked prefill shares iterations with decode), so t solves t = T(B, p).
 * T grows with t, so the fixed point exists below the TPOT SLO exactly when
 * T at the SLO is within it; it is found by bisection.  Then:
 *   - B <= max_seqs and B + p <= the token budget;
 *   - KV: the running sequences hold, on average, L t (P O + E[O^2]/2)
 *     tokens (longer outputs stay longer); that mean plus two standard
 *     deviations must fit the KV cache;
 *   - a request that finds the cache too full for it is preempted and
 *     misses: the engine admits a prompt by its first chunk, so when the
 *     sequences in flight outgrow the cache the latest admitted recomputes
 *     from the start.  Those in flight (prefilling or decoding) are an
 *     M/G/inf population; the fraction of requests whose prompt and output
 *     do not fit beside them counts as misses with the TPOT and TTFT ones;
 *   - the fraction of requests that miss the SLO must stay within
 *     1 - attainment.  A request with n = O - 1 decode steps has TPOT
 *     t0 + S / n, where t0 = T(B, 0) and S the stalls of the requests that
 *     arrive during its n t seconds of decoding (compound Poisson: their
 *     prompts share its iterations; a stall is what a whole prompt adds to
 *     the iterations that carry it).  Its TTFT is a queueing wait for prefill room
 *     (Kingman's G/G/1 approximation with utilization u = p / (budget - B)
 *     and an exponential tail) plus ceil(P / c) iterations that each carry
 *     a chunk of it.  Both are averaged over quantiles of the output and
 *     prompt distributions.
 * Capacity is the largest such L, found by bisection.
 */
typedef struct cap_eval {
	int ok;
	const char *binding;
	double t, batch, ttft;
} cap_eval;

#define CAP_QUANTILES HX_COST_QUANTILES

/* Moments of a length distribution by its quantiles. */
static void dist_moments(const hx_dist *d, double m[4])
{
	m[0] = 1;
	m[1] = m[2] = m[3] = 0;
	for (int i = 0; i < 256; i++) {
		double x = hx_dist_quantile(d, (i + 0.5) / 256);
		m[1] += x / 256;
		m[2] += x * x / 256;
		m[3] += x * x * x / 256;
	}
}

/* N tokens in whole prefix-cache blocks, never a prompt's last token. */
static double whole_blocks(double n, double len)
{
	n = fmin(n, len - 1);
	return n < HX_PREFIX_BLOCK ? 0 : floor(n / HX_PREFIX_BLOCK) * HX_PREFIX_BLOCK;
}

double hx_prefix_hit(const hx_workload *w, double len, int group_cached, int user_cached)
{
	if (w->prefix_groups <= 0)
		return 0;
	if (user_cached && w->prefix_users > 0)
		return whole_blocks(len, len);
	return group_cached ? whole_blocks(w->prefix_tokens, len) : 0;
}

double hx_prefix_cached(const hx_workload *w, double len)
{
	return hx_prefix_hit(w, len, 1, 1);
}

int hx_replica_dp(const hx_replica *r)
{
	int dp = r->nstages > 0 ? hx_stage_dp(&r->stage[0]) : 1;
	for (int i = 1; i < r->nstages; i++)
		if (hx_stage_dp(&r->stage[i]) < dp)
			dp = hx_stage_dp(&r->stage[i]);
	return dp;
}

/* The replica's request overhead: the largest of its GPUs'. */
static double request_overhead_s(const hx_replica *r)
{
	double o = 0;
	for (int i = 0; i < r->nstages; i++)
		o = fmax(o, r->stage[i].gpu->request_overhead_ms * 1e-3);
	return o;
}

/* The prompts' chunks of the mean prompt (P tokens to compute, H cached,
 * chunks of at most C tokens a rank) an iteration of T carries beside B
 * decodes at rate LAMBDA on DP ranks: those whose prompts arrived while
 * the one before ran (the engine admits them together), at least one, no
 * more than the token budget left holds.  A prompt's stall is its share of
 * what they add together: an iteration's cost is not the sum of each
 * prompt's alone (the two micro-batches hide one prompt's all-to-all
 * behind the decodes' compute, but not many prompts'; a roofline's flat
 * part is shared). */
static double prompts_per_iter(double lambda, double t, double P, double c, int dp)
{
	return fmax(1, fmin(1 + lambda * t, dp * c / fmax(fmin(P, c), 1)));
}

/* An iteration of B decodes (context CTX) and K - 1 other prompts' chunks
 * (OTHERS: their tokens, at the context OAT) carrying a chunk of at most C
 * of a prompt's N tokens to compute, the chunk's tokens attending over a
 * context of AT: its time, and in *CHUNKS the prompt's chunks. */
static double chunk_iter(const hx_replica *r, double B, double ctx, double k, double others,
			 double oat, double n, double c, double at, double *chunks)
{
	hx_batch b = {0};
	hx_iter it;
	int dp = hx_replica_dp(r);

	hx_batch_add_decode(&b, B, ctx);
	if (k > 1)
		hx_batch_add_prefill(&b, k - 1, others, oat);
	hx_batch_add_prefill(&b, 1, fmin(n, c), at);
	if (dp > 1) {
		/* A prompt is one rank's and the ranks step together: the
		 * busiest carries the chunk whole, its share of the others'
		 * and of the decodes. */
		hx_batch rk = {0};
		hx_batch_add_decode(&rk, B / dp, ctx);
		if (k / dp > 1)
			hx_batch_add_prefill(&rk, k / dp - 1, others, oat);
		hx_batch_add_prefill(&rk, 1, fmin(n, c), at);
		hx_batch_rank_max(&b, &rk);
	}
	*chunks = fmax(1, ceil_div(n, c));
	return hx_cost_cycle(r, &b, &it);
}

/* On DP attention ranks (DP > 1) the K prompts an iteration admits each
 * join the rank with the most token budget left, and the ranks step
 * together, so the iteration costs what the busiest rank carries: the
 * largest of the K prompts' chunks (up to C tokens a rank) beside the
 * others' beyond one a rank (K / DP - 1 of them, OTHERS tokens each at
 * context OAT), or the ranks' even share of all K chunks where that is
 * more, and its share of the B decodes (not the mean prompt's chunk: a
 * step's cost is its largest prompt's, which its K prompts share).  The
 * largest of K prompts has the quantile function Q(u^(1/K)).  Returns the
 * iteration's mean stall over the decode-only one (TD), the largest
 * prompt's chunks all counted; its K prompts share it. */
static double dp_step_stall(const hx_replica *r, const hx_workload *w, double B, double ctx,
			    double k, double others, double oat, double c, double td)
{
	int dp = hx_replica_dp(r);
	double sum = 0;

	for (int i = 0; i < CAP_QUANTILES; i++) {
		double u = pow((i + 0.5) / CAP_QUANTILES, 1 / k);
		double len = hx_dist_quantile(&w->prompt, u), h = hx_prefix_cached(w, len);
		double n = fmax(len - h, 1), nc = fmin(n, c), at = h + nc / 2;
		double rest = fmax(fmax((k - 1) * others + nc, 0) / dp - nc,
				   fmax(k / dp - 1, 0) * others);
		hx_batch b = {0}, rk = {0};
		hx_iter it;

		hx_batch_add_decode(&b, B, ctx);
		if (k > 1)
			hx_batch_add_prefill(&b, k - 1, others, oat);
		hx_batch_add_prefill(&b, 1, nc, at);
		hx_batch_add_decode(&rk, B / dp, ctx);
		hx_batch_add_prefill(&rk, 1, nc, at);
		if (rest > 0)
			hx_batch_add_prefill(&rk, rest / fmax(others, 1), fmax(others, 1), oat);
		hx_batch_rank_max(&b, &rk);
		sum += fmax(1, ceil_div(n, c)) * fmax(hx_cost_cycle(r, &b, &it) - td, 0) /
		       CAP_QUANTILES;
	}
	return sum;
}

/* Iteration time at rate LAMBDA if iterations took T: T(B, p) above; P the
 * prompt tokens computed, H those the prefix cache holds.  An aggregated
 * replica's prompts do not spread thinly over its decode iterations: each
 * arrives whole and runs in chunks of up to the token budget left beside
 * the B decodes, and a chunk costs what it adds to a decode iteration (at
 * small batches a roofline is flat, so a thin share of a prompt would ride
 * almost free on the weights' read, which no engine sees).  Over a long
 * run, decode iterations of T_dec(B) and the stalls the prompts add (S each,
 * LAMBDA of them a second) fill the time, so the mean iteration takes
 * T_dec / (1 - LAMBDA S). */
static double iter_at(const hx_replica *r, const hx_workload *w, int phase, double lambda,
		      double P, double H, double O, double ctx, double t)
{
	hx_batch b = {0};
	hx_iter it;
	double stall;

	if (phase == HX_SERVE_BOTH) {
		int dp = hx_replica_dp(r);
		double B = lambda * O * t, td, tc, n;
		double c = fmax((w->serving.token_budget * dp - B) / dp, 1);
		double k = prompts_per_iter(lambda, t, P, c, dp), at = H + fmin(P, c) / 2;
		hx_batch_add_decode(&b, B, ctx);
		td = hx_cost_cycle(r, &b, &it);
		tc = chunk_iter(r, B, ctx, k, fmin(P, c), at, P, c, at, &n);
		stall = n * fmax(tc - td, 0) / k;
		if (dp > 1)
			stall = dp_step_stall(r, w, B, ctx, k, fmin(P, c), at, c, td) / k;
		return lambda * stall >= 1 ? INFINITY : td / (1 - lambda * stall);
	}
	if (phase != HX_SERVE_PREFILL)
		hx_batch_add_decode(&b, lambda * O * t, ctx);
	if (phase != HX_SERVE_DECODE) {
		int dp = hx_replica_dp(r);
		double n = lambda * t;
		hx_batch_add_prefill(&b, n, P, H);
		if (dp > 1 && n > 0) {
			/* A prompt is one rank's and the ranks step together:
			 * the busiest carries a whole prompt, or its share. */
			hx_batch rk = {0};
			if (phase != HX_SERVE_PREFILL)
				hx_batch_add_decode(&rk, lambda * O * t / dp, ctx);
			hx_batch_add_prefill(&rk, fmax(fmin(n, 1), n / dp), P, H);
			hx_batch_rank_max(&b, &rk);
		}
	}
	return hx_cost_cycle(r, &b, &it);
}

/* P(Z > x) for Z a lognormal of mean MU and variance V (a point at MU
 * when V is 0). */
static double lognormal_tail(double mu, double v, double x)
{
	double s2, m;

	if (x <= 0)
		return 1;
	if (v <= 0 || mu <= 0)
		return mu > x;
	s2 = log(1 + v / (mu * mu));
	m = log(mu) - s2 / 2;
	return 1 - hx_norm_cdf((log(x) - m) / sqrt(s2));
}

/* P(S + Z > x) for S the sum of K ~ Poisson(M) elements with moments PM
 * and Z an independent term of mean MU0 and variance V0: a
 * Fenton-Wilkinson lognormal for each k, the Poisson terms summed. */
static double compound_tail_plus(double m, const double pm[4], double mu0, double v0, double x)
{
	double mean = pm[1], var = fmax(pm[2] - pm[1] * pm[1], 1e-9), tail = 0, pk;
	int kmax;

	if (x < 0)
		return 1;
	if (m <= 0)
		return lognormal_tail(mu0, v0, x);
	if (m > 60) { /* many arrivals: normal */
		double mu = m * mean + mu0, sd = sqrt(m * pm[2] + v0);
		return 1 - hx_norm_cdf((x - mu) / sd);
	}
	kmax = (int)(m + 10 * sqrt(m) + 20);
	pk = exp(-m);
	tail = pk * lognormal_tail(mu0, v0, x);
	for (int k = 1; k <= kmax; k++) {
		pk *= m / k;
		tail += pk * lognormal_tail(k * mean + mu0, k * var + v0, x);
	}
	return tail;
}

/* P(S > x) for S the sum of K ~ Poisson(M) prompts with moments PM. */
static double compound_tail(double m, const double pm[4], double x)
{
	return compound_tail_plus(m, pm, 0, 0, x);
}

/* What a capacity search reads of its workload's lengths at every rate,
 * computed once per search (hx_cost_lens, cost.h). */
typedef hx_cost_lens cap_lens;

static void batch_share_of(const hx_workload *w, double share[][6]);

static void cap_lens_of(const hx_workload *w, cap_lens *l)
{
	dist_moments(&w->prompt, l->pm);
	dist_moments(&w->output, l->om);
	for (int i = 0; i < CAP_QUANTILES; i++)
		l->pq[i] = hx_dist_quantile(&w->prompt, (i + 0.5) / CAP_QUANTILES);
	batch_share_of(w, l->share);
}

/* What a prompt does to the iterations of a decode batch of B: an
 * iteration of the decodes alone, and per prompt length (CAP_QUANTILES
 * quantiles, then the percentile prompt) its chunks of at most C tokens
 * beyond what the prefix cache holds, the time of an iteration that
 * carries one of them beside the K - 1 other prompts' chunks it carries on
 * average (prompts_per_iter: the mean prompt, P computed and H cached)
 * and the stall of one chunk, its share of what they all add.  The TPOT
 * and the TTFT conditions both read it. */
typedef struct prompt_steps {
	double t_dec, k;
	double chunks[CAP_QUANTILES + 1], t_chunk[CAP_QUANTILES + 1];
	double t_last[CAP_QUANTILES + 1];
	double stall[CAP_QUANTILES + 1], stall_all[CAP_QUANTILES + 1];
} prompt_steps;

static void prompt_steps_at(const hx_replica *r, const hx_workload *w, const cap_lens *lens,
			    double B, double ctx, double c, double k, double P, double H,
			    double Pq, prompt_steps *ps)
{
	hx_batch b = {0};
	hx_iter it;
	double oat = H + fmin(P, c) / 2;

	hx_batch_add_decode(&b, B, ctx);
	ps->t_dec = hx_cost_cycle(r, &b, &it);
	ps->k = k;
	for (int i = 0; i <= CAP_QUANTILES; i++) {
		double len = i < CAP_QUANTILES ? lens->pq[i] : Pq;
		double h = hx_prefix_cached(w, len), n = len - h;
		ps->t_chunk[i] =
		    chunk_iter(r, B, ctx, k, fmin(P, c), oat, n, c, h + n / 2, &ps->chunks[i]);
		ps->stall[i] = fmax(ps->t_chunk[i] - ps->t_dec, 0) / k;
		ps->t_last[i] = ps->t_chunk[i];
		if (ps->chunks[i] > 1) {
			/* the last chunk holds what the full ones leave */
			double last = n - (ps->chunks[i] - 1) * c, ch;
			ps->t_last[i] = chunk_iter(r, B, ctx, k, fmin(P, c), oat, last, c,
						   h + n - last / 2, &ch);
		}
		ps->stall_all[i] =
		    (ps->chunks[i] - 1) * ps->stall[i] + fmax(ps->t_last[i] - ps->t_dec, 0) / k;
	}
}

/* The time prompt I of PS takes to prefill in iterations of at least T:
 * its full chunks, then the last, which holds what they leave. */
static double own_prefill(const prompt_steps *ps, int i, double t)
{
	return (ps->chunks[i] - 1) * fmax(t, ps->t_chunk[i]) + fmax(t, ps->t_last[i]);
}

/* The decode steps (output tokens after the first) of output quantile I
 * of CAP_QUANTILES. */
static double output_steps(const hx_workload *w, int i)
{
	return floor(hx_dist_quantile(&w->output, (i + 0.5) / CAP_QUANTILES) + 0.5) - 1;
}

/* Three-point Gauss-Legendre over [LO, HI] of what a sequence of O decode
 * steps adds to a window of N steps (PRESENT: in the batch at the window's
 * start with V steps left; else arriving V steps before its end): its steps
 * in the window OV and the context tokens beyond its prompt they read, G
 * (its age at the start, then one more a step).  The integrands are
 * polynomials of degree at most four on each piece, so this is exact. */
static void share_gl3(double lo, double hi, double o, double n, int present, double k[6])
{
	static const double x[3] = {-0.774596669241483377, 0, 0.774596669241483377};
	static const double wt[3] = {5.0 / 9, 8.0 / 9, 5.0 / 9};
	double c = (lo + hi) / 2, h = (hi - lo) / 2;

	if (hi <= lo)
		return;
	for (int i = 0; i < 3; i++) {
		double v = c + h * x[i], f = wt[i] * h, ov, g;
		if (present) {
			ov = fmin(v, n);
			g = (o - v) * ov + ov * ov / 2;
		} else {
			ov = fmin(o, v);
			g = ov * ov / 2;
		}
		k[1] += f * ov / CAP_QUANTILES;
		k[2] += f * ov * ov / CAP_QUANTILES;
		k[3] += f * ov * g / CAP_QUANTILES;
		k[4] += f * g * g / CAP_QUANTILES;
		k[5] += f * g / CAP_QUANTILES;
	}
}

/* What the other requests put in the decode batch over the N steps of a
 * request of output quantile I, per unit of their arrivals per step (the
 * decode batch is an M/G/inf population): those in flight at its start
 * (Poisson, O steps each, length-biased, the steps left uniform over O)
 * and those that arrive during it (N of them per unit).  SHARE[i]: [0] the
 * Poisson mass, then the sums of OV, OV^2, OV G, G^2 and G (share_gl3). */
static void batch_share_of(const hx_workload *w, double share[][6])
{
	double steps[CAP_QUANTILES];

	for (int i = 0; i < CAP_QUANTILES; i++)
		steps[i] = output_steps(w, i);
	for (int i = 0; i < CAP_QUANTILES; i++) {
		double n = steps[i], *k = share[i];
		memset(k, 0, 6 * sizeof(*k));
		if (n < 1)
			continue;
		for (int j = 0; j < CAP_QUANTILES; j++) {
			double o = steps[j];
			if (o < 1)
				continue;
			k[0] += (o + n) / CAP_QUANTILES;
			share_gl3(0, fmin(o, n), o, n, 1, k);
			share_gl3(n, o, o, n, 1, k);
			share_gl3(0, fmin(o, n), o, n, 0, k);
			share_gl3(o, n, o, n, 0, k);
		}
	}
}

/* A decode batch's step time as the capacity rule reads it for one
 * request: an intercept, S for each sequence and A for each context token
 * it reads (marginal costs of one more sequence a rank beside the whole
 * ones of the mean batch B: chords over that sequence and over a doubled
 * context; whole sequences, as a pipeline's micro-batches step with them),
 * LT the other requests' arrivals per step of a rank, PM the prompt's
 * moments (the whole prompt: attention reads the cached prefix too). */
typedef struct batch_load {
	double t_int, s, a, lt;
	const double *pm;
} batch_load;

static void batch_load_of(const hx_replica *r, const cap_lens *lens, double lambda, double t,
			  double B, double ctx, double dp, double t_dec, batch_load *bl)
{
	hx_batch b = {0};
	hx_iter it;
	double k = floor(B / dp + 1e-9), b0 = k > 0 ? k * dp : B, b1 = (k + 1) * dp, tb, ta, t0;

	hx_batch_add_decode(&b, b1, ctx);
	tb = hx_cost_cycle(r, &b, &it);
	b = (hx_batch){0};
	hx_batch_add_decode(&b, b1, 2 * ctx);
	ta = hx_cost_cycle(r, &b, &it);
	b = (hx_batch){0};
	hx_batch_add_decode(&b, b0, ctx);
	t0 = hx_cost_cycle(r, &b, &it);
	bl->a = ctx > 0 ? fmax(ta - tb, 0) / (b1 / dp * ctx) : 0;
	bl->s = fmax(tb - t0 - bl->a * ctx, 0);
	bl->lt = lambda * t / dp;
	bl->t_int = t_dec - B / dp * (bl->s + bl->a * ctx);
	bl->pm = lens->pm;
}

/* What a request of output quantile I (N decode steps) finds in its steps,
 * in seconds over all N: the others' sequences, a compound Poisson sum EL
 * (mass, then an element's moments), and its own part OWN (mean, variance:
 * the intercept, its own sequence and context).  A request's TPOT is its
 * steps' mean, so the batch it shares them with counts, not the mean
 * batch: it is there itself, and the others come and go (length-biased,
 * the long ones there longer), which at a thin margin decides the tail. */
static void batch_share(const cap_lens *lens, const batch_load *bl, int i, double n,
			double el[4], double own[2])
{
	const double *k = lens->share[i], *pm = bl->pm;
	double s = bl->s, a = bl->a, c1 = s + a * pm[1];
	double c2 = s * s + 2 * s * a * pm[1] + a * a * pm[2];
	double mass = bl->lt * k[0];

	el[0] = 1;
	el[1] = mass > 0 ? bl->lt * (c1 * k[1] + a * k[5]) / mass : 0;
	el[2] = mass > 0 ? bl->lt * (c2 * k[2] + 2 * a * c1 * k[3] + a * a * k[4]) / mass : 0;
	el[3] = mass;
	own[0] = n * (bl->t_int + c1) + a * n * n / 2;
	own[1] = a * a * n * n * fmax(pm[2] - pm[1] * pm[1], 0);
}

/* Elements E (moments [1], [2], Poisson mass [3]) in bursts of CA2 (gamma
 * arrivals, as tpot_misses treats its stalls), then the mixture of two. */
static void burst(double e[4], double ca2)
{
	if (ca2 > 1) {
		double var = e[2] - e[1] * e[1];
		e[1] *= ca2;
		e[2] = ca2 * var + e[1] * e[1];
		e[3] /= ca2;
	}
}

static void mix(double e[4], const double f[4])
{
	double m = e[3] + f[3];
	if (m > 0) {
		e[1] = (e[3] * e[1] + f[3] * f[1]) / m;
		e[2] = (e[3] * e[2] + f[3] * f[2]) / m;
	}
	e[3] = m;
}

/* Moments ([1], [2]) in B of the stall a prompt's chunks of moments X
 * start, with the stalls it brings on: the prompts that arrive (rate
 * LAMBDA, stalls of moments S, load RHO = LAMBDA S[1]) while the stalled
 * iterations run stall the iterations after them, and so on, as an M/G/1
 * busy period that X starts: E = X / (1 - RHO), and each of the LAMBDA X
 * arrivals adds a busy period's variance, S[2] / (1 - RHO)^3. */
static void busy_of(const double x[4], double rho, double lambda, const double s[4],
		    double b[4])
{
	b[1] = x[1] / (1 - rho);
	b[2] = x[2] / ((1 - rho) * (1 - rho)) + lambda * x[1] * s[2] / pow(1 - rho, 3);
}

/* The fraction of requests whose TPOT misses TMAX through prefill
 * interference on short outputs, at rate LAMBDA (PS: the decode batch's
 * iterations with and without a prompt's chunk).  A prompt that arrives
 * while a tagged request decodes stalls the iteration after by the time
 * its chunk adds to it (a roofline is flat at small batches, so the stall
 * of a whole chunk, not a mean token cost), and the next ones by its next
 * chunks (the last holds what the full ones leave).  The TPOT runs from
 * the first token, which reaches the client when the first decode step
 * ends, to the last, one step after the last decode step: its N
 * iterations carry the prompts that arrive during the N before them.
 * Those N take the request's own steps, what the batch it shares them
 * with costs (BL, batch_share: its mean and variance, a term beside the
 * stalls; as elements of their compound sum, a k-fold lognormal would
 * give a few milliseconds of batch the spread of second-long stalls), and
 * the stalls, which lengthen the window that more prompts arrive in: each
 * prompt that arrives in the undisturbed window starts a busy period of
 * stalls (busy_of).  The prompts that arrive before the first decode step
 * (PRE: the mean of the request's wait and its own prefill) the engine
 * admits by the step that streams the first token out, which the TTFT
 * counts (stall_tab): they stall the decode steps by their chunks after
 * the first, and by the busy periods of the prompts that arrive while
 * their chunks run, the first one's too (a streaming step that carries a
 * prompt is long, and what arrives during it stalls the next). */
static double tpot_misses(const hx_workload *w, const cap_lens *lens, const batch_load *bl,
			  double lambda, double pre, double tmax, const prompt_steps *ps)
{
	double sm[4] = {1, 0, 0, 0}, sp[4] = {1, 0, 0, 0}, bs[4], miss = 0, rho;
	double ca2 = w->arrival == HX_ARRIVAL_GAMMA ? w->cv * w->cv : 1;

	for (int i = 0; i < CAP_QUANTILES; i++) {
		double stall = ps->stall_all[i];
		sm[1] += stall / CAP_QUANTILES;
		sm[2] += stall * stall / CAP_QUANTILES;
	}
	rho = fmin(lambda * sm[1], 1 - 1e-9);
	busy_of(sm, rho, lambda, sm, bs);
	/* A prompt that arrives before the first decode step: its chunks after
	 * the first, and the busy periods of the prompts that arrive while any
	 * of its chunks run (the first one's, in the streaming step, too). */
	for (int i = 0; i < CAP_QUANTILES; i++) {
		double all = ps->stall_all[i], y = all - ps->stall[i] + lambda * all * bs[1];
		sp[1] += y / CAP_QUANTILES;
		sp[2] += (y * y + lambda * all * bs[2]) / CAP_QUANTILES;
	}
	/* Bursty arrivals (gamma, cv > 1): counts over a window vary cv^2 times
	 * more than Poisson ones; match that with Poisson bursts of cv^2
	 * requests each. */
	for (int i = 0; i < CAP_QUANTILES; i++) {
		double n = output_steps(w, i), e[4], ep[4], el[4], own[2];
		if (n < 1)
			continue;
		batch_share(lens, bl, i, n, el, own);
		burst(el, ca2);
		own[0] += el[3] * el[1];
		own[1] += el[3] * el[2];
		e[1] = bs[1];
		e[2] = bs[2];
		e[3] = lambda * own[0];
		burst(e, ca2);
		ep[1] = sp[1];
		ep[2] = sp[2];
		ep[3] = lambda * pre;
		burst(ep, ca2);
		mix(e, ep);
		miss += compound_tail_plus(e[3], e, own[0], own[1], tmax * n) / CAP_QUANTILES;
	}
	return miss;
}

/* The fraction of requests whose TPOT misses TMAX on a decode-only replica
 * of iteration time T and B sequences in flight.  A request's KV arrives
 * from a prefill replica with its first token already out (the simulator's
 * TTFT ends there); it waits for the running iteration to end (a residual
 * uniform on [0, T] while the replica is busy, which it is unless none of
 * the B sequences is in flight: 1 - e^-B), then its n = o - 1 tokens take n
 * iterations and the last reaches the client one iteration later (streamed
 * while the next runs).  So TPOT = (R + T + n T') / n, T' the mean of its
 * steps (batch_share, BL): up to 3 T for a two-token answer, T' for long
 * ones. */
static double kv_arrival_misses(const hx_workload *w, const cap_lens *lens,
				const batch_load *bl, double B, double t, double tmax)
{
	double busy = 1 - exp(-B), miss = 0;
	double ca2 = w->arrival == HX_ARRIVAL_GAMMA ? w->cv * w->cv : 1;

	for (int i = 0; i < CAP_QUANTILES; i++) {
		double n = output_steps(w, i), el[4], own[2];
		if (n < 1)
			continue;
		/* its n steps share the batch (batch_share); then the
		 * residual R and the iteration that streams the last token */
		batch_share(lens, bl, i, n, el, own);
		burst(el, ca2);
		own[0] += t + busy * t / 2;
		own[1] += busy * t * t / 3 - busy * busy * t * t / 4;
		miss += compound_tail_plus(el[3], el, own[0], own[1], n * tmax) / CAP_QUANTILES;
	}
	return miss;
}

/* The decode batch's mean context for prompts of PROMPT tokens and
 * outputs of moments OM: a sequence stays in the batch for its output's
 * steps, so long outputs are there more often than their share of
 * requests (length-biased): the prompt, then on average E[O^2] / 2E[O] of
 * its output, not E[O] / 2. */
static double decode_ctx(double prompt, const double *om)
{
	return prompt + om[2] / (2 * fmax(om[1], 1e-9));
}

double hx_cost_decode_ctx(const hx_workload *w)
{
	double om[4];

	dist_moments(&w->output, om);
	return decode_ctx(hx_dist_mean(&w->prompt), om);
}

/* The KV cache the sequences in flight hold, the capacity rule's test of
 * it: the mean plus two standard deviations of an M/G/inf population of N
 * requests (Poisson), each holding its prompt (mean PROMPT, moments PM)
 * and the part of its output made so far (output moments OM). */
static double kv_occupancy(const double *pm, const double *om, double prompt, double n)
{
	double mean = n * (prompt * om[1] + om[2] / 2);
	double second = n * (om[1] * pm[2] + om[2] * pm[1] + om[3] / 4);
	return mean + 2 * sqrt(second);
}

double hx_cost_decode_kv_need(const hx_cost_lens *l, double batch)
{
	/* B = L * t * E[O] of the L * t requests are decoding */
	return kv_occupancy(l->pm, l->om, l->pm[1], batch / fmax(l->om[1], 1e-9));
}

/* The requests that arrive at rate LAMBDA in the first D - LEFT seconds
 * of a block whose length D is exponential of mean MU, and so miss: L MU
 * e^(-LEFT / MU). */
static double behind(double lambda, double mu, double left)
{
	return mu > 0 ? lambda * mu * exp(-fmax(left, 0) / mu) : 0;
}

/* The fraction of requests that miss for want of KV cache.  The engine
 * admits a prompt by its first chunk and allocates the rest as it goes, so
 * when the sequences in flight outgrow the cache the latest admitted is
 * preempted and recomputes from the start; and it serves its waiting queue
 * in order, so a request whose prompt does not fit beside the sequences in
 * flight holds up every request behind it until enough of those finish.
 * The sequences in flight are an M/G/inf population of M = L * (TTFT +
 * decode time) requests (Poisson), each holding its prompt and output, SM
 * their moments; a request of prompt quantile i and the mean output misses
 * when the others hold more than the cache leaves it, and blocks the queue.
 * The block lasts until the first of the N decoding holders ends, N the
 * decode batch B given at least one (B / (1 - e^-B)), each with its
 * residual output (mean E[O^2] / (2 E[O]) tokens, taken as exponential, so
 * the first ends after 1 / N of it), at a token an iteration: one of T_DEC
 * when the room left is less than the prompt's first chunk C (the prompt
 * waits), but when it holds a first chunk the prompt is admitted, computes
 * K = floor(room / C) whole chunks (T_FULL each, room taken midway between
 * C and the prompt), outgrows the cache and is preempted, over and over,
 * so the holders' tokens then take (K T_FULL + T_DEC) / (K + 1) each.  The
 * requests that arrive in the first D - LEFT seconds of a block of length
 * D miss too (LEFT the TTFT a request has beyond its own prefill): L MU
 * e^(-LEFT / MU) of them a block, MU its mean. */
static double kv_overflow_misses(const cap_lens *lens, double m, double kv_tokens,
				 double lambda, double c, double t_dec, double t_full,
				 double left, double batch)
{
	const double *pm = lens->pm, *om = lens->om;
	/* a sequence in flight holds its prompt and the part of its output
	 * made so far: uniform over its output, which is length-biased */
	double o1 = om[2] / (2 * fmax(om[1], 1e-9)), o2 = om[3] / (3 * fmax(om[1], 1e-9));
	double sm[4] = {1, pm[1] + o1, pm[2] + 2 * pm[1] * o1 + o2, 0}, miss = 0;
	double p_room = compound_tail(m, sm, kv_tokens - c); /* room < C */
	double holders = batch > 1e-9 ? batch / -expm1(-batch) : 1;

	for (int i = 0; i < CAP_QUANTILES; i++) {
		double x = lens->pq[i], pb = compound_tail(m, sm, kv_tokens - x - om[1]);
		/* the block with room for a first chunk: room in [C, x + E[O]) */
		double pt = x > c ? fmax(pb - p_room, 0) : 0, pw = pb - pt;
		double k = fmax(floor((c + x) / 2 / fmax(c, 1)), 1);
		double mu_w = o1 * t_dec / holders;
		double mu_t = o1 * (k * t_full + t_dec) / (k + 1) / holders;
		miss +=
		    (pb + pw * behind(lambda, mu_w, left) + pt * behind(lambda, mu_t, left)) /
		    CAP_QUANTILES;
	}
	return miss;
}

/* The stall S of the iteration that streams a request's first token out,
 * beyond a decode-only iteration: that iteration carries the first chunks
 * of the prompts that arrived while the request's own chunks ran (a
 * Poisson count K).  K = 1: the stall of a random prompt's first chunk, one
 * of CAP_QUANTILES (sorted); K = 2 .. STALL_K: one at each quantile and the
 * others at the mean; more, or past it: a whole chunk of the token budget,
 * MAX.  For the TTFT tail, each row also keeps A[k][j] = sum over i <= j of
 * e^((s[k][i] - s[k][j]) / SCALE). */
#define STALL_K 4
typedef struct stall_tab {
	double s[STALL_K][CAP_QUANTILES], a[STALL_K][CAP_QUANTILES];
	double max, scale, u;
} stall_tab;

static void stall_tab_of(const prompt_steps *ps, double stall_max, double u, double scale,
			 stall_tab *tb)
{
	double st[CAP_QUANTILES], mean = 0;

	for (int j = 0; j < CAP_QUANTILES; j++) {
		double v = ps->stall[j];
		int i = j;
		for (; i > 0 && st[i - 1] > v; i--) /* insertion sort */
			st[i] = st[i - 1];
		st[i] = v;
		mean += v / CAP_QUANTILES;
	}
	tb->max = stall_max;
	tb->scale = fmax(scale, 1e-12);
	tb->u = u;
	for (int k = 0; k < STALL_K; k++)
		for (int j = 0; j < CAP_QUANTILES; j++) {
			tb->s[k][j] = fmin(st[j] + k * mean, stall_max);
			tb->a[k][j] =
			    j ? tb->a[k][j - 1] *
					exp((tb->s[k][j - 1] - tb->s[k][j]) / tb->scale) +
				    1
			      : 1;
		}
}

/* P(W + S > L): W the wait for prefill room (0 with probability U, else
 * exponential of mean SCALE), S the streaming iteration's stall (TB) after
 * a request's own chunks ran for D seconds, at rate LAMBDA. */
static double wait_stall_tail(const stall_tab *tb, double lambda, double d, double L)
{
	double m = lambda * d, pk = exp(-m), rest = 1 - pk, tail;
#define WAIT_TAIL(x) ((x) < 0 ? 1 : tb->u * exp(-(x) / tb->scale))

	if (L < 0)
		return 1;
	tail = pk * WAIT_TAIL(L);
	for (int k = 0; k < STALL_K; k++) {
		/* the stalls up to L leave the wait L - s; those past it miss */
		const double *s = tb->s[k];
		int j = CAP_QUANTILES;
		double sk;
		while (j > 0 && s[j - 1] > L)
			j--;
		sk = CAP_QUANTILES - j;
		if (j > 0)
			sk += tb->u * exp((s[j - 1] - L) / tb->scale) * tb->a[k][j - 1];
		pk *= m / (k + 1);
		rest -= pk;
		tail += pk * sk / CAP_QUANTILES;
	}
	return fmin(tail + fmax(rest, 0) * WAIT_TAIL(L - tb->max), 1);
#undef WAIT_TAIL
}

/* A prefill-only replica's service per prompt under DP attention (DP
 * ranks): its ranks step together, a step costing its largest prompt's
 * chunks of K tokens (context CK) at the busiest rank (dp_step_stall) and
 * admitting the prompts that arrived while the one before ran, which
 * share it: KK, from K0, the fixed point of prompts_per_iter at LAMBDA
 * over the step (16 passes at most; once KK repeats, every later pass
 * would give it again). */
static double dp_prefill_service(const hx_replica *r, const hx_workload *w, double lambda,
				 double ctx, double k0, double k, double ck, double P, double c,
				 double dp)
{
	double kk = k0, step = dp_step_stall(r, w, 0, ctx, kk, k, ck, c, 0);

	for (int i = 0; i < 16; i++) {
		double next = prompts_per_iter(lambda, step, P, c, (int)dp);
		if (next == kk)
			break;
		kk = next;
		step = dp_step_stall(r, w, 0, ctx, kk, k, ck, c, 0);
	}
	return step / kk;
}

/* The service per prompt of the M/G/1 queue in which prompts wait for
 * prefill: a prompt's own compute, its tokens at the marginal time a
 * prompt token adds to an iteration of the decode batch B at context CTX
 * (not its share of a mean iteration, which spreads each prompt thinly
 * over many steps and hides the queue).  A prompt arrives whole and the
 * engine computes its tokens (P, H cached) in as few chunks as the rank's
 * budget C allows.  A prefill-only replica under DP attention steps its
 * ranks together (dp_prefill_service). */
static double prompt_service(const hx_replica *r, const hx_workload *w, int phase,
			     double lambda, double B, double ctx, const prompt_steps *ps,
			     double P, double H, double c, double dp)
{
	double k = fmax(1, fmin(P, c)), ch, tk;

	if (phase == HX_SERVE_PREFILL && dp > 1)
		return dp_prefill_service(r, w, lambda, ctx, ps->k, k, H + k / 2, P, c, dp);
	tk = chunk_iter(r, B, ctx, ps->k, k, H + k / 2, k, k, H + k / 2, &ch);
	return P * fmax(tk - (B > 0 ? ps->t_dec : 0), 0) / (k * ps->k);
}

static void cap_check(const hx_replica *r, const hx_workload *w, const cap_lens *lens,
		      int phase, double kv_tokens, double lambda, cap_eval *ev)
{
	const double *pm = lens->pm, *om = lens->om;
	double P = hx_dist_mean(&w->prompt), O = hx_dist_mean(&w->output);
	double q = w->slo.percentile / 100, Pq = hx_dist_quantile(&w->prompt, q);
	/* Each DP rank of an EP replica is an engine with its own budget. */
	double dp = hx_replica_dp(r);
	double budget = w->serving.token_budget * dp, H = hx_prefix_cached(w, P);
	double ovh = request_overhead_s(r);
	/* A prefill-only replica has no TPOT to keep: its iterations may take
	 * up to the TTFT SLO. */
	double tmax = (phase == HX_SERVE_PREFILL ? w->slo.ttft_ms : w->slo.tpot_ms) * 1e-3;
	double allow = 1 - w->slo.attainment, lo = 0, hi = tmax, B, p, t, c, ctx;
	double ca2 = w->arrival == HX_ARRIVAL_GAMMA ? w->cv * w->cv : 1, u, service, scale;
	double miss_tpot = 0, miss_ttft = 0, miss_kv = 0, pre = 0, own_mean = 0;
	prompt_steps ps;

	ev->ok = 0;
	ev->ttft = INFINITY;
	ev->t = INFINITY;
	P -= H; /* from here on, P is the prompt tokens computed */
	ctx = decode_ctx(P + H, om);
	if (iter_at(r, w, phase, lambda, P, H, O, ctx, tmax) > tmax) {
		ev->binding = phase == HX_SERVE_PREFILL ? "ttft" : "tpot";
		return;
	}
	for (int i = 0; i < 60; i++) {
		double mid = (lo + hi) / 2;
		if (iter_at(r, w, phase, lambda, P, H, O, ctx, mid) > mid)
			lo = mid;
		else
			hi = mid;
	}
	t = ev->t = hi;
	B = ev->batch = phase == HX_SERVE_PREFILL ? 0 : lambda * O * t;
	p = phase == HX_SERVE_DECODE ? 0 : lambda * P * t;
	if (B + p > budget) {
		ev->binding = "budget";
		return;
	}
	if (B > w->serving.max_seqs * dp) {
		ev->binding = "batch";
		return;
	}
	{
		/* Occupancy of the KV cache (a decode-only replica's KV
		 * arrives whole). */
		if (phase == HX_SERVE_DECODE)
			ev->ttft = 0;
		if (phase != HX_SERVE_PREFILL &&
		    kv_occupancy(pm, om, P + H, lambda * t) > kv_tokens) {
			ev->binding = "kv";
			return;
		}
	}
	if (phase == HX_SERVE_DECODE) {
		/* No prompt stalls the decode iterations, and TTFT is the
		 * prefill side's; but the batch a request shares its steps
		 * with varies, and short outputs pay for joining a running
		 * batch. */
		batch_load bl;
		batch_load_of(r, lens, lambda, t, B, ctx, dp, t, &bl);
		if (kv_arrival_misses(w, lens, &bl, B, t, tmax) > allow) {
			ev->binding = "tpot";
			return;
		}
		ev->ok = 1;
		return;
	}
	c = fmax((budget - B) / dp, 1); /* a prompt is one rank's */
	prompt_steps_at(r, w, lens, B, ctx, c, prompts_per_iter(lambda, t, P, c, (int)dp), P, H,
			Pq, &ps);
	/* The prompts queue for prefill as an M/G/1 server (prompt_service). */
	service = prompt_service(r, w, phase, lambda, B, ctx, &ps, P, H, c, dp);
	u = lambda * service;
	scale = (ca2 + hx_dist_cv2(&w->prompt)) / 2 * service / fmax(1 - u, 1e-9);
	if (u >= 1) {
		ev->binding = "ttft";
		return;
	}
	if (phase == HX_SERVE_BOTH) {
		/* the mean wait for the first token: queue, then own chunks */
		pre = u * scale;
		for (int i = 0; i < CAP_QUANTILES; i++) {
			double own = own_prefill(&ps, i, t) / CAP_QUANTILES;
			pre += own;
			own_mean += own;
		}
		batch_load bl;
		batch_load_of(r, lens, lambda, t, B, ctx, dp, ps.t_dec, &bl);
		miss_tpot = tpot_misses(w, lens, &bl, lambda, pre, tmax, &ps);
	}
	if (miss_tpot > allow) {
		ev->binding = "tpot";
		return;
	}
	/* TTFT misses: waiting for prefill room (the queue above), then the
	 * prompt's chunks, then the iteration that streams the first token
	 * out, which carries the prompts that arrived meanwhile (stall_tab). */
	stall_tab tb;
	double t_full = 0;
	if (phase == HX_SERVE_BOTH) {
		double ch;
		t_full = chunk_iter(r, B, ctx, 1, 0, 0, c, c, H + c / 2, &ch);
		stall_tab_of(&ps, fmax(t_full - ps.t_dec, 0), u, scale, &tb);
	}
	for (int i = 0; i <= CAP_QUANTILES; i++) {
		/* The last point is the percentile prompt, for the report.  The
		 * first token reaches the client an iteration after the step
		 * that computes it (the engine streams it out while it runs the
		 * next). */
		double own = own_prefill(&ps, i, t);
		double left = w->slo.ttft_ms * 1e-3 - ovh - t - own;
		if (i == CAP_QUANTILES) {
			double wq = u > 1 - q ? scale * log(u / (1 - q)) : 0;
			ev->ttft = ovh + t + wq + own;
			break;
		}
		if (phase == HX_SERVE_BOTH) {
			/* the streaming iteration: a decode-only one and its
			 * stall, in place of the mean iteration T */
			left += t - ps.t_dec;
			miss_ttft += wait_stall_tail(&tb, lambda, own, left) / CAP_QUANTILES;
		} else {
			miss_ttft += (left < 0 ? 1 : u * exp(-left / fmax(scale, 1e-12))) /
				     CAP_QUANTILES;
		}
	}
	if (phase == HX_SERVE_BOTH)
		miss_kv = kv_overflow_misses(lens, lambda * (pre + om[1] * t), kv_tokens,
					     lambda, c, ps.t_dec, t_full,
					     w->slo.ttft_ms * 1e-3 - ovh - t - own_mean, B);
	if (miss_tpot + miss_ttft + miss_kv > allow) {
		ev->binding = miss_kv > fmax(miss_ttft, miss_tpot) ? "kv"
			      : miss_ttft > miss_tpot              ? "ttft"
								   : "tpot";
		return;
	}
	ev->ok = 1;
}

void hx_cost_at_rate(const hx_replica *r, const hx_workload *w, double lambda, hx_capacity *out)
{
	hx_cost_at_rate_phase(r, w, HX_SERVE_BOTH, lambda, out);
}

void hx_cost_lens_of(const hx_workload *w, hx_cost_lens *l)
{
	cap_lens_of(w, l);
}

void hx_cost_at_rate_phase(const hx_replica *r, const hx_workload *w, int phase, double lambda,
			   hx_capacity *out)
{
	hx_cost_at_rate_lens(r, w, NULL, phase, lambda, out);
}

void hx_cost_at_rate_lens(const hx_replica *r, const hx_workload *w, const hx_cost_lens *l,
			  int phase, double lambda, hx_capacity *out)
{
	hx_memory mem;
	cap_eval ev;
	cap_lens lens;

	memset(out, 0, sizeof(*out));
	hx_cost_memory(r, w->serving.mem_util, &mem);
	if (!mem.fits) {
		out->binding = "memory";
		return;
	}
	if (l)
		lens = *l;
	else
		cap_lens_of(w, &lens);
	cap_check(r, w, &lens, phase, mem.kv_tokens, lambda, &ev);
	out->rps = ev.ok ? lambda : 0;
	out->binding = ev.ok ? NULL : ev.binding;
	out->tokens_per_s = out->rps * hx_dist_mean(&w->output);
	out->batch = ev.batch;
	out->tpot_ms = ev.t * 1e3;
	out->ttft_ms = ev.ttft * 1e3;
}

int hx_cost_capacity(const hx_replica *r, const hx_workload *w, hx_capacity *out)
{
	return hx_cost_capacity_phase(r, w, HX_SERVE_BOTH, out);
}

int hx_cost_capacity_phase(const hx_replica *r, const hx_workload *w, int phase,
			   hx_capacity *out)
{
	hx_memory mem;
	cap_eval ev, best = {0};
	cap_lens lens;
	double lo = 0, hi = 0.01, P = hx_dist_mean(&w->prompt), O = hx_dist_mean(&w->output);
	int i;

	memset(out, 0, sizeof(*out));
	hx_cost_memory(r, w->serving.mem_util, &mem);
	out->max_batch =
	    fmin(floor(mem.kv_tokens / (P + O)), w->serving.max_seqs * hx_replica_dp(r));
	if (!mem.fits ||
	    mem.kv_tokens < hx_dist_quantile(&w->prompt, w->slo.percentile / 100) +
				(phase == HX_SERVE_PREFILL
				     ? 0
				     : hx_dist_quantile(&w->output, w->slo.percentile / 100))) {
		out->binding = "memory";
		return 0;
	}
	/* Does even a trickle meet the SLO? */
	cap_lens_of(w, &lens);
	cap_check(r, w, &lens, phase, mem.kv_tokens, 1e-9, &ev);
	if (!ev.ok) {
		out->binding = ev.binding;
		out->tpot_ms = ev.t * 1e3;
		out->ttft_ms = ev.ttft * 1e3;
		return 0;
	}
	best = ev;
	for (i = 0; i < 60; i++) {
		cap_check(r, w, &lens, phase, mem.kv_tokens, hi, &ev);
		if (!ev.ok)
			break;
		best = ev;
		lo = hi;
		hi *= 2;
	}
	for (i = 0; i < 50 && hi - lo > 1e-6 * hi; i++) {
		double mid = (lo + hi) / 2;
		cap_check(r, w, &lens, phase, mem.kv_tokens, mid, &ev);
		if (ev.ok) {
			lo = mid;
			best = ev;
		} else {
			hi = mid;
			out->binding = ev.binding;
		}
	}
	if (!out->binding) {
		cap_check(r, w, &lens, phase, mem.kv_tokens, hi, &ev);
		out->binding = ev.binding ? ev.binding : "tpot";
	}
	out->rps = lo;
	out->tokens_per_s = lo * O;
	out->batch = best.batch;
	out->tpot_ms = best.t * 1e3;
	out->ttft_ms = best.ttft * 1e3;
	return 0;
}

/* ---- attention/FFN disaggregation (AFD, issue 22) ----------------------- */

/*
 * An AFD decode group (hx_afd) runs each layer in two halves on two sets of
 * instances, as MegaScale-Infer (Zhu et al., "MegaScale-Infer: Serving
 * Mixture-of-Experts at Scale with Disaggregated Expert Parallelism",
 * arXiv:2504.02263, 2025, §4) and Step-3's attention-FFN disaggregation do:
 *   - attention side, per instance (tA GPUs, TP): its B / a sequences; per
 *     layer the attention GEMMs, the attention kernel over their KV cache
 *     (KV bytes read and FLOPs, attention_s), the input norm, rotary (and
 *     QK norm), one residual add and one all-reduce; the output head at the
 *     end of the step;
 *   - FFN side, per instance (tF GPUs, TP): a dense model's MLP for B / f
 *     of the tokens; a MoE model's E / f routed experts for the B k / f
 *     token-expert pairs routed to them (a grouped GEMM reading the active
 *     experts: E / f * (1 - (1 - k/E)^B') for B' tokens), its router, shared
 *     experts and dense MLPs for B / f tokens; the post-attention norm, the
 *     activation, one residual add, one all-reduce;
 *   - exchange, per layer each way: the hidden state of every token at 16
 *     bits (hx_cost_act_bytes_per_token), k copies on a MoE layer (each
 *     token goes to each of its k experts: MegaScale-Infer's M2N), so
 *     B * hidden * 2 * k bytes; on the link an attention instance sends its
 *     share, an FFN instance receives its share, and one way takes the
 *     link's latency plus the busier end's bytes over its bandwidth.
 * With m micro-batches of B / m sequences in flight (ping-pong), per layer
 * l a micro-batch takes T_a (attention), T_c (to the FFN side), T_f (FFN),
 * T_c (back): cycle_l = T_a + T_f + 2 T_c; the four resources (attention
 * GPUs, the link each way, FFN GPUs) each serve the m micro-batches in turn,
 * so a layer takes max(m * slowest_l, cycle_l) once the pipeline is full,
 * slowest_l = max(T_a, T_f, T_c).  The step (all L layers):
 *   pipeline = cycle_0 + sum_{l=1}^{L-1} max(m slowest_l, cycle_l)
 *              + (m - 1) slowest_{L-1}
 *   step     = pipeline + m * head(B / (a m)) + overhead
 * which for m >= 2, a balanced pipeline and m slowest >= cycle is
 * MegaScale-Infer's (T_a + T_e + 2 T_c) + T_f (m L - 1) (§4.2, T_f there
 * max(T_a, T_e)), and for m = 1 is L cycles, nothing overlapped.  The
 * overhead is the attention GPU's per-step host time (iter_overhead_ms, and
 * seq_overhead_us for each of an instance's B / a sequences): the attention
 * instances schedule.  Memory: the attention side holds the attention
 * weights, norms, embedding and head and its sequences' KV cache; the FFN
 * side the MLP or expert weights (routed experts split f ways).
 */

int hx_afd_check(const hx_afd *g, hx_err *err)
{
	const hx_arch *a = &g->model->a;
	int moe = a->experts > 1, dense = !moe || a->first_dense_layers > 0;

	if (g->attn_n < 1 || g->attn_tp < 1 || g->ffn_n < 1 || g->ffn_tp < 1 ||
	    g->micro_batches < 1)
		return hx_errf(err, HX_EINPUT, "an AFD group needs positive sizes");
	if (g->link.bw_gbps <= 0 || g->link.latency_ms < 0)
		return hx_errf(err, HX_EINPUT,
			       "an AFD group needs a link of positive bandwidth");
	if (a->heads % g->attn_tp)
		return hx_errf(
		    err, HX_EINPUT,
		    "attention tensor parallel degree %d must divide the %d attention "
		    "heads of %s",
		    g->attn_tp, a->heads, g->model->name);
	if (dense && a->intermediate % g->ffn_tp)
		return hx_errf(
		    err, HX_EINPUT,
		    "FFN tensor parallel degree %d must divide the intermediate size "
		    "%d of %s",
		    g->ffn_tp, a->intermediate, g->model->name);
	if (moe && a->moe_intermediate % g->ffn_tp)
		return hx_errf(err, HX_EINPUT,
			       "FFN tensor parallel degree %d must divide the expert "
			       "intermediate size %d of %s",
			       g->ffn_tp, a->moe_intermediate, g->model->name);
	if (moe && a->experts % g->ffn_n)
		return hx_errf(err, HX_EINPUT,
			       "%d FFN instances must divide the %d experts of %s", g->ffn_n,
			       a->experts, g->model->name);
	return 0;
}

/* One attention instance's half of layer LAYER for TOKENS decoding
 * sequences at context CTX (R: a one-stage replica on the attention GPUs). */
static double afd_attn_s(const hx_replica *r, int layer, double tokens, double ctx)
{
	const hx_arch *a = &r->model->a;
	const hx_stage *s = &r->stage[0];
	const hx_gpu *g = s->gpu;
	double fl = floor_s(g, tokens), h = a->hidden, t = 0;
	double qkv = ((double)a->heads / s->tp + kv_heads_gpu(a, s->tp)) * a->head_dim;
	hx_batch b = {0};
	gemm gs[16];
	int n = attn_gemms_n(a);

	layer_gemms(a, s->tp, layer, tokens, gs);
	for (int i = 0; i < n; i++)
		t += gemm_s(g, r->wdt, &gs[i], fl);
	t += elementwise_s(g, tokens * h * 2 * 2, fl);   /* input norm */
	t += elementwise_s(g, tokens * qkv * 2 * 2, fl); /* rotary */
	if (a->qk_norm)
		t += elementwise_s(g, tokens * qkv * 2 * 2, fl);
	t += elementwise_s(g, tokens * h * 2 * 3, fl); /* residual add */
	hx_batch_add_decode(&b, tokens, ctx);
	t += attention_s(r, s, &b);
	return t + allreduce_s(s, tokens * h * 2);
}

/* One FFN instance's half of layer LAYER for a micro-batch of MB tokens
 * (G's group; S: one stage on the FFN GPUs). */
static double afd_ffn_s(const hx_afd *g, const hx_stage *s, int layer, double mb)
{
	const hx_arch *a = &g->model->a;
	const hx_gpu *gpu = g->ffn_gpu;
	double share = mb / g->ffn_n, fl = floor_s(gpu, share), h = a->hidden, t = 0;
	double up = a->gated_mlp ? 3 : 2, rows = 0, act;
	gemm gs[16];
	int n = layer_gemms(a, g->ffn_tp, layer, share, gs);

	if (hx_layer_is_moe(a, layer)) {
		double E = a->experts, k = a->experts_per_tok, local = E / g->ffn_n;
		rows = mb * k / g->ffn_n;
		for (int i = attn_gemms_n(a); i < n; i++) {
			if (gs[i].resident > 1) { /* this instance's routed experts */
				gs[i].resident = local;
				gs[i].read = local * (1 - pow(1 - k / E, mb));
				gs[i].m = rows;
			}
		}
		/* the activation's elements: routed rows and shared experts */
		act = (rows + share * a->shared_experts) * a->moe_intermediate / g->ffn_tp;
	} else {
		act = share * a->intermediate / g->ffn_tp;
	}
	for (int i = attn_gemms_n(a); i < n; i++)
		t += gemm_s(gpu, g->wdt, &gs[i], fl);
	t += elementwise_s(gpu, share * h * 2 * 2, fl); /* post-attention norm */
	t += elementwise_s(gpu, act * up * 2, fl);      /* activation */
	t += elementwise_s(gpu, share * h * 2 * 3, fl); /* residual add */
	return t + allreduce_s(s, (rows > 0 ? rows : share) * h * 2);
}

void hx_cost_afd_memory(const hx_afd *g, double mem_util, hx_afd_step *out)
{
	const hx_arch *a = &g->model->a;
	double wb = hx_dtype_bytes(g->wdt), h = a->hidden, aw = 0, fw = 0, kvt;
	int na = attn_gemms_n(a);
	gemm gs[16];

	for (int l = 0; l < a->layers; l++) {
		int n = layer_gemms(a, g->attn_tp, l, 1, gs);
		for (int i = 0; i < na; i++)
			aw += gs[i].k * gs[i].n * wb;
		aw += 2.0 * h * (a->norm_layer ? 2 : 1) * 2; /* norms, 16-bit */
		n = layer_gemms(a, g->ffn_tp, l, 1, gs);
		for (int i = na; i < n; i++)
			fw += (gs[i].resident > 1 ? gs[i].resident / g->ffn_n : 1) * gs[i].k *
			      gs[i].n * wb;
	}
	aw += ((double)a->vocab / g->attn_tp + a->learned_pos) * h * wb; /* embedding */
	if (!a->tied_embeddings)
		aw += (double)a->vocab / g->attn_tp * h * wb; /* head */
	out->attn_capacity_b = g->attn_gpu->mem_gib * HX_GIB * mem_util;
	out->attn_weights_b = aw;
	out->attn_reserve_b = g->attn_gpu->runtime_reserve_gib * HX_GIB;
	out->attn_kv_b = out->attn_capacity_b - aw - out->attn_reserve_b;
	kvt = kv_token_layer_gpu(a, g->attn_tp, g->kvdt) * a->layers;
	out->attn_kv_tokens = out->attn_kv_b > 0 ? g->attn_n * floor(out->attn_kv_b / kvt) : 0;
	out->ffn_capacity_b = g->ffn_gpu->mem_gib * HX_GIB * mem_util;
	out->ffn_weights_b = fw;
	out->ffn_reserve_b = g->ffn_gpu->runtime_reserve_gib * HX_GIB;
}

/* X: layer LAYER (one of its kind) for micro-batches of MB sequences at
 * context CTX; RA the attention side as a one-stage replica, SF one FFN
 * instance as a stage. */
static void afd_layer(const hx_afd *g, const hx_replica *ra, const hx_stage *sf, int layer,
		      double mb, double ctx, hx_afd_layer *x)
{
	const hx_arch *a = &g->model->a;
	double act = hx_cost_act_bytes_per_token(g->model);
	double copies = hx_layer_is_moe(a, layer) ? a->experts_per_tok : 1;
	double send = mb / g->attn_n * act * copies, recv = mb / g->ffn_n * act * copies;

	x->attn_s = afd_attn_s(ra, layer, mb / g->attn_n, ctx);
	x->ffn_s = afd_ffn_s(g, sf, layer, mb);
	x->xfer_s =
	    g->link.latency_ms * 1e-3 + fmax(send, recv) / hx_gbps_bytes_s(g->link.bw_gbps);
	x->bytes_each_way = mb * g->micro_batches * act * copies;
	x->cycle_s = x->attn_s + x->ffn_s + 2 * x->xfer_s;
	x->slowest_s = fmax(x->attn_s, fmax(x->ffn_s, x->xfer_s));
}

/* A TP group S wider than a node (8 GPUs, as estimate takes them)
 * all-reduces over the network, at a GPU's share of its BW_GBPS link and
 * the latency estimate gives such a group. */
static void afd_wide_tp(hx_stage *s, double bw_gbps)
{
	if (s->tp > 8) {
		s->tp_bw_gb_s = bw_gbps / 8.0;
		s->tp_latency_us = 20;
	}
}

void hx_cost_afd(const hx_afd *g, double batch, double ctx, double mem_util, hx_afd_step *out)
{
	const hx_arch *a = &g->model->a;
	int m = g->micro_batches, last = a->layers - 1;
	double mb = batch / m;
	hx_replica ra;
	hx_stage sf = {0};
	hx_batch hb = {0};
	const hx_afd_layer *k0, *kl;

	memset(out, 0, sizeof(*out));
	memset(&ra, 0, sizeof(ra));
	ra.model = g->model;
	ra.wdt = g->wdt;
	ra.kvdt = g->kvdt;
	ra.nstages = 1;
	ra.stage[0].gpu = g->attn_gpu;
	ra.stage[0].tp = g->attn_tp;
	ra.stage[0].last = a->layers;
	sf.gpu = g->ffn_gpu;
	sf.tp = g->ffn_tp;
	sf.last = a->layers;
	afd_wide_tp(&ra.stage[0], g->link.bw_gbps);
	afd_wide_tp(&sf, g->link.bw_gbps);
	for (int l = 0; l < a->layers; l++) {
		hx_afd_layer *x = &out->kind[hx_layer_is_moe(a, l)];
		if (x->count++ == 0)
			afd_layer(g, &ra, &sf, l, mb, ctx, x);
	}
	k0 = &out->kind[hx_layer_is_moe(a, 0)];
	kl = &out->kind[hx_layer_is_moe(a, last)];
	out->pipeline_s = k0->cycle_s + (m - 1) * kl->slowest_s;
	for (int k = 0; k < 2; k++) {
		const hx_afd_layer *x = &out->kind[k];
		int n = x->count - (x == k0); /* the first layer is its cycle */
		out->pipeline_s += n * fmax(m * x->slowest_s, x->cycle_s);
	}
	hx_batch_add_decode(&hb, mb / g->attn_n, ctx);
	out->head_s = m * head_s(&ra, &ra.stage[0], &hb);
	out->overhead_s = g->attn_gpu->iter_overhead_ms * 1e-3 +
			  g->attn_gpu->seq_overhead_us * 1e-6 * batch / g->attn_n;
	out->step_s = out->pipeline_s + out->head_s + out->overhead_s;
	out->tokens_per_s = batch / out->step_s;
	hx_cost_afd_memory(g, mem_util, out);
}
