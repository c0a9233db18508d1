/*
 * The allocator's [memory] events (--profile-memory; tracegen(1), MEMORY
 * MODEL): what a layer keeps for its backward and the loss its logits,
 * the gradients made by the first micro-batch's backward, and the
 * allocator's level and its most reserved, which each event carries. The
 * level is the generator's (struct gen); the program (layers.c,
 * schedule.c) says when memory comes and goes. Without the option these
 * write and count nothing.
 */
#include "kernels.h"

/*
 * An allocator event (--profile-memory): bytes allocated (freed when
 * negative) now, on the current thread, with the allocator's totals
 * after it, as PyTorch's profile_memory writes them. The model is
 * tracegen(1)'s MEMORY MODEL.
 */
void
mem_event(struct gen *G, int64_t bytes)
{
	struct jw *w = G->w;

	if (!G->c->memory || bytes == 0)
		return;
	G->mlevel += bytes;
	if (G->mstate + G->mlevel > G->mres)
		G->mres = G->mstate + G->mlevel;
	if (!G->emit)
		return;
	ev_begin(w);
	jw_puts(w, "  {\n    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", "
	    "\"name\": \"[memory]\", \"pid\": ");
	jw_int(w, G->pid);
	jw_puts(w, ", \"tid\": ");
	jw_int(w, tid_of(G));
	jw_puts(w, ",\n    \"ts\": ");
	jw_us(w, TS0 + G->now);
	jw_puts(w, ",\n    \"args\": {\n      \"Total Reserved\": ");
	jw_int(w, G->mres);
	jw_puts(w, ", \"Total Allocated\": ");
	jw_int(w, G->mstate + G->mlevel);
	jw_puts(w, ", \"Bytes\": ");
	jw_int(w, bytes);
	jw_puts(w, ", \"Device Id\": ");
	jw_int(w, G->dev);
	jw_puts(w, ", \"Device Type\": 1, \"Addr\": ");
	jw_int(w, (int64_t)++G->maddr);
	jw_puts(w, "\n    }\n  }");
}

/* An item's float gradients, made by its first micro-batch's backward
 * (the others accumulate into them); gone after the optimizer's step. */
void
mem_grads(struct gen *G, int mb, int item)
{
	int kind;

	if (mb == 0) {
		mem_event(G, 4 * item_params(G->J, G->stage, item, &kind));
		G->grads = 1;
	}
}

/* What one layer keeps for its backward, a micro-batch: Korthikanti et
 * al. 2022 (eq. 2) with flash attention (no s^2 term) and TP t: s b h
 * (10 + 24 / t) bytes. */
int64_t
mem_layer(const struct gen *G)
{
	const struct tg_cfg *c = G->c;

	return c->seq * c->mbs * c->hidden * (10 + 24 / c->tp);
}

/* What one layer keeps for its backward under full recomputation: its
 * input alone, s b h 2 bytes (a sequence shard of it, s b h 2 / t, with
 * sequence parallelism). Its backward allocates the rest again when it
 * runs the forward again. */
int64_t
mem_layer_kept(const struct gen *G)
{
	const struct tg_cfg *c = G->c;
	int64_t in = c->seq * c->mbs * c->hidden * 2;

	if (c->recompute != RC_FULL)
		return mem_layer(G);
	return c->sp ? in / c->tp : in;
}

/* The logits the loss keeps, a micro-batch: float, vocabulary-parallel. */
int64_t
mem_logits(const struct gen *G)
{
	const struct tg_cfg *c = G->c;

	return c->seq * c->mbs * (c->vocab / c->tp) * 4;
}
