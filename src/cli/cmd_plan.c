/* plan: make a deployment plan (or print an existing one). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "plan/plan.h"
#include "planners/bo.h"
#include "planners/afd.h"
#include "planners/baseline.h"
#include "planners/cascade.h"
#include "planners/colocated.h"
#include "planners/compose.h"
#include "planners/disagg.h"
#include "planners/pipeline.h"
#include "model/quality.h"

#define CMD "plan"

enum {
	OPT_MODE = 2200,
	OPT_SEED,
	OPT_OBJECTIVE,
	OPT_TIME_LIMIT,
	OPT_GAP,
	OPT_LP,
	OPT_LAYER_COSTS,
	OPT_BUDGET,
	OPT_SLO_PROBABILITY,
	OPT_WEIGHTS_MEM_FRAC,
	OPT_PLACEMENT,
	OPT_TOLERATE
};
/* --mode bo's own */
enum { OPT_PREFER = 2300, OPT_FRONT, OPT_PLOT, OPT_MAX_EVALS, OPT_EVALUATE };

static int plan_baseline(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out, hx_err *err)
{
	(void)o;
	return hx_plan_baseline(pb, out, err);
}

/* --mode auto: hx_plan_auto, with the candidates' table on standard error. */
static int plan_auto(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out, hx_err *err)
{
	hx_auto_candidate cand[HX_AUTO_MAX];
	int n = 0, rc;

	if (o->objective == HX_OBJ_LATENCY)
		return hx_errf(err, HX_EINPUT,
			       "--mode auto judges plans by capacity or cost, not latency");
	if (o->lp_path)
		return hx_errf(
		    err, HX_EINPUT,
		    "--mode auto solves several MILPs or none: it has no --lp to write");
	rc = hx_plan_auto(pb, o, out, cand, &n, err);
	fprintf(stderr, "hexplan: plan: auto: %-9s %10s %10s %9s %8s\n", "mode", "predicted",
		"simulated", "usd/h", "time_s");
	for (int i = 0; i < n; i++) {
		const hx_auto_candidate *c = &cand[i];
		if (c->ok)
			fprintf(stderr,
				"hexplan: plan: auto: %-9s %10.3f %10.3f %9.2f %8.1f%s\n",
				c->mode, c->predicted_rps, c->simulated_rps, c->usd_per_hour,
				c->time_s, c->chosen ? "  chosen" : "");
		else
			fprintf(stderr, "hexplan: plan: auto: %-9s no plan: %.200s\n", c->mode,
				c->why);
	}
	return rc;
}

/* A plan's capacity for the --mode afd line: "predicted X req/s", and
 * "(simulated Y)" when it was simulated, into OUT. */
static void afd_capacity_text(const hx_plan *p, char *out, size_t n)
{
	if (p->simulated.requests > 0)
		snprintf(out, n, "%.3f req/s (simulated %.3f)", p->predicted.capacity_rps,
			 p->simulated.capacity_rps);
	else
		snprintf(out, n, "%.3f req/s", p->predicted.capacity_rps);
}

/* --mode afd: hx_plan_attn_ffn, and on standard error one line that sets
 * its capacity beside the plan --mode disagg makes of the same inputs
 * (called here: a planner may not include another mode) and says whether
 * AFD pays, by simulated capacity when both plans have it. */
static int plan_afd(const hx_problem *pb, const hx_plan_opts *o, hx_plan *out, hx_err *err)
{
	const double deadline = hx_deadline(o->time_limit_s);
	hx_plan_opts od = *o;
	hx_plan d;
	hx_err de = {0};
	char a[96], b[96];
	int rc = hx_plan_attn_ffn(pb, o, out, err);

	if (rc)
		return rc;
	afd_capacity_text(out, a, sizeof(a));
	/* disagg's search gets what --time-limit leaves of the run (without
	 * one, on 4,096 nodes of 16 GPUs, the run took 9.5 minutes) */
	od.time_limit_s = hx_plan_time_left(deadline);
	if (hx_plan_disagg(pb, &od, &d, &de) == 0) {
		int sim = out->simulated.requests > 0 && d.simulated.requests > 0;
		double x = sim ? out->simulated.capacity_rps : out->predicted.capacity_rps;
		double y = sim ? d.simulated.capacity_rps : d.predicted.capacity_rps;
		afd_capacity_text(&d, b, sizeof(b));
		fprintf(
		    stderr,
		    "hexplan: plan: afd: capacity %s on %d GPUs (%.2f USD/h); --mode disagg on "
		    "the same inputs: %s on %d GPUs (%.2f USD/h%s): %s\n",
		    a, hx_plan_gpus_used(out), out->predicted.usd_per_hour, b,
		    hx_plan_gpus_used(&d), d.predicted.usd_per_hour,
		    strcmp(d.solver.status, "time_limit") == 0
			? "; its search cut by --time-limit"
			: "",
		    x > y ? "AFD pays" : "AFD does not pay on these inputs");
		hx_plan_release(&d);
	} else {
		fprintf(stderr,
			"hexplan: plan: afd: capacity %s; --mode disagg plans nothing on the "
			"same inputs: %.300s\n",
			a, de.msg);
	}
	return 0;
}

