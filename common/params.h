/*
 * params: what the what-if tools count parameters with: the weight and
 * bias operands of the operators that hold them, from the Input Dims
 * text kineto2graph keeps, and the size of a gradient's element type.
 */
#ifndef KG_PARAMS_H
#define KG_PARAMS_H

#include <stdint.h>

/*
 * Parameters an operator holds, from its name and its Input Dims text
 * ("[[4096,1024],[1024,1536]]"): aten::mm's second operand, addmm's
 * third and first (a bias), linear's second and third, layer_norm's
 * weight and bias, embedding's table, an aten::add of a vector along the
 * last dimension (a bias); 0 for other operators.
 */
int64_t op_params(const char *op, const char *dims);
/* Bytes of an element of type name dt ("Float", "BFloat16"); 0 unknown. */
int elem_size(const char *dt);

#endif
