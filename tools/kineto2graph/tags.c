/*
 * Rule 7: structure tags. What-if tools need each task's phase (forward,
 * backward, optimizer), micro-batch, layer and pipeline stage. Where the
 * program marked them with record_function ranges (user_annotation events
 * on the CPU thread), a task takes them from the ranges around it,
 * innermost first: a CPU task from those around its start on its own
 * thread, a GPU task from those around its launch call; a task of a
 * backward thread also from the main thread's ranges open at its start
 * (the main thread waits in the backward call that handed it the work).
 * A range's name gives
 *   - the phase when it says "forward", "backward" or "optimizer" (in
 *     any case; a name saying both forward and backward, like Megatron's
 *     "forward-backward", gives none);
 *   - the layer from "layer" or "layers" followed by a number, with at
 *     most one of "._/-: " between ("layer_3/forward", "layers.3");
 *   - the micro-batch likewise from "microbatch", "micro_batch",
 *     "micro-batch" or "micro batch".
 * A task no range gives a phase, on a backward thread (a thread other
 * than the main one that runs CPU ops: autograd's) or launched from one,
 * is in the backward phase, inferred. On the main thread, in an iteration
 * with backward work, a task that starts while that work runs is in the
 * backward phase too, one that starts before its end in the forward
 * phase, one that starts after it in the optimizer phase, inferred (the
 * loop runs forward passes until its last backward call, then steps the
 * optimizer).
 *
 * Without ranges, tags_infer (infer.c) finds the rest from the trace's
 * structure, and rc_find (recompute.c) the forward work a backward runs
 * again; tags_at gives a task what the ranges say and what they found.
 * What is not found is left unset and counted; nothing else is guessed.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "infer.h"
#include "k2g.h"
#include "util.h"

/* The number after a word: "layer" in "layer_3", "layers.3". */
static int32_t
number_after(const char *s, const char *const *words)
{
	size_t i;

	for (; *s != '\0'; s++)
		for (i = 0; words[i] != NULL; i++) {
			size_t n = strlen(words[i]);
			const char *p = s + n;
			long v = 0;
			int digits = 0;

			if (strncasecmp(s, words[i], n) != 0)
				continue;
			if (*p != '\0' && strchr("._/-: ", *p) != NULL)
				p++;
			while (*p >= '0' && *p <= '9' && digits < 9)
				v = v * 10 + (*p++ - '0'), digits++;
			if (digits > 0)
				return (int32_t)v;
		}
	return -1;
}

int
tag_has(const char *s, const char *word)
{
	size_t n = strlen(word);

	for (; *s != '\0'; s++)
		if (strncasecmp(s, word, n) == 0)
			return 1;
	return 0;
}

static void
parse(const char *name, struct annot *a)
{
	static const char *const layer[] = { "layers", "layer", NULL };
	static const char *const mb[] = {
		"microbatch", "micro_batch", "micro-batch", "micro batch", NULL
	};
	int f = tag_has(name, "forward"), b = tag_has(name, "backward");

	a->ph = f && !b ? KG_PH_FWD : b && !f ? KG_PH_BWD :
	    tag_has(name, "optimizer") ? KG_PH_OPT : KG_PH_NONE;
	a->ly = number_after(name, layer);
	a->mb = number_after(name, mb);
}

static int
cmp_annot(const void *x, const void *y)
{
	const struct annot *a = x, *b = y;

	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->end > b->end ? -1 : a->end < b->end; /* the outer first */
}

