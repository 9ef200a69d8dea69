/*
 * pipeline: the pipeline planner (layer placement scored by max-flow) on
 * the Helix-like example clusters (24 nodes in one region and in three,
 * 42 nodes) and on generated clusters of 64, 128 and 256 nodes (A100-40G,
 * L4, T4 and V100 nodes of 1 to 4 GPUs over three regions, 10 Gb/s inside a
 * region, 0.1 Gb/s and 50 ms between regions), Llama-2-70B, the pipeline
 * example workload.  Prints the planning time (median of 3), the flow of
 * each construction alone, the plan's flow, the bound sum_i max_k k
 * thr_i(k) / L, flow / bound, flow / best construction, and the simulated
 * throughput (generated tokens/s completed by `simulate` at the plan's
 * predicted capacity) beside the flow.  Targets: 24 and 42 nodes <= 10 s,
 * 256 nodes <= 120 s, >= 1.5x the best construction on the three-region
 * cluster.
 *
 * usage: bench/pipeline [RUNS]   (from the top of the tree)
 */
#include "config.h"

#include <math.h>

#include "bench_util.h"
#include "planners/pipeline.h"
#include "model/gen.h"
#include "sim/sim.h"

static const char *WL = "examples/workloads/pipeline.json";

static void gen_cluster(const char *path, int n, unsigned seed)
{
	static const char *gpus[] = {"a100-40g", "l4", "t4", "v100"};
	static const char *regions[] = {"us-east", "eu-west", "ap-south"};
	FILE *f = fopen(path, "w");
	hx_rng r;

	hx_rng_seed(&r, seed);
	fprintf(f, "{\"version\": 1, \"nodes\": [");
	for (int i = 0; i < n; i++) {
		int g = (int)(hx_rng_next(&r) % 4), cnt = 1 << (int)(hx_rng_next(&r) % 3);
		fprintf(
		    f,
		    "%s{\"name\": \"n%d\", \"gpu\": \"%s\", \"count\": %d, \"region\": \"%s\", "
		    "\"nic_gbps\": %d}",
		    i ? ", " : "", i, gpus[g], g == 0 ? 1 : cnt, regions[hx_rng_next(&r) % 3],
		    cnt > 1 ? 25 : 10);
	}
	fprintf(f, "], \"defaults\": {\"same_region\": {\"bw_gbps\": 10, \"latency_ms\": 0.1}, "
		   "\"cross_region\": {\"bw_gbps\": 0.1, \"latency_ms\": 50}}}\n");
	fclose(f);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Generated tokens/s the simulator completes for plan P offered its
 * predicted capacity (2000 requests). */
static double sim_tps(const hx_plan *p, const hx_workload *w)
{
	hx_sim_report rep;
	hx_sim_opts so;
	hx_trace t;
	hx_err err = {0};
	double tps;

	memset(&so, 0, sizeof(so));
	so.seed = 1;
	if (hx_gen_workload(w, p->predicted.capacity_rps, 2000, 0, 1, &t, &err) ||
	    hx_simulate(p, w, &t, &so, &rep, &err)) {
		fprintf(stderr, "pipeline: simulate: %s\n", err.msg);
		return NAN;
	}
	tps = rep.throughput_tps;
	hx_sim_report_release(&rep);
	hx_trace_release(&t);
	return tps;
}

static void one(const hx_catalog *cat, const char *label, const char *cpath, int runs)
{
	hx_cluster c;
	hx_workload w;
	hx_model m;
	hx_problem pb;
	hx_plan p;
	hx_plan_opts o = {HX_OBJ_CAPACITY, 0, 0, 0, NULL, 0};
	hx_pipe_stats st;
	hx_err err = {0};
	double t[9], best = 0;

	if (hx_cluster_load(&c, cpath, cat, &err) || hx_workload_load(&w, WL, &err) ||
	    hx_model_resolve(cat, "llama-2-70b", &m, &err)) {
		fprintf(stderr, "pipeline: %s\n", err.msg);
		exit(1);
	}
	pb = (hx_problem){cat, &c, &w, &m, 1, cpath, WL, NULL};
	for (int r = 0; r < runs; r++) {
		if (hx_plan_pipeline_run(&pb, &o, NULL, &p, &st, &err)) {
			fprintf(stderr, "pipeline: %s: %s\n", label, err.msg);
			exit(1);
		}
		t[r] = st.seconds;
		if (r + 1 < runs)
			hx_plan_release(&p);
	}
	qsort(t, (size_t)runs, sizeof(double), cmp_double);
	for (int k = 0; k < HX_PIPE_NCONSTRUCTIONS; k++)
		best = fmax(best, st.construction[k]);
	printf("%-18s %5d %4d %8.2f %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %6.2f %6.2f %9.0f\n",
	       label, c.nnodes, hx_cluster_gpus(&c), t[runs / 2], st.construction[0],
	       st.construction[1], st.construction[2], st.construction[3], st.flow, st.bound,
	       st.flow / st.bound, best > 0 ? st.flow / best : NAN, sim_tps(&p, &w));
	fflush(stdout);
	hx_plan_release(&p);
	hx_workload_release(&w);
	hx_cluster_release(&c);
}

int main(int argc, char **argv)
{
	hx_catalog cat;
	hx_err err = {0};
	int runs = argc > 1 ? atoi(argv[1]) : 3;
	char path[] = "/tmp/hx-bench-pipeline-XXXXXX";
	int fd;

	if (runs < 1 || runs > 9)
		runs = 3;
	if (hx_catalog_load(&cat, NULL, &err)) {
		fprintf(stderr, "pipeline: %s\n", err.msg);
		return 1;
	}
	printf("Llama-2-70B, %s; time: median of %d runs; flows in generated tokens/s\n", WL,
	       runs);
	printf("%-18s %5s %4s %8s %9s %9s %9s %9s %9s %9s %6s %6s %9s\n", "cluster", "nodes",
	       "gpus", "time_s", "per-type", "balanced", "greedy", "staged", "flow", "bound",
	       "f/bnd", "f/cons", "sim_tps");
	one(&cat, "helix-24", "examples/clusters/helix-24.json", runs);
	one(&cat, "helix-24-3regions", "examples/clusters/helix-24-3regions.json", runs);
	one(&cat, "helix-42", "examples/clusters/helix-42.json", runs);
	for (int n = 64; n <= 256; n *= 2) {
		char label[32];
		fd = mkstemp(path);
		close(fd);
		gen_cluster(path, n, (unsigned)n);
		snprintf(label, sizeof(label), "generated-%d", n);
		one(&cat, label, path, n >= 256 ? 1 : runs);
		unlink(path);
		strcpy(path, "/tmp/hx-bench-pipeline-XXXXXX");
	}
	hx_catalog_release(&cat);
	return 0;
}
