/*
 * ahead: the trace's bytes read ahead (see ahead.h). Chunks go through
 * a queue of QMAX; the ones the parser is done with come back.
 */
#include "ahead.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define QMAX 4

struct chunk {
	unsigned char *buf;
	size_t n;
	int rc;
	char err[256];
};

struct ahead {
	ahead_fn fn;
	void *arg;
	size_t size;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a chunk queued or taken, or stop */
	struct chunk q[QMAX];
	size_t head, n;
	unsigned char *spare[QMAX + 2];
	size_t nspare;
	int stop, over;
};

static void *
run(void *arg)
{
	struct ahead *a = arg;
	uint64_t off = 0;

	for (;;) {
		struct chunk c;

		memset(&c, 0, sizeof(c));
		pthread_mutex_lock(&a->mu);
		c.buf = a->nspare > 0 ? a->spare[--a->nspare] : NULL;
		pthread_mutex_unlock(&a->mu);
		if (c.buf == NULL)
			c.buf = xmalloc(a->size);
		c.rc = a->fn(a->arg, c.buf, a->size, &c.n, off, c.err, sizeof(c.err));
		off += c.n;
		pthread_mutex_lock(&a->mu);
		while (a->n == QMAX && !a->stop)
			pthread_cond_wait(&a->cv, &a->mu);
		if (a->stop) {
			pthread_mutex_unlock(&a->mu);
			free(c.buf);
			break;
		}
		a->q[(a->head + a->n) % QMAX] = c;
		a->n++;
		pthread_cond_broadcast(&a->cv);
		pthread_mutex_unlock(&a->mu);
		if (c.rc < 0 || c.n == 0)
			break;
	}
	return NULL;
}

struct ahead *
ahead_new(FILE *fp, ahead_fn fn, void *arg, size_t chunk)
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
	a->size = chunk;
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
ahead_next(struct ahead *a, unsigned char **buf, size_t *n, char *err, size_t errlen)
{
	struct chunk c;

	if (a->over) {
		*n = 0;
		return 0;
	}
	pthread_mutex_lock(&a->mu);
	while (a->n == 0)
		pthread_cond_wait(&a->cv, &a->mu);
	c = a->q[a->head];
	a->head = (a->head + 1) % QMAX;
	a->n--;
	if (a->nspare < QMAX + 2)
		a->spare[a->nspare++] = *buf;
	else
		free(*buf);
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	*buf = c.buf;
	*n = c.n;
	if (c.rc < 0 || c.n == 0)
		a->over = 1;
	if (c.rc < 0)
		snprintf(err, errlen, "%s", c.err);
	return c.rc;
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
		a->head = (a->head + 1) % QMAX;
		a->n--;
	}
	while (a->nspare > 0)
		free(a->spare[--a->nspare]);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a);
}
