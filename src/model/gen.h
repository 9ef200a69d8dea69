/*
 * gen: synthetic requests.  Arrivals follow the workload's process (Poisson,
 * or gamma inter-arrival times with the workload's coefficient of
 * variation); lengths are drawn from its distributions (per class when it
 * has classes) or resampled as (input, output) pairs from a trace.  All
 * draws go through one seeded generator, so the same seed gives the same
 * requests.  Used by `hexplan trace` and by the simulator.
 */
#ifndef HX_GEN_H
#define HX_GEN_H

#include <stdint.h>

#include "model/problem.h"

/* Built-in length shapes: lognormal fits (mean, median, max) to the public
 * Azure LLM inference traces of 2023. */
enum { HX_SHAPE_CONVERSATION, HX_SHAPE_CODE };

/* Requests from workload W at RATE_RPS (<= 0: the workload's rate): N of
 * them when N > 0, else every arrival before DURATION_S.  OUT's cls holds
 * each request's class index when W has classes.  Release with
 * hx_trace_release.  Returns 0, or HX_EINPUT with ERR (nothing generated). */
int hx_gen_workload(const hx_workload *w, double rate_rps, int n, double duration_s,
		    uint64_t seed, hx_trace *out, hx_err *err);

/* Requests through every stage of W, one after another (each at its own
 * rate, the workload's arrival process), lengths as hx_gen_workload draws
 * them.  HX_EINPUT with ERR when W has no stages or none brings a request. */
int hx_gen_stages(const hx_workload *w, uint64_t seed, hx_trace *out, hx_err *err);

/* Requests at RATE_RPS (Poisson) for DURATION_S with the lengths of a
 * built-in SHAPE, or (SAMPLE != NULL) (input, output) pairs resampled from
 * the trace SAMPLE. */
int hx_gen_shape(int shape, const hx_trace *sample, double rate_rps, double duration_s,
		 uint64_t seed, hx_trace *out, hx_err *err);

/* Write T as CSV "arrival_s,input_tokens,output_tokens" into a new string
 * (caller frees). */
char *hx_trace_csv(const hx_trace *t);

#endif
