/*
 * graph-recompute: a graph as it would run with activation recomputation
 * (full or selective), or without the recomputation it has.
 *
 * Units. A unit is the forward work of one layer for one micro-batch of
 * one iteration on one rank (kineto2graph's tags: `ph` fwd, `ly`, `mb`,
 * `it`), its tasks not already recomputed (`rc`): all of them (full), or
 * those of its attention core, whose operator's name says attention and
 * not backward (selective). Its backward is the tasks of the same layer,
 * micro-batch, iteration and rank in the backward phase.
 *
 * full, selective. Each unit's tasks are copied, with their durations,
 * and run again just before its backward: a host task on the thread that
 * runs the backward (autograd's), before the first of the backward's
 * tasks there; a GPU task on its own stream, before the first backward
 * task of the unit there (or the first that starts after the backward
 * began). A copy is in the backward phase and recomputed (`rc`), keeps
 * its source's layer, micro-batch and iteration, and starts (`ts`, for
 * comparison only) just before the task it is put before. Edges: the
 * program-order edge between the two tasks the copies go between now
 * enters the first copy (its delay kept); the copies follow each other
 * with their sources' program-order edges (delay 0 where their sources
 * did not follow each other), and the last enters the task after them
 * with none; an edge between two tasks of the unit (a launch, an event,
 * a sync) joins their copies, and a rank edge between two ranks' units
 * of the same layer, micro-batch and iteration joins theirs.
 *
 * none. The recomputed tasks (`rc`) are taken out; the tasks before and
 * after them on a processor are joined by the edge that entered the
 * first (its delay); an edge from or to a recomputed task moves to the
 * nearest task kept before it (leaving) or after it (entering) on its
 * processor, a binding task (`via`, `at`) to the one before.
 *
 * Memory (tasks with allocator events, `mn`): the forward's unit keeps,
 * under recomputation, what it is recomputed from: a full unit its
 * layer's input, a selective one its attention's output (the first
 * operand of the unit's first operator with shapes, at its type's size).
 * Its last task with events frees the rest of what the unit allocated
 * (F, its tasks' net bytes, less that: K), and the copies allocate it
 * again (F less K: what was kept is not made again; the copy of the last
 * task with events frees K of what its source allocated); the backward
 * frees what it freed: each iteration's bytes still net to 0. none does
 * the opposite: the forward's last task with events keeps what the
 * recomputation allocated (R) besides what it kept, as torch.utils.
 * checkpoint and tracegen --recompute make it again; full and then none
 * give back the keys as they were.
 * Without allocator events graphstat counts the activations from shapes
 * and sees recomputation where forward operators run in the backward.
 *
 * State: one section at a time, decoded (common/graph.h), and the new
 * tasks and edges, 160 bytes a task.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "graph.h"
#include "kg.h"
#include "params.h"
#include "util.h"
#include "whatif.h"

#define PRODUCER "graph-recompute " KG_VERSION

enum { M_NONE, M_FULL, M_SELECTIVE };
static const char *const mode_name[] = { "none", "full", "selective" };

static const char usage[] =
    "graph-recompute [-q] [-o FILE] [--max-memory BYTES] full|selective|none [FILE ...]";

static const char help[] =
    "Make a graph recompute each layer's forward in its backward, or take\n"
    "the recomputation it has out.\n"
    "\n"
    "  full        each layer's forward run again before its backward\n"
    "  selective   the attention core alone\n"
    "  none        the recomputed forward work (kineto2graph's rc tags) taken out\n"
    "\n"
    "  -o, --output FILE   write the stream to FILE instead of stdout\n"
    "      --max-memory BYTES  the most it may hold (K, M, G, T; default: the\n"
    "                      machine's memory or the process's limit, less an eighth)\n"
    "  -q, --quiet         no warnings\n"
    "  -h, --help          this help\n"
    "      --version       the version\n"
    "\n"
    "With no FILE, or FILE -, read standard input. See graph-recompute(1).\n";

/* A unit: (rank, iteration, micro-batch, layer). */
struct unit {
	int64_t rank, it, mb, ly;
	uint32_t bthread;       /* the backward's thread, KG_NONE */
	int64_t bts;            /* when the backward began there */
	uint32_t lastf, lastb;  /* last forward (selected) and backward task
	                           with allocator events, KG_NONE */
	int64_t fnet, rnet;     /* net bytes of the selected forward, of the recomputed */
	int64_t keep;           /* what the forward keeps, -1 unknown */
	int64_t firstsh_ts;
};

