/*
 * graph-scale-tp's collectives (tp.h): the tensor-parallel group's
 * re-timed by its own fitted model or made anew after each GEMM whose
 * reduction is now split, their launches on the host added or taken
 * away, the ranks laid out again tensor-parallel first, every other
 * group's links re-derived and the data-parallel gradient buckets
 * merged or split for the new share. What: graph-scale-tp(1).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "comm.h"
#include "rtapi.h"
#include "tp.h"
#include "graph.h"
#include "kg.h"
#include "pgroup.h"
#include "util.h"

/* The rank old rank x of a job of degree tp becomes with degree n. */
static int64_t
new_rank(int64_t x, int64_t tp, int64_t n)
{
	return x % tp % n + n * (x / tp);
}

/* The link of a group (its ranks text) once laid out again. */
static int
new_link(const char *s, int64_t tp, int64_t n, int64_t gpn)
{
	int64_t node = -1;
	long long x;

	while (next_number(&s, &x)) {
		int64_t y = new_rank(x, tp, n);

		if (node >= 0 && y / gpn != node)
			return COMM_INTER;
		node = y / gpn;
	}
	return COMM_INTRA;
}

/* The collectives of the section: their tasks and groups. */
struct colls {
	const struct kg_task **ct;
	uint32_t *grp;
	uint32_t *id; /* task index */
	size_t n;
	struct pgroups pg;
};

static void
colls_find(struct tp *c, struct colls *k)
{
	size_t i;

	memset(k, 0, sizeof(*k));
	pgroups_init(&k->pg, c->o->gpn);
	k->ct = xmalloc((c->nt + 1) * sizeof(*k->ct));
	k->grp = xmalloc((c->nt + 1) * sizeof(*k->grp));
	k->id = xmalloc((c->nt + 1) * sizeof(*k->id));
	for (i = 0; i < c->nt; i++) {
		const struct kg_task *t = &c->t[i];

		if (t->kind != KG_COLL)
			continue;
		k->ct[k->n] = t;
		k->grp[k->n] = t->pgr != KG_NONE ? pgroups_of(&k->pg, t->pgr,
		    kg_str(c->r, t->pgr)) : UINT32_MAX;
		k->id[k->n++] = (uint32_t)i;
	}
	pgroups_classify(&k->pg, k->ct, k->grp, k->n);
}

static void
colls_release(struct colls *k)
{
	free(k->ct), free(k->grp), free(k->id);
	pgroups_release(&k->pg);
}

/* The stream a made all-reduce of rank's runs on (added on first use). */
static uint32_t
tp_stream(struct tp *c, uint32_t like, uint32_t *made, int64_t *mrank, size_t *nmade)
{
	const struct kg_proc *q = &c->p[like];
	int64_t rank = q->rank;
	size_t i;
	struct kg_proc np;
	int64_t tid = 1000013;

	for (i = 0; i < *nmade; i++)
		if (mrank[i] == rank && c->p[made[i]].pid == q->pid)
			return made[i];
	for (i = 0; i < c->np; i++)
		if (c->p[i].kind == KG_STREAM && c->p[i].tid >= tid)
			tid = c->p[i].tid + 1;
	np = *q;
	np.id = (uint32_t)c->np;
	np.tid = tid;
	np.name = KG_NONE;
	np.main = 0;
	VEC_PUSH(c->p, c->np, c->capp, np);
	made[*nmade] = np.id;
	mrank[(*nmade)++] = rank;
	return np.id;
}

static int
cmp_proc_ts(const void *x, const void *y, const struct kg_task *t)
{
	const struct kg_task *a = &t[*(const uint32_t *)x], *b = &t[*(const uint32_t *)y];

	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

static const struct kg_task *sorted_tasks;

static int
cmp_sorted(const void *x, const void *y)
{
	return cmp_proc_ts(x, y, sorted_tasks);
}

static int
is_gemm_task(const struct tp *c, const struct kg_task *k)
{
	const char *n = kg_str(c->r, k->name);

	if (k->kind != KG_KERN)
		return 0;
	if (k->op != KG_NONE && tp_is_gemm(kg_str(c->r, k->op)))
		return 1;
	return n != NULL && (strstr(n, "gemm") != NULL || strstr(n, "nvjet") != NULL ||
	    strstr(n, "cutlass") != NULL);
}

static void
add_edge(struct tp *c, uint32_t src, uint32_t dst, int kind)
{
	struct kg_edge e;

	kg_edge_init(&e);
	e.src = src, e.dst = dst, e.kind = kind, e.how = KG_HOW_INFERRED;
	VEC_PUSH(c->e, c->ne, c->cape, e);
}

/*
 * Host time of collective launches: the calls around the one that
 * launched a collective (consecutive on its thread, under the same
 * operator: record_param_comms), the gaps between them and the gap
 * before the first (the framework's time to reach the operator, which
 * every operator it calls takes).
 */
static void
host_maps(struct tp *c)
{
	size_t i;

	c->launcher = xmalloc((c->nt + 1) * sizeof(*c->launcher));
	c->tout = xmalloc((c->nt + 1) * sizeof(*c->tout));
	c->tin = xmalloc((c->nt + 1) * sizeof(*c->tin));
	c->nmap = c->nt;
	for (i = 0; i < c->nt; i++)
		c->launcher[i] = c->tout[i] = c->tin[i] = KG_NONE;
	for (i = 0; i < c->ne; i++) {
		const struct kg_edge *e = &c->e[i];

		if (e->kind == KG_E_LAUNCH && e->dst < c->nt)
			c->launcher[e->dst] = e->src;
		else if (e->kind == KG_E_THREAD && e->src < c->nt && e->dst < c->nt)
			c->tout[e->src] = (uint32_t)i, c->tin[e->dst] = (uint32_t)i;
	}
}

/* The median of n values (sorted in place): the lower middle one. */
static int64_t
median_i64(int64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_i64);
	return v[(n - 1) / 2];
}

