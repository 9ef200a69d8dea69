/* The plots: schedule --plot and simulate --capacity --plot.
 *
 * schedule --plot: the day in one picture, an SVG of two panels over a
 * shared time axis.  The upper panel draws the load (each period's rate)
 * and the capacity the period's plan carries at the SLO (the simulator's,
 * where the schedule has it, else the cost model's), the lower one the
 * plan's price per hour; each as a step line, a period's value held over
 * its length.  Plain SVG 1.1 with no script or external reference, so any
 * browser or rsvg-convert draws it; same schedule, same bytes. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "sim/sim.h"

#define W       760.0
#define PANEL_H 190.0
#define LEFT    70.0
#define RIGHT   20.0
#define TOP     46.0
#define GAP     56.0

/* The least "nice" step (1, 2 or 5 times a power of ten) that cuts
 * [0, HI] in at most 6 intervals. */
static double nice_step(double hi)
{
	double raw = hi / 6, p = pow(10, floor(log10(raw))), f = raw / p;

	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

/* A tick label: no trailing zeros, at most three decimals. */
static void tick_label(hx_buf *b, double v)
{
	char s[32];
	size_t n;

	snprintf(s, sizeof(s), "%.3f", fabs(v) < 5e-4 ? 0.0 : v);
	n = strlen(s);
	while (n > 0 && s[n - 1] == '0')
		s[--n] = '\0';
	if (n > 0 && s[n - 1] == '.')
		s[--n] = '\0';
	hx_buf_printf(b, "%s", s);
}

/* Text with XML's five specials escaped. */
static void xml_text(hx_buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': hx_buf_printf(b, "&lt;"); break;
		case '>': hx_buf_printf(b, "&gt;"); break;
		case '&': hx_buf_printf(b, "&amp;"); break;
		case '"': hx_buf_printf(b, "&quot;"); break;
		case '\'': hx_buf_printf(b, "&apos;"); break;
		default:
			if ((unsigned char)*s >= 0x20)
				hx_buf_printf(b, "%c", *s);
		}
	}
}

/* The SVG's opening, a white page HEIGHT high, and its TITLE. */
static void svg_head(hx_buf *b, double height, const char *title)
{
	hx_buf_printf(b,
		      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
		      "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		      "font-family=\"sans-serif\">\n"
		      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		      "<text x=\"%.1f\" y=\"20\" font-size=\"14\">",
		      W, height, W, height, LEFT);
	xml_text(b, title);
	hx_buf_printf(b, "</text>\n");
}

typedef struct axes {
	double t0, t1, unit; /* the x span (time: s) and x per axis unit */
	const char *xtitle;  /* the x axis' title */
	double y0;           /* the panel's top */
	double hi;           /* the value axis' top */
	double lo;           /* the value axis' bottom (0 unless set) */
} axes;

static double px(const axes *a, double t)
{
	return LEFT + (W - LEFT - RIGHT) * (t - a->t0) / (a->t1 - a->t0);
}

static double py(const axes *a, double v)
{
	return a->y0 + PANEL_H * (1 - (v - a->lo) / (a->hi - a->lo));
}