/* What a mode takes besides -c, -w, -m and --seed. */
enum {
	TAKES_TIME = 1,    /* --time-limit: it searches */
	TAKES_MILP = 2,    /* --objective, --gap, --lp: it solves a MILP */
	TAKES_QUALITY = 4, /* its models come from the workload's quality profile */
	TAKES_BO = 8, /* --prefer, --front, --plot, --max-evals, --evaluate: a Pareto search */
	TAKES_LAYER_COSTS = 16, /* --layer-costs, --weights-mem-frac, --placement,
				 * --objective throughput: it cuts a model into layer ranges */
	TAKES_BUDGET = 32,      /* --budget */
	TAKES_TOLERATE = 64,    /* --tolerate-failures: insurance replicas join its plans */
	TAKES_SPOT = 128,       /* --slo-probability: it rents spot offers */
};

/* The modes this hexplan plans, in the order --help and errors name them: the
 * one list of them.  FIRST names the first, NEXT each other (so the usage can
 * join the names with '|' at compile time). */
#define HX_PLAN_MODES(FIRST, NEXT)                                                             \
	FIRST("baseline", plan_baseline, 0)                                                    \
	NEXT("colocated", hx_plan_colocated, TAKES_TIME | TAKES_MILP | TAKES_TOLERATE)         \
	NEXT("disagg", hx_plan_disagg, TAKES_TIME)                                             \
	NEXT("afd", plan_afd, TAKES_TIME)                                                      \
	NEXT("pipeline", hx_plan_pipeline, TAKES_TIME | TAKES_MILP | TAKES_LAYER_COSTS)        \
	NEXT("compose", hx_plan_compose,                                                       \
	     TAKES_TIME | TAKES_MILP | TAKES_BUDGET | TAKES_TOLERATE | TAKES_SPOT)             \
	NEXT("cascade", hx_plan_cascade, TAKES_TIME | TAKES_MILP | TAKES_QUALITY)              \
	NEXT("route", hx_plan_route, TAKES_TIME | TAKES_MILP | TAKES_QUALITY)                  \
	NEXT("bo", NULL, TAKES_TIME | TAKES_QUALITY | TAKES_BO | TAKES_BUDGET)                 \
	NEXT("auto", plan_auto, TAKES_TIME | TAKES_MILP)

#define MODE_ENTRY(name, fn, takes)      {name, fn, takes},
#define MODE_FIRST_NAME(name, fn, takes) name
#define MODE_NEXT_NAME(name, fn, takes)  "|" name

static const struct mode {
	const char *name;
	int (*run)(const hx_problem *, const hx_plan_opts *, hx_plan *, hx_err *);
	int takes;
} modes[] = {HX_PLAN_MODES(MODE_ENTRY, MODE_ENTRY)};

const char *const hx_plan_usage[] = {
    "hexplan plan -c cluster.json -w workload.json [-m MODEL] [--mode " HX_PLAN_MODES(
	MODE_FIRST_NAME,
	MODE_NEXT_NAME) "] "
			"[--objective capacity|cost|latency|throughput] [--budget USD_PER_H] "
			"[--slo-probability P] [--time-limit S] [--gap G] [--seed N] "
			"[--tolerate-failures K] [-o plan.json] "
			"[--lp FILE] [--layer-costs FILE] [--weights-mem-frac F] "
			"[--placement FILE] [--prefer "
			"balanced|cost|latency|quality] [--max-evals N] [--evaluate model|sim] "
			"[--front FILE] [--plot FILE] "
			"[--format json|table]",
    "hexplan plan -p plan.json [--format json|table]", NULL};

