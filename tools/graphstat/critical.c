/*
 * critical: graphstat --critical (critical.h).
 *
 * The walk, for an iteration spanning [lo, end): start at the task that
 * ends it, with the cursor T at end. At each task x:
 * - in a job section, when x is a member of a rendezvous group (rank
 *   edges) and another member y started later, x waited for y: x's time
 *   from y's start to T is on the path (its transfer as communication,
 *   the rest of it as waiting on another rank), and the walk goes on at
 *   y, on y's rank, with T at y's start;
 * - else its binding predecessor is the one whose end plus the edge's
 *   delay is latest (the one that released it). x is on the path from
 *   its start, or from that release when later (a synchronizing call
 *   whose traced start was before the GPU work it waited for ended), to
 *   T; then the gap from the predecessor's end to there is launch
 *   latency (a launch edge), host time (a thread or hand-off edge) or
 *   idle (stream, event, sync);
 * - with no predecessor, the rest down to lo is idle.
 * Every link starts where the one before it (in time) ends, so the links
 * tile [lo, end) and sum to the span by construction; the tests check it
 * by summing them, on every shared trace.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "critical.h"
#include "util.h"

enum { L_COMPUTE, L_COMM, L_HOST, L_LAUNCH, L_WAIT, L_IDLE, NLINK };

static const char *const lname[NLINK] = {
	"compute", "communication", "host", "launch", "wait", "idle"
};

static const char *const ltext[NLINK] = {
	"compute", "communication", "host", "launch latency", "waiting on another rank", "idle"
};

struct link {
	int64_t a, b, rank;
	uint32_t task; /* KG_NONE: a gap */
	int kind;
};

/* One (rank, iteration)'s span, and the task that ends it. */
struct span {
	int64_t rank, it, lo, end;
	uint32_t last;
};

void
crit_reset(struct crit *c)
{
	c->ne = c->nd = 0;
}

void
crit_release(struct crit *c)
{
	free(c->e);
	free(c->d);
	memset(c, 0, sizeof(*c));
}

void
crit_task(struct crit *c, int64_t d)
{
	VEC_PUSH(c->d, c->nd, c->capd, d);
}

void
crit_edge(struct crit *c, const struct kg_edge *e)
{
	struct cedge x = { e->src, e->dst, e->delay, e->kind };

	VEC_PUSH(c->e, c->ne, c->cape, x);
}

/* The walk's state for a section. */
struct walk {
	const struct stask *t;
	size_t n;
	int sim;
	const int64_t *d;
	uint32_t *in0, *in;    /* in-edges by destination (CSR): edge indices */
	const struct cedge *e;
	uint32_t *grp, *last;  /* rendezvous group root by task; its latest starter */
	struct link *l;
	size_t nl, capl;
};

#define S(w, i) ((w)->sim ? (w)->t[i].ss : (w)->t[i].ts)
#define E(w, i) ((w)->sim ? (w)->t[i].se : (w)->t[i].te)

static void
push(struct walk *w, int64_t a, int64_t b, int64_t rank, uint32_t task, int kind)
{
	struct link l = { a, b, rank, task, kind };

	if (b > a)
		VEC_PUSH(w->l, w->nl, w->capl, l);
}

/* Task x's time [a, b) on the path, by its kind; a collective's transfer
 * is its last d, the rest of it waiting on another rank. */
static void
push_task(struct walk *w, uint32_t x, int64_t a, int64_t b)
{
	int k = w->t[x].kind;
	int64_t rank = w->t[x].rank;

	if (k == KG_COLL) {
		int64_t m = E(w, x) - w->d[x];

		m = m < a ? a : m > b ? b : m;
		push(w, m, b, rank, x, L_COMM);
		push(w, a, m, rank, x, L_WAIT);
	} else {
		push(w, a, b, rank, x, k == KG_CPU || k == KG_RT ? L_HOST : L_COMPUTE);
	}
}

