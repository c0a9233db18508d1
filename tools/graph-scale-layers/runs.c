/*
 * The traced graph's stages and layer runs, and the new graph built from
 * their copies (see sl.h and tools/graph-scale-layers.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "params.h"
#include "prefault.h"
#include "sl.h"
#include "util.h"

uint32_t
rank_index(const struct ctx *c, int64_t rank)
{
	size_t lo = 0, hi = c->nranks;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (c->ranks[mid] < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (uint32_t)lo;
}

/*
 * Each rank's layers, and the stages they make: ranks with the same
 * range of layers are one stage; the ranges must be contiguous and
 * follow each other. 0, or 1 after a message.
 */
int
find_stages(struct ctx *c)
{
	const struct graph *g = c->g;
	int64_t *lo, *hi, *seen = NULL;
	size_t i, k, nseen = 0, capseen = 0, n = g->ntask;
	int64_t nb = 0;
	uint32_t r;

	/* the arrays find_runs fills, made now: the prefault thread faults
	 * their pages in (slots 6 on: the graph's are 0 and 1, the new
	 * job's 2 and 5) while the stages are found */
	c->run = xmalloc((n + 1) * sizeof(*c->run));
	c->pos = xmalloc((n + 1) * sizeof(*c->pos));
	c->nid = xmalloc((n + 1) * sizeof(*c->nid));
	c->pidx = xmalloc((n + 1) * sizeof(*c->pidx));
	c->porder = xmalloc((n + 1) * sizeof(*c->porder));
	c->progout = xmalloc((n + 1) * sizeof(*c->progout));
	c->progin = xmalloc((n + 1) * sizeof(*c->progin));
	c->tproc = xmalloc((n + 1) * sizeof(*c->tproc));
	pf_want(g->pf, 6, c->tproc, n * sizeof(*c->tproc));
	pf_want(g->pf, 7, c->pidx, n * sizeof(*c->pidx));
	pf_want(g->pf, 8, c->porder, n * sizeof(*c->porder));
	pf_want(g->pf, 9, c->progout, n * sizeof(*c->progout));
	pf_want(g->pf, 10, c->progin, n * sizeof(*c->progin));
	pf_want(g->pf, 11, c->run, n * sizeof(*c->run));
	pf_want(g->pf, 12, c->pos, n * sizeof(*c->pos));
	pf_want(g->pf, 13, c->nid, n * sizeof(*c->nid));
	c->ranks = xmalloc((g->nproc + 1) * sizeof(*c->ranks));
	for (i = 0; i < g->nproc; i++)
		c->ranks[i] = g->proc[i].rank >= 0 ? g->proc[i].rank : g->h.rank;
	qsort(c->ranks, g->nproc, sizeof(*c->ranks), cmp_i64);
	for (i = k = 0; i < g->nproc; i++)
		if (k == 0 || c->ranks[i] != c->ranks[k - 1])
			c->ranks[k++] = c->ranks[i];
	c->nranks = k;
	/* each processor's rank index, looked up once (graph_rank's rank) */
	c->prk = xmalloc((g->nproc + 1) * sizeof(*c->prk));
	for (i = 0; i < g->nproc; i++)
		c->prk[i] = rank_index(c, g->proc[i].rank >= 0 ? g->proc[i].rank : g->h.rank);
	lo = xmalloc((k + 1) * sizeof(*lo));
	hi = xmalloc((k + 1) * sizeof(*hi));
	for (i = 0; i < k; i++)
		lo[i] = INT64_MAX, hi[i] = -1;
	for (i = 0; i < g->ntask; i++) {
		const struct kg_task *t = &g->task[i];

		if (t->layer < 0)
			continue;
		nb++;
		r = c->prk[t->proc];
		if (t->layer < lo[r])
			lo[r] = t->layer;
		if (t->layer > hi[r])
			hi[r] = t->layer;
	}
	if (nb == 0) {
		errmsg("%s: section %d: no task has a layer tag: %s", c->name, c->index,
		    NO_LAYERS);
		goto fail;
	}
	c->rstage = xmalloc((k + 1) * sizeof(*c->rstage));
	for (i = 0; i < k; i++) {
		if (hi[i] < 0) {
			errmsg("%s: section %d: rank %lld has no task with a layer tag", c->name,
			    c->index, (long long)c->ranks[i]);
			goto fail;
		}
		for (r = 0; r < nseen && seen[r] != lo[i]; r++)
			;
		if (r == nseen)
			VEC_PUSH(seen, nseen, capseen, lo[i]);
	}
	qsort(seen, nseen, sizeof(*seen), cmp_i64);
	c->st = xcalloc(nseen + 1, sizeof(*c->st));
	c->nst = nseen;
	for (i = 0; i < k; i++) {
		for (r = 0; seen[r] != lo[i]; r++)
			;
		c->rstage[i] = r;
		if (c->st[r].n == 0) {
			c->st[r].lo = lo[i];
			c->st[r].n = hi[i] - lo[i] + 1;
			c->st[r].rank0 = (uint32_t)i;
		} else if (c->st[r].n != hi[i] - lo[i] + 1) {
			errmsg("%s: section %d: ranks %lld and %lld start at layer %lld but end "
			    "at %lld and %lld: not one pipeline stage", c->name, c->index,
			    (long long)c->ranks[c->st[r].rank0], (long long)c->ranks[i],
			    (long long)lo[i], (long long)(c->st[r].lo + c->st[r].n - 1),
			    (long long)hi[i]);
			goto fail;
		}
	}
	for (r = 0; r < nseen; r++) {
		if (r > 0 && c->st[r].lo != c->st[r - 1].lo + c->st[r - 1].n) {
			errmsg("%s: section %d: stage layers %lld-%lld and %lld-%lld do not "
			    "follow each other", c->name, c->index, (long long)c->st[r - 1].lo,
			    (long long)(c->st[r - 1].lo + c->st[r - 1].n - 1),
			    (long long)c->st[r].lo, (long long)(c->st[r].lo + c->st[r].n - 1));
			goto fail;
		}
	}
	if (c->o->n < (int64_t)nseen) {
		errmsg("%s: section %d: %lld layers cannot fill %zu pipeline stages", c->name,
		    c->index, (long long)c->o->n, nseen);
		goto fail;
	}
	/* the new split, and which source layer each new one copies */
	for (r = 0; r < nseen; r++) {
		struct stage *s = &c->st[r];
		int64_t j, a;

		s->nn = c->o->n / (int64_t)nseen + ((int64_t)r < c->o->n % (int64_t)nseen);
		s->nlo = r == 0 ? c->st[0].lo : c->st[r - 1].nlo + c->st[r - 1].nn;
		s->cnt = xcalloc((size_t)s->n, sizeof(*s->cnt));
		s->firstj = xcalloc((size_t)s->n, sizeof(*s->firstj));
		for (j = s->nn - 1; j >= 0; j--) {
			a = layer_source(j, s->n, s->nn);
			s->cnt[a]++;
			s->firstj[a] = j;
		}
	}
	free(lo);
	free(hi);
	free(seen);
	return 0;
fail:
	free(lo);
	free(hi);
	free(seen);
	return 1;
}

