/*
 * merge: one job section from the sections of every rank.
 *
 * Each input section is one rank's graph (kineto2graph writes one per
 * trace). The job section holds all of them: strings interned anew,
 * processors tagged with their rank, ids moved up by the ranks before
 * them (ranks in ascending order), and `rank` edges joining the kernels
 * of each collective across its participants.
 *
 * Matching. A collective (a `coll` task) belongs to a group:
 *   - the process-group ranks the trace records (`pgr`, "[0, 1]");
 *   - else the process-group name (`pg`): the ranks that use it;
 *   - else its group size (`gs`, else the world size), its stream (the
 *     CUDA stream id: one communicator's kernels share one) and its type,
 *     when exactly that many ranks have such collectives.
 * Within a group, the k-th collective of each participant (in order of
 * start; in order of sequence number when every one has one, matching
 * equal numbers) is one instance. An instance matches when it has one
 * collective on each participant, all of one type (or, for two
 * participants, a send and a receive). Everything else is counted
 * unmatched, per rank, and keeps its traced duration.
 *
 * Transfer time. A participant's kernel lasts from when its rank reached
 * the collective to the common end, so the one that started last waited
 * least: the instance's transfer time is the shortest of its kernels'
 * durations. Every participant's `d` becomes it (`od` keeps the traced
 * duration); graphsim starts each when its rank gets there and ends all
 * at the last arrival plus `d`.
 *
 * Clocks. All participants end an instance together. With e(c,r) the
 * traced end of instance c on rank r and o(r) rank r's clock offset,
 * e(c,r) - o(r) is the same on every r, so for two ranks a and b that
 * share instances o(b) - o(a) is the median of e(c,b) - e(c,a); offsets
 * follow along a spanning tree of those pairs (the pairs with the most
 * instances first) from the lowest rank, 0. The job's `ts` are corrected
 * by o(r), which the header keeps (`clk`).
 *
 * Two passes. The first reads every input: its strings, processors,
 * collectives and counts are kept, and each section's zstd frames as
 * they came (a section whose frames do not begin and end with it, which
 * kgraph's writers never make, is compressed anew). The second reads
 * those frames again, rank by rank, and writes each task as it comes;
 * the edges go to a second stream in memory, passed on after the last
 * task (a record refers only to ids before it). State: the job
 * compressed, about 25 bytes a task, where holding it decoded took 176
 * bytes a task and 40 an edge (measured when this was chosen: git log).
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

#define PRODUCER "graph-deps " KG_VERSION

struct rank {
	int64_t rank, world, tbase, clk;
	char *gpu;               /* the header's (1.5), owned; "" if unknown */
	int64_t gpu_mem, gpu_sms;
	int pcal;                /* the profiler's cost (1.8): 0 none, 1 given,
	                            2 estimated, 3 calibrated */
	int64_t pcost, ustep;
	int64_t tsmin;           /* its tasks' first ts, INT64_MAX if none */
	size_t ntask, proc0, nproc, nedge, col0, ncol;
	size_t newtask0, newproc0;
	uint64_t colls, matched;
	uint32_t *smap;          /* its string ids -> the job's */
	size_t nsmap;
	char *z;                 /* the section, zstd frames from header to end */
	size_t nz, capz;
	const char *file;
	int section;
};

/* A collective, as the first pass keeps it for matching. */
struct coll {
	uint32_t task;           /* its id in its rank's section */
	uint32_t rk, proc;       /* rank index; the job's processor */
	int type;                /* enum kg_coll */
	uint32_t pg, pgr;        /* the job's string ids */
	int64_t ts, odur, gsize, seq;
	int64_t dur;             /* the transfer time once matched, else -1 */
};

/* A rank edge, between collectives (job.col indices). */
struct redge {
	uint32_t src, dst;
	int how;
};

/*
 * A set of int64 keys, each with a value: open addressing, at most half
 * full, so that taking n sections costs n lookups, not n^2 comparisons.
 */
struct i64map {
	int64_t *key;
	uint32_t *val; /* KG_NONE: an empty slot */
	size_t cap, n; /* cap: a power of two, or 0 */
};

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

static void
i64map_release(struct i64map *m)
{
	free(m->key), free(m->val);
	memset(m, 0, sizeof(*m));
}

struct job {
	struct intern str;
	struct i64map rkmap, itmap; /* the ranks (to their index) and iterations taken */
	struct rank *rk;
	size_t nrk, caprk;
	struct kg_proc *proc;
	size_t nproc, capproc;
	struct coll *col;
	size_t ncol, capcol;
	int64_t *iters;
	size_t niters, capiters;
	char **tools;
	size_t ntools;
	struct kg_cov cov;
	struct redge *re;
	size_t nre, capre;
};

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

