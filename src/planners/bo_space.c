/* The bo planner's search space (bo.h has the overview): configurations,
 * whether they fit the budget, inventory and floor, random ones, their
 * neighbours, and their enumeration for the yardsticks. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planners/bo_int.h"

int hx_bo_seen(const bo *b, const cfg *k)
{
	for (int i = 0; i < b->nev; i++)
		if (cfg_eq(&b->ev[i].k, k))
			return 1;
	return 0;
}

static int widest(const hx_candidate *c)
{
	int w = 0;
	for (int t = 0; t < c->nstages; t++)
		w = c->st[t].tp > w ? c->st[t].tp : w;
	return w;
}

/* Whether K's replicas pack onto the nodes (first fit, widest stage
 * first, as the plan places them); NODE (may be NULL) gets, for each
 * model, shape, replica and stage, the node it takes. */
int hx_bo_packs(bo *b, const cfg *k, int *node)
{
	const hx_cluster *cl = b->pb->cluster;
	int order[MAXM * MAXC][2], no = 0;
	for (int i = 0; i < cl->nnodes; i++)
		b->free_gpus[i] = cl->nodes[i].count;
	for (int m = 0; m < b->nm; m++)
		for (int c = 0; c < b->nc[m]; c++)
			if (k->n[m][c] > 0) {
				int j = no++;
				/* insertion by decreasing width (stable) */
				while (j > 0 &&
				       widest(shape(b, order[j - 1][0], order[j - 1][1])) <
					   widest(shape(b, m, c))) {
					order[j][0] = order[j - 1][0];
					order[j][1] = order[j - 1][1];
					j--;
				}
				order[j][0] = m;
				order[j][1] = c;
			}
	for (int oi = 0; oi < no; oi++) {
		int m = order[oi][0], c = order[oi][1];
		const hx_candset *s = &b->s[m];
		const hx_candidate *cd = shape(b, m, c);
		for (int r = 0; r < k->n[m][c]; r++)
			for (int t = 0; t < cd->nstages; t++) {
				const hx_node_class *kl = &s->cls[cd->st[t].cls];
				int at = -1;
				for (int j = 0; j < kl->nnodes && at < 0; j++)
					if (b->free_gpus[kl->nodes[j]] >= cd->st[t].tp)
						at = kl->nodes[j];
				if (at < 0)
					return 0;
				b->free_gpus[at] -= cd->st[t].tp;
				if (node)
					node[(((size_t)m * MAXC + (size_t)c) * 256 +
					      (size_t)r) *
						 HX_CAND_MAX_STAGES +
					     (size_t)t] = at;
			}
	}
	return 1;
}

/* Budget, inventory, quality floor and the capacity at the SLO of each
 * model's replicas (from the candidates' pricing): what is known before
 * evaluating.  A model without traffic has no replicas. */
static int feasible(bo *b, const cfg *k)
{
	for (int m = 0; m < b->nm; m++) {
		double cap = model_cap(b, k, m);
		if (k->u[m] == 0 ? cap > 0 : cap < model_rate(b, k, m) * (1 - 1e-9))
			return 0;
	}
	return cfg_cost(b, k) <= b->budget + 1e-9 && cfg_quality(b, k) >= b->q->floor - 1e-9 &&
	       hx_bo_packs(b, k, NULL);
}

/* The least a model costs at U / FSTEPS of the rate with replicas of one
 * shape (INFINITY: none carries it within the inventory). */
static double min_cost(const bo *b, int m, int u)
{
	double best = INFINITY, need = (double)u / FSTEPS * b->lambda;
	if (u == 0)
		return 0;
	/* mixing shapes costs at least the best capacity per dollar */
	for (int c = 0; c < b->nc[m]; c++) {
		const hx_candidate *cd = shape(b, m, c);
		best = fmin(best, need / cd->capacity_rps * cd->usd_per_hour);
	}
	return best;
}

/* The routing splits worth sampling: on the grid, quality at the floor,
 * and a lower bound of their cost within the budget. */
