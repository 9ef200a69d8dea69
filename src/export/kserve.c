/*
 * export_kserve: the plan as KServe LLMInferenceService objects
 * (serving.kserve.io/v1alpha2, KServe's storage version; DESIGN §9), one
 * YAML stream, hexplan.yaml.
 *
 * One LLMInferenceService per serving unit: an aggregated group, or a
 * decode group with the prefill group(s) whose KV caches it takes (the
 * `prefill` workload).  Each workload has the model (uri hf://REPO, named
 * by the repository so every unit of a model answers to one name), its
 * replicas, its parallelism (tensor, pipeline) and the pod spec the k8s
 * export writes (export_k8s.c: nodeSelector on the GPU product, GPU limits,
 * /dev/shm, the vLLM flags): `template` for a replica on one node — its
 * container gives `args` only, which KServe's preset command appends to
 * `vllm serve /mnt/models` with the preset's port (8001 behind the routing
 * sidecar on decode pods), probes, TLS and served name, where a `command`
 * would replace all of them — or
 * `template` for the stage-0 pod and `worker` for the others when a replica
 * spans nodes — KServe sizes that LeaderWorkerSet by the pipeline stages,
 * so each stage must sit on a node of its own.  The router uses the default
 * Gateway, a managed HTTPRoute and llm-d's scheduler; when a model is
 * served by several units they share a route group whose weights are the
 * plan's ingress weights (KServe's traffic splitting), scaled to integers
 * summing to 1,000,000.
 *
 * Refused unless --lossy, besides what the pods cannot express (see
 * export_k8s.c): a replica whose stages do not each sit on a node of their
 * own, a prefill group that sends KV caches to several decode groups (it
 * joins the one it sends most to), prefill groups of different shapes
 * feeding one decode group (one `prefill` shape: the first is kept), a
 * decode group without a prefill group, per-class ingress, ingress weights
 * across models without --gateway-url (a request names its model; with it,
 * a LiteLLM router sends each unit's share to the unit's path on KServe's
 * Gateway), cascades and cross-replica hops.  Within a unit, which
 * prefill replica hands its KV cache to which decode replica is the
 * scheduler's choice, as is the spread of requests over a group's
 * replicas.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "export/yaml.h"

typedef struct unit {
	int top;  /* the aggregated or decode group */
	int *pre; /* its prefill groups */
	int npre;
	double weight;
	long scaled;
	int members; /* units of its model */
} unit;

static int same_shape(const hx_kgroup *a, const hx_kgroup *b)
{
	if (a->tp != b->tp || a->pp != b->pp || a->npods != b->npods || a->m != b->m ||
	    a->g->wdt != b->g->wdt || a->g->kvdt != b->g->kvdt ||
	    a->worker_ngpus != b->worker_ngpus)
		return 0;
	for (int s = 0; s < a->g->nstages; s++)
		if (a->g->stage[s].first != b->g->stage[s].first ||
		    a->g->stage[s].last != b->g->stage[s].last)
			return 0;
	for (int j = 0; j < a->npods; j++)
		if (a->pods[j].ngpus != b->pods[j].ngpus ||
		    a->pods[j].stage0 != b->pods[j].stage0 ||
		    strcmp(a->pods[j].gpu->product, b->pods[j].gpu->product) != 0 ||
		    strcmp(a->pods[j].gpu->vendor, b->pods[j].gpu->vendor) != 0)
			return 0;
	return 1;
}

/* KServe runs a multi-node workload as a LeaderWorkerSet of one pod per
 * pipeline stage. */
static int stage_per_node(const hx_kgroup *k, const hx_export_opts *o, hx_export_out *out,
			  hx_err *err)
{
	char gn[64];

	if (k->npods == 1)
		return 0;
	if (k->npods == k->pp) {
		int ok = 1;
		for (int j = 0; j < k->npods && ok; j++)
			ok = k->pods[j].stage0 == j && k->pods[j].nstages == 1;
		if (ok)
			return 0;
	}
	hx_yaml_printable(gn, sizeof(gn), k->g->name);
	return hx_yaml_lose(
	    o, out, err,
	    "group \"%s\": its replicas spread %d stages over %d nodes, and KServe runs one pod per pipeline stage: the template and worker pods follow the nodes, and KServe counts %d of them",
	    gn, k->pp, k->npods, k->pp);
}

