/*
 * problem: what the user has and wants — the cluster (fixed nodes and links,
 * or rentable offers), the workload (rates, lengths, SLOs, serving knobs),
 * request traces and calibration measurements — and their strict loaders.
 * Loaders name the file and the JSON pointer (or CSV line) of a bad value.
 *
 * The model layer (src/model/) is everything a plan is made from: the GPU
 * and model catalog, these inputs and their loaders (cluster.c, dist.c,
 * workload.c, tables.c, classes.c), the cost model, calibration, the
 * quality profile and the request generators.  It includes only base/,
 * solver/ and itself: never the plan format, the planners, the simulator,
 * the exports or the command line, which all build on it.
 */
#ifndef HX_PROBLEM_H
#define HX_PROBLEM_H

#include "model/catalog.h"
#include "base/jsonio.h"
#include "base/util.h"

/* A node's NIC when the cluster names none, and a link's bandwidth where a
 * plan or route records none (Gb/s). */
#define HX_DEFAULT_NIC_GBPS 100

/* How fast a node loads a replica's weights (from disk or the network)
 * when the cluster names no load_gbps: 16 Gb/s, 2 GB/s (schedule's
 * start-up times). */
#define HX_DEFAULT_LOAD_GBPS 16

/* The fraction of GPU memory the engine may use when the workload names
 * none (vLLM's --gpu-memory-utilization default). */
#define HX_DEFAULT_MEM_UTIL 0.9

/* Gigabits per second (links, NICs: network convention) to bytes per
 * second (SI, what the cost model divides by). */
static inline double hx_gbps_bytes_s(double gbps)
{
	return gbps * 1e9 / 8;
}

typedef struct hx_linkspec {
	double bw_gbps;
	double latency_ms;
} hx_linkspec;

typedef struct hx_node {
	char name[64];
	char region[64];
	char host[256];
	char iface[16]; /* the network interface its collectives use ("" none) */
	hx_gpu gpu;
	int count;               /* GPUs */
	double nic_gbps;         /* per node, to the network */
	double usd_per_hour;     /* per GPU */
	double load_gbps;        /* weights' load bandwidth (0: HX_DEFAULT_LOAD_GBPS) */
	double preempt_per_hour; /* a spot node's preemption rate (0: on demand) */
} hx_node;

typedef struct hx_link {
	int a, b; /* node indexes */
	hx_linkspec spec;
} hx_link;

typedef struct hx_offer {
	hx_gpu gpu;
	int max_count; /* GPUs available */
	int gpus_per_node;
	double usd_per_hour;
	double load_gbps; /* of each of its nodes */
	/* Spot capacity: nodes taken back at this rate per node and hour
	 * (exponential times); 0 for on-demand offers. */
	double preempt_per_hour;
	char region[64];
} hx_offer;

/* How long a preempted spot node's replicas stay lost, besides loading
 * their weights: the time to obtain and boot a replacement node. */
#define HX_SPOT_REPLACE_S 120

/* What a cluster may hold (hexplan-formats(5), LIMITS): beyond these the
 * planners' memory and time grow past what a planning run should take. */
#define HX_MAX_NODES           4096
#define HX_MAX_CLUSTER_GPUS    65536
#define HX_MAX_LINKS           16384
#define HX_MAX_OFFERS          256
#define HX_MAX_OFFER_GPUS      65536
#define HX_MAX_CLASSES         64
#define HX_MAX_BUCKETS         100000
#define HX_MAX_QUALITY_SAMPLES 100000

typedef struct hx_cluster {
	hx_node *nodes;
	int nnodes;
	hx_link *links;
	int nlinks;
	hx_linkspec same_region, cross_region;
	hx_offer *offers;
	int noffers;
	/* Node names to indexes, and node pairs "A-B" (A < B) to links:
	 * lookups in constant time for clusters at the node and link limits.
	 * NULL in a cluster made by hand (lookups then scan). */
	hx_map *node_names, *link_pairs;
} hx_cluster;

/* Load a cluster file; GPU names resolve in CAT.  Release with
 * hx_cluster_release. */
