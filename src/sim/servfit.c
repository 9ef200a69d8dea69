/* servfit: see servfit.h. */
#include "config.h"

#include "sim/servfit.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/jsonio.h"
#include "model/gen.h"
#include "plan/plan.h"
#include "sim/sim.h"

static const char *const formats[] = {"vllm-bench", "inference-perf", NULL};

/* ---- reading foreign result files ---------------------------------------- */

/* The number at pointer PATH ("/a/b/c") of ROOT.  Absent (or null) and not
 * REQUIRED: 0 with *OUT untouched and *FOUND (may be NULL) 0. */
static int num_at(const hx_jr *r, const json_t *root, const char *path, int required,
		  double *out, int *found)
{
	char buf[256], ptr[256] = "", *save = NULL, *tok;
	const json_t *v = root;

	if (found)
		*found = 0;
	hx_strlcpy(buf, path, sizeof(buf));
	for (tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		const json_t *next;
		if (!json_is_object(v))
			return hx_jr_fail(r, ptr, "must be an object");
		next = json_object_get(v, tok);
		if (!next || json_is_null(next)) {
			if (!required)
				return 0;
			return hx_jr_fail(r, ptr, "missing required key \"%s\"", tok);
		}
		{
			char parent[256];
			hx_strlcpy(parent, ptr, sizeof(parent));
			hx_ptr_key(ptr, sizeof(ptr), parent, tok);
		}
		v = next;
	}
	if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
		return hx_jr_fail(r, ptr, "must be a non-negative number");
	*out = json_number_value(v);
	if (found)
		*found = 1;
	return 0;
}

/* Whole numbers >= 1 of array V (a result's per-request lengths) as equal
 * weight pairs; non-positive entries (failed requests) are left out. */
static int lens_dist(const hx_jr *r, const json_t *v, const char *ptr, hx_dist *d)
{
	size_t n = json_array_size(v), i;
	hx_tw *p;
	int k = 0;

	if (!json_is_array(v))
		return hx_jr_fail(r, ptr, "must be an array of token counts");
	p = hx_xcalloc(n + 1, sizeof(*p));
	for (i = 0; i < n; i++) {
		const json_t *e = json_array_get(v, i);
		if (!json_is_number(e)) {
			char pe[300];
			free(p);
			hx_ptr_index(pe, sizeof(pe), ptr, i);
			return hx_jr_fail(r, pe, "must be a number");
		}
		if (json_number_value(e) >= 1) {
			p[k].t = floor(json_number_value(e));
			p[k++].w = 1;
		}
	}
	if (k == 0) {
		free(p);
		return hx_jr_fail(r, ptr, "holds no positive length");
	}
	hx_dist_from_pairs(d, p, k);
	return 0;
}

static void mean_dist(hx_dist *d, double mean)
{
	hx_tw *p = hx_xcalloc(1, sizeof(*p));
	p->t = fmax(1, round(mean));
	p->w = 1;
	hx_dist_from_pairs(d, p, 1);
}

/* A quantile table of inference-perf (min, p0.1, ..., max) at PATH as
 * buckets: each interval between successive quantiles one bucket at its
 * midpoint, weighted by its probability; only the mean when the table
 * holds fewer than two quantiles. */
static int quantile_dist(const hx_jr *r, const json_t *root, const char *path, hx_dist *d)
{
	static const char *const qk[] = {"min", "p0.1", "p1",  "p5",  "p10",   "p25", "median",
					 "p75", "p90",  "p95", "p99", "p99.9", "max", NULL};
	static const double qp[] = {0,    0.001, 0.01, 0.05, 0.10,  0.25, 0.5,
				    0.75, 0.90,  0.95, 0.99, 0.999, 1.0};
	double v[13], p[13], mean = 0;
	char key[300];
	int n = 0, rc, found;
	hx_tw *pairs;

	for (int i = 0; qk[i]; i++) {
		snprintf(key, sizeof(key), "%s/%s", path, qk[i]);
		if ((rc = num_at(r, root, key, 0, &v[n], &found)))
			return rc;
		if (found)
			p[n++] = qp[i];
	}
	snprintf(key, sizeof(key), "%s/mean", path);
	if ((rc = num_at(r, root, key, n < 2, &mean, NULL)))
		return rc;
	if (n < 2) {
		mean_dist(d, mean);
		return 0;
	}
	pairs = hx_xcalloc((size_t)n, sizeof(*pairs));
	for (int i = 0; i + 1 < n; i++) {
		pairs[i].t = fmax(1, round((v[i] + v[i + 1]) / 2));
		pairs[i].w = fmax(p[i + 1] - p[i], 1e-9);
	}
	hx_dist_from_pairs(d, pairs, n - 1);
	return 0;
}

