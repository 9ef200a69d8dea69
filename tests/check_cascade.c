/* Check suite: the quality profile's functions equal hand-computed values,
 * the cascade's deployment MILP equals exhaustive search on a tiny cluster,
 * its plans pass the independent check (which catches broken cascades),
 * the routing split meets its floor, and the simulator's escalations
 * reproduce the profile's traffic fractions. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "planners/candidates.h"
#include "model/gen.h"
#include "planners/baseline.h"
#include "planners/cascade.h"
#include "planners/colocated.h"
#include "planners/compose.h"
#include "planners/disagg.h"
#include "planners/pipeline.h"
#include "model/quality.h"
#include "sim/sim.h"
#include "plan/verify.h"
#include "check_util.h"

static char tmpdir[] = "/tmp/hx-cascade-XXXXXX";
static hx_catalog cat;

/* Four requests, three models (scores by hand, see the tests). */
static const char *const hand_json =
    "{\"version\": 1, \"rate_rps\": 8,"
    " \"prompt_tokens\": {\"buckets\": [[100, 1], [400, 1]]},"
    " \"output_tokens\": {\"buckets\": [[10, 1], [40, 1]]},"
    " \"slo\": {\"ttft_ms\": 30000, \"tpot_ms\": 50},"
    " \"quality\": {\"floor\": 60, \"models\": [%s], \"samples\": ["
    "  {\"prompt_tokens\": 100, \"output_tokens\": 10, \"scores\": [90, 95, 99]},"
    "  {\"prompt_tokens\": 200, \"output_tokens\": 20, \"scores\": [50, 80, 90]},"
    "  {\"prompt_tokens\": 300, \"output_tokens\": 30, \"scores\": [40, 60, 85]},"
    "  {\"prompt_tokens\": 400, \"output_tokens\": 40, \"scores\": [70, 40, 95]}]}}";

static const char *write_file(const char *name, const char *text)
{
	static char path[256];
	FILE *f;
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	ck_assert(f != NULL);
	fputs(text, f);
	fclose(f);
	return path;
}

static void load_hand(hx_workload *w)
{
	char text[2048];
	hx_err err = {0};
	snprintf(text, sizeof(text), hand_json,
		 "\"qwen3-8b\", \"qwen3-32b\", \"qwen3-235b-a22b\"");
	ck_assert_msg(hx_workload_load(w, write_file("hand.json", text), &err) == 0, "%s",
		      err.msg);
	ck_assert(w->quality != NULL);
}

static void setup(void)
{
	hx_err err = {0};
	ck_assert_msg(hx_catalog_load(&cat, NULL, &err) == 0, "%s", err.msg);
}

static void teardown(void)
{
	hx_catalog_release(&cat);
}

#define NEAR(a, b)                                                                             \
	ck_assert_msg(fabs((a) - (b)) < 1e-12, "%s = %.15g, not %.15g", #a, (double)(a),       \
		      (double)(b))

START_TEST(test_loader)
{
	hx_workload w;
	const hx_quality *q;
	load_hand(&w);
	q = w.quality;
	ck_assert_int_eq(q->nmodels, 3);
	ck_assert_int_eq(q->nsamples, 4);
	ck_assert_str_eq(q->model[2], "qwen3-235b-a22b");
	NEAR(q->floor, 60);
	NEAR(q->prompt[3], 400);
	NEAR(q->output[1], 20);
	NEAR(hx_quality_score(q, 1, 2), 60);
	NEAR(hx_quality_score(q, 0, 3), 70);
	hx_workload_release(&w);
}
END_TEST

