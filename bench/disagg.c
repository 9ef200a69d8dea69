/*
 * disagg: the disaggregated planner beside the colocated and baseline
 * plans on the same GPUs, for a prefill-heavy (code) and a decode-heavy
 * (chat) workload, on the mixed and three-region examples and on generated
 * clusters of 32, 64 and 128 GPUs: planning time and the simulated capacity
 * at the TTFT and TPOT SLOs (simulate --capacity).  Llama 3.1 8B.  Targets:
 * a 64-GPU plan in <= 10 s; >= 1.2x the colocated plan's capacity on a
 * workload where prefill interference binds; where disaggregation does not
 * pay (decode-heavy traffic, slow links) the table shows it.
 *
 * usage: bench/disagg [MODEL]   (from the top of the tree)
 */
#include "config.h"

#include <math.h>

#include "bench_util.h"
#include "sim/sim.h"

static double simcap(const hx_plan *p, const hx_workload *w)
{
	double c = 0;
	hx_err err = {0};
	if (hx_sim_capacity(p, w, 4000, NULL, &c, NULL, &err))
		fprintf(stderr, "disagg: %s\n", err.msg);
	return c;
}

static void one(const hx_catalog *cat, const char *label, const char *cpath, const char *model,
		const char *wl)
{
	hx_cluster c;
	hx_workload w;
	hx_model m;
	hx_problem pb;
	hx_plan d, co, b;
	hx_plan_opts o = {HX_OBJ_CAPACITY, 60, 0, 0, NULL, 0, 0};
	hx_err err = {0};
	char wpath[256];
	double t0, t, sd, sc, sb;
	int hd, hc, hb;

	snprintf(wpath, sizeof(wpath), "examples/workloads/%s.json", wl);
	if (hx_cluster_load(&c, cpath, cat, &err) || hx_workload_load(&w, wpath, &err) ||
	    hx_model_resolve(cat, model, &m, &err)) {
		fprintf(stderr, "disagg: %s\n", err.msg);
		exit(1);
	}
	pb = (hx_problem){cat, &c, &w, &m, 1, cpath, wpath, NULL};
	t0 = bench_now();
	hd = hx_plan_disagg(&pb, &o, &d, &err) == 0;
	t = bench_now() - t0;
	hc = hx_plan_colocated(&pb, &o, &co, &err) == 0;
	hb = hx_plan_baseline(&pb, &b, &err) == 0;
	sd = hd ? simcap(&d, &w) : 0;
	sc = hc ? simcap(&co, &w) : 0;
	sb = hb ? simcap(&b, &w) : 0;
	printf("%-20s %-5s %5d %8.3f %10.2f %10.2f %10.2f %10.2f %8.2f %8.2f\n", label, wl,
	       hx_cluster_gpus(&c), t, hd ? d.predicted.capacity_rps : 0, sd, sc, sb,
	       sc > 0 ? sd / sc : NAN, sb > 0 ? sd / sb : NAN);
	fflush(stdout);
	if (hd)
		hx_plan_release(&d);
	if (hc)
		hx_plan_release(&co);
	if (hb)
		hx_plan_release(&b);
	hx_workload_release(&w);
	hx_cluster_release(&c);
}

static void generated(const hx_catalog *cat, int gpus, const char *model)
{
	static const char *const kinds[] = {"h100-sxm", "a100-80g", "l40s"};
	char path[] = "/tmp/hx-bench-disagg-XXXXXX", label[64];
	int fd = mkstemp(path), node = 0;
	FILE *f = fdopen(fd, "w");

	fprintf(f, "{\"version\": 1, \"nodes\": [");
	for (int t = 0; t < 3; t++) {
		int share = gpus / 3 / 8 * 8 + (t == 0 ? gpus - 3 * (gpus / 3 / 8 * 8) : 0);
		for (int g = 0; g < share; g += 8, node++)
			fprintf(f,
				"%s{\"name\": \"n%d\", \"gpu\": \"%s\", \"count\": %d, "
				"\"nic_gbps\": 200}",
				node ? ", " : "", node, kinds[t],
				share - g < 8 ? share - g : 8);
	}
	fprintf(f, "]}\n");
	fclose(f);
	for (int k = 0; k < 2; k++) {
		snprintf(label, sizeof(label), "generated-%d", gpus);
		one(cat, label, path, model, k ? "chat" : "code");
	}
	unlink(path);
}

int main(int argc, char **argv)
{
	const char *model = argc > 1 ? argv[1] : "llama-3.1-8b";
	hx_catalog cat;
	hx_err err = {0};

	if (hx_catalog_load(&cat, NULL, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	printf("disaggregated vs colocated vs baseline, %s; simulated capacity at the SLO "
	       "(req/s)\n",
	       model);
	printf("%-20s %-5s %5s %8s %10s %10s %10s %10s %8s %8s\n", "cluster", "wl", "gpus",
	       "plan_s", "predicted", "disagg", "colocated", "baseline", "x_coloc", "x_base");
	for (int k = 0; k < 2; k++) {
		const char *wl = k ? "chat" : "code";
		one(&cat, "example mixed", "examples/clusters/mixed.json", model, wl);
		one(&cat, "example 3-regions", "examples/clusters/three-regions.json", model,
		    wl);
	}
	generated(&cat, 32, model);
	generated(&cat, 64, model);
	generated(&cat, 128, model);
	hx_catalog_release(&cat);
	return 0;
}
