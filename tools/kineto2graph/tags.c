/*
 * Rule 7: structure tags. What-if tools need each task's phase (forward,
 * backward, optimizer), micro-batch and layer. Where the program marked
 * them with record_function ranges (user_annotation events on the CPU
 * thread), a task takes them from the ranges around it, innermost first:
 * a CPU task from those around its start on its own thread, a GPU task
 * from those around its launch call. A range's name gives
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
 * optimizer). Nothing is guessed beyond that.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

static int
has(const char *s, const char *word)
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
	int f = has(name, "forward"), b = has(name, "backward");

	a->ph = f && !b ? KG_PH_FWD : b && !f ? KG_PH_BWD :
	    has(name, "optimizer") ? KG_PH_OPT : KG_PH_NONE;
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

void
tags_build(struct tagger *tg, const struct trace *t, const uint8_t *bwd, uint32_t main)
{
	size_t i, cap = 0, top;
	uint32_t *stack = NULL;
	size_t capstack = 0;

	memset(tg, 0, sizeof(*tg));
	tg->bwd = bwd;
	tg->nproc = t->nproc;
	tg->main = main;
	for (i = 0; i < t->nev; i++) {
		const struct ev *e = &t->ev[i];
		const char *n;
		struct annot a;

		if (e->cls != EV_ANNOT || e->proc >= t->nproc || t->proc[e->proc].gpu)
			continue;
		n = t->str.str[e->name];
		if (strncmp(n, "ProfilerStep#", 13) == 0)
			continue;
		parse(n, &a);
		if (a.ph == KG_PH_NONE && a.ly < 0 && a.mb < 0)
			continue; /* says nothing: not needed */
		a.ts = e->ts;
		a.end = e->ts + e->dur;
		a.proc = e->proc;
		a.parent = KG_NONE;
		VEC_PUSH(tg->a, tg->n, cap, a);
	}
	if (tg->n > 1)
		qsort(tg->a, tg->n, sizeof(*tg->a), cmp_annot);
	tg->first = xcalloc(t->nproc + 1, sizeof(*tg->first));
	for (i = 0; i <= t->nproc; i++)
		tg->first[i] = tg->n;
	for (i = tg->n; i-- > 0;)
		tg->first[tg->a[i].proc] = i;
	for (i = t->nproc; i-- > 0;)
		if (tg->first[i] > tg->first[i + 1])
			tg->first[i] = tg->first[i + 1];
	/* parents: the ranges still open when each one starts */
	for (i = 0, top = 0; i < tg->n; i++) {
		struct annot *a = &tg->a[i];

		if (i > 0 && tg->a[i - 1].proc != a->proc)
			top = 0;
		while (top > 0 && tg->a[stack[top - 1]].end <= a->ts)
			top--;
		a->parent = top > 0 ? stack[top - 1] : KG_NONE;
		grow(&stack, &capstack, top + 1, sizeof(*stack));
		stack[top++] = (uint32_t)i;
	}
	free(stack);
}

void
tags_backward(struct tagger *tg, int64_t it, int64_t start, int64_t end)
{
	struct bwdiv x = { it, start, end };

	VEC_PUSH(tg->bw, tg->nb, tg->capb, x);
}

static int
cmp_bwdiv(const void *a, const void *b)
{
	const struct bwdiv *x = a, *y = b;

	if (x->it != y->it)
		return x->it < y->it ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

void
tags_ready(struct tagger *tg)
{
	size_t i, k = 0;

	if (tg->nb > 1)
		qsort(tg->bw, tg->nb, sizeof(*tg->bw), cmp_bwdiv);
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

int
tags_at(const struct tagger *tg, uint32_t proc, int64_t ts, int64_t it, struct kg_task *k)
{
	size_t lo, hi;
	uint32_t x;
	int got = 0, depth;

	if (proc < tg->nproc && tg->first[proc] < tg->first[proc + 1]) {
		/* the last range of proc that starts at or before ts */
		lo = tg->first[proc];
		hi = tg->first[proc + 1];
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (tg->a[mid].ts <= ts)
				lo = mid + 1;
			else
				hi = mid;
		}
		x = lo > tg->first[proc] ? (uint32_t)(lo - 1) : KG_NONE;
		/* up through the ranges around it to the ones that hold ts */
		for (depth = 0; x != KG_NONE && depth < 64; x = tg->a[x].parent, depth++) {
			const struct annot *a = &tg->a[x];

			if (a->end <= ts)
				continue;
			if (!(got & 1) && a->ph != KG_PH_NONE)
				k->phase = a->ph, got |= 1;
			if (!(got & 2) && a->mb >= 0)
				k->mb = a->mb, got |= 2;
			if (!(got & 4) && a->ly >= 0)
				k->layer = a->ly, got |= 4;
		}
	}
	if (!(got & 1) && proc < tg->nproc && tg->bwd != NULL && tg->bwd[proc]) {
		k->phase = KG_PH_BWD, got |= 8;
	} else if (!(got & 1) && proc == tg->main) {
		/* the iteration's backward spans: [blo, bhi) */
		size_t blo = 0, bhi = tg->nb, i;

		while (blo < bhi) {
			size_t mid = (blo + bhi) / 2;

			if (tg->bw[mid].it < it)
				blo = mid + 1;
			else
				bhi = mid;
		}
		for (bhi = blo; bhi < tg->nb && tg->bw[bhi].it == it; bhi++)
			;
		if (blo < bhi) {
			k->phase = ts < tg->bw[bhi - 1].end ? KG_PH_FWD : KG_PH_OPT;
			for (i = blo; i < bhi; i++)
				if (ts >= tg->bw[i].start && ts < tg->bw[i].end)
					k->phase = KG_PH_BWD; /* while backward runs */
			got |= 8;
		}
	}
	return got;
}

void
tags_release(struct tagger *tg)
{
	free(tg->a);
	free(tg->first);
	free(tg->bw);
	memset(tg, 0, sizeof(*tg));
}
