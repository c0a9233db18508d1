/*
 * Rule 7, structure tags: recomputation (activation checkpointing), the
 * forward work a backward runs again, which is in the backward phase and
 * tagged as recomputed (`rc`). rc_find looks at one iteration's backward
 * runs, after infer_iter has read its forward layers' top-level op names
 * (in->fwn, sorted), and adds each run of recomputed work it finds to
 * tg->rcs as a span on its thread; tags_at tags a task that starts in one.
 * Recomputed is, of the direct children of one autograd node (an op inside
 * an "autograd::engine::evaluate_function: NODE" range), in the order they
 * run:
 *   - a run of at least MIN_LAYER_OPS ops named as top-level ops of the
 *     iteration's forward layers (torch.utils.checkpoint's unpack hook
 *     recomputes a block inside the first node that needs its tensors);
 *   - a forward attention op, alone or in such a run: one whose name says
 *     attention and not backward (selective recomputation);
 *   - every child of a CheckpointFunctionBackward node but the nodes it
 *     runs (the reentrant checkpoint's own node).
 * A child that is none of these ends a run: the ops a backward node calls
 * for its own gradient (aten::mm, aten::add) are not tagged unless
 * MIN_LAYER_OPS of them in a row are named as forward layers' top-level
 * ops. kineto2graph(1),
 * STRUCTURE TAGS, says it for users; `tag_recompute_runs` counts the runs.
 */
#include <stdlib.h>
#include <string.h>

#include "infer.h"
#include "k2g.h"
#include "util.h"

/* Whether op event x is an autograd node: an op inside the engine's
 * "autograd::engine::evaluate_function: NODE" range. */
static int
is_node(const struct infer *in, uint32_t x)
{
	const struct trace *t = in->t;
	uint32_t w = in->encl[x];

	return t->ev[x].cls == EV_OP && w != KG_NONE &&
	    strncmp(t->str.str[t->ev[w].name], "autograd::engine::evaluate_function:", 36) == 0;
}

/* A run of a node's direct children that may be recomputed forward work. */
struct rcrun {
	uint32_t node;
	int64_t ts, end;
	int n, attn, marker;
};

static void
rc_flush(struct infer *in, uint32_t proc, struct rcrun *r)
{
	if (r->n > 0 && (r->n >= MIN_LAYER_OPS || r->attn || r->marker)) {
		add_span(&in->tg->rcs, proc, r->ts, r->end, -1, -1);
		in->tg->rcs.a[in->tg->rcs.n - 1].ph = KG_PH_BWD;
		in->tg->rc_runs++;
	}
	r->n = r->attn = 0;
}

/*
 * Recomputation in iteration it's backward runs tg->run[rlo, rhi): the
 * direct children of an autograd node that run forward work (the
 * comment at the top of this file), each run of them a span of tg->rcs.
 */
void
rc_find(struct infer *in, int32_t it, size_t rlo, size_t rhi)
{
	const struct trace *t = in->t;
	size_t i, pos;

	for (i = rlo; i < rhi; i++) {
		const struct bwdiv *b = &in->tg->run[i];
		struct rcrun r;

		memset(&r, 0, sizeof(r));
		r.node = KG_NONE;
		/* from the outermost event around the run's start: a run
		 * starts at its first leaf (rule 5), inside the node and the
		 * forward op that lead to it */
		pos = cpu_at(in, b->proc, b->start);
		if (pos < in->ncpu && t->ev[in->cpu[pos]].proc == b->proc) {
			uint32_t x = in->cpu[pos];
			int depth;

			for (depth = 0; in->encl[x] != KG_NONE && depth < 64; depth++)
				x = in->encl[x];
			if (t->ev[x].ts < b->start)
				pos = cpu_at(in, b->proc, t->ev[x].ts);
		}
		for (; pos < in->ncpu; pos++) {
			uint32_t x = in->cpu[pos], n = in->encl[x];
			const struct ev *e = &t->ev[x];
			const char *nm = t->str.str[e->name];
			int fwd, attn, marker;

			if (e->proc != b->proc || e->ts >= b->end)
				break;
			if (e->cls != EV_OP || in->iter[x] != it || n == KG_NONE || !is_node(in, n))
				continue;
			if (n != r.node) {
				rc_flush(in, b->proc, &r);
				r.node = n;
				r.marker = tag_has(t->str.str[t->ev[n].name], "CheckpointFunction");
			}
			marker = r.marker &&
			    strncmp(nm, "autograd::engine::evaluate_function:", 36) != 0;
			attn = tag_has(nm, "attention") && !tag_has(nm, "backward");
			fwd = marker || attn || (in->nfwn > 0 &&
			    bsearch(&e->name, in->fwn, in->nfwn, sizeof(*in->fwn), cmp_u32) != NULL);
			if (!fwd) {
				rc_flush(in, b->proc, &r);
				continue;
			}
			if (r.n == 0)
				r.ts = e->ts, r.end = e->ts + e->dur;
			if (e->ts + e->dur > r.end)
				r.end = e->ts + e->dur;
			r.n++;
			r.attn |= attn;
		}
		rc_flush(in, b->proc, &r);
	}
}

