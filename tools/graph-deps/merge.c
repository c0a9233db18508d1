/*
 * merge: one job section from the sections of every rank.
 *
 * Each input section is one rank's graph (kineto2graph writes one per
 * trace). The job section holds all of them: strings interned anew,
 * processors tagged with their rank, ids moved up by the ranks before
 * them (ranks in ascending order), and `rank` edges joining the kernels
 * of each collective across its participants.
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
 * State: the whole job, about 140 bytes a task and 40 an edge.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "intern.h"
#include "kg.h"
#include "merge.h"
#include "util.h"

#define PRODUCER "graph-deps " KG_VERSION

struct rank {
	int64_t rank, world, tbase, clk;
	char *gpu;               /* the header's (1.5), owned; "" if unknown */
	int64_t gpu_mem, gpu_sms;
	size_t task0, ntask, proc0, nproc, edge0, nedge;
	size_t newtask0, newproc0;
	uint64_t colls, matched;
	const char *file;
	int section;
};

struct redge {
	uint32_t src, dst;
	int how;
};

struct job {
	struct intern str;
	struct rank *rk;
	size_t nrk, caprk;
	struct kg_proc *proc;
	size_t nproc, capproc;
	struct kg_task *task;
	size_t ntask, captask;
	struct kg_edge *edge;
	size_t nedge, capedge;
	int64_t *iters;
	size_t niters, capiters;
	char **tools;
	size_t ntools;
	struct kg_cov cov;
	/* rank edges, between old task ids */
	struct redge *re;
	size_t nre, capre;
};

/* A collective to match. */
struct centry {
	uint32_t key;   /* group, an id in the keys table */
	uint32_t task;  /* old id */
	uint32_t rk;    /* index in job.rk */
	int64_t inst;   /* sequence number or position in its group */
	int64_t ts;
};

static int
p2p(int c)
{
	return c == KG_COLL_SEND || c == KG_COLL_RECV;
}

static uint32_t
remap(const uint32_t *smap, size_t n, uint32_t id)
{
	return id == KG_NONE || id >= n ? KG_NONE : smap[id];
}

