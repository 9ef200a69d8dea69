/* replan of pipeline plans (replan_int.h): each group of a pipeline plan
 * is one node's layer range; the ranges of nodes that survive are the
 * start, the ranges of lost nodes go to free nodes, hx_pipe_adapt moves
 * what the flow needs moved (few nodes), and the max-flow of the new
 * placement re-routes the hops around what is gone. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planners/replan_int.h"

/* The node of CL that group G's first replica sits on, or -1. */
static int group_node(const hx_plan_group *g, const hx_cluster *cl)
{
	if (g->nreplicas < 1 || g->replicas[0].ngpus[0] < 1)
		return -1;
	return hx_replan_node(cl, g->replicas[0].gpus[0][0].node);
}

/* The old group that group G of the new plan continues (same node, same
 * layers), or -1. */
static int old_match(const hx_plan *old, const hx_plan_group *g)
{
	for (int o = 0; o < old->ngroups; o++) {
		const hx_plan_group *x = &old->groups[o];
		if (x->nstages == 1 && x->nreplicas == 1 && x->replicas[0].ngpus[0] > 0 &&
		    strcmp(x->replicas[0].gpus[0][0].node, g->replicas[0].gpus[0][0].node) ==
			0 &&
		    x->stage[0].first == g->stage[0].first &&
		    x->stage[0].last == g->stage[0].last)
			return o;
	}
	return -1;
}

/* Whether NAME is a group of OLD or among the N names of TAKEN. */
static int name_taken(const hx_plan *old, char (*taken)[48], int n, const char *name)
{
	if (hx_plan_group_index(old, name) >= 0)
		return 1;
	for (int i = 0; i < n; i++)
		if (strcmp(taken[i], name) == 0)
			return 1;
	return 0;
}

/* Rename P's routes from the names FROM[i] to TO[i] (N of them; replica
 * ids with "/sK" suffixes in hops). */
static void rename_route(hx_route *rt, char (*from)[48], char (*to)[48], int n, int ingress)
{
	char *ends[2] = {rt->from, rt->to};
	for (int e = ingress ? 1 : 0; e < 2; e++)
		for (int i = 0; i < n; i++) {
			size_t k = strlen(from[i]);
			if (strncmp(ends[e], from[i], k) == 0 &&
			    (ends[e][k] == 0 || ends[e][k] == '/')) {
				char tmp[64];
				snprintf(tmp, sizeof(tmp), "%s%s", to[i], ends[e] + k);
				hx_strlcpy(ends[e], tmp, sizeof(rt->to));
				break;
			}
		}
}

/* Give P's groups that continue one of OLD's its name and replica id, the
 * others fresh names (g<N>, N past OLD's), and record the start moves of
 * those in MV (loading their share of the weights). */
static void rename_groups(hx_plan *p, const hx_plan *old, hx_moves *mv)
{
	int n = p->ngroups, next = old->ngroups;
	char(*gfrom)[48] = hx_xcalloc((size_t)n + 1, 48),
	(*gto)[48] = hx_xcalloc((size_t)n + 1, 48);
	char(*rfrom)[48] = hx_xcalloc((size_t)n + 1, 48),
	(*rto)[48] = hx_xcalloc((size_t)n + 1, 48);

	for (int g = 0; g < n; g++) {
		int o = old_match(old, &p->groups[g]);
		hx_strlcpy(gfrom[g], p->groups[g].name, 48);
		hx_strlcpy(rfrom[g], p->groups[g].replicas[0].id, 48);
		if (o >= 0) {
			hx_strlcpy(gto[g], old->groups[o].name, 48);
			hx_strlcpy(rto[g], old->groups[o].replicas[0].id, 48);
		}
	}
	for (int g = 0; g < n; g++) {
		hx_plan_group *grp = &p->groups[g];
		hx_move *m;
		if (gto[g][0])
			continue;
		do
			snprintf(gto[g], 48, "g%d", next++);
		while (name_taken(old, gto, g, gto[g]) ||
		       name_taken(old, gto + g + 1, n - g - 1, gto[g]));
		snprintf(rto[g], 48, "%sr0", gto[g]);
		m = hx_replan_move(mv, HX_MOVE_START);
		hx_strlcpy(m->replica, rto[g], sizeof(m->replica));
		hx_strlcpy(m->group, gto[g], sizeof(m->group));
		m->gpus = hx_replan_replica_gpus(grp, &grp->replicas[0]);
		m->bytes = hx_model_weight_bytes(&p->models[0], grp->wdt) *
			   (grp->stage[0].last - grp->stage[0].first) / p->models[0].a.layers;
		mv->bytes_to_load += m->bytes;
		mv->started++;
	}
	for (int g = 0; g < n; g++) {
		hx_strlcpy(p->groups[g].name, gto[g], sizeof(p->groups[g].name));
		hx_strlcpy(p->groups[g].replicas[0].id, rto[g],
			   sizeof(p->groups[g].replicas[0].id));
	}
	for (int i = 0; i < p->ningress; i++)
		rename_route(&p->ingress[i], gfrom, gto, n, 1);
	for (int i = 0; i < p->nhops; i++)
		rename_route(&p->hops[i], rfrom, rto, n, 0);
	free(gfrom);
	free(gto);
	free(rfrom);
	free(rto);
}