/* The frame, grid and tick labels of one panel, and its axis title. */
static void panel(hx_buf *b, const axes *a, const char *ytitle)
{
	double ys = nice_step(a->hi - a->lo),
	       ts = nice_step((a->t1 - a->t0) / a->unit) * a->unit;

	hx_buf_printf(b, "<g font-size=\"11\" fill=\"#333\">\n");
	for (double v = ceil(a->lo / ys - 1e-9) * ys; v <= a->hi * (1 + 1e-9); v += ys) {
		hx_buf_printf(b,
			      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			      "stroke=\"#ddd\"/>\n",
			      LEFT, py(a, v), W - RIGHT, py(a, v));
		hx_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", LEFT - 6,
			      py(a, v) + 4);
		tick_label(b, v);
		hx_buf_printf(b, "</text>\n");
	}
	for (double t = a->t0; t <= a->t1 * (1 + 1e-9) + 1e-9; t += ts) {
		hx_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
			      px(a, t), a->y0 + PANEL_H + 15);
		tick_label(b, t / a->unit);
		hx_buf_printf(b, "</text>\n");
	}
	hx_buf_printf(b,
		      "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		      "fill=\"none\" stroke=\"#888\"/>\n",
		      LEFT, a->y0, W - LEFT - RIGHT, PANEL_H);
	hx_buf_printf(b,
		      "<text x=\"16\" y=\"%.1f\" transform=\"rotate(-90 16 %.1f)\" "
		      "text-anchor=\"middle\">%s</text>\n",
		      a->y0 + PANEL_H / 2, a->y0 + PANEL_H / 2, ytitle);
	hx_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
		      LEFT + (W - LEFT - RIGHT) / 2, a->y0 + PANEL_H + 32, a->xtitle);
	hx_buf_printf(b, "</g>\n");
}

/* One step line: value V(K) over period K, in a <path> of class NAME. */
static void steps(hx_buf *b, const axes *a, const hx_sched_pt *pt, int n, int which,
		  const char *name, const char *colour, const char *dash)
{
	hx_buf_printf(
	    b, "<path class=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s%s%s d=\"",
	    name, colour, dash ? " stroke-dasharray=\"" : "", dash ? dash : "",
	    dash ? "\"" : "");
	for (int k = 0; k < n; k++) {
		double v = which == 0   ? pt[k].rate_rps
			   : which == 1 ? pt[k].capacity_rps
					: pt[k].usd_per_hour;
		hx_buf_printf(b, "%s%.1f %.1f H%.1f", k == 0 ? "M" : " L", px(a, pt[k].start_s),
			      py(a, v), px(a, pt[k].start_s + pt[k].duration_s));
	}
	hx_buf_printf(b, "\"/>\n");
}

static void legend(hx_buf *b, double x, double y, const char *colour, const char *dash,
		   const char *text)
{
	hx_buf_printf(b,
		      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
		      "stroke-width=\"2\"%s%s%s/>\n",
		      x, y, x + 24, y, colour, dash ? " stroke-dasharray=\"" : "",
		      dash ? dash : "", dash ? "\"" : "");
	hx_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s</text>\n", x + 30,
		      y + 4, text);
}

char *hx_schedule_svg(const char *title, const hx_sched_pt *pt, int n)
{
	hx_buf b = {0};
	axes up = {0}, lo;
	double rmax = 0, umax = 0, span;

	for (int k = 0; k < n; k++) {
		rmax = fmax(rmax, fmax(pt[k].rate_rps, pt[k].capacity_rps));
		umax = fmax(umax, pt[k].usd_per_hour);
	}
	up.t0 = n > 0 ? pt[0].start_s : 0;
	up.t1 = n > 0 ? pt[n - 1].start_s + pt[n - 1].duration_s : 1;
	if (!(up.t1 > up.t0))
		up.t1 = up.t0 + 1;
	span = up.t1 - up.t0;
	up.unit = span >= 7200 ? 3600 : span >= 120 ? 60 : 1;
	up.xtitle = span >= 7200 ? "time (h)" : span >= 120 ? "time (min)" : "time (s)";
	up.y0 = TOP;
	up.hi = rmax > 0 ? ceil(rmax * 1.1 / nice_step(rmax * 1.1)) * nice_step(rmax * 1.1) : 1;
	lo = up;
	lo.y0 = TOP + PANEL_H + GAP;
	lo.hi = umax > 0 ? ceil(umax * 1.1 / nice_step(umax * 1.1)) * nice_step(umax * 1.1) : 1;
	svg_head(&b, lo.y0 + PANEL_H + 44, title);
	panel(&b, &up, "req/s");
	panel(&b, &lo, "USD per hour");
	steps(&b, &up, pt, n, 0, "load", "#1f77b4", NULL);
	steps(&b, &up, pt, n, 1, "capacity", "#2ca02c", "6 3");
	steps(&b, &lo, pt, n, 2, "cost", "#d62728", NULL);
	legend(&b, LEFT + 10, TOP - 10, "#1f77b4", NULL, "load (period rate)");
	legend(&b, LEFT + 170, TOP - 10, "#2ca02c", "6 3", "capacity at the SLO");
	legend(&b, LEFT + 10, lo.y0 - 10, "#d62728", NULL, "plan price");
	hx_buf_printf(&b, "</svg>\n");
	return b.s;
}

