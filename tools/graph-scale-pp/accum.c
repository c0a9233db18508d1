/*
 * Gradient accumulation: what a micro-batch after the first adds to its
 * backward step. PyTorch's AccumulateGrad hands the first micro-batch's
 * gradient of a parameter over as it is (a `detach`, no kernel: the
 * optimizer's zero_grad(set_to_none=True) left none), and adds each later
 * micro-batch's into it (an `aten::add_` launch and its kernel, over the
 * parameter's elements). A job traced with one micro-batch shows only the
 * first kind, so a later micro-batch copied from it would leave the adds
 * out: on gptB_L8_H2560 (../shared/gpu), 100 adds, 4.1 ms of a 58 ms
 * backward step, the second micro-batch's only.
 *
 * Here, where a backward step of a micro-batch after the first is copied
 * from the first's, each such `detach` (a CPU op on a thread, in the
 * backward phase, of one tensor) is written as the launch call the later
 * micro-batch makes instead, with its kernel on the rank's compute
 * stream after the kernels launched before it. Their times come from the
 * job itself: the launch call's, the median of the job's launch calls of
 * `aten::add_` (else of all its launch calls); the kernel's, its bytes
 * (read both, write one: three times the elements at the type's size)
 * at the median rate the job's own add kernels of 20 us or more reached.
 * A job without such kernels has nothing to time the adds on: they are
 * not made, and a warning says so.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "params.h"
#include "pp.h"
#include "rtapi.h"
#include "util.h"

#define ACCUM_MIN_NS 20000 /* add kernels shorter than this time their launch */

static int
cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The size of the first type of an Input type text, 0 if unknown. */
static int
type_size(const char *s)
{
	int sz[1];

	return s != NULL && type_sizes(s, sz, 1) == 1 ? sz[0] : 0;
}

static const char *
str_or(const struct job *J, uint32_t id)
{
	return id == KG_NONE ? NULL : kg_str(J->r, id);
}

void
accum_init(struct build *B)
{
	const struct job *J = B->J;
	const struct graph *g = J->g;
	int64_t *ld = NULL, *la = NULL;
	double *bw = NULL;
	size_t nld = 0, cld = 0, nla = 0, cla = 0, nbw = 0, cbw = 0, i;
	uint32_t kname = KG_NONE, add = KG_NONE, launch = KG_NONE;
	int64_t kbytes = 0;

	B->acc_bw = 0;
	B->acc_detach = B->acc_detach2 = KG_NONE;
	for (i = 0; i < g->nstr; i++) {
		const char *s = kg_str(J->r, (uint32_t)i), *plain;

		if (strcmp(s, "detach") == 0)
			B->acc_detach = (uint32_t)i;
		else if (strcmp(s, "aten::detach") == 0)
			B->acc_detach2 = (uint32_t)i;
		else if (strcmp(s, "aten::add_") == 0)
			add = (uint32_t)i;
		else if (launch == KG_NONE && (plain = rtapi_call(rtapi_runtime(s),
		    RTAPI_LAUNCH)) != NULL && strcmp(s, plain) == 0)
			launch = (uint32_t)i; /* cudaLaunchKernel, hipLaunchKernel */
	}
	if (B->acc_detach == KG_NONE && B->acc_detach2 == KG_NONE)
		return; /* nothing handed over: nothing to add */
	for (i = 0; i < g->ntask; i++) {
		const struct kg_task *t = &g->task[i];
		int64_t n[2], f[2], l[2];
		int sz;

		if (t->kind == KG_RT && t->name == launch && launch != KG_NONE) {
			VEC_PUSH(ld, nld, cld, t->dur);
			if (t->op == add && add != KG_NONE)
				VEC_PUSH(la, nla, cla, t->dur);
		}
		if (t->kind != KG_KERN || add == KG_NONE || t->op != add || t->dur < ACCUM_MIN_NS)
			continue;
		if (t->shapes == KG_NONE || dims_operands(kg_str(J->r, t->shapes), n, f, l, 2) < 2 ||
		    n[0] <= 0 || n[1] <= 0 ||
		    (sz = type_size(str_or(J, t->itypes))) == 0)
			continue;
		{
			double b = (double)(n[0] * 2 + n[1]) * sz;

			VEC_PUSH(bw, nbw, cbw, b / (double)t->dur);
			if (sz == 4 && (kname == KG_NONE || (int64_t)b > kbytes))
				kname = t->name, kbytes = (int64_t)b;
		}
	}
	if (nbw > 0) {
		qsort(bw, nbw, sizeof(*bw), cmp_dbl);
		B->acc_bw = bw[nbw / 2];
	}
	if (nla > 0) {
		qsort(la, nla, sizeof(*la), cmp_i64);
		B->acc_launch = la[nla / 2];
	} else if (nld > 0) {
		qsort(ld, nld, sizeof(*ld), cmp_i64);
		B->acc_launch = ld[nld / 2];
	} else {
		B->acc_launch = J->launch;
	}
	B->acc_kname = kname != KG_NONE ? kname :
	    intern_text(B, "gradient accumulation (graph-scale-pp)");
	B->acc_add = add != KG_NONE ? add : intern_text(B, "aten::add_");
	B->acc_call = launch != KG_NONE ? launch : intern_call(B, RTAPI_LAUNCH);
	free(ld);
	free(la);
	free(bw);
}

