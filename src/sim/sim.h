/*
 * sim: the discrete-event simulator (DESIGN §8), the judge of every plan.
 * Replicas run vLLM-like iterations: continuous batching with a token budget
 * per iteration (chunked prefill; decodes first), admission while the KV
 * cache has room, preemption by recompute (the latest admitted first) when
 * a decode step finds it full.  Iteration times come from the cost model;
 * a pipeline replica runs at its micro-batch cycle (hx_cost_cycle); an
 * AFD replica (a decode group's "afd") at hx_cost_afd's step for its batch
 * and mean context, its KV cache the attention instances'.
 * Requests are routed by the plan's ingress weights (round-robin over a
 * group's replicas); disaggregated requests move their KV cache over the
 * plan's kv routes, transfers on one link sharing its bandwidth; cascades
 * escalate a request to the next model with the plan's probability.
 *
 * The simulator layer (src/sim/) reads a plan (plan/) and a workload or
 * trace (model/) and asks the cost model for every iteration; it includes
 * base/, model/ and plan/, never a planner, an export or the command line
 * (planners that judge by simulation call it, not the other way round).
 */
#ifndef HX_SIM_H
#define HX_SIM_H

#include <stdint.h>

#include "plan/plan.h"
#include "model/problem.h"

typedef struct hx_sim_opts {
	uint64_t seed;
	int keep_records; /* fill hx_sim_report.records */
	/* Called now and then with the fraction of requests done (may be NULL). */
	void (*progress)(double done, void *ctx);
	void *progress_ctx;
	/* hx_sim_capacity's run length and precision (0: HX_CAP_LIVES lives,
	 * two minutes, 1%): a planner's quick check asks for less. */
	int cap_lives;
	double cap_min_s, cap_tol;
	/* hx_sim_capacity stops with HX_ELIMIT once past this deadline
	 * (hx_deadline; 0: none), checked before each rate it tries and
	 * every 256 arrivals of a run. */
	double deadline;
	/* Take the plan's spot nodes back at their rate (rent entries'
	 * preemptions_per_hour, seeded), each for its window_s: their
	 * replicas' requests go back to the router. */
	int preempt_spot;
} hx_sim_opts;

typedef struct hx_sim_record {
	double arrival_s, first_token_s, finish_s;
	int input, output;
	int group, replica; /* where it finished (decode side): group index and
			     * replica index within it; -1 when dropped */
	int preemptions, escalations;
	int dropped, met_slo;
} hx_sim_record;

typedef struct hx_sim_group_stats {
	double utilization; /* busy time / (replicas * makespan) */
	long finished;
	/* An AFD group (its "afd"): the decode batch and mean context a
	 * generated token saw, over its replicas' iterations (sum of b^2 over
	 * sum of b, sum of contexts over sum of b); 0 for other groups. */
	double decode_batch, decode_context;
} hx_sim_group_stats;

/* One rate the capacity search tried: the SLO attainment over the JUDGED
 * requests that arrived after the warm-up (of REQUESTS run), and whether
 * it met the workload's target. */
typedef struct hx_cap_point {
	double rate_rps, attainment;
	long requests, judged;
	int meets;
	/* The attainment's standard error by batch means: the judged
	 * requests in HX_CAP_BATCHES runs of consecutive arrivals, so that
	 * misses that come in bursts (a queue) count as the bursts they are. */
	double attainment_se;
} hx_cap_point;
#define HX_CAP_BATCHES    10
#define HX_CAP_MAX_POINTS 128

typedef struct hx_sim_report {
	long requests, finished, dropped, preemptions, iterations;
	double makespan_s, offered_s;
	double slo_attainment, goodput_rps, throughput_tps, offered_rps;
	double ttft_ms[4], tpot_ms[4], e2e_ms[4]; /* p50, p90, p95, p99 */
	double ttft_mean_ms, tpot_mean_ms, e2e_mean_ms;
	double usd_per_hour, usd_per_m_tokens;
	int ngroups;
	hx_sim_group_stats *groups;
	/* Invariants the tests read: each must stay 0. */
	long kv_overflows, time_reversals;
	/* --preempt-spot: spot nodes taken back, requests moved off them */
	long spot_preemptions, spot_moved;
	hx_sim_record *records;
	int nrecords;
	/* hx_sim_capacity's report at the capacity: every rate it tried, in
	 * the order it tried them. */
	hx_cap_point *curve;
	int ncurve;
	/* The capacity's standard error: the attainment's at the capacity
	 * over the curve's slope there (least squares over the rates tried
	 * within 0.7 to 1.5 times the capacity); 0 when the curve gives no
	 * falling slope. */
	double capacity_se_rps;
} hx_sim_report;

/* Replay the requests of T (arrivals and lengths) against plan P, with the
 * SLOs and serving knobs of W. */
int hx_simulate(const hx_plan *p, const hx_workload *w, const hx_trace *t, const hx_sim_opts *o,
		hx_sim_report *out, hx_err *err);
void hx_sim_report_release(hx_sim_report *r);

/* Capacity runs: at least HX_CAP_LIVES request lives of arrivals (a life:
 * the plan's predicted p99 TTFT plus the mean output at its p99 TPOT, each
 * at most the SLO's), the SLO judged on the requests that arrive after
 * the first HX_CAP_WARMUP_LIVES lives (at most a quarter of the run). */
#define HX_CAP_LIVES        50
#define HX_CAP_WARMUP_LIVES 2
#define HX_CAP_MAX_REQUESTS 100000
/* simulate --capacity and plan --mode auto: requests per rate unless told. */
#define HX_CAP_REQUESTS 4000

/* The highest arrival rate at which the SLO attainment after the warm-up
 * stays at or above the workload's target: bisection over simulations of
 * N requests drawn from W, or two minutes or HX_CAP_LIVES lives of
 * arrivals when that is more (at most HX_CAP_MAX_REQUESTS), the same seed
 * for every rate; 0 when even a trickle misses the SLO.  AT (may be NULL)
 * gets the report at that rate, with the curve of every rate tried. */
int hx_sim_capacity(const hx_plan *p, const hx_workload *w, int n, const hx_sim_opts *o,
		    double *rps, hx_sim_report *at, hx_err *err);

#endif
