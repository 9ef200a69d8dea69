/*
 * export_dot: the plan as a Graphviz picture (DESIGN §9), one file,
 * plan.dot, for `dot -Tsvg plan.dot`.
 *
 * Left to right: an "ingress" node, an edge to each group it routes to
 * (labelled with the share of requests), one node per group (its shape:
 * model, role, GPU type, TP and layers per stage, replica count) with an
 * edge to each of its replicas, then the cluster: one box per node (label:
 * node name and GPU type) holding, per replica stage placed there, a box
 * (label: replica, stage, TP, layers [first, last)) around the GPUs it uses
 * ("node:index"), side by side; a stage of one GPU is labelled on the GPU.
 * A group no request enters directly (decode) has its node after its
 * replicas, so that the picture still reads left to right.  GPUs are filled with their group's
 * colour, in a hue per role (aggregated green, prefill blue, decode orange); a legend says so.
 * Pipeline edges join a replica's stages (labelled with the link's
 * bandwidth), dashed KV edges join prefill replicas to decode replicas and
 * dotted edges carry routing hops, each labelled with its share.
 *
 * Every string from the plan is written double-quoted with '"' and '\'
 * escaped, a newline as "\n", '&' as "&amp;" (Graphviz reads entities in
 * labels) and other control characters (or broken UTF-8) as '?', so no name
 * can break out of its string or reach a Graphviz escape (\N, \G, \l ...)
 * and every name shows as it is.  Node and cluster identifiers are made by the
 * exporter ("gpu12", "cluster_n3_r5_s0"), never from names.  The output
 * follows the plan's order and is the same for the same plan.
 */
#include "config.h"

#include "export/export.h"

#include <stdlib.h>
#include <string.h>

/* Fill colours per role: a hue each, shades alternating so that groups of
 * one role side by side differ. */
static const char *const agg_fill[] = {"#b8e186", "#80cdc1", "#d9f0a3",
				       "#a6dba0", "#c7eae5", "#7fbf7b"};
static const char *const pre_fill[] = {"#9ecae1", "#c6dbef", "#bcbddc",
				       "#6baed6", "#dadaeb", "#9e9ac8"};
static const char *const dec_fill[] = {"#fdae6b", "#fdd0a2", "#fcbba1",
				       "#fd8d3c", "#fee6ce", "#fc9272"};
#define NSHADES 6

/* Frame colour and legend swatch per role. */
static const char *role_pen(hx_role r)
{
	return r == HX_ROLE_PREFILL ? "#2171b5" : r == HX_ROLE_DECODE ? "#d94801" : "#41ab5d";
}

static const char *role_swatch(hx_role r)
{
	return r == HX_ROLE_PREFILL  ? pre_fill[0]
	       : r == HX_ROLE_DECODE ? dec_fill[0]
				     : agg_fill[0];
}

static const char *role_shape(hx_role r)
{
	return r == HX_ROLE_PREFILL ? "cds" : r == HX_ROLE_DECODE ? "component" : "box";
}

/* ---- strings ----------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at S (>= 2 bytes), or 0. */
static int utf8_len(const unsigned char *s)
{
	int n;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
		return 0;
	return n;
}

/* S escaped for the inside of a DOT double-quoted string. */
static void esc(hx_buf *b, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	while (*u) {
		if (*u == '&') { /* Graphviz reads "&amp;" and the like in labels */
			hx_buf_printf(b, "&amp;");
			u++;
		} else if (*u == '"' || *u == '\\') {
			hx_buf_printf(b, "\\%c", *u);
			u++;
		} else if (*u == '\n') {
			hx_buf_printf(b, "\\n");
			u++;
		} else if (*u < 0x20 || *u == 0x7f) {
			hx_buf_printf(b, "?");
			u++;
		} else if (*u < 0x80) {
			hx_buf_printf(b, "%c", *u);
			u++;
		} else {
			int n = utf8_len(u);
			if (n == 0) {
				hx_buf_printf(b, "?");
				u++;
			} else {
				hx_buf_printf(b, "%.*s", n, (const char *)u);
				u += n;
			}
		}
	}
}

