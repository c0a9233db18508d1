/*
 * graph-scale-batch: the graph of the same job with another sequence
 * length or micro-batch size: every operator whose shapes carry the
 * batch, the sequence or the tokens gets its new shapes (in `sh`, for
 * the tools after it), and its kernels are re-timed for them as
 * graph-scale-hidden re-times them (common/reshape.h: the op model's
 * ratio of predictions, else FLOPs or bytes). Attention's cost follows
 * its shapes, the sequence squared with the batch. The parameters, and
 * with them the optimizer and the gradient collectives, stay; the
 * collectives that move activations (tensor-parallel reductions,
 * pipeline sends) follow the tokens. Host tasks keep their times: the
 * same operators are called.
 *
 * The rules that tell a dimension apart are in graph-scale-batch/rules.c
 * and graph-scale-batch(1); the traced sizes are found in find.c; the
 * times are graph-scale-hidden's (tools/graph-scale-hidden/time.c), and
 * so is the table of the section's (operator, dims) pairs (pairs.c).
 * main() is the what-if tools' skeleton (tools/whatif.h, whatif-om.c
 * for --model and --from).
 *
 * State: one section at a time, held whole (common/graph.h), with a
 * table of its distinct (operator, dims) pairs and their new dims.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bat.h"
#include "cli.h"
#include "comm.h"
#include "config.h"
#include "graph.h"
#include "hid.h"
#include "kg.h"
#include "opmodel.h"
#include "reshape.h"
#include "util.h"
#include "whatif.h"

#define PRODUCER "graph-scale-batch " KG_VERSION

static const char usage[] =
    "graph-scale-batch [-q] [-o FILE] [--seq S] [--mbs B] [--model MODEL [--from MODEL]] "
    "[--base-seq S] [--base-mbs B] [FILE ...]";

static const char help[] =
    "Predict the graph of the same job with sequence length S and/or micro-batch size B.\n"
    "\n"
    "  -o, --output FILE      write the stream to FILE instead of stdout\n"
    "      --seq S            the new sequence length\n"
    "      --mbs B            the new micro-batch size\n"
    "      --model MODEL      re-time kernels by MODEL (opmodel fit): each kernel\n"
    "                         times predicted(new shapes) / predicted(traced ones)\n"
    "      --from MODEL       the model of the graph's own GPU: the traced shapes\n"
    "                         predicted by it, the new ones by --model's\n"
    "      --base-seq S, --base-mbs B\n"
    "                         the traced sizes, where the graph's shapes do not\n"
    "                         tell them\n"
    "  -q, --quiet            no warnings\n"
    "  -h, --help             this help\n"
    "      --version          the version\n"
    "\n"
    "At least one of --seq and --mbs. Without --model, GEMMs and attention scale by\n"
    "FLOPs and the rest by bytes. With no FILE, or FILE -, read standard input.\n"
    "See graph-scale-batch(1).\n";

/* The tool's options: graph-scale-hidden's (hid.h's struct opts: the
 * models) and the sizes. */
struct bopts {
	struct opts o;
	int64_t new_s, new_b, base_s, base_b;
};

static const struct option own[] = {
	{ "seq", required_argument, NULL, 's' },
	{ "mbs", required_argument, NULL, 'b' },
	{ "model", required_argument, NULL, 'M' },
	{ "from", required_argument, NULL, 'F' },
	{ "base-seq", required_argument, NULL, 'S' },
	{ "base-mbs", required_argument, NULL, 'B' },
	{ NULL, 0, NULL, 0 }
};

/* The new dims of every pair; the new strings go to rs. */
static void
reshape_all(const struct kg_reader *r, const struct bat_sizes *a, int64_t nb, int64_t ns,
    struct pairs *ps, struct rs_strs *rs)
{
	size_t i;

	for (i = 0; i < ps->n; i++) {
		struct pair *p = &ps->p[i];

		p->text = bat_rewrite(kg_str(r, p->op), kg_str(r, p->sh), a, nb, ns);
		if (p->text != NULL)
			p->nsh = rs_strs_id(rs, p->text);
	}
}

