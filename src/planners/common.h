/*
 * planners/common: the planner layer.  Every mode (one <mode>.c and
 * <mode>.h each in this folder) turns the same problem into the same struct
 * plan (plan/plan.h); what they all share is here: the problem they read,
 * the options a command gives them, and finishing a plan (the predictions,
 * digests, embedded profiles and rent every plan carries).  A planner may
 * include the base, model, plan and solver layers, this header and
 * candidates.h, never another mode's header; nothing below the planners
 * (model, plan, sim, export) includes anything from this folder.
 */
#ifndef HX_PLANNERS_COMMON_H
#define HX_PLANNERS_COMMON_H

#include <stdint.h>

#include "model/catalog.h"
#include "plan/plan.h"
#include "model/problem.h"
#include "solver/milp.h"

typedef struct hx_problem {
	const hx_catalog *cat;
	const hx_cluster *cluster;
	const hx_workload *workload;
	const hx_model *model;
	uint64_t seed;
	const char *cluster_path, *workload_path, *calibration_path; /* for digests */
} hx_problem;

/* HX_OBJ_THROUGHPUT: the pipeline mode alone, no latency SLO (Helix). */
enum { HX_OBJ_CAPACITY, HX_OBJ_COST, HX_OBJ_LATENCY, HX_OBJ_THROUGHPUT };

typedef struct hx_plan_opts {
	int objective;       /* HX_OBJ_* */
	double time_limit_s; /* safety stop from the call (0: none): the search
			      * stops then and the plan is finished */
	double gap;          /* relative MIP gap to stop at (0: optimal) */
	long node_limit;     /* branch-and-bound nodes per solve (0: default) */
	const char *lp_path; /* --lp: the (last) MILP in CPLEX LP format,
			      * rendered into *lp_text below */
	int verbose;
	double budget_usd_per_hour; /* compose: > 0 maximizes capacity within it */
	char **lp_text;             /* with lp_path: the LP text, a new string (the caller
				     * frees it and writes it to lp_path with its outputs) */
	double slo_probability;     /* compose: the chance the SLO must hold with spot
				     * nodes preempted (0: HX_SPOT_SLO_PROBABILITY) */
	int no_sim_check;           /* colocated: optimize the cost model's capacities alone,
				     * without the simulator's check (tests against brute force) */
} hx_plan_opts;

/* The KV reserve (tokens) a replica of the workload's model needs: one
 * request at the SLO percentile, and at least HX_KV_RESERVE_TOKENS. */
double hx_plan_kv_reserve(const hx_workload *w);

/* The cost model's answers for replicas already priced in one pass over
 * a plan: groups of like nodes hold replicas the cost model cannot tell
 * apart (the same bytes of hx_replica), and at thousands of groups pricing
 * each again was most of a plan's building.  Zero it to start. */
#define HX_CAPMEMO_N 64
typedef struct hx_capmemo {
	int n, next;
	struct {
		hx_replica *r;
		size_t len;
		const hx_workload *w;
		int phase;
		double lambda; /* < 0: capacity; else the operating point there */
		hx_capacity c;
	} e[HX_CAPMEMO_N];
	const hx_workload *lens_w; /* the workload LENS holds, or NULL */
	hx_cost_lens lens;
} hx_capmemo;
/* hx_cost_capacity_phase (LAMBDA < 0) or hx_cost_at_rate_phase at LAMBDA
 * of R, W and PHASE into OUT, from M when it has them (the same results).
 * M knows a workload by its address: W must not change while M is in use. */
void hx_capmemo_eval(hx_capmemo *m, const hx_replica *r, const hx_workload *w, int phase,
		     double lambda, hx_capacity *out);
void hx_capmemo_release(hx_capmemo *m);

/* hx_plan_finish's FLAGS. */
enum {
	HX_FINISH_WEIGHTS = 1, /* set ingress weights in proportion to capacity */
	HX_FINISH_INPUTS = 2   /* record only the inputs (digests, model, seed,
				* GPU profiles): the caller predicts (pipeline) */
};

/* Fill what every plan carries besides its groups: digests, embedded GPU
 * profiles of the nodes it uses, per-group capacity, ingress weights in
 * proportion to capacity (HX_FINISH_WEIGHTS in FLAGS) and the plan's
 * predictions at the workload's rate (unless HX_FINISH_INPUTS). */
int hx_plan_finish(const hx_problem *pb, hx_plan *p, int flags, hx_err *err);

/* Seconds left before DEADLINE (hx_deadline), at least a millisecond so
 * that a solve given them stops at once rather than running unbounded; 0
 * when DEADLINE is 0 (none). */
double hx_plan_time_left(double deadline);

/* The MILP options of O for a solve that must end by DEADLINE (hx_deadline;
 * 0: O's own time limit, if any). */
hx_milp_opts hx_plan_milp_opts(const hx_plan_opts *o, double deadline);

/* Record RES as P's solver: ENGINE, RES's status as a plan status, and its
 * objective, bound and gap (rounded), nodes and iterations. */
