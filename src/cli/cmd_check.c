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
#include "planners/common.h"

#define CMD "check"

/* Print each violation of plan P (named NAME) on CL; returns their count. */
static int report(const hx_plan *p, const hx_cluster *cl, const char *name)
{
	hx_violation *v = NULL;
	int nv = 0;

	if (hx_verify_plan(p, cl, &v, &nv) > 0)
		for (int i = 0; i < nv; i++) {
			hx_err e = {HX_EINPUT, ""};
			hx_errf(&e, HX_EINPUT, "%s: %s: %s", name, v[i].ptr, v[i].msg);
			hx_cli_fail(&e);
		}
	free(v);
	return nv;
}

/* A schedule (hexplan schedule): every period's plan verified on CL, each
 * violation named "PATH: /periods/K/plan: POINTER: message".  Returns 0
 * with the summary in *TEXT (new string), or the exit status. */
static int check_schedule(json_t *doc, const char *path, const hx_cluster *cl, int table,
			  char **text, hx_err *err)
{
	json_t *periods = json_object_get(doc, "periods"), *e;
	long plans = 0, bad = 0, most = 0;
	size_t k;

	if (!json_is_array(periods))
		return hx_errf(err, HX_EINPUT, "%s: /periods: must be an array of periods",
			       hx_display_path(path));
	json_array_foreach(periods, k, e)
	{
		json_t *pj = json_object_get(e, "plan");
		char name[600];
		hx_plan p;
		long gpus = 0;
		int rc;

		if (json_is_null(pj))
			continue; /* an idle period runs nothing */
		snprintf(name, sizeof(name), "%s: /periods/%zu/plan", hx_display_path(path), k);
		rc = pj ? hx_plan_from_json(&p, json_incref(pj), name, err)
			: hx_errf(err, HX_EINPUT, "%s: missing: a plan or null", name);
		if (rc)
			return rc;
		bad += report(&p, cl, name) > 0;
		gpus = hx_plan_gpus_used(&p);
		most = gpus > most ? gpus : most;
		plans++;
		hx_plan_release(&p);
	}
	if (bad)
		return HX_EINPUT;
	if (table) {
		hx_buf t = {0};
		hx_buf_printf(&t, "ok: %zu periods, %ld plans, at most %ld of %d GPUs\n",
			      json_array_size(periods), plans, most, hx_cluster_gpus(cl));
		*text = t.s;
	} else {
		json_t *o = json_object();
		json_object_set_new(o, "valid", json_true());
		hx_jset_int(o, "periods", (long)json_array_size(periods));
		hx_jset_int(o, "plans", plans);
		hx_jset_int(o, "gpus_used_most", most);
		hx_jset_int(o, "gpus_total", hx_cluster_gpus(cl));
		*text = hx_json_dump(o);
		json_decref(o);
	}
	return 0;
}

/* The report on valid plan P on CL (TABLE: one line, else JSON), with
 * TOL, --tolerate-failures' summary, when not NULL; a new string. */
static char *plan_report(const hx_plan *p, const hx_cluster *cl, json_t *tol, int table)
{
	long replicas = 0, used = 0;
	char *text;

	for (int g = 0; g < p->ngroups; g++)
		replicas += p->groups[g].nreplicas;
	used = hx_plan_gpus_used(p); /* an AFD replica's FFN GPUs too */
	if (table) {
		hx_buf t = {0};
		hx_buf_printf(&t, "ok: %d groups, %ld replicas, %ld of %d GPUs\n", p->ngroups,
			      replicas, used, hx_cluster_gpus(cl));
		if (tol)
			hx_buf_printf(
			    &t, "tolerate-failures %ld: %ld sets checked, %ld fail\n",
			    (long)json_integer_value(json_object_get(tol, "k")),
			    (long)json_integer_value(json_object_get(tol, "sets_checked")),
			    (long)json_integer_value(json_object_get(tol, "sets_failing")));
		return t.s;
	}
	{
		json_t *o = json_object();
		json_object_set_new(o, "valid", json_true());
		hx_jset_int(o, "groups", p->ngroups);
		hx_jset_int(o, "replicas", replicas);
		hx_jset_int(o, "gpus_used", used);
		hx_jset_int(o, "gpus_total", hx_cluster_gpus(cl));
		if (tol)
			json_object_set(o, "tolerate_failures", tol);
		text = hx_json_dump(o);
		json_decref(o);
	}
	return text;
}

const char *const hx_check_usage[] = {
    "hexplan check -p plan.json|schedule.json -c cluster.json "
    "[-w workload.json --tolerate-failures K [--seed N]] [--format json|table]",
    NULL};

enum { OPT_TOLERATE = 2700, OPT_SEED };

/* --tolerate-failures K of PLAN on CL against the workload at WPATH (the
 * loaded problem as replan sees it, catalog CAT): *SUM gets the summary (new object),
 * *NFAIL the failing sets.  Returns 0 or an error in ERR. */
