/*
 * flops: the work of each step, from its operators' shapes (the `sh`
 * Input Dims kineto2graph keeps on a kernel's launch call), and what a
 * step's time makes of it: tokens/s, TFLOP/s per GPU, MFU.
 *
 * Each operator call counts once (a call's launches share its op and its
 * `oc`, or its op and shapes where the stream has no `oc`):
 * - hardware FLOPs: 2 m n k a GEMM (mm, addmm, bmm, baddbmm, matmul,
 *   linear, _scaled_mm) and 4 b h s_q s_k d a fused attention's forward,
 *   2.5 times that its backward (five products to the forward's two),
 *   halved for the causal mask (assumed where s_q = s_k: the shapes do
 *   not say; the text says it): every call, recomputation included;
 * - other FLOPs: one an element of the first operand of every other call
 *   with shapes (norms, elementwise, softmax, loss); an optimizer's
 *   tensor lists carry no shapes and count nothing;
 * - model FLOPs: 6 N T plus attention, N the parameters (params.h, the
 *   first micro-batch's forward), T the tokens, attention three times the
 *   forward of each attention backward (a recomputed forward has none
 *   of its own, so recomputation is left out);
 * - tokens: the targets of the loss calls of the forward (nll_loss,
 *   cross_entropy), else the indices looked up in the largest table
 *   (embedding, or gather and index_select outside the layers).
 *
 * State: one fl_iter per rank and iteration of a section (a few hundred
 * bytes each); nothing per task.
 */
#ifndef KG_FLOPS_H
#define KG_FLOPS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "kg.h"
#include "params.h"

struct fl_iter {
	int64_t rank, it;
	double gemm, attn, other;  /* hardware FLOPs (GEMMs, attention) and the rest */
	double attn_model;         /* attention's model FLOPs */
	int64_t recomp;            /* attention forwards in the backward */
	int64_t rc_ns, rc_n;       /* recomputed GPU tasks (rc): their time, count */
	int64_t calls, shaped;     /* launch calls, with shapes */
	int64_t tokens;            /* loss targets; -1 none */
	int64_t etokens, erows;    /* indices into the largest table, its rows */
	int64_t mb;                /* the micro-batch whose parameters count */
	struct param_count pc;
	uint32_t op, oc, sh;       /* the call last counted */
};

struct flops {
	struct fl_iter *v;
	size_t n, cap, last;
	struct config cfg;         /* the degrees (dp, tp) */
	int causal;                /* an attention call counted causal */
	double peak_opt;           /* --peak-tflops; 0: the table's */
};

/* What a row's time makes of its step's work. */
struct perf {
	int have;          /* shapes: FLOPs were counted */
	double hw, model;  /* FLOPs of the step per GPU */
	double gemm, attn, other, attn_model; /* per GPU */
	int64_t params;    /* parameters (one rank's; a job's: its ranks' sum / dp) */
	int64_t tokens;    /* tokens of the step, the whole job's; -1 unknown */
	int64_t rtokens;   /* of the row's rank (or a data-parallel replica) */
	int64_t dp, gpus;  /* data-parallel degree, GPUs the step ran on */
	int64_t recomp;
	double rc_ns;      /* recomputed GPU work (rc tasks' d), ns per GPU */
	int64_t rc_n;
	double peak;       /* dense bf16/fp16 TFLOP/s of a GPU; 0 unknown */
	const char *gpu;   /* the peak's name in the table, or "--peak-tflops" */
	int causal;
};

void flops_init(struct flops *f);
void flops_release(struct flops *f);
/* A section begins. */
void flops_header(struct flops *f, const struct kg_header *h);
/* Each task, its rank. */
void flops_task(struct flops *f, const struct kg_reader *r, const struct kg_task *t, int64_t rank);
/* At the section's end, its strings still in r. */
void flops_finish(struct flops *f, const struct kg_reader *r);
/*
 * The step of rank's iteration it (rank JOB: the job's, its ranks summed
 * and divided among them); p->have 0 when no call had shapes.
 */
void flops_perf(const struct flops *f, int64_t rank, int64_t it, struct perf *p);
/* The dense bf16/fp16 peak of a GPU named so, TFLOP/s, and the table's
 * name for it; 0 when the table does not know it. */
double flops_peak(const char *gpu, const char **name);

/* A perf's rates for a step of span ns; -1 where unknown. */
double perf_tokens_per_s(const struct perf *p, int64_t span);
double perf_tflops(const struct perf *p, int64_t span);
double perf_mfu(const struct perf *p, int64_t span);
/* A row's "flops" object for --json, after a comma. */
void perf_json(const struct perf *p);

#endif
