/*
 * export_llmd: the plan as an llm-d deployment (DESIGN §9): plain
 * Kubernetes manifests, one YAML stream, hexplan.yaml, for `kubectl apply
 * -f` — not Helm values.  Checked against llm-d-router 0.10.0 (the
 * endpoint picker, its EndpointPickerConfig plugins and the P/D routing
 * sidecar) and the Gateway API Inference Extension 1.6.0 (InferencePool
 * inference.networking.k8s.io/v1; InferenceObjective now llm-d.ai/v1alpha2).
 *
 * The plan's groups fall into units: the groups its KV routes join (a
 * decode group and the prefill groups that feed it), or an aggregated group
 * on its own.  Each unit is an InferencePool, hexplan-KEY (KEY: the decode
 * group's, else the first group's), selecting its serving pods by the
 * label hexplan.dev/pool, with an InferenceObjective and its own endpoint
 * picker (EPP): a Deployment, a Service (gRPC ext-proc on 9002), a
 * ServiceAccount, Role and RoleBinding to watch the pool's pods, and a
 * ConfigMap with its EndpointPickerConfig.  A unit with prefill and decode
 * groups gets llm-d's P/D configuration: a prefill profile (prefill-filter)
 * and a decode profile (decode-filter), each scoring pods by prefix cache
 * and queue, and disagg-profile-handler with always-disagg-pd-decider, since
 * the plan prefills every request on the prefill groups; other units get
 * one decode-filter profile (single-profile-handler).  The config's header
 * records the pool's share of the requests and its groups.
 *
 * The groups' pods are the k8s export's (Deployments, or LeaderWorkerSets
 * whose leaders serve; probes, model cache, resources, PodDisruptionBudgets),
 * labelled with llm-d.ai/role and the pool; decode pods of a P/D unit run
 * vLLM on 8200 behind llm-d's routing sidecar (a native sidecar on 8000,
 * --kv-connector=nixlv2), which sends each request's prefill to the prefill
 * pod the EPP picked (NIXL, kv_producer to kv_consumer).  One HTTPRoute,
 * attached to the Gateway "hexplan-gateway", splits requests over the
 * InferencePools by the plan's weights (integers summing to 1,000,000).
 * A plan split over models gets one rule per model on the model header and,
 * with the Gateway's address (--gateway-url: the Service a Gateway runs on
 * is its implementation's choice), k8s's LiteLLM router behind a rule
 * without the header: it sends each model's share back to the Gateway with
 * that model's header.
 *
 * The EPP has no plugin that splits a pool's requests by static weights:
 * within a pool it picks pods by load and cache.  So the plan's weights are
 * kept between pools, and its KV routes as far as which groups they join;
 * the pairing of replicas inside a pool is the EPP's.  Refused unless
 * --lossy: what the k8s export's pods cannot express, a unit with several
 * prefill or decode groups (the plan's split of KV among them), requests
 * split over models without --gateway-url (the lossy form: the model rules
 * without the router), per-class ingress, cascades and hops (the k8s
 * export's messages).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "export/yaml.h"

#define MAX_BACKENDS HX_K8S_MAX_RULES
#define DECODE_PORT  8200 /* vLLM behind the routing sidecar */
#define EPP_PORT     9002 /* the EPP's ext-proc gRPC */
#define EPP_HEALTH   9003
#define EPP_METRICS  9090
#define EPP_CONFIG   "/etc/epp"

/* Groups joined by KV routes: one InferencePool and its EPP. */
typedef struct unit {
	int first; /* its first group */
	int ngroups, npre, ndec;
	double weight; /* ingress, summed over its groups */
	long scaled;   /* its HTTPRoute weight (of 1,000,000 per rule) */
	char key[56];  /* hexplan.dev/pool */
	char name[64]; /* "hexplan-" KEY: the pool */
	char epp[64];  /* NAME "-epp": the picker's objects */
	int pd;        /* prefill and decode groups: the P/D configuration */
} unit;

/* ---- units ---- */

static int root(int *parent, int g)
{
	while (parent[g] != g)
		g = parent[g] = parent[parent[g]];
	return g;
}

/* The units of the plan's groups into U (NU of them), UNIT_OF[g] each
 * group's, ingress weights from WEIGHT. */
