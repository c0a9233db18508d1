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
 * build.c writes the new job rank by rank. schedule.c lays out each new
 * rank's program: its stage's templates and layers, the steps of the new
 * schedule, the sends and receives between them (made anew where the job
 * traced none), the hand-offs. copy.c writes it from the pieces: pieces
 * are copied with their own edges, and the waits that cross pieces are
 * linked again where the pieces now stand; add.c adds each task with its
 * program order, and the new job's processors, edges and strings.
 * accum.c makes the gradient adds of the micro-batches after the first.
 * meet.c has the collectives meet again by what they are (rank edges
 * keyed by group, iteration, unit and place, see struct ckey), re-times
 * those whose link changed, and the gradients.
 *
 * Calls between the files go one way, down this list; no file calls one
 * above it, and accum.c and meet.c do not call each other:
 *
 *     graph-scale-pp.c   calls build.c, units.c
 *     build.c            calls schedule.c, copy.c, meet.c, accum.c, add.c
 *     schedule.c         calls copy.c, meet.c, add.c, units.c
 *     copy.c             calls accum.c, meet.c, add.c
 *     accum.c, meet.c    call add.c (meet.c: and units.c)
 *     add.c, units.c     call none of them
 *
 * A function that a file below needs goes in that file or lower.
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
	int32_t *trk;           /* by task: its rank (job_task_rank), once read */
	uint32_t *tproc;        /* by task: its processor, while job_read runs */
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
	char net[256];          /* a link taken from the built-in topology, for
	                           the tools entry; "" if none */
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


#define OPMAX 1024 /* operations of a kind an iteration, kept as templates */

/* What a collective meets: ranks edges join the tasks with equal keys. */
struct ckey {
	uint32_t group;         /* str id of the new group's ranks text */
	int32_t it, mb, j, k;   /* iteration, micro-batch, new layer, its order */
	uint8_t unit, part, op;
	int64_t role;           /* its processor's role */
	uint32_t task;          /* the new task */
	int64_t rank;
};

/* An edge waiting for the next task on a processor. */
struct pend {
	uint32_t proc;
	struct kg_edge e;
};

struct nproc {
	int64_t role;
	uint32_t id;
};

/*
 * A new task: what it changes of its base record, which is its
 * template's (tmpl) or, for a task made here or changed beyond these
 * fields, its own in made[]; made whole only as it is written (task_at).
 */
struct ntask {
	uint32_t proc, pgr;
	uint32_t made;          /* index in made[], KG_NONE: the template's */
	int64_t stage, mb, layer, gsize, dur;
	uint64_t bytes;
};

struct build {
	struct job *J;
	/* the result */
	struct ntask *t;
	struct kg_task *made;
	size_t nmade, capmade;
	uint32_t *tmpl;         /* by new task: its template */
	uint32_t *snap;         /* by new task: the last task on its `via` stream then */
	size_t nt, capt, captmpl, capsnap;
	struct kg_edge *e;
	size_t ne, cape;
	struct kg_proc *proc;
	size_t np, capp;
	struct ckey *key;
	size_t nkey, capkey;
	char **xstr;
	size_t nxstr, capxstr;
	/* templates */
	int64_t *role;          /* by template proc */
	uint32_t *viaon;        /* by template task: the stream a runtime edge binds it on */
	uint32_t *inst;         /* by template task: its copy in the piece being written */
	uint32_t *atoff, *atl;  /* by template task: the edges whose waiting call (`at`) it is */
	uint32_t **ops;         /* by template rank, op kind and iteration: piece indices */
	uint32_t **nops;        /* how many */
	int32_t opk[NOP];       /* in the iteration being written, operations of each kind so far */
	/* the rank being written */
	int64_t rank, stage;
	struct nproc *rp;
	size_t nrp, caprp;
	uint32_t *last;         /* by new proc: its last task */
	size_t caplast;
	int64_t *instrank;      /* by template task: the new rank inst[] holds its copy for */
	struct pend *pd;
	size_t npd, cappd;
	uint32_t bfirst, blast; /* a backward step's first and last task on a backward thread */
	uint32_t compute;       /* the new rank's compute stream (the layers' kernels) */
	int64_t role_max;       /* the largest stream id traced: made streams go past it */
	int failed;             /* a message was printed */
	/* gradient accumulation (accum.c): the handing-over calls, what
	 * times the adds made for later micro-batches, and the names made */
	uint32_t acc_detach, acc_detach2, acc_call, acc_add, acc_kname;
	int64_t acc_launch;
	double acc_bw;          /* bytes a ns; 0: nothing to time them on */
	size_t acc_made, acc_untimed;
	/* counts */
	size_t lost;            /* edges with nothing to join */
	uint8_t seen[KG_NCOLL * COMM_NLINK]; /* borrowed fits warned of */
};

