/*
 * The model's program, a micro-batch at a time: a transformer layer's
 * forward and backward (Megatron's tensor-parallel linears and their
 * collectives, with or without sequence parallelism, flash attention,
 * the autograd nodes the backward runs), the embedding and the head
 * (the output layer, vocabulary-parallel cross entropy, the loss), the
 * batch's copy in, and the data-parallel gradient buckets launched as
 * the last micro-batch's backward makes them. Sequence numbers tie each
 * forward op to its backward node (fwdbwd flows).
 *
 * It says what runs and in what order, in terms of calls.c's verbs and
 * coll.c's collectives; which micro-batch runs when is schedule.c's.
 */
#include <inttypes.h>
#include <stdio.h>

#include "kernels.h"

/* Autograd nodes of a layer, in forward order (their sequence numbers). */
enum {
	N_LN1, N_QKV, N_ADD_QKV, N_SDPA, N_PROJ, N_ADD1, N_DROP1, N_RES1,
	N_LN2, N_FC1, N_ADD_FC1, N_GELU, N_FC2, N_ADD2, N_DROP2, N_RES2, N_PER_LAYER
};

/*
 * The tensor-parallel collectives around a block (Megatron): without
 * sequence parallelism an all-reduce of a row-parallel linear's output;
 * with it a reduce-scatter there, and an all-gather of a column-parallel
 * linear's input (the norms, dropout and residual adds between them run
 * on a sequence shard). The compute stream waits for each.
 */
static void
tp_out(struct gen *G)
{
	coll(G, G_TP, G->c->sp ? C_REDUCESCATTER : C_ALLREDUCE, DT_BF16, 0,
	    G->c->seq * G->c->mbs * G->c->hidden, 1, NULL);
}

static void
tp_in(struct gen *G)
{
	if (G->c->sp)
		coll(G, G_TP, C_ALLGATHER, DT_BF16, 0, G->c->seq * G->c->mbs * G->c->hidden, 1,
		    NULL);
}

static void
layer_norm(struct gen *G, int64_t seq)
{
	op2(G, OT_LN, seq, OT_NLN, KT_LN_FWD);
}

static void
linear(struct gen *G, int olin, int omm, int ommi, int64_t seq, int kt)
{
	op3(G, olin, seq, omm, ommi, kt);
}

/* A bias add, dropout and residual add; sequence numbers from sq on, or
 * none (sq -1). */
static void
dropout_add(struct gen *G, int64_t sq)
{
	op1(G, OT_ADD_H, sq, KT_ADD_H);
	op2(G, OT_DROPOUT, sq < 0 ? -1 : sq + 1, OT_NDROPOUT, KT_DROPOUT);
	op1(G, OT_ADD_RES, sq < 0 ? -1 : sq + 2, KT_ADD_H);
}

static void
layer_annot(struct gen *G, int l, const char *what)
{
	char name[64];

	if (!G->c->annotations)
		return;
	snprintf(name, sizeof(name), "layer_%d/%s", l, what);
	annot(G, name);
}

static void
layer_annot_end(struct gen *G)
{
	if (G->c->annotations)
		close_op(G);
}

static int
global_layer(const struct gen *G, int l)
{
	return (int)(G->stage * G->J->lps) + l;
}

/*
 * A layer's forward ops: with sequence numbers from sq on (autograd's
 * nodes tie to them), or none where sq is -1 (run again in the backward:
 * the graph they make is used once, its numbers tie to nothing here).
 */
