/* cluster: the strict loader of cluster files (problem.h), and the
 * expansion of their offers into named nodes. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonio.h"
#include "model/problem.h"

/* ---- cluster ---------------------------------------------------------- */

static int parse_linkspec(const hx_jr *r, const json_t *v, const char *ptr, hx_linkspec *out)
{
	static const char *const keys[] = {"bw_gbps", "latency_ms", NULL};
	int rc;

	if ((rc = hx_jr_object(r, v, ptr, keys)) ||
	    (rc = hx_jr_pos(r, v, ptr, "bw_gbps", 1, &out->bw_gbps)) ||
	    (rc = hx_jr_num(r, v, ptr, "latency_ms", 0, 0, 1e6, &out->latency_ms)))
		return rc;
	return 0;
}

int hx_cluster_node_index(const hx_cluster *c, const char *name)
{
	if (c->node_names)
		return hx_map_get(c->node_names, name);
	for (int i = 0; i < c->nnodes; i++)
		if (strcmp(c->nodes[i].name, name) == 0)
			return i;
	return -1;
}

/* The key of the node pair A, B in link_pairs (either order). */
static void pair_key(char *out, size_t n, int a, int b)
{
	snprintf(out, n, "%d-%d", a < b ? a : b, a < b ? b : a);
}

/* Index C's node names and links (a cluster loaded or expanded); returns
 * the index of the first link whose pair an earlier one has, or -1. */
static int index_cluster(hx_cluster *c)
{
	int dup = -1;

	c->node_names = hx_xcalloc(1, sizeof(hx_map));
	c->link_pairs = hx_xcalloc(1, sizeof(hx_map));
	for (int i = 0; i < c->nnodes; i++)
		hx_map_put(c->node_names, c->nodes[i].name, i);
	for (int i = 0; i < c->nlinks; i++) {
		char k[32];
		pair_key(k, sizeof(k), c->links[i].a, c->links[i].b);
		if (hx_map_put(c->link_pairs, k, i) >= 0 && dup < 0)
			dup = i;
	}
	return dup;
}

/* A node's "interface": a Linux network interface name (at most 15 bytes of
 * letters, digits, '_', '.', ':' and '-', not starting with '-'), which
 * launch scripts give NCCL, Gloo and UCX. */
static int parse_iface(const hx_jr *r, const json_t *v, const char *p, hx_node *nd)
{
	const json_t *x = json_object_get(v, "interface");
	char pk[96];
	const char *s;
	size_t n;

	if (!x)
		return 0;
	hx_ptr_key(pk, sizeof(pk), p, "interface");
	if (!json_is_string(x))
		return hx_jr_fail(r, pk, "must be a string");
	s = json_string_value(x);
	n = strlen(s);
	if (n == 0 || n > 15 || n != json_string_length(x))
		return hx_jr_fail(r, pk,
				  "must be a network interface name of 1 to 15 characters");
	if (s[0] == '-' || strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				     "0123456789_.:-") != n)
		return hx_jr_fail(r, pk,
				  "\"%s\" is not a network interface name (letters, digits, "
				  "'_', '.', ':' and '-', not starting with '-')",
				  s);
	memcpy(nd->iface, s, n + 1);
	return 0;
}

