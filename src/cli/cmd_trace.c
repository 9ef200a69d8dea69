/* trace: write a synthetic request trace from a workload or a length shape. */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "model/gen.h"
#include "model/problem.h"

#define CMD "trace"

const char *const hx_trace_usage[] = {
    "hexplan trace (-w workload.json [--rate R] | --rate R --shape conversation|code|FILE) "
    "--duration S [--seed N] [-o trace.csv]",
    NULL};

enum { OPT_RATE = 2200, OPT_SHAPE, OPT_DURATION, OPT_SEED };

int cmd_trace(hx_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"workload", required_argument, NULL, 'w'},
	    {"rate", required_argument, NULL, OPT_RATE},
	    {"shape", required_argument, NULL, OPT_SHAPE},
	    {"duration", required_argument, NULL, OPT_DURATION},
	    {"seed", required_argument, NULL, OPT_SEED},
	    {"output", required_argument, NULL, 'o'},
	    HX_GLOBAL_LONGOPTS,
	    {NULL, 0, NULL, 0}};
	const char *wpath = NULL, *shape = NULL, *out = NULL;
	double rate_rps = 0, duration_s = 0;
	long seed = 1;
	int c, rc = 0, have_rate = 0, have_duration = 0;
	hx_err err = {0};
	hx_trace t = {0};
	char *text = NULL;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":w:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'w': wpath = optarg; break;
		case 'o': out = optarg; break;
		case OPT_SHAPE: shape = optarg; break;
		case OPT_RATE:
			if (hx_cli_num(CMD, "--rate", optarg, 1e-6, 1e6, &rate_rps))
				return HX_EUSAGE;
			have_rate = 1;
			break;
		case OPT_DURATION:
			if (hx_cli_num(CMD, "--duration", optarg, 1e-6, 1e8, &duration_s))
				return HX_EUSAGE;
			have_duration = 1;
			break;
		case OPT_SEED:
			if (hx_cli_int(CMD, "--seed", optarg, 0, LONG_MAX, &seed))
				return HX_EUSAGE;
			break;
		default:
			if ((rc = hx_cli_common(cli, CMD, c, argv, NULL)) != HX_CLI_GO)
				return rc;
		}
	}
	if (optind < argc)
		return hx_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	{
		const hx_cli_file files[] = {
		    {"-w", wpath, 0},
		    {"--shape",
		     shape && strcmp(shape, "conversation") && strcmp(shape, "code") ? shape
										     : NULL,
		     0},
		    {"--calibration", cli->calibration, 0},
		    {"-o", out, 1}};
		if ((rc = hx_cli_check_files(CMD, files, (int)HX_ARRAY_LEN(files))))
			return rc;
	}
	if (wpath && shape)
		return hx_cli_usage_error(CMD, "give -w or --shape, not both");
	if (!wpath && !shape)
		return hx_cli_usage_error(CMD, "give -w workload.json or --shape");
	if (shape && !have_rate)
		return hx_cli_usage_error(CMD, "--shape needs --rate");
	if (!have_duration)
		return hx_cli_usage_error(CMD, "--duration is required");

	if (wpath) {
		hx_workload w;
		if ((rc = hx_workload_load(&w, wpath, &err)))
			goto out;
		if (!have_rate)
			rate_rps = w.rate_rps;
		rc = hx_gen_workload(&w, rate_rps, 0, duration_s, (uint64_t)seed, &t, &err);
		hx_workload_release(&w);
	} else if (strcmp(shape, "conversation") == 0 || strcmp(shape, "code") == 0) {
		int s = strcmp(shape, "code") == 0 ? HX_SHAPE_CODE : HX_SHAPE_CONVERSATION;
		rc = hx_gen_shape(s, NULL, rate_rps, duration_s, (uint64_t)seed, &t, &err);
	} else {
		hx_trace sample;
		if ((rc = hx_trace_load(&sample, shape, &err)))
			goto out;
		rc = hx_gen_shape(HX_SHAPE_CONVERSATION, &sample, rate_rps, duration_s,
				  (uint64_t)seed, &t, &err);
		hx_trace_release(&sample);
	}
	if (rc)
		goto out;
	if (t.n == 0) {
		/* A header alone is not a trace hexplan would read back. */
		rc = hx_errf(
		    &err, HX_EINPUT,
		    "no request arrives within %g s at %g req/s: give a longer --duration",
		    duration_s, rate_rps);
		goto out;
	}
	text = hx_trace_csv(&t);
	if ((rc = hx_cli_output(out, text)))
		goto out;
	if (out && strcmp(out, "-") != 0)
		fprintf(stderr, "hexplan: wrote %d requests over %g s (%.3g req/s)\n", t.n,
			duration_s, t.n / duration_s);
out:
	free(text);
	hx_trace_release(&t);
	if (rc && err.msg[0])
		return hx_cli_fail(&err);
	return rc;
}
