/* verify: see verify.h.  Every rule walks the plan in document order, so the
 * violations come out in a fixed order: per group (model, stages, then each
 * replica's placements), then GPUs used twice, replica ids, routing, roles. */
#include "config.h"

#include "plan/verify.h"
#include "plan/spot.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *const vclass_names[HX_V_NCLASSES] = {
    "unknown-gpu", "gpu-twice",  "gpu-type",     "tp-count", "layers", "tp-heads",
    "memory",      "cross-node", "undeclared",   "routing",  "roles",  "duplicate-replica",
    "rent",        "short",      "substitution", "tolerate", "spot",   "expert-parallel",
    "afd",
};

const char *hx_vclass_name(hx_vclass c)
{
	return c >= 0 && c < HX_V_NCLASSES ? vclass_names[c] : "unknown";
}

typedef struct vlist {
	hx_violation *v;
	int n, cap;
	/* Replica ids to the first replica with each: ids' values index
	 * id_g and id_r (lookups in constant time for plans of 200k
	 * replicas). */
	hx_map ids;
	int *id_g, *id_r;
} vlist;

static void add(vlist *l, hx_vclass cls, const char *ptr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add(vlist *l, hx_vclass cls, const char *ptr, const char *fmt, ...)
{
	hx_violation *x;
	va_list ap;

	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->v = hx_xrealloc(l->v, (size_t)l->cap * sizeof(*l->v));
	}
	x = &l->v[l->n++];
	memset(x, 0, sizeof(*x));
	x->cls = cls;
	hx_strlcpy(x->ptr, ptr, sizeof(x->ptr));
	va_start(ap, fmt);
	vsnprintf(x->msg, sizeof(x->msg), fmt, ap);
	va_end(ap);
}

/* The cluster node of a GPU reference, or -1 when the cluster lacks it. */
static int ref_node(const hx_cluster *c, const hx_gpu_ref *ref)
{
	int ni = hx_cluster_node_index(c, ref->node);
	return ni >= 0 && ref->index < c->nodes[ni].count ? ni : -1;
}

/* ---- groups -------------------------------------------------------------- */

/* Expert parallelism and data-parallel attention of stage S of group GI
 * on model M: the rules of the cost model's hx_replica_check (cost.c),
 * each at the key that breaks it. */
static void check_stage_ep(const hx_plan_stage *st, const hx_model *m, int gi, int s, vlist *l)
{
	const hx_arch *a = &m->a;
	int ep = st->ep > 1 ? st->ep : 1, dp = st->dp > 1 ? st->dp : 1;
	char ptr[160];

#define AT(key) snprintf(ptr, sizeof(ptr), "/groups/%d/stages/%d/%s", gi, s, key)
	if (ep > 1 && a->experts <= 1) {
		AT("ep");
		add(l, HX_V_EP, ptr,
		    "ep %d: expert parallelism needs a mixture-of-experts model: %s is dense",
		    ep, m->name);
		return;
	}
	if (ep > 1 && ep != st->tp) {
		AT("ep");
		add(l, HX_V_EP, ptr,
		    "ep %d must equal the stage's tp %d (the experts are split over all its GPUs)",
		    ep, st->tp);
	} else if (ep > 1 && (a->experts + st->redundant_experts) % ep) {
		AT("ep");
		if (st->redundant_experts)
			add(l, HX_V_EP, ptr,
			    "ep %d does not divide the %d experts of %s plus %d redundant", ep,
			    a->experts, m->name, st->redundant_experts);
		else
			add(l, HX_V_EP, ptr, "ep %d does not divide the %d experts of %s", ep,
			    a->experts, m->name);
	}
	if (ep <= 1 && st->redundant_experts > 0) {
		AT("redundant_experts");
		add(l, HX_V_EP, ptr, "%d redundant experts need expert parallelism (ep)",
		    st->redundant_experts);
	}
	if (ep <= 1 && st->eplb_imbalance > 0) {
		AT("eplb_imbalance");
		add(l, HX_V_EP, ptr, "an EPLB imbalance needs expert parallelism (ep)");
	}
	if (dp > 1 && ep <= 1 && a->experts > 1) {
		AT("dp_attention");
		add(l, HX_V_EP, ptr,
		    "data-parallel attention on %s, a mixture of experts, needs expert parallelism (ep)",
		    m->name);
	}
	if (st->tp % dp) {
		AT("dp_attention");
		add(l, HX_V_EP, ptr, "%d attention ranks do not divide the stage's %d GPUs", dp,
		    st->tp);
	} else if (a->heads % (st->tp / dp)) {
		AT(dp > 1 ? "dp_attention" : "tp");
		if (dp > 1)
			add(l, HX_V_TP_HEADS, ptr,
			    "attention tp %d (tp %d over %d ranks) does not divide the %d attention heads of %s",
			    st->tp / dp, st->tp, dp, a->heads, m->name);
		else
			add(l, HX_V_TP_HEADS, ptr,
			    "tp %d does not divide the %d attention heads of %s", st->tp,
			    a->heads, m->name);
	}
#undef AT
}

static void check_stages(const hx_plan *p, int gi, vlist *l)
{
	const hx_plan_group *g = &p->groups[gi];
	const hx_model *m = hx_plan_model(p, g->model);
	char ptr[160];
	int next = 0, frag = p->nhops > 0;

	if (!m) {
		snprintf(ptr, sizeof(ptr), "/groups/%d/model", gi);
		add(l, HX_V_UNDECLARED, ptr, "model \"%s\" is not among the plan's models",
		    g->model);
	}
	for (int s = 0; s < g->nstages; s++) {
		const hx_plan_stage *st = &g->stage[s];
		if (!hx_plan_gpu(p, st->gpu)) {
			snprintf(ptr, sizeof(ptr), "/groups/%d/stages/%d/gpu", gi, s);
			add(l, HX_V_UNDECLARED, ptr, "GPU \"%s\" is not among the plan's gpus",
			    st->gpu);
		}
		if (m && (st->ep > 1 || st->dp > 1 || st->redundant_experts > 0 ||
			  st->eplb_imbalance > 0))
			check_stage_ep(st, m, gi, s, l);
		else if (m && m->a.heads % st->tp) {
			snprintf(ptr, sizeof(ptr), "/groups/%d/stages/%d/tp", gi, s);
			add(l, HX_V_TP_HEADS, ptr,
			    "tp %d does not divide the %d attention heads of %s", st->tp,
			    m->a.heads, m->name);
		}
		snprintf(ptr, sizeof(ptr), "/groups/%d/stages/%d/layers", gi, s);
		/* A plan with hops chains fragments: its groups may start and end
		 * anywhere; check_paths holds every path to the whole model. */
		if (frag && s == 0)
			next = st->first;
		if (st->first != next)
			add(l, HX_V_LAYERS, ptr, "starts at layer %d, not %d%s", st->first,
			    next, s ? " where the previous stage ends" : "");
		if (st->last <= st->first)
			add(l, HX_V_LAYERS, ptr, "[%d, %d) holds no layers", st->first,
			    st->last);
		else if (m && s == g->nstages - 1 && st->last != m->a.layers && !frag)
			add(l, HX_V_LAYERS, ptr,
			    "the last stage ends at layer %d, not at the %d layers of %s",
			    st->last, m->a.layers, m->name);
		next = st->last;
	}
}

/* KV bytes per token that one GPU of stage S holds: its attention rank's
 * share (the whole stage's but for data-parallel attention). */
static double stage_kv_bytes_per_token(const hx_replica *rep, int s)
{
	const hx_stage *st = &rep->stage[s];
	return hx_kv_bytes_token_layer_gpu(rep->model, st->tp / hx_stage_dp(st), rep->kvdt) *
	       (st->last - st->first);
}