struct ctx {
	const struct graph *g;
	const struct kg_reader *r;
	int mode;
	uint32_t *unit;         /* by task: its unit, KG_NONE */
	struct unit *u;
	size_t nu, capu;
	uint32_t *order;        /* tasks by processor, then start */
	size_t *pstart;         /* by processor: where its tasks begin in order */
	uint32_t *pos;          /* by task: its place in order */
	uint32_t *progout;      /* by task: its program-order edge out, KG_NONE */
	uint8_t *sel;           /* by task: selected (copied, or taken out) */
	struct kg_task *t;      /* the result */
	size_t nt, capt;
	struct kg_edge *e;
	size_t ne, cape;
};

static int
is_prog(int kind)
{
	return kind == KG_E_THREAD || kind == KG_E_STREAM;
}

static const struct graph *sort_g;

static int
cmp_order(const void *a, const void *b)
{
	const struct kg_task *x = &sort_g->task[*(const uint32_t *)a];
	const struct kg_task *y = &sort_g->task[*(const uint32_t *)b];

	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int
cmp_unit(const struct unit *a, const struct unit *b)
{
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->it != b->it)
		return a->it < b->it ? -1 : 1;
	if (a->mb != b->mb)
		return a->mb < b->mb ? -1 : 1;
	return a->ly < b->ly ? -1 : a->ly > b->ly;
}

static int
cmp_unitv(const void *a, const void *b)
{
	return cmp_unit(a, b);
}

/* The unit (rank, it, mb, ly) in c->u (sorted), KG_NONE. */
static uint32_t
find_unit(const struct ctx *c, int64_t rank, int64_t it, int64_t mb, int64_t ly)
{
	struct unit k;
	size_t lo = 0, hi = c->nu;

	k.rank = rank, k.it = it, k.mb = mb, k.ly = ly;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int d = cmp_unit(&c->u[mid], &k);

		if (d == 0)
			return (uint32_t)mid;
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return KG_NONE;
}

/* The attention core's tasks: an operator that says attention, not its
 * backward. */
static int
attention(const struct ctx *c, const struct kg_task *t)
{
	uint32_t n = t->op != KG_NONE ? t->op : t->name;
	const char *s = kg_str(c->r, n);

	return strstr(s, "attention") != NULL && strstr(s, "backward") == NULL;
}

/* The bytes of the first operand of t's shapes at its type's size; -1. */
static int64_t
first_operand(const struct ctx *c, const struct kg_task *t)
{
	int64_t numel[4], first[4], last[4];
	int sz[4];

	if (t->shapes == KG_NONE || dims_operands(kg_str(c->r, t->shapes), numel, first, last, 4) < 1)
		return -1;
	if (t->itypes == KG_NONE || type_sizes(kg_str(c->r, t->itypes), sz, 4) < 1 || sz[0] <= 0)
		sz[0] = 2;
	return numel[0] * sz[0];
}

