/* plan: see plan.h. */
#include "config.h"

#include "plan/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonio.h"
#include "base/jsonw.h"
#include "base/sha256.h"

static const char *const role_names[] = {"aggregated", "prefill", "decode", NULL};

const char *hx_role_name(hx_role r)
{
	return role_names[r];
}

void hx_plan_init(hx_plan *p)
{
	memset(p, 0, sizeof(*p));
	strcpy(p->solver.engine, "none");
	strcpy(p->solver.status, "heuristic");
	p->solver.seed = 1;
}

void hx_plan_replica_release(hx_plan_replica *r)
{
	for (int s = 0; s < r->nst; s++)
		free(r->gpus[s]);
	free(r->gpus);
	free(r->ngpus);
	free(r->link);
	free(r->tp_link);
	free(r->ffn);
	r->ffn = NULL;
	r->nffn = 0;
	r->gpus = NULL;
	r->ngpus = NULL;
	r->link = r->tp_link = NULL;
	r->nst = 0;
}

void hx_plan_release(hx_plan *p)
{
	if (p->group_names)
		hx_map_release(p->group_names);
	free(p->group_names);
	for (int g = 0; g < p->ngroups; g++) {
		for (int r = 0; r < p->groups[g].nreplicas; r++)
			hx_plan_replica_release(&p->groups[g].replicas[r]);
		free(p->groups[g].replicas);
		free(p->groups[g].stage);
	}
	free(p->groups);
	free(p->models);
	free(p->gpus);
	free(p->ingress);
	free(p->kv);
	free(p->hops);
	free(p->cascade);
	free(p->classes);
	free(p->rent);
	free(p->spill.subst);
	hx_plan_init(p);
}

int hx_plan_gpus_used(const hx_plan *p)
{
	int n = 0;
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++)
			for (int s = 0; s < p->groups[g].nstages; s++)
				n += p->groups[g].replicas[r].ngpus[s];
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++)
			n += p->groups[g].replicas[r].nffn;
	return n;
}

int hx_plan_gpus_of(const hx_plan *p, const char *gpu)
{
	int n = 0;
	for (int g = 0; g < p->ngroups; g++)
		for (int s = 0; s < p->groups[g].nstages; s++)
			if (strcmp(p->groups[g].stage[s].gpu, gpu) == 0)
				for (int r = 0; r < p->groups[g].nreplicas; r++)
					n += p->groups[g].replicas[r].ngpus[s];
	for (int g = 0; g < p->ngroups; g++)
		if (p->groups[g].afd.on && strcmp(p->groups[g].afd.ffn_gpu, gpu) == 0)
			for (int r = 0; r < p->groups[g].nreplicas; r++)
				n += p->groups[g].replicas[r].nffn;
	return n;
}

static int cmp_subst(const void *a, const void *b)
{
	return strcmp(((const hx_plan_subst *)a)->gpu, ((const hx_plan_subst *)b)->gpu);
}

/* Add GPU to the distinct types in ROWS (room for them all). */
static void subst_type(hx_plan_subst *rows, int *n, const char *gpu)
{
	for (int i = 0; i < *n; i++)
		if (strcmp(rows[i].gpu, gpu) == 0)
			return;
	hx_strlcpy(rows[(*n)++].gpu, gpu, sizeof(rows[0].gpu));
}

int hx_plan_spill_against(hx_plan *p, const hx_plan *pref, double pref_usd)
{
	int room = 1, n = 0, k = 0, less = 0, more = 0;
	hx_plan_subst *rows;

	free(p->spill.subst);
	memset(&p->spill, 0, sizeof(p->spill));
	for (int g = 0; g < p->ngroups; g++)
		room += p->groups[g].nstages;
	for (int g = 0; g < pref->ngroups; g++)
		room += pref->groups[g].nstages;
	rows = hx_xcalloc((size_t)room, sizeof(*rows));
	for (int g = 0; g < p->ngroups; g++)
		for (int s = 0; s < p->groups[g].nstages; s++)
			subst_type(rows, &n, p->groups[g].stage[s].gpu);
	for (int g = 0; g < pref->ngroups; g++)
		for (int s = 0; s < pref->groups[g].nstages; s++)
			subst_type(rows, &n, pref->groups[g].stage[s].gpu);
	for (int i = 0; i < n; i++) {
		rows[i].gpus = hx_plan_gpus_of(p, rows[i].gpu);
		rows[i].preferred_gpus = hx_plan_gpus_of(pref, rows[i].gpu);
		less |= rows[i].gpus < rows[i].preferred_gpus;
		more |= rows[i].gpus > rows[i].preferred_gpus;
		if (rows[i].gpus != rows[i].preferred_gpus)
			rows[k++] = rows[i];
	}
	if (!less || !more) {
		free(rows);
		return 0;
	}
	qsort(rows, (size_t)k, sizeof(*rows), cmp_subst);
	p->spill.subst = rows;
	p->spill.nsubst = k;
	p->spill.preferred_usd_per_hour = hx_round6(pref_usd);
	p->spill.usd_per_hour_delta = hx_round6(p->predicted.usd_per_hour - pref_usd);
	return k;
}

hx_model *hx_plan_add_model(hx_plan *p, const hx_model *m)
{
	p->models = hx_xrealloc(p->models, (size_t)(p->nmodels + 1) * sizeof(*p->models));
	p->models[p->nmodels] = *m;
	return &p->models[p->nmodels++];
}

hx_gpu *hx_plan_add_gpu(hx_plan *p, const hx_gpu *g)
{
	p->gpus = hx_xrealloc(p->gpus, (size_t)(p->ngpus + 1) * sizeof(*p->gpus));
	p->gpus[p->ngpus] = *g;
	return &p->gpus[p->ngpus++];
}

hx_plan_group *hx_plan_add_group(hx_plan *p)
{
	hx_plan_group *g;

	p->groups = hx_xrealloc(p->groups, (size_t)(p->ngroups + 1) * sizeof(*p->groups));
	g = &p->groups[p->ngroups++];
	memset(g, 0, sizeof(*g));
	g->wdt = HX_DT_BF16;
	g->kvdt = HX_DT_FP16;
	return g;
}

void hx_plan_group_stages(hx_plan_group *g, int n)
{
	free(g->stage);
	g->stage = hx_xcalloc((size_t)(n > 0 ? n : 1), sizeof(*g->stage));
	g->nstages = n;
}

hx_plan_replica *hx_plan_add_replica(hx_plan_group *g)
{
	hx_plan_replica *r;

	g->replicas =
	    hx_xrealloc(g->replicas, (size_t)(g->nreplicas + 1) * sizeof(*g->replicas));
	r = &g->replicas[g->nreplicas++];
	memset(r, 0, sizeof(*r));
	r->nst = g->nstages > 0 ? g->nstages : 1;
	r->gpus = hx_xcalloc((size_t)r->nst, sizeof(*r->gpus));
	r->ngpus = hx_xcalloc((size_t)r->nst, sizeof(*r->ngpus));
	r->link = hx_xcalloc((size_t)r->nst, sizeof(*r->link));
	r->tp_link = hx_xcalloc((size_t)r->nst, sizeof(*r->tp_link));
	return r;
}

hx_route *hx_plan_add_route(hx_route **list, int *n)
{
	*list = hx_xrealloc(*list, (size_t)(*n + 1) * sizeof(**list));
	memset(&(*list)[*n], 0, sizeof(**list));
	return &(*list)[(*n)++];
}

typedef struct share_rem {
	double rem;
	int i;
} share_rem;

