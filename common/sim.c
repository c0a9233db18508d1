/*
 * sim: a section's simulation (sim.h). The state is laid out for a
 * large job's millions of tasks: columns by task and by edge, the edges
 * put in order of their source once read, what few tasks have in sorted
 * lists found by block.
 */
#define _GNU_SOURCE /* mremap */
#include <sys/mman.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "prefault.h"
#include "sim.h"
#include "util.h"

/*
 * An edge is its source, destination and delay (arrays esrc, edst, edl
 * by edge), and its kind, and whether it is bound while simulating (the
 * ekind bytes); a runtime edge's `on` and `via` are in its struct rtedge
 * (few edges have them). A delay of 2^32 - 1 ns (4.3 s) or more is
 * DL_LONG here, its value in the section's long delays (by edge index).
 */
#define DL_LONG UINT32_MAX

struct longdl {
	uint32_t e;
	int64_t delay;
};

#define EK_KIND 0x7f /* ekind: enum kg_edge_kind, or KG_NEDGE_KIND for a plain one */
#define EK_RT 0x80   /* ekind: a runtime edge, bound while simulating */

struct rtedge {
	uint32_t e, on, via, src, dst;
};

/*
 * Sorted lists of what few tasks have. A runtime in-edge: its
 * destination and rte index. A binding point: the task, and the stream
 * it binds on until it ends, then the task it captured there.
 */
struct rin {
	uint32_t dst, r;
};

struct bind {
	uint32_t task, val;
};

struct wnode {
	uint32_t task, next;
	int64_t delay;
};

/*
 * The heads of the waiter lists (in wn) by the task waited for: an open
 * addressing map, made for the section's runtime edges (a task binds
 * once, so there are no more tasks waited for than those edges).
 */
struct waits {
	uint32_t *key, *head;
	int bits;                 /* 2^bits slots, at least twice the keys */
};

static void
waits_init(struct waits *w, size_t nkeys)
{
	size_t cap;

	for (w->bits = 4; ((size_t)1 << w->bits) < 2 * nkeys + 2; w->bits++)
		;
	cap = (size_t)1 << w->bits;
	w->key = xmalloc(cap * sizeof(*w->key));
	w->head = xmalloc(cap * sizeof(*w->head));
	memset(w->key, 0xff, cap * sizeof(*w->key)); /* KG_NONE: free */
}

static void
waits_release(struct waits *w)
{
	free(w->key);
	free(w->head);
	w->key = w->head = NULL;
}

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

struct heapent {
	int64_t t;
	uint32_t id;
};

/*
 * A section's simulation. Some per-task arrays hold one thing and then
 * another, which halves what they take: `dend` a task's duration until
 * it is placed, then its end; `rs` when it may start, then when it
 * starts; `cnt` its fixed dependencies not yet ended, then (none left)
 * the runtime ones it still waits for. What few tasks have (runtime
 * in-edges, being a binding point) is in sorted lists, found by binary
 * search where a flag says there is something to find.
 */
