/*
 * sim_int.h: the simulator's state (common/sim.h), shared by sim.c (the
 * interface and the run) and simstate.c (the arrays grown as a section
 * is read, made ready before the first run, and kept for the runs
 * after). The state is laid out for a large job's millions of tasks:
 * columns by task and by edge, the edges put in order of their source
 * once read, what few tasks have in sorted lists found by block. Only
 * those two files include it.
 */
#ifndef KG_SIM_INT_H
#define KG_SIM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "sim.h"

/*
 * An edge is its source, destination and delay (arrays esrc, edst, edl
 * by edge), and its kind, and whether it is bound while simulating (the
 * ekind bytes); a runtime edge's `on` and `via` are in its struct rtedge
 * (few edges have them). A delay of 2^32 - 1 ns (4.3 s) or more is
 * DL_LONG here, its value in the section's long delays (by edge index).
 */
#define DL_LONG UINT32_MAX

struct longdl {
	uint32_t e;
	int64_t delay;
};

#define EK_KIND 0x7f /* ekind: enum kg_edge_kind, or KG_NEDGE_KIND for a plain one */
#define EK_RT 0x80   /* ekind: a runtime edge, bound while simulating */

struct rtedge {
	uint32_t e, on, via, src, dst;
};

/*
 * Sorted lists of what few tasks have. A runtime in-edge: its
 * destination and rte index. A binding point: the task, and the stream
 * it binds on until it ends, then the task it captured there.
 */
struct rin {
	uint32_t dst, r;
};

struct bind {
	uint32_t task, val;
};

struct wnode {
	uint32_t task, next;
	int64_t delay;
};

/*
 * The heads of the waiter lists (in wn) by the task waited for: an open
 * addressing map, made for the section's runtime edges (a task binds
 * once, so there are no more tasks waited for than those edges).
 */
struct waits {
	uint32_t *key, *head;
	int bits;                 /* 2^bits slots, at least twice the keys */
};

/* A device's launch queue: the ends of the GPU tasks launched on it and
 * placed (a min-heap; those ended by the last look are dropped), how
 * many launched are not placed yet, and the calls held waiting for one
 * of those to be placed (their end is then known). */
struct qdev {
	int64_t *end;
	size_t n, cap;
	uint32_t nun;
	uint32_t *w;
	size_t nw, capw;
};

struct heapent {
	int64_t t;
	uint32_t id;
};

/*
 * A section's simulation. Some per-task arrays hold one thing and then
 * another, which halves what they take: `dend` a task's duration until
 * it is placed, then its end; `rs` when it may start, then when it
 * starts; `cnt` its fixed dependencies not yet ended, then (none left)
 * the runtime ones it still waits for. What few tasks have (runtime
 * in-edges, being a binding point) is in sorted lists, found by binary
 * search where a flag says there is something to find.
 */
struct sim {
	/* tasks, as read (big arrays: capacities in bytes, see BIG_TASK) */
	size_t n, cap;            /* cap: tasks all of them hold */
	uint32_t *proc, *name;
	int64_t *dend;
	size_t bproc, bname, bdend;
	/* edges, as read, then in order of their source (order_edges;
	 * esrc is gone then) (BIG_EDGE) */
	uint32_t *esrc, *edst, *edl;
	uint8_t *ekind;
	size_t ne, cape, besrc, bedst, bedl, bekind;
	struct rtedge *rte;
	size_t nrte, caprte;
	struct longdl *ldl;
	size_t nldl, capldl;
	/* derived, but made as big as the tasks and edges as they are read,
	 * so that their pages are faulted in by then (struct prefault) */
	size_t brs, bcnt, bsoff, bstate;
	uint32_t *soff;           /* task x's out-edges: soff[x] .. soff[x + 1] (order_edges) */
	struct rin *rin;          /* runtime edges by destination */
	size_t nrin;
	struct bind *bind;        /* binding points, by task */
	size_t nbind;
	uint32_t *rinix, *bindix; /* where each block of tasks begins in them (BLK) */
	uint32_t *cnt;
	struct waits wt;          /* the tasks waited for: their waiter lists' heads */
	int64_t *rs;
	uint8_t *state;           /* ST: 0 waiting, 1 bound, 2 done, 3 at its rendezvous; F_* */
	size_t nproc, cappt0;
	int64_t *pt0;             /* per proc: when its rank's graph begins (job sections) */
	int64_t *rank, *rt0;      /* the header's ranks and their starts */
	size_t nrank, caprank, caprt0;
	uint32_t *last;           /* per proc: last task launched on it */
	uint32_t *lastby;         /* per proc: the call that launched it */
	int64_t *busy;            /* per proc: busy until */
	struct wnode *wn;
	size_t nwn, capwn;
	struct heapent *heap;
	size_t nheap, capheap;
	/* rendezvous groups (tasks joined by rank edges) */
	struct bind *grpl;        /* the tasks in groups, and each one's group; NULL when none */
	size_t ngrpl;
	uint32_t *grpix;          /* where each block of tasks begins in grpl (BLK) */
	uint32_t *goff, *gmem;    /* members by group */
	uint32_t *garr;           /* per group: members arrived */
	int64_t *gmax;            /* per group: latest arrival */
	uint32_t *held;           /* per proc: tasks waiting for it to be released */
	struct wnode *hn;
	size_t nhn, caphn;
	/* the launch queue (sim_launch_queue) */
	uint32_t qn;              /* slots a device; 0: unbounded */
	uint32_t *pdev;           /* per proc: its device, KG_NONE for a thread */
	int64_t *devkey;          /* per device: rank, then pid */
	size_t ndev, cappdev, capdevkey;
	struct qdev *qd;          /* per device */
	int64_t now;              /* the time of the task being placed */
	struct prefault *pf;      /* NULL: none */
	int over;                 /* a simulated end reached KG_TIME_MAX */
	size_t ngrp;              /* rendezvous groups */
	/* sim_keep: what a re-run starts from again (malloc'd at the first
	 * run): the durations, delays, counts, flags and binding points as
	 * they were before it, and each task's cut not yet taken */
	int keep, ran;
	int64_t *dur0, *rem;
	uint32_t *edl0, *cnt0, *bind0;
	struct longdl *ldl0;
	uint8_t *state0;
};