/* Is task x a runtime call to cudaStreamWaitEvent (hipStreamWaitEvent) under no operator? */
static int
stream_wait(const struct tp *c, uint32_t x)
{
	const struct kg_task *t = &c->t[x];

	return t->kind == KG_RT && t->op == KG_NONE && t->name != KG_NONE &&
	    rtapi_role(kg_str(c->r, t->name)) == RTAPI_WAIT;
}

/* The launch's span: first and last calls; its time in *t. 0, or -1. */
static int
host_span(const struct tp *c, uint32_t coll, uint32_t *a, uint32_t *b, int64_t *t)
{
	uint32_t l = coll < c->nmap ? c->launcher[coll] : KG_NONE, x;
	uint32_t op;

	if (l == KG_NONE || c->t[l].op == KG_NONE)
		return -1;
	op = c->t[l].op;
	*t = c->t[l].dur;
	for (x = l; c->tin[x] != KG_NONE && c->t[c->e[c->tin[x]].src].op == op;) {
		*t += c->e[c->tin[x]].delay;
		x = c->e[c->tin[x]].src;
		*t += c->t[x].dur;
	}
	*a = x;
	if (c->tin[x] != KG_NONE)
		*t += c->e[c->tin[x]].delay;
	for (x = l; c->tout[x] != KG_NONE && c->t[c->e[c->tout[x]].dst].op == op;) {
		*t += c->e[c->tout[x]].delay;
		x = c->e[c->tout[x]].dst;
		*t += c->t[x].dur;
	}
	/* and the stream waits right after it under no operator: the
	 * framework's wait for the collective's output */
	while (c->tout[x] != KG_NONE && stream_wait(c, c->e[c->tout[x]].dst)) {
		*t += c->e[c->tout[x]].delay;
		x = c->e[c->tout[x]].dst;
		*t += c->t[x].dur;
	}
	*b = x;
	return 0;
}

/* A collective's launch taken away: its calls and their gaps take no time. */
static void
host_drop(struct tp *c, uint32_t coll)
{
	uint32_t a, b, x;
	int64_t t;

	if (host_span(c, coll, &a, &b, &t) < 0)
		return;
	if (c->tin[a] != KG_NONE)
		c->e[c->tin[a]].delay = 0;
	for (x = a;; x = c->e[c->tout[x]].dst) {
		c->t[x].dur = 0;
		if (x == b)
			break;
		c->e[c->tout[x]].delay = 0;
	}
	c->nhost++;
}

/* A launch added after the call that launched task g: its time as a gap. */
static void
host_add(struct tp *c, uint32_t g)
{
	uint32_t l = g < c->nmap ? c->launcher[g] : KG_NONE;

	if (l == KG_NONE || c->tout[l] == KG_NONE || c->hc <= 0)
		return;
	c->e[c->tout[l]].delay += c->hc;
	c->nhost++;
}

/*
 * The str id of the new tensor-parallel group's ranks text, whose first
 * rank is base: "[base, ..., base + N - 1]" (graphstat tells the degree
 * from it).
 */
static uint32_t
tp_group(struct tp *c, int64_t base)
{
	int64_t *r = xmalloc((size_t)c->o->n * sizeof(*r));
	char buf[4096];
	int64_t i;
	uint32_t id = KG_NONE;

	for (i = 0; i < c->o->n; i++)
		r[i] = base + i;
	if (pgroups_ranks_text(r, (size_t)c->o->n, buf, sizeof(buf)) == 0)
		id = rs_strs_id(&c->xs, buf);
	free(r);
	return id;
}

/*
 * The tensor-parallel group's own model, where its collectives tell it:
 * t = c0 + alpha steps + bytes factor / beta, a fixed cost besides the
 * shared model's latency per step (common/comm.h has none), fitted by
 * least squares of the relative error over the group's collectives of
 * every type. A group's collectives all run among T ranks, so a fixed
 * cost and a latency per step are told apart only by types of another
 * step count (an all-reduce's 2(T - 1) against a broadcast's or a
 * gather's T - 1): without two step counts, or with a negative term,
 * there is none (ok 0).
 */
struct tpm {
	int ok;
	double c0, alpha, gamma; /* ns, ns a step, ns a byte */
	size_t n;
};

static double
tpm_time(const struct tpm *m, int coll, int64_t n, uint64_t bytes)
{
	return m->c0 + m->alpha * comm_steps(coll, n) + m->gamma * (double)bytes *
	    comm_factor(coll, n);
}

/* A made collective of type coll moving bytes, after task g's start, on s:
 * timed by the group's own model where the job has one (tm), else by m. */