/* Memory of each stage of replica R, on the GPU of every node its placement
 * uses (the cluster's profile, not the plan's).  Skipped when the replica's
 * shape is broken: other rules report that. */
static void check_memory(const hx_plan *p, const hx_cluster *c, int gi, int ri, vlist *l)
{
	const hx_plan_group *g = &p->groups[gi];
	const hx_plan_replica *r = &g->replicas[ri];
	hx_replica rep;
	hx_err err = {0};
	int off = 0;

	/* A fragment (hops plans) is priced where it sits in the model. */
	if (hx_plan_fragment_cost(p, g, r, &rep, &off, &err))
		return;
	for (int gs = 0; gs < g->nstages; gs++) {
		int s = gs + off;
		const hx_gpu *plan_gpu = rep.stage[s].gpu;
		double worst = 0, need_w = 0, need_r = 0, need_kv = 0, have = 0;
		int worst_node = -1;
		for (int k = 0; k < r->ngpus[gs]; k++) {
			int ni = ref_node(c, &r->gpus[gs][k]), seen = 0;
			hx_memory mem;
			double kv_b, short_b;
			if (ni < 0)
				continue;
			for (int j = 0; j < k && !seen; j++)
				seen = ref_node(c, &r->gpus[gs][j]) == ni;
			if (seen)
				continue;
			rep.stage[s].gpu = &c->nodes[ni].gpu;
			hx_cost_memory(&rep, HX_VERIFY_MEM_UTIL, &mem);
			/* Under data-parallel attention one rank holds a request. */
			if (mem.st[s].kv_tokens / hx_stage_dp(&rep.stage[s]) >=
			    HX_VERIFY_KV_TOKENS)
				continue;
			kv_b = HX_VERIFY_KV_TOKENS * stage_kv_bytes_per_token(&rep, s);
			short_b = mem.st[s].weights_b + mem.st[s].reserve_b + kv_b -
				  mem.st[s].capacity_b;
			if (worst_node < 0 || short_b > worst) {
				worst = short_b;
				worst_node = ni;
				need_w = mem.st[s].weights_b;
				need_r = mem.st[s].reserve_b;
				need_kv = kv_b;
				have = mem.st[s].capacity_b;
			}
		}
		rep.stage[s].gpu = plan_gpu;
		if (worst_node >= 0) {
			char ptr[160];
			const hx_node *nd = &c->nodes[worst_node];
			snprintf(ptr, sizeof(ptr), "/groups/%d/replicas/%d/placement/%d", gi,
				 ri, gs);
			add(l, HX_V_MEMORY, ptr,
			    "does not fit on the %s GPUs of node \"%s\": weights %.2f GiB + reserve %.2f GiB + KV of %d tokens %.2f GiB exceed %.2f GiB (%g%% of %g GiB); short by %.2f GiB",
			    nd->gpu.name, nd->name, need_w / HX_GIB, need_r / HX_GIB,
			    HX_VERIFY_KV_TOKENS, need_kv / HX_GIB, have / HX_GIB,
			    HX_VERIFY_MEM_UTIL * 100, nd->gpu.mem_gib, fmax(worst, 0) / HX_GIB);
		}
	}
}

/* Stage S of replica RI of group GI, expert parallel over NNODES nodes:
 * its all-to-all crosses the nodes' NICs, so the replica names the link
 * in tp_links (what it is priced by), no faster than the slowest NIC of
 * the nodes it spans on cluster C (NULL: not checked). */
static void check_ep_nic(const hx_plan *p, const hx_cluster *c, int gi, int ri, int s,
			 int nnodes, vlist *l)
{
	const hx_plan_replica *r = &p->groups[gi].replicas[ri];
	const hx_linkspec *tl = &r->tp_link[s];
	int slow = -1;
	char ptr[160];

	if (tl->bw_gbps <= 0) {
		snprintf(ptr, sizeof(ptr), "/groups/%d/replicas/%d", gi, ri);
		add(l, HX_V_EP, ptr,
		    "stage %d is expert parallel over %d nodes but the replica has no tp_links entry for it: the NIC its all-to-all crosses",
		    s, nnodes);
		return;
	}
	for (int k = 0; c && k < r->ngpus[s]; k++) {
		int ni = ref_node(c, &r->gpus[s][k]);
		if (ni >= 0 && (slow < 0 || c->nodes[ni].nic_gbps < c->nodes[slow].nic_gbps))
			slow = ni;
	}
	if (slow >= 0 && tl->bw_gbps > c->nodes[slow].nic_gbps) {
		snprintf(ptr, sizeof(ptr), "/groups/%d/replicas/%d/tp_links/%d/bw_gbps", gi, ri,
			 s);
		add(l, HX_V_EP, ptr,
		    "%g Gb/s for the all-to-all of an expert-parallel stage, above node \"%s\"'s NIC of %g Gb/s",
		    tl->bw_gbps, c->nodes[slow].name, c->nodes[slow].nic_gbps);
	}
}

/* ---- attention/FFN disaggregation (AFD) ---------------------------------- */

/* AFD group GI as a whole: it decodes, its FFN GPU is declared, its shape
 * passes the cost model's rules (hx_afd_check). */
static void check_afd_group(const hx_plan *p, int gi, vlist *l)
{
	const hx_plan_group *g = &p->groups[gi];
	char ptr[160];
	hx_err err = {0};
	hx_afd a;

	if (g->role != HX_ROLE_DECODE) {
		snprintf(ptr, sizeof(ptr), "/groups/%d/role", gi);
		add(l, HX_V_AFD, ptr,
		    "an AFD group decodes: its role must be decode, not %s (prefill runs "
		    "in a prefill group)",
		    hx_role_name(g->role));
	}
	if (!hx_plan_gpu(p, g->afd.ffn_gpu)) {
		snprintf(ptr, sizeof(ptr), "/groups/%d/afd/ffn/gpu", gi);
		add(l, HX_V_UNDECLARED, ptr, "GPU \"%s\" is not among the plan's gpus",
		    g->afd.ffn_gpu);
		return;
	}
	if (hx_plan_gpu(p, g->stage[0].gpu) && hx_plan_model(p, g->model) &&
	    hx_plan_afd_cost(p, g, NULL, &a, &err)) {
		snprintf(ptr, sizeof(ptr), "/groups/%d/afd", gi);
		add(l, HX_V_AFD, ptr, "%s", err.msg);
	}
}

/* Each of the N instances of TP GPUs at REFS (pointer BASE/index) on one
 * node, unless CROSS allows more. */
static void check_afd_spans(const hx_gpu_ref *refs, int n, int tp, int cross, const char *base,
			    const char *what, vlist *l)
{
	for (int i = 0; i < n && !cross; i++)
		for (int k = i * tp + 1; k < (i + 1) * tp; k++)
			if (strcmp(refs[k].node, refs[i * tp].node) != 0) {
				char ptr[200];
				snprintf(ptr, sizeof(ptr), "%s/%d", base, k);
				add(l, HX_V_CROSS_NODE, ptr,
				    "%s instance %d spans nodes \"%s\" and \"%s\"", what, i,
				    refs[i * tp].node, refs[k].node);
				break;
			}
}

/* The FFN GPUs of replica RI of AFD group GI against cluster C: they exist
 * and are the group's FFN type. */
