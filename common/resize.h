/*
 * resize: a section whose operators' dims a what-if tool rewrites
 * (graph-scale-hidden, graph-scale-batch), re-timed for them: the table
 * of the section's distinct (operator, dims) pairs, each with its count
 * of tasks and, once the tool has rewritten them, its new dims; the GPU
 * tasks re-timed for their calls' new dims (common/reshape.h: the op
 * model's ratio, else FLOPs or bytes), the optimizer by the parameter
 * count; the collectives by the communication model (common/pgroup.h)
 * for their new bytes; the kernel launches that waited on a full launch
 * queue; and the allocator's events for the new sizes.
 *
 * What a pair's dims become is the tool's (its rules); the table only
 * finds and counts. Nothing here prints or exits; the tool words the
 * warnings from the counts (struct rz_counts).
 *
 * Ownership: an rz_pairs owns its pairs' new texts; an rz_section its
 * pairs, strings and ops (whose strings are the reader's). Links libxgboost
 * (the op model), as reshape.c does.
 */
#ifndef KG_RESIZE_H
#define KG_RESIZE_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "kg.h"
#include "opmodel.h"
#include "reshape.h"

/* A distinct (operator, dims) pair: its new dims' string id. */
struct rz_pair {
	uint32_t op, sh, nsh;
	int64_t n;  /* tasks that carry it */
	char *text; /* the new dims, when they differ */
};

struct rz_pairs {
	struct rz_pair *p;
	size_t n, cap;
	uint32_t *slot; /* open addressing: index + 1 */
	size_t nslot;
};

/* Counts for the warnings of a section. */
struct rz_counts {
	int64_t model, flops, bytes, optim, unsized, colls, collassumed, unblocked;
};

/*
 * A section being resized: its pairs, the strings their new dims add
 * (ids after the section's own), the counts for its warnings, and the
 * pairs as texts (ops[0..ps.n), for the tool's finding of the traced
 * sizes). rz_section_init collects them; rz_section_release frees all.
 */
struct rz_section {
	struct rz_pairs ps;
	struct rs_strs rs;
	struct rz_counts cn;
	struct rs_op *ops;
};
void rz_section_init(struct rz_section *z, const struct graph *g, const struct kg_reader *r);
void rz_section_release(struct rz_section *z);

/*
 * Every (operator, dims) pair of the section (a CPU op's own name, else
 * its op), counted, into ps (zeroed before); the pair of a task's
 * (operator, dims), NULL for a task without (the new dims: its text, or
 * NULL where unchanged); the table freed.
 */
void rz_pairs_collect(const struct graph *g, struct rz_pairs *ps);
const struct rz_pair *rz_pair_of(struct rz_pairs *ps, const struct kg_task *t);
void rz_pairs_release(struct rz_pairs *ps);
/*
 * The ids of the pairs' new dims (the text the tool set in each, NULL
 * where they stay), added to rs in pair order. Then, once the tasks are
 * re-timed, rz_pairs_apply gives every task its pair's new dims.
 */
void rz_pairs_ids(struct rz_pairs *ps, struct rs_strs *rs);
void rz_pairs_apply(struct graph *g, struct rz_pairs *ps);

/*
 * The section's GPU tasks re-timed in place for their new dims: by the
 * model `to` (NULL: FLOPs and bytes), times the ratio of `to`'s
 * prediction to `src`'s for the traced dims where the graph is of
 * another GPU (src NULL: none); pratio, the parameters' ratio, for the
 * optimizer. The collectives for their new bytes (pratio for gradients,
 * aratio for activations). The launches blocked on a full launch queue
 * given the median launch (returns how many).
 */
void rz_retime(const struct om_model *to, const struct om_model *src, struct graph *g,
    const struct kg_reader *r, struct rz_pairs *ps, double pratio, struct rz_counts *cn);
void rz_retime_colls(struct graph *g, const struct kg_reader *r, double pratio,
    double aratio, struct rz_counts *cn);
int64_t rz_unblock_launches(struct graph *g, const struct kg_reader *r);
/*
 * The allocator's events (graphstat's memory estimate) scaled as the
 * operator each works for (the next kernel launch with dims on its
 * thread) grows its first operand, by f where none follows; the
 * optimizer's by fopt. With layers set (graph-scale-hidden: the
 * activations and weights of the layers grow, the logits and loss
 * outside them keep their size), a task outside the layers is scaled
 * only if it is the optimizer's; without (graph-scale-batch: every
 * activation follows the tokens), every task not the optimizer's.
 */
void rz_scale_memory(struct graph *g, const struct kg_reader *r, struct rz_pairs *ps, double f,
    double fopt, int layers);

#endif
