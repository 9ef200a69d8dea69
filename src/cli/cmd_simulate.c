/* simulate: replay requests against a plan and report what it delivers. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "model/gen.h"
#include "base/jsonio.h"
#include "plan/plan.h"
#include "sim/sim.h"

#define CMD "simulate"

const char *const hx_simulate_usage[] = {
    "hexplan simulate -p plan.json -w workload.json [-t trace.csv] [--requests N] [--rate R] "
    "[--capacity [--precision F] [--plot FILE.svg]] [--seed N] [--preempt-spot] [-o report.json] [--per-request FILE] [--format json|table]",
    NULL};

enum {
	OPT_REQUESTS = 2300,
	OPT_RATE,
	OPT_CAPACITY,
	OPT_SEED,
	OPT_PER_REQUEST,
	OPT_PREEMPT_SPOT,
	OPT_PLOT,
	OPT_PRECISION
};

static void progress(double done, void *ctx)
{
	(void)ctx;
	fprintf(stderr, "\rhexplan: simulating: %3.0f%%", done * 100);
	if (done >= 1)
		fputc('\n', stderr);
}

static json_t *pct_json(double mean, const double v[4])
{
	static const char *const k[] = {"p50", "p90", "p95", "p99"};
	json_t *o = json_object();
	hx_jset_num(o, "mean", mean);
	for (int i = 0; i < 4; i++)
		hx_jset_num(o, k[i], v[i]);
	return o;
}

static json_t *report_json(const hx_plan *p, const hx_workload *w, const hx_sim_report *r,
			   int capacity, double cap_rps, int spot)
{
	json_t *o = json_object(), *x, *a;

	if (capacity) {
		hx_jset_num(o, "capacity_rps", cap_rps);
		hx_jset_num(o, "capacity_se_rps", r->capacity_se_rps);
		/* The rates the search tried, in its order. */
		a = json_array();
		for (int i = 0; i < r->ncurve; i++) {
			const hx_cap_point *c = &r->curve[i];
			json_t *co = json_object();
			hx_jset_num(co, "rate_rps", c->rate_rps);
			hx_jset_num(co, "attainment", c->attainment);
			hx_jset_num(co, "attainment_se", c->attainment_se);
			hx_jset_int(co, "requests", c->requests);
			hx_jset_int(co, "judged", c->judged);
			json_object_set_new(co, "meets", json_boolean(c->meets));
			json_array_append_new(a, co);
		}
		json_object_set_new(o, "curve", a);
	}
	x = json_object();
	hx_jset_int(x, "total", r->requests);
	hx_jset_int(x, "finished", r->finished);
	hx_jset_int(x, "dropped", r->dropped);
	hx_jset_int(x, "preemptions", r->preemptions);
	json_object_set_new(o, "requests", x);
	hx_jset_num(o, "offered_rps", r->offered_rps);
	hx_jset_num(o, "duration_s", r->makespan_s);
	x = json_object();
	hx_jset_num(x, "ttft_ms", w->slo.ttft_ms);
	hx_jset_num(x, "tpot_ms", w->slo.tpot_ms);
	hx_jset_num(x, "attainment_target", w->slo.attainment);
	json_object_set_new(o, "slo", x);
	hx_jset_num(o, "slo_attainment", r->slo_attainment);
	hx_jset_num(o, "goodput_rps", r->goodput_rps);
	hx_jset_num(o, "throughput_tps", r->throughput_tps);
	json_object_set_new(o, "ttft_ms", pct_json(r->ttft_mean_ms, r->ttft_ms));
	json_object_set_new(o, "tpot_ms", pct_json(r->tpot_mean_ms, r->tpot_ms));
	json_object_set_new(o, "e2e_ms", pct_json(r->e2e_mean_ms, r->e2e_ms));
	a = json_array();
	for (int g = 0; g < r->ngroups; g++) {
		json_t *go = json_object();
		hx_jset_str(go, "group", p->groups[g].name);
		hx_jset_num(go, "utilization", r->groups[g].utilization);
		hx_jset_int(go, "finished", r->groups[g].finished);
		if (p->groups[g].afd.on) {
			hx_jset_num(go, "decode_batch", r->groups[g].decode_batch);
			hx_jset_num(go, "decode_context", r->groups[g].decode_context);
		}
		json_array_append_new(a, go);
	}
	json_object_set_new(o, "groups", a);
	hx_jset_num(o, "usd_per_hour", r->usd_per_hour);
	hx_jset_num(o, "usd_per_m_tokens", r->usd_per_m_tokens);
	hx_jset_int(o, "iterations", r->iterations);
	if (spot) {
		x = json_object();
		hx_jset_int(x, "preemptions", r->spot_preemptions);
		hx_jset_int(x, "requests_moved", r->spot_moved);
		json_object_set_new(o, "spot", x);
	}
	return o;
}

