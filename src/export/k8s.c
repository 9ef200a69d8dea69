/*
 * export_k8s: the plan as Kubernetes manifests (DESIGN §9), one
 * multi-document YAML stream, hexplan.yaml, for `kubectl apply -f`.
 *
 * Per replica group: a Deployment (replicas = the group's) when each replica
 * sits on one node, else a LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) with
 * one pod per node of a replica — the leader runs the Ray head and `vllm
 * serve`, the workers join its Ray cluster; and a Service (port 8000) on the
 * pods that serve.  Pods are pinned to their GPU type with a nodeSelector on
 * nvidia.com/gpu.product (amd.com/gpu.product-name for AMD GPUs) and ask
 * for nvidia.com/gpu (amd.com/gpu, with HIP_VISIBLE_DEVICES) limits; they
 * mount a memory-backed /dev/shm and a model cache (HF_HOME; the claim
 * --model-cache names, else scratch), read HF_TOKEN from the Secret
 * hf-token when there is one, request CPU and memory for loading their
 * share of the weights, run a pinned image (--image replaces it), and probe
 * GET /health: started within a budget that grows with the checkpoint's
 * size, then alive and ready.  Deployments recreate their pods on updates
 * (the plan leaves no GPUs to surge into); a PodDisruptionBudget per group
 * lets drains take one pod of it at a time.
 * Disaggregated groups carry llm-d's role label (llm-d.ai/role) and a NIXL
 * --kv-transfer-config.  One Gateway API HTTPRoute, attached to the Gateway
 * "hexplan-gateway", splits requests over the Services of the groups that
 * take ingress by the plan's weights, scaled to integers summing to
 * 1,000,000 (largest remainder).  The plan's node-level placement is kept as
 * an annotation (hexplan.dev/placement); pods are pinned to GPU types, not
 * nodes.
 *
 * Expert-parallel groups run vLLM's EP flags (export.h); a replica over
 * several nodes with attention ranks is a LeaderWorkerSet without Ray,
 * each pod starting its share of vLLM's data-parallel ranks (refused even
 * with --lossy when the pods cannot share them alike).
 * Not expressible, so refused unless --lossy: stages with different TP
 * sizes (vLLM runs one), worker pods of one replica that differ in GPU type
 * or count (a LeaderWorkerSet has one worker template: the leader takes
 * stage 0, every worker the same shape), NVIDIA and AMD GPUs in one replica,
 * int4 weights (a pre-quantized checkpoint is needed), a model without a
 * Hugging Face repository, a GPU without a valid product label, per-class
 * ingress routing (an HTTPRoute does not see a request's class), a split
 * of requests between models (each pod serves its own model: the lossy
 * form has one rule per model on the header the gateway's body-based
 * router sets from the request's model), more than 16 ingress groups of a
 * model (one rule holds 16 backends), cascades, cross-replica hops, and disaggregation's KV
 * routes (pairing prefill and decode pods is a P/D-aware router's job).
 */
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "export/yaml.h"
#include "model/cost.h"

#define MAX_BACKENDS HX_K8S_MAX_RULES
/* vLLM's data-parallel RPC port on a LeaderWorkerSet's leader (its pods
 * have their own addresses: one port serves every replica) */
#define HX_K8S_DP_RPC_PORT 29500

/* ---- names ---- */

void hx_k8s_keys(const hx_plan *p, char (*key)[56])
{
	for (int g = 0; g < p->ngroups; g++) {
		char base[64];
		size_t n;
		int taken = 1;

		/* at most 40 characters: "hexplan-" and a LeaderWorkerSet's pod
		 * suffixes still fit in 63 */
		hx_dns_label(base, sizeof(base), p->groups[g].name);
		base[40] = '\0';
		n = strlen(base);
		while (n > 1 && base[n - 1] == '-')
			base[--n] = '\0';
		snprintf(key[g], 56, "%.40s", base);
		for (int k = 2; taken; k++) {
			taken = 0;
			for (int h = 0; h < g && !taken; h++)
				taken = strcmp(key[h], key[g]) == 0;
			if (taken)
				snprintf(key[g], 56, "%.40s-%d", base, k);
		}
	}
}

int hx_k8s_replica_group(const hx_plan *p, const char *id)
{
	size_t n = strcspn(id, "/");

	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++) {
			const char *rid = p->groups[g].replicas[r].id;
			if (strlen(rid) == n && strncmp(rid, id, n) == 0)
				return g;
		}
	return -1;
}

/* A valid label value: at most 63 characters, alphanumerics at both ends,
 * '-', '_' and '.' between. */
