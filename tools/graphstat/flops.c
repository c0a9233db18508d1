/*
 * flops: a step's work from its operators' shapes, and its rates (flops.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flops.h"
#include "report.h"
#include "util.h"

/*
 * Dense (no sparsity) bf16 tensor throughput of a GPU, fp16 where it has
 * no bf16, TFLOP/s, by a part of the name the trace's deviceProperties
 * give it (the header's `gpu`); the first match wins, so a name that
 * holds another comes before it.
 */
static const struct {
	const char *key, *name;
	double tflops;
} peaks[] = {
	/* NVIDIA H100 datasheet (2023): SXM 1979 bf16 with sparsity, 989.5 dense;
	 * PCIe 1513 / 756; NVL 1671 / 835.5 */
	{ "H100 PCIe", "H100 PCIe", 756 },
	{ "H100 NVL", "H100 NVL", 835 },
	{ "H100", "H100 SXM", 989 },
	/* NVIDIA H200 datasheet (2024): SXM 1979 with sparsity, 989 dense; NVL 1671 / 835 */
	{ "H200 NVL", "H200 NVL", 835 },
	{ "H200", "H200 SXM", 989 },
	/* NVIDIA GB200 NVL72 / HGX B200 datasheets (2024): B200 4.5 PFLOP/s
	 * fp16/bf16 with sparsity, 2.25 dense */
	{ "B200", "B200", 2250 },
	/* NVIDIA A100 datasheet (2021): 624 bf16 with sparsity, 312 dense (SXM and PCIe) */
	{ "A100", "A100", 312 },
	/* NVIDIA L40S datasheet (2023): 733 bf16 with sparsity, 366 dense */
	{ "L40S", "L40S", 366 },
	/* NVIDIA V100 datasheet (2020): 125 fp16 tensor (SXM2; PCIe 112), no bf16 */
	{ "V100", "V100", 125 },
	/* NVIDIA Turing architecture whitepaper (2018), table 1: RTX 2080 Ti
	 * 53.8 fp16 tensor with fp32 accumulate (reference clocks), no bf16 */
	{ "RTX 2080 Ti", "RTX 2080 Ti", 53.8 },
	/* AMD Instinct MI300X datasheet (2023): 1307.4 bf16 dense */
	{ "MI300X", "MI300X", 1307 },
	/* AMD Instinct MI250X datasheet (2021): 383 bf16; MI250 362.1 */
	{ "MI250X", "MI250X", 383 },
	{ "MI250", "MI250", 362 },
};

double
flops_peak(const char *gpu, const char **name)
{
	size_t i, j, n, k;

	for (i = 0; gpu != NULL && i < sizeof(peaks) / sizeof(peaks[0]); i++) {
		k = strlen(peaks[i].key);
		n = strlen(gpu);
		for (j = 0; j + k <= n; j++)
			if (strncasecmp(gpu + j, peaks[i].key, k) == 0) {
				if (name != NULL)
					*name = peaks[i].name;
				return peaks[i].tflops;
			}
	}
	if (name != NULL)
		*name = NULL;
	return 0;
}

void
flops_init(struct flops *f)
{
	memset(f, 0, sizeof(*f));
	config_init(&f->cfg);
}

void
flops_release(struct flops *f)
{
	free(f->v);
	config_release(&f->cfg);
	f->v = NULL;
	f->n = f->cap = 0;
}

void
flops_header(struct flops *f, const struct kg_header *h)
{
	config_header(&f->cfg, h);
	f->cfg.groups = 1;
	f->n = f->last = 0;
	f->causal = 0;
}

/* The record of rank's iteration it, made at its first task. */
static struct fl_iter *
iter_of(struct flops *f, int64_t rank, int64_t it)
{
	struct fl_iter *x;
	size_t i;

	if (f->last < f->n && f->v[f->last].rank == rank && f->v[f->last].it == it)
		return &f->v[f->last];
	for (i = 0; i < f->n; i++)
		if (f->v[i].rank == rank && f->v[i].it == it)
			return &f->v[f->last = i];
	grow(&f->v, &f->cap, f->n + 1, sizeof(*f->v));
	x = &f->v[f->n];
	memset(x, 0, sizeof(*x));
	x->rank = rank, x->it = it;
	x->tokens = -1;
	x->mb = INT64_MIN;
	x->op = x->oc = x->sh = KG_NONE;
	param_count_init(&x->pc);
	f->last = f->n;
	return &f->v[f->n++];
}

#define MAXOP 6

/* Each operand's dims, up to four a tensor (its rank: -1 more, 0 none). */
struct ops {
	int64_t d[MAXOP][4], numel[MAXOP];
	int rank[MAXOP], n;
};

