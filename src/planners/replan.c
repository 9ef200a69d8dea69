/* replan: see replan.h. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planners/candidates.h"
#include "solver/milp.h"
#include "planners/replan_int.h"

void hx_moves_release(hx_moves *mv)
{
	free(mv->m);
	memset(mv, 0, sizeof(*mv));
}

hx_move *hx_replan_move(hx_moves *mv, int kind)
{
	hx_move *m;
	mv->m = hx_xrealloc(mv->m, (size_t)(mv->n + 1) * sizeof(*mv->m));
	m = &mv->m[mv->n++];
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	return m;
}

int hx_replan_node(const hx_cluster *c, const char *name)
{
	for (int i = 0; i < c->nnodes; i++)
		if (strcmp(c->nodes[i].name, name) == 0)
			return i;
	return -1;
}

int hx_replan_replica_gpus(const hx_plan_group *g, const hx_plan_replica *r)
{
	int n = 0;
	for (int s = 0; s < g->nstages; s++)
		n += r->ngpus[s];
	return n;
}

/* Whether replica R of G still has all its GPUs in CL; WHY says what is
 * gone when not. */
int hx_replan_alive(const hx_plan_group *g, const hx_plan_replica *r, const hx_cluster *cl,
		    char *why, size_t nwhy)
{
	for (int s = 0; s < g->nstages; s++)
		for (int k = 0; k < r->ngpus[s]; k++) {
			const hx_gpu_ref *ref = &r->gpus[s][k];
			int ni = hx_replan_node(cl, ref->node);
			if (ni < 0) {
				snprintf(why, nwhy, "node \"%s\" is gone", ref->node);
				return 0;
			}
			if (ref->index >= cl->nodes[ni].count) {
				snprintf(why, nwhy, "GPU \"%s:%d\" is gone (the node has %d)",
					 ref->node, ref->index, cl->nodes[ni].count);
				return 0;
			}
			if (strcmp(cl->nodes[ni].gpu.name, g->stage[s].gpu) != 0) {
				snprintf(why, nwhy, "node \"%s\" now has %s GPUs, not %s",
					 ref->node, cl->nodes[ni].gpu.name, g->stage[s].gpu);
				return 0;
			}
		}
	return 1;
}

/* Drop routes of LIST whose endpoint (TO for ingress groups, FROM/TO
 * replica ids for kv) P no longer has. */
static int has_replica(const hx_plan *p, const char *id)
{
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++)
			if (strcmp(p->groups[g].replicas[r].id, id) == 0)
				return 1;
	return 0;
}

void hx_replan_normalize_per_key(hx_route *list, int n)
{
	char *done = hx_xcalloc((size_t)n + 1, 1);
	hx_route *tmp = hx_xcalloc((size_t)n + 1, sizeof(*tmp));
	int *at = hx_xcalloc((size_t)n + 1, sizeof(int));

	for (int i = 0; i < n; i++) {
		int k = 0;
		if (done[i])
			continue;
		for (int j = i; j < n; j++)
			if (!done[j] && strcmp(list[j].from, list[i].from) == 0) {
				done[j] = 1;
				at[k] = j;
				tmp[k++] = list[j];
			}
		hx_routes_normalize(tmp, k);
		for (int j = 0; j < k; j++)
			list[at[j]].weight = tmp[j].weight;
	}
	free(done);
	free(tmp);
	free(at);
}

static double total_capacity(const hx_plan *p)
{
	double pre = 0, dec = 0, agg = 0;
	for (int g = 0; g < p->ngroups; g++) {
		double c = p->groups[g].capacity_rps * p->groups[g].nreplicas;
		if (p->groups[g].role == HX_ROLE_PREFILL)
			pre += c;
		else if (p->groups[g].role == HX_ROLE_DECODE)
			dec += c;
		else
			agg += c;
	}
	return agg + fmin(pre, dec);
}

/* Ingress after replicas stopped: each route's weight scaled by the share of
 * its group's replicas kept (KEPT/BEFORE per group index of NEW), per class;
 * a class left with no weight goes to every serving group by capacity. */
void hx_replan_reroute(hx_plan *p, const int *before)
{
	int n = 0, nkeys = 0;
	char(*keys)[64] = hx_xcalloc((size_t)p->ningress + 1, sizeof(*keys));

	/* The keys (classes, or "" for all traffic) routed before. */
	for (int i = 0; i < p->ningress; i++) {
		int seen = 0;
		for (int k = 0; k < nkeys && !seen; k++)
			seen = strcmp(keys[k], p->ingress[i].from) == 0;
		if (!seen)
			hx_strlcpy(keys[nkeys++], p->ingress[i].from, sizeof(keys[0]));
	}
	for (int i = 0; i < p->ningress; i++) {
		int g = hx_plan_group_index(p, p->ingress[i].to);
		if (g < 0 || p->groups[g].nreplicas == 0)
			continue;
		p->ingress[n] = p->ingress[i];
		p->ingress[n].weight *= (double)p->groups[g].nreplicas / before[g];
		n++;
	}
	p->ningress = n;
	/* A key that lost every route goes to every serving group by capacity. */
	for (int k = 0; k < nkeys; k++) {
		double sum = 0;
		for (int i = 0; i < p->ningress; i++)
			if (strcmp(p->ingress[i].from, keys[k]) == 0)
				sum += p->ingress[i].weight;
		if (sum > 0)
			continue;
		for (int g = 0; g < p->ngroups; g++) {
			hx_route *rt;
			if (p->groups[g].role == HX_ROLE_DECODE || p->groups[g].nreplicas == 0)
				continue;
			rt = hx_plan_add_route(&p->ingress, &p->ningress);
			hx_strlcpy(rt->from, keys[k], sizeof(rt->from));
			hx_strlcpy(rt->to, p->groups[g].name, sizeof(rt->to));
			rt->weight =
			    fmax(p->groups[g].capacity_rps, 1e-9) * p->groups[g].nreplicas;
		}
	}
	free(keys);
	hx_replan_normalize_per_key(p->ingress, p->ningress);
}

