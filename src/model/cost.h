/*
 * cost: the one cost model (DESIGN §5).  Planners, the simulator and
 * `estimate` ask these functions for iteration latencies, memory fit, KV
 * capacity and a replica's capacity at the SLO; nobody re-derives a latency
 * inline.  Times are seconds, sizes bytes, rates per second.  Every constant
 * comes from a GPU profile field (catalog.h), so calibration overrides it.
 */
#ifndef HX_COST_H
#define HX_COST_H

#include "model/catalog.h"
#include "model/problem.h"

#define HX_MAX_STAGES 64

/* The KV cache every replica must keep beyond its weights, in tokens: one
 * long request.  Planners may ask for more (the workload's percentile
 * request); `check` holds every plan to at least this. */
#define HX_KV_RESERVE_TOKENS 4096

/* Iterations of at most this many tokens run as CUDA graphs (vLLM's
 * largest capture size by default); their kernels pay the GPU profile's
 * graph_floor_us rather than its launch floor. */
#define HX_GRAPH_MAX_TOKENS 512

/* The prefix cache's block, in tokens (vLLM's default KV block): a shared
 * prompt is reused in whole blocks. */
#define HX_PREFIX_BLOCK 16

/* Tokens of a LEN-token prompt that a prefix cache holds under workload
 * W's shared_prefix, in whole blocks and never the prompt's last token: the
 * whole prompt when its user's prompt is cached (users_per_group given),
 * else the group's shared prompt when that is cached, else 0; 0 without a
 * shared prefix.  The simulator asks per request. */
double hx_prefix_hit(const hx_workload *w, double len, int group_cached, int user_cached);
/* The same with every group and user cached: the steady state the
 * capacity rule assumes. */
double hx_prefix_cached(const hx_workload *w, double len);

/* One pipeline stage: TP GPUs of one type holding layers [first, last). */
typedef struct hx_stage {
	const hx_gpu *gpu;
	int tp;
	int first, last;
	double tp_bw_gb_s;    /* all-reduce bus bandwidth; 0: the GPU's intra-node */
	double tp_latency_us; /* all-reduce latency; 0: the GPU's */
	double next_bw_gbps;  /* link to the next stage (unused on the last) */
	double next_latency_ms;
	/* Expert parallelism and data-parallel attention (0 or 1: off, the
	 * stage is plain TP over its tp GPUs, priced as before).  With ep > 1
	 * the routed experts are split over all tp GPUs (ep == tp, SGLang's
	 * rule), tokens reach them by all-to-all dispatch and come back by
	 * combine; with dp > 1 each of dp ranks runs attention for its own
	 * sequences on tp / dp GPUs (KV not duplicated), and the dense MLPs,
	 * shared experts and LM head run data parallel at that same TP. */
	int ep;
	int dp;
	int redundant_experts; /* EPLB's extra expert copies, spread over the ep GPUs */
	int gpus_per_node;     /* of the stage, for the all-to-all; 0: all in one node */
	double nic_gbps;       /* each node's NIC (all-to-all across nodes); 0: 100 */
	double nic_latency_us; /* per all-to-all across nodes; 0: HX_EP_NIC_LATENCY_US */
	double imbalance;  /* busiest expert GPU's load over the mean; 0: HX_EPLB_IMBALANCE */
	int micro_batches; /* 2: two-batch overlap of all-to-all and compute; 0, 1: none */
} hx_stage;

typedef struct hx_replica {
	const hx_model *model;
	hx_dtype wdt, kvdt;
	int nstages;
	hx_stage stage[HX_MAX_STAGES];
} hx_replica;

/* The EP stage defaults (cost.c says where each comes from). */
#define HX_EPLB_IMBALANCE    1.06
#define HX_EP_NIC_LATENCY_US 20
#define HX_GROUPED_GEMM_ROWS 128

/* Whether stage S uses expert parallelism or data-parallel attention. */
int hx_stage_is_ep(const hx_stage *s);
/* Attention data-parallel ranks of S (1 when off). */
int hx_stage_dp(const hx_stage *s);
/* Attention data-parallel ranks of replica R: the fewest of its stages'
 * (1 but for EP stages).  Each rank is an engine with its own token
 * budget and sequences. */
int hx_replica_dp(const hx_replica *r);

