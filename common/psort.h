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
#include <stdint.h>

void psort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
/*
 * The same order, for elements that come in groups (group(element): a
 * job's tasks rank by rank) that cmp orders first: where the groups
 * ascend, each group's run is sorted alone (qsort), the runs shared
 * between the caller and a thread; smaller sorts than one of all, each
 * in the cache, with buffers of a run's size. Else psort.
 */
void psort_grouped(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *),
    int64_t (*group)(const void *));

#endif
