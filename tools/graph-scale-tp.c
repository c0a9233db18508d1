/*
 * graph-scale-tp: a graph as it would run with another tensor-parallel
 * degree N (graph-scale-tp(1)).
 *
 * The GPU work is sharded as Megatron shards it (graph-scale-tp/shard.c:
 * GEMMs, attention heads, the work between them, the optimizer's share),
 * each changed kernel re-timed by the op model's ratio for its new and
 * old shapes (common/reshape.h), or by FLOPs and bytes without one.
 *
 * The collectives: in a job traced with tensor parallelism (degree T,
 * the process group that reduces activations in the forward phase:
 * common/pgroup.h), each of that group's collectives keeps its bytes and
 * takes d T(N)/T(T) (T() the communication model fitted on the job's
 * collectives, common/comm.h; the group stays within a node); with
 * N = 1 it takes no time and its rendezvous goes. In a job traced
 * without, an all-reduce is inserted after each GEMM whose reduction
 * is now split (a row-parallel GEMM in the forward phase, a column-
 * parallel one's input gradient in the backward), on a stream of its
 * own: the next kernel of the GEMM's stream waits for it in the
 * forward phase; in the backward phase the kernel after the weight-
 * gradient GEMM that follows it (Megatron overlaps the two). Ranks are
 * laid out again, tensor-parallel first: rank t + T (r + D s) of the
 * job stands at (t mod N) + N (r + D s), and every other group's
 * collectives are re-timed when their link changes (graph-scale-dp's
 * rule); the data-parallel group's gradients are T/N of what they were.
 *
 * State: one section at a time, decoded (common/graph.h), and its
 * changed and added tasks, edges and processors.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "comm.h"
#include "config.h"
#include "graph-scale-tp/tp.h"
#include "graph.h"
#include "kg.h"
#include "pgroup.h"
#include "util.h"
#include "whatif.h"

#define PRODUCER "graph-scale-tp " KG_VERSION

static const char usage[] =
    "graph-scale-tp [-qv] [-o FILE] [--sequence-parallel] [--model MODEL [--from MODEL]] "
    "[--gpus-per-node N] [--net GBPS,US] [--topology NAME|FILE] [--launch-us US] N [FILE ...]";

static const char help[] =
    "Re-shard a graph's transformer for N tensor-parallel ranks.\n"
    "\n"
    "  -o, --output FILE        write the stream to FILE instead of stdout\n"
    "      --sequence-parallel  with Megatron's sequence parallelism\n"
    "      --model MODEL        re-time kernels by this op model (opmodel fit)\n"
    "      --from MODEL         the graph's own GPU's model, with --model\n"
    "      --gpus-per-node N    ranks per node (default 8): N must divide it\n"
    "      --net GBPS,US        the network, for links the job never used\n"
    "      --topology NAME|FILE the links and gpus-per-node: a file, or built in:\n"
    "                           h100, a100, v100, mi300x (default: the GPU's,\n"
    "                           else h100)\n"
    "      --launch-us US       host time of a collective's launch, for a job\n"
    "                           that launches none\n"
    "  -q, --quiet              no warnings\n"
    "  -v, --verbose            print what was sharded, the groups and links\n"
    "  -h, --help               this help\n"
    "      --version            the version\n"
    "\n"
    "The input is a graph with shapes and phase tags (kineto2graph), a job\n"
    "graph (graph-deps --merge) for several ranks.\n"
    "With no FILE, or FILE -, read standard input. See graph-scale-tp(1).\n";

/* The tool's own options; whatif.h reads the others. */
static const struct option own[] = {
	{ "sequence-parallel", no_argument, NULL, 'S' },
	{ "model", required_argument, NULL, 'M' },
	{ "from", required_argument, NULL, 'F' },
	{ "launch-us", required_argument, NULL, 'L' },
	{ NULL, 0, NULL, 0 }
};

static void
ctx_release(struct tp *c)
{
	free(c->sv), free(c->t), free(c->e), free(c->p);
	free(c->arafter), free(c->arbytes);
	free(c->launcher), free(c->tout), free(c->tin);
	rs_strs_release(&c->xs);
}

/*
 * What the memory estimate reads (graphstat(1), DEVICE MEMORY): a launch
 * call says its operator's shapes, so a kernel's new shapes go to the
 * call that launched it (the parameters are counted from the calls);
 * and the allocator's net bytes and excursion of a layer's tasks follow
 * its forward launches' first operands, new against old (split
 * activations and weights' shares beside the residual stream, which
 * stays), the optimizer's the parameters a rank keeps (c->rho).
 */
