/*
 * The new job, rank by rank, from the templates' pieces (see pp.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pp.h"
#include "prefault.h"
#include "util.h"

/* A processor's role in its rank: -1 the main thread, -2.. the others, a stream its id. */
static void
roles(struct build *B)
{
	const struct graph *g = B->J->g;
	size_t i, k;

	B->role = xmalloc((g->nproc + 1) * sizeof(*B->role));
	for (i = 0; i < g->nproc; i++) {
		const struct kg_proc *p = &g->proc[i];

		if (p->kind == KG_STREAM) {
			B->role[i] = p->tid;
			if (p->tid > B->role_max)
				B->role_max = p->tid;
		} else if (p->main) {
			B->role[i] = -1;
		} else {
			int64_t n = 0;

			for (k = 0; k < i; k++)
				n += g->proc[k].rank == p->rank && g->proc[k].kind == KG_THREAD &&
				    !g->proc[k].main;
			B->role[i] = -2 - n;
		}
	}
}

/*
 * The new rank's processor with a role, made on first use like p (a
 * template processor, or one made here).
 */
uint32_t
role_proc(struct build *B, int64_t role, const struct kg_proc *like)
{
	struct kg_proc p = *like;
	struct nproc np;
	size_t i;

	for (i = 0; i < B->nrp; i++)
		if (B->rp[i].role == role)
			return B->rp[i].id;
	p.id = (uint32_t)B->np;
	p.rank = B->rank;
	VEC_PUSH(B->proc, B->np, B->capp, p);
	np.role = role, np.id = p.id;
	VEC_PUSH(B->rp, B->nrp, B->caprp, np);
	grow(&B->last, &B->caplast, B->np, sizeof(*B->last));
	B->last[p.id] = KG_NONE;
	return p.id;
}

/* The new rank's processor for a template processor. */
uint32_t
new_proc(struct build *B, uint32_t tp)
{
	return role_proc(B, B->role[tp], &B->J->g->proc[tp]);
}

void
add_edge(struct build *B, const struct kg_edge *tmpl, uint32_t src, uint32_t dst, uint32_t via,
    uint32_t at)
{
	struct kg_edge e = *tmpl;

	if (src == KG_NONE || dst == KG_NONE || src == dst) {
		B->lost++;
		return;
	}
	e.src = src, e.dst = dst;
	e.on = KG_NONE, e.via = via, e.at = at;
	VEC_PUSH(B->e, B->ne, B->cape, e);
}

/*
 * The edge between two tasks now in a row on a processor: theirs if
 * they were in a row before, else the gap that left the first one, else
 * the one that entered the second one.
 */
static void
program_edge(struct build *B, uint32_t y, uint32_t x)
{
	const struct job *J = B->J;
	const struct graph *g = J->g;
	uint32_t sy = B->tmpl[y], sx = B->tmpl[x], o, n = KG_NONE, k, e;
	struct kg_edge d;

	if (sy == KG_NONE || sx == KG_NONE) {
		/* a send or receive made here: no gap of its own */
		kg_edge_init(&d);
		d.kind = B->proc[B->t[x].proc].kind == KG_THREAD ? KG_E_THREAD : KG_E_STREAM;
		add_edge(B, &d, y, x, KG_NONE, KG_NONE);
		return;
	}
	/* the template edge whose other end is the same call as here: most
	 * often the one from y's template to x's */
	o = J->progout[sy];
	if (o != KG_NONE && (g->edge[o].dst == sx ||
	    g->task[g->edge[o].dst].name == g->task[sx].name)) {
		e = o;
	} else {
		for (k = J->inoff[sx]; k < J->inoff[sx + 1]; k++)
			if (J->progout[g->edge[J->in[k]].src] == J->in[k])
				n = J->in[k];
		if (n != KG_NONE && g->task[g->edge[n].src].name == g->task[sy].name)
			e = n;
		else
			e = o != KG_NONE ? o : n;
	}
	if (e != KG_NONE) {
		d = g->edge[e];
	} else {
		kg_edge_init(&d);
		d.kind = B->proc[B->t[x].proc].kind == KG_THREAD ? KG_E_THREAD : KG_E_STREAM;
	}
	d.on = d.via = d.at = KG_NONE;
	add_edge(B, &d, y, x, KG_NONE, KG_NONE);
}

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

/* New task i's record but for the fields struct ntask holds. */
const struct kg_task *
nt_base(const struct build *B, size_t i)
{
	return B->t[i].made != KG_NONE ? &B->made[B->t[i].made] : &B->J->g->task[B->tmpl[i]];
}

/*
 * Add a new task t (its proc the new one) copied from template task u
 * (KG_NONE: made here), held whole unless `copy` (t is u's record with
 * only struct ntask's fields changed): program order after the last
 * task on its processor, and the waits that were waiting for the next
 * task there.
 */
