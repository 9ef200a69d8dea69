/* calibrate --runs: fit GPU constants to end-to-end serving benchmarks
 * (sim/servfit.h) and report the fit's error on the runs it used and on
 * held-out runs. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonio.h"
#include "cli/cli.h"
#include "sim/servfit.h"

#define MAX_FIT_GPUS 16

/* A stage's figures: measured, simulated with the catalog's constants and
 * with the fitted ones. */
typedef struct row {
	const hx_serv_run *run;
	int k, holdout;
	double e2e[2], ttft[2]; /* [0] catalog, [1] fitted */
} row;

typedef struct report {
	const hx_servfit_opts *opts;
	hx_servfit fit[MAX_FIT_GPUS];
	int nfit;
	row *rows;
	int nrows;
} report;

static const hx_gpu *fitted_gpu(const report *rp, const char *name)
{
	for (int i = 0; i < rp->nfit; i++)
		if (strcmp(rp->fit[i].fitted.name, name) == 0)
			return &rp->fit[i].fitted;
	return NULL;
}

static double ape(double sim, double real)
{
	return fabs(sim / real - 1) * 100;
}

/* Mean absolute % error of mean E2E and TTFT over the steady stages of the
 * HOLDOUT set (RUN: that run only), with the catalog's (0) or fitted (1)
 * constants; *N gets the number of stages. */
static void mape(const report *rp, int holdout, const hx_serv_run *run, int which, double *e2e,
		 double *ttft, int *n)
{
	double se = 0, st = 0;
	*n = 0;
	for (int i = 0; i < rp->nrows; i++) {
		const row *x = &rp->rows[i];
		if (x->holdout != holdout || (run && x->run != run) || !x->run->st[x->k].steady)
			continue;
		se += ape(x->e2e[which], x->run->st[x->k].e2e_s);
		st += ape(x->ttft[which], x->run->st[x->k].ttft_s);
		(*n)++;
	}
	*e2e = *n ? se / *n : NAN;
	*ttft = *n ? st / *n : NAN;
}

