/*
 * Fuzz the command layer: option parsing and each command's main path, as
 * hexplan's main() runs them, on small inputs.  An input is a command line
 * and up to four files, separated by lines "%%":
 *
 *     plan -c @1 -w @2 -m llama-3.1-8b -o @o
 *     %%
 *     { the cluster }
 *     %%
 *     { the workload }
 *
 * The first line is split on blanks into arguments (after "hexplan"); @1 to
 * @4 name the files, @o and @p two outputs, in a directory of the
 * harness's own that is emptied after each input.  Standard input reads as
 * empty and standard output and error go to /dev/null.  A command must
 * return an exit status and release all it took, never crash, hang or
 * leak.  Runs are kept short: an input with a number above 500 is skipped
 * (a trace of a million requests is slow, not wrong), so is --capacity
 * (simulate runs dozens of simulations), and plan gets --time-limit 1
 * unless it names one.
 */
#include "config.h"

#include "fuzz.h"

#include <ftw.h>
#include <getopt.h>
#include <math.h>

#include "cli/cli.h"

#define MAX_ARGS  48
#define MAX_FILES 4
#define SEP       "\n%%\n"

static char dir[64];

static int remove_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	if (ftw->level > 0)
		remove(p);
	return 0;
}

static void remove_dir(void)
{
	nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
	rmdir(dir);
}

/* Whether S reads as a number above 500 (or not finite). */
static int big_number(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	return end != s && !*end && !(fabs(v) <= 500);
}

/* Whether S is --capacity, or an abbreviation getopt_long takes for it. */
static int capacity(const char *s)
{
	size_t n = strcspn(s, "=");

	return n >= 5 && strncmp(s, "--capacity", n < 10 ? n : 10) == 0 && (n <= 10);
}

/* The argument for token T: a path for @1..@4, @o, @p; T itself else. */
static char *argument(const char *t)
{
	static const char *const names[] = {"@1", "@2", "@3", "@4", "@o", "@p"};
	char *p;

	for (size_t i = 0; i < HX_ARRAY_LEN(names); i++) {
		if (strcmp(t, names[i]) == 0) {
			p = hx_xmalloc(strlen(dir) + 4);
			sprintf(p, "%s/%s", dir, names[i] + 1);
			return p;
		}
	}
	return hx_xstrdup(t);
}

/* Write the LEN bytes at DATA to the harness's file NAME. */
static void put_file(const char *name, const char *data, size_t len)
{
	char path[96];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "wb")) || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		abort();
	}
}

/* Run hx_main on ARGV with the standard streams out of the way. */
static void run(int argc, char **argv)
{
	static FILE *null_in, *null_out;
	static char *reset_argv[] = {(char *)"hexplan", NULL};
	FILE *in = stdin, *out = stdout, *errf = stderr;

	if (!null_in &&
	    (!(null_in = fopen("/dev/null", "r")) || !(null_out = fopen("/dev/null", "w")))) {
		perror("/dev/null");
		abort();
	}
	/* getopt keeps its place in the last argv between calls: optind 0
	 * starts it afresh. */
	optind = 0;
	getopt(1, reset_argv, "");
	rewind(null_in);
	stdin = null_in;
	stdout = null_out;
	stderr = null_out;
	hx_main(argc, argv);
	stdin = in;
	stdout = out;
	stderr = errf;
}

static void hx_fuzz_one(const char *path)
{
	size_t len, n;
	hx_err err = {0};
	char *text = hx_read_file(path, &len, &err), *end, *p, *sec;
	char *argv[MAX_ARGS + 3] = {NULL};
	int argc = 1, nfiles = 0, plan_limit = 1, skip = 0;

	if (!text)
		return;
	if (!dir[0]) {
		strcpy(dir, "/tmp/hexplan-fuzz-cli.XXXXXX");
		if (!mkdtemp(dir)) {
			perror("mkdtemp");
			abort();
		}
		atexit(remove_dir);
	}
	end = text + len;
	/* The files after the command line. */
	sec = memmem(text, len, SEP, strlen(SEP));
	while (sec && nfiles < MAX_FILES) {
		char name[2] = {(char)('1' + nfiles++), '\0'};
		*sec = '\0';
		p = sec + strlen(SEP);
		sec = memmem(p, (size_t)(end - p), SEP, strlen(SEP));
		n = sec ? (size_t)(sec - p) : (size_t)(end - p);
		put_file(name, p, n);
	}
	argv[0] = hx_xstrdup("hexplan");
	for (p = strtok(text, " \t\n"); p && !skip; p = strtok(NULL, " \t\n")) {
		if (argc >= MAX_ARGS || big_number(p) || capacity(p)) {
			skip = 1;
			break;
		}
		if (strcmp(p, "--time-limit") == 0 || strncmp(p, "--time-limit=", 13) == 0)
			plan_limit = 0;
		argv[argc++] = argument(p);
	}
	if (!skip) {
		if (plan_limit && argc > 1 && strcmp(argv[1], "plan") == 0) {
			argv[argc++] = hx_xstrdup("--time-limit");
			argv[argc++] = hx_xstrdup("1");
		}
		run(argc, argv);
	}
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	free(text);
	/* Empty the directory for the next input. */
	nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}
