/* Fuzz the trace CSV reader (Azure and hexplan's own format). */
#include "config.h"

#include "fuzz.h"
#include "model/problem.h"

static void hx_fuzz_one(const char *path)
{
	hx_trace t;
	hx_err err = {0};

	if (hx_trace_load(&t, path, &err) == 0)
		hx_trace_release(&t);
}