static int label_value_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]) ||
	    !isalnum((unsigned char)s[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
			return 0;
	return 1;
}

static int is_amd(const hx_gpu *gpu)
{
	return strcmp(gpu->vendor, "amd") == 0;
}

static const char *product_key(const hx_gpu *gpu)
{
	return is_amd(gpu) ? "amd.com/gpu.product-name" : "nvidia.com/gpu.product";
}

/* ---- a group's pods ---- */

/* The pods of replica R: one per node, in the order the stages first use
 * them.  PODS has room for every GPU of R. */
static int layout(const hx_plan *p, const hx_export_opts *o, const hx_plan_group *g,
		  const hx_plan_replica *r, hx_kpod *pods, int *npods, hx_err *err)
{
	const char **nodes;
	int *last, n = 0, total = 0;

	for (int s = 0; s < g->nstages; s++)
		total += r->ngpus[s];
	nodes = hx_xcalloc((size_t)total + 1, sizeof(*nodes));
	last = hx_xcalloc((size_t)total + 1, sizeof(*last));
	for (int s = 0; s < g->nstages; s++)
		for (int i = 0; i < r->ngpus[s]; i++) {
			const char *node = r->gpus[s][i].node;
			int j = 0;
			while (j < n && strcmp(nodes[j], node) != 0)
				j++;
			if (j == n) {
				const hx_gpu *gpu = hx_export_gpu(p, o, node, g->stage[s].gpu);
				if (!gpu) {
					char gn[64], gpu_name[48];
					hx_yaml_printable(gn, sizeof(gn), g->name);
					hx_yaml_printable(gpu_name, sizeof(gpu_name),
							  g->stage[s].gpu);
					free(nodes);
					free(last);
					return hx_errf(err, HX_EINPUT,
						       "group \"%s\": no profile of GPU \"%s\"",
						       gn, gpu_name);
				}
				nodes[n] = node;
				pods[n].gpu = gpu;
				pods[n].ngpus = 0;
				pods[n].stage0 = s;
				pods[n].nstages = 0;
				last[n] = -1;
				n++;
			}
			pods[j].ngpus++;
			if (last[j] != s) {
				pods[j].nstages++;
				last[j] = s;
			}
		}
	free(nodes);
	free(last);
	*npods = n;
	return 0;
}

static int same_pod(const hx_kpod *a, const hx_kpod *b)
{
	return a->ngpus == b->ngpus && strcmp(a->gpu->product, b->gpu->product) == 0 &&
	       strcmp(a->gpu->vendor, b->gpu->vendor) == 0;
}

static char *placement_text(const hx_plan_group *g)
{
	hx_buf b = {0};

	for (int r = 0; r < g->nreplicas; r++) {
		const hx_plan_replica *rp = &g->replicas[r];
		hx_buf_printf(&b, "%s%s:", r ? "; " : "", rp->id);
		for (int s = 0; s < g->nstages; s++) {
			hx_buf_printf(&b, "%s", s ? " |" : "");
			for (int i = 0; i < rp->ngpus[s]; i++)
				hx_buf_printf(&b, " %s:%d", rp->gpus[s][i].node,
					      rp->gpus[s][i].index);
		}
	}
	if (!b.s)
		hx_buf_printf(&b, "%s", "");
	return b.s;
}

/* K's pods: the first replica's layout over its nodes (every replica gets it,
 * noted when --lossy lets one differ), or without a placement one pod with the
 * first stage's GPU.  Returns 0 or the export's error (ERR). */
static int kgroup_pods(hx_kgroup *k, const hx_plan *p, const hx_export_opts *o, const char *gn,
		       hx_export_out *out, hx_err *err)
{
	const hx_plan_group *g = k->g;
	int rc, total = 0;

	for (int s = 0; s < g->nstages; s++)
		total += g->stage[s].tp;
	for (int r = 0; r < g->nreplicas; r++) {
		int t = 0;
		for (int s = 0; s < g->nstages; s++)
			t += g->replicas[r].ngpus[s];
		total = t > total ? t : total;
	}
	k->pods = hx_xcalloc((size_t)total + 1, sizeof(*k->pods));
	if (g->nreplicas == 0) {
		/* no placement: one pod with the first stage's GPU */
		k->npods = 1;
		k->pods[0].gpu = hx_plan_gpu(p, g->stage[0].gpu);
		k->pods[0].ngpus = total;
		k->pods[0].nstages = g->nstages;
		if (!k->pods[0].gpu) {
			char gpu[48];
			hx_yaml_printable(gpu, sizeof(gpu), g->stage[0].gpu);
			return hx_errf(err, HX_EINPUT, "group \"%s\": no profile of GPU \"%s\"",
				       gn, gpu);
		}
	} else {
		hx_kpod *other = hx_xcalloc((size_t)total + 1, sizeof(*other));
		if ((rc = layout(p, o, g, &g->replicas[0], k->pods, &k->npods, err))) {
			free(other);
			return rc;
		}
		for (int r = 1; r < g->nreplicas; r++) {
			int n = 0, same;
			if ((rc = layout(p, o, g, &g->replicas[r], other, &n, err))) {
				free(other);
				return rc;
			}
			same = n == k->npods;
			for (int j = 0; same && j < n; j++)
				same = same_pod(&other[j], &k->pods[j]) &&
				       other[j].stage0 == k->pods[j].stage0 &&
				       other[j].nstages == k->pods[j].nstages;
			if (!same) {
				char rid[64];
				hx_yaml_printable(rid, sizeof(rid), g->replicas[r].id);
				rc = hx_yaml_lose(
				    o, out, err,
				    "group \"%s\": replica \"%s\" is laid out over its nodes unlike the first, and one pod template serves them all: every replica follows the first",
				    gn, rid);
				if (rc) {
					free(other);
					return rc;
				}
				break;
			}
		}
		free(other);
	}
	return 0;
}

/* What K's pods cannot pin or share: mixed vendors, GPUs without a product
 * label, worker pods that differ (one LeaderWorkerSet template describes
 * them).  Returns 0 or the export's error (ERR). */
static int kgroup_pins(hx_kgroup *k, const hx_export_opts *o, const char *gn,
		       hx_export_out *out, hx_err *err)
{
	int rc;

	/* one vendor per replica; every GPU type with a label to pin it */
	for (int j = 1; j < k->npods; j++)
		if (strcmp(k->pods[j].gpu->vendor, k->pods[0].gpu->vendor) != 0) {
			if ((rc = hx_yaml_lose(
				 o, out, err,
				 "group \"%s\" mixes %s and %s GPUs in one replica, which vLLM cannot run",
				 gn, k->pods[0].gpu->vendor, k->pods[j].gpu->vendor)))
				return rc;
			break;
		}
	for (int j = 0; j < k->npods; j++) {
		int seen = 0;
		for (int i = 0; i < j && !seen; i++)
			seen = k->pods[i].gpu == k->pods[j].gpu;
		if (!seen && !label_value_ok(k->pods[j].gpu->product) &&
		    (rc = hx_yaml_lose(
			 o, out, err,
			 "GPU \"%s\" has no valid Kubernetes product label (\"%s\"): the pods of group \"%s\" are not pinned to it",
			 k->pods[j].gpu->name, k->pods[j].gpu->product, gn)))
			return rc;
	}

	/* a LeaderWorkerSet: the leader is pod 0, every worker pod the same */
	if (k->npods > 1) {
		int differ = 0;
		k->worker_ngpus = k->pods[1].ngpus;
		k->worker_products[k->worker_nproducts++] = k->pods[1].gpu->product;
		for (int j = 2; j < k->npods; j++) {
			int seen = 0;
			if (!same_pod(&k->pods[j], &k->pods[1]))
				differ = j;
			if (k->pods[j].ngpus > k->worker_ngpus)
				k->worker_ngpus = k->pods[j].ngpus;
			for (int i = 0; i < k->worker_nproducts && !seen; i++)
				seen =
				    strcmp(k->worker_products[i], k->pods[j].gpu->product) == 0;
			if (!seen &&
			    k->worker_nproducts < (int)HX_ARRAY_LEN(k->worker_products))
				k->worker_products[k->worker_nproducts++] =
				    k->pods[j].gpu->product;
		}
		if (differ) {
			rc = hx_yaml_lose(
			    o, out, err,
			    "group \"%s\": its worker pods need %d x %s and %d x %s, and one worker template describes them all: workers may land on any of their GPU types and ask for %d GPUs",
			    gn, k->pods[1].ngpus, k->pods[1].gpu->name, k->pods[differ].ngpus,
			    k->pods[differ].gpu->name, k->worker_ngpus);
			if (rc)
				return rc;
		} else {
			k->worker_nproducts = 1;
		}
	}
	return 0;
}

int hx_kgroup_init(hx_kgroup *k, const hx_plan *p, const hx_export_opts *o, int gi,
		   const char *key, hx_export_out *out, hx_err *err)
{
	const hx_plan_group *g = &p->groups[gi];
	char gn[64];
	int rc;

	memset(k, 0, sizeof(*k));
	k->plan = p;
	k->o = o;
	k->g = g;
	hx_yaml_printable(gn, sizeof(gn), g->name);
	snprintf(k->key, sizeof(k->key), "%.52s", key);
	snprintf(k->name, sizeof(k->name), "hexplan-%.52s", key);
	hx_dns_label(k->model, sizeof(k->model), g->model);
	if (g->nstages < 1)
		return hx_errf(err, HX_EINPUT, "group \"%s\" has no stages", gn);
	if (!(k->m = hx_plan_model(p, g->model))) {
		char mn[64];
		hx_yaml_printable(mn, sizeof(mn), g->model);
		return hx_errf(err, HX_EINPUT, "group \"%s\": the plan has no model \"%s\"", gn,
			       mn);
	}
	k->repo = hx_export_repo(p, o, k->m, g->wdt);
	if (!k->m->hf_repo[0] &&
	    (rc = hx_yaml_lose(
		 o, out, err,
		 "model \"%s\" has no Hugging Face repository: the pods serve \"%s\"",
		 k->m->name, k->m->name)))
		return rc;
	k->tp = g->stage[0].tp;
	for (int s2 = 1; s2 < g->nstages; s2++) /* --lossy: the smallest fits every pod */
		if (g->stage[s2].tp < k->tp)
			k->tp = g->stage[s2].tp;
	k->pp = g->nstages;
	for (int s = 1; s < g->nstages; s++)
		if (g->stage[s].tp != k->tp) {
			if ((rc = hx_yaml_lose(
				 o, out, err,
				 "group \"%s\": its stages run TP %d and %d, and vLLM runs one TP size: every stage gets %d",
				 gn, k->tp, g->stage[s].tp, k->tp)))
				return rc;
			break;
		}
	{
		char msg[400];
		if (hx_export_int4_unmapped(p, o, g, gn, msg, sizeof(msg)) &&
		    (rc = hx_yaml_lose(o, out, err, "%s", msg)))
			return rc;
	}

	if ((rc = kgroup_pods(k, p, o, gn, out, err)) || (rc = kgroup_pins(k, o, gn, out, err)))
		return rc;
	/* Attention ranks over several pods: each pod starts its own whole
	 * ranks, as export --to launch does node by node (dp_pods), so the
	 * pods hold the same GPUs and a rank sits in one.  Refused even with
	 * --lossy (another plan). */
	if (hx_export_ep_shape(g, &k->ep) && k->ep.dp > 1 && k->npods > 1) {
		int same = 1;
		for (int j = 1; j < k->npods; j++)
			same &= k->pods[j].ngpus == k->pods[0].ngpus;
		if (!same || k->ep.dp % k->npods || k->pods[0].ngpus % k->ep.atp)
			return hx_errf(
			    err, HX_EINPUT,
			    "group \"%s\" runs %d attention ranks of TP %d over %d nodes that do not each hold whole ranks alike: every pod of a LeaderWorkerSet starts the same number of vLLM's data-parallel ranks (--data-parallel-size-local)",
			    gn, k->ep.dp, k->ep.atp, k->npods);
	}
	k->placement = placement_text(g);
	return 0;
}

void hx_kgroup_release(hx_kgroup *k)
{
	free(k->pods);
	free(k->placement);
	memset(k, 0, sizeof(*k));
}

void hx_k8s_labels(hx_yw *w, const hx_kgroup *k)
{
	hx_yw_str(w, "app.kubernetes.io/name", "vllm");
	hx_yw_str(w, "app.kubernetes.io/part-of", "hexplan");
	hx_yw_str(w, "hexplan.dev/group", k->key);
	hx_yw_str(w, "hexplan.dev/model", k->model);
	if (k->g->role != HX_ROLE_AGGREGATED)
		hx_yw_str(w, "llm-d.ai/role", hx_role_name(k->g->role));
}

/* ---- the container ---- */

typedef struct argv_t {
	char **v;
	int n;
} argv_t;

static void arg(argv_t *a, const char *s)
{
	a->v = hx_xrealloc(a->v, (size_t)(a->n + 1) * sizeof(*a->v));
	a->v[a->n++] = hx_xstrdup(s);
}

static void argi(argv_t *a, int n)
{
	char s[24];
	snprintf(s, sizeof(s), "%d", n);
	arg(a, s);
}

static void argv_free(argv_t *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof(*a));
}