static void
fwd_layer_ops(struct gen *G, int64_t sq)
{
#define SQ(n) (sq < 0 ? -1 : sq + (n))
	layer_norm(G, SQ(N_LN1));
	tp_in(G);
	advance(G, H_PY);
	linear(G, OT_LINEAR_QKV, OT_MATMUL_QKV, OT_MM_QKV, SQ(N_QKV), KT_QKV);
	op1(G, OT_ADD_QKV, SQ(N_ADD_QKV), KT_ADD_QKV);
	advance(G, H_PY);
	op(G, OT_SDPA, SQ(N_SDPA));
	op2(G, OT_SDPA_FLASH, -1, OT_FLASH_FWD, KT_FLASH_FWD);
	close_op(G);
	advance(G, H_PY);
	linear(G, OT_LINEAR_PROJ, OT_MATMUL_PROJ, OT_MM_PROJ, SQ(N_PROJ), KT_PROJ);
	tp_out(G);
	dropout_add(G, SQ(N_ADD1));
	advance(G, H_PY);
	layer_norm(G, SQ(N_LN2));
	tp_in(G);
	advance(G, H_PY);
	linear(G, OT_LINEAR_FC1, OT_MATMUL_FC1, OT_MM_FC1, SQ(N_FC1), KT_FC1);
	op1(G, OT_ADD_F, SQ(N_ADD_FC1), KT_ADD_F);
	op1(G, OT_GELU, SQ(N_GELU), KT_GELU);
	advance(G, H_PY);
	linear(G, OT_LINEAR_FC2, OT_MATMUL_FC2, OT_MM_FC2, SQ(N_FC2), KT_FC2);
	tp_out(G);
	dropout_add(G, SQ(N_ADD2));
#undef SQ
}

static void
fwd_layer(struct gen *G, int mb, int item, int l)
{
	uint64_t sq = G->seqnr;

	G->fwdseq[mb * G->nitems + item] = sq;
	G->seqnr += N_PER_LAYER;
	layer_annot(G, global_layer(G, l), "forward");
	advance(G, H_PY);
	fwd_layer_ops(G, (int64_t)sq);
	/* under full recomputation it keeps its input alone */
	mem_event(G, mem_layer_kept(G));
	layer_annot_end(G);
}

/* An autograd node's evaluate_function and node ops around its body. */
static void
node_open(struct gen *G, const char *node, int64_t seq)
{
	char name[128];

	advance(G, H_NODE);
	snprintf(name, sizeof(name), "autograd::engine::evaluate_function: %s", node);
	open_op(G, "cpu_op", name, seq, NULL, 0);
	if (G->emit)
		ev_flow(G->w, 0, (uint64_t)seq + 1, G->pid, tid_of(G), TS0 + G->st[G->depth - 1].ts,
		    "fwdbwd");
	open_op(G, "cpu_op", node, seq, NULL, 0);
}

static void
node_close(struct gen *G)
{
	close_op(G);
	close_op(G);
}

static void
node1(struct gen *G, const char *node, int64_t seq, int o, int kt)
{
	node_open(G, node, seq);
	op1(G, o, -1, kt);
	node_close(G);
}

static void
accumulate_grad(struct gen *G, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		advance(G, H_NODE);
		open_op(G, "cpu_op", "autograd::engine::evaluate_function: "
		    "torch::autograd::AccumulateGrad", -1, NULL, 0);
		open_op(G, "cpu_op", "torch::autograd::AccumulateGrad", -1, NULL, 0);
		close_op(G);
		close_op(G);
	}
}

/*
 * A linear's backward (Megatron's LinearWithGradAccumulationAndAsync-
 * Communication): the input gradient, then for a column-parallel layer
 * its all-reduce started asynchronously, the weight gradient fused into
 * the fp32 main_grad while it runs, and the wait.
 */
static void
linear_bwd(struct gen *G, int64_t seq, int omm, int kdg, int kwg, int column)
{
	struct evt done, in;
	int ar, ag;
	int64_t sbh = G->c->seq * G->c->mbs * G->c->hidden;

	if (G->c->sp) {
		/*
		 * Sequence parallelism: a row-parallel linear's output
		 * gradient is gathered first (the reduce-scatter's backward);
		 * a column-parallel one gathers its input again for the
		 * weight gradient while the input gradient is computed, then
		 * reduce-scatters that, overlapped with the weight gradient.
		 */
		if (!column)
			coll(G, G_TP, C_ALLGATHER, DT_BF16, 0, sbh, 1, NULL);
		node_open(G, "LinearWithGradAccumulationAndAsyncCommunicationBackward", seq);
		ag = column && coll(G, G_TP, C_ALLGATHER, DT_BF16, 0, sbh, 0, &in);
		op(G, omm, -1);
		kern(G, kdg);
		close_op(G);
		ar = column && coll(G, G_TP, C_REDUCESCATTER, DT_BF16, 0, sbh, 0, &done);
		advance(G, H_PY);
		if (ag)
			stream_wait(G, ST_COMPUTE, &in);
		kern(G, kwg);
		if (ar)
			stream_wait(G, ST_COMPUTE, &done);
		node_close(G);
		return;
	}
	node_open(G, "LinearWithGradAccumulationAndAsyncCommunicationBackward", seq);
	op(G, omm, -1);
	kern(G, kdg);
	close_op(G);
	ar = column && coll(G, G_TP, C_ALLREDUCE, DT_BF16, 0,
	    G->c->seq * G->c->mbs * G->c->hidden, 0, &done);
	advance(G, H_PY);
	kern(G, kwg);
	if (ar)
		stream_wait(G, ST_COMPUTE, &done);
	node_close(G);
}

