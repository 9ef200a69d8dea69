/* replan_kv: the KV links' limits on a disaggregated plan that replan
 * adapts (see replan_int.h), as the disagg planner scores a role
 * assignment: source -> prefill replicas (their capacity) -> their node's
 * NIC -> the link between the two nodes -> the decode node's NIC -> decode
 * replicas (their capacity) -> sink, each NIC and link a capacity in
 * requests/s (bandwidth / KV bytes of a mean prompt) shared by every pair
 * that crosses it; prefill and decode replicas on one node pass the KV
 * inside it, unbounded. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/flow.h"
#include "planners/replan_int.h"

double hx_replan_kv_bytes(const hx_plan *p, const hx_workload *w)
{
	hx_dtype kvdt = HX_DT_FP16;

	for (int g = 0; g < p->ngroups; g++)
		if (p->groups[g].role == HX_ROLE_PREFILL) {
			kvdt = p->groups[g].kvdt;
			break;
		}
	return hx_kv_bytes_per_token(&p->models[0], kvdt) * hx_dist_mean(&w->prompt);
}

/* Requests/s whose KV GBPS gigabits per second move. */
static double kv_rps(double gbps, double kv_bytes)
{
	return hx_gbps_bytes_s(gbps) / fmax(kv_bytes, 1);
}

/* The node of replica R's first GPU in CL (-1: none). */
static int replica_node(const hx_plan_replica *r, const hx_cluster *cl)
{
	return r->ngpus[0] > 0 ? hx_replan_node(cl, r->gpus[0][0].node) : -1;
}

double hx_replan_kv_limit(const hx_plan *p, const hx_cluster *cl, int node, int prefill,
			  double kv_bytes)
{
	char *peer = hx_xcalloc((size_t)cl->nnodes + 1, 1);
	const hx_role want = prefill ? HX_ROLE_DECODE : HX_ROLE_PREFILL;
	double links = 0, lim;
	int any = 0;

	for (int g = 0; g < p->ngroups; g++)
		if (p->groups[g].role == want)
			for (int r = 0; r < p->groups[g].nreplicas; r++) {
				int b = replica_node(&p->groups[g].replicas[r], cl);
				if (b >= 0)
					peer[b] = 1;
			}
	for (int b = 0; b < cl->nnodes; b++) {
		if (!peer[b])
			continue;
		any = 1;
		if (b == node)
			links = INFINITY;
		else
			links += kv_rps(
			    fmin(hx_cluster_link(cl, node, b).bw_gbps, cl->nodes[b].nic_gbps),
			    kv_bytes);
	}
	free(peer);
	lim = kv_rps(cl->nodes[node].nic_gbps, kv_bytes);
	/* No peer yet (they start beside it): the NIC alone. */
	return isinf(links) ? INFINITY : any ? fmin(lim, links) : lim;
}

/* The flow network over P's prefill and decode replicas. */
typedef struct kvnet {
	hx_graph g;
	int nrep, nn;   /* replicas, nodes of CL */
	int *rg, *rr;   /* replica k: group and index */
	int *rnode;     /* replica k: its node */
	int *redge;     /* replica k: its source or sink edge */
	int *pair_edge; /* nn * nn: the link edge of (a, b), the node's own when a == b; -1 */
	int *ndec;      /* decode replicas per node */
} kvnet;

static void kvnet_release(kvnet *x)
{
	hx_graph_release(&x->g);
	free(x->rg);
	free(x->rr);
	free(x->rnode);
	free(x->redge);
	free(x->pair_edge);
	free(x->ndec);
}

/* The replicas of P's prefill and decode groups, with their nodes. */
static void kvnet_replicas(const hx_plan *p, const hx_cluster *cl, kvnet *x)
{
	int n = 0;

	for (int g = 0; g < p->ngroups; g++)
		if (p->groups[g].role != HX_ROLE_AGGREGATED)
			n += p->groups[g].nreplicas;
	x->rg = hx_xcalloc((size_t)n + 1, sizeof(int));
	x->rr = hx_xcalloc((size_t)n + 1, sizeof(int));
	x->rnode = hx_xcalloc((size_t)n + 1, sizeof(int));
	x->redge = hx_xcalloc((size_t)n + 1, sizeof(int));
	x->ndec = hx_xcalloc((size_t)cl->nnodes + 1, sizeof(int));
	for (int g = 0; g < p->ngroups; g++) {
		if (p->groups[g].role == HX_ROLE_AGGREGATED)
			continue;
		for (int r = 0; r < p->groups[g].nreplicas; r++) {
			int a = replica_node(&p->groups[g].replicas[r], cl);
			if (a < 0)
				continue;
			x->rg[x->nrep] = g;
			x->rr[x->nrep] = r;
			x->rnode[x->nrep++] = a;
			x->ndec[a] += p->groups[g].role == HX_ROLE_DECODE;
		}
	}
}

/* Build the network: 0 source, 1 sink, the replicas, then per node its
 * prefill side, NIC out, NIC in and decode side, then an edge per node
 * pair with prefill replicas on the first and decode ones on the second. */
