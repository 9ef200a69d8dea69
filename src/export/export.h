/*
 * export: hands a plan to the systems that run it (DESIGN §9).  Each
 * target (export_<target>.c) turns a plan into files — launch commands,
 * Kubernetes manifests, KServe objects, a Graphviz picture — and never runs
 * anything.  Where a target cannot express the plan it refuses (HX_EINPUT,
 * saying what it cannot express) unless the options allow a lossy export,
 * which writes the closest form and lists what was lost.
 */
#ifndef HX_EXPORT_H
#define HX_EXPORT_H

#include "plan/plan.h"
#include "model/problem.h"
#include "base/util.h"

enum { HX_ENGINE_VLLM, HX_ENGINE_SGLANG };

typedef struct hx_export_opts {
	int engine;                /* HX_ENGINE_* */
	int format_sh;             /* launch: shell scripts (else JSON, one object per line) */
	int lossy;                 /* write the closest form instead of refusing */
	const hx_cluster *cluster; /* optional: node hosts and GPU details */
	const char *image;         /* k8s, kserve: the container image, or NULL (default) */
	const char *model_cache; /* k8s: a PersistentVolumeClaim for the model cache, or NULL */
	const char *checkpoint;  /* a pre-quantized repository for int4 weights, or NULL */
	const char *engine_version; /* --engine-version: the engine's release, or NULL (the
				       target's default, hx_export_engine_version) */
	const char
	    *gateway_url; /* llm-d: the Gateway's in-cluster URL, where the LiteLLM
			     router of a plan split over models sends requests, or NULL */
} hx_export_opts;

/* The engine releases whose flags the exports were checked against, the
 * defaults of --engine-version.  Pods (k8s, llm-d) run vLLM 0.11.0, the
 * release of the pinned image; launch writes for 0.11.1, the first vLLM that
 * runs a replica over several nodes without Ray (--nnodes, --node-rank,
 * --master-addr, --master-port: vLLM pull request 23691), and refuses such a
 * replica for an older one.  No flag hexplan writes differs between the
 * oldest releases accepted here and the defaults otherwise. */
#define HX_EXPORT_VLLM_VERSION        "0.11.0"
#define HX_EXPORT_VLLM_LAUNCH_VERSION "0.11.1"
#define HX_EXPORT_VLLM_MP_NODES       "0.11.1" /* first with --nnodes and --node-rank */
#define HX_EXPORT_VLLM_OLDEST         "0.10.1" /* the ROCm image's release */
#define HX_EXPORT_SGLANG_VERSION      "0.5.0"
#define HX_EXPORT_SGLANG_OLDEST       "0.5.0"

