/*
 * graph-scale-layers' private parts: the stages and runs of the traced
 * graph and the new one built from them (runs.c), the gradients and the
 * optimizer re-timed for the new parameter count (grads.c). What the tool
 * does: the comment at the top of tools/graph-scale-layers.c.
 */
#ifndef SL_H
#define SL_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "kg.h"

struct opts {
	int64_t n, gpn;
};

struct run {
	uint32_t first;   /* its first task (in the processor's order) */
	uint32_t len;
	uint32_t newbase; /* new id of its first copy's first task */
	uint32_t stage;
	int64_t layer;    /* source layer */
	int desc;         /* copies in descending layer order: backward */
	uint32_t kind;    /* its kind of run, or KG_NONE when unlike the others */
};

/*
 * A kind of run: the runs of one processor and phase with the same
 * length and task names, across layers, micro-batches and iterations;
 * their mean durations and gaps.
 */
struct rkind {
	uint32_t proc, first, len;
	int phase;
	double *dur, *gap;  /* sums by position; gap: to the next task */
	int64_t n;
	int bad;            /* runs that matched in length but not in names */
};

struct stage {
	int64_t lo, n;    /* source layers lo .. lo + n - 1 */
	int64_t nlo, nn;  /* new layers */
	int64_t *cnt;     /* by source layer - lo: its copies */
	int64_t *firstj;  /* and the first new layer (- nlo) they make */
	uint32_t rank0;   /* a rank of the stage, for counting parameters */
	double ratio;     /* gradient bytes after / before */
	int64_t tensors;  /* parameter tensors before */
	double tratio;    /* parameter tensors after / before */
};

/* A new task: its source, which copy it is in (0 outside runs), and what
 * differs from the source's record (its id is its index). */
struct ntask {
	uint32_t src, cp;
	int64_t layer, dur, odur;
};

/* The gradients' other changes to a new task (by ascending index). */
struct tfix {
	size_t i;
	uint64_t bytes;
	int64_t mnet, mexc;
};

struct ctx {
	const struct opts *o;
	const struct graph *g;
	const struct kg_reader *r;
	const char *name;
	int index;
	/* by task */
	uint32_t *run, *pos, *nid, *pidx, *porder, *progout, *progin;
	uint32_t *tproc;    /* its processor, until the edges are made */
	/* by rank (index into ranks[]) */
	int64_t *ranks;
	uint32_t *prk;      /* by processor: its rank's index in ranks[] */
	size_t nranks;
	uint32_t *rstage;
	struct run *rn;
	size_t nrun, caprun;
	struct stage *st;
	size_t nst;
	/* the result: the new tasks, each its source's record but for what
	 * struct ntask holds (and the gradients' changes in fix), made
	 * whole only as it is written (task_at) */
	struct ntask *t;
	size_t nt, capt;
	struct tfix *fix;
	size_t nfix, capfix;
	struct kg_edge *e;
	size_t ne, cape;
	struct rkind *rk;
	size_t nrk, caprk;
	size_t dropped;     /* edges with no task left to hold them */
};

uint32_t rank_index(const struct ctx *c, int64_t rank);
/* The index in ranks[] of task t's rank (graph_rank's). */
uint32_t task_rank_index(const struct ctx *c, uint32_t t);
int find_stages(struct ctx *c);
void find_runs(struct ctx *c);
void run_kinds(struct ctx *c);
/* The tasks make_tasks will make (after run_kinds). */
uint64_t count_tasks(const struct ctx *c);
void make_tasks(struct ctx *c);
void program_edges(struct ctx *c);
void other_edges(struct ctx *c);
int gradients(struct ctx *c);
/* New task i made whole, into *t; *fix, the next of c->fix not yet
 * applied, moves on (start at 0; ask in ascending order). */
void new_task(const struct ctx *c, size_t i, size_t *fix, struct kg_task *t);

#endif
