/* estimate: the cost model's prediction for one replica configuration. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "model/cost.h"
#include "base/jsonio.h"

#define CMD "estimate"

const char *const hx_estimate_usage[] = {
    "hexplan estimate -m MODEL -g GPU [--tp N] [--pp N] [--batch B] [--input N] "
    "[--output N] [--weights bf16|fp8|int4] [--kv fp16|fp8] [--ep N [--redundant-experts N] "
    "[--eplb-imbalance F]] [--dp-attention [--dp N]] [--nic-gbps G] [-w workload.json "
    "[--role aggregated|prefill|decode]] [--format json|table]",
    "hexplan estimate -m MODEL --afd ATTN_GPU:A:TP,FFN_GPU:F:TP [--micro-batches M] "
    "[--batch B] [--input N] [--output N] [--weights bf16|fp8|int4] [--kv fp16|fp8] "
    "[--nic-gbps G] [--format json|table]",
    NULL};

enum {
	OPT_TP = 2000,
	OPT_PP,
	OPT_BATCH,
	OPT_INPUT,
	OPT_OUTPUT,
	OPT_WEIGHTS,
	OPT_KV,
	OPT_EP,
	OPT_DP_ATTN,
	OPT_DP,
	OPT_REDUNDANT,
	OPT_IMBALANCE,
	OPT_NIC,
	OPT_AFD,
	OPT_MICRO,
	OPT_ROLE
};

typedef struct est_args {
	const char *model, *gpu, *workload;
	long tp, pp, batch, input, output;
	int wdt, kvdt, table;
	/* Expert parallelism and DP attention (0: off; issue 21). */
	long ep, dp, redundant;
	int dp_attn, tp_given;
	double imbalance, nic_gbps; /* imbalance 0: the default */
	/* Attention/FFN disaggregation (NULL: off; issue 22). */
	const char *afd;
	long micro;
	/* The capacity's phase: HX_SERVE_BOTH (aggregated), or a disagg
	 * role's, HX_SERVE_PREFILL or HX_SERVE_DECODE; ROLE_GIVEN: --role. */
	int phase, role_given;
} est_args;

/* Whether A asks for an EP / DP-attention stage. */
static int est_ep(const est_args *a)
{
	return a->ep > 0 || a->dp_attn;
}

static json_t *breakdown_json(const hx_breakdown *b, int layers, int ep)
{
	json_t *o = json_object();
	hx_jset_num(o, "linear", b->linear_s * 1e3 / layers);
	hx_jset_num(o, "attention", b->attention_s * 1e3 / layers);
	hx_jset_num(o, "communication", b->comm_s * 1e3 / layers);
	hx_jset_num(o, "overhead", b->overhead_s * 1e3 / layers);
	if (ep) /* dispatch + combine before overlap; what is not hidden is in communication */
		hx_jset_num(o, "all_to_all", b->a2a_s * 1e3 / layers);
	return o;
}

static void table_breakdown(hx_buf *t, const char *what, const hx_breakdown *b, int layers)
{
	hx_buf_printf(
	    t,
	    "  %-9s linear %.4f  attention %.4f  communication %.4f  overhead %.4f ms/layer\n",
	    what, b->linear_s * 1e3 / layers, b->attention_s * 1e3 / layers,
	    b->comm_s * 1e3 / layers, b->overhead_s * 1e3 / layers);
}

/* What estimate computed, for the two forms of its report. */
typedef struct est {
	const hx_gpu *g;
	const hx_model *m;
	const hx_replica *r;
	const hx_memory *mem;
	const hx_iter *pre, *dec;
	const hx_capacity *cap; /* with w */
	const hx_workload *w;   /* NULL: no -w */
	double ctx;
	hx_dtype wdt, kvdt;
} est;