/* KV routes after replicas stopped: routes to or from a stopped replica
 * dropped; a prefill replica left with none sends to every decode replica
 * in proportion to capacity. */
static void reroute_kv(hx_plan *p, const hx_cluster *cl)
{
	int n = 0;
	for (int i = 0; i < p->nkv; i++)
		if (has_replica(p, p->kv[i].from) && has_replica(p, p->kv[i].to))
			p->kv[n++] = p->kv[i];
	p->nkv = n;
	for (int g = 0; g < p->ngroups; g++) {
		if (p->groups[g].role != HX_ROLE_PREFILL)
			continue;
		for (int r = 0; r < p->groups[g].nreplicas; r++) {
			const hx_plan_replica *pr = &p->groups[g].replicas[r];
			int has = 0;
			for (int i = 0; i < p->nkv && !has; i++)
				has = strcmp(p->kv[i].from, pr->id) == 0;
			if (has)
				continue;
			for (int d = 0; d < p->ngroups; d++) {
				if (p->groups[d].role != HX_ROLE_DECODE)
					continue;
				for (int q = 0; q < p->groups[d].nreplicas; q++) {
					const hx_plan_replica *dr = &p->groups[d].replicas[q];
					int a = hx_replan_node(cl, pr->gpus[0][0].node);
					int b = hx_replan_node(cl, dr->gpus[0][0].node);
					hx_route *rt = hx_plan_add_route(&p->kv, &p->nkv);
					hx_linkspec l =
					    a == b
						? (hx_linkspec){cl->nodes[a].gpu.intra_bw_gb_s *
								    8,
								cl->nodes[a]
									.gpu.intra_latency_us *
								    1e-3}
						: hx_cluster_link(cl, a, b);
					hx_strlcpy(rt->from, pr->id, sizeof(rt->from));
					hx_strlcpy(rt->to, dr->id, sizeof(rt->to));
					rt->weight = fmax(p->groups[d].capacity_rps, 1e-9);
					rt->bw_gbps = l.bw_gbps;
					rt->latency_ms = l.latency_ms;
				}
			}
		}
	}
	hx_replan_normalize_per_key(p->kv, p->nkv);
}

/* Disaggregated routes after roles changed: ingress to the groups that take
 * requests (prefill, aggregated) by capacity; kv routes only from prefill to
 * decode replicas, a prefill replica without one sending to every decode
 * replica by capacity. */
static void reroute_roles(hx_plan *p, const hx_cluster *cl)
{
	int n = 0;
	double total = 0;

	free(p->ingress);
	p->ingress = NULL;
	p->ningress = 0;
	for (int g = 0; g < p->ngroups; g++)
		if (p->groups[g].role != HX_ROLE_DECODE)
			total += p->groups[g].capacity_rps * p->groups[g].nreplicas;
	for (int g = 0; g < p->ngroups; g++) {
		hx_route *rt;
		if (p->groups[g].role == HX_ROLE_DECODE)
			continue;
		rt = hx_plan_add_route(&p->ingress, &p->ningress);
		hx_strlcpy(rt->to, p->groups[g].name, sizeof(rt->to));
		rt->weight =
		    total > 0 ? p->groups[g].capacity_rps * p->groups[g].nreplicas / total : 1;
	}
	hx_routes_normalize(p->ingress, p->ningress);
	for (int i = 0; i < p->nkv; i++) {
		int fg = -1, tg = -1;
		for (int g = 0; g < p->ngroups; g++)
			for (int r = 0; r < p->groups[g].nreplicas; r++) {
				if (strcmp(p->groups[g].replicas[r].id, p->kv[i].from) == 0)
					fg = g;
				if (strcmp(p->groups[g].replicas[r].id, p->kv[i].to) == 0)
					tg = g;
			}
		if (fg >= 0 && tg >= 0 && p->groups[fg].role == HX_ROLE_PREFILL &&
		    p->groups[tg].role == HX_ROLE_DECODE)
			p->kv[n++] = p->kv[i];
	}
	p->nkv = n;
	reroute_kv(p, cl);
}

/* Flip the role of group G (prefill <-> decode) and re-route; capacities
 * and predictions at PB's workload. */
static int flip(hx_plan *p, int g, const hx_cluster *cl, const hx_problem *pb, hx_err *err)
{
	int rc;

	p->groups[g].role =
	    p->groups[g].role == HX_ROLE_PREFILL ? HX_ROLE_DECODE : HX_ROLE_PREFILL;
	if ((rc = hx_plan_finish(pb, p, 0, err)))
		return rc;
	reroute_roles(p, cl);
	return hx_plan_finish(pb, p, 0, err);
}

/* What disaggregated plan P carries at PB's workload: its aggregated
 * groups' capacity plus what its prefill and decode replicas pass through
 * the KV links (hx_replan_kv_flow), in *CAP.  Returns 0 or an error. */
static int link_capacity(hx_plan *p, const hx_cluster *cl, const hx_problem *pb, double *cap,
			 hx_err *err)
{
	double flow = 0;
	int rc = hx_replan_kv_flow(p, cl, pb->workload, 0, &flow, err);

	*cap = flow;
	for (int g = 0; g < p->ngroups; g++)
		if (p->groups[g].role == HX_ROLE_AGGREGATED)
			*cap += p->groups[g].capacity_rps * p->groups[g].nreplicas;
	*cap = fmin(*cap, total_capacity(p));
	return rc;
}

