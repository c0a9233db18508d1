/*
 * read: graph-deps --merge's first pass (see merge.c's "Two passes").
 *
 * Every input is read on a reader thread of its own (at most READERS):
 * each section's header, strings, processors and collectives are kept
 * in the section's own ids, its tasks and edges only counted, and its
 * zstd frames held as they came (compressed anew where they do not
 * begin and end with it). The inputs are then taken into the job in
 * input order (take_input), strings interned anew, so that the job is
 * the same whichever thread read what. A rank twice, or an input that
 * cannot be read, stops the merge with its message; nothing here is
 * matched or written.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "cli.h"
#include "intern.h"
#include "kg.h"
#include "merge.h"
#include "util.h"

static size_t
i64map_slot(const struct i64map *m, int64_t k)
{
	size_t i = (size_t)(((uint64_t)k * 0x9e3779b97f4a7c15ull) >> 32) & (m->cap - 1);

	while (m->val[i] != KG_NONE && m->key[i] != k)
		i = (i + 1) & (m->cap - 1);
	return i;
}

/* The value of k, or KG_NONE after adding it with value v. */
static uint32_t
i64map_add(struct i64map *m, int64_t k, uint32_t v)
{
	size_t i;

	if (2 * (m->n + 1) > m->cap) {
		struct i64map g = { NULL, NULL, m->cap ? 2 * m->cap : 64, 0 };

		g.key = xmalloc(g.cap * sizeof(*g.key));
		g.val = xmalloc(g.cap * sizeof(*g.val));
		for (i = 0; i < g.cap; i++)
			g.val[i] = KG_NONE;
		for (i = 0; i < m->cap; i++)
			if (m->val[i] != KG_NONE) {
				size_t q = i64map_slot(&g, m->key[i]);

				g.key[q] = m->key[i], g.val[q] = m->val[i];
			}
		g.n = m->n;
		free(m->key), free(m->val);
		*m = g;
	}
	i = i64map_slot(m, k);
	if (m->val[i] != KG_NONE)
		return m->val[i];
	m->key[i] = k, m->val[i] = v, m->n++;
	return KG_NONE;
}

void
i64map_release(struct i64map *m)
{
	free(m->key), free(m->val);
	memset(m, 0, sizeof(*m));
}

/*
 * The first pass over one input, made on a reader thread: its sections
 * with their strings, processors and collectives in its own ids, taken
 * into the job in input order afterwards (take_input), so that the job
 * is the same whichever thread read what.
 */
struct sec {
	struct rank r;            /* rank -1 if the header has none; smap unset */
	char **str;               /* its strings, by its id */
	size_t nstr, capstr;
	struct kg_proc *proc;     /* name: its string id */
	size_t nproc, capproc;
	struct coll *col;         /* pg, pgr: its string ids; proc: its own; rk unset */
	size_t ncol, capcol;
	int64_t *iters;
	size_t niters;
	char **tools;
	size_t ntools;
};

struct input {
	const char *path, *name;
	struct sec *sec;
	size_t nsec, capsec;
	struct kg_cov cov;
	char *err;                /* what stopped the read, told in turn; NULL */
};

/* Append n bytes to rank rk's held section. */
static void
hold(struct rank *rk, const void *p, size_t n)
{
	grow(&rk->z, &rk->capz, rk->nz + n, 1);
	memcpy(rk->z + rk->nz, p, n);
	rk->nz += n;
}

/* Compress n bytes as one frame onto rank rk's held section; -1 if zstd fails. */
static int
hold_raw(ZSTD_CCtx **cctx, struct rank *rk, const char *p, size_t n)
{
	size_t bound = ZSTD_compressBound(n), r;

	if (*cctx == NULL) {
		*cctx = ZSTD_createCCtx();
		if (*cctx == NULL)
			return -1;
		ZSTD_CCtx_setParameter(*cctx, ZSTD_c_compressionLevel, KG_LEVEL);
		ZSTD_CCtx_setParameter(*cctx, ZSTD_c_checksumFlag, 1);
	}
	grow(&rk->z, &rk->capz, rk->nz + bound, 1);
	r = ZSTD_compress2(*cctx, rk->z + rk->nz, bound, p, n);
	if (ZSTD_isError(r))
		return -1;
	rk->nz += r;
	return 0;
}

