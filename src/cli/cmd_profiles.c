/* profiles: list or show the GPU and model catalog. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "base/jsonio.h"

#define CMD "profiles"

const char *const hx_profiles_usage[] = {
    "hexplan profiles list [--format json|table]",
    "hexplan profiles show gpu|model NAME [--format json|table]", NULL};

static json_t *model_json(const hx_model *m)
{
	json_t *o = json_object(), *a = hx_arch_to_json(&m->a);
	const hx_arch *x = &m->a;

	hx_jset_str(o, "name", m->name);
	hx_jset_str(o, "hf_repo", m->hf_repo);
	hx_jset_num(o, "params_b", hx_model_params(x) / 1e9);
	hx_jset_num(o, "active_params_b", hx_model_active_params(x) / 1e9);
	hx_jset_num(o, "published_params_b", m->published_params_b);
	hx_jset_num(o, "weights_gib", hx_model_params(x) * hx_dtype_bytes(x->dtype) / HX_GIB);
	json_object_set_new(o, "arch", a);
	return o;
}

static int list(const hx_catalog *cat, int table)
{
	hx_buf t = {0};
	char *text;
	int rc;

	if (!table) {
		json_t *o = json_object(), *g = json_array(), *m = json_array();
		for (int i = 0; i < cat->ngpus; i++)
			json_array_append_new(g, json_string(cat->gpus[i].name));
		for (int i = 0; i < cat->nmodels; i++)
			json_array_append_new(m, json_string(cat->models[i].name));
		json_object_set_new(o, "gpus", g);
		json_object_set_new(o, "models", m);
		text = hx_json_dump(o);
		json_decref(o);
		rc = hx_cli_output("-", text);
		free(text);
		return rc;
	}
	hx_buf_printf(&t, "%-12s %8s %9s %10s %8s %8s\n", "gpu", "mem_gib", "tflops",
		      "mem_gb_s", "link", "usd/h");
	for (int i = 0; i < cat->ngpus; i++) {
		const hx_gpu *g = &cat->gpus[i];
		hx_buf_printf(&t, "%-12s %8.1f %9.0f %10.0f %8s %8.2f\n", g->name, g->mem_gib,
			      g->tflops_bf16, g->mem_bw_gb_s, g->intra_link, g->usd_per_hour);
	}
	hx_buf_printf(&t, "\n%-18s %9s %7s %7s %6s %8s\n", "model", "params_b", "layers",
		      "hidden", "heads", "kv_heads");
	for (int i = 0; i < cat->nmodels; i++) {
		const hx_model *m = &cat->models[i];
		hx_buf_printf(&t, "%-18s %9.2f %7d %7d %6d %8d\n", m->name,
			      hx_model_params(&m->a) / 1e9, m->a.layers, m->a.hidden,
			      m->a.heads, m->a.kv_heads);
	}
	rc = hx_cli_output("-", t.s);
	hx_buf_release(&t);
	return rc;
}

static void table_of(hx_buf *t, const json_t *o, const char *indent)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)o, key, v)
	{
		if (json_is_object(v)) {
			hx_buf_printf(t, "%s%s:\n", indent, key);
			table_of(t, v, "  ");
		} else if (json_is_string(v)) {
			hx_buf_printf(t, "%s%-22s %s\n", indent, key, json_string_value(v));
		} else if (json_is_boolean(v)) {
			hx_buf_printf(t, "%s%-22s %s\n", indent, key,
				      json_is_true(v) ? "true" : "false");
		} else {
			hx_buf_printf(t, "%s%-22s %g\n", indent, key, json_number_value(v));
		}
	}
}

static int show(hx_cli *cli, const hx_catalog *cat, const char *kind, const char *name,
		int table)
{
	json_t *o;
	hx_err err = {0};
	hx_model m;
	char *text;
	int rc;

	(void)cli;
	if (strcmp(kind, "gpu") == 0) {
		const hx_gpu *g = hx_catalog_gpu(cat, name);
		if (!g) {
			hx_errf(&err, HX_EINPUT,
				"unknown GPU \"%s\" (see 'hexplan profiles list')", name);
			return hx_cli_fail(&err);
		}
		o = hx_gpu_to_json(g);
	} else if (strcmp(kind, "model") == 0) {
		if (hx_model_resolve(cat, name, &m, &err))
			return hx_cli_fail(&err);
		o = model_json(&m);
	} else {
		return hx_cli_usage_error(CMD, "show takes 'gpu' or 'model', not '%s'", kind);
	}
	if (table) {
		hx_buf t = {0};
		table_of(&t, o, "");
		text = t.s;
	} else {
		text = hx_json_dump(o);
	}
	json_decref(o);
	rc = hx_cli_output("-", text);
	free(text);
	return rc;
}

int cmd_profiles(hx_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {{"format", required_argument, NULL, HX_OPT_FORMAT},
					     HX_GLOBAL_LONGOPTS,
					     {NULL, 0, NULL, 0}};
	const hx_catalog *cat;
	int c, rc, table = -1, nargs;
	char **args;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		default:
			if ((rc = hx_cli_common(cli, CMD, c, argv, &table)) != HX_CLI_GO)
				return rc;
		}
	}
	args = argv + optind;
	nargs = argc - optind;
	if (nargs < 1)
		return hx_cli_usage_error(CMD, "say 'list' or 'show'");
	if (strcmp(args[0], "list") == 0) {
		if (nargs != 1)
			return hx_cli_usage_error(CMD, "list takes no arguments");
		if (!(cat = hx_cli_catalog(cli, &rc)))
			return rc;
		return list(cat, table != 0); /* people read the list: a table unless json */
	}
	if (strcmp(args[0], "show") == 0) {
		if (nargs != 3)
			return hx_cli_usage_error(CMD, "show takes 'gpu NAME' or 'model NAME'");
		if (!(cat = hx_cli_catalog(cli, &rc)))
			return rc;
		return show(cli, cat, args[1], args[2], table == 1);
	}
	return hx_cli_usage_error(CMD, "unknown subcommand '%s' (list or show)", args[0]);
}
