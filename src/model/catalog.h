/*
 * catalog: the GPU and model profiles every other module reads.  The
 * built-in catalog (profiles/gpus.json and models.json) is embedded in the binary; --catalog
 * DIR replaces it; a Hugging Face config.json path stands wherever a model name does.  Every
 * cost-model constant is a GPU profile field, so measured calibration (calib.h) overrides the
 * analytic defaults.
 */
#ifndef HX_CATALOG_H
#define HX_CATALOG_H

#include "base/util.h"

typedef enum hx_dtype { HX_DT_BF16, HX_DT_FP16, HX_DT_FP8, HX_DT_INT4, HX_DT_FP32 } hx_dtype;

/* Bytes per element of DT (int4: 0.5 plus group scales). */
double hx_dtype_bytes(hx_dtype dt);
const char *hx_dtype_name(hx_dtype dt);
/* Parse "bf16", "fp16", "fp8", "int4"; -1 when unknown. */
int hx_dtype_parse(const char *s);

typedef struct hx_gpu {
	char name[48];
	char vendor[16];
	char product[64];    /* Kubernetes node label value */
	char intra_link[16]; /* nvlink, pcie, xgmi */
	char price_date[16];
	char price_source[160];
	double tflops_bf16; /* dense, no sparsity */
	double tflops_fp8;  /* 0: no FP8 tensor cores */
	double mem_gib;
	double mem_bw_gb_s;
	double intra_bw_gb_s; /* all-reduce bus bandwidth inside a node */
	double intra_latency_us;
	double usd_per_hour;
	double tdp_w;
	double e_compute;       /* GEMM fraction of dense peak */
	double e_mem;           /* fraction of memory bandwidth when streaming */
	double e_attn;          /* attention kernel fraction of peak */
	double kernel_floor_us; /* shortest kernel */
	double allreduce_latency_us;
	double iter_overhead_ms; /* scheduling + sampling per serving iteration */
	double runtime_reserve_gib;
	double graph_floor_us;  /* shortest kernel inside a CUDA graph; 0: kernel_floor_us */
	double seq_overhead_us; /* host time per sequence of an iteration */
	double e_moe;           /* grouped expert GEMMs' share of e_compute; 0: 1 */
	double request_overhead_ms; /* per request: API server, tokenizer, first token out */
} hx_gpu;

typedef struct hx_arch {
	int layers, hidden, heads, kv_heads, head_dim, intermediate, vocab;
	int gated_mlp, tied_embeddings, attn_bias, mlp_bias, qk_norm;
	int norm_layer;  /* 1: LayerNorm (weight + bias), 0: RMSNorm */
	int learned_pos; /* learned position embeddings (OPT), 0: RoPE */
	int experts, experts_per_tok, moe_intermediate, shared_experts;
	int first_dense_layers;
	int kv_lora_rank, q_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim;
	int max_context;
	hx_dtype dtype; /* weights as published */
} hx_arch;

typedef struct hx_model {
	char name[64];
	char hf_repo[128];
	double published_params_b; /* 0 when unknown (a config.json) */
	double published_active_b;
	hx_arch a;
} hx_model;

typedef struct hx_catalog {
	hx_gpu *gpus;
	int ngpus;
	hx_model *models;
	int nmodels;
	char source[512]; /* "built-in" or the directory */
} hx_catalog;

/* Load the embedded catalog, or the gpus.json and models.json of DIR.
 * Release with hx_catalog_release. */
int hx_catalog_load(hx_catalog *cat, const char *dir, hx_err *err);
void hx_catalog_release(hx_catalog *cat);

/* Whether A and B are the same profile to the cost model: the same name
 * and every figure equal. */
int hx_gpu_same(const hx_gpu *a, const hx_gpu *b);

/* Borrowed pointer into CAT, or NULL. */
const hx_gpu *hx_catalog_gpu(const hx_catalog *cat, const char *name);
const hx_model *hx_catalog_model(const hx_catalog *cat, const char *name);

/* MODEL is a catalog name or the path of a Hugging Face config.json (any
 * argument containing '/' or ending in ".json").  Fills *OUT. */
int hx_model_resolve(const hx_catalog *cat, const char *model, hx_model *out, hx_err *err);
/* Read a Hugging Face config.json. */
int hx_model_from_hf(const char *path, hx_model *out, hx_err *err);

/* Parameter counts computed from the architecture. */
double hx_model_params(const hx_arch *a);        /* total */
double hx_model_active_params(const hx_arch *a); /* per token (MoE) */
/* Parameters of one transformer layer (index LAYER: dense or MoE). */
double hx_layer_params(const hx_arch *a, int layer);
int hx_layer_is_moe(const hx_arch *a, int layer);

/* Names of a GPU's numeric fields, for overrides and calibration. */
double *hx_gpu_field(hx_gpu *g, const char *key);
extern const char *const hx_gpu_num_keys[];

/* For loaders: parse a GPU spec at PTR — a full object, or one with "base"
 * (a catalog name) and overridden fields.  CAT may be NULL (no bases). */
struct json_t;
struct hx_jr;
int hx_gpu_parse(const struct hx_jr *r, const struct json_t *v, const char *ptr,
		 const hx_catalog *cat, hx_gpu *out);
/* Parse a model "arch" object (the keys of profiles/models.json). */
int hx_arch_parse(const struct hx_jr *r, const struct json_t *v, const char *ptr, hx_arch *out);
/* JSON of a GPU profile / an architecture, with the keys the parsers
 * read: new references. */
struct json_t *hx_gpu_to_json(const hx_gpu *g);
struct json_t *hx_arch_to_json(const hx_arch *a);
/* Check the architecture's internal consistency; 0 or HX_EINPUT. */
int hx_arch_check(const hx_arch *a, const char *what, hx_err *err);
#endif