#define NMODES ((int)(sizeof(modes) / sizeof(modes[0])))

/* The modes that take what FLAG says, as "a, b and c" (CONJ " and "). */
static void mode_list(int flag, const char *conj, char *out, size_t len)
{
	int n = 0, k = 0;
	for (int i = 0; i < NMODES; i++)
		n += (modes[i].takes & flag) == flag;
	out[0] = '\0';
	for (int i = 0; i < NMODES; i++) {
		if ((modes[i].takes & flag) != flag)
			continue;
		k++;
		snprintf(out + strlen(out), len - strlen(out), "%s%s",
			 k == 1   ? ""
			 : k == n ? conj
				  : ", ",
			 modes[i].name);
	}
}

/* A usage error when GIVEN but MD does not take FLAG: WHAT, then the modes
 * that do ("a, b or c"); else 0. */
static int mode_refuses(const struct mode *md, int flag, int given, const char *what)
{
	char list[256];

	if (!given || (md->takes & flag))
		return 0;
	mode_list(flag, " or ", list, sizeof(list));
	return hx_cli_usage_error(CMD, "%s %s", what, list);
}

/* Modes that take their models from the workload's quality profile (no -m). */
static int takes_quality(const struct mode *md)
{
	return (md->takes & TAKES_QUALITY) != 0;
}

static const struct mode *find_mode(const char *name)
{
	for (int i = 0; i < NMODES; i++)
		if (strcmp(modes[i].name, name) == 0)
			return &modes[i];
	return NULL;
}

static int unknown_mode(const char *name)
{
	char list[256];
	mode_list(0, " and ", list, sizeof(list));
	return hx_cli_usage_error(CMD, "unknown mode '%s' (this hexplan plans: %s)", name,
				  list);
}

/* The search's progress on a terminal: one line, redrawn. */
static void bo_progress(void *ctx, int iter, int evals, double hv)
{
	(void)ctx;
	fprintf(stderr, "\rhexplan: plan: bo: iteration %d, %d evaluations, hypervolume %.4f ",
		iter, evals, hv);
	fflush(stderr);
}

/* --mode bo: search, then write the plan, the front and the plot together
 * (all or none). */
static int plan_bo(const hx_problem *pb, const hx_plan_opts *po, const hx_bo_opts *bo,
		   const char *out, const char *front_path, const char *plot_path, int table,
		   hx_err *err)
{
	hx_plan p;
	hx_bo_front f;
	hx_out_file files[3];
	char *text[3] = {NULL, NULL, NULL};
	int n = 0, rc;

	if ((rc = hx_plan_bo(pb, po, bo, front_path != NULL, &p, &f, err)))
		goto done;
	if (out) {
		text[n] = hx_plan_dump(&p);
		files[n] = (hx_out_file){out, text[n], strlen(text[n]), 0};
		n++;
	}
	if (front_path) {
		text[n] = hx_bo_front_dump(&f, pb->seed);
		files[n] = (hx_out_file){front_path, text[n], strlen(text[n]), 0};
		n++;
	}
	if (plot_path) {
		text[n] = hx_bo_front_svg(&f);
		files[n] = (hx_out_file){plot_path, text[n], strlen(text[n]), 0};
		n++;
	}
	if (n && (rc = hx_write_files_atomic(files, n, err)))
		goto done;
	if (table || !out) {
		char *t = table ? hx_plan_table(&p) : hx_plan_dump(&p);
		rc = hx_cli_output("-", t);
		free(t);
	}
done:
	/* after a failure hx_plan_bo has left P and F empty: releasing them
	 * again is harmless */
	for (int i = 0; i < n; i++)
		free(text[i]);
	hx_plan_release(&p);
	hx_bo_front_release(&f);
	if (bo->progress)
		fputc('\n', stderr);
	return rc;
}

static int show(const char *path, int table)
{
	hx_plan p;
	hx_err err = {0};
	char *text;
	int rc;

	if ((rc = hx_plan_load(&p, path, &err)))
		return hx_cli_fail(&err);
	text = table ? hx_plan_table(&p) : hx_plan_dump(&p);
	rc = hx_cli_output("-", text);
	free(text);
	hx_plan_release(&p);
	return rc;
}