static void
fail(struct input *in, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The message that stops the read of in (the first one). */
static void
fail(struct input *in, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (in->err == NULL)
		in->err = xstrndup(buf, strlen(buf));
}

/*
 * Read every section of one input (the first pass; on a reader thread:
 * it touches nothing but in and *cctx). Each section's frames are held
 * from its header to its end record: taken as they end at record
 * boundaries when a frame begins at the header (`frames`); else, and
 * for what is left after the last such frame, the section's
 * decompressed bytes, compressed anew.
 */
static void
read_one(struct input *in, ZSTD_CCtx **cctx)
{
	FILE *fp;
	struct kg_reader r;
	struct kg_rec rec;
	struct sec *sc = NULL;
	struct rank *rk = NULL;
	uint64_t zmark = 0; /* where the frames taken so far end */
	int t, frames = 0, isstdin = in->path == NULL || strcmp(in->path, "-") == 0;
	size_t i, n;
	const void *z;
	const char *p;

	fp = isstdin ? stdin : fopen(in->path, "rb");
	if (fp == NULL) {
		fail(in, "%s: %s", in->path, strerror(errno));
		return;
	}
	if (kg_reader_init(&r, fp) < 0) {
		fail(in, "%s: %s", in->name, r.err);
		if (!isstdin)
			fclose(fp);
		return;
	}
	r.keep_frames = 1;
	r.no_ahead = 1; /* the inputs are read on threads already */
	kg_rec_init(&rec);
	while ((t = kg_read(&r, &rec)) > 0) {
		uint64_t pos = rec.pos;

		if (t == KG_R_HEADER) {
			/* what came before goes */
			if (kg_reader_take_frames(&r, pos, &z) > 0)
				zmark = pos;
			frames = zmark == pos;
			if (!frames)
				kg_reader_take_held(&r, pos, &p);
		} else if (rk != NULL && frames && (n = kg_reader_take_frames(&r, pos, &z)) > 0) {
			hold(rk, z, n);
			zmark = pos;
		}
		switch (t) {
		case KG_R_HEADER: {
			const struct kg_header *h = &rec.header;

			if (h->nranks > 0) {
				fail(in, "%s: section %zu is a job section already (from graph-deps --merge)",
				    in->name, in->nsec);
				goto out;
			}
			grow(&in->sec, &in->capsec, in->nsec + 1, sizeof(*in->sec));
			sc = &in->sec[in->nsec++];
			memset(sc, 0, sizeof(*sc));
			rk = &sc->r;
			rk->rank = h->rank;
			rk->world = h->world;
			rk->tbase = h->tbase;
			rk->gpu_mem = h->gpu_mem;
			rk->gpu_sms = h->gpu_sms;
			rk->pcal = h->pcal == NULL || h->pcal[0] == '\0' ? 0 :
			    strcmp(h->pcal, "given") == 0 ? 1 : strcmp(h->pcal, "estimated") == 0 ? 2 : 3;
			rk->pcost = h->pcost;
			rk->ustep = h->ustep;
			rk->tsmin = INT64_MAX;
			rk->file = isstdin ? "-" : in->path;
			rk->section = (int)in->nsec - 1;
			rk->gpu = h->gpu != NULL ? xstrndup(h->gpu, strlen(h->gpu)) : xstrndup("", 0);
			sc->iters = xmalloc((h->niters + 1) * sizeof(*sc->iters));
			if (h->niters > 0)
				memcpy(sc->iters, h->iters, h->niters * sizeof(*sc->iters));
			sc->niters = h->niters;
			sc->tools = xmalloc((h->ntools + 1) * sizeof(*sc->tools));
			for (i = 0; i < h->ntools; i++)
				sc->tools[i] = xstrndup(h->tools[i], strlen(h->tools[i]));
			sc->ntools = h->ntools;
			break;
		}
		case KG_R_STR: {
			const char *str = kg_str(&r, rec.str_id);
			char *c = xstrndup(str, strlen(str));

			VEC_PUSH(sc->str, sc->nstr, sc->capstr, c);
			break;
		}
		case KG_R_PROC:
			VEC_PUSH(sc->proc, sc->nproc, sc->capproc, rec.proc);
			rk->nproc++;
			break;
		case KG_R_TASK: {
			const struct kg_task *k = &rec.task;

			if (k->ts < rk->tsmin)
				rk->tsmin = k->ts;
			if (k->kind == KG_COLL) {
				struct coll c;

				c.task = (uint32_t)rk->ntask;
				c.rk = 0;
				c.proc = k->proc;
				c.type = k->coll;
				c.pg = k->pg;
				c.pgr = k->pgr;
				c.ts = k->ts;
				c.odur = k->odur;
				c.gsize = k->gsize;
				c.seq = k->seq;
				c.dur = -1;
				VEC_PUSH(sc->col, sc->ncol, sc->capcol, c);
			}
			rk->ntask++;
			break;
		}
		case KG_R_EDGE: /* its ends are known tasks: the reader refuses others */
			rk->nedge++;
			break;
		case KG_R_COV:
			for (i = 0; i < rec.cov.n; i++)
				kg_cov_add(&in->cov, rec.cov.name[i], rec.cov.val[i]);
			break;
		case KG_R_END: {
			uint64_t end = pos + rec.nbytes;

			if (frames && (n = kg_reader_take_frames(&r, end, &z)) > 0) {
				hold(rk, z, n);
				zmark = end;
			}
			if ((n = kg_reader_take_held(&r, end, &p)) > 0 && hold_raw(cctx, rk, p, n) < 0) {
				fail(in, "%s: section %zu: cannot compress it to hold", in->name,
				    in->nsec - 1);
				goto out;
			}
			break;
		}
		}
	}
	if (t < 0)
		fail(in, "%s: %s", in->name, r.err);
out:
	kg_rec_release(&rec);
	kg_reader_release(&r);
	if (!isstdin)
		fclose(fp);
}

/* Free what the first pass made of an input and the job did not take. */
static void
input_release(struct input *in)
{
	size_t i, k;

	for (i = 0; i < in->nsec; i++) {
		struct sec *sc = &in->sec[i];

		for (k = 0; k < sc->nstr; k++)
			free(sc->str[k]);
		free(sc->str);
		free(sc->proc);
		free(sc->col);
		free(sc->iters);
		for (k = 0; k < sc->ntools; k++)
			free(sc->tools[k]);
		free(sc->tools);
		free(sc->r.gpu);
		free(sc->r.z);
		free(sc->r.smap);
	}
	free(in->sec);
	kg_cov_release(&in->cov);
	free(in->err);
	memset(in, 0, sizeof(*in));
}

/*
 * Take an input's sections into the job, in order (strings are the
 * job's in the order first seen); 1 after telling what stops the merge.
 */
static int
take_input(struct job *j, struct input *in)
{
	size_t s, i;

	for (s = 0; s < in->nsec; s++) {
		struct sec *sc = &in->sec[s];
		struct rank *rk;

		if (sc->r.rank < 0)
			sc->r.rank = (int64_t)j->nrk;
		if ((i = i64map_add(&j->rkmap, sc->r.rank, (uint32_t)j->nrk)) != KG_NONE) {
			errmsg("%s: section %zu: rank %lld is in the input twice (first in %s)",
			    in->name, s, (long long)sc->r.rank, j->rk[i].file);
			return 1;
		}
		VEC_PUSH(j->rk, j->nrk, j->caprk, sc->r);
		memset(&sc->r, 0, sizeof(sc->r)); /* the job's now */
		rk = &j->rk[j->nrk - 1];
		rk->proc0 = j->nproc;
		rk->col0 = j->ncol;
		rk->ncol = sc->ncol;
		rk->smap = xmalloc((sc->nstr + 1) * sizeof(*rk->smap));
		rk->nsmap = sc->nstr;
		for (i = 0; i < sc->nstr; i++)
			rk->smap[i] = intern_get(&j->str, sc->str[i], strlen(sc->str[i]));
		for (i = 0; i < sc->nproc; i++) {
			struct kg_proc q = sc->proc[i];

			q.name = remap(rk->smap, rk->nsmap, q.name);
			q.rank = rk->rank;
			VEC_PUSH(j->proc, j->nproc, j->capproc, q);
		}
		for (i = 0; i < sc->ncol; i++) {
			struct coll c = sc->col[i];

			c.rk = (uint32_t)(j->nrk - 1);
			c.proc += (uint32_t)rk->proc0;
			c.pg = remap(rk->smap, rk->nsmap, c.pg);
			c.pgr = remap(rk->smap, rk->nsmap, c.pgr);
			VEC_PUSH(j->col, j->ncol, j->capcol, c);
		}
		for (i = 0; i < sc->niters; i++)
			if (i64map_add(&j->itmap, sc->iters[i], 0) == KG_NONE)
				VEC_PUSH(j->iters, j->niters, j->capiters, sc->iters[i]);
		if (j->tools == NULL && sc->ntools > 0) {
			j->tools = sc->tools;
			j->ntools = sc->ntools;
			sc->tools = NULL;
			sc->ntools = 0;
		}
	}
	for (i = 0; i < in->cov.n; i++)
		kg_cov_add(&j->cov, in->cov.name[i], in->cov.val[i]);
	if (in->err != NULL) {
		errmsg("%s", in->err);
		return 1;
	}
	return 0;
}

/* Reader threads: each reads the next input not taken. */
struct readers {
	struct input *in;
	size_t n, next;
	pthread_mutex_t mu;
};

static void *
reader(void *arg)
{
	struct readers *rd = arg;
	ZSTD_CCtx *cctx = NULL;

	for (;;) {
		size_t k;

		pthread_mutex_lock(&rd->mu);
		k = rd->next++;
		pthread_mutex_unlock(&rd->mu);
		if (k >= rd->n)
			break;
		read_one(&rd->in[k], &cctx);
	}
	ZSTD_freeCCtx(cctx);
	return NULL;
}

/*
 * The first pass over every input, on as many threads as there are
 * CPUs (at most READERS, and one an input).
 */
#define READERS 8
static void
read_all(struct input *in, size_t n)
{
	struct readers rd = { in, n, 0, PTHREAD_MUTEX_INITIALIZER };
	pthread_t th[READERS];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nt = cpus > 1 ? (size_t)cpus : 1, started = 0, i;

	if (nt > READERS)
		nt = READERS;
	if (nt > n)
		nt = n;
	for (i = 1; i < nt; i++)
		if (pthread_create(&th[started], NULL, reader, &rd) == 0)
			started++;
	reader(&rd);
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}

/*
 * The first pass over every input (paths[0..n); none: stdin), taken
 * into j in input order; 1 after telling what stops the merge.
 */
int
read_inputs(struct job *j, char **paths, int n)
{
	size_t i, nin;
	struct input *in;
	int rc = 0;

	nin = n > 0 ? (size_t)n : 1;
	in = xcalloc(nin, sizeof(*in));
	for (i = 0; i < nin; i++) {
		in[i].path = n > 0 ? paths[i] : NULL;
		in[i].name = input_name(in[i].path);
		kg_cov_init(&in[i].cov);
	}
	read_all(in, nin);
	for (i = 0; i < nin && rc == 0; i++)
		rc = take_input(j, &in[i]);
	for (i = 0; i < nin; i++)
		input_release(&in[i]);
	free(in);
	return rc;
}
