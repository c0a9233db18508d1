/*
 * Sharding a graph's GPU work as Megatron shards a transformer across a
 * tensor-parallel group (graph-scale-tp(1), SHARDING).
 *
 * The model's sizes come from the shapes: the hidden size H is the last
 * dimension of a layer norm's input, the tokens of a micro-batch M the
 * product of its other dimensions. A GEMM of the forward or backward
 * phase whose extents are M, H and a third size S (or H twice) is a
 * layer's linear (or the output layer): Megatron splits S (column-
 * parallel: the QKV and MLP-up output, the vocabulary; row-parallel: the
 * attention projection's and the MLP-down's input), so S goes to
 * S T / N, T the traced degree and N the new one. When both other
 * extents are H, a forward GEMM after an attention or an activation
 * (with no GEMM between) is row-parallel (its inner size is split),
 * another is column-parallel (its output); a backward one has its
 * output's columns split. Attention's heads go to heads T / N. Any
 * other operator's tensor whose last size equal to a split size S (not
 * H nor M) has that size split: the bias adds, activations, attention's
 * output copies and the vocabulary's softmax between a column- and a
 * row-parallel GEMM. Kernels with no shapes that are GEMMs (a weight
 * gradient fused into its autograd node) take the factor of the GEMM
 * before them on their stream; the optimizer phase's kernels and copies
 * take T / N, the share of the parameters a rank keeps.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kg.h"
#include "params.h"
#include "tp.h"
#include "util.h"

int
tp_is_gemm(const char *op)
{
	static const char *const g[] = { "aten::mm", "aten::addmm", "aten::matmul",
		"aten::linear", NULL };
	const char *const *p;

	for (p = g; *p != NULL; p++)
		if (strcmp(op, *p) == 0)
			return 1;
	return 0;
}

static int
is_attn(const char *op)
{
	return strstr(op, "attention") != NULL && (strstr(op, "_flash_attention") != NULL ||
	    strstr(op, "_efficient_attention") != NULL || strstr(op, "_cudnn_attention") != NULL ||
	    strstr(op, "scaled_dot_product") != NULL);
}

static int
is_act(const char *op)
{
	static const char *const a[] = { "aten::gelu", "aten::silu", "aten::relu", "aten::relu_",
		"aten::tanh", "aten::sigmoid", NULL };
	const char *const *p;

	for (p = a; *p != NULL; p++)
		if (strcmp(op, *p) == 0)
			return 1;
	return is_attn(op) && strstr(op, "backward") == NULL;
}

static int
gemm_named(const char *k)
{
	return strstr(k, "gemm") != NULL || strstr(k, "nvjet") != NULL ||
	    strstr(k, "cutlass") != NULL;
}

/* A GEMM's extents and where each one's sizes are among d's tokens. */
struct gpos {
	int64_t m, k, n;
	size_t pos[3][3]; /* token indices by role */
	int npos[3];
};

static void
addpos(struct gpos *g, int role, size_t at)
{
	if (g->npos[role] < 3)
		g->pos[role][g->npos[role]++] = at;
}

/* The GEMM's extents from its dims; 0, or -1 when they do not say. */
static int
gemm_pos(const char *op, const struct rs_dims *d, struct gpos *g)
{
	struct rs_tensor t[8];
	size_t nt = rs_tensors(d, t, 8);
	int a, b = -1, bias = -1, i;

	memset(g, 0, sizeof(*g));
	if (nt > 8)
		return -1;
	if (strcmp(op, "aten::addmm") == 0)
		bias = 0, a = 1, b = 2;
	else if (strcmp(op, "aten::linear") == 0)
		a = 0, b = 1, bias = 2;
	else
		a = 0, b = 1;
	if ((size_t)b >= nt || t[a].rank < 2 || t[b].rank != 2)
		return -1;
	g->m = 1;
	for (i = 0; i < t[a].rank - 1; i++)
		g->m *= d->v[t[a].at + (size_t)i];
	addpos(g, R_M, t[a].at + (size_t)t[a].rank - 2);
	g->k = d->v[t[a].at + (size_t)t[a].rank - 1];
	addpos(g, R_K, t[a].at + (size_t)t[a].rank - 1);
	if (strcmp(op, "aten::linear") == 0) {
		/* weight [N, K] */
		if (d->v[t[b].at + 1] != g->k)
			return -1;
		addpos(g, R_K, t[b].at + 1);
		g->n = d->v[t[b].at];
		addpos(g, R_N, t[b].at);
	} else {
		if (d->v[t[b].at] != g->k)
			return -1;
		addpos(g, R_K, t[b].at);
		g->n = d->v[t[b].at + 1];
		addpos(g, R_N, t[b].at + 1);
	}
	if (bias >= 0 && (size_t)bias < nt && t[bias].rank >= 1 &&
	    d->v[t[bias].at + (size_t)t[bias].rank - 1] == g->n)
		addpos(g, R_N, t[bias].at + (size_t)t[bias].rank - 1);
	return 0;
}