/* What the command line says. */
typedef struct plan_args {
	const char *cpath, *wpath, *model, *ppath, *out;
	const char *mode, *layer_costs, *front_path, *plot_path, *placement;
	double weights_mem_frac; /* 0: not given */
	hx_bo_opts bo;
	int bo_given, table;
	long seed, tolerate; /* tolerate: --tolerate-failures K (0: not given) */
	hx_plan_opts po;
} plan_args;

/* Parse ARGV into A; returns HX_CLI_GO to go on, or the exit status (usage
 * errors printed, --help answered). */
static int parse_args(hx_cli *cli, int argc, char **argv, plan_args *a)
{
	static const struct option opts[] = {
	    {"cluster", required_argument, NULL, 'c'},
	    {"workload", required_argument, NULL, 'w'},
	    {"model", required_argument, NULL, 'm'},
	    {"plan", required_argument, NULL, 'p'},
	    {"output", required_argument, NULL, 'o'},
	    {"mode", required_argument, NULL, OPT_MODE},
	    {"seed", required_argument, NULL, OPT_SEED},
	    {"objective", required_argument, NULL, OPT_OBJECTIVE},
	    {"time-limit", required_argument, NULL, OPT_TIME_LIMIT},
	    {"gap", required_argument, NULL, OPT_GAP},
	    {"lp", required_argument, NULL, OPT_LP},
	    {"layer-costs", required_argument, NULL, OPT_LAYER_COSTS},
	    {"budget", required_argument, NULL, OPT_BUDGET},
	    {"slo-probability", required_argument, NULL, OPT_SLO_PROBABILITY},
	    {"weights-mem-frac", required_argument, NULL, OPT_WEIGHTS_MEM_FRAC},
	    {"placement", required_argument, NULL, OPT_PLACEMENT},
	    {"tolerate-failures", required_argument, NULL, OPT_TOLERATE},
	    {"prefer", required_argument, NULL, OPT_PREFER},
	    {"front", required_argument, NULL, OPT_FRONT},
	    {"plot", required_argument, NULL, OPT_PLOT},
	    {"max-evals", required_argument, NULL, OPT_MAX_EVALS},
	    {"evaluate", required_argument, NULL, OPT_EVALUATE},
	    {"format", required_argument, NULL, HX_OPT_FORMAT},
	    HX_GLOBAL_LONGOPTS,
	    {NULL, 0, NULL, 0}};
	hx_bo_opts *bo = &a->bo;
	hx_plan_opts *po = &a->po;
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:w:m:p:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': a->cpath = optarg; break;
		case 'w': a->wpath = optarg; break;
		case 'm': a->model = optarg; break;
		case 'p': a->ppath = optarg; break;
		case 'o': a->out = optarg; break;
		case OPT_MODE: a->mode = optarg; break;
		case OPT_SEED:
			if ((rc = hx_cli_int(CMD, "--seed", optarg, 0, 0x7fffffffL, &a->seed)))
				return rc;
			break;
		case OPT_OBJECTIVE:
			if (strcmp(optarg, "capacity") == 0)
				po->objective = HX_OBJ_CAPACITY;
			else if (strcmp(optarg, "cost") == 0)
				po->objective = HX_OBJ_COST;
			else if (strcmp(optarg, "latency") == 0)
				po->objective = HX_OBJ_LATENCY;
			else if (strcmp(optarg, "throughput") == 0)
				po->objective = HX_OBJ_THROUGHPUT;
			else
				return hx_cli_usage_error(
				    CMD,
				    "--objective must be capacity, cost, latency or throughput, not \"%s\"",
				    optarg);
			break;
		case OPT_WEIGHTS_MEM_FRAC:
			if ((rc = hx_cli_num(CMD, "--weights-mem-frac", optarg, 0, 1,
					     &a->weights_mem_frac)))
				return rc;
			if (a->weights_mem_frac <= 0)
				return hx_cli_usage_error(
				    CMD,
				    "--weights-mem-frac must be above 0 (the share of each GPU's memory the weights may take), not \"%s\"",
				    optarg);
			break;
		case OPT_PLACEMENT: a->placement = optarg; break;
		case OPT_TOLERATE:
			if ((rc = hx_cli_int(CMD, "--tolerate-failures", optarg, 1, 4095,
					     &a->tolerate)))
				return rc;
			break;
		case OPT_TIME_LIMIT:
			if ((rc = hx_cli_num(CMD, "--time-limit", optarg, 1e-3, 1e7,
					     &po->time_limit_s)))
				return rc;
			break;
		case OPT_GAP:
			if ((rc = hx_cli_num(CMD, "--gap", optarg, 0, 1, &po->gap)))
				return rc;
			break;
		case OPT_LP: po->lp_path = optarg; break;
		case OPT_LAYER_COSTS: a->layer_costs = optarg; break;
		case OPT_BUDGET:
			/* compose: the most traffic within it; bo: a hard filter */
			if ((rc = hx_cli_num(CMD, "--budget", optarg, 1e-6, 1e9,
					     &po->budget_usd_per_hour)))
				return rc;
			bo->budget_usd_per_hour = po->budget_usd_per_hour;
			break;
		case OPT_SLO_PROBABILITY:
			if ((rc = hx_cli_num(CMD, "--slo-probability", optarg, 1e-6, 1,
					     &po->slo_probability)))
				return rc;
			break;
		case OPT_PREFER:
			if (strcmp(optarg, "cost") == 0)
				bo->prefer = HX_PREFER_COST;
			else if (strcmp(optarg, "latency") == 0)
				bo->prefer = HX_PREFER_LATENCY;
			else if (strcmp(optarg, "quality") == 0)
				bo->prefer = HX_PREFER_QUALITY;
			else if (strcmp(optarg, "balanced") == 0)
				bo->prefer = HX_PREFER_BALANCED;
			else
				return hx_cli_usage_error(
				    CMD,
				    "--prefer must be balanced, cost, latency or quality, not \"%s\"",
				    optarg);
			a->bo_given = 1;
			break;
		case OPT_FRONT:
			a->front_path = optarg;
			a->bo_given = 1;
			break;
		case OPT_PLOT:
			a->plot_path = optarg;
			a->bo_given = 1;
			break;
		case OPT_EVALUATE:
			if (strcmp(optarg, "model") == 0)
				bo->simulate = 0;
			else if (strcmp(optarg, "sim") == 0)
				bo->simulate = 1;
			else
				return hx_cli_usage_error(
				    CMD, "--evaluate must be model or sim, not \"%s\"", optarg);
			a->bo_given = 1;
			break;
		case OPT_MAX_EVALS: {
			long n;
			if ((rc = hx_cli_int(CMD, "--max-evals", optarg, 2, 100000, &n)))
				return rc;
			bo->max_evals = (int)n;
			a->bo_given = 1;
			break;
		}
		default:
			if ((rc = hx_cli_common(cli, CMD, c, argv, &a->table)) != HX_CLI_GO)
				return rc;
		}
	}
	if (optind < argc)
		return hx_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	return HX_CLI_GO;
}