static uint32_t
add(struct build *B, struct kg_task *t, uint32_t u, int copy)
{
	uint32_t nt = (uint32_t)B->nt, np = t->proc;
	size_t q;
	struct ntask x = { t->proc, t->pgr, KG_NONE, t->stage, t->mb, t->layer, t->gsize, t->dur,
	    t->bytes };

	size_t cap0 = B->capt, captmpl0 = B->captmpl, capsnap0 = B->capsnap;
	struct prefault *pf = B->J->g->pf;

	t->id = nt;
	if (!copy) {
		x.made = (uint32_t)B->nmade;
		VEC_PUSH(B->made, B->nmade, B->capmade, *t);
	}
	VEC_PUSH(B->t, B->nt, B->capt, x);
	grow(&B->tmpl, &B->captmpl, B->nt, sizeof(*B->tmpl));
	grow(&B->snap, &B->capsnap, B->nt, sizeof(*B->snap));
	/* the new job's pages faulted in ahead (the graph's slots are 0, 1);
	 * its edges grow with its tasks, by many pushes */
	pf_vec(pf, 2, B->t, B->nt, B->capt, cap0, sizeof(*B->t));
	pf_vec(pf, 3, B->tmpl, B->nt, B->captmpl, captmpl0, sizeof(*B->tmpl));
	pf_vec(pf, 4, B->snap, B->nt, B->capsnap, capsnap0, sizeof(*B->snap));
	if (B->nt % PF_EVERY == 0)
		pf_want(pf, 5, B->e, (B->ne + PF_AHEAD < B->cape ? B->ne + PF_AHEAD : B->cape) *
		    sizeof(*B->e));
	B->tmpl[nt] = u;
	B->snap[nt] = KG_NONE;
	if (u != KG_NONE) {
		B->inst[u] = nt;
		B->instrank[u] = B->rank;
		if (B->viaon[u] != KG_NONE)
			B->snap[nt] = B->last[new_proc(B, B->viaon[u])];
	}
	if (B->last[np] != KG_NONE)
		program_edge(B, B->last[np], nt);
	B->last[np] = nt;
	for (q = 0; q < B->npd;) {
		if (B->pd[q].proc == np) {
			struct kg_edge e = B->pd[q].e;

			e.dst = nt;
			if (e.src != e.dst)
				VEC_PUSH(B->e, B->ne, B->cape, e);
			B->pd[q] = B->pd[--B->npd];
		} else {
			q++;
		}
	}
	return nt;
}

uint32_t
add_task(struct build *B, struct kg_task *t, uint32_t u)
{
	return add(B, t, u, 0);
}

uint32_t
add_copy(struct build *B, struct kg_task *t, uint32_t u)
{
	return add(B, t, u, 1);
}

/* A task record's lines asked for ahead of its use. */
static void
fetch_task(const struct kg_task *t)
{
	const char *p = (const char *)t;
	size_t o;

	for (o = 0; o < sizeof(*t); o += 64)
		__builtin_prefetch(p + o);
}

/* graph_write's new tasks, made whole one by one: their templates come
 * from all over the job, so the ones a few tasks on are fetched ahead */