static void check_afd_ffn_gpus(const hx_plan_group *g, const hx_cluster *c, int gi, int ri,
			       vlist *l)
{
	const hx_plan_replica *r = &g->replicas[ri];

	for (int k = 0; k < r->nffn; k++) {
		int ni = hx_cluster_node_index(c, r->ffn[k].node);
		char ptr[200];
		snprintf(ptr, sizeof(ptr), "/groups/%d/replicas/%d/afd/ffn/%d", gi, ri, k);
		if (ni < 0)
			add(l, HX_V_UNKNOWN_GPU, ptr,
			    "GPU \"%s:%d\": the cluster has no node \"%s\"", r->ffn[k].node,
			    r->ffn[k].index, r->ffn[k].node);
		else if (r->ffn[k].index >= c->nodes[ni].count)
			add(l, HX_V_UNKNOWN_GPU, ptr, "GPU \"%s:%d\": node \"%s\" has %d GPUs",
			    r->ffn[k].node, r->ffn[k].index, r->ffn[k].node,
			    c->nodes[ni].count);
		else if (strcmp(c->nodes[ni].gpu.name, g->afd.ffn_gpu) != 0)
			add(l, HX_V_GPU_TYPE, ptr,
			    "node \"%s\" has %s GPUs, not the FFN side's %s", r->ffn[k].node,
			    c->nodes[ni].gpu.name, g->afd.ffn_gpu);
	}
}

/* Memory of both sides of AFD replica A (GI, RI) on the cluster's GPUs:
 * the attention instances hold the batch's KV cache (batch * context
 * tokens) besides their weights, an FFN instance its FFN or expert
 * weights. */
static void check_afd_memory(const hx_plan_group *g, const hx_cluster *c, hx_afd a, int gi,
			     int ri, vlist *l)
{
	const hx_plan_replica *r = &g->replicas[ri];
	int na = r->ngpus[0] > 0 ? ref_node(c, &r->gpus[0][0]) : -1;
	int nf = r->nffn > 0 ? ref_node(c, &r->ffn[0]) : -1;
	double need = g->afd.batch * g->afd.context;
	char ptr[200];
	hx_afd_step st;

	if (na < 0 || nf < 0)
		return; /* unknown GPUs: reported above */
	a.attn_gpu = &c->nodes[na].gpu;
	a.ffn_gpu = &c->nodes[nf].gpu;
	hx_cost_afd_memory(&a, HX_VERIFY_MEM_UTIL, &st);
	if (st.attn_kv_tokens < need) {
		snprintf(ptr, sizeof(ptr), "/groups/%d/replicas/%d/placement/0", gi, ri);
		add(l, HX_V_MEMORY, ptr,
		    "the %d attention instances on %s GPUs hold the KV of %.0f tokens (each GPU: weights %.2f GiB + reserve %.2f GiB of %.2f GiB), the batch of %g sequences at context %g needs %.0f",
		    a.attn_n, a.attn_gpu->name, st.attn_kv_tokens, st.attn_weights_b / HX_GIB,
		    st.attn_reserve_b / HX_GIB, st.attn_capacity_b / HX_GIB, g->afd.batch,
		    g->afd.context, need);
	}
	if (st.ffn_weights_b + st.ffn_reserve_b > st.ffn_capacity_b) {
		snprintf(ptr, sizeof(ptr), "/groups/%d/replicas/%d/afd/ffn", gi, ri);
		add(l, HX_V_MEMORY, ptr,
		    "the FFN weights do not fit on the %s GPUs: %.2f GiB + reserve %.2f GiB exceed %.2f GiB a GPU",
		    a.ffn_gpu->name, st.ffn_weights_b / HX_GIB, st.ffn_reserve_b / HX_GIB,
		    st.ffn_capacity_b / HX_GIB);
	}
}

/* The link of AFD replica RI (cost A, the plan's profiles) against the
 * group's predicted step: each way, a step's exchange at the busier end
 * (every layer, every micro-batch: hx_cost_afd's volumes over the link's
 * bandwidth) must fit in step_ms, and the cost model's step on this link
 * must not be slower than step_ms (0.1% for rounding). */
static void check_afd_link(const hx_plan_group *g, const hx_afd *a, int gi, int ri, vlist *l)
{
	double step = g->afd.step_ms * 1e-3, busy = 0, bytes = 0;
	char ptr[200];
	hx_afd_step st;

	hx_cost_afd(a, g->afd.batch, g->afd.context, HX_VERIFY_MEM_UTIL, &st);
	for (int k = 0; k < 2; k++) {
		const hx_afd_layer *x = &st.kind[k];
		double b = x->xfer_s - a->link.latency_ms * 1e-3;
		busy += x->count * a->micro_batches * b;
		bytes += x->count * a->micro_batches * b * hx_gbps_bytes_s(a->link.bw_gbps);
	}
	snprintf(ptr, sizeof(ptr), "/groups/%d/replicas/%d/afd/link", gi, ri);
	if (busy > step)
		add(l, HX_V_AFD, ptr,
		    "cannot carry the activations at the predicted step: %.0f bytes a step each way at the busier end take %.3f ms at %g Gb/s, more than step_ms %g",
		    bytes, busy * 1e3, a->link.bw_gbps, g->afd.step_ms);
	if (st.step_s > step * 1.001)
		add(l, HX_V_AFD, ptr,
		    "the cost model's step over this link is %.3f ms, slower than the group's step_ms %g",
		    st.step_s * 1e3, g->afd.step_ms);
}

/* The link replica RI of AFD group GI claims against cluster C's: no
 * faster (bandwidth, latency) than the cluster's link, and its nodes'
 * NICs, between any attention node and any FFN node on another node. */
static void check_afd_cluster_link(const hx_plan_group *g, const hx_cluster *c, int gi, int ri,
				   vlist *l)
{
	const hx_plan_replica *r = &g->replicas[ri];
	const hx_linkspec *x = &r->afd_link;
	char ptr[200];

	for (int i = 0; i < r->ngpus[0]; i++)
		for (int k = 0; k < r->nffn; k++) {
			int a = ref_node(c, &r->gpus[0][i]), f = ref_node(c, &r->ffn[k]);
			hx_linkspec cl;
			double bw;
			if (a < 0 || f < 0 || a == f)
				continue;
			cl = hx_cluster_link(c, a, f);
			bw = cl.bw_gbps;
			if (c->nodes[a].nic_gbps > 0)
				bw = fmin(bw, c->nodes[a].nic_gbps);
			if (c->nodes[f].nic_gbps > 0)
				bw = fmin(bw, c->nodes[f].nic_gbps);
			snprintf(ptr, sizeof(ptr), "/groups/%d/replicas/%d/afd/link", gi, ri);
			if (x->bw_gbps > bw * (1 + 1e-9) ||
			    x->latency_ms < cl.latency_ms * (1 - 1e-9)) {
				add(l, HX_V_AFD, ptr,
				    "claims %g Gb/s and %g ms between nodes \"%s\" and \"%s\", whose link in the cluster is %g Gb/s (NICs included) and %g ms",
				    x->bw_gbps, x->latency_ms, c->nodes[a].name,
				    c->nodes[f].name, bw, cl.latency_ms);
				return;
			}
		}
}

/* Replica RI of AFD group GI: its FFN GPUs (count, nodes, type), memory
 * on cluster C's GPUs (C may be NULL: skipped), its link. */
static void check_afd_replica(const hx_plan *p, const hx_cluster *c, int gi, int ri, vlist *l)
{
	const hx_plan_group *g = &p->groups[gi];
	const hx_plan_replica *r = &g->replicas[ri];
	int tp = g->stage[0].tp, need = g->afd.ffn_n * g->afd.ffn_tp;
	char base[160];
	hx_err err = {0};
	hx_afd a;

	snprintf(base, sizeof(base), "/groups/%d/replicas/%d/afd/ffn", gi, ri);
	if (r->nffn != need) {
		add(l, HX_V_TP_COUNT, base,
		    "has %d GPUs, the %d FFN instances of tp %d take %d", r->nffn, g->afd.ffn_n,
		    g->afd.ffn_tp, need);
		return;
	}
	if (r->ngpus[0] != tp * g->afd.attn_n)
		return; /* reported by check_placement */
	check_afd_spans(r->ffn, g->afd.ffn_n, g->afd.ffn_tp, 0, base, "FFN", l);
	snprintf(base, sizeof(base), "/groups/%d/replicas/%d/placement/0", gi, ri);
	check_afd_spans(r->gpus[0], g->afd.attn_n, tp, g->stage[0].cross_node, base,
			"attention", l);
	if (hx_plan_afd_cost(p, g, r, &a, &err))
		return; /* the group's shape: check_afd_group */
	if (c) {
		check_afd_ffn_gpus(g, c, gi, ri, l);
		check_afd_memory(g, c, a, gi, ri, l);
		check_afd_cluster_link(g, c, gi, ri, l);
	}
	check_afd_link(g, &a, gi, ri, l);
}

