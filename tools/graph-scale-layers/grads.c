/*
 * The gradients and the optimizer, re-timed for the new parameter count
 * (see sl.h and tools/graph-scale-layers.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "comm.h"
#include "params.h"
#include "pgroup.h"
#include "sl.h"
#include "util.h"

/*
 * A layer's parameters on stage s: what the launches of its first
 * forward run on a thread count (an operator launching two kernels in a
 * row counted once).
 */
static int64_t
layer_params(const struct ctx *c, const struct stage *s)
{
	const struct graph *g = c->g;
	size_t i;

	for (i = 0; i < c->nrun; i++) {
		const struct run *x = &c->rn[i];
		struct param_count cnt;
		uint32_t k, q;

		if (x->layer != s->lo || g->task[x->first].phase != KG_PH_FWD ||
		    g->proc[g->task[x->first].proc].kind != KG_THREAD ||
		    rank_index(c, graph_rank(g, x->first)) != s->rank0)
			continue;
		param_count_init(&cnt);
		for (k = 0, q = c->pidx[x->first]; k < x->len; k++, q++)
			param_count_add(&cnt, c->r, &g->task[c->porder[q]]);
		return cnt.sum;
	}
	return 0;
}

/*
 * The gradients: each stage's ratio of gradient bytes after to before,
 * its gradient collectives moving and taking more (or less), its
 * optimizer kernels too. 0, or 1 after a message.
 */
int
gradients(struct ctx *c)
{
	const struct graph *g = c->g;
	const struct kg_task **ct = xmalloc((g->ntask + 1) * sizeof(*ct));
	uint32_t *grp = xmalloc((g->ntask + 1) * sizeof(*grp)), *cg;
	struct pgroups pg;
	struct comm_model m;
	uint8_t seen[KG_NCOLL * COMM_NLINK] = { 0 };
	char msg[160];
	size_t i, n = 0, k;
	int rc = 1;

	pgroups_init(&pg, c->o->gpn);
	for (i = 0; i < g->ntask; i++)
		if (g->task[i].kind == KG_COLL) {
			ct[n] = &g->task[i];
			grp[n++] = g->task[i].pgr == KG_NONE ? UINT32_MAX :
			    pgroups_of(&pg, g->task[i].pgr, kg_str(c->r, g->task[i].pgr));
		}
	pgroups_classify(&pg, ct, grp, n);
	for (k = 0; k < c->nst; k++) {
		struct stage *s = &c->st[k];
		int64_t P;
		double B = 0, H;
		int e = 0;

		s->ratio = 1;
		for (i = 0; i < n; i++) {
			const struct kg_task *t = ct[i];

			if (grp[i] == UINT32_MAX || !pg.g[grp[i]].dp || pgroups_p2p(t->coll) ||
			    (t->phase != KG_PH_BWD && t->phase != KG_PH_OPT) ||
			    rank_index(c, graph_rank(g, t->id)) != s->rank0)
				continue;
			B += (double)t->bytes;
			if (e == 0)
				e = elem_size(t->dtype == KG_NONE ? NULL : kg_str(c->r, t->dtype));
		}
		P = B > 0 ? layer_params(c, s) : 0;
		if (B == 0) {
			/* no data-parallel gradients: the optimizer's work
			 * follows the layers alone */
			s->ratio = (double)s->nn / (double)s->n;
			if (pg.dp < 0 && k == 0 && s->nn != s->n)
				warnmsg("%s: section %d: no data-parallel group: the optimizer is "
				    "scaled as if the layers held all the parameters", c->name,
				    c->index);
			continue;
		}
		if (P <= 0) {
			errmsg("%s: section %d: layer %lld launches no operator with weight shapes "
			    "(aten::mm, addmm, linear with Input Dims): its parameters cannot be "
			    "counted", c->name, c->index, (long long)s->lo);
			goto out;
		}
		if (e == 0) {
			errmsg("%s: section %d: the gradient collectives have no element type: "
			    "their bytes cannot be matched to parameters", c->name, c->index);
			goto out;
		}
		B /= (double)(g->h.niters > 0 ? g->h.niters : 1); /* an iteration's */
		H = B - (double)s->n * (double)P * e;
		if (H < 0) {
			warnmsg("%s: section %d: stage of layers %lld-%lld: its layers' weights "
			    "(%lld parameters each) outweigh its gradients (%.0f bytes): all of "
			    "them taken as the layers'", c->name, c->index, (long long)s->lo,
			    (long long)(s->lo + s->n - 1), (long long)P, B);
			H = 0;
		}
		s->ratio = (H + (double)s->nn * (double)P * e) / (H + (double)s->n * (double)P * e);
	}
	pgroups_fit(&pg, ct, grp, n, NULL, &m);
	cg = xmalloc((g->ntask + 1) * sizeof(*cg));
	for (i = 0; i < g->ntask; i++)
		cg[i] = UINT32_MAX;
	for (i = 0; i < n; i++)
		cg[ct[i]->id] = grp[i];
	for (i = 0; i < c->nt; i++) {
		struct kg_task *t = &c->t[i];
		const struct stage *s = &c->st[c->rstage[rank_index(c, graph_rank(g, c->src[i]))]];
		const struct pgroup *gp = cg[c->src[i]] == UINT32_MAX ? NULL : &pg.g[cg[c->src[i]]];

		if (s->ratio == 1)
			continue;
		if (t->kind == KG_KERN && t->phase == KG_PH_OPT) {
			t->dur = llround((double)t->dur * s->ratio);
		} else if (gp != NULL && gp->dp && !pgroups_p2p(t->coll) &&
		    (t->phase == KG_PH_BWD || t->phase == KG_PH_OPT) && t->bytes > 0) {
			uint64_t b = (uint64_t)llround((double)t->bytes * s->ratio);
			int a1, a2;
			int64_t told = comm_time(&m, t->coll, gp->size, t->bytes, gp->link, &a1);
			int64_t tnew = comm_time(&m, t->coll, gp->size, b, gp->link, &a2);

			if (told <= 0 || tnew < 0) {
				errmsg("%s: section %d: no %s in the job to fit the communication "
				    "model on", c->name, c->index, kg_coll_name[t->coll]);
				free(cg);
				goto out;
			}
			if (pgroups_borrowed(&m, t->coll, gp->link, seen, msg, sizeof(msg)))
				warnmsg("%s: section %d: %s", c->name, c->index, msg);
			t->dur = llround((double)t->dur * (double)tnew / (double)told);
			t->bytes = b;
		}
	}
	free(cg);
	rc = 0;
out:
	pgroups_release(&pg);
	free(ct);
	free(grp);
	return rc;
}