static uint32_t
made_task(struct tp *c, uint32_t s, uint32_t g, int coll, int64_t bytes,
    const struct comm_model *m, const struct tpm *tm, uint32_t name, uint32_t *last)
{
	struct kg_task a;
	int approx;

	kg_task_init(&a);
	a.id = (uint32_t)c->nt;
	a.proc = s;
	a.kind = KG_COLL;
	a.name = name;
	a.ts = c->t[g].ts + c->t[g].odur;
	if (tm != NULL && tm->ok)
		a.dur = llround(tpm_time(tm, coll, c->o->n, (uint64_t)bytes));
	else
		a.dur = comm_time(m, coll, c->o->n, (uint64_t)bytes, COMM_INTRA, &approx);
	if (a.dur < 0)
		a.dur = 0;
	a.odur = a.dur;
	a.iter = c->t[g].iter;
	a.op = KG_NONE;
	a.bytes = (uint64_t)bytes;
	a.coll = coll;
	a.gsize = c->o->n;
	{
		/* the group of the rank's new place: Megatron's layout, from a
		 * job without tensor parallelism */
		int64_t rk = c->t[g].proc < c->np && c->p[c->t[g].proc].rank >= 0 ?
		    c->p[c->t[g].proc].rank : c->g->h.rank;

		a.pgr = tp_group(c, c->o->n * (rk > 0 ? rk : 0));
	}
	a.phase = c->t[g].phase, a.mb = c->t[g].mb, a.layer = c->t[g].layer;
	a.stage = c->t[g].stage;
	VEC_PUSH(c->t, c->nt, c->capt, a);
	if (last[s] != KG_NONE)
		add_edge(c, last[s], a.id, KG_E_STREAM);
	last[s] = a.id;
	return a.id;
}

/*
 * The collectives a job traced without them asks for (see the top):
 * after each GEMM whose reduction is now split, an all-reduce (with
 * sequence parallelism a reduce-scatter, then an all-gather); with
 * sequence parallelism, before each row-parallel input gradient, an
 * all-gather of its output gradient (that one also in a job traced with
 * tensor parallelism and without sequence parallelism). Their times
 * come from m, for N ranks inside a node. name[] by type.
 */
static size_t
insert_colls(struct tp *c, const struct comm_model *m, const struct tpm *tm,
    const uint32_t *name)
{
	size_t n0 = c->nt, i, j, made = 0, nmade = 0;
	uint32_t *ord = xmalloc((n0 + 1) * sizeof(*ord));
	uint32_t *mproc = xmalloc((c->np + 1) * sizeof(*mproc));
	int64_t *mrank = xmalloc((c->np + 1) * sizeof(*mrank));
	uint32_t *last = NULL;
	size_t np0 = c->np;

	for (i = 0; i < n0; i++)
		ord[i] = (uint32_t)i;
	sorted_tasks = c->t;
	qsort(ord, n0, sizeof(*ord), cmp_sorted);
	last = xmalloc((np0 + 1) * sizeof(*last) * 2);
	for (i = 0; i < 2 * (np0 + 1); i++)
		last[i] = KG_NONE;
	for (i = 0; i < n0; i++) {
		uint32_t g = ord[i], w = KG_NONE, s, a, b;
		int skipped = 0;

		if (g >= c->narafter)
			continue; /* made since the sharding */
		if (c->arafter[g] == 2 && c->sp1 && !c->sp0) {
			uint32_t prev = KG_NONE;

			for (j = i; j-- > 0 && c->t[ord[j]].proc == c->t[g].proc;) {
				int kk = c->t[ord[j]].kind;

				if (kk != KG_CPU && kk != KG_RT && kk != KG_COLL) {
					prev = ord[j];
					break;
				}
			}
			s = tp_stream(c, c->t[g].proc, mproc, mrank, &nmade);
			a = made_task(c, s, prev != KG_NONE ? prev : g, KG_COLL_ALLGATHER,
			    c->arbytes[g], m, tm, name[KG_COLL_ALLGATHER], last);
			if (prev != KG_NONE)
				add_edge(c, prev, a, KG_E_EVENT);
			add_edge(c, a, g, KG_E_EVENT);
			host_add(c, g);
			made++;
			continue;
		}
		if (c->arafter[g] != 1 || c->T > 1)
			continue;
		/* the kernel that waits: the next on the stream; in the
		 * backward phase, the one after a GEMM that follows */
		for (j = i + 1; j < n0 && c->t[ord[j]].proc == c->t[g].proc; j++) {
			const struct kg_task *k = &c->t[ord[j]];

			if (k->kind == KG_CPU || k->kind == KG_RT || k->kind == KG_COLL)
				continue;
			if (!skipped && c->t[g].phase == KG_PH_BWD && is_gemm_task(c, k) &&
			    (ord[j] >= c->narafter || !c->arafter[ord[j]])) {
				skipped = 1; /* the weight gradient: overlapped */
				continue;
			}
			w = ord[j];
			break;
		}
		s = tp_stream(c, c->t[g].proc, mproc, mrank, &nmade);
		if (c->sp1) {
			a = made_task(c, s, g, KG_COLL_REDUCESCATTER, c->arbytes[g], m, tm,
			    name[KG_COLL_REDUCESCATTER], last);
			b = made_task(c, s, g, KG_COLL_ALLGATHER, c->arbytes[g], m, tm,
			    name[KG_COLL_ALLGATHER], last);
			made += 2;
		} else {
			a = b = made_task(c, s, g, KG_COLL_ALLREDUCE, c->arbytes[g], m, tm,
			    name[KG_COLL_ALLREDUCE], last);
			made++;
		}
		add_edge(c, g, a, KG_E_EVENT);
		host_add(c, g);
		if (c->sp1)
			host_add(c, g);
		if (w != KG_NONE)
			add_edge(c, b, w, KG_E_EVENT);
	}
	free(ord), free(mproc), free(mrank), free(last);
	return made;
}

