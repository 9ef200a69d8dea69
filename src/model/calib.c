/* calib: see calib.h. */
#include "config.h"

#include "model/calib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/cost.h"
#include "base/jsonio.h"
#include "solver/nelder_mead.h"

const char *const hx_calib_keys[] = {"e_compute",
				     "e_mem",
				     "e_attn",
				     "kernel_floor_us",
				     "iter_overhead_ms",
				     "allreduce_latency_us",
				     "graph_floor_us",
				     "seq_overhead_us",
				     "e_moe",
				     "request_overhead_ms",
				     NULL};

static int calib_key_index(const char *key)
{
	for (int i = 0; hx_calib_keys[i]; i++)
		if (strcmp(hx_calib_keys[i], key) == 0)
			return i;
	return -1;
}

/* Physical bounds (hexplan-formats(5), CALIBRATION): efficiencies in
 * [0.01, 1] (e_moe in [0, 1], 0 meaning 1); no kernel runs in under 0.1 us,
 * and a kernel floor above 1 ms is no floor, so kernel_floor_us is in
 * [0.1, 1000]; the other times in [0, 1e4]. */
static void key_bounds(const char *key, double *lo, double *hi)
{
	if (strcmp(key, "e_moe") == 0) {
		*lo = 0;
		*hi = 1;
	} else if (strncmp(key, "e_", 2) == 0) {
		*lo = 0.01;
		*hi = 1;
	} else if (strcmp(key, "kernel_floor_us") == 0) {
		*lo = 0.1;
		*hi = 1000;
	} else {
		*lo = 0;
		*hi = 1e4;
	}
}

int hx_calib_load(hx_calib *c, const char *path, const hx_catalog *cat, hx_err *err)
{
	static const char *const top[] = {"schema", "version", "model", "gpus", "fit", NULL};
	hx_jr r = {hx_display_path(path), err};
	json_t *root, *gpus, *fields;
	const char *gname;
	char schema[64];
	int rc;

	memset(c, 0, sizeof(*c));
	root = hx_json_load_file(path, err);
	if (!root)
		return HX_EINPUT;
	if ((rc = hx_jr_object(&r, root, "", top)) || (rc = hx_jr_version(&r, root)) ||
	    (rc = hx_jr_str(&r, root, "", "schema", 1, schema, sizeof(schema))))
		goto out;
	if (json_object_get(root, "model") && !json_is_string(json_object_get(root, "model"))) {
		rc = hx_jr_fail(&r, "/model", "must be a string");
		goto out;
	}
	if (json_object_get(root, "fit") && !json_is_object(json_object_get(root, "fit"))) {
		rc = hx_jr_fail(&r, "/fit", "must be an object");
		goto out;
	}
	if (strcmp(schema, "hexplan.calibration") != 0) {
		rc = hx_jr_fail(&r, "/schema", "must be \"hexplan.calibration\"");
		goto out;
	}
	gpus = json_object_get(root, "gpus");
	if (!json_is_object(gpus)) {
		rc = hx_jr_fail(&r, gpus ? "/gpus" : "",
				gpus ? "must be an object" : "missing required key \"gpus\"");
		goto out;
	}
	c->e = hx_xcalloc(json_object_size(gpus), sizeof(hx_calib_entry));
	json_object_foreach(gpus, gname, fields)
	{
		hx_calib_entry *e = &c->e[c->n];
		const char *key;
		json_t *v;
		char p[256];

		hx_ptr_key(p, sizeof(p), "/gpus", gname);
		if (!hx_catalog_gpu(cat, gname)) {
			rc = hx_jr_fail(&r, p, "unknown GPU \"%s\"", gname);
			goto out;
		}
		if ((rc = hx_jr_object(&r, fields, p, hx_calib_keys)))
			goto out;
		hx_strlcpy(e->gpu, gname, sizeof(e->gpu));
		json_object_foreach(fields, key, v)
		{
			double lo, hi;
			key_bounds(key, &lo, &hi);
			hx_strlcpy(e->key[e->nfields], key, sizeof(e->key[0]));
			if ((rc = hx_jr_num(&r, fields, p, key, 1, lo, hi,
					    &e->value[e->nfields])))
				goto out;
			e->nfields++;
		}
		c->n++;
	}
	rc = HX_OK;
out:
	json_decref(root);
	if (rc)
		hx_calib_release(c);
	return rc;
}

void hx_calib_release(hx_calib *c)
{
	free(c->e);
	c->e = NULL;
	c->n = 0;
}

void hx_calib_apply(const hx_calib *c, hx_catalog *cat)
{
	for (int i = 0; i < c->n; i++) {
		hx_gpu *g = (hx_gpu *)hx_catalog_gpu(cat, c->e[i].gpu);
		for (int k = 0; g && k < c->e[i].nfields; k++)
			*hx_gpu_field(g, c->e[i].key[k]) = c->e[i].value[k];
	}
}

