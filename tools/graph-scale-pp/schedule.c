/*
 * A new rank's program: its stage's templates and layers, the schedule's
 * steps and the sends and receives between them, made where the job
 * traced none (see pp.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "params.h"
#include "pp.h"
#include "rtapi.h"
#include "util.h"

#define OPS1(o, m) do { int32_t mm[NOP] = { 0 }; mm[o] = (m); ops(B, sc, it, 1 << (o), mm); } while (0)

/* The template piece of rank k for a place, iteration it. */
const struct piece *
find(const struct job *J, int64_t k, int32_t it, int unit, int32_t mb, int part, int32_t a)
{
	struct place pl;

	memset(&pl, 0, sizeof(pl));
	pl.it = it, pl.unit = (uint8_t)unit, pl.mb = mb, pl.part = (uint8_t)part, pl.a = a;
	return job_piece(J, (uint32_t)k, &pl);
}

/* Source layer (in the primary's stage) of the stage's new layer j. */
static int32_t
src_layer(const struct stagecfg *sc, int64_t j)
{
	return (int32_t)layer_source(j, sc->nsrc, sc->n2);
}

static void
step(struct build *B, const struct stagecfg *sc, int32_t it, int unit, int32_t mb)
{
	const struct job *J = B->J;
	struct ctx c;
	int32_t msrc = (int32_t)(mb % J->tr[sc->prim].nmb);
	int64_t jj;
	int e;
	uint32_t mainp = new_proc(B, J->tr[sc->prim].main), before = B->last[mainp];

	memset(&c, 0, sizeof(c));
	c.it = it, c.mb = mb, c.unit = (uint8_t)unit, c.j = -1, c.jl = -1;
	B->bfirst = B->blast = KG_NONE;
	c.part = P_PRE;
	for (e = 0; e < sc->nends[unit == U_B][0]; e++)
		emit(B, find(J, sc->ends[unit == U_B][0][e], it, unit, msrc, P_PRE, -1), &c);
	for (jj = 0; jj < sc->n2; jj++) {
		int64_t j = unit == U_F ? jj : sc->n2 - 1 - jj;
		int32_t a = src_layer(sc, j), lo, hi, x;

		c.part = P_LAYER, c.j = sc->lo2 + j, c.jl = (int32_t)j;
		emit(B, find(J, sc->prim, it, unit, msrc, P_LAYER, a), &c);
		/* What followed a source layer (gradient buckets) comes once,
		 * after the new layer where the order passes it: forward, the
		 * sources from this one's up to the next one's; backward, down
		 * to the next one's. */
		if (unit == U_F) {
			lo = a;
			hi = j + 1 < sc->n2 ? src_layer(sc, j + 1) : (int32_t)sc->nsrc;
		} else {
			lo = j > 0 ? src_layer(sc, j - 1) + 1 : 0;
			hi = a + 1;
		}
		c.part = P_SLOT;
		for (x = 0; x < hi - lo; x++)
			emit(B, find(J, sc->prim, it, unit, msrc, P_SLOT,
			    unit == U_F ? lo + x : hi - 1 - x), &c);
	}
	c.part = P_POST, c.j = -1, c.jl = -1;
	for (e = 0; e < sc->nends[unit == U_B][1]; e++)
		emit(B, find(J, sc->ends[unit == U_B][1][e], it, unit, msrc, P_POST, -1), &c);
	if (unit == U_B && B->bfirst != KG_NONE) {
		/* the hand-offs: from the main thread's last task before, to its next one */
		struct kg_edge h;
		struct pend p;

		kg_edge_init(&h);
		h.kind = KG_E_HANDOFF, h.how = KG_HOW_INFERRED;
		h.delay = 0;
		{
			uint32_t k, u = B->tmpl[B->bfirst];

			for (k = J->inoff[u]; k < J->inoff[u + 1]; k++)
				if (J->g->edge[J->in[k]].kind == KG_E_HANDOFF)
					h.delay = J->g->edge[J->in[k]].delay;
		}
		if (before != KG_NONE)
			add_edge(B, &h, before, B->bfirst, KG_NONE, KG_NONE);
		p.proc = mainp;
		p.e = h;
		p.e.delay = 0;
		{
			uint32_t k, u = B->tmpl[B->blast];

			for (k = J->outoff[u]; k < J->outoff[u + 1]; k++)
				if (J->g->edge[J->out[k]].kind == KG_E_HANDOFF)
					p.e.delay = J->g->edge[J->out[k]].delay;
		}
		p.e.src = B->blast;
		VEC_PUSH(B->pd, B->npd, B->cappd, p);
	}
}

