/*
 * tracegen's private parts: synthetic Kineto traces of a Megatron-style
 * GPT training job, one file per rank.
 *
 * A job is generated in three steps. job.c runs the program every rank
 * runs (the host's ops, launches, event records and waits, blocking
 * calls; the generator below) twice: once to record what the simulation
 * needs (the GPU ops of each rank with their durations, the dependencies
 * between them and the calls that block the host), once per written
 * rank to emit the trace. jobsim.c places every GPU op of every rank and
 * ends every blocking call with graphsim's simulator (common/sim.h),
 * collectives ending together on all their participants. emit.c writes
 * gzip-compressed JSON.
 *
 * The timing model (hw.c, model.c) is tracegen's own: the ground truth of
 * the traces. No other tool may include this header or link these files;
 * prediction code must estimate from the traces it is given.
 *
 * Time is integer nanoseconds everywhere; the host clock of the record
 * pass is local (it does not see the time a blocking call waits), and the
 * simulation turns it into the job's clock by the shift each blocking
 * call adds (see struct blk).
 *
 * Calls between the files go one way, down this list; no file calls one
 * above it:
 *
 *     tracegen.c         calls job.c, jobsim.c, hw.c, emit.c
 *     job.c              calls schedule.c, coll.c, nccl.c, kernels.c, model.c, emit.c
 *     jobsim.c           calls emit.c
 *     schedule.c         calls layers.c, mem.c, coll.c, calls.c, emit.c
 *     layers.c           calls mem.c, coll.c, calls.c, emit.c
 *     mem.c              calls calls.c, kernels.c, emit.c
 *     coll.c             calls calls.c, nccl.c, model.c, emit.c
 *     calls.c            calls nccl.c, kernels.c, model.c, emit.c
 *     nccl.c             calls emit.c
 *     kernels.c          calls model.c
 *     model.c, hw.c,
 *     emit.c             call none of them
 *
 * So what a collective's launch writes of it (nccl.c) is below both
 * calls.c, which launches it, and coll.c, which makes it; the streams'
 * ids in the trace (tg_stream_id) are emit.c's.
 */
#ifndef TG_H
#define TG_H

#include <stddef.h>
#include <stdint.h>

#define TG_NONE UINT32_MAX
#define TG_UNSET INT64_MIN

/* A hardware profile: what the timing model knows of a GPU and its links. */
struct tg_hw {
	char name[32];     /* profile name, for messages */
	char gpu[96];      /* deviceProperties name */
	char arch[8];      /* "sm90", "sm80": kernel names */
	int sms;           /* streaming multiprocessors */
	int cc_major, cc_minor;
	double mem_gib;    /* device memory */
	double tflops;     /* dense BF16 peak, TFLOP/s */
	double mem_gbps;   /* device memory bandwidth, GB/s */
	double launch_us;  /* host time of a kernel launch call */
	double gpu_lat_us; /* launch call end to kernel start, idle stream */
	double event_us;   /* end of an op to the start of one waiting on it (event) */
	double nvlink_gbps, nvlink_us; /* intra-node: bus bandwidth, per-step latency */
	double net_gbps, net_us;       /* inter-node, per GPU */
	double host_scale; /* host op times multiply by this */
};

int hw_builtin(const char *name, struct tg_hw *hw);
extern const char hw_names[];  /* the built-in names, for messages */
/* Read a profile file of `key value` lines; -1 with err set on bad data. */
int hw_load(const char *path, struct tg_hw *hw, char *err, size_t errlen);

enum { SCHED_1F1B, SCHED_GPIPE };
/* Activation recomputation (layers.c). */
enum { RC_NONE, RC_FULL, RC_SELECTIVE };

/* The job as configured: model, parallelism, hardware, options. */
struct tg_cfg {
	int64_t layers, hidden, ffn, heads, seq, vocab, mbs, microbatches;
	int64_t tp, pp, dp, gpus_per_node, iterations;
	uint64_t seed;
	int schedule;
	int sp;            /* sequence parallelism (Megatron's) */
	int sync_records;  /* cuda_sync records */
	int annotations;   /* microbatch and layer record_function ranges */
	int memory;        /* the allocator's [memory] events (tracegen(1), MEMORY MODEL) */
	int recompute;     /* RC_NONE, RC_FULL, RC_SELECTIVE */
	int64_t clock_skew; /* ns: each rank's clock off by up to this much */
	struct tg_hw hw;
};

