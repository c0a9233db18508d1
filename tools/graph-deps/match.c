/*
 * match: graph-deps --merge's collectives matched across the ranks, and
 * the ranks' clock offsets found from them.
 *
 * Matching. A collective (a `coll` task) belongs to a group:
 *   - the process-group ranks the trace records (`pgr`, "[0, 1]");
 *   - else the process-group name (`pg`): the ranks that use it;
 *   - else its group size (`gs`, else the world size), its stream (the
 *     CUDA stream id: one communicator's kernels share one) and its type,
 *     when exactly that many ranks have such collectives.
 * Within a group, the k-th collective of each participant (in order of
 * start; in order of sequence number when every one has one, matching
 * equal numbers) is one instance. An instance matches when it has one
 * collective on each participant, all of one type (or, for two
 * participants, a send and a receive). Everything else is counted
 * unmatched, per rank, and keeps its traced duration.
 *
 * Transfer time. A participant's kernel lasts from when its rank reached
 * the collective to the common end, so the one that started last waited
 * least: the instance's transfer time is the shortest of its kernels'
 * durations. Every participant's `d` becomes it (`od` keeps the traced
 * duration); graphsim starts each when its rank gets there and ends all
 * at the last arrival plus `d`.
 *
 * Clocks. All participants end an instance together. With e(c,r) the
 * traced end of instance c on rank r and o(r) rank r's clock offset,
 * e(c,r) - o(r) is the same on every r, so for two ranks a and b that
 * share instances o(b) - o(a) is the median of e(c,b) - e(c,a); offsets
 * follow along a spanning tree of those pairs (the pairs with the most
 * instances first) from the lowest rank, 0. The job's `ts` are corrected
 * by o(r), which the header keeps (`clk`).
 *
 * Here: match() fills in each matched collective's transfer time (its
 * `dur`), the rank edges (job.re) and each rank's counts; clocks() each
 * rank's `clk`. Both work on the job the first pass made (read.c) and
 * write nothing; write.c writes what they found.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "intern.h"
#include "kg.h"
#include "merge.h"
#include "util.h"

/* A collective to match. */
struct centry {
	uint32_t key;   /* group, an id in the keys table */
	uint32_t col;   /* index in job.col */
	uint32_t rk;    /* index in job.rk */
	int64_t inst;   /* sequence number or position in its group */
	int64_t ts;
};

static int
p2p(int c)
{
	return c == KG_COLL_SEND || c == KG_COLL_RECV;
}

static int
cmp_entry(const void *a, const void *b)
{
	const struct centry *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->rk != y->rk)
		return x->rk < y->rk ? -1 : 1;
	if (x->inst != y->inst)
		return x->inst < y->inst ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->col < y->col ? -1 : x->col > y->col;
}

static const struct job *sortj;

/* By group, instance, then rank (so the first participant is the lowest). */
static int
cmp_inst(const void *a, const void *b)
{
	const struct centry *x = a, *y = b;
	int64_t p, q;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->inst != y->inst)
		return x->inst < y->inst ? -1 : 1;
	p = sortj->rk[x->rk].rank;
	q = sortj->rk[y->rk].rank;
	return p < q ? -1 : p > q;
}

/* Ranks named in a process-group ranks text ("[0, 1, 2]"), as rank indices. */
static size_t
parse_ranks(const struct job *j, const char *s, uint32_t *out, size_t max, int *bad)
{
	size_t n = 0, i;

	long long v;

	*bad = 0;
	while (next_number(&s, &v)) {
		for (i = 0; i < j->nrk && j->rk[i].rank != v; i++)
			;
		if (i == j->nrk || n == max) {
			*bad = 1;
			continue;
		}
		out[n++] = (uint32_t)i;
	}
	return n;
}

/*
 * Match the collectives; fill in rank edges, transfer times and counts.
 * Returns the matched instances' (rank index, traced end) pairs for the
 * clock estimate through *ends (grouped by instance, starts in *istart).
 */
