/*
 * opmodel: operator calls described and predicted; the model file read
 * and written (see opmodel.h and formats/opmodel.md).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <xgboost/c_api.h>

void omp_set_num_threads(int); /* libgomp, which XGBoost links (no omp.h under clang) */
#include <xxhash.h>

#include "kg.h"
#include "opmodel.h"
#include "util.h"

const char *const om_class_name[OM_NCLASS] = {
	"gemm", "attn_fwd", "attn_bwd", "norm", "eltwise", "softmax",
	"optim", "memory", "other"
};

int
om_class_lookup(const char *name)
{
	int i;

	for (i = 0; i < OM_NCLASS; i++)
		if (strcmp(name, om_class_name[i]) == 0)
			return i;
	return -1;
}

/* Operators by class; a name matches when equal to an entry. */
static const char *const gemm_ops[] = {
	"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::linear",
	"aten::matmul", "aten::_scaled_mm", "aten::addbmm", NULL
};
static const char *const norm_ops[] = {
	"aten::native_layer_norm", "aten::layer_norm", "aten::_fused_rms_norm",
	"aten::rms_norm", "aten::native_group_norm", "aten::native_batch_norm",
	"aten::group_norm", "aten::batch_norm", "aten::_batch_norm_impl_index", NULL
};
static const char *const norm_bwd_ops[] = {
	"aten::native_layer_norm_backward", "aten::_fused_rms_norm_backward",
	"aten::native_group_norm_backward", "aten::native_batch_norm_backward",
	"aten::cudnn_batch_norm_backward", NULL
};
static const char *const softmax_ops[] = {
	"aten::_softmax", "aten::_log_softmax", "aten::softmax", "aten::log_softmax",
	"aten::nll_loss_forward", "aten::nll_loss", "aten::nll_loss_nd",
	"aten::cross_entropy_loss", NULL
};
static const char *const softmax_bwd_ops[] = {
	"aten::_softmax_backward_data", "aten::_log_softmax_backward_data",
	"aten::nll_loss_backward", NULL
};
static const char *const elt_ops[] = {
	"aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::mul", "aten::mul_",
	"aten::div", "aten::div_", "aten::gelu", "aten::gelu_backward", "aten::silu",
	"aten::silu_backward", "aten::relu", "aten::relu_", "aten::threshold_backward",
	"aten::tanh", "aten::tanh_backward", "aten::sigmoid", "aten::sigmoid_backward",
	"aten::copy_", "aten::fill_", "aten::zero_", "aten::neg", "aten::pow",
	"aten::exp", "aten::where", "aten::clamp", "aten::clamp_", "aten::masked_fill_",
	"aten::native_dropout", "aten::native_dropout_backward", "aten::rsqrt",
	"aten::sqrt", "aten::addcmul_", "aten::addcdiv_", "aten::lerp_", "aten::_to_copy",
	"aten::cat", "aten::clone", "aten::contiguous", NULL
};

static int
in_list(const char *const *l, const char *s)
{
	for (; *l != NULL; l++)
		if (strcmp(*l, s) == 0)
			return 1;
	return 0;
}

/* Attention: flash, memory-efficient or cuDNN SDPA, forward or backward. */
static int
attn_class(const char *op)
{
	if (strstr(op, "attention") == NULL)
		return -1;
	if (strstr(op, "_flash_attention") == NULL && strstr(op, "_efficient_attention") == NULL &&
	    strstr(op, "_cudnn_attention") == NULL && strstr(op, "scaled_dot_product") == NULL)
		return -1;
	return strstr(op, "backward") != NULL ? OM_ATTN_BWD : OM_ATTN_FWD;
}

/* Up to 8 top-level operands of an Input Dims text, each a flat list. */
#define OM_MAXOPS 8
#define OM_MAXDIM 8
struct dims {
	int n;                        /* operands seen (at most OM_MAXOPS) */
	int nd[OM_MAXOPS];            /* dimensions; -1 for a nested list */
	int64_t d[OM_MAXOPS][OM_MAXDIM];
	double esz[OM_MAXOPS];        /* bytes an element (Input type; 2 unknown) */
};

/* Bytes an element of a PyTorch type as the profiler names it (Input
 * type); 0 for a name that is no tensor type (Scalar, ScalarList, ""). */