/*
 * Which extent of a GEMM of phase ph is split (R_NONE: not a layer's);
 * `after` is set when an attention or activation ran since the last GEMM
 * on its stream. *dgrad is set when its rows are the tokens (it makes
 * activations).
 */
static int
split_role(const struct tp *c, const struct gpos *g, int ph, int after, int *dgrad)
{
	int64_t x, y;
	int rx, ry;

	*dgrad = 0;
	if (g->m == c->M) {
		x = g->k, y = g->n, rx = R_K, ry = R_N;
		*dgrad = 1;
	} else if (ph == KG_PH_BWD && g->k == c->M) {
		x = g->m, y = g->n, rx = R_M, ry = R_N;
	} else {
		return R_NONE;
	}
	if (x == c->H && y != c->H)
		return ry;
	if (y == c->H && x != c->H)
		return rx;
	if (x == c->H && y == c->H)
		return ph == KG_PH_FWD && after ? rx : ry;
	return R_NONE;
}

static int
is_split(const struct tp *c, int64_t v)
{
	return c->nsv > 0 && bsearch(&v, c->sv, c->nsv, sizeof(v), cmp_i64) != NULL;
}

int
tp_sizes(struct tp *c)
{
	struct rs_dims d;
	struct rs_tensor t[32];
	size_t i, nshapes = 0, nt;
	int64_t hr = 0;

	rs_dims_init(&d);
	c->H = c->M = 0;
	for (i = 0; i < c->nt; i++) {
		const struct kg_task *k = &c->t[i];
		const char *op, *sh;

		if (k->shapes == KG_NONE || k->op == KG_NONE)
			continue;
		nshapes++;
		if (k->kind != KG_KERN)
			continue;
		op = kg_str(c->r, k->op), sh = kg_str(c->r, k->shapes);
		if (op == NULL || sh == NULL || rs_parse(&d, sh) < 0)
			continue;
		nt = rs_tensors(&d, t, 32);
		if (nt == 0 || nt > 32)
			continue;
		if (c->H == 0 && (strcmp(op, "aten::native_layer_norm") == 0 ||
		    strcmp(op, "aten::layer_norm") == 0) && t[0].rank >= 2) {
			int j;

			c->H = d.v[t[0].at + (size_t)t[0].rank - 1];
			c->M = 1;
			for (j = 0; j < t[0].rank - 1; j++)
				c->M *= d.v[t[0].at + (size_t)j];
		}
		if (hr == 0 && is_attn(op) && strstr(op, "backward") == NULL && t[0].rank == 4)
			hr = d.v[t[0].at + (strstr(op, "scaled_dot_product") == NULL &&
			    strstr(op, "_flash_attention") != NULL ? 2 : 1)];
	}
	if (nshapes == 0) {
		errmsg("%s: section %d: no operator shapes: the trace was recorded without "
		    "record_shapes (torch.profiler.profile(record_shapes=True) records them)",
		    c->name, c->index);
		goto fail;
	}
	if (c->H <= 0 || c->M <= 0 || hr <= 0) {
		/* not a transformer's structure: say all that is missing */
		errmsg("%s: section %d: not a transformer's structure: %s%s%s", c->name, c->index,
		    c->H <= 0 || c->M <= 0 ? "no layer norm with shapes (the hidden size)" : "",
		    (c->H <= 0 || c->M <= 0) && hr <= 0 ? ", " : "",
		    hr <= 0 ? "no attention call with shapes (flash, memory-efficient, cuDNN or "
		    "scaled_dot_product: the heads)" : "");
		goto fail;
	}
	c->heads = hr * c->T;
	/*
	 * Sequence parallelism traced: the norms run on M / T tokens, the
	 * GEMMs on M (gathered).
	 */
	c->Mn = c->M;
	if (c->T > 1) {
		size_t full = 0, shard = 0;

		for (i = 0; i < c->nt; i++) {
			const struct kg_task *k = &c->t[i];
			struct gpos g;
			const char *op;

			if (k->kind != KG_KERN || k->phase != KG_PH_FWD || k->shapes == KG_NONE ||
			    k->op == KG_NONE || !tp_is_gemm(op = kg_str(c->r, k->op)) ||
			    rs_parse(&d, kg_str(c->r, k->shapes)) < 0 || gemm_pos(op, &d, &g) < 0)
				continue;
			full += g.m == c->M;
			shard += g.m == c->M * c->T;
		}
		if (full == 0 && shard > 0) {
			c->sp0 = 1;
			c->M = c->Mn * c->T;
		}
	}
	/* the split sizes: the third extent of the forward pass's GEMMs */
	for (i = 0; i < c->nt; i++) {
		const struct kg_task *k = &c->t[i];
		struct gpos g;
		const char *op;
		int64_t v = 0;

		if (k->kind != KG_KERN || k->phase != KG_PH_FWD || k->shapes == KG_NONE ||
		    k->op == KG_NONE || !tp_is_gemm(op = kg_str(c->r, k->op)) ||
		    rs_parse(&d, kg_str(c->r, k->shapes)) < 0 || gemm_pos(op, &d, &g) < 0 ||
		    g.m != c->M)
			continue;
		if (g.k == c->H && g.n != c->H)
			v = g.n;
		else if (g.n == c->H && g.k != c->H)
			v = g.k;
		if (v > 0 && v != c->M && !is_split(c, v)) {
			VEC_PUSH(c->sv, c->nsv, c->capsv, v);
			qsort(c->sv, c->nsv, sizeof(*c->sv), cmp_i64);
		}
	}
	if (c->nsv == 0) {
		for (i = 0; i < c->nt && c->t[i].phase != KG_PH_FWD; i++)
			;
		errmsg("%s: section %d: no attention or MLP GEMM: none of the forward phase from "
		    "the hidden size %lld to another (QKV, MLP up) on the norms' %lld tokens%s",
		    c->name, c->index, (long long)c->H, (long long)c->M, i == c->nt ?
		    "; no task has the forward phase's tag (an inference trace: the training "
		    "phases are what is sharded)" : "");
		goto fail;
	}
	rs_dims_release(&d);
	return 0;
fail:
	rs_dims_release(&d);
	return 1;
}

