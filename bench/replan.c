/*
 * replan: one node failure on a 256-GPU plan of each kind (colocated,
 * disaggregated, pipeline, cascade, route, compose on owned nodes): the time replan takes
 * (median of 3), the share of replicas kept, what starts, the predicted capacity and the
 * simulated capacity at the SLO (hx_sim_capacity, as `simulate
 * --capacity`) before and after, and whether the new plan is short of the
 * rate.  The failed node is the one under the plan's first replica.
 * Target: replan <= 1 s.
 *
 * usage: bench/replan [REQUESTS [KIND]]   (from the top of the tree;
 * REQUESTS per simulated capacity probe, default 2000; KIND: only that
 * kind)
 */
#include "config.h"

#include <math.h>

#include "bench_util.h"
#include "planners/compose.h"
#include "planners/replan.h"
#include "sim/sim.h"

typedef struct kind {
	const char *name, *model, *wpath;
	const char *const *gpus; /* node GPU types, round robin */
	int ngpu_types, nodes, per_node;
	/* the capacity probes' run length in request lives and precision (0:
	 * hx_sim_capacity's 50 lives or two minutes, 1%); the pipeline's
	 * requests live about 110 s, so 50 lives are 100,000 requests a probe
	 * on 64 nodes at 0.9 ms each, past 40 minutes for the two plans */
	int cap_lives;
	double cap_tol;
} kind;

static const char *const five[] = {"h100-sxm", "a100-80g", "l40s", "a10g", "l4"};
static const char *const helix[] = {"a100-40g", "l4", "t4", "l4"};
static const char *const h100[] = {"h100-sxm"};

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* K's cluster without node SKIP (-1: none) into a new file CPATH. */
static void cluster_file(const kind *k, int skip, char *cpath)
{
	int fd = mkstemp(cpath), first = 1;
	FILE *f = fdopen(fd, "w");

	fprintf(f, "{\"version\": 1, \"nodes\": [");
	for (int i = 0; i < k->nodes; i++) {
		if (i == skip)
			continue;
		fprintf(f, "%s{\"name\": \"n%d\", \"gpu\": \"%s\", \"count\": %d}",
			first ? "" : ", ", i, k->gpus[i % k->ngpu_types], k->per_node);
		first = 0;
	}
	fprintf(f, "]}\n");
	fclose(f);
}

static int make_plan(const kind *k, const hx_problem *pb, hx_plan *p, hx_err *err)
{
	hx_plan_opts o = {HX_OBJ_CAPACITY, 60, 0, 0, NULL, 0, 0};
	hx_pipe_opts po = {5000, 0, NULL};

	if (strcmp(k->name, "disagg") == 0)
		return hx_plan_disagg(pb, &o, p, err);
	if (strcmp(k->name, "pipeline") == 0)
		return hx_plan_pipeline_run(pb, &o, &po, p, NULL, err);
	if (strcmp(k->name, "cascade") == 0)
		return hx_plan_cascade(pb, &o, p, err);
	if (strcmp(k->name, "route") == 0)
		return hx_plan_route(pb, &o, p, err);
	if (strcmp(k->name, "compose") == 0)
		return hx_plan_compose(pb, &o, p, err);
	return hx_plan_colocated(pb, &o, p, err);
}

static double sim_capacity(const kind *k, const hx_plan *p, const hx_workload *w, int n)
{
	hx_sim_opts so = {1, 0, NULL, NULL, k->cap_lives, k->cap_lives ? 1 : 0, k->cap_tol, 0};
	hx_err err = {0};
	double rps = 0;

	if (hx_sim_capacity(p, w, n, &so, &rps, NULL, &err)) {
		fprintf(stderr, "replan: simulate: %s\n", err.msg);
		return NAN;
	}
	return rps;
}

