/*
 * kineto2graph's build, the dependencies besides the runtime's, and the
 * one place every edge goes out (edge: in the dry pass it notes what
 * event waits hold a task until, for rule 6, and writes nothing). Rule 5
 * (see graph.c): the backward threads' runs and their hand-offs with the
 * main thread (backward_runs, handoff_pairs before the tasks are written,
 * handoff for the edges). Rule 6: a GPU task's wait that nothing in the
 * graph explains, bound to another stream's task or kept as a delay
 * (explain_gaps, after the dry pass; gap_delay).
 */
#include <stdlib.h>
#include <string.h>

#include "gb.h"
#include "k2g.h"
#include "rtapi.h"
#include "util.h"

void
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

void
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
int64_t
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
void
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
void
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

void
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