static void check_placement(const hx_plan *p, const hx_cluster *c, int gi, int ri, vlist *l)
{
	const hx_plan_group *g = &p->groups[gi];
	const hx_plan_replica *r = &g->replicas[ri];
	char ptr[160];

	for (int s = 0; s < g->nstages; s++) {
		const hx_plan_stage *st = &g->stage[s];
		const hx_gpu_ref *refs = r->gpus[s];
		const char *other = NULL;
		int nnodes = 1;

		snprintf(ptr, sizeof(ptr), "/groups/%d/replicas/%d/placement/%d", gi, ri, s);
		if (g->afd.on && r->ngpus[s] != st->tp * g->afd.attn_n)
			add(l, HX_V_TP_COUNT, ptr,
			    "has %d GPUs, the %d attention instances of tp %d take %d",
			    r->ngpus[s], g->afd.attn_n, st->tp, st->tp * g->afd.attn_n);
		else if (!g->afd.on && r->ngpus[s] != st->tp)
			add(l, HX_V_TP_COUNT, ptr, "has %d GPUs, the stage's tp is %d",
			    r->ngpus[s], st->tp);
		for (int k = 0; c && k < r->ngpus[s]; k++) {
			int ni = hx_cluster_node_index(c, refs[k].node), first = 1;
			char pk[180];
			snprintf(pk, sizeof(pk), "%s/%d", ptr, k);
			if (ni < 0) {
				add(l, HX_V_UNKNOWN_GPU, pk,
				    "GPU \"%s:%d\": the cluster has no node \"%s\"",
				    refs[k].node, refs[k].index, refs[k].node);
				continue;
			}
			if (refs[k].index >= c->nodes[ni].count)
				add(l, HX_V_UNKNOWN_GPU, pk,
				    "GPU \"%s:%d\": node \"%s\" has %d GPUs", refs[k].node,
				    refs[k].index, refs[k].node, c->nodes[ni].count);
			/* The type once per node of the stage. */
			for (int j = 0; j < k && first; j++)
				first = strcmp(refs[j].node, refs[k].node) != 0;
			if (first && strcmp(c->nodes[ni].gpu.name, st->gpu) != 0)
				add(l, HX_V_GPU_TYPE, pk,
				    "node \"%s\" has %s GPUs, not the stage's %s", refs[k].node,
				    c->nodes[ni].gpu.name, st->gpu);
		}
		for (int k = 1; k < r->ngpus[s]; k++) {
			int first = 1;
			for (int j = 0; j < k && first; j++)
				first = strcmp(refs[j].node, refs[k].node) != 0;
			if (first) {
				if (!other)
					other = refs[k].node;
				nnodes++;
			}
		}
		if (nnodes > 1 && !st->cross_node && !g->afd.on) {
			if (nnodes == 2)
				add(l, HX_V_CROSS_NODE, ptr,
				    "the TP group spans nodes \"%s\" and \"%s\" but the stage is not cross_node",
				    refs[0].node, other);
			else
				add(l, HX_V_CROSS_NODE, ptr,
				    "the TP group spans %d nodes (\"%s\", \"%s\", ...) but the stage is not cross_node",
				    nnodes, refs[0].node, other);
		}
		if (nnodes > 1 && st->ep > 1)
			check_ep_nic(p, c, gi, ri, s, nnodes, l);
	}
	if (g->afd.on)
		check_afd_replica(p, c, gi, ri, l);
	else if (c)
		check_memory(p, c, gi, ri, l);
}

/* ---- GPUs and replica ids used twice -------------------------------------- */

typedef struct use {
	const hx_gpu_ref *ref;
	int g, r, s, k;
	int order;
} use;

static int cmp_use(const void *a, const void *b)
{
	const use *x = a, *y = b;
	int d = strcmp(x->ref->node, y->ref->node);
	if (d)
		return d;
	if (x->ref->index != y->ref->index)
		return x->ref->index < y->ref->index ? -1 : 1;
	return x->order - y->order;
}

/* The JSON pointer of use U: a placement's GPU, or (stage -1) an AFD
 * replica's FFN GPU. */
static void use_ptr(const use *u, char *out, size_t n)
{
	if (u->s < 0)
		snprintf(out, n, "/groups/%d/replicas/%d/afd/ffn/%d", u->g, u->r, u->k);
	else
		snprintf(out, n, "/groups/%d/replicas/%d/placement/%d/%d", u->g, u->r, u->s,
			 u->k);
}

static void check_gpus_twice(const hx_plan *p, vlist *l)
{
	use *u = NULL;
	int n = 0, *first, *pos;

	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++)
			for (int s = 0; s < p->groups[g].nstages; s++)
				n += p->groups[g].replicas[r].ngpus[s];
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++)
			n += p->groups[g].replicas[r].nffn;
	if (n == 0)
		return;
	u = hx_xcalloc((size_t)n, sizeof(*u));
	first = hx_xcalloc((size_t)n, sizeof(*first));
	pos = hx_xcalloc((size_t)n, sizeof(*pos));
	n = 0;
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++)
			for (int s = 0; s < p->groups[g].nstages; s++)
				for (int k = 0; k < p->groups[g].replicas[r].ngpus[s]; k++) {
					const hx_gpu_ref *ref =
					    &p->groups[g].replicas[r].gpus[s][k];
					u[n] = (use){ref, g, r, s, k, n};
					n++;
				}
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++)
			for (int k = 0; k < p->groups[g].replicas[r].nffn; k++) {
				u[n] = (use){&p->groups[g].replicas[r].ffn[k], g, r, -1, k, n};
				n++;
			}
	qsort(u, (size_t)n, sizeof(*u), cmp_use);
	/* FIRST[order]: the sorted index of the first use of that use's GPU, or
	 * -1 when it is the first; then report in document order. */
	for (int i = 0, head = 0; i < n; i++) {
		if (strcmp(u[i].ref->node, u[head].ref->node) != 0 ||
		    u[i].ref->index != u[head].ref->index)
			head = i;
		first[u[i].order] = i == head ? -1 : head;
	}
	for (int i = 0; i < n; i++)
		pos[u[i].order] = i;
	for (int o = 0; o < n; o++) {
		const use *a, *b;
		char ptr[160], at[160];
		if (first[o] < 0)
			continue;
		a = &u[first[o]];
		b = &u[pos[o]];
		use_ptr(b, ptr, sizeof(ptr));
		use_ptr(a, at, sizeof(at));
		add(l, HX_V_GPU_TWICE, ptr, "GPU \"%s:%d\" is already used at %s", b->ref->node,
		    b->ref->index, at);
	}
	free(pos);
	free(first);
	free(u);
}

/* The first replica with id ID (L's index of P): its group and index, or 0
 * when none. */
static int find_replica(const vlist *l, const char *id, int *gi, int *ri)
{
	int k = hx_map_get(&l->ids, id);

	if (k < 0)
		return 0;
	*gi = l->id_g[k];
	*ri = l->id_r[k];
	return 1;
}

