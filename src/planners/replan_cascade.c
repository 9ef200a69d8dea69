/* replan of cascade and route plans (replan_int.h).  Their models'
 * capacities were priced by the cascade planner on the requests that reach
 * each model, which only it knows; replan keeps what survives with those
 * capacities and the plan's thresholds or fractions, so the quality the
 * plan records still holds, and judges the capacity by the model that
 * binds. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planners/replan_int.h"

/* The index of model NAME in P, or -1. */
static int model_index(const hx_plan *p, const char *name)
{
	for (int m = 0; m < p->nmodels; m++)
		if (strcmp(p->models[m].name, name) == 0)
			return m;
	return -1;
}

/* Each model's share of the traffic that reaches it (REACH, per model of
 * OLD): a cascade's first model 1, each next the share escalated to it; a
 * route plan's the ingress fraction of its groups. */
static void reach_of(const hx_plan *old, double *reach)
{
	double r = 1;

	for (int m = 0; m < old->nmodels; m++)
		reach[m] = 0;
	if (old->ncascade > 0) {
		for (int i = 0; i < old->ncascade; i++) {
			int m = model_index(old, old->cascade[i].model);
			if (m >= 0)
				reach[m] = r;
			r *= old->cascade[i].escalate;
		}
		return;
	}
	for (int i = 0; i < old->ningress; i++) {
		int g = hx_plan_group_index(old, old->ingress[i].to);
		int m = g >= 0 ? model_index(old, old->groups[g].model) : -1;
		if (m >= 0)
			reach[m] += old->ingress[i].weight;
	}
}

/* The rate P's groups carry at the models' shares REACH (indexes of OLD's
 * models): the least, over the models any traffic reaches, of the model's
 * capacity over its share; *BIND gets that model (-1 when none). */
static double binding_capacity(const hx_plan *p, const hx_plan *old, const double *reach,
			       int *bind)
{
	double best = INFINITY;

	*bind = -1;
	for (int m = 0; m < old->nmodels; m++) {
		double cap = 0;
		if (reach[m] <= 0)
			continue;
		for (int g = 0; g < p->ngroups; g++)
			if (strcmp(p->groups[g].model, old->models[m].name) == 0)
				cap += p->groups[g].capacity_rps * p->groups[g].nreplicas;
		if (cap / reach[m] < best) {
			best = cap / reach[m];
			*bind = m;
		}
	}
	return isfinite(best) ? best : 0;
}

/* A route plan's ingress after replicas stopped: each model keeps its
 * fraction REACH, spread over its kept groups by their old weights times
 * the share of their replicas kept (BEFORE). */
static void route_fractions(hx_plan *p, const hx_plan *old, const double *reach,
			    const int *before)
{
	int n = 0;

	for (int i = 0; i < p->ningress; i++) {
		int g = hx_plan_group_index(p, p->ingress[i].to);
		if (g < 0)
			continue;
		p->ingress[n] = p->ingress[i];
		p->ingress[n++].weight *= (double)p->groups[g].nreplicas / before[g];
	}
	p->ningress = n;
	for (int m = 0; m < old->nmodels; m++) {
		double sum = 0;
		for (int i = 0; i < n; i++)
			if (strcmp(p->groups[hx_plan_group_index(p, p->ingress[i].to)].model,
				   old->models[m].name) == 0)
				sum += p->ingress[i].weight;
		for (int i = 0; i < n && sum > 0; i++)
			if (strcmp(p->groups[hx_plan_group_index(p, p->ingress[i].to)].model,
				   old->models[m].name) == 0)
				p->ingress[i].weight *= reach[m] / sum;
	}
	hx_routes_normalize(p->ingress, p->ningress);
}

int hx_replan_cascade(const hx_plan *old, const hx_cluster *cl, const hx_workload *w,
		      const hx_replan_opts *ro, hx_plan *p, hx_moves *mv, hx_err *err)
{
	double *reach = hx_xcalloc((size_t)old->nmodels + 1, sizeof(double));
	int *before = hx_xcalloc((size_t)p->ngroups + 1, sizeof(int)), bind, rc = 0;
	double k_old, k_new, quality = p->predicted.quality;
	hx_prediction was = p->predicted;

	reach_of(old, reach);
	k_old = binding_capacity(old, old, reach, &bind);
	mv->capacity_before_rps = old->predicted.capacity_rps;
	if (hx_replan_keep(p, cl, mv, before)) {
		rc = hx_errf(err, HX_EINPUT,
			     "replan adapts cascade and route plans of "
			     "aggregated replicas only");
		goto out;
	}
	k_new = binding_capacity(p, old, reach, &bind);
	if (k_new <= 0) {
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "model %s lost every replica; replan keeps a cascade's thresholds and a route plan's fractions and starts no replicas for them",
		    bind >= 0 ? old->models[bind].name : "?");
		goto out;
	}
	if (old->ncascade > 0)
		hx_replan_reroute(p, before);
	else
		route_fractions(p, old, reach, before);
	hx_replan_recorded_predictions(p, cl);
	/* The planner's figure, scaled by what the binding model keeps. */
	p->predicted.capacity_rps =
	    hx_round6(k_old > 0 ? was.capacity_rps * k_new / k_old : k_new);
	p->predicted.quality = quality;
	if (w) {
		mv->rate_rps = w->rate_rps;
		hx_replan_mark_short(p, w);
		if (ro->strict && p->shortage.on) {
			rc = hx_errf(
			    err, HX_EINFEASIBLE,
			    "the kept replicas carry %.3f req/s at the SLO (model %s binds), short of the %.3f req/s the rate of %g req/s needs at %g%% utilization",
			    p->predicted.capacity_rps, old->models[bind].name,
			    w->rate_rps / HX_REPLAN_UTIL, w->rate_rps, HX_REPLAN_UTIL * 100);
			goto out;
		}
	}
	strcpy(p->solver.status, "heuristic");
	mv->routing_only = 1;
	mv->capacity_after_rps = p->predicted.capacity_rps;
	hx_replan_weight_moves(old, p, mv);
out:
	free(reach);
	free(before);
	if (rc) {
		hx_plan_release(p);
		hx_moves_release(mv);
	}
	return rc;
}
