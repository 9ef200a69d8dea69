/*
 * export_dynamo: the plan as NVIDIA Dynamo DynamoGraphDeployment objects
 * (nvidia.com/v1beta1, the operator's storage version; DESIGN §9), one YAML
 * stream, hexplan.yaml.
 *
 * One DynamoGraphDeployment per model of the plan, named hexplan-MODEL: a
 * model's workers register with the frontend of their own graph, and a
 * request names its model.  Each has a Frontend component (type frontend,
 * one replica: Dynamo's OpenAI-compatible HTTP server and router) and one
 * worker component per replica group: an aggregated group is a
 * VllmDecodeWorker of type worker, a prefill group a VllmPrefillWorker of
 * type prefill (--disaggregation-mode prefill and the NIXL connector, as
 * Dynamo's disaggregated vLLM example gives them), a decode group a
 * VllmDecodeWorker of type decode (--disaggregation-mode decode); names
 * take a suffix -N when a model has several groups of one kind.  Workers
 * run `python3 -m dynamo.vllm` with the model's repository and the vLLM
 * engine arguments of the group (tensor and pipeline parallelism, context
 * length, precision), the group's replicas, and the pod basics of the k8s
 * export: a nodeSelector on the GPU product, GPU limits, CPU and memory
 * requests, the model cache (HF_HOME; --model-cache's claim, else scratch)
 * and HF_TOKEN from the Secret hf-token.  Probes and /dev/shm are the
 * operator's.  When the plan's ingress splits over models (a route or bo
 * plan), the LiteLLM router of export_k8s.c goes in front of the graphs'
 * frontend Services, one deployment per model weighted by its share, so a
 * request for "hexplan" is split as planned and one that names a model
 * reaches only its frontend.
 *
 * Refused, even with --lossy: replicas that span nodes (a multi-node worker
 * needs Dynamo's multinode launch, not written), AMD GPUs (Dynamo's vLLM
 * runtime image is built for CUDA).  Refused unless --lossy: what the pods
 * cannot express (export_k8s.c: int4 without --checkpoint, stages with
 * different TP sizes, a model without a Hugging Face repository), cascades,
 * cross-replica hops, per-class ingress, weights among a model's groups
 * that are not proportional to their replicas (Dynamo's router spreads a
 * model's requests over its workers itself), several prefill or decode
 * groups of one model (the router pairs prefill and decode workers itself:
 * the plan's KV routes are not kept), and a decode group without prefill
 * groups or prefill groups without a decode group.  Refused even with
 * --lossy: a split over models where a frontend Service's name would pass
 * 63 characters.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "export/yaml.h"

/* ---- what Dynamo cannot express ---- */

/* Replicas that span nodes, and AMD GPUs: refused even with --lossy. */
static int worker_limits(const hx_kgroup *k, hx_err *err)
{
	char gn[64];

	hx_yaml_printable(gn, sizeof(gn), k->g->name);
	if (k->npods > 1)
		return hx_errf(
		    err, HX_EINPUT,
		    "group \"%s\": a replica spans %d nodes, and the dynamo export writes single-node workers (Dynamo's multinode launch is not written)",
		    gn, k->npods);
	if (strcmp(k->pods[0].gpu->vendor, "amd") == 0)
		return hx_errf(
		    err, HX_EINPUT,
		    "group \"%s\": AMD GPUs, and Dynamo's vLLM runtime image is built for CUDA",
		    gn);
	return 0;
}

/* Model M's groups: their kinds, and whether the plan's ingress weights
 * survive Dynamo's router (proportional to the groups' replicas). */