/* A share (0.518) as a short percentage ("51.8%"). */
static void pct(char *out, size_t n, double w)
{
	snprintf(out, n, "%.3g%%", w * 100);
}

/* ---- the plan's GPUs, per node ----------------------------------------- */

typedef struct dot_state {
	const hx_plan *p;
	const hx_export_opts *o;
	hx_buf b;
	int *rbase;   /* per group: the index of its first replica overall */
	int nrep;     /* replicas overall */
	int *gpubase; /* per replica overall and stage: first GPU occurrence */
	int *gpunode; /* per GPU occurrence: its node's index */
	int ngpu;
	char (*nodes)[64];
	int nnodes;
	hx_map node_ids; /* node name -> index in NODES */
	hx_map cl_ids;   /* the cluster's node names -> their index */
	int *part_first; /* per node: its first entry in PARTS, NNODES + 1 */
	int (*parts)[3]; /* (group, replica, stage) with a GPU on each node,
			  * node by node, in plan order */
	int *fill;       /* per group: its shade among the groups of its role */
	char *fed;       /* per group: the ingress routes requests to it */
} dot_state;

/* NAME's index among the plan's nodes, added when new. */
static int node_index(dot_state *d, const char *name)
{
	int i = hx_map_get(&d->node_ids, name);

	if (i >= 0)
		return i;
	if ((d->nnodes & (d->nnodes - 1)) == 0) /* 0, 1, 2, 4, ...: grow */
		d->nodes = hx_xrealloc(d->nodes, (size_t)(d->nnodes ? 2 * d->nnodes : 1) *
						     sizeof(*d->nodes));
	hx_strlcpy(d->nodes[d->nnodes], name, sizeof(d->nodes[0]));
	hx_map_put(&d->node_ids, name, d->nnodes);
	return d->nnodes++;
}

static void index_plan(dot_state *d)
{
	const hx_plan *p = d->p;
	int k = 0;

	d->rbase = hx_xcalloc((size_t)p->ngroups + 1, sizeof(int));
	for (int g = 0; g < p->ngroups; g++) {
		d->rbase[g] = d->nrep;
		d->nrep += p->groups[g].nreplicas;
	}
	d->rbase[p->ngroups] = d->nrep;
	d->gpubase = hx_xcalloc((size_t)d->nrep * HX_MAX_STAGES + 1, sizeof(int));
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++)
			for (int s = 0; s < p->groups[g].nstages; s++)
				d->ngpu += p->groups[g].replicas[r].ngpus[s];
	d->gpunode = hx_xcalloc((size_t)d->ngpu + 1, sizeof(int));
	for (int g = 0; g < p->ngroups; g++)
		for (int r = 0; r < p->groups[g].nreplicas; r++) {
			const hx_plan_replica *rep = &p->groups[g].replicas[r];
			for (int s = 0; s < p->groups[g].nstages; s++) {
				d->gpubase[(d->rbase[g] + r) * HX_MAX_STAGES + s] = k;
				for (int i = 0; i < rep->ngpus[s]; i++)
					d->gpunode[k++] = node_index(d, rep->gpus[s][i].node);
			}
		}
}

static int gpu_id(const dot_state *d, int g, int r, int s, int i)
{
	return d->gpubase[(d->rbase[g] + r) * HX_MAX_STAGES + s] + i;
}

/* Per node, the stages with a GPU on it (PARTS, bucketed by node in plan
 * order), per group its shade and whether requests enter it: each a pass
 * over the plan, so that drawing is linear in its size. */
