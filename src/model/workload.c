/* workload: the strict loader of workload files (problem.h). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonio.h"
#include "model/problem.h"
#include "model/quality.h"

/* ---- workload ----------------------------------------------------------- */

int hx_dist_parse(const hx_jr *r, const json_t *v, const char *ptr, const char *base_dir,
		  int column, hx_dist *d)
{
	static const char *const keys[] = {"dist",    "mean",  "p50", "max",
					   "buckets", "trace", NULL};
	static const char *const dists[] = {"lognormal", NULL};
	int rc, idx = 0, forms;
	json_t *b = json_object_get(v, "buckets"), *t = json_object_get(v, "trace");

	memset(d, 0, sizeof(*d));
	if ((rc = hx_jr_object(r, v, ptr, keys)))
		return rc;
	forms = (json_object_get(v, "dist") != NULL) + (b != NULL) + (t != NULL);
	if (forms != 1)
		return hx_jr_fail(r, ptr,
				  "give exactly one of \"dist\", \"buckets\" or \"trace\"");
	if (b) {
		char p[512];
		size_t n, i;
		hx_tw *pairs;

		if (json_object_size(v) != 1)
			return hx_jr_fail(r, ptr, "\"buckets\" takes no other keys");
		hx_ptr_key(p, sizeof(p), ptr, "buckets");
		if ((rc = hx_jr_array(r, b, p, 1, &n)))
			return rc;
		if (n > HX_MAX_BUCKETS)
			return hx_jr_fail(r, p,
					  "%zu buckets are more than hexplan's limit of %d", n,
					  HX_MAX_BUCKETS);
		pairs = hx_xcalloc(n, sizeof(*pairs));
		for (i = 0; i < n; i++) {
			json_t *e = json_array_get(b, i);
			char pe[540];
			hx_ptr_index(pe, sizeof(pe), p, i);
			if (!json_is_array(e) || json_array_size(e) != 2 ||
			    !json_is_number(json_array_get(e, 0)) ||
			    !json_is_number(json_array_get(e, 1))) {
				free(pairs);
				return hx_jr_fail(r, pe, "must be a pair [tokens, weight]");
			}
			pairs[i].t = json_number_value(json_array_get(e, 0));
			pairs[i].w = json_number_value(json_array_get(e, 1));
			if (!(pairs[i].t >= 1 && pairs[i].t <= 1e7) ||
			    pairs[i].t != floor(pairs[i].t)) {
				free(pairs);
				hx_ptr_index(pe, sizeof(pe), p, i);
				strcat(pe, "/0");
				return hx_jr_fail(
				    r, pe, "tokens must be an integer from 1 to 10000000");
			}
			if (!(pairs[i].w > 0 && pairs[i].w < 1e12)) {
				free(pairs);
				hx_ptr_index(pe, sizeof(pe), p, i);
				strcat(pe, "/1");
				return hx_jr_fail(r, pe, "weight must be a positive number");
			}
		}
		hx_dist_from_pairs(d, pairs, (int)n);
		return 0;
	}
	if (t) {
		char p[512], file[1024], *path;
		hx_trace tr;
		hx_err terr = {0};
		hx_tw *pairs;

		if (json_object_size(v) != 1)
			return hx_jr_fail(r, ptr, "\"trace\" takes no other keys");
		if ((rc = hx_jr_str(r, v, ptr, "trace", 1, file, sizeof(file))))
			return rc;
		path = hx_path_join(base_dir, file);
		rc = hx_trace_load(&tr, path, &terr);
		free(path);
		if (rc) {
			hx_ptr_key(p, sizeof(p), ptr, "trace");
			return hx_jr_fail(r, p, "%s", terr.msg);
		}
		pairs = hx_xmalloc((size_t)tr.n * sizeof(*pairs));
		for (int i = 0; i < tr.n; i++) {
			pairs[i].t = column ? tr.output[i] : tr.input[i];
			pairs[i].w = 1;
		}
		hx_dist_from_pairs(d, pairs, tr.n);
		hx_trace_release(&tr);
		return 0;
	}
	if ((rc = hx_jr_enum(r, v, ptr, "dist", 1, dists, &idx)) ||
	    (rc = hx_jr_num(r, v, ptr, "p50", 1, 1, 1e7, &d->p50)) ||
	    (rc = hx_jr_num(r, v, ptr, "mean", 1, 1, 1e7, &d->mean)))
		return rc;
	if (d->mean < d->p50) {
		char p[512];
		hx_ptr_key(p, sizeof(p), ptr, "mean");
		return hx_jr_fail(r, p, "must be at least p50 (%g) for a lognormal", d->p50);
	}
	d->kind = HX_DIST_LOGNORMAL;
	d->mu = log(d->p50);
	d->sigma = sqrt(2 * log(d->mean / d->p50));
	d->max = ceil(fmin(exp(d->mu + d->sigma * hx_norm_quantile(0.999)), 1e7));
	if ((rc = hx_jr_num(r, v, ptr, "max", 0, 1, 1e7, &d->max)))
		return rc;
	if (d->max < d->p50) {
		char p[512];
		hx_ptr_key(p, sizeof(p), ptr, "max");
		return hx_jr_fail(r, p, "must be at least p50 (%g)", d->p50);
	}
	return 0;
}

