/*
 * The job: the Megatron-style program every rank runs, written once and
 * run in two modes. Recording (job_record) keeps what the simulation
 * needs: each GPU op with its modelled duration and the ops it waits
 * for, and each call that blocks the host. Emitting (job_emit) runs the
 * same program for one rank again, draws the same random numbers in the
 * same order, and writes the events with the times the simulation gave.
 * Nothing in the control flow may depend on the mode, or the two passes
 * would part.
 *
 * The model: a GPT of `layers` transformer layers cut into `pp` stages,
 * each layer's weights split `tp` ways (Megatron's column- and row-
 * parallel linears, an all-reduce after attention and after the MLP in
 * the forward pass, and one overlapped with each weight-gradient GEMM in
 * the backward pass), replicated `dp` ways with gradient buckets
 * all-reduced while the backward pass of the last micro-batch runs.
 * Ranks are laid out tensor-parallel fastest, then data-parallel, then
 * pipeline stage: rank = tp_rank + tp * (dp_rank + dp * stage).
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "util.h"

const int tg_stream_id[NSTREAM] = { 7, 13, 17, 21, 25, 29 };

static const char *const gdesc[NGKIND] = {
	"TENSOR_MODEL_PARALLEL_GROUP", "DATA_PARALLEL_GROUP",
	"PIPELINE_MODEL_PARALLEL_GROUP", "MODEL_PARALLEL_GROUP"
};

/* The job's clock starts here in the trace (ns after baseTimeNanoseconds). */
#define TS0 INT64_C(1000000000000)
#define BASE_NS INT64_C(1735689600000000000)

/*
 * --clock-skew: rank r's host clock runs this far off the job's, in
 * [-skew, skew], from the seed and the rank alone. It moves the trace's
 * time origin (baseTimeNanoseconds), as a host whose clock is off would:
 * the events keep their times relative to it.
 */
static int64_t
clock_skew(const struct tg_cfg *cfg, int r)
{
	uint64_t z;

	if (cfg->clock_skew <= 0 || r == 0)
		return 0;
	z = cfg->seed * UINT64_C(0x9e3779b97f4a7c15) + (uint64_t)r * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	z ^= z >> 31;
	return (int64_t)(z % (uint64_t)(2 * cfg->clock_skew + 1)) - cfg->clock_skew;
}

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

/* Autograd nodes of a layer, in forward order (their sequence numbers). */
enum {
	N_LN1, N_QKV, N_ADD_QKV, N_SDPA, N_PROJ, N_ADD1, N_DROP1, N_RES1,
	N_LN2, N_FC1, N_ADD_FC1, N_GELU, N_FC2, N_ADD2, N_DROP2, N_RES2, N_PER_LAYER
};

/* ------------------------------------------------------------------ */
/* Process groups and collective instances. */

/* The ranks of the group of kind k that holds rank r, ascending. */
static int
group_members(const struct tg_job *J, int kind, int r, int *out)
{
	const struct tg_cfg *c = &J->c;
	int tp = (int)c->tp, dp = (int)c->dp, pp = (int)c->pp;
	int tpr = r % tp, dpr = r / tp % dp, st = r / (tp * dp), n = 0, i, j;

	switch (kind) {
	case G_TP:
		for (i = 0; i < tp; i++)
			out[n++] = r - tpr + i;
		break;
	case G_DP:
		for (i = 0; i < dp; i++)
			out[n++] = tpr + tp * (i + dp * st);
		break;
	case G_PP:
		for (i = 0; i < pp; i++)
			out[n++] = tpr + tp * (dpr + dp * i);
		break;
	default:
		for (i = 0; i < pp; i++)
			for (j = 0; j < tp; j++)
				out[n++] = j + tp * (dpr + dp * i);
		break;
	}
	return n;
}

static int
group_id(const struct tg_job *J, int kind, int r)
{
	const struct tg_cfg *c = &J->c;
	int tp = (int)c->tp, dp = (int)c->dp;
	int tpr = r % tp, dpr = r / tp % dp, st = r / (tp * dp);

	switch (kind) {
	case G_TP:
		return J->gbase[G_TP] + r / tp;
	case G_DP:
		return J->gbase[G_DP] + st * tp + tpr;
	case G_PP:
		return J->gbase[G_PP] + dpr * tp + tpr;
	default:
		return J->gbase[G_MP] + dpr;
	}
}

static int
node_of(const struct tg_job *J, int r)
{
	return (int)(r / J->c.gpus_per_node);
}

/* The k-th instance of group g, made by the first participant to reach it. */
static uint32_t
instance(struct tg_job *J, int g, uint32_t k, int n, int kind, int64_t bytes, int internode)
{
	struct inst *in;
	int proto;
	double f;

	if (k < J->nginst[g])
		return J->ginst[g][k];
	VEC_PUSH(J->ginst[g], J->nginst[g], J->capginst[g], (uint32_t)J->ninst);
	if (J->ninst >= J->capinst)
		grow(&J->inst, &J->capinst, J->ninst + 1, sizeof(*J->inst));
	in = &J->inst[J->ninst];
	in->n = (uint16_t)n;
	in->xfer = model_coll(&J->c.hw, kind, bytes, n, internode, &proto);
	f = 1.0 + 0.03 * tg_gauss(tg_hash(J->c.seed ^ 0xc011ec7ULL, (uint64_t)g, k));
	in->xfer = (int64_t)(in->xfer * f);
	in->proto = (uint8_t)proto;
	in->kind = (uint8_t)kind;
	return (uint32_t)J->ninst++;
}

/* ------------------------------------------------------------------ */
/* The generator: one rank's program, in either mode. */

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

static uint64_t
draw(struct gen *G)
{
	return tg_hash(G->c->seed, (uint64_t)G->rank, G->nr++);
}

/* Host time: the base scaled, with noise, and now and then a hiccup. */
static int64_t
host(struct gen *G, double base)
{
	double f = 1.0 + 0.12 * tg_gauss(draw(G));
	int64_t d;

	if (f < 0.6)
		f = 0.6;
	d = (int64_t)(base * G->c->hw.host_scale * f);
	if (tg_unit(draw(G)) < 1.0 / 4000)
		d += 30000 + (int64_t)(tg_unit(draw(G)) * 270000);
	return d;
}

static void
advance(struct gen *G, double base)
{
	G->now += host(G, base);
}

/* Flush the writer when nothing written is still open. */
static void
maybe_flush(struct gen *G)
{
	if (G->emit && G->open == 0 && G->w->n >= (1 << 20))
		jw_flush(G->w);
}

static int64_t
tid_of(const struct gen *G)
{
	return G->tid[G->th];
}

/*
 * An allocator event (--profile-memory): bytes allocated (freed when
 * negative) now, on the current thread, with the allocator's totals
 * after it, as PyTorch's profile_memory writes them. The model is
 * tracegen(1)'s MEMORY MODEL.
 */
static void
mem_event(struct gen *G, int64_t bytes)
{
	struct jw *w = G->w;

	if (!G->c->memory || bytes == 0)
		return;
	G->mlevel += bytes;
	if (G->mstate + G->mlevel > G->mres)
		G->mres = G->mstate + G->mlevel;
	if (!G->emit)
		return;
	ev_begin(w);
	jw_puts(w, "  {\n    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", "
	    "\"name\": \"[memory]\", \"pid\": ");
	jw_int(w, G->pid);
	jw_puts(w, ", \"tid\": ");
	jw_int(w, tid_of(G));
	jw_puts(w, ",\n    \"ts\": ");
	jw_us(w, TS0 + G->now);
	jw_puts(w, ",\n    \"args\": {\n      \"Total Reserved\": ");
	jw_int(w, G->mres);
	jw_puts(w, ", \"Total Allocated\": ");
	jw_int(w, G->mstate + G->mlevel);
	jw_puts(w, ", \"Bytes\": ");
	jw_int(w, bytes);
	jw_puts(w, ", \"Device Id\": ");
	jw_int(w, G->dev);
	jw_puts(w, ", \"Device Type\": 1, \"Addr\": ");
	jw_int(w, (int64_t)++G->maddr);
	jw_puts(w, "\n    }\n  }");
}

/* An item's float gradients, made by its first micro-batch's backward
 * (the others accumulate into them); gone after the optimizer's step. */
static void
mem_grads(struct gen *G, int mb, int item)
{
	int kind;

	if (mb == 0) {
		mem_event(G, 4 * item_params(G->J, G->stage, item, &kind));
		G->grads = 1;
	}
}

/* What one layer keeps for its backward, a micro-batch: Korthikanti et
 * al. 2022 (eq. 2) with flash attention (no s^2 term) and TP t: s b h
 * (10 + 24 / t) bytes. */
static int64_t
mem_layer(const struct gen *G)
{
	const struct tg_cfg *c = G->c;

	return c->seq * c->mbs * c->hidden * (10 + 24 / c->tp);
}

/* The logits the loss keeps, a micro-batch: float, vocabulary-parallel. */
static int64_t
mem_logits(const struct gen *G)
{
	const struct tg_cfg *c = G->c;

	return c->seq * c->mbs * (c->vocab / c->tp) * 4;
}