static void
tp_memory(struct tp *c)
{
	const struct graph *g = c->g;
	double rho = c->rho;
	size_t i;

	/* c->launcher: the traced launches (colls.c's host_maps) */
	for (i = 0; i < g->ntask && i < c->nmap; i++) {
		uint32_t l = c->launcher[i];

		if (l != KG_NONE && l < g->ntask && c->t[i].shapes != g->task[i].shapes &&
		    c->t[l].shapes == g->task[l].shapes && c->t[l].kind == KG_RT)
			c->t[l].shapes = c->t[i].shapes;
	}
	/* the operator's other calls before its launch (cuBLAS's
	 * attribute queries, a first launch) say the same shapes */
	{
		uint32_t *prev = xmalloc((g->ntask + 1) * sizeof(*prev));
		uint32_t *last = xmalloc((c->np + 1) * sizeof(*last));

		for (i = 0; i < c->np; i++)
			last[i] = KG_NONE;
		for (i = 0; i < g->ntask; i++) {
			uint32_t p = g->task[i].proc;

			prev[i] = p < c->np ? last[p] : KG_NONE;
			if (p < c->np)
				last[p] = (uint32_t)i;
		}
		for (i = g->ntask; i-- > 0;) {
			uint32_t q;

			if (c->t[i].kind != KG_RT || c->t[i].shapes == g->task[i].shapes)
				continue;
			for (q = prev[i]; q != KG_NONE && c->t[q].kind == KG_RT &&
			    g->task[q].op == g->task[i].op && g->task[q].shapes == g->task[i].shapes &&
			    c->t[q].shapes == g->task[q].shapes; q = prev[q])
				c->t[q].shapes = c->t[i].shapes;
		}
		free(prev);
		free(last);
	}
	/* a layer's factor: the first operands of its forward launches,
	 * new against old (where the allocator's events of a layer land
	 * differs between traces; their sum follows the layer's tensors) */
	{
		int64_t nl = 0;
		double *lo, *ln;

		for (i = 0; i < g->ntask; i++)
			if (c->t[i].layer + 1 > nl)
				nl = c->t[i].layer + 1;
		lo = xcalloc((size_t)nl + 1, sizeof(*lo));
		ln = xcalloc((size_t)nl + 1, sizeof(*ln));
		for (i = 0; i < g->ntask; i++) {
			const struct kg_task *t = &c->t[i];

			if (t->kind != KG_RT || t->layer < 0 || t->phase != KG_PH_FWD ||
			    t->shapes == KG_NONE)
				continue;
			lo[t->layer] += (double)rs_first_numel(tp_text(c, g->task[i].shapes));
			ln[t->layer] += (double)rs_first_numel(tp_text(c, t->shapes));
		}
		for (i = 0; i < g->ntask; i++) {
			struct kg_task *t = &c->t[i];
			double f;

			if (t->mpeak < 0)
				continue;
			f = t->phase == KG_PH_OPT ? rho : t->layer >= 0 && lo[t->layer] > 0 &&
			    ln[t->layer] > 0 ? ln[t->layer] / lo[t->layer] : 1;
			if (f == 1)
				continue;
			t->mnet = llround((double)t->mnet * f);
			if (t->mexc >= 0)
				t->mexc = llround((double)t->mexc * f);
		}
		free(lo);
		free(ln);
	}
}

static int
scale(void *arg, struct graph *g, const struct kg_reader *r, const char *name, int index,
    struct gout *out)
{
	const struct opts *o = arg;
	struct tp c;
	struct graph_out go;
	char net[256], tool[512];
	int rc = 1;