/* Flip whole groups' roles, the one that raises the capacity (through the
 * KV links) most at a time, while the plan falls short of NEED req/s and
 * a flip helps. */
static int flip_roles(hx_plan *p, const hx_cluster *cl, const hx_problem *pb, double need,
		      hx_moves *mv, hx_err *err)
{
	double cap = 0;
	int rc = link_capacity(p, cl, pb, &cap, err);

	while (!rc && cap < need) {
		double best_cap = cap * (1 + 1e-9) + 1e-9, c = 0;
		int best = -1;
		for (int g = 0; g < p->ngroups && !rc; g++) {
			hx_plan t;
			char *text;
			if (p->groups[g].role == HX_ROLE_AGGREGATED)
				continue;
			text = hx_plan_dump(p);
			rc = hx_plan_parse_text(&t, text, "plan", err);
			free(text);
			if (rc)
				break;
			if (!(rc = flip(&t, g, cl, pb, err)) &&
			    !(rc = link_capacity(&t, cl, pb, &c, err)) && c > best_cap) {
				best_cap = c;
				best = g;
			}
			hx_plan_release(&t);
		}
		if (rc || best < 0)
			break;
		cap = best_cap;
		if ((rc = flip(p, best, cl, pb, err)))
			break;
		for (int r = 0; r < p->groups[best].nreplicas; r++) {
			hx_move *m = hx_replan_move(mv, HX_MOVE_ROLE);
			hx_strlcpy(m->replica, p->groups[best].replicas[r].id,
				   sizeof(m->replica));
			hx_strlcpy(m->group, p->groups[best].name, sizeof(m->group));
			snprintf(m->why, sizeof(m->why), "%s -> %s",
				 p->groups[best].role == HX_ROLE_PREFILL ? "decode" : "prefill",
				 hx_role_name(p->groups[best].role));
			m->gpus = hx_replan_replica_gpus(&p->groups[best],
							 &p->groups[best].replicas[r]);
			mv->roles_flipped++;
		}
	}
	return rc;
}

/* A group name and replica ids unused in P. */
static void fresh_group_name(const hx_plan *p, char *name, size_t n)
{
	for (int k = p->ngroups;; k++) {
		snprintf(name, n, "g%d", k);
		if (hx_plan_group_index(p, name) < 0)
			return;
	}
}

/* The GPUs of CL's nodes that P leaves free: FREEIDX[i] lists node i's in
 * index order (allocated here, NFREE[i] of them), FC (a copy of CL's nodes)
 * and FREE_GPUS count them. */
static void find_free(const hx_plan *p, const hx_cluster *cl, hx_cluster *fcp, int **freeidx,
		      int *nfree, int *free_gpus)
{
	for (int i = 0; i < cl->nnodes; i++) {
		char *used = hx_xcalloc((size_t)cl->nodes[i].count + 1, 1);
		for (int g = 0; g < p->ngroups; g++)
			for (int r = 0; r < p->groups[g].nreplicas; r++)
				for (int st = 0; st < p->groups[g].nstages; st++)
					for (int k = 0; k < p->groups[g].replicas[r].ngpus[st];
					     k++) {
						const hx_gpu_ref *ref =
						    &p->groups[g].replicas[r].gpus[st][k];
						if (strcmp(ref->node, cl->nodes[i].name) == 0 &&
						    ref->index < cl->nodes[i].count)
							used[ref->index] = 1;
					}
		freeidx[i] = hx_xcalloc((size_t)cl->nodes[i].count + 1, sizeof(int));
		for (int k = 0; k < cl->nodes[i].count; k++)
			if (!used[k])
				freeidx[i][nfree[i]++] = k;
		fcp->nodes[i].count = nfree[i];
		free_gpus[i] = nfree[i];
		free(used);
	}
}

/* Adopt the groups of the scratch plan TMP into P under fresh names, with
 * the real GPU indexes (FREEIDX, from find_free), each replica a start move
 * in MV loading MODEL's weights. */
static void adopt_new(hx_plan *p, hx_plan *tmp, const hx_cluster *cl, int *const *freeidx,
		      const hx_model *model, hx_moves *mv)
{
	for (int g = 0; g < tmp->ngroups; g++) {
		hx_plan_group *src = &tmp->groups[g], *dst;
		char name[48];
		fresh_group_name(p, name, sizeof(name));
		dst = hx_plan_add_group(p);
		*dst = *src;
		src->replicas = NULL;
		src->stage = NULL; /* moved, with the replicas */
		src->nreplicas = 0;
		hx_strlcpy(dst->name, name, sizeof(dst->name));
		for (int r = 0; r < dst->nreplicas; r++) {
			hx_plan_replica *rep = &dst->replicas[r];
			hx_move *mvv = hx_replan_move(mv, HX_MOVE_START);
			char id[128];
			snprintf(id, sizeof(id), "%sr%d", name, r);
			hx_strlcpy(rep->id, id, sizeof(rep->id));
			for (int st = 0; st < dst->nstages; st++)
				for (int k = 0; k < rep->ngpus[st]; k++) {
					int ni = hx_replan_node(cl, rep->gpus[st][k].node);
					rep->gpus[st][k].index =
					    freeidx[ni][rep->gpus[st][k].index];
				}
			hx_strlcpy(mvv->replica, rep->id, sizeof(mvv->replica));
			hx_strlcpy(mvv->group, name, sizeof(mvv->group));
			mvv->gpus = hx_replan_replica_gpus(dst, rep);
			mvv->bytes = hx_model_weight_bytes(model, dst->wdt);
			mv->bytes_to_load += mvv->bytes;
			mv->started++;
		}
	}
}

/* What new replicas must add, per role: one role (aggregated: CAP[0] the
 * candidates' capacities) or two (disaggregated: CAP[0] prefill, CAP[1]
 * decode); HAVE[k] what the plan's replicas carry in role k, NEED[k] what
 * it must reach. */
