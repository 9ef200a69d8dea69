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
    "hexplan export -p plan.json --to " HX_EXPORT_TARGET_NAMES " [-c cluster.json] "
    "[--engine vllm|sglang] [--format json|sh] [--lossy] [--image IMAGE] "
    "[--model-cache PVC] [--checkpoint REPO] [--engine-version VER] [--gateway-url URL] "
    "[-o DIR|FILE|-]",
    NULL};

enum {
	OPT_TO = 2400,
	OPT_ENGINE,
	OPT_LOSSY,
	OPT_IMAGE,
	OPT_CACHE,
	OPT_CHECKPOINT,
	OPT_VERSION,
	OPT_GATEWAY
};

/* A usage error when an option (WHAT) was GIVEN but target T's flags lack
 * FLAG, naming the targets that take it ("a, b or c"); else 0. */
static int target_refuses(const hx_export_target *t, int flag, int given, const char *what)
{
	char list[128];

	if (!given || (t->flags & flag))
		return 0;
	hx_export_target_list(flag, list, sizeof(list));
	return hx_cli_usage_error(CMD, "%s is for --to %s", what, list);
}

/* A URL --gateway-url takes: http:// or https://, a host (and port), no
 * path, and nothing a shell or a YAML reader would take apart. */
static int url_ok(const char *u)
{
	const char *host = strncmp(u, "http://", 7) == 0    ? u + 7
			   : strncmp(u, "https://", 8) == 0 ? u + 8
							    : NULL;
	const char *slash;

	if (!host || !*host || *host == '/' || strpbrk(u, " \t\n\"'$`\\?#"))
		return 0;
	/* the Gateway itself: its routes match paths from "/" */
	slash = strchr(host, '/');
	return !slash || slash[1] == '\0';
}

/* A usage error when an option given is not one target T takes; else 0. */
static int check_targets(const hx_export_target *t, const hx_export_opts *eo, int have_format,
			 int have_engine)
{
	int rc;

	if ((rc = target_refuses(t, HX_EXPORT_FORMAT, have_format, "--format json|sh")) ||
	    (rc = target_refuses(t, HX_EXPORT_ENGINE, have_engine, "--engine")) ||
	    (rc = target_refuses(t, HX_EXPORT_LOSSY, eo->lossy, "--lossy")) ||
	    (rc = target_refuses(t, HX_EXPORT_IMAGE, eo->image != NULL, "--image")) ||
	    (rc = target_refuses(t, HX_EXPORT_CACHE, eo->model_cache != NULL,
				 "--model-cache")) ||
	    (rc = target_refuses(t, HX_EXPORT_CHECKPOINT, eo->checkpoint != NULL,
				 "--checkpoint")) ||
	    (rc = target_refuses(t, HX_EXPORT_VERSION, eo->engine_version != NULL,
				 "--engine-version")) ||
	    (rc = target_refuses(t, HX_EXPORT_GATEWAY, eo->gateway_url != NULL,
				 "--gateway-url")))
		return rc;
	return 0;
}

/* The words of --image, --model-cache, --checkpoint and --gateway-url: a
 * usage error when one cannot be what it names. */
static int check_words(const hx_export_opts *eo)
{
	char label[64];

	if (eo->gateway_url && !url_ok(eo->gateway_url))
		return hx_cli_usage_error(
		    CMD, "--gateway-url must be an http:// or https:// URL, not \"%s\"",
		    eo->gateway_url);
	if (eo->image && (!*eo->image || strpbrk(eo->image, " \t\n\"'$`\\")))
		return hx_cli_usage_error(CMD, "--image must be an image reference, not \"%s\"",
					  eo->image);
	if (eo->model_cache) {
		hx_dns_label(label, sizeof(label), eo->model_cache);
		if (strcmp(label, eo->model_cache) != 0)
			return hx_cli_usage_error(
			    CMD,
			    "--model-cache must name a PersistentVolumeClaim (a DNS-1123 label), not \"%s\"",
			    eo->model_cache);
	}
	if (eo->checkpoint && (!*eo->checkpoint || eo->checkpoint[0] == '-' ||
			       strpbrk(eo->checkpoint, " \t\n\"'$`\\")))
		return hx_cli_usage_error(
		    CMD, "--checkpoint must be a Hugging Face repository or a path, not \"%s\"",
		    eo->checkpoint);
	return 0;
}

/* --engine-version: a usage error unless it is a release number no older
 * than the oldest release of the engine whose flags target T knows (only
 * launch runs SGLang: the other targets' pods are vLLM's, --lossy or not). */
static int check_version(const hx_export_opts *eo, const hx_export_target *t)
{
	const char *v = eo->engine_version;
	int sglang = eo->engine == HX_ENGINE_SGLANG && strcmp(t->name, "launch") == 0;
	const char *oldest = sglang ? HX_EXPORT_SGLANG_OLDEST : HX_EXPORT_VLLM_OLDEST;

	if (!v)
		return 0;
	if (!hx_export_version_valid(v))
		return hx_cli_usage_error(
		    CMD, "--engine-version must be a release number such as %s, not \"%s\"",
		    sglang ? HX_EXPORT_SGLANG_VERSION : HX_EXPORT_VLLM_VERSION, v);
	if (hx_export_version_cmp(v, oldest) < 0)
		return hx_cli_usage_error(
		    CMD,
		    "--engine-version %s: %s releases before %s are not supported (their flags were not checked)",
		    v, sglang ? "SGLang" : "vLLM", oldest);
	return 0;
}

/* Write the export's files: one to standard output (OUT NULL or "-") or to
 * the file OUT, several into the directory OUT, all or none.  Returns 0, or
 * an exit status (a usage error printed, else ERR set). */