/* Whether K's vLLM takes DeepEP's all-to-all (export.h: EP over several
 * nodes of NVIDIA GPUs): 1 as --all2all-backend, -1 as the environment
 * variable (before HX_EXPORT_VLLM_ALL2ALL_FLAG), 0 not. */
static int all2all_flag(const hx_kgroup *k)
{
	if (k->ep.ep <= 1 || k->npods <= 1 || is_amd(k->pods[0].gpu))
		return 0;
	return hx_export_version_cmp(hx_export_engine_version(k->o, HX_EXPORT_VLLM_VERSION),
				     HX_EXPORT_VLLM_ALL2ALL_FLAG) >= 0
		   ? 1
		   : -1;
}

/* vLLM's expert-parallel flags for K (export.h): EP over TP x DP, the
 * DP ranks (over several pods dp_pods adds each pod's), EPLB's redundant
 * experts. */
static void vllm_ep_flags(argv_t *a, const hx_kgroup *k)
{
	if (k->ep.ep > 1)
		arg(a, "--enable-expert-parallel");
	if (all2all_flag(k) > 0) {
		arg(a, "--all2all-backend");
		arg(a, hx_export_vllm_all2all(k->g->role));
		/* the cost model's two micro-batches (export.h) */
		if (k->ep.dp > 1 && hx_export_version_cmp(
					hx_export_engine_version(k->o, HX_EXPORT_VLLM_VERSION),
					HX_EXPORT_VLLM_DBO) >= 0)
			arg(a, "--enable-dbo");
	}
	if (k->ep.dp > 1) {
		arg(a, "--data-parallel-size");
		argi(a, k->ep.dp);
	}
	if (k->ep.redundant > 0) {
		char json[64];
		/* the release the pod runs: on AMD GPUs the ROCm image's (vLLM
		 * 0.10.1) unless --image names another */
		int rocm = is_amd(k->pods[0].gpu) && !(k->o && k->o->image);
		const char *ver = rocm ? HX_EXPORT_VLLM_OLDEST
				       : hx_export_engine_version(k->o, HX_EXPORT_VLLM_VERSION);
		arg(a, "--enable-eplb");
		if (hx_export_version_cmp(ver, HX_EXPORT_VLLM_EPLB_CONFIG) >= 0) {
			snprintf(json, sizeof(json), "{\"num_redundant_experts\":%d}",
				 k->ep.redundant);
			arg(a, "--eplb-config");
			arg(a, json);
		} else {
			arg(a, "--num-redundant-experts");
			argi(a, k->ep.redundant);
		}
	}
}

/* The options of `vllm serve` for K after the model (TP unless NOTP: KServe's
 * presets add it from the parallelism). */
static void vllm_flags(argv_t *a, const hx_kgroup *k, int notp)
{
	const hx_plan_group *g = k->g;

	if (!notp) {
		arg(a, "--tensor-parallel-size");
		argi(a, k->ep.world ? k->ep.atp : k->tp);
	}
	if (k->ep.world)
		vllm_ep_flags(a, k);
	if (!notp || k->pp > 1) {
		arg(a, "--pipeline-parallel-size");
		argi(a, k->pp);
	}
	if (k->m->a.max_context > 0) {
		arg(a, "--max-model-len");
		argi(a, hx_export_max_model_len(k->plan, k->g));
	}
	{
		const char *prec[4];
		int n = hx_export_precision_args(HX_ENGINE_VLLM, g->wdt, g->kvdt, prec);
		for (int i = 0; i < n; i++)
			arg(a, prec[i]);
	}
	if (g->role != HX_ROLE_AGGREGATED) {
		/* the roles NIXL's connector names, as the launch commands give
		 * them (vLLM is retiring kv_both for it) */
		arg(a, "--kv-transfer-config");
		arg(a,
		    g->role == HX_ROLE_PREFILL
			? "{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_producer\"}"
			: "{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_consumer\"}");
	}
}

/* `vllm serve` and its options for K (the port unless PORT is 0). */
static void vllm_serve(argv_t *a, const hx_kgroup *k, int port, int ray)
{
	arg(a, "vllm");
	arg(a, "serve");
	arg(a, k->repo);
	if (port) {
		arg(a, "--port");
		argi(a, port);
	}
	vllm_flags(a, k, 0);
	if (ray) {
		arg(a, "--distributed-executor-backend");
		arg(a, "ray");
	}
}

/* S needs no quotes in a shell command line. */
static int shell_plain(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("-_./:=,+@%", *s))
			return 0;
	return 1;
}

/* S as one word of a shell command line, appended to B. */
static void shell_word(hx_buf *b, const char *s)
{
	if (shell_plain(s)) {
		hx_buf_printf(b, "%s", s);
	} else {
		char *q = hx_shell_quote(s);
		hx_buf_printf(b, "%s", q);
		free(q);
	}
}

/* What pod KIND of a replica with attention ranks over several pods runs
 * (export.h): every pod `vllm serve` with its share of the ranks
 * (--data-parallel-size-local), all meeting at the leader's address
 * (LWS_LEADER_ADDRESS) on the RPC port; the leader serves HTTP, each
 * worker starts headless from its first rank (LWS_WORKER_INDEX, which the
 * LeaderWorkerSet sets in every container, times the ranks a pod). */
static void dp_pods(argv_t *a, const hx_kgroup *k, int kind)
{
	argv_t serve = {0};
	hx_buf sh = {0};
	int local = k->ep.dp / k->npods;

	vllm_serve(&serve, k, kind == HX_KPOD_WORKER ? 0 : hx_k8s_port(k), 0);
	hx_buf_printf(&sh, "exec");
	for (int i = 0; i < serve.n; i++) {
		hx_buf_printf(&sh, " ");
		shell_word(&sh, serve.v[i]);
	}
	hx_buf_printf(&sh,
		      " --data-parallel-size-local %d --data-parallel-address "
		      "\"$LWS_LEADER_ADDRESS\" --data-parallel-rpc-port %d",
		      local, HX_K8S_DP_RPC_PORT);
	if (kind == HX_KPOD_WORKER)
		hx_buf_printf(&sh,
			      " --data-parallel-start-rank \"$((LWS_WORKER_INDEX * %d))\" "
			      "--headless",
			      local);
	argv_free(&serve);
	arg(a, "sh");
	arg(a, "-c");
	arg(a, sh.s);
	hx_buf_release(&sh);
}