static void set_steady(hx_serv_stage *s)
{
	s->steady = !((double)s->failed > HX_SERVFIT_OVERLOAD_FAILED * (double)s->requests ||
		      s->ttft_s > HX_SERVFIT_OVERLOAD_TTFT_S || s->requests - s->failed < 1);
}

/* A vLLM result's KIND ("input", "output") lengths into D: the per-request
 * list KIND_lens, else one length, total_KIND_tokens over COMPLETED. */
static int result_lens(const hx_jr *r, const json_t *root, const char *kind, double completed,
		       hx_dist *d)
{
	char key[32], ptr[40];
	const json_t *v;
	double total = 0;
	int rc;

	snprintf(key, sizeof(key), "%s_lens", kind);
	snprintf(ptr, sizeof(ptr), "/%s", key);
	if ((v = json_object_get(root, key)))
		return lens_dist(r, v, ptr, d);
	snprintf(ptr, sizeof(ptr), "/total_%s_tokens", kind);
	if ((rc = num_at(r, root, ptr, 1, &total, NULL)))
		return rc;
	mean_dist(d, total / completed);
	return 0;
}

/* vLLM's `vllm bench serve --save-result` JSON: one load. */
static int read_vllm(const char *path, hx_serv_run *run, int lengths, double *rate_out,
		     hx_err *err)
{
	hx_jr r = {hx_display_path(path), err};
	json_t *root = hx_json_load_file(path, err), *rate;
	double completed = 0, failed = 0, e2e = 0, ttft = 0;
	hx_serv_stage *s;
	int rc;

	if (!root)
		return HX_EINPUT;
	if (!json_is_object(root)) {
		rc = hx_jr_fail(&r, "", "must be an object (a vllm bench serve result)");
		goto out;
	}
	if ((rc = num_at(&r, root, "/completed", 1, &completed, NULL)) ||
	    (rc = num_at(&r, root, "/failed", 0, &failed, NULL)) ||
	    (rc = num_at(&r, root, "/mean_e2el_ms", 1, &e2e, NULL)) ||
	    (rc = num_at(&r, root, "/mean_ttft_ms", 1, &ttft, NULL)))
		goto out;
	if (completed < 1) {
		rc = hx_jr_fail(&r, "/completed", "no request completed");
		goto out;
	}
	rate = json_object_get(root, "request_rate");
	*rate_out = json_is_number(rate) ? json_number_value(rate) : 0; /* "inf": none */
	if (((lengths & 1) &&
	     (rc = result_lens(&r, root, "input", completed, &run->w.prompt))) ||
	    ((lengths & 2) &&
	     (rc = result_lens(&r, root, "output", completed, &run->w.output))))
		goto out;
	s = run->st = hx_xcalloc(1, sizeof(hx_serv_stage));
	run->nst = 1;
	s->requests = (long)(completed + failed);
	s->failed = (long)failed;
	s->e2e_s = e2e / 1e3;
	s->ttft_s = ttft / 1e3;
	set_steady(s);
out:
	json_decref(root);
	return rc;
}

/* One inference-perf lifecycle metrics file into S (and its load, when
 * the file records it, into RATE and DURATION). */
