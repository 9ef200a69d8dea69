/* check: verify a plan against its cluster (verify.h), independently of
 * the planners; every violation is one line on stderr. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "base/jsonio.h"
#include "plan/plan.h"
#include "model/problem.h"
#include "plan/verify.h"

#define CMD "check"

const char *const hx_check_usage[] = {
    "hexplan check -p plan.json -c cluster.json [--format json|table]", NULL};

int cmd_check(hx_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {{"plan", required_argument, NULL, 'p'},
					     {"cluster", required_argument, NULL, 'c'},
					     {"format", required_argument, NULL, HX_OPT_FORMAT},
					     HX_GLOBAL_LONGOPTS,
					     {NULL, 0, NULL, 0}};
	const char *ppath = NULL, *cpath = NULL;
	const hx_catalog *cat;
	hx_cluster cl;
	hx_plan plan;
	hx_err err = {0};
	hx_violation *v = NULL;
	int c, rc = 0, table = 0, nv = 0, have_cluster = 0, have_plan = 0;
	long replicas = 0, used = 0;
	char *text = NULL;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': ppath = optarg; break;
		case 'c': cpath = optarg; break;
		default:
			if ((rc = hx_cli_common(cli, CMD, c, argv, &table)) != HX_CLI_GO)
				return rc;
		}
	}
	if (optind < argc)
		return hx_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	{
		const hx_cli_file files[] = {
		    {"-p", ppath, 0}, {"-c", cpath, 0}, {"--calibration", cli->calibration, 0}};
		if ((rc = hx_cli_check_files(CMD, files, (int)HX_ARRAY_LEN(files))))
			return rc;
	}
	if (!ppath)
		return hx_cli_usage_error(CMD, "missing -p plan.json");
	if (!cpath)
		return hx_cli_usage_error(CMD, "missing -c cluster.json");
	if (!(cat = hx_cli_catalog(cli, &rc)))
		return rc;
	/* Plans place rented GPUs on the offers' nodes (compose.h). */
	if ((rc = hx_cluster_load_expanded(&cl, cpath, cat, &err)))
		goto out;
	have_cluster = 1;
	if ((rc = hx_plan_load(&plan, ppath, &err)))
		goto out;
	have_plan = 1;
	if (hx_verify_plan(&plan, &cl, &v, &nv) > 0) {
		for (int i = 0; i < nv; i++) {
			hx_err e = {HX_EINPUT, ""};
			hx_errf(&e, HX_EINPUT, "%s: %s: %s", hx_display_path(ppath), v[i].ptr,
				v[i].msg);
			hx_cli_fail(&e);
		}
		rc = HX_EINPUT;
		goto out;
	}
	for (int g = 0; g < plan.ngroups; g++) {
		replicas += plan.groups[g].nreplicas;
		for (int r = 0; r < plan.groups[g].nreplicas; r++)
			for (int s = 0; s < plan.groups[g].nstages; s++)
				used += plan.groups[g].replicas[r].ngpus[s];
	}
	if (table) {
		hx_buf t = {0};
		hx_buf_printf(&t, "ok: %d groups, %ld replicas, %ld of %d GPUs\n", plan.ngroups,
			      replicas, used, hx_cluster_gpus(&cl));
		text = t.s;
	} else {
		json_t *o = json_object();
		json_object_set_new(o, "valid", json_true());
		hx_jset_int(o, "groups", plan.ngroups);
		hx_jset_int(o, "replicas", replicas);
		hx_jset_int(o, "gpus_used", used);
		hx_jset_int(o, "gpus_total", hx_cluster_gpus(&cl));
		text = hx_json_dump(o);
		json_decref(o);
	}
	rc = hx_cli_output("-", text);
out:
	free(text);
	free(v);
	if (have_plan)
		hx_plan_release(&plan);
	if (have_cluster)
		hx_cluster_release(&cl);
	if (rc && err.msg[0])
		return hx_cli_fail(&err);
	return rc;
}
