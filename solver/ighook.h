/*
 * ighook: every call into igraph goes through hx_igraph_guard, which
 * installs igraph's error handler (it records the reason and returns, so
 * igraph functions return an error code) and fatal handler (which must not
 * return: it longjmps back here), so an igraph failure becomes an error
 * status with a message, never an abort of the process.
 */
#ifndef HX_IGHOOK_H
#define HX_IGHOOK_H

#include "base/util.h"

/* Run FN(CTX) under the handlers.  FN returns an igraph error code.
 * Returns 0, or HX_EINPUT with ERR saying "WHAT failed: reason".  A fatal
 * error abandons FN midway (what it allocated is lost: the process lives
 * on to report the error). */
int hx_igraph_guard(int (*fn)(void *ctx), void *ctx, const char *what, hx_err *err);

/* For tests: make the next guarded call fail as igraph would, with an
 * error (MODE 1) or a fatal error (MODE 2) raised inside the handlers. */
void hx_igraph_force_error(int mode);

#endif
