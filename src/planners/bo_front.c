/* bo_front: the BO front as a JSON document and as an SVG plot (see
 * plan_bo.h). */
#include "config.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonio.h"
#include "planners/bo.h"

static const char *prefer_name(int p)
{
	return p == HX_PREFER_COST      ? "cost"
	       : p == HX_PREFER_LATENCY ? "latency"
	       : p == HX_PREFER_QUALITY ? "quality"
					: "balanced";
}

char *hx_bo_front_dump(const hx_bo_front *f, uint64_t seed)
{
	json_t *o = json_object(), *ref = json_object(), *srch = json_object(),
	       *pts = json_array();
	char *s;
	hx_jset_str(o, "schema", "hexplan.front");
	hx_jset_int(o, "version", 1);
	hx_jset_str(o, "mode", "bo");
	{
		json_t *ob = json_array();
		json_array_append_new(ob, json_string("usd_per_hour"));
		json_array_append_new(ob, json_string("latency_ms"));
		json_array_append_new(ob, json_string("quality"));
		json_object_set_new(o, "objectives", ob);
	}
	hx_jset_num(ref, "usd_per_hour", f->ref[0]);
	hx_jset_num(ref, "latency_ms", f->ref[1]);
	hx_jset_num(ref, "quality", f->ref[2]);
	json_object_set_new(o, "reference", ref);
	hx_jset_num(o, "hypervolume", f->hypervolume);
	hx_jset_str(srch, "acquisition", f->acquisition);
	hx_jset_str(srch, "status", f->status);
	hx_jset_int(srch, "evaluations", f->evals);
	hx_jset_int(srch, "iterations", f->iterations);
	hx_jset_int(srch, "seed", (long)seed);
	json_object_set_new(o, "search", srch);
	hx_jset_str(o, "prefer", prefer_name(f->prefer));
	hx_jset_int(o, "chosen", f->chosen);
	for (int i = 0; i < f->n; i++) {
		const hx_bo_point *p = &f->pt[i];
		json_t *e = json_object(), *rt = json_array();
		hx_jset_num(e, "usd_per_hour", p->usd_per_hour);
		hx_jset_num(e, "latency_ms", p->latency_ms);
		hx_jset_num(e, "quality", p->quality);
		hx_jset_int(e, "evaluation", p->eval);
		for (int m = 0; m < f->nmodels; m++) {
			json_t *r = json_object();
			hx_jset_str(r, "model", f->model[m]);
			hx_jset_num(r, "fraction", p->fraction[m]);
			json_array_append_new(rt, r);
		}
		json_object_set_new(e, "routing", rt);
		if (p->has_plan) {
			char *text = hx_plan_dump(&p->plan);
			json_t *pl = json_loads(text, 0, NULL);
			free(text);
			json_object_set_new(e, "plan", pl ? pl : json_null());
		}
		json_array_append_new(pts, e);
	}
	json_object_set_new(o, "points", pts);
	s = hx_json_dump(o);
	json_decref(o);
	return s;
}

static void svg_escaped(hx_buf *b, const char *t)
{
	for (; *t; t++)
		switch (*t) {
		case '&': hx_buf_printf(b, "&amp;"); break;
		case '<': hx_buf_printf(b, "&lt;"); break;
		case '>': hx_buf_printf(b, "&gt;"); break;
		case '"': hx_buf_printf(b, "&quot;"); break;
		default: hx_buf_printf(b, "%c", *t);
		}
}

/* A "nice" tick step (1, 2 or 5 times a power of ten) for about 6 ticks
 * over [0, HI]. */
static double tick_step(double hi)
{
	double raw = hi / 6, p = pow(10, floor(log10(raw))), r = raw / p;
	return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * p;
}

