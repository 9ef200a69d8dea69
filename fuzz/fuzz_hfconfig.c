/* Fuzz the Hugging Face config.json reader and the architecture checks a
 * model goes through before the cost model sees it. */
#include "config.h"

#include "fuzz.h"

#include "model/catalog.h"

static void hx_fuzz_one(const char *path)
{
	hx_model m;
	hx_err err = {0};

	if (hx_model_from_hf(path, &m, &err) == 0)
		(void)hx_model_params(&m.a);
}