/*
 * Full recomputation (--recompute full), as torch.utils.checkpoint's
 * non-reentrant mode places it: the first node of the layer's backward
 * that needs a tensor the forward did not keep (the last dropout's) runs
 * the layer's forward again before its own work, on the backward's
 * thread, and the activations come back (all but the input, which was
 * kept).
 */
static void
recompute_layer(struct gen *G)
{
	advance(G, H_PY);
	fwd_layer_ops(G, -1);
	mem_event(G, mem_layer(G) - mem_layer_kept(G));
}

static void
dropout_add_bwd(struct gen *G, uint64_t sq, int recompute)
{
	node_open(G, "NativeDropoutBackward0", (int64_t)sq + 1);
	if (recompute)
		recompute_layer(G);
	op1(G, OT_DROPOUT_BWD, -1, KT_DROPOUT_BWD);
	node_close(G);
	node1(G, "AddBackward0", (int64_t)sq, OT_SUM_H, KT_BG_H);
}

static void
ln_bwd(struct gen *G, int64_t seq)
{
	node_open(G, "NativeLayerNormBackward0", seq);
	op(G, OT_LN_BWD, -1);
	kern(G, KT_LN_BWD_IN);
	kern(G, KT_LN_BWD_GB);
	close_op(G);
	node_close(G);
}

static void
bwd_layer(struct gen *G, int mb, int item, int l)
{
	uint64_t sq = G->fwdseq[mb * G->nitems + item];

	layer_annot(G, global_layer(G, l), "backward");
	dropout_add_bwd(G, sq + N_ADD2, G->c->recompute == RC_FULL);
	linear_bwd(G, (int64_t)(sq + N_FC2), OT_MM_FC2_DG, KT_FC2_DG, KT_FC2_WG, 0);
	node1(G, "GeluBackward0", (int64_t)(sq + N_GELU), OT_GELU_BWD, KT_GELU_BWD);
	node1(G, "AddBackward0", (int64_t)(sq + N_ADD_FC1), OT_SUM_F, KT_BG_F);
	linear_bwd(G, (int64_t)(sq + N_FC1), OT_MM_FC1_DG, KT_FC1_DG, KT_FC1_WG, 1);
	ln_bwd(G, (int64_t)(sq + N_LN2));
	op1(G, OT_ADD_RES, -1, KT_ADD_H);
	dropout_add_bwd(G, sq + N_ADD1, 0);
	linear_bwd(G, (int64_t)(sq + N_PROJ), OT_MM_PROJ_DG, KT_PROJ_DG, KT_PROJ_WG, 0);
	node_open(G, "ScaledDotProductFlashAttentionBackward0", (int64_t)(sq + N_SDPA));
	if (G->c->recompute == RC_SELECTIVE) {
		/* selective recomputation: the attention core again, its
		 * output and statistics for its own backward */
		op(G, OT_SDPA, -1);
		op2(G, OT_SDPA_FLASH, -1, OT_FLASH_FWD, KT_FLASH_FWD);
		close_op(G);
	}
	op(G, OT_FLASH_BWD_OUTER, -1);
	op(G, OT_FLASH_BWD, -1);
	kern(G, KT_FLASH_BWD_DOT);
	kern(G, KT_FLASH_BWD);
	kern(G, KT_FLASH_BWD_CVT);
	close_op(G);
	close_op(G);
	node_close(G);
	node1(G, "AddBackward0", (int64_t)(sq + N_ADD_QKV), OT_SUM_QKV, KT_BG_QKV);
	linear_bwd(G, (int64_t)(sq + N_QKV), OT_MM_QKV_DG, KT_QKV_DG, KT_QKV_WG, 1);
	ln_bwd(G, (int64_t)(sq + N_LN1));
	op1(G, OT_ADD_RES, -1, KT_ADD_H);
	accumulate_grad(G, 4);
	mem_grads(G, mb, item);
	mem_event(G, -mem_layer(G));
	layer_annot_end(G);
}

