/* ighook: see ighook.h. */
#include "config.h"

#include "solver/ighook.h"

#include <igraph/igraph.h>
#include <setjmp.h>
#include <stdio.h>

/* igraph's handlers take no context: this is the one place that needs
 * module state (igraph itself is not re-entrant either). */
static jmp_buf *fatal_jump;
static char last_error[256];
static int forced;

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

void hx_igraph_force_error(int mode)
{
	forced = mode;
}

typedef struct guard_ctx {
	int (*fn)(void *);
	void *ctx;
	int rc;
	jmp_buf jump;
} guard_ctx;

static int guarded(guard_ctx *g)
{
	fatal_jump = &g->jump;
	if (setjmp(g->jump))
		return -1;
	if (forced == 1) {
		forced = 0;
		g->rc = IGRAPH_EINVAL;
		IGRAPH_ERROR_NO_RETURN("forced error for a test", IGRAPH_EINVAL);
	} else if (forced == 2) {
		forced = 0;
		igraph_fatal("forced fatal error for a test", __FILE__, __LINE__);
	} else {
		g->rc = g->fn(g->ctx);
	}
	return 0;
}

int hx_igraph_guard(int (*fn)(void *ctx), void *ctx, const char *what, hx_err *err)
{
	igraph_error_handler_t *old_err;
	igraph_fatal_handler_t *old_fatal;
	guard_ctx *g = hx_xcalloc(1, sizeof(*g));
	int rc = HX_OK;

	g->fn = fn;
	g->ctx = ctx;
	old_err = igraph_set_error_handler(on_error);
	old_fatal = igraph_set_fatal_handler(on_fatal);
	last_error[0] = '\0';
	if (guarded(g) != 0 || g->rc != IGRAPH_SUCCESS)
		rc = hx_errf(err, HX_EINPUT, "%s failed: %s", what,
			     last_error[0] ? last_error : "igraph error");
	igraph_set_error_handler(old_err);
	igraph_set_fatal_handler(old_fatal);
	fatal_jump = NULL;
	free(g);
	return rc;
}
