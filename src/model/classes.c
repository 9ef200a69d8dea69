/* classes: a workload's length classes (classes.h). */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/classes.h"

/* ---- length classes ------------------------------------------------------- */

#define QPOINTS 60

static void dist_copy(hx_dist *dst, const hx_dist *src)
{
	*dst = *src;
	if (src->nb > 0) {
		dst->tokens = hx_xmalloc((size_t)src->nb * sizeof(double));
		dst->weight = hx_xmalloc((size_t)src->nb * sizeof(double));
		memcpy(dst->tokens, src->tokens, (size_t)src->nb * sizeof(double));
		memcpy(dst->weight, src->weight, (size_t)src->nb * sizeof(double));
	}
	dst->cum = NULL;
	hx_dist_index(dst);
}

/* Lengths PTS[A..B) (sorted, equal weights) as a bucket distribution. */
static void dist_from_points(hx_dist *d, const double *pts, int a, int b)
{
	memset(d, 0, sizeof(*d));
	d->kind = HX_DIST_BUCKETS;
	d->tokens = hx_xcalloc((size_t)(b - a), sizeof(double));
	d->weight = hx_xcalloc((size_t)(b - a), sizeof(double));
	for (int i = a; i < b; i++) {
		if (d->nb > 0 && d->tokens[d->nb - 1] == pts[i]) {
			d->weight[d->nb - 1] += 1.0 / (b - a);
			continue;
		}
		d->tokens[d->nb] = pts[i];
		d->weight[d->nb++] = 1.0 / (b - a);
	}
	hx_dist_index(d);
	d->mean = hx_dist_mean(d);
	d->p50 = hx_dist_quantile(d, 0.5);
	d->max = d->tokens[d->nb - 1];
}

/* Split D into up to NB quantile buckets: START[i] the first point of each,
 * PTS the QPOINTS quantile points; returns the bucket count. */
static int buckets(const hx_dist *d, int nb, double *pts, int *start)
{
	int n = 0;

	for (int i = 0; i < QPOINTS; i++)
		pts[i] = fmax(1, floor(hx_dist_quantile(d, (i + 0.5) / QPOINTS) + 0.5));
	for (int b = 0; b < nb; b++) {
		int at = b * QPOINTS / nb;
		/* Equal lengths stay in one bucket: a range cannot split them. */
		while (at > 0 && at < QPOINTS && pts[at] == pts[at - 1])
			at++;
		if (at >= QPOINTS || (n > 0 && at <= start[n - 1]))
			continue;
		start[n++] = at;
	}
	start[n] = QPOINTS;
	return n;
}

int hx_len_classes(const hx_workload *w, int nbuckets, hx_len_class **out)
{
	double pp[QPOINTS], op[QPOINTS];
	int ps[QPOINTS + 1], os[QPOINTS + 1], np, no, n = 0;
	hx_len_class *c;

	if (w->nclasses > 0) {
		c = hx_xcalloc((size_t)w->nclasses, sizeof(*c));
		for (int i = 0; i < w->nclasses; i++) {
			hx_strlcpy(c[i].name, w->classes[i].name, sizeof(c[i].name));
			c[i].share = w->classes[i].share;
			dist_copy(&c[i].prompt, &w->classes[i].prompt);
			dist_copy(&c[i].output, &w->classes[i].output);
		}
		*out = c;
		return w->nclasses;
	}
	if (nbuckets < 1)
		nbuckets = 1;
	if (nbuckets > QPOINTS)
		nbuckets = QPOINTS;
	np = buckets(&w->prompt, nbuckets, pp, ps);
	no = buckets(&w->output, nbuckets, op, os);
	c = hx_xcalloc((size_t)(np * no), sizeof(*c));
	for (int i = 0; i < np; i++)
		for (int j = 0; j < no; j++) {
			hx_len_class *k = &c[n++];
			snprintf(k->name, sizeof(k->name), "p%do%d", i, j);
			k->share = (double)(ps[i + 1] - ps[i]) / QPOINTS * (os[j + 1] - os[j]) /
				   QPOINTS;
			dist_from_points(&k->prompt, pp, ps[i], ps[i + 1]);
			dist_from_points(&k->output, op, os[j], os[j + 1]);
			k->prompt_lo = i == 0 ? 0 : (int)pp[ps[i]];
			k->prompt_hi = i == np - 1 ? HX_CLASS_INF : (int)pp[ps[i + 1]];
			k->output_lo = j == 0 ? 0 : (int)op[os[j]];
			k->output_hi = j == no - 1 ? HX_CLASS_INF : (int)op[os[j + 1]];
		}
	*out = c;
	return n;
}

void hx_len_classes_free(hx_len_class *c, int n)
{
	for (int i = 0; i < n; i++) {
		hx_dist_release(&c[i].prompt);
		hx_dist_release(&c[i].output);
	}
	free(c);
}

hx_workload hx_len_class_workload(const hx_workload *w, const hx_len_class *c)
{
	hx_workload x = *w;
	x.prompt = c->prompt;
	x.output = c->output;
	x.classes = NULL;
	x.nclasses = 0;
	x.stages = NULL; /* a view: the rate is the class's own */
	x.nstages = 0;
	return x;
}
