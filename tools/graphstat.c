/*
 * graphstat: what a (simulated) graph stream says about each iteration:
 * its span, Lumos's breakdown (exposed compute, overlapped, exposed
 * communication, other), GPU utilization, measured against simulated,
 * the dependency coverage the stream carries, and the kernels with the
 * most exposed time.
 *
 * Definitions (doc/graphstat.1, DEFINITIONS), the same for measured times
 * (`ts`, `od`) and simulated ones (`ss`, `se`):
 * - The span of iteration N runs from the start of its first task on the
 *   main thread (the one holding the ProfilerSteps) to the latest end of
 *   its tasks on the main thread and on GPU streams.
 * - Compute is the union of the iteration's kernel, memcpy and memset
 *   intervals, communication the union of its collective intervals, both
 *   clipped to the span: overlapped = |comp ∩ comm|, exposed compute =
 *   |comp| - overlapped, exposed communication = |comm| - overlapped,
 *   other = span - |comp ∪ comm|. The four sum to the span.
 * - Utilization: for each 1 ms window from the span's start, the share of
 *   it with at least one GPU task running.
 *
 * State: one section at a time: 64 bytes a task, scratch for the largest
 * iteration, and 8 bytes a string.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commkern.h"
#include "colls.h"
#include "critical.h"
#include "flops.h"
#include "report.h"
#include "kg.h"
#include "psort.h"
#include "span.h"
#include "util.h"

static const char usage[] =
    "graphstat [--json | --csv] [--critical] [--base FILE] [--util FILE] [--colls FILE] [--comm FILE] "
    "[--gpus-per-node N] [--top N] [--device-memory BYTES] [--peak-tflops TFLOPS] [FILE ...]";

static const char help[] =
    "Report iteration time, breakdown and utilization of graph streams,\n"
    "measured and simulated.\n"
    "\n"
    "      --json        one JSON object per (rank, iteration) line\n"
    "      --csv         one CSV row per (rank, iteration), with a header\n"
    "      --critical    report each iteration's critical path instead\n"
    "      --base FILE   compare each iteration's time with the graph stream FILE's\n"
    "      --util FILE   write the 1 ms utilization series to FILE as CSV\n"
    "      --colls FILE  write each collective's waits per rank (job sections) as CSV\n"
    "      --comm FILE   write each collective's transfer time against the fitted\n"
    "                    communication model (job sections) as CSV\n"
    "      --gpus-per-node N  ranks per node, for the model's links (default 8)\n"
    "      --top N       list the N kernels with the most exposed time (default 10)\n"
    "      --device-memory BYTES  the GPU's memory, for whether the predicted\n"
    "                    peak fits (default: the graph's header, where it says)\n"
    "      --peak-tflops TFLOPS  the GPU's dense bf16/fp16 peak, for MFU (default:\n"
    "                    the table's, by the graph's GPU)\n"
    "  -h, --help        this help\n"
    "      --version     the version\n"
    "\n"
    "With no FILE, or FILE -, read standard input. See graphstat(1).\n";

#define WINDOW 1000000 /* ns: utilization windows */
#define UTIL_SERIES_MAX 1000000 /* windows of one view written by --util: 1000 s */

struct opts {
	int fmt;
	int critical;
	struct whatif *wi; /* the what-if report, and the --base rows */
	const char *util, *colls, *comm;
	int top;
	int64_t gpus_per_node;
	int64_t devmem;    /* --device-memory, bytes; 0: the header's */
	double peak;       /* --peak-tflops; 0: the table's */
};

struct iv {
	int64_t a, b;
};

static int
cmp_iv(const void *a, const void *b)
{
	const struct iv *x = a, *y = b;

	if (x->a != y->a)
		return x->a < y->a ? -1 : 1;
	return x->b < y->b ? -1 : x->b > y->b;
}

/* Sort and merge in place; returns the count of disjoint intervals. */
static size_t
merge(struct iv *v, size_t n)
{
	size_t i, k = 0;

	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_iv);
	for (i = 0; i < n; i++) {
		if (v[i].b <= v[i].a)
			continue;
		if (k > 0 && v[i].a <= v[k - 1].b) {
			if (v[i].b > v[k - 1].b)
				v[k - 1].b = v[i].b;
		} else {
			v[k++] = v[i];
		}
	}
	return k;
}

static int64_t
total(const struct iv *v, size_t n)
{
	int64_t s = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += v[i].b - v[i].a;
	return s;
}

/* |x ∩ y| for two merged lists. */
static int64_t
overlap(const struct iv *x, size_t nx, const struct iv *y, size_t ny)
{
	size_t i = 0, j = 0;
	int64_t s = 0;

	while (i < nx && j < ny) {
		int64_t a = x[i].a > y[j].a ? x[i].a : y[j].a;
		int64_t b = x[i].b < y[j].b ? x[i].b : y[j].b;

		if (b > a)
			s += b - a;
		if (x[i].b < y[j].b)
			i++;
		else
			j++;
	}
	return s;
}

