/*
 * The what-if tools and graph2chrome on one stream (fuzz.h), each
 * writing to a file: `graph-scale-layers -q -o OUT 2`, `graph-scale-pp
 * -q -o OUT 2` and `1 --microbatches 2`, `graph-scale-dp -q -o OUT 2`,
 * `graph-scale-tp -q -o OUT 2`, `graph-scale-hidden -q -o OUT 16`
 * (without a model: by FLOPs and bytes), `graph-retime -q -o OUT
 * --speedup gemm=2`, with KG_FUZZ_MODEL set `graph-retime -q -o OUT
 * --model MODEL` (a small fitted model: fuzz/run fits one), `graph-retime
 * -q --sensitivity 2` (which runs graphsim and graphstat from PATH) and
 * `graph2chrome -o OUT --both`. Each must end 0 or 1 (refusing a graph
 * it cannot edit is 1). A stream a tool wrote with status 0 must read
 * whole, by the codec itself, and `graphsim -q -o SIM` on it must end 0
 * or 1: a tool never writes what the format forbids.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "kg.h"

int graph_scale_layers_main(int argc, char **argv);
int graph_scale_pp_main(int argc, char **argv);
int graph_scale_dp_main(int argc, char **argv);
int graph_scale_tp_main(int argc, char **argv);
int graph_scale_hidden_main(int argc, char **argv);
int graph_retime_main(int argc, char **argv);
int graph2chrome_main(int argc, char **argv);
int graphsim_main(int argc, char **argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The stream at path reads whole, record by record; else abort. */
static void
reads_whole(const char *path)
{
	FILE *fp = fopen(path, "rb");
	struct kg_reader r;
	struct kg_rec rec;
	int t;

	if (fp == NULL || kg_reader_init(&r, fp) < 0)
		abort();
	kg_rec_init(&rec);
	while ((t = kg_read(&r, &rec)) > 0)
		;
	if (t < 0) {
		fprintf(stderr, "whatif: a tool's output (status 0) does not read: %s\n", r.err);
		abort();
	}
	kg_rec_release(&rec);
	kg_reader_release(&r);
	fclose(fp);
}

static void
run(int (*fn)(int, char **), const char *a0, const char *a1, const char *a2, const char *a3,
    const char *in)
{
	const char *argv[9], *out = fz_path("out.kg");
	int n = 0, rc;

	argv[n++] = a0;
	argv[n++] = "-o";
	argv[n++] = out;
	if (fn != graph2chrome_main)
		argv[n++] = "-q";
	argv[n++] = a1;
	if (a2 != NULL)
		argv[n++] = a2;
	if (a3 != NULL)
		argv[n++] = a3;
	argv[n++] = in;
	argv[n] = NULL;
	remove(out);
	rc = fz_main(fn, argv, 0);
	if (rc != 0 && rc != 1)
		abort();
	if (rc != 0 || fn == graph2chrome_main)
		return;
	reads_whole(out);
	argv[0] = "graphsim", argv[1] = "-q", argv[2] = "-o", argv[3] = fz_path("sim.kg");
	argv[4] = out, argv[5] = NULL;
	rc = fz_main(graphsim_main, argv, 0);
	if (rc != 0 && rc != 1)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *paths[FZ_MAXFILES], *in, *model = getenv("KG_FUZZ_MODEL");
	const char *argv[6];
	int rc;

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
	if (model != NULL && *model != '\0')
		run(graph_retime_main, "graph-retime", "--model", model, NULL, in);
	run(graph2chrome_main, "graph2chrome", "--both", NULL, NULL, in);
	/* a report on stdout, which it closes */
	argv[0] = "graph-retime", argv[1] = "-q", argv[2] = "--sensitivity", argv[3] = "2";
	argv[4] = in, argv[5] = NULL;
	rc = fz_main(graph_retime_main, argv, 1);
	if (rc != 0 && rc != 1)
		abort();
	return 0;
}
