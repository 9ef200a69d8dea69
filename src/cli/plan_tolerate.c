/* plan --tolerate-failures K: insure a plan against the loss of any K of
 * its nodes.  The plain plan is judged by the evaluation check
 * --tolerate-failures runs (hx_tolerate_eval: the same sets, the same
 * re-routing, the same margin), so a plan this writes passes that check by
 * construction.  While a set of lost nodes leaves the plan short, the worst
 * of them (least capacity kept) is insured: the plan is replanned on the
 * cluster without that set, as replan does, starting the cheapest new
 * replicas (then the fewest) on the GPUs it leaves free that bring the kept
 * capacity to the rate at replan's margin, and those replicas join the
 * plan on the full cluster, serving beside the others.  A composed plan
 * rents whole nodes, which per-GPU prices miss: the spare GPUs of the
 * nodes it rents cost nothing more, and each round tries them alone and
 * with each GPU type's unrented nodes, keeping the cheapest rent.  Adding
 * replicas never lowers what a set keeps, so each round settles at least
 * the set it insures (for K > 1 the sampled sets follow the nodes used, so
 * new ones may appear); the rounds stop when every set holds, or fail
 * (exit 3, the set named) when the free GPUs add nothing, after
 * HX_INSURE_ROUNDS or at the deadline.
 * Why not raise the planner's rate instead: a cheapest plan for a higher
 * rate packs onto the same few nodes, and losing one of them still loses
 * most of it; what a failure needs is capacity elsewhere, which is what
 * replan places. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "model/cost.h"
#include "planners/replan.h"
#include "sim/sim.h"

/* The most rounds of insurance: each settles one set at least, and a
 * check takes at most 64 sets. */
#define HX_INSURE_ROUNDS 64

/* The ingress after groups from index FIRST on joined P: each key (a
 * length class, or "" for all traffic) keeps its routes to the groups it
 * had, scaled down to make room, and sends each new group the share of
 * the capacity it adds, so the plain plan's split stays as it was among
 * its own groups. */
static void route_added(hx_plan *p, int first)
{
	double kept = 0, add = 0;
	int n0 = p->ningress, nkeys = 0;
	char(*keys)[64] = hx_xcalloc((size_t)n0 + 1, sizeof(*keys));

	for (int g = 0; g < p->ngroups; g++)
		*(g < first ? &kept : &add) +=
		    p->groups[g].capacity_rps * p->groups[g].nreplicas;
	for (int i = 0; i < n0; i++) {
		int seen = 0;
		for (int k = 0; k < nkeys && !seen; k++)
			seen = strcmp(keys[k], p->ingress[i].from) == 0;
		if (!seen)
			hx_strlcpy(keys[nkeys++], p->ingress[i].from, sizeof(keys[0]));
	}
	if (add > 0 && kept + add > 0) {
		for (int i = 0; i < n0; i++)
			p->ingress[i].weight *= kept / (kept + add);
		for (int k = 0; k < nkeys; k++)
			for (int g = first; g < p->ngroups; g++) {
				hx_route *rt = hx_plan_add_route(&p->ingress, &p->ningress);
				hx_strlcpy(rt->from, keys[k], sizeof(rt->from));
				hx_strlcpy(rt->to, p->groups[g].name, sizeof(rt->to));
				rt->weight = p->groups[g].capacity_rps *
					     p->groups[g].nreplicas / (kept + add);
			}
	}
	hx_replan_normalize_per_key(p->ingress, p->ningress);
	free(keys);
}

/* Move the groups of Q that hold replicas MV started into P, each under a
 * group name P lacks and replica ids of that name.  Returns how many. */
static int adopt_started(hx_plan *p, hx_plan *q, const hx_moves *mv)
{
	int n = 0;

	for (int g = 0; g < q->ngroups; g++) {
		hx_plan_group *src = &q->groups[g], *dst;
		int started = 0;
		char name[48];
		for (int i = 0; i < mv->n && !started; i++)
			started = mv->m[i].kind == HX_MOVE_START &&
				  strcmp(mv->m[i].group, src->name) == 0;
		if (!started)
			continue;
		for (int k = p->ngroups;; k++) {
			snprintf(name, sizeof(name), "g%d", k);
			if (hx_plan_group_index(p, name) < 0)
				break;
		}
		dst = hx_plan_add_group(p);
		*dst = *src;
		src->replicas = NULL; /* moved, with the stages */
		src->stage = NULL;
		src->nreplicas = 0;
		hx_strlcpy(dst->name, name, sizeof(dst->name));
		for (int r = 0; r < dst->nreplicas; r++) {
			char id[128];
			snprintf(id, sizeof(id), "%sr%d", name, r);
			hx_strlcpy(dst->replicas[r].id, id, sizeof(dst->replicas[r].id));
		}
		n++;
	}
	return n;
}

