/*
 * kg: the graph-stream codec, mirroring formats/graph-stream.md.
 *
 * A writer packs records with msgpack-c into a buffer and compresses it
 * with zstd (frame checksums on) onto a FILE*, on threads of its own
 * where the machine has two CPUs or more (common/zq.h; the bytes are the
 * same either way). A reader decompresses (a regular file ahead, on a
 * thread of its own: common/zin.h) and reads one record at a time where
 * it lies (common/mp.h: no object tree is built), decodes the known
 * record types into the structs below,
 * ignores unknown keys and record types, keeps the current section's
 * string table, and tells a truncated or corrupt stream from a clean end.
 * Whole zstd frames can be passed from a reader to a writer untouched.
 *
 * Neither side prints or exits: each call returns 0 (or a record type) on
 * success and -1 on failure with a one-line reason in `err`, which the
 * tool words into its message.
 */
#ifndef KG_KG_H
#define KG_KG_H

#include <msgpack.h>
#include <stdint.h>
#include <stdio.h>
#include <zstd.h>
#include <zstd_errors.h>

#define KG_FORMAT "kgraph"
#define KG_MAJOR 1
#define KG_MINOR 9
#define KG_NONE UINT32_MAX /* absent string / proc / task reference */

/*
 * What a reader accepts before it allocates (formats/graph-stream.md,
 * "Limits"): a hostile stream of a few KB must not make a tool allocate
 * gigabytes. A record's decompressed size (the sim record: this plus 20
 * bytes a task of its section), the header's arrays, a cov record's
 * names. A stream beyond a limit is refused with a message naming it.
 */
#define KG_RECORD_MAX (16u << 20)
#define KG_ITERS_MAX (1u << 20)
#define KG_TOOLS_MAX 1024u
#define KG_RANKS_MAX (1u << 20)
/* A task's structure tags (mb, ly, st) and group size (gs) are at most
 * this, its iteration (it) at most KG_ITER_MAX, each at least -1: beyond,
 * no real job, and tools that add one to them would overflow. */
#define KG_TAG_MAX ((int64_t)1 << 24)
#define KG_ITER_MAX ((int64_t)1 << 53)
/*
 * Every time and duration of a stream (a task's d, ts and od, an edge's
 * dl, the header's clk and t0, a sim record's makespan, starts and ends)
 * lies strictly between -KG_TIME_MAX and KG_TIME_MAX ns (2^53, about 104
 * days): the reader refuses others, the writer will not write them. The
 * sum or difference of two such times fits an int64 with room to spare;
 * a tool that adds more (a simulated chain of tasks, a clock offset and
 * a base) checks that its result is still in range. A profiler cost or
 * step time (1.8 `pc`, `pcost`, `ustep`) is 0 to KG_TIME_MAX.
 */
#define KG_TIME_MAX ((int64_t)1 << 53)
/* t in the format's range of times (above). */
#define KG_TIME_OK(t) ((t) > -KG_TIME_MAX && (t) < KG_TIME_MAX)
/*
 * A header's tbase (an epoch: a trace's time origin, ns since 1970) lies
 * strictly between -KG_TBASE_MAX and KG_TBASE_MAX (2^62, the year 2116):
 * a time plus its base fits an int64, and two bases' difference too.
 */
#define KG_TBASE_MAX ((int64_t)1 << 62)
#define KG_COV_MAX 4096u
/*
 * A zstd frame's records are used only once the frame ended and its
 * checksum was checked, for frames of up to this many bytes decompressed
 * (kgraph's writers end one every 2 MiB); a longer frame's records are
 * used as they come, before its checksum.
 */
#define KG_FRAME_HOLD (8u << 20)

enum kg_proc_kind { KG_THREAD, KG_STREAM };

enum kg_task_kind { KG_CPU, KG_RT, KG_KERN, KG_COLL, KG_CPY, KG_SET, KG_NTASK_KIND };

enum kg_edge_kind {
	KG_E_THREAD, KG_E_HANDOFF, KG_E_LAUNCH, KG_E_STREAM, KG_E_EVENT,
	KG_E_SYNC, KG_E_RANK, KG_NEDGE_KIND
};

enum kg_how { KG_HOW_TRACE, KG_HOW_EXPLICIT, KG_HOW_INFERRED, KG_NHOW };

enum kg_coll {
	KG_COLL_NONE, KG_COLL_ALLREDUCE, KG_COLL_ALLGATHER,
	KG_COLL_REDUCESCATTER, KG_COLL_ALLTOALL, KG_COLL_BROADCAST,
	KG_COLL_REDUCE, KG_COLL_SENDRECV, KG_COLL_SEND, KG_COLL_RECV, KG_NCOLL
};

