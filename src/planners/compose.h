/*
 * compose: which GPUs to rent (Mélange; "Demystifying cost-efficiency";
 * DESIGN §6).  A MILP over replica configurations c (candidate shapes on
 * owned nodes and on nodes created from the cluster's offers) and length
 * classes w of the workload: integer replicas y_c, integer nodes rented x_k
 * of each pool k (a class of interchangeable nodes), continuous flows z_{c,w}
 * (requests/s of class w on c), with
 *   capacity      sum_w z_{c,w} / h_{c,w} <= u * y_c
 *   demand        sum_c z_{c,w} = lambda_w          (or kappa * lambda_w)
 *   nodes         sum_c use_{c,k} y_c <= gpus_k * x_k,  x_k <= nodes_k
 *   budget        sum_k usd_k x_k <= B              (--budget only)
 * minimizing the rent sum_k usd_k x_k, or with a budget maximizing kappa.
 * h_{c,w} is the cost model's capacity at the SLO of one replica of c
 * serving class w alone.  Nodes are rented whole (an offer's gpus_per_node);
 * owned nodes cost nothing at the margin.  The helpers here are shared with
 * `replan` and `check`: offers expanded into named nodes, and the
 * workload's length classes.
 */
#ifndef HX_COMPOSE_H
#define HX_COMPOSE_H

#include "solver/milp.h"
#include "planners/planners.h"

/* Token bound that stands for "no upper end" in a class's range. */
#define HX_CLASS_INF (1 << 30)
/* Most nodes that expanding a cluster's offers may create. */
#define HX_OFFER_MAX_NODES 65536

/* IN's nodes and links, then one node per gpus_per_node GPUs of every offer:
 * offer I becomes ceil(max_count / gpus_per_node) nodes named "offerI-J"
 * (J from 0), each of gpus_per_node GPUs but the last, which holds the rest,
 * with the offer's GPU, region and price (per GPU) and a 100 Gb/s NIC.  IN's
 * offers are copied too.  OWNED_FREE: IN's own nodes cost 0 (their marginal
 * cost).  Returns 0, or HX_EINPUT with ERR when a node of IN already bears
 * such a name or the offers make too many nodes.  Release OUT with
 * hx_cluster_release. */
int hx_cluster_expand_offers(const hx_cluster *in, int owned_free, hx_cluster *out,
			     hx_err *err);

/* Load the cluster file at PATH as check and export see it: its offers, if
 * any, expanded into nodes (owned nodes keep their prices).  Release with
 * hx_cluster_release. */
int hx_cluster_load_expanded(hx_cluster *c, const char *path, const hx_catalog *cat, hx_err *err);
/* Offer index and node index J of a node named "offerI-J", or -1. */
int hx_offer_node(const char *name, int *j);

/* Set P's rent (replacing any) from its placements on CL, a cluster with
 * its offers expanded: per offer, the nodes used, whole. */
void hx_plan_fill_rent(hx_plan *p, const hx_cluster *cl);

/* A length class of the workload.  Ranged classes (the workload has no
 * classes[]) hold the requests whose prompt and output lengths fall in
 * [lo, hi); named classes (the workload's own) have hi = 0. */
typedef struct hx_len_class {
	char name[64];
	double share;
	hx_dist prompt, output; /* owned */
	int prompt_lo, prompt_hi, output_lo, output_hi;
} hx_len_class;

/* The workload's classes[] if it has them, else the product of up to
 * BUCKETS quantile buckets of its prompt lengths and as many of its output
 * lengths (independent, as the workload draws them), named "pIoJ".  Returns
 * the count; *OUT is new (free with hx_len_classes_free). */
int hx_len_classes(const hx_workload *w, int buckets, hx_len_class **out);
void hx_len_classes_free(hx_len_class *c, int n);
/* W restricted to class C (borrows C's distributions). */
hx_workload hx_len_class_workload(const hx_workload *w, const hx_len_class *c);

/* The MILP in plain arrays (nothing of GPUs). */
typedef struct hx_compose_in {
	int nc, nw, nk;           /* configurations, classes, node pools */
	const double *h;          /* [nc * nw] req/s of one replica on class w (0: cannot) */
	const int *use;           /* [nc * nk] GPUs a replica takes from each pool */
	const int *pool_nodes;    /* [nk] nodes available */
	const int *pool_gpus;     /* [nk] GPUs per node */
	const double *pool_usd;   /* [nk] USD per hour per node */
	const double *lambda;     /* [nw] req/s of each class */
	double util;              /* u: the share of capacity a replica may use */
	double budget;            /* > 0: maximize kappa within this USD/h */
} hx_compose_in;

typedef struct hx_compose_out {
	int *y;       /* [nc] replicas */
	int *x;       /* [nk] nodes rented */
	double *z;    /* [nc * nw] req/s */
	double kappa; /* 1 without a budget */
	double usd_per_hour;
	hx_milp_result res;
} hx_compose_out;

/* Solve; returns 0 with OUT filled (free with hx_compose_out_free) when a
 * solution exists, HX_EINFEASIBLE when none does (cost: the demand is above
 * what the pools carry), HX_ELIMIT when a limit came first, HX_EINPUT when
 * GLPK failed.  Ties are broken towards fewer GPUs (cost) or less rent
 * (budget) by a tiny term that never outweighs the objective. */
int hx_compose_solve(const hx_compose_in *in, const hx_milp_opts *o, hx_compose_out *out,
		     hx_err *err);
void hx_compose_out_free(hx_compose_out *out);

#endif
