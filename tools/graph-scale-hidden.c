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
 * and the table of (operator, dims) pairs are common/resize.h's, shared
 * with graph-scale-batch.
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
#include "resize.h"
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
    WHATIF_OM_HELP
    "      --from-hidden H, --from-ffn F, --from-heads N\n"
    "                         the traced sizes, where the graph's shapes do not\n"
    "                         tell them\n"
    "  -q, --quiet            no warnings\n"
    "  -h, --help             this help\n"
    "      --version          the version\n"
    "\n"
    "Without --model, GEMMs and attention scale by FLOPs and the rest by bytes.\n"
    "With no FILE, or FILE -, read standard input. See graph-scale-hidden(1).\n";

/* The tool's options. */
struct opts {
	int64_t h, ffn, heads;
	struct hid_sizes from; /* given traced sizes; 0 where not given */
	struct whatif_om om;   /* --model, --from */
};

/* The tool's own options; whatif.h reads the others. */
static const struct option own[] = {
	{ "ffn", required_argument, NULL, 'f' },
	{ "heads", required_argument, NULL, 'n' },
	{ "from-hidden", required_argument, NULL, 'H' },
	{ "from-ffn", required_argument, NULL, 'G' },
	{ "from-heads", required_argument, NULL, 'N' },
	{ NULL, 0, NULL, 0 }
};

/*
 * The model's parameters before and after, counted from the forward
 * launches of the first iteration and micro-batch (the LM head tied to
 * the embedding counted once, common/params.h).
 */
static void
count_params(const struct graph *g, const struct kg_reader *r, struct rz_pairs *ps, int64_t *p0,
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
		const struct rz_pair *p;

		if (t->kind != KG_RT || t->op == KG_NONE || t->shapes == KG_NONE ||
		    (it != INT64_MAX && t->iter != it) || t->mb > 0 ||
		    (t->phase != KG_PH_FWD && t->phase != KG_PH_NONE) ||
		    strstr(kg_str(r, t->name), "Launch") == NULL)
			continue;
		p = rz_pair_of(ps, t);
		param_count_text(&a, t->op, t->shapes, kg_str(r, t->op), kg_str(r, t->shapes));
		param_count_text(&b, t->op, p->nsh, kg_str(r, t->op),
		    p->text != NULL ? p->text : kg_str(r, t->shapes));
	}
	*p0 = a.sum;
	*p1 = b.sum;
}

static int
scale(void *arg, struct graph *g, const struct kg_reader *r, const char *name, int index,
    struct rz_section *z, char *set, size_t setlen, int64_t *tp)
{
	const struct opts *o = arg;
	const struct whatif_om *om = &o->om;
	struct hid_sizes a, b;
	char err[256];
	int64_t p0, p1;
	double pratio;
	size_t i;