static void units_find(const hx_plan *p, const hx_kgroup *kg, const double *weight, unit *u,
		       int *nu, int *unit_of)
{
	int *parent = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*parent));

	for (int g = 0; g < p->ngroups; g++)
		parent[g] = g;
	for (int i = 0; i < p->nkv; i++) {
		int a = hx_k8s_replica_group(p, p->kv[i].from);
		int b = hx_k8s_replica_group(p, p->kv[i].to);
		if (a >= 0 && b >= 0)
			parent[root(parent, a)] = root(parent, b);
	}
	*nu = 0;
	for (int g = 0; g < p->ngroups; g++) {
		int r = root(parent, g), i = 0;
		while (i < *nu && root(parent, u[i].first) != r)
			i++;
		if (i == *nu) {
			memset(&u[i], 0, sizeof(u[i]));
			u[i].first = g;
			(*nu)++;
		}
		unit_of[g] = i;
		u[i].ngroups++;
		u[i].npre += p->groups[g].role == HX_ROLE_PREFILL;
		u[i].ndec += p->groups[g].role == HX_ROLE_DECODE;
		u[i].weight += weight[g];
	}
	for (int i = 0; i < *nu; i++) {
		int named = u[i].first;
		for (int g = 0; g < p->ngroups; g++)
			if (unit_of[g] == i && u[i].ndec == 1 &&
			    p->groups[g].role == HX_ROLE_DECODE)
				named = g;
		snprintf(u[i].key, sizeof(u[i].key), "%s", kg[named].key);
		snprintf(u[i].name, sizeof(u[i].name), "hexplan-%.52s", u[i].key);
		snprintf(u[i].epp, sizeof(u[i].epp), "hexplan-%.50s-epp", u[i].key);
		u[i].pd = u[i].npre > 0 && u[i].ndec > 0;
	}
	free(parent);
}

/* What one pool's EPP cannot keep: refused, or noted with --lossy. */
static int unit_limits(const hx_plan *p, const hx_export_opts *o, const unit *u,
		       const int *unit_of, int ui, hx_export_out *out, hx_err *err)
{
	hx_buf names = {0};
	int rc = 0, n = 0;

	if (u->npre > 0 && u->ndec == 0) {
		char gn[64];
		hx_yaml_printable(gn, sizeof(gn), p->groups[u->first].name);
		return hx_errf(
		    err, HX_EINPUT,
		    "group \"%s\" prefills for no decode group, and llm-d's endpoint picker sends every request to a decode pod",
		    gn);
	}
	if (u->npre <= 1 && u->ndec <= 1)
		return 0;
	for (int g = 0; g < p->ngroups; g++)
		if (unit_of[g] == ui) {
			char gn[48];
			hx_yaml_printable(gn, sizeof(gn), p->groups[g].name);
			if (n < 6)
				hx_buf_printf(&names, "%s%s", n ? ", " : "", gn);
			else if (n == 6)
				hx_buf_printf(&names, ", ...");
			n++;
		}
	rc = hx_yaml_lose(
	    o, out, err,
	    "groups %s exchange KV caches, %d prefill and %d decode groups in one InferencePool, and its endpoint picker pairs their pods by load and cache: the plan's split of the KV routes among them is not kept",
	    names.s, u->npre, u->ndec);
	hx_buf_release(&names);
	return rc;
}

/* ---- the groups' pods ---- */

/* The routing sidecar of a P/D unit's decode pods: it takes the pool's port
 * and sends each request's prefill to the pod the EPP picked (its
 * x-prefiller-host-port header), then the request to vLLM on DECODE_PORT. */
static void sidecar(hx_yw *w)
{
	char port[32], server[48];

	snprintf(port, sizeof(port), "--port=%d", HX_K8S_PORT);
	snprintf(server, sizeof(server), "--model-server-port=%d", DECODE_PORT);
	hx_yw_map(w, "initContainers");
	hx_yw_item(w);
	hx_yw_str(w, "name", "routing-sidecar");
	hx_yw_str(w, "image", HX_EXPORT_IMAGE_SIDECAR);
	hx_yw_map(w, "args");
	hx_yw_item_str(w, port);
	hx_yw_item_str(w, server);
	hx_yw_item_str(w, "--kv-connector=nixlv2");
	/* plain HTTP, as the InferencePool's appProtocol (http) says */
	hx_yw_item_str(w, "--secure-proxy=false");
	hx_yw_end(w);
	hx_k8s_container_port(w, "sidecar-http", HX_K8S_PORT);
	/* a native sidecar: started before vLLM, running beside it */
	hx_yw_str(w, "restartPolicy", "Always");
	hx_yw_end(w);
	hx_yw_end(w);
}

/* The pod template KEY of K's pods of KIND in unit U: the serving pods
 * (not a LeaderWorkerSet's workers) carry the pool's label. */
