/* Helpers the benchmarks share: a generated cluster and its baseline plan. */
#ifndef HX_BENCH_UTIL_H
#define HX_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plan/plan.h"
#include "planners/baseline.h"
#include "planners/cascade.h"
#include "planners/colocated.h"
#include "planners/compose.h"
#include "planners/disagg.h"
#include "planners/pipeline.h"

static inline double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A cluster of NGPUS GPUs of type GPU in nodes of 8 (the last holds the
 * rest), written to a new file CPATH (a "/tmp/...XXXXXX" template, filled
 * in; unlink it when done) and loaded into C.  Exits on error. */
static inline void bench_cluster(const hx_catalog *cat, const char *gpu, int ngpus, char *cpath,
				 hx_cluster *c)
{
	int fd = mkstemp(cpath);
	FILE *f = fdopen(fd, "w");
	hx_err err = {0};

	fprintf(f, "{\"version\": 1, \"nodes\": [");
	for (int i = 0; i * 8 < ngpus; i++)
		fprintf(f, "%s{\"name\": \"n%d\", \"gpu\": \"%s\", \"count\": %d}",
			i ? ", " : "", i, gpu, ngpus - i * 8 < 8 ? ngpus - i * 8 : 8);
	fprintf(f, "]}\n");
	fclose(f);
	if (hx_cluster_load(c, cpath, cat, &err)) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
}

/* Baseline plan of MODEL on NGPUS GPUs of type GPU (nodes of 8) for the
 * workload at WPATH.  Exits on error: a benchmark has no one to tell. */
static inline void bench_plan(const hx_catalog *cat, const char *gpu, int ngpus,
			      const char *model, const char *wpath, hx_workload *w, hx_plan *p)
{
	char cpath[] = "/tmp/hx-bench-cluster-XXXXXX";
	hx_cluster c;
	hx_model m;
	hx_problem pb;
	hx_err err = {0};

	bench_cluster(cat, gpu, ngpus, cpath, &c);
	if (hx_workload_load(w, wpath, &err) || hx_model_resolve(cat, model, &m, &err)) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	pb = (hx_problem){cat, &c, w, &m, 1, cpath, wpath, NULL};
	if (hx_plan_baseline(&pb, p, &err)) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	hx_cluster_release(&c);
	unlink(cpath);
}

#endif