/* Index P's replica ids into L. */
static void index_replicas(const hx_plan *p, vlist *l)
{
	int n = 0, k = 0;

	for (int g = 0; g < p->ngroups; g++)
		n += p->groups[g].nreplicas;
	l->id_g = hx_xcalloc((size_t)n + 1, sizeof(int));
	l->id_r = hx_xcalloc((size_t)n + 1, sizeof(int));
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++)
			if (hx_map_put(&l->ids, p->groups[g].replicas[r].id, k) < 0) {
				l->id_g[k] = g;
				l->id_r[k++] = r;
			}
}

static void check_replica_ids(const hx_plan *p, vlist *l)
{
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++) {
			int fg = g, fr = r;
			char ptr[160];
			find_replica(l, p->groups[g].replicas[r].id, &fg, &fr);
			if (fg == g && fr == r)
				continue;
			snprintf(ptr, sizeof(ptr), "/groups/%d/replicas/%d/id", g, r);
			add(l, HX_V_DUP_REPLICA, ptr,
			    "duplicate replica id \"%s\" (first at /groups/%d/replicas/%d)",
			    p->groups[g].replicas[r].id, fg, fr);
		}
}

/* ---- routing -------------------------------------------------------------- */

/* A kv or hops endpoint: a replica id, or (hops) "REPLICA/sN".  Returns 1
 * with the group, replica and stage (-1: the whole replica) when it names
 * one; else fills WHY. */
static int parse_endpoint(const vlist *l, const hx_plan *p, const char *s, int stages, int *gi,
			  int *ri, int *si, char *why, size_t nwhy)
{
	char id[64];
	const char *slash = stages ? strrchr(s, '/') : NULL;

	*si = -1;
	hx_strlcpy(id, s, sizeof(id));
	if (find_replica(l, id, gi, ri))
		return 1;
	if (slash && slash[1] == 's' && slash[2] && strlen(slash + 2) < 6 &&
	    strspn(slash + 2, "0123456789") == strlen(slash + 2)) {
		id[slash - s] = '\0';
		if (find_replica(l, id, gi, ri)) {
			*si = atoi(slash + 2);
			if (*si < p->groups[*gi].nstages)
				return 1;
			snprintf(why, nwhy, "replica \"%s\" has no stage %d (its group has %d)",
				 id, *si, p->groups[*gi].nstages);
			return 0;
		}
	}
	snprintf(why, nwhy, "no replica \"%s\"", id);
	return 0;
}

/* Sums of the weights of LIST per key (FROM, or the ingress class): each
 * key that does not sum to 1 is reported at BASE. */
static void check_sums(const hx_route *list, int n, const char *base, int ingress, vlist *l)
{
	hx_map keys = {0};
	double *sum = hx_xcalloc((size_t)n + 1, sizeof(double));
	int *first = hx_xcalloc((size_t)n + 1, sizeof(int)), nk = 0;

	/* Sums per key in the order keys first appear, by hash. */
	for (int i = 0; i < n; i++) {
		int k = hx_map_put(&keys, list[i].from, nk);
		if (k < 0) {
			k = nk++;
			first[k] = i;
		}
		sum[k] += list[i].weight;
	}
	for (int k = 0; k < nk; k++) {
		const hx_route *x = &list[first[k]];
		if (fabs(sum[k] - 1) <= 1e-6)
			continue;
		if (!ingress)
			add(l, HX_V_ROUTING, base, "the weights from \"%s\" sum to %.9g, not 1",
			    x->from, sum[k]);
		else if (x->from[0])
			add(l, HX_V_ROUTING, base,
			    "the weights of class \"%s\" sum to %.9g, not 1", x->from, sum[k]);
		else
			add(l, HX_V_ROUTING, base,
			    "the weights for all traffic sum to %.9g, not 1", sum[k]);
	}
	hx_map_release(&keys);
	free(sum);
	free(first);
}

static void check_weights(const hx_route *list, int n, const char *base, vlist *l)
{
	for (int i = 0; i < n; i++)
		if (list[i].weight < 0) {
			char ptr[160];
			snprintf(ptr, sizeof(ptr), "%s/%d/weight", base, i);
			add(l, HX_V_ROUTING, ptr, "is negative (%g)", list[i].weight);
		}
}

/* Replicas of model M that take requests (aggregated or prefill). */
static int serving_replicas(const hx_plan *p, const char *m)
{
	int n = 0;
	for (int g = 0; g < p->ngroups; g++)
		if (strcmp(p->groups[g].model, m) == 0 && p->groups[g].role != HX_ROLE_DECODE)
			n += p->groups[g].nreplicas;
	return n;
}

/* A cascade (DESIGN §6): each step names a distinct model that has replicas
 * to answer; thresholds are judge scores (0-100); a step escalates a
 * fraction in [0, 1] (the reader holds it there) and the last one escalates
 * nothing, since no model follows it; requests enter at the first model,
 * and every group serves a model of the cascade. */
static void check_cascade(const hx_plan *p, vlist *l)
{
	char ptr[160];

	if (p->ncascade == 0)
		return;
	/* A step naming a model the plan lacks (reported by the caller) leaves
	 * nothing else to judge. */
	for (int i = 0; i < p->ncascade; i++)
		if (!hx_plan_model(p, p->cascade[i].model))
			return;
	for (int i = 0; i < p->ncascade; i++) {
		const hx_cascade_step *c = &p->cascade[i];
		for (int j = 0; j < i; j++)
			if (strcmp(p->cascade[j].model, c->model) == 0) {
				snprintf(ptr, sizeof(ptr), "/routing/cascade/%d/model", i);
				add(l, HX_V_ROUTING, ptr,
				    "model \"%s\" is step %d too: a cascade visits each model once",
				    c->model, j);
			}
		if (serving_replicas(p, c->model) == 0) {
			snprintf(ptr, sizeof(ptr), "/routing/cascade/%d/model", i);
			add(l, HX_V_ROUTING, ptr,
			    "no replica of \"%s\" answers the requests this step gets",
			    c->model);
		}
		if (!(c->threshold >= 0 && c->threshold <= 100)) {
			snprintf(ptr, sizeof(ptr), "/routing/cascade/%d/threshold", i);
			add(l, HX_V_ROUTING, ptr, "%g is not a judge score (0 to 100)",
			    c->threshold);
		}
		if (!(c->escalate >= 0 && c->escalate <= 1)) {
			snprintf(ptr, sizeof(ptr), "/routing/cascade/%d/escalate", i);
			add(l, HX_V_ROUTING, ptr, "%g is not a fraction", c->escalate);
		} else if (i == p->ncascade - 1 && c->escalate > 0) {
			snprintf(ptr, sizeof(ptr), "/routing/cascade/%d/escalate", i);
			add(l, HX_V_ROUTING, ptr,
			    "the last model escalates %g of its requests, but no model follows it",
			    c->escalate);
		}
	}
	for (int i = 0; i < p->ningress; i++) {
		int g = hx_plan_group_index(p, p->ingress[i].to);
		if (g >= 0 && p->ingress[i].weight > 0 &&
		    strcmp(p->groups[g].model, p->cascade[0].model) != 0) {
			snprintf(ptr, sizeof(ptr), "/routing/ingress/%d/group", i);
			add(l, HX_V_ROUTING, ptr,
			    "group \"%s\" serves %s, but a cascade's requests enter at its first model (%s)",
			    p->groups[g].name, p->groups[g].model, p->cascade[0].model);
		}
	}
	for (int g = 0; g < p->ngroups; g++) {
		int in = 0;
		for (int i = 0; i < p->ncascade; i++)
			in |= strcmp(p->groups[g].model, p->cascade[i].model) == 0;
		if (!in) {
			snprintf(ptr, sizeof(ptr), "/groups/%d/model", g);
			add(l, HX_V_ROUTING, ptr,
			    "model \"%s\" is not a step of the plan's cascade: no request reaches it",
			    p->groups[g].model);
		}
	}
}

