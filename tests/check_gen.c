/* Check suite: synthetic requests (arrival processes, lengths, classes,
 * resampling, the CSV writer). */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/gen.h"
#include "model/problem.h"
#include "check_util.h"

static char tmpdir[] = "/tmp/hx-check-gen.XXXXXX";

/* Write TEXT to a file named NAME in the test's directory; static path. */
static const char *write_tmp(const char *name, const char *text)
{
	static char path[256];
	FILE *f;
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	ck_assert(f != NULL);
	fputs(text, f);
	fclose(f);
	return path;
}

/* A workload with lognormal lengths and the given arrival object. */
static void load_workload(hx_workload *w, const char *arrival)
{
	char text[1024];
	hx_err err = {0};

	snprintf(text, sizeof(text),
		 "{\"version\": 1, \"rate_rps\": 10, \"arrival\": %s,"
		 "\"prompt_tokens\": {\"dist\": \"lognormal\", \"mean\": 1155, \"p50\": 1020, "
		 "\"max\": 14050},"
		 "\"output_tokens\": {\"dist\": \"lognormal\", \"mean\": 211, \"p50\": 129, "
		 "\"max\": 1000},"
		 "\"slo\": {\"ttft_ms\": 2000, \"tpot_ms\": 100}}",
		 arrival);
	ck_assert_msg(hx_workload_load(w, write_tmp("w.json", text), &err) == 0, "%s", err.msg);
}

static void load_classes(hx_workload *w)
{
	hx_err err = {0};
	const char *p = write_tmp(
	    "classes.json",
	    "{\"version\": 1, \"rate_rps\": 30, \"classes\": ["
	    "{\"name\": \"short\", \"share\": 0.7,"
	    " \"prompt_tokens\": {\"buckets\": [[128, 0.3], [512, 0.5], [1024, 0.2]]},"
	    " \"output_tokens\": {\"dist\": \"lognormal\", \"mean\": 180, \"p50\": 120, "
	    "\"max\": 1024}},"
	    "{\"name\": \"long\", \"share\": 0.3,"
	    " \"prompt_tokens\": {\"dist\": \"lognormal\", \"mean\": 6000, \"p50\": 4500, "
	    "\"max\": 32000},"
	    " \"output_tokens\": {\"buckets\": [[64, 0.5], [256, 0.5]]}}],"
	    "\"slo\": {\"ttft_ms\": 5000, \"tpot_ms\": 80}}");
	ck_assert_msg(hx_workload_load(w, p, &err) == 0, "%s", err.msg);
}

static int same_trace(const hx_trace *a, const hx_trace *b)
{
	if (a->n != b->n || (a->cls == NULL) != (b->cls == NULL))
		return 0;
	for (int i = 0; i < a->n; i++)
		if (a->arrival_s[i] != b->arrival_s[i] || a->input[i] != b->input[i] ||
		    a->output[i] != b->output[i] || (a->cls && a->cls[i] != b->cls[i]))
			return 0;
	return 1;
}

/* Mean rate (requests per second of the trace's span) and the coefficient
 * of variation of inter-arrival times. */
static void arrival_stats(const hx_trace *t, double *rate, double *cv)
{
	double s = 0, s2 = 0, prev = 0;

	for (int i = 0; i < t->n; i++) {
		double g = t->arrival_s[i] - prev;
		s += g;
		s2 += g * g;
		prev = t->arrival_s[i];
	}
	double mean = s / t->n, var = s2 / t->n - mean * mean;
	*rate = t->n / t->arrival_s[t->n - 1];
	*cv = sqrt(var) / mean;
}

static double dist_max(const hx_dist *d)
{
	return d->kind == HX_DIST_LOGNORMAL ? d->max : d->tokens[d->nb - 1];
}

