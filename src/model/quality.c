/* quality: see quality.h. */
#include "config.h"

#include "model/quality.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void hx_quality_release(hx_quality *q)
{
	free(q->prompt);
	free(q->output);
	free(q->score);
	memset(q, 0, sizeof(*q));
}

static int skipped(const hx_quality *q, const double *theta, int m)
{
	return m + 1 < q->nmodels && theta[m] > 100;
}

/* The model that answers sample S under THETA. */
static int answerer(const hx_quality *q, const double *theta, int s)
{
	for (int m = 0; m + 1 < q->nmodels; m++)
		if (!skipped(q, theta, m) && hx_quality_score(q, m, s) >= theta[m])
			return m;
	return q->nmodels - 1;
}

void hx_cascade_evaluate(const hx_quality *q, const double *theta, hx_cascade_eval *out)
{
	double n = q->nsamples > 0 ? q->nsamples : 1, sum = 0;
	long cnt[HX_QUALITY_MAX_MODELS] = {0};

	memset(out, 0, sizeof(*out));
	for (int s = 0; s < q->nsamples; s++) {
		int m = answerer(q, theta, s);
		cnt[m]++;
		sum += hx_quality_score(q, m, s);
	}
	out->quality = sum / n;
	/* reach[i] = answered by i or later, unless i is skipped: counts, so
	 * the fractions are exact ratios of integers. */
	{
		long later = 0;
		for (int m = q->nmodels - 1; m >= 0; m--) {
			long reach = later + cnt[m];
			out->answer[m] = cnt[m] / n;
			out->reach[m] = skipped(q, theta, m) ? 0 : reach / n;
			out->escalate[m] = reach > 0 && !skipped(q, theta, m)
					       ? (double)later / (double)reach
					       : 0;
			later = reach;
		}
	}
	for (int m = 0; m < q->nmodels; m++)
		out->stages += out->reach[m] > 0;
}

int hx_cascade_model_workload(const hx_quality *q, const hx_workload *w, const double *theta,
			      int m, hx_workload *out, hx_err *err)
{
	hx_tw *pp = hx_xmalloc(((size_t)q->nsamples + 1) * sizeof(hx_tw));
	hx_tw *po = hx_xmalloc(((size_t)q->nsamples + 1) * sizeof(hx_tw));
	int n = 0;

	for (int s = 0; s < q->nsamples; s++)
		if (!theta || (answerer(q, theta, s) >= m && !skipped(q, theta, m))) {
			pp[n] = (hx_tw){q->prompt[s], 1};
			po[n++] = (hx_tw){q->output[s], 1};
		}
	memset(out, 0, sizeof(*out));
	if (n == 0) {
		free(pp);
		free(po);
		return hx_errf(err, HX_EINFEASIBLE,
			       "no request of the quality profile reaches %s", q->model[m]);
	}
	hx_strlcpy(out->model, q->model[m], sizeof(out->model));
	out->rate_rps = w->rate_rps * n / q->nsamples;
	out->arrival = w->arrival;
	out->cv = w->cv;
	out->slo = w->slo;
	out->serving = w->serving;
	out->prefix_tokens = w->prefix_tokens;
	out->prefix_groups = w->prefix_groups;
	out->prefix_users = w->prefix_users;
	hx_dist_from_pairs(&out->prompt, pp, n);
	hx_dist_from_pairs(&out->output, po, n);
	return 0;
}

double hx_quality_mean(const hx_quality *q, int m)
{
	double sum = 0;
	for (int s = 0; s < q->nsamples; s++)
		sum += hx_quality_score(q, m, s);
	return q->nsamples > 0 ? sum / q->nsamples : 0;
}

double hx_route_quality(const hx_quality *q, const double *frac)
{
	double sum = 0;
	for (int m = 0; m < q->nmodels; m++)
		sum += frac[m] * hx_quality_mean(q, m);
	return sum;
}
