/*
 * The new job, rank by rank, from the templates' pieces (see pp.h): the
 * tables the copies look templates up in, each new rank's stage
 * (schedule.c) and its prologue, schedule and epilogue in every
 * iteration (the pieces copied by copy.c), its gradients re-timed, the
 * collectives met and re-timed across ranks (meet.c), then the whole
 * written. The top of the files below graph-scale-pp.c: it calls
 * schedule.c, copy.c, meet.c, accum.c and add.c, and none calls it.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pp.h"
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
