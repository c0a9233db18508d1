/*
 * zq: the compressing end of a graph-stream writer. What the writer
 * hands it (buffers of records to compress with a zstd end directive,
 * frames already compressed, a pledged frame size) is compressed and
 * written in the order handed, frame by frame on threads of its own
 * where the machine has more than one CPU (one a CPU, at most four), so
 * that encoding the next records and compressing the last ones overlap,
 * and frames compress side by side; else at once, on the caller's. The
 * bytes written are the same either way: each frame is compressed by
 * the same calls in the same order, and depends on no other.
 * KG_WRITER_THREAD=0 in the environment keeps it on the caller's thread
 * (tests compare the two). A frame of more than 8 MiB (a job's sim
 * record) is not held whole for a thread: once the jobs before it are
 * written, the caller compresses it as it comes; KG_WRITER_FRAME_HOLD=
 * BYTES sets that size (tests, to make such frames of small graphs).
 *
 * Errors (zstd's, the output's) are sticky: the call that finds one,
 * or a later one, returns -1 and zq_err says what; zq_finish, which
 * waits for everything handed, is the one a writer must check.
 */
#ifndef KG_ZQ_H
#define KG_ZQ_H

#include <stdint.h>
#include <stdio.h>
#include <zstd.h>

struct zq;

/* NULL, with err set, when the zstd context cannot be made. */
struct zq *zq_new(FILE *fp, int level, char *err, size_t errlen);
/*
 * Compress (*buf)[0..len) with mode (ZSTD_e_continue or ZSTD_e_end).
 * The buffer is taken; *buf and *cap are given another (possibly NULL
 * and 0) to fill next. 0, or -1 after an error.
 */
int zq_put(struct zq *q, char **buf, size_t len, size_t *cap, ZSTD_EndDirective mode);
/*
 * At most n threads (before the first zq_put; the default is one a CPU,
 * at most four): for a program whose own thread is busy while it writes
 * (graph-deps --merge), so that the compressing ones do not crowd it.
 */
void zq_threads(struct zq *q, int n);
/* The size of the frame the next zq_put opens. */
int zq_pledge(struct zq *q, uint64_t size);
/* Write n bytes of whole frames as they are (copied). */
int zq_raw(struct zq *q, const void *p, size_t n);
/* Wait for everything handed and flush the output; 0, or -1. */
int zq_finish(struct zq *q);
const char *zq_err(const struct zq *q);
/* Stop the thread (what was handed is still written) and free. */
void zq_free(struct zq *q);

#endif
