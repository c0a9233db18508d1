/*
 * params: what the what-if tools count parameters with: the weight and
 * bias operands of the operators that hold them, from the Input Dims
 * text kineto2graph keeps, and the size of a gradient's element type;
 * and which traced layer a new one copies.
 */
#ifndef KG_PARAMS_H
#define KG_PARAMS_H

#include <stdint.h>

#include "kg.h"

/*
 * What a shape can say: a tensor of more than PARAMS_NUMEL_MAX elements
 * (2^44, sixteen trillion) is not one a GPU holds, and counts 0 (its
 * dims text is taken as unreadable); counts built from shapes stop at
 * PARAMS_SUM_MAX (2^52), so that their products with element sizes and
 * their sums stay far inside int64 whatever a stream's strings say.
 */
#define PARAMS_NUMEL_MAX (INT64_C(1) << 44)
#define PARAMS_SUM_MAX (INT64_C(1) << 52)

/* a + b for counts of 0 or more, at most PARAMS_SUM_MAX */
static inline int64_t
params_add(int64_t a, int64_t b)
{
	if (b < 0)
		b = 0;
	return a > PARAMS_SUM_MAX - b ? PARAMS_SUM_MAX : a + b;
}

/* Is a tensor of numel elements, first and last dimensions, two
 * dimensional ([first, last]), or made of first rows of last? */
static inline int
params_rows(int64_t numel, int64_t first, int64_t last)
{
	return last > 0 && numel % last == 0 && numel / last == first;
}

/*
 * Parameters an operator holds, from its name and its Input Dims text
 * ("[[4096,1024],[1024,1536]]"): aten::mm's second operand, addmm's
 * third and first (a bias), linear's second and third, layer_norm's
 * weight and bias, embedding's table, an aten::add of a vector along the
 * last dimension (a bias); 0 for other operators.
 */
int64_t op_params(const char *op, const char *dims);
/* The same, with the count of parameter operands (tensors) and the
 * largest one's elements, where not NULL. */
int64_t op_params_n(const char *op, const char *dims, int *tensors, int64_t *largest);
/* Bytes of an element of type name dt ("Float", "BFloat16"); 0 unknown. */
int elem_size(const char *dt);
/* Up to max operands of an Input Dims text: each one's elements and first
 * and last dimensions (an empty list, [], counts one element); how many
 * operands it has, at most max. */
int dims_operands(const char *dims, int64_t *numel, int64_t *first, int64_t *last, int max);
/* The element size of each operand of an Input type text (["float",
 * "c10::BFloat16", "Scalar"]), up to max: 0 for what is not a tensor's
 * element type; how many operands it has, at most max. */
int type_sizes(const char *types, int *sz, int max);

/*
 * Parameters of the operators a run of calls launches, fed one task at a
 * time in order: kernel launch calls whose operator has Input Dims count
 * (op_params), an operator launching kernels in a row once.
 */
struct param_count {
	uint32_t op, sh;
	int64_t sum;      /* parameters */
	int64_t tensors;  /* parameter tensors (weights, biases) */
	int tied;         /* set by the caller: an operand as large as an
	                     embedding table counted before is that table used
	                     again (an LM head tied to the embedding) */
	int64_t table[8];
	int ntable;
};
void param_count_init(struct param_count *pc);
void param_count_add(struct param_count *pc, const struct kg_reader *r, const struct kg_task *t);
/*
 * The same for one launch given as its operator and dims texts, and the
 * ids that tell one call from the next (str ids, or any the caller keeps
 * apart): for a tool that counts a model's parameters under new shapes.
 */
void param_count_text(struct param_count *pc, uint32_t opid, uint32_t shid, const char *op,
    const char *dims);

/*
 * Which of a stage's n traced layers its new layer j of nn copies: growing,
 * floor(j n / nn) (every layer once or more, in order); shrinking,
 * round(j (n - 1) / (nn - 1)) (the first and the last kept).
 */
int64_t layer_source(int64_t j, int64_t n, int64_t nn);

#endif