static void meta_annotations(hx_yw *w, const hx_kgroup *kg, const unit *u)
{
	hx_yw_map(w, "annotations");
	hx_yw_str(w, "hexplan.dev/placement", kg[u->top].placement);
	if (u->npre > 0) {
		hx_buf names = {0}, where = {0};
		for (int i = 0; i < u->npre; i++) {
			hx_buf_printf(&names, "%s%s", i ? "," : "", kg[u->pre[i]].key);
			hx_buf_printf(&where, "%s%s", i ? "; " : "", kg[u->pre[i]].placement);
		}
		hx_yw_str(w, "hexplan.dev/prefill-groups", names.s);
		hx_yw_str(w, "hexplan.dev/prefill-placement", where.s);
		hx_buf_release(&names);
		hx_buf_release(&where);
	}
	hx_yw_end(w);
}

/* The keys of a WorkloadSpec for K with REPLICAS. */
static void workload(hx_yw *w, const hx_kgroup *k, int replicas)
{
	hx_yw_int(w, "replicas", replicas);
	hx_yw_map(w, "parallelism");
	hx_yw_int(w, "tensor", k->tp);
	if (k->pp > 1)
		hx_yw_int(w, "pipeline", k->pp);
	hx_yw_end(w);
	hx_yw_map(w, "labels");
	hx_k8s_labels(w, k);
	hx_yw_end(w);
	hx_yw_map(w, "template");
	hx_k8s_pod_spec(w, k, k->npods > 1 ? HX_KPOD_LEADER : HX_KPOD_SINGLE, "main", 1);
	hx_yw_end(w);
	if (k->npods > 1) {
		hx_yw_map(w, "worker");
		hx_k8s_pod_spec(w, k, HX_KPOD_WORKER, "main", 1);
		hx_yw_end(w);
	}
}

static void service(hx_yw *w, const hx_kgroup *kg, const unit *u)
{
	const hx_kgroup *top = &kg[u->top];
	char uri[160];
	int npre = 0;

	for (int i = 0; i < u->npre; i++)
		npre += kg[u->pre[i]].g->nreplicas;
	hx_yw_doc(w);
	hx_yw_str(w, "apiVersion", "serving.kserve.io/v1alpha2");
	hx_yw_str(w, "kind", "LLMInferenceService");
	hx_yw_map(w, "metadata");
	hx_yw_str(w, "name", top->name);
	hx_yw_map(w, "labels");
	hx_yw_str(w, "app.kubernetes.io/part-of", "hexplan");
	hx_yw_str(w, "hexplan.dev/group", top->key);
	hx_yw_str(w, "hexplan.dev/model", top->model);
	hx_yw_end(w);
	meta_annotations(w, kg, u);
	hx_yw_end(w);

	hx_yw_map(w, "spec");
	hx_yw_map(w, "model");
	snprintf(uri, sizeof(uri), "hf://%s", top->repo);
	hx_yw_str(w, "uri", uri);
	hx_yw_str(w, "name", top->repo);
	hx_yw_end(w);
	workload(w, top, top->g->nreplicas);
	if (u->npre > 0) {
		hx_yw_map(w, "prefill");
		workload(w, &kg[u->pre[0]], npre);
		hx_yw_end(w);
	}
	hx_yw_map(w, "router");
	hx_yw_raw(w, "gateway", "{}");
	if (u->members > 1) {
		char group[64];
		snprintf(group, sizeof(group), "hexplan-%.52s", top->model);
		hx_yw_map(w, "route");
		hx_yw_str(w, "group", group);
		hx_yw_int(w, "weight", u->scaled);
		hx_yw_end(w);
	} else {
		hx_yw_raw(w, "route", "{}");
	}
	hx_yw_raw(w, "scheduler", "{}");
	hx_yw_end(w);
	hx_yw_end(w);
}

/* Each model's units: how many share its route group, and their weights
 * scaled to integers (hx_k8s_scale). */
static void scale_units(unit *u, int n, const hx_kgroup *kg)
{
	for (int i = 0; i < n; i++) {
		double *w;
		long *s;
		int m = 0;
		if (u[i].members)
			continue;
		w = hx_xcalloc((size_t)n, sizeof(*w));
		s = hx_xcalloc((size_t)n, sizeof(*s));
		for (int j = i; j < n; j++)
			if (kg[u[j].top].m == kg[u[i].top].m)
				w[j] = u[j].weight, m++;
		hx_k8s_scale(w, n, s);
		for (int j = i; j < n; j++)
			if (kg[u[j].top].m == kg[u[i].top].m) {
				u[j].members = m;
				u[j].scaled = s[j];
			}
		free(w);
		free(s);
	}
}