static void pod_template(hx_yw *w, const char *key, const hx_kgroup *k, int kind, const unit *u)
{
	int serves = kind != HX_KPOD_WORKER;

	hx_yw_map(w, key);
	hx_yw_map(w, "metadata");
	hx_yw_map(w, "labels");
	hx_k8s_labels(w, k);
	if (serves)
		hx_yw_str(w, "hexplan.dev/pool", u->key);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_map(w, "spec");
	if (serves && u->pd && k->g->role == HX_ROLE_DECODE)
		sidecar(w);
	hx_k8s_pod_spec(w, k, kind, "vllm", 0);
	hx_yw_end(w);
	hx_yw_end(w);
}

static void selector(hx_yw *w, const char *key, const char *value)
{
	hx_yw_map(w, "selector");
	hx_yw_map(w, "matchLabels");
	hx_yw_str(w, "app.kubernetes.io/part-of", "hexplan");
	hx_yw_str(w, key, value);
	hx_yw_end(w);
	hx_yw_end(w);
}

/* K's Deployment (one node a replica) or LeaderWorkerSet, and its
 * PodDisruptionBudget. */
static void workload(hx_yw *w, const hx_kgroup *k, const unit *u)
{
	int lws = k->npods > 1;

	hx_yw_doc(w);
	hx_yw_str(w, "apiVersion", lws ? "leaderworkerset.x-k8s.io/v1" : "apps/v1");
	hx_yw_str(w, "kind", lws ? "LeaderWorkerSet" : "Deployment");
	hx_yw_map(w, "metadata");
	hx_yw_str(w, "name", k->name);
	hx_k8s_labels_placement(w, k);
	hx_yw_end(w);
	hx_yw_map(w, "spec");
	hx_yw_int(w, "replicas", k->g->nreplicas);
	if (lws) {
		/* workers start with the leader and wait for its Ray head */
		hx_yw_str(w, "startupPolicy", "LeaderCreated");
		hx_yw_map(w, "leaderWorkerTemplate");
		hx_yw_int(w, "size", k->npods);
		hx_yw_str(w, "restartPolicy", "RecreateGroupOnPodRestart");
		pod_template(w, "leaderTemplate", k, HX_KPOD_LEADER, u);
		pod_template(w, "workerTemplate", k, HX_KPOD_WORKER, u);
		hx_yw_end(w);
	} else {
		/* the plan uses the GPUs: no surge of extra pods on updates */
		hx_yw_map(w, "strategy");
		hx_yw_str(w, "type", "Recreate");
		hx_yw_end(w);
		selector(w, "hexplan.dev/group", k->key);
		pod_template(w, "template", k, HX_KPOD_SINGLE, u);
	}
	hx_yw_end(w);
	hx_k8s_disruption_budget(w, k);
}

/* ---- a unit's pool and endpoint picker ---- */

/* A new object's head, its metadata left open (close with hx_yw_end). */
static void meta(hx_yw *w, const char *api, const char *kind, const char *name)
{
	hx_yw_doc(w);
	hx_yw_str(w, "apiVersion", api);
	hx_yw_str(w, "kind", kind);
	hx_yw_map(w, "metadata");
	hx_yw_str(w, "name", name);
	hx_yw_map(w, "labels");
	hx_yw_str(w, "app.kubernetes.io/part-of", "hexplan");
	hx_yw_end(w);
}

static void pool(hx_yw *w, const unit *u)
{
	char weight[24];

	snprintf(weight, sizeof(weight), "%ld", u->scaled);
	meta(w, "inference.networking.k8s.io/v1", "InferencePool", u->name);
	hx_yw_map(w, "annotations");
	hx_yw_str(w, "hexplan.dev/weight", weight);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_map(w, "spec");
	selector(w, "hexplan.dev/pool", u->key);
	hx_yw_map(w, "targetPorts");
	hx_yw_item(w);
	hx_yw_int(w, "number", HX_K8S_PORT);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_map(w, "endpointPickerRef");
	hx_yw_str(w, "kind", "Service");
	hx_yw_str(w, "name", u->epp);
	hx_yw_map(w, "port");
	hx_yw_int(w, "number", EPP_PORT);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w);

	/* requests that name it (x-llm-d-inference-objective) are served at
	 * the EPP's default priority */
	meta(w, "llm-d.ai/v1alpha2", "InferenceObjective", u->name);
	hx_yw_end(w);
	hx_yw_map(w, "spec");
	hx_yw_int(w, "priority", 0);
	hx_yw_map(w, "poolRef");
	hx_yw_str(w, "group", "inference.networking.k8s.io");
	hx_yw_str(w, "kind", "InferencePool");
	hx_yw_str(w, "name", u->name);
	hx_yw_end(w);
	hx_yw_end(w);
}

