/*
 * kineto2graph's build, rule 3 (see graph.c): launches joined. A GPU
 * task's correlation id names the runtime call that launched it; where
 * calls share an id (traces concatenated, ids wrapped), the task goes
 * with the last of them that began no later than it did. The joins are
 * the build's arrays (g->launch, g->nextgpu, g->iter): nothing is
 * written here.
 */
#include <stdlib.h>
#include <string.h>

#include "gb.h"
#include "k2g.h"
#include "util.h"

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

/*
 * Rule 1 on the CPU events (each its iteration) and rule 3: each GPU
 * task joined to its launch call by correlation id (g->launch), given
 * the call's iteration (its own start's without one), and chained from
 * the call (g->nextgpu) in start order; cpu and gpu as graph_build
 * sorted them. Calls sharing an id are counted in cov.
 */
void
join_launches(struct gb *g, const uint32_t *cpu, size_t ncpu, const uint32_t *gpu, size_t ngpu,
    struct kg_cov *cov)
{
	struct trace *t = g->t;
	struct umap corr;
	size_t i, ndup = 0, nbyc = 0, capbyc = 0;
	uint32_t *byc = NULL; /* with ndup: runtime calls by correlation id */

	umap_init(&corr, ncpu / 2 + 16);
	for (i = 0; i < ncpu; i++) {
		uint32_t x = cpu[i];

		g->iter[x] = iter_at(g, t->ev[x].ts);
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
		g->launch[x] = l;
		if (l != KG_NONE) {
			g->nextgpu[x] = g->nextgpu[l];
			g->nextgpu[l] = x;
			g->iter[x] = g->iter[l];
		} else {
			g->iter[x] = iter_at(g, t->ev[x].ts);
		}
	}
	umap_release(&corr);
	free(byc);
	/* The chains were built by prepending: turn them to start order (per
	 * stream), so a wait binds to the first task a launch puts on it. */
	for (i = 0; i < ncpu; i++) {
		uint32_t x = cpu[i], prevn = KG_NONE, cur = g->nextgpu[x];

		if (t->ev[x].cls != EV_RT || cur == KG_NONE || g->nextgpu[cur] == KG_NONE)
			continue;
		while (cur != KG_NONE) {
			uint32_t nx = g->nextgpu[cur];

			g->nextgpu[cur] = prevn;
			prevn = cur;
			cur = nx;
		}
		g->nextgpu[x] = prevn;
	}
}