/* Largest remainder first, then the lower index. */
static int cmp_share_rem(const void *a, const void *b)
{
	const share_rem *x = a, *y = b;
	if (x->rem != y->rem)
		return x->rem > y->rem ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

void hx_routes_normalize(hx_route *r, int n)
{
	/* In millionths by largest remainder, so that every weight has at most
	 * six decimals, none is negative (nor -0) and they sum to exactly one
	 * million millionths: the writer prints them exactly and check accepts
	 * them.  A negative or non-finite weight (rounding in a solver) is 0. */
	const long long unit = 1000000;
	double total = 0;
	long long *k, sum = 0;
	share_rem *rem;

	if (n <= 0)
		return;
	for (int i = 0; i < n; i++)
		if (isfinite(r[i].weight) && r[i].weight > 0)
			total += r[i].weight;
	k = hx_xcalloc((size_t)n, sizeof(*k));
	rem = hx_xcalloc((size_t)n, sizeof(*rem));
	for (int i = 0; i < n; i++) {
		double w = isfinite(r[i].weight) && r[i].weight > 0 ? r[i].weight : 0;
		double x = total > 0 ? w / total * (double)unit : (double)unit / n;
		k[i] = (long long)floor(x);
		if (k[i] > unit)
			k[i] = unit;
		rem[i].rem = x - (double)k[i];
		rem[i].i = i;
		sum += k[i];
	}
	qsort(rem, (size_t)n, sizeof(*rem), cmp_share_rem);
	for (int j = 0; sum < unit; j = (j + 1) % n, sum++)
		k[rem[j].i]++;
	for (int j = n - 1; sum > unit; j = (j + n - 1) % n)
		if (k[rem[j].i] > 0) {
			k[rem[j].i]--;
			sum--;
		}
	for (int i = 0; i < n; i++)
		r[i].weight = (double)k[i] / (double)unit;
	free(k);
	free(rem);
}

const hx_model *hx_plan_model(const hx_plan *p, const char *name)
{
	for (int i = 0; i < p->nmodels; i++)
		if (strcmp(p->models[i].name, name) == 0)
			return &p->models[i];
	return NULL;
}

const hx_gpu *hx_plan_gpu(const hx_plan *p, const char *name)
{
	for (int i = 0; i < p->ngpus; i++)
		if (strcmp(p->gpus[i].name, name) == 0)
			return &p->gpus[i];
	return NULL;
}

int hx_plan_group_index(const hx_plan *p, const char *name)
{
	if (p->group_names && p->ngroups_indexed == p->ngroups) {
		int k = hx_map_get(p->group_names, name);
		if (k >= 0 && k < p->ngroups && strcmp(p->groups[k].name, name) == 0)
			return k;
	}
	for (int i = 0; i < p->ngroups; i++)
		if (strcmp(p->groups[i].name, name) == 0)
			return i;
	return -1;
}

/* The most GPUs of stage S's placement in R on one node. */
static int placement_gpus_per_node(const hx_plan_replica *r, int s)
{
	int most = 0;

	for (int k = 0; k < r->ngpus[s]; k++) {
		int n = 0, seen = 0;
		for (int j = 0; j < k && !seen; j++)
			seen = strcmp(r->gpus[s][j].node, r->gpus[s][k].node) == 0;
		if (seen)
			continue;
		for (int j = k; j < r->ngpus[s]; j++)
			n += strcmp(r->gpus[s][j].node, r->gpus[s][k].node) == 0;
		if (n > most)
			most = n;
	}
	return most;
}

/* ST (stage S of a replica built from PS and R's placement, R may be
 * NULL) gets the plan stage's expert parallelism, as estimate --ep prices
 * it: two-batch overlap; the nodes from the placement (its most GPUs on one
 * node; without R, all on one); the NIC from R's tp_link for the stage
 * (without one, HX_DEFAULT_NIC_GBPS and HX_EP_NIC_LATENCY_US), which then
 * carries the attention all-reduces only when an attention rank spans
 * nodes.  A stage without EP is left as it is. */
static void plan_stage_ep(const hx_plan_stage *ps, const hx_plan_replica *r, int s,
			  hx_stage *st)
{
	int gpn, atp;

	st->ep = ps->ep;
	st->dp = ps->dp;
	st->redundant_experts = ps->redundant_experts;
	st->imbalance = ps->eplb_imbalance;
	if (!hx_stage_is_ep(st))
		return;
	st->micro_batches = 2;
	gpn = r ? placement_gpus_per_node(r, s) : 0;
	st->gpus_per_node = gpn < st->tp ? gpn : 0;
	atp = st->dp > 1 && st->tp % st->dp == 0 ? st->tp / st->dp : st->tp;
	st->tp_bw_gb_s = st->tp_latency_us = 0;
	if (r && r->tp_link[s].bw_gbps > 0) {
		st->nic_gbps = r->tp_link[s].bw_gbps;
		st->nic_latency_us = r->tp_link[s].latency_ms * 1e3;
		if (st->gpus_per_node > 0 && atp > st->gpus_per_node) {
			st->tp_bw_gb_s = r->tp_link[s].bw_gbps / 8;
			st->tp_latency_us = r->tp_link[s].latency_ms * 1e3;
		}
	} else if (st->gpus_per_node > 0 && atp > st->gpus_per_node) {
		st->tp_bw_gb_s = HX_DEFAULT_NIC_GBPS / 8.0;
		st->tp_latency_us = HX_EP_NIC_LATENCY_US;
	}
}

int hx_plan_replica_cost(const hx_plan *p, const hx_plan_group *g, const hx_plan_replica *r,
			 hx_replica *out, hx_err *err)
{
	const hx_model *m = hx_plan_model(p, g->model);
	int rc;

	/* Errors name the group by its JSON pointer: a consumer of the plan
	 * (simulate) puts the file in front.  Its index is looked up only
	 * then: a plan being built has no index of its names, and a scan per
	 * replica was quadratic in the groups. */
	memset(out, 0, sizeof(*out));
	if (!m)
		return hx_errf(err, HX_EINPUT, "/groups/%d/model: unknown model \"%s\"",
			       hx_plan_group_index(p, g->name), g->model);
	out->model = m;
	out->wdt = g->wdt;
	out->kvdt = g->kvdt;
	out->nstages = g->nstages;
	for (int s = 0; s < g->nstages; s++) {
		hx_stage *st = &out->stage[s];
		st->gpu = hx_plan_gpu(p, g->stage[s].gpu);
		if (!st->gpu)
			return hx_errf(err, HX_EINPUT,
				       "/groups/%d/stages/%d/gpu: unknown GPU \"%s\"",
				       hx_plan_group_index(p, g->name), s, g->stage[s].gpu);
		st->tp = g->stage[s].tp;
		st->first = g->stage[s].first;
		st->last = g->stage[s].last;
		if (r && r->tp_link[s].bw_gbps > 0) {
			st->tp_bw_gb_s = r->tp_link[s].bw_gbps / 8;
			st->tp_latency_us = r->tp_link[s].latency_ms * 1e3;
		}
		if (r && s + 1 < g->nstages) {
			st->next_bw_gbps = r->link[s].bw_gbps;
			st->next_latency_ms = r->link[s].latency_ms;
		} else {
			st->next_bw_gbps = HX_DEFAULT_NIC_GBPS;
		}
		plan_stage_ep(&g->stage[s], r, s, st);
	}
	if ((rc = hx_replica_check(out, err)) && err) {
		char msg[sizeof(err->msg)];
		snprintf(msg, sizeof(msg), "/groups/%d/stages: %.900s",
			 hx_plan_group_index(p, g->name), err->msg);
		hx_strlcpy(err->msg, msg, sizeof(err->msg));
	}
	return rc;
}

int hx_plan_afd_cost(const hx_plan *p, const hx_plan_group *g, const hx_plan_replica *r,
		     hx_afd *out, hx_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!g->afd.on || g->nstages != 1)
		return hx_errf(err, HX_EINPUT, "group \"%s\" is no AFD group", g->name);
	out->model = hx_plan_model(p, g->model);
	out->attn_gpu = hx_plan_gpu(p, g->stage[0].gpu);
	out->ffn_gpu = hx_plan_gpu(p, g->afd.ffn_gpu);
	if (!out->model || !out->attn_gpu || !out->ffn_gpu)
		return hx_errf(err, HX_EINPUT,
			       "group \"%s\": its model or a GPU is not among the plan's",
			       g->name);
	out->wdt = g->wdt;
	out->kvdt = g->kvdt;
	out->attn_n = g->afd.attn_n;
	out->attn_tp = g->stage[0].tp;
	out->ffn_n = g->afd.ffn_n;
	out->ffn_tp = g->afd.ffn_tp;
	out->micro_batches = g->afd.micro_batches;
	if (r) {
		out->link = r->afd_link;
	} else {
		out->link.bw_gbps = HX_DEFAULT_NIC_GBPS;
		out->link.latency_ms = HX_AFD_LINK_LATENCY_MS;
	}
	return hx_afd_check(out, err);
}

int hx_plan_fragment_cost(const hx_plan *p, const hx_plan_group *g, const hx_plan_replica *r,
			  hx_replica *out, int *offset, hx_err *err)
{
	const hx_model *m = hx_plan_model(p, g->model);
	hx_plan_group pad;
	hx_plan_stage pst[HX_MAX_STAGES];
	int pre, post;

	*offset = 0;
	if (!m || g->nstages < 1 || g->nstages > HX_MAX_STAGES - 2)
		return hx_plan_replica_cost(p, g, r, out, err);
	pre = g->stage[0].first > 0;
	post = g->stage[g->nstages - 1].last < m->a.layers;
	if (!pre && !post)
		return hx_plan_replica_cost(p, g, r, out, err);
	/* A copy of the group's shape with the padding stages; the replica's
	 * links are taken stage by stage below. */
	pad = *g;
	pad.stage = pst;
	pad.nstages = g->nstages + pre + post;
	pad.replicas = NULL;
	pad.nreplicas = 0;
	for (int s = 0; s < g->nstages; s++)
		pad.stage[s + pre] = g->stage[s];
	if (pre) {
		pad.stage[0] = g->stage[0];
		pad.stage[0].first = 0;
		pad.stage[0].last = g->stage[0].first;
	}
	if (post) {
		pad.stage[pad.nstages - 1] = g->stage[g->nstages - 1];
		pad.stage[pad.nstages - 1].first = g->stage[g->nstages - 1].last;
		pad.stage[pad.nstages - 1].last = m->a.layers;
	}
	if (hx_plan_replica_cost(p, &pad, NULL, out, err))
		return HX_EINPUT;
	for (int s = 0; r && s < g->nstages; s++) {
		hx_stage *st = &out->stage[s + pre];
		if (r->tp_link[s].bw_gbps > 0) {
			st->tp_bw_gb_s = r->tp_link[s].bw_gbps / 8;
			st->tp_latency_us = r->tp_link[s].latency_ms * 1e3;
		}
		if (s + 1 < g->nstages) {
			st->next_bw_gbps = r->link[s].bw_gbps;
			st->next_latency_ms = r->link[s].latency_ms;
		}
		plan_stage_ep(&g->stage[s], r, s, st);
	}
	*offset = pre;
	return 0;
}

int hx_gpu_ref_parse(const char *s, hx_gpu_ref *out)
{
	const char *colon = strrchr(s, ':');
	char *end;
	long idx;

	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(out->node))
		return -1;
	/* The index is decimal digits only (strtol also takes " +1"). */
	if (!colon[1] || colon[1 + strspn(colon + 1, "0123456789")])
		return -1;
	idx = strtol(colon + 1, &end, 10);
	if (*end || idx < 0 || idx > 1000000)
		return -1;
	memcpy(out->node, s, (size_t)(colon - s));
	out->node[colon - s] = '\0';
	out->index = (int)idx;
	return 0;
}

void hx_file_digest(const char *path, char out[72])
{
	hx_err err;
	size_t len;
	char *text;

	if (strcmp(path, "-") == 0) { /* already read: nothing to digest */
		strcpy(out, "stdin");
		return;
	}
	text = hx_read_file(path, &len, &err);
	out[0] = '\0';
	if (!text)
		return;
	hx_sha256_hex(text, len, out);
	free(text);
}

/* ---- writer ------------------------------------------------------------- */

static void link_jw(hx_jw *w, const char *key, const hx_linkspec *l)
{
	hx_jw_open(w, key, '{');
	hx_jw_real(w, "bw_gbps", l->bw_gbps);
	hx_jw_real(w, "latency_ms", l->latency_ms);
	hx_jw_close(w, '}');
}

static void routes_jw(hx_jw *w, const char *key, const hx_route *r, int n, const char *from,
		      const char *to, int ingress)
{
	hx_jw_open(w, key, '[');
	for (int i = 0; i < n; i++) {
		hx_jw_open(w, NULL, '{');
		if (!ingress)
			hx_jw_str(w, from, r[i].from);
		hx_jw_str(w, to, r[i].to);
		hx_jw_real(w, "weight", hx_weight6(r[i].weight));
		if (ingress && r[i].from[0])
			hx_jw_str(w, from, r[i].from);
		if (!ingress && r[i].link[0])
			hx_jw_str(w, "link", r[i].link);
		if (!ingress && r[i].bw_gbps > 0) {
			hx_jw_real(w, "bw_gbps", r[i].bw_gbps);
			hx_jw_real(w, "latency_ms", r[i].latency_ms);
		}
		hx_jw_close(w, '}');
	}
	hx_jw_close(w, ']');
}

static json_t *models_json(const hx_plan *p)
{
	json_t *a = json_array();

	for (int i = 0; i < p->nmodels; i++) {
		json_t *m = json_object();
		hx_jset_str(m, "name", p->models[i].name);
		if (p->models[i].hf_repo[0])
			hx_jset_str(m, "hf_repo", p->models[i].hf_repo);
		json_object_set_new(m, "arch", hx_arch_to_json(&p->models[i].a));
		json_array_append_new(a, m);
	}
	return a;
}

/* GPU references as a JSON array of "node:index". */
static void refs_jw(hx_jw *w, const char *key, const hx_gpu_ref *refs, int n)
{
	hx_jw_open(w, key, '[');
	for (int k = 0; k < n; k++) {
		char ref[96];
		snprintf(ref, sizeof(ref), "%s:%d", refs[k].node, refs[k].index);
		hx_jw_str(w, NULL, ref);
	}
	hx_jw_close(w, ']');
}

static void replica_jw(hx_jw *w, const hx_plan_group *g, const hx_plan_replica *rep)
{
	int any_tp = 0;

	hx_jw_open(w, NULL, '{');
	hx_jw_str(w, "id", rep->id);
	hx_jw_open(w, "placement", '[');
	for (int s = 0; s < g->nstages; s++) {
		refs_jw(w, NULL, rep->gpus[s], rep->ngpus[s]);
		any_tp |= rep->tp_link[s].bw_gbps > 0;
	}
	hx_jw_close(w, ']');
	if (g->afd.on) {
		hx_jw_open(w, "afd", '{');
		refs_jw(w, "ffn", rep->ffn, rep->nffn);
		link_jw(w, "link", &rep->afd_link);
		hx_jw_close(w, '}');
	}
	if (g->nstages > 1) {
		hx_jw_open(w, "links", '[');
		for (int s = 0; s + 1 < g->nstages; s++)
			link_jw(w, NULL, &rep->link[s]);
		hx_jw_close(w, ']');
	}
	if (any_tp) {
		hx_jw_open(w, "tp_links", '[');
		for (int s = 0; s < g->nstages; s++) {
			if (rep->tp_link[s].bw_gbps > 0)
				link_jw(w, NULL, &rep->tp_link[s]);
			else
				hx_jw_null(w, NULL);
		}
		hx_jw_close(w, ']');
	}
	hx_jw_close(w, '}');
}