static void
write_ext_args(struct gen *G, int64_t ext, int64_t seq, const char *args)
{
	struct jw *w = G->w;

	jw_puts(w, ",\n    \"args\": {\n      \"External id\": ");
	jw_int(w, ext);
	jw_puts(w, ",\"Record function id\": ");
	jw_int(w, (int64_t)G->rfid++);
	if (seq >= 0) {
		jw_puts(w, ", \"Sequence number\": ");
		jw_int(w, seq);
		jw_puts(w, ", \"Fwd thread id\": ");
		jw_int(w, G->th == 0 ? 0 : 1);
	}
	if (args != NULL) {
		jw_puts(w, ", ");
		jw_puts(w, args);
	}
	jw_puts(w, ", \"Ev Idx\": ");
	jw_int(w, (int64_t)G->evidx++);
	jw_puts(w, "\n    }\n  }");
}

/*
 * Open a CPU op or an annotation. seq >= 0 gives it a sequence number
 * (an autograd node). The event is written now with a hole for its
 * duration, or, when deferred, whole when it closes.
 */
static void
open_op(struct gen *G, const char *cat, const char *name, int64_t seq, const char *args,
    int deferred)
{
	struct frame *f = &G->st[G->depth++];

	advance(G, H_ENTER / 2);
	f->ts = G->now;
	f->ext = (int64_t)G->ext++;
	f->cat = cat;
	f->deferred = deferred;
	if (deferred)
		snprintf(f->name, sizeof(f->name), "%s", name);
	if (G->emit && !deferred) {
		ev_x_head(G->w, cat, name, G->pid, tid_of(G), TS0 + f->ts);
		f->pos = G->w->n;
		write_ext_args(G, f->ext, seq, args);
		G->open++;
	}
	advance(G, H_ENTER / 2);
}

static void
close_op(struct gen *G)
{
	struct frame *f = &G->st[--G->depth];

	advance(G, H_EXIT);
	if (G->emit) {
		if (f->deferred) {
			ev_x_head(G->w, f->cat, f->name, G->pid, tid_of(G), TS0 + f->ts);
			ev_x_dur(G->w, G->now - f->ts);
			write_ext_args(G, f->ext, -1, NULL);
		} else {
			char t[32];

			jw_insert(G->w, f->pos, t, tg_fmt_us(t, G->now - f->ts));
			G->open--;
		}
	}
	maybe_flush(G);
}

/* A CPU op from a template; a forward autograd node starts a fwdbwd flow. */
static void
op(struct gen *G, int o, int64_t seq)
{
	open_op(G, "cpu_op", G->J->ot[o].name, seq, G->J->ot[o].args, 0);
	if (G->emit && seq >= 0 && G->th == 0)
		ev_flow(G->w, 1, (uint64_t)seq + 1, G->pid, tid_of(G),
		    TS0 + G->st[G->depth - 1].ts, "fwdbwd");
}