/* What the container of pod KIND runs. */
static void command(argv_t *a, const hx_kgroup *k, int kind)
{
	hx_buf sh = {0};
	argv_t serve = {0};

	if (kind == HX_KPOD_SINGLE) {
		vllm_serve(a, k, hx_k8s_port(k), 0);
		return;
	}
	if (k->ep.dp > 1) {
		dp_pods(a, k, kind);
		return;
	}
	if (kind == HX_KPOD_WORKER) {
		hx_buf_printf(&sh, "until ray start --address=\"$LWS_LEADER_ADDRESS:6379\" "
				   "--block; do sleep 5; done");
	} else {
		/* the Ray head waits for every node of the replica, then serves */
		vllm_serve(&serve, k, hx_k8s_port(k), 1);
		hx_buf_printf(&sh,
			      "ray start --head --port=6379 && "
			      "until python3 -c 'import ray, sys; ray.init(address=\"auto\", "
			      "logging_level=\"ERROR\"); "
			      "sys.exit(sum(n[\"Alive\"] for n in ray.nodes()) < %d)'; do "
			      "sleep 5; done && exec",
			      k->npods);
		for (int i = 0; i < serve.n; i++) {
			hx_buf_printf(&sh, " ");
			shell_word(&sh, serve.v[i]);
		}
		argv_free(&serve);
	}
	arg(a, "sh");
	arg(a, "-c");
	arg(a, sh.s);
	hx_buf_release(&sh);
}

/* The arguments KServe's preset command takes for K's single pod: it runs
 * `vllm serve /mnt/models` with its port, served name, TLS and TP and
 * appends these through `eval "... $@"`, so each is a shell word. */
static void preset_args(argv_t *a, const hx_kgroup *k)
{
	argv_t flags = {0};

	vllm_flags(&flags, k, 1);
	for (int i = 0; i < flags.n; i++) {
		hx_buf b = {0};
		shell_word(&b, flags.v[i]);
		arg(a, b.s);
		hx_buf_release(&b);
	}
	argv_free(&flags);
}

/* S with '$' doubled: Kubernetes expands $(VAR) in command and env values,
 * and "$$" is its escape for "$". */
void hx_k8s_str_nodollar(hx_yw *w, const char *key, const char *s)
{
	hx_buf b = {0};

	hx_buf_printf(&b, "%s", "");
	for (; *s; s++) {
		if (*s == '$')
			hx_buf_printf(&b, "$$");
		else
			hx_buf_printf(&b, "%c", *s);
	}
	if (key)
		hx_yw_str(w, key, b.s);
	else
		hx_yw_item_str(w, b.s);
	hx_buf_release(&b);
}

void hx_k8s_env(hx_yw *w, const char *name, const char *value)
{
	hx_yw_item(w);
	hx_yw_str(w, "name", name);
	hx_k8s_str_nodollar(w, "value", value);
	hx_yw_end(w);
}

/* An env entry NAME from a field or Secret: KIND is "fieldRef" or
 * "secretKeyRef". */
static void env_from(hx_yw *w, const char *name, const char *kind, const char *a, const char *b)
{
	hx_yw_item(w);
	hx_yw_str(w, "name", name);
	hx_yw_map(w, "valueFrom");
	hx_yw_map(w, kind);
	if (b) {
		hx_yw_str(w, "name", a);
		hx_yw_str(w, "key", b);
		hx_yw_raw(w, "optional", "true");
	} else {
		hx_yw_str(w, "fieldPath", a);
	}
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w);
}

/* The nodeSelector or node affinity that pins K's pod KIND to its GPUs. */
static void pod_pin(hx_yw *w, const hx_kgroup *k, int kind, const hx_kpod *pod)
{
	int pinnable = 0;

	for (int i = 0; kind == HX_KPOD_WORKER && i < k->worker_nproducts; i++)
		pinnable += label_value_ok(k->worker_products[i]);
	if (kind == HX_KPOD_WORKER && k->worker_nproducts > 1 && pinnable > 0) {
		/* lossy: the worker pods' GPU types, in any order */
		hx_yw_map(w, "affinity");
		hx_yw_map(w, "nodeAffinity");
		hx_yw_map(w, "requiredDuringSchedulingIgnoredDuringExecution");
		hx_yw_map(w, "nodeSelectorTerms");
		hx_yw_item(w);
		hx_yw_map(w, "matchExpressions");
		hx_yw_item(w);
		hx_yw_str(w, "key", product_key(pod->gpu));
		hx_yw_str(w, "operator", "In");
		hx_yw_map(w, "values");
		for (int i = 0; i < k->worker_nproducts; i++)
			if (label_value_ok(k->worker_products[i]))
				hx_yw_item_str(w, k->worker_products[i]);
		for (int i = 0; i < 8; i++)
			hx_yw_end(w);
	} else if ((kind != HX_KPOD_WORKER || k->worker_nproducts <= 1) &&
		   label_value_ok(pod->gpu->product)) {
		hx_yw_map(w, "nodeSelector");
		hx_yw_str(w, product_key(pod->gpu), pod->gpu->product);
		hx_yw_end(w);
	}
}

/* The environment of K's container in pod KIND with NGPUS. */
static void pod_env(hx_yw *w, const hx_kgroup *k, int ngpus, int amd, int managed)
{
	hx_yw_map(w, "env");
	hx_k8s_pp_env(w, k);
	if (amd) {
		hx_buf dev = {0};
		for (int i = 0; i < ngpus; i++)
			hx_buf_printf(&dev, "%s%d", i ? "," : "", i);
		hx_k8s_env(w, "HIP_VISIBLE_DEVICES", dev.s ? dev.s : "");
		hx_buf_release(&dev);
	}
	if (k->g->role != HX_ROLE_AGGREGATED)
		env_from(w, "VLLM_NIXL_SIDE_CHANNEL_HOST", "fieldRef", "status.podIP", NULL);
	if (all2all_flag(k) < 0)
		hx_k8s_env(w, "VLLM_ALL2ALL_BACKEND", hx_export_vllm_all2all(k->g->role));
	/* the model cache (KServe's presets keep their own under /models) */
	if (!managed)
		hx_k8s_env(w, "HF_HOME", HX_K8S_CACHE "/huggingface");
	hx_k8s_hf_token(w);
	hx_yw_end(w);
}

void hx_k8s_pp_env(hx_yw *w, const hx_kgroup *k)
{
	hx_buf part = {0};

	if (k->pp <= 1)
		return;
	for (int s = 0; s < k->g->nstages; s++)
		hx_buf_printf(&part, "%s%d", s ? "," : "",
			      k->g->stage[s].last - k->g->stage[s].first);
	hx_k8s_env(w, "VLLM_PP_LAYER_PARTITION", part.s);
	hx_buf_release(&part);
}

void hx_k8s_hf_token(hx_yw *w)
{
	/* gated models read the token from the Secret hf-token, when there is one */
	env_from(w, "HF_TOKEN", "secretKeyRef", "hf-token", "token");
}

/* The seconds a pod of K may take to start: downloading and loading its
 * weights (the checkpoint's bytes at 100 MB/s, a slow registry or volume)
 * after five minutes for the engine itself (CUDA graphs, Ray). */
static int startup_s(const hx_kgroup *k)
{
	hx_dtype dt = k->g->wdt == HX_DT_INT4 ? HX_DT_INT4 : HX_DT_BF16;
	double bytes = hx_model_weight_bytes(k->m, dt);

	return 300 + (int)ceil(bytes / 100e6);
}

static void probe_path(hx_yw *w, const char *key, const char *path, int port, int period,
		       int failures, int timeout)
{
	hx_yw_map(w, key);
	hx_yw_map(w, "httpGet");
	hx_yw_str(w, "path", path);
	hx_yw_int(w, "port", port);
	hx_yw_end(w);
	hx_yw_int(w, "periodSeconds", period);
	if (timeout)
		hx_yw_int(w, "timeoutSeconds", timeout);
	if (failures)
		hx_yw_int(w, "failureThreshold", failures);
	hx_yw_end(w);
}

static void probe(hx_yw *w, const char *key, int port, int period, int failures, int timeout)
{
	probe_path(w, key, "/health", port, period, failures, timeout);
}

/* The serving port and the probes of vLLM's /health: ready, started within
 * startup_s, alive after that. */
static void pod_probes(hx_yw *w, const hx_kgroup *k)
{
	hx_k8s_container_port(w, "http", hx_k8s_port(k));
	probe(w, "readinessProbe", hx_k8s_port(k), 10, 0, 0);
	probe(w, "startupProbe", hx_k8s_port(k), 10, (startup_s(k) + 9) / 10, 0);
	probe(w, "livenessProbe", hx_k8s_port(k), 10, 3, 5);
}