/* The EP keys of stage S, each only when set: a plan without them writes the
 * bytes it wrote before they existed. */
static void stage_ep_jw(hx_jw *w, const hx_plan_stage *s)
{
	if (s->ep > 0)
		hx_jw_int(w, "ep", s->ep);
	if (s->dp > 0)
		hx_jw_int(w, "dp_attention", s->dp);
	if (s->redundant_experts > 0)
		hx_jw_int(w, "redundant_experts", s->redundant_experts);
	if (s->eplb_imbalance > 0)
		hx_jw_num(w, "eplb_imbalance", s->eplb_imbalance);
}

/* AFD group G's "afd" object. */
static json_t *afd_json(const hx_plan_group *g)
{
	json_t *x = json_object(), *f = json_object();

	hx_jset_int(x, "attention_instances", g->afd.attn_n);
	hx_jset_str(f, "gpu", g->afd.ffn_gpu);
	hx_jset_int(f, "instances", g->afd.ffn_n);
	hx_jset_int(f, "tp", g->afd.ffn_tp);
	json_object_set_new(x, "ffn", f);
	hx_jset_int(x, "micro_batches", g->afd.micro_batches);
	json_object_set_new(x, "batch", json_real(g->afd.batch));
	json_object_set_new(x, "context", json_real(g->afd.context));
	json_object_set_new(x, "step_ms", json_real(g->afd.step_ms));
	return x;
}

static void group_jw(hx_jw *w, const hx_plan_group *g)
{
	hx_jw_open(w, NULL, '{');
	hx_jw_str(w, "name", g->name);
	hx_jw_str(w, "model", g->model);
	hx_jw_str(w, "role", hx_role_name(g->role));
	hx_jw_str(w, "weights", hx_dtype_name(g->wdt));
	hx_jw_str(w, "kv", hx_dtype_name(g->kvdt));
	hx_jw_open(w, "stages", '[');
	for (int s = 0; s < g->nstages; s++) {
		hx_jw_open(w, NULL, '{');
		hx_jw_str(w, "gpu", g->stage[s].gpu);
		hx_jw_int(w, "tp", g->stage[s].tp);
		hx_jw_open(w, "layers", '[');
		hx_jw_int(w, NULL, g->stage[s].first);
		hx_jw_int(w, NULL, g->stage[s].last);
		hx_jw_close(w, ']');
		if (g->stage[s].cross_node)
			hx_jw_bool(w, "cross_node", 1);
		stage_ep_jw(w, &g->stage[s]);
		hx_jw_close(w, '}');
	}
	hx_jw_close(w, ']');
	if (g->afd.on)
		hx_jw_json(w, "afd", afd_json(g));
	hx_jw_open(w, "replicas", '[');
	for (int r = 0; r < g->nreplicas; r++)
		replica_jw(w, g, &g->replicas[r]);
	hx_jw_close(w, ']');
	hx_jw_open(w, "predicted", '{');
	hx_jw_real(w, "capacity_rps", g->capacity_rps);
	hx_jw_real(w, "max_batch", g->max_batch);
	hx_jw_close(w, '}');
	hx_jw_close(w, '}');
}

static void routing_jw(hx_jw *w, const hx_plan *p)
{
	hx_jw_open(w, "routing", '{');
	routes_jw(w, "ingress", p->ingress, p->ningress, "class", "group", 1);
	routes_jw(w, "kv", p->kv, p->nkv, "from", "to", 0);
	routes_jw(w, "hops", p->hops, p->nhops, "from", "to", 0);
	hx_jw_open(w, "cascade", '[');
	for (int i = 0; i < p->ncascade; i++) {
		hx_jw_open(w, NULL, '{');
		hx_jw_str(w, "model", p->cascade[i].model);
		hx_jw_real(w, "threshold", p->cascade[i].threshold);
		hx_jw_real(w, "escalate", p->cascade[i].escalate);
		hx_jw_close(w, '}');
	}
	hx_jw_close(w, ']');
	if (p->nclasses > 0) {
		hx_jw_open(w, "classes", '[');
		for (int i = 0; i < p->nclasses; i++) {
			const hx_plan_class *k = &p->classes[i];
			hx_jw_open(w, NULL, '{');
			hx_jw_str(w, "name", k->name);
			hx_jw_open(w, "prompt_tokens", '[');
			hx_jw_int(w, NULL, k->prompt_lo);
			hx_jw_int(w, NULL, k->prompt_hi);
			hx_jw_close(w, ']');
			hx_jw_open(w, "output_tokens", '[');
			hx_jw_int(w, NULL, k->output_lo);
			hx_jw_int(w, NULL, k->output_hi);
			hx_jw_close(w, ']');
			if (k->share > 0)
				hx_jw_real(w, "share", k->share);
			hx_jw_close(w, '}');
		}
		hx_jw_close(w, ']');
	}
	hx_jw_close(w, '}');
}

static json_t *rent_json(const hx_plan *p)
{
	json_t *a = json_array();

	for (int i = 0; i < p->nrent; i++) {
		json_t *c = json_object();
		hx_jset_int(c, "offer", p->rent[i].offer);
		hx_jset_str(c, "gpu", p->rent[i].gpu);
		hx_jset_int(c, "nodes", p->rent[i].nodes);
		hx_jset_int(c, "gpus", p->rent[i].gpus);
		json_object_set_new(c, "usd_per_hour", json_real(p->rent[i].usd_per_hour));
		if (p->rent[i].preempt_per_hour > 0) {
			json_object_set_new(c, "spot", json_true());
			hx_jset_num(c, "preemptions_per_hour", p->rent[i].preempt_per_hour);
			hx_jset_num(c, "window_s", p->rent[i].window_s);
		}
		json_array_append_new(a, c);
	}
	return a;
}

static json_t *spot_json(const hx_plan *p)
{
	json_t *o = json_object();

	hx_jset_int(o, "nodes", p->spot.nodes);
	hx_jset_int(o, "survives_nodes", p->spot.survives_nodes);
	hx_jset_num(o, "target", p->spot.target);
	hx_jset_num(o, "slo_probability", p->spot.slo_probability);
	hx_jset_num(o, "expected_usd_per_hour", p->spot.expected_usd_per_hour);
	hx_jset_num(o, "need_rps", p->spot.need_rps);
	if (p->spot.on_demand_usd_per_hour > 0)
		hx_jset_num(o, "on_demand_usd_per_hour", p->spot.on_demand_usd_per_hour);
	return o;
}

static json_t *predicted_json(const hx_plan *p)
{
	json_t *x = json_object();

	json_object_set_new(x, "capacity_rps", json_real(p->predicted.capacity_rps));
	json_object_set_new(x, "throughput_tps", json_real(p->predicted.throughput_tps));
	json_object_set_new(x, "ttft_ms_p99", json_real(p->predicted.ttft_ms_p99));
	json_object_set_new(x, "tpot_ms_p99", json_real(p->predicted.tpot_ms_p99));
	json_object_set_new(x, "usd_per_hour", json_real(p->predicted.usd_per_hour));
	json_object_set_new(x, "usd_per_m_tokens", json_real(p->predicted.usd_per_m_tokens));
	if (p->predicted.owned_usd_per_hour > 0)
		json_object_set_new(x, "owned_usd_per_hour",
				    json_real(p->predicted.owned_usd_per_hour));
	if (p->predicted.flow_tps > 0) {
		json_object_set_new(x, "flow_tps", json_real(p->predicted.flow_tps));
		json_object_set_new(x, "flow_total_tps",
				    json_real(p->predicted.flow_total_tps));
	}
	if (p->predicted.has_quality)
		json_object_set_new(x, "quality", json_real(p->predicted.quality));
	return x;
}

static json_t *shortfall_json(const hx_plan *p)
{
	json_t *x = json_object();

	json_object_set_new(x, "rate_rps", json_real(p->shortage.rate_rps));
	json_object_set_new(x, "utilization", json_real(p->shortage.utilization));
	json_object_set_new(x, "shortfall_rps", json_real(p->shortage.shortfall_rps));
	json_object_set_new(x, "served_share", json_real(p->shortage.served_share));
	return x;
}

static json_t *spill_json(const hx_plan *p)
{
	json_t *x = json_object(), *a = json_array();

	json_object_set_new(x, "preferred_usd_per_hour",
			    json_real(p->spill.preferred_usd_per_hour));
	json_object_set_new(x, "usd_per_hour_delta", json_real(p->spill.usd_per_hour_delta));
	for (int i = 0; i < p->spill.nsubst; i++) {
		json_t *c = json_object();
		hx_jset_str(c, "gpu", p->spill.subst[i].gpu);
		hx_jset_int(c, "preferred_gpus", p->spill.subst[i].preferred_gpus);
		hx_jset_int(c, "gpus", p->spill.subst[i].gpus);
		json_array_append_new(a, c);
	}
	json_object_set_new(x, "gpus", a);
	return x;
}

/* {"usd_per_hour", "gpus"} */
static json_t *price_json(double usd, int gpus)
{
	json_t *x = json_object();

	json_object_set_new(x, "usd_per_hour", json_real(hx_round6(usd)));
	hx_jset_int(x, "gpus", gpus);
	return x;
}

static json_t *tolerate_json(const hx_plan *p)
{
	const hx_plan_tolerate *t = &p->tolerate;
	json_t *x = json_object();

	hx_jset_int(x, "k", t->k);
	if (t->k > 1)
		json_object_set_new(x, "seed", json_integer((json_int_t)t->seed));
	hx_jset_int(x, "sets_checked", t->sets_checked);
	hx_jset_int(x, "rounds", t->rounds);
	json_object_set_new(x, "plain", price_json(t->plain_usd_per_hour, t->plain_gpus));
	json_object_set_new(x, "insured", price_json(t->usd_per_hour, t->gpus));
	json_object_set_new(x, "insurance",
			    price_json(t->insurance_usd_per_hour, t->insurance_gpus));
	return x;
}

static json_t *solver_json(const hx_plan *p)
{
	json_t *x = json_object(), *a;

	hx_jset_str(x, "engine", p->solver.engine);
	hx_jset_str(x, "status", p->solver.status);
	json_object_set_new(x, "objective", json_real(p->solver.objective));
	json_object_set_new(x, "bound", json_real(p->solver.bound));
	/* A solver's relative gap can come out a rounding error below 0. */
	json_object_set_new(x, "gap", json_real(p->solver.gap > 0 ? p->solver.gap : 0.0));
	a = json_object();
	hx_jset_int(a, "nodes", p->solver.nodes);
	hx_jset_int(a, "iterations", p->solver.iterations);
	json_object_set_new(x, "work", a);
	json_object_set_new(x, "seed", json_integer((json_int_t)p->solver.seed));
	return x;
}

static json_t *simulated_json(const hx_plan *p)
{
	json_t *x = json_object();

	json_object_set_new(x, "capacity_rps", json_real(hx_round6(p->simulated.capacity_rps)));
	hx_jset_str(x, "method", p->simulated.method);
	hx_jset_int(x, "requests", p->simulated.requests);
	json_object_set_new(x, "seed", json_integer((json_int_t)p->simulated.seed));
	return x;
}

/* The plan's keys in the fixed order of formats(5); each part its own helper.
 * Streamed: the groups and routes of a plan at the input limits (100k routes)
 * as a jansson tree took longer to build, dump and free than to plan. */