static int write_outputs(const char *out, const hx_export_out *xo, hx_err *err)
{
	struct stat st;
	hx_out_file *of;
	int rc;

	if (!out || strcmp(out, "-") == 0) {
		if (xo->n != 1)
			return hx_cli_usage_error(
			    CMD, "this export writes %d files: give -o DIR", xo->n);
		return hx_cli_output("-", xo->f[0].text);
	}
	if (xo->n == 1 && (stat(out, &st) != 0 || !S_ISDIR(st.st_mode)))
		return hx_write_atomic(out, xo->f[0].text, strlen(xo->f[0].text), err);
	if (mkdir(out, 0777) != 0 && errno != EEXIST)
		return hx_errf(err, HX_EINPUT, "%s: %s", out, strerror(errno));
	of = hx_xcalloc((size_t)xo->n, sizeof(*of));
	for (int i = 0; i < xo->n; i++) {
		of[i].path = hx_path_join(out, xo->f[i].name);
		of[i].data = xo->f[i].text;
		of[i].len = strlen(xo->f[i].text);
		of[i].mode = strstr(xo->f[i].name, ".sh") ? 0755 : 0;
	}
	rc = hx_write_files_atomic(of, xo->n, err);
	for (int i = 0; i < xo->n; i++)
		free((char *)of[i].path);
	free(of);
	return rc;
}

int cmd_export(hx_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"plan", required_argument, NULL, 'p'},
	    {"cluster", required_argument, NULL, 'c'},
	    {"output", required_argument, NULL, 'o'},
	    {"to", required_argument, NULL, OPT_TO},
	    {"engine", required_argument, NULL, OPT_ENGINE},
	    {"lossy", no_argument, NULL, OPT_LOSSY},
	    {"image", required_argument, NULL, OPT_IMAGE},
	    {"model-cache", required_argument, NULL, OPT_CACHE},
	    {"checkpoint", required_argument, NULL, OPT_CHECKPOINT},
	    {"engine-version", required_argument, NULL, OPT_VERSION},
	    {"gateway-url", required_argument, NULL, OPT_GATEWAY},
	    {"format", required_argument, NULL, HX_OPT_FORMAT},
	    HX_GLOBAL_LONGOPTS,
	    {NULL, 0, NULL, 0}};
	const char *ppath = NULL, *cpath = NULL, *out = NULL, *to = NULL, *format = NULL;
	hx_export_opts eo = {HX_ENGINE_VLLM, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL};
	hx_export_out xo = {0};
	hx_plan p;
	hx_cluster cl;
	hx_err err = {0};
	const hx_export_target *t;
	int c, rc = 0, have_p = 0, have_c = 0, have_engine = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:c:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': ppath = optarg; break;
		case 'c': cpath = optarg; break;
		case 'o': out = optarg; break;
		case OPT_TO: to = optarg; break;
		case OPT_LOSSY: eo.lossy = 1; break;
		case OPT_IMAGE: eo.image = optarg; break;
		case OPT_CACHE: eo.model_cache = optarg; break;
		case OPT_CHECKPOINT: eo.checkpoint = optarg; break;
		case OPT_VERSION: eo.engine_version = optarg; break;
		case OPT_GATEWAY: eo.gateway_url = optarg; break;
		case HX_OPT_FORMAT: format = optarg; break;
		case OPT_ENGINE:
			have_engine = 1;
			if (strcmp(optarg, "vllm") == 0)
				eo.engine = HX_ENGINE_VLLM;
			else if (strcmp(optarg, "sglang") == 0)
				eo.engine = HX_ENGINE_SGLANG;
			else
				return hx_cli_usage_error(
				    CMD, "--engine must be vllm or sglang, not \"%s\"", optarg);
			break;
		default:
			if ((rc = hx_cli_common(cli, CMD, c, argv, NULL)) != HX_CLI_GO)
				return rc;
		}
	}
	if (optind < argc)
		return hx_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	{
		const hx_cli_file files[] = {{"-p", ppath, 0},
					     {"-c", cpath, 0},
					     {"--calibration", cli->calibration, 0},
					     {"-o", out, 1}};
		if ((rc = hx_cli_check_files(CMD, files, (int)HX_ARRAY_LEN(files))))
			return rc;
	}
	if (!ppath || !to)
		return hx_cli_usage_error(CMD, "-p plan.json and --to TARGET are required");
	if (!(t = hx_export_target_find(to))) {
		char list[128];
		hx_export_target_list(0, list, sizeof(list));
		return hx_cli_usage_error(CMD, "--to must be %s, not \"%s\"", list, to);
	}
	if ((rc = check_targets(t, &eo, format != NULL, have_engine)))
		return rc;
	if ((rc = check_version(&eo, t)))
		return rc;
	if ((rc = check_words(&eo)))
		return rc;
	if (format) {
		if (strcmp(format, "sh") == 0)
			eo.format_sh = 1;
		else if (strcmp(format, "json") != 0)
			return hx_cli_usage_error(
			    CMD, "--format must be json or sh, not \"%s\"", format);
	}
	if ((rc = hx_plan_load(&p, ppath, &err)))
		goto out;
	have_p = 1;
	/* A picture may show a broken plan (dot draws a route to no group in
	 * red); what is deployed may not. */
	if (strcmp(t->name, "dot") != 0 && (rc = hx_cli_plan_whole(&p, ppath, &err)))
		goto out;
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
	if ((rc = hx_export_check_afd(&p, t, ppath, &err)) ||
	    (rc = hx_export_check_fragments(&p, t, ppath, &err)) ||
	    (rc = hx_export_check_ep(&p, t, ppath, &err)))
		goto out;
	if ((rc = t->fn(&p, &eo, &xo, &err)))
		goto out;
	if ((rc = write_outputs(out, &xo, &err)))
		goto out;
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
