/*
 * cascade: the cascade planner (Cascadia: deployment MILP + Tchebycheff
 * threshold search) on 16, 32 and 64 H100s (nodes of 8) for the example
 * Qwen3 8B -> 32B -> 235B-A22B profile (examples/workloads/cascade.json), at
 * quality floors 70, 80 and 90.  Per floor: planning time (median of 3 runs),
 * the thresholds and quality chosen, and the simulated capacity at the SLO
 * (hx_sim_capacity, as `simulate --capacity`) with the p95 end-to-end latency
 * at that rate, beside
 *   (a) the single largest model (colocated plan of Qwen3-235B-A22B on all
 *       GPUs; its quality is its mean score, flagged when below the floor),
 *   (b) the same cascade (same thresholds and models) with the GPUs split
 *       evenly between its models (each model at most GPUs/models; the
 *       deployment is otherwise optimized the same way),
 *   (c) the routing split (plan --mode route) at the same floor.
 * Ratios are of simulated capacities measured in this run.  Targets: at
 * least 1.5x the single model at the same floor, and above the even split.
 *
 * usage: bench/cascade [REQUESTS]   (from the top of the tree; default 4000
 * simulated requests per capacity probe)
 */
#include "config.h"

#include <math.h>

#include "bench_util.h"
#include "model/quality.h"
#include "sim/sim.h"

#define WPATH "examples/workloads/cascade.json"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void sim_cap(const hx_plan *p, const hx_workload *w, int n, double *cap, double *p95)
{
	hx_sim_report at;
	hx_err err = {0};
	memset(&at, 0, sizeof(at));
	*cap = 0;
	*p95 = NAN;
	if (hx_sim_capacity(p, w, n, NULL, cap, &at, &err)) {
		fprintf(stderr, "cascade: simulate: %s\n", err.msg);
		exit(1);
	}
	*p95 = at.e2e_ms[2];
	hx_sim_report_release(&at);
}

static void size(const hx_catalog *cat, int gpus, int n)
{
	char cpath[] = "/tmp/hx-bench-cascade-XXXXXX";
	hx_cluster c;
	hx_workload w;
	hx_model big;
	hx_problem pb;
	hx_plan single;
	hx_plan_opts o = {HX_OBJ_CAPACITY, 600, 0, 0, NULL, 0};
	hx_err err = {0};
	double single_cap, single_p95, single_q;
	int last;

	bench_cluster(cat, "h100-sxm", gpus, cpath, &c);
	if (hx_workload_load(&w, WPATH, &err)) {
		fprintf(stderr, "cascade: %s\n", err.msg);
		exit(1);
	}
	last = w.quality->nmodels - 1;
	if (hx_model_resolve(cat, w.quality->model[last], &big, &err)) {
		fprintf(stderr, "cascade: %s\n", err.msg);
		exit(1);
	}
	pb = (hx_problem){cat, &c, &w, &big, 1, cpath, WPATH, NULL};
	if (hx_plan_colocated(&pb, &o, &single, &err)) {
		fprintf(stderr, "cascade: single model: %s\n", err.msg);
		exit(1);
	}
	sim_cap(&single, &w, n, &single_cap, &single_p95);
	single_q = hx_quality_mean(w.quality, last);
	for (int floor = 70; floor <= 90; floor += 10) {
		hx_plan p, even, route;
		double t[3], theta[HX_QUALITY_MAX_MODELS] = {0}, cap, p95, ecap = 0, ep95 = NAN;
		double rcap = 0, rp95 = NAN;
		char th[64] = "", rq[16] = "-";
		int have_even, have_route;

		w.quality->floor = floor;
		for (int i = 0; i < 3; i++) {
			double t0 = bench_now();
			if (hx_plan_cascade(&pb, &o, &p, &err)) {
				fprintf(stderr, "cascade: %d GPUs floor %d: %s\n", gpus, floor,
					err.msg);
				exit(1);
			}
			t[i] = bench_now() - t0;
			if (i < 2)
				hx_plan_release(&p);
		}
		qsort(t, 3, sizeof(double), cmp);
		for (int i = 0; i + 1 < p.ncascade; i++) {
			char one[16];
			theta[i] = p.cascade[i].threshold;
			snprintf(one, sizeof(one), "%s%g", i ? "," : "", theta[i]);
			strcat(th, one);
		}
		for (int i = p.ncascade - 1; i < last; i++)
			theta[i] = 0; /* the models after the cascade's last get nothing */
		if (!th[0])
			strcpy(th, "-");
		sim_cap(&p, &w, n, &cap, &p95);
		have_even = hx_plan_cascade_even(&pb, &o, theta, &even, &err) == 0;
		if (have_even)
			sim_cap(&even, &w, n, &ecap, &ep95);
		have_route = hx_plan_route(&pb, &o, &route, &err) == 0;
		if (have_route) {
			sim_cap(&route, &w, n, &rcap, &rp95);
			snprintf(rq, sizeof(rq), "%.2f", route.predicted.quality);
		}
		printf("%5d %5d %7.3f %-10s %d %-8s %7.2f %9.2f %9.0f | %9.2f %9.0f %6.2f%s | "
		       "%9.2f %6.2f | %9.2f %6s %6.2f\n",
		       gpus, floor, t[1], p.solver.status, p.ncascade, th, p.predicted.quality,
		       cap, p95, single_cap, single_p95,
		       single_cap > 0 ? cap / single_cap : NAN, single_q < floor ? "*" : " ",
		       ecap, ecap > 0 ? cap / ecap : NAN, rcap, rq,
		       rcap > 0 ? cap / rcap : NAN);
		fflush(stdout);
		hx_plan_release(&p);
		if (have_even)
			hx_plan_release(&even);
		if (have_route)
			hx_plan_release(&route);
	}
	hx_plan_release(&single);
	hx_workload_release(&w);
	hx_cluster_release(&c);
	unlink(cpath);
}

int main(int argc, char **argv)
{
	hx_catalog cat;
	hx_err err = {0};
	int n = argc > 1 ? atoi(argv[1]) : 4000;

	if (hx_catalog_load(&cat, NULL, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	printf("cascade planner, Qwen3 8B -> 32B -> 235B-A22B, %s, H100 nodes of 8\n", WPATH);
	printf("capacities: simulated req/s at the SLO; p95: end-to-end ms at that rate;"
	       " * the single model is below the floor\n");
	printf("%5s %5s %7s %-10s %s %-8s %7s %9s %9s | %9s %9s %6s  | %9s %6s | %9s %6s %6s\n",
	       "gpus", "floor", "plan_s", "status", "C", "theta", "Q", "cap", "p95", "single",
	       "p95", "x_sgl", "even", "x_even", "route", "Q_rt", "x_rt");
	for (int gpus = 16; gpus <= 64; gpus *= 2)
		size(&cat, gpus, n);
	hx_catalog_release(&cat);
	return 0;
}
