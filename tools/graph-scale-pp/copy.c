/*
 * One template piece copied into the rank being written (see pp.h): its
 * tasks on the new rank's processors, in the place the schedule gives
 * them (struct ctx), its own edges, the waits into it from work written
 * before and the waits its calls make. A gradient a later micro-batch
 * adds is accum.c's to make; a collective's meeting is keyed by meet.c.
 * Called by schedule.c and build.c; it adds through add.c.
 */
#include "pp.h"
#include "util.h"

/* Template task u's copy in the rank being written, KG_NONE if none yet. */
static uint32_t
copy_here(const struct build *B, uint32_t u)
{
	if (u == KG_NONE || B->instrank[u] != B->rank)
		return KG_NONE;
	return B->inst[u];
}

/*
 * A wait (event or sync edge e of the template) made by new call at
 * (KG_NONE: none), its source: what its binding point finds now when it
 * has one written in this rank, else the copy of its source written in
 * this rank; 0 when neither is (the edge is lost).
 */
static int
wait_src(struct build *B, const struct kg_edge *e, uint32_t at, struct kg_edge *d)
{
	uint32_t via = copy_here(B, e->via), src;

	if (e->on != KG_NONE && via != KG_NONE && B->snap[via] != KG_NONE) {
		src = B->snap[via];
	} else {
		src = copy_here(B, e->src);
		via = KG_NONE;
	}
	if (src == KG_NONE) {
		const struct place *pl = &B->J->pl[e->src];

		/* a wait for the embedding's or the head's work, in a stage
		 * that has neither, goes with it */
		if (!((pl->unit == U_F || pl->unit == U_B) &&
		    (pl->part == P_PRE || pl->part == P_POST)))
			B->lost++;
		return 0;
	}
	*d = *e;
	d->src = src, d->dst = KG_NONE, d->at = at;
	d->on = via != KG_NONE ? new_proc(B, e->on) : KG_NONE;
	d->via = via;
	return 1;
}

static void
wait_edge(struct build *B, const struct kg_edge *e, uint32_t dst, uint32_t at)
{
	struct kg_edge d;

	if (!wait_src(B, e, at, &d))
		return;
	d.dst = dst;
	if (d.src != d.dst)
		VEC_PUSH(B->e, B->ne, B->cape, d);
}

/* Write one piece's copy; its own edges, and those it anchors. */
void
emit(struct build *B, const struct piece *pc, struct ctx *c)
{
	const struct job *J = B->J;
	const struct graph *g = J->g;
	uint32_t i, k;

	if (pc == NULL)
		return;
	/* the piece's template tasks are anywhere in the job: fetched ahead */
	for (i = 0; i < pc->n && i < 4; i++)
		fetch_task(&g->task[J->pt[pc->first + i]]);
	for (i = 0; i < pc->n; i++) {
		uint32_t u = J->pt[pc->first + i], nt;
		struct kg_task t;

		if (i + 4 < pc->n)
			fetch_task(&g->task[J->pt[pc->first + i + 4]]);
		t = g->task[u];

		t.proc = new_proc(B, g->task[u].proc);
		t.stage = B->stage;
		if (c->unit == U_F || c->unit == U_B)
			t.mb = c->mb;
		t.layer = c->part == P_LAYER ? c->j : -1;
		/* a micro-batch after the first, copied from the first's
		 * backward: it adds the gradients the first handed over */
		if (c->unit == U_B && pc->pl.mb == 0 && c->mb > 0 && accum_steal(B, &g->task[u])) {
			if (B->acc_bw > 0) {
				nt = accum_make(B, &t, u);
			} else {
				B->acc_untimed++;
				nt = add_copy(B, &t, u);
			}
		} else {
			nt = add_copy(B, &t, u);
		}
		if (g->proc[g->task[u].proc].kind == KG_THREAD && !g->proc[g->task[u].proc].main &&
		    c->unit == U_B) {
			if (B->bfirst == KG_NONE)
				B->bfirst = nt;
			B->blast = nt;
		}
		if (t.kind == KG_COLL) {
			int64_t r = B->role[g->task[u].proc];
			int slot = (int)((uint64_t)r % 64);

			coll_key(B, nt, u, c, c->k[slot]++);
		}
	}
	for (i = 0; i < pc->n; i++) {
		uint32_t u = J->pt[pc->first + i];

		/* edges within the piece */
		for (k = J->outoff[u]; k < J->outoff[u + 1]; k++) {
			const struct kg_edge *e = &g->edge[J->out[k]];
			struct kg_edge d;

			if (e->kind == KG_E_RANK || e->kind == KG_E_HANDOFF || e->at != KG_NONE ||
			    J->progout[u] == J->out[k] || J->piece[e->dst] != J->piece[u])
				continue;
			d = *e;
			d.via = e->via != KG_NONE && J->piece[e->via] == J->piece[u] ?
			    B->inst[e->via] : KG_NONE;
			d.on = d.via != KG_NONE && e->on != KG_NONE ? new_proc(B, e->on) : KG_NONE;
			if (d.on == KG_NONE)
				d.via = KG_NONE; /* a fixed edge now */
			d.src = B->inst[u], d.dst = B->inst[e->dst];
			if (d.src != d.dst)
				VEC_PUSH(B->e, B->ne, B->cape, d);
		}
		/* waits without a waiting call, into this piece from work
		 * written before: what the binding point finds now, or the
		 * source's copy in this rank */
		for (k = J->inoff[u]; k < J->inoff[u + 1]; k++) {
			const struct kg_edge *e = &g->edge[J->in[k]];

			if (e->at != KG_NONE || J->piece[e->src] == J->piece[u] ||
			    e->kind == KG_E_RANK || e->kind == KG_E_HANDOFF ||
			    e->kind == KG_E_THREAD || e->kind == KG_E_STREAM)
				continue;
			if (e->kind != KG_E_EVENT && e->kind != KG_E_SYNC) {
				B->lost++;
				continue;
			}
			wait_edge(B, e, B->inst[u], KG_NONE);
		}
		/* waits this call makes: the event's source as written in
		 * this rank, the destination the next task on its stream */
		for (k = B->atoff[u]; k < B->atoff[u + 1]; k++) {
			const struct kg_edge *e = &g->edge[B->atl[k]];
			uint32_t dst = J->piece[e->dst] == J->piece[u] ? B->inst[e->dst] : KG_NONE;

			if (dst != KG_NONE) {
				wait_edge(B, e, dst, B->inst[u]);
			} else {
				struct pend p;

				p.proc = new_proc(B, g->task[e->dst].proc);
				if (wait_src(B, e, B->inst[u], &p.e))
					VEC_PUSH(B->pd, B->npd, B->cappd, p);
			}
		}
	}
}