/* Processors' order of tasks and program-order edges out. */
static void
index_graph(struct ctx *c)
{
	const struct graph *g = c->g;
	size_t i;

	c->order = xmalloc((g->ntask + 1) * sizeof(*c->order));
	c->pos = xmalloc((g->ntask + 1) * sizeof(*c->pos));
	c->pstart = xcalloc(g->nproc + 1, sizeof(*c->pstart));
	c->progout = xmalloc((g->ntask + 1) * sizeof(*c->progout));
	for (i = 0; i < g->ntask; i++)
		c->order[i] = (uint32_t)i, c->progout[i] = KG_NONE;
	sort_g = g;
	if (g->ntask > 1)
		qsort(c->order, g->ntask, sizeof(*c->order), cmp_order);
	for (i = 0; i < g->ntask; i++)
		c->pos[c->order[i]] = (uint32_t)i;
	for (i = 0; i < g->ntask; i++)
		c->pstart[g->task[i].proc + 1]++;
	for (i = 0; i < g->nproc; i++)
		c->pstart[i + 1] += c->pstart[i];
	for (i = 0; i < g->nedge; i++) {
		const struct kg_edge *e = &g->edge[i];

		if (is_prog(e->kind) && g->task[e->src].proc == g->task[e->dst].proc &&
		    c->progout[e->src] == KG_NONE)
			c->progout[e->src] = (uint32_t)i;
	}
}

/* The units of the section: selected forward tasks (full, selective), or
 * recomputed ones (none), each with its backward. */
static void
find_units(struct ctx *c)
{
	const struct graph *g = c->g;
	size_t i, k;

	c->unit = xmalloc((g->ntask + 1) * sizeof(*c->unit));
	c->sel = xcalloc(g->ntask + 1, 1);
	for (i = 0; i < g->ntask; i++) {
		const struct kg_task *t = &g->task[i];

		c->unit[i] = KG_NONE;
		if (t->layer < 0 || t->iter < 0)
			continue;
		if (c->mode == M_NONE ? t->recomp :
		    t->phase == KG_PH_FWD && !t->recomp &&
		    (c->mode == M_FULL || attention(c, t))) {
			struct unit u;

			memset(&u, 0, sizeof(u));
			u.rank = graph_rank(g, (uint32_t)i), u.it = t->iter, u.mb = t->mb;
			u.ly = t->layer;
			c->sel[i] = 1;
			VEC_PUSH(c->u, c->nu, c->capu, u);
		}
	}
	if (c->nu > 1)
		qsort(c->u, c->nu, sizeof(*c->u), cmp_unitv);
	for (i = k = 0; i < c->nu; i++)
		if (k == 0 || cmp_unit(&c->u[k - 1], &c->u[i]) != 0)
			c->u[k++] = c->u[i];
	c->nu = k;
	for (i = 0; i < c->nu; i++) {
		c->u[i].bthread = c->u[i].lastf = c->u[i].lastb = KG_NONE;
		c->u[i].keep = -1;
		c->u[i].firstsh_ts = INT64_MAX;
	}
	for (i = 0; i < g->ntask; i++) {
		const struct kg_task *t = &g->task[i];
		uint32_t x;
		struct unit *u;

		if (t->layer < 0 || t->iter < 0)
			continue;
		x = find_unit(c, graph_rank(g, (uint32_t)i), t->iter, t->mb, t->layer);
		if (x == KG_NONE)
			continue;
		u = &c->u[x];
		c->unit[i] = x;
		if (t->phase == KG_PH_BWD && !t->recomp) {
			if ((t->kind == KG_CPU || t->kind == KG_RT) &&
			    (u->bthread == KG_NONE || t->ts < u->bts))
				u->bthread = t->proc, u->bts = t->ts;
			if (t->mpeak >= 0 && (u->lastb == KG_NONE || t->ts >= g->task[u->lastb].ts))
				u->lastb = (uint32_t)i;
		}
		if (c->sel[i] && c->mode != M_NONE) {
			if (t->mpeak >= 0) {
				u->fnet += t->mnet;
				if (u->lastf == KG_NONE || t->ts >= g->task[u->lastf].ts)
					u->lastf = (uint32_t)i;
			}
			if (t->shapes != KG_NONE && t->ts < u->firstsh_ts) {
				int64_t b = first_operand(c, t);

				if (b >= 0)
					u->keep = b, u->firstsh_ts = t->ts;
			}
		}
		if (c->sel[i] && c->mode == M_NONE && t->mpeak >= 0)
			u->rnet += t->mnet;
	}
}

/* none: the forward tasks that the recomputed ones repeat (the same
 * name, operator and shapes as one of them), their net bytes and last
 * task with allocator events. */
