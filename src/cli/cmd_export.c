/* export: write what the engines and orchestrators read from a plan. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "export/export.h"
#include "plan/plan.h"

#define CMD "export"

const char *const hx_export_usage[] = {
	"hexplan export -p plan.json --to launch|k8s|kserve|dot [-c cluster.json] "
	"[--engine vllm|sglang] [--format json|sh] [--lossy] [-o DIR|FILE|-]",
	NULL};

enum { OPT_TO = 2400, OPT_ENGINE, OPT_LOSSY };

int cmd_export(hx_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"plan", required_argument, NULL, 'p'},
		{"cluster", required_argument, NULL, 'c'},
		{"output", required_argument, NULL, 'o'},
		{"to", required_argument, NULL, OPT_TO},
		{"engine", required_argument, NULL, OPT_ENGINE},
		{"lossy", no_argument, NULL, OPT_LOSSY},
		{"format", required_argument, NULL, HX_OPT_FORMAT},
		HX_GLOBAL_LONGOPTS,
		{NULL, 0, NULL, 0}};
	static const char *const targets[] = {"launch", "k8s", "kserve", "dot", NULL};
	int (*const fns[])(const hx_plan *, const hx_export_opts *, hx_export_out *, hx_err *) = {
		hx_export_launch, hx_export_k8s, hx_export_kserve, hx_export_dot};
	const char *ppath = NULL, *cpath = NULL, *out = NULL, *to = NULL, *format = NULL;
	hx_export_opts eo = {HX_ENGINE_VLLM, 0, 0, NULL};
	hx_export_out xo = {0};
	hx_plan p;
	hx_cluster cl;
	hx_err err = {0};
	int c, rc = 0, t, have_p = 0, have_c = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:c:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': ppath = optarg; break;
		case 'c': cpath = optarg; break;
		case 'o': out = optarg; break;
		case OPT_TO: to = optarg; break;
		case OPT_LOSSY: eo.lossy = 1; break;
		case HX_OPT_FORMAT: format = optarg; break;
		case OPT_ENGINE:
			if (strcmp(optarg, "vllm") == 0)
				eo.engine = HX_ENGINE_VLLM;
			else if (strcmp(optarg, "sglang") == 0)
				eo.engine = HX_ENGINE_SGLANG;
			else
				return hx_cli_usage_error(CMD, "--engine must be vllm or sglang, not \"%s\"", optarg);
			break;
		default:
			if ((rc = hx_cli_common(cli, CMD, c, argv, NULL)) != HX_CLI_GO)
				return rc;
		}
	}
	if (optind < argc)
		return hx_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	if (!ppath || !to)
		return hx_cli_usage_error(CMD, "-p plan.json and --to TARGET are required");
	for (t = 0; targets[t] && strcmp(targets[t], to); t++)
		;
	if (!targets[t])
		return hx_cli_usage_error(CMD, "--to must be launch, k8s, kserve or dot, not \"%s\"", to);
	if (format) {
		if (t != 0)
			return hx_cli_usage_error(CMD, "--format json|sh is for --to launch");
		if (strcmp(format, "sh") == 0)
			eo.format_sh = 1;
		else if (strcmp(format, "json") != 0)
			return hx_cli_usage_error(CMD, "--format must be json or sh, not \"%s\"", format);
	}
	if ((rc = hx_plan_load(&p, ppath, &err)))
		goto out;
	have_p = 1;
	if (cpath) {
		const hx_catalog *cat = hx_cli_catalog(cli, &rc);
		if (!cat)
			goto out;
		/* Rented GPUs sit on the offers' nodes (compose.h). */
		if ((rc = hx_cluster_load_expanded(&cl, cpath, cat, &err)))
			goto out;
		have_c = 1;
		eo.cluster = &cl;
	}
	/* A pipeline plan's groups are layer fragments joined node to node by
	 * hops (Helix-style request routing): no engine command, Deployment or
	 * LLMInferenceService runs that, and a "closest form" would serve
	 * partial models.  Refuse, even with --lossy; dot draws it. */
	if (t != 3) {
		for (int g = 0; g < p.ngroups; g++) {
			const hx_plan_group *gr = &p.groups[g];
			const hx_model *m = hx_plan_model(&p, gr->model);
			if (gr->nstages > 0 && m &&
			    (gr->stage[0].first != 0 || gr->stage[gr->nstages - 1].last != m->a.layers)) {
				rc = hx_errf(&err, HX_EINPUT,
					     "%s: group %s holds layers [%d, %d) of %s: a pipeline plan's "
					     "fragments, joined by hops, cannot be exported to %s (--to dot "
					     "draws it)",
					     hx_display_path(ppath), gr->name, gr->stage[0].first,
					     gr->stage[gr->nstages - 1].last, m->name, to);
				goto out;
			}
		}
	}
	if ((rc = fns[t](&p, &eo, &xo, &err)))
		goto out;
	if (!out || strcmp(out, "-") == 0) {
		if (xo.n != 1) {
			rc = hx_cli_usage_error(CMD, "this export writes %d files: give -o DIR", xo.n);
			goto out;
		}
		rc = hx_cli_output("-", xo.f[0].text);
	} else {
		struct stat st;
		if (xo.n == 1 && (stat(out, &st) != 0 || !S_ISDIR(st.st_mode))) {
			rc = hx_write_atomic(out, xo.f[0].text, strlen(xo.f[0].text), &err);
		} else {
			if (mkdir(out, 0777) != 0 && errno != EEXIST) {
				rc = hx_errf(&err, HX_EINPUT, "%s: %s", out, strerror(errno));
				goto out;
			}
			hx_out_file *of = hx_xcalloc((size_t)xo.n, sizeof(*of));
			for (int i = 0; i < xo.n; i++) {
				of[i].path = hx_path_join(out, xo.f[i].name);
				of[i].data = xo.f[i].text;
				of[i].len = strlen(xo.f[i].text);
				of[i].mode = strstr(xo.f[i].name, ".sh") ? 0755 : 0;
			}
			rc = hx_write_files_atomic(of, xo.n, &err);
			for (int i = 0; i < xo.n; i++)
				free((char *)of[i].path);
			free(of);
		}
	}
	if (!rc && xo.lost.len > 0) {
		/* what the lossy export could not express, once it is written */
		char *line = xo.lost.s, *nl;
		for (; *line; line = nl + 1) {
			nl = strchr(line, '\n');
			fprintf(stderr, "hexplan: lossy: %.*s\n", (int)(nl - line), line);
		}
	}
out:
	if (rc && err.msg[0])
		hx_cli_fail(&err);
	hx_export_release(&xo);
	if (have_c)
		hx_cluster_release(&cl);
	if (have_p)
		hx_plan_release(&p);
	return rc;
}