/* Expert parallelism (a stage's ep, dp_attention and redundant_experts),
 * as the engines take it.  Where each flag was checked:
 *   vLLM: vllm-project/vllm's docs/serving/data_parallel_deployment.md (at
 *   01e4fce) and expert_parallel_deployment.md (at 0170256), the
 *   project's own usage of its CLI: --enable-expert-parallel (EP over TP x
 *   DP), --data-parallel-size, --tensor-parallel-size (attention TP per DP
 *   rank), over several nodes --data-parallel-size-local,
 *   --data-parallel-address, --data-parallel-rpc-port, and on every node
 *   but the first --headless --data-parallel-start-rank; --enable-eplb with
 *   --eplb-config '{"num_redundant_experts":N}': EPLBConfig in
 *   vllm/config/parallel.py, in vLLM's API reference from 0.10.2 on
 *   (0.10.2, 0.11.2, 0.12.0), not in 0.10.1.1's, whose ParallelConfig
 *   field gives --num-redundant-experts.  The all-to-all: on one node the
 *   release's default; over several nodes of NVIDIA GPUs DeepEP's, as the
 *   cost model prices it (dispatch and combine at the NIC's rate),
 *   deepep_low_latency for decode groups, deepep_high_throughput for
 *   prefill and aggregated ones (ParallelConfig.all2all_backend in
 *   vllm/config/parallel.py, whose All2AllBackend lists both): the flag
 *   --all2all-backend from 0.11.1 on (vllm-project/vllm#26732, merged
 *   2025-10-13 after 0.11.0; the environment variable it replaced was
 *   removed by #33535), the variable VLLM_ALL2ALL_BACKEND before.  The
 *   image must carry DeepEP.
 *   SGLang: ServerArgs (python/sglang/srt/server_args.py) of the 0.5
 *   series: ep_size (--ep-size, alias --expert-parallel-size), dp_size,
 *   enable_dp_attention, enable_dp_lm_head, moe_dense_tp_size,
 *   moe_a2a_backend ("none" or "deepep"; MoeA2ABackend in
 *   python/sglang/srt/layers/moe/utils.py, which replaced
 *   --enable-deepep-moe), deepep_mode (auto, normal, low_latency),
 *   enable_eplb, ep_num_redundant_experts, nnodes, node_rank,
 *   dist_init_addr; sgl-project/sglang's server_args.py at 001067f still
 *   lists deepep among MOE_A2A_BACKEND_CHOICES.  Written: --tp-size (every
 *   GPU of the replica), --ep-size, --dp-size with --enable-dp-attention,
 *   --enable-dp-lm-head and, on a model with dense MLP layers,
 *   --moe-dense-tp-size 1 (the dense layers and the head data parallel, as
 *   the cost model runs them), --moe-a2a-backend deepep with --deepep-mode
 *   normal on prefill and low_latency on decode groups (auto on aggregated
 *   ones), --enable-eplb --ep-num-redundant-experts N. */
#define HX_EXPORT_VLLM_EPLB_CONFIG  "0.10.2" /* first with --eplb-config */
#define HX_EXPORT_VLLM_ALL2ALL_FLAG "0.11.1" /* first with --all2all-backend */
/* Two micro-batches (the cost model's overlap of the all-to-all with the
 * other micro-batch's compute, cost.c): vLLM's dual batch overlap,
 * --enable-dbo (ParallelConfig.enable_dbo; vllm-project/vllm#23693, and
 * docs/design/dbo.md of #26024, merged 2025-10-07: "pass in the
 * --enable-dbo argument ... in conjunction with --data-parallel-size N
 * where N is greater than 1 and --enable-expert-parallel"; its test
 * a test of DBO in vLLM's tree notes microbatching is rejected on the
 * allgather_reducescatter all-to-all), written where the export picks
 * DeepEP's all-to-all and DP is over 1, from 0.11.1 (the first release
 * after that doc; not checked in 0.11.0, so not written for it).
 * SGLang's two-batch overlap, --enable-two-batch-overlap (ServerArgs
 * enable_two_batch_overlap, in the 0.4 and 0.5 series; its DeepSeek-V3
 * large-scale EP recipe runs it with --enable-dp-attention and
 * --moe-a2a-backend deepep), written with DeepEP's all-to-all. */
#define HX_EXPORT_VLLM_DBO "0.11.1" /* first with --enable-dbo, as checked */
/* The images the k8s export runs unless --image names one: pinned to the
 * release whose flags the exports were checked against (--engine-version
 * VER picks vllm/vllm-openai:vVER on NVIDIA GPUs). */
#define HX_EXPORT_IMAGE_NVIDIA_REPO "vllm/vllm-openai"
#define HX_EXPORT_IMAGE_NVIDIA      HX_EXPORT_IMAGE_NVIDIA_REPO ":v" HX_EXPORT_VLLM_VERSION
#define HX_EXPORT_IMAGE_AMD         "rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909"

/* The LiteLLM release whose proxy config (model_list, litellm_params
 * model/api_base/weight, router_settings.routing_strategy simple-shuffle)
 * and health endpoints (/health/liveliness, /health/readiness) the
 * Kubernetes router of a multi-model plan was checked against, and its
 * image (the tag LiteLLM's Helm chart of that release runs). */
#define HX_EXPORT_LITELLM_VERSION "1.80.12"
#define HX_EXPORT_IMAGE_LITELLM   "ghcr.io/berriai/litellm:main-v" HX_EXPORT_LITELLM_VERSION