/* A CPU op whose shapes are known only here (emit mode renders them). */
static void
op_dyn(struct gen *G, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
op_dyn(struct gen *G, const char *name, const char *fmt, ...)
{
	char spec[256], *args = NULL;
	va_list ap;

	if (G->emit) {
		va_start(ap, fmt);
		vsnprintf(spec, sizeof(spec), fmt, ap);
		va_end(ap);
		args = shape_args(spec);
	}
	open_op(G, "cpu_op", name, -1, args, 0);
	free(args);
}

static void
annot(struct gen *G, const char *name)
{
	open_op(G, "user_annotation", name, -1, NULL, 0);
}

/*
 * The External id a runtime call carries: that of the innermost CPU op
 * around it (annotations do not count), or its own correlation.
 */
static int64_t
rt_ext(const struct gen *G, uint64_t corr)
{
	int i;

	for (i = G->depth - 1; i >= 0; i--)
		if (strcmp(G->st[i].cat, "cpu_op") == 0)
			return G->st[i].ext;
	return (int64_t)corr;
}

static void
write_rt(struct gen *G, const char *name, int cbid, int64_t ts, int64_t dur, uint64_t corr)
{
	struct jw *w = G->w;

	ev_x_head(w, "cuda_runtime", name, G->pid, tid_of(G), TS0 + ts);
	ev_x_dur(w, dur);
	jw_puts(w, ",\n    \"args\": {\n      \"External id\": ");
	jw_int(w, rt_ext(G, corr));
	jw_puts(w, ", \"cbid\": ");
	jw_int(w, cbid);
	jw_puts(w, ", \"correlation\": ");
	jw_int(w, (int64_t)corr);
	jw_puts(w, "\n    }\n  }");
}

/* A runtime call that puts no work on a stream. */
static uint64_t
rt(struct gen *G, const char *name, int cbid, double base)
{
	int64_t t0 = G->now, d = host(G, base);
	uint64_t corr = G->corr++;

	if (G->emit) {
		write_rt(G, name, cbid, t0, d, corr);
		ev_flow(G->w, 0, corr, G->pid, tid_of(G), TS0 + t0, "ac2g");
	}
	G->now = t0 + d;
	advance(G, 300);
	return corr;
}

/* Kernels say how long they were queued; copies and sets do not. */
static void
write_gpu_common(struct gen *G, int stream, uint64_t corr, int64_t ext, int kernel)
{
	struct jw *w = G->w;

	jw_puts(w, ",\n    \"args\": {\n      \"External id\": ");
	jw_int(w, ext);
	jw_puts(w, kernel ? ",\n      \"queued\": 0, \"device\": " : ",\n      \"device\": ");
	jw_int(w, G->dev);
	jw_puts(w, ", \"context\": 1,\n      \"stream\": ");
	jw_int(w, tg_stream_id[stream]);
	jw_puts(w, ", \"correlation\": ");
	jw_int(w, (int64_t)corr);
}

static const char *const dtname[] = { "BFloat16", "Float", "Long" };
enum { DT_BF16, DT_F32, DT_I64 };

struct collmeta {
	int gkind, ckind, dtype, redop;
	int64_t nelems;
};

static void
write_nccl_meta(struct gen *G, struct jw *w, const struct collmeta *m, int op)
{
	static const char *const cname[] = { "allreduce", "broadcast", "send", "recv",
		"allgather", "reducescatter" };
	int64_t in = m->nelems, out = m->nelems;

	if (m->ckind == C_ALLGATHER)
		in = m->nelems / G->gsize[m->gkind];
	else if (m->ckind == C_REDUCESCATTER)
		out = m->nelems / G->gsize[m->gkind];

	jw_puts(w, "\"Collective name\": \"");
	jw_puts(w, cname[m->ckind]);
	jw_puts(w, "\", \"In msg nelems\": ");
	jw_int(w, in);
	jw_puts(w, ", \"Out msg nelems\": ");
	jw_int(w, out);
	jw_puts(w, ", \"Group size\": ");
	jw_int(w, G->gsize[m->gkind]);
	jw_puts(w, ", \"dtype\": \"");
	jw_puts(w, dtname[m->dtype]);
	jw_puts(w, "\", \"In split size\": \"[]\", \"Out split size\": \"[]\", "
	    "\"Process Group Name\": \"");
	jw_puts(w, G->pgname[m->gkind]);
	jw_puts(w, "\", \"Process Group Description\": \"");
	jw_puts(w, gdesc[m->gkind]);
	jw_puts(w, "\", \"Process Group Ranks\": \"");
	jw_puts(w, G->pgranks[m->gkind]);
	jw_puts(w, "\"");
	if (op) {
		jw_puts(w, ", \"Global rank start\": ");
		jw_int(w, G->gstart[m->gkind]);
		jw_puts(w, ", \"Global rank stride\": ");
		jw_int(w, G->gstride[m->gkind]);
	}
}

static void
nccl_name(char *buf, size_t n, const struct collmeta *m, int proto)
{
	static const char *const pn[] = { "LL", "LL128", "SIMPLE" };
	static const char *const dn[] = { "bf16", "f32", "i64" };

	if (m->ckind == C_ALLREDUCE)
		snprintf(buf, n, "ncclDevKernel_AllReduce_%s_%s_RING_%s(ncclDevKernelArgsStorage<4096ul>)",
		    m->redop ? "Max" : "Sum", dn[m->dtype], pn[proto]);
	else if (m->ckind == C_BROADCAST)
		snprintf(buf, n, "ncclDevKernel_Broadcast_RING_%s(ncclDevKernelArgsStorage<4096ul>)",
		    pn[proto]);
	else if (m->ckind == C_ALLGATHER)
		snprintf(buf, n, "ncclDevKernel_AllGather_RING_%s(ncclDevKernelArgsStorage<4096ul>)",
		    pn[proto]);
	else if (m->ckind == C_REDUCESCATTER)
		snprintf(buf, n, "ncclDevKernel_ReduceScatter_Sum_%s_RING_%s(ncclDevKernelArgsStorage<4096ul>)",
		    dn[m->dtype], pn[proto]);
	else
		snprintf(buf, n, "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)");
}

/*
 * Launch a GPU op: kernel template kt on stream s (a collective when
 * inst != TG_NONE). The op waits for the event waits pending on s.
 * `blocking` makes the call last until the op has ended (a pageable
 * copy): the call is then a blocking call as well.
 */
static uint32_t
launch(struct gen *G, int kt, int s, uint32_t inst, const struct collmeta *m, int blocking)
{
	const struct kt *k = kt >= 0 ? &G->J->kt[kt] : NULL;
	const struct tg_hw *hw = &G->c->hw;
	double cost = inst != TG_NONE ? H_LAUNCH_EX : k->cat == K_MEMCPY ? H_MEMCPY :
	    k->cat == K_MEMSET ? H_MEMSET : hw->launch_us * 1000;
	int64_t t0 = G->now, d = host(G, cost);
	int64_t lat = (int64_t)(hw->gpu_lat_us * 1000 * (1.0 + 0.2 * tg_gauss(draw(G))));
	int32_t gap = (int32_t)(800 + 200 * tg_gauss(draw(G)));
	double ef = 1.0 + 0.2 * tg_gauss(draw(G));
	double f = 1.0 + 0.02 * tg_gauss(draw(G));
	int64_t wake = host(G, H_WAKE);
	uint64_t corr = G->corr++;
	uint32_t g = G->ngop++;
	int64_t end = t0 + d;
	int i;

	if (lat < 500)
		lat = 500;
	if (!G->emit) {
		struct tg_rank *rk = G->rk;
		struct gop o;

		memset(&o, 0, sizeof(o));
		o.ready = (blocking ? t0 + d / 2 : t0 + d) + lat;
		o.dur = k != NULL ? (int64_t)(k->dur * f * G->speed) : 0;
		o.start = o.end = TG_UNSET;
		o.inst = inst;
		o.gap = gap;
		o.egap = (int32_t)(hw->event_us * 1000 * ef);
		o.stream = (uint8_t)s;
		o.dep = (uint32_t)rk->ndep;
		for (i = 0; i < NSTREAM; i++)
			if (G->pend[s][i] != TG_NONE) {
				VEC_PUSH(rk->dep, rk->ndep, rk->capdep, G->pend[s][i]);
				o.ndep++;
			}
		VEC_PUSH(rk->gop, rk->ngop, rk->capgop, o);
		VEC_PUSH(rk->sq[s], rk->nsq[s], rk->capsq[s], g);
		if (blocking) {
			struct blk b;

			b.start = t0, b.min = d, b.wake = wake, b.end = TG_UNSET;
			b.ngop = G->ngop;
			b.dep = (uint32_t)rk->ndep;
			b.ndep = 1;
			VEC_PUSH(rk->dep, rk->ndep, rk->capdep, g);
			VEC_PUSH(rk->blk, rk->nblk, rk->capblk, b);
		}
	} else {
		const struct gop *o = &G->rk->gop[g];
		struct jw *w = G->w;
		int64_t ext = rt_ext(G, corr);
		const char *api = inst != TG_NONE ? "cudaLaunchKernelExC" :
		    k->cat == K_MEMCPY ? "cudaMemcpyAsync" : k->cat == K_MEMSET ?
		    "cudaMemsetAsync" : "cudaLaunchKernel";
		int cbid = inst != TG_NONE ? 430 : k->cat == K_MEMCPY ? 41 :
		    k->cat == K_MEMSET ? 51 : 211;

		if (blocking)
			end = G->rk->blk[G->nblk].end;
		write_rt(G, api, cbid, t0, end - t0, corr);
		ev_flow(w, 1, corr, G->pid, tid_of(G), TS0 + t0, "ac2g");
		if (inst != TG_NONE) {
			const struct inst *in = &G->J->inst[inst];
			char name[128];

			nccl_name(name, sizeof(name), m, in->proto);
			ev_x_head(w, "kernel", name, G->dev, tg_stream_id[s], TS0 + o->start);
			ev_x_dur(w, o->end - o->start);
			write_gpu_common(G, s, corr, ext, 1);
			jw_puts(w, ",\n      \"registers per thread\": 96,\n      \"shared memory\": "
			    "87568,\n      \"blocks per SM\": ");
			jw_puts(w, hw->sms >= 128 ? "0.121212" : "0.148148");
			jw_puts(w, ",\n      \"warps per SM\": ");
			jw_puts(w, hw->sms >= 128 ? "2.060606" : "2.518519");
			jw_puts(w, ",\n      \"grid\": [16, 1, 1],\n      \"block\": [544, 1, 1],\n"
			    "      \"est. achieved occupancy %\": 0,\n      ");
			write_nccl_meta(G, w, m, 0);
		} else {
			ev_x_head(w, k->cat == K_KERNEL ? "kernel" : k->cat == K_MEMCPY ?
			    "gpu_memcpy" : "gpu_memset", k->name, G->dev, tg_stream_id[s],
			    TS0 + o->start);
			ev_x_dur(w, o->end - o->start);
			write_gpu_common(G, s, corr, ext, k->cat == K_KERNEL);
			if (k->cat == K_KERNEL) {
				jw_puts(w, ",\n      ");
				jw_puts(w, k->args);
			} else {
				char bw[48];
				int64_t dd = o->end - o->start > 0 ? o->end - o->start : 1;

				jw_puts(w, ",\n      \"bytes\": ");
				jw_int(w, k->bytes);
				snprintf(bw, sizeof(bw), "%.6f", (double)k->bytes / (double)dd);
				jw_puts(w, ", \"memory bandwidth (GB/s)\": ");
				jw_puts(w, bw);
			}
		}
		jw_puts(w, "\n    }\n  }");
		ev_flow(w, 0, corr, G->dev, tg_stream_id[s], TS0 + o->start, "ac2g");
		if (s == ST_COMPUTE) {
			if (G->step_lo == TG_UNSET || o->start < G->step_lo)
				G->step_lo = o->start;
			if (o->end > G->step_hi)
				G->step_hi = o->end;
		}
		if (o->end > G->t_last)
			G->t_last = o->end;
	}
	if (blocking)
		G->nblk++;
	for (i = 0; i < NSTREAM; i++)
		G->pend[s][i] = TG_NONE;
	G->lastop[s] = g;
	G->now = end;
	advance(G, 400);
	return g;
}

static uint32_t
kern(struct gen *G, int kt)
{
	return launch(G, kt, ST_COMPUTE, TG_NONE, NULL, 0);
}

/* One op (with a sequence number or -1) launching one kernel. */
static void
op1(struct gen *G, int o, int64_t seq, int kt)
{
	op(G, o, seq);
	kern(G, kt);
	close_op(G);
}

static void
op2(struct gen *G, int o1, int64_t seq, int o2, int kt)
{
	op(G, o1, seq);
	op1(G, o2, -1, kt);
	close_op(G);
}

static void
op3(struct gen *G, int o1, int64_t seq, int o2, int o3, int kt)
{
	op(G, o1, seq);
	op2(G, o2, -1, o3, kt);
	close_op(G);
}

static void
write_sync(struct gen *G, const char *kind, int64_t ts, int64_t dur, uint64_t corr,
    int stream, int wait_stream, const struct evt *e)
{
	struct jw *w = G->w;
	int64_t sid = stream >= 0 ? tg_stream_id[stream] : -1;

	ev_x_head(w, "cuda_sync", kind, G->dev, sid, TS0 + ts);
	ev_x_dur(w, dur);
	jw_puts(w, ",\n    \"args\": {\n      \"External id\": ");
	jw_int(w, rt_ext(G, corr));
	jw_puts(w, ", \"cuda_sync_kind\": \"");
	jw_puts(w, kind);
	jw_puts(w, "\"");
	if (e != NULL) {
		jw_puts(w, ", \"wait_on_stream\": ");
		jw_int(w, tg_stream_id[wait_stream]);
		jw_puts(w, ", \"wait_on_cuda_event_record_corr_id\": ");
		jw_int(w, (int64_t)e->corr);
		jw_puts(w, ", \"wait_on_cuda_event_id\": ");
		jw_int(w, e->id);
	}
	jw_puts(w, ", \"stream\": ");
	jw_int(w, sid);
	jw_puts(w, ", \"correlation\": ");
	jw_int(w, (int64_t)corr);
	jw_puts(w, ", \"device\": ");
	jw_int(w, G->dev);
	jw_puts(w, ", \"context\": 1\n    }\n  }");
	ev_flow(w, 0, corr, G->dev, sid, TS0 + ts, "ac2g");
}

static struct evt
event_record(struct gen *G, int s)
{
	struct evt e;

	e.gop = G->lastop[s];
	e.stream = s;
	e.id = ++G->evid;
	e.corr = rt(G, "cudaEventRecord", 135, H_EVREC);
	return e;
}

/* cudaStreamWaitEvent: stream s waits for what e captured. */
static void
stream_wait(struct gen *G, int s, const struct evt *e)
{
	int64_t t0 = G->now, d = host(G, H_WAIT);
	uint64_t corr = G->corr++;

	if (G->emit) {
		write_rt(G, "cudaStreamWaitEvent", 147, t0, d, corr);
		if (G->c->sync_records) {
			ev_flow(G->w, 1, corr, G->pid, tid_of(G), TS0 + t0, "ac2g");
			write_sync(G, "Stream Wait Event", t0 + d / 3, d - d / 3 - d / 6, corr,
			    s, e->stream, e);
		} else {
			ev_flow(G->w, 0, corr, G->pid, tid_of(G), TS0 + t0, "ac2g");
		}
	}
	if (e->gop != TG_NONE && e->stream != s &&
	    (G->pend[s][e->stream] == TG_NONE || e->gop > G->pend[s][e->stream]))
		G->pend[s][e->stream] = e->gop;
	G->now = t0 + d;
	advance(G, 300);
}

/*
 * A synchronize: the host waits for ops[] to end. stream >= 0 names the
 * stream of a stream synchronize; -1 is the device.
 */
static void
synchronize(struct gen *G, const char *api, int cbid, const char *kind, int stream,
    const uint32_t *ops, int nops)
{
	int64_t t0 = G->now, d = host(G, H_SYNC), wake = host(G, H_WAKE), end;
	uint64_t corr = G->corr++;
	int i;

	if (!G->emit) {
		struct tg_rank *rk = G->rk;
		struct blk b;

		b.start = t0, b.min = d, b.wake = wake, b.end = TG_UNSET;
		b.ngop = G->ngop;
		b.dep = (uint32_t)rk->ndep;
		b.ndep = 0;
		for (i = 0; i < nops; i++)
			if (ops[i] != TG_NONE) {
				VEC_PUSH(rk->dep, rk->ndep, rk->capdep, ops[i]);
				b.ndep++;
			}
		VEC_PUSH(rk->blk, rk->nblk, rk->capblk, b);
		end = t0 + d;
	} else {
		end = G->rk->blk[G->nblk].end;
		write_rt(G, api, cbid, t0, end - t0, corr);
		if (G->c->sync_records) {
			ev_flow(G->w, 1, corr, G->pid, tid_of(G), TS0 + t0, "ac2g");
			write_sync(G, kind, t0 + 1000 < end ? t0 + 1000 : t0,
			    end - t0 > 2000 ? end - t0 - 2000 : 0, corr, stream, -1, NULL);
		} else {
			ev_flow(G->w, 0, corr, G->pid, tid_of(G), TS0 + t0, "ac2g");
		}
	}
	G->nblk++;
	G->now = end;
	advance(G, 300);
}

static void
thread_to(struct gen *G, int th)
{
	if (G->th != th) {
		advance(G, H_SWITCH);
		G->th = th;
	}
}

/*
 * A c10d collective: the op, record_param_comms, the NCCL stream fenced
 * behind the compute stream (event record, stream wait), the kernel, and
 * the event the work records when it ends, which is returned: a caller
 * that waits (a synchronous op, or req.wait()) makes the compute stream
 * wait for it.
 */
static struct evt
c10d(struct gen *G, const struct collmeta *m, int s, int g, uint32_t k, int n,
    int internode)
{
	static const char *const opn[] = { "c10d::allreduce_", "c10d::broadcast_",
		"c10d::send", "c10d::recv_", "c10d::_allgather_base_",
		"c10d::_reduce_scatter_base_" };
	static const char *const an[] = { "nccl:all_reduce", "nccl:broadcast", "nccl:send",
		"nccl:recv", "nccl:_all_gather_base", "nccl:_reduce_scatter_base" };
	int64_t bytes = m->nelems * (m->dtype == DT_BF16 ? 2 : m->dtype == DT_F32 ? 4 : 8);
	uint32_t in = instance(G->J, g, k, n, m->ckind == C_RECV ? C_SEND : m->ckind, bytes,
	    internode);
	struct evt e, done;
	struct jw meta = { 0 };

	op_dyn(G, opn[m->ckind], "T%" PRId64 ":%s", m->nelems,
	    m->dtype == DT_BF16 ? "bf" : m->dtype == DT_F32 ? "f32" : "i64");
	if (G->emit) {
		/* record_param_comms carries the metadata in its args. */
		meta.cap = 512;
		meta.b = xmalloc(meta.cap);
		write_nccl_meta(G, &meta, m, 1);
		jw_put(&meta, "", 1);
	}
	open_op(G, "cpu_op", "record_param_comms", -1, meta.b, 0);
	free(meta.b);
	rt(G, "cudaStreamIsCapturing", 317, H_SMALLRT);
	e = event_record(G, ST_COMPUTE);
	stream_wait(G, s, &e);
	annot(G, an[m->ckind]);
	launch(G, -1, s, in, m, 0);
	close_op(G);
	done = event_record(G, s);
	close_op(G);
	close_op(G);
	return done;
}

/* A collective on this rank's group of kind gk (sizes of 1 make none). */
static int
coll(struct gen *G, int gk, int ckind, int dtype, int redop, int64_t nelems, int wait,
    struct evt *done)
{
	struct collmeta m;
	struct evt e;

	if (G->gsize[gk] <= 1)
		return 0;
	m.gkind = gk, m.ckind = ckind, m.dtype = dtype, m.redop = redop, m.nelems = nelems;
	e = c10d(G, &m, gk == G_TP ? ST_TP : gk == G_DP ? ST_DP : ST_MP,
	    group_id(G->J, gk, G->rank), G->gseq[gk]++, G->gsize[gk], G->internode[gk]);
	if (wait)
		stream_wait(G, ST_COMPUTE, &e);
	if (done != NULL)
		*done = e;
	return 1;
}

/* ------------------------------------------------------------------ */
/* Pipeline point-to-point, as Megatron's _p2p_ops orders it. */

enum { SEND_NEXT = 1, RECV_PREV = 2, SEND_PREV = 4, RECV_NEXT = 8 };

static void
p2p_op(struct gen *G, int what, struct evt *done)
{
	const struct tg_job *J = G->J;
	int stride = (int)(J->c.tp * J->c.dp), peer, g, dir, s;
	uint32_t k;
	struct collmeta m;

	m.gkind = G_PP, m.dtype = DT_BF16, m.redop = 0;
	m.nelems = J->c.seq * J->c.mbs * J->c.hidden;
	switch (what) {
	case SEND_NEXT:
		peer = G->rank + stride, dir = 0, g = G->rank, s = ST_NEXT;
		k = G->send_seq[0]++, m.ckind = C_SEND;
		break;
	case SEND_PREV:
		peer = G->rank - stride, dir = 1, g = G->rank, s = ST_PREV;
		k = G->send_seq[1]++, m.ckind = C_SEND;
		break;
	case RECV_PREV:
		peer = G->rank - stride, dir = 0, g = peer, s = ST_PREV;
		k = G->recv_seq[1]++, m.ckind = C_RECV;
		break;
	default:
		peer = G->rank + stride, dir = 1, g = peer, s = ST_NEXT;
		k = G->recv_seq[0]++, m.ckind = C_RECV;
		break;
	}
	*done = c10d(G, &m, s, J->gbase[NGKIND] + g * 2 + dir, k, 2,
	    node_of(J, G->rank) != node_of(J, peer));
}

static void
p2p(struct gen *G, int ops)
{
	static const int even[] = { SEND_NEXT, RECV_PREV, SEND_PREV, RECV_NEXT };
	static const int odd[] = { RECV_PREV, SEND_NEXT, RECV_NEXT, SEND_PREV };
	const int *order = G->stage % 2 == 0 ? even : odd;
	struct evt done[4];
	int i, n = 0;

	if (G->first)
		ops &= ~(RECV_PREV | SEND_PREV);
	if (G->last)
		ops &= ~(SEND_NEXT | RECV_NEXT);
	if (ops == 0)
		return;
	advance(G, H_PY);
	for (i = 0; i < 4; i++)
		if (ops & order[i])
			p2p_op(G, order[i], &done[n++]);
	for (i = 0; i < n; i++)
		stream_wait(G, ST_COMPUTE, &done[i]);
}

/* ------------------------------------------------------------------ */
/* The model. */

/*
 * The tensor-parallel collectives around a block (Megatron): without
 * sequence parallelism an all-reduce of a row-parallel linear's output;
 * with it a reduce-scatter there, and an all-gather of a column-parallel
 * linear's input (the norms, dropout and residual adds between them run
 * on a sequence shard). The compute stream waits for each.
 */
static void
tp_out(struct gen *G)
{
	coll(G, G_TP, G->c->sp ? C_REDUCESCATTER : C_ALLREDUCE, DT_BF16, 0,
	    G->c->seq * G->c->mbs * G->c->hidden, 1, NULL);
}

static void
tp_in(struct gen *G)
{
	if (G->c->sp)
		coll(G, G_TP, C_ALLGATHER, DT_BF16, 0, G->c->seq * G->c->mbs * G->c->hidden, 1,
		    NULL);
}

static void
layer_norm(struct gen *G, int64_t seq)
{
	op2(G, OT_LN, seq, OT_NLN, KT_LN_FWD);
}

static void
linear(struct gen *G, int olin, int omm, int ommi, int64_t seq, int kt)
{
	op3(G, olin, seq, omm, ommi, kt);
}

static void
dropout_add(struct gen *G, uint64_t sq)
{
	op1(G, OT_ADD_H, (int64_t)sq, KT_ADD_H);
	op2(G, OT_DROPOUT, (int64_t)sq + 1, OT_NDROPOUT, KT_DROPOUT);
	op1(G, OT_ADD_RES, (int64_t)sq + 2, KT_ADD_H);
}

static void
layer_annot(struct gen *G, int l, const char *what)
{
	char name[64];

	if (!G->c->annotations)
		return;
	snprintf(name, sizeof(name), "layer_%d/%s", l, what);
	annot(G, name);
}

static void
layer_annot_end(struct gen *G)
{
	if (G->c->annotations)
		close_op(G);
}

static int
global_layer(const struct gen *G, int l)
{
	return (int)(G->stage * G->J->lps) + l;
}

static void
fwd_layer(struct gen *G, int mb, int item, int l)
{
	uint64_t sq = G->seqnr;

	G->fwdseq[mb * G->nitems + item] = sq;
	G->seqnr += N_PER_LAYER;
	layer_annot(G, global_layer(G, l), "forward");
	advance(G, H_PY);
	layer_norm(G, (int64_t)(sq + N_LN1));
	tp_in(G);
	advance(G, H_PY);
	linear(G, OT_LINEAR_QKV, OT_MATMUL_QKV, OT_MM_QKV, (int64_t)(sq + N_QKV), KT_QKV);
	op1(G, OT_ADD_QKV, (int64_t)(sq + N_ADD_QKV), KT_ADD_QKV);
	advance(G, H_PY);
	op(G, OT_SDPA, (int64_t)(sq + N_SDPA));
	op2(G, OT_SDPA_FLASH, -1, OT_FLASH_FWD, KT_FLASH_FWD);
	close_op(G);
	advance(G, H_PY);
	linear(G, OT_LINEAR_PROJ, OT_MATMUL_PROJ, OT_MM_PROJ, (int64_t)(sq + N_PROJ), KT_PROJ);
	tp_out(G);
	dropout_add(G, sq + N_ADD1);
	advance(G, H_PY);
	layer_norm(G, (int64_t)(sq + N_LN2));
	tp_in(G);
	advance(G, H_PY);
	linear(G, OT_LINEAR_FC1, OT_MATMUL_FC1, OT_MM_FC1, (int64_t)(sq + N_FC1), KT_FC1);
	op1(G, OT_ADD_F, (int64_t)(sq + N_ADD_FC1), KT_ADD_F);
	op1(G, OT_GELU, (int64_t)(sq + N_GELU), KT_GELU);
	advance(G, H_PY);
	linear(G, OT_LINEAR_FC2, OT_MATMUL_FC2, OT_MM_FC2, (int64_t)(sq + N_FC2), KT_FC2);
	tp_out(G);
	dropout_add(G, sq + N_ADD2);
	mem_event(G, mem_layer(G));
	layer_annot_end(G);
}

/* An autograd node's evaluate_function and node ops around its body. */
static void
node_open(struct gen *G, const char *node, int64_t seq)
{
	char name[128];

	advance(G, H_NODE);
	snprintf(name, sizeof(name), "autograd::engine::evaluate_function: %s", node);
	open_op(G, "cpu_op", name, seq, NULL, 0);
	if (G->emit)
		ev_flow(G->w, 0, (uint64_t)seq + 1, G->pid, tid_of(G), TS0 + G->st[G->depth - 1].ts,
		    "fwdbwd");
	open_op(G, "cpu_op", node, seq, NULL, 0);
}

static void
node_close(struct gen *G)
{
	close_op(G);
	close_op(G);
}

static void
node1(struct gen *G, const char *node, int64_t seq, int o, int kt)
{
	node_open(G, node, seq);
	op1(G, o, -1, kt);
	node_close(G);
}

static void
accumulate_grad(struct gen *G, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		advance(G, H_NODE);
		open_op(G, "cpu_op", "autograd::engine::evaluate_function: "
		    "torch::autograd::AccumulateGrad", -1, NULL, 0);
		open_op(G, "cpu_op", "torch::autograd::AccumulateGrad", -1, NULL, 0);
		close_op(G);
		close_op(G);
	}
}