enum kg_phase { KG_PH_NONE, KG_PH_FWD, KG_PH_BWD, KG_PH_OPT, KG_PH_OTHER, KG_NPHASE };

extern const char *const kg_task_kind_name[KG_NTASK_KIND];
extern const char *const kg_edge_kind_name[KG_NEDGE_KIND];
extern const char *const kg_how_name[KG_NHOW];
extern const char *const kg_coll_name[KG_NCOLL];
extern const char *const kg_phase_name[KG_NPHASE];
/* Index of name in table[0..n), or -1. */
int kg_lookup(const char *const *table, int n, const char *name, size_t len);

struct kg_header {
	uint32_t major, minor;
	const char *producer; /* required */
	const char *source;   /* "" if unknown */
	int64_t rank, world;  /* -1 if unknown */
	uint64_t xxh3;
	int64_t tbase;
	const int64_t *iters;
	size_t niters;
	const char *const *tools;
	size_t ntools;
	/* A job section (graph-deps --merge): the ranks it holds, the clock
	 * offset taken off each one's times, and when each one's graph
	 * begins after the job's start, ns. */
	const int64_t *ranks, *clk, *t0;
	size_t nranks; /* 0: one rank's section */
	/* Read only (1.4): the section's place in the run of sections its
	 * writer wrote, from 0, and the run's length; 0 sections: not said.
	 * Writers say it from their own state (kg_writer_run). */
	uint64_t section, sections;
	/* 1.5: the GPU the rank ran on (the trace's deviceProperties entry
	 * for the device its kernels ran on): its name ("" if unknown), total
	 * memory in bytes and SM count (-1 if unknown). A job section says
	 * them only when every rank's agree. */
	const char *gpu;
	int64_t gpu_mem, gpu_sms;
	/* 1.8: the profiler's own cost in the host tasks (their `pc`): how
	 * it was found ("calibrated" to a step time given, "estimated"; NULL
	 * or "": none), the cost of one profiled host event, ns, and the
	 * step time it was calibrated to, ns (-1 when not said) */
	const char *pcal;
	int64_t pcost, ustep;
	/* The header a writer that failed puts where its stream stops
	 * (formats/graph-stream.md, Failed writers): the tool that failed
	 * first in a pipe; NULL in any other header. A reader stops there
	 * with an error and sets kg_reader.failed. */
	const char *failed;
};

struct kg_proc {
	uint32_t id;
	int kind; /* enum kg_proc_kind */
	int64_t pid, tid;
	uint32_t name; /* KG_NONE if none */
	int main;
	int64_t rank;  /* in a job section; -1: the header's */
};

struct kg_task {
	uint32_t id, proc, name;
	int kind; /* enum kg_task_kind */
	int64_t dur, ts, odur; /* odur == dur when not different */
	int64_t iter;
	int64_t corr;
	uint32_t op, shapes;
	uint32_t itypes; /* 1.5: str id of the op's Input type list, KG_NONE */
	uint32_t ocall;  /* 1.6: which call of that op (opaque, per section), KG_NONE */
	uint64_t bytes;
	int coll; /* enum kg_coll */
	int64_t gsize, seq;
	uint32_t pg, pgr, dtype;
	int phase; /* enum kg_phase */
	int64_t mb, layer, stage;
	/* GPU allocator events made by the task (profile_memory): the most
	 * bytes allocated and reserved after one of them, -1 if it made
	 * none; the bytes it allocated less those it freed; and (1.5) the
	 * most bytes above the level before its first event that it held
	 * after one of them (mpeak less that level: the same wherever the
	 * task is replayed, so it rides along with copies), -1 unknown */
	int64_t mpeak, mrpeak, mnet, mexc;
	/* 1.8: ns of the task's host time (its duration and the gap before
	 * it on its thread) that is the profiler's own cost (`pc`), 0 */
	int64_t prof;
	/* 1.9: forward work run again in the backward (`rc`): activation
	 * recomputation; its phase is the backward's */
	int recomp;
};

struct kg_edge {
	uint32_t src, dst;
	int kind; /* enum kg_edge_kind */
	int how;  /* enum kg_how */
	int64_t delay;
	uint32_t on, via, at; /* KG_NONE if absent */
	int graph;            /* 1.7: a launch edge from a graph launch (gl) */
};

/* A `sim` record: simulated start and end of every task, by task id,
 * and (1.8) the same without the profiler's cost, where the section has
 * one. */
struct kg_sim {
	uint64_t tasks;
	int64_t makespan;
	const int64_t *ss, *se; /* NULL when the record has none (1.0) */
	const int64_t *uss, *use; /* NULL when it has none */
	size_t n;
};

struct kg_cov {
	size_t n, cap;
	char **name; /* owned */
	int64_t *val;
};

/* A task with every optional field at its default. */
void kg_task_init(struct kg_task *t);
void kg_edge_init(struct kg_edge *e);