/* A's usage errors for mode MD: 0, or the exit status (printed). */
static int check_mode_opts(const plan_args *a, const struct mode *md)
{
	const hx_plan_opts *po = &a->po;
	int rc;

	if ((rc = mode_refuses(md, TAKES_LAYER_COSTS, po->objective == HX_OBJ_THROUGHPUT,
			       "--objective throughput is for --mode")))
		return rc;
	if (!(md->takes & TAKES_MILP) &&
	    (po->objective != HX_OBJ_CAPACITY || po->lp_path || po->gap > 0)) {
		char list[256];
		mode_list(TAKES_MILP, " and ", list, sizeof(list));
		return hx_cli_usage_error(
		    CMD, "--objective, --gap and --lp need a MILP mode (%s)", list);
	}
	if (!(md->takes & TAKES_TIME) && po->time_limit_s > 0) {
		char list[256];
		mode_list(TAKES_TIME, " and ", list, sizeof(list));
		return hx_cli_usage_error(CMD, "--time-limit needs a searching mode (%s)",
					  list);
	}
	if ((rc = mode_refuses(
		 md, TAKES_BO, a->bo_given,
		 "--prefer, --max-evals, --evaluate, --front and --plot need --mode")))
		return rc;
	if (a->front_path && a->out && strcmp(a->front_path, a->out) == 0)
		return hx_cli_usage_error(CMD, "--front and -o name the same file");
	if (a->plot_path && ((a->out && strcmp(a->plot_path, a->out) == 0) ||
			     (a->front_path && strcmp(a->plot_path, a->front_path) == 0)))
		return hx_cli_usage_error(CMD, "--plot names the same file as -o or --front");
	if ((rc = mode_refuses(md, TAKES_LAYER_COSTS, a->layer_costs != NULL,
			       "--layer-costs is for --mode")) ||
	    (rc = mode_refuses(md, TAKES_LAYER_COSTS, a->weights_mem_frac > 0,
			       "--weights-mem-frac is for --mode")) ||
	    (rc = mode_refuses(md, TAKES_LAYER_COSTS, a->placement != NULL,
			       "--placement is for --mode")))
		return rc;
	if ((rc = mode_refuses(md, TAKES_SPOT, po->slo_probability > 0,
			       "--slo-probability needs --mode")))
		return rc;
	if ((rc = mode_refuses(md, TAKES_TOLERATE, a->tolerate > 0,
			       "--tolerate-failures is for --mode")))
		return rc;
	if (a->tolerate > 0 && po->budget_usd_per_hour > 0)
		return hx_cli_usage_error(
		    CMD,
		    "--tolerate-failures adds replicas beyond what --budget allows: give one "
		    "of them");
	return mode_refuses(md, TAKES_BUDGET, po->budget_usd_per_hour > 0,
			    "--budget needs --mode");
}