int
accum_steal(const struct build *B, const struct kg_task *t)
{
	const struct job *J = B->J;
	int64_t n[2], f[2], l[2];

	return t->kind == KG_CPU && t->phase == KG_PH_BWD &&
	    (t->name == B->acc_detach || t->name == B->acc_detach2) && t->name != KG_NONE &&
	    B->J->g->proc[t->proc].kind == KG_THREAD && t->shapes != KG_NONE &&
	    dims_operands(kg_str(J->r, t->shapes), n, f, l, 2) == 1 && n[0] > 0 &&
	    type_size(str_or(J, t->itypes)) > 0;
}

uint32_t
accum_make(struct build *B, struct kg_task *t, uint32_t u)
{
	const struct job *J = B->J;
	int64_t n[1], f[1], l[1];
	int sz;
	uint32_t h, k;
	struct kg_task kt;
	struct kg_edge e;
	const char *ty;
	char sh[96], tyb[96];

	dims_operands(kg_str(J->r, t->shapes), n, f, l, 1);
	ty = str_or(J, t->itypes);
	sz = type_size(ty);
	/* the call: aten::add_(grad, new grad, alpha) */
	{
		const char *d = str_or(J, t->shapes);
		size_t len = strlen(d);

		/* "[[D]]" -> "[[D],[D],[]]" */
		if (len < 4 || len > 40) {
			snprintf(sh, sizeof(sh), "[[%lld],[%lld],[]]", (long long)n[0], (long long)n[0]);
		} else {
			snprintf(sh, sizeof(sh), "[%.*s,%.*s,[]]", (int)(len - 2), d + 1,
			    (int)(len - 2), d + 1);
		}
		/* the gradient's type, as its detach said it: ["T"] */
		const char *q = strchr(ty + 2, '"');
		int tl = q != NULL && q - ty - 2 < 40 ? (int)(q - ty - 2) : 0;

		snprintf(tyb, sizeof(tyb), "[\"%.*s\",\"%.*s\",\"Scalar\"]", tl, ty + 2, tl, ty + 2);
	}
	t->kind = KG_RT;
	t->name = B->acc_call;
	t->op = B->acc_add;
	t->shapes = intern_text(B, sh);
	t->itypes = intern_text(B, tyb);
	t->dur = t->odur = B->acc_launch;
	h = add_task(B, t, u);
	kt = *t;
	kt.proc = B->compute;
	kt.kind = KG_KERN;
	kt.name = B->acc_kname;
	kt.corr = -1;
	kt.dur = kt.odur = (int64_t)((double)(3 * n[0] * sz) / B->acc_bw + 0.5);
	kt.mpeak = kt.mrpeak = -1, kt.mnet = 0;
	k = add_task(B, &kt, KG_NONE);
	kg_edge_init(&e);
	e.kind = KG_E_LAUNCH;
	add_edge(B, &e, h, k, KG_NONE, KG_NONE);
	B->acc_made++;
	return h;
}
