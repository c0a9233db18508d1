/*
 * graph-scale-hidden: the graph of a wider (or narrower) model: every
 * operator whose shapes follow the hidden size, the MLP size or the
 * attention heads gets its new shapes (in `sh`, for the tools after it),
 * and its kernels are re-timed for them: by an op model, each kernel's
 * traced time times the model's prediction for the new shapes over its
 * prediction for the traced ones; without one, by FLOPs (GEMMs,
 * attention) or bytes (the rest). The optimizer's kernels, whose tensor
 * lists the profiler does not record, follow the parameter count;
 * gradient collectives the parameter bytes, activation collectives the
 * hidden size. Host tasks keep their times: a wider model launches the
 * same operators.
 *
 * How a dimension is told apart (the roles) is in rules.c and in
 * graph-scale-hidden(1); the traced sizes are found in find.c; the times
 * in time.c; the table of (operator, dims) pairs is pairs.c's.
 *
 * State: one section at a time, held whole (common/graph.h), with a
 * table of its distinct (operator, dims) pairs and their new dims.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "graph.h"
#include "hid.h"
#include "kg.h"
#include "opmodel.h"
#include "params.h"
#include "pgroup.h"
#include "reshape.h"
#include "util.h"
#include "whatif.h"

#define PRODUCER "graph-scale-hidden " KG_VERSION

static const char usage[] =
    "graph-scale-hidden [-q] [-o FILE] [--ffn F] [--heads N] [--model MODEL [--from MODEL]] "
    "[--from-hidden H] [--from-ffn F] [--from-heads N] H [FILE ...]";

static const char help[] =
    "Predict the graph of the same job with hidden size H.\n"
    "\n"
    "  -o, --output FILE      write the stream to FILE instead of stdout\n"
    "      --ffn F            the new MLP size (default: the traced ratio to the\n"
    "                         hidden size, 4 H for a GPT)\n"
    "      --heads N          the new number of attention heads (default: the\n"
    "                         traced head size kept, H / head size)\n"
    "      --model MODEL      re-time kernels by MODEL (opmodel fit): each kernel\n"
    "                         times predicted(new shapes) / predicted(traced ones)\n"
    "      --from MODEL       the model of the graph's own GPU: the traced shapes\n"
    "                         predicted by it, the new ones by --model's\n"
    "      --from-hidden H, --from-ffn F, --from-heads N\n"
    "                         the traced sizes, where the graph's shapes do not\n"
    "                         tell them\n"
    "  -q, --quiet            no warnings\n"
    "  -h, --help             this help\n"
    "      --version          the version\n"
    "\n"
    "Without --model, GEMMs and attention scale by FLOPs and the rest by bytes.\n"
    "With no FILE, or FILE -, read standard input. See graph-scale-hidden(1).\n";

/* The tool's own options; whatif.h reads the others. */
static const struct option own[] = {
	{ "ffn", required_argument, NULL, 'f' },
	{ "heads", required_argument, NULL, 'n' },
	{ "model", required_argument, NULL, 'M' },
	{ "from", required_argument, NULL, 'F' },
	{ "from-hidden", required_argument, NULL, 'H' },
	{ "from-ffn", required_argument, NULL, 'G' },
	{ "from-heads", required_argument, NULL, 'N' },
	{ NULL, 0, NULL, 0 }
};

/* The new dims of every pair; the new strings go to rs. */
static void
reshape_all(const struct kg_reader *r, const struct hid_sizes *a, const struct hid_sizes *b,
    struct pairs *ps, struct rs_strs *rs)
{
	size_t i;

	for (i = 0; i < ps->n; i++) {
		struct pair *p = &ps->p[i];

		p->text = hid_rewrite(kg_str(r, p->op), kg_str(r, p->sh), a, b);
		if (p->text != NULL)
			p->nsh = rs_strs_id(rs, p->text);
	}
}

/*
 * The model's parameters before and after, counted from the forward
 * launches of the first iteration and micro-batch (the LM head tied to
 * the embedding counted once, common/params.h).
 */
static void
count_params(const struct graph *g, const struct kg_reader *r, struct pairs *ps, int64_t *p0,
    int64_t *p1)
{
	struct param_count a, b;
	int64_t it = INT64_MAX;
	size_t i;

	param_count_init(&a);
	param_count_init(&b);
	a.tied = b.tied = 1;
	for (i = 0; i < g->ntask; i++)
		if (g->task[i].iter >= 0 && g->task[i].iter < it)
			it = g->task[i].iter;
	for (i = 0; i < g->ntask; i++) {
		const struct kg_task *t = &g->task[i];
		const struct pair *p;

		if (t->kind != KG_RT || t->op == KG_NONE || t->shapes == KG_NONE ||
		    (it != INT64_MAX && t->iter != it) || t->mb > 0 ||
		    (t->phase != KG_PH_FWD && t->phase != KG_PH_NONE) ||
		    strstr(kg_str(r, t->name), "Launch") == NULL)
			continue;
		p = hid_pair_of(ps, t);
		param_count_text(&a, t->op, t->shapes, kg_str(r, t->op), kg_str(r, t->shapes));
		param_count_text(&b, t->op, p->nsh, kg_str(r, t->op),
		    p->text != NULL ? p->text : kg_str(r, t->shapes));
	}
	*p0 = a.sum;
	*p1 = b.sum;
}

