/* Check suite: the plan verifier (hexplan check) on the plans of
 * tests/data/plans: the valid ones pass, each broken one reports its class
 * at the right pointer, and every violation is reported, not the first. */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "model/catalog.h"
#include "plan/plan.h"
#include "model/problem.h"
#include "plan/verify.h"
#include "check_util.h"

static hx_catalog cat;
static hx_cluster mixed;

/* PATH under the source tree (make check runs from the build tree). */
static const char *src_path(const char *rel)
{
	static char path[1024];
	const char *top = getenv("top_srcdir");
	snprintf(path, sizeof(path), "%s/%s", top && *top ? top : ".", rel);
	return path;
}

static void load_plan(hx_plan *p, const char *name)
{
	hx_err err = {0};
	char rel[256];
	snprintf(rel, sizeof(rel), "tests/data/plans/%s", name);
	ck_assert_msg(hx_plan_load(p, src_path(rel), &err) == 0, "%s", err.msg);
}

static void setup(void)
{
	hx_err err = {0};
	ck_assert_msg(hx_catalog_load(&cat, NULL, &err) == 0, "%s", err.msg);
	ck_assert_msg(
	    hx_cluster_load(&mixed, src_path("examples/clusters/mixed.json"), &cat, &err) == 0,
	    "%s", err.msg);
}

static void teardown(void)
{
	hx_cluster_release(&mixed);
	hx_catalog_release(&cat);
}

/* Index of the first violation of class CLS at PTR (NULL: any pointer), or -1. */
static int find(const hx_violation *v, int n, hx_vclass cls, const char *ptr)
{
	for (int i = 0; i < n; i++)
		if (v[i].cls == cls && (!ptr || strcmp(v[i].ptr, ptr) == 0))
			return i;
	return -1;
}

static void dump(const hx_violation *v, int n)
{
	for (int i = 0; i < n; i++)
		fprintf(stderr, "  %s %s: %s\n", hx_vclass_name(v[i].cls), v[i].ptr, v[i].msg);
}

/* Verify plan P against C; expect exactly WANT violations (-1: any). */
static hx_violation *verify(const hx_plan *p, const hx_cluster *c, int want, int *n)
{
	hx_violation *v = NULL;
	ck_assert_int_eq(hx_verify_plan(p, c, &v, n), *n);
	if (want >= 0 && *n != want) {
		dump(v, *n);
		ck_abort_msg("%d violations, expected %d", *n, want);
	}
	for (int i = 0; i < *n; i++) {
		ck_assert(v[i].ptr[0] == '/');
		ck_assert(v[i].msg[0] != '\0');
	}
	return v;
}

START_TEST(test_valid_plans)
{
	static const char *const names[] = {"mixed-baseline.json", "mixed-disagg.json"};
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		hx_plan p;
		hx_violation *v;
		int n;
		load_plan(&p, names[i]);
		v = verify(&p, &mixed, 0, &n);
		ck_assert(v == NULL);
		hx_plan_release(&p);
	}
}
END_TEST