/* The JSON report: a new reference. */
static json_t *estimate_json(const est_args *a, const est *e)
{
	const int layers = e->m->a.layers;
	json_t *o, *x;

	o = json_object();
	hx_jset_str(o, "model", e->m->name);
	hx_jset_str(o, "gpu", e->g->name);
	hx_jset_int(o, "tp", a->tp);
	hx_jset_int(o, "pp", a->pp);
	hx_jset_int(o, "batch", a->batch);
	hx_jset_int(o, "input_tokens", a->input);
	hx_jset_int(o, "output_tokens", a->output);
	hx_jset_str(o, "weights", hx_dtype_name(e->wdt));
	hx_jset_str(o, "kv", hx_dtype_name(e->kvdt));
	if (est_ep(a)) {
		const hx_stage *s = &e->r->stage[0];
		hx_jset_int(o, "ep", s->ep > 1 ? s->ep : 1);
		hx_jset_int(o, "dp_attention", hx_stage_dp(s));
		hx_jset_int(o, "attention_tp", s->tp / hx_stage_dp(s));
		hx_jset_int(o, "redundant_experts", s->redundant_experts);
		hx_jset_num(o, "eplb_imbalance",
			    s->imbalance > 0 ? s->imbalance : HX_EPLB_IMBALANCE);
		hx_jset_num(o, "nic_gbps", s->nic_gbps);
	}
	x = json_object();
	hx_jset_num(x, "latency_ms", e->pre->latency_s * 1e3);
	hx_jset_int(x, "tokens", a->batch * a->input);
	hx_jset_num(x, "tokens_per_s", a->batch * a->input / e->pre->latency_s);
	json_object_set_new(x, "per_layer_ms", breakdown_json(&e->pre->sum, layers, est_ep(a)));
	json_object_set_new(o, "prefill", x);
	x = json_object();
	hx_jset_num(x, "step_ms", e->dec->cycle_s * 1e3);
	hx_jset_num(x, "context", e->ctx);
	hx_jset_num(x, "tokens_per_s", a->batch / e->dec->cycle_s);
	json_object_set_new(x, "per_layer_ms", breakdown_json(&e->dec->sum, layers, est_ep(a)));
	json_object_set_new(o, "decode", x);
	x = json_object();
	hx_jset_num(x, "e2e_ms", (e->pre->latency_s + (a->output - 1) * e->dec->cycle_s) * 1e3);
	json_object_set_new(o, "request", x);
	x = json_object();
	{
		const hx_mem_stage *s = &e->mem->st[0];
		for (int i = 1; i < e->r->nstages; i++)
			if (e->mem->st[i].kv_tokens < s->kv_tokens)
				s = &e->mem->st[i];
		hx_jset_num(x, "gpu_gib", e->g->mem_gib);
		hx_jset_num(x, "usable_gib", s->capacity_b / HX_GIB);
		hx_jset_num(x, "weights_gib", s->weights_b / HX_GIB);
		hx_jset_num(x, "reserve_gib", s->reserve_b / HX_GIB);
		hx_jset_num(x, "kv_gib", s->kv_b / HX_GIB);
	}
	hx_jset_num(x, "weights_total_gib", e->mem->weights_b / HX_GIB);
	hx_jset_num(x, "kv_bytes_per_token", hx_kv_bytes_per_token(e->m, e->kvdt));
	hx_jset_num(x, "kv_capacity_tokens", e->mem->kv_tokens);
	hx_jset_int(x, "max_batch", (long)floor(e->mem->kv_tokens / (a->input + a->output)));
	json_object_set_new(o, "memory", x);
	if (e->r->nstages > 1) {
		json_t *st = json_array();
		for (int i = 0; i < e->r->nstages; i++) {
			json_t *s = json_object(), *l = json_array();
			json_array_append_new(l, json_integer(e->r->stage[i].first));
			json_array_append_new(l, json_integer(e->r->stage[i].last));
			json_object_set_new(s, "layers", l);
			hx_jset_num(s, "prefill_ms", e->pre->stage_s[i] * 1e3);
			hx_jset_num(s, "decode_ms", e->dec->stage_s[i] * 1e3);
			json_array_append_new(st, s);
		}
		json_object_set_new(o, "stages", st);
	}
	if (e->w) {
		x = json_object();
		if (a->role_given)
			hx_jset_str(x, "role",
				    a->phase == HX_SERVE_PREFILL  ? "prefill"
				    : a->phase == HX_SERVE_DECODE ? "decode"
								  : "aggregated");
		hx_jset_num(x, "rps", e->cap->rps);
		hx_jset_num(x, "tokens_per_s", e->cap->tokens_per_s);
		hx_jset_num(x, "batch", e->cap->batch);
		hx_jset_num(x, "tpot_ms", e->cap->tpot_ms);
		hx_jset_num(x, "ttft_ms", e->cap->ttft_ms);
		hx_jset_num(x, "max_batch", e->cap->max_batch);
		hx_jset_str(x, "binding", e->cap->binding);
		json_object_set_new(o, "capacity", x);
	}
	return o;
}

