/*
 * The host's calls, the verbs of a rank's program (struct gen, tg.h):
 * CPU ops and annotations opened and closed, runtime calls, launches
 * of GPU ops, event records and stream waits, synchronizes, the switch
 * to the autograd thread. Each call advances the host clock by its
 * modelled time, drawn from the rank's random numbers in the same order
 * in both passes; recording, a launch or a blocking call adds to the
 * rank's record (struct gop, struct blk); emitting, each writes its
 * events with the times the simulation gave.
 *
 * What the program does with them (layers.c, coll.c, schedule.c) is not
 * here; nor the collectives' metadata (coll.c), which a collective's
 * launch writes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "util.h"

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

void
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

int64_t
tid_of(const struct gen *G)
{
	return G->tid[G->th];
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
void
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

void
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
void
op(struct gen *G, int o, int64_t seq)
{
	open_op(G, "cpu_op", G->J->ot[o].name, seq, G->J->ot[o].args, 0);
	if (G->emit && seq >= 0 && G->th == 0)
		ev_flow(G->w, 1, (uint64_t)seq + 1, G->pid, tid_of(G),
		    TS0 + G->st[G->depth - 1].ts, "fwdbwd");
}

/* A CPU op whose shapes are known only here (emit mode renders them). */
void
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

void
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
uint64_t
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

/*
 * Launch a GPU op: kernel template kt on stream s (a collective when
 * inst != TG_NONE). The op waits for the event waits pending on s.
 * `blocking` makes the call last until the op has ended (a pageable
 * copy): the call is then a blocking call as well.
 */
uint32_t
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

uint32_t
kern(struct gen *G, int kt)
{
	return launch(G, kt, ST_COMPUTE, TG_NONE, NULL, 0);
}

/* One op (with a sequence number or -1) launching one kernel. */
void
op1(struct gen *G, int o, int64_t seq, int kt)
{
	op(G, o, seq);
	kern(G, kt);
	close_op(G);
}

void
op2(struct gen *G, int o1, int64_t seq, int o2, int kt)
{
	op(G, o1, seq);
	op1(G, o2, -1, kt);
	close_op(G);
}

void
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

struct evt
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
void
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
void
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

void
thread_to(struct gen *G, int th)
{
	if (G->th != th) {
		advance(G, H_SWITCH);
		G->th = th;
	}
}
