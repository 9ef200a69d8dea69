/*
 * cost_accuracy: how close the cost model's per-layer non-attention time is
 * to kernel timings measured on real GPUs (vidur's profiles in
 * ../shared/data/measured/vidur/compute), per GPU: median and p90 absolute
 * percentage error over every (model, TP, tokens) point.  Then, per GPU, fit
 * the constants on a handful of points with the calibrate code and print the
 * error on the remaining points before and after.
 *
 * usage: bench/cost_accuracy [DATA_DIR [OWN_DIR]]
 *   DATA_DIR (default ../shared/data/measured/vidur/compute): vidur's
 *   profiles (A100, H100, A40);
 *   OWN_DIR (default bench/data): our own tables in vidur's columns,
 *   measured by bench/gpu/kernels.py on GPUs vidur did not profile
 *   (OWN_DIR/h200/mlp-MODEL.csv, 2026-12-04), read where DATA_DIR has no
 *   table for a GPU.  No constant of the catalog was fitted to them: they
 *   are held out.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/calib.h"
#include "model/catalog.h"
#include "model/cost.h"

static const char *const ops[] = {"input_layernorm",
				  "attn_pre_proj",
				  "attn_rope",
				  "attn_post_proj",
				  "post_attention_layernorm",
				  "mlp_up_proj",
				  "mlp_act",
				  "mlp_down_proj",
				  "add",
				  NULL};

static const struct {
	const char *dir, *gpu;
} gpus[] = {{"a100", "a100-80g"}, {"h100", "h100-sxm"}, {"a40", "a40"}, {"h200", "h200"}};

static const struct {
	const char *dir, *model;
} models[] = {{"meta-llama/Llama-2-7b-hf", "llama-2-7b"},
	      {"meta-llama/Llama-2-70b-hf", "llama-2-70b"},
	      {"meta-llama/Meta-Llama-3-8B", "llama-3.1-8b"},
	      {"meta-llama/Meta-Llama-3-70B", "llama-3.1-70b"}};

typedef struct point {
	int model, tp, tokens;
	double ms;
} point;

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Read one mlp.csv into points (median over repeated rows). */
static int read_csv(const char *path, int model, point **pts, int *np)
{
	char *text, *line, *save = NULL;
	int col[16], ntok = -1, ntp = -1, nrows = 0, cap = 0;
	struct row {
		int tokens, tp;
		double ms;
	} *rows = NULL;
	hx_err err;

	text = hx_read_file(path, NULL, &err);
	if (!text)
		return -1;
	line = strtok_r(text, "\n", &save);
	{
		char *h = hx_xstrdup(line), *f, *s2 = NULL;
		int i = 0;
		for (int k = 0; ops[k]; k++)
			col[k] = -1;
		for (f = strtok_r(h, ",", &s2); f; f = strtok_r(NULL, ",", &s2), i++) {
			for (int k = 0; ops[k]; k++) {
				char want[96];
				snprintf(want, sizeof(want), "time_stats.%s.median", ops[k]);
				if (strcmp(f, want) == 0)
					col[k] = i;
			}
			if (strcmp(f, "num_tokens") == 0)
				ntok = i;
			if (strcmp(f, "num_tensor_parallel_workers") == 0)
				ntp = i;
		}
		free(h);
	}
	free(text);
	/* Data rows, keeping empty fields. */
	text = hx_read_file(path, NULL, &err);
	{
		char *p = strchr(text, '\n') + 1;
		while (*p) {
			char *end = strchr(p, '\n'), *fields[128];
			int n = 0;
			if (end)
				*end = '\0';
			fields[n++] = p;
			for (char *q = p; *q && n < 128; q++)
				if (*q == ',') {
					*q = '\0';
					fields[n++] = q + 1;
				}
			if (n > ntok && n > ntp) {
				double ms = 0;
				int okrow = 1;
				for (int k = 0; ops[k]; k++) {
					if (col[k] < 0 || col[k] >= n || !*fields[col[k]]) {
						okrow = 0;
						break;
					}
					ms += atof(fields[col[k]]);
				}
				if (okrow) {
					if (nrows == cap) {
						cap = cap ? 2 * cap : 1024;
						rows = hx_xrealloc(rows,
								   (size_t)cap * sizeof(*rows));
					}
					rows[nrows].tokens = atoi(fields[ntok]);
					rows[nrows].tp = atoi(fields[ntp]);
					rows[nrows].ms = ms;
					nrows++;
				}
			}
			if (!end)
				break;
			p = end + 1;
		}
	}
	free(text);
	/* Group repeated (tokens, tp) rows: the median of their sums. */
	for (int i = 0; i < nrows; i++) {
		double v[64];
		int n = 0, seen = 0;
		for (int j = 0; j < i; j++)
			if (rows[j].tokens == rows[i].tokens && rows[j].tp == rows[i].tp)
				seen = 1;
		if (seen)
			continue;
		for (int j = i; j < nrows && n < 64; j++)
			if (rows[j].tokens == rows[i].tokens && rows[j].tp == rows[i].tp)
				v[n++] = rows[j].ms;
		*pts = hx_xrealloc(*pts, (size_t)(*np + 1) * sizeof(point));
		(*pts)[*np] = (point){model, rows[i].tp, rows[i].tokens, median(v, n)};
		(*np)++;
	}
	free(rows);
	return 0;
}

static double ape(const hx_catalog *cat, const hx_gpu *g, const point *p)
{
	const hx_model *m = hx_catalog_model(cat, models[p->model].model);
	double pred = hx_cost_linear(m, g, p->tp, HX_DT_BF16, 0, p->tokens) * 1e3;
	return fabs(pred / p->ms - 1) * 100;
}

