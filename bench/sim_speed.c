/*
 * sim_speed: simulated requests per second of wall time, single-threaded,
 * for aggregated baseline plans of 4 to 256 replicas (Llama 3.1 8B on H100s,
 * one GPU each) fed conversation-like requests at 80% of the plan's
 * predicted capacity: 100k-request traces (median of 3 runs) and a
 * 1M-request trace on the 16-replica plan.  Target: >= 1M simulated
 * requests per minute for 16 replicas.
 *
 * usage: bench/sim_speed [WORKLOAD]   (default examples/workloads/chat.json)
 */
#include "config.h"

#include <math.h>

#include "bench_util.h"
#include "model/gen.h"
#include "sim/sim.h"

static double run(const hx_plan *p, const hx_workload *w, int n, double *events_per_req)
{
	hx_trace t;
	hx_sim_report r;
	hx_err err = {0};
	double t0, dt;

	if (hx_gen_workload(w, 0.8 * p->predicted.capacity_rps, n, 0, 1, &t, &err)) {
		fprintf(stderr, "sim_speed: %s\n", err.msg);
		exit(1);
	}
	t0 = bench_now();
	if (hx_simulate(p, w, &t, NULL, &r, &err)) {
		fprintf(stderr, "sim_speed: %s\n", err.msg);
		exit(1);
	}
	dt = bench_now() - t0;
	*events_per_req = (double)r.iterations / n;
	if (r.finished + r.dropped != n)
		fprintf(stderr, "sim_speed: requests lost\n");
	hx_sim_report_release(&r);
	hx_trace_release(&t);
	return n / dt;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	const char *wpath = argc > 1 ? argv[1] : "examples/workloads/chat.json";
	static const int sizes[] = {4, 16, 64, 256};
	hx_catalog cat;
	hx_err err = {0};

	if (hx_catalog_load(&cat, NULL, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	printf("simulated requests per wall second (llama-3.1-8b on h100-sxm, 80%% of "
	       "capacity)\n");
	printf("%9s %10s %10s %14s %14s %12s\n", "replicas", "requests", "rate_rps",
	       "req/s(median)", "req/min", "iter/request");
	for (size_t i = 0; i < HX_ARRAY_LEN(sizes); i++) {
		hx_workload w;
		hx_plan p;
		double v[3], ipr = 0;
		bench_plan(&cat, "h100-sxm", sizes[i], "llama-3.1-8b", wpath, &w, &p);
		for (int k = 0; k < 3; k++)
			v[k] = run(&p, &w, 100000, &ipr);
		qsort(v, 3, sizeof(double), cmp);
		printf("%9d %10d %10.1f %14.0f %14.0f %12.2f\n", sizes[i], 100000,
		       0.8 * p.predicted.capacity_rps, v[1], v[1] * 60, ipr);
		if (sizes[i] == 16) {
			double one = run(&p, &w, 1000000, &ipr);
			printf("%9d %10d %10.1f %14.0f %14.0f %12.2f\n", sizes[i], 1000000,
			       0.8 * p.predicted.capacity_rps, one, one * 60, ipr);
		}
		hx_plan_release(&p);
		hx_workload_release(&w);
	}
	hx_catalog_release(&cat);
	return 0;
}
