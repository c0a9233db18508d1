/*
 * zq: the compressing end of a graph-stream writer (see zq.h).
 *
 * What the writer hands is gathered into jobs, one a zstd frame (its
 * buffers, and the pledged size that opens it) or one a run of bytes
 * already compressed. Jobs wait in a ring: one a thread, one in the
 * making, and one handed that a thread takes as soon as it is free
 * (memory for so many frames of 2 MiB, and no more, is what a writer
 * adds; with one fewer, the caller and a lone thread take turns
 * instead of working side by side); each of the threads
 * takes the oldest waiting one, compresses it into its own output with
 * a zstd context of its own, and writes out, in the order handed, every
 * job done that is next. A frame is compressed by the same calls in the
 * same order whichever context does it, and a frame does not depend on
 * the ones before it: the bytes are those of one context doing them all.
 */
#include "zq.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

enum { OP_Z, OP_RAW, OP_PLEDGE };

struct item {
	int op;
	ZSTD_EndDirective mode;
	char *buf;         /* the job's, unless borrowed */
	size_t len, cap;
	uint64_t size;
	int borrowed;      /* the caller's: neither kept nor freed */
};

enum { J_FILLING, J_WAITING, J_TAKEN, J_DONE };

struct job {
	struct item *it;
	size_t nit, capit;
	size_t bytes;      /* of its items */
	char *out;         /* what it makes, to write */
	size_t nout, capout;
	int state;
};

/* Threads, at most. */
#define WMAX 4
/* Jobs in the ring, at most: one a thread, the one in the making, and
 * one handed that waits for a thread (a writer that gets that far ahead
 * waits; a ring whose head meets its tail is empty, never full). */
#define JMAX (WMAX + 2)
/* A frame held whole up to this; a larger one is compressed as it comes. */
#define BIG_FRAME ((size_t)8 << 20)
/* Bytes passed as they are (zq_raw) that are copied; more are waited on. */
#define RAW_COPY ((size_t)16 << 20)
/* Buffers kept for the writer to fill again. */
#define SPARE 8

struct zq {
	FILE *fp;
	int level;
	ZSTD_CCtx *cctx;   /* the caller's, when no thread */
	int want, nth;     /* want: start the threads with the first item */
	int max;           /* threads at most, 0: one a CPU (zq_threads) */
	pthread_t th[WMAX];
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a job handed, done or written, or stop */
	struct job job[JMAX];
	size_t ring;       /* slots in the ring: two more than the threads */
	size_t head, tail; /* the oldest not written; the one filling */
	uint64_t handed, written; /* jobs handed to the threads, and written */
	int writing, stop;
	int direct;        /* a large frame is being compressed by the caller */
	size_t hold;       /* a frame larger is large: BIG_FRAME, or KG_WRITER_FRAME_HOLD */
	char *hout;        /* what here() makes */
	size_t nhout, caphout;
	char *spare[SPARE];
	size_t sparecap[SPARE];
	size_t nspare;
	int failed;
	char err[256];
};

static ZSTD_CCtx *
new_cctx(int level)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();

	if (c != NULL) {
		ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
		ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	}
	return c;
}

/* Do one item with cctx, appending what it makes to *out; 0, or -1 with err set. */
static int
run(ZSTD_CCtx *cctx, const struct item *it, char **out, size_t *nout, size_t *capout,
    char *err, size_t errlen)
{
	ZSTD_inBuffer in = { it->buf, it->len, 0 };
	size_t left;

	switch (it->op) {
	case OP_PLEDGE:
		left = ZSTD_CCtx_setPledgedSrcSize(cctx, it->size);
		if (ZSTD_isError(left)) {
			snprintf(err, errlen, "zstd: %s", ZSTD_getErrorName(left));
			return -1;
		}
		return 0;
	case OP_RAW:
		return 0; /* written as it is (job_write) */
	default:
		break;
	}
	do {
		ZSTD_outBuffer o;

		/* room for the whole frame's output: zstd then compresses a
		 * frame handed whole in one pass, straight into it */
		grow(out, capout, *nout + (it->mode == ZSTD_e_end ?
		    ZSTD_compressBound(in.size - in.pos) : ZSTD_CStreamOutSize()), 1);
		o.dst = *out + *nout;
		o.size = *capout - *nout;
		o.pos = 0;
		left = ZSTD_compressStream2(cctx, &o, &in, it->mode);
		if (ZSTD_isError(left)) {
			snprintf(err, errlen, "zstd: %s", ZSTD_getErrorName(left));
			return -1;
		}
		*nout += o.pos;
	} while (it->mode == ZSTD_e_end ? left != 0 : in.pos < in.size);
	return 0;
}