/* The table report: a new string. */
static char *estimate_table(const est_args *a, const est *e)
{
	const int layers = e->m->a.layers;
	hx_buf t = {0};

	if (est_ep(a))
		hx_buf_printf(
		    &t,
		    "%s on %ld x %s (tp %ld, pp %ld, ep %d, dp attention %d), weights "
		    "%s, kv %s\n",
		    e->m->name, a->tp * a->pp, e->g->name, a->tp, a->pp,
		    e->r->stage[0].ep > 1 ? e->r->stage[0].ep : 1, hx_stage_dp(&e->r->stage[0]),
		    hx_dtype_name(e->wdt), hx_dtype_name(e->kvdt));
	else
		hx_buf_printf(&t, "%s on %ld x %s (tp %ld, pp %ld), weights %s, kv %s\n",
			      e->m->name, a->tp * a->pp, e->g->name, a->tp, a->pp,
			      hx_dtype_name(e->wdt), hx_dtype_name(e->kvdt));
	hx_buf_printf(&t, "prefill   %ld x %ld tokens: %.3f ms\n", a->batch, a->input,
		      e->pre->latency_s * 1e3);
	hx_buf_printf(&t, "decode    batch %ld at context %.0f: %.3f ms/step, %.1f tokens/s\n",
		      a->batch, e->ctx, e->dec->cycle_s * 1e3, a->batch / e->dec->cycle_s);
	table_breakdown(&t, "prefill", &e->pre->sum, layers);
	table_breakdown(&t, "decode", &e->dec->sum, layers);
	if (est_ep(a))
		hx_buf_printf(
		    &t, "  all-to-all prefill %.4f  decode %.4f ms/layer before overlap\n",
		    e->pre->sum.a2a_s * 1e3 / layers, e->dec->sum.a2a_s * 1e3 / layers);
	hx_buf_printf(
	    &t,
	    "memory    %.1f GiB weights per GPU, %.1f GiB KV: %.0f tokens, max batch %.0f\n",
	    e->mem->st[0].weights_b / HX_GIB, e->mem->st[0].kv_b / HX_GIB, e->mem->kv_tokens,
	    floor(e->mem->kv_tokens / (a->input + a->output)));
	if (e->w && e->cap->rps > 0)
		hx_buf_printf(
		    &t,
		    "capacity  %.3f req/s at the SLO%s (batch %.1f, tpot %.2f ms, ttft p%g %.1f ms; bound by %s)\n",
		    e->cap->rps,
		    a->phase == HX_SERVE_PREFILL  ? " as a prefill replica"
		    : a->phase == HX_SERVE_DECODE ? " as a decode replica"
						  : "",
		    e->cap->batch, e->cap->tpot_ms, e->w->slo.percentile, e->cap->ttft_ms,
		    e->cap->binding);
	else if (e->w)
		hx_buf_printf(
		    &t, "capacity  0 req/s: even one request misses the SLO (bound by %s)\n",
		    e->cap->binding);
	return t.s;
}

/* R: A's EP / DP-attention shape, PP stages of A->tp GPUs each (nodes of
 * 8 GPUs, as the rest of estimate assumes).  0, or HX_EINPUT with ERR. */
static int ep_replica(const est_args *a, const hx_model *m, const hx_gpu *g, hx_dtype wdt,
		      hx_dtype kvdt, double bw_gbps, double lat_ms, hx_replica *r, hx_err *err)
{
	int dp = a->dp_attn ? (int)(a->dp > 0 ? a->dp : a->tp) : 0, atp;

	/* The heads check of a plain TP stage does not apply here: the
	 * attention runs at tp / dp (checked below). */
	if (hx_replica_uniform(r, m, g, 1, (int)a->pp, wdt, kvdt, bw_gbps, lat_ms, err))
		return HX_EINPUT;
	atp = dp > 0 && a->tp % dp == 0 ? (int)a->tp / dp : (int)a->tp;
	for (int i = 0; i < r->nstages; i++) {
		hx_stage *s = &r->stage[i];
		s->tp = (int)a->tp;
		s->ep = (int)a->ep;
		s->dp = dp;
		s->redundant_experts = (int)a->redundant;
		s->gpus_per_node = 8;
		s->nic_gbps = a->nic_gbps;
		s->nic_latency_us = HX_EP_NIC_LATENCY_US;
		s->imbalance = a->imbalance;
		s->micro_batches = 2; /* two-batch overlap, as deployed */
		if (atp > 8) {        /* an attention TP group larger than a node */
			s->tp_bw_gb_s = a->nic_gbps / 8.0;
			s->tp_latency_us = 20;
		}
	}
	return hx_replica_check(r, err);
}

