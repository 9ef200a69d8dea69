/* gen: see gen.h. */
#include "config.h"

#include "model/gen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* More requests than this would take gigabytes; nobody replays that many. */

/* Where the lengths come from: a workload (per class when it has classes),
 * two distributions, or (input, output) pairs of a trace. */
typedef struct lengths {
	const hx_workload *w;
	const hx_dist *prompt, *output;
	const hx_trace *sample;
} lengths;

/* Gamma(SHAPE, 1) by Marsaglia and Tsang (2000); below shape 1 the boost
 * Gamma(k) = Gamma(k + 1) U^(1/k) keeps the squeeze efficient. */
static double gamma_sample(double shape, hx_rng *r)
{
	double boost = 1, d, c;

	if (shape < 1) {
		boost = pow(hx_rng_uniform(r), 1 / shape);
		shape += 1;
	}
	d = shape - 1.0 / 3;
	c = 1 / sqrt(9 * d);
	for (;;) {
		double x = hx_rng_normal(r), v = 1 + c * x, u;
		if (v <= 0)
			continue;
		v = v * v * v;
		u = hx_rng_uniform(r);
		if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
			return d * v * boost;
	}
}

/* The next inter-arrival time: exponential for Poisson, else gamma with
 * shape 1/cv^2 and mean 1/rate. */
static double next_gap(int process, double cv, double rate_rps, hx_rng *r)
{
	if (process == HX_ARRIVAL_GAMMA) {
		double k = 1 / (cv * cv);
		return gamma_sample(k, r) / (rate_rps * k);
	}
	return -log(hx_rng_uniform(r)) / rate_rps;
}

static int to_tokens(double x)
{
	x = floor(x + 0.5);
	if (!(x >= 1))
		return 1;
	return x > 1e7 ? 10000000 : (int)x;
}

/* Fill request I's lengths (and class): class first, then prompt, then
 * output, so that the stream of draws is fixed. */
static void draw_lengths(const lengths *l, hx_rng *r, hx_trace *t, int i)
{
	const hx_dist *p = l->prompt, *o = l->output;

	if (l->sample) {
		int j = (int)(hx_rng_uniform(r) * l->sample->n);
		if (j >= l->sample->n)
			j = l->sample->n - 1;
		t->input[i] = l->sample->input[j];
		t->output[i] = l->sample->output[j];
		return;
	}
	if (l->w && l->w->nclasses > 0) {
		double u = hx_rng_uniform(r), acc = 0;
		int c = l->w->nclasses - 1;
		for (int k = 0; k < l->w->nclasses; k++) {
			acc += l->w->classes[k].share;
			if (u < acc) {
				c = k;
				break;
			}
		}
		t->cls[i] = c;
		p = &l->w->classes[c].prompt;
		o = &l->w->classes[c].output;
	}
	t->input[i] = to_tokens(hx_dist_sample(p, r));
	t->output[i] = to_tokens(hx_dist_sample(o, r));
}

static void grow(hx_trace *t, int cap, int with_cls)
{
	t->arrival_s = hx_xrealloc(t->arrival_s, (size_t)cap * sizeof(double));
	t->input = hx_xrealloc(t->input, (size_t)cap * sizeof(int));
	t->output = hx_xrealloc(t->output, (size_t)cap * sizeof(int));
	if (with_cls)
		t->cls = hx_xrealloc(t->cls, (size_t)cap * sizeof(int));
}

/* The requests of an arrival process and a length source: N of them when
 * N > 0, else those arriving by DURATION_S. */
static int generate(int process, double cv, double rate_rps, int n, double duration_s,
		    uint64_t seed, const lengths *l, hx_trace *out, hx_err *err)
{
	int with_cls = !l->sample && l->w && l->w->nclasses > 0, cap;
	double expect, now = 0;
	hx_rng r;

	memset(out, 0, sizeof(*out));
	if (!(rate_rps > 0) || !isfinite(rate_rps))
		return hx_errf(err, HX_EINPUT,
			       "the arrival rate must be positive, not %g req/s", rate_rps);
	if (process == HX_ARRIVAL_GAMMA && (!(cv > 0) || !isfinite(cv)))
		return hx_errf(err, HX_EINPUT,
			       "a gamma arrival process needs a positive cv, not %g", cv);
	if (n <= 0 && (!(duration_s > 0) || !isfinite(duration_s)))
		return hx_errf(err, HX_EINPUT,
			       "give a number of requests or a positive duration to generate");
	if (n > HX_MAX_REQUESTS)
		return hx_errf(err, HX_EINPUT, "%d requests are more than the limit of %d", n,
			       HX_MAX_REQUESTS);
	expect = rate_rps * duration_s;
	if (n <= 0 && expect > HX_MAX_REQUESTS)
		return hx_errf(
		    err, HX_EINPUT,
		    "%g req/s over %g s gives about %.3g requests, more than the limit of %d",
		    rate_rps, duration_s, expect, HX_MAX_REQUESTS);
	if (l->sample && l->sample->n <= 0)
		return hx_errf(err, HX_EINPUT, "the sample trace has no requests");
	if (n > 0) {
		cap = n;
	} else {
		/* A first guess, grown as arrivals come: in double and clamped,
		 * since a bursty process's spread (cv times the root) can pass
		 * any int. */
		double guess =
		    expect + 4 * sqrt(expect) * (process == HX_ARRIVAL_GAMMA ? cv : 1) + 16;
		cap = guess < HX_MAX_REQUESTS ? (int)guess : HX_MAX_REQUESTS;
	}
	grow(out, cap, with_cls);
	hx_rng_seed(&r, seed);
	for (int i = 0; n <= 0 || i < n; i++) {
		now += next_gap(process, cv, rate_rps, &r);
		if (n <= 0 && now > duration_s)
			break;
		if (i == cap) {
			if (cap >= HX_MAX_REQUESTS) {
				hx_trace_release(out);
				return hx_errf(err, HX_EINPUT,
					       "more than %d requests arrived in %g s",
					       HX_MAX_REQUESTS, duration_s);
			}
			cap = cap > HX_MAX_REQUESTS / 2 ? HX_MAX_REQUESTS : cap * 2;
			grow(out, cap, with_cls);
		}
		out->arrival_s[i] = now;
		draw_lengths(l, &r, out, i);
		out->n = i + 1;
	}
	return 0;
}