/* The path of one span into w->l, latest link first. */
static void
walk(struct walk *w, const struct span *sp)
{
	int64_t lo = sp->lo, T = sp->end;
	uint32_t x = sp->last;
	size_t steps = 0, limit = 4 * w->n + 16;

	w->nl = 0;
	while (T > lo && steps++ < limit) {
		uint32_t g = w->grp != NULL ? w->grp[x] : KG_NONE, best = KG_NONE, k, y;
		int64_t a, R = INT64_MIN;

		if (g != KG_NONE && (y = w->last[g]) != x && S(w, y) > S(w, x)) {
			a = S(w, y) > lo ? S(w, y) : lo;
			if (a > T)
				a = T;
			push_task(w, x, a, T);
			T = a;
			x = y;
			continue;
		}
		for (k = w->in0[x]; k < w->in0[x + 1]; k++) {
			const struct cedge *e = &w->e[w->in[k]];
			int64_t r = E(w, e->src) + e->dl;

			if (r > R)
				R = r, best = w->in[k];
		}
		a = S(w, x);
		if (best != KG_NONE && R > a)
			a = R;
		if (a > T)
			a = T;
		if (a < lo)
			a = lo;
		push_task(w, x, a, T);
		T = a;
		if (T <= lo || best == KG_NONE)
			break;
		{
			const struct cedge *e = &w->e[best];
			int64_t ep = E(w, e->src);
			int kind = e->kind == KG_E_LAUNCH ? L_LAUNCH :
			    e->kind == KG_E_THREAD || e->kind == KG_E_HANDOFF ? L_HOST : L_IDLE;

			if (ep < lo)
				ep = lo;
			if (ep < T) {
				push(w, ep, T, w->t[x].rank, KG_NONE, kind);
				T = ep;
			}
			x = e->src;
		}
	}
	if (T > lo)
		push(w, lo, T, w->t[x].rank, KG_NONE, L_IDLE);
}

static int
cmp_span_key(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->it < y->it ? -1 : x->it > y->it;
}

static void
put_id(int64_t v, const char *none)
{
	if (v < 0)
		fputs(none, stdout);
	else
		printf("%lld", (long long)v);
}

struct named {
	int64_t t;
	uint32_t name;
};