/* A size split: v T / N, or -1 when N does not divide v T. */
static int64_t
split(const struct tp *c, int64_t v)
{
	if (v * c->T % c->o->n != 0)
		return -1;
	return v * c->T / c->o->n;
}

/*
 * Sequence parallelism changed: a tensor of the norms' tokens (its last
 * size H, or 1 for a norm's statistics) moves to the new count of
 * tokens, its first size scaled. 1 when it changed. A lookup's table
 * (an embedding's, a position table of S x H when S is M) is a
 * parameter, and the loss's per-token sizes of 1 are the whole
 * sequence's: neither is one.
 */
static int
tok_tensor(const struct tp *c, const char *op, const struct rs_dims *d,
    const struct rs_tensor *t)
{
	int64_t tok = 1, last;
	int r;

	if (t->rank < 2 || strstr(op, "embedding") != NULL || strstr(op, "index_select") != NULL ||
	    strstr(op, "gather") != NULL)
		return 0;
	last = d->v[t->at + (size_t)t->rank - 1];
	if (last != c->H && (last != 1 || strstr(op, "norm") == NULL))
		return 0;
	for (r = 0; r < t->rank - 1; r++)
		tok *= d->v[t->at + (size_t)r];
	return tok == c->Mn;
}

static int
seq_shard(const struct tp *c, struct rs_dims *d, const struct rs_tensor *t)
{
	int64_t now, f;

	now = c->sp1 ? c->M / c->o->n : c->M;
	f = d->v[t->at];
	if (now == c->Mn || f * now % c->Mn != 0)
		return 0;
	d->v[t->at] = f * now / c->Mn;
	return 1;
}

