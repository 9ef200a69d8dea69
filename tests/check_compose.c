/* Check suite: the composition MILP equals exhaustive search on small
 * instances, offers expand into the documented nodes, length classes
 * partition the requests, and composed plans keep availability and budget
 * and pass the independent check. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planners/compose.h"
#include "plan/verify.h"
#include "check_util.h"

/* ---- exhaustive search ------------------------------------------------------ */

enum { NC = 3, NW = 2, NK = 2 };

typedef struct inst {
	double h[NC * NW], lambda[NW], usd[NK];
	int use[NC * NK], nodes[NK], gpus[NK];
} inst;

/* The most of class 1 that replicas Y carry while class 0 gets at least
 * NEED0: give class 0 the capacity of the configurations best at it
 * relative to class 1 first (a fractional knapsack, exact for two
 * classes).  -1 when class 0 cannot get NEED0. */
static double most_class1(const inst *in, const int *y, double util, double need0)
{
	int order[NC];
	double got1 = 0;

	for (int c = 0; c < NC; c++)
		order[c] = c;
	for (int i = 0; i < NC; i++)
		for (int j = i + 1; j < NC; j++) {
			const double *a = &in->h[order[i] * NW], *b = &in->h[order[j] * NW];
			/* a before b when a0/a1 < b0/b1, i.e. b is relatively better at 0 */
			if (b[0] * a[1] > a[0] * b[1]) {
				int t = order[i];
				order[i] = order[j];
				order[j] = t;
			}
		}
	for (int i = 0; i < NC; i++) {
		int c = order[i];
		double cap = util * y[c]; /* replica-seconds per second */
		double take = in->h[c * NW] > 0 ? fmin(cap, need0 / in->h[c * NW]) : 0;
		need0 -= take * in->h[c * NW];
		got1 += (cap - take) * in->h[c * NW + 1];
	}
	return need0 > 1e-9 ? -1 : got1;
}

static int feasible(const inst *in, const int *y, double util, double kappa)
{
	double g = most_class1(in, y, util, kappa * in->lambda[0]);
	return g >= 0 && g >= kappa * in->lambda[1] - 1e-9;
}

