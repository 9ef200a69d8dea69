/* jsonw: see jsonw.h.  The layout rules are jansson 2.14's do_dump with an
 * indent of 2 (dump.c), the numbers its jsonp_dtostr without dtoa
 * (strconv.c); tests/check_load.c compares the two on every kind of value. */
#include "config.h"

#include "base/jsonw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

void hx_jw_init(hx_jw *w)
{
	memset(w, 0, sizeof(*w));
}

void hx_jw_release(hx_jw *w)
{
	free(w->buf);
	hx_jw_init(w);
}

/* Room for N more bytes. */
static char *room(hx_jw *w, size_t n)
{
	if (w->cap - w->len < n) {
		size_t cap = w->cap ? w->cap : 4096;
		while (cap - w->len < n) {
			if (cap > (size_t)-1 / 2)
				hx_oom(w->len + n);
			cap *= 2;
		}
		w->buf = hx_xrealloc(w->buf, cap);
		w->cap = cap;
	}
	return w->buf + w->len;
}

static void put(hx_jw *w, const char *s, size_t n)
{
	memcpy(room(w, n), s, n);
	w->len += n;
}

/* A newline and the indent of depth D. */
static void newline(hx_jw *w, int d)
{
	char *p = room(w, 1 + 2 * (size_t)d);

	*p = '\n';
	memset(p + 1, ' ', 2 * (size_t)d);
	w->len += 1 + 2 * (size_t)d;
}

/* Length of the valid UTF-8 sequence at S (1 to 4, *CP its code point), or 0
 * when there is none: jansson's utf8_check_first and utf8_check_full. */
static int utf8_seq(const unsigned char *s, int *cp)
{
	unsigned u = s[0];
	int n, v;

	if (u < 0x80) {
		*cp = (int)u;
		return 1;
	}
	if (u >= 0xC2 && u <= 0xDF)
		n = 2, v = (int)(u & 0x1F);
	else if (u >= 0xE0 && u <= 0xEF)
		n = 3, v = (int)(u & 0xF);
	else if (u >= 0xF0 && u <= 0xF4)
		n = 4, v = (int)(u & 0x7);
	else
		return 0;
	for (int i = 1; i < n; i++) {
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0; /* also the terminating NUL */
		v = (v << 6) + (s[i] & 0x3F);
	}
	if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF) || (n == 2 && v < 0x80) ||
	    (n == 3 && v < 0x800) || (n == 4 && v < 0x10000))
		return 0;
	*cp = v;
	return n;
}

/* Whether S is a string json_string accepts. */
static int utf8_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int cp;

	while (*p) {
		int n = *p < 0x80 ? 1 : utf8_seq(p, &cp);
		if (!n)
			return 0;
		p += n;
	}
	return 1;
}

/* The escape of byte C (a control character, '"' or '\\', never NUL) into
 * SEQ; returns its length. */
static size_t escape(unsigned char c, char seq[8])
{
	static const char from[] = "\\\"\b\f\n\r\t", to[] = "\\\"bfnrt";
	const char *k = strchr(from, c);

	if (k) {
		seq[0] = '\\';
		seq[1] = to[k - from];
		return 2;
	}
	snprintf(seq, 8, "\\u%04X", (unsigned)c);
	return 6;
}

/* S (valid UTF-8) quoted and escaped as dump_string does without flags. */
static void quoted(hx_jw *w, const char *s)
{
	const unsigned char *p = (const unsigned char *)s, *run = p;

	put(w, "\"", 1);
	for (; *p; p++) {
		char seq[8];
		if (*p >= 0x20 && *p != '"' && *p != '\\')
			continue;
		put(w, (const char *)run, (size_t)(p - run));
		put(w, seq, escape(*p, seq));
		run = p + 1;
	}
	put(w, (const char *)run, (size_t)(p - run));
	put(w, "\"", 1);
}

/* The separator before a member or item, and the key of a member. */
static void item(hx_jw *w, const char *key)
{
	if (w->depth > 0) {
		if (w->used[w->depth - 1])
			put(w, ",", 1);
		w->used[w->depth - 1] = 1;
		newline(w, w->depth);
	}
	if (key) {
		quoted(w, key);
		put(w, ": ", 2);
	}
}

void hx_jw_open(hx_jw *w, const char *key, char brace)
{
	item(w, key);
	put(w, &brace, 1);
	if (w->depth >= HX_JW_MAX_DEPTH)
		abort(); /* a writer's own nesting, never the input's */
	w->used[w->depth++] = 0;
}