/* The factor of task k whose dims become text `nd`. */
static double
factor(struct tp *c, const struct kg_task *k, const char *nd)
{
	struct om_call oc;
	int how;
	double f;

	oc.op = kg_str(c->r, k->op);
	oc.dims = kg_str(c->r, k->shapes);
	oc.types = k->itypes != KG_NONE ? kg_str(c->r, k->itypes) : NULL;
	oc.kernel = kg_str(c->r, k->name);
	oc.kind = k->kind, oc.bytes = k->bytes, oc.layout = -1;
	f = rs_factor(c->o->have_to ? &c->o->to : NULL, c->o->have_to ? c->o->to.sms :
	    c->g->h.gpu_sms > 0 ? (int)c->g->h.gpu_sms : 132, &oc, nd, &how);
	if (how >= 0 && how < 8)
		c->how[how]++;
	if (c->o->have_src && how == RS_MODEL) {
		/* the source GPU's model: the old shapes on the new GPU over
		 * the old shapes on the old one */
		struct om_desc a, b;
		int via;
		double pa, pb;

		om_describe(&oc, c->o->to.sms, &a);
		om_describe(&oc, c->o->src.sms, &b);
		pa = om_predict(&c->o->to, &a, &via);
		pb = om_predict(&c->o->src, &b, &via);
		if (pa > 0 && pb > 0)
			f *= pa / pb;
	}
	return f;
}