struct sim {
	/* tasks, as read (big arrays: capacities in bytes, see BIG_TASK) */
	size_t n, cap;            /* cap: tasks all of them hold */
	uint32_t *proc, *name;
	int64_t *dend;
	size_t bproc, bname, bdend;
	/* edges, as read, then in order of their source (order_edges;
	 * esrc is gone then) (BIG_EDGE) */
	uint32_t *esrc, *edst, *edl;
	uint8_t *ekind;
	size_t ne, cape, besrc, bedst, bedl, bekind;
	struct rtedge *rte;
	size_t nrte, caprte;
	struct longdl *ldl;
	size_t nldl, capldl;
	/* derived, but made as big as the tasks and edges as they are read,
	 * so that their pages are faulted in by then (struct prefault) */
	size_t brs, bcnt, bsoff, bstate;
	uint32_t *soff;           /* task x's out-edges: soff[x] .. soff[x + 1] (order_edges) */
	struct rin *rin;          /* runtime edges by destination */
	size_t nrin;
	struct bind *bind;        /* binding points, by task */
	size_t nbind;
	uint32_t *rinix, *bindix; /* where each block of tasks begins in them (BLK) */
	uint32_t *cnt;
	struct waits wt;          /* the tasks waited for: their waiter lists' heads */
	int64_t *rs;
	uint8_t *state;           /* ST: 0 waiting, 1 bound, 2 done, 3 at its rendezvous; F_* */
	size_t nproc, cappt0;
	int64_t *pt0;             /* per proc: when its rank's graph begins (job sections) */
	int64_t *rank, *rt0;      /* the header's ranks and their starts */
	size_t nrank, caprank, caprt0;
	uint32_t *last;           /* per proc: last task launched on it */
	uint32_t *lastby;         /* per proc: the call that launched it */
	int64_t *busy;            /* per proc: busy until */
	struct wnode *wn;
	size_t nwn, capwn;
	struct heapent *heap;
	size_t nheap, capheap;
	/* rendezvous groups (tasks joined by rank edges) */
	struct bind *grpl;        /* the tasks in groups, and each one's group; NULL when none */
	size_t ngrpl;
	uint32_t *grpix;          /* where each block of tasks begins in grpl (BLK) */
	uint32_t *goff, *gmem;    /* members by group */
	uint32_t *garr;           /* per group: members arrived */
	int64_t *gmax;            /* per group: latest arrival */
	uint32_t *held;           /* per proc: tasks waiting for it to be released */
	struct wnode *hn;
	size_t nhn, caphn;
	struct prefault *pf;      /* NULL: none */
	int over;                 /* a simulated end reached KG_TIME_MAX */
	size_t ngrp;              /* rendezvous groups */
	/* sim_keep: what a re-run starts from again (malloc'd at the first
	 * run): the durations, delays, counts, flags and binding points as
	 * they were before it, and each task's cut not yet taken */
	int keep, ran;
	int64_t *dur0, *rem;
	uint32_t *edl0, *cnt0, *bind0;
	struct longdl *ldl0;
	uint8_t *state0;
};


#define HELD INT64_MAX /* busy[p]: a collective waits there for its peers */
/* A task's state and flags share a byte: one random read a task, not two. */
#define ST(s, x) ((s)->state[x] & 3)
#define SET_ST(s, x, v) ((s)->state[x] = (uint8_t)(((s)->state[x] & ~3) | (v)))
#define F_RTIN 4  /* the task has runtime in-edges (in rin) */
#define F_BIND 8  /* the task is a binding point (in bind) */
#define F_GRP 16  /* the task is in a rendezvous group (grpl) */
#define F_WAIT 32 /* some task waits for it (wt) */
#define F_RT 64   /* a runtime call (set as read: only those launch) */

/*
 * The section's large arrays are mapped whole, a power of two times 64
 * KiB, and grown by mremap (pages moved, not copied). Those the
 * simulation reads at random, by task, ask for transparent huge pages
 * from 2 MiB on (fewer TLB misses); those written and read in order
 * (the names, the edges, which a task reads as a run) keep 4 KiB pages,
 * which are faulted in faster where a huge page costs its 512 small
 * ones and more (measured when this was chosen: git log).
 */
#define BIG_MIN ((size_t)64 << 10)
#define BIG_HUGE ((size_t)2 << 20)

/* *pp, a big array of *capp bytes (0 and NULL: none yet), made to hold
 * at least need bytes; new bytes are zero. */
static void
big_grow(void *pp, size_t *capp, size_t need, int huge)
{
	void **p = pp, *q;
	size_t cap = *capp > 0 ? *capp : BIG_MIN;

	if (need <= *capp)
		return;
	while (cap < need)
		cap *= 2;
	if (*p == NULL)
		q = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	else
		q = mremap(*p, *capp, cap, MREMAP_MAYMOVE);
	if (q == MAP_FAILED)
		oom(cap);
#ifdef MADV_HUGEPAGE
	if (huge && cap >= BIG_HUGE)
		madvise(q, cap, MADV_HUGEPAGE); /* advice: its failure is no error */
#endif
	*p = q;
	*capp = cap;
}

static void
big_free(void *pp, size_t *capp)
{
	void **p = pp;

	if (*p != NULL)
		munmap(*p, *capp);
	*p = NULL;
	*capp = 0;
}

/*
 * The big arrays by task and by edge: where each is, its capacity and
 * its element's size (soff has two more than the tasks), its slot with
 * the prefault thread, and whether it is read at random (huge pages).
 * Those made while simulating are derived, all zero until then.
 */
struct big {
	void **p;
	size_t *cap;
	size_t size;
	int derived, huge;
};

