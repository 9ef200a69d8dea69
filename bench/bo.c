/*
 * bo: --mode bo (BOute) on BOute's setting, Llama-3.1 8B + 70B at 100
 * req/s under a $30/h budget (examples/workloads/llama-8b-70b.json), on 24
 * GPUs of 3 types (examples/clusters/bo-24.json) and 48 GPUs of 6 types
 * (bo-48.json).  Per instance, all against one fixed reference point
 * (budget, latency SLO, quality floor) and at the same number of
 * evaluations N: the hypervolume BO reaches (median over SEEDS seeds, and
 * its time), random search (the same sampler BO draws its candidates from,
 * median over the same seeds) and a grid (every (size / N)-th of the
 * enumerated feasible configurations where they can be enumerated, else of
 * the structured grid: every feasible split on the 5% grid x one shape per
 * model x the fewest replicas of it that carry the model's share plus 0, 1
 * or 2; grid_n is the size); the
 * exhaustive front where the space is small enough to enumerate (every
 * feasible configuration: ref_ev of them), else the best front any run
 * found (the union of every front of this run); and the time and evaluations BO takes to
 * converge (the Pareto set unchanged for 20 iterations, at most 600 evaluations).
 *
 * usage: bench/bo [N] [SEEDS]   (from the top of the tree; default 200, 5)
 */
#include "config.h"

#include <math.h>

#include "bench_util.h"
#include "solver/mobo.h"
#include "planners/bo.h"
#include "model/quality.h"

#define WPATH  "examples/workloads/llama-8b-70b.json"
#define BUDGET 30.0

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The union front: points (cost, latency, 100 - Q) of every run. */
typedef struct pts {
	double *p;
	int n;
} pts;

static void add_front(pts *u, const hx_bo_front *f)
{
	u->p = realloc(u->p, (size_t)(u->n + f->n) * 3 * sizeof(double));
	for (int i = 0; i < f->n; i++) {
		u->p[3 * u->n] = f->pt[i].usd_per_hour;
		u->p[3 * u->n + 1] = f->pt[i].latency_ms;
		u->p[3 * u->n + 2] = 100 - f->pt[i].quality;
		u->n++;
	}
}

static int run(const hx_problem *pb, int method, int evals, uint64_t seed, hx_bo_front *f,
	       double *secs)
{
	hx_plan_opts o = {HX_OBJ_CAPACITY, 0, 0, 0, NULL, 0};
	hx_bo_opts bo = {HX_PREFER_BALANCED, BUDGET, evals, method, 0, NULL, NULL};
	hx_problem p1 = *pb;
	hx_plan plan;
	hx_err err = {0};
	double t0 = bench_now();
	int rc;
	p1.seed = seed;
	rc = hx_plan_bo(&p1, &o, &bo, 0, &plan, f, &err);
	*secs = bench_now() - t0;
	if (rc) {
		printf("  (%s)\n", err.msg);
		return rc;
	}
	hx_plan_release(&plan);
	return 0;
}

