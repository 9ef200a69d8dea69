/*
 * export_launch: the command line of every serving process of a plan, and
 * of the router in front of them (DESIGN §9).
 *
 * One process per node of each replica: a replica whose stages sit on one
 * node is one process with PP inside it; a replica spread over K nodes is K
 * processes, rank 0 serving HTTP and the others joining it (vLLM --headless,
 * SGLang --node-rank).  Ports are fixed by a process's place among the
 * processes of its host (slot k, in the order groups, replicas and node
 * ranks appear in the plan):
 *
 *   HTTP                 8000 + k    (serving ranks only)
 *   NIXL side channel    5600 + k    (vLLM, disaggregated groups)
 *   SGLang bootstrap     9000 + k0   (prefill groups; k0: rank 0's slot)
 *   multi-node master   29500 + 10 k0 (vLLM --master-port or, with
 *                                      attention ranks,
 *                                      --data-parallel-rpc-port; SGLang
 *                                      --dist-init-addr, which uses a few
 *                                      ports above it)
 *   routers: LiteLLM 4000; sglang_router / vllm-router 30000 + n
 *
 * The ingress weights reach the router: with vLLM, aggregated models go
 * through one LiteLLM proxy whose deployments carry `weight`s
 * (simple-shuffle); disaggregated models need a prefill/decode router
 * (vllm-router, sglang_router), which has no weights, as sglang_router has
 * none for aggregated models either.  A router without weights expresses
 * the plan only when every replica it fronts gets the same share (it runs
 * round_robin) and, for prefill/decode, when every prefill replica spreads
 * its KV caches evenly over every decode replica; otherwise the export
 * refuses unless --lossy.  So does a group whose stages differ in TP (both
 * engines want one TP size: the lossy form runs the smallest), a replica
 * whose ranks do not fill its nodes in order and evenly (the engines give
 * every node world/nnodes consecutive ranks), a replica that mixes GPU
 * vendors, per-class ingress weights, a split of requests between models
 * (but where LiteLLM fronts them all: vLLM and aggregated groups, whose
 * replicas then also form the model group "hexplan", weighted by their
 * share of all the requests), cascades and cross-replica hops.  Uneven layer splits are
 * expressed (VLLM_PP_LAYER_PARTITION, SGLANG_PP_LAYER_PARTITION).
 * Expert-parallel groups get the engines' EP flags (export.h): vLLM's data
 * parallel ranks start node by node (the first node serving HTTP, the
 * others --headless from their first rank), SGLang's as TP over nodes.
 *
 * JSON: one object per process per line, then one {"router": ...} line per
 * router.  Shell: launch-<host>.sh per host and router.sh (+ router.yaml
 * for LiteLLM), bash scripts that pass the Hugging Face token on, start
 * the routers once every server answers /health, and fail when any of
 * their processes exits (`wait -n`); every string that comes from the
 * inputs is quoted with hx_shell_quote, and comments carry only printable
 * ASCII.
 */
#include "config.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"

#define PORT_HTTP      8000
#define PORT_NIXL      5600
#define PORT_BOOTSTRAP 9000
#define PORT_MASTER    29500
#define PORT_LITELLM   4000
#define PORT_ROUTER    30000

/* The LiteLLM model group of a plan that splits requests between models:
 * what clients ask for to be spread over the models by the plan's weights. */
#define MODEL_GROUP  "hexplan"
#define MAX_PER_HOST 500 /* keeps the port ranges apart */
#define MAX_ROUTERS  1000

typedef struct arg {
	char *s;
	int input; /* comes from the inputs: always quoted in scripts */
} arg;

typedef struct args {
	arg *a;
	int n;
} args;

typedef struct envvar {
	const char *name;
	char *value;
} envvar;

typedef struct proc {
	int g, r, stage; /* group, replica, first stage it holds */
	int rank, nnodes;
	const char *node; /* borrowed from the plan */
	int host;         /* index in the host table */
	int slot;         /* its place among its host's processes */
	int tp;           /* TP size of every stage */
	hx_export_ep ep;  /* the group's expert parallelism (ep.world 0: none) */
	int *gpus, ngpus;
	int amd;
	int port; /* HTTP; 0 on a non-serving rank */
	char *url;
	envvar env[9];
	int nenv;
	args argv;
} proc;

typedef struct host {
	const char *addr; /* borrowed */
	int nproc;
	char file[96];
} host;

typedef struct deployment { /* a LiteLLM model_list entry */
	const char *model_name, *model;
	char *api_base;
	double weight;
	int has_weight;
} deployment;

typedef struct router {
	const char *engine;
	const char *model; /* NULL for LiteLLM (every model) */
	int port;
	args argv;
} router;

typedef struct ctx {
	const hx_plan *p;
	const hx_export_opts *o;
	hx_export_out *out;
	hx_err *err;
	int vllm;
	const char *version; /* the engine release whose flags are written */
	proc *pr;
	int npr;
	host *h;
	int nh;
	router *rt;
	int nrt;
	deployment *dep;
	int ndep;
	int litellm; /* a LiteLLM router is written */
	int group;   /* the models' replicas also form the model group MODEL_GROUP */
	int nports;  /* routers on PORT_ROUTER + n */
} ctx;

static const char *engine_name(const ctx *c)
{
	return c->vllm ? "vLLM" : "SGLang";
}

