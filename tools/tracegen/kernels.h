/*
 * kernels: the kernels and CPU ops of the model, rendered once per job:
 * each kernel's name and launch shape (struct kt) with its modelled
 * duration, and each op's name and shape args (struct ot). Templates are
 * the same for every rank of a stage; the ones that depend on a stage's
 * parameter count (the optimizer's, the gradient buckets') are made per
 * stage (struct stagek). Private to tracegen, like the model they use.
 */
#ifndef TG_KERNELS_H
#define TG_KERNELS_H

#include "tg.h"

enum kcat { K_KERNEL, K_MEMCPY, K_MEMSET };

struct kt {
	char *name;
	char *args;    /* kernels: the launch shape part of args */
	int64_t dur;   /* modelled, ns */
	int64_t bytes; /* copies and sets */
	int cat;
};

struct ot {
	char *name;
	char *args;    /* "Concrete Inputs" ... "Input Dims", or NULL */
};

enum {
	KT_LN_FWD, KT_LN_BWD_IN, KT_LN_BWD_GB,
	KT_QKV, KT_QKV_DG, KT_QKV_WG, KT_ADD_QKV, KT_BG_QKV,
	KT_FLASH_FWD, KT_FLASH_BWD_DOT, KT_FLASH_BWD, KT_FLASH_BWD_CVT,
	KT_PROJ, KT_PROJ_DG, KT_PROJ_WG,
	KT_FC1, KT_FC1_DG, KT_FC1_WG, KT_ADD_F, KT_GELU, KT_GELU_BWD, KT_BG_F,
	KT_FC2, KT_FC2_DG, KT_FC2_WG,
	KT_ADD_H, KT_BG_H, KT_DROPOUT, KT_DROPOUT_BWD,
	KT_EMB_MASK, KT_EMB_LOOKUP, KT_EMB_FILL, KT_POS_LOOKUP, KT_EMB_BWD, KT_POS_BWD,
	KT_LOGITS, KT_LOGITS_DG, KT_LOGITS_WG,
	KT_CE_MAX, KT_CE_SUB, KT_CE_GATHER, KT_CE_EXP, KT_CE_SUM, KT_CE_LOSS, KT_CE_BWD,
	KT_SMALL, KT_POW, KT_H2D_BATCH, KT_D2H_ITEM, KT_L2NORM_CLEANUP,
	NKT_STATIC
};

enum {
	OT_LN, OT_NLN, OT_LINEAR_QKV, OT_MATMUL_QKV, OT_MM_QKV, OT_ADD_QKV,
	OT_SDPA, OT_SDPA_FLASH, OT_FLASH_FWD,
	OT_LINEAR_PROJ, OT_MATMUL_PROJ, OT_MM_PROJ, OT_ADD_H, OT_DROPOUT, OT_NDROPOUT,
	OT_LINEAR_FC1, OT_MATMUL_FC1, OT_MM_FC1, OT_ADD_F, OT_GELU,
	OT_LINEAR_FC2, OT_MATMUL_FC2, OT_MM_FC2,
	OT_DROPOUT_BWD, OT_SUM_H, OT_SUM_F, OT_SUM_QKV, OT_GELU_BWD, OT_LN_BWD,
	OT_MM_FC2_DG, OT_MM_FC1_DG, OT_MM_PROJ_DG, OT_MM_QKV_DG, OT_ADD_RES,
	OT_FLASH_BWD_OUTER, OT_FLASH_BWD,
	OT_EMB_SUB, OT_EMB_FILL, OT_EMBEDDING, OT_INDEX_SELECT, OT_POS_EMBEDDING,
	OT_POS_INDEX_SELECT, OT_EMB_BWD, OT_EMB_DENSE_BWD, OT_POS_BWD, OT_POS_DENSE_BWD,
	OT_LINEAR_LOGITS, OT_MATMUL_LOGITS, OT_MM_LOGITS, OT_MM_LOGITS_DG,
	OT_CE, OT_CE_MAX, OT_CE_SUB, OT_CE_INDEX, OT_CE_EXP, OT_CE_SUM, OT_CE_LOG,
	OT_LOSS_MUL, OT_LOSS_SUM, OT_TO, OT_TO_COPY, OT_COPY,
	OT_ITEM, OT_LSD, OT_POW,
	NOT
};

/* Per-stage kernels made at init: the indices into J->kt. */
struct stagek {
	int memset_grad;
	int adam, adam_last, nadam;   /* full chunks, the last one, how many */
	int scale, scale_last;
	int l2, l2_last;
	int *bucket_scale;            /* per bucket */
	int64_t params;
};

/*
 * The shape args of an op from a spec of inputs separated by '|':
 * Tdims:type (a contiguous tensor, dims comma-separated; type bf, f32,
 * i64 or b), S<value> (a scalar), L<value> (a scalar list), N (none).
 * Returns an allocated string.
 */
char *shape_args(const char *spec);
/* The static templates into J->kt and J->ot. */
void make_templates(struct tg_job *J);
/* A stage's buckets (J->bk) and its own kernels. */
void make_stage(struct tg_job *J, int stage, struct stagek *sk);
/* Backward items of a stage: its layers, plus the head and the embedding. */
/* Parameters of backward item `item` of a stage (kind: 0 embedding, 1 layer, 2 head). */
int64_t item_params(const struct tg_job *J, int stage, int item, int *kind);
int stage_items(const struct tg_job *J, int stage);

#endif
