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
 * A frame of kgraph's writers holds 2 MiB and a record (formats/): in a
 * piece with room for it (ZIN_PIECE), its compressed bytes all read
 * (ZIN_IN at most), zstd decompresses it at once, straight into the
 * piece (its single-pass mode), instead of through a window buffer of
 * its own; and a piece that holds whole records the reader takes as
 * its buffer instead of copying it there (common/kgread.c, fill_ahead).
 */
#define ZIN_PIECE ((size_t)5 << 19)
#define ZIN_IN ((size_t)5 << 19)

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