	memset(&c, 0, sizeof(c));
	c.o = o, c.g = g, c.r = r, c.name = name, c.index = index;
	rs_strs_init(&c.xs, g->nstr);
	c.t = xmalloc((g->ntask + 1) * sizeof(*c.t));
	if (g->ntask > 0)
		memcpy(c.t, g->task, g->ntask * sizeof(*c.t));
	c.nt = c.capt = g->ntask;
	c.e = xmalloc((g->nedge + 1) * sizeof(*c.e));
	if (g->nedge > 0) /* none: g->edge is NULL */
		memcpy(c.e, g->edge, g->nedge * sizeof(*c.e));
	c.ne = c.cape = g->nedge;
	c.p = xmalloc((g->nproc + 1) * sizeof(*c.p));
	if (g->nproc > 0)
		memcpy(c.p, g->proc, g->nproc * sizeof(*c.p));
	c.np = c.capp = g->nproc;
	c.T = traced_degree(&c);
	c.sp1 = o->sp && o->n > 1;
	if (tp_sizes(&c) != 0)
		goto out;
	if (c.heads % o->n != 0) {
		errmsg("%s: section %d: %lld attention heads do not divide among %lld "
		    "tensor-parallel ranks", name, index, (long long)c.heads, (long long)o->n);
		goto out;
	}
	net[0] = '\0';
	if (g->h.gpu != NULL && *g->h.gpu != '\0' && o->have_to &&
	    !om_same_gpu(g->h.gpu, o->have_src ? o->src.gpu : o->to.gpu))
		warnmsg("%s: section %d: a graph of %s re-timed by a model of %s%s", name, index,
		    g->h.gpu, o->have_src ? o->src.gpu : o->to.gpu, o->have_src ? " (--from)" :
		    " (give the graph's own GPU's model with --from)");
	if (o->n != c.T || c.sp0 != c.sp1) {
		if (tp_shard(&c) != 0 || collectives(&c, net, sizeof(net)) != 0)
			goto out;
		if (o->n != c.T && c.ngemm + c.nattn == 0) {
			errmsg("%s: section %d: no GEMM or attention kernel sharded: the what-if "
			    "changes nothing", name, index);
			goto out;
		}
		tp_memory(&c);
		if (!o->have_to && c.ngemm + c.nattn + c.nelt > 0)
			warnmsg("%s: section %d: no op model (--model): %zu kernels re-timed by "
			    "their FLOPs or bytes, which a GPU does not follow for small shapes",
			    name, index, c.ngemm + c.nattn + c.nelt);
	} else if (o->verbose) {
		fprintf(stderr, "%s: %s: section %d: tensor-parallel degree %lld already: "
		    "unchanged\n", progname, name, index, (long long)c.T);
	}
	{
		static const char *const keys[] = { "tp", "world" };
		int64_t vals[2] = { o->n, config_world_to(&g->h, "tp", c.T, o->n) };
		char set[96];

		config_set_text(set, sizeof(set), keys, vals, 2);
		snprintf(tool, sizeof(tool), "%s%s%s%s", PRODUCER, set, net[0] ? " " : "", net);
	}
	memset(&go, 0, sizeof(go));
	go.task = c.t, go.ntask = c.nt, go.edge = c.e, go.nedge = c.ne;
	go.proc = c.p, go.nproc = c.np;
	go.xstr = (const char *const *)c.xs.in.str, go.nxstr = c.xs.in.n;
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
	const char *model = NULL, *from = NULL;
	struct opts o;
	struct whatif_tool w = {
		.own = own, .verbose = &o.verbose, .gpn = &o.gpn, .given = &o.given,
		.name = "graph-scale-tp", .usage = usage, .help = help, .producer = PRODUCER,
	};
	int c, rc;

	memset(&o, 0, sizeof(o));
	om_model_init(&o.to);
	om_model_init(&o.src);
	o.launch = -1;
	while ((c = whatif_getopt(&w, argc, argv)) != -1) {
		switch (c) {
		case 'S':
			o.sp = 1;
			break;
		case 'M':
			model = optarg;
			break;
		case 'F':
			from = optarg;
			break;
		case 'L': {
			char *end;
			double us;

			errno = 0;
			us = strtod(optarg, &end);
			if (errno != 0 || end == optarg || *end != '\0' || !(us >= 0) || us > 1e6) {
				errmsg("invalid --launch-us '%s' (microseconds, 0 to 1000000)", optarg);
				usage_exit(usage);
			}
			o.launch = llround(us * 1e3);
			break;
		}
		}
	}
	whatif_number(&w, &o.n, 1 << 20, "the new tensor-parallel degree", "tensor-parallel degree",
	    "");
	if (o.n > o.gpn || o.gpn % o.n != 0) {
		errmsg("tensor-parallel degree %lld does not divide a node of %lld GPUs "
		    "(--gpus-per-node): a group stays inside one node", (long long)o.n,
		    (long long)o.gpn);
		usage_exit(usage);
	}
	if (from != NULL && model == NULL) {
		errmsg("--from needs --model (the GPU to predict)");
		usage_exit(usage);
	}
	if (whatif_models(model, from, &o.to, &o.src, &o.have_to, &o.have_src) != 0)
		return 1;
	rc = whatif_run_graphs(&w, scale, &o);
	om_model_release(&o.to);
	om_model_release(&o.src);
	return rc;
}
