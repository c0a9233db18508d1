/*
 * prefault: a thread that faults in the pages of large arrays before
 * their owner writes them. A program that fills gigabytes of fresh
 * memory spends much of its time in the kernel zeroing pages on first
 * touch (a quarter of graphsim's on a 256-rank job, more where huge
 * pages come from memory the host has taken back); done on another CPU
 * while the owner does its own work, that time is off the owner's.
 *
 * The owner says, per array (a slot), where it is and how many of its
 * bytes it wants faulted in; the thread faults them in, in order, by
 * madvise(MADV_POPULATE_WRITE), which keeps what the pages hold: the
 * owner may write them at the same time. An array may move (mremap) or
 * go (munmap) under the thread: a populate of a range no longer mapped
 * fails, and one of a range mapped again populates harmless pages, so
 * the owner only says where the array is now. Nothing depends on the
 * thread: with none (one CPU, KG_PREFAULT=0 in the environment, a
 * kernel without MADV_POPULATE_WRITE) the owner faults its pages in
 * itself, as it always could.
 */
#ifndef KG_PREFAULT_H
#define KG_PREFAULT_H

#include <stddef.h>

#define PF_SLOTS 16

struct prefault;

/* A thread, started once 64 MiB are wanted (at the first want with
 * KG_PREFAULT=always, for tests); NULL when there is none to be had
 * (see above). */
struct prefault *pf_new(void);
/*
 * Slot i's array is at base now; fault in its first want bytes (what is
 * already faulted in of it stays so, wherever it moved: pass the bytes
 * already asked for again, or more). A NULL base forgets the slot.
 * p may be NULL (no thread).
 */
void pf_want(struct prefault *p, int i, void *base, size_t want);
/*
 * For an array that grows by one element at a time (VEC_PUSH): arr, of
 * n elements of size bytes in room for cap (cap0 before the push: it
 * moved if they differ), faulted in PF_AHEAD elements ahead of n, the
 * thread told every PF_EVERY elements and whenever it moved.
 */
#define PF_AHEAD ((size_t)1 << 16)
#define PF_EVERY ((size_t)1 << 15)
static inline void
pf_vec(struct prefault *p, int i, void *arr, size_t n, size_t cap, size_t cap0, size_t size)
{
	/* on the path of every push: the test here, the call seldom */
	if (p != NULL && (n % PF_EVERY == 0 || cap != cap0))
		pf_want(p, i, arr, (n + PF_AHEAD < cap ? n + PF_AHEAD : cap) * size);
}
/* Forget slots from to PF_SLOTS - 1 (arrays about to go). p may be NULL. */
void pf_forget(struct prefault *p, int from);
/* Stop the thread after the populate it is in, and free. */
void pf_free(struct prefault *p);

#endif
