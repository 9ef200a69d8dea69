/* spot: see spot.h. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/spot.h"
#include "model/cost.h"
#include "model/problem.h"

double hx_spot_window_s(const hx_model *m, double load_gbps)
{
	return HX_SPOT_REPLACE_S + hx_weights_load_s(m, m->a.dtype, load_gbps);
}

double hx_spot_down(const hx_plan_rent *r)
{
	return r->preempt_per_hour > 0 ? 1 - exp(-r->preempt_per_hour * r->window_s / 3600) : 0;
}

typedef struct spot_node {
	char name[64];
	double q, cap;
} spot_node;

static int cmp_spot_node(const void *a, const void *b)
{
	const spot_node *x = a, *y = b;
	if (x->cap != y->cap)
		return x->cap < y->cap ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* The rent entry of P for the offer of node NAME when it is spot, or NULL. */
static const hx_plan_rent *spot_rent(const hx_plan *p, const char *name)
{
	int o = hx_offer_node(name, NULL);

	for (int i = 0; o >= 0 && i < p->nrent; i++)
		if (p->rent[i].offer == o && p->rent[i].preempt_per_hour > 0)
			return &p->rent[i];
	return NULL;
}

/* Call FN(P, G, R, NODE, ARG) once for each spot node that replica R of
 * group G uses (a node once per replica). */
static void each_spot_node(const hx_plan *p, const hx_plan_group *g, const hx_plan_replica *r,
			   void (*fn)(const char *, const hx_plan_rent *, double, void *),
			   void *arg)
{
	for (int s = 0; s < g->nstages; s++)
		for (int k = 0; k < r->ngpus[s]; k++) {
			const char *nm = r->gpus[s][k].node;
			const hx_plan_rent *rt = spot_rent(p, nm);
			int seen = 0;
			for (int s2 = 0; s2 <= s && !seen; s2++)
				for (int k2 = 0; k2 < (s2 < s ? r->ngpus[s2] : k) && !seen;
				     k2++)
					seen = strcmp(r->gpus[s2][k2].node, nm) == 0;
			if (rt && !seen)
				fn(nm, rt, g->capacity_rps, arg);
		}
}

typedef struct spot_acc {
	hx_map idx;
	spot_node *n;
	int nn;
	int *minrank; /* the replica's first node in the order */
} spot_acc;

static void add_node(const char *name, const hx_plan_rent *rt, double cap, void *arg)
{
	spot_acc *a = arg;
	int i = hx_map_get(&a->idx, name);

	if (i < 0) {
		i = a->nn++;
		a->n = hx_xrealloc(a->n, (size_t)a->nn * sizeof(spot_node));
		memset(&a->n[i], 0, sizeof(spot_node));
		hx_strlcpy(a->n[i].name, name, sizeof(a->n[i].name));
		a->n[i].q = hx_spot_down(rt);
		hx_map_put(&a->idx, name, i);
	}
	a->n[i].cap += cap;
}

static void take_rank(const char *name, const hx_plan_rent *rt, double cap, void *arg)
{
	spot_acc *a = arg;
	int rank = hx_map_get(&a->idx, name);

	(void)rt;
	(void)cap;
	if (rank >= 0 && rank < *a->minrank)
		*a->minrank = rank;
}

/* P's spot nodes, most capacity first: their down chances Q, the capacity
 * LOST[k] that losing the first k of them takes (k = 0..n), and the
 * capacity of all P's replicas in *TOTAL.  Returns n; Q and LOST are new. */
static int spot_nodes(const hx_plan *p, double **q, double **lost, double *total)
{
	spot_acc a = {0};
	int mr;

	*total = 0;
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++) {
			each_spot_node(p, &p->groups[g], &p->groups[g].replicas[r], add_node,
				       &a);
			*total += p->groups[g].capacity_rps;
		}
	if (a.nn > 0) /* no spot node: a.n is NULL, which qsort may not take */
		qsort(a.n, (size_t)a.nn, sizeof(spot_node), cmp_spot_node);
	hx_map_release(&a.idx);
	memset(&a.idx, 0, sizeof(a.idx));
	*q = hx_xcalloc((size_t)a.nn + 1, sizeof(double));
	*lost = hx_xcalloc((size_t)a.nn + 2, sizeof(double));
	for (int i = 0; i < a.nn; i++) {
		hx_map_put(&a.idx, a.n[i].name, i);
		(*q)[i] = a.n[i].q;
	}
	/* A replica is lost with the first of its nodes in the order. */
	a.minrank = &mr;
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++) {
			mr = a.nn;
			each_spot_node(p, &p->groups[g], &p->groups[g].replicas[r], take_rank,
				       &a);
			if (mr < a.nn)
				(*lost)[mr + 1] += p->groups[g].capacity_rps;
		}
	for (int k = 1; k <= a.nn; k++)
		(*lost)[k] += (*lost)[k - 1];
	hx_map_release(&a.idx);
	free(a.n);
	return a.nn;
}

/* The distribution of how many of N nodes with down chances Q are down at
 * once (Poisson-binomial, by dynamic programming): new, N + 1 entries. */
static double *down_dist(const double *q, int n)
{
	double *d = hx_xcalloc((size_t)n + 2, sizeof(double));

	d[0] = 1;
	for (int i = 0; i < n; i++)
		for (int k = i + 1; k >= 0; k--)
			d[k] = d[k] * (1 - q[i]) + (k > 0 ? d[k - 1] * q[i] : 0);
	return d;
}

void hx_spot_at(const hx_plan *p, int k, hx_plan_spot *out, double left_rps[2])
{
	double *q, *lost, total, *d, cum = 0, usd = 0;
	int n = spot_nodes(p, &q, &lost, &total);

	k = k < 0 ? 0 : k > n ? n : k;
	d = down_dist(q, n);
	for (int i = 0; i <= k; i++)
		cum += d[i];
	for (int i = 0; i < p->nrent; i++) {
		const hx_plan_rent *r = &p->rent[i];
		/* a spot node is paid while it runs: up for 1/rate on average,
		 * then down for its window */
		usd += r->usd_per_hour / (1 + r->preempt_per_hour * r->window_s / 3600);
	}
	out->on = n > 0;
	out->nodes = n;
	out->survives_nodes = k;
	out->slo_probability = hx_round6(fmin(cum, 1));
	out->expected_usd_per_hour = hx_round6(usd);
	left_rps[0] = total - lost[k];
	left_rps[1] = k < n ? total - lost[k + 1] : -1;
	free(q);
	free(lost);
	free(d);
}

void hx_spot_assess(const hx_plan *p, double need_rps, hx_plan_spot *out)
{
	double left[2];
	int k = 0;

	/* the plan as composed carries its rate (its program and the
	 * simulator's judge say so), however its groups' capacities at the
	 * workload's mix add up: the need is at most all of them */
	hx_spot_at(p, 0, out, left);
	need_rps = fmin(need_rps, left[0]);
	/* the capacity left only falls as nodes are lost: the first k at
	 * which losing one more leaves too little */
	for (hx_spot_at(p, k, out, left); left[1] >= need_rps * (1 - 1e-9);
	     hx_spot_at(p, ++k, out, left))
		;
	out->need_rps = hx_round6(need_rps);
}