static void plan_jw(hx_jw *w, const hx_plan *p)
{
	hx_jw_open(w, NULL, '{');
	hx_jw_str(w, "schema", "hexplan.plan");
	hx_jw_int(w, "version", 1);
	hx_jw_str(w, "mode", p->mode);
	/* only in a short plan: plans that carry their rate read as before */
	if (p->shortage.on)
		hx_jw_str(w, "status", "short");
	hx_jw_open(w, "inputs", '{');
	/* each digest only when known: the reader takes them as optional but
	 * not empty, so a plan without one still reads back */
	if (p->cluster_digest[0])
		hx_jw_str(w, "cluster", p->cluster_digest);
	if (p->workload_digest[0])
		hx_jw_str(w, "workload", p->workload_digest);
	if (p->calibration[0])
		hx_jw_str(w, "calibration", p->calibration);
	hx_jw_close(w, '}');
	hx_jw_json(w, "models", models_json(p));
	hx_jw_open(w, "gpus", '[');
	for (int i = 0; i < p->ngpus; i++)
		hx_jw_json(w, NULL, hx_gpu_to_json(&p->gpus[i]));
	hx_jw_close(w, ']');
	hx_jw_open(w, "groups", '[');
	for (int gi = 0; gi < p->ngroups; gi++)
		group_jw(w, &p->groups[gi]);
	hx_jw_close(w, ']');
	routing_jw(w, p);
	if (p->nrent > 0)
		hx_jw_json(w, "rent", rent_json(p));
	if (p->spot.on)
		hx_jw_json(w, "spot", spot_json(p));
	hx_jw_json(w, "predicted", predicted_json(p));
	if (p->simulated.requests > 0)
		hx_jw_json(w, "simulated", simulated_json(p));
	if (p->shortage.on)
		hx_jw_json(w, "shortfall", shortfall_json(p));
	if (p->spill.nsubst > 0)
		hx_jw_json(w, "substitutions", spill_json(p));
	if (p->tolerate.on)
		hx_jw_json(w, "tolerate", tolerate_json(p));
	hx_jw_json(w, "solver", solver_json(p));
	hx_jw_close(w, '}');
}

void hx_plan_spot_line(const hx_plan *p, char *out, size_t n)
{
	snprintf(out, n,
		 "spot: the SLO holds with probability %.6f (target %g): while at most %d of "
		 "the %d spot nodes are down; expected cost $%.2f/hour (on demand only: "
		 "$%.2f/hour)",
		 p->spot.slo_probability, p->spot.target, p->spot.survives_nodes, p->spot.nodes,
		 p->spot.expected_usd_per_hour, p->spot.on_demand_usd_per_hour);
}

char *hx_plan_dump(const hx_plan *p)
{
	hx_jw w;

	hx_jw_init(&w);
	plan_jw(&w, p);
	return hx_jw_finish(&w);
}

int hx_plan_write(const hx_plan *p, const char *path, hx_err *err)
{
	char *s = hx_plan_dump(p);
	int rc = hx_write_atomic(path, s, strlen(s), err);
	free(s);
	return rc;
}

/* ---- reader ------------------------------------------------------------- */

static int parse_link(const hx_jr *r, const json_t *v, const char *ptr, hx_linkspec *l)
{
	static const char *const keys[] = {"bw_gbps", "latency_ms", NULL};
	int rc;

	l->latency_ms = 0;
	if ((rc = hx_jr_object(r, v, ptr, keys)) ||
	    (rc = hx_jr_pos(r, v, ptr, "bw_gbps", 1, &l->bw_gbps)) ||
	    (rc = hx_jr_num(r, v, ptr, "latency_ms", 0, 0, 1e6, &l->latency_ms)))
		return rc;
	return 0;
}

/* Replica V's "afd" object (required in an AFD group, refused in any
 * other): its FFN GPUs and the link between its two sides. */
static int parse_replica_afd(const hx_jr *r, const json_t *v, const char *ptr,
			     const hx_plan_group *g, hx_plan_replica *rep)
{
	static const char *const keys[] = {"ffn", "link", NULL};
	const json_t *x = json_object_get(v, "afd"), *f, *l;
	char p[256], pf[300], pg[320];
	size_t n;
	int rc;

	if (!g->afd.on) {
		if (!x)
			return 0;
		hx_ptr_key(p, sizeof(p), ptr, "afd");
		return hx_jr_fail(r, p,
				  "only a replica of an AFD group (with \"afd\") has one");
	}
	if (!x)
		return hx_jr_fail(r, ptr,
				  "missing required key \"afd\" (the group is an AFD group)");
	hx_ptr_key(p, sizeof(p), ptr, "afd");
	if ((rc = hx_jr_object(r, x, p, keys)))
		return rc;
	hx_ptr_key(pf, sizeof(pf), p, "ffn");
	if (!(f = json_object_get(x, "ffn")))
		return hx_jr_fail(r, p, "missing required key \"ffn\"");
	if ((rc = hx_jr_array(r, f, pf, 1, &n)))
		return rc;
	rep->ffn = hx_xcalloc(n, sizeof(hx_gpu_ref));
	rep->nffn = (int)n;
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(f, i);
		hx_ptr_index(pg, sizeof(pg), pf, i);
		if (!json_is_string(e) || hx_gpu_ref_parse(json_string_value(e), &rep->ffn[i]))
			return hx_jr_fail(r, pg, "must be a GPU as \"node:index\"");
	}
	hx_ptr_key(pf, sizeof(pf), p, "link");
	if (!(l = json_object_get(x, "link")))
		return hx_jr_fail(r, p, "missing required key \"link\"");
	return parse_link(r, l, pf, &rep->afd_link);
}

static int parse_replica(const hx_jr *r, const json_t *v, const char *ptr, hx_plan_group *g,
			 hx_plan_replica *rep)
{
	static const char *const keys[] = {"id", "placement", "links", "tp_links", "afd", NULL};
	json_t *pl, *x;
	char p[256], ps[300], pg[320];
	size_t n, k;
	int rc;

	if ((rc = hx_jr_object(r, v, ptr, keys)) ||
	    (rc = hx_jr_str(r, v, ptr, "id", 1, rep->id, sizeof(rep->id))))
		return rc;
	pl = json_object_get(v, "placement");
	if (!pl)
		return hx_jr_fail(r, ptr, "missing required key \"placement\"");
	hx_ptr_key(p, sizeof(p), ptr, "placement");
	if ((rc = hx_jr_array(r, pl, p, 1, &n)))
		return rc;
	if ((int)n != g->nstages)
		return hx_jr_fail(r, p, "has %zu stages, the group %d", n, g->nstages);
	for (int s = 0; s < g->nstages; s++) {
		json_t *sa = json_array_get(pl, (size_t)s);
		hx_ptr_index(ps, sizeof(ps), p, (size_t)s);
		if ((rc = hx_jr_array(r, sa, ps, 1, &k)))
			return rc;
		rep->gpus[s] = hx_xcalloc(k, sizeof(hx_gpu_ref));
		rep->ngpus[s] = (int)k;
		for (size_t i = 0; i < k; i++) {
			json_t *e = json_array_get(sa, i);
			hx_ptr_index(pg, sizeof(pg), ps, i);
			if (!json_is_string(e) ||
			    hx_gpu_ref_parse(json_string_value(e), &rep->gpus[s][i]))
				return hx_jr_fail(r, pg, "must be a GPU as \"node:index\"");
		}
	}
	if ((x = json_object_get(v, "links"))) {
		hx_ptr_key(p, sizeof(p), ptr, "links");
		if ((rc = hx_jr_array(r, x, p, 0, &n)))
			return rc;
		if ((int)n != g->nstages - 1)
			return hx_jr_fail(r, p, "must have %d links (one per stage boundary)",
					  g->nstages - 1);
		for (size_t i = 0; i < n; i++) {
			hx_ptr_index(ps, sizeof(ps), p, i);
			if ((rc = parse_link(r, json_array_get(x, i), ps, &rep->link[i])))
				return rc;
		}
	} else if (g->nstages > 1) {
		return hx_jr_fail(r, ptr,
				  "missing required key \"links\" (the group has %d stages)",
				  g->nstages);
	}
	if ((x = json_object_get(v, "tp_links"))) {
		hx_ptr_key(p, sizeof(p), ptr, "tp_links");
		if ((rc = hx_jr_array(r, x, p, 0, &n)))
			return rc;
		if ((int)n != g->nstages)
			return hx_jr_fail(r, p, "must have one entry per stage");
		for (size_t i = 0; i < n; i++) {
			json_t *e = json_array_get(x, i);
			hx_ptr_index(ps, sizeof(ps), p, i);
			if (!json_is_null(e) && (rc = parse_link(r, e, ps, &rep->tp_link[i])))
				return rc;
		}
	}
	return parse_replica_afd(r, v, ptr, g, rep);
}

/* Stage SO's optional EP keys into X (absent: 0, off).  Only their own
 * bounds here: whether they fit the model and the stage's tp is check's
 * (verify.c) and the cost model's (hx_replica_check). */
static int parse_stage_ep(const hx_jr *r, const json_t *so, const char *ps, hx_plan_stage *x)
{
	long ep = 0, dp = 0, red = 0;
	int rc;

	if ((rc = hx_jr_int(r, so, ps, "ep", 0, 1, 4096, &ep)) ||
	    (rc = hx_jr_int(r, so, ps, "dp_attention", 0, 1, 4096, &dp)) ||
	    (rc = hx_jr_int(r, so, ps, "redundant_experts", 0, 0, 4096, &red)) ||
	    (rc = hx_jr_num(r, so, ps, "eplb_imbalance", 0, 1, 100, &x->eplb_imbalance)))
		return rc;
	x->ep = (int)ep;
	x->dp = (int)dp;
	x->redundant_experts = (int)red;
	return 0;
}

/* Group V's optional "afd" object into G->afd (absent: off).  Only the
 * bounds of its values here: whether the shape fits the model is check's
 * (verify.c) and the cost model's (hx_afd_check). */
static int parse_group_afd(const hx_jr *r, const json_t *v, const char *ptr, hx_plan_group *g)
{
	static const char *const keys[] = {
	    "attention_instances", "ffn", "micro_batches", "batch", "context", "step_ms", NULL};
	static const char *const fkeys[] = {"gpu", "instances", "tp", NULL};
	const json_t *x = json_object_get(v, "afd"), *f;
	char p[256], pf[300];
	long an = 0, fn = 0, ftp = 0, m = 0;
	int rc;

	if (!x)
		return 0;
	hx_ptr_key(p, sizeof(p), ptr, "afd");
	if (g->nstages != 1)
		return hx_jr_fail(r, p,
				  "an AFD group has one stage (its attention instances' "
				  "shape), not %d",
				  g->nstages);
	hx_ptr_key(pf, sizeof(pf), p, "ffn");
	if ((rc = hx_jr_object(r, x, p, keys)) ||
	    (rc = hx_jr_int(r, x, p, "attention_instances", 1, 1, 4096, &an)) ||
	    (rc = hx_jr_int(r, x, p, "micro_batches", 1, 1, 64, &m)) ||
	    (rc = hx_jr_num(r, x, p, "batch", 1, 1, 1e9, &g->afd.batch)) ||
	    (rc = hx_jr_num(r, x, p, "context", 1, 1, 1e9, &g->afd.context)) ||
	    (rc = hx_jr_num(r, x, p, "step_ms", 1, 1e-6, 1e9, &g->afd.step_ms)))
		return rc;
	if (!(f = json_object_get(x, "ffn")))
		return hx_jr_fail(r, p, "missing required key \"ffn\"");
	if ((rc = hx_jr_object(r, f, pf, fkeys)) ||
	    (rc = hx_jr_str(r, f, pf, "gpu", 1, g->afd.ffn_gpu, sizeof(g->afd.ffn_gpu))) ||
	    (rc = hx_jr_int(r, f, pf, "instances", 1, 1, 4096, &fn)) ||
	    (rc = hx_jr_int(r, f, pf, "tp", 1, 1, 4096, &ftp)))
		return rc;
	g->afd.on = 1;
	g->afd.attn_n = (int)an;
	g->afd.ffn_n = (int)fn;
	g->afd.ffn_tp = (int)ftp;
	g->afd.micro_batches = (int)m;
	return 0;
}

