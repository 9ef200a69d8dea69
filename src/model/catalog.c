/* catalog: see catalog.h. */
#include "config.h"

#include "model/catalog.h"

#include <math.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "base/jsonio.h"

/* Generated from profiles/ at build time (catalog_data.c). */
extern const char hx_builtin_gpus_json[];
extern const char hx_builtin_models_json[];

double hx_dtype_bytes(hx_dtype dt)
{
	switch (dt) {
	case HX_DT_FP32: return 4;
	case HX_DT_BF16:
	case HX_DT_FP16: return 2;
	case HX_DT_FP8: return 1;
	case HX_DT_INT4: return 0.5 + 2.0 / 128; /* group-128 fp16 scales */
	}
	return 2;
}

static const char *const dtype_names[] = {"bf16", "fp16", "fp8", "int4", "fp32", NULL};

const char *hx_dtype_name(hx_dtype dt)
{
	return dtype_names[dt];
}

int hx_dtype_parse(const char *s)
{
	for (int i = 0; dtype_names[i]; i++)
		if (strcmp(s, dtype_names[i]) == 0)
			return i;
	return -1;
}

const char *const hx_gpu_num_keys[] = {"tflops_bf16",
				       "tflops_fp8",
				       "mem_gib",
				       "mem_bw_gb_s",
				       "intra_bw_gb_s",
				       "intra_latency_us",
				       "usd_per_hour",
				       "tdp_w",
				       "e_compute",
				       "e_mem",
				       "e_attn",
				       "kernel_floor_us",
				       "allreduce_latency_us",
				       "iter_overhead_ms",
				       "runtime_reserve_gib",
				       "graph_floor_us",
				       "seq_overhead_us",
				       "e_moe",
				       "request_overhead_ms",
				       NULL};

double *hx_gpu_field(hx_gpu *g, const char *key)
{
	double *f[] = {&g->tflops_bf16,
		       &g->tflops_fp8,
		       &g->mem_gib,
		       &g->mem_bw_gb_s,
		       &g->intra_bw_gb_s,
		       &g->intra_latency_us,
		       &g->usd_per_hour,
		       &g->tdp_w,
		       &g->e_compute,
		       &g->e_mem,
		       &g->e_attn,
		       &g->kernel_floor_us,
		       &g->allreduce_latency_us,
		       &g->iter_overhead_ms,
		       &g->runtime_reserve_gib,
		       &g->graph_floor_us,
		       &g->seq_overhead_us,
		       &g->e_moe,
		       &g->request_overhead_ms};

	for (size_t i = 0; hx_gpu_num_keys[i]; i++)
		if (strcmp(hx_gpu_num_keys[i], key) == 0)
			return f[i];
	return NULL;
}

/* Valid range of each numeric field: [lo, hi], and whether 0 is allowed. */
static void gpu_range(const char *key, double *lo, double *hi)
{
	*lo = 0;
	*hi = 1e7;
	if (strcmp(key, "e_moe") == 0) { /* 0: off (dense efficiency) */
		*lo = 0;
		*hi = 1;
	} else if (strncmp(key, "e_", 2) == 0) {
		*lo = 0.01;
		*hi = 1;
	} else if (strcmp(key, "tflops_bf16") == 0 || strcmp(key, "mem_gib") == 0 ||
		   strcmp(key, "mem_bw_gb_s") == 0 || strcmp(key, "intra_bw_gb_s") == 0) {
		*lo = 1e-3;
	}
}

static const char *const gpu_str_keys[] = {
    "name", "vendor", "product", "intra_link", "price_date", "price_source", NULL};