static int read_iperf_stage(const char *path, hx_serv_stage *s, double *rate, double *duration,
			    hx_err *err)
{
	hx_jr r = {hx_display_path(path), err};
	json_t *root = hx_json_load_file(path, err);
	double count = 0, failed = 0;
	int rc;

	if (!root)
		return HX_EINPUT;
	if ((rc = num_at(&r, root, "/successes/count", 1, &count, NULL)) ||
	    (rc = num_at(&r, root, "/successes/latency/request_latency/mean", count > 0,
			 &s->e2e_s, NULL)) ||
	    (rc = num_at(&r, root, "/successes/latency/time_to_first_token/mean", count > 0,
			 &s->ttft_s, NULL)) ||
	    (rc = num_at(&r, root, "/failures/count", 0, &failed, NULL)) ||
	    (rc = num_at(&r, root, "/load_summary/requested_rate", 0, rate, NULL)) ||
	    (rc = num_at(&r, root, "/load_summary/send_duration", 0, duration, NULL)))
		goto out;
	s->requests = (long)(count + failed);
	s->failed = (long)failed;
	set_steady(s);
out:
	json_decref(root);
	return rc;
}

static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* inference-perf's result folder DIR: summary_lifecycle_metrics.json (the
 * lengths) and stage_<k>_lifecycle_metrics.json per load stage (the
 * summary stands for the only stage when there are none).  RATE[k] and
 * DUR[k] get each stage's recorded load (0: not recorded). */
static int read_iperf(const char *dir, hx_serv_run *run, int lengths, double **rate,
		      double **dur, hx_err *err)
{
	char *summary = hx_path_join(dir, "summary_lifecycle_metrics.json");
	char name[64];
	hx_jr r = {hx_display_path(summary), err};
	json_t *root = NULL;
	int rc = 0, n = 0;

	while (n < HX_MAX_LOAD_STAGES) {
		char *p;
		snprintf(name, sizeof(name), "stage_%d_lifecycle_metrics.json", n);
		p = hx_path_join(dir, name);
		rc = file_exists(p);
		free(p);
		if (!rc)
			break;
		n++;
	}
	run->nst = n ? n : 1;
	run->st = hx_xcalloc((size_t)run->nst, sizeof(hx_serv_stage));
	*rate = hx_xcalloc((size_t)run->nst, sizeof(double));
	*dur = hx_xcalloc((size_t)run->nst, sizeof(double));
	for (int k = 0; k < run->nst; k++) {
		char *p;
		snprintf(name, sizeof(name), "stage_%d_lifecycle_metrics.json", k);
		p = n ? hx_path_join(dir, name) : hx_xstrdup(summary);
		rc = read_iperf_stage(p, &run->st[k], &(*rate)[k], &(*dur)[k], err);
		free(p);
		if (rc)
			goto out;
	}
	if (!(root = hx_json_load_file(summary, err))) {
		rc = HX_EINPUT;
		goto out;
	}
	if (((lengths & 1) &&
	     (rc = quantile_dist(&r, root, "/successes/prompt_len", &run->w.prompt))) ||
	    ((lengths & 2) &&
	     (rc = quantile_dist(&r, root, "/successes/output_len", &run->w.output))))
		goto out;
out:
	json_decref(root);
	free(summary);
	return rc;
}

/* ---- the runs file ---------------------------------------------------------- */

/* The keys of a run that are hexplan's own: what it is and how it was
 * served and loaded. */