/* P's predictions again after groups from FIRST on joined it (PB's cluster:
 * offers expanded, OWNED as loaded); a composed plan's price is its rent,
 * as compose prices it. */
static int refinish(const hx_problem *pb, const hx_cluster *owned, hx_plan *p, int first,
		    hx_err *err)
{
	double objective = p->solver.objective;
	const hx_workload *w = pb->workload;
	int rc;

	/* The new groups' capacities first: the routes follow them. */
	if ((rc = hx_plan_finish(pb, p, 0, err)))
		return rc;
	route_added(p, first);
	if ((rc = hx_plan_finish(pb, p, 0, err)))
		return rc;
	p->solver.objective = objective; /* the plain plan's solve */
	/* Substitutions count this plan's GPUs against the preferred plan's. */
	for (int i = 0; i < p->spill.nsubst; i++)
		p->spill.subst[i].gpus = hx_plan_gpus_of(p, p->spill.subst[i].gpu);
	/* Kept replicas and insurance are not one optimization's result. */
	strcpy(p->solver.status, "heuristic");
	if (strcmp(p->mode, "compose") != 0)
		return 0;
	hx_plan_price_rent(p, pb->cluster, owned, w,
			   fmin(w->rate_rps, p->predicted.capacity_rps));
	if (p->spill.nsubst > 0)
		p->spill.usd_per_hour_delta =
		    hx_round6(p->predicted.usd_per_hour - p->spill.preferred_usd_per_hour);
	return 0;
}

/* The refusal when set WORST of T cannot be insured: WHY says what
 * stopped the rounds. */
static int cannot(const hx_problem *pb, const hx_tolerate *t, int k, const char *why,
		  hx_err *err)
{
	const hx_workload *w = pb->workload;
	hx_buf b = {0};
	int rc;

	hx_tolerate_set_name(&b, pb->cluster, t, t->worst);
	rc = hx_errf(err, HX_EINFEASIBLE,
		     "no plan found that tolerates the loss of any %d node%s: after losing %s "
		     "the replicas carry %.3f req/s at the SLO, short of the %.3f req/s the "
		     "rate of %g req/s needs at %g%% utilization, and %s",
		     k, k > 1 ? "s" : "", b.s, t->cap_rps[t->worst],
		     w->rate_rps / HX_REPLAN_UTIL, w->rate_rps, HX_REPLAN_UTIL * 100, why);
	hx_buf_release(&b);
	return rc;
}

/* Start the replicas that bring P back to the rate on PB's cluster less
 * the nodes GONE marks, and add them to P.  *ADDED: how many groups joined
 * (0: the free GPUs hold none that help); *SHORT: whether they fall short
 * of the rate still. */
static int insure_on(const hx_problem *pb, const hx_plan_opts *po0, const hx_cluster *owned,
		     const int *gone, double deadline, hx_plan *p, int *added, int *short_,
		     hx_err *err)
{
	int rc, first = p->ngroups;
	hx_plan_opts po = *po0;
	hx_replan_opts ro = {0, NULL, 0, 1};
	hx_cluster less;
	hx_plan q;
	hx_moves mv;

	/* replan's MILP is no part of --lp's output. */
	po.lp_path = NULL;
	po.lp_text = NULL;
	po.time_limit_s = deadline > 0 ? hx_plan_time_left(deadline) : 0;
	*added = 0;
	*short_ = 1;
	hx_cluster_without(pb->cluster, gone, &less);
	if (strcmp(p->mode, "compose") == 0) {
		/* Nodes are rented whole: the GPUs a rented node has spare
		 * cost nothing more (owned nodes cost nothing already). */
		char *used = hx_xcalloc((size_t)less.nnodes + 1, 1);
		hx_plan_nodes_used(p, &less, used);
		for (int i = 0; i < less.nnodes; i++)
			if (used[i])
				less.nodes[i].usd_per_hour = 0;
		free(used);
	}
	rc = hx_replan(p, &less, pb->workload, pb, &po, &ro, &q, &mv, err);
	if (rc == HX_EINFEASIBLE) {
		/* Nothing survives and nothing fits: no group to add. */
		err->code = 0;
		err->msg[0] = 0;
		rc = 0;
	} else if (rc == 0) {
		*short_ = q.shortage.on;
		*added = adopt_started(p, &q, &mv);
		hx_plan_release(&q);
		hx_moves_release(&mv);
		if (*added)
			rc = refinish(pb, owned, p, first, err);
	}
	hx_cluster_release(&less);
	return rc;
}

