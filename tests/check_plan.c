/* Check suite: the plan format round-trips; the baseline planner's rules. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/catalog.h"
#include "plan/plan.h"
#include "plan/spot.h"
#include "planners/baseline.h"
#include "planners/cascade.h"
#include "planners/colocated.h"
#include "planners/compose.h"
#include "planners/disagg.h"
#include "planners/pipeline.h"
#include "base/jsonio.h"
#include "base/jsonw.h"
#include "base/sha256.h"
#include "check_util.h"

static hx_catalog cat;
static void setup(void)
{
	hx_err err = {0};
	ck_assert_msg(hx_catalog_load(&cat, NULL, &err) == 0, "%s", err.msg);
}

static void teardown(void)
{
	hx_catalog_release(&cat);
}

/* The baseline plan of a cluster for a workload and model. */
static void baseline(const char *cluster, const char *workload, const char *model, hx_plan *p)
{
	hx_cluster c;
	hx_workload w;
	hx_model m;
	hx_problem pb;
	hx_err err = {0};
	char cpath[1024], wpath[1024];

	hx_strlcpy(cpath, hx_check_src(cluster), sizeof(cpath));
	hx_strlcpy(wpath, hx_check_src(workload), sizeof(wpath));
	ck_assert_msg(hx_cluster_load(&c, cpath, &cat, &err) == 0, "%s", err.msg);
	ck_assert_msg(hx_workload_load(&w, wpath, &err) == 0, "%s", err.msg);
	ck_assert(hx_model_resolve(&cat, model, &m, &err) == 0);
	pb = (hx_problem){&cat, &c, &w, &m, 7, cpath, wpath, NULL};
	ck_assert_msg(hx_plan_baseline(&pb, p, &err) == 0, "%s", err.msg);
	hx_workload_release(&w);
	hx_cluster_release(&c);
}

/* Shares rounded to 6 decimals never go negative: six shares of 1/6 round
 * up to 0.166667, past 1 together, and left a last share of 0 at -2e-6. */
START_TEST(test_routes_normalize)
{
	hx_route r[7];
	double sum = 0;

	memset(r, 0, sizeof(r));
	for (int i = 0; i < 6; i++)
		r[i].weight = 1;
	r[6].weight = 0;
	hx_routes_normalize(r, 7);
	for (int i = 0; i < 7; i++) {
		ck_assert_msg(r[i].weight >= 0, "route %d weight %g", i, r[i].weight);
		sum += r[i].weight;
	}
	ck_assert_msg(fabs(sum - 1) < 1e-9, "sum %.12f", sum);
}
END_TEST