/* Where a piece's copy goes: its step, micro-batch, new layer, and its collectives so far. */
struct ctx {
	int32_t it, mb;
	int64_t j;              /* new layer (global), -1 */
	int32_t jl;             /* new layer in the stage, -1 */
	uint8_t unit, part, op;
	int32_t k[64];          /* collectives so far by processor role slot */
};

/* A new stage: its templates and its layers. */
struct stagecfg {
	int64_t prim;           /* the template rank for layers, prologue, epilogue */
	/* template ranks whose parts outside the layers come along, by
	 * [unit F or B][before or after the layers] */
	int64_t ends[2][2][2];
	int nends[2][2];
	int64_t n2, lo2;        /* the new stage's layers */
	int64_t nsrc;           /* the primary's */
};

/* build.c: the new job, rank by rank */
int job_build(struct job *J, struct kg_writer *w, const char *producer);

/* accum.c: the gradient accumulation of micro-batches after the first */
void accum_init(struct build *B);
/* Is t (a template task) a gradient handed over as it is (AccumulateGrad's detach)? */
int accum_steal(const struct build *B, const struct kg_task *t);
/* Write t (copied from u) as the add's launch call, and its kernel; the call's id. */
uint32_t accum_make(struct build *B, struct kg_task *t, uint32_t u);

/* schedule.c: a new rank's program */
const struct piece *find(const struct job *J, int64_t k, int32_t it, int unit, int32_t mb,
    int part, int32_t a);
void stage_cfg(const struct build *B, int64_t tt, int64_t d, int64_t s, struct stagecfg *sc);
uint32_t compute_stream(struct build *B, const struct stagecfg *sc);
void schedule(struct build *B, const struct stagecfg *sc, int32_t it, int64_t M);

/* copy.c: a piece's copy; its own edges, and those it anchors */
void emit(struct build *B, const struct piece *pc, struct ctx *c);

/* meet.c: collectives */
void coll_key(struct build *B, uint32_t nt, uint32_t u, const struct ctx *c, int32_t ord);
int scale_gradients(struct build *B, size_t from, const struct stagecfg *sc);
int relink(struct build *B);
size_t meetings(struct build *B);

/* add.c: the new job's processors, tasks, edges and strings */
uint32_t role_proc(struct build *B, int64_t role, const struct kg_proc *like);
uint32_t new_proc(struct build *B, uint32_t tp);
uint32_t add_task(struct build *B, struct kg_task *t, uint32_t u);
uint32_t add_copy(struct build *B, struct kg_task *t, uint32_t u);
const struct kg_task *nt_base(const struct build *B, size_t i);
void add_edge(struct build *B, const struct kg_edge *tmpl, uint32_t src, uint32_t dst,
    uint32_t via, uint32_t at);
uint32_t intern_text(struct build *B, const char *s);
uint32_t intern_call(struct build *B, int role);

/* A task record's lines asked for ahead of its use. */
static inline void
fetch_task(const struct kg_task *t)
{
	const char *p = (const char *)t;
	size_t o;

	for (o = 0; o < sizeof(*t); o += 64)
		__builtin_prefetch(p + o);
}

#endif
