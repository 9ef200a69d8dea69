/* jsonio: see jsonio.h. */
#include "config.h"

#include "base/jsonio.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static json_t *load_common(const char *text, size_t len, const char *name, hx_err *err)
{
	json_error_t je;
	json_t *v;

	v = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!v) {
		hx_errf(err, HX_EINPUT, "%s:%d:%d: %s", name, je.line < 1 ? 1 : je.line,
			je.column < 1 ? 1 : je.column, je.text);
		return NULL;
	}
	return v;
}

json_t *hx_json_load_text(const char *text, const char *name, hx_err *err)
{
	return load_common(text, strlen(text), name, err);
}

json_t *hx_json_load_file(const char *path, hx_err *err)
{
	size_t len;
	char *text = hx_read_file(path, &len, err), *nul;
	const char *name;
	json_t *v;

	if (!text)
		return NULL;
	name = hx_display_path(path);
	if ((nul = memchr(text, '\0', len))) {
		int line = 1, col = 1;
		for (const char *p = text; p < nul; p++, col++)
			if (*p == '\n') {
				line++;
				col = 0;
			}
		free(text);
		hx_errf(err, HX_EINPUT, "%s:%d:%d: NUL byte in JSON text", name, line, col);
		return NULL;
	}
	if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
		free(text);
		hx_errf(
		    err, HX_EINPUT,
		    "%s:1:1: a UTF-8 byte order mark is not allowed at the start of JSON text",
		    name);
		return NULL;
	}
	v = load_common(text, len, name, err);
	free(text);
	return v;
}

char *hx_json_dump(const json_t *v)
{
	char *s = json_dumps(v, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	size_t n;
	char *out;

	if (!s)
		hx_oom(0);
	n = strlen(s);
	out = hx_xmalloc(n + 2);
	memcpy(out, s, n);
	out[n] = '\n';
	out[n + 1] = '\0';
	free(s);
	return out;
}

int hx_json_write(const json_t *v, const char *path, hx_err *err)
{
	char *s = hx_json_dump(v);
	int rc = hx_write_atomic(path, s, strlen(s), err);
	free(s);
	return rc;
}

int hx_jr_fail(const hx_jr *r, const char *ptr, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!*ptr) /* the document itself */
		return hx_errf(r->err, HX_EINPUT, "%s: %s", r->file, msg);
	return hx_errf(r->err, HX_EINPUT, "%s: %s: %s", r->file, ptr, msg);
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "a value";
}

void hx_ptr_key(char *out, size_t n, const char *ptr, const char *key)
{
	size_t len = (size_t)snprintf(out, n, "%s/", ptr);

	for (; *key && len + 3 < n; key++) {
		if (*key == '~') {
			out[len++] = '~';
			out[len++] = '0';
		} else if (*key == '/') {
			out[len++] = '~';
			out[len++] = '1';
		} else {
			out[len++] = *key;
		}
	}
	if (len < n)
		out[len] = '\0';
}

void hx_ptr_index(char *out, size_t n, const char *ptr, size_t index)
{
	snprintf(out, n, "%s/%zu", ptr, index);
}

int hx_jr_object(const hx_jr *r, const json_t *v, const char *ptr, const char *const *allowed)
{
	const char *key;
	json_t *val;
	char p[512];

	if (!json_is_object(v))
		return hx_jr_fail(r, ptr, "must be an object, not %s", type_name(v));
	json_object_foreach((json_t *)v, key, val)
	{
		const char *const *a;
		for (a = allowed; *a; a++)
			if (strcmp(*a, key) == 0)
				break;
		if (!*a) {
			hx_ptr_key(p, sizeof(p), ptr, key);
			return hx_jr_fail(r, p, "unknown key");
		}
	}
	return 0;
}

int hx_jr_array(const hx_jr *r, const json_t *v, const char *ptr, size_t min_len, size_t *n)
{
	if (!json_is_array(v))
		return hx_jr_fail(r, ptr, "must be an array, not %s", type_name(v));
	if (json_array_size(v) < min_len)
		return hx_jr_fail(r, ptr, "must have at least %zu item%s", min_len,
				  min_len == 1 ? "" : "s");
	if (n)
		*n = json_array_size(v);
	return 0;
}

/* Look KEY up in OBJ: 1 found (*V set), 0 absent and optional, or error. */
static int field(const hx_jr *r, const json_t *obj, const char *ptr, const char *key,
		 int required, char *p, size_t pn, json_t **v)
{
	hx_ptr_key(p, pn, ptr, key);
	*v = json_object_get(obj, key);
	if (!*v) {
		if (required)
			return -hx_jr_fail(r, ptr, "missing required key \"%s\"", key);
		return 0;
	}
	return 1;
}

/* A finite number at KEY: 1 found (*X set, P its pointer), 0 absent and
 * optional, or -HX_EINPUT. */
static int number(const hx_jr *r, const json_t *obj, const char *ptr, const char *key,
		  int required, char *p, size_t pn, double *x)
{
	json_t *v;
	int f = field(r, obj, ptr, key, required, p, pn, &v);

	if (f <= 0)
		return f;
	if (!json_is_number(v))
		return -hx_jr_fail(r, p, "must be a number, not %s", type_name(v));
	*x = json_number_value(v);
	if (!isfinite(*x))
		return -hx_jr_fail(r, p, "must be a finite number");
	return 1;
}