START_TEST(test_thresholds_by_hand)
{
	hx_workload w;
	hx_cascade_eval e;
	double theta[] = {60, 70};
	load_hand(&w);
	/* Sample 0: 90 >= 60 at the 8B.  1: 50 < 60, then 80 >= 70 at the 32B.
	 * 2: 40, 60 < 70, answered by the 235B (85).  3: 70 >= 60 at the 8B. */
	hx_cascade_evaluate(w.quality, theta, &e);
	NEAR(e.quality, (90 + 80 + 85 + 70) / 4.0);
	NEAR(e.answer[0], 0.5);
	NEAR(e.answer[1], 0.25);
	NEAR(e.answer[2], 0.25);
	NEAR(e.reach[0], 1);
	NEAR(e.reach[1], 0.5);
	NEAR(e.reach[2], 0.25);
	NEAR(e.escalate[0], 0.5);
	NEAR(e.escalate[1], 0.5);
	NEAR(e.escalate[2], 0);
	/* A threshold equal to the score accepts (>=). */
	theta[0] = 70;
	theta[1] = 80;
	hx_cascade_evaluate(w.quality, theta, &e);
	NEAR(e.answer[0], 0.5);  /* 90 and exactly 70 */
	NEAR(e.answer[1], 0.25); /* exactly 80 */
	NEAR(e.quality, (90 + 80 + 85 + 70) / 4.0);
	/* Skipping the 32B (threshold above 100): samples 1 and 2 go from the
	 * 8B straight to the 235B (90 and 85). */
	theta[0] = 60;
	theta[1] = HX_CASCADE_SKIP;
	hx_cascade_evaluate(w.quality, theta, &e);
	NEAR(e.quality, (90 + 90 + 85 + 70) / 4.0);
	NEAR(e.reach[1], 0);
	NEAR(e.reach[2], 0.5);
	NEAR(e.escalate[0], 0.5);
	NEAR(e.escalate[1], 0);
	ck_assert_int_eq(e.stages, 2);
	/* and back from a plan's steps */
	{
		hx_cascade_step st[2] = {{"qwen3-8b", 60, 0.5}, {"qwen3-235b-a22b", 0, 0}};
		double back[3];
		ck_assert(hx_cascade_thresholds(w.quality, st, 2, back) == 0);
		NEAR(back[0], 60);
		ck_assert(back[1] > 100);
		strcpy(st[1].model, "qwen3-14b");
		ck_assert(hx_cascade_thresholds(w.quality, st, 2, back) == -1);
	}
	hx_workload_release(&w);
}
END_TEST

START_TEST(test_extremes)
{
	hx_workload w;
	hx_cascade_eval e;
	double none[] = {0, 0}, all[] = {100, 100};
	load_hand(&w);
	hx_cascade_evaluate(w.quality, none, &e);
	NEAR(e.answer[0], 1);
	NEAR(e.reach[1], 0);
	NEAR(e.reach[2], 0);
	NEAR(e.escalate[0], 0);
	NEAR(e.quality, hx_quality_mean(w.quality, 0));
	NEAR(e.quality, 62.5);
	hx_cascade_evaluate(w.quality, all, &e);
	NEAR(e.answer[2], 1);
	NEAR(e.reach[1], 1);
	NEAR(e.reach[2], 1);
	NEAR(e.escalate[0], 1);
	NEAR(e.escalate[1], 1);
	NEAR(e.quality, 92.25);
	/* Skipping the first two: everything to the largest, alone. */
	all[0] = all[1] = HX_CASCADE_SKIP;
	hx_cascade_evaluate(w.quality, all, &e);
	NEAR(e.reach[0], 0);
	NEAR(e.reach[2], 1);
	ck_assert_int_eq(e.stages, 1);
	NEAR(e.quality, 92.25);
	hx_workload_release(&w);
}
END_TEST