typedef struct roles {
	int n, cheapest; /* cheapest: the least USD/h first (hx_replan_opts) */
	double *cap[2];
	double have[2], need[2];
} roles;

/* The count of candidate C of S that fits the free GPUs alone. */
static double count_bound(const hx_candset *s, int c)
{
	double ub = INFINITY;
	for (int k = 0; k < s->ncls; k++) {
		int u = hx_cand_use(&s->c[c], k);
		if (u > 0)
			ub = fmin(
			    ub, floor((double)s->cls[k].nnodes * s->cls[k].gpus_per_node / u));
	}
	return ub;
}

/* The MILP over the replicas of each candidate of S in each role of R (var
 * k * S->n + c), each GPU class at most once: with MOST, the most capacity
 * in the weakest role (var t = R->n * S->n), else the fewest replicas that
 * bring every role to its need.  The fewest replicas (each loads the
 * weights once: fewest is fewest bytes moved), then GPUs, then cost break
 * ties.  New model: hx_milp_free. */
static hx_milp *counts_milp(const hx_candset *s, const roles *R, int most)
{
	hx_milp *m = hx_milp_new(most);
	int nv = R->n * s->n;
	int *idx = hx_xcalloc((size_t)nv + 2, sizeof(int));
	double *val = hx_xcalloc((size_t)nv + 2, sizeof(double));

	for (int k = 0; k < R->n; k++)
		for (int c = 0; c < s->n; c++) {
			char name[64];
			double fewest = 1 + 1e-3 * s->c[c].gpus + 1e-6 * s->c[c].usd_per_hour;
			if (R->cheapest)
				fewest =
				    s->c[c].usd_per_hour + 1e-4 * (1 + 1e-3 * s->c[c].gpus);
			snprintf(name, sizeof(name), "n_%d_%d", k, c);
			hx_milp_add_var(m, name, HX_MILP_INT, 0, count_bound(s, c),
					most ? -1e-6 * fewest : fewest);
		}
	if (most)
		hx_milp_add_var(m, "t", HX_MILP_CONT, 0, INFINITY, 1);
	for (int g = 0; g < s->ncls; g++) {
		int n = 0;
		char name[64];
		for (int k = 0; k < R->n; k++)
			for (int c = 0; c < s->n; c++) {
				int u = hx_cand_use(&s->c[c], g);
				if (u > 0) {
					idx[n] = k * s->n + c;
					val[n++] = u;
				}
			}
		snprintf(name, sizeof(name), "gpus_%d", g);
		if (n > 0)
			hx_milp_add_row(m, name, n, idx, val, -INFINITY,
					(double)s->cls[g].nnodes * s->cls[g].gpus_per_node);
	}
	for (int k = 0; k < R->n; k++) {
		char name[64];
		for (int c = 0; c < s->n; c++) {
			idx[c] = k * s->n + c;
			val[c] = most ? -R->cap[k][c] : R->cap[k][c];
		}
		snprintf(name, sizeof(name), "capacity_%d", k);
		if (most) {
			idx[s->n] = nv;
			val[s->n] = 1;
			hx_milp_add_row(m, name, s->n + 1, idx, val, -INFINITY, R->have[k]);
		} else
			hx_milp_add_row(m, name, s->n, idx, val, R->need[k] - R->have[k],
					INFINITY);
	}
	free(idx);
	free(val);
	return m;
}

/* The replicas of each candidate of S to start in each role of R, into
 * RES: the fewest that bring every role to its need; or, with BEST_EFFORT
 * when no choice does, those that give the weakest role the most capacity.
 * Returns 0 (RES->x NULL when there is nothing to start), HX_EINFEASIBLE
 * when the free GPUs fall short and not BEST_EFFORT (P's total capacity
 * and W's rate in the message), or an error. */
static int choose_counts(const hx_candset *s, const roles *R, const hx_plan *p,
			 const hx_workload *w, const hx_plan_opts *o, int best_effort,
			 hx_milp_result *res, hx_err *err)
{
	hx_milp_opts mo = hx_plan_milp_opts(o, 0);
	hx_milp *m = NULL;
	int rc = 0, most = s->n == 0;
	double more[2] = {0, 0};

	for (int k = 0; k < R->n; k++) {
		for (int c = 0; c < s->n; c++)
			more[k] += count_bound(s, c) * R->cap[k][c];
		most |= R->have[k] + more[k] < R->need[k];
	}
	if (most && !best_effort) {
		if (R->n == 1)
			return hx_errf(
			    err, HX_EINFEASIBLE,
			    "the kept replicas carry %.3f req/s at the SLO and the free GPUs at most %.3f more, short of the %.3f req/s the rate of %g req/s needs at %g%% utilization",
			    total_capacity(p), fmin(more[0], R->need[0] - R->have[0]),
			    w->rate_rps / HX_REPLAN_UTIL, w->rate_rps, HX_REPLAN_UTIL * 100);
		return hx_errf(
		    err, HX_EINFEASIBLE,
		    "the kept replicas carry %.3f req/s at the SLO after flipping the roles that help, and the free GPUs at most %.3f more of prefill and %.3f of decode, short of the %.3f req/s the rate of %g req/s needs at %g%% utilization",
		    total_capacity(p), more[0], more[1], w->rate_rps / HX_REPLAN_UTIL,
		    w->rate_rps, HX_REPLAN_UTIL * 100);
	}
	if (s->n == 0)
		return 0;
	for (;;) {
		m = counts_milp(s, R, most);
		rc = hx_milp_solve(m, &mo, res, err);
		hx_milp_free(m);
		if (rc || res->status != HX_MILP_INFEASIBLE || most)
			break;
		if (!best_effort)
			return hx_errf(
			    err, HX_EINFEASIBLE,
			    "the free GPUs cannot add the %.3f req/s at the SLO the rate needs",
			    R->need[0] - R->have[0]);
		free(res->x);
		res->x = NULL;
		most = 1;
	}
	if (!rc && res->status > HX_MILP_TIME_LIMIT)
		rc = hx_errf(err, HX_ELIMIT,
			     "the placement MILP reached its limit before any plan");
	return rc;
}