/* A stream made here (a send's or receive's): its role is its id. */
static uint32_t
made_proc(struct build *B, int64_t role)
{
	struct kg_proc p;

	memset(&p, 0, sizeof(p));
	p.name = KG_NONE;
	p.kind = KG_STREAM;
	p.pid = B->proc[B->compute].pid;
	p.tid = role;
	return role_proc(B, role, &p);
}

/*
 * A send or receive made anew (the job traced none): a launch call on
 * the main thread, its kernel on a stream of its direction, after the
 * compute stream's work (an event wait bound on the launch call), timed
 * by the model for the activations' bytes over the pair's link.
 * Returns the kernel.
 */
static uint32_t
make_op(struct build *B, const struct stagecfg *sc, const struct ctx *c)
{
	const struct job *J = B->J;
	int send = c->op == OP_SEND_NEXT || c->op == OP_SEND_PREV;
	int next = c->op == OP_SEND_NEXT || c->op == OP_RECV_NEXT;
	int64_t peer = B->rank + (next ? 1 : -1) * J->tp * J->dp;
	int link = B->rank / J->o->gpn != peer / J->o->gpn ? COMM_INTER : COMM_INTRA, a;
	uint32_t mainp = new_proc(B, J->tr[sc->prim].main), h, k;
	int64_t d;
	struct kg_task t;
	struct kg_edge e;
	char msg[160];

	d = comm_time(&J->m, send ? KG_COLL_SEND : KG_COLL_RECV, 2, (uint64_t)J->act, link, &a);
	if (d < 0 || a) {
		if (!B->failed)
			errmsg("%s: section %d: no send over %s to time the stages' sends on: give "
			    "the link (--topology FILE%s)", J->name, J->index,
			    link == COMM_INTER ? "the network (across nodes)" :
			    "NVLink (inside a node)", link == COMM_INTER ? ", --net GBPS,US" : "");
		B->failed = 1;
		return KG_NONE;
	}
	if (pgroups_borrowed(&J->m, send ? KG_COLL_SEND : KG_COLL_RECV, link, B->seen, msg,
	    sizeof(msg)))
		warnmsg("%s: section %d: %s", J->name, J->index, msg);
	kg_task_init(&t);
	t.proc = mainp;
	t.kind = KG_RT;
	t.name = intern_call(B, RTAPI_LAUNCH);
	t.dur = t.odur = J->launch;
	t.iter = J->g->h.niters > 0 ? J->g->h.iters[c->it] : -1;
	t.phase = KG_PH_FWD;
	t.stage = B->stage;
	h = add_task(B, &t, KG_NONE);
	t.proc = made_proc(B, B->role_max + 1 + next);
	t.kind = KG_COLL;
	t.name = intern_text(B, "ncclDevKernel_SendRecv");
	t.dur = t.odur = d;
	t.coll = send ? KG_COLL_SEND : KG_COLL_RECV;
	t.bytes = (uint64_t)J->act;
	k = add_task(B, &t, KG_NONE);
	kg_edge_init(&e);
	e.kind = KG_E_LAUNCH;
	add_edge(B, &e, h, k, KG_NONE, KG_NONE);
	if (B->last[B->compute] != KG_NONE) {
		e.kind = KG_E_EVENT, e.how = KG_HOW_INFERRED;
		add_edge(B, &e, B->last[B->compute], k, KG_NONE, KG_NONE);
		B->e[B->ne - 1].on = B->compute, B->e[B->ne - 1].via = h;
	}
	coll_key(B, k, KG_NONE, c, 0);
	return k;
}