static double
type_size(const char *t, size_t n)
{
	static const struct {
		const char *name;
		double size;
	} types[] = {
		{ "c10::BFloat16", 2 }, { "c10::Half", 2 }, { "float", 4 }, { "double", 8 },
		{ "long int", 8 }, { "int", 4 }, { "short int", 2 }, { "bool", 1 },
		{ "unsigned char", 1 }, { "signed char", 1 }, { "c10::Float8_e4m3fn", 1 },
		{ "c10::Float8_e5m2", 1 }, { "c10::complex<float>", 8 },
	};
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strlen(types[i].name) == n && strncmp(t, types[i].name, n) == 0)
			return types[i].size;
	return 0;
}

/* The element sizes of the operands from an Input type text
 * (["c10::BFloat16","float",""]): 2 where it does not say. */
static void
parse_types(const char *s, struct dims *o)
{
	int k;

	for (k = 0; k < OM_MAXOPS; k++)
		o->esz[k] = 2;
	if (s == NULL)
		return;
	for (k = 0; k < OM_MAXOPS && (s = strchr(s, '"')) != NULL; k++) {
		const char *e = strchr(s + 1, '"');
		double z;

		if (e == NULL)
			break;
		z = type_size(s + 1, (size_t)(e - s - 1));
		if (z > 0)
			o->esz[k] = z;
		s = e + 1;
	}
}

static void
parse_dims(const char *s, struct dims *o)
{
	int depth = 0, k = -1, num = 0;
	int64_t v = 0;

	memset(o, 0, sizeof(*o));
	if (s == NULL)
		return;
	for (; *s != '\0'; s++) {
		if (*s == '[') {
			depth++;
			if (depth == 2 && ++k < OM_MAXOPS)
				o->nd[k] = 0;
			else if (depth > 2 && k >= 0 && k < OM_MAXOPS)
				o->nd[k] = -1;
		} else if (*s >= '0' && *s <= '9') {
			if (v < INT64_MAX / 20)
				v = v * 10 + (*s - '0');
			num = 1;
		}
		if ((*s == ',' || *s == ']') && num) {
			if (depth == 2 && k >= 0 && k < OM_MAXOPS && o->nd[k] >= 0) {
				if (o->nd[k] < OM_MAXDIM)
					o->d[k][o->nd[k]] = v;
				o->nd[k]++;
			}
			v = 0, num = 0;
		}
		if (*s == ']')
			depth--;
	}
	o->n = k + 1 < OM_MAXOPS ? k + 1 : OM_MAXOPS;
	for (k = 0; k < o->n; k++)
		if (o->nd[k] > OM_MAXDIM)
			o->nd[k] = -1;
}

static double
numel(const struct dims *o, int i)
{
	double e = 1;
	int j;

	if (i >= o->n || o->nd[i] <= 0)
		return 0;
	for (j = 0; j < o->nd[i]; j++)
		e *= (double)o->d[i][j];
	return e;
}

static float
lg(double v)
{
	return v > 0 ? (float)log2(v) : NAN;
}

/* Tiles of tm x tn over an m x n output, as waves of `sms`: the waves and
 * how full the last one is. */
static void
waves(double tiles, int sms, float *w, float *frac)
{
	double x = tiles / (sms > 0 ? sms : 132);

	*w = (float)x;
	*frac = (float)(x - floor(x));
}

/* Layout from a cuBLAS nvjet kernel's name: ..._TNT is the forward of a
 * Linear (the sweep's nt), _NN. its data gradient (nn), _NT. its weight
 * gradient (tn); -1 when the name does not say. */
static int
name_layout(const char *k)
{
	size_t n;
	const char *p;

	if (k == NULL || strncmp(k, "nvjet", 5) != 0)
		return -1;
	n = strlen(k);
	p = strrchr(k, '_');
	if (p == NULL || (n - (size_t)(p - k + 1)) < 2 || (n - (size_t)(p - k + 1)) > 3)
		return -1;
	p++;
	if (p[0] == 'T' && p[1] == 'N')
		return 0;
	if (p[0] == 'N' && p[1] == 'N')
		return 1;
	if (p[0] == 'N' && p[1] == 'T')
		return 2;
	if (p[0] == 'T' && p[1] == 'T')
		return 3;
	return -1;
}

/* log2 of the largest power of two dividing v, at most 8 (256): how well
 * a dimension fits the tiles and vector loads. */
static float
align2(double v)
{
	int64_t x = (int64_t)v;
	int a = 0;

	while (a < 8 && x > 0 && (x & 1) == 0)
		x >>= 1, a++;
	return (float)a;
}

/*
 * The tile (rows x columns) in a GEMM kernel's name: cuBLAS's nvjet
 * names (nvjet_sm90_tst_320x128_64x3_...) and CUTLASS's
 * (cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_64x3_nn_align2): 0
 * when the name does not say.
 */