static void check_routing(const hx_plan *p, vlist *l)
{
	char ptr[160], why[160];

	check_weights(p->ingress, p->ningress, "/routing/ingress", l);
	for (int i = 0; i < p->ningress; i++)
		if (hx_plan_group_index(p, p->ingress[i].to) < 0) {
			snprintf(ptr, sizeof(ptr), "/routing/ingress/%d/group", i);
			add(l, HX_V_ROUTING, ptr, "no group \"%s\"", p->ingress[i].to);
		}
	if (p->ningress == 0 && p->ngroups > 0)
		add(l, HX_V_ROUTING, "/routing/ingress",
		    "no route: no traffic reaches the plan's groups");
	check_sums(p->ingress, p->ningress, "/routing/ingress", 1, l);

	check_weights(p->kv, p->nkv, "/routing/kv", l);
	for (int i = 0; i < p->nkv; i++) {
		int g = 0, r = 0, s = 0;
		if (!parse_endpoint(l, p, p->kv[i].from, 0, &g, &r, &s, why, sizeof(why))) {
			snprintf(ptr, sizeof(ptr), "/routing/kv/%d/from", i);
			add(l, HX_V_ROUTING, ptr, "%s", why);
		}
		if (!parse_endpoint(l, p, p->kv[i].to, 0, &g, &r, &s, why, sizeof(why))) {
			snprintf(ptr, sizeof(ptr), "/routing/kv/%d/to", i);
			add(l, HX_V_ROUTING, ptr, "%s", why);
		}
	}
	check_sums(p->kv, p->nkv, "/routing/kv", 0, l);

	check_weights(p->hops, p->nhops, "/routing/hops", l);
	for (int i = 0; i < p->nhops; i++) {
		int fg = 0, fr = 0, fs = -1, tg = 0, tr = 0, ts = -1, okf, okt;
		okf = parse_endpoint(l, p, p->hops[i].from, 1, &fg, &fr, &fs, why, sizeof(why));
		if (!okf) {
			snprintf(ptr, sizeof(ptr), "/routing/hops/%d/from", i);
			add(l, HX_V_ROUTING, ptr, "%s", why);
		}
		okt = parse_endpoint(l, p, p->hops[i].to, 1, &tg, &tr, &ts, why, sizeof(why));
		if (!okt) {
			snprintf(ptr, sizeof(ptr), "/routing/hops/%d/to", i);
			add(l, HX_V_ROUTING, ptr, "%s", why);
		}
		if (okf && okt && fs >= 0 && ts >= 0) {
			const hx_plan_group *a = &p->groups[fg], *b = &p->groups[tg];
			snprintf(ptr, sizeof(ptr), "/routing/hops/%d", i);
			if (strcmp(a->model, b->model) != 0)
				add(l, HX_V_ROUTING, ptr,
				    "joins stages of two models (%s and %s)", a->model,
				    b->model);
			else if (a->stage[fs].last < b->stage[ts].first ||
				 a->stage[fs].last >= b->stage[ts].last)
				/* the next stage runs from the layer the hop
				 * brings: it may hold more before it (Helix) */
				add(l, HX_V_ROUTING, ptr,
				    "goes from a stage ending at layer %d to one holding layers [%d, %d)",
				    a->stage[fs].last, b->stage[ts].first, b->stage[ts].last);
		}
	}
	check_sums(p->hops, p->nhops, "/routing/hops", 0, l);

	for (int i = 0; i < p->ncascade; i++)
		if (!hx_plan_model(p, p->cascade[i].model)) {
			snprintf(ptr, sizeof(ptr), "/routing/cascade/%d/model", i);
			add(l, HX_V_ROUTING, ptr, "model \"%s\" is not among the plan's models",
			    p->cascade[i].model);
		}
	check_cascade(p, l);
}

/* Plans with hops (pipeline plans): traffic enters at layer 0, every
 * replica it reaches either ends at the model's last layer or hands on to
 * another hop, and every group is reached.  With check_routing's rule that
 * a hop joins a stage ending at layer x to one holding x (and running from
 * it), every path from ingress to an exit then runs each layer exactly once. */
static void check_paths(const hx_plan *p, vlist *l)
{
	int nrep = 0, *base, *seen, *queue, qh = 0, qt = 0;
	char ptr[160], why[160];

	if (p->nhops == 0)
		return;
	base = hx_xcalloc((size_t)p->ngroups + 1, sizeof(int));
	for (int g = 0; g < p->ngroups; g++) {
		base[g] = nrep;
		nrep += p->groups[g].nreplicas;
	}
	seen = hx_xcalloc((size_t)nrep + 1, sizeof(int));
	queue = hx_xcalloc((size_t)nrep + 1, sizeof(int));
	for (int i = 0; i < p->ningress; i++) {
		int g = hx_plan_group_index(p, p->ingress[i].to);
		if (g < 0 || p->groups[g].nstages < 1)
			continue;
		if (p->groups[g].stage[0].first != 0) {
			snprintf(ptr, sizeof(ptr), "/routing/ingress/%d/group", i);
			add(l, HX_V_ROUTING, ptr,
			    "group \"%s\" starts at layer %d: traffic must enter at layer 0",
			    p->ingress[i].to, p->groups[g].stage[0].first);
			continue;
		}
		for (int r = 0; r < p->groups[g].nreplicas; r++)
			if (!seen[base[g] + r]) {
				seen[base[g] + r] = 1;
				queue[qt++] = base[g] + r;
			}
	}
	while (qh < qt) {
		int v = queue[qh++], g = 0, r;
		const hx_plan_group *grp;
		const hx_model *m;
		int out = 0;
		while (g + 1 < p->ngroups && base[g + 1] <= v)
			g++;
		r = v - base[g];
		grp = &p->groups[g];
		for (int i = 0; i < p->nhops; i++) {
			int fg, fr, fs, tg, tr, ts;
			if (!parse_endpoint(l, p, p->hops[i].from, 1, &fg, &fr, &fs, why,
					    sizeof(why)) ||
			    fg != g || fr != r)
				continue;
			out = 1;
			if (!parse_endpoint(l, p, p->hops[i].to, 1, &tg, &tr, &ts, why,
					    sizeof(why)))
				continue;
			if (!seen[base[tg] + tr]) {
				seen[base[tg] + tr] = 1;
				queue[qt++] = base[tg] + tr;
			}
		}
		m = hx_plan_model(p, grp->model);
		if (!out && m && grp->nstages > 0 &&
		    grp->stage[grp->nstages - 1].last != m->a.layers) {
			snprintf(ptr, sizeof(ptr), "/groups/%d/replicas/%d/id", g, r);
			add(l, HX_V_ROUTING, ptr,
			    "dead end: replica \"%s\" ends at layer %d of %d and no hop leaves it",
			    grp->replicas[r].id, grp->stage[grp->nstages - 1].last,
			    m->a.layers);
		}
	}
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++)
			if (!seen[base[g] + r]) {
				snprintf(ptr, sizeof(ptr), "/groups/%d/replicas/%d/id", g, r);
				add(l, HX_V_ROUTING, ptr,
				    "no path from ingress reaches replica \"%s\"",
				    p->groups[g].replicas[r].id);
			}
	free(queue);
	free(seen);
	free(base);
}

/* Length classes: ingress routes name declared classes, and every declared
 * class has a route. */
