/* export: the helpers every target shares (see export.h). */
#include "config.h"

#include "export/export.h"

#include "model/cost.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TARGET_ENTRY(name, fn, flags) {name, fn, flags},

const hx_export_target hx_export_targets[] = {
    HX_EXPORT_TARGETS(TARGET_ENTRY, TARGET_ENTRY){NULL, NULL, 0}};

const hx_export_target *hx_export_target_find(const char *name)
{
	for (const hx_export_target *t = hx_export_targets; t->name; t++)
		if (strcmp(t->name, name) == 0)
			return t;
	return NULL;
}

void hx_export_target_list(int flag, char *out, size_t len)
{
	int n = 0, k = 0;

	for (const hx_export_target *t = hx_export_targets; t->name; t++)
		n += (t->flags & flag) == flag;
	out[0] = '\0';
	for (const hx_export_target *t = hx_export_targets; t->name; t++) {
		if ((t->flags & flag) != flag)
			continue;
		k++;
		snprintf(out + strlen(out), len - strlen(out), "%s%s",
			 k == 1   ? ""
			 : k == n ? " or "
				  : ", ",
			 t->name);
	}
}

int hx_export_check_fragments(const hx_plan *p, const hx_export_target *t,
			      const char *plan_path, hx_err *err)
{
	if (t->flags & HX_EXPORT_FRAGMENTS)
		return 0;
	/* A pipeline plan's groups are layer fragments joined node to node by
	 * hops (Helix-style request routing): a "closest form" would serve
	 * partial models, so even --lossy refuses. */
	for (int g = 0; g < p->ngroups; g++) {
		const hx_plan_group *gr = &p->groups[g];
		const hx_model *m = hx_plan_model(p, gr->model);
		if (gr->nstages > 0 && m &&
		    (gr->stage[0].first != 0 || gr->stage[gr->nstages - 1].last != m->a.layers))
			return hx_errf(
			    err, HX_EINPUT,
			    "%s: group %s holds layers [%d, %d) of %s: a pipeline plan's fragments, joined by hops, cannot be exported to %s (--to dot draws it)",
			    hx_display_path(plan_path), gr->name, gr->stage[0].first,
			    gr->stage[gr->nstages - 1].last, m->name, t->name);
	}
	return 0;
}

/* Why target NAME writes no expert-parallel flags. */
static const char *ep_refusal(const char *name)
{
	if (strcmp(name, "kserve") == 0)
		/* KServe's ParallelismSpec has data, dataLocal, dataRPCPort
		 * and expert, which its presets turn into vLLM's flags: not
		 * checked against them yet */
		return "the kserve export writes the LLMInferenceService's tensor and pipeline parallelism only, not its data and expert fields";
	if (strcmp(name, "dynamo") == 0)
		return "the dynamo export's worker arguments were checked against Dynamo's tensor- and pipeline-parallel vLLM workers only";
	return "this export writes no expert-parallel flags";
}

int hx_export_check_afd(const hx_plan *p, const hx_export_target *t, const char *plan_path,
			hx_err *err)
{
	for (int g = 0; g < p->ngroups; g++) {
		const hx_plan_group *x = &p->groups[g];
		if (!x->afd.on)
			continue;
		return hx_errf(
		    err, HX_EINPUT,
		    "%s: group %s is attention/FFN disaggregated (%d attention instances of %s, %d FFN instances of %s): no export target writes an engine's attention/FFN disaggregation, so it cannot be exported to %s (the plan stays a sizing answer: check and simulate take it)",
		    hx_display_path(plan_path), x->name, x->afd.attn_n, x->stage[0].gpu,
		    x->afd.ffn_n, x->afd.ffn_gpu, t->name);
	}
	return 0;
}