/* The serving units: prefill groups join the decode group they send the
 * most KV to. */
static int units(const hx_plan *p, const hx_export_opts *o, const hx_kgroup *kg, unit *u,
		 int *nu, hx_export_out *out, hx_err *err)
{
	int *unit_of = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*unit_of));
	double *to = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*to));
	int *kv_from = hx_xcalloc((size_t)p->nkv + 1, sizeof(*kv_from));
	int *kv_to = hx_xcalloc((size_t)p->nkv + 1, sizeof(*kv_to));
	int rc = 0, n = 0;
	char gn[64], dn[64];

	for (int i = 0; i < p->nkv; i++) {
		kv_from[i] = hx_k8s_replica_group(p, p->kv[i].from);
		kv_to[i] = hx_k8s_replica_group(p, p->kv[i].to);
	}

	for (int g = 0; g < p->ngroups; g++) {
		unit_of[g] = -1;
		if (p->groups[g].role != HX_ROLE_PREFILL) {
			unit_of[g] = n;
			u[n++].top = g;
		}
	}
	for (int g = 0; g < p->ngroups && !rc; g++) {
		int best = -1, targets = 0;
		if (p->groups[g].role != HX_ROLE_PREFILL)
			continue;
		hx_yaml_printable(gn, sizeof(gn), p->groups[g].name);
		for (int d = 0; d < p->ngroups; d++)
			to[d] = 0;
		for (int i = 0; i < p->nkv; i++)
			if (kv_from[i] == g && kv_to[i] >= 0 &&
			    p->groups[kv_to[i]].role == HX_ROLE_DECODE && p->kv[i].weight > 0)
				to[kv_to[i]] += p->kv[i].weight;
		for (int d = 0; d < p->ngroups; d++)
			if (to[d] > 0) {
				targets++;
				if (best < 0 || to[d] > to[best])
					best = d;
			}
		if (best < 0) {
			rc = hx_yaml_lose(
			    o, out, err,
			    "prefill group \"%s\" sends its KV caches to no decode group: it is left out",
			    gn);
			continue;
		}
		hx_yaml_printable(dn, sizeof(dn), p->groups[best].name);
		if (targets > 1 &&
		    (rc = hx_yaml_lose(
			 o, out, err,
			 "prefill group \"%s\" sends KV caches to %d decode groups, and a KServe prefill workload belongs to one: it joins \"%s\"",
			 gn, targets, dn)))
			continue;
		if (kg[g].m != kg[best].m) {
			rc = hx_yaml_lose(
			    o, out, err,
			    "prefill group \"%s\" and decode group \"%s\" serve different models: the prefill group is left out",
			    gn, dn);
			continue;
		}
		{
			unit *x = &u[unit_of[best]];
			if (x->npre > 0 && !same_shape(&kg[x->pre[0]], &kg[g])) {
				char fn[64];
				hx_yaml_printable(fn, sizeof(fn), p->groups[x->pre[0]].name);
				rc = hx_yaml_lose(
				    o, out, err,
				    "prefill groups \"%s\" and \"%s\" feed decode group \"%s\" with different shapes, and an LLMInferenceService has one prefill shape: \"%s\" is left out",
				    fn, gn, dn, gn);
				continue;
			}
			x->pre = hx_xrealloc(x->pre, (size_t)(x->npre + 1) * sizeof(*x->pre));
			x->pre[x->npre++] = g;
			unit_of[g] = unit_of[best];
		}
	}
	for (int i = 0; i < n && !rc; i++)
		if (p->groups[u[i].top].role == HX_ROLE_DECODE && u[i].npre == 0) {
			hx_yaml_printable(dn, sizeof(dn), p->groups[u[i].top].name);
			rc = hx_yaml_lose(
			    o, out, err,
			    "decode group \"%s\" takes KV caches from no prefill group: it is written without a prefill workload",
			    dn);
		}

	/* ingress: a unit takes its groups' weights; units of one model share a
	 * route group */
	for (int i = 0; i < p->ningress; i++) {
		int g = hx_plan_group_index(p, p->ingress[i].to);
		if (g >= 0 && unit_of[g] >= 0 && p->ingress[i].weight > 0)
			u[unit_of[g]].weight += p->ingress[i].weight;
	}
	if (!rc)
		rc = hx_yaml_lose_classes(p, o, "KServe", out, err);
	{
		int models = 0, first = -1;
		for (int i = 0; i < n; i++)
			if (u[i].weight > 0) {
				if (first < 0)
					first = i;
				else if (kg[u[i].top].m != kg[u[first].top].m)
					models = 1;
			}
		if (models && !rc && !o->gateway_url)
			rc = hx_yaml_lose(
			    o, out, err,
			    "the ingress splits requests over models, and KServe routes a request to the model it names: the LiteLLM router that splits them sends each unit's share to its path on KServe's Gateway, whose in-cluster address depends on its implementation (--gateway-url URL gives it); without it, the weights hold among the units of each model");
	}
	scale_units(u, n, kg);
	free(unit_of);
	free(to);
	free(kv_from);
	free(kv_to);
	*nu = n;
	return rc;
}