/* Colour of T in [0, 1] on a viridis-like ramp. */
static void ramp(double t, int *r, int *g, int *b)
{
	static const int stop[5][3] = {
	    {68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
	double x = fmin(fmax(t, 0), 1) * 4;
	int i = x >= 4 ? 3 : (int)x;
	double u = x - i;
	*r = (int)lround(stop[i][0] + u * (stop[i + 1][0] - stop[i][0]));
	*g = (int)lround(stop[i][1] + u * (stop[i + 1][1] - stop[i][1]));
	*b = (int)lround(stop[i][2] + u * (stop[i + 1][2] - stop[i][2]));
}

#define W  760
#define H  480
#define ML 90
#define MR 170
#define MT 56
#define MB 70

char *hx_bo_front_svg(const hx_bo_front *f)
{
	hx_buf b = {0};
	double xmax = f->ref[0], ymax = f->ref[1], qlo = INFINITY, qhi = -INFINITY, xs, ys;
	const double pw = W - ML - MR, ph = H - MT - MB;
	for (int i = 0; i < f->n; i++) {
		xmax = fmax(xmax, f->pt[i].usd_per_hour);
		ymax = fmax(ymax, f->pt[i].latency_ms);
		qlo = fmin(qlo, f->pt[i].quality);
		qhi = fmax(qhi, f->pt[i].quality);
	}
	if (!(qhi > qlo)) {
		qlo -= 1;
		qhi += 1;
	}
	xs = tick_step(xmax * 1.05);
	ys = tick_step(ymax * 1.05);
	xmax = ceil(xmax * 1.05 / xs) * xs;
	ymax = ceil(ymax * 1.05 / ys) * ys;
#define PX(v) (ML + (v) / xmax * pw)
#define PY(v) (MT + ph - (v) / ymax * ph)
	hx_buf_printf(&b,
		      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		      "viewBox=\"0 0 %d %d\" "
		      "font-family=\"sans-serif\" font-size=\"12\">\n",
		      W, H, W, H);
	hx_buf_printf(&b, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
	hx_buf_printf(&b,
		      "<text x=\"%d\" y=\"20\" font-size=\"15\">Pareto front: %d plan%s, "
		      "hypervolume %.2f%%</text>\n",
		      ML, f->n, f->n == 1 ? "" : "s", 100 * f->hypervolume);
	hx_buf_printf(&b,
		      "<text x=\"%d\" y=\"38\" fill=\"#555\">%d evaluations (%s); models: ", ML,
		      f->evals, f->acquisition);
	for (int m = 0; m < f->nmodels; m++) {
		svg_escaped(&b, f->model[m]);
		hx_buf_printf(&b, m + 1 < f->nmodels ? ", " : "");
	}
	hx_buf_printf(&b, "</text>\n");
	/* grid and ticks */
	for (double v = 0; v <= xmax + 1e-9 * xmax; v += xs) {
		hx_buf_printf(&b,
			      "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" "
			      "stroke=\"#e5e5e5\"/>\n",
			      PX(v), MT, PX(v), MT + ph);
		hx_buf_printf(&b,
			      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			      "stroke=\"black\"/>\n",
			      PX(v), MT + ph, PX(v), MT + ph + 5);
		hx_buf_printf(&b,
			      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
			      PX(v), MT + ph + 19, v);
	}
	for (double v = 0; v <= ymax + 1e-9 * ymax; v += ys) {
		hx_buf_printf(&b,
			      "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			      "stroke=\"#e5e5e5\"/>\n",
			      ML, PY(v), ML + pw, PY(v));
		hx_buf_printf(
		    &b,
		    "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"black\"/>\n",
		    ML - 5, PY(v), ML, PY(v));
		hx_buf_printf(&b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
			      ML - 8, PY(v) + 4, v);
	}
	hx_buf_printf(&b,
		      "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
		      "stroke=\"black\"/>\n",
		      ML, MT, pw, ph);
	hx_buf_printf(
	    &b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">cost (USD per hour)</text>\n",
	    ML + pw / 2, H - 20);
	hx_buf_printf(
	    &b,
	    "<text transform=\"translate(24 %.1f) rotate(-90)\" text-anchor=\"middle\">"
	    "latency, end to end at the SLO percentile (ms)</text>\n",
	    MT + ph / 2);
	/* the reference: budget and latency SLO */
	hx_buf_printf(&b,
		      "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c0392b\" "
		      "stroke-dasharray=\"6 4\"/>\n",
		      PX(f->ref[0]), MT, PX(f->ref[0]), MT + ph);
	hx_buf_printf(&b,
		      "<text x=\"%.1f\" y=\"%d\" fill=\"#c0392b\" text-anchor=\"end\">budget "
		      "$%g/h</text>\n",
		      PX(f->ref[0]) - 4, MT + 14, f->ref[0]);
	hx_buf_printf(&b,
		      "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c0392b\" "
		      "stroke-dasharray=\"6 4\"/>\n",
		      ML, PY(f->ref[1]), ML + pw, PY(f->ref[1]));
	hx_buf_printf(&b,
		      "<text x=\"%d\" y=\"%.1f\" fill=\"#c0392b\">latency SLO %g ms</text>\n",
		      ML + 6, PY(f->ref[1]) - 5, f->ref[1]);
	/* the points, the chosen one ringed */
	for (int i = 0; i < f->n; i++) {
		int r, g, bl;
		const hx_bo_point *p = &f->pt[i];
		ramp((p->quality - qlo) / (qhi - qlo), &r, &g, &bl);
		hx_buf_printf(
		    &b,
		    "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"rgb(%d,%d,%d)\" "
		    "stroke=\"black\" "
		    "stroke-width=\"0.5\"><title>$%g/h, %g ms, quality %g</title></circle>\n",
		    PX(p->usd_per_hour), PY(p->latency_ms), r, g, bl, p->usd_per_hour,
		    p->latency_ms, p->quality);
	}
	if (f->n > 0) {
		const hx_bo_point *p = &f->pt[f->chosen];
		hx_buf_printf(&b,
			      "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"11\" fill=\"none\" "
			      "stroke=\"#c0392b\" stroke-width=\"2\"/>\n",
			      PX(p->usd_per_hour), PY(p->latency_ms));
		hx_buf_printf(
		    &b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#c0392b\">chosen (%s)</text>\n",
		    PX(p->usd_per_hour) + 14, PY(p->latency_ms) - 8, prefer_name(f->prefer));
	}
	/* legend: the quality colour bar */
	{
		double lx = W - MR + 40, ly = MT + 20, lh = ph - 60;
		hx_buf_printf(
		    &b,
		    "<defs><linearGradient id=\"q\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n");
		for (int k = 0; k <= 4; k++) {
			int r, g, bl;
			ramp(k / 4.0, &r, &g, &bl);
			hx_buf_printf(&b,
				      "<stop offset=\"%d%%\" stop-color=\"rgb(%d,%d,%d)\"/>\n",
				      25 * k, r, g, bl);
		}
		hx_buf_printf(&b, "</linearGradient></defs>\n");
		hx_buf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\">quality (0-100)</text>\n",
			      lx - 10, ly - 8);
		hx_buf_printf(&b,
			      "<rect x=\"%.1f\" y=\"%.1f\" width=\"18\" height=\"%.1f\" "
			      "fill=\"url(#q)\" stroke=\"black\"/>\n",
			      lx, ly, lh);
		hx_buf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\">%.2f</text>\n", lx + 24, ly + 4,
			      qhi);
		hx_buf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\">%.2f</text>\n", lx + 24,
			      ly + lh / 2 + 4, (qlo + qhi) / 2);
		hx_buf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\">%.2f</text>\n", lx + 24,
			      ly + lh + 4, qlo);
	}
	hx_buf_printf(&b, "</svg>\n");
#undef PX
#undef PY
	return b.s;
}