/* The NVIDIA Dynamo release whose DynamoGraphDeployment (nvidia.com/v1beta1)
 * and vLLM worker arguments the dynamo export was checked against, and its
 * vLLM runtime image, the default. */
#define HX_EXPORT_DYNAMO_VERSION "1.3.1"
#define HX_EXPORT_IMAGE_DYNAMO   "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1"

/* The llm-d router release (llm-d/llm-d-router: its endpoint picker, the
 * EndpointPickerConfig plugins and the P/D routing sidecar's flags) the
 * llm-d export was checked against, its images, and the Gateway API
 * Inference Extension release whose InferencePool
 * (inference.networking.k8s.io/v1) it writes. */
#define HX_EXPORT_LLMD_VERSION  "0.10.0"
#define HX_EXPORT_GIE_VERSION   "1.6.0"
#define HX_EXPORT_IMAGE_EPP     "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0"
#define HX_EXPORT_IMAGE_SIDECAR "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0"

typedef struct hx_export_file {
	char *name; /* a plain file name, no directory */
	char *text;
} hx_export_file;

typedef struct hx_export_out {
	hx_export_file *f;
	int n;
	hx_buf lost; /* one line per thing a lossy export could not express */
} hx_export_out;

/* Each target fills OUT (release with hx_export_release); returns 0, or
 * HX_EINPUT with ERR when the plan cannot be expressed (and !lossy). */
int hx_export_launch(const hx_plan *p, const hx_export_opts *o, hx_export_out *out,
		     hx_err *err);
int hx_export_k8s(const hx_plan *p, const hx_export_opts *o, hx_export_out *out, hx_err *err);
int hx_export_kserve(const hx_plan *p, const hx_export_opts *o, hx_export_out *out,
		     hx_err *err);
int hx_export_llmd(const hx_plan *p, const hx_export_opts *o, hx_export_out *out, hx_err *err);
int hx_export_dynamo(const hx_plan *p, const hx_export_opts *o, hx_export_out *out,
		     hx_err *err);
int hx_export_dot(const hx_plan *p, const hx_export_opts *o, hx_export_out *out, hx_err *err);

/* What a target reads from the options besides the plan and the cluster;
 * the command refuses an option its target's flags lack (a usage error). */
enum {
	HX_EXPORT_ENGINE = 1,      /* --engine: the engine its commands or pods run */
	HX_EXPORT_FORMAT = 2,      /* --format json|sh */
	HX_EXPORT_LOSSY = 4,       /* --lossy: the closest form instead of a refusal */
	HX_EXPORT_FRAGMENTS = 8,   /* it expresses a pipeline plan's layer fragments */
	HX_EXPORT_IMAGE = 16,      /* --image: the containers' image */
	HX_EXPORT_CACHE = 32,      /* --model-cache PVC */
	HX_EXPORT_CHECKPOINT = 64, /* --checkpoint REPO: int4 weights' repository */
	HX_EXPORT_VERSION = 128,   /* --engine-version VER: the engine release's flags */
	HX_EXPORT_GATEWAY = 256,   /* --gateway-url URL: the Gateway's in-cluster address */
	HX_EXPORT_EP = 512         /* it writes the engines' expert-parallel flags */
};

/* The targets, in the order usage and errors name them: the one list of
 * them (name, function, flags).  FIRST names the first, NEXT each other, so
 * that HX_EXPORT_TARGET_NAMES joins the names with '|' at compile time. */