static int
name_tile(const char *k, double *tm, double *tn)
{
	const char *p;
	int a, b, c, e;

	if (k == NULL)
		return 0;
	if (strncmp(k, "nvjet", 5) == 0) {
		for (p = k; (p = strchr(p, '_')) != NULL; p++)
			if (sscanf(p + 1, "%dx%d", &a, &b) == 2 && a > 0 && b > 0) {
				*tm = a, *tn = b;
				return 1;
			}
	} else if (strstr(k, "cutlass") != NULL) {
		for (p = k; (p = strchr(p, '_')) != NULL; p++)
			if (sscanf(p + 1, "%dx%d_%dx%d", &a, &b, &c, &e) == 4 && a >= 16 && b >= 16) {
				*tm = a, *tn = b;
				return 1;
			}
	}
	return 0;
}

/*
 * What a GEMM kernel's name says of how cuBLAS runs it: the architecture
 * it was built for (nvjet and sm90_* kernels 90; CUTLASS's own names
 * cutlass_80_..., cutlass_75_...) and the alignment in elements its
 * loads assume (CUTLASS's _alignN; nvjet needs 16 bytes, 8 elements).
 * cuBLAS falls back on older, slower CUTLASS kernels when a leading
 * dimension is not a multiple of 8. NaN where the name does not say.
 */
static void
name_kind(const char *k, float *arch, float *align)
{
	const char *p;
	int a;

	*arch = *align = NAN;
	if (k == NULL)
		return;
	if (strncmp(k, "nvjet", 5) == 0) {
		*arch = 90, *align = 3;
		return;
	}
	if ((p = strstr(k, "cutlass_")) != NULL && sscanf(p + 8, "%d", &a) == 1 && a > 0 &&
	    a < 1000)
		*arch = (float)a;
	else if ((p = strstr(k, "sm")) != NULL && sscanf(p + 2, "%d", &a) == 1 && a >= 50 &&
	    a < 1000)
		*arch = (float)a;
	if ((p = strstr(k, "_align")) != NULL && sscanf(p + 6, "%d", &a) == 1 && a > 0)
		*align = (float)log2(a);
}

uint32_t
om_opcode(const char *op)
{
	return (uint32_t)(XXH3_64bits(op, strlen(op)) & 0xffffff);
}

static float
opcode(const char *op)
{
	return (float)om_opcode(op);
}

static void
desc_gemm(const char *op, const struct dims *o, int layout, const char *kernel, int sms,
    struct om_desc *d)
{
	double tm, tn;
	double m = 0, n = 0, k = 0, b = 1;
	int a = 0;

	if (strcmp(op, "aten::addmm") == 0 || strcmp(op, "aten::baddbmm") == 0 ||
	    strcmp(op, "aten::addbmm") == 0)
		a = 1; /* the bias comes first */
	if (a + 1 >= o->n || o->nd[a] < 2 || o->nd[a + 1] < 1)
		return;
	if (strcmp(op, "aten::linear") == 0) {
		/* x [..., k], weight [n, k] */
		if (o->nd[1] != 2)
			return;
		k = (double)o->d[0][o->nd[0] - 1];
		m = numel(o, 0) / (k > 0 ? k : 1);
		n = (double)o->d[1][0];
	} else {
		const int64_t *x = o->d[a], *w = o->d[a + 1];
		int nx = o->nd[a], nw = o->nd[a + 1];

		m = (double)x[nx - 2];
		k = (double)x[nx - 1];
		n = nw >= 2 ? (double)w[nw - 1] : 1;
		b = numel(o, a) / (m * k > 0 ? m * k : 1);
		if (nw >= 3 && b == 1)
			b = numel(o, a + 1) / (k * n > 0 ? k * n : 1);
		if (strcmp(op, "aten::addbmm") == 0)
			b = (double)x[0];
	}
	if (m <= 0 || n <= 0 || k <= 0 || b <= 0)
		return;
	d->sized = 1;
	d->flops = 2 * b * m * n * k;
	d->bytes = 2 * b * (m * k + k * n + m * n);
	d->x[0] = lg(m);
	d->x[1] = lg(n);
	d->x[2] = lg(k);
	d->x[3] = lg(b);
	d->x[4] = layout >= 0 ? (float)layout : NAN;
	d->x[5] = lg(d->flops);
	d->x[6] = lg(d->bytes);
	d->x[7] = lg(d->flops / d->bytes);
	waves(b * ceil(m / 128) * ceil(n / 128), sms, &d->x[8], &d->x[9]);
	waves(b * ceil(m / 256) * ceil(n / 128), sms, &d->x[10], &d->x[11]);
	d->x[12] = align2(m);
	d->x[13] = align2(n);
	d->x[14] = align2(k);
	if (name_tile(kernel, &tm, &tn)) {
		float w;

		waves(b * ceil(m / tm) * ceil(n / tn), sms, &w, &d->x[15]);
	}
	name_kind(kernel, &d->x[16], &d->x[17]);
}

