/* tables: the strict CSV loaders (traces, measurements, layer costs). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonio.h"
#include "model/problem.h"
#include "model/tables.h"

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

/* The longest CSV field read: no valid value is longer, and a longer one
 * quoted whole would bury the message. */
#define CSV_FIELD_MAX 64

/* Fill ERR and return -1 when one of the N fields F of line LINENO of PATH
 * is longer than CSV_FIELD_MAX characters or holds a control character
 * (names become labels in reports and files); 0 otherwise. */
static int csv_fields_ok(char **f, int n, const char *path, int lineno, hx_err *err)
{
	for (int i = 0; i < n; i++) {
		if (strlen(f[i]) > CSV_FIELD_MAX) {
			hx_errf(err, HX_EINPUT, "%s:%d: field %d is longer than %d characters",
				path, lineno, i + 1, CSV_FIELD_MAX);
			return -1;
		}
		for (const unsigned char *c = (const unsigned char *)f[i]; *c; c++)
			if (*c < 0x20 || *c == 0x7f) {
				hx_errf(err, HX_EINPUT,
					"%s:%d: field %d holds a control character (\\x%02x)",
					path, lineno, i + 1, *c);
				return -1;
			}
	}
	return 0;
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

	/* Decimal only: strtod also takes hexadecimal ("0x1p3"), "inf" and
	 * "nan", which no trace or measurement holds. */
	if (s[strspn(s, "0123456789+-.eE")])
		return -1;
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

	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	if (sscanf(s, "%d-%d-%d %d:%d:%lf%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || s[n] ||
	    y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h < 0 ||
	    h > 23 || mi < 0 || mi > 59 || sec < 0 || sec >= 61)
		return -1;
	/* The day must exist: 2023-02-31 is no date, nor 2023-02-29. */
	if (mo == 2 && d == 29 && (y % 4 != 0 || (y % 100 == 0 && y % 400 != 0)))
		return -1;
	/* The seconds field is digits and one point (sscanf takes "1e1" and
	 * hexadecimal). */
	{
		const char *sp = strrchr(s, ':') + 1;
		if (sp[strspn(sp, "0123456789.")])
			return -1;
	}
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
	text = hx_read_text_max(path, HX_MAX_CSV_BYTES, NULL, err);
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
			"%s:1: unknown trace header (expected "
			"\"arrival_s,input_tokens,output_tokens\" "
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
		if (csv_fields_ok(f, 3, path, lineno, err))
			goto out;
		if (azure ? parse_timestamp(f[0], &at) : parse_double(f[0], &at)) {
			hx_errf(err, HX_EINPUT, "%s:%d: bad %s \"%s\"", path, lineno,
				azure ? "TIMESTAMP" : "arrival_s", f[0]);
			goto out;
		}
		if (t->n == 0)
			t0 = azure ? at : 0;
		at -= t0;
		if (t->n > 0 && at < prev) {
			hx_errf(err, HX_EINPUT,
				"%s:%d: arrivals must not go back in time (%.6f after %.6f)",
				path, lineno, at, prev);
			goto out;
		}
		if (at < 0) {
			hx_errf(err, HX_EINPUT, "%s:%d: arrival_s must not be negative", path,
				lineno);
			goto out;
		}
		if (at > HX_MAX_ARRIVAL_S) {
			hx_errf(
			    err, HX_EINPUT,
			    "%s:%d: an arrival %.10g s after the first is past hexplan's limit "
			    "of %g s",
			    path, lineno, at, HX_MAX_ARRIVAL_S);
			goto out;
		}
		if (parse_long(f[1], 1, 10000000, &in)) {
			hx_errf(err, HX_EINPUT,
				"%s:%d: %s must be an integer from 1 to 10000000, not \"%s\"",
				path, lineno, azure ? "ContextTokens" : "input_tokens", f[1]);
			goto out;
		}
		if (parse_long(f[2], 1, 10000000, &outp)) {
			hx_errf(err, HX_EINPUT,
				"%s:%d: %s must be an integer from 1 to 10000000, not \"%s\"",
				path, lineno, azure ? "GeneratedTokens" : "output_tokens",
				f[2]);
			goto out;
		}
		if (t->n == HX_MAX_REQUESTS) {
			hx_errf(err, HX_EINPUT,
				"%s:%d: more than hexplan's limit of %d requests", path, lineno,
				HX_MAX_REQUESTS);
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
	text = hx_read_text_max(path, HX_MAX_CSV_BYTES, NULL, err);
	path = hx_display_path(path);
	if (!text)
		return HX_EINPUT;
	cur = text;
	line = next_line(&cur);
	if (!line || strcmp(line, "gpu,model,tp,phase,batch,tokens,context,ms") != 0) {
		hx_errf(
		    err, HX_EINPUT,
		    "%s:1: expected the header \"gpu,model,tp,phase,batch,tokens,context,ms\"",
		    path);
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
		if (csv_fields_ok(f, 8, path, lineno, err))
			goto out;
		if (!*f[0] || hx_strlcpy(x.gpu, f[0], sizeof(x.gpu)) || !*f[1] ||
		    hx_strlcpy(x.model, f[1], sizeof(x.model))) {
			hx_errf(err, HX_EINPUT, "%s:%d: gpu and model must be names", path,
				lineno);
			goto out;
		}
		for (k = 0; phases[k] && strcmp(phases[k], f[3]); k++)
			;
		if (!phases[k]) {
			hx_errf(err, HX_EINPUT,
				"%s:%d: phase must be prefill, decode or linear, not \"%s\"",
				path, lineno, f[3]);
			goto out;
		}
		x.phase = k;
		{
			static const char *const names[] = {"tp", "batch", "tokens", "context"};
			static const int col[] = {2, 4, 5, 6};
			static const long lo[] = {1, 1, 1, 0},
					  hi[] = {1024, 1000000, 10000000, 10000000};
			for (int j = 0; j < 4; j++) {
				if (parse_long(f[col[j]], lo[j], hi[j], &v[j])) {
					hx_errf(err, HX_EINPUT,
						"%s:%d: %s must be an integer from %ld to %ld, "
						"not \"%s\"",
						path, lineno, names[j], lo[j], hi[j],
						f[col[j]]);
					goto out;
				}
			}
		}
		if (parse_double(f[7], &x.ms) || x.ms <= 0) {
			hx_errf(err, HX_EINPUT,
				"%s:%d: ms must be a positive number, not \"%s\"", path, lineno,
				f[7]);
			goto out;
		}
		if (x.ms > 1e9) { /* 11 days for one step */
			hx_errf(err, HX_EINPUT, "%s:%d: ms must be at most 1e9, not \"%s\"",
				path, lineno, f[7]);
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

/* ---- measured per-layer costs ------------------------------------------------- */

int hx_layer_costs_load(hx_layer_cost **out, int *n, const char *path, hx_err *err)
{
	char *text, *cur, *nl;
	const char *shown;
	int lineno = 0, cap = 0, rc = HX_EINPUT;
	hx_layer_cost *v = NULL;
	hx_map seen = {0};

	*out = NULL;
	*n = 0;
	if (!(text = hx_read_text_max(path, HX_MAX_CSV_BYTES, NULL, err)))
		return HX_EINPUT;
	shown = hx_display_path(path);
	for (cur = text; cur && *cur; cur = nl) {
		char *line = cur, *f[7], *end;
		int nf = 0;
		hx_layer_cost x;
		long tp;
		if ((nl = strchr(cur, '\n')))
			*nl++ = '\0';
		lineno++;
		if (*line && line[strlen(line) - 1] == '\r')
			line[strlen(line) - 1] = '\0';
		if (lineno == 1) {
			if (strcmp(line, "gpu,tp,phase,tokens,context,ms") != 0) {
				hx_errf(err, HX_EINPUT,
					"%s:1: expected the header "
					"\"gpu,tp,phase,tokens,context,ms\"",
					shown);
				goto out;
			}
			continue;
		}
		if (!*line)
			continue;
		f[nf++] = line;
		for (char *c = line; *c; c++)
			if (*c == ',') {
				*c = '\0';
				if (nf < 7)
					f[nf] = c + 1;
				nf++;
			}
		if (nf != 6) {
			hx_errf(err, HX_EINPUT, "%s:%d: expected 6 fields", shown, lineno);
			goto out;
		}
		if (csv_fields_ok(f, 6, shown, lineno, err))
			goto out;
		memset(&x, 0, sizeof(x));
		x.line = lineno;
		if (!*f[0] || hx_strlcpy(x.gpu, f[0], sizeof(x.gpu))) {
			hx_errf(err, HX_EINPUT,
				"%s:%d: gpu must be a name of at most 47 characters", shown,
				lineno);
			goto out;
		}
		tp = strtol(f[1], &end, 10);
		if (!*f[1] || *end || tp < 1 || tp > 1024) {
			hx_errf(err, HX_EINPUT,
				"%s:%d: tp must be an integer from 1 to 1024, not \"%s\"",
				shown, lineno, f[1]);
			goto out;
		}
		x.tp = (int)tp;
		if (strcmp(f[2], "decode") == 0)
			x.phase = HX_LC_DECODE;
		else if (strcmp(f[2], "prefill") == 0)
			x.phase = HX_LC_PREFILL;
		else {
			hx_errf(err, HX_EINPUT,
				"%s:%d: phase must be decode or prefill, not \"%s\"", shown,
				lineno, f[2]);
			goto out;
		}
		if (parse_double(f[3], &x.tokens) || !(x.tokens >= 1 && x.tokens <= 1e7)) {
			hx_errf(err, HX_EINPUT,
				"%s:%d: tokens must be a number from 1 to 1e7, not \"%s\"",
				shown, lineno, f[3]);
			goto out;
		}
		if (parse_double(f[4], &x.context) || !(x.context >= 0 && x.context <= 1e7)) {
			hx_errf(err, HX_EINPUT,
				"%s:%d: context must be a number from 0 to 1e7, not \"%s\"",
				shown, lineno, f[4]);
			goto out;
		}
		if (parse_double(f[5], &x.ms) || !(x.ms > 0 && x.ms < 1e9)) {
			hx_errf(err, HX_EINPUT,
				"%s:%d: ms must be a positive number, not \"%s\"", shown,
				lineno, f[5]);
			goto out;
		}
		{
			/* By hash: a table may hold 100k rows. */
			char key[96];
			int first;
			snprintf(key, sizeof(key), "%s|%d|%d|%.17g", x.gpu, x.tp, x.phase,
				 x.tokens);
			if ((first = hx_map_put(&seen, key, lineno)) >= 0) {
				hx_errf(err, HX_EINPUT,
					"%s:%d: a second row for %s, tp %d, %s, %g tokens "
					"(first at line %d)",
					shown, lineno, x.gpu, x.tp, f[2], x.tokens, first);
				goto out;
			}
		}
		if (*n == cap) {
			cap = cap ? 2 * cap : 32;
			v = hx_xrealloc(v, (size_t)cap * sizeof(*v));
		}
		v[(*n)++] = x;
	}
	if (lineno == 0) {
		hx_errf(err, HX_EINPUT,
			"%s:1: expected the header \"gpu,tp,phase,tokens,context,ms\"", shown);
		goto out;
	}
	if (*n == 0) {
		hx_errf(err, HX_EINPUT, "%s: no rows", shown);
		goto out;
	}
	*out = v;
	v = NULL;
	rc = 0;
out:
	if (rc)
		*n = 0;
	hx_map_release(&seen);
	free(v);
	free(text);
	return rc;
}