int hx_gpu_parse(const hx_jr *r, const json_t *v, const char *ptr, const hx_catalog *cat,
		 hx_gpu *out)
{
	const char *allowed[32];
	size_t n = 0;
	const json_t *base;
	int full, rc, i;
	static const char *const vendors[] = {"nvidia", "amd", NULL};
	static const char *const links[] = {"nvlink", "pcie", "xgmi", NULL};
	int idx;

	if (json_is_string(v)) {
		const hx_gpu *g = cat ? hx_catalog_gpu(cat, json_string_value(v)) : NULL;
		if (!g)
			return hx_jr_fail(r, ptr,
					  "unknown GPU \"%s\" (see 'hexplan profiles list')",
					  json_string_value(v));
		*out = *g;
		return 0;
	}
	allowed[n++] = "base";
	for (i = 0; gpu_str_keys[i]; i++)
		allowed[n++] = gpu_str_keys[i];
	for (i = 0; hx_gpu_num_keys[i]; i++)
		allowed[n++] = hx_gpu_num_keys[i];
	allowed[n] = NULL;
	if ((rc = hx_jr_object(r, v, ptr, allowed)))
		return rc;
	base = json_object_get(v, "base");
	full = base == NULL;
	memset(out, 0, sizeof(*out));
	if (base) {
		char p[512];
		const hx_gpu *g;
		hx_ptr_key(p, sizeof(p), ptr, "base");
		if (!json_is_string(base))
			return hx_jr_fail(r, p, "must be a GPU name");
		g = cat ? hx_catalog_gpu(cat, json_string_value(base)) : NULL;
		if (!g)
			return hx_jr_fail(r, p,
					  "unknown GPU \"%s\" (see 'hexplan profiles list')",
					  json_string_value(base));
		*out = *g;
	}
	if ((rc = hx_jr_str(r, v, ptr, "name", full, out->name, sizeof(out->name))) ||
	    (rc = hx_jr_str(r, v, ptr, "product", full, out->product, sizeof(out->product))) ||
	    (rc = hx_jr_str(r, v, ptr, "price_date", full, out->price_date,
			    sizeof(out->price_date))) ||
	    (rc = hx_jr_str(r, v, ptr, "price_source", full, out->price_source,
			    sizeof(out->price_source))))
		return rc;
	idx = -1;
	if ((rc = hx_jr_enum(r, v, ptr, "vendor", full, vendors, &idx)))
		return rc;
	if (idx >= 0)
		strcpy(out->vendor, vendors[idx]);
	idx = -1;
	if ((rc = hx_jr_enum(r, v, ptr, "intra_link", full, links, &idx)))
		return rc;
	if (idx >= 0)
		strcpy(out->intra_link, links[idx]);
	for (i = 0; hx_gpu_num_keys[i]; i++) {
		double lo, hi;
		gpu_range(hx_gpu_num_keys[i], &lo, &hi);
		rc = hx_jr_num(r, v, ptr, hx_gpu_num_keys[i], full, lo, hi,
			       hx_gpu_field(out, hx_gpu_num_keys[i]));
		if (rc)
			return rc;
	}
	return 0;
}

static const char *const arch_int_keys[] = {"layers",
					    "hidden",
					    "heads",
					    "kv_heads",
					    "head_dim",
					    "intermediate",
					    "vocab",
					    "learned_pos",
					    "experts",
					    "experts_per_tok",
					    "moe_intermediate",
					    "shared_experts",
					    "first_dense_layers",
					    "kv_lora_rank",
					    "q_lora_rank",
					    "qk_rope_head_dim",
					    "qk_nope_head_dim",
					    "v_head_dim",
					    "max_context",
					    NULL};
static const char *const arch_bool_keys[] = {"gated_mlp", "tied_embeddings", "attn_bias",
					     "mlp_bias",  "qk_norm",         NULL};

static int *arch_int(hx_arch *a, int i)
{
	int *f[] = {&a->layers,
		    &a->hidden,
		    &a->heads,
		    &a->kv_heads,
		    &a->head_dim,
		    &a->intermediate,
		    &a->vocab,
		    &a->learned_pos,
		    &a->experts,
		    &a->experts_per_tok,
		    &a->moe_intermediate,
		    &a->shared_experts,
		    &a->first_dense_layers,
		    &a->kv_lora_rank,
		    &a->q_lora_rank,
		    &a->qk_rope_head_dim,
		    &a->qk_nope_head_dim,
		    &a->v_head_dim,
		    &a->max_context};
	return f[i];
}