static int read_run_keys(const hx_jr *r, const json_t *o, const char *ptr, const char *dir,
			 const hx_catalog *cat, hx_serv_run *run, int *lengths)
{
	static const char *const keys[] = {
	    "name",          "result",  "format",   "gpu",    "model",         "tp",
	    "serving",       "arrival", "rate_rps", "stages", "shared_prefix", "prompt_tokens",
	    "output_tokens", NULL};
	char p[600], model[512];
	long tp = 0;
	hx_err merr = {0};
	int rc;

	if ((rc = hx_jr_object(r, o, ptr, keys)) ||
	    (rc = hx_jr_str(r, o, ptr, "name", 1, run->name, sizeof(run->name))) ||
	    (rc = hx_jr_enum(r, o, ptr, "format", 1, formats, &run->format)) ||
	    (rc = hx_jr_str(r, o, ptr, "gpu", 1, run->gpu, sizeof(run->gpu))) ||
	    (rc = hx_jr_str(r, o, ptr, "model", 1, model, sizeof(model))) ||
	    (rc = hx_jr_int(r, o, ptr, "tp", 1, 1, 64, &tp)))
		return rc;
	hx_ptr_key(p, sizeof(p), ptr, "gpu");
	if (!hx_catalog_gpu(cat, run->gpu))
		return hx_jr_fail(r, p, "unknown GPU \"%s\" (see 'hexplan profiles list')",
				  run->gpu);
	hx_ptr_key(p, sizeof(p), ptr, "model");
	if (hx_catalog_model(cat, model)) {
		hx_model_resolve(cat, model, &run->model, &merr);
	} else {
		char *path = model[0] == '/' ? hx_xstrdup(model) : hx_path_join(dir, model);
		rc = hx_model_resolve(cat, path, &run->model, &merr);
		free(path);
		if (rc)
			return hx_jr_fail(r, p, "%s", merr.msg);
	}
	run->tp = (int)tp;
	if (run->model.a.heads % run->tp) {
		hx_ptr_key(p, sizeof(p), ptr, "tp");
		return hx_jr_fail(r, p, "%d does not divide the %d attention heads of %s",
				  run->tp, run->model.a.heads, run->model.name);
	}
	if ((rc = hx_workload_parse_load(r, o, ptr, 0, &run->w)))
		return rc;
	*lengths = 3;
	for (int k = 0; k < 2; k++) {
		const char *key = k ? "output_tokens" : "prompt_tokens";
		const json_t *v = json_object_get(o, key);
		if (!v)
			continue;
		hx_ptr_key(p, sizeof(p), ptr, key);
		if ((rc = hx_dist_parse(r, v, p, dir, k, k ? &run->w.output : &run->w.prompt)))
			return rc;
		*lengths &= ~(1 << k);
	}
	return 0;
}

/* The load as run: the runs file's stages or rate where it gives them,
 * else what the result recorded (RATE[k], DUR[k]; 0: nothing). */
static int run_load(const hx_jr *r, const char *ptr, hx_serv_run *run, const double *rate,
		    const double *dur)
{
	hx_workload *w = &run->w;
	char p[600];

	hx_ptr_key(p, sizeof(p), ptr, "stages");
	if (w->nstages && w->nstages != run->nst)
		return hx_jr_fail(r, p, "gives %d stages, the result has %d", w->nstages,
				  run->nst);
	if (!w->nstages && w->rate_rps > 0 && run->nst > 1)
		return hx_jr_fail(r, ptr,
				  "the result has %d stages: give \"stages\", not \"rate_rps\"",
				  run->nst);
	for (int k = 0; k < run->nst; k++) {
		hx_serv_stage *s = &run->st[k];
		if (w->nstages) {
			s->rate_rps = w->stages[k].rate_rps;
			s->duration_s = w->stages[k].duration_s;
			continue;
		}
		s->rate_rps = w->rate_rps > 0 ? w->rate_rps : rate[k];
		if (!(s->rate_rps > 0))
			return hx_jr_fail(r, ptr,
					  "missing required key \"rate_rps\" (the result "
					  "records no finite request rate)");
		s->duration_s = dur[k] > 0 ? dur[k] : (double)s->requests / s->rate_rps;
	}
	return 0;
}

/* The stages as simulated: the measured ones, shortened in proportion
 * so that the run brings at most HX_SERVFIT_MAX_REQUESTS requests; then
 * the requests themselves (seed 1). */
static int run_requests(const hx_jr *r, const char *ptr, hx_serv_run *run)
{
	hx_workload *w = &run->w;
	double total = 0, f;
	hx_err gerr = {0};

	for (int k = 0; k < run->nst; k++)
		total += run->st[k].rate_rps * run->st[k].duration_s;
	f = total > HX_SERVFIT_MAX_REQUESTS ? HX_SERVFIT_MAX_REQUESTS / total : 1;
	free(w->stages);
	w->stages = hx_xcalloc((size_t)run->nst, sizeof(hx_load_stage));
	w->nstages = run->nst;
	w->rate_rps = 0;
	for (int k = 0; k < run->nst; k++) {
		w->stages[k].rate_rps = run->st[k].rate_rps;
		w->stages[k].duration_s = run->st[k].duration_s * f;
		w->rate_rps = fmax(w->rate_rps, w->stages[k].rate_rps);
	}
	w->slo = (hx_slo){1e6, 1e5, 99, 0.99}; /* every request counts */
	hx_strlcpy(w->model, run->model.name, sizeof(w->model));
	if (hx_gen_stages(w, 1, &run->trace, &gerr))
		return hx_jr_fail(r, ptr, "%s", gerr.msg);
	return 0;
}