static int model_limits(const hx_plan *p, const hx_export_opts *o, const hx_kgroup *kg,
			const hx_model *m, const double *weight, hx_export_out *out,
			hx_err *err)
{
	int npre = 0, ndec = 0, rc = 0;
	double lo = 0, hi = 0;

	for (int g = 0; g < p->ngroups; g++) {
		double per;
		if (kg[g].m != m)
			continue;
		npre += p->groups[g].role == HX_ROLE_PREFILL;
		ndec += p->groups[g].role == HX_ROLE_DECODE;
		if (!(weight[g] > 0))
			continue;
		per = weight[g] / (p->groups[g].nreplicas > 0 ? p->groups[g].nreplicas : 1);
		if (lo == 0 || per < lo)
			lo = per;
		if (per > hi)
			hi = per;
	}
	if (hi > lo * 1.01 + 1e-12)
		rc = hx_yaml_lose(
		    o, out, err,
		    "model \"%s\": the plan's ingress weights per replica range from %.4g to %.4g, and Dynamo's router spreads a model's requests over its workers itself",
		    m->name, lo, hi);
	if (!rc && (npre > 1 || ndec > 1))
		rc = hx_yaml_lose(
		    o, out, err,
		    "model \"%s\": %d prefill and %d decode groups, and Dynamo's router pairs prefill and decode workers itself: the plan's KV routes are not kept",
		    m->name, npre, ndec);
	if (!rc && (npre > 0) != (ndec > 0))
		rc = hx_yaml_lose(
		    o, out, err,
		    "model \"%s\": %s, and Dynamo's disaggregated serving needs both: the workers are written as they are",
		    m->name,
		    npre ? "prefill groups without a decode group"
			 : "decode groups without a prefill group");
	return rc;
}

/* Ingress per group (summed over classes) into WEIGHT, and into *MODELS
 * whether it splits over models (then the LiteLLM router splits it);
 * cascades, hops and classes refused or noted. */
static int plan_limits(const hx_plan *p, const hx_export_opts *o, const hx_kgroup *kg,
		       double *weight, int *models, hx_export_out *out, hx_err *err)
{
	const hx_model *first = NULL;
	int rc = 0;

	if ((rc = hx_yaml_lose_steps(p, o, out, err)))
		return rc;
	for (int i = 0; i < p->ningress; i++) {
		int g = hx_plan_group_index(p, p->ingress[i].to);
		if (g >= 0 && p->ingress[i].weight > 0)
			weight[g] += p->ingress[i].weight;
	}
	if ((rc = hx_yaml_lose_classes(p, o, "Dynamo's frontend", out, err)))
		return rc;
	for (int g = 0; g < p->ngroups; g++)
		if (weight[g] > 0) {
			if (!first)
				first = kg[g].m;
			else if (kg[g].m != first)
				*models = 1;
		}
	return 0;
}

/* ---- the objects ---- */

static const char *image(const hx_export_opts *o)
{
	return o->image ? o->image : HX_EXPORT_IMAGE_DYNAMO;
}

static void frontend(hx_yw *w, const hx_export_opts *o)
{
	hx_yw_item(w);
	hx_yw_str(w, "name", "Frontend");
	hx_yw_str(w, "type", "frontend");
	hx_yw_int(w, "replicas", 1);
	hx_yw_map(w, "podTemplate");
	hx_yw_map(w, "spec");
	hx_yw_map(w, "containers");
	hx_yw_item(w);
	hx_yw_str(w, "name", "main");
	hx_yw_str(w, "image", image(o));
	hx_yw_map(w, "env");
	hx_k8s_hf_token(w);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w);
}

static void arg_int(hx_yw *w, const char *flag, int n)
{
	char s[24];

	snprintf(s, sizeof(s), "%d", n);
	hx_yw_item_str(w, flag);
	hx_yw_item_str(w, s);
}

/* The arguments of `python3 -m dynamo.vllm` for K: the model, vLLM's engine
 * arguments, and the disaggregation mode and connector of its role. */
static void worker_args(hx_yw *w, const hx_kgroup *k)
{
	const char *prec[4];
	int n;

	hx_yw_map(w, "args");
	hx_yw_item_str(w, "--model");
	hx_k8s_str_nodollar(w, NULL, k->repo);
	arg_int(w, "--tensor-parallel-size", k->tp);
	if (k->pp > 1)
		arg_int(w, "--pipeline-parallel-size", k->pp);
	if (k->m->a.max_context > 0)
		arg_int(w, "--max-model-len", hx_export_max_model_len(k->plan, k->g));
	n = hx_export_precision_args(HX_ENGINE_VLLM, k->g->wdt, k->g->kvdt, prec);
	for (int i = 0; i < n; i++)
		hx_yw_item_str(w, prec[i]);
	if (k->g->role == HX_ROLE_PREFILL) {
		hx_yw_item_str(w, "--disaggregation-mode");
		hx_yw_item_str(w, "prefill");
		hx_yw_item_str(w, "--kv-transfer-config");
		hx_yw_item_str(w,
			       "{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}");
	} else if (k->g->role == HX_ROLE_DECODE) {
		hx_yw_item_str(w, "--disaggregation-mode");
		hx_yw_item_str(w, "decode");
	}
	hx_yw_end(w);
}