/* Discretize D into N quantile buckets carrying weight W each. */
static void add_quantiles(hx_tw *p, const hx_dist *d, int n, double w)
{
	for (int i = 0; i < n; i++) {
		p[i].t = d->kind == HX_DIST_BUCKETS
			     ? 0
			     : fmax(1, floor(hx_dist_quantile(d, (i + 0.5) / n) + 0.5));
		p[i].w = w / n;
	}
}

/* The mixture of the classes' distributions, as buckets. */
static void mixture(hx_dist *out, const hx_workload *w, int output)
{
	int total = 0, k = 0;
	hx_tw *p;

	for (int c = 0; c < w->nclasses; c++) {
		const hx_dist *d = output ? &w->classes[c].output : &w->classes[c].prompt;
		total += d->kind == HX_DIST_BUCKETS ? d->nb : 256;
	}
	p = hx_xmalloc((size_t)total * sizeof(*p));
	for (int c = 0; c < w->nclasses; c++) {
		const hx_dist *d = output ? &w->classes[c].output : &w->classes[c].prompt;
		double share = w->classes[c].share;
		if (d->kind == HX_DIST_BUCKETS) {
			for (int i = 0; i < d->nb; i++, k++) {
				p[k].t = d->tokens[i];
				p[k].w = d->weight[i] * share;
			}
		} else {
			add_quantiles(p + k, d, 256, share);
			k += 256;
		}
	}
	memset(out, 0, sizeof(*out));
	hx_dist_from_pairs(out, p, k);
}

void hx_serving_defaults(hx_serving *s)
{
	s->token_budget = 8192;
	s->max_seqs = 256;
	s->mem_util = HX_DEFAULT_MEM_UTIL;
}