static void index_parts(dot_state *d)
{
	const hx_plan *p = d->p;
	int *at, count[3] = {0, 0, 0};
	hx_map groups = {0};

	d->part_first = hx_xcalloc((size_t)d->nnodes + 2, sizeof(int));
	for (int pass = 0; pass < 2; pass++) {
		for (int g = 0; g < p->ngroups; g++)
			for (int r = 0; r < p->groups[g].nreplicas; r++)
				for (int s = 0; s < p->groups[g].nstages; s++) {
					int k = gpu_id(d, g, r, s, 0);
					int n = p->groups[g].replicas[r].ngpus[s];
					for (int i = 0; i < n; i++) {
						int node = d->gpunode[k + i], first = 1;
						for (int j = 0; j < i && first; j++)
							first = d->gpunode[k + j] != node;
						if (!first)
							continue;
						if (pass == 0) {
							d->part_first[node + 1]++;
						} else {
							int *e = d->parts[at[node]++];
							e[0] = g;
							e[1] = r;
							e[2] = s;
						}
					}
				}
		if (pass == 0) {
			for (int n = 0; n < d->nnodes; n++)
				d->part_first[n + 1] += d->part_first[n];
			d->parts =
			    hx_xcalloc((size_t)d->part_first[d->nnodes] + 1, sizeof(*d->parts));
			at = hx_xmalloc(((size_t)d->nnodes + 1) * sizeof(int));
			memcpy(at, d->part_first, (size_t)d->nnodes * sizeof(int));
		}
	}
	free(at);
	d->fill = hx_xcalloc((size_t)p->ngroups + 1, sizeof(int));
	d->fed = hx_xcalloc((size_t)p->ngroups + 1, 1);
	for (int g = 0; g < p->ngroups; g++) {
		d->fill[g] = count[p->groups[g].role]++ % NSHADES;
		hx_map_put(&groups, p->groups[g].name, g);
	}
	for (int i = 0; i < p->ningress; i++) {
		int g = hx_map_get(&groups, p->ingress[i].to);
		if (g >= 0)
			d->fed[g] = 1;
	}
	hx_map_release(&groups);
	if (d->o && d->o->cluster)
		for (int i = 0; i < d->o->cluster->nnodes; i++)
			hx_map_put(&d->cl_ids, d->o->cluster->nodes[i].name, i);
}

/* The GPUs of stage S of replica R (overall) on node N. */
static int part_size(const dot_state *d, int rg, int s, int n, int nstage)
{
	int k0 = d->gpubase[rg * HX_MAX_STAGES + s], c = 0;

	for (int i = 0; i < nstage; i++)
		c += d->gpunode[k0 + i] == n;
	return c;
}

/* The cluster around GPU occurrence K (of replica R overall, stage S, which
 * has NSTAGE GPUs): "" when that part of the stage is that one GPU alone,
 * labelled on the GPU itself. */
static void part_name(char *out, size_t n, const dot_state *d, int rg, int s, int k, int nstage)
{
	if (part_size(d, rg, s, d->gpunode[k], nstage) == 1)
		out[0] = '\0';
	else
		snprintf(out, n, "cluster_n%d_r%d_s%d", d->gpunode[k], rg, s);
}

/* The GPU type(s) of node N: the cluster's when given, else the stages'. */
static void node_gpu_types(dot_state *d, int n, hx_buf *out)
{
	const hx_plan *p = d->p;
	const char *seen[16];
	int nseen = 0;

	if (d->o && d->o->cluster) {
		int i = hx_map_get(&d->cl_ids, d->nodes[n]);
		if (i >= 0) {
			esc(out, d->o->cluster->nodes[i].gpu.name);
			return;
		}
	}
	for (int e = d->part_first[n]; e < d->part_first[n + 1]; e++) {
		int g = d->parts[e][0], s = d->parts[e][2], dup = 0;
		const char *t = p->groups[g].stage[s].gpu;
		for (int j = 0; j < nseen && !dup; j++)
			dup = strcmp(seen[j], t) == 0;
		if (dup || nseen == 16)
			continue;
		if (nseen)
			hx_buf_printf(out, ", ");
		esc(out, t);
		seen[nseen++] = t;
	}
}

/* "[0,80)" and its stage: "TP2 [0,80)" or, in a pipeline, "s1 TP2 [41,80)". */
static void stage_text(hx_buf *b, const hx_plan_group *g, int s)
{
	if (g->nstages > 1)
		hx_buf_printf(b, "s%d ", s);
	hx_buf_printf(b, "TP%d [%d,%d)", g->stage[s].tp, g->stage[s].first, g->stage[s].last);
}

