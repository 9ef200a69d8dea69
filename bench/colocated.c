/*
 * colocated: the colocated planner on the example clusters and on generated
 * clusters of 16, 64, 256 and 1,024 GPUs (3 to 6 GPU types over 2 regions):
 * planning time (median of 3 runs), MILP objective, bound and gap, and the
 * simulated capacity at the SLO (simulate --capacity) of its plan beside the
 * baseline plan on the same GPUs.  Llama 3.1 70B on the chat workload.
 * Targets: 64 GPUs in <= 2 s, 1,024 in <= 60 s, gap <= 2% on 64 GPUs, and on
 * the mixed example at least 1.2x the baseline's simulated capacity.
 *
 * usage: bench/colocated [MODEL]   (from the top of the tree)
 */
#include "config.h"

#include <math.h>

#include "bench_util.h"
#include "planners/candidates.h"
#include "sim/sim.h"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void one(const hx_catalog *cat, const char *label, const char *cpath, const char *model)
{
	hx_cluster c;
	hx_workload w;
	hx_model m;
	hx_problem pb;
	hx_plan p, b;
	hx_plan_opts o = {HX_OBJ_CAPACITY, 60, 0, 0, NULL, 0, 0};
	hx_err err = {0};
	double t[3], simc = 0, simb = 0;
	hx_candset s;
	int have_b;

	if (hx_cluster_load(&c, cpath, cat, &err) ||
	    hx_workload_load(&w, "examples/workloads/chat.json", &err) ||
	    hx_model_resolve(cat, model, &m, &err)) {
		fprintf(stderr, "colocated: %s\n", err.msg);
		exit(1);
	}
	pb = (hx_problem){cat, &c, &w, &m, 1, cpath, "examples/workloads/chat.json", NULL};
	for (int i = 0; i < 3; i++) {
		double t0 = bench_now();
		if (hx_plan_colocated(&pb, &o, &p, &err)) {
			fprintf(stderr, "colocated: %s: %s\n", label, err.msg);
			exit(1);
		}
		t[i] = bench_now() - t0;
		if (i < 2)
			hx_plan_release(&p);
	}
	qsort(t, 3, sizeof(double), cmp);
	hx_candidates(&pb, NULL, &s, &err);
	have_b = hx_plan_baseline(&pb, &b, &err) == 0;
	hx_sim_capacity(&p, &w, 4000, NULL, &simc, NULL, &err);
	if (have_b)
		hx_sim_capacity(&b, &w, 4000, NULL, &simb, NULL, &err);
	printf("%-22s %6d %7d %5d %8.3f %10.3f %10.3f %7.4f %-10s %10.3f %10.3f %7.2f\n", label,
	       hx_cluster_gpus(&c), s.ncls, s.n, t[1], p.solver.objective, p.solver.bound,
	       p.solver.gap, p.solver.status, simc, simb, simb > 0 ? simc / simb : NAN);
	fflush(stdout);
	hx_candset_release(&s);
	hx_plan_release(&p);
	if (have_b)
		hx_plan_release(&b);
	hx_workload_release(&w);
	hx_cluster_release(&c);
}

static void generated(const hx_catalog *cat, int gpus, int types, const char *model)
{
	static const char *const kinds[] = {"h100-sxm", "a100-80g", "l40s",
					    "a100-40g", "a10g",     "l4"};
	char path[] = "/tmp/hx-bench-colocated-XXXXXX", label[64];
	int fd = mkstemp(path), node = 0;
	FILE *f = fdopen(fd, "w");

	fprintf(f, "{\"version\": 1, \"nodes\": [");
	for (int t = 0; t < types; t++) {
		int share = gpus / types + (t < gpus % types);
		for (int g = 0; g < share; g += 8, node++)
			fprintf(f,
				"%s{\"name\": \"n%d\", \"gpu\": \"%s\", \"count\": %d, "
				"\"region\": \"r%d\"}",
				node ? ", " : "", node, kinds[t], share - g < 8 ? share - g : 8,
				node % 2);
	}
	fprintf(f, "]}\n");
	fclose(f);
	snprintf(label, sizeof(label), "generated-%d-%dtypes", gpus, types);
	one(cat, label, path, model);
	unlink(path);
}

int main(int argc, char **argv)
{
	const char *model = argc > 1 ? argv[1] : "llama-3.1-70b";
	hx_catalog cat;
	hx_err err = {0};

	if (hx_catalog_load(&cat, NULL, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	printf("colocated planner, %s, chat workload (capacity objective)\n", model);
	printf("%-22s %6s %7s %5s %8s %10s %10s %7s %-10s %10s %10s %7s\n", "cluster", "gpus",
	       "classes", "cands", "plan_s", "objective", "bound", "gap", "status", "sim_cap",
	       "base_cap", "x_base");
	one(&cat, "example mixed", "examples/clusters/mixed.json", model);
	one(&cat, "example three-regions", "examples/clusters/three-regions.json", model);
	one(&cat, "example h100-node", "examples/clusters/h100-node.json", model);
	generated(&cat, 16, 3, model);
	generated(&cat, 64, 4, model);
	generated(&cat, 256, 5, model);
	generated(&cat, 1024, 6, model);
	hx_catalog_release(&cat);
	return 0;
}
