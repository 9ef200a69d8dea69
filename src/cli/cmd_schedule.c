/* schedule: one plan per period of a load that changes over the day (the
 * workload's stages, or a trace binned into periods), each at the least
 * cost that carries its period's rate, with few moves between them.  A
 * period's plan follows the previous one where that costs little more than
 * the cheapest plan for its rate: surplus replicas stop and replan
 * (replan.h) re-routes the rest and starts what is missing; otherwise the
 * cheapest plan is taken as it is.  Replicas start ahead of the period
 * that needs them (their weights' bytes over their nodes' load_gbps) and
 * stop after the one that last needs them.  The planners do not call one
 * another: the wiring is here. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "base/jsonio.h"
#include "plan/plan.h"
#include "planners/colocated.h"
#include "planners/compose.h"
#include "plan/spot.h"
#include "planners/replan.h"
#include "sim/sim.h"

#define CMD "schedule"

const char *const hx_schedule_usage[] = {
    "hexplan schedule -c cluster.json -w workload.json [-m MODEL] [--mode colocated|compose] "
    "[--trace FILE --period S] [--tolerate-failures K] [--seed N] [--time-limit S] "
    "[-o schedule.json] "
    "[--plot FILE.svg] [--format json|table]",
    NULL};

enum {
	OPT_MODE = 2800,
	OPT_TRACE,
	OPT_PERIOD,
	OPT_SEED,
	OPT_TIME_LIMIT,
	OPT_PLOT,
	OPT_TOLERATE
};

/* A plan that follows the previous period's may cost this share more than
 * the cheapest plan for the rate: fewer moves are worth that much. */
#define SCHED_FOLLOW_SLACK 0.10

/* Most periods a trace may be binned into (as many as a workload's stages). */
#define SCHED_MAX_PERIODS HX_MAX_LOAD_STAGES

typedef struct period {
	double start_s, duration_s, rate_rps;
	hx_plan plan;
	int have_plan;
	int followed; /* adapted from the previous period's plan */
	int replicas, gpus, kept, started, stopped;
	double bytes;              /* weights the started replicas load */
	double startup_s;          /* the longest of their loads, before the period */
	double startup_usd;        /* the price of their GPUs while they load */
	double least_usd_per_hour; /* the cheapest plan for the rate */
} period;

typedef struct sched_args {
	const char *cpath, *wpath, *model, *trace, *out, *mode, *plot;
	double period_s, time_limit_s;
	long seed, tolerate; /* tolerate: --tolerate-failures K (0: not given) */
	int table;
} sched_args;

static int parse_args(hx_cli *cli, int argc, char **argv, sched_args *a)
{
	static const struct option opts[] = {
	    {"cluster", required_argument, NULL, 'c'},
	    {"workload", required_argument, NULL, 'w'},
	    {"model", required_argument, NULL, 'm'},
	    {"output", required_argument, NULL, 'o'},
	    {"mode", required_argument, NULL, OPT_MODE},
	    {"trace", required_argument, NULL, OPT_TRACE},
	    {"period", required_argument, NULL, OPT_PERIOD},
	    {"seed", required_argument, NULL, OPT_SEED},
	    {"time-limit", required_argument, NULL, OPT_TIME_LIMIT},
	    {"plot", required_argument, NULL, OPT_PLOT},
	    {"tolerate-failures", required_argument, NULL, OPT_TOLERATE},
	    {"format", required_argument, NULL, HX_OPT_FORMAT},
	    HX_GLOBAL_LONGOPTS,
	    {NULL, 0, NULL, 0}};
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:w:m:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': a->cpath = optarg; break;
		case 'w': a->wpath = optarg; break;
		case 'm': a->model = optarg; break;
		case 'o': a->out = optarg; break;
		case OPT_MODE: a->mode = optarg; break;
		case OPT_TRACE: a->trace = optarg; break;
		case OPT_PLOT: a->plot = optarg; break;
		case OPT_PERIOD:
			if ((rc = hx_cli_num(CMD, "--period", optarg, 1e-3, 1e9, &a->period_s)))
				return rc;
			break;
		case OPT_SEED:
			if ((rc = hx_cli_int(CMD, "--seed", optarg, 0, 0x7fffffffL, &a->seed)))
				return rc;
			break;
		case OPT_TOLERATE:
			if ((rc = hx_cli_int(CMD, "--tolerate-failures", optarg, 1, 4095,
					     &a->tolerate)))
				return rc;
			break;
		case OPT_TIME_LIMIT:
			if ((rc = hx_cli_num(CMD, "--time-limit", optarg, 1e-3, 1e7,
					     &a->time_limit_s)))
				return rc;
			break;
		default:
			if ((rc = hx_cli_common(cli, CMD, c, argv, &a->table)) != HX_CLI_GO)
				return rc;
		}
	}
	if (optind < argc)
		return hx_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	if (!a->cpath || !a->wpath)
		return hx_cli_usage_error(CMD,
					  "-c cluster.json and -w workload.json are required");
	if (strcmp(a->mode, "colocated") != 0 && strcmp(a->mode, "compose") != 0)
		return hx_cli_usage_error(
		    CMD, "--mode must be colocated or compose, not \"%s\"", a->mode);
	if (a->period_s > 0 && !a->trace)
		return hx_cli_usage_error(CMD,
					  "--period bins a trace's arrivals: it needs --trace");
	if (a->trace && !(a->period_s > 0))
		return hx_cli_usage_error(CMD,
					  "--trace needs --period S (the periods' length)");
	return HX_CLI_GO;
}

/* The periods of the load: W's stages, or TRACE's arrivals counted in bins
 * of PERIOD_S seconds.  *OUT gets a new array (free it), *N its length. */