/* A collective to match. */
struct centry {
	uint32_t key;   /* group, an id in the keys table */
	uint32_t col;   /* index in job.col */
	uint32_t rk;    /* index in job.rk */
	int64_t inst;   /* sequence number or position in its group */
	int64_t ts;
};

static int
p2p(int c)
{
	return c == KG_COLL_SEND || c == KG_COLL_RECV;
}

static uint32_t
remap(const uint32_t *smap, size_t n, uint32_t id)
{
	return id == KG_NONE || id >= n ? KG_NONE : smap[id];
}

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

static int
cmp_entry(const void *a, const void *b)
{
	const struct centry *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->rk != y->rk)
		return x->rk < y->rk ? -1 : 1;
	if (x->inst != y->inst)
		return x->inst < y->inst ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->col < y->col ? -1 : x->col > y->col;
}

static const struct job *sortj;

/* By group, instance, then rank (so the first participant is the lowest). */
static int
cmp_inst(const void *a, const void *b)
{
	const struct centry *x = a, *y = b;
	int64_t p, q;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->inst != y->inst)
		return x->inst < y->inst ? -1 : 1;
	p = sortj->rk[x->rk].rank;
	q = sortj->rk[y->rk].rank;
	return p < q ? -1 : p > q;
}

/* Ranks named in a process-group ranks text ("[0, 1, 2]"), as rank indices. */
static size_t
parse_ranks(const struct job *j, const char *s, uint32_t *out, size_t max, int *bad)
{
	size_t n = 0, i;

	long long v;

	*bad = 0;
	while (next_number(&s, &v)) {
		for (i = 0; i < j->nrk && j->rk[i].rank != v; i++)
			;
		if (i == j->nrk || n == max) {
			*bad = 1;
			continue;
		}
		out[n++] = (uint32_t)i;
	}
	return n;
}

/*
 * Match the collectives; fill in rank edges, transfer times and counts.
 * Returns the matched instances' (rank index, traced end) pairs for the
 * clock estimate through *ends (grouped by instance, starts in *istart).
 */
