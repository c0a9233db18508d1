/*
 * graph-scale-hidden's private parts: the traced sizes found from the
 * operators' shapes (find.c), the rules that rewrite an operator's dims
 * for the new sizes (rules.c), graph-scale-hidden(1) states both. The
 * table of the section's (operator, dims) pairs and the times are
 * common/resize.h's, shared with graph-scale-batch. The main file holds
 * the options, the pairs' new dims and the writing; it calls the
 * others, and none calls it.
 */
#ifndef HID_H
#define HID_H

#include <stddef.h>
#include <stdint.h>

#include "reshape.h"

/* A model's sizes: hidden, MLP, heads (all ranks') and head size; the
 * tensor-parallel degree its shapes are sharded by (1 none: each rank
 * holds heads / tp heads, MLP / tp and 3 hidden / tp columns); batch
 * and sequence (0 where not known). */
struct hid_sizes {
	int64_t h, ffn, heads, hd, tp;
	int64_t b, s;
};

/*
 * The traced sizes from the pairs ops[0..n), those given (non-zero in
 * `given`, --from-hidden and the like) taking precedence. 0, or -1 with
 * a one-line reason in err: no shapes, a size not found, sizes that
 * disagree.
 */
int hid_find(const struct rs_op *ops, size_t n, const struct hid_sizes *given,
    struct hid_sizes *out, char *err, size_t errlen);
/*
 * The new sizes: hidden h; ffn (0: the traced ratio kept); heads (0: the
 * traced head size kept). 0, or -1 with the reason: the heads do not
 * divide h, the MLP ratio does not give a whole size.
 */
int hid_target(const struct hid_sizes *a, int64_t h, int64_t ffn, int64_t heads,
    struct hid_sizes *b, char *err, size_t errlen);
/*
 * An operator's dims rewritten from sizes a to sizes b; NULL when they
 * stay the same (or are not dims text). The caller frees the text.
 */
char *hid_rewrite(const char *op, const char *dims, const struct hid_sizes *a,
    const struct hid_sizes *b);

#endif