static int *arch_bool(hx_arch *a, int i)
{
	int *f[] = {&a->gated_mlp, &a->tied_embeddings, &a->attn_bias, &a->mlp_bias,
		    &a->qk_norm};
	return f[i];
}

int hx_arch_parse(const hx_jr *r, const json_t *v, const char *ptr, hx_arch *out)
{
	const char *allowed[40];
	size_t n = 0;
	int i, rc, idx = 0;
	static const char *const norms[] = {"rms", "layer", NULL};

	for (i = 0; arch_int_keys[i]; i++)
		allowed[n++] = arch_int_keys[i];
	for (i = 0; arch_bool_keys[i]; i++)
		allowed[n++] = arch_bool_keys[i];
	allowed[n++] = "norm";
	allowed[n++] = "dtype";
	allowed[n] = NULL;
	if ((rc = hx_jr_object(r, v, ptr, allowed)))
		return rc;
	memset(out, 0, sizeof(*out));
	for (i = 0; arch_int_keys[i]; i++) {
		long x = 0;
		/* Shape keys are required; MoE/MLA/OPT extras default to 0. */
		int required = i < 7;
		if ((rc = hx_jr_int(r, v, ptr, arch_int_keys[i], required, required ? 1 : 0,
				    100000000, &x)))
			return rc;
		*arch_int(out, i) = (int)x;
	}
	for (i = 0; arch_bool_keys[i]; i++)
		if ((rc = hx_jr_bool(r, v, ptr, arch_bool_keys[i], 0, arch_bool(out, i))))
			return rc;
	if ((rc = hx_jr_enum(r, v, ptr, "norm", 0, norms, &idx)))
		return rc;
	out->norm_layer = idx == 1;
	{
		/* Weights as served: fp32 checkpoints are served in 16 bits. */
		static const char *const served[] = {"bf16", "fp16", "fp8", "int4", NULL};
		idx = 0;
		if ((rc = hx_jr_enum(r, v, ptr, "dtype", 0, served, &idx)))
			return rc;
		out->dtype = (hx_dtype)hx_dtype_parse(served[idx]);
	}
	if (!out->max_context)
		out->max_context = 4096;
	return 0;
}

json_t *hx_gpu_to_json(const hx_gpu *g)
{
	json_t *o = json_object();
	hx_gpu *mg = (hx_gpu *)g;

	hx_jset_str(o, "name", g->name);
	hx_jset_str(o, "vendor", g->vendor);
	hx_jset_str(o, "product", g->product);
	hx_jset_str(o, "intra_link", g->intra_link);
	for (int i = 0; hx_gpu_num_keys[i]; i++)
		json_object_set_new(o, hx_gpu_num_keys[i],
				    json_real(*hx_gpu_field(mg, hx_gpu_num_keys[i])));
	hx_jset_str(o, "price_date", g->price_date);
	hx_jset_str(o, "price_source", g->price_source);
	return o;
}

json_t *hx_arch_to_json(const hx_arch *x)
{
	json_t *a = json_object();
	hx_arch *mx = (hx_arch *)x;

	for (int i = 0; arch_int_keys[i]; i++)
		hx_jset_int(a, arch_int_keys[i], *arch_int(mx, i));
	for (int i = 0; arch_bool_keys[i]; i++)
		json_object_set_new(a, arch_bool_keys[i], json_boolean(*arch_bool(mx, i)));
	hx_jset_str(a, "norm", x->norm_layer ? "layer" : "rms");
	hx_jset_str(a, "dtype", hx_dtype_name(x->dtype));
	return a;
}