static void
match(struct job *j, int64_t **endsp, uint32_t **erkp, size_t **istartp, size_t *ninstp)
{
	struct intern keys;
	struct centry *ce = NULL;
	size_t nce = 0, cap = 0, i, a, b;
	int64_t *ends = NULL;
	uint32_t *erk = NULL, *part = xmalloc((j->nrk + 1) * sizeof(*part));
	size_t nends = 0, capends = 0, caperk = 0, *istart = NULL, ninst = 0, capist = 0;
	uint8_t *seqmode;

	intern_init(&keys);
	for (i = 0; i < j->ncol; i++) {
		const struct coll *k = &j->col[i];
		struct rank *rk = &j->rk[k->rk];
		struct centry e;
		char buf[64];
		const char *kt;

		rk->colls++;
		if (k->pgr != KG_NONE || k->pg != KG_NONE) {
			/* "r:" and the ranks text, or "p:" and the name */
			int byranks = k->pgr != KG_NONE;
			size_t len;
			char *s;

			kt = j->str.str[byranks ? k->pgr : k->pg];
			len = strlen(kt);
			s = xmalloc(len + 3);
			memcpy(s, byranks ? "r:" : "p:", 2);
			memcpy(s + 2, kt, len + 1);
			e.key = intern_get(&keys, s, len + 2);
			free(s);
		} else {
			/* no metadata: size, stream and type (send and
			 * receive as one, to pair them) */
			int64_t size = k->gsize > 0 ? k->gsize : rk->world;

			e.key = intern_get(&keys, buf, (size_t)snprintf(buf, sizeof(buf),
			    "s:%lld:%lld:%d", (long long)size, (long long)j->proc[k->proc].tid,
			    p2p(k->type) ? KG_COLL_SEND : k->type));
		}
		e.col = (uint32_t)i;
		e.rk = k->rk;
		e.inst = k->seq;
		e.ts = k->ts;
		VEC_PUSH(ce, nce, cap, e);
	}
	/* Sequence numbers where every collective of a group has one, else
	 * the position on each rank in start order. */
	seqmode = xcalloc(keys.n + 1, 1);
	for (i = 0; i < keys.n; i++)
		seqmode[i] = 1;
	for (i = 0; i < nce; i++)
		if (ce[i].inst < 0)
			seqmode[ce[i].key] = 0;
	for (i = 0; i < nce; i++)
		if (!seqmode[ce[i].key])
			ce[i].inst = -1;
	if (nce > 0)
		qsort(ce, nce, sizeof(*ce), cmp_entry);
	for (a = 0; a < nce; a = b) {
		int64_t pos = 0;

		for (b = a; b < nce && ce[b].key == ce[a].key && ce[b].rk == ce[a].rk; b++)
			if (!seqmode[ce[b].key])
				ce[b].inst = pos++;
	}
	sortj = j;
	if (nce > 0)
		qsort(ce, nce, sizeof(*ce), cmp_inst);
	/* One pass per group: its participants, then its instances. */
	for (a = 0; a < nce; a = b) {
		const char *key = keys.str[ce[a].key];
		size_t np = 0, c, d, k;
		int bad = 0;

		for (b = a; b < nce && ce[b].key == ce[a].key; b++)
			;
		if (key[0] == 'r') {
			np = parse_ranks(j, key + 2, part, j->nrk, &bad);
		} else {
			/* the ranks that use the group */
			for (c = a; c < b; c++) {
				for (k = 0; k < np && part[k] != ce[c].rk; k++)
					;
				if (k == np)
					part[np++] = ce[c].rk;
			}
			if (key[0] == 's' && (int64_t)np != strtoll(key + 2, NULL, 10))
				bad = 1;
		}
		if (bad || np < 2)
			continue;
		for (c = a; c < b; c = d) {
			int type = j->col[ce[c].col].type, ok = 1;

			for (d = c; d < b && ce[d].inst == ce[c].inst; d++)
				;
			if (d - c != np)
				continue;
			for (k = c; k < d; k++) {
				int tk = j->col[ce[k].col].type;
				size_t q;

				for (q = 0; q < np && part[q] != ce[k].rk; q++)
					;
				if (q == np || (k > c && ce[k].rk == ce[k - 1].rk))
					ok = 0;
				/* one type, or a send and a receive between two */
				if (p2p(type) ? !(np == 2 && d - c == 2 && p2p(tk) && (k == c) == (tk == type)) :
				    tk != type)
					ok = 0;
			}
			if (!ok)
				continue;
			/* a match: transfer time, rank edges, ends */
			{
				int64_t tmin = INT64_MAX;

				for (k = c; k < d; k++)
					if (j->col[ce[k].col].odur < tmin)
						tmin = j->col[ce[k].col].odur;
				VEC_PUSH(istart, ninst, capist, nends);
				for (k = c; k < d; k++) {
					struct coll *t = &j->col[ce[k].col];
					struct rank *rk = &j->rk[ce[k].rk];

					VEC_PUSH(ends, nends, capends, rk->tbase + t->ts + t->odur);
					grow(&erk, &caperk, nends, sizeof(*erk));
					erk[nends - 1] = ce[k].rk;
					t->dur = tmin;
					rk->matched++;
					if (k > c) {
						struct redge re = { ce[c].col, ce[k].col,
						    seqmode[ce[c].key] ? KG_HOW_TRACE : KG_HOW_INFERRED };

						VEC_PUSH(j->re, j->nre, j->capre, re);
					}
				}
			}
		}
	}
	VEC_PUSH(istart, ninst, capist, nends);
	free(seqmode);
	free(part);
	free(ce);
	intern_release(&keys);
	*endsp = ends;
	*erkp = erk;
	*istartp = istart;
	*ninstp = ninst - 1;
}

/* Two ranks' traced ends of one collective: b's less a's. */
struct pdiff {
	uint32_t a, b;
	int64_t d;
};

static int
cmp_pdiff(const void *x, const void *y)
{
	const struct pdiff *p = x, *q = y;

	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	if (p->b != q->b)
		return p->b < q->b ? -1 : 1;
	return p->d < q->d ? -1 : p->d > q->d;
}

/* A pair of ranks with the median of their differences, and how many. */
struct pair {
	uint32_t a, b;
	int64_t d;
	size_t n;
};

static int
cmp_pair_n(const void *x, const void *y)
{
	const struct pair *p = x, *q = y;

	if (p->n != q->n)
		return p->n > q->n ? -1 : 1;
	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	return p->b < q->b ? -1 : p->b > q->b;
}

/*
 * Clock offsets from the instances' ends (see the top of the file): for
 * every two ranks that share collectives, the median of b's end less a's
 * is o(b) - o(a); the pairs that share the most collectives, as many as
 * join the ranks (a spanning tree, largest counts first), give each
 * rank's offset from the lowest rank of its part of the job.
 */
