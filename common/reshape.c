/*
 * reshape: dims text taken apart and written back, strings added to a
 * section, kernels re-timed for new shapes (see reshape.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg.h"
#include "reshape.h"
#include "util.h"

void
rs_dims_init(struct rs_dims *d)
{
	d->v = NULL;
	d->n = d->cap = 0;
}

void
rs_dims_release(struct rs_dims *d)
{
	free(d->v);
	rs_dims_init(d);
}

int
rs_parse(struct rs_dims *d, const char *text)
{
	const char *p = text;
	int depth = 0;

	d->n = 0;
	while (*p == ' ')
		p++;
	if (*p != '[')
		return -1;
	while (*p != '\0') {
		int64_t v;

		if (*p == '[') {
			VEC_PUSH(d->v, d->n, d->cap, (int64_t)RS_OPEN);
			depth++;
			p++;
		} else if (*p == ']') {
			if (depth == 0)
				return -1;
			VEC_PUSH(d->v, d->n, d->cap, (int64_t)RS_CLOSE);
			p++;
			if (--depth == 0)
				break;
		} else if (*p >= '0' && *p <= '9') {
			for (v = 0; *p >= '0' && *p <= '9'; p++) {
				if (v > (INT64_MAX - 9) / 10)
					return -1;
				v = v * 10 + (*p - '0');
			}
			VEC_PUSH(d->v, d->n, d->cap, v);
		} else if (*p == ',' || *p == ' ') {
			p++;
		} else {
			return -1;
		}
	}
	while (*p == ' ')
		p++;
	return depth == 0 && *p == '\0' ? 0 : -1;
}

char *
rs_format(const struct rs_dims *d)
{
	size_t i, k = 0, cap = 21 * d->n + 1;
	char *s = xmalloc(cap);

	for (i = 0; i < d->n; i++) {
		/* a comma between two items of a list: after a value or a ']',
		 * before a value or a '[' */
		if (i > 0 && d->v[i - 1] != RS_OPEN && d->v[i] != RS_CLOSE)
			s[k++] = ',';
		if (d->v[i] == RS_OPEN)
			s[k++] = '[';
		else if (d->v[i] == RS_CLOSE)
			s[k++] = ']';
		else
			k += (size_t)snprintf(s + k, cap - k, "%" PRId64, d->v[i]);
	}
	s[k] = '\0';
	return s;
}

size_t
rs_tensors(const struct rs_dims *d, struct rs_tensor *t, size_t max)
{
	size_t i, n = 0;
	int depth = 0, operand = -1;

	for (i = 0; i < d->n; i++) {
		if (d->v[i] == RS_OPEN) {
			size_t j;
			int rank = 0;

			if (++depth == 2)
				operand++;
			for (j = i + 1; j < d->n && d->v[j] >= 0; j++)
				rank++;
			/* a tensor: a list of values only, below the top */
			if (depth >= 2 && j < d->n && d->v[j] == RS_CLOSE) {
				if (n < max) {
					t[n].at = i + 1;
					t[n].rank = rank;
					t[n].operand = operand;
					t[n].inlist = depth > 2;
				}
				n++;
			}
		} else if (d->v[i] == RS_CLOSE) {
			depth--;
		}
	}
	return n;
}

void
rs_strs_init(struct rs_strs *s, uint32_t base)
{
	intern_init(&s->in);
	s->base = base;
}

void
rs_strs_release(struct rs_strs *s)
{
	intern_release(&s->in);
}

uint32_t
rs_strs_id(struct rs_strs *s, const char *text)
{
	return s->base + intern_get(&s->in, text, strlen(text));
}

/* The elements of every tensor of a dims text (a rank-0 one counts 0); -1
 * when it does not parse. */
static double
elements(const char *text)
{
	struct rs_dims d;
	struct rs_tensor t[64];
	size_t n, i;
	double sum = 0;
	int k;

	rs_dims_init(&d);
	if (rs_parse(&d, text) < 0 || (n = rs_tensors(&d, t, 64)) > 64) {
		rs_dims_release(&d);
		return -1;
	}
	for (i = 0; i < n; i++) {
		double e = t[i].rank > 0;

		for (k = 0; k < t[i].rank; k++)
			e *= (double)d.v[t[i].at + k];
		sum += e;
	}
	rs_dims_release(&d);
	return sum;
}

double
rs_factor(const struct om_model *m, int sms, const struct om_call *c, const char *newdims,
    int *how)
{
	struct om_call nc = *c;
	struct om_desc a, b;
	int va, vb;

	*how = RS_SAME;
	if (c->dims == NULL || newdims == NULL || strcmp(c->dims, newdims) == 0)
		return 1;
	nc.dims = newdims;
	if (m != NULL)
		sms = m->sms;
	if (sms <= 0)
		sms = 132;
	if (c->kind == KG_CPY || c->kind == KG_SET || om_describe(c, sms, &a) < 0 ||
	    om_describe(&nc, sms, &b) < 0) {
		*how = RS_UNSIZED;
		return 1;
	}
	if (!a.sized || !b.sized) {
		/* shapes the model's features do not read (a tensor list,
		 * aten::cat's): the elements of every tensor, as bytes */
		double ea = elements(c->dims), eb = elements(newdims);

		if (a.cls == OM_OPTIM || !(ea > 0) || !(eb > 0)) {
			*how = RS_UNSIZED;
			return 1;
		}
		*how = RS_BYTES;
		return eb / ea;
	}
	/* a class the model predicts worse than RS_CV_MAX % (its own
	 * cross-validated error) gives ratios worse than the work's */
	if (m != NULL && a.cls >= 0 && a.cls < OM_NCLASS && m->cls[a.cls].cv_mape <= RS_CV_MAX) {
		double pa = om_predict(m, &a, &va), pb = om_predict(m, &b, &vb);

		double w = a.flops > 0 && b.flops > 0 ? b.flops / a.flops :
		    a.bytes > 0 && b.bytes > 0 ? b.bytes / a.bytes : 0;

		/* the trees between the shapes they were fitted on are not
		 * monotone: a ratio that says more work takes less time (or
		 * less work more) is their noise, and the work's ratio stands */
		if (pa > 0 && pb > 0 && va == vb &&
		    (w == 0 || (w >= 1) == (pb / pa >= 1) || w == 1)) {
			*how = RS_MODEL;
			return pb / pa;
		}
	}
	if ((a.cls == OM_GEMM || a.cls == OM_ATTN_FWD || a.cls == OM_ATTN_BWD) && a.flops > 0 &&
	    b.flops > 0) {
		*how = RS_FLOPS;
		return b.flops / a.flops;
	}
	if (a.bytes > 0 && b.bytes > 0) {
		*how = RS_BYTES;
		return b.bytes / a.bytes;
	}
	*how = RS_UNSIZED;
	return 1;
}