static int run(hx_cli *cli, const est_args *a)
{
	const hx_catalog *cat;
	const hx_gpu *g;
	hx_model m;
	hx_replica r;
	hx_memory mem;
	hx_iter pre, dec;
	hx_batch pb = {0}, db = {0};
	hx_workload w;
	hx_capacity cap;
	hx_err err = {0};
	json_t *o = NULL;
	char *text = NULL;
	int rc, have_w = 0;
	double ctx, bw_gbps, lat_ms, need_tokens;
	hx_dtype wdt, kvdt;
	est e;

	if (!(cat = hx_cli_catalog(cli, &rc)))
		return rc;
	if (!(g = hx_catalog_gpu(cat, a->gpu))) {
		hx_errf(&err, HX_EINPUT, "unknown GPU \"%s\" (see 'hexplan profiles list')",
			a->gpu);
		return hx_cli_fail(&err);
	}
	if ((rc = hx_model_resolve(cat, a->model, &m, &err)))
		return hx_cli_fail(&err);
	wdt = a->wdt >= 0 ? (hx_dtype)a->wdt : m.a.dtype;
	kvdt = a->kvdt >= 0 ? (hx_dtype)a->kvdt : HX_DT_FP16;
	/* Stages of one node talk over its intra-node link; more GPUs than a
	 * node holds go over the network (--nic-gbps, 100 Gb/s by default). */
	if (a->tp * a->pp <= 8) {
		bw_gbps = g->intra_bw_gb_s * 8;
		lat_ms = g->intra_latency_us * 1e-3;
	} else {
		bw_gbps = a->nic_gbps;
		lat_ms = 0.02;
	}
	if (est_ep(a)) {
		if ((rc = ep_replica(a, &m, g, wdt, kvdt, bw_gbps, lat_ms, &r, &err)))
			return hx_cli_usage_error(CMD, "%s", err.msg);
	} else if ((rc = hx_replica_uniform(&r, &m, g, (int)a->tp, (int)a->pp, wdt, kvdt,
					    bw_gbps, lat_ms, &err)))
		return hx_cli_usage_error(CMD, "%s", err.msg);
	/* A TP group larger than a node all-reduces over the network. */
	if (a->tp > 8 && !est_ep(a))
		for (int i = 0; i < r.nstages; i++) {
			r.stage[i].tp_bw_gb_s = a->nic_gbps / 8.0;
			r.stage[i].tp_latency_us = 20;
		}
	if (a->workload) {
		if ((rc = hx_workload_load(&w, a->workload, &err)))
			return hx_cli_fail(&err);
		have_w = 1;
	}
	hx_cost_memory(&r, have_w ? w.serving.mem_util : HX_DEFAULT_MEM_UTIL, &mem);
	if (!mem.fits) {
		const hx_mem_stage *s = &mem.st[mem.worst_stage];
		rc = hx_errf(
		    &err, HX_EINFEASIBLE,
		    "%s does not fit on %ld x %s (tp %ld, pp %ld): each GPU needs %.1f GiB of weights and %.1f GiB of reserve but has %.1f GiB usable: short by %.1f GiB",
		    m.name, a->tp * a->pp, g->name, a->tp, a->pp, s->weights_b / HX_GIB,
		    s->reserve_b / HX_GIB, s->capacity_b / HX_GIB, mem.short_b / HX_GIB);
		goto out;
	}
	need_tokens = (double)a->batch * (a->input + a->output);
	if (mem.kv_tokens < need_tokens) {
		rc = hx_errf(
		    &err, HX_EINFEASIBLE,
		    "the KV cache of %s on %ld x %s holds %.0f tokens but a batch of %ld requests of %ld + %ld tokens needs %.0f",
		    m.name, a->tp * a->pp, g->name, mem.kv_tokens, a->batch, a->input,
		    a->output, need_tokens);
		goto out;
	}
	hx_batch_add_prefill(&pb, a->batch, a->input, 0);
	hx_cost_iter(&r, &pb, &pre);
	ctx = a->input + a->output / 2.0;
	hx_batch_add_decode(&db, a->batch, ctx);
	hx_cost_cycle(&r, &db, &dec);
	if (have_w)
		hx_cost_capacity_phase(&r, &w, a->phase, &cap);

	e = (est){g, &m, &r, &mem, &pre, &dec, &cap, have_w ? &w : NULL, ctx, wdt, kvdt};
	if (!a->table) {
		o = estimate_json(a, &e);
		text = hx_json_dump(o);
	} else {
		text = estimate_table(a, &e);
	}
	rc = hx_cli_output("-", text);
out:
	if (rc && err.msg[0])
		hx_cli_fail(&err);
	json_decref(o);
	free(text);
	if (have_w)
		hx_workload_release(&w);
	return rc;
}

/* ---- attention/FFN disaggregation (--afd) -------------------------------- */

/* One side of --afd, "GPU:N:TP" in the LEN characters at S: 0, or -1 when
 * it is not of that form (numbers of 1 to 1024, a name that fits). */
static int afd_side(const char *s, size_t len, char *gpu, size_t gsz, long *n, long *tp)
{
	char buf[128], *c1, *c2, *end;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (!(c2 = strrchr(buf, ':')))
		return -1;
	*c2 = '\0';
	if (!(c1 = strrchr(buf, ':')) || c1 == buf || (size_t)(c1 - buf) >= gsz)
		return -1;
	*c1 = '\0';
	*n = strtol(c1 + 1, &end, 10);
	if (c1[1] < '0' || c1[1] > '9' || *end || *n < 1 || *n > 1024)
		return -1;
	*tp = strtol(c2 + 1, &end, 10);
	if (c2[1] < '0' || c2[1] > '9' || *end || *tp < 1 || *tp > 1024)
		return -1;
	memcpy(gpu, buf, (size_t)(c1 - buf) + 1);
	return 0;
}

/* G's sides from --afd SPEC (GPUs resolved in CAT): 0, or HX_EUSAGE /
 * HX_EINPUT with the message printed. */
