/*
 * cli: what the commands share — the command table's entry type, global
 * options (--catalog, --calibration), the lazily loaded catalog, argument
 * parsing and the one place that prints errors.
 *
 * The command layer (src/cli/: main.c, commands.c with the command table, cli.c, one
 * cmd_<name>.c per command with its own usage text) is the only one that
 * prints, reads options and picks exit codes; it may include every layer.
 */
#ifndef HX_CLI_H
#define HX_CLI_H

#include <getopt.h>

#include "model/catalog.h"
#include "base/util.h"

typedef struct hx_cli {
	const char *catalog_dir;
	const char *calibration;
	hx_catalog cat;
	int loaded;
} hx_cli;

typedef struct hx_command {
	const char *name;
	int (*fn)(hx_cli *cli, int argc, char **argv);
	const char *summary;
	const char *const *usage; /* synopsis lines, NULL-terminated */
} hx_command;

extern const hx_command hx_commands[];

/* Parse the global options of ARGV and run its command; returns the exit
 * status (commands.c).  Called once per process but by the fuzz harness. */
int hx_main(int argc, char **argv);

/* The commands and their synopsis lines (cmd_<name>.c). */
int cmd_estimate(hx_cli *cli, int argc, char **argv);
int cmd_calibrate(hx_cli *cli, int argc, char **argv);
/* calibrate --runs (calibrate_serving.c): fit to serving benchmarks. */
struct hx_servfit_opts;
int hx_calibrate_serving(hx_cli *cli, const char *runs, const char *holdout,
			 const struct hx_servfit_opts *opts, const char *out_path,
			 int as_table);
int cmd_profiles(hx_cli *cli, int argc, char **argv);
int cmd_validate(hx_cli *cli, int argc, char **argv);
int cmd_plan(hx_cli *cli, int argc, char **argv);

/* schedule --plot (schedule_plot.c): a period's figures and the SVG of
 * the day drawn from them (a new string; free it). */
typedef struct hx_sched_pt {
	double start_s, duration_s, rate_rps, capacity_rps, usd_per_hour;
} hx_sched_pt;
char *hx_schedule_svg(const char *title, const hx_sched_pt *pt, int n);

/* simulate --capacity --plot (schedule_plot.c): the SVG of the N rates
 * the capacity search tried (sim.h's hx_cap_point; a new string; free
 * it). */
struct hx_cap_point;
char *hx_capacity_svg(const char *title, const struct hx_cap_point *pt, int n, double target,
		      double capacity);

/* plan --mode auto (plan_auto.c): one candidate per mode tried. */
typedef struct hx_auto_candidate {
	char mode[16];
	int ok, chosen;
	double predicted_rps, simulated_rps, usd_per_hour, time_s;
	char why[256]; /* why it has no plan */
} hx_auto_candidate;
#define HX_AUTO_MAX 8
struct hx_problem;
struct hx_plan_opts;
struct hx_plan;
/* Run baseline, colocated, disagg and pipeline (pipeline for --objective
 * capacity only) on PB, judge each plan by simulate --capacity with PB's
 * seed, and keep in OUT the one with the most simulated capacity (for
 * cost: the cheapest whose simulated capacity carries the workload's rate,
 * else the most capacity).  Searching modes share three quarters of O's
 * time limit.  CAND (HX_AUTO_MAX) gets every mode's figures. */
int hx_plan_auto(const struct hx_problem *pb, const struct hx_plan_opts *o, struct hx_plan *out,
		 hx_auto_candidate *cand, int *ncand, hx_err *err);
int cmd_simulate(hx_cli *cli, int argc, char **argv);
int cmd_check(hx_cli *cli, int argc, char **argv);
struct hx_cluster;
/* The K-failure evaluation that check --tolerate-failures and plan
 * --tolerate-failures share (check_tolerate.c): the sets of lost nodes (K
 * of the nodes plan P uses on PB's cluster, offers expanded; fewer, all of
 * them, when it uses no more than K) and what the kept replicas carry at
 * the SLO after each, re-routed starting nothing. */
