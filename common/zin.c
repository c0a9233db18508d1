/*
 * zin: a graph-stream reader's decompression, run ahead (see zin.h).
 * Its step does what the reader's own loop does (common/kgread.c, fill):
 * read IN_CHUNK bytes when it has none, decompress once into a piece,
 * and say what came of it.
 */
#include "zin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/*
 * Pieces of ZIN_PIECE, decompressed a whole frame at once (zin.h): at a
 * frame's start, when its compressed bytes are not all in the input,
 * what is left of the input moves to its start and more is read after
 * it. A larger frame (a job's sim record) goes as before, in pieces.
 */
#define PIECE ZIN_PIECE

struct zin {
	struct ahead *a;
	FILE *fp;
	ZSTD_DCtx *dctx;
	int keepz;
	unsigned char *in;
	size_t inlen, inpos, hint;
	int eof, seen;
	int rerr;       /* a read error (errno), told after the bytes read before it */
};

static void
step(void *arg, struct ahead_piece *p, size_t cap)
{
	struct zin *q = arg;

	for (;;) {
		ZSTD_inBuffer in;
		ZSTD_outBuffer out;
		size_t ret;

		if (!q->eof && (q->inpos == q->inlen || (q->hint == 0 && q->inpos > 0 &&
		    ZSTD_isError(ZSTD_findFrameCompressedSize(q->in + q->inpos,
		    q->inlen - q->inpos))))) {
			/* none left, or a frame begins whose bytes are not all
			 * here: what is left to the front, more read after it */
			size_t got;

			memmove(q->in, q->in + q->inpos, q->inlen - q->inpos);
			q->inlen -= q->inpos;
			q->inpos = 0;
			got = fread(q->in + q->inlen, 1, ZIN_IN - q->inlen, q->fp);
			q->inlen += got;
			if (got > 0) {
				q->seen = 1;
			} else {
				/* an error is told once the bytes before it are used */
				if (ferror(q->fp))
					q->rerr = errno ? errno : EIO;
				q->eof = 1;
			}
		}
		p->seen = q->seen;
		if (q->inpos == q->inlen && q->eof && q->rerr != 0) {
			p->rc = -1;
			snprintf(p->err, sizeof(p->err), "read error: %s", strerror(q->rerr));
			return;
		}
		if (q->inpos == q->inlen && q->eof) {
			p->rc = 0;
			if (q->hint != 0) {
				p->rc = -1;
				snprintf(p->err, sizeof(p->err),
				    "truncated graph stream (ends inside a zstd frame)");
			}
			return;
		}
		in.src = q->in;
		in.size = q->inlen;
		in.pos = q->inpos;
		out.dst = p->buf;
		out.size = cap;
		out.pos = 0;
		ret = ZSTD_decompressStream(q->dctx, &out, &in);
		if (q->keepz && in.pos > q->inpos) {
			p->nextra = in.pos - q->inpos;
			p->extra = xmalloc(p->nextra);
			memcpy(p->extra, q->in + q->inpos, p->nextra);
		}
		q->inpos = in.pos;
		if (ZSTD_isError(ret)) {
			p->rc = -1;
			if (ZSTD_getErrorCode(ret) == ZSTD_error_prefix_unknown)
				snprintf(p->err, sizeof(p->err), "not a graph stream (no zstd frame)");
			else if (ZSTD_getErrorCode(ret) == ZSTD_error_checksum_wrong)
				snprintf(p->err, sizeof(p->err),
				    "corrupt graph stream (zstd checksum mismatch)");
			else
				snprintf(p->err, sizeof(p->err), "corrupt graph stream (zstd: %s)",
				    ZSTD_getErrorName(ret));
			return;
		}
		q->hint = ret;
		if (out.pos == 0 && p->nextra == 0 && ret != 0)
			continue; /* nothing made: more input first */
		p->n = out.pos;
		p->hint = ret;
		p->rc = 1;
		return;
	}
}

struct zin *
zin_new(FILE *fp, ZSTD_DCtx *dctx, int keepz)
{
	struct zin *q = xcalloc(1, sizeof(*q));

	q->fp = fp;
	q->dctx = dctx;
	q->keepz = keepz;
	q->in = xmalloc(ZIN_IN);
	q->a = ahead_new(fp, step, q, PIECE);
	if (q->a == NULL) {
		free(q->in);
		free(q);
		return NULL;
	}
	return q;
}

int
zin_next(struct zin *q, struct ahead_piece *p)
{
	return ahead_next(q->a, p);
}

void
zin_done(struct zin *q, struct ahead_piece *p)
{
	ahead_done(q->a, p);
}

void
zin_free(struct zin *q)
{
	if (q == NULL)
		return;
	ahead_free(q->a);
	free(q->in);
	free(q);
}
