/*
 * plan: the deployment plan every planner writes and every consumer reads
 * (DESIGN §7), with its strict JSON reader and its writer.  A plan stands
 * alone: it embeds the architecture of its models and the (calibrated)
 * profiles of its GPUs, so it simulates and exports after its inputs are
 * gone.  Its unit is the replica group: one shape (model, role, stages with
 * GPU type, TP and layer range) with concrete placements.  A plan written
 * and read back is the same plan, byte for byte when written again.
 */
#ifndef HX_PLAN_H
#define HX_PLAN_H

#include <stdint.h>

#include "model/catalog.h"
#include "model/cost.h"
#include "model/problem.h"
#include "model/quality.h"

typedef enum hx_role { HX_ROLE_AGGREGATED, HX_ROLE_PREFILL, HX_ROLE_DECODE } hx_role;
const char *hx_role_name(hx_role r);

typedef struct hx_plan_stage {
	char gpu[48]; /* a name in the plan's gpus */
	int tp;
	int first, last; /* layers [first, last) */
	int cross_node;  /* the TP group may span nodes */
	/* Expert parallelism and data-parallel attention (hx_stage's fields
	 * of the same names; 0: absent, off): the keys ep, dp_attention,
	 * redundant_experts and eplb_imbalance, written only when set. */
	int ep, dp;
	int redundant_experts;
	double eplb_imbalance;
} hx_plan_stage;

/* A GPU of the cluster: node name and index in it ("n0:3"). */
typedef struct hx_gpu_ref {
	char node[64];
	int index;
} hx_gpu_ref;

/* Per-stage arrays hold the group's nstages entries (allocated by
 * hx_plan_add_replica, after the group's nstages is set): a plan of 90,000
 * one-stage groups would otherwise hold room for 64 stages in each. */
typedef struct hx_plan_replica {
	char id[48];
	int nst;           /* stages the arrays below hold */
	hx_gpu_ref **gpus; /* per stage, tp of them */
	int *ngpus;
	hx_linkspec *link;    /* stage i to i+1 */
	hx_linkspec *tp_link; /* for cross-node TP; bw 0: intra-node */
	/* An AFD group's replica (hx_plan_afd): its FFN instances' GPUs,
	 * ffn_n * ffn_tp of them, instance i the i-th run of ffn_tp, and the
	 * link between its attention and FFN instances ("afd": {"ffn",
	 * "link"}).  Its placement's one stage holds its attention
	 * instances' GPUs the same way (attn_n * tp). */
	hx_gpu_ref *ffn;
	int nffn;
	hx_linkspec afd_link;
} hx_plan_replica;

/* Attention/FFN disaggregation (issue 22, hx_afd in cost.h): a decode
 * group whose replicas are each ATTN_N attention instances of the group's
 * one stage (its gpu and tp, every layer) and FFN_N FFN (or expert)
 * instances of FFN_TP GPUs of type FFN_GPU, MICRO_BATCHES micro-batches in
 * flight between them.  BATCH: the sequences a replica is sized for, at
 * mean context CONTEXT tokens; STEP_MS: the decode step the plan predicts
 * there (hx_cost_afd).  ON when the group has the "afd" key. */
typedef struct hx_plan_afd {
	int on;
	int attn_n;
	char ffn_gpu[48];
	int ffn_n, ffn_tp;
	int micro_batches;
	double batch, context, step_ms;
} hx_plan_afd;

typedef struct hx_plan_group {
	char name[48];
	char model[64]; /* a name in the plan's models */
	hx_role role;
	hx_dtype wdt, kvdt;
	int nstages;
	hx_plan_stage *stage; /* nstages of them, by hx_plan_group_stages */
	int nreplicas;
	hx_plan_replica *replicas;
	double capacity_rps; /* predicted, per replica */
	double max_batch;
	hx_plan_afd afd;
} hx_plan_group;

typedef struct hx_route {
	char from[64]; /* ingress: the class ("" for all) */
	char to[64];   /* ingress: a group; kv/hops: a replica (or replica/stage) */
	double weight;
	/* kv only: the path KV caches take; transfers over routes naming the same
	 * link share its bandwidth.  bw_gbps 0: unknown (100 Gb/s, unshared). */
	char link[64];
	double bw_gbps, latency_ms;
} hx_route;