/*
 * The template for the k-th operation of a kind in an iteration: the
 * k-th of the template rank's (the same one when the depth stays), else
 * one of them.
 */
static uint32_t
op_piece(const struct build *B, int64_t r, int op, int32_t it)
{
	size_t at = (size_t)op * (B->J->g->h.niters + 1) + (size_t)it;
	uint32_t n = B->nops[r][at];

	return n == 0 ? KG_NONE : B->ops[r][at * OPMAX + (uint32_t)B->opk[op] % n];
}

/* Pipeline operations for one point of the schedule, in Megatron's order. */
static void
ops(struct build *B, const struct stagecfg *sc, int32_t it, int want, const int32_t *mb)
{
	static const int even[] = { OP_SEND_NEXT, OP_RECV_PREV, OP_SEND_PREV, OP_RECV_NEXT };
	static const int odd[] = { OP_RECV_PREV, OP_SEND_NEXT, OP_RECV_NEXT, OP_SEND_PREV };
	const int *order = B->stage % 2 == 0 ? even : odd;
	const struct job *J = B->J;
	uint32_t pi[4], made[4];
	int i;

	if (B->stage == 0)
		want &= ~(1 << OP_RECV_PREV | 1 << OP_SEND_PREV);
	if (B->stage == J->o->n - 1)
		want &= ~(1 << OP_SEND_NEXT | 1 << OP_RECV_NEXT);
	/* the operations, then the waits for them */
	for (i = 0; i < 4; i++) {
		int op = order[i];
		struct ctx c;

		pi[i] = made[i] = KG_NONE;
		if (!(want & (1 << op)))
			continue;
		memset(&c, 0, sizeof(c));
		c.it = it, c.mb = mb[op], c.unit = U_OP, c.op = (uint8_t)op, c.j = -1, c.jl = -1;
		if (J->synth) {
			made[i] = make_op(B, sc, &c);
			continue;
		}
		pi[i] = op_piece(B, sc->prim, op, it);
		if (pi[i] == KG_NONE) {
			int64_t r;

			for (r = 0; r < J->world && pi[i] == KG_NONE; r++)
				if (r % (J->tp * J->dp) == sc->prim % (J->tp * J->dp))
					pi[i] = op_piece(B, r, op, it);
		}
		B->opk[op]++;
		emit(B, pi[i] == KG_NONE ? NULL : &J->pc[pi[i]], &c);
	}
	for (i = 0; i < 4; i++) {
		const struct piece *p = pi[i] == KG_NONE ? NULL : &J->pc[pi[i]];
		struct ctx c;

		if (made[i] != KG_NONE) {
			/* the compute stream's next task waits for it */
			struct pend pd;

			pd.proc = B->compute;
			kg_edge_init(&pd.e);
			pd.e.kind = KG_E_EVENT, pd.e.how = KG_HOW_INFERRED, pd.e.src = made[i];
			VEC_PUSH(B->pd, B->npd, B->cappd, pd);
		}
		if (p == NULL)
			continue;
		memset(&c, 0, sizeof(c));
		c.it = it, c.mb = mb[order[i]], c.unit = U_OP, c.op = (uint8_t)order[i];
		c.part = P_POST, c.j = -1, c.jl = -1;
		emit(B, find(J, p->rank, p->pl.it, U_OP, p->pl.mb, P_POST, -1), &c);
	}
}