static int parse_nodes(const hx_jr *r, const json_t *list, const hx_catalog *cat, hx_cluster *c)
{
	static const char *const keys[] = {"name",      "gpu",      "count",        "region",
					   "host",      "nic_gbps", "usd_per_hour", "interface",
					   "load_gbps", NULL};
	size_t n, i;
	int rc;

	if ((rc = hx_jr_array(r, list, "/nodes", 0, &n)))
		return rc;
	if (n > HX_MAX_NODES)
		return hx_jr_fail(r, "/nodes", "%zu nodes are more than hexplan's limit of %d",
				  n, HX_MAX_NODES);
	c->nodes = hx_xcalloc(n, sizeof(hx_node));
	for (i = 0; i < n; i++) {
		json_t *v = json_array_get(list, i), *g;
		hx_node *nd = &c->nodes[i];
		char p[64], pg[80];
		long count = 1;

		hx_ptr_index(p, sizeof(p), "/nodes", i);
		if ((rc = hx_jr_object(r, v, p, keys)) ||
		    (rc = hx_jr_str(r, v, p, "name", 1, nd->name, sizeof(nd->name))))
			return rc;
		if (!c->node_names)
			c->node_names = hx_xcalloc(1, sizeof(hx_map));
		if (hx_map_put(c->node_names, nd->name, (int)i) >= 0) {
			char pn[80];
			hx_ptr_key(pn, sizeof(pn), p, "name");
			return hx_jr_fail(r, pn, "duplicate node name \"%s\"", nd->name);
		}
		g = json_object_get(v, "gpu");
		if (!g)
			return hx_jr_fail(r, p, "missing required key \"gpu\"");
		hx_ptr_key(pg, sizeof(pg), p, "gpu");
		if ((rc = hx_gpu_parse(r, g, pg, cat, &nd->gpu)))
			return rc;
		strcpy(nd->region, "default");
		nd->nic_gbps = HX_DEFAULT_NIC_GBPS;
		nd->usd_per_hour = nd->gpu.usd_per_hour;
		nd->load_gbps = HX_DEFAULT_LOAD_GBPS;
		if ((rc = hx_jr_int(r, v, p, "count", 0, 1, 4096, &count)) ||
		    (rc = hx_jr_str(r, v, p, "region", 0, nd->region, sizeof(nd->region))) ||
		    (rc = hx_jr_str(r, v, p, "host", 0, nd->host, sizeof(nd->host))) ||
		    (rc = hx_jr_pos(r, v, p, "nic_gbps", 0, &nd->nic_gbps)) ||
		    (rc = hx_jr_num(r, v, p, "usd_per_hour", 0, 0, 1e6, &nd->usd_per_hour)) ||
		    (rc = hx_jr_pos(r, v, p, "load_gbps", 0, &nd->load_gbps)) ||
		    (rc = parse_iface(r, v, p, nd)))
			return rc;
		nd->count = (int)count;
		c->nnodes++;
	}
	return 0;
}

static int parse_links(const hx_jr *r, const json_t *list, hx_cluster *c)
{
	static const char *const keys[] = {"a", "b", "bw_gbps", "latency_ms", NULL};
	size_t n, i;
	int rc;

	if ((rc = hx_jr_array(r, list, "/links", 0, &n)))
		return rc;
	if (n > HX_MAX_LINKS)
		return hx_jr_fail(r, "/links", "%zu links are more than hexplan's limit of %d",
				  n, HX_MAX_LINKS);
	c->links = hx_xcalloc(n, sizeof(hx_link));
	for (i = 0; i < n; i++) {
		json_t *v = json_array_get(list, i);
		hx_link *l = &c->links[i];
		char p[64], pk[80], a[64], b[64];

		hx_ptr_index(p, sizeof(p), "/links", i);
		if ((rc = hx_jr_object(r, v, p, keys)) ||
		    (rc = hx_jr_str(r, v, p, "a", 1, a, sizeof(a))) ||
		    (rc = hx_jr_str(r, v, p, "b", 1, b, sizeof(b))))
			return rc;
		l->a = hx_cluster_node_index(c, a);
		l->b = hx_cluster_node_index(c, b);
		if (l->a < 0 || l->b < 0) {
			hx_ptr_key(pk, sizeof(pk), p, l->a < 0 ? "a" : "b");
			return hx_jr_fail(r, pk, "unknown node \"%s\"", l->a < 0 ? a : b);
		}
		if (l->a == l->b) {
			hx_ptr_key(pk, sizeof(pk), p, "b");
			return hx_jr_fail(r, pk, "a link must join two different nodes");
		}
		{
			char k[32];
			if (!c->link_pairs)
				c->link_pairs = hx_xcalloc(1, sizeof(hx_map));
			pair_key(k, sizeof(k), l->a, l->b);
			if (hx_map_put(c->link_pairs, k, (int)i) >= 0)
				return hx_jr_fail(
				    r, p, "duplicate link between \"%s\" and \"%s\"", a, b);
		}
		l->spec.latency_ms = 0;
		if ((rc = hx_jr_pos(r, v, p, "bw_gbps", 1, &l->spec.bw_gbps)) ||
		    (rc = hx_jr_num(r, v, p, "latency_ms", 0, 0, 1e6, &l->spec.latency_ms)))
			return rc;
		c->nlinks++;
	}
	return 0;
}

