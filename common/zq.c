/*
 * zq: the compressing end of a graph-stream writer (see zq.h). Items
 * go through a queue of QMAX to one thread; the buffers it is done with
 * come back for the writer to fill again.
 */
#include "zq.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

enum { OP_Z, OP_RAW, OP_PLEDGE, OP_STOP };

struct item {
	int op;
	ZSTD_EndDirective mode;
	char *buf;
	size_t len, cap;
	uint64_t size;
};

/* Items waiting, at most: a writer that gets that far ahead waits. */
#define QMAX 4

struct zq {
	FILE *fp;
	ZSTD_CCtx *cctx;
	void *out;
	size_t outcap;
	int want, threaded; /* want: start the thread with the first item */
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* an item handed, taken or done */
	struct item q[QMAX];
	size_t head, n;
	int busy;          /* the thread holds an item it took */
	char *spare[QMAX + 1]; /* buffers done with, for the writer to fill */
	size_t sparecap[QMAX + 1];
	size_t nspare;
	int failed;
	char err[256];
};

/* Do one item; 0, or -1 with err set. */
static int
run(struct zq *q, const struct item *it, char *err, size_t errlen)
{
	ZSTD_inBuffer in = { it->buf, it->len, 0 };
	size_t left;

	switch (it->op) {
	case OP_PLEDGE:
		left = ZSTD_CCtx_setPledgedSrcSize(q->cctx, it->size);
		if (ZSTD_isError(left)) {
			snprintf(err, errlen, "zstd: %s", ZSTD_getErrorName(left));
			return -1;
		}
		return 0;
	case OP_RAW:
		if (it->len > 0 && fwrite(it->buf, 1, it->len, q->fp) != it->len)
			goto werr;
		return 0;
	default:
		break;
	}
	do {
		ZSTD_outBuffer out = { q->out, q->outcap, 0 };

		left = ZSTD_compressStream2(q->cctx, &out, &in, it->mode);
		if (ZSTD_isError(left)) {
			snprintf(err, errlen, "zstd: %s", ZSTD_getErrorName(left));
			return -1;
		}
		if (out.pos > 0 && fwrite(q->out, 1, out.pos, q->fp) != out.pos)
			goto werr;
	} while (it->mode == ZSTD_e_end ? left != 0 : in.pos < in.size);
	return 0;
werr:
	snprintf(err, errlen, "write error: %s", strerror(errno ? errno : EIO));
	return -1;
}

