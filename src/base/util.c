/* util: see util.h. */
#include "config.h"

#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int hx_errf(hx_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}

static void remove_temps(void);

void hx_oom(size_t n)
{
	/* The temporary files being written go first: abort() is not one of
	 * the signals whose handler removes them. */
	remove_temps();
	fprintf(stderr, "hexplan: error: out of memory (%zu bytes)\n", n);
	abort();
}

/* Testing hooks, not for users (tests/cli/fault_sweep.sh sweeps them):
 * HEXPLAN_FAULT_ALLOC=N makes the Nth allocation through hx_xmalloc,
 * hx_xcalloc, hx_xrealloc (and jansson's, which main routes through
 * hx_xmalloc) fail as if memory ran out; HEXPLAN_FAULT_WRITE=N makes the
 * disk fill once N bytes in all have gone to the output files of the run.
 * Each is read once; the counts are the only state they keep. */
static long fault_env(const char *name)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return -1;
	v = strtol(s, &end, 10);
	return *end || v < 0 ? -1 : v;
}

static int alloc_fails(void)
{
	static long left = -2;

	if (left == -2)
		left = fault_env("HEXPLAN_FAULT_ALLOC");
	return left > 0 && --left == 0;
}

void *hx_xmalloc(size_t n)
{
	void *p = alloc_fails() ? NULL : malloc(n ? n : 1);
	if (!p)
		hx_oom(n);
	return p;
}

void *hx_xcalloc(size_t n, size_t size)
{
	void *p = alloc_fails() ? NULL : calloc(n ? n : 1, size ? size : 1);
	if (!p)
		hx_oom(n * size);
	return p;
}

void *hx_xrealloc(void *p, size_t n)
{
	void *q = alloc_fails() ? NULL : realloc(p, n ? n : 1);
	if (!q)
		hx_oom(n);
	return q;
}

char *hx_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = hx_xmalloc(n);
	memcpy(p, s, n);
	return p;
}

int hx_strlcpy(char *dst, const char *src, size_t n)
{
	size_t len = strlen(src);

	if (len < n) {
		memcpy(dst, src, len + 1);
		return 0;
	}
	if (n) {
		memcpy(dst, src, n - 1);
		dst[n - 1] = '\0';
	}
	return -1;
}

double hx_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double hx_deadline(double limit_s)
{
	return limit_s > 0 ? hx_now() + limit_s : 0;
}

int hx_past(double deadline)
{
	return deadline > 0 && hx_now() >= deadline;
}

static void size_text(size_t n, char *out, size_t len)
{
	if (n >= ((size_t)1 << 30) && n % ((size_t)1 << 30) == 0)
		snprintf(out, len, "%zu GiB", n >> 30);
	else
		snprintf(out, len, "%zu MiB", n >> 20);
}

/* Read PATH (or stdin for "-") whole, at most MAX bytes.  With TEXT, a NUL
 * byte is an error naming its line, found as each block arrives: a pipe or
 * /dev/zero given as a CSV fails at its first block, not at the limit. */
static char *read_bounded(const char *path, size_t max, int text, size_t *len, hx_err *err)
{
	FILE *f;
	char *buf = NULL, lim[32], *nul;
	size_t cap = 0, n = 0, got;
	int is_stdin = strcmp(path, "-") == 0;
	struct stat st;

	size_text(max, lim, sizeof(lim));
	f = is_stdin ? stdin : fopen(path, "rb");
	if (!f) {
		hx_errf(err, HX_EINPUT, "%s: %s", hx_display_path(path), strerror(errno));
		return NULL;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (uintmax_t)st.st_size > max) {
		hx_errf(err, HX_EINPUT,
			"%s: the file is larger than hexplan's limit of %s for this input",
			hx_display_path(path), lim);
		goto fail;
	}
	/* A regular file is read into a buffer of its size; anything else (a
	 * pipe, /dev/zero) into one that doubles, never past MAX + 1 bytes. */
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode))
		cap = (size_t)st.st_size + 1;
	else
		cap = max < 65536 ? max + 1 : 65536;
	buf = hx_xmalloc(cap + 1);
	for (;;) {
		if (n == cap) {
			cap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
			buf = hx_xrealloc(buf, cap + 1);
		}
		got = fread(buf + n, 1, cap - n, f);
		if (text && got > 0 && (nul = memchr(buf + n, '\0', got))) {
			long line = 1;
			for (const char *p = buf; p < nul; p++)
				line += *p == '\n';
			hx_errf(err, HX_EINPUT, "%s:%ld: a NUL byte (is it a text file?)",
				hx_display_path(path), line);
			goto fail;
		}
		n += got;
		if (n > max) {
			hx_errf(err, HX_EINPUT,
				"%s: the input is larger than hexplan's limit of %s",
				hx_display_path(path), lim);
			goto fail;
		}
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		hx_errf(err, HX_EINPUT, "%s: %s", hx_display_path(path),
			strerror(errno ? errno : EIO));
		goto fail;
	}
	buf[n] = '\0';
	if (len)
		*len = n;
	if (!is_stdin)
		fclose(f);
	return buf;