int hx_cluster_load(hx_cluster *c, const char *path, const hx_catalog *cat, hx_err *err);
void hx_cluster_release(hx_cluster *c);
/* The link between nodes A and B (explicit, else the region default). */
hx_linkspec hx_cluster_link(const hx_cluster *c, int a, int b);
/* That link as a replica spanning A and B sees it: no faster than either
 * node's NIC (an expert-parallel all-to-all crosses both). */
hx_linkspec hx_cluster_nic_link(const hx_cluster *c, int a, int b);
/* The link between two GPUs of type G on one node (its NVLink or PCIe). */
hx_linkspec hx_gpu_own_link(const hx_gpu *g);
/* The index of the node named NAME, or -1. */
int hx_cluster_node_index(const hx_cluster *c, const char *name);
int hx_cluster_gpus(const hx_cluster *c);

/* A length distribution (tokens). */
enum { HX_DIST_LOGNORMAL, HX_DIST_BUCKETS };
typedef struct hx_dist {
	int kind;
	double mean, p50, max;   /* lognormal as given */
	double mu, sigma;        /* derived */
	int nb;                  /* buckets (also a trace's empirical lengths) */
	double *tokens, *weight; /* weight normalized to sum 1, tokens sorted */
	/* cum[i]: weight[0] + ... + weight[i], summed in that order, for
	 * hx_dist_quantile's binary search; NULL until hx_dist_index (then a
	 * linear scan gives the same quantiles). */
	double *cum;
} hx_dist;

double hx_dist_mean(const hx_dist *d);
double hx_dist_quantile(const hx_dist *d, double q);
double hx_dist_sample(const hx_dist *d, hx_rng *r);
/* Squared coefficient of variation. */
double hx_dist_cv2(const hx_dist *d);
void hx_dist_release(hx_dist *d);
/* Compute D's cumulative weights (after its buckets are set or changed). */
void hx_dist_index(hx_dist *d);
/* A bucket distribution from N (tokens, weight) pairs: sorted, equal
 * lengths merged, weights normalized.  Takes ownership of P (frees it). */
typedef struct hx_tw {
	double t, w;
} hx_tw;
void hx_dist_from_pairs(hx_dist *d, hx_tw *p, int n);

typedef struct hx_slo {
	double ttft_ms, tpot_ms;
	double percentile; /* e.g. 99 */
	double attainment; /* e.g. 0.99 */
} hx_slo;

/* Serving-engine knobs the cost model needs (vLLM-like defaults). */
typedef struct hx_serving {
	double token_budget; /* max tokens per iteration (chunked prefill) */
	double max_seqs;     /* max sequences in a batch */
	double mem_util;     /* fraction of GPU memory the engine may use */
} hx_serving;
void hx_serving_defaults(hx_serving *s);

typedef struct hx_class {
	char name[64];
	double share;
	hx_dist prompt, output;
} hx_class;

enum { HX_ARRIVAL_POISSON, HX_ARRIVAL_GAMMA };
struct hx_quality; /* quality.h */

/* One stage of a load that changes: RATE_RPS for DURATION_S seconds. */
typedef struct hx_load_stage {
	double rate_rps, duration_s;
} hx_load_stage;

/* A shared prefix's groups times their users, at most. */
#define HX_MAX_PREFIX_USERS 10000000

/* A workload's stages hold at most this many entries. */
#define HX_MAX_LOAD_STAGES 10000

typedef struct hx_workload {
	char model[512];       /* optional: model name or config.json path */
	double rate_rps;       /* with stages: the highest stage's unless given */
	hx_load_stage *stages; /* one after another, or NULL */
	int nstages;
	/* Shared system prompts: each request's first prefix_tokens prompt
	 * tokens are one of prefix_groups prompts, which a prefix cache
	 * reuses (0: none). */
	double prefix_tokens;
	int prefix_groups;
	/* Users of each group, each sending the same prompt every time (as
	 * inference-perf's shared_prefix generator does), so a user's whole
	 * prompt recurs (0: every prompt is new past the shared prefix). */
	int prefix_users;
	int arrival;
	double cv;
	hx_dist prompt, output; /* whole workload (mixture of classes if given) */
	hx_slo slo;
	hx_serving serving;
	hx_class *classes;
	int nclasses;
	struct hx_quality *quality; /* the quality profile, or NULL (owned) */
} hx_workload;