START_TEST(test_model_workloads)
{
	hx_workload w, m1, m2, m0;
	hx_err err = {0};
	double theta[] = {60, 70}, none[] = {0, 0};
	load_hand(&w);
	ck_assert(hx_cascade_model_workload(w.quality, &w, theta, 0, &m0, &err) == 0);
	ck_assert(hx_cascade_model_workload(w.quality, &w, theta, 1, &m1, &err) == 0);
	ck_assert(hx_cascade_model_workload(w.quality, &w, theta, 2, &m2, &err) == 0);
	NEAR(m0.rate_rps, 8);
	NEAR(hx_dist_mean(&m0.prompt), 250);
	NEAR(m1.rate_rps, 4); /* samples 1 and 2 */
	NEAR(hx_dist_mean(&m1.prompt), 250);
	NEAR(hx_dist_mean(&m1.output), 25);
	NEAR(m1.prompt.max, 300);
	NEAR(m2.rate_rps, 2); /* sample 2 */
	NEAR(hx_dist_mean(&m2.output), 30);
	NEAR(m2.slo.tpot_ms, 50);
	ck_assert(m2.quality == NULL && m2.nclasses == 0);
	hx_workload_release(&m0);
	hx_workload_release(&m1);
	hx_workload_release(&m2);
	ck_assert_int_eq(hx_cascade_model_workload(w.quality, &w, none, 1, &m1, &err),
			 HX_EINFEASIBLE);
	ck_assert(strstr(err.msg, "no request of the quality profile reaches qwen3-32b") !=
		  NULL);
	hx_workload_release(&w);
}
END_TEST

START_TEST(test_route_quality)
{
	hx_workload w;
	double f[] = {0.5, 0.25, 0.25};
	load_hand(&w);
	NEAR(hx_quality_mean(w.quality, 1), (95 + 80 + 60 + 40) / 4.0);
	NEAR(hx_route_quality(w.quality, f), 0.5 * 62.5 + 0.25 * 68.75 + 0.25 * 92.25);
	hx_workload_release(&w);
}
END_TEST

/* ---- deployment MILP vs exhaustive search ---------------------------------- */

static void dfs(hx_candset *const *s, const double *reach, int nm, int m, int c, int *left,
		double *cap, double *best)
{
	if (m == nm) {
		double k = INFINITY;
		for (int i = 0; i < nm; i++)
			k = fmin(k, cap[i] / reach[i]);
		*best = fmax(*best, k);
		return;
	}
	if (c == s[m]->n) {
		dfs(s, reach, nm, m + 1, 0, left, cap, best);
		return;
	}
	for (int n = 0;; n++) {
		int ok = 1;
		for (int k = 0; k < s[m]->ncls; k++)
			ok &= n * hx_cand_use(&s[m]->c[c], k) <= left[k];
		if (!ok)
			break;
		for (int k = 0; k < s[m]->ncls; k++)
			left[k] -= n * hx_cand_use(&s[m]->c[c], k);
		cap[m] += n * s[m]->c[c].capacity_rps;
		dfs(s, reach, nm, m, c + 1, left, cap, best);
		cap[m] -= n * s[m]->c[c].capacity_rps;
		for (int k = 0; k < s[m]->ncls; k++)
			left[k] += n * hx_cand_use(&s[m]->c[c], k);
	}
}

