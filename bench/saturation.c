/*
 * saturation: sweep the offered rate from a quarter to twice a plan's
 * predicted capacity and print what the simulator delivers: completed
 * requests/s rise with the offered rate to a plateau, and latency climbs
 * past it.  The workload's SLOs are loose (bench/saturation.json), so the
 * predicted capacity at the SLO is the replica's throughput limit, and the
 * plateau should sit at it (target: within 10%).  Also prints, for the
 * example workloads' own SLOs, the predicted capacity beside the
 * simulator's (simulate --capacity) per GPU type.
 *
 * usage: bench/saturation   (from the top of the tree)
 */
#include "config.h"

#include <math.h>

#include "bench_util.h"
#include "model/gen.h"
#include "sim/sim.h"

static void sweep(const hx_catalog *cat, const char *gpu, const char *model)
{
	hx_workload w;
	hx_plan p;
	double plateau = 0;

	bench_plan(cat, gpu, 8, model, "bench/saturation.json", &w, &p);
	printf("\n%s on 8 x %s: predicted capacity %.2f req/s\n", model, gpu,
	       p.predicted.capacity_rps);
	printf("%8s %10s %12s %12s %12s %12s\n", "load", "offered", "completed", "ttft_p50_ms",
	       "e2e_p50_ms", "tpot_p50_ms");
	for (double f = 0.25; f <= 2.001; f += 0.25) {
		hx_trace t;
		hx_sim_report r;
		hx_err err = {0};
		double rate = f * p.predicted.capacity_rps, done;
		if (hx_gen_workload(&w, rate, (int)fmax(4000, rate * 300), 0, 1, &t, &err) ||
		    hx_simulate(&p, &w, &t, NULL, &r, &err)) {
			fprintf(stderr, "saturation: %s\n", err.msg);
			exit(1);
		}
		done = r.finished / (r.makespan_s - t.arrival_s[0]);
		plateau = fmax(plateau, done);
		printf("%8.2f %10.2f %12.2f %12.1f %12.1f %12.2f\n", f, r.offered_rps, done,
		       r.ttft_ms[0], r.e2e_ms[0], r.tpot_ms[0]);
		hx_sim_report_release(&r);
		hx_trace_release(&t);
	}
	printf("plateau %.2f req/s = %.3f x predicted capacity\n", plateau,
	       plateau / p.predicted.capacity_rps);
	hx_plan_release(&p);
	hx_workload_release(&w);
}

static void fidelity(const hx_catalog *cat, const char *gpu, const char *model, const char *wl)
{
	hx_workload w;
	hx_plan p;
	double cap = 0;
	hx_err err = {0};
	char path[256];

	snprintf(path, sizeof(path), "examples/workloads/%s.json", wl);
	bench_plan(cat, gpu, 8, model, path, &w, &p);
	if (p.predicted.capacity_rps > 0 &&
	    hx_sim_capacity(&p, &w, 4000, NULL, &cap, NULL, &err)) {
		fprintf(stderr, "saturation: %s\n", err.msg);
		exit(1);
	}
	printf("%-16s %-10s %-6s %12.3f %12.3f %8.2f\n", model, gpu, wl,
	       p.predicted.capacity_rps, cap, cap > 0 ? p.predicted.capacity_rps / cap : NAN);
	hx_plan_release(&p);
	hx_workload_release(&w);
}

int main(void)
{
	static const char *const gpus[] = {"h100-sxm", "a100-80g", "l40s"};
	static const char *const models[] = {"llama-3.1-8b", "llama-3.1-70b", "qwen3-30b-a3b"};
	hx_catalog cat;
	hx_err err = {0};

	if (hx_catalog_load(&cat, NULL, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	sweep(&cat, "h100-sxm", "llama-3.1-8b");
	sweep(&cat, "a100-80g", "llama-3.1-70b");
	printf("\ncapacity at the example workloads' SLOs: cost model vs simulator (8 GPUs, "
	       "baseline)\n");
	printf("%-16s %-10s %-6s %12s %12s %8s\n", "model", "gpu", "wl", "predicted",
	       "simulated", "ratio");
	for (size_t m = 0; m < HX_ARRAY_LEN(models); m++)
		for (size_t g = 0; g < HX_ARRAY_LEN(gpus); g++) {
			fidelity(&cat, gpus[g], models[m], "chat");
			fidelity(&cat, gpus[g], models[m], "code");
		}
	hx_catalog_release(&cat);
	return 0;
}