static int parse_group(const hx_jr *r, const json_t *v, const char *ptr, hx_plan_group *g)
{
	static const char *const keys[] = {"name",   "model", "role",     "weights",   "kv",
					   "stages", "afd",   "replicas", "predicted", NULL};
	static const char *const skeys[] = {"gpu",
					    "tp",
					    "layers",
					    "cross_node",
					    "ep",
					    "dp_attention",
					    "redundant_experts",
					    "eplb_imbalance",
					    NULL};
	static const char *const pkeys[] = {"capacity_rps", "max_batch", NULL};
	static const char *const wdts[] = {"bf16", "fp16", "fp8", "int4", NULL};
	static const char *const kvdts[] = {"bf16", "fp16", "fp8", NULL};
	json_t *st, *rs, *pr;
	char p[256], ps[300], pl[320];
	size_t n;
	int rc, idx = 0;

	if ((rc = hx_jr_object(r, v, ptr, keys)) ||
	    (rc = hx_jr_str(r, v, ptr, "name", 1, g->name, sizeof(g->name))) ||
	    (rc = hx_jr_str(r, v, ptr, "model", 1, g->model, sizeof(g->model))) ||
	    (rc = hx_jr_enum(r, v, ptr, "role", 1, role_names, &idx)))
		return rc;
	g->role = (hx_role)idx;
	idx = 0;
	if ((rc = hx_jr_enum(r, v, ptr, "weights", 0, wdts, &idx)))
		return rc;
	g->wdt = (hx_dtype)hx_dtype_parse(wdts[idx]);
	idx = 1;
	if ((rc = hx_jr_enum(r, v, ptr, "kv", 0, kvdts, &idx)))
		return rc;
	g->kvdt = (hx_dtype)hx_dtype_parse(kvdts[idx]);
	st = json_object_get(v, "stages");
	if (!st)
		return hx_jr_fail(r, ptr, "missing required key \"stages\"");
	hx_ptr_key(p, sizeof(p), ptr, "stages");
	if ((rc = hx_jr_array(r, st, p, 1, &n)))
		return rc;
	if (n > HX_MAX_STAGES)
		return hx_jr_fail(r, p, "has more than %d stages", HX_MAX_STAGES);
	hx_plan_group_stages(g, (int)n);
	for (size_t s = 0; s < n; s++) {
		json_t *so = json_array_get(st, s), *l;
		hx_plan_stage *x = &g->stage[s];
		long tp = 0;
		hx_ptr_index(ps, sizeof(ps), p, s);
		if ((rc = hx_jr_object(r, so, ps, skeys)) ||
		    (rc = hx_jr_str(r, so, ps, "gpu", 1, x->gpu, sizeof(x->gpu))) ||
		    (rc = hx_jr_int(r, so, ps, "tp", 1, 1, 4096, &tp)) ||
		    (rc = hx_jr_bool(r, so, ps, "cross_node", 0, &x->cross_node)) ||
		    (rc = parse_stage_ep(r, so, ps, x)))
			return rc;
		x->tp = (int)tp;
		l = json_object_get(so, "layers");
		hx_ptr_key(pl, sizeof(pl), ps, "layers");
		if (!l)
			return hx_jr_fail(r, ps, "missing required key \"layers\"");
		if (!json_is_array(l) || json_array_size(l) != 2 ||
		    !json_is_integer(json_array_get(l, 0)) ||
		    !json_is_integer(json_array_get(l, 1)) ||
		    json_integer_value(json_array_get(l, 0)) < 0 ||
		    json_integer_value(json_array_get(l, 0)) > 1000000 ||
		    json_integer_value(json_array_get(l, 1)) < 0 ||
		    json_integer_value(json_array_get(l, 1)) > 1000000)
			return hx_jr_fail(r, pl,
					  "must be a pair [first, last) of layer indexes");
		x->first = (int)json_integer_value(json_array_get(l, 0));
		x->last = (int)json_integer_value(json_array_get(l, 1));
	}
	if ((rc = parse_group_afd(r, v, ptr, g)))
		return rc;
	rs = json_object_get(v, "replicas");
	if (!rs)
		return hx_jr_fail(r, ptr, "missing required key \"replicas\"");
	hx_ptr_key(p, sizeof(p), ptr, "replicas");
	if ((rc = hx_jr_array(r, rs, p, 1, &n)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		hx_plan_replica *rep = hx_plan_add_replica(g);
		hx_ptr_index(ps, sizeof(ps), p, i);
		if ((rc = parse_replica(r, json_array_get(rs, i), ps, g, rep)))
			return rc;
	}
	if ((pr = json_object_get(v, "predicted"))) {
		hx_ptr_key(p, sizeof(p), ptr, "predicted");
		if ((rc = hx_jr_object(r, pr, p, pkeys)) ||
		    (rc = hx_jr_num(r, pr, p, "capacity_rps", 0, 0, 1e12, &g->capacity_rps)) ||
		    (rc = hx_jr_num(r, pr, p, "max_batch", 0, 0, 1e12, &g->max_batch)))
			return rc;
	}
	return 0;
}

static int parse_routes(const hx_jr *r, const json_t *v, const char *ptr, int ingress,
			hx_route **list, int *n)
{
	static const char *const ikeys[] = {"group", "weight", "class", NULL};
	static const char *const ekeys[] = {"from",    "to",         "weight", "link",
					    "bw_gbps", "latency_ms", NULL};
	size_t k;
	int rc;

	if ((rc = hx_jr_array(r, v, ptr, 0, &k)))
		return rc;
	/* All K at once: one realloc a route copied the list each time, which
	 * under memcheck (every realloc a copy) took 50 minutes of CPU for a
	 * plan of 180,000 KV routes, 3 s natively. */
	*list = hx_xrealloc(*list, ((size_t)*n + k) * sizeof(**list) + 1);
	for (size_t i = 0; i < k; i++) {
		json_t *e = json_array_get(v, i);
		hx_route *x = &(*list)[(*n)++];
		char p[128];
		memset(x, 0, sizeof(*x));
		hx_ptr_index(p, sizeof(p), ptr, i);
		if ((rc = hx_jr_object(r, e, p, ingress ? ikeys : ekeys)) ||
		    (rc = hx_jr_num(r, e, p, "weight", 1, -1e12, 1e12, &x->weight)))
			return rc;
		if (ingress) {
			if ((rc = hx_jr_str(r, e, p, "group", 1, x->to, sizeof(x->to))) ||
			    (rc = hx_jr_str(r, e, p, "class", 0, x->from, sizeof(x->from))))
				return rc;
		} else if ((rc = hx_jr_str(r, e, p, "from", 1, x->from, sizeof(x->from))) ||
			   (rc = hx_jr_str(r, e, p, "to", 1, x->to, sizeof(x->to))) ||
			   (rc = hx_jr_str(r, e, p, "link", 0, x->link, sizeof(x->link))) ||
			   (rc = hx_jr_num(r, e, p, "bw_gbps", 0, 0, 1e9, &x->bw_gbps)) ||
			   (rc = hx_jr_num(r, e, p, "latency_ms", 0, 0, 1e6, &x->latency_ms))) {
			return rc;
		}
	}
	return 0;
}

/* A [lo, hi) token range: two integers, 0 <= lo < hi. */
static int parse_range(const hx_jr *r, const json_t *obj, const char *ptr, const char *key,
		       int *lo, int *hi)
{
	json_t *v = json_object_get(obj, key);
	char p[160];

	hx_ptr_key(p, sizeof(p), ptr, key);
	if (!v)
		return hx_jr_fail(r, ptr, "missing required key \"%s\"", key);
	if (!json_is_array(v) || json_array_size(v) != 2 ||
	    !json_is_integer(json_array_get(v, 0)) || !json_is_integer(json_array_get(v, 1)))
		return hx_jr_fail(r, p, "must be [lo, hi], two integers (tokens)");
	if (json_integer_value(json_array_get(v, 0)) < 0 ||
	    json_integer_value(json_array_get(v, 1)) > (1L << 30) ||
	    json_integer_value(json_array_get(v, 0)) >=
		json_integer_value(json_array_get(v, 1)))
		return hx_jr_fail(r, p, "must have 0 <= lo < hi <= 1073741824");
	*lo = (int)json_integer_value(json_array_get(v, 0));
	*hi = (int)json_integer_value(json_array_get(v, 1));
	return 0;
}

static int parse_classes(const hx_jr *r, const json_t *v, hx_plan *p)
{
	static const char *const keys[] = {"name", "prompt_tokens", "output_tokens", "share",
					   NULL};
	size_t n;
	int rc;
	hx_map names = {0}; /* duplicate names in linear time */

	if ((rc = hx_jr_array(r, v, "/routing/classes", 0, &n)))
		return rc;
	p->classes = hx_xcalloc(n ? n : 1, sizeof(*p->classes));
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(v, i);
		hx_plan_class *k = &p->classes[i];
		char p1[128];
		hx_ptr_index(p1, sizeof(p1), "/routing/classes", i);
		if ((rc = hx_jr_object(r, e, p1, keys)) ||
		    (rc = hx_jr_str(r, e, p1, "name", 1, k->name, sizeof(k->name))) ||
		    (rc = parse_range(r, e, p1, "prompt_tokens", &k->prompt_lo,
				      &k->prompt_hi)) ||
		    (rc = parse_range(r, e, p1, "output_tokens", &k->output_lo,
				      &k->output_hi)) ||
		    (rc = hx_jr_num(r, e, p1, "share", 0, 0, 1, &k->share)))
			goto out;
		if (hx_map_put(&names, k->name, (int)i) >= 0) {
			char p2[160];
			hx_ptr_key(p2, sizeof(p2), p1, "name");
			rc = hx_jr_fail(r, p2, "duplicate class name \"%s\"", k->name);
			goto out;
		}
		p->nclasses++;
	}
out:
	hx_map_release(&names);
	return rc;
}

/* Rent entry E's spot keys: "spot": true with both of the others, or none. */
static int parse_rent_spot(const hx_jr *r, const json_t *e, const char *p1, hx_plan_rent *k)
{
	json_t *s = json_object_get(e, "spot");
	char pk[160];
	int rc;

	hx_ptr_key(pk, sizeof(pk), p1, "spot");
	if (s && !json_is_true(s))
		return hx_jr_fail(r, pk, "must be true (on-demand entries leave it out)");
	if (s) {
		if ((rc = hx_jr_pos(r, e, p1, "preemptions_per_hour", 1,
				    &k->preempt_per_hour)) ||
		    (rc = hx_jr_num(r, e, p1, "window_s", 1, 0, 1e9, &k->window_s)))
			return rc;
		return 0;
	}
	if (json_object_get(e, "preemptions_per_hour") || json_object_get(e, "window_s"))
		return hx_jr_fail(
		    r, p1,
		    "only a spot entry (\"spot\": true) has a preemption rate and window");
	return 0;
}

