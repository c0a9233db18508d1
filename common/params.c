/*
 * params: parameters counted from operators' shapes (see params.h).
 */
#include <string.h>

#include "params.h"

/* One parameter operand: counted when present. */
static int64_t
operand(int present, int64_t numel, int *tensors, int64_t *largest)
{
	if (!present)
		return 0;
	if (tensors != NULL)
		(*tensors)++;
	if (largest != NULL && numel > *largest)
		*largest = numel;
	return numel;
}

/*
 * Parameters an operator holds, from its name and its Input Dims text
 * ("[[4096,1024],[1024,1536]]"): the weight and bias operands of the
 * operators that have them; 0 for the others.
 */
int64_t
op_params(const char *op, const char *dims)
{
	return op_params_n(op, dims, NULL, NULL);
}

int64_t
op_params_n(const char *op, const char *dims, int *tensors, int64_t *largest)
{
	int64_t numel[8], last[8], v = 0;
	int ndim[8], depth = 0, k = -1, num = 0, bad[8];
	const char *p;

	for (p = dims; *p != '\0'; p++) {
		if (*p == '[') {
			if (++depth == 2 && ++k < 8)
				numel[k] = 1, ndim[k] = 0, last[k] = 0, bad[k] = 0;
			else if (depth > 2 && k >= 0 && k < 8)
				bad[k] = 1;
		} else if (*p >= '0' && *p <= '9') {
			if (v <= PARAMS_NUMEL_MAX)
				v = v * 10 + (*p - '0');
			num = 1;
		}
		if ((*p == ',' || *p == ']') && num) {
			if (depth == 2 && k >= 0 && k < 8) {
				if (v > PARAMS_NUMEL_MAX || (v > 0 && numel[k] > PARAMS_NUMEL_MAX / v))
					bad[k] = 1, numel[k] = 0;
				else
					numel[k] *= v;
				last[k] = v, ndim[k]++;
			}
			v = 0, num = 0;
		}
		if (*p == ']')
			depth--;
	}
	if (k >= 8)
		k = 7;
#define T(i, d) ((i) <= k && !bad[i] && ndim[i] == (d))
	if (tensors != NULL)
		*tensors = 0;
	if (largest != NULL)
		*largest = 0;
	if (strcmp(op, "aten::mm") == 0)
		return operand(T(1, 2), numel[1], tensors, largest);
	if (strcmp(op, "aten::addmm") == 0)
		return operand(T(2, 2), numel[2], tensors, largest) +
		    operand(T(0, 1), numel[0], tensors, largest);
	if (strcmp(op, "aten::linear") == 0)
		return operand(T(1, 2), numel[1], tensors, largest) +
		    operand(T(2, 1), numel[2], tensors, largest);
	if (strcmp(op, "aten::embedding") == 0)
		return operand(T(0, 2), numel[0], tensors, largest);
	if (strcmp(op, "aten::layer_norm") == 0 || strcmp(op, "aten::native_layer_norm") == 0)
		return operand(T(2, 1), numel[2], tensors, largest) +
		    operand(T(3, 1), numel[3], tensors, largest);
	if ((strcmp(op, "aten::add") == 0 || strcmp(op, "aten::add_") == 0) && T(1, 1) &&
	    0 <= k && !bad[0] && ndim[0] >= 2 && last[0] == numel[1])
		return operand(1, numel[1], tensors, largest);
#undef T
	return 0;
}

int
elem_size(const char *dt)
{
	if (dt == NULL)
		return 0;
	if (strcmp(dt, "Float") == 0 || strcmp(dt, "Int") == 0)
		return 4;
	if (strcmp(dt, "BFloat16") == 0 || strcmp(dt, "Half") == 0)
		return 2;
	if (strcmp(dt, "Double") == 0 || strcmp(dt, "Long") == 0)
		return 8;
	return 0;
}

void
param_count_init(struct param_count *pc)
{
	pc->op = pc->sh = KG_NONE;
	pc->sum = 0;
	pc->tensors = 0;
	pc->tied = 0;
	pc->ntable = 0;
}