static void instance(const hx_catalog *cat, const char *cpath, int n, int seeds)
{
	hx_cluster c;
	hx_workload w;
	hx_model m;
	hx_problem pb;
	hx_err err = {0};
	hx_bo_front f;
	pts u = {NULL, 0};
	double hv_bo[16], hv_rnd[16], t_bo[16], hv_grid = NAN, hv_ex = NAN, t_ex = 0, t, box;
	double conv_t[16], conv_e[16], hv_conv[16];
	int space = 0, ex_evals = 0;

	if (hx_cluster_load(&c, cpath, cat, &err) || hx_workload_load(&w, WPATH, &err) ||
	    hx_model_resolve(cat, w.quality->model[0], &m, &err)) {
		fprintf(stderr, "bo: %s\n", err.msg);
		exit(1);
	}
	pb = (hx_problem){cat, &c, &w, &m, 1, cpath, WPATH, NULL};
	for (int s = 0; s < seeds; s++) {
		if (run(&pb, HX_BO_BAYES, n, (uint64_t)s + 1, &f, &t_bo[s]))
			exit(1);
		hv_bo[s] = f.hypervolume;
		add_front(&u, &f);
		hx_bo_front_release(&f);
		if (run(&pb, HX_BO_RANDOM, n, (uint64_t)s + 1, &f, &t))
			exit(1);
		hv_rnd[s] = f.hypervolume;
		add_front(&u, &f);
		hx_bo_front_release(&f);
		if (run(&pb, HX_BO_BAYES, 600, (uint64_t)s + 1, &f, &conv_t[s]))
			exit(1);
		conv_e[s] = f.evals;
		hv_conv[s] = f.hypervolume;
		add_front(&u, &f);
		hx_bo_front_release(&f);
	}
	if (run(&pb, HX_BO_GRID, n, 1, &f, &t) == 0) {
		hv_grid = f.hypervolume;
		space = f.space;
		add_front(&u, &f);
		hx_bo_front_release(&f);
	}
	if (run(&pb, HX_BO_EXHAUSTIVE, 0, 1, &f, &t_ex) == 0) {
		hv_ex = f.hypervolume;
		ex_evals = f.evals;
		hx_bo_front_release(&f);
	}
	{
		double r[3] = {BUDGET, 0, 100 - w.quality->floor};
		double outq = fmax(hx_dist_quantile(&w.output, w.slo.percentile / 100) - 1, 0);
		r[1] = w.slo.ttft_ms + outq * w.slo.tpot_ms;
		box = r[0] * r[1] * r[2];
		if (isnan(hv_ex))
			hv_ex = hx_mobo_hv3(u.p, u.n, r) /
				box; /* best known: the union of every front */
	}
	{
		double b = median(hv_bo, seeds), rn = median(hv_rnd, seeds);
		printf("%-28s %6d %5d %8.5f %6.2f | %8.5f | %8.5f | %8.5f %s %8.1f %7d | %6.3f "
		       "%6.3f %6.3f %+7.3f | %7.0f %6.2f %8.5f\n",
		       cpath, space, n, b, median(t_bo, seeds), rn, hv_grid, hv_ex,
		       ex_evals ? "exh " : "best", t_ex, ex_evals, b / hv_ex, rn / hv_ex,
		       hv_grid / hv_ex, (b - rn) / hv_ex, median(conv_e, seeds),
		       median(conv_t, seeds), median(hv_conv, seeds));
		printf("  per seed: bo");
		for (int s = 0; s < seeds; s++)
			printf(" %.5f", hv_bo[s]);
		printf("; random");
		for (int s = 0; s < seeds; s++)
			printf(" %.5f", hv_rnd[s]);
		printf("\n");
		fflush(stdout);
	}
	free(u.p);
	hx_workload_release(&w);
	hx_cluster_release(&c);
}

int main(int argc, char **argv)
{
	hx_catalog cat;
	hx_err err = {0};
	int n = argc > 1 ? atoi(argv[1]) : 200, seeds = argc > 2 ? atoi(argv[2]) : 5;

	if (seeds < 1 || seeds > 16 || n < 2) {
		fprintf(stderr, "usage: bench/bo [N] [SEEDS (1-16)]\n");
		return 2;
	}
	if (hx_catalog_load(&cat, NULL, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	printf("bo: Llama-3.1 8B + 70B, 100 req/s, budget $%g/h, %s; hypervolume as a fraction "
	       "of the\n"
	       "reference box (budget, latency SLO, quality floor); medians of %d seeds at N = "
	       "%d evaluations\n",
	       BUDGET, WPATH, seeds, n);
	printf("%-28s %6s %5s %8s %6s | %8s | %8s | %8s %4s %8s %7s | %6s %6s %6s %7s | %7s "
	       "%6s %8s\n",
	       "cluster", "grid_n", "N", "hv_bo", "bo_s", "hv_rand", "hv_grid", "hv_ref", "ref",
	       "ref_s", "ref_ev", "bo/ref", "rn/ref", "gr/ref", "(b-r)/r", "conv_ev", "conv_s",
	       "hv_conv");
	instance(&cat, "examples/clusters/bo-24.json", n, seeds);
	instance(&cat, "examples/clusters/bo-48.json", n, seeds);
	hx_catalog_release(&cat);
	return 0;
}
