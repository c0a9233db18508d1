/*
 * reshape: dims text taken apart and written back, strings added to a
 * section, kernels re-timed for new shapes, and what two tools' rules
 * read alike: operators' roles and the sizes they state (see reshape.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

int64_t
rs_first_numel(const char *d)
{
	int64_t n = 1, v = 0;
	int num = 0, any = 0;

	if (d == NULL || d[0] != '[' || d[1] != '[')
		return 0;
	for (d += 2; *d != '\0' && *d != ']'; d++) {
		if (*d >= '0' && *d <= '9') {
			if (v < INT64_MAX / 16)
				v = v * 10 + (*d - '0');
			num = 1;
		} else if (*d == ',' && num) {
			n *= v, v = 0, num = 0, any = 1;
		}
	}
	if (num)
		n *= v, any = 1;
	return any ? n : 0;
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

char *
rs_rewritten(struct rs_dims *d, int changed, const char *dims)
{
	char *s;

	if (!changed) {
		rs_dims_release(d);
		return NULL;
	}
	s = rs_format(d);
	rs_dims_release(d);
	if (strcmp(s, dims) == 0) {
		free(s);
		return NULL;
	}
	return s;
}

int
rs_is_attention(const char *op)
{
	const char *p;

	for (p = op; *p != '\0'; p++)
		if (strncasecmp(p, "attention", 9) == 0)
			return 1;
	return 0;
}

/* aten's private flash and efficient attention take [batch, sequence,
 * heads, head]; scaled_dot_product_* and cuDNN's take [batch, heads,
 * sequence, head]. */
int
rs_attention_bshd(const char *op)
{
	return strstr(op, "scaled_dot_product") == NULL &&
	    (strstr(op, "_flash_attention") != NULL || strstr(op, "_efficient_attention") != NULL);
}

void
rs_gemm_operands(const char *op, int *x, int *y)
{
	*x = *y = -1;
	if (strcmp(op, "aten::mm") == 0 || strcmp(op, "aten::matmul") == 0)
		*x = 0, *y = 1;
	else if (strcmp(op, "aten::addmm") == 0)
		*x = 1, *y = 2;
}

void
rs_gemm_tensors(const struct rs_dims *d, const struct rs_tensor *t, size_t n, int x, int y,
    const struct rs_tensor *gt[2])
{
	size_t i;

	gt[0] = gt[1] = NULL;
	for (i = 0; i < n; i++) {
		if (t[i].rank == 2 && !t[i].inlist && t[i].operand == x)
			gt[0] = &t[i];
		if (t[i].rank == 2 && !t[i].inlist && t[i].operand == y)
			gt[1] = &t[i];
	}
	if (gt[0] == NULL || gt[1] == NULL || d->v[gt[0]->at + 1] != d->v[gt[1]->at])
		gt[0] = gt[1] = NULL;
}

int
rs_index_operand(const char *op, int i)
{
	if (strstr(op, "embedding") != NULL)
		return i == 1;
	if (strcmp(op, "aten::index_select") == 0)
		return i == 2;
	if (strcmp(op, "aten::nll_loss_forward") == 0 || strcmp(op, "aten::nll_loss") == 0 ||
	    strcmp(op, "aten::nll_loss_nd") == 0 || strcmp(op, "aten::cross_entropy_loss") == 0)
		return i == 1;
	if (strcmp(op, "aten::nll_loss_backward") == 0)
		return i == 2;
	return 0;
}

static void
vote(struct rs_votes *vs, const int64_t *v, int k, int64_t cnt)
{
	int i, j;

	for (i = 0; i < vs->n; i++) {
		for (j = 0; j < k && vs->v[i][j] == v[j]; j++)
			;
		if (j == k) {
			vs->cnt[i] += cnt;
			return;
		}
	}
	if (vs->n == 4) {
		vs->more = 1;
		return;
	}
	for (j = 0; j < k; j++)
		vs->v[vs->n][j] = v[j];
	vs->cnt[vs->n++] = cnt;
}

static int
is_norm(const char *op)
{
	return strcmp(op, "aten::layer_norm") == 0 || strcmp(op, "aten::native_layer_norm") == 0 ||
	    strcmp(op, "aten::rms_norm") == 0 || strcmp(op, "aten::_fused_rms_norm") == 0;
}

static int
is_act(const char *op)
{
	return strcmp(op, "aten::gelu") == 0 || strcmp(op, "aten::silu") == 0 ||
	    strcmp(op, "aten::relu") == 0 || strcmp(op, "aten::gelu_") == 0 ||
	    strcmp(op, "aten::silu_") == 0 || strcmp(op, "aten::relu_") == 0;
}

int
rs_stated(const struct rs_op *ops, size_t n, int normmax, struct rs_votes *norm,
    struct rs_votes *act, struct rs_votes *attn, char *err, size_t errlen)
{
	struct rs_dims d;
	struct rs_tensor ts[64];
	size_t i, shaped = 0;

	memset(norm, 0, sizeof(*norm));
	memset(attn, 0, sizeof(*attn));
	memset(act, 0, sizeof(*act));
	rs_dims_init(&d);
	for (i = 0; i < n; i++) {
		const int64_t *v;

		if (rs_parse(&d, ops[i].dims) < 0 || rs_tensors(&d, ts, 64) == 0)
			continue;
		if (ts[0].rank > 0)
			shaped++;
		v = &d.v[ts[0].at];
		if (is_norm(ops[i].op) && ts[0].rank >= 2 && ts[0].rank <= normmax) {
			/* hidden, batch, sequence (0, 0 for [tokens, hidden]) */
			int64_t x[3] = { v[ts[0].rank - 1], 0, 0 };

			if (ts[0].rank == 3)
				x[1] = v[0], x[2] = v[1];
			vote(norm, x, 3, ops[i].n);
		} else if (is_act(ops[i].op) && ts[0].rank >= 2) {
			vote(act, &v[ts[0].rank - 1], 1, ops[i].n);
		} else if (rs_is_attention(ops[i].op) && strstr(ops[i].op, "backward") == NULL &&
		    strstr(ops[i].op, "Backward") == NULL && ts[0].rank == 4) {
			/* batch, heads, sequence, head */
			int64_t x[4] = { v[0], v[1], v[2], v[3] };

			if (rs_attention_bshd(ops[i].op))
				x[1] = v[2], x[2] = v[1];
			vote(attn, x, 4, ops[i].n);
		}
	}
	rs_dims_release(&d);
	if (shaped == 0) {
		snprintf(err, errlen, "no operator shapes (the trace was recorded without "
		    "record_shapes): record with torch.profiler.profile(record_shapes=True)");
		return -1;
	}
	return 0;
}