/* Streams of a rank, and their CUDA stream ids in the trace. */
enum { ST_COMPUTE, ST_TP, ST_DP, ST_MP, ST_PREV, ST_NEXT, NSTREAM };
extern const int tg_stream_id[NSTREAM];  /* emit.c */

/* Process-group kinds. P2P groups are directed pairs: (sender, direction). */
enum { G_TP, G_DP, G_PP, G_MP, NGKIND };

/* Collective kinds and NCCL protocols. */
enum { C_ALLREDUCE, C_BROADCAST, C_SEND, C_RECV, C_ALLGATHER, C_REDUCESCATTER };
enum { P_LL, P_LL128, P_SIMPLE };

/*
 * A GPU op of one rank, numbered in launch order. `ready` is the time it
 * may start on an idle stream (its launch call's end plus the launch
 * latency), host-local: the simulation adds the shift of the blocking
 * calls before its launch. A collective's ops all end at the last
 * arrival plus its instance's transfer.
 */
struct gop {
	int64_t ready, dur;
	int64_t start, end;  /* simulated; TG_UNSET until placed */
	uint32_t dep;        /* first of ndep entries in the rank's dep array */
	uint32_t inst;       /* collective instance, TG_NONE for computation */
	int32_t gap;         /* GPU time from its stream's previous op to its start */
	int32_t egap;        /* ... from the end of an op it waits for (event) */
	uint16_t ndep;
	uint8_t stream;
};

/*
 * A call that blocks the host until GPU ops end (a synchronize, a
 * blocking copy). While recording, the host clock goes on as if it took
 * `min`; the simulation ends it at the later of start + min and the
 * latest end of its deps plus `wake`, and the clock of everything after
 * it moves by the difference.
 */
struct blk {
	int64_t start, min, wake; /* host-local start; own time; wake-up after the wait */
	int64_t end;              /* simulated (job clock) */
	uint32_t ngop;            /* GPU ops launched before the call returns */
	uint32_t dep;
	uint16_t ndep;
};

/* What the simulation needs of one rank, and what it gives back. */
struct tg_rank {
	struct gop *gop;
	size_t ngop, capgop;
	uint32_t *dep;
	size_t ndep, capdep;
	struct blk *blk;
	size_t nblk, capblk;
	uint32_t *sq[NSTREAM]; /* gop indices per stream, in launch order */
	size_t nsq[NSTREAM], capsq[NSTREAM];
	int64_t t0;            /* where its host clock starts */
};

/* One collective (or one send/recv pair), as all its participants see it. */
struct inst {
	int64_t xfer;
	uint16_t n;          /* participants */
	uint8_t proto, kind;
};

/* A data-parallel gradient bucket of a pipeline stage. */
struct bucket {
	int64_t numel;
	int after;   /* launched after the backward of this item (see layers.c) */
};

/* The job: configuration, derived sizes, and every rank's record. */
struct tg_job {
	struct tg_cfg c;
	int world;
	int64_t lps;            /* layers per stage */
	struct tg_rank *rk;     /* [world] */
	struct inst *inst;
	size_t ninst, capinst;
	/* Instances of each process group, in order. */
	uint32_t **ginst;
	size_t *nginst, *capginst;
	size_t ngroups;
	int gbase[NGKIND + 1];  /* first group id of each kind; P2P after */
	/* Buckets per stage. */
	struct bucket **bk;
	int *nbk;
	/* Kernel templates (kernels.c). */
	struct kt *kt;
	int nkt;
	struct ot *ot;
	int not;
	struct stagek *sk;      /* per stage: its own kernels */
};

/* model.c: the hidden timing model. */
uint64_t tg_hash(uint64_t a, uint64_t b, uint64_t c);
double tg_unit(uint64_t h);   /* [0, 1) */
double tg_gauss(uint64_t h);  /* about N(0, 1), within +-3.5 */

struct gemm_shape {
	int tm, tn, block, smem, regs;
	int64_t gx, gy;
};
int64_t model_gemm(const struct tg_hw *hw, int64_t m, int64_t n, int64_t k,
    int fp32_out, struct gemm_shape *gs);
int64_t model_mem(const struct tg_hw *hw, double bytes);
int64_t model_flash(const struct tg_hw *hw, int64_t b, int64_t heads, int64_t s,
    int64_t d, int backward, int64_t *blocks);
int64_t model_coll(const struct tg_hw *hw, int kind, int64_t bytes, int n,
    int internode, int *proto);
int64_t model_copy(const struct tg_hw *hw, int64_t bytes, int d2h);

