/*
 * The what-if tools and graph2chrome on one stream (fuzz.h), each
 * writing to a file: `graph-scale-layers -q -o OUT 2`, `graph-scale-pp
 * -q -o OUT 2` and `1 --microbatches 2`, `graph-scale-dp -q -o OUT 2`,
 * `graph-scale-tp -q -o OUT 2`, `graph-scale-hidden -q -o OUT 16`
 * (without a model: by FLOPs and bytes), `graph-retime -q -o OUT
 * --speedup gemm=2` and `graph2chrome -o OUT --both`. Each must end 0 or
 * 1 (refusing a graph it cannot edit is 1).
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz.h"

int graph_scale_layers_main(int argc, char **argv);
int graph_scale_pp_main(int argc, char **argv);
int graph_scale_dp_main(int argc, char **argv);
int graph_scale_tp_main(int argc, char **argv);
int graph_scale_hidden_main(int argc, char **argv);
int graph_retime_main(int argc, char **argv);
int graph2chrome_main(int argc, char **argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
run(int (*fn)(int, char **), const char *a0, const char *a1, const char *a2, const char *a3,
    const char *in)
{
	const char *argv[9];
	int n = 0, rc;

	argv[n++] = a0;
	argv[n++] = "-o";
	argv[n++] = fz_path("out.kg");
	if (fn != graph2chrome_main)
		argv[n++] = "-q";
	argv[n++] = a1;
	if (a2 != NULL)
		argv[n++] = a2;
	if (a3 != NULL)
		argv[n++] = a3;
	argv[n++] = in;
	argv[n] = NULL;
	rc = fz_main(fn, argv, 0);
	if (rc != 0 && rc != 1)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *paths[FZ_MAXFILES], *in;

	fz_init();
	fz_streams(data, size, paths);
	in = paths[0];
	run(graph_scale_layers_main, "graph-scale-layers", "2", NULL, NULL, in);
	run(graph_scale_pp_main, "graph-scale-pp", "2", NULL, NULL, in);
	run(graph_scale_pp_main, "graph-scale-pp", "--microbatches", "2", "1", in);
	run(graph_scale_dp_main, "graph-scale-dp", "2", NULL, NULL, in);
	run(graph_scale_tp_main, "graph-scale-tp", "2", NULL, NULL, in);
	run(graph_scale_hidden_main, "graph-scale-hidden", "16", NULL, NULL, in);
	run(graph_retime_main, "graph-retime", "--speedup", "gemm=2", NULL, in);
	run(graph2chrome_main, "graph2chrome", "--both", NULL, NULL, in);
	return 0;
}
