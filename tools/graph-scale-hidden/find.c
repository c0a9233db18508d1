/*
 * The traced sizes, from the operators that state them: the hidden size
 * is what the layer norms normalise (their input's last dimension); the
 * heads and the head size are attention's query's (its [batch, heads,
 * sequence, head] tensor), with its batch and sequence; the MLP size is
 * the activation's input's last dimension (gelu, silu, relu). Each is
 * taken only when every operator that states it agrees. What the
 * operators state is read by common/reshape.h's rs_stated, as
 * graph-scale-batch reads it; the choosing between them is this file's,
 * and so are the new sizes (hid_target).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "hid.h"
#include "reshape.h"

int
hid_find(const struct rs_op *ops, size_t n, const struct hid_sizes *given,
    struct hid_sizes *out, char *err, size_t errlen)
{
	struct rs_votes norm, attn, act;

	memset(out, 0, sizeof(*out));
	if (rs_stated(ops, n, INT_MAX, &norm, &act, &attn, err, errlen) < 0)
		return -1;
	/* a transformer's structure, whatever sizes are given: attention
	 * (a recommendation model's sizes match by chance), and a norm or
	 * attention's heads to tell the hidden size (below) */
	if (attn.n == 0) {
		snprintf(err, errlen, "not a transformer's structure: %s%s%s",
		    norm.n == 0 ? "no layer norm (layer_norm, rms_norm) with shapes" : "",
		    norm.n == 0 && attn.n == 0 ? ", " : "", attn.n == 0 ? "no attention call "
		    "with shapes (flash, memory-efficient, cuDNN or scaled_dot_product)" : "");
		return -1;
	}
	/* the hidden size */
	if (given->h > 0) {
		out->h = given->h;
	} else if (norm.n > 1 && norm.v[0][0] != norm.v[1][0]) {
		snprintf(err, errlen, "the layer norms disagree on the hidden size (%lld and %lld): "
		    "give --from-hidden", (long long)norm.v[0][0], (long long)norm.v[1][0]);
		return -1;
	} else if (norm.n > 0) {
		out->h = norm.v[0][0];
	} else if (attn.n == 1) {
		out->h = attn.v[0][1] * attn.v[0][3];
	} else {
		snprintf(err, errlen, "cannot find the hidden size: no layer norm or attention "
		    "with shapes (give --from-hidden)");
		return -1;
	}
	/* the heads */
	if (attn.n > 1) {
		snprintf(err, errlen, "the attention calls disagree on batch, heads, sequence or "
		    "head size ([%lld,%lld,%lld,%lld] and [%lld,%lld,%lld,%lld])",
		    (long long)attn.v[0][0], (long long)attn.v[0][1], (long long)attn.v[0][2],
		    (long long)attn.v[0][3], (long long)attn.v[1][0], (long long)attn.v[1][1],
		    (long long)attn.v[1][2], (long long)attn.v[1][3]);
		return -1;
	}
	out->tp = 1;
	if (given->heads > 0) {
		out->heads = given->heads;
		if (out->h % out->heads != 0) {
			snprintf(err, errlen, "--from-heads %lld does not divide the hidden size %lld",
			    (long long)out->heads, (long long)out->h);
			return -1;
		}
		out->hd = out->h / out->heads;
		if (attn.n == 1 && attn.v[0][1] > 0 && out->heads % attn.v[0][1] == 0)
			out->tp = out->heads / attn.v[0][1];
	} else if (attn.n == 1) {
		int64_t rank = attn.v[0][1] * attn.v[0][3];

		/* a rank of a tensor-parallel job holds heads / tp heads */
		if (rank <= 0 || out->h % rank != 0) {
			snprintf(err, errlen, "attention's %lld heads of %lld are not the hidden size "
			    "%lld nor a share of it (give --from-hidden or --from-heads)",
			    (long long)attn.v[0][1], (long long)attn.v[0][3], (long long)out->h);
			return -1;
		}
		out->tp = out->h / rank;
		out->heads = attn.v[0][1] * out->tp;
		out->hd = attn.v[0][3];
	} else {
		snprintf(err, errlen, "cannot find the heads: no attention with shapes (give "
		    "--from-heads)");
		return -1;
	}
	if (attn.n == 1)
		out->b = attn.v[0][0], out->s = attn.v[0][2];
	else if (norm.n == 1 && norm.v[0][1] > 0)
		out->b = norm.v[0][1], out->s = norm.v[0][2];
	/* the MLP size */
	if (given->ffn > 0) {
		out->ffn = given->ffn;
	} else if (act.n > 1) {
		snprintf(err, errlen, "the activations disagree on the MLP size (%lld and %lld): "
		    "give --from-ffn", (long long)act.v[0][0], (long long)act.v[1][0]);
		return -1;
	} else if (act.n == 1) {
		out->ffn = act.v[0][0] * out->tp; /* column-parallel: a share */
	} else {
		snprintf(err, errlen, "cannot find the MLP size: no activation (gelu, silu, relu) "
		    "with shapes (give --from-ffn)");
		return -1;
	}
	if (out->ffn == out->h) {
		snprintf(err, errlen, "the MLP size is the hidden size (%lld): their dimensions "
		    "cannot be told apart", (long long)out->h);
		return -1;
	}
	return 0;
}

int
hid_target(const struct hid_sizes *a, int64_t h, int64_t ffn, int64_t heads,
    struct hid_sizes *b, char *err, size_t errlen)
{
	*b = *a;
	b->h = h;
	if (ffn > 0) {
		b->ffn = ffn;
	} else if (a->ffn * h % a->h == 0) {
		b->ffn = a->ffn * h / a->h;
	} else {
		snprintf(err, errlen, "the traced MLP size %lld over hidden %lld does not give a "
		    "whole MLP size for %lld: give --ffn", (long long)a->ffn, (long long)a->h,
		    (long long)h);
		return -1;
	}
	if (heads > 0) {
		if (h % heads != 0) {
			snprintf(err, errlen, "%lld heads do not divide the hidden size %lld",
			    (long long)heads, (long long)h);
			return -1;
		}
		b->heads = heads;
		b->hd = h / heads;
	} else {
		if (h % a->hd != 0) {
			snprintf(err, errlen, "the traced head size %lld does not divide the hidden "
			    "size %lld: give --heads", (long long)a->hd, (long long)h);
			return -1;
		}
		b->heads = h / a->hd;
	}
	if (b->ffn == b->h) {
		snprintf(err, errlen, "the new MLP size is the hidden size (%lld)", (long long)h);
		return -1;
	}
	if (a->tp > 1 && (b->heads % a->tp != 0 || b->ffn % a->tp != 0)) {
		snprintf(err, errlen, "the tensor-parallel degree %lld does not divide the new %s "
		    "(%lld)", (long long)a->tp, b->heads % a->tp != 0 ? "heads" : "MLP size",
		    (long long)(b->heads % a->tp != 0 ? b->heads : b->ffn));
		return -1;
	}
	return 0;
}
