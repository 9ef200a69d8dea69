/* replan: adapt a plan to a changed cluster or workload (replan.h); the new
 * plan goes to -o (or stdout), what moves to --moves FILE and, in one line,
 * to stderr.  A plan short of the rate is written and exits 5, or with
 * --strict not written (exit 3). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "base/jsonio.h"
#include "plan/plan.h"
#include "planners/pipeline.h"
#include "planners/replan.h"

#define CMD "replan"

const char *const hx_replan_usage[] = {
    "hexplan replan -p plan.json -c cluster.json [-w workload.json] [-o plan.json] "
    "[--moves FILE] [--strict] [--format json|table]",
    NULL};

enum { OPT_MOVES = 2600, OPT_STRICT };

static const char *const kinds[] = {"stop", "start", "role", "weight"};

static json_t *moves_json(const hx_moves *mv, const char *plan_path, const char *old_digest)
{
	json_t *o = json_object(), *a = json_array(), *c = json_object();

	hx_jset_str(o, "schema", "hexplan.moves");
	hx_jset_int(o, "version", 1);
	hx_jset_str(o, "plan", plan_path);
	hx_jset_str(o, "old_plan", old_digest);
	json_object_set_new(o, "routing_only", json_boolean(mv->routing_only));
	hx_jset_int(o, "replicas_before", mv->replicas_before);
	hx_jset_int(o, "kept", mv->kept);
	hx_jset_int(o, "stopped", mv->stopped);
	hx_jset_int(o, "started", mv->started);
	hx_jset_int(o, "roles_flipped", mv->roles_flipped);
	hx_jset_int(o, "weights_changed", mv->weights_changed);
	json_object_set_new(o, "bytes_to_load", json_real(mv->bytes_to_load));
	json_object_set_new(c, "before", json_real(mv->capacity_before_rps));
	json_object_set_new(c, "after", json_real(mv->capacity_after_rps));
	json_object_set_new(o, "capacity_rps", c);
	json_object_set_new(o, "rate_rps", json_real(mv->rate_rps));
	for (int i = 0; i < mv->n; i++) {
		const hx_move *m = &mv->m[i];
		json_t *x = json_object();
		hx_jset_str(x, "kind", kinds[m->kind]);
		if (m->kind == HX_MOVE_WEIGHT) {
			hx_jset_str(x, "class", m->cls);
			hx_jset_str(x, "group", m->group);
			json_object_set_new(x, "from", json_real(hx_round6(m->from)));
			json_object_set_new(x, "to", json_real(hx_round6(m->to)));
		} else {
			hx_jset_str(x, "replica", m->replica);
			hx_jset_str(x, "group", m->group);
			hx_jset_int(x, "gpus", m->gpus);
			if (m->kind == HX_MOVE_STOP || m->kind == HX_MOVE_ROLE)
				hx_jset_str(x, "why", m->why);
			if (m->kind == HX_MOVE_START)
				json_object_set_new(x, "bytes", json_real(m->bytes));
		}
		json_array_append_new(a, x);
	}
	json_object_set_new(o, "moves", a);
	return o;
}

/* -o and --moves together: both files are replaced, or neither. */
static int write_outputs(const hx_plan *p, const hx_moves *mv, const char *out,
			 const char *mpath, const char *digest, hx_err *err)
{
	hx_out_file f[2];
	char *plan = out ? hx_plan_dump(p) : NULL, *moves = NULL;
	int n = 0, rc;

	if (plan)
		f[n++] = (hx_out_file){out, plan, strlen(plan), 0};
	if (mpath) {
		json_t *j = moves_json(mv, out ? out : "-", digest);
		moves = hx_json_dump(j);
		json_decref(j);
		f[n++] = (hx_out_file){mpath, moves, strlen(moves), 0};
	}
	rc = n ? hx_write_files_atomic(f, n, err) : HX_OK;
	free(plan);
	free(moves);
	return rc;
}