void kg_cov_init(struct kg_cov *c);
void kg_cov_release(struct kg_cov *c);
/* Add v to the count called name, creating it at 0 if new. */
void kg_cov_add(struct kg_cov *c, const char *name, int64_t v);
int64_t kg_cov_get(const struct kg_cov *c, const char *name);

/* Writer ------------------------------------------------------------- */

struct zq;
struct zin;

struct kg_writer {
	struct zq *zq;     /* compresses and writes onto the FILE* (common/zq.h) */
	msgpack_sbuffer sbuf;
	msgpack_packer pk;
	uint64_t ntasks, nedges, nprocs, nstrs;
	size_t framed;     /* bytes given to the current frame, 0: none open */
	uint64_t run_n, run_k; /* the run of sections the headers announce */
	int failed;
	char err[256];
};

/*
 * The zstd level every tool writes at: on our records level 1 is both
 * faster and smaller than 3 (kineto2graph's small tracegen job: 4.43 MB
 * against 4.76, 1.02 s of CPU against 1.05), and -1 (zstd's --fast=1)
 * faster again both ways, at about the same size (the 15B job: writing
 * 6% and reading 7% less CPU; the 256-rank job's merge 1% smaller, its
 * simulation 4% larger; measured when the level was chosen: git log).
 */
#define KG_LEVEL -1

int kg_writer_init(struct kg_writer *w, FILE *fp, int level);
/* At most n threads compress (zq_threads; before the first record). */
void kg_writer_threads(struct kg_writer *w, int n);
int kg_write_header(struct kg_writer *w, const struct kg_header *h);
/*
 * Say how many sections the next headers begin (1.4 `section` and
 * `sections`): the next n headers written are sections 0 to n - 1 of a
 * run, so that a reader can tell a stream cut between two sections from a
 * whole one. 0 (the default): say nothing. A writer that does not know
 * the count when it writes the first header says nothing.
 */
void kg_writer_run(struct kg_writer *w, uint64_t n);
/* The same, the next header being section k of the n (k < n): for a
 * worker that writes one section of a run that others write the rest
 * of (kineto2graph --jobs). */
void kg_writer_run_at(struct kg_writer *w, uint64_t n, uint64_t k);
/*
 * For a filter that writes one section for each it reads: the next
 * header written says the place that h, just read, said (nothing if it
 * said nothing).
 */
void kg_writer_follow(struct kg_writer *w, const struct kg_header *h);
/* A header read from another stream, with `tool` added to its tools. */
int kg_write_header_tool(struct kg_writer *w, const struct kg_header *h, const char *tool);
int kg_write_str(struct kg_writer *w, uint32_t id, const char *s, size_t len);
int kg_write_proc(struct kg_writer *w, const struct kg_proc *p);
int kg_write_task(struct kg_writer *w, const struct kg_task *t);
int kg_write_edge(struct kg_writer *w, const struct kg_edge *e);
int kg_write_cov(struct kg_writer *w, const struct kg_cov *c);
/*
 * The `sim` record graphsim adds to a section: the simulated start and
 * end of each of its n tasks (by id), written as steps and lengths
 * (`ssd`, `sd`), and the makespan; with uss and use (NULL: none) the
 * same without the profiler's cost (`ussd`, `usd`). The reader gives
 * them back as starts and ends, whichever form it read.
 */
int kg_write_sim(struct kg_writer *w, size_t n, const int64_t *ss, const int64_t *se,
    const int64_t *uss, const int64_t *use);
/* Close the section: the `end` record with the counts since the header. */
int kg_write_end(struct kg_writer *w);
/*
 * A record's bytes as read (kg_rec.bytes), passed on unchanged; counted
 * by type for the end record, which is itself written anew from the
 * counts (the caller may have dropped records).
 */
int kg_write_bytes(struct kg_writer *w, const char *bytes, size_t n, int type);
/*
 * Whole zstd frames read from another stream (kg_reader_take_frames),
 * written as they are after closing the current frame. The caller counts
 * the records in them with kg_writer_count.
 */
int kg_write_frames(struct kg_writer *w, const void *z, size_t n);
void kg_writer_count(struct kg_writer *w, int type);
/* End the zstd frame and flush. Call once, after the last section. */
int kg_writer_finish(struct kg_writer *w);
void kg_writer_release(struct kg_writer *w);

/* Reader ------------------------------------------------------------- */

enum kg_rec_type {
	KG_R_EOF = 0, KG_R_HEADER, KG_R_STR, KG_R_PROC, KG_R_TASK, KG_R_EDGE,
	KG_R_COV, KG_R_SIM, KG_R_END, KG_R_OTHER
};