/* The plugins of a scheduling profile: FILTER, the picker, the scorers. */
static void profile(hx_buf *b, const char *name, const char *filter)
{
	hx_buf_printf(b,
		      "- name: %s\n"
		      "  plugins:\n"
		      "  - pluginRef: %s\n"
		      "  - pluginRef: max-score-picker\n"
		      "  - pluginRef: prefix-cache-scorer\n"
		      "    weight: 2\n"
		      "  - pluginRef: queue-scorer\n"
		      "    weight: 1\n",
		      name, filter);
}

/* U's EndpointPickerConfig (llm-d.ai/v1alpha1), as llm-d-router's own
 * pd-epp-config.yaml and epp-config.yaml write it, with the decider that
 * always disaggregates; its header records the plan's share and groups.
 * Only this code's text, DNS labels and numbers: a literal block. */
static char *epp_config(const hx_plan *p, const hx_kgroup *kg, const unit *u,
			const int *unit_of, int ui, const double *weight, double total)
{
	hx_buf b = {0};

	hx_buf_printf(&b,
		      "# hexplan: InferencePool %s takes %.6g%% of the plan's requests\n"
		      "# (HTTPRoute weight %ld of 1000000); its groups:\n",
		      u->name, total > 0 ? 100 * u->weight / total : 0.0, u->scaled);
	for (int g = 0; g < p->ngroups; g++)
		if (unit_of[g] == ui)
			hx_buf_printf(&b, "#   %s: %s, replicas %d, ingress weight %.6g\n",
				      kg[g].key, hx_role_name(p->groups[g].role),
				      p->groups[g].nreplicas, weight[g]);
	hx_buf_printf(&b, "apiVersion: llm-d.ai/v1alpha1\n"
			  "kind: EndpointPickerConfig\n"
			  "plugins:\n");
	if (u->pd)
		hx_buf_printf(&b, "- type: approx-prefix-cache-producer\n"
				  "- type: prefix-cache-scorer\n"
				  "- type: queue-scorer\n"
				  "- type: prefill-filter\n"
				  "- type: decode-filter\n"
				  "- type: max-score-picker\n"
				  "- type: always-disagg-pd-decider\n"
				  "- type: disagg-profile-handler\n"
				  "  parameters:\n"
				  "    deciders:\n"
				  "      prefill: always-disagg-pd-decider\n"
				  "schedulingProfiles:\n");
	else
		hx_buf_printf(&b, "- type: prefix-cache-scorer\n"
				  "- type: queue-scorer\n"
				  "- type: decode-filter\n"
				  "- type: max-score-picker\n"
				  "- type: single-profile-handler\n"
				  "schedulingProfiles:\n");
	if (u->pd)
		profile(&b, "prefill", "prefill-filter");
	profile(&b, u->pd ? "decode" : "default", "decode-filter");
	return b.s;
}

/* KEY: |, then TEXT's lines indented under it. */
static void literal(hx_yw *w, const char *key, const char *text)
{
	hx_yw_lead(w);
	hx_buf_printf(&w->b, "%s: |\n", key);
	while (*text) {
		size_t n = strcspn(text, "\n");
		hx_buf_printf(&w->b, "%*s%.*s\n", w->ind + 2, "", (int)n, text);
		text += n + (text[n] == '\n');
	}
}

static void config_map(hx_yw *w, const unit *u, const char *text)
{
	meta(w, "v1", "ConfigMap", u->epp);
	hx_yw_end(w);
	hx_yw_map(w, "data");
	literal(w, "epp-config.yaml", text);
	hx_yw_end(w);
}

static void rule(hx_yw *w, const char *group, const char *resource[], const char *verb[])
{
	hx_yw_item(w);
	hx_yw_map(w, "apiGroups");
	hx_yw_item_str(w, group);
	hx_yw_end(w);
	hx_yw_map(w, "resources");
	for (int i = 0; resource[i]; i++)
		hx_yw_item_str(w, resource[i]);
	hx_yw_end(w);
	hx_yw_map(w, "verbs");
	for (int i = 0; verb[i]; i++)
		hx_yw_item_str(w, verb[i]);
	hx_yw_end(w);
	hx_yw_end(w);
}