/* The first position of cpu on thread proc at or after ts. */
size_t
cpu_at(const struct infer *in, uint32_t proc, int64_t ts)
{
	size_t lo = 0, hi = in->ncpu;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct ev *e = &in->t->ev[in->cpu[mid]];

		if (e->proc < proc || (e->proc == proc && e->ts < ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Sort s by thread and start, index it by thread and link the parents. */
void
spans_index(struct spans *s, size_t nproc)
{
	size_t i, top, capstack = 0;
	uint32_t *stack = NULL;

	if (s->n > 1)
		qsort(s->a, s->n, sizeof(*s->a), cmp_annot);
	s->first = xcalloc(nproc + 1, sizeof(*s->first));
	for (i = 0; i <= nproc; i++)
		s->first[i] = s->n;
	for (i = s->n; i-- > 0;)
		s->first[s->a[i].proc] = i;
	for (i = nproc; i-- > 0;)
		if (s->first[i] > s->first[i + 1])
			s->first[i] = s->first[i + 1];
	/* parents: the ranges still open when each one starts */
	for (i = 0, top = 0; i < s->n; i++) {
		struct annot *a = &s->a[i];

		if (i > 0 && s->a[i - 1].proc != a->proc)
			top = 0;
		while (top > 0 && s->a[stack[top - 1]].end <= a->ts)
			top--;
		a->parent = top > 0 ? stack[top - 1] : KG_NONE;
		grow(&stack, &capstack, top + 1, sizeof(*stack));
		stack[top++] = (uint32_t)i;
	}
	free(stack);
}

/*
 * What the spans of proc open at ts say, innermost first, of what want
 * asks (TAG_PH, TAG_MB, TAG_LY): the bits found.
 */
static int
spans_at(const struct spans *s, size_t nproc, uint32_t proc, int64_t ts, int want,
    int8_t *ph, int32_t *mb, int32_t *ly)
{
	size_t lo, hi;
	uint32_t x;
	int got = 0, depth;

	if (want == 0 || proc >= nproc || s->first == NULL ||
	    s->first[proc] == s->first[proc + 1])
		return 0;
	/* the last span of proc that starts at or before ts */
	lo = s->first[proc];
	hi = s->first[proc + 1];
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->a[mid].ts <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	x = lo > s->first[proc] ? (uint32_t)(lo - 1) : KG_NONE;
	/* up through the spans around it to the ones that hold ts */
	for (depth = 0; x != KG_NONE && depth < 64; x = s->a[x].parent, depth++) {
		const struct annot *a = &s->a[x];

		if (a->end <= ts)
			continue;
		if ((want & ~got & TAG_PH) && a->ph != KG_PH_NONE)
			*ph = a->ph, got |= TAG_PH;
		if ((want & ~got & TAG_MB) && a->mb >= 0)
			*mb = a->mb, got |= TAG_MB;
		if ((want & ~got & TAG_LY) && a->ly >= 0)
			*ly = a->ly, got |= TAG_LY;
	}
	return got;
}

/* Append a span with no phase. */
void
add_span(struct spans *s, uint32_t proc, int64_t ts, int64_t end, int32_t mb, int32_t ly)
{
	struct annot a;

	a.ts = ts;
	a.end = end;
	a.proc = proc;
	a.parent = KG_NONE;
	a.ph = KG_PH_NONE;
	a.mb = mb;
	a.ly = ly;
	VEC_PUSH(s->a, s->n, s->cap, a);
}

void
tags_build(struct tagger *tg, const struct trace *t, const uint8_t *bwd, uint32_t main)
{
	struct { struct annot a; uint8_t state; } *memo;
	size_t i;

	memset(tg, 0, sizeof(*tg));
	tg->bwd = bwd;
	tg->nproc = t->nproc;
	tg->main = main;
	tg->stage = -1;
	/* a name's tags, parsed once: ranges repeat their names (state 0
	 * not parsed, 1 says nothing, 2 parsed into memo) */
	memo = xcalloc(t->str.n + 1, sizeof(*memo));
	for (i = 0; i < t->nev; i++) {
		const struct ev *e = &t->ev[i];
		const char *n;
		struct annot a;

		if (e->cls != EV_ANNOT || e->proc >= t->nproc || t->proc[e->proc].gpu)
			continue;
		if (e->name < t->str.n && memo[e->name].state == 1)
			continue;
		if (e->name < t->str.n && memo[e->name].state == 2) {
			a = memo[e->name].a;
		} else {
			n = t->str.str[e->name];
			if (strncmp(n, "ProfilerStep#", 13) == 0) {
				a.ph = KG_PH_NONE, a.ly = a.mb = -1;
			} else {
				parse(n, &a);
			}
			if (e->name < t->str.n) {
				memo[e->name].a = a;
				memo[e->name].state = a.ph == KG_PH_NONE && a.ly < 0 && a.mb < 0 ? 1 : 2;
			}
		}
		if (a.ph == KG_PH_NONE && a.ly < 0 && a.mb < 0)
			continue; /* says nothing (or a step range): not needed */
		a.ts = e->ts;
		a.end = e->ts + e->dur;
		a.proc = e->proc;
		a.parent = KG_NONE;
		VEC_PUSH(tg->rng.a, tg->rng.n, tg->rng.cap, a);
		if (a.mb >= 0)
			tg->rng_tags |= TAG_MB;
		if (a.ly >= 0)
			tg->rng_tags |= TAG_LY;
	}
	free(memo);
	spans_index(&tg->rng, t->nproc);
}

void
tags_backward(struct tagger *tg, int64_t it, uint32_t proc, int64_t start, int64_t end)
{
	struct bwdiv x = { it, start, end, proc };

	VEC_PUSH(tg->bw, tg->nb, tg->capb, x);
}

static int
cmp_bwdiv(const void *a, const void *b)
{
	const struct bwdiv *x = a, *y = b;

	if (x->it != y->it)
		return x->it < y->it ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->proc < y->proc ? -1 : x->proc > y->proc;
}

void
tags_ready(struct tagger *tg)
{
	size_t i, k = 0;

	if (tg->nb > 1)
		qsort(tg->bw, tg->nb, sizeof(*tg->bw), cmp_bwdiv);
	tg->nrun = tg->nb;
	if (tg->nb > 0) {
		tg->run = xmalloc(tg->nb * sizeof(*tg->run));
		memcpy(tg->run, tg->bw, tg->nb * sizeof(*tg->run));
	}
	/* merge overlapping spans of one iteration */
	for (i = 0; i < tg->nb; i++) {
		if (k > 0 && tg->bw[k - 1].it == tg->bw[i].it && tg->bw[i].start <= tg->bw[k - 1].end) {
			if (tg->bw[i].end > tg->bw[k - 1].end)
				tg->bw[k - 1].end = tg->bw[i].end;
		} else {
			tg->bw[k++] = tg->bw[i];
		}
	}
	tg->nb = k;
}

/* The first of the iteration's entries in a (by iteration, start), and its end. */
size_t
iter_range(const struct bwdiv *a, size_t n, int64_t it, size_t *end)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (a[mid].it < it)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (hi = lo; hi < n && a[hi].it == it; hi++)
		;
	*end = hi;
	return lo;
}

int
tags_at(const struct tagger *tg, uint32_t proc, int64_t ts, int64_t it, struct kg_task *k)
{
	int8_t ph = KG_PH_NONE;
	int32_t mb = -1, ly = -1;
	int got, inf;

	got = spans_at(&tg->rng, tg->nproc, proc, ts, TAG_PH | TAG_MB | TAG_LY, &ph, &mb, &ly);
	/* a backward thread's task: the main thread's ranges around the
	 * backward call it runs for */
	if (proc < tg->nproc && tg->bwd != NULL && tg->bwd[proc] && tg->main != KG_NONE)
		got |= spans_at(&tg->rng, tg->nproc, tg->main, ts, (TAG_PH | TAG_MB) & ~got, &ph,
		    &mb, &ly);
	if (got & TAG_PH)
		k->phase = ph;
	if (got & TAG_MB)
		k->mb = mb;
	if (got & TAG_LY)
		k->layer = ly;
	/* inferred where the trace has no range that says it (two ways of
	 * numbering are not mixed) */
	inf = spans_at(&tg->inf, tg->nproc, proc, ts, (TAG_MB | TAG_LY) & ~tg->rng_tags, &ph,
	    &mb, &ly);
	if (inf & TAG_MB)
		k->mb = mb, got |= TAG_MB_INF;
	if (inf & TAG_LY)
		k->layer = ly, got |= TAG_LY_INF;
	if (tg->stage >= 0)
		k->stage = tg->stage, got |= TAG_ST_INF;
	/* recomputed forward work: in the backward, said so */
	{
		int8_t rph = KG_PH_NONE;
		int32_t rmb, rly;

		if (tg->rcs.n > 0 && spans_at(&tg->rcs, tg->nproc, proc, ts, TAG_PH, &rph, &rmb,
		    &rly) != 0)
			k->recomp = 1, got |= TAG_RC;
	}
	if (!(got & TAG_PH) && proc < tg->nproc && tg->bwd != NULL && tg->bwd[proc]) {
		k->phase = KG_PH_BWD, got |= TAG_PH_INF;
	} else if (!(got & TAG_PH) && proc == tg->main) {
		/* the iteration's backward spans: [blo, bhi) */
		size_t bhi, blo = iter_range(tg->bw, tg->nb, it, &bhi), i;

		if (blo < bhi) {
			k->phase = ts < tg->bw[bhi - 1].end ? KG_PH_FWD : KG_PH_OPT;
			for (i = blo; i < bhi; i++)
				if (ts >= tg->bw[i].start && ts < tg->bw[i].end)
					k->phase = KG_PH_BWD; /* while backward runs */
			got |= TAG_PH_INF;
		}
	}
	return got;
}

void
tags_release(struct tagger *tg)
{
	free(tg->rng.a);
	free(tg->rng.first);
	free(tg->inf.a);
	free(tg->inf.first);
	free(tg->rcs.a);
	free(tg->rcs.first);
	free(tg->bw);
	free(tg->run);
	memset(tg, 0, sizeof(*tg));
}