/* |iv ∩ x| for one interval and a merged list: from the first of x that ends after iv starts. */
static int64_t
overlap1(struct iv iv, const struct iv *x, size_t nx)
{
	size_t lo = 0, hi = nx;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (x[mid].b <= iv.a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return overlap(&iv, 1, x + lo, nx - lo);
}

struct section {
	char net[512];    /* a network a what-if tool assumed (its tools entry) */
	struct commkern_memo ckm; /* kernel names' communication classes */
	struct stask *t;
	size_t n, cap;
	uint8_t *pkind;   /* per proc: KG_THREAD / KG_STREAM */
	uint8_t *pmain;
	int64_t *prank;   /* per proc: its rank (a job section's procs have one) */
	size_t np, capp, capm, capr;
	int64_t rank;
	int job;          /* a job section: report each rank and the job */
	int sim;          /* every task has ss/se */
	int usim;         /* and us/ue: simulated without the profiler's cost */
	struct kg_cov cov;
	/* scratch */
	struct iv *a, *b, *u;
	size_t capa, capb, capu;
	/* exposed time per kernel name, over the section */
	int64_t *expo;
	size_t capexpo;
	struct colls colls; /* a job section's collectives */
	struct crit crit;   /* with --critical: durations and edges */
	struct memtask *mem; /* the tasks with allocator events (kineto2graph's
	                        rule 8): few, kept aside */
	size_t nmem, capmem;
	struct memest me;    /* the predicted peak (memest.h) */
	int64_t devmem;      /* the GPU's memory: --device-memory or the header's */
	struct flops fl;     /* each step's work (flops.h) */
};

/* A task that made allocator events: its rank and iteration, and what it kept. */
struct memtask {
	int64_t rank, it;
	struct mempeak p;
};

static int
cmp_mem_it(const void *a, const void *b)
{
	const struct memtask *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->it < y->it ? -1 : x->it > y->it;
}

/* The most allocated (and reserved) of rank's tasks in iteration it:
 * mem[*k...] sorted, *k advanced past the rows before it. */
static struct mempeak
mem_peak(const struct section *s, size_t *k, int64_t rank, int64_t it)
{
	struct mempeak p = { -1, -1, KG_PH_NONE, -1, -1, KG_NONE, -1 };

	while (*k < s->nmem && (s->mem[*k].rank < rank ||
	    (s->mem[*k].rank == rank && s->mem[*k].it < it)))
		(*k)++;
	for (; *k < s->nmem && s->mem[*k].rank == rank && s->mem[*k].it == it; (*k)++) {
		const struct mempeak *q = &s->mem[*k].p;

		if (q->alloc > p.alloc) {
			int64_t r = p.reserved;

			p = *q;
			if (r > p.reserved)
				p.reserved = r;
		} else if (q->reserved > p.reserved) {
			p.reserved = q->reserved;
		}
	}
	return p;
}

static int
cmp_task_it(const void *a, const void *b)
{
	const struct stask *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->it != y->it)
		return x->it < y->it ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* A task's rank: a job's tasks come rank by rank (graph-deps --merge). */
static int64_t
task_rank(const void *a)
{
	return ((const struct stask *)a)->rank;
}

/*
 * The sum over the 1 ms windows of [start, end) of each one's busy share,
 * from the merged busy intervals u[0..nu) (inside [start, end), sorted):
 * work bounded by the intervals, not by the span, which a task far from
 * the rest (a bad clock) makes absurd. The windows wholly busy count 1
 * each without being visited.
 */
static double
util_sum(const struct iv *u, size_t nu, int64_t start, int64_t end)
{
	uint64_t span = (uint64_t)end - (uint64_t)start, cw = UINT64_MAX, wa, wb;
	uint64_t cbusy = 0;
	double sum = 0;
	size_t j;

#define WLEN(k) ((double)(((k) + 1) * (uint64_t)WINDOW < span ? (uint64_t)WINDOW : \
	span - (k) * (uint64_t)WINDOW))
	for (j = 0; j < nu; j++) {
		uint64_t a = (uint64_t)u[j].a - (uint64_t)start, b = (uint64_t)u[j].b - (uint64_t)start;

		wa = a / WINDOW;
		wb = (b - 1) / WINDOW;
		if (wa != cw) {
			if (cw != UINT64_MAX)
				sum += (double)cbusy / WLEN(cw);
			cw = wa;
			cbusy = 0;
		}
		if (wa == wb) {
			cbusy += b - a;
			continue;
		}
		cbusy += (wa + 1) * WINDOW - a;
		sum += (double)cbusy / WLEN(wa);
		sum += (double)(wb - wa - 1);
		cw = wb;
		cbusy = b - wb * WINDOW;
	}
	if (cw != UINT64_MAX)
		sum += (double)cbusy / WLEN(cw);
#undef WLEN
	return sum;
}

/*
 * One view of iteration tasks t[0..n): span, breakdown, utilization;
 * `simv` picks the simulated times. Exposed time per kernel name is added
 * to expo when non-NULL. Returns 0, or -1 when the iteration has no task
 * on the main thread.
 */
