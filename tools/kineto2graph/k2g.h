/*
 * kineto2graph's private parts: the events it keeps from a Kineto trace
 * (json.c reads them, streaming, with parse.c, fields.c, events.c and
 * split.c: jp.h), and the graph it builds from them (graph.c, with the
 * files of its rules: gb.h). One `struct trace` holds one input file;
 * its memory grows with the events kept (40 bytes each, plus interned
 * strings), never with the JSON text.
 */
#ifndef K2G_H
#define K2G_H

#include <regex.h>
#include <stdint.h>
#include <stdio.h>

#include "intern.h"
#include "kg.h"

/* What a kept event is. */
enum ev_class {
	EV_OP,    /* cpu_op / Operator: a CPU op */
	EV_ANNOT, /* user_annotation: a range (ProfilerStep#N, record_function) */
	EV_RT,    /* cuda_runtime / Runtime / cuda_driver: a runtime call */
	EV_KERN,  /* kernel / Kernel */
	EV_CPY,   /* gpu_memcpy / Memcpy */
	EV_SET,   /* gpu_memset / Memset */
	EV_SYNC   /* cuda_sync: what a sync call waited on (not a task) */
};

/* 40 bytes: the trace's bulk, so kept small. */
struct ev {
	int64_t ts, dur;   /* ns as the file writes them (before baseTimeNanoseconds) */
	uint32_t corr;     /* correlation, NO_CORR if none; an op (EV_OP) has
	                      none and keeps its autograd Sequence number here */
	uint32_t name;     /* interned */
	uint32_t proc;     /* index into trace.proc; KG_NONE for cuda_sync */
	uint32_t shapes;   /* index into trace.shp (Input Dims and Input type),
	                      KG_NONE if the event has neither */
	uint32_t extra;    /* index into trace.coll (ops, kernels), trace.sync
	                      (cuda_sync) or trace.bytes (copies, sets); KG_NONE */
	uint8_t cls;       /* enum ev_class */
};

#define NO_CORR UINT32_MAX

/* NCCL metadata PyTorch records on a collective's kernel or CPU op. */
struct collmeta {
	uint32_t name;      /* "Collective name", KG_NONE if absent */
	int64_t in_nelems, out_nelems, gsize, seq;
	uint32_t dtype, pg, pgr;
};

/* A cuda_sync record. */
struct syncrec {
	int kind;            /* SYNC_STREAM, ... below */
	int64_t stream;      /* args.stream: the stream that waits (-1 none) */
	int64_t wait_stream; /* wait_on_stream, -1 if none */
	int64_t wait_corr;   /* wait_on_cuda_event_record_corr_id, -1 if none */
	int64_t device;
};

enum { SYNC_STREAM, SYNC_EVENT, SYNC_WAIT_EVENT, SYNC_CONTEXT, SYNC_OTHER };

/* A processor as the trace names it: (pid, tid) or (device, stream). */
struct tproc {
	int64_t pid, tid;
	int gpu;
	uint32_t name; /* thread name from metadata, KG_NONE */
};

/*
 * An nn.Module call, from a python_function event named "nn.Module: CLASS_N"
 * (PyTorch's with_stack / with_modules), or the ops a module's instance
 * ran, from their "Module Hierarchy" (TorchScript models): what layers
 * are found with.
 */
struct modspan {
	int64_t ts, end;
	uint32_t proc;         /* its thread */
	uint32_t cls;          /* interned CLASS */
	int32_t inst;          /* N */
	int path;              /* from ops' Module Hierarchy, not a call */
};

/* A GPU allocator event ("[memory]", profile_memory): on a CPU thread. */
struct memev {
	int64_t ts;
	uint32_t proc;         /* the thread that allocated or freed */
	int64_t bytes;         /* > 0 allocated, < 0 freed */
	int64_t alloc, reserved; /* the allocator's totals after it; -1 if absent */
};

/* A deviceProperties entry; -1 / KG_NONE where absent. */
struct tdev {
	int64_t id, mem, sms;
	uint32_t name;
};