/* The EPP's identity and what it may read: its pool, the objectives, the
 * pods (as llm-d-router's deploy/components/inference-gateway/rbac.yaml),
 * and the reviews that guard its metrics. */
static void rbac(hx_yw *w, const unit *u)
{
	static const char *read[] = {"get", "watch", "list", NULL},
			  *create[] = {"create", NULL};
	static const char *pools[] = {"inferencepools", NULL},
			  *objectives[] = {"inferenceobjectives", "inferencemodelrewrites",
					   NULL},
			  *pods[] = {"pods", NULL}, *tokens[] = {"tokenreviews", NULL},
			  *access[] = {"subjectaccessreviews", NULL};

	meta(w, "v1", "ServiceAccount", u->epp);
	hx_yw_end(w);
	meta(w, "rbac.authorization.k8s.io/v1", "Role", u->epp);
	hx_yw_end(w);
	hx_yw_map(w, "rules");
	rule(w, "inference.networking.k8s.io", pools, read);
	rule(w, "llm-d.ai", objectives, read);
	rule(w, "", pods, read);
	rule(w, "authentication.k8s.io", tokens, create);
	rule(w, "authorization.k8s.io", access, create);
	hx_yw_end(w);
	meta(w, "rbac.authorization.k8s.io/v1", "RoleBinding", u->epp);
	hx_yw_end(w);
	hx_yw_map(w, "subjects");
	hx_yw_item(w);
	hx_yw_str(w, "kind", "ServiceAccount");
	hx_yw_str(w, "name", u->epp);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_map(w, "roleRef");
	hx_yw_str(w, "apiGroup", "rbac.authorization.k8s.io");
	hx_yw_str(w, "kind", "Role");
	hx_yw_str(w, "name", u->epp);
	hx_yw_end(w);
}

static void grpc_probe(hx_yw *w, const char *key)
{
	hx_yw_map(w, key);
	hx_yw_map(w, "grpc");
	hx_yw_int(w, "port", EPP_HEALTH);
	hx_yw_str(w, "service", "envoy.service.ext_proc.v3.ExternalProcessor");
	hx_yw_end(w);
	hx_yw_int(w, "initialDelaySeconds", 5);
	hx_yw_int(w, "periodSeconds", 10);
	hx_yw_end(w);
}

static void epp_container(hx_yw *w, const unit *u)
{
	char grpc[16], health[16];

	snprintf(grpc, sizeof(grpc), "%d", EPP_PORT);
	snprintf(health, sizeof(health), "%d", EPP_HEALTH);
	hx_yw_item(w);
	hx_yw_str(w, "name", "epp");
	hx_yw_str(w, "image", HX_EXPORT_IMAGE_EPP);
	hx_yw_map(w, "args");
	hx_yw_item_str(w, "--pool-name");
	hx_yw_item_str(w, u->name);
	hx_yw_item_str(w, "--config-file");
	hx_yw_item_str(w, EPP_CONFIG "/epp-config.yaml");
	hx_yw_item_str(w, "--grpc-port");
	hx_yw_item_str(w, grpc);
	hx_yw_item_str(w, "--grpc-health-port");
	hx_yw_item_str(w, health);
	hx_yw_end(w);
	/* the pool's namespace: the EPP reads NAMESPACE */
	hx_yw_map(w, "env");
	hx_k8s_env_namespace(w, "NAMESPACE");
	hx_yw_end(w);
	hx_yw_map(w, "ports");
	hx_yw_item(w);
	hx_yw_str(w, "name", "grpc");
	hx_yw_int(w, "containerPort", EPP_PORT);
	hx_yw_end(w);
	hx_yw_item(w);
	hx_yw_str(w, "name", "grpc-health");
	hx_yw_int(w, "containerPort", EPP_HEALTH);
	hx_yw_end(w);
	hx_yw_item(w);
	hx_yw_str(w, "name", "metrics");
	hx_yw_int(w, "containerPort", EPP_METRICS);
	hx_yw_end(w);
	hx_yw_end(w);
	grpc_probe(w, "livenessProbe");
	grpc_probe(w, "readinessProbe");
	hx_yw_map(w, "volumeMounts");
	hx_yw_item(w);
	hx_yw_str(w, "name", "epp-config");
	hx_yw_str(w, "mountPath", EPP_CONFIG);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w);
}