START_TEST(test_milp_equals_exhaustive)
{
	static const char *const clusters[] = {
	    "{\"version\": 1, \"nodes\": [{\"name\": \"a\", \"gpu\": \"h100-sxm\", \"count\": "
	    "4},"
	    " {\"name\": \"b\", \"gpu\": \"l40s\", \"count\": 2}]}",
	    "{\"version\": 1, \"nodes\": [{\"name\": \"a\", \"gpu\": \"a100-80g\", \"count\": "
	    "2},"
	    " {\"name\": \"b\", \"gpu\": \"l4\", \"count\": 4}]}",
	    NULL};
	static const double thetas[][1] = {{60}, {75}, {100}};
	char text[2048];
	hx_workload w;
	hx_err err = {0};
	hx_model models[2];

	snprintf(text, sizeof(text), hand_json, "\"qwen3-8b\", \"qwen3-14b\", \"qwen3-32b\"");
	ck_assert_msg(hx_workload_load(&w, write_file("hand2.json", text), &err) == 0, "%s",
		      err.msg);
	w.quality->nmodels = 2; /* the first two columns: 8B -> 14B */
	ck_assert(hx_model_resolve(&cat, "qwen3-8b", &models[0], &err) == 0);
	ck_assert(hx_model_resolve(&cat, "qwen3-14b", &models[1], &err) == 0);
	for (int ci = 0; clusters[ci]; ci++) {
		const char *cpath = write_file("c.json", clusters[ci]);
		hx_cluster c;
		ck_assert_msg(hx_cluster_load(&c, cpath, &cat, &err) == 0, "%s", err.msg);
		for (size_t ti = 0; ti < sizeof(thetas) / sizeof(thetas[0]); ti++) {
			hx_problem pb = {&cat, &c, &w, &models[0], 1, cpath, cpath, NULL};
			hx_plan_opts o = {HX_OBJ_CAPACITY, 0, 0, 0, NULL, 0};
			hx_candset sets[2], *sp[2] = {&sets[0], &sets[1]};
			hx_workload mw[2];
			hx_cascade_eval e;
			hx_plan p;
			hx_violation *v = NULL;
			int left[64], nv = 0;
			double cap[2] = {0, 0}, best = 0;
			/* The documented stage budget: (30000 - 1 * (40 - 1) * 50) / 2. */
			double budget = (30000 - 39 * 50.0) / 2;

			hx_cascade_evaluate(w.quality, thetas[ti], &e);
			for (int i = 0; i < 2; i++) {
				hx_problem pi = pb;
				ck_assert(hx_cascade_model_workload(w.quality, &w, thetas[ti],
								    i, &mw[i], &err) == 0);
				mw[i].slo.ttft_ms = budget;
				pi.model = &models[i];
				pi.workload = &mw[i];
				ck_assert(hx_candidates(&pi, NULL, &sets[i], &err) == 0);
				ck_assert(sets[i].n > 0);
			}
			for (int k = 0; k < sets[0].ncls; k++)
				left[k] = sets[0].cls[k].nnodes * sets[0].cls[k].gpus_per_node;
			dfs(sp, e.reach, 2, 0, 0, left, cap, &best);
			ck_assert(best > 0);
			ck_assert_msg(hx_plan_cascade_at(&pb, &o, thetas[ti], &p, &err) == 0,
				      "%s", err.msg);
			ck_assert_str_eq(p.solver.status, "optimal");
			ck_assert_msg(fabs(p.solver.objective - best) <= 1e-5 * best,
				      "cluster %d theta %g: MILP %.6f vs exhaustive %.6f", ci,
				      thetas[ti][0], p.solver.objective, best);
			ck_assert(hx_verify_plan(&p, &c, &v, &nv) == 0);
			ck_assert_msg(nv == 0, "%s: %s", nv ? v[0].ptr : "",
				      nv ? v[0].msg : "");
			NEAR(p.cascade[0].escalate, e.escalate[0]);
			NEAR(p.cascade[0].threshold, thetas[ti][0]);
			free(v);
			hx_plan_release(&p);
			for (int i = 0; i < 2; i++) {
				hx_candset_release(&sets[i]);
				hx_workload_release(&mw[i]);
			}
		}
		hx_cluster_release(&c);
	}
	hx_workload_release(&w);
}
END_TEST

/* ---- whole plans on the example profile ------------------------------------ */

static const char *const h16 =
    "{\"version\": 1, \"nodes\": [{\"name\": \"n0\", \"gpu\": \"h100-sxm\", \"count\": 8},"
    " {\"name\": \"n1\", \"gpu\": \"h100-sxm\", \"count\": 8}]}";

typedef struct fixture {
	hx_workload w;
	hx_cluster c;
	hx_model models[HX_QUALITY_MAX_MODELS];
	hx_problem pb;
} fixture;

