/*
 * jsonw: a streaming JSON writer that produces, byte for byte, what
 * hx_json_dump (jansson's json_dumps with JSON_INDENT(2) and
 * JSON_REAL_PRECISION(10), plus a newline) produces for the same tree, without
 * building the tree.  Large documents (a plan with 100k routes) are written
 * in a fraction of the time and memory; small parts can still be built as
 * jansson trees and written in place with hx_jw_json.
 *
 * Each value call takes KEY: the member's name inside an object, NULL inside
 * an array or for the document itself.  Values jansson cannot hold are left
 * out as json_object_set_new and json_array_append_new leave them out: a
 * real that is not finite (json_real returns NULL), a NULL or invalid UTF-8
 * string (json_string returns NULL).
 */
#ifndef HX_JSONW_H
#define HX_JSONW_H

#include <jansson.h>

#include <stddef.h>

#define HX_JW_MAX_DEPTH 64

typedef struct hx_jw {
	char *buf;
	size_t len, cap;
	/* open containers; used[D]: the one at depth D+1 has members */
	int depth;
	unsigned char used[HX_JW_MAX_DEPTH];
} hx_jw;

void hx_jw_init(hx_jw *w);
/* The document with a trailing newline: a new string, the caller frees it;
 * W is empty afterwards. */
char *hx_jw_finish(hx_jw *w);
void hx_jw_release(hx_jw *w);

/* Open an object ('{') or an array ('['); close it with '}' or ']'. */
void hx_jw_open(hx_jw *w, const char *key, char brace);
void hx_jw_close(hx_jw *w, char brace);

void hx_jw_str(hx_jw *w, const char *key, const char *s);
void hx_jw_int(hx_jw *w, const char *key, long long v);
/* A real as json_real writes it; left out when not finite. */
void hx_jw_real(hx_jw *w, const char *key, double v);
/* As hx_jset_num: rounded to 6 significant digits, null when not finite. */
void hx_jw_num(hx_jw *w, const char *key, double v);
void hx_jw_bool(hx_jw *w, const char *key, int v);
void hx_jw_null(hx_jw *w, const char *key);
/* Write the tree V in place and release it (steals V, as
 * json_object_set_new does); a NULL V is left out. */
void hx_jw_json(hx_jw *w, const char *key, json_t *v);

/* Jansson's text for finite real V at JSON_REAL_PRECISION(10) into OUT[32],
 * with a NUL; returns its length. */
int hx_jw_real_text(double v, char out[32]);

#endif