static int
cmp_task(const void *x, const void *y, void *arg)
{
	const struct kg_task *t = arg;
	const struct kg_task *a = &t[*(const uint32_t *)x], *b = &t[*(const uint32_t *)y];

	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* qsort_r is not in POSIX: the tasks for the comparison. */
static const struct kg_task *sort_tasks;

static int
cmp_sorted(const void *x, const void *y)
{
	return cmp_task(x, y, (void *)sort_tasks);
}

static int
bad_split(const struct tp *c, const struct kg_task *k, int64_t v)
{
	errmsg("%s: section %d: task %u: %s: size %lld (%lld in all) does not divide among %lld "
	    "tensor-parallel ranks", c->name, c->index, k->id, kg_str(c->r, k->op),
	    (long long)v, (long long)(v * c->T), (long long)c->o->n);
	return 1;
}

const char *
tp_text(const struct tp *c, uint32_t id)
{
	if (id == KG_NONE)
		return NULL;
	if (id < c->g->nstr)
		return kg_str(c->r, id);
	return id - c->xs.base < c->xs.in.n ? c->xs.in.str[id - c->xs.base] : NULL;
}

/* A lookup's table (an embedding's, a position table), as kept by
 * index_select, embedding or gather outside the layers: its elements. */
static int64_t
table_of(const char *op, const char *dims)
{
	int64_t numel[2], first[2], last[2];

	if (strcmp(op, "aten::index_select") != 0 && strcmp(op, "aten::embedding") != 0 &&
	    strcmp(op, "aten::gather") != 0)
		return 0;
	if (dims_operands(dims, numel, first, last, 2) < 1 || !params_rows(numel[0], first[0], last[0]))
		return 0;
	return numel[0];
}

/*
 * A rank's parameters at the new degree over those as traced: the
 * weights and biases of the forward kernels of each processor's first
 * micro-batch (common/params), and the lookup tables, counted before and
 * after sharding. Not T / N: the norms, the row-parallel biases and a
 * position table are not split. T / N where no kernel has shapes.
 */
static double
rank_params(const struct tp *c, const uint32_t *ord)
{
	struct param_count a, b;
	uint32_t proc = KG_NONE;
	int64_t it = INT64_MIN, mb = INT64_MIN, ta = 0, tb = 0;
	size_t i;

	param_count_init(&a);
	param_count_init(&b);
	a.tied = b.tied = 0;
	for (i = 0; i < c->nt; i++) {
		const struct kg_task *k = &c->t[ord[i]], *o = &c->g->task[ord[i]];
		const char *op, *da, *db;

		if (k->kind != KG_KERN || k->phase != KG_PH_FWD || k->op == KG_NONE ||
		    k->shapes == KG_NONE)
			continue;
		if (k->proc != proc)
			proc = k->proc, it = k->iter, mb = INT64_MIN;
		if (mb == INT64_MIN && k->mb >= 0)
			mb = k->mb;
		/* a kernel of no micro-batch goes with the first */
		if (k->iter != it || (k->mb >= 0 && k->mb != mb))
			continue;
		op = tp_text(c, k->op);
		da = tp_text(c, o->shapes);
		db = tp_text(c, k->shapes);
		if (op == NULL || da == NULL || db == NULL)
			continue;
		param_count_text(&a, o->op, o->shapes, op, da);
		param_count_text(&b, k->op, k->shapes, op, db);
		if (k->layer < 0)
			ta += table_of(op, da), tb += table_of(op, db);
	}
	if (a.sum + ta <= 0 || b.sum + tb <= 0)
		return (double)c->T / (double)c->o->n;
	return (double)(b.sum + tb) / (double)(a.sum + ta);
}

int
tp_shard(struct tp *c)
{
	uint32_t *ord = xmalloc((c->nt + 1) * sizeof(*ord));
	struct rs_dims d;
	struct rs_tensor tt[16];
	uint32_t proc = KG_NONE;
	size_t i;
	int after = 0, rc = 1, nrv = 0;
	int64_t rv[4]; /* the split sizes of the region the stream is in */
	double lastf = 1;

	rs_dims_init(&d);
	c->arafter = xcalloc(c->nt + 1, 1);
	c->narafter = c->nt;
	c->arbytes = xcalloc(c->nt + 1, sizeof(*c->arbytes));
	for (i = 0; i < c->nt; i++)
		ord[i] = (uint32_t)i;
	sort_tasks = c->t;
	qsort(ord, c->nt, sizeof(*ord), cmp_sorted);
	for (i = 0; i < c->nt; i++) {
		struct kg_task *k = &c->t[ord[i]];
		const char *op, *sh;
		char *nd;
		size_t nt, j;
		int changed = 0;
		double f;

		if (k->proc != proc)
			proc = k->proc, after = 0, lastf = 1, nrv = 0;
		if (k->kind == KG_COLL || k->kind == KG_CPU || k->kind == KG_RT)
			continue;
		if (k->phase == KG_PH_OPT)
			continue; /* below, once the parameters are counted */
		if (k->kind != KG_KERN || (k->phase != KG_PH_FWD && k->phase != KG_PH_BWD))
			continue;
		op = k->op != KG_NONE ? kg_str(c->r, k->op) : "";
		if (k->shapes == KG_NONE) {
			if (!tp_is_gemm(op) && gemm_named(kg_str(c->r, k->name)) && lastf != 1) {
				k->dur = llround((double)k->dur * lastf);
				c->ngemm++;
			}
			continue;
		}
		sh = kg_str(c->r, k->shapes);
		if (sh == NULL || rs_parse(&d, sh) < 0) {
			c->nkept++;
			continue;
		}
		if (tp_is_gemm(op)) {
			struct gpos g;
			int role, dg, q;
			int64_t nv;

			if (gemm_pos(op, &d, &g) < 0 ||
			    (role = split_role(c, &g, k->phase, after, &dg)) == R_NONE) {
				c->nkept++;
				lastf = 1;
				continue;
			}
			after = 0;
			nrv = 0;
			if (dg && role == R_N)
				rv[nrv++] = d.v[g.pos[role][0]]; /* its output is split */
			nv = split(c, d.v[g.pos[role][0]]);
			if (nv < 0) {
				rc = bad_split(c, k, d.v[g.pos[role][0]]);
				goto out;
			}
			for (q = 0; q < g.npos[role]; q++)
				d.v[g.pos[role][q]] = nv;
			if (dg && role == R_K) {
				/* partial sums: an all-reduce belongs after it */
				c->arafter[ord[i]] = 1;
				c->arbytes[ord[i]] = g.m * g.n * 2;
			} else if (dg && role == R_N && k->phase == KG_PH_BWD) {
				/* a row-parallel input gradient: with sequence
				 * parallelism its output gradient is gathered */
				c->arafter[ord[i]] = 2;
				c->arbytes[ord[i]] = g.m * g.k * 2;
			}
			changed = 1;
			c->ngemm++;
		} else if (is_attn(op)) {
			int hi = strstr(op, "scaled_dot_product") == NULL &&
			    strstr(op, "_flash_attention") != NULL ? 2 : 1;

			int64_t h0 = -1;

			nt = rs_tensors(&d, tt, 16);
			for (j = 0; j < nt && j < 16; j++) {
				int64_t nv;

				if (tt[j].rank == 3 && h0 > 0 && d.v[tt[j].at + 1] == h0) {
					/* the log-sum-exp of each head's rows: [b,
					 * heads, s] */
					d.v[tt[j].at + 1] = split(c, h0);
					continue;
				}
				if (tt[j].rank != 4)
					continue;
				if (h0 < 0)
					h0 = d.v[tt[j].at + (size_t)hi];
				nv = split(c, d.v[tt[j].at + (size_t)hi]);
				if (nv < 0) {
					rc = bad_split(c, k, d.v[tt[j].at + (size_t)hi]);
					goto out;
				}
				if (nrv < 2 && j == 0) {
					/* its output (and the QKV's gradient) is split */
					int64_t w = d.v[tt[j].at + (size_t)hi] * d.v[tt[j].at + 3];

					nrv = 0;
					rv[nrv++] = w;
					rv[nrv++] = 3 * w;
				}
				d.v[tt[j].at + (size_t)hi] = nv;
				changed = 1;
			}
			if (strstr(op, "backward") == NULL)
				after = 1;
			c->nattn += changed;
		} else {
			if (is_act(op) && k->phase == KG_PH_FWD)
				after = 1;
			if (strstr(op, "layer_norm") != NULL)
				nrv = 0;
			nt = rs_tensors(&d, tt, 16);
			for (j = 0; j < nt && j < 16; j++) {
				int r, pass;

				/* the region's sizes first, then the tokens of a
				 * sequence shard, then the split sizes */
				for (pass = 0; pass < 3; pass++) {
					if (pass == 1) {
						if ((c->sp0 || c->sp1) && tok_tensor(c, op, &d, &tt[j])) {
							changed |= seq_shard(c, &d, &tt[j]);
							break;
						}
						continue;
					}
					for (r = tt[j].rank - 1; r >= 0; r--) {
						int64_t v = d.v[tt[j].at + (size_t)r], nv;
						int q, in = 0;

						for (q = 0; q < nrv; q++)
							in |= rv[q] == v;
						if (pass == 0 ? !in : (v == c->H || v == c->M ||
						    v == c->Mn || !is_split(c, v)))
							continue;
						if ((nv = split(c, v)) < 0) {
							rc = bad_split(c, k, v);
							goto out;
						}
						d.v[tt[j].at + (size_t)r] = nv;
						changed = 1;
						break;
					}
					if (r >= 0)
						break;
				}
			}
			c->nelt += changed;
		}
		if (!changed)
			continue;
		nd = rs_format(&d);
		f = factor(c, k, nd);
		if (tp_is_gemm(op))
			lastf = f;
		k->dur = llround((double)k->dur * f);
		k->shapes = rs_strs_id(&c->xs, nd);
		free(nd);
	}
	/* the optimizer's work follows the parameters a rank keeps */
	c->rho = rank_params(c, ord);
	for (i = 0; i < c->nt; i++) {
		struct kg_task *k = &c->t[i];

		if (k->phase != KG_PH_OPT || k->kind == KG_COLL || k->kind == KG_CPU ||
		    k->kind == KG_RT)
			continue;
		k->dur = llround((double)k->dur * c->rho);
		k->bytes = (uint64_t)llround((double)k->bytes * c->rho);
		c->nopt++;
	}
	rc = 0;
out:
	rs_dims_release(&d);
	free(ord);
	return rc;
}
