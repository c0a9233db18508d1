/*
 * kineto2graph's build, a task's record (make_task): its kind, times,
 * the op that called it and its shapes, the profiler's cost, its
 * structure tags (rule 7, tags.c) and, for a communication kernel, its
 * collective: the type, group, sequence number and bytes, from the NCCL
 * metadata on the kernel or an op around it, else a c10d:: op's name and
 * an nccl: annotation's size. The order tasks are numbered in
 * (task_run). Rule 8: each task's allocator events (mem_attach).
 */
#include <stdlib.h>
#include <string.h>

#include "commkern.h"
#include "gb.h"
#include "k2g.h"
#include "util.h"

/* An event's Input Dims and Input type onto its task (or its kernels'). */
static void
set_shapes(const struct trace *t, const struct ev *e, struct kg_task *k)
{
	if (e->shapes == KG_NONE)
		return;
	k->shapes = t->shp[e->shapes].dims;
	k->itypes = t->shp[e->shapes].types;
}

struct collname {
	const char *s;
	int coll;
};

/* Collective type from "Collective name" metadata, or the kernel name. */
static int
coll_from_meta(const char *s)
{
	static const struct collname tab[] = {
		{ "alltoall", KG_COLL_ALLTOALL }, { "reducescatter", KG_COLL_REDUCESCATTER },
		{ "allreduce", KG_COLL_ALLREDUCE }, { "allgather", KG_COLL_ALLGATHER },
		{ "broadcast", KG_COLL_BROADCAST }, { "barrier", KG_COLL_ALLREDUCE },
		{ "sendrecv", KG_COLL_SENDRECV }, { "send", KG_COLL_SEND },
		{ "recv", KG_COLL_RECV }, { "reduce", KG_COLL_REDUCE }, { NULL, 0 }
	};
	char norm[64];
	size_t i, n = 0;

	for (i = 0; s[i] && n < sizeof(norm) - 1; i++)
		if (s[i] != '_')
			norm[n++] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
	norm[n] = '\0';
	for (i = 0; tab[i].s; i++)
		if (strstr(norm, tab[i].s))
			return tab[i].coll;
	return KG_COLL_NONE;
}

static int
cmp_annref(const void *a, const void *b)
{
	const struct annref *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts ? 1 : (x->ev > y->ev) - (x->ev < y->ev);
}

/* The nccl: annotations that carry a message size, sorted by start. */
void
comm_annotations(struct gb *g)
{
	struct trace *t = g->t;
	size_t i, cap = 0;

	for (i = 0; i < t->nev; i++)
		if (t->ev[i].cls == EV_ANNOT && t->ev[i].extra != KG_NONE &&
		    starts(t->str.str[t->ev[i].name], "nccl:")) {
			grow(&g->commann, &cap, g->ncommann + 1, sizeof(*g->commann));
			g->commann[g->ncommann].ts = t->ev[i].ts;
			g->commann[g->ncommann++].ev = (uint32_t)i;
		}
	if (g->ncommann > 1)
		qsort(g->commann, g->ncommann, sizeof(*g->commann), cmp_annref);
}

/*
 * The nccl: annotation (PyTorch's "nccl:all_reduce" record_function
 * around the NCCL call) with a message size that holds launch call rt
 * on its thread, or NULL: where the c10d:: op above carries no size.
 */