/* One broken plan per rule: the file, the class and where it points. */
static const struct broken {
	const char *file;
	hx_vclass cls;
	const char *ptr;
	const char *msg; /* a part of the message */
} broken[] = {
    {"bad-unknown-gpu.json", HX_V_UNKNOWN_GPU, "/groups/0/replicas/1/placement/0/3",
     "GPU \"h100-0:8\": node \"h100-0\" has 8 GPUs"},
    {"bad-unknown-node.json", HX_V_UNKNOWN_GPU, "/groups/1/replicas/1/placement/0/0",
     "the cluster has no node \"a100-9\""},
    {"bad-gpu-twice.json", HX_V_GPU_TWICE, "/groups/0/replicas/1/placement/0/0",
     "already used at /groups/0/replicas/0/placement/0/3"},
    {"bad-gpu-type.json", HX_V_GPU_TYPE, "/groups/1/replicas/1/placement/0/0",
     "node \"l40s-2\" has l40s GPUs, not the stage's a100-80g"},
    {"bad-tp-count.json", HX_V_TP_COUNT, "/groups/0/replicas/1/placement/0",
     "has 3 GPUs, the stage's tp is 4"},
    {"bad-layers.json", HX_V_LAYERS, "/groups/2/stages/1/layers", "starts at layer 41, not 40"},
    {"bad-tp-heads.json", HX_V_TP_HEADS, "/groups/0/stages/0/tp",
     "tp 3 does not divide the 64 attention heads"},
    {"bad-memory.json", HX_V_MEMORY, "/groups/3/replicas/0/placement/0", "short by 27.83 GiB"},
    {"bad-cross-node.json", HX_V_CROSS_NODE, "/groups/1/replicas/1/placement/0",
     "spans nodes \"a100-0\" and \"a100-1\""},
    {"bad-undeclared-gpu.json", HX_V_UNDECLARED, "/groups/2/stages/0/gpu",
     "GPU \"l40s\" is not among the plan's gpus"},
    {"bad-undeclared-model.json", HX_V_UNDECLARED, "/groups/1/model",
     "model \"llama-3.1-8b\" is not among the plan's models"},
    {"bad-route-negative.json", HX_V_ROUTING, "/routing/ingress/2/weight", "is negative"},
    {"bad-route-sum.json", HX_V_ROUTING, "/routing/ingress",
     "the weights for all traffic sum to 0.9, not 1"},
    {"bad-route-class-sum.json", HX_V_ROUTING, "/routing/ingress",
     "the weights of class \"short\" sum to 0.9"},
    {"bad-route-group.json", HX_V_ROUTING, "/routing/ingress/2/group", "no group \"g9\""},
    {"bad-route-empty.json", HX_V_ROUTING, "/routing/ingress", "no route"},
    {"bad-kv-sum.json", HX_V_ROUTING, "/routing/kv", "the weights from \"g0r0\" sum to 0.9"},
    {"bad-kv-replica.json", HX_V_ROUTING, "/routing/kv/1/to", "no replica \"g1r7\""},
    {"bad-hops-replica.json", HX_V_ROUTING, "/routing/hops/0/to", "no replica \"g2r9\""},
    {"bad-hops-sum.json", HX_V_ROUTING, "/routing/hops", "from \"g2r0/s0\" sum to 0.5"},
    {"bad-short.json", HX_V_SHORT, "/shortfall/shortfall_rps",
     "80, but the rate needs 111.111 req/s and the plan carries 25.7346: 85.3765 short"},
    {"bad-cascade-model.json", HX_V_ROUTING, "/routing/cascade/0/model",
     "model \"llama-3.1-8b\" is not among the plan's models"},
    {"bad-role-no-kv.json", HX_V_ROLES, "/groups/0/replicas/1/id",
     "prefill replica \"g0r1\" has no kv route"},
    {"bad-role-kv-from.json", HX_V_ROLES, "/routing/kv/4/from", "is decode, not prefill"},
    {"bad-role-kv-to.json", HX_V_ROLES, "/routing/kv/3/to", "is prefill, not decode"},
    {"bad-duplicate-replica.json", HX_V_DUP_REPLICA, "/groups/1/replicas/1/id",
     "duplicate replica id \"g1r0\""},
};

START_TEST(test_broken_plan)
{
	const struct broken *b = &broken[_i];
	hx_plan p;
	hx_violation *v;
	int n, k;

	load_plan(&p, b->file);
	v = verify(&p, &mixed, -1, &n);
	k = find(v, n, b->cls, b->ptr);
	if (k < 0) {
		dump(v, n);
		ck_abort_msg("%s: no %s violation at %s", b->file, hx_vclass_name(b->cls),
			     b->ptr);
	}
	ck_assert_msg(strstr(v[k].msg, b->msg) != NULL, "%s: message \"%s\"", b->file,
		      v[k].msg);
	/* Each file has one defect: nothing of another class. */
	for (int i = 0; i < n; i++)
		ck_assert_msg(v[i].cls == b->cls, "%s: also %s at %s: %s", b->file,
			      hx_vclass_name(v[i].cls), v[i].ptr, v[i].msg);
	free(v);
	hx_plan_release(&p);
}
END_TEST