/* job.c */
int job_init(struct tg_job *J, const struct tg_cfg *c, char *err, size_t errlen);
void job_release(struct tg_job *J);
/* The record pass over every rank. */
void job_record(struct tg_job *J);
struct jw;
/* The emit pass of one rank into w (after job_sim). */
void job_emit(struct tg_job *J, int rank, struct jw *w);
/* The program job.c runs is below (the generator). */

/* jobsim.c: place every GPU op and end every blocking call (after
 * job_record). -1 with err set on a deadlock (a bug in the program). */
int job_sim(struct tg_job *J, char *err, size_t errlen);

/*
 * emit.c: a JSON writer into a gzip file. Text goes into a growable
 * buffer; jw_flush compresses what no open event still needs to patch.
 * Errors stick: jw_close reports the first.
 */
struct jw {
	char *b;
	size_t n, cap;
	void *z;          /* z_stream */
	unsigned char *zout;
	int fd;
	int err;          /* errno of the first failure, 0 if none */
	uint64_t raw;     /* JSON bytes compressed so far */
	int nev;          /* events written (for separators) */
};
int jw_open(struct jw *w, int fd);
void jw_put(struct jw *w, const char *s, size_t n);
void jw_puts(struct jw *w, const char *s);
void jw_str(struct jw *w, const char *s);     /* a JSON string, quoted */
void jw_int(struct jw *w, int64_t v);
void jw_us(struct jw *w, int64_t ns);         /* microseconds, 3 decimals */
size_t tg_fmt_us(char *buf, int64_t ns);     /* the same into buf (32 bytes) */
void jw_insert(struct jw *w, size_t at, const char *s, size_t n);
void jw_flush(struct jw *w);
int jw_close(struct jw *w);                   /* 0, or the errno */

/* Kineto-shaped events. ev_x_* write a complete event ('X') in parts. */
void ev_begin(struct jw *w);
void ev_x_head(struct jw *w, const char *cat, const char *name, int64_t pid,
    int64_t tid, int64_t ts);
void ev_x_dur(struct jw *w, int64_t dur);
void ev_flow(struct jw *w, int start, uint64_t id, int64_t pid, int64_t tid,
    int64_t ts, const char *cat);
void ev_meta(struct jw *w, const char *name, int64_t pid, int64_t tid, int64_t ts,
    const char *key, const char *sval, int64_t ival);

/*
 * The generator: one rank's program, in either mode (job.c). Its state
 * is struct gen; its parts are calls.c (the host's calls), coll.c (the
 * process groups and collectives; nccl.c their metadata), mem.c (the
 * allocator's events), layers.c (a micro-batch's forward and backward)
 * and schedule.c (an iteration). Nothing in the program's control flow may depend on
 * G->emit, or the record and emit passes would part.
 */

/* The job's clock starts here in the trace (ns after baseTimeNanoseconds). */
#define TS0 INT64_C(1000000000000)
#define BASE_NS INT64_C(1735689600000000000)

/* Host times, ns, before the profile's host_scale and noise. */
#define H_ENTER 1800    /* inside an op before its first child */
#define H_EXIT 800      /* after its last child */
#define H_PY 5000       /* Python between modules */
#define H_LAUNCH_EX 9000
#define H_MEMCPY 6500
#define H_MEMSET 5000
#define H_EVREC 1800
#define H_WAIT 1400
#define H_SYNC 2500     /* a synchronize's own time */
#define H_WAKE 3000     /* from the end of the work waited for to the return */
#define H_SWITCH 20000  /* the autograd thread takes over, or hands back */
#define H_NODE 3000     /* the autograd engine between nodes */
#define H_SMALLRT 1200  /* cudaStreamIsCapturing and the like */

struct evt {         /* a CUDA event as recorded */
	uint32_t gop;    /* the op it captured, TG_NONE for none */
	int stream;
	uint64_t corr;   /* of the cudaEventRecord call */
	uint32_t id;
};

struct frame {
	int64_t ts;
	size_t pos;      /* where the duration goes */
	int64_t ext;
	int deferred;    /* written when it closes (ProfilerStep) */
	const char *cat;
	char name[64];
};

#define MAXDEPTH 32