static int read_run(const hx_jr *r, const json_t *o, const char *ptr, const char *dir,
		    const hx_catalog *cat, hx_serv_run *run)
{
	char p[600], file[1024], *path = NULL;
	double *rate = NULL, *dur = NULL;
	int rc, lengths = 3;

	hx_workload_defaults(&run->w);
	if ((rc = read_run_keys(r, o, ptr, dir, cat, run, &lengths)) ||
	    (rc = hx_jr_str(r, o, ptr, "result", 1, file, sizeof(file))))
		return rc;
	hx_ptr_key(p, sizeof(p), ptr, "result");
	path = file[0] == '/' ? hx_xstrdup(file) : hx_path_join(dir, file);
	if (run->format == HX_RESULT_VLLM_BENCH) {
		double rr = 0;
		if (!file_exists(path)) {
			rc = hx_jr_fail(r, p, "no result file %s", path);
			goto out;
		}
		if (run->w.nstages) {
			hx_ptr_key(p, sizeof(p), ptr, "stages");
			rc = hx_jr_fail(r, p,
					"a vllm-bench result is one load: give \"rate_rps\"");
			goto out;
		}
		if ((rc = read_vllm(path, run, lengths, &rr, r->err)))
			goto out;
		rate = hx_xcalloc(1, sizeof(double));
		dur = hx_xcalloc(1, sizeof(double));
		rate[0] = rr;
	} else {
		char *d = is_dir(path) ? hx_xstrdup(path) : hx_dirname(path);
		char *summary = hx_path_join(d, "summary_lifecycle_metrics.json");
		int there = file_exists(summary);
		free(summary);
		if (!there) {
			free(d);
			rc = hx_jr_fail(r, p, "no inference-perf result at %s (no %s)", path,
					"summary_lifecycle_metrics.json");
			goto out;
		}
		rc = read_iperf(d, run, lengths, &rate, &dur, r->err);
		free(d);
		if (rc)
			goto out;
	}
	if ((rc = run_load(r, ptr, run, rate, dur)) || (rc = run_requests(r, ptr, run)))
		goto out;
out:
	free(path);
	free(rate);
	free(dur);
	return rc;
}

int hx_serv_runs_load(hx_serv_runs *out, const char *path, const hx_catalog *cat, hx_err *err)
{
	static const char *const top[] = {"version", "runs", NULL};
	hx_jr r = {hx_display_path(path), err};
	json_t *root, *runs, *o;
	char *dir = hx_dirname(path);
	size_t n, i;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(root = hx_json_load_file(path, err))) {
		free(dir);
		return HX_EINPUT;
	}
	if ((rc = hx_jr_object(&r, root, "", top)) || (rc = hx_jr_version(&r, root)))
		goto out;
	runs = json_object_get(root, "runs");
	if (!runs) {
		rc = hx_jr_fail(&r, "", "missing required key \"runs\"");
		goto out;
	}
	if ((rc = hx_jr_array(&r, runs, "/runs", 1, &n)))
		goto out;
	out->r = hx_xcalloc(n, sizeof(hx_serv_run));
	json_array_foreach(runs, i, o)
	{
		char p[64];
		hx_ptr_index(p, sizeof(p), "/runs", i);
		out->n++;
		if ((rc = read_run(&r, o, p, dir, cat, &out->r[i])))
			goto out;
		for (size_t j = 0; j < i; j++)
			if (strcmp(out->r[j].name, out->r[i].name) == 0) {
				char pn[80];
				hx_ptr_key(pn, sizeof(pn), p, "name");
				rc = hx_jr_fail(&r, pn, "run \"%s\" appears twice",
						out->r[i].name);
				goto out;
			}
	}
