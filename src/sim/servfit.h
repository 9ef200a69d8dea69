/*
 * servfit: calibration from end-to-end serving benchmarks.  A serving runs
 * file (hexplan-formats(5), SERVING RUNS) names result files of vLLM's
 * `vllm bench serve --save-result` or of inference-perf with the server
 * settings and the load that neither records in full; each run is
 * replayed by the simulator on one replica of its TP, and a GPU's constants
 * are fitted so that the simulated mean E2E latency and mean TTFT of every
 * steady stage match the measured ones (least squares on log ratios, by
 * Nelder-Mead).  Deterministic: every run's requests are drawn once, with a
 * fixed seed, and replayed for every candidate.
 *
 * In the simulator layer because it simulates; it includes base/, model/,
 * plan/ and sim/ only.
 */
#ifndef HX_SERVFIT_H
#define HX_SERVFIT_H

#include "model/calib.h"
#include "model/problem.h"

enum { HX_RESULT_VLLM_BENCH, HX_RESULT_INFERENCE_PERF };

/* A run's simulation replays at most this many requests: longer loads
 * have every stage shortened in proportion. */
#define HX_SERVFIT_MAX_REQUESTS 20000
/* A measured stage is overloaded (left out of the fit and of the steady
 * error figures) when more than this fraction of its requests failed or its
 * mean TTFT exceeds HX_SERVFIT_OVERLOAD_TTFT_S seconds. */
#define HX_SERVFIT_OVERLOAD_FAILED 0.10
#define HX_SERVFIT_OVERLOAD_TTFT_S 10.0

/* One load stage of a run as measured. */
typedef struct hx_serv_stage {
	double rate_rps, duration_s; /* the load as run */
	long requests, failed;
	double e2e_s, ttft_s; /* measured means over the successful requests */
	int steady;
} hx_serv_stage;

typedef struct hx_serv_run {
	char name[64];
	int format;
	char gpu[48];
	hx_model model;
	int tp;
	hx_workload w; /* lengths, arrivals, shared prefix, serving, and the
			* stages as simulated (shortened, see above) */
	hx_serv_stage *st;
	int nst;
	hx_trace trace; /* the requests every simulation replays */
} hx_serv_run;

typedef struct hx_serv_runs {
	hx_serv_run *r;
	int n;
} hx_serv_runs;

/* Read the runs file at PATH and every result it names (paths relative to
 * PATH's folder); GPUs and models resolve in CAT.  Errors name the file and
 * the JSON pointer of the bad value.  Release with hx_serv_runs_release. */
int hx_serv_runs_load(hx_serv_runs *out, const char *path, const hx_catalog *cat, hx_err *err);
void hx_serv_runs_release(hx_serv_runs *rs);

/* Simulate run R on one replica of its TP on GPU G: per stage the mean E2E
 * and TTFT (seconds) of the simulated requests that arrived in it, into
 * E2E[R->nst] and TTFT[R->nst] (NAN where none finished). */
int hx_serv_simulate(const hx_serv_run *r, const hx_gpu *g, double *e2e, double *ttft,
		     hx_err *err);

typedef struct hx_servfit {
	hx_gpu fitted; /* G with the fitted fields */
	int nkeys;
	const char *keys[HX_CALIB_MAX_FIELDS];
	int runs, stages; /* runs on G and their steady stages */
	int evals;
	double objective_before, objective_after;
} hx_servfit;

/* How hx_servfit_run fits (NULL: the defaults). */
typedef struct hx_servfit_opts {
	double prior;            /* >= 0, see hx_servfit_run */
	const char *const *keys; /* NKEYS fittable keys (hx_calib_keys) to fit
				  * instead of the default ones; NULL: those */
	int nkeys;
} hx_servfit_opts;

/* Fit G's constants to the runs of RS on G.  The keys (unless O names its
 * own): e_mem, iter_overhead_ms, graph_floor_us and request_overhead_ms
 * always; allreduce_latency_us when a run has tp > 1; e_moe when a run's
 * model is a mixture of experts; e_compute when a run has no shared prefix
 * (its prompts are computed, not read from the prefix cache).  The objective
 * adds O's PRIOR times the squared log ratio of each key to G's value: a
 * Gaussian prior centred on the catalog, in which G's value of a key weighs
 * as much as one stage's E2E or TTFT (PRIOR 1), so that a fit of few runs
 * does not trade a constant's physical value for their noise (0, the
 * default: plain least squares).  HX_EINPUT when no run on G has a steady
 * stage. */
int hx_servfit_run(const hx_serv_runs *rs, const hx_gpu *g, const hx_servfit_opts *o,
		   hx_servfit *out, hx_err *err);

#endif
