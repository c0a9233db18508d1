/*
 * Rule 7, structure tags, where the ranges do not give them (tags.c has
 * the rule and the ranges).
 *
 * Without ranges, tags_infer finds the rest from the trace's structure
 * (kineto2graph(1), Structure tags, says it for users):
 *   - the stage: the rank's place in the ranks of the process group its
 *     sends and receives use (Megatron lists a pipeline group by stage);
 *     0 when the trace has no send or receive;
 *   - forward steps: on the main thread, the forward phase's top-level
 *     tasks between sends and receives and backward calls, from the first
 *     op named as most steps' first op (what comes before it, like the
 *     gradient buffer's zeroing or a receive's waits, is no step's);
 *   - backward calls: the runs of rule 5, split where autograd's sequence
 *     numbers rise (one call's nodes run in falling order);
 *   - micro-batches: the i-th forward step and the i-th backward call of
 *     an iteration are micro-batch i, when there are as many of each;
 *   - layers: the unit that repeats most of a forward step's top-level
 *     ops, each repetition a layer; a backward node is in the layer of the
 *     forward op with its sequence number.
 * At the end of each iteration rc_find (recompute.c) looks in its
 * backward for forward work run again. What is not found is left unset
 * and counted; nothing else is guessed.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "infer.h"
#include "k2g.h"
#include "util.h"

/*
 * A send or receive: a collective named so (its metadata's name), or a
 * c10d:: / nccl: op whose name says send or recv ("c10d::send",
 * "c10d::recv_", "nccl:recv"); not an all-to-all.
 */
static int
p2p_name(const char *s, int op)
{
	if (op && strncmp(s, "c10d::", 6) != 0 && strncmp(s, "nccl:", 5) != 0)
		return 0;
	return (tag_has(s, "send") || tag_has(s, "recv")) && !tag_has(s, "all");
}

/* Where rank stands in a ranks text ("[0, 4]"), -1 if not there. */
static int32_t
rank_pos(const char *s, int64_t rank)
{
	int32_t pos = 0;

	while (*s != '\0') {
		if (*s >= '0' && *s <= '9') {
			int64_t v = 0;

			while (*s >= '0' && *s <= '9' && v < INT64_MAX / 10)
				v = v * 10 + (*s++ - '0');
			if (v == rank)
				return pos;
			pos++;
		} else {
			s++;
		}
	}
	return -1;
}

/*
 * The stage: the rank's place in the ranks of its sends' and receives'
 * process group, all of them agreeing; 0 with no send or receive in the
 * trace; -1 when they name no group that holds the rank.
 */
static int32_t
find_stage(const struct trace *t, int64_t rank)
{
	size_t i;
	int32_t st = -1;
	int seen = 0;

	for (i = 0; i < t->str.n; i++)
		if (p2p_name(t->str.str[i], 1))
			seen = 1;
	for (i = 0; i < t->ncoll; i++) {
		const struct collmeta *cm = &t->coll[i];
		int32_t pos;

		if (cm->name == KG_NONE || !p2p_name(t->str.str[cm->name], 0))
			continue;
		seen = 1;
		if (cm->pgr == KG_NONE || rank < 0)
			continue;
		pos = rank_pos(t->str.str[cm->pgr], rank);
		if (pos < 0)
			continue;
		if (st >= 0 && st != pos)
			return -1; /* two pipelines? not one stage */
		st = pos;
	}
	return seen ? st : 0;
}

/*
 * The repeating unit of s[0..n): the period p whose longest stretch of
 * s[i] == s[i + p] holds the most of s in whole repetitions, two at
 * least (ties: the shorter period, then the earlier stretch); *at is the
 * stretch's start, *reps its repetitions. 0 when nothing repeats.
 */
static size_t
find_period(const uint32_t *s, size_t n, size_t *at, size_t *reps)
{
	size_t p, i, best = 0, bp = 0;

	for (p = 1; p <= n / 2; p++) {
		size_t run = 0, start = 0;

		if (n / p * p <= best)
			continue; /* cannot cover more */
		for (i = 0; i + p < n; i++) {
			if (s[i] != s[i + p]) {
				run = 0;
				continue;
			}
			if (run++ == 0)
				start = i;
			if (run >= p && (run + p) / p * p > best) {
				best = (run + p) / p * p;
				bp = p;
				*at = start;
				*reps = (run + p) / p;
			}
		}
	}
	return bp;
}