static int afd_parse(const hx_catalog *cat, const char *spec, hx_afd *g)
{
	const char *comma = strchr(spec, ',');
	char name[2][64];
	long n[2], tp[2];
	hx_err err = {0};

	if (!comma || strchr(comma + 1, ',') ||
	    afd_side(spec, (size_t)(comma - spec), name[0], sizeof(name[0]), &n[0], &tp[0]) ||
	    afd_side(comma + 1, strlen(comma + 1), name[1], sizeof(name[1]), &n[1], &tp[1]))
		return hx_cli_usage_error(
		    CMD,
		    "--afd must be ATTN_GPU:A:TP,FFN_GPU:F:TP (instances and "
		    "TP from 1 to 1024), not \"%s\"",
		    spec);
	for (int i = 0; i < 2; i++) {
		const hx_gpu *gpu = hx_catalog_gpu(cat, name[i]);
		if (!gpu) {
			hx_errf(&err, HX_EINPUT,
				"unknown GPU \"%s\" in --afd (see 'hexplan profiles list')",
				name[i]);
			return hx_cli_fail(&err);
		}
		if (i == 0) {
			g->attn_gpu = gpu;
			g->attn_n = (int)n[0];
			g->attn_tp = (int)tp[0];
		} else {
			g->ffn_gpu = gpu;
			g->ffn_n = (int)n[1];
			g->ffn_tp = (int)tp[1];
		}
	}
	return 0;
}

static json_t *afd_layer_json(const char *kind, const hx_afd_layer *x)
{
	json_t *o = json_object();
	hx_jset_str(o, "kind", kind);
	hx_jset_int(o, "layers", x->count);
	hx_jset_num(o, "attention_ms", x->attn_s * 1e3);
	hx_jset_num(o, "ffn_ms", x->ffn_s * 1e3);
	hx_jset_num(o, "exchange_ms", x->xfer_s * 1e3);
	hx_jset_num(o, "exchange_bytes_each_way", x->bytes_each_way);
	hx_jset_num(o, "cycle_ms", x->cycle_s * 1e3);
	hx_jset_num(o, "slowest_ms", x->slowest_s * 1e3);
	return o;
}

static json_t *afd_side_json(const hx_gpu *gpu, int n, int tp)
{
	json_t *o = json_object();
	hx_jset_str(o, "gpu", gpu->name);
	hx_jset_int(o, "instances", n);
	hx_jset_int(o, "tp", tp);
	return o;
}

/* The JSON report of an AFD estimate: a new reference. */
static json_t *afd_json(const est_args *a, const hx_afd *g, double ctx, const hx_afd_step *st)
{
	json_t *o = json_object(), *x = json_object(), *l = json_array(), *y;
	static const char *const kinds[2] = {"dense", "moe"};

	hx_jset_str(o, "model", g->model->name);
	hx_jset_int(o, "batch", a->batch);
	hx_jset_int(o, "input_tokens", a->input);
	hx_jset_int(o, "output_tokens", a->output);
	hx_jset_str(o, "weights", hx_dtype_name(g->wdt));
	hx_jset_str(o, "kv", hx_dtype_name(g->kvdt));
	json_object_set_new(x, "attention", afd_side_json(g->attn_gpu, g->attn_n, g->attn_tp));
	json_object_set_new(x, "ffn", afd_side_json(g->ffn_gpu, g->ffn_n, g->ffn_tp));
	hx_jset_int(x, "micro_batches", g->micro_batches);
	hx_jset_num(x, "link_gbps", g->link.bw_gbps);
	hx_jset_num(x, "link_latency_ms", g->link.latency_ms);
	json_object_set_new(o, "afd", x);
	x = json_object();
	hx_jset_num(x, "step_ms", st->step_s * 1e3);
	hx_jset_num(x, "context", ctx);
	hx_jset_num(x, "tokens_per_s", st->tokens_per_s);
	hx_jset_num(x, "pipeline_ms", st->pipeline_s * 1e3);
	hx_jset_num(x, "head_ms", st->head_s * 1e3);
	hx_jset_num(x, "overhead_ms", st->overhead_s * 1e3);
	for (int k = 0; k < 2; k++)
		if (st->kind[k].count > 0)
			json_array_append_new(l, afd_layer_json(kinds[k], &st->kind[k]));
	json_object_set_new(x, "per_layer", l);
	json_object_set_new(o, "decode", x);
	x = json_object();
	y = json_object();
	hx_jset_num(y, "gpu_gib", g->attn_gpu->mem_gib);
	hx_jset_num(y, "usable_gib", st->attn_capacity_b / HX_GIB);
	hx_jset_num(y, "weights_gib", st->attn_weights_b / HX_GIB);
	hx_jset_num(y, "reserve_gib", st->attn_reserve_b / HX_GIB);
	hx_jset_num(y, "kv_gib", st->attn_kv_b / HX_GIB);
	hx_jset_num(y, "kv_capacity_tokens", st->attn_kv_tokens);
	hx_jset_int(y, "max_batch", (long)floor(st->attn_kv_tokens / (a->input + a->output)));
	json_object_set_new(x, "attention", y);
	y = json_object();
	hx_jset_num(y, "gpu_gib", g->ffn_gpu->mem_gib);
	hx_jset_num(y, "usable_gib", st->ffn_capacity_b / HX_GIB);
	hx_jset_num(y, "weights_gib", st->ffn_weights_b / HX_GIB);
	hx_jset_num(y, "reserve_gib", st->ffn_reserve_b / HX_GIB);
	hx_jset_num(y, "free_gib",
		    (st->ffn_capacity_b - st->ffn_weights_b - st->ffn_reserve_b) / HX_GIB);
	json_object_set_new(x, "ffn", y);
	json_object_set_new(o, "memory", x);
	return o;
}