/* Solve the 3 x 3 system a x = b; -1 when it is singular. */
static int
solve3(double a[3][3], double b[3], double x[3])
{
	int i, j, k, p;

	for (i = 0; i < 3; i++) {
		double t;

		for (p = i, j = i + 1; j < 3; j++)
			if (fabs(a[j][i]) > fabs(a[p][i]))
				p = j;
		if (fabs(a[p][i]) < 1e-300)
			return -1;
		for (k = 0; k < 3; k++)
			t = a[i][k], a[i][k] = a[p][k], a[p][k] = t;
		t = b[i], b[i] = b[p], b[p] = t;
		for (j = 0; j < 3; j++) {
			double f;

			if (j == i)
				continue;
			f = a[j][i] / a[i][i];
			for (k = i; k < 3; k++)
				a[j][k] -= f * a[i][k];
			b[j] -= f * b[i];
		}
	}
	for (i = 0; i < 3; i++)
		x[i] = b[i] / a[i][i];
	return 0;
}

static void
tpm_fit(const struct colls *k, int64_t T, struct tpm *m)
{
	double a[3][3] = { { 0 } }, b[3] = { 0 }, x[3];
	double s0 = -1;
	int twosteps = 0;
	size_t i;

	memset(m, 0, sizeof(*m));
	for (i = 0; i < k->n; i++) {
		const struct kg_task *t = k->ct[i];
		const struct pgroup *g = k->grp[i] != UINT32_MAX ? &k->pg.g[k->grp[i]] : NULL;
		double v[3], y = (double)t->dur, w;
		int r, c;

		if (g == NULL || !g->fwd || g->size != T || t->dur <= 0 || t->bytes == 0 ||
		    (t->coll != KG_COLL_ALLREDUCE && t->coll != KG_COLL_BROADCAST &&
		    t->coll != KG_COLL_ALLGATHER && t->coll != KG_COLL_REDUCESCATTER))
			continue;
		v[0] = 1;
		v[1] = comm_steps(t->coll, T);
		v[2] = (double)t->bytes * comm_factor(t->coll, T);
		if (s0 < 0)
			s0 = v[1];
		else if (v[1] != s0)
			twosteps = 1;
		w = 1 / (y * y);
		for (r = 0; r < 3; r++) {
			b[r] += w * v[r] * y;
			for (c = 0; c < 3; c++)
				a[r][c] += w * v[r] * v[c];
		}
		m->n++;
	}
	if (!twosteps || m->n < 3 || solve3(a, b, x) < 0 || x[0] < 0 || x[1] < 0 || x[2] < 0)
		return;
	m->c0 = x[0], m->alpha = x[1], m->gamma = x[2];
	m->ok = 1;
}

/* A gradient bucket: a data-parallel reduction of the backward phase. */
static int
is_bucket(const struct kg_task *t, const struct pgroup *g)
{
	return g != NULL && g->dp && t->phase == KG_PH_BWD && t->bytes >= (1u << 20) &&
	    (t->coll == KG_COLL_ALLREDUCE || t->coll == KG_COLL_REDUCESCATTER);
}

static int
cmp_rank_ts(const void *x, const void *y, const int64_t *rank, const struct kg_task *t)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	if (rank[a] != rank[b])
		return rank[a] < rank[b] ? -1 : 1;
	if (t[a].iter != t[b].iter)
		return t[a].iter < t[b].iter ? -1 : 1;
	if (t[a].ts != t[b].ts)
		return t[a].ts < t[b].ts ? -1 : 1;
	return a < b ? -1 : a > b;
}

static const int64_t *mb_rank;
static const struct kg_task *mb_tasks;

static int
cmp_mb(const void *x, const void *y)
{
	return cmp_rank_ts(x, y, mb_rank, mb_tasks);
}

/*
 * Fewer parameters a rank (N > T): the gradient buckets, each now T/N
 * of its bytes, are merged in their order, each rank's and iteration's,
 * while the merged bytes stay within the largest bucket traced (the
 * framework's bucket size: it fills a bucket to it): the last of a run
 * carries the run's bytes, re-timed for them on its new link by m, and
 * the others take no time, meet no one and lose their launch. Returns
 * how many were merged away.
 */
static size_t
merge_buckets(struct tp *c, const struct colls *k, const struct comm_model *m, uint8_t *drop,
    uint64_t cap, int link)
{
	uint32_t *b = xmalloc((k->n + 1) * sizeof(*b));
	int64_t *rank = xmalloc((c->nt + 1) * sizeof(*rank));
	size_t i, j, nb = 0, merged = 0;

	for (i = 0; i < k->n; i++) {
		const struct pgroup *g = k->grp[i] != UINT32_MAX ? &k->pg.g[k->grp[i]] : NULL;
		uint32_t id = k->id[i];
		const struct kg_task *t = &c->t[id];

		if (g == NULL || !g->dp || t->phase != KG_PH_BWD || t->bytes == 0 ||
		    (t->coll != KG_COLL_ALLREDUCE && t->coll != KG_COLL_REDUCESCATTER))
			continue;
		if (t->bytes * (uint64_t)c->o->n < ((uint64_t)1 << 20) * (uint64_t)c->T)
			continue; /* was no bucket before it was scaled */
		b[nb++] = id;
		rank[id] = t->proc < c->np && c->p[t->proc].rank >= 0 ? c->p[t->proc].rank :
		    c->g->h.rank;
	}
	mb_rank = rank, mb_tasks = c->t;
	if (nb > 0)
		qsort(b, nb, sizeof(*b), cmp_mb);
	for (i = 0; i < nb; i = j) {
		uint64_t sum = c->t[b[i]].bytes;
		uint32_t last;
		int a1, a2;
		int64_t told, tnew;

		for (j = i + 1; j < nb && rank[b[j]] == rank[b[i]] &&
		    c->t[b[j]].iter == c->t[b[i]].iter && c->t[b[j]].coll == c->t[b[i]].coll &&
		    sum + c->t[b[j]].bytes <= cap; j++)
			sum += c->t[b[j]].bytes;
		if (j == i + 1)
			continue;
		last = b[j - 1];
		told = comm_time(m, c->t[last].coll, c->t[last].gsize > 1 ? c->t[last].gsize : 2,
		    c->t[last].bytes, link, &a1);
		tnew = comm_time(m, c->t[last].coll, c->t[last].gsize > 1 ? c->t[last].gsize : 2,
		    sum, link, &a2);
		if (told <= 0 || tnew <= 0)
			continue;
		c->t[last].dur = llround((double)c->t[last].dur * (double)tnew / (double)told);
		c->t[last].bytes = sum;
		for (; i < j - 1; i++) {
			c->t[b[i]].dur = 0;
			drop[b[i]] = 1;
			host_drop(c, b[i]);
			merged++;
		}
	}
	free(b);
	free(rank);
	return merged;
}

