/*
 * The traced micro-batch and sequence, from the operators that state
 * them: attention's query (the first operand of an operator whose name
 * holds "attention", a [batch, heads, sequence, head] tensor, [batch,
 * sequence, heads, head] for aten's _flash_attention and
 * _efficient_attention) gives the batch, the sequence, a rank's heads
 * and the head size; a layer norm's input ([batch, sequence, hidden])
 * the hidden size, and the batch and sequence where no attention has
 * shapes; an activation's input (gelu, silu, relu) the MLP size. Each
 * is taken only when every operator that states it agrees.
 */
#include <stdio.h>
#include <string.h>

#include "bat.h"
#include "reshape.h"

struct votes {
	int64_t v[4][4];
	int n;
};

static void
vote(struct votes *vs, const int64_t *v, int k)
{
	int i, j;

	for (i = 0; i < vs->n; i++) {
		for (j = 0; j < k && vs->v[i][j] == v[j]; j++)
			;
		if (j == k)
			return;
	}
	if (vs->n == 4)
		return;
	for (j = 0; j < k; j++)
		vs->v[vs->n][j] = v[j];
	vs->n++;
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
bat_find(const struct hid_op *ops, size_t n, int64_t given_b, int64_t given_s,
    struct bat_sizes *out, char *err, size_t errlen)
{
	struct votes norm, attn, act;
	struct rs_dims d;
	struct rs_tensor ts[64];
	size_t i, shaped = 0;

	memset(&norm, 0, sizeof(norm));
	memset(&attn, 0, sizeof(attn));
	memset(&act, 0, sizeof(act));
	memset(out, 0, sizeof(*out));
	rs_dims_init(&d);
	for (i = 0; i < n; i++) {
		const int64_t *v;

		if (rs_parse(&d, ops[i].dims) < 0 || rs_tensors(&d, ts, 64) == 0)
			continue;
		if (ts[0].rank > 0)
			shaped++;
		v = &d.v[ts[0].at];
		if (is_norm(ops[i].op) && (ts[0].rank == 2 || ts[0].rank == 3)) {
			/* hidden, batch, sequence (0, 0 for [tokens, hidden]) */
			int64_t x[3] = { v[ts[0].rank - 1], 0, 0 };

			if (ts[0].rank == 3)
				x[1] = v[0], x[2] = v[1];
			vote(&norm, x, 3);
		} else if (is_act(ops[i].op) && ts[0].rank >= 2) {
			vote(&act, &v[ts[0].rank - 1], 1);
		} else if (hid_is_attention(ops[i].op) && strstr(ops[i].op, "backward") == NULL &&
		    strstr(ops[i].op, "Backward") == NULL && ts[0].rank == 4) {
			int64_t x[4] = { v[0], v[1], v[2], v[3] };

			if (hid_attention_bshd(ops[i].op))
				x[1] = v[2], x[2] = v[1];
			vote(&attn, x, 4);
		}
	}
	rs_dims_release(&d);
	if (shaped == 0) {
		snprintf(err, errlen, "no operator shapes (the trace was recorded without "
		    "record_shapes): record with torch.profiler.profile(record_shapes=True)");
		return -1;
	}
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