/* The EPP's Deployment and Service. */
static void picker(hx_yw *w, const unit *u)
{
	meta(w, "apps/v1", "Deployment", u->epp);
	hx_yw_end(w);
	hx_yw_map(w, "spec");
	hx_yw_int(w, "replicas", 1);
	selector(w, "hexplan.dev/epp", u->key);
	hx_yw_map(w, "template");
	hx_yw_map(w, "metadata");
	hx_yw_map(w, "labels");
	hx_yw_str(w, "app.kubernetes.io/part-of", "hexplan");
	hx_yw_str(w, "hexplan.dev/epp", u->key);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_map(w, "spec");
	hx_yw_str(w, "serviceAccountName", u->epp);
	hx_yw_int(w, "terminationGracePeriodSeconds", 130);
	hx_yw_map(w, "containers");
	epp_container(w, u);
	hx_yw_end(w);
	hx_yw_map(w, "volumes");
	hx_yw_item(w);
	hx_yw_str(w, "name", "epp-config");
	hx_yw_map(w, "configMap");
	hx_yw_str(w, "name", u->epp);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w); /* spec */
	hx_yw_end(w); /* template */
	hx_yw_end(w); /* spec */

	meta(w, "v1", "Service", u->epp);
	hx_yw_end(w);
	hx_yw_map(w, "spec");
	hx_yw_map(w, "selector");
	hx_yw_str(w, "app.kubernetes.io/part-of", "hexplan");
	hx_yw_str(w, "hexplan.dev/epp", u->key);
	hx_yw_end(w);
	hx_yw_map(w, "ports");
	hx_k8s_service_port(w, "grpc", EPP_PORT, "http2");
	hx_k8s_service_port(w, "metrics", EPP_METRICS, NULL);
	hx_yw_end(w);
	hx_yw_end(w);
}

/* ---- the route ---- */

/* Keep at most MAX_BACKENDS pools of model M with the largest weights in
 * KEEP; notes or refuses when more take ingress.  Returns their count. */
static int route_keep(const hx_kgroup *kg, const unit *u, int nu, const hx_model *m, int *keep,
		      const hx_export_opts *o, hx_export_out *out, hx_err *err, int *rc)
{
	int n = 0;

	for (int i = 0; i < nu; i++) {
		keep[i] = u[i].weight > 0 && kg[u[i].first].m == m;
		n += keep[i];
	}
	if (n > MAX_BACKENDS &&
	    (*rc = hx_yaml_lose(
		 o, out, err,
		 "%d InferencePools take requests, and an HTTPRoute rule holds %d backends: the %d with the largest weights take them all",
		 n, MAX_BACKENDS, MAX_BACKENDS)))
		return 0;
	if (n > MAX_BACKENDS) {
		double *wt = hx_xcalloc((size_t)nu + 1, sizeof(*wt));
		for (int i = 0; i < nu; i++)
			wt[i] = u[i].weight;
		hx_k8s_keep_largest(wt, keep, nu, n, MAX_BACKENDS);
		free(wt);
		n = MAX_BACKENDS;
	}
	return n;
}

/* One rule: the pools in KEEP, weighted among them; on model M's header
 * (its served name, REPO) when HEADER. */
static void route_rule(hx_yw *w, unit *u, int nu, const int *keep, const char *header)
{
	double *sub = hx_xcalloc((size_t)nu + 1, sizeof(*sub));
	long *scaled = hx_xcalloc((size_t)nu + 1, sizeof(*scaled));

	for (int i = 0; i < nu; i++)
		sub[i] = keep[i] ? u[i].weight : 0;
	hx_k8s_scale(sub, nu, scaled);
	hx_k8s_rule_open(w, header);
	for (int i = 0; i < nu; i++) {
		if (!keep[i])
			continue;
		u[i].scaled = scaled[i];
		hx_yw_item(w);
		hx_yw_str(w, "group", "inference.networking.k8s.io");
		hx_yw_str(w, "kind", "InferencePool");
		hx_yw_str(w, "name", u[i].name);
		hx_yw_int(w, "port", HX_K8S_PORT);
		hx_yw_int(w, "weight", scaled[i]);
		hx_yw_end(w);
	}
	hx_yw_end(w);
	hx_yw_end(w);
	free(sub);
	free(scaled);
}

/* The LiteLLM router in front of the pools of a plan split over NMODELS
 * MODELS: per model, one deployment sent back to the Gateway (--gateway-url)
 * with the model header that its HTTPRoute rule matches, weighted by the
 * model's share of the requests; the rule then splits them over the
 * model's pools by theirs, so each pool keeps the plan's share.  HX_EINPUT
 * (ERR) when a group's objects would take the router's name, or when the
 * rules (one per model and the router's) would not fit an HTTPRoute: a
 * model without its rule would come back to the router. */