/*
 * More parameters a rank (N < T): a gradient bucket now larger than the
 * largest traced one becomes k = ceil(bytes / that) buckets of equal
 * bytes, as the framework would fill them. The gradients of a bucket
 * come in the backward pass between the launch of the bucket before it
 * on its stream (or the first backward kernel of the iteration) and its
 * own: piece i of k is launched after the kernel of the stream it waits
 * for that began at i/k of that span, on its stream before it, each
 * timed by m for its bytes on its new link; the pieces meet no peer.
 * Returns how many were made.
 */
static size_t
split_buckets(struct tp *c, const struct colls *k, const struct comm_model *m, uint64_t cap,
    int link)
{
	uint32_t *waitfor = xmalloc((c->nt + 1) * sizeof(*waitfor));
	uint32_t *prevb = xmalloc((c->nt + 1) * sizeof(*prevb));
	uint32_t *ord = xmalloc((c->nt + 1) * sizeof(*ord));
	uint32_t *pos = xmalloc((c->nt + 1) * sizeof(*pos));
	size_t i, n0 = c->nt, made = 0, nb = 0;
	uint32_t *b = xmalloc((k->n + 1) * sizeof(*b));

	if (cap == 0)
		goto out;
	for (i = 0; i < n0; i++)
		waitfor[i] = prevb[i] = KG_NONE, ord[i] = (uint32_t)i;
	for (i = 0; i < c->ne; i++) {
		const struct kg_edge *e = &c->e[i];

		if (e->kind == KG_E_EVENT && e->dst < n0 && e->src < n0 &&
		    c->t[e->src].kind == KG_KERN)
			waitfor[e->dst] = e->src;
		if (e->kind == KG_E_STREAM && e->dst < n0 && e->src < n0)
			prevb[e->dst] = e->src;
	}
	sorted_tasks = c->t;
	qsort(ord, n0, sizeof(*ord), cmp_sorted);
	for (i = 0; i < n0; i++)
		pos[ord[i]] = (uint32_t)i;
	for (i = 0; i < k->n; i++) {
		const struct pgroup *g = k->grp[i] != UINT32_MAX ? &k->pg.g[k->grp[i]] : NULL;
		const struct kg_task *t = &c->t[k->id[i]];

		if (g != NULL && g->dp && t->phase == KG_PH_BWD && t->bytes > cap &&
		    (t->coll == KG_COLL_ALLREDUCE || t->coll == KG_COLL_REDUCESCATTER))
			b[nb++] = k->id[i];
	}
	for (i = 0; i < nb; i++) {
		uint32_t id = b[i], w, p, first, x, prev, last = KG_NONE;
		uint64_t bytes = c->t[id].bytes, piece;
		int64_t nk, j, t0, t1, told, tpiece;
		int a1, a2;

		/* the kernel it waits for: through the stream's first task
		 * after the one before it (an event record's wait) */
		for (w = waitfor[id], x = id; w == KG_NONE && prevb[x] != KG_NONE &&
		    c->t[prevb[x]].kind != KG_COLL; x = prevb[x])
			w = waitfor[prevb[x]];
		if (w == KG_NONE)
			continue;
		/* the span: from the last collective before it on its stream,
		 * else the iteration's first backward kernel on w's stream */
		for (prev = prevb[id]; prev != KG_NONE && c->t[prev].kind != KG_COLL;)
			prev = prevb[prev];
		for (first = w, p = pos[w]; p-- > 0 && c->t[ord[p]].proc == c->t[w].proc &&
		    c->t[ord[p]].iter == c->t[w].iter && c->t[ord[p]].phase == KG_PH_BWD;)
			if (c->t[ord[p]].kind == KG_KERN)
				first = ord[p];
		t0 = prev != KG_NONE && c->t[prev].iter == c->t[id].iter && c->t[prev].ts > c->t[first].ts ?
		    c->t[prev].ts : c->t[first].ts;
		t1 = c->t[w].ts;
		nk = (int64_t)((bytes + cap - 1) / cap);
		piece = bytes / (uint64_t)nk;
		told = comm_time(m, c->t[id].coll, c->t[id].gsize > 1 ? c->t[id].gsize : 2, bytes,
		    link, &a1);
		tpiece = comm_time(m, c->t[id].coll, c->t[id].gsize > 1 ? c->t[id].gsize : 2, piece,
		    link, &a2);
		if (nk < 2 || told <= 0 || tpiece <= 0 || t1 <= t0)
			continue;
		for (j = 1; j < nk; j++) {
			int64_t at = t0 + (t1 - t0) * j / nk;
			uint32_t anchor = w;
			struct kg_task a = c->t[id];

			for (p = pos[w]; p-- > 0 && c->t[ord[p]].proc == c->t[w].proc;) {
				if (c->t[ord[p]].kind == KG_KERN && c->t[ord[p]].ts <= at) {
					anchor = ord[p];
					break;
				}
			}
			a.id = (uint32_t)c->nt;
			a.bytes = piece;
			a.dur = a.odur = llround((double)c->t[id].dur * (double)tpiece / (double)told);
			a.ts = c->t[anchor].ts + c->t[anchor].odur;
			a.seq = -1;
			a.mpeak = a.mrpeak = -1, a.mnet = 0;
			VEC_PUSH(c->t, c->nt, c->capt, a);
			add_edge(c, anchor, a.id, KG_E_EVENT);
			if (last != KG_NONE)
				add_edge(c, last, a.id, KG_E_STREAM);
			else if (prev != KG_NONE)
				add_edge(c, prev, a.id, KG_E_STREAM);
			last = a.id;
			host_add(c, anchor);
			made++;
		}
		add_edge(c, last, id, KG_E_STREAM);
		c->t[id].dur = llround((double)c->t[id].dur * (double)tpiece / (double)told);
		c->t[id].bytes = piece;
	}
out:
	free(waitfor), free(prevb), free(ord), free(pos), free(b);
	return made;
}

