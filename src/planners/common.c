/* common: the planner layer every mode shares (common.h). */
#include "config.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/cost.h"
#include "sim/sim.h"
#include "planners/common.h"
#include "plan/spot.h"

double hx_plan_kv_reserve(const hx_workload *w)
{
	double q = w->slo.percentile / 100;
	double need = hx_dist_quantile(&w->prompt, q) + hx_dist_quantile(&w->output, q);
	return fmax(need, HX_KV_RESERVE_TOKENS);
}

/* The bytes of R that the cost model reads: its stages in use. */
static size_t replica_len(const hx_replica *r)
{
	return offsetof(hx_replica, stage) + (size_t)r->nstages * sizeof(hx_stage);
}

void hx_capmemo_eval(hx_capmemo *m, const hx_replica *r, const hx_workload *w, int phase,
		     double lambda, hx_capacity *out)
{
	size_t len = replica_len(r);

	for (int i = 0; i < m->n; i++)
		if (m->e[i].len == len && m->e[i].w == w && m->e[i].phase == phase &&
		    m->e[i].lambda == lambda && memcmp(m->e[i].r, r, len) == 0) {
			*out = m->e[i].c;
			return;
		}
	if (lambda < 0) {
		hx_cost_capacity_phase(r, w, phase, out);
	} else {
		/* a workload's lengths once per memo, not once per rate */
		if (m->lens_w != w) {
			hx_cost_lens_of(w, &m->lens);
			m->lens_w = w;
		}
		hx_cost_at_rate_lens(r, w, &m->lens, phase, lambda, out);
	}
	{
		int i = m->n < HX_CAPMEMO_N ? m->n++ : m->next;
		m->next = (i + 1) % HX_CAPMEMO_N;
		free(m->e[i].r);
		m->e[i].r = hx_xmalloc(len);
		memcpy(m->e[i].r, r, len);
		m->e[i].len = len;
		m->e[i].w = w;
		m->e[i].phase = phase;
		m->e[i].lambda = lambda;
		m->e[i].c = *out;
	}
}

void hx_capmemo_release(hx_capmemo *m)
{
	for (int i = 0; i < m->n; i++)
		free(m->e[i].r);
	m->n = 0;
	m->next = 0;
	m->lens_w = NULL;
}

static int phase_of(hx_role r)
{
	return r == HX_ROLE_PREFILL  ? HX_SERVE_PREFILL
	       : r == HX_ROLE_DECODE ? HX_SERVE_DECODE
				     : HX_SERVE_BOTH;
}

/* The first replica of GRP whose links equal replica R's (R itself when
 * none before it does). */
static int first_alike(const hx_plan_group *grp, int r)
{
	const hx_plan_replica *x = &grp->replicas[r];
	size_t n = (size_t)grp->nstages * sizeof(hx_linkspec);

	for (int q = 0; q < r; q++) {
		const hx_plan_replica *y = &grp->replicas[q];
		if (memcmp(x->link, y->link, n) == 0 && memcmp(x->tp_link, y->tp_link, n) == 0)
			return q;
	}
	return r;
}

/* A replica of AFD group G (its batch and context, every replica's link
 * alike or slower: the slowest) in requests/s: batch / (E[output] * step). */
static int afd_capacity(const hx_plan *p, const hx_plan_group *g, const hx_workload *w,
			double *cap, hx_err *err)
{
	double step = 0;

	for (int r = 0; r < g->nreplicas; r++) {
		hx_afd a;
		hx_afd_step st;
		int rc;
		if ((rc = hx_plan_afd_cost(p, g, &g->replicas[r], &a, err)))
			return rc;
		hx_cost_afd(&a, g->afd.batch, g->afd.context, w->serving.mem_util, &st);
		step = fmax(step, st.step_s);
	}
	*cap = step > 0 ? g->afd.batch / (hx_dist_mean(&w->output) * step) : 0;
	return 0;
}