int hx_gen_workload(const hx_workload *w, double rate_rps, int n, double duration_s,
		    uint64_t seed, hx_trace *out, hx_err *err)
{
	lengths l = {w, &w->prompt, &w->output, NULL};

	if (rate_rps <= 0)
		rate_rps = w->rate_rps;
	return generate(w->arrival, w->cv, rate_rps, n, duration_s, seed, &l, out, err);
}

int hx_gen_stages(const hx_workload *w, uint64_t seed, hx_trace *out, hx_err *err)
{
	lengths l = {w, &w->prompt, &w->output, NULL};
	int with_cls = w->nclasses > 0, cap = 16, n = 0;
	double expect = 0, start = 0;
	hx_rng r;

	memset(out, 0, sizeof(*out));
	if (w->nstages <= 0)
		return hx_errf(err, HX_EINPUT, "the workload has no stages");
	if (w->arrival == HX_ARRIVAL_GAMMA && (!(w->cv > 0) || !isfinite(w->cv)))
		return hx_errf(err, HX_EINPUT,
			       "a gamma arrival process needs a positive cv, not %g", w->cv);
	for (int k = 0; k < w->nstages; k++)
		expect += w->stages[k].rate_rps * w->stages[k].duration_s;
	if (expect > HX_MAX_REQUESTS)
		return hx_errf(err, HX_EINPUT,
			       "the stages give about %.3g requests, more than the limit of %d",
			       expect, HX_MAX_REQUESTS);
	grow(out, cap, with_cls);
	hx_rng_seed(&r, seed);
	for (int k = 0; k < w->nstages; k++) {
		const hx_load_stage *st = &w->stages[k];
		double now = start, end = start + st->duration_s;
		while (st->rate_rps > 0) {
			now += next_gap(w->arrival, w->cv, st->rate_rps, &r);
			if (now > end)
				break;
			if (n == cap) {
				if (cap >= HX_MAX_REQUESTS) {
					hx_trace_release(out);
					return hx_errf(err, HX_EINPUT,
						       "the stages give more than %d requests",
						       HX_MAX_REQUESTS);
				}
				cap = cap > HX_MAX_REQUESTS / 2 ? HX_MAX_REQUESTS : cap * 2;
				grow(out, cap, with_cls);
			}
			out->arrival_s[n] = now;
			draw_lengths(&l, &r, out, n);
			out->n = ++n;
		}
		start = end;
	}
	if (n == 0) {
		hx_trace_release(out);
		return hx_errf(err, HX_EINPUT, "no request arrives in the workload's stages");
	}
	return 0;
}

/* A lognormal as the workload loader (workload.c) builds it from (mean, p50, max). */
static hx_dist lognormal(double mean, double p50, double max)
{
	hx_dist d;

	memset(&d, 0, sizeof(d));
	d.kind = HX_DIST_LOGNORMAL;
	d.mean = mean;
	d.p50 = p50;
	d.max = max;
	d.mu = log(p50);
	d.sigma = sqrt(2 * log(mean / p50));
	return d;
}

int hx_gen_shape(int shape, const hx_trace *sample, double rate_rps, double duration_s,
		 uint64_t seed, hx_trace *out, hx_err *err)
{
	/* Azure LLM inference trace 2023 (Microsoft Azure, CC-BY 4.0): mean,
	 * median and max of ContextTokens and GeneratedTokens. */
	static const double fit[2][2][3] = {
	    [HX_SHAPE_CONVERSATION] = {{1155, 1020, 14050}, {211, 129, 1000}},
	    [HX_SHAPE_CODE] = {{2048, 1469, 7437}, {28, 13, 1899}},
	};
	hx_dist p, o;
	lengths l = {NULL, &p, &o, sample};

	if (!sample && shape != HX_SHAPE_CONVERSATION && shape != HX_SHAPE_CODE) {
		memset(out, 0, sizeof(*out));
		return hx_errf(err, HX_EINPUT, "unknown length shape %d", shape);
	}
	if (!sample) {
		p = lognormal(fit[shape][0][0], fit[shape][0][1], fit[shape][0][2]);
		o = lognormal(fit[shape][1][0], fit[shape][1][1], fit[shape][1][2]);
	}
	return generate(HX_ARRIVAL_POISSON, 1, rate_rps, 0, duration_s, seed, &l, out, err);
}

char *hx_trace_csv(const hx_trace *t)
{
	hx_buf b = {0};

	hx_buf_printf(&b, "arrival_s,input_tokens,output_tokens\n");
	for (int i = 0; i < t->n; i++)
		hx_buf_printf(&b, "%.6f,%d,%d\n", t->arrival_s[i], t->input[i], t->output[i]);
	return b.s;
}