START_TEST(test_two_defects)
{
	hx_plan p;
	hx_violation *v;
	int n;

	load_plan(&p, "bad-two-defects.json");
	v = verify(&p, &mixed, 2, &n);
	ck_assert_int_eq(v[0].cls, HX_V_GPU_TWICE);
	ck_assert_str_eq(v[0].ptr, "/groups/0/replicas/1/placement/0/0");
	ck_assert_int_eq(v[1].cls, HX_V_ROUTING);
	ck_assert_str_eq(v[1].ptr, "/routing/ingress");
	free(v);
	hx_plan_release(&p);
}
END_TEST

/* Defects made in memory: several at once, all reported, in plan order. */
START_TEST(test_many_defects)
{
	hx_plan p;
	hx_violation *v;
	int n;

	load_plan(&p, "mixed-baseline.json");
	p.groups[0].replicas[1].gpus[0][2].index = 1; /* h100-0:1 twice */
	p.groups[1].stage[0].tp = 5;                  /* heads, and both placements */
	strcpy(p.groups[2].replicas[0].id, "g0r0");   /* duplicate id */
	p.ingress[0].weight = -p.ingress[0].weight;   /* negative, sum off */
	v = verify(&p, &mixed, -1, &n);
	ck_assert_int_ge(find(v, n, HX_V_GPU_TWICE, "/groups/0/replicas/1/placement/0/2"), 0);
	ck_assert_int_ge(find(v, n, HX_V_TP_HEADS, "/groups/1/stages/0/tp"), 0);
	ck_assert_int_ge(find(v, n, HX_V_TP_COUNT, "/groups/1/replicas/0/placement/0"), 0);
	ck_assert_int_ge(find(v, n, HX_V_TP_COUNT, "/groups/1/replicas/1/placement/0"), 0);
	ck_assert_int_ge(find(v, n, HX_V_DUP_REPLICA, "/groups/2/replicas/0/id"), 0);
	ck_assert_int_ge(find(v, n, HX_V_ROUTING, "/routing/ingress/0/weight"), 0);
	ck_assert_int_ge(find(v, n, HX_V_ROUTING, "/routing/ingress"), 0);
	ck_assert_int_eq(n, 7);
	/* Group rules first, then GPUs twice, ids, routing. */
	ck_assert_int_lt(find(v, n, HX_V_TP_HEADS, NULL), find(v, n, HX_V_GPU_TWICE, NULL));
	ck_assert_int_lt(find(v, n, HX_V_GPU_TWICE, NULL), find(v, n, HX_V_DUP_REPLICA, NULL));
	ck_assert_int_lt(find(v, n, HX_V_DUP_REPLICA, NULL), find(v, n, HX_V_ROUTING, NULL));
	free(v);
	hx_plan_release(&p);
}
END_TEST

START_TEST(test_layer_cover)
{
	hx_plan p;
	hx_violation *v;
	int n;

	load_plan(&p, "mixed-baseline.json");
	p.groups[0].stage[0].first = 2; /* does not start at 0 */
	p.groups[1].stage[0].last = 79; /* does not end at L */
	p.groups[2].stage[0].last = 0;  /* stage 0 empty; stage 1 starts late */
	v = verify(&p, &mixed, 4, &n);
	ck_assert_str_eq(v[0].ptr, "/groups/0/stages/0/layers");
	ck_assert_str_eq(v[0].msg, "starts at layer 2, not 0");
	ck_assert_str_eq(v[1].ptr, "/groups/1/stages/0/layers");
	ck_assert_str_eq(
	    v[1].msg, "the last stage ends at layer 79, not at the 80 layers of llama-3.1-70b");
	ck_assert_str_eq(v[2].ptr, "/groups/2/stages/0/layers");
	ck_assert_str_eq(v[2].msg, "[0, 0) holds no layers");
	ck_assert_str_eq(v[3].ptr, "/groups/2/stages/1/layers");
	ck_assert_str_eq(v[3].msg, "starts at layer 40, not 0 where the previous stage ends");
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(v[i].cls, HX_V_LAYERS);
	free(v);
	hx_plan_release(&p);
}
END_TEST

