/*
 * The rules that tell the batch and the sequence dimensions of an
 * operator's dims (graph-scale-batch(1), DIMENSIONS). Places decide
 * before values: a batch is the first dimension of a rank-3 or rank-4
 * activation followed by the sequence (or by a rank's heads, in
 * attention), the tokens (batch times sequence) are a rank-2 tensor's
 * rows or a GEMM's inner dimension; a feature dimension, a weight, a
 * table's rows (the vocabulary, the positions) keep their size.
 * gpt_L8_H1024's sequence equals its hidden size (1024): a [batch,
 * sequence, hidden] tensor's last dimension stays. The roles the rules
 * share with graph-scale-hidden's (attention, a GEMM's operands, an
 * index operand) are common/reshape.h's.
 */
#include <stdlib.h>
#include <string.h>

#include "bat.h"
#include "reshape.h"
#include "util.h"

/* Is operand i of op a table (an embedding's weight: its rows stay)? */
static int
table_operand(const char *op, int i)
{
	return i == 0 && (strcmp(op, "aten::embedding") == 0 ||
	    strcmp(op, "aten::index_select") == 0 || strcmp(op, "aten::gather") == 0);
}

/* The ops that copy, detach or accumulate a weight as well as an
 * activation: a rank-2 tensor of two feature sizes is a weight there. */
static int
weight_op(const char *op)
{
	return strcmp(op, "aten::copy_") == 0 || strcmp(op, "aten::_to_copy") == 0 ||
	    strcmp(op, "aten::to") == 0 || strcmp(op, "detach") == 0 ||
	    strcmp(op, "aten::detach") == 0 || strcmp(op, "detach_") == 0 ||
	    strcmp(op, "aten::add_") == 0 || strcmp(op, "aten::fill_") == 0 ||
	    strcmp(op, "aten::zero_") == 0;
}

/* Is v a feature size: the hidden size, the MLP size, 2 to 4 times the
 * hidden size, or a tensor-parallel rank's share of one? */
static int
feature(const struct bat_sizes *a, int64_t v)
{
	int64_t k;

	if (v <= 1)
		return 0;
	for (k = 1; a->h > 0 && k <= 4; k++)
		if (v == k * a->h || (a->tp > 1 && k * a->h % a->tp == 0 && v == k * a->h / a->tp))
			return 1;
	return a->ffn > 0 && (v == a->ffn || (a->tp > 1 && v == a->ffn / a->tp));
}

