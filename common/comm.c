#include "comm.h"

#include <math.h>
#include <string.h>

double
comm_steps(int coll, int64_t n)
{
	if (n < 2)
		return 0;
	switch (coll) {
	case KG_COLL_ALLREDUCE:
		return 2.0 * (double)(n - 1);
	case KG_COLL_SEND:
	case KG_COLL_RECV:
	case KG_COLL_SENDRECV:
		return 1;
	default: /* all-gather, reduce-scatter, all-to-all, broadcast, reduce */
		return (double)(n - 1);
	}
}

double
comm_factor(int coll, int64_t n)
{
	if (n < 2)
		return 0;
	switch (coll) {
	case KG_COLL_ALLREDUCE:
		return 2.0 * (double)(n - 1) / (double)n;
	case KG_COLL_ALLGATHER:
	case KG_COLL_REDUCESCATTER:
	case KG_COLL_ALLTOALL:
		return (double)(n - 1) / (double)n;
	default: /* broadcast, reduce, send, receive */
		return 1;
	}
}

/* Fit one class: T = a * x1 + x2 / b over its samples. */
static void
fit_class(const struct comm_sample *s, size_t n, int coll, int link, struct comm_class *c)
{
	double sxx = 0, sxy = 0, syy = 0, sxt = 0, syt = 0, a, p, det, err = 0;
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		double x, y, t;

		if (s[i].coll != coll || s[i].link != link || s[i].n < 2 || s[i].t <= 0)
			continue;
		x = comm_steps(coll, s[i].n);
		y = (double)s[i].bytes * comm_factor(coll, s[i].n);
		t = (double)s[i].t;
		sxx += x * x, sxy += x * y, syy += y * y, sxt += x * t, syt += y * t;
		k++;
	}
	memset(c, 0, sizeof(*c));
	c->samples = k;
	if (k == 0)
		return;
	/* normal equations for T = a x + p y (p = 1 / beta) */
	det = sxx * syy - sxy * sxy;
	a = p = -1;
	if (fabs(det) > 1e-9 * (sxx * syy + 1e-300)) {
		a = (sxt * syy - syt * sxy) / det;
		p = (syt * sxx - sxt * sxy) / det;
	}
	if (a < 0 || p <= 0) {
		/* one term alone: the better of latency only and bandwidth only */
		double a1 = sxx > 0 ? sxt / sxx : 0, p1 = syy > 0 ? syt / syy : 0;
		double e1 = 0, e2 = 0;

		for (i = 0; i < n; i++) {
			double x, y, t;

			if (s[i].coll != coll || s[i].link != link || s[i].n < 2 || s[i].t <= 0)
				continue;
			x = comm_steps(coll, s[i].n);
			y = (double)s[i].bytes * comm_factor(coll, s[i].n);
			t = (double)s[i].t;
			e1 += (a1 * x - t) * (a1 * x - t);
			e2 += (p1 * y - t) * (p1 * y - t);
		}
		/* latency alone unless bandwidth does clearly better (the
		 * same fit either way: the sizes do not tell them apart) */
		if (p1 > 0 && e2 < 0.99 * e1)
			a = 0, p = p1;
		else
			a = a1, p = 0;
	}
	c->alpha = a;
	c->beta = p > 0 ? 1 / p : 0;
	for (i = 0; i < n; i++) {
		double x, y, t;

		if (s[i].coll != coll || s[i].link != link || s[i].n < 2 || s[i].t <= 0)
			continue;
		x = comm_steps(coll, s[i].n);
		y = (double)s[i].bytes * comm_factor(coll, s[i].n);
		t = (double)s[i].t;
		err += fabs(a * x + p * y - t) / t;
	}
	c->mape = 100 * err / (double)k;
}

void
comm_fit(const struct comm_sample *s, size_t n, struct comm_model *m)
{
	int c, l;

	memset(m, 0, sizeof(*m));
	for (c = 1; c < KG_NCOLL; c++)
		for (l = 0; l < COMM_NLINK; l++)
			fit_class(s, n, c, l, &m->c[c][l]);
}

int64_t
comm_time(const struct comm_model *m, int coll, int64_t n, uint64_t bytes, int link,
    int *approx)
{
	const struct comm_class *c;

	*approx = 0;
	if (coll <= KG_COLL_NONE || coll >= KG_NCOLL || link < 0 || link >= COMM_NLINK)
		return -1;
	c = &m->c[coll][link];
	if (c->samples == 0) {
		c = &m->c[coll][!link];
		*approx = 1;
		if (c->samples == 0)
			return -1;
	}
	return llround(c->alpha * comm_steps(coll, n) +
	    (c->beta > 0 ? (double)bytes * comm_factor(coll, n) / c->beta : 0));
}