void
match(struct job *j, int64_t **endsp, uint32_t **erkp, size_t **istartp, size_t *ninstp)
{
	struct intern keys;
	struct centry *ce = NULL;
	size_t nce = 0, cap = 0, i, a, b;
	int64_t *ends = NULL;
	uint32_t *erk = NULL, *part = xmalloc((j->nrk + 1) * sizeof(*part));
	size_t nends = 0, capends = 0, caperk = 0, *istart = NULL, ninst = 0, capist = 0;
	uint8_t *seqmode;

	intern_init(&keys);
	for (i = 0; i < j->ncol; i++) {
		const struct coll *k = &j->col[i];
		struct rank *rk = &j->rk[k->rk];
		struct centry e;
		char buf[64];
		const char *kt;

		rk->colls++;
		if (k->pgr != KG_NONE || k->pg != KG_NONE) {
			/* "r:" and the ranks text, or "p:" and the name */
			int byranks = k->pgr != KG_NONE;
			size_t len;
			char *s;

			kt = j->str.str[byranks ? k->pgr : k->pg];
			len = strlen(kt);
			s = xmalloc(len + 3);
			memcpy(s, byranks ? "r:" : "p:", 2);
			memcpy(s + 2, kt, len + 1);
			e.key = intern_get(&keys, s, len + 2);
			free(s);
		} else {
			/* no metadata: size, stream and type (send and
			 * receive as one, to pair them) */
			int64_t size = k->gsize > 0 ? k->gsize : rk->world;

			e.key = intern_get(&keys, buf, (size_t)snprintf(buf, sizeof(buf),
			    "s:%lld:%lld:%d", (long long)size, (long long)j->proc[k->proc].tid,
			    p2p(k->type) ? KG_COLL_SEND : k->type));
		}
		e.col = (uint32_t)i;
		e.rk = k->rk;
		e.inst = k->seq;
		e.ts = k->ts;
		VEC_PUSH(ce, nce, cap, e);
	}
	/* Sequence numbers where every collective of a group has one, else
	 * the position on each rank in start order. */
	seqmode = xcalloc(keys.n + 1, 1);
	for (i = 0; i < keys.n; i++)
		seqmode[i] = 1;
	for (i = 0; i < nce; i++)
		if (ce[i].inst < 0)
			seqmode[ce[i].key] = 0;
	for (i = 0; i < nce; i++)
		if (!seqmode[ce[i].key])
			ce[i].inst = -1;
	if (nce > 0)
		qsort(ce, nce, sizeof(*ce), cmp_entry);
	for (a = 0; a < nce; a = b) {
		int64_t pos = 0;

		for (b = a; b < nce && ce[b].key == ce[a].key && ce[b].rk == ce[a].rk; b++)
			if (!seqmode[ce[b].key])
				ce[b].inst = pos++;
	}
	sortj = j;
	if (nce > 0)
		qsort(ce, nce, sizeof(*ce), cmp_inst);
	/* One pass per group: its participants, then its instances. */
	for (a = 0; a < nce; a = b) {
		const char *key = keys.str[ce[a].key];
		size_t np = 0, c, d, k;
		int bad = 0;

		for (b = a; b < nce && ce[b].key == ce[a].key; b++)
			;
		if (key[0] == 'r') {
			np = parse_ranks(j, key + 2, part, j->nrk, &bad);
		} else {
			/* the ranks that use the group */
			for (c = a; c < b; c++) {
				for (k = 0; k < np && part[k] != ce[c].rk; k++)
					;
				if (k == np)
					part[np++] = ce[c].rk;
			}
			if (key[0] == 's' && (int64_t)np != strtoll(key + 2, NULL, 10))
				bad = 1;
		}
		if (bad || np < 2)
			continue;
		for (c = a; c < b; c = d) {
			int type = j->col[ce[c].col].type, ok = 1;

			for (d = c; d < b && ce[d].inst == ce[c].inst; d++)
				;
			if (d - c != np)
				continue;
			for (k = c; k < d; k++) {
				int tk = j->col[ce[k].col].type;
				size_t q;

				for (q = 0; q < np && part[q] != ce[k].rk; q++)
					;
				if (q == np || (k > c && ce[k].rk == ce[k - 1].rk))
					ok = 0;
				/* one type, or a send and a receive between two */
				if (p2p(type) ? !(np == 2 && d - c == 2 && p2p(tk) && (k == c) == (tk == type)) :
				    tk != type)
					ok = 0;
			}
			if (!ok)
				continue;
			/* a match: transfer time, rank edges, ends */
			{
				int64_t tmin = INT64_MAX;

				for (k = c; k < d; k++)
					if (j->col[ce[k].col].odur < tmin)
						tmin = j->col[ce[k].col].odur;
				VEC_PUSH(istart, ninst, capist, nends);
				for (k = c; k < d; k++) {
					struct coll *t = &j->col[ce[k].col];
					struct rank *rk = &j->rk[ce[k].rk];

					VEC_PUSH(ends, nends, capends, rk->tbase + t->ts + t->odur);
					grow(&erk, &caperk, nends, sizeof(*erk));
					erk[nends - 1] = ce[k].rk;
					t->dur = tmin;
					rk->matched++;
					if (k > c) {
						struct redge re = { ce[c].col, ce[k].col,
						    seqmode[ce[c].key] ? KG_HOW_TRACE : KG_HOW_INFERRED };

						VEC_PUSH(j->re, j->nre, j->capre, re);
					}
				}
			}
		}
	}
	VEC_PUSH(istart, ninst, capist, nends);
	free(seqmode);
	free(part);
	free(ce);
	intern_release(&keys);
	*endsp = ends;
	*erkp = erk;
	*istartp = istart;
	*ninstp = ninst - 1;
}