static void stats(const hx_catalog *cat, const hx_gpu *g, const point *p, int n,
		  const char *label)
{
	double *e = hx_xmalloc((size_t)n * sizeof(double));
	for (int i = 0; i < n; i++)
		e[i] = ape(cat, g, &p[i]);
	printf("%-10s %-28s %6d %10.1f %10.1f\n", g->name, label, n,
	       hx_quantile(e, (size_t)n, 0.5), hx_quantile(e, (size_t)n, 0.9));
	free(e);
}

int main(int argc, char **argv)
{
	const char *data = argc > 1 ? argv[1] : "../shared/data/measured/vidur/compute";
	const char *own = argc > 2 ? argv[2] : "bench/data";
	int ngpus = 0;
	hx_catalog cat;
	hx_err err = {0};
	point *all_pts[HX_ARRAY_LEN(gpus)] = {0};
	int all_n[HX_ARRAY_LEN(gpus)] = {0};

	if (hx_catalog_load(&cat, NULL, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	printf("per-layer non-attention kernel time, cost model vs measured (vidur)\n");
	printf("%-10s %-28s %6s %10s %10s\n", "gpu", "points", "n", "median%", "p90%");
	for (size_t gi = 0; gi < HX_ARRAY_LEN(gpus); gi++) {
		point *pts = NULL;
		int np = 0;
		const hx_gpu *g = hx_catalog_gpu(&cat, gpus[gi].gpu);
		for (int root = 0; root < 2 && np == 0; root++)
			for (size_t mi = 0; mi < HX_ARRAY_LEN(models); mi++) {
				char path[1024];
				int before = np;
				if (root) /* ours: OWN/GPU/mlp-MODEL.csv */
					snprintf(path, sizeof(path), "%s/%s/mlp-%s.csv", own,
						 gpus[gi].dir, strchr(models[mi].dir, '/') + 1);
				else
					snprintf(path, sizeof(path), "%s/%s/%s/mlp.csv", data,
						 gpus[gi].dir, models[mi].dir);
				if (read_csv(path, (int)mi, &pts, &np) != 0 || np == before)
					continue;
				stats(&cat, g, pts + before, np - before, models[mi].model);
			}
		if (np == 0) {
			fprintf(stderr,
				"cost_accuracy: no table for %s under %s or %s (skipped)\n",
				gpus[gi].dir, data, own);
			free(pts);
			continue;
		}
		ngpus++;
		stats(&cat, g, pts, np, "all");
		all_pts[gi] = pts;
		all_n[gi] = np;
	}

	if (ngpus == 0) {
		hx_catalog_release(&cat);
		return 77;
	}
	/* Calibrate on a handful of each GPU's points; judge on the rest. */
	printf("\ncalibration on 8 points per GPU (llama-2-7b; tokens 1, 32, 256, 2048; tp 1, "
	       "4),\n"
	       "error on that GPU's other points\n");
	printf("%-10s %-28s %6s %10s %10s\n", "gpu", "held-out points", "n", "median%", "p90%");
	for (size_t gi = 0; gi < HX_ARRAY_LEN(gpus); gi++) {
		const hx_gpu *g = hx_catalog_gpu(&cat, gpus[gi].gpu);
		static const int pick_tokens[] = {1, 32, 256, 2048};
		point *pts = all_pts[gi], *rest;
		int np = all_n[gi], nf = 0, nr = 0;
		hx_meas fitset[16];
		hx_fit fit;

		if (np == 0)
			continue;
		rest = hx_xmalloc((size_t)np * sizeof(point));
		for (int i = 0; i < np; i++) {
			const point *p = &pts[i];
			int pick = 0;
			for (size_t k = 0; k < HX_ARRAY_LEN(pick_tokens); k++)
				if (p->tokens == pick_tokens[k] && (p->tp == 1 || p->tp == 4) &&
				    p->model == 0)
					pick = 1;
			if (pick && nf < 16) {
				hx_meas *x = &fitset[nf++];
				memset(x, 0, sizeof(*x));
				hx_strlcpy(x->gpu, g->name, sizeof(x->gpu));
				hx_strlcpy(x->model, models[0].model, sizeof(x->model));
				x->tp = p->tp;
				x->phase = HX_PHASE_LINEAR;
				x->batch = 1;
				x->tokens = p->tokens;
				x->ms = p->ms;
				x->line = i + 2;
			} else {
				rest[nr++] = *p;
			}
		}
		if (nf > 0 && !hx_calib_fit(hx_catalog_model(&cat, models[0].model), g, fitset,
					    nf, &fit, &err)) {
			stats(&cat, g, rest, nr, "catalog defaults");
			stats(&cat, &fit.fitted, rest, nr, "after calibration");
			printf("%-10s fitted:", "");
			for (int k = 0; k < fit.nkeys; k++)
				printf(" %s=%.4g", fit.keys[k],
				       *hx_gpu_field(&fit.fitted, fit.keys[k]));
			printf("\n");
			hx_fit_release(&fit);
		}
		/* A profile guessed by analogy, as for a GPU nobody has measured. */
		{
			hx_gpu guess = *g;
			guess.e_compute = 0.5;
			guess.e_mem = 0.6;
			guess.kernel_floor_us = 10;
			if (nf > 0 && !hx_calib_fit(hx_catalog_model(&cat, models[0].model),
						    &guess, fitset, nf, &fit, &err)) {
				stats(&cat, &guess, rest, nr, "guessed profile");
				stats(&cat, &fit.fitted, rest, nr,
				      "guessed, after calibration");
				hx_fit_release(&fit);
			}
		}
		free(rest);
		free(pts);
	}
	hx_catalog_release(&cat);
	return 0;
}