/*
 * The allocator's events (graphstat's memory estimate;
 * formats/graph-stream.md, "Memory: what an edit must keep"): a task in
 * a layer allocates what the operator it works for makes (the next
 * kernel launch on its thread: an activation's cast or norm, a
 * product's output, a weight's half copy), which grows as that
 * operator's first operand (h'/h for activations, (h'/h)^2 for a
 * weight); h'/h where no launch with shapes follows. The optimizer's
 * temporaries follow the parameters; the logits and loss outside the
 * layers keep their size. Tasks are taken in id order, by thread.
 */
static void
scale_memory(struct graph *g, const struct kg_reader *r, struct pairs *ps, double fh,
    double pratio)
{
	double *next = xmalloc((g->nproc + 1) * sizeof(*next));
	size_t i;

	for (i = 0; i < g->nproc; i++)
		next[i] = fh;
	for (i = g->ntask; i-- > 0;) {
		struct kg_task *t = &g->task[i];
		const struct pair *p = t->kind == KG_RT ? hid_pair_of(ps, t) : NULL;
		double f;

		if (p != NULL && t->proc < g->nproc) {
			int64_t o = rs_first_numel(kg_str(r, p->sh));
			int64_t n = rs_first_numel(p->text != NULL ? p->text : kg_str(r, p->sh));

			next[t->proc] = o > 0 && n > 0 ? (double)n / (double)o : fh;
		}
		if (t->mpeak < 0)
			continue;
		f = t->layer >= 0 ? (t->proc < g->nproc ? next[t->proc] : fh) :
		    t->phase == KG_PH_OPT ? pratio : 1;
		if (f == 1)
			continue;
		t->mnet = llround((double)t->mnet * f);
		if (t->mexc >= 0)
			t->mexc = llround((double)t->mexc * f);
	}
	free(next);
}

static int
scale(void *arg, struct graph *g, const struct kg_reader *r, const char *name, int index,
    struct gout *out)
{
	const struct opts *o = arg;
	struct hid_sizes a, b;
	struct pairs ps;
	struct rs_strs rs;
	struct counts cn;
	struct graph_out go;
	char err[256], tool[256];
	int64_t p0, p1;
	double pratio;
	int rc = 1;