double hx_calib_predict(const hx_model *m, const hx_gpu *g, const hx_meas *x)
{
	hx_replica r;
	hx_batch b = {0};
	hx_iter it;
	hx_dtype wdt = m->a.dtype;

	if (x->phase == HX_PHASE_LINEAR)
		return hx_cost_linear(m, g, x->tp, wdt, m->a.layers - 1, x->tokens) * 1e3;
	if (hx_replica_uniform(&r, m, g, x->tp, 1, wdt, HX_DT_BF16, 100, 0, NULL))
		return NAN;
	if (x->phase == HX_PHASE_PREFILL)
		hx_batch_add_prefill(&b, x->batch, x->tokens, x->context);
	else
		hx_batch_add_decode(&b, x->batch, x->context);
	hx_cost_iter(&r, &b, &it);
	return it.latency_s * 1e3;
}

typedef struct fit_ctx {
	const hx_model *m;
	const hx_meas *x;
	int n;
	hx_gpu g;
	int nkeys;
	const char *keys[HX_CALIB_MAX_FIELDS];
} fit_ctx;

double hx_calib_to_value(const char *key, double u)
{
	double lo, hi;
	key_bounds(key, &lo, &hi);
	if (strncmp(key, "e_", 2) == 0)
		return lo + (hi - lo) / (1 + exp(-u));
	return fmin(lo + exp(u), hi);
}

double hx_calib_to_coord(const char *key, double v)
{
	double lo, hi;
	key_bounds(key, &lo, &hi);
	if (strncmp(key, "e_", 2) == 0) {
		double f = (v - lo) / (hi - lo);
		f = fmin(fmax(f, 1e-4), 1 - 1e-4);
		return log(f / (1 - f));
	}
	return log(fmax(v - lo, 1e-3));
}

static void set_coords(fit_ctx *c, const double *u)
{
	for (int k = 0; k < c->nkeys; k++)
		*hx_gpu_field(&c->g, c->keys[k]) = hx_calib_to_value(c->keys[k], u[k]);
}

static double objective(const double *u, void *vctx)
{
	fit_ctx *c = vctx;
	double sse = 0;

	set_coords(c, u);
	for (int i = 0; i < c->n; i++) {
		double p = hx_calib_predict(c->m, &c->g, &c->x[i]);
		double e = log(p / c->x[i].ms);
		sse += isfinite(e) ? e * e : 1e6;
	}
	return sse;
}

typedef struct min_ctx {
	hx_gpu *g;
	const char *const *keys;
	int nkeys;
	hx_calib_objective f;
	void *ctx;
} min_ctx;

static double min_objective(const double *u, void *vctx)
{
	min_ctx *c = vctx;
	for (int k = 0; k < c->nkeys; k++)
		*hx_gpu_field(c->g, c->keys[k]) = hx_calib_to_value(c->keys[k], u[k]);
	return c->f(c->g, c->ctx);
}

double hx_calib_minimize(hx_gpu *g, const char *const *keys, int nkeys, double start_off,
			 hx_calib_objective f, void *ctx, int max_evals, int *evals)
{
	min_ctx c = {g, keys, nkeys, f, ctx};
	double u[HX_CALIB_MAX_FIELDS], best;

	for (int k = 0; k < nkeys; k++) {
		double v = *hx_gpu_field(g, keys[k]);
		if (v <= 0 && strncmp(keys[k], "e_", 2) != 0)
			v = start_off;
		u[k] = hx_calib_to_coord(keys[k], v);
	}
	best = hx_nm_minimize(min_objective, &c, u, nkeys, 0.3, max_evals, 1e-6, evals);
	for (int k = 0; k < nkeys; k++)
		*hx_gpu_field(g, keys[k]) = hx_calib_to_value(keys[k], u[k]);
	return best;
}

/* Whether points I and J are the same measurement (a repeat identifies
 * nothing more). */
static int same_point(const hx_meas *a, const hx_meas *b)
{
	return a->tp == b->tp && a->phase == b->phase && a->batch == b->batch &&
	       a->tokens == b->tokens && a->context == b->context;
}

/* The distinct points of X (N of them) in phases WHOLE (1: prefill and
 * decode, 0: any). */
static int distinct_points(const hx_meas *x, int n, int whole)
{
	int d = 0;
	for (int i = 0; i < n; i++) {
		int j;
		if (whole && x[i].phase == HX_PHASE_LINEAR)
			continue;
		for (j = 0; j < i && !same_point(&x[i], &x[j]); j++)
			;
		d += j == i;
	}
	return d;
}

/* Refuse a fit that the points cannot identify: fewer distinct points than
 * fitted keys, or fewer whole-iteration points than the keys only they
 * identify (e_attn, iter_overhead_ms, allreduce_latency_us). */
