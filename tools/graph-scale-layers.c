/*
 * graph-scale-layers: a job graph (or one rank's graph) as it would run
 * with N transformer layers instead of L.
 *
 * Stages. The layers come from kineto2graph's structure tags (`ly`,
 * `ph`). Each rank holds a contiguous range of layers, the same for all
 * the ranks of its pipeline stage, and the stages' ranges follow each
 * other. N layers are split over the S stages evenly, the first N mod S
 * stages taking one more. A stage's n layers become n': new layer j is
 * a copy of the stage's layer floor(j n / n') when it grows (every layer
 * copied once or more, in order), round(j (n - 1) / (n' - 1)) when it
 * shrinks (the first and the last kept).
 *
 * Runs. A layer's work on one processor for one micro-batch and phase is
 * a run: consecutive tasks tagged with that layer. A run is replaced by
 * its copies one after the other (ascending layers in the forward
 * phase, descending in the backward), each with its source's durations
 * and its new layer number; all else stays. Then the edges:
 *  - program order (consecutive tasks on a thread or a stream) is
 *    rebuilt along each processor's new order. Two tasks that followed
 *    each other before keep their edge; a new pair (a copy after a copy,
 *    the tasks around a removed run) takes the edge that left the first
 *    one's source for a layer (the gap between two layers), else the
 *    one that entered the second one's source from a layer, else either;
 *  - an edge between runs of the same layer (a launch, an event between
 *    streams, a collective's rendezvous across ranks) is copied for each
 *    copy, joining the copies of the same new layer;
 *  - any other edge leaves a run's last copy and enters a run's first
 *    copy; an edge of a removed run moves to the nearest task kept on its
 *    processor (before it for an edge that leaves, after it for one that
 *    enters). A runtime edge's binding tasks (`via`, `at`) follow the
 *    copies of their layer.
 *
 * Gradients. The data-parallel group's collectives in the backward and
 * optimizer phases (common/pgroup.h) carry the stage's gradients. A
 * layer's parameters P are counted from the weight and bias operands of
 * the operators its forward pass launches (aten::mm, addmm, linear,
 * layer_norm, a bias add: the shapes kineto2graph keeps), so the stage's
 * B gradient bytes become B' = B + (n' - n) P e, e the gradient element
 * size. Each gradient collective moves B'/B of its bytes and takes
 * d T(b')/T(b) (T the model fitted on the job's collectives); the
 * optimizer phase's kernels, whose work follows the parameter count,
 * take B'/B of their durations.
 *
 * State: one section at a time, decoded (common/graph.h), and the new
 * tasks and edges; a new task as what differs from its source's record
 * (32 bytes: sl.h's struct ntask), made whole only as it is written.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "graph-scale-layers/sl.h"
#include "graph.h"
#include "kg.h"
#include "prefault.h"
#include "util.h"
#include "whatif.h"

#define PRODUCER "graph-scale-layers " KG_VERSION

static const char usage[] =
    "graph-scale-layers [-q] [-o FILE] [--gpus-per-node N] [--max-memory BYTES] N [FILE ...]";

static const char help[] =
    "Rebuild a graph with N transformer layers in all.\n"
    "\n"
    "  -o, --output FILE        write the stream to FILE instead of stdout\n"
    "      --gpus-per-node N    ranks per node, for the links (default 8)\n"
    "      --max-memory BYTES   the most it may hold (K, M, G, T; default: the\n"
    "                           machine's memory or the process's limit, less an eighth)\n"
    "  -q, --quiet              no warnings\n"
    "  -h, --help               this help\n"
    "      --version            the version\n"
    "\n"
    "The input is a graph with layer tags (kineto2graph), a job graph\n"
    "(graph-deps --merge) for a pipeline.\n"
    "With no FILE, or FILE -, read standard input. See graph-scale-layers(1).\n";

static void
ctx_release(struct ctx *c)
{
	size_t k;

	pf_forget(c->g->pf, 6);
	free(c->run), free(c->pos), free(c->nid), free(c->pidx), free(c->porder);
	free(c->progout), free(c->progin), free(c->ranks), free(c->rstage), free(c->rn);
	free(c->tproc), free(c->prk);
	for (k = 0; k < c->nst; k++)
		free(c->st[k].cnt), free(c->st[k].firstj);
	free(c->st), free(c->t), free(c->fix), free(c->e);
	for (k = 0; k < c->nrk; k++)
		free(c->rk[k].dur), free(c->rk[k].gap);
	free(c->rk);
}

/* graph_write's new tasks, made whole one by one. */
struct out_tasks {
	const struct ctx *c;
	size_t fix;
};