static void check_classes(const hx_plan *p, vlist *l)
{
	char ptr[160];

	if (p->nclasses == 0)
		return;
	for (int i = 0; i < p->ningress; i++) {
		int found = 0;
		for (int k = 0; k < p->nclasses && !found; k++)
			found = strcmp(p->classes[k].name, p->ingress[i].from) == 0;
		if (!found) {
			snprintf(ptr, sizeof(ptr), "/routing/ingress/%d/class", i);
			add(l, HX_V_ROUTING, ptr, "%s",
			    p->ingress[i].from[0]
				? "names no class of /routing/classes"
				: "is missing: the plan routes by its length classes");
		}
	}
	for (int k = 0; k < p->nclasses; k++) {
		int routed = 0;
		for (int i = 0; i < p->ningress && !routed; i++)
			routed = strcmp(p->classes[k].name, p->ingress[i].from) == 0;
		if (!routed) {
			snprintf(ptr, sizeof(ptr), "/routing/classes/%d", k);
			add(l, HX_V_ROUTING, ptr, "class \"%s\" has no ingress route",
			    p->classes[k].name);
		}
	}
}

/* Rent: GPUs on an offer's nodes ("offerI-J") are rented whole nodes; each
 * offer's entry must count exactly the nodes the placements use, their GPUs
 * and their price, and never more than the offer has. */
static int offer_of(const char *name, int *j)
{
	char *end;
	long i;

	if (strncmp(name, "offer", 5) != 0 || name[5] < '0' || name[5] > '9')
		return -1;
	i = strtol(name + 5, &end, 10);
	if (*end != '-' || end[1] < '0' || end[1] > '9')
		return -1;
	*j = (int)strtol(end + 1, &end, 10);
	return *end || i > 1000000 ? -1 : (int)i;
}

/* A rent entry's spot keys against its offer: the same preemption rate,
 * and the window of the plan's model on the offer's nodes. */
static void check_rent_spot(const hx_plan *p, const hx_plan_rent *rt, const hx_offer *o,
			    const char *ptr, vlist *l)
{
	double win;

	if (rt->preempt_per_hour != o->preempt_per_hour) {
		add(l, HX_V_SPOT, ptr,
		    "preempted %g times per hour, but the offer says %g (0: on demand)",
		    rt->preempt_per_hour, o->preempt_per_hour);
		return;
	}
	if (rt->preempt_per_hour <= 0 || p->nmodels == 0)
		return;
	win = hx_spot_window_s(&p->models[0], o->load_gbps);
	if (fabs(rt->window_s - win) > 1e-3 * fmax(1, win))
		add(l, HX_V_SPOT, ptr,
		    "a window of %g s, not %g (%d s for a node plus %s's weights at %g Gb/s)",
		    rt->window_s, win, HX_SPOT_REPLACE_S, p->models[0].name,
		    o->load_gbps > 0 ? o->load_gbps : HX_DEFAULT_LOAD_GBPS);
}

static void check_rent(const hx_plan *p, const hx_cluster *c, vlist *l)
{
	char ptr[160];
	int *nodes = hx_xcalloc((size_t)c->noffers + 1, sizeof(int));
	int *gpus = hx_xcalloc((size_t)c->noffers + 1, sizeof(int));
	char *seen = hx_xcalloc((size_t)c->nnodes + 1, 1);

	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++)
			for (int s = 0; s < p->groups[g].nstages; s++)
				for (int k = 0; k < p->groups[g].replicas[r].ngpus[s]; k++) {
					const hx_gpu_ref *ref =
					    &p->groups[g].replicas[r].gpus[s][k];
					int ni = hx_cluster_node_index(c, ref->node), j = 0;
					int o = offer_of(ref->node, &j);
					if (ni < 0 || o < 0 || o >= c->noffers || seen[ni])
						continue;
					seen[ni] = 1;
					nodes[o]++;
					gpus[o] += c->nodes[ni].count;
				}
	for (int i = 0; i < p->nrent; i++) {
		const hx_plan_rent *rt = &p->rent[i];
		int o = rt->offer;
		snprintf(ptr, sizeof(ptr), "/rent/%d", i);
		if (o >= c->noffers) {
			add(l, HX_V_RENT, ptr, "offer %d: the cluster has %d offers", o,
			    c->noffers);
			continue;
		}
		for (int j = 0; j < i; j++)
			if (p->rent[j].offer == o)
				add(l, HX_V_RENT, ptr,
				    "offer %d is rented twice (first at /rent/%d)", o, j);
		if (strcmp(rt->gpu, c->offers[o].gpu.name) != 0)
			add(l, HX_V_RENT, ptr, "offer %d is of %s GPUs, not %s", o,
			    c->offers[o].gpu.name, rt->gpu);
		if (rt->gpus > c->offers[o].max_count)
			add(l, HX_V_RENT, ptr, "rents %d GPUs of offer %d, which has %d",
			    rt->gpus, o, c->offers[o].max_count);
		if (rt->nodes != nodes[o] || rt->gpus != gpus[o])
			add(l, HX_V_RENT, ptr,
			    "rents %d nodes (%d GPUs) of offer %d, but the placements use %d (%d GPUs)",
			    rt->nodes, rt->gpus, o, nodes[o], gpus[o]);
		if (fabs(rt->usd_per_hour - rt->gpus * c->offers[o].usd_per_hour) >
		    1e-5 * fmax(1, rt->usd_per_hour))
			add(l, HX_V_RENT, ptr, "costs %g USD/h, not %d GPUs at %g USD/h",
			    rt->usd_per_hour, rt->gpus, c->offers[o].usd_per_hour);
		check_rent_spot(p, rt, &c->offers[o], ptr, l);
		nodes[o] = -1; /* accounted for */
	}
	for (int o = 0; o < c->noffers; o++)
		if (nodes[o] > 0)
			add(l, HX_V_RENT, "/rent",
			    "the placements use %d nodes of offer %d (%s) that the plan does not rent",
			    nodes[o], o, c->offers[o].gpu.name);
	free(nodes);
	free(gpus);
	free(seen);
}

/* The spot section against the plan's own rent and capacities: its nodes,
 * the probability that no more than survives_nodes are down at once, the
 * expected cost, and survives_nodes itself (the plan keeps need_rps after
 * losing that many spot nodes, those hosting the most first, and not after
 * one more). */
static void check_spot(const hx_plan *p, vlist *l)
{
	hx_plan_spot s = {0};
	double left[2];

	if (!p->spot.on)
		return;
	hx_spot_at(p, p->spot.survives_nodes, &s, left);
	if (s.nodes != p->spot.nodes)
		add(l, HX_V_SPOT, "/spot/nodes", "the plan uses %d spot nodes, not %d", s.nodes,
		    p->spot.nodes);
	if (fabs(s.slo_probability - p->spot.slo_probability) > 2e-6)
		add(l, HX_V_SPOT, "/spot/slo_probability",
		    "%d of the spot nodes or fewer are down with probability %.6f, not %.6f",
		    p->spot.survives_nodes, s.slo_probability, p->spot.slo_probability);
	if (fabs(s.expected_usd_per_hour - p->spot.expected_usd_per_hour) >
	    1e-5 * fmax(1, s.expected_usd_per_hour))
		add(l, HX_V_SPOT, "/spot/expected_usd_per_hour",
		    "the rent with spot nodes paid while up is %.6f USD/h, not %.6f",
		    s.expected_usd_per_hour, p->spot.expected_usd_per_hour);
	if (left[0] < p->spot.need_rps * (1 - 1e-5))
		add(l, HX_V_SPOT, "/spot/survives_nodes",
		    "losing %d spot nodes leaves %.3f req/s, less than the %.3f needed",
		    p->spot.survives_nodes, left[0], p->spot.need_rps);
	else if (left[1] >= p->spot.need_rps * (1 + 1e-5))
		add(l, HX_V_SPOT, "/spot/survives_nodes",
		    "losing %d spot nodes still leaves %.3f req/s of the %.3f needed",
		    p->spot.survives_nodes + 1, left[1], p->spot.need_rps);
}