static void
desc_attn(const char *op, const struct dims *o, int sms, struct om_desc *d)
{
	double b, h, s, e, f;

	if (o->n < 1 || o->nd[0] != 4)
		return;
	b = (double)o->d[0][0];
	/* _flash_attention_forward/backward take [b, s, h, d]; the SDPA
	 * entry points and cuDNN's [b, h, s, d]. */
	if (strstr(op, "scaled_dot_product") == NULL && strstr(op, "_flash_attention") != NULL)
		s = (double)o->d[0][1], h = (double)o->d[0][2];
	else
		h = (double)o->d[0][1], s = (double)o->d[0][2];
	e = (double)o->d[0][3];
	if (b <= 0 || h <= 0 || s <= 0 || e <= 0)
		return;
	d->sized = 1;
	f = 4 * b * h * s * s * e;
	d->flops = d->cls == OM_ATTN_BWD ? 2.5 * f : f;
	d->bytes = 2 * b * h * s * e * (d->cls == OM_ATTN_BWD ? 8 : 4);
	d->x[0] = lg(b);
	d->x[1] = lg(h);
	d->x[2] = lg(s);
	d->x[3] = lg(e);
	d->x[5] = lg(d->flops);
	d->x[6] = lg(d->bytes);
	d->x[7] = lg(d->flops / d->bytes);
	waves(b * h * ceil(s / 128), sms, &d->x[8], &d->x[9]);
	waves(b * h * ceil(s / 64), sms, &d->x[10], &d->x[11]);
}

/* Rows and columns of an operand: the last dimension, and the rest. */
static int
rows_cols(const struct dims *o, int i, double *rows, double *cols)
{
	if (i >= o->n || o->nd[i] < 1)
		return 0;
	*cols = (double)o->d[i][o->nd[i] - 1];
	*rows = *cols > 0 ? numel(o, i) / *cols : 0;
	return *rows > 0 && *cols > 0;
}

/* Normalization, softmax and loss: rows x columns, forward or backward. */
static void
desc_rows(const char *op, const struct dims *o, int bwd, int sms, struct om_desc *d)
{
	double r, c;
	int i, best = -1;

	/* the largest operand is the activation (a loss's target is a
	 * vector, its backward's first operand a scalar) */
	for (i = 0; i < o->n; i++)
		if (o->nd[i] >= 1 && (best < 0 || numel(o, i) > numel(o, best)))
			best = i;
	if (best < 0 || !rows_cols(o, best, &r, &c))
		return;
	d->sized = 1;
	d->flops = 8 * r * c;
	d->bytes = o->esz[best] * r * c * (bwd ? 3 : 2);
	d->x[0] = lg(r);
	d->x[1] = lg(c);
	d->x[2] = (float)bwd;
	d->x[3] = opcode(op);
	d->x[6] = lg(d->bytes);
	d->x[8] = (float)(r / (sms > 0 ? sms : 132));
}

/* Elementwise and other operators: the largest operand's elements, the
 * operands. */
static void
desc_elts(const char *op, const struct dims *o, struct om_desc *d)
{
	double e = 0, all = 0, ez = 2;
	int i, nt = 0;
	size_t n;

	for (i = 0; i < o->n; i++)
		if (o->nd[i] >= 1) {
			nt++;
			all += numel(o, i) * o->esz[i];
			if (numel(o, i) > e)
				e = numel(o, i), ez = o->esz[i];
		}
	if (e <= 0)
		return;
	d->sized = 1;
	d->flops = e;
	/* the operands read and an output as large as the largest, each in
	 * its element type (2 bytes where the call does not say); an
	 * in-place operator (add_, copy_, fill_) writes its first operand
	 * instead, which fill_ and zero_ do not read and copy_ overwrites */
	n = strlen(op);
	if (n > 1 && op[n - 1] == '_' && o->nd[0] >= 1) {
		if (strcmp(op, "aten::fill_") == 0 || strcmp(op, "aten::zero_") == 0 ||
		    strcmp(op, "aten::copy_") == 0)
			all -= numel(o, 0) * o->esz[0];
		d->bytes = all + numel(o, 0) * o->esz[0];
	} else {
		d->bytes = all + ez * e;
	}
	d->x[0] = lg(e);
	d->x[1] = (float)nt;
	d->x[3] = opcode(op);
	d->x[6] = lg(d->bytes);
}