int hx_export_check_ep(const hx_plan *p, const hx_export_target *t, const char *plan_path,
		       hx_err *err)
{
	char list[128];

	if (t->flags & HX_EXPORT_FRAGMENTS)
		return 0;
	/* A tensor-parallel form would run (and be priced as) another plan:
	 * even --lossy refuses. */
	hx_export_target_list(HX_EXPORT_EP, list, sizeof(list));
	for (int g = 0; g < p->ngroups; g++)
		for (int s = 0; s < p->groups[g].nstages; s++) {
			const hx_plan_stage *st = &p->groups[g].stage[s];
			if (st->ep <= 1 && st->dp <= 1)
				continue;
			if (!(t->flags & HX_EXPORT_EP))
				return hx_errf(
				    err, HX_EINPUT,
				    "%s: group %s stage %d is expert parallel (ep %d, dp_attention %d): %s (--to %s writes the engines' expert-parallel flags, --to dot draws it)",
				    hx_display_path(plan_path), p->groups[g].name, s,
				    st->ep > 1 ? st->ep : 1, st->dp > 1 ? st->dp : 1,
				    ep_refusal(t->name), list);
			if (p->groups[g].nstages > 1)
				return hx_errf(
				    err, HX_EINPUT,
				    "%s: group %s is expert parallel (ep %d, dp_attention %d) over %d pipeline stages: the exports write the engines' expert-parallel flags for a group of one stage only (--to dot draws it)",
				    hx_display_path(plan_path), p->groups[g].name,
				    st->ep > 1 ? st->ep : 1, st->dp > 1 ? st->dp : 1,
				    p->groups[g].nstages);
		}
	return 0;
}

int hx_export_ep_shape(const hx_plan_group *g, hx_export_ep *e)
{
	const hx_plan_stage *st = g->nstages > 0 ? &g->stage[0] : NULL;

	memset(e, 0, sizeof(*e));
	if (!st || (st->ep <= 1 && st->dp <= 1))
		return 0;
	e->world = st->tp;
	e->ep = st->ep > 1 ? st->ep : 1;
	e->dp = st->dp > 1 ? st->dp : 1;
	/* check (verify.c) holds dp to divide tp */
	e->atp = st->tp % e->dp == 0 ? st->tp / e->dp : st->tp;
	e->redundant = st->redundant_experts;
	return 1;
}

const char *hx_export_vllm_all2all(hx_role role)
{
	return role == HX_ROLE_DECODE ? "deepep_low_latency" : "deepep_high_throughput";
}

void hx_export_add(hx_export_out *out, const char *name, char *text)
{
	out->f = hx_xrealloc(out->f, (size_t)(out->n + 1) * sizeof(*out->f));
	out->f[out->n].name = hx_xstrdup(name);
	out->f[out->n].text = text;
	out->n++;
}

void hx_export_release(hx_export_out *out)
{
	for (int i = 0; i < out->n; i++) {
		free(out->f[i].name);
		free(out->f[i].text);
	}
	free(out->f);
	hx_buf_release(&out->lost);
	memset(out, 0, sizeof(*out));
}

void hx_export_lost(hx_export_out *out, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	hx_buf_printf(&out->lost, "%s\n", line);
}

char *hx_shell_quote(const char *s)
{
	hx_buf b = {0};

	hx_buf_printf(&b, "'");
	for (; *s; s++) {
		if (*s == '\'')
			hx_buf_printf(&b, "'\\''");
		else
			hx_buf_printf(&b, "%c", *s);
	}
	hx_buf_printf(&b, "'");
	return b.s;
}

void hx_dns_label(char *out, size_t n, const char *s)
{
	size_t k = 0, max = n - 1 < 63 ? n - 1 : 63;

	for (; *s && k < max; s++) {
		char c = (char)tolower((unsigned char)*s);
		if (isalnum((unsigned char)c))
			out[k++] = c;
		else if (k > 0 && out[k - 1] != '-')
			out[k++] = '-';
	}
	while (k > 0 && out[k - 1] == '-')
		k--;
	if (k == 0)
		out[k++] = 'x';
	out[k] = '\0';
}

const char *hx_export_host(const hx_export_opts *o, const char *node)
{
	if (o && o->cluster)
		for (int i = 0; i < o->cluster->nnodes; i++)
			if (strcmp(o->cluster->nodes[i].name, node) == 0 &&
			    o->cluster->nodes[i].host[0])
				return o->cluster->nodes[i].host;
	return node;
}

const char *hx_export_iface(const hx_export_opts *o, const char *node)
{
	if (o && o->cluster)
		for (int i = 0; i < o->cluster->nnodes; i++)
			if (strcmp(o->cluster->nodes[i].name, node) == 0 &&
			    o->cluster->nodes[i].iface[0])
				return o->cluster->nodes[i].iface;
	return NULL;
}