/*
 * A linear's backward (Megatron's LinearWithGradAccumulationAndAsync-
 * Communication): the input gradient, then for a column-parallel layer
 * its all-reduce started asynchronously, the weight gradient fused into
 * the fp32 main_grad while it runs, and the wait.
 */
static void
linear_bwd(struct gen *G, int64_t seq, int omm, int kdg, int kwg, int column)
{
	struct evt done, in;
	int ar, ag;
	int64_t sbh = G->c->seq * G->c->mbs * G->c->hidden;

	if (G->c->sp) {
		/*
		 * Sequence parallelism: a row-parallel linear's output
		 * gradient is gathered first (the reduce-scatter's backward);
		 * a column-parallel one gathers its input again for the
		 * weight gradient while the input gradient is computed, then
		 * reduce-scatters that, overlapped with the weight gradient.
		 */
		if (!column)
			coll(G, G_TP, C_ALLGATHER, DT_BF16, 0, sbh, 1, NULL);
		node_open(G, "LinearWithGradAccumulationAndAsyncCommunicationBackward", seq);
		ag = column && coll(G, G_TP, C_ALLGATHER, DT_BF16, 0, sbh, 0, &in);
		op(G, omm, -1);
		kern(G, kdg);
		close_op(G);
		ar = column && coll(G, G_TP, C_REDUCESCATTER, DT_BF16, 0, sbh, 0, &done);
		advance(G, H_PY);
		if (ag)
			stream_wait(G, ST_COMPUTE, &in);
		kern(G, kwg);
		if (ar)
			stream_wait(G, ST_COMPUTE, &done);
		node_close(G);
		return;
	}
	node_open(G, "LinearWithGradAccumulationAndAsyncCommunicationBackward", seq);
	op(G, omm, -1);
	kern(G, kdg);
	close_op(G);
	ar = column && coll(G, G_TP, C_ALLREDUCE, DT_BF16, 0,
	    G->c->seq * G->c->mbs * G->c->hidden, 0, &done);
	advance(G, H_PY);
	kern(G, kwg);
	if (ar)
		stream_wait(G, ST_COMPUTE, &done);
	node_close(G);
}