static const char *group_fill(const dot_state *d, int g)
{
	hx_role r = d->p->groups[g].role;
	return r == HX_ROLE_PREFILL  ? pre_fill[d->fill[g]]
	       : r == HX_ROLE_DECODE ? dec_fill[d->fill[g]]
				     : agg_fill[d->fill[g]];
}

/* ---- the picture ------------------------------------------------------- */

static void emit_header(dot_state *d)
{
	const hx_plan *p = d->p;
	hx_buf *b = &d->b;

	hx_buf_printf(b, "digraph \"plan\" {\n");
	hx_buf_printf(b, "\tgraph [rankdir=LR, compound=true, newrank=true, ranksep=0.3, "
			 "nodesep=0.12, fontname=\"Helvetica\", fontsize=12, labelloc=t, "
			 "labeljust=l, label=\"");
	hx_buf_printf(b, "plan: ");
	esc(b, p->mode);
	hx_buf_printf(b, ", model%s ", p->nmodels == 1 ? "" : "s");
	for (int i = 0; i < p->nmodels; i++) {
		if (i)
			hx_buf_printf(b, ", ");
		esc(b, p->models[i].name);
	}
	hx_buf_printf(b, "; %d group%s, %d replica%s, %d GPU%s", p->ngroups,
		      p->ngroups == 1 ? "" : "s", d->nrep, d->nrep == 1 ? "" : "s", d->ngpu,
		      d->ngpu == 1 ? "" : "s");
	if (p->predicted.capacity_rps > 0 || p->predicted.usd_per_hour > 0)
		hx_buf_printf(b,
			      "\\lpredicted: %.4g req/s, TTFT p99 %.4g ms, TPOT p99 %.4g ms, "
			      "$%.4g/h",
			      p->predicted.capacity_rps, p->predicted.ttft_ms_p99,
			      p->predicted.tpot_ms_p99, p->predicted.usd_per_hour);
	if (p->ncascade > 0) {
		hx_buf_printf(b, "\\lcascade: ");
		for (int i = 0; i < p->ncascade; i++) {
			char sh[32];
			if (i)
				hx_buf_printf(b, " -> ");
			esc(b, p->cascade[i].model);
			if (i + 1 < p->ncascade) {
				pct(sh, sizeof(sh), p->cascade[i].escalate);
				hx_buf_printf(b, " (score < %g: %s on)",
					      p->cascade[i].threshold, sh);
			}
		}
	}
	hx_buf_printf(b, "\\l\"];\n");
	hx_buf_printf(b, "\tnode [fontname=\"Helvetica\", fontsize=10, shape=box, "
			 "style=filled, fillcolor=white, height=0.3, margin=\"0.06,0.03\"];\n");
	hx_buf_printf(b, "\tedge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\", "
			 "arrowsize=0.6];\n\n");
}

/* The legend: a swatch per role used, and what the edges mean. */
static void emit_legend(dot_state *d)
{
	const hx_plan *p = d->p;
	hx_buf *b = &d->b;
	int used[3] = {0, 0, 0};

	for (int g = 0; g < p->ngroups; g++)
		used[p->groups[g].role] = 1;
	hx_buf_printf(b,
		      "\tsubgraph \"cluster_legend\" {\n\t\tlabel=\"legend\"; style=rounded; "
		      "color=\"#999999\"; fontsize=10;\n");
	for (int r = 0; r < 3; r++)
		if (used[r])
			hx_buf_printf(
			    b,
			    "\t\t\"legend_%s\" [label=\"%s\", shape=%s, fillcolor=\"%s\", "
			    "color=\"%s\"];\n",
			    hx_role_name((hx_role)r), hx_role_name((hx_role)r),
			    role_shape((hx_role)r), role_swatch((hx_role)r),
			    role_pen((hx_role)r));
	hx_buf_printf(b,
		      "\t\t\"legend_edges\" [shape=plaintext, style=\"\", fontsize=9, label=\""
		      "grey box: a node (name, GPU type)\\l"
		      "framed: a replica stage (TP, layers [first,last))\\l"
		      "filled: a GPU (node:index), in its group's colour\\l"
		      "ingress -> group: share of requests\\l"
		      "group -> replica: its members\\l");
	for (int g = 0; g < p->ngroups; g++)
		if (p->groups[g].nstages > 1) {
			hx_buf_printf(b, "bold: pipeline stage -> stage (link Gb/s)\\l");
			break;
		}
	if (p->nkv > 0)
		hx_buf_printf(b, "dashed: KV prefill -> decode (share)\\l");
	if (p->nhops > 0)
		hx_buf_printf(b, "dotted: hop stage -> stage (share)\\l");
	hx_buf_printf(b, "\"];\n\t}\n\n");
}