void hx_plan_solver_milp(hx_plan *p, const char *engine, const hx_milp_result *res);

/* Record a heuristic search as P's solver: ENGINE and STATUS, VALUE as the
 * objective against BOUND (at least VALUE) and the gap between them, NODES
 * and ITERATIONS as its work. */
void hx_plan_solver_search(hx_plan *p, const char *engine, const char *status, double value,
			   double bound, long nodes, long iterations);

/* USED[i] (CL->nnodes, set by the caller to 0) becomes 1 where plan P has a
 * GPU on node i of CL. */
void hx_plan_nodes_used(const hx_plan *p, const hx_cluster *cl, char *used);

/* HX_ELIMIT, with ERR saying the deadline came before any of MODEL's
 * replica shapes was priced (hx_candidates cut its set empty). */
int hx_plan_err_unpriced(hx_err *err, const char *model);

/* The price of the owned GPUs P places, at the prices of OWNED (a cluster
 * before its offers are expanded: offer nodes are not among its nodes). */
double hx_plan_owned_usd(const hx_plan *p, const hx_cluster *owned);

/* A composed plan's price: its rent on CL (offers expanded) refilled
 * (hx_plan_fill_rent), the plan's price that rent (owned GPUs are free at
 * the margin), what its owned GPUs cost at OWNED's prices beside it, and
 * USD per million tokens of W's lengths at SERVED req/s. */
void hx_plan_price_rent(hx_plan *p, const hx_cluster *cl, const hx_cluster *owned,
			const hx_workload *w, double served);

/* Set P's rent (replacing any) from its placements on CL, a cluster with
 * its offers expanded: per offer, the nodes used, whole; and P's spot
 * section, when it has one, from them and the groups' capacities (call it
 * once those are final). */
void hx_plan_fill_rent(hx_plan *p, const hx_cluster *cl);

/* Plan P simulated whole, with the capacity search of simulate --capacity
 * (HX_CAP_REQUESTS per rate) and PB's seed, into *RPS; HX_ELIMIT once past
 * DEADLINE (hx_deadline; 0: none). */
int hx_plan_sim_capacity(const hx_problem *pb, const hx_plan *p, double deadline, double *rps,
			 hx_err *err);

/* Record RPS as P's simulated capacity (hx_plan_sim): found by METHOD
 * ("plan", "replicas") from REQUESTS per rate drawn with PB's seed. */
void hx_plan_set_simulated(hx_plan *p, const hx_problem *pb, const char *method, double rps,
			   long requests);

/* Route RT goes over the path between nodes A and B of CL: its link named
 * "A-B", the least of the link's bandwidth and the two NICs, and the
 * link's latency. */
void hx_route_set_link(hx_route *rt, const hx_cluster *cl, int a, int b);
/* The same, or, when A and B are one node, its GPUs' own link (no link
 * name: the transfer stays inside the node). */
void hx_route_set_node_link(hx_route *rt, const hx_cluster *cl, int a, int b);

/* The TTFT SLO shared by a prefill and its KV transfer (disagg, afd): the
 * prefill is priced at the SLO less a transfer reserve, and a link or NIC
 * carries the KV transfers that end within it.  Transfers share a link as
 * processor sharing: at load rho, the percentile prompt's KV (Q_TOKENS)
 * takes on average latency + bytes / (bandwidth (1 - rho)) (the M/G/1-PS
 * sojourn of a job of that size, whatever the other sizes), which must end
 * within the reserve RESERVE_S; so rho <= 1 - bytes / (bandwidth (reserve -
 * latency)), and a link of GBPS and LATENCY_MS carries rho bandwidth /
 * KV_REQ_BYTES (the mean prompt's KV) requests/s: hx_kv_link_rps, 0 when
 * even an idle link misses the reserve.  hx_kv_link_time_s: the mean time
 * (s) of the percentile prompt's KV over that link carrying RPS (at the
 * bandwidth its load leaves), infinite past its bandwidth.  Both in
 * hx_cost_kv_transfer's terms (fp16 KV). */
double hx_kv_link_rps(const hx_model *m, double q_tokens, double kv_req_bytes, double reserve_s,
		      double gbps, double latency_ms);
double hx_kv_link_time_s(const hx_model *m, double q_tokens, double kv_req_bytes, double gbps,
			 double latency_ms, double rps);
/* The transfer reserves to try, ascending, into R (at most
 * HX_KV_RESERVES): for each kind of link a KV route may take (the region
 * defaults, the fastest and the slowest explicit link of PB's cluster;
 * each no faster than the fastest NIC), the reserve at which the
 * Q_TOKENS-token prompt's transfer may run at half, 3/4, ... 31/32 of its
 * bandwidth (latency + 2..32 times the idle transfer); those below the
 * TTFT SLO, one of any two within 5% of each other.  Returns how many. */
#define HX_KV_RESERVES 20
int hx_kv_reserves(const hx_problem *pb, double q_tokens, double *R);

#endif