/* A recomputed task's key: its unit, name, operator and shapes. */
struct rkey {
	uint32_t unit, name, op, shapes;
};

static int
cmp_rkey(const void *a, const void *b)
{
	const struct rkey *x = a, *y = b;

	if (x->unit != y->unit)
		return x->unit < y->unit ? -1 : 1;
	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	if (x->op != y->op)
		return x->op < y->op ? -1 : 1;
	return x->shapes < y->shapes ? -1 : x->shapes > y->shapes;
}

static void
none_forward(struct ctx *c)
{
	const struct graph *g = c->g;
	struct rkey *k = NULL;
	size_t i, nk = 0, capk = 0;

	/* the recomputed tasks' keys, sorted: each forward task with
	 * allocator events looked up in them (n log n) */
	for (i = 0; i < g->ntask; i++) {
		const struct kg_task *s = &g->task[i];
		struct rkey x;

		if (!c->sel[i] || c->unit[i] == KG_NONE)
			continue;
		x.unit = c->unit[i], x.name = s->name, x.op = s->op, x.shapes = s->shapes;
		VEC_PUSH(k, nk, capk, x);
	}
	if (nk > 1)
		qsort(k, nk, sizeof(*k), cmp_rkey);
	for (i = 0; i < g->ntask && nk > 0; i++) {
		const struct kg_task *t = &g->task[i];
		struct unit *u;
		struct rkey x;

		if (c->unit[i] == KG_NONE || t->phase != KG_PH_FWD || t->recomp || t->mpeak < 0)
			continue;
		x.unit = c->unit[i], x.name = t->name, x.op = t->op, x.shapes = t->shapes;
		if (bsearch(&x, k, nk, sizeof(*k), cmp_rkey) == NULL)
			continue;
		u = &c->u[c->unit[i]];
		u->fnet += t->mnet;
		if (u->lastf == KG_NONE || t->ts >= g->task[u->lastf].ts)
			u->lastf = (uint32_t)i;
	}
	free(k);
}

static void
add_edge(struct ctx *c, const struct kg_edge *e)
{
	VEC_PUSH(c->e, c->ne, c->cape, *e);
}

static void
prog_edge(struct ctx *c, uint32_t src, uint32_t dst, int64_t delay)
{
	struct kg_edge e;

	kg_edge_init(&e);
	e.src = src, e.dst = dst;
	e.kind = c->t[src].kind == KG_CPU || c->t[src].kind == KG_RT ? KG_E_THREAD : KG_E_STREAM;
	e.how = KG_HOW_INFERRED;
	e.delay = delay;
	add_edge(c, &e);
}

/* A copy to be placed: its source, where it goes, and its unit. */
struct place {
	uint32_t src, proc, before; /* before: the task it goes before, KG_NONE: the end */
	uint32_t unit;
};

static const struct ctx *sort_c;

static int
cmp_place(const void *a, const void *b)
{
	const struct place *x = a, *y = b;
	const struct graph *g = sort_c->g;

	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if (x->before != y->before) {
		uint32_t px = x->before == KG_NONE ? UINT32_MAX : sort_c->pos[x->before];
		uint32_t py = y->before == KG_NONE ? UINT32_MAX : sort_c->pos[y->before];

		return px < py ? -1 : 1;
	}
	if (x->unit != y->unit)
		return x->unit < y->unit ? -1 : 1;
	if (g->task[x->src].ts != g->task[y->src].ts)
		return g->task[x->src].ts < g->task[y->src].ts ? -1 : 1;
	return x->src < y->src ? -1 : x->src > y->src;
}

/* The task on proc that copies of unit u go before: the first of its
 * backward there, else the first that starts after the backward began. */
static uint32_t
place_before(const struct ctx *c, uint32_t u, uint32_t proc)
{
	const struct graph *g = c->g;
	size_t i, after = SIZE_MAX;

	for (i = c->pstart[proc]; i < c->pstart[proc + 1]; i++) {
		const struct kg_task *t = &g->task[c->order[i]];

		if (c->unit[t->id] == u && t->phase == KG_PH_BWD && !t->recomp)
			return t->id;
		if (after == SIZE_MAX && t->ts >= c->u[u].bts)
			after = i;
	}
	return after == SIZE_MAX ? KG_NONE : c->order[after];
}

