/*
 * kineto2graph's build, rules 1 and 2 (see graph.c): the iterations,
 * from the ProfilerStep ranges (find_steps: the steps found, one of a
 * number, sorted; the iteration asked for checked; the main thread the
 * first step's), a time's iteration (iter_at), which are selected; the
 * CPU events' nesting on their thread, which are leaves (flatten); and
 * the profiled host events each leaf accounts for, the profiler's cost
 * counted by them (profiled_events).
 */
#include <stdlib.h>
#include <string.h>

#include "gb.h"
#include "k2g.h"
#include "util.h"

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

/* Iteration of time ts: the step whose range holds it. */
int32_t
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

int
iter_selected(const struct gb *g, int32_t it)
{
	if (g->nsteps == 0)
		return 1;
	if (it == INT32_MIN)
		return 0;
	return g->o->all_iters || it == g->o->iter;
}

int
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
void
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

void
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