static const struct collmeta *
comm_annotation(const struct gb *g, uint32_t rt)
{
	const struct trace *t = g->t;
	const struct ev *l = &t->ev[rt];
	size_t lo = 0, hi = g->ncommann, k;

	while (lo < hi) { /* the first starting after the launch */
		size_t mid = (lo + hi) / 2;

		if (g->commann[mid].ts <= l->ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the nearest before it on the same thread, if it holds the launch */
	for (k = lo; k > 0 && lo - k < 64; k--) {
		const struct ev *a = &t->ev[g->commann[k - 1].ev];

		if (a->proc != l->proc)
			continue;
		return a->ts + a->dur >= l->ts + l->dur ? &t->coll[a->extra] : NULL;
	}
	return NULL;
}

static int64_t
dtype_size(const char *s)
{
	/* NCCL metadata spells ScalarType names; Input type spells C++ types. */
	static const struct { const char *n; int64_t sz; } tab[] = {
		{ "Float", 4 }, { "Double", 8 }, { "Half", 2 }, { "BFloat16", 2 },
		{ "Int", 4 }, { "Long", 8 }, { "Short", 2 }, { "Char", 1 },
		{ "Byte", 1 }, { "Bool", 1 }, { "ComplexFloat", 8 },
		{ "ComplexDouble", 16 }, { "ComplexHalf", 4 },
		{ "float", 4 }, { "double", 8 }, { "c10::Half", 2 },
		{ "c10::BFloat16", 2 }, { "int", 4 }, { "long int", 8 },
		{ "short int", 2 }, { "signed char", 1 }, { "unsigned char", 1 },
		{ "bool", 1 }, { "c10::complex<float>", 8 },
		{ "c10::complex<double>", 16 }, { NULL, 0 }
	};
	size_t i;

	if (starts(s, "Float8"))
		return 1;
	for (i = 0; tab[i].n; i++)
		if (strcmp(s, tab[i].n) == 0)
			return tab[i].sz;
	return 0;
}

/*
 * The order tasks are numbered and written in: the host's (CPU ops and
 * runtime calls), then the GPU's computation (kernels, copies, sets),
 * then its communication kernels, each in time order. A filter that
 * changes one kind (graph-retime the GPU's computation, graph-scale-dp
 * the collectives) then finds the frames of the others untouched and
 * writes them on as they came: in time order every frame held a kernel
 * (graph-retime compressed again two thirds of a stream's bytes). Event
 * x's run, 0 to 2; the runs are taken by a pass over the tasks each,
 * since an array of the order would be at the build's peak (4 bytes a
 * task: 9 MB of the 1 GB trace's 240).
 */
int
task_run(const struct gb *g, uint32_t x)
{
	const struct ev *e = &g->t->ev[x];

	if (e->cls == EV_OP || e->cls == EV_RT)
		return 0;
	if (e->cls == EV_KERN && commkern_memo(g->ckm, e->name, g->t->str.str[e->name]) >= 0)
		return 2;
	return 1;
}

/* Fill a task record for event x; the structure tags' bits (tags_at). */
int
make_task(const struct gb *g, uint32_t x, int64_t tbase, struct kg_task *k)
{
	const struct trace *t = g->t;
	const struct ev *e = &t->ev[x];
	uint32_t op = KG_NONE;
	int tagged = 0;

	kg_task_init(k);
	k->id = g->task[x];
	k->proc = g->outproc[e->proc];
	k->name = e->name;
	k->dur = get_dur(g, x);
	k->odur = e->dur;
	k->ts = e->ts - tbase;
	k->iter = g->iter[x] == INT32_MIN ? -1 : g->iter[x];
	if (e->cls != EV_OP)
		k->corr = e->corr == NO_CORR ? -1 : (int64_t)e->corr;
	if ((e->cls == EV_OP || e->cls == EV_RT) && g->o->pcost > 0)
		k->prof = g->o->pcost > KG_TIME_MAX / (int64_t)(g->pev[x] + 1) ? KG_TIME_MAX :
		    g->o->pcost * (int64_t)g->pev[x];
	switch (e->cls) {
	case EV_OP:
		k->kind = KG_CPU;
		set_shapes(t, e, k);
		break;
	case EV_RT:
		k->kind = KG_RT;
		op = g->encl[x];
		break;
	default:
		k->kind = e->cls == EV_KERN ? KG_KERN : e->cls == EV_CPY ? KG_CPY : KG_SET;
		if (g->launch[x] != KG_NONE)
			op = g->encl[g->launch[x]];
		if (e->cls != EV_KERN && e->extra != KG_NONE)
			k->bytes = t->bytes[e->extra];
		break;
	}
	if (op != KG_NONE) {
		k->op = t->ev[op].name;
		k->ocall = op; /* the op's event: one id a call */
		set_shapes(t, &t->ev[op], k);
	}
	/* Rule 7: a CPU task is tagged where it starts, a GPU task where its
	 * launch call does. */
	if (e->cls == EV_OP || e->cls == EV_RT)
		tagged = tags_at(&g->tags, e->proc, e->ts, g->iter[x], k);
	else if (g->launch[x] != KG_NONE)
		tagged = tags_at(&g->tags, t->ev[g->launch[x]].proc, t->ev[g->launch[x]].ts,
		    g->iter[g->launch[x]], k);
	else if (g->tags.stage >= 0) /* launched before the window: the rank's stage */
		k->stage = g->tags.stage, tagged = TAG_ST_INF;
	if (e->cls == EV_KERN) {
		int c = commkern_memo(g->ckm, e->name, t->str.str[e->name]), opc = KG_COLL_NONE,
		    depth;
		const struct collmeta *cm = NULL;
		uint32_t up;

		if (c < 0)
			return tagged;
		k->kind = KG_COLL;
		/* Metadata on the kernel, else on the nearest enclosing op that
		 * has it; the type, failing metadata, from a c10d:: op's name. */
		if (e->extra != KG_NONE)
			cm = &t->coll[e->extra];
		for (up = op, depth = 0; up != KG_NONE && depth < 16; up = g->encl[up], depth++) {
			const char *on = t->str.str[t->ev[up].name];

			if (cm == NULL && t->ev[up].extra != KG_NONE)
				cm = &t->coll[t->ev[up].extra];
			if (opc == KG_COLL_NONE && (starts(on, "c10d::") || starts(on, "nccl:")))
				opc = coll_from_meta(on);
		}
		if (cm != NULL && cm->name != KG_NONE) {
			int mc = coll_from_meta(t->str.str[cm->name]);

			if (mc != KG_COLL_NONE)
				c = mc;
		} else if (opc != KG_COLL_NONE && !(c == KG_COLL_SENDRECV && opc != KG_COLL_ALLTOALL)) {
			c = opc; /* all_to_all runs as SendRecv kernels */
		}
		k->coll = c == KG_COLL_NONE ? KG_COLL_NONE : c;
		if (cm != NULL) {
			int64_t ne = cm->in_nelems > cm->out_nelems ? cm->in_nelems : cm->out_nelems;
			int64_t sz = cm->dtype != KG_NONE ? dtype_size(t->str.str[cm->dtype]) : 0;

			k->gsize = cm->gsize;
			k->seq = cm->seq;
			k->pg = cm->pg;
			k->pgr = cm->pgr;
			if (k->pgr == KG_NONE && cm->pg != KG_NONE) {
				/* the group by name only: distributedInfo's table */
				size_t q;

				for (q = 0; q < t->npgcfg; q++)
					if (t->pgcfg[q].name == cm->pg)
						k->pgr = t->pgcfg[q].ranks;
			}
			k->dtype = cm->dtype;
			if (ne > 0 && sz > 0)
				k->bytes = (uint64_t)ne * (uint64_t)sz;
		}
		if (k->bytes == 0 && g->launch[x] != KG_NONE) {
			const struct collmeta *a = comm_annotation(g, g->launch[x]);
			int64_t sz = a != NULL && a->dtype != KG_NONE ?
			    dtype_size(t->str.str[a->dtype]) : 0;

			if (a != NULL && a->in_nelems > 0 && sz > 0) {
				k->bytes = (uint64_t)a->in_nelems * (uint64_t)sz;
				if (k->dtype == KG_NONE)
					k->dtype = a->dtype;
			}
		}
	}
	return tagged;
}

static int
cmp_memev(const void *a, const void *b)
{
	const struct memev *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/*
 * Rule 8: an allocator event goes with the CPU task its thread is
 * running when it happens; when that thread runs none (its last task
 * ended, or it has none yet), with the task that started last at or
 * before it on any thread: PyTorch's main thread frees the autograd
 * graph's tensors while the backward runs on its own thread, and those
 * frees belong where they happen in time, not with the main thread's
 * last forward task. One before any task goes with none and is
 * counted. A task keeps the most bytes allocated and reserved after its
 * events, the bytes they allocated less those they freed, and the most
 * bytes above the level before its first event (Total Allocated less
 * Bytes) it reached: the excursion, which replays anywhere.
 */
void
mem_attach(struct gb *g, struct memtask *m)
{
	struct trace *t = g->t;
	uint32_t *last, latest = KG_NONE;
	int64_t *base;
	size_t i, j = 0;

	memset(m, 0, sizeof(*m));
	if (t->nmem == 0)
		return;
	qsort(t->mem, t->nmem, sizeof(*t->mem), cmp_memev);
	m->peak = xmalloc((g->ntask + 1) * sizeof(*m->peak));
	m->rpeak = xmalloc((g->ntask + 1) * sizeof(*m->rpeak));
	m->net = xcalloc(g->ntask + 1, sizeof(*m->net));
	m->exc = xmalloc((g->ntask + 1) * sizeof(*m->exc));
	base = xmalloc((g->ntask + 1) * sizeof(*base));
	last = xmalloc((t->nproc + 1) * sizeof(*last));
	for (i = 0; i < g->ntask; i++)
		m->peak[i] = m->rpeak[i] = m->exc[i] = -1;
	for (i = 0; i < t->nproc; i++)
		last[i] = KG_NONE;
	for (i = 0; i < t->nmem; i++) {
		const struct memev *e = &t->mem[i];
		uint32_t k;

		for (; j < g->ntask && t->ev[g->order[j]].ts <= e->ts; j++) {
			const struct ev *x = &t->ev[g->order[j]];

			if (x->cls == EV_OP || x->cls == EV_RT)
				last[x->proc] = latest = (uint32_t)j;
		}
		k = e->proc < t->nproc ? last[e->proc] : KG_NONE;
		if (k == KG_NONE || end_of(&t->ev[g->order[k]]) < e->ts)
			k = latest;
		if (k == KG_NONE) {
			m->unattached++;
			continue;
		}
		m->attached++;
		if (m->peak[k] < 0) {
			m->peak[k] = m->exc[k] = 0;
			base[k] = e->alloc - e->bytes;
		}
		m->net[k] += e->bytes;
		if (e->alloc > m->peak[k])
			m->peak[k] = e->alloc;
		if (e->alloc - base[k] > m->exc[k])
			m->exc[k] = e->alloc - base[k];
		if (e->reserved > m->rpeak[k])
			m->rpeak[k] = e->reserved;
	}
	free(base);
	free(last);
}