static int
clocks(struct job *j, const int64_t *ends, const uint32_t *erk, const size_t *istart, size_t ninst)
{
	struct pdiff *pd = NULL;
	struct pair *pr = NULL;
	size_t npd = 0, cappd = 0, npr = 0, cappr = 0, c, k, i, a, b;
	uint32_t *up = xmalloc((j->nrk + 1) * sizeof(*up)), *lo;
	uint8_t *done = xcalloc(j->nrk + 1, 1);
	int changed, bad = 0;

	for (i = 0; i < j->nrk; i++)
		j->rk[i].clk = 0, up[i] = (uint32_t)i;
	for (c = 0; c < ninst; c++)
		for (k = istart[c] + 1; k < istart[c + 1]; k++) {
			struct pdiff x = { erk[istart[c]], erk[k], ends[k] - ends[istart[c]] };

			VEC_PUSH(pd, npd, cappd, x);
		}
	if (npd > 1)
		qsort(pd, npd, sizeof(*pd), cmp_pdiff);
	for (a = 0; a < npd; a = b) {
		struct pair x;

		for (b = a; b < npd && pd[b].a == pd[a].a && pd[b].b == pd[a].b; b++)
			;
		x.a = pd[a].a;
		x.b = pd[a].b;
		x.n = b - a;
		x.d = x.n % 2 ? pd[a + x.n / 2].d :
		    pd[a + x.n / 2 - 1].d + (pd[a + x.n / 2].d - pd[a + x.n / 2 - 1].d) / 2;
		VEC_PUSH(pr, npr, cappr, x);
	}
	if (npr > 1)
		qsort(pr, npr, sizeof(*pr), cmp_pair_n);
	/* keep the tree's pairs: union by the lower rank index */
	for (i = 0, k = 0; i < npr; i++) {
		if (uf_find(up, pr[i].a) == uf_find(up, pr[i].b))
			continue;
		uf_union(up, pr[i].a, pr[i].b);
		pr[k++] = pr[i];
	}
	npr = k;
	/* each part's reference: its lowest rank */
	lo = xmalloc((j->nrk + 1) * sizeof(*lo));
	for (i = 0; i < j->nrk; i++)
		lo[i] = KG_NONE;
	for (i = 0; i < j->nrk; i++) {
		uint32_t r = uf_find(up, (uint32_t)i);

		if (lo[r] == KG_NONE || j->rk[i].rank < j->rk[lo[r]].rank)
			lo[r] = (uint32_t)i;
	}
	for (i = 0; i < j->nrk; i++)
		if (lo[i] != KG_NONE)
			done[lo[i]] = 1;
	/* spread along the tree (a few passes: it is small) */
	do {
		changed = 0;
		for (i = 0; i < npr; i++) {
			/* each offset in the range of times, so that the next
			 * sum (an offset and a difference of two ends) fits */
			if (done[pr[i].a] && !done[pr[i].b]) {
				j->rk[pr[i].b].clk = j->rk[pr[i].a].clk + pr[i].d;
				done[pr[i].b] = changed = 1;
				bad = bad || !KG_TIME_OK(j->rk[pr[i].b].clk);
			} else if (done[pr[i].b] && !done[pr[i].a]) {
				j->rk[pr[i].a].clk = j->rk[pr[i].b].clk - pr[i].d;
				done[pr[i].a] = changed = 1;
				bad = bad || !KG_TIME_OK(j->rk[pr[i].a].clk);
			}
		}
	} while (changed && !bad);
	free(pd);
	free(pr);
	free(up);
	free(lo);
	free(done);
	if (bad)
		errmsg("the ranks' clock offsets run past %lld ns (2^53 ns, the format's range of "
		    "times): not ranks of one run", (long long)KG_TIME_MAX);
	return bad ? -1 : 0;
}