struct kg_rec {
	int type;
	const char *bytes;         /* the record's MessagePack bytes, as read; */
	size_t nbytes;             /* valid until the next kg_read */
	uint64_t pos;              /* where they start in the decompressed stream */
	struct kg_header header;
	struct kg_proc proc;
	struct kg_task task;
	struct kg_edge edge;
	struct kg_cov cov;
	struct kg_sim sim;
	uint32_t str_id;
};

/* A zstd frame the reader has decompressed whole (for kg_reader_take_frames). */
struct kg_zframe {
	size_t zend;   /* end of its compressed bytes in kg_reader.z */
	uint64_t dend; /* end of its bytes in the decompressed stream */
};

struct kg_reader {
	FILE *fp;
	ZSTD_DCtx *dctx;
	char *buf;         /* decompressed bytes; records are parsed from off */
	size_t len, off, cap;
	uint64_t base;     /* position of buf[0] in the decompressed stream */
	unsigned char *in;
	size_t inlen, inpos;
	size_t frame_left; /* last ZSTD_decompressStream hint; 0 between frames */
	int eof, seen_bytes;
	uint64_t nrec;     /* records read, for messages (1-based once read) */
	int in_section;
	uint64_t run_n, run_k; /* the run the last header announced, its next section */
	uint64_t ntasks, nedges, nprocs, nstrs;
	/* The current section's strings, header arrays. */
	char **str;
	size_t nstr, capstr;
	int64_t *iters;
	size_t niters, capiters;
	int64_t *ranks, *clk, *t0;
	size_t nranks, capranks, nclk, capclk, nt0, capt0;
	char **tools;
	size_t ntools, captools;
	char *producer, *source, *gpu, *pcal;
	uint64_t hrec;     /* the current section's header: its record number */
	unsigned char *rseen; /* a job section: its ranks that have a proc */
	size_t caprseen;
	char *failed;      /* after an error: the failed header's tool, or NULL */
	int64_t *ss, *se, *uss, *use; /* the last sim record's arrays */
	size_t capsim;
	/* With keep_frames: compressed bytes of the frames not yet taken, and
	 * the decompressed bytes from `mark` on (see kg_reader_take_held). */
	int keep_frames;
	/* Set before the first read: decompress on this thread, never on
	 * one of its own (common/zin.h; for readers already run on
	 * threads of their own, as graph-deps --merge's). */
	int no_ahead;
	struct zin *zin;   /* the thread decompressing ahead, or NULL */
	int zin_tried;
	/* Set before the first read: the stream is one section of a run,
	 * read alone (graph-deps --merge reads again what it held); its
	 * header may be any section of the run, and nothing is told
	 * missing. The caller stops at its end record. */
	int one_section;
	/* Set before the first read: an edge may name a task not yet
	 * defined in its section (graph-deps --check counts such edges);
	 * any other reader refuses it ("edge to an unknown task"). */
	int unknown_edges;
	uint64_t mark;
	unsigned char *z;
	size_t zlen, zcap, ztaken;
	struct kg_zframe *fr;
	size_t nfr, capfr;
	/* For the decoder: the names of each enum (kind of task, of edge,
	 * how, coll, phase) as numbers made of their first 8 bytes, and
	 * their lengths; kg_reader_init sets them. */
	uint64_t ecode[5][16];
	unsigned char elen[5][16];
	char err[256];
};

/* A record to read into, and its release (the coverage map it may own). */
void kg_rec_init(struct kg_rec *rec);
void kg_rec_release(struct kg_rec *rec);

int kg_reader_init(struct kg_reader *r, FILE *fp);
void kg_reader_release(struct kg_reader *r);
/*
 * Read the next record into *rec. Returns its type (> 0), KG_R_EOF at a
 * clean end of the stream (after an `end` record), or -1 with r->err set.
 * rec's pointers stay valid until the next call.
 */
int kg_read(struct kg_reader *r, struct kg_rec *rec);
/*
 * With r->keep_frames set before the first read: when whole zstd frames
 * end exactly at decompressed position `pos` (a record boundary: a
 * record's pos, or pos + nbytes), point *z at their compressed bytes,
 * from the end of those taken last, and return their length; else 0.
 * The bytes stay valid until the next kg_read. Frames that end before
 * pos but not at it are kept: they go with the next frames taken.
 */
size_t kg_reader_take_frames(struct kg_reader *r, uint64_t pos, const void **z);
/*
 * With keep_frames: the decompressed bytes from the end of those taken
 * last (by this call or kg_reader_take_frames) to `pos`, a record
 * boundary at or before the end of the last record read. They stay
 * valid until the next kg_read.
 */
size_t kg_reader_take_held(struct kg_reader *r, uint64_t pos, const char **p);
/* The text of string id in the current section, or NULL. */
const char *kg_str(const struct kg_reader *r, uint32_t id);

#endif
