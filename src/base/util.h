/*
 * util: errors, memory, strings, files and the seeded generator that every
 * other module shares.  Library code reports failure by filling a hx_err and
 * returning its code; only the command layer prints and exits.
 *
 * The base layer (src/base/: util, jsonio, sha256) knows nothing of GPUs,
 * models or plans; it includes only the C library, jansson (jsonio) and its
 * own headers, and every other layer and solver/ may use it.
 */
#ifndef HX_UTIL_H
#define HX_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes (DESIGN §3); library functions return the same values. */
enum {
	HX_OK = 0,
	HX_EINPUT = 1,      /* bad input, I/O, internal solver error */
	HX_EUSAGE = 2,      /* command-line misuse */
	HX_EINFEASIBLE = 3, /* no plan meets the constraints */
	HX_ELIMIT = 4,      /* a limit was reached with no plan */
	HX_ESHORT = 5       /* a plan written, but short of the rate (replan) */
};

typedef struct hx_err {
	int code;
	char msg[1024];
} hx_err;

/* Fill ERR (may be NULL) with CODE and a printf-style message; return CODE. */
int hx_errf(hx_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Allocation that never returns NULL: out of memory, hx_oom removes the
 * temporary files being written, prints one line and aborts. */
void hx_oom(size_t n) __attribute__((noreturn));
void *hx_xmalloc(size_t n);
void *hx_xcalloc(size_t n, size_t size);
void *hx_xrealloc(void *p, size_t n);
char *hx_xstrdup(const char *s);

/* Copy SRC into DST[N]; return 0, or -1 when it does not fit (DST truncated). */
int hx_strlcpy(char *dst, const char *src, size_t n);

/* Read a whole file ("-" is stdin) into a new NUL-terminated buffer that the
 * caller frees; *LEN gets its length.  Returns NULL and fills ERR on failure. */
char *hx_read_file(const char *path, size_t *len, hx_err *err);
/* The same with a limit: a file (or stdin) longer than MAX bytes is an error
 * that names the limit, found before reading it when the size is known. */
char *hx_read_file_max(const char *path, size_t max, size_t *len, hx_err *err);

/* hx_read_file_max for text (CSV): a NUL byte is an error naming its line,
 * since the parsers would take it for the end of the file. */
char *hx_read_text_max(const char *path, size_t max, size_t *len, hx_err *err);

/* Seconds on the monotonic clock (for deadlines: never inside a plan). */
double hx_now(void);
/* A deadline LIMIT_S seconds from now; 0 (none) when LIMIT_S <= 0. */
double hx_deadline(double limit_s);
/* Whether DEADLINE (from hx_deadline) has passed; never when it is 0. */
int hx_past(double deadline);

/* Input size limits (hexplan-formats(5), LIMITS): JSON files, and CSV
 * traces and measurements. */
#define HX_MAX_JSON_BYTES ((size_t)64 << 20)
#define HX_MAX_CSV_BYTES  ((size_t)1 << 30)

/* Write DATA atomically to PATH: a temporary file in the same directory,
 * flushed and renamed over PATH, so PATH is either the old file or the whole
 * new one.  PATH "-" writes to stdout.  Returns 0 or HX_EINPUT. */
int hx_write_atomic(const char *path, const char *data, size_t len, hx_err *err);

/* Create the temporary file of mkstemp template TMP (which must stay valid
 * until forgotten) and register it for removal when SIGINT, SIGTERM or
 * SIGHUP ends the process (both with those signals blocked, so none falls
 * between).  Returns the descriptor, or -1 with errno set.  Unlink the file
 * and call hx_temp_forget(TMP) once it is renamed or removed. */
int hx_temp_create(char *tmp);
void hx_temp_forget(const char *tmp);

/* Several files at once: all are written to temporary files first, and only
 * when every one is complete are they renamed over their paths, so an error
 * leaves every old file as it was.  MODE 0: the old file's mode (or 0666 less
 * the umask); else that mode.  A device or FIFO path is written in place. */
typedef struct hx_out_file {
	const char *path;
	const char *data;
	size_t len;
	int mode;
} hx_out_file;
int hx_write_files_atomic(const hx_out_file *f, int n, hx_err *err);

/* Print S to F with control characters (and DEL) written as \xNN, so that
 * input text quoted in a message cannot move the cursor, ring or forge a
 * line. */
void hx_fputs_escaped(const char *s, FILE *f);

/* PATH as messages name it: "<stdin>" for "-". */
const char *hx_display_path(const char *path);
/* Directory part of PATH in a new string ("." when none). */
char *hx_dirname(const char *path);
/* PATH joined to DIR unless PATH is absolute; new string. */
char *hx_path_join(const char *dir, const char *path);

/* Growable string buffer. */
typedef struct hx_buf {
	char *s;
	size_t len, cap;
} hx_buf;
void hx_buf_printf(hx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void hx_buf_release(hx_buf *b);

/* A map from strings (copied) to non-negative ints, by hash with linear
 * probing: duplicate checks and name lookups in linear time.  Zero it to
 * start; hx_map_release frees it. */
typedef struct hx_map {
	char **keys;
	int *vals;
	size_t cap, n;
} hx_map;
/* KEY's value, or -1 when absent. */
int hx_map_get(const hx_map *m, const char *key);
/* Store KEY with VAL unless KEY is there: returns the value it had (and
 * keeps it), or -1 when it was new. */
int hx_map_put(hx_map *m, const char *key, int val);
void hx_map_release(hx_map *m);

/* Seeded generator (xoshiro256**); every random choice goes through one. */
typedef struct hx_rng {
	uint64_t s[4];
} hx_rng;
void hx_rng_seed(hx_rng *r, uint64_t seed);
uint64_t hx_rng_next(hx_rng *r);
double hx_rng_uniform(hx_rng *r); /* in (0, 1) */
double hx_rng_normal(hx_rng *r);

/* Standard normal CDF and its inverse. */
double hx_norm_cdf(double x);
double hx_norm_quantile(double p);

/* V rounded to 6 significant digits, so printed figures are stable. */
double hx_round6(double v);

/* A routing weight as plans hold it: V rounded to 6 decimals, and 0 (never
 * -0) when it is negative, not finite or rounds to 0. */
double hx_weight6(double v);

/* Median and p-quantile (0..1, linear interpolation) of N values; sorts V. */
double hx_quantile(double *v, size_t n, double q);
/* OUT[i]: hx_quantile(V, N, Q[i]) for NQ quantiles in ascending order, the
 * same values, found by selection (linear time) instead of a sort; reorders
 * V, which must hold no NaN. */
void hx_quantiles(double *v, size_t n, const double *q, int nq, double *out);

#define HX_GIB          (1024.0 * 1024.0 * 1024.0)
#define HX_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