static char *report_table(const hx_plan *p, const hx_workload *w, const hx_sim_report *r,
			  int capacity, double cap_rps, int spot)
{
	hx_buf t = {0};

	if (capacity) {
		hx_buf_printf(
		    &t,
		    "capacity at the SLO: %.3f req/s, standard error %.3f (plan predicted "
		    "%.3f)\n",
		    cap_rps, r->capacity_se_rps, p->predicted.capacity_rps);
		for (int i = 0; i < r->ncurve; i++)
			hx_buf_printf(
			    &t,
			    "tried        %.3f req/s: attainment %.4f over %ld of %ld "
			    "requests, %s\n",
			    r->curve[i].rate_rps, r->curve[i].attainment, r->curve[i].judged,
			    r->curve[i].requests,
			    r->curve[i].meets ? "meets the target" : "misses it");
	}
	hx_buf_printf(
	    &t,
	    "requests     %ld offered at %.3f req/s: %ld finished, %ld dropped, %ld preemptions\n",
	    r->requests, r->offered_rps, r->finished, r->dropped, r->preemptions);
	hx_buf_printf(
	    &t,
	    "slo          ttft %.0f ms, tpot %.0f ms: attainment %.4f (target %.4f), goodput %.3f req/s\n",
	    w->slo.ttft_ms, w->slo.tpot_ms, r->slo_attainment, w->slo.attainment,
	    r->goodput_rps);
	hx_buf_printf(&t, "throughput   %.1f tokens/s over %.1f s\n", r->throughput_tps,
		      r->makespan_s);
	hx_buf_printf(&t, "%-12s %10s %10s %10s %10s %10s\n", "ms", "mean", "p50", "p90", "p95",
		      "p99");
	hx_buf_printf(&t, "%-12s %10.1f %10.1f %10.1f %10.1f %10.1f\n", "ttft", r->ttft_mean_ms,
		      r->ttft_ms[0], r->ttft_ms[1], r->ttft_ms[2], r->ttft_ms[3]);
	hx_buf_printf(&t, "%-12s %10.2f %10.2f %10.2f %10.2f %10.2f\n", "tpot", r->tpot_mean_ms,
		      r->tpot_ms[0], r->tpot_ms[1], r->tpot_ms[2], r->tpot_ms[3]);
	hx_buf_printf(&t, "%-12s %10.1f %10.1f %10.1f %10.1f %10.1f\n", "e2e", r->e2e_mean_ms,
		      r->e2e_ms[0], r->e2e_ms[1], r->e2e_ms[2], r->e2e_ms[3]);
	for (int g = 0; g < r->ngroups; g++) {
		hx_buf_printf(&t, "group %-6s utilization %.3f, %ld finished",
			      p->groups[g].name, r->groups[g].utilization,
			      r->groups[g].finished);
		if (p->groups[g].afd.on)
			hx_buf_printf(&t, ", AFD decode batch %.1f at context %.0f",
				      r->groups[g].decode_batch, r->groups[g].decode_context);
		hx_buf_printf(&t, "\n");
	}
	hx_buf_printf(&t, "cost         $%.2f/hour, $%.4f per million tokens\n",
		      r->usd_per_hour, r->usd_per_m_tokens);
	if (spot)
		hx_buf_printf(&t, "spot         %ld preemptions, %ld requests moved\n",
			      r->spot_preemptions, r->spot_moved);
	return t.s;
}