static void
task_at(void *arg, size_t i, struct kg_task *t)
{
	struct out_tasks *o = arg;

	new_task(o->c, i, &o->fix, t);
}

/*
 * Refuse a graph that would not fit (whatif_fits): 1 after the message.
 * Held: the section, eight ids a source task (c->run to c->tproc), the
 * new tasks (struct ntask) and edges, their number the source's times
 * the tasks' growth.
 */
static int
too_big(const struct ctx *c)
{
	const struct graph *g = c->g;
	uint64_t nt = count_tasks(c), ne, bytes;
	char what[64];

	ne = g->ntask > 0 ? (uint64_t)((double)g->nedge * (double)nt / (double)g->ntask) : 0;
	bytes = whatif_graph_bytes(g) + (uint64_t)g->ntask * 8 * sizeof(uint32_t) +
	    whatif_vec(nt, sizeof(*c->t)) + whatif_vec(ne, sizeof(*c->e));
	snprintf(what, sizeof(what), "%lld layers", (long long)c->o->n);
	return whatif_fits(c->name, c->index, what, nt, ne, bytes);
}

/* Rebuild and write one section; 0, or 1 after a message. */
static int
scale(void *arg, struct graph *g, const struct kg_reader *r, const char *name, int index,
    struct gout *out)
{
	const struct opts *o = arg;
	struct ctx c;
	struct graph_out go;
	struct out_tasks ot;
	char tool[128];
	int rc = 1;

	memset(&c, 0, sizeof(c));
	c.o = o, c.g = g, c.r = r, c.name = name, c.index = index;
	if (find_stages(&c) != 0)
		goto out;
	find_runs(&c);
	run_kinds(&c);
	if (too_big(&c) != 0)
		goto out;
	make_tasks(&c);
	program_edges(&c);
	other_edges(&c);
	free(c.tproc);
	c.tproc = NULL;
	if (gradients(&c) != 0)
		goto out;
	if (c.dropped > 0)
		warnmsg("%s: section %d: %zu edges lost both ends' tasks", name, index, c.dropped);
	memset(&go, 0, sizeof(go));
	ot.c = &c, ot.fix = 0;
	go.task_at = task_at, go.arg = &ot, go.ntask = c.nt;
	go.edge = c.e, go.nedge = c.ne;
	{
		static const char *const keys[] = { "layers" };
		char set[64];

		config_set_text(set, sizeof(set), keys, &o->n, 1);
		snprintf(tool, sizeof(tool), "%s%s", PRODUCER, set);
	}
	if (graph_write(&out->w, g, tool, &go) < 0) {
		errmsg("%s: %s", out->name, out->w.err);
		goto out;
	}
	rc = 0;
out:
	ctx_release(&c);
	return rc;
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct whatif_tool w = {
		.gpn = &o.gpn,
		.sizes = 1,
		.name = "graph-scale-layers", .usage = usage, .help = help, .producer = PRODUCER,
	};

	memset(&o, 0, sizeof(o));
	while (whatif_getopt(&w, argc, argv) != -1)
		;
	whatif_number(&w, &o.n, 1 << 20, "the new layer count", "layer count", "");
	return whatif_run_graphs(&w, scale, &o);
}
