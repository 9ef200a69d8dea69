/* plan --mode auto: every mode that plans the inputs on their fixed GPUs,
 * each plan judged in the simulator at the workload's SLO, the best kept. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "planners/afd.h"
#include "planners/baseline.h"
#include "planners/colocated.h"
#include "planners/disagg.h"
#include "planners/pipeline.h"
#include "sim/sim.h"

static int auto_baseline(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out, hx_err *err)
{
	(void)o;
	return hx_plan_baseline(pb, out, err);
}

/* The modes auto runs, in the order they are tried (ties keep the first). */
static const struct {
	const char *name;
	int (*run)(const hx_problem *, const hx_plan_opts *, hx_plan *, hx_err *);
	int searches; /* takes a share of --time-limit */
	int capacity_only;
} auto_modes[] = {
    {"baseline", auto_baseline, 0, 0},      /* what an operator does by hand */
    {"colocated", hx_plan_colocated, 1, 0}, /* MILP over replica shapes */
    {"disagg", hx_plan_disagg, 1, 0},       /* prefill and decode nodes, max-flow */
    {"afd", hx_plan_attn_ffn, 0, 1},        /* attention/FFN decode units */
    {"pipeline", hx_plan_pipeline, 1, 1},   /* layer ranges, max-flow */
};
#define NAUTO ((int)(sizeof(auto_modes) / sizeof(auto_modes[0])))

/* Is candidate A better than the kept one B under objective OBJ at RATE? */
static int better(const hx_auto_candidate *a, const hx_auto_candidate *b, int obj, double rate)
{
	if (!b)
		return 1;
	if (obj == HX_OBJ_COST) {
		int am = a->simulated_rps >= rate, bm = b->simulated_rps >= rate;
		if (am != bm)
			return am;
		if (am)
			return a->usd_per_hour < b->usd_per_hour * (1 - 1e-9);
	}
	return a->simulated_rps > b->simulated_rps * (1 + 1e-9);
}

int hx_plan_auto(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out,
		 hx_auto_candidate *cand, int *ncand, hx_err *err)
{
	const hx_workload *w = pb->workload;
	hx_plan_opts mo = *o;
	hx_sim_opts so = {pb->seed, 0, NULL, NULL};
	hx_plan best;
	const hx_auto_candidate *kept = NULL;
	hx_err first = {0};
	int have = 0, nsearch = 0;

	*ncand = 0;
	for (int i = 0; i < NAUTO; i++)
		nsearch += auto_modes[i].searches;
	/* three quarters of the limit to the searches, the rest to judging */
	if (o->time_limit_s > 0)
		mo.time_limit_s = 0.75 * o->time_limit_s / nsearch;
	for (int i = 0; i < NAUTO; i++) {
		hx_auto_candidate *c = &cand[(*ncand)++];
		hx_err e = {0};
		hx_plan p;
		double t0 = hx_now();
		int rc;

		memset(c, 0, sizeof(*c));
		hx_strlcpy(c->mode, auto_modes[i].name, sizeof(c->mode));
		if (auto_modes[i].capacity_only && o->objective != HX_OBJ_CAPACITY) {
			hx_strlcpy(c->why, "plans for capacity only", sizeof(c->why));
			continue;
		}
		rc = auto_modes[i].run(pb, auto_modes[i].searches ? &mo : o, &p, &e);
		c->time_s = hx_now() - t0;
		if (rc) {
			hx_strlcpy(c->why, e.msg, sizeof(c->why));
			if (!first.code)
				first = e;
			continue;
		}
		c->ok = 1;
		c->predicted_rps = p.predicted.capacity_rps;
		c->usd_per_hour = p.predicted.usd_per_hour;
		/* A plan its planner simulated whole, as auto judges it (the
		 * capacity search, HX_CAP_REQUESTS a rate, the seed) keeps that
		 * figure: disagg and afd check their plans so. */
		if (p.simulated.requests == HX_CAP_REQUESTS && p.simulated.seed == pb->seed &&
		    strcmp(p.simulated.method, "plan") == 0)
			c->simulated_rps = p.simulated.capacity_rps;
		else if ((rc = hx_sim_capacity(&p, w, HX_CAP_REQUESTS, &so, &c->simulated_rps,
					       NULL, &e))) {
			c->ok = 0;
			snprintf(c->why, sizeof(c->why), "simulate: %.200s", e.msg);
			hx_plan_release(&p);
			continue;
		}
		c->time_s = hx_now() - t0;
		if (better(c, kept, o->objective, w->rate_rps)) {
			if (have)
				hx_plan_release(&best);
			best = p;
			have = 1;
			kept = c;
		} else {
			hx_plan_release(&p);
		}
	}
	if (!have) {
		if (first.code)
			*err = first;
		else
			hx_errf(err, HX_EINFEASIBLE, "no mode planned the inputs");
		return err->code;
	}
	for (int i = 0; i < *ncand; i++)
		cand[i].chosen = &cand[i] == kept;
	*out = best;
	return 0;
}
