/*
 * classes: a workload's length classes, named (the workload's classes[]) or
 * ranged (quantile buckets of its prompt and output lengths).  The compose
 * planner prices each class on its own; replan and the verifier see them
 * the same way.
 */
#ifndef HX_CLASSES_H
#define HX_CLASSES_H

#include "model/problem.h"

/* Token bound that stands for "no upper end" in a class's range. */
#define HX_CLASS_INF (1 << 30)
/* A length class of the workload.  Ranged classes (the workload has no
 * classes[]) hold the requests whose prompt and output lengths fall in
 * [lo, hi); named classes (the workload's own) have hi = 0. */
typedef struct hx_len_class {
	char name[64];
	double share;
	hx_dist prompt, output; /* owned */
	int prompt_lo, prompt_hi, output_lo, output_hi;
} hx_len_class;

/* The workload's classes[] if it has them, else the product of up to
 * BUCKETS quantile buckets of its prompt lengths and as many of its output
 * lengths (independent, as the workload draws them), named "pIoJ".  Returns
 * the count; *OUT is new (free with hx_len_classes_free). */
int hx_len_classes(const hx_workload *w, int buckets, hx_len_class **out);
void hx_len_classes_free(hx_len_class *c, int n);
/* W restricted to class C (borrows C's distributions). */
hx_workload hx_len_class_workload(const hx_workload *w, const hx_len_class *c);

#endif