out:
	json_decref(root);
	free(dir);
	if (rc)
		hx_serv_runs_release(out);
	return rc;
}

void hx_serv_runs_release(hx_serv_runs *rs)
{
	for (int i = 0; i < rs->n; i++) {
		hx_workload_release(&rs->r[i].w);
		hx_trace_release(&rs->r[i].trace);
		free(rs->r[i].st);
	}
	free(rs->r);
	memset(rs, 0, sizeof(*rs));
}

/* ---- simulation ---------------------------------------------------------- */

/* One replica of R's TP on GPU G (GPUs n0:0 .. n0:tp-1), all traffic to it. */
static void one_replica(hx_plan *p, const hx_serv_run *r, const hx_gpu *g)
{
	hx_plan_group *grp;
	hx_plan_replica *rep;
	hx_route *rt;

	hx_plan_init(p);
	strcpy(p->mode, "baseline");
	hx_plan_add_model(p, &r->model);
	hx_plan_add_gpu(p, g);
	grp = hx_plan_add_group(p);
	strcpy(grp->name, "g0");
	hx_strlcpy(grp->model, r->model.name, sizeof(grp->model));
	grp->role = HX_ROLE_AGGREGATED;
	grp->wdt = r->model.a.dtype;
	grp->kvdt = HX_DT_FP16;
	hx_plan_group_stages(grp, 1);
	hx_strlcpy(grp->stage[0].gpu, g->name, sizeof(grp->stage[0].gpu));
	grp->stage[0].tp = r->tp;
	grp->stage[0].first = 0;
	grp->stage[0].last = r->model.a.layers;
	rep = hx_plan_add_replica(grp);
	strcpy(rep->id, "g0r0");
	rep->ngpus[0] = r->tp;
	rep->gpus[0] = hx_xcalloc((size_t)r->tp, sizeof(hx_gpu_ref));
	for (int k = 0; k < r->tp; k++) {
		strcpy(rep->gpus[0][k].node, "n0");
		rep->gpus[0][k].index = k;
	}
	rt = hx_plan_add_route(&p->ingress, &p->ningress);
	strcpy(rt->to, "g0");
	rt->weight = 1;
}

int hx_serv_simulate(const hx_serv_run *r, const hx_gpu *g, double *e2e, double *ttft,
		     hx_err *err)
{
	hx_sim_opts o = {.seed = 1, .keep_records = 1};
	hx_sim_report rep;
	hx_plan p;
	double *se = hx_xcalloc((size_t)r->nst * 3, sizeof(double)), *st = se + r->nst,
	       *n = st + r->nst;
	int rc;

	one_replica(&p, r, g);
	rc = hx_simulate(&p, &r->w, &r->trace, &o, &rep, err);
	hx_plan_release(&p);
	if (rc) {
		free(se);
		return rc;
	}
	for (int i = 0; i < rep.nrecords; i++) {
		const hx_sim_record *x = &rep.records[i];
		double t0 = 0;
		int k = 0;
		if (x->dropped)
			continue;
		/* the stage it arrived in, on the simulated (shortened) clock */
		while (k + 1 < r->nst && x->arrival_s >= t0 + r->w.stages[k].duration_s)
			t0 += r->w.stages[k++].duration_s;
		se[k] += x->finish_s - x->arrival_s;
		st[k] += x->first_token_s - x->arrival_s;
		n[k]++;
	}
	for (int k = 0; k < r->nst; k++) {
		e2e[k] = n[k] > 0 ? se[k] / n[k] : NAN;
		ttft[k] = n[k] > 0 ? st[k] / n[k] : NAN;
	}
	hx_sim_report_release(&rep);
	free(se);
	return 0;
}

/* ---- the fit ----------------------------------------------------------- */

typedef struct fit_ctx {
	const hx_serv_runs *rs;
	const hx_gpu *prior; /* the catalog's values, the prior's centre */
	const char *const *keys;
	int nkeys;
	double prior_weight; /* hx_servfit_run's PRIOR */
	double *e2e, *ttft;  /* scratch, per stage */
	hx_err *err;
	int failed; /* a simulation failed: the error is in err */
} fit_ctx;