struct gen {
	struct tg_job *J;
	const struct tg_cfg *c;
	struct tg_rank *rk;
	const struct stagek *sk;
	int rank, stage, tpr, dpr, dev, emit;
	int first, last;       /* first and last pipeline stage */
	struct jw *w;
	int64_t now;
	uint64_t nr;
	int th;
	int64_t pid, tid[2];
	uint32_t ngop, nblk;
	uint32_t lastop[NSTREAM];
	/* Event waits pending on each stream until its next launch: per
	 * recording stream, the latest op waited for (ops of one stream end
	 * in order, so it stands for the earlier ones). */
	uint32_t pend[NSTREAM][NSTREAM];
	uint64_t corr, ext, rfid, evidx, seqnr;
	uint32_t evid;
	struct frame st[MAXDEPTH];
	int depth, open;       /* frames, and those with a hole in the buffer */
	uint32_t gseq[NGKIND];
	uint32_t send_seq[2], recv_seq[2]; /* [0]: with the next stage, [1]: the previous */
	uint64_t *fwdseq;      /* per micro-batch and item: the first sequence number */
	int nitems;
	double speed;
	struct evt *bdone;     /* per bucket: the all-reduce's end */
	int64_t step_lo, step_hi, t_first, t_last;
	int64_t mlevel;        /* the allocator: bytes held above the step's state */
	int64_t mstate, mres;  /* the state (parameters, master copy, Adam), the most held */
	int grads;             /* the gradients are allocated this iteration */
	uint64_t maddr;
	char pgname[NGKIND][16];
	char *pgranks[NGKIND];
	int gsize[NGKIND];
	int internode[NGKIND];
	int gstart[NGKIND], gstride[NGKIND]; /* -1: not an arithmetic progression */
};

/* calls.c: the host's calls. */
void advance(struct gen *G, double base);
int64_t tid_of(const struct gen *G);
/* A CPU op or an annotation opened (seq >= 0: an autograd node's), and
 * the innermost closed. */
void open_op(struct gen *G, const char *cat, const char *name, int64_t seq,
    const char *args, int deferred);
void close_op(struct gen *G);
void op(struct gen *G, int o, int64_t seq);
void op_dyn(struct gen *G, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void annot(struct gen *G, const char *name);
uint64_t rt(struct gen *G, const char *name, int cbid, double base);
struct collmeta;
/* A GPU op launched: kernel template kt, or collective instance inst. */
uint32_t launch(struct gen *G, int kt, int s, uint32_t inst, const struct collmeta *m,
    int blocking);
uint32_t kern(struct gen *G, int kt);
/* One op (with a sequence number or -1) launching one kernel; two or
 * three ops nested around it. */
void op1(struct gen *G, int o, int64_t seq, int kt);
void op2(struct gen *G, int o1, int64_t seq, int o2, int kt);
void op3(struct gen *G, int o1, int64_t seq, int o2, int o3, int kt);
struct evt event_record(struct gen *G, int s);
void stream_wait(struct gen *G, int s, const struct evt *e);
void synchronize(struct gen *G, const char *api, int cbid, const char *kind, int stream,
    const uint32_t *ops, int nops);
void thread_to(struct gen *G, int th);

/* coll.c: process groups and collectives. */
enum { DT_BF16, DT_F32, DT_I64 };

struct collmeta {
	int gkind, ckind, dtype, redop;
	int64_t nelems;
};

int group_members(const struct tg_job *J, int kind, int r, int *out);
int group_id(const struct tg_job *J, int kind, int r);
int node_of(const struct tg_job *J, int r);
int coll(struct gen *G, int gk, int ckind, int dtype, int redop, int64_t nelems, int wait,
    struct evt *done);

enum { SEND_NEXT = 1, RECV_PREV = 2, SEND_PREV = 4, RECV_NEXT = 8 };
/* The sends and receives of ops (SEND_NEXT | ...) a stage has, in
 * Megatron's order; the compute stream waits for them. */
void p2p(struct gen *G, int ops);

/* nccl.c: a collective's NCCL metadata. */
extern const char *const gdesc[NGKIND];  /* each kind's Process Group Description */
/* A collective's NCCL metadata into w: for the kernel, or (op) for
 * record_param_comms. */
void write_nccl_meta(struct gen *G, struct jw *w, const struct collmeta *m, int op);
void nccl_name(char *buf, size_t n, const struct collmeta *m, int proto);

/* mem.c: the allocator's events. */
void mem_event(struct gen *G, int64_t bytes);
void mem_grads(struct gen *G, int mb, int item);
int64_t mem_layer(const struct gen *G);
int64_t mem_layer_kept(const struct gen *G);
int64_t mem_logits(const struct gen *G);

/* layers.c: a micro-batch's forward and backward steps. */
void forward_step(struct gen *G, int mb);
void backward_step(struct gen *G, int mb, int lastmb);

/* schedule.c: one iteration, ProfilerStep#step. */
void iteration(struct gen *G, int64_t step);

#endif