void hx_jw_close(hx_jw *w, char brace)
{
	if (w->used[--w->depth])
		newline(w, w->depth);
	put(w, &brace, 1);
}

void hx_jw_str(hx_jw *w, const char *key, const char *s)
{
	if (!s || !utf8_ok(s))
		return;
	item(w, key);
	quoted(w, s);
}

/* Digits of U into OUT, most significant first; returns how
 * many. */
static int digits(unsigned long long u, char *out)
{
	char t[20];
	int n = 0;

	do {
		t[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	for (int i = 0; i < n; i++)
		out[i] = t[n - 1 - i];
	return n;
}

/* The fast cases of %.10g, exact: a whole number below 10^9 and a multiple of
 * 10^-6 from 10^-4 to below 10^4 (10 significant digits at most, so the
 * binary value's error never reaches the 10th digit's rounding), written to
 * OUT with a NUL.  Returns the length, or 0 when V is neither. */
static int real_fast(double v, char *out)
{
	double a = fabs(v);
	char *p = out;
	long long k;

	if (a == 0 || a >= 1e9 || !(a >= 1e-4))
		return 0;
	if (v < 0)
		*p++ = '-';
	if (a == (double)(long long)a) {
		p += digits((unsigned long long)a, p);
		memcpy(p, ".0", 3);
		return (int)(p + 2 - out);
	}
	if (a >= 1e4)
		return 0;
	k = llround(a * 1e6);
	if ((double)k / 1e6 != a)
		return 0;
	p += digits((unsigned long long)(k / 1000000), p);
	*p++ = '.';
	k %= 1000000;
	for (long long d = 100000; k; d /= 10) {
		*p++ = (char)('0' + k / d);
		k %= d;
	}
	*p = '\0';
	return (int)(p - out);
}

int hx_jw_real_text(double v, char out[32])
{
	int n = real_fast(v, out);
	char *e;

	if (n)
		return n;
	n = snprintf(out, 32, "%.10g", v);
	if (!strchr(out, '.') && !strchr(out, 'e')) {
		memcpy(out + n, ".0", 3);
		n += 2;
	}
	/* no '+' and no leading zeros in the exponent */
	if ((e = strchr(out, 'e'))) {
		char *start = e + 1, *end = e + 2;
		if (*start == '-')
			start++;
		while (*end == '0')
			end++;
		if (end != start) {
			memmove(start, end, (size_t)(out + n + 1 - end));
			n -= (int)(end - start);
		}
	}
	return n;
}

void hx_jw_int(hx_jw *w, const char *key, long long v)
{
	char s[24];
	int n = 0;

	if (v < 0)
		s[n++] = '-';
	n += digits(v < 0 ? 0 - (unsigned long long)v : (unsigned long long)v, s + n);
	item(w, key);
	put(w, s, (size_t)n);
}

void hx_jw_real(hx_jw *w, const char *key, double v)
{
	char s[32];
	int n;

	if (!isfinite(v))
		return;
	n = hx_jw_real_text(v, s);
	item(w, key);
	put(w, s, (size_t)n);
}

void hx_jw_num(hx_jw *w, const char *key, double v)
{
	if (isfinite(v))
		hx_jw_real(w, key, hx_round6(v));
	else
		hx_jw_null(w, key);
}

void hx_jw_bool(hx_jw *w, const char *key, int v)
{
	item(w, key);
	put(w, v ? "true" : "false", v ? 4 : 5);
}

void hx_jw_null(hx_jw *w, const char *key)
{
	item(w, key);
	put(w, "null", 4);
}

/* json_dump_callback's sink: every newline of the subtree's text gets the
 * indent of the depth it is written at. */
static int sink(const char *s, size_t n, void *data)
{
	hx_jw *w = data;
	const char *nl;

	while (n && (nl = memchr(s, '\n', n))) {
		put(w, s, (size_t)(nl - s));
		newline(w, w->depth);
		n -= (size_t)(nl + 1 - s);
		s = nl + 1;
	}
	put(w, s, n);
	return 0;
}

void hx_jw_json(hx_jw *w, const char *key, json_t *v)
{
	if (!v)
		return;
	item(w, key);
	if (json_dump_callback(v, sink, w,
			       JSON_INDENT(2) | JSON_REAL_PRECISION(10) | JSON_ENCODE_ANY))
		hx_oom(0); /* as hx_json_dump: jansson fails only out of memory */
	json_decref(v);
}

char *hx_jw_finish(hx_jw *w)
{
	char *s;

	put(w, "\n", 1);
	*room(w, 1) = '\0';
	s = w->buf;
	hx_jw_init(w);
	return s;
}