static int load_periods(const sched_args *a, const hx_workload *w, period **out, int *n,
			hx_err *err)
{
	period *ps;
	double t = 0;

	*out = NULL;
	*n = 0;
	if (a->trace) {
		hx_trace tr;
		double last = 0;
		int rc, np;
		if ((rc = hx_trace_load(&tr, a->trace, err)))
			return rc;
		for (int i = 0; i < tr.n; i++)
			last = fmax(last, tr.arrival_s[i]);
		if (tr.n == 0 || last / a->period_s >= SCHED_MAX_PERIODS) {
			hx_trace_release(&tr);
			return hx_errf(err, HX_EINPUT,
				       "%s: %s periods of %g s: schedule plans 1 to %d periods",
				       hx_display_path(a->trace),
				       tr.n == 0 ? "no requests, no" : "more than", a->period_s,
				       SCHED_MAX_PERIODS);
		}
		np = (int)floor(last / a->period_s) + 1;
		ps = hx_xcalloc((size_t)np, sizeof(period));
		for (int i = 0; i < tr.n; i++)
			ps[(int)floor(tr.arrival_s[i] / a->period_s)].rate_rps +=
			    1 / a->period_s;
		hx_trace_release(&tr);
		for (int k = 0; k < np; k++) {
			ps[k].start_s = k * a->period_s;
			ps[k].duration_s = a->period_s;
			ps[k].rate_rps = hx_round6(ps[k].rate_rps);
		}
		*out = ps;
		*n = np;
		return 0;
	}
	if (w->nstages == 0)
		return hx_errf(
		    err, HX_EINPUT,
		    "%s: /stages: missing: schedule needs the load over time, as the "
		    "workload's \"stages\" or a trace (--trace FILE --period S)",
		    hx_display_path(a->wpath));
	ps = hx_xcalloc((size_t)w->nstages, sizeof(period));
	for (int k = 0; k < w->nstages; k++) {
		ps[k].start_s = t;
		ps[k].duration_s = w->stages[k].duration_s;
		ps[k].rate_rps = w->stages[k].rate_rps;
		t += ps[k].duration_s;
	}
	*out = ps;
	*n = w->nstages;
	return 0;
}

/* The price per hour of replica R of G's GPUs on EX (a cluster with its
 * offers expanded), and its weights' load time there: the slowest
 * load_gbps of its nodes. */
static void replica_price(const hx_cluster *ex, const hx_plan_group *g,
			  const hx_plan_replica *r, double *usd_per_hour, double *gbps)
{
	*usd_per_hour = 0;
	*gbps = 0;
	for (int s = 0; s < g->nstages; s++)
		for (int k = 0; k < r->ngpus[s]; k++) {
			int ni = hx_map_get(ex->node_names, r->gpus[s][k].node);
			double l;
			if (ni < 0)
				continue;
			*usd_per_hour += ex->nodes[ni].usd_per_hour;
			l = ex->nodes[ni].load_gbps > 0 ? ex->nodes[ni].load_gbps
							: HX_DEFAULT_LOAD_GBPS;
			*gbps = *gbps > 0 ? fmin(*gbps, l) : l;
		}
	if (!(*gbps > 0))
		*gbps = HX_DEFAULT_LOAD_GBPS;
}

static int replica_gpus(const hx_plan_group *g, const hx_plan_replica *r)
{
	int n = 0;
	for (int s = 0; s < g->nstages; s++)
		n += r->ngpus[s];
	return n;
}

/* A replica's identity across plans: its group's shape and its GPUs. */
static char *replica_key(const hx_plan_group *g, const hx_plan_replica *r)
{
	hx_buf b = {0};

	hx_buf_printf(&b, "%s|%d|%d|%d|", g->model, (int)g->role, (int)g->wdt, (int)g->kvdt);
	for (int s = 0; s < g->nstages; s++) {
		hx_buf_printf(&b, "%s:%d:%d:%d:%d[", g->stage[s].gpu, g->stage[s].tp,
			      g->stage[s].first, g->stage[s].last, g->stage[s].cross_node);
		/* The same GPUs under EP run another engine: not kept. */
		if (g->stage[s].ep > 1 || g->stage[s].dp > 1)
			hx_buf_printf(&b, "ep%d:%d:%d:%g", g->stage[s].ep, g->stage[s].dp,
				      g->stage[s].redundant_experts,
				      g->stage[s].eplb_imbalance);
		for (int k = 0; k < r->ngpus[s]; k++)
			hx_buf_printf(&b, "%s:%d,", r->gpus[s][k].node, r->gpus[s][k].index);
		hx_buf_printf(&b, "]");
	}
	return b.s;
}

/* The moves from PREV (NULL: nothing runs) to CUR's plan: replicas kept
 * (same shape on the same GPUs), started and stopped, the weights the
 * started ones load and how long that takes; their GPUs' price while they
 * load goes to *STARTUP_USD (the period before CUR's pays it). */
static void count_moves(const period *prev, period *cur, const hx_cluster *ex,
			const hx_model *m)
{
	hx_map seen = {0};
	int before = 0;

	if (prev && prev->have_plan)
		for (int g = 0; g < prev->plan.ngroups; g++)
			for (int r = 0; r < prev->plan.groups[g].nreplicas; r++) {
				char *k = replica_key(&prev->plan.groups[g],
						      &prev->plan.groups[g].replicas[r]);
				hx_map_put(&seen, k, 1);
				free(k);
				before++;
			}
	if (cur->have_plan)
		for (int g = 0; g < cur->plan.ngroups; g++) {
			const hx_plan_group *grp = &cur->plan.groups[g];
			for (int r = 0; r < grp->nreplicas; r++) {
				char *k = replica_key(grp, &grp->replicas[r]);
				double usd, gbps, bytes, secs;
				int kept = hx_map_get(&seen, k) >= 0;
				free(k);
				cur->replicas++;
				cur->gpus += replica_gpus(grp, &grp->replicas[r]);
				if (kept) {
					cur->kept++;
					continue;
				}
				replica_price(ex, grp, &grp->replicas[r], &usd, &gbps);
				bytes = hx_model_weight_bytes(m, grp->wdt);
				secs = hx_weights_load_s(m, grp->wdt, gbps);
				cur->started++;
				cur->bytes += bytes;
				cur->startup_s = fmax(cur->startup_s, secs);
				cur->startup_usd += usd * secs / 3600;
			}
		}
	cur->stopped = before - cur->kept;
	hx_map_release(&seen);
}