#define HX_EXPORT_TARGETS(FIRST, NEXT)                                                         \
	FIRST("launch", hx_export_launch,                                                      \
	      HX_EXPORT_ENGINE | HX_EXPORT_FORMAT | HX_EXPORT_LOSSY | HX_EXPORT_CHECKPOINT |   \
		  HX_EXPORT_VERSION | HX_EXPORT_EP)                                            \
	NEXT("k8s", hx_export_k8s,                                                             \
	     HX_EXPORT_ENGINE | HX_EXPORT_LOSSY | HX_EXPORT_IMAGE | HX_EXPORT_CACHE |          \
		 HX_EXPORT_CHECKPOINT | HX_EXPORT_VERSION | HX_EXPORT_EP)                      \
	NEXT("kserve", hx_export_kserve,                                                       \
	     HX_EXPORT_ENGINE | HX_EXPORT_LOSSY | HX_EXPORT_IMAGE | HX_EXPORT_CHECKPOINT |     \
		 HX_EXPORT_GATEWAY)                                                            \
	NEXT("llm-d", hx_export_llmd,                                                          \
	     HX_EXPORT_LOSSY | HX_EXPORT_IMAGE | HX_EXPORT_CACHE | HX_EXPORT_CHECKPOINT |      \
		 HX_EXPORT_VERSION | HX_EXPORT_GATEWAY | HX_EXPORT_EP)                         \
	NEXT("dynamo", hx_export_dynamo,                                                       \
	     HX_EXPORT_LOSSY | HX_EXPORT_IMAGE | HX_EXPORT_CACHE | HX_EXPORT_CHECKPOINT)       \
	NEXT("dot", hx_export_dot, HX_EXPORT_FRAGMENTS)

#define HX_EXPORT_FIRST_NAME_(name, fn, flags) name
#define HX_EXPORT_NEXT_NAME_(name, fn, flags)  "|" name
/* "launch|k8s|kserve|llm-d|dynamo|dot": a string literal, for usage lines. */
#define HX_EXPORT_TARGET_NAMES HX_EXPORT_TARGETS(HX_EXPORT_FIRST_NAME_, HX_EXPORT_NEXT_NAME_)

typedef struct hx_export_target {
	const char *name; /* what --to names */
	int (*fn)(const hx_plan *p, const hx_export_opts *o, hx_export_out *out, hx_err *err);
	int flags; /* HX_EXPORT_* */
} hx_export_target;

/* HX_EXPORT_TARGETS as a table; ends with a NULL name. */
extern const hx_export_target hx_export_targets[];

/* The target named NAME (borrowed, static), or NULL. */
const hx_export_target *hx_export_target_find(const char *name);
/* The names of the targets whose flags include FLAG (0: all) as "a, b or c"
 * into OUT[LEN]. */
void hx_export_target_list(int flag, char *out, size_t len);

/* 0 when target T can express plan P's groups; else HX_EINPUT with ERR
 * naming PLAN_PATH (as the user gave it) and the first group whose layers are
 * a pipeline plan's fragment: no engine command, Deployment or
 * LLMInferenceService runs those, even lossily. */
int hx_export_check_fragments(const hx_plan *p, const hx_export_target *t,
			      const char *plan_path, hx_err *err);

/* 0 when plan P has no attention/FFN disaggregated group (an "afd"
 * group); else HX_EINPUT with ERR naming PLAN_PATH, the first such group
 * and the reason: no target writes an engine's attention/FFN
 * disaggregation (its FFN instances and the exchange between the sides),
 * and the plan without them would be another plan, so every target,
 * --lossy and dot included, refuses; the plan stays a sizing answer. */
int hx_export_check_afd(const hx_plan *p, const hx_export_target *t, const char *plan_path,
			hx_err *err);

/* 0 when target T can express plan P's expert-parallel stages (ep or
 * dp_attention); else HX_EINPUT with ERR naming PLAN_PATH and the first
 * such stage: a target without HX_EXPORT_EP writes no EP flags (dot draws
 * any plan), and no target writes them for a group of several pipeline
 * stages.  A tensor-parallel form would be another plan, so even a lossy
 * export refuses. */
int hx_export_check_ep(const hx_plan *p, const hx_export_target *t, const char *plan_path,
		       hx_err *err);

/* The expert-parallel shape of group G as the engines take it, from its
 * first stage (hx_export_check_ep has refused groups of several stages
 * with EP): 0 when it has none; else 1 and *E. */