static int
write_out(FILE *fp, const char *p, size_t n, char *err, size_t errlen)
{
	if (n > 0 && fwrite(p, 1, n, fp) != n) {
		snprintf(err, errlen, "write error: %s", strerror(errno ? errno : EIO));
		return -1;
	}
	return 0;
}

/* What a job made: its compressed frame, or the bytes it was handed. */
static int
job_write(FILE *fp, const struct job *j, char *err, size_t errlen)
{
	if (j->nit == 1 && j->it[0].op == OP_RAW)
		return write_out(fp, j->it[0].buf, j->it[0].len, err, errlen);
	return write_out(fp, j->out, j->nout, err, errlen);
}

/* A job written: its buffers back to the spares (locked). */
static void
job_clear(struct zq *q, struct job *j)
{
	size_t i;

	for (i = 0; i < j->nit; i++) {
		struct item *it = &j->it[i];

		if (it->borrowed)
			continue;
		if (it->op == OP_Z && it->buf != NULL && q->nspare < SPARE) {
			q->spare[q->nspare] = it->buf;
			q->sparecap[q->nspare++] = it->cap;
		} else {
			free(it->buf);
		}
	}
	j->nit = 0;
	j->bytes = 0;
	j->nout = 0;
	j->state = J_FILLING;
}

/* The first error, kept (locked). */
static void
set_failed(struct zq *q, const char *err)
{
	if (!q->failed) {
		q->failed = 1;
		snprintf(q->err, sizeof(q->err), "%s", err);
	}
}

static void *
worker(void *arg)
{
	struct zq *q = arg;
	ZSTD_CCtx *cctx = new_cctx(q->level);
	char err[256];

	pthread_mutex_lock(&q->mu);
	if (cctx == NULL)
		set_failed(q, "cannot create zstd context");
	for (;;) {
		struct job *j = NULL;
		size_t k;
		int bad = 0;

		for (k = q->head; k != q->tail; k = (k + 1) % q->ring)
			if (q->job[k].state == J_WAITING) {
				j = &q->job[k];
				break;
			}
		if (j == NULL) {
			if (q->stop)
				break;
			pthread_cond_wait(&q->cv, &q->mu);
			continue;
		}
		j->state = J_TAKEN;
		pthread_mutex_unlock(&q->mu);
		for (k = 0; k < j->nit && !bad && cctx != NULL; k++)
			bad = run(cctx, &j->it[k], &j->out, &j->nout, &j->capout, err,
			    sizeof(err)) < 0;
		pthread_mutex_lock(&q->mu);
		if (bad)
			set_failed(q, err);
		j->state = J_DONE;
		/* write what is next and done, one thread at a time */
		while (!q->writing && q->head != q->tail && q->job[q->head].state == J_DONE) {
			struct job *w = &q->job[q->head];
			int ok = 1, skip = q->failed;

			q->writing = 1;
			pthread_mutex_unlock(&q->mu);
			if (!skip)
				ok = job_write(q->fp, w, err, sizeof(err)) == 0;
			pthread_mutex_lock(&q->mu);
			if (!ok)
				set_failed(q, err);
			job_clear(q, w);
			q->head = (q->head + 1) % q->ring;
			q->written++;
			q->writing = 0;
		}
		pthread_cond_broadcast(&q->cv);
	}
	pthread_mutex_unlock(&q->mu);
	ZSTD_freeCCtx(cctx);
	return NULL;
}