/* Requests and limits of a pod of K with NGPUS: the GPUs, and CPU and memory
 * for the engine's processes and its share of the weights on the way in. */
static void pod_resources(hx_yw *w, const hx_kgroup *k, int ngpus, int amd)
{
	int total = 0;
	double gib;
	char mem[32], cpu[16];

	for (int s = 0; s < k->g->nstages; s++)
		total += k->g->stage[s].tp;
	gib = hx_model_weight_bytes(k->m, k->g->wdt) / (1024.0 * 1024 * 1024) * ngpus /
	      (total > 0 ? total : 1);
	snprintf(mem, sizeof(mem), "%dGi", 16 + (int)ceil(gib));
	snprintf(cpu, sizeof(cpu), "%d", 4 * (ngpus > 0 ? ngpus : 1));
	hx_yw_map(w, "resources");
	hx_yw_map(w, "requests");
	hx_yw_str(w, "cpu", cpu);
	hx_yw_str(w, "memory", mem);
	hx_yw_end(w);
	hx_yw_map(w, "limits");
	hx_yw_int(w, amd ? "amd.com/gpu" : "nvidia.com/gpu", ngpus);
	hx_yw_end(w);
	hx_yw_end(w);
}

void hx_k8s_pin(hx_yw *w, const hx_kgroup *k)
{
	pod_pin(w, k, HX_KPOD_SINGLE, &k->pods[0]);
}

void hx_k8s_resources(hx_yw *w, const hx_kgroup *k)
{
	pod_resources(w, k, k->pods[0].ngpus, is_amd(k->pods[0].gpu));
}

static void volume_mount(hx_yw *w, const char *name, const char *path)
{
	hx_yw_item(w);
	hx_yw_str(w, "name", name);
	hx_yw_str(w, "mountPath", path);
	hx_yw_end(w);
}

/* The pod's volumes: a memory-backed /dev/shm and (but for KServe's, whose
 * presets have one) the model cache, --model-cache's claim or scratch. */
static void pod_volumes(hx_yw *w, const hx_kgroup *k, int managed)
{
	hx_yw_map(w, "volumes");
	hx_yw_item(w);
	hx_yw_str(w, "name", "dshm");
	hx_yw_map(w, "emptyDir");
	hx_yw_str(w, "medium", "Memory");
	hx_yw_end(w);
	hx_yw_end(w);
	if (!managed)
		hx_k8s_cache_volume(w, k);
	hx_yw_end(w);
}

void hx_k8s_cache_volume(hx_yw *w, const hx_kgroup *k)
{
	hx_yw_item(w);
	hx_yw_str(w, "name", "model-cache");
	if (k->o && k->o->model_cache) {
		hx_yw_map(w, "persistentVolumeClaim");
		hx_yw_str(w, "claimName", k->o->model_cache);
		hx_yw_end(w);
	} else {
		hx_yw_raw(w, "emptyDir", "{}");
	}
	hx_yw_end(w);
}

void hx_k8s_pod_spec(hx_yw *w, const hx_kgroup *k, int kind, const char *container, int managed)
{
	const hx_kpod *pod = &k->pods[kind == HX_KPOD_WORKER && k->npods > 1 ? 1 : 0];
	int ngpus = kind == HX_KPOD_WORKER ? k->worker_ngpus : pod->ngpus;
	int amd = is_amd(pod->gpu);
	/* KServe's preset runs a single pod's vLLM: only its arguments here */
	int preset = managed && kind == HX_KPOD_SINGLE;
	char buf[64];
	const char *image = hx_export_vllm_image(k->o, amd, buf, sizeof(buf));
	argv_t cmd = {0};

	pod_pin(w, k, kind, pod);
	hx_yw_map(w, "containers");
	hx_yw_item(w);
	hx_yw_str(w, "name", container);
	if (!preset || (k->o && k->o->image))
		hx_yw_str(w, "image", image);
	if (preset)
		preset_args(&cmd, k);
	else
		command(&cmd, k, kind);
	hx_yw_map(w, preset ? "args" : "command");
	for (int i = 0; i < cmd.n; i++)
		hx_k8s_str_nodollar(w, NULL, cmd.v[i]);
	hx_yw_end(w);
	argv_free(&cmd);
	pod_env(w, k, ngpus, amd, managed);
	if (kind != HX_KPOD_WORKER && !managed)
		pod_probes(w, k);
	pod_resources(w, k, ngpus, amd);
	hx_yw_map(w, "volumeMounts");
	volume_mount(w, "dshm", "/dev/shm");
	if (!managed)
		volume_mount(w, "model-cache", HX_K8S_CACHE);
	hx_yw_end(w);
	hx_yw_end(w); /* the container */
	hx_yw_end(w); /* containers */
	pod_volumes(w, k, managed);
}

void hx_k8s_scale(const double *weight, int n, long *out)
{
	double total = 0, *frac;
	long sum = 0;

	for (int i = 0; i < n; i++) {
		out[i] = 0;
		total += weight[i] > 0 ? weight[i] : 0;
	}
	if (n == 0 || !(total > 0))
		return;
	frac = hx_xcalloc((size_t)n, sizeof(*frac));
	for (int i = 0; i < n; i++) {
		double q = (weight[i] > 0 ? weight[i] : 0) / total * 1e6;
		out[i] = (long)floor(q);
		frac[i] = q - (double)out[i];
		sum += out[i];
	}
	/* the units left go to the largest remainders (the first on ties) */
	while (sum < 1000000) {
		int best = -1;
		for (int i = 0; i < n; i++)
			if (weight[i] > 0 && (best < 0 || frac[i] > frac[best]))
				best = i;
		out[best]++;
		frac[best] = -1;
		sum++;
	}
	free(frac);
}

/* ---- the manifests ---- */

static void metadata(hx_yw *w, const hx_kgroup *k)
{
	hx_yw_map(w, "metadata");
	hx_yw_str(w, "name", k->name);
	hx_k8s_labels_placement(w, k);
	hx_yw_end(w);
}

void hx_k8s_labels_placement(hx_yw *w, const hx_kgroup *k)
{
	hx_yw_map(w, "labels");
	hx_k8s_labels(w, k);
	hx_yw_end(w);
	hx_yw_map(w, "annotations");
	hx_yw_str(w, "hexplan.dev/placement", k->placement);
	hx_yw_end(w);
}

static void pod_template(hx_yw *w, const char *key, const hx_kgroup *k, int kind)
{
	hx_yw_map(w, key);
	hx_yw_map(w, "metadata");
	hx_yw_map(w, "labels");
	hx_k8s_labels(w, k);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_map(w, "spec");
	hx_k8s_pod_spec(w, k, kind, "vllm", 0);
	hx_yw_end(w);
	hx_yw_end(w);
}

static void workload(hx_yw *w, const hx_kgroup *k)
{
	hx_yw_doc(w);
	if (k->npods == 1) {
		hx_yw_str(w, "apiVersion", "apps/v1");
		hx_yw_str(w, "kind", "Deployment");
		metadata(w, k);
		hx_yw_map(w, "spec");
		hx_yw_int(w, "replicas", k->g->nreplicas);
		/* the plan uses the GPUs: no surge of extra pods on updates */
		hx_yw_map(w, "strategy");
		hx_yw_str(w, "type", "Recreate");
		hx_yw_end(w);
		hx_yw_map(w, "selector");
		hx_yw_map(w, "matchLabels");
		hx_yw_str(w, "app.kubernetes.io/part-of", "hexplan");
		hx_yw_str(w, "hexplan.dev/group", k->key);
		hx_yw_end(w);
		hx_yw_end(w);
		pod_template(w, "template", k, HX_KPOD_SINGLE);
		hx_yw_end(w);
		return;
	}
	hx_yw_str(w, "apiVersion", "leaderworkerset.x-k8s.io/v1");
	hx_yw_str(w, "kind", "LeaderWorkerSet");
	metadata(w, k);
	hx_yw_map(w, "spec");
	hx_yw_int(w, "replicas", k->g->nreplicas);
	/* workers start with the leader and wait for its Ray head */
	hx_yw_str(w, "startupPolicy", "LeaderCreated");
	hx_yw_map(w, "leaderWorkerTemplate");
	hx_yw_int(w, "size", k->npods);
	hx_yw_str(w, "restartPolicy", "RecreateGroupOnPodRestart");
	pod_template(w, "leaderTemplate", k, HX_KPOD_LEADER);
	pod_template(w, "workerTemplate", k, HX_KPOD_WORKER);
	hx_yw_end(w);
	hx_yw_end(w);
}