static int
view(struct section *s, const struct stask *t, size_t n, int simv, struct view *v,
    int64_t *expo, FILE *util, int64_t rank, int64_t iter)
{
	size_t i, na = 0, nb = 0, nu = 0;
	int64_t start, end, w;
	struct span sp;

#define TS(x) (simv ? (x)->ss : (x)->ts)
#define TE(x) (simv ? (x)->se : (x)->te)
	span_init(&sp);
	for (i = 0; i < n; i++)
		span_add(&sp, s->pmain[t[i].proc], s->pkind[t[i].proc] == KG_STREAM, TS(&t[i]), TE(&t[i]));
	if (!span_found(&sp))
		return -1;
	start = sp.start;
	end = sp.end;
	memset(v, 0, sizeof(*v));
	v->start = start;
	v->end = end;
	v->span = end - start;
	grow(&s->a, &s->capa, n + 1, sizeof(*s->a));
	grow(&s->b, &s->capb, n + 1, sizeof(*s->b));
	grow(&s->u, &s->capu, 2 * n + 1, sizeof(*s->u));
	for (i = 0; i < n; i++) {
		const struct stask *x = &t[i];
		struct iv iv = { TS(x) > start ? TS(x) : start, TE(x) < end ? TE(x) : end };

		if (s->pkind[x->proc] != KG_STREAM || iv.b <= iv.a)
			continue;
		if (x->kind == KG_COLL)
			s->b[nb++] = iv;
		else
			s->a[na++] = iv;
		s->u[nu++] = iv;
	}
	na = merge(s->a, na);
	nb = merge(s->b, nb);
	nu = merge(s->u, nu);
	v->over = overlap(s->a, na, s->b, nb);
	v->comp = total(s->a, na) - v->over;
	v->comm = total(s->b, nb) - v->over;
	v->other = v->span - total(s->u, nu);
	/* Utilization: busy share of each 1 ms window. */
	if (util == NULL || (uint64_t)end - (uint64_t)start > UTIL_SERIES_MAX * (uint64_t)WINDOW) {
		uint64_t nw = end > start ? ((uint64_t)end - (uint64_t)start - 1) / WINDOW + 1 : 0;

		if (util != NULL)
			warnmsg("rank %lld iteration %lld: %s span of %.0f s: the "
			    "utilization series is not written (more than %d windows)",
			    (long long)rank, (long long)iter, simv ? "simulated" : "measured",
			    (double)((uint64_t)end - (uint64_t)start) / 1e9, UTIL_SERIES_MAX);
		v->util = nw ? util_sum(s->u, nu, start, end) / (double)nw : 0;
	} else {
		size_t k = 0, nw = 0;
		double sum = 0;

		for (w = start; w < end; w += WINDOW) {
			int64_t we = w + WINDOW < end ? w + WINDOW : end, busy = 0;
			size_t j;

			while (k < nu && s->u[k].b <= w)
				k++;
			for (j = k; j < nu && s->u[j].a < we; j++) {
				int64_t a = s->u[j].a > w ? s->u[j].a : w;
				int64_t b = s->u[j].b < we ? s->u[j].b : we;

				if (b > a)
					busy += b - a;
			}
			sum += (double)busy / (double)(we - w);
			nw++;
			if (util != NULL)
				fprintf(util, "%lld,%lld,%s,%.3f,%.4f\n", (long long)rank,
				    (long long)iter, simv ? "simulated" : "measured",
				    (double)(w - start) / 1e6, (double)busy / (double)(we - w));
		}
		v->util = nw ? sum / (double)nw : 0;
	}
	/* Exposed time per kernel: its interval less the other kind's union. */
	if (expo != NULL)
		for (i = 0; i < n; i++) {
			const struct stask *x = &t[i];
			struct iv iv = { TS(x) > start ? TS(x) : start, TE(x) < end ? TE(x) : end };

			if (s->pkind[x->proc] != KG_STREAM || iv.b <= iv.a)
				continue;
			if (x->kind == KG_COLL)
				expo[x->name] = sat_add(expo[x->name], (iv.b - iv.a) - overlap1(iv, s->a, na));
			else
				expo[x->name] = sat_add(expo[x->name], (iv.b - iv.a) - overlap1(iv, s->b, nb));
		}
#undef TS
#undef TE
	return 0;
}

/* The span of iteration tasks t[0..n) simulated without the profiler's
 * cost (view's span); -1 when the section has no such run. */
static int64_t
unprofiled_span(const struct section *s, const struct stask *t, size_t n)
{
	struct span sp;
	size_t i;

	if (!s->usim)
		return -1;
	span_init(&sp);
	for (i = 0; i < n; i++)
		span_add(&sp, s->pmain[t[i].proc], s->pkind[t[i].proc] == KG_STREAM, t[i].us, t[i].ue);
	return span_found(&sp) ? sp.end - sp.start : -1;
}

struct rank_kernel {
	int64_t t;
	uint32_t name;
};

