/* milp: see milp.h.  The only module that includes glpk.h. */
#include "config.h"

#include "solver/milp.h"

#include <ctype.h>
#include <errno.h>
#include <glpk.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct var {
	char name[64];
	int kind;
	double lo, hi, obj;
} var;

typedef struct row {
	char name[64];
	int n, *idx;
	double *val, lo, hi;
} row;

struct hx_milp {
	int maximize;
	var *v;
	int nv, capv;
	row *r;
	int nr, capr;
	int force_error;
	int force_trouble;
};

static const char *const status_names[] = {"optimal",     "gap_limit",  "work_limit",
					   "time_limit",  "infeasible", "unbounded",
					   "no_solution", "error"};

const char *hx_milp_status_name(hx_milp_status s)
{
	return status_names[s];
}

const char *hx_milp_plan_status(hx_milp_status s)
{
	return s <= HX_MILP_TIME_LIMIT ? status_names[s] : "work_limit";
}

hx_milp *hx_milp_new(int maximize)
{
	hx_milp *m = hx_xcalloc(1, sizeof(*m));
	m->maximize = maximize;
	return m;
}

void hx_milp_free(hx_milp *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->nr; i++) {
		free(m->r[i].idx);
		free(m->r[i].val);
	}
	free(m->r);
	free(m->v);
	free(m);
}

/* CPLEX LP names: letters, digits and !"#$%&()/,.;?@_`'{}|~, not starting
 * with a digit or a period; no spaces or colons.  Keep it simple. */
static void legal_name(char *dst, size_t n, const char *src, char prefix, int index)
{
	size_t k = 0;

	if (!src || !*src || isdigit((unsigned char)*src) || *src == '.')
		k = (size_t)snprintf(dst, n, "%c%d_", prefix, index);
	for (; src && *src && k + 1 < n; src++)
		dst[k++] = isalnum((unsigned char)*src) || *src == '_' ? *src : '_';
	dst[k < n ? k : n - 1] = '\0';
}

int hx_milp_add_var(hx_milp *m, const char *name, int kind, double lo, double hi, double obj)
{
	var *x;

	if (m->nv == m->capv) {
		m->capv = m->capv ? 2 * m->capv : 64;
		m->v = hx_xrealloc(m->v, (size_t)m->capv * sizeof(var));
	}
	x = &m->v[m->nv];
	legal_name(x->name, sizeof(x->name), name, 'x', m->nv);
	x->kind = kind;
	x->lo = kind == HX_MILP_BIN ? 0 : lo;
	x->hi = kind == HX_MILP_BIN ? 1 : hi;
	x->obj = obj;
	return m->nv++;
}

int hx_milp_add_row(hx_milp *m, const char *name, int n, const int *idx, const double *val,
		    double lo, double hi)
{
	row *r;

	if (m->nr == m->capr) {
		m->capr = m->capr ? 2 * m->capr : 64;
		m->r = hx_xrealloc(m->r, (size_t)m->capr * sizeof(row));
	}
	r = &m->r[m->nr];
	legal_name(r->name, sizeof(r->name), name, 'r', m->nr);
	r->n = n;
	r->idx = hx_xmalloc((size_t)(n ? n : 1) * sizeof(int));
	r->val = hx_xmalloc((size_t)(n ? n : 1) * sizeof(double));
	memcpy(r->idx, idx, (size_t)n * sizeof(int));
	memcpy(r->val, val, (size_t)n * sizeof(double));
	r->lo = lo;
	r->hi = hi;
	return m->nr++;
}

int hx_milp_nvars(const hx_milp *m)
{
	return m->nv;
}

void hx_milp_force_error(hx_milp *m)
{
	m->force_error = 1;
}

void hx_milp_force_trouble(hx_milp *m, int n)
{
	m->force_trouble = n;
}

static int bounds_type(double lo, double hi)
{
	int fl = isfinite(lo), fh = isfinite(hi);
	if (fl && fh)
		return lo == hi ? GLP_FX : GLP_DB;
	if (fl)
		return GLP_LO;
	if (fh)
		return GLP_UP;
	return GLP_FR;
}

/* GLPK's error hook: it must not return; jump back into hx_milp_solve. */
static jmp_buf *error_jump;

static void on_glpk_error(void *info)
{
	(void)info;
	longjmp(*error_jump, 1);
}

static int quiet(void *info, const char *s)
{
	(void)info;
	(void)s;
	return 1; /* swallow */
}

static int to_stderr(void *info, const char *s)
{
	(void)info;
	fputs(s, stderr);
	return 1;
}

typedef struct search {
	int maximize;
	long node_limit;
	double bound;
	long nodes;
	int stopped;
} search;

static void callback(glp_tree *t, void *info)
{
	search *s = info;
	int a, n, total, best;

	glp_ios_tree_size(t, &a, &n, &total);
	s->nodes = total;
	best = glp_ios_best_node(t);
	if (best > 0) {
		double b = glp_ios_node_bound(t, best);
		/* The best bound only tightens. */
		if (s->maximize ? b < s->bound : b > s->bound)
			s->bound = b;
	}
	if (s->node_limit > 0 && total > s->node_limit && !s->stopped) {
		s->stopped = 1;
		glp_ios_terminate(t);
	}
}