static void
fwd_embed(struct gen *G, int mb, int item)
{
	uint64_t sq = G->seqnr;

	G->fwdseq[mb * G->nitems + item] = sq;
	G->seqnr += 6;
	advance(G, H_PY);
	if (G->gsize[G_TP] > 1) {
		op1(G, OT_EMB_SUB, (int64_t)sq, KT_EMB_MASK);
		op1(G, OT_EMB_FILL, (int64_t)sq + 1, KT_EMB_FILL);
	}
	op2(G, OT_EMBEDDING, (int64_t)sq + 2, OT_INDEX_SELECT, KT_EMB_LOOKUP);
	if (G->gsize[G_TP] > 1) {
		op1(G, OT_EMB_FILL, (int64_t)sq + 3, KT_EMB_FILL);
		tp_out(G);
	}
	op2(G, OT_POS_EMBEDDING, (int64_t)sq + 4, OT_POS_INDEX_SELECT, KT_POS_LOOKUP);
	op1(G, OT_ADD_H, (int64_t)sq + 5, KT_ADD_H);
	op2(G, OT_DROPOUT, (int64_t)sq + 5, OT_NDROPOUT, KT_DROPOUT);
}

static void
bwd_embed(struct gen *G, int mb, int item)
{
	uint64_t sq = G->fwdseq[mb * G->nitems + item];

	node1(G, "NativeDropoutBackward0", (int64_t)sq + 5, OT_DROPOUT_BWD, KT_DROPOUT_BWD);
	if (G->gsize[G_TP] > 1)
		tp_in(G); /* the reduce-scatter's backward */
	node_open(G, "EmbeddingBackward0", (int64_t)sq + 4);
	op2(G, OT_POS_BWD, -1, OT_POS_DENSE_BWD, KT_POS_BWD);
	node_close(G);
	if (G->gsize[G_TP] > 1)
		node1(G, "MaskedFillBackward0", (int64_t)sq + 3, OT_EMB_FILL, KT_EMB_FILL);
	node_open(G, "EmbeddingBackward0", (int64_t)sq + 2);
	op2(G, OT_EMB_BWD, -1, OT_EMB_DENSE_BWD, KT_EMB_BWD);
	node_close(G);
	accumulate_grad(G, 2);
	mem_grads(G, mb, item);
}

/* Final layer norm, output layer, vocab-parallel cross entropy, the loss. */
static void
fwd_head(struct gen *G, int mb, int item)
{
	uint64_t sq = G->seqnr;
	int64_t sb = G->c->seq * G->c->mbs;

	G->fwdseq[mb * G->nitems + item] = sq;
	G->seqnr += 8;
	advance(G, H_PY);
	layer_norm(G, (int64_t)sq);
	tp_in(G);
	advance(G, H_PY);
	linear(G, OT_LINEAR_LOGITS, OT_MATMUL_LOGITS, OT_MM_LOGITS, (int64_t)sq + 1, KT_LOGITS);
	advance(G, H_PY);
	op(G, OT_CE, (int64_t)sq + 2);
	op1(G, OT_CE_MAX, -1, KT_CE_MAX);
	coll(G, G_TP, C_ALLREDUCE, DT_F32, 1, sb, 1, NULL);
	op1(G, OT_CE_SUB, -1, KT_CE_SUB);
	op1(G, OT_CE_INDEX, -1, KT_CE_GATHER);
	coll(G, G_TP, C_ALLREDUCE, DT_F32, 0, sb, 1, NULL);
	op1(G, OT_CE_EXP, -1, KT_CE_EXP);
	op1(G, OT_CE_SUM, -1, KT_CE_SUM);
	coll(G, G_TP, C_ALLREDUCE, DT_F32, 0, sb, 1, NULL);
	op1(G, OT_CE_LOG, -1, KT_CE_LOSS);
	mem_event(G, mem_logits(G));
	close_op(G);
	advance(G, H_PY);
	op1(G, OT_LOSS_MUL, (int64_t)sq + 3, KT_SMALL);
	op1(G, OT_LOSS_SUM, (int64_t)sq + 4, KT_SMALL);
	/* average_losses_across_data_parallel_group */
	coll(G, G_DP, C_ALLREDUCE, DT_F32, 0, 1, 1, NULL);
}

