/* Check suite: the strict loaders (clusters, workloads, traces, measurements). */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/catalog.h"
#include "model/problem.h"
#include "check_util.h"

static hx_catalog cat;
static char tmpdir[] = "/tmp/hx-check-load.XXXXXX";

static void setup(void)
{
	hx_err err = {0};
	ck_assert_msg(hx_catalog_load(&cat, NULL, &err) == 0, "%s", err.msg);
}

static void teardown(void)
{
	hx_catalog_release(&cat);
}

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

START_TEST(test_cluster_links_and_defaults)
{
	hx_cluster c;
	hx_err err = {0};
	const char *p = write_tmp(
	    "c.json",
	    "{\"version\": 1, \"nodes\": ["
	    "{\"name\": \"a\", \"gpu\": \"h100-sxm\", \"count\": 8, \"region\": \"r1\"},"
	    "{\"name\": \"b\", \"gpu\": {\"base\": \"l40s\", \"mem_gib\": 40}, \"count\": 4, "
	    "\"region\": \"r1\"},"
	    "{\"name\": \"c\", \"gpu\": \"a100-80g\", \"count\": 8, \"region\": \"r2\"}],"
	    "\"links\": [{\"a\": \"a\", \"b\": \"c\", \"bw_gbps\": 7, \"latency_ms\": 3}],"
	    "\"defaults\": {\"same_region\": {\"bw_gbps\": 200, \"latency_ms\": 0.01}}}");
	ck_assert_msg(hx_cluster_load(&c, p, &cat, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(c.nnodes, 3);
	ck_assert_int_eq(hx_cluster_gpus(&c), 20);
	ck_assert(c.nodes[1].gpu.mem_gib == 40);
	ck_assert_str_eq(c.nodes[1].gpu.name, "l40s");
	ck_assert(hx_cluster_link(&c, 0, 2).bw_gbps == 7);
	ck_assert(hx_cluster_link(&c, 2, 0).latency_ms == 3);
	ck_assert(hx_cluster_link(&c, 0, 1).bw_gbps == 200);
	ck_assert(hx_cluster_link(&c, 1, 2).bw_gbps == 10); /* cross-region default */
	ck_assert(c.nodes[0].usd_per_hour == hx_catalog_gpu(&cat, "h100-sxm")->usd_per_hour);
	hx_cluster_release(&c);
}
END_TEST

START_TEST(test_cluster_error_pointer)
{
	hx_cluster c;
	hx_err err = {0};
	const char *p =
	    write_tmp("bad.json", "{\"version\": 1, \"nodes\": [{\"name\": \"a\", \"gpu\": "
				  "\"h100-sxm\", \"count\": 8},"
				  "{\"name\": \"b\", \"gpu\": \"h100-sxm\", \"count\": -2}]}");
	ck_assert_int_eq(hx_cluster_load(&c, p, &cat, &err), HX_EINPUT);
	ck_assert_msg(strstr(err.msg, "bad.json: /nodes/1/count: must be a positive integer") !=
			  NULL,
		      "%s", err.msg);
}
END_TEST

START_TEST(test_lognormal)
{
	hx_workload w;
	hx_err err = {0};
	const char *p = write_tmp(
	    "w.json",
	    "{\"version\": 1, \"rate_rps\": 3, \"slo\": {\"ttft_ms\": 1000, \"tpot_ms\": 50},"
	    "\"prompt_tokens\": {\"dist\": \"lognormal\", \"mean\": 1200, \"p50\": 1000, "
	    "\"max\": 1000000},"
	    "\"output_tokens\": {\"dist\": \"lognormal\", \"mean\": 200, \"p50\": 100, "
	    "\"max\": 300}}");
	ck_assert_msg(hx_workload_load(&w, p, &err) == 0, "%s", err.msg);
	/* Uncapped (max far away): the mean and median are as given. */
	ck_assert(fabs(hx_dist_mean(&w.prompt) - 1200) < 0.5);
	ck_assert(fabs(hx_dist_quantile(&w.prompt, 0.5) - 1000) < 1e-6);
	/* Capped at 300: the mean falls below 200 but above the median. */
	ck_assert(hx_dist_mean(&w.output) < 200 && hx_dist_mean(&w.output) > 100);
	ck_assert(hx_dist_quantile(&w.output, 0.999) == 300);
	ck_assert(w.slo.percentile == 99 && w.slo.attainment == 0.99);
	ck_assert(w.serving.token_budget == 8192);
	/* Sampling respects the cap and its mean approaches the capped mean. */
	{
		hx_rng r;
		double s = 0;
		hx_rng_seed(&r, 7);
		for (int i = 0; i < 200000; i++) {
			double x = hx_dist_sample(&w.output, &r);
			ck_assert(x >= 1 && x <= 300);
			s += x;
		}
		ck_assert(fabs(s / 200000 / hx_dist_mean(&w.output) - 1) < 0.01);
	}
	hx_workload_release(&w);
}
END_TEST

START_TEST(test_classes_mixture)
{
	hx_workload w;
	hx_err err = {0};
	const char *p = write_tmp(
	    "wc.json",
	    "{\"version\": 1, \"rate_rps\": 3, \"slo\": {\"ttft_ms\": 1000, \"tpot_ms\": 50},"
	    "\"classes\": [{\"name\": \"s\", \"share\": 0.25,"
	    "  \"prompt_tokens\": {\"buckets\": [[100, 1], [300, 1]]},"
	    "  \"output_tokens\": {\"buckets\": [[10, 1]]}},"
	    " {\"name\": \"l\", \"share\": 0.75,"
	    "  \"prompt_tokens\": {\"buckets\": [[1000, 2]]},"
	    "  \"output_tokens\": {\"buckets\": [[50, 1]]}}]}");
	ck_assert_msg(hx_workload_load(&w, p, &err) == 0, "%s", err.msg);
	ck_assert(fabs(hx_dist_mean(&w.prompt) - (0.25 * 200 + 0.75 * 1000)) < 1e-9);
	ck_assert(fabs(hx_dist_mean(&w.output) - (0.25 * 10 + 0.75 * 50)) < 1e-9);
	ck_assert(hx_dist_quantile(&w.prompt, 0.1) == 100);
	ck_assert(hx_dist_quantile(&w.prompt, 0.9) == 1000);
	hx_workload_release(&w);
}
END_TEST

START_TEST(test_trace_formats)
{
	hx_trace t;
	hx_err err = {0};
	const char *p = write_tmp("az.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
					    "2023-11-16 23:59:59.5000000,374,44\r\n"
					    "2023-11-17 00:00:01.0000000,396,109\r\n");
	ck_assert_msg(hx_trace_load(&t, p, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(t.n, 2);
	ck_assert(t.arrival_s[0] == 0);
	ck_assert(fabs(t.arrival_s[1] - 1.5) < 1e-6); /* across midnight */
	ck_assert_int_eq(t.input[1], 396);
	ck_assert_int_eq(t.output[1], 109);
	hx_trace_release(&t);
	p = write_tmp("plain.csv",
		      "arrival_s,input_tokens,output_tokens\n0.5,10,20\n0.75,1,1\n");
	ck_assert_msg(hx_trace_load(&t, p, &err) == 0, "%s", err.msg);
	ck_assert(t.arrival_s[0] == 0.5 && t.n == 2);
	hx_trace_release(&t);
	p = write_tmp("neg.csv",
		      "arrival_s,input_tokens,output_tokens\n0.5,10,20\n0.75,-1,1\n");
	ck_assert_int_eq(hx_trace_load(&t, p, &err), HX_EINPUT);
	ck_assert_msg(
	    strstr(err.msg, "neg.csv:3: input_tokens must be an integer from 1 to 10000000") !=
		NULL,
	    "%s", err.msg);
}
END_TEST

START_TEST(test_measurements)
{
	hx_meas *m;
	int n;
	hx_err err = {0};
	const char *p = write_tmp("m.csv", "gpu,model,tp,phase,batch,tokens,context,ms\n"
					   "a40,llama-2-7b,2,decode,8,1,1000,12.5\n");
	ck_assert_msg(hx_meas_load(&m, &n, p, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(m[0].phase, HX_PHASE_DECODE);
	ck_assert_int_eq(m[0].tp, 2);
	ck_assert(m[0].ms == 12.5);
	free(m);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("load");
	TCase *tc = tcase_create("load");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_cluster_links_and_defaults);
	tcase_add_test(tc, test_cluster_error_pointer);
	tcase_add_test(tc, test_lognormal);
	tcase_add_test(tc, test_classes_mixture);
	tcase_add_test(tc, test_trace_formats);
	tcase_add_test(tc, test_measurements);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run_in(suite(), tmpdir);
}