static int litellm(hx_yw *w, const hx_export_opts *o, const hx_kgroup *kg, int ngroups,
		   const unit *u, int nu, const hx_model **models, int nmodels, hx_err *err)
{
	hx_litellm_dep *dep;
	size_t n = strlen(o->gateway_url);

	for (int g = 0; g < ngroups; g++)
		if (strcmp(kg[g].name, HX_K8S_LITELLM) == 0)
			return hx_errf(
			    err, HX_EINPUT,
			    "group %s: its objects would be named " HX_K8S_LITELLM
			    ", the name of the LiteLLM router that splits the plan's requests over its models",
			    kg[g].key);
	if (nmodels > HX_K8S_MAX_RULES - 1)
		return hx_errf(
		    err, HX_EINPUT,
		    "%d models take requests, and an HTTPRoute holds %d rules: one per model and the LiteLLM router's",
		    nmodels, HX_K8S_MAX_RULES);
	if (n > 0 && o->gateway_url[n - 1] == '/')
		n--;
	dep = hx_xcalloc((size_t)nmodels, sizeof(*dep));
	for (int i = 0; i < nmodels; i++) {
		for (int j = 0; j < nu; j++)
			if (kg[u[j].first].m == models[i] && u[j].weight > 0) {
				dep[i].repo = kg[u[j].first].repo;
				dep[i].weight += u[j].weight;
			}
		dep[i].header = dep[i].repo;
		snprintf(dep[i].api_base, sizeof(dep[i].api_base), "%.*s/v1", (int)n,
			 o->gateway_url);
	}
	hx_k8s_litellm(w, "llm-d", dep, nmodels);
	free(dep);
	return 0;
}

/* The HTTPRoute into ROUTE (written last, but its weights are the pools'
 * annotations): the pools that take ingress; one rule per model, and
 * when the plan splits over models and --gateway-url gives the Gateway's
 * address, the LiteLLM router before them and a rule without the header
 * that sends it every other request (a rule with a header match takes
 * precedence over one without: HTTPRouteRule.matches in the HTTPRoute
 * CRD, gateway.networking.k8s.io_httproutes.yaml). */
static int route(hx_yw *w, const hx_plan *p, const hx_export_opts *o, const hx_kgroup *kg,
		 unit *u, int nu, hx_export_out *out, hx_err *err)
{
	const hx_model **models = hx_xcalloc((size_t)nu + 1, sizeof(*models));
	int *keep = hx_xcalloc((size_t)nu + 1, sizeof(*keep));
	int rc = 0, nmodels = 0, router;

	for (int i = 0; i < nu; i++)
		if (u[i].weight > 0) {
			int seen = 0;
			for (int j = 0; j < nmodels && !seen; j++)
				seen = models[j] == kg[u[i].first].m;
			if (!seen)
				models[nmodels++] = kg[u[i].first].m;
		}
	router = nmodels > 1 && o->gateway_url;
	if (router && (rc = litellm(w, o, kg, p->ngroups, u, nu, models, nmodels, err)))
		goto done;
	if ((rc = hx_k8s_httproute_open(w, nmodels + router, o, out, err))) {
		if (rc == 1)
			rc = 0;
		goto done;
	}
	for (int i = 0; i < nmodels && i < MAX_BACKENDS; i++) {
		int first = 0;
		route_keep(kg, u, nu, models[i], keep, o, out, err, &rc);
		if (rc)
			goto done;
		while (!keep[first])
			first++;
		route_rule(w, u, nu, keep, nmodels > 1 ? kg[u[first].first].repo : NULL);
	}
	if (router)
		hx_k8s_litellm_rule(w);
	hx_yw_end(w);
	hx_yw_end(w);
done:
	free(models);
	free(keep);
	return rc;
}

/* Requests split over models: each engine serves its own model, so a
 * request needs a rule for the model it names, or the LiteLLM router,
 * which needs the Gateway's address.  Without --gateway-url: refused, or
 * noted with --lossy (one rule per model). */
static int split_models(const hx_plan *p, const hx_export_opts *o, const hx_kgroup *kg,
			const double *weight, hx_export_out *out, hx_err *err)
{
	int first = -1;

	if (o->gateway_url)
		return 0;
	for (int g = 0; g < p->ngroups; g++)
		if (weight[g] > 0) {
			if (first < 0)
				first = g;
			else if (kg[g].m != kg[first].m)
				return hx_yaml_lose(
				    o, out, err,
				    "the ingress splits requests over models, and a request names its model: the LiteLLM router that splits them sends each model's requests back through the Gateway to its InferencePools, and the Gateway's in-cluster address depends on its implementation (--gateway-url URL gives it); without it, one HTTPRoute rule per model, matching the " HX_K8S_MODEL_HEADER
				    " header that the gateway's body-based router sets, splits that model's requests over its pools by their weights");
		}
	return 0;
}