/* The new layer (from the stage's nlo) of run x's copy k. */
static int64_t
copy_layer(const struct ctx *c, const struct run *x, int64_t k)
{
	const struct stage *s = &c->st[x->stage];
	int64_t a = x->layer - s->lo;

	return s->firstj[a] + (x->desc ? s->cnt[a] - 1 - k : k);
}

/* Which copy of run x makes new layer j; -1 if none does. */
static int64_t
copy_of(const struct ctx *c, const struct run *x, int64_t j)
{
	const struct stage *s = &c->st[x->stage];
	int64_t a = x->layer - s->lo, k = j - s->firstj[a];

	if (k < 0 || k >= s->cnt[a])
		return -1;
	return x->desc ? s->cnt[a] - 1 - k : k;
}

static int64_t
ncopies(const struct ctx *c, const struct run *x)
{
	return c->st[x->stage].cnt[x->layer - c->st[x->stage].lo];
}

uint64_t
count_tasks(const struct ctx *c)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < c->g->ntask; i++)
		if (c->run[i] == KG_NONE)
			n++;
		else if (c->rn[c->run[i]].first == i)
			n += (uint64_t)ncopies(c, &c->rn[c->run[i]]) * c->rn[c->run[i]].len;
	return n;
}

/* New id of task t (of a run) in copy k. */
static uint32_t
copy_id(const struct ctx *c, uint32_t t, int64_t k)
{
	const struct run *x = &c->rn[c->run[t]];

	return x->newbase + (uint32_t)k * x->len + c->pos[t];
}

/*
 * Each processor's tasks in order (task ids rise along a processor), the
 * runs, and the program-order edges between neighbours.
 */