static int parse_classes(const hx_jr *r, const json_t *list, const char *dir, hx_workload *w)
{
	static const char *const keys[] = {"name", "share", "prompt_tokens", "output_tokens",
					   NULL};
	size_t n, i;
	double sum = 0;
	int rc;

	if ((rc = hx_jr_array(r, list, "/classes", 1, &n)))
		return rc;
	if (n > HX_MAX_CLASSES)
		return hx_jr_fail(r, "/classes",
				  "%zu classes are more than hexplan's limit of %d", n,
				  HX_MAX_CLASSES);
	w->classes = hx_xcalloc(n, sizeof(hx_class));
	for (i = 0; i < n; i++) {
		json_t *v = json_array_get(list, i), *d;
		hx_class *c = &w->classes[i];
		char p[64], pd[96];

		hx_ptr_index(p, sizeof(p), "/classes", i);
		if ((rc = hx_jr_object(r, v, p, keys)) ||
		    (rc = hx_jr_str(r, v, p, "name", 1, c->name, sizeof(c->name))) ||
		    (rc = hx_jr_num(r, v, p, "share", 1, 1e-9, 1, &c->share)))
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(w->classes[j].name, c->name) == 0) {
				char pn[80];
				hx_ptr_key(pn, sizeof(pn), p, "name");
				return hx_jr_fail(r, pn, "duplicate class name \"%s\"",
						  c->name);
			}
		w->nclasses++;
		for (int k = 0; k < 2; k++) {
			const char *key = k ? "output_tokens" : "prompt_tokens";
			d = json_object_get(v, key);
			if (!d)
				return hx_jr_fail(r, p, "missing required key \"%s\"", key);
			hx_ptr_key(pd, sizeof(pd), p, key);
			if ((rc = hx_dist_parse(r, d, pd, dir, k, k ? &c->output : &c->prompt)))
				return rc;
		}
		sum += c->share;
	}
	if (fabs(sum - 1) > 1e-6)
		return hx_jr_fail(r, "/classes", "shares must sum to 1, not %g", sum);
	return 0;
}

/* The quality profile (quality.h): models, sample requests with their
 * lengths and every model's score, and the floor. */
static int parse_quality(const hx_jr *r, const json_t *v, hx_workload *w)
{
	static const char *const keys[] = {"floor", "models", "samples", NULL};
	static const char *const skeys[] = {"prompt_tokens", "output_tokens", "scores", NULL};
	const json_t *models, *samples;
	hx_quality *q;
	size_t nm, ns;
	int rc;

	if ((rc = hx_jr_object(r, v, "/quality", keys)))
		return rc;
	q = w->quality = hx_xcalloc(1, sizeof(hx_quality));
	if ((rc = hx_jr_num(r, v, "/quality", "floor", 0, 0, 100, &q->floor)))
		return rc;
	if (!(models = json_object_get(v, "models")))
		return hx_jr_fail(r, "/quality", "missing required key \"models\"");
	if ((rc = hx_jr_array(r, models, "/quality/models", 1, &nm)))
		return rc;
	if (nm > HX_QUALITY_MAX_MODELS)
		return hx_jr_fail(r, "/quality/models", "at most %d models, not %zu",
				  HX_QUALITY_MAX_MODELS, nm);
	for (size_t i = 0; i < nm; i++) {
		const json_t *e = json_array_get(models, i);
		char p[64];
		hx_ptr_index(p, sizeof(p), "/quality/models", i);
		if (!json_is_string(e) || json_string_length(e) == 0)
			return hx_jr_fail(r, p, "must be a model name or config.json path");
		if (json_string_length(e) >= sizeof(q->model[0]))
			return hx_jr_fail(r, p, "too long (at most %zu bytes)",
					  sizeof(q->model[0]) - 1);
		hx_strlcpy(q->model[i], json_string_value(e), sizeof(q->model[i]));
		for (size_t j = 0; j < i; j++)
			if (strcmp(q->model[j], q->model[i]) == 0)
				return hx_jr_fail(r, p, "\"%s\" is listed twice", q->model[i]);
		q->nmodels++;
	}
	if (!(samples = json_object_get(v, "samples")))
		return hx_jr_fail(r, "/quality", "missing required key \"samples\"");
	if ((rc = hx_jr_array(r, samples, "/quality/samples", 1, &ns)))
		return rc;
	if (ns > HX_MAX_QUALITY_SAMPLES)
		return hx_jr_fail(r, "/quality/samples",
				  "%zu samples are more than hexplan's limit of %d", ns,
				  HX_MAX_QUALITY_SAMPLES);
	q->prompt = hx_xcalloc(ns, sizeof(double));
	q->output = hx_xcalloc(ns, sizeof(double));
	q->score = hx_xcalloc(ns * nm, sizeof(double));
	q->nsamples = (int)ns;
	for (size_t i = 0; i < ns; i++) {
		const json_t *e = json_array_get(samples, i), *sc;
		char p[64], ps[80];
		long pt = 0, ot = 0;
		size_t n;
		hx_ptr_index(p, sizeof(p), "/quality/samples", i);
		if ((rc = hx_jr_object(r, e, p, skeys)) ||
		    (rc = hx_jr_int(r, e, p, "prompt_tokens", 1, 1, 10000000, &pt)) ||
		    (rc = hx_jr_int(r, e, p, "output_tokens", 1, 1, 10000000, &ot)))
			return rc;
		q->prompt[i] = (double)pt;
		q->output[i] = (double)ot;
		hx_ptr_key(ps, sizeof(ps), p, "scores");
		if (!(sc = json_object_get(e, "scores")))
			return hx_jr_fail(r, p, "missing required key \"scores\"");
		if ((rc = hx_jr_array(r, sc, ps, 0, &n)))
			return rc;
		if (n != nm)
			return hx_jr_fail(r, ps, "%zu scores for %zu models", n, nm);
		for (size_t m = 0; m < nm; m++) {
			const json_t *x = json_array_get(sc, m);
			char px[96];
			double d = json_is_number(x) ? json_number_value(x) : NAN;
			hx_ptr_index(px, sizeof(px), ps, m);
			if (!(d >= 0 && d <= 100))
				return hx_jr_fail(r, px, "must be a score from 0 to 100");
			q->score[m * ns + i] = d;
		}
	}
	return 0;
}

