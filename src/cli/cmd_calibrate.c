/* calibrate: fit the cost model's GPU constants to measured timings. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/calib.h"
#include "cli/cli.h"
#include "base/jsonio.h"
#include "sim/servfit.h"

#define CMD "calibrate"

enum { OPT_RUNS = 2000, OPT_HOLDOUT, OPT_PRIOR, OPT_KEYS };

const char *const hx_calibrate_usage[] = {
    "hexplan calibrate -m MODEL -g GPU [-o calibration.json] [--format json|table] "
    "measurements.csv",
    "hexplan calibrate --runs runs.json [--holdout runs.json] [--prior W] [--keys LIST] "
    "[-o calibration.json] [--format json|table]",
    NULL};

static const char *const phase_names[] = {"prefill", "decode", "linear"};

static int run(hx_cli *cli, const char *model, const char *gpu, const char *csv,
	       const char *out_path, int table)
{
	const hx_catalog *cat;
	const hx_gpu *g;
	hx_model m;
	hx_meas *all = NULL, *pts = NULL;
	hx_fit fit = {0};
	hx_err err = {0};
	json_t *doc = NULL, *gpus, *fields, *stats, *per;
	char *text = NULL;
	hx_buf t = {0};
	int n = 0, k = 0, skipped = 0, rc;

	if (!(cat = hx_cli_catalog(cli, &rc)))
		return rc;
	if (!(g = hx_catalog_gpu(cat, gpu))) {
		hx_errf(&err, HX_EINPUT, "unknown GPU \"%s\" (see 'hexplan profiles list')",
			gpu);
		return hx_cli_fail(&err);
	}
	if ((rc = hx_model_resolve(cat, model, &m, &err)))
		return hx_cli_fail(&err);
	if ((rc = hx_meas_load(&all, &n, csv, &err)))
		return hx_cli_fail(&err);
	pts = hx_xmalloc((size_t)n * sizeof(*pts));
	for (int i = 0; i < n; i++) {
		if (strcmp(all[i].gpu, g->name) == 0 &&
		    (strcmp(all[i].model, m.name) == 0 || strcmp(all[i].model, model) == 0))
			pts[k++] = all[i];
		else
			skipped++;
	}
	if (k == 0) {
		rc = hx_errf(&err, HX_EINPUT, "%s: no rows for gpu %s and model %s", csv,
			     g->name, m.name);
		goto out;
	}
	if (skipped)
		fprintf(stderr, "hexplan: %d row%s for other GPUs or models skipped\n", skipped,
			skipped == 1 ? "" : "s");
	if ((rc = hx_calib_fit(&m, g, pts, k, &fit, &err))) {
		char msg[sizeof(err.msg)];
		snprintf(msg, sizeof(msg), "%s: %.900s", hx_display_path(csv), err.msg);
		hx_strlcpy(err.msg, msg, sizeof(err.msg));
		goto out;
	}

	doc = json_object();
	hx_jset_str(doc, "schema", "hexplan.calibration");
	hx_jset_int(doc, "version", 1);
	hx_jset_str(doc, "model", m.name);
	gpus = json_object();
	fields = json_object();
	for (int i = 0; i < fit.nkeys; i++)
		hx_jset_num(fields, fit.keys[i], *hx_gpu_field(&fit.fitted, fit.keys[i]));
	json_object_set_new(gpus, g->name, fields);
	json_object_set_new(doc, "gpus", gpus);
	stats = json_object();
	hx_jset_int(stats, "points", k);
	hx_jset_num(stats, "median_ape_before_pct", fit.median_ape_before);
	hx_jset_num(stats, "median_ape_after_pct", fit.median_ape_after);
	hx_jset_num(stats, "p90_ape_before_pct", fit.p90_ape_before);
	hx_jset_num(stats, "p90_ape_after_pct", fit.p90_ape_after);
	per = json_array();
	for (int i = 0; i < k; i++) {
		json_t *p = json_object();
		hx_jset_int(p, "line", pts[i].line);
		hx_jset_str(p, "phase", phase_names[pts[i].phase]);
		hx_jset_int(p, "tp", pts[i].tp);
		hx_jset_int(p, "batch", pts[i].batch);
		hx_jset_int(p, "tokens", pts[i].tokens);
		hx_jset_int(p, "context", pts[i].context);
		hx_jset_num(p, "ms", pts[i].ms);
		hx_jset_num(p, "predicted_ms", fit.after_ms[i]);
		hx_jset_num(p, "error_pct", (fit.after_ms[i] / pts[i].ms - 1) * 100);
		json_array_append_new(per, p);
	}
	json_object_set_new(stats, "per_point", per);
	json_object_set_new(doc, "fit", stats);

	if (out_path && (rc = hx_json_write(doc, out_path, &err)))
		goto out;
	if (table) {
		hx_buf_printf(&t, "%s on %s: %d points, fitted", m.name, g->name, k);
		for (int i = 0; i < fit.nkeys; i++)
			hx_buf_printf(&t, " %s=%.4g", fit.keys[i],
				      *hx_gpu_field(&fit.fitted, fit.keys[i]));
		hx_buf_printf(&t, "\nerror  median %.1f%% -> %.1f%%, p90 %.1f%% -> %.1f%%\n\n",
			      fit.median_ape_before, fit.median_ape_after, fit.p90_ape_before,
			      fit.p90_ape_after);
		hx_buf_printf(&t, "%6s %-8s %3s %6s %7s %8s %10s %10s %10s %8s\n", "line",
			      "phase", "tp", "batch", "tokens", "context", "ms", "before_ms",
			      "after_ms", "error%");
		for (int i = 0; i < k; i++)
			hx_buf_printf(
			    &t, "%6d %-8s %3d %6d %7d %8d %10.4f %10.4f %10.4f %8.1f\n",
			    pts[i].line, phase_names[pts[i].phase], pts[i].tp, pts[i].batch,
			    pts[i].tokens, pts[i].context, pts[i].ms, fit.before_ms[i],
			    fit.after_ms[i], (fit.after_ms[i] / pts[i].ms - 1) * 100);
		rc = hx_cli_output("-", t.s);
	} else if (!out_path) {
		text = hx_json_dump(doc);
		rc = hx_cli_output("-", text);
	} else {
		fprintf(stderr, "hexplan: %d points, median error %.1f%% -> %.1f%%; wrote %s\n",
			k, fit.median_ape_before, fit.median_ape_after, out_path);
	}
out:
	if (rc && err.msg[0])
		hx_cli_fail(&err);
	json_decref(doc);
	free(text);
	hx_buf_release(&t);
	hx_fit_release(&fit);
	free(all);
	free(pts);
	return rc;
}

/* --keys LIST: comma-separated fittable keys, each once, into KEYS. */
static int parse_keys(const char *list, const char **keys, int *n)
{
	const char *p = list;

	*n = 0;
	for (;;) {
		size_t len = strcspn(p, ",");
		int k;
		for (k = 0; hx_calib_keys[k]; k++)
			if (strlen(hx_calib_keys[k]) == len &&
			    strncmp(hx_calib_keys[k], p, len) == 0)
				break;
		if (!hx_calib_keys[k]) {
			char all[400] = "";
			for (int j = 0; hx_calib_keys[j]; j++)
				snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s",
					 j ? ", " : "", hx_calib_keys[j]);
			return hx_cli_usage_error(
			    CMD,
			    "--keys: \"%.*s\" is not a fittable key (they "
			    "are: %s)",
			    (int)(len > 60 ? 60 : len), p, all);
		}
		for (int j = 0; j < *n; j++)
			if (keys[j] == hx_calib_keys[k])
				return hx_cli_usage_error(CMD, "--keys: %s given twice",
							  hx_calib_keys[k]);
		keys[(*n)++] = hx_calib_keys[k];
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

int cmd_calibrate(hx_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {{"model", required_argument, NULL, 'm'},
					     {"gpu", required_argument, NULL, 'g'},
					     {"output", required_argument, NULL, 'o'},
					     {"format", required_argument, NULL, HX_OPT_FORMAT},
					     {"runs", required_argument, NULL, OPT_RUNS},
					     {"holdout", required_argument, NULL, OPT_HOLDOUT},
					     {"prior", required_argument, NULL, OPT_PRIOR},
					     {"keys", required_argument, NULL, OPT_KEYS},
					     HX_GLOBAL_LONGOPTS,
					     {NULL, 0, NULL, 0}};
	const char *model = NULL, *gpu = NULL, *out = NULL, *runs = NULL, *holdout = NULL;
	const char *keys[HX_CALIB_MAX_FIELDS];
	hx_servfit_opts so = {0, NULL, 0};
	int c, rc, table = 0, prior_given = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":m:g:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'm': model = optarg; break;
		case 'g': gpu = optarg; break;
		case 'o': out = optarg; break;
		case OPT_RUNS: runs = optarg; break;
		case OPT_HOLDOUT: holdout = optarg; break;
		case OPT_PRIOR:
			if ((rc = hx_cli_num(CMD, "--prior", optarg, 0, 1e6, &so.prior)))
				return rc;
			prior_given = 1;
			break;
		case OPT_KEYS:
			if ((rc = parse_keys(optarg, keys, &so.nkeys)))
				return rc;
			so.keys = keys;
			break;
		default:
			if ((rc = hx_cli_common(cli, CMD, c, argv, &table)) != HX_CLI_GO)
				return rc;
		}
	}
	{
		const hx_cli_file files[] = {
		    {"--runs", runs, 0},
		    {"--holdout", holdout, 0},
		    {"the measurements file", optind < argc ? argv[optind] : NULL, 0},
		    {"--calibration", cli->calibration, 0},
		    {"-o", out, 1}};
		if ((rc = hx_cli_check_files(CMD, files, (int)HX_ARRAY_LEN(files))))
			return rc;
	}
	if (runs) {
		if (model || gpu || argc - optind != 0)
			return hx_cli_usage_error(CMD, "--runs takes no -m, -g or measurements "
						       "file (runs name their own)");
		return hx_calibrate_serving(cli, runs, holdout, &so, out, table);
	}
	if (holdout || prior_given || so.keys)
		return hx_cli_usage_error(CMD, "%s needs --runs",
					  holdout       ? "--holdout"
					  : prior_given ? "--prior"
							: "--keys");
	if (!model || !gpu)
		return hx_cli_usage_error(CMD, "-m MODEL and -g GPU are required");
	if (argc - optind != 1)
		return hx_cli_usage_error(CMD, "give one measurements file");
	return run(cli, model, gpu, argv[optind], out, table);
}
