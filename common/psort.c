/*
 * psort: qsort on two CPUs (see psort.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "psort.h"
#include "util.h"

#define PSORT_MIN ((size_t)1 << 16)

struct half {
	void *base;
	size_t n, size;
	int (*cmp)(const void *, const void *);
};

static void *
sort_half(void *arg)
{
	struct half *h = arg;

	qsort(h->base, h->n, h->size, h->cmp);
	return NULL;
}

/* -1 plain, 0 by size, 1 always */
static int
mode(void)
{
	const char *e = getenv("KG_SORT_THREAD");

	if (e != NULL && strcmp(e, "0") == 0)
		return -1;
	if (e != NULL && strcmp(e, "always") == 0)
		return 1;
	return sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 0 : -1;
}

void
psort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	struct half a;
	pthread_t th;
	char *left, *x, *y, *xe, *ye, *o;
	int m = n > 1 ? mode() : -1;

	if (m < 0 || (m == 0 && n < PSORT_MIN)) {
		if (n > 1)
			qsort(base, n, size, cmp);
		return;
	}
	a.base = base, a.n = n / 2, a.size = size, a.cmp = cmp;
	if (pthread_create(&th, NULL, sort_half, &a) != 0) {
		qsort(base, n, size, cmp);
		return;
	}
	qsort((char *)base + a.n * size, n - a.n, size, cmp);
	pthread_join(th, NULL);
	/* the first half copied out, then merged with the second from the
	 * front (a place is written only once its element is taken), the
	 * first half's element first on ties: no more memory than qsort's */
	left = xmalloc(a.n * size);
	memcpy(left, base, a.n * size);
	x = left, xe = left + a.n * size;
	y = (char *)base + a.n * size, ye = (char *)base + n * size;
	o = base;
	while (x < xe && y < ye) {
		if (cmp(y, x) < 0) {
			memcpy(o, y, size);
			y += size;
		} else {
			memcpy(o, x, size);
			x += size;
		}
		o += size;
	}
	memcpy(o, x, (size_t)(xe - x)); /* what is left of the second is in place */
	free(left);
}

struct runs {
	char *base;
	size_t size;
	const size_t *start;
	size_t nrun, next;
	int (*cmp)(const void *, const void *);
	pthread_mutex_t mu;
};

static void *
sort_runs(void *arg)
{
	struct runs *r = arg;

	for (;;) {
		size_t k, n;

		pthread_mutex_lock(&r->mu);
		k = r->next++;
		pthread_mutex_unlock(&r->mu);
		if (k >= r->nrun)
			break;
		n = r->start[k + 1] - r->start[k];
		if (n > 1)
			qsort(r->base + r->start[k] * r->size, n, r->size, r->cmp);
	}
	return NULL;
}

/* The nrun runs base[start[r] .. start[r + 1]) each sorted, shared
 * between the caller and a thread. */
static void
psort_runs(void *base, size_t size, const size_t *start, size_t nrun,
    int (*cmp)(const void *, const void *))
{
	struct runs r = { base, size, start, nrun, 0, cmp, PTHREAD_MUTEX_INITIALIZER };
	size_t n = nrun > 0 ? start[nrun] - start[0] : 0;
	pthread_t th;
	int m = n > 1 ? mode() : -1, started = 0;

	if (nrun > 1 && (m > 0 || (m == 0 && n >= PSORT_MIN)))
		started = pthread_create(&th, NULL, sort_runs, &r) == 0;
	sort_runs(&r);
	if (started)
		pthread_join(th, NULL);
}

void
psort_grouped(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *),
    int64_t (*group)(const void *))
{
	const char *b = base;
	size_t *start = NULL, nrun = 0, cap = 0, i;
	int64_t g = 0, prev = 0;

	for (i = 0; i < n; i++, prev = g) {
		g = group(b + i * size);
		if (i > 0 && g < prev) {
			/* not in ascending groups: one sort of all */
			free(start);
			psort(base, n, size, cmp);
			return;
		}
		if (i == 0 || g != prev)
			VEC_PUSH(start, nrun, cap, i);
	}
	VEC_PUSH(start, nrun, cap, n);
	psort_runs(base, size, start, nrun - 1, cmp);
	free(start);
}
