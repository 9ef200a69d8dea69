/*
 * verify: an independent check of a plan against the cluster it is meant
 * to run on (`hexplan check`).  It shares nothing with the planners: it
 * reads only the loaded plan, the loaded cluster and the cost model, and
 * judges memory with the cluster's GPU profiles (the truth), not the ones
 * the plan embeds.  It collects every violation rather than stopping at the
 * first, each with a JSON pointer into the plan, so that a planner's bug
 * shows whole.
 */
#ifndef HX_VERIFY_H
#define HX_VERIFY_H

#include "plan/plan.h"
#include "model/problem.h"

/* What a violation breaks; one class per rule (the list in hexplan(1), check). */
typedef enum hx_vclass {
	HX_V_UNKNOWN_GPU, /* a placement names a GPU the cluster lacks */
	HX_V_GPU_TWICE,   /* a GPU used more than once in the plan */
	HX_V_GPU_TYPE,    /* a node's GPU type is not the stage's */
	HX_V_TP_COUNT,    /* a stage placement's GPU count is not its tp */
	HX_V_LAYERS,      /* a group's stages do not cover [0, L) once, in order */
	HX_V_TP_HEADS,    /* tp does not divide the model's attention heads */
	HX_V_MEMORY,      /* weights + reserve + 4096 tokens of KV do not fit */
	HX_V_CROSS_NODE,  /* a TP group spans nodes without cross_node */
	HX_V_UNDECLARED,  /* a stage GPU or group model not embedded in the plan */
	HX_V_ROUTING,     /* routing weights, sums and names */
	HX_V_ROLES,       /* disaggregated prefill/decode KV routes */
	HX_V_DUP_REPLICA, /* a replica id used twice */
	HX_V_RENT,        /* rented GPUs: offers' nodes used without or beyond the rent */
	HX_V_SHORT,       /* a short plan's shortfall and share against its capacity */
	HX_V_SPILL,       /* substitutions: GPUs per type and price against the plan's */
	HX_V_TOLERATE,    /* tolerate: the insured figures against the plan's */
	HX_V_SPOT,        /* spot: rates and windows against the offers, the probability,
			   * expected cost and nodes survived against the plan's */
	HX_V_EP,          /* expert parallelism: model, ep = tp, experts, DP ranks */
	HX_V_AFD,         /* attention/FFN disaggregation: role, shape, memory, link */
	HX_V_NCLASSES
} hx_vclass;

/* The class's short name ("unknown-gpu", "gpu-twice", ...): static. */
const char *hx_vclass_name(hx_vclass c);

typedef struct hx_violation {
	hx_vclass cls;
	char ptr[160]; /* JSON pointer into the plan */
	char msg[400]; /* lower-case, no trailing period */
} hx_violation;

/* KV tokens that every replica must be able to hold besides its weights. */
#define HX_VERIFY_KV_TOKENS 4096
/* The share of GPU memory the serving engine may use. */
#define HX_VERIFY_MEM_UTIL HX_DEFAULT_MEM_UTIL

/* Check plan P against cluster C.  *OUT gets a new array of every
 * violation found, in a fixed order (the caller frees it with free(); NULL
 * when there are none), *N their count.  Returns *N.  C may be NULL: then
 * only the rules that need no cluster are checked (stages, tp against
 * heads and GPU counts, GPUs and replica ids used twice, routing, roles),
 * which is what export and replan ask of a plan before acting on it. */
int hx_verify_plan(const hx_plan *p, const hx_cluster *c, hx_violation **out, int *n);

#endif