/* Two ranks' traced ends of one collective: b's less a's. */
struct pdiff {
	uint32_t a, b;
	int64_t d;
};

static int
cmp_pdiff(const void *x, const void *y)
{
	const struct pdiff *p = x, *q = y;

	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	if (p->b != q->b)
		return p->b < q->b ? -1 : 1;
	return p->d < q->d ? -1 : p->d > q->d;
}

/* A pair of ranks with the median of their differences, and how many. */
struct pair {
	uint32_t a, b;
	int64_t d;
	size_t n;
};

static int
cmp_pair_n(const void *x, const void *y)
{
	const struct pair *p = x, *q = y;

	if (p->n != q->n)
		return p->n > q->n ? -1 : 1;
	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	return p->b < q->b ? -1 : p->b > q->b;
}

/*
 * Clock offsets from the instances' ends (see the top of the file): for
 * every two ranks that share collectives, the median of b's end less a's
 * is o(b) - o(a); the pairs that share the most collectives, as many as
 * join the ranks (a spanning tree, largest counts first), give each
 * rank's offset from the lowest rank of its part of the job.
 */
int
clocks(struct job *j, const int64_t *ends, const uint32_t *erk, const size_t *istart, size_t ninst)
{
	struct pdiff *pd = NULL;
	struct pair *pr = NULL;
	size_t npd = 0, cappd = 0, npr = 0, cappr = 0, c, k, i, a, b;
	uint32_t *up = xmalloc((j->nrk + 1) * sizeof(*up)), *lo;
	uint8_t *done = xcalloc(j->nrk + 1, 1);
	int changed, bad = 0;

	for (i = 0; i < j->nrk; i++)
		j->rk[i].clk = 0, up[i] = (uint32_t)i;
	for (c = 0; c < ninst; c++)
		for (k = istart[c] + 1; k < istart[c + 1]; k++) {
			struct pdiff x = { erk[istart[c]], erk[k], ends[k] - ends[istart[c]] };

			VEC_PUSH(pd, npd, cappd, x);
		}
	if (npd > 1)
		qsort(pd, npd, sizeof(*pd), cmp_pdiff);
	for (a = 0; a < npd; a = b) {
		struct pair x;

		for (b = a; b < npd && pd[b].a == pd[a].a && pd[b].b == pd[a].b; b++)
			;
		x.a = pd[a].a;
		x.b = pd[a].b;
		x.n = b - a;
		x.d = x.n % 2 ? pd[a + x.n / 2].d :
		    pd[a + x.n / 2 - 1].d + (pd[a + x.n / 2].d - pd[a + x.n / 2 - 1].d) / 2;
		VEC_PUSH(pr, npr, cappr, x);
	}
	if (npr > 1)
		qsort(pr, npr, sizeof(*pr), cmp_pair_n);
	/* keep the tree's pairs: union by the lower rank index */
	for (i = 0, k = 0; i < npr; i++) {
		if (uf_find(up, pr[i].a) == uf_find(up, pr[i].b))
			continue;
		uf_union(up, pr[i].a, pr[i].b);
		pr[k++] = pr[i];
	}
	npr = k;
	/* each part's reference: its lowest rank */
	lo = xmalloc((j->nrk + 1) * sizeof(*lo));
	for (i = 0; i < j->nrk; i++)
		lo[i] = KG_NONE;
	for (i = 0; i < j->nrk; i++) {
		uint32_t r = uf_find(up, (uint32_t)i);

		if (lo[r] == KG_NONE || j->rk[i].rank < j->rk[lo[r]].rank)
			lo[r] = (uint32_t)i;
	}
	for (i = 0; i < j->nrk; i++)
		if (lo[i] != KG_NONE)
			done[lo[i]] = 1;
	/* spread along the tree (a few passes: it is small) */
	do {
		changed = 0;
		for (i = 0; i < npr; i++) {
			/* each offset in the range of times, so that the next
			 * sum (an offset and a difference of two ends) fits */
			if (done[pr[i].a] && !done[pr[i].b]) {
				j->rk[pr[i].b].clk = j->rk[pr[i].a].clk + pr[i].d;
				done[pr[i].b] = changed = 1;
				bad = bad || !KG_TIME_OK(j->rk[pr[i].b].clk);
			} else if (done[pr[i].b] && !done[pr[i].a]) {
				j->rk[pr[i].a].clk = j->rk[pr[i].b].clk - pr[i].d;
				done[pr[i].a] = changed = 1;
				bad = bad || !KG_TIME_OK(j->rk[pr[i].a].clk);
			}
		}
	} while (changed && !bad);
	free(pd);
	free(pr);
	free(up);
	free(lo);
	free(done);
	if (bad)
		errmsg("the ranks' clock offsets run past %lld ns (2^53 ns, the format's range of "
		    "times): not ranks of one run", (long long)KG_TIME_MAX);
	return bad ? -1 : 0;
}