/* A replica that may stop: group G, replica R, its capacity and price. */
typedef struct spare {
	int g, r;
	double cap, usd;
} spare;

/* Least capacity per dollar first; ties: the later replica first. */
static int cmp_spare(const void *a, const void *b)
{
	const spare *x = a, *y = b;
	double ex = x->cap > 0 ? x->usd / x->cap : INFINITY;
	double ey = y->cap > 0 ? y->usd / y->cap : INFINITY;
	if (ex != ey)
		return ex > ey ? -1 : 1;
	if (x->g != y->g)
		return y->g - x->g;
	return y->r - x->r;
}

/* Which replicas of P stop so that the rest still carries NEED req/s by
 * the capacities P records (per replica of each group, scaled by P's
 * predicted capacity over their sum): STOP[g][r] set for each, from the
 * least capacity per dollar on.  Returns how many stop. */
static int choose_stops(const hx_plan *p, const hx_cluster *ex, double need, char **stop)
{
	spare *s;
	double sum = 0, scale = 1, gbps;
	int n = 0, nstop = 0;

	for (int g = 0; g < p->ngroups; g++)
		n += p->groups[g].nreplicas;
	s = hx_xcalloc((size_t)n + 1, sizeof(spare));
	n = 0;
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++) {
			s[n] = (spare){g, r, p->groups[g].capacity_rps, 0};
			replica_price(ex, &p->groups[g], &p->groups[g].replicas[r], &s[n].usd,
				      &gbps);
			sum += s[n++].cap;
		}
	if (sum > 0 && p->predicted.capacity_rps > 0)
		scale = fmin(1, p->predicted.capacity_rps / sum);
	qsort(s, (size_t)n, sizeof(spare), cmp_spare);
	for (int i = 0; i < n; i++)
		if ((sum - s[i].cap) * scale >= need && sum - s[i].cap > 0) {
			stop[s[i].g][s[i].r] = 1;
			sum -= s[i].cap;
			nstop++;
		}
	free(s);
	return nstop;
}

/* Ingress of plan document J (P dumped) after replicas stopped: each
 * route's weight scaled by the share of its group's replicas left (KEPT[g]
 * of P's group g), routes to groups left empty dropped, and the weights of
 * each class (none: all traffic) made to sum to 1.  Returns 0, or -1 when
 * a class loses every route. */
static int reweigh(json_t *j, const hx_plan *p, const int *kept)
{
	json_t *in = json_object_get(json_object_get(j, "routing"), "ingress"), *e;
	size_t n = json_array_size(in), i;
	hx_route *rt = hx_xcalloc(n + 1, sizeof(hx_route));
	int *idx = hx_xcalloc(n + 1, sizeof(int)), bad = 0;

	for (i = n; i-- > 0;) {
		const char *grp =
		    json_string_value(json_object_get(json_array_get(in, i), "group"));
		int g = grp ? hx_plan_group_index(p, grp) : -1;
		if (g >= 0 && kept[g] == 0)
			json_array_remove(in, i);
	}
	n = json_array_size(in);
	for (i = 0; i < n; i++) {
		const char *cls;
		int m = 0, g;
		double total = 0;
		e = json_array_get(in, i);
		cls = json_string_value(json_object_get(e, "class"));
		if (json_object_get(e, "done"))
			continue;
		for (size_t k = i; k < n; k++) {
			json_t *f = json_array_get(in, k);
			const char *c2 = json_string_value(json_object_get(f, "class"));
			if ((cls == NULL) != (c2 == NULL) || (cls && strcmp(cls, c2) != 0))
				continue;
			g = hx_plan_group_index(p,
						json_string_value(json_object_get(f, "group")));
			rt[m].weight = json_number_value(json_object_get(f, "weight")) *
				       (g >= 0 && p->groups[g].nreplicas > 0
					    ? (double)kept[g] / p->groups[g].nreplicas
					    : 1);
			total += rt[m].weight;
			idx[m++] = (int)k;
		}
		if (!(total > 0))
			bad = 1;
		hx_routes_normalize(rt, m);
		for (int k = 0; k < m; k++) {
			json_t *f = json_array_get(in, (size_t)idx[k]);
			json_object_set_new(f, "weight", json_real(rt[k].weight));
			if (k > 0)
				json_object_set_new(f, "done", json_true());
		}
	}
	for (i = 0; i < n; i++)
		json_object_del(json_array_get(in, i), "done");
	free(rt);
	free(idx);
	return bad ? -1 : 0;
}

/* PREV with the replicas it can spare at NEED req/s stopped (choose_stops)
 * and its ingress re-weighed, into OUT (release it).  Returns 0, -1 when
 * trimming would leave a class without a route (OUT empty), or an error. */