/* full, selective: the copies and their edges. 0, or the units left
 * without a backward to go before. */
static size_t
add_copies(struct ctx *c)
{
	const struct graph *g = c->g;
	struct place *pl = NULL;
	size_t npl = 0, cappl = 0, i, j, nob = 0;
	uint32_t *copy, *retarget, *head;

	copy = xmalloc((g->ntask + 1) * sizeof(*copy));
	head = xmalloc((g->ntask + 1) * sizeof(*head));
	retarget = xmalloc((g->nedge + 1) * sizeof(*retarget));
	for (i = 0; i < g->nedge; i++)
		retarget[i] = KG_NONE;
	for (i = 0; i < g->ntask; i++)
		copy[i] = head[i] = KG_NONE;
	for (i = 0; i < c->nu; i++)
		if (c->u[i].bthread == KG_NONE)
			nob++;
	for (i = 0; i < g->ntask; i++) {
		const struct kg_task *t = &g->task[i];
		struct place p;
		const struct unit *u;

		if (!c->sel[i] || c->unit[i] == KG_NONE)
			continue;
		u = &c->u[c->unit[i]];
		if (u->bthread == KG_NONE)
			continue;
		p.src = (uint32_t)i;
		p.unit = c->unit[i];
		p.proc = t->kind == KG_CPU || t->kind == KG_RT ? u->bthread : t->proc;
		p.before = KG_NONE;
		VEC_PUSH(pl, npl, cappl, p);
	}
	/* where each goes: by (proc, unit), once */
	for (i = 0; i < npl; i++)
		if (i > 0 && pl[i - 1].proc == pl[i].proc && pl[i - 1].unit == pl[i].unit)
			pl[i].before = pl[i - 1].before;
		else
			pl[i].before = place_before(c, pl[i].unit, pl[i].proc);
	sort_c = c;
	if (npl > 1)
		qsort(pl, npl, sizeof(*pl), cmp_place);
	/* the copies, after the section's own tasks */
	for (i = 0; i < npl; i++) {
		struct kg_task t = g->task[pl[i].src];

		copy[pl[i].src] = (uint32_t)c->nt;
		t.id = (uint32_t)c->nt;
		t.proc = pl[i].proc;
		t.phase = KG_PH_BWD;
		t.recomp = 1;
		VEC_PUSH(c->t, c->nt, c->capt, t);
	}
	/* what the copies allocate: the forward's net bytes less what it
	 * kept (that is not made again), taken off the copy of its last
	 * task with events */
	for (i = 0; i < c->nu; i++) {
		const struct unit *u = &c->u[i];
		int64_t reduce;

		if (u->lastf == KG_NONE || u->lastb == KG_NONE || u->bthread == KG_NONE ||
		    copy[u->lastf] == KG_NONE)
			continue;
		reduce = u->keep >= 0 && u->fnet > u->keep ? u->fnet - u->keep : 0;
		c->t[copy[u->lastf]].mnet -= u->fnet - reduce;
	}
	/* program order: each group of copies on a processor between the
	 * task before and the one it goes before (the section's own edges
	 * first, in their order, the one between those two now entering
	 * the first copy) */
	for (i = 0; i < npl; i = j) {
		uint32_t before = pl[i].before, proc = pl[i].proc, prev = KG_NONE, eo;

		for (j = i + 1; j < npl && pl[j].proc == proc && pl[j].before == before; j++)
			;
		if (before != KG_NONE && c->pos[before] > c->pstart[proc])
			prev = c->order[c->pos[before] - 1];
		else if (before == KG_NONE && c->pstart[proc + 1] > c->pstart[proc])
			prev = c->order[c->pstart[proc + 1] - 1];
		eo = prev != KG_NONE ? c->progout[prev] : KG_NONE;
		if (eo != KG_NONE && g->edge[eo].dst == before)
			retarget[eo] = copy[pl[i].src];
		/* on a thread, what hands it the backward's work hands it the
		 * copies first */
		if (before != KG_NONE && (c->t[copy[pl[i].src]].kind == KG_CPU ||
		    c->t[copy[pl[i].src]].kind == KG_RT))
			head[before] = copy[pl[i].src];
	}
	for (i = 0; i < g->nedge; i++) {
		struct kg_edge e = g->edge[i];

		if (retarget[i] != KG_NONE)
			e.dst = retarget[i];
		else if (e.kind == KG_E_HANDOFF && head[e.dst] != KG_NONE)
			e.dst = head[e.dst];
		add_edge(c, &e);
	}
	for (i = 0; i < npl; i = j) {
		uint32_t before = pl[i].before, proc = pl[i].proc, prev = KG_NONE, eo = KG_NONE;
		size_t k;

		for (j = i + 1; j < npl && pl[j].proc == proc && pl[j].before == before; j++)
			;
		if (before != KG_NONE && c->pos[before] > c->pstart[proc])
			prev = c->order[c->pos[before] - 1];
		else if (before == KG_NONE && c->pstart[proc + 1] > c->pstart[proc])
			prev = c->order[c->pstart[proc + 1] - 1];
		/* ts: just before the task they go before */
		for (k = i; k < j; k++) {
			struct kg_task *t = &c->t[copy[pl[k].src]];

			if (before != KG_NONE)
				t->ts = g->task[before].ts - (int64_t)(j - k);
			else if (prev != KG_NONE)
				t->ts = g->task[prev].ts + (int64_t)(k - i + 1);
		}
		if (prev != KG_NONE)
			eo = c->progout[prev];
		if (eo == KG_NONE || g->edge[eo].dst != before) {
			if (prev != KG_NONE)
				prog_edge(c, prev, copy[pl[i].src], 0);
		}
		for (k = i + 1; k < j; k++) {
			uint32_t a = pl[k - 1].src, b = pl[k].src, ea = c->progout[a];

			if (ea != KG_NONE && g->edge[ea].dst == b) {
				struct kg_edge e = g->edge[ea];

				e.src = copy[a], e.dst = copy[b];
				e.kind = c->t[copy[a]].kind == KG_CPU || c->t[copy[a]].kind == KG_RT ?
				    KG_E_THREAD : KG_E_STREAM;
				add_edge(c, &e);
			} else {
				prog_edge(c, copy[a], copy[b], 0);
			}
		}
		if (before != KG_NONE)
			prog_edge(c, copy[pl[j - 1].src], before, 0);
	}
	/* the section's edges, and those between two copied tasks of one
	 * unit (or two ranks' units of one layer) for their copies */
	for (i = 0; i < g->nedge; i++) {
		const struct kg_edge *e = &g->edge[i];
		uint32_t s = e->src, d = e->dst;

		if (copy[s] == KG_NONE || copy[d] == KG_NONE || is_prog(e->kind))
			continue;
		{
			const struct unit *us = &c->u[c->unit[s]], *ud = &c->u[c->unit[d]];
			struct kg_edge x = *e;

			if (us->it != ud->it || us->mb != ud->mb || us->ly != ud->ly ||
			    (us->rank != ud->rank && e->kind != KG_E_RANK))
				continue;
			x.src = copy[s], x.dst = copy[d];
			if (x.via != KG_NONE && x.via < g->ntask && copy[x.via] != KG_NONE)
				x.via = copy[x.via];
			if (x.at != KG_NONE && x.at < g->ntask && copy[x.at] != KG_NONE)
				x.at = copy[x.at];
			add_edge(c, &x);
		}
	}
	free(pl);
	free(copy);
	free(head);
	free(retarget);
	return nob;
}