static double best_kappa(const inst *in, const int *y, double util)
{
	double lo = 0, hi = 1e6;
	if (!feasible(in, y, util, 1e-12))
		return 0;
	for (int i = 0; i < 200; i++) {
		double mid = (lo + hi) / 2;
		if (feasible(in, y, util, mid))
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Exhaustive: every y (and the fewest whole nodes each needs). */
static void exhaustive(const inst *in, double util, double budget, double *best_cost,
		       double *best_kappa_out)
{
	int y[NC], ymax[NC];
	*best_cost = INFINITY;
	*best_kappa_out = 0;
	for (int c = 0; c < NC; c++) {
		ymax[c] = 1 << 20;
		for (int k = 0; k < NK; k++)
			if (in->use[c * NK + k] > 0 &&
			    in->nodes[k] * in->gpus[k] / in->use[c * NK + k] < ymax[c])
				ymax[c] = in->nodes[k] * in->gpus[k] / in->use[c * NK + k];
	}
	for (y[0] = 0; y[0] <= ymax[0]; y[0]++)
		for (y[1] = 0; y[1] <= ymax[1]; y[1]++)
			for (y[2] = 0; y[2] <= ymax[2]; y[2]++) {
				double usd = 0;
				int ok = 1;
				for (int k = 0; k < NK; k++) {
					int g = 0, x;
					for (int c = 0; c < NC; c++)
						g += in->use[c * NK + k] * y[c];
					x = (g + in->gpus[k] - 1) / in->gpus[k];
					ok &= x <= in->nodes[k];
					usd += x * in->usd[k];
				}
				if (!ok)
					continue;
				if (budget > 0) {
					if (usd <= budget + 1e-9)
						*best_kappa_out = fmax(*best_kappa_out,
								       best_kappa(in, y, util));
				} else if (usd < *best_cost && feasible(in, y, util, 1)) {
					*best_cost = usd;
				}
			}
}

static void random_inst(inst *in, hx_rng *r)
{
	for (int c = 0; c < NC; c++) {
		for (int w = 0; w < NW; w++)
			in->h[c * NW + w] =
			    hx_rng_uniform(r) < 0.15 ? 0 : 0.5 + 4 * hx_rng_uniform(r);
		for (int k = 0; k < NK; k++)
			in->use[c * NK + k] = 0;
		in->use[c * NK + (c % NK)] = 1 << (int)(hx_rng_uniform(r) * 2);
	}
	for (int k = 0; k < NK; k++) {
		in->nodes[k] = 1 + (int)(hx_rng_uniform(r) * 3);
		in->gpus[k] = 2 << (int)(hx_rng_uniform(r) * 2);
		in->usd[k] = 0.25 * (1 + (int)(hx_rng_uniform(r) * 16));
	}
	for (int w = 0; w < NW; w++)
		in->lambda[w] = 0.5 + 6 * hx_rng_uniform(r);
}

static hx_compose_in as_in(const inst *in, double util, double budget)
{
	return (hx_compose_in){NC,       NW,      NK,         in->h, in->use, in->nodes,
			       in->gpus, in->usd, in->lambda, util,  budget};
}

START_TEST(test_cost_equals_exhaustive)
{
	hx_rng r;
	int solved = 0, infeasible = 0;

	hx_rng_seed(&r, 7);
	for (int t = 0; t < 60; t++) {
		inst in;
		hx_compose_in ci;
		hx_compose_out out;
		hx_milp_opts mo = {0, 0, 0, 0, NULL};
		hx_err err = {0};
		double best, bk;
		int rc;

		random_inst(&in, &r);
		ci = as_in(&in, 0.9, 0);
		exhaustive(&in, 0.9, 0, &best, &bk);
		rc = hx_compose_solve(&ci, &mo, &out, &err);
		if (!isfinite(best)) {
			ck_assert_msg(rc == HX_EINFEASIBLE,
				      "case %d: rc %d, exhaustive finds none", t, rc);
			infeasible++;
			continue;
		}
		ck_assert_msg(rc == 0, "case %d: %s", t, err.msg);
		ck_assert_msg(fabs(out.usd_per_hour - best) < 1e-6,
			      "case %d: MILP %.4f vs exhaustive %.4f", t, out.usd_per_hour,
			      best);
		/* The MILP's own answer is feasible by the independent rule. */
		ck_assert(feasible(&in, out.y, 0.9 + 1e-9, 1 - 1e-7));
		for (int k = 0; k < NK; k++) {
			int g = 0;
			for (int c = 0; c < NC; c++)
				g += in.use[c * NK + k] * out.y[c];
			ck_assert(out.x[k] <= in.nodes[k]);
			ck_assert(g <= out.x[k] * in.gpus[k]);
		}
		hx_compose_out_release(&out);
		solved++;
	}
	ck_assert(solved >= 20 && infeasible >= 1);
}
END_TEST

START_TEST(test_budget_equals_exhaustive)
{
	hx_rng r;

	hx_rng_seed(&r, 11);
	for (int t = 0; t < 40; t++) {
		inst in;
		hx_compose_in ci;
		hx_compose_out out;
		hx_milp_opts mo = {0, 0, 0, 0, NULL};
		hx_err err = {0};
		double best, bk, budget = 0.5 + 6 * hx_rng_uniform(&r);

		random_inst(&in, &r);
		ci = as_in(&in, 0.8, budget);
		exhaustive(&in, 0.8, budget, &best, &bk);
		ck_assert_msg(hx_compose_solve(&ci, &mo, &out, &err) == 0, "case %d: %s", t,
			      err.msg);
		ck_assert_msg(fabs(out.kappa - bk) <= 1e-6 * fmax(1, bk),
			      "case %d: MILP kappa %.6f vs exhaustive %.6f", t, out.kappa, bk);
		ck_assert_msg(out.usd_per_hour <= budget + 1e-9,
			      "case %d: rent %.3f over budget %.3f", t, out.usd_per_hour,
			      budget);
		hx_compose_out_release(&out);
	}
}
END_TEST

/* ---- offers as nodes ---------------------------------------------------------- */

static hx_catalog cat;
static hx_workload chat, classes;

static void setup(void)
{
	hx_err err = {0};
	ck_assert_msg(hx_catalog_load(&cat, NULL, &err) == 0, "%s", err.msg);
	ck_assert_msg(
	    hx_workload_load(&chat, hx_check_src("examples/workloads/chat.json"), &err) == 0,
	    "%s", err.msg);
	ck_assert_msg(hx_workload_load(
			  &classes, hx_check_src("examples/workloads/classes.json"), &err) == 0,
		      "%s", err.msg);
}

static void teardown(void)
{
	hx_workload_release(&chat);
	hx_workload_release(&classes);
	hx_catalog_release(&cat);
}

START_TEST(test_expand_offers)
{
	hx_cluster c, x;
	hx_err err = {0};

	ck_assert_msg(hx_cluster_load(&c,
				      hx_check_src("examples/clusters/owned-plus-offers.json"),
				      &cat, &err) == 0,
		      "%s", err.msg);
	c.offers[1].max_count = 10; /* l40s, 4 per node: 4 + 4 + 2 */
	ck_assert(hx_cluster_expand_offers(&c, 1, &x, &err) == 0);
	ck_assert_int_eq(x.nnodes, 1 + 2 + 3 + 2);
	ck_assert_str_eq(x.nodes[0].name, "own-a100-0");
	ck_assert(x.nodes[0].usd_per_hour == 0);
	ck_assert_str_eq(x.nodes[1].name, "offer0-0");
	ck_assert_str_eq(x.nodes[3].name, "offer1-0");
	ck_assert_str_eq(x.nodes[5].name, "offer1-2");
	ck_assert_int_eq(x.nodes[5].count, 2);
	ck_assert_str_eq(x.nodes[5].gpu.name, "l40s");
	ck_assert(fabs(x.nodes[5].usd_per_hour - 0.86) < 1e-12);
	{
		int j = -1;
		ck_assert_int_eq(hx_offer_node("offer1-2", &j), 1);
		ck_assert_int_eq(j, 2);
		ck_assert_int_eq(hx_offer_node("offer1", &j), -1);
		ck_assert_int_eq(hx_offer_node("offer1-2x", &j), -1);
		ck_assert_int_eq(hx_offer_node("own-a100-0", &j), -1);
	}
	hx_cluster_release(&x);
	/* A fixed node may not take an offer's node name. */
	strcpy(c.nodes[0].name, "offer0-0");
	ck_assert_int_eq(hx_cluster_expand_offers(&c, 0, &x, &err), HX_EINPUT);
	ck_assert_str_eq(err.msg,
			 "node \"offer0-0\" bears a name that offers' nodes take (offerI-J)");
	hx_cluster_release(&c);
}
END_TEST

/* ---- length classes ----------------------------------------------------------- */

START_TEST(test_length_classes)
{
	hx_len_class *k;
	hx_rng r;
	double share = 0;
	int n = hx_len_classes(&chat, 3, &k);

	ck_assert_int_eq(n, 9);
	for (int i = 0; i < n; i++) {
		share += k[i].share;
		ck_assert(k[i].prompt_lo < k[i].prompt_hi && k[i].output_lo < k[i].output_hi);
		/* The class's lengths lie in its ranges. */
		ck_assert(k[i].prompt.tokens[0] >= k[i].prompt_lo);
		ck_assert(k[i].prompt.tokens[k[i].prompt.nb - 1] < k[i].prompt_hi);
		ck_assert(k[i].output.tokens[0] >= k[i].output_lo);
		ck_assert(k[i].output.tokens[k[i].output.nb - 1] < k[i].output_hi);
	}
	ck_assert(fabs(share - 1) < 1e-9);
	/* Every request falls in exactly one class. */
	hx_rng_seed(&r, 3);
	for (int t = 0; t < 2000; t++) {
		int p = (int)hx_dist_sample(&chat.prompt, &r),
		    o = (int)hx_dist_sample(&chat.output, &r);
		int hits = 0;
		for (int i = 0; i < n; i++)
			hits += p >= k[i].prompt_lo && p < k[i].prompt_hi &&
				o >= k[i].output_lo && o < k[i].output_hi;
		ck_assert_int_eq(hits, 1);
	}
	hx_len_classes_free(k, n);
	/* A workload's own classes are taken as they are. */
	n = hx_len_classes(&classes, 3, &k);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(k[0].name, "short");
	ck_assert_int_eq(k[1].prompt_hi, 0);
	hx_len_classes_free(k, n);
}
END_TEST

/* ---- the planner ------------------------------------------------------------- */

static int compose(const char *cluster, const hx_workload *w, const char *model, double budget,
		   hx_plan *p, hx_cluster *c, hx_err *err)
{
	static hx_model m;
	hx_problem pb;
	hx_plan_opts o = {HX_OBJ_COST, 0, 0, 0, NULL, 0, budget};
	ck_assert(hx_cluster_load(c, hx_check_src(cluster), &cat, err) == 0);
	ck_assert(hx_model_resolve(&cat, model, &m, err) == 0);
	{
		static char path[1024];
		hx_strlcpy(path, hx_check_src(cluster), sizeof(path));
		pb = (hx_problem){&cat, c, w, &m, 1, path, path, NULL};
	}
	return hx_plan_compose(&pb, &o, p, err);
}

/* The plan passes the check on the expanded cluster; per offer, the GPUs it
 * places stay within what the offer has. */
static void assert_valid(const hx_plan *p, const hx_cluster *c)
{
	hx_cluster x;
	hx_violation *v = NULL;
	hx_err err = {0};
	int nv = 0;

	ck_assert(hx_cluster_expand_offers(c, 0, &x, &err) == 0);
	hx_verify_plan(p, &x, &v, &nv);
	ck_assert_msg(nv == 0, "%s: %s", nv ? v[0].ptr : "", nv ? v[0].msg : "");
	free(v);
	for (int o = 0; o < c->noffers; o++) {
		int used = 0;
		for (int g = 0; g < p->ngroups; g++)
			for (int r = 0; r < p->groups[g].nreplicas; r++)
				for (int s = 0; s < p->groups[g].nstages; s++)
					for (int k = 0; k < p->groups[g].replicas[r].ngpus[s];
					     k++)
						used += hx_offer_node(p->groups[g]
									  .replicas[r]
									  .gpus[s][k]
									  .node,
								      NULL) == o;
		ck_assert_int_le(used, c->offers[o].max_count);
	}
	hx_cluster_release(&x);
}

START_TEST(test_plan_cost_and_budget)
{
	hx_cluster c;
	hx_plan p, q;
	hx_err err = {0};
	double usd;

	ck_assert_msg(compose("examples/clusters/rent-six.json", &chat, "llama-3.1-8b", 0, &p,
			      &c, &err) == 0,
		      "%s", err.msg);
	assert_valid(&p, &c);
	ck_assert_int_eq(p.nclasses, 9);
	ck_assert(p.nrent >= 1);
	ck_assert(p.predicted.usd_per_hour > 0);
	ck_assert(fabs(p.solver.objective - p.predicted.usd_per_hour) < 1e-6);
	usd = p.predicted.usd_per_hour;
	hx_plan_release(&p);
	hx_cluster_release(&c);

	/* Twice the rent buys at least twice the rate... never more rent than
	 * the budget. */
	ck_assert_msg(compose("examples/clusters/rent-six.json", &chat, "llama-3.1-8b", 2 * usd,
			      &q, &c, &err) == 0,
		      "%s", err.msg);
	assert_valid(&q, &c);
	ck_assert(q.predicted.usd_per_hour <= 2 * usd + 1e-9);
	ck_assert_msg(q.solver.objective >= 1.5, "kappa %g", q.solver.objective);
	hx_plan_release(&q);
	hx_cluster_release(&c);

	/* A budget below one node: exit 3 naming the budget. */
	ck_assert_int_eq(compose("examples/clusters/rent-six.json", &chat, "llama-3.1-8b", 0.5,
				 &q, &c, &err),
			 HX_EINFEASIBLE);
	ck_assert_msg(strstr(err.msg, "the budget of 0.5 USD/h is too small") != NULL, "%s",
		      err.msg);
	hx_cluster_release(&c);
}
END_TEST

/* Owned nodes cost nothing: a rate they carry rents nothing. */
START_TEST(test_owned_first)
{
	hx_cluster c;
	hx_plan p;
	hx_err err = {0};
	double saved = chat.rate_rps;

	chat.rate_rps = 5;
	ck_assert_msg(compose("examples/clusters/owned-plus-offers.json", &chat, "llama-3.1-8b",
			      0, &p, &c, &err) == 0,
		      "%s", err.msg);
	chat.rate_rps = saved;
	assert_valid(&p, &c);
	ck_assert_int_eq(p.nrent, 0);
	ck_assert(p.predicted.usd_per_hour == 0);
	for (int g = 0; g < p.ngroups; g++)
		ck_assert_str_eq(p.groups[g].replicas[0].gpus[0][0].node, "own-a100-0");
	hx_plan_release(&p);
	hx_cluster_release(&c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("compose");
	TCase *tm = tcase_create("milp");
	TCase *tc = tcase_create("planner");
	tcase_set_timeout(tm, 300);
	tcase_add_test(tm, test_cost_equals_exhaustive);
	tcase_add_test(tm, test_budget_equals_exhaustive);
	suite_add_tcase(s, tm);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_expand_offers);
	tcase_add_test(tc, test_length_classes);
	tcase_add_test(tc, test_plan_cost_and_budget);
	tcase_add_test(tc, test_owned_first);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run(suite());
}