typedef struct hx_cascade_step {
	char model[64];
	double threshold;
	double escalate; /* fraction of this model's requests sent on */
} hx_cascade_step;

/* A length class that ingress routes name (compose): requests whose prompt
 * and output lengths (tokens) fall in [lo, hi) each. */
typedef struct hx_plan_class {
	char name[64];
	int prompt_lo, prompt_hi, output_lo, output_hi;
	double share; /* its fraction of the planned workload's requests; 0: not recorded */
} hx_plan_class;

/* What a plan rents (compose): the NODES nodes of offer OFFER of the
 * cluster (named "offerI-J", see compose.h) that its placements use, GPUS
 * GPUs in all (whole nodes), at USD_PER_HOUR for them all. */
typedef struct hx_plan_rent {
	int offer;
	char gpu[48];
	int nodes, gpus;
	double usd_per_hour;
	/* A spot offer: each node is taken back at PREEMPT_PER_HOUR (0: on
	 * demand) and its replicas are lost for WINDOW_S (a replacement node
	 * plus loading the weights). */
	double preempt_per_hour, window_s;
} hx_plan_rent;

/* What a plan's spot nodes risk (compose, hexplan-formats(5)): ON when
 * the plan rents spot nodes.  SLO_PROBABILITY is the chance that no more
 * spot nodes are lost at once than SURVIVES_NODES, the most that the plan
 * carries its rate without (losing those hosting the most capacity);
 * TARGET is what the planner had to reach.  EXPECTED_USD_PER_HOUR: the rent
 * with each spot node paid only while it runs (up for 1/rate, then down for
 * its window). */
typedef struct hx_plan_spot {
	int on;
	int nodes, survives_nodes;
	double target, slo_probability, expected_usd_per_hour;
	double need_rps;               /* the capacity the rate needs */
	double on_demand_usd_per_hour; /* the plan without spot offers (0: none) */
} hx_plan_spot;

typedef struct hx_prediction {
	double capacity_rps, throughput_tps, ttft_ms_p99, tpot_ms_p99;
	double usd_per_hour, usd_per_m_tokens;
	/* compose: the owned GPUs the plan uses at the cluster's prices, which
	 * usd_per_hour (the rent) does not count; written when > 0. */
	double owned_usd_per_hour;
	/* pipeline: the max-flow of the placement, generated tokens/s and
	 * prompt + generated tokens/s (Helix's unit); written when > 0. */
	double flow_tps, flow_total_tps;
	/* Quality (0-100) of a cascade or routing split, from the workload's
	 * quality profile; written only when has_quality. */
	double quality;
	int has_quality;
} hx_prediction;

/* The simulator's check of a plan (DESIGN §8): the capacity at the SLO it
 * confirms, from requests drawn with SEED, at least REQUESTS per rate
 * (hx_sim_capacity); METHOD "replicas" when it is the sum over groups of
 * replicas times one replica's simulated capacity (the router spreads
 * requests at random, so each replica sees its share of the arrivals as
 * they come).  Written as "simulated" when REQUESTS > 0. */
typedef struct hx_plan_sim {
	double capacity_rps;
	long requests;
	uint64_t seed;
	char method[16];
} hx_plan_sim;

/* A best-effort plan (replan) that carries less than its workload needs:
 * ON set, RATE_RPS the workload's rate, UTILIZATION the margin the rate
 * needs (capacity at least rate / utilization), SHORTFALL_RPS what the
 * capacity lacks of that, SERVED_SHARE the share of the rate it carries at
 * the SLO (min(1, capacity / rate)).  Written as "status": "short" and
 * "shortfall" only when ON. */
typedef struct hx_plan_short {
	int on;
	double rate_rps, utilization, shortfall_rps, served_share;
} hx_plan_short;