static int parse_rent(const hx_jr *r, const json_t *v, hx_plan *p)
{
	static const char *const keys[] = {
	    "offer",    "gpu", "nodes", "gpus", "usd_per_hour", "spot", "preemptions_per_hour",
	    "window_s", NULL};
	size_t n;
	int rc;

	if ((rc = hx_jr_array(r, v, "/rent", 0, &n)))
		return rc;
	p->rent = hx_xcalloc(n ? n : 1, sizeof(*p->rent));
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(v, i);
		hx_plan_rent *k = &p->rent[i];
		long offer = 0, nodes = 0, gpus = 0;
		char p1[128];
		hx_ptr_index(p1, sizeof(p1), "/rent", i);
		if ((rc = hx_jr_object(r, e, p1, keys)) ||
		    (rc = hx_jr_int(r, e, p1, "offer", 1, 0, 1000000, &offer)) ||
		    (rc = hx_jr_str(r, e, p1, "gpu", 1, k->gpu, sizeof(k->gpu))) ||
		    (rc = hx_jr_int(r, e, p1, "nodes", 1, 1, 1000000, &nodes)) ||
		    (rc = hx_jr_int(r, e, p1, "gpus", 1, 1, 1000000, &gpus)) ||
		    (rc = hx_jr_num(r, e, p1, "usd_per_hour", 1, 0, 1e12, &k->usd_per_hour)))
			return rc;
		if ((rc = parse_rent_spot(r, e, p1, k)))
			return rc;
		k->offer = (int)offer;
		k->nodes = (int)nodes;
		k->gpus = (int)gpus;
		p->nrent++;
	}
	return 0;
}

static int parse_spot(const hx_jr *r, const json_t *v, hx_plan *p)
{
	static const char *const keys[] = {"nodes",
					   "survives_nodes",
					   "target",
					   "slo_probability",
					   "expected_usd_per_hour",
					   "need_rps",
					   "on_demand_usd_per_hour",
					   NULL};
	long nodes = 0, survives = 0;
	int rc;

	if ((rc = hx_jr_object(r, v, "/spot", keys)) ||
	    (rc = hx_jr_int(r, v, "/spot", "nodes", 1, 1, 1000000, &nodes)) ||
	    (rc = hx_jr_int(r, v, "/spot", "survives_nodes", 1, 0, 1000000, &survives)) ||
	    (rc = hx_jr_num(r, v, "/spot", "target", 1, 0, 1, &p->spot.target)) ||
	    (rc = hx_jr_num(r, v, "/spot", "slo_probability", 1, 0, 1,
			    &p->spot.slo_probability)) ||
	    (rc = hx_jr_num(r, v, "/spot", "expected_usd_per_hour", 1, 0, 1e12,
			    &p->spot.expected_usd_per_hour)) ||
	    (rc = hx_jr_num(r, v, "/spot", "need_rps", 1, 0, 1e12, &p->spot.need_rps)) ||
	    (rc = hx_jr_num(r, v, "/spot", "on_demand_usd_per_hour", 0, 0, 1e12,
			    &p->spot.on_demand_usd_per_hour)))
		return rc;
	p->spot.on = 1;
	p->spot.nodes = (int)nodes;
	p->spot.survives_nodes = (int)survives;
	return 0;
}

/* The GPU keys a version-1 plan may leave out, and the fixed value each then takes: the one
 * that makes its term vanish (no FP8 peak, no latency, no floor, no overhead, no reserve).
 * Never the catalog's current value: a plan stays self-contained.  A key added to the cost
 * model later joins this list with its own fixed default, so older plans still load; the
 * core keys (memory, bandwidth, peaks, efficiencies, price, names) stay required. */
static const struct {
	const char *key;
	double v1;
} gpu_v1_defaults[] = {
    {"tflops_fp8", 0},
    {"intra_latency_us", 0},
    {"tdp_w", 0},
    {"kernel_floor_us", 0},
    {"allreduce_latency_us", 0},
    {"iter_overhead_ms", 0},
    {"runtime_reserve_gib", 0},
    {"graph_floor_us", 0},
    {"seq_overhead_us", 0},
    {"e_moe", 0},
    {"request_overhead_ms", 0},
};

/* One embedded GPU profile: a copy of the object with each absent optional key set to its
 * version-1 default, read as a full profile (unknown keys stay errors, no catalog). */
static int parse_plan_gpu(const hx_jr *r, const json_t *v, const char *ptr, hx_gpu *g)
{
	json_t *full = NULL;
	int rc;

	if (!json_is_object(v))
		return hx_gpu_parse(r, v, ptr, NULL, g);
	full = json_copy((json_t *)v);
	for (size_t i = 0; i < sizeof(gpu_v1_defaults) / sizeof(gpu_v1_defaults[0]); i++)
		if (!json_object_get(full, gpu_v1_defaults[i].key))
			json_object_set_new(full, gpu_v1_defaults[i].key,
					    json_real(gpu_v1_defaults[i].v1));
	rc = hx_gpu_parse(r, full, ptr, NULL, g);
	json_decref(full);
	return rc;
}

const char *hx_plan_class_of(const hx_plan *p, int prompt, int output)
{
	for (int i = 0; i < p->nclasses; i++) {
		const hx_plan_class *k = &p->classes[i];
		if (prompt >= k->prompt_lo && prompt < k->prompt_hi && output >= k->output_lo &&
		    output < k->output_hi)
			return k->name;
	}
	return NULL;
}

static int parse_inputs(const hx_jr *r, const json_t *v, hx_plan *p)
{
	static const char *const ikeys[] = {"cluster", "workload", "calibration", NULL};
	int rc;

	if ((rc = hx_jr_object(r, v, "/inputs", ikeys)) ||
	    (rc = hx_jr_str(r, v, "/inputs", "cluster", 0, p->cluster_digest,
			    sizeof(p->cluster_digest))) ||
	    (rc = hx_jr_str(r, v, "/inputs", "workload", 0, p->workload_digest,
			    sizeof(p->workload_digest))) ||
	    (rc = hx_jr_str(r, v, "/inputs", "calibration", 0, p->calibration,
			    sizeof(p->calibration))))
		return rc;
	return 0;
}

static int parse_models(const hx_jr *r, const json_t *root, hx_plan *p)
{
	static const char *const mkeys[] = {"name", "hf_repo", "arch", NULL};
	json_t *v = json_object_get(root, "models");
	char p1[128], p2[160];
	size_t n;
	int rc;

	if (!v)
		return hx_jr_fail(r, "", "missing required key \"models\"");
	if ((rc = hx_jr_array(r, v, "/models", 1, &n)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		hx_model m;
		json_t *e = json_array_get(v, i), *a;
		memset(&m, 0, sizeof(m));
		hx_ptr_index(p1, sizeof(p1), "/models", i);
		if ((rc = hx_jr_object(r, e, p1, mkeys)) ||
		    (rc = hx_jr_str(r, e, p1, "name", 1, m.name, sizeof(m.name))) ||
		    (rc = hx_jr_str(r, e, p1, "hf_repo", 0, m.hf_repo, sizeof(m.hf_repo))))
			return rc;
		a = json_object_get(e, "arch");
		if (!a)
			return hx_jr_fail(r, p1, "missing required key \"arch\"");
		hx_ptr_key(p2, sizeof(p2), p1, "arch");
		if ((rc = hx_arch_parse(r, a, p2, &m.a)))
			return rc;
		if (hx_arch_check(&m.a, "arch", r->err))
			return hx_jr_fail(r, p2, "%s", r->err->msg + 6);
		if (hx_plan_model(p, m.name))
			return hx_jr_fail(r, p1, "duplicate model \"%s\"", m.name);
		hx_plan_add_model(p, &m);
	}
	return 0;
}

static int parse_gpus(const hx_jr *r, const json_t *root, hx_plan *p)
{
	json_t *v = json_object_get(root, "gpus");
	char p1[128];
	size_t n;
	int rc;

	if (!v)
		return hx_jr_fail(r, "", "missing required key \"gpus\"");
	if ((rc = hx_jr_array(r, v, "/gpus", 1, &n)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		hx_gpu g;
		hx_ptr_index(p1, sizeof(p1), "/gpus", i);
		if ((rc = parse_plan_gpu(r, json_array_get(v, i), p1, &g)))
			return rc;
		if (hx_plan_gpu(p, g.name))
			return hx_jr_fail(r, p1, "duplicate GPU \"%s\"", g.name);
		hx_plan_add_gpu(p, &g);
	}
	return 0;
}

static int parse_groups(const hx_jr *r, const json_t *root, hx_plan *p)
{
	json_t *v = json_object_get(root, "groups");
	char p1[128], p2[160];
	hx_map *names;
	size_t n;
	int rc = 0;

	if (!v)
		return hx_jr_fail(r, "", "missing required key \"groups\"");
	if ((rc = hx_jr_array(r, v, "/groups", 1, &n)))
		return rc;
	names = hx_xcalloc(1, sizeof(hx_map));
	for (size_t i = 0; i < n; i++) {
		hx_plan_group *g = hx_plan_add_group(p);
		hx_ptr_index(p1, sizeof(p1), "/groups", i);
		if ((rc = parse_group(r, json_array_get(v, i), p1, g)))
			break;
		/* By hash: a plan may hold 50,000 groups. */
		if (hx_map_put(names, g->name, (int)i) >= 0) {
			hx_ptr_key(p2, sizeof(p2), p1, "name");
			rc = hx_jr_fail(r, p2, "duplicate group name \"%s\"", g->name);
			break;
		}
	}
	if (!rc) {
		p->group_names = names;
		p->ngroups_indexed = p->ngroups;
		return 0;
	}
	hx_map_release(names);
	free(names);
	return rc;
}

static int parse_cascade(const hx_jr *r, const json_t *x, hx_plan *p)
{
	static const char *const ckeys[] = {"model", "threshold", "escalate", NULL};
	char p1[128];
	size_t n;
	int rc;

	if ((rc = hx_jr_array(r, x, "/routing/cascade", 0, &n)))
		return rc;
	p->cascade = hx_xcalloc(n ? n : 1, sizeof(*p->cascade));
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(x, i);
		hx_cascade_step *c = &p->cascade[i];
		hx_ptr_index(p1, sizeof(p1), "/routing/cascade", i);
		if ((rc = hx_jr_object(r, e, p1, ckeys)) ||
		    (rc = hx_jr_str(r, e, p1, "model", 1, c->model, sizeof(c->model))) ||
		    (rc = hx_jr_num(r, e, p1, "threshold", 0, 0, 100, &c->threshold)) ||
		    (rc = hx_jr_num(r, e, p1, "escalate", 1, 0, 1, &c->escalate)))
			return rc;
		p->ncascade++;
	}
	return 0;
}

static int parse_routing(const hx_jr *r, const json_t *v, hx_plan *p)
{
	static const char *const rkeys[] = {"ingress", "kv",      "hops",
					    "cascade", "classes", NULL};
	json_t *x;
	int rc;

	if ((rc = hx_jr_object(r, v, "/routing", rkeys)))
		return rc;
	if ((x = json_object_get(v, "ingress")) &&
	    (rc = parse_routes(r, x, "/routing/ingress", 1, &p->ingress, &p->ningress)))
		return rc;
	if ((x = json_object_get(v, "kv")) &&
	    (rc = parse_routes(r, x, "/routing/kv", 0, &p->kv, &p->nkv)))
		return rc;
	if ((x = json_object_get(v, "hops")) &&
	    (rc = parse_routes(r, x, "/routing/hops", 0, &p->hops, &p->nhops)))
		return rc;
	if ((x = json_object_get(v, "cascade")) && (rc = parse_cascade(r, x, p)))
		return rc;
	if ((x = json_object_get(v, "classes")) && (rc = parse_classes(r, x, p)))
		return rc;
	return 0;
}

static int parse_predicted(const hx_jr *r, const json_t *v, hx_plan *p)
{
	static const char *const pkeys[] = {"capacity_rps",
					    "throughput_tps",
					    "ttft_ms_p99",
					    "tpot_ms_p99",
					    "usd_per_hour",
					    "usd_per_m_tokens",
					    "owned_usd_per_hour",
					    "flow_tps",
					    "flow_total_tps",
					    "quality",
					    NULL};
	double *f[] = {&p->predicted.capacity_rps,       &p->predicted.throughput_tps,
		       &p->predicted.ttft_ms_p99,        &p->predicted.tpot_ms_p99,
		       &p->predicted.usd_per_hour,       &p->predicted.usd_per_m_tokens,
		       &p->predicted.owned_usd_per_hour, &p->predicted.flow_tps,
		       &p->predicted.flow_total_tps};
	int rc;

	if ((rc = hx_jr_object(r, v, "/predicted", pkeys)))
		return rc;
	for (int i = 0; pkeys[i + 1]; i++)
		if ((rc = hx_jr_num(r, v, "/predicted", pkeys[i], 0, 0, 1e15, f[i])))
			return rc;
	if (json_object_get(v, "quality")) {
		p->predicted.has_quality = 1;
		if ((rc = hx_jr_num(r, v, "/predicted", "quality", 1, 0, 100,
				    &p->predicted.quality)))
			return rc;
	}
	return 0;
}

/* "status" and "shortfall": both or neither, and "status" only "short". */
static int parse_shortfall(const hx_jr *r, const json_t *root, hx_plan *p)
{
	static const char *const keys[] = {"rate_rps", "utilization", "shortfall_rps",
					   "served_share", NULL};
	static const char *const statuses[] = {"complete", "short", NULL};
	const json_t *v = json_object_get(root, "shortfall");
	int rc, idx = 0;

	if ((rc = hx_jr_enum(r, root, "", "status", 0, statuses, &idx)))
		return rc;
	if (idx == 1 && !v)
		return hx_jr_fail(r, "/status", "a short plan needs \"shortfall\"");
	if (!v)
		return 0;
	if (idx != 1)
		return hx_jr_fail(r, "/shortfall",
				  "only a plan with \"status\": \"short\" has one");
	p->shortage.on = 1;
	if ((rc = hx_jr_object(r, v, "/shortfall", keys)) ||
	    (rc = hx_jr_num(r, v, "/shortfall", "rate_rps", 1, 0, 1e15,
			    &p->shortage.rate_rps)) ||
	    (rc = hx_jr_num(r, v, "/shortfall", "utilization", 1, 1e-6, 1,
			    &p->shortage.utilization)) ||
	    (rc = hx_jr_num(r, v, "/shortfall", "shortfall_rps", 1, 0, 1e15,
			    &p->shortage.shortfall_rps)) ||
	    (rc = hx_jr_num(r, v, "/shortfall", "served_share", 1, 0, 1,
			    &p->shortage.served_share)))
		return rc;
	return 0;
}

/* "substitutions": the preferred plan's price, the difference, and at
 * least one row per GPU type (each type once). */
static int parse_spill(const hx_jr *r, const json_t *v, hx_plan *p)
{
	static const char *const keys[] = {"preferred_usd_per_hour", "usd_per_hour_delta",
					   "gpus", NULL};
	static const char *const rkeys[] = {"gpu", "preferred_gpus", "gpus", NULL};
	json_t *a;
	size_t n;
	int rc;

	if ((rc = hx_jr_object(r, v, "/substitutions", keys)) ||
	    (rc = hx_jr_num(r, v, "/substitutions", "preferred_usd_per_hour", 1, 0, 1e12,
			    &p->spill.preferred_usd_per_hour)) ||
	    (rc = hx_jr_num(r, v, "/substitutions", "usd_per_hour_delta", 1, -1e12, 1e12,
			    &p->spill.usd_per_hour_delta)))
		return rc;
	a = json_object_get(v, "gpus");
	if (!a)
		return hx_jr_fail(r, "/substitutions", "needs \"gpus\"");
	if ((rc = hx_jr_array(r, a, "/substitutions/gpus", 1, &n)))
		return rc;
	p->spill.subst = hx_xcalloc(n, sizeof(*p->spill.subst));
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(a, i);
		hx_plan_subst *k = &p->spill.subst[i];
		long pg = 0, g = 0;
		char p1[128];
		hx_ptr_index(p1, sizeof(p1), "/substitutions/gpus", i);
		if ((rc = hx_jr_object(r, e, p1, rkeys)) ||
		    (rc = hx_jr_str(r, e, p1, "gpu", 1, k->gpu, sizeof(k->gpu))) ||
		    (rc = hx_jr_int(r, e, p1, "preferred_gpus", 1, 0, 100000000, &pg)) ||
		    (rc = hx_jr_int(r, e, p1, "gpus", 1, 0, 100000000, &g)))
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(p->spill.subst[j].gpu, k->gpu) == 0)
				return hx_jr_fail(r, p1, "GPU type \"%s\" is listed twice",
						  k->gpu);
		k->preferred_gpus = (int)pg;
		k->gpus = (int)g;
		p->spill.nsubst++;
	}
	return 0;
}