static int trim_plan(const hx_plan *prev, const hx_cluster *ex, double need, hx_plan *out,
		     hx_err *err)
{
	char *text = hx_plan_dump(prev), **stop;
	json_t *j = hx_json_load_text(text, "plan", err), *groups;
	int *kept, rc = 0;

	free(text);
	hx_plan_init(out);
	if (!j)
		return HX_EINPUT;
	stop = hx_xcalloc((size_t)prev->ngroups + 1, sizeof(char *));
	kept = hx_xcalloc((size_t)prev->ngroups + 1, sizeof(int));
	for (int g = 0; g < prev->ngroups; g++)
		stop[g] = hx_xcalloc((size_t)prev->groups[g].nreplicas + 1, 1);
	choose_stops(prev, ex, need, stop);
	groups = json_object_get(j, "groups");
	for (int g = prev->ngroups; g-- > 0;) {
		json_t *reps = json_object_get(json_array_get(groups, (size_t)g), "replicas");
		for (int r = prev->groups[g].nreplicas; r-- > 0;)
			if (stop[g][r])
				json_array_remove(reps, (size_t)r);
			else
				kept[g]++;
	}
	if (reweigh(j, prev, kept)) {
		rc = -1;
		goto out;
	}
	for (int g = prev->ngroups; g-- > 0;)
		if (kept[g] == 0)
			json_array_remove(groups, (size_t)g);
	text = hx_json_dump(j);
	rc = hx_plan_parse_text(out, text, "plan", err);
	free(text);
out:
	for (int g = 0; g < prev->ngroups; g++)
		free(stop[g]);
	free(stop);
	free(kept);
	json_decref(j);
	return rc;
}

/* What planning every period shares. */
typedef struct sched_ctx {
	const sched_args *a;
	const hx_catalog *cat;
	const char *calibration;
	const hx_cluster *cl; /* as loaded */
	hx_cluster ex;        /* offers expanded (compose: owned nodes free) */
	hx_cluster tcl;       /* --tolerate-failures: the cluster as check sees it */
	const hx_workload *w;
	const hx_model *m;
	double deadline; /* hx_deadline of --time-limit (0: none) */
	struct shape_cache *shapes;
	/* The cheapest plans made so far, as text, by rate: a rate that comes
	 * back (a day's curve passes most rates twice) is not planned again. */
	char **least_text;
	double *least_rate;
	int nleast;
} sched_ctx;

/* Options for one planner call of the N_LEFT still to make. */
static hx_plan_opts sched_opts(const sched_ctx *x, int n_left)
{
	hx_plan_opts po = {.objective = HX_OBJ_COST};
	if (x->deadline > 0)
		po.time_limit_s =
		    hx_plan_time_left(x->deadline) / (2.0 * (n_left > 0 ? n_left : 1));
	return po;
}

/* One replica's capacity at the SLO in the simulator, by shape: a shape
 * simulated once serves every period. */
typedef struct shape_cache {
	hx_map keys;
	double *rps;
	int n, cap;
} shape_cache;

/* The key of group G's shape: its stages (with their EP) and replica R's
 * links. */
static char *shape_key(const hx_plan_group *g, const hx_plan_replica *r)
{
	hx_buf b = {0};

	hx_buf_printf(&b, "%s|%d|%d|%d", g->model, (int)g->role, (int)g->wdt, (int)g->kvdt);
	for (int s = 0; s < g->nstages; s++)
		hx_buf_printf(&b, "|%s:%d:%d:%d:%d:%g:%g:%g:%g", g->stage[s].gpu,
			      g->stage[s].tp, g->stage[s].first, g->stage[s].last,
			      g->stage[s].cross_node, r->link ? r->link[s].bw_gbps : 0,
			      r->link ? r->link[s].latency_ms : 0,
			      r->tp_link ? r->tp_link[s].bw_gbps : 0,
			      r->tp_link ? r->tp_link[s].latency_ms : 0);
	/* Expert parallelism changes the shape's capacity as much. */
	for (int s = 0; s < g->nstages; s++)
		hx_buf_printf(&b, "|ep%d:%d:%d:%g", g->stage[s].ep, g->stage[s].dp,
			      g->stage[s].redundant_experts, g->stage[s].eplb_imbalance);
	return b.s;
}

/* Plan P cut to the first replica of group G, all traffic (each class of
 * P's) sent to it: into ONE (release it). */
static int one_replica(const hx_plan *p, int g, hx_plan *one, hx_err *err)
{
	char *text = hx_plan_dump(p);
	json_t *j = hx_json_load_text(text, "plan", err), *grp, *reps, *in, *cls, *e;
	size_t i;
	int rc;

	free(text);
	hx_plan_init(one);
	if (!j)
		return HX_EINPUT;
	grp = json_incref(json_array_get(json_object_get(j, "groups"), (size_t)g));
	reps = json_object_get(grp, "replicas");
	while (json_array_size(reps) > 1)
		json_array_remove(reps, json_array_size(reps) - 1);
	json_object_set_new(j, "groups", json_pack("[o]", grp));
	in = json_array();
	cls = json_object_get(json_object_get(j, "routing"), "classes");
	if (json_array_size(cls) == 0)
		json_array_append_new(
		    in, json_pack("{s:s,s:f}", "group", p->groups[g].name, "weight", 1.0));
	json_array_foreach(cls, i, e) json_array_append_new(
	    in, json_pack("{s:s,s:f,s:O}", "group", p->groups[g].name, "weight", 1.0, "class",
			  json_object_get(e, "name")));
	json_object_set_new(json_object_get(j, "routing"), "ingress", in);
	json_object_del(j, "rent");
	json_object_del(j, "simulated");
	json_object_del(j, "substitutions");
	text = hx_json_dump(j);
	json_decref(j);
	rc = hx_plan_parse_text(one, text, "plan", err);
	free(text);
	return rc;
}

/* Record P's capacity at the SLO in the simulator as its simulated
 * figure: the sum over its groups of replicas times one replica's
 * capacity (simulate --capacity's search with PB's workload and seed),
 * as colocated records it ("replicas": the router spreads requests at
 * random, so each replica sees its share).  On an error P is released. */