void
find_runs(struct ctx *c)
{
	const struct graph *g = c->g;
	size_t n = g->ntask, np = g->nproc, i;
	size_t *start = xcalloc(np + 2, sizeof(*start));
	uint32_t *prev = xmalloc((np + 1) * sizeof(*prev));

	for (i = 0; i < n; i++) {
		c->tproc[i] = g->task[i].proc;
		start[c->tproc[i] + 1]++;
	}
	for (i = 0; i < np; i++)
		start[i + 1] += start[i];
	for (i = 0; i < np; i++)
		prev[i] = KG_NONE;
	for (i = 0; i < n; i++) {
		const struct kg_task *t = &g->task[i];
		uint32_t p = t->proc, q = prev[p];

		c->pidx[i] = (uint32_t)start[p];
		c->porder[start[p]++] = (uint32_t)i;
		c->progout[i] = c->progin[i] = KG_NONE;
		c->run[i] = KG_NONE;
		c->pos[i] = 0;
		prev[p] = (uint32_t)i;
		if (t->layer < 0)
			continue;
		if (q != KG_NONE && c->run[q] != KG_NONE && g->task[q].layer == t->layer &&
		    g->task[q].phase == t->phase && g->task[q].mb == t->mb &&
		    g->task[q].iter == t->iter) {
			c->run[i] = c->run[q];
			c->pos[i] = c->rn[c->run[q]].len++;
		} else {
			struct run x;

			x.first = (uint32_t)i;
			x.len = 1;
			x.newbase = KG_NONE;
			x.stage = c->rstage[c->prk[t->proc]];
			x.layer = t->layer;
			x.desc = t->phase == KG_PH_BWD;
			x.kind = KG_NONE;
			c->run[i] = (uint32_t)c->nrun;
			VEC_PUSH(c->rn, c->nrun, c->caprun, x);
		}
	}
	for (i = 0; i < g->nedge; i++) {
		const struct kg_edge *e = &g->edge[i];

		if ((e->kind == KG_E_THREAD || e->kind == KG_E_STREAM) && e->src < n &&
		    e->dst < n && c->tproc[e->src] == c->tproc[e->dst] &&
		    c->pidx[e->dst] == c->pidx[e->src] + 1) {
			c->progout[e->src] = (uint32_t)i;
			c->progin[e->dst] = (uint32_t)i;
		}
	}
	free(start);
	free(prev);
	pf_forget(g->pf, 6);
}

uint32_t
task_rank_index(const struct ctx *c, uint32_t t)
{
	return c->prk[c->g->task[t].proc];
}

static void
add_task(struct ctx *c, uint32_t source, uint32_t copy, int64_t layer, int64_t dur,
    int64_t odur)
{
	size_t cap0 = c->capt;
	struct ntask x = { source, copy, layer, dur, odur };

	VEC_PUSH(c->t, c->nt, c->capt, x);
	/* the new job's pages faulted in ahead (the graph's slots are 0, 1) */
	pf_vec(c->g->pf, 2, c->t, c->nt, c->capt, cap0, sizeof(*c->t));
}

void
new_task(const struct ctx *c, size_t i, size_t *fix, struct kg_task *t)
{
	const struct ntask *x = &c->t[i];

	*t = c->g->task[x->src];
	t->id = (uint32_t)i;
	t->layer = x->layer, t->dur = x->dur, t->odur = x->odur;
	if (*fix < c->nfix && c->fix[*fix].i == i) {
		const struct tfix *f = &c->fix[(*fix)++];

		t->bytes = f->bytes, t->mnet = f->mnet, t->mexc = f->mexc;
	}
}

/*
 * The kinds of runs and their means. A copy beyond a layer's first takes
 * the mean durations and gaps of its kind, not its source's own: a host
 * hiccup or a slow kernel that the trace shows once should not be
 * repeated with every copy, while the mean keeps what such outliers
 * cost on average.
 */
void
run_kinds(struct ctx *c)
{
	const struct graph *g = c->g;
	size_t i;
	uint32_t k, q, m;

	for (i = 0; i < c->nrun; i++) {
		struct run *x = &c->rn[i];
		const struct kg_task *t0 = &g->task[x->first];
		struct rkind *r = NULL;

		for (m = 0; m < c->nrk; m++) {
			r = &c->rk[m];
			if (r->proc == t0->proc && r->phase == t0->phase && r->len == x->len)
				break;
		}
		if (m == c->nrk) {
			struct rkind nk;

			memset(&nk, 0, sizeof(nk));
			nk.proc = t0->proc, nk.phase = t0->phase, nk.len = x->len;
			nk.first = x->first;
			nk.dur = xcalloc(x->len, sizeof(*nk.dur));
			nk.gap = xcalloc(x->len, sizeof(*nk.gap));
			VEC_PUSH(c->rk, c->nrk, c->caprk, nk);
			r = &c->rk[m];
		}
		x->kind = m;
		for (k = 0, q = c->pidx[r->first]; k < x->len; k++, q++)
			if (g->task[c->porder[q]].name != g->task[c->porder[c->pidx[x->first] + k]].name)
				break;
		if (k < x->len) {
			r->bad++;
			x->kind = KG_NONE;
			continue;
		}
		for (k = 0, q = c->pidx[x->first]; k < x->len; k++, q++) {
			uint32_t t = c->porder[q], e = c->progout[t];

			r->dur[k] += (double)g->task[t].dur;
			if (k + 1 < x->len && e != KG_NONE)
				r->gap[k] += (double)g->edge[e].delay;
		}
		r->n++;
	}
}