static int
cmp_rk(const void *a, const void *b)
{
	const struct rank_kernel *x = a, *y = b;

	if (x->t != y->t)
		return x->t > y->t ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* The `top` kernels of expo[0..nstr) under a heading that says their scope. */
static void
print_top(const struct kg_reader *r, const int64_t *expo, int top, const char *scope)
{
	size_t i, nk = 0, nstr = r->nstr;
	struct rank_kernel *rk = xmalloc((nstr + 1) * sizeof(*rk));

	for (i = 0; i < nstr; i++)
		if (expo[i] > 0)
			rk[nk].t = expo[i], rk[nk++].name = (uint32_t)i;
	if (nk > 1)
		qsort(rk, nk, sizeof(*rk), cmp_rk);
	if (nk > 0)
		printf("  most exposed kernels (%s):\n", scope);
	for (i = 0; i < nk && i < (size_t)top; i++)
		printf("  %10.3f ms  %.100s\n", (double)rk[i].t / 1e6, kg_str(r, rk[i].name));
	free(rk);
}

/*
 * The measured memory peaks (the trace's allocator events) of the rows:
 * each iteration's most allocated and reserved, and the task it was
 * reached in, with its phase, micro-batch and layer; a job's rows give
 * its worst rank.
 */
static void
mem_text(const struct kg_reader *r, const struct row *m, size_t n, int job)
{
	size_t i;

	printf("  memory at its peak (measured, the allocator's events):\n");
	for (i = 0; i < n; i++) {
		const struct mempeak *p = &m[i].mem;

		printf("    ");
		if (job)
			printf("job, rank %lld", (long long)p->rank);
		else if (m[i].rank >= 0)
			printf("rank %lld", (long long)m[i].rank);
		else
			printf("rank -");
		printf(", iteration ");
		if (m[i].iter >= 0)
			printf("%lld", (long long)m[i].iter);
		else
			printf("-");
		printf(": %.3f GiB allocated", (double)p->alloc / 1073741824.0);
		if (p->reserved >= 0)
			printf(", %.3f GiB reserved", (double)p->reserved / 1073741824.0);
		printf(", in %.60s (%s", p->name != KG_NONE ? kg_str(r, p->name) : "-",
		    p->phase > KG_PH_NONE && p->phase < KG_NPHASE ? kg_phase_name[p->phase] :
		    "no phase");
		if (p->mb >= 0)
			printf(", micro-batch %lld", (long long)p->mb);
		if (p->layer >= 0)
			printf(", layer %lld", (long long)p->layer);
		printf(")\n");
	}
}

/* Bytes as GiB, for the text report. */
static double
gib(int64_t b)
{
	return (double)b / 1073741824.0;
}

/*
 * The predicted peaks of the rows (memest.h), their parts, and whether
 * each fits the GPU's memory; what the estimate could not see is said.
 */
static void
pred_text(const struct kg_reader *r, const struct row *m, size_t n, int job)
{
	size_t i;

	if (n == 0)
		return;
	printf("  memory at its peak (predicted, %s):\n", m[0].pred.how == MP_ALLOC ?
	    "the allocator's events replayed in the tasks' order" :
	    "no allocator events: from the forward ops' shapes");
	for (i = 0; i < n; i++) {
		const struct mempred *p = &m[i].pred;

		printf("    ");
		if (m[i].rank == JOB)
			printf("job");
		else if (m[i].rank >= 0)
			printf("rank %lld", (long long)m[i].rank);
		else
			printf("rank -");
		printf(", iteration ");
		if (m[i].iter >= 0)
			printf("%lld", (long long)m[i].iter);
		else
			printf("-");
		printf(": %.3f GiB", gib(p->peak));
		if (m[i].devmem > 0)
			printf(" of %.3f GiB: %s", gib(m[i].devmem),
			    p->peak <= m[i].devmem ? "fits" : "OOM");
		if (m[i].rank == JOB) {
			putchar('\n');
			continue;
		}
		printf(" = parameters %.3f + gradients %.3f + optimizer %.3f + activations %.3f"
		    " + logits and loss %.3f + temporaries %.3f", gib(p->params), gib(p->grads),
		    gib(p->optim), gib(p->act), gib(p->logits), gib(p->temp));
		if (p->phase > KG_PH_NONE && p->phase < KG_NPHASE) {
			printf(", in %s (%s", p->name != KG_NONE ? kg_str(r, p->name) : "-",
			    kg_phase_name[p->phase]);
			if (p->mb >= 0)
				printf(", micro-batch %lld", (long long)p->mb);
			if (p->layer >= 0)
				printf(", layer %lld", (long long)p->layer);
			printf(")");
		}
		putchar('\n');
	}
	(void)job;
	for (i = 0; i < n; i++) {
		const struct mempred *p = &m[i].pred;

		if (m[i].rank == JOB)
			continue;
		if (p->zero > 0)
			printf("    rank %lld: %s, the state divided by %lld\n", (long long)m[i].rank,
			    p->zero == 3 ? "parameters gathered in the forward (FSDP/ZeRO-3)" :
			    "gradients reduce-scattered (ZeRO-2)", (long long)p->shard);
		if (p->mixed) {
			printf("    rank %lld: half-precision parameters: a float master copy and float"
			    " Adam states assumed (mixed precision, 12 bytes a parameter)\n",
			    (long long)m[i].rank);
			break;
		}
	}
	for (i = 0; i < n; i++) {
		const struct mempred *p = &m[i].pred;

		if (m[i].rank == JOB)
			continue;
		if (p->assumed_elem || p->assumed_optim) {
			printf("    assumed:%s%s\n", p->assumed_elem ? " parameters of 4 bytes"
			    " (no element type in the graph)" : "", p->assumed_optim ?
			    (p->assumed_elem ? "; Adam's two states a parameter (no optimizer op"
			    " says which)" : " Adam's two states a parameter (no optimizer op says"
			    " which)") : "");
			break;
		}
	}
	for (i = 0; i < n; i++) {
		const struct mempred *p = &m[i].pred;

		if (m[i].rank != JOB && p->noisy)
			printf("    rank %lld, iteration %lld: allocator events that do not balance:"
			    " %s%lld bytes freed that the window did not see allocated (held at"
			    " the start)\n", (long long)m[i].rank, (long long)m[i].iter,
			    p->unbalanced ? "the step ends away from its start; " : "",
			    (long long)p->early_frees);
	}
	for (i = 0; i < n; i++) {
		const struct mempred *p = &m[i].pred;

		if (m[i].rank != JOB && p->absurd > 0)
			printf("    rank %lld, iteration %lld: %lld allocator events past what a GPU"
			    " holds (a task's bytes past 2^39, or more than 2^22 events in an"
			    " iteration): not used\n", (long long)m[i].rank, (long long)m[i].iter,
			    (long long)p->absurd);
	}
	if (m[0].pred.how == MP_ALLOC && m[0].pred.params == 0)
		printf("    missing: operator shapes (record_shapes): parameters and optimizer state"
		    " not counted, the estimate is the step's allocations alone\n");
	if (m[0].pred.how == MP_SHAPES)
		printf("    missing: allocator events (profile_memory): activations are the"
		    " inputs the forward's operators keep, coarser\n");
	if (m[0].devmem <= 0)
		printf("    the GPU's memory: not in the graph (--device-memory BYTES)\n");
}

static void
report_section(const struct opts *o, struct section *s, const struct kg_reader *r,
    FILE *util, int *header)
{
	size_t i, j, k, nj = 0, capj = 0, nrows = 0, km = 0, nmrows = 0, capmrows = 0;
	size_t nprows = 0, capprows = 0, nsrows = 0, capsrows = 0, nrrows = 0, caprrows = 0;
	size_t nstr = r->nstr;
	struct row *jobs = NULL, *mrows = NULL, *prows = NULL, *srows = NULL, *rrows = NULL;
	/* a job in text: its summary first (job rows, median, memory,
	 * collectives), each rank's rows after it, at the section's end */
	int defer = o->fmt == F_TEXT && s->job && !o->wi->collect;
	/* exposed time per kernel: of each row (rexpo), summed over a rank's
	 * rows (s->expo), and of each job iteration's slowest rank (jexpo) */
	int tops = o->fmt == F_TEXT && o->top > 0 && !o->wi->collect;
	int64_t *rexpo = NULL, *jexpo = NULL, *jrank = NULL, last_iter = -1;
	char scope[128];

	whatif_text(o->wi, r, o->fmt);
	if (s->n > 1)
		psort_grouped(s->t, s->n, sizeof(*s->t), cmp_task_it, task_rank);
	if (s->nmem > 1)
		qsort(s->mem, s->nmem, sizeof(*s->mem), cmp_mem_it);
	grow(&s->expo, &s->capexpo, nstr + 1, sizeof(*s->expo));
	memset(s->expo, 0, (nstr + 1) * sizeof(*s->expo));
	if (tops)
		rexpo = xmalloc((nstr + 1) * sizeof(*rexpo));
	for (i = 0; i < s->n; i = j) {
		struct row row;

		for (j = i; j < s->n && s->t[j].it == s->t[i].it && s->t[j].rank == s->t[i].rank; j++)
			;
		memset(&row, 0, sizeof(row));
		row.rank = s->t[i].rank;
		row.iter = s->t[i].it;
		row.sim = s->sim;
		row.mem = mem_peak(s, &km, row.rank, row.iter);
		row.pred = memest_predict(&s->me, row.rank, row.iter);
		row.devmem = s->devmem > 0 ? s->devmem : -1;
		flops_perf(&s->fl, row.rank, row.iter, &row.perf);
		if (rexpo != NULL)
			memset(rexpo, 0, (nstr + 1) * sizeof(*rexpo));
		if (view(s, s->t + i, j - i, 0, &row.m, s->sim ? NULL : rexpo, util, row.rank,
		    row.iter) < 0)
			continue; /* nothing on the main thread: not an iteration to report */
		if (s->sim)
			view(s, s->t + i, j - i, 1, &row.s, rexpo, util, row.rank, row.iter);
		row.uspan = unprofiled_span(s, s->t + i, j - i);
		if (defer)
			VEC_PUSH(rrows, nrrows, caprrows, row);
		else
			print_row(o->fmt, o->wi, &row, header);
		if (!s->job && o->fmt == F_TEXT)
			VEC_PUSH(srows, nsrows, capsrows, row);
		if (row.mem.alloc >= 0 && !s->job)
			VEC_PUSH(mrows, nmrows, capmrows, row);
		if (row.pred.peak >= 0)
			VEC_PUSH(prows, nprows, capprows, row);
		nrows++;
		last_iter = row.iter;
		if (rexpo != NULL && !s->job)
			for (k = 0; k < nstr; k++)
				s->expo[k] += rexpo[k];
		if (s->job) {
			/* the job's row: its slowest rank, measured and simulated */
			for (k = 0; k < nj && jobs[k].iter != row.iter; k++)
				;
			if (k == nj) {
				grow(&jobs, &capj, nj + 1, sizeof(*jobs));
				jobs[nj++] = row;
				jobs[k].rank = JOB;
				flops_perf(&s->fl, JOB, row.iter, &jobs[k].perf);
				if (rexpo != NULL) {
					jexpo = xrealloc(jexpo, nj * (nstr + 1) * sizeof(*jexpo));
					jrank = xrealloc(jrank, nj * sizeof(*jrank));
					jrank[k] = -2;
				}
			}
			if (rexpo != NULL && (jrank[k] == -2 ||
			    (s->sim ? row.s.span > jobs[k].s.span : row.m.span > jobs[k].m.span))) {
				memcpy(jexpo + k * (nstr + 1), rexpo, (nstr + 1) * sizeof(*rexpo));
				jrank[k] = row.rank;
			}
			if (row.mem.alloc > jobs[k].mem.alloc)
				jobs[k].mem = row.mem; /* the job's most: its worst rank's */
			if (row.pred.peak > jobs[k].pred.peak)
				jobs[k].pred = row.pred;
			if (row.m.span > jobs[k].m.span)
				jobs[k].m = row.m;
			if (row.sim && row.s.span > jobs[k].s.span)
				jobs[k].s = row.s;
			if (row.uspan > jobs[k].uspan)
				jobs[k].uspan = row.uspan; /* the job's: its slowest rank's */
		}
	}
	for (k = 0; k < nj; k++) {
		print_row(o->fmt, o->wi, &jobs[k], header);
		if (jobs[k].mem.alloc >= 0)
			VEC_PUSH(mrows, nmrows, capmrows, jobs[k]);
		if (jobs[k].pred.peak >= 0)
			VEC_PUSH(prows, nprows, capprows, jobs[k]);
	}
	if (o->fmt != F_TEXT || o->wi->collect)
		goto out;
	if (s->job)
		print_median(o->wi, jobs, nj);
	else
		print_median(o->wi, srows, nsrows);
	if (s->job)
		perf_text(o->wi, jobs, nj);
	else
		perf_text(o->wi, srows, nsrows);
	if (nmrows > 0 && !o->wi->edited)
		mem_text(r, mrows, nmrows, s->job);
	pred_text(r, prows, nprows, s->job);
	s->colls.predicted = o->wi->edited;
	colls_text(&s->colls, r, o->top);
	if (o->top > 0)
		colls_comm(&s->colls, NULL, NULL, 1);
	/* Coverage and the kernels with the most exposed time. */
	if (s->cov.n > 0) {
		printf("  coverage:");
		for (i = 0; i < s->cov.n; i++)
			printf(" %s=%lld", s->cov.name[i], (long long)s->cov.val[i]);
		putchar('\n');
	}
	if (s->net[0] != '\0')
		printf("  %s\n", s->net);
	if (tops && s->job) {
		for (k = 0; k < nj; k++) {
			snprintf(scope, sizeof(scope), "%s; rank %lld, iteration %lld: the job's slowest rank",
			    s->sim ? "simulated" : "measured", (long long)jrank[k], (long long)jobs[k].iter);
			print_top(r, jexpo + k * (nstr + 1), o->top, scope);
		}
	} else if (tops && nrows > 0) {
		char rk[32], it[32];

		snprintf(rk, sizeof(rk), s->rank >= 0 ? "%lld" : "-", (long long)s->rank);
		snprintf(it, sizeof(it), last_iter >= 0 ? "%lld" : "-", (long long)last_iter);
		if (nrows > 1) {
			for (k = 0; k < nstr; k++)
				s->expo[k] /= (int64_t)nrows;
			snprintf(scope, sizeof(scope), "%s; rank %s, per iteration: the mean of %zu",
			    s->sim ? "simulated" : "measured", rk, nrows);
		} else {
			snprintf(scope, sizeof(scope), "%s; rank %s, iteration %s",
			    s->sim ? "simulated" : "measured", rk, it);
		}
		print_top(r, s->expo, o->top, scope);
	}
	if (s->job)
		perf_missing(o->wi, jobs, nj);
	else
		perf_missing(o->wi, srows, nsrows);
	if (nrrows > 0) {
		int h = 0;

		printf("  each rank:\n");
		for (k = 0; k < nrrows; k++)
			print_row(o->fmt, o->wi, &rrows[k], &h);
	}
out:
	free(rrows);
	free(srows);
	free(prows);
	free(mrows);
	free(jobs);
	free(rexpo);
	free(jexpo);
	free(jrank);
}

static int
process(const struct opts *o, const char *path, FILE *util, FILE *colls, FILE *comm,
    int *header, int *cheader, int *mheader)
{
	struct gin in;
	struct section s;
	int t;

	if (gin_open(&in, path) < 0)
		return 1;
	memset(&s, 0, sizeof(s));
	kg_cov_init(&s.cov);
	flops_init(&s.fl);
	s.fl.peak_opt = o->peak;
	while ((t = gin_read(&in)) > 0) {
		switch (t) {
		case KG_R_HEADER:
			s.n = s.np = s.nmem = 0;
			commkern_memo_reset(&s.ckm); /* the section's strings are its own */
			memest_reset(&s.me);
			/* --device-memory, else the header's (1.5: the rank's
			 * GPU, from the trace's deviceProperties) */
			s.devmem = o->devmem > 0 ? o->devmem : in.rec.header.gpu_mem > 0 ?
			    in.rec.header.gpu_mem : 0;
			s.rank = in.rec.header.rank;
			s.job = in.rec.header.nranks > 0;
			colls_reset(&s.colls);
			whatif_header(o->wi, &in.rec.header);
			flops_header(&s.fl, &in.rec.header);
			crit_reset(&s.crit);
			s.colls.gpus_per_node = o->gpus_per_node;
			s.sim = s.usim = 0;
			kg_cov_release(&s.cov);
			s.net[0] = '\0';
			for (size_t k = 0; k < in.rec.header.ntools; k++) {
				/* "graph-scale-dp 0.1 assumed network: built-in h100 (...)" */
				const char *tool = in.rec.header.tools[k];
				const char *a = strstr(tool, " assumed network: ");
				size_t len = strlen(s.net);

				if (a != NULL && len + strlen(tool) + 32 < sizeof(s.net))
					snprintf(s.net + len, sizeof(s.net) - len, "%s%.*s: %s",
					    len ? "; " : "network assumed: ", (int)strcspn(tool, " "),
					    tool, a + 18);
			}
			break;
		case KG_R_PROC: {
			size_t c = s.capp;

			grow(&s.pkind, &c, s.np + 1, 1);
			grow(&s.pmain, &s.capm, s.np + 1, 1);
			s.capp = c;
			s.pkind[s.np] = (uint8_t)in.rec.proc.kind;
			s.pmain[s.np] = (uint8_t)in.rec.proc.main;
			grow(&s.prank, &s.capr, s.np + 1, sizeof(*s.prank));
			s.prank[s.np] = in.rec.proc.rank >= 0 ? in.rec.proc.rank : s.rank;
			s.np++;
			break;
		}
		case KG_R_TASK: {
			struct stask x;

			x.ts = in.rec.task.ts;
			x.te = in.rec.task.ts + in.rec.task.odur;
			x.ss = x.se = x.us = x.ue = 0;
			x.it = in.rec.task.iter;
			x.rank = s.prank[in.rec.task.proc];
			/* a stream from before a kernel family was known as
			 * communication: the same table kineto2graph uses */
			if (in.rec.task.kind == KG_KERN && in.rec.task.name != KG_NONE) {
				int cc = commkern_memo(&s.ckm, in.rec.task.name,
				    kg_str(&in.r, in.rec.task.name));

				if (cc >= 0)
					in.rec.task.kind = KG_COLL, in.rec.task.coll = (uint8_t)cc;
			}
			if (in.rec.task.kind == KG_COLL)
				colls_task(&s.colls, in.rec.task.id, in.rec.task.coll, in.rec.task.bytes,
				    in.rec.task.dur);
			if (o->critical)
				crit_task(&s.crit, in.rec.task.dur);
			whatif_task(o->wi, &in.rec.task);
			flops_task(&s.fl, &in.r, &in.rec.task, x.rank);
			memest_task(&s.me, &in.r, &in.rec.task, x.rank,
			    in.rec.task.proc < s.np && s.pkind[in.rec.task.proc] == KG_THREAD);
			if (in.rec.task.mpeak >= 0) {
				struct memtask m;

				m.rank = x.rank, m.it = x.it;
				m.p.alloc = in.rec.task.mpeak, m.p.reserved = in.rec.task.mrpeak;
				m.p.phase = in.rec.task.phase, m.p.mb = in.rec.task.mb;
				m.p.layer = in.rec.task.layer;
				m.p.name = in.rec.task.op != KG_NONE ? in.rec.task.op : in.rec.task.name;
				m.p.rank = x.rank;
				VEC_PUSH(s.mem, s.nmem, s.capmem, m);
			}
			x.proc = in.rec.task.proc;
			x.name = in.rec.task.name;
			x.kind = (uint8_t)in.rec.task.kind;
			VEC_PUSH(s.t, s.n, s.cap, x);
			break;
		}
		case KG_R_SIM:
			/* simulated times by task id (a 1.0 sim record has none) */
			s.sim = in.rec.sim.n > 0 && in.rec.sim.n == s.n;
			s.usim = s.sim && in.rec.sim.uss != NULL;
			for (size_t i = 0; s.sim && i < s.n; i++) {
				s.t[i].ss = in.rec.sim.ss[i];
				s.t[i].se = in.rec.sim.se[i];
				s.t[i].us = s.usim ? in.rec.sim.uss[i] : 0;
				s.t[i].ue = s.usim ? in.rec.sim.use[i] : 0;
			}
			break;
		case KG_R_EDGE:
			if (in.rec.edge.kind == KG_E_RANK)
				colls_edge(&s.colls, in.rec.edge.src, in.rec.edge.dst);
			if (o->critical)
				crit_edge(&s.crit, &in.rec.edge);
			break;
		case KG_R_COV:
			for (size_t i = 0; i < in.rec.cov.n; i++)
				kg_cov_add(&s.cov, in.rec.cov.name[i], in.rec.cov.val[i]);
			break;
		case KG_R_END: {
			span_default_main(s.pmain, s.pkind, s.prank, s.np);
			if (s.n == 0)
				s.sim = s.usim = 0;
			if (o->critical && !o->wi->collect) {
				crit_report(&s.crit, s.t, s.n, s.sim, s.pmain, s.pkind, s.job, &in.r,
				    o->fmt == F_JSON ? CRIT_JSON : o->fmt == F_CSV ? CRIT_CSV : CRIT_TEXT,
				    o->top, header);
				break;
			}
			colls_build(&s.colls, s.t, s.n, s.sim);
			flops_finish(&s.fl, &in.r);
			{
				/* the allocator events replayed in the tasks' order:
				 * simulated where the section has it */
				int64_t *ts = xmalloc((s.n + 1) * sizeof(*ts));
				int64_t *ss = s.sim ? xmalloc((s.n + 1) * sizeof(*ss)) : NULL;

				for (size_t i = 0; i < s.n; i++) {
					ts[i] = s.t[i].ts;
					if (ss != NULL)
						ss[i] = s.t[i].ss;
				}
				memest_order(&s.me, ss, ts, s.n);
				free(ts);
				free(ss);
			}
			report_section(o, &s, &in.r, util, header);
			if (whatif_unrelated(o->wi))
				warnmsg("%s: no iteration and rank in common with the base %s: "
				    "nothing to compare (a graph of another job?)", in.name,
				    o->wi->base);
			if (colls != NULL)
				colls_csv(&s.colls, &in.r, colls, cheader);
			if (comm != NULL)
				colls_comm(&s.colls, comm, mheader, 0);
			break;
		}
		}
	}
	gin_close(&in);
	kg_cov_release(&s.cov);
	free(s.t);
	free(s.pkind);
	commkern_memo_release(&s.ckm);
	free(s.pmain);
	free(s.prank);
	free(s.mem);
	memest_release(&s.me);
	flops_release(&s.fl);
	colls_release(&s.colls);
	crit_release(&s.crit);
	free(s.a);
	free(s.b);
	free(s.u);
	free(s.expo);
	return t < 0;
}

/*
 * A CSV file an option names: made before any input is read, under a
 * temporary name (tools/cli.h), so that it is there whole or not at all.
 */
static FILE *
side_open(struct out *o, const char *path)
{
	/* "-" is a file of that name, as it always was: stdout holds the report */
	return out_open(o, strcmp(path, "-") == 0 ? "./-" : path, 0) < 0 ? NULL : o->fp;
}

/* Renamed into place after a run that went well, checking every write:
 * 0, or 1 after the message; removed after one that did not. */
static int
side_close(struct out *o, int rc)
{
	if (o->fp == NULL)
		return 0;
	if (rc != 0) {
		out_abort(o);
		return 1;
	}
	return out_commit(o);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'J' },
		{ "csv", no_argument, NULL, 'C' },
		{ "critical", no_argument, NULL, 'P' },
		{ "base", required_argument, NULL, 'B' },
		{ "util", required_argument, NULL, 'U' },
		{ "colls", required_argument, NULL, 'K' },
		{ "comm", required_argument, NULL, 'M' },
		{ "gpus-per-node", required_argument, NULL, 'G' },
		{ "top", required_argument, NULL, 'T' },
		{ "device-memory", required_argument, NULL, 'D' },
		{ "peak-tflops", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts o;
	struct whatif wi;
	FILE *util = NULL, *colls = NULL, *comm = NULL;
	struct out uo = { 0 }, co = { 0 }, mo = { 0 };
	int c, i, rc = 0, header = 0, cheader = 0, mheader = 0;
	int64_t v;

	cli_init("graphstat");
	memset(&o, 0, sizeof(o));
	whatif_init(&wi);
	o.wi = &wi;
	o.top = 10;
	o.gpus_per_node = 8;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'J':
		case 'C':
			if (o.fmt != F_TEXT && o.fmt != (c == 'J' ? F_JSON : F_CSV)) {
				errmsg("--json and --csv exclude each other");
				usage_exit(usage);
			}
			o.fmt = c == 'J' ? F_JSON : F_CSV;
			break;
		case 'P':
			o.critical = 1;
			break;
		case 'B':
			wi.base = optarg;
			break;
		case 'U':
			o.util = optarg;
			break;
		case 'K':
			o.colls = optarg;
			break;
		case 'M':
			o.comm = optarg;
			break;
		case 'G':
			if (parse_i64(optarg, 1, 1 << 20, &v) < 0) {
				errmsg("invalid --gpus-per-node '%s'", optarg);
				usage_exit(usage);
			}
			o.gpus_per_node = v;
			break;
		case 'T':
			if (parse_i64(optarg, 0, 100000, &v) < 0) {
				errmsg("invalid --top '%s'", optarg);
				usage_exit(usage);
			}
			o.top = (int)v;
			break;
		case 'D':
			if (parse_i64(optarg, 1, INT64_MAX, &v) < 0) {
				errmsg("invalid --device-memory '%s'", optarg);
				usage_exit(usage);
			}
			o.devmem = v;
			break;
		case 'F': {
			char *end;

			errno = 0;
			o.peak = strtod(optarg, &end);
			if (errno != 0 || end == optarg || *end != '\0' || !(o.peak > 0) ||
			    o.peak > 1e6) {
				errmsg("invalid --peak-tflops '%s'", optarg);
				usage_exit(usage);
			}
			break;
		}
		case 'h':
			printf("usage: %s\n\n%s", usage, help);
			return close_stdout();
		case 'V':
			version_exit();
		default:
			usage_exit(usage);
		}
	}
	argc -= optind;
	argv += optind;
	if ((o.util != NULL && (util = side_open(&uo, o.util)) == NULL) ||
	    (o.colls != NULL && (colls = side_open(&co, o.colls)) == NULL) ||
	    (o.comm != NULL && (comm = side_open(&mo, o.comm)) == NULL)) {
		side_close(&uo, 1), side_close(&co, 1);
		return 1;
	}
	if (wi.base != NULL) { /* the base's rows first, kept, nothing printed */
		int h = 0, ch = 0, mh = 0;

		wi.collect = 1;
		if (process(&o, wi.base, NULL, NULL, NULL, &h, &ch, &mh) != 0) {
			whatif_release(&wi);
			side_close(&uo, 1), side_close(&co, 1), side_close(&mo, 1);
			return 1;
		}
		wi.collect = 0;
	}
	if (util != NULL)
		fprintf(util, "rank,iteration,view,window_ms,busy\n");
	if (argc == 0)
		rc = process(&o, NULL, util, colls, comm, &header, &cheader, &mheader);
	for (i = 0; i < argc; i++)
		rc |= process(&o, argv[i], util, colls, comm, &header, &cheader, &mheader);
	if (colls != NULL && !cheader) /* no job section: the header alone */
		colls_csv(&(struct colls){ 0 }, NULL, colls, &cheader);
	if (comm != NULL && !mheader)
		colls_comm(&(struct colls){ 0 }, comm, &mheader, 0);
	whatif_release(&wi);
	rc |= side_close(&uo, rc);
	rc |= side_close(&co, rc);
	rc |= side_close(&mo, rc);
	if (close_stdout() != 0)
		rc = 1;
	return rc;
}