/* The GPU types of PB's cluster's offer nodes that P does not use, into
 * TYPES (each once, in node order); returns how many. */
static int unused_offer_types(const hx_problem *pb, const hx_plan *p, const char **types)
{
	const hx_cluster *cl = pb->cluster;
	char *used = hx_xcalloc((size_t)cl->nnodes + 1, 1);
	int n = 0, j;

	hx_plan_nodes_used(p, cl, used);
	for (int i = 0; i < cl->nnodes; i++) {
		int seen = 0;
		if (used[i] || hx_offer_node(cl->nodes[i].name, &j) < 0)
			continue;
		for (int k = 0; k < n && !seen; k++)
			seen = strcmp(types[k], cl->nodes[i].gpu.name) == 0;
		if (!seen)
			types[n++] = cl->nodes[i].gpu.name;
	}
	free(used);
	return n;
}

/* One round: start the replicas that bring set WORST of T (on PB's
 * cluster) to the rate, and add them to P.  A composed plan rents whole
 * nodes, which replan's per-GPU prices do not see: each way to insure is
 * tried (the spare GPUs of what it rents alone, or with the unrented nodes
 * of one GPU type), and the cheapest rent that settles the set kept; none
 * settling it, all the free GPUs at once.  *ADDED: how many groups joined
 * (0: the free GPUs hold none that help). */
static int insure_set(const hx_problem *pb, const hx_plan_opts *po, const hx_cluster *owned,
		      const hx_tolerate *t, double deadline, hx_plan *p, int *added,
		      hx_err *err)
{
	const hx_cluster *cl = pb->cluster;
	int *gone = hx_xcalloc((size_t)cl->nnodes + 1, sizeof(int)), rc = 0, short_, ntypes = 0,
	    have = 0, j;
	const char **types = hx_xcalloc((size_t)cl->nnodes + 1, sizeof(char *));
	char *used = hx_xcalloc((size_t)cl->nnodes + 1, 1);
	hx_plan best;

	if (strcmp(p->mode, "compose") == 0)
		ntypes = unused_offer_types(pb, p, types);
	hx_plan_nodes_used(p, cl, used);
	for (int opt = -1; opt < ntypes && ntypes > 0; opt++) {
		hx_plan q;
		int n;
		/* The unrented offer nodes but those of type OPT go too. */
		for (int i = 0; i < cl->nnodes; i++)
			gone[i] = !used[i] && hx_offer_node(cl->nodes[i].name, &j) >= 0 &&
				  (opt < 0 || strcmp(cl->nodes[i].gpu.name, types[opt]) != 0);
		for (int i = 0; i < t->k; i++)
			gone[t->idx[t->worst * t->k + i]] = 1;
		rc = hx_plan_copy(p, &q, err);
		if (rc ||
		    (rc = insure_on(pb, po, owned, gone, deadline, &q, &n, &short_, err))) {
			hx_plan_release(&q);
			goto out;
		}
		if (n > 0 && !short_ &&
		    (!have || q.predicted.usd_per_hour < best.predicted.usd_per_hour)) {
			if (have)
				hx_plan_release(&best);
			best = q;
			have = 1;
			*added = n;
		} else {
			hx_plan_release(&q);
		}
	}
	if (have) {
		hx_plan_release(p);
		*p = best;
		goto out;
	}
	memset(gone, 0, (size_t)cl->nnodes * sizeof(int));
	for (int i = 0; i < t->k; i++)
		gone[t->idx[t->worst * t->k + i]] = 1;
	rc = insure_on(pb, po, owned, gone, deadline, p, added, &short_, err);
out:
	free(gone);
	free(types);
	free(used);
	return rc;
}

/* Say on stderr what the insurance bought and costs (T: the last round's
 * evaluation), and record it in P. */