/* Read every section of one input into the job. */
static int
read_input(struct job *j, const char *path, int *section)
{
	struct gin in;
	uint32_t *smap = NULL;
	size_t nsmap = 0, capsmap = 0, i;
	struct rank *rk = NULL;
	int t;

	if (gin_open(&in, path) < 0)
		return 1;
	while ((t = gin_read(&in)) > 0) {
		switch (t) {
		case KG_R_HEADER: {
			const struct kg_header *h = &in.rec.header;
			struct rank nr;

			if (h->nranks > 0) {
				errmsg("%s: section %d is a job section already (from graph-deps --merge)",
				    in.name, *section);
				free(smap);
				gin_close(&in);
				return 1;
			}
			memset(&nr, 0, sizeof(nr));
			nr.rank = h->rank >= 0 ? h->rank : (int64_t)j->nrk;
			nr.world = h->world;
			nr.tbase = h->tbase;
			nr.gpu_mem = h->gpu_mem;
			nr.gpu_sms = h->gpu_sms;
			nr.task0 = j->ntask;
			nr.proc0 = j->nproc;
			nr.edge0 = j->nedge;
			nr.file = path == NULL || strcmp(path, "-") == 0 ? "-" : path;
			nr.section = *section;
			for (i = 0; i < j->nrk; i++)
				if (j->rk[i].rank == nr.rank) {
					errmsg("%s: section %d: rank %lld is in the input twice (first in %s)",
					    in.name, *section, (long long)nr.rank, j->rk[i].file);
					free(smap);
					gin_close(&in);
					return 1;
				}
			nr.gpu = h->gpu != NULL ? xstrndup(h->gpu, strlen(h->gpu)) : xstrndup("", 0);
			VEC_PUSH(j->rk, j->nrk, j->caprk, nr);
			rk = &j->rk[j->nrk - 1];
			for (i = 0; i < h->niters; i++) {
				size_t k;

				for (k = 0; k < j->niters && j->iters[k] != h->iters[i]; k++)
					;
				if (k == j->niters)
					VEC_PUSH(j->iters, j->niters, j->capiters, h->iters[i]);
			}
			if (j->tools == NULL && h->ntools > 0) {
				j->tools = xmalloc(h->ntools * sizeof(*j->tools));
				for (i = 0; i < h->ntools; i++)
					j->tools[i] = xstrndup(h->tools[i], strlen(h->tools[i]));
				j->ntools = h->ntools;
			}
			nsmap = 0;
			(*section)++;
			break;
		}
		case KG_R_STR: {
			const char *s = kg_str(&in.r, in.rec.str_id);
			uint32_t id = intern_get(&j->str, s, strlen(s));

			VEC_PUSH(smap, nsmap, capsmap, id);
			break;
		}
		case KG_R_PROC: {
			struct kg_proc p = in.rec.proc;

			p.name = remap(smap, nsmap, p.name);
			p.rank = rk->rank;
			VEC_PUSH(j->proc, j->nproc, j->capproc, p);
			rk->nproc++;
			break;
		}
		case KG_R_TASK: {
			struct kg_task k = in.rec.task;

			k.proc += (uint32_t)rk->proc0;
			k.name = remap(smap, nsmap, k.name);
			k.op = remap(smap, nsmap, k.op);
			k.shapes = remap(smap, nsmap, k.shapes);
			k.itypes = remap(smap, nsmap, k.itypes);
			k.pg = remap(smap, nsmap, k.pg);
			k.pgr = remap(smap, nsmap, k.pgr);
			k.dtype = remap(smap, nsmap, k.dtype);
			VEC_PUSH(j->task, j->ntask, j->captask, k);
			rk->ntask++;
			break;
		}
		case KG_R_EDGE: {
			struct kg_edge e = in.rec.edge;

			if (e.src >= rk->ntask || e.dst >= rk->ntask) {
				errmsg("%s: record %llu: edge to an unknown task", in.name,
				    (unsigned long long)in.r.nrec);
				free(smap);
				gin_close(&in);
				return 1;
			}
			e.src += (uint32_t)rk->task0;
			e.dst += (uint32_t)rk->task0;
			if (e.on != KG_NONE)
				e.on = e.on < rk->nproc ? e.on + (uint32_t)rk->proc0 : KG_NONE;
			if (e.via != KG_NONE)
				e.via = e.via < rk->ntask ? e.via + (uint32_t)rk->task0 : KG_NONE;
			if (e.at != KG_NONE)
				e.at = e.at < rk->ntask ? e.at + (uint32_t)rk->task0 : KG_NONE;
			VEC_PUSH(j->edge, j->nedge, j->capedge, e);
			rk->nedge++;
			break;
		}
		case KG_R_COV:
			for (i = 0; i < in.rec.cov.n; i++)
				kg_cov_add(&j->cov, in.rec.cov.name[i], in.rec.cov.val[i]);
			break;
		}
	}
	free(smap);
	gin_close(&in);
	return t < 0;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
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
	return x->task < y->task ? -1 : x->task > y->task;
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
static void
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
	for (i = 0; i < j->nrk; i++) {
		struct rank *rk = &j->rk[i];
		size_t t;

		for (t = rk->task0; t < rk->task0 + rk->ntask; t++) {
			const struct kg_task *k = &j->task[t];
			struct centry e;
			char buf[64];
			const char *kt;

			if (k->kind != KG_COLL)
				continue;
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
				    p2p(k->coll) ? KG_COLL_SEND : k->coll));
			}
			e.task = (uint32_t)t;
			e.rk = (uint32_t)i;
			e.inst = k->seq;
			e.ts = k->ts;
			VEC_PUSH(ce, nce, cap, e);
		}
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
			int type = j->task[ce[c].task].coll, ok = 1;

			for (d = c; d < b && ce[d].inst == ce[c].inst; d++)
				;
			if (d - c != np)
				continue;
			for (k = c; k < d; k++) {
				int tk = j->task[ce[k].task].coll;
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
					if (j->task[ce[k].task].odur < tmin)
						tmin = j->task[ce[k].task].odur;
				VEC_PUSH(istart, ninst, capist, nends);
				for (k = c; k < d; k++) {
					struct kg_task *t = &j->task[ce[k].task];
					struct rank *rk = &j->rk[ce[k].rk];

					VEC_PUSH(ends, nends, capends, rk->tbase + t->ts + t->odur);
					grow(&erk, &caperk, nends, sizeof(*erk));
					erk[nends - 1] = ce[k].rk;
					t->dur = tmin;
					rk->matched++;
					if (k > c) {
						struct redge re = { ce[c].task, ce[k].task,
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
static void
clocks(struct job *j, const int64_t *ends, const uint32_t *erk, const size_t *istart, size_t ninst)
{
	struct pdiff *pd = NULL;
	struct pair *pr = NULL;
	size_t npd = 0, cappd = 0, npr = 0, cappr = 0, c, k, i, a, b;
	uint32_t *up = xmalloc((j->nrk + 1) * sizeof(*up)), *lo;
	uint8_t *done = xcalloc(j->nrk + 1, 1);
	int changed;

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
			if (done[pr[i].a] && !done[pr[i].b]) {
				j->rk[pr[i].b].clk = j->rk[pr[i].a].clk + pr[i].d;
				done[pr[i].b] = changed = 1;
			} else if (done[pr[i].b] && !done[pr[i].a]) {
				j->rk[pr[i].a].clk = j->rk[pr[i].b].clk - pr[i].d;
				done[pr[i].a] = changed = 1;
			}
		}
	} while (changed);
	free(pd);
	free(pr);
	free(up);
	free(lo);
	free(done);
}

static int
cmp_rank(const void *a, const void *b)
{
	const struct rank *x = *(struct rank *const *)a, *y = *(struct rank *const *)b;

	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Old task id -> its id in the job section. */
static uint32_t
newid(const struct job *j, const uint32_t *rkof, uint32_t id)
{
	const struct rank *rk = &j->rk[rkof[id]];

	return (uint32_t)(rk->newtask0 + (id - rk->task0));
}

static int
write_job(struct job *j, struct gout *g)
{
	struct kg_writer *w = &g->w;
	struct rank **ord = xmalloc((j->nrk + 1) * sizeof(*ord));
	uint32_t *rkof = xmalloc((j->ntask + 1) * sizeof(*rkof));
	int64_t *ranks = xmalloc((j->nrk + 1) * sizeof(*ranks));
	int64_t *clk = xmalloc((j->nrk + 1) * sizeof(*clk));
	int64_t *t0 = xmalloc((j->nrk + 1) * sizeof(*t0)), first = INT64_MAX;
	const char **tools = xmalloc((j->ntools + 2) * sizeof(*tools));
	struct kg_header h;
	size_t i, t, e, nt = 0, np = 0;
	int64_t tbase = INT64_MAX, world = -1;
	int rc = -1;

	for (i = 0; i < j->nrk; i++) {
		ord[i] = &j->rk[i];
		if (j->rk[i].tbase < tbase)
			tbase = j->rk[i].tbase;
		if (j->rk[i].world > world)
			world = j->rk[i].world;
		if (j->rk[i].rank + 1 > world)
			world = j->rk[i].rank + 1;
		for (t = j->rk[i].task0; t < j->rk[i].task0 + j->rk[i].ntask; t++)
			rkof[t] = (uint32_t)i;
	}
	qsort(ord, j->nrk, sizeof(*ord), cmp_rank);
	for (i = 0; i < j->nrk; i++) {
		ord[i]->newtask0 = nt;
		ord[i]->newproc0 = np;
		nt += ord[i]->ntask;
		np += ord[i]->nproc;
		ranks[i] = ord[i]->rank;
		clk[i] = ord[i]->clk;
	}
	/* Where each rank's graph begins on the job's clock. */
	for (i = 0; i < j->nrk; i++) {
		int64_t lo = INT64_MAX;

		for (t = ord[i]->task0; t < ord[i]->task0 + ord[i]->ntask; t++)
			if (j->task[t].ts < lo)
				lo = j->task[t].ts;
		t0[i] = lo == INT64_MAX ? 0 : lo + ord[i]->tbase - tbase - ord[i]->clk;
		if (t0[i] < first)
			first = t0[i];
	}
	for (i = 0; i < j->nrk; i++)
		t0[i] -= first;
	if (j->niters > 1)
		qsort(j->iters, j->niters, sizeof(*j->iters), cmp_i64);
	for (i = 0; i < j->ntools; i++)
		tools[i] = j->tools[i];
	tools[j->ntools] = PRODUCER;
	memset(&h, 0, sizeof(h));
	h.producer = PRODUCER;
	h.rank = -1;
	h.world = world;
	h.source = "";
	h.iters = j->iters;
	h.niters = j->niters;
	h.tbase = tbase;
	h.tools = tools;
	h.ntools = j->ntools + 1;
	h.ranks = ranks;
	h.clk = clk;
	h.t0 = t0;
	/* the GPU, where every rank says the same */
	h.gpu = ord[0]->gpu;
	h.gpu_mem = ord[0]->gpu_mem;
	h.gpu_sms = ord[0]->gpu_sms;
	for (i = 1; i < j->nrk; i++) {
		if (strcmp(ord[i]->gpu, h.gpu) != 0)
			h.gpu = "";
		if (ord[i]->gpu_mem != h.gpu_mem)
			h.gpu_mem = -1;
		if (ord[i]->gpu_sms != h.gpu_sms)
			h.gpu_sms = -1;
	}
	h.nranks = j->nrk;
	if (kg_write_header(w, &h) < 0)
		goto out;
	for (i = 0; i < j->str.n; i++)
		if (kg_write_str(w, (uint32_t)i, j->str.str[i], j->str.len[i]) < 0)
			goto out;
	for (i = 0; i < j->nrk; i++)
		for (t = 0; t < ord[i]->nproc; t++) {
			struct kg_proc p = j->proc[ord[i]->proc0 + t];

			p.id = (uint32_t)(ord[i]->newproc0 + t);
			if (kg_write_proc(w, &p) < 0)
				goto out;
		}
	for (i = 0; i < j->nrk; i++)
		for (t = 0; t < ord[i]->ntask; t++) {
			struct kg_task k = j->task[ord[i]->task0 + t];

			k.id = (uint32_t)(ord[i]->newtask0 + t);
			k.proc = (uint32_t)(k.proc - ord[i]->proc0 + ord[i]->newproc0);
			k.ts += ord[i]->tbase - tbase - ord[i]->clk;
			if (kg_write_task(w, &k) < 0)
				goto out;
		}
	for (i = 0; i < j->nrk; i++)
		for (e = 0; e < ord[i]->nedge; e++) {
			struct kg_edge x = j->edge[ord[i]->edge0 + e];

			x.src = newid(j, rkof, x.src);
			x.dst = newid(j, rkof, x.dst);
			if (x.via != KG_NONE)
				x.via = newid(j, rkof, x.via);
			if (x.at != KG_NONE)
				x.at = newid(j, rkof, x.at);
			if (x.on != KG_NONE)
				x.on = (uint32_t)(x.on - ord[i]->proc0 + ord[i]->newproc0);
			if (kg_write_edge(w, &x) < 0)
				goto out;
		}
	for (e = 0; e < j->nre; e++) {
		struct kg_edge x;

		kg_edge_init(&x);
		x.src = newid(j, rkof, j->re[e].src);
		x.dst = newid(j, rkof, j->re[e].dst);
		x.kind = KG_E_RANK;
		x.how = j->re[e].how;
		if (kg_write_edge(w, &x) < 0)
			goto out;
	}
	{
		uint64_t all = 0, matched = 0;
		char name[64];

		for (i = 0; i < j->nrk; i++) {
			all += ord[i]->colls;
			matched += ord[i]->matched;
			if (ord[i]->colls > ord[i]->matched) {
				snprintf(name, sizeof(name), "coll_unmatched:%lld", (long long)ord[i]->rank);
				kg_cov_add(&j->cov, name, (int64_t)(ord[i]->colls - ord[i]->matched));
			}
		}
		kg_cov_add(&j->cov, "coll_matched", (int64_t)matched);
		kg_cov_add(&j->cov, "coll_unmatched", (int64_t)(all - matched));
	}
	if (kg_write_cov(w, &j->cov) < 0 || kg_write_end(w) < 0)
		goto out;
	rc = 0;
out:
	if (rc < 0)
		errmsg("%s: %s", g->name, w->err);
	free(ord);
	free(rkof);
	free(ranks);
	free(clk);
	free(t0);
	free(tools);
	return rc < 0 ? 1 : 0;
}

/*
 * Ranks of one job agree on the world size and each is inside it: a rank
 * of another job (another world, or a rank past this one's) stops the
 * merge before anything is written.
 */
static int
one_job_worlds(const struct job *j)
{
	size_t i, first = SIZE_MAX;

	for (i = 0; i < j->nrk; i++) {
		const struct rank *r = &j->rk[i];

		if (r->world <= 0)
			continue;
		if (r->rank >= r->world) {
			errmsg("%s: section %d: rank %lld of a world of %lld", r->file, r->section,
			    (long long)r->rank, (long long)r->world);
			return 1;
		}
		if (first == SIZE_MAX) {
			first = i;
		} else if (r->world != j->rk[first].world) {
			errmsg("%s: section %d: a world of %lld ranks, but %s section %d is of %lld: "
			    "not ranks of one job", r->file, r->section, (long long)r->world,
			    j->rk[first].file, j->rk[first].section, (long long)j->rk[first].world);
			return 1;
		}
	}
	return 0;
}

/*
 * Ranks of one job run the same collectives: when two or more ranks ran
 * some and none matched another rank's, they are likely not one job (or
 * not the same steps; or one job whose groups cannot be told apart), and
 * a rank none of whose collectives matched, while others did, likely
 * not of this job: both are warned about (-q silences them).
 */
static int
one_job_matched(const struct job *j)
{
	size_t i, with = 0;
	uint64_t matched = 0;

	for (i = 0; i < j->nrk; i++) {
		with += j->rk[i].colls > 0;
		matched += j->rk[i].matched;
	}
	if (with >= 2 && matched == 0) {
		warnmsg("%s: section %d: no collective of the %zu ranks matched another rank's: "
		    "not ranks of one job, or not the same steps? they are replayed without "
		    "meeting", j->rk[0].file, j->rk[0].section, j->nrk);
		return 0;
	}
	for (i = 0; i < j->nrk && with >= 2; i++)
		if (j->rk[i].colls > 0 && j->rk[i].matched == 0)
			warnmsg("%s: section %d: rank %lld: none of its %llu collectives matched "
			    "another rank's: is it of this job?", j->rk[i].file, j->rk[i].section,
			    (long long)j->rk[i].rank, (unsigned long long)j->rk[i].colls);
	return 0;
}

/*
 * Ranks of one job ran on one kind of GPU, as a rule: ranks that name
 * different ones (an A100 rank of one job with a V100 rank of another)
 * are warned about; a job of mixed GPUs is possible, so the merge goes on.
 */
static void
one_job_gpus(const struct job *j)
{
	size_t i, first = SIZE_MAX;

	for (i = 0; i < j->nrk; i++) {
		if (j->rk[i].gpu[0] == '\0')
			continue;
		if (first == SIZE_MAX)
			first = i;
		else if (strcmp(j->rk[i].gpu, j->rk[first].gpu) != 0) {
			warnmsg("%s: section %d: rank %lld ran on %s, but rank %lld (%s section %d) "
			    "on %s: not ranks of one job?", j->rk[i].file, j->rk[i].section,
			    (long long)j->rk[i].rank, j->rk[i].gpu, (long long)j->rk[first].rank,
			    j->rk[first].file, j->rk[first].section, j->rk[first].gpu);
			return;
		}
	}
}

int
merge_run(char **paths, int n, const char *output, int verbose)
{
	struct job j;
	struct gout g;
	int64_t *ends;
	uint32_t *erk;
	size_t *istart, ninst, i;
	int rc = 0, k, section;

	memset(&j, 0, sizeof(j));
	intern_init(&j.str);
	kg_cov_init(&j.cov);
	if (n == 0) {
		section = 0;
		rc = read_input(&j, NULL, &section);
	}
	for (k = 0; k < n && rc == 0; k++) {
		section = 0;
		rc = read_input(&j, paths[k], &section);
	}
	if (rc == 0 && j.nrk == 0) {
		errmsg("no section to merge");
		rc = 1;
	}
	if (rc == 0)
		rc = one_job_worlds(&j);
	if (rc == 0)
		one_job_gpus(&j);
	if (rc == 0) {
		match(&j, &ends, &erk, &istart, &ninst);
		clocks(&j, ends, erk, istart, ninst);
		free(ends);
		free(erk);
		free(istart);
		rc = one_job_matched(&j);
	}
	if (rc == 0) {
		if (verbose) {
			struct rank **ord = xmalloc(j.nrk * sizeof(*ord));

			for (i = 0; i < j.nrk; i++)
				ord[i] = &j.rk[i];
			qsort(ord, j.nrk, sizeof(*ord), cmp_rank);
			for (i = 0; i < j.nrk; i++)
				fprintf(stderr, "%s: rank %lld: %zu task%s, %llu collective%s, %llu matched, "
				    "clock offset %lld ns\n", progname, (long long)ord[i]->rank,
				    ord[i]->ntask, ord[i]->ntask == 1 ? "" : "s",
				    (unsigned long long)ord[i]->colls, ord[i]->colls == 1 ? "" : "s",
				    (unsigned long long)ord[i]->matched, (long long)ord[i]->clk);
			free(ord);
		}
		if (gout_open(&g, output, KG_LEVEL) < 0) {
			rc = 1;
		} else {
			kg_writer_run(&g.w, 1); /* one job section: a cut is seen */
			rc = write_job(&j, &g);
			rc = gout_close(&g, rc, PRODUCER);
		}
	}
	intern_release(&j.str);
	kg_cov_release(&j.cov);
	for (i = 0; i < j.ntools; i++)
		free(j.tools[i]);
	free(j.tools);
	for (i = 0; i < j.nrk; i++)
		free(j.rk[i].gpu);
	free(j.rk);
	free(j.proc);
	free(j.task);
	free(j.edge);
	free(j.iters);
	free(j.re);
	return rc;
}