static void fixture_init(fixture *f)
{
	hx_err err = {0};
	const char *wp = hx_check_src("examples/workloads/cascade.json"), *cp;
	ck_assert_msg(hx_workload_load(&f->w, wp, &err) == 0, "%s", err.msg);
	cp = write_file("h16.json", h16);
	ck_assert_msg(hx_cluster_load(&f->c, cp, &cat, &err) == 0, "%s", err.msg);
	for (int i = 0; i < f->w.quality->nmodels; i++)
		ck_assert(hx_model_resolve(&cat, f->w.quality->model[i], &f->models[i], &err) ==
			  0);
	f->pb = (hx_problem){&cat, &f->c, &f->w, &f->models[0], 1, cp, wp, NULL};
}

static void fixture_release(fixture *f)
{
	hx_workload_release(&f->w);
	hx_cluster_release(&f->c);
}

START_TEST(test_cascade_plan)
{
	fixture f;
	hx_plan p;
	hx_plan_opts o = {HX_OBJ_CAPACITY, 0, 0, 0, NULL, 0};
	hx_err err = {0};
	hx_violation *v = NULL;
	hx_cascade_eval e;
	double theta[HX_QUALITY_MAX_MODELS] = {0};
	int nv = 0;

	fixture_init(&f);
	ck_assert_msg(hx_plan_cascade(&f.pb, &o, &p, &err) == 0, "%s", err.msg);
	ck_assert(hx_verify_plan(&p, &f.c, &v, &nv) == 0);
	ck_assert_msg(nv == 0, "%s: %s", nv ? v[0].ptr : "", nv ? v[0].msg : "");
	ck_assert(p.predicted.has_quality);
	ck_assert(p.predicted.quality >= f.w.quality->floor);
	ck_assert(p.ncascade >= 1);
	/* The plan's record is the profile's evaluation of its thresholds. */
	ck_assert(hx_cascade_thresholds(f.w.quality, p.cascade, p.ncascade, theta) == 0);
	hx_cascade_evaluate(f.w.quality, theta, &e);
	ck_assert(fabs(e.quality - p.predicted.quality) < 1e-6);
	ck_assert_int_eq(e.stages, p.ncascade);
	for (int i = 0, k = 0; i < f.w.quality->nmodels; i++)
		if (e.reach[i] > 0) {
			ck_assert_str_eq(p.cascade[k].model, f.w.quality->model[i]);
			ck_assert(fabs(e.escalate[i] - p.cascade[k].escalate) < 1e-6);
			k++;
		}
	ck_assert(strcmp(p.solver.status, "heuristic") == 0 ||
		  strcmp(p.solver.status, "work_limit") == 0);
	/* At least as good as any single threshold pair it could have kept:
	 * the search never ends worse than where the floor lets it start. */
	ck_assert(p.predicted.capacity_rps > 0);
	free(v);
	hx_plan_release(&p);

	/* A floor no thresholds reach is exit 3, naming the floor. */
	f.w.quality->floor = 99;
	ck_assert_int_eq(hx_plan_cascade(&f.pb, &o, &p, &err), HX_EINFEASIBLE);
	ck_assert_msg(
	    strstr(err.msg, "quality floor of 99 is above what any thresholds reach") != NULL,
	    "%s", err.msg);
	fixture_release(&f);
}
END_TEST