static void
dropout_add_bwd(struct gen *G, uint64_t sq)
{
	node1(G, "NativeDropoutBackward0", (int64_t)sq + 1, OT_DROPOUT_BWD, KT_DROPOUT_BWD);
	node1(G, "AddBackward0", (int64_t)sq, OT_SUM_H, KT_BG_H);
}

static void
ln_bwd(struct gen *G, int64_t seq)
{
	node_open(G, "NativeLayerNormBackward0", seq);
	op(G, OT_LN_BWD, -1);
	kern(G, KT_LN_BWD_IN);
	kern(G, KT_LN_BWD_GB);
	close_op(G);
	node_close(G);
}

static void
bwd_layer(struct gen *G, int mb, int item, int l)
{
	uint64_t sq = G->fwdseq[mb * G->nitems + item];

	layer_annot(G, global_layer(G, l), "backward");
	dropout_add_bwd(G, sq + N_ADD2);
	linear_bwd(G, (int64_t)(sq + N_FC2), OT_MM_FC2_DG, KT_FC2_DG, KT_FC2_WG, 0);
	node1(G, "GeluBackward0", (int64_t)(sq + N_GELU), OT_GELU_BWD, KT_GELU_BWD);
	node1(G, "AddBackward0", (int64_t)(sq + N_ADD_FC1), OT_SUM_F, KT_BG_F);
	linear_bwd(G, (int64_t)(sq + N_FC1), OT_MM_FC1_DG, KT_FC1_DG, KT_FC1_WG, 1);
	ln_bwd(G, (int64_t)(sq + N_LN2));
	op1(G, OT_ADD_RES, -1, KT_ADD_H);
	dropout_add_bwd(G, sq + N_ADD1);
	linear_bwd(G, (int64_t)(sq + N_PROJ), OT_MM_PROJ_DG, KT_PROJ_DG, KT_PROJ_WG, 0);
	node_open(G, "ScaledDotProductFlashAttentionBackward0", (int64_t)(sq + N_SDPA));
	op(G, OT_FLASH_BWD_OUTER, -1);
	op(G, OT_FLASH_BWD, -1);
	kern(G, KT_FLASH_BWD_DOT);
	kern(G, KT_FLASH_BWD);
	kern(G, KT_FLASH_BWD_CVT);
	close_op(G);
	close_op(G);
	node_close(G);
	node1(G, "AddBackward0", (int64_t)(sq + N_ADD_QKV), OT_SUM_QKV, KT_BG_QKV);
	linear_bwd(G, (int64_t)(sq + N_QKV), OT_MM_QKV_DG, KT_QKV_DG, KT_QKV_WG, 1);
	ln_bwd(G, (int64_t)(sq + N_LN1));
	op1(G, OT_ADD_RES, -1, KT_ADD_H);
	accumulate_grad(G, 4);
	mem_grads(G, mb, item);
	mem_event(G, -mem_layer(G));
	layer_annot_end(G);
}

