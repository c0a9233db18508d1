/*
 * The kernel and op templates (kernels.h): names as PyTorch, cuBLAS,
 * flash-attention and apex name them, launch shapes from the model's
 * tile choice, durations from the model.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "util.h"

struct strbuf {
	char *s;
	size_t n, cap;
};

static void
sb_add(struct strbuf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap)
		grow(&b->s, &b->cap, b->n + n + 1, 1);
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = '\0';
}

static void
sb_addf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
sb_addf(struct strbuf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(tmp)) {
		char *big = xmalloc((size_t)n + 1);

		va_start(ap, fmt);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		va_end(ap);
		sb_add(b, big, (size_t)n);
		free(big);
		return;
	}
	sb_add(b, tmp, (size_t)n);
}

static char *
xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	s = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

static const char *
type_name(const char *dt)
{
	if (strcmp(dt, "bf") == 0)
		return "c10::BFloat16";
	if (strcmp(dt, "f32") == 0)
		return "float";
	if (strcmp(dt, "i64") == 0)
		return "long int";
	if (strcmp(dt, "b") == 0)
		return "bool";
	return "";
}

/*
 * An op's shape args from a spec of inputs separated by '|': Tdims:type
 * (a tensor, dims comma-separated, contiguous), S<value> (a scalar),
 * L<value> (a scalar list), N (none).
 */
char *
shape_args(const char *spec)
{
	struct strbuf d = { 0 }, t = { 0 }, st = { 0 }, c = { 0 }, out = { 0 };
	const char *p = spec;
	int first = 1;

	sb_add(&d, "[", 1), sb_add(&t, "[", 1), sb_add(&st, "[", 1), sb_add(&c, "[", 1);
	while (*p != '\0') {
		const char *e = strchr(p, '|');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char item[256];

		snprintf(item, sizeof(item), "%.*s", (int)n, p);
		if (!first)
			sb_add(&d, ", ", 2), sb_add(&t, ", ", 2), sb_add(&st, ", ", 2), sb_add(&c, ", ", 2);
		first = 0;
		if (item[0] == 'T') {
			char *colon = strchr(item, ':');
			int64_t dims[8];
			int nd = 0, i;
			char *q = item + 1;

			*colon = '\0';
			while (*q != '\0' && nd < 8) {
				dims[nd++] = strtoll(q, &q, 10);
				if (*q == ',')
					q++;
			}
			sb_add(&d, "[", 1), sb_add(&st, "[", 1);
			for (i = 0; i < nd; i++) {
				int64_t stride = 1;
				int j;

				for (j = i + 1; j < nd; j++)
					stride *= dims[j];
				sb_addf(&d, "%s%" PRId64, i ? ", " : "", dims[i]);
				sb_addf(&st, "%s%" PRId64, i ? ", " : "", stride);
			}
			sb_add(&d, "]", 1), sb_add(&st, "]", 1);
			sb_addf(&t, "\"%s\"", type_name(colon + 1));
			sb_add(&c, "\"\"", 2);
		} else if (item[0] == 'S' || item[0] == 'L') {
			sb_add(&d, "[]", 2), sb_add(&st, "[]", 2);
			sb_addf(&t, "\"%s\"", item[0] == 'S' ? "Scalar" : "ScalarList");
			sb_addf(&c, "\"%s\"", item + 1);
		} else {
			sb_add(&d, "[]", 2), sb_add(&st, "[]", 2);
			sb_add(&t, "\"\"", 2), sb_add(&c, "\"\"", 2);
		}
		p += n + (e != NULL);
	}
	sb_add(&d, "]", 1), sb_add(&t, "]", 1), sb_add(&st, "]", 1), sb_add(&c, "]", 1);
	sb_addf(&out, "\"Concrete Inputs\": %s, \"Input type\": %s, \"Input Strides\": %s, "
	    "\"Input Dims\": %s", c.s, t.s, st.s, d.s);
	free(d.s), free(t.s), free(st.s), free(c.s);
	return out.s;
}