static void service(hx_yw *w, const hx_kgroup *k)
{
	hx_yw_doc(w);
	hx_yw_str(w, "apiVersion", "v1");
	hx_yw_str(w, "kind", "Service");
	hx_yw_map(w, "metadata");
	hx_yw_str(w, "name", k->name);
	hx_yw_map(w, "labels");
	hx_k8s_labels(w, k);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_map(w, "spec");
	hx_yw_map(w, "selector");
	hx_yw_str(w, "app.kubernetes.io/part-of", "hexplan");
	hx_yw_str(w, "hexplan.dev/group", k->key);
	if (k->npods > 1) /* the leaders serve */
		hx_yw_str(w, "leaderworkerset.sigs.k8s.io/worker-index", "0");
	hx_yw_end(w);
	hx_yw_map(w, "ports");
	hx_k8s_service_port(w, "http", HX_K8S_PORT, NULL);
	hx_yw_end(w);
	hx_yw_end(w);
}

/* A drain then waits for the group to be whole again. */
void hx_k8s_disruption_budget(hx_yw *w, const hx_kgroup *k)
{
	hx_yw_doc(w);
	hx_yw_str(w, "apiVersion", "policy/v1");
	hx_yw_str(w, "kind", "PodDisruptionBudget");
	hx_yw_map(w, "metadata");
	hx_yw_str(w, "name", k->name);
	hx_yw_map(w, "labels");
	hx_k8s_labels(w, k);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_map(w, "spec");
	hx_yw_int(w, "maxUnavailable", 1);
	hx_yw_map(w, "selector");
	hx_yw_map(w, "matchLabels");
	hx_yw_str(w, "app.kubernetes.io/part-of", "hexplan");
	hx_yw_str(w, "hexplan.dev/group", k->key);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w);
}

/* What a Kubernetes route cannot tell apart or carry, refused or noted. */
static int plan_limits(const hx_plan *p, const hx_export_opts *o, hx_export_out *out,
		       hx_err *err)
{
	int rc, disagg = 0;

	if ((rc = hx_yaml_lose_steps(p, o, out, err)))
		return rc;
	for (int g = 0; g < p->ngroups; g++)
		disagg |= p->groups[g].role != HX_ROLE_AGGREGATED;
	if (disagg) {
		hx_buf pairs = {0};
		int npairs = 0, *from = hx_xcalloc((size_t)p->nkv + 1, sizeof(*from)),
		    *to = hx_xcalloc((size_t)p->nkv + 1, sizeof(*to));
		hx_buf_printf(&pairs, "%s", "");
		for (int i = 0; i < p->nkv; i++) {
			from[i] = hx_k8s_replica_group(p, p->kv[i].from);
			to[i] = hx_k8s_replica_group(p, p->kv[i].to);
		}
		for (int i = 0; i < p->nkv; i++) {
			int a = from[i], b = to[i], seen = 0;
			if (a < 0 || b < 0)
				continue;
			for (int j = 0; j < i && !seen; j++)
				seen = from[j] == a && to[j] == b;
			if (seen)
				continue;
			if (npairs < 4) {
				char x[48], y[48];
				hx_yaml_printable(x, sizeof(x), p->groups[a].name);
				hx_yaml_printable(y, sizeof(y), p->groups[b].name);
				hx_buf_printf(&pairs, "%s%s->%s", npairs ? ", " : "", x, y);
			} else if (npairs == 4) {
				hx_buf_printf(&pairs, ", ...");
			}
			npairs++;
		}
		rc = hx_yaml_lose(
		    o, out, err,
		    "Kubernetes objects cannot carry the KV routes (%s): pairing prefill and decode pods is left to a prefill/decode-aware router (--to llm-d writes llm-d's), and the HTTPRoute splits requests over the groups by the ingress weights, to prefill pods that never call a decode pod",
		    npairs ? pairs.s : "none");
		hx_buf_release(&pairs);
		free(from);
		free(to);
		if (rc)
			return rc;
	}
	return 0;
}

int hx_k8s_route_weights(const hx_plan *p, const hx_export_opts *o, int model_router,
			 double *weight, hx_export_out *out, hx_err *err)
{
	int models = 0, first = -1, rc;

	for (int i = 0; i < p->ningress; i++) {
		int g = hx_plan_group_index(p, p->ingress[i].to);
		if (g >= 0 && p->ingress[i].weight > 0)
			weight[g] += p->ingress[i].weight;
	}
	if ((rc = hx_yaml_lose_classes(p, o, "an HTTPRoute", out, err)))
		return rc;
	for (int g = 0; g < p->ngroups; g++)
		if (weight[g] > 0) {
			if (first < 0)
				first = g;
			else if (strcmp(p->groups[g].model, p->groups[first].model) != 0)
				models++;
		}
	/* each engine serves only its own model: a request sent to another
	 * model's pods would get 404, unless a router rewrites the model */
	if (models && !model_router)
		return hx_yaml_lose(
		    o, out, err,
		    "the ingress splits requests over models, and a request names its model: one HTTPRoute rule per model, matching the " HX_K8S_MODEL_HEADER
		    " header that the gateway's body-based router sets, splits that model's requests over its groups by their weights");
	return 0;
}

void hx_k8s_env_namespace(hx_yw *w, const char *name)
{
	hx_yw_item(w);
	hx_yw_str(w, "name", name);
	hx_yw_map(w, "valueFrom");
	hx_yw_map(w, "fieldRef");
	hx_yw_str(w, "fieldPath", "metadata.namespace");
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w);
}

void hx_k8s_litellm_rule(hx_yw *w)
{
	hx_k8s_rule_open(w, NULL);
	hx_yw_item(w);
	hx_yw_str(w, "name", HX_K8S_LITELLM);
	hx_yw_int(w, "port", HX_K8S_LITELLM_PORT);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w);
}

void hx_k8s_rule_open(hx_yw *w, const char *header)
{
	hx_yw_item(w);
	hx_yw_map(w, "matches");
	hx_yw_item(w);
	hx_yw_map(w, "path");
	hx_yw_str(w, "type", "PathPrefix");
	hx_yw_str(w, "value", "/");
	hx_yw_end(w);
	if (header) {
		hx_yw_map(w, "headers");
		hx_yw_item(w);
		hx_yw_str(w, "type", "Exact");
		hx_yw_str(w, "name", HX_K8S_MODEL_HEADER);
		hx_yw_str(w, "value", header);
		hx_yw_end(w);
		hx_yw_end(w);
	}
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_map(w, "backendRefs");
}

typedef struct wi {
	double w;
	int i;
} wi;

/* The order of removal: the smallest weight first, of equal ones the last. */
static int cmp_removal(const void *a, const void *b)
{
	const wi *x = a, *y = b;
	if (x->w != y->w)
		return x->w < y->w ? -1 : 1;
	return y->i - x->i;
}

void hx_k8s_service_port(hx_yw *w, const char *name, int port, const char *app)
{
	hx_yw_item(w);
	hx_yw_str(w, "name", name);
	hx_yw_int(w, "port", port);
	hx_yw_int(w, "targetPort", port);
	hx_yw_str(w, "protocol", "TCP");
	if (app)
		hx_yw_str(w, "appProtocol", app);
	hx_yw_end(w);
}

void hx_k8s_container_port(hx_yw *w, const char *name, int port)
{
	hx_yw_map(w, "ports");
	hx_yw_item(w);
	hx_yw_str(w, "name", name);
	hx_yw_int(w, "containerPort", port);
	hx_yw_str(w, "protocol", "TCP");
	hx_yw_end(w);
	hx_yw_end(w);
}

void hx_k8s_keep_largest(const double *weight, int *keep, int n, int kept, int max)
{
	wi *v;
	int m = 0;

	if (kept <= max)
		return;
	v = hx_xmalloc(((size_t)n + 1) * sizeof(*v));
	for (int i = 0; i < n; i++)
		if (keep[i])
			v[m++] = (wi){weight[i], i};
	qsort(v, (size_t)m, sizeof(*v), cmp_removal);
	for (int k = 0; k < kept - max && k < m; k++)
		keep[v[k].i] = 0;
	free(v);
}