struct zq *
zq_new(FILE *fp, int level, char *err, size_t errlen)
{
	struct zq *q = xcalloc(1, sizeof(*q));
	const char *e;

	q->fp = fp;
	q->level = level;
	q->cctx = new_cctx(level);
	if (q->cctx == NULL) {
		snprintf(err, errlen, "cannot create zstd context");
		free(q);
		return NULL;
	}
	/* KG_WRITER_FRAME_HOLD=BYTES: a smaller hold, for the tests to make
	 * large frames of small graphs */
	q->hold = BIG_FRAME;
	if ((e = getenv("KG_WRITER_FRAME_HOLD")) != NULL) {
		char *end;
		unsigned long long v = strtoull(e, &end, 10);

		if (*e != '\0' && *end == '\0' && v > 0)
			q->hold = (size_t)v;
	}
	e = getenv("KG_WRITER_THREAD");
	/* KG_WRITER_THREAD=0: compress on the caller's thread (tests) */
	q->want = sysconf(_SC_NPROCESSORS_ONLN) > 1 && (e == NULL || strcmp(e, "0") != 0);
	return q;
}

/*
 * The threads, started with the first item rather than with the
 * writer: a program that opens its output and then forks (kineto2graph
 * --jobs) forks before there is a thread, whose locks (the allocator's,
 * under the sanitizers) a child would inherit held. One a CPU, at most
 * WMAX: the caller's thread encodes meanwhile.
 */
static void
start(struct zq *q)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int n = cpus > WMAX ? WMAX : (int)cpus, i;

	if (q->max > 0 && n > q->max)
		n = q->max;
	q->want = 0;
	q->ring = (size_t)n + 2;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	for (i = 0; i < n; i++)
		if (pthread_create(&q->th[q->nth], NULL, worker, q) == 0)
			q->nth++;
	if (q->nth == 0) {
		pthread_cond_destroy(&q->cv);
		pthread_mutex_destroy(&q->mu);
	}
}

void
zq_threads(struct zq *q, int n)
{
	q->max = n;
}

/* Do an item on the caller's thread; 0, or -1 after an error. */
static int
here(struct zq *q, const struct item *it)
{
	if (q->failed)
		return -1;
	q->nhout = 0;
	if (run(q->cctx, it, &q->hout, &q->nhout, &q->caphout, q->err, sizeof(q->err)) < 0 ||
	    write_out(q->fp, it->op == OP_RAW ? it->buf : q->hout, it->op == OP_RAW ? it->len :
	    q->nhout, q->err, sizeof(q->err)) < 0) {
		q->failed = 1;
		return -1;
	}
	return 0;
}

/*
 * Hand the job filling to the threads, then wait for room in the ring
 * (locked): while every thread has a job and another waits, the caller
 * would only get further ahead.
 */
static void
submit(struct zq *q)
{
	q->job[q->tail].state = J_WAITING;
	q->tail = (q->tail + 1) % q->ring;
	q->handed++;
	pthread_cond_broadcast(&q->cv);
	while ((q->tail + 1) % q->ring == q->head && !q->failed)
		pthread_cond_wait(&q->cv, &q->mu);
}

/*
 * Add an item to the job filling (the buffer is the job's now); `ends`
 * hands the job to the threads. -1 after an error (the item's buffer
 * freed).
 */
static int
hand(struct zq *q, const struct item *it, int ends)
{
	struct job *j;

	pthread_mutex_lock(&q->mu);
	if (q->failed) {
		pthread_mutex_unlock(&q->mu);
		free(it->buf);
		return -1;
	}
	j = &q->job[q->tail];
	VEC_PUSH(j->it, j->nit, j->capit, *it);
	j->bytes += it->len;
	if (ends) {
		submit(q);
	} else if (j->bytes > q->hold) {
		/* A frame too large to hold whole (a job's sim record): once
		 * the jobs before it are written, the caller compresses it,
		 * what it has and then the rest as it comes (zq_put). */
		size_t k;
		int bad = 0;

		while (q->head != q->tail && !q->failed)
			pthread_cond_wait(&q->cv, &q->mu);
		pthread_mutex_unlock(&q->mu);
		for (k = 0; k < j->nit && !bad; k++)
			bad = here(q, &j->it[k]) < 0;
		pthread_mutex_lock(&q->mu);
		job_clear(q, j);
		q->direct = !bad;
		pthread_mutex_unlock(&q->mu);
		return bad ? -1 : 0;
	}
	pthread_mutex_unlock(&q->mu);
	return 0;
}