static void worker_env(hx_yw *w, const hx_kgroup *k)
{
	hx_yw_map(w, "env");
	hx_k8s_pp_env(w, k);
	hx_k8s_env(w, "HF_HOME", HX_K8S_CACHE "/huggingface");
	hx_k8s_hf_token(w);
	hx_yw_end(w);
}

static void worker_pod(hx_yw *w, const hx_kgroup *k)
{
	hx_yw_map(w, "podTemplate");
	hx_yw_map(w, "metadata");
	hx_k8s_labels_placement(w, k);
	hx_yw_end(w);
	hx_yw_map(w, "spec");
	hx_k8s_pin(w, k);
	hx_yw_map(w, "containers");
	hx_yw_item(w);
	hx_yw_str(w, "name", "main");
	hx_yw_str(w, "image", image(k->o));
	hx_yw_map(w, "command");
	hx_yw_item_str(w, "python3");
	hx_yw_item_str(w, "-m");
	hx_yw_item_str(w, "dynamo.vllm");
	hx_yw_end(w);
	worker_args(w, k);
	worker_env(w, k);
	hx_k8s_resources(w, k);
	hx_yw_map(w, "volumeMounts");
	hx_yw_item(w);
	hx_yw_str(w, "name", "model-cache");
	hx_yw_str(w, "mountPath", HX_K8S_CACHE);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w); /* the container */
	hx_yw_end(w); /* containers */
	hx_yw_map(w, "volumes");
	hx_k8s_cache_volume(w, k);
	hx_yw_end(w);
	hx_yw_end(w); /* spec */
	hx_yw_end(w); /* podTemplate */
}

/* Group GI's component: named by its kind, -N when model M has several. */
static void worker(hx_yw *w, const hx_plan *p, const hx_kgroup *kg, int gi)
{
	const hx_kgroup *k = &kg[gi];
	int role = k->g->role, nth = 0, count = 0;
	char name[64];

	for (int g = 0; g < p->ngroups; g++)
		if (kg[g].m == k->m &&
		    (p->groups[g].role == HX_ROLE_PREFILL) == (role == HX_ROLE_PREFILL)) {
			count++;
			if (g <= gi)
				nth++;
		}
	snprintf(name, sizeof(name), "%s",
		 role == HX_ROLE_PREFILL ? "VllmPrefillWorker" : "VllmDecodeWorker");
	if (count > 1)
		snprintf(name + strlen(name), sizeof(name) - strlen(name), "-%d", nth);
	hx_yw_item(w);
	hx_yw_str(w, "name", name);
	hx_yw_str(w, "type",
		  role == HX_ROLE_PREFILL  ? "prefill"
		  : role == HX_ROLE_DECODE ? "decode"
					   : "worker");
	hx_yw_int(w, "replicas", k->g->nreplicas);
	worker_pod(w, k);
	hx_yw_end(w);
}

/* NAME (64 bytes): the DynamoGraphDeployment of K's model. */
static void graph_name(char *name, const hx_kgroup *k)
{
	snprintf(name, 64, "hexplan-%.52s", k->model);
}

/* The DynamoGraphDeployment of the model of group FIRST. */
static void graph(hx_yw *w, const hx_plan *p, const hx_export_opts *o, const hx_kgroup *kg,
		  int first)
{
	char name[64];

	graph_name(name, &kg[first]);
	hx_yw_doc(w);
	hx_yw_str(w, "apiVersion", "nvidia.com/v1beta1");
	hx_yw_str(w, "kind", "DynamoGraphDeployment");
	hx_yw_map(w, "metadata");
	hx_yw_str(w, "name", name);
	hx_yw_map(w, "labels");
	hx_yw_str(w, "app.kubernetes.io/part-of", "hexplan");
	hx_yw_str(w, "hexplan.dev/model", kg[first].model);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_map(w, "spec");
	hx_yw_map(w, "components");
	frontend(w, o);
	for (int g = first; g < p->ngroups; g++)
		if (kg[g].m == kg[first].m)
			worker(w, p, kg, g);
	hx_yw_end(w);
	hx_yw_end(w);
}

