/*
 * zin: a graph-stream reader's decompression of a regular file, run
 * ahead on a thread of its own (common/ahead.h says when): while the
 * reader decodes one piece of the stream, the thread reads and
 * decompresses the next ones. The reader sees the same bytes, frame
 * ends and errors, in the same order, as when it decompresses itself.
 */
#ifndef KG_ZIN_H
#define KG_ZIN_H

#include <stdio.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "ahead.h"

struct zin;

/*
 * A thread that reads fp and decompresses it with dctx (the caller's,
 * not to be used by it from then on), keeping the compressed bytes too
 * when keepz. NULL when it is not worth one or none can be made: the
 * caller then decompresses itself.
 */
struct zin *zin_new(FILE *fp, ZSTD_DCtx *dctx, int keepz);
/*
 * The next piece into *p: its decompressed bytes (buf, n), the
 * compressed bytes read to make them (extra, nextra; keepz),
 * ZSTD_decompressStream's return after it (hint: 0 at a frame's end),
 * whether bytes were read by then (seen). Returns p->rc: 1; 0 at the
 * end of the input, the last frame whole; -1 with the reason in p->err,
 * the reader's own words. Give each piece back with zin_done.
 */
int zin_next(struct zin *q, struct ahead_piece *p);
void zin_done(struct zin *q, struct ahead_piece *p);
/* Stop the thread and free. */
void zin_free(struct zin *q);

#endif