int hx_jr_num(const hx_jr *r, const json_t *obj, const char *ptr, const char *key, int required,
	      double lo, double hi, double *out)
{
	char p[512];
	double x;
	int f = number(r, obj, ptr, key, required, p, sizeof(p), &x);

	if (f <= 0)
		return -f;
	if (x < lo || x > hi)
		return hx_jr_fail(r, p, "must be between %g and %g, not %g", lo, hi, x);
	*out = x;
	return 0;
}

int hx_jr_pos(const hx_jr *r, const json_t *obj, const char *ptr, const char *key, int required,
	      double *out)
{
	char p[512];
	double x;
	int f = number(r, obj, ptr, key, required, p, sizeof(p), &x);

	if (f <= 0)
		return -f;
	if (x <= 0)
		return hx_jr_fail(r, p, "must be a positive number, not %g", x);
	if (x > 1e15)
		return hx_jr_fail(r, p, "must be at most 1e+15, not %g", x);
	/* Tiny and subnormal values (1e-320) overflow the reciprocals taken
	 * of them (a rate's mean gap, a bandwidth's transfer time). */
	if (x < 1e-9)
		return hx_jr_fail(r, p, "must be at least 1e-09, not %g", x);
	*out = x;
	return 0;
}

int hx_jr_int(const hx_jr *r, const json_t *obj, const char *ptr, const char *key, int required,
	      long lo, long hi, long *out)
{
	char p[512];
	json_t *v;
	json_int_t x;
	int f = field(r, obj, ptr, key, required, p, sizeof(p), &v);

	if (f <= 0)
		return -f;
	if (!json_is_integer(v))
		return hx_jr_fail(r, p, "must be an integer, not %s", type_name(v));
	x = json_integer_value(v);
	if (x < lo || x > hi) {
		if (lo == 1 && hi >= x)
			return hx_jr_fail(r, p, "must be a positive integer, not %lld",
					  (long long)x);
		return hx_jr_fail(r, p, "must be between %ld and %ld, not %lld", lo, hi,
				  (long long)x);
	}
	*out = (long)x;
	return 0;
}

int hx_jr_bool(const hx_jr *r, const json_t *obj, const char *ptr, const char *key,
	       int required, int *out)
{
	char p[512];
	json_t *v;
	int f = field(r, obj, ptr, key, required, p, sizeof(p), &v);

	if (f <= 0)
		return -f;
	if (!json_is_boolean(v))
		return hx_jr_fail(r, p, "must be true or false, not %s", type_name(v));
	*out = json_is_true(v);
	return 0;
}

int hx_jr_str(const hx_jr *r, const json_t *obj, const char *ptr, const char *key, int required,
	      char *buf, size_t n)
{
	char p[512];
	json_t *v;
	int f = field(r, obj, ptr, key, required, p, sizeof(p), &v);

	if (f <= 0)
		return -f;
	if (!json_is_string(v))
		return hx_jr_fail(r, p, "must be a string, not %s", type_name(v));
	if (json_string_length(v) == 0)
		return hx_jr_fail(r, p, "must not be empty");
	if (strlen(json_string_value(v)) != json_string_length(v))
		return hx_jr_fail(r, p, "must not contain NUL characters");
	if (hx_strlcpy(buf, json_string_value(v), n) != 0)
		return hx_jr_fail(r, p, "is longer than %zu characters", n - 1);
	return 0;
}

int hx_jr_enum(const hx_jr *r, const json_t *obj, const char *ptr, const char *key,
	       int required, const char *const *choices, int *out)
{
	char p[512], s[64];
	hx_buf list = {0};
	int rc, i;

	s[0] = '\0';
	if (!json_object_get(obj, key) && !required)
		return 0;
	rc = hx_jr_str(r, obj, ptr, key, required, s, sizeof(s));
	if (rc)
		return rc;
	for (i = 0; choices[i]; i++) {
		if (strcmp(choices[i], s) == 0) {
			*out = i;
			return 0;
		}
	}
	for (i = 0; choices[i]; i++)
		hx_buf_printf(&list, "%s%s", i ? ", " : "", choices[i]);
	hx_ptr_key(p, sizeof(p), ptr, key);
	rc = hx_jr_fail(r, p, "must be one of %s, not \"%s\"", list.s, s);
	hx_buf_release(&list);
	return rc;
}

int hx_jr_version(const hx_jr *r, const json_t *obj)
{
	long v = 0;
	int rc = hx_jr_int(r, obj, "", "version", 1, 0, 1000000, &v);

	if (rc)
		return rc;
	if (v != 1)
		return hx_jr_fail(r, "/version",
				  "unsupported version %ld (this hexplan reads version 1)", v);
	return 0;
}

void hx_jset_num(json_t *obj, const char *key, double v)
{
	json_object_set_new(obj, key, isfinite(v) ? json_real(hx_round6(v)) : json_null());
}

void hx_jset_int(json_t *obj, const char *key, long v)
{
	json_object_set_new(obj, key, json_integer(v));
}

void hx_jset_str(json_t *obj, const char *key, const char *v)
{
	json_object_set_new(obj, key, json_string(v));
}
