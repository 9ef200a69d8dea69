/* Fuzz the cluster loader (nodes, links, defaults, offers). */
#include "config.h"

#include "fuzz.h"
#include "model/problem.h"

static void hx_fuzz_one(const char *path)
{
	static hx_catalog cat;
	static int have_cat;
	hx_cluster c;
	hx_err err = {0};

	if (!have_cat && hx_catalog_load(&cat, NULL, &err) != 0)
		abort();
	have_cat = 1;
	if (hx_cluster_load(&c, path, &cat, &err) == 0)
		hx_cluster_release(&c);
}