int hx_plan_finish(const hx_problem *pb, hx_plan *p, int flags, hx_err *err)
{
	const hx_workload *w = pb->workload;
	double total = 0, usd = 0, lambda = w->rate_rps, served, P, O;
	double ttft = 0, tpot = 0, *share;
	int rc = 0;
	hx_map nodes = {0}, groups = {0};
	hx_capmemo memo = {0};

	hx_file_digest(pb->cluster_path, p->cluster_digest);
	hx_file_digest(pb->workload_path, p->workload_digest);
	if (pb->calibration_path)
		hx_file_digest(pb->calibration_path, p->calibration);
	if (!hx_plan_model(p, pb->model->name))
		hx_plan_add_model(p, pb->model);
	p->solver.seed = pb->seed;
	/* Embed the profiles of the GPUs the plan uses, as the cluster gives them. */
	for (int i = 0; i < pb->cluster->nnodes; i++)
		hx_map_put(&nodes, pb->cluster->nodes[i].name, i);
	for (int g = 0; g < p->ngroups; g++) {
		hx_plan_group *grp = &p->groups[g];
		for (int r = 0; r < grp->nreplicas; r++)
			for (int s = 0; s <= grp->nstages; s++) /* nstages: AFD's FFN GPUs */
				for (int k = 0;
				     k < (s < grp->nstages ? grp->replicas[r].ngpus[s]
							   : grp->replicas[r].nffn);
				     k++) {
					const hx_gpu_ref *ref =
					    s < grp->nstages ? &grp->replicas[r].gpus[s][k]
							     : &grp->replicas[r].ffn[k];
					int i = hx_map_get(&nodes, ref->node);
					const hx_node *n =
					    i >= 0 ? &pb->cluster->nodes[i] : NULL;
					if (!n) {
						hx_map_release(&nodes);
						return hx_errf(err, HX_EINPUT,
							       "internal: unknown node %s",
							       ref->node);
					}
					if (!hx_plan_gpu(p, n->gpu.name))
						hx_plan_add_gpu(p, &n->gpu);
					usd += n->usd_per_hour;
				}
	}
	hx_map_release(&nodes);
	if (flags & HX_FINISH_INPUTS)
		return 0;
	/* Capacity per replica (the slowest replica stands for its group).
	 * Replicas of a group differ to the cost model only by their links:
	 * one evaluation serves all that share them. */
	for (int g = 0; g < p->ngroups; g++) {
		hx_plan_group *grp = &p->groups[g];
		double cap = INFINITY, batch = 0;
		if (grp->afd.on) {
			if ((rc = afd_capacity(p, grp, w, &cap, err)))
				goto out;
			batch = grp->afd.batch;
		}
		for (int r = 0; r < grp->nreplicas && !grp->afd.on; r++) {
			hx_replica rep;
			hx_capacity c;
			if ((rc = hx_plan_replica_cost(p, grp, &grp->replicas[r], &rep, err)))
				goto out;
			if (first_alike(grp, r) < r)
				continue;
			hx_capmemo_eval(&memo, &rep, w, phase_of(grp->role), -1, &c);
			if (c.rps < cap) {
				cap = c.rps;
				batch = c.max_batch;
			}
		}
		grp->capacity_rps = hx_round6(cap);
		grp->max_batch = batch;
		total += cap * grp->nreplicas;
	}
	if (flags & HX_FINISH_WEIGHTS) {
		free(p->ingress);
		p->ingress = NULL;
		p->ningress = 0;
		for (int g = 0; g < p->ngroups; g++) {
			hx_route *rt = hx_plan_add_route(&p->ingress, &p->ningress);
			hx_strlcpy(rt->to, p->groups[g].name, sizeof(rt->to));
			rt->weight = total > 0 ? p->groups[g].capacity_rps *
						     p->groups[g].nreplicas / total
					       : 1.0 / p->ngroups;
		}
		hx_routes_normalize(p->ingress, p->ningress);
	}
	/* The operating point at the workload's rate (at capacity when above it). */
	served = fmin(lambda, total);
	/* Each group's share of the ingress, the routes summed in order. */
	share = hx_xcalloc((size_t)p->ngroups + 1, sizeof(double));
	for (int g = 0; g < p->ngroups; g++)
		hx_map_put(&groups, p->groups[g].name, g);
	for (int i = 0; i < p->ningress; i++) {
		int g = hx_map_get(&groups, p->ingress[i].to);
		if (g >= 0)
			share[g] += p->ingress[i].weight;
	}
	hx_map_release(&groups);
	for (int g = 0; g < p->ngroups && served > 0; g++) {
		hx_plan_group *grp = &p->groups[g];
		/* (an AFD group's operating point: its planner's) */
		for (int r = 0; r < grp->nreplicas && share[g] > 0 && !grp->afd.on; r++) {
			hx_replica rep;
			hx_capacity c;
			if (first_alike(grp, r) < r)
				continue; /* the same operating point as that one */
			hx_plan_replica_cost(p, grp, &grp->replicas[r], &rep, NULL);
			hx_capmemo_eval(
			    &memo, &rep, w, phase_of(grp->role),
			    fmin(served * share[g] / grp->nreplicas, grp->capacity_rps), &c);
			if (isfinite(c.ttft_ms))
				ttft = fmax(ttft, c.ttft_ms);
			if (isfinite(c.tpot_ms))
				tpot = fmax(tpot, c.tpot_ms);
		}
	}
	P = hx_dist_mean(&w->prompt);
	O = hx_dist_mean(&w->output);
	p->predicted.capacity_rps = hx_round6(total);
	p->predicted.throughput_tps = hx_round6(served * O);
	p->predicted.ttft_ms_p99 = hx_round6(ttft);
	p->predicted.tpot_ms_p99 = hx_round6(tpot);
	p->predicted.usd_per_hour = hx_round6(usd);
	p->predicted.usd_per_m_tokens = hx_round6(hx_usd_per_mtok(usd, served, P + O));
	p->solver.objective = p->predicted.capacity_rps;
	free(share);
out:
	hx_capmemo_release(&memo);
	return rc;
}