static void kvnet_build(const hx_plan *p, const hx_cluster *cl, double kv_bytes, kvnet *x)
{
	int nn = cl->nnodes, v0, *hasp, *hasd;
	double inf = 1;

	memset(x, 0, sizeof(*x));
	x->nn = nn;
	kvnet_replicas(p, cl, x);
	for (int k = 0; k < x->nrep; k++)
		inf += p->groups[x->rg[k]].capacity_rps;
	v0 = 2 + x->nrep;
	hx_graph_init(&x->g, v0 + 4 * nn);
	hasp = hx_xcalloc((size_t)nn + 1, sizeof(int));
	hasd = hx_xcalloc((size_t)nn + 1, sizeof(int));
	for (int k = 0; k < x->nrep; k++) {
		int a = x->rnode[k], rv = 2 + k;
		double cap = fmax(0, p->groups[x->rg[k]].capacity_rps);
		if (p->groups[x->rg[k]].role == HX_ROLE_PREFILL) {
			hasp[a] = 1;
			x->redge[k] = hx_graph_add_edge(&x->g, 0, rv, cap);
			hx_graph_add_edge(&x->g, rv, v0 + 4 * a, inf);
		} else {
			hasd[a] = 1;
			hx_graph_add_edge(&x->g, v0 + 4 * a + 3, rv, inf);
			x->redge[k] = hx_graph_add_edge(&x->g, rv, 1, cap);
		}
	}
	x->pair_edge = hx_xmalloc((size_t)nn * nn * sizeof(int) + 1);
	for (int i = 0; i < nn * nn; i++)
		x->pair_edge[i] = -1;
	for (int a = 0; a < nn; a++) {
		double nic = kv_rps(cl->nodes[a].nic_gbps, kv_bytes);
		if (hasp[a])
			hx_graph_add_edge(&x->g, v0 + 4 * a, v0 + 4 * a + 1, nic);
		if (hasd[a])
			hx_graph_add_edge(&x->g, v0 + 4 * a + 2, v0 + 4 * a + 3, nic);
	}
	for (int a = 0; a < nn; a++)
		for (int b = 0; b < nn && hasp[a]; b++) {
			if (!hasd[b])
				continue;
			if (a == b)
				x->pair_edge[a * nn + b] =
				    hx_graph_add_edge(&x->g, v0 + 4 * a, v0 + 4 * a + 3, inf);
			else
				x->pair_edge[a * nn + b] = hx_graph_add_edge(
				    &x->g, v0 + 4 * a + 1, v0 + 4 * b + 2,
				    kv_rps(hx_cluster_link(cl, a, b).bw_gbps, kv_bytes));
		}
	free(hasp);
	free(hasd);
}

/* Ingress to the prefill groups of P by the flow their replicas carry in
 * RES (all traffic; left as it is when nothing flows). */
static void route_ingress(hx_plan *p, const kvnet *x, const hx_flow_result *res)
{
	double *f = hx_xcalloc((size_t)p->ngroups + 1, sizeof(double));

	if (res->value > 0) {
		for (int k = 0; k < x->nrep; k++)
			if (p->groups[x->rg[k]].role == HX_ROLE_PREFILL)
				f[x->rg[k]] += fmax(0, res->flow[x->redge[k]]);
		free(p->ingress);
		p->ingress = NULL;
		p->ningress = 0;
		for (int g = 0; g < p->ngroups; g++) {
			hx_route *rt;
			if (p->groups[g].role == HX_ROLE_DECODE)
				continue;
			rt = hx_plan_add_route(&p->ingress, &p->ningress);
			hx_strlcpy(rt->to, p->groups[g].name, sizeof(rt->to));
			/* aggregated groups: by capacity, as beside the flow */
			rt->weight = p->groups[g].role == HX_ROLE_PREFILL
					 ? f[g]
					 : p->groups[g].capacity_rps * p->groups[g].nreplicas;
		}
		hx_routes_normalize(p->ingress, p->ningress);
	}
	free(f);
}

/* KV routes of P by the flow in RES: each prefill replica of node a sends
 * to the decode replicas of node b in proportion to the flow between the
 * two nodes, spread evenly over b's decode replicas (to all of them when
 * nothing flows from a). */
static void route_kv(hx_plan *p, const hx_cluster *cl, const kvnet *x,
		     const hx_flow_result *res)
{
	int nn = x->nn;

	p->nkv = 0;
	for (int k = 0; k < x->nrep; k++) {
		int a = x->rnode[k], first = p->nkv;
		double out = 0;
		if (p->groups[x->rg[k]].role != HX_ROLE_PREFILL)
			continue;
		for (int b = 0; b < nn; b++)
			if (x->pair_edge[a * nn + b] >= 0)
				out += fmax(0, res->flow[x->pair_edge[a * nn + b]]);
		for (int q = 0; q < x->nrep; q++) {
			int b = x->rnode[q], e = x->pair_edge[a * nn + b];
			double w;
			hx_route *rt;
			if (p->groups[x->rg[q]].role != HX_ROLE_DECODE || e < 0)
				continue;
			w = (out > 0 ? fmax(0, res->flow[e]) / out : 1.0) / x->ndec[b];
			if (w <= 0)
				continue;
			rt = hx_plan_add_route(&p->kv, &p->nkv);
			hx_strlcpy(rt->from, p->groups[x->rg[k]].replicas[x->rr[k]].id,
				   sizeof(rt->from));
			hx_strlcpy(rt->to, p->groups[x->rg[q]].replicas[x->rr[q]].id,
				   sizeof(rt->to));
			rt->weight = w;
			hx_route_set_node_link(rt, cl, a, b);
		}
		hx_routes_normalize(p->kv + first, p->nkv - first);
	}
}

int hx_replan_kv_flow(hx_plan *p, const hx_cluster *cl, const hx_workload *w, int reroute,
		      double *cap, hx_err *err)
{
	kvnet x;
	hx_flow_result res = {0};
	int rc;

	*cap = 0;
	kvnet_build(p, cl, hx_replan_kv_bytes(p, w), &x);
	if ((rc = hx_flow_max(&x.g, 0, 1, &res, err)))
		goto out;
	*cap = res.value;
	if (reroute) {
		route_ingress(p, &x, &res);
		route_kv(p, cl, &x, &res);
	}
out:
	hx_flow_result_release(&res);
	kvnet_release(&x);
	return rc;
}