#define BIG_TASK(s) { \
	{ (void **)&(s)->proc, &(s)->bproc, sizeof(*(s)->proc), 0, 1 }, \
	{ (void **)&(s)->name, &(s)->bname, sizeof(*(s)->name), 0, 0 }, \
	{ (void **)&(s)->dend, &(s)->bdend, sizeof(*(s)->dend), 0, 1 }, \
	{ (void **)&(s)->rs, &(s)->brs, sizeof(*(s)->rs), 1, 1 }, \
	{ (void **)&(s)->cnt, &(s)->bcnt, sizeof(*(s)->cnt), 1, 1 }, \
	{ (void **)&(s)->soff, &(s)->bsoff, sizeof(*(s)->soff), 1, 1 }, \
	{ (void **)&(s)->state, &(s)->bstate, sizeof(*(s)->state), 1, 1 }, \
}
#define NBIG_TASK 7
#define BIG_EDGE(s) { \
	{ (void **)&(s)->esrc, &(s)->besrc, sizeof(*(s)->esrc), 0, 0 }, \
	{ (void **)&(s)->edst, &(s)->bedst, sizeof(*(s)->edst), 0, 0 }, \
	{ (void **)&(s)->edl, &(s)->bedl, sizeof(*(s)->edl), 0, 0 }, \
	{ (void **)&(s)->ekind, &(s)->bekind, sizeof(*(s)->ekind), 0, 0 }, \
}
#define NBIG_EDGE 4

/*
 * The arrays of tab (nb of them, slots from slot0) made to hold need
 * elements (soff two more); returns the elements all of them hold.
 * With prefault, their pages up to need + PF_AHEAD are asked for.
 */
static size_t
big_need(struct sim *s, struct big *tab, int nb, int slot0, size_t need)
{
	size_t cap = SIZE_MAX;
	int i;

	for (i = 0; i < nb; i++) {
		struct big *b = &tab[i];
		size_t extra = b->p == (void **)&s->soff ? 2 : 0, bytes, c;

		big_grow(b->p, b->cap, (need + extra) * b->size, b->huge);
		c = *b->cap / b->size - extra;
		if (c < cap)
			cap = c;
		bytes = (need + extra + PF_AHEAD) * b->size;
		pf_want(s->pf, slot0 + i, *b->p, bytes < *b->cap ? bytes : *b->cap);
	}
	return cap;
}

