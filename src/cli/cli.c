/* cli: see cli.h. */
#include "config.h"

#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/calib.h"
#include "plan/plan.h"
#include "plan/verify.h"

int hx_cli_global(hx_cli *cli, int opt, const char *arg)
{
	if (opt == HX_OPT_CATALOG)
		cli->catalog_dir = arg;
	else if (opt == HX_OPT_CALIBRATION)
		cli->calibration = arg;
	else
		return 0;
	return 1;
}

int hx_cli_common(hx_cli *cli, const char *cmd, int opt, char **argv, int *table)
{
	switch (opt) {
	case 'h': return hx_cli_help(cmd);
	case HX_OPT_FORMAT:
		if (table)
			return hx_cli_format(cmd, optarg, table) ? HX_EUSAGE : HX_CLI_GO;
		break;
	case ':': return hx_cli_usage_error(cmd, "%s needs an argument", argv[optind - 1]);
	case '?': return hx_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
	default:
		if (hx_cli_global(cli, opt, optarg))
			return HX_CLI_GO;
	}
	return hx_cli_usage_error(cmd, "unknown option");
}

const hx_catalog *hx_cli_catalog(hx_cli *cli, int *rc)
{
	hx_err err = {0};
	hx_calib cal;

	if (cli->loaded)
		return &cli->cat;
	if ((*rc = hx_catalog_load(&cli->cat, cli->catalog_dir, &err))) {
		hx_cli_fail(&err);
		return NULL;
	}
	if (cli->calibration) {
		if ((*rc = hx_calib_load(&cal, cli->calibration, &cli->cat, &err))) {
			hx_cli_fail(&err);
			hx_catalog_release(&cli->cat);
			return NULL;
		}
		hx_calib_apply(&cal, &cli->cat);
		hx_calib_release(&cal);
	}
	cli->loaded = 1;
	return &cli->cat;
}

void hx_cli_release(hx_cli *cli)
{
	if (cli->loaded)
		hx_catalog_release(&cli->cat);
	cli->loaded = 0;
}

int hx_cli_fail(const hx_err *err)
{
	fputs("hexplan: error: ", stderr);
	hx_fputs_escaped(err->msg, stderr);
	fputc('\n', stderr);
	return err->code ? err->code : HX_EINPUT;
}

/* Whether A and B name one file: the same path, or one existing regular
 * file (devices and pipes may be named twice; "-" is judged by name). */
static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (strcmp(a, "-") == 0 || strcmp(b, "-") == 0)
		return strcmp(a, b) == 0;
	if (stat(a, &sa) != 0 || stat(b, &sb) != 0)
		return strcmp(a, b) == 0;
	if (!S_ISREG(sa.st_mode) || !S_ISREG(sb.st_mode))
		return 0;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int hx_cli_check_files(const char *cmd, const hx_cli_file *f, int n)
{
	for (int i = 0; i < n; i++) {
		if (!f[i].path)
			continue;
		for (int j = 0; j < i; j++) {
			if (!f[j].path || !same_file(f[i].path, f[j].path))
				continue;
			if (!f[i].output && !f[j].output) {
				if (strcmp(f[i].path, "-") == 0)
					return hx_cli_usage_error(
					    cmd,
					    "%s and %s both read standard input ('-' can be "
					    "read once)",
					    f[j].opt, f[i].opt);
				continue; /* one file read twice is harmless */
			}
			if (f[i].output != f[j].output && strcmp(f[i].path, "-") == 0)
				continue; /* stdin and stdout */
			return hx_cli_usage_error(cmd, "%s and %s name the same file", f[j].opt,
						  f[i].opt);
		}
	}
	return 0;
}