/* Each candidate's capacity at the SLO in each role of R: aggregated
 * (R->n 1: the candidates' own) or prefill and decode (R->n 2), the latter
 * no more than the KV its node's NIC and links to P's replicas of the
 * other role move (hx_replan_kv_limit; a class's nodes share their
 * links), as the disagg planner's flow would carry. */
static void role_capacities(const hx_problem *pb, const hx_candset *s, const hx_plan *p,
			    roles *R)
{
	double kv_bytes = R->n == 2 ? hx_replan_kv_bytes(p, pb->workload) : 0;

	for (int k = 0; k < R->n; k++) {
		R->cap[k] = hx_xcalloc((size_t)s->n + 1, sizeof(double));
		for (int c = 0; c < s->n; c++) {
			hx_replica rep;
			hx_capacity cp;
			int node = s->cls[s->c[c].st[0].cls].nodes[0];
			if (R->n == 1) {
				R->cap[k][c] = s->c[c].capacity_rps;
				continue;
			}
			hx_cand_replica(pb, s, &s->c[c], &rep);
			hx_cost_capacity_phase(&rep, pb->workload,
					       k == 0 ? HX_SERVE_PREFILL : HX_SERVE_DECODE,
					       &cp);
			R->cap[k][c] = fmin(
			    cp.rps, hx_replan_kv_limit(p, pb->cluster, node, k == 0, kv_bytes));
		}
	}
}

/* Start new replicas on the GPUs P leaves free in CL: the fewest that
 * bring each role of R (its capacities filled here) to its need, or with
 * BEST_EFFORT, when they cannot, those that add the most.  Returns 0,
 * HX_EINFEASIBLE when the free GPUs cannot and not BEST_EFFORT, or an
 * error. */
static int place_new(hx_plan *p, const hx_cluster *cl, const hx_problem *pb0,
		     const hx_workload *w, const hx_plan_opts *o, roles *R, int best_effort,
		     hx_moves *mv, int *cut, hx_err *err)
{
	hx_cluster fc = *cl;
	int **freeidx = hx_xcalloc((size_t)cl->nnodes + 1, sizeof(int *));
	int *nfree = hx_xcalloc((size_t)cl->nnodes + 1, sizeof(int));
	int *free_gpus = hx_xcalloc((size_t)cl->nnodes + 1, sizeof(int));
	int *next = hx_xcalloc((size_t)cl->nnodes + 1, sizeof(int));
	hx_problem pb = *pb0;
	hx_candset s = {0};
	hx_cand_opts co = {2};
	hx_milp_result res = {0};
	hx_plan tmp;
	int rc = 0;

	hx_plan_init(&tmp);
	/* The free GPUs of each node, in index order. */
	fc.nodes = hx_xcalloc((size_t)cl->nnodes + 1, sizeof(hx_node));
	if (cl->nnodes > 0)
		memcpy(fc.nodes, cl->nodes, (size_t)cl->nnodes * sizeof(hx_node));
	find_free(p, cl, &fc, freeidx, nfree, free_gpus);
	pb.cluster = &fc;
	pb.workload = w;
	if ((rc = hx_candidates(&pb, &co, &s, err)))
		goto out;
	role_capacities(&pb, &s, p, R);
	if ((rc = choose_counts(&s, R, p, w, o, best_effort, &res, err)) || !res.x)
		goto out;
	*cut = res.status == HX_MILP_TIME_LIMIT;
	/* Place widest first, into a scratch plan, then adopt the groups under
	 * fresh names with the real GPU indexes. */
	for (int pass = HX_CAND_MAX_STAGES * 64; pass >= 1; pass /= 2)
		for (int k = 0; k < R->n; k++)
			for (int c = 0; c < s.n; c++) {
				int n = (int)floor(res.x[k * s.n + c] + 0.5), wd = 0;
				for (int i = 0; i < s.c[c].nstages; i++)
					wd = s.c[c].st[i].tp > wd ? s.c[c].st[i].tp : wd;
				if (n <= 0 || wd < pass || wd >= pass * 2)
					continue;
				hx_cand_place(&pb, &s, &s.c[c], n, free_gpus, next, &tmp);
				if (R->n == 2)
					tmp.groups[tmp.ngroups - 1].role =
					    k == 0 ? HX_ROLE_PREFILL : HX_ROLE_DECODE;
			}
	adopt_new(p, &tmp, cl, freeidx, pb.model, mv);
out:
	for (int i = 0; i < cl->nnodes; i++)
		free(freeidx[i]);
	free(freeidx);
	free(nfree);
	free(free_gpus);
	free(next);
	free(fc.nodes);
	free(res.x);
	free(R->cap[0]);
	free(R->cap[1]);
	R->cap[0] = R->cap[1] = NULL;
	hx_plan_release(&tmp);
	hx_candset_release(&s);
	return rc;
}

/* The weight of the ingress route CLS -> GROUP in P (-1: none). */
static double route_weight(const hx_plan *p, const char *cls, const char *group)
{
	for (int i = 0; i < p->ningress; i++)
		if (strcmp(p->ingress[i].from, cls) == 0 &&
		    strcmp(p->ingress[i].to, group) == 0)
			return p->ingress[i].weight;
	return -1;
}