typedef struct solve_ctx {
	const hx_milp *m;
	const hx_milp_opts *o;
	hx_milp_result *res;
	hx_err *err;
	glp_prob *lp;
	int *ia, *ja;
	double *ar;
	int ret;
	search s;
	jmp_buf jump;
} solve_ctx;

/* The model LP in CPLEX LP format, in a new string in *OUT (replacing the
 * one there).  GLPK writes only to files: a temporary file under $TMPDIR
 * (or /tmp), registered so that a signal removes it, read back and
 * removed.  The caller writes the text to its path with the atomic writer,
 * together with its other outputs.  Returns 0 or HX_EINPUT. */
static int render_lp(glp_prob *lp, char **out, hx_err *err)
{
	const char *dir = getenv("TMPDIR");
	char *tmp, *text = NULL;
	int fd, rc = HX_OK;
	size_t len;

	if (!dir || !*dir)
		dir = "/tmp";
	tmp = hx_xmalloc(strlen(dir) + 32);
	sprintf(tmp, "%s/hexplan-lp.XXXXXX", dir);
	if ((fd = hx_temp_create(tmp)) < 0) {
		rc = hx_errf(err, HX_EINPUT,
			     "cannot create a temporary file in %s for the LP file: %s", dir,
			     strerror(errno));
		free(tmp);
		return rc;
	}
	close(fd);
	if (glp_write_lp(lp, NULL, tmp) != 0)
		rc = hx_errf(err, HX_EINPUT, "%s: GLPK cannot write the LP file", tmp);
	else if (!(text = hx_read_file_max(tmp, HX_MAX_CSV_BYTES, &len, err)))
		rc = HX_EINPUT;
	unlink(tmp);
	hx_temp_forget(tmp);
	free(tmp);
	if (!rc) {
		free(*out);
		*out = text;
	}
	return rc;
}

/* Everything that calls GLPK; an internal error longjmps out of it. */
static void solve_inner(solve_ctx *c)
{
	const hx_milp *m = c->m;
	const hx_milp_opts *o = c->o;
	hx_milp_result *res = c->res;
	glp_iocp parm;
	int rc, mst, nz = 0;

	c->lp = glp_create_prob();
	glp_set_obj_dir(c->lp, m->maximize ? GLP_MAX : GLP_MIN);
	if (m->nv > 0)
		glp_add_cols(c->lp, m->nv);
	if (m->nr > 0)
		glp_add_rows(c->lp, m->nr);
	for (int j = 0; j < m->nv; j++) {
		const var *v = &m->v[j];
		glp_set_col_name(c->lp, j + 1, v->name);
		glp_set_col_kind(c->lp, j + 1,
				 v->kind == HX_MILP_CONT  ? GLP_CV
				 : v->kind == HX_MILP_BIN ? GLP_BV
							  : GLP_IV);
		if (v->kind != HX_MILP_BIN)
			glp_set_col_bnds(c->lp, j + 1, bounds_type(v->lo, v->hi),
					 isfinite(v->lo) ? v->lo : 0,
					 isfinite(v->hi) ? v->hi : 0);
		glp_set_obj_coef(c->lp, j + 1, v->obj);
	}
	for (int i = 0; i < m->nr; i++) {
		const row *r = &m->r[i];
		glp_set_row_name(c->lp, i + 1, r->name);
		glp_set_row_bnds(c->lp, i + 1, bounds_type(r->lo, r->hi),
				 isfinite(r->lo) ? r->lo : 0, isfinite(r->hi) ? r->hi : 0);
		for (int k = 0; k < r->n; k++) {
			nz++;
			c->ia[nz] = i + 1;
			c->ja[nz] = r->idx[k] + 1;
			c->ar[nz] = r->val[k];
		}
	}
	if (m->force_error && nz > 0)
		c->ia[1] = m->nr + 5; /* out of range: GLPK's internal error path */
	if (nz > 0)
		glp_load_matrix(c->lp, nz, c->ia, c->ja, c->ar);
	if (o->lp_text && (c->ret = render_lp(c->lp, o->lp_text, c->err)))
		return;
	glp_init_iocp(&parm);
	parm.presolve = GLP_ON;
	parm.msg_lev = o->verbose ? GLP_MSG_ON : GLP_MSG_OFF;
	parm.mip_gap = o->mip_gap > 0 ? o->mip_gap : 0;
	parm.tm_lim = o->time_limit_s > 0 ? (int)fmin(o->time_limit_s * 1000, 2e9) : INT32_MAX;
	parm.cb_func = callback;
	parm.cb_info = &c->s;
	rc = glp_intopt(c->lp, &parm);
	mst = glp_mip_status(c->lp);
	if (m->force_trouble >= 1) {
		rc = GLP_EFAIL;
		mst = GLP_UNDEF;
	}
	if (rc == GLP_EFAIL && mst != GLP_OPT && mst != GLP_FEAS) {
		/* Numerical trouble in the LP relaxation (a singular or
		 * ill-conditioned basis): retry once from a fresh, scaled start
		 * with the dual simplex and without presolve. */
		glp_smcp sp;
		glp_init_smcp(&sp);
		sp.msg_lev = parm.msg_lev;
		sp.meth = GLP_DUALP;
		sp.tm_lim = parm.tm_lim;
		glp_scale_prob(c->lp, GLP_SF_AUTO);
		glp_adv_basis(c->lp, 0);
		rc = glp_simplex(c->lp, &sp);
		if (rc == 0 && glp_get_status(c->lp) == GLP_OPT) {
			parm.presolve = GLP_OFF;
			rc = glp_intopt(c->lp, &parm);
			mst = glp_mip_status(c->lp);
		} else if (rc == 0 && glp_get_status(c->lp) == GLP_NOFEAS) {
			rc = GLP_ENOPFS;
		} else if (rc == 0) {
			rc = GLP_EFAIL;
		}
		if (m->force_trouble >= 2) {
			rc = GLP_EFAIL;
			mst = GLP_UNDEF;
		}
		res->retried = 1;
	}
	res->nodes = c->s.nodes;
	res->iterations = glp_get_it_cnt(c->lp);
	if (rc == GLP_ENOPFS || mst == GLP_NOFEAS) {
		res->status = HX_MILP_INFEASIBLE;
		return;
	}
	if (rc == GLP_ENODFS) {
		res->status = HX_MILP_UNBOUNDED;
		return;
	}
	if (mst != GLP_OPT && mst != GLP_FEAS) {
		res->status = rc == 0 || rc == GLP_EFAIL ? HX_MILP_ERROR : HX_MILP_NO_SOLUTION;
		if (res->status == HX_MILP_ERROR && rc == GLP_EFAIL)
			c->ret = hx_errf(
			    c->err, HX_EINPUT,
			    "GLPK reports numerical trouble solving the model, also after a scaled restart without presolve");
		else if (res->status == HX_MILP_ERROR)
			c->ret = hx_errf(c->err, HX_EINPUT,
					 "GLPK failed to solve the model (code %d)", rc);
		return;
	}
	res->objective = glp_mip_obj_val(c->lp);
	for (int j = 0; j < m->nv; j++)
		res->x[j] = glp_mip_col_val(c->lp, j + 1);
	if (rc == 0 && mst == GLP_OPT) {
		res->status = HX_MILP_OPTIMAL;
		res->bound = res->objective;
	} else {
		res->status = rc == GLP_EMIPGAP  ? HX_MILP_GAP_LIMIT
			      : rc == GLP_ETMLIM ? HX_MILP_TIME_LIMIT
						 : HX_MILP_WORK_LIMIT;
		res->bound = isfinite(c->s.bound) ? c->s.bound : res->objective;
		/* The bound cannot be worse than the incumbent. */
		if (m->maximize ? res->bound < res->objective : res->bound > res->objective)
			res->bound = res->objective;
	}
	res->gap = fabs(res->bound - res->objective) / fmax(fabs(res->objective), 1e-9);
}