void hx_bo_list_splits(bo *b)
{
	int u[MAXM] = {0};
	b->nsplits = 0;
	for (;;) {
		int sum = 0;
		for (int m = 0; m + 1 < b->nm; m++)
			sum += u[m];
		if (sum <= FSTEPS) {
			cfg k;
			double cost = 0;
			memset(&k, 0, sizeof(k));
			for (int m = 0; m + 1 < b->nm; m++)
				k.u[m] = u[m];
			k.u[b->nm - 1] = FSTEPS - sum;
			for (int m = 0; m < b->nm; m++)
				cost += min_cost(b, m, k.u[m]);
			if (cost <= b->budget + 1e-9 &&
			    cfg_quality(b, &k) >= b->q->floor - 1e-9) {
				b->splits = hx_xrealloc(b->splits,
							(size_t)(b->nsplits + 1) * sizeof(cfg));
				b->splits[b->nsplits++] = k;
			}
		}
		{ /* next u[0 .. nm-2] in odometer order */
			int m = 0;
			while (m + 1 < b->nm && ++u[m] > FSTEPS)
				u[m++] = 0;
			if (m + 1 >= b->nm)
				break;
		}
	}
}

/* GPUs of each class that K's replicas take. */
static void class_use(const bo *b, const cfg *k, int *use)
{
	for (int i = 0; i < b->ncls; i++)
		use[i] = 0;
	for (int m = 0; m < b->nm; m++)
		for (int c = 0; c < b->nc[m]; c++)
			if (k->n[m][c])
				for (int i = 0; i < b->ncls; i++)
					use[i] += k->n[m][c] * hx_cand_use(shape(b, m, c), i);
}

/* Add one replica of a random shape of model M that still fits the class
 * inventory and the budget; 0, or -1 when none does. */
static int add_random_replica(bo *b, cfg *k, int m, int *use, double *left)
{
	int ok[MAXC], n = 0;
	for (int c = 0; c < b->nc[m]; c++) {
		const hx_candidate *cd = shape(b, m, c);
		int fits = cd->usd_per_hour <= *left + 1e-9 && k->n[m][c] < 255;
		for (int i = 0; i < b->ncls && fits; i++)
			fits = use[i] + hx_cand_use(cd, i) <= b->cls_gpus[i];
		if (fits)
			ok[n++] = c;
	}
	if (n == 0)
		return -1;
	{
		int c = ok[(int)(hx_rng_uniform(&b->rng) * n)];
		const hx_candidate *cd = shape(b, m, c);
		k->n[m][c]++;
		*left -= cd->usd_per_hour;
		for (int i = 0; i < b->ncls; i++)
			use[i] += hx_cand_use(cd, i);
	}
	return 0;
}

int hx_bo_rate_binds(const bo *b)
{
	double best[MAXM], gpus = 0;
	int u[MAXM] = {0};

	for (int i = 0; i < b->ncls; i++)
		gpus += b->cls_gpus[i];
	for (int m = 0; m < b->nm; m++) {
		best[m] = 0;
		for (int c = 0; c < b->nc[m]; c++)
			if (shape(b, m, c)->gpus > 0)
				best[m] = fmax(best[m], shape(b, m, c)->capacity_rps /
							    shape(b, m, c)->gpus);
	}
	for (;;) {
		int sum = 0, m;
		for (m = 0; m + 1 < b->nm; m++)
			sum += u[m];
		if (sum <= FSTEPS) {
			cfg k;
			double need = 0;
			memset(&k, 0, sizeof(k));
			for (m = 0; m + 1 < b->nm; m++)
				k.u[m] = u[m];
			k.u[b->nm - 1] = FSTEPS - sum;
			for (m = 0; m < b->nm; m++)
				if (k.u[m] > 0)
					need += best[m] > 0 ? model_rate(b, &k, m) / best[m]
							    : INFINITY;
			if (cfg_quality(b, &k) >= b->q->floor - 1e-9 &&
			    need <= gpus * (1 + 1e-9))
				return 0;
		}
		m = 0;
		while (m + 1 < b->nm && ++u[m] > FSTEPS)
			u[m++] = 0;
		if (m + 1 >= b->nm)
			return 1;
	}
}

