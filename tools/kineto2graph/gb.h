/*
 * kineto2graph's build of one trace's graph (graph.c and the files of
 * its rules: steps.c, launch.c, runtime.c, deps.c, task.c; umap.c): the
 * build's state (struct gb, one for a graph_build, which owns every
 * array in it), the map it keys by correlation ids and events, and the
 * calls between those files. Arrays indexed by event hold KG_NONE where
 * they do not apply. Private to those files.
 */
#ifndef K2G_GB_H
#define K2G_GB_H

#include <stdint.h>
#include <string.h>

#include "k2g.h"

struct step {
	int64_t n, ts, end;
	uint32_t proc;
	size_t seq; /* its place among the trace's annotations */
};

/* u32 -> u32 map, open addressing; keys are correlation ids. */
struct umap {
	uint32_t *key, *val;
	size_t cap, n;
};

void umap_init(struct umap *m, size_t hint);
void umap_release(struct umap *m);
/* First writer wins: a correlation names one call. */
void umap_put(struct umap *m, uint32_t k, uint32_t v);
/* k's value, KG_NONE if none. */
uint32_t umap_get(const struct umap *m, uint32_t k);

/* Rule 6's finding for a GPU task (deps.c, explain_gaps). */
struct gap {
	uint32_t src;   /* an other-stream task it waited for, or KG_NONE */
	int64_t dl;     /* else the delay to add */
	int8_t on_launch; /* ... on the launch edge (1), the stream edge (0), or an
	                   edge from the window's first task (2); 3 while held
	                   by an event wait (then one of the others) */
	int8_t small;   /* within GAP_SLACK: not counted as a gap */
	int8_t set;     /* this task has a gap */
};

/* A run of a backward thread's tasks: its first and last (rule 5). */
struct brun {
	uint32_t first, last;
};

struct annref {
	int64_t ts;
	uint32_t ev;
};

/* Build state. Arrays indexed by event hold KG_NONE where not applicable. */
struct gb {
	struct trace *t;
	const struct build_opts *o;
	struct kg_cov *cov;
	struct step *steps;
	size_t nsteps;
	uint32_t main_proc;
	int noops;          /* the trace has no CPU op: runtime calls alone */
	int32_t *iter;     /* per event; INT32_MIN outside any step */
	uint8_t *sel;      /* per event: a selected task */
	uint32_t *encl;    /* RT / OP: innermost enclosing op (ev index) */
	uint32_t *launch;  /* GPU: its launch call (ev index) */
	uint32_t *nextgpu; /* RT: chain of the GPU events it launched */
	uint32_t *nextleaf;/* selected leaf: next selected leaf on its thread */
	uint32_t *pev;     /* leaf: the profiled host events it accounts for */
	uint32_t *task;    /* per event: task id */
	struct umap newdur; /* event -> index in durv: calls whose wait is cut off */
	int64_t *durv;
	uint8_t *durpre;
	size_t ndurv, capdurv, capdurpre;
	uint32_t *order;   /* tasks: ev indices in time order (ids: task_run) */
	size_t ntask;
	uint32_t *outproc; /* trace proc -> output proc id */
	struct kg_writer *w;
	int werr;
	int dry; /* a first pass that only settles durations */
	struct umap evmap;  /* GPU event -> index in evheld */
	struct umap evgap;  /* GPU event -> its small gap after an event wait (rule 6) */
	int64_t *evheld;    /* latest end of the event waits into it */
	size_t nevheld, capevheld;
	struct gap *gaps;   /* rule 6, by position in the sorted GPU events */
	struct tagger tags; /* rule 7 */
	struct annref *commann; /* nccl: annotations with a message size, by start */
	size_t ncommann;
	uint8_t *bwd;       /* per proc: a backward thread (rules 5 and 7) */
	uint32_t *mleaf;    /* the main thread's selected leaves, in time order */
	size_t nmleaf;
	struct brun *runs;  /* backward threads' runs (rule 5) */
	size_t nruns;
	struct brun *hand;  /* their hand-offs: (src, dst) of each edge */
	size_t nhand;
	struct umap hoff;   /* a hand-off's dst -> its src */
	uint64_t nedges;
	struct commkern_memo *ckm; /* kernel names' communication classes */
	uint8_t *rtc;       /* by name: rt_role's answer plus one, 0 before it is asked */
	size_t nrtc;        /* the names it covers (those before the build) */
};

