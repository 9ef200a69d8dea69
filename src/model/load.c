/* load: the strict loaders of problem.h. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonio.h"
#include "model/quality.h"
#include "model/problem.h"

/* ---- cluster ---------------------------------------------------------- */

static int parse_linkspec(const hx_jr *r, const json_t *v, const char *ptr,
			  hx_linkspec *out)
{
	static const char *const keys[] = {"bw_gbps", "latency_ms", NULL};
	int rc;

	if ((rc = hx_jr_object(r, v, ptr, keys)) ||
	    (rc = hx_jr_pos(r, v, ptr, "bw_gbps", 1, &out->bw_gbps)) ||
	    (rc = hx_jr_num(r, v, ptr, "latency_ms", 0, 0, 1e6, &out->latency_ms)))
		return rc;
	return 0;
}

static int node_index(const hx_cluster *c, const char *name)
{
	for (int i = 0; i < c->nnodes; i++)
		if (strcmp(c->nodes[i].name, name) == 0)
			return i;
	return -1;
}

static int parse_nodes(const hx_jr *r, const json_t *list, const hx_catalog *cat,
		       hx_cluster *c)
{
	static const char *const keys[] = {"name", "gpu", "count", "region", "host",
		"nic_gbps", "usd_per_hour", NULL};
	size_t n, i;
	int rc;

	if ((rc = hx_jr_array(r, list, "/nodes", 0, &n)))
		return rc;
	if (n > HX_MAX_NODES)
		return hx_jr_fail(r, "/nodes", "%zu nodes are more than hexplan's limit of %d", n,
				  HX_MAX_NODES);
	c->nodes = hx_xcalloc(n, sizeof(hx_node));
	for (i = 0; i < n; i++) {
		json_t *v = json_array_get(list, i), *g;
		hx_node *nd = &c->nodes[i];
		char p[64], pg[80];
		long count = 0;

		hx_ptr_index(p, sizeof(p), "/nodes", i);
		if ((rc = hx_jr_object(r, v, p, keys)) ||
		    (rc = hx_jr_str(r, v, p, "name", 1, nd->name, sizeof(nd->name))))
			return rc;
		if (node_index(c, nd->name) >= 0) {
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
		nd->nic_gbps = 100;
		nd->usd_per_hour = nd->gpu.usd_per_hour;
		if ((rc = hx_jr_int(r, v, p, "count", 1, 1, 4096, &count)) ||
		    (rc = hx_jr_str(r, v, p, "region", 0, nd->region, sizeof(nd->region))) ||
		    (rc = hx_jr_str(r, v, p, "host", 0, nd->host, sizeof(nd->host))) ||
		    (rc = hx_jr_pos(r, v, p, "nic_gbps", 0, &nd->nic_gbps)) ||
		    (rc = hx_jr_num(r, v, p, "usd_per_hour", 0, 0, 1e6, &nd->usd_per_hour)))
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
		return hx_jr_fail(r, "/links", "%zu links are more than hexplan's limit of %d", n,
				  HX_MAX_LINKS);
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
		l->a = node_index(c, a);
		l->b = node_index(c, b);
		if (l->a < 0 || l->b < 0) {
			hx_ptr_key(pk, sizeof(pk), p, l->a < 0 ? "a" : "b");
			return hx_jr_fail(r, pk, "unknown node \"%s\"", l->a < 0 ? a : b);
		}
		if (l->a == l->b) {
			hx_ptr_key(pk, sizeof(pk), p, "b");
			return hx_jr_fail(r, pk, "a link must join two different nodes");
		}
		for (size_t j = 0; j < i; j++) {
			hx_link *o = &c->links[j];
			if ((o->a == l->a && o->b == l->b) || (o->a == l->b && o->b == l->a))
				return hx_jr_fail(r, p, "duplicate link between \"%s\" and \"%s\"", a, b);
		}
		l->spec.latency_ms = 0;
		if ((rc = hx_jr_pos(r, v, p, "bw_gbps", 1, &l->spec.bw_gbps)) ||
		    (rc = hx_jr_num(r, v, p, "latency_ms", 0, 0, 1e6, &l->spec.latency_ms)))
			return rc;
		c->nlinks++;
	}
	return 0;
}

static int parse_offers(const hx_jr *r, const json_t *list, const hx_catalog *cat,
			hx_cluster *c)
{
	static const char *const keys[] = {"gpu", "max_count", "usd_per_hour",
		"gpus_per_node", "region", NULL};
	size_t n, i;
	int rc;

	if ((rc = hx_jr_array(r, list, "/offers", 0, &n)))
		return rc;
	if (n > HX_MAX_OFFERS)
		return hx_jr_fail(r, "/offers", "%zu offers are more than hexplan's limit of %d", n,
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
		strcpy(o->region, "default");
		if ((rc = hx_jr_int(r, v, p, "max_count", 1, 1, HX_MAX_OFFER_GPUS, &max_count)) ||
		    (rc = hx_jr_int(r, v, p, "gpus_per_node", 0, 1, 64, &per_node)) ||
		    (rc = hx_jr_num(r, v, p, "usd_per_hour", 0, 0, 1e6, &o->usd_per_hour)) ||
		    (rc = hx_jr_str(r, v, p, "region", 0, o->region, sizeof(o->region))))
			return rc;
		o->max_count = (int)max_count;
		o->gpus_per_node = (int)per_node;
		c->noffers++;
	}
	return 0;
}

int hx_cluster_load(hx_cluster *c, const char *path, const hx_catalog *cat, hx_err *err)
{
	static const char *const top[] = {"version", "nodes", "links", "defaults",
		"offers", NULL};
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
		rc = hx_jr_fail(&r, "/nodes", "%d GPUs are more than hexplan's limit of %d per cluster",
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
	free(c->nodes);
	free(c->links);
	free(c->offers);
	memset(c, 0, sizeof(*c));
}

hx_linkspec hx_cluster_link(const hx_cluster *c, int a, int b)
{
	for (int i = 0; i < c->nlinks; i++) {
		const hx_link *l = &c->links[i];
		if ((l->a == a && l->b == b) || (l->a == b && l->b == a))
			return l->spec;
	}
	return strcmp(c->nodes[a].region, c->nodes[b].region) == 0 ? c->same_region
								    : c->cross_region;
}

int hx_cluster_gpus(const hx_cluster *c)
{
	int n = 0;
	for (int i = 0; i < c->nnodes; i++)
		n += c->nodes[i].count;
	return n;
}

/* ---- length distributions ---------------------------------------------- */

double hx_dist_mean(const hx_dist *d)
{
	if (d->kind == HX_DIST_LOGNORMAL) {
		/* E[min(X, max)] of a lognormal capped at max. */
		double s = d->sigma, lm = log(d->max);
		if (s < 1e-12)
			return fmin(d->p50, d->max);
		return exp(d->mu + s * s / 2) * hx_norm_cdf((lm - d->mu - s * s) / s) +
		       d->max * (1 - hx_norm_cdf((lm - d->mu) / s));
	}
	double m = 0;
	for (int i = 0; i < d->nb; i++)
		m += d->tokens[i] * d->weight[i];
	return m;
}

double hx_dist_quantile(const hx_dist *d, double q)
{
	if (d->kind == HX_DIST_LOGNORMAL)
		return fmin(exp(d->mu + d->sigma * hx_norm_quantile(q)), d->max);
	double acc = 0;
	for (int i = 0; i < d->nb; i++) {
		acc += d->weight[i];
		if (acc >= q - 1e-12)
			return d->tokens[i];
	}
	return d->tokens[d->nb - 1];
}

double hx_dist_sample(const hx_dist *d, hx_rng *r)
{
	double u = hx_rng_uniform(r);

	if (d->kind == HX_DIST_LOGNORMAL) {
		double x = floor(exp(d->mu + d->sigma * hx_norm_quantile(u)) + 0.5);
		return fmax(1, fmin(x, d->max));
	}
	return hx_dist_quantile(d, u);
}

double hx_dist_cv2(const hx_dist *d)
{
	double m, m2 = 0;

	if (d->kind == HX_DIST_LOGNORMAL)
		return exp(d->sigma * d->sigma) - 1;
	m = hx_dist_mean(d);
	for (int i = 0; i < d->nb; i++)
		m2 += d->tokens[i] * d->tokens[i] * d->weight[i];
	return m > 0 ? m2 / (m * m) - 1 : 0;
}

void hx_dist_release(hx_dist *d)
{
	free(d->tokens);
	free(d->weight);
	d->tokens = d->weight = NULL;
	d->nb = 0;
}

static int cmp_tw(const void *a, const void *b)
{
	const hx_tw *x = a, *y = b;
	return (x->t > y->t) - (x->t < y->t);
}

/* Turn N (tokens, weight) pairs into a normalized, sorted, merged bucket
 * distribution.  Takes ownership of P. */
void hx_dist_from_pairs(hx_dist *d, hx_tw *p, int n)
{
	double total = 0;
	int k = 0;

	qsort(p, (size_t)n, sizeof(*p), cmp_tw);
	d->kind = HX_DIST_BUCKETS;
	d->tokens = hx_xmalloc((size_t)n * sizeof(double));
	d->weight = hx_xmalloc((size_t)n * sizeof(double));
	for (int i = 0; i < n; i++) {
		total += p[i].w;
		if (k > 0 && d->tokens[k - 1] == p[i].t) {
			d->weight[k - 1] += p[i].w;
			continue;
		}
		d->tokens[k] = p[i].t;
		d->weight[k++] = p[i].w;
	}
	for (int i = 0; i < k; i++)
		d->weight[i] /= total;
	d->nb = k;
	d->max = d->tokens[k - 1];
	d->p50 = hx_dist_quantile(d, 0.5);
	d->mean = hx_dist_mean(d);
	free(p);
}

static int parse_dist(const hx_jr *r, const json_t *v, const char *ptr,
		      const char *base_dir, int column, hx_dist *d)
{
	static const char *const keys[] = {"dist", "mean", "p50", "max", "buckets",
		"trace", NULL};
	static const char *const dists[] = {"lognormal", NULL};
	int rc, idx = 0, forms;
	json_t *b = json_object_get(v, "buckets"), *t = json_object_get(v, "trace");

	memset(d, 0, sizeof(*d));
	if ((rc = hx_jr_object(r, v, ptr, keys)))
		return rc;
	forms = (json_object_get(v, "dist") != NULL) + (b != NULL) + (t != NULL);
	if (forms != 1)
		return hx_jr_fail(r, ptr, "give exactly one of \"dist\", \"buckets\" or \"trace\"");
	if (b) {
		char p[512];
		size_t n, i;
		hx_tw *pairs;

		if (json_object_size(v) != 1)
			return hx_jr_fail(r, ptr, "\"buckets\" takes no other keys");
		hx_ptr_key(p, sizeof(p), ptr, "buckets");
		if ((rc = hx_jr_array(r, b, p, 1, &n)))
			return rc;
		if (n > HX_MAX_BUCKETS)
			return hx_jr_fail(r, p, "%zu buckets are more than hexplan's limit of %d", n,
					  HX_MAX_BUCKETS);
		pairs = hx_xcalloc(n, sizeof(*pairs));
		for (i = 0; i < n; i++) {
			json_t *e = json_array_get(b, i);
			char pe[540];
			hx_ptr_index(pe, sizeof(pe), p, i);
			if (!json_is_array(e) || json_array_size(e) != 2 ||
			    !json_is_number(json_array_get(e, 0)) ||
			    !json_is_number(json_array_get(e, 1))) {
				free(pairs);
				return hx_jr_fail(r, pe, "must be a pair [tokens, weight]");
			}
			pairs[i].t = json_number_value(json_array_get(e, 0));
			pairs[i].w = json_number_value(json_array_get(e, 1));
			if (!(pairs[i].t >= 1 && pairs[i].t <= 1e7) || pairs[i].t != floor(pairs[i].t)) {
				free(pairs);
				hx_ptr_index(pe, sizeof(pe), p, i);
				strcat(pe, "/0");
				return hx_jr_fail(r, pe, "tokens must be a positive integer");
			}
			if (!(pairs[i].w > 0 && pairs[i].w < 1e12)) {
				free(pairs);
				hx_ptr_index(pe, sizeof(pe), p, i);
				strcat(pe, "/1");
				return hx_jr_fail(r, pe, "weight must be a positive number");
			}
		}
		hx_dist_from_pairs(d, pairs, (int)n);
		return 0;
	}
	if (t) {
		char p[512], file[1024], *path;
		hx_trace tr;
		hx_err terr = {0};
		hx_tw *pairs;

		if (json_object_size(v) != 1)
			return hx_jr_fail(r, ptr, "\"trace\" takes no other keys");
		if ((rc = hx_jr_str(r, v, ptr, "trace", 1, file, sizeof(file))))
			return rc;
		path = hx_path_join(base_dir, file);
		rc = hx_trace_load(&tr, path, &terr);
		free(path);
		if (rc) {
			hx_ptr_key(p, sizeof(p), ptr, "trace");
			return hx_jr_fail(r, p, "%s", terr.msg);
		}
		pairs = hx_xmalloc((size_t)tr.n * sizeof(*pairs));
		for (int i = 0; i < tr.n; i++) {
			pairs[i].t = column ? tr.output[i] : tr.input[i];
			pairs[i].w = 1;
		}
		hx_dist_from_pairs(d, pairs, tr.n);
		hx_trace_release(&tr);
		return 0;
	}
	if ((rc = hx_jr_enum(r, v, ptr, "dist", 1, dists, &idx)) ||
	    (rc = hx_jr_num(r, v, ptr, "p50", 1, 1, 1e7, &d->p50)) ||
	    (rc = hx_jr_num(r, v, ptr, "mean", 1, 1, 1e7, &d->mean)))
		return rc;
	if (d->mean < d->p50) {
		char p[512];
		hx_ptr_key(p, sizeof(p), ptr, "mean");
		return hx_jr_fail(r, p, "must be at least p50 (%g) for a lognormal", d->p50);
	}
	d->kind = HX_DIST_LOGNORMAL;
	d->mu = log(d->p50);
	d->sigma = sqrt(2 * log(d->mean / d->p50));
	d->max = ceil(fmin(exp(d->mu + d->sigma * hx_norm_quantile(0.999)), 1e7));
	if ((rc = hx_jr_num(r, v, ptr, "max", 0, 1, 1e7, &d->max)))
		return rc;
	if (d->max < d->p50) {
		char p[512];
		hx_ptr_key(p, sizeof(p), ptr, "max");
		return hx_jr_fail(r, p, "must be at least p50 (%g)", d->p50);
	}
	return 0;
}

/* Discretize D into N quantile buckets carrying weight W each. */
static void add_quantiles(hx_tw *p, const hx_dist *d, int n, double w)
{
	for (int i = 0; i < n; i++) {
		p[i].t = d->kind == HX_DIST_BUCKETS ? 0 : fmax(1, floor(hx_dist_quantile(d, (i + 0.5) / n) + 0.5));
		p[i].w = w / n;
	}
}

/* The mixture of the classes' distributions, as buckets. */
static void mixture(hx_dist *out, const hx_workload *w, int output)
{
	int total = 0, k = 0;
	hx_tw *p;

	for (int c = 0; c < w->nclasses; c++) {
		const hx_dist *d = output ? &w->classes[c].output : &w->classes[c].prompt;
		total += d->kind == HX_DIST_BUCKETS ? d->nb : 256;
	}
	p = hx_xmalloc((size_t)total * sizeof(*p));
	for (int c = 0; c < w->nclasses; c++) {
		const hx_dist *d = output ? &w->classes[c].output : &w->classes[c].prompt;
		double share = w->classes[c].share;
		if (d->kind == HX_DIST_BUCKETS) {
			for (int i = 0; i < d->nb; i++, k++) {
				p[k].t = d->tokens[i];
				p[k].w = d->weight[i] * share;
			}
		} else {
			add_quantiles(p + k, d, 256, share);
			k += 256;
		}
	}
	memset(out, 0, sizeof(*out));
	hx_dist_from_pairs(out, p, k);
}

void hx_serving_defaults(hx_serving *s)
{
	s->token_budget = 8192;
	s->max_seqs = 256;
	s->mem_util = 0.9;
}

static int parse_classes(const hx_jr *r, const json_t *list, const char *dir,
			 hx_workload *w)
{
	static const char *const keys[] = {"name", "share", "prompt_tokens",
		"output_tokens", NULL};
	size_t n, i;
	double sum = 0;
	int rc;

	if ((rc = hx_jr_array(r, list, "/classes", 1, &n)))
		return rc;
	if (n > HX_MAX_CLASSES)
		return hx_jr_fail(r, "/classes", "%zu classes are more than hexplan's limit of %d", n,
				  HX_MAX_CLASSES);
	w->classes = hx_xcalloc(n, sizeof(hx_class));
	for (i = 0; i < n; i++) {
		json_t *v = json_array_get(list, i), *d;
		hx_class *c = &w->classes[i];
		char p[64], pd[96];

		hx_ptr_index(p, sizeof(p), "/classes", i);
		if ((rc = hx_jr_object(r, v, p, keys)) ||
		    (rc = hx_jr_str(r, v, p, "name", 1, c->name, sizeof(c->name))) ||
		    (rc = hx_jr_num(r, v, p, "share", 1, 1e-9, 1, &c->share)))
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(w->classes[j].name, c->name) == 0) {
				char pn[80];
				hx_ptr_key(pn, sizeof(pn), p, "name");
				return hx_jr_fail(r, pn, "duplicate class name \"%s\"", c->name);
			}
		w->nclasses++;
		for (int k = 0; k < 2; k++) {
			const char *key = k ? "output_tokens" : "prompt_tokens";
			d = json_object_get(v, key);
			if (!d)
				return hx_jr_fail(r, p, "missing required key \"%s\"", key);
			hx_ptr_key(pd, sizeof(pd), p, key);
			if ((rc = parse_dist(r, d, pd, dir, k, k ? &c->output : &c->prompt)))
				return rc;
		}
		sum += c->share;
	}
	if (fabs(sum - 1) > 1e-6)
		return hx_jr_fail(r, "/classes", "shares must sum to 1, not %g", sum);
	return 0;
}

/* The quality profile (quality.h): models, sample requests with their
 * lengths and every model's score, and the floor. */
static int parse_quality(const hx_jr *r, const json_t *v, hx_workload *w)
{
	static const char *const keys[] = {"floor", "models", "samples", NULL};
	static const char *const skeys[] = {"prompt_tokens", "output_tokens", "scores", NULL};
	const json_t *models, *samples;
	hx_quality *q;
	size_t nm, ns;
	int rc;

	if ((rc = hx_jr_object(r, v, "/quality", keys)))
		return rc;
	q = w->quality = hx_xcalloc(1, sizeof(hx_quality));
	if ((rc = hx_jr_num(r, v, "/quality", "floor", 0, 0, 100, &q->floor)))
		return rc;
	if (!(models = json_object_get(v, "models")))
		return hx_jr_fail(r, "/quality", "missing required key \"models\"");
	if ((rc = hx_jr_array(r, models, "/quality/models", 1, &nm)))
		return rc;
	if (nm > HX_QUALITY_MAX_MODELS)
		return hx_jr_fail(r, "/quality/models", "at most %d models, not %zu",
				  HX_QUALITY_MAX_MODELS, nm);
	for (size_t i = 0; i < nm; i++) {
		const json_t *e = json_array_get(models, i);
		char p[64];
		hx_ptr_index(p, sizeof(p), "/quality/models", i);
		if (!json_is_string(e) || json_string_length(e) == 0)
			return hx_jr_fail(r, p, "must be a model name or config.json path");
		if (json_string_length(e) >= sizeof(q->model[0]))
			return hx_jr_fail(r, p, "too long (at most %zu bytes)", sizeof(q->model[0]) - 1);
		hx_strlcpy(q->model[i], json_string_value(e), sizeof(q->model[i]));
		for (size_t j = 0; j < i; j++)
			if (strcmp(q->model[j], q->model[i]) == 0)
				return hx_jr_fail(r, p, "\"%s\" is listed twice", q->model[i]);
		q->nmodels++;
	}
	if (!(samples = json_object_get(v, "samples")))
		return hx_jr_fail(r, "/quality", "missing required key \"samples\"");
	if ((rc = hx_jr_array(r, samples, "/quality/samples", 1, &ns)))
		return rc;
	if (ns > HX_MAX_QUALITY_SAMPLES)
		return hx_jr_fail(r, "/quality/samples", "%zu samples are more than hexplan's limit of %d",
				  ns, HX_MAX_QUALITY_SAMPLES);
	q->prompt = hx_xcalloc(ns, sizeof(double));
	q->output = hx_xcalloc(ns, sizeof(double));
	q->score = hx_xcalloc(ns * nm, sizeof(double));
	q->nsamples = (int)ns;
	for (size_t i = 0; i < ns; i++) {
		const json_t *e = json_array_get(samples, i), *sc;
		char p[64], ps[80];
		long pt = 0, ot = 0;
		size_t n;
		hx_ptr_index(p, sizeof(p), "/quality/samples", i);
		if ((rc = hx_jr_object(r, e, p, skeys)) ||
		    (rc = hx_jr_int(r, e, p, "prompt_tokens", 1, 1, 10000000, &pt)) ||
		    (rc = hx_jr_int(r, e, p, "output_tokens", 1, 1, 10000000, &ot)))
			return rc;
		q->prompt[i] = (double)pt;
		q->output[i] = (double)ot;
		hx_ptr_key(ps, sizeof(ps), p, "scores");
		if (!(sc = json_object_get(e, "scores")))
			return hx_jr_fail(r, p, "missing required key \"scores\"");
		if ((rc = hx_jr_array(r, sc, ps, 0, &n)))
			return rc;
		if (n != nm)
			return hx_jr_fail(r, ps, "%zu scores for %zu models", n, nm);
		for (size_t m = 0; m < nm; m++) {
			const json_t *x = json_array_get(sc, m);
			char px[96];
			double d = json_is_number(x) ? json_number_value(x) : NAN;
			hx_ptr_index(px, sizeof(px), ps, m);
			if (!(d >= 0 && d <= 100))
				return hx_jr_fail(r, px, "must be a score from 0 to 100");
			q->score[m * ns + i] = d;
		}
	}
	return 0;
}

int hx_workload_load(hx_workload *w, const char *path, hx_err *err)
{
	static const char *const top[] = {"version", "model", "rate_rps", "arrival",
		"prompt_tokens", "output_tokens", "slo", "classes", "serving", "quality", NULL};
	static const char *const akeys[] = {"process", "cv", NULL};
	static const char *const procs[] = {"poisson", "gamma", NULL};
	static const char *const skeys[] = {"ttft_ms", "tpot_ms", "percentile",
		"attainment", NULL};
	static const char *const vkeys[] = {"token_budget", "max_seqs",
		"gpu_memory_utilization", NULL};
	hx_jr r = {hx_display_path(path), err};
	json_t *root, *v;
	char *dir = hx_dirname(path);
	int rc;

	memset(w, 0, sizeof(*w));
	w->cv = 1;
	w->slo = (hx_slo){0, 0, 99, 0.99};
	hx_serving_defaults(&w->serving);
	root = hx_json_load_file(path, err);
	if (!root) {
		free(dir);
		return HX_EINPUT;
	}
	if ((rc = hx_jr_object(&r, root, "", top)) || (rc = hx_jr_version(&r, root)) ||
	    (rc = hx_jr_str(&r, root, "", "model", 0, w->model, sizeof(w->model))) ||
	    (rc = hx_jr_pos(&r, root, "", "rate_rps", 1, &w->rate_rps)))
		goto out;
	if ((v = json_object_get(root, "arrival"))) {
		if ((rc = hx_jr_object(&r, v, "/arrival", akeys)) ||
		    (rc = hx_jr_enum(&r, v, "/arrival", "process", 1, procs, &w->arrival)) ||
		    (rc = hx_jr_pos(&r, v, "/arrival", "cv", 0, &w->cv)))
			goto out;
		if (w->arrival == HX_ARRIVAL_POISSON && fabs(w->cv - 1) > 1e-12) {
			rc = hx_jr_fail(&r, "/arrival/cv", "a poisson process has cv 1 (use \"gamma\")");
			goto out;
		}
	}
	v = json_object_get(root, "slo");
	if (!v) {
		rc = hx_jr_fail(&r, "", "missing required key \"slo\"");
		goto out;
	}
	if ((rc = hx_jr_object(&r, v, "/slo", skeys)) ||
	    (rc = hx_jr_pos(&r, v, "/slo", "ttft_ms", 1, &w->slo.ttft_ms)) ||
	    (rc = hx_jr_pos(&r, v, "/slo", "tpot_ms", 1, &w->slo.tpot_ms)) ||
	    (rc = hx_jr_num(&r, v, "/slo", "percentile", 0, 1, 99.99, &w->slo.percentile)) ||
	    (rc = hx_jr_num(&r, v, "/slo", "attainment", 0, 0.01, 1, &w->slo.attainment)))
		goto out;
	if ((v = json_object_get(root, "serving"))) {
		if ((rc = hx_jr_object(&r, v, "/serving", vkeys)) ||
		    (rc = hx_jr_num(&r, v, "/serving", "token_budget", 0, 16, 1e7,
				    &w->serving.token_budget)) ||
		    (rc = hx_jr_num(&r, v, "/serving", "max_seqs", 0, 1, 1e6, &w->serving.max_seqs)) ||
		    (rc = hx_jr_num(&r, v, "/serving", "gpu_memory_utilization", 0, 0.05, 1,
				    &w->serving.mem_util)))
			goto out;
	}
	if ((v = json_object_get(root, "classes"))) {
		if (json_object_get(root, "prompt_tokens") || json_object_get(root, "output_tokens")) {
			rc = hx_jr_fail(&r, "/classes",
					"give lengths per class or for the whole workload, not both");
			goto out;
		}
		if ((rc = parse_classes(&r, v, dir, w)))
			goto out;
		mixture(&w->prompt, w, 0);
		mixture(&w->output, w, 1);
	} else {
		for (int k = 0; k < 2; k++) {
			const char *key = k ? "output_tokens" : "prompt_tokens";
			char p[64];
			v = json_object_get(root, key);
			if (!v) {
				rc = hx_jr_fail(&r, "", "missing required key \"%s\"", key);
				goto out;
			}
			snprintf(p, sizeof(p), "/%s", key);
			if ((rc = parse_dist(&r, v, p, dir, k, k ? &w->output : &w->prompt)))
				goto out;
		}
	}
	if ((v = json_object_get(root, "quality")) && (rc = parse_quality(&r, v, w)))
		goto out;
	rc = HX_OK;
out:
	json_decref(root);
	free(dir);
	if (rc)
		hx_workload_release(w);
	return rc;
}

void hx_workload_release(hx_workload *w)
{
	for (int i = 0; i < w->nclasses; i++) {
		hx_dist_release(&w->classes[i].prompt);
		hx_dist_release(&w->classes[i].output);
	}
	free(w->classes);
	if (w->quality) {
		hx_quality_release(w->quality);
		free(w->quality);
	}
	hx_dist_release(&w->prompt);
	hx_dist_release(&w->output);
	memset(w, 0, sizeof(*w));
}

/* ---- CSV ---------------------------------------------------------------- */

/* Split LINE (modified in place) at commas into at most MAX fields, trimming
 * spaces; returns the number of fields. */
static int csv_split(char *line, char **f, int max)
{
	int n = 0;
	char *p = line;

	for (;;) {
		char *end = strchr(p, ',');
		if (end)
			*end = '\0';
		while (isspace((unsigned char)*p))
			p++;
		char *e = p + strlen(p);
		while (e > p && isspace((unsigned char)e[-1]))
			*--e = '\0';
		if (n < max)
			f[n] = p;
		n++;
		if (!end)
			break;
		p = end + 1;
	}
	return n;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_double(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

/* Days from 1970-01-01 to Y-M-D (proleptic Gregorian). */
static long days_from_civil(long y, long m, long d)
{
	y -= m <= 2;
	long era = (y >= 0 ? y : y - 399) / 400;
	long yoe = y - era * 400;
	long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* "2023-11-16 18:17:03.9799600" to seconds since the epoch. */
static int parse_timestamp(const char *s, double *out)
{
	int y, mo, d, h, mi, n = 0;
	double sec;

	if (sscanf(s, "%d-%d-%d %d:%d:%lf%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 ||
	    s[n] || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 ||
	    mi > 59 || sec < 0 || sec >= 61)
		return -1;
	*out = (double)days_from_civil(y, mo, d) * 86400.0 + h * 3600.0 + mi * 60.0 + sec;
	return 0;
}

/* Iterate over the lines of TEXT: returns the next line (NUL-terminated, CR
 * stripped) or NULL at the end. */
static char *next_line(char **cursor)
{
	char *s = *cursor, *nl;

	if (!s || !*s)
		return NULL;
	nl = strchr(s, '\n');
	if (nl) {
		*nl = '\0';
		*cursor = nl + 1;
	} else {
		*cursor = s + strlen(s);
	}
	if (nl > s && nl[-1] == '\r')
		nl[-1] = '\0';
	else if (!nl && *s && s[strlen(s) - 1] == '\r')
		s[strlen(s) - 1] = '\0';
	return s;
}

int hx_trace_load(hx_trace *t, const char *path, hx_err *err)
{
	char *text, *cur, *line, *f[4];
	int lineno = 1, azure, cap = 0, rc = HX_EINPUT;
	double t0 = 0, prev = 0;

	memset(t, 0, sizeof(*t));
	text = hx_read_file_max(path, HX_MAX_CSV_BYTES, NULL, err);
	path = hx_display_path(path);
	if (!text)
		return HX_EINPUT;
	cur = text;
	line = next_line(&cur);
	if (!line) {
		hx_errf(err, HX_EINPUT, "%s: empty file: expected a CSV header", path);
		goto out;
	}
	if (strncmp(line, "\xEF\xBB\xBF", 3) == 0)
		line += 3;
	if (strcmp(line, "TIMESTAMP,ContextTokens,GeneratedTokens") == 0) {
		azure = 1;
	} else if (strcmp(line, "arrival_s,input_tokens,output_tokens") == 0) {
		azure = 0;
	} else {
		hx_errf(err, HX_EINPUT,
			"%s:1: unknown trace header (expected \"arrival_s,input_tokens,output_tokens\" "
			"or \"TIMESTAMP,ContextTokens,GeneratedTokens\")",
			path);
		goto out;
	}
	while ((line = next_line(&cur))) {
		long in, outp;
		double at;
		lineno++;
		if (!*line)
			continue;
		if (csv_split(line, f, 4) != 3) {
			hx_errf(err, HX_EINPUT, "%s:%d: expected 3 fields", path, lineno);
			goto out;
		}
		if (azure ? parse_timestamp(f[0], &at) : parse_double(f[0], &at)) {
			hx_errf(err, HX_EINPUT, "%s:%d: bad %s \"%s\"", path, lineno,
				azure ? "TIMESTAMP" : "arrival_s", f[0]);
			goto out;
		}
		if (t->n == 0)
			t0 = azure ? at : 0;
		at -= t0;
		if (at < 0) {
			hx_errf(err, HX_EINPUT, "%s:%d: arrival_s must not be negative", path, lineno);
			goto out;
		}
		if (t->n > 0 && at < prev) {
			hx_errf(err, HX_EINPUT, "%s:%d: arrivals must not go back in time (%.6f after %.6f)",
				path, lineno, at, prev);
			goto out;
		}
		if (parse_long(f[1], 1, 10000000, &in)) {
			hx_errf(err, HX_EINPUT, "%s:%d: %s must be a positive integer, not \"%s\"", path,
				lineno, azure ? "ContextTokens" : "input_tokens", f[1]);
			goto out;
		}
		if (parse_long(f[2], 1, 10000000, &outp)) {
			hx_errf(err, HX_EINPUT, "%s:%d: %s must be a positive integer, not \"%s\"", path,
				lineno, azure ? "GeneratedTokens" : "output_tokens", f[2]);
			goto out;
		}
		if (t->n == HX_MAX_REQUESTS) {
			hx_errf(err, HX_EINPUT, "%s:%d: more than hexplan's limit of %d requests", path,
				lineno, HX_MAX_REQUESTS);
			goto out;
		}
		if (t->n == cap) {
			cap = cap ? cap * 2 : 1024;
			t->arrival_s = hx_xrealloc(t->arrival_s, (size_t)cap * sizeof(double));
			t->input = hx_xrealloc(t->input, (size_t)cap * sizeof(int));
			t->output = hx_xrealloc(t->output, (size_t)cap * sizeof(int));
		}
		t->arrival_s[t->n] = at;
		t->input[t->n] = (int)in;
		t->output[t->n] = (int)outp;
		t->n++;
		prev = at;
	}
	if (t->n == 0) {
		hx_errf(err, HX_EINPUT, "%s: the trace has no requests", path);
		goto out;
	}
	rc = HX_OK;
out:
	free(text);
	if (rc)
		hx_trace_release(t);
	return rc;
}

void hx_trace_release(hx_trace *t)
{
	free(t->arrival_s);
	free(t->input);
	free(t->output);
	free(t->cls);
	memset(t, 0, sizeof(*t));
}

int hx_meas_load(hx_meas **out, int *n, const char *path, hx_err *err)
{
	static const char *const phases[] = {"prefill", "decode", "linear", NULL};
	char *text, *cur, *line, *f[9];
	int lineno = 1, cap = 0, rc = HX_EINPUT;
	hx_meas *m = NULL;

	*out = NULL;
	*n = 0;
	text = hx_read_file_max(path, HX_MAX_CSV_BYTES, NULL, err);
	path = hx_display_path(path);
	if (!text)
		return HX_EINPUT;
	cur = text;
	line = next_line(&cur);
	if (!line || strcmp(line, "gpu,model,tp,phase,batch,tokens,context,ms") != 0) {
		hx_errf(err, HX_EINPUT,
			"%s:1: expected the header \"gpu,model,tp,phase,batch,tokens,context,ms\"", path);
		goto out;
	}
	while ((line = next_line(&cur))) {
		hx_meas x = {0};
		long v[4];
		int k;
		lineno++;
		if (!*line)
			continue;
		if (csv_split(line, f, 9) != 8) {
			hx_errf(err, HX_EINPUT, "%s:%d: expected 8 fields", path, lineno);
			goto out;
		}
		if (!*f[0] || hx_strlcpy(x.gpu, f[0], sizeof(x.gpu)) ||
		    !*f[1] || hx_strlcpy(x.model, f[1], sizeof(x.model))) {
			hx_errf(err, HX_EINPUT, "%s:%d: gpu and model must be names", path, lineno);
			goto out;
		}
		for (k = 0; phases[k] && strcmp(phases[k], f[3]); k++)
			;
		if (!phases[k]) {
			hx_errf(err, HX_EINPUT, "%s:%d: phase must be prefill, decode or linear, not \"%s\"",
				path, lineno, f[3]);
			goto out;
		}
		x.phase = k;
		{
			static const char *const names[] = {"tp", "batch", "tokens", "context"};
			static const int col[] = {2, 4, 5, 6};
			static const long lo[] = {1, 1, 1, 0}, hi[] = {1024, 1000000, 10000000, 10000000};
			for (int j = 0; j < 4; j++) {
				if (parse_long(f[col[j]], lo[j], hi[j], &v[j])) {
					hx_errf(err, HX_EINPUT, "%s:%d: %s must be an integer from %ld to %ld, not \"%s\"",
						path, lineno, names[j], lo[j], hi[j], f[col[j]]);
					goto out;
				}
			}
		}
		if (parse_double(f[7], &x.ms) || x.ms <= 0) {
			hx_errf(err, HX_EINPUT, "%s:%d: ms must be a positive number, not \"%s\"", path,
				lineno, f[7]);
			goto out;
		}
		x.tp = (int)v[0];
		x.batch = (int)v[1];
		x.tokens = (int)v[2];
		x.context = (int)v[3];
		x.line = lineno;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			m = hx_xrealloc(m, (size_t)cap * sizeof(*m));
		}
		m[(*n)++] = x;
	}
	if (*n == 0) {
		hx_errf(err, HX_EINPUT, "%s: no measurements", path);
		goto out;
	}
	*out = m;
	m = NULL;
	rc = HX_OK;
out:
	free(text);
	free(m);
	if (rc)
		*n = 0;
	return rc;
}
