/*
 * The fit: per class, XGBoost's gradient-boosted trees on log time, or
 * a roofline where the class has too few samples.
 *
 * Which samples: a class's calls from traces (kernels' own GPU times)
 * when it has any, else its sweep rows (event-pair timings). The
 * roofline is the GPU's: FLOP/s and bytes/s achieved, the 95th
 * percentile over the samples (compute-heavy classes for FLOP/s,
 * memory-bound ones for bytes/s), each class then scaled by the median
 * of its measured over roofline times.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <xgboost/c_api.h>

#include "cli.h"
#include "om.h"
#include "util.h"

static int
cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The q-quantile of v[0..n) (sorts v). */
static double
quantile(double *v, size_t n, double q)
{
	size_t i;

	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_dbl);
	i = (size_t)floor(q * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

#define XGB(call)                                                              \
	do {                                                                   \
		if ((call) != 0) {                                             \
			errmsg("xgboost: %s", XGBGetLastError());              \
			goto fail;                                             \
		}                                                              \
	} while (0)

/* Trees on rows[0..n) of x (OM_NFEAT each) against y; NULL after a message. */
static BoosterHandle
train(const float *x, const float *y, size_t n, const struct fit_opts *o)
{
	DMatrixHandle dm = NULL;
	BoosterHandle b = NULL;
	char v[32];
	int i;

	XGB(XGDMatrixCreateFromMat(x, (bst_ulong)n, OM_NFEAT, NAN, &dm));
	XGB(XGDMatrixSetFloatInfo(dm, "label", y, (bst_ulong)n));
	XGB(XGBoosterCreate(&dm, 1, &b));
	snprintf(v, sizeof(v), "%d", o->nthread);
	XGB(XGBoosterSetParam(b, "nthread", v));
	XGB(XGBoosterSetParam(b, "objective", "reg:squarederror"));
	snprintf(v, sizeof(v), "%d", o->depth);
	XGB(XGBoosterSetParam(b, "max_depth", v));
	snprintf(v, sizeof(v), "%g", o->eta);
	XGB(XGBoosterSetParam(b, "eta", v));
	XGB(XGBoosterSetParam(b, "min_child_weight", "1"));
	XGB(XGBoosterSetParam(b, "tree_method", "exact"));
	XGB(XGBoosterSetParam(b, "seed", "0"));
	XGB(XGBoosterSetParam(b, "verbosity", "0"));
	for (i = 0; i < o->rounds; i++)
		XGB(XGBoosterUpdateOneIter(b, i, dm));
	XGDMatrixFree(dm);
	return b;
fail:
	if (dm != NULL)
		XGDMatrixFree(dm);
	if (b != NULL)
		XGBoosterFree(b);
	return NULL;
}

/* Predicted log times of rows x[0..n); 0, or -1 after a message. */
static int
predict(BoosterHandle b, const float *x, size_t n, float *out)
{
	DMatrixHandle dm = NULL;
	const float *p;
	bst_ulong k;

	XGB(XGDMatrixCreateFromMat(x, (bst_ulong)n, OM_NFEAT, NAN, &dm));
	XGB(XGBoosterPredict(b, dm, 0, 0, 0, &k, &p));
	if (k != n)
		goto fail;
	memcpy(out, p, n * sizeof(*out));
	XGDMatrixFree(dm);
	return 0;
fail:
	if (dm != NULL)
		XGDMatrixFree(dm);
	return -1;
}

/* Mean and 90th percentile of |e|, % */
static void
errors(const float *pred, const float *y, size_t n, double *mean, double *p90)
{
	double *e = xmalloc((n > 0 ? n : 1) * sizeof(*e)), s = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		e[i] = fabs(exp((double)pred[i] - (double)y[i]) - 1) * 100;
		s += e[i];
	}
	*mean = n > 0 ? s / (double)n : 0;
	*p90 = n > 0 ? quantile(e, n, 0.9) : 0;
	free(e);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The class's operators: the names of its samples', once each. */
static void
set_ops(const struct calls *cs, const size_t *idx, size_t n, struct om_cls *k)
{
	char **v = xmalloc((n + 1) * sizeof(*v));
	size_t i, u = 0;

	for (i = 0; i < n; i++)
		v[i] = cs->c[idx[i]].op;
	qsort(v, n, sizeof(*v), cmp_str);
	k->opname = xmalloc((n + 1) * sizeof(*k->opname));
	k->ops = xmalloc((n + 1) * sizeof(*k->ops));
	for (i = 0; i < n; i++) {
		if (u > 0 && strcmp(k->opname[u - 1], v[i]) == 0)
			continue;
		if (*v[i] == '\0' || strchr(v[i], ' ') != NULL)
			continue; /* no name, or one the file cannot hold */
		k->opname[u] = xstrndup(v[i], strlen(v[i]));
		k->ops[u++] = om_opcode(v[i]);
	}
	k->nops = u;
	qsort(k->ops, u, sizeof(*k->ops), cmp_u32);
	free(v);
}

int
fit_model(const struct calls *cs, const struct fit_opts *o, struct om_model *m, char **tree,
    size_t *ntree)
{
	int have_trace[OM_NCLASS] = { 0 }, c, nfall = 0;
	double *fl = xmalloc((cs->n + 1) * sizeof(double));
	double *by = xmalloc((cs->n + 1) * sizeof(double));
	size_t nfl = 0, nby = 0, i, j;
	float *x = xmalloc((cs->n + 1) * OM_NFEAT * sizeof(float));
	float *y = xmalloc((cs->n + 1) * sizeof(float));
	float *p = xmalloc((cs->n + 1) * sizeof(float));
	size_t *idx = xmalloc((cs->n + 1) * sizeof(size_t));
	int rc = 1;

	for (i = 0; i < cs->n; i++)
		if (cs->c[i].src == SRC_TRACE && cs->c[i].d.sized && cs->c[i].us > 0)
			have_trace[cs->c[i].d.cls] = 1;
#define USED(k) (cs->c[k].d.sized && cs->c[k].us > 0 && \
	(cs->c[k].src == SRC_TRACE || !have_trace[cs->c[k].d.cls]))
	/* the roofline: what the GPU achieved */
	for (i = 0; i < cs->n; i++) {
		const struct mcall *k = &cs->c[i];
		double s = k->us * 1e-6;

		if (!USED(i))
			continue;
		if ((k->d.cls == OM_GEMM || k->d.cls == OM_ATTN_FWD || k->d.cls == OM_ATTN_BWD) &&
		    k->d.flops > 0)
			fl[nfl++] = k->d.flops / s;
		else if (k->d.bytes > 0 && k->us >= 1000 && (k->d.cls == OM_NORM ||
		    k->d.cls == OM_ELTWISE || k->d.cls == OM_SOFTMAX || k->d.cls == OM_OPTIM))
			by[nby++] = k->d.bytes / s;
	}
	if (nfl == 0 && nby == 0) {
		errmsg("no calls to fit: the inputs hold no sized operator calls");
		goto out;
	}
	m->flops_s = nfl > 0 ? quantile(fl, nfl, 0.95) : 0;
	/* streaming work of 1 ms or more (large transfers, no launch gaps
	 * in the timing), the best achieved */
	m->bytes_s = nby > 0 ? quantile(by, nby, 1) : 0;
	/* one side missing: a balance point of 100 FLOP a byte */
	if (m->flops_s <= 0)
		m->flops_s = m->bytes_s * 100;
	if (m->bytes_s <= 0)
		m->bytes_s = m->flops_s / 100;
	for (c = 0; c < OM_NCLASS; c++) {
		struct om_cls *k = &m->cls[c];
		size_t n = 0;

		tree[c] = NULL;
		ntree[c] = 0;
		for (i = 0; i < cs->n; i++) {
			if (!USED(i) || cs->c[i].d.cls != c)
				continue;
			for (j = 0; j < OM_NFEAT; j++)
				x[n * OM_NFEAT + j] = (o->feat_mask >> j) & 1 ? cs->c[i].d.x[j] : NAN;
			y[n] = (float)log(cs->c[i].us);
			if (o->ratio)
				y[n] -= (float)log(om_roofline_us(m, &cs->c[i].d));
			idx[n++] = i;
		}
		k->n = (int64_t)n;
		k->cv_mape = -1;
		k->scale = 1;
		set_ops(cs, idx, n, k);
		{
			double *r = xmalloc((n + 1) * sizeof(double));

			for (i = 0; i < n; i++)
				r[i] = cs->c[idx[i]].us / om_roofline_us(m, &cs->c[idx[i]].d);
			if (n > 0)
				k->scale = quantile(r, n, 0.5);
			free(r);
		}
		if (n < (size_t)o->min_trees) {
			/* the roofline, scaled to the class */
			for (i = 0; i < n; i++) {
				const struct om_desc *d = &cs->c[idx[i]].d;

				p[i] = (float)log(om_roofline_us(m, d) * k->scale) -
				    (o->ratio ? (float)log(om_roofline_us(m, d)) : 0);
			}
			errors(p, y, n, &k->mape, &k->p90);
			k->kind = OM_ROOFLINE;
			nfall++;
			continue;
		}
		k->kind = OM_TREES;
		k->ratio = o->ratio;
		if (o->cv) {
			/* 5 folds by index: every fifth sample held out in turn */
			float *xt = xmalloc(n * OM_NFEAT * sizeof(float)), *yt = xmalloc(n * sizeof(float));
			float *xh = xmalloc(n * OM_NFEAT * sizeof(float)), *ph = xmalloc(n * sizeof(float));
			float *pc = xmalloc(n * sizeof(float));
			int f;

			for (f = 0; f < 5; f++) {
				size_t nt = 0, nh = 0;
				BoosterHandle b;

				for (i = 0; i < n; i++) {
					if ((int)(i % 5) == f)
						memcpy(xh + nh++ * OM_NFEAT, x + i * OM_NFEAT,
						    OM_NFEAT * sizeof(float));
					else
						memcpy(xt + nt * OM_NFEAT, x + i * OM_NFEAT,
						    OM_NFEAT * sizeof(float)), yt[nt++] = y[i];
				}
				b = train(xt, yt, nt, o);
				if (b == NULL || predict(b, xh, nh, ph) < 0) {
					if (b != NULL)
						XGBoosterFree(b);
					free(xt), free(yt), free(xh), free(ph), free(pc);
					goto out;
				}
				for (i = 0, nh = 0; i < n; i++)
					if ((int)(i % 5) == f)
						pc[i] = ph[nh++];
				XGBoosterFree(b);
			}
			errors(pc, y, n, &k->cv_mape, &k->p90);
			free(xt), free(yt), free(xh), free(ph), free(pc);
		}
		k->booster = train(x, y, n, o);
		if (k->booster == NULL || predict(k->booster, x, n, p) < 0)
			goto out;
		{
			double p90;

			errors(p, y, n, &k->mape, &p90);
			if (!o->cv)
				k->p90 = p90;
		}
		{
			bst_ulong len;
			const char *buf;

			if (XGBoosterSaveModelToBuffer(k->booster, "{\"format\": \"ubj\"}", &len,
			    &buf) != 0) {
				errmsg("xgboost: %s", XGBGetLastError());
				goto out;
			}
			tree[c] = xmalloc(len + 1);
			memcpy(tree[c], buf, len);
			ntree[c] = len;
		}
	}
#undef USED
	(void)nfall;
	rc = 0;
out:
	free(fl);
	free(by);
	free(x);
	free(y);
	free(p);
	free(idx);
	return rc;
}