/* One node per group: its shape. */
static void emit_groups(dot_state *d)
{
	const hx_plan *p = d->p;
	hx_buf *b = &d->b;

	hx_buf_printf(
	    b, "\t\"ingress\" [label=\"ingress\", shape=oval, fillcolor=\"#eeeeee\"];\n");
	for (int g = 0; g < p->ngroups; g++) {
		const hx_plan_group *gr = &p->groups[g];
		hx_buf_printf(b, "\t\"group%d\" [label=\"", g);
		esc(b, gr->name);
		hx_buf_printf(b, " (%s)\\n", hx_role_name(gr->role));
		esc(b, gr->model);
		for (int s = 0; s < gr->nstages; s++) {
			hx_buf_printf(b, "\\n");
			esc(b, gr->stage[s].gpu);
			hx_buf_printf(b, " ");
			stage_text(b, gr, s);
		}
		hx_buf_printf(b, "\\n%d replica%s", gr->nreplicas,
			      gr->nreplicas == 1 ? "" : "s");
		if (gr->capacity_rps > 0)
			hx_buf_printf(b, ", %.3g req/s each", gr->capacity_rps);
		hx_buf_printf(b, "\", shape=%s, fillcolor=\"%s\", color=\"%s\"%s];\n",
			      role_shape(gr->role), group_fill(d, g), role_pen(gr->role),
			      gr->role == HX_ROLE_AGGREGATED ? "" : ", margin=\"0.22,0.05\"");
	}
	hx_buf_printf(b, "\n");
}

/* Node clusters, each with its replica stages and their GPUs. */
static void emit_nodes(dot_state *d)
{
	const hx_plan *p = d->p;
	hx_buf *b = &d->b;

	for (int n = 0; n < d->nnodes; n++) {
		hx_buf_printf(b, "\tsubgraph \"cluster_n%d\" {\n\t\tlabel=\"", n);
		esc(b, d->nodes[n]);
		hx_buf_printf(b, " (");
		node_gpu_types(d, n, b);
		hx_buf_printf(b, ")\"; style=\"rounded,filled\"; fillcolor=\"#f7f7f7\"; "
				 "color=\"#888888\";\n");
		for (int e = d->part_first[n]; e < d->part_first[n + 1]; e++) {
			int g = d->parts[e][0], r = d->parts[e][1], s = d->parts[e][2];
			const hx_plan_group *gr = &p->groups[g];
			const hx_plan_replica *rep = &gr->replicas[r];
			int k0 = gpu_id(d, g, r, s, 0), prev = -1;
			char cl[64];
			for (int i = 0; i < rep->ngpus[s] && prev < 0; i++)
				if (d->gpunode[k0 + i] == n)
					prev = i;
			if (prev < 0)
				continue;
			part_name(cl, sizeof(cl), d, d->rbase[g] + r, s, k0 + prev,
				  rep->ngpus[s]);
			if (cl[0]) {
				hx_buf_printf(b, "\t\tsubgraph \"%s\" {\n\t\t\tlabel=\"", cl);
				esc(b, rep->id);
				hx_buf_printf(b, " ");
				stage_text(b, gr, s);
				hx_buf_printf(b,
					      "\"; style=\"rounded,filled\"; "
					      "fillcolor=white; "
					      "color=\"%s\"; fontsize=10;\n",
					      role_pen(gr->role));
			}
			prev = -1;
			for (int i = 0; i < rep->ngpus[s]; i++) {
				int k = k0 + i;
				if (d->gpunode[k] != n)
					continue;
				hx_buf_printf(b, "\t\t%s\"gpu%d\" [label=\"", cl[0] ? "\t" : "",
					      k);
				esc(b, rep->gpus[s][i].node);
				hx_buf_printf(b, ":%d", rep->gpus[s][i].index);
				if (!cl[0]) { /* alone: the stage on the GPU */
					hx_buf_printf(b, "\\n");
					esc(b, rep->id);
					hx_buf_printf(b, " ");
					stage_text(b, gr, s);
				}
				hx_buf_printf(b, "\", fillcolor=\"%s\", tooltip=\"",
					      group_fill(d, g));
				esc(b, rep->id);
				hx_buf_printf(b, " ");
				stage_text(b, gr, s);
				hx_buf_printf(b, " on ");
				esc(b, gr->stage[s].gpu);
				hx_buf_printf(b, "\"");
				if (!cl[0])
					hx_buf_printf(b, ", color=\"%s\", penwidth=1.5",
						      role_pen(gr->role));
				hx_buf_printf(b, "];\n");
				if (prev >= 0) /* TP GPUs side by side */
					hx_buf_printf(b,
						      "\t\t\t\"gpu%d\" -> \"gpu%d\" "
						      "[style=invis];\n",
						      prev, k);
				prev = k;
			}
			if (cl[0])
				hx_buf_printf(b, "\t\t}\n");
		}
		hx_buf_printf(b, "\t}\n");
	}
	hx_buf_printf(b, "\n");
}