/* The spot keys of offer V at P: "preemptions_per_hour" (> 0) goes with
 * "spot": true and only with it. */
static int parse_spot(const hx_jr *r, const json_t *v, const char *p, hx_offer *o)
{
	json_t *s = json_object_get(v, "spot");
	char pk[96];
	int rc;

	hx_ptr_key(pk, sizeof(pk), p, "spot");
	if (s && !json_is_boolean(s))
		return hx_jr_fail(r, pk, "must be true or false");
	if ((rc = hx_jr_num(r, v, p, "preemptions_per_hour", 0, 0, 3600, &o->preempt_per_hour)))
		return rc;
	hx_ptr_key(pk, sizeof(pk), p, "preemptions_per_hour");
	if (json_is_true(s) && !(o->preempt_per_hour > 0))
		return hx_jr_fail(r, json_object_get(v, "preemptions_per_hour") ? pk : p,
				  "a spot offer needs \"preemptions_per_hour\" above 0");
	if (!json_is_true(s) && json_object_get(v, "preemptions_per_hour"))
		return hx_jr_fail(r, pk, "only a spot offer (\"spot\": true) is preempted");
	return 0;
}

static int parse_offers(const hx_jr *r, const json_t *list, const hx_catalog *cat,
			hx_cluster *c)
{
	static const char *const keys[] = {
	    "gpu",    "max_count", "usd_per_hour", "gpus_per_node",
	    "region", "load_gbps", "spot",         "preemptions_per_hour",
	    NULL};
	size_t n, i;
	int rc;

	if ((rc = hx_jr_array(r, list, "/offers", 0, &n)))
		return rc;
	if (n > HX_MAX_OFFERS)
		return hx_jr_fail(r, "/offers",
				  "%zu offers are more than hexplan's limit of %d", n,
				  HX_MAX_OFFERS);
	c->offers = hx_xcalloc(n, sizeof(hx_offer));
	for (i = 0; i < n; i++) {
		json_t *v = json_array_get(list, i), *g;
		hx_offer *o = &c->offers[i];
		char p[64], pg[80];
		long max_count = 0, per_node = 8;

		hx_ptr_index(p, sizeof(p), "/offers", i);
		if ((rc = hx_jr_object(r, v, p, keys)))
			return rc;
		g = json_object_get(v, "gpu");
		if (!g)
			return hx_jr_fail(r, p, "missing required key \"gpu\"");
		hx_ptr_key(pg, sizeof(pg), p, "gpu");
		if ((rc = hx_gpu_parse(r, g, pg, cat, &o->gpu)))
			return rc;
		o->usd_per_hour = o->gpu.usd_per_hour;
		o->load_gbps = HX_DEFAULT_LOAD_GBPS;
		strcpy(o->region, "default");
		if ((rc = hx_jr_int(r, v, p, "max_count", 1, 0, HX_MAX_OFFER_GPUS,
				    &max_count)) ||
		    (rc = hx_jr_int(r, v, p, "gpus_per_node", 0, 1, 64, &per_node)) ||
		    (rc = hx_jr_num(r, v, p, "usd_per_hour", 0, 0, 1e6, &o->usd_per_hour)) ||
		    (rc = hx_jr_str(r, v, p, "region", 0, o->region, sizeof(o->region))) ||
		    (rc = hx_jr_pos(r, v, p, "load_gbps", 0, &o->load_gbps)) ||
		    (rc = parse_spot(r, v, p, o)))
			return rc;
		o->max_count = (int)max_count;
		o->gpus_per_node = (int)per_node;
		c->noffers++;
	}
	return 0;
}