static int
cmp_rank(const void *a, const void *b)
{
	const struct rank *x = *(struct rank *const *)a, *y = *(struct rank *const *)b;

	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* A collective's id in the job section. */
static uint32_t
newid(const struct job *j, uint32_t col)
{
	const struct coll *c = &j->col[col];

	return (uint32_t)(j->rk[c->rk].newtask0 + c->task);
}

/*
 * The second pass over one rank: its held section read again, its
 * tasks written to w with the job's ids, strings and clock, its edges
 * to the edge stream e. -1 with the reason in err.
 */
static int
write_rank(const struct job *j, const struct rank *rk, int64_t shift, struct kg_writer *w,
    struct kg_writer *e, char *err, size_t errlen)
{
	FILE *fp = fmemopen(rk->z, rk->nz, "rb");
	struct kg_reader r;
	struct kg_rec rec;
	/* (j->col is NULL in a job without collectives) */
	const struct coll *c = rk->ncol > 0 ? j->col + rk->col0 : NULL;
	const struct coll *cend = rk->ncol > 0 ? c + rk->ncol : NULL;
	size_t ntask = 0;
	int t, rc = -1;

	if (fp == NULL) {
		snprintf(err, errlen, "rank %lld: %s", (long long)rk->rank, strerror(errno));
		return -1;
	}
	if (kg_reader_init(&r, fp) < 0) {
		snprintf(err, errlen, "rank %lld: %s", (long long)rk->rank, r.err);
		fclose(fp);
		return -1;
	}
	r.one_section = 1;
	kg_rec_init(&rec);
	while ((t = kg_read(&r, &rec)) > 0 && t != KG_R_END) {
		if (t == KG_R_TASK) {
			struct kg_task k = rec.task;

			k.id = (uint32_t)(rk->newtask0 + ntask);
			k.proc = (uint32_t)(k.proc + rk->newproc0);
			k.name = remap(rk->smap, rk->nsmap, k.name);
			k.op = remap(rk->smap, rk->nsmap, k.op);
			k.shapes = remap(rk->smap, rk->nsmap, k.shapes);
			k.itypes = remap(rk->smap, rk->nsmap, k.itypes);
			k.pg = remap(rk->smap, rk->nsmap, k.pg);
			k.pgr = remap(rk->smap, rk->nsmap, k.pgr);
			k.dtype = remap(rk->smap, rk->nsmap, k.dtype);
			k.ts += shift;
			if (c < cend && c->task == ntask) {
				if (c->dur >= 0)
					k.dur = c->dur;
				c++;
			}
			ntask++;
			if (kg_write_task(w, &k) < 0) {
				snprintf(err, errlen, "%s", w->err);
				goto out;
			}
		} else if (t == KG_R_EDGE) {
			struct kg_edge x = rec.edge;

			x.src = (uint32_t)(rk->newtask0 + x.src);
			x.dst = (uint32_t)(rk->newtask0 + x.dst);
			if (x.via != KG_NONE)
				x.via = x.via < ntask ? (uint32_t)(x.via + rk->newtask0) : KG_NONE;
			if (x.at != KG_NONE)
				x.at = x.at < ntask ? (uint32_t)(x.at + rk->newtask0) : KG_NONE;
			if (x.on != KG_NONE)
				x.on = x.on < rk->nproc ? (uint32_t)(x.on + rk->newproc0) : KG_NONE;
			if (kg_write_edge(e, &x) < 0) {
				snprintf(err, errlen, "%s", e->err);
				goto out;
			}
		}
	}
	if (t < 0 || ntask != rk->ntask)
		snprintf(err, errlen, "rank %lld: internal error: its section read again %s",
		    (long long)rk->rank, t < 0 ? r.err : "differs");
	else
		rc = 0;
out:
	kg_rec_release(&rec);
	kg_reader_release(&r);
	fclose(fp);
	return rc;
}

static int
write_job(struct job *j, struct gout *g)
{
	struct kg_writer *w = &g->w, ew;
	struct rank **ord = xmalloc((j->nrk + 1) * sizeof(*ord));
	int64_t *ranks = xmalloc((j->nrk + 1) * sizeof(*ranks));
	int64_t *clk = xmalloc((j->nrk + 1) * sizeof(*clk));
	int64_t *t0 = xmalloc((j->nrk + 1) * sizeof(*t0)), first = INT64_MAX;
	const char **tools = xmalloc((j->ntools + 2) * sizeof(*tools));
	struct kg_header h;
	size_t i, t, e, nt = 0, np = 0, nedge = 0;
	int64_t tbase = INT64_MAX, world = -1;
	char *eb = NULL, err[512];
	size_t neb = 0;
	FILE *ef = NULL;
	int rc = -1, ewok = 0;

	err[0] = '\0';
	for (i = 0; i < j->nrk; i++) {
		ord[i] = &j->rk[i];
		if (j->rk[i].tbase < tbase)
			tbase = j->rk[i].tbase;
		if (j->rk[i].world > world)
			world = j->rk[i].world;
		if (j->rk[i].rank + 1 > world)
			world = j->rk[i].rank + 1;
	}
	qsort(ord, j->nrk, sizeof(*ord), cmp_rank);
	for (i = 0; i < j->nrk; i++) {
		ord[i]->newtask0 = nt;
		ord[i]->newproc0 = np;
		nt += ord[i]->ntask;
		np += ord[i]->nproc;
		ranks[i] = ord[i]->rank;
		clk[i] = ord[i]->clk;
	}
	/* Where each rank's graph begins on the job's clock. */
	for (i = 0; i < j->nrk; i++) {
		int64_t lo = ord[i]->tsmin;

		t0[i] = lo == INT64_MAX ? 0 : lo + ord[i]->tbase - tbase - ord[i]->clk;
		if (t0[i] < first)
			first = t0[i];
	}
	for (i = 0; i < j->nrk; i++)
		t0[i] -= first;
	if (j->niters > 1)
		qsort(j->iters, j->niters, sizeof(*j->iters), cmp_i64);
	for (i = 0; i < j->ntools; i++)
		tools[i] = j->tools[i];
	tools[j->ntools] = PRODUCER;
	memset(&h, 0, sizeof(h));
	h.producer = PRODUCER;
	h.rank = -1;
	h.world = world;
	h.source = "";
	h.iters = j->iters;
	h.niters = j->niters;
	h.tbase = tbase;
	h.tools = tools;
	h.ntools = j->ntools + 1;
	h.ranks = ranks;
	h.clk = clk;
	h.t0 = t0;
	/* the GPU, where every rank says the same */
	h.gpu = ord[0]->gpu;
	h.gpu_mem = ord[0]->gpu_mem;
	h.gpu_sms = ord[0]->gpu_sms;
	for (i = 1; i < j->nrk; i++) {
		if (strcmp(ord[i]->gpu, h.gpu) != 0)
			h.gpu = "";
		if (ord[i]->gpu_mem != h.gpu_mem)
			h.gpu_mem = -1;
		if (ord[i]->gpu_sms != h.gpu_sms)
			h.gpu_sms = -1;
	}
	/* The profiler's cost: the ranks' own ride on their tasks; the job
	 * says how it was found where every rank says the same (else the
	 * least sure of them: estimated over given over calibrated), the
	 * cost where they agree, and the step its slowest rank was
	 * calibrated to. */
	{
		static const char *const pname[] = { NULL, "given", "estimated", "calibrated" };
		int pc = ord[0]->pcal;

		h.pcost = ord[0]->pcost;
		h.ustep = ord[0]->ustep;
		for (i = 1; i < j->nrk; i++) {
			if (ord[i]->pcal != pc)
				pc = pc == 0 || ord[i]->pcal == 0 ? 0 : 2;
			if (ord[i]->pcost != h.pcost)
				h.pcost = -1;
			if (ord[i]->ustep > h.ustep)
				h.ustep = ord[i]->ustep;
		}
		h.pcal = pname[pc];
		if (pc != 3)
			h.ustep = -1;
	}
	h.nranks = j->nrk;
	/* This thread decodes all along as the writers' threads compress the
	 * job and its edges: one each is enough (more take its CPU). */
	kg_writer_threads(w, 1);
	if (kg_write_header(w, &h) < 0)
		goto out;
	for (i = 0; i < j->str.n; i++)
		if (kg_write_str(w, (uint32_t)i, j->str.str[i], j->str.len[i]) < 0)
			goto out;
	for (i = 0; i < j->nrk; i++)
		for (t = 0; t < ord[i]->nproc; t++) {
			struct kg_proc p = j->proc[ord[i]->proc0 + t];

			p.id = (uint32_t)(ord[i]->newproc0 + t);
			if (kg_write_proc(w, &p) < 0)
				goto out;
		}
	/* The tasks, rank by rank; the edges meanwhile to a stream in
	 * memory, whose frames follow the last task as they are. */
	ef = open_memstream(&eb, &neb);
	if (ef == NULL || kg_writer_init(&ew, ef, KG_LEVEL) < 0) {
		snprintf(err, sizeof(err), "%s", ef == NULL ? strerror(errno) : ew.err);
		goto out;
	}
	ewok = 1;
	kg_writer_threads(&ew, 1);
	for (i = 0; i < j->nrk; i++) {
		if (write_rank(j, ord[i], ord[i]->tbase - tbase - ord[i]->clk, w, &ew, err,
		    sizeof(err)) < 0)
			goto out;
		nedge += ord[i]->nedge;
	}
	if (kg_writer_finish(&ew) < 0) {
		snprintf(err, sizeof(err), "%s", ew.err);
		goto out;
	}
	kg_writer_release(&ew);
	ewok = 0;
	if (fclose(ef) != 0) {
		ef = NULL;
		snprintf(err, sizeof(err), "%s", strerror(errno));
		goto out;
	}
	ef = NULL;
	if (kg_write_frames(w, eb, neb) < 0)
		goto out;
	for (e = 0; e < nedge; e++)
		kg_writer_count(w, KG_R_EDGE);
	for (e = 0; e < j->nre; e++) {
		struct kg_edge x;

		kg_edge_init(&x);
		x.src = newid(j, j->re[e].src);
		x.dst = newid(j, j->re[e].dst);
		x.kind = KG_E_RANK;
		x.how = j->re[e].how;
		if (kg_write_edge(w, &x) < 0)
			goto out;
	}
	{
		uint64_t all = 0, matched = 0;
		char name[64];

		for (i = 0; i < j->nrk; i++) {
			all += ord[i]->colls;
			matched += ord[i]->matched;
			if (ord[i]->colls > ord[i]->matched) {
				snprintf(name, sizeof(name), "coll_unmatched:%lld", (long long)ord[i]->rank);
				kg_cov_add(&j->cov, name, (int64_t)(ord[i]->colls - ord[i]->matched));
			}
		}
		kg_cov_add(&j->cov, "coll_matched", (int64_t)matched);
		kg_cov_add(&j->cov, "coll_unmatched", (int64_t)(all - matched));
	}
	if (kg_write_cov(w, &j->cov) < 0 || kg_write_end(w) < 0)
		goto out;
	rc = 0;
out:
	if (rc < 0)
		errmsg("%s: %s", g->name, err[0] != '\0' ? err : w->err);
	if (ewok)
		kg_writer_release(&ew);
	if (ef != NULL)
		fclose(ef);
	free(eb);
	free(ord);
	free(ranks);
	free(clk);
	free(t0);
	free(tools);
	return rc < 0 ? 1 : 0;
}

/*
 * Ranks of one job agree on the world size and each is inside it: a rank
 * of another job (another world, or a rank past this one's) stops the
 * merge before anything is written.
 */
static int
one_job_worlds(const struct job *j)
{
	size_t i, first = SIZE_MAX;

	for (i = 0; i < j->nrk; i++) {
		const struct rank *r = &j->rk[i];

		if (r->world <= 0)
			continue;
		if (r->rank >= r->world) {
			errmsg("%s: section %d: rank %lld of a world of %lld", r->file, r->section,
			    (long long)r->rank, (long long)r->world);
			return 1;
		}
		if (first == SIZE_MAX) {
			first = i;
		} else if (r->world != j->rk[first].world) {
			errmsg("%s: section %d: a world of %lld ranks, but %s section %d is of %lld: "
			    "not ranks of one job", r->file, r->section, (long long)r->world,
			    j->rk[first].file, j->rk[first].section, (long long)j->rk[first].world);
			return 1;
		}
	}
	return 0;
}

/*
 * Ranks of one job run the same collectives: when two or more ranks ran
 * some and none matched another rank's, they are likely not one job (or
 * not the same steps; or one job whose groups cannot be told apart), and
 * a rank none of whose collectives matched, while others did, likely
 * not of this job: both are warned about (-q silences them).
 */
static int
one_job_matched(const struct job *j)
{
	size_t i, with = 0;
	uint64_t matched = 0;

	for (i = 0; i < j->nrk; i++) {
		with += j->rk[i].colls > 0;
		matched += j->rk[i].matched;
	}
	if (with >= 2 && matched == 0) {
		warnmsg("%s: section %d: no collective of the %zu ranks matched another rank's: "
		    "not ranks of one job, or not the same steps? they are replayed without "
		    "meeting", j->rk[0].file, j->rk[0].section, j->nrk);
		return 0;
	}
	for (i = 0; i < j->nrk && with >= 2; i++)
		if (j->rk[i].colls > 0 && j->rk[i].matched == 0)
			warnmsg("%s: section %d: rank %lld: none of its %llu collectives matched "
			    "another rank's: is it of this job?", j->rk[i].file, j->rk[i].section,
			    (long long)j->rk[i].rank, (unsigned long long)j->rk[i].colls);
	return 0;
}

/*
 * Ranks of one job ran on one kind of GPU, as a rule: ranks that name
 * different ones (an A100 rank of one job with a V100 rank of another)
 * are warned about; a job of mixed GPUs is possible, so the merge goes on.
 */
static void
one_job_gpus(const struct job *j)
{
	size_t i, first = SIZE_MAX;

	for (i = 0; i < j->nrk; i++) {
		if (j->rk[i].gpu[0] == '\0')
			continue;
		if (first == SIZE_MAX)
			first = i;
		else if (strcmp(j->rk[i].gpu, j->rk[first].gpu) != 0) {
			warnmsg("%s: section %d: rank %lld ran on %s, but rank %lld (%s section %d) "
			    "on %s: not ranks of one job?", j->rk[i].file, j->rk[i].section,
			    (long long)j->rk[i].rank, j->rk[i].gpu, (long long)j->rk[first].rank,
			    j->rk[first].file, j->rk[first].section, j->rk[first].gpu);
			return;
		}
	}
}

/*
 * The ranks' time origins (tbase, each below 2^62 ns) within the format's
 * range of times of one another: each rank's times move onto the
 * earliest's, and the clock offsets are differences of such times, so
 * every sum the merge makes of them fits an int64.
 */
static int
one_job_clock(const struct job *j)
{
	size_t i, lo = 0;

	for (i = 1; i < j->nrk; i++)
		if (j->rk[i].tbase < j->rk[lo].tbase)
			lo = i;
	for (i = 0; i < j->nrk; i++)
		if (j->rk[i].tbase - j->rk[lo].tbase >= KG_TIME_MAX) {
			errmsg("%s: section %d: a time origin (tbase) %lld ns after %s section %d's: "
			    "past the format's range of times (2^53 ns), not ranks of one run",
			    j->rk[i].file, j->rk[i].section,
			    (long long)(j->rk[i].tbase - j->rk[lo].tbase), j->rk[lo].file,
			    j->rk[lo].section);
			return 1;
		}
	return 0;
}

int
merge_run(char **paths, int n, const char *output, int verbose)
{
	struct job j;
	struct gout g;
	int64_t *ends;
	uint32_t *erk;
	size_t *istart, ninst, i, nin;
	struct input *in;
	int rc = 0;

	memset(&j, 0, sizeof(j));
	intern_init(&j.str);
	kg_cov_init(&j.cov);
	nin = n > 0 ? (size_t)n : 1;
	in = xcalloc(nin, sizeof(*in));
	for (i = 0; i < nin; i++) {
		in[i].path = n > 0 ? paths[i] : NULL;
		in[i].name = input_name(in[i].path);
		kg_cov_init(&in[i].cov);
	}
	read_all(in, nin);
	for (i = 0; i < nin && rc == 0; i++)
		rc = take_input(&j, &in[i]);
	for (i = 0; i < nin; i++)
		input_release(&in[i]);
	free(in);
	if (rc == 0 && j.nrk == 0) {
		errmsg("no section to merge");
		rc = 1;
	}
	if (rc == 0)
		rc = one_job_worlds(&j);
	if (rc == 0)
		rc = one_job_clock(&j);
	if (rc == 0)
		one_job_gpus(&j);
	if (rc == 0) {
		match(&j, &ends, &erk, &istart, &ninst);
		rc = clocks(&j, ends, erk, istart, ninst) < 0;
		free(ends);
		free(erk);
		free(istart);
		if (rc == 0)
			rc = one_job_matched(&j);
	}
	if (rc == 0) {
		if (verbose) {
			struct rank **ord = xmalloc(j.nrk * sizeof(*ord));

			for (i = 0; i < j.nrk; i++)
				ord[i] = &j.rk[i];
			qsort(ord, j.nrk, sizeof(*ord), cmp_rank);
			for (i = 0; i < j.nrk; i++)
				fprintf(stderr, "%s: rank %lld: %zu task%s, %llu collective%s, %llu matched, "
				    "clock offset %lld ns\n", progname, (long long)ord[i]->rank,
				    ord[i]->ntask, ord[i]->ntask == 1 ? "" : "s",
				    (unsigned long long)ord[i]->colls, ord[i]->colls == 1 ? "" : "s",
				    (unsigned long long)ord[i]->matched, (long long)ord[i]->clk);
			free(ord);
		}
		if (gout_open(&g, output, KG_LEVEL) < 0) {
			rc = 1;
		} else {
			kg_writer_run(&g.w, 1); /* one job section: a cut is seen */
			rc = write_job(&j, &g);
			rc = gout_close(&g, rc, PRODUCER);
		}
	}
	intern_release(&j.str);
	i64map_release(&j.rkmap);
	i64map_release(&j.itmap);
	kg_cov_release(&j.cov);
	for (i = 0; i < j.ntools; i++)
		free(j.tools[i]);
	free(j.tools);
	for (i = 0; i < j.nrk; i++) {
		free(j.rk[i].gpu);
		free(j.rk[i].smap);
		free(j.rk[i].z);
	}
	free(j.rk);
	free(j.proc);
	free(j.col);
	free(j.iters);
	free(j.re);
	return rc;
}
