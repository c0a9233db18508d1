/*
 * What tags.c, infer.c and recompute.c (rule 7, structure tags) share
 * among themselves: the inference's state and the helpers on spans and
 * on the trace's CPU events. k2g.h has their interface to the rest.
 * Calls go one way: infer.c calls recompute.c, and both call the
 * helpers tags.c holds (tag_has, the spans, cpu_at), which call neither.
 */
#ifndef K2G_INFER_H
#define K2G_INFER_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

#include "k2g.h"

/* A top-level CPU event (op or runtime call) of one thread. */
struct item {
	int64_t ts, end;
	uint32_t name;
	uint32_t seq;          /* first sequence number inside it, NO_CORR */
	uint32_t seqlo, seqhi; /* the least and the most inside it; NO_CORR, 0 */
	uint8_t op, p2p, coll, node;
};

/* A piece of a thread's items [lo, hi). */
struct seg {
	size_t lo, hi;
};

/* Sequence numbers [lo, hi] of a forward step or layer. */
struct seqiv {
	uint32_t lo, hi;
	int32_t v;
};

struct infer {
	struct tagger *tg;
	const struct trace *t;
	const uint32_t *cpu, *encl;
	const int32_t *iter;
	size_t ncpu;
	struct item *it;       /* the items being looked at */
	size_t nit, capit;
	struct seg *seg, *seg2;
	size_t nseg, capseg, nseg2, capseg2;
	uint32_t *names;
	size_t capnames;
	size_t *opix;          /* item index of each op of a step */
	size_t capopix;
	struct seqiv *stiv, *lyiv;
	size_t nstiv, capstiv, nlyiv, caplyiv;
	const struct modspan *lay; /* the layer class's calls on the main thread, by start */
	size_t nlay;
	const regex_t *re;     /* --layer-ops */
	uint8_t *match;        /* by name id: 0 not tried, 1 matches, 2 does not */
	struct seg *lp;        /* a step's layers: items [lo, hi) each */
	size_t nlp, caplp;
	uint32_t *fwn;         /* the iteration's forward layers' op names, sorted */
	size_t nfwn, capfwn;
};

/* Fewer top-level ops than this repeating is no evidence of a layer (a
 * pair of ops called in a loop, a per-parameter hook): a transformer
 * block has a dozen. */
#define MIN_LAYER_OPS 3

/* Whether s holds word, in any case. */
int tag_has(const char *s, const char *word);
/* Sort s by thread and start, index it by thread and link the parents. */
void spans_index(struct spans *s, size_t nproc);
/* Append a span with no phase to s (spans_index it before use). */
void add_span(struct spans *s, uint32_t proc, int64_t ts, int64_t end, int32_t mb, int32_t ly);
/* The first of the iteration's entries in a (by iteration, start), and its end. */
size_t iter_range(const struct bwdiv *a, size_t n, int64_t it, size_t *end);
/* The first position of in->cpu on thread proc at or after ts (tags.c). */
size_t cpu_at(const struct infer *in, uint32_t proc, int64_t ts);
/* Recomputed forward work in iteration it's backward runs tg->run[rlo,
 * rhi) into tg->rcs (recompute.c). */
void rc_find(struct infer *in, int32_t it, size_t rlo, size_t rhi);

#endif