static int parse_solver(const hx_jr *r, const json_t *v, hx_plan *p)
{
	static const char *const skeys[] = {"engine", "status", "objective", "bound",
					    "gap",    "work",   "seed",      NULL};
	static const char *const wkeys[] = {"nodes", "iterations", NULL};
	static const char *const statuses[] = {"optimal",    "gap_limit", "work_limit",
					       "time_limit", "heuristic", NULL};
	json_t *x;
	long seed = 1;
	int rc, idx = 4;

	if ((rc = hx_jr_object(r, v, "/solver", skeys)) ||
	    (rc = hx_jr_str(r, v, "/solver", "engine", 0, p->solver.engine,
			    sizeof(p->solver.engine))) ||
	    (rc = hx_jr_enum(r, v, "/solver", "status", 0, statuses, &idx)) ||
	    (rc = hx_jr_num(r, v, "/solver", "objective", 0, -1e300, 1e300,
			    &p->solver.objective)) ||
	    (rc = hx_jr_num(r, v, "/solver", "bound", 0, -1e300, 1e300, &p->solver.bound)) ||
	    (rc = hx_jr_num(r, v, "/solver", "gap", 0, 0, 1e300, &p->solver.gap)) ||
	    (rc = hx_jr_int(r, v, "/solver", "seed", 0, 0, 0x7fffffffffffffffL, &seed)))
		return rc;
	strcpy(p->solver.status, statuses[idx]);
	p->solver.seed = (uint64_t)seed;
	if ((x = json_object_get(v, "work"))) {
		if ((rc = hx_jr_object(r, x, "/solver/work", wkeys)) ||
		    (rc = hx_jr_int(r, x, "/solver/work", "nodes", 0, 0, 0x7fffffffffffffffL,
				    &p->solver.nodes)) ||
		    (rc = hx_jr_int(r, x, "/solver/work", "iterations", 0, 0,
				    0x7fffffffffffffffL, &p->solver.iterations)))
			return rc;
	}
	return 0;
}

static int parse_simulated(const hx_jr *r, const json_t *v, hx_plan *p)
{
	static const char *const keys[] = {"capacity_rps", "method", "requests", "seed", NULL};
	static const char *const methods[] = {"replicas", "plan", NULL};
	long seed = 1;
	int rc, idx = 0;

	if ((rc = hx_jr_object(r, v, "/simulated", keys)) ||
	    (rc = hx_jr_num(r, v, "/simulated", "capacity_rps", 1, 0, 1e15,
			    &p->simulated.capacity_rps)) ||
	    (rc = hx_jr_enum(r, v, "/simulated", "method", 1, methods, &idx)) ||
	    (rc = hx_jr_int(r, v, "/simulated", "requests", 1, 1, 1000000000L,
			    &p->simulated.requests)) ||
	    (rc = hx_jr_int(r, v, "/simulated", "seed", 1, 0, 0x7fffffffffffffffL, &seed)))
		return rc;
	strcpy(p->simulated.method, methods[idx]);
	p->simulated.seed = (uint64_t)seed;
	return 0;
}

/* "tolerate"'s "plain", "insured" or "insurance" (KEY): a price and a GPU
 * count, both at least 0 but the insurance's. */
static int parse_price(const hx_jr *r, const json_t *v, const char *key, double *usd, int *gpus)
{
	static const char *const keys[] = {"usd_per_hour", "gpus", NULL};
	const json_t *x = json_object_get(v, key);
	double lo = strcmp(key, "insurance") == 0 ? -1e12 : 0;
	char ptr[32];
	long n;
	int rc;

	snprintf(ptr, sizeof(ptr), "/tolerate/%s", key);
	if (!x)
		return hx_jr_fail(r, "/tolerate",
				  "needs \"plain\", \"insured\" and \"insurance\"");
	if ((rc = hx_jr_object(r, x, ptr, keys)) ||
	    (rc = hx_jr_num(r, x, ptr, "usd_per_hour", 1, lo, 1e12, usd)) ||
	    (rc = hx_jr_int(r, x, ptr, "gpus", 1, (long)lo, 1000000000L, &n)))
		return rc;
	*gpus = (int)n;
	return 0;
}

/* "tolerate": K from 1, the seed when K > 1, the sets and rounds, and the
 * three prices. */
static int parse_tolerate(const hx_jr *r, const json_t *v, hx_plan *p)
{
	static const char *const keys[] = {"k",     "seed",    "sets_checked", "rounds",
					   "plain", "insured", "insurance",    NULL};
	hx_plan_tolerate *t = &p->tolerate;
	long k, sets, rounds, seed = 0;
	int rc;

	if ((rc = hx_jr_object(r, v, "/tolerate", keys)) ||
	    (rc = hx_jr_int(r, v, "/tolerate", "k", 1, 1, 4095, &k)) ||
	    (rc = hx_jr_int(r, v, "/tolerate", "seed", k > 1, 0, 0x7fffffffL, &seed)) ||
	    (rc = hx_jr_int(r, v, "/tolerate", "sets_checked", 1, 1, 1000000L, &sets)) ||
	    (rc = hx_jr_int(r, v, "/tolerate", "rounds", 1, 0, 1000000L, &rounds)) ||
	    (rc = parse_price(r, v, "plain", &t->plain_usd_per_hour, &t->plain_gpus)) ||
	    (rc = parse_price(r, v, "insured", &t->usd_per_hour, &t->gpus)) ||
	    (rc = parse_price(r, v, "insurance", &t->insurance_usd_per_hour,
			      &t->insurance_gpus)))
		return rc;
	if (k == 1 && json_object_get(v, "seed"))
		return hx_jr_fail(r, "/tolerate/seed",
				  "K = 1 removes every node in turn: it draws nothing");
	t->on = 1;
	t->k = (int)k;
	t->seed = (uint64_t)seed;
	t->sets_checked = (int)sets;
	t->rounds = (int)rounds;
	return 0;
}

