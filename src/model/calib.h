/*
 * calib: fitting the cost model's GPU constants to measured timings, and the
 * calibration file that carries them ("schema": "hexplan.calibration").
 * Applying a calibration overrides GPU profile fields in the catalog, so
 * every later consumer of the cost model sees the fitted values.
 */
#ifndef HX_CALIB_H
#define HX_CALIB_H

#include "model/catalog.h"
#include "model/problem.h"

#define HX_CALIB_MAX_FIELDS 16 /* at least the number of hx_calib_keys */

typedef struct hx_calib_entry {
	char gpu[48];
	int nfields;
	char key[HX_CALIB_MAX_FIELDS][32];
	double value[HX_CALIB_MAX_FIELDS];
} hx_calib_entry;

typedef struct hx_calib {
	hx_calib_entry *e;
	int n;
} hx_calib;

/* Read PATH; every GPU must exist in CAT and every key be a fittable field. */
int hx_calib_load(hx_calib *c, const char *path, const hx_catalog *cat, hx_err *err);
void hx_calib_release(hx_calib *c);
/* Override CAT's GPU fields with C's values. */
void hx_calib_apply(const hx_calib *c, hx_catalog *cat);

/* The fields a fit may change, with their bounds. */
extern const char *const hx_calib_keys[];

/* A fittable field's value from an unconstrained coordinate U (within the
 * field's bounds), and back: the coordinates Nelder-Mead searches. */
double hx_calib_to_value(const char *key, double u);
double hx_calib_to_coord(const char *key, double v);

/* Minimize F(G) over the NKEYS fittable fields KEYS of G by Nelder-Mead in
 * their unconstrained coordinates, from G's values (a field at 0 outside
 * the efficiencies starts at START_OFF, so that the simplex moves it), in
 * at most MAX_EVALS evaluations.  G gets the best point; returns F there.
 * *EVALS (may be NULL) gets the evaluations used. */
typedef double (*hx_calib_objective)(const hx_gpu *g, void *ctx);
double hx_calib_minimize(hx_gpu *g, const char *const *keys, int nkeys, double start_off,
			 hx_calib_objective f, void *ctx, int max_evals, int *evals);

/* Prediction of one measurement by the cost model with GPU G. */
double hx_calib_predict(const hx_model *m, const hx_gpu *g, const hx_meas *x);

typedef struct hx_fit {
	hx_gpu fitted; /* G with the fitted fields */
	int nkeys;
	const char *keys[HX_CALIB_MAX_FIELDS];
	double *before_ms, *after_ms; /* per point, caller frees with hx_fit_release */
	double median_ape_before, median_ape_after; /* percent */
	double p90_ape_before, p90_ape_after;
	int evals;
} hx_fit;

/* Fit G's constants to the N points X (least squares on log ratios, by
 * Nelder-Mead).  Fields that the points cannot identify are left alone:
 * the iteration overhead and all-reduce latency need whole-iteration points,
 * e_attn needs prefill points. */
int hx_calib_fit(const hx_model *m, const hx_gpu *g, const hx_meas *x, int n, hx_fit *out,
		 hx_err *err);
void hx_fit_release(hx_fit *f);

#endif