static void
task_at(void *arg, size_t i, struct kg_task *t)
{
	const struct build *B = arg;
	const struct ntask *x = &B->t[i];

	if (i + 8 < B->nt)
		fetch_task(nt_base(B, i + 8));
	*t = *nt_base(B, i);
	t->id = (uint32_t)i;
	t->proc = x->proc, t->pgr = x->pgr, t->stage = x->stage, t->mb = x->mb;
	t->layer = x->layer, t->gsize = x->gsize, t->dur = x->dur, t->bytes = x->bytes;
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

int
job_build(struct job *J, struct kg_writer *w, const char *producer)
{
	const struct graph *g = J->g;
	struct build B;
	struct kg_header h;
	int64_t tt, d, s, S2 = J->o->n, W2 = J->tp * J->dp * S2, *ranks, *t0, *clk;
	size_t i, ni = g->h.niters > 0 ? g->h.niters : 1, bad;
	struct graph_out go;
	int rc = 1;

	memset(&B, 0, sizeof(B));
	B.J = J;
	roles(&B);
	accum_init(&B);
	B.viaon = xmalloc((g->ntask + 1) * sizeof(*B.viaon));
	B.inst = xmalloc((g->ntask + 1) * sizeof(*B.inst));
	B.instrank = xmalloc((g->ntask + 1) * sizeof(*B.instrank));
	for (i = 0; i < g->ntask; i++)
		B.viaon[i] = B.inst[i] = KG_NONE, B.instrank[i] = -1;
	B.atoff = xcalloc(g->ntask + 2, sizeof(*B.atoff));
	B.atl = xmalloc((g->nedge + 1) * sizeof(*B.atl));
	for (i = 0; i < g->nedge; i++) {
		if (g->edge[i].via != KG_NONE && g->edge[i].on != KG_NONE)
			B.viaon[g->edge[i].via] = g->edge[i].on;
		if (g->edge[i].at != KG_NONE)
			B.atoff[g->edge[i].at + 1]++;
	}
	for (i = 0; i < g->ntask; i++)
		B.atoff[i + 1] += B.atoff[i];
	for (i = 0; i < g->nedge; i++)
		if (g->edge[i].at != KG_NONE)
			B.atl[B.atoff[g->edge[i].at]++] = (uint32_t)i;
	for (i = g->ntask; i > 0; i--)
		B.atoff[i] = B.atoff[i - 1];
	B.atoff[0] = 0;
	B.ops = xcalloc((size_t)J->world, sizeof(*B.ops));
	B.nops = xcalloc((size_t)J->world, sizeof(*B.nops));
	for (i = 0; i < (size_t)J->world; i++) {
		B.ops[i] = xmalloc(NOP * (ni + 1) * OPMAX * sizeof(**B.ops));
		B.nops[i] = xcalloc(NOP * (ni + 1), sizeof(**B.nops));
	}
	for (i = 0; i < J->npc; i++) {
		const struct piece *p = &J->pc[i];
		size_t at = p->pl.op * (ni + 1) + (size_t)p->pl.it;

		if (p->pl.unit == U_OP && p->pl.part == P_WHOLE && B.nops[p->rank][at] < OPMAX)
			B.ops[p->rank][at * OPMAX + B.nops[p->rank][at]++] = (uint32_t)i;
	}
	ranks = xmalloc((size_t)W2 * sizeof(*ranks));
	t0 = xcalloc((size_t)W2, sizeof(*t0));
	clk = xcalloc((size_t)W2, sizeof(*clk));
	for (s = 0; s < S2; s++)
		for (d = 0; d < J->dp; d++)
			for (tt = 0; tt < J->tp; tt++) {
				struct stagecfg sc;
				size_t from = B.nt;
				int32_t it;

				B.rank = tt + J->tp * (d + J->dp * s);
				B.stage = s;
				B.nrp = 0;
				B.npd = 0;
				stage_cfg(&B, tt, d, s, &sc);
				B.compute = compute_stream(&B, &sc);
				ranks[B.rank] = B.rank;
				if (g->h.t0 != NULL && (size_t)sc.prim < g->h.nranks)
					t0[B.rank] = g->h.t0[sc.prim];
				for (it = 0; it < (int32_t)ni; it++) {
					struct ctx c;

					memset(B.opk, 0, sizeof(B.opk));
					memset(&c, 0, sizeof(c));
					c.it = it, c.mb = -1, c.j = -1, c.jl = -1, c.unit = U_PRO;
					emit(&B, find(J, sc.prim, it, U_PRO, -1, P_WHOLE, -1), &c);
					schedule(&B, &sc, it, J->o->mb > 0 ? J->o->mb : J->tr[sc.prim].nmb);
					c.unit = U_EPI;
					emit(&B, find(J, sc.prim, it, U_EPI, -1, P_WHOLE, -1), &c);
				}
				B.lost += B.npd;
				if (B.failed || scale_gradients(&B, from, &sc) != 0)
					goto out;
			}
	if (relink(&B) != 0)
		goto out;
	bad = meetings(&B);
	if (bad > 0)
		warnmsg("%s: section %d: %zu collectives met fewer or more ranks than their "
		    "groups hold", J->name, J->index, bad);
	if (B.lost > 0)
		warnmsg("%s: section %d: %zu edges found nothing to join in the new job",
		    J->name, J->index, B.lost);
	if (B.acc_untimed > 0)
		warnmsg("%s: section %d: %zu gradient accumulations of later micro-batches left "
		    "out: the job has no add kernel of 20 us or more to time them on", J->name,
		    J->index, B.acc_untimed);
	h = g->h;
	h.ranks = ranks, h.t0 = t0, h.clk = clk;
	h.nranks = (size_t)W2;
	h.world = W2;
	memset(&go, 0, sizeof(go));
	go.h = &h;
	go.xstr = (const char *const *)B.xstr, go.nxstr = B.nxstr;
	go.proc = B.proc, go.nproc = B.np;
	go.task_at = task_at, go.arg = &B, go.ntask = B.nt;
	go.edge = B.e, go.nedge = B.ne;
	if (graph_write(w, g, producer, &go) < 0)
		goto out; /* a write error: the caller names the output */
	rc = 0;
out:
	free(ranks), free(t0), free(clk);
	for (i = 0; i < (size_t)J->world; i++)
		free(B.ops[i]), free(B.nops[i]);
	free(B.ops), free(B.nops);
	for (i = 0; i < B.nxstr; i++)
		free(B.xstr[i]);
	free(B.xstr), free(B.role), free(B.viaon), free(B.inst), free(B.instrank), free(B.t);
	free(B.made);
	free(B.atoff), free(B.atl);
	free(B.tmpl);
	free(B.snap), free(B.e), free(B.proc), free(B.key), free(B.rp), free(B.last), free(B.pd);
	return rc;
}