static int simulate(const sched_ctx *x, const hx_problem *pb, hx_plan *p, hx_err *err)
{
	shape_cache *c = x->shapes;
	double total = 0;
	int rc = 0;

	for (int g = 0; g < p->ngroups && !rc; g++) {
		char *k = shape_key(&p->groups[g], &p->groups[g].replicas[0]);
		int i = hx_map_get(&c->keys, k);
		if (i < 0) {
			hx_plan one;
			double rps = 0;
			if (!(rc = one_replica(p, g, &one, err))) {
				rc = hx_plan_sim_capacity(pb, &one, x->deadline, &rps, err);
				hx_plan_release(&one);
			}
			if (c->n == c->cap) {
				c->cap = 2 * c->cap + 8;
				c->rps = hx_xrealloc(c->rps, (size_t)c->cap * sizeof(double));
			}
			i = c->n++;
			c->rps[i] = rps;
			hx_map_put(&c->keys, k, i);
		}
		free(k);
		total += p->groups[g].nreplicas * c->rps[i];
	}
	if (rc) {
		hx_plan_release(p);
		return rc;
	}
	hx_plan_set_simulated(p, pb, "replicas", hx_round6(total), HX_CAP_REQUESTS);
	return 0;
}

/* The cheapest plan for WK's rate: colocated's cost objective on the
 * cluster's own GPUs, or compose's least rent. */
static int plan_least(const sched_ctx *x, const hx_workload *wk, int n_left, hx_plan *out,
		      hx_err *err)
{
	hx_problem pb = {
	    x->cat,      x->cl,         wk, x->m, (uint64_t)x->a->seed, x->a->cpath,
	    x->a->wpath, x->calibration};
	hx_plan_opts po = sched_opts(x, n_left);

	int rc = strcmp(x->a->mode, "compose") == 0 ? hx_plan_compose(&pb, &po, out, err)
						    : hx_plan_colocated(&pb, &po, out, err);

	/* Compose plans by the cost model alone: the simulator's word too. */
	if (rc == 0 && out->simulated.requests == 0)
		rc = simulate(x, &pb, out, err);
	return rc;
}

/* PREV's plan adapted to WK's rate: its spare replicas stopped, then
 * replan's routes and new replicas.  Returns 0 with OUT, -1 when PREV's
 * plan cannot be followed (OUT empty): replan cannot adapt it, the result
 * costs more than MAX_USD_PER_HOUR, keeps the SLO with less than its spot
 * target's probability, or the simulator finds it short of the rate; or an
 * error. */
static int plan_follow(const sched_ctx *x, const period *prev, const hx_workload *wk,
		       int n_left, double max_usd_per_hour, hx_plan *out, hx_err *err)
{
	hx_plan trimmed;
	hx_moves mv;
	hx_replan_opts ro = {0, NULL};
	hx_plan_opts po = sched_opts(x, n_left);
	hx_problem pb;
	hx_err e2 = {0};
	int rc;

	rc = trim_plan(&prev->plan, &x->ex, wk->rate_rps / HX_REPLAN_UTIL, &trimmed, err);
	if (rc)
		return rc;
	pb = (hx_problem){x->cat,
			  x->cl,
			  wk,
			  &trimmed.models[0],
			  (uint64_t)x->a->seed,
			  x->a->cpath,
			  x->a->wpath,
			  x->calibration};
	rc = hx_replan(&trimmed, x->cl, wk, &pb, &po, &ro, out, &mv, &e2);
	hx_plan_release(&trimmed);
	if (rc)
		/* The cheapest plan stands in for what replan cannot adapt. */
		return -1;
	hx_moves_release(&mv);
	/* Spot nodes: what they risk at this period's rate, and a plan that
	 * keeps the SLO with less than the target's probability is not
	 * followed (the cheapest plan reaches it). */
	if (out->spot.on)
		hx_spot_assess(out, wk->rate_rps / HX_SPOT_UTIL, &out->spot);
	if (out->shortage.on || out->predicted.usd_per_hour > max_usd_per_hour ||
	    (out->spot.on && out->spot.slo_probability < out->spot.target - 1e-9)) {
		hx_plan_release(out);
		return -1;
	}
	/* What replan copied of the old plan's simulated capacity is not this
	 * plan's: simulate it whole, and follow only a plan that the simulator
	 * says carries the rate. */
	pb.model = &out->models[0];
	if ((rc = simulate(x, &pb, out, err)))
		return rc;
	if (out->simulated.capacity_rps < wk->rate_rps) {
		hx_plan_release(out);
		return -1;
	}
	return 0;
}

/* Plan period K of PS (N in all) after period K-1's. */
/* How many times top_up asks replan for more. */
#define SCHED_TOP_UP_TRIES 3

/* P, a plan for WK's rate, grown until the simulator finds that it carries
 * the rate: replan, asked for the rate raised by the ratio the simulator
 * found short (and 2% more each try), adds the fewest replicas, at most
 * SCHED_TOP_UP_TRIES times.  A plan replan cannot grow stays as it is (its
 * simulated capacity shows it).  Returns 0 (P replaced or kept), or an
 * error with P kept. */
static int top_up(const sched_ctx *x, const hx_workload *wk, hx_plan *p, hx_err *err)
{
	for (int i = 0; i < SCHED_TOP_UP_TRIES && p->simulated.requests > 0 &&
			p->simulated.capacity_rps < wk->rate_rps;
	     i++) {
		hx_workload w2 = *wk;
		hx_plan q;
		hx_moves mv;
		hx_err e2 = {0};
		hx_replan_opts ro = {0, NULL};
		hx_plan_opts po = sched_opts(x, 1);
		hx_problem pb = {x->cat,
				 x->cl,
				 &w2,
				 &p->models[0],
				 (uint64_t)x->a->seed,
				 x->a->cpath,
				 x->a->wpath,
				 x->calibration};
		int rc;

		w2.rate_rps = wk->rate_rps * wk->rate_rps /
			      fmax(p->simulated.capacity_rps, 1e-9) * (1 + 0.02 * (i + 1));
		if (hx_replan(p, x->cl, &w2, &pb, &po, &ro, &q, &mv, &e2))
			return 0;
		hx_moves_release(&mv);
		if (q.shortage.on) {
			hx_plan_release(&q);
			return 0;
		}
		pb.workload = wk;
		pb.model = &q.models[0];
		memset(&q.simulated, 0, sizeof(q.simulated));
		if ((rc = simulate(x, &pb, &q, err)))
			return rc;
		hx_plan_release(p);
		*p = q;
	}
	return 0;
}

