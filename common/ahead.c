/*
 * ahead: an input read ahead (see ahead.h). Pieces go through a queue
 * of QMAX, or fewer where they are large (QBYTES at most in it, two
 * pieces at least); the buffers of those used come back as spares.
 */
#include "ahead.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define QMAX 4
#define QBYTES ((size_t)4 << 20)

struct ahead {
	ahead_fn fn;
	void *arg;
	size_t cap;
	size_t depth;      /* pieces queued at most: QMAX, or fewer (QBYTES) */
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a piece queued or taken, or stop */
	struct ahead_piece q[QMAX];
	size_t head, n;
	unsigned char *spare[QMAX + 2];
	size_t nspare;
	int stop;
	struct ahead_piece last; /* the end or error, once taken */
	int over;
};

static void *
run(void *arg)
{
	struct ahead *a = arg;

	for (;;) {
		struct ahead_piece p;

		memset(&p, 0, sizeof(p));
		pthread_mutex_lock(&a->mu);
		p.buf = a->nspare > 0 ? a->spare[--a->nspare] : NULL;
		pthread_mutex_unlock(&a->mu);
		if (p.buf == NULL)
			p.buf = xmalloc(a->cap);
		a->fn(a->arg, &p, a->cap);
		if (p.rc <= 0) {
			/* the end or an error: nothing of its own to hand */
			free(p.buf);
			free(p.extra);
			p.buf = NULL;
			p.extra = NULL;
			p.n = p.nextra = 0;
		}
		pthread_mutex_lock(&a->mu);
		while (a->n == a->depth && !a->stop)
			pthread_cond_wait(&a->cv, &a->mu);
		if (a->stop) {
			pthread_mutex_unlock(&a->mu);
			free(p.buf);
			free(p.extra);
			break;
		}
		a->q[(a->head + a->n) % QMAX] = p;
		a->n++;
		pthread_cond_broadcast(&a->cv);
		pthread_mutex_unlock(&a->mu);
		if (p.rc <= 0)
			break;
	}
	return NULL;
}

struct ahead *
ahead_new(FILE *fp, ahead_fn fn, void *arg, size_t cap)
{
	const char *e = getenv("KG_READER_THREAD");
	struct stat st;
	struct ahead *a;
	int fd = fileno(fp);

	if ((e != NULL && strcmp(e, "0") == 0) || sysconf(_SC_NPROCESSORS_ONLN) < 2 || fd < 0 ||
	    fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return NULL;
	a = xcalloc(1, sizeof(*a));
	a->fn = fn;
	a->arg = arg;
	a->cap = cap;
	a->depth = QBYTES / cap < 2 ? 2 : QBYTES / cap > QMAX ? QMAX : QBYTES / cap;
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	if (pthread_create(&a->th, NULL, run, a) != 0) {
		pthread_cond_destroy(&a->cv);
		pthread_mutex_destroy(&a->mu);
		free(a);
		return NULL;
	}
	return a;
}

int
ahead_next(struct ahead *a, struct ahead_piece *p)
{
	if (a->over) {
		*p = a->last;
		return p->rc;
	}
	pthread_mutex_lock(&a->mu);
	while (a->n == 0)
		pthread_cond_wait(&a->cv, &a->mu);
	*p = a->q[a->head];
	a->head = (a->head + 1) % QMAX;
	a->n--;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	if (p->rc <= 0) {
		a->last = *p;
		a->over = 1;
	}
	return p->rc;
}

void
ahead_done(struct ahead *a, struct ahead_piece *p)
{
	free(p->extra);
	pthread_mutex_lock(&a->mu);
	if (p->buf != NULL && a->nspare < a->depth + 2)
		a->spare[a->nspare++] = p->buf;
	else
		free(p->buf);
	pthread_mutex_unlock(&a->mu);
	p->buf = NULL;
	p->extra = NULL;
}

void
ahead_free(struct ahead *a)
{
	if (a == NULL)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = 1;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->th, NULL);
	while (a->n > 0) {
		free(a->q[a->head].buf);
		free(a->q[a->head].extra);
		a->head = (a->head + 1) % QMAX;
		a->n--;
	}
	while (a->nspare > 0)
		free(a->spare[--a->nspare]);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a);
}