/* The table report of an AFD estimate: a new string. */
static char *afd_table(const est_args *a, const hx_afd *g, double ctx, const hx_afd_step *st)
{
	static const char *const kinds[2] = {"dense", "moe"};
	hx_buf t = {0};

	hx_buf_printf(&t,
		      "%s AFD: attention %d x %s (tp %d each), FFN %d x %s (tp %d each), %d "
		      "micro-batches, link %g Gb/s %g ms; weights %s, kv %s\n",
		      g->model->name, g->attn_n, g->attn_gpu->name, g->attn_tp, g->ffn_n,
		      g->ffn_gpu->name, g->ffn_tp, g->micro_batches, g->link.bw_gbps,
		      g->link.latency_ms, hx_dtype_name(g->wdt), hx_dtype_name(g->kvdt));
	hx_buf_printf(&t,
		      "decode    batch %ld at context %.0f: %.3f ms/step (pipeline %.3f, head "
		      "%.3f, overhead %.3f), %.1f tokens/s\n",
		      a->batch, ctx, st->step_s * 1e3, st->pipeline_s * 1e3, st->head_s * 1e3,
		      st->overhead_s * 1e3, st->tokens_per_s);
	for (int k = 0; k < 2; k++) {
		const hx_afd_layer *x = &st->kind[k];
		if (x->count == 0)
			continue;
		hx_buf_printf(&t,
			      "  %-5s x%-3d attention %.4f  ffn %.4f  exchange %.4f ms per "
			      "micro-batch; %.0f bytes each way per layer\n",
			      kinds[k], x->count, x->attn_s * 1e3, x->ffn_s * 1e3,
			      x->xfer_s * 1e3, x->bytes_each_way);
	}
	hx_buf_printf(&t,
		      "memory    attention %.1f GiB weights per GPU, %.1f GiB KV: %.0f tokens, "
		      "max batch %.0f; FFN %.1f GiB weights per GPU, %.1f GiB free\n",
		      st->attn_weights_b / HX_GIB, st->attn_kv_b / HX_GIB, st->attn_kv_tokens,
		      floor(st->attn_kv_tokens / (a->input + a->output)),
		      st->ffn_weights_b / HX_GIB,
		      (st->ffn_capacity_b - st->ffn_weights_b - st->ffn_reserve_b) / HX_GIB);
	return t.s;
}

/* Whether the two sides hold their weights and the batch's KV: 0, or
 * HX_EINFEASIBLE with ERR. */
static int afd_fits(const est_args *a, const hx_afd *g, const hx_afd_step *st, hx_err *err)
{
	double need = (double)a->batch * (a->input + a->output);

	if (st->attn_kv_b < 0)
		return hx_errf(err, HX_EINFEASIBLE,
			       "the attention side of %s does not fit on %s (tp %d): each GPU "
			       "needs %.1f GiB of weights and %.1f GiB of reserve but has %.1f "
			       "GiB usable",
			       g->model->name, g->attn_gpu->name, g->attn_tp,
			       st->attn_weights_b / HX_GIB, st->attn_reserve_b / HX_GIB,
			       st->attn_capacity_b / HX_GIB);
	if (st->ffn_weights_b + st->ffn_reserve_b > st->ffn_capacity_b)
		return hx_errf(err, HX_EINFEASIBLE,
			       "the FFN side of %s does not fit on %d x %s (tp %d): each GPU "
			       "needs %.1f GiB of weights and %.1f GiB of reserve but has %.1f "
			       "GiB usable",
			       g->model->name, g->ffn_n, g->ffn_gpu->name, g->ffn_tp,
			       st->ffn_weights_b / HX_GIB, st->ffn_reserve_b / HX_GIB,
			       st->ffn_capacity_b / HX_GIB);
	if (st->attn_kv_tokens < need)
		return hx_errf(err, HX_EINFEASIBLE,
			       "the KV cache of %d x %s (tp %d) holds %.0f tokens but a batch "
			       "of %ld requests of %ld + %ld tokens needs %.0f",
			       g->attn_n, g->attn_gpu->name, g->attn_tp, st->attn_kv_tokens,
			       a->batch, a->input, a->output, need);
	return 0;
}