	memset(&ps, 0, sizeof(ps));
	memset(&cn, 0, sizeof(cn));
	rs_strs_init(&rs, g->nstr);
	hid_pairs_collect(g, &ps);
	{
		struct hid_op *ho = xmalloc((ps.n + 1) * sizeof(*ho));
		size_t i;

		for (i = 0; i < ps.n; i++) {
			ho[i].op = kg_str(r, ps.p[i].op);
			ho[i].dims = kg_str(r, ps.p[i].sh);
			ho[i].n = ps.p[i].n;
		}
		i = hid_find(ho, ps.n, &o->from, &a, err, sizeof(err)) < 0;
		free(ho);
		if (i) {
			errmsg("%s: section %d: %s", name, index, err);
			goto out;
		}
	}
	if (hid_target(&a, o->h, o->ffn, o->heads, &b, err, sizeof(err)) < 0) {
		errmsg("%s: section %d: %s", name, index, err);
		goto out;
	}
	{
		/* the GPU the header names (format 1.5) against the models' */
		const char *gpu = g->h.gpu != NULL ? g->h.gpu : "";

		if (*gpu != '\0' && o->have_src && !om_same_gpu(gpu, o->src.gpu))
			warnmsg("%s: section %d: a graph of %s re-timed from a model of %s (--from)",
			    name, index, gpu, o->src.gpu);
		else if (*gpu != '\0' && o->have_to && !o->have_src && !om_same_gpu(gpu, o->to.gpu))
			warnmsg("%s: section %d: a graph of %s scaled by the ratios of a model of %s "
			    "(give --from with a model of %s to predict it on the other GPU)", name,
			    index, gpu, o->to.gpu, gpu);
		if (o->have_src) {
			/* the graph now runs on --model's GPU */
			if (*gpu == '\0' || !om_same_gpu(gpu, o->to.gpu))
				g->h.gpu_mem = -1;
			g->h.gpu = o->to.gpu;
			g->h.gpu_sms = o->to.sms > 0 ? o->to.sms : -1;
		}
	}
	reshape_all(r, &a, &b, &ps, &rs);
	if (a.h != b.h || a.ffn != b.ffn || a.heads != b.heads) {
		size_t i;

		for (i = 0; i < ps.n && ps.p[i].text == NULL; i++)
			;
		if (i == ps.n) {
			errmsg("%s: section %d: no operator's shapes rewritten: the what-if changes "
			    "nothing", name, index);
			goto out;
		}
	}
	count_params(g, r, &ps, &p0, &p1);
	pratio = p0 > 0 ? (double)p1 / (double)p0 : 1;
	if (p0 <= 0 && (a.h != b.h || a.ffn != b.ffn))
		warnmsg("%s: section %d: no parameters counted from the shapes: the "
		    "optimizer's kernels keep their times", name, index);
	if (a.h != b.h || a.ffn != b.ffn || a.heads != b.heads)
		cn.unblocked = hid_unblock_launches(g, r);
	hid_retime(o, g, r, &ps, pratio, &cn);
	hid_retime_colls(g, r, pratio, (double)b.h / (double)a.h, &cn);
	scale_memory(g, r, &ps, (double)b.h / (double)a.h, pratio);
	{
		size_t i;

		for (i = 0; i < g->ntask; i++) {
			const struct pair *p = hid_pair_of(&ps, &g->task[i]);

			if (p != NULL)
				g->task[i].shapes = p->nsh;
		}
	}
	if (!o->have_to && (cn.flops > 0 || cn.bytes > 0))
		warnmsg("%s: section %d: no --model: %lld calls scaled by FLOPs, %lld by bytes",
		    name, index, (long long)cn.flops, (long long)cn.bytes);
	else if (cn.flops > 0 || cn.bytes > 0)
		warnmsg("%s: section %d: %lld calls scaled by FLOPs or bytes, not the model (it "
		    "cannot predict them, its class errs by over 20%%, or its ratio goes against "
		    "the work's)", name, index, (long long)(cn.flops + cn.bytes));
	if (cn.unsized > 0)
		warnmsg("%s: section %d: %lld GPU calls keep their times: no shapes size them",
		    name, index, (long long)cn.unsized);
	if (cn.collassumed > 0) {
		/* the GPU's topology, as hid_retime_colls took it */
		char why[192];
		const char *topo = comm_topology_default(g->h.gpu, why, sizeof(why));

		warnmsg("%s: section %d: %lld collectives re-timed by the built-in %s topology "
		    "(the job has none of their kind on that link%s%s)", name, index,
		    (long long)cn.collassumed, topo, why[0] ? "; " : "", why);
	}
	snprintf(tool, sizeof(tool), "%s set: hidden=%lld, ffn=%lld, heads=%lld (from hidden %lld, "
	    "ffn %lld, heads %lld%s%s)", PRODUCER, (long long)b.h, (long long)b.ffn,
	    (long long)b.heads, (long long)a.h, (long long)a.ffn, (long long)a.heads,
	    a.tp > 1 ? ", tensor-parallel shares" : "",
	    o->have_to ? ", op model" : ", by FLOPs and bytes");
	memset(&go, 0, sizeof(go));
	go.xstr = (const char *const *)rs.in.str;
	go.nxstr = rs.in.n;
	go.task = g->task, go.ntask = g->ntask, go.edge = g->edge, go.nedge = g->nedge;
	kg_writer_follow(&out->w, &g->h);
	if (graph_write(&out->w, g, tool, &go) < 0) {
		errmsg("%s: %s", out->name, out->w.err);
		goto out;
	}
	rc = 0;
out:
	hid_pairs_release(&ps);
	rs_strs_release(&rs);
	return rc;
}

static int64_t
size_arg(const char *what, const char *s)
{
	int64_t v;

	if (parse_i64(s, 1, (int64_t)1 << 30, &v) < 0) {
		errmsg("invalid %s '%s' (a positive integer)", what, s);
		usage_exit(usage);
	}
	return v;
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct whatif_tool w = {
		.own = own,
		.name = "graph-scale-hidden", .usage = usage, .help = help, .producer = PRODUCER,
	};
	int c, rc;

	memset(&o, 0, sizeof(o));
	while ((c = whatif_getopt(&w, argc, argv)) != -1) {
		switch (c) {
		case 'f':
			o.ffn = size_arg("--ffn", optarg);
			break;
		case 'n':
			o.heads = size_arg("--heads", optarg);
			break;
		case 'M':
			o.model = optarg;
			break;
		case 'F':
			o.frommodel = optarg;
			break;
		case 'H':
			o.from.h = size_arg("--from-hidden", optarg);
			break;
		case 'G':
			o.from.ffn = size_arg("--from-ffn", optarg);
			break;
		case 'N':
			o.from.heads = size_arg("--from-heads", optarg);
			break;
		}
	}
	whatif_number(&w, &o.h, (int64_t)1 << 30, "the hidden size H", "hidden size",
	    " (a positive integer)");
	if (o.frommodel != NULL && o.model == NULL) {
		errmsg("--from needs --model (the GPU to predict)");
		usage_exit(usage);
	}
	if (whatif_models(o.model, o.frommodel, &o.to, &o.src, &o.have_to, &o.have_src) != 0)
		return 1;
	rc = whatif_run_graphs(&w, scale, &o);
	if (o.have_to)
		om_model_release(&o.to);
	if (o.have_src)
		om_model_release(&o.src);
	return rc;
}