int hx_workload_load(hx_workload *w, const char *path, hx_err *err);
/* W empty with a workload file's defaults (Poisson arrivals, vLLM's
 * serving knobs). */
void hx_workload_defaults(hx_workload *w);
/* The load keys of a workload object OBJ at pointer PTR, as a workload file
 * gives them and other inputs embed them (the serving runs of `hexplan
 * calibrate`): "stages", "rate_rps" (required when NEED_RATE and there are
 * no stages), "shared_prefix", "arrival" and "serving", into W. */
int hx_workload_parse_load(const hx_jr *r, const json_t *obj, const char *ptr, int need_rate,
			   hx_workload *w);
/* A length distribution object V at PTR ("dist", "buckets" or "trace"; a
 * trace's path resolves against BASE_DIR, COLUMN 0 its prompts, 1 its
 * outputs). */
int hx_dist_parse(const hx_jr *r, const json_t *v, const char *ptr, const char *base_dir,
		  int column, hx_dist *d);
void hx_workload_release(hx_workload *w);

/* A request trace, read or generated, holds at most this many requests. */
#define HX_MAX_REQUESTS 50000000
/* An arrival process's cv (formats(5)): beyond these the gamma draws
 * underflow to zero gaps or the bursts outgrow any trace. */
/* The latest arrival in a trace, in seconds after the first (about 31
 * years): beyond it times lose their milliseconds in a double. */
#define HX_MAX_ARRIVAL_S 1e9
#define HX_MIN_CV        0.01
#define HX_MAX_CV        20

/* A request trace. */
typedef struct hx_trace {
	int n;
	double *arrival_s;
	int *input, *output;
	int *cls; /* class index per request (workload classes), or NULL */
} hx_trace;

/* Read the Azure format (TIMESTAMP,ContextTokens,GeneratedTokens) or
 * arrival_s,input_tokens,output_tokens.  Errors name "PATH:LINE". */
int hx_trace_load(hx_trace *t, const char *path, hx_err *err);
void hx_trace_release(hx_trace *t);

/* Calibration measurements: gpu,model,tp,phase,batch,tokens,context,ms. */
enum { HX_PHASE_PREFILL, HX_PHASE_DECODE, HX_PHASE_LINEAR };
typedef struct hx_meas {
	char gpu[48], model[512];
	int tp, phase, batch, tokens, context;
	double ms;
	int line;
} hx_meas;
int hx_meas_load(hx_meas **out, int *n, const char *path, hx_err *err);

/* ---- offers ---------------------------------------------------------------- */

/* Most nodes that expanding a cluster's offers may create. */
#define HX_OFFER_MAX_NODES 65536

/* IN's nodes and links, then one node per gpus_per_node GPUs of every offer:
 * offer I becomes ceil(max_count / gpus_per_node) nodes named "offerI-J"
 * (J from 0), each of gpus_per_node GPUs but the last, which holds the rest,
 * with the offer's GPU, region and price (per GPU) and a 100 Gb/s NIC.  IN's
 * offers are copied too.  OWNED_FREE: IN's own nodes cost 0 (their marginal
 * cost).  Returns 0, or HX_EINPUT with ERR when IN has offers and a node
 * of IN already bears such a name, or when the offers make too many nodes.
 * Release OUT with hx_cluster_release. */
int hx_cluster_expand_offers(const hx_cluster *in, int owned_free, hx_cluster *out,
			     hx_err *err);

/* Load the cluster file at PATH as check and export see it: its offers, if
 * any, expanded into nodes (owned nodes keep their prices).  Release with
 * hx_cluster_release. */
int hx_cluster_load_expanded(hx_cluster *c, const char *path, const hx_catalog *cat,
			     hx_err *err);
/* IN (offers expanded, as hx_cluster_load_expanded leaves it) without the
 * nodes I where GONE[I] is nonzero, nor their links, nor offers (IN's are
 * nodes already): the cluster after those nodes fail.  Release OUT with
 * hx_cluster_release. */
void hx_cluster_without(const hx_cluster *in, const int *gone, hx_cluster *out);
/* Offer index and node index J of a node named "offerI-J", or -1. */
int hx_offer_node(const char *name, int *j);

#endif