int hx_cluster_load(hx_cluster *c, const char *path, const hx_catalog *cat, hx_err *err)
{
	static const char *const top[] = {"version",  "nodes",  "links",
					  "defaults", "offers", NULL};
	static const char *const dkeys[] = {"same_region", "cross_region", NULL};
	hx_jr r = {hx_display_path(path), err};
	json_t *root, *v, *d;
	int rc;

	memset(c, 0, sizeof(*c));
	c->same_region = (hx_linkspec){100, 0.02};
	c->cross_region = (hx_linkspec){10, 30};
	root = hx_json_load_file(path, err);
	if (!root)
		return HX_EINPUT;
	if ((rc = hx_jr_object(&r, root, "", top)) || (rc = hx_jr_version(&r, root)))
		goto out;
	if ((v = json_object_get(root, "nodes")) && (rc = parse_nodes(&r, v, cat, c)))
		goto out;
	if ((v = json_object_get(root, "links")) && (rc = parse_links(&r, v, c)))
		goto out;
	if ((v = json_object_get(root, "offers")) && (rc = parse_offers(&r, v, cat, c)))
		goto out;
	if ((d = json_object_get(root, "defaults"))) {
		if ((rc = hx_jr_object(&r, d, "/defaults", dkeys)))
			goto out;
		if ((v = json_object_get(d, "same_region")) &&
		    (rc = parse_linkspec(&r, v, "/defaults/same_region", &c->same_region)))
			goto out;
		if ((v = json_object_get(d, "cross_region")) &&
		    (rc = parse_linkspec(&r, v, "/defaults/cross_region", &c->cross_region)))
			goto out;
	}
	if (hx_cluster_gpus(c) > HX_MAX_CLUSTER_GPUS) {
		rc = hx_jr_fail(&r, "/nodes",
				"%d GPUs are more than hexplan's limit of %d per cluster",
				hx_cluster_gpus(c), HX_MAX_CLUSTER_GPUS);
		goto out;
	}
	if (c->nnodes == 0 && c->noffers == 0) {
		rc = hx_jr_fail(&r, "", "a cluster needs at least one node or offer");
		goto out;
	}
	rc = HX_OK;
out:
	json_decref(root);
	if (rc)
		hx_cluster_release(c);
	return rc;
}

void hx_cluster_release(hx_cluster *c)
{
	if (c->node_names)
		hx_map_release(c->node_names);
	if (c->link_pairs)
		hx_map_release(c->link_pairs);
	free(c->node_names);
	free(c->link_pairs);
	free(c->nodes);
	free(c->links);
	free(c->offers);
	memset(c, 0, sizeof(*c));
}

hx_linkspec hx_cluster_link(const hx_cluster *c, int a, int b)
{
	if (c->link_pairs) {
		char k[32];
		int i;
		pair_key(k, sizeof(k), a, b);
		if ((i = hx_map_get(c->link_pairs, k)) >= 0)
			return c->links[i].spec;
		return strcmp(c->nodes[a].region, c->nodes[b].region) == 0 ? c->same_region
									   : c->cross_region;
	}
	for (int i = 0; i < c->nlinks; i++) {
		const hx_link *l = &c->links[i];
		if ((l->a == a && l->b == b) || (l->a == b && l->b == a))
			return l->spec;
	}
	return strcmp(c->nodes[a].region, c->nodes[b].region) == 0 ? c->same_region
								   : c->cross_region;
}

hx_linkspec hx_cluster_nic_link(const hx_cluster *c, int a, int b)
{
	hx_linkspec l = hx_cluster_link(c, a, b);

	l.bw_gbps = fmin(l.bw_gbps, fmin(c->nodes[a].nic_gbps, c->nodes[b].nic_gbps));
	return l;
}

hx_linkspec hx_gpu_own_link(const hx_gpu *g)
{
	return (hx_linkspec){g->intra_bw_gb_s * 8, g->intra_latency_us * 1e-3};
}

int hx_cluster_gpus(const hx_cluster *c)
{
	int n = 0;
	for (int i = 0; i < c->nnodes; i++)
		n += c->nodes[i].count;
	return n;
}

/* ---- offers as nodes -------------------------------------------------------- */

int hx_offer_node(const char *name, int *j)
{
	char *end;
	long i, k;

	if (strncmp(name, "offer", 5) != 0 || name[5] < '0' || name[5] > '9')
		return -1;
	i = strtol(name + 5, &end, 10);
	if (*end != '-' || end[1] < '0' || end[1] > '9')
		return -1;
	k = strtol(end + 1, &end, 10);
	if (*end || i > 1000000 || k > 1000000)
		return -1;
	if (j)
		*j = (int)k;
	return (int)i;
}

int hx_cluster_load_expanded(hx_cluster *c, const char *path, const hx_catalog *cat,
			     hx_err *err)
{
	hx_cluster x;
	int rc;

	if ((rc = hx_cluster_load(c, path, cat, err)))
		return rc;
	if (c->noffers == 0)
		return 0;
	rc = hx_cluster_expand_offers(c, 0, &x, err);
	hx_cluster_release(c);
	if (rc)
		return rc;
	*c = x;
	return 0;
}