/* "stages": [{"rate_rps": R, "duration_s": S}, ...] of ROOT at PTR; the
 * workload's rate defaults to the highest. */
static int parse_stages(const hx_jr *r, const json_t *root, const char *ptr, hx_workload *w)
{
	static const char *const keys[] = {"rate_rps", "duration_s", NULL};
	const json_t *v = json_object_get(root, "stages"), *e;
	char sp[512];
	size_t i;
	int rc;

	if (!v)
		return 0;
	hx_ptr_key(sp, sizeof(sp), ptr, "stages");
	if (!json_is_array(v) || json_array_size(v) == 0)
		return hx_jr_fail(r, sp, "must be a non-empty array of stages");
	if (json_array_size(v) > HX_MAX_LOAD_STAGES)
		return hx_jr_fail(r, sp, "holds more than %d stages", HX_MAX_LOAD_STAGES);
	w->stages = hx_xcalloc(json_array_size(v), sizeof(hx_load_stage));
	json_array_foreach(v, i, e)
	{
		char p[540];
		hx_ptr_index(p, sizeof(p), sp, i);
		if ((rc = hx_jr_object(r, e, p, keys)) ||
		    (rc = hx_jr_num(r, e, p, "rate_rps", 1, 0, 1e9, &w->stages[i].rate_rps)) ||
		    (rc = hx_jr_num(r, e, p, "duration_s", 1, 1e-6, 1e9,
				    &w->stages[i].duration_s)))
			return rc;
		w->nstages++;
		if (w->stages[i].rate_rps > w->rate_rps)
			w->rate_rps = w->stages[i].rate_rps;
	}
	if (!(w->rate_rps > 0))
		return hx_jr_fail(r, sp, "no stage has a positive rate");
	return 0;
}