void hx_replan_weight_moves(const hx_plan *old, const hx_plan *p, hx_moves *mv)
{
	for (int i = 0; i < old->ningress; i++) {
		double to = route_weight(p, old->ingress[i].from, old->ingress[i].to);
		if (fabs(fmax(to, 0) - old->ingress[i].weight) > 1e-6) {
			hx_move *m = hx_replan_move(mv, HX_MOVE_WEIGHT);
			hx_strlcpy(m->cls, old->ingress[i].from, sizeof(m->cls));
			hx_strlcpy(m->group, old->ingress[i].to, sizeof(m->group));
			m->from = old->ingress[i].weight;
			m->to = fmax(to, 0);
			mv->weights_changed++;
		}
	}
	for (int i = 0; i < p->ningress; i++)
		if (route_weight(old, p->ingress[i].from, p->ingress[i].to) < 0) {
			hx_move *m = hx_replan_move(mv, HX_MOVE_WEIGHT);
			hx_strlcpy(m->cls, p->ingress[i].from, sizeof(m->cls));
			hx_strlcpy(m->group, p->ingress[i].to, sizeof(m->group));
			m->from = 0;
			m->to = p->ingress[i].weight;
			mv->weights_changed++;
		}
}

/* Keep the replicas of P whose GPUs survive on CL (a move for each one
 * stopped) and drop the groups left empty; BEFORE[g] (of the kept groups)
 * is their replica count before.  Returns whether P has a disaggregated
 * group. */
int hx_replan_keep(hx_plan *p, const hx_cluster *cl, hx_moves *mv, int *before)
{
	char why[200];
	int disagg = 0;

	/* Keep what survives. */
	for (int g = 0; g < p->ngroups; g++) {
		hx_plan_group *grp = &p->groups[g];
		int n = 0;
		before[g] = grp->nreplicas;
		disagg |= grp->role != HX_ROLE_AGGREGATED;
		mv->replicas_before += grp->nreplicas;
		for (int r = 0; r < grp->nreplicas; r++) {
			if (hx_replan_alive(grp, &grp->replicas[r], cl, why, sizeof(why))) {
				grp->replicas[n++] = grp->replicas[r];
				continue;
			}
			{
				hx_move *m = hx_replan_move(mv, HX_MOVE_STOP);
				hx_strlcpy(m->replica, grp->replicas[r].id, sizeof(m->replica));
				hx_strlcpy(m->group, grp->name, sizeof(m->group));
				hx_strlcpy(m->why, why, sizeof(m->why));
				m->gpus = hx_replan_replica_gpus(grp, &grp->replicas[r]);
				mv->stopped++;
			}
			hx_plan_replica_release(&grp->replicas[r]);
		}
		grp->nreplicas = n;
		mv->kept += n;
	}
	/* Empty groups go (no group is without replicas); their routes follow. */
	{
		int n = 0;
		for (int g = 0; g < p->ngroups; g++) {
			if (p->groups[g].nreplicas == 0) {
				free(p->groups[g].replicas);
				free(p->groups[g].stage);
				continue;
			}
			before[n] = before[g];
			p->groups[n++] = p->groups[g];
		}
		p->ngroups = n;
	}
	return disagg;
}

/* The predictions of P without a workload: the capacities the old plan
 * recorded, the price of the GPUs on CL. */
void hx_replan_recorded_predictions(hx_plan *p, const hx_cluster *cl)
{
	double usd = 0;
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++)
			for (int s = 0; s < p->groups[g].nstages; s++)
				for (int k = 0; k < p->groups[g].replicas[r].ngpus[s]; k++) {
					int ni = hx_replan_node(
					    cl, p->groups[g].replicas[r].gpus[s][k].node);
					usd += ni >= 0 ? cl->nodes[ni].usd_per_hour : 0;
				}
	p->predicted.capacity_rps = hx_round6(total_capacity(p));
	p->predicted.usd_per_hour = hx_round6(usd);
}

/* A composed plan's rent recounted on CL, its price the rent's. */
static void recount_rent(hx_plan *p, const hx_cluster *cl, int compose)
{
	double usd = 0;

	hx_plan_fill_rent(p, cl);
	if (!compose)
		return;
	for (int i = 0; i < p->nrent; i++)
		usd += p->rent[i].usd_per_hour;
	if (p->predicted.usd_per_hour > 0 && p->predicted.usd_per_m_tokens > 0)
		p->predicted.usd_per_m_tokens =
		    hx_round6(p->predicted.usd_per_m_tokens * usd / p->predicted.usd_per_hour);
	p->predicted.usd_per_hour = hx_round6(usd);
}

/* Mark P short of W's rate when its predicted capacity falls below rate /
 * HX_REPLAN_UTIL. */
void hx_replan_mark_short(hx_plan *p, const hx_workload *w)
{
	double cap = p->predicted.capacity_rps, need = w->rate_rps / HX_REPLAN_UTIL;

	memset(&p->shortage, 0, sizeof(p->shortage));
	if (cap >= need * (1 - 1e-9))
		return;
	p->shortage.on = 1;
	p->shortage.rate_rps = w->rate_rps;
	p->shortage.utilization = HX_REPLAN_UTIL;
	p->shortage.shortfall_rps = hx_round6(need - cap);
	p->shortage.served_share = hx_round6(w->rate_rps > 0 ? fmin(1, cap / w->rate_rps) : 1);
}

/* Make up P's shortfall against W's rate: flip disaggregated roles, then
 * start new replicas on the free GPUs (new prefill or decode replicas in a
 * disaggregated plan, whichever its weaker role needs); with STRICT only
 * when they make up the whole shortfall. */
