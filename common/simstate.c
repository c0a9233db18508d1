/*
 * simstate: the simulator's state (sim_int.h) outside its runs: the big
 * arrays by task and by edge, mapped whole and grown as a section is
 * read; what a run needs made once before the first (the edges put in
 * order of their source, the rendezvous groups, the runtime lists and
 * their block indices); with sim_keep, what a re-run starts from, kept
 * and put back with a cut of each task's time; and all of it given
 * back. The run itself, and the interface, are sim.c's.
 */
#define _GNU_SOURCE /* mremap */
#include <sys/mman.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "prefault.h"
#include "sim_int.h"
#include "util.h"

void
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

void
waits_release(struct waits *w)
{
	free(w->key);
	free(w->head);
	w->key = w->head = NULL;
}

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
 * The arrays of tab (nb of them, slots from slot0) made to hold need
 * elements (soff two more); returns the elements all of them hold.
 * With prefault, their pages up to need + PF_AHEAD are asked for.
 */
size_t
sim_big_need(struct sim *s, struct big *tab, int nb, int slot0, size_t need)
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

void
sim_reset(struct sim *s)
{
	struct big bt[] = BIG_TASK(s), be[] = BIG_EDGE(s);
	size_t i;

	/* the derived arrays are zero again for the next section */
	big_forget(s, bt, NBIG_TASK, 0, 1);
	big_forget(s, be, NBIG_EDGE, NBIG_TASK, 1);
	free(s->rin), free(s->bind), free(s->last), free(s->lastby), free(s->busy);
	free(s->rinix), free(s->bindix);
	s->rinix = s->bindix = NULL;
	waits_release(&s->wt);
	free(s->grpl), free(s->grpix), free(s->goff), free(s->gmem), free(s->garr), free(s->gmax);
	free(s->held);
	if (s->qd != NULL)
		for (i = 0; i < s->ndev; i++)
			free(s->qd[i].end), free(s->qd[i].w);
	free(s->pdev), free(s->devkey), free(s->qd);
	s->pdev = NULL;
	s->devkey = NULL;
	s->qd = NULL;
	s->ndev = s->cappdev = s->capdevkey = 0;
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

void
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
void
sim_prepare(struct sim *s)
{
	size_t n = s->n, i;
	uint32_t k;

	/* rs, cnt and soff are zero, made as the tasks were read (and
	 * soff, at least, for a section of none); state has only F_RT */
	{
		struct big bt[] = BIG_TASK(s);

		sim_big_need(s, bt, NBIG_TASK, 0, n);
	}
	s->last = xmalloc((s->nproc + 1) * sizeof(*s->last));
	s->lastby = xmalloc((s->nproc + 1) * sizeof(*s->lastby));
	s->busy = xcalloc(s->nproc + 1, sizeof(*s->busy));
	for (i = 0; i < s->nproc; i++)
		s->last[i] = s->lastby[i] = KG_NONE;
	groups(s);
	if (s->held == NULL) {
		/* a launch call held for its queue slot holds its thread */
		s->held = xmalloc((s->nproc + 1) * sizeof(*s->held));
		for (i = 0; i < s->nproc; i++)
			s->held[i] = KG_NONE;
	}
	s->qd = xcalloc(s->ndev + 1, sizeof(*s->qd));
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
void
sim_snapshot(struct sim *s)
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
void
sim_restore(struct sim *s, const int64_t *cut)
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
	}
	for (i = 0; i < s->nproc; i++)
		s->held[i] = KG_NONE;
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
