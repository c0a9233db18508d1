/*
 * psort: qsort on two CPUs. The first half is sorted on a thread while
 * the caller sorts the second, then the halves are merged (with a
 * buffer of half the elements, no more than qsort's own), the first
 * half's element first of two that compare equal: since glibc's qsort
 * is a stable merge sort (where its buffer fits in memory, as it does
 * for what kgraph sorts), the result is the bytes qsort gives, ties
 * and all; with a comparator that orders every pair (kgraph's end on an
 * id), any sort gives them.
 *
 * Plain qsort for fewer than 64 Ki elements, on one CPU, with
 * KG_SORT_THREAD=0 in the environment, or when no thread can be made;
 * KG_SORT_THREAD=always splits from two elements on (for tests). The
 * comparator must only read what it shares with the caller's thread.
 */
#ifndef KG_PSORT_H
#define KG_PSORT_H

#include <stddef.h>

void psort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
/*
 * The nrun runs base[start[r] .. start[r + 1]) each sorted (qsort),
 * shared between the caller and a thread: the whole sorted when every
 * element of a run orders before every element of the next (a leading
 * key field the runs are made by, say: a job's tasks rank by rank).
 * Smaller sorts than one of all, each in the cache.
 */
void psort_runs(void *base, size_t size, const size_t *start, size_t nrun,
    int (*cmp)(const void *, const void *));

#endif