/* A random feasible configuration (0), or -1 after many tries: a split
 * drawn from list_splits, then replicas of random shapes added to each
 * model (in random order) until it carries its share, then a few more at
 * random while the budget and inventory allow. */
int hx_bo_random_cfg(bo *b, cfg *k)
{
	if (b->nsplits == 0)
		return -1;
	for (int tries = 0; tries < 100; tries++) {
		int order[MAXM], use[64], ok = 1, extra;
		double left = b->budget;
		*k = b->splits[(int)(hx_rng_uniform(&b->rng) * b->nsplits)];
		for (int m = 0; m < b->nm; m++) {
			int j = (int)(hx_rng_uniform(&b->rng) * (m + 1));
			order[m] = order[j];
			order[j] = m;
		}
		class_use(b, k, use);
		for (int i = 0; i < b->nm && ok; i++) {
			int m = order[i];
			if (k->u[m] == 0)
				continue;
			while (ok && model_cap(b, k, m) < model_rate(b, k, m) * (1 - 1e-9))
				ok = add_random_replica(b, k, m, use, &left) == 0;
		}
		extra = (int)(hx_rng_uniform(&b->rng) * 4);
		for (int t = 0; t < extra && ok; t++) {
			int m = order[(int)(hx_rng_uniform(&b->rng) * b->nm)];
			if (k->u[m] > 0)
				add_random_replica(b, k, m, use, &left);
		}
		if (ok && feasible(b, k))
			return 0;
	}
	return -1;
}

/* A neighbour of K: one replica more or less, one replica changing shape,
 * or 5% of the traffic moved between two models (replicas added to carry
 * it, and a model left without traffic losing its replicas). */
int hx_bo_mutate(bo *b, const cfg *k, cfg *out)
{
	for (int tries = 0; tries < 20; tries++) {
		int m = (int)(hx_rng_uniform(&b->rng) * b->nm),
		    kind = (int)(hx_rng_uniform(&b->rng) * 4);
		int c = (int)(hx_rng_uniform(&b->rng) * b->nc[m]), use[64];
		double left;
		*out = *k;
		if (out->u[m] == 0 && kind != 3)
			continue;
		if (kind == 0) {
			if (out->n[m][c] == 255)
				continue;
			out->n[m][c]++;
		} else if (kind == 1) {
			if (out->n[m][c] == 0)
				continue;
			out->n[m][c]--;
		} else if (kind == 2) {
			int c2 = (int)(hx_rng_uniform(&b->rng) * b->nc[m]);
			if (out->n[m][c] == 0 || c2 == c || out->n[m][c2] == 255)
				continue;
			out->n[m][c]--;
			out->n[m][c2]++;
		} else {
			int m2;
			if (b->nm < 2)
				continue;
			m2 = (m + 1 + (int)(hx_rng_uniform(&b->rng) * (b->nm - 1))) % b->nm;
			if (out->u[m2] == 0)
				continue;
			out->u[m2]--;
			out->u[m]++;
			if (out->u[m2] == 0)
				memset(out->n[m2], 0, sizeof(out->n[m2]));
			class_use(b, out, use);
			left = b->budget - cfg_cost(b, out);
			while (model_cap(b, out, m) < model_rate(b, out, m) * (1 - 1e-9))
				if (add_random_replica(b, out, m, use, &left))
					break;
		}
		if (!cfg_eq(out, k) && feasible(b, out))
			return 0;
	}
	return -1;
}

/* Enumerate the feasible configurations (in a fixed order), calling VISIT
 * on those whose index I satisfies (I - OFFSET) % STRIDE == 0 when
 * STRIDE > 0; returns how many there are (stops counting at ENUM_MAX). */
typedef struct enum_st {
	bo *b;
	long count, stride, next;
	int evaluate, limit; /* limit: evaluations at most (0: none) */
	long work;           /* partial configurations visited */
} enum_st;