/* Past this many top-level ops a step is not searched for layers (the
 * search is quadratic in them). */
#define MAX_STEP_OPS 16384

/*
 * Append to in->it the top-level events of thread proc from position pos
 * of cpu on, while they start at or before until, all in iteration it;
 * returns the position after the last one read.
 */
static size_t
read_items(struct infer *in, size_t pos, uint32_t proc, int64_t until, int32_t it)
{
	const struct trace *t = in->t;

	while (pos < in->ncpu) {
		uint32_t x = in->cpu[pos];
		const struct ev *e = &t->ev[x];
		struct item m;

		if (e->proc != proc || e->ts > until)
			break;
		if (in->encl[x] != KG_NONE) {
			pos++;
			continue;
		}
		if (in->iter[x] != it)
			break;
		memset(&m, 0, sizeof(m));
		m.ts = e->ts;
		m.end = e->ts + e->dur;
		m.name = e->name;
		m.op = e->cls == EV_OP;
		m.node = m.op && (tag_has(t->str.str[e->name], "backward") ||
		    tag_has(t->str.str[e->name], "accumulategrad") ||
		    strncmp(t->str.str[e->name], "autograd::", 10) == 0);
		m.seq = m.seqlo = NO_CORR;
		/* it and everything inside it: up to the next top-level event */
		do {
			const struct ev *d = &t->ev[in->cpu[pos]];

			if (d->cls == EV_OP) {
				if (d->corr != NO_CORR) {
					if (m.seq == NO_CORR)
						m.seq = d->corr;
					if (m.seqlo == NO_CORR || d->corr < m.seqlo)
						m.seqlo = d->corr;
					if (d->corr > m.seqhi)
						m.seqhi = d->corr;
				}
				if (d->extra != KG_NONE || strncmp(t->str.str[d->name], "c10d::", 6) == 0)
					m.coll = 1;
				if (p2p_name(t->str.str[d->name], 1) ||
				    (d->extra != KG_NONE && t->coll[d->extra].name != KG_NONE &&
				    p2p_name(t->str.str[t->coll[d->extra].name], 0)))
					m.p2p = 1;
			}
			pos++;
		} while (pos < in->ncpu && t->ev[in->cpu[pos]].proc == proc &&
		    in->encl[in->cpu[pos]] != KG_NONE);
		VEC_PUSH(in->it, in->nit, in->capit, m);
	}
	return pos;
}

/* The end of the items [lo, hi): the latest end. */
static int64_t
items_end(const struct infer *in, size_t lo, size_t hi)
{
	int64_t end = in->it[lo].end;

	for (; lo < hi; lo++)
		if (in->it[lo].end > end)
			end = in->it[lo].end;
	return end;
}

/* The names of the ops of items [lo, hi) into in->names, their items
 * into in->opix; how many. */
static size_t
op_names(struct infer *in, size_t lo, size_t hi)
{
	size_t n = 0, i;

	for (i = lo; i < hi; i++) {
		uint32_t nm = in->it[i].name;

		if (!in->it[i].op)
			continue;
		if (in->re != NULL) {
			if (in->match[nm] == 0)
				in->match[nm] = regexec(in->re, in->t->str.str[nm], 0, NULL, 0) == 0 ?
				    1 : 2;
			if (in->match[nm] != 1)
				continue;
		}
		grow(&in->names, &in->capnames, n + 1, sizeof(*in->names));
		grow(&in->opix, &in->capopix, n + 1, sizeof(*in->opix));
		in->names[n] = in->it[i].name;
		in->opix[n++] = i;
	}
	return n;
}

/*
 * Forward steps: each piece starts at its first op named as most pieces'
 * first op (of a tie, the one that starts the most events: a step is
 * longer than what comes before it); a piece without one is no step.
 * Writes in->seg.
 */
static void
trim_steps(struct infer *in, const struct seg *s, size_t n)
{
	uint32_t mode = KG_NONE;
	size_t i, j, best = 0, bestlen = 0;

	for (i = 0; i < n; i++) {
		uint32_t f = KG_NONE, g;
		size_t c = 0, len = 0;

		for (j = s[i].lo; j < s[i].hi && f == KG_NONE; j++)
			if (in->it[j].op)
				f = in->it[j].name;
		if (f == KG_NONE)
			continue;
		for (j = 0; j < n; j++) {
			size_t k;

			for (k = s[j].lo, g = KG_NONE; k < s[j].hi && g == KG_NONE; k++)
				if (in->it[k].op)
					g = in->it[k].name;
			if (g == f)
				c++, len += s[j].hi - s[j].lo;
		}
		if (c > best || (c == best && len > bestlen))
			best = c, bestlen = len, mode = f;
	}
	in->nseg = 0;
	for (i = 0; i < n && mode != KG_NONE; i++) {
		struct seg x = s[i];

		while (x.lo < x.hi && !(in->it[x.lo].op && in->it[x.lo].name == mode))
			x.lo++;
		if (x.lo < x.hi)
			VEC_PUSH(in->seg, in->nseg, in->capseg, x);
	}
}