static int identifiable(const fit_ctx *c, hx_err *err)
{
	char list[256] = "", only_list[256] = "";
	int all = distinct_points(c->x, c->n, 0), whole = distinct_points(c->x, c->n, 1);
	int only = 0;

	for (int k = 0; k < c->nkeys; k++) {
		size_t l = strlen(list);
		snprintf(list + l, sizeof(list) - l, "%s%s", k ? ", " : "", c->keys[k]);
		if (k >= 3) { /* after e_compute, e_mem and kernel_floor_us */
			l = strlen(only_list);
			snprintf(only_list + l, sizeof(only_list) - l, "%s%s", only ? ", " : "",
				 c->keys[k]);
			only++;
		}
	}
	if (all < c->nkeys)
		return hx_errf(
		    err, HX_EINPUT,
		    "%d distinct measurement%s cannot identify the %d fitted constants (%s): give at least %d rows of different shapes",
		    all, all == 1 ? "" : "s", c->nkeys, list, c->nkeys);
	if (whole < only)
		return hx_errf(
		    err, HX_EINPUT,
		    "%d distinct prefill or decode measurement%s cannot identify the %d constants only they fit (%s): give at least %d",
		    whole, whole == 1 ? "" : "s", only, only_list, only);
	return HX_OK;
}

static void ape_stats(const hx_meas *x, const double *pred, int n, double *med, double *p90)
{
	double *e = hx_xmalloc((size_t)n * sizeof(double));
	for (int i = 0; i < n; i++)
		e[i] = fabs(pred[i] / x[i].ms - 1) * 100;
	*med = hx_quantile(e, (size_t)n, 0.5);
	*p90 = hx_quantile(e, (size_t)n, 0.9);
	free(e);
}

int hx_calib_fit(const hx_model *m, const hx_gpu *g, const hx_meas *x, int n, hx_fit *out,
		 hx_err *err)
{
	fit_ctx c = {m, x, n, *g, 0, {0}};
	double u[HX_CALIB_MAX_FIELDS];
	int whole = 0, prefill = 0, multi_tp = 0;

	memset(out, 0, sizeof(*out));
	if (n < 1)
		return hx_errf(err, HX_EINPUT, "no measurements to fit");
	for (int i = 0; i < n; i++) {
		if (m->a.heads % x[i].tp)
			return hx_errf(err, HX_EINPUT,
				       "line %d: tp %d does not divide the %d heads of %s",
				       x[i].line, x[i].tp, m->a.heads, m->name);
		whole |= x[i].phase != HX_PHASE_LINEAR;
		prefill |= x[i].phase == HX_PHASE_PREFILL;
		multi_tp |= x[i].phase != HX_PHASE_LINEAR && x[i].tp > 1;
	}
	c.keys[c.nkeys++] = "e_compute";
	c.keys[c.nkeys++] = "e_mem";
	c.keys[c.nkeys++] = "kernel_floor_us";
	if (prefill)
		c.keys[c.nkeys++] = "e_attn";
	if (whole)
		c.keys[c.nkeys++] = "iter_overhead_ms";
	if (multi_tp)
		c.keys[c.nkeys++] = "allreduce_latency_us";
	for (int k = 0; k < c.nkeys; k++) {
		if (calib_key_index(c.keys[k]) < 0)
			return hx_errf(err, HX_EINPUT, "internal: %s is not fittable",
				       c.keys[k]);
		u[k] = hx_calib_to_coord(c.keys[k], *hx_gpu_field(&c.g, c.keys[k]));
	}
	if (identifiable(&c, err))
		return HX_EINPUT;
	out->before_ms = hx_xmalloc((size_t)n * sizeof(double));
	out->after_ms = hx_xmalloc((size_t)n * sizeof(double));
	for (int i = 0; i < n; i++)
		out->before_ms[i] = hx_calib_predict(m, g, &x[i]);
	hx_nm_minimize(objective, &c, u, c.nkeys, 0.3, 4000, 1e-10, &out->evals);
	/* A second start from the first optimum escapes a collapsed simplex. */
	{
		int more = 0;
		hx_nm_minimize(objective, &c, u, c.nkeys, 0.1, 2000, 1e-12, &more);
		out->evals += more;
	}
	set_coords(&c, u);
	out->fitted = c.g;
	out->nkeys = c.nkeys;
	memcpy(out->keys, c.keys, sizeof(c.keys));
	for (int i = 0; i < n; i++)
		out->after_ms[i] = hx_calib_predict(m, &c.g, &x[i]);
	ape_stats(x, out->before_ms, n, &out->median_ape_before, &out->p90_ape_before);
	ape_stats(x, out->after_ms, n, &out->median_ape_after, &out->p90_ape_after);
	return 0;
}

void hx_fit_release(hx_fit *f)
{
	free(f->before_ms);
	free(f->after_ms);
	f->before_ms = f->after_ms = NULL;
}
