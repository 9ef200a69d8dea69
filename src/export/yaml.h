/*
 * export_yaml: what the k8s and kserve exports share (DESIGN §9).
 *
 * A YAML writer by hand: every string value is a double-quoted scalar in
 * which '"', '\' and everything outside printable ASCII is escaped (UTF-8
 * as \uXXXX), so no name from a plan or a cluster file can change the
 * structure of a manifest, and the output is plain ASCII.  Keys come from
 * this code only.
 *
 * And the view of a replica group both targets take (export_k8s.c): its
 * unique object name, its pods (one per node of a replica: the GPUs there),
 * the vLLM command each pod runs, and the pod spec written from them.
 */
#ifndef HX_EXPORT_YAML_H
#define HX_EXPORT_YAML_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "export/export.h"

typedef struct hx_yw {
	hx_buf b;
	int ind;  /* indentation of the next key */
	int dash; /* the next line opens a sequence item */
} hx_yw;

/* S as a double-quoted YAML scalar, appended to B. */
static inline void hx_yaml_quote(hx_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	hx_buf_printf(b, "\"");
	while (*p) {
		unsigned c = *p, cp = 0;
		int len = 0;

		if (c == '"' || c == '\\') {
			hx_buf_printf(b, "\\%c", (int)c);
			p++;
			continue;
		}
		if (c >= 0x20 && c < 0x7f) {
			hx_buf_printf(b, "%c", (int)c);
			p++;
			continue;
		}
		if (c < 0x80) {
			if (c == '\n')
				hx_buf_printf(b, "\\n");
			else if (c == '\t')
				hx_buf_printf(b, "\\t");
			else
				hx_buf_printf(b, "\\x%02X", c);
			p++;
			continue;
		}
		/* UTF-8: decode one code point; anything malformed is U+FFFD */
		if (c >= 0xc2 && c <= 0xdf)
			len = 2, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			len = 3, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			len = 4, cp = c & 0x07;
		for (int i = 1; i < len; i++) {
			if ((p[i] & 0xc0) != 0x80) {
				len = 0;
				break;
			}
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if (len == 0 || (len == 3 && cp < 0x800) ||
		    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff)) {
			hx_buf_printf(b, "\\uFFFD");
			p++;
			continue;
		}
		if (cp > 0xffff)
			hx_buf_printf(b, "\\U%08X", cp);
		else
			hx_buf_printf(b, "\\u%04X", cp);
		p += len;
	}
	hx_buf_printf(b, "\"");
}

/* The indentation of a new line (and the "- " of a new sequence item). */
static inline void hx_yw_lead(hx_yw *w)
{
	if (w->dash) {
		hx_buf_printf(&w->b, "%*s- ", w->ind - 2, "");
		w->dash = 0;
	} else {
		hx_buf_printf(&w->b, "%*s", w->ind, "");
	}
}

/* A new document of the stream. */
static inline void hx_yw_doc(hx_yw *w)
{
	hx_buf_printf(&w->b, "---\n");
	w->ind = 0;
	w->dash = 0;
}

/* KEY: "VAL" */
static inline void hx_yw_str(hx_yw *w, const char *key, const char *val)
{
	hx_yw_lead(w);
	hx_buf_printf(&w->b, "%s: ", key);
	hx_yaml_quote(&w->b, val);
	hx_buf_printf(&w->b, "\n");
}

/* KEY: N */
static inline void hx_yw_int(hx_yw *w, const char *key, long long n)
{
	hx_yw_lead(w);
	hx_buf_printf(&w->b, "%s: %lld\n", key, n);
}

/* KEY: TOKEN, for a literal of this code's own (true, {}). */
static inline void hx_yw_raw(hx_yw *w, const char *key, const char *token)
{
	hx_yw_lead(w);
	hx_buf_printf(&w->b, "%s: %s\n", key, token);
}

/* KEY: and a nested mapping or sequence (close with hx_yw_end). */
static inline void hx_yw_map(hx_yw *w, const char *key)
{
	hx_yw_lead(w);
	hx_buf_printf(&w->b, "%s:\n", key);
	w->ind += 2;
}

