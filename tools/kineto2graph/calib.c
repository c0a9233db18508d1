/*
 * The profiler's cost by the step time the job reports unprofiled
 * (--step-time): the cost of one profiled host event such that the
 * section, simulated with each host task shorter by that cost times the
 * events it accounts for (steps.c, profiled_events), has the median
 * step given, as near as the step's noise allows, and otherwise stays
 * near the estimate (fit). The section is built once with a cost of 1 ns
 * an event (each task's `pc` its count), read back into the simulator
 * (common/sim.h), and run again for each cost tried.
 *
 * A step's span is graphstat's (common/span.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "k2g.h"
#include "span.h"
#include "sim.h"
#include "util.h"

#define COST_MAX 10000000 /* ns an event: beyond, every host task is gone */
/*
 * The cost kept is the one that best fits both what is known: the step
 * given, which a step time a job logs knows to about NOISE (1%), and
 * the estimate, which a host's cost is within a factor of SPREAD (2)
 * of (kineto2graph(1), UNPROFILED STEP).
 */
#define NOISE 0.01
#define SPREAD 2.0

struct ctask {
	int64_t it;
	uint32_t proc;
};

struct cal {
	struct sim *s;
	struct ctask *t;
	int64_t *pev, *cut, *step;
	struct span *sp;
	size_t n, cap, capp;
	uint8_t *pmain, *pkind;
	size_t np;
	const int64_t *iters;
	int64_t *itv;
	size_t niters;
};

static int
cmp_i64p(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Iteration it's index among the section's (none: one of all tasks). */
static long
iter_index(const struct cal *c, int64_t it)
{
	size_t lo = 0, hi = c->niters;

	if (c->niters == 0)
		return 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->itv[mid] < it)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->niters && c->itv[lo] == it ? (long)lo : -1;
}

/*
 * Run with cost ns an event; the median step's span, or -1 when the
 * section cannot be simulated. *lo and *hi (if not NULL): the shortest
 * and longest step.
 */
static int64_t
median_step(struct cal *c, int64_t cost, int64_t *lo, int64_t *hi)
{
	size_t ni = c->niters > 0 ? c->niters : 1, i, k;
	int64_t *m = c->step, med;
	struct span *sp = c->sp;
	const int64_t *ss, *se;

	for (i = 0; i < c->n; i++)
		c->cut[i] = c->pev[i] * cost;
	if (sim_run(c->s, c->cut) < 0)
		return -1;
	ss = sim_starts(c->s);
	se = sim_ends(c->s);
	for (i = 0; i < ni; i++)
		span_init(&sp[i]);
	for (i = 0; i < c->n; i++) {
		long x = iter_index(c, c->t[i].it);
		uint32_t p = c->t[i].proc;

		if (x >= 0)
			span_add(&sp[x], c->pmain[p], c->pkind[p] == KG_STREAM, ss[i], se[i]);
	}
	for (i = k = 0; i < ni; i++)
		if (span_found(&sp[i]) && sp[i].end > sp[i].start)
			m[k++] = sp[i].end - sp[i].start;
	if (k == 0)
		return -1;
	qsort(m, k, sizeof(*m), cmp_i64p);
	med = k % 2 ? m[k / 2] : m[k / 2 - 1] + (m[k / 2] - m[k / 2 - 1]) / 2;
	if (lo != NULL)
		*lo = m[0];
	if (hi != NULL)
		*hi = m[k - 1];
	return med;
}

/* How badly cost fits: the step's miss in NOISEs and the cost's distance
 * from the estimate in factors of SPREAD, squared and added; HUGE_VAL
 * when the section cannot be simulated. */
static double
misfit(struct cal *c, int64_t cost, int64_t step, int64_t est)
{
	int64_t m = median_step(c, cost, NULL, NULL);
	double a, b;

	if (m < 0)
		return HUGE_VAL;
	a = ((double)m - (double)step) / (NOISE * (double)step);
	b = log((double)cost / (double)est) / log(SPREAD);
	return a * a + b * b;
}

/*
 * The cost of least misfit: on a grid of half powers of two around the
 * estimate (2^-12 to 2^20 of it), then by golden section between the
 * best point's neighbours. -1 when the section cannot be simulated.
 */
static int64_t
fit(struct cal *c, int64_t step, int64_t est)
{
	const double g = (sqrt(5.0) - 1) / 2;
	double best = HUGE_VAL, lo, hi, x1, x2, f1, f2;
	int k, kb = 0;

	if (est < 1)
		est = 1;
	for (k = -24; k <= 40; k++) {
		double cost = (double)est * pow(2, k / 2.0), f;

		if (cost < 1 || cost > COST_MAX)
			continue;
		f = misfit(c, (int64_t)cost, step, est);
		if (f < best)
			best = f, kb = k;
	}
	if (best == HUGE_VAL)
		return -1;
	lo = (double)est * pow(2, (kb - 1) / 2.0);
	hi = (double)est * pow(2, (kb + 1) / 2.0);
	lo = lo < 1 ? 1 : lo;
	hi = hi > COST_MAX ? COST_MAX : hi;
	x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
	f1 = misfit(c, (int64_t)x1, step, est), f2 = misfit(c, (int64_t)x2, step, est);
	while (hi - lo > 2 && hi - lo > lo * 1e-4) {
		if (f1 <= f2) {
			hi = x2, x2 = x1, f2 = f1;
			x1 = hi - g * (hi - lo);
			f1 = misfit(c, (int64_t)x1, step, est);
		} else {
			lo = x1, x1 = x2, f1 = f2;
			x2 = lo + g * (hi - lo);
			f2 = misfit(c, (int64_t)x2, step, est);
		}
	}
	return (int64_t)((lo + hi) / 2 + 0.5);
}

