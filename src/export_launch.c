/* export_launch: being written. */
#include "config.h"

#include "export.h"

int hx_export_launch(const hx_plan *p, const hx_export_opts *o, hx_export_out *out, hx_err *err)
{
	(void)p;
	(void)o;
	(void)out;
	return hx_errf(err, HX_EINPUT, "export to launch is not built yet");
}