static inline void hx_yw_end(hx_yw *w)
{
	w->ind -= 2;
	w->dash = 0;
}

/* A sequence item that is a mapping: its first key follows the "- " (close
 * with hx_yw_end). */
static inline void hx_yw_item(hx_yw *w)
{
	w->ind += 2;
	w->dash = 1;
}

/* - "VAL" */
static inline void hx_yw_item_str(hx_yw *w, const char *val)
{
	hx_buf_printf(&w->b, "%*s- ", w->ind, "");
	hx_yaml_quote(&w->b, val);
	hx_buf_printf(&w->b, "\n");
}

/* S for a message line: control characters become '?' (new string in OUT). */
static inline void hx_yaml_printable(char *out, size_t n, const char *s)
{
	size_t k = 0;

	for (; *s && k + 1 < n; s++)
		out[k++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
	out[k] = '\0';
}

/* Something the target cannot express: noted when lossy (and 0), else a
 * refusal (HX_EINPUT) that says --lossy writes the closest form. */
static inline int hx_yaml_lose(const hx_export_opts *o, hx_export_out *out, hx_err *err,
			       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static inline int hx_yaml_lose(const hx_export_opts *o, hx_export_out *out, hx_err *err,
			       const char *fmt, ...)
{
	char msg[600], line[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	hx_yaml_printable(line, sizeof(line), msg);
	if (o->lossy) {
		hx_export_lost(out, "%s", line);
		return 0;
	}
	return hx_errf(err, HX_EINPUT, "%s (--lossy writes the closest form)", line);
}

/* Cascade steps and hops between replicas' stages, which no Kubernetes
 * target expresses: refused, or noted with --lossy. */
static inline int hx_yaml_lose_steps(const hx_plan *p, const hx_export_opts *o,
				     hx_export_out *out, hx_err *err)
{
	int rc;

	if (p->ncascade > 0 &&
	    (rc = hx_yaml_lose(
		 o, out, err,
		 "the cascade (%d steps) is not expressible: requests are not escalated between models",
		 p->ncascade)))
		return rc;
	if (p->nhops > 0 &&
	    (rc = hx_yaml_lose(
		 o, out, err,
		 "the %d hops between replicas' stages are not expressible: each replica runs its stages itself",
		 p->nhops)))
		return rc;
	return 0;
}

/* Ingress routes of different classes, which ROUTER ("an HTTPRoute") does
 * not tell apart: refused, or noted with --lossy (the weights are summed). */
static inline int hx_yaml_lose_classes(const hx_plan *p, const hx_export_opts *o,
				       const char *router, hx_export_out *out, hx_err *err)
{
	for (int i = 1; i < p->ningress; i++)
		if (strcmp(p->ingress[i].from, p->ingress[0].from) != 0) {
			char a[64], b[64];
			hx_yaml_printable(a, sizeof(a), p->ingress[0].from);
			hx_yaml_printable(b, sizeof(b), p->ingress[i].from);
			return hx_yaml_lose(
			    o, out, err,
			    "the plan routes classes \"%s\" and \"%s\" apart, and %s does not see a request's class: the weights are summed over the classes",
			    a, b, router);
		}
	return 0;
}

/* ---- shared with export_k8s.c ---- */

enum { HX_KPOD_SINGLE, HX_KPOD_LEADER, HX_KPOD_WORKER };

#define HX_K8S_PORT  8000
#define HX_K8S_CACHE "/models" /* the model cache volume's mount */

/* One pod of a replica: the GPUs it holds on one node. */
typedef struct hx_kpod {
	const hx_gpu *gpu; /* the node's GPU profile */
	int ngpus;
	int stage0, nstages; /* the stages with GPUs here */
} hx_kpod;

/* A replica group as Kubernetes sees it. */
typedef struct hx_kgroup {
	const hx_plan *plan;
	const hx_export_opts *o;
	const hx_plan_group *g;
	const hx_model *m;
	char key[56];     /* unique DNS-1123 label of the group: hexplan.dev/group */
	char name[64];    /* its objects: "hexplan-" KEY */
	char model[64];   /* DNS-1123 label of the model name: hexplan.dev/model */
	const char *repo; /* what vLLM serves (the Hugging Face repository) */
	int tp, pp;
	hx_export_ep ep; /* the group's expert parallelism (ep.world 0: none) */
	int npods;       /* pods per replica (nodes), as replica 0 lays them out */
	hx_kpod *pods;
	/* the worker template's GPUs when worker pods differ (lossy): */
	int worker_ngpus;
	int worker_nproducts;
	const char *worker_products[8];
	char *placement; /* every replica's GPUs, for an annotation */
	int port;        /* where vLLM listens: 0 for HX_K8S_PORT (llm-d's decode
			  * pods: its routing sidecar takes that one) */
} hx_kgroup;

/* The port K's vLLM listens on, probed and declared. */
static inline int hx_k8s_port(const hx_kgroup *k)
{
	return k->port ? k->port : HX_K8S_PORT;
}

/* The header the gateway's body-based router sets from a request's "model"
 * (Gateway API Inference Extension): what per-model rules match on. */
#define HX_K8S_MODEL_HEADER "X-Gateway-Model-Name"

/* The unique keys of the plan's groups (KEY[i] for group i). */
void hx_k8s_keys(const hx_plan *p, char (*key)[56]);
/* Read group GI for TARGET ("k8s", "kserve"); refuses or notes in OUT what
 * the pods cannot express.  Release with hx_kgroup_release. */
int hx_kgroup_init(hx_kgroup *k, const hx_plan *p, const hx_export_opts *o, int gi,
		   const char *key, hx_export_out *out, hx_err *err);
void hx_kgroup_release(hx_kgroup *k);
/* The labels of K's pods (a mapping's keys at W's indentation). */
void hx_k8s_labels(hx_yw *w, const hx_kgroup *k);
/* The pod spec of K's pod KIND (HX_KPOD_*) as mapping keys at W's
 * indentation; the container is named CONTAINER.  MANAGED (KServe): the
 * serving port, its container port and probes come from KServe's presets
 * (vLLM listens behind llm-d's routing sidecar on decode pods), except on
 * a multi-node leader, whose shell command takes no appended arguments. */
void hx_k8s_pod_spec(hx_yw *w, const hx_kgroup *k, int kind, const char *container,
		     int managed);
/* The nodeSelector that pins K's single-node pods to their GPU type (none
 * when the product is no valid label value), and their resources: GPU
 * limits, CPU and memory requests.  Mapping keys at W's indentation. */
void hx_k8s_pin(hx_yw *w, const hx_kgroup *k);
void hx_k8s_resources(hx_yw *w, const hx_kgroup *k);
/* K's pod labels and its placement annotation: two mapping keys. */
void hx_k8s_labels_placement(hx_yw *w, const hx_kgroup *k);
/* Env items: NAME=VALUE; VLLM_PP_LAYER_PARTITION when K has stages; the
 * Hugging Face token from the Secret hf-token (optional). */
void hx_k8s_env(hx_yw *w, const char *name, const char *value);
void hx_k8s_pp_env(hx_yw *w, const hx_kgroup *k);
void hx_k8s_hf_token(hx_yw *w);
/* The model-cache volume item: --model-cache's claim, else scratch. */
void hx_k8s_cache_volume(hx_yw *w, const hx_kgroup *k);
/* S with '$' doubled (Kubernetes expands $(VAR) in env values and args;
 * "$$" is its escape) as KEY's value, or as a sequence item when KEY is
 * NULL. */
void hx_k8s_str_nodollar(hx_yw *w, const char *key, const char *s);
/* The group of replica ID ("g0r1", or "g0r1/s0"): an index, or -1. */
int hx_k8s_replica_group(const hx_plan *p, const char *id);
/* A PodDisruptionBudget for K: at most one of its pods down at a time for
 * voluntary disruptions (node drains). */
void hx_k8s_disruption_budget(hx_yw *w, const hx_kgroup *k);
/* Ingress weights per group (summed over classes) into WEIGHT[ngroups],
 * zeroed by the caller; refuses or notes (OUT) what an HTTPRoute cannot see:
 * per-class routes, and a split over models unless MODEL_ROUTER (the caller
 * puts a router that rewrites the model in front).  Returns 0 or HX_EINPUT
 * (ERR). */
int hx_k8s_route_weights(const hx_plan *p, const hx_export_opts *o, int model_router,
			 double *weight, hx_export_out *out, hx_err *err);
/* A LiteLLM router for a plan whose requests split over models: the
 * ConfigMap, Deployment and Service HX_K8S_LITELLM on HX_K8S_LITELLM_PORT.
 * Its model_list has, per item of DEP[0..N) with weight > 0, a deployment
 * under the item's repository and one under HX_K8S_MODEL_GROUP, sent to
 * its api_base (with the header HX_K8S_MODEL_HEADER: HEADER when HEADER)
 * and weighted by its share of the items' weights; simple-shuffle draws by
 * the weights.  An api_base that holds "$(" HX_K8S_LITELLM_NS ")" (the
 * router's namespace, which no manifest names) goes in an environment
 * variable of the router's pod, where Kubernetes expands it, and the
 * config names the variable.  TARGET names the export in the config's
 * comment. */
#define HX_K8S_LITELLM        "hexplan-litellm"
#define HX_K8S_LITELLM_PORT   4000
#define HX_K8S_LITELLM_PORT_S "4000"
#define HX_K8S_MODEL_GROUP    "hexplan"
#define HX_K8S_LITELLM_NS     "HEXPLAN_NAMESPACE"
typedef struct hx_litellm_dep {
	const char *repo;   /* the model the engines serve (borrowed) */
	char api_base[320]; /* the OpenAI base URL requests are sent to */
	const char *header; /* HX_K8S_MODEL_HEADER's value, or NULL (borrowed) */
	double weight;
} hx_litellm_dep;
void hx_k8s_litellm(hx_yw *w, const char *target, const hx_litellm_dep *dep, int n);
/* WEIGHT[0..N) scaled to integers summing to 1,000,000, proportional
 * (largest remainder); all 0 when the weights sum to 0. */
void hx_k8s_scale(const double *weight, int n, long *out);
/* One HTTPRoute rule's head: a path match on "/" and, when HEADER, an exact
 * match of the model header on it; leaves its "backendRefs" list open. */
void hx_k8s_rule_open(hx_yw *w, const char *header);
/* A whole HTTPRoute rule with no header match that sends every request
 * to the LiteLLM router's Service (HX_K8S_LITELLM). */
void hx_k8s_litellm_rule(hx_yw *w);
/* An env list item NAME whose value is the pod's own namespace (the
 * downward API's metadata.namespace). */
void hx_k8s_env_namespace(hx_yw *w, const char *name);
/* Clear the smallest of WEIGHT[0..N) flagged in KEEP (KEPT of them) until
 * MAX are left; ties go to the later index. */
void hx_k8s_keep_largest(const double *weight, int *keep, int n, int kept, int max);
/* A Service's port: NAME, PORT (its target too), TCP and, when APP, its
 * appProtocol; an item of an open "ports" list. */
void hx_k8s_service_port(hx_yw *w, const char *name, int port, const char *app);
/* A container's "ports" list of one TCP port NAME at PORT. */
void hx_k8s_container_port(hx_yw *w, const char *name, int port);
/* The head of the plan's one HTTPRoute, on the hexplan gateway, up to its
 * open "rules" list (HX_K8S_GATEWAY); first the refusals (or notes, OUT)
 * when NMODELS models take requests: none routes no requests, and more
 * than HX_K8S_MAX_RULES get that many rules.  Returns 0, 1 when nothing is
 * to be written (no requests, OUT noted), or HX_EINPUT (ERR). */
#define HX_K8S_GATEWAY   "hexplan-gateway"
#define HX_K8S_MAX_RULES 16 /* backendRefs per HTTPRoute rule, and rules */
int hx_k8s_httproute_open(hx_yw *w, int nmodels, const hx_export_opts *o, hx_export_out *out,
			  hx_err *err);

#endif