static void
ot_set(struct tg_job *J, int i, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
ot_set(struct tg_job *J, int i, const char *name, const char *fmt, ...)
{
	J->ot[i].name = xstrndup(name, strlen(name));
	if (fmt != NULL) {
		char spec[512];
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(spec, sizeof(spec), fmt, ap);
		va_end(ap);
		J->ot[i].args = shape_args(spec);
	}
}

/* The launch-shape args of a kernel. */
static char *
kargs(const struct tg_hw *hw, int64_t gx, int64_t gy, int block, int regs, int smem)
{
	double bps = (double)(gx * gy) / hw->sms;
	double wps = bps * block / 32;
	int occ = (int)(100.0 * (wps < 64 ? wps : 64) / 64);

	return xasprintf("\"registers per thread\": %d,\n      \"shared memory\": %d,\n"
	    "      \"blocks per SM\": %.6f,\n      \"warps per SM\": %.6f,\n"
	    "      \"grid\": [%" PRId64 ", %" PRId64 ", 1],\n      \"block\": [%d, 1, 1],\n"
	    "      \"est. achieved occupancy %%\": %d", regs, smem, bps, wps, gx, gy, block, occ);
}

static int
kt_new(struct tg_job *J, int cat, char *name, char *args, int64_t dur, int64_t bytes)
{
	struct kt *k;

	J->kt = xrealloc(J->kt, (size_t)(J->nkt + 1) * sizeof(*J->kt));
	k = &J->kt[J->nkt];
	memset(k, 0, sizeof(*k));
	k->cat = cat, k->name = name, k->args = args, k->dur = dur, k->bytes = bytes;
	return J->nkt++;
}

static void
kt_gemm(struct tg_job *J, int i, int64_t m, int64_t n, int64_t k, const char *layout,
    int fp32_out)
{
	const struct tg_hw *hw = &J->c.hw;
	struct gemm_shape gs;
	int64_t d = model_gemm(hw, m, n, k, fp32_out, &gs);
	char *name;

	if (strcmp(hw->arch, "sm90") == 0)
		name = xasprintf("sm90_xmma_gemm_%s_%s_n_tilesize%dx%dx64_warpgroupsize%dx1x1_"
		    "execute_segment_k_off_kernel__5x_cublas",
		    fp32_out ? "bf16bf16_f32f32_f32" : "bf16bf16_bf16f32_f32", layout,
		    gs.tm, gs.tn, gs.tm >= 256 ? 2 : 1);
	else
		name = xasprintf("ampere_bf16_s16816gemm_bf16_%dx%d_ldg8_f2f_stages_64x3_%s",
		    gs.tm, gs.tn, layout);
	J->kt[i].name = name;
	J->kt[i].args = kargs(hw, gs.gx, gs.gy, gs.block, gs.regs, gs.smem);
	J->kt[i].dur = d;
	J->kt[i].cat = K_KERNEL;
}

/* A memory-bound kernel over n elements of `esize` bytes, read `rw` times in all. */
static void
kt_mem(struct tg_job *J, int i, const char *name, int64_t n, double bytes_per_el)
{
	const struct tg_hw *hw = &J->c.hw;
	int64_t grid = (n + 511) / 512;

	if (grid < 1)
		grid = 1;
	if (grid > 65535 * 8)
		grid = 65535 * 8;
	J->kt[i].name = xstrndup(name, strlen(name));
	J->kt[i].args = kargs(hw, grid, 1, 128, 32, 0);
	J->kt[i].dur = model_mem(hw, (double)n * bytes_per_el);
	J->kt[i].cat = K_KERNEL;
}

static void
kt_flash(struct tg_job *J, int i, int backward)
{
	const struct tg_cfg *c = &J->c;
	int64_t hd = c->hidden / c->heads, blocks;
	int64_t d = model_flash(&c->hw, c->mbs, c->heads / c->tp, c->seq, hd, backward, &blocks);

	J->kt[i].name = xasprintf(backward ?
	    "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<pytorch_flash::"
	    "Flash_bwd_kernel_traits<%" PRId64 ", 64, 128, 8, 2, 4, 2, false, false, "
	    "cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<%" PRId64 ", 64, 128, 8, "
	    "cutlass::bfloat16_t> >, true, false, false, false, false, true, false>"
	    "(pytorch_flash::Flash_bwd_params)" :
	    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<%"
	    PRId64 ", 128, 64, 4, false, false, cutlass::bfloat16_t, pytorch_flash::"
	    "Flash_kernel_traits<%" PRId64 ", 128, 64, 4, cutlass::bfloat16_t> >, false, true, "
	    "false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)", hd, hd);
	J->kt[i].args = kargs(&c->hw, (c->seq + 127) / 128, c->mbs * (c->heads / c->tp),
	    backward ? 256 : 128, 255, backward ? 147456 : 81920);
	J->kt[i].dur = d;
	J->kt[i].cat = K_KERNEL;
}

#define EW(op, t) "void at::native::vectorized_elementwise_kernel<4, " op ", " \
	"at::detail::Array<char*, " t "> >(int, " op ", at::detail::Array<char*, " t ">)"
#define RED(op) "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<" op \
	", unsigned int, float, 4> >(at::native::ReduceOp<" op ", unsigned int, float, 4>)"

static const char k_ln_fwd[] = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel"
    "<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, "
    "c10::BFloat16 const*, float*, float*, c10::BFloat16*)";
static const char k_ln_bwd_in[] = "void at::native::(anonymous namespace)::"
    "layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>(c10::BFloat16 const*, "
    "c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)";
static const char k_ln_bwd_gb[] = "void at::native::(anonymous namespace)::"
    "GammaBetaBackwardCUDAKernel_32x32<c10::BFloat16, float>(long, long, c10::BFloat16 const*, "
    "c10::BFloat16 const*, float const*, float const*, c10::BFloat16*, c10::BFloat16*)";
static const char k_add_bf[] = EW("at::native::CUDAFunctor_add<c10::BFloat16>", "3");
static const char k_sub_f32[] = EW("at::native::CUDAFunctor_sub<float>", "3");
static const char k_mul_f32[] = EW("at::native::BinaryFunctor<float, float, float, "
    "at::native::binary_internal::MulFunctor<float> >", "3");
static const char k_dropout[] = "void at::native::(anonymous namespace)::fused_dropout_kernel_vec"
    "<c10::BFloat16, float, unsigned int, 1, 8, bool>(at::cuda::detail::TensorInfo<c10::BFloat16 "
    "const, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, "
    "at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, at::PhiloxCudaState)";
static const char k_dropout_bwd[] = EW("at::native::(anonymous namespace)::masked_scale_kernel"
    "<bool, c10::BFloat16, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, float)::"
    "{lambda(c10::BFloat16, bool)#1}", "3");
static const char k_gelu[] = EW("at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() "
    "const::{lambda(c10::BFloat16)#1}", "2");
static const char k_gelu_bwd[] = EW("at::native::GeluBackwardCUDAKernelImpl(at::"
    "TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::"
    "{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}", "3");
static const char k_sum_bf[] = RED("c10::BFloat16, at::native::func_wrapper_t<float, "
    "at::native::sum_functor<c10::BFloat16, float, float>::operator()(at::TensorIterator&)::"
    "{lambda(float, float)#1}>");
static const char k_sum_f32[] = RED("float, at::native::func_wrapper_t<float, "
    "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::"
    "{lambda(float, float)#1}>");
static const char k_max_f32[] = RED("float, at::native::MaxOps<float>");
static const char k_exp_f32[] = EW("at::native::exp_kernel_cuda(at::TensorIteratorBase&)::"
    "{lambda()#2}::operator()() const::{lambda()#1}::operator()() const::{lambda(float)#1}", "2");
static const char k_index[] = "void at::native::index_elementwise_kernel<128, 4, "
    "at::native::gpu_index_kernel<at::native::index_kernel_impl<at::native::OpaqueType<4> >"
    "(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, "
    "char const*, long)#1}>(at::TensorIteratorBase&, c10::ArrayRef<long>, "
    "c10::ArrayRef<long>, at::native::index_kernel_impl<at::native::OpaqueType<4> >"
    "(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, "
    "char const*, long)#1} const&)::{lambda(int)#1}>(long, at::native::gpu_index_kernel<"
    "at::native::index_kernel_impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, "
    "c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1}>"
    "(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>, "
    "at::native::index_kernel_impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, "
    "c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1} "
    "const&)::{lambda(int)#1})";
static const char k_lookup[] = "void at::native::(anonymous namespace)::indexSelectLargeIndex"
    "<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<"
    "c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned "
    "int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, "
    "unsigned int, long)";
static const char k_emb_bwd[] = "void at::native::(anonymous namespace)::"
    "embedding_backward_feature_kernel<c10::BFloat16, float, long>(long const*, "
    "c10::BFloat16 const*, float*, int, long, int)";
static const char k_sub_i64[] = EW("at::native::CUDAFunctor_sub<long>", "3");
static const char k_fill_bf[] = EW("at::native::FillFunctor<c10::BFloat16>", "1");
static const char k_pow[] = EW("at::native::pow_tensor_scalar_kernel_impl<float, float>"
    "(at::TensorIteratorBase&, float)::{lambda(float)#1}", "2");
static const char k_adam[] = "void multi_tensor_apply_kernel<TensorListMetadata<4>, "
    "AdamFunctor<float, float, float>, float, float, float, float, float, float, adamMode_t, "
    "float>(long, int volatile*, TensorListMetadata<4>, AdamFunctor<float, float, float>, "
    "float, float, float, float, float, float, adamMode_t, float)";
static const char k_scale[] = "void multi_tensor_apply_kernel<TensorListMetadata<2>, "
    "ScaleFunctor<float, c10::BFloat16>, float*>(long, int volatile*, TensorListMetadata<2>, "
    "ScaleFunctor<float, c10::BFloat16>, float*)";
static const char k_l2[] = "void multi_tensor_apply_kernel<TensorListMetadata<1>, "
    "L2NormFunctor<float>, float*, float*, bool, int>(long, int volatile*, "
    "TensorListMetadata<1>, L2NormFunctor<float>, float*, float*, bool, int)";
static const char k_l2_cleanup[] = "void cleanup<float, float>(float*, float*, float*, int*, "
    "int, float*, bool, int)";
static const char k_flash_dot[] = "void pytorch_flash::flash_bwd_dot_do_o_kernel<true, "
    "pytorch_flash::Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, "
    "cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<128, 64, 128, 8, "
    "cutlass::bfloat16_t> > >(pytorch_flash::Flash_bwd_params)";
static const char k_flash_cvt[] = "void pytorch_flash::flash_bwd_convert_dq_kernel<"
    "pytorch_flash::Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, "
    "cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<128, 64, 128, 8, "
    "cutlass::bfloat16_t> > >(pytorch_flash::Flash_bwd_params, int)";

/* Apex's multi_tensor_apply: 65536 elements a block, 320 blocks a launch. */
#define MTA_CHUNK (INT64_C(65536) * 320)

/* Parameters of each backward item of a stage, in backward order. */
static int64_t
layer_params(const struct tg_cfg *c)
{
	int64_t h = c->hidden, hp = h / c->tp, fp = c->ffn / c->tp;

	return 3 * hp * h + 3 * hp + hp * h + h + fp * h + fp + fp * h + h + 4 * h;
}

static int64_t
item_params(const struct tg_job *J, int stage, int item, int *kind)
{
	const struct tg_cfg *c = &J->c;
	int nitems = (int)J->lps + (stage == c->pp - 1) + (stage == 0);
	int last = stage == c->pp - 1;

	if (last && item == 0) {
		*kind = 2; /* head */
		return c->vocab / c->tp * c->hidden + 2 * c->hidden;
	}
	if (stage == 0 && item == nitems - 1) {
		*kind = 0; /* embedding */
		return c->vocab / c->tp * c->hidden + c->seq * c->hidden;
	}
	*kind = 1;
	return layer_params(c);
}

int
stage_items(const struct tg_job *J, int stage)
{
	return (int)J->lps + (stage == J->c.pp - 1) + (stage == 0);
}

void
make_stage(struct tg_job *J, int stage, struct stagek *sk)
{
	const struct tg_cfg *c = &J->c;
	const struct tg_hw *hw = &c->hw;
	int nitems = stage_items(J, stage), i, kind, nb = 0;
	int64_t bsize = c->dp * INT64_C(1000000) > INT64_C(40000000) ?
	    c->dp * INT64_C(1000000) : INT64_C(40000000);
	int64_t acc = 0, p, full, last;
	struct bucket *bk = NULL;

	memset(sk, 0, sizeof(*sk));
	for (i = 0; i < nitems; i++) {
		p = item_params(J, stage, i, &kind);
		sk->params += p;
		acc += p;
		if (acc >= bsize || i == nitems - 1) {
			bk = xrealloc(bk, (size_t)(nb + 1) * sizeof(*bk));
			bk[nb].numel = acc;
			bk[nb].after = i;
			nb++;
			acc = 0;
		}
	}
	J->bk[stage] = bk;
	J->nbk[stage] = nb;
	sk->bucket_scale = xmalloc((size_t)nb * sizeof(int));
	for (i = 0; i < nb; i++)
		sk->bucket_scale[i] = kt_new(J, K_KERNEL, xstrndup(k_mul_f32, strlen(k_mul_f32)),
		    kargs(hw, (bk[i].numel + 511) / 512 > 524280 ? 524280 : (bk[i].numel + 511) / 512,
			1, 128, 32, 0), model_mem(hw, 8.0 * bk[i].numel), 0);
	sk->memset_grad = kt_new(J, K_MEMSET, xstrndup("Memset (Device)", 15), NULL,
	    model_mem(hw, 4.0 * sk->params) / 2, 4 * sk->params);
	full = MTA_CHUNK;
	last = sk->params % MTA_CHUNK ? sk->params % MTA_CHUNK : MTA_CHUNK;
	sk->nadam = (int)((sk->params + MTA_CHUNK - 1) / MTA_CHUNK);
	sk->adam = kt_new(J, K_KERNEL, xstrndup(k_adam, strlen(k_adam)),
	    kargs(hw, 320, 1, 512, 64, 0), model_mem(hw, 28.0 * full), 0);
	sk->adam_last = kt_new(J, K_KERNEL, xstrndup(k_adam, strlen(k_adam)),
	    kargs(hw, (last + 65535) / 65536, 1, 512, 64, 0), model_mem(hw, 28.0 * last), 0);
	sk->scale = kt_new(J, K_KERNEL, xstrndup(k_scale, strlen(k_scale)),
	    kargs(hw, 320, 1, 512, 40, 0), model_mem(hw, 6.0 * full), 0);
	sk->scale_last = kt_new(J, K_KERNEL, xstrndup(k_scale, strlen(k_scale)),
	    kargs(hw, (last + 65535) / 65536, 1, 512, 40, 0), model_mem(hw, 6.0 * last), 0);
	sk->l2 = kt_new(J, K_KERNEL, xstrndup(k_l2, strlen(k_l2)),
	    kargs(hw, 320, 1, 512, 32, 4096), model_mem(hw, 4.0 * full), 0);
	sk->l2_last = kt_new(J, K_KERNEL, xstrndup(k_l2, strlen(k_l2)),
	    kargs(hw, (last + 65535) / 65536, 1, 512, 32, 4096), model_mem(hw, 4.0 * last), 0);
}

void
make_templates(struct tg_job *J)
{
	const struct tg_cfg *c = &J->c;
	const struct tg_hw *hw = &c->hw;
	int64_t s = c->seq, b = c->mbs, h = c->hidden, sb = s * b;
	int64_t hp = h / c->tp, fp = c->ffn / c->tp, vp = c->vocab / c->tp;
	int64_t ah = c->heads / c->tp, hd = h / c->heads;
	/* sequence parallelism: the norms, dropout and residual adds on a
	 * shard of the sequence */
	int64_t ss = c->sp ? s / c->tp : s, sbs = ss * b;
	int i;

	J->kt = xcalloc(NKT_STATIC, sizeof(*J->kt));
	J->nkt = NKT_STATIC;
	J->ot = xcalloc(NOT, sizeof(*J->ot));
	J->not = NOT;

	kt_mem(J, KT_LN_FWD, k_ln_fwd, sbs * h, 4.0);
	kt_mem(J, KT_LN_BWD_IN, k_ln_bwd_in, sbs * h, 6.0);
	kt_mem(J, KT_LN_BWD_GB, k_ln_bwd_gb, sbs * h, 4.0);
	kt_gemm(J, KT_QKV, sb, 3 * hp, h, "tn", 0);
	kt_gemm(J, KT_QKV_DG, sb, h, 3 * hp, "nn", 0);
	kt_gemm(J, KT_QKV_WG, 3 * hp, h, sb, "nt", 1);
	kt_mem(J, KT_ADD_QKV, k_add_bf, sb * 3 * hp, 6.0);
	kt_mem(J, KT_BG_QKV, k_sum_bf, sb * 3 * hp, 2.0);
	kt_flash(J, KT_FLASH_FWD, 0);
	kt_mem(J, KT_FLASH_BWD_DOT, k_flash_dot, sb * hp, 8.0);
	kt_flash(J, KT_FLASH_BWD, 1);
	kt_mem(J, KT_FLASH_BWD_CVT, k_flash_cvt, sb * hp, 6.0);
	kt_gemm(J, KT_PROJ, sb, h, hp, "tn", 0);
	kt_gemm(J, KT_PROJ_DG, sb, hp, h, "nn", 0);
	kt_gemm(J, KT_PROJ_WG, h, hp, sb, "nt", 1);
	kt_gemm(J, KT_FC1, sb, fp, h, "tn", 0);
	kt_gemm(J, KT_FC1_DG, sb, h, fp, "nn", 0);
	kt_gemm(J, KT_FC1_WG, fp, h, sb, "nt", 1);
	kt_mem(J, KT_ADD_F, k_add_bf, sb * fp, 6.0);
	kt_mem(J, KT_GELU, k_gelu, sb * fp, 4.0);
	kt_mem(J, KT_GELU_BWD, k_gelu_bwd, sb * fp, 6.0);
	kt_mem(J, KT_BG_F, k_sum_bf, sb * fp, 2.0);
	kt_gemm(J, KT_FC2, sb, h, fp, "tn", 0);
	kt_gemm(J, KT_FC2_DG, sb, fp, h, "nn", 0);
	kt_gemm(J, KT_FC2_WG, h, fp, sb, "nt", 1);
	kt_mem(J, KT_ADD_H, k_add_bf, sbs * h, 6.0);
	kt_mem(J, KT_BG_H, k_sum_bf, sbs * h, 2.0);
	kt_mem(J, KT_DROPOUT, k_dropout, sbs * h, 5.0);
	kt_mem(J, KT_DROPOUT_BWD, k_dropout_bwd, sbs * h, 5.0);
	kt_mem(J, KT_EMB_MASK, k_sub_i64, sb, 24.0);
	kt_mem(J, KT_EMB_LOOKUP, k_lookup, sb * h, 4.0);
	kt_mem(J, KT_EMB_FILL, k_fill_bf, sb * h, 3.0);
	kt_mem(J, KT_POS_LOOKUP, k_lookup, sb * h, 4.0);
	kt_mem(J, KT_EMB_BWD, k_emb_bwd, sb * h, 8.0);
	kt_mem(J, KT_POS_BWD, k_emb_bwd, sb * h, 8.0);
	kt_gemm(J, KT_LOGITS, sb, vp, h, "tn", 0);
	kt_gemm(J, KT_LOGITS_DG, sb, h, vp, "nn", 0);
	kt_gemm(J, KT_LOGITS_WG, vp, h, sb, "nt", 1);
	kt_mem(J, KT_CE_MAX, k_max_f32, sb * vp, 2.0);
	kt_mem(J, KT_CE_SUB, k_sub_f32, sb * vp, 6.0);
	kt_mem(J, KT_CE_GATHER, k_index, sb, 16.0);
	kt_mem(J, KT_CE_EXP, k_exp_f32, sb * vp, 8.0);
	kt_mem(J, KT_CE_SUM, k_sum_f32, sb * vp, 4.0);
	kt_mem(J, KT_CE_LOSS, k_sub_f32, sb, 12.0);
	kt_mem(J, KT_CE_BWD, k_mul_f32, sb * vp, 6.0);
	kt_mem(J, KT_SMALL, k_mul_f32, sb, 12.0);
	kt_mem(J, KT_L2NORM_CLEANUP, k_l2_cleanup, 320, 4.0);
	J->kt[KT_H2D_BATCH].name = xstrndup("Memcpy HtoD (Pinned -> Device)", 30);
	J->kt[KT_H2D_BATCH].cat = K_MEMCPY;
	J->kt[KT_H2D_BATCH].bytes = sb * 8 * ((c->pp == 1) + 1);
	J->kt[KT_H2D_BATCH].dur = model_copy(hw, J->kt[KT_H2D_BATCH].bytes, 0);
	J->kt[KT_D2H_ITEM].name = xstrndup("Memcpy DtoH (Device -> Pageable)", 32);
	J->kt[KT_D2H_ITEM].cat = K_MEMCPY;
	J->kt[KT_D2H_ITEM].bytes = 4;
	J->kt[KT_D2H_ITEM].dur = model_copy(hw, 4, 1);
	kt_mem(J, KT_POW, k_pow, 1, 8.0);

	ot_set(J, OT_LN, "aten::layer_norm", "T%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|L[%"
	    PRId64 "]|T%" PRId64 ":bf|T%" PRId64 ":bf|S1e-05|S1", ss, b, h, h, h, h);
	ot_set(J, OT_NLN, "aten::native_layer_norm", "T%" PRId64 ",%" PRId64 ",%" PRId64
	    ":bf|L[%" PRId64 "]|T%" PRId64 ":bf|T%" PRId64 ":bf|S1e-05", ss, b, h, h, h, h);
#define LIN(IDX, MM, MMI, NAME, K, N) \
	ot_set(J, IDX, "LinearWithGradAccumulationAndAsyncCommunication", \
	    "T%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%" PRId64 ":bf|N|S%s|S0|S0", \
	    s, b, (int64_t)(K), (int64_t)(N), (int64_t)(K), NAME); \
	ot_set(J, MM, "aten::matmul", "T%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|T%" PRId64 \
	    ",%" PRId64 ":bf", s, b, (int64_t)(K), (int64_t)(K), (int64_t)(N)); \
	ot_set(J, MMI, "aten::mm", "T%" PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%" PRId64 ":bf", \
	    sb, (int64_t)(K), (int64_t)(K), (int64_t)(N))
	LIN(OT_LINEAR_QKV, OT_MATMUL_QKV, OT_MM_QKV, "True", h, 3 * hp);
	LIN(OT_LINEAR_PROJ, OT_MATMUL_PROJ, OT_MM_PROJ, "False", hp, h);
	LIN(OT_LINEAR_FC1, OT_MATMUL_FC1, OT_MM_FC1, "True", h, fp);
	LIN(OT_LINEAR_FC2, OT_MATMUL_FC2, OT_MM_FC2, "False", fp, h);
	LIN(OT_LINEAR_LOGITS, OT_MATMUL_LOGITS, OT_MM_LOGITS, "True", h, vp);
#undef LIN
	ot_set(J, OT_MM_FC2_DG, "aten::mm", "T%" PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%"
	    PRId64 ":bf", sb, h, h, fp);
	ot_set(J, OT_MM_FC1_DG, "aten::mm", "T%" PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%"
	    PRId64 ":bf", sb, fp, fp, h);
	ot_set(J, OT_MM_PROJ_DG, "aten::mm", "T%" PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%"
	    PRId64 ":bf", sb, h, h, hp);
	ot_set(J, OT_MM_QKV_DG, "aten::mm", "T%" PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%"
	    PRId64 ":bf", sb, 3 * hp, 3 * hp, h);
	ot_set(J, OT_MM_LOGITS_DG, "aten::mm", "T%" PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%"
	    PRId64 ":bf", sb, vp, vp, h);
	ot_set(J, OT_ADD_QKV, "aten::add", "T%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|T%"
	    PRId64 ":bf|S1", s, b, 3 * hp, 3 * hp);
	ot_set(J, OT_ADD_H, "aten::add", "T%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|T%"
	    PRId64 ",%" PRId64 ",%" PRId64 ":bf|S1", ss, b, h, ss, b, h);
	ot_set(J, OT_ADD_RES, "aten::add", "T%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|T%"
	    PRId64 ",%" PRId64 ",%" PRId64 ":bf|S1", ss, b, h, ss, b, h);
	ot_set(J, OT_ADD_F, "aten::add", "T%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|T%"
	    PRId64 ":bf|S1", s, b, fp, fp);
	ot_set(J, OT_SDPA, "aten::scaled_dot_product_attention", "T%" PRId64 ",%" PRId64
	    ",%" PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
	    ":bf|T%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|N|S0.0|STrue|N|SFalse",
	    b, ah, s, hd, b, ah, s, hd, b, ah, s, hd);
	ot_set(J, OT_SDPA_FLASH, "aten::_scaled_dot_product_flash_attention", "T%" PRId64
	    ",%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%" PRId64 ",%" PRId64 ",%"
	    PRId64 ":bf|T%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|S0.0|STrue|SFalse|N",
	    b, ah, s, hd, b, ah, s, hd, b, ah, s, hd);
	ot_set(J, OT_FLASH_FWD, "aten::_flash_attention_forward", "T%" PRId64 ",%" PRId64
	    ",%" PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
	    ":bf|T%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|N|N|S%" PRId64 "|S%"
	    PRId64 "|S0.0|STrue|SFalse|N",
	    b, s, ah, hd, b, s, ah, hd, b, s, ah, hd, s, s);
	ot_set(J, OT_FLASH_BWD_OUTER, "aten::_scaled_dot_product_flash_attention_backward",
	    "T%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%" PRId64 ",%"
	    PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|T%"
	    PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%" PRId64 ",%"
	    PRId64 ":f32|N|N|S%" PRId64 "|S%" PRId64 "|S0.0|STrue|N|N|N",
	    b, ah, s, hd, b, ah, s, hd, b, ah, s, hd, b, ah, s, hd, b, ah, s, s, s);
	ot_set(J, OT_FLASH_BWD, "aten::_flash_attention_backward", "T%" PRId64 ",%" PRId64
	    ",%" PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
	    ":bf|T%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%" PRId64
	    ",%" PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
	    ":bf|T%" PRId64 ",%" PRId64 ",%" PRId64 ":f32|N|N|S%" PRId64 "|S%" PRId64
	    "|S0.0|STrue|N|N|N",
	    b, s, ah, hd, b, s, ah, hd, b, s, ah, hd, b, s, ah, hd, b, s, ah, hd, b, ah, s, s, s);
	ot_set(J, OT_DROPOUT, "aten::dropout", "T%" PRId64 ",%" PRId64 ",%" PRId64
	    ":bf|S0.1|STrue", ss, b, h);
	ot_set(J, OT_NDROPOUT, "aten::native_dropout", "T%" PRId64 ",%" PRId64 ",%" PRId64
	    ":bf|S0.1|STrue", ss, b, h);
	ot_set(J, OT_DROPOUT_BWD, "aten::native_dropout_backward", "T%" PRId64 ",%" PRId64
	    ",%" PRId64 ":bf|T%" PRId64 ",%" PRId64 ",%" PRId64 ":b|S1.1111111111111112",
	    ss, b, h, ss, b, h);
	ot_set(J, OT_GELU, "aten::gelu", "T%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|Stanh",
	    s, b, fp);
	ot_set(J, OT_GELU_BWD, "aten::gelu_backward", "T%" PRId64 ",%" PRId64 ",%" PRId64
	    ":bf|T%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|Stanh", s, b, fp, s, b, fp);
	ot_set(J, OT_SUM_H, "aten::sum", "T%" PRId64 ",%" PRId64 ":bf|L[0]|SFalse|N", sbs, h);
	ot_set(J, OT_SUM_F, "aten::sum", "T%" PRId64 ",%" PRId64 ":bf|L[0]|SFalse|N", sb, fp);
	ot_set(J, OT_SUM_QKV, "aten::sum", "T%" PRId64 ",%" PRId64 ":bf|L[0]|SFalse|N",
	    sb, 3 * hp);
	ot_set(J, OT_LN_BWD, "aten::native_layer_norm_backward", "T%" PRId64 ",%" PRId64
	    ",%" PRId64 ":bf|T%" PRId64 ",%" PRId64 ",%" PRId64 ":bf|L[%" PRId64 "]|T%"
	    PRId64 ",%" PRId64 ",1:f32|T%" PRId64 ",%" PRId64 ",1:f32|T%" PRId64 ":bf|T%"
	    PRId64 ":bf|L[True, True, True]", ss, b, h, ss, b, h, h, ss, b, ss, b, h, h);
	ot_set(J, OT_EMB_SUB, "aten::sub", "T%" PRId64 ",%" PRId64 ":i64|S%" PRId64 "|S1",
	    b, s, vp);
	ot_set(J, OT_EMB_FILL, "aten::masked_fill_", "T%" PRId64 ",%" PRId64 ",%" PRId64
	    ":bf|T%" PRId64 ",%" PRId64 ",1:b|S0.0", b, s, h, b, s);
	ot_set(J, OT_EMBEDDING, "aten::embedding", "T%" PRId64 ",%" PRId64 ":bf|T%" PRId64
	    ",%" PRId64 ":i64|S-1|SFalse|SFalse", vp, h, b, s);
	ot_set(J, OT_INDEX_SELECT, "aten::index_select", "T%" PRId64 ",%" PRId64 ":bf|S0|T%"
	    PRId64 ":i64", vp, h, sb);
	ot_set(J, OT_POS_EMBEDDING, "aten::embedding", "T%" PRId64 ",%" PRId64 ":bf|T%"
	    PRId64 ",%" PRId64 ":i64|S-1|SFalse|SFalse", s, h, b, s);
	ot_set(J, OT_POS_INDEX_SELECT, "aten::index_select", "T%" PRId64 ",%" PRId64
	    ":bf|S0|T%" PRId64 ":i64", s, h, sb);
	ot_set(J, OT_EMB_BWD, "aten::embedding_backward", "T%" PRId64 ",%" PRId64 ",%"
	    PRId64 ":bf|T%" PRId64 ",%" PRId64 ":i64|S%" PRId64 "|S-1|SFalse|SFalse",
	    b, s, h, b, s, vp);
	ot_set(J, OT_EMB_DENSE_BWD, "aten::embedding_dense_backward", "T%" PRId64 ",%"
	    PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%" PRId64 ":i64|S%" PRId64 "|S-1|SFalse",
	    b, s, h, b, s, vp);
	ot_set(J, OT_POS_BWD, "aten::embedding_backward", "T%" PRId64 ",%" PRId64 ",%"
	    PRId64 ":bf|T%" PRId64 ",%" PRId64 ":i64|S%" PRId64 "|S-1|SFalse|SFalse",
	    b, s, h, b, s, s);
	ot_set(J, OT_POS_DENSE_BWD, "aten::embedding_dense_backward", "T%" PRId64 ",%"
	    PRId64 ",%" PRId64 ":bf|T%" PRId64 ",%" PRId64 ":i64|S%" PRId64 "|S-1|SFalse",
	    b, s, h, b, s, s);
	ot_set(J, OT_CE, "_VocabParallelCrossEntropy", NULL);
	ot_set(J, OT_CE_MAX, "aten::max", "T%" PRId64 ",%" PRId64 ",%" PRId64 ":f32|S-1|SFalse",
	    s, b, vp);
	ot_set(J, OT_CE_SUB, "aten::sub_", "T%" PRId64 ",%" PRId64 ",%" PRId64 ":f32|T%"
	    PRId64 ",%" PRId64 ",1:f32|S1", s, b, vp, s, b);
	ot_set(J, OT_CE_INDEX, "aten::index", "T%" PRId64 ",%" PRId64 ":f32|N", sb, vp);
	ot_set(J, OT_CE_EXP, "aten::exp", "T%" PRId64 ",%" PRId64 ",%" PRId64 ":f32", s, b, vp);
	ot_set(J, OT_CE_SUM, "aten::sum", "T%" PRId64 ",%" PRId64 ",%" PRId64
	    ":f32|L[-1]|SFalse|N", s, b, vp);
	ot_set(J, OT_CE_LOG, "aten::log", "T%" PRId64 ",%" PRId64 ":f32", s, b);
	ot_set(J, OT_LOSS_MUL, "aten::mul", "T%" PRId64 ":f32|T%" PRId64 ":f32", sb, sb);
	ot_set(J, OT_LOSS_SUM, "aten::sum", "T%" PRId64 ":f32|N", sb);
	ot_set(J, OT_TO, "aten::to", "T%" PRId64 ",%" PRId64 ":i64|N|N|N|N|SFalse|SFalse|N",
	    b, s);
	ot_set(J, OT_TO_COPY, "aten::_to_copy", "T%" PRId64 ",%" PRId64
	    ":i64|N|N|N|N|SFalse|N", b, s);
	ot_set(J, OT_COPY, "aten::copy_", "T%" PRId64 ",%" PRId64 ":i64|T%" PRId64 ",%"
	    PRId64 ":i64|SFalse", b, s, b, s);
	ot_set(J, OT_ITEM, "aten::item", "T:f32");
	ot_set(J, OT_LSD, "aten::_local_scalar_dense", "T:f32");
	ot_set(J, OT_POW, "aten::pow", "T:f32|S2.0");
	for (i = 0; i < NOT; i++)
		if (J->ot[i].name == NULL)
			J->ot[i].name = xstrndup("aten::empty", 11);
	for (i = 0; i < NKT_STATIC; i++)
		if (J->kt[i].name == NULL)
			J->kt[i].name = xstrndup("unused", 6);
}

