/*
 * sim: a section's simulation (sim.h): the interface, and the run, list
 * scheduling by a heap of the tasks ready, runtime dependencies bound as
 * their binding points run, rendezvous groups released together. The
 * state is laid out for a large job's millions of tasks (sim_int.h);
 * what is done to it outside a run (its arrays grown, made ready before
 * the first run, kept for the runs after) is simstate.c's.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "prefault.h"
#include "sim_int.h"
#include "util.h"

/* Task x's slot: where it is, or where it goes. */
static size_t
waits_slot(const struct waits *w, uint32_t x)
{
	size_t mask = ((size_t)1 << w->bits) - 1;
	size_t i = (size_t)((x * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - w->bits));

	while (w->key[i] != KG_NONE && w->key[i] != x)
		i = (i + 1) & mask;
	return i;
}

static void
heap_push(struct sim *s, int64_t t, uint32_t id)
{
	size_t i;

	if (s->nheap == s->capheap)
		grow(&s->heap, &s->capheap, s->nheap + 1, sizeof(*s->heap));
	i = s->nheap++;
	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (s->heap[p].t < t || (s->heap[p].t == t && s->heap[p].id < id))
			break;
		s->heap[i] = s->heap[p];
		i = p;
	}
	s->heap[i].t = t;
	s->heap[i].id = id;
}

static struct heapent
heap_pop(struct sim *s)
{
	struct heapent top = s->heap[0], x = s->heap[--s->nheap];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= s->nheap)
			break;
		if (c + 1 < s->nheap && (s->heap[c + 1].t < s->heap[c].t ||
		    (s->heap[c + 1].t == s->heap[c].t && s->heap[c + 1].id < s->heap[c].id)))
			c++;
		if (x.t < s->heap[c].t || (x.t == s->heap[c].t && x.id < s->heap[c].id))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->nheap > 0)
		s->heap[i] = x;
	return top;
}