void
param_count_add(struct param_count *pc, const struct kg_reader *r, const struct kg_task *t)
{
	if (t->kind != KG_RT || t->op == KG_NONE || t->shapes == KG_NONE ||
	    strstr(kg_str(r, t->name), "Launch") == NULL)
		return;
	param_count_text(pc, t->op, t->shapes, kg_str(r, t->op), kg_str(r, t->shapes));
}

void
param_count_text(struct param_count *pc, uint32_t opid, uint32_t shid, const char *op,
    const char *dims)
{
	if (opid != pc->op || shid != pc->sh) {
		int64_t p, big;
		int n, k;

		p = op_params_n(op, dims, &n, &big);
		if (pc->tied && p > 0 && strcmp(op, "aten::embedding") == 0) {
			if (pc->ntable < (int)(sizeof(pc->table) / sizeof(pc->table[0])))
				pc->table[pc->ntable++] = big;
		} else if (pc->tied && p > 0) {
			for (k = 0; k < pc->ntable && pc->table[k] != big; k++)
				;
			if (k < pc->ntable)
				p -= big, n--;
		}
		pc->sum = params_add(pc->sum, p);
		pc->tensors += n;
	}
	pc->op = opid, pc->sh = shid;
}

int64_t
layer_source(int64_t j, int64_t n, int64_t nn)
{
	if (nn >= n)
		return j * n / nn;
	if (nn == 1)
		return 0;
	return (2 * j * (n - 1) + (nn - 1)) / (2 * (nn - 1));
}

/* Up to max operands' dims from Input Dims text: numel and the first
 * and last dimensions of each; the count of operands seen. */
int
dims_operands(const char *p, int64_t *numel, int64_t *first, int64_t *last, int max)
{
	int depth = 0, k = -1, num = 0, nd = 0;
	int64_t v = 0;

	for (; *p != '\0'; p++) {
		if (*p == '[') {
			if (++depth == 2 && ++k < max)
				numel[k] = 1, first[k] = last[k] = 0, nd = 0;
		} else if (*p >= '0' && *p <= '9') {
			if (v <= PARAMS_NUMEL_MAX)
				v = v * 10 + (*p - '0');
			num = 1;
		}
		if ((*p == ',' || *p == ']') && num) {
			if (depth == 2 && k >= 0 && k < max) {
				/* past PARAMS_NUMEL_MAX: no tensor, 0 elements */
				if (v > PARAMS_NUMEL_MAX || (v > 0 && numel[k] > PARAMS_NUMEL_MAX / v))
					numel[k] = 0, v = 0;
				else
					numel[k] *= v;
				last[k] = v;
				if (nd++ == 0)
					first[k] = v;
			}
			v = 0, num = 0;
		}
		if (*p == ']')
			depth--;
	}
	return k + 1 < max ? k + 1 : max;
}

/*
 * Sizes of the element types in an Input type list ("[\"float\",
 * \"c10::BFloat16\",\"Scalar\"]"), one per operand up to max: 0 for
 * what is not a tensor's element type; the count of operands seen.
 */
int
type_sizes(const char *p, int *sz, int max)
{
	int n = 0;

	while (p != NULL && (p = strchr(p, '"')) != NULL) {
		const char *q = strchr(p + 1, '"');
		char name[32];
		size_t len;

		if (q == NULL)
			break;
		len = (size_t)(q - p - 1) < sizeof(name) - 1 ? (size_t)(q - p - 1) : sizeof(name) - 1;
		memcpy(name, p + 1, len);
		name[len] = '\0';
		if (n < max) {
			static const struct {
				const char *name;
				int size;
			} ty[] = {
				{ "float", 4 }, { "c10::BFloat16", 2 }, { "c10::Half", 2 },
				{ "double", 8 }, { "long int", 8 }, { "int", 4 }, { "short int", 2 },
				{ "bool", 1 }, { "unsigned char", 1 }, { "signed char", 1 },
				{ "c10::Float8_e4m3fn", 1 }, { "c10::Float8_e5m2", 1 },
				{ "Float", 4 }, { "BFloat16", 2 }, { "Half", 2 },
			};
			size_t i;

			sz[n] = 0;
			for (i = 0; i < sizeof(ty) / sizeof(ty[0]); i++)
				if (strcmp(name, ty[i].name) == 0)
					sz[n] = ty[i].size;
		}
		n++;
		p = q + 1;
	}
	return n < max ? n : max;
}