void hx_cluster_without(const hx_cluster *in, const int *gone, hx_cluster *out)
{
	int *to = hx_xmalloc(((size_t)in->nnodes + 1) * sizeof(int));

	memset(out, 0, sizeof(*out));
	out->nodes = hx_xcalloc((size_t)in->nnodes + 1, sizeof(hx_node));
	out->links = hx_xcalloc((size_t)in->nlinks + 1, sizeof(hx_link));
	for (int i = 0; i < in->nnodes; i++) {
		to[i] = gone[i] ? -1 : out->nnodes;
		if (!gone[i])
			out->nodes[out->nnodes++] = in->nodes[i];
	}
	/* Links name nodes by index: renumbered, those of lost nodes dropped. */
	for (int i = 0; i < in->nlinks; i++) {
		hx_link l = in->links[i];
		if (to[l.a] < 0 || to[l.b] < 0)
			continue;
		l.a = to[l.a];
		l.b = to[l.b];
		out->links[out->nlinks++] = l;
	}
	out->offers = hx_xcalloc(1, sizeof(hx_offer));
	out->same_region = in->same_region;
	out->cross_region = in->cross_region;
	index_cluster(out);
	free(to);
}

int hx_cluster_expand_offers(const hx_cluster *in, int owned_free, hx_cluster *out, hx_err *err)
{
	long n = in->nnodes;

	memset(out, 0, sizeof(*out));
	/* Without offers no name collides: a cluster whose offers are nodes
	 * already (hx_cluster_without) expands to itself. */
	for (int i = 0; i < in->nnodes && in->noffers > 0; i++)
		if (hx_offer_node(in->nodes[i].name, NULL) >= 0)
			return hx_errf(
			    err, HX_EINPUT,
			    "node \"%s\" bears a name that offers' nodes take (offerI-J)",
			    in->nodes[i].name);
	for (int i = 0; i < in->noffers; i++)
		n += (in->offers[i].max_count + in->offers[i].gpus_per_node - 1) /
		     in->offers[i].gpus_per_node;
	if (n > HX_OFFER_MAX_NODES)
		return hx_errf(err, HX_EINPUT, "the offers make %ld nodes, more than %d", n,
			       HX_OFFER_MAX_NODES);
	out->nodes = hx_xcalloc((size_t)n + 1, sizeof(hx_node));
	if (in->nnodes > 0)
		memcpy(out->nodes, in->nodes, (size_t)in->nnodes * sizeof(hx_node));
	out->nnodes = in->nnodes;
	if (owned_free)
		for (int i = 0; i < in->nnodes; i++)
			out->nodes[i].usd_per_hour = 0;
	for (int i = 0; i < in->noffers; i++) {
		const hx_offer *o = &in->offers[i];
		for (int j = 0, left = o->max_count; left > 0; j++) {
			hx_node *nd = &out->nodes[out->nnodes++];
			snprintf(nd->name, sizeof(nd->name), "offer%d-%d", i, j);
			hx_strlcpy(nd->region, o->region, sizeof(nd->region));
			nd->gpu = o->gpu;
			nd->count = left < o->gpus_per_node ? left : o->gpus_per_node;
			nd->nic_gbps = HX_DEFAULT_NIC_GBPS;
			nd->usd_per_hour = o->usd_per_hour;
			nd->load_gbps = o->load_gbps;
			nd->preempt_per_hour = o->preempt_per_hour;
			left -= nd->count;
		}
	}
	out->links = hx_xcalloc((size_t)in->nlinks + 1, sizeof(hx_link));
	if (in->nlinks > 0)
		memcpy(out->links, in->links, (size_t)in->nlinks * sizeof(hx_link));
	out->nlinks = in->nlinks;
	out->offers = hx_xcalloc((size_t)in->noffers + 1, sizeof(hx_offer));
	if (in->noffers > 0)
		memcpy(out->offers, in->offers, (size_t)in->noffers * sizeof(hx_offer));
	out->noffers = in->noffers;
	out->same_region = in->same_region;
	out->cross_region = in->cross_region;
	index_cluster(out);
	return 0;
}