/* none: the recomputed tasks taken out, their edges moved. */
static void
take_out(struct ctx *c)
{
	const struct graph *g = c->g;
	uint32_t *nid = xmalloc((g->ntask + 1) * sizeof(*nid));
	size_t i;

	for (i = 0; i < g->ntask; i++) {
		if (c->sel[i]) {
			nid[i] = KG_NONE;
			continue;
		}
		nid[i] = (uint32_t)c->nt;
		VEC_PUSH(c->t, c->nt, c->capt, g->task[i]);
		c->t[c->nt - 1].id = nid[i];
	}
	for (i = 0; i < g->nedge; i++) {
		struct kg_edge e = g->edge[i];
		uint32_t s = e.src, d = e.dst;
		size_t q;

		if (c->sel[s] && c->sel[d])
			continue;
		if (c->sel[d] && is_prog(e.kind)) {
			/* the task before a run of recomputed ones: to the task
			 * after it, with the delay that entered the run */
			for (q = c->pos[d]; q < c->pstart[g->task[d].proc + 1] && c->sel[c->order[q]]; q++)
				;
			if (q == c->pstart[g->task[d].proc + 1])
				continue;
			d = c->order[q];
		} else if (c->sel[s] && is_prog(e.kind)) {
			continue;
		} else if (c->sel[s]) {
			for (q = c->pos[s]; q > c->pstart[g->task[s].proc] && c->sel[c->order[q]]; q--)
				;
			if (c->sel[c->order[q]])
				continue;
			s = c->order[q];
		} else if (c->sel[d]) {
			for (q = c->pos[d]; q < c->pstart[g->task[d].proc + 1] && c->sel[c->order[q]]; q++)
				;
			if (q == c->pstart[g->task[d].proc + 1])
				continue;
			d = c->order[q];
		}
		if (s == d)
			continue;
		e.src = nid[s], e.dst = nid[d];
		if (e.via != KG_NONE && e.via < g->ntask && c->sel[e.via]) {
			for (q = c->pos[e.via]; q > c->pstart[g->task[e.via].proc] && c->sel[c->order[q]]; q--)
				;
			e.via = c->sel[c->order[q]] ? KG_NONE : c->order[q];
		}
		if (e.at != KG_NONE && e.at < g->ntask && c->sel[e.at]) {
			for (q = c->pos[e.at]; q > c->pstart[g->task[e.at].proc] && c->sel[c->order[q]]; q--)
				;
			e.at = c->sel[c->order[q]] ? KG_NONE : c->order[q];
		}
		if (e.via != KG_NONE && e.via < g->ntask)
			e.via = nid[e.via];
		if (e.at != KG_NONE && e.at < g->ntask)
			e.at = nid[e.at];
		add_edge(c, &e);
	}
	/* the memory keys of the kept tasks, by their new ids */
	for (i = 0; i < c->nu; i++) {
		struct unit *u = &c->u[i];
		struct kg_task *f;

		if (u->lastf == KG_NONE || u->lastb == KG_NONE)
			continue;
		f = &c->t[nid[u->lastf]];
		f->mnet += u->rnet;
		if (f->mexc >= 0 && f->mnet > f->mexc)
			f->mexc = f->mnet;
	}
	free(nid);
}