START_TEST(test_sha256)
{
	char d[72];
	hx_sha256_hex("abc", 3, d);
	ck_assert_str_eq(
	    d, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	hx_sha256_hex("", 0, d);
	ck_assert_str_eq(
	    d, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	/* 56 bytes: the padding spills into a second block. */
	hx_sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, d);
	ck_assert_str_eq(
	    d, "sha256:248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
END_TEST

/* Written, read back and written again: the same bytes; and the same plan. */
START_TEST(test_round_trip)
{
	hx_plan p, q;
	hx_err err = {0};
	char *a, *b;

	baseline("examples/clusters/mixed.json", "examples/workloads/chat.json",
		 "llama-3.1-70b", &p);
	a = hx_plan_dump(&p);
	ck_assert_msg(hx_plan_parse_text(&q, a, "plan", &err) == 0, "%s", err.msg);
	b = hx_plan_dump(&q);
	ck_assert_str_eq(a, b);
	ck_assert_int_eq(q.ngroups, p.ngroups);
	for (int g = 0; g < p.ngroups; g++) {
		ck_assert_int_eq(q.groups[g].nreplicas, p.groups[g].nreplicas);
		ck_assert(q.groups[g].capacity_rps == p.groups[g].capacity_rps);
		for (int r = 0; r < p.groups[g].nreplicas; r++)
			for (int s = 0; s < p.groups[g].nstages; s++)
				for (int k = 0; k < p.groups[g].replicas[r].ngpus[s]; k++) {
					ck_assert_str_eq(
					    q.groups[g].replicas[r].gpus[s][k].node,
					    p.groups[g].replicas[r].gpus[s][k].node);
					ck_assert_int_eq(
					    q.groups[g].replicas[r].gpus[s][k].index,
					    p.groups[g].replicas[r].gpus[s][k].index);
				}
	}
	ck_assert(q.predicted.capacity_rps == p.predicted.capacity_rps);
	ck_assert(memcmp(&q.models[0].a, &p.models[0].a, sizeof(hx_arch)) == 0);
	ck_assert_int_eq(q.solver.seed, 7);
	free(a);
	free(b);
	hx_plan_release(&q);
	hx_plan_release(&p);
}
END_TEST

/* Substitutions: none against the plan itself, none when a plan only has
 * fewer GPUs (nothing stands in), a row per type whose count differs when
 * another type stands in, sorted by name, written and read back. */
START_TEST(test_spill_against)
{
	hx_plan p, q, r;
	hx_err err = {0};
	char *a, *b;
	const char *type;
	int n0, moved = 0;

	baseline("examples/clusters/mixed.json", "examples/workloads/chat.json",
		 "llama-3.1-70b", &p);
	ck_assert_int_eq(hx_plan_spill_against(&p, &p, p.predicted.usd_per_hour), 0);
	ck_assert_int_eq(p.spill.nsubst, 0);
	a = hx_plan_dump(&p);
	ck_assert(strstr(a, "substitutions") == NULL);
	ck_assert_msg(hx_plan_parse_text(&q, a, "plan", &err) == 0, "%s", err.msg);
	q.groups[0].nreplicas--; /* fewer GPUs of one type, nothing instead */
	ck_assert_int_eq(hx_plan_spill_against(&q, &p, 1), 0);
	q.groups[0].nreplicas++;
	type = p.groups[0].stage[0].gpu;
	n0 = hx_plan_gpus_of(&p, type);
	for (int s = 0; s < q.groups[0].nstages; s++)
		if (strcmp(q.groups[0].stage[s].gpu, type) == 0) {
			strcpy(q.groups[0].stage[s].gpu, "zz-stand-in");
			for (int k = 0; k < q.groups[0].nreplicas; k++)
				moved += q.groups[0].replicas[k].ngpus[s];
		}
	q.predicted.usd_per_hour = p.predicted.usd_per_hour + 2.5;
	ck_assert_int_eq(hx_plan_spill_against(&q, &p, p.predicted.usd_per_hour), 2);
	ck_assert_str_eq(q.spill.subst[0].gpu, type);
	ck_assert_int_eq(q.spill.subst[0].preferred_gpus, n0);
	ck_assert_int_eq(q.spill.subst[0].gpus, n0 - moved);
	ck_assert_str_eq(q.spill.subst[1].gpu, "zz-stand-in");
	ck_assert_int_eq(q.spill.subst[1].preferred_gpus, 0);
	ck_assert_int_eq(q.spill.subst[1].gpus, moved);
	ck_assert(fabs(q.spill.usd_per_hour_delta - 2.5) < 1e-6);
	b = hx_plan_dump(&q);
	ck_assert_msg(hx_plan_parse_text(&r, b, "plan", &err) == 0, "%s", err.msg);
	free(a);
	a = hx_plan_dump(&r);
	ck_assert_str_eq(a, b);
	ck_assert_int_eq(r.spill.nsubst, 2);
	free(a);
	free(b);
	hx_plan_release(&r);
	hx_plan_release(&q);
	hx_plan_release(&p);
}
END_TEST

/* Every GPU once, power-of-two TP, weights proportional to capacity. */
START_TEST(test_baseline_rules)
{
	hx_plan p;
	int used = 0;
	double wsum = 0;

	baseline("examples/clusters/mixed.json", "examples/workloads/chat.json",
		 "llama-3.1-70b", &p);
	for (int g = 0; g < p.ngroups; g++) {
		const hx_plan_group *grp = &p.groups[g];
		ck_assert_int_eq(grp->nstages, 1);
		ck_assert((grp->stage[0].tp & (grp->stage[0].tp - 1)) == 0);
		ck_assert(grp->capacity_rps > 0);
		for (int r = 0; r < grp->nreplicas; r++)
			used += grp->replicas[r].ngpus[0];
	}
	ck_assert_int_eq(used, 64);
	for (int i = 0; i < p.ningress; i++)
		wsum += p.ingress[i].weight;
	ck_assert(fabs(wsum - 1) < 1e-9);
	/* the smallest TP that holds 70B with its KV reserve: 2 H100, 4 L40S */
	ck_assert_int_eq(p.groups[0].stage[0].tp, 2);
	ck_assert_str_eq(p.groups[2].stage[0].gpu, "l40s");
	ck_assert_int_eq(p.groups[2].stage[0].tp, 4);
	ck_assert(strncmp(p.cluster_digest, "sha256:", 7) == 0);
	hx_plan_release(&p);
}
END_TEST

/* A model no single node holds: the fewest whole nodes of one type, PP. */
START_TEST(test_baseline_pipeline)
{
	hx_plan p;

	baseline("examples/clusters/mixed.json", "examples/workloads/chat.json",
		 "llama-3.1-405b", &p);
	/* two H100 nodes make one replica, four A100 nodes two; L40S none */
	ck_assert_int_eq(p.ngroups, 2);
	ck_assert_str_eq(p.groups[0].stage[0].gpu, "h100-sxm");
	ck_assert_int_eq(p.groups[0].nreplicas, 1);
	ck_assert_str_eq(p.groups[1].stage[0].gpu, "a100-80g");
	ck_assert_int_eq(p.groups[1].nreplicas, 2);
	for (int g = 0; g < 2; g++) {
		ck_assert_int_eq(p.groups[g].nstages, 2);
		ck_assert_int_eq(p.groups[g].stage[0].tp, 8);
		ck_assert_str_eq(p.groups[g].stage[1].gpu, p.groups[g].stage[0].gpu);
		ck_assert_int_eq(p.groups[g].stage[1].last, 126);
		ck_assert(p.groups[g].replicas[0].link[0].bw_gbps == 100);
		ck_assert(strcmp(p.groups[g].replicas[0].gpus[0][0].node,
				 p.groups[g].replicas[0].gpus[1][0].node) != 0);
	}
	hx_plan_release(&p);
}
END_TEST

START_TEST(test_reader_rejects)
{
	hx_plan p;
	hx_err err = {0};
	ck_assert_int_eq(
	    hx_plan_parse_text(&p, "{\"schema\": \"x\", \"version\": 1}", "t.json", &err),
	    HX_EINPUT);
	ck_assert_str_eq(err.msg, "t.json: /schema: must be \"hexplan.plan\"");
	ck_assert_int_eq(hx_plan_parse_text(&p,
					    "{\"schema\": \"hexplan.plan\", \"version\": 1, "
					    "\"mode\": \"x\", \"bogus\": 1}",
					    "t.json", &err),
			 HX_EINPUT);
	ck_assert_str_eq(err.msg, "t.json: /bogus: unknown key");
}
END_TEST

/* mixed-baseline.json with the keys KEYS (NULL-terminated) taken out of embedded GPU GI,
 * read back: its parse status, the plan in Q (released on failure). */
static int parse_without(int gi, const char *const *keys, hx_plan *q, hx_err *err)
{
	json_t *root =
	    hx_json_load_file(hx_check_src("tests/data/plans/mixed-baseline.json"), err);
	char *text;
	int rc;

	ck_assert_msg(root != NULL, "%s", err->msg);
	for (int i = 0; keys[i]; i++)
		ck_assert_int_eq(
		    json_object_del(json_array_get(json_object_get(root, "gpus"), gi), keys[i]),
		    0);
	text = hx_json_dump(root);
	json_decref(root);
	rc = hx_plan_parse_text(q, text, "t.json", err);
	free(text);
	return rc;
}

/* A stored v1 plan without an optional GPU key loads with that key's fixed v1 default, not
 * the catalog's; without a core key it is still an error. */
START_TEST(test_gpu_v1_defaults)
{
	static const char *const fp8[] = {"tflops_fp8", NULL};
	static const char *const optional[] = {"tflops_fp8",
					       "intra_latency_us",
					       "tdp_w",
					       "kernel_floor_us",
					       "allreduce_latency_us",
					       "iter_overhead_ms",
					       "runtime_reserve_gib",
					       NULL};
	static const char *const core[] = {"mem_gib", NULL};
	hx_plan p, q;
	hx_err err = {0};
	hx_gpu want;
	char *a, *b;

	ck_assert_msg(
	    hx_plan_load(&p, hx_check_src("tests/data/plans/mixed-baseline.json"), &err) == 0,
	    "%s", err.msg);
	/* a100-80g has no FP8 peak: without the key it is the same plan, byte for byte, so
	 * check and simulate see the same thing */
	ck_assert_str_eq(p.gpus[1].name, "a100-80g");
	ck_assert(p.gpus[1].tflops_fp8 == 0);
	ck_assert_msg(parse_without(1, fp8, &q, &err) == 0, "%s", err.msg);
	a = hx_plan_dump(&p);
	b = hx_plan_dump(&q);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	hx_plan_release(&q);
	/* every optional key out: each is 0, the rest as stored */
	ck_assert_msg(parse_without(0, optional, &q, &err) == 0, "%s", err.msg);
	want = p.gpus[0];
	for (int i = 0; optional[i]; i++)
		*hx_gpu_field(&want, optional[i]) = 0;
	ck_assert(memcmp(&q.gpus[0], &want, sizeof(want)) == 0);
	hx_plan_release(&q);
	ck_assert_int_eq(parse_without(0, core, &q, &err), HX_EINPUT);
	ck_assert_str_eq(err.msg, "t.json: /gpus/0: missing required key \"mem_gib\"");
	hx_plan_release(&p);
}
END_TEST

/* Spot arithmetic against brute force on a plan with spot nodes of two
 * rates: the probability that at most K of them are down at once, summed
 * over every subset of nodes, and the capacity left after losing the K that
 * host the most, recounted replica by replica. */
START_TEST(test_spot_brute)
{
	hx_plan p;
	hx_err err = {0};
	char names[16][64];
	double q[16], cap[16] = {0}, total = 0;
	int n = 0, order[16];

	ck_assert_msg(
	    hx_plan_load(&p, hx_check_src("tests/data/spot/plan-two-rates.json"), &err) == 0,
	    "%s", err.msg);
	for (int g = 0; g < p.ngroups; g++)
		for (int r = 0; r < p.groups[g].nreplicas; r++) {
			const hx_plan_replica *rp = &p.groups[g].replicas[r];
			const char *nm = rp->gpus[0][0].node;
			int o = hx_offer_node(nm, NULL), i;
			total += p.groups[g].capacity_rps;
			for (i = 0; i < n && strcmp(names[i], nm) != 0; i++)
				;
			if (i == n) {
				ck_assert_int_lt(n, 16);
				hx_strlcpy(names[n], nm, sizeof(names[n]));
				q[n] = 0;
				for (int e = 0; e < p.nrent; e++)
					if (p.rent[e].offer == o)
						q[n] = hx_spot_down(&p.rent[e]);
				n++;
			}
			cap[i] += p.groups[g].capacity_rps;
		}
	/* two rates, so the down chances differ: not a plain binomial */
	ck_assert_int_ge(n, 3);
	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = 0; i < n; i++) /* most capacity first, then by name */
		for (int j = i + 1; j < n; j++)
			if (cap[order[j]] > cap[order[i]] ||
			    (cap[order[j]] == cap[order[i]] &&
			     strcmp(names[order[j]], names[order[i]]) < 0)) {
				int t = order[i];
				order[i] = order[j];
				order[j] = t;
			}
	for (int k = 0; k <= n; k++) {
		hx_plan_spot s = {0};
		double left[2], want = 0, lost = 0;
		for (unsigned m = 0; m < 1u << n; m++) {
			double pr = 1;
			if (__builtin_popcount(m) > k)
				continue;
			for (int i = 0; i < n; i++)
				pr *= m >> i & 1 ? q[i] : 1 - q[i];
			want += pr;
		}
		for (int i = 0; i < k; i++)
			lost += cap[order[i]];
		hx_spot_at(&p, k, &s, left);
		ck_assert_int_eq(s.nodes, n);
		ck_assert_msg(fabs(s.slo_probability - want) < 1e-6, "k %d: %g, brute force %g",
			      k, s.slo_probability, want);
		ck_assert(fabs(left[0] - (total - lost)) < 1e-9);
		if (k < n)
			ck_assert(fabs(left[1] - (total - lost - cap[order[k]])) < 1e-9);
	}
	/* assess: the most nodes it survives losing against a need */
	for (int k = 0; k < n; k++) {
		hx_plan_spot s = {0};
		double lost = 0;
		for (int i = 0; i < k; i++)
			lost += cap[order[i]];
		hx_spot_assess(&p, total - lost - 1e-6, &s);
		ck_assert_int_eq(s.survives_nodes, k);
	}
	hx_plan_release(&p);
}
END_TEST

/* jansson's own text for real V at the plan's precision: a new string. */
static char *jansson_real(double v)
{
	json_t *r = json_real(v);
	char *s = json_dumps(r, JSON_ENCODE_ANY | JSON_REAL_PRECISION(10));

	json_decref(r);
	return s;
}

/* The streaming writer's numbers are jansson's, its fast cases included:
 * whole numbers, multiples of 1e-6 (and their neighbours a unit in the
 * last place away), the ends of both ranges, and any bit pattern. */
START_TEST(test_jw_reals)
{
	static const double fixed[] = {0.0,           -0.0,         1.0,
				       0.5,           1e-4,         9.9999e-5,
				       0.0001000001,  0.017208,     9999.999999,
				       10000.0,       10000.5,      999999999.0,
				       1e9,           1e10,         123456789.0,
				       0.1,           0.3,          1.0 / 3,
				       1e-300,        5e-324,       1.7976931348623157e308,
				       1e16,          1e17,         123.4567890123456,
				       4.97443,       19.0,         1e-7,
				       12345.678901,  1234.5,       0.9999999999,
				       0.99999999995, 9999.9999995, 0.00010000005};
	const int nf = (int)(sizeof(fixed) / sizeof(fixed[0]));
	hx_rng rng;

	hx_rng_seed(&rng, 20);
	for (int i = 0; i < nf + 240000; i++) {
		double v = 0;
		uint64_t u = hx_rng_next(&rng);
		char mine[32], *theirs;
		int n;
		if (i < nf) {
			v = fixed[i];
		} else {
			switch (i % 6) {
			case 0: v = (double)(u % 10000000000ULL) / 1e6; break;
			case 1: v = (double)(u % 2000000000ULL); break;
			case 2: memcpy(&v, &u, sizeof(v)); break;
			case 3:
				v = hx_round6(hx_rng_uniform(&rng) *
					      pow(10, (int)(u % 24) - 10));
				break;
			case 4: v = hx_weight6(hx_rng_uniform(&rng)); break;
			default:
				v = nextafter((double)(u % 10000000000ULL) / 1e6,
					      (u >> 40) & 1 ? 1e300 : 0);
			}
			if (!isfinite(v))
				continue;
		}
		for (int sign = 0; sign < 2; sign++, v = -v) {
			n = hx_jw_real_text(v, mine);
			theirs = jansson_real(v);
			ck_assert_msg(strcmp(mine, theirs) == 0 && n == (int)strlen(theirs),
				      "%.17g: %s, jansson %s", v, mine, theirs);
			free(theirs);
		}
	}
}
END_TEST

/* Strings of every kind the writer must escape, pass or leave out (invalid
 * UTF-8: json_string refuses it). */
static const char *const jw_strings[] = {"plain",
					 "",
					 "quote\" back\\slash",
					 "ctl\x01\x1f\t\n\r\b\f|",
					 "slash/ del\x7f",
					 "utf8 \xc3\xa9 \xe2\x98\x83 \xf0\x9d\x84\x9e",
					 "\xff",
					 "\xc0\xaf",
					 "\xed\xa0\x80",
					 "\xf4\x90\x80\x80",
					 "cut \xe2\x82",
					 "n0:15"};

/* A random value at depth D written both ways: through W under KEY and as
 * the jansson tree returned (NULL where jansson holds nothing, as for a
 * real that is not finite). */
static json_t *jw_twin(hx_rng *r, hx_jw *w, const char *key, int d)
{
	uint64_t u = hx_rng_next(r);
	const double odd[] = {NAN, INFINITY, -INFINITY, 0.017208, -0.0, 1e300, 5e-324};
	double v =
	    u % 3 ? (hx_rng_uniform(r) - 0.3) * pow(10, (int)(u % 17) - 8) : odd[(u >> 8) % 7];

	switch ((u >> 16) % (d < 4 ? 10 : 7)) {
	case 0: hx_jw_int(w, key, (long long)u); return json_integer((json_int_t)u);
	case 1: hx_jw_real(w, key, v); return json_real(v);
	case 2:
		hx_jw_num(w, key, v);
		return isfinite(v) ? json_real(hx_round6(v)) : json_null();
	case 3: {
		const char *s =
		    jw_strings[(u >> 24) % (sizeof(jw_strings) / sizeof(*jw_strings))];
		hx_jw_str(w, key, s);
		return json_string(s);
	}
	case 4: hx_jw_bool(w, key, (int)(u >> 30) & 1); return json_boolean((u >> 30) & 1);
	case 5: hx_jw_null(w, key); return json_null();
	case 6: { /* a tree written in place */
		hx_jw scratch;
		json_t *t;
		hx_jw_init(&scratch);
		t = jw_twin(r, &scratch, NULL, d);
		hx_jw_release(&scratch);
		hx_jw_json(w, key, t ? json_incref(t) : NULL);
		return t;
	}
	default: {
		int obj = (u >> 32) & 1, n = (int)((u >> 40) % 5);
		json_t *c = obj ? json_object() : json_array();
		hx_jw_open(w, key, obj ? '{' : '[');
		for (int i = 0; i < n; i++) {
			char k[32];
			snprintf(k, sizeof(k), i % 3 == 2 ? "k\"\\\n\t%d \xc3\xa9" : "k%d", i);
			json_t *x = jw_twin(r, w, obj ? k : NULL, d + 1);
			if (obj)
				json_object_set_new(c, k, x);
			else
				json_array_append_new(c, x);
		}
		hx_jw_close(w, obj ? '}' : ']');
		return c;
	}
	}
}

/* Documents written by the streaming writer are byte for byte what
 * hx_json_dump writes for the same tree: nesting, empty containers, values
 * left out, escapes, trees written in place at any depth. */
START_TEST(test_jw_documents)
{
	hx_rng rng;

	hx_rng_seed(&rng, 7);
	for (int doc = 0; doc < 3000; doc++) {
		hx_jw w;
		json_t *root = json_object();
		char *a, *b;
		int n = (int)(hx_rng_next(&rng) % 6);
		hx_jw_init(&w);
		hx_jw_open(&w, NULL, '{');
		for (int i = 0; i < n; i++) {
			char k[16];
			snprintf(k, sizeof(k), "m%d", i);
			json_object_set_new(root, k, jw_twin(&rng, &w, k, 1));
		}
		hx_jw_close(&w, '}');
		a = hx_jw_finish(&w);
		b = hx_json_dump(root);
		ck_assert_msg(strcmp(a, b) == 0, "document %d:\n%s\njansson:\n%s", doc, a, b);
		free(a);
		free(b);
		json_decref(root);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("plan");
	TCase *tc = tcase_create("plan");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_sha256);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_spill_against);
	tcase_add_test(tc, test_baseline_rules);
	tcase_add_test(tc, test_baseline_pipeline);
	tcase_add_test(tc, test_reader_rejects);
	tcase_add_test(tc, test_gpu_v1_defaults);
	tcase_add_test(tc, test_routes_normalize);
	tcase_add_test(tc, test_spot_brute);
	tcase_add_test(tc, test_jw_reals);
	tcase_add_test(tc, test_jw_documents);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run(suite());
}