int hx_arch_check(const hx_arch *a, const char *what, hx_err *err)
{
	if (a->layers < 1 || a->hidden < 1 || a->heads < 1 || a->vocab < 1)
		return hx_errf(err, HX_EINPUT,
			       "%s: layers, hidden, heads and vocab must be positive", what);
	if (a->kv_heads < 1 || a->kv_heads > a->heads || a->heads % a->kv_heads)
		return hx_errf(err, HX_EINPUT, "%s: kv_heads (%d) must divide heads (%d)", what,
			       a->kv_heads, a->heads);
	/* An MLA model's head_dim is made of these: name them, not it. */
	if (a->kv_lora_rank > 0 &&
	    (a->qk_rope_head_dim < 1 || a->v_head_dim < 1 || a->qk_nope_head_dim < 1))
		return hx_errf(
		    err, HX_EINPUT,
		    "%s: an MLA model needs qk_rope_head_dim, qk_nope_head_dim and v_head_dim",
		    what);
	if (a->head_dim < 1)
		return hx_errf(err, HX_EINPUT, "%s: head_dim must be positive", what);
	if (a->experts > 0) {
		if (a->experts_per_tok < 1 || a->experts_per_tok > a->experts)
			return hx_errf(err, HX_EINPUT,
				       "%s: experts_per_tok must be between 1 and experts (%d)",
				       what, a->experts);
		if (a->moe_intermediate < 1)
			return hx_errf(err, HX_EINPUT, "%s: a MoE model needs moe_intermediate",
				       what);
		if (a->first_dense_layers >= a->layers)
			return hx_errf(err, HX_EINPUT,
				       "%s: first_dense_layers must be below layers", what);
	} else if (a->intermediate < 1) {
		return hx_errf(err, HX_EINPUT, "%s: intermediate must be positive", what);
	}
	return 0;
}

int hx_layer_is_moe(const hx_arch *a, int layer)
{
	return a->experts > 0 && layer >= a->first_dense_layers;
}

static double attn_params(const hx_arch *a)
{
	double h = a->hidden, p;

	if (a->kv_lora_rank > 0) {
		double qk = a->qk_nope_head_dim + a->qk_rope_head_dim;
		if (a->q_lora_rank > 0)
			p = h * a->q_lora_rank + (double)a->q_lora_rank * a->heads * qk +
			    a->q_lora_rank;
		else
			p = h * a->heads * qk;
		p +=
		    h * (a->kv_lora_rank + a->qk_rope_head_dim) +
		    (double)a->kv_lora_rank * a->heads * (a->qk_nope_head_dim + a->v_head_dim) +
		    (double)a->heads * a->v_head_dim * h + a->kv_lora_rank;
		return p;
	}
	p = 2.0 * h * a->heads * a->head_dim + 2.0 * h * a->kv_heads * a->head_dim;
	if (a->attn_bias)
		p += (double)(a->heads + 2 * a->kv_heads) * a->head_dim +
		     (a->norm_layer ? h : 0);
	if (a->qk_norm)
		p += 2.0 * a->head_dim;
	return p;
}

static double mlp_params(const hx_arch *a, int moe, int active)
{
	double h = a->hidden, mats = a->gated_mlp ? 3 : 2;

	if (moe) {
		double n = (active ? a->experts_per_tok : a->experts) + a->shared_experts;
		return n * mats * h * a->moe_intermediate + h * a->experts;
	}
	return mats * h * a->intermediate + (a->mlp_bias ? a->intermediate + h : 0);
}

double hx_layer_params(const hx_arch *a, int layer)
{
	return attn_params(a) + mlp_params(a, hx_layer_is_moe(a, layer), 0) +
	       2.0 * a->hidden * (a->norm_layer ? 2 : 1);
}

static double model_params(const hx_arch *a, int active)
{
	double p = 0, h = a->hidden;

	for (int l = 0; l < a->layers; l++)
		p += attn_params(a) + mlp_params(a, hx_layer_is_moe(a, l), active) +
		     2.0 * h * (a->norm_layer ? 2 : 1);
	p += (double)a->vocab * h * (a->tied_embeddings ? 1 : 2);
	p += (double)a->learned_pos * h + h * (a->norm_layer ? 2 : 1);
	return p;
}