/* An edge from GPU occurrence A (in cluster CA, "" for none) to B (in CB). */
static void edge(hx_buf *b, int a, const char *ca, int bb, const char *cb)
{
	hx_buf_printf(b, "\t\"gpu%d\" -> \"gpu%d\" [", a, bb);
	if (ca[0])
		hx_buf_printf(b, "ltail=\"%s\", ", ca);
	if (cb[0])
		hx_buf_printf(b, "lhead=\"%s\", ", cb);
}

/* Find the replica named ID (or "ID/sN" when STAGES): 1 with G, R, S (-1:
 * no stage named), else 0. */
static int find_endpoint(const hx_plan *p, const char *id, int stages, int *g, int *r, int *s)
{
	char name[64];
	const char *slash = stages ? strrchr(id, '/') : NULL;

	*s = -1;
	hx_strlcpy(name, id, sizeof(name));
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < p->ngroups; i++)
			for (int j = 0; j < p->groups[i].nreplicas; j++)
				if (strcmp(p->groups[i].replicas[j].id, name) == 0) {
					*g = i;
					*r = j;
					return *s < p->groups[i].nstages;
				}
		if (pass || !slash || slash[1] != 's' || !slash[2] ||
		    strspn(slash + 2, "0123456789") != strlen(slash + 2) ||
		    strlen(slash + 2) > 5)
			return 0;
		name[slash - id] = '\0';
		*s = atoi(slash + 2);
	}
	return 0;
}

/* The first GPU of stage S of a replica (the last when LAST), with its
 * cluster; -1 when the stage has no GPUs. */
static int stage_gpu(const dot_state *d, int g, int r, int s, int last, char *cl, size_t n)
{
	const hx_plan_replica *rep = &d->p->groups[g].replicas[r];
	int k;

	if (rep->ngpus[s] == 0)
		return -1;
	k = gpu_id(d, g, r, s, last ? rep->ngpus[s] - 1 : 0);
	part_name(cl, n, d, d->rbase[g] + r, s, k, rep->ngpus[s]);
	return k;
}

/* A node standing for an endpoint the plan does not have. */
static void missing_node(hx_buf *b, const char *what, int i, const char *name)
{
	hx_buf_printf(b, "\t\"%s%d\" [label=\"", what, i);
	esc(b, name);
	hx_buf_printf(b, "\\n(not in the plan)\", fillcolor=\"#ffffff\", color=red, "
			 "style=\"filled,dashed\"];\n");
}

