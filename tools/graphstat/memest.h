/*
 * memest: graphstat's predicted peak device memory, derived from the
 * graph itself, so that every what-if tool carries it by editing the
 * graph and nothing else (formats/graph-stream.md, "Memory: what an
 * edit must keep"; graphstat(1), DEVICE MEMORY):
 *
 * - the state the step starts with: the parameters counted from the
 *   shapes of one forward pass's operators (common/params.h; lookup
 *   tables outside the layers; an LM head outside the layers as large
 *   as the largest table once: tied), at their element size (from the
 *   ty Input types), and Adam's state: two tensors a parameter at that
 *   size, or for half-precision parameters a float master copy and
 *   float states (mixed precision: 12 bytes a parameter); divided by
 *   the data-parallel group where the job shards them (an all-gather in
 *   the forward: FSDP/ZeRO-3, parameters, gradients and state; a
 *   reduce-scatter in the backward without one: ZeRO-2, gradients and
 *   state);
 * - what the step allocates on top of it, where tasks carry allocator
 *   events (task keys mn, mx: kineto2graph rule 8): their net bytes
 *   replayed in the order the tasks start (simulated when the section
 *   has a sim record, else traced), each task reaching its level plus
 *   its excursion, a level counted from the lowest before it; the most
 *   of that is the dynamic peak. Copies of a task carry its mn and mx,
 *   so more layers, micro-batches in flight by the schedule, another
 *   stage's share replay as they run. A micro-batch after the first
 *   gives back what its layers leave, up to what the first's left (the
 *   gradients, accumulated in place), as each layer ends, and the rest
 *   of what it leaves as it ends;
 * - without allocator events, from the forward ops' shapes: the inputs
 *   they keep for the backward, the logits and the loss (a coarser
 *   estimate, said as such).
 *
 * The parts at the peak: parameters, optimizer state (counted),
 * gradients (the backward's net allocations in layers up to the peak,
 * at most the gradients' bytes), activations (the forward's net
 * allocations inside layers, less what the backward freed of them),
 * logits and loss (the forward's and backward's outside layers), and
 * temporaries (the rest: the peak task's own excursion, what was held
 * at the start). They sum to the peak and none is below 0.
 *
 * State: 72 bytes a task with allocator events, about 200 a rank; a
 * prediction's scratch, 40 bytes a (micro-batch, layer) of its rank.
 */
#ifndef KG_MEMEST_H
#define KG_MEMEST_H

#include <stdint.h>

#include "kg.h"
#include "params.h"

enum { MP_NONE, MP_ALLOC, MP_SHAPES };

/* A rank's predicted peak and its parts, bytes; how < 0 parts unknown. */
struct mempred {
	int how;                  /* MP_ALLOC, MP_SHAPES, MP_NONE */
	int64_t peak;             /* -1 none */
	int64_t params, grads, optim, act, logits, temp;
	int64_t shard;            /* divided by (1: none) */
	int zero;                 /* 0 none, 2 ZeRO-2, 3 FSDP/ZeRO-3 */
	int assumed_elem;         /* the parameters' element size assumed */
	int assumed_optim;        /* Adam assumed: no optimizer op says which */
	int mixed;                /* half parameters: a float master copy and float states */
	int recompute;            /* the shapes say activation checkpointing */
	int64_t unbalanced;       /* iterations whose events do not net to 0 */
	int64_t early_frees;      /* bytes freed below the iteration's start */
	int noisy;                /* unbalanced, or early frees past a hundredth of the peak */
	int64_t absurd;           /* allocator events not used: a task's bytes past
	                             MEM_TASK_MAX, or more than MEM_EVENTS_MAX of them */
	int phase;                /* where the peak was: the task's tags */
	int64_t mb, layer;
	uint32_t name;
};

struct memev_t {
	int64_t rank, it, key, mn, mx;
	uint32_t id, name;
	int8_t phase;
	int64_t mb, layer;
};

#define MEM_GROUPS 16

/*
 * Allocator events past what any GPU holds are not a step's: a task's
 * net or excursion past 2^39 bytes (512 GiB), or more than 2^22 events in
 * a rank's iteration, and the estimate does without them (from the
 * shapes). Within both, the sums cannot overflow (2^61 at most).
 */
#define MEM_TASK_MAX (INT64_C(1) << 39)
#define MEM_EVENTS_MAX ((size_t)1 << 22)

struct memrank {
	int64_t rank;
	struct param_count pc;
	int64_t it, mb;           /* the forward pass counted: the first seen */
	int64_t maxmb;            /* the last micro-batch of that iteration */
	int64_t act_shapes;       /* bytes its forward ops keep, from shapes */
	int64_t logits_shapes;
	int64_t last_sh_op, last_sh;
	int64_t cast[4];          /* the casts since the last product: elements */
	int castsrc[4];           /* and their source's element size, 0 unknown */
	int ncast;
	int logit_sz;             /* the last product's input element size */
	int64_t elem_big;         /* the tensor the parameters' size came from */
	int64_t act_layers;       /* of act_shapes, what the layers keep */
	int64_t layer_in;         /* the layers' inputs */
	int64_t nlayers, last_layer;
	int recompute;            /* forward operators in the backward: checkpointing */
	int64_t absurd;           /* allocator events past MEM_TASK_MAX, not kept */
	int adam, optim_seen;
	/* each process group's collectives (MEM_GROUPS, the rest as one):
	 * an all-gather in the forward, a reduce-scatter in the backward
	 * tell ZeRO/FSDP's sharding, unless the group reduces in the
	 * forward too (tensor parallelism's, with sequence parallelism) */
	struct memgroup {
		uint32_t pgr;
		int64_t gather_gs, rs_gs;
		int fwd_reduce;
	} grp[MEM_GROUPS];
	int ngrp;
	int elem;                 /* parameter element size seen, 0 unknown */
};

struct memest {
	struct memev_t *ev;
	size_t nev, capev;
	struct memrank *rk;
	size_t nrk, caprk;
	size_t lastrk;  /* the rank found last: a job's tasks come rank by rank */
	int sorted;
};

void memest_reset(struct memest *m);
void memest_release(struct memest *m);
/* Each task of the section, in order, with its rank. */
void memest_task(struct memest *m, const struct kg_reader *r, const struct kg_task *t,
    int64_t rank, int thread);
/* At the section's end: the simulated start of each task (NULL: traced
 * starts kept), by task id, n tasks. */
void memest_order(struct memest *m, const int64_t *ss, const int64_t *ts, size_t n);
/* The prediction for (rank, iteration). */
struct mempred memest_predict(struct memest *m, int64_t rank, int64_t it);

#endif