void hx_plan_nodes_used(const hx_plan *p, const hx_cluster *cl, char *used)
{
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++)
			for (int s = 0; s < p->groups[g].nstages; s++)
				for (int k = 0; k < p->groups[g].replicas[r].ngpus[s]; k++)
					for (int i = 0; i < cl->nnodes; i++)
						if (strcmp(cl->nodes[i].name, p->groups[g]
										  .replicas[r]
										  .gpus[s][k]
										  .node) == 0) {
							used[i] = 1;
							break;
						}
}

void hx_plan_fill_rent(hx_plan *p, const hx_cluster *cl)
{
	char *used = hx_xcalloc((size_t)cl->nnodes + 1, 1);

	free(p->rent);
	p->rent = NULL;
	p->nrent = 0;
	hx_plan_nodes_used(p, cl, used);
	for (int o = 0; o < cl->noffers; o++) {
		hx_plan_rent *rt = NULL;
		for (int i = 0; i < cl->nnodes; i++) {
			if (!used[i] || hx_offer_node(cl->nodes[i].name, NULL) != o)
				continue;
			if (!rt) {
				p->rent = hx_xrealloc(p->rent, (size_t)(p->nrent + 1) *
								   sizeof(*p->rent));
				rt = &p->rent[p->nrent++];
				memset(rt, 0, sizeof(*rt));
				rt->offer = o;
				hx_strlcpy(rt->gpu, cl->offers[o].gpu.name, sizeof(rt->gpu));
			}
			rt->nodes++;
			rt->gpus += cl->nodes[i].count;
		}
		if (rt) {
			rt->usd_per_hour = hx_round6(rt->gpus * cl->offers[o].usd_per_hour);
			rt->preempt_per_hour = cl->offers[o].preempt_per_hour;
			if (rt->preempt_per_hour > 0 && p->nmodels > 0)
				rt->window_s = hx_round6(
				    hx_spot_window_s(&p->models[0], cl->offers[o].load_gbps));
		}
	}
	free(used);
	/* A spot section stays true to the rent (replan changes it): the same
	 * need and target, the nodes now used. */
	if (p->spot.on) {
		hx_plan_spot was = p->spot;
		hx_spot_assess(p, was.need_rps, &p->spot);
		p->spot.target = was.target;
		p->spot.on_demand_usd_per_hour = was.on_demand_usd_per_hour;
	}
}