static void emit_ingress(dot_state *d)
{
	const hx_plan *p = d->p;
	hx_buf *b = &d->b;

	for (int i = 0; i < p->ningress; i++) {
		const hx_route *x = &p->ingress[i];
		int g = hx_plan_group_index(p, x->to);
		char sh[32];
		pct(sh, sizeof(sh), x->weight);
		if (g < 0) {
			missing_node(b, "nogroup", i, x->to);
			hx_buf_printf(b, "\t\"ingress\" -> \"nogroup%d\" [label=\"", i);
		} else {
			hx_buf_printf(b, "\t\"ingress\" -> \"group%d\" [label=\"", g);
		}
		if (x->from[0]) {
			esc(b, x->from);
			hx_buf_printf(b, ": ");
		}
		hx_buf_printf(b, "%s\", penwidth=1.5];\n", sh);
	}
	/* group -> each replica: to its first stage when requests enter the
	 * group, else (a decode group) from its last stage to the group's node,
	 * drawn after them, arrow still at the replica */
	for (int g = 0; g < p->ngroups; g++) {
		const hx_plan_group *gr = &p->groups[g];
		int fed = d->fed[g];
		for (int r = 0; r < gr->nreplicas; r++) {
			char cl[64];
			int k = gr->nstages > 0 ? stage_gpu(d, g, r, fed ? 0 : gr->nstages - 1,
							    !fed, cl, sizeof(cl))
						: -1;
			if (k < 0)
				continue;
			if (fed)
				hx_buf_printf(b, "\t\"group%d\" -> \"gpu%d\" [", g, k);
			else
				hx_buf_printf(b, "\t\"gpu%d\" -> \"group%d\" [dir=back, ", k,
					      g);
			if (cl[0])
				hx_buf_printf(b, "%s=\"%s\", ", fed ? "lhead" : "ltail", cl);
			hx_buf_printf(b, "color=\"#999999\"];\n");
		}
	}
	hx_buf_printf(b, "\n");
}

static void emit_pipelines(dot_state *d)
{
	const hx_plan *p = d->p;
	hx_buf *b = &d->b;

	for (int g = 0; g < p->ngroups; g++) {
		const hx_plan_group *gr = &p->groups[g];
		for (int r = 0; r < gr->nreplicas; r++) {
			const hx_plan_replica *rep = &gr->replicas[r];
			for (int s = 0; s < gr->nstages; s++) {
				char ca[64], cb[64];
				int a, bb;
				/* a TP group across nodes: its parts, joined */
				for (int i = 1; i < rep->ngpus[s]; i++) {
					int k = gpu_id(d, g, r, s, i);
					if (d->gpunode[k] == d->gpunode[k - 1])
						continue;
					part_name(ca, sizeof(ca), d, d->rbase[g] + r, s, k - 1,
						  rep->ngpus[s]);
					part_name(cb, sizeof(cb), d, d->rbase[g] + r, s, k,
						  rep->ngpus[s]);
					if (ca[0] && strcmp(ca, cb) == 0)
						continue;
					edge(b, k - 1, ca, k, cb);
					hx_buf_printf(b, "dir=none, style=dotted, label=\"TP");
					if (rep->tp_link[s].bw_gbps > 0)
						hx_buf_printf(b, " %g Gb/s",
							      rep->tp_link[s].bw_gbps);
					hx_buf_printf(b, "\"];\n");
				}
				if (s + 1 >= gr->nstages)
					continue;
				a = stage_gpu(d, g, r, s, 1, ca, sizeof(ca));
				bb = stage_gpu(d, g, r, s + 1, 0, cb, sizeof(cb));
				if (a < 0 || bb < 0)
					continue;
				edge(b, a, ca, bb, cb);
				hx_buf_printf(b, "style=bold, color=\"%s\", label=\"",
					      role_pen(gr->role));
				if (rep->link[s].bw_gbps > 0)
					hx_buf_printf(b, "%g Gb/s", rep->link[s].bw_gbps);
				else
					hx_buf_printf(b, "s%d -> s%d", s, s + 1);
				hx_buf_printf(b, "\", tooltip=\"");
				esc(b, rep->id);
				hx_buf_printf(b, " s%d -> s%d: %g Gb/s, %g ms\"];\n", s, s + 1,
					      rep->link[s].bw_gbps, rep->link[s].latency_ms);
			}
		}
	}
}

