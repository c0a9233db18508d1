/*
 * zin: the decompressing end of a graph-stream reader, run ahead on a
 * thread of its own: while the reader decodes one piece of the stream,
 * the thread reads and decompresses the next ones. Only for a regular
 * file (a pipe's writer is already another process, and a thread
 * blocked reading a pipe could not be stopped), on a machine of two
 * CPUs or more; KG_READER_THREAD=0 in the environment turns it off
 * (tests compare the two). The reader sees the same bytes, frame ends
 * and errors, in the same order, as when it decompresses itself.
 */
#ifndef KG_ZIN_H
#define KG_ZIN_H

#include <stddef.h>
#include <stdio.h>
#include <zstd.h>
#include <zstd_errors.h>

struct zin;

/* A piece of the stream, as ZSTD_decompressStream gave it. */
struct zin_piece {
	char *d;          /* decompressed bytes */
	size_t nd;
	char *z;          /* the compressed bytes read to make them (keepz) */
	size_t nz;
	size_t hint;      /* ZSTD_decompressStream's return: 0 at a frame's end */
};

/*
 * A thread that reads fp and decompresses it with dctx (the caller's,
 * not to be used by it from then on), keeping the compressed bytes too
 * when keepz. NULL when it is not worth one (see above) or none can be
 * made: the caller then decompresses itself.
 */
struct zin *zin_new(FILE *fp, ZSTD_DCtx *dctx, int keepz);
/*
 * The next piece into *p: 1; 0 at the end of the input (the last frame
 * whole), and from then on; -1 with the reason in err (a read error, a
 * corrupt or truncated stream: the reader's own words). Give each piece
 * back with zin_done before the next call.
 */
int zin_next(struct zin *q, struct zin_piece *p, int *seen, char *err, size_t errlen);
void zin_done(struct zin *q, struct zin_piece *p);
/* Stop the thread and free. */
void zin_free(struct zin *q);

#endif