typedef struct hx_export_ep {
	int world;     /* the stage's GPUs (its tp) */
	int ep;        /* expert-parallel size, 1 without EP (a dense model's DP) */
	int dp;        /* attention data-parallel ranks, 1 without */
	int atp;       /* attention TP: world / dp */
	int redundant; /* EPLB's redundant experts, 0 without */
} hx_export_ep;
int hx_export_ep_shape(const hx_plan_group *g, hx_export_ep *e);
/* vLLM's all-to-all backend for an expert-parallel replica over several
 * nodes in ROLE (export.h's flags): DeepEP's low-latency kernels for
 * decode, its high-throughput ones otherwise.  Static. */
const char *hx_export_vllm_all2all(hx_role role);

/* Add a file to OUT; TEXT is taken over (freed by hx_export_release). */
void hx_export_add(hx_export_out *out, const char *name, char *text);
void hx_export_release(hx_export_out *out);
/* Note something a lossy export could not express. */
void hx_export_lost(hx_export_out *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* S quoted for a POSIX shell (single quotes; a quote inside as '\''): a new
 * string.  Nothing in it is expanded or run by the shell. */
char *hx_shell_quote(const char *s);
/* S made a valid DNS-1123 label into OUT[N] (N >= 64): lower case letters,
 * digits and '-', starting and ending with a letter or digit, at most 63
 * characters; empty input gives "x". */
void hx_dns_label(char *out, size_t n, const char *s);
/* The address of node NODE: the cluster's "host" when given, else the name. */
const char *hx_export_host(const hx_export_opts *o, const char *node);
/* The cluster's "interface" of NODE, or NULL when it names none. */
const char *hx_export_iface(const hx_export_opts *o, const char *node);
/* The cluster's profile of NODE's GPU, else the plan's profile named GPU. */
const hx_gpu *hx_export_gpu(const hx_plan *p, const hx_export_opts *o, const char *node,
			    const char *gpu);

/* The engine flags for weights WDT and KV cache KVDT (HX_ENGINE_*): up to
 * four static strings into ARGS; returns how many.  int4 checkpoints carry
 * their own quantization config: no flag. */
int hx_export_precision_args(int engine, hx_dtype wdt, hx_dtype kvdt, const char *args[4]);

/* What the engines serve for model M: --checkpoint when the plan runs M
 * with int4 weights and one is given, else M's Hugging Face repository, else
 * its name (borrowed). */
const char *hx_export_repo(const hx_plan *p, const hx_export_opts *o, const hx_model *m,
			   hx_dtype wdt);
/* Group G runs int4 weights and no --checkpoint names a pre-quantized
 * repository: the message every target gives (its refusal, or its lossy
 * note) into MSG[N], and 1; else 0.  GN is the group's name as shown. */
int hx_export_int4_unmapped(const hx_plan *p, const hx_export_opts *o, const hx_plan_group *g,
			    const char *gn, char *msg, size_t n);

/* A release number as --engine-version takes it: 1 when V is N.N or N.N.N
 * (decimal, each part at most 6 digits), else 0. */
int hx_export_version_valid(const char *v);
/* <0, 0 or >0 as release A comes before, is or comes after B (both valid;
 * a missing third part is 0). */
int hx_export_version_cmp(const char *a, const char *b);
/* The release of the engine (HX_ENGINE_*) whose flags a target writes:
 * --engine-version, else DFLT (borrowed). */
const char *hx_export_engine_version(const hx_export_opts *o, const char *dflt);
/* The vLLM image of a pod on AMD or NVIDIA GPUs: --image (borrowed), else
 * the ROCm image (AMD, static), else vllm/vllm-openai at --engine-version's
 * release or the default, written into OUT[N] (N >= 64) and returned. */
const char *hx_export_vllm_image(const hx_export_opts *o, int amd, char *out, size_t n);

/* The context length an engine should allow a replica of group G: the
 * model's, or what the replica's KV cache holds when that is less (an
 * engine refuses to start when one sequence of its max length cannot fit). */
int hx_export_max_model_len(const hx_plan *p, const hx_plan_group *g);

#endif
