/*
 * span: what a step's span is, in one place. An iteration runs from the
 * first start of its tasks on a main thread to the last end of its tasks
 * on a main thread or a GPU stream: the host's work before the step's
 * first op is not the step's, the GPU's work after the host has moved on
 * is. A rank without a thread marked main takes its first thread (in
 * the order its proc records came). graphstat's table and its unprofiled
 * column, and kineto2graph's calibration by a step time, measure with it;
 * graphstat's critical path (tools/graphstat/critical.c) keeps the same
 * rule with the task that ended last beside it.
 */
#ifndef KG_SPAN_H
#define KG_SPAN_H

#include <stddef.h>
#include <stdint.h>

#include "kg.h"

struct span {
	int64_t start, end;
};

static inline void
span_init(struct span *sp)
{
	sp->start = INT64_MAX;
	sp->end = INT64_MIN;
}

/* A task [s, e) of a main thread (main) or of a stream (stream). */
static inline void
span_add(struct span *sp, int main, int stream, int64_t s, int64_t e)
{
	if (main && s < sp->start)
		sp->start = s;
	if ((main || stream) && e > sp->end)
		sp->end = e;
}

/* Whether a task of a main thread was added. */
static inline int
span_found(const struct span *sp)
{
	return sp->start != INT64_MAX;
}

/*
 * Mark the first thread of each rank main where none of that rank's is:
 * pmain, pkind and prank hold np procs in their records' order; prank may
 * be NULL for one rank.
 */
static inline void
span_default_main(uint8_t *pmain, const uint8_t *pkind, const int64_t *prank, size_t np)
{
	size_t i, q;

	for (i = 0; i < np; i++) {
		int have = 0;

		if (pkind[i] != KG_THREAD)
			continue;
		for (q = 0; q < np && !have; q++)
			have = pmain[q] && (prank == NULL || prank[q] == prank[i]);
		if (!have)
			pmain[i] = 1;
	}
}

#endif