	if (hid_find(z->ops, z->ps.n, &o->from, &a, err, sizeof(err)) < 0) {
		errmsg("%s: section %d: %s", name, index, err);
		return 1;
	}
	*tp = a.tp;
	if (hid_target(&a, o->h, o->ffn, o->heads, &b, err, sizeof(err)) < 0) {
		errmsg("%s: section %d: %s", name, index, err);
		return 1;
	}
	{
		/* the GPU the header names (format 1.5) against the models' */
		const char *gpu = g->h.gpu != NULL ? g->h.gpu : "";

		if (*gpu != '\0' && om->have_src && !om_same_gpu(gpu, om->src.gpu))
			warnmsg("%s: section %d: a graph of %s re-timed from a model of %s (--from)",
			    name, index, gpu, om->src.gpu);
		else if (*gpu != '\0' && om->have_to && !om->have_src && !om_same_gpu(gpu, om->to.gpu))
			warnmsg("%s: section %d: a graph of %s scaled by the ratios of a model of %s "
			    "(give --from with a model of %s to predict it on the other GPU)", name,
			    index, gpu, om->to.gpu, gpu);
		if (om->have_src) {
			/* the graph now runs on --model's GPU */
			if (*gpu == '\0' || !om_same_gpu(gpu, om->to.gpu))
				g->h.gpu_mem = -1;
			g->h.gpu = om->to.gpu;
			g->h.gpu_sms = om->to.sms > 0 ? om->to.sms : -1;
		}
	}
	/* the new dims of every pair (the same strings as ps's) */
	for (i = 0; i < z->ps.n; i++)
		z->ps.p[i].text = hid_rewrite(z->ops[i].op, z->ops[i].dims, &a, &b);
	if (a.h != b.h || a.ffn != b.ffn || a.heads != b.heads) {
		for (i = 0; i < z->ps.n && z->ps.p[i].text == NULL; i++)
			;
		if (i == z->ps.n) {
			errmsg("%s: section %d: no operator's shapes rewritten: the what-if changes "
			    "nothing", name, index);
			return 1;
		}
	}
	rz_pairs_ids(&z->ps, &z->rs);
	count_params(g, r, &z->ps, &p0, &p1);
	pratio = p0 > 0 ? (double)p1 / (double)p0 : 1;
	if (p0 <= 0 && (a.h != b.h || a.ffn != b.ffn))
		warnmsg("%s: section %d: no parameters counted from the shapes: the "
		    "optimizer's kernels keep their times", name, index);
	if (a.h != b.h || a.ffn != b.ffn || a.heads != b.heads)
		z->cn.unblocked = rz_unblock_launches(g, r);
	rz_retime(om->have_to ? &om->to : NULL, om->have_src ? &om->src : NULL, g, r, &z->ps,
	    pratio, &z->cn);
	rz_retime_colls(g, r, pratio, (double)b.h / (double)a.h, &z->cn);
	/* memory: an operator's first operand grows h'/h for an activation,
	 * (h'/h)^2 for a weight; the optimizer's temporaries follow the
	 * parameters; the logits and loss outside the layers keep their size */
	rz_scale_memory(g, r, &z->ps, (double)b.h / (double)a.h, pratio, 1);
	rz_pairs_apply(g, &z->ps);
	if (!om->have_to && (z->cn.flops > 0 || z->cn.bytes > 0))
		warnmsg("%s: section %d: no --model: %lld calls scaled by FLOPs, %lld by bytes",
		    name, index, (long long)z->cn.flops, (long long)z->cn.bytes);
	else if (z->cn.flops > 0 || z->cn.bytes > 0)
		warnmsg("%s: section %d: %lld calls scaled by FLOPs or bytes, not the model (it "
		    "cannot predict them, its class errs by over 20%%, or its ratio goes against "
		    "the work's)", name, index, (long long)(z->cn.flops + z->cn.bytes));
	if (z->cn.unsized > 0)
		warnmsg("%s: section %d: %lld GPU calls keep their times: no shapes size them",
		    name, index, (long long)z->cn.unsized);
	snprintf(set, setlen, "%s set: hidden=%lld, ffn=%lld, heads=%lld (from hidden %lld, ffn %lld, "
	    "heads %lld", PRODUCER, (long long)b.h, (long long)b.ffn, (long long)b.heads,
	    (long long)a.h, (long long)a.ffn, (long long)a.heads);
	return 0;
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct whatif_tool w = {
		.own = own, .om = &o.om, .om_at = 2,
		.name = "graph-scale-hidden", .usage = usage, .help = help, .producer = PRODUCER,
	};
	int c;

	memset(&o, 0, sizeof(o));
	while ((c = whatif_getopt(&w, argc, argv)) != -1) {
		switch (c) {
		case 'f':
			o.ffn = whatif_size(&w, "--ffn", optarg);
			break;
		case 'n':
			o.heads = whatif_size(&w, "--heads", optarg);
			break;
		case 'H':
			o.from.h = whatif_size(&w, "--from-hidden", optarg);
			break;
		case 'G':
			o.from.ffn = whatif_size(&w, "--from-ffn", optarg);
			break;
		case 'N':
			o.from.heads = whatif_size(&w, "--from-heads", optarg);
			break;
		}
	}
	whatif_number(&w, &o.h, (int64_t)1 << 30, "the hidden size H", "hidden size",
	    " (a positive integer)");
	return whatif_run_resized(&w, scale, &o);
}
