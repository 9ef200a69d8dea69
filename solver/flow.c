/* flow: see flow.h.  With partition.c, the only modules that include igraph. */
#include "config.h"

#include "flow.h"

#include <igraph/igraph.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

static jmp_buf *fatal_jump;
static char last_error[256];

static void on_error(const char *reason, const char *file, int line, igraph_error_t err)
{
	(void)file;
	(void)line;
	snprintf(last_error, sizeof(last_error), "%s (igraph error %d)", reason, (int)err);
	IGRAPH_FINALLY_FREE();
}

static void on_fatal(const char *reason, const char *file, int line)
{
	(void)file;
	(void)line;
	snprintf(last_error, sizeof(last_error), "%s (igraph fatal error)", reason);
	longjmp(*fatal_jump, 1);
}

typedef struct flow_ctx {
	const hx_graph *g;
	int s, t;
	hx_flow_result *res;
	int rc;
	jmp_buf jump;
} flow_ctx;

static void flow_inner(flow_ctx *c)
{
	const hx_graph *g = c->g;
	igraph_t ig;
	igraph_vector_int_t edges, part;
	igraph_vector_t cap, flow;
	igraph_real_t value;

	igraph_vector_int_init(&edges, 2 * g->m);
	for (int e = 0; e < g->m; e++) {
		VECTOR(edges)[2 * e] = g->from[e];
		VECTOR(edges)[2 * e + 1] = g->to[e];
	}
	igraph_vector_init(&cap, g->m);
	for (int e = 0; e < g->m; e++)
		VECTOR(cap)[e] = g->cap[e];
	igraph_vector_init(&flow, 0);
	igraph_vector_int_init(&part, 0);
	c->rc = igraph_create(&ig, &edges, g->n, IGRAPH_DIRECTED);
	if (c->rc == IGRAPH_SUCCESS) {
		c->rc = igraph_maxflow(&ig, &value, &flow, NULL, &part, NULL, c->s, c->t, &cap, NULL);
		if (c->rc == IGRAPH_SUCCESS) {
			c->res->value = value;
			for (int e = 0; e < g->m; e++)
				c->res->flow[e] = VECTOR(flow)[e];
			for (igraph_integer_t i = 0; i < igraph_vector_int_size(&part); i++)
				c->res->source_side[VECTOR(part)[i]] = 1;
		}
		igraph_destroy(&ig);
	}
	igraph_vector_int_destroy(&part);
	igraph_vector_destroy(&flow);
	igraph_vector_destroy(&cap);
	igraph_vector_int_destroy(&edges);
}

static int guarded(flow_ctx *c)
{
	fatal_jump = &c->jump;
	if (setjmp(c->jump))
		return -1;
	flow_inner(c);
	return 0;
}

int hx_flow_max(const hx_graph *g, int s, int t, hx_flow_result *res, hx_err *err)
{
	igraph_error_handler_t *old_err;
	igraph_fatal_handler_t *old_fatal;
	flow_ctx *c;
	int rc = HX_OK;

	memset(res, 0, sizeof(*res));
	res->flow = hx_xcalloc((size_t)g->m + 1, sizeof(double));
	res->source_side = hx_xcalloc((size_t)g->n + 1, sizeof(int));
	if (s < 0 || s >= g->n || t < 0 || t >= g->n || s == t)
		return hx_errf(err, HX_EINPUT, "max-flow: bad source or sink");
	for (int e = 0; e < g->m; e++)
		if (g->from[e] < 0 || g->from[e] >= g->n || g->to[e] < 0 || g->to[e] >= g->n ||
		    !(g->cap[e] >= 0))
			return hx_errf(err, HX_EINPUT, "max-flow: bad edge %d", e);
	c = hx_xcalloc(1, sizeof(*c));
	c->g = g;
	c->s = s;
	c->t = t;
	c->res = res;
	old_err = igraph_set_error_handler(on_error);
	old_fatal = igraph_set_fatal_handler(on_fatal);
	last_error[0] = '\0';
	if (guarded(c) != 0 || c->rc != IGRAPH_SUCCESS)
		rc = hx_errf(err, HX_EINPUT, "max-flow failed: %s", last_error[0] ? last_error : "igraph error");
	igraph_set_error_handler(old_err);
	igraph_set_fatal_handler(old_fatal);
	fatal_jump = NULL;
	free(c);
	return rc;
}

void hx_flow_result_release(hx_flow_result *res)
{
	free(res->flow);
	free(res->source_side);
	memset(res, 0, sizeof(*res));
}
