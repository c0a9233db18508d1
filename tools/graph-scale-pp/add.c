/*
 * The new job's records as they are added, rank by rank (see pp.h):
 * the new rank's processors (by role), its tasks (held as what they
 * change of their template, or whole when made here), each with the
 * program-order edge from the last task on its processor and the waits
 * that were waiting for the next task there, its edges, and the strings
 * the tool makes. Everything above it (build, schedule, copy, meet,
 * accum) adds through these; this file calls none of them.
 */
#include <string.h>

#include "pp.h"
#include "prefault.h"
#include "rtapi.h"
#include "util.h"

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

uint32_t
intern_text(struct build *B, const char *s)
{
	size_t i;

	for (i = 0; i < B->nxstr; i++)
		if (strcmp(B->xstr[i], s) == 0)
			return B->J->g->nstr + (uint32_t)i;
	VEC_PUSH(B->xstr, B->nxstr, B->capxstr, xstrndup(s, strlen(s)));
	return B->J->g->nstr + (uint32_t)(B->nxstr - 1);
}

/*
 * The plain runtime call of a role (rtapi.h) in the runtime the job's
 * trace used, for a call the tool makes: hipLaunchKernel where the job
 * names a HIP call, else cudaLaunchKernel.
 */
uint32_t
intern_call(struct build *B, int role)
{
	const struct graph *g = B->J->g;
	int rt = RTAPI_CUDA;
	size_t i;

	for (i = 0; i < g->nstr; i++)
		if (rtapi_runtime(kg_str(B->J->r, (uint32_t)i)) == RTAPI_HIP) {
			rt = RTAPI_HIP;
			break;
		}
	return intern_text(B, rtapi_call(rt, role));
}