/* estimate --afd: one AFD group's decode step. */
static int run_afd(hx_cli *cli, const est_args *a)
{
	const hx_catalog *cat;
	hx_model m;
	hx_afd g = {0};
	hx_afd_step st;
	hx_err err = {0};
	json_t *o = NULL;
	char *text = NULL;
	double ctx;
	int rc;

	if (!(cat = hx_cli_catalog(cli, &rc)))
		return rc;
	if ((rc = afd_parse(cat, a->afd, &g)))
		return rc;
	if ((rc = hx_model_resolve(cat, a->model, &m, &err)))
		return hx_cli_fail(&err);
	g.model = &m;
	g.wdt = a->wdt >= 0 ? (hx_dtype)a->wdt : m.a.dtype;
	g.kvdt = a->kvdt >= 0 ? (hx_dtype)a->kvdt : HX_DT_FP16;
	g.micro_batches = (int)a->micro;
	/* The two sides are different machines: estimate's network link. */
	g.link.bw_gbps = a->nic_gbps;
	g.link.latency_ms = 0.02;
	if (hx_afd_check(&g, &err))
		return hx_cli_usage_error(CMD, "--afd: %s", err.msg);
	ctx = a->input + a->output / 2.0;
	hx_cost_afd(&g, (double)a->batch, ctx, HX_DEFAULT_MEM_UTIL, &st);
	if ((rc = afd_fits(a, &g, &st, &err)))
		return hx_cli_fail(&err);
	if (!a->table) {
		o = afd_json(a, &g, ctx, &st);
		text = hx_json_dump(o);
	} else {
		text = afd_table(a, &g, ctx, &st);
	}
	rc = hx_cli_output("-", text);
	json_decref(o);
	free(text);
	return rc;
}

/* The options --afd does not combine with, or those it needs, and A's
 * micro-batches when not GIVEN: 0, or the usage error. */
static int afd_args_check(est_args *a, int given)
{
	if (!a->afd) {
		if (given)
			return hx_cli_usage_error(CMD, "--micro-batches needs --afd");
		return 0;
	}
	if (a->gpu)
		return hx_cli_usage_error(CMD, "--afd names its GPUs: -g does not apply");
	if (a->tp_given || a->pp != 1 || a->ep || a->dp_attn || a->dp || a->redundant ||
	    a->imbalance > 0)
		return hx_cli_usage_error(CMD, "--afd does not combine with --tp, --pp, --ep, "
					       "--dp-attention, --dp, --redundant-experts or "
					       "--eplb-imbalance");
	if (a->workload)
		return hx_cli_usage_error(CMD, "--afd does not take -w: its capacity at an SLO "
					       "is not modelled yet");
	if (a->role_given)
		return hx_cli_usage_error(CMD, "--afd does not take --role: it has no -w");
	if (!given) /* two micro-batches (ping-pong), when the batch has two */
		a->micro = a->batch < 2 ? 1 : 2;
	if (a->micro > a->batch)
		return hx_cli_usage_error(CMD,
					  "--micro-batches %ld exceeds --batch %ld: every "
					  "micro-batch needs a sequence",
					  a->micro, a->batch);
	return 0;
}