/*
 * The allocator's events (graphstat's memory estimate;
 * formats/graph-stream.md, "Memory: what an edit must keep"): a task
 * allocates what the operator it works for makes (the next kernel
 * launch on its thread), which grows as that operator's first operand:
 * the tokens' ratio for an activation, the sequence's squared times the
 * batch's for attention's scores where an operator keeps them, 1 for a
 * weight's half copy; the tokens' ratio where no launch with shapes
 * follows. The optimizer's tasks keep theirs (the parameters do not
 * change). Tasks are taken in id order, by thread.
 */
static void
scale_memory(struct graph *g, const struct kg_reader *r, struct pairs *ps, double ftok)
{
	double *next = xmalloc((g->nproc + 1) * sizeof(*next));
	size_t i;

	for (i = 0; i < g->nproc; i++)
		next[i] = ftok;
	for (i = g->ntask; i-- > 0;) {
		struct kg_task *t = &g->task[i];
		const struct pair *p = t->kind == KG_RT ? hid_pair_of(ps, t) : NULL;
		double f;

		if (p != NULL && t->proc < g->nproc) {
			int64_t o = rs_first_numel(kg_str(r, p->sh));
			int64_t n = rs_first_numel(p->text != NULL ? p->text : kg_str(r, p->sh));

			next[t->proc] = o > 0 && n > 0 ? (double)n / (double)o : ftok;
		}
		if (t->mpeak < 0)
			continue;
		f = t->phase == KG_PH_OPT ? 1 : t->proc < g->nproc ? next[t->proc] : ftok;
		if (f == 1)
			continue;
		t->mnet = llround((double)t->mnet * f);
		if (t->mexc >= 0)
			t->mexc = llround((double)t->mexc * f);
	}
	free(next);
}

/* GPU kernels (not the optimizer's) whose call has no shapes: they keep
 * their times. */
static int64_t
count_unsized(const struct graph *g, const struct kg_reader *r)
{
	int64_t n = 0;
	size_t i;

	for (i = 0; i < g->ntask; i++) {
		const struct kg_task *t = &g->task[i];
		const char *sh = t->shapes != KG_NONE ? kg_str(r, t->shapes) : NULL;

		const char *op = t->op != KG_NONE ? kg_str(r, t->op) : "";

		/* the optimizer's tensor lists are not recorded: it keeps its
		 * times for its own reason (the parameters stay) */
		if (t->kind == KG_KERN && t->phase != KG_PH_OPT &&
		    strncmp(op, "aten::_foreach", 14) != 0 && strstr(op, "_fused_adam") == NULL &&
		    (sh == NULL || rs_first_numel(sh) == 0))
			n++;
	}
	return n;
}

static int
scale(void *arg, struct graph *g, const struct kg_reader *r, const char *name, int index,
    struct gout *out)
{
	const struct bopts *bo = arg;
	const struct opts *o = &bo->o;
	struct bat_sizes a;
	struct pairs ps;
	struct rs_strs rs;
	struct counts cn;
	struct graph_out go;
	char err[256], tool[256];
	int64_t nb, ns, unsized = 0, rewritten = 0;
	double ftok;
	int rc = 1;
	size_t i;