START_TEST(test_route_plan)
{
	fixture f;
	hx_plan p;
	hx_plan_opts o = {HX_OBJ_CAPACITY, 0, 0, 0, NULL, 0};
	hx_err err = {0};
	hx_violation *v = NULL;
	double frac[HX_QUALITY_MAX_MODELS] = {0}, sum = 0;
	int nv = 0;

	fixture_init(&f);
	for (int floor = 70; floor <= 85; floor += 5) {
		f.w.quality->floor = floor;
		ck_assert_msg(hx_plan_route(&f.pb, &o, &p, &err) == 0, "%s", err.msg);
		ck_assert(hx_verify_plan(&p, &f.c, &v, &nv) == 0);
		ck_assert_msg(nv == 0, "%s: %s", nv ? v[0].ptr : "", nv ? v[0].msg : "");
		ck_assert_str_eq(p.solver.status, "optimal");
		ck_assert(p.ncascade == 0);
		/* The fractions the ingress weights give each model meet the floor. */
		memset(frac, 0, sizeof(frac));
		sum = 0;
		for (int i = 0; i < p.ningress; i++) {
			const hx_plan_group *g =
			    &p.groups[hx_plan_group_index(&p, p.ingress[i].to)];
			for (int m = 0; m < f.w.quality->nmodels; m++)
				if (strcmp(g->model, f.models[m].name) == 0)
					frac[m] += p.ingress[i].weight;
			sum += p.ingress[i].weight;
		}
		ck_assert_msg(fabs(sum - 1) < 2e-6, "floor %d: sum %.17g over %d routes", floor,
			      sum, p.ningress);
		ck_assert_msg(hx_route_quality(f.w.quality, frac) >= floor - 1e-3,
			      "floor %d: %g", floor, hx_route_quality(f.w.quality, frac));
		ck_assert(fabs(hx_route_quality(f.w.quality, frac) - p.predicted.quality) <
			  1e-3);
		free(v);
		v = NULL;
		hx_plan_release(&p);
	}
	/* Above the best model's mean score no split reaches the floor. */
	f.w.quality->floor = 95;
	ck_assert_int_eq(hx_plan_route(&f.pb, &o, &p, &err), HX_EINFEASIBLE);
	ck_assert_msg(
	    strstr(err.msg,
		   "quality floor of 95 is above what any split reaches (at most 92.6") &&
		strstr(err.msg, "everything to qwen3-235b-a22b)"),
	    "%s", err.msg);
	fixture_release(&f);
}
END_TEST