/* The section written at 1 ns an event, read back. 0, or -1 (err). */
static int
load(struct cal *c, FILE *fp, char *err, size_t errlen)
{
	struct kg_reader r;
	struct kg_rec rec;
	int t, rc = -1;

	kg_reader_init(&r, fp);
	r.no_ahead = 1;
	kg_rec_init(&rec);
	while ((t = kg_read(&r, &rec)) > 0) {
		if (t == KG_R_HEADER) {
			sim_begin(c->s, &rec.header);
			sim_keep(c->s);
			c->niters = rec.header.niters;
			c->itv = xmalloc((c->niters + 1) * sizeof(*c->itv));
			memcpy(c->itv, rec.header.iters, c->niters * sizeof(*c->itv));
			qsort(c->itv, c->niters, sizeof(*c->itv), cmp_i64p);
		} else if (t == KG_R_PROC) {
			grow(&c->pmain, &c->capp, c->np + 1, 1);
			c->pkind = xrealloc(c->pkind, c->capp);
			c->pmain[c->np] = (uint8_t)rec.proc.main;
			c->pkind[c->np] = (uint8_t)rec.proc.kind;
			c->np++;
			sim_proc(c->s, &rec.proc);
		} else if (t == KG_R_TASK) {
			struct ctask x = { rec.task.iter, rec.task.proc };

			if (c->n == c->cap) {
				grow(&c->t, &c->cap, c->n + 1, sizeof(*c->t));
				c->pev = xrealloc(c->pev, c->cap * sizeof(*c->pev));
			}
			c->t[c->n] = x;
			c->pev[c->n++] = rec.task.prof;
			sim_task(c->s, &rec.task);
		} else if (t == KG_R_EDGE) {
			sim_edge(c->s, &rec.edge);
		} else if (t == KG_R_END) {
			rc = 0;
			break;
		}
	}
	if (t < 0)
		snprintf(err, errlen, "the graph read back: %s", r.err);
	if (rc == 0)
		span_default_main(c->pmain, c->pkind, NULL, c->np);
	kg_rec_release(&rec);
	kg_reader_release(&r);
	c->cut = xmalloc((c->n + 1) * sizeof(*c->cut));
	c->step = xmalloc((c->niters + 1) * sizeof(*c->step));
	c->sp = xmalloc((c->niters + 1) * sizeof(*c->sp));
	return rc;
}

int
calibrate(struct trace *t, const struct build_opts *o, int64_t ustep, int64_t *pcost,
    char *err, size_t errlen)
{
	struct build_opts b = *o;
	struct kg_writer w;
	struct kg_cov cov;
	struct cal c;
	FILE *fp = tmpfile();
	int64_t lo, hi, m0, mmax, floor;
	int rc = -1;

	memset(&c, 0, sizeof(c));
	if (fp == NULL) {
		snprintf(err, errlen, "a temporary file: %s", strerror(errno));
		return -1;
	}
	b.pcost = 1, b.pcal = NULL;
	kg_cov_init(&cov);
	if (kg_writer_init(&w, fp, 1) < 0) {
		snprintf(err, errlen, "%s", w.err);
		goto out;
	}
	kg_writer_threads(&w, 1);
	rc = graph_build(t, &b, &w, &cov, err, errlen);
	if (rc == 0 && kg_writer_finish(&w) < 0)
		rc = -2;
	if (rc == -2)
		snprintf(err, errlen, "a temporary file: %s", w.err);
	kg_writer_release(&w);
	if (rc < 0)
		goto out;
	rewind(fp);
	c.s = sim_new(0);
	rc = -1;
	if (load(&c, fp, err, errlen) < 0)
		goto out;
	m0 = median_step(&c, 0, &lo, &hi);
	floor = median_step(&c, COST_MAX, NULL, NULL);
	if (m0 < 0 || floor < 0) {
		snprintf(err, errlen, "--step-time: the trace has no step to calibrate (no "
		    "iteration with a task on its main thread, or one that cannot be simulated)");
		goto out;
	}
	mmax = hi;
	if (ustep > mmax) {
		snprintf(err, errlen, "--step-time %.3f ms is longer than every traced step "
		    "(%.3f to %.3f ms, median %.3f): the profiler cannot have made the step shorter",
		    ustep / 1e6, lo / 1e6, hi / 1e6, m0 / 1e6);
		goto out;
	}
	if (ustep < floor - floor / 100) {
		snprintf(err, errlen, "--step-time %.3f ms is shorter than the trace can run "
		    "without any host time the profiler recorded (%.3f ms: the GPU's own work and "
		    "what waits for it; traced median %.3f ms)", ustep / 1e6, floor / 1e6, m0 / 1e6);
		goto out;
	}
	*pcost = fit(&c, ustep, o->pcost);
	if (*pcost < 0)
		goto out;
	rc = 0;
out:
	kg_cov_release(&cov);
	if (c.s != NULL)
		sim_free(c.s);
	free(c.t), free(c.pev), free(c.cut), free(c.step), free(c.sp), free(c.pmain), free(c.pkind);
	free(c.itv);
	fclose(fp);
	return rc;
}