/* "shared_prefix": {"tokens": N, "groups": G, "users_per_group": U} of ROOT at PTR. */
static int parse_prefix(const hx_jr *r, const json_t *root, const char *ptr, hx_workload *w)
{
	static const char *const keys[] = {"tokens", "groups", "users_per_group", NULL};
	const json_t *v = json_object_get(root, "shared_prefix");
	double groups = 0, users = 0;
	char p[512], pg[540], pu[540];
	int rc;

	if (!v)
		return 0;
	hx_ptr_key(p, sizeof(p), ptr, "shared_prefix");
	if ((rc = hx_jr_object(r, v, p, keys)) ||
	    (rc = hx_jr_num(r, v, p, "tokens", 1, 0, 1e7, &w->prefix_tokens)) ||
	    (rc = hx_jr_num(r, v, p, "groups", 1, 1, 1e6, &groups)) ||
	    (rc = hx_jr_num(r, v, p, "users_per_group", 0, 1, 1e6, &users)))
		return rc;
	hx_ptr_key(pg, sizeof(pg), p, "groups");
	hx_ptr_key(pu, sizeof(pu), p, "users_per_group");
	if (groups != floor(groups))
		return hx_jr_fail(r, pg, "must be a whole number, not %g", groups);
	if (users != floor(users))
		return hx_jr_fail(r, pu, "must be a whole number, not %g", users);
	if (groups * users > HX_MAX_PREFIX_USERS)
		return hx_jr_fail(r, p, "%g groups of %g users are more than %d users", groups,
				  users, HX_MAX_PREFIX_USERS);
	w->prefix_groups = (int)groups;
	w->prefix_users = (int)users;
	return 0;
}

/* "arrival": {"process": ..., "cv": ...} of ROOT at PTR. */
static int parse_arrival(const hx_jr *r, const json_t *root, const char *ptr, hx_workload *w)
{
	static const char *const akeys[] = {"process", "cv", NULL};
	static const char *const procs[] = {"poisson", "gamma", NULL};
	const json_t *v = json_object_get(root, "arrival");
	char p[512], pc[540];
	int rc;

	if (!v)
		return 0;
	hx_ptr_key(p, sizeof(p), ptr, "arrival");
	if ((rc = hx_jr_object(r, v, p, akeys)) ||
	    (rc = hx_jr_enum(r, v, p, "process", 1, procs, &w->arrival)) ||
	    (rc = hx_jr_num(r, v, p, "cv", 0, HX_MIN_CV, HX_MAX_CV, &w->cv)))
		return rc;
	hx_ptr_key(pc, sizeof(pc), p, "cv");
	if (w->arrival == HX_ARRIVAL_POISSON && fabs(w->cv - 1) > 1e-12)
		return hx_jr_fail(r, pc, "a poisson process has cv 1 (use \"gamma\")");
	return 0;
}

/* "serving": {...} of ROOT at PTR. */
static int parse_serving(const hx_jr *r, const json_t *root, const char *ptr, hx_workload *w)
{
	static const char *const vkeys[] = {"token_budget", "max_seqs",
					    "gpu_memory_utilization", NULL};
	const json_t *v = json_object_get(root, "serving");
	char p[512];
	int rc;

	if (!v)
		return 0;
	hx_ptr_key(p, sizeof(p), ptr, "serving");
	if ((rc = hx_jr_object(r, v, p, vkeys)) ||
	    (rc = hx_jr_num(r, v, p, "token_budget", 0, 16, 1e7, &w->serving.token_budget)) ||
	    (rc = hx_jr_num(r, v, p, "max_seqs", 0, 1, 1e6, &w->serving.max_seqs)) ||
	    (rc = hx_jr_num(r, v, p, "gpu_memory_utilization", 0, 0.05, 1,
			    &w->serving.mem_util)))
		return rc;
	return 0;
}

void hx_workload_defaults(hx_workload *w)
{
	memset(w, 0, sizeof(*w));
	w->cv = 1;
	w->slo = (hx_slo){0, 0, 99, 0.99};
	hx_serving_defaults(&w->serving);
}

