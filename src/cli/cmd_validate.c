/* validate: load input files strictly and summarize them. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "model/quality.h"
#include "base/jsonio.h"
#include "model/problem.h"

#define CMD "validate"

const char *const hx_validate_usage[] = {
    "hexplan validate [-c cluster.json] [-w workload.json] [-t trace.csv] [-m MODEL] "
    "[--measurements FILE] [--format json|table]",
    NULL};

enum { OPT_MEAS = 2100 };

static json_t *dist_json(const hx_dist *d, double pct)
{
	json_t *o = json_object();
	hx_jset_num(o, "mean", hx_dist_mean(d));
	hx_jset_num(o, "p50", hx_dist_quantile(d, 0.5));
	hx_jset_num(o, "p90", hx_dist_quantile(d, 0.9));
	hx_jset_num(o, "p99", hx_dist_quantile(d, 0.99));
	if (pct != 50 && pct != 90 && pct != 99) {
		char key[32];
		snprintf(key, sizeof(key), "p%g", pct);
		hx_jset_num(o, key, hx_dist_quantile(d, pct / 100));
	}
	hx_jset_num(o, "max", d->kind == HX_DIST_LOGNORMAL ? d->max : d->tokens[d->nb - 1]);
	return o;
}

static json_t *cluster_json(const hx_cluster *c)
{
	json_t *o = json_object(), *types = json_object();
	double usd = 0;

	hx_jset_int(o, "nodes", c->nnodes);
	hx_jset_int(o, "gpus", hx_cluster_gpus(c));
	for (int i = 0; i < c->nnodes; i++) {
		const hx_node *n = &c->nodes[i];
		json_t *v = json_object_get(types, n->gpu.name);
		long have = v ? (long)json_integer_value(v) : 0;
		json_object_set_new(types, n->gpu.name, json_integer(have + n->count));
		usd += n->usd_per_hour * n->count;
	}
	json_object_set_new(o, "gpu_types", types);
	hx_jset_int(o, "links", c->nlinks);
	hx_jset_int(o, "offers", c->noffers);
	hx_jset_num(o, "usd_per_hour", usd);
	return o;
}

static json_t *trace_json(const hx_trace *t)
{
	json_t *o = json_object();
	double in = 0, out = 0, span = t->arrival_s[t->n - 1] - t->arrival_s[0];

	for (int i = 0; i < t->n; i++) {
		in += t->input[i];
		out += t->output[i];
	}
	hx_jset_int(o, "requests", t->n);
	hx_jset_num(o, "duration_s", span);
	hx_jset_num(o, "rate_rps", span > 0 ? (t->n - 1) / span : 0);
	hx_jset_num(o, "mean_input_tokens", in / t->n);
	hx_jset_num(o, "mean_output_tokens", out / t->n);
	return o;
}

int cmd_validate(hx_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"cluster", required_argument, NULL, 'c'},
	    {"workload", required_argument, NULL, 'w'},
	    {"trace", required_argument, NULL, 't'},
	    {"model", required_argument, NULL, 'm'},
	    {"measurements", required_argument, NULL, OPT_MEAS},
	    {"format", required_argument, NULL, HX_OPT_FORMAT},
	    HX_GLOBAL_LONGOPTS,
	    {NULL, 0, NULL, 0}};
	const char *cpath = NULL, *wpath = NULL, *tpath = NULL, *model = NULL, *mpath = NULL;
	const hx_catalog *cat;
	hx_err err = {0};
	json_t *o;
	int c, rc = 0, table = 0;
	char *text;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:w:t:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': cpath = optarg; break;
		case 'w': wpath = optarg; break;
		case 't': tpath = optarg; break;
		case 'm': model = optarg; break;
		case OPT_MEAS: mpath = optarg; break;
		default:
			if ((rc = hx_cli_common(cli, CMD, c, argv, &table)) != HX_CLI_GO)
				return rc;
		}
	}
	if (optind < argc)
		return hx_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	{
		const hx_cli_file files[] = {{"-c", cpath, 0},
					     {"-w", wpath, 0},
					     {"-t", tpath, 0},
					     {"-m", model, 0},
					     {"--measurements", mpath, 0},
					     {"--calibration", cli->calibration, 0}};
		if ((rc = hx_cli_check_files(CMD, files, (int)HX_ARRAY_LEN(files))))
			return rc;
	}
	if (!cpath && !wpath && !tpath && !model && !mpath)
		return hx_cli_usage_error(
		    CMD, "give at least one of -c, -w, -t, -m, --measurements");
	if (!(cat = hx_cli_catalog(cli, &rc)))
		return rc;
	o = json_object();
	if (cpath) {
		hx_cluster cl;
		if ((rc = hx_cluster_load(&cl, cpath, cat, &err)))
			goto out;
		json_object_set_new(o, "cluster", cluster_json(&cl));
		hx_cluster_release(&cl);
	}
	if (wpath) {
		hx_workload w;
		json_t *x;
		if ((rc = hx_workload_load(&w, wpath, &err)))
			goto out;
		x = json_object();
		hx_jset_num(x, "rate_rps", w.rate_rps);
		json_object_set_new(x, "prompt_tokens", dist_json(&w.prompt, w.slo.percentile));
		json_object_set_new(x, "output_tokens", dist_json(&w.output, w.slo.percentile));
		hx_jset_int(x, "classes", w.nclasses);
		if (w.quality) {
			/* the profile: its models' mean scores and the floor */
			json_t *qo = json_object(), *ms = json_array();
			for (int i = 0; i < w.quality->nmodels; i++) {
				json_t *mo = json_object();
				hx_jset_str(mo, "model", w.quality->model[i]);
				hx_jset_num(mo, "mean_score",
					    hx_round6(hx_quality_mean(w.quality, i)));
				json_array_append_new(ms, mo);
			}
			json_object_set_new(qo, "models", ms);
			hx_jset_int(qo, "samples", w.quality->nsamples);
			hx_jset_num(qo, "floor", w.quality->floor);
			json_object_set_new(x, "quality", qo);
		}
		json_object_set_new(o, "workload", x);
		hx_workload_release(&w);
	}
	if (tpath) {
		hx_trace t;
		if ((rc = hx_trace_load(&t, tpath, &err)))
			goto out;
		json_object_set_new(o, "trace", trace_json(&t));
		hx_trace_release(&t);
	}
	if (model) {
		hx_model m;
		json_t *x;
		if ((rc = hx_model_resolve(cat, model, &m, &err)))
			goto out;
		x = json_object();
		hx_jset_str(x, "name", m.name);
		hx_jset_num(x, "params_b", hx_model_params(&m.a) / 1e9);
		json_object_set_new(o, "model", x);
	}
	if (mpath) {
		hx_meas *ms;
		int n;
		if ((rc = hx_meas_load(&ms, &n, mpath, &err)))
			goto out;
		free(ms);
		hx_jset_int(o, "measurements", n);
	}
	if (table) {
		hx_buf t = {0};
		const char *key;
		json_t *v;
		json_object_foreach(o, key, v) hx_buf_printf(&t, "%s: ok\n", key);
		text = t.s;
	} else {
		text = hx_json_dump(o);
	}
	rc = hx_cli_output("-", text);
	free(text);
out:
	json_decref(o);
	if (rc && err.msg[0])
		return hx_cli_fail(&err);
	return rc;
}
