/*
 * graph-scale-pp: a job graph as it would run with another pipeline
 * depth. The traced job's ranks are the templates: each new rank's
 * program is written anew, piece by piece, from the ranks of the traced
 * job at the same tensor- and data-parallel place (the first stage's
 * embedding, the last stage's head and loss, the layers, the sends and
 * receives), in the new schedule; its collectives meet their new groups.
 * How: tools/graph-scale-pp/pp.h. What: graph-scale-pp(1).
 *
 * State: one section at a time, decoded (common/graph.h), its pieces,
 * and the new job: a copied task as what it changes of its template's
 * record (64 bytes, pp.h's struct ntask), a task made here whole.
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "graph-scale-pp/pp.h"
#include "util.h"
#include "whatif.h"

#define PRODUCER "graph-scale-pp " KG_VERSION

static const char usage[] =
    "graph-scale-pp [-q] [-o FILE] [--microbatches M] [--schedule 1f1b|gpipe] "
    "[--gpus-per-node N] [--net GBPS,US] [--topology FILE] [--activation-bytes B] N "
    "[FILE ...]";

static const char help[] =
    "Rebuild a job graph for N pipeline stages.\n"
    "\n"
    "  -o, --output FILE        write the stream to FILE instead of stdout\n"
    "      --microbatches M     micro-batches an iteration (default: as traced)\n"
    "      --schedule S         1f1b (the default) or gpipe\n"
    "      --gpus-per-node N    ranks per node, for the links (default 8)\n"
    "      --net GBPS,US        the network's bandwidth per GPU and latency per step,\n"
    "                           for collectives the job never ran across nodes\n"
    "      --topology FILE      the links (nvlink, network) and gpus-per-node, for\n"
    "                           what the job does not show\n"
    "      --activation-bytes B what a stage sends, where the job sent nothing\n"
    "                           (default: the first layer's input at 2 bytes)\n"
    "  -q, --quiet              no warnings\n"
    "  -h, --help               this help\n"
    "      --version            the version\n"
    "\n"
    "The input is a job graph (graph-deps --merge), or one GPU's graph, with\n"
    "structure tags. With no FILE, or FILE -, read standard input.\n"
    "See graph-scale-pp(1).\n";

/* The tool's own options; whatif.h reads the others. */
static const struct option own[] = {
	{ "microbatches", required_argument, NULL, 'M' },
	{ "schedule", required_argument, NULL, 'S' },
	{ "activation-bytes", required_argument, NULL, 'A' },
	{ NULL, 0, NULL, 0 }
};

/* Rebuild and write one section's job; 0, or 1 after a message. */
static int
scale(void *arg, struct graph *g, const struct kg_reader *r, const char *name, int index,
    struct gout *out)
{
	const struct opts *o = arg;
	struct job J;
	int rc;

	memset(&J, 0, sizeof(J));
	J.o = o, J.g = g, J.r = r, J.name = name, J.index = index;
	rc = job_read(&J);
	if (rc == 0) {
		static const char *const keys[] = { "pp", "micro_batches", "world" };
		int64_t vals[3] = { o->n, o->mb > 0 ? o->mb : -1,
			config_world_to(&g->h, "pp", J.S, o->n) };
		char tool[420], set[96];

		config_set_text(set, sizeof(set), keys, vals, 3);
		snprintf(tool, sizeof(tool), "%s%s%s%s", PRODUCER, set, J.net[0] ? " " : "",
		    J.net);
		if (job_build(&J, &out->w, tool) != 0) {
			if (out->w.failed)
				errmsg("%s: %s", out->name, out->w.err);
			rc = 1;
		}
	}
	job_release(&J);
	return rc;
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct whatif_tool w = {
		.own = own, .gpn = &o.gpn, .given = &o.given,
		.name = "graph-scale-pp", .usage = usage, .help = help, .producer = PRODUCER,
	};
	int c;

	/* The new job's arrays grow by doubling; under glibc's moving mmap
	 * threshold (it rises to the largest block freed, here 11.5 MB on
	 * the 15B job) those below it grow on the heap and leave holes
	 * there: 28 MB of the 15B job's peak, none with a fixed 4 MiB one */
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	memset(&o, 0, sizeof(o));
	o.sched = SCHED_1F1B;
	while ((c = whatif_getopt(&w, argc, argv)) != -1) {
		switch (c) {
		case 'M':
			if (parse_i64(optarg, 1, 1 << 20, &o.mb) < 0) {
				errmsg("invalid --microbatches '%s'", optarg);
				usage_exit(usage);
			}
			break;
		case 'S':
			if (strcmp(optarg, "1f1b") == 0) {
				o.sched = SCHED_1F1B;
			} else if (strcmp(optarg, "gpipe") == 0) {
				o.sched = SCHED_GPIPE;
			} else {
				errmsg("invalid --schedule '%s' (1f1b or gpipe)", optarg);
				usage_exit(usage);
			}
			break;
		case 'A':
			if (parse_i64(optarg, 1, INT64_C(1) << 50, &o.act) < 0) {
				errmsg("invalid --activation-bytes '%s'", optarg);
				usage_exit(usage);
			}
			break;
		}
	}
	whatif_number(&w, &o.n, 1 << 16, "the new pipeline depth", "pipeline depth", "");
	return whatif_run_graphs(&w, scale, &o);
}
