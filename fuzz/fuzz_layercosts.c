/* Fuzz the measured per-layer timings reader (plan --layer-costs). */
#include "config.h"

#include "fuzz.h"
#include "model/tables.h"

static void hx_fuzz_one(const char *path)
{
	hx_layer_cost *lc = NULL;
	int n = 0;
	hx_err err = {0};

	if (hx_layer_costs_load(&lc, &n, path, &err) == 0)
		free(lc);
}