static char *records_csv(const hx_plan *p, const hx_sim_report *r)
{
	hx_buf t = {0};

	hx_buf_printf(
	    &t,
	    "id,arrival_s,input_tokens,output_tokens,group,replica,ttft_ms,tpot_ms,e2e_ms,met_slo,preemptions,escalations,dropped\n");
	for (int i = 0; i < r->nrecords; i++) {
		const hx_sim_record *x = &r->records[i];
		if (x->dropped) {
			hx_buf_printf(&t, "%d,%.6f,%d,%d,,,,,,0,%d,%d,1\n", i, x->arrival_s,
				      x->input, x->output, x->preemptions, x->escalations);
			continue;
		}
		hx_buf_printf(&t, "%d,%.6f,%d,%d,%s,%s,%.3f,%.3f,%.3f,%d,%d,%d,0\n", i,
			      x->arrival_s, x->input, x->output, p->groups[x->group].name,
			      p->groups[x->group].replicas[x->replica].id,
			      (x->first_token_s - x->arrival_s) * 1e3,
			      x->output > 1
				  ? (x->finish_s - x->first_token_s) * 1e3 / (x->output - 1)
				  : 0,
			      (x->finish_s - x->arrival_s) * 1e3, x->met_slo, x->preemptions,
			      x->escalations);
	}
	return t.s;
}

/* The simulator names what it refuses in the plan by JSON pointer: put the
 * plan's path (PPATH) in front. */
static void name_plan(const char *ppath, hx_err *err)
{
	char msg[sizeof(err->msg)];

	if (err->msg[0] != '/')
		return;
	snprintf(msg, sizeof(msg), "%s: %.900s", hx_display_path(ppath), err->msg);
	hx_strlcpy(err->msg, msg, sizeof(err->msg));
}

/* The shared check of the command's files (hx_cli_check_files). */
static int check_files(const hx_cli *cli, const char *ppath, const char *wpath,
		       const char *tpath, const char *out, const char *per, const char *plot)
{
	const hx_cli_file files[] = {
	    {"-p", ppath, 0},
	    {"-w", wpath, 0},
	    {"-t", tpath, 0},
	    {"--calibration", cli->calibration, 0},
	    {out ? "-o" : "the report (standard output without -o)", out ? out : "-", 1},
	    {"--per-request", per, 1},
	    {"--plot", plot, 1}};

	return hx_cli_check_files(CMD, files, (int)HX_ARRAY_LEN(files));
}

/* The SVG of --plot: the capacity search's curve. */
static char *capacity_plot(const hx_plan *p, const hx_workload *w, const hx_sim_report *r,
			   double cap_rps)
{
	char title[160];

	snprintf(
	    title, sizeof(title),
	    "capacity at the SLO: %.3f req/s (plan predicted %.3f), target attainment %.4g",
	    cap_rps, p->predicted.capacity_rps, w->slo.attainment);
	return hx_capacity_svg(title, r->curve, r->ncurve, w->slo.attainment, cap_rps);
}

/* --per-request, --plot and -o together: all files are replaced, or none. */
static int write_outputs(const hx_plan *p, const hx_workload *w, const hx_sim_report *r,
			 const json_t *doc, const char *per, const char *plot, double cap_rps,
			 const char *out, hx_err *err)
{
	hx_out_file f[3];
	char *csv = per ? records_csv(p, r) : NULL, *rep = out ? hx_json_dump(doc) : NULL;
	char *svg = plot ? capacity_plot(p, w, r, cap_rps) : NULL;
	int n = 0, rc;

	if (csv)
		f[n++] = (hx_out_file){per, csv, strlen(csv), 0};
	if (svg)
		f[n++] = (hx_out_file){plot, svg, strlen(svg), 0};
	if (rep)
		f[n++] = (hx_out_file){out, rep, strlen(rep), 0};
	rc = n ? hx_write_files_atomic(f, n, err) : HX_OK;
	free(csv);
	free(svg);
	free(rep);
	return rc;
}