/* Into M: the model of -m or the workload, or for a mode that plans the
 * workload's quality profile, the profile's first (the planner resolves the
 * others; -m's place is held by the first).  Returns 0, or the exit status
 * (a usage error printed, else ERR set). */
static int resolve_model(const hx_catalog *cat, const struct mode *md, const plan_args *a,
			 const hx_workload *w, hx_model *m, hx_err *err)
{
	int rc;

	if (!takes_quality(md)) {
		if (!a->model && !w->model[0])
			return hx_cli_usage_error(
			    CMD, "give -m MODEL (the workload names no model)");
		if (a->model)
			return hx_model_resolve(cat, a->model, m, err);
		/* The workload's model: the message names its file and key. */
		if ((rc = hx_model_resolve(cat, w->model, m, err))) {
			char msg[sizeof(err->msg)];
			snprintf(msg, sizeof(msg), "%s: /model: %.900s",
				 hx_display_path(a->wpath), err->msg);
			hx_strlcpy(err->msg, msg, sizeof(err->msg));
		}
		return rc;
	}
	if (a->model)
		return hx_cli_usage_error(
		    CMD,
		    "--mode %s takes its models from the workload's quality profile, not -m",
		    a->mode);
	if (!w->quality)
		return hx_cli_usage_error(
		    CMD, "--mode %s needs a workload with a quality profile (\"quality\")",
		    a->mode);
	if ((rc = hx_model_resolve(cat, w->quality->model[0], m, err))) {
		char msg[sizeof(err->msg)];
		snprintf(msg, sizeof(msg), "%s: /quality/models/0: %.900s",
			 hx_display_path(a->wpath), err->msg);
		hx_strlcpy(err->msg, msg, sizeof(err->msg));
	}
	return rc;
}

/* Write the plan to -o and the LP text to --lp (standard output for "-")
 * in one atomic step: both are complete before either replaces its old
 * file, so a failure leaves both old files as they were. */
static int write_plan(const hx_plan *p, const plan_args *a, const char *lp_text, hx_err *err)
{
	hx_out_file f[2];
	char *dump = NULL;
	int n = 0, rc;

	if (a->out) {
		dump = hx_plan_dump(p);
		f[n++] = (hx_out_file){a->out, dump, strlen(dump), 0};
	}
	if (a->po.lp_path && lp_text)
		f[n++] = (hx_out_file){a->po.lp_path, lp_text, strlen(lp_text), 0};
	rc = n ? hx_write_files_atomic(f, n, err) : HX_OK;
	free(dump);
	return rc;
}

