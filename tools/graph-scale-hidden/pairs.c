/*
 * graph-scale-hidden's table of a section's distinct (operator, dims)
 * pairs (hid.h's struct pairs): open addressing on the two string ids,
 * each pair with its count of tasks and, once the main file has
 * rewritten them, its new dims. The main file has it filled and sets
 * the new dims; it and time.c look a task's pair up. It only finds and
 * counts: what a pair's dims become is rules.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "hid.h"
#include "util.h"

static uint64_t
pkey(uint32_t op, uint32_t sh)
{
	uint64_t k = ((uint64_t)op << 32 | sh) * 0x9E3779B97F4A7C15ull;

	return k ^ (k >> 29);
}

static struct pair *
pairs_get(struct pairs *ps, uint32_t op, uint32_t sh, int *isnew)
{
	size_t i;

	if (2 * (ps->n + 1) > ps->nslot) {
		size_t ns = ps->nslot ? 2 * ps->nslot : 256, k;

		free(ps->slot);
		ps->slot = xcalloc(ns, sizeof(*ps->slot));
		ps->nslot = ns;
		for (k = 0; k < ps->n; k++) {
			i = pkey(ps->p[k].op, ps->p[k].sh) & (ns - 1);
			while (ps->slot[i])
				i = (i + 1) & (ns - 1);
			ps->slot[i] = (uint32_t)k + 1;
		}
	}
	i = pkey(op, sh) & (ps->nslot - 1);
	while (ps->slot[i]) {
		struct pair *p = &ps->p[ps->slot[i] - 1];

		if (p->op == op && p->sh == sh) {
			*isnew = 0;
			return p;
		}
		i = (i + 1) & (ps->nslot - 1);
	}
	{
		struct pair p = { op, sh, sh, 0, NULL };

		VEC_PUSH(ps->p, ps->n, ps->cap, p);
	}
	ps->slot[i] = (uint32_t)ps->n;
	*isnew = 1;
	return &ps->p[ps->n - 1];
}

void
hid_pairs_release(struct pairs *ps)
{
	size_t i;

	for (i = 0; i < ps->n; i++)
		free(ps->p[i].text);
	free(ps->p);
	free(ps->slot);
	memset(ps, 0, sizeof(*ps));
}

/* The operator a task's dims belong to: a CPU op's own name, else its op. */
static uint32_t
task_op(const struct kg_task *t)
{
	return t->kind == KG_CPU ? t->name : t->op;
}

/* Every (operator, dims) pair of the section, with its count of tasks. */
void
hid_pairs_collect(const struct graph *g, struct pairs *ps)
{
	size_t i;

	for (i = 0; i < g->ntask; i++) {
		const struct kg_task *t = &g->task[i];
		uint32_t op = task_op(t);
		int isnew;

		if (t->shapes != KG_NONE && op != KG_NONE)
			pairs_get(ps, op, t->shapes, &isnew)->n++;
	}
}

/* The new dims text of a task's (operator, dims), or NULL: unchanged. */
const struct pair *
hid_pair_of(struct pairs *ps, const struct kg_task *t)
{
	int isnew;
	uint32_t op = task_op(t);

	if (t->shapes == KG_NONE || op == KG_NONE)
		return NULL;
	return pairs_get(ps, op, t->shapes, &isnew);
}