#define HELD INT64_MAX /* busy[p]: a collective waits there for its peers */
/* A task's state and flags share a byte: one random read a task, not two. */
#define ST(s, x) ((s)->state[x] & 3)
#define SET_ST(s, x, v) ((s)->state[x] = (uint8_t)(((s)->state[x] & ~3) | (v)))
#define F_RTIN 4  /* the task has runtime in-edges (in rin) */
#define F_BIND 8  /* the task is a binding point (in bind) */
#define F_GRP 16  /* the task is in a rendezvous group (grpl) */
#define F_WAIT 32 /* some task waits for it (wt) */
#define F_RT 64   /* a runtime call (set as read: only those launch) */
#define F_QW 128  /* a GPU task launched, not placed: counted in its device's nun */

/*
 * The big arrays by task and by edge: where each is, its capacity and
 * its element's size (soff has two more than the tasks), its slot with
 * the prefault thread, and whether it is read at random (huge pages).
 * Those made while simulating are derived, all zero until then.
 */
struct big {
	void **p;
	size_t *cap;
	size_t size;
	int derived, huge;
};

#define BIG_TASK(s) { \
	{ (void **)&(s)->proc, &(s)->bproc, sizeof(*(s)->proc), 0, 1 }, \
	{ (void **)&(s)->name, &(s)->bname, sizeof(*(s)->name), 0, 0 }, \
	{ (void **)&(s)->dend, &(s)->bdend, sizeof(*(s)->dend), 0, 1 }, \
	{ (void **)&(s)->rs, &(s)->brs, sizeof(*(s)->rs), 1, 1 }, \
	{ (void **)&(s)->cnt, &(s)->bcnt, sizeof(*(s)->cnt), 1, 1 }, \
	{ (void **)&(s)->soff, &(s)->bsoff, sizeof(*(s)->soff), 1, 1 }, \
	{ (void **)&(s)->state, &(s)->bstate, sizeof(*(s)->state), 1, 1 }, \
}
#define NBIG_TASK 7
#define BIG_EDGE(s) { \
	{ (void **)&(s)->esrc, &(s)->besrc, sizeof(*(s)->esrc), 0, 0 }, \
	{ (void **)&(s)->edst, &(s)->bedst, sizeof(*(s)->edst), 0, 0 }, \
	{ (void **)&(s)->edl, &(s)->bedl, sizeof(*(s)->edl), 0, 0 }, \
	{ (void **)&(s)->ekind, &(s)->bekind, sizeof(*(s)->ekind), 0, 0 }, \
}
#define NBIG_EDGE 4

/*
 * The runtime lists are found by task id, a million times a second on a
 * large job: a binary search over the whole list missed the cache at
 * most of its steps. Each block of 2^BLK task ids has the index of its
 * first entry in a list (entries of 8 bytes, sorted by their first
 * uint32), and a search goes over that block's few entries.
 */
#define BLK 8

/* both lists' entries: a uint32 task, then a uint32 */
_Static_assert(sizeof(struct rin) == 8 && offsetof(struct rin, dst) == 0, "struct rin");
_Static_assert(sizeof(struct bind) == 8 && offsetof(struct bind, task) == 0, "struct bind");

/* Edge i's entry in the long delays (its delay is one). */
static inline size_t
long_delay(const struct sim *s, uint32_t i)
{
	size_t lo = 0, hi = s->nldl;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ldl[mid].e < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Edge i's delay. */
static inline int64_t
delay_of(const struct sim *s, uint32_t i)
{
	if (s->edl[i] != DL_LONG)
		return s->edl[i];
	return s->ldl[long_delay(s, i)].delay;
}

/* simstate.c */
/* The arrays of tab (nb of them, slots from slot0) made to hold need
 * elements; returns the elements all of them hold. */
size_t sim_big_need(struct sim *s, struct big *tab, int nb, int slot0, size_t need);
/* Back to no section (sim_reset), or to nothing held (sim_release). */
void sim_reset(struct sim *s);
void sim_release(struct sim *s);
/* What a run needs besides the tasks and edges as read; once, before the first. */
void sim_prepare(struct sim *s);
/* With sim_keep: what a re-run starts from, kept before the first run,
 * and the state put back to it with a cut (NULL: none). */
void sim_snapshot(struct sim *s);
void sim_restore(struct sim *s, const int64_t *cut);
/* The heads of the waiter lists, made for nkeys tasks waited for, and freed. */
void waits_init(struct waits *w, size_t nkeys);
void waits_release(struct waits *w);

#endif
