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

/* What a traced task may change in its copies (gradients' flags). */
enum {
	F_FIX = 1,  /* an optimizer task or a backward collective */
	F_HOST = 2, /* the optimizer's host work on a thread (scale_step_host) */
};

/*
 * A layer's parameters on stage s: what the launches of its first
 * forward run on a thread count (an operator launching two kernels in a
 * row counted once). Its parameter tensors in *tensors.
 */
static int64_t
layer_params(const struct ctx *c, const struct stage *s, int64_t *tensors)
{
	const struct graph *g = c->g;
	size_t i;

	*tensors = 0;
	for (i = 0; i < c->nrun; i++) {
		const struct run *x = &c->rn[i];
		struct param_count cnt;
		uint32_t k, q;

		if (x->layer != s->lo || g->task[x->first].phase != KG_PH_FWD ||
		    g->proc[g->task[x->first].proc].kind != KG_THREAD ||
		    task_rank_index(c, x->first) != s->rank0)
			continue;
		param_count_init(&cnt);
		for (k = 0, q = c->pidx[x->first]; k < x->len; k++, q++)
			param_count_add(&cnt, c->r, &g->task[c->porder[q]]);
		*tensors = cnt.tensors;
		return cnt.sum;
	}
	return 0;
}

/*
 * The parameters of each stage outside its layers (embeddings, a final
 * norm, the LM head), into O and their tensors into OT, by stage: what
 * the forward launches of its rank0 outside every layer count, in the
 * first micro-batch of the first iteration. An operand as large as an
 * embedding table already counted is that table used again (an LM head
 * tied to the embedding, as in GPT-2 and Megatron's default) and is not
 * counted twice. Every stage in the same two passes over the tasks.
 */
static void
other_params(const struct ctx *c, int64_t *O, int64_t *OT)
{
	const struct graph *g = c->g;
	uint32_t *pst = xmalloc((g->nproc + 1) * sizeof(*pst)); /* by processor: the stage
	                                                          whose rank0 it is on */
	int64_t *it = xmalloc((c->nst + 1) * sizeof(*it)), *mb = xmalloc((c->nst + 1) * sizeof(*mb));
	uint64_t *at = NULL; /* the tasks counted: stage, place in porder */
	size_t i, k, n = 0, cap = 0;

	for (i = 0; i < g->nproc; i++) {
		uint32_t r = c->prk[i];

		pst[i] = c->st[c->rstage[r]].rank0 == r ? c->rstage[r] : UINT32_MAX;
	}
	for (k = 0; k < c->nst; k++)
		it[k] = mb[k] = INT64_MAX;
	for (i = 0; i < g->ntask; i++) {
		const struct kg_task *t = &g->task[i];

		if (t->phase == KG_PH_FWD && t->iter >= 0 && pst[t->proc] != UINT32_MAX) {
			k = pst[t->proc];
			if (t->iter < it[k] || (t->iter == it[k] && t->mb < mb[k]))
				it[k] = t->iter, mb[k] = t->mb;
		}
	}
	/* counted in the order of porder (processor by processor), as an
	 * operand seen twice is counted once: the few tasks found in one
	 * pass in task order, then put in that order */
	for (i = 0; i < g->ntask; i++) {
		const struct kg_task *t = &g->task[i];

		if (t->phase == KG_PH_FWD && t->layer < 0 && pst[t->proc] != UINT32_MAX &&
		    g->proc[t->proc].kind == KG_THREAD && t->iter == it[pst[t->proc]] &&
		    t->mb == mb[pst[t->proc]])
			VEC_PUSH(at, n, cap, (uint64_t)pst[t->proc] << 32 | c->pidx[i]);
	}
	if (n > 1)
		qsort(at, n, sizeof(*at), cmp_u64);
	for (k = 0, i = 0; k < c->nst; k++) {
		struct param_count cnt;

		param_count_init(&cnt);
		cnt.tied = 1;
		for (; i < n && at[i] >> 32 == k; i++)
			param_count_add(&cnt, c->r, &g->task[c->porder[(uint32_t)at[i]]]);
		O[k] = cnt.sum;
		OT[k] = cnt.tensors;
	}
	free(at);
	free(it), free(mb);
	free(pst);
}