/* Bytes one GPU of an EP stage sends per MoE layer to dispatch TOKENS
 * tokens of the stage's batch to their experts (DISPATCH) and to gather
 * them back (COMBINE): tokens / tp * hidden * experts_per_tok * bytes
 * (dispatch in FP8 when the weights are, combine in BF16). */
void hx_cost_a2a_bytes(const hx_replica *r, const hx_stage *s, double tokens,
		       double *dispatch_b, double *combine_b);
/* Seconds of one all-to-all of BYTES per GPU on stage S: the share that
 * stays in the node over NVLink, the rest ((nodes - 1) / nodes) through
 * the node's NIC, the two at once, each with its latency. */
double hx_cost_a2a_s(const hx_stage *s, double bytes);

/* Set R to PP stages of TP GPUs each, layers split as evenly as possible,
 * stage links BW_GBPS / LATENCY_MS.  Returns 0, or HX_EINPUT with ERR when
 * the shape is impossible (tp not dividing the heads, pp > layers). */
int hx_replica_uniform(hx_replica *r, const hx_model *m, const hx_gpu *g, int tp, int pp,
		       hx_dtype wdt, hx_dtype kvdt, double bw_gbps, double latency_ms,
		       hx_err *err);
/* Check a replica's shape (contiguous layer cover, tp dividing heads). */
int hx_replica_check(const hx_replica *r, hx_err *err);

/* The work of one serving iteration (all sequences, whole batch). */
typedef struct hx_batch {
	double prefill_tokens; /* new prompt tokens */
	double prefill_attn;   /* sum over prefilling sequences of n * (c + n/2) */
	double prefill_seqs;   /* sequences whose prompt ends here (emit a token) */
	double decode_seqs;
	double decode_ctx; /* sum of the decoding sequences' contexts */
} hx_batch;

/* Add SEQS prompts of TOKENS new tokens over CACHED tokens each. */
void hx_batch_add_prefill(hx_batch *b, double seqs, double tokens, double cached);
/* Add SEQS decoding sequences at CONTEXT tokens each. */
void hx_batch_add_decode(hx_batch *b, double seqs, double context);
/* B scaled by F (one micro-batch of a pipeline). */
hx_batch hx_batch_scale(const hx_batch *b, double f);

/* Time split of a layer (or of an iteration). */
typedef struct hx_breakdown {
	double linear_s;    /* GEMMs and the per-token ops around them */
	double attention_s; /* attention kernels */
	double comm_s;      /* tensor-parallel all-reduces */
	double overhead_s;  /* share of the per-iteration serving overhead */
	double a2a_s;       /* EP: dispatch and combine, before overlap (in comm_s
			     * only the part compute does not hide) */
} hx_breakdown;

/* Non-attention kernel time of one layer (index LAYER) for TOKENS tokens on
 * TP GPUs: what kernel profiles measure per layer. */
double hx_cost_linear(const hx_model *m, const hx_gpu *g, int tp, hx_dtype wdt, int layer,
		      double tokens);

/* Time of layer LAYER of stage S (of replica R) on batch B; BD (may be NULL)
 * gets the split, added to what it holds. */
double hx_cost_layer(const hx_replica *r, const hx_stage *s, int layer, const hx_batch *b,
		     hx_breakdown *bd);

typedef struct hx_iter {
	double latency_s;              /* through every stage + transfers + overhead */
	double cycle_s;                /* time per iteration with PP micro-batches */
	double bottleneck_s;           /* slowest stage */
	double stage_s[HX_MAX_STAGES]; /* compute per stage */
	double transfer_s;             /* stage-to-stage sends */
	double overhead_s;
	hx_breakdown sum; /* over all layers */
} hx_iter;

/* One iteration of batch B (whole replica, one micro-batch: PP stages run
 * it one after the other). */
void hx_cost_iter(const hx_replica *r, const hx_batch *b, hx_iter *out);
/* One iteration with the batch split into m micro-batches that overlap in
 * the pipeline, m = min(stages, sequences in the batch): cycle_s =
 * max(latency(b/m), m * bottleneck(b/m) + overhead).  Equals hx_cost_iter's
 * latency for one stage or one sequence. */
double hx_cost_cycle(const hx_replica *r, const hx_batch *b, hx_iter *out);

/* Memory, per GPU of each stage. */
typedef struct hx_mem_stage {
	double capacity_b; /* memory * utilization */
	double weights_b;
	double reserve_b;
	double kv_b;      /* what is left for the KV cache (< 0: short) */
	double kv_tokens; /* tokens of KV this stage can hold */
} hx_mem_stage;