/* The options that go with --capacity, and those that do not. */
static int check_modes(int capacity, const char *tpath, int spot, double rate, const char *plot,
		       double precision)
{
	if (capacity && tpath)
		return hx_cli_usage_error(
		    CMD, "--capacity draws its requests from the workload: no -t");
	if (capacity && spot)
		return hx_cli_usage_error(
		    CMD, "--capacity searches the rate without preemptions: no --preempt-spot");
	if (capacity && rate > 0)
		return hx_cli_usage_error(CMD,
					  "--capacity searches the rate itself: no --rate");
	if (plot && !capacity)
		return hx_cli_usage_error(
		    CMD, "--plot draws the capacity search: it goes with --capacity");
	if (precision > 0 && !capacity)
		return hx_cli_usage_error(
		    CMD, "--precision sets the capacity search's: it goes with --capacity");
	return 0;
}

/* --capacity: the search, and with --precision (PRECISION > 0) the search
 * again on longer runs until the capacity's standard error is within
 * PRECISION of it (the error falls as one over the root of the requests)
 * or the runs reach HX_CAP_MAX_REQUESTS.  R: the last search's report. */
static int capacity_search(const hx_plan *p, const hx_workload *w, long n, double precision,
			   const hx_sim_opts *o, double *cap_rps, hx_sim_report *r, hx_err *err)
{
	for (;;) {
		double want, grow;
		int rc = hx_sim_capacity(p, w, (int)n, o, cap_rps, r, err);
		if (rc)
			return rc;
		want = precision * *cap_rps;
		if (!(precision > 0) || !(r->capacity_se_rps > want) ||
		    r->requests >= HX_CAP_MAX_REQUESTS || n >= HX_CAP_MAX_REQUESTS)
			return 0;
		grow = r->capacity_se_rps / want;
		n = (long)fmin(HX_CAP_MAX_REQUESTS,
			       fmax(2.0 * r->requests, ceil(r->requests * grow * grow * 1.2)));
		hx_sim_report_release(r);
	}
}