START_TEST(test_sim_reproduces_fractions)
{
	fixture f;
	hx_plan p;
	hx_plan_opts o = {HX_OBJ_CAPACITY, 0, 0, 0, NULL, 0};
	hx_err err = {0};
	hx_trace t;
	hx_sim_report r;
	hx_sim_opts so = {7, 1, NULL, NULL};
	hx_cascade_eval e;
	double theta[] = {75, 85};
	const int n = 4000;
	long esc1 = 0, esc2 = 0;

	fixture_init(&f);
	f.w.quality->floor = 0;
	ck_assert_msg(hx_plan_cascade_at(&f.pb, &o, theta, &p, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(p.ncascade, 3);
	hx_cascade_evaluate(f.w.quality, theta, &e);
	ck_assert(hx_gen_workload(&f.w, 5, n, 0, 11, &t, &err) == 0);
	ck_assert_msg(hx_simulate(&p, &f.w, &t, &so, &r, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(r.finished + r.dropped, n);
	for (int i = 0; i < r.nrecords; i++) {
		esc1 += r.records[i].escalations >= 1;
		esc2 += r.records[i].escalations >= 2;
	}
	/* Within 4 standard deviations of the binomial. */
	for (int k = 1; k <= 2; k++) {
		double got = (k == 1 ? esc1 : esc2) / (double)n, want = e.reach[k];
		double sd = sqrt(want * (1 - want) / n);
		ck_assert_msg(fabs(got - want) <= 4 * sd,
			      "reach[%d]: simulated %.4f, profile %.4f (sd %.4f)", k, got, want,
			      sd);
	}
	hx_sim_report_release(&r);
	hx_trace_release(&t);
	hx_plan_release(&p);
	fixture_release(&f);
}
END_TEST

/* A cascade plan broken one way at a time: the check names each defect. */
START_TEST(test_verify_catches)
{
	fixture f;
	hx_plan p;
	hx_plan_opts o = {HX_OBJ_CAPACITY, 0, 0, 0, NULL, 0};
	hx_err err = {0};
	double theta[] = {75, 85};
	static const struct {
		int what;
		const char *ptr, *msg;
	} cases[] = {
	    {0, "/routing/cascade/2/escalate",
	     "the last model escalates 0.5 of its requests, but no model follows it"},
	    {1, "/routing/cascade/1/model", "is step 0 too: a cascade visits each model once"},
	    {2, "/routing/cascade/0/threshold", "120 is not a judge score (0 to 100)"},
	    {3, "/routing/ingress/0/group",
	     "but a cascade's requests enter at its first model (qwen3-8b)"},
	    {4, "/groups/0/model",
	     "is not a step of the plan's cascade: no request reaches it"},
	    {5, "/routing/cascade/1/model",
	     "no replica of \"qwen3-32b\" answers the requests this step gets"},
	};

	fixture_init(&f);
	f.w.quality->floor = 0;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		hx_violation *v = NULL;
		int nv = 0, found = 0;
		ck_assert_msg(hx_plan_cascade_at(&f.pb, &o, theta, &p, &err) == 0, "%s",
			      err.msg);
		ck_assert(hx_verify_plan(&p, &f.c, &v, &nv) == 0);
		free(v);
		switch (cases[c].what) {
		case 0: p.cascade[2].escalate = 0.5; break;
		case 1: strcpy(p.cascade[1].model, p.cascade[0].model); break;
		case 2: p.cascade[0].threshold = 120; break;
		case 3: /* send the traffic to a 32B group */
			for (int g = 0; g < p.ngroups; g++)
				if (strcmp(p.groups[g].model, "qwen3-32b") == 0)
					strcpy(p.ingress[0].to, p.groups[g].name);
			break;
		case 4:
			p.ncascade = 2; /* the 235B's groups are left over */
			p.cascade[1].escalate = 0;
			for (int g = 0; g < p.ngroups; g++)
				if (strcmp(p.groups[g].model, "qwen3-235b-a22b") == 0) {
					/* move it first so the pointer is /groups/0 */
					hx_plan_group tmp = p.groups[0];
					p.groups[0] = p.groups[g];
					p.groups[g] = tmp;
					break;
				}
			break;
		case 5: /* the 32B loses its groups to the 8B */
			for (int g = 0; g < p.ngroups; g++)
				if (strcmp(p.groups[g].model, "qwen3-32b") == 0)
					strcpy(p.groups[g].model, "qwen3-8b");
			break;
		}
		hx_verify_plan(&p, &f.c, &v, &nv);
		for (int i = 0; i < nv; i++)
			found |= strcmp(v[i].ptr, cases[c].ptr) == 0 &&
				 strstr(v[i].msg, cases[c].msg) && v[i].cls == HX_V_ROUTING;
		if (!found)
			for (int i = 0; i < nv; i++)
				fprintf(stderr, "  %s: %s\n", v[i].ptr, v[i].msg);
		ck_assert_msg(found, "case %zu: no violation at %s: %s", c, cases[c].ptr,
			      cases[c].msg);
		free(v);
		hx_plan_release(&p);
	}
	fixture_release(&f);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cascade");
	TCase *tc = tcase_create("quality");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_loader);
	tcase_add_test(tc, test_thresholds_by_hand);
	tcase_add_test(tc, test_extremes);
	tcase_add_test(tc, test_model_workloads);
	tcase_add_test(tc, test_route_quality);
	suite_add_tcase(s, tc);
	tc = tcase_create("plans");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_milp_equals_exhaustive);
	tcase_add_test(tc, test_cascade_plan);
	tcase_add_test(tc, test_route_plan);
	tcase_add_test(tc, test_sim_reproduces_fractions);
	tcase_add_test(tc, test_verify_catches);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run_in(suite(), tmpdir);
}