/* full, selective: what the forward frees and the backward frees besides. */
static void
keep_only(struct ctx *c)
{
	size_t i;

	for (i = 0; i < c->nu; i++) {
		struct unit *u = &c->u[i];
		int64_t reduce;

		if (u->lastf == KG_NONE || u->lastb == KG_NONE || u->bthread == KG_NONE)
			continue;
		reduce = u->keep >= 0 && u->fnet > u->keep ? u->fnet - u->keep : 0;
		c->t[u->lastf].mnet -= reduce;
	}
}

static void
ctx_release(struct ctx *c)
{
	free(c->unit), free(c->u), free(c->order), free(c->pstart), free(c->pos);
	free(c->progout), free(c->sel), free(c->t), free(c->e);
}

/*
 * full, selective: refuse a graph that would not fit (whatif_fits), 1
 * after the message. Held: the section; by source task its unit,
 * place, order, program edge, selection, copy and head (25 bytes), by
 * source edge its new end (4), by copy a place; the new tasks (whole
 * records: the sources and a copy of each selected task of a unit) and
 * edges, their number the source's times the tasks' growth.
 */
static int
too_big(const struct ctx *c, const char *name, int index)
{
	const struct graph *g = c->g;
	uint64_t nsel = 0, nt, ne, bytes;
	size_t i;

	for (i = 0; i < g->ntask; i++)
		nsel += c->sel[i] && c->unit[i] != KG_NONE;
	nt = g->ntask + nsel;
	ne = g->ntask > 0 ? (uint64_t)((double)g->nedge * (double)nt / (double)g->ntask) : 0;
	bytes = whatif_graph_bytes(g) + (uint64_t)g->ntask * 25 + (uint64_t)g->nedge * 4 +
	    whatif_vec(nsel, sizeof(struct place)) + whatif_vec(nt, sizeof(*c->t)) +
	    whatif_vec(ne, sizeof(*c->e));
	return whatif_fits(name, index, mode_name[c->mode], nt, ne, bytes);
}