/* The parts in the order the writer puts them; each part its own helper. */
static int parse_plan(hx_plan *p, const json_t *root, const hx_jr *r)
{
	static const char *const top[] = {
	    "schema",    "version",       "mode",     "status", "inputs",    "models",
	    "gpus",      "groups",        "routing",  "rent",   "predicted", "simulated",
	    "shortfall", "substitutions", "tolerate", "solver", "spot",      NULL};
	char schema[32];
	json_t *v;
	int rc;

	if ((rc = hx_jr_object(r, root, "", top)) || (rc = hx_jr_version(r, root)) ||
	    (rc = hx_jr_str(r, root, "", "schema", 1, schema, sizeof(schema))))
		return rc;
	if (strcmp(schema, "hexplan.plan") != 0)
		return hx_jr_fail(r, "/schema", "must be \"hexplan.plan\"");
	if ((rc = hx_jr_str(r, root, "", "mode", 1, p->mode, sizeof(p->mode))))
		return rc;
	if ((v = json_object_get(root, "inputs")) && (rc = parse_inputs(r, v, p)))
		return rc;
	if ((rc = parse_models(r, root, p)) || (rc = parse_gpus(r, root, p)) ||
	    (rc = parse_groups(r, root, p)))
		return rc;
	if ((v = json_object_get(root, "routing")) && (rc = parse_routing(r, v, p)))
		return rc;
	if ((v = json_object_get(root, "rent")) && (rc = parse_rent(r, v, p)))
		return rc;
	if ((v = json_object_get(root, "spot")) && (rc = parse_spot(r, v, p)))
		return rc;
	if ((v = json_object_get(root, "predicted")) && (rc = parse_predicted(r, v, p)))
		return rc;
	if ((v = json_object_get(root, "simulated")) && (rc = parse_simulated(r, v, p)))
		return rc;
	if ((rc = parse_shortfall(r, root, p)))
		return rc;
	if ((v = json_object_get(root, "substitutions")) && (rc = parse_spill(r, v, p)))
		return rc;
	if ((v = json_object_get(root, "tolerate")) && (rc = parse_tolerate(r, v, p)))
		return rc;
	if ((v = json_object_get(root, "solver")) && (rc = parse_solver(r, v, p)))
		return rc;
	return 0;
}

static int load_json(hx_plan *p, json_t *root, const char *name, hx_err *err)
{
	hx_jr r = {name, err};
	int rc;

	hx_plan_init(p);
	rc = parse_plan(p, root, &r);
	json_decref(root);
	if (rc)
		hx_plan_release(p);
	return rc;
}

int hx_plan_load(hx_plan *p, const char *path, hx_err *err)
{
	json_t *root = hx_json_load_file(path, err);

	hx_plan_init(p);
	if (!root)
		return HX_EINPUT;
	return load_json(p, root, hx_display_path(path), err);
}

int hx_plan_from_json(hx_plan *p, json_t *root, const char *name, hx_err *err)
{
	return load_json(p, root, name, err);
}

int hx_plan_parse_text(hx_plan *p, const char *text, const char *name, hx_err *err)
{
	json_t *root = hx_json_load_text(text, name, err);

	hx_plan_init(p);
	if (!root)
		return HX_EINPUT;
	return load_json(p, root, name, err);
}

char *hx_plan_table(const hx_plan *p)
{
	hx_buf t = {0};
	int gpus = 0, reps = 0;
	double *gw = hx_xcalloc((size_t)p->ngroups + 1, sizeof(double));

	/* Each group's share of the requests in one pass (plans of 50,000
	 * groups): its ingress weights, each weighed by its class's share
	 * where every route names one of the plan's classes and each records
	 * its share; else (no classes, or the workload's own) the sum of its
	 * weights. */
	double *cw = hx_xcalloc((size_t)p->ningress + 1, sizeof(double));
	int shared = p->nclasses > 0;
	hx_map cls = {0};
	for (int k = 0; k < p->nclasses; k++)
		hx_map_put(&cls, p->classes[k].name, k);
	for (int i = 0; i < p->ningress && shared; i++) {
		int k = hx_map_get(&cls, p->ingress[i].from);
		cw[i] = k >= 0 ? p->classes[k].share : 0;
		shared = cw[i] > 0;
	}
	hx_map_release(&cls);
	for (int i = 0; i < p->ningress; i++) {
		int g = hx_plan_group_index(p, p->ingress[i].to);
		if (g >= 0)
			gw[g] += p->ingress[i].weight * (shared ? cw[i] : 1);
	}
	free(cw);
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++) {
			reps++;
			for (int s = 0; s < p->groups[g].nstages; s++)
				gpus += p->groups[g].replicas[r].ngpus[s];
			gpus += p->groups[g].replicas[r].nffn; /* an AFD replica's */
		}
	hx_buf_printf(&t, "plan %s: %d group%s, %d replica%s on %d GPUs", p->mode, p->ngroups,
		      p->ngroups == 1 ? "" : "s", reps, reps == 1 ? "" : "s", gpus);
	for (int i = 0; i < p->nmodels; i++)
		hx_buf_printf(&t, "%s %s", i ? "," : ", model", p->models[i].name);
	hx_buf_printf(&t, "\n\n%-6s %-10s %-12s %-40s %8s %12s %7s\n", "group", "role", "model",
		      "stages (gpu x tp [layers])", "replicas", "req/s each", "weight");
	for (int g = 0; g < p->ngroups; g++) {
		const hx_plan_group *grp = &p->groups[g];
		char st[256] = "";
		double w = gw[g];
		for (int s = 0; s < grp->nstages; s++) {
			const hx_plan_stage *ps = &grp->stage[s];
			char one[128];
			int n = snprintf(one, sizeof(one), "%s%s x%d [%d,%d)", s ? " | " : "",
					 ps->gpu, ps->tp, ps->first, ps->last);
			/* EP stages say so; others as before. */
			if ((ps->ep > 1 || ps->dp > 1) && n > 0 && (size_t)n < sizeof(one))
				snprintf(one + n, sizeof(one) - (size_t)n, " ep%d dp%d",
					 ps->ep > 1 ? ps->ep : 1, ps->dp > 1 ? ps->dp : 1);
			if (strlen(st) + strlen(one) < sizeof(st))
				strcat(st, one);
		}
		/* An AFD group: its attention instances, then its FFN side. */
		if (grp->afd.on) {
			char one[128];
			snprintf(one, sizeof(one), " x%d + %s x%d x%d ffn m%d", grp->afd.attn_n,
				 grp->afd.ffn_gpu, grp->afd.ffn_tp, grp->afd.ffn_n,
				 grp->afd.micro_batches);
			if (strlen(st) + strlen(one) < sizeof(st))
				strcat(st, one);
		}
		hx_buf_printf(&t, "%-6s %-10s %-12s %-40s %8d %12.3f %7.4f\n", grp->name,
			      hx_role_name(grp->role), grp->model, st, grp->nreplicas,
			      grp->capacity_rps, w);
	}
	hx_buf_printf(&t,
		      "\npredicted: capacity %.3f req/s, %.1f tokens/s at the workload's rate, "
		      "ttft p99 %.1f ms, tpot p99 %.2f ms\n",
		      p->predicted.capacity_rps, p->predicted.throughput_tps,
		      p->predicted.ttft_ms_p99, p->predicted.tpot_ms_p99);
	if (p->simulated.requests > 0)
		hx_buf_printf(&t,
			      "simulated: capacity %.3f req/s at the SLO (%s, seed %llu, %ld "
			      "requests per rate at least)\n",
			      p->simulated.capacity_rps, p->simulated.method,
			      (unsigned long long)p->simulated.seed, p->simulated.requests);
	if (p->predicted.flow_tps > 0)
		hx_buf_printf(
		    &t,
		    "flow: %.1f generated tokens/s, %.1f prompt + generated tokens/s, "
		    "%.3f req/s\n",
		    p->predicted.flow_tps, p->predicted.flow_total_tps,
		    p->predicted.capacity_rps);
	if (p->predicted.owned_usd_per_hour > 0)
		hx_buf_printf(
		    &t,
		    "cost: $%.2f/hour of rent, $%.4f per million tokens; the owned GPUs "
		    "used cost $%.2f/hour at the cluster's prices (free at the margin, "
		    "not counted)\n",
		    p->predicted.usd_per_hour, p->predicted.usd_per_m_tokens,
		    p->predicted.owned_usd_per_hour);
	else
		hx_buf_printf(&t, "cost: $%.2f/hour, $%.4f per million tokens\n",
			      p->predicted.usd_per_hour, p->predicted.usd_per_m_tokens);
	if (p->spot.on) {
		char line[320];
		hx_plan_spot_line(p, line, sizeof(line));
		hx_buf_printf(&t, "%s\n", line);
	}
	if (p->ncascade > 0) {
		hx_buf_printf(&t, "cascade:");
		for (int i = 0; i < p->ncascade; i++)
			if (i + 1 < p->ncascade)
				hx_buf_printf(&t, " %s (score < %g: %.2f%% on) ->",
					      p->cascade[i].model, p->cascade[i].threshold,
					      100 * p->cascade[i].escalate);
			else
				hx_buf_printf(&t, " %s\n", p->cascade[i].model);
	}
	if (p->predicted.has_quality)
		hx_buf_printf(&t, "quality: %.2f (judge score, 0-100)\n", p->predicted.quality);
	if (p->shortage.on)
		hx_buf_printf(&t,
			      "short: %.3f req/s short of the rate of %g req/s at %g%% "
			      "utilization; %.1f%% of the offered traffic served at the SLO\n",
			      p->shortage.shortfall_rps, p->shortage.rate_rps,
			      100 * p->shortage.utilization, 100 * p->shortage.served_share);
	for (int i = 0; i < p->spill.nsubst; i++)
		hx_buf_printf(&t, "substitution: %s, %d GPUs (preferred: %d)\n",
			      p->spill.subst[i].gpu, p->spill.subst[i].gpus,
			      p->spill.subst[i].preferred_gpus);
	if (p->spill.nsubst > 0)
		hx_buf_printf(
		    &t, "substitutions cost: %+.2f $/hour against the preferred plan's $%.2f\n",
		    p->spill.usd_per_hour_delta, p->spill.preferred_usd_per_hour);
	if (p->tolerate.on)
		hx_buf_printf(&t,
			      "tolerate-failures %d: %d sets checked; insurance %+.2f $/hour, "
			      "%+d GPU%s (plain plan $%.2f/hour on %d GPU%s)\n",
			      p->tolerate.k, p->tolerate.sets_checked,
			      p->tolerate.insurance_usd_per_hour, p->tolerate.insurance_gpus,
			      abs(p->tolerate.insurance_gpus) == 1 ? "" : "s",
			      p->tolerate.plain_usd_per_hour, p->tolerate.plain_gpus,
			      p->tolerate.plain_gpus == 1 ? "" : "s");
	hx_buf_printf(&t, "solver: %s, %s, seed %llu\n", p->solver.engine, p->solver.status,
		      (unsigned long long)p->solver.seed);
	free(gw);
	return t.s;
}

int hx_cascade_thresholds(const hx_quality *q, const hx_cascade_step *steps, int n,
			  double *theta)
{
	int at = 0;

	for (int m = 0; m < q->nmodels; m++)
		theta[m] = HX_CASCADE_SKIP;
	for (int k = 0; k < n; k++) {
		int m = at;
		while (m < q->nmodels && strcmp(q->model[m], steps[k].model) != 0)
			m++;
		if (m == q->nmodels)
			return -1;
		theta[m] = k + 1 < n ? steps[k].threshold : 0;
		at = m + 1;
	}
	for (int m = at; m < q->nmodels; m++)
		theta[m] = 0;
	return n > 0 ? 0 : -1;
}

int hx_plan_copy(const hx_plan *p, hx_plan *out, hx_err *err)
{
	char *text = hx_plan_dump(p);
	int rc = hx_plan_parse_text(out, text, "plan", err);

	free(text);
	return rc;
}