/* Is the class of coll on link fitted on latency alone? */
static int
latency_only(const struct comm_model *m, int coll, int link)
{
	const struct comm_class *cc = &m->c[coll][link];

	return cc->samples > 0 && cc->nseg == 1 && cc->seg[0].beta <= 0;
}

/* Re-time, insert and re-group the collectives; 0, or 1 after a message. */
int
collectives(struct tp *c, char *net, size_t netlen)
{
	struct colls k;
	struct comm_model m;
	struct comm_given given = c->o->given;
	uint8_t used[KG_NCOLL * COMM_NLINK] = { 0 };
	char assumed[COMM_NLINK] = { 0 };
	char amsg[COMM_NLINK][PGROUPS_MSGLEN];
	int64_t n = c->o->n, T = c->T;
	double rho = c->rho;
	uint8_t *drop = NULL;
	size_t i, made = 0, nshape = 0;
	uint32_t name[KG_NCOLL] = { 0 };
	struct comm_model mb;
	struct comm_given bg;
	const char *topo;
	char why[192];
	struct tpm tm;
	uint64_t cap = 0;
	int bucket_link = COMM_INTRA;
	size_t nmerged = 0, nsplit = 0;
	int64_t act = c->M * c->H * 2;
	int l, rc = 1;

	name[KG_COLL_ALLREDUCE] = rs_strs_id(&c->xs,
	    "ncclDevKernel_AllReduce_Sum_bf16_RING (made by graph-scale-tp)");
	name[KG_COLL_REDUCESCATTER] = rs_strs_id(&c->xs,
	    "ncclDevKernel_ReduceScatter_Sum_bf16_RING (made by graph-scale-tp)");
	name[KG_COLL_ALLGATHER] = rs_strs_id(&c->xs,
	    "ncclDevKernel_AllGather_RING (made by graph-scale-tp)");
	name[KG_COLL_NONE] = rs_strs_id(&c->xs,
	    "ncclDevKernel_ReduceScatter_Sum_bf16_RING and AllGather_RING (made by graph-scale-tp)");

	net[0] = '\0';
	colls_find(c, &k);
	host_maps(c);
	{
		/* the median launch of the job's collectives of a layer's
		 * size (the tensor-parallel group's), else of all: a launch
		 * that waited (on the GPU, on a first call's setup) is not
		 * what another costs */
		int64_t *all = xmalloc((k.n + 1) * sizeof(*all)), *lay, t;
		size_t ca = 0, cnt = 0;
		uint32_t a, b;

		lay = xmalloc((k.n + 1) * sizeof(*lay));
		for (i = 0; i < k.n; i++)
			if (host_span(c, k.id[i], &a, &b, &t) == 0) {
				all[ca++] = t;
				if ((int64_t)k.ct[i]->bytes == c->M * c->H * 2)
					lay[cnt++] = t;
			}
		c->hc = cnt > 0 ? median_i64(lay, cnt) : ca > 0 ? median_i64(all, ca) : 0;
		free(all), free(lay);
		c->hc_given = 0;
		if (ca == 0 && c->o->launch >= 0)
			c->hc = c->o->launch, c->hc_given = 1;
	}
	used[KG_COLL_ALLREDUCE * COMM_NLINK + COMM_INTRA] = 1;
	if (c->sp0 || c->sp1) {
		used[KG_COLL_ALLGATHER * COMM_NLINK + COMM_INTRA] = 1;
		used[KG_COLL_REDUCESCATTER * COMM_NLINK + COMM_INTRA] = 1;
	}
	for (i = 0; i < k.n; i++) {
		const struct kg_task *t = k.ct[i];
		const struct pgroup *g = k.grp[i] != UINT32_MAX ? &k.pg.g[k.grp[i]] : NULL;

		if (g == NULL || t->coll <= KG_COLL_NONE || t->coll >= KG_NCOLL)
			continue;
		used[t->coll * COMM_NLINK + g->link] = 1;
		used[t->coll * COMM_NLINK + new_link(g->text, T, n, c->o->gpn)] = 1;
	}
	pgroups_fit(&k.pg, k.ct, k.grp, k.n, &given, &m);
	if (pgroups_assume(&m, used, c->g->h.gpu, &given, assumed, amsg, net, netlen) > 0) {
		for (l = 0; l < COMM_NLINK; l++)
			if (assumed[l])
				warnmsg("%s: section %d: %s", c->name, c->index, amsg[l]);
		pgroups_fit(&k.pg, k.ct, k.grp, k.n, &given, &m);
	}
	if (c->o->verbose)
		fprintf(stderr, "%s: %s: section %d: tensor-parallel degree %lld -> %lld, hidden "
		    "%lld, %lld tokens a micro-batch, %lld heads, %zu split sizes\n", progname,
		    c->name, c->index, (long long)T, (long long)n, (long long)c->H,
		    (long long)c->M, (long long)c->heads, c->nsv);
	/*
	 * A class fitted on latency alone (its samples all of one size and
	 * one group size: a tensor-parallel group's) cannot say how its
	 * time grows with the group: the link given, or the built-in one
	 * of the GPU, says it, and the traced time is scaled by its ratio.
	 */
	memset(&bg, 0, sizeof(bg));
	topo = comm_topology_default(c->g->h.gpu, why, sizeof(why));
	comm_topology_builtin(topo, &bg, 0);
	if (c->o->given.set[COMM_INTRA]) {
		bg.nccl[COMM_INTRA] = c->o->given.nccl[COMM_INTRA];
		bg.gbps[COMM_INTRA] = c->o->given.gbps[COMM_INTRA];
		bg.us[COMM_INTRA] = c->o->given.us[COMM_INTRA];
	}
	pgroups_fit(&k.pg, k.ct, k.grp, 0, &bg, &mb);
	tpm_fit(&k, T, &tm);
	if (c->o->verbose && tm.ok)
		fprintf(stderr, "%s: %s: section %d: the tensor-parallel group's model (%zu "
		    "collectives): %.2f us, %.2f us a step, %.1f GB/s\n", progname, c->name,
		    c->index, tm.n, tm.c0 / 1e3, tm.alpha / 1e3, 1 / tm.gamma);
	if (c->o->verbose) {
		const struct comm_class *cc = &m.c[KG_COLL_ALLREDUCE][COMM_INTRA];
		char text[512];

		comm_class_text(cc, text, sizeof(text));
		fprintf(stderr, "%s: %s: section %d: model: allreduce over NVLink (%zu samples): "
		    "%s\n", progname, c->name, c->index, cc->samples, text);
	}
	drop = xcalloc(c->nt + 1, 1);
	for (i = 0; i < k.n; i++) {
		struct kg_task *t = &c->t[k.id[i]];
		const struct pgroup *g = k.grp[i] != UINT32_MAX ? &k.pg.g[k.grp[i]] : NULL;
		int lo, ln, a1, a2, ctype = t->coll, pair = 0;
		const struct comm_model *mm;
		int64_t told, tnew;
		uint64_t bnew = t->bytes;
		int64_t size;

		if (g == NULL || t->coll <= KG_COLL_NONE || t->coll >= KG_NCOLL)
			continue;
		lo = g->link;
		size = g->size;
		if (is_bucket(t, g) && t->bytes > cap)
			cap = t->bytes;
		if (T > 1 && g->fwd && g->size == T) {
			/* the tensor-parallel group: N ranks of one node */
			ln = COMM_INTRA;
			size = n;
			if (n == 1) {
				/* no group left: it takes no time, meets no one */
				t->dur = 0;
				t->pgr = KG_NONE;
				t->gsize = 1;
				drop[k.id[i]] = 1;
				continue;
			}
			if ((int64_t)t->bytes == act && c->sp0 && !c->sp1) {
				/* sequence parallelism undone: the gathers go, the
				 * scatters reduce the whole tensor */
				if (t->coll == KG_COLL_ALLGATHER) {
					/* it takes no time, meets no one: not a
					 * gather of parameters for graphstat */
					t->dur = 0;
					t->pgr = KG_NONE;
					t->gsize = 1;
					drop[k.id[i]] = 1;
					host_drop(c, k.id[i]);
					continue;
				}
				if (t->coll == KG_COLL_REDUCESCATTER) {
					ctype = KG_COLL_ALLREDUCE;
					t->name = name[ctype];
				}
			} else if ((int64_t)t->bytes == act && !c->sp0 && c->sp1 &&
			    t->coll == KG_COLL_ALLREDUCE) {
				/* a scatter, then a gather, in its place: one
				 * task that takes the two's time */
				ctype = KG_COLL_REDUCESCATTER;
				t->name = name[KG_COLL_NONE];
				pair = 1;
				host_add(c, k.id[i]);
			}
		} else {
			ln = new_link(g->text, T, n, c->o->gpn);
			if (is_bucket(t, g))
				bucket_link = ln;
			if (g->dp && (t->phase == KG_PH_BWD || t->phase == KG_PH_OPT))
				bnew = (uint64_t)llround((double)t->bytes * rho);
			if (ln == lo && bnew == t->bytes)
				continue;
		}
		/*
		 * A group of another size: the tensor-parallel group's
		 * collectives, all of one size, mix NCCL's protocols (LL
		 * for the small ones, LL128 for the large) and no line
		 * through them tells how a collective grows with the
		 * group; nor does a class fitted on latency alone. The
		 * link's NCCL ring model (given, or built in) does.
		 */
		mm = &m;
		if (size != g->size && ((T > 1 && g->fwd && g->size == T) ||
		    latency_only(&m, t->coll, lo) || latency_only(&m, ctype, ln))) {
			mm = &mb;
			nshape++;
		}
		told = comm_time(mm, t->coll, g->size, t->bytes, lo, &a1);
		tnew = comm_time(mm, ctype, size, bnew, ln, &a2);
		if (tm.ok && lo == COMM_INTRA && ln == COMM_INTRA && T > 1 && g->fwd &&
		    g->size == T && size == T) {
			/* at the traced degree, the group's own model: a
			 * fixed cost, a latency a step */
			told = llround(tpm_time(&tm, t->coll, g->size, t->bytes));
			tnew = llround(tpm_time(&tm, ctype, size, bnew));
			if (pair || (ctype == KG_COLL_ALLREDUCE && t->coll == KG_COLL_REDUCESCATTER))
				tnew = llround(tpm_time(&tm, KG_COLL_REDUCESCATTER, size, bnew) +
				    tpm_time(&tm, KG_COLL_ALLGATHER, size, bnew));
		} else if (pair || (ctype == KG_COLL_ALLREDUCE && t->coll == KG_COLL_REDUCESCATTER &&
		    mm != &mb)) {
			/*
			 * A ring all-reduce is a reduce-scatter and an
			 * all-gather: the one is timed as the other two,
			 * each by the fit of its own type (or the one it
			 * borrows); NCCL's model times an all-reduce as
			 * one, a pair made of one as two
			 */
			int64_t rs = comm_time(mm, KG_COLL_REDUCESCATTER, size, bnew, ln, &a2);
			int64_t ag = comm_time(mm, KG_COLL_ALLGATHER, size, bnew, ln, &a2);

			tnew = rs < 0 || ag < 0 ? -1 : rs + ag;
		}
		if (told <= 0 || tnew < 0) {
			errmsg("%s: section %d: no %s over %s in the job to fit the communication "
			    "model on%s", c->name, c->index, kg_coll_name[t->coll],
			    (tnew < 0 ? ln : lo) == COMM_INTER ? "the network (across nodes)" :
			    "NVLink (inside a node)", (tnew < 0 ? ln : lo) == COMM_INTER ?
			    " (give it with --net GBPS,US)" : "");
			goto out;
		}
		/* on its own link, its traced time scaled by the model; moved
		 * to another (a data-parallel group now across nodes), the
		 * new link's time: the traced one tells the old link */
		if (ln == lo)
			t->dur = llround((double)t->dur * (double)tnew / (double)told);
		else
			t->dur = tnew;
		t->bytes = bnew;
		t->coll = ctype;
		if (T > 1 && g->fwd && g->size == T) {
			/* its new group: N ranks from where its first one goes */
			const char *s = g->text;
			long long x0;

			t->gsize = size;
			if (next_number(&s, &x0))
				t->pgr = tp_group(c, size * (x0 / T));
		}
	}

	if (n > T)
		nmerged = merge_buckets(c, &k, &m, drop, cap, bucket_link);
	else if (n < T)
		nsplit = split_buckets(c, &k, &m, cap, bucket_link);
	if (n > 1 && (T == 1 || (c->sp1 && !c->sp0))) {
		size_t nm = insert_colls(c, &m, &tm, name);

		made += nm;
		if (nm > 0 && c->hc <= 0 && !c->hc_given)
			warnmsg("%s: section %d: the job launches no collective, so the %zu made "
			    "take no host time to launch: give one's with --launch-us (-v on a "
			    "job of the same framework that has them prints it)", c->name,
			    c->index, nm);
	}
	/* the tensor-parallel rendezvous of the collectives that went */
	{
		size_t w = 0;

		for (i = 0; i < c->ne; i++)
			if (!(c->e[i].kind == KG_E_RANK && drop[c->e[i].src] && drop[c->e[i].dst]))
				c->e[w++] = c->e[i];
		c->ne = w;
	}
	if (c->o->verbose)
		fprintf(stderr, "%s: %s: section %d: %zu GEMMs, %zu attention calls, %zu other "
		    "kernels sharded, %zu optimizer tasks scaled (a rank's parameters x%.4f), %zu "
		    "kernels with shapes kept; "
		    "%zu collectives made; %zu re-timed by the %s%s link's shape (a group of another "
		    "size%s%s); %zu gradient buckets merged into others, %zu made by "
		    "splitting; %zu launches on the host added or taken away (%.1f us each)\n",
		    progname, c->name, c->index, c->ngemm, c->nattn, c->nelt, c->nopt, c->rho,
		    c->nkept,
		    made, nshape,
		    c->o->given.set[COMM_INTRA] ? "given" : "built-in ",
		    c->o->given.set[COMM_INTRA] ? "" : topo,
		    !c->o->given.set[COMM_INTRA] && why[0] ? "; " : "",
		    c->o->given.set[COMM_INTRA] ? "" : why,
		    nmerged, nsplit, c->nhost, (double)c->hc / 1e3);
	rc = 0;
out:
	free(drop);
	colls_release(&k);
	return rc;
}

/* The traced degree: the size of the group that reduces activations. */
int64_t
traced_degree(struct tp *c)
{
	struct colls k;
	int64_t tp;

	colls_find(c, &k);
	tp = k.pg.tp > 1 ? k.pg.tp : 1;
	colls_release(&k);
	return tp;
}
