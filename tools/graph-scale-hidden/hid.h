/*
 * graph-scale-hidden's private parts: the traced sizes found from the
 * operators' shapes (find.c), the rules that rewrite an operator's dims
 * for the new sizes (rules.c), graph-scale-hidden(1) states both; the
 * table of the section's (operator, dims) pairs (pairs.c); the times
 * (time.c). The main file holds the options, the pairs' new dims and
 * the writing; it calls the others, and none calls it.
 */
#ifndef HID_H
#define HID_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "kg.h"
#include "opmodel.h"

/* A model's sizes: hidden, MLP, heads (all ranks') and head size; the
 * tensor-parallel degree its shapes are sharded by (1 none: each rank
 * holds heads / tp heads, MLP / tp and 3 hidden / tp columns); batch
 * and sequence (0 where not known). */
struct hid_sizes {
	int64_t h, ffn, heads, hd, tp;
	int64_t b, s;
};

/* A distinct (operator, dims) pair of a graph and how many tasks carry it. */
struct hid_op {
	const char *op, *dims;
	int64_t n;
};

/*
 * The traced sizes from the pairs ops[0..n), those given (non-zero in
 * `given`, --from-hidden and the like) taking precedence. 0, or -1 with
 * a one-line reason in err: no shapes, a size not found, sizes that
 * disagree.
 */
int hid_find(const struct hid_op *ops, size_t n, const struct hid_sizes *given,
    struct hid_sizes *out, char *err, size_t errlen);
/*
 * The new sizes: hidden h; ffn (0: the traced ratio kept); heads (0: the
 * traced head size kept). 0, or -1 with the reason: the heads do not
 * divide h, the MLP ratio does not give a whole size.
 */
int hid_target(const struct hid_sizes *a, int64_t h, int64_t ffn, int64_t heads,
    struct hid_sizes *b, char *err, size_t errlen);
/*
 * An operator's dims rewritten from sizes a to sizes b; NULL when they
 * stay the same (or are not dims text). The caller frees the text.
 */
char *hid_rewrite(const char *op, const char *dims, const struct hid_sizes *a,
    const struct hid_sizes *b);

/* The tool's options. */
struct opts {
	int64_t h, ffn, heads;
	struct hid_sizes from; /* given traced sizes; 0 where not given */
	const char *model, *frommodel;
	struct om_model to, src;
	int have_to, have_src;
};

/* A distinct (operator, dims) pair: its new dims' string id. */
struct pair {
	uint32_t op, sh, nsh;
	int64_t n;  /* tasks that carry it */
	char *text; /* the new dims, when they differ */
};

struct pairs {
	struct pair *p;
	size_t n, cap;
	uint32_t *slot; /* open addressing: index + 1 */
	size_t nslot;
};

/* Counts for the warnings of a section. */
struct counts {
	int64_t model, flops, bytes, optim, unsized, colls, collassumed, unblocked;
};

/*
 * pairs.c: every (operator, dims) pair of the section, counted, into ps;
 * the pair of a task's (operator, dims), NULL for a task without (the
 * new dims: its text, or NULL where unchanged); the table freed.
 */
void hid_pairs_collect(const struct graph *g, struct pairs *ps);
const struct pair *hid_pair_of(struct pairs *ps, const struct kg_task *t);
void hid_pairs_release(struct pairs *ps);

/*
 * time.c: the section's GPU tasks re-timed in place for their new dims
 * (pratio: the parameters' ratio, for the optimizer); its collectives
 * for their new bytes (pratio for gradients, aratio for activations);
 * its launches blocked on a full launch queue given the median launch
 * (returns how many).
 */
void hid_retime(const struct opts *o, struct graph *g, const struct kg_reader *r,
    struct pairs *ps, double pratio, struct counts *cn);
void hid_retime_colls(struct graph *g, const struct kg_reader *r, double pratio,
    double aratio, struct counts *cn);
int64_t hid_unblock_launches(struct graph *g, const struct kg_reader *r);

/* Operators by role, for find.c and rules.c. */
int hid_is_attention(const char *op);
int hid_attention_bshd(const char *op);

#endif