fail:
	free(buf);
	if (!is_stdin)
		fclose(f);
	return NULL;
}

char *hx_read_file_max(const char *path, size_t max, size_t *len, hx_err *err)
{
	return read_bounded(path, max, 0, len, err);
}

char *hx_read_text_max(const char *path, size_t max, size_t *len, hx_err *err)
{
	return read_bounded(path, max, 1, len, err);
}

char *hx_read_file(const char *path, size_t *len, hx_err *err)
{
	return hx_read_file_max(path, HX_MAX_JSON_BYTES, len, err);
}

static int write_in_place(const char *path, const char *data, size_t len, hx_err *err)
{
	size_t off = 0;
	int fd = open(path, O_WRONLY | O_NOCTTY);

	if (fd < 0)
		return hx_errf(err, HX_EINPUT, "%s: %s", path, strerror(errno));
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			hx_errf(err, HX_EINPUT, "%s: %s", path, strerror(errno));
			close(fd);
			return HX_EINPUT;
		}
		off += (size_t)w;
	}
	if (close(fd) != 0)
		return hx_errf(err, HX_EINPUT, "%s: %s", path, strerror(errno));
	return HX_OK;
}

/* The temporary files being written, which the handler of SIGINT, SIGTERM
 * and SIGHUP removes before the signal ends the process.  A handler gets no
 * context, so this is global state: slots hold names or NULL, and are
 * changed only with those signals blocked. */
#define MAX_TEMPS 64
static char *volatile temps[MAX_TEMPS];
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};

static void remove_temps(void)
{
	for (int i = 0; i < MAX_TEMPS; i++)
		if (temps[i])
			unlink(temps[i]);
}

static void on_signal(int sig)
{
	remove_temps();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Block (HOW SIG_BLOCK) or restore the cleanup signals; OLD keeps the mask. */
static void block_signals(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < HX_ARRAY_LEN(cleanup_signals); i++)
		sigaddset(&set, cleanup_signals[i]);
	sigprocmask(SIG_BLOCK, &set, old);
}

