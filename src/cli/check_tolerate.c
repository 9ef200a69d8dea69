/* check --tolerate-failures K: whether a plan's SLO survives the loss of
 * any K nodes.  Each set of lost nodes gives a reduced cluster on which
 * the plan is re-routed as replan does, but without starting a replica
 * (the insurance must be in the plan already); the set holds when the
 * kept replicas carry the workload's rate at the SLO with replan's
 * utilization margin.  K = 1 takes every node the plan uses; K > 1 the K
 * largest of each GPU type, then every K-set of the nodes the plan uses
 * when there are few, else a seeded sample, up to HX_TOLERATE_SETS. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "base/jsonio.h"
#include "planners/pipeline.h"
#include "planners/replan.h"

/* The most sets of lost nodes one check re-routes. */
#define HX_TOLERATE_SETS 64
/* The most unused nodes named on stderr. */
#define HX_TOLERATE_NAMES 10

typedef struct sets {
	int k, n, *idx; /* N sets of K node indexes, each ascending */
} sets;

static int by_index(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Add the set S (K indexes, any order) unless it is there; returns
 * whether it was new. */
static int add_set(sets *ss, int *s, int k)
{
	qsort(s, (size_t)k, sizeof(int), by_index);
	for (int i = 0; i < ss->n; i++)
		if (memcmp(&ss->idx[i * ss->k], s, (size_t)k * sizeof(int)) == 0)
			return 0;
	memcpy(&ss->idx[ss->n++ * ss->k], s, (size_t)k * sizeof(int));
	return 1;
}

/* Whether node A of CL comes before B among the largest: more GPUs, then
 * by name. */
static int larger(const hx_cluster *cl, int a, int b)
{
	const hx_node *x = &cl->nodes[a], *y = &cl->nodes[b];

	return x->count != y->count ? x->count > y->count : strcmp(x->name, y->name) < 0;
}

/* The K largest used nodes of each GPU type (fewer where a type has fewer),
 * one set per type, in SS.  U: the NU used nodes' indexes. */
static void largest_sets(sets *ss, const hx_cluster *cl, const int *u, int nu)
{
	int *of = hx_xcalloc((size_t)nu + 1, sizeof(int)),
	    *s = hx_xcalloc((size_t)ss->k, sizeof(int));

	for (int i = 0; i < nu && ss->n < HX_TOLERATE_SETS; i++) {
		int n = 0, seen = 0;
		for (int j = 0; j < i && !seen; j++)
			seen = strcmp(cl->nodes[u[j]].gpu.name, cl->nodes[u[i]].gpu.name) == 0;
		if (seen)
			continue;
		for (int j = i; j < nu; j++)
			if (strcmp(cl->nodes[u[j]].gpu.name, cl->nodes[u[i]].gpu.name) == 0)
				of[n++] = u[j];
		for (int a = 1; a < n; a++) /* insertion sort: qsort has no context */
			for (int b = a; b > 0 && larger(cl, of[b], of[b - 1]); b--) {
				int t = of[b];
				of[b] = of[b - 1];
				of[b - 1] = t;
			}
		if (n < ss->k)
			continue; /* fewer than K: the samples lose them with others */
		memcpy(s, of, (size_t)ss->k * sizeof(int));
		add_set(ss, s, ss->k);
	}
	free(of);
	free(s);
}

/* C(N, K), or LIMIT + 1 when larger. */
static long choose(int n, int k, long limit)
{
	double c = 1;
	for (int i = 0; i < k; i++) {
		c = c * (n - i) / (i + 1);
		if (c > limit)
			return limit + 1;
	}
	return (long)(c + 0.5);
}

/* The other K-sets of the NU used nodes U: all of them when they fit under
 * HX_TOLERATE_SETS with those SS has, else a sample drawn by R. */
static void other_sets(sets *ss, const int *u, int nu, hx_rng *r)
{
	int k = ss->k, *c = hx_xcalloc((size_t)k, sizeof(int)),
	    *s = hx_xcalloc((size_t)k, sizeof(int));
	int *pool = hx_xcalloc((size_t)nu + 1, sizeof(int));

	if (choose(nu, k, HX_TOLERATE_SETS) <= HX_TOLERATE_SETS) {
		for (int i = 0; i < k; i++)
			c[i] = i;
		while (ss->n < HX_TOLERATE_SETS) {
			int i = k - 1;
			for (int j = 0; j < k; j++)
				s[j] = u[c[j]];
			add_set(ss, s, k);
			while (i >= 0 && c[i] == nu - k + i)
				i--;
			if (i < 0)
				break;
			c[i]++;
			for (int j = i + 1; j < k; j++)
				c[j] = c[j - 1] + 1;
		}
		goto out;
	}
	/* A partial shuffle per draw; repeats are drawn again, a bounded number
	 * of times (there are more sets than the cap, so few repeat). */
	for (int tries = 0; ss->n < HX_TOLERATE_SETS && tries < 20 * HX_TOLERATE_SETS;
	     tries++) {
		memcpy(pool, u, (size_t)nu * sizeof(int));
		for (int i = 0; i < k; i++) {
			int j = i + (int)(hx_rng_next(r) % (uint64_t)(nu - i)), t = pool[i];
			pool[i] = pool[j];
			pool[j] = t;
			s[i] = pool[i];
		}
		add_set(ss, s, k);
	}
out:
	free(c);
	free(s);
	free(pool);
}

/* "node \"a\"" or "nodes \"a\", \"b\"" for the K nodes S of CL, in B. */
static void set_name(hx_buf *b, const hx_cluster *cl, const int *s, int k)
{
	hx_buf_printf(b, "node%s ", k > 1 ? "s" : "");
	for (int i = 0; i < k; i++)
		hx_buf_printf(b, "%s\"%s\"", i ? ", " : "", cl->nodes[s[i]].name);
}

/* Re-route P on CL less the K nodes S, starting nothing: *CAP gets what
 * the kept replicas carry at the SLO, *SHORT whether that falls short of
 * the rate.  Returns 0 or an error (ERR). */
static int lose(const hx_problem *pb, const hx_plan *p, const int *s, int k, double *cap,
		int *short_, hx_err *err)
{
	const hx_cluster *cl = pb->cluster;
	int *gone = hx_xcalloc((size_t)cl->nnodes + 1, sizeof(int)), rc;
	hx_plan_opts po = {HX_OBJ_CAPACITY, 0, 0, 0, NULL, 0, 0};
	hx_replan_opts ro = {0, hx_pipe_adapt, 1};
	hx_cluster less;
	hx_plan q;
	hx_moves mv;

	for (int i = 0; i < k; i++)
		gone[s[i]] = 1;
	hx_cluster_without(cl, gone, &less);
	rc = hx_replan(p, &less, pb->workload, pb, &po, &ro, &q, &mv, err);
	if (rc == 0) {
		*cap = mv.capacity_after_rps;
		*short_ = q.shortage.on;
		hx_plan_release(&q);
		hx_moves_release(&mv);
	} else if (rc == HX_EINFEASIBLE) {
		/* No replica survives: nothing carries the rate. */
		*cap = 0;
		*short_ = 1;
		err->code = 0;
		err->msg[0] = 0;
		rc = 0;
	}
	hx_cluster_release(&less);
	free(gone);
	return rc;
}

void hx_tolerate_release(hx_tolerate *t)
{
	free(t->idx);
	free(t->cap_rps);
	free(t->short_);
	free(t->used);
	memset(t, 0, sizeof(*t));
}

int hx_tolerate_eval(const hx_problem *pb, const hx_plan *p, int k, uint64_t seed,
		     hx_tolerate *t, hx_err *err)
{
	const hx_cluster *cl = pb->cluster;
	int *u = hx_xcalloc((size_t)cl->nnodes + 1, sizeof(int)), nu = 0, rc = 0;
	sets ss = {k, 0, hx_xcalloc((size_t)HX_TOLERATE_SETS * k, sizeof(int))};
	hx_rng r;

	memset(t, 0, sizeof(*t));
	for (int g = 0; g < p->ngroups; g++)
		if (p->groups[g].afd.on) {
			free(u);
			free(ss.idx);
			return hx_errf(
			    err, HX_EINPUT,
			    "group %s is attention/FFN disaggregated: "
			    "--tolerate-failures does not take AFD groups (replan does not "
			    "adapt them)",
			    p->groups[g].name);
		}
	t->worst = -1;
	t->used = hx_xcalloc((size_t)cl->nnodes + 1, 1);
	hx_plan_nodes_used(p, cl, t->used);
	for (int i = 0; i < cl->nnodes; i++)
		if (t->used[i])
			u[nu++] = i;
	if (nu <= k) {
		/* Losing them all: one set. */
		ss.k = nu;
		if (nu > 0)
			add_set(&ss, u, nu);
	} else if (k == 1) {
		for (int i = 0; i < nu; i++)
			add_set(&ss, &u[i], 1);
	} else {
		hx_rng_seed(&r, seed);
		largest_sets(&ss, cl, u, nu);
		other_sets(&ss, u, nu, &r);
	}
	t->k = ss.k;
	t->nsets = ss.n;
	t->idx = ss.idx;
	t->cap_rps = hx_xcalloc((size_t)ss.n + 1, sizeof(double));
	t->short_ = hx_xcalloc((size_t)ss.n + 1, 1);
	for (int i = 0; i < ss.n; i++) {
		int short_;
		if ((rc = lose(pb, p, &ss.idx[i * ss.k], ss.k, &t->cap_rps[i], &short_, err)))
			break;
		t->short_[i] = (char)short_;
		if (!short_)
			continue;
		t->nfail++;
		/* The first of the least capacity: the sets' order is fixed. */
		if (t->worst < 0 || t->cap_rps[i] < t->cap_rps[t->worst])
			t->worst = i;
	}
	free(u);
	if (rc)
		hx_tolerate_release(t);
	return rc;
}

void hx_tolerate_set_name(hx_buf *b, const hx_cluster *cl, const hx_tolerate *t, int i)
{
	set_name(b, cl, &t->idx[i * t->k], t->k);
}

/* The nodes of CL the plan does not use (USED 0), whose loss changes
 * nothing, on one stderr line (ten named) and into SKIPPED. */
static void say_unused(const hx_cluster *cl, const char *used, json_t *skipped)
{
	hx_buf b = {0};
	size_t n;

	for (int i = 0; i < cl->nnodes; i++)
		if (!used[i])
			json_array_append_new(skipped, json_string(cl->nodes[i].name));
	if ((n = json_array_size(skipped)) == 0)
		return;
	hx_buf_printf(&b,
		      "%zu node%s the plan does not use, whose loss changes nothing, "
		      "not checked:",
		      n, n > 1 ? "s" : "");
	/* The line stays short; the report lists them all. */
	for (size_t i = 0; i < n && i < HX_TOLERATE_NAMES; i++)
		hx_buf_printf(&b, "%s \"%s\"", i ? "," : "",
			      json_string_value(json_array_get(skipped, i)));
	if (n > HX_TOLERATE_NAMES)
		hx_buf_printf(&b, " and %zu more", n - HX_TOLERATE_NAMES);
	fprintf(stderr, "hexplan: check: %s\n", b.s);
	hx_buf_release(&b);
}

int hx_check_tolerate(const hx_problem *pb, const hx_plan *p, int k, uint64_t seed,
		      json_t **summary, int *nfail, hx_err *err)
{
	const hx_cluster *cl = pb->cluster;
	const hx_workload *w = pb->workload;
	double need = w->rate_rps / HX_REPLAN_UTIL;
	json_t *o, *skipped, *failing;
	hx_buf b = {0};
	hx_tolerate t;
	int rc;

	*nfail = 0;
	if ((rc = hx_tolerate_eval(pb, p, k, seed, &t, err)))
		return rc;
	o = json_object();
	skipped = json_array();
	failing = json_array();
	say_unused(cl, t.used, skipped);
	for (int i = 0; i < t.nsets; i++) {
		const int *s = &t.idx[i * t.k];
		json_t *f, *names;
		if (!t.short_[i])
			continue;
		set_name(&b, cl, s, t.k);
		fprintf(stderr,
			"hexplan: check: after losing %s: %.3f req/s at the SLO, short of the "
			"%.3f req/s the rate of %g req/s needs at %g%% utilization\n",
			b.s, t.cap_rps[i], need, w->rate_rps, HX_REPLAN_UTIL * 100);
		hx_buf_release(&b);
		f = json_object();
		names = json_array();
		for (int j = 0; j < t.k; j++)
			json_array_append_new(names, json_string(cl->nodes[s[j]].name));
		json_object_set_new(f, "nodes", names);
		json_object_set_new(f, "capacity_rps", json_real(hx_round6(t.cap_rps[i])));
		json_array_append_new(failing, f);
	}
	*nfail = t.nfail;
	hx_jset_int(o, "k", k);
	if (k > 1)
		hx_jset_int(o, "seed", (long)seed);
	hx_jset_int(o, "sets_checked", t.nsets);
	hx_jset_int(o, "sets_failing", t.nfail);
	json_object_set_new(o, "rate_rps", json_real(w->rate_rps));
	json_object_set_new(o, "needs_rps", json_real(hx_round6(need)));
	json_object_set_new(o, "nodes_not_used", skipped);
	json_object_set_new(o, "failing", failing);
	/* One form for any count, as the table line has, for scripts. */
	fprintf(stderr, "hexplan: check: tolerate-failures %d: %d sets checked, %d fail\n", k,
		t.nsets, t.nfail);
	*summary = o;
	hx_tolerate_release(&t);
	return 0;
}