	memset(&ps, 0, sizeof(ps));
	memset(&cn, 0, sizeof(cn));
	rs_strs_init(&rs, g->nstr);
	hid_pairs_collect(g, &ps);
	{
		struct hid_op *ho = xmalloc((ps.n + 1) * sizeof(*ho));

		for (i = 0; i < ps.n; i++) {
			ho[i].op = kg_str(r, ps.p[i].op);
			ho[i].dims = kg_str(r, ps.p[i].sh);
			ho[i].n = ps.p[i].n;
		}
		i = bat_find(ho, ps.n, bo->base_b, bo->base_s, &a, err, sizeof(err)) < 0;
		free(ho);
		if (i) {
			errmsg("%s: section %d: %s", name, index, err);
			goto out;
		}
	}
	nb = bo->new_b > 0 ? bo->new_b : a.b;
	ns = bo->new_s > 0 ? bo->new_s : a.s;
	if (a.tp > 1 && ns % a.tp != 0) {
		errmsg("%s: section %d: the sequence %lld does not divide among the %lld "
		    "tensor-parallel ranks", name, index, (long long)ns, (long long)a.tp);
		goto out;
	}
	if (o->have_src) {
		g->h.gpu = o->to.gpu;
		g->h.gpu_sms = o->to.sms > 0 ? o->to.sms : -1;
		g->h.gpu_mem = -1;
	}
	ftok = (double)(nb * ns) / (double)(a.b * a.s);
	if (nb != a.b || ns != a.s) {
		reshape_all(r, &a, nb, ns, &ps, &rs);
		for (i = 0; i < ps.n; i++)
			rewritten += ps.p[i].text != NULL;
		unsized = count_unsized(g, r);
		cn.unblocked = hid_unblock_launches(g, r);
		hid_retime(o, g, r, &ps, 1, &cn);
		hid_retime_colls(g, r, 1, ftok, &cn);
		scale_memory(g, r, &ps, ftok);
		for (i = 0; i < g->ntask; i++) {
			const struct pair *p = hid_pair_of(&ps, &g->task[i]);

			if (p != NULL)
				g->task[i].shapes = p->nsh;
		}
		if (rewritten == 0)
			warnmsg("%s: section %d: no operator's shapes carry micro-batch %lld or "
			    "sequence %lld: nothing re-timed", name, index, (long long)a.b,
			    (long long)a.s);
	}
	if (cn.model + cn.flops + cn.bytes > 0)
		warnmsg("%s: section %d: %lld calls re-timed by the op model, %lld by FLOPs, "
		    "%lld by bytes%s", name, index, (long long)cn.model, (long long)cn.flops,
		    (long long)cn.bytes, o->have_to ? "" : " (no --model)");
	if (unsized > 0)
		warnmsg("%s: section %d: %lld GPU kernels keep their times: no shapes size them",
		    name, index, (long long)unsized);
	if (cn.collassumed > 0) {
		char why[192];
		const char *topo = comm_topology_default(g->h.gpu, why, sizeof(why));

		warnmsg("%s: section %d: %lld collectives re-timed by the built-in %s topology "
		    "(the job has none of their kind on that link%s%s)", name, index,
		    (long long)cn.collassumed, topo, why[0] ? "; " : "", why);
	}
	snprintf(tool, sizeof(tool), "%s set: seq=%lld, mbs=%lld (from seq %lld, mbs %lld%s%s)",
	    PRODUCER, (long long)ns, (long long)nb, (long long)a.s, (long long)a.b,
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
	struct bopts b;
	struct whatif_tool w = {
		.own = own,
		.name = "graph-scale-batch", .usage = usage, .help = help, .producer = PRODUCER,
	};
	int c, rc;

	memset(&b, 0, sizeof(b));
	while ((c = whatif_getopt(&w, argc, argv)) != -1) {
		switch (c) {
		case 's':
			b.new_s = size_arg("sequence length --seq", optarg);
			break;
		case 'b':
			b.new_b = size_arg("micro-batch size --mbs", optarg);
			break;
		case 'M':
			b.o.model = optarg;
			break;
		case 'F':
			b.o.frommodel = optarg;
			break;
		case 'S':
			b.base_s = size_arg("--base-seq", optarg);
			break;
		case 'B':
			b.base_b = size_arg("--base-mbs", optarg);
			break;
		}
	}
	if (b.new_s == 0 && b.new_b == 0) {
		errmsg("give the new sequence length (--seq), micro-batch size (--mbs) or both");
		usage_exit(usage);
	}
	if (b.o.frommodel != NULL && b.o.model == NULL) {
		errmsg("--from needs --model (the GPU to predict)");
		usage_exit(usage);
	}
	if (whatif_models(b.o.model, b.o.frommodel, &b.o.to, &b.o.src, &b.o.have_to,
	    &b.o.have_src) != 0)
		return 1;
	rc = whatif_run_graphs(&w, scale, &b);
	if (b.o.have_to)
		om_model_release(&b.o.to);
	if (b.o.have_src)
		om_model_release(&b.o.src);
	return rc;
}