/* The first entry of list (block index ix) whose task is x or after. */
static size_t
block_find(const void *list, const uint32_t *ix, uint32_t x)
{
	const uint32_t *key = list;
	size_t lo = ix[x >> BLK], hi = ix[(x >> BLK) + 1];

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (key[2 * mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first of rin whose destination is x (x has some: F_RTIN). */
static size_t
rin_first(const struct sim *s, uint32_t x)
{
	return block_find(s->rin, s->rinix, x);
}

/* Binding point x's entry (x is one: F_BIND). */
static struct bind *
bind_of(const struct sim *s, uint32_t x)
{
	return &s->bind[block_find(s->bind, s->bindix, x)];
}

/*
 * Bind task x's runtime dependencies. Returns the time it may start, or
 * -1 when it must wait for a bound task not yet scheduled (it is then on
 * that task's waiter list).
 */
static int64_t
bind_runtime(struct sim *s, uint32_t x, int64_t t)
{
	size_t k;

	for (k = s->state[x] & F_RTIN ? rin_first(s, x) : s->nrin;
	    k < s->nrin && s->rin[k].dst == x; k++) {
		const struct rtedge *r = &s->rte[s->rin[k].r];
		int64_t dl = delay_of(s, r->e);
		uint32_t b;

		if (r->via == x)
			b = s->last[r->on];
		else if (ST(s, r->via) == 2)
			b = bind_of(s, r->via)->val;
		else
			b = r->src; /* the binding point has not run: keep the trace's */
		if (b == KG_NONE || b == x)
			continue;
		if (ST(s, b) == 2) {
			if (s->dend[b] + dl > t)
				t = s->dend[b] + dl;
		} else {
			size_t slot = waits_slot(&s->wt, b);
			struct wnode w = { x, s->wt.key[slot] == b ? s->wt.head[slot] : KG_NONE, dl };

			VEC_PUSH(s->wn, s->nwn, s->capwn, w);
			s->wt.key[slot] = b;
			s->wt.head[slot] = (uint32_t)(s->nwn - 1);
			s->state[b] |= F_WAIT;
			s->cnt[x]++;
		}
	}
	if (s->cnt[x]) {
		/* Keep what the placed sources demand for when it is pushed
		 * again by the last pending one. */
		if (t > s->rs[x])
			s->rs[x] = t;
		return -1;
	}
	return t;
}

/* A device's launch queue: an end added, the first end dropped. */
static void
qpush(struct qdev *q, int64_t e)
{
	size_t i;

	if (q->n == q->cap)
		grow(&q->end, &q->cap, q->n + 1, sizeof(*q->end));
	for (i = q->n++; i > 0 && q->end[(i - 1) / 2] > e; i = (i - 1) / 2)
		q->end[i] = q->end[(i - 1) / 2];
	q->end[i] = e;
}

static void
qpop(struct qdev *q)
{
	int64_t e = q->end[--q->n];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < q->n) {
		if (c + 1 < q->n && q->end[c + 1] < q->end[c])
			c++;
		if (e <= q->end[c])
			break;
		q->end[i] = q->end[c];
		i = c;
	}
	q->end[i] = e;
}

/*
 * Task x has its start and end: what it launched is now launched, what
 * waited for it may go.
 */
static void
finish(struct sim *s, uint32_t x)
{
	int64_t end = s->dend[x];
	uint32_t k;

	SET_ST(s, x, 2);
	for (k = s->soff[x]; k < s->soff[x + 1]; k++) {
		/* the successors' counts and starts, all asked for at once */
		__builtin_prefetch(&s->cnt[s->edst[k]], 1);
		__builtin_prefetch(&s->rs[s->edst[k]], 1);
	}
	for (k = s->soff[x]; k < s->soff[x + 1]; k++) {
		uint32_t dst = s->edst[k];
		uint8_t ek = s->ekind[k];
		int64_t r = end + (s->edl[k] != DL_LONG ? s->edl[k] : delay_of(s, k));

		if (ek & EK_RT)
			continue; /* bound by its destination, in bind_runtime */
		/* Launches: what this call puts on streams is now launched
		 * (the latest of them, when it puts several on one stream).
		 * The order against the other successors does not matter:
		 * they only become ready, and the heap orders them. */
		if ((ek & EK_KIND) == KG_E_LAUNCH) {
			uint32_t q = s->proc[dst];

			if (s->lastby[q] != x || dst > s->last[q]) {
				s->last[q] = dst;
				s->lastby[q] = x;
			}
		}
		if (r > s->rs[dst])
			s->rs[dst] = r;
		if (--s->cnt[dst] == 0)
			heap_push(s, s->rs[dst], dst);
	}
	if (s->state[x] & F_QW) {
		/* a launched task placed: its slot is held until its end,
		 * and the calls that waited for its end to be known look
		 * again */
		struct qdev *q = &s->qd[s->pdev[s->proc[x]]];
		size_t i;

		s->state[x] &= (uint8_t)~F_QW;
		q->nun--;
		qpush(q, end);
		for (i = 0; i < q->nw; i++)
			heap_push(s, s->rs[q->w[i]] > s->now ? s->rs[q->w[i]] : s->now, q->w[i]);
		q->nw = 0;
	}
	if (s->state[x] & F_BIND) {
		struct bind *b = bind_of(s, x);

		b->val = s->last[b->val];
	}
	k = s->state[x] & F_WAIT ? s->wt.head[waits_slot(&s->wt, x)] : KG_NONE;
	for (; k != KG_NONE; k = s->wn[k].next) {
		uint32_t w = s->wn[k].task;
		int64_t r = end + s->wn[k].delay;

		if (r > s->rs[w])
			s->rs[w] = r;
		if (--s->cnt[w] == 0)
			heap_push(s, s->rs[w], w);
	}
}

/*
 * Launch call x may start at t: 1 when each device it launches on has
 * room for what it launches there (fewer than qn launched tasks not
 * ended), the slots then taken; else 0, and *next is when to look again
 * (the first end among the device's tasks), or -1 when the room needs a
 * launched task not placed yet (x is then on the device's waiters).
 */
static int
queue_room(struct sim *s, uint32_t x, int64_t t, int64_t *next)
{
	uint32_t k, j, d;

	*next = 0;
	for (k = s->soff[x]; k < s->soff[x + 1]; k++) {
		struct qdev *q;
		uint32_t need = 0;
		size_t pend;

		if ((s->ekind[k] & EK_KIND) != KG_E_LAUNCH ||
		    (d = s->pdev[s->proc[s->edst[k]]]) == KG_NONE)
			continue;
		for (j = s->soff[x]; j < k; j++)
			if ((s->ekind[j] & EK_KIND) == KG_E_LAUNCH &&
			    s->pdev[s->proc[s->edst[j]]] == d)
				break;
		if (j < k)
			continue; /* that device is looked at */
		for (j = k; j < s->soff[x + 1]; j++)
			if ((s->ekind[j] & EK_KIND) == KG_E_LAUNCH &&
			    s->pdev[s->proc[s->edst[j]]] == d)
				need++;
		if (need > s->qn)
			need = s->qn; /* more than the queue: they go as it empties */
		q = &s->qd[d];
		while (q->n > 0 && q->end[0] <= t)
			qpop(q);
		pend = q->n + q->nun;
		if (pend + need <= s->qn)
			continue;
		if (pend + need - s->qn > q->n) {
			VEC_PUSH(q->w, q->nw, q->capw, x);
			*next = -1;
			return 0;
		}
		if (q->end[0] > *next)
			*next = q->end[0];
	}
	if (*next > 0)
		return 0;
	for (k = s->soff[x]; k < s->soff[x + 1]; k++)
		if ((s->ekind[k] & EK_KIND) == KG_E_LAUNCH &&
		    (d = s->pdev[s->proc[s->edst[k]]]) != KG_NONE) {
			s->qd[d].nun++;
			s->state[s->edst[k]] |= F_QW;
		}
	return 1;
}

/* Simulate the section; 0, or -1 if some tasks can never start. */
/*
 * A simulated end, at most the format's range (KG_TIME_MAX): one past it
 * is held there and the run fails (simulate returns -2). Every time the
 * simulation adds is then a sum of two in range (an end and a delay, a
 * start and a duration), so none overflows however long its chains.
 */
static inline int64_t
bounded(struct sim *s, int64_t end)
{
	if (end < KG_TIME_MAX)
		return end;
	s->over = 1;
	return KG_TIME_MAX;
}

static int
simulate(struct sim *s)
{
	size_t n = s->n, i, done = 0;
	uint32_t k;

	s->over = 0;
	for (i = 0; i < s->ndev; i++)
		s->qd[i].n = s->qd[i].nun = 0, s->qd[i].nw = 0;

	for (i = 0; i < n; i++)
		if (s->cnt[i] == 0)
			heap_push(s, s->pt0[s->proc[i]], (uint32_t)i);
	while (s->nheap > 0) {
		struct heapent h = heap_pop(s);
		uint32_t x = h.id, p = s->proc[x], g;

		if (s->nheap > 0) {
			/* what the next task likely reads, fetched while this
			 * one runs (misses, not work, are this loop's time) */
			uint32_t y = s->heap[0].id;

			__builtin_prefetch(&s->state[y]);
			__builtin_prefetch(&s->proc[y]);
			__builtin_prefetch(&s->dend[y]);
			__builtin_prefetch(&s->soff[y]);
		}
		int64_t t = h.t, next;

		s->now = t;
		if (ST(s, x) == 3) {
			/* a launch call held for its queue slots, looked at
			 * again: when they are free it runs from there, and
			 * its thread goes on after it */
			uint32_t w;

			if (!queue_room(s, x, t, &next)) {
				if (next >= 0)
					heap_push(s, next, x);
				continue;
			}
			s->rs[x] = t;
			s->dend[x] = bounded(s, s->dend[x] + t);
			s->busy[p] = s->dend[x];
			for (w = s->held[p]; w != KG_NONE; w = s->hn[w].next)
				heap_push(s, s->dend[x], s->hn[w].task);
			s->held[p] = KG_NONE;
			finish(s, x);
			done++;
			continue;
		}
		if (ST(s, x) == 0) {
			SET_ST(s, x, 1);
			t = bind_runtime(s, x, t);
			if (t < 0)
				continue; /* pushed again when its last waited task ends */
			if (t > h.t) {
				heap_push(s, t, x);
				continue;
			}
		}
		if (s->busy[p] == HELD) {
			/* pushed again when the collective there ends */
			struct wnode w = { x, s->held[p], 0 };

			VEC_PUSH(s->hn, s->nhn, s->caphn, w);
			s->held[p] = (uint32_t)(s->nhn - 1);
			continue;
		}
		if (s->busy[p] > t)
			t = s->busy[p];
		s->rs[x] = t;
		g = s->state[x] & F_GRP ? s->grpl[block_find(s->grpl, s->grpix, x)].val : KG_NONE;
		if (g == KG_NONE) {
			if (s->qn > 0 && (s->state[x] & F_RT)) {
				/* a launch call: it holds its thread until its
				 * queue slots are free, then does its work (its
				 * duration) */
				if (!queue_room(s, x, t, &next)) {
					s->busy[p] = HELD;
					SET_ST(s, x, 3);
					if (next >= 0)
						heap_push(s, next, x);
					continue;
				}
			}
			s->dend[x] = bounded(s, s->dend[x] + t);
			s->busy[p] = s->dend[x];
			finish(s, x);
			done++;
			continue;
		}
		/* A collective: it holds its stream from its arrival; when the
		 * last peer arrives, all of them run their transfer. */
		s->busy[p] = HELD;
		SET_ST(s, x, 3);
		if (t > s->gmax[g])
			s->gmax[g] = t;
		if (++s->garr[g] < s->goff[g + 1] - s->goff[g])
			continue;
		for (k = s->goff[g]; k < s->goff[g + 1]; k++) {
			uint32_t m = s->gmem[k], q = s->proc[m], w;

			s->dend[m] = bounded(s, s->dend[m] + s->gmax[g]);
			s->busy[q] = s->dend[m];
			for (w = s->held[q]; w != KG_NONE; w = s->hn[w].next)
				heap_push(s, s->dend[m], s->hn[w].task);
			s->held[q] = KG_NONE;
		}
		for (k = s->goff[g]; k < s->goff[g + 1]; k++) {
			finish(s, s->gmem[k]);
			done++;
		}
	}
	if (done != n)
		return -1;
	return s->over ? -2 : 0;
}

struct sim *
sim_new(int prefault)
{
	struct sim *s = xcalloc(1, sizeof(*s));

	if (prefault)
		s->pf = pf_new();
	s->qn = SIM_LAUNCH_QUEUE;
	return s;
}

void
sim_free(struct sim *s)
{
	if (s == NULL)
		return;
	sim_release(s);
	free(s);
}

void
sim_launch_queue(struct sim *s, uint32_t n)
{
	s->qn = n;
}

void
sim_begin(struct sim *s, const struct kg_header *h)
{
	size_t i;

	sim_reset(s);
	s->nrank = 0;
	for (i = 0; i < h->nranks; i++) {
		grow(&s->rank, &s->caprank, i + 1, sizeof(*s->rank));
		grow(&s->rt0, &s->caprt0, i + 1, sizeof(*s->rt0));
		s->rank[i] = h->ranks[i];
		s->rt0[i] = h->t0 != NULL && h->t0[i] > 0 ? h->t0[i] : 0;
		s->nrank++;
	}
}

void
sim_proc(struct sim *s, const struct kg_proc *p)
{
	size_t i;

	/* a job section's ranks begin where the header says */
	grow(&s->pt0, &s->cappt0, s->nproc + 1, sizeof(*s->pt0));
	s->pt0[s->nproc] = 0;
	for (i = 0; i < s->nrank; i++)
		if (s->rank[i] == p->rank)
			s->pt0[s->nproc] = s->rt0[i];
	/* a stream's device: its rank's GPU of that index */
	grow(&s->pdev, &s->cappdev, s->nproc + 1, sizeof(*s->pdev));
	s->pdev[s->nproc] = KG_NONE;
	if (p->kind == KG_STREAM) {
		for (i = 0; i < s->ndev; i++)
			if (s->devkey[2 * i] == p->rank && s->devkey[2 * i + 1] == p->pid)
				break;
		if (i == s->ndev) {
			grow(&s->devkey, &s->capdevkey, 2 * s->ndev + 2, sizeof(*s->devkey));
			s->devkey[2 * i] = p->rank;
			s->devkey[2 * i + 1] = p->pid;
			s->ndev++;
		}
		s->pdev[s->nproc] = (uint32_t)i;
	}
	s->nproc++;
}

void
sim_task(struct sim *s, const struct kg_task *t)
{
	if (s->n + 1 > s->cap || s->n % PF_EVERY == 0) {
		/* grown together: cap is what all of them hold */
		struct big bt[] = BIG_TASK(s);

		s->cap = sim_big_need(s, bt, NBIG_TASK, 0, s->n + 1);
	}
	if (t->kind == KG_RT)
		s->state[s->n] = F_RT;
	s->proc[s->n] = t->proc;
	s->dend[s->n] = t->dur;
	s->name[s->n] = t->name;
	s->n++;
}

void
sim_edge(struct sim *s, const struct kg_edge *re)
{
	uint8_t k = (uint8_t)re->kind;

	/* its ends are known tasks: the reader refuses others */
	if (s->ne + 1 > s->cape || s->ne % PF_EVERY == 0) {
		struct big be[] = BIG_EDGE(s);

		s->cape = sim_big_need(s, be, NBIG_EDGE, NBIG_TASK, s->ne + 1);
	}
	s->esrc[s->ne] = re->src;
	s->edst[s->ne] = re->dst;
	if (re->delay < DL_LONG) {
		s->edl[s->ne] = (uint32_t)re->delay;
	} else {
		struct longdl l = { (uint32_t)s->ne, re->delay };

		s->edl[s->ne] = DL_LONG;
		VEC_PUSH(s->ldl, s->nldl, s->capldl, l);
	}
	/* Only a runtime call launches: a `launch` edge from any other
	 * task (kineto2graph's anchor for work launched before the window)
	 * is a plain dependency. */
	if (k == KG_E_LAUNCH && !(s->state[re->src] & F_RT))
		k = KG_NEDGE_KIND;
	if ((re->kind == KG_E_SYNC || re->kind == KG_E_EVENT) && re->on < s->nproc &&
	    re->via < s->n) {
		struct rtedge r = { (uint32_t)s->ne, re->on, re->via, re->src, re->dst };

		VEC_PUSH(s->rte, s->nrte, s->caprte, r);
		k |= EK_RT;
	}
	s->ekind[s->ne++] = k;
}

void
sim_keep(struct sim *s)
{
	s->keep = 1;
}

int
sim_run(struct sim *s, const int64_t *cut)
{
	if (!s->ran) {
		sim_prepare(s);
		if (s->keep)
			sim_snapshot(s);
	}
	if (s->keep && (s->ran || cut != NULL))
		sim_restore(s, cut);
	s->ran = 1;
	return simulate(s);
}

size_t
sim_ntasks(const struct sim *s)
{
	return s->n;
}

const int64_t *
sim_starts(const struct sim *s)
{
	return s->rs;
}

const int64_t *
sim_ends(const struct sim *s)
{
	return s->dend;
}

size_t
sim_stuck(const struct sim *s, uint32_t *first, uint32_t *names, size_t nfirst)
{
	size_t i, stuck = 0;

	for (i = 0; i < s->n; i++) {
		if (ST(s, i) == 2)
			continue;
		if (stuck < nfirst) {
			first[stuck] = (uint32_t)i;
			names[stuck] = s->name[i];
		}
		stuck++;
	}
	return stuck;
}