static int tolerate(hx_cli *cli, const hx_catalog *cat, const hx_plan *plan,
		    const hx_cluster *cl, const char *cpath, const char *wpath, long k,
		    long seed, json_t **sum, int *nfail, hx_err *err)
{
	hx_workload w;
	hx_problem pb;
	int rc;

	if ((rc = hx_workload_load(&w, wpath, err)))
		return rc;
	pb = (hx_problem){
	    cat, cl, &w, &plan->models[0], plan->solver.seed, cpath, wpath, cli->calibration};
	rc = hx_check_tolerate(&pb, plan, (int)k, (uint64_t)seed, sum, nfail, err);
	hx_workload_release(&w);
	return rc;
}

int cmd_check(hx_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"plan", required_argument, NULL, 'p'},
	    {"cluster", required_argument, NULL, 'c'},
	    {"workload", required_argument, NULL, 'w'},
	    {"tolerate-failures", required_argument, NULL, OPT_TOLERATE},
	    {"seed", required_argument, NULL, OPT_SEED},
	    {"format", required_argument, NULL, HX_OPT_FORMAT},
	    HX_GLOBAL_LONGOPTS,
	    {NULL, 0, NULL, 0}};
	const char *ppath = NULL, *cpath = NULL, *wpath = NULL, *kopt = NULL;
	const hx_catalog *cat;
	hx_cluster cl;
	hx_plan plan;
	hx_err err = {0};
	int c, rc = 0, table = 0, have_cluster = 0, have_plan = 0, nfail = 0;
	long k = 0, seed = 1;
	char *text = NULL;
	json_t *tol = NULL;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:c:w:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': ppath = optarg; break;
		case 'c': cpath = optarg; break;
		case 'w': wpath = optarg; break;
		case OPT_TOLERATE:
			kopt = optarg;
			if ((rc = hx_cli_int(CMD, "--tolerate-failures", optarg, 1,
					     HX_MAX_NODES - 1, &k)))
				return rc;
			break;
		case OPT_SEED:
			if ((rc = hx_cli_int(CMD, "--seed", optarg, 0, 0x7fffffffL, &seed)))
				return rc;
			break;
		default:
			if ((rc = hx_cli_common(cli, CMD, c, argv, &table)) != HX_CLI_GO)
				return rc;
		}
	}
	if (optind < argc)
		return hx_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	{
		const hx_cli_file files[] = {{"-p", ppath, 0},
					     {"-c", cpath, 0},
					     {"-w", wpath, 0},
					     {"--calibration", cli->calibration, 0}};
		if ((rc = hx_cli_check_files(CMD, files, (int)HX_ARRAY_LEN(files))))
			return rc;
	}
	if (!ppath)
		return hx_cli_usage_error(CMD, "missing -p plan.json");
	if (!cpath)
		return hx_cli_usage_error(CMD, "missing -c cluster.json");
	if (kopt && !wpath)
		return hx_cli_usage_error(
		    CMD,
		    "--tolerate-failures needs -w workload.json: the rate the nodes left must carry");
	if (wpath && !kopt)
		return hx_cli_usage_error(CMD,
					  "-w workload.json goes with --tolerate-failures K");
	if (!(cat = hx_cli_catalog(cli, &rc)))
		return rc;
	/* Plans place rented GPUs on the offers' nodes (compose.h). */
	if ((rc = hx_cluster_load_expanded(&cl, cpath, cat, &err)))
		goto out;
	have_cluster = 1;
	{
		/* A schedule holds one plan per period. */
		json_t *doc = hx_json_load_file(ppath, &err);
		const char *schema;
		if (!doc) {
			rc = HX_EINPUT;
			goto out;
		}
		schema = json_string_value(json_object_get(doc, "schema"));
		if (schema && strcmp(schema, "hexplan.schedule") == 0) {
			if (kopt) {
				json_decref(doc);
				rc = hx_cli_usage_error(
				    CMD, "--tolerate-failures checks a plan, not a schedule");
				goto out;
			}
			rc = check_schedule(doc, ppath, &cl, table, &text, &err);
			json_decref(doc);
			if (!rc)
				rc = hx_cli_output("-", text);
			goto out;
		}
		/* The file is read once (it may be standard input). */
		if ((rc = hx_plan_from_json(&plan, doc, hx_display_path(ppath), &err)))
			goto out;
	}
	have_plan = 1;
	if (report(&plan, &cl, hx_display_path(ppath)) > 0) {
		rc = HX_EINPUT;
		goto out;
	}
	if (kopt && k >= cl.nnodes) {
		rc =
		    hx_cli_usage_error(CMD,
				       "--tolerate-failures must be less than the cluster's %d "
				       "nodes, not %ld",
				       cl.nnodes, k);
		goto out;
	}
	if (kopt &&
	    (rc = tolerate(cli, cat, &plan, &cl, cpath, wpath, k, seed, &tol, &nfail, &err)))
		goto out;
	text = plan_report(&plan, &cl, tol, table);
	rc = hx_cli_output("-", text);
	/* Valid, but a set of lost nodes leaves the SLO unmet: the check fails. */
	if (!rc && nfail > 0)
		rc = HX_EINPUT;
out:
	json_decref(tol);
	free(text);
	if (have_plan)
		hx_plan_release(&plan);
	if (have_cluster)
		hx_cluster_release(&cl);
	if (rc && err.msg[0])
		return hx_cli_fail(&err);
	return rc;
}