/* Spill-over: the GPUs of one type that a plan uses against those of its
 * preferred plan (the plan it would be with every offer's availability
 * ignored, or, for a replan, the plan it adapts), one per type whose counts
 * differ.  A type with fewer GPUS than PREFERRED_GPUS ran short; one with
 * more stands in for it. */
typedef struct hx_plan_subst {
	char gpu[48];
	int preferred_gpus, gpus;
} hx_plan_subst;

/* Written as "substitutions" only when NSUBST > 0: the rows, and the
 * preferred plan's price (USD_PER_HOUR_DELTA = predicted.usd_per_hour
 * less it). */
typedef struct hx_plan_spill {
	hx_plan_subst *subst;
	int nsubst;
	double preferred_usd_per_hour, usd_per_hour_delta;
} hx_plan_spill;

/* plan --tolerate-failures K: the plan survives the loss of any K of the
 * nodes it uses (SETS_CHECKED sets, as check --tolerate-failures draws them
 * with SEED when K > 1), after ROUNDS rounds of insurance replicas added to
 * the plain plan.  Written as "tolerate" only when ON.  What the insurance
 * costs: the insured plan (the plan itself: its GPUs and predicted price)
 * less the plain plan of the same inputs. */
typedef struct hx_plan_tolerate {
	int on, k, sets_checked, rounds;
	uint64_t seed;
	int plain_gpus, gpus, insurance_gpus;
	double plain_usd_per_hour, usd_per_hour, insurance_usd_per_hour;
} hx_plan_tolerate;

typedef struct hx_solver_record {
	char engine[16];
	char status[16]; /* optimal gap_limit work_limit time_limit heuristic */
	double objective, bound, gap;
	long nodes, iterations;
	uint64_t seed;
} hx_solver_record;

typedef struct hx_plan {
	char mode[16];
	char cluster_digest[72], workload_digest[72];
	char calibration[72]; /* digest of the calibration file, or "" */
	hx_model *models;
	int nmodels;
	hx_gpu *gpus;
	int ngpus;
	hx_plan_group *groups;
	int ngroups;
	hx_route *ingress, *kv, *hops;
	int ningress, nkv, nhops;
	hx_cascade_step *cascade;
	int ncascade;
	hx_plan_class *classes; /* routing.classes (none: classes are the workload's) */
	int nclasses;
	hx_plan_rent *rent;
	int nrent;
	hx_plan_spot spot;
	hx_prediction predicted;
	hx_plan_sim simulated;
	hx_plan_short shortage;
	hx_plan_spill spill;
	hx_plan_tolerate tolerate;
	hx_solver_record solver;
	/* Group names to indexes, kept by parse_groups for plans read from a
	 * file (50,000 groups); valid while ngroups == ngroups_indexed, and
	 * hx_plan_group_index checks each hit (else it scans). */
	hx_map *group_names;
	int ngroups_indexed;
} hx_plan;

void hx_plan_init(hx_plan *p);

/* P's spot section as one line of text (no newline) in OUT, N bytes. */
void hx_plan_spot_line(const hx_plan *p, char *out, size_t n);
void hx_plan_release(hx_plan *p);

/* Builders: each returns a pointer into P (valid until the next add). */
hx_model *hx_plan_add_model(hx_plan *p, const hx_model *m);
hx_gpu *hx_plan_add_gpu(hx_plan *p, const hx_gpu *g);
hx_plan_group *hx_plan_add_group(hx_plan *p);
hx_plan_replica *hx_plan_add_replica(hx_plan_group *g);
/* Give G room for N stages (1 to HX_MAX_STAGES), all zero, and set its
 * nstages; before any replica is added. */
void hx_plan_group_stages(hx_plan_group *g, int n);
/* Free what replica R owns (its per-stage arrays and GPU lists). */
void hx_plan_replica_release(hx_plan_replica *r);
hx_route *hx_plan_add_route(hx_route **list, int *n);

/* The name of the first of P's length classes that holds a request of
 * PROMPT and OUTPUT tokens: borrowed, or NULL when none does. */
const char *hx_plan_class_of(const hx_plan *p, int prompt, int output);

/* Make the N weights of R sum to exactly 1 as written: divide by their sum
 * (all equal when it is 0), round to 6 digits, the last taking the rest. */