static void check_roles(const hx_plan *p, vlist *l)
{
	char ptr[160];
	hx_map senders = {0};

	for (int i = 0; i < p->nkv; i++) {
		int g = 0, r = 0;
		if (find_replica(l, p->kv[i].from, &g, &r) &&
		    p->groups[g].role != HX_ROLE_PREFILL) {
			snprintf(ptr, sizeof(ptr), "/routing/kv/%d/from", i);
			add(l, HX_V_ROLES, ptr, "replica \"%s\" is %s, not prefill",
			    p->kv[i].from, hx_role_name(p->groups[g].role));
		}
		if (find_replica(l, p->kv[i].to, &g, &r) &&
		    p->groups[g].role != HX_ROLE_DECODE) {
			snprintf(ptr, sizeof(ptr), "/routing/kv/%d/to", i);
			add(l, HX_V_ROLES, ptr, "replica \"%s\" is %s, not decode", p->kv[i].to,
			    hx_role_name(p->groups[g].role));
		}
	}
	for (int i = 0; i < p->nkv; i++)
		hx_map_put(&senders, p->kv[i].from, i);
	for (int g = 0; g < p->ngroups; g++) {
		if (p->groups[g].role != HX_ROLE_PREFILL)
			continue;
		for (int r = 0; r < p->groups[g].nreplicas; r++) {
			const char *id = p->groups[g].replicas[r].id;
			if (hx_map_get(&senders, id) >= 0)
				continue;
			snprintf(ptr, sizeof(ptr), "/groups/%d/replicas/%d/id", g, r);
			add(l, HX_V_ROLES, ptr,
			    "prefill replica \"%s\" has no kv route to a decode replica", id);
		}
	}
	hx_map_release(&senders);
}

/* Whether A and B agree to within the rounding to 6 significant digits
 * of the figures they come from, whose magnitudes add up to SCALE. */
static int near6(double a, double b, double scale)
{
	return fabs(a - b) <= 1e-6 * fmax(1, scale);
}

/* A short plan's figures follow from its rate and predicted capacity: the
 * shortfall is what the capacity lacks of rate / utilization (positive: a
 * plan that carries its rate is not short), the share what it carries of
 * the rate. */
static void check_short(const hx_plan *p, vlist *l)
{
	const hx_plan_short *s = &p->shortage;
	double cap = p->predicted.capacity_rps;
	double need = s->rate_rps / s->utilization;
	double share = s->rate_rps > 0 ? fmin(1, cap / s->rate_rps) : 1;

	if (!s->on)
		return;
	if (cap >= need * (1 - 1e-9))
		add(l, HX_V_SHORT, "/status",
		    "the plan is marked short but its capacity %.6g req/s carries the rate of %.6g req/s at %.6g utilization",
		    cap, s->rate_rps, s->utilization);
	else if (!near6(s->shortfall_rps, need - cap, need + cap))
		add(l, HX_V_SHORT, "/shortfall/shortfall_rps",
		    "%.6g, but the rate needs %.6g req/s and the plan carries %.6g: %.6g short",
		    s->shortfall_rps, need, cap, need - cap);
	if (!near6(s->served_share, share, 2))
		add(l, HX_V_SHORT, "/shortfall/served_share",
		    "%.6g, but the plan carries %.6g of the rate of %.6g req/s: %.6g",
		    s->served_share, cap, s->rate_rps, share);
}

/* Substitutions state what the plan uses: each row's GPUs are the plan's
 * GPUs of that type, and the difference is the plan's price less the
 * preferred plan's. */
static void check_spill(const hx_plan *p, vlist *l)
{
	const hx_plan_spill *s = &p->spill;
	double delta = p->predicted.usd_per_hour - s->preferred_usd_per_hour;
	char ptr[96];

	for (int i = 0; i < s->nsubst; i++) {
		int have = hx_plan_gpus_of(p, s->subst[i].gpu);
		snprintf(ptr, sizeof(ptr), "/substitutions/gpus/%d/gpus", i);
		if (have != s->subst[i].gpus)
			add(l, HX_V_SPILL, ptr, "%d, but the plan uses %d %s GPUs",
			    s->subst[i].gpus, have, s->subst[i].gpu);
	}
	if (s->nsubst > 0 && !near6(s->usd_per_hour_delta, delta,
				    p->predicted.usd_per_hour + s->preferred_usd_per_hour))
		add(l, HX_V_SPILL, "/substitutions/usd_per_hour_delta",
		    "%.6g, but the plan costs %.6g USD/h and the preferred plan %.6g: %+.6g",
		    s->usd_per_hour_delta, p->predicted.usd_per_hour, s->preferred_usd_per_hour,
		    delta);
}

/* What the insurance costs follows from the plan: the insured figures are
 * the plan's GPUs and price, the insurance the insured less the plain
 * plan's, and insurance only adds. */
static void check_tolerate(const hx_plan *p, vlist *l)
{
	const hx_plan_tolerate *t = &p->tolerate;
	int gpus = hx_plan_gpus_used(p);
	double usd = p->predicted.usd_per_hour;

	if (!t->on)
		return;
	if (t->gpus != gpus)
		add(l, HX_V_TOLERATE, "/tolerate/insured/gpus", "%d, but the plan uses %d GPUs",
		    t->gpus, gpus);
	if (!near6(t->usd_per_hour, usd, usd))
		add(l, HX_V_TOLERATE, "/tolerate/insured/usd_per_hour",
		    "%.6g, but the plan costs %.6g USD/h", t->usd_per_hour, usd);
	if (t->insurance_gpus != t->gpus - t->plain_gpus)
		add(l, HX_V_TOLERATE, "/tolerate/insurance/gpus",
		    "%d, but the insured plan uses %d GPUs and the plain plan %d: %+d",
		    t->insurance_gpus, t->gpus, t->plain_gpus, t->gpus - t->plain_gpus);
	if (!near6(t->insurance_usd_per_hour, t->usd_per_hour - t->plain_usd_per_hour,
		   t->usd_per_hour + t->plain_usd_per_hour))
		add(l, HX_V_TOLERATE, "/tolerate/insurance/usd_per_hour",
		    "%.6g, but the insured plan costs %.6g USD/h and the plain plan %.6g: %+.6g",
		    t->insurance_usd_per_hour, t->usd_per_hour, t->plain_usd_per_hour,
		    t->usd_per_hour - t->plain_usd_per_hour);
	if (t->gpus < t->plain_gpus)
		add(l, HX_V_TOLERATE, "/tolerate/plain/gpus",
		    "%d, more than the insured plan's %d: insurance only adds replicas",
		    t->plain_gpus, t->gpus);
}

int hx_verify_plan(const hx_plan *p, const hx_cluster *c, hx_violation **out, int *n)
{
	vlist l = {NULL, 0, 0, {0}, NULL, NULL};

	index_replicas(p, &l);
	for (int g = 0; g < p->ngroups; g++) {
		check_stages(p, g, &l);
		if (p->groups[g].afd.on)
			check_afd_group(p, g, &l);
		for (int r = 0; r < p->groups[g].nreplicas; r++)
			check_placement(p, c, g, r, &l);
	}
	check_gpus_twice(p, &l);
	check_replica_ids(p, &l);
	check_routing(p, &l);
	check_paths(p, &l);
	check_classes(p, &l);
	check_roles(p, &l);
	if (c)
		check_rent(p, c, &l);
	check_short(p, &l);
	check_spill(p, &l);
	check_tolerate(p, &l);
	check_spot(p, &l);
	hx_map_release(&l.ids);
	free(l.id_g);
	free(l.id_r);
	*out = l.v;
	*n = l.n;
	return l.n;
}
