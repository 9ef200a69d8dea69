/* Fuzz the workload loader (distributions, SLOs, classes, serving knobs,
 * quality profiles). */
#include "config.h"

#include "fuzz.h"
#include "model/problem.h"

static void hx_fuzz_one(const char *path)
{
	hx_workload w;
	hx_err err = {0};

	if (hx_workload_load(&w, path, &err) == 0)
		hx_workload_release(&w);
}
