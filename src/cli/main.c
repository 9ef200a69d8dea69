/*
 * hexplan: plans LLM serving on heterogeneous GPU clusters.  The command
 * table and the dispatch are in commands.c (hx_main).
 */
#include "config.h"

#include <signal.h>

#include "cli/cli.h"

int main(int argc, char **argv)
{
	/* Output to a closed pipe ends the run quietly, as Unix tools do, even
	 * when the parent ignores SIGPIPE; no output file is ever half written
	 * (they are renamed into place whole). */
	signal(SIGPIPE, SIG_DFL);
	return hx_main(argc, argv);
}