double hx_model_params(const hx_arch *a)
{
	return model_params(a, 0);
}

double hx_model_active_params(const hx_arch *a)
{
	return model_params(a, 1);
}

/* Parse one catalog file's GPU or model list into CAT. */
static int parse_gpus(hx_catalog *cat, json_t *root, const char *file, hx_err *err)
{
	hx_jr r = {file, err};
	static const char *const top[] = {"version", "gpus", NULL};
	json_t *list;
	size_t n, i;
	int rc;

	if ((rc = hx_jr_object(&r, root, "", top)) || (rc = hx_jr_version(&r, root)))
		return rc;
	list = json_object_get(root, "gpus");
	if (!list)
		return hx_jr_fail(&r, "", "missing required key \"gpus\"");
	if ((rc = hx_jr_array(&r, list, "/gpus", 1, &n)))
		return rc;
	cat->gpus = hx_xcalloc(n, sizeof(hx_gpu));
	for (i = 0; i < n; i++) {
		char p[64];
		hx_ptr_index(p, sizeof(p), "/gpus", i);
		if ((rc = hx_gpu_parse(&r, json_array_get(list, i), p, NULL, &cat->gpus[i])))
			return rc;
		if (hx_catalog_gpu(cat, cat->gpus[i].name))
			return hx_jr_fail(&r, p, "duplicate GPU name \"%s\"",
					  cat->gpus[i].name);
		cat->ngpus++;
	}
	return 0;
}

static int parse_models(hx_catalog *cat, json_t *root, const char *file, hx_err *err)
{
	hx_jr r = {file, err};
	static const char *const top[] = {"version", "models", NULL};
	static const char *const keys[] = {
	    "name", "hf_repo", "published_params_b", "published_active_b", "arch", NULL};
	json_t *list;
	size_t n, i;
	int rc;

	if ((rc = hx_jr_object(&r, root, "", top)) || (rc = hx_jr_version(&r, root)))
		return rc;
	list = json_object_get(root, "models");
	if (!list)
		return hx_jr_fail(&r, "", "missing required key \"models\"");
	if ((rc = hx_jr_array(&r, list, "/models", 1, &n)))
		return rc;
	cat->models = hx_xcalloc(n, sizeof(hx_model));
	for (i = 0; i < n; i++) {
		char p[64], pa[80];
		json_t *m = json_array_get(list, i), *arch;
		hx_model *mo = &cat->models[i];
		hx_ptr_index(p, sizeof(p), "/models", i);
		if ((rc = hx_jr_object(&r, m, p, keys)) ||
		    (rc = hx_jr_str(&r, m, p, "name", 1, mo->name, sizeof(mo->name))) ||
		    (rc =
			 hx_jr_str(&r, m, p, "hf_repo", 0, mo->hf_repo, sizeof(mo->hf_repo))) ||
		    (rc = hx_jr_num(&r, m, p, "published_params_b", 0, 0, 1e6,
				    &mo->published_params_b)) ||
		    (rc = hx_jr_num(&r, m, p, "published_active_b", 0, 0, 1e6,
				    &mo->published_active_b)))
			return rc;
		arch = json_object_get(m, "arch");
		if (!arch)
			return hx_jr_fail(&r, p, "missing required key \"arch\"");
		hx_ptr_key(pa, sizeof(pa), p, "arch");
		if ((rc = hx_arch_parse(&r, arch, pa, &mo->a)))
			return rc;
		if ((rc = hx_arch_check(&mo->a, file, err)))
			return hx_jr_fail(&r, pa, "%s", err->msg + strlen(file) + 2);
		if (hx_catalog_model(cat, mo->name))
			return hx_jr_fail(&r, p, "duplicate model name \"%s\"", mo->name);
		cat->nmodels++;
	}
	return 0;
}