/* plan_least (grown by top_up), or the plan made before for the same
 * rate. */
static int plan_least_cached(sched_ctx *x, const hx_workload *wk, int n_left, hx_plan *out,
			     hx_err *err)
{
	int rc;

	for (int i = 0; i < x->nleast; i++)
		if (x->least_rate[i] == wk->rate_rps)
			return hx_plan_parse_text(out, x->least_text[i], "plan", err);
	if ((rc = plan_least(x, wk, n_left, out, err)))
		return rc;
	if ((rc = top_up(x, wk, out, err))) {
		hx_plan_release(out);
		return rc;
	}
	x->least_rate[x->nleast] = wk->rate_rps;
	x->least_text[x->nleast++] = hx_plan_dump(out);
	return 0;
}

/* ERR's message led by period K of PS. */
static void period_err(const period *ps, int k, hx_err *err)
{
	char msg[sizeof(err->msg)];
	snprintf(msg, sizeof(msg), "period %d (%g req/s from %g s): %.900s", k, ps[k].rate_rps,
		 ps[k].start_s, err->msg);
	hx_strlcpy(err->msg, msg, sizeof(err->msg));
}

/* --tolerate-failures K: the plan of period K of PS (N in all), for WK's
 * rate, insured as plan insures one (the replicas that keep the SLO after
 * any K nodes fail). */
static int insure(const sched_ctx *x, const hx_workload *wk, period *ps, int k, int n,
		  hx_err *err)
{
	period *cur = &ps[k];
	hx_problem pb = {x->cat,
			 &x->tcl,
			 wk,
			 &cur->plan.models[0],
			 (uint64_t)x->a->seed,
			 x->a->cpath,
			 x->a->wpath,
			 x->calibration};
	hx_plan_opts po = sched_opts(x, n - k);
	int rc;

	if (x->a->tolerate <= 0)
		return 0;
	rc = hx_plan_insure(CMD, &pb, x->cl, &po, (int)x->a->tolerate, x->deadline, &cur->plan,
			    err);
	if (rc)
		period_err(ps, k, err);
	return rc;
}

static int plan_period(sched_ctx *x, period *ps, int k, int n, hx_err *err)
{
	period *cur = &ps[k], *prev = k > 0 ? &ps[k - 1] : NULL;
	hx_workload wk = *x->w;
	hx_plan least, fol;
	int rc;

	if (!(cur->rate_rps > 0))
		return 0;
	/* The period's rate alone: no stages for the simulator to replay. */
	wk.rate_rps = cur->rate_rps;
	wk.stages = NULL;
	wk.nstages = 0;
	if ((rc = plan_least_cached(x, &wk, n - k, &least, err))) {
		period_err(ps, k, err);
		return rc;
	}
	cur->least_usd_per_hour = least.predicted.usd_per_hour;
	if (prev && prev->have_plan) {
		rc = plan_follow(x, prev, &wk, n - k,
				 least.predicted.usd_per_hour * (1 + SCHED_FOLLOW_SLACK) + 1e-9,
				 &fol, err);
		if (rc > 0) {
			hx_plan_release(&least);
			return rc;
		}
		if (rc == 0) {
			hx_plan_release(&least);
			cur->plan = fol;
			cur->have_plan = cur->followed = 1;
			return insure(x, &wk, ps, k, n, err);
		}
	}
	cur->plan = least;
	cur->have_plan = 1;
	return insure(x, &wk, ps, k, n, err);
}

/* The cost of period K of PS (N in all): its plan for its duration, and
 * the GPUs of the next period's new replicas while they load. */
static double period_usd(const period *ps, int k, int n)
{
	double usd =
	    ps[k].have_plan ? ps[k].plan.predicted.usd_per_hour * ps[k].duration_s / 3600 : 0;
	return usd + (k + 1 < n ? ps[k + 1].startup_usd : 0);
}

static json_t *period_json(const period *ps, int k, int n)
{
	const period *p = &ps[k];
	json_t *o = json_object(), *mv = json_object();

	hx_jset_num(o, "start_s", p->start_s);
	hx_jset_num(o, "duration_s", p->duration_s);
	hx_jset_num(o, "rate_rps", p->rate_rps);
	hx_jset_str(o, "origin", !p->have_plan ? "idle" : p->followed ? "follow" : "least");
	hx_jset_int(o, "replicas", p->replicas);
	hx_jset_int(o, "gpus", p->gpus);
	hx_jset_num(o, "capacity_rps", p->have_plan ? p->plan.predicted.capacity_rps : 0);
	if (p->have_plan && p->plan.simulated.requests > 0)
		hx_jset_num(o, "simulated_capacity_rps", p->plan.simulated.capacity_rps);
	hx_jset_num(o, "usd_per_hour", p->have_plan ? p->plan.predicted.usd_per_hour : 0);
	hx_jset_num(o, "least_usd_per_hour", p->least_usd_per_hour);
	hx_jset_num(o, "startup_usd", k + 1 < n ? ps[k + 1].startup_usd : 0);
	hx_jset_num(o, "usd", period_usd(ps, k, n));
	hx_jset_int(mv, "kept", p->kept);
	hx_jset_int(mv, "started", p->started);
	hx_jset_int(mv, "stopped", p->stopped);
	hx_jset_num(mv, "bytes_to_load", p->bytes);
	hx_jset_num(mv, "startup_s", p->startup_s);
	json_object_set_new(o, "moves", mv);
	if (p->have_plan) {
		char *text = hx_plan_dump(&p->plan);
		json_object_set_new(o, "plan", json_loads(text, 0, NULL));
		free(text);
	} else {
		json_object_set_new(o, "plan", json_null());
	}
	return o;
}

