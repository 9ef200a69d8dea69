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
 * owned nodes cost nothing at the margin.  Offers expanded into named nodes are
 * in model/problem.h, the workload's length classes in model/classes.h.
 */
#ifndef HX_COMPOSE_H
#define HX_COMPOSE_H

#include "solver/milp.h"
#include "model/classes.h"
#include "planners/common.h"

/* The MILP in plain arrays (nothing of GPUs). */
typedef struct hx_compose_in {
	int nc, nw, nk;         /* configurations, classes, node pools */
	const double *h;        /* [nc * nw] req/s of one replica on class w (0: cannot) */
	const int *use;         /* [nc * nk] GPUs a replica takes from each pool */
	const int *pool_nodes;  /* [nk] nodes available */
	const int *pool_gpus;   /* [nk] GPUs per node */
	const double *pool_usd; /* [nk] USD per hour per node */
	const double *lambda;   /* [nw] req/s of each class */
	double util;            /* u: the share of capacity a replica may use */
	double budget;          /* > 0: maximize kappa within this USD/h */
} hx_compose_in;

typedef struct hx_compose_out {
	int *y;       /* [nc] replicas */
	int *x;       /* [nk] nodes rented */
	double *z;    /* [nc * nw] req/s */
	double kappa; /* 1 without a budget */
	double usd_per_hour;
	hx_milp_result res;
} hx_compose_out;

/* Solve; returns 0 with OUT filled (release with hx_compose_out_release) when a
 * solution exists, HX_EINFEASIBLE when none does (cost: the demand is above
 * what the pools carry), HX_ELIMIT when a limit came first, HX_EINPUT when
 * GLPK failed.  Ties are broken towards fewer GPUs (cost) or less rent
 * (budget) by a tiny term that never outweighs the objective. */
int hx_compose_solve(const hx_compose_in *in, const hx_milp_opts *o, hx_compose_out *out,
		     hx_err *err);
void hx_compose_out_release(hx_compose_out *out);

/* compose (Mélange): which GPUs to rent from the cluster's offers (plus its
 * owned nodes, free at the margin) so that every length class of the
 * workload is served at the SLO at least cost, or, with a budget, the
 * largest multiple of the workload's rate. */
int hx_plan_compose(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out, hx_err *err);

#endif