static void
parse_ops(const char *p, struct ops *o)
{
	int depth = 0, k = -1, num = 0;
	int64_t v = 0;

	memset(o, 0, sizeof(*o));
	for (; *p != '\0'; p++) {
		if (*p == '[') {
			if (++depth == 2 && ++k < MAXOP)
				o->numel[k] = 1;
			else if (depth > 2 && k >= 0 && k < MAXOP)
				o->rank[k] = -1; /* a list of tensors */
		} else if (*p >= '0' && *p <= '9') {
			if (v <= PARAMS_NUMEL_MAX)
				v = v * 10 + (*p - '0');
			num = 1;
		}
		if ((*p == ',' || *p == ']') && num) {
			if (depth == 2 && k >= 0 && k < MAXOP && o->rank[k] >= 0) {
				if (v > PARAMS_NUMEL_MAX || (v > 0 && o->numel[k] > PARAMS_NUMEL_MAX / v))
					o->rank[k] = -1, o->numel[k] = 0;
				else if (o->rank[k] < 4)
					o->numel[k] *= v, o->d[k][o->rank[k]++] = v;
				else
					o->rank[k] = -1, o->numel[k] = 0;
			}
			v = 0, num = 0;
		}
		if (*p == ']')
			depth--;
	}
	o->n = k + 1 < MAXOP ? k + 1 : MAXOP;
	for (k = 0; k < o->n; k++)
		if (o->rank[k] < 0)
			o->numel[k] = 0;
}

static int
is(const char *op, const char *name)
{
	return strcmp(op, name) == 0;
}

/* Last dimension of operand i, 0 when it is not a tensor. */
static double
lastd(const struct ops *o, int i)
{
	return i < o->n && o->rank[i] > 0 ? (double)o->d[i][o->rank[i] - 1] : 0;
}

/* A GEMM's FLOPs, 2 m n k; -1 when op is none. */
static double
gemm_flops(const char *op, const struct ops *o)
{
	int a = 0;

	if (is(op, "aten::addmm") || is(op, "aten::baddbmm") || is(op, "aten::addbmm"))
		a = 1;
	else if (!is(op, "aten::mm") && !is(op, "aten::bmm") && !is(op, "aten::matmul") &&
	    !is(op, "aten::_scaled_mm") && !is(op, "aten::linear"))
		return -1;
	if (a + 1 >= o->n || o->rank[a] < 1 || o->rank[a + 1] < 1)
		return 0;
	if (is(op, "aten::linear")) /* x [..., k], W [n, k] */
		return 2.0 * (double)o->numel[a] * (double)o->d[1][0];
	if (o->rank[a + 1] == 1) /* a matrix by a vector */
		return 2.0 * (double)o->numel[a];
	/* A [..., m, k] B [..., k, n]: 2 m k n for each of A's batches */
	return 2.0 * (double)o->numel[a] * lastd(o, a + 1);
}

/*
 * A fused attention call: its forward's FLOPs (4 b h s_q s_k d, halved
 * for a causal mask where s_q = s_k), and whether it is the backward;
 * -1 when op is none.
 */
static double
attn_flops(const char *op, const struct ops *o, int *bwd, int *causal)
{
	static const struct {
		const char *name;
		int bshd, bwd;
	} at[] = {
		{ "aten::_scaled_dot_product_flash_attention", 0, 0 },
		{ "aten::_scaled_dot_product_efficient_attention", 0, 0 },
		{ "aten::_scaled_dot_product_cudnn_attention", 0, 0 },
		{ "aten::_scaled_dot_product_fused_attention_overrideable", 0, 0 },
		{ "aten::_cudnn_attention_forward", 0, 0 },
		{ "aten::_flash_attention_forward", 1, 0 },
		{ "aten::_efficient_attention_forward", 1, 0 },
		{ "aten::_scaled_dot_product_flash_attention_backward", 0, 1 },
		{ "aten::_scaled_dot_product_efficient_attention_backward", 0, 1 },
		{ "aten::_scaled_dot_product_cudnn_attention_backward", 0, 1 },
		{ "aten::_scaled_dot_product_fused_attention_overrideable_backward", 0, 1 },
		{ "aten::_cudnn_attention_backward", 0, 1 },
		{ "aten::_flash_attention_backward", 1, 1 },
		{ "aten::_efficient_attention_backward", 1, 1 },
	};
	size_t i;
	int q, k;
	double b, h, sq, sk, d, v;

	for (i = 0; i < sizeof(at) / sizeof(at[0]) && !is(op, at[i].name); i++)
		;
	if (i == sizeof(at) / sizeof(at[0]))
		return -1;
	*bwd = at[i].bwd;
	q = at[i].bwd; /* a backward's first operand is the output's gradient */
	k = q + 1;
	if (k >= o->n || o->rank[q] != 4 || o->rank[k] != 4)
		return 0;
	b = (double)o->d[q][0], d = (double)o->d[q][3];
	h = (double)o->d[q][at[i].bshd ? 2 : 1];
	sq = (double)o->d[q][at[i].bshd ? 1 : 2];
	sk = (double)o->d[k][at[i].bshd ? 1 : 2];
	v = 4 * b * h * sq * sk * d;
	if (sq == sk) {
		*causal = 1;
		v /= 2;
	}
	return v;
}