/* Fit every GPU of RS, then simulate every stage of RS and HOLD with both. */
static int fit_and_replay(const hx_catalog *cat, const hx_serv_runs *rs,
			  const hx_serv_runs *hold, report *rp, hx_err *err)
{
	int rc, total = 0;

	for (int i = 0; i < rs->n; i++) {
		const hx_gpu *g = hx_catalog_gpu(cat, rs->r[i].gpu);
		if (fitted_gpu(rp, g->name))
			continue;
		if (rp->nfit == MAX_FIT_GPUS)
			return hx_errf(err, HX_EINPUT, "runs on more than %d GPU types",
				       MAX_FIT_GPUS);
		if ((rc = hx_servfit_run(rs, g, rp->opts, &rp->fit[rp->nfit], err)))
			return rc;
		rp->nfit++;
	}
	for (int s = 0; s < 2; s++) {
		const hx_serv_runs *set = s ? hold : rs;
		for (int i = 0; set && i < set->n; i++)
			total += set->r[i].nst;
	}
	rp->rows = hx_xcalloc((size_t)total, sizeof(row));
	for (int s = 0; s < 2; s++) {
		const hx_serv_runs *set = s ? hold : rs;
		for (int i = 0; set && i < set->n; i++) {
			const hx_serv_run *r = &set->r[i];
			const hx_gpu *g0 = hx_catalog_gpu(cat, r->gpu),
				     *g1 = fitted_gpu(rp, r->gpu);
			double *v = hx_xcalloc((size_t)r->nst * 4, sizeof(double));
			if (!g1)
				fprintf(
				    stderr,
				    "hexplan: held-out run %s is on %s, which no fitted run "
				    "uses: its fitted figures are the catalog's\n",
				    r->name, r->gpu);
			rc = hx_serv_simulate(r, g0, v, v + r->nst, err);
			if (!rc)
				rc = hx_serv_simulate(r, g1 ? g1 : g0, v + 2 * r->nst,
						      v + 3 * r->nst, err);
			for (int k = 0; !rc && k < r->nst; k++) {
				row *x = &rp->rows[rp->nrows++];
				x->run = r;
				x->k = k;
				x->holdout = s;
				x->e2e[0] = v[k];
				x->ttft[0] = v[r->nst + k];
				x->e2e[1] = v[2 * r->nst + k];
				x->ttft[1] = v[3 * r->nst + k];
			}
			free(v);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static void jset_err(json_t *o, const char *key, double v)
{
	if (isfinite(v))
		hx_jset_num(o, key, hx_round6(v));
	else
		json_object_set_new(o, key, json_null());
}

static json_t *error_obj(const report *rp, int holdout, const hx_serv_run *run)
{
	json_t *o = json_object();
	double e, t;
	int n;

	mape(rp, holdout, run, 0, &e, &t, &n);
	hx_jset_int(o, "steady_stages", n);
	jset_err(o, "catalog_e2e_error_pct", e);
	jset_err(o, "catalog_ttft_error_pct", t);
	mape(rp, holdout, run, 1, &e, &t, &n);
	jset_err(o, "e2e_error_pct", e);
	jset_err(o, "ttft_error_pct", t);
	return o;
}

static json_t *stage_obj(const row *x)
{
	const hx_serv_stage *s = &x->run->st[x->k];
	json_t *o = json_object();

	hx_jset_str(o, "run", x->run->name);
	hx_jset_int(o, "stage", x->k);
	json_object_set_new(o, "holdout", json_boolean(x->holdout));
	json_object_set_new(o, "steady", json_boolean(s->steady));
	hx_jset_num(o, "rate_rps", hx_round6(s->rate_rps));
	hx_jset_num(o, "measured_e2e_ms", hx_round6(s->e2e_s * 1e3));
	jset_err(o, "e2e_ms", x->e2e[1] * 1e3);
	jset_err(o, "e2e_error_pct", (x->e2e[1] / s->e2e_s - 1) * 100);
	hx_jset_num(o, "measured_ttft_ms", hx_round6(s->ttft_s * 1e3));
	jset_err(o, "ttft_ms", x->ttft[1] * 1e3);
	jset_err(o, "ttft_error_pct", (x->ttft[1] / s->ttft_s - 1) * 100);
	return o;
}

static json_t *calibration_doc(const report *rp, const hx_serv_runs *rs,
			       const hx_serv_runs *hold)
{
	json_t *doc = json_object(), *gpus = json_object(), *fit = json_object();
	json_t *per_gpu = json_object(), *runs = json_array(), *stages = json_array();

	hx_jset_str(doc, "schema", "hexplan.calibration");
	hx_jset_int(doc, "version", 1);
	for (int i = 0; i < rp->nfit; i++) {
		const hx_servfit *f = &rp->fit[i];
		json_t *fields = json_object(), *st = json_object();
		for (int k = 0; k < f->nkeys; k++)
			hx_jset_num(fields, f->keys[k],
				    hx_round6(*hx_gpu_field((hx_gpu *)&f->fitted, f->keys[k])));
		json_object_set_new(gpus, f->fitted.name, fields);
		hx_jset_int(st, "runs", f->runs);
		hx_jset_int(st, "steady_stages", f->stages);
		hx_jset_int(st, "evaluations", f->evals + 1);
		hx_jset_num(st, "objective_before", hx_round6(f->objective_before));
		hx_jset_num(st, "objective_after", hx_round6(f->objective_after));
		json_object_set_new(per_gpu, f->fitted.name, st);
	}
	json_object_set_new(doc, "gpus", gpus);
	hx_jset_str(fit, "source", "serving");
	hx_jset_num(fit, "prior", rp->opts->prior);
	json_object_set_new(fit, "gpus", per_gpu);
	json_object_set_new(fit, "fitted_runs", error_obj(rp, 0, NULL));
	if (hold)
		json_object_set_new(fit, "holdout_runs", error_obj(rp, 1, NULL));
	for (int s = 0; s < 2; s++) {
		const hx_serv_runs *set = s ? hold : rs;
		for (int i = 0; set && i < set->n; i++) {
			json_t *o = error_obj(rp, s, &set->r[i]);
			hx_jset_str(o, "run", set->r[i].name);
			json_object_set_new(o, "holdout", json_boolean(s));
			json_array_append_new(runs, o);
		}
	}
	for (int i = 0; i < rp->nrows; i++)
		json_array_append_new(stages, stage_obj(&rp->rows[i]));
	json_object_set_new(fit, "per_run", runs);
	json_object_set_new(fit, "per_stage", stages);
	json_object_set_new(doc, "fit", fit);
	return doc;
}

static void table_summary(hx_buf *t, const report *rp, int holdout, const char *label)
{
	double e0, t0, e1, t1;
	int n;

	mape(rp, holdout, NULL, 0, &e0, &t0, &n);
	mape(rp, holdout, NULL, 1, &e1, &t1, &n);
	hx_buf_printf(t, "%-9s %2d %8.1f %8.1f %8.1f %8.1f\n", label, n, e0, t0, e1, t1);
}

static char *table(const report *rp, int with_holdout)
{
	hx_buf t = {0};

	for (int i = 0; i < rp->nfit; i++) {
		const hx_servfit *f = &rp->fit[i];
		hx_buf_printf(&t, "%s: %d runs, %d steady stages, %d evaluations",
			      f->fitted.name, f->runs, f->stages, f->evals + 1);
		if (rp->opts->prior > 0)
			hx_buf_printf(&t, ", prior %g", rp->opts->prior);
		hx_buf_printf(&t, "; fitted");
		for (int k = 0; k < f->nkeys; k++)
			hx_buf_printf(&t, " %s=%.4g", f->keys[k],
				      *hx_gpu_field((hx_gpu *)&f->fitted, f->keys[k]));
		hx_buf_printf(&t, "\n");
	}
	hx_buf_printf(&t, "\n%-32s %5s %-7s %6s %9s %9s %7s %9s %9s %7s\n", "run", "stage",
		      "set", "rate", "E2E_ms", "sim_ms", "err%", "TTFT_ms", "sim_ms", "err%");
	for (int i = 0; i < rp->nrows; i++) {
		const row *x = &rp->rows[i];
		const hx_serv_stage *s = &x->run->st[x->k];
		hx_buf_printf(
		    &t, "%-32s %5d %-7s %6g %9.1f %9.1f %+7.1f %9.1f %9.1f %+7.1f%s\n",
		    x->run->name, x->k, x->holdout ? "holdout" : "fit", s->rate_rps,
		    s->e2e_s * 1e3, x->e2e[1] * 1e3, (x->e2e[1] / s->e2e_s - 1) * 100,
		    s->ttft_s * 1e3, x->ttft[1] * 1e3, (x->ttft[1] / s->ttft_s - 1) * 100,
		    s->steady ? "" : "  overloaded");
	}
	hx_buf_printf(&t, "\nmean absolute error over steady stages, %%\n");
	hx_buf_printf(&t, "%-9s %2s %8s %8s %8s %8s\n", "runs", "n", "E2E", "TTFT", "E2E",
		      "TTFT");
	hx_buf_printf(&t, "%-12s %17s %17s\n", "", "(catalog)", "(fitted)");
	table_summary(&t, rp, 0, "fit");
	if (with_holdout)
		table_summary(&t, rp, 1, "holdout");
	return t.s;
}

int hx_calibrate_serving(hx_cli *cli, const char *runs, const char *holdout,
			 const hx_servfit_opts *opts, const char *out_path, int as_table)
{
	const hx_catalog *cat;
	hx_serv_runs rs = {0}, hold = {0};
	report rp = {opts};
	hx_err err = {0};
	json_t *doc = NULL;
	char *text = NULL;
	int rc;

	if (!(cat = hx_cli_catalog(cli, &rc)))
		return rc;
	if ((rc = hx_serv_runs_load(&rs, runs, cat, &err)) ||
	    (holdout && (rc = hx_serv_runs_load(&hold, holdout, cat, &err))) ||
	    (rc = fit_and_replay(cat, &rs, holdout ? &hold : NULL, &rp, &err)))
		goto out;
	doc = calibration_doc(&rp, &rs, holdout ? &hold : NULL);
	if (out_path && (rc = hx_json_write(doc, out_path, &err)))
		goto out;
	if (as_table) {
		text = table(&rp, holdout != NULL);
		rc = hx_cli_output("-", text);
	} else if (!out_path) {
		text = hx_json_dump(doc);
		rc = hx_cli_output("-", text);
	} else {
		double e, t;
		int n;
		mape(&rp, 0, NULL, 1, &e, &t, &n);
		fprintf(stderr,
			"hexplan: %d steady stages fitted, mean error E2E %.1f%%, TTFT %.1f%%",
			n, e, t);
		if (holdout) {
			mape(&rp, 1, NULL, 1, &e, &t, &n);
			fprintf(stderr, "; held out (%d): E2E %.1f%%, TTFT %.1f%%", n, e, t);
		}
		fprintf(stderr, "; wrote %s\n", out_path);
	}
out:
	if (rc && err.msg[0])
		hx_cli_fail(&err);
	json_decref(doc);
	free(text);
	free(rp.rows);
	hx_serv_runs_release(&rs);
	hx_serv_runs_release(&hold);
	return rc;
}