typedef struct hx_memory {
	int fits;       /* weights + reserve fit on every GPU */
	double short_b; /* worst shortfall when not */
	int worst_stage;
	double kv_tokens; /* the replica's KV capacity: min over stages */
	double weights_b; /* whole replica */
	hx_mem_stage st[HX_MAX_STAGES];
} hx_memory;

void hx_cost_memory(const hx_replica *r, double mem_util, hx_memory *out);
/* KV bytes per token of the whole model (all layers, unsharded): what a
 * disaggregated replica sends per prompt token. */
double hx_kv_bytes_per_token(const hx_model *m, hx_dtype kvdt);
/* KV bytes per token per layer that one GPU of a TP group holds (KV heads
 * split by TP, replicated when TP exceeds them; an MLA latent unsplit). */
double hx_kv_bytes_token_layer_gpu(const hx_model *m, int tp, hx_dtype kvdt);
/* Weight bytes of the whole model at WDT. */
double hx_model_weight_bytes(const hx_model *m, hx_dtype wdt);
/* Seconds to load M's weights at type WDT over a node's LOAD_GBPS (its
 * load bandwidth; HX_DEFAULT_LOAD_GBPS when 0): a replica's start-up. */
double hx_weights_load_s(const hx_model *m, hx_dtype wdt, double load_gbps);
/* Seconds to move the KV of TOKENS prompt tokens over a link. */
/* Bytes of activations one token carries across a pipeline stage boundary
 * (hidden values at 16 bits). */
double hx_cost_act_bytes_per_token(const hx_model *m);

/* Dollars per million tokens (prompt + generated) at USD_PER_HOUR while
 * serving RPS requests/s of TOKENS_PER_REQ tokens each; 0 when RPS is not
 * positive.  Not rounded. */
double hx_usd_per_mtok(double usd_per_hour, double rps, double tokens_per_req);

double hx_cost_kv_transfer(const hx_model *m, hx_dtype kvdt, double tokens, double bw_gbps,
			   double latency_ms);

/* The decode batch's mean context (tokens a sequence attends over) under
 * W's lengths, as the capacity rule takes it: the mean prompt plus
 * E[O^2] / 2E[O] of the output (length-biased: long outputs stay in the
 * batch longer).  Planners that price a decode batch themselves use it. */
double hx_cost_decode_ctx(const hx_workload *w);
/* The KV tokens a decode-only batch of BATCH sequences needs by the
 * capacity rule's occupancy test: the mean plus two standard deviations of
 * what its sequences hold (prompt and output so far), their count Poisson
 * (M/G/inf); L: the workload's lengths (hx_cost_lens_of, below: worked
 * out once, since a search asks for many batches). */
struct hx_cost_lens;
double hx_cost_decode_kv_need(const struct hx_cost_lens *l, double batch);

/* Capacity of one replica at the workload's SLO (see cost.c for the rule). */
typedef struct hx_capacity {
	double rps;          /* highest sustainable request rate */
	double tokens_per_s; /* generated tokens/s at that rate */
	double batch;        /* decode batch at that rate */
	double tpot_ms;      /* iteration time at that rate */
	double ttft_ms;      /* percentile TTFT at that rate */
	double max_batch;    /* KV-limited batch (mean request) */
	const char *binding; /* tpot, ttft, kv, batch, budget or memory */
} hx_capacity;

int hx_cost_capacity(const hx_replica *r, const hx_workload *w, hx_capacity *out);

/* What a replica does: both phases (aggregated), or only prefill or only
 * decode (disaggregated; a decode replica receives whole KV caches). */
enum { HX_SERVE_BOTH, HX_SERVE_PREFILL, HX_SERVE_DECODE };
/* Capacity for one phase: a prefill replica is held to the TTFT SLO (its
 * requests' queueing and prompt iterations), a decode replica to the TPOT
 * SLO and its KV cache. */
int hx_cost_capacity_phase(const hx_replica *r, const hx_workload *w, int phase,
			   hx_capacity *out);

/* The operating point of a replica at request rate LAMBDA (the same rule):
 * OUT's rps is LAMBDA when sustainable, else 0 with binding set; tpot_ms,
 * ttft_ms and batch describe the steady state when one exists. */
void hx_cost_at_rate(const hx_replica *r, const hx_workload *w, double lambda,
		     hx_capacity *out);