int hx_workload_parse_load(const hx_jr *r, const json_t *obj, const char *ptr, int need_rate,
			   hx_workload *w)
{
	int rc;

	if ((rc = parse_stages(r, obj, ptr, w)) ||
	    (rc = hx_jr_pos(r, obj, ptr, "rate_rps", need_rate && w->nstages == 0,
			    &w->rate_rps)) ||
	    (rc = parse_prefix(r, obj, ptr, w)) || (rc = parse_arrival(r, obj, ptr, w)) ||
	    (rc = parse_serving(r, obj, ptr, w)))
		return rc;
	return 0;
}

int hx_workload_load(hx_workload *w, const char *path, hx_err *err)
{
	static const char *const top[] = {
	    "version",       "model",         "rate_rps", "arrival", "prompt_tokens",
	    "output_tokens", "slo",           "classes",  "serving", "quality",
	    "stages",        "shared_prefix", NULL};
	static const char *const skeys[] = {"ttft_ms", "tpot_ms", "percentile", "attainment",
					    NULL};
	hx_jr r = {hx_display_path(path), err};
	json_t *root, *v;
	char *dir = hx_dirname(path);
	int rc;

	hx_workload_defaults(w);
	root = hx_json_load_file(path, err);
	if (!root) {
		free(dir);
		return HX_EINPUT;
	}
	if ((rc = hx_jr_object(&r, root, "", top)) || (rc = hx_jr_version(&r, root)) ||
	    (rc = hx_jr_str(&r, root, "", "model", 0, w->model, sizeof(w->model))) ||
	    (rc = hx_workload_parse_load(&r, root, "", 1, w)))
		goto out;
	v = json_object_get(root, "slo");
	if (!v) {
		rc = hx_jr_fail(&r, "", "missing required key \"slo\"");
		goto out;
	}
	if ((rc = hx_jr_object(&r, v, "/slo", skeys)) ||
	    (rc = hx_jr_pos(&r, v, "/slo", "ttft_ms", 1, &w->slo.ttft_ms)) ||
	    (rc = hx_jr_pos(&r, v, "/slo", "tpot_ms", 1, &w->slo.tpot_ms)) ||
	    (rc = hx_jr_num(&r, v, "/slo", "percentile", 0, 1, 99.99, &w->slo.percentile)) ||
	    (rc = hx_jr_num(&r, v, "/slo", "attainment", 0, 0.01, 1, &w->slo.attainment)))
		goto out;
	if ((v = json_object_get(root, "classes"))) {
		if (json_object_get(root, "prompt_tokens") ||
		    json_object_get(root, "output_tokens")) {
			rc = hx_jr_fail(
			    &r, "/classes",
			    "give lengths per class or for the whole workload, not both");
			goto out;
		}
		if ((rc = parse_classes(&r, v, dir, w)))
			goto out;
		mixture(&w->prompt, w, 0);
		mixture(&w->output, w, 1);
	} else {
		for (int k = 0; k < 2; k++) {
			const char *key = k ? "output_tokens" : "prompt_tokens";
			char p[64];
			v = json_object_get(root, key);
			if (!v) {
				rc = hx_jr_fail(&r, "", "missing required key \"%s\"", key);
				goto out;
			}
			snprintf(p, sizeof(p), "/%s", key);
			if ((rc = hx_dist_parse(&r, v, p, dir, k, k ? &w->output : &w->prompt)))
				goto out;
		}
	}
	if ((v = json_object_get(root, "quality")) && (rc = parse_quality(&r, v, w)))
		goto out;
	rc = HX_OK;
out:
	json_decref(root);
	free(dir);
	if (rc)
		hx_workload_release(w);
	return rc;
}

void hx_workload_release(hx_workload *w)
{
	for (int i = 0; i < w->nclasses; i++) {
		hx_dist_release(&w->classes[i].prompt);
		hx_dist_release(&w->classes[i].output);
	}
	free(w->classes);
	if (w->quality) {
		hx_quality_release(w->quality);
		free(w->quality);
	}
	free(w->stages);
	hx_dist_release(&w->prompt);
	hx_dist_release(&w->output);
	memset(w, 0, sizeof(*w));
}