/* One rule of the HTTPRoute: the groups in KEEP of model M (all of them when
 * HEADER is NULL), WEIGHT scaled among them. */
static void route_rule(hx_yw *w, const hx_plan *p, const hx_kgroup *kg, const double *weight,
		       const int *keep, const hx_model *m, const char *header)
{
	double *sub = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*sub));
	long *scaled = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*scaled));

	for (int g = 0; g < p->ngroups; g++)
		if (keep[g] && (!header || kg[g].m == m))
			sub[g] = weight[g];
	hx_k8s_scale(sub, p->ngroups, scaled);
	hx_k8s_rule_open(w, header);
	for (int g = 0; g < p->ngroups; g++) {
		if (!(sub[g] > 0))
			continue;
		hx_yw_item(w);
		hx_yw_str(w, "name", kg[g].name);
		hx_yw_int(w, "port", HX_K8S_PORT);
		hx_yw_int(w, "weight", scaled[g]);
		hx_yw_end(w);
	}
	hx_yw_end(w);
	hx_yw_end(w);
	free(sub);
	free(scaled);
}

/* Keep the MAX_BACKENDS groups of model M (any model when M is NULL) with
 * the largest weights in KEEP; notes or refuses when more take ingress. */
static int route_limit(const hx_plan *p, const hx_export_opts *o, const hx_kgroup *kg,
		       const double *weight, int *keep, const hx_model *m, hx_export_out *out,
		       hx_err *err)
{
	int nin = 0, rc;

	for (int g = 0; g < p->ngroups; g++) {
		keep[g] = weight[g] > 0 && (!m || kg[g].m == m);
		nin += keep[g];
	}
	if (nin <= MAX_BACKENDS)
		return 0;
	if ((rc = hx_yaml_lose(
		 o, out, err,
		 "%d groups take requests, and an HTTPRoute rule holds %d backends: the %d with the largest weights take them all",
		 nin, MAX_BACKENDS, MAX_BACKENDS)))
		return rc;
	hx_k8s_keep_largest(weight, keep, p->ngroups, nin, MAX_BACKENDS);
	return 0;
}

int hx_k8s_httproute_open(hx_yw *w, int nmodels, const hx_export_opts *o, hx_export_out *out,
			  hx_err *err)
{
	int rc;

	if (nmodels == 0) {
		rc = hx_yaml_lose(o, out, err,
				  "the plan routes no requests: no HTTPRoute is written");
		return rc ? rc : 1;
	}
	if (nmodels > HX_K8S_MAX_RULES &&
	    (rc = hx_yaml_lose(
		 o, out, err,
		 "%d models take requests, and an HTTPRoute holds %d rules: the first %d models are routed",
		 nmodels, HX_K8S_MAX_RULES, HX_K8S_MAX_RULES)))
		return rc;
	hx_yw_doc(w);
	hx_yw_str(w, "apiVersion", "gateway.networking.k8s.io/v1");
	hx_yw_str(w, "kind", "HTTPRoute");
	hx_yw_map(w, "metadata");
	hx_yw_str(w, "name", "hexplan");
	hx_yw_map(w, "labels");
	hx_yw_str(w, "app.kubernetes.io/part-of", "hexplan");
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_map(w, "spec");
	hx_yw_map(w, "parentRefs");
	hx_yw_item(w);
	hx_yw_str(w, "name", HX_K8S_GATEWAY);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_map(w, "rules");
	return 0;
}

/* The LiteLLM config: per item of DEP that takes requests, a deployment
 * under the model's name (what its vLLM serves, so a request that names a
 * model reaches that model's engines only) and one under
 * HX_K8S_MODEL_GROUP, each weighted by the item's share of the plan's
 * requests, which simple-shuffle draws by (LiteLLM normalizes the weights
 * of one name).  A header goes in litellm_params.extra_headers, which the
 * router passes to litellm.completion() and it adds to the request
 * (LiteLLM's litellm/main.py, completion(extra_headers); the proxy keeps
 * unknown litellm_params: LiteLLM_Params in litellm/types/router.py allows
 * extra fields). */
static void litellm_config(hx_buf *b, const char *target, const hx_litellm_dep *dep, int n)
{
	double total = 0;

	for (int i = 0; i < n; i++)
		total += dep[i].weight > 0 ? dep[i].weight : 0;
	hx_buf_printf(b,
		      "    # LiteLLM %s router written by hexplan export --to %s: clients\n"
		      "    # ask for model \"%s\" to be spread over the plan's models by\n"
		      "    # its weights, or name one model to reach only its engines.\n"
		      "    model_list:\n",
		      HX_EXPORT_LITELLM_VERSION, target, HX_K8S_MODEL_GROUP);
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n; i++) {
			char model[512];
			if (!(dep[i].weight > 0))
				continue;
			snprintf(model, sizeof(model), "hosted_vllm/%s", dep[i].repo);
			hx_buf_printf(b, "      - model_name: ");
			hx_yaml_quote(b, pass ? HX_K8S_MODEL_GROUP : dep[i].repo);
			hx_buf_printf(b, "\n        litellm_params:\n          model: ");
			hx_yaml_quote(b, model);
			hx_buf_printf(b, "\n          api_base: ");
			if (strstr(dep[i].api_base, "$(" HX_K8S_LITELLM_NS ")")) {
				/* the proxy replaces a litellm_params value
				 * "os.environ/VAR" by VAR when it loads the config
				 * (litellm/proxy/proxy_server.py, load_config: "LOAD
				 * FROM os.environ/") */
				char var[64];
				snprintf(var, sizeof(var), "os.environ/HEXPLAN_API_BASE_%d", i);
				hx_yaml_quote(b, var);
			} else {
				hx_yaml_quote(b, dep[i].api_base);
			}
			hx_buf_printf(b, "\n          weight: %.6g\n", dep[i].weight / total);
			if (dep[i].header) {
				hx_buf_printf(b, "          extra_headers:\n            %s: ",
					      HX_K8S_MODEL_HEADER);
				hx_yaml_quote(b, dep[i].header);
				hx_buf_printf(b, "\n");
			}
		}
	hx_buf_printf(b, "    router_settings:\n      routing_strategy: simple-shuffle\n");
}

/* KEY: the LiteLLM router's labels, a map of their own. */
static void litellm_labels(hx_yw *w, const char *key)
{
	hx_yw_map(w, key);
	hx_yw_str(w, "app.kubernetes.io/name", "litellm");
	hx_yw_str(w, "app.kubernetes.io/part-of", "hexplan");
	hx_yw_end(w);
}

/* The metadata of each of the router's objects: its name and labels. */
static void litellm_meta(hx_yw *w)
{
	hx_yw_map(w, "metadata");
	hx_yw_str(w, "name", HX_K8S_LITELLM);
	litellm_labels(w, "labels");
	hx_yw_end(w);
}

/* The router's container, an item of an open "containers" list; DEP[0..N)
 * as for hx_k8s_litellm. */