static void
bwd_head(struct gen *G, int mb, int item)
{
	uint64_t sq = G->fwdseq[mb * G->nitems + item];

	node1(G, "SumBackward0", (int64_t)sq + 4, OT_LOSS_MUL, KT_SMALL);
	node1(G, "MulBackward0", (int64_t)sq + 3, OT_LOSS_MUL, KT_SMALL);
	node1(G, "_VocabParallelCrossEntropyBackward", (int64_t)sq + 2, OT_LOSS_MUL, KT_CE_BWD);
	mem_event(G, -mem_logits(G));
	linear_bwd(G, (int64_t)sq + 1, OT_MM_LOGITS_DG, KT_LOGITS_DG, KT_LOGITS_WG, 1);
	ln_bwd(G, (int64_t)sq);
	accumulate_grad(G, 3);
	mem_grads(G, mb, item);
}

/* get_batch: tensor-parallel rank 0 copies the batch in, then broadcasts it. */
static void
get_batch(struct gen *G)
{
	int64_t n = G->c->seq * G->c->mbs * ((G->c->pp == 1) + 1);

	advance(G, 4 * H_PY);
	if (G->tpr == 0) {
		op(G, OT_TO, -1);
		op(G, OT_TO_COPY, -1);
		op(G, OT_COPY, -1);
		launch(G, KT_H2D_BATCH, ST_COMPUTE, TG_NONE, NULL, 0);
		close_op(G);
		close_op(G);
		close_op(G);
	}
	coll(G, G_TP, C_BROADCAST, DT_I64, 0, n, 1, NULL);
}

void
forward_step(struct gen *G, int mb)
{
	char name[48];
	int item = 0, l;

	if (G->c->annotations) {
		snprintf(name, sizeof(name), "microbatch_%d/forward", mb);
		annot(G, name);
	}
	if (G->first || G->last)
		get_batch(G);
	if (G->first)
		fwd_embed(G, mb, item++);
	for (l = 0; l < G->J->lps; l++)
		fwd_layer(G, mb, item++, l);
	if (G->last)
		fwd_head(G, mb, item++);
	if (G->c->annotations)
		close_op(G);
}

/* Launch the buckets whose last gradient the backward item just made. */
static void
buckets_after(struct gen *G, int bitem)
{
	const struct bucket *bk = G->J->bk[G->stage];
	int i;

	for (i = 0; i < G->J->nbk[G->stage]; i++) {
		if (bk[i].after != bitem || G->gsize[G_DP] <= 1)
			continue;
		advance(G, H_PY);
		op_dyn(G, "aten::mul_", "T%" PRId64 ":f32|S%.6g", bk[i].numel,
		    1.0 / (double)G->c->dp);
		kern(G, G->sk->bucket_scale[i]);
		close_op(G);
		coll(G, G_DP, C_ALLREDUCE, DT_F32, 0, bk[i].numel, 0, &G->bdone[i]);
	}
}

/*
 * backward_step: the main thread calls torch.autograd.backward and
 * blocks; the autograd thread runs the nodes, launching the gradient
 * buckets in the last micro-batch.
 */
void
backward_step(struct gen *G, int mb, int lastmb)
{
	char name[48];
	int bitem = 0, item = G->nitems - 1, l;

	if (G->c->annotations) {
		snprintf(name, sizeof(name), "microbatch_%d/backward", mb);
		annot(G, name);
	}
	advance(G, H_PY);
	thread_to(G, 1);
	if (G->last) {
		bwd_head(G, mb, item--);
		if (lastmb)
			buckets_after(G, bitem);
		bitem++;
	}
	for (l = (int)G->J->lps - 1; l >= 0; l--) {
		bwd_layer(G, mb, item--, l);
		if (lastmb)
			buckets_after(G, bitem);
		bitem++;
	}
	if (G->first) {
		bwd_embed(G, mb, item--);
		if (lastmb)
			buckets_after(G, bitem);
	}
	thread_to(G, 0);
	if (G->c->annotations)
		close_op(G);
}