void hx_routes_normalize(hx_route *r, int n);

/* Lookups by name: borrowed, or NULL. */
const hx_model *hx_plan_model(const hx_plan *p, const char *name);
const hx_gpu *hx_plan_gpu(const hx_plan *p, const char *name);
int hx_plan_group_index(const hx_plan *p, const char *name);

/* The cost model's view of replica R of group G: stages with the plan's GPU
 * profiles and the replica's links.  Pointers borrow from P. */
int hx_plan_replica_cost(const hx_plan *p, const hx_plan_group *g, const hx_plan_replica *r,
			 hx_replica *out, hx_err *err);

/* The cost model's view of AFD group G's replica R (R may be NULL: the
 * link then is HX_DEFAULT_NIC_GBPS and HX_AFD_LINK_LATENCY_MS): 0, or
 * HX_EINPUT with ERR when G is no AFD group or its shape breaks
 * hx_afd_check.  Pointers borrow from P. */
int hx_plan_afd_cost(const hx_plan *p, const hx_plan_group *g, const hx_plan_replica *r,
		     hx_afd *out, hx_err *err);
/* The link an AFD replica's sides take without one: estimate --afd's. */
#define HX_AFD_LINK_LATENCY_MS 0.02

/* The cost model's view of a fragment group G (pipeline plans: its stages
 * hold layers [first, last) of the model, not all of them): the replica of
 * R's stages padded with one stage of the same GPU and TP before (layers
 * [0, first)) and after ([last, L)), so that the embedding and the head sit
 * where they would.  *OFFSET gets the index of G's first stage in OUT.  For
 * a group that covers every layer this is hx_plan_replica_cost. */
int hx_plan_fragment_cost(const hx_plan *p, const hx_plan_group *g, const hx_plan_replica *r,
			  hx_replica *out, int *offset, hx_err *err);

/* Parse "node:index" (the index in
 * decimal digits, 0 to 1000000): 0, or -1 if S is not such a reference. */
int hx_gpu_ref_parse(const char *s, hx_gpu_ref *out);

/* JSON.  The writer rounds nothing: planners store figures already rounded
 * (hx_round6) so that a plan read back is equal to the one written. */
/* GPUs of type GPU that P's replicas use. */
/* The GPUs plan P's replicas take, all types. */
int hx_plan_gpus_used(const hx_plan *p);
int hx_plan_gpus_of(const hx_plan *p, const char *gpu);

/* Fill P->spill against PREF (the preferred plan, priced at PREF_USD per
 * hour): a row per GPU type whose counts differ, only when some type ran
 * short and another stands in for it (else P->spill stays empty).  Returns
 * the rows' count. */
int hx_plan_spill_against(hx_plan *p, const hx_plan *pref, double pref_usd);

char *hx_plan_dump(const hx_plan *p); /* new string */
int hx_plan_write(const hx_plan *p, const char *path, hx_err *err);
int hx_plan_load(hx_plan *p, const char *path, hx_err *err);
int hx_plan_parse_text(hx_plan *p, const char *text, const char *name, hx_err *err);
/* Parse a plan from ROOT, a document already read (a schedule's period,
 * a file read once); takes ROOT's reference. */
int hx_plan_from_json(hx_plan *p, json_t *root, const char *name, hx_err *err);
/* OUT becomes a copy of P (its JSON written and read back; release it). */
int hx_plan_copy(const hx_plan *p, hx_plan *out, hx_err *err);

/* A readable summary of P for people: new string. */
char *hx_plan_table(const hx_plan *p);

/* Digest of a file's bytes ("sha256:..."); "" when unreadable. */
void hx_file_digest(const char *path, char out[72]);

/* The thresholds (nmodels of them) that a plan's cascade steps stand for:
 * a step's threshold, 0 for its last step and the models after it,
 * HX_CASCADE_SKIP for the profile's models it leaves out.  Returns 0, or -1
 * when the steps are not the profile's models in its order. */
int hx_cascade_thresholds(const hx_quality *q, const hx_cascade_step *steps, int n,
			  double *theta);

#endif
