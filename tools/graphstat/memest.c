/*
 * memest: graphstat's predicted peak device memory (memest.h).
 */
#include <stdlib.h>
#include <string.h>

#include "memest.h"
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

	for (i = 0; i < m->nrk; i++)
		if (m->rk[i].rank == rank)
			return &m->rk[i];
	grow(&m->rk, &m->caprk, m->nrk + 1, sizeof(*m->rk));
	k = &m->rk[m->nrk++];
	memset(k, 0, sizeof(*k));
	k->rank = rank;
	k->it = INT64_MIN;
	k->mb = INT64_MIN;
	k->last_sh_op = k->last_sh = -1;
	param_count_init(&k->pc);
	k->pc.tied = 1;
	return k;
}

/* Up to two operands' dims from Input Dims text: numel and the first
 * and last dimensions of each; the count of operands seen. */
static int
dims2(const char *p, int64_t numel[2], int64_t first[2], int64_t last[2])
{
	int depth = 0, k = -1, num = 0, nd = 0;
	int64_t v = 0;

	for (; *p != '\0'; p++) {
		if (*p == '[') {
			if (++depth == 2 && ++k < 2)
				numel[k] = 1, first[k] = last[k] = 0, nd = 0;
		} else if (*p >= '0' && *p <= '9') {
			if (v < INT64_MAX / 16)
				v = v * 10 + (*p - '0');
			num = 1;
		}
		if ((*p == ',' || *p == ']') && num) {
			if (depth == 2 && k >= 0 && k < 2) {
				numel[k] *= v, last[k] = v;
				if (nd++ == 0)
					first[k] = v;
			}
			v = 0, num = 0;
		}
		if (*p == ']')
			depth--;
	}
	return k + 1 < 2 ? k + 1 : 2;
}

/*
 * Operators whose first input a transformer's forward keeps for its
 * backward (at two bytes: the autocast half types; the estimate without
 * allocator events is said to be coarse).
 */
static int
keeps_input(const char *op)
{
	static const char *const keep[] = {
		"aten::linear", "aten::mm", "aten::addmm", "aten::bmm", "aten::matmul",
		"aten::layer_norm", "aten::native_layer_norm", "aten::gelu", "aten::relu",
		"aten::silu", "aten::dropout", "aten::softmax", "aten::_softmax",
		"aten::scaled_dot_product_attention",
		"aten::_scaled_dot_product_flash_attention",
		"aten::_scaled_dot_product_cudnn_attention",
		"aten::_scaled_dot_product_efficient_attention",
	};
	size_t i;

	for (i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (strcmp(op, keep[i]) == 0)
			return 1;
	return 0;
}

void
memest_task(struct memest *m, const struct kg_reader *r, const struct kg_task *t,
    int64_t rank, int thread)
{
	struct memrank *k = rank_of(m, rank);

	if (t->mpeak >= 0 && t->iter >= 0) {
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
		if (t->coll == KG_COLL_ALLGATHER && t->phase == KG_PH_FWD && t->gsize > k->gather_gs)
			k->gather_gs = t->gsize;
		if (t->coll == KG_COLL_REDUCESCATTER && t->phase == KG_PH_BWD && t->gsize > k->rs_gs)
			k->rs_gs = t->gsize;
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
	if (t->phase != KG_PH_FWD)
		return;
	if (k->it == INT64_MIN)
		k->it = t->iter, k->mb = t->mb;
	if (t->iter != k->it || t->mb != k->mb)
		return;
	param_count_add(&k->pc, r, t);
	/* the shapes estimate: each operator call once (its launches share
	 * op and shapes) */
	if (t->kind == KG_RT && t->op != KG_NONE && t->shapes != KG_NONE &&
	    ((int64_t)t->op != k->last_sh_op || (int64_t)t->shapes != k->last_sh)) {
		const char *op = kg_str(r, t->op);
		int64_t numel[2], first[2], last[2];
		int n;

		k->last_sh_op = t->op, k->last_sh = t->shapes;
		n = dims2(kg_str(r, t->shapes), numel, first, last);
		if (n >= 1 && keeps_input(op))
			k->act_shapes += 2 * numel[0];
		/* the LM head: a linear whose weight is an embedding table
		 * counted before (tied), or the largest weight: its output
		 * (tokens x vocabulary) in half, its float copy for the loss,
		 * the loss's log-probabilities and their gradient */
		if (n == 2 && (strcmp(op, "aten::linear") == 0 || strcmp(op, "aten::mm") == 0) &&
		    last[0] > 0) {
			int64_t vocab = strcmp(op, "aten::linear") == 0 ? first[1] : last[1];
			int64_t tokens = numel[0] / last[0];
			int j;

			for (j = 0; j < k->pc.ntable; j++)
				if (k->pc.table[j] == numel[1])
					k->logits_shapes = tokens * vocab * (2 + 4 + 4 + 4);
		}
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
	size_t i, lo = 0, hi = m->nev;

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
	if (k->gather_gs > 1)
		p.zero = 3, p.shard = k->gather_gs;
	else if (k->rs_gs > 1)
		p.zero = 2, p.shard = k->rs_gs;
	p.params = nparam * elem / (p.zero == 3 ? p.shard : 1);
	p.optim = 2 * nparam * elem / p.shard;
	/* the events of (rank, it): sorted, found by bisection */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->ev[mid].rank < rank || (m->ev[mid].rank == rank && m->ev[mid].it < it))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->nev && m->ev[lo].rank == rank && m->ev[lo].it == it) {
		int64_t peak = 0;

		p.how = MP_ALLOC;
		for (i = lo; i < m->nev && m->ev[i].rank == rank && m->ev[i].it == it; i++) {
			const struct memev_t *e = &m->ev[i];

			if (level + e->mx > peak) {
				peak = level + e->mx;
				p.logits = fo + bo, p.act = fl, p.grads = bl;
				p.temp = e->mx;
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
		}
		/* level 0 is the step's start: frees below it freed what the
		 * window never saw allocated */
		p.early_frees = -low;
		p.unbalanced = level != 0;
		/* what the backward holds at the peak: the gradients first
		 * (at most their bytes, sharded as the job shards them) */
		{
			int64_t g = nparam * elem / (p.zero >= 2 ? p.shard : 1);
			int64_t b = p.grads;

			p.grads = b < 0 ? 0 : b > g ? g : b;
			p.temp += b - p.grads;
		}
		p.peak = p.params + p.optim + peak;
		return p;
	}
	if (nparam > 0 || k->act_shapes > 0) {
		int64_t g = nparam * elem / (p.zero >= 2 ? p.shard : 1);

		/* no allocator events: the forward's kept inputs and the
		 * logits at the backward's start, or the gradients at the
		 * optimizer's, whichever is more */
		p.how = MP_SHAPES;
		p.act = k->act_shapes;
		p.logits = k->logits_shapes;
		if (p.act + p.logits >= g) {
			p.phase = KG_PH_BWD;
		} else {
			p.act = p.logits = 0;
			p.grads = g;
			p.phase = KG_PH_OPT;
		}
		p.peak = p.params + p.optim + p.act + p.logits + p.grads;
	}
	return p;
}