int cmd_plan(hx_cli *cli, int argc, char **argv)
{
	plan_args a = {.mode = "baseline",
		       .bo = {HX_PREFER_BALANCED, 0, 0, HX_BO_BAYES, 0, NULL, NULL},
		       .seed = 1,
		       .po = {HX_OBJ_CAPACITY, 0, 0, 0, NULL, 0, 0}};
	const hx_catalog *cat;
	hx_cluster cluster;
	hx_workload w;
	hx_model m;
	hx_plan p;
	hx_problem pb;
	hx_err err = {0};
	const struct mode *md;
	hx_cluster tcl; /* --tolerate-failures: the cluster as check sees it */
	int rc, have_c = 0, have_w = 0, have_p = 0, have_t = 0;
	char *lp_text = NULL;
	const double start = hx_now();
	double limit;

	if ((rc = parse_args(cli, argc, argv, &a)) != HX_CLI_GO)
		return rc;
	if (a.ppath) {
		if (a.cpath || a.wpath || a.model || a.out)
			return hx_cli_usage_error(
			    CMD, "-p prints a plan: it takes no -c, -w, -m or -o");
		return show(a.ppath, a.table);
	}
	if (!a.cpath || !a.wpath)
		return hx_cli_usage_error(CMD,
					  "-c cluster.json and -w workload.json are required");
	if (!(md = find_mode(a.mode)))
		return unknown_mode(a.mode);
	if ((rc = check_mode_opts(&a, md)))
		return rc;
	{
		const hx_cli_file files[] = {
		    {"-c", a.cpath, 0},
		    {"-w", a.wpath, 0},
		    {"-m", a.model, 0},
		    {"--layer-costs", a.layer_costs, 0},
		    {"--placement", a.placement, 0},
		    {"--calibration", cli->calibration, 0},
		    {a.out ? "-o" : "the plan (standard output without -o)",
		     a.out ? a.out : "-", 1},
		    {"the table (standard output)", a.out && a.table ? "-" : NULL, 1},
		    {"--lp", a.po.lp_path, 1},
		    {"--front", a.front_path, 1},
		    {"--plot", a.plot_path, 1}};
		if ((rc = hx_cli_check_files(CMD, files, (int)HX_ARRAY_LEN(files))))
			return rc;
	}
	limit = a.po.time_limit_s;
	a.po.lp_text = &lp_text;
	if (!(cat = hx_cli_catalog(cli, &rc)))
		return rc;
	if ((rc = hx_cluster_load(&cluster, a.cpath, cat, &err)))
		return hx_cli_fail(&err);
	have_c = 1;
	if ((rc = hx_workload_load(&w, a.wpath, &err)))
		goto out;
	have_w = 1;
	if ((rc = resolve_model(cat, md, &a, &w, &m, &err)))
		goto out;
	pb = (hx_problem){cat,     &cluster,        &w, &m, (uint64_t)a.seed, a.cpath,
			  a.wpath, cli->calibration};
	if (a.tolerate > 0) {
		if ((rc = hx_tolerate_cluster(CMD, &cluster, strcmp(a.mode, "compose") == 0,
					      a.tolerate, &tcl, &err)))
			goto out;
		have_t = 1;
	}
	if (limit > 0)
		/* The search stops at 90% of the limit, leaving the rest to
		 * finish and write the plan; loading counts too.  Insurance
		 * takes the second half of that. */
		a.po.time_limit_s =
		    fmax((a.tolerate > 0 ? 0.45 : 0.9) * limit - (hx_now() - start), 1e-3);
	if (md->takes & TAKES_BO) {
		if (isatty(STDERR_FILENO)) {
			a.bo.progress = bo_progress;
		}
		rc =
		    plan_bo(&pb, &a.po, &a.bo, a.out, a.front_path, a.plot_path, a.table, &err);
		goto out;
	}
	if (md->takes & TAKES_LAYER_COSTS) {
		hx_pipe_opts xo = {0, 0, a.layer_costs, 0, a.weights_mem_frac, a.placement};
		rc = hx_plan_pipeline_run(&pb, &a.po, &xo, &p, NULL, &err);
	} else {
		rc = md->run(&pb, &a.po, &p, &err);
	}
	if (rc)
		goto out;
	have_p = 1;
	if (a.tolerate > 0) {
		hx_problem tpb = pb;
		tpb.cluster = &tcl;
		if ((rc = hx_plan_insure(CMD, &tpb, &cluster, &a.po, (int)a.tolerate,
					 limit > 0 ? start + 0.9 * limit : 0, &p, &err)))
			goto out;
	}
	if ((rc = write_plan(&p, &a, lp_text, &err)))
		goto out;
	hx_cli_spill_note(CMD, &p);
	hx_cli_spot_note(CMD, &p);
	if (a.table || !a.out) {
		char *text = a.table ? hx_plan_table(&p) : hx_plan_dump(&p);
		rc = hx_cli_output("-", text);
		free(text);
	}
out:
	free(lp_text);
	if (rc && err.msg[0])
		hx_cli_fail(&err);
	if (have_p)
		hx_plan_release(&p);
	if (have_w)
		hx_workload_release(&w);
	if (have_t)
		hx_cluster_release(&tcl);
	if (have_c)
		hx_cluster_release(&cluster);
	return rc;
}