struct trace {
	const char *file;      /* for messages */
	struct intern str;
	struct ev *ev;
	size_t nev, capev;
	struct collmeta *coll;
	size_t ncoll, capcoll;
	struct syncrec *sync;
	size_t nsync, capsync;
	uint64_t *bytes;
	size_t nbytes, capbytes;
	struct tproc *proc;
	size_t nproc, capproc;
	struct modspan *mod;   /* nn.Module calls, in the order read */
	size_t nmod, capmod;
	struct memev *mem;     /* GPU allocator events, in the order read */
	size_t nmem, capmem;
	/* distributedInfo.pg_config (PyTorch 2.3+): a group's name to its ranks
	 * text ("[0, 1]"), for collectives that name their group only */
	struct pgcfg { uint32_t name, ranks; } *pgcfg;
	size_t npgcfg, cappgcfg;
	/* deviceProperties (the first 64 entries): the node's GPUs */
	struct tdev *dev;
	size_t ndev, capdev;
	/* An event's shapes: its Input Dims and Input type, interned as a
	 * pair (shk keys a pair by the two ids; shp[pair] holds them), so
	 * that struct ev stays 40 bytes. */
	struct intern shk;
	struct shpair { uint32_t dims, types; } *shp;
	size_t nshp, capshp;
	/* Metadata from the top level. */
	int64_t base_ns;       /* baseTimeNanoseconds, 0 if absent */
	int64_t rank, world;   /* -1 if absent */
	uint64_t xxh3;         /* of the input bytes as read (trace_hash) */
	struct tail_hash *tail; /* its last bytes still being hashed, or NULL */
	uint64_t nevents;      /* trace events seen */
	struct kg_cov cov;     /* skip:CAT and missing:FIELD counts */
};

void trace_init(struct trace *t, const char *file);
void trace_release(struct trace *t);
/* Index of the processor, adding it if new. */
uint32_t trace_proc(struct trace *t, int64_t pid, int64_t tid, int gpu);

/*
 * Read a Kineto JSON trace (plain or gzip, told apart by content) from fp
 * into t. Returns 0, or -1 with a one-line reason in err (starting with
 * "byte N: " where a place in the JSON is to blame).
 */
int trace_read(struct trace *t, FILE *fp, char *err, size_t errlen);
/*
 * Wait until t->xxh3 holds the whole input's hash (after two halves the
 * file's end is hashed on a thread while the graph is built). Returns 0,
 * or -1 with err set when that reading failed.
 */
int trace_hash(struct trace *t, char *err, size_t errlen);
/* Whether trace_read may parse a large plain file in two halves at once
 * (split.c); it may unless told not to. */
void trace_split(int on);

struct build_opts {
	int all_iters;   /* keep every ProfilerStep iteration */
	int64_t iter;    /* else only this one */
	int64_t rank;    /* --rank, used when the trace has none; -1 */
	const regex_t *layer_ops; /* --layer-ops: the ops layers are found among */
	const char *producer;
	/* The profiler's own cost: each host task's `pc` is pcost ns times
	 * the profiled host events it accounts for (itself, and the ops
	 * around it that begin since the last task on its thread); pcost
	 * -1: none. pcal and ustep go to the header as they are. */
	int64_t pcost, ustep;
	const char *pcal;
};

/*
 * Build the graph of t and write it as one section. Returns 0, -1 with
 * err set when the data does not allow it (no such iteration), or -2 when
 * writing failed (w->err says why). cov receives the coverage counts.
 */
int graph_build(struct trace *t, const struct build_opts *o,
    struct kg_writer *w, struct kg_cov *cov, char *err, size_t errlen);

/*
 * The cost of one profiled host event (ns, into *pcost) that makes the
 * median step of t's graph, simulated without it, ustep ns (calib.c).
 * 0, or -1 with err set when no cost can (a step longer than every
 * traced one, or shorter than the trace's GPU work allows).
 */
int calibrate(struct trace *t, const struct build_opts *o, int64_t ustep, int64_t *pcost,
    char *err, size_t errlen);

