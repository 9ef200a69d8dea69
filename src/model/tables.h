/*
 * tables: measured tables that replace parts of the cost model, read from
 * CSV (traces and calibration measurements are in problem.h).
 */
#ifndef HX_TABLES_H
#define HX_TABLES_H

#include "base/util.h"

/* A measured per-layer timing (--layer-costs): one transformer layer on
 * one GPU of a TP group, no serving overhead. */
enum { HX_LC_DECODE, HX_LC_PREFILL };
typedef struct hx_layer_cost {
	char gpu[48];
	int tp, phase;  /* HX_LC_* */
	double tokens;  /* decode: sequences; prefill: prompt tokens */
	double context; /* as measured (the planner interpolates in tokens) */
	double ms;
	int line;
} hx_layer_cost;

/* Read a layer-cost CSV (header gpu,tp,phase,tokens,context,ms).  *OUT is
 * new (free it); errors name "PATH:LINE". */
int hx_layer_costs_load(hx_layer_cost **out, int *n, const char *path, hx_err *err);

#endif