/* Stop moves for the replicas of OLD that P does not keep (same name, same
 * node and layers); WHY says the node is gone or the fragment carries no
 * flow in the new placement. */
static void stop_moves(const hx_plan *old, const hx_plan *p, const hx_cluster *cl, hx_moves *mv)
{
	for (int o = 0; o < old->ngroups; o++) {
		const hx_plan_group *x = &old->groups[o];
		int g = hx_plan_group_index(p, x->name);
		for (int r = 0; r < x->nreplicas; r++) {
			char why[200];
			hx_move *m;
			mv->replicas_before++;
			if (g >= 0 && old_match(old, &p->groups[g]) == o) {
				mv->kept++;
				continue;
			}
			if (hx_replan_alive(x, &x->replicas[r], cl, why, sizeof(why)))
				snprintf(why, sizeof(why),
					 "its layers carry no flow past the nodes lost");
			m = hx_replan_move(mv, HX_MOVE_STOP);
			hx_strlcpy(m->replica, x->replicas[r].id, sizeof(m->replica));
			hx_strlcpy(m->group, x->name, sizeof(m->group));
			hx_strlcpy(m->why, why, sizeof(m->why));
			m->gpus = hx_replan_replica_gpus(x, &x->replicas[r]);
			mv->stopped++;
		}
	}
}

int hx_replan_pipeline(const hx_plan *old, const hx_cluster *cl, const hx_workload *w,
		       const hx_problem *pb0, const hx_replan_opts *ro, hx_plan *p,
		       hx_moves *mv, hx_err *err)
{
	hx_problem pb = *pb0;
	hx_moves starts = {0};
	int n = cl->nnodes, nlost = 0, rc;
	int *first = hx_xmalloc(((size_t)n + 1) * sizeof(int)),
	    *last = hx_xmalloc(((size_t)n + 1) * sizeof(int));
	int *lf = hx_xcalloc((size_t)old->ngroups + 1, sizeof(int)),
	    *ll = hx_xcalloc((size_t)old->ngroups + 1, sizeof(int));

	memset(mv, 0, sizeof(*mv));
	hx_plan_init(p);
	if (!w) {
		rc =
		    hx_errf(err, HX_EINPUT,
			    "replan of a pipeline plan needs the workload (-w): its flow is in "
			    "tokens/s at the workload's lengths and SLO");
		goto out;
	}
	for (int i = 0; i < n; i++)
		first[i] = last[i] = -1;
	/* Surviving fragments stay; the lost ones are to be placed again. */
	for (int g = 0; g < old->ngroups; g++) {
		const hx_plan_group *x = &old->groups[g];
		char why[200];
		int ni = group_node(x, cl);
		if (x->nstages != 1 || x->nreplicas != 1) {
			rc = hx_errf(
			    err, HX_EINPUT,
			    "group \"%s\": replan takes pipeline plans of one stage and "
			    "one replica per group, as plan --mode pipeline writes them",
			    x->name);
			goto out;
		}
		if (ni >= 0 && first[ni] < 0 &&
		    hx_replan_alive(x, &x->replicas[0], cl, why, sizeof(why))) {
			first[ni] = x->stage[0].first;
			last[ni] = x->stage[0].last;
			continue;
		}
		lf[nlost] = x->stage[0].first;
		ll[nlost++] = x->stage[0].last;
	}
	pb.cluster = cl;
	pb.workload = w;
	if ((rc = ro->pipe(&pb, first, last, lf, ll, nlost, p, err)))
		goto out;
	/* The kept groups get their old names back, then the stops (found by
	 * those names) go first in the moves, the starts after them. */
	rename_groups(p, old, &starts);
	stop_moves(old, p, cl, mv);
	for (int i = 0; i < starts.n; i++)
		*hx_replan_move(mv, HX_MOVE_START) = starts.m[i];
	mv->started = starts.started;
	mv->bytes_to_load = starts.bytes_to_load;
	mv->capacity_before_rps = old->predicted.capacity_rps;
	mv->rate_rps = w->rate_rps;
	mv->routing_only = mv->started == 0;
	mv->capacity_after_rps = p->predicted.capacity_rps;
	hx_replan_mark_short(p, w);
	if (ro->strict && p->shortage.on)
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "the nodes left carry %.3f req/s at the SLO with the lost layers placed again, short of the %.3f req/s the rate of %g req/s needs at %g%% utilization",
		    p->predicted.capacity_rps, w->rate_rps / HX_REPLAN_UTIL, w->rate_rps,
		    HX_REPLAN_UTIL * 100);
out:
	free(first);
	free(last);
	free(lf);
	free(ll);
	hx_moves_release(&starts);
	if (rc) {
		hx_plan_release(p);
		hx_moves_release(mv);
	}
	return rc;
}