int hx_catalog_load(hx_catalog *cat, const char *dir, hx_err *err)
{
	json_t *g = NULL, *m = NULL;
	char *gp = NULL, *mp = NULL;
	int rc = HX_EINPUT;

	memset(cat, 0, sizeof(*cat));
	if (dir) {
		gp = hx_path_join(dir, "gpus.json");
		mp = hx_path_join(dir, "models.json");
		g = hx_json_load_file(gp, err);
		if (!g)
			goto out;
		m = hx_json_load_file(mp, err);
		if (!m)
			goto out;
		hx_strlcpy(cat->source, dir, sizeof(cat->source));
	} else {
		gp = hx_xstrdup("<built-in>/gpus.json");
		mp = hx_xstrdup("<built-in>/models.json");
		g = hx_json_load_text(hx_builtin_gpus_json, gp, err);
		if (!g)
			goto out;
		m = hx_json_load_text(hx_builtin_models_json, mp, err);
		if (!m)
			goto out;
		strcpy(cat->source, "built-in");
	}
	if ((rc = parse_gpus(cat, g, gp, err)) || (rc = parse_models(cat, m, mp, err)))
		goto out;
	rc = HX_OK;
out:
	json_decref(g);
	json_decref(m);
	free(gp);
	free(mp);
	if (rc)
		hx_catalog_release(cat);
	return rc;
}

void hx_catalog_release(hx_catalog *cat)
{
	free(cat->gpus);
	free(cat->models);
	cat->gpus = NULL;
	cat->models = NULL;
	cat->ngpus = cat->nmodels = 0;
}

const hx_gpu *hx_catalog_gpu(const hx_catalog *cat, const char *name)
{
	for (int i = 0; i < cat->ngpus; i++)
		if (strcmp(cat->gpus[i].name, name) == 0)
			return &cat->gpus[i];
	return NULL;
}

const hx_model *hx_catalog_model(const hx_catalog *cat, const char *name)
{
	for (int i = 0; i < cat->nmodels; i++)
		if (strcmp(cat->models[i].name, name) == 0)
			return &cat->models[i];
	return NULL;
}

int hx_model_resolve(const hx_catalog *cat, const char *model, hx_model *out, hx_err *err)
{
	const hx_model *m = hx_catalog_model(cat, model);
	size_t n = strlen(model);

	if (m) {
		*out = *m;
		return 0;
	}
	if (strchr(model, '/') || (n > 5 && strcmp(model + n - 5, ".json") == 0))
		return hx_model_from_hf(model, out, err);
	return hx_errf(
	    err, HX_EINPUT,
	    "unknown model \"%s\" (see 'hexplan profiles list', or give a config.json path)",
	    model);
}

/* Hugging Face config.json: a foreign format, so unknown keys are ignored;
 * the keys hexplan needs are checked for type and range. */
static int hf_int(const hx_jr *r, const json_t *o, const char *key, int *out, int min)
{
	json_t *v = json_object_get(o, key);
	char p[128];

	if (!v || json_is_null(v))
		return 0;
	hx_ptr_key(p, sizeof(p), "", key);
	if (!json_is_integer(v) || json_integer_value(v) < min) {
		hx_jr_fail(r, p, "must be an integer of at least %d", min);
		return -1;
	}
	if (json_integer_value(v) > 100000000) {
		hx_jr_fail(r, p, "must be at most 100000000, not %lld",
			   (long long)json_integer_value(v));
		return -1;
	}
	*out = (int)json_integer_value(v);
	return 1;
}

static int hf_has(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return v && !json_is_null(v);
}

/* Name the config's own keys when its shape is inconsistent: 0, or -1 with
 * the error set through R. */