int hx_export_precision_args(int engine, hx_dtype wdt, hx_dtype kvdt, const char *args[4])
{
	int n = 0;

	switch (wdt) {
	case HX_DT_BF16:
		args[n++] = "--dtype";
		args[n++] = "bfloat16";
		break;
	case HX_DT_FP16:
		args[n++] = "--dtype";
		args[n++] = "float16";
		break;
	case HX_DT_FP32:
		args[n++] = "--dtype";
		args[n++] = "float32";
		break;
	case HX_DT_FP8:
		args[n++] = "--quantization";
		args[n++] = "fp8";
		break;
	default: break;
	}
	if (kvdt == HX_DT_FP8) {
		args[n++] = "--kv-cache-dtype";
		args[n++] = engine == HX_ENGINE_SGLANG ? "fp8_e4m3" : "fp8";
	}
	return n;
}

int hx_export_max_model_len(const hx_plan *p, const hx_plan_group *g)
{
	const hx_model *m = hx_plan_model(p, g->model);
	hx_replica r;
	hx_memory mem;
	double len;

	if (!m)
		return 0;
	len = m->a.max_context;
	if (g->nreplicas > 0 && hx_plan_replica_cost(p, g, &g->replicas[0], &r, NULL) == 0) {
		hx_cost_memory(&r, HX_DEFAULT_MEM_UTIL, &mem);
		if (mem.fits && mem.kv_tokens < len)
			len = mem.kv_tokens;
	}
	return len >= 1 ? (int)len : 1;
}

const hx_gpu *hx_export_gpu(const hx_plan *p, const hx_export_opts *o, const char *node,
			    const char *gpu)
{
	if (o && o->cluster)
		for (int i = 0; i < o->cluster->nnodes; i++)
			if (strcmp(o->cluster->nodes[i].name, node) == 0)
				return &o->cluster->nodes[i].gpu;
	return hx_plan_gpu(p, gpu);
}

const char *hx_export_repo(const hx_plan *p, const hx_export_opts *o, const hx_model *m,
			   hx_dtype wdt)
{
	(void)p;
	if (wdt == HX_DT_INT4 && o && o->checkpoint)
		return o->checkpoint;
	return m->hf_repo[0] ? m->hf_repo : m->name;
}

int hx_export_int4_unmapped(const hx_plan *p, const hx_export_opts *o, const hx_plan_group *g,
			    const char *gn, char *msg, size_t n)
{
	const hx_model *m = hx_plan_model(p, g->model);

	if (g->wdt != HX_DT_INT4 || !m || (o && o->checkpoint))
		return 0;
	/* the published checkpoint is BF16: served as it is, it would not fit
	 * the memory the plan sized for int4 weights */
	snprintf(
	    msg, n,
	    "group \"%s\": int4 weights need a pre-quantized checkpoint (--checkpoint REPO, an AWQ or GPTQ repository of %s): the engine would serve \"%s\" as published",
	    gn, m->name, m->hf_repo[0] ? m->hf_repo : m->name);
	for (char *c = msg; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return 1;
}

int hx_export_version_valid(const char *v)
{
	int parts = 0;

	while (parts < 3) {
		int digits = 0;
		while (isdigit((unsigned char)*v) && digits <= 6) {
			v++;
			digits++;
		}
		if (digits == 0 || digits > 6)
			return 0;
		parts++;
		if (*v != '.')
			break;
		v++;
	}
	return *v == '\0' && parts >= 2;
}

int hx_export_version_cmp(const char *a, const char *b)
{
	for (int i = 0; i < 3; i++) {
		long x = strtol(a, (char **)&a, 10), y = strtol(b, (char **)&b, 10);
		if (x != y)
			return x < y ? -1 : 1;
		if (*a == '.')
			a++;
		if (*b == '.')
			b++;
	}
	return 0;
}

const char *hx_export_engine_version(const hx_export_opts *o, const char *dflt)
{
	return o && o->engine_version ? o->engine_version : dflt;
}

const char *hx_export_vllm_image(const hx_export_opts *o, int amd, char *out, size_t n)
{
	if (o && o->image)
		return o->image;
	if (amd)
		return HX_EXPORT_IMAGE_AMD;
	/* a release number (checked) is short: no truncation */
	snprintf(out, n, "%s:v%s", HX_EXPORT_IMAGE_NVIDIA_REPO,
		 hx_export_engine_version(o, HX_EXPORT_VLLM_VERSION));
	return out;
}