static void run_kind(const hx_catalog *cat, const kind *k, double rate_frac, int nreq)
{
	char cpath[] = "/tmp/hx-bench-replan-XXXXXX", cpath2[] = "/tmp/hx-bench-replan2-XXXXXX";
	hx_cluster c, c2;
	hx_workload w;
	hx_model m;
	hx_problem pb;
	hx_plan p, q;
	hx_moves mv;
	hx_plan_opts o = {HX_OBJ_CAPACITY, 60, 0, 0, NULL, 0, 0};
	hx_replan_opts ro = {0, hx_pipe_adapt};
	hx_err err = {0};
	double t[3];
	int nrep = 0, victim;

	cluster_file(k, -1, cpath);
	if (hx_cluster_load(&c, cpath, cat, &err) || hx_workload_load(&w, k->wpath, &err) ||
	    hx_model_resolve(cat, k->model, &m, &err)) {
		fprintf(stderr, "replan: %s\n", err.msg);
		exit(1);
	}
	pb = (hx_problem){cat, &c, &w, &m, 1, cpath, k->wpath, NULL};
	/* compose plans for the workload's rate: one that fills most of the
	 * cluster */
	if (strcmp(k->name, "compose") == 0)
		w.rate_rps = 100;
	if (make_plan(k, &pb, &p, &err)) {
		fprintf(stderr, "replan: %s plan: %s\n", k->name, err.msg);
		exit(1);
	}
	/* The rate: a share of what the plan carries, so that the loss bites. */
	w.rate_rps = hx_round6(rate_frac * p.predicted.capacity_rps);
	victim = atoi(p.groups[0].replicas[0].gpus[0][0].node + 1);
	cluster_file(k, victim, cpath2);
	if (hx_cluster_load(&c2, cpath2, cat, &err)) {
		fprintf(stderr, "replan: %s\n", err.msg);
		exit(1);
	}
	for (int g = 0; g < p.ngroups; g++)
		nrep += p.groups[g].nreplicas;
	for (int i = 0; i < 3; i++) {
		double t0 = bench_now();
		hx_problem pb2 = {cat, &c2, &w, &p.models[0], 1, cpath2, k->wpath, NULL};
		if (hx_replan(&p, &c2, &w, &pb2, &o, &ro, &q, &mv, &err)) {
			fprintf(stderr, "replan: %s: %s\n", k->name, err.msg);
			exit(1);
		}
		t[i] = bench_now() - t0;
		if (i < 2) {
			hx_plan_release(&q);
			hx_moves_release(&mv);
		}
	}
	qsort(t, 3, sizeof(double), cmp);
	printf("%-9s %-14s %5d %5d %5s %8.3f %6.3f %5d %9.2f %9.2f %9.2f %9.2f %6s\n", k->name,
	       k->model, k->nodes * k->per_node, nrep, p.groups[0].replicas[0].gpus[0][0].node,
	       t[1], (double)mv.kept / nrep, mv.started, p.predicted.capacity_rps,
	       q.predicted.capacity_rps, sim_capacity(k, &p, &w, nreq),
	       sim_capacity(k, &q, &w, nreq), q.shortage.on ? "short" : "ok");
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

int main(int argc, char **argv)
{
	static const kind kinds[] = {
	    {"colocated", "llama-3.1-70b", "examples/workloads/chat.json", five, 5, 32, 8},
	    {"disagg", "llama-3.1-8b", "examples/workloads/code.json", five, 5, 32, 8},
	    {"pipeline", "llama-2-70b", "examples/workloads/pipeline.json", helix, 4, 64, 4, 4,
	     0.02},
	    {"cascade", "qwen3-8b", "examples/workloads/cascade.json", h100, 1, 32, 8},
	    {"route", "qwen3-8b", "examples/workloads/cascade.json", h100, 1, 32, 8},
	    {"compose", "llama-3.1-70b", "examples/workloads/chat.json", five, 5, 32, 8},
	};
	hx_catalog cat;
	hx_err err = {0};
	int nreq = argc > 1 ? atoi(argv[1]) : 2000;

	if (hx_catalog_load(&cat, NULL, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	printf(
	    "replan after one node failure, 256-GPU plans, the rate at 80%% of the plan's "
	    "predicted capacity; sim = simulated capacity at the SLO (%d requests a probe)\n",
	    nreq);
	printf("%-9s %-14s %5s %5s %5s %8s %6s %5s %9s %9s %9s %9s %6s\n", "kind", "model",
	       "gpus", "reps", "gone", "replan_s", "kept", "start", "pred_bef", "pred_aft",
	       "sim_bef", "sim_aft", "plan");
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (argc < 3 || strcmp(argv[2], kinds[i].name) == 0)
			run_kind(&cat, &kinds[i], 0.8, nreq);
	hx_catalog_release(&cat);
	return 0;
}
