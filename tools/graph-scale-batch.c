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
 * times and the table of the section's (operator, dims) pairs are
 * common/resize.h's, shared with graph-scale-hidden.
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
#include "kg.h"
#include "opmodel.h"
#include "reshape.h"
#include "resize.h"
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
    WHATIF_OM_HELP
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

/* The tool's options. */
struct opts {
	int64_t new_s, new_b, base_s, base_b;
	struct whatif_om om; /* --model, --from */
};

static const struct option own[] = {
	{ "seq", required_argument, NULL, 's' },
	{ "mbs", required_argument, NULL, 'b' },
	{ "base-seq", required_argument, NULL, 'S' },
	{ "base-mbs", required_argument, NULL, 'B' },
	{ NULL, 0, NULL, 0 }
};

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
    struct rz_section *z, char *set, size_t setlen, int64_t *tp)
{
	const struct opts *o = arg;
	const struct whatif_om *om = &o->om;
	struct bat_sizes a;
	char err[256];
	int64_t nb, ns, unsized = 0, rewritten = 0;
	double ftok;
	size_t i;

	if (bat_find(z->ops, z->ps.n, o->base_b, o->base_s, &a, err, sizeof(err)) < 0) {
		errmsg("%s: section %d: %s", name, index, err);
		return 1;
	}
	*tp = a.tp;
	nb = o->new_b > 0 ? o->new_b : a.b;
	ns = o->new_s > 0 ? o->new_s : a.s;
	if (a.tp > 1 && ns % a.tp != 0) {
		errmsg("%s: section %d: the sequence %lld does not divide among the %lld "
		    "tensor-parallel ranks", name, index, (long long)ns, (long long)a.tp);
		return 1;
	}
	if (om->have_src) {
		g->h.gpu = om->to.gpu;
		g->h.gpu_sms = om->to.sms > 0 ? om->to.sms : -1;
		g->h.gpu_mem = -1;
	}
	ftok = (double)(nb * ns) / (double)(a.b * a.s);
	if (nb != a.b || ns != a.s) {
		/* the new dims of every pair (the same strings as ps's) */
		for (i = 0; i < z->ps.n; i++)
			z->ps.p[i].text = bat_rewrite(z->ops[i].op, z->ops[i].dims, &a, nb, ns);
		rz_pairs_ids(&z->ps, &z->rs);
		for (i = 0; i < z->ps.n; i++)
			rewritten += z->ps.p[i].text != NULL;
		unsized = count_unsized(g, r);
		z->cn.unblocked = rz_unblock_launches(g, r);
		rz_retime(om->have_to ? &om->to : NULL, om->have_src ? &om->src : NULL, g, r,
		    &z->ps, 1, &z->cn);
		rz_retime_colls(g, r, 1, ftok, &z->cn);
		/* memory: the tokens' ratio for an activation, the sequence's
		 * squared times the batch's for attention's scores where an
		 * operator keeps them, 1 for a weight's half copy; the
		 * optimizer's keep theirs (the parameters do not change) */
		rz_scale_memory(g, r, &z->ps, ftok, 1, 0);
		rz_pairs_apply(g, &z->ps);
		if (rewritten == 0)
			warnmsg("%s: section %d: no operator's shapes carry micro-batch %lld or "
			    "sequence %lld: nothing re-timed", name, index, (long long)a.b,
			    (long long)a.s);
	}
	if (z->cn.model + z->cn.flops + z->cn.bytes > 0)
		warnmsg("%s: section %d: %lld calls re-timed by the op model, %lld by FLOPs, "
		    "%lld by bytes%s", name, index, (long long)z->cn.model, (long long)z->cn.flops,
		    (long long)z->cn.bytes, om->have_to ? "" : " (no --model)");
	if (unsized > 0)
		warnmsg("%s: section %d: %lld GPU kernels keep their times: no shapes size them",
		    name, index, (long long)unsized);
	snprintf(set, setlen, "%s set: seq=%lld, mbs=%lld (from seq %lld, mbs %lld", PRODUCER,
	    (long long)ns, (long long)nb, (long long)a.s, (long long)a.b);
	return 0;
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct whatif_tool w = {
		.own = own, .om = &o.om, .om_at = 2,
		.name = "graph-scale-batch", .usage = usage, .help = help, .producer = PRODUCER,
	};
	int c;

	memset(&o, 0, sizeof(o));
	while ((c = whatif_getopt(&w, argc, argv)) != -1) {
		switch (c) {
		case 's':
			o.new_s = whatif_size(&w, "sequence length --seq", optarg);
			break;
		case 'b':
			o.new_b = whatif_size(&w, "micro-batch size --mbs", optarg);
			break;
		case 'S':
			o.base_s = whatif_size(&w, "--base-seq", optarg);
			break;
		case 'B':
			o.base_b = whatif_size(&w, "--base-mbs", optarg);
			break;
		}
	}
	if (o.new_s == 0 && o.new_b == 0) {
		errmsg("give the new sequence length (--seq), micro-batch size (--mbs) or both");
		usage_exit(usage);
	}
	return whatif_run_resized(&w, scale, &o);
}