static int
cmp_named(const void *a, const void *b)
{
	const struct named *x = a, *y = b;

	if (x->t != y->t)
		return x->t > y->t ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* The `top` names by time on the path, of tasks (gpu: of GPU tasks only). */
static size_t
top_names(const struct walk *w, const struct kg_reader *r, int gpu, int64_t *acc,
    struct named *out, int top)
{
	size_t i, k = 0, nstr = r->nstr;

	memset(acc, 0, (nstr + 1) * sizeof(*acc));
	for (i = 0; i < w->nl; i++) {
		const struct link *l = &w->l[i];

		if (l->task == KG_NONE || (gpu && l->kind == L_HOST))
			continue;
		if (w->t[l->task].name < nstr)
			acc[w->t[l->task].name] += l->b - l->a;
	}
	for (i = 0; i < nstr; i++)
		if (acc[i] > 0)
			out[k].t = acc[i], out[k++].name = (uint32_t)i;
	if (k > 1)
		qsort(out, k, sizeof(*out), cmp_named);
	return k < (size_t)top ? k : (size_t)top;
}

static void
report(struct walk *w, const struct span *sp, int job, const struct kg_reader *r, int fmt,
    int top, int *header)
{
	int64_t bykind[NLINK] = { 0 }, span = sp->end - sp->lo;
	int64_t *ranks, *acc;
	struct named *nm;
	size_t i, nr = 0, nt;
	const char *view = w->sim ? "simulated" : "measured";

	for (i = 0; i < w->nl; i++)
		bykind[w->l[i].kind] += w->l[i].b - w->l[i].a;
	ranks = xmalloc((w->nl + 1) * sizeof(*ranks));
	for (i = 0; i < w->nl; i++) {
		size_t q;

		for (q = 0; q < nr && ranks[q] != w->l[i].rank; q++)
			;
		if (q == nr)
			ranks[nr++] = w->l[i].rank;
	}
	for (i = 1; i < nr; i++) /* few: insertion sort */
		for (size_t q = i; q > 0 && ranks[q - 1] > ranks[q]; q--) {
			int64_t s = ranks[q];

			ranks[q] = ranks[q - 1];
			ranks[q - 1] = s;
		}
	if (fmt == CRIT_CSV) {
		if (!*header) {
			printf("rank,iteration,task,kind,start_ns,end_ns,duration_ns,path,name\n");
			*header = 1;
		}
		for (i = w->nl; i-- > 0;) {
			const struct link *l = &w->l[i];

			put_id(l->rank, "-");
			putchar(',');
			put_id(sp->it, "-");
			putchar(',');
			put_id(l->task == KG_NONE ? -1 : (int64_t)l->task, "-");
			printf(",%s,%lld,%lld,%lld,", lname[l->kind], (long long)l->a, (long long)l->b,
			    (long long)(l->b - l->a));
			if (job)
				fputs("job", stdout);
			else
				put_id(sp->rank, "-");
			putchar(',');
			csv_str(stdout, l->task == KG_NONE ? "" : kg_str(r, w->t[l->task].name));
			putchar('\n');
		}
		free(ranks);
		return;
	}
	acc = xmalloc((r->nstr + 1) * sizeof(*acc));
	nm = xmalloc((r->nstr + 1) * sizeof(*nm));
	if (fmt == CRIT_JSON) {
		printf("{\"rank\":");
		if (job)
			printf("\"job\"");
		else
			put_id(sp->rank, "null");
		printf(",\"iteration\":");
		put_id(sp->it, "null");
		printf(",\"view\":\"%s\",\"start_ns\":%lld,\"end_ns\":%lld,\"span_ns\":%lld,\"ranks\":[",
		    view, (long long)sp->lo, (long long)sp->end, (long long)span);
		for (i = 0; i < nr; i++) {
			if (i)
				putchar(',');
			put_id(ranks[i], "null");
		}
		printf("],\"kinds\":{");
		for (i = 0; i < NLINK; i++)
			printf("%s\"%s_ns\":%lld", i ? "," : "", lname[i], (long long)bykind[i]);
		printf("}");
		for (int gpu = 0; gpu < 2; gpu++) {
			nt = top_names(w, r, gpu, acc, nm, top);
			printf(",\"%s\":[", gpu ? "top_kernels" : "top_tasks");
			for (i = 0; i < nt; i++) {
				const char *s = kg_str(r, nm[i].name);

				printf("%s{\"name\":", i ? "," : "");
				json_str(stdout, s, strlen(s));
				printf(",\"ns\":%lld}", (long long)nm[i].t);
			}
			printf("]");
		}
		printf(",\"links\":[");
		for (i = w->nl; i-- > 0;) {
			const struct link *l = &w->l[i];

			printf("%s{\"rank\":", i + 1 == w->nl ? "" : ",");
			put_id(l->rank, "null");
			printf(",\"task\":");
			put_id(l->task == KG_NONE ? -1 : (int64_t)l->task, "null");
			printf(",\"kind\":\"%s\",\"start_ns\":%lld,\"end_ns\":%lld}", lname[l->kind],
			    (long long)l->a, (long long)l->b);
		}
		printf("]}\n");
	} else {
		printf("critical path, %s", job ? "job" : "rank ");
		if (!job)
			put_id(sp->rank, "-");
		printf(", iteration ");
		put_id(sp->it, "-");
		printf(" (%s): %.3f ms in %zu links, on rank%s", view, (double)span / 1e6, w->nl,
		    nr == 1 ? "" : "s");
		for (i = 0; i < nr; i++) {
			putchar(' ');
			put_id(ranks[i], "-");
		}
		putchar('\n');
		for (i = 0; i < NLINK; i++)
			printf("  %-24s %10.3f ms %6.1f%%\n", ltext[i], (double)bykind[i] / 1e6,
			    span ? 100.0 * (double)bykind[i] / (double)span : 0.0);
		for (int gpu = 0; gpu < 2; gpu++) {
			nt = top_names(w, r, gpu, acc, nm, top);
			if (nt > 0)
				printf("  %s on the path:\n", gpu ? "GPU tasks with the most time" :
				    "tasks with the most time");
			for (i = 0; i < nt; i++)
				printf("  %10.3f ms  %.100s\n", (double)nm[i].t / 1e6, kg_str(r, nm[i].name));
		}
	}
	free(acc);
	free(nm);
	free(ranks);
}

void
crit_report(struct crit *c, const struct stask *t, size_t n, int sim, const uint8_t *pmain,
    const uint8_t *pkind, int job, const struct kg_reader *r, int fmt, int top, int *header)
{
	struct walk w;
	struct span *sp = NULL;
	size_t nsp = 0, capsp = 0, i, j, k;
	uint32_t *tmp;

	if (n == 0 || c->nd != n)
		return;
	memset(&w, 0, sizeof(w));
	w.t = t;
	w.n = n;
	w.sim = sim;
	w.d = c->d;
	w.e = c->e;
	/* in-edges by destination; rank edges make the groups instead */
	w.in0 = xcalloc(n + 1, sizeof(*w.in0));
	w.in = xmalloc((c->ne + 1) * sizeof(*w.in));
	for (i = 0; i < c->ne; i++) {
		if (c->e[i].kind == KG_E_RANK) {
			if (w.grp == NULL) {
				w.grp = xmalloc(n * sizeof(*w.grp));
				for (k = 0; k < n; k++)
					w.grp[k] = (uint32_t)k;
			}
			uf_union(w.grp, c->e[i].src, c->e[i].dst);
		} else {
			w.in0[c->e[i].dst + 1]++;
		}
	}
	for (i = 0; i < n; i++)
		w.in0[i + 1] += w.in0[i];
	tmp = xmalloc((n + 1) * sizeof(*tmp));
	memcpy(tmp, w.in0, (n + 1) * sizeof(*tmp));
	for (i = 0; i < c->ne; i++)
		if (c->e[i].kind != KG_E_RANK)
			w.in[tmp[c->e[i].dst]++] = (uint32_t)i;
	free(tmp);
	if (w.grp != NULL) {
		/* each group's root, and the member that started last */
		w.last = xmalloc(n * sizeof(*w.last));
		for (i = 0; i < n; i++)
			w.last[i] = KG_NONE;
		for (i = 0; i < n; i++) {
			uint32_t g = uf_find(w.grp, (uint32_t)i);

			if (g == i && w.last[i] == KG_NONE)
				w.last[i] = (uint32_t)i;
			if (w.last[g] == KG_NONE || S(&w, i) > S(&w, w.last[g]))
				w.last[g] = (uint32_t)i;
		}
		for (i = 0; i < n; i++) /* a task in no group is its own, and its last */
			w.grp[i] = uf_find(w.grp, (uint32_t)i);
	}
	/* the spans: per (rank, iteration), as graphstat's table has them */
	for (i = 0, k = 0; i < n; i++) {
		int m = pmain[t[i].proc], st = pkind[t[i].proc] == KG_STREAM;

		if (!m && !st)
			continue;
		if (k >= nsp || sp[k].rank != t[i].rank || sp[k].it != t[i].it)
			for (k = nsp; k-- > 0;) /* tasks come in runs: the last one first */
				if (sp[k].rank == t[i].rank && sp[k].it == t[i].it)
					break;
		if (k == (size_t)-1) {
			struct span x = { t[i].rank, t[i].it, INT64_MAX, INT64_MIN, KG_NONE };

			VEC_PUSH(sp, nsp, capsp, x);
			k = nsp - 1;
		}
		if (m && S(&w, i) < sp[k].lo)
			sp[k].lo = S(&w, i);
		if (E(&w, i) >= sp[k].end) {
			sp[k].end = E(&w, i);
			sp[k].last = (uint32_t)i;
		}
	}
	for (i = j = 0; i < nsp; i++)
		if (sp[i].lo != INT64_MAX) /* an iteration has a task on the main thread */
			sp[j++] = sp[i];
	nsp = j;
	if (nsp > 1)
		qsort(sp, nsp, sizeof(*sp), cmp_span_key);
	if (job) {
		/* a job iteration's path: from its slowest rank (the first, on a tie) */
		size_t nj = 0;

		for (i = 0; i < nsp; i++) {
			for (k = 0; k < nj && sp[k].it != sp[i].it; k++)
				;
			if (k == nj)
				sp[nj++] = sp[i];
			else if (sp[i].end - sp[i].lo > sp[k].end - sp[k].lo)
				sp[k] = sp[i];
		}
		nsp = nj;
	}
	for (i = 0; i < nsp; i++) {
		walk(&w, &sp[i]);
		report(&w, &sp[i], job, r, fmt, top, header);
	}
	free(sp);
	free(w.in0);
	free(w.in);
	free(w.grp);
	free(w.last);
	free(w.l);
}