/* Install the handler once; a signal the parent ignores stays ignored. */
static void install_handlers(void)
{
	static int done;

	if (done)
		return;
	done = 1;
	for (size_t i = 0; i < HX_ARRAY_LEN(cleanup_signals); i++) {
		struct sigaction sa, old;
		if (sigaction(cleanup_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(cleanup_signals[i], &sa, NULL);
	}
}

int hx_temp_create(char *tmp)
{
	sigset_t old;
	int fd, i;

	install_handlers();
	block_signals(&old);
	for (i = 0; i < MAX_TEMPS && temps[i]; i++)
		;
	if (i == MAX_TEMPS) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		errno = EMFILE;
		return -1;
	}
	fd = mkstemp(tmp);
	if (fd >= 0)
		temps[i] = tmp;
	sigprocmask(SIG_SETMASK, &old, NULL);
	return fd;
}

void hx_temp_forget(const char *tmp)
{
	sigset_t old;

	block_signals(&old);
	for (int i = 0; i < MAX_TEMPS; i++)
		if (temps[i] == tmp)
			temps[i] = NULL;
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* HEXPLAN_FAULT_SIGNAL=SIG (tests): the signal arrives while a temporary
 * file is complete but not yet renamed. */
static void fault_signal(void)
{
	const char *s = getenv("HEXPLAN_FAULT_SIGNAL");

	if (s && *s)
		raise(atoi(s));
}

/* Write DATA to a new temporary file beside PATH, flushed and closed, with
 * the mode PATH has (or would get); *TMP is its name (free it).  Returns 0,
 * or HX_EINPUT with nothing left behind. */
static int stage(const char *path, const char *data, size_t len, char **tmp_out, hx_err *err)
{
	char *dir = NULL, *tmp = NULL;
	static long fault_left = -2; /* bytes to go before the disk fills */
	int fd = -1, rc = HX_EINPUT;
	size_t off = 0;

	*tmp_out = NULL;
	if (fault_left == -2)
		fault_left = fault_env("HEXPLAN_FAULT_WRITE");
	dir = hx_dirname(path);
	tmp = hx_xmalloc(strlen(path) + 16);
	sprintf(tmp, "%s.tmpXXXXXX", path);
	fd = hx_temp_create(tmp);
	if (fd < 0) {
		hx_errf(err, HX_EINPUT, "%s: cannot create a temporary file: %s", path,
			strerror(errno));
		goto out;
	}
	{
		/* mkstemp makes 0600: give the file the mode the old one had, or
		 * what creating it would (0666 less the umask). */
		struct stat st;
		mode_t mask = umask(0);
		umask(mask);
		if (fchmod(fd, stat(path, &st) == 0 ? st.st_mode & 07777 : 0666 & ~mask) != 0) {
			hx_errf(err, HX_EINPUT, "%s: %s", path, strerror(errno));
			goto out;
		}
	}
	while (off < len) {
		ssize_t w;
		if (fault_left >= 0 && len - off > (size_t)fault_left) {
			/* HEXPLAN_FAULT_WRITE: the disk fills part way. */
			if (fault_left > 0 && write(fd, data + off, (size_t)fault_left) > 0)
				off += (size_t)fault_left;
			fault_left = 0;
			hx_errf(err, HX_EINPUT, "%s: %s", path, strerror(ENOSPC));
			goto out;
		}
		w = write(fd, data + off, len - off);
		if (w > 0 && fault_left >= 0)
			fault_left -= w;
		if (w < 0) {
			if (errno == EINTR)
				continue;
			hx_errf(err, HX_EINPUT, "%s: %s", path, strerror(errno));
			goto out;
		}
		off += (size_t)w;
	}
	if (fsync(fd) != 0 && errno != EINVAL) {
		hx_errf(err, HX_EINPUT, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (close(fd) != 0) {
		fd = -1;
		hx_errf(err, HX_EINPUT, "%s: %s", path, strerror(errno));
		goto out;
	}
	fd = -1;
	rc = HX_OK;
	*tmp_out = tmp;
	tmp = NULL;
	fault_signal();
out:
	if (fd >= 0)
		close(fd);
	if (tmp) {
		unlink(tmp);
		hx_temp_forget(tmp);
	}
	free(tmp);
	free(dir);
	return rc;
}

/* A device or a FIFO (/dev/null, /dev/stdout, a named pipe) is written in
 * place: renaming over it would replace it. */
static int is_special(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

int hx_write_atomic(const char *path, const char *data, size_t len, hx_err *err)
{
	hx_out_file f = {path, data, len, 0};
	return hx_write_files_atomic(&f, 1, err);
}

int hx_write_files_atomic(const hx_out_file *f, int n, hx_err *err)
{
	char **tmp = hx_xcalloc((size_t)n + 1, sizeof(*tmp));
	int i, rc = HX_OK;

	for (i = 0; i < n && !rc; i++) {
		if (strcmp(f[i].path, "-") == 0) {
			if (fwrite(f[i].data, 1, f[i].len, stdout) != f[i].len ||
			    fflush(stdout) != 0)
				rc = hx_errf(err, HX_EINPUT, "<stdout>: %s", strerror(errno));
		} else if (!is_special(f[i].path)) {
			rc = stage(f[i].path, f[i].data, f[i].len, &tmp[i], err);
			if (!rc && f[i].mode && chmod(tmp[i], (mode_t)f[i].mode) != 0)
				rc = hx_errf(err, HX_EINPUT, "%s: %s", f[i].path,
					     strerror(errno));
		}
	}
	/* Every file is staged before the first replaces its old version. */
	for (i = 0; i < n && !rc; i++) {
		if (tmp[i]) {
			if (rename(tmp[i], f[i].path) != 0)
				rc = hx_errf(err, HX_EINPUT, "%s: %s", f[i].path,
					     strerror(errno));
			else {
				hx_temp_forget(tmp[i]);
				free(tmp[i]);
				tmp[i] = NULL;
			}
		} else if (strcmp(f[i].path, "-") != 0) {
			rc = write_in_place(f[i].path, f[i].data, f[i].len, err);
		}
	}
	for (i = 0; i < n; i++) {
		if (tmp[i]) {
			unlink(tmp[i]);
			hx_temp_forget(tmp[i]);
		}
		free(tmp[i]);
	}
	free(tmp);
	return rc;
}

void hx_fputs_escaped(const char *s, FILE *f)
{
	hx_buf b = {0};

	/* One write: stderr is unbuffered, and a character at a time costs a
	 * system call each. */
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f)
			hx_buf_printf(&b, "\\x%02x", c);
		else
			hx_buf_printf(&b, "%c", c);
	}
	if (b.s)
		fputs(b.s, f);
	hx_buf_release(&b);
}

const char *hx_display_path(const char *path)
{
	return strcmp(path, "-") == 0 ? "<stdin>" : path;
}

char *hx_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *d;

	if (!slash)
		return hx_xstrdup(".");
	if (slash == path)
		return hx_xstrdup("/");
	d = hx_xmalloc((size_t)(slash - path) + 1);
	memcpy(d, path, (size_t)(slash - path));
	d[slash - path] = '\0';
	return d;
}

char *hx_path_join(const char *dir, const char *path)
{
	char *p;

	if (path[0] == '/' || !dir || !*dir || strcmp(dir, ".") == 0)
		return hx_xstrdup(path);
	p = hx_xmalloc(strlen(dir) + strlen(path) + 2);
	sprintf(p, "%s/%s", dir, path);
	return p;
}

void hx_buf_printf(hx_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = b->cap - b->len;
		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		b->cap = (b->cap + (size_t)n + 1) * 2;
		b->s = hx_xrealloc(b->s, b->cap);
	}
}

void hx_buf_release(hx_buf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* The slot of KEY in M (cap a power of two): where it is or would go. */
static size_t map_slot(const hx_map *m, const char *key)
{
	size_t i = (size_t)str_hash(key) & (m->cap - 1);

	while (m->keys[i] && strcmp(m->keys[i], key) != 0)
		i = (i + 1) & (m->cap - 1);
	return i;
}

int hx_map_get(const hx_map *m, const char *key)
{
	size_t i;

	if (!m->cap)
		return -1;
	i = map_slot(m, key);
	return m->keys[i] ? m->vals[i] : -1;
}

int hx_map_put(hx_map *m, const char *key, int val)
{
	size_t i;

	if (2 * (m->n + 1) > m->cap) {
		hx_map big = {NULL, NULL, m->cap ? 2 * m->cap : 64, 0};
		big.keys = hx_xcalloc(big.cap, sizeof(*big.keys));
		big.vals = hx_xcalloc(big.cap, sizeof(*big.vals));
		for (size_t j = 0; j < m->cap; j++)
			if (m->keys[j]) {
				size_t k = map_slot(&big, m->keys[j]);
				big.keys[k] = m->keys[j];
				big.vals[k] = m->vals[j];
			}
		big.n = m->n;
		free(m->keys);
		free(m->vals);
		*m = big;
	}
	i = map_slot(m, key);
	if (m->keys[i])
		return m->vals[i];
	m->keys[i] = hx_xstrdup(key);
	m->vals[i] = val;
	m->n++;
	return -1;
}

void hx_map_release(hx_map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->keys[i]);
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void hx_rng_seed(hx_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t hx_rng_next(hx_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double hx_rng_uniform(hx_rng *r)
{
	return ((double)(hx_rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

double hx_rng_normal(hx_rng *r)
{
	/* Inversion keeps one draw per variate, so streams stay aligned. */
	return hx_norm_quantile(hx_rng_uniform(r));
}

double hx_norm_cdf(double x)
{
	return 0.5 * erfc(-x / sqrt(2.0));
}

double hx_norm_quantile(double p)
{
	/* Acklam's rational approximation refined by one Halley step. */
	static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
				   -2.759285104469687e+02, 1.383577518672690e+02,
				   -3.066479806614716e+01, 2.506628277459239e+00};
	static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
				   -1.556989798598866e+02, 6.680131188771972e+01,
				   -1.328068155288572e+01};
	static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
				   -2.400758277161838e+00, -2.549732539343734e+00,
				   4.374664141464968e+00,  2.938163982698783e+00};
	static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
				   2.445134137142996e+00, 3.754408661907416e+00};
	double q, r, x, e, u;

	if (p <= 0)
		return -HUGE_VAL;
	if (p >= 1)
		return HUGE_VAL;
	if (p < 0.02425) {
		q = sqrt(-2 * log(p));
		x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		    ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	} else if (p > 1 - 0.02425) {
		q = sqrt(-2 * log(1 - p));
		x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		    ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	} else {
		q = p - 0.5;
		r = q * q;
		x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
		    (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
	}
	e = hx_norm_cdf(x) - p;
	u = e * sqrt(2 * M_PI) * exp(x * x / 2);
	return x - u / (1 + x * u / 2);
}

double hx_round6(double v)
{
	char s[32];

	if (!isfinite(v) || v == 0)
		return v;
	snprintf(s, sizeof(s), "%.6g", v);
	return strtod(s, NULL);
}

double hx_weight6(double v)
{
	if (!isfinite(v) || !(v > 0))
		return 0.0;
	v = round(v * 1e6) / 1e6;
	return v > 0 ? v : 0.0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double hx_quantile(double *v, size_t n, double q)
{
	double pos;
	size_t i;

	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	pos = q * (double)(n - 1);
	i = (size_t)pos;
	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

static void swap_double(double *a, double *b)
{
	double t = *a;
	*a = *b;
	*b = t;
}

/* Reorder V[LO..HI) so that V[K] holds the value a sort would put there,
 * with no larger value before it and no smaller one after it (Hoare
 * partitions around a median of three). */
static void select_kth(double *v, size_t lo, size_t hi, size_t k)
{
	while (hi - lo > 1) {
		size_t m = lo + (hi - lo) / 2, i = lo, j = hi - 1;
		if (v[m] < v[lo])
			swap_double(&v[m], &v[lo]);
		if (v[hi - 1] < v[lo])
			swap_double(&v[hi - 1], &v[lo]);
		if (v[hi - 1] < v[m])
			swap_double(&v[hi - 1], &v[m]);
		if (hi - lo <= 3) /* LO, M and HI-1 are all of it, now in order */
			return;
		double pivot = v[m];
		for (;;) {
			while (v[i] < pivot)
				i++;
			while (pivot < v[j])
				j--;
			if (i >= j)
				break;
			swap_double(&v[i++], &v[j--]);
		}
		/* V[LO..J] <= pivot <= V[J+1..HI) */
		if (k <= j)
			hi = j + 1;
		else
			lo = j + 1;
	}
}

void hx_quantiles(double *v, size_t n, const double *q, int nq, double *out)
{
	size_t lo = 0;

	for (int x = 0; x < nq; x++) {
		double pos, next;
		size_t i;
		if (n == 0) {
			out[x] = NAN;
			continue;
		}
		pos = q[x] * (double)(n - 1);
		i = (size_t)pos;
		if (i + 1 >= n) {
			select_kth(v, lo, n, n - 1);
			out[x] = v[n - 1];
			continue;
		}
		select_kth(v, lo, n, i);
		/* the next value in sorted order: the least of those after V[i] */
		next = v[i + 1];
		for (size_t j = i + 2; j < n; j++)
			if (v[j] < next)
				next = v[j];
		out[x] = v[i] + (pos - (double)i) * (next - v[i]);
		lo = i;
	}
}