static void
fwd_embed(struct gen *G, int mb, int item)
{
	uint64_t sq = G->seqnr;

	G->fwdseq[mb * G->nitems + item] = sq;
	G->seqnr += 6;
	advance(G, H_PY);
	if (G->gsize[G_TP] > 1) {
		op1(G, OT_EMB_SUB, (int64_t)sq, KT_EMB_MASK);
		op1(G, OT_EMB_FILL, (int64_t)sq + 1, KT_EMB_FILL);
	}
	op2(G, OT_EMBEDDING, (int64_t)sq + 2, OT_INDEX_SELECT, KT_EMB_LOOKUP);
	if (G->gsize[G_TP] > 1) {
		op1(G, OT_EMB_FILL, (int64_t)sq + 3, KT_EMB_FILL);
		tp_out(G);
	}
	op2(G, OT_POS_EMBEDDING, (int64_t)sq + 4, OT_POS_INDEX_SELECT, KT_POS_LOOKUP);
	op1(G, OT_ADD_H, (int64_t)sq + 5, KT_ADD_H);
	op2(G, OT_DROPOUT, (int64_t)sq + 5, OT_NDROPOUT, KT_DROPOUT);
}

static void
bwd_embed(struct gen *G, int mb, int item)
{
	uint64_t sq = G->fwdseq[mb * G->nitems + item];

	node1(G, "NativeDropoutBackward0", (int64_t)sq + 5, OT_DROPOUT_BWD, KT_DROPOUT_BWD);
	if (G->gsize[G_TP] > 1)
		tp_in(G); /* the reduce-scatter's backward */
	node_open(G, "EmbeddingBackward0", (int64_t)sq + 4);
	op2(G, OT_POS_BWD, -1, OT_POS_DENSE_BWD, KT_POS_BWD);
	node_close(G);
	if (G->gsize[G_TP] > 1)
		node1(G, "MaskedFillBackward0", (int64_t)sq + 3, OT_EMB_FILL, KT_EMB_FILL);
	node_open(G, "EmbeddingBackward0", (int64_t)sq + 2);
	op2(G, OT_EMB_BWD, -1, OT_EMB_DENSE_BWD, KT_EMB_BWD);
	node_close(G);
	accumulate_grad(G, 2);
	mem_grads(G, mb, item);
}

/* Final layer norm, output layer, vocab-parallel cross entropy, the loss. */
static void
fwd_head(struct gen *G, int mb, int item)
{
	uint64_t sq = G->seqnr;
	int64_t sb = G->c->seq * G->c->mbs;

	G->fwdseq[mb * G->nitems + item] = sq;
	G->seqnr += 8;
	advance(G, H_PY);
	layer_norm(G, (int64_t)sq);
	tp_in(G);
	advance(G, H_PY);
	linear(G, OT_LINEAR_LOGITS, OT_MATMUL_LOGITS, OT_MM_LOGITS, (int64_t)sq + 1, KT_LOGITS);
	advance(G, H_PY);
	op(G, OT_CE, (int64_t)sq + 2);
	op1(G, OT_CE_MAX, -1, KT_CE_MAX);
	coll(G, G_TP, C_ALLREDUCE, DT_F32, 1, sb, 1, NULL);
	op1(G, OT_CE_SUB, -1, KT_CE_SUB);
	op1(G, OT_CE_INDEX, -1, KT_CE_GATHER);
	coll(G, G_TP, C_ALLREDUCE, DT_F32, 0, sb, 1, NULL);
	op1(G, OT_CE_EXP, -1, KT_CE_EXP);
	op1(G, OT_CE_SUM, -1, KT_CE_SUM);
	coll(G, G_TP, C_ALLREDUCE, DT_F32, 0, sb, 1, NULL);
	op1(G, OT_CE_LOG, -1, KT_CE_LOSS);
	mem_event(G, mem_logits(G));
	close_op(G);
	advance(G, H_PY);
	op1(G, OT_LOSS_MUL, (int64_t)sq + 3, KT_SMALL);
	op1(G, OT_LOSS_SUM, (int64_t)sq + 4, KT_SMALL);
	/* average_losses_across_data_parallel_group */
	coll(G, G_DP, C_ALLREDUCE, DT_F32, 0, 1, 1, NULL);
}

static void
bwd_head(struct gen *G, int mb, int item)
{
	uint64_t sq = G->fwdseq[mb * G->nitems + item];

	node1(G, "SumBackward0", (int64_t)sq + 4, OT_LOSS_MUL, KT_SMALL);
	node1(G, "MulBackward0", (int64_t)sq + 3, OT_LOSS_MUL, KT_SMALL);
	node1(G, "_VocabParallelCrossEntropyBackward", (int64_t)sq + 2, OT_LOSS_MUL, KT_CE_BWD);
	mem_event(G, -mem_logits(G));
	linear_bwd(G, (int64_t)sq + 1, OT_MM_LOGITS_DG, KT_LOGITS_DG, KT_LOGITS_WG, 1);
	ln_bwd(G, (int64_t)sq);
	accumulate_grad(G, 3);
	mem_grads(G, mb, item);
}

/* get_batch: tensor-parallel rank 0 copies the batch in, then broadcasts it. */
static void
get_batch(struct gen *G)
{
	int64_t n = G->c->seq * G->c->mbs * ((G->c->pp == 1) + 1);

	advance(G, 4 * H_PY);
	if (G->tpr == 0) {
		op(G, OT_TO, -1);
		op(G, OT_TO_COPY, -1);
		op(G, OT_COPY, -1);
		launch(G, KT_H2D_BATCH, ST_COMPUTE, TG_NONE, NULL, 0);
		close_op(G);
		close_op(G);
		close_op(G);
	}
	coll(G, G_TP, C_BROADCAST, DT_I64, 0, n, 1, NULL);
}

static void
forward_step(struct gen *G, int mb)
{
	char name[48];
	int item = 0, l;

	if (G->c->annotations) {
		snprintf(name, sizeof(name), "microbatch_%d/forward", mb);
		annot(G, name);
	}
	if (G->first || G->last)
		get_batch(G);
	if (G->first)
		fwd_embed(G, mb, item++);
	for (l = 0; l < G->J->lps; l++)
		fwd_layer(G, mb, item++, l);
	if (G->last)
		fwd_head(G, mb, item++);
	if (G->c->annotations)
		close_op(G);
}

/* Launch the buckets whose last gradient the backward item just made. */
static void
buckets_after(struct gen *G, int bitem)
{
	const struct bucket *bk = G->J->bk[G->stage];
	int i;

	for (i = 0; i < G->J->nbk[G->stage]; i++) {
		if (bk[i].after != bitem || G->gsize[G_DP] <= 1)
			continue;
		advance(G, H_PY);
		op_dyn(G, "aten::mul_", "T%" PRId64 ":f32|S%.6g", bk[i].numel,
		    1.0 / (double)G->c->dp);
		kern(G, G->sk->bucket_scale[i]);
		close_op(G);
		coll(G, G_DP, C_ALLREDUCE, DT_F32, 0, bk[i].numel, 0, &G->bdone[i]);
	}
}

/*
 * backward_step: the main thread calls torch.autograd.backward and
 * blocks; the autograd thread runs the nodes, launching the gradient
 * buckets in the last micro-batch.
 */
static void
backward_step(struct gen *G, int mb, int lastmb)
{
	char name[48];
	int bitem = 0, item = G->nitems - 1, l;

	if (G->c->annotations) {
		snprintf(name, sizeof(name), "microbatch_%d/backward", mb);
		annot(G, name);
	}
	advance(G, H_PY);
	thread_to(G, 1);
	if (G->last) {
		bwd_head(G, mb, item--);
		if (lastmb)
			buckets_after(G, bitem);
		bitem++;
	}
	for (l = (int)G->J->lps - 1; l >= 0; l--) {
		bwd_layer(G, mb, item--, l);
		if (lastmb)
			buckets_after(G, bitem);
		bitem++;
	}
	if (G->first) {
		bwd_embed(G, mb, item--);
		if (lastmb)
			buckets_after(G, bitem);
	}
	thread_to(G, 0);
	if (G->c->annotations)
		close_op(G);
}

/* Megatron's forward_backward_pipelining_without_interleaving, or GPipe. */
static void
schedule(struct gen *G)
{
	int M = (int)G->c->microbatches, P = (int)G->c->pp;
	int warm, rem, i, fwd = 0, bwd = 0;

	if (G->c->schedule == SCHED_GPIPE) {
		for (i = 0; i < M; i++) {
			p2p(G, RECV_PREV);
			forward_step(G, fwd++);
			p2p(G, SEND_NEXT);
		}
		for (i = 0; i < M; i++) {
			p2p(G, RECV_NEXT);
			backward_step(G, bwd, bwd == M - 1);
			bwd++;
			p2p(G, SEND_PREV);
		}
		return;
	}
	warm = P - G->stage - 1 < M ? P - G->stage - 1 : M;
	rem = M - warm;
	for (i = 0; i < warm; i++) {
		p2p(G, RECV_PREV);
		forward_step(G, fwd++);
		p2p(G, SEND_NEXT);
	}
	if (rem > 0)
		p2p(G, RECV_PREV);
	for (i = 0; i < rem; i++) {
		forward_step(G, fwd++);
		p2p(G, SEND_NEXT | RECV_NEXT);
		backward_step(G, bwd, bwd == M - 1);
		bwd++;
		if (i == rem - 1)
			p2p(G, SEND_PREV);
		else
			p2p(G, SEND_PREV | RECV_PREV);
	}
	for (i = 0; i < warm; i++) {
		p2p(G, RECV_NEXT);
		backward_step(G, bwd, bwd == M - 1);
		bwd++;
		p2p(G, SEND_PREV);
	}
}