/* KV routes (replica -> replica) or hops (replica[/sN] -> replica[/sN]). */
static void emit_routes(dot_state *d, const hx_route *list, int n, int hops)
{
	const hx_plan *p = d->p;
	hx_buf *b = &d->b;
	const char *what = hops ? "hop" : "kv";

	for (int i = 0; i < n; i++) {
		const hx_route *x = &list[i];
		int fg = 0, fr = 0, fs = -1, tg = 0, tr = 0, ts = -1, a = -1, bb = -1;
		char ca[64] = "", cb[64] = "", sh[32];
		if (find_endpoint(p, x->from, hops, &fg, &fr, &fs) && p->groups[fg].nstages > 0)
			a = stage_gpu(d, fg, fr, fs >= 0 ? fs : p->groups[fg].nstages - 1, 1,
				      ca, sizeof(ca));
		if (find_endpoint(p, x->to, hops, &tg, &tr, &ts) && p->groups[tg].nstages > 0)
			bb = stage_gpu(d, tg, tr, ts >= 0 ? ts : 0, 0, cb, sizeof(cb));
		if (a < 0)
			missing_node(b, hops ? "nohopfrom" : "nokvfrom", i, x->from);
		if (bb < 0)
			missing_node(b, hops ? "nohopto" : "nokvto", i, x->to);
		if (a >= 0 && bb >= 0 && strcmp(ca, cb) == 0)
			ca[0] = cb[0] = '\0'; /* a loop: no cluster ends */
		if (a >= 0)
			hx_buf_printf(b, "\t\"gpu%d\" -> ", a);
		else
			hx_buf_printf(b, "\t\"no%sfrom%d\" -> ", what, i);
		if (bb >= 0)
			hx_buf_printf(b, "\"gpu%d\" [", bb);
		else
			hx_buf_printf(b, "\"no%sto%d\" [", what, i);
		if (a >= 0 && ca[0])
			hx_buf_printf(b, "ltail=\"%s\", ", ca);
		if (bb >= 0 && cb[0])
			hx_buf_printf(b, "lhead=\"%s\", ", cb);
		pct(sh, sizeof(sh), x->weight);
		hx_buf_printf(
		    b, "style=%s, color=\"%s\", fontcolor=\"%s\", label=\"%s\", tooltip=\"",
		    hops ? "dotted" : "dashed", hops ? "#6a51a3" : "#d94801",
		    hops ? "#6a51a3" : "#d94801", sh);
		esc(b, x->from);
		hx_buf_printf(b, " -> ");
		esc(b, x->to);
		hx_buf_printf(b, ": %s", sh);
		if (x->link[0]) {
			hx_buf_printf(b, " over ");
			esc(b, x->link);
		}
		if (x->bw_gbps > 0)
			hx_buf_printf(b, " (%g Gb/s)", x->bw_gbps);
		hx_buf_printf(b, "\"];\n");
	}
}

int hx_export_dot(const hx_plan *p, const hx_export_opts *o, hx_export_out *out, hx_err *err)
{
	dot_state d;

	(void)err;
	memset(&d, 0, sizeof(d));
	d.p = p;
	d.o = o;
	index_plan(&d);
	index_parts(&d);
	emit_header(&d);
	emit_legend(&d);
	emit_groups(&d);
	emit_nodes(&d);
	emit_ingress(&d);
	emit_pipelines(&d);
	emit_routes(&d, p->kv, p->nkv, 0);
	emit_routes(&d, p->hops, p->nhops, 1);
	hx_buf_printf(&d.b, "}\n");
	hx_export_add(out, "plan.dot", d.b.s);
	free(d.rbase);
	free(d.gpubase);
	free(d.gpunode);
	free(d.nodes);
	free(d.part_first);
	free(d.parts);
	free(d.fill);
	free(d.fed);
	hx_map_release(&d.node_ids);
	hx_map_release(&d.cl_ids);
	return 0;
}