/* The sum of squared log ratios, simulated to measured, of the mean E2E and
 * mean TTFT of every steady stage of the runs on G, plus PRIOR_WEIGHT times
 * the squared log ratio of each fitted key to its catalog value. */
static double fit_objective(const hx_gpu *g, void *vctx)
{
	fit_ctx *c = vctx;
	double sse = 0;

	for (int i = 0; i < c->rs->n; i++) {
		const hx_serv_run *r = &c->rs->r[i];
		if (strcmp(r->gpu, g->name) != 0)
			continue;
		if (c->failed || hx_serv_simulate(r, g, c->e2e, c->ttft, c->err)) {
			c->failed = 1;
			return 1e12;
		}
		for (int k = 0; k < r->nst; k++) {
			double a, b;
			if (!r->st[k].steady)
				continue;
			a = log(c->e2e[k] / r->st[k].e2e_s);
			b = log(c->ttft[k] / r->st[k].ttft_s);
			sse += (isfinite(a) ? a * a : 25) + (isfinite(b) ? b * b : 25);
		}
	}
	if (c->prior_weight > 0) {
		/* hx_gpu_field wants a writable GPU: one copy of each for all keys */
		hx_gpu a = *g, b = *c->prior;
		for (int k = 0; k < c->nkeys; k++) {
			double d = log(fmax(*hx_gpu_field(&a, c->keys[k]), 1e-3) /
				       fmax(*hx_gpu_field(&b, c->keys[k]), 1e-3));
			sse += c->prior_weight * d * d;
		}
	}
	return sse;
}

int hx_servfit_run(const hx_serv_runs *rs, const hx_gpu *g, const hx_servfit_opts *o,
		   hx_servfit *out, hx_err *err)
{
	fit_ctx c = {rs, g, NULL, 0, o ? o->prior : 0, NULL, NULL, err, 0};
	int multi_tp = 0, moe = 0, computed = 0, most = 1;

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < rs->n; i++) {
		const hx_serv_run *r = &rs->r[i];
		if (strcmp(r->gpu, g->name) != 0)
			continue;
		out->runs++;
		for (int k = 0; k < r->nst; k++)
			out->stages += r->st[k].steady;
		multi_tp |= r->tp > 1;
		moe |= r->model.a.experts > 0;
		computed |= r->w.prefix_groups == 0;
		most = r->nst > most ? r->nst : most;
	}
	if (out->stages == 0)
		return hx_errf(err, HX_EINPUT,
			       "no steady stage to fit on %s: every run's stages are "
			       "overloaded (over %g%% failed or mean TTFT over %g s)",
			       g->name, HX_SERVFIT_OVERLOAD_FAILED * 100,
			       HX_SERVFIT_OVERLOAD_TTFT_S);
	if (o && o->keys) {
		for (int k = 0; k < o->nkeys && k < HX_CALIB_MAX_FIELDS; k++)
			out->keys[out->nkeys++] = o->keys[k];
	} else {
		out->keys[out->nkeys++] = "e_mem";
		out->keys[out->nkeys++] = "iter_overhead_ms";
		out->keys[out->nkeys++] = "graph_floor_us";
		out->keys[out->nkeys++] = "request_overhead_ms";
		if (multi_tp)
			out->keys[out->nkeys++] = "allreduce_latency_us";
		if (moe)
			out->keys[out->nkeys++] = "e_moe";
		if (computed)
			out->keys[out->nkeys++] = "e_compute";
	}
	c.keys = out->keys;
	c.nkeys = out->nkeys;
	c.e2e = hx_xcalloc((size_t)most * 2, sizeof(double));
	c.ttft = c.e2e + most;
	out->fitted = *g;
	out->objective_before = fit_objective(g, &c);
	if (!c.failed)
		out->objective_after =
		    hx_calib_minimize(&out->fitted, out->keys, out->nkeys, 0.5, fit_objective,
				      &c, 60 * out->nkeys, &out->evals);
	free(c.e2e);
	return c.failed ? HX_EINPUT : 0;
}