/* The day's totals: cost against the cheapest plan of the peak period
 * provisioned all day, moves, and the replicas over time. */
static json_t *totals_json(const period *ps, int n)
{
	json_t *o = json_object(), *reps = json_array(), *peak = json_object();
	double usd = 0, dur = 0, bytes = 0, peak_usd;
	int started = 0, stopped = 0, kp = 0;

	for (int k = 0; k < n; k++) {
		usd += period_usd(ps, k, n);
		dur += ps[k].duration_s;
		if (k > 0) {
			started += ps[k].started;
			bytes += ps[k].bytes;
		}
		stopped += ps[k].stopped;
		if (ps[k].rate_rps > ps[kp].rate_rps)
			kp = k;
		json_array_append_new(reps, json_integer(ps[k].replicas));
	}
	peak_usd = ps[kp].least_usd_per_hour * dur / 3600;
	hx_jset_int(o, "periods", n);
	hx_jset_num(o, "duration_s", dur);
	hx_jset_num(o, "usd", usd);
	hx_jset_num(o, "startup_before_usd", ps[0].startup_usd);
	hx_jset_int(peak, "period", kp);
	hx_jset_num(peak, "rate_rps", ps[kp].rate_rps);
	hx_jset_num(peak, "usd_per_hour", ps[kp].least_usd_per_hour);
	hx_jset_num(peak, "usd", peak_usd);
	json_object_set_new(o, "static_peak", peak);
	hx_jset_num(o, "cost_ratio", peak_usd > 0 ? usd / peak_usd : 0);
	hx_jset_int(o, "started", started);
	hx_jset_int(o, "stopped", stopped);
	hx_jset_num(o, "bytes_to_load", bytes);
	json_object_set_new(o, "replicas", reps);
	return o;
}

static char *schedule_dump(const sched_ctx *x, const period *ps, int n)
{
	json_t *o = json_object(), *in = json_object(), *a = json_array();
	char d[72], *text;

	hx_jset_str(o, "schema", "hexplan.schedule");
	hx_jset_int(o, "version", 1);
	hx_jset_str(o, "mode", x->a->mode);
	hx_jset_str(o, "model", x->m->name);
	json_object_set_new(o, "seed", json_integer(x->a->seed));
	hx_jset_str(o, "load", x->a->trace ? "trace" : "stages");
	if (x->a->trace)
		hx_jset_num(o, "period_s", x->a->period_s);
	hx_file_digest(x->a->cpath, d);
	hx_jset_str(in, "cluster", d);
	hx_file_digest(x->a->wpath, d);
	hx_jset_str(in, "workload", d);
	if (x->a->trace) {
		hx_file_digest(x->a->trace, d);
		hx_jset_str(in, "trace", d);
	}
	json_object_set_new(o, "inputs", in);
	for (int k = 0; k < n; k++)
		json_array_append_new(a, period_json(ps, k, n));
	json_object_set_new(o, "periods", a);
	json_object_set_new(o, "totals", totals_json(ps, n));
	text = hx_json_dump(o);
	json_decref(o);
	return text;
}

static char *schedule_table(const sched_ctx *x, const period *ps, int n)
{
	hx_buf t = {0};
	json_t *tot = totals_json(ps, n), *peak = json_object_get(tot, "static_peak");

	hx_buf_printf(&t, "schedule %s: %d periods, model %s\n\n", x->a->mode, n, x->m->name);
	hx_buf_printf(&t, "%6s %10s %9s %9s %9s %5s %9s %7s %7s  %s\n", "period", "start_s",
		      "rate", "capacity", "replicas", "gpus", "usd/h", "started", "stopped",
		      "origin");
	for (int k = 0; k < n; k++) {
		const period *p = &ps[k];
		hx_buf_printf(&t, "%6d %10.0f %9.3f %9.3f %9d %5d %9.2f %7d %7d  %s\n", k,
			      p->start_s, p->rate_rps,
			      p->have_plan ? p->plan.predicted.capacity_rps : 0, p->replicas,
			      p->gpus, p->have_plan ? p->plan.predicted.usd_per_hour : 0,
			      p->started, p->stopped,
			      !p->have_plan ? "idle"
			      : p->followed ? "follow"
					    : "least");
	}
	hx_buf_printf(&t,
		      "\ncost: $%.2f over %.0f s; the peak period's plan all day $%.2f "
		      "(ratio %.3f); start-ups before the day $%.2f\n",
		      json_real_value(json_object_get(tot, "usd")),
		      json_real_value(json_object_get(tot, "duration_s")),
		      json_real_value(json_object_get(peak, "usd")),
		      json_real_value(json_object_get(tot, "cost_ratio")), ps[0].startup_usd);
	json_decref(tot);
	return t.s;
}

/* The model of -m, else the workload's (named by its file and key). */
static int sched_model(const hx_catalog *cat, const sched_args *a, const hx_workload *w,
		       hx_model *m, hx_err *err)
{
	int rc;

	if (!a->model && !w->model[0])
		return hx_cli_usage_error(CMD, "give -m MODEL (the workload names no model)");
	if (a->model)
		return hx_model_resolve(cat, a->model, m, err);
	if ((rc = hx_model_resolve(cat, w->model, m, err))) {
		char msg[sizeof(err->msg)];
		snprintf(msg, sizeof(msg), "%s: /model: %.900s", hx_display_path(a->wpath),
			 err->msg);
		hx_strlcpy(err->msg, msg, sizeof(err->msg));
	}
	return rc;
}

