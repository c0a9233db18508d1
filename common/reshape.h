/*
 * reshape: the part of a model-resizing what-if that does not depend on
 * how the model is resized (graph-scale-hidden, graph-scale-tp): an
 * operator's Input Dims text (the `sh` strings kineto2graph keeps, compact
 * JSON such as "[[4,2048,2560],[],[[8,64],[8,64]]]") taken apart into its
 * tensors so that a tool can change their sizes and written back; the
 * strings such a tool adds to a section (ids after the section's own);
 * and the factor a kernel's traced time is multiplied by when its call's
 * shapes change: by an op model, the ratio of its predictions for the new
 * and the old shapes (what the model does not explain of the kernel
 * stays, as graph-retime --from keeps it); without one, the ratio of
 * FLOPs (GEMMs, attention) or of bytes moved (the rest).
 *
 * Which sizes change, and to what, is the caller's: the rules of a
 * resize belong to its tool. What the rules of two tools read alike is
 * here: an operator's role (attention and its layout, a GEMM's operands
 * and their tensors, an index operand) and the sizes the operators state
 * (a layer norm's, an activation's, attention's), which each tool
 * decides between. A dims text that does not parse is left as
 * it is by the caller (rs_parse says so); formatting an unchanged parse
 * gives the text back byte for byte when it was compact JSON, which
 * kineto2graph writes.
 *
 * Ownership: an rs_dims owns its tokens; rs_format's text is the
 * caller's; an rs_strs owns its strings. Nothing here prints or exits.
 */
#ifndef KG_RESHAPE_H
#define KG_RESHAPE_H

#include <stddef.h>
#include <stdint.h>

#include "intern.h"
#include "opmodel.h"

#define RS_OPEN (-1)  /* a token: '[' */
#define RS_CLOSE (-2) /* a token: ']' */

/* Dims text as tokens: RS_OPEN, RS_CLOSE, or a size (>= 0). */
struct rs_dims {
	int64_t *v;
	size_t n, cap;
};

/*
 * A tensor: a list that holds no list (an empty one, [], is a scalar or
 * an absent operand, rank 0). Its sizes are d->v[at .. at + rank).
 * `operand` is the top-level item it is in (a tensor list such as cat's
 * first operand holds several tensors of one operand); `inlist` is set
 * for those.
 */
struct rs_tensor {
	size_t at;
	int rank;
	int operand;
	int inlist;
};

void rs_dims_init(struct rs_dims *d);
void rs_dims_release(struct rs_dims *d);
/* Parse text into d (replacing what it held). 0, or -1: not dims text. */
int rs_parse(struct rs_dims *d, const char *text);
/* The compact JSON text of d, NUL-terminated; the caller frees it. */
char *rs_format(const struct rs_dims *d);
/*
 * The tensors of d, in order, into t[0..max); returns how many there are
 * (more than max when t is too small: call again with more room).
 */
size_t rs_tensors(const struct rs_dims *d, struct rs_tensor *t, size_t max);

/*
 * Strings a tool adds to a section: ids from base on, in order of first
 * use; rs_strs_id gives text's id (an existing string of the section
 * keeps its own id when the caller finds it first). The texts, in id
 * order, are s->in.str[0 .. s->in.n): graph_write's xstr.
 */
struct rs_strs {
	struct intern in;
	uint32_t base;
};
void rs_strs_init(struct rs_strs *s, uint32_t base);
void rs_strs_release(struct rs_strs *s);
uint32_t rs_strs_id(struct rs_strs *s, const char *text);

/*
 * d's text where changed is set and it differs from dims (the caller
 * frees it), else NULL; d released either way: the end of a tool's
 * rewrite of dims.
 */
char *rs_rewritten(struct rs_dims *d, int changed, const char *dims);

/* Does op's name hold "attention" (any case)? */
int rs_is_attention(const char *op);
/* Does attention op take [batch, sequence, heads, head] (aten's private
 * flash and efficient attention), not [batch, heads, sequence, head]? */
int rs_attention_bshd(const char *op);
/* The two operands of a GEMM (-1 none): mm, matmul (a, b); addmm (b, c). */
void rs_gemm_operands(const char *op, int *x, int *y);
/*
 * The GEMM's two rank-2 tensors among t[0..n) of d, operands x and y
 * (not in a list), into gt[0] and gt[1]; both NULL where either is
 * missing or the first's columns are not the second's rows.
 */
void rs_gemm_tensors(const struct rs_dims *d, const struct rs_tensor *t, size_t n, int x,
    int y, const struct rs_tensor *gt[2]);
/* Is operand i of op an index tensor (tokens, positions, targets)? */
int rs_index_operand(const char *op, int i);

/* A distinct (operator, dims) pair of a graph and how many tasks carry it. */
struct rs_op {
	const char *op, *dims;
	int64_t n;
};

/* The distinct values an operator class states, with their task counts. */
struct rs_votes {
	int64_t v[4][4]; /* up to four values (of up to four sizes each) */
	int64_t cnt[4];
	int n, more;     /* more: a fifth value was seen */
};

/*
 * The sizes the pairs ops[0..n) state: a layer norm's input of rank 2 to
 * normmax (hidden, batch, sequence; 0, 0 for [tokens, hidden]), an
 * activation's input (gelu, silu, relu: its last dimension, the MLP
 * size or a share), a forward attention's query (batch, heads,
 * sequence, head, in that order whatever its layout). 0, or -1 with the
 * reason in err: no operator has shapes (a trace recorded without
 * record_shapes).
 */
int rs_stated(const struct rs_op *ops, size_t n, int normmax, struct rs_votes *norm,
    struct rs_votes *act, struct rs_votes *attn, char *err, size_t errlen);

/* The elements of a dims text's first tensor; 0 when it has none. */
int64_t rs_first_numel(const char *dims);

/* A class whose cross-validated error (om_cls.cv_mape) is above this many
 * per cent is re-timed by the work's ratio, not the model's. */
#define RS_CV_MAX 20.0

/* How a factor was found. */
enum { RS_SAME, RS_MODEL, RS_FLOPS, RS_BYTES, RS_UNSIZED };

/*
 * The factor a kernel of call c (its operator, traced dims, longest
 * kernel, kind and bytes: opmodel.h) is scaled by when the call's dims
 * become newdims: with a model m, predicted(new) / predicted(old) (both
 * by the same path, trees or roofline); with m NULL, or a call the model
 * cannot predict, FLOPs new / old for a GEMM or attention call and bytes
 * new / old for the rest (the elements of every tensor where the
 * model's features do not read the shapes: a tensor list), and so for a
 * class whose cross-validated
 * error is above RS_CV_MAX, and where the model's ratio goes against the
 * work's: more work in less time). *how gets RS_MODEL, RS_FLOPS, RS_BYTES;
 * RS_SAME when the dims are the same text (factor 1); RS_UNSIZED (factor
 * 1) when the shapes do not size the call (an optimizer's tensor lists,
 * a copy or set, whose bytes the caller scales), so that the caller
 * decides. `sms`: the GPU's multiprocessors when m is NULL (132, an
 * H100, when not known: the FLOPs and bytes do not depend on it).
 */
double rs_factor(const struct om_model *m, int sms, const struct om_call *c,
    const char *newdims, int *how);

#endif
