/* Check suite: the built-in catalog, parameter counts, HF configs. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/catalog.h"
#include "model/cost.h"
#include "check_util.h"

static hx_catalog cat;

static void setup(void)
{
	hx_err err = {0};
	ck_assert_msg(hx_catalog_load(&cat, NULL, &err) == 0, "%s", err.msg);
}

static void teardown(void)
{
	hx_catalog_release(&cat);
}

START_TEST(test_required_entries)
{
	static const char *const gpus[] = {"h100-sxm", "h100-pcie", "h200", "b200",  "a100-80g",
					   "a100-40g", "l40s",      "l40",  "a6000", "a40",
					   "a10g",     "l4",        "t4",   "v100",  "rtx4090",
					   "rtx3090",  "mi300x",    NULL};
	static const char *const models[] = {"llama-2-7b",   "llama-2-13b",   "llama-2-70b",
					     "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
					     "qwen2.5-7b",   "qwen2.5-14b",   "qwen2.5-32b",
					     "qwen2.5-72b",  "qwen3-8b",      "qwen3-14b",
					     "qwen3-32b",    "qwen3-30b-a3b", "qwen3-235b-a22b",
					     "mixtral-8x7b", "mistral-7b",    "opt-30b",
					     "opt-66b",      "deepseek-v3",   NULL};
	for (int i = 0; gpus[i]; i++) {
		const hx_gpu *g = hx_catalog_gpu(&cat, gpus[i]);
		ck_assert_msg(g != NULL, "GPU %s missing", gpus[i]);
		ck_assert(g->tflops_bf16 > 0 && g->mem_gib > 0 && g->mem_bw_gb_s > 0);
		ck_assert(g->usd_per_hour > 0 && g->price_date[0] && g->price_source[0]);
		ck_assert(g->e_compute > 0 && g->e_compute <= 1 && g->e_mem > 0 &&
			  g->e_mem <= 1);
	}
	for (int i = 0; models[i]; i++)
		ck_assert_msg(hx_catalog_model(&cat, models[i]) != NULL, "model %s missing",
			      models[i]);
}
END_TEST

/* Parameter counts from the architecture match the published totals. */
START_TEST(test_param_counts)
{
	for (int i = 0; i < cat.nmodels; i++) {
		const hx_model *m = &cat.models[i];
		double p = hx_model_params(&m->a) / 1e9;
		ck_assert_msg(m->published_params_b > 0, "%s has no published count", m->name);
		ck_assert_msg(fabs(p / m->published_params_b - 1) <= 0.02,
			      "%s: %.3fB computed vs %.3fB published", m->name, p,
			      m->published_params_b);
		if (m->published_active_b > 0) {
			double act = hx_model_active_params(&m->a) / 1e9;
			ck_assert_msg(fabs(act / m->published_active_b - 1) <= 0.03,
				      "%s: %.3fB active vs %.3fB published", m->name, act,
				      m->published_active_b);
		}
	}
}
END_TEST

START_TEST(test_hf_config_matches_catalog)
{
	hx_model hf, *cm = (hx_model *)hx_catalog_model(&cat, "qwen2.5-7b");
	hx_err err = {0};
	char path[1024];

	snprintf(path, sizeof(path), "%s/examples/models/qwen2.5-7b-instruct/config.json",
		 getenv("top_srcdir") ? getenv("top_srcdir") : ".");
	ck_assert_msg(hx_model_resolve(&cat, path, &hf, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(hf.name, "qwen2.5-7b-instruct");
	ck_assert_int_eq(hf.a.layers, cm->a.layers);
	ck_assert_int_eq(hf.a.hidden, cm->a.hidden);
	ck_assert_int_eq(hf.a.kv_heads, cm->a.kv_heads);
	ck_assert_int_eq(hf.a.intermediate, cm->a.intermediate);
	ck_assert_int_eq(hf.a.attn_bias, 1);
	ck_assert_int_eq(hf.a.tied_embeddings, 0);
	ck_assert(fabs(hx_model_params(&hf.a) / hx_model_params(&cm->a) - 1) < 1e-9);
}
END_TEST

START_TEST(test_unknown_model)
{
	hx_model m;
	hx_err err = {0};
	ck_assert_int_eq(hx_model_resolve(&cat, "no-such-model", &m, &err), HX_EINPUT);
	ck_assert(strstr(err.msg, "unknown model \"no-such-model\"") != NULL);
}
END_TEST

/* MLA caches a latent per token, not K and V per head. */
START_TEST(test_mla_kv)
{
	const hx_model *ds = hx_catalog_model(&cat, "deepseek-v3");
	const hx_model *ll = hx_catalog_model(&cat, "llama-3.1-8b");
	ck_assert(fabs(hx_kv_bytes_per_token(ds, HX_DT_FP16) - (512 + 64) * 2.0 * 61) < 1e-6);
	ck_assert(fabs(hx_kv_bytes_per_token(ll, HX_DT_FP16) - 2 * 8 * 128 * 2.0 * 32) < 1e-6);
	ck_assert(fabs(hx_kv_bytes_per_token(ll, HX_DT_FP8) - 2 * 8 * 128 * 1.0 * 32) < 1e-6);
}
END_TEST

START_TEST(test_dtypes)
{
	ck_assert_int_eq(hx_dtype_parse("fp8"), HX_DT_FP8);
	ck_assert_int_eq(hx_dtype_parse("int4"), HX_DT_INT4);
	ck_assert_int_eq(hx_dtype_parse("int3"), -1);
	ck_assert(hx_dtype_bytes(HX_DT_INT4) > 0.5 && hx_dtype_bytes(HX_DT_INT4) < 0.6);
	ck_assert_int_eq(hx_catalog_model(&cat, "deepseek-v3")->a.dtype, HX_DT_FP8);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("catalog");
	TCase *tc = tcase_create("catalog");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_required_entries);
	tcase_add_test(tc, test_param_counts);
	tcase_add_test(tc, test_hf_config_matches_catalog);
	tcase_add_test(tc, test_unknown_model);
	tcase_add_test(tc, test_mla_kv);
	tcase_add_test(tc, test_dtypes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run(suite());
}