static void *
worker(void *arg)
{
	struct zq *q = arg;
	char err[256];
	int bad = 0;

	pthread_mutex_lock(&q->mu);
	for (;;) {
		struct item it;
		int r = 0;

		while (q->n == 0)
			pthread_cond_wait(&q->cv, &q->mu);
		it = q->q[q->head];
		q->head = (q->head + 1) % QMAX;
		q->n--;
		q->busy = 1;
		pthread_mutex_unlock(&q->mu);
		if (it.op != OP_STOP && !bad)
			r = run(q, &it, err, sizeof(err));
		pthread_mutex_lock(&q->mu);
		if (r < 0) {
			bad = 1;
			if (!q->failed) {
				q->failed = 1;
				memcpy(q->err, err, sizeof(q->err));
			}
		}
		if (it.op == OP_Z && q->nspare < QMAX + 1) {
			q->spare[q->nspare] = it.buf;
			q->sparecap[q->nspare++] = it.cap;
		} else {
			free(it.buf);
		}
		q->busy = 0;
		pthread_cond_broadcast(&q->cv);
		if (it.op == OP_STOP)
			break;
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

struct zq *
zq_new(FILE *fp, int level, char *err, size_t errlen)
{
	struct zq *q = xcalloc(1, sizeof(*q));
	const char *e = getenv("KG_WRITER_THREAD");

	q->fp = fp;
	q->cctx = ZSTD_createCCtx();
	if (q->cctx == NULL) {
		snprintf(err, errlen, "cannot create zstd context");
		free(q);
		return NULL;
	}
	ZSTD_CCtx_setParameter(q->cctx, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setParameter(q->cctx, ZSTD_c_checksumFlag, 1);
	q->outcap = ZSTD_CStreamOutSize();
	q->out = xmalloc(q->outcap);
	/* KG_WRITER_THREAD=0: compress on the caller's thread (tests) */
	q->want = sysconf(_SC_NPROCESSORS_ONLN) > 1 && (e == NULL || strcmp(e, "0") != 0);
	return q;
}

/*
 * The thread, started with the first item rather than with the writer:
 * a program that opens its output and then forks (kineto2graph --jobs)
 * forks before there is a thread, whose locks (the allocator's, under
 * the sanitizers) a child would inherit held.
 */
static void
start(struct zq *q)
{
	q->want = 0;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	if (pthread_create(&q->th, NULL, worker, q) == 0) {
		q->threaded = 1;
	} else {
		pthread_cond_destroy(&q->cv);
		pthread_mutex_destroy(&q->mu);
	}
}

/* Hand an item to the thread; -1 (the item not taken) after an error. */
static int
hand(struct zq *q, const struct item *it)
{
	pthread_mutex_lock(&q->mu);
	while (q->n == QMAX && !q->failed)
		pthread_cond_wait(&q->cv, &q->mu);
	if (q->failed && it->op != OP_STOP) {
		pthread_mutex_unlock(&q->mu);
		return -1;
	}
	while (q->n == QMAX)
		pthread_cond_wait(&q->cv, &q->mu);
	q->q[(q->head + q->n) % QMAX] = *it;
	q->n++;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	return 0;
}

/* Do an item here; 0, or -1 after an error. */
static int
here(struct zq *q, const struct item *it)
{
	if (q->failed)
		return -1;
	if (run(q, it, q->err, sizeof(q->err)) < 0) {
		q->failed = 1;
		return -1;
	}
	return 0;
}

int
zq_put(struct zq *q, char **buf, size_t len, size_t *cap, ZSTD_EndDirective mode)
{
	struct item it = { OP_Z, mode, *buf, len, *cap, 0 };

	if (q->want)
		start(q);
	if (!q->threaded)
		return here(q, &it); /* the caller keeps its buffer */
	if (hand(q, &it) < 0)
		return -1;
	pthread_mutex_lock(&q->mu);
	if (q->nspare > 0) {
		q->nspare--;
		*buf = q->spare[q->nspare];
		*cap = q->sparecap[q->nspare];
	} else {
		*buf = NULL;
		*cap = 0;
	}
	pthread_mutex_unlock(&q->mu);
	return 0;
}

int
zq_pledge(struct zq *q, uint64_t size)
{
	struct item it = { OP_PLEDGE, ZSTD_e_continue, NULL, 0, 0, size };

	if (q->want)
		start(q);
	return q->threaded ? hand(q, &it) : here(q, &it);
}

int
zq_raw(struct zq *q, const void *p, size_t n)
{
	struct item it = { OP_RAW, ZSTD_e_continue, (char *)p, n, n, 0 };

	if (q->want)
		start(q);
	if (!q->threaded)
		return here(q, &it);
	it.buf = xmalloc(n > 0 ? n : 1);
	memcpy(it.buf, p, n);
	if (hand(q, &it) < 0) {
		free(it.buf);
		return -1;
	}
	return 0;
}

int
zq_finish(struct zq *q)
{
	if (q->threaded) {
		pthread_mutex_lock(&q->mu);
		while (q->n > 0 || q->busy)
			pthread_cond_wait(&q->cv, &q->mu);
		pthread_mutex_unlock(&q->mu);
	}
	if (q->failed)
		return -1;
	if (fflush(q->fp) != 0) {
		snprintf(q->err, sizeof(q->err), "write error: %s", strerror(errno ? errno : EIO));
		q->failed = 1;
		return -1;
	}
	return 0;
}

const char *
zq_err(const struct zq *q)
{
	return q->err;
}

void
zq_free(struct zq *q)
{
	struct item stop = { OP_STOP, ZSTD_e_continue, NULL, 0, 0, 0 };

	if (q == NULL)
		return;
	if (q->threaded) {
		hand(q, &stop);
		pthread_join(q->th, NULL);
		pthread_cond_destroy(&q->cv);
		pthread_mutex_destroy(&q->mu);
	}
	ZSTD_freeCCtx(q->cctx);
	free(q->out);
	while (q->nspare > 0)
		free(q->spare[--q->nspare]);
	free(q);
}