int
om_describe(const struct om_call *c, int sms, struct om_desc *d)
{
	const char *op = c->op != NULL ? c->op : "";
	struct dims o;
	int i, a;

	for (i = 0; i < OM_NFEAT; i++)
		d->x[i] = NAN;
	d->sized = 0;
	d->byop = 0;
	d->opid = 0;
	d->flops = d->bytes = 0;
	if (c->kind == KG_COLL)
		return d->cls = -1;
	if (c->kind == KG_CPY || c->kind == KG_SET) {
		const char *k = c->kernel != NULL ? c->kernel : "";

		d->cls = OM_MEMORY;
		d->sized = c->bytes > 0;
		d->bytes = (double)c->bytes;
		d->x[0] = lg(d->bytes);
		d->x[1] = c->kind == KG_SET;
		d->x[2] = strstr(k, "HtoD") ? 1 : strstr(k, "DtoH") ? 2 : strstr(k, "DtoD") ? 3 :
		    strstr(k, "PtoP") ? 4 : 0;
		return d->cls;
	}
	parse_dims(c->dims, &o);
	parse_types(c->types, &o);
	d->opid = om_opcode(op);
	d->byop = 1;
	if (in_list(gemm_ops, op)) {
		d->byop = 0;
		d->cls = OM_GEMM;
		desc_gemm(op, &o, c->layout >= 0 ? c->layout : name_layout(c->kernel), c->kernel,
		    sms, d);
	} else if ((a = attn_class(op)) >= 0) {
		d->cls = a;
		d->byop = 0;
		desc_attn(op, &o, sms, d);
	} else if (in_list(norm_ops, op) || in_list(norm_bwd_ops, op)) {
		d->cls = OM_NORM;
		desc_rows(op, &o, in_list(norm_bwd_ops, op), sms, d);
	} else if (in_list(softmax_ops, op) || in_list(softmax_bwd_ops, op)) {
		d->cls = OM_SOFTMAX;
		desc_rows(op, &o, in_list(softmax_bwd_ops, op), sms, d);
	} else if (strcmp(op, OM_ADAMW_STEP) == 0) {
		/* a sweep's whole AdamW step over P fp32 parameters: the foreach
		 * path's passes read and write about 80 bytes a parameter */
		d->cls = OM_OPTIM;
		desc_elts(op, &o, d);
		d->bytes = 80 * d->flops;
		d->x[6] = lg(d->bytes);
	} else if (strncmp(op, "aten::_foreach_", 15) == 0 || strncmp(op, "aten::_fused_adam", 17) == 0) {
		d->cls = OM_OPTIM;
		desc_elts(op, &o, d); /* tensor lists: unsized unless recorded */
		if (o.n > 0 && o.nd[0] < 0)
			d->sized = 0;
	} else if (in_list(elt_ops, op)) {
		d->cls = OM_ELTWISE;
		desc_elts(op, &o, d);
	} else {
		d->cls = OM_OTHER;
		if (*op != '\0')
			desc_elts(op, &o, d);
	}
	return d->cls;
}

/* Model file ---------------------------------------------------------- */

void
om_model_init(struct om_model *m)
{
	memset(m, 0, sizeof(*m));
	m->sms = 132;
}

void
om_model_release(struct om_model *m)
{
	int i;

	size_t j;

	for (i = 0; i < OM_NCLASS; i++) {
		if (m->cls[i].booster != NULL)
			XGBoosterFree(m->cls[i].booster);
		for (j = 0; j < m->cls[i].nops; j++)
			free(m->cls[i].opname[j]);
		free(m->cls[i].opname);
		free(m->cls[i].ops);
	}
	memset(m, 0, sizeof(*m));
}

static const char *const kind_name[] = { "none", "trees", "roofline" };

/*
 * The file: text lines, then each class's trees as counted bytes, then a
 * last line with the XXH3-64 of everything before it. See
 * formats/opmodel.md.
 */
