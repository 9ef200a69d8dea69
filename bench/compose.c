/*
 * compose: the composition planner (plan --mode compose) and replan.
 *  1. For Llama 3.1 8B and 70B on the chat and code workloads, over offers
 *     of six GPU types (512 GPUs of each, so every type alone is feasible):
 *     the rent of hexplan's mix beside the cheapest single GPU type meeting
 *     the same SLOs (the same planner on that type's offer alone); at a
 *     fixed budget (that cheapest single type's rent), the rate the mix
 *     carries beside the best single type's; the planning time (median of
 *     3); and the simulated SLO attainment of the composed plan on requests
 *     drawn from the workload with a seed the planner never saw.
 *  2. replan after one node failure on 256-GPU colocated plans (5 GPU
 *     types): time (median of 3) and the fraction of replicas kept, when
 *     routing alone suffices and when new replicas must start.
 * Targets: planning <= 2 s for 6 types x 9 classes; replan <= 1 s; the
 * composed plan's attainment >= the workload's target.
 *
 * usage: bench/compose   (from the top of the tree)
 */
#include "config.h"

#include <math.h>

#include "bench_util.h"
#include "planners/compose.h"
#include "model/gen.h"
#include "planners/pipeline.h"
#include "planners/replan.h"
#include "sim/sim.h"

static const char *const types[] = {"h100-sxm", "a100-80g", "l40s", "a6000", "a10g", "l4"};
static const double prices[] = {2.99, 1.79, 0.86, 0.80, 1.01, 0.81};
static const int per_node[] = {8, 8, 4, 4, 4, 8};
#define NTYPES 6

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* An offers file: type ONLY (-1: all six). */
static void offers_file(char *path, int only)
{
	int fd = mkstemp(path), first = 1;
	FILE *f = fdopen(fd, "w");
	fprintf(f, "{\"version\": 1, \"offers\": [");
	for (int t = 0; t < NTYPES; t++) {
		if (only >= 0 && t != only)
			continue;
		fprintf(f,
			"%s{\"gpu\": \"%s\", \"max_count\": 512, \"usd_per_hour\": %g, "
			"\"gpus_per_node\": %d}",
			first ? "" : ", ", types[t], prices[t], per_node[t]);
		first = 0;
	}
	fprintf(f, "]}\n");
	fclose(f);
}

/* Compose on CPATH: 0 with P filled, else the error code. */
static int compose(const hx_catalog *cat, const char *cpath, const char *wpath,
		   const hx_workload *w, const hx_model *m, double budget, hx_plan *p,
		   double *secs)
{
	hx_cluster c;
	hx_problem pb;
	hx_plan_opts o = {HX_OBJ_COST, 60, 0, 0, NULL, 0, budget};
	hx_err err = {0};
	double t0;
	int rc;

	if (hx_cluster_load(&c, cpath, cat, &err)) {
		fprintf(stderr, "compose: %s\n", err.msg);
		exit(1);
	}
	pb = (hx_problem){cat, &c, w, m, 1, cpath, wpath, NULL};
	t0 = bench_now();
	rc = hx_plan_compose(&pb, &o, p, &err);
	if (secs)
		*secs = bench_now() - t0;
	hx_cluster_release(&c);
	return rc;
}

static double attainment(const hx_plan *p, const hx_workload *w, double rate)
{
	hx_trace t;
	hx_sim_report r;
	hx_sim_opts so = {424242, 0, NULL, NULL};
	hx_err err = {0};
	double a;

	if (hx_gen_workload(w, rate, 20000, 0, so.seed, &t, &err) ||
	    hx_simulate(p, w, &t, &so, &r, &err)) {
		fprintf(stderr, "compose: %s\n", err.msg);
		exit(1);
	}
	a = r.slo_attainment;
	hx_sim_report_release(&r);
	hx_trace_release(&t);
	return a;
}