/* ---- the export ---- */

static void header(hx_buf *b, const hx_export_opts *o)
{
	char buf[64];
	const char *image = hx_export_vllm_image(o, 0, buf, sizeof(buf));

	hx_buf_printf(
	    b,
	    "# Written by hexplan export --to llm-d for llm-d-router %s, the Gateway\n"
	    "# API Inference Extension %s (InferencePool inference.networking.k8s.io/v1,\n"
	    "# InferenceObjective llm-d.ai/v1alpha2) and vLLM %s: images\n"
	    "# %s,\n"
	    "# %s and for vLLM\n",
	    HX_EXPORT_LLMD_VERSION, HX_EXPORT_GIE_VERSION,
	    hx_export_engine_version(o, HX_EXPORT_VLLM_VERSION), HX_EXPORT_IMAGE_EPP,
	    HX_EXPORT_IMAGE_SIDECAR);
	if (o->image)
		hx_buf_printf(b, "# %s (--image).\n", o->image);
	else
		hx_buf_printf(b,
			      "# %s and, on AMD GPUs,\n"
			      "# %s\n"
			      "# (the defaults; --image replaces them).\n",
			      image, HX_EXPORT_IMAGE_AMD);
}

/* Everything after the checks: the units' pods, pools and pickers, then the
 * route (whose weights the pools and configs record: computed first). */
static int write_all(hx_yw *w, const hx_plan *p, const hx_export_opts *o, hx_kgroup *kg,
		     unit *u, int nu, const int *unit_of, const double *weight,
		     hx_export_out *out, hx_err *err)
{
	hx_yw rw = {{0}, 0, 0};
	double total = 0;
	int rc;

	for (int i = 0; i < nu; i++)
		total += u[i].weight;
	if ((rc = route(&rw, p, o, kg, u, nu, out, err)))
		goto done;
	for (int i = 0; i < nu; i++) {
		char *text;
		for (int g = 0; g < p->ngroups; g++)
			if (unit_of[g] == i) {
				if (u[i].pd && p->groups[g].role == HX_ROLE_DECODE)
					kg[g].port = DECODE_PORT;
				workload(w, &kg[g], &u[i]);
			}
		pool(w, &u[i]);
		text = epp_config(p, kg, &u[i], unit_of, i, weight, total);
		config_map(w, &u[i], text);
		free(text);
		rbac(w, &u[i]);
		picker(w, &u[i]);
	}
	if (rw.b.s)
		hx_buf_printf(&w->b, "%s", rw.b.s);
done:
	hx_buf_release(&rw.b);
	return rc;
}

int hx_export_llmd(const hx_plan *p, const hx_export_opts *o, hx_export_out *out, hx_err *err)
{
	char(*key)[56] = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*key));
	hx_kgroup *kg = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*kg));
	double *weight = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*weight));
	unit *u = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*u));
	int *unit_of = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*unit_of));
	hx_yw w = {{0}, 0, 0};
	int rc = 0, n = 0, nu = 0;

	hx_k8s_keys(p, key);
	for (n = 0; n < p->ngroups; n++)
		if ((rc = hx_kgroup_init(&kg[n], p, o, n, key[n], out, err))) {
			n++;
			goto done;
		}
	if ((rc = hx_yaml_lose_steps(p, o, out, err)) ||
	    (rc = hx_k8s_route_weights(p, o, 1, weight, out, err)) ||
	    (rc = split_models(p, o, kg, weight, out, err)))
		goto done;
	units_find(p, kg, weight, u, &nu, unit_of);
	for (int i = 0; i < nu; i++)
		if ((rc = unit_limits(p, o, &u[i], unit_of, i, out, err)))
			goto done;
	header(&w.b, o);
	if ((rc = write_all(&w, p, o, kg, u, nu, unit_of, weight, out, err)))
		goto done;
	hx_export_add(out, "hexplan.yaml", w.b.s);
	w.b.s = NULL;
done:
	for (int g = 0; g < n; g++)
		hx_kgroup_release(&kg[g]);
	hx_buf_release(&w.b);
	free(unit_of);
	free(u);
	free(weight);
	free(kg);
	free(key);
	return rc;
}