/*
 * Split the pieces that are several forward steps in a row (a schedule
 * with no send or receive between them): a piece whose repeating unit
 * covers most of it and itself repeats a unit over half its length (the
 * layers) is cut at the unit's repetitions. Writes in->seg2.
 */
static void
split_steps(struct infer *in, const struct seg *s, size_t n)
{
	size_t i, j;

	in->nseg2 = 0;
	for (i = 0; i < n; i++) {
		size_t nops = op_names(in, s[i].lo, s[i].hi), at = 0, reps = 0, at2 = 0, reps2 = 0;
		size_t p = nops <= MAX_STEP_OPS ? find_period(in->names, nops, &at, &reps) : 0;
		size_t p2 = p > 0 ? find_period(in->names + at, p, &at2, &reps2) : 0;
		struct seg x = s[i];

		if (p == 0 || reps * p * 2 < nops || p2 == 0 || reps2 * p2 * 2 < p) {
			VEC_PUSH(in->seg2, in->nseg2, in->capseg2, x);
			continue;
		}
		for (j = 1; j < reps; j++) {
			x.hi = in->opix[at + j * p];
			VEC_PUSH(in->seg2, in->nseg2, in->capseg2, x);
			x.lo = x.hi;
		}
		x.hi = s[i].hi;
		VEC_PUSH(in->seg2, in->nseg2, in->capseg2, x);
	}
}

/* The interval of a holding seq, by lo; NULL if none. */
static const struct seqiv *
seq_find(const struct seqiv *a, size_t n, uint32_t seq)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (a[mid].lo <= seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && a[lo - 1].hi >= seq ? &a[lo - 1] : NULL;
}

