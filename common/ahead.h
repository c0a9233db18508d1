/*
 * ahead: an input read ahead on a thread of its own. The thread runs a
 * reading step (read and decompress, say) over and over, a few pieces
 * ahead of the one that uses them, and hands them over in order through
 * a short queue; their buffers come back to be filled again. Used by
 * the graph-stream reader (common/zin.c: zstd) and kineto2graph (gzip
 * and JSON). Only for a regular file: a pipe's writer is already another
 * process, and a thread blocked reading a pipe could not be stopped;
 * only on a machine of two CPUs or more; never with KG_READER_THREAD=0
 * in the environment (tests compare the two ways: the pieces, the end
 * and the errors must be the same, in the same order).
 */
#ifndef KG_AHEAD_H
#define KG_AHEAD_H

#include <stddef.h>
#include <stdio.h>

struct ahead_piece {
	unsigned char *buf; /* the bytes made: cap of room */
	size_t n;
	void *extra;        /* the step's own (malloc'd; freed once used), or NULL */
	size_t nextra;
	size_t hint;        /* the step's own */
	int seen;           /* the step's own */
	int rc;             /* 1: a piece; 0: the end; -1: an error, in err */
	char err[256];
};

/* One step: fill p, whose buf has cap bytes of room, and set p->rc. */
typedef void (*ahead_fn)(void *arg, struct ahead_piece *p, size_t cap);

struct ahead;

/* A thread running fn(arg, ...) on pieces of cap bytes, from fp; NULL
 * when fp is not worth one (see above) or none can be made. */
struct ahead *ahead_new(FILE *fp, ahead_fn fn, void *arg, size_t cap);
/* The next piece, into *p; its rc. After the end or an error, the same
 * again. Give each piece back with ahead_done before the next call. */
int ahead_next(struct ahead *a, struct ahead_piece *p);
void ahead_done(struct ahead *a, struct ahead_piece *p);
/* Stop the thread (at once where it waits, after its step where it
 * reads) and free. */
void ahead_free(struct ahead *a);

#endif