int
om_save(const struct om_model *m, FILE *fp, const char *const *tree, const size_t *ntree)
{
	XXH3_state_t *st = XXH3_createState();
	char line[512];
	int i, n;

	if (st == NULL) {
		errno = ENOMEM;
		return -1;
	}
	XXH3_64bits_reset(st);
#define PUT(buf, len)                                         \
	do {                                                  \
		if (fwrite((buf), 1, (len), fp) != (size_t)(len)) \
			goto fail;                            \
		XXH3_64bits_update(st, (buf), (len));         \
	} while (0)
	n = snprintf(line, sizeof(line), "%s %d\ngpu %s\nsms %d\nroofline %.17g %.17g\nclasses %d\n",
	    OM_MAGIC, OM_VERSION, m->gpu, m->sms, m->flops_s, m->bytes_s, OM_NCLASS);
	PUT(line, (size_t)n);
	for (i = 0; i < OM_NCLASS; i++) {
		const struct om_cls *c = &m->cls[i];
		size_t nt = c->kind == OM_TREES && tree != NULL && tree[i] != NULL ? ntree[i] : 0;

		n = snprintf(line, sizeof(line),
		    "class %s %s n=%lld mape=%.4g cv_mape=%.4g p90=%.4g scale=%.17g target=%s "
		    "trees=%zu\n", om_class_name[i], kind_name[c->kind], (long long)c->n, c->mape,
		    c->cv_mape, c->p90, c->scale, c->ratio ? "ratio" : "time", nt);
		PUT(line, (size_t)n);
		{
			size_t j;

			PUT("ops", 3);
			for (j = 0; j < c->nops; j++) {
				PUT(" ", 1);
				PUT(c->opname[j], strlen(c->opname[j]));
			}
			PUT("\n", 1);
		}
		if (nt > 0) {
			PUT(tree[i], nt);
			PUT("\n", 1);
		}
	}
#undef PUT
	if (fprintf(fp, "xxh3 %016llx\n", (unsigned long long)XXH3_64bits_digest(st)) < 0)
		goto fail;
	XXH3_freeState(st);
	return 0;
fail:
	XXH3_freeState(st);
	return -1;
}

/* A class's operators from the "ops" line's names; sorted by code. */
static int
set_ops(struct om_cls *c, const char *s)
{
	while (*s == ' ')
		s++;
	while (*s != '\0') {
		size_t n = strcspn(s, " ");

		c->opname = xrealloc(c->opname, (c->nops + 1) * sizeof(*c->opname));
		c->ops = xrealloc(c->ops, (c->nops + 1) * sizeof(*c->ops));
		c->opname[c->nops] = xstrndup(s, n);
		c->ops[c->nops] = om_opcode(c->opname[c->nops]);
		c->nops++;
		s += n;
		while (*s == ' ')
			s++;
	}
	/* the names stay in file order; the codes are sorted for lookup */
	if (c->nops > 0)
		qsort(c->ops, c->nops, sizeof(*c->ops), cmp_u32);
	return 0;
}

/* The file read whole (models are small: a few MB at most). */
static char *
slurp(FILE *fp, size_t *len)
{
	size_t cap = 1 << 16, n = 0, r;
	char *b = xmalloc(cap + 1);

	while ((r = fread(b + n, 1, cap - n, fp)) > 0) {
		n += r;
		if (n == cap) {
			if (cap >= ((size_t)1 << 30))
				break;
			cap *= 2;
			b = xrealloc(b, cap + 1);
		}
	}
	if (ferror(fp)) {
		free(b);
		return NULL;
	}
	b[n] = '\0';
	*len = n;
	return b;
}

/* The next line of b from *pos (without its newline), or NULL at the end. */
static char *
next_line(char *b, size_t len, size_t *pos)
{
	char *s = b + *pos, *nl;

	if (*pos >= len)
		return NULL;
	nl = memchr(s, '\n', len - *pos);
	if (nl == NULL)
		return NULL;
	*nl = '\0';
	*pos = (size_t)(nl - b) + 1;
	return s;
}

int
om_load_path(struct om_model *m, const char *path, char *err, size_t errlen)
{
	FILE *fp = fopen(path, "rb");
	int rc;

	if (fp == NULL) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	rc = om_load(m, fp, err, errlen);
	fclose(fp);
	return rc;
}