/* Plan every period of PS (N), then count the moves between them. */
static int plan_all(sched_ctx *x, period *ps, int n, hx_err *err)
{
	int rc = 0;

	x->least_text = hx_xcalloc((size_t)n + 1, sizeof(char *));
	x->least_rate = hx_xcalloc((size_t)n + 1, sizeof(double));
	for (int k = 0; k < n; k++) {
		if ((rc = plan_period(x, ps, k, n, err)))
			break;
		count_moves(k > 0 ? &ps[k - 1] : NULL, &ps[k], &x->ex,
			    ps[k].have_plan ? &ps[k].plan.models[0] : x->m);
	}
	for (int i = 0; i < x->nleast; i++)
		free(x->least_text[i]);
	free(x->least_text);
	free(x->least_rate);
	return rc;
}

/* The SVG of --plot: each period's rate, the capacity its plan carries
 * (the simulator's where there is one) and its price. */
static char *schedule_plot(const sched_ctx *x, const period *ps, int n)
{
	hx_sched_pt *pt = hx_xcalloc((size_t)n + 1, sizeof(*pt));
	json_t *tot = totals_json(ps, n);
	char title[320], *svg;

	for (int k = 0; k < n; k++) {
		const period *p = &ps[k];
		pt[k] = (hx_sched_pt){p->start_s, p->duration_s, p->rate_rps, 0, 0};
		if (p->have_plan) {
			pt[k].capacity_rps = p->plan.simulated.requests > 0
						 ? p->plan.simulated.capacity_rps
						 : p->plan.predicted.capacity_rps;
			pt[k].usd_per_hour = p->plan.predicted.usd_per_hour;
		}
	}
	snprintf(title, sizeof(title),
		 "schedule of %.120s (%s), %d periods: $%.2f, %.3f of the peak plan all day",
		 x->m->name, x->a->mode, n, json_real_value(json_object_get(tot, "usd")),
		 json_real_value(json_object_get(tot, "cost_ratio")));
	json_decref(tot);
	svg = hx_schedule_svg(title, pt, n);
	free(pt);
	return svg;
}

/* -o and --plot, written together: both or neither. */
static int write_outputs(const sched_ctx *x, const period *ps, int n, const char *text,
			 hx_err *err)
{
	hx_out_file f[2];
	char *svg = x->a->plot ? schedule_plot(x, ps, n) : NULL;
	int nf = 0, rc;

	if (x->a->out)
		f[nf++] = (hx_out_file){x->a->out, text, strlen(text), 0};
	if (svg)
		f[nf++] = (hx_out_file){x->a->plot, svg, strlen(svg), 0};
	rc = nf > 0 ? hx_write_files_atomic(f, nf, err) : 0;
	free(svg);
	return rc;
}

int cmd_schedule(hx_cli *cli, int argc, char **argv)
{
	sched_args a = {.mode = "colocated", .seed = 1};
	sched_ctx x = {0};
	const hx_catalog *cat;
	hx_cluster cl;
	hx_workload w;
	hx_model m;
	hx_err err = {0};
	period *ps = NULL;
	shape_cache shapes = {0};
	int rc, n = 0, have_c = 0, have_w = 0, have_x = 0, have_t = 0;
	char *text = NULL;
	const double start = hx_now();

	if ((rc = parse_args(cli, argc, argv, &a)) != HX_CLI_GO)
		return rc;
	{
		const hx_cli_file files[] = {
		    {"-c", a.cpath, 0},
		    {"-w", a.wpath, 0},
		    {"-m", a.model, 0},
		    {"--trace", a.trace, 0},
		    {"--calibration", cli->calibration, 0},
		    {a.out ? "-o" : "the schedule (standard output without -o)",
		     a.out ? a.out : "-", 1},
		    {"the table (standard output)", a.out && a.table ? "-" : NULL, 1},
		    {"--plot", a.plot, 1}};
		if ((rc = hx_cli_check_files(CMD, files, (int)HX_ARRAY_LEN(files))))
			return rc;
	}
	if (!(cat = hx_cli_catalog(cli, &rc)))
		return rc;
	if ((rc = hx_cluster_load(&cl, a.cpath, cat, &err)))
		return hx_cli_fail(&err);
	have_c = 1;
	if ((rc = hx_workload_load(&w, a.wpath, &err)))
		goto out;
	have_w = 1;
	if ((rc = sched_model(cat, &a, &w, &m, &err)) ||
	    (rc = load_periods(&a, &w, &ps, &n, &err)))
		goto out;
	x = (sched_ctx){&a,     cat, cli->calibration,
			&cl,    {0}, {0},
			&w,     &m,  a.time_limit_s > 0 ? hx_deadline(0.9 * a.time_limit_s) : 0,
			&shapes};
	if ((rc = hx_cluster_expand_offers(&cl, strcmp(a.mode, "compose") == 0, &x.ex, &err)))
		goto out;
	have_x = 1;
	if (a.tolerate > 0) {
		if ((rc = hx_tolerate_cluster(CMD, &cl, strcmp(a.mode, "compose") == 0,
					      a.tolerate, &x.tcl, &err)))
			goto out;
		have_t = 1;
	}
	if ((rc = plan_all(&x, ps, n, &err)))
		goto out;
	text = schedule_dump(&x, ps, n);
	if ((rc = write_outputs(&x, ps, n, text, &err)))
		goto out;
	fprintf(stderr, "hexplan: schedule: %d periods planned in %.1f s\n", n,
		hx_now() - start);
	if (a.table || !a.out) {
		char *t = a.table ? schedule_table(&x, ps, n) : NULL;
		rc = hx_cli_output("-", t ? t : text);
		free(t);
	}
out:
	free(text);
	if (rc && err.msg[0])
		hx_cli_fail(&err);
	for (int k = 0; k < n; k++)
		if (ps[k].have_plan)
			hx_plan_release(&ps[k].plan);
	free(ps);
	hx_map_release(&shapes.keys);
	free(shapes.rps);
	if (have_x)
		hx_cluster_release(&x.ex);
	if (have_t)
		hx_cluster_release(&x.tcl);
	if (have_w)
		hx_workload_release(&w);
	if (have_c)
		hx_cluster_release(&cl);
	return rc;
}