/* simulate --capacity --plot: the SLO attainment (judged after the
 * warm-up) at each rate the capacity search tried, the target as a dashed
 * line and the capacity found as a vertical one; the points that met the
 * target green, the others red, joined in the order of their rates. */
char *hx_capacity_svg(const char *title, const hx_cap_point *pt, int n, double target,
		      double capacity)
{
	hx_buf b = {0};
	axes a = {0};
	double rmax = capacity;
	int *ord = hx_xcalloc((size_t)n + 1, sizeof(int));

	for (int k = 0; k < n; k++) {
		rmax = fmax(rmax, pt[k].rate_rps);
		ord[k] = k;
	}
	/* Insertion sort by rate (a search tries a few dozen rates). */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && pt[ord[j]].rate_rps < pt[ord[j - 1]].rate_rps; j--) {
			int t = ord[j];
			ord[j] = ord[j - 1];
			ord[j - 1] = t;
		}
	a.t0 = 0;
	a.t1 =
	    rmax > 0 ? ceil(rmax * 1.05 / nice_step(rmax * 1.05)) * nice_step(rmax * 1.05) : 1;
	a.unit = 1;
	a.xtitle = "offered rate (req/s)";
	a.y0 = TOP;
	/* The band near the target, where the search decides: four times the
	 * misses it allows below it (0.95 for 0.99); a rate far past the
	 * capacity sits on the bottom edge, its value in its tooltip. */
	a.hi = 1;
	a.lo = fmax(0, target - 4 * (1 - target));
	if (!(a.hi - a.lo > 1e-6))
		a.lo = 0;
	svg_head(&b, TOP + PANEL_H + 44, title);
	panel(&b, &a, "SLO attainment");
	hx_buf_printf(&b,
		      "<line class=\"target\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
		      "y2=\"%.1f\" stroke=\"#2ca02c\" stroke-dasharray=\"6 3\"/>\n",
		      LEFT, py(&a, target), W - RIGHT, py(&a, target));
	hx_buf_printf(&b,
		      "<line class=\"capacity\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
		      "y2=\"%.1f\" stroke=\"#1f77b4\"/>\n",
		      px(&a, capacity), a.y0, px(&a, capacity), a.y0 + PANEL_H);
	if (n > 0) {
		hx_buf_printf(&b, "<path class=\"curve\" fill=\"none\" stroke=\"#888\" d=\"");
		for (int k = 0; k < n; k++)
			hx_buf_printf(&b, "%s%.1f %.1f", k ? " L" : "M",
				      px(&a, pt[ord[k]].rate_rps),
				      py(&a, fmax(a.lo, pt[ord[k]].attainment)));
		hx_buf_printf(&b, "\"/>\n");
	}
	for (int k = 0; k < n; k++) {
		const hx_cap_point *q = &pt[ord[k]];
		hx_buf_printf(
		    &b,
		    "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
		    "fill=\"%s\"><title>%.4g req/s: attainment %.4f</title></circle>\n",
		    q->meets ? "meets" : "misses", px(&a, q->rate_rps),
		    py(&a, fmax(a.lo, q->attainment)), q->meets ? "#2ca02c" : "#d62728",
		    q->rate_rps, q->attainment);
	}
	legend(&b, LEFT + 10, TOP - 10, "#2ca02c", "6 3", "attainment target");
	legend(&b, LEFT + 170, TOP - 10, "#1f77b4", NULL, "capacity at the SLO");
	hx_buf_printf(&b, "</svg>\n");
	free(ord);
	return b.s;
}