char *
bat_rewrite(const char *op, const char *dims, const struct bat_sizes *a, int64_t nb, int64_t ns)
{
	struct rs_dims d;
	struct rs_tensor ts[64];
	size_t n, i;
	int64_t b = a->b, s = a->s, T = a->b * a->s, nT = nb * ns, *v;
	int gx, gy, tok = -1, changed = 0, attn = rs_is_attention(op);
	int bshd = rs_attention_bshd(op), hass = 0, hasbsx = 0;
	const struct rs_tensor *gt[2];

	rs_dims_init(&d);
	if (rs_parse(&d, dims) < 0 || (n = rs_tensors(&d, ts, 64)) > 64) {
		rs_dims_release(&d);
		return NULL;
	}
	rs_gemm_operands(op, &gx, &gy);
	rs_gemm_tensors(&d, ts, n, gx, gy, gt);
	for (i = 0; i < n; i++) {
		v = &d.v[ts[i].at];
		/* a [sequence] index (positions) or a [batch, sequence, X]
		 * activation: a [sequence, X] tensor beside it is per position */
		if (ts[i].rank == 1 && v[0] == s && rs_index_operand(op, ts[i].operand))
			hass = 1;
		if (ts[i].rank == 3 && v[0] == b && v[1] == s)
			hasbsx = 1;
	}
	/* a GEMM's tokens: the first operand's rows (forward, data
	 * gradient), else the inner dimension (weight gradient) */
	if (gt[0] != NULL && d.v[gt[0]->at] == T)
		tok = 0;
	else if (gt[0] != NULL && d.v[gt[0]->at + 1] == T)
		tok = 1;
	for (i = 0; i < n; i++) {
		const struct rs_tensor *t = &ts[i];
		int64_t nv[4];
		int k, r = t->rank;

		v = &d.v[t->at];
		if (r == 0 || r > 4 || table_operand(op, t->operand))
			continue;
		for (k = 0; k < r; k++)
			nv[k] = v[k];
		if (r == 4) {
			if (v[0] == b && (a->rh == 0 || v[1] == a->rh || v[2] == a->rh)) {
				/* attention: [batch, heads, sequence, head or
				 * sequence or 1] or [batch, sequence, heads, head] */
				nv[0] = nb;
				if (v[1] == s && (v[2] != s || bshd) && (a->rh == 0 || v[2] == a->rh) &&
				    !(v[1] == a->rh && v[2] == s && !bshd)) {
					nv[1] = ns;
				} else if (v[2] == s) {
					nv[2] = ns;
					if (v[3] == s && v[3] != a->hd)
						nv[3] = ns; /* scores */
				}
			} else if (v[0] == s && v[1] == b) {
				nv[0] = ns, nv[1] = nb; /* [sequence, batch, heads, head] */
			}
		} else if (r == 3) {
			if (v[0] == b && v[1] == s) {
				nv[0] = nb, nv[1] = ns; /* [batch, sequence, X] */
			} else if (attn && v[0] == b && v[1] == a->rh && v[2] == s) {
				nv[0] = nb, nv[2] = ns; /* statistics [batch, heads, sequence] */
			} else if (a->rh > 0 && v[0] == b * a->rh && a->rh > 1) {
				/* unfused attention's batched GEMMs: [batch x
				 * heads, sequence or head, head or sequence] */
				nv[0] = nb * a->rh;
				for (k = 1; k < 3; k++)
					if (v[k] == s && v[k] != a->hd)
						nv[k] = ns;
			} else if (v[0] == s && v[1] == b) {
				nv[0] = ns, nv[1] = nb; /* [sequence, batch, X] */
			} else if (v[0] == 1 && v[1] == b && v[2] == s + 1) {
				nv[1] = nb, nv[2] = ns + 1; /* the data: inputs and targets */
			}
		} else if (r == 2) {
			if (t == gt[0] || t == gt[1]) {
				if (t == gt[0] && tok >= 0)
					nv[tok] = nT;
				else if (t == gt[1] && tok == 1)
					nv[0] = nT;
			} else if (gx >= 0) {
				; /* a GEMM's bias, or operands that are not one */
			} else if (v[0] == b && (v[1] == s || v[1] == s + 1)) {
				nv[0] = nb, nv[1] = v[1] == s ? ns : ns + 1; /* [batch, sequence] */
			} else if (weight_op(op) && feature(a, v[0]) && feature(a, v[1])) {
				; /* a weight (where the tokens equal a feature size) */
			} else if (v[0] == T) {
				nv[0] = nT; /* [tokens, X] */
			} else if (v[1] == T && !feature(a, v[1])) {
				nv[1] = nT; /* [X, tokens] */
			} else if (v[0] == s && (hass || hasbsx || strcmp(op, "aten::gather") == 0)) {
				nv[0] = ns; /* [sequence, X]: per position */
			}
		} else if (r == 1) {
			if (rs_index_operand(op, t->operand) && v[0] == T)
				nv[0] = nT;
			else if (rs_index_operand(op, t->operand) && v[0] == s)
				nv[0] = ns;
			else if (v[0] == T && !feature(a, T))
				nv[0] = nT; /* a view of the targets */
		}
		for (k = 0; k < r; k++)
			if (nv[k] != v[k]) {
				v[k] = nv[k];
				changed = 1;
			}
	}
	return rs_rewritten(&d, changed, dims);
}