static void record(const char *cmd, hx_plan *p, const hx_tolerate *t, int k, uint64_t seed,
		   int rounds, int plain_gpus, double plain_usd)
{
	hx_plan_tolerate *x = &p->tolerate;

	x->on = 1;
	x->k = k;
	x->seed = k > 1 ? seed : 0;
	x->sets_checked = t->nsets;
	x->rounds = rounds;
	x->plain_gpus = plain_gpus;
	x->plain_usd_per_hour = hx_round6(plain_usd);
	x->gpus = hx_plan_gpus_used(p);
	x->usd_per_hour = p->predicted.usd_per_hour;
	x->insurance_gpus = x->gpus - plain_gpus;
	x->insurance_usd_per_hour = hx_round6(x->usd_per_hour - x->plain_usd_per_hour);
	fprintf(stderr,
		"hexplan: %s: tolerate-failures %d: %d sets checked, 0 fail after %d round%s; "
		"insurance %+.2f $/hour, %+d GPU%s (plain plan $%.2f/hour on %d GPU%s, insured "
		"$%.2f/hour on %d)\n",
		cmd, k, t->nsets, rounds, rounds == 1 ? "" : "s", x->insurance_usd_per_hour,
		x->insurance_gpus, abs(x->insurance_gpus) == 1 ? "" : "s",
		x->plain_usd_per_hour, plain_gpus, plain_gpus == 1 ? "" : "s", x->usd_per_hour,
		x->gpus);
}

int hx_plan_insure(const char *cmd, const hx_problem *pb, const hx_cluster *owned,
		   const hx_plan_opts *po, int k, double deadline, hx_plan *p, hx_err *err)
{
	const int plain_gpus = hx_plan_gpus_used(p);
	const double plain_usd = p->predicted.usd_per_hour;
	hx_tolerate t;
	int rc, rounds = 0, added;

	for (;;) {
		if ((rc = hx_tolerate_eval(pb, p, k, pb->seed, &t, err)))
			return rc;
		if (t.nfail == 0)
			break;
		if (rounds == HX_INSURE_ROUNDS || hx_past(deadline)) {
			char why[96];
			if (hx_past(deadline))
				snprintf(why, sizeof(why),
					 "the time limit came after %d round%s", rounds,
					 rounds == 1 ? "" : "s");
			else
				snprintf(why, sizeof(why),
					 "%d rounds of insurance did not settle it", rounds);
			rc = cannot(pb, &t, k, why, err);
			goto out;
		}
		if ((rc = insure_set(pb, po, owned, &t, deadline, p, &added, err)))
			goto out;
		if (!added) {
			rc = cannot(pb, &t, k, "the GPUs the plan leaves free add no replica",
				    err);
			goto out;
		}
		rounds++;
		hx_tolerate_release(&t);
	}
	if (rounds > 0) {
		/* The plain plan's simulated figure is not this plan's: simulate
		 * it whole, or record none when time is out. */
		double rps;
		memset(&p->simulated, 0, sizeof(p->simulated));
		if ((rc = hx_plan_sim_capacity(pb, p, deadline, &rps, err)) == 0)
			hx_plan_set_simulated(p, pb, "plan", hx_round6(rps), HX_CAP_REQUESTS);
		else if (rc == HX_ELIMIT) {
			err->code = 0;
			err->msg[0] = 0;
			rc = 0;
		} else
			goto out;
	}
	record(cmd, p, &t, k, pb->seed, rounds, plain_gpus, plain_usd);
out:
	hx_tolerate_release(&t);
	return rc;
}

int hx_tolerate_cluster(const char *cmd, const hx_cluster *cl, int compose, long k,
			hx_cluster *x, hx_err *err)
{
	int rc;

	if (compose) {
		/* Owned nodes free at the margin, as compose prices them. */
		if ((rc = hx_cluster_expand_offers(cl, 1, x, err)))
			return rc;
	} else {
		/* Its nodes, without the offers it does not rent. */
		int *none = hx_xcalloc((size_t)cl->nnodes + 1, sizeof(int));
		hx_cluster_without(cl, none, x);
		free(none);
	}
	rc = 0;
	if (k >= x->nnodes) {
		rc = hx_cli_usage_error(
		    cmd,
		    "--tolerate-failures must be less than the cluster's %d nodes, not %ld",
		    x->nnodes, k);
		hx_cluster_release(x);
	}
	return rc;
}
