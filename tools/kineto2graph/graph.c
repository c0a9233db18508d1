/*
 * Building the graph of one trace: which events become tasks, their
 * iteration, and the dependencies of formats/graph-stream.md with the
 * rules of kineto2graph(1). The rules, in the order they run:
 *
 * 1. Iterations. ProfilerStep#N ranges on the CPU give iteration N to
 *    every CPU event that starts inside one; a GPU task takes its launch's
 *    iteration (its own start if it has no launch in the trace).
 * 2. Flattening. On each thread, CPU ops nest. The tasks are the leaves:
 *    runtime calls always, and CPU ops with no event inside them. The
 *    host time of the enclosing ops (and of Python between ops) lives on
 *    as the delay of the `thread` edge between consecutive leaves, so a
 *    thread's timeline replays exactly. User annotations are ranges, not
 *    tasks.
 * 3. Launches join by correlation; streams are serial in start order.
 * 4. Runtime calls are walked in time order across threads, tracking the
 *    last task launched on each stream, to bind synchronizations and
 *    event waits (explicit from cuda_sync records, else inferred).
 *    A launch call whose work began before it returned keeps its time
 *    until then; the rest is host time after it.
 * 5. Hand-off between the main thread and threads that run CPU ops
 *    (autograd's backward thread).
 * 6. GPU gaps: time a GPU task waited beyond what holds it in the graph
 *    is bound to another stream's task that just ended, or kept as a
 *    delay (explain_gaps).
 */
#include <stdlib.h>
#include <string.h>

#include "commkern.h"
#include "rtapi.h"
#include "k2g.h"
#include "psort.h"
#include "util.h"

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

static void
umap_init(struct umap *m, size_t hint)
{
	m->cap = 64;
	while (m->cap < hint * 2)
		m->cap *= 2;
	m->key = xmalloc(m->cap * sizeof(*m->key));
	m->val = xmalloc(m->cap * sizeof(*m->val));
	memset(m->key, 0xff, m->cap * sizeof(*m->key));
	m->n = 0;
}

static void
umap_release(struct umap *m)
{
	free(m->key);
	free(m->val);
}

static size_t
umap_slot(const struct umap *m, uint32_t k)
{
	size_t i = (k * 2654435761u) & (m->cap - 1);

	while (m->key[i] != UINT32_MAX && m->key[i] != k)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static void umap_put(struct umap *m, uint32_t k, uint32_t v);

static void
umap_grow(struct umap *m)
{
	struct umap n;
	size_t i;

	n.cap = m->cap * 2;
	n.key = xmalloc(n.cap * sizeof(*n.key));
	n.val = xmalloc(n.cap * sizeof(*n.val));
	memset(n.key, 0xff, n.cap * sizeof(*n.key));
	n.n = 0;
	for (i = 0; i < m->cap; i++)
		if (m->key[i] != UINT32_MAX)
			umap_put(&n, m->key[i], m->val[i]);
	umap_release(m);
	*m = n;
}

/* First writer wins: a correlation names one call. */
static void
umap_put(struct umap *m, uint32_t k, uint32_t v)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap)
		umap_grow(m);
	i = umap_slot(m, k);
	if (m->key[i] == UINT32_MAX) {
		m->key[i] = k;
		m->val[i] = v;
		m->n++;
	}
}

static uint32_t
umap_get(const struct umap *m, uint32_t k)
{
	size_t i = umap_slot(m, k);

	return m->key[i] == k ? m->val[i] : KG_NONE;
}

struct gap;

/* Build state. Arrays indexed by event hold KG_NONE where not applicable. */
/* A run of a backward thread's tasks: its first and last (rule 5). */
struct brun {
	uint32_t first, last;
};

struct annref {
	int64_t ts;
	uint32_t ev;
};

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

static const struct ev *sort_ev; /* qsort has no context argument */

static int64_t
end_of(const struct ev *e)
{
	return e->ts + e->dur;
}

/*
 * Calls whose simulated duration d differs from the trace's, d in [0,
 * original]: a synchronizing call keeps its time after the wait, a
 * blocking copy's call its time before the copy; a launch call whose work
 * began on the GPU before the call returned keeps its time until then
 * (`prefix`), and the rest of the call becomes host time after it (added
 * to the delay of its thread edge, see tail_of).
 */
static void
set_dur(struct gb *g, uint32_t x, int64_t d, int prefix)
{
	uint32_t i = umap_get(&g->newdur, x);

	if (d < 0)
		d = 0;
	if (d > g->t->ev[x].dur)
		d = g->t->ev[x].dur;
	if (i == KG_NONE) {
		umap_put(&g->newdur, x, (uint32_t)g->ndurv);
		VEC_PUSH(g->durv, g->ndurv, g->capdurv, d);
		i = (uint32_t)(g->ndurv - 1);
		grow(&g->durpre, &g->capdurpre, g->ndurv, 1);
	} else {
		g->durv[i] = d;
	}
	g->durpre[i] = (uint8_t)prefix;
}

/* Host time a prefix-cut call leaves to the gap after it. */
static int64_t
tail_of(const struct gb *g, uint32_t x)
{
	uint32_t i = umap_get(&g->newdur, x);

	return i != KG_NONE && g->durpre[i] ? g->t->ev[x].dur - g->durv[i] : 0;
}

/*
 * The GPU the rank ran on: deviceProperties lists the node's devices
 * (8 on the DLRM and HTA traces), so the one is the device that most of
 * the selected GPU tasks ran on (a stream's pid is its device); with no
 * GPU task, the only device listed, if one is.
 */
static void
set_gpu(const struct trace *t, const uint32_t *gpu, size_t ngpu, struct kg_header *h)
{
	int64_t best = -1, n, bestn = 0, *per;
	size_t i, j;

	h->gpu_mem = h->gpu_sms = -1;
	if (t->ndev == 0)
		return;
	if (ngpu == 0 && t->ndev == 1)
		best = t->dev[0].id;
	per = xcalloc(t->nproc + 1, sizeof(*per));
	for (j = 0; j < ngpu; j++)
		per[t->ev[gpu[j]].proc]++;
	for (i = 0; i < t->ndev; i++) {
		for (n = 0, j = 0; j < t->nproc; j++)
			if (t->proc[j].gpu && t->proc[j].pid == t->dev[i].id)
				n += per[j];
		if (n > bestn)
			best = t->dev[i].id, bestn = n;
	}
	free(per);
	for (i = 0; i < t->ndev; i++) {
		if (t->dev[i].id != best || (ngpu > 0 && bestn == 0))
			continue;
		if (t->dev[i].name != KG_NONE)
			h->gpu = t->str.str[t->dev[i].name];
		h->gpu_mem = t->dev[i].mem;
		h->gpu_sms = t->dev[i].sms;
		return;
	}
}

/* An event's Input Dims and Input type onto its task (or its kernels'). */
static void
set_shapes(const struct trace *t, const struct ev *e, struct kg_task *k)
{
	if (e->shapes == KG_NONE)
		return;
	k->shapes = t->shp[e->shapes].dims;
	k->itypes = t->shp[e->shapes].types;
}

static int64_t
get_dur(const struct gb *g, uint32_t x)
{
	uint32_t i = umap_get(&g->newdur, x);

	return i == KG_NONE ? g->t->ev[x].dur : g->durv[i];
}

static int
cmp_cpu(const void *a, const void *b)
{
	const struct ev *x = &sort_ev[*(const uint32_t *)a];
	const struct ev *y = &sort_ev[*(const uint32_t *)b];

	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->dur != y->dur) /* the enclosing event first */
		return x->dur > y->dur ? -1 : 1;
	if (x->cls != y->cls) /* an op before the runtime call it makes */
		return x->cls < y->cls ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int
