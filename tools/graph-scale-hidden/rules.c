/*
 * The rules that tell each dimension of an operator's dims what it is
 * (graph-scale-hidden(1), DIMENSIONS): a feature dimension (the last of
 * an activation, both of a weight) is the hidden size, the MLP size or
 * a multiple of the hidden size (the fused query, key and value
 * projection's 3 H) by its value, and becomes the new one; attention's
 * heads and head size are told by their place in a [batch, heads,
 * sequence, head] (or [batch, sequence, heads, head]) tensor; the
 * tokens, batch, sequence, vocabulary and anything else keep their size.
 * Places decide before values: a sequence that equals the hidden size
 * (gpt_L8_H1024's 1024) stays. The roles the rules share with
 * graph-scale-batch's (attention, a GEMM's operands, an index operand)
 * are common/reshape.h's.
 */
#include <stdlib.h>
#include <string.h>

#include "hid.h"
#include "reshape.h"
#include "util.h"

/* A feature dimension's new size. */
static int64_t
feat(const struct hid_sizes *a, const struct hid_sizes *b, int64_t v)
{
	int64_t k;

	if (v == a->h)
		return b->h;
	if (v == a->ffn)
		return b->ffn;
	for (k = 2; k <= 4; k++)
		if (v == k * a->h)
			return k * b->h;
	/* a tensor-parallel rank's share: the MLP's, the projections' */
	if (a->tp > 1 && v == a->ffn / a->tp)
		return b->ffn / a->tp;
	for (k = 1; a->tp > 1 && k <= 4; k++)
		if (k * a->h % a->tp == 0 && v == k * a->h / a->tp)
			return k * b->h / a->tp;
	return v;
}

static int
is_copy(const char *op)
{
	return strcmp(op, "aten::copy_") == 0 || strcmp(op, "aten::_to_copy") == 0;
}