int cmd_replan(hx_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {{"plan", required_argument, NULL, 'p'},
					     {"cluster", required_argument, NULL, 'c'},
					     {"workload", required_argument, NULL, 'w'},
					     {"output", required_argument, NULL, 'o'},
					     {"moves", required_argument, NULL, OPT_MOVES},
					     {"strict", no_argument, NULL, OPT_STRICT},
					     {"format", required_argument, NULL, HX_OPT_FORMAT},
					     HX_GLOBAL_LONGOPTS,
					     {NULL, 0, NULL, 0}};
	const char *ppath = NULL, *cpath = NULL, *wpath = NULL, *out = NULL, *mpath = NULL;
	const hx_catalog *cat;
	hx_cluster cl;
	hx_workload w;
	hx_plan old, p;
	hx_moves mv;
	hx_problem pb;
	hx_err err = {0};
	hx_plan_opts po = {HX_OBJ_CAPACITY, 0, 0, 0, NULL, 0, 0};
	hx_replan_opts ro = {0, hx_pipe_adapt};
	int c, rc, table = 0, have_c = 0, have_w = 0, have_old = 0, have_p = 0;
	char digest[72];

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:c:w:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': ppath = optarg; break;
		case 'c': cpath = optarg; break;
		case 'w': wpath = optarg; break;
		case 'o': out = optarg; break;
		case OPT_MOVES: mpath = optarg; break;
		case OPT_STRICT: ro.strict = 1; break;
		default:
			if ((rc = hx_cli_common(cli, CMD, c, argv, &table)) != HX_CLI_GO)
				return rc;
		}
	}
	if (optind < argc)
		return hx_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	{
		const hx_cli_file files[] = {
		    {"-p", ppath, 0},
		    {"-c", cpath, 0},
		    {"-w", wpath, 0},
		    {"--calibration", cli->calibration, 0},
		    {out ? "-o" : "the plan (standard output without -o)", out ? out : "-", 1},
		    {"--moves", mpath, 1}};
		if ((rc = hx_cli_check_files(CMD, files, (int)HX_ARRAY_LEN(files))))
			return rc;
	}
	if (!ppath || !cpath)
		return hx_cli_usage_error(CMD, "-p plan.json and -c cluster.json are required");
	if (!(cat = hx_cli_catalog(cli, &rc)))
		return rc;
	if ((rc = hx_plan_load(&old, ppath, &err)))
		goto out;
	have_old = 1;
	if ((rc = hx_cli_plan_whole(&old, ppath, &err)))
		goto out;
	if ((rc = hx_cluster_load(&cl, cpath, cat, &err)))
		goto out;
	have_c = 1;
	if (wpath) {
		if ((rc = hx_workload_load(&w, wpath, &err)))
			goto out;
		have_w = 1;
	}
	hx_file_digest(ppath, digest);
	pb = (hx_problem){cat,   &cl,   have_w ? &w : NULL, &old.models[0], old.solver.seed,
			  cpath, wpath, cli->calibration};
	if ((rc = hx_replan(&old, &cl, have_w ? &w : NULL, &pb, &po, &ro, &p, &mv, &err)))
		goto out;
	have_p = 1;
	if ((rc = write_outputs(&p, &mv, out, mpath, digest, &err)))
		goto out;
	fprintf(
	    stderr,
	    "hexplan: replan: kept %d of %d replicas; stopped %d, started %d, roles flipped %d, weights changed %d; %.0f bytes of weights to load; capacity %.3f -> %.3f req/s\n",
	    mv.kept, mv.replicas_before, mv.stopped, mv.started, mv.roles_flipped,
	    mv.weights_changed, mv.bytes_to_load, mv.capacity_before_rps,
	    mv.capacity_after_rps);
	hx_cli_spill_note("replan", &p);
	if (p.shortage.on)
		fprintf(
		    stderr,
		    "hexplan: replan: short: the plan carries %.3f req/s at the SLO, %.3f short of the %.3f req/s the rate of %g req/s needs at %g%% utilization; it serves %.1f%% of the offered traffic at the SLO\n",
		    p.predicted.capacity_rps, p.shortage.shortfall_rps,
		    p.shortage.rate_rps / p.shortage.utilization, p.shortage.rate_rps,
		    p.shortage.utilization * 100, p.shortage.served_share * 100);
	if (table || !out) {
		char *text = table ? hx_plan_table(&p) : hx_plan_dump(&p);
		rc = hx_cli_output("-", text);
		free(text);
	}
	/* Written, but short of the rate: a status of its own (DESIGN §3's 0-4
	 * keep their meaning). */
	if (!rc && p.shortage.on)
		rc = HX_ESHORT;
out:
	if (rc && err.msg[0])
		hx_cli_fail(&err);
	if (have_p) {
		hx_plan_release(&p);
		hx_moves_release(&mv);
	}
	if (have_w)
		hx_workload_release(&w);
	if (have_c)
		hx_cluster_release(&cl);
	if (have_old)
		hx_plan_release(&old);
	return rc;
}