/* Lay out the new tasks: each run's copies where the run began. */
void
make_tasks(struct ctx *c)
{
	const struct graph *g = c->g;
	size_t i;
	uint32_t k, q;

	for (i = 0; i < g->ntask; i++) {
		const struct kg_task *t = &g->task[i];
		struct run *x;
		int64_t cp, n;

		c->nid[i] = KG_NONE;
		if (c->run[i] == KG_NONE) {
			c->nid[i] = (uint32_t)c->nt;
			add_task(c, (uint32_t)i, 0, t->layer, t->dur, t->odur);
			continue;
		}
		x = &c->rn[c->run[i]];
		if (x->first != i)
			continue;
		x->newbase = (uint32_t)c->nt;
		n = ncopies(c, x);
		for (cp = 0; cp < n; cp++)
			for (k = 0, q = c->pidx[i]; k < x->len; k++, q++) {
				const struct kg_task *u = &g->task[c->porder[q]];
				int64_t layer = c->st[x->stage].nlo + copy_layer(c, x, cp);
				int64_t dur = u->dur, odur = u->odur;

				if (cp > 0 && x->kind != KG_NONE) {
					const struct rkind *r = &c->rk[x->kind];

					dur = odur = llround(r->dur[k] / (double)r->n);
				}
				add_task(c, c->porder[q], (uint32_t)cp, layer, dur, odur);
			}
	}
}

static void
add_edge(struct ctx *c, const struct kg_edge *tmpl, uint32_t src, uint32_t dst, uint32_t via,
    uint32_t at)
{
	struct kg_edge e = *tmpl;

	if (src == KG_NONE || dst == KG_NONE || src == dst) {
		c->dropped++;
		return;
	}
	e.src = src, e.dst = dst;
	if (e.via != KG_NONE)
		e.via = via;
	if (e.at != KG_NONE)
		e.at = at;
	size_t cap0 = c->cape;

	VEC_PUSH(c->e, c->ne, c->cape, e);
	pf_vec(c->g->pf, 5, c->e, c->ne, c->cape, cap0, sizeof(*c->e));
}

/*
 * The nearest kept task before task t on its processor (dir -1), or
 * after it (dir 1), t itself if it is kept; KG_NONE if none.
 */
static uint32_t
kept_near(const struct ctx *c, uint32_t t, int dir)
{
	const struct graph *g = c->g;
	uint32_t p = c->tproc[t];

	for (;;) {
		const struct run *x = c->run[t] == KG_NONE ? NULL : &c->rn[c->run[t]];
		uint32_t q;

		if (x == NULL)
			return c->nid[t];
		if (ncopies(c, x) > 0)
			return copy_id(c, t, dir < 0 ? ncopies(c, x) - 1 : 0);
		/* a removed run: step past it */
		q = c->pidx[x->first];
		if (dir > 0)
			q += x->len;
		else if (q-- == 0)
			return KG_NONE;
		if (q >= g->ntask || c->tproc[c->porder[q]] != p)
			return KG_NONE;
		t = c->porder[q];
	}
}

/*
 * The new task for source task t in an edge whose chosen copies make new
 * layers ja (of layer la) and jb (of lb): a task of one of those layers
 * goes with its copy; a task of a run with another layer takes its
 * first copy (its last when it is the edge's source, leaving = 1).
 */
static uint32_t
map_task(const struct ctx *c, uint32_t t, int64_t la, int64_t ja, int64_t lb, int64_t jb,
    int leaving)
{
	const struct run *x;
	int64_t k = -1, n;

	if (t == KG_NONE || t >= c->g->ntask)
		return KG_NONE;
	if (c->run[t] == KG_NONE)
		return c->nid[t];
	x = &c->rn[c->run[t]];
	n = ncopies(c, x);
	if (n == 0)
		return kept_near(c, t, leaving ? -1 : 1);
	if (x->layer == la && ja >= 0)
		k = copy_of(c, x, ja);
	else if (x->layer == lb && jb >= 0)
		k = copy_of(c, x, jb);
	if (k < 0)
		k = leaving ? n - 1 : 0;
	return copy_id(c, t, k);
}

