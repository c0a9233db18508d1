/*
 * memest: graphstat's predicted peak device memory (memest.h).
 */
#include <stdlib.h>
#include <string.h>

#include "memest.h"
#include "params.h"
#include "util.h"

void
memest_reset(struct memest *m)
{
	m->nev = 0;
	m->nrk = 0;
	m->sorted = 0;
}

void
memest_release(struct memest *m)
{
	free(m->ev);
	free(m->rk);
	memset(m, 0, sizeof(*m));
}

static struct memrank *
rank_of(struct memest *m, int64_t rank)
{
	struct memrank *k;
	size_t i;

	if (m->lastrk < m->nrk && m->rk[m->lastrk].rank == rank)
		return &m->rk[m->lastrk];
	for (i = 0; i < m->nrk; i++)
		if (m->rk[i].rank == rank) {
			m->lastrk = i;
			return &m->rk[i];
		}
	grow(&m->rk, &m->caprk, m->nrk + 1, sizeof(*m->rk));
	m->lastrk = m->nrk;
	k = &m->rk[m->nrk++];
	memset(k, 0, sizeof(*k));
	k->rank = rank;
	k->it = INT64_MIN;
	k->mb = INT64_MIN;
	k->last_sh_op = k->last_sh = -1;
	k->last_layer = -1;
	param_count_init(&k->pc);
	k->pc.tied = 1;
	return k;
}

/* A recent cast (copy_ to another type) of nel elements from a type of
 * src bytes: a weight's half copy when a product takes one that size. */
static int
cast_of(const struct memrank *k, int64_t nel)
{
	int i;

	for (i = 0; i < k->ncast; i++)
		if (k->cast[i] == nel)
			return k->castsrc[i] > 0 ? k->castsrc[i] : -1;
	return 0;
}

/*
 * Bytes a forward operator keeps for its backward, from its Input Dims
 * and Input type (the estimate without allocator events; an operand of
 * unknown type at 2 bytes, autocast's half types): a matrix product its
 * input (and a weight cast for it just before), a norm or an activation
 * function its input, a softmax its output (its input's size),
 * attention its query, key, value and output. Parameters themselves are
 * counted apart.
 */
static int64_t
kept(const struct memrank *k, const char *op, const int64_t *numel, const int *sz, int n)
{
#define B(i) (numel[i] * (sz[i] > 0 ? sz[i] : 2))
	if (n < 1)
		return 0;
	if (strcmp(op, "aten::addmm") == 0)
		return n >= 3 ? B(1) + (cast_of(k, numel[2]) ? B(2) : 0) : 0;
	if (strcmp(op, "aten::mm") == 0 || strcmp(op, "aten::linear") == 0 ||
	    strcmp(op, "aten::matmul") == 0)
		return B(0) + (n >= 2 && cast_of(k, numel[1]) ? B(1) : 0);
	if (strcmp(op, "aten::bmm") == 0)
		return B(0) + (n >= 2 ? B(1) : 0);
	if (strstr(op, "layer_norm") != NULL || strstr(op, "rms_norm") != NULL ||
	    strcmp(op, "aten::gelu") == 0 || strcmp(op, "aten::relu") == 0 ||
	    strcmp(op, "aten::silu") == 0 || strcmp(op, "aten::tanh") == 0 ||
	    strcmp(op, "aten::sigmoid") == 0 || strcmp(op, "aten::_softmax") == 0 ||
	    strcmp(op, "aten::softmax") == 0)
		return B(0);
	if (strstr(op, "attention") != NULL && strstr(op, "backward") == NULL)
		return n >= 3 ? B(0) + B(1) + B(2) + B(0) : 0;
	return 0;
#undef B
}

