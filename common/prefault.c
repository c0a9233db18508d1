/*
 * prefault: a thread faulting in large arrays' pages ahead of their
 * owner (see prefault.h).
 */
#define _GNU_SOURCE /* MADV_POPULATE_WRITE */
#include <sys/mman.h>

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prefault.h"
#include "util.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels say EINVAL */
#endif

/* a populate at a time: the owner's mremap waits for none, and a stop
 * for at most one */
#define PF_CHUNK ((size_t)4 << 20)
/* the thread starts once this much is wanted: a small input's arrays
 * are faulted in as fast by their owner */
#define PF_START ((size_t)64 << 20)
/* its stack: it calls madvise and little else */
#define PF_STACK ((size_t)64 << 10)

struct pf_slot {
	char *base;
	size_t want; /* bytes, rounded up to pages */
	size_t done;
};

struct prefault {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct pf_slot s[PF_SLOTS];
	int next; /* the slot to look at first: each in turn */
	int stop;
	int started, failed;
	int eager; /* KG_PREFAULT=always: started at the first want (tests) */
	size_t page;
};

static void *
run(void *arg)
{
	struct prefault *p = arg;

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		int i, k = -1;
		char *at;
		size_t len;

		for (i = 0; i < PF_SLOTS && k < 0; i++) {
			int j = (p->next + i) % PF_SLOTS;

			if (p->s[j].base != NULL && p->s[j].done < p->s[j].want)
				k = j;
		}
		if (k < 0) {
			pthread_cond_wait(&p->cv, &p->mu);
			continue;
		}
		p->next = (k + 1) % PF_SLOTS;
		len = p->s[k].want - p->s[k].done;
		if (len > PF_CHUNK)
			len = PF_CHUNK;
		at = p->s[k].base + p->s[k].done;
		p->s[k].done += len;
		pthread_mutex_unlock(&p->mu);
		/* a range no longer mapped (the array moved or went) fails:
		 * the owner faults in what it then touches itself */
		(void)madvise(at, len, MADV_POPULATE_WRITE);
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct prefault *
pf_new(void)
{
	const char *e = getenv("KG_PREFAULT");
	struct prefault *p;
	long page = sysconf(_SC_PAGESIZE);
	void *probe;
	int ok;

	if ((e != NULL && strcmp(e, "0") == 0) || sysconf(_SC_NPROCESSORS_ONLN) < 2 || page <= 0)
		return NULL;
	/* a kernel that populates? */
	probe = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (probe == MAP_FAILED)
		return NULL;
	ok = madvise(probe, (size_t)page, MADV_POPULATE_WRITE) == 0;
	munmap(probe, (size_t)page);
	if (!ok)
		return NULL;
	p = xcalloc(1, sizeof(*p));
	p->page = (size_t)page;
	p->eager = e != NULL && strcmp(e, "always") == 0;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	return p;
}

/* The thread, once enough is wanted (with p->mu held). */
static void
start(struct prefault *p)
{
	pthread_attr_t at;
	size_t stack = PF_STACK, total = 0;
	int i;

	for (i = 0; i < PF_SLOTS; i++)
		if (p->s[i].base != NULL)
			total += p->s[i].want - p->s[i].done;
	if (p->failed || (total < PF_START && !p->eager))
		return;
	if (stack < (size_t)PTHREAD_STACK_MIN)
		stack = (size_t)PTHREAD_STACK_MIN;
	if (pthread_attr_init(&at) != 0) {
		p->failed = 1;
		return;
	}
	pthread_attr_setstacksize(&at, stack);
	if (pthread_create(&p->th, &at, run, p) == 0)
		p->started = 1;
	else
		p->failed = 1;
	pthread_attr_destroy(&at);
}

void
pf_want(struct prefault *p, int i, void *base, size_t want)
{
	struct pf_slot *s;

	if (p == NULL || i < 0 || i >= PF_SLOTS)
		return;
	/* from the page it begins in (malloc's large blocks begin past a
	 * header), to the page it ends in */
	if (base != NULL) {
		want += (uintptr_t)base % p->page;
		base = (char *)base - (uintptr_t)base % p->page;
		want = (want + p->page - 1) / p->page * p->page;
	}
	pthread_mutex_lock(&p->mu);
	s = &p->s[i];
	if (base == NULL) {
		s->base = NULL;
		s->want = s->done = 0;
	} else {
		s->base = base;
		s->want = want;
		if (s->done > want)
			s->done = want;
		if (s->done < want && p->started)
			pthread_cond_signal(&p->cv);
		else if (s->done < want)
			start(p);
	}
	pthread_mutex_unlock(&p->mu);
}

void
pf_forget(struct prefault *p, int from)
{
	int i;

	for (i = from; i < PF_SLOTS; i++)
		pf_want(p, i, NULL, 0);
}

void
pf_free(struct prefault *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (p->started)
		pthread_join(p->th, NULL);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