static void mix_vs_single(const hx_catalog *cat, const char *model, const char *wpath,
			  double scale)
{
	char all[] = "/tmp/hx-bench-compose-XXXXXX", one[NTYPES][32];
	hx_workload w;
	hx_model m;
	hx_err err = {0};
	hx_plan p;
	double t[3], usd_mix, usd_single = INFINITY, kappa_mix = 0, kappa_single = 0, att;
	int best = -1, ntypes_mix = 0;
	char used[NTYPES] = {0};

	if (hx_workload_load(&w, wpath, &err) || hx_model_resolve(cat, model, &m, &err)) {
		fprintf(stderr, "compose: %s\n", err.msg);
		exit(1);
	}
	w.rate_rps *= scale;
	offers_file(all, -1);
	for (int i = 0; i < 3; i++) {
		if (compose(cat, all, wpath, &w, &m, 0, &p, &t[i])) {
			fprintf(stderr, "compose: %s %s: no plan\n", model, wpath);
			exit(1);
		}
		if (i < 2)
			hx_plan_release(&p);
	}
	qsort(t, 3, sizeof(double), cmp);
	usd_mix = p.predicted.usd_per_hour;
	for (int i = 0; i < p.nrent; i++)
		used[p.rent[i].offer] = 1;
	for (int i = 0; i < NTYPES; i++)
		ntypes_mix += used[i];
	att = attainment(&p, &w, w.rate_rps);
	hx_plan_release(&p);
	for (int k = 0; k < NTYPES; k++) {
		hx_plan q;
		strcpy(one[k], "/tmp/hx-bench-compose-XXXXXX");
		offers_file(one[k], k);
		if (compose(cat, one[k], wpath, &w, &m, 0, &q, NULL) == 0) {
			if (q.predicted.usd_per_hour < usd_single) {
				usd_single = q.predicted.usd_per_hour;
				best = k;
			}
			hx_plan_release(&q);
		}
	}
	/* At the cheapest single type's rent: the most each carries. */
	if (best >= 0) {
		if (compose(cat, all, wpath, &w, &m, usd_single, &p, NULL) == 0) {
			kappa_mix = p.solver.objective;
			hx_plan_release(&p);
		}
		for (int k = 0; k < NTYPES; k++)
			if (compose(cat, one[k], wpath, &w, &m, usd_single, &p, NULL) == 0) {
				kappa_single = fmax(kappa_single, p.solver.objective);
				hx_plan_release(&p);
			}
	}
	printf("%-14s %-5s %4.0fx %7.3f %3d %9.2f %9.2f %-9s %7.1f%% %8.2f %8.2f %6.3f %8.4f "
	       "%6.2f\n",
	       model, strstr(wpath, "chat") ? "chat" : "code", scale, t[1], ntypes_mix, usd_mix,
	       usd_single, best >= 0 ? types[best] : "none",
	       best >= 0 ? 100 * (1 - usd_mix / usd_single) : NAN, kappa_mix * w.rate_rps,
	       kappa_single * w.rate_rps, kappa_single > 0 ? kappa_mix / kappa_single : NAN,
	       att, w.slo.attainment);
	fflush(stdout);
	unlink(all);
	for (int k = 0; k < NTYPES; k++)
		unlink(one[k]);
	hx_workload_release(&w);
}

