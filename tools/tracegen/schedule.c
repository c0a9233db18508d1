/*
 * An iteration of a rank's program: the ProfilerStep, the gradients
 * zeroed, the pipeline schedule of forward and backward steps with
 * their sends and receives (Megatron's 1F1B without interleaving, or
 * GPipe), the wait for the gradient buckets, the optimizer (the
 * gradient norm with its blocking .item(), Adam, the copy back) and the
 * device synchronize that ends the step. A step's GPU span is the
 * compute stream's, written as its gpu_user_annotation.
 *
 * What a forward or backward step runs is layers.c's.
 */
#include <inttypes.h>
#include <stdio.h>

#include "kernels.h"

/* Megatron's forward_backward_pipelining_without_interleaving, or GPipe. */
static void
schedule(struct gen *G)
{
	int M = (int)G->c->microbatches, P = (int)G->c->pp;
	int warm, rem, i, fwd = 0, bwd = 0;

	if (G->c->schedule == SCHED_GPIPE) {
		for (i = 0; i < M; i++) {
			p2p(G, RECV_PREV);
			forward_step(G, fwd++);
			p2p(G, SEND_NEXT);
		}
		for (i = 0; i < M; i++) {
			p2p(G, RECV_NEXT);
			backward_step(G, bwd, bwd == M - 1);
			bwd++;
			p2p(G, SEND_PREV);
		}
		return;
	}
	warm = P - G->stage - 1 < M ? P - G->stage - 1 : M;
	rem = M - warm;
	for (i = 0; i < warm; i++) {
		p2p(G, RECV_PREV);
		forward_step(G, fwd++);
		p2p(G, SEND_NEXT);
	}
	if (rem > 0)
		p2p(G, RECV_PREV);
	for (i = 0; i < rem; i++) {
		forward_step(G, fwd++);
		p2p(G, SEND_NEXT | RECV_NEXT);
		backward_step(G, bwd, bwd == M - 1);
		bwd++;
		if (i == rem - 1)
			p2p(G, SEND_PREV);
		else
			p2p(G, SEND_PREV | RECV_PREV);
	}
	for (i = 0; i < warm; i++) {
		p2p(G, RECV_NEXT);
		backward_step(G, bwd, bwd == M - 1);
		bwd++;
		p2p(G, SEND_PREV);
	}
}

/* tensor.item(): a blocking copy to pageable memory, then a stream synchronize. */
static void
item(struct gen *G)
{
	uint32_t g;

	op(G, OT_ITEM, -1);
	op(G, OT_LSD, -1);
	g = launch(G, KT_D2H_ITEM, ST_COMPUTE, TG_NONE, NULL, 1);
	synchronize(G, "cudaStreamSynchronize", 131, "Stream Sync", ST_COMPUTE, &g, 1);
	close_op(G);
	close_op(G);
}

/* Megatron's optimizer step: grad norm (with its .item()), Adam, param copy. */
static void
optimizer(struct gen *G)
{
	const struct stagek *sk = G->sk;
	int i;

	advance(G, 4 * H_PY);
	for (i = 0; i < sk->nadam; i++)
		kern(G, i == sk->nadam - 1 ? sk->l2_last : sk->l2);
	kern(G, KT_L2NORM_CLEANUP);
	op1(G, OT_POW, -1, KT_POW);
	coll(G, G_MP, C_ALLREDUCE, DT_F32, 0, 1, 1, NULL);
	advance(G, H_PY);
	item(G);
	advance(G, 4 * H_PY);
	annot(G, "Optimizer.step#FusedAdam.step");
	for (i = 0; i < sk->nadam; i++)
		kern(G, i == sk->nadam - 1 ? sk->adam_last : sk->adam);
	close_op(G);
	advance(G, 2 * H_PY);
	for (i = 0; i < sk->nadam; i++)
		kern(G, i == sk->nadam - 1 ? sk->scale_last : sk->scale);
	/* the gradients go (zero_grad, set to none) */
	if (G->grads)
		mem_event(G, -4 * G->sk->params);
	G->grads = 0;
}

void
iteration(struct gen *G, int64_t step)
{
	char name[48];
	uint32_t ops[NSTREAM];
	int i;

	G->step_lo = TG_UNSET, G->step_hi = 0;
	snprintf(name, sizeof(name), "ProfilerStep#%" PRId64, step);
	open_op(G, "user_annotation", name, -1, NULL, 1);
	/* zero_grad_buffer */
	advance(G, 4 * H_PY);
	op_dyn(G, "aten::zero_", "T%" PRId64 ":f32", G->sk->params);
	op_dyn(G, "aten::fill_", "T%" PRId64 ":f32|S0", G->sk->params);
	launch(G, G->sk->memset_grad, ST_COMPUTE, TG_NONE, NULL, 0);
	close_op(G);
	close_op(G);
	schedule(G);
	/* finish_grad_sync */
	advance(G, H_PY);
	if (G->gsize[G_DP] > 1)
		for (i = 0; i < G->J->nbk[G->stage]; i++)
			stream_wait(G, ST_COMPUTE, &G->bdone[i]);
	optimizer(G);
	advance(G, 4 * H_PY);
	for (i = 0; i < NSTREAM; i++)
		ops[i] = G->lastop[i];
	synchronize(G, "cudaDeviceSynchronize", 165, "Context Sync", -1, ops, NSTREAM);
	advance(G, 2 * H_PY);
	if (G->emit && G->step_lo != TG_UNSET) {
		ev_x_head(G->w, "gpu_user_annotation", name, G->dev, tg_stream_id[ST_COMPUTE],
		    TS0 + G->step_lo);
		ev_x_dur(G->w, G->step_hi - G->step_lo);
		jw_puts(G->w, ",\n    \"args\": {\n      \"External id\": ");
		jw_int(G->w, G->st[G->depth - 1].ext);
		jw_puts(G->w, "\n    }\n  }");
	}
	close_op(G);
}