int
om_load(struct om_model *m, FILE *fp, char *err, size_t errlen)
{
	size_t len, pos = 0, sumend;
	char *b, *l;
	unsigned long long want;
	int i, ver, ncls;

	om_model_init(m);
	b = slurp(fp, &len);
	if (b == NULL) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	if (len < sizeof(OM_MAGIC) || memcmp(b, OM_MAGIC " ", sizeof(OM_MAGIC)) != 0) {
		snprintf(err, errlen, "not an opmodel model file");
		goto fail;
	}
	l = next_line(b, len, &pos);
	if (l == NULL || sscanf(l + sizeof(OM_MAGIC), "%d", &ver) != 1) {
		snprintf(err, errlen, "truncated model file");
		goto fail;
	}
	if (ver < OM_VERSION_MIN || ver > OM_VERSION) {
		snprintf(err, errlen, "unsupported model version %d (this opmodel reads %d to %d)",
		    ver, OM_VERSION_MIN, OM_VERSION);
		goto fail;
	}
	/* the checksum line ends the file; without it the file is cut */
	if (len < 23 || b[len - 1] != '\n' || memcmp(b + len - 22, "xxh3 ", 5) != 0 ||
	    (b[len - 23] != '\n' && b[len - 23] != '\0')) {
		snprintf(err, errlen, "truncated model file");
		goto fail;
	}
	sumend = len - 22;
	if (sscanf(b + sumend + 5, "%16llx", &want) != 1) {
		snprintf(err, errlen, "truncated model file");
		goto fail;
	}
	{
		/* the first line's newline was overwritten by next_line */
		char save = b[pos - 1];
		uint64_t got;

		b[pos - 1] = '\n';
		got = XXH3_64bits(b, sumend);
		b[pos - 1] = save;
		if (got != (uint64_t)want) {
			snprintf(err, errlen, "corrupt model file (checksum mismatch)");
			goto fail;
		}
	}
	l = next_line(b, sumend, &pos);
	if (l == NULL || strncmp(l, "gpu ", 4) != 0)
		goto bad;
	snprintf(m->gpu, sizeof(m->gpu), "%s", l + 4);
	l = next_line(b, sumend, &pos);
	if (l == NULL || sscanf(l, "sms %d", &m->sms) != 1 || m->sms <= 0)
		goto bad;
	l = next_line(b, sumend, &pos);
	if (l == NULL || sscanf(l, "roofline %lf %lf", &m->flops_s, &m->bytes_s) != 2 ||
	    !(m->flops_s > 0) || !(m->bytes_s > 0))
		goto bad;
	l = next_line(b, sumend, &pos);
	if (l == NULL || sscanf(l, "classes %d", &ncls) != 1 || ncls != OM_NCLASS)
		goto bad;
	/* one thread: XGBoost's load runs on all CPUs whatever the
	 * booster's nthread, and OpenMP's idle threads then spin, taking
	 * the CPUs of our readers and writers */
	omp_set_num_threads(1);
	for (i = 0; i < OM_NCLASS; i++) {
		struct om_cls *c = &m->cls[i];
		char name[32], kind[16], target[16];
		long long n;
		size_t nt;

		l = next_line(b, sumend, &pos);
		if (l == NULL || sscanf(l, "class %31s %15s n=%lld mape=%lf cv_mape=%lf p90=%lf "
		    "scale=%lf target=%15s trees=%zu", name, kind, &n, &c->mape, &c->cv_mape, &c->p90,
		    &c->scale, target, &nt) != 9 || strcmp(name, om_class_name[i]) != 0)
			goto bad;
		c->n = n;
		if (strcmp(target, "ratio") == 0)
			c->ratio = 1;
		else if (strcmp(target, "time") != 0)
			goto bad;
		if (strcmp(kind, "trees") == 0)
			c->kind = OM_TREES;
		else if (strcmp(kind, "roofline") == 0)
			c->kind = OM_ROOFLINE;
		else if (strcmp(kind, "none") == 0)
			c->kind = OM_NONE;
		else
			goto bad;
		l = next_line(b, sumend, &pos);
		if (l == NULL || strncmp(l, "ops", 3) != 0 || (l[3] != '\0' && l[3] != ' '))
			goto bad;
		if (set_ops(c, l + 3) < 0)
			goto bad;
		if ((c->kind == OM_TREES) != (nt > 0) ||
		    (nt > 0 && (nt + 1 > sumend - pos || b[pos + nt] != '\n')))
			goto bad;
		if (nt > 0) {
			BoosterHandle h;

			if (XGBoosterCreate(NULL, 0, &h) != 0)
				goto xgb;
			c->booster = h;
			if (XGBoosterLoadModelFromBuffer(h, b + pos, nt) != 0 ||
			    XGBoosterSetParam(h, "nthread", "1") != 0)
				goto xgb;
		}
		pos += nt + (nt > 0);
	}
	if (pos != sumend)
		goto bad;
	free(b);
	return 0;
xgb:
	snprintf(err, errlen, "class %s: the trees do not load: %s", om_class_name[i],
	    XGBGetLastError());
	goto fail;
bad:
	snprintf(err, errlen, "corrupt model file");
fail:
	free(b);
	om_model_release(m);
	return -1;
}