/* 256 GPUs: 32 nodes of 8 over five types. */
static void replan_case(const hx_catalog *cat, const char *model, int objective,
			double rate_frac)
{
	static const char *const kinds[] = {"h100-sxm", "a100-80g", "l40s", "a10g", "l4"};
	char cpath[] = "/tmp/hx-bench-replan-XXXXXX", cpath2[] = "/tmp/hx-bench-replan2-XXXXXX";
	const char *wpath = "examples/workloads/chat.json";
	int fd = mkstemp(cpath), fd2 = mkstemp(cpath2), victim = -1, nrep = 0;
	FILE *f = fdopen(fd, "w"), *f2 = fdopen(fd2, "w");
	hx_cluster c, c2;
	hx_workload w;
	hx_model m;
	hx_problem pb;
	hx_plan p, q;
	hx_moves mv;
	hx_plan_opts o = {objective, 60, 0, 0, NULL, 0, 0};
	hx_replan_opts ro = {0, hx_pipe_adapt};
	hx_err err = {0};
	double t[3];
	char gone[64];

	for (int pass = 0; pass < 2; pass++) {
		FILE *g = pass ? f2 : f;
		fprintf(g, "{\"version\": 1, \"nodes\": [");
		for (int i = 0, first = 1; i < 32; i++) {
			if (pass && i == victim)
				continue;
			fprintf(g, "%s{\"name\": \"n%d\", \"gpu\": \"%s\", \"count\": 8}",
				first ? "" : ", ", i, kinds[i % 5]);
			first = 0;
		}
		fprintf(g, "]}\n");
		fclose(g);
		if (pass)
			break;
		if (hx_cluster_load(&c, cpath, cat, &err) ||
		    hx_workload_load(&w, wpath, &err) ||
		    hx_model_resolve(cat, model, &m, &err)) {
			fprintf(stderr, "compose: %s\n", err.msg);
			exit(1);
		}
		pb = (hx_problem){cat, &c, &w, &m, 1, cpath, wpath, NULL};
		if (objective == HX_OBJ_CAPACITY) {
			if (hx_plan_colocated(&pb, &o, &p, &err)) {
				fprintf(stderr, "compose: %s\n", err.msg);
				exit(1);
			}
			w.rate_rps = rate_frac * p.predicted.capacity_rps;
		} else {
			w.rate_rps = rate_frac;
			if (hx_plan_colocated(&pb, &o, &p, &err)) {
				fprintf(stderr, "compose: %s\n", err.msg);
				exit(1);
			}
		}
		/* The victim: the node of the first replica. */
		hx_strlcpy(gone, p.groups[0].replicas[0].gpus[0][0].node, sizeof(gone));
		victim = atoi(gone + 1);
	}
	if (hx_cluster_load(&c2, cpath2, cat, &err)) {
		fprintf(stderr, "compose: %s\n", err.msg);
		exit(1);
	}
	for (int g = 0; g < p.ngroups; g++)
		nrep += p.groups[g].nreplicas;
	for (int i = 0; i < 3; i++) {
		double t0 = bench_now();
		hx_problem pb2 = {cat, &c2, &w, &p.models[0], 1, cpath2, wpath, NULL};
		if (hx_replan(&p, &c2, &w, &pb2, &o, &ro, &q, &mv, &err)) {
			fprintf(stderr, "compose: replan: %s\n", err.msg);
			exit(1);
		}
		t[i] = bench_now() - t0;
		if (i < 2) {
			hx_plan_release(&q);
			hx_moves_release(&mv);
		}
	}
	qsort(t, 3, sizeof(double), cmp);
	printf("%-14s %-9s %8.2f %6d %6s %8.3f %6d %6d %6d %8.4f %10.2f\n", model,
	       objective == HX_OBJ_CAPACITY ? "capacity" : "cost", w.rate_rps, nrep, gone, t[1],
	       mv.kept, mv.stopped, mv.started, (double)mv.kept / nrep, mv.bytes_to_load / 1e9);
	fflush(stdout);
	hx_plan_release(&q);
	hx_moves_release(&mv);
	hx_plan_release(&p);
	hx_workload_release(&w);
	hx_cluster_release(&c);
	hx_cluster_release(&c2);
	unlink(cpath);
	unlink(cpath2);
}

int main(void)
{
	hx_catalog cat;
	hx_err err = {0};

	if (hx_catalog_load(&cat, NULL, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	printf("compose: offers of 6 GPU types (512 GPUs each); cost of the mix vs the "
	       "cheapest single "
	       "type; at that single type's rent, the rate each carries\n");
	printf("%-14s %-5s %5s %7s %3s %9s %9s %-9s %8s %8s %8s %6s %8s %6s\n", "model", "load",
	       "rate", "plan_s", "mix", "usd_mix", "usd_one", "one_type", "saving", "rps_mix",
	       "rps_one", "x_one", "attain", "target");
	for (int i = 0; i < 2; i++) {
		double scale = i ? 10 : 1; /* the workloads' rates, and ten times them */
		mix_vs_single(&cat, "llama-3.1-8b", "examples/workloads/chat.json", scale);
		mix_vs_single(&cat, "llama-3.1-8b", "examples/workloads/code.json", scale);
		mix_vs_single(&cat, "llama-3.1-70b", "examples/workloads/chat.json", scale);
		mix_vs_single(&cat, "llama-3.1-70b", "examples/workloads/code.json", scale);
	}
	printf("\nreplan after one node failure, 256-GPU colocated plans (chat workload)\n");
	printf("%-14s %-9s %8s %6s %6s %8s %6s %6s %6s %8s %10s\n", "model", "plan", "rate",
	       "reps", "gone", "replan_s", "kept", "stop", "start", "kept_frac", "load_GB");
	replan_case(&cat, "llama-3.1-8b", HX_OBJ_CAPACITY, 0.8);
	replan_case(&cat, "llama-3.1-70b", HX_OBJ_CAPACITY, 0.8);
	replan_case(&cat, "llama-3.1-70b", HX_OBJ_COST, 60);
	hx_catalog_release(&cat);
	return 0;
}