double hx_plan_time_left(double deadline)
{
	return deadline > 0 ? fmax(deadline - hx_now(), 1e-3) : 0;
}

hx_milp_opts hx_plan_milp_opts(const hx_plan_opts *o, double deadline)
{
	hx_milp_opts mo = {o->gap, o->node_limit, o->time_limit_s, o->verbose,
			   o->lp_path ? o->lp_text : NULL};

	if (deadline > 0)
		mo.time_limit_s = hx_plan_time_left(deadline);
	return mo;
}

void hx_plan_solver_milp(hx_plan *p, const char *engine, const hx_milp_result *res)
{
	strcpy(p->solver.engine, engine);
	strcpy(p->solver.status, hx_milp_plan_status(res->status));
	p->solver.objective = hx_round6(res->objective);
	p->solver.bound = hx_round6(res->bound);
	p->solver.gap = hx_round6(res->gap);
	p->solver.nodes = res->nodes;
	p->solver.iterations = res->iterations;
}

void hx_plan_solver_search(hx_plan *p, const char *engine, const char *status, double value,
			   double bound, long nodes, long iterations)
{
	strcpy(p->solver.engine, engine);
	strcpy(p->solver.status, status);
	p->solver.objective = hx_round6(value);
	p->solver.bound = hx_round6(fmax(bound, value));
	p->solver.gap = hx_round6((p->solver.bound - value) / fmax(value, 1e-12));
	p->solver.nodes = nodes;
	p->solver.iterations = iterations;
}

void hx_route_set_link(hx_route *rt, const hx_cluster *cl, int a, int b)
{
	hx_linkspec ls = hx_cluster_nic_link(cl, a, b);
	char link[160];

	snprintf(link, sizeof(link), "%s-%s", cl->nodes[a].name, cl->nodes[b].name);
	hx_strlcpy(rt->link, link, sizeof(rt->link));
	rt->bw_gbps = ls.bw_gbps;
	rt->latency_ms = ls.latency_ms;
}

void hx_route_set_node_link(hx_route *rt, const hx_cluster *cl, int a, int b)
{
	hx_linkspec own;

	if (a != b) {
		hx_route_set_link(rt, cl, a, b);
		return;
	}
	own = hx_gpu_own_link(&cl->nodes[a].gpu);
	rt->bw_gbps = own.bw_gbps;
	rt->latency_ms = own.latency_ms;
}

int hx_plan_sim_capacity(const hx_problem *pb, const hx_plan *p, double deadline, double *rps,
			 hx_err *err)
{
	hx_sim_opts so = {pb->seed, 0, NULL, NULL, 0, 0, 0, deadline};
	return hx_sim_capacity(p, pb->workload, HX_CAP_REQUESTS, &so, rps, NULL, err);
}

void hx_plan_set_simulated(hx_plan *p, const hx_problem *pb, const char *method, double rps,
			   long requests)
{
	p->simulated.capacity_rps = rps;
	p->simulated.requests = requests;
	p->simulated.seed = pb->seed;
	hx_strlcpy(p->simulated.method, method, sizeof(p->simulated.method));
}

double hx_plan_owned_usd(const hx_plan *p, const hx_cluster *owned)
{
	hx_map idx = {0};
	double usd = 0;

	for (int i = 0; i < owned->nnodes; i++)
		hx_map_put(&idx, owned->nodes[i].name, i);
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++)
			for (int s = 0; s < p->groups[g].nstages; s++)
				for (int k = 0; k < p->groups[g].replicas[r].ngpus[s]; k++) {
					int ni = hx_map_get(
					    &idx, p->groups[g].replicas[r].gpus[s][k].node);
					if (ni >= 0)
						usd += owned->nodes[ni].usd_per_hour;
				}
	hx_map_release(&idx);
	return usd;
}