static int
cmp_seqiv(const void *a, const void *b)
{
	const struct seqiv *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/*
 * The layers of forward step s (items [s->lo, s->hi), whose nops ops are
 * in->names, in->opix) into in->lp: the calls of the layer module class
 * in it where the trace has them, else the repetitions of the unit that
 * repeats most of the step's top-level ops (of those --layer-ops
 * matches), when that is evidence of a block: at least MIN_LAYER_OPS
 * ops (2 among --layer-ops' ops), repeated over half of the step, and
 * (without --layer-ops) no shorter unit repeated over half of it. 0, or
 * -1 (counted) when the step shows no layers.
 */
static int
step_layers(struct infer *in, const struct seg *s, size_t nops)
{
	struct tagger *tg = in->tg;
	size_t at = 0, reps = 0, p, k, q;

	in->nlp = 0;
	if (in->nlay > 0) {
		int64_t a = in->it[s->lo].ts, z = items_end(in, s->lo, s->hi);

		for (k = 0; k < in->nlay; k++) {
			const struct modspan *m = &in->lay[k];
			struct seg x = { SIZE_MAX, 0 };

			if (m->end <= a || m->ts >= z)
				continue;
			for (q = s->lo; q < s->hi; q++)
				if (in->it[q].ts >= m->ts && in->it[q].ts < m->end) {
					if (x.lo == SIZE_MAX)
						x.lo = q;
					x.hi = q + 1;
				}
			if (x.lo != SIZE_MAX)
				VEC_PUSH(in->lp, in->nlp, in->caplp, x);
		}
		if (in->nlp < 2) {
			tg->ly_norepeat++;
			return -1;
		}
		tg->ly_steps++;
		if ((int64_t)in->nlp > tg->ly_reps)
			tg->ly_reps = (int64_t)in->nlp;
		return 0;
	}
	p = nops <= MAX_STEP_OPS ? find_period(in->names, nops, &at, &reps) : 0;
	/* a unit that is itself mostly a shorter one repeated (a CNN's
	 * stages of like blocks) is no layer either, unless --layer-ops
	 * chose the ops (two linears in a row are then no such unit) */
	if (p > 0 && reps * p * 2 >= nops && in->re == NULL) {
		size_t at2 = 0, reps2 = 0, p2 = find_period(in->names + at, p, &at2, &reps2);

		if (p2 > 0 && reps2 * p2 * 2 >= p)
			p = 0;
	}
	if (p < (in->re != NULL ? 2 : MIN_LAYER_OPS) || reps * p * 2 < nops) {
		tg->ly_norepeat++;
		return -1;
	}
	for (k = 0; k < reps; k++) {
		struct seg x;

		x.lo = in->opix[at + k * p];
		x.hi = in->opix[at + (k + 1) * p - 1] + 1;
		VEC_PUSH(in->lp, in->nlp, in->caplp, x);
	}
	if (in->re != NULL) {
		/* ops --layer-ops passed over go with the layer before them;
		 * the last layer takes as many after its last match as the
		 * one before it had */
		size_t tail = in->lp[reps - 1].lo - in->lp[reps - 2].hi;

		for (k = 0; k + 1 < reps; k++)
			in->lp[k].hi = in->lp[k + 1].lo;
		in->lp[reps - 1].hi += tail;
		if (in->lp[reps - 1].hi > s->hi)
			in->lp[reps - 1].hi = s->hi;
	}
	tg->ly_steps++;
	if ((int64_t)reps > tg->ly_reps)
		tg->ly_reps = (int64_t)reps;
	if ((int64_t)p > tg->ly_unit)
		tg->ly_unit = (int64_t)p;
	return 0;
}

/* A backward call: items [lo, hi) of in->it, on thread proc. */
struct call {
	size_t lo, hi;
	uint32_t proc;
};

/*
 * One iteration: the main thread's items [0, nmain) of in->it are read;
 * the backward runs are tg->run[rlo, rhi), the merged spans tg->bw[blo, bhi).
 */
static void
infer_iter(struct infer *in, uint32_t main, int32_t it, size_t rlo, size_t rhi, size_t blo,
    size_t bhi)
{
	struct tagger *tg = in->tg;
	const struct trace *t = in->t;
	struct call *calls = NULL;
	size_t ncall = 0, capcall = 0, nmain = in->nit, i, j, b, nstep;
	int64_t last = tg->bw[bhi - 1].end;
	struct seg *steps;
	int valid;

	/* Backward calls: each run's top-level events, cut where the
	 * sequence numbers rise. */
	for (i = rlo; i < rhi; i++) {
		const struct bwdiv *r = &tg->run[i];
		size_t pos = cpu_at(in, r->proc, r->start);
		uint32_t x, prev = NO_CORR;
		struct call c;

		if (pos >= in->ncpu || t->ev[in->cpu[pos]].proc != r->proc)
			continue;
		for (x = in->cpu[pos]; in->encl[x] != KG_NONE; x = in->encl[x])
			;
		pos = cpu_at(in, r->proc, t->ev[x].ts);
		c.proc = r->proc;
		c.lo = in->nit;
		read_items(in, pos, r->proc, r->end, it);
		for (j = c.lo; j < in->nit; j++) {
			uint32_t s = in->it[j].seq;

			if (s != NO_CORR && prev != NO_CORR && s > prev && j > c.lo) {
				c.hi = j;
				VEC_PUSH(calls, ncall, capcall, c);
				c.lo = j;
			}
			if (s != NO_CORR)
				prev = s;
		}
		c.hi = in->nit;
		if (c.hi > c.lo)
			VEC_PUSH(calls, ncall, capcall, c);
	}

	/* Forward steps: the main thread's forward top-level events between
	 * sends, receives and backward calls. */
	in->nseg2 = 0;
	for (i = 0, b = blo; i < nmain; i = j) {
		const struct item *m = &in->it[i];
		struct seg x;

		while (b < bhi && tg->bw[b].end <= m->ts)
			b++;
		if (m->p2p || m->ts >= last || (b < bhi && m->ts >= tg->bw[b].start)) {
			j = i + 1;
			continue;
		}
		/* on to the next send, receive or backward call */
		for (j = i + 1; j < nmain; j++) {
			const struct item *n = &in->it[j];

			if (n->p2p || n->ts >= last || (b < bhi && n->ts >= tg->bw[b].start))
				break;
		}
		x.lo = i;
		x.hi = j;
		VEC_PUSH(in->seg2, in->nseg2, in->capseg2, x);
	}
	steps = in->seg2;
	in->seg2 = NULL;
	in->capseg2 = 0;
	nstep = in->nseg2;
	trim_steps(in, steps, nstep);
	if (in->nseg < ncall) {
		split_steps(in, steps, nstep);
		trim_steps(in, in->seg2, in->nseg2);
	}
	free(steps);
	valid = in->nseg == ncall;
	if (!valid)
		tg->mb_unmatched++;

	/* Each step's span, its layers and their sequence numbers. */
	in->nstiv = in->nlyiv = 0;
	in->nfwn = 0;
	for (i = 0; i < in->nseg; i++) {
		const struct seg *s = &in->seg[i];
		size_t nops = op_names(in, s->lo, s->hi), reps, k;
		struct seqiv iv = { NO_CORR, 0, (int32_t)i };

		if (valid)
			add_span(&tg->inf, main, in->it[s->lo].ts, items_end(in, s->lo, s->hi),
			    (int32_t)i, -1);
		for (k = s->lo; k < s->hi; k++)
			if (in->it[k].seqlo != NO_CORR) {
				if (iv.lo == NO_CORR || in->it[k].seqlo < iv.lo)
					iv.lo = in->it[k].seqlo;
				if (in->it[k].seqhi > iv.hi)
					iv.hi = in->it[k].seqhi;
			}
		if (iv.lo != NO_CORR)
			VEC_PUSH(in->stiv, in->nstiv, in->capstiv, iv);
		if (step_layers(in, s, nops) < 0)
			continue;
		for (k = 0; k < in->nlp; k++) {
			size_t q;

			for (q = in->lp[k].lo; q < in->lp[k].hi; q++)
				if (in->it[q].op)
					VEC_PUSH(in->fwn, in->nfwn, in->capfwn, in->it[q].name);
		}
		if (tg->stage < 0)
			continue; /* no global layer number without the stage */
		reps = in->nlp;
		for (k = 0; k < reps; k++) {
			size_t a = in->lp[k].lo, z = in->lp[k].hi, q;
			int32_t ly = tg->stage * (int32_t)reps + (int32_t)k;
			struct seqiv lv = { NO_CORR, 0, ly };

			add_span(&tg->inf, main, in->it[a].ts, items_end(in, a, z), -1, ly);
			for (q = a; q < z; q++)
				if (in->it[q].seqlo != NO_CORR) {
					if (lv.lo == NO_CORR || in->it[q].seqlo < lv.lo)
						lv.lo = in->it[q].seqlo;
					if (in->it[q].seqhi > lv.hi)
						lv.hi = in->it[q].seqhi;
				}
			if (lv.lo != NO_CORR)
				VEC_PUSH(in->lyiv, in->nlyiv, in->caplyiv, lv);
		}
	}
	if (in->nstiv > 1)
		qsort(in->stiv, in->nstiv, sizeof(*in->stiv), cmp_seqiv);
	if (in->nlyiv > 1)
		qsort(in->lyiv, in->nlyiv, sizeof(*in->lyiv), cmp_seqiv);

	/* Each backward call: its micro-batch, and each node's layer from
	 * the forward op of its sequence number (what has none, such as
	 * AccumulateGrad, goes with the node before it). */
	for (i = 0; i < ncall; i++) {
		const struct call *c = &calls[i];
		int32_t mb = valid ? (int32_t)i : -1, ly = -1, smb = -1, sly = -1;
		int mapped = 0;
		size_t from = c->lo;

		for (j = c->lo; j <= c->hi; j++) {
			int32_t jly;

			if (j < c->hi && in->it[j].seq != NO_CORR) {
				const struct seqiv *s = seq_find(in->stiv, in->nstiv, in->it[j].seq);

				if (s != NULL) {
					const struct seqiv *l = seq_find(in->lyiv, in->nlyiv, in->it[j].seq);

					mapped = 1;
					if (valid)
						mb = s->v;
					ly = l != NULL ? l->v : -1;
				}
			}
			/* a gradient bucket's collective, launched as its last
			 * gradient is in, and the op that scales it just before
			 * are no layer's */
			jly = ly;
			if (j < c->hi && in->it[j].seq == NO_CORR &&
			    (in->it[j].coll || (j + 1 < c->hi && in->it[j + 1].coll &&
			    in->it[j + 1].seq == NO_CORR && !in->it[j].node)))
				jly = -1;
			if (j == c->hi || mb != smb || jly != sly) {
				if (j > from && (smb >= 0 || sly >= 0))
					add_span(&tg->inf, c->proc, in->it[from].ts,
					    items_end(in, from, j), smb, sly);
				from = j;
				smb = mb;
				sly = jly;
			}
		}
		if (!mapped)
			tg->ly_noseq++;
	}
	free(calls);
	if (in->nfwn > 1)
		qsort(in->fwn, in->nfwn, sizeof(*in->fwn), cmp_u32);
	rc_find(in, it, rlo, rhi);
}

static int
cmp_mod(const void *a, const void *b)
{
	const struct modspan *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/*
 * The layer module class of the main thread's nn.Module calls: of the
 * classes called as two or more instances, the one whose calls take the
 * most time (the blocks, not their parts, which take less, nor the
 * model, called as one instance). Its calls into *out (by start, owned
 * by the caller), their count returned; 0 and KG_NONE when none.
 */
static size_t
layer_module(const struct trace *t, uint32_t main, uint32_t *cls, struct modspan **out)
{
	struct cand {
		uint32_t cls;
		int32_t inst0;
		int many;
		int64_t time;
	} *c = NULL;
	size_t nc = 0, capc = 0, i, k, n = 0, best = SIZE_MAX;

	*cls = KG_NONE;
	*out = NULL;
	for (i = 0; i < t->nmod; i++) {
		const struct modspan *m = &t->mod[i];

		if (m->proc != main)
			continue;
		for (k = 0; k < nc && c[k].cls != m->cls; k++)
			;
		if (k == nc) {
			struct cand x = { m->cls, m->inst, 0, 0 };

			VEC_PUSH(c, nc, capc, x);
		}
		if (m->inst != c[k].inst0)
			c[k].many = 1;
		c[k].time += m->end - m->ts;
	}
	for (k = 0; k < nc; k++)
		if (c[k].many && (best == SIZE_MAX || c[k].time > c[best].time))
			best = k;
	if (best != SIZE_MAX) {
		*cls = c[best].cls;
		*out = xmalloc(t->nmod * sizeof(**out));
		for (i = 0; i < t->nmod; i++)
			if (t->mod[i].proc == main && t->mod[i].cls == *cls)
				(*out)[n++] = t->mod[i];
		qsort(*out, n, sizeof(**out), cmp_mod);
	}
	free(c);
	return n;
}

void
tags_infer(struct tagger *tg, const struct trace *t, const uint32_t *cpu, size_t ncpu,
    const uint32_t *encl, const int32_t *iter, int64_t rank, const regex_t *layer_ops)
{
	struct infer in;
	struct modspan *lay = NULL;
	size_t pos, rlo, rhi, blo, bhi;

	tg->stage = find_stage(t, rank);
	memset(&in, 0, sizeof(in));
	tg->ly_module = KG_NONE;
	if (layer_ops != NULL) {
		in.re = layer_ops;
		in.match = xcalloc(t->str.n + 1, 1);
	} else if (tg->main != KG_NONE) {
		in.nlay = layer_module(t, tg->main, &tg->ly_module, &lay);
		in.lay = lay;
	}
	in.tg = tg;
	in.t = t;
	in.cpu = cpu;
	in.ncpu = ncpu;
	in.encl = encl;
	in.iter = iter;
	if (tg->main != KG_NONE) {
		/* the main thread, an iteration at a time */
		pos = cpu_at(&in, tg->main, INT64_MIN);
		while (pos < ncpu && t->ev[cpu[pos]].proc == tg->main) {
			int32_t it = iter[cpu[pos]];

			if (it == INT32_MIN || encl[cpu[pos]] != KG_NONE) {
				pos++;
				continue;
			}
			in.nit = 0;
			pos = read_items(&in, pos, tg->main, INT64_MAX, it);
			blo = iter_range(tg->bw, tg->nb, it, &bhi);
			rlo = iter_range(tg->run, tg->nrun, it, &rhi);
			if (blo < bhi)
				infer_iter(&in, tg->main, it, rlo, rhi, blo, bhi);
		}
	}
	free(in.it);
	free(in.seg);
	free(in.seg2);
	free(in.names);
	free(in.opix);
	free(in.stiv);
	free(in.lyiv);
	free(in.lp);
	free(in.fwn);
	free(in.match);
	free(lay);
	spans_index(&tg->inf, tg->nproc);
	spans_index(&tg->rcs, tg->nproc);
}