/* Counts for shape C of model M onwards (cost so far USD, class use USE). */
static void enum_rec(enum_st *es, cfg *k, int m, int c, double usd, int *use)
{
	bo *b = es->b;
	if (es->count >= ENUM_MAX || ++es->work > 20 * ENUM_MAX) {
		es->count = ENUM_MAX; /* too many to enumerate */
		return;
	}
	if (m == b->nm) {
		if (!feasible(b, k))
			return;
		if (es->evaluate && es->count == es->next &&
		    (!es->limit || b->nev < es->limit)) {
			if (es->stride == 1 && es->b->o->method == HX_BO_EXHAUSTIVE)
				hx_bo_visit_front(b, k);
			else
				hx_bo_visit(b, k);
			es->next += es->stride;
		}
		es->count++;
		return;
	}
	if (c == b->nc[m] || k->u[m] == 0) {
		/* a model done: it must carry its share */
		if (k->u[m] > 0 && model_cap(b, k, m) < model_rate(b, k, m) * (1 - 1e-9))
			return;
		enum_rec(es, k, m + 1, 0, usd, use);
		return;
	}
	{
		const hx_candidate *cd = shape(b, m, c);
		int n = 0;
		for (;;) {
			int fits = 1;
			k->n[m][c] = (unsigned char)n;
			enum_rec(es, k, m, c + 1, usd + n * cd->usd_per_hour, use);
			if (n == b->maxn[m][c] ||
			    usd + (n + 1) * cd->usd_per_hour > b->budget + 1e-9)
				break;
			for (int i = 0; i < b->ncls; i++)
				fits &= use[i] + hx_cand_use(cd, i) <= b->cls_gpus[i];
			if (!fits)
				break;
			for (int i = 0; i < b->ncls; i++)
				use[i] += hx_cand_use(cd, i);
			n++;
		}
		for (int i = 0; i < b->ncls; i++)
			use[i] -= n * hx_cand_use(cd, i);
		k->n[m][c] = 0;
	}
}

static void enum_fracs(enum_st *es, cfg *k, int m, int left)
{
	if (m == es->b->nm - 1) {
		int use[64] = {0};
		k->u[m] = left;
		enum_rec(es, k, 0, 0, 0, use);
		return;
	}
	for (int u = 0; u <= left; u++) {
		k->u[m] = u;
		enum_fracs(es, k, m + 1, left - u);
	}
}

long hx_bo_enumerate(bo *b, long stride, int evaluate_them, int limit)
{
	enum_st es = {b, 0, stride, 0, evaluate_them, limit, 0};
	cfg k;
	memset(&k, 0, sizeof(k));
	enum_fracs(&es, &k, 0, FSTEPS);
	return es.count;
}

/* The grid yardstick: every split of list_splits, one shape per model
 * with traffic, the fewest replicas of it that carry the model's share
 * plus 0, 1 or 2 (the same for every model); the feasible ones counted in
 * that order, those at index next, next + STRIDE, ... evaluated (at most
 * LIMIT).  Returns how many are feasible. */
long hx_bo_grid(bo *b, long stride, int evaluate_them, int limit)
{
	long count = 0, next = 0;
	for (int sp = 0; sp < b->nsplits; sp++) {
		int c[MAXM] = {0};
		for (;;) {
			for (int extra = 0; extra <= 2; extra++) {
				cfg k = b->splits[sp];
				int ok = 1;
				for (int m = 0; m < b->nm && ok; m++) {
					double need;
					int n;
					if (k.u[m] == 0)
						continue;
					need = model_rate(b, &k, m) /
					       shape(b, m, c[m])->capacity_rps;
					n = (int)ceil(need - 1e-9);
					n = (n < 1 ? 1 : n) + extra;
					ok = n <= 255;
					k.n[m][c[m]] = (unsigned char)(ok ? n : 0);
				}
				if (!ok || !feasible(b, &k))
					continue;
				if (evaluate_them && count == next &&
				    (!limit || b->nev < limit)) {
					hx_bo_visit(b, &k);
					next += stride;
				}
				count++;
			}
			{ /* next shape tuple (models without traffic stay at 0) */
				int m = 0;
				while (m < b->nm &&
				       (b->splits[sp].u[m] == 0 || ++c[m] == b->nc[m])) {
					c[m] = 0;
					m++;
				}
				if (m == b->nm)
					break;
			}
		}
	}
	return count;
}