void
memest_task(struct memest *m, const struct kg_reader *r, const struct kg_task *t,
    int64_t rank, int thread)
{
	struct memrank *k = rank_of(m, rank);

	if (t->mpeak >= 0 && t->iter >= 0 && (t->mnet > MEM_TASK_MAX || t->mnet < -MEM_TASK_MAX ||
	    t->mexc > MEM_TASK_MAX)) {
		k->absurd++;
	} else if (t->mpeak >= 0 && t->iter >= 0) {
		struct memev_t e;

		e.rank = rank, e.it = t->iter, e.key = t->ts;
		e.mn = t->mnet;
		/* a 1.4 stream has no excursion: the net, at least 0 */
		e.mx = t->mexc >= 0 ? t->mexc : (t->mnet > 0 ? t->mnet : 0);
		e.id = t->id;
		e.name = t->op != KG_NONE ? t->op : t->name;
		e.phase = (int8_t)t->phase, e.mb = t->mb, e.layer = t->layer;
		VEC_PUSH(m->ev, m->nev, m->capev, e);
		m->sorted = 0;
	}
	if (t->kind == KG_COLL && t->gsize > 1) {
		struct memgroup *g;
		int i;

		for (i = 0; i < k->ngrp && k->grp[i].pgr != t->pgr; i++)
			;
		if (i == k->ngrp && k->ngrp < MEM_GROUPS) {
			k->ngrp++;
			memset(&k->grp[i], 0, sizeof(k->grp[i]));
			k->grp[i].pgr = t->pgr;
		}
		g = &k->grp[i < MEM_GROUPS ? i : MEM_GROUPS - 1];
		if (t->coll == KG_COLL_ALLGATHER && t->phase == KG_PH_FWD && t->gsize > g->gather_gs)
			g->gather_gs = t->gsize;
		if (t->coll == KG_COLL_REDUCESCATTER && t->phase == KG_PH_BWD && t->gsize > g->rs_gs)
			g->rs_gs = t->gsize;
		if ((t->coll == KG_COLL_REDUCESCATTER || t->coll == KG_COLL_ALLREDUCE) &&
		    t->phase == KG_PH_FWD)
			g->fwd_reduce = 1;
	}
	if (!thread || t->iter < 0)
		return;
	if (t->phase == KG_PH_OPT) {
		const char *n = kg_str(r, t->op != KG_NONE ? t->op : t->name);

		k->optim_seen = 1;
		if (strstr(n, "adam") != NULL || strstr(n, "Adam") != NULL || strstr(n, "addcdiv") != NULL ||
		    strstr(n, "lerp") != NULL)
			k->adam = 1;
		return;
	}
	/* a forward operator run in the backward: the forward is
	 * recomputed there (activation checkpointing), so a layer keeps
	 * only its input between the passes */
	if (t->phase == KG_PH_BWD && t->kind == KG_RT && t->op != KG_NONE && t->layer >= 0) {
		const char *op = kg_str(r, t->op);

		/* a norm or an activation function: the whole layer (an
		 * attention forward alone is selective recomputation, which
		 * keeps the attention's inputs and output all the same) */
		if (strcmp(op, "aten::native_layer_norm") == 0 || strcmp(op, "aten::gelu") == 0)
			k->recompute = 1;
	}
	if (t->phase != KG_PH_FWD)
		return;
	/* the first iteration's first micro-batch; a task of no
	 * micro-batch (a pipeline's receive) goes with it */
	if (k->it == INT64_MIN)
		k->it = t->iter;
	if (t->iter == k->it && k->mb == INT64_MIN && t->mb >= 0)
		k->mb = t->mb;
	if (t->iter == k->it && t->mb > k->maxmb)
		k->maxmb = t->mb;
	if (t->iter != k->it || (t->mb != k->mb && t->mb >= 0))
		return;
	/* only a product outside the layers is an LM head tied to a table
	 * (an MLP's weight may be as large as a table's shard) */
	k->pc.tied = t->layer < 0;
	param_count_add(&k->pc, r, t);
	/* the shapes estimate: each operator call once (its launches share
	 * op and shapes) */
	if (t->kind == KG_RT && t->op != KG_NONE && t->shapes != KG_NONE &&
	    ((int64_t)t->op != k->last_sh_op || (int64_t)t->shapes != k->last_sh)) {
		const char *op = kg_str(r, t->op), *dims = kg_str(r, t->shapes);
		int64_t numel[8], first[8], last[8], big;
		int sz[8], n, nt, np, i;

		k->last_sh_op = t->op, k->last_sh = t->shapes;
		n = dims_operands(dims, numel, first, last, 8);
		nt = t->itypes != KG_NONE ? type_sizes(kg_str(r, t->itypes), sz, 8) : 0;
		for (i = nt; i < 8; i++)
			sz[i] = 0;
		if (strcmp(op, "aten::copy_") == 0 || strcmp(op, "aten::_to_copy") == 0) {
			/* a cast (another type, where the types say): a
			 * weight's, when a product takes it next */
			if (n >= 1 && (nt < 2 || sz[0] != sz[1])) {
				if (k->ncast == 4)
					k->ncast = 0;
				k->cast[k->ncast] = numel[0];
				k->castsrc[k->ncast++] = nt >= 2 ? sz[1] : 0;
			}
			return;
		}
		/* a lookup table outside the layers (an embedding, lowered
		 * to gather or index_select): its table is a parameter, and an
		 * LM head as large later is the largest such one (tied; a
		 * position table may be as large as a layer's weight) */
		if (t->layer < 0 && n >= 1 && params_rows(numel[0], first[0], last[0]) &&
		    (strcmp(op, "aten::gather") == 0 || strcmp(op, "aten::index_select") == 0)) {
			if (k->pc.ntable == 0 || numel[0] > k->pc.table[0])
				k->pc.table[0] = numel[0], k->pc.ntable = 1;
			k->pc.sum = params_add(k->pc.sum, numel[0]);
			k->pc.tensors++;
			if (numel[0] > k->elem_big && sz[0] > 0)
				k->elem = sz[0], k->elem_big = numel[0];
		}
		/* the parameters' element size: the largest weight's, or
		 * that of the tensor a cast of it came from */
		if (op_params_n(op, dims, &np, &big) > 0 && big > k->elem_big) {
			int c = cast_of(k, big);

			for (i = 0; i < n && numel[i] != big; i++)
				;
			if (c > 0)
				k->elem = c, k->elem_big = big;
			else if (c == 0 && i < n && sz[i] > 0)
				k->elem = sz[i], k->elem_big = big;
		}
		{
			int64_t b = kept(k, op, numel, sz, n);

			k->act_shapes = params_add(k->act_shapes, b);
			/* a layer's input: the first operand of its first
			 * operator that keeps one */
			if (t->layer >= 0 && b > 0) {
				k->act_layers = params_add(k->act_layers, b);
				if (t->layer != k->last_layer) {
					k->last_layer = t->layer;
					k->layer_in = params_add(k->layer_in,
					    numel[0] * (sz[0] > 0 ? sz[0] : 2));
					k->nlayers++;
				}
			}
		}
		if (strcmp(op, "aten::mm") == 0 || strcmp(op, "aten::linear") == 0 ||
		    strcmp(op, "aten::addmm") == 0)
			k->logit_sz = sz[0] > 0 ? sz[0] : 2;
		k->ncast = 0;
		/* the loss: the log-probabilities a log-softmax keeps (its
		 * input's size and type: float where autocast computes the
		 * loss in float) and their gradient at the backward's start,
		 * with the logits themselves (the product before it) */
		if (strcmp(op, "aten::_log_softmax") == 0 && n >= 1)
			k->logits_shapes = params_add(k->logits_shapes,
			    numel[0] * (2 * (sz[0] > 0 ? sz[0] : 4) + (k->logit_sz > 0 ? k->logit_sz : 2)));
	}
}