void
schedule(struct build *B, const struct stagecfg *sc, int32_t it, int64_t M)
{
	const struct job *J = B->J;
	int64_t S2 = J->o->n, s = B->stage, warm, rem, i, f = 0, b = 0;

	if (J->o->sched == SCHED_GPIPE) {
		for (i = 0; i < M; i++) {
			OPS1(OP_RECV_PREV, (int32_t)i);
			step(B, sc, it, U_F, (int32_t)i);
			OPS1(OP_SEND_NEXT, (int32_t)i);
		}
		for (i = 0; i < M; i++) {
			OPS1(OP_RECV_NEXT, (int32_t)i);
			step(B, sc, it, U_B, (int32_t)i);
			OPS1(OP_SEND_PREV, (int32_t)i);
		}
		return;
	}
	warm = S2 - s - 1 < M ? S2 - s - 1 : M;
	rem = M - warm;
	for (i = 0; i < warm; i++) {
		OPS1(OP_RECV_PREV, (int32_t)f);
		step(B, sc, it, U_F, (int32_t)f);
		OPS1(OP_SEND_NEXT, (int32_t)f);
		f++;
	}
	if (rem > 0)
		OPS1(OP_RECV_PREV, (int32_t)f);
	for (i = 0; i < rem; i++) {
		int32_t mm[NOP] = { 0 };

		step(B, sc, it, U_F, (int32_t)f);
		mm[OP_SEND_NEXT] = (int32_t)f, mm[OP_RECV_NEXT] = (int32_t)b;
		ops(B, sc, it, 1 << OP_SEND_NEXT | 1 << OP_RECV_NEXT, mm);
		f++;
		step(B, sc, it, U_B, (int32_t)b);
		mm[OP_SEND_PREV] = (int32_t)b, mm[OP_RECV_PREV] = (int32_t)f;
		ops(B, sc, it, 1 << OP_SEND_PREV | (i == rem - 1 ? 0 : 1 << OP_RECV_PREV), mm);
		b++;
	}
	for (i = 0; i < warm; i++) {
		OPS1(OP_RECV_NEXT, (int32_t)b);
		step(B, sc, it, U_B, (int32_t)b);
		OPS1(OP_SEND_PREV, (int32_t)b);
		b++;
	}
}

/* The new stage's templates and layers. */
void
stage_cfg(const struct build *B, int64_t tt, int64_t d, int64_t s, struct stagecfg *sc)
{
	const struct job *J = B->J;
	int64_t S = J->S, S2 = J->o->n, k, lo = J->tr[0].lo;

	memset(sc, 0, sizeof(*sc));
	sc->prim = job_rank(J, tt, d, s == 0 ? 0 : s == S2 - 1 ? S - 1 :
	    (s * S / S2 < S ? s * S / S2 : S - 1));
	/* The traced first and last stage's parts go to the new first and
	 * last; one traced stage is both: before the forward layers and after
	 * the backward ones (the embedding) is the first's, the rest the
	 * last's. */
	for (k = 0; k < 4; k++) {
		int u = k / 2, w = k % 2; /* unit B?, after? */
		int first = S > 1 || u == w, last = S > 1 || u != w;

		if (s == 0 && first)
			sc->ends[u][w][sc->nends[u][w]++] = job_rank(J, tt, d, 0);
		if (s == S2 - 1 && last)
			sc->ends[u][w][sc->nends[u][w]++] = job_rank(J, tt, d, S - 1);
	}
	for (k = 0; k <= s; k++) {
		int64_t n = J->L / S2 + (k < J->L % S2);

		sc->lo2 = lo;
		sc->n2 = n;
		lo += n;
	}
	sc->nsrc = J->tr[sc->prim].n;
}

/* The new rank's stream that runs the first layer's first kernel. */
uint32_t
compute_stream(struct build *B, const struct stagecfg *sc)
{
	const struct job *J = B->J;
	const struct piece *p = find(J, sc->prim, 0, U_F, 0, P_LAYER, 0);
	uint32_t i;

	for (i = 0; p != NULL && i < p->n; i++) {
		uint32_t u = J->pt[p->first + i];

		if (J->g->proc[J->g->task[u].proc].kind == KG_STREAM)
			return new_proc(B, J->g->task[u].proc);
	}
	return new_proc(B, J->tr[sc->prim].main);
}
