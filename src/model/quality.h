/*
 * quality: the quality profile of a family of models (DESIGN §4, §6) and
 * what cascades and routing splits derive from it.  A profile holds, for a
 * sample of requests with their lengths, each model's judge score (0-100).
 * In a cascade with thresholds theta = (h_0 .. h_{C-2}) a request answered by
 * model i with score >= h_i returns, else it goes on to model i+1 (the last
 * model answers whatever reaches it).  From the sample: the overall quality
 * Q(theta) (mean score of the answers returned), the fraction of traffic
 * that reaches each model, and each model's workload (rate and lengths of
 * the requests that reach it).  A routing split (no cascade) sends fraction
 * f_i of the requests to model i: Q = sum_i f_i * mean score of model i.
 * These functions do no I/O: the workload loader (workload.c) parses the
 * profile.
 */
#ifndef HX_QUALITY_H
#define HX_QUALITY_H

#include "model/problem.h"

#define HX_QUALITY_MAX_MODELS 8
/* A threshold above 100 skips its model: requests go straight on to the
 * next one (the cascade is then a subset of the profile's models). */
#define HX_CASCADE_SKIP 101.0

typedef struct hx_quality {
	int nmodels;
	char model[HX_QUALITY_MAX_MODELS][512]; /* catalog name or config.json path */
	int nsamples;
	double *prompt, *output; /* tokens, per sample */
	double *score;           /* score[m * nsamples + s], 0-100 */
	double floor;            /* quality floor (0-100); 0: none */
} hx_quality;

/* Release what Q holds (Q itself is the caller's). */
void hx_quality_release(hx_quality *q);

/* Score of model M on sample S. */
static inline double hx_quality_score(const hx_quality *q, int m, int s)
{
	return q->score[(size_t)m * (size_t)q->nsamples + (size_t)s];
}

/* What thresholds THETA (nmodels - 1 of them) do to the sample. */
typedef struct hx_cascade_eval {
	double quality;                       /* Q(theta), 0-100 */
	double reach[HX_QUALITY_MAX_MODELS];  /* fraction of all traffic reaching model i */
	double answer[HX_QUALITY_MAX_MODELS]; /* fraction answered (returned) by model i */
	double
	    escalate[HX_QUALITY_MAX_MODELS]; /* of model i's requests, the fraction sent on */
	int stages;                          /* models some request reaches */
} hx_cascade_eval;

/* Evaluate THETA on Q's sample into OUT.  reach[0] is 1 unless the first
 * model is skipped; escalate of the last model, of a skipped one and of one
 * no request reaches is 0. */
void hx_cascade_evaluate(const hx_quality *q, const double *theta, hx_cascade_eval *out);

/* The requests that reach model M under THETA (NULL: every request of the
 * sample) as a workload: W's arrival,
 * SLO and serving knobs, rate W->rate_rps * reach[M], and the lengths of the
 * sample's requests that reach M as bucket distributions.  OUT has no
 * classes and no quality profile; release with hx_workload_release.
 * Returns 0, or HX_EINFEASIBLE when no sample request reaches M. */
int hx_cascade_model_workload(const hx_quality *q, const hx_workload *w, const double *theta,
			      int m, hx_workload *out, hx_err *err);

/* Mean score of model M over the whole sample. */
double hx_quality_mean(const hx_quality *q, int m);

/* Q of a routing split: fraction FRAC[i] of the requests to model i. */
double hx_route_quality(const hx_quality *q, const double *frac);

#endif