void
flops_task(struct flops *f, const struct kg_reader *r, const struct kg_task *t, int64_t rank)
{
	struct fl_iter *x;
	const char *op, *dims;
	struct ops o;
	double v;
	int bwd = 0, fwd;

	config_task(&f->cfg, t);
	if (t->recomp && t->kind != KG_CPU && t->kind != KG_RT) {
		x = iter_of(f, rank, t->iter);
		x->rc_ns += t->dur, x->rc_n++;
	}
	if (t->kind != KG_RT || t->op == KG_NONE)
		return;
	x = iter_of(f, rank, t->iter);
	fwd = t->phase == KG_PH_FWD || t->phase == KG_PH_NONE;
	if (t->shapes == KG_NONE) {
		if (t->op != x->op || t->ocall != x->oc)
			x->calls++;
		x->op = t->op, x->oc = t->ocall, x->sh = KG_NONE;
		return;
	}
	/* one call once: its launches share op and oc (or shapes) */
	if (t->op == x->op && (t->ocall != KG_NONE ? t->ocall == x->oc : t->shapes == x->sh))
		return;
	x->op = t->op, x->oc = t->ocall, x->sh = t->shapes;
	x->calls++;
	x->shaped++;
	op = kg_str(r, t->op);
	dims = kg_str(r, t->shapes);
	if (op == NULL || dims == NULL)
		return;
	parse_ops(dims, &o);
	if (fwd && (x->mb == INT64_MIN || t->mb < 0 || t->mb == x->mb)) {
		/* the parameters: the first micro-batch's forward; a lookup
		 * table outside the layers (an embedding lowered to gather or
		 * index_select) is one, and an LM head as large is it tied */
		if (x->mb == INT64_MIN && t->mb >= 0)
			x->mb = t->mb;
		x->pc.tied = t->layer < 0;
		if (t->layer < 0 && o.n >= 1 && o.rank[0] == 2 &&
		    (is(op, "aten::gather") || is(op, "aten::index_select"))) {
			if (x->pc.ntable == 0 || o.numel[0] > x->pc.table[0])
				x->pc.table[0] = o.numel[0], x->pc.ntable = 1;
			x->pc.sum = params_add(x->pc.sum, o.numel[0]);
			x->pc.tensors++;
		} else {
			param_count_text(&x->pc, t->op, t->shapes, op, dims);
		}
	}
	if (fwd && o.n >= 2 && (is(op, "aten::nll_loss_forward") || is(op, "aten::nll_loss") ||
	    is(op, "aten::nll_loss2d_forward") || is(op, "aten::cross_entropy_loss")) &&
	    o.rank[1] >= 1)
		x->tokens = (x->tokens < 0 ? 0 : x->tokens) + o.numel[1];
	if (fwd && t->layer < 0 && o.n >= 2 && o.rank[0] == 2) {
		/* a lookup: its indices, into the table of the most rows */
		int64_t idx = -1;

		if (is(op, "aten::embedding"))
			idx = o.numel[1];
		else if (is(op, "aten::index_select") && o.n >= 3 && o.rank[2] == 1)
			idx = o.numel[2];
		else if (is(op, "aten::gather") && o.n >= 3 && o.rank[2] == 2)
			idx = o.d[2][0];
		if (idx >= 0 && o.d[0][0] > x->erows)
			x->erows = o.d[0][0], x->etokens = 0;
		if (idx >= 0 && o.d[0][0] == x->erows)
			x->etokens += idx;
	}
	if ((v = gemm_flops(op, &o)) >= 0) {
		x->gemm += v;
	} else if ((v = attn_flops(op, &o, &bwd, &f->causal)) >= 0) {
		x->attn += bwd ? 2.5 * v : v;
		if (bwd)
			x->attn_model += 3 * v;
		else if (t->phase == KG_PH_BWD)
			x->recomp++;
	} else if (o.n >= 1 && o.rank[0] > 0) {
		x->other += (double)o.numel[0];
	}
}

void
flops_finish(struct flops *f, const struct kg_reader *r)
{
	config_finish(&f->cfg, r);
}