/* Memory is judged on the cluster's GPUs, whatever the plan embeds. */
START_TEST(test_memory_uses_cluster_gpus)
{
	hx_plan p;
	hx_violation *v;
	int n;

	load_plan(&p, "bad-memory.json");
	for (int i = 0; i < p.ngpus; i++)
		p.gpus[i].mem_gib = 1000; /* the plan claims huge GPUs */
	v = verify(&p, &mixed, 1, &n);
	ck_assert_int_eq(v[0].cls, HX_V_MEMORY);
	free(v);
	hx_plan_release(&p);

	load_plan(&p, "mixed-baseline.json");
	for (int i = 0; i < p.ngpus; i++)
		p.gpus[i].mem_gib = 1; /* the plan claims tiny GPUs: the cluster's count */
	v = verify(&p, &mixed, 0, &n);
	hx_plan_release(&p);
}
END_TEST

START_TEST(test_cross_node_allowed)
{
	hx_plan p;
	hx_violation *v;
	int n;

	load_plan(&p, "bad-cross-node.json");
	p.groups[1].stage[0].cross_node = 1;
	v = verify(&p, &mixed, 0, &n);
	ck_assert(v == NULL);
	hx_plan_release(&p);
}
END_TEST

START_TEST(test_hops)
{
	hx_plan p;
	hx_violation *v;
	hx_route *h;
	int n;

	load_plan(&p, "mixed-baseline.json");
	h = hx_plan_add_route(&p.hops, &p.nhops); /* stage 0 on to stage 1: fine */
	strcpy(h->from, "g2r0/s0");
	strcpy(h->to, "g2r0/s1");
	h->weight = 1;
	v = verify(&p, &mixed, 0, &n);
	h = hx_plan_add_route(&p.hops, &p.nhops); /* back to layer 0 */
	strcpy(h->from, "g2r0/s1");
	strcpy(h->to, "g2r0/s0");
	h->weight = 1;
	h = hx_plan_add_route(&p.hops, &p.nhops); /* no stage 2 */
	strcpy(h->from, "g2r0/s2");
	strcpy(h->to, "g2r0/s1");
	h->weight = 1;
	v = verify(&p, &mixed, 2, &n);
	ck_assert_str_eq(v[0].ptr, "/routing/hops/1");
	ck_assert_str_eq(v[0].msg,
			 "goes from a stage ending at layer 80 to one holding layers [0, 40)");
	ck_assert_str_eq(v[1].ptr, "/routing/hops/2/from");
	ck_assert_str_eq(v[1].msg, "replica \"g2r0\" has no stage 2 (its group has 2)");
	free(v);
	hx_plan_release(&p);
}
END_TEST

/* The mixed cluster's plan on a one-node cluster: every GPU is unknown. */
START_TEST(test_wrong_cluster)
{
	hx_plan p;
	hx_cluster one;
	hx_err err = {0};
	hx_violation *v;
	int n;

	ck_assert_msg(hx_cluster_load(&one, src_path("examples/clusters/h100-node.json"), &cat,
				      &err) == 0,
		      "%s", err.msg);
	load_plan(&p, "mixed-baseline.json");
	v = verify(&p, &one, 24, &n);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(v[i].cls, HX_V_UNKNOWN_GPU);
	ck_assert_str_eq(v[0].msg, "GPU \"h100-0:0\": the cluster has no node \"h100-0\"");
	free(v);
	hx_plan_release(&p);
	hx_cluster_release(&one);
}
END_TEST

START_TEST(test_class_names)
{
	ck_assert_str_eq(hx_vclass_name(HX_V_UNKNOWN_GPU), "unknown-gpu");
	ck_assert_str_eq(hx_vclass_name(HX_V_DUP_REPLICA), "duplicate-replica");
	ck_assert_str_eq(hx_vclass_name(HX_V_NCLASSES), "unknown");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("verify");
	TCase *tc = tcase_create("verify");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_valid_plans);
	tcase_add_loop_test(tc, test_broken_plan, 0, (int)(sizeof(broken) / sizeof(*broken)));
	tcase_add_test(tc, test_two_defects);
	tcase_add_test(tc, test_many_defects);
	tcase_add_test(tc, test_layer_cover);
	tcase_add_test(tc, test_memory_uses_cluster_gpus);
	tcase_add_test(tc, test_cross_node_allowed);
	tcase_add_test(tc, test_hops);
	tcase_add_test(tc, test_wrong_cluster);
	tcase_add_test(tc, test_class_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hx_check_run(suite());
}
