/*
 * jsonio: strict JSON reading and stable JSON writing over jansson.  Loaders
 * reject duplicate keys, unknown keys, wrong types and out-of-range numbers;
 * syntax errors name "path:line:col", value errors "path: /json/pointer".
 */
#ifndef HX_JSONIO_H
#define HX_JSONIO_H

#include <jansson.h>

#include "base/util.h"

/* Parse the file at PATH ("-" for stdin); returns a new reference, or NULL
 * with ERR filled ("PATH:LINE:COL: message"). */
json_t *hx_json_load_file(const char *path, hx_err *err);
/* Parse TEXT, naming it NAME in errors; new reference or NULL. */
json_t *hx_json_load_text(const char *text, const char *name, hx_err *err);

/* Dump V as indented JSON with a trailing newline: new string, caller frees. */
char *hx_json_dump(const json_t *v);
/* Write V atomically to PATH ("-": stdout). */
int hx_json_write(const json_t *v, const char *path, hx_err *err);

/* A reader names the file in its messages.  Every hx_jr_* call returns 0, or
 * HX_EINPUT with the reader's error filled. */
typedef struct hx_jr {
	const char *file;
	hx_err *err;
} hx_jr;

/* Fail with "FILE: PTR: message". */
int hx_jr_fail(const hx_jr *r, const char *ptr, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* V must be an object whose keys are all in ALLOWED (NULL-terminated). */
int hx_jr_object(const hx_jr *r, const json_t *v, const char *ptr, const char *const *allowed);
/* V must be an array; *N gets its length.  MIN_LEN: fewest items allowed. */
int hx_jr_array(const hx_jr *r, const json_t *v, const char *ptr, size_t min_len, size_t *n);

/* Field getters on object OBJ at pointer PTR.  When the key is absent and
 * REQUIRED is 0 the output keeps its value (the default). */
int hx_jr_num(const hx_jr *r, const json_t *obj, const char *ptr, const char *key, int required,
	      double lo, double hi, double *out);
/* Like hx_jr_num, but LO itself is not allowed (a positive number: lo 0). */
int hx_jr_pos(const hx_jr *r, const json_t *obj, const char *ptr, const char *key, int required,
	      double *out);
int hx_jr_int(const hx_jr *r, const json_t *obj, const char *ptr, const char *key, int required,
	      long lo, long hi, long *out);
int hx_jr_bool(const hx_jr *r, const json_t *obj, const char *ptr, const char *key,
	       int required, int *out);
/* String copied into BUF[N]; an empty string or one too long is an error. */
int hx_jr_str(const hx_jr *r, const json_t *obj, const char *ptr, const char *key, int required,
	      char *buf, size_t n);
/* String that must be one of CHOICES (NULL-terminated); *OUT gets its index. */
int hx_jr_enum(const hx_jr *r, const json_t *obj, const char *ptr, const char *key,
	       int required, const char *const *choices, int *out);
/* The file must say "version": 1. */
int hx_jr_version(const hx_jr *r, const json_t *obj);

/* Append "/KEY" (escaped as RFC 6901 says) or "/INDEX" to PTR into OUT[N]. */
void hx_ptr_key(char *out, size_t n, const char *ptr, const char *key);
void hx_ptr_index(char *out, size_t n, const char *ptr, size_t index);

/* Object builders that keep output code short.  They steal nothing. */
void hx_jset_num(json_t *obj, const char *key, double v);
void hx_jset_int(json_t *obj, const char *key, long v);
void hx_jset_str(json_t *obj, const char *key, const char *v);

#endif