static int hf_shape_check(const hx_jr *r, const json_t *root, const hx_arch *a)
{
	if (a->kv_heads > a->heads || a->heads % a->kv_heads)
		hx_jr_fail(r, "/num_key_value_heads",
			   "must divide num_attention_heads (%d), not %d", a->heads,
			   a->kv_heads);
	else if (a->experts > 0 && (a->experts_per_tok < 1 || a->experts_per_tok > a->experts))
		hx_jr_fail(r, "/num_experts_per_tok", "must be between 1 and the %d experts",
			   a->experts);
	/* Without head_dim the heads split the hidden size: 3584 / 27 is no
	 * head size (integer division would make one up). */
	else if (!hf_has(root, "head_dim") && a->kv_lora_rank == 0 && a->hidden % a->heads)
		hx_jr_fail(r, "/num_attention_heads",
			   "must divide hidden_size (%d) when head_dim is not given, not %d",
			   a->hidden, a->heads);
	else if (a->experts > 0 && a->first_dense_layers >= a->layers)
		hx_jr_fail(r, "/first_k_dense_replace",
			   "must be below num_hidden_layers (%d), not %d", a->layers,
			   a->first_dense_layers);
	else
		return 0;
	return -1;
}

int hx_model_from_hf(const char *path, hx_model *out, hx_err *err)
{
	hx_jr r = {hx_display_path(path), err};
	json_t *root = hx_json_load_file(path, err), *v, *q;
	hx_arch *a = &out->a;
	char mt[64] = "";
	int rc = HX_EINPUT, x;
	static const char *const required[] = {"num_hidden_layers", "hidden_size",
					       "num_attention_heads", "vocab_size", NULL};

	if (!root)
		return HX_EINPUT;
	memset(out, 0, sizeof(*out));
	if (!json_is_object(root)) {
		hx_jr_fail(&r, "", "must be an object (a Hugging Face config.json)");
		goto out;
	}
	/* Multimodal configs nest the language model. */
	v = json_object_get(root, "text_config");
	if (json_is_object(v) && !hf_has(root, "num_hidden_layers")) {
		json_t *t = json_deep_copy(v);
		json_decref(root);
		root = t;
	}
	for (int i = 0; required[i]; i++) {
		if (!hf_has(root, required[i])) {
			hx_jr_fail(&r, "", "missing required key \"%s\"", required[i]);
			goto out;
		}
	}
	v = json_object_get(root, "model_type");
	if (json_is_string(v))
		hx_strlcpy(mt, json_string_value(v), sizeof(mt));
	if (hf_int(&r, root, "num_hidden_layers", &a->layers, 1) < 0 ||
	    hf_int(&r, root, "hidden_size", &a->hidden, 1) < 0 ||
	    hf_int(&r, root, "num_attention_heads", &a->heads, 1) < 0 ||
	    hf_int(&r, root, "vocab_size", &a->vocab, 1) < 0)
		goto out;
	a->kv_heads = a->heads;
	a->head_dim = a->hidden / a->heads;
	a->max_context = 4096;
	a->gated_mlp = 1;
	a->dtype = HX_DT_BF16;
#define HF(key, field, min)                                                                    \
	do {                                                                                   \
		if ((x = hf_int(&r, root, key, &a->field, min)) < 0)                           \
			goto out;                                                              \
	} while (0)
	HF("num_key_value_heads", kv_heads, 1);
	HF("head_dim", head_dim, 1);
	HF("intermediate_size", intermediate, 1);
	HF("ffn_dim", intermediate, 1);
	HF("max_position_embeddings", max_context, 1);
	HF("num_local_experts", experts, 0);
	HF("num_experts", experts, 0);
	HF("n_routed_experts", experts, 0);
	HF("num_experts_per_tok", experts_per_tok, 0);
	HF("moe_intermediate_size", moe_intermediate, 0);
	HF("n_shared_experts", shared_experts, 0);
	HF("first_k_dense_replace", first_dense_layers, 0);
	HF("kv_lora_rank", kv_lora_rank, 0);
	HF("q_lora_rank", q_lora_rank, 0);
	HF("qk_rope_head_dim", qk_rope_head_dim, 0);
	HF("qk_nope_head_dim", qk_nope_head_dim, 0);
	HF("v_head_dim", v_head_dim, 0);
#undef HF
	if (a->experts > 0 && a->moe_intermediate == 0)
		a->moe_intermediate = a->intermediate; /* Mixtral */
	if (strcmp(mt, "opt") == 0 || strcmp(mt, "gpt2") == 0 || strcmp(mt, "gpt_neox") == 0 ||
	    strcmp(mt, "bloom") == 0 || strcmp(mt, "falcon") == 0 || strcmp(mt, "phi") == 0) {
		a->gated_mlp = 0;
		a->norm_layer = 1;
		a->attn_bias = a->mlp_bias = 1;
		a->tied_embeddings = 1;
	}
	if (strcmp(mt, "opt") == 0)
		a->learned_pos = a->max_context + 2;
	if (strcmp(mt, "qwen2") == 0 || strcmp(mt, "qwen2_moe") == 0)
		a->attn_bias = 1;
	if (strcmp(mt, "qwen3") == 0 || strcmp(mt, "qwen3_moe") == 0)
		a->qk_norm = 1;
	if (json_is_true(json_object_get(root, "attention_bias")))
		a->attn_bias = 1;
	if (json_is_true(json_object_get(root, "mlp_bias")))
		a->mlp_bias = 1;
	v = json_object_get(root, "tie_word_embeddings");
	if (v && !json_is_null(v) && !json_is_boolean(v)) {
		hx_jr_fail(&r, "/tie_word_embeddings", "must be true or false");
		goto out;
	}
	if (json_is_boolean(v))
		a->tied_embeddings = json_is_true(v);
	v = json_object_get(root, "torch_dtype");
	if (!json_is_string(v))
		v = json_object_get(root, "dtype");
	if (json_is_string(v) && strcmp(json_string_value(v), "float16") == 0)
		a->dtype = HX_DT_FP16;
	q = json_object_get(root, "quantization_config");
	if (json_is_object(q)) {
		json_t *meth = json_object_get(q, "quant_method");
		json_t *bits = json_object_get(q, "bits");
		const char *ms = json_is_string(meth) ? json_string_value(meth) : "";
		if (strcmp(ms, "fp8") == 0 ||
		    (json_is_integer(bits) && json_integer_value(bits) == 8))
			a->dtype = HX_DT_FP8;
		else if (json_is_integer(bits) && json_integer_value(bits) == 4)
			a->dtype = HX_DT_INT4;
		else if (strcmp(ms, "awq") == 0 || strcmp(ms, "gptq") == 0)
			a->dtype = HX_DT_INT4;
	}
	if (a->kv_lora_rank > 0)
		a->head_dim = a->qk_nope_head_dim + a->qk_rope_head_dim;
	if (hf_shape_check(&r, root, a))
		goto out;
	v = json_object_get(root, "_name_or_path");
	if (json_is_string(v) && json_string_length(v) > 0 &&
	    json_string_length(v) < sizeof(out->hf_repo))
		hx_strlcpy(out->hf_repo, json_string_value(v), sizeof(out->hf_repo));
	{
		/* Name: the directory holding config.json, else the file name. */
		char *d = hx_dirname(path);
		const char *base = strrchr(d, '/');
		base = base ? base + 1 : d;
		if (strcmp(base, ".") == 0 || !*base) {
			base = strrchr(path, '/');
			base = base ? base + 1 : path;
		}
		hx_strlcpy(out->name, base, sizeof(out->name));
		free(d);
	}
	if ((rc = hx_arch_check(a, path, err)))
		goto out;
	rc = HX_OK;
out:
	json_decref(root);
	return rc;
}

int hx_gpu_same(const hx_gpu *a, const hx_gpu *b)
{
	size_t off = offsetof(hx_gpu, tflops_bf16); /* the figures follow the strings */
	return strcmp(a->name, b->name) == 0 &&
	       memcmp((const char *)a + off, (const char *)b + off, sizeof(hx_gpu) - off) == 0;
}