static int write_graphs(const hx_plan *p, const hx_export_opts *o, const hx_kgroup *kg,
			const double *weight, hx_yw *w, hx_export_out *out, hx_err *err)
{
	int rc;

	for (int g = 0; g < p->ngroups; g++) {
		int seen = 0;
		for (int h = 0; h < g && !seen; h++)
			seen = kg[h].m == kg[g].m;
		if (!seen && (rc = model_limits(p, o, kg, kg[g].m, weight, out, err)))
			return rc;
	}
	for (int g = 0; g < p->ngroups; g++) {
		int seen = 0;
		for (int h = 0; h < g && !seen; h++)
			seen = kg[h].m == kg[g].m;
		if (!seen)
			graph(w, p, o, kg, g);
	}
	return 0;
}

/* The LiteLLM router of a plan whose ingress splits over models: per model
 * that takes requests, one deployment sent to its graph's frontend, the
 * Service the operator names GRAPH-frontend (GetDCDResourceName: the graph's
 * name, "-", the component's name in lower case; NormalizeKubeResourceName
 * only lowers it and turns dots into dashes, so a name past 63 characters
 * is not shortened but rejected) on port 8000 (GenerateComponentService
 * gives a frontend DynamoServicePort; Dynamo's
 * deploy/operator/internal/dynamo/graph.go and internal/consts), weighted
 * by the model's share of the plan's ingress.  The frontend serves
 * the model under the name its workers register, --served-model-name or
 * else --model (components/src/dynamo/vllm/main.py: "if not
 * config.served_model_name: ... = config.model"), the repository that
 * worker_args gives, which is LiteLLM's model.  HX_EINPUT (ERR) when a
 * Service name would pass Kubernetes' 63 characters. */
static int router(hx_yw *w, const hx_plan *p, const hx_kgroup *kg, const double *weight,
		  hx_err *err)
{
	hx_litellm_dep *dep = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*dep));
	int n = 0, rc = 0;

	for (int g = 0; g < p->ngroups; g++) {
		char name[64];
		int seen = 0;
		for (int h = 0; h < g && !seen; h++)
			seen = kg[h].m == kg[g].m;
		if (seen)
			continue;
		graph_name(name, &kg[g]);
		dep[n].repo = kg[g].repo;
		for (int h = g; h < p->ngroups; h++)
			if (kg[h].m == kg[g].m && weight[h] > 0)
				dep[n].weight += weight[h];
		if (dep[n].weight > 0 && strlen(name) + strlen("-frontend") > 63) {
			rc = hx_errf(
			    err, HX_EINPUT,
			    "model \"%s\": the LiteLLM router that splits the plan's requests over its models sends them to the frontend Service %s-frontend, whose name passes Kubernetes' 63 characters",
			    kg[g].m->name, name);
			goto done;
		}
		snprintf(dep[n].api_base, sizeof(dep[n].api_base), "http://%s-frontend:8000/v1",
			 name);
		n++;
	}
	hx_k8s_litellm(w, "dynamo", dep, n);
done:
	free(dep);
	return rc;
}

int hx_export_dynamo(const hx_plan *p, const hx_export_opts *o, hx_export_out *out, hx_err *err)
{
	char(*key)[56] = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*key));
	hx_kgroup *kg = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*kg));
	double *weight = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*weight));
	hx_yw w = {{0}, 0, 0};
	int rc = 0, n = 0, models = 0;

	hx_k8s_keys(p, key);
	for (n = 0; n < p->ngroups; n++)
		if ((rc = hx_kgroup_init(&kg[n], p, o, n, key[n], out, err)) ||
		    (rc = worker_limits(&kg[n], err))) {
			n++;
			goto done;
		}
	if ((rc = plan_limits(p, o, kg, weight, &models, out, err)))
		goto done;
	if (o->image)
		hx_buf_printf(&w.b,
			      "# Written by hexplan export --to dynamo: image %s (--image).\n",
			      o->image);
	else
		hx_buf_printf(
		    &w.b,
		    "# Written by hexplan export --to dynamo for NVIDIA Dynamo %s: image\n"
		    "# %s (default; --image replaces it).\n",
		    HX_EXPORT_DYNAMO_VERSION, HX_EXPORT_IMAGE_DYNAMO);
	if ((rc = write_graphs(p, o, kg, weight, &w, out, err)) ||
	    (models && (rc = router(&w, p, kg, weight, err))))
		goto done;
	hx_export_add(out, "hexplan.yaml", w.b.s);
	w.b.s = NULL;
done:
	for (int g = 0; g < n; g++)
		hx_kgroup_release(&kg[g]);
	hx_buf_release(&w.b);
	free(weight);
	free(kg);
	free(key);
	return rc;
}