/*
 * The optimizer step's host work on each thread: from the optimizer
 * phase's first CPU op or runtime call of an iteration up to its first
 * synchronizing call. Where it shows loops over the parameter tensors
 * (a run of one op, called in a row at least once a tensor: PyTorch's
 * foreach optimizers update each tensor's step count, read it back,
 * group the tensors; zero_grad clears each), all of it is per-tensor
 * work: its durations and the gaps into its tasks take the stage's ratio
 * of parameter tensors. A fused step (one launch for all tensors) shows
 * no such loop and is left as it is; so is what follows the
 * synchronization (the host waiting, the profiler's step).
 */
static void
scale_step_host(struct ctx *c, const uint8_t *fl)
{
	const struct graph *g = c->g;
	uint32_t *win = xcalloc(c->nt + 1, sizeof(*win)); /* window + 1, 0 none */
	uint32_t *last = xmalloc((g->nproc + 1) * sizeof(*last));
	size_t *cur = xmalloc((g->nproc + 1) * sizeof(*cur));
	int64_t *iter = xmalloc((g->nproc + 1) * sizeof(*iter));
	int64_t *run = NULL, *longest = NULL; /* by window: the run so far, the longest */
	size_t nwin = 0, caprun = 0, caplong = 0, i;

	for (i = 0; i < g->nproc; i++)
		iter[i] = INT64_MIN, cur[i] = SIZE_MAX, last[i] = KG_NONE;
	for (i = 0; i < c->nt; i++) {
		const struct kg_task *t;
		size_t w;

		if (!(fl[c->t[i].src] & F_HOST))
			continue;
		t = &g->task[c->t[i].src];
		if (t->iter != iter[t->proc]) {
			iter[t->proc] = t->iter;
			cur[t->proc] = nwin++;
			grow(&run, &caprun, nwin, sizeof(*run));
			grow(&longest, &caplong, nwin, sizeof(*longest));
			run[nwin - 1] = longest[nwin - 1] = 0;
			last[t->proc] = KG_NONE;
		}
		w = cur[t->proc];
		if (w == SIZE_MAX)
			continue; /* past the synchronization */
		if (t->kind == KG_RT && strstr(kg_str(c->r, t->name), "Synchronize") != NULL) {
			cur[t->proc] = SIZE_MAX;
			continue;
		}
		win[i] = (uint32_t)w + 1;
		run[w] = t->kind == KG_CPU && last[t->proc] != KG_NONE &&
		    g->task[c->t[last[t->proc]].src].name == t->name ? run[w] + 1 : 1;
		last[t->proc] = (uint32_t)i;
		if (run[w] > longest[w])
			longest[w] = run[w];
	}
	for (i = 0; i < c->nt; i++) {
		const struct stage *s;

		if (win[i] == 0)
			continue;
		s = &c->st[c->rstage[task_rank_index(c, c->t[i].src)]];
		if (s->tratio == 1 || s->tensors <= 1 || longest[win[i] - 1] < s->tensors) {
			win[i] = 0;
			continue;
		}
		c->t[i].dur = llround((double)c->t[i].dur * s->tratio);
	}
	for (i = 0; i < c->ne; i++) {
		struct kg_edge *e = &c->e[i];

		if (e->kind == KG_E_THREAD && e->dst < c->nt && win[e->dst] != 0) {
			const struct stage *s =
			    &c->st[c->rstage[task_rank_index(c, c->t[e->dst].src)]];

			e->delay = llround((double)e->delay * s->tratio);
		}
	}
	free(win), free(last), free(cur), free(iter), free(run), free(longest);
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
	uint8_t *fl = xmalloc(g->ntask + 1); /* by task: what it may change (F_*) */
	int64_t *O = xmalloc((c->nst + 1) * sizeof(*O)), *OT = xmalloc((c->nst + 1) * sizeof(*OT));
	struct pgroups pg;
	struct comm_model m;
	uint8_t seen[KG_NCOLL * COMM_NLINK] = { 0 };
	char msg[160];
	size_t i, n = 0, k;
	int rc = 1;

	pgroups_init(&pg, c->o->gpn);
	for (i = 0; i < g->ntask; i++) {
		const struct kg_task *t = &g->task[i];

		/* the new tasks are looked up by these flags of their
		 * source, not by its record: a fetch from anywhere in the job */
		fl[i] = (t->phase == KG_PH_OPT || (t->phase == KG_PH_BWD && t->kind == KG_COLL) ?
		    F_FIX : 0) | (g->proc[t->proc].kind == KG_THREAD && t->phase == KG_PH_OPT &&
		    (t->kind == KG_CPU || t->kind == KG_RT) ? F_HOST : 0);
		if (t->kind == KG_COLL) {
			ct[n] = t;
			grp[n++] = t->pgr == KG_NONE ? UINT32_MAX :
			    pgroups_of(&pg, t->pgr, kg_str(c->r, t->pgr));
		}
	}
	pgroups_classify(&pg, ct, grp, n);
	other_params(c, O, OT);
	for (k = 0; k < c->nst; k++) {
		struct stage *s = &c->st[k];
		int64_t P, PT;
		double B = 0, H;
		int e = 0;

		s->ratio = s->tratio = 1;
		for (i = 0; i < n; i++) {
			const struct kg_task *t = ct[i];

			if (grp[i] == UINT32_MAX || !pg.g[grp[i]].dp || pgroups_p2p(t->coll) ||
			    (t->phase != KG_PH_BWD && t->phase != KG_PH_OPT) ||
			    task_rank_index(c, t->id) != s->rank0)
				continue;
			B += (double)t->bytes;
			if (e == 0)
				e = elem_size(t->dtype == KG_NONE ? NULL : kg_str(c->r, t->dtype));
		}
		P = layer_params(c, s, &PT);
		s->tensors = OT[k] + s->n * PT;
		s->tratio = PT > 0 ? (double)(OT[k] + s->nn * PT) / (double)s->tensors : 1;
		if (B == 0) {
			/* no data-parallel gradients: the optimizer's work
			 * follows the stage's parameters, counted */
			if (P > 0) {
				s->ratio = ((double)O[k] + (double)s->nn * (double)P) /
				    ((double)O[k] + (double)s->n * (double)P);
				continue;
			}
			s->ratio = (double)s->nn / (double)s->n;
			if (k == 0 && s->nn != s->n)
				warnmsg("%s: section %d: no data-parallel group and no operator "
				    "with weight shapes: the optimizer is scaled as if the layers "
				    "held all the parameters", c->name, c->index);
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
		struct ntask *x = &c->t[i];
		const struct kg_task *t;
		const struct stage *s;
		const struct pgroup *gp;
		struct tfix f;
		int fixed = 0;

		/* only the optimizer's tasks and the backward's collectives change */
		if (!(fl[x->src] & F_FIX))
			continue;
		t = &g->task[x->src];
		f.i = i, f.bytes = t->bytes, f.mnet = t->mnet, f.mexc = t->mexc;
		s = &c->st[c->rstage[c->prk[t->proc]]];
		gp = cg[x->src] == UINT32_MAX ? NULL : &pg.g[cg[x->src]];
		if (s->ratio == 1)
			continue;
		if (t->phase == KG_PH_OPT && t->mpeak >= 0) {
			/* the optimizer's allocator events (its temporaries,
			 * the gradients freed) follow the parameters:
			 * graphstat's memory estimate */
			f.mnet = llround((double)t->mnet * s->ratio);
			if (t->mexc >= 0)
				f.mexc = llround((double)t->mexc * s->ratio);
			fixed = 1;
		}
		if (t->kind == KG_KERN && t->phase == KG_PH_OPT) {
			x->dur = llround((double)x->dur * s->ratio);
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
			x->dur = llround((double)x->dur * (double)tnew / (double)told);
			f.bytes = b;
			fixed = 1;
		}
		if (fixed)
			VEC_PUSH(c->fix, c->nfix, c->capfix, f);
	}
	free(cg);
	scale_step_host(c, fl);
	rc = 0;
out:
	pgroups_release(&pg);
	free(ct);
	free(grp);
	free(fl);
	free(O), free(OT);
	return rc;
}