/* Each task's allocator events (by task index): see mem_attach. */
struct memtask {
	int64_t *peak, *rpeak, *net, *exc;
	int64_t attached, unattached;
};

/* The event array a comparator sorts indices into (qsort has no context
 * argument). */
extern const struct ev *sort_ev;

static inline int64_t
end_of(const struct ev *e)
{
	return e->ts + e->dur;
}

static inline int
is_gpu(const struct ev *e)
{
	return e->cls == EV_KERN || e->cls == EV_CPY || e->cls == EV_SET;
}

static inline const char *
evname(const struct gb *g, const struct ev *e)
{
	return g->t->str.str[e->name];
}

static inline int
starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* steps.c: rules 1 and 2. find_steps: the steps, the iteration asked for
 * checked (-1 and err if the trace lacks it), the main thread; iter_at:
 * the iteration of time ts (INT32_MIN outside every step); iter_selected:
 * whether iteration it is one built; flatten: each CPU event's innermost
 * op around it (g->encl) and which are leaves; profiled_events: the
 * profiled host events each leaf accounts for (g->pev). */
int find_steps(struct gb *g, char *err, size_t errlen);
int32_t iter_at(const struct gb *g, int64_t ts);
int iter_selected(const struct gb *g, int32_t it);
void flatten(struct gb *g, uint32_t *cpu, size_t ncpu, uint8_t *leaf);
void profiled_events(struct gb *g, const uint32_t *cpu, size_t ncpu, const uint8_t *leaf);

/* launch.c: rule 3, with rule 1 on the CPU events. */
void join_launches(struct gb *g, const uint32_t *cpu, size_t ncpu, const uint32_t *gpu, size_t ngpu,
    struct kg_cov *cov);

/* runtime.c: rule 4 over the runtime calls rts (in time order); a call's
 * duration as simulated (get_dur), the host time a prefix-cut call
 * leaves to the gap after it (tail_of); what a call does (rt_role). */
void bind_runtime(struct gb *g, uint32_t *rts, size_t nrt);
int64_t get_dur(const struct gb *g, uint32_t x);
int64_t tail_of(const struct gb *g, uint32_t x);
int rt_role(struct gb *g, uint32_t name);

/* deps.c: an edge from event src to dst (written, or in the dry pass
 * noted); rule 6 over the sorted GPU events, and the delay it adds to
 * the launch (on_launch 1) or stream edge into gpu[i]; rule 5. */
void edge(struct gb *g, uint32_t src, uint32_t dst, int kind, int64_t delay, int how,
    uint32_t on, uint32_t via, uint32_t at);
void explain_gaps(struct gb *g, const uint32_t *gpu, size_t ngpu);
int64_t gap_delay(const struct gb *g, size_t i, int on_launch);
void backward_runs(struct gb *g, const uint32_t *cpu, size_t ncpu, const uint8_t *leaf);
void handoff_pairs(struct gb *g);
void handoff(struct gb *g);

/* task.c: the nccl: annotations indexed (before make_task); event x's
 * run in the order tasks are numbered (0 host, 1 GPU computation, 2
 * communication); its task record, and the structure tags' bits;
 * rule 8. */
void comm_annotations(struct gb *g);
int task_run(const struct gb *g, uint32_t x);
int make_task(const struct gb *g, uint32_t x, int64_t tbase, struct kg_task *k);
void mem_attach(struct gb *g, struct memtask *m);

#endif