static void litellm_container(hx_yw *w, const hx_litellm_dep *dep, int n)
{
	int env = 0;

	for (int i = 0; i < n; i++)
		env |= dep[i].weight > 0 && strstr(dep[i].api_base, "$(" HX_K8S_LITELLM_NS ")");
	hx_yw_item(w);
	hx_yw_str(w, "name", "litellm");
	hx_yw_str(w, "image", HX_EXPORT_IMAGE_LITELLM);
	hx_yw_map(w, "args");
	hx_yw_item_str(w, "--config");
	hx_yw_item_str(w, "/etc/litellm/config.yaml");
	hx_yw_item_str(w, "--port");
	hx_yw_item_str(w, HX_K8S_LITELLM_PORT_S);
	hx_yw_end(w);
	hx_k8s_container_port(w, "http", HX_K8S_LITELLM_PORT);
	if (env) {
		/* the router's namespace, then the api_bases that name it:
		 * Kubernetes expands $(VAR) in an env value when VAR is
		 * defined before it in the container (core/v1 EnvVar.value) */
		hx_yw_map(w, "env");
		hx_k8s_env_namespace(w, HX_K8S_LITELLM_NS);
		for (int i = 0; i < n; i++)
			if (dep[i].weight > 0 &&
			    strstr(dep[i].api_base, "$(" HX_K8S_LITELLM_NS ")")) {
				char var[64];
				snprintf(var, sizeof(var), "HEXPLAN_API_BASE_%d", i);
				/* not hx_k8s_env, which keeps "$" from expansion */
				hx_yw_item(w);
				hx_yw_str(w, "name", var);
				hx_yw_str(w, "value", dep[i].api_base);
				hx_yw_end(w);
			}
		hx_yw_end(w);
	}
	/* LiteLLM's own probes: alive once its server answers, ready when its
	 * router is */
	probe_path(w, "readinessProbe", "/health/readiness", HX_K8S_LITELLM_PORT, 10, 0, 0);
	probe_path(w, "startupProbe", "/health/readiness", HX_K8S_LITELLM_PORT, 10, 30, 0);
	probe_path(w, "livenessProbe", "/health/liveliness", HX_K8S_LITELLM_PORT, 10, 3, 5);
	hx_yw_map(w, "resources");
	hx_yw_map(w, "requests");
	hx_yw_str(w, "cpu", "1");
	hx_yw_str(w, "memory", "2Gi");
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_map(w, "volumeMounts");
	hx_yw_item(w);
	hx_yw_str(w, "name", "config");
	hx_yw_str(w, "mountPath", "/etc/litellm");
	hx_yw_raw(w, "readOnly", "true");
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w);
}

void hx_k8s_litellm(hx_yw *w, const char *target, const hx_litellm_dep *dep, int n)
{
	hx_yw_doc(w);
	hx_yw_str(w, "apiVersion", "v1");
	hx_yw_str(w, "kind", "ConfigMap");
	litellm_meta(w);
	hx_yw_map(w, "data");
	hx_yw_lead(w);
	hx_buf_printf(&w->b, "config.yaml: |\n");
	litellm_config(&w->b, target, dep, n);
	hx_yw_end(w);

	hx_yw_doc(w);
	hx_yw_str(w, "apiVersion", "apps/v1");
	hx_yw_str(w, "kind", "Deployment");
	litellm_meta(w);
	hx_yw_map(w, "spec");
	hx_yw_int(w, "replicas", 1);
	hx_yw_map(w, "selector");
	litellm_labels(w, "matchLabels");
	hx_yw_end(w);
	hx_yw_map(w, "template");
	hx_yw_map(w, "metadata");
	litellm_labels(w, "labels");
	hx_yw_end(w);
	hx_yw_map(w, "spec");
	hx_yw_map(w, "containers");
	litellm_container(w, dep, n);
	hx_yw_end(w);
	hx_yw_map(w, "volumes");
	hx_yw_item(w);
	hx_yw_str(w, "name", "config");
	hx_yw_map(w, "configMap");
	hx_yw_str(w, "name", HX_K8S_LITELLM);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w);
	hx_yw_end(w);

	hx_yw_doc(w);
	hx_yw_str(w, "apiVersion", "v1");
	hx_yw_str(w, "kind", "Service");
	litellm_meta(w);
	hx_yw_map(w, "spec");
	litellm_labels(w, "selector");
	hx_yw_map(w, "ports");
	hx_k8s_service_port(w, "http", HX_K8S_LITELLM_PORT, NULL);
	hx_yw_end(w);
	hx_yw_end(w);
}

/* The HTTPRoute: the Services of the groups that take ingress, weighted;
 * one rule per model when several take it. */
static int route(hx_yw *w, const hx_plan *p, const hx_export_opts *o, const hx_kgroup *kg,
		 hx_export_out *out, hx_err *err)
{
	double *weight = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*weight));
	int *keep = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*keep));
	const hx_model **models = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*models));
	hx_litellm_dep *dep = NULL;
	int rc = 0, nmodels = 0;

	if ((rc = hx_k8s_route_weights(p, o, 1, weight, out, err)))
		goto done;
	for (int g = 0; g < p->ngroups; g++)
		if (weight[g] > 0) {
			int seen = 0;
			for (int i = 0; i < nmodels && !seen; i++)
				seen = models[i] == kg[g].m;
			if (!seen)
				models[nmodels++] = kg[g].m;
		}
	if (nmodels > 1) {
		/* the split between models is the router's: the gateway sends
		 * every request to it */
		for (int g = 0; g < p->ngroups; g++)
			if (strcmp(kg[g].name, HX_K8S_LITELLM) == 0) {
				rc = hx_errf(
				    err, HX_EINPUT,
				    "group %s: its objects would be named " HX_K8S_LITELLM
				    ", the name of the LiteLLM router that splits the plan's requests over its models",
				    kg[g].key);
				goto done;
			}
		dep = hx_xcalloc((size_t)p->ngroups, sizeof(*dep));
		for (int g = 0; g < p->ngroups; g++) {
			dep[g].repo = kg[g].repo;
			snprintf(dep[g].api_base, sizeof(dep[g].api_base), "http://%s:%d/v1",
				 kg[g].name, HX_K8S_PORT);
			dep[g].weight = weight[g];
		}
		hx_k8s_litellm(w, "k8s", dep, p->ngroups);
		if ((rc = hx_k8s_httproute_open(w, 1, o, out, err)))
			goto done;
		hx_k8s_litellm_rule(w);
		hx_yw_end(w);
		hx_yw_end(w);
		goto done;
	}
	if ((rc = hx_k8s_httproute_open(w, nmodels, o, out, err))) {
		if (rc == 1)
			rc = 0;
		goto done;
	}
	for (int i = 0; i < nmodels && i < MAX_BACKENDS; i++) {
		const hx_model *m = nmodels > 1 ? models[i] : NULL;
		int g0 = 0;
		if ((rc = route_limit(p, o, kg, weight, keep, m, out, err)))
			goto done;
		while (m && kg[g0].m != m)
			g0++;
		route_rule(w, p, kg, weight, keep, models[i], m ? kg[g0].repo : NULL);
	}
	hx_yw_end(w);
	hx_yw_end(w);
done:
	free(weight);
	free(keep);
	free(models);
	free(dep);
	return rc;
}

int hx_export_k8s(const hx_plan *p, const hx_export_opts *o, hx_export_out *out, hx_err *err)
{
	char(*key)[56] = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*key));
	hx_kgroup *kg = hx_xcalloc((size_t)p->ngroups + 1, sizeof(*kg));
	hx_yw w = {{0}, 0, 0};
	int rc = 0, n = 0;

	if (o->engine == HX_ENGINE_SGLANG &&
	    (rc = hx_yaml_lose(
		 o, out, err,
		 "the k8s export writes vLLM pods: --engine sglang is not expressed")))
		goto done;
	hx_k8s_keys(p, key);
	for (n = 0; n < p->ngroups; n++)
		if ((rc = hx_kgroup_init(&kg[n], p, o, n, key[n], out, err))) {
			n++;
			goto done;
		}
	if ((rc = plan_limits(p, o, out, err)))
		goto done;
	if (o->image)
		hx_buf_printf(&w.b,
			      "# Written by hexplan export --to k8s: image %s (--image).\n",
			      o->image);
	else {
		char buf[64];
		const char *image = hx_export_vllm_image(o, 0, buf, sizeof(buf));
		hx_buf_printf(
		    &w.b,
		    "# Written by hexplan export --to k8s for vLLM %s: images %s and,\n"
		    "# on AMD GPUs, %s (the defaults; --image replaces them).\n",
		    hx_export_engine_version(o, HX_EXPORT_VLLM_VERSION), image,
		    HX_EXPORT_IMAGE_AMD);
	}
	for (int g = 0; g < p->ngroups; g++) {
		workload(&w, &kg[g]);
		service(&w, &kg[g]);
		hx_k8s_disruption_budget(&w, &kg[g]);
	}
	if ((rc = route(&w, p, o, kg, out, err)))
		goto done;
	if (!w.b.s)
		hx_buf_printf(&w.b, "%s", "");
	hx_export_add(out, "hexplan.yaml", w.b.s);
	w.b.s = NULL;
done:
	for (int g = 0; g < n; g++)
		hx_kgroup_release(&kg[g]);
	hx_buf_release(&w.b);
	free(kg);
	free(key);
	return rc;
}