void hx_plan_price_rent(hx_plan *p, const hx_cluster *cl, const hx_cluster *owned,
			const hx_workload *w, double served)
{
	double usd = 0;

	hx_plan_fill_rent(p, cl);
	for (int i = 0; i < p->nrent; i++)
		usd += p->rent[i].usd_per_hour;
	p->predicted.owned_usd_per_hour = hx_round6(hx_plan_owned_usd(p, owned));
	p->predicted.usd_per_hour = hx_round6(usd);
	p->predicted.usd_per_m_tokens = hx_round6(
	    hx_usd_per_mtok(usd, served, hx_dist_mean(&w->prompt) + hx_dist_mean(&w->output)));
}

int hx_plan_err_unpriced(hx_err *err, const char *model)
{
	return hx_errf(err, HX_ELIMIT,
		       "the time limit was reached before %s's shapes were priced", model);
}

double hx_kv_link_rps(const hx_model *m, double q_tokens, double kv_req_bytes, double reserve_s,
		      double gbps, double latency_ms)
{
	double room = reserve_s - latency_ms * 1e-3, rho;

	if (!(gbps > 0) || !(room > 0))
		return 0;
	rho = 1 - hx_cost_kv_transfer(m, HX_DT_FP16, q_tokens, gbps, 0) / room;
	return rho > 0 ? rho * hx_gbps_bytes_s(gbps) / kv_req_bytes : 0;
}

double hx_kv_link_time_s(const hx_model *m, double q_tokens, double kv_req_bytes, double gbps,
			 double latency_ms, double rps)
{
	double rho = rps * kv_req_bytes / hx_gbps_bytes_s(gbps);

	return rho < 1
		   ? hx_cost_kv_transfer(m, HX_DT_FP16, q_tokens, gbps * (1 - rho), latency_ms)
		   : INFINITY;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int hx_kv_reserves(const hx_problem *pb, double q_tokens, double *R)
{
	const hx_cluster *c = pb->cluster;
	hx_linkspec kind[4];
	double nic = 0, slo_s = pb->workload->slo.ttft_ms * 1e-3;
	int nk = 0, nr = 0, fast = -1, slow = -1, multi = 0;

	for (int i = 0; i < c->nnodes; i++) {
		nic = fmax(nic, c->nodes[i].nic_gbps);
		multi |= strcmp(c->nodes[i].region, c->nodes[0].region) != 0;
	}
	kind[nk++] = c->same_region;
	if (multi)
		kind[nk++] = c->cross_region;
	for (int l = 0; l < c->nlinks; l++) {
		const hx_linkspec *x = &c->links[l].spec;
		if (fast < 0 || x->bw_gbps > c->links[fast].spec.bw_gbps)
			fast = l;
		if (slow < 0 || x->bw_gbps < c->links[slow].spec.bw_gbps)
			slow = l;
	}
	if (fast >= 0)
		kind[nk++] = c->links[fast].spec;
	if (slow >= 0 && slow != fast)
		kind[nk++] = c->links[slow].spec;
	for (int k = 0; k < nk; k++) {
		/* the idle transfer's bandwidth term */
		double t = hx_cost_kv_transfer(pb->model, HX_DT_FP16, q_tokens,
					       fmin(kind[k].bw_gbps, nic), 0);
		for (int m = 2; m <= 32; m *= 2) {
			double r = kind[k].latency_ms * 1e-3 + m * t;
			if (r < slo_s && nr < HX_KV_RESERVES)
				R[nr++] = r;
		}
	}
	qsort(R, (size_t)nr, sizeof(double), cmp_double);
	{
		int u = 0;
		for (int i = 0; i < nr; i++)
			if (u == 0 || R[i] > R[u - 1] * 1.05)
				R[u++] = R[i];
		nr = u;
	}
	return nr;
}