/* The tokens of a rank's step: its loss's targets, else its lookups'. */
static int64_t
rank_tokens(const struct fl_iter *x)
{
	return x->tokens >= 0 ? x->tokens : x->etokens > 0 ? x->etokens : -1;
}

void
flops_perf(const struct flops *f, int64_t rank, int64_t it, struct perf *p)
{
	const struct config *c = &f->cfg;
	int64_t dp = c->dp > 0 ? c->dp : 1, tp = c->tp > 0 ? c->tp : 1;
	int64_t nr = 0, loss = 0, look = 0, nloss = 0, nlook = 0, rt;
	size_t i;
	int job = c->nranks > 1 || rank == JOB;

	memset(p, 0, sizeof(*p));
	p->tokens = p->rtokens = -1;
	p->dp = dp;
	p->causal = f->causal;
	p->peak = f->peak_opt > 0 ? f->peak_opt : flops_peak(c->gpu, &p->gpu);
	if (f->peak_opt > 0)
		p->gpu = "--peak-tflops";
	/* the step's tokens: a job's, its ranks' counted once a
	 * tensor-parallel group (each of its ranks sees the same batch) */
	for (i = 0; i < f->n; i++) {
		const struct fl_iter *x = &f->v[i];

		if (x->it != it)
			continue;
		if (x->tokens >= 0)
			loss += x->tokens, nloss++;
		if (x->etokens > 0)
			look += x->etokens, nlook++;
	}
	if (job) {
		p->gpus = c->nranks;
		if (nloss > 0 || nlook > 0)
			p->tokens = (nloss > 0 ? loss : look) / tp;
		p->rtokens = p->tokens >= 0 ? p->tokens / dp : -1;
	} else {
		p->gpus = c->world > 0 ? c->world : dp * tp;
	}
	for (i = 0; i < f->n; i++) {
		const struct fl_iter *x = &f->v[i];
		double m;

		if (x->it != it || (rank != JOB && x->rank != rank) || x->shaped == 0)
			continue;
		rt = job ? p->rtokens : rank_tokens(x);
		if (!job) {
			p->rtokens = rt;
			p->tokens = rt >= 0 ? rt * dp : -1;
		}
		m = rt >= 0 ? 6.0 * (double)x->pc.sum * (double)rt + x->attn_model : -1;
		p->have = 1;
		p->gemm += x->gemm, p->attn += x->attn, p->other += x->other;
		p->attn_model += x->attn_model;
		p->hw += x->gemm + x->attn;
		p->model = p->model < 0 || m < 0 ? -1 : p->model + m;
		p->params += x->pc.sum;
		p->recomp += x->recomp;
		p->rc_ns += (double)x->rc_ns, p->rc_n += x->rc_n;
		nr++;
	}
	if (rank == JOB && nr > 0) {
		p->gemm /= (double)nr, p->attn /= (double)nr, p->other /= (double)nr;
		p->attn_model /= (double)nr;
		p->hw /= (double)nr;
		p->rc_ns /= (double)nr;
		if (p->model > 0)
			p->model /= (double)nr;
		p->params /= dp;
	}
	if (!p->have)
		p->model = -1;
}

double
perf_tokens_per_s(const struct perf *p, int64_t span)
{
	return p->tokens > 0 && span > 0 ? (double)p->tokens * 1e9 / (double)span : -1;
}

double
perf_tflops(const struct perf *p, int64_t span)
{
	return p->have && span > 0 ? p->hw / (double)span / 1e3 : -1;
}

double
perf_mfu(const struct perf *p, int64_t span)
{
	return p->have && p->model > 0 && p->peak > 0 && span > 0 ?
	    p->model / (double)span / 1e3 / p->peak : -1;
}

void
perf_json(const struct perf *p)
{
	if (!p->have) {
		printf(",\"flops\":null");
		return;
	}
	printf(",\"flops\":{\"hardware\":%.6g,\"gemm\":%.6g,\"attention\":%.6g,\"other\":%.6g,",
	    p->hw, p->gemm, p->attn, p->other);
	if (p->model >= 0)
		printf("\"model\":%.6g,", p->model);
	else
		printf("\"model\":null,");
	printf("\"attention_model\":%.6g,\"causal\":%s,\"parameters\":%lld,", p->attn_model,
	    p->causal ? "true" : "false", (long long)p->params);
	if (p->tokens >= 0)
		printf("\"tokens\":%lld,", (long long)p->tokens);
	else
		printf("\"tokens\":null,");
	printf("\"dp\":%lld,\"gpus\":%lld,", (long long)p->dp, (long long)p->gpus);
	if (p->peak > 0)
		printf("\"peak_tflops\":%g}", p->peak);
	else
		printf("\"peak_tflops\":null}");
}
