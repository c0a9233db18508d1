/*
 * graph-scale-batch's private parts: the traced batch and sequence found
 * from the operators' shapes (find.c) and the rules that rewrite an
 * operator's dims for a new micro-batch size and sequence length
 * (rules.c); graph-scale-batch(1) states both. The table of the
 * section's (operator, dims) pairs and the times are common/resize.h's,
 * shared with graph-scale-hidden.
 */
#ifndef BAT_H
#define BAT_H

#include <stddef.h>
#include <stdint.h>

#include "reshape.h"

/* The sizes the rules read: micro-batch b and sequence s (the traced
 * ones, or the new ones in b and s of the target); the hidden size h,
 * the MLP size ffn (0: not found), a rank's heads rh and the head size
 * hd (0: no attention), the tensor-parallel degree tp. */
struct bat_sizes {
	int64_t b, s, h, ffn, rh, hd, tp;
};

/*
 * The traced sizes from the pairs ops[0..n), a non-zero b or s in
 * `given` (--base-mbs, --base-seq) taking precedence. 0, or -1 with a
 * one-line reason: no shapes, a size not found, sizes that disagree.
 */
int bat_find(const struct rs_op *ops, size_t n, int64_t given_b, int64_t given_s,
    struct bat_sizes *out, char *err, size_t errlen);
/*
 * An operator's dims rewritten from the traced sizes a to micro-batch
 * nb and sequence ns; NULL when they stay the same (or are not dims
 * text). The caller frees the text.
 */
char *bat_rewrite(const char *op, const char *dims, const struct bat_sizes *a, int64_t nb,
    int64_t ns);

#endif