int cmd_simulate(hx_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"plan", required_argument, NULL, 'p'},
	    {"workload", required_argument, NULL, 'w'},
	    {"trace", required_argument, NULL, 't'},
	    {"output", required_argument, NULL, 'o'},
	    {"requests", required_argument, NULL, OPT_REQUESTS},
	    {"rate", required_argument, NULL, OPT_RATE},
	    {"capacity", no_argument, NULL, OPT_CAPACITY},
	    {"seed", required_argument, NULL, OPT_SEED},
	    {"per-request", required_argument, NULL, OPT_PER_REQUEST},
	    {"preempt-spot", no_argument, NULL, OPT_PREEMPT_SPOT},
	    {"plot", required_argument, NULL, OPT_PLOT},
	    {"precision", required_argument, NULL, OPT_PRECISION},
	    {"format", required_argument, NULL, HX_OPT_FORMAT},
	    HX_GLOBAL_LONGOPTS,
	    {NULL, 0, NULL, 0}};
	const char *ppath = NULL, *wpath = NULL, *tpath = NULL, *out = NULL, *per = NULL,
		   *plot = NULL;
	long nreq = 0, seed = 1;
	double rate = 0, cap_rps = 0, precision = 0;
	int c, rc, table = 0, capacity = 0, have_p = 0, have_w = 0, have_t = 0, have_r = 0;
	hx_plan p;
	hx_workload w;
	hx_trace t;
	hx_sim_report r;
	hx_sim_opts o = {1, 0, NULL, NULL};
	hx_err err = {0};
	json_t *doc = NULL;
	char *text = NULL;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:w:t:o:h", opts, NULL)) != -1) {
		rc = 0;
		switch (c) {
		case 'p': ppath = optarg; break;
		case 'w': wpath = optarg; break;
		case 't': tpath = optarg; break;
		case 'o': out = optarg; break;
		case OPT_REQUESTS:
			rc = hx_cli_int(CMD, "--requests", optarg, 1, 50000000, &nreq);
			break;
		case OPT_RATE: rc = hx_cli_num(CMD, "--rate", optarg, 1e-9, 1e9, &rate); break;
		case OPT_CAPACITY: capacity = 1; break;
		case OPT_SEED:
			rc = hx_cli_int(CMD, "--seed", optarg, 0, 0x7fffffffL, &seed);
			break;
		case OPT_PER_REQUEST: per = optarg; break;
		case OPT_PREEMPT_SPOT: o.preempt_spot = 1; break;
		case OPT_PLOT: plot = optarg; break;
		case OPT_PRECISION:
			rc = hx_cli_num(CMD, "--precision", optarg, 1e-3, 0.5, &precision);
			break;
		default:
			if ((rc = hx_cli_common(cli, CMD, c, argv, &table)) != HX_CLI_GO)
				return rc;
			rc = 0;
		}
		if (rc)
			return rc;
	}
	if (optind < argc)
		return hx_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	if ((rc = check_files(cli, ppath, wpath, tpath, out, per, plot)))
		return rc;
	if (!ppath || !wpath)
		return hx_cli_usage_error(CMD,
					  "-p plan.json and -w workload.json are required");
	if ((rc = check_modes(capacity, tpath, o.preempt_spot, rate, plot, precision)))
		return rc;
	o.seed = (uint64_t)seed;
	if ((rc = hx_plan_load(&p, ppath, &err)))
		goto out;
	have_p = 1;
	if ((rc = hx_workload_load(&w, wpath, &err)))
		goto out;
	have_w = 1;
	if (isatty(2) && !capacity) {
		o.progress = progress;
	}
	o.keep_records = per != NULL;
	if (capacity) {
		if ((rc = capacity_search(&p, &w, nreq ? nreq : HX_CAP_REQUESTS, precision, &o,
					  &cap_rps, &r, &err)))
			goto plan_error;
	} else {
		if (tpath) {
			if ((rc = hx_trace_load(&t, tpath, &err)))
				goto out;
			have_t = 1;
			if (nreq > 0 && nreq < t.n)
				t.n = (int)nreq;
			if (rate > 0 && t.n > 1 && t.arrival_s[t.n - 1] > t.arrival_s[0]) {
				/* Stretch or squeeze the arrivals to the asked rate. */
				double span = t.arrival_s[t.n - 1] - t.arrival_s[0];
				double f = (t.n - 1) / rate / span;
				for (int i = 0; i < t.n; i++)
					t.arrival_s[i] = t.arrival_s[0] +
							 (t.arrival_s[i] - t.arrival_s[0]) * f;
			}
		} else if (w.nstages > 0 && rate <= 0 && nreq <= 0) {
			/* The workload's stages, one after another. */
			if ((rc = hx_gen_stages(&w, o.seed, &t, &err)))
				goto out;
			have_t = 1;
		} else {
			if ((rc = hx_gen_workload(&w, rate, nreq ? (int)nreq : 10000, 0, o.seed,
						  &t, &err)))
				goto out;
			have_t = 1;
		}
		if (o.progress && t.n < 100000)
			o.progress = NULL;
		if ((rc = hx_simulate(&p, &w, &t, &o, &r, &err)))
			goto plan_error;
	}
	have_r = 1;
	doc = report_json(&p, &w, &r, capacity, cap_rps, o.preempt_spot);
	if ((rc = write_outputs(&p, &w, &r, doc, per, plot, cap_rps, out, &err)))
		goto out;
	if (table || !out) {
		text = table ? report_table(&p, &w, &r, capacity, cap_rps, o.preempt_spot)
			     : hx_json_dump(doc);
		rc = hx_cli_output("-", text);
	}
	goto out;
plan_error:
	name_plan(ppath, &err);
out:
	if (rc && err.msg[0])
		hx_cli_fail(&err);
	free(text);
	json_decref(doc);
	if (have_r)
		hx_sim_report_release(&r);
	if (have_t)
		hx_trace_release(&t);
	if (have_w)
		hx_workload_release(&w);
	if (have_p)
		hx_plan_release(&p);
	return rc;
}
