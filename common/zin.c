/*
 * zin: a graph-stream reader's decompression, run ahead (see zin.h).
 * The thread does what the reader's own loop does (common/kg.c, fill):
 * read IN_CHUNK bytes, decompress into a piece, and say so; its pieces
 * go through a queue of QMAX, their buffers come back to be filled again.
 */
#include "zin.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define QMAX 8
#define IN_CHUNK (128 * 1024)
#define PIECE (256 * 1024)

struct item {
	struct zin_piece p;
	int status; /* 1 a piece, 0 the end, -1 an error */
	int seen;   /* bytes were read by then */
	char err[256];
};

struct zin {
	FILE *fp;
	ZSTD_DCtx *dctx;
	int keepz;
	unsigned char *in;
	size_t inlen, inpos, hint;
	int eof, seen;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* an item queued or taken, or stop */
	struct item q[QMAX];
	size_t head, n;
	int stop;
	char *spare[QMAX + 2];
	size_t nspare;
	struct item last;  /* the end or error, once taken: given again */
	int over;
};

/* Queue an item; -1 (its buffers freed) when told to stop. */
static int
put(struct zin *q, struct item *it)
{
	pthread_mutex_lock(&q->mu);
	while (q->n == QMAX && !q->stop)
		pthread_cond_wait(&q->cv, &q->mu);
	if (q->stop) {
		pthread_mutex_unlock(&q->mu);
		free(it->p.d);
		free(it->p.z);
		return -1;
	}
	it->seen = q->seen;
	q->q[(q->head + q->n) % QMAX] = *it;
	q->n++;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	return 0;
}

static char *
piece_buf(struct zin *q)
{
	char *d = NULL;

	pthread_mutex_lock(&q->mu);
	if (q->nspare > 0)
		d = q->spare[--q->nspare];
	pthread_mutex_unlock(&q->mu);
	return d != NULL ? d : xmalloc(PIECE);
}

static void *
run(void *arg)
{
	struct zin *q = arg;

	for (;;) {
		struct item it;
		ZSTD_inBuffer in;
		ZSTD_outBuffer out;
		size_t ret;

		memset(&it, 0, sizeof(it));
		if (q->inpos == q->inlen && !q->eof) {
			q->inlen = fread(q->in, 1, IN_CHUNK, q->fp);
			q->inpos = 0;
			if (q->inlen == 0) {
				if (ferror(q->fp)) {
					it.status = -1;
					snprintf(it.err, sizeof(it.err), "read error: %s",
					    strerror(errno ? errno : EIO));
					put(q, &it);
					break;
				}
				q->eof = 1;
			} else {
				q->seen = 1;
			}
		}
		if (q->inpos == q->inlen && q->eof) {
			if (q->hint != 0) {
				it.status = -1;
				snprintf(it.err, sizeof(it.err),
				    "truncated graph stream (ends inside a zstd frame)");
			}
			put(q, &it);
			break;
		}
		it.p.d = piece_buf(q);
		in.src = q->in;
		in.size = q->inlen;
		in.pos = q->inpos;
		out.dst = it.p.d;
		out.size = PIECE;
		out.pos = 0;
		ret = ZSTD_decompressStream(q->dctx, &out, &in);
		if (q->keepz && in.pos > q->inpos) {
			it.p.nz = in.pos - q->inpos;
			it.p.z = xmalloc(it.p.nz);
			memcpy(it.p.z, q->in + q->inpos, it.p.nz);
		}
		q->inpos = in.pos;
		if (ZSTD_isError(ret)) {
			free(it.p.d);
			free(it.p.z);
			memset(&it.p, 0, sizeof(it.p));
			it.status = -1;
			if (ZSTD_getErrorCode(ret) == ZSTD_error_prefix_unknown)
				snprintf(it.err, sizeof(it.err), "not a graph stream (no zstd frame)");
			else if (ZSTD_getErrorCode(ret) == ZSTD_error_checksum_wrong)
				snprintf(it.err, sizeof(it.err),
				    "corrupt graph stream (zstd checksum mismatch)");
			else
				snprintf(it.err, sizeof(it.err), "corrupt graph stream (zstd: %s)",
				    ZSTD_getErrorName(ret));
			put(q, &it);
			break;
		}
		q->hint = ret;
		it.p.nd = out.pos;
		it.p.hint = ret;
		it.status = 1;
		if (it.p.nd == 0 && it.p.nz == 0 && ret != 0) {
			/* nothing made: more input first */
			zin_done(q, &it.p);
			continue;
		}
		if (put(q, &it) < 0)
			break;
	}
	return NULL;
}

struct zin *
zin_new(FILE *fp, ZSTD_DCtx *dctx, int keepz)
{
	const char *e = getenv("KG_READER_THREAD");
	struct stat st;
	struct zin *q;
	int fd = fileno(fp);

	if (e != NULL && strcmp(e, "0") == 0)
		return NULL;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || fd < 0 || fstat(fd, &st) != 0 ||
	    !S_ISREG(st.st_mode))
		return NULL;
	q = xcalloc(1, sizeof(*q));
	q->fp = fp;
	q->dctx = dctx;
	q->keepz = keepz;
	q->in = xmalloc(IN_CHUNK);
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	if (pthread_create(&q->th, NULL, run, q) != 0) {
		pthread_cond_destroy(&q->cv);
		pthread_mutex_destroy(&q->mu);
		free(q->in);
		free(q);
		return NULL;
	}
	return q;
}

int
zin_next(struct zin *q, struct zin_piece *p, int *seen, char *err, size_t errlen)
{
	struct item it;

	if (!q->over) {
		pthread_mutex_lock(&q->mu);
		while (q->n == 0)
			pthread_cond_wait(&q->cv, &q->mu);
		it = q->q[q->head];
		q->head = (q->head + 1) % QMAX;
		q->n--;
		pthread_cond_broadcast(&q->cv);
		pthread_mutex_unlock(&q->mu);
		if (it.status <= 0) {
			q->last = it;
			q->over = 1;
		}
	} else {
		it = q->last;
	}
	*seen = it.seen;
	if (it.status < 0)
		snprintf(err, errlen, "%s", it.err);
	if (it.status == 1)
		*p = it.p;
	return it.status;
}

void
zin_done(struct zin *q, struct zin_piece *p)
{
	free(p->z);
	pthread_mutex_lock(&q->mu);
	if (p->d != NULL && q->nspare < QMAX + 2)
		q->spare[q->nspare++] = p->d;
	else
		free(p->d);
	pthread_mutex_unlock(&q->mu);
	memset(p, 0, sizeof(*p));
}

void
zin_free(struct zin *q)
{
	if (q == NULL)
		return;
	pthread_mutex_lock(&q->mu);
	q->stop = 1;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	pthread_join(q->th, NULL);
	while (q->n > 0) {
		free(q->q[q->head].p.d);
		free(q->q[q->head].p.z);
		q->head = (q->head + 1) % QMAX;
		q->n--;
	}
	while (q->nspare > 0)
		free(q->spare[--q->nspare]);
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
	free(q->in);
	free(q);
}