/*
 * Hand bytes that stay the caller's, as a job of their own, and wait
 * until the threads are done with it (written, or dropped after an
 * error): for a run too large to copy (graph-deps --merge passes its
 * edges, hundreds of MB, so).
 */
static int
hand_wait(struct zq *q, const struct item *it)
{
	struct item mine = *it;
	struct job *j;
	uint64_t my;
	int rc;

	mine.borrowed = 1;
	pthread_mutex_lock(&q->mu);
	if (q->failed) {
		pthread_mutex_unlock(&q->mu);
		return -1;
	}
	if (q->job[q->tail].nit > 0)
		submit(q); /* a frame not ended goes first, as it is */
	j = &q->job[q->tail];
	VEC_PUSH(j->it, j->nit, j->capit, mine);
	my = q->handed;
	submit(q);
	while (q->written <= my)
		pthread_cond_wait(&q->cv, &q->mu);
	rc = q->failed ? -1 : 0;
	pthread_mutex_unlock(&q->mu);
	return rc;
}

int
zq_put(struct zq *q, char **buf, size_t len, size_t *cap, ZSTD_EndDirective mode)
{
	struct item it = { OP_Z, mode, *buf, len, *cap, 0, 0 };

	if (q->want)
		start(q);
	if (q->direct) {
		/* the rest of a large frame (hand) */
		if (mode == ZSTD_e_end)
			q->direct = 0;
		return here(q, &it); /* the caller keeps its buffer */
	}
	if (q->nth == 0)
		return here(q, &it);
	if (hand(q, &it, mode == ZSTD_e_end) < 0) {
		*buf = NULL;
		*cap = 0;
		return -1;
	}
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
	struct item it = { OP_PLEDGE, ZSTD_e_continue, NULL, 0, 0, size, 0 };

	if (q->want)
		start(q);
	return q->nth == 0 || q->direct ? here(q, &it) : hand(q, &it, 0);
}

int
zq_raw(struct zq *q, const void *p, size_t n)
{
	struct item it = { OP_RAW, ZSTD_e_continue, (char *)p, n, n, 0, 0 };

	if (q->want)
		start(q);
	if (q->nth == 0 || q->direct)
		return here(q, &it);
	if (n > RAW_COPY)
		return hand_wait(q, &it);
	it.buf = xmalloc(n > 0 ? n : 1);
	memcpy(it.buf, p, n);
	return hand(q, &it, 1);
}

int
zq_finish(struct zq *q)
{
	if (q->nth > 0) {
		pthread_mutex_lock(&q->mu);
		if (q->job[q->tail].nit > 0 && !q->failed)
			submit(q); /* a frame not ended: what it has goes as it is */
		while (q->head != q->tail && !q->failed)
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
	size_t k;
	int i;

	if (q == NULL)
		return;
	if (q->nth > 0) {
		pthread_mutex_lock(&q->mu);
		q->stop = 1;
		pthread_cond_broadcast(&q->cv);
		pthread_mutex_unlock(&q->mu);
		for (i = 0; i < q->nth; i++)
			pthread_join(q->th[i], NULL);
		pthread_cond_destroy(&q->cv);
		pthread_mutex_destroy(&q->mu);
	}
	for (k = 0; k < JMAX; k++) {
		struct job *j = &q->job[k];
		size_t i2;

		for (i2 = 0; i2 < j->nit; i2++)
			if (!j->it[i2].borrowed)
				free(j->it[i2].buf);
		free(j->it);
		free(j->out);
	}
	ZSTD_freeCCtx(q->cctx);
	free(q->hout);
	while (q->nspare > 0)
		free(q->spare[--q->nspare]);
	free(q);
}