int
om_knows(const struct om_model *m, const struct om_desc *d)
{
	const struct om_cls *c;

	if (d->cls < 0 || d->cls >= OM_NCLASS || !d->sized)
		return 0;
	c = &m->cls[d->cls];
	if (c->kind != OM_TREES)
		return 0;
	return !d->byop || bsearch(&d->opid, c->ops, c->nops, sizeof(*c->ops), cmp_u32) != NULL;
}

double
om_roofline_us(const struct om_model *m, const struct om_desc *d)
{
	return fmax(d->flops / m->flops_s, d->bytes / m->bytes_s) * 1e6;
}

double
om_predict(const struct om_model *m, const struct om_desc *d, int *via)
{
	const struct om_cls *c;
	double t;

	*via = OM_NONE;
	if (d->cls < 0 || d->cls >= OM_NCLASS || !d->sized)
		return -1;
	c = &m->cls[d->cls];
	if (c->kind == OM_TREES && om_knows(m, d)) {
		DMatrixHandle dm;
		bst_ulong n;
		const float *out;

		/* one thread: OpenMP's others would spin after each call */
		if (XGDMatrixCreateFromMat_omp(d->x, 1, OM_NFEAT, NAN, &dm, 1) != 0)
			return -1;
		if (XGBoosterPredict(c->booster, dm, 0, 0, 0, &n, &out) != 0 || n != 1) {
			XGDMatrixFree(dm);
			return -1;
		}
		t = exp((double)out[0]);
		XGDMatrixFree(dm);
		if (c->ratio) {
			double base = om_roofline_us(m, d);

			if (!(base > 0))
				return -1;
			t *= base;
		}
		*via = OM_TREES;
		return t;
	}
	if (c->kind == OM_ROOFLINE || c->kind == OM_TREES) {
		double scale = c->scale;

		t = om_roofline_us(m, d);
		if (!(t > 0))
			return -1;
		*via = OM_ROOFLINE;
		/*
		 * The `other` class's samples are whatever else a sweep ran
		 * (the tensors' random initialisation): their efficiency says
		 * nothing of an operator it never saw (a reduction, a gather),
		 * which streams memory as the elementwise class's do.
		 */
		if (d->cls == OM_OTHER && m->cls[OM_ELTWISE].n > 0 && m->cls[OM_ELTWISE].scale > 0)
			scale = m->cls[OM_ELTWISE].scale;
		return t * (scale > 0 ? scale : 1);
	}
	return -1;
}

static void
trim(const char **s, size_t *n)
{
	while (*n > 0 && isspace((unsigned char)**s))
		(*s)++, (*n)--;
	while (*n > 0 && isspace((unsigned char)(*s)[*n - 1]))
		(*n)--;
}

int
om_same_gpu(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);

	trim(&a, &na);
	trim(&b, &nb);
	return na == nb && strncasecmp(a, b, na) == 0;
}

/* om_calls: tasks in order of stream, start, id. */
static const struct om_task *sort_t;

static int
cmp_task(const void *x, const void *y)
{
	const struct om_task *a = &sort_t[*(const uint32_t *)x], *b = &sort_t[*(const uint32_t *)y];

	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

uint32_t
om_calls(const struct om_task *t, size_t n, uint32_t *call)
{
	uint32_t *ord = xmalloc((n > 0 ? n : 1) * sizeof(*ord));
	uint32_t nc = 0;
	size_t i, m = 0;
	const struct om_task *prev = NULL;

	for (i = 0; i < n; i++) {
		call[i] = UINT32_MAX;
		if (t[i].kind == KG_KERN || t[i].kind == KG_CPY || t[i].kind == KG_SET)
			ord[m++] = (uint32_t)i;
	}
	sort_t = t;
	qsort(ord, m, sizeof(*ord), cmp_task);
	for (i = 0; i < m; i++) {
		const struct om_task *x = &t[ord[i]];

		if (prev == NULL || x->kind != KG_KERN || prev->kind != KG_KERN ||
		    prev->proc != x->proc || prev->op != x->op || prev->sh != x->sh ||
		    prev->it != x->it || x->op == KG_NONE || prev->ocall != x->ocall)
			nc++;
		call[ord[i]] = nc - 1;
		prev = x;
	}
	free(ord);
	return nc;
}
