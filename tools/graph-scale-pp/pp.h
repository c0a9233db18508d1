/*
 * graph-scale-pp's private parts: a job graph rebuilt with another
 * pipeline depth. See graph-scale-pp(1) for what it does; here is how.
 *
 * units.c reads the traced job as templates. Each rank's program is a
 * sequence of units on its main thread, one iteration after another: the
 * prologue, forward steps F(m) and backward steps B(m) of the
 * micro-batches, the pipeline's send and receive operations between
 * them, and the epilogue (the gradients' last waits, the optimizer).
 * Every task belongs to one piece of a unit: F and B are cut into the
 * part before the layers, one piece per layer, the tasks between layers
 * (a slot, after its layer: the gradient buckets), and the part after
 * them; a send or receive is one piece (its calls, its kernel, the wait
 * for it). A GPU task goes with the call that launched it, the autograd
 * thread's tasks with the backward step that handed them over.
 *
 * build.c writes each new rank's program from those pieces, by the new
 * schedule: pieces are copied with their own edges; program order, the
 * hand-offs and the waits that cross pieces are linked again where the
 * pieces now stand; collectives meet again by what they are (rank edges
 * keyed by group, iteration, unit and place, see struct ckey).
 */
#ifndef PP_H
#define PP_H

#include <stddef.h>
#include <stdint.h>

#include "comm.h"
#include "graph.h"
#include "kg.h"
#include "pgroup.h"

enum { U_PRO, U_F, U_B, U_OP, U_EPI, NUNIT };
enum { P_WHOLE, P_PRE, P_LAYER, P_SLOT, P_POST };
/* pipeline operations, as a stage sees them */
enum { OP_SEND_NEXT, OP_RECV_PREV, OP_SEND_PREV, OP_RECV_NEXT, NOP };
enum { SCHED_1F1B, SCHED_GPIPE };

struct opts {
	int64_t n, gpn;         /* new depth, ranks per node */
	int64_t mb;             /* --microbatches, 0: as traced */
	int64_t act;            /* --activation-bytes, 0: from the shapes */
	int sched;
	struct comm_given given; /* --net, --topology */
};

/* Where a template task stands in its rank's program. */
struct place {
	uint8_t unit, part, op;
	int32_t mb;             /* F, B: micro-batch; U_OP: the op's index in its rank's list */
	int32_t a;              /* P_LAYER, P_SLOT: the layer, from the stage's first */
	int32_t it;             /* iteration index (into the header's iters) */
};

/* A piece: template tasks copied together, [first, first + n) of pt. */
struct piece {
	uint32_t rank;          /* index of the template rank */
	struct place pl;
	uint32_t first, n;
};

struct trank {
	int64_t rank;
	uint32_t main;          /* its main thread's proc */
	int64_t lo, n;          /* its layers */
	int64_t nmb;            /* micro-batches in an iteration */
	double grad;            /* data-parallel gradient bytes an iteration */
};

struct job {
	const struct opts *o;
	const struct graph *g;
	const struct kg_reader *r;
	const char *name;
	int index;
	/* the traced layout: rank = t + tp (d + dp s) */
	int64_t tp, dp, S, world;
	int64_t L;              /* layers in all */
	int64_t P;              /* a layer's parameters */
	int e;                  /* gradient element size */
	int single;             /* one rank's graph, not a job's: one rank a stage */
	int synth;              /* no sends or receives traced: they are made */
	int64_t act;            /* made ones: bytes a send moves */
	int64_t launch;         /* and their launch call's time, ns */
	int64_t hpre, hpost;    /* parameters before and after the layers (one stage traced) */
	struct trank *tr;       /* by rank */
	/* by template task */
	struct place *pl;
	uint32_t *piece;
	uint32_t *outoff, *out, *inoff, *in; /* edges by source and destination */
	uint32_t *progout;      /* program-order edge to the next task, or KG_NONE */
	/* pieces, sorted by (rank, it, unit, mb, part, a) */
	uint32_t *pt;           /* task ids, piece by piece */
	struct piece *pc;
	size_t npc;
	/* the groups and the model */
	struct pgroups pg;
	uint32_t *cgroup;       /* by task: its group, or UINT32_MAX */
	struct comm_model m;
};

/* units.c */
int job_read(struct job *J);
void job_release(struct job *J);
/* The piece of template rank k with that place; NULL if none. */
const struct piece *job_piece(const struct job *J, uint32_t k, const struct place *pl);
/* The rank of (t, d, s) in the traced layout. */
int64_t job_rank(const struct job *J, int64_t t, int64_t d, int64_t s);
/* The rank (index into tr) of a template task, of a processor. */
int64_t job_task_rank(const struct job *J, uint32_t u);
int64_t job_proc_rank(const struct job *J, uint32_t p);

/* build.c */
int job_build(struct job *J, struct kg_writer *w, const char *producer);

#endif