/* Rebuild and write one section; 0, or 1 after a message. */
static int
edit(void *arg, struct graph *g, const struct kg_reader *r, const char *name, int index,
    struct gout *out)
{
	int mode = *(const int *)arg;
	struct ctx c;
	struct graph_out go;
	char tool[128];
	size_t i, nrc = 0;
	int rc = 1;

	memset(&c, 0, sizeof(c));
	c.g = g, c.r = r, c.mode = mode;
	for (i = 0; i < g->ntask; i++)
		nrc += g->task[i].recomp != 0;
	if (mode != M_NONE && nrc > 0) {
		errmsg("%s: section %d: the graph recomputes already (%zu tasks); "
		    "graph-recompute none first", name, index, nrc);
		return 1;
	}
	index_graph(&c);
	find_units(&c);
	memset(&go, 0, sizeof(go));
	if (c.nu == 0) {
		warnmsg("%s: section %d: %s; nothing changed", name, index,
		    mode == M_NONE ? "no recomputation (no task tagged rc)" :
		    mode == M_FULL ? "no forward work in layers (no ly tags)" :
		    "no attention in the layers' forward");
		go.task = g->task, go.ntask = g->ntask;
		go.edge = g->edge, go.nedge = g->nedge;
	} else if (mode == M_NONE) {
		none_forward(&c);
		take_out(&c);
		go.task = c.t, go.ntask = c.nt;
		go.edge = c.e, go.nedge = c.ne;
	} else {
		size_t nob;

		if (too_big(&c, name, index) != 0)
			goto out;
		for (i = 0; i < g->ntask; i++)
			VEC_PUSH(c.t, c.nt, c.capt, g->task[i]);
		keep_only(&c);
		nob = add_copies(&c);
		if (nob > 0)
			warnmsg("%s: section %d: %zu of %zu layers' forward passes have no backward "
			    "to recompute before: not recomputed", name, index, nob, c.nu);
		go.task = c.t, go.ntask = c.nt;
		go.edge = c.e, go.nedge = c.ne;
	}
	snprintf(tool, sizeof(tool), "%s %s", PRODUCER, mode_name[mode]);
	if (graph_write(&out->w, g, tool, &go) < 0) {
		errmsg("%s: %s", out->name, out->w.err);
		goto out;
	}
	rc = 0;
out:
	ctx_release(&c);
	return rc;
}

int
main(int argc, char **argv)
{
	struct whatif_tool w = {
		.sizes = 1,
		.name = "graph-recompute", .usage = usage, .help = help, .producer = PRODUCER,
	};
	int mode;

	while (whatif_getopt(&w, argc, argv) != -1)
		;
	if (w.argc < 1) {
		errmsg("missing the recomputation: full, selective or none");
		usage_exit(usage);
	}
	for (mode = 0; mode < 3 && strcmp(w.argv[0], mode_name[mode]) != 0; mode++)
		;
	if (mode == 3) {
		errmsg("invalid recomputation '%s': full, selective or none", w.argv[0]);
		usage_exit(usage);
	}
	w.argc--;
	w.argv++;
	return whatif_run_graphs(&w, edit, &mode);
}