/* tensor.item(): a blocking copy to pageable memory, then a stream synchronize. */
static void
item(struct gen *G)
{
	uint32_t g;

	op(G, OT_ITEM, -1);
	op(G, OT_LSD, -1);
	g = launch(G, KT_D2H_ITEM, ST_COMPUTE, TG_NONE, NULL, 1);
	synchronize(G, "cudaStreamSynchronize", 131, "Stream Sync", ST_COMPUTE, &g, 1);
	close_op(G);
	close_op(G);
}

/* Megatron's optimizer step: grad norm (with its .item()), Adam, param copy. */
static void
optimizer(struct gen *G)
{
	const struct stagek *sk = G->sk;
	int i;

	advance(G, 4 * H_PY);
	for (i = 0; i < sk->nadam; i++)
		kern(G, i == sk->nadam - 1 ? sk->l2_last : sk->l2);
	kern(G, KT_L2NORM_CLEANUP);
	op1(G, OT_POW, -1, KT_POW);
	coll(G, G_MP, C_ALLREDUCE, DT_F32, 0, 1, 1, NULL);
	advance(G, H_PY);
	item(G);
	advance(G, 4 * H_PY);
	annot(G, "Optimizer.step#FusedAdam.step");
	for (i = 0; i < sk->nadam; i++)
		kern(G, i == sk->nadam - 1 ? sk->adam_last : sk->adam);
	close_op(G);
	advance(G, 2 * H_PY);
	for (i = 0; i < sk->nadam; i++)
		kern(G, i == sk->nadam - 1 ? sk->scale_last : sk->scale);
	/* the gradients go (zero_grad, set to none) */
	if (G->grads)
		mem_event(G, -4 * G->sk->params);
	G->grads = 0;
}

static void
iteration(struct gen *G, int64_t step)
{
	char name[48];
	uint32_t ops[NSTREAM];
	int i;

	G->step_lo = TG_UNSET, G->step_hi = 0;
	snprintf(name, sizeof(name), "ProfilerStep#%" PRId64, step);
	open_op(G, "user_annotation", name, -1, NULL, 1);
	/* zero_grad_buffer */
	advance(G, 4 * H_PY);
	op_dyn(G, "aten::zero_", "T%" PRId64 ":f32", G->sk->params);
	op_dyn(G, "aten::fill_", "T%" PRId64 ":f32|S0", G->sk->params);
	launch(G, G->sk->memset_grad, ST_COMPUTE, TG_NONE, NULL, 0);
	close_op(G);
	close_op(G);
	schedule(G);
	/* finish_grad_sync */
	advance(G, H_PY);
	if (G->gsize[G_DP] > 1)
		for (i = 0; i < G->J->nbk[G->stage]; i++)
			stream_wait(G, ST_COMPUTE, &G->bdone[i]);
	optimizer(G);
	advance(G, 4 * H_PY);
	for (i = 0; i < NSTREAM; i++)
		ops[i] = G->lastop[i];
	synchronize(G, "cudaDeviceSynchronize", 165, "Context Sync", -1, ops, NSTREAM);
	advance(G, 2 * H_PY);
	if (G->emit && G->step_lo != TG_UNSET) {
		ev_x_head(G->w, "gpu_user_annotation", name, G->dev, tg_stream_id[ST_COMPUTE],
		    TS0 + G->step_lo);
		ev_x_dur(G->w, G->step_hi - G->step_lo);
		jw_puts(G->w, ",\n    \"args\": {\n      \"External id\": ");
		jw_int(G->w, G->st[G->depth - 1].ext);
		jw_puts(G->w, "\n    }\n  }");
	}
	close_op(G);
}

/* "[0, 1, 2]": a group's ranks as PyTorch writes them. */
static char *
ranks_text(const int *m, int n)
{
	char *s = xmalloc((size_t)n * 13 + 3), *p = s;
	int i;

	*p++ = '[';
	for (i = 0; i < n; i++)
		p += sprintf(p, "%s%d", i ? ", " : "", m[i]);
	*p++ = ']';
	*p = '\0';
	return s;
}

static void
gen_init(struct gen *G, struct tg_job *J, int r, int emit, struct jw *w)
{
	const struct tg_cfg *c = &J->c;
	int *m = xmalloc((size_t)J->world * sizeof(int));
	int k, n, i;

	memset(G, 0, sizeof(*G));
	G->J = J, G->c = c, G->rk = &J->rk[r], G->rank = r, G->emit = emit, G->w = w;
	G->tpr = (int)(r % c->tp), G->dpr = (int)(r / c->tp % c->dp);
	G->stage = (int)(r / (c->tp * c->dp));
	G->sk = &J->sk[G->stage];
	/* the allocator's level at a step's start: bf16 parameters, their
	 * float master copy and Adam's two float states (tracegen(1)) */
	G->mstate = G->mres = c->memory ? 14 * G->sk->params : 0;
	G->first = G->stage == 0, G->last = G->stage == c->pp - 1;
	G->dev = (int)(r % c->gpus_per_node);
	G->pid = 2900000 + 131 * (int64_t)r;
	G->tid[0] = G->pid, G->tid[1] = G->pid + 17;
	G->now = G->t_first = J->rk[r].t0;
	G->corr = 1000 + 7 * (uint64_t)r;
	G->ext = 1, G->rfid = 0, G->evidx = 0, G->seqnr = 100;
	G->nitems = stage_items(J, G->stage);
	G->fwdseq = xcalloc((size_t)(c->microbatches * G->nitems), sizeof(uint64_t));
	G->bdone = xcalloc((size_t)J->nbk[G->stage] + 1, sizeof(*G->bdone));
	G->speed = 1.0 + 0.01 * fabs(tg_gauss(tg_hash(c->seed, (uint64_t)r, UINT64_C(0x5eed))));
	for (k = 0; k < NSTREAM; k++) {
		G->lastop[k] = TG_NONE;
		for (i = 0; i < NSTREAM; i++)
			G->pend[k][i] = TG_NONE;
	}
	for (k = 0; k < NGKIND; k++) {
		int g = group_id(J, k, r);

		n = group_members(J, k, r, m);
		G->gsize[k] = n;
		G->internode[k] = node_of(J, m[0]) != node_of(J, m[n - 1]);
		snprintf(G->pgname[k], sizeof(G->pgname[k]), "%d", g + 1);
		G->pgranks[k] = emit ? ranks_text(m, n) : NULL;
		G->gstart[k] = m[0];
		G->gstride[k] = n > 1 ? m[1] - m[0] : 1;
		for (i = 2; i < n; i++)
			if (m[i] - m[i - 1] != G->gstride[k])
				G->gstride[k] = -1;
	}
	free(m);
}

static void
gen_release(struct gen *G)
{
	int k;

	for (k = 0; k < NGKIND; k++)
		free(G->pgranks[k]);
	free(G->fwdseq);
	free(G->bdone);
}

static void
run(struct gen *G)
{
	int64_t it;

	for (it = 0; it < G->c->iterations; it++) {
		iteration(G, 10 + it);
	}
}

/* ------------------------------------------------------------------ */

int
job_init(struct tg_job *J, const struct tg_cfg *c, char *err, size_t errlen)
{
	int r, k, i;
	int64_t ng;

	memset(J, 0, sizeof(*J));
	J->c = *c;
	J->world = (int)(c->tp * c->pp * c->dp);
	J->lps = c->layers / c->pp;
	J->rk = xcalloc((size_t)J->world, sizeof(*J->rk));
	for (r = 0; r < J->world; r++)
		J->rk[r].t0 = 100000 + (int64_t)(tg_unit(tg_hash(c->seed, (uint64_t)r, 0x7)) * 200000);
	J->gbase[G_TP] = 0;
	J->gbase[G_DP] = J->gbase[G_TP] + (int)(J->world / c->tp);
	J->gbase[G_PP] = J->gbase[G_DP] + (int)(J->world / c->dp);
	J->gbase[G_MP] = J->gbase[G_PP] + (int)(J->world / c->pp);
	J->gbase[NGKIND] = J->gbase[G_MP] + (int)(J->world / (c->tp * c->pp));
	ng = J->gbase[NGKIND] + 2 * (int64_t)J->world;
	J->ngroups = (size_t)ng;
	J->ginst = xcalloc(J->ngroups, sizeof(*J->ginst));
	J->nginst = xcalloc(J->ngroups, sizeof(*J->nginst));
	J->capginst = xcalloc(J->ngroups, sizeof(*J->capginst));
	J->bk = xcalloc((size_t)c->pp, sizeof(*J->bk));
	J->nbk = xcalloc((size_t)c->pp, sizeof(*J->nbk));
	J->sk = xcalloc((size_t)c->pp, sizeof(*J->sk));
	make_templates(J);
	for (k = 0; k < c->pp; k++)
		make_stage(J, k, &J->sk[k]);
	for (i = 0; i < J->nkt; i++)
		if (J->kt[i].dur < 0) {
			snprintf(err, errlen, "internal error: kernel %d has no duration", i);
			return -1;
		}
	return 0;
}