char *
hid_rewrite(const char *op, const char *dims, const struct hid_sizes *a,
    const struct hid_sizes *b)
{
	struct rs_dims d;
	struct rs_tensor ts[64];
	size_t n, i;
	int64_t T = a->b * a->s, *v;
	int gx, gy, changed = 0, linear = strcmp(op, "aten::linear") == 0;
	int emb = strcmp(op, "aten::embedding") == 0 || strcmp(op, "aten::index_select") == 0;
	int attn = rs_is_attention(op);
	int64_t rh = a->heads / a->tp, nrh = b->heads / a->tp; /* a rank's heads */
	int embb = strstr(op, "embedding") != NULL && strstr(op, "backward") != NULL;
	const struct rs_tensor *bsx = NULL, *gt[2];
	int64_t bsxlast = -1, g0[2] = { 0, 0 };

	rs_dims_init(&d);
	if (rs_parse(&d, dims) < 0 || (n = rs_tensors(&d, ts, 64)) > 64) {
		rs_dims_release(&d);
		return NULL;
	}
	rs_gemm_operands(op, &gx, &gy);
	/* the op's [batch, sequence, X] activation, for the lower-rank
	 * operands broadcast against it (a position table added) */
	for (i = 0; i < n && bsx == NULL; i++)
		if (ts[i].rank == 3 && a->b > 0 && d.v[ts[i].at] == a->b &&
		    d.v[ts[i].at + 1] == a->s)
			bsx = &ts[i];
	rs_gemm_tensors(&d, ts, n, gx, gy, gt);
	/* the sizes these rules compare with, before any is rewritten */
	if (bsx != NULL)
		bsxlast = d.v[bsx->at + 2];
	if (gt[0] != NULL)
		g0[0] = d.v[gt[0]->at], g0[1] = d.v[gt[0]->at + 1];
	for (i = 0; i < n; i++) {
		const struct rs_tensor *t = &ts[i];
		int64_t nv[4];
		int k, r = t->rank;

		v = &d.v[t->at];
		if (r == 0 || r > 4 || rs_index_operand(op, t->operand))
			continue;
		for (k = 0; k < r; k++)
			nv[k] = v[k];
		if (r == 4) {
			/* attention: [batch, heads, sequence, head] or
			 * [batch, sequence, heads, head] */
			int hp = -1;

			if (a->b > 0 && v[0] != a->b)
				continue;
			if (v[1] == rh && (a->s == 0 || v[2] == a->s) &&
			    !(v[1] == a->s && v[2] == rh && rs_attention_bshd(op)))
				hp = 1;
			else if (v[2] == rh && (a->s == 0 || v[1] == a->s))
				hp = 2;
			if (hp < 0)
				continue;
			nv[hp] = nrh;
			if (v[3] == a->hd)
				nv[3] = b->hd;
		} else if (r == 3) {
			if (attn && a->b > 0 && v[0] == a->b && v[1] == rh && v[2] == a->s) {
				nv[1] = nrh; /* attention's statistics [batch, heads, sequence] */
			} else if (a->b > 0 && v[0] == a->b * rh && v[0] != a->b) {
				/* unfused attention's batched GEMMs: [batch x
				 * heads, sequence or head, head or sequence] */
				nv[0] = a->b * nrh;
				for (k = 1; k < 3; k++)
					if (v[k] == a->hd && v[k] != a->s)
						nv[k] = b->hd;
			} else {
				nv[2] = feat(a, b, v[2]);
			}
		} else if (r == 2) {
			if (linear && t->operand >= 1) {
				nv[0] = feat(a, b, v[0]);
				nv[1] = feat(a, b, v[1]);
			} else if (t == gt[0] || t == gt[1]) {
				/* a Linear's GEMM, forward ([tokens, in] x
				 * [in, out]), data gradient (the same) or weight
				 * gradient ([out, tokens] x [tokens, in]): the
				 * tokens are the first operand's rows, else the
				 * inner dimension; never the last */
				int tok = -1; /* 0 rows, 1 inner */

				if (T > 0 && g0[0] == T)
					tok = 0;
				else if (T > 0 && g0[1] == T)
					tok = 1;
				if (t == gt[0]) {
					nv[0] = tok == 0 ? v[0] : feat(a, b, v[0]);
					nv[1] = tok == 1 ? v[1] : feat(a, b, v[1]);
				} else {
					nv[0] = tok == 1 ? v[0] : feat(a, b, v[0]);
					nv[1] = feat(a, b, v[1]);
				}
			} else if (emb && t->operand == 0) {
				nv[1] = feat(a, b, v[1]); /* [rows of the table, X] */
			} else if (embb && t->operand == 0) {
				nv[1] = feat(a, b, v[1]); /* [indices, X] */
			} else if (bsx != NULL && t != bsx && v[0] == a->s &&
			    v[1] == bsxlast) {
				nv[1] = feat(a, b, v[1]); /* [sequence, X] */
			} else if (a->b > 0 && v[0] == a->b && v[1] == a->s) {
				; /* [batch, sequence]: tokens */
			} else if (is_copy(op) && feat(a, b, v[0]) != v[0] &&
			    feat(a, b, v[1]) != v[1]) {
				/* a copy of two feature sizes, one of them
				 * equal to the tokens: a weight cast to bf16
				 * ([MLP, hidden] where the MLP size is the
				 * tokens) */
				nv[0] = feat(a, b, v[0]);
				nv[1] = feat(a, b, v[1]);
			} else if (T > 0 && v[0] == T) {
				nv[1] = feat(a, b, v[1]);
			} else if (T > 0 && v[1] == T) {
				nv[0] = feat(a, b, v[0]);
			} else {
				nv[0] = feat(a, b, v[0]);
				nv[1] = feat(a, b, v[1]);
			}
		} else if (r == 1) {
			nv[0] = feat(a, b, v[0]);
		}
		for (k = 0; k < r; k++)
			if (nv[k] != v[k]) {
				v[k] = nv[k];
				changed = 1;
			}
	}
	return rs_rewritten(&d, changed, dims);
}