typedef struct hx_tolerate {
	int k, nsets;     /* the sets' size and count */
	int *idx;         /* [nsets * k] node indexes of the cluster, each set ascending */
	double *cap_rps;  /* [nsets] what the kept replicas carry */
	char *short_;     /* [nsets] whether that is short of rate / HX_REPLAN_UTIL */
	int nfail, worst; /* failing sets; the first with the least capacity (-1: none) */
	char *used;       /* [nnodes] whether the plan uses the node */
} hx_tolerate;
/* Fill T (release with hx_tolerate_release) for plan P against PB's
 * workload; SEED draws the sampled sets (K > 1).  Prints nothing.
 * Returns 0, or an error in ERR (a plan that cannot be re-routed). */
int hx_tolerate_eval(const struct hx_problem *pb, const struct hx_plan *p, int k, uint64_t seed,
		     hx_tolerate *t, hx_err *err);
void hx_tolerate_release(hx_tolerate *t);
/* "node \"a\"" or "nodes \"a\", \"b\"" for set I of T on CL, into B. */
void hx_tolerate_set_name(hx_buf *b, const struct hx_cluster *cl, const hx_tolerate *t, int i);
/* check --tolerate-failures K (check_tolerate.c): re-route plan P, as
 * replan does but starting nothing, on PB's cluster (offers expanded) less
 * each set of K nodes the plan uses, and judge the kept capacity against
 * PB's workload's rate with replan's margin.  Prints the nodes the plan
 * does not use, each failing set and a summary on stderr; *SUMMARY gets
 * them as a new JSON object, *NFAIL the failing sets' count.  SEED draws
 * the sampled sets (K > 1).  Returns 0, or an error in ERR (a plan that
 * cannot be re-routed). */
struct json_t;
int hx_check_tolerate(const struct hx_problem *pb, const struct hx_plan *p, int k,
		      uint64_t seed, struct json_t **summary, int *nfail, hx_err *err);
/* plan and schedule --tolerate-failures K (plan_tolerate.c): add to plan P, planned on
 * PB (its cluster with offers expanded; OWNED the cluster as loaded), the
 * replicas that make it pass check --tolerate-failures K with PB's seed,
 * round by round, each insuring the worst failing set by replan's
 * machinery (PO its MILP options), and record in P->tolerate what they
 * cost.  Prints the summary on stderr, after "hexplan: CMD: ".  Returns
 * 0, HX_EINFEASIBLE when a set cannot be insured (named in ERR), or an
 * error. */
int hx_plan_insure(const char *cmd, const struct hx_problem *pb, const struct hx_cluster *owned,
		   const struct hx_plan_opts *po, int k, double deadline, struct hx_plan *p,
		   hx_err *err);
/* The cluster --tolerate-failures K insures against into *X, as check
 * loads it: CL's offers expanded into nodes (COMPOSE: owned nodes free at
 * the margin, as compose prices them), else CL's nodes without offers; K
 * checked against its nodes.  Returns 0, the exit status of a usage error
 * (printed, naming CMD), or an error in ERR. */
int hx_tolerate_cluster(const char *cmd, const struct hx_cluster *cl, int compose, long k,
			struct hx_cluster *x, hx_err *err);
int cmd_trace(hx_cli *cli, int argc, char **argv);
int cmd_export(hx_cli *cli, int argc, char **argv);
int cmd_replan(hx_cli *cli, int argc, char **argv);
int cmd_schedule(hx_cli *cli, int argc, char **argv);
extern const char *const hx_plan_usage[];
extern const char *const hx_simulate_usage[];
extern const char *const hx_check_usage[];
extern const char *const hx_replan_usage[];
extern const char *const hx_schedule_usage[];
extern const char *const hx_trace_usage[];
extern const char *const hx_export_usage[];
extern const char *const hx_estimate_usage[];
extern const char *const hx_calibrate_usage[];
extern const char *const hx_profiles_usage[];
extern const char *const hx_validate_usage[];