void
job_release(struct tg_job *J)
{
	size_t g;
	int r, k, i;

	for (r = 0; r < J->world; r++) {
		struct tg_rank *rk = &J->rk[r];

		free(rk->gop), free(rk->dep), free(rk->blk);
		for (k = 0; k < NSTREAM; k++)
			free(rk->sq[k]);
	}
	free(J->rk);
	free(J->inst);
	for (g = 0; g < J->ngroups; g++)
		free(J->ginst[g]);
	free(J->ginst), free(J->nginst), free(J->capginst);
	for (k = 0; k < J->c.pp; k++) {
		free(J->bk[k]);
		free(J->sk[k].bucket_scale);
	}
	free(J->bk), free(J->nbk);
	free(J->sk);
	for (i = 0; i < J->nkt; i++)
		free(J->kt[i].name), free(J->kt[i].args);
	free(J->kt);
	for (i = 0; i < J->not; i++)
		free(J->ot[i].name), free(J->ot[i].args);
	free(J->ot);
}

void
job_record(struct tg_job *J)
{
	struct gen G;
	int r;

	for (r = 0; r < J->world; r++) {
		gen_init(&G, J, r, 0, NULL);
		run(&G);
		gen_release(&G);
	}
}

static void
write_header(struct tg_job *J, int r, struct jw *w)
{
	const struct tg_cfg *c = &J->c;
	const struct tg_hw *hw = &c->hw;
	int *m = xmalloc((size_t)J->world * sizeof(int));
	int k, n, i;
	char buf[512];

	jw_puts(w, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n");
	for (i = 0; i < c->gpus_per_node; i++) {
		snprintf(buf, sizeof(buf), "    {\n      \"id\": %d, \"name\": ", i);
		jw_puts(w, buf);
		jw_str(w, hw->gpu);
		snprintf(buf, sizeof(buf), ", \"totalGlobalMem\": %" PRId64 ",\n"
		    "      \"computeMajor\": %d, \"computeMinor\": %d,\n"
		    "      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n"
		    "      \"regsPerBlock\": 65536, \"warpSize\": 32,\n"
		    "      \"sharedMemPerBlock\": 49152, \"numSms\": %d\n"
		    "    , \"regsPerMultiprocessor\": 65536, \"sharedMemPerBlockOptin\": %d, "
		    "\"sharedMemPerMultiprocessor\": %d\n    }%s\n",
		    (int64_t)(hw->mem_gib * 1073741824.0), hw->cc_major, hw->cc_minor, hw->sms,
		    hw->cc_major >= 9 ? 232448 : 166912, hw->cc_major >= 9 ? 233472 : 167936,
		    i + 1 < c->gpus_per_node ? "," : "");
		jw_puts(w, buf);
	}
	jw_puts(w, "  ],\n  \"cupti_version\": 22,\n  \"cuda_runtime_version\": 12040,\n"
	    "  \"cuda_driver_version\": 12040,\n");
	jw_puts(w, "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": ");
	jw_int(w, r);
	jw_puts(w, ", \"world_size\": ");
	jw_int(w, J->world);
	n = 1;
	for (k = 0; k < NGKIND; k++)
		n += group_members(J, k, r, m) > 1;
	jw_puts(w, ", \"pg_count\": ");
	jw_int(w, n);
	jw_puts(w, ", \"pg_config\": [{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", "
	    "\"backend_config\": \"cuda:nccl\", \"pg_size\": ");
	jw_int(w, J->world);
	jw_puts(w, ", \"ranks\": [");
	for (i = 0; i < J->world; i++) {
		if (i > 0)
			jw_puts(w, ", ");
		jw_int(w, i);
	}
	jw_puts(w, "]}");
	for (k = 0; k < NGKIND; k++) {
		n = group_members(J, k, r, m);
		if (n <= 1)
			continue;
		jw_puts(w, ", {\"pg_name\": \"");
		jw_int(w, group_id(J, k, r) + 1);
		jw_puts(w, "\", \"pg_desc\": \"");
		jw_puts(w, gdesc[k]);
		jw_puts(w, "\", \"backend_config\": \"cuda:nccl\", \"pg_size\": ");
		jw_int(w, n);
		jw_puts(w, ", \"ranks\": [");
		for (i = 0; i < n; i++) {
			if (i > 0)
				jw_puts(w, ", ");
			jw_int(w, m[i]);
		}
		jw_puts(w, "]}");
	}
	jw_puts(w, "], \"nccl_version\": \"2.21.5\"},\n  \"record_shapes\": 1,\n");
	snprintf(buf, sizeof(buf), "  \"trace_id\": \"%016" PRIX64 "%016" PRIX64 "\",\n",
	    tg_hash(c->seed, (uint64_t)r, 1), tg_hash(c->seed, (uint64_t)r, 2));
	jw_puts(w, buf);
	jw_puts(w, "  \"traceEvents\": [\n");
	free(m);
}

static void
write_meta(struct gen *G)
{
	struct jw *w = G->w;
	int64_t ts = TS0 + G->t_first - 50000;
	char buf[96];
	int i;

	ev_meta(w, "process_name", G->pid, 0, ts, "name", "python3", 0);
	ev_meta(w, "process_labels", G->pid, 0, ts, "labels", "CPU", 0);
	ev_meta(w, "process_sort_index", G->pid, 0, ts, "sort_index", NULL, G->pid);
	for (i = 0; i < G->c->gpus_per_node; i++) {
		snprintf(buf, sizeof(buf), "GPU %d", i);
		ev_meta(w, "process_name", i, 0, ts, "name", "python3", 0);
		ev_meta(w, "process_labels", i, 0, ts, "labels", buf, 0);
		ev_meta(w, "process_sort_index", i, 0, ts, "sort_index", NULL, 16777216 + i);
	}
	for (i = 0; i < NSTREAM; i++) {
		if (G->rk->nsq[i] == 0)
			continue;
		snprintf(buf, sizeof(buf), "stream %d ", tg_stream_id[i]);
		ev_meta(w, "thread_name", G->dev, tg_stream_id[i], ts, "name", buf, 0);
		ev_meta(w, "thread_sort_index", G->dev, tg_stream_id[i], ts, "sort_index", NULL,
		    tg_stream_id[i]);
	}
	snprintf(buf, sizeof(buf), "thread %" PRId64 " (pt_main_thread)", G->tid[0]);
	ev_meta(w, "thread_name", G->pid, G->tid[0], ts, "name", buf, 0);
	ev_meta(w, "thread_sort_index", G->pid, G->tid[0], ts, "sort_index", NULL, G->tid[0]);
	snprintf(buf, sizeof(buf), "thread %" PRId64 " (pt_autograd_0)", G->tid[1]);
	ev_meta(w, "thread_name", G->pid, G->tid[1], ts, "name", buf, 0);
	ev_meta(w, "thread_sort_index", G->pid, G->tid[1], ts, "sort_index", NULL, G->tid[1]);
}

void
job_emit(struct tg_job *J, int r, struct jw *w)
{
	struct gen G;
	int64_t start, end;
	char buf[160];

	gen_init(&G, J, r, 1, w);
	write_header(J, r, w);
	write_meta(&G);
	run(&G);
	start = TS0 + G.t_first - 50000;
	end = (G.now > G.t_last ? G.now : G.t_last) + 20000;
	ev_begin(w);
	jw_puts(w, "  {\n    \"ph\": \"X\", \"cat\": \"Trace\", \"ts\": ");
	jw_us(w, start);
	jw_puts(w, ", \"dur\": ");
	jw_us(w, TS0 + end - start);
	jw_puts(w, ",\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n"
	    "    \"name\": \"PyTorch Profiler (0)\",\n    \"args\": {\n      \"Op count\": 0\n"
	    "    }\n  }");
	ev_begin(w);
	jw_puts(w, "  {\n    \"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": ");
	jw_us(w, start);
	jw_puts(w, ", \"pid\": \"Spans\", \"tid\": 0,\n    \"args\": {\n"
	    "      \"sort_index\": 536870912\n    }\n  }");
	ev_begin(w);
	jw_puts(w, "  {\n    \"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", "
	    "\"s\": \"g\",\n    \"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": ");
	jw_us(w, start);
	jw_puts(w, "\n  }");
	ev_begin(w);
	jw_puts(w, "  {\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n"
	    "    \"pid\": \"\", \"tid\": \"\", \"ts\": ");
	jw_us(w, TS0 + end);
	jw_puts(w, "\n  }\n],\n");
	snprintf(buf, sizeof(buf), "  \"traceName\": \"rank-%d.json.gz\",\n"
	    "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": %" PRId64 "\n}\n",
	    r, BASE_NS + clock_skew(&J->c, r));
	jw_puts(w, buf);
	gen_release(&G);
}