/*
 * Rule 7, structure tags (tags.c, infer.c, recompute.c): the phase, micro-batch and layer of a
 * task from the record_function ranges (user_annotation) around it on
 * its thread (a backward thread's task also from the main thread's, around
 * the backward call), the phase also from the thread itself (autograd's);
 * where no range says, the micro-batch and layer inferred from the
 * pipeline's sends and receives, the backward calls and the repeating
 * unit of a forward step; the stage from the pipeline group's ranks.
 */
struct annot {
	int64_t ts, end;
	uint32_t proc, parent; /* parent: the range around it, KG_NONE */
	int8_t ph;             /* enum kg_phase, KG_PH_NONE if the name says none */
	int32_t mb, ly;        /* -1 if the name says none */
};

/* Ranges (or inferred spans) indexed by thread, then start. */
struct spans {
	struct annot *a;
	size_t n, cap;
	size_t *first;         /* per proc: index of its first; [nproc] = n */
};

struct bwdiv {
	int64_t it, start, end;
	uint32_t proc;
};

struct tagger {
	struct spans rng;      /* the trace's ranges */
	struct spans inf;      /* inferred spans (tags_infer) */
	struct spans rcs;      /* recomputed forward work on backward threads */
	int rng_tags;          /* TAG_MB, TAG_LY: some range gives one */
	const uint8_t *bwd;    /* per proc: a backward thread */
	size_t nproc;
	uint32_t main;         /* the main thread */
	struct bwdiv *bw;      /* backward work: merged spans by iteration, start */
	size_t nb, capb;
	struct bwdiv *run;     /* the same, one per run, by iteration, start */
	size_t nrun;
	int32_t stage;         /* pipeline stage, -1 unknown */
	/* coverage of the inference (structures, not tasks) */
	int64_t mb_unmatched;  /* iterations whose forward steps and backward
	                          calls differ in number */
	int64_t ly_norepeat;   /* forward steps without a repeating unit */
	int64_t ly_steps;      /* forward steps cut into layers */
	int64_t ly_reps, ly_unit; /* the most layers a step had, and the most
	                          top-level ops a layer's unit had (0 when
	                          the layers came from module calls) */
	uint32_t ly_module;    /* the module class taken as the layer, KG_NONE */
	int64_t ly_noseq;      /* backward calls no sequence number maps */
	int64_t rc_runs;       /* runs of forward ops a backward node ran again */
};

/*
 * Index t's ranges (all but ProfilerStep); bwd[proc] marks backward
 * threads, main the main thread.
 */
void tags_build(struct tagger *tg, const struct trace *t, const uint8_t *bwd, uint32_t main);
/* A run of backward work on thread proc in iteration it; tags_ready when
 * all are in. */
void tags_backward(struct tagger *tg, int64_t it, uint32_t proc, int64_t start, int64_t end);
void tags_ready(struct tagger *tg);

/*
 * Infer micro-batches, layers and the stage (after tags_ready): cpu holds
 * the CPU events (ops and runtime calls) sorted by thread, then start,
 * the enclosing first; encl[x] the innermost op around event x (KG_NONE);
 * iter[x] its iteration (INT32_MIN outside any); rank the trace's rank
 * (-1 unknown).
 */
void tags_infer(struct tagger *tg, const struct trace *t, const uint32_t *cpu, size_t ncpu,
    const uint32_t *encl, const int32_t *iter, int64_t rank, const regex_t *layer_ops);

/* What tags_at found: from a range, or inferred. */
enum {
	TAG_PH = 1, TAG_MB = 2, TAG_LY = 4, TAG_PH_INF = 8, TAG_MB_INF = 16,
	TAG_LY_INF = 32, TAG_ST_INF = 64, TAG_RC = 128
};

/*
 * Tag k as at time ts on thread proc in iteration it: returns the TAG_
 * bits of what it set.
 */
int tags_at(const struct tagger *tg, uint32_t proc, int64_t ts, int64_t it, struct kg_task *k);
void tags_release(struct tagger *tg);

#endif