START_TEST(test_seed_determinism)
{
	hx_workload w;
	hx_trace a, b, c;
	hx_err err = {0};

	load_classes(&w);
	ck_assert_msg(hx_gen_workload(&w, 0, 0, 60, 7, &a, &err) == 0, "%s", err.msg);
	ck_assert_msg(hx_gen_workload(&w, 0, 0, 60, 7, &b, &err) == 0, "%s", err.msg);
	ck_assert_msg(hx_gen_workload(&w, 0, 0, 60, 8, &c, &err) == 0, "%s", err.msg);
	ck_assert(a.n > 0);
	ck_assert(a.cls != NULL);
	ck_assert(same_trace(&a, &b));
	ck_assert(!same_trace(&a, &c));
	/* Every arrival lies within the duration, in order, and the first
	 * comes after 0. */
	ck_assert(a.arrival_s[0] > 0);
	for (int i = 1; i < a.n; i++)
		ck_assert(a.arrival_s[i] >= a.arrival_s[i - 1]);
	ck_assert(a.arrival_s[a.n - 1] <= 60);
	/* The workload's rate (30 req/s) when RATE_RPS <= 0. */
	ck_assert(abs(a.n - 1800) < 270);
	hx_trace_release(&a);
	hx_trace_release(&b);
	hx_trace_release(&c);

	ck_assert(hx_gen_shape(HX_SHAPE_CODE, NULL, 3, 100, 5, &a, &err) == 0);
	ck_assert(hx_gen_shape(HX_SHAPE_CODE, NULL, 3, 100, 5, &b, &err) == 0);
	ck_assert(hx_gen_shape(HX_SHAPE_CODE, NULL, 3, 100, 6, &c, &err) == 0);
	ck_assert(a.cls == NULL);
	ck_assert(same_trace(&a, &b));
	ck_assert(!same_trace(&a, &c));
	hx_trace_release(&a);
	hx_trace_release(&b);
	hx_trace_release(&c);
	hx_workload_release(&w);
}
END_TEST

