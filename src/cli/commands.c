/*
 * commands: the command table and hx_main(), which parses the global
 * options and dispatches to one cmd_<name>() per subcommand.  main() (main.c)
 * calls it once; the command-layer fuzz harness (fuzz/fuzz_cli.c) once per
 * input.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"

/* Only commands that work are listed. */
const hx_command hx_commands[] = {
    {"plan", cmd_plan, "Plan a deployment of a model on a cluster for a workload.",
     hx_plan_usage},
    {"simulate", cmd_simulate, "Replay requests against a plan and report what it delivers.",
     hx_simulate_usage},
    {"check", cmd_check, "Verify a plan against its cluster, independently of the planners.",
     hx_check_usage},
    {"replan", cmd_replan,
     "Adapt a plan to a changed cluster or workload, moving as little as possible.",
     hx_replan_usage},
    {"schedule", cmd_schedule,
     "Plan each period of a changing load at least cost, with few moves between periods.",
     hx_schedule_usage},
    {"trace", cmd_trace, "Write a synthetic request trace.", hx_trace_usage},
    {"export", cmd_export,
     "Write launch commands, Kubernetes or KServe manifests, or a picture of a plan.",
     hx_export_usage},
    {"estimate", cmd_estimate,
     "Predict latency, memory and capacity of one replica configuration.", hx_estimate_usage},
    {"calibrate", cmd_calibrate, "Fit the cost model's GPU constants to measured timings.",
     hx_calibrate_usage},
    {"profiles", cmd_profiles, "List or show the GPU and model profiles.", hx_profiles_usage},
    {"validate", cmd_validate, "Check input files strictly and summarize them.",
     hx_validate_usage},
    {NULL, NULL, NULL, NULL}};

static void main_usage(FILE *f)
{
	fprintf(f, "usage: hexplan [--catalog DIR] [--calibration FILE] <command> [<options>]\n"
		   "       hexplan --help | --version\n\n");
	for (const hx_command *c = hx_commands; c->name; c++)
		for (int i = 0; c->usage[i]; i++)
			fprintf(f, "  %s\n", c->usage[i]);
	fprintf(f, "\ncommands:\n");
	for (const hx_command *c = hx_commands; c->name; c++)
		fprintf(f, "  %-10s %s\n", c->name, c->summary);
	fprintf(f, "\nglobal options (before or after the command):\n"
		   "  --catalog DIR       replace the built-in GPU/model catalog with DIR's\n"
		   "                      gpus.json and models.json\n"
		   "  --calibration FILE  apply a calibration written by 'hexplan calibrate'\n"
		   "  -h, --help          show this help (or a command's)\n"
		   "  --version           print the version\n\n"
		   "exit status: 0 ok, 1 error, 2 usage, 3 infeasible, 4 limit reached,\n"
		   "             5 plan written but short of the rate (replan)\n");
}

int hx_main(int argc, char **argv)
{
	hx_cli cli = {0};
	int i, rc;

	/* jansson's allocations fail as hexplan's own do: one line, abort. */
	json_set_alloc_funcs(hx_xmalloc, free);

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			main_usage(stdout);
			return 0;
		}
		if (strcmp(a, "--version") == 0) {
			printf("hexplan %s\n", PACKAGE_VERSION);
			return 0;
		}
		if ((strcmp(a, "--catalog") == 0 || strcmp(a, "--calibration") == 0)) {
			if (i + 1 >= argc) {
				fprintf(stderr, "hexplan: error: %s needs an argument\n", a);
				return HX_EUSAGE;
			}
			hx_cli_global(&cli,
				      strcmp(a, "--catalog") == 0 ? HX_OPT_CATALOG
								  : HX_OPT_CALIBRATION,
				      argv[++i]);
			continue;
		}
		if (strncmp(a, "--catalog=", 10) == 0) {
			cli.catalog_dir = a + 10;
			continue;
		}
		if (strncmp(a, "--calibration=", 14) == 0) {
			cli.calibration = a + 14;
			continue;
		}
		break;
	}
	if (i >= argc) {
		main_usage(stderr);
		return HX_EUSAGE;
	}
	for (const hx_command *c = hx_commands; c->name; c++) {
		if (strcmp(c->name, argv[i]) == 0) {
			rc = c->fn(&cli, argc - i, argv + i);
			hx_cli_release(&cli);
			return rc;
		}
	}
	{
		hx_err e;
		hx_errf(&e, HX_EUSAGE, "'%s' is not a hexplan command (see 'hexplan --help')",
			argv[i]);
		return hx_cli_fail(&e);
	}
}