/* Long-option values shared by every command. */
enum { HX_OPT_CATALOG = 1000, HX_OPT_CALIBRATION, HX_OPT_FORMAT, HX_OPT_HELP = 'h' };
#define HX_GLOBAL_LONGOPTS                                                                     \
	{"catalog", required_argument, NULL, HX_OPT_CATALOG},                                  \
	    {"calibration", required_argument, NULL, HX_OPT_CALIBRATION},                      \
	{                                                                                      \
		"help", no_argument, NULL, 'h'                                                 \
	}

/* What hx_cli_common returns when the option was an ordinary one. */
#define HX_CLI_GO (-1)
/* Handle what every command's getopt loop shares: -h (prints the usage),
 * --format (TABLE may be NULL when the command has none), the global
 * options, and getopt's ':' and '?'.  Returns HX_CLI_GO to go on, or the
 * exit code to return now. */
int hx_cli_common(hx_cli *cli, const char *cmd, int opt, char **argv, int *table);
/* Handle a global option: 1 if OPT was one. */
int hx_cli_global(hx_cli *cli, int opt, const char *arg);
/* The catalog, with the calibration applied; NULL after printing an error
 * (*RC gets the exit code). */
const hx_catalog *hx_cli_catalog(hx_cli *cli, int *rc);
void hx_cli_release(hx_cli *cli);

/* Print "hexplan: error: MSG" and return ERR's code. */
int hx_cli_fail(const hx_err *err);
/* Print an error and the command's usage to stderr; return HX_EUSAGE. */
int hx_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Print the command's usage to stdout (for --help); return 0. */
int hx_cli_help(const char *cmd);

/* Parse an integer/number option value; on failure print a usage error
 * naming OPT and return HX_EUSAGE. */
int hx_cli_int(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out);
int hx_cli_num(const char *cmd, const char *opt, const char *s, double lo, double hi,
	       double *out);
/* --format json|table: 0 json, 1 table; HX_EUSAGE printed when neither. */
int hx_cli_format(const char *cmd, const char *s, int *table);
/* A file a command reads (OUTPUT 0) or writes (1), named by option OPT;
 * PATH NULL when the option was not given. */
typedef struct hx_cli_file {
	const char *opt;
	const char *path;
	int output;
} hx_cli_file;
/* The one check every command makes on its files: no two outputs and no
 * output and input name the same file (the same path, or the same regular
 * file by device and inode), and "-" is read at most once and written at
 * most once.  Devices (/dev/null) may be named twice.  Returns 0, or
 * HX_EUSAGE with the usage error printed. */
int hx_cli_check_files(const char *cmd, const hx_cli_file *f, int n);

/* Whether plan P (read from PATH) is whole in itself: hx_verify_plan's
 * routing, replica-id, undeclared-name and GPU-count rules, which need no
 * cluster.  Returns 0, or HX_EINPUT with ERR set to the first violation as
 * "PATH: POINTER: message" (a plan that routes to no group or by a
 * negative weight is not exported or adapted). */
int hx_cli_plan_whole(const struct hx_plan *p, const char *path, hx_err *err);

/* When plan P substituted GPU types (P->spill), say which and what that
 * costs against the preferred plan, one line on stderr after
 * "hexplan: CMD: ". */
void hx_cli_spill_note(const char *cmd, const struct hx_plan *p);
/* One line on standard error for a plan with a spot section: the
 * probability that the SLO holds and the expected cost. */
void hx_cli_spot_note(const char *cmd, const struct hx_plan *p);

/* Write a finished text to PATH ("-" or NULL: stdout), atomically. */
int hx_cli_output(const char *path, const char *text);

#endif