START_TEST(test_count_and_duration)
{
	hx_workload w;
	hx_trace t;
	hx_err err = {0};

	load_workload(&w, "{\"process\": \"poisson\"}");
	ck_assert_msg(hx_gen_workload(&w, 50, 1234, 0, 1, &t, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(t.n, 1234);
	ck_assert(t.cls == NULL);
	hx_trace_release(&t);
	/* N wins over the duration. */
	ck_assert(hx_gen_workload(&w, 50, 10, 1000, 1, &t, &err) == 0);
	ck_assert_int_eq(t.n, 10);
	hx_trace_release(&t);
	hx_workload_release(&w);
}
END_TEST

START_TEST(test_poisson)
{
	hx_workload w;
	hx_trace t;
	hx_err err = {0};
	double rate, cv;

	load_workload(&w, "{\"process\": \"poisson\"}");
	ck_assert_msg(hx_gen_workload(&w, 0, 200000, 0, 11, &t, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(t.n, 200000);
	arrival_stats(&t, &rate, &cv);
	ck_assert_msg(fabs(rate - 10) < 0.02 * 10, "rate %g", rate);
	ck_assert_msg(fabs(cv - 1) < 0.03, "cv %g", cv);
	for (int i = 0; i < t.n; i++) {
		ck_assert(t.input[i] >= 1 && t.input[i] <= w.prompt.max);
		ck_assert(t.output[i] >= 1 && t.output[i] <= w.output.max);
	}
	hx_trace_release(&t);
	hx_workload_release(&w);
}
END_TEST

START_TEST(test_gamma)
{
	static const double cvs[] = {2, 0.5};
	hx_workload w;
	hx_trace t;
	hx_err err = {0};
	double rate, cv;

	for (size_t k = 0; k < HX_ARRAY_LEN(cvs); k++) {
		char arrival[80];
		snprintf(arrival, sizeof(arrival), "{\"process\": \"gamma\", \"cv\": %g}",
			 cvs[k]);
		load_workload(&w, arrival);
		ck_assert_msg(hx_gen_workload(&w, 4, 200000, 0, 13, &t, &err) == 0, "%s",
			      err.msg);
		arrival_stats(&t, &rate, &cv);
		ck_assert_msg(fabs(rate - 4) < 0.02 * 4, "cv %g: rate %g", cvs[k], rate);
		ck_assert_msg(fabs(cv - cvs[k]) < 0.05 * cvs[k], "cv %g: got %g", cvs[k], cv);
		hx_trace_release(&t);
		hx_workload_release(&w);
	}
}
END_TEST

START_TEST(test_classes)
{
	hx_workload w;
	hx_trace t;
	hx_err err = {0};
	int count[2] = {0, 0};

	load_classes(&w);
	ck_assert_msg(hx_gen_workload(&w, 0, 200000, 0, 17, &t, &err) == 0, "%s", err.msg);
	ck_assert(t.cls != NULL);
	for (int i = 0; i < t.n; i++) {
		int c = t.cls[i];
		ck_assert(c == 0 || c == 1);
		count[c]++;
		ck_assert(t.input[i] >= 1 && t.input[i] <= dist_max(&w.classes[c].prompt));
		ck_assert(t.output[i] >= 1 && t.output[i] <= dist_max(&w.classes[c].output));
	}
	for (int c = 0; c < 2; c++)
		ck_assert_msg(fabs((double)count[c] / t.n - w.classes[c].share) < 0.01,
			      "class %d: %d of %d", c, count[c], t.n);
	/* Lengths come from the request's own class: the short class's prompts
	 * are its buckets, the long class's outputs are its buckets. */
	for (int i = 0; i < t.n; i++) {
		if (t.cls[i] == 0)
			ck_assert(t.input[i] == 128 || t.input[i] == 512 || t.input[i] == 1024);
		else
			ck_assert(t.output[i] == 64 || t.output[i] == 256);
	}
	hx_trace_release(&t);
	hx_workload_release(&w);
}
END_TEST

START_TEST(test_shapes)
{
	static const double max_in[] = {14050, 7437}, max_out[] = {1000, 1899};
	static const double p50_in[] = {1020, 1469}, p50_out[] = {129, 13};
	hx_trace t;
	hx_err err = {0};

	for (int s = HX_SHAPE_CONVERSATION; s <= HX_SHAPE_CODE; s++) {
		double *in, *out, rate, cv;
		ck_assert_msg(hx_gen_shape(s, NULL, 100, 2000, 19, &t, &err) == 0, "%s",
			      err.msg);
		ck_assert(t.n > 190000);
		in = malloc((size_t)t.n * sizeof(double));
		out = malloc((size_t)t.n * sizeof(double));
		for (int i = 0; i < t.n; i++) {
			ck_assert(t.input[i] >= 1 && t.input[i] <= max_in[s]);
			ck_assert(t.output[i] >= 1 && t.output[i] <= max_out[s]);
			in[i] = t.input[i];
			out[i] = t.output[i];
		}
		ck_assert_msg(
		    fabs(hx_quantile(in, (size_t)t.n, 0.5) - p50_in[s]) < 0.03 * p50_in[s],
		    "shape %d: median input %g", s, hx_quantile(in, (size_t)t.n, 0.5));
		ck_assert_msg(fabs(hx_quantile(out, (size_t)t.n, 0.5) - p50_out[s]) <
				  0.03 * p50_out[s] + 0.5,
			      "shape %d: median output %g", s,
			      hx_quantile(out, (size_t)t.n, 0.5));
		arrival_stats(&t, &rate, &cv);
		ck_assert_msg(fabs(rate - 100) < 2, "rate %g", rate);
		ck_assert_msg(fabs(cv - 1) < 0.03, "cv %g", cv);
		free(in);
		free(out);
		hx_trace_release(&t);
	}
}
END_TEST

START_TEST(test_resample)
{
	hx_trace sample, t;
	hx_err err = {0};
	int seen[3] = {0, 0, 0};
	const char *p =
	    write_tmp("sample.csv",
		      "arrival_s,input_tokens,output_tokens\n0,100,7\n1.5,2000,1\n2,100,300\n");

	ck_assert_msg(hx_trace_load(&sample, p, &err) == 0, "%s", err.msg);
	ck_assert_msg(hx_gen_shape(HX_SHAPE_CONVERSATION, &sample, 20, 500, 23, &t, &err) == 0,
		      "%s", err.msg);
	ck_assert(t.n > 9000);
	for (int i = 0; i < t.n; i++) {
		int j;
		for (j = 0; j < sample.n; j++)
			if (t.input[i] == sample.input[j] && t.output[i] == sample.output[j])
				break;
		ck_assert_msg(j < sample.n, "request %d: (%d, %d) is not in the sample", i,
			      t.input[i], t.output[i]);
		seen[j]++;
	}
	for (int j = 0; j < 3; j++)
		ck_assert_msg(fabs(seen[j] / (double)t.n - 1.0 / 3) < 0.02, "pair %d: %d", j,
			      seen[j]);
	hx_trace_release(&t);
	hx_trace_release(&sample);
}
END_TEST

START_TEST(test_csv_round_trip)
{
	hx_workload w;
	hx_trace t, back;
	hx_err err = {0};
	char *csv;
	const char *p;

	load_workload(&w, "{\"process\": \"gamma\", \"cv\": 3}");
	ck_assert(hx_gen_workload(&w, 0, 0, 300, 29, &t, &err) == 0);
	csv = hx_trace_csv(&t);
	ck_assert(strncmp(csv, "arrival_s,input_tokens,output_tokens\n", 37) == 0);
	p = write_tmp("t.csv", csv);
	ck_assert_msg(hx_trace_load(&back, p, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(back.n, t.n);
	for (int i = 0; i < t.n; i++) {
		ck_assert(fabs(back.arrival_s[i] - t.arrival_s[i]) <= 1e-6);
		ck_assert_int_eq(back.input[i], t.input[i]);
		ck_assert_int_eq(back.output[i], t.output[i]);
	}
	free(csv);
	hx_trace_release(&back);
	hx_trace_release(&t);
	hx_workload_release(&w);

	/* An empty trace is the header alone. */
	memset(&t, 0, sizeof(t));
	csv = hx_trace_csv(&t);
	ck_assert_str_eq(csv, "arrival_s,input_tokens,output_tokens\n");
	free(csv);
}
END_TEST

START_TEST(test_errors)
{
	hx_workload w;
	hx_trace t, empty;
	hx_err err = {0};

	load_workload(&w, "{\"process\": \"poisson\"}");
	ck_assert_int_eq(hx_gen_workload(&w, 10, 0, 0, 1, &t, &err), HX_EINPUT);
	ck_assert_str_eq(err.msg,
			 "give a number of requests or a positive duration to generate");
	ck_assert_int_eq(t.n, 0);
	w.rate_rps = 0;
	ck_assert_int_eq(hx_gen_workload(&w, 0, 10, 0, 1, &t, &err), HX_EINPUT);
	ck_assert_str_eq(err.msg, "the arrival rate must be positive, not 0 req/s");
	ck_assert_int_eq(hx_gen_workload(&w, 1e6, 0, 1e9, 1, &t, &err), HX_EINPUT);
	ck_assert_str_eq(err.msg, "1e+06 req/s over 1e+09 s gives about 1e+15 requests, "
				  "more than the limit of 50000000");
	hx_workload_release(&w);

	ck_assert_int_eq(hx_gen_shape(HX_SHAPE_CODE, NULL, 0, 10, 1, &t, &err), HX_EINPUT);
	ck_assert_str_eq(err.msg, "the arrival rate must be positive, not 0 req/s");
	ck_assert_int_eq(hx_gen_shape(HX_SHAPE_CODE, NULL, 1, 0, 1, &t, &err), HX_EINPUT);
	ck_assert_int_eq(hx_gen_shape(42, NULL, 1, 10, 1, &t, &err), HX_EINPUT);
	ck_assert_str_eq(err.msg, "unknown length shape 42");
	memset(&empty, 0, sizeof(empty));
	ck_assert_int_eq(hx_gen_shape(HX_SHAPE_CODE, &empty, 1, 10, 1, &t, &err), HX_EINPUT);
	ck_assert_str_eq(err.msg, "the sample trace has no requests");
	ck_assert_int_eq(t.n, 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("gen");
	TCase *tc = tcase_create("gen");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_seed_determinism);
	tcase_add_test(tc, test_count_and_duration);
	tcase_add_test(tc, test_poisson);
	tcase_add_test(tc, test_gamma);
	tcase_add_test(tc, test_classes);
	tcase_add_test(tc, test_shapes);
	tcase_add_test(tc, test_resample);
	tcase_add_test(tc, test_csv_round_trip);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run_in(suite(), tmpdir);
}