int cmd_estimate(hx_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"model", required_argument, NULL, 'm'},
	    {"gpu", required_argument, NULL, 'g'},
	    {"workload", required_argument, NULL, 'w'},
	    {"tp", required_argument, NULL, OPT_TP},
	    {"pp", required_argument, NULL, OPT_PP},
	    {"batch", required_argument, NULL, OPT_BATCH},
	    {"input", required_argument, NULL, OPT_INPUT},
	    {"output", required_argument, NULL, OPT_OUTPUT},
	    {"weights", required_argument, NULL, OPT_WEIGHTS},
	    {"kv", required_argument, NULL, OPT_KV},
	    {"ep", required_argument, NULL, OPT_EP},
	    {"dp-attention", no_argument, NULL, OPT_DP_ATTN},
	    {"dp", required_argument, NULL, OPT_DP},
	    {"redundant-experts", required_argument, NULL, OPT_REDUNDANT},
	    {"eplb-imbalance", required_argument, NULL, OPT_IMBALANCE},
	    {"nic-gbps", required_argument, NULL, OPT_NIC},
	    {"afd", required_argument, NULL, OPT_AFD},
	    {"micro-batches", required_argument, NULL, OPT_MICRO},
	    {"role", required_argument, NULL, OPT_ROLE},
	    {"format", required_argument, NULL, HX_OPT_FORMAT},
	    HX_GLOBAL_LONGOPTS,
	    {NULL, 0, NULL, 0}};
	est_args a = {.tp = 1,
		      .pp = 1,
		      .batch = 1,
		      .input = 512,
		      .output = 128,
		      .wdt = -1,
		      .kvdt = -1,
		      .nic_gbps = HX_DEFAULT_NIC_GBPS,
		      .micro = 2,
		      .phase = HX_SERVE_BOTH};
	int c, rc, micro_given = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":m:g:w:h", opts, NULL)) != -1) {
		rc = 0;
		switch (c) {
		case 'm': a.model = optarg; break;
		case 'g': a.gpu = optarg; break;
		case 'w': a.workload = optarg; break;
		case OPT_TP:
			rc = hx_cli_int(CMD, "--tp", optarg, 1, 1024, &a.tp);
			a.tp_given = 1;
			break;
		case OPT_EP: rc = hx_cli_int(CMD, "--ep", optarg, 1, 1024, &a.ep); break;
		case OPT_DP_ATTN: a.dp_attn = 1; break;
		case OPT_DP: rc = hx_cli_int(CMD, "--dp", optarg, 1, 1024, &a.dp); break;
		case OPT_REDUNDANT:
			rc = hx_cli_int(CMD, "--redundant-experts", optarg, 0, 4096,
					&a.redundant);
			break;
		case OPT_IMBALANCE:
			rc = hx_cli_num(CMD, "--eplb-imbalance", optarg, 1, 100, &a.imbalance);
			break;
		case OPT_NIC:
			rc = hx_cli_num(CMD, "--nic-gbps", optarg, 0.001, 1e6, &a.nic_gbps);
			break;
		case OPT_AFD: a.afd = optarg; break;
		case OPT_MICRO:
			rc = hx_cli_int(CMD, "--micro-batches", optarg, 1, 64, &a.micro);
			micro_given = 1;
			break;
		case OPT_ROLE:
			a.role_given = 1;
			if (strcmp(optarg, "aggregated") == 0)
				a.phase = HX_SERVE_BOTH;
			else if (strcmp(optarg, "prefill") == 0)
				a.phase = HX_SERVE_PREFILL;
			else if (strcmp(optarg, "decode") == 0)
				a.phase = HX_SERVE_DECODE;
			else
				return hx_cli_usage_error(
				    CMD,
				    "--role must be aggregated, prefill or decode, not \"%s\"",
				    optarg);
			break;
		case OPT_PP:
			rc = hx_cli_int(CMD, "--pp", optarg, 1, HX_MAX_STAGES, &a.pp);
			break;
		case OPT_BATCH:
			rc = hx_cli_int(CMD, "--batch", optarg, 1, 1000000, &a.batch);
			break;
		case OPT_INPUT:
			rc = hx_cli_int(CMD, "--input", optarg, 1, 10000000, &a.input);
			break;
		case OPT_OUTPUT:
			rc = hx_cli_int(CMD, "--output", optarg, 1, 10000000, &a.output);
			break;
		case OPT_WEIGHTS:
			a.wdt = hx_dtype_parse(optarg);
			if (a.wdt != HX_DT_BF16 && a.wdt != HX_DT_FP16 && a.wdt != HX_DT_FP8 &&
			    a.wdt != HX_DT_INT4)
				return hx_cli_usage_error(
				    CMD,
				    "--weights must be bf16, fp16, fp8 or int4, not \"%s\"",
				    optarg);
			break;
		case OPT_KV:
			a.kvdt = hx_dtype_parse(optarg);
			if (a.kvdt != HX_DT_FP16 && a.kvdt != HX_DT_BF16 && a.kvdt != HX_DT_FP8)
				return hx_cli_usage_error(
				    CMD, "--kv must be fp16, bf16 or fp8, not \"%s\"", optarg);
			break;
		default:
			if ((rc = hx_cli_common(cli, CMD, c, argv, &a.table)) != HX_CLI_GO)
				return rc;
			rc = 0;
		}
		if (rc)
			return rc;
	}
	if (optind < argc)
		return hx_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	if ((rc = afd_args_check(&a, micro_given)))
		return rc;
	if (a.afd) {
		if (!a.model)
			return hx_cli_usage_error(CMD, "-m MODEL is required");
		return run_afd(cli, &a);
	}
	if (!a.model || !a.gpu)
		return hx_cli_usage_error(CMD, "-m MODEL and -g GPU are required");
	if (a.role_given && !a.workload)
		return hx_cli_usage_error(
		    CMD, "--role needs -w workload.json (it sets the capacity's role)");
	if (a.dp > 0 && !a.dp_attn)
		return hx_cli_usage_error(CMD, "--dp needs --dp-attention");
	if ((a.redundant > 0 || a.imbalance > 0) && a.ep == 0)
		return hx_cli_usage_error(CMD,
					  "--redundant-experts and --eplb-imbalance need --ep");
	if (a.ep > 0) { /* the experts are split over all the stage's GPUs */
		if (a.tp_given && a.tp != a.ep)
			return hx_cli_usage_error(
			    CMD, "--tp %ld must equal --ep %ld (the GPUs of each stage)", a.tp,
			    a.ep);
		a.tp = a.ep;
	}
	return run(cli, &a);
}