/* The same for one phase (HX_SERVE_*, declared below). */
void hx_cost_at_rate_phase(const hx_replica *r, const hx_workload *w, int phase, double lambda,
			   hx_capacity *out);

/* What the capacity rule reads of a workload's lengths at every rate: the
 * moments of the prompt and output distributions, the prompt's
 * HX_COST_QUANTILES quantiles (hundreds of quantile lookups; a trace's are
 * scans) and, per output quantile, the sums over the other requests that
 * give the decode batch a request of that output shares its steps with
 * (rate-free: in steps).  Computed once, it serves every evaluation of
 * that workload. */
#define HX_COST_QUANTILES 48
typedef struct hx_cost_lens {
	double pm[4], om[4];
	double pq[HX_COST_QUANTILES];
	double share[HX_COST_QUANTILES][6];
} hx_cost_lens;
void hx_cost_lens_of(const hx_workload *w, hx_cost_lens *l);
/* hx_cost_at_rate_phase with W's lengths L from hx_cost_lens_of(W) (NULL:
 * computed here): the same result. */
void hx_cost_at_rate_lens(const hx_replica *r, const hx_workload *w, const hx_cost_lens *l,
			  int phase, double lambda, hx_capacity *out);

/* ---- attention/FFN disaggregation (AFD, issue 22) ----------------------- */

/* A decode group whose attention and FFN (or expert) layers run on
 * different instances: attn_n attention instances of attn_tp GPUs of type
 * attn_gpu each (attention, its projections, norms, embedding and head,
 * and the KV cache of its 1/attn_n of the batch), ffn_n FFN instances of
 * ffn_tp GPUs of type ffn_gpu each (a dense model's MLPs, replicated, each
 * for 1/ffn_n of the tokens; a MoE model's routed experts split ffn_n
 * ways, its router, shared experts and dense MLPs replicated), and
 * micro_batches micro-batches in flight between them (ping-pong).  Every
 * instance reaches the other side over LINK. */
typedef struct hx_afd {
	const hx_model *model;
	hx_dtype wdt, kvdt;
	const hx_gpu *attn_gpu, *ffn_gpu;
	int attn_n, attn_tp, ffn_n, ffn_tp;
	int micro_batches;
	hx_linkspec link;
} hx_afd;

/* One kind of layer (dense or MoE) of an AFD step, per micro-batch of
 * batch / micro_batches sequences. */
typedef struct hx_afd_layer {
	int count;             /* layers of this kind (0: none) */
	double attn_s;         /* one attention instance's share */
	double ffn_s;          /* one FFN instance's share */
	double xfer_s;         /* one way: link latency + the busier end's bytes */
	double bytes_each_way; /* the whole batch's activations, each way */
	double cycle_s;        /* attn + ffn + 2 xfer: a micro-batch's round trip */
	double slowest_s;      /* max(attn, ffn, xfer): the pipeline's bottleneck */
} hx_afd_layer;

typedef struct hx_afd_step {
	hx_afd_layer kind[2]; /* [0] dense layers, [1] MoE layers */
	double pipeline_s;    /* the layers, micro-batches overlapped */
	double head_s;        /* the output head, every micro-batch */
	double overhead_s;    /* the attention instance's per-step host time */
	double step_s, tokens_per_s;
	/* Memory per GPU of each side (bytes), the attention side's KV. */
	double attn_capacity_b, attn_weights_b, attn_reserve_b, attn_kv_b;
	double attn_kv_tokens; /* the whole group's (attn_n instances) */
	double ffn_capacity_b, ffn_weights_b, ffn_reserve_b;
} hx_afd_step;

/* Check G's shape: attn_tp dividing the heads, ffn_tp the FFN's
 * intermediate size, ffn_n the experts of a MoE model, sizes positive.
 * 0, or HX_EINPUT with ERR. */
int hx_afd_check(const hx_afd *g, hx_err *err);
/* Memory of G's two sides at MEM_UTIL (the *_b and attn_kv_tokens fields
 * of OUT; the rest untouched). */
void hx_cost_afd_memory(const hx_afd *g, double mem_util, hx_afd_step *out);
/* One decode step of G for BATCH sequences at mean context CTX (cost.c
 * gives the formula), and its memory at MEM_UTIL. */
void hx_cost_afd(const hx_afd *g, double batch, double ctx, double mem_util, hx_afd_step *out);

#endif
