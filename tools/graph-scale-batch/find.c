/*
 * The traced micro-batch and sequence, from the operators that state
 * them: attention's query (the first operand of an operator whose name
 * holds "attention", a [batch, heads, sequence, head] tensor, [batch,
 * sequence, heads, head] for aten's _flash_attention and
 * _efficient_attention) gives the batch, the sequence, a rank's heads
 * and the head size; a layer norm's input ([batch, sequence, hidden])
 * the hidden size, and the batch and sequence where no attention has
 * shapes; an activation's input (gelu, silu, relu) the MLP size. Each
 * is taken only when every operator that states it agrees. What the
 * operators state is read by common/reshape.h's rs_stated, as
 * graph-scale-hidden reads it (a layer norm's input of rank 2 or 3
 * here); the choosing between them is this file's.
 */
#include <stdio.h>
#include <string.h>

#include "bat.h"
#include "reshape.h"

int
bat_find(const struct rs_op *ops, size_t n, int64_t given_b, int64_t given_s,
    struct bat_sizes *out, char *err, size_t errlen)
{
	struct rs_votes norm, attn, act;

	memset(out, 0, sizeof(*out));
	if (rs_stated(ops, n, 3, &norm, &act, &attn, err, errlen) < 0)
		return -1;
	if (attn.n > 1) {
		snprintf(err, errlen, "the attention calls disagree on batch, heads, sequence or "
		    "head size ([%lld,%lld,%lld,%lld] and [%lld,%lld,%lld,%lld]): give --base-mbs "
		    "and --base-seq", (long long)attn.v[0][0], (long long)attn.v[0][1],
		    (long long)attn.v[0][2], (long long)attn.v[0][3], (long long)attn.v[1][0],
		    (long long)attn.v[1][1], (long long)attn.v[1][2], (long long)attn.v[1][3]);
		if (given_b == 0 || given_s == 0)
			return -1;
	}
	if (norm.n > 1 && norm.v[0][0] != norm.v[1][0]) {
		snprintf(err, errlen, "the layer norms disagree on the hidden size (%lld and %lld)",
		    (long long)norm.v[0][0], (long long)norm.v[1][0]);
		return -1;
	}
	if (norm.n > 0)
		out->h = norm.v[0][0];
	if (act.n == 1)
		out->ffn = act.v[0][0];
	out->tp = 1;
	if (attn.n == 1) {
		out->b = attn.v[0][0], out->s = attn.v[0][2];
		out->rh = attn.v[0][1], out->hd = attn.v[0][3];
		if (out->h > 0 && out->rh * out->hd > 0 && out->h % (out->rh * out->hd) == 0)
			out->tp = out->h / (out->rh * out->hd);
		if (out->ffn > 0 && out->tp > 1)
			out->ffn *= out->tp; /* column-parallel: a share */
	} else if (norm.n == 1 && norm.v[0][1] > 0) {
		out->b = norm.v[0][1], out->s = norm.v[0][2];
	}
	if (given_b > 0)
		out->b = given_b;
	if (given_s > 0)
		out->s = given_s;
	if (out->b == 0 || out->s == 0) {
		snprintf(err, errlen, "cannot find the traced %s: no attention or layer norm with "
		    "a [batch, sequence, hidden] input (give %s)",
		    out->b == 0 && out->s == 0 ? "micro-batch size and sequence" :
		    out->b == 0 ? "micro-batch size" : "sequence length",
		    out->b == 0 && out->s == 0 ? "--base-mbs and --base-seq" :
		    out->b == 0 ? "--base-mbs" : "--base-seq");
		return -1;
	}
	return 0;
}