static void
big_forget(struct sim *s, struct big *tab, int nb, int slot0, int derived)
{
	int i;

	for (i = 0; i < nb; i++)
		if (tab[i].derived || !derived) {
			pf_want(s->pf, slot0 + i, NULL, 0);
			big_free(tab[i].p, tab[i].cap);
		}
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

static void
sim_reset(struct sim *s)
{
	struct big bt[] = BIG_TASK(s), be[] = BIG_EDGE(s);

	/* the derived arrays are zero again for the next section */
	big_forget(s, bt, NBIG_TASK, 0, 1);
	big_forget(s, be, NBIG_EDGE, NBIG_TASK, 1);
	free(s->rin), free(s->bind), free(s->last), free(s->lastby), free(s->busy);
	free(s->rinix), free(s->bindix);
	s->rinix = s->bindix = NULL;
	waits_release(&s->wt);
	free(s->grpl), free(s->grpix), free(s->goff), free(s->gmem), free(s->garr), free(s->gmax);
	free(s->held);
	s->grpl = NULL;
	s->ngrpl = 0;
	s->grpix = s->goff = s->gmem = s->garr = s->held = NULL;
	s->gmax = NULL;
	s->nhn = 0;
	s->rin = NULL;
	s->bind = NULL;
	s->nrin = s->nbind = 0;
	s->last = s->lastby = NULL;
	s->busy = NULL;
	s->n = s->cap = s->ne = s->cape = s->nrte = s->nldl = s->nwn = s->nheap = 0;
	s->nproc = s->ngrp = 0;
	free(s->dur0), free(s->rem), free(s->edl0), free(s->cnt0), free(s->bind0);
	free(s->ldl0), free(s->state0);
	s->dur0 = s->rem = NULL;
	s->edl0 = s->cnt0 = s->bind0 = NULL;
	s->ldl0 = NULL;
	s->state0 = NULL;
	s->keep = s->ran = 0;
}

static void
sim_release(struct sim *s)
{
	struct big bt[] = BIG_TASK(s), be[] = BIG_EDGE(s);

	sim_reset(s);
	big_forget(s, bt, NBIG_TASK, 0, 0);
	big_forget(s, be, NBIG_EDGE, NBIG_TASK, 0);
	pf_free(s->pf);
	free(s->rte);
	free(s->ldl);
	free(s->wn);
	free(s->heap);
	free(s->hn);
	free(s->pt0);
	free(s->rank);
	free(s->rt0);
}

static int
ldl_cmp(const void *a, const void *b)
{
	const struct longdl *x = a, *y = b;

	return x->e < y->e ? -1 : x->e > y->e;
}

/* The nbytes-byte elements of col[0..n) each put at pos[i] in tmp, then
 * copied back. */
static void
scatter(void *col, size_t nbytes, const uint32_t *pos, size_t n, void *tmp)
{
	size_t i;

	if (nbytes == 4) {
		uint32_t *c = col, *t = tmp;

		for (i = 0; i < n; i++)
			t[pos[i]] = c[i];
	} else {
		uint8_t *c = col, *t = tmp;

		for (i = 0; i < n; i++)
			t[pos[i]] = c[i];
	}
	memcpy(col, tmp, n * nbytes);
}

/*
 * The edges put in order of their source, so that task x's out-edges
 * are soff[x] .. soff[x + 1] and the simulation reads them where it
 * reads the task (a list of edge indices by source beside them would
 * cost 4 bytes an edge and a random read each). Rank edges go last (bucket n:
 * groups has read them by then), runtime edges with the others, since
 * some turn out fixed once the launches are known (see simulate);
 * finish passes over those that stay runtime edges. Fixed edges count
 * cnt[dst].
 *
 * A stable counting sort: each edge's place, by source, is written over
 * its source (esrc, whose memory is given back after), and the columns
 * go to their places through rs (zero again after), which the
 * simulation has not used yet: it holds each bucket's next place, then
 * a column's copy, where there are at most two edges a task (else a
 * buffer is made). Runtime edges and long delays, found by edge index,
 * follow their edges.
 */
static void
order_edges(struct sim *s)
{
	size_t n = s->n, ne = s->ne, i;
	uint32_t *off = s->soff, *next = (uint32_t *)s->rs, *pos = s->esrc;
	void *tmp;

	if (ne == 0)
		goto out; /* soff all zero */
	for (i = 0; i < ne; i++) {
		int rank = (s->ekind[i] & EK_KIND) == KG_E_RANK;

		off[(rank ? n : s->esrc[i]) + 1]++;
		if (!rank && !(s->ekind[i] & EK_RT))
			s->cnt[s->edst[i]]++;
	}
	for (i = 1; i < n + 2; i++)
		off[i] += off[i - 1];
	memcpy(next, off, (n + 1) * sizeof(*next));
	for (i = 0; i < ne; i++)
		pos[i] = next[(s->ekind[i] & EK_KIND) == KG_E_RANK ? n : s->esrc[i]]++;
	for (i = 0; i < s->nrte; i++)
		s->rte[i].e = pos[s->rte[i].e];
	for (i = 0; i < s->nldl; i++)
		s->ldl[i].e = pos[s->ldl[i].e];
	if (s->nldl > 1)
		qsort(s->ldl, s->nldl, sizeof(*s->ldl), ldl_cmp);
	tmp = s->brs >= ne * sizeof(uint32_t) ? (void *)s->rs : xmalloc(ne * sizeof(uint32_t) + 1);
	scatter(s->edst, 4, pos, ne, tmp);
	scatter(s->edl, 4, pos, ne, tmp);
	scatter(s->ekind, 1, pos, ne, tmp);
	if (tmp == (void *)s->rs)
		memset(s->rs, 0, (ne > n + 1 ? ne : n + 1) * sizeof(uint32_t));
	else
		free(tmp), memset(s->rs, 0, (n + 1) * sizeof(uint32_t));
out:
	{
		struct big be[] = BIG_EDGE(s);

		big_forget(s, be, 1, NBIG_TASK, 0); /* esrc: the first */
	}
}

/* Both lists sort by task, then edge order (bind's val is still an rte
 * index then). */
static int
rin_cmp(const void *a, const void *b)
{
	const struct rin *x = a, *y = b;

	if (x->dst != y->dst)
		return x->dst < y->dst ? -1 : 1;
	return x->r < y->r ? -1 : x->r > y->r;
}

static int
bind_cmp(const void *a, const void *b)
{
	const struct bind *x = a, *y = b;

	if (x->task != y->task)
		return x->task < y->task ? -1 : 1;
	return x->val < y->val ? -1 : x->val > y->val;
}

/*
 * The runtime edges by destination, and the binding points with the
 * stream each binds on (the last runtime edge's, in edge order), each
 * task flagged in state.
 */
static void
runtime_lists(struct sim *s)
{
	size_t i, j;

	s->rin = xmalloc((s->nrte + 1) * sizeof(*s->rin));
	s->bind = xmalloc((s->nrte + 1) * sizeof(*s->bind));
	for (i = 0; i < s->nrte; i++) {
		const struct rtedge *r = &s->rte[i];

		if (!(s->ekind[r->e] & EK_RT))
			continue;
		s->rin[s->nrin].dst = r->dst;
		s->rin[s->nrin++].r = (uint32_t)i;
		s->state[r->dst] |= F_RTIN;
		if (r->via != r->dst) {
			s->bind[s->nbind].task = r->via;
			s->bind[s->nbind++].val = (uint32_t)i;
		}
	}
	qsort(s->rin, s->nrin, sizeof(*s->rin), rin_cmp);
	qsort(s->bind, s->nbind, sizeof(*s->bind), bind_cmp);
	/* one entry a binding point, its last edge's stream */
	for (i = j = 0; i < s->nbind; i++) {
		if (j > 0 && s->bind[j - 1].task == s->bind[i].task)
			j--;
		s->bind[j].task = s->bind[i].task;
		s->bind[j++].val = s->rte[s->bind[i].val].on;
		s->state[s->bind[i].task] |= F_BIND;
	}
	s->nbind = j;
}

/*
 * The runtime lists are found by task id, a million times a second on a
 * large job: a binary search over the whole list missed the cache at
 * most of its steps. Each block of 2^BLK task ids has the index of its
 * first entry in a list (entries of 8 bytes, sorted by their first
 * uint32), and a search goes over that block's few entries.
 */
#define BLK 8

/* both lists' entries: a uint32 task, then a uint32 */
_Static_assert(sizeof(struct rin) == 8 && offsetof(struct rin, dst) == 0, "struct rin");
_Static_assert(sizeof(struct bind) == 8 && offsetof(struct bind, task) == 0, "struct bind");

static uint32_t *
block_index(const void *list, size_t n, size_t ntask)
{
	const uint32_t *key = list;
	size_t nb = (ntask >> BLK) + 2, b, i = 0;
	uint32_t *ix = xmalloc(nb * sizeof(*ix));

	for (b = 0; b < nb; b++) {
		uint64_t lo = (uint64_t)b << BLK;

		while (i < n && key[2 * i] < lo)
			i++;
		ix[b] = (uint32_t)i;
	}
	return ix;
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

/* Edge i's entry in the long delays (its delay is one). */
static size_t
long_delay(const struct sim *s, uint32_t i)
{
	size_t lo = 0, hi = s->nldl;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ldl[mid].e < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Edge i's delay. */
static int64_t
delay_of(const struct sim *s, uint32_t i)
{
	if (s->edl[i] != DL_LONG)
		return s->edl[i];
	return s->ldl[long_delay(s, i)].delay;
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

/* The index of task x in the sorted m[0..n) (it is there). */
static uint32_t
u32_find(const uint32_t *m, size_t n, uint32_t x)
{
	return (uint32_t)((const uint32_t *)bsearch(&x, m, n, sizeof(*m), cmp_u32) - m);
}

/*
 * Rendezvous groups: the tasks joined by rank edges, each set one group
 * (before order_edges, while the edges' sources are known). Only the
 * edges' ends are looked at (a collective's tasks, a few in a hundred),
 * so what this makes is by them, not by task: grpl, each member's group
 * (a sorted list found by block, as rin), and the members by group, in
 * task order.
 */
static void
groups(struct sim *s)
{
	size_t i, j, m = 0, cap = 0, ng = 0;
	uint32_t *mem = NULL, *up, *num, *pos;

	for (i = 0; i < s->ne; i++)
		if ((s->ekind[i] & EK_KIND) == KG_E_RANK && s->esrc[i] != s->edst[i]) {
			VEC_PUSH(mem, m, cap, s->esrc[i]);
			VEC_PUSH(mem, m, cap, s->edst[i]);
		}
	if (m == 0)
		return; /* no groups: grpl stays NULL */
	qsort(mem, m, sizeof(*mem), cmp_u32);
	for (i = j = 0; i < m; i++)
		if (j == 0 || mem[j - 1] != mem[i])
			mem[j++] = mem[i];
	m = j;
	up = xmalloc(m * sizeof(*up));
	for (i = 0; i < m; i++)
		up[i] = (uint32_t)i;
	for (i = 0; i < s->ne; i++)
		if ((s->ekind[i] & EK_KIND) == KG_E_RANK && s->esrc[i] != s->edst[i])
			uf_union(up, u32_find(mem, m, s->esrc[i]), u32_find(mem, m, s->edst[i]));
	/* number the groups in the order of their first task */
	num = xmalloc(m * sizeof(*num));
	for (i = 0; i < m; i++)
		num[i] = KG_NONE;
	s->grpl = xmalloc(m * sizeof(*s->grpl));
	for (i = 0; i < m; i++) {
		uint32_t r = uf_find(up, (uint32_t)i);

		if (num[r] == KG_NONE)
			num[r] = (uint32_t)ng++;
		s->grpl[i].task = mem[i];
		s->grpl[i].val = num[r];
		s->state[mem[i]] |= F_GRP;
	}
	s->ngrpl = m;
	s->ngrp = ng;
	s->grpix = block_index(s->grpl, m, s->n);
	s->goff = xcalloc(ng + 1, sizeof(*s->goff));
	s->gmem = xmalloc(m * sizeof(*s->gmem));
	s->garr = xcalloc(ng + 1, sizeof(*s->garr));
	s->gmax = xcalloc(ng + 1, sizeof(*s->gmax));
	for (i = 0; i < m; i++)
		s->goff[s->grpl[i].val + 1]++;
	for (i = 0; i < ng; i++)
		s->goff[i + 1] += s->goff[i];
	pos = xmalloc((ng + 1) * sizeof(*pos));
	memcpy(pos, s->goff, (ng + 1) * sizeof(*pos));
	for (i = 0; i < m; i++)
		s->gmem[pos[s->grpl[i].val]++] = mem[i];
	s->held = xmalloc((s->nproc + 1) * sizeof(*s->held));
	for (i = 0; i < s->nproc; i++)
		s->held[i] = KG_NONE;
	free(pos);
	free(num);
	free(up);
	free(mem);
}

/*
 * What a simulation needs besides the tasks and edges as read: the
 * derived arrays, the edges in order of their source, the groups and
 * the runtime lists. Done once, before the first run.
 */
static void
prepare(struct sim *s)
{
	size_t n = s->n, i;
	uint32_t k;

	/* rs, cnt and soff are zero, made as the tasks were read (and
	 * soff, at least, for a section of none); state has only F_RT */
	{
		struct big bt[] = BIG_TASK(s);

		big_need(s, bt, NBIG_TASK, 0, n);
	}
	s->last = xmalloc((s->nproc + 1) * sizeof(*s->last));
	s->lastby = xmalloc((s->nproc + 1) * sizeof(*s->lastby));
	s->busy = xcalloc(s->nproc + 1, sizeof(*s->busy));
	for (i = 0; i < s->nproc; i++)
		s->last[i] = s->lastby[i] = KG_NONE;
	groups(s);
	order_edges(s);
	waits_init(&s->wt, s->nrte);
	/* A runtime edge from a task its binding point launched (a blocking
	 * copy's) is fixed: that task is the one. */
	for (i = 0; i < s->nrte; i++) {
		const struct rtedge *r = &s->rte[i];

		for (k = s->soff[r->via]; k < s->soff[r->via + 1]; k++) {
			if ((s->ekind[k] & EK_KIND) == KG_E_LAUNCH && s->edst[k] == r->src) {
				s->ekind[r->e] &= (uint8_t)~EK_RT;
				s->cnt[r->dst]++;
				break;
			}
		}
	}
	runtime_lists(s);
	s->rinix = block_index(s->rin, s->nrin, n);
	s->bindix = block_index(s->bind, s->nbind, n);
}

/* memcpy, and memset, of n bytes where n may be 0 and the pointers NULL
 * (an array of no element: no edge, no launch delay). */
static void
copy(void *dst, const void *src, size_t n)
{
	if (n > 0)
		memcpy(dst, src, n);
}

static void
zero(void *dst, size_t n)
{
	if (n > 0)
		memset(dst, 0, n);
}

/* With sim_keep: what a re-run starts from, kept before the first. */
static void
snapshot(struct sim *s)
{
	size_t n = s->n, ne = s->ne, i;

	s->dur0 = xmalloc((n + 1) * sizeof(*s->dur0));
	copy(s->dur0, s->dend, n * sizeof(*s->dur0));
	s->rem = xmalloc((n + 1) * sizeof(*s->rem));
	s->cnt0 = xmalloc((n + 1) * sizeof(*s->cnt0));
	copy(s->cnt0, s->cnt, n * sizeof(*s->cnt0));
	s->state0 = xmalloc(n + 1);
	copy(s->state0, s->state, n);
	s->edl0 = xmalloc((ne + 1) * sizeof(*s->edl0));
	copy(s->edl0, s->edl, ne * sizeof(*s->edl0));
	s->ldl0 = xmalloc((s->nldl + 1) * sizeof(*s->ldl0));
	copy(s->ldl0, s->ldl, s->nldl * sizeof(*s->ldl0));
	s->bind0 = xmalloc((s->nbind + 1) * sizeof(*s->bind0));
	for (i = 0; i < s->nbind; i++)
		s->bind0[i] = s->bind[i].val;
}

/*
 * Back to the state before the first run, with cut[x] (NULL: none)
 * taken off task x's time: off the delay of the thread edges into it
 * first (the host time before it), what is left off its duration.
 */
static void
restore(struct sim *s, const int64_t *cut)
{
	size_t n = s->n, i;
	uint32_t k;

	copy(s->dend, s->dur0, n * sizeof(*s->dend));
	copy(s->cnt, s->cnt0, n * sizeof(*s->cnt));
	copy(s->state, s->state0, n);
	zero(s->rs, n * sizeof(*s->rs));
	copy(s->edl, s->edl0, s->ne * sizeof(*s->edl));
	copy(s->ldl, s->ldl0, s->nldl * sizeof(*s->ldl));
	for (i = 0; i < s->nbind; i++)
		s->bind[i].val = s->bind0[i];
	waits_release(&s->wt);
	waits_init(&s->wt, s->nrte);
	s->nwn = s->nhn = s->nheap = 0;
	for (i = 0; i < s->nproc; i++) {
		s->last[i] = s->lastby[i] = KG_NONE;
		s->busy[i] = 0;
	}
	if (s->grpl != NULL) {
		memset(s->garr, 0, (s->ngrp + 1) * sizeof(*s->garr));
		memset(s->gmax, 0, (s->ngrp + 1) * sizeof(*s->gmax));
		for (i = 0; i < s->nproc; i++)
			s->held[i] = KG_NONE;
	}
	if (cut == NULL)
		return;
	copy(s->rem, cut, n * sizeof(*s->rem));
	for (i = 0; i < n; i++) {
		for (k = s->soff[i]; k < s->soff[i + 1]; k++) {
			uint32_t x = s->edst[k];
			int64_t dl, take;

			if ((s->ekind[k] & EK_KIND) != KG_E_THREAD || s->rem[x] <= 0)
				continue;
			dl = delay_of(s, k);
			take = dl < s->rem[x] ? dl : s->rem[x];
			s->rem[x] -= take;
			if (s->edl[k] != DL_LONG)
				s->edl[k] = (uint32_t)(dl - take);
			else
				s->ldl[long_delay(s, k)].delay = dl - take;
		}
	}
	for (i = 0; i < n; i++)
		if (s->rem[i] > 0)
			s->dend[i] -= s->rem[i] < s->dend[i] ? s->rem[i] : s->dend[i];
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
		int64_t t = h.t;

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
	s->nproc++;
}

void
sim_task(struct sim *s, const struct kg_task *t)
{
	if (s->n + 1 > s->cap || s->n % PF_EVERY == 0) {
		/* grown together: cap is what all of them hold */
		struct big bt[] = BIG_TASK(s);

		s->cap = big_need(s, bt, NBIG_TASK, 0, s->n + 1);
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

		s->cape = big_need(s, be, NBIG_EDGE, NBIG_TASK, s->ne + 1);
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
		prepare(s);
		if (s->keep)
			snapshot(s);
	}
	if (s->keep && (s->ran || cut != NULL))
		restore(s, cut);
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
