/*
 * candidates: feasible replica shapes on a cluster's GPUs, priced by the
 * cost model (capacity at the workload's SLO).  Nodes that are
 * interchangeable (same GPU profile, GPU count, region and NIC, and no link
 * of their own) form one class, so a shape is placed on "some node of the
 * class" and the choice among them is left to packing: exact, since a
 * class's node size is a power of two and so is every TP degree it takes.
 * A shape is one stage (TP inside one node) or a pipeline of up to
 * HX_CAND_MAX_STAGES stages over nodes of possibly different GPU types and
 * TP degrees (HexGen's asymmetric replicas), layers split in proportion to
 * stage speed within each stage's memory (water-filling, largest-remainder
 * rounding).
 */
#ifndef HX_CANDIDATES_H
#define HX_CANDIDATES_H

#include "model/cost.h"
#include "planners/common.h"

#define HX_CAND_MAX_STAGES   4
#define HX_CAND_EP_MAX_NODES 16

typedef struct hx_node_class {
	int *nodes; /* indexes into the cluster's nodes */
	int nnodes;
	int gpus_per_node;
	const hx_gpu *gpu;
	double usd_per_hour;     /* per GPU */
	double preempt_per_hour; /* spot nodes' preemption rate (0: on demand) */
} hx_node_class;

typedef struct hx_cand_stage {
	int cls, tp;
	int first, last; /* layers [first, last) */
	int ep, dp;      /* expert parallel size, attention DP ranks (0: off) */
	/* An EP stage over several nodes of its class (tp a multiple of the
	 * class's node size): the link its all-to-all crosses, the class's
	 * NIC bounded by the link between two of its nodes (bw 0: one node). */
	hx_linkspec nic;
	int redundant; /* EPLB's redundant experts (an EP size not dividing the experts) */
} hx_cand_stage;

typedef struct hx_candidate {
	int nstages;
	hx_cand_stage st[HX_CAND_MAX_STAGES];
	hx_linkspec link[HX_CAND_MAX_STAGES]; /* stage i to i+1 */
	double capacity_rps;                  /* at the SLO */
	double ttft_ms;                       /* percentile TTFT bound at capacity */
	double usd_per_hour;
	int gpus;
} hx_candidate;

typedef struct hx_candset {
	hx_node_class *cls;
	int ncls;
	hx_candidate *c;
	int n;
	int considered, pruned; /* shapes priced, shapes dominated */
	int cut;                /* the deadline passed before every shape was priced */
} hx_candset;

typedef struct hx_cand_opts {
	int max_stages;  /* pipelines of 2..max_stages stages (default 3) */
	double deadline; /* hx_deadline(): stop pricing shapes when it passes */
	/* Also expert-parallel shapes of a mixture-of-experts model: on one
	 * node, ep = tp dividing the experts, each number of attention DP
	 * ranks whose TP divides the heads (two-batch overlap, as estimate
	 * --ep); over 2, 4, ... whole nodes of a class, ep = tp = every GPU
	 * dividing the experts, attention ranks within a node (attention TP
	 * dividing the node and the heads), the all-to-all across nodes over
	 * the NIC.  The node count doubles while the best shape's capacity
	 * per GPU grows (HX_CAND_EP_MAX_NODES at most); then, where the
	 * class has more nodes than the last power of two tried and at most
	 * HX_CAND_EP_MAX_NODES, also over all of them, with the fewest
	 * redundant experts that make ep divide the experts plus them. */
	int ep;
} hx_cand_opts;

/* Enumerate the feasible shapes (capacity > 0) and drop dominated ones: a
 * shape whose GPUs could instead hold k copies of another (k >= 1) with at
 * least its capacity.  Release with hx_candset_release. */
int hx_candidates(const hx_problem *pb, const hx_cand_opts *o, hx_candset *out, hx_err *err);
void hx_candset_release(hx_candset *s);

/* GPUs candidate C takes from class K. */
int hx_cand_use(const hx_candidate *c, int k);
/* The cost model's replica for candidate C (stages borrow the classes'
 * GPU profiles). */
void hx_cand_replica(const hx_problem *pb, const hx_candset *s, const hx_candidate *c,
		     hx_replica *out);

/* Place N replicas of candidate C on the classes' nodes as a new group of P
 * named "g<index>": FREE_GPUS holds the GPUs left per cluster node, NEXT
 * the next GPU index to hand out on each; both are updated.  Packing is
 * exact when the replicas are placed widest stage first. */
void hx_cand_place(const hx_problem *pb, const hx_candset *s, const hx_candidate *c, int n,
		   int *free_gpus, int *next, hx_plan *p);

#endif