static int make_up(hx_plan *p, const hx_cluster *cl, const hx_problem *pb, const hx_workload *w,
		   const hx_plan_opts *o, int disagg, const hx_replan_opts *ro, hx_moves *mv,
		   int *cut, hx_err *err)
{
	double need = w->rate_rps / HX_REPLAN_UTIL, agg = 0, cap = total_capacity(p), lost;
	roles R = {1, ro->cheapest, {NULL, NULL}, {total_capacity(p), 0}, {need, 0}};
	int rc;

	if (disagg && (rc = link_capacity(p, cl, pb, &cap, err)))
		return rc;
	if (cap >= need)
		return 0;
	if (disagg && ((rc = flip_roles(p, cl, pb, need, mv, err)) ||
		       (rc = link_capacity(p, cl, pb, &cap, err))))
		return rc;
	if (cap >= need)
		return 0;
	if (disagg) {
		/* What the KV links hold back of the weaker role, both roles
		 * must make up (new replicas beside the old ones, or behind
		 * other links). */
		lost = total_capacity(p) - cap;
		R.n = 2;
		R.have[0] = R.have[1] = 0;
		for (int g = 0; g < p->ngroups; g++) {
			double c = p->groups[g].capacity_rps * p->groups[g].nreplicas;
			if (p->groups[g].role == HX_ROLE_PREFILL)
				R.have[0] += c;
			else if (p->groups[g].role == HX_ROLE_DECODE)
				R.have[1] += c;
			else
				agg += c;
		}
		R.need[0] = R.need[1] = need - agg;
		R.have[0] -= lost;
		R.have[1] -= lost;
	}
	return place_new(p, cl, pb, w, o, &R, !ro->strict, mv, cut, err);
}

/* Ingress of a plan routed by class after new groups (from index FIRST
 * on) started: each class of OLD (the plan before) keeps its routes to the
 * kept groups, scaled down to make room, and sends the new groups the share
 * of the capacity they add, each in proportion to its own (all of it when
 * the class kept no route). */
static void route_classes(hx_plan *p, const hx_plan *old, int first)
{
	double kept = 0, add = 0;
	int n0 = p->ningress;

	for (int g = 0; g < p->ngroups; g++)
		*(g < first ? &kept : &add) +=
		    p->groups[g].capacity_rps * p->groups[g].nreplicas;
	if (add <= 0)
		return;
	for (int i = 0; i < n0; i++)
		p->ingress[i].weight *= kept / (kept + add);
	for (int i = 0; i < old->ningress; i++) {
		int seen = 0;
		for (int j = 0; j < i && !seen; j++)
			seen = strcmp(old->ingress[j].from, old->ingress[i].from) == 0;
		if (seen)
			continue;
		for (int g = first; g < p->ngroups; g++) {
			hx_route *rt = hx_plan_add_route(&p->ingress, &p->ningress);
			hx_strlcpy(rt->from, old->ingress[i].from, sizeof(rt->from));
			hx_strlcpy(rt->to, p->groups[g].name, sizeof(rt->to));
			rt->weight =
			    p->groups[g].capacity_rps * p->groups[g].nreplicas / (kept + add);
		}
	}
	hx_replan_normalize_per_key(p->ingress, p->ningress);
}

/* Route P after new groups (from index FIRST on) started.  Aggregated:
 * when OLD routed by class, each class keeps its routes and gives the new
 * groups their share (route_classes); else all traffic by capacity.
 * Disaggregated: ingress to the prefill groups by capacity, and kv routes
 * kept unless decode replicas started (then every prefill replica sends to
 * every decode replica by capacity); a prefill replica without kv routes
 * sends to every decode replica. */
static int route_new(hx_plan *p, const hx_plan *old, const hx_cluster *cl, const hx_problem *pb,
		     int first, int disagg, hx_err *err)
{
	int classes = 0, rc;

	for (int i = 0; i < old->ningress; i++)
		classes |= old->ingress[i].from[0] != 0;
	if (!disagg && classes) {
		if ((rc = hx_plan_finish(pb, p, 0, err)))
			return rc;
		route_classes(p, old, first);
		return hx_plan_finish(pb, p, 0, err);
	}
	/* All traffic by capacity. */
	free(p->classes);
	p->classes = NULL;
	p->nclasses = 0;
	if (!disagg)
		return hx_plan_finish(pb, p, HX_FINISH_WEIGHTS, err);
	if ((rc = hx_plan_finish(pb, p, 0, err)))
		return rc;
	for (int g = first; g < p->ngroups; g++)
		if (p->groups[g].role == HX_ROLE_DECODE)
			p->nkv = 0;
	reroute_roles(p, cl);
	return hx_plan_finish(pb, p, 0, err);
}

/* P's capacity when disaggregated: what its aggregated groups carry plus,
 * with W, the max-flow of its prefill and decode replicas through the KV
 * links (the ingress and kv routes by that flow, and the predictions
 * again, when MV started replicas or flipped roles), else its weaker
 * role's. */
static int kv_capacity(hx_plan *p, const hx_cluster *cl, const hx_problem *pb,
		       const hx_workload *w, const hx_moves *mv, hx_err *err)
{
	int moved = mv->started > 0 || mv->roles_flipped > 0, rc;
	double agg = 0, flow = 0;

	if (!w) {
		p->predicted.capacity_rps = hx_round6(total_capacity(p));
		return 0;
	}
	if ((rc = hx_replan_kv_flow(p, cl, w, moved, &flow, err)))
		return rc;
	if (moved && (rc = hx_plan_finish(pb, p, 0, err)))
		return rc;
	for (int g = 0; g < p->ngroups; g++)
		if (p->groups[g].role == HX_ROLE_AGGREGATED)
			agg += p->groups[g].capacity_rps * p->groups[g].nreplicas;
	p->predicted.capacity_rps = hx_round6(fmin(total_capacity(p), agg + flow));
	return 0;
}