/* The new layer (- nlo) a task's chosen copy makes; -1 for no run. */
static int64_t
layer_of_copy(const struct ctx *c, uint32_t t, int leaving)
{
	const struct run *x;
	int64_t n;

	if (t == KG_NONE || c->run[t] == KG_NONE)
		return -1;
	x = &c->rn[c->run[t]];
	n = ncopies(c, x);
	if (n == 0)
		return -1;
	return copy_layer(c, x, leaving ? n - 1 : 0);
}

/* Program order along each processor's new order. */
void
program_edges(struct ctx *c)
{
	const struct graph *g = c->g;
	uint32_t *last = xmalloc((g->nproc + 1) * sizeof(*last));
	size_t i;

	for (i = 0; i < g->nproc; i++)
		last[i] = KG_NONE;
	for (i = 0; i < c->nt; i++) {
		uint32_t sx = c->t[i].src, p = c->tproc[sx], y = last[p], sy, e = KG_NONE, o, n;

		last[p] = (uint32_t)i;
		if (y == KG_NONE)
			continue;
		sy = c->t[y].src;
		o = c->progout[sy], n = c->progin[sx];
		if (o != KG_NONE && g->edge[o].dst == sx)
			e = o; /* neighbours before */
		else if (o != KG_NONE && c->run[g->edge[o].dst] != KG_NONE)
			e = o; /* the gap before a layer */
		else if (n != KG_NONE && c->run[g->edge[n].src] != KG_NONE)
			e = n; /* the gap after a layer */
		else
			e = o != KG_NONE ? o : n;
		if (e == KG_NONE)
			continue;
		if (c->t[i].cp > 0 && c->t[y].cp == c->t[i].cp && c->run[sx] != KG_NONE &&
		    c->run[sy] == c->run[sx] && c->rn[c->run[sx]].kind != KG_NONE) {
			/* inside a copy: the mean gap of its kind */
			const struct rkind *r = &c->rk[c->rn[c->run[sx]].kind];
			struct kg_edge me = g->edge[e];

			me.delay = llround(r->gap[c->pos[sy]] / (double)r->n);
			add_edge(c, &me, y, (uint32_t)i, KG_NONE, KG_NONE);
		} else {
			add_edge(c, &g->edge[e], y, (uint32_t)i, KG_NONE, KG_NONE);
		}
	}
	free(last);
}

/* Every other edge, after the copies of its ends. */
void
other_edges(struct ctx *c)
{
	const struct graph *g = c->g;
	size_t i;

	for (i = 0; i < g->nedge; i++) {
		const struct kg_edge *e = &g->edge[i];
		const struct run *u, *v;

		if (e->src >= g->ntask || e->dst >= g->ntask || c->progout[e->src] == i)
			continue;
		u = c->run[e->src] == KG_NONE ? NULL : &c->rn[c->run[e->src]];
		v = c->run[e->dst] == KG_NONE ? NULL : &c->rn[c->run[e->dst]];
		if (u != NULL && v != NULL && u->layer == v->layer && u->stage == v->stage) {
			/* within a layer: once per copy, the same new layer's */
			const struct stage *s = &c->st[u->stage];
			int64_t a = u->layer - s->lo, j;

			for (j = s->firstj[a]; j < s->firstj[a] + s->cnt[a]; j++)
				add_edge(c, e, copy_id(c, e->src, copy_of(c, u, j)),
				    copy_id(c, e->dst, copy_of(c, v, j)),
				    map_task(c, e->via, u->layer, j, v->layer, j, 0),
				    map_task(c, e->at, u->layer, j, v->layer, j, 0));
		} else {
			int64_t ja = layer_of_copy(c, e->src, 1), jb = layer_of_copy(c, e->dst, 0);
			int64_t la = u != NULL ? u->layer : -1, lb = v != NULL ? v->layer : -1;

			add_edge(c, e, map_task(c, e->src, la, ja, lb, jb, 1),
			    map_task(c, e->dst, la, ja, lb, jb, 0),
			    map_task(c, e->via, la, ja, lb, jb, 1),
			    map_task(c, e->at, la, ja, lb, jb, 0));
		}
	}
}