/* S for a one-line message or a comment: printable ASCII only. */
static const char *shown(const char *s)
{
	static char buf[8][160];
	static int k;
	char *b = buf[k++ % 8];
	size_t i = 0;

	for (; *s && i + 1 < sizeof(buf[0]); s++)
		b[i++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
	b[i] = '\0';
	return b;
}

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...)
{
	va_list ap;
	int n;
	char *s;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	s = hx_xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

static void add_arg(args *v, int input, char *s)
{
	v->a = hx_xrealloc(v->a, (size_t)(v->n + 1) * sizeof(*v->a));
	v->a[v->n].s = s;
	v->a[v->n].input = input;
	v->n++;
}

static void add(args *v, const char *s)
{
	add_arg(v, 0, hx_xstrdup(s));
}

static void add_input(args *v, const char *s)
{
	add_arg(v, 1, hx_xstrdup(s));
}

static void add_int(args *v, const char *flag, int n)
{
	add(v, flag);
	add_arg(v, 0, xprintf("%d", n));
}

static void args_free(args *v)
{
	for (int i = 0; i < v->n; i++)
		free(v->a[i].s);
	free(v->a);
	v->a = NULL;
	v->n = 0;
}

static void add_env(proc *x, const char *name, char *value)
{
	x->env[x->nenv].name = name;
	x->env[x->nenv].value = value;
	x->nenv++;
}

/* The plan cannot be expressed: refuse, or (lossy) note it and go on with
 * the closest form, CLOSEST.  Returns 0 to go on. */
static int cannot(ctx *c, const char *closest, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int cannot(ctx *c, const char *closest, const char *fmt, ...)
{
	char what[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (c->o->lossy) {
		hx_export_lost(c->out, "%s; the launch commands %s instead", what, closest);
		return 0;
	}
	return hx_errf(c->err, HX_EINPUT, "%s (with --lossy the launch commands %s)", what,
		       closest);
}

/* "http://HOST:PORT", with an IPv6 address in brackets. */
static char *host_port(const char *scheme, const char *h, int port)
{
	int v6 = strchr(h, ':') != NULL;
	return xprintf("%s%s%s%s:%d", scheme, v6 ? "[" : "", h, v6 ? "]" : "", port);
}

static int find_host(ctx *c, const char *addr)
{
	for (int i = 0; i < c->nh; i++)
		if (strcmp(c->h[i].addr, addr) == 0)
			return i;
	c->h = hx_xrealloc(c->h, (size_t)(c->nh + 1) * sizeof(*c->h));
	memset(&c->h[c->nh], 0, sizeof(c->h[0]));
	c->h[c->nh].addr = addr;
	return c->nh++;
}

static int is_amd(const ctx *c, const char *node, const char *gpu)
{
	const hx_gpu *g = hx_export_gpu(c->p, c->o, node, gpu);
	return g && strcmp(g->vendor, "amd") == 0;
}

static double ingress_weight(const hx_plan *p, const char *group)
{
	double w = 0;
	for (int i = 0; i < p->ningress; i++)
		if (strcmp(p->ingress[i].to, group) == 0)
			w += p->ingress[i].weight;
	return w;
}

/* Replica R of group G, expert parallel as EP over NN nodes (WORLD GPUs):
 * can the engine's multi-node form run it?  vLLM starts DP ranks node by
 * node (--data-parallel-size-local), each with its attention TP on one
 * node; SGLang's data parallelism without EP (a dense model) runs on one
 * node only. */
static int ep_nodes(ctx *c, const hx_plan_group *g, const hx_plan_replica *r,
		    const hx_export_ep *ep, int world, int nn)
{
	if (!ep->world || ep->dp <= 1)
		return 0;
	if (c->vllm && (world % nn || (world / nn) % ep->atp))
		return hx_errf(
		    c->err, HX_EINPUT,
		    "group %s: replica %s runs %d attention ranks of TP %d over %d nodes, and vLLM starts whole data-parallel ranks on each node (--data-parallel-size-local): an attention rank cannot span nodes",
		    shown(g->name), shown(r->id), ep->dp, ep->atp, nn);
	if (!c->vllm && ep->ep <= 1)
		return hx_errf(
		    c->err, HX_EINPUT,
		    "group %s: replica %s runs %d data-parallel ranks of a dense model over %d nodes, and SGLang runs --dp-size without expert parallelism on one node",
		    shown(g->name), shown(r->id), ep->dp, nn);
	return 0;
}

/* The processes of replica R of group GI, with TP size TP in every stage. */
static int build_replica(ctx *c, int gi, int ri, int tp, int *bad_layout, int *bad_vendor,
			 const char **first_layout, const char **first_vendor)
{
	const hx_plan_group *g = &c->p->groups[gi];
	const hx_plan_replica *r = &g->replicas[ri];
	int world = tp * g->nstages, k = 0, nn = 0, rc = 0;
	const hx_gpu_ref **rank = hx_xcalloc((size_t)world, sizeof(*rank));
	int *rstage = hx_xcalloc((size_t)world, sizeof(int));
	int *rnode = hx_xcalloc((size_t)world, sizeof(int));
	const char **nodes = hx_xcalloc((size_t)world, sizeof(*nodes));
	int layout_ok = 1, vendor_ok = 1, amd0 = -1;
	hx_export_ep ep;

	for (int s = 0; s < g->nstages; s++) {
		if (r->ngpus[s] < tp) {
			rc = hx_errf(c->err, HX_EINPUT,
				     "replica %s: stage %d has %d GPUs for TP %d", shown(r->id),
				     s, r->ngpus[s], tp);
			goto out;
		}
		for (int t = 0; t < tp; t++) {
			const hx_gpu_ref *ref = &r->gpus[s][t];
			int j, amd = is_amd(c, ref->node, g->stage[s].gpu);
			for (j = 0; j < nn && strcmp(nodes[j], ref->node); j++)
				;
			if (j == nn)
				nodes[nn++] = ref->node;
			rank[k] = ref;
			rstage[k] = s;
			rnode[k] = j;
			k++;
			if (amd0 < 0)
				amd0 = amd;
			else if (amd != amd0)
				vendor_ok = 0;
		}
	}
	if (nn > 1) {
		if (world % nn)
			layout_ok = 0;
		for (int i = 0; i < world && layout_ok; i++)
			if (rnode[i] != i / (world / nn))
				layout_ok = 0;
	}
	hx_export_ep_shape(g, &ep);
	if (nn > 1 && (rc = ep_nodes(c, g, r, &ep, world, nn)))
		goto out;
	if (nn > 1 && c->vllm && ep.dp <= 1 &&
	    hx_export_version_cmp(c->version, HX_EXPORT_VLLM_MP_NODES) < 0) {
		/* before 0.11.1 only Ray joined the nodes of one vLLM, and
		 * these commands start no Ray cluster */
		rc = hx_errf(
		    c->err, HX_EINPUT,
		    "group %s: replica %s spans %d nodes, but vLLM %s has no --nnodes or --node-rank (vLLM runs a replica over several nodes without Ray since %s: give --engine-version %s or later, or export --to k8s, whose LeaderWorkerSets start Ray)",
		    shown(g->name), shown(r->id), nn, c->version, HX_EXPORT_VLLM_MP_NODES,
		    HX_EXPORT_VLLM_MP_NODES);
		goto out;
	}
	if (!layout_ok && (*bad_layout)++ == 0)
		*first_layout = r->id;
	if (!vendor_ok && (*bad_vendor)++ == 0)
		*first_vendor = r->id;
	for (int j = 0; j < nn; j++) {
		proc *x;
		int hi = find_host(c, hx_export_host(c->o, nodes[j]));
		if (c->h[hi].nproc >= MAX_PER_HOST) {
			rc = hx_errf(
			    c->err, HX_EINPUT,
			    "host %s: more than %d processes (the port ranges would overlap)",
			    shown(c->h[hi].addr), MAX_PER_HOST);
			goto out;
		}
		c->pr = hx_xrealloc(c->pr, (size_t)(c->npr + 1) * sizeof(*c->pr));
		x = &c->pr[c->npr++];
		memset(x, 0, sizeof(*x));
		x->g = gi;
		x->r = ri;
		x->rank = j;
		x->nnodes = nn;
		x->tp = tp;
		x->ep = ep;
		x->node = nodes[j];
		x->host = hi;
		x->slot = c->h[hi].nproc++;
		x->gpus = hx_xcalloc((size_t)world, sizeof(int));
		x->stage = -1;
		for (int i = 0; i < world; i++) {
			if (rnode[i] != j)
				continue;
			if (x->stage < 0) {
				x->stage = rstage[i];
				x->amd = is_amd(c, rank[i]->node, g->stage[rstage[i]].gpu);
			}
			x->gpus[x->ngpus++] = rank[i]->index;
		}
	}
out:
	free(rank);
	free(rstage);
	free(rnode);
	free(nodes);
	return rc;
}

static int build_group(ctx *c, int gi)
{
	const hx_plan_group *g = &c->p->groups[gi];
	const hx_model *m = hx_plan_model(c->p, g->model);
	int tp = g->stage[0].tp, same = 1, layer = 0, rc;
	int bad_layout = 0, bad_vendor = 0;
	const char *first_layout = NULL, *first_vendor = NULL;
	char tps[128] = "";

	if (!m)
		return hx_errf(c->err, HX_EINPUT, "group %s: model \"%s\" is not in the plan",
			       shown(g->name), shown(g->model));
	if (g->nstages < 1 || g->nreplicas < 1)
		return hx_errf(c->err, HX_EINPUT, "group %s has no stages or no replicas",
			       shown(g->name));
	for (int s = 0; s < g->nstages; s++) {
		size_t n = strlen(tps);
		if (g->stage[s].first != layer || g->stage[s].last <= layer ||
		    g->stage[s].tp < 1)
			return hx_errf(
			    c->err, HX_EINPUT,
			    "group %s: stage %d must hold layers from %d on with TP >= 1",
			    shown(g->name), s, layer);
		layer = g->stage[s].last;
		if (g->stage[s].tp != tp)
			same = 0;
		if (g->stage[s].tp < tp)
			tp = g->stage[s].tp;
		snprintf(tps + n, sizeof(tps) - n, "%s%d", s ? ", " : "", g->stage[s].tp);
	}
	if (m->a.layers > 0 && layer != m->a.layers)
		return hx_errf(c->err, HX_EINPUT,
			       "group %s: stages end at layer %d, the model has %d",
			       shown(g->name), layer, m->a.layers);
	if (!same) {
		char closest[96];
		snprintf(closest, sizeof(closest),
			 "run TP %d on the first %d GPUs of every stage", tp, tp);
		if ((rc = cannot(
			 c, closest,
			 "group %s: %s needs the same TP size in every stage, this group has %s",
			 shown(g->name), engine_name(c), tps)))
			return rc;
	}
	{
		char msg[400];
		if (hx_export_int4_unmapped(c->p, c->o, g, shown(g->name), msg, sizeof(msg)) &&
		    (rc = cannot(c, "serve the published checkpoint", "%s", msg)))
			return rc;
	}
	for (int ri = 0; ri < g->nreplicas; ri++)
		if ((rc = build_replica(c, gi, ri, tp, &bad_layout, &bad_vendor, &first_layout,
					&first_vendor)))
			return rc;
	if (bad_layout &&
	    (rc = cannot(
		 c, "start one process per node with the plan's GPUs",
		 "group %s: %d replica(s) (first %s) spread their ranks unevenly or out of order over their nodes; %s gives each node world/nnodes consecutive ranks",
		 shown(g->name), bad_layout, shown(first_layout), engine_name(c))))
		return rc;
	if (bad_vendor &&
	    (rc = cannot(
		 c, "start the processes as planned",
		 "group %s: %d replica(s) (first %s) mix NVIDIA and AMD GPUs, which one %s instance cannot run",
		 shown(g->name), bad_vendor, shown(first_vendor), engine_name(c))))
		return rc;
	return 0;
}

/* The layer split "41,39" when a group's stages are uneven, else NULL. */
static char *layer_partition(const hx_plan_group *g)
{
	hx_buf b = {0};
	int uneven = 0;

	if (g->nstages < 2)
		return NULL;
	for (int s = 0; s < g->nstages; s++) {
		int n = g->stage[s].last - g->stage[s].first;
		if (n != g->stage[0].last - g->stage[0].first)
			uneven = 1;
		hx_buf_printf(&b, "%s%d", s ? "," : "", n);
	}
	if (!uneven) {
		hx_buf_release(&b);
		return NULL;
	}
	return b.s;
}

/* What group G's engines serve (--checkpoint for int4 weights). */
static const char *model_path(const ctx *c, const hx_plan_group *g)
{
	return hx_export_repo(c->p, c->o, hx_plan_model(c->p, g->model), g->wdt);
}

/* vLLM's expert-parallel flags for process X (flags: export.h): EP over
 * TP x DP; DP ranks over several nodes, each node starting its own
 * (--data-parallel-size-local) and the first serving HTTP, the others
 * --headless from their first rank.  The RPC port is the replica's
 * multi-node master port (PORT_MASTER + 10 k0). */
static void vllm_ep_args(ctx *c, proc *x, int master)
{
	const hx_export_ep *e = &x->ep;
	const char *addr0 = c->h[(x - x->rank)->host].addr;

	if (e->ep > 1)
		add(&x->argv, "--enable-expert-parallel");
	/* DeepEP's all-to-all over several nodes (export.h) */
	if (e->ep > 1 && x->nnodes > 1 && !x->amd) {
		const char *be = hx_export_vllm_all2all(c->p->groups[x->g].role);
		if (hx_export_version_cmp(c->version, HX_EXPORT_VLLM_ALL2ALL_FLAG) >= 0) {
			add(&x->argv, "--all2all-backend");
			add(&x->argv, be);
			/* the cost model's two micro-batches (export.h) */
			if (e->dp > 1 &&
			    hx_export_version_cmp(c->version, HX_EXPORT_VLLM_DBO) >= 0)
				add(&x->argv, "--enable-dbo");
		} else {
			add_env(x, "VLLM_ALL2ALL_BACKEND", hx_xstrdup(be));
		}
	}
	if (e->dp > 1) {
		add_int(&x->argv, "--data-parallel-size", e->dp);
		if (x->nnodes > 1) {
			add_int(&x->argv, "--data-parallel-size-local", e->dp / x->nnodes);
			add(&x->argv, "--data-parallel-address");
			add_input(&x->argv, addr0);
		}
		add_int(&x->argv, "--data-parallel-rpc-port", master);
		if (x->rank > 0) {
			add_int(&x->argv, "--data-parallel-start-rank",
				x->rank * (e->dp / x->nnodes));
			add(&x->argv, "--headless");
		}
	}
	if (e->redundant > 0) {
		add(&x->argv, "--enable-eplb");
		if (hx_export_version_cmp(c->version, HX_EXPORT_VLLM_EPLB_CONFIG) >= 0) {
			add(&x->argv, "--eplb-config");
			add_arg(&x->argv, 0,
				xprintf("{\"num_redundant_experts\":%d}", e->redundant));
		} else {
			add_int(&x->argv, "--num-redundant-experts", e->redundant);
		}
	}
}

/* SGLang's expert-parallel flags for process X of group G on model M
 * (flags: export.h).  With data-parallel attention, DeepEP's all-to-all
 * (normal dispatch for prefill, low-latency for decode, both by batch on
 * aggregated groups) and the dense layers and head data parallel; a dense
 * model's DP is plain --dp-size. */
static void sglang_ep_args(proc *x, const hx_plan_group *g, const hx_model *m)
{
	const hx_export_ep *e = &x->ep;

	if (e->ep > 1)
		add_int(&x->argv, "--ep-size", e->ep);
	if (e->dp > 1)
		add_int(&x->argv, "--dp-size", e->dp);
	if (e->dp > 1 && e->ep > 1) {
		add(&x->argv, "--enable-dp-attention");
		add(&x->argv, "--enable-dp-lm-head");
		if (m->a.first_dense_layers > 0)
			add_int(&x->argv, "--moe-dense-tp-size", 1);
		add(&x->argv, "--moe-a2a-backend");
		add(&x->argv, "deepep");
		if (g->role != HX_ROLE_AGGREGATED) {
			add(&x->argv, "--deepep-mode");
			add(&x->argv, g->role == HX_ROLE_PREFILL ? "normal" : "low_latency");
		}
		/* the cost model's two micro-batches (export.h) */
		add(&x->argv, "--enable-two-batch-overlap");
	}
	if (e->redundant > 0) {
		add(&x->argv, "--enable-eplb");
		add_int(&x->argv, "--ep-num-redundant-experts", e->redundant);
	}
}

/* Environment and argv of every process. */
static void fill_procs(ctx *c)
{
	for (int i = 0; i < c->npr; i++) {
		proc *x = &c->pr[i];
		const proc *x0 = x - x->rank; /* rank 0 of the replica */
		const hx_plan_group *g = &c->p->groups[x->g];
		const hx_model *m = hx_plan_model(c->p, g->model);
		const char *addr = c->h[x->host].addr, *addr0 = c->h[x0->host].addr;
		int tp = x->tp;
		int master = PORT_MASTER + 10 * x0->slot;
		int pd = g->role != HX_ROLE_AGGREGATED;
		hx_buf dev = {0};
		char *part = layer_partition(g);
		const char *iface;

		for (int k = 0; k < x->ngpus; k++)
			hx_buf_printf(&dev, "%s%d", k ? "," : "", x->gpus[k]);
		add_env(x, x->amd ? "HIP_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES", dev.s);
		if ((iface = hx_export_iface(c->o, x->node))) {
			/* the node's interface for the collectives' bootstrap (NCCL
			 * or RCCL, Gloo) and, in a P/D pair, NIXL's UCX transport */
			add_env(x, "NCCL_SOCKET_IFNAME", hx_xstrdup(iface));
			add_env(x, "GLOO_SOCKET_IFNAME", hx_xstrdup(iface));
			if (pd)
				add_env(x, "UCX_NET_DEVICES", hx_xstrdup(iface));
		}
		if (x->rank == 0) {
			x->port = PORT_HTTP + x->slot;
			x->url = host_port("http://", addr, x->port);
		}
		if (c->vllm) {
			if (part)
				add_env(x, "VLLM_PP_LAYER_PARTITION", part);
			if (pd) {
				add_env(x, "VLLM_NIXL_SIDE_CHANNEL_HOST", hx_xstrdup(addr));
				add_env(x, "VLLM_NIXL_SIDE_CHANNEL_PORT",
					xprintf("%d", PORT_NIXL + x->slot));
			}
			add(&x->argv, "vllm");
			add(&x->argv, "serve");
			add_input(&x->argv, model_path(c, g));
			add_int(&x->argv, "--tensor-parallel-size",
				x->ep.world ? x->ep.atp : tp);
			add_int(&x->argv, "--pipeline-parallel-size", g->nstages);
			if (m->a.max_context > 0)
				add_int(&x->argv, "--max-model-len",
					hx_export_max_model_len(c->p, g));
			add(&x->argv, "--gpu-memory-utilization");
			add(&x->argv, "0.9");
			{
				const char *prec[4];
				int n = hx_export_precision_args(HX_ENGINE_VLLM, g->wdt,
								 g->kvdt, prec);
				for (int a = 0; a < n; a++)
					add(&x->argv, prec[a]);
			}
			if (x->port)
				add_int(&x->argv, "--port", x->port);
			if (x->ep.world)
				vllm_ep_args(c, x, master);
			if (x->nnodes > 1 && x->ep.dp <= 1) {
				add_int(&x->argv, "--nnodes", x->nnodes);
				add_int(&x->argv, "--node-rank", x->rank);
				add(&x->argv, "--master-addr");
				add_input(&x->argv, addr0);
				add_int(&x->argv, "--master-port", master);
				if (x->rank > 0)
					add(&x->argv, "--headless");
			}
			if (pd) {
				add(&x->argv, "--kv-transfer-config");
				add(&x->argv,
				    g->role == HX_ROLE_PREFILL
					? "{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_producer\"}"
					: "{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_consumer\"}");
			}
		} else {
			if (part)
				add_env(x, "SGLANG_PP_LAYER_PARTITION", part);
			add(&x->argv, "python");
			add(&x->argv, "-m");
			add(&x->argv, "sglang.launch_server");
			add(&x->argv, "--model-path");
			add_input(&x->argv, model_path(c, g));
			/* SGLang's --tp-size is every GPU of the replica, dp-attention
			 * or not; a dense model's DP ranks each run --tp-size */
			add_int(&x->argv, "--tp-size",
				x->ep.world && x->ep.ep <= 1 ? x->ep.atp : tp);
			add_int(&x->argv, "--pp-size", g->nstages);
			if (m->a.max_context > 0)
				add_int(&x->argv, "--context-length",
					hx_export_max_model_len(c->p, g));
			{
				const char *prec[4];
				int n = hx_export_precision_args(HX_ENGINE_SGLANG, g->wdt,
								 g->kvdt, prec);
				for (int a = 0; a < n; a++)
					add(&x->argv, prec[a]);
			}
			if (x->port) {
				add(&x->argv, "--host");
				add(&x->argv, "0.0.0.0");
				add_int(&x->argv, "--port", x->port);
			}
			if (x->ep.world)
				sglang_ep_args(x, g, m);
			if (x->nnodes > 1) {
				add_int(&x->argv, "--nnodes", x->nnodes);
				add_int(&x->argv, "--node-rank", x->rank);
				add(&x->argv, "--dist-init-addr");
				add_arg(&x->argv, 1, host_port("", addr0, master));
			}
			if (pd) {
				add(&x->argv, "--disaggregation-mode");
				add(&x->argv,
				    g->role == HX_ROLE_PREFILL ? "prefill" : "decode");
				add(&x->argv, "--disaggregation-transfer-backend");
				add(&x->argv, "nixl");
				if (g->role == HX_ROLE_PREFILL)
					add_int(&x->argv, "--disaggregation-bootstrap-port",
						PORT_BOOTSTRAP + x0->slot);
			}
		}
	}
}

static const proc *serving(const ctx *c, int g, int r)
{
	for (int i = 0; i < c->npr; i++)
		if (c->pr[i].g == g && c->pr[i].r == r && c->pr[i].rank == 0)
			return &c->pr[i];
	return NULL;
}

static router *new_router(ctx *c, const char *engine, const char *model)
{
	router *x;
	c->rt = hx_xrealloc(c->rt, (size_t)(c->nrt + 1) * sizeof(*c->rt));
	x = &c->rt[c->nrt++];
	memset(x, 0, sizeof(*x));
	x->engine = engine;
	x->model = model;
	return x;
}

/* A router without weights: does every replica of the groups in LIST get
 * the same share?  Fills WHY with the shares otherwise. */
static int uniform(const ctx *c, const int *list, int n, char *why, size_t wn)
{
	double lo = INFINITY, hi = 0;
	size_t k = 0;

	why[0] = '\0';
	for (int i = 0; i < n; i++) {
		const hx_plan_group *g = &c->p->groups[list[i]];
		double w = ingress_weight(c->p, g->name) / g->nreplicas;
		if (w < lo)
			lo = w;
		if (w > hi)
			hi = w;
		if (i < 4 && k < wn)
			k += (size_t)snprintf(why + k, wn - k, "%s%s %.6g", i ? ", " : "",
					      shown(g->name), w);
		else if (i == 4 && k < wn)
			k += (size_t)snprintf(why + k, wn - k, ", ...");
	}
	return n == 0 || hi <= 0 || hi - lo <= 1e-6 * hi;
}

/* Does every prefill replica of PRE spread its KV caches evenly over every
 * decode replica of DEC (or does the plan name no KV routes for them)? */
static int kv_uniform(const ctx *c, const int *pre, int np, const int *dec, int nd)
{
	int ndec = 0, any = 0;

	for (int i = 0; i < nd; i++)
		ndec += c->p->groups[dec[i]].nreplicas;
	for (int i = 0; i < np && !any; i++)
		for (int r = 0; r < c->p->groups[pre[i]].nreplicas && !any; r++)
			for (int k = 0; k < c->p->nkv && !any; k++)
				any = strcmp(c->p->kv[k].from,
					     c->p->groups[pre[i]].replicas[r].id) == 0;
	if (!any)
		return 1;
	for (int i = 0; i < np; i++) {
		const hx_plan_group *g = &c->p->groups[pre[i]];
		for (int r = 0; r < g->nreplicas; r++) {
			const char *id = g->replicas[r].id;
			double w0 = -1;
			int n = 0;
			for (int k = 0; k < c->p->nkv; k++) {
				const hx_route *e = &c->p->kv[k];
				int found = 0;
				if (strcmp(e->from, id))
					continue;
				for (int d = 0; d < nd && !found; d++) {
					const hx_plan_group *dg = &c->p->groups[dec[d]];
					for (int q = 0; q < dg->nreplicas && !found; q++)
						found = strcmp(dg->replicas[q].id, e->to) == 0;
				}
				if (!found)
					return 0;
				if (w0 < 0)
					w0 = e->weight;
				else if (fabs(e->weight - w0) > 1e-6 * fabs(w0))
					return 0;
				n++;
			}
			if (n != ndec)
				return 0;
		}
	}
	return 1;
}

static int model_routers(ctx *c, const hx_model *m, int *list)
{
	int nagg = 0, npre = 0, ndec = 0, rc;
	int *agg = list, *pre = list + c->p->ngroups, *dec = list + 2 * c->p->ngroups;
	char why[256];

	for (int gi = 0; gi < c->p->ngroups; gi++) {
		const hx_plan_group *g = &c->p->groups[gi];
		if (strcmp(g->model, m->name))
			continue;
		if (g->role == HX_ROLE_PREFILL)
			pre[npre++] = gi;
		else if (g->role == HX_ROLE_DECODE)
			dec[ndec++] = gi;
		else
			agg[nagg++] = gi;
	}
	if (nagg + npre + ndec == 0)
		return 0;
	if (c->nrt >= MAX_ROUTERS)
		return hx_errf(c->err, HX_EINPUT, "more than %d routers", MAX_ROUTERS);
	if (npre + ndec > 0) {
		const char *rname = c->vllm ? "vllm-router" : "sglang_router";
		router *x;
		if (nagg &&
		    (rc = cannot(
			 c, "leave its aggregated groups out of the router",
			 "model %s has aggregated and prefill/decode groups, which one %s cannot front together",
			 shown(m->name), rname)))
			return rc;
		if (!npre || !ndec)
			return cannot(c, "start no router for it",
				      "model %s has %s groups but no %s groups", shown(m->name),
				      npre ? "prefill" : "decode", npre ? "decode" : "prefill");
		if (!uniform(c, pre, npre, why, sizeof(why)) &&
		    (rc = cannot(
			 c, "send every prefill replica the same share (round_robin)",
			 "model %s: %s has no routing weights and the plan gives prefill replicas different shares (%s each)",
			 shown(m->name), rname, why)))
			return rc;
		if (!kv_uniform(c, pre, npre, dec, ndec) &&
		    (rc = cannot(
			 c, "let the router pick decode replicas (round_robin)",
			 "model %s: %s picks the decode replica itself and cannot follow the plan's KV routes from prefill to decode replicas",
			 shown(m->name), rname)))
			return rc;
		x = new_router(c, rname, m->name);
		x->port = PORT_ROUTER + c->nports++;
		if (c->vllm) {
			add(&x->argv, "vllm-router");
			add(&x->argv, "--vllm-pd-disaggregation");
		} else {
			add(&x->argv, "python");
			add(&x->argv, "-m");
			add(&x->argv, "sglang_router.launch_router");
			add(&x->argv, "--pd-disaggregation");
		}
		for (int i = 0; i < npre + ndec; i++) {
			int gi = i < npre ? pre[i] : dec[i - npre];
			for (int r = 0; r < c->p->groups[gi].nreplicas; r++) {
				const proc *s = serving(c, gi, r);
				add(&x->argv, i < npre ? "--prefill" : "--decode");
				add_input(&x->argv, s->url);
				if (i < npre && !c->vllm)
					add_arg(&x->argv, 0,
						xprintf("%d", PORT_BOOTSTRAP + s->slot));
			}
		}
	} else if (c->vllm) {
		double total = 0;
		for (int i = 0; i < nagg; i++)
			total += ingress_weight(c->p, c->p->groups[agg[i]].name);
		for (int i = 0; i < nagg; i++) {
			const hx_plan_group *g = &c->p->groups[agg[i]];
			for (int r = 0; r < g->nreplicas; r++) {
				deployment *d;
				c->dep = hx_xrealloc(c->dep,
						     (size_t)(c->ndep + 1) * sizeof(*c->dep));
				d = &c->dep[c->ndep++];
				d->model_name = m->name;
				d->model = model_path(c, g);
				d->api_base = xprintf("%s/v1", serving(c, agg[i], r)->url);
				d->has_weight = total > 0;
				d->weight =
				    hx_round6(ingress_weight(c->p, g->name) / g->nreplicas);
				if (c->group && d->weight > 0) {
					/* the same replica in the group of every model,
					 * weighted by its share of all the requests */
					deployment *e;
					c->dep = hx_xrealloc(c->dep, (size_t)(c->ndep + 1) *
									 sizeof(*c->dep));
					e = &c->dep[c->ndep++];
					*e = c->dep[c->ndep - 2];
					e->model_name = MODEL_GROUP;
					e->api_base = xprintf("%s", e->api_base);
				}
			}
		}
		if (!c->litellm) {
			router *x = new_router(c, "litellm", NULL);
			x->port = PORT_LITELLM;
			add(&x->argv, "litellm");
			add(&x->argv, "--config");
			add(&x->argv, "router.yaml");
			add_int(&x->argv, "--port", PORT_LITELLM);
			c->litellm = 1;
		}
		return 0;
	} else {
		router *x;
		if (!uniform(c, agg, nagg, why, sizeof(why)) &&
		    (rc = cannot(
			 c, "send every replica the same share (round_robin)",
			 "model %s: sglang_router has no routing weights and the plan gives replicas different shares (%s each)",
			 shown(m->name), why)))
			return rc;
		x = new_router(c, "sglang_router", m->name);
		x->port = PORT_ROUTER + c->nports++;
		add(&x->argv, "python");
		add(&x->argv, "-m");
		add(&x->argv, "sglang_router.launch_router");
		add(&x->argv, "--worker-urls");
		for (int i = 0; i < nagg; i++)
			for (int r = 0; r < c->p->groups[agg[i]].nreplicas; r++)
				add_input(&x->argv, serving(c, agg[i], r)->url);
	}
	{
		router *x = &c->rt[c->nrt - 1];
		add(&x->argv, "--policy");
		add(&x->argv, "round_robin");
		add(&x->argv, "--host");
		add(&x->argv, "0.0.0.0");
		add_int(&x->argv, "--port", x->port);
	}
	return 0;
}

/* A split between models that LiteLLM's model group expresses: vLLM, and
 * every group that takes ingress aggregated (behind the LiteLLM proxy, not
 * a prefill/decode router). */
static int model_group_ok(const ctx *c)
{
	if (!c->vllm)
		return 0;
	for (int g = 0; g < c->p->ngroups; g++)
		if (c->p->groups[g].role != HX_ROLE_AGGREGATED &&
		    ingress_weight(c->p, c->p->groups[g].name) > 0)
			return 0;
	return 1;
}

/* What no router expresses: per-class weights, splits between models
 * (but LiteLLM's model group), cascades, hops. */
static int plan_routing(ctx *c)
{
	int rc, nmodels = 0;
	char split[256] = "";
	size_t k = 0;

	for (int i = 1; i < c->p->ningress; i++)
		if (strcmp(c->p->ingress[i].from, c->p->ingress[0].from)) {
			if ((rc = cannot(
				 c, "sum each group's weights over the classes",
				 "the plan routes request classes differently, and the router sees no classes")))
				return rc;
			break;
		}
	for (int i = 0; i < c->p->nmodels; i++) {
		double w = 0;
		for (int g = 0; g < c->p->ngroups; g++)
			if (strcmp(c->p->groups[g].model, c->p->models[i].name) == 0)
				w += ingress_weight(c->p, c->p->groups[g].name);
		if (w > 0) {
			if (k < sizeof(split))
				k += (size_t)snprintf(split + k, sizeof(split) - k, "%s%s %.6g",
						      nmodels ? ", " : "",
						      shown(c->p->models[i].name), w);
			nmodels++;
		}
	}
	if (c->p->ncascade > 0) {
		if ((rc = cannot(
			 c, "route each model's requests to that model only",
			 "the plan is a cascade of %d models, and the router does not escalate requests by judge score",
			 c->p->ncascade)))
			return rc;
	} else if (nmodels > 1 && model_group_ok(c)) {
		c->group = 1; /* LiteLLM's model group spreads them */
	} else if (
	    nmodels > 1 &&
	    (rc = cannot(
		 c, "route each request to the model it names",
		 "the plan splits requests between models (%s), and only vLLM's LiteLLM router, in front of aggregated groups, spreads one model group over several models",
		 split)))
		return rc;
	if (c->p->nhops > 0 &&
	    (rc = cannot(
		 c, "run every replica's stages in its own pipeline",
		 "the plan sends requests between the stages of different replicas (%d hops), which %s cannot",
		 c->p->nhops, engine_name(c))))
		return rc;
	return 0;
}

/* ---- output ---- */

static json_t *argv_json(const args *v)
{
	json_t *a = json_array();
	for (int i = 0; i < v->n; i++)
		json_array_append_new(a, json_string(v->a[i].s));
	return a;
}

static void line(hx_buf *b, json_t *v)
{
	char *s = json_dumps(v, JSON_REAL_PRECISION(10));
	hx_buf_printf(b, "%s\n", s ? s : "{}");
	free(s);
	json_decref(v);
}

static json_t *litellm_json(const ctx *c)
{
	json_t *cfg = json_object(), *list = json_array(), *rs = json_object();

	for (int i = 0; i < c->ndep; i++) {
		const deployment *d = &c->dep[i];
		json_t *e = json_object(), *lp = json_object();
		char *model = xprintf("hosted_vllm/%s", d->model);
		json_object_set_new(e, "model_name", json_string(d->model_name));
		json_object_set_new(lp, "model", json_string(model));
		json_object_set_new(lp, "api_base", json_string(d->api_base));
		if (d->has_weight)
			json_object_set_new(lp, "weight", json_real(d->weight));
		json_object_set_new(e, "litellm_params", lp);
		json_array_append_new(list, e);
		free(model);
	}
	json_object_set_new(cfg, "model_list", list);
	json_object_set_new(rs, "routing_strategy", json_string("simple-shuffle"));
	json_object_set_new(cfg, "router_settings", rs);
	return cfg;
}

static char *json_lines(const ctx *c)
{
	hx_buf b = {0};

	for (int i = 0; i < c->npr; i++) {
		const proc *x = &c->pr[i];
		const hx_plan_group *g = &c->p->groups[x->g];
		json_t *o = json_object(), *gp = json_array(), *env = json_object();

		json_object_set_new(o, "group", json_string(g->name));
		json_object_set_new(o, "replica", json_string(g->replicas[x->r].id));
		json_object_set_new(o, "stage", json_integer(x->stage));
		json_object_set_new(o, "node", json_string(x->node));
		json_object_set_new(o, "host", json_string(c->h[x->host].addr));
		for (int k = 0; k < x->ngpus; k++)
			json_array_append_new(gp, json_integer(x->gpus[k]));
		json_object_set_new(o, "gpus", gp);
		for (int k = 0; k < x->nenv; k++)
			json_object_set_new(env, x->env[k].name, json_string(x->env[k].value));
		json_object_set_new(o, "env", env);
		json_object_set_new(o, "argv", argv_json(&x->argv));
		json_object_set_new(o, "url", x->url ? json_string(x->url) : json_null());
		line(&b, o);
	}
	for (int i = 0; i < c->nrt; i++) {
		const router *x = &c->rt[i];
		json_t *o = json_object(), *r = json_object();
		json_object_set_new(r, "engine", json_string(x->engine));
		if (x->model)
			json_object_set_new(r, "model", json_string(x->model));
		json_object_set_new(r, "argv", argv_json(&x->argv));
		json_object_set_new(r, "port", json_integer(x->port));
		if (strcmp(x->engine, "litellm") == 0)
			json_object_set_new(r, "config", litellm_json(c));
		json_object_set_new(o, "router", r);
		line(&b, o);
	}
	return b.s ? b.s : hx_xstrdup("");
}

/* An argv word for sh: quoted when it comes from the inputs or holds
 * anything but plain characters.  *DOLLAR is set when a quoted word holds
 * '$' or '`', which shellcheck would take for a forgotten expansion. */
static void sh_word(hx_buf *b, const char *s, int input, int *dollar)
{
	int plain = *s != '\0';
	for (const char *t = s; *t && plain; t++)
		plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			       "_-.,:/=@%+",
			       *t) != NULL;
	if (input || !plain) {
		char *q = hx_shell_quote(s);
		hx_buf_printf(b, "%s", q);
		free(q);
		if (strpbrk(s, "$`"))
			*dollar = 1;
	} else {
		hx_buf_printf(b, "%s", s);
	}
}

/* The script: header, then BODY (taken over). */
static char *sh_script(const ctx *c, const char *what, char *body, int dollar)
{
	hx_buf b = {0};

	hx_buf_printf(
	    &b,
	    "#!/bin/bash\n# %s\n# Written by hexplan export --to launch --engine %s for %s %s.\n",
	    what, c->vllm ? "vllm" : "sglang", c->vllm ? "vLLM" : "SGLang", c->version);
	if (dollar)
		hx_buf_printf(
		    &b, "# Names from the inputs are quoted: their '$' and '`' stay literal.\n"
			"# shellcheck disable=SC2016\n");
	hx_buf_printf(&b, "set -eu\n%s", body ? body : "");
	free(body);
	return b.s;
}

/* The end of a script that started processes in the background: bash's
 * `wait -n` returns when the first of them exits, and since servers and
 * routers run until stopped, that is a failure: the others are stopped and
 * the script fails (a plain `wait` would wait on the rest and exit 0). */
static void sh_wait_any(hx_buf *b, const char *what)
{
	hx_buf_printf(
	    b,
	    "\n# %s run until stopped: the first to exit fails the script\n"
	    "status=0\n"
	    "wait -n || status=$?\n"
	    "echo \"$0: a process exited (status $status): stopping the others\" >&2\n"
	    "jobs -p | xargs -r kill 2>/dev/null || true\n"
	    "wait || true\n"
	    "exit $((status == 0 ? 1 : status))\n",
	    what);
}

/* The Hugging Face token for gated models: HF_TOKEN from the environment,
 * else the file `hf auth login` writes, passed to the servers. */
static void sh_hf_token(hx_buf *b)
{
	hx_buf_printf(b, "\n# gated models: HF_TOKEN, else the token `hf auth login` saved\n"
			 "token_file=${HF_HOME:-$HOME/.cache/huggingface}/token\n"
			 "if [ -z \"${HF_TOKEN:-}\" ] && [ -r \"$token_file\" ]; then\n"
			 "\tHF_TOKEN=$(cat \"$token_file\")\n"
			 "fi\n"
			 "if [ -n \"${HF_TOKEN:-}\" ]; then\n"
			 "\texport HF_TOKEN\n"
			 "fi\n");
}

/* ARGV as one background command line: "word word ... &". */
static void sh_background(hx_buf *b, const args *argv, int *dollar)
{
	for (int k = 0; k < argv->n; k++) {
		if (k)
			hx_buf_printf(b, " ");
		sh_word(b, argv->a[k].s, argv->a[k].input, dollar);
	}
	hx_buf_printf(b, " &\n");
}

static char *host_script(const ctx *c, int hi)
{
	hx_buf b = {0};
	char what[256];
	int dollar = 0;

	snprintf(what, sizeof(what),
		 "The serving processes of host %s (its k-th serves HTTP on port %d + k).",
		 shown(c->h[hi].addr), PORT_HTTP);
	sh_hf_token(&b);
	for (int i = 0; i < c->npr; i++) {
		const proc *x = &c->pr[i];
		const hx_plan_group *g = &c->p->groups[x->g];
		if (x->host != hi)
			continue;
		hx_buf_printf(&b, "\n# group %s (%s), replica %s, stage %d, node %s",
			      shown(g->name), hx_role_name(g->role),
			      shown(g->replicas[x->r].id), x->stage, shown(x->node));
		if (x->nnodes > 1)
			hx_buf_printf(&b, ", rank %d of %d", x->rank, x->nnodes);
		if (x->port)
			hx_buf_printf(&b, ", port %d", x->port);
		hx_buf_printf(&b, "\n");
		for (int k = 0; k < x->nenv; k++) {
			hx_buf_printf(&b, "%s=", x->env[k].name);
			sh_word(&b, x->env[k].value, 1, &dollar);
			hx_buf_printf(&b, " ");
		}
		sh_background(&b, &x->argv, &dollar);
	}
	sh_wait_any(&b, "servers");
	return sh_script(c, what, b.s, dollar);
}

static void yaml_str(hx_buf *b, const char *s)
{
	json_t *v = json_string(s);
	char *t = v ? json_dumps(v, JSON_ENCODE_ANY) : NULL;
	hx_buf_printf(b, "%s", t ? t : "\"\"");
	free(t);
	json_decref(v);
}

static char *router_yaml(const ctx *c)
{
	hx_buf b = {0};

	hx_buf_printf(&b, "# LiteLLM proxy config written by hexplan export --to launch: one\n"
			  "# deployment per replica, weighted by the plan's ingress share.\n");
	if (c->group)
		hx_buf_printf(
		    &b,
		    "# Clients ask for model \"%s\" to be spread over the plan's models\n"
		    "# by its weights, or name one model.\n",
		    MODEL_GROUP);
	hx_buf_printf(&b, "model_list:\n");
	for (int i = 0; i < c->ndep; i++) {
		const deployment *d = &c->dep[i];
		char *model = xprintf("hosted_vllm/%s", d->model);
		hx_buf_printf(&b, "  - model_name: ");
		yaml_str(&b, d->model_name);
		hx_buf_printf(&b, "\n    litellm_params:\n      model: ");
		yaml_str(&b, model);
		hx_buf_printf(&b, "\n      api_base: ");
		yaml_str(&b, d->api_base);
		hx_buf_printf(&b, "\n");
		if (d->has_weight)
			hx_buf_printf(&b, "      weight: %.6g\n", d->weight);
		free(model);
	}
	hx_buf_printf(&b, "router_settings:\n  routing_strategy: simple-shuffle\n");
	return b.s;
}

static char *router_script(const ctx *c)
{
	hx_buf b = {0};
	int dollar = 0;

	if (c->litellm)
		hx_buf_printf(&b, "here=$(cd \"$(dirname \"$0\")\" && pwd)\n");
	if (c->nrt == 0) {
		hx_buf_printf(&b, "\n# no router: the plan has nothing to route\n");
		return sh_script(c, "The router(s) in front of the serving processes.", b.s,
				 dollar);
	}
	/* a router started before its servers marks them down or fails */
	hx_buf_printf(&b, "\n# start when every server answers GET /health\nservers=(");
	for (int i = 0; i < c->npr; i++)
		if (c->pr[i].url) {
			hx_buf_printf(&b, "\n\t");
			sh_word(&b, c->pr[i].url, 1, &dollar);
		}
	hx_buf_printf(&b, "\n)\n"
			  "for url in \"${servers[@]}\"; do\n"
			  "\tuntil curl -fsS -o /dev/null \"$url/health\"; do\n"
			  "\t\techo \"$0: waiting for $url\" >&2\n"
			  "\t\tsleep 10\n"
			  "\tdone\n"
			  "done\n");
	for (int i = 0; i < c->nrt; i++) {
		const router *x = &c->rt[i];
		hx_buf_printf(&b, "\n# %s", x->engine);
		if (x->model)
			hx_buf_printf(&b, " for model %s", shown(x->model));
		hx_buf_printf(&b, ", port %d\n", x->port);
		if (strcmp(x->engine, "litellm") == 0) {
			hx_buf_printf(&b,
				      "litellm --config \"$here/router.yaml\" --port %d &\n",
				      x->port);
			continue;
		}
		sh_background(&b, &x->argv, &dollar);
	}
	sh_wait_any(&b, "routers");
	return sh_script(c, "The router(s) in front of the serving processes.", b.s, dollar);
}

static void name_scripts(ctx *c)
{
	for (int i = 0; i < c->nh; i++) {
		char label[64];
		hx_dns_label(label, sizeof(label), c->h[i].addr);
		snprintf(c->h[i].file, sizeof(c->h[i].file), "launch-%s.sh", label);
		for (int n = 2;; n++) {
			int clash = 0;
			for (int j = 0; j < i && !clash; j++)
				clash = strcmp(c->h[j].file, c->h[i].file) == 0;
			if (!clash)
				break;
			snprintf(c->h[i].file, sizeof(c->h[i].file), "launch-%s-%d.sh", label,
				 n);
		}
	}
}

static void release(ctx *c)
{
	for (int i = 0; i < c->npr; i++) {
		free(c->pr[i].gpus);
		free(c->pr[i].url);
		for (int k = 0; k < c->pr[i].nenv; k++)
			free(c->pr[i].env[k].value);
		args_free(&c->pr[i].argv);
	}
	free(c->pr);
	free(c->h);
	for (int i = 0; i < c->nrt; i++)
		args_free(&c->rt[i].argv);
	free(c->rt);
	for (int i = 0; i < c->ndep; i++)
		free(c->dep[i].api_base);
	free(c->dep);
}

static int check_words(ctx *c)
{
	/* A word that starts with '-' would be read as an option. */
	for (int i = 0; i < c->npr; i++) {
		const proc *x = &c->pr[i];
		const char *path = model_path(c, &c->p->groups[x->g]);
		if (path[0] == '-')
			return hx_errf(
			    c->err, HX_EINPUT,
			    "model %s: a model path that starts with '-' would be read as an option",
			    shown(path));
		if (c->h[x->host].addr[0] == '-')
			return hx_errf(
			    c->err, HX_EINPUT,
			    "host %s: a host that starts with '-' would be read as an option",
			    shown(c->h[x->host].addr));
	}
	return 0;
}

int hx_export_launch(const hx_plan *p, const hx_export_opts *o, hx_export_out *out, hx_err *err)
{
	ctx c;
	int rc = 0, *list = NULL;

	memset(&c, 0, sizeof(c));
	c.p = p;
	c.o = o;
	c.out = out;
	c.err = err;
	c.vllm = o->engine == HX_ENGINE_VLLM;
	c.version = hx_export_engine_version(o, c.vllm ? HX_EXPORT_VLLM_LAUNCH_VERSION
						       : HX_EXPORT_SGLANG_VERSION);
	if (p->ngroups < 1)
		return hx_errf(err, HX_EINPUT, "the plan has no groups: nothing to launch");
	for (int g = 0; g < p->ngroups && !rc; g++)
		rc = build_group(&c, g);
	if (!rc)
		rc = check_words(&c);
	if (!rc) {
		fill_procs(&c);
		rc = plan_routing(&c);
	}
	list = hx_xcalloc((size_t)(3 * p->ngroups), sizeof(int));
	for (int m = 0; m < p->nmodels && !rc; m++)
		rc = model_routers(&c, &p->models[m], list);
	free(list);
	if (!rc) {
		if (!o->format_sh) {
			hx_export_add(out, "launch.jsonl", json_lines(&c));
		} else {
			name_scripts(&c);
			for (int i = 0; i < c.nh; i++)
				hx_export_add(out, c.h[i].file, host_script(&c, i));
			hx_export_add(out, "router.sh", router_script(&c));
			if (c.litellm)
				hx_export_add(out, "router.yaml", router_yaml(&c));
		}
	}
	release(&c);
	return rc;
}