static int
cmp_ev(const void *a, const void *b)
{
	const struct memev_t *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->it != y->it)
		return x->it < y->it ? -1 : 1;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

void
memest_order(struct memest *m, const int64_t *ss, const int64_t *ts, size_t n)
{
	size_t i;

	for (i = 0; i < m->nev; i++)
		if (m->ev[i].id < n)
			m->ev[i].key = ss != NULL ? ss[m->ev[i].id] : ts[m->ev[i].id];
	if (m->nev > 1)
		qsort(m->ev, m->nev, sizeof(*m->ev), cmp_ev);
	m->sorted = 1;
}

struct mempred
memest_predict(struct memest *m, int64_t rank, int64_t it)
{
	struct mempred p;
	struct memrank *k = rank_of(m, rank);
	int64_t elem, nparam, level = 0, low = 0, fl = 0, fo = 0, bl = 0, bo = 0;
	size_t i, lo = 0, hi = m->nev, end;

	memset(&p, 0, sizeof(p));
	p.how = MP_NONE;
	p.peak = -1;
	p.phase = KG_PH_NONE;
	p.mb = p.layer = -1;
	p.name = KG_NONE;
	if (!m->sorted)
		memest_order(m, NULL, NULL, 0);
	elem = k->elem > 0 ? k->elem : 4;
	p.assumed_elem = k->elem <= 0;
	p.assumed_optim = !k->adam;
	nparam = k->pc.sum;
	p.shard = 1;
	{
		int64_t gather_gs = 0, rs_gs = 0;
		int j;

		for (j = 0; j < k->ngrp; j++) {
			if (k->grp[j].fwd_reduce)
				continue;
			if (k->grp[j].gather_gs > gather_gs)
				gather_gs = k->grp[j].gather_gs;
			if (k->grp[j].rs_gs > rs_gs)
				rs_gs = k->grp[j].rs_gs;
		}
		if (gather_gs > 1)
			p.zero = 3, p.shard = gather_gs;
		else if (rs_gs > 1)
			p.zero = 2, p.shard = rs_gs;
	}
	p.params = nparam * elem / (p.zero == 3 ? p.shard : 1);
	/* Adam's two states; half-precision parameters are trained in
	 * mixed precision (Megatron, DeepSpeed, Apex; the ZeRO paper's 12
	 * bytes a parameter): a float master copy and float states */
	p.optim = (elem < 4 ? 12 : 2 * elem) * nparam / p.shard;
	p.mixed = elem < 4;
	/* the events of (rank, it): sorted, found by bisection */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->ev[mid].rank < rank || (m->ev[mid].rank == rank && m->ev[mid].it < it))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; end < m->nev && m->ev[end].rank == rank && m->ev[end].it == it; end++)
		;
	p.absurd = k->absurd + (end - lo > MEM_EVENTS_MAX ? (int64_t)(end - lo) : 0);
	if (p.absurd == 0 && end > lo) {
		int64_t peak = 0;

		/* by micro-batch: tasks left, net bytes, given back; by
		 * (micro-batch, layer): the same for the layer's tasks, and
		 * what the first micro-batch's layer left (its gradients) */
		int64_t *left, *net, *given, *lleft, *lnet, *lkept, nmb = 0, nly = 0, first = -1;

		p.how = MP_ALLOC;
		for (i = lo; i < end; i++) {
			if (m->ev[i].mb >= nmb && m->ev[i].mb < (1 << 16))
				nmb = m->ev[i].mb + 1;
			if (m->ev[i].layer >= nly && m->ev[i].layer < (1 << 12))
				nly = m->ev[i].layer + 1;
		}
		left = xcalloc((size_t)nmb + 1, sizeof(*left));
		net = xcalloc((size_t)nmb + 1, sizeof(*net));
		given = xcalloc((size_t)nmb + 1, sizeof(*given));
		lleft = xcalloc((size_t)(nmb * nly) + 1, sizeof(*lleft));
		lnet = xcalloc((size_t)(nmb * nly) + 1, sizeof(*lnet));
		lkept = xcalloc((size_t)nly + 1, sizeof(*lkept));
		for (i = lo; i < end; i++) {
			const struct memev_t *e = &m->ev[i];

			if (e->mb >= 0 && e->mb < nmb) {
				left[e->mb]++;
				if (e->layer >= 0 && e->layer < nly)
					lleft[e->mb * nly + e->layer]++;
			}
		}
		for (i = lo; i < end; i++) {
			const struct memev_t *e = &m->ev[i];

			/* above the lowest level so far: what was freed
			 * below the start was held at the start */
			if (level + e->mx - low > peak) {
				peak = level + e->mx - low;
				p.logits = fo + bo, p.act = fl, p.grads = bl;
				p.temp = e->mx - low;
				p.phase = e->phase, p.mb = e->mb, p.layer = e->layer;
				p.name = e->name;
			}
			level += e->mn;
			if (e->phase == KG_PH_FWD && e->layer >= 0)
				fl += e->mn;
			else if (e->phase == KG_PH_FWD)
				fo += e->mn;
			else if (e->phase == KG_PH_BWD && e->layer < 0)
				bo += e->mn;
			else
				bl += e->mn;
			if (level < low)
				low = level;
			if (e->mb < 0 || e->mb >= nmb)
				continue;
			if (first < 0)
				first = e->mb;
			net[e->mb] += e->mn;
			/*
			 * What a micro-batch leaves behind is its gradients;
			 * from the second on they accumulate into the first's
			 * in place. A micro-batch copied from the first (a
			 * what-if's) allocates them again: what a layer of it
			 * leaves, up to what the first's left, is taken back
			 * once the layer's last task has run, and the rest of
			 * what it leaves once its own last task has.
			 */
			if (e->layer >= 0 && e->layer < nly) {
				int64_t q = e->mb * nly + e->layer;

				lnet[q] += e->mn;
				if (--lleft[q] == 0) {
					if (e->mb == first) {
						lkept[e->layer] = lnet[q];
					} else if (lnet[q] > 0 && lkept[e->layer] > 0) {
						int64_t g = lnet[q] < lkept[e->layer] ? lnet[q] : lkept[e->layer];

						level -= g, bl -= g, given[e->mb] += g;
					}
				}
			}
			if (--left[e->mb] == 0 && e->mb != first && net[e->mb] - given[e->mb] > 0) {
				level -= net[e->mb] - given[e->mb];
				bl -= net[e->mb] - given[e->mb];
			}
		}
		free(left);
		free(net);
		free(given);
		free(lleft);
		free(lnet);
		free(lkept);
		/* level 0 is the step's start: frees below it freed what the
		 * window never saw allocated (a step the window cut, a tensor
		 * of the step before), so it was held at the start: a task's
		 * level counts from the lowest before it, never below the
		 * start */
		p.early_frees = -low;
		/* an edit's copies and scaled keys leave a little off: a
		 * hundredth of the peak is not reported */
		p.unbalanced = (level < 0 ? -level : level) > peak / 100;
		p.noisy = p.unbalanced || -low > peak / 100;

		/* what the backward holds at the peak: the gradients first
		 * (at most their bytes, sharded as the job shards them) */
		{
			int64_t g = nparam * elem / (p.zero >= 2 ? p.shard : 1);
			int64_t b = p.grads;

			p.grads = b < 0 ? 0 : b > g ? g : b;
			/* less: the backward freed activations; more: its
			 * temporaries */
			if (b - p.grads < 0)
				p.act += b - p.grads;
			else
				p.temp += b - p.grads;
			/* a part below 0 freed what another held: off the
			 * temporaries, so the parts still sum to the peak */
			if (p.act < 0)
				p.temp += p.act, p.act = 0;
			if (p.logits < 0)
				p.temp += p.logits, p.logits = 0;
			if (p.temp < 0)
				p.temp = 0;
		}
		p.peak = p.params + p.optim + peak;
		return p;
	}
	if (nparam > 0 || k->act_shapes > 0) {
		int64_t g = nparam * elem / (p.zero >= 2 ? p.shard : 1);

		/* no allocator events: the forward's kept inputs and the
		 * logits at the backward's start (with the gradients of the
		 * micro-batches before, where the step has more than one),
		 * or the gradients at the optimizer's, whichever is more */
		p.how = MP_SHAPES;
		p.act = k->act_shapes;
		/* checkpointed: each layer's input, and one layer's whole
		 * activations while it is recomputed */
		if (k->recompute && k->nlayers > 0)
			p.act = k->act_shapes - k->act_layers + k->layer_in +
			    k->act_layers / k->nlayers;
		p.recompute = k->recompute;
		p.logits = k->logits_shapes;
		/* or the optimizer's step: the gradients and one temporary
		 * list of the parameters' size (a foreach Adam's; the H100
		 * _mem traces show it) */
		if (p.act + p.logits + (k->maxmb > k->mb ? g : 0) >= g + p.params) {
			p.phase = KG_PH_BWD;
			if (k->maxmb > k->mb)
				p.grads = g;
		} else {
			p.act = p.logits = 0;
			p.grads = g;
			p.temp = nparam * elem / (p.zero == 3 ? p.shard : 1);
			p.phase = KG_PH_OPT;
		}
		p.peak = p.params + p.optim + p.act + p.logits + p.grads + p.temp;
	}
	return p;
}