static const hx_command *find_command(const char *name)
{
	for (const hx_command *c = hx_commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

static void print_usage(FILE *f, const char *cmd)
{
	const hx_command *c = find_command(cmd);

	for (int i = 0; c && c->usage[i]; i++)
		fprintf(f, "%s%s\n", i ? "       " : "usage: ", c->usage[i]);
}

int hx_cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	char msg[1024];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fputs("hexplan: error: ", stderr);
	hx_fputs_escaped(msg, stderr);
	fputc('\n', stderr);
	print_usage(stderr, cmd);
	return HX_EUSAGE;
}

int hx_cli_help(const char *cmd)
{
	const hx_command *c = find_command(cmd);

	print_usage(stdout, cmd);
	if (c)
		printf("\n%s\nSee hexplan(1) for every option.\n", c->summary);
	return 0;
}

int hx_cli_int(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < lo || v > hi)
		return hx_cli_usage_error(
		    cmd, "%s must be an integer from %ld to %ld, not \"%s\"", opt, lo, hi, s);
	*out = v;
	return 0;
}

int hx_cli_num(const char *cmd, const char *opt, const char *s, double lo, double hi,
	       double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	/* Decimal only, as in every input file: strtod also reads "0x10",
	 * " 5" and "infinity". */
	if (!*s || *end || errno || !isfinite(v) || v < lo || v > hi ||
	    s[strspn(s, "0123456789.eE+-")])
		return hx_cli_usage_error(cmd, "%s must be a number from %g to %g, not \"%s\"",
					  opt, lo, hi, s);
	*out = v;
	return 0;
}

int hx_cli_format(const char *cmd, const char *s, int *table)
{
	if (strcmp(s, "json") == 0)
		*table = 0;
	else if (strcmp(s, "table") == 0)
		*table = 1;
	else
		return hx_cli_usage_error(cmd, "--format must be json or table, not \"%s\"", s);
	return 0;
}

int hx_cli_output(const char *path, const char *text)
{
	hx_err err = {0};

	if (hx_write_atomic(path ? path : "-", text, strlen(text), &err))
		return hx_cli_fail(&err);
	return 0;
}

int hx_cli_plan_whole(const hx_plan *p, const char *path, hx_err *err)
{
	hx_violation *v = NULL;
	int n = 0, bad = -1;

	hx_verify_plan(p, NULL, &v, &n);
	/* Only what would make the output nonsense: a picture or a manifest
	 * of a plan that spans nodes without cross_node, or whose tp does not
	 * divide the heads, still says what the plan is. */
	for (int i = 0; i < n && bad < 0; i++)
		if (v[i].cls == HX_V_ROUTING || v[i].cls == HX_V_DUP_REPLICA ||
		    v[i].cls == HX_V_UNDECLARED || v[i].cls == HX_V_TP_COUNT)
			bad = i;
	if (bad >= 0)
		hx_errf(err, HX_EINPUT, "%s: %s: %s", hx_display_path(path), v[bad].ptr,
			v[bad].msg);
	free(v);
	return bad >= 0 ? HX_EINPUT : 0;
}

void hx_cli_spot_note(const char *cmd, const hx_plan *p)
{
	char line[320];

	if (!p->spot.on)
		return;
	hx_plan_spot_line(p, line, sizeof(line));
	fprintf(stderr, "hexplan: %s: %s\n", cmd, line);
}

void hx_cli_spill_note(const char *cmd, const hx_plan *p)
{
	const hx_plan_spill *s = &p->spill;
	const char *sep = "";

	if (s->nsubst == 0)
		return;
	fprintf(stderr, "hexplan: %s: spill-over: short:", cmd);
	for (int i = 0; i < s->nsubst; i++)
		if (s->subst[i].gpus < s->subst[i].preferred_gpus) {
			fprintf(stderr, "%s %s (%d GPUs of the %d preferred)", sep,
				s->subst[i].gpu, s->subst[i].gpus, s->subst[i].preferred_gpus);
			sep = ",";
		}
	fprintf(stderr, "; used instead:");
	sep = "";
	for (int i = 0; i < s->nsubst; i++)
		if (s->subst[i].gpus > s->subst[i].preferred_gpus) {
			fprintf(stderr, "%s %s (%d GPUs, %d preferred)", sep, s->subst[i].gpu,
				s->subst[i].gpus, s->subst[i].preferred_gpus);
			sep = ",";
		}
	fprintf(stderr, "; %+.3f USD/h against the preferred plan's %.3f USD/h\n",
		s->usd_per_hour_delta, s->preferred_usd_per_hour);
}