cmp_time(const void *a, const void *b)
{
	const struct ev *x = &sort_ev[*(const uint32_t *)a];
	const struct ev *y = &sort_ev[*(const uint32_t *)b];

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int
cmp_step(const void *a, const void *b)
{
	const struct step *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->n < y->n ? -1 : x->n > y->n;
}

/* By number, then as the trace gave them: the first of a number first. */
static int
cmp_step_n(const void *a, const void *b)
{
	const struct step *x = a, *y = b;

	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int
is_gpu(const struct ev *e)
{
	return e->cls == EV_KERN || e->cls == EV_CPY || e->cls == EV_SET;
}

static const char *
evname(const struct gb *g, const struct ev *e)
{
	return g->t->str.str[e->name];
}

static int
starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Iteration of time ts: the step whose range holds it. */
static int32_t
iter_at(const struct gb *g, int64_t ts)
{
	size_t lo = 0, hi = g->nsteps;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (g->steps[mid].ts <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && ts < g->steps[lo - 1].end)
		return (int32_t)g->steps[lo - 1].n;
	return INT32_MIN;
}

static int
iter_selected(const struct gb *g, int32_t it)
{
	if (g->nsteps == 0)
		return 1;
	if (it == INT32_MIN)
		return 0;
	return g->o->all_iters || it == g->o->iter;
}

static int
find_steps(struct gb *g, char *err, size_t errlen)
{
	struct trace *t = g->t;
	size_t i, j, cap = 0;

	for (i = 0; i < t->nev; i++) {
		const struct ev *e = &t->ev[i];
		const char *n;
		int64_t num;

		if (e->cls != EV_ANNOT)
			continue;
		n = evname(g, e);
		if (!starts(n, "ProfilerStep#") || parse_i64(n + 13, 0, INT32_MAX, &num) < 0)
			continue;
		grow(&g->steps, &cap, g->nsteps + 1, sizeof(*g->steps));
		g->steps[g->nsteps].n = num;
		g->steps[g->nsteps].ts = e->ts;
		g->steps[g->nsteps].end = e->ts + e->dur;
		g->steps[g->nsteps].proc = e->proc;
		g->steps[g->nsteps].seq = g->nsteps;
		g->nsteps++;
	}
	/* A step seen again (a GPU-side copy) is the first one's: sorted by
	 * number, each but the first of a number goes (n log n, not a scan
	 * of the steps for each) */
	if (g->nsteps > 1)
		qsort(g->steps, g->nsteps, sizeof(*g->steps), cmp_step_n);
	for (i = 0, j = 0; i < g->nsteps; i++)
		if (j == 0 || g->steps[i].n != g->steps[j - 1].n)
			g->steps[j++] = g->steps[i];
	g->nsteps = j;
	if (g->nsteps > 1)
		qsort(g->steps, g->nsteps, sizeof(*g->steps), cmp_step);
	/* Steps abut; clock jitter can make one end a little after the next starts. */
	for (i = 1; i < g->nsteps; i++)
		if (g->steps[i - 1].end > g->steps[i].ts)
			g->steps[i - 1].end = g->steps[i].ts;
	if (!g->o->all_iters) {
		for (i = 0; i < g->nsteps; i++)
			if (g->steps[i].n == g->o->iter)
				break;
		if (g->nsteps == 0) {
			snprintf(err, errlen, "no ProfilerStep in the trace, so no iteration %lld",
			    (long long)g->o->iter);
			return -1;
		}
		if (i == g->nsteps) {
			char have[128];
			size_t k, n = 0;

			/* Name the steps there are: a list if short, else a range. */
			if (g->nsteps <= 8)
				for (k = 0; k < g->nsteps && n < sizeof(have); k++)
					n += (size_t)snprintf(have + n, sizeof(have) - n, "%s%lld",
					    k ? ", " : "", (long long)g->steps[k].n);
			else
				snprintf(have, sizeof(have), "%lld to %lld", (long long)g->steps[0].n,
				    (long long)g->steps[g->nsteps - 1].n);
			snprintf(err, errlen, "no iteration %lld (the trace has %s)",
			    (long long)g->o->iter, have);
			return -1;
		}
	}
	if (g->nsteps > 0)
		g->main_proc = g->steps[0].proc;
	return 0;
}

/*
 * Is e inside op? It starts in it; or, both starting at the same
 * microsecond, it ends no later: the zero-length pairs of PyTorch's
 * integer-microsecond clock (aten::item calling _local_scalar_dense) are
 * a call and its callee far more often than two calls in a row.
 */
static int
inside(const struct ev *e, const struct ev *op)
{
	if (e->ts < op->ts)
		return 0;
	if (e->ts < op->ts + op->dur)
		return 1;
	return e->ts == op->ts && e->ts + e->dur <= op->ts + op->dur;
}

/*
 * Rule 2: walk each thread's CPU events in (start, longest first) order
 * with a stack of open ops. An event inside the top of the stack (see
 * inside()) is its child; an op that gets something inside is no leaf.
 * Runtime calls never enclose anything: an event that starts inside one
 * is clock jitter, and follows it.
 */
static void
flatten(struct gb *g, uint32_t *cpu, size_t ncpu, uint8_t *leaf)
{
	struct trace *t = g->t;
	uint32_t *stack = NULL;
	size_t sp = 0, cap = 0, i;
	uint32_t proc = KG_NONE;

	for (i = 0; i < ncpu; i++) {
		uint32_t x = cpu[i];
		const struct ev *e = &t->ev[x];

		if (e->proc != proc) {
			sp = 0;
			proc = e->proc;
		}
		while (sp > 0 && !inside(e, &t->ev[stack[sp - 1]]))
			sp--;
		g->encl[x] = sp > 0 ? stack[sp - 1] : KG_NONE;
		if (sp > 0)
			leaf[stack[sp - 1]] = 0;
		leaf[x] = 1;
		if (e->cls == EV_OP) {
			grow(&stack, &cap, sp + 1, sizeof(*stack));
			stack[sp++] = x;
		}
	}
	free(stack);
}

/*
 * The profiler's own cost lives where it recorded something: each CPU op
 * and runtime call it recorded costs it time on the thread, at the op's
 * entry (its inputs' shapes, its event) and exit, and so does each
 * allocator event (profile_memory). Each leaf accounts for itself, for
 * the ops that began on its thread since the leaf before it (those
 * around it that it is the first leaf of) and for the allocator events
 * its thread made since then: every event once.
 */
struct pmem {
	uint32_t proc;
	int64_t ts;
};

static int
cmp_pmem(const void *a, const void *b)
{
	const struct pmem *x = a, *y = b;

	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void
profiled_events(struct gb *g, const uint32_t *cpu, size_t ncpu, const uint8_t *leaf)
{
	const struct trace *t = g->t;
	uint32_t proc = KG_NONE, n = 0;
	struct pmem *pm = xmalloc((t->nmem + 1) * sizeof(*pm));
	size_t i, j = 0;

	for (i = 0; i < t->nmem; i++)
		pm[i].proc = t->mem[i].proc, pm[i].ts = t->mem[i].ts;
	if (t->nmem > 1)
		qsort(pm, t->nmem, sizeof(*pm), cmp_pmem);
	for (i = 0; i < ncpu; i++) {
		uint32_t x = cpu[i];
		const struct ev *e = &t->ev[x];

		if (e->proc != proc) {
			proc = e->proc;
			n = 0;
		}
		for (; j < t->nmem && (pm[j].proc < proc || (pm[j].proc == proc && pm[j].ts <= e->ts));
		    j++)
			n += pm[j].proc == proc && n < UINT32_MAX;
		if (n < UINT32_MAX)
			n++;
		if (leaf[x]) {
			g->pev[x] = n;
			n = 0;
		}
	}
	free(pm);
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
static void
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
 * What a runtime call does (an rtapi role, rtapi.h: CUDA and HIP alike);
 * asked once a name (g->rtc, 0 before; the role plus one): a trace makes
 * millions of calls of a few dozen names.
 */
static int
rt_role(struct gb *g, uint32_t name)
{
	int c;

	if (name < g->nrtc && g->rtc[name] != 0)
		return g->rtc[name] - 1;
	c = rtapi_role(g->t->str.str[name]);
	if (name < g->nrtc)
		g->rtc[name] = (uint8_t)(c + 1);
	return c;
}

static void
edge(struct gb *g, uint32_t src, uint32_t dst, int kind, int64_t delay, int how,
    uint32_t on, uint32_t via, uint32_t at)
{
	struct kg_edge e;

	if (kind == KG_E_EVENT && g->dry) {
		/* What cross-stream waits hold dst until: see explain_gaps. */
		uint32_t i = umap_get(&g->evmap, dst);

		if (i == KG_NONE) {
			umap_put(&g->evmap, dst, (uint32_t)g->nevheld);
			VEC_PUSH(g->evheld, g->nevheld, g->capevheld, end_of(&g->t->ev[src]) + delay);
		} else if (end_of(&g->t->ev[src]) + delay > g->evheld[i]) {
			g->evheld[i] = end_of(&g->t->ev[src]) + delay;
		}
	}
	if (g->werr || g->dry)
		return;
	kg_edge_init(&e);
	e.src = g->task[src];
	e.dst = g->task[dst];
	e.kind = kind;
	if (kind == KG_E_EVENT && umap_get(&g->evgap, dst) != KG_NONE)
		delay += umap_get(&g->evgap, dst);
	e.delay = delay > 0 ? delay : 0;
	e.how = how;
	e.on = on == KG_NONE ? KG_NONE : g->outproc[on];
	e.via = via == KG_NONE ? KG_NONE : g->task[via];
	e.at = at == KG_NONE ? KG_NONE : g->task[at];
	/* a graph launch's GPU tasks: said on the edge (gl) */
	e.graph = kind == KG_E_LAUNCH && how == KG_HOW_TRACE && g->t->ev[src].cls == EV_RT &&
	    rt_role(g, g->t->ev[src].name) == RTAPI_GRAPH;
	if (kg_write_edge(g->w, &e) < 0)
		g->werr = 1;
	g->nedges++;
}


/* What a pending cross-stream wait remembers until the next launch on its stream. */
#define NRECENT 8 /* streams a thread launched onto lately, for inference */

struct wait {
	uint32_t src;     /* GPU event the record captured, KG_NONE if none */
	uint32_t rec, at; /* the record and wait calls */
	uint32_t stream;  /* trace proc of the recording stream */
	int how;
	/* Inferred waits: candidates in order of preference, tried at the
	 * next launch; see bind_inferred. */
	uint32_t cand[NRECENT + 2], cstream[NRECENT + 2], crec[NRECENT + 2];
	int ncand;
};

struct record {
	uint32_t src, stream, call;
	int how;
};

/*
 * An inferred wait binds to the candidate, on a stream other than the
 * waiting one, that ends last without the trace contradicting it: a task
 * that ended after the waiting task started (past 1 us of clock jitter)
 * cannot have been waited for, and of the rest the latest is the one
 * that explains the waiting task's start best (a stream held back by a
 * wait starts right after what it waited for). Ties go to the earlier
 * candidate in the order they were gathered.
 */
static int
bind_inferred(const struct gb *g, struct wait *wt, uint32_t gx)
{
	int i, best = -1;

	for (i = 0; i < wt->ncand; i++) {
		const struct ev *src = &g->t->ev[wt->cand[i]];

		if (wt->cstream[i] == g->t->ev[gx].proc)
			continue;
		if (end_of(src) > g->t->ev[gx].ts + 1000)
			continue;
		if (best < 0 || end_of(src) > end_of(&g->t->ev[wt->cand[best]]))
			best = i;
	}
	if (best < 0)
		return -1;
	wt->src = wt->cand[best];
	wt->stream = wt->cstream[best];
	wt->rec = wt->crec[best];
	return 0;
}

/*
 * Rule 4: runtime calls in time order across threads. `last[s]` is the
 * GPU event launched last on stream s so far.
 */
static void
bind_runtime(struct gb *g, uint32_t *rts, size_t nrt)
{
	struct trace *t = g->t;
	struct kg_cov *cov = g->cov;
	struct umap syncs, recmap, waitstream;
	uint32_t *last = xmalloc(t->nproc * sizeof(*last));
	uint32_t *thr_stream = xmalloc(t->nproc * sizeof(*thr_stream));
	uint32_t (*recent)[NRECENT] = xmalloc(t->nproc * sizeof(*recent));
	uint32_t *thr_record = xmalloc(t->nproc * sizeof(*thr_record));
	char *capturing = xcalloc(t->nproc, 1); /* a thread between capture calls */
	struct wait **twait = xcalloc(t->nproc, sizeof(*twait));
	size_t *ntwait = xcalloc(t->nproc, sizeof(*ntwait));
	size_t *captwait = xcalloc(t->nproc, sizeof(*captwait));
	int64_t *thr_launch_ts = xmalloc(t->nproc * sizeof(*thr_launch_ts));
	struct wait **pend = xcalloc(t->nproc, sizeof(*pend));
	size_t *npend = xcalloc(t->nproc, sizeof(*npend));
	size_t *cappend = xcalloc(t->nproc, sizeof(*cappend));
	struct record *recs = NULL;
	size_t nrecs = 0, caprecs = 0, i, j;

	for (i = 0; i < t->nproc; i++) {
		last[i] = thr_stream[i] = thr_record[i] = KG_NONE;
		for (j = 0; j < NRECENT; j++)
			recent[i][j] = KG_NONE;
		thr_launch_ts[i] = INT64_MIN;
	}
	umap_init(&syncs, t->nsync);
	umap_init(&waitstream, t->nsync);
	umap_init(&recmap, 64);
	for (i = 0; i < t->nev; i++) {
		const struct ev *e = &t->ev[i];
		const struct syncrec *s;

		if (e->cls != EV_SYNC)
			continue;
		s = &t->sync[e->extra];
		if (e->corr != NO_CORR)
			umap_put(&syncs, e->corr, (uint32_t)i);
		/* Which stream a cudaEventRecord recorded on, named by a waiter. */
		if (s->wait_corr >= 0 && s->wait_corr < NO_CORR && s->wait_stream >= 0)
			umap_put(&waitstream, (uint32_t)s->wait_corr,
			    trace_proc(t, s->device, s->wait_stream, 1));
	}

	for (i = 0; i < nrt; i++) {
		uint32_t x = rts[i], th = t->ev[x].proc, gx, sx, prev;
		const struct ev *e = &t->ev[x];
		const struct syncrec *sr = NULL;
		int sel = g->sel[x], rc = rt_role(g, e->name);

		sx = e->corr != NO_CORR ? umap_get(&syncs, e->corr) : KG_NONE;
		if (sx != KG_NONE)
			sr = &t->sync[t->ev[sx].extra];

		if (g->nextgpu[x] != KG_NONE) { /* a launch */
			int blocking = 0;

			for (gx = g->nextgpu[x]; gx != KG_NONE; gx = g->nextgpu[gx]) {
				uint32_t s = t->ev[gx].proc;

				if (rc == RTAPI_GRAPH && g->sel[gx])
					kg_cov_add(cov, "launch_graph", 1);

				/* Waits pending on this stream bind to its next task. */
				for (j = 0; j < npend[s]; j++) {
					struct wait *wt = &pend[s][j];

					if (wt->src != KG_NONE && t->ev[wt->src].proc != s &&
					    g->sel[wt->src] && g->sel[gx]) {
						edge(g, wt->src, gx, KG_E_EVENT, 0, wt->how,
						    wt->stream, wt->rec, wt->at);
					}
					if (g->sel[gx])
						kg_cov_add(cov, wt->how == KG_HOW_EXPLICIT ?
						    "wait_explicit" : "wait_inferred", 1);
				}
				npend[s] = 0;
				/* Inferred waits on this thread bind to this launch's stream. */
				for (j = 0; j < ntwait[th]; j++) {
					struct wait *wt = &twait[th][j];
					size_t k;

					if (bind_inferred(g, wt, gx) < 0) {
						wt->src = KG_NONE;
						if (g->sel[gx])
							kg_cov_add(cov, "wait_unresolved", 1);
						continue;
					}
					for (k = 0; k < j; k++) /* one edge per source */
						if (twait[th][k].src == wt->src)
							break;
					if (k == j && wt->stream != s && g->sel[wt->src] && g->sel[gx])
						edge(g, wt->src, gx, KG_E_EVENT, 0, KG_HOW_INFERRED,
						    wt->stream, wt->rec, wt->at);
					if (g->sel[gx])
						kg_cov_add(cov, "wait_inferred", 1);
				}
				ntwait[th] = 0;
				prev = last[s];
				if (last[s] == KG_NONE || t->ev[gx].ts >= t->ev[last[s]].ts)
					last[s] = gx;
				thr_stream[th] = s;
				/* Move s to the front of the thread's recent streams. */
				for (j = 0; j < NRECENT - 1 && recent[th][j] != s; j++)
					;
				for (; j > 0; j--)
					recent[th][j] = recent[th][j - 1];
				recent[th][0] = s;
				thr_launch_ts[th] = e->ts;
				/* Blocking copies: the thread goes on only after the copy. */
				if (t->ev[gx].cls == EV_CPY && sel && g->sel[gx] &&
				    (rc == RTAPI_COPY_SYNC ||
				     (strstr(evname(g, &t->ev[gx]), "Pageable") &&
				      end_of(e) >= end_of(&t->ev[gx])))) {
					uint32_t nx = g->nextleaf[x];

					int64_t from = e->ts;

					/* The call's own time: until the copy began, less
					 * any wait for the stream's previous task. */
					if (prev != KG_NONE && end_of(&t->ev[prev]) > from)
						from = end_of(&t->ev[prev]);
					kg_cov_add(cov, "copy_blocking", 1);
					set_dur(g, x, t->ev[gx].ts - from, 0);
					blocking = 1;
					if (nx != KG_NONE)
						edge(g, gx, nx, KG_E_SYNC, t->ev[nx].ts - end_of(&t->ev[gx]),
						    KG_HOW_TRACE, s, x, KG_NONE);
				}
			}
			/* Work that began before the call returned: the call's
			 * own time ends there (rule 4, launch overlap). */
			if (!blocking && sel) {
				int64_t first = INT64_MAX;

				for (gx = g->nextgpu[x]; gx != KG_NONE; gx = g->nextgpu[gx])
					if (g->sel[gx] && t->ev[gx].ts < first)
						first = t->ev[gx].ts;
				if (first < end_of(e)) {
					set_dur(g, x, first - e->ts, 1);
					kg_cov_add(cov, "launch_overlap", 1);
				}
			}
			continue;
		}
		if (rc == RTAPI_CAPTURE_BEGIN)
			capturing[th] = 1;
		else if (rc == RTAPI_CAPTURE_END)
			capturing[th] = 0;
		else if (rtapi_puts_work(rc) && sel)
			kg_cov_add(cov, capturing[th] ? "launch_captured" : "launch_nogpu", 1);

		if (rc == RTAPI_RECORD) {
			struct record r;
			uint32_t ws = e->corr != NO_CORR ? umap_get(&waitstream, e->corr) : KG_NONE;

			r.call = x;
			r.how = ws != KG_NONE ? KG_HOW_EXPLICIT : KG_HOW_INFERRED;
			r.stream = ws != KG_NONE ? ws : thr_stream[th];
			r.src = r.stream != KG_NONE ? last[r.stream] : KG_NONE;
			VEC_PUSH(recs, nrecs, caprecs, r);
			if (e->corr != NO_CORR)
				umap_put(&recmap, e->corr, (uint32_t)(nrecs - 1));
			thr_record[th] = (uint32_t)(nrecs - 1);
		} else if (rc == RTAPI_WAIT) {
			struct wait wt;

			wt.at = x;
			if (sr != NULL && sr->kind == SYNC_WAIT_EVENT && sr->stream >= 0) {
				uint32_t b = trace_proc(t, sr->device, sr->stream, 1);
				uint32_t ri = sr->wait_corr >= 0 && sr->wait_corr < NO_CORR ?
				    umap_get(&recmap, (uint32_t)sr->wait_corr) : KG_NONE;

				wt.how = KG_HOW_EXPLICIT;
				if (ri != KG_NONE) {
					wt.src = recs[ri].src, wt.rec = recs[ri].call;
					wt.stream = recs[ri].stream;
				} else if (sr->wait_stream >= 0) {
					/* The record is before the window: bind to the
					 * recording stream as it is now. */
					wt.stream = trace_proc(t, sr->device, sr->wait_stream, 1);
					wt.src = wt.stream < t->nproc ? last[wt.stream] : KG_NONE;
					wt.rec = KG_NONE;
				} else {
					wt.src = wt.rec = wt.stream = KG_NONE;
				}
				if (wt.src == KG_NONE) {
					/* Known stream, nothing launched on it yet: no
					 * dependency. Unknown stream: unresolved. */
					if (sel)
						kg_cov_add(cov, wt.stream != KG_NONE ?
						    "wait_noop" : "wait_unresolved", 1);
				} else if (b < t->nproc) {
					grow(&pend[b], &cappend[b], npend[b] + 1, sizeof(**pend));
					pend[b][npend[b]++] = wt;
				}
			} else {
				/* Inferred, candidates in order: the event this
				 * thread recorded since its last launch; the last
				 * task of each stream the thread launched onto
				 * lately, most recent first (some traces hold no
				 * cudaEventRecord at all, and c10d records NCCL's
				 * events where the profiler does not see it); an
				 * older record of this thread. At the next launch,
				 * the first candidate on another stream that the
				 * trace does not contradict wins (bind_inferred). */
				const struct record *r = thr_record[th] != KG_NONE ?
				    &recs[thr_record[th]] : NULL;
				int fresh = r != NULL && t->ev[r->call].ts >= thr_launch_ts[th];
				int q;

				wt.how = KG_HOW_INFERRED;
				wt.ncand = 0;
				if (fresh && r->src != KG_NONE) {
					wt.cand[wt.ncand] = r->src, wt.cstream[wt.ncand] = r->stream;
					wt.crec[wt.ncand++] = r->call;
				}
				for (q = 0; q < NRECENT && recent[th][q] != KG_NONE; q++)
					if (last[recent[th][q]] != KG_NONE) {
						wt.cand[wt.ncand] = last[recent[th][q]];
						wt.cstream[wt.ncand] = recent[th][q];
						wt.crec[wt.ncand++] = KG_NONE;
					}
				if (!fresh && r != NULL && r->src != KG_NONE) {
					wt.cand[wt.ncand] = r->src, wt.cstream[wt.ncand] = r->stream;
					wt.crec[wt.ncand++] = r->call;
				}
				wt.src = wt.ncand > 0 ? wt.cand[0] : KG_NONE;
				if (wt.src != KG_NONE) {
					grow(&twait[th], &captwait[th], ntwait[th] + 1, sizeof(**twait));
					twait[th][ntwait[th]++] = wt;
				} else if (sel) {
					kg_cov_add(cov, "wait_unresolved", 1);
				}
			}
		} else if (rc == RTAPI_SYNC_STREAM || rc == RTAPI_SYNC_EVENT ||
		    rc == RTAPI_SYNC_DEVICE) {
			uint32_t src[64], on[64], via = x;
			size_t ns = 0, k;
			int how = KG_HOW_INFERRED;
			int64_t maxend = INT64_MIN;

			if (rc == RTAPI_SYNC_DEVICE) {
				/* Every stream of the device with work launched. */
				how = sr != NULL ? KG_HOW_EXPLICIT : KG_HOW_TRACE;
				for (k = 0; k < t->nproc && ns < 64; k++)
					if (t->proc[k].gpu && last[k] != KG_NONE)
						src[ns] = last[k], on[ns++] = (uint32_t)k;
			} else if (rc == RTAPI_SYNC_STREAM) {
				uint32_t s = thr_stream[th];

				if (sr != NULL && sr->stream >= 0) {
					s = trace_proc(t, sr->device, sr->stream, 1);
					how = KG_HOW_EXPLICIT;
				}
				if (s < t->nproc && last[s] != KG_NONE)
					src[ns] = last[s], on[ns++] = s;
			} else { /* event synchronize */
				uint32_t ri = thr_record[th];

				if (sr != NULL && sr->wait_corr >= 0 && sr->wait_corr < NO_CORR) {
					ri = umap_get(&recmap, (uint32_t)sr->wait_corr);
					how = KG_HOW_EXPLICIT;
				}
				if (ri != KG_NONE && recs[ri].src != KG_NONE) {
					src[ns] = recs[ri].src, on[ns++] = recs[ri].stream;
					via = recs[ri].call;
				}
			}
			for (k = 0; k < ns; k++) {
				if (end_of(&t->ev[src[k]]) > maxend)
					maxend = end_of(&t->ev[src[k]]);
				if (sel && g->sel[src[k]])
					edge(g, src[k], x, KG_E_SYNC, 0, how, on[k], via, KG_NONE);
			}
			if (sel) {
				kg_cov_add(cov, ns > 0 ? "sync_bound" : "sync_unbound", 1);
				if (ns > 0) {
					/* Keep only the time after the wait. */
					int64_t from = maxend > e->ts ? maxend : e->ts;
					int64_t d = end_of(e) - from;

					set_dur(g, x, d, 0);
				}
			}
		} else if (sr != NULL && sel) {
			kg_cov_add(cov, "sync_query", 1); /* a query: never blocks */
		}
	}
	for (i = 0; i < t->nproc; i++) {
		if (i < t->nproc && npend[i] > 0)
			kg_cov_add(cov, "wait_unresolved", (int64_t)npend[i]);
		free(pend[i]);
	}
	for (i = 0; i < t->nproc; i++) {
		if (ntwait[i] > 0)
			kg_cov_add(cov, "wait_unresolved", (int64_t)ntwait[i]);
		free(twait[i]);
	}
	free(twait);
	free(ntwait);
	free(captwait);
	free(thr_launch_ts);
	free(pend);
	free(npend);
	free(cappend);
	free(recs);
	free(last);
	free(thr_stream);
	free(recent);
	free(thr_record);
	free(capturing);
	umap_release(&syncs);
	umap_release(&recmap);
	umap_release(&waitstream);
}

struct endent {
	int64_t end;
	uint32_t x;
};

static int
cmp_end(const void *a, const void *b)
{
	const struct endent *p = a, *q = b;

	if (p->end != q->end)
		return p->end < q->end ? -1 : 1;
	return p->x < q->x ? -1 : p->x > q->x;
}

/*
 * Rule 6: a GPU task that starts well after everything known to hold it
 * back (its launch call, its stream's previous task, an event wait) was
 * held back by something the trace does not name: a wait inside a CUDA
 * graph (cudaGraphLaunch puts many kernels on streams at once, with the
 * graph's own cross-stream edges), an event whose record and wait the
 * profiler missed, or work it did not record. If a task of another
 * stream of the same device ended within GAP_SLACK before it started,
 * that task is taken as what it waited for: an `event` edge, inferred.
 * Otherwise the unexplained time is kept as the delay of the edge that
 * held it last (launch or stream order), as host gaps are kept on
 * thread edges: a replay keeps it, and says so in the coverage counts.
 */
#define GAP_SLACK 20000 /* ns */

struct gap {
	uint32_t src;   /* an other-stream task it waited for, or KG_NONE */
	int64_t dl;     /* else the delay to add */
	int8_t on_launch; /* ... on the launch edge (1), the stream edge (0), or an
	                   edge from the window's first task (2); 3 while held
	                   by an event wait (then one of the others) */
	int8_t small;   /* within GAP_SLACK: not counted as a gap */
	int8_t set;     /* this task has a gap */
};

static void
explain_gaps(struct gb *g, const uint32_t *gpu, size_t ngpu)
{
	const struct trace *t = g->t;
	struct endent *ends = xmalloc((ngpu + 1) * sizeof(*ends));
	size_t n = 0, i;

	g->gaps = xcalloc(ngpu + 1, sizeof(*g->gaps));
	for (i = 0; i < ngpu; i++)
		if (g->sel[gpu[i]] & 1)
			ends[n].end = end_of(&t->ev[gpu[i]]), ends[n++].x = gpu[i];
	if (n > 1)
		qsort(ends, n, sizeof(*ends), cmp_end);
	for (i = 0; i < ngpu; i++) {
		uint32_t x = gpu[i], prev = i > 0 && t->ev[gpu[i - 1]].proc == t->ev[x].proc ?
		    gpu[i - 1] : KG_NONE;
		const struct ev *e = &t->ev[x];
		int64_t held = INT64_MIN;
		size_t lo = 0, hi = n, k, steps;
		struct gap gp;

		if (prev != KG_NONE && !(g->sel[prev] & 1))
			prev = KG_NONE; /* (streams rarely hold unselected tasks between) */
		if (!(g->sel[x] & 1))
			continue;
		gp.on_launch = 0;
		if (g->launch[x] != KG_NONE) {
			/* the call's end as simulated: a launch overlap cuts it */
			held = t->ev[g->launch[x]].ts + get_dur(g, g->launch[x]);
			gp.on_launch = 1;
		}
		if (prev != KG_NONE && end_of(&t->ev[prev]) >= held) {
			held = end_of(&t->ev[prev]);
			gp.on_launch = 0;
		}
		if (umap_get(&g->evmap, x) != KG_NONE && g->evheld[umap_get(&g->evmap, x)] >= held &&
		    g->launch[x] != KG_NONE) {
			held = g->evheld[umap_get(&g->evmap, x)];
			gp.on_launch = 3; /* an event wait held it last */
		}
		if (held == INT64_MIN) {
			/* Launched before the window, first on its stream: it keeps
			 * its offset from the end of the window's first task
			 * (g->order[0]); an edge's delay runs from its source's end. */
			if (x == g->order[0] || e->ts <= end_of(&t->ev[g->order[0]]))
				continue;
			gp.on_launch = 2;
			gp.src = KG_NONE;
			gp.dl = e->ts - end_of(&t->ev[g->order[0]]);
			gp.small = 0;
			gp.set = 1;
			g->gaps[i] = gp;
			continue;
		}
		if (e->ts - held <= 0)
			continue;
		if (e->ts - held <= GAP_SLACK) {
			/* A small gap: the GPU's own time between tasks (about
			 * a microsecond on a busy stream, a few after a launch
			 * or an event wait). It is kept on the edge that held
			 * the task last: for an event wait, on its event edges. */
			if (gp.on_launch == 3) {
				umap_put(&g->evgap, x, (uint32_t)(e->ts - held));
				continue;
			}
			gp.src = KG_NONE;
			gp.dl = e->ts - held;
			gp.small = 1;
			gp.set = 1;
			g->gaps[i] = gp;
			continue;
		}
		gp.small = 0;
		while (lo < hi) { /* first end past e->ts */
			size_t mid = (lo + hi) / 2;

			if (ends[mid].end <= e->ts) /* ended by the time it started */
				lo = mid + 1;
			else
				hi = mid;
		}
		gp.src = KG_NONE;
		gp.dl = e->ts - held;
		for (k = lo, steps = 0; k-- > 0 && steps < 32; steps++) {
			const struct ev *y = &t->ev[ends[k].x];

			if (ends[k].end < e->ts - GAP_SLACK)
				break;
			if (y->proc == e->proc || t->proc[y->proc].pid != t->proc[e->proc].pid)
				continue;
			gp.src = ends[k].x;
			break;
		}
		if (gp.src == KG_NONE && gp.on_launch == 3) {
			/* Held last by an event wait that does not explain it:
			 * keep the time on the stream edge, else the launch's. */
			if (prev != KG_NONE)
				gp.on_launch = 0, gp.dl = e->ts - end_of(&t->ev[prev]);
			else
				gp.on_launch = 1, gp.dl = e->ts - end_of(&t->ev[g->launch[x]]);
		}
		gp.set = 1;
		g->gaps[i] = gp;
	}
	free(ends);
}

/* The delay rule 6 adds to the launch (on_launch 1) or stream edge into gpu[i]. */
static int64_t
gap_delay(const struct gb *g, size_t i, int on_launch)
{
	const struct gap *gp = &g->gaps[i];

	if (!gp->set || gp->src != KG_NONE || gp->on_launch != on_launch)
		return 0;
	return gp->dl;
}

/* The last main-thread leaf that ended by ts, and the first that starts at or after ts. */
static uint32_t
main_before(const struct gb *g, const uint32_t *m, size_t n, int64_t ts)
{
	size_t lo = 0, hi = n;
	const struct ev *ev = g->t->ev;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ev[m[mid]].ts <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo > 0 && end_of(&ev[m[lo - 1]]) > ts)
		lo--;
	return lo > 0 ? m[lo - 1] : KG_NONE;
}

static uint32_t
main_after(const struct gb *g, const uint32_t *m, size_t n, int64_t ts)
{
	size_t lo = 0, hi = n;
	const struct ev *ev = g->t->ev;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ev[m[mid]].ts < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n ? m[lo] : KG_NONE;
}

/* Did a main-thread leaf start in [a, b)? */
static int
main_between(const struct gb *g, const uint32_t *m, size_t n, int64_t a, int64_t b)
{
	uint32_t x = main_after(g, m, n, a);

	return x != KG_NONE && g->t->ev[x].ts < b;
}

/*
 * Rule 5: a thread other than the main one that runs CPU ops (autograd's
 * backward thread; in a trace without ops, a GPU-only profile of runtime
 * calls alone, a thread other than the first to call) works in runs: its tasks of one iteration, split where
 * the main thread ran in between (a training loop that calls backward
 * once per micro-batch hands over once per call). Each run starts after
 * the main thread's last task that had ended by then, and the main
 * thread's first task after the run ends waits for it.
 *
 * backward_runs finds the backward threads and their runs once, before
 * the tasks are written (rule 7 tags by them too); handoff writes the
 * edges.
 */
static void
backward_runs(struct gb *g, const uint32_t *cpu, size_t ncpu, const uint8_t *leaf)
{
	struct trace *t = g->t;
	size_t cap = 0, capr = 0, i, j;

	g->bwd = xcalloc(t->nproc + 1, 1);
	for (i = 0; i < ncpu; i++) {
		const struct ev *e = &t->ev[cpu[i]];

		if (e->proc == g->main_proc && leaf[cpu[i]] && g->sel[cpu[i]])
			VEC_PUSH(g->mleaf, g->nmleaf, cap, cpu[i]);
		/* any CPU op counts, leaf or not: autograd's ops enclose
		 * the launches that are its only tasks; in a trace without
		 * ops (a GPU-only profile), the launches themselves */
		if (e->proc != g->main_proc && (e->cls == EV_OP || (g->noops && e->cls == EV_RT)) &&
		    iter_selected(g, g->iter[cpu[i]]))
			g->bwd[e->proc] = 1;
	}
	if (g->nmleaf == 0)
		return;
	for (i = 0; i < ncpu; i = j) {
		uint32_t p = t->ev[cpu[i]].proc, first = KG_NONE, lastx = KG_NONE;

		for (j = i; j < ncpu && t->ev[cpu[j]].proc == p; j++)
			;
		if (!g->bwd[p])
			continue;
		for (size_t k = i; k <= j; k++) {
			uint32_t x = k < j ? cpu[k] : KG_NONE;

			if (x != KG_NONE && !(leaf[x] && g->sel[x]))
				continue;
			/* A run ends with the iteration, or where the main
			 * thread ran between two of its tasks (it was waiting,
			 * as in a backward call per micro-batch). */
			if (first != KG_NONE && (x == KG_NONE || g->iter[x] != g->iter[first] ||
			    main_between(g, g->mleaf, g->nmleaf, end_of(&t->ev[lastx]), t->ev[x].ts))) {
				struct brun r = { first, lastx };

				VEC_PUSH(g->runs, g->nruns, capr, r);
				first = KG_NONE;
			}
			if (x != KG_NONE) {
				if (first == KG_NONE)
					first = x;
				lastx = x;
			}
		}
	}
}

/*
 * The hand-offs: before a run, from the main thread's last task that had
 * ended; after it, to the main thread's first task that follows. Found
 * before the edges are written: the thread edge into a task a hand-off
 * wakes keeps no gap (the thread was waiting, not working; see the
 * thread edges in build).
 */
static void
handoff_pairs(struct gb *g)
{
	const struct ev *ev = g->t->ev;
	size_t i, cap = 0;

	for (i = 0; i < g->nruns; i++) {
		uint32_t first = g->runs[i].first, last = g->runs[i].last;
		uint32_t a = main_before(g, g->mleaf, g->nmleaf, ev[first].ts);
		uint32_t b = main_after(g, g->mleaf, g->nmleaf, end_of(&ev[last]));
		struct brun h;

		if (a != KG_NONE) {
			h.first = a, h.last = first;
			VEC_PUSH(g->hand, g->nhand, cap, h);
			umap_put(&g->hoff, first, a);
		}
		if (b != KG_NONE) {
			h.first = last, h.last = b;
			VEC_PUSH(g->hand, g->nhand, cap, h);
			umap_put(&g->hoff, b, last);
		}
	}
}

static void
handoff(struct gb *g)
{
	const struct ev *ev = g->t->ev;
	size_t i;

	for (i = 0; i < g->nhand; i++) {
		uint32_t a = g->hand[i].first, b = g->hand[i].last;

		edge(g, a, b, KG_E_HANDOFF, ev[b].ts - end_of(&ev[a]), KG_HOW_INFERRED,
		    KG_NONE, KG_NONE, KG_NONE);
	}
}

static int
cmp_outproc(const void *a, const void *b, const struct trace *t, uint32_t main)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct tproc *p = &t->proc[x], *q = &t->proc[y];

	if (p->gpu != q->gpu)
		return p->gpu - q->gpu;
	if (!p->gpu && (x == main) != (y == main))
		return x == main ? -1 : 1;
	if (p->pid != q->pid)
		return p->pid < q->pid ? -1 : 1;
	if (p->tid != q->tid)
		return p->tid < q->tid ? -1 : 1;
	return 0;
}

static const struct trace *sort_trace;
static uint32_t sort_main;

static int
cmp_outproc_q(const void *a, const void *b)
{
	return cmp_outproc(a, b, sort_trace, sort_main);
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
static int
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
static int
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

/* Each task's allocator events (by task index): see mem_attach. */
struct memtask {
	int64_t *peak, *rpeak, *net, *exc;
	int64_t attached, unattached;
};

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
static void
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

/* Runtime calls by correlation id, then start. */
static int
cmp_corr(const void *a, const void *b)
{
	const struct ev *x = &sort_ev[*(const uint32_t *)a];
	const struct ev *y = &sort_ev[*(const uint32_t *)b];

	if (x->corr != y->corr)
		return x->corr < y->corr ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/*
 * The call of rts[0..n) (sorted by cmp_corr) that launched GPU task e:
 * the last with e's correlation id that began no later than e, else the
 * first with it; KG_NONE if none has it.
 */
static uint32_t
corr_call(const struct ev *ev, const uint32_t *rts, size_t n, const struct ev *e)
{
	size_t lo = 0, hi = n;

	/* the first call at or after (corr, ts + 1) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct ev *c = &ev[rts[mid]];

		if (c->corr < e->corr || (c->corr == e->corr && c->ts <= e->ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && ev[rts[lo - 1]].corr == e->corr)
		return rts[lo - 1];
	return lo < n && ev[rts[lo]].corr == e->corr ? rts[lo] : KG_NONE;
}

int
graph_build(struct trace *t, const struct build_opts *o, struct kg_writer *w,
    struct kg_cov *cov, char *err, size_t errlen)
{
	struct gb g;
	struct kg_cov scratch;
	struct kg_header h;
	struct umap corr;
	uint32_t *cpu = NULL, *gpu = NULL, *rts = NULL, *prevleaf, *procs = NULL;
	uint8_t *leaf;
	size_t ncpu = 0, ngpu = 0, nrt = 0, cap1 = 0, cap2 = 0, cap3 = 0, cap4 = 0, cap5 = 0;
	size_t i, nprocs = 0, ndup = 0, nbyc = 0, capbyc = 0;
	uint32_t *byc = NULL; /* with ndup: runtime calls by correlation id */
	int64_t tbase = INT64_MAX;
	int64_t *iters = NULL;
	size_t niters = 0;
	const char *tools[1];
	int rc = -1, tagged, run;
	uint32_t id;
	int64_t tagcount[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
	int64_t kcount[KG_NTASK_KIND] = { 0 }, ccount[3] = { 0, 0, 0 };
	char kname[KG_NTASK_KIND][16]; /* "tasks_KIND", the coverage's names */
	struct memtask mem;

	memset(&g, 0, sizeof(g));
	for (i = 0; i < KG_NTASK_KIND; i++)
		snprintf(kname[i], sizeof(kname[i]), "tasks_%s", kg_task_kind_name[i]);
	g.ckm = xcalloc(1, sizeof(*g.ckm));
	g.nrtc = t->str.n;
	g.rtc = xcalloc(g.nrtc + 1, sizeof(*g.rtc));
	memset(&mem, 0, sizeof(mem));
	g.t = t;
	g.o = o;
	g.w = w;
	comm_annotations(&g);

	/* Streams that only cuda_sync records name get their processor now,
	 * so the per-processor arrays below cover them. */
	for (i = 0; i < t->nsync; i++) {
		if (t->sync[i].stream >= 0)
			trace_proc(t, t->sync[i].device, t->sync[i].stream, 1);
		if (t->sync[i].wait_stream >= 0)
			trace_proc(t, t->sync[i].device, t->sync[i].wait_stream, 1);
	}
	if (find_steps(&g, err, errlen) < 0)
		goto out;
	g.noops = 1;
	for (i = 0; i < t->nev && g.noops; i++)
		if (t->ev[i].cls == EV_OP)
			g.noops = 0;
	if (g.nsteps == 0) {
		/* No ProfilerStep: the main thread is the one whose first CPU
		 * op comes first (Python's main thread starts the others);
		 * in a trace of runtime calls alone, whose first call does. */
		int64_t first = INT64_MAX;

		g.main_proc = KG_NONE;
		for (i = 0; i < t->nev; i++)
			if ((t->ev[i].cls == EV_OP || (g.noops && t->ev[i].cls == EV_RT)) &&
			    t->ev[i].ts < first)
				first = t->ev[i].ts, g.main_proc = t->ev[i].proc;
	}

	g.iter = xmalloc(t->nev * sizeof(*g.iter));
	g.sel = xcalloc(t->nev, 1);
	leaf = xcalloc(t->nev, 1);
	g.encl = xmalloc(t->nev * sizeof(*g.encl));
	g.launch = xmalloc(t->nev * sizeof(*g.launch));
	g.nextgpu = xmalloc(t->nev * sizeof(*g.nextgpu));
	umap_init(&g.newdur, 64);
	umap_init(&g.evmap, 64);
	umap_init(&g.evgap, 64);
	umap_init(&g.hoff, 64);
	for (i = 0; i < t->nev; i++) {
		const struct ev *e = &t->ev[i];

		g.encl[i] = g.launch[i] = g.nextgpu[i] = KG_NONE;
		g.iter[i] = INT32_MIN;
		if (e->cls == EV_OP || e->cls == EV_RT)
			VEC_PUSH(cpu, ncpu, cap1, (uint32_t)i);
		else if (is_gpu(e))
			VEC_PUSH(gpu, ngpu, cap2, (uint32_t)i);
	}
	sort_ev = t->ev;
	if (ncpu > 1)
		psort(cpu, ncpu, sizeof(*cpu), cmp_cpu);
	if (ngpu > 1)
		psort(gpu, ngpu, sizeof(*gpu), cmp_cpu);
	flatten(&g, cpu, ncpu, leaf);
	g.pev = xcalloc(t->nev, sizeof(*g.pev));
	profiled_events(&g, cpu, ncpu, leaf);

	/* Iterations and launches. */
	umap_init(&corr, ncpu / 2 + 16);
	for (i = 0; i < ncpu; i++) {
		uint32_t x = cpu[i];

		g.iter[x] = iter_at(&g, t->ev[x].ts);
		if (t->ev[x].cls == EV_RT && t->ev[x].corr != NO_CORR) {
			if (umap_get(&corr, t->ev[x].corr) != KG_NONE)
				ndup++;
			else
				umap_put(&corr, t->ev[x].corr, x);
		}
	}
	if (ndup > 0) {
		/* Calls sharing a correlation id (traces concatenated, ids
		 * wrapped): each GPU task is paired with the last of them
		 * that began before it did (the first if none did). */
		kg_cov_add(cov, "launch_dupcorr", (int64_t)ndup);
		for (i = 0; i < ncpu; i++)
			if (t->ev[cpu[i]].cls == EV_RT && t->ev[cpu[i]].corr != NO_CORR)
				VEC_PUSH(byc, nbyc, capbyc, cpu[i]);
		sort_ev = t->ev;
		qsort(byc, nbyc, sizeof(*byc), cmp_corr);
	}
	for (i = 0; i < ngpu; i++) {
		uint32_t x = gpu[i], l = KG_NONE;

		if (t->ev[x].corr != NO_CORR)
			l = ndup > 0 ? corr_call(t->ev, byc, nbyc, &t->ev[x]) : umap_get(&corr, t->ev[x].corr);
		g.launch[x] = l;
		if (l != KG_NONE) {
			g.nextgpu[x] = g.nextgpu[l];
			g.nextgpu[l] = x;
			g.iter[x] = g.iter[l];
		} else {
			g.iter[x] = iter_at(&g, t->ev[x].ts);
		}
	}
	umap_release(&corr);
	free(byc);
	/* The chains were built by prepending: turn them to start order (per
	 * stream), so a wait binds to the first task a launch puts on it. */
	for (i = 0; i < ncpu; i++) {
		uint32_t x = cpu[i], prevn = KG_NONE, cur = g.nextgpu[x];

		if (t->ev[x].cls != EV_RT || cur == KG_NONE || g.nextgpu[cur] == KG_NONE)
			continue;
		while (cur != KG_NONE) {
			uint32_t nx = g.nextgpu[cur];

			g.nextgpu[cur] = prevn;
			prevn = cur;
			cur = nx;
		}
		g.nextgpu[x] = prevn;
	}

	/* Selection: the tasks of the chosen iterations. */
	for (i = 0; i < t->nev; i++) {
		const struct ev *e = &t->ev[i];
		int task = is_gpu(e) || ((e->cls == EV_OP || e->cls == EV_RT) && leaf[i]);

		if (!task)
			continue;
		if (iter_selected(&g, g.iter[i])) {
			g.sel[i] = 1;
			VEC_PUSH(g.order, g.ntask, cap3, (uint32_t)i);
			if (e->ts < tbase)
				tbase = e->ts;
		} else {
			kg_cov_add(cov, "outside_iter", 1);
		}
	}
	if (t->nev == 0) {
		snprintf(err, errlen, "no trace events (not a Kineto trace?)");
		goto out_free;
	}
	if (g.ntask == 0) {
		snprintf(err, errlen, "no tasks in the selected iterations");
		goto out_free;
	}
	if (g.ntask > 1)
		psort(g.order, g.ntask, sizeof(*g.order), cmp_time);
	/* made only now: the peak is where the launches were joined, by a
	 * map of the correlation ids (32 MB of the 1 GB trace's 244) */
	g.task = xmalloc(t->nev * sizeof(*g.task));
	g.nextleaf = xmalloc(t->nev * sizeof(*g.nextleaf));
	for (i = 0; i < t->nev; i++)
		g.task[i] = g.nextleaf[i] = KG_NONE;
	/* ids: each run (task_run) a pass over the tasks in time order */
	for (run = 0, id = 0; run < 3; run++)
		for (i = 0; i < g.ntask; i++)
			if (task_run(&g, g.order[i]) == run)
				g.task[g.order[i]] = id++;

	/* Next selected leaf on each thread (blocking copies need it). */
	prevleaf = xmalloc(t->nproc * sizeof(*prevleaf));
	for (i = 0; i < t->nproc; i++)
		prevleaf[i] = KG_NONE;
	for (i = 0; i < ncpu; i++) {
		uint32_t x = cpu[i], p = t->ev[x].proc;

		if (!g.sel[x])
			continue;
		if (prevleaf[p] != KG_NONE)
			g.nextleaf[prevleaf[p]] = x;
		prevleaf[p] = x;
	}

	/* Output processors: threads (main first), then streams. */
	g.outproc = xmalloc(t->nproc * sizeof(*g.outproc));
	for (i = 0; i < t->nproc; i++)
		prevleaf[i] = 0, g.outproc[i] = KG_NONE;
	for (i = 0; i < g.ntask; i++)
		prevleaf[t->ev[g.order[i]].proc] = 1;
	procs = xmalloc(t->nproc * sizeof(*procs));
	for (i = 0; i < t->nproc; i++)
		if (prevleaf[i])
			procs[nprocs++] = (uint32_t)i;
	free(prevleaf);
	sort_trace = t;
	sort_main = g.main_proc;
	if (nprocs > 1)
		qsort(procs, nprocs, sizeof(*procs), cmp_outproc_q);
	for (i = 0; i < nprocs; i++)
		g.outproc[procs[i]] = (uint32_t)i;

	/* Runtime calls in time order; a dry pass settles sync durations. */
	for (i = 0; i < ncpu; i++)
		if (t->ev[cpu[i]].cls == EV_RT)
			VEC_PUSH(rts, nrt, cap4, cpu[i]);
	if (nrt > 1)
		psort(rts, nrt, sizeof(*rts), cmp_time);
	kg_cov_init(&scratch);
	g.cov = &scratch;
	g.dry = 1;
	bind_runtime(&g, rts, nrt);
	explain_gaps(&g, gpu, ngpu);
	kg_cov_release(&scratch);
	g.dry = 0;
	g.cov = cov;

	/* Write: header, strings, processors, tasks. */
	for (i = 0; i < g.nsteps; i++)
		if (iter_selected(&g, (int32_t)g.steps[i].n))
			VEC_PUSH(iters, niters, cap5, g.steps[i].n);
	memset(&h, 0, sizeof(h));
	h.producer = o->producer;
	h.source = t->file;
	h.rank = t->rank >= 0 ? t->rank : o->rank;
	h.world = t->world;
	if (trace_hash(t, err, errlen) < 0)
		goto out_free; /* rc is -1 */
	h.xxh3 = t->xxh3;
	h.tbase = t->base_ns + tbase;
	h.iters = iters;
	h.niters = niters;
	set_gpu(t, gpu, ngpu, &h);
	h.pcost = h.ustep = -1;
	if (o->pcost >= 0 && o->pcal != NULL && ncpu > 0) {
		h.pcal = o->pcal;
		h.pcost = o->pcost;
		h.ustep = o->ustep;
	}
	tools[0] = o->producer;
	h.tools = tools;
	h.ntools = 1;
	if (kg_write_header(w, &h) < 0)
		goto werr;
	for (i = 0; i < t->str.n; i++)
		if (kg_write_str(w, (uint32_t)i, t->str.str[i], t->str.len[i]) < 0)
			goto werr;
	for (i = 0; i < nprocs; i++) {
		const struct tproc *tp = &t->proc[procs[i]];
		struct kg_proc p;

		p.id = (uint32_t)i;
		p.kind = tp->gpu ? KG_STREAM : KG_THREAD;
		p.pid = tp->pid;
		p.tid = tp->tid;
		p.name = tp->name;
		p.main = procs[i] == g.main_proc;
		p.rank = -1;
		if (kg_write_proc(w, &p) < 0)
			goto werr;
	}
	/* Rule 7 tags by the ranges and by rule 5's backward runs. */
	backward_runs(&g, cpu, ncpu, leaf);
	/* the last use: a byte an event, given back before the tasks and
	 * edges are written, where the peak is */
	free(leaf);
	leaf = NULL;
	handoff_pairs(&g);
	tags_build(&g.tags, t, g.bwd, g.main_proc);
	for (i = 0; i < g.nruns; i++)
		tags_backward(&g.tags, g.iter[g.runs[i].first], t->ev[g.runs[i].first].proc,
		    t->ev[g.runs[i].first].ts, end_of(&t->ev[g.runs[i].last]));
	tags_ready(&g.tags);
	tags_infer(&g.tags, t, cpu, ncpu, g.encl, g.iter, h.rank, o->layer_ops);
	mem_attach(&g, &mem);
	/* in id order, as numbered above */
	for (run = 0; run < 3; run++) {
		for (i = 0; i < g.ntask; i++) {
			struct kg_task k;

			if (task_run(&g, g.order[i]) != run)
				continue;
			tagged = make_task(&g, g.order[i], tbase, &k);
			if (mem.peak != NULL && mem.peak[i] >= 0)
				k.mpeak = mem.peak[i], k.mrpeak = mem.rpeak[i], k.mnet = mem.net[i], k.mexc = mem.exc[i];
			if (kg_write_task(w, &k) < 0)
				goto werr;
			tagcount[0] += (tagged & TAG_PH) != 0;
			tagcount[1] += (tagged & TAG_PH_INF) != 0;
			tagcount[2] += (tagged & TAG_MB) != 0;
			tagcount[3] += (tagged & TAG_LY) != 0;
			tagcount[4] += (tagged & TAG_MB_INF) != 0;
			tagcount[5] += (tagged & TAG_LY_INF) != 0;
			tagcount[6] += (tagged & TAG_ST_INF) != 0;
			tagcount[7] += (tagged & TAG_RC) != 0;
			/* counted here, added after the loop; each name put in the
			 * coverage (at 0) where it first occurs, which is its order */
			if (kcount[k.kind]++ == 0)
				kg_cov_add(cov, kname[k.kind], 0);
			if (k.kind == KG_COLL) {
				if (ccount[0]++ == 0)
					kg_cov_add(cov, "coll_recognised", 0);
				if (k.gsize >= 0 && ccount[1]++ == 0)
					kg_cov_add(cov, "coll_meta", 0);
				if (k.bytes > 0 && ccount[2]++ == 0)
					kg_cov_add(cov, "coll_bytes", 0);
			}
		}
	}
	for (i = 0; i < KG_NTASK_KIND; i++)
		if (kcount[i] > 0)
			kg_cov_add(cov, kname[i], kcount[i]);
	if (ccount[0] > 0)
		kg_cov_add(cov, "coll_recognised", ccount[0]);
	if (ccount[1] > 0)
		kg_cov_add(cov, "coll_meta", ccount[1]);
	if (ccount[2] > 0)
		kg_cov_add(cov, "coll_bytes", ccount[2]);

	/* Edges: thread order, launches, stream order, runtime, hand-off. */
	for (i = 0; i < ncpu; i++) {
		uint32_t x = cpu[i], nx = g.nextleaf[x], ho;
		int64_t dl;

		if (!g.sel[x] || nx == KG_NONE)
			continue;
		if (t->ev[nx].ts < end_of(&t->ev[x]))
			kg_cov_add(cov, "overlap_clamped", 1);
		dl = t->ev[nx].ts - end_of(&t->ev[x]) + tail_of(&g, x);
		/* Rule 5: a task a hand-off wakes waited for it, not for
		 * work of its own thread: the gap is the hand-off's. */
		ho = umap_get(&g.hoff, nx);
		if (ho != KG_NONE && end_of(&t->ev[ho]) >= end_of(&t->ev[x]) && dl > tail_of(&g, x))
			dl = tail_of(&g, x);
		edge(&g, x, nx, KG_E_THREAD, dl, KG_HOW_TRACE, KG_NONE, KG_NONE, KG_NONE);
	}
	for (i = 0; i < ngpu; i++) {
		uint32_t x = gpu[i];

		if (!g.sel[x])
			continue;
		if (g.launch[x] != KG_NONE) {
			edge(&g, g.launch[x], x, KG_E_LAUNCH, gap_delay(&g, i, 1), KG_HOW_TRACE,
			    KG_NONE, KG_NONE, KG_NONE);
			kg_cov_add(cov, "launch_joined", 1);
		} else {
			kg_cov_add(cov, "launch_unjoined", 1);
		}
	}
	for (i = 0; i + 1 < ngpu; i++) {
		uint32_t x = gpu[i], y;
		size_t j;

		if (!g.sel[x])
			continue;
		for (j = i + 1; j < ngpu && t->ev[gpu[j]].proc == t->ev[x].proc; j++)
			if (g.sel[gpu[j]])
				break;
		if (j == ngpu || t->ev[gpu[j]].proc != t->ev[x].proc)
			continue;
		y = gpu[j];
		edge(&g, x, y, KG_E_STREAM, gap_delay(&g, j, 0), KG_HOW_TRACE, KG_NONE, KG_NONE,
		    KG_NONE);
	}
	bind_runtime(&g, rts, nrt);
	handoff(&g);
	for (i = 0; i < ngpu; i++) {
		size_t gi = i;

		if (!g.gaps[gi].set || g.gaps[gi].small)
			continue;
		if (g.gaps[gi].src != KG_NONE) {
			edge(&g, g.gaps[gi].src, gpu[i], KG_E_EVENT, 0, KG_HOW_INFERRED,
			    KG_NONE, KG_NONE, KG_NONE);
			kg_cov_add(cov, "gap_inferred", 1);
		} else if (g.gaps[gi].on_launch == 2) {
			edge(&g, g.order[0], gpu[i], KG_E_LAUNCH, g.gaps[gi].dl, KG_HOW_INFERRED,
			    KG_NONE, KG_NONE, KG_NONE);
			kg_cov_add(cov, "gap_anchored", 1);
		} else {
			kg_cov_add(cov, "gap_kept", 1);
		}
	}
	if (g.werr)
		goto werr;

	{
		/* counts that are zero are left out, as kineto2graph(1) says */
		static const char *const tagname[] = {
			"tag_phase", "tag_phase_inferred", "tag_mb", "tag_layer",
			"tag_mb_inferred", "tag_layer_inferred", "tag_stage_inferred",
			"tag_stage_unknown", "tag_mb_unmatched", "tag_layer_norepeat",
			"tag_layer_noseq", "tag_layer_steps", "tag_layer_repeats",
			"tag_layer_unit_ops", "tag_layer_modules", "tag_recompute",
			"tag_recompute_runs"
		};
		int64_t n[17];

		memcpy(n, tagcount, sizeof(tagcount));
		n[7] = g.tags.stage < 0 ? (int64_t)g.ntask : 0;
		n[8] = g.tags.mb_unmatched;
		n[9] = g.tags.ly_norepeat;
		n[10] = g.tags.ly_noseq;
		n[11] = g.tags.ly_steps;
		n[12] = g.tags.ly_reps;
		n[13] = g.tags.ly_unit;
		n[14] = g.tags.ly_module != KG_NONE ? g.tags.ly_steps : 0;
		n[15] = tagcount[7];
		n[16] = g.tags.rc_runs;
		for (i = 0; i < 17; i++)
			if (n[i] != 0)
				kg_cov_add(cov, tagname[i], n[i]);
	}
	if (mem.attached > 0)
		kg_cov_add(cov, "mem_events", mem.attached);
	if (mem.unattached > 0)
		kg_cov_add(cov, "mem_unattached", mem.unattached);
	kg_cov_add(cov, "events", (int64_t)t->nevents);
	for (i = 0; i < t->cov.n; i++)
		kg_cov_add(cov, t->cov.name[i], t->cov.val[i]);
	if (kg_write_cov(w, cov) < 0 || kg_write_end(w) < 0)
		goto werr;
	rc = 0;
	goto out_free;
werr:
	rc = -2;
out_free:
	free(iters);
	free(procs);
	free(rts);
	free(cpu);
	free(gpu);
	free(leaf);
	free(g.iter);
	free(g.sel);
	free(g.encl);
	free(g.commann);
	free(g.launch);
	free(g.nextgpu);
	free(g.nextleaf);
	free(g.pev);
	free(g.task);
	umap_release(&g.newdur);
	umap_release(&g.evmap);
	umap_release(&g.evgap);
	umap_release(&g.hoff);
	free(g.hand);
	free(g.evheld);
	free(g.gaps);
	free(g.bwd);
	free(g.mleaf);
	free(g.runs);
	tags_release(&g.tags);
	free(g.durv);
	free(g.durpre);
	free(g.order);
	free(g.outproc);
	free(mem.peak);
	free(mem.rpeak);
	free(mem.net);
	free(mem.exc);
out:
	free(g.steps);
	commkern_memo_release(g.ckm);
	free(g.ckm);
	free(g.rtc);
	return rc;
}
