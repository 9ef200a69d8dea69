/* Fuzz the calibration measurements CSV reader. */
#include "config.h"

#include "fuzz.h"
#include "model/problem.h"

static void hx_fuzz_one(const char *path)
{
	hx_meas *m = NULL;
	int n = 0;
	hx_err err = {0};

	if (hx_meas_load(&m, &n, path, &err) == 0)
		free(m);
}