static int replan_one(const hx_plan *old, const hx_cluster *cl0, const hx_workload *w,
		      const hx_problem *pb0, const hx_plan_opts *o, const hx_replan_opts *ro,
		      hx_plan *p, hx_moves *mv, hx_err *err)
{
	hx_cluster cl;
	hx_problem pb = *pb0;
	char *text = hx_plan_dump(old);
	int rc, *before = NULL, compose = strcmp(old->mode, "compose") == 0, disagg = 0,
		cut = 0, first_new;

	memset(mv, 0, sizeof(*mv));
	rc = hx_plan_parse_text(p, text, "plan", err);
	free(text);
	if (rc)
		return rc;
	memset(&p->shortage, 0, sizeof(p->shortage));
	if (p->nhops > 0 && ro->no_start) {
		hx_plan_release(p);
		return hx_errf(err, HX_EINPUT,
			       "a pipeline plan's lost layers are placed again: it cannot be "
			       "re-routed without starting replicas");
	}
	if (p->nmodels == 1 && p->ncascade == 0 && p->nhops > 0 && ro->pipe) {
		hx_plan_release(p);
		if ((rc = hx_cluster_expand_offers(cl0, compose, &cl, err)))
			return rc;
		rc = hx_replan_pipeline(old, &cl, w, pb0, ro, p, mv, err);
		hx_cluster_release(&cl);
		return rc;
	}
	if (p->nhops > 0 && (p->nmodels != 1 || p->ncascade > 0 || !ro->pipe)) {
		hx_plan_release(p);
		return hx_errf(err, HX_EINPUT,
			       "replan adapts pipeline plans of one model, without a cascade");
	}
	if ((rc = hx_cluster_expand_offers(cl0, compose, &cl, err))) {
		hx_plan_release(p);
		return rc;
	}
	if (p->nmodels > 1 || p->ncascade > 0) {
		rc = hx_replan_cascade(old, &cl, w, ro, p, mv, err);
		hx_cluster_release(&cl);
		return rc;
	}
	pb.cluster = &cl;
	pb.workload = w;
	mv->capacity_before_rps = old->predicted.capacity_rps;
	before = hx_xcalloc((size_t)p->ngroups + 1, sizeof(int));
	disagg = hx_replan_keep(p, &cl, mv, before);
	if (p->ngroups == 0 && !w) {
		rc = hx_errf(
		    err, HX_EINFEASIBLE,
		    "no replica survives and there is no workload (-w) to place new ones for");
		goto out;
	}
	/* Routes first (by the kept shares), then the capacities at the (new)
	 * workload's SLO and the predictions at its rate: one pass over the
	 * replicas when routing alone does. */
	hx_replan_reroute(p, before);
	reroute_kv(p, &cl);
	first_new = p->ngroups;
	if (w) {
		if ((rc = hx_plan_finish(&pb, p, 0, err)) ||
		    (!ro->no_start &&
		     (rc = make_up(p, &cl, &pb, w, o, disagg, ro, mv, &cut, err))))
			goto out;
		mv->rate_rps = w->rate_rps;
	}
	if (p->ngroups == 0) {
		rc =
		    hx_errf(err, HX_EINFEASIBLE,
			    ro->no_start
				? "no replica survives"
				: "no replica survives and the free GPUs hold no replica of %s",
			    p->models[0].name);
		goto out;
	}
	if (mv->started > 0) {
		if ((rc = route_new(p, old, &cl, &pb, first_new, disagg, err)))
			goto out;
	} else if (!w)
		hx_replan_recorded_predictions(p, &cl);
	if (compose || p->nrent > 0)
		recount_rent(p, &cl, compose);
	/* A disaggregated plan carries what its weaker role does, and no more
	 * than the KV links move (routes by the flow where replicas started
	 * or roles flipped). */
	if (disagg && (rc = kv_capacity(p, &cl, &pb, w, mv, err)))
		goto out;
	if (w)
		hx_replan_mark_short(p, w);
	/* Kept replicas and new ones are not one optimization's result. */
	strcpy(p->solver.status, cut ? "time_limit" : "heuristic");
	mv->routing_only = mv->started == 0;
	mv->capacity_after_rps = p->predicted.capacity_rps;
	hx_replan_weight_moves(old, p, mv);
out:
	free(before);
	hx_cluster_release(&cl);
	if (rc) {
		hx_plan_release(p);
		hx_moves_release(mv);
	}
	return rc;
}

/* Replicas started on other GPU types than those of the replicas that
 * stopped: P lists the substitutions against OLD (the plan it adapts,
 * which is what P would be had the lost GPUs' type had spares). */
static void replan_spill(const hx_plan *old, hx_plan *p, const hx_moves *mv)
{
	free(p->spill.subst);
	memset(&p->spill, 0, sizeof(p->spill));
	if (mv->started > 0)
		hx_plan_spill_against(p, old, old->predicted.usd_per_hour);
}

int hx_replan(const hx_plan *old, const hx_cluster *cl0, const hx_workload *w,
	      const hx_problem *pb0, const hx_plan_opts *o, const hx_replan_opts *ro,
	      hx_plan *p, hx_moves *mv, hx_err *err)
{
	int rc;

	/* An AFD replica's FFN GPUs are no stage's: replan's survivors, moves
	 * and new replicas would not see them. */
	for (int g = 0; g < old->ngroups; g++)
		if (old->groups[g].afd.on)
			return hx_errf(
			    err, HX_EINPUT,
			    "group %s is attention/FFN disaggregated: replan does not "
			    "adapt AFD groups (plan it again)",
			    old->groups[g].name);
	rc = replan_one(old, cl0, w, pb0, o, ro, p, mv, err);

	if (rc == 0)
		replan_spill(old, p, mv);
	return rc;
}