/* The LiteLLM router of a plan split over models (--gateway-url): per
 * unit that takes requests, a deployment sent to the unit's own path on
 * KServe's Gateway, /NAMESPACE/NAME/v1 (KServe's managed HTTPRoute,
 * config-llm-router-route: those paths go to the service's InferencePool,
 * rewritten to /v1; its route group leaves them to the member:
 * isPerParticipantRule in pkg/controller/v1alpha2/llmisvc/
 * router_group_routing.go), weighted by the unit's share.  Nothing when
 * one model takes all requests. */
static void litellm(hx_yw *w, const hx_export_opts *o, const hx_kgroup *kg, const unit *u,
		    int nu)
{
	hx_litellm_dep *dep;
	size_t len;
	int first = -1, models = 0;

	for (int i = 0; i < nu; i++)
		if (u[i].weight > 0) {
			if (first < 0)
				first = i;
			else if (kg[u[i].top].m != kg[u[first].top].m)
				models = 1;
		}
	if (!o->gateway_url || !models)
		return;
	len = strlen(o->gateway_url);
	if (len > 0 && o->gateway_url[len - 1] == '/')
		len--;
	dep = hx_xcalloc((size_t)nu, sizeof(*dep));
	for (int i = 0; i < nu; i++) {
		dep[i].repo = kg[u[i].top].repo;
		dep[i].weight = u[i].weight;
		snprintf(dep[i].api_base, sizeof(dep[i].api_base),
			 "%.*s/$(" HX_K8S_LITELLM_NS ")/%s/v1", (int)len, o->gateway_url,
			 kg[u[i].top].name);
	}
	hx_k8s_litellm(w, "kserve", dep, nu);
	free(dep);
}

int hx_export_kserve(const hx_plan *p, const hx_export_opts *o, hx_export_out *out, hx_err *err)
{
	char(*key)[56] = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*key));
	hx_kgroup *kg = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*kg));
	unit *u = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*u));
	hx_yw w = {{0}, 0, 0};
	int rc = 0, n = 0, nu = 0;

	if (o->engine == HX_ENGINE_SGLANG &&
	    (rc = hx_yaml_lose(
		 o, out, err,
		 "the kserve export writes vLLM pods: --engine sglang is not expressed")))
		goto done;
	hx_k8s_keys(p, key);
	for (n = 0; n < p->ngroups; n++)
		if ((rc = hx_kgroup_init(&kg[n], p, o, n, key[n], out, err)) ||
		    (rc = stage_per_node(&kg[n], o, out, err))) {
			n++;
			goto done;
		}
	if ((rc = hx_yaml_lose_steps(p, o, out, err)))
		goto done;
	if ((rc = units(p, o, kg, u, &nu, out, err)))
		goto done;
	for (int i = 0; i < nu; i++)
		service(&w, kg, &u[i]);
	litellm(&w, o, kg, u, nu);
	if (!w.b.s)
		hx_buf_printf(&w.b, "%s", "");
	hx_export_add(out, "hexplan.yaml", w.b.s);
	w.b.s = NULL;
done:
	for (int i = 0; i < p->ngroups; i++)
		free(u[i].pre);
	for (int g = 0; g < n; g++)
		hx_kgroup_release(&kg[g]);
	hx_buf_release(&w.b);
	free(u);
	free(kg);
	free(key);
	return rc;
}