/* Run solve_inner with GLPK's error hook jumping back here. */
static int guarded(solve_ctx *c)
{
	error_jump = &c->jump;
	glp_error_hook(on_glpk_error, NULL);
	if (setjmp(c->jump))
		return -1;
	solve_inner(c);
	return 0;
}

int hx_milp_solve(const hx_milp *m, const hx_milp_opts *opts, hx_milp_result *res, hx_err *err)
{
	static const hx_milp_opts def = {0, 0, 0, 0, NULL};
	solve_ctx *c = hx_xcalloc(1, sizeof(*c));
	int nz = 0, ret;

	c->m = m;
	c->o = opts ? opts : &def;
	c->res = res;
	c->err = err;
	memset(res, 0, sizeof(*res));
	res->x = hx_xcalloc((size_t)m->nv + 1, sizeof(double));
	c->s = (search){m->maximize, c->o->node_limit > 0 ? c->o->node_limit : 200000,
			m->maximize ? INFINITY : -INFINITY, 0, 0};
	for (int i = 0; i < m->nr; i++)
		nz += m->r[i].n;
	c->ia = hx_xmalloc((size_t)(nz + 1) * sizeof(int));
	c->ja = hx_xmalloc((size_t)(nz + 1) * sizeof(int));
	c->ar = hx_xmalloc((size_t)(nz + 1) * sizeof(double));
	glp_term_hook(c->o->verbose ? to_stderr : quiet, NULL);
	if (guarded(c) != 0) {
		/* GLPK's environment is unusable now: free all of it. */
		glp_free_env();
		res->status = HX_MILP_ERROR;
		c->ret =
		    hx_errf(err, HX_EINPUT, "internal GLPK error (the model was rejected)");
	} else {
		if (c->lp)
			glp_delete_prob(c->lp);
		glp_free_env(); /* each solve is self-contained */
	}
	glp_error_hook(NULL, NULL);
	error_jump = NULL;
	ret = c->ret;
	free(c->ia);
	free(c->ja);
	free(c->ar);
	free(c);
	return ret;
}
