/* Fuzz the plan reader; a plan it accepts must also write and read back. */
#include "config.h"

#include "fuzz.h"
#include "plan/plan.h"

static void hx_fuzz_one(const char *path)
{
	hx_plan p, q;
	hx_err err = {0};
	char *a, *b;

	if (hx_plan_load(&p, path, &err) != 0)
		return;
	a = hx_plan_dump(&p);
	if (hx_plan_parse_text(&q, a, "<dump>", &err) != 0) {
		fprintf(stderr, "a plan read back fails: %s\n", err.msg);
		abort();
	}
	b = hx_plan_dump(&q);
	if (strcmp(a, b) != 0) {
		fprintf(stderr, "a plan written twice differs\n");
		abort();
	}
	free(a);
	free(b);
	hx_plan_release(&q);
	hx_plan_release(&p);
}
