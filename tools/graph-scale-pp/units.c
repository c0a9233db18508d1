/*
 * The traced job as templates: its layout, each task's place in its
 * rank's program, the pieces (see pp.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "params.h"
#include "pp.h"
#include "prefault.h"
#include "util.h"

static int
p2p(int c)
{
	return c == KG_COLL_SEND || c == KG_COLL_RECV;
}

int64_t
job_rank(const struct job *J, int64_t t, int64_t d, int64_t s)
{
	return t + J->tp * (d + J->dp * s);
}

int64_t
job_task_rank(const struct job *J, uint32_t u)
{
	if (J->trk != NULL)
		return J->trk[u];
	return J->single ? 0 : graph_rank(J->g, u);
}

int64_t
job_proc_rank(const struct job *J, uint32_t p)
{
	return J->single ? 0 : J->g->proc[p].rank;
}

static int64_t
stage_of(const struct job *J, int64_t rank)
{
	return rank / (J->tp * J->dp);
}

static int
iter_index(const struct job *J, int64_t it)
{
	size_t i;

	for (i = 0; i < J->g->h.niters; i++)
		if (J->g->h.iters[i] == it)
			return (int)i;
	return it < 0 || J->g->h.niters == 0 ? 0 : (int)J->g->h.niters - 1;
}

/* Edges by source and by destination, and the program order. */
static void
index_edges(struct job *J)
{
	const struct graph *g = J->g;
	size_t n = g->ntask, i;
	uint32_t *next = xmalloc((n + 1) * sizeof(*next));
	uint32_t *last = xmalloc((g->nproc + 1) * sizeof(*last));

	for (i = 0; i < g->nedge; i++) {
		J->outoff[g->edge[i].src + 1]++;
		J->inoff[g->edge[i].dst + 1]++;
	}
	for (i = 0; i < n; i++) {
		J->outoff[i + 1] += J->outoff[i];
		J->inoff[i + 1] += J->inoff[i];
	}
	for (i = 0; i < g->nedge; i++) {
		J->out[J->outoff[g->edge[i].src]++] = (uint32_t)i;
		J->in[J->inoff[g->edge[i].dst]++] = (uint32_t)i;
	}
	for (i = n; i > 0; i--) {
		J->outoff[i] = J->outoff[i - 1];
		J->inoff[i] = J->inoff[i - 1];
	}
	J->outoff[0] = J->inoff[0] = 0;
	for (i = 0; i < g->nproc; i++)
		last[i] = KG_NONE;
	for (i = n; i-- > 0;) {
		next[i] = last[J->tproc[i]];
		last[J->tproc[i]] = (uint32_t)i;
	}
	for (i = 0; i < n; i++)
		J->progout[i] = KG_NONE;
	for (i = 0; i < g->nedge; i++) {
		const struct kg_edge *e = &g->edge[i];

		if ((e->kind == KG_E_THREAD || e->kind == KG_E_STREAM) && next[e->src] == e->dst)
			J->progout[e->src] = (uint32_t)i;
	}
	free(next);
	free(last);
}

/* The layout from the process groups, the layers from the tags. */
static int
layout(struct job *J)
{
	const struct graph *g = J->g;
	const struct kg_task **ct = xmalloc((g->ntask + 1) * sizeof(*ct));
	uint32_t *grp = xmalloc((g->ntask + 1) * sizeof(*grp));
	size_t i, n = 0;
	int64_t r, *lo = NULL, *hi = NULL;
	int rc = 1;

	J->world = J->single ? 1 : (int64_t)g->h.nranks;
	for (i = 0; i < g->h.nranks; i++)
		if (g->h.ranks[i] != (int64_t)i) {
			errmsg("%s: section %d: the job's ranks are not 0 to %lld", J->name,
			    J->index, (long long)J->world - 1);
			goto out;
		}
	pgroups_init(&J->pg, J->o->gpn);
	/* each rank's layers (checked below) and the collectives, in one pass */
	lo = xmalloc((size_t)J->world * sizeof(*lo));
	hi = xmalloc((size_t)J->world * sizeof(*hi));
	for (r = 0; r < J->world; r++)
		lo[r] = INT64_MAX, hi[r] = -1;
	for (i = 0; i < g->ntask; i++) {
		int64_t rk = job_task_rank(J, (uint32_t)i), l = g->task[i].layer;

		if (rk < 0 || rk >= J->world) {
			/* the passes below index the job's ranks with it */
			errmsg("%s: section %d: task %zu is on rank %lld, not one of the job's "
			    "0 to %lld", J->name, J->index, i, (long long)rk, (long long)J->world - 1);
			goto out;
		}
		if (l >= 0) {
			if (l < lo[rk])
				lo[rk] = l;
			if (l > hi[rk])
				hi[rk] = l;
		}
		J->cgroup[i] = UINT32_MAX;
		if (g->task[i].kind != KG_COLL)
			continue;
		if (g->task[i].pgr != KG_NONE)
			J->cgroup[i] = pgroups_of(&J->pg, g->task[i].pgr,
			    kg_str(J->r, g->task[i].pgr));
		ct[n] = &g->task[i];
		grp[n++] = J->cgroup[i];
	}
	for (i = 0; i < n; i++)
		if (p2p(ct[i]->coll))
			break;
	J->synth = i == n; /* no sends and receives to copy */
	if (J->synth) {
		/* pipeline depth 1: its stages are cut by the layer tags alone */
		for (r = 0; r < J->world && hi[r] >= 0; r++)
			;
		if (r < J->world) {
			errmsg("%s: section %d: the job has pipeline depth 1 (no send or receive "
			    "between ranks), and rank %lld has no task with a layer tag to cut "
			    "stages by: %s", J->name, J->index, (long long)r, NO_LAYERS);
			goto out;
		}
	}
	if (J->pg.ng == 0 && !J->synth) {
		errmsg("%s: section %d: its collectives carry no process-group ranks (NCCL "
		    "metadata, `pgr`): the stages' sends and receives cannot be told apart",
		    J->name, J->index);
		goto out;
	}
	if (J->single && !J->synth) {
		errmsg("%s: section %d: one stage of a pipeline: merge the job's ranks first "
		    "(graph-deps --merge)", J->name, J->index);
		goto out;
	}
	pgroups_classify(&J->pg, ct, grp, n);
	pgroups_fit(&J->pg, ct, grp, n, &J->o->given, &J->m);
	J->tp = J->single ? 1 : J->pg.tp;
	J->dp = J->single || J->pg.dp < 1 ? 1 : J->pg.dp;
	J->S = J->world / (J->tp * J->dp);
	if (J->synth && (J->S != 1 || J->tp * J->dp != J->world)) {
		errmsg("%s: section %d: the job has pipeline depth 1 (no send or receive "
		    "between ranks), but its process groups (tensor-parallel %lld, "
		    "data-parallel %lld) do not make its %lld ranks: its collectives need "
		    "their groups' ranks (NCCL metadata, `pgr`) and the job all its ranks",
		    J->name, J->index, (long long)J->tp, (long long)J->dp, (long long)J->world);
		goto out;
	}
	if (J->S * J->tp * J->dp != J->world) {
		errmsg("%s: section %d: %lld ranks are not tensor-parallel %lld times "
		    "data-parallel %lld times stages", J->name, J->index, (long long)J->world,
		    (long long)J->tp, (long long)J->dp);
		goto out;
	}
	/* each rank's layers: a stage's ranks alike, the stages in order */
	J->tr = xcalloc((size_t)J->world, sizeof(*J->tr));
	for (r = 0; r < J->world; r++) {
		int64_t r0 = job_rank(J, 0, 0, stage_of(J, r));

		J->tr[r].rank = r;
		J->tr[r].main = KG_NONE;
		if (hi[r] < 0) {
			errmsg("%s: section %d: rank %lld has no task with a layer tag: %s", J->name,
			    J->index, (long long)r, NO_LAYERS);
			goto out;
		}
		if (lo[r] != lo[r0] || hi[r] != hi[r0] ||
		    (stage_of(J, r) > 0 && lo[r] != hi[job_rank(J, 0, 0, stage_of(J, r) - 1)] + 1)) {
			errmsg("%s: section %d: rank %lld holds layers %lld-%lld, which does not "
			    "fit stage %lld of a pipeline laid out tensor-parallel first, then "
			    "data-parallel (Megatron's order)", J->name, J->index, (long long)r,
			    (long long)lo[r], (long long)hi[r], (long long)stage_of(J, r));
			goto out;
		}
		J->tr[r].lo = lo[r];
		J->tr[r].n = hi[r] - lo[r] + 1;
	}
	J->L = hi[J->world - 1] - lo[0] + 1;
	if (J->L < J->o->n) {
		errmsg("%s: section %d: %lld layers cannot fill %lld pipeline stages", J->name,
		    J->index, (long long)J->L, (long long)J->o->n);
		goto out;
	}
	for (i = 0; i < g->nproc; i++) {
		int64_t rk = job_proc_rank(J, (uint32_t)i);

		if (g->proc[i].main && rk >= 0 && rk < J->world)
			J->tr[rk].main = (uint32_t)i;
	}
	for (r = 0; r < J->world; r++)
		if (J->tr[r].main == KG_NONE) {
			errmsg("%s: section %d: rank %lld has no main thread", J->name, J->index,
			    (long long)r);
			goto out;
		}
	{
		/* A link the job never used and the new layout needs (NVLink
		 * always, the network once the new world passes a node): the
		 * built-in topology's (the GPU's), said, and recorded with the
		 * tool */
		uint8_t used[KG_NCOLL * COMM_NLINK] = { 0 };
		char assumed[COMM_NLINK], amsg[COMM_NLINK][PGROUPS_MSGLEN];
		struct comm_given given = J->o->given;
		int c, l;

		for (c = 1; c < KG_NCOLL; c++) {
			used[c * COMM_NLINK + COMM_INTRA] = 1;
			used[c * COMM_NLINK + COMM_INTER] = J->tp * J->dp * J->o->n > J->o->gpn;
		}
		if (pgroups_assume(&J->m, used, J->g->h.gpu, &given, assumed, amsg, J->net,
		    sizeof(J->net)) > 0) {
			for (l = 0; l < COMM_NLINK; l++)
				if (assumed[l])
					warnmsg("%s: section %d: %s", J->name, J->index, amsg[l]);
			pgroups_fit(&J->pg, ct, grp, n, &given, &J->m);
		}
	}
	rc = 0;
out:
	free(lo);
	free(hi);
	free(ct);
	free(grp);
	return rc;
}

/* The stage-relative direction of a send or receive kernel, or NOP. */
static int
op_kind(const struct job *J, uint32_t k)
{
	const struct kg_task *t = &J->g->task[k];
	const char *s;
	int64_t own = job_task_rank(J, k), peer = -1;
	long long v;

	if (t->kind != KG_COLL || !p2p(t->coll) || t->pgr == KG_NONE)
		return NOP;
	s = kg_str(J->r, t->pgr);
	while (next_number(&s, &v))
		if (v != own)
			peer = v;
	if (peer < 0 || peer >= J->world || stage_of(J, peer) == stage_of(J, own))
		return NOP;
	if (t->coll == KG_COLL_SEND)
		return stage_of(J, peer) > stage_of(J, own) ? OP_SEND_NEXT : OP_SEND_PREV;
	return stage_of(J, peer) > stage_of(J, own) ? OP_RECV_NEXT : OP_RECV_PREV;
}

/* The GPU task a launch call put on a stream, or KG_NONE. */
static uint32_t
launched(const struct job *J, uint32_t u)
{
	uint32_t k;

	for (k = J->outoff[u]; k < J->outoff[u + 1]; k++)
		if (J->g->edge[J->out[k]].kind == KG_E_LAUNCH)
			return J->g->edge[J->out[k]].dst;
	return KG_NONE;
}

static int
has_handoff_in(const struct job *J, uint32_t u)
{
	uint32_t k;

	for (k = J->inoff[u]; k < J->inoff[u + 1]; k++)
		if (J->g->edge[J->in[k]].kind == KG_E_HANDOFF)
			return 1;
	return 0;
}

/*
 * The places of one rank's host tasks: its main thread's units, the
 * sends and receives between them, the backward thread's runs.
 */
static void
host_places(struct job *J, int64_t rank, const uint32_t *ids, size_t n)
{
	const struct graph *g = J->g;
	struct trank *tr = &J->tr[rank];
	size_t i, j;
	int32_t nop = 0, run = -1, lastit = -1;
	int64_t *runts = NULL;
	size_t nrun = 0, caprun = 0;
	int *runit = NULL;
	size_t capit = 0;

	/* backward runs: a hand-off starts one; numbered per iteration */
	for (i = 0; i < n; i++) {
		uint32_t u = ids[i];
		const struct kg_task *t = &g->task[u];
		struct place *p = &J->pl[u];

		if (g->proc[J->tproc[u]].kind != KG_THREAD || J->tproc[u] == tr->main)
			continue;
		if (has_handoff_in(J, u) || run < 0 || iter_index(J, t->iter) != lastit) {
			if (iter_index(J, t->iter) != lastit)
				run = -1, lastit = iter_index(J, t->iter);
			run++;
			grow(&runts, &caprun, nrun + 1, sizeof(*runts));
			grow(&runit, &capit, nrun + 1, sizeof(*runit));
			runts[nrun] = t->ts;
			runit[nrun++] = lastit;
		}
		p->unit = U_B;
		p->mb = t->mb >= 0 ? (int32_t)t->mb : run;
		p->it = lastit;
	}
	/* the main thread */
	for (i = 0; i < n; i++) {
		uint32_t u = ids[i], kern, done = KG_NONE;
		const struct kg_task *t;
		struct place *p = &J->pl[u];

		if (J->tproc[u] != tr->main || p->unit == U_OP)
			continue; /* an operation's wait is placed with it */
		t = &g->task[u];
		p->it = iter_index(J, t->iter);
		if (t->phase == KG_PH_FWD && t->mb >= 0) {
			p->unit = U_F, p->mb = (int32_t)t->mb;
			if (t->mb + 1 > tr->nmb)
				tr->nmb = t->mb + 1;
		} else if (t->phase == KG_PH_BWD) {
			int32_t k = 0;

			for (j = 0; j < nrun; j++)
				if (runit[j] == p->it && runts[j] <= t->ts)
					k++;
			p->unit = U_B, p->mb = k > 0 ? k - 1 : 0;
		} else {
			p->unit = NUNIT; /* free: below */
		}
		kern = launched(J, u);
		if (p->unit == NUNIT && kern != KG_NONE && op_kind(J, kern) != NOP) {
			/* a send or receive: the calls of its operator around it */
			uint32_t op = t->op;

			p->unit = U_OP, p->op = (uint8_t)op_kind(J, kern), p->mb = nop;
			for (j = i; j-- > 0;) {
				const struct kg_task *q = &g->task[ids[j]];

				if (q->proc != tr->main)
					continue;
				if (op == KG_NONE || q->op != op || J->pl[ids[j]].unit != NUNIT)
					break;
				J->pl[ids[j]] = *p;
			}
			/* after it, up to the call that records its end (the
			 * `via` of the wait for it): operators of one kind in a
			 * row share a name */
			for (j = J->outoff[kern]; j < J->outoff[kern + 1]; j++) {
				const struct kg_edge *e = &g->edge[J->out[j]];

				if (e->kind == KG_E_EVENT && e->via != KG_NONE &&
				    g->task[e->via].proc == tr->main && e->via > u)
					done = e->via;
			}
			for (j = i + 1; j < n && done != KG_NONE && ids[j] <= done; j++) {
				const struct kg_task *q = &g->task[ids[j]];

				if (q->proc != tr->main)
					continue;
				if (op == KG_NONE || q->op != op)
					break;
				J->pl[ids[j]] = *p;
				J->pl[ids[j]].it = iter_index(J, q->iter);
				i = j;
			}
			/* its wait: the call an event edge from the kernel names */
			for (j = J->outoff[kern]; j < J->outoff[kern + 1]; j++) {
				const struct kg_edge *e = &g->edge[J->out[j]];

				if (e->kind == KG_E_EVENT && e->at != KG_NONE &&
				    g->task[e->at].proc == tr->main) {
					J->pl[e->at] = *p;
					J->pl[e->at].part = P_POST;
					J->pl[e->at].it = iter_index(J, g->task[e->at].iter);
				}
			}
			nop++;
		}
	}
	/* the rest of the main thread: before an iteration's first unit the
	 * prologue, after its last the epilogue, between them with the
	 * operation before it (the epilogue if none) */
	{
		size_t ni = g->h.niters > 0 ? g->h.niters : 1;
		size_t *first = xmalloc(ni * sizeof(*first)), *last = xcalloc(ni, sizeof(*last));
		struct place op;
		int have = 0;

		for (i = 0; i < ni; i++)
			first[i] = SIZE_MAX;
		for (i = 0; i < n; i++) {
			const struct place *p = &J->pl[ids[i]];

			if (J->tproc[ids[i]] != tr->main ||
			    (p->unit != U_F && p->unit != U_B && p->unit != U_OP))
				continue;
			if (first[p->it] == SIZE_MAX)
				first[p->it] = i;
			last[p->it] = i;
		}
		memset(&op, 0, sizeof(op));
		for (i = 0; i < n; i++) {
			struct place *p = &J->pl[ids[i]];

			if (J->tproc[ids[i]] != tr->main)
				continue;
			if (p->unit == U_OP) {
				op = *p, have = 1;
				continue;
			}
			if (p->unit != NUNIT)
				continue;
			if (first[p->it] == SIZE_MAX || i < first[p->it]) {
				p->unit = U_PRO;
			} else if (i > last[p->it] || !have || op.it != p->it) {
				p->unit = U_EPI;
			} else {
				int32_t it = p->it;

				*p = op;
				p->it = it;
			}
		}
		free(first);
		free(last);
	}
	free(runts);
	free(runit);
}

/* F and B cut into parts around the layers, thread by thread. */
static void
parts(struct job *J, int64_t rank, const uint32_t *ids, size_t n)
{
	const struct graph *g = J->g;
	const struct trank *tr = &J->tr[rank];
	size_t i, j, k;

	for (i = 0; i < g->nproc; i++) {
		uint32_t *pend = NULL;
		size_t npend = 0, cap = 0;
		int32_t a = -1, cu = -1, cmb = -1, cit = -1;

		if (g->proc[i].kind != KG_THREAD || job_proc_rank(J, (uint32_t)i) != rank)
			continue;
		for (j = 0; j <= n; j++) {
			uint32_t u = j < n ? ids[j] : KG_NONE;
			struct place *p = u == KG_NONE ? NULL : &J->pl[u];

			if (u != KG_NONE && J->tproc[u] != i)
				continue;
			if (u == KG_NONE || p->unit != cu || p->mb != cmb || p->it != cit) {
				/* the unit ends: what followed its last layer is after them */
				for (k = 0; k < npend; k++) {
					J->pl[pend[k]].part = a >= 0 ? P_POST : P_PRE;
					J->pl[pend[k]].a = -1;
				}
				npend = 0, a = -1;
				if (u == KG_NONE)
					break;
				cu = p->unit, cmb = p->mb, cit = p->it;
			}
			if (p->unit != U_F && p->unit != U_B)
				continue;
			if (g->task[u].layer >= 0) {
				for (k = 0; k < npend; k++) {
					J->pl[pend[k]].part = a >= 0 ? P_SLOT : P_PRE;
					if (a < 0)
						J->pl[pend[k]].a = -1;
				}
				npend = 0;
				a = (int32_t)(g->task[u].layer - tr->lo);
				p->part = P_LAYER, p->a = a;
			} else {
				p->a = a;
				VEC_PUSH(pend, npend, cap, u);
			}
		}
		free(pend);
	}
}

/* A GPU task goes with its launch; else with the task before it on its stream. */
static void
gpu_places(struct job *J, const uint32_t *ids, size_t n)
{
	const struct graph *g = J->g;
	uint32_t *last = xmalloc((g->nproc + 1) * sizeof(*last));
	size_t i, k;

	for (i = 0; i < g->nproc; i++)
		last[i] = KG_NONE;
	for (i = 0; i < n; i++) {
		uint32_t u = ids[i], src = KG_NONE, p = J->tproc[u];

		if (g->proc[p].kind != KG_STREAM)
			continue;
		for (k = J->inoff[u]; k < J->inoff[u + 1]; k++)
			if (g->edge[J->in[k]].kind == KG_E_LAUNCH &&
			    g->proc[g->task[g->edge[J->in[k]].src].proc].kind == KG_THREAD &&
			    g->edge[J->in[k]].how == KG_HOW_TRACE)
				src = g->edge[J->in[k]].src;
		if (src == KG_NONE)
			src = last[p];
		if (src != KG_NONE)
			J->pl[u] = J->pl[src];
		else
			J->pl[u].unit = U_PRO, J->pl[u].it = iter_index(J, g->task[u].iter);
		last[p] = u;
	}
	free(last);
}


static int
place_cmp(const struct place *x, const struct place *y)
{
	if (x->it != y->it)
		return x->it < y->it ? -1 : 1;
	if (x->unit != y->unit)
		return x->unit < y->unit ? -1 : 1;
	if (x->mb != y->mb)
		return x->mb < y->mb ? -1 : 1;
	if (x->part != y->part)
		return x->part < y->part ? -1 : 1;
	if (x->a != y->a)
		return x->a < y->a ? -1 : 1;
	return 0;
}

/* The time a task is issued: its own start on a thread, its launch's on a stream. */
static int64_t
issued(const struct job *J, uint32_t u)
{
	const struct graph *g = J->g;
	uint32_t k;

	if (g->proc[J->tproc[u]].kind == KG_THREAD)
		return g->task[u].ts;
	for (k = J->inoff[u]; k < J->inoff[u + 1]; k++)
		if (g->edge[J->in[k]].kind == KG_E_LAUNCH)
			return g->task[g->edge[J->in[k]].src].ts;
	return g->task[u].ts;
}

/*
 * The pieces: a job's tasks grouped by (rank, place), the groups in that
 * order, each group's tasks in the order they were issued (then by id).
 * Tasks are gathered into their groups by a table of the places seen,
 * and only each group is sorted: a sort of all the tasks as (rank,
 * place, issued, id) keys took a tenth of the run.
 */
struct pkey {
	uint64_t k1;            /* rank, iteration index */
	uint64_t k2;            /* unit, micro-batch, part */
	uint32_t a;             /* the place's layer or slot */
	uint32_t n;             /* tasks */
	uint32_t order;         /* its index among the pieces in order */
};

struct tkey {
	int64_t issued;
	uint32_t id;
};

static uint32_t
ord32(int32_t v)
{
	return (uint32_t)v ^ UINT32_C(0x80000000);
}

static void
piece_key(const struct job *J, uint32_t u, struct pkey *k)
{
	const struct place *pl = &J->pl[u];

	/* place_cmp's order: it, unit, mb, part, a */
	k->k1 = (uint64_t)ord32((int32_t)job_task_rank(J, u)) << 32 | ord32(pl->it);
	k->k2 = (uint64_t)pl->unit << 40 | (uint64_t)ord32(pl->mb) << 8 | pl->part;
	k->a = ord32(pl->a);
	k->n = k->order = 0;
}

static int
pkey_cmp(const void *a, const void *b)
{
	const struct pkey *x = *(const struct pkey *const *)a, *y = *(const struct pkey *const *)b;

	if (x->k1 != y->k1)
		return x->k1 < y->k1 ? -1 : 1;
	if (x->k2 != y->k2)
		return x->k2 < y->k2 ? -1 : 1;
	return x->a < y->a ? -1 : x->a > y->a;
}

static int
tkey_cmp(const void *a, const void *b)
{
	const struct tkey *x = a, *y = b;

	if (x->issued != y->issued)
		return x->issued < y->issued ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void
tkey_sort(struct tkey *t, size_t n)
{
	size_t i, j;

	if (n > 24) {
		qsort(t, n, sizeof(*t), tkey_cmp);
		return;
	}
	for (i = 1; i < n; i++) {
		struct tkey v = t[i];

		for (j = i; j > 0 && tkey_cmp(&v, &t[j - 1]) < 0; j--)
			t[j] = t[j - 1];
		t[j] = v;
	}
}

static uint64_t
pkey_hash(const struct pkey *k)
{
	uint64_t h = k->k1 * UINT64_C(0x9e3779b97f4a7c15);

	h = (h ^ (h >> 29) ^ k->k2) * UINT64_C(0xbf58476d1ce4e5b9);
	h = (h ^ (h >> 31) ^ k->a) * UINT64_C(0x94d049bb133111eb);
	return h ^ (h >> 32);
}

static int
pkey_eq(const struct pkey *x, const struct pkey *y)
{
	return x->k1 == y->k1 && x->k2 == y->k2 && x->a == y->a;
}

/* The index in *pk of the piece with key k, added if new. */
static uint32_t
piece_find(struct pkey **pk, size_t *npk, size_t *cap, uint32_t **tab, size_t *mask,
    const struct pkey *k)
{
	size_t h, i;

	if (*tab == NULL || *npk * 2 >= *mask + 1) {
		size_t m = *tab == NULL ? 1023 : (*mask + 1) * 2 - 1;
		uint32_t *t = xmalloc((m + 1) * sizeof(*t));

		for (i = 0; i <= m; i++)
			t[i] = KG_NONE;
		for (i = 0; i < *npk; i++) {
			for (h = pkey_hash(&(*pk)[i]) & m; t[h] != KG_NONE; h = (h + 1) & m)
				;
			t[h] = (uint32_t)i;
		}
		free(*tab);
		*tab = t, *mask = m;
	}
	for (h = pkey_hash(k) & *mask; (*tab)[h] != KG_NONE; h = (h + 1) & *mask)
		if (pkey_eq(&(*pk)[(*tab)[h]], k))
			return (*tab)[h];
	(*tab)[h] = (uint32_t)*npk;
	VEC_PUSH(*pk, *npk, *cap, *k);
	return (*tab)[h];
}

static void
make_pieces(struct job *J)
{
	const struct graph *g = J->g;
	size_t n = g->ntask, npk = 0, cap = 0, mask = 0, i;
	struct pkey *pk = NULL, **by, k, prev = { 0 };
	uint32_t *tab = NULL, *at, cur = KG_NONE;
	struct tkey *tk;

	/* each task's piece, in the order first seen (until the pieces are
	 * in order); neighbours mostly share one */
	for (i = 0; i < n; i++) {
		piece_key(J, (uint32_t)i, &k);
		if (cur == KG_NONE || !pkey_eq(&k, &prev))
			cur = piece_find(&pk, &npk, &cap, &tab, &mask, &k), prev = k;
		pk[cur].n++;
		J->piece[i] = cur;
	}
	free(tab);
	/* the pieces in order */
	by = xmalloc((npk + 1) * sizeof(*by));
	for (i = 0; i < npk; i++)
		by[i] = &pk[i];
	qsort(by, npk, sizeof(*by), pkey_cmp);
	J->pc = xmalloc((npk + 1) * sizeof(*J->pc));
	J->npc = npk;
	at = xmalloc((npk + 1) * sizeof(*at));
	for (i = 0; i < npk; i++) {
		by[i]->order = (uint32_t)i;
		J->pc[i].first = i == 0 ? 0 : J->pc[i - 1].first + J->pc[i - 1].n;
		J->pc[i].n = by[i]->n;
		at[i] = J->pc[i].first;
	}
	free(by);
	/* the tasks into their pieces, each piece sorted by issue */
	tk = xmalloc((n + 1) * sizeof(*tk));
	for (i = 0; i < n; i++) {
		uint32_t p = pk[J->piece[i]].order;

		tk[at[p]].issued = issued(J, (uint32_t)i);
		tk[at[p]++].id = (uint32_t)i;
		J->piece[i] = p;
	}
	free(at);
	free(pk);
	for (i = 0; i < npk; i++) {
		struct piece *p = &J->pc[i];
		size_t j;

		tkey_sort(tk + p->first, p->n);
		for (j = p->first; j < p->first + p->n; j++)
			J->pt[j] = tk[j].id;
		p->rank = (uint32_t)job_task_rank(J, J->pt[p->first]);
		p->pl = J->pl[J->pt[p->first]];
	}
	free(tk);
}

const struct piece *
job_piece(const struct job *J, uint32_t k, const struct place *pl)
{
	size_t lo = 0, hi = J->npc;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct piece *p = &J->pc[mid];
		int c = p->rank != k ? (p->rank < k ? -1 : 1) : place_cmp(&p->pl, pl);

		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < J->npc && J->pc[lo].rank == k && place_cmp(&J->pc[lo].pl, pl) == 0)
		return &J->pc[lo];
	return NULL;
}

/* Elements of the first operand in an Input Dims text; 0 if none. */
static int64_t
first_numel(const char *dims)
{
	int64_t n = 1, v = 0;
	int depth = 0, num = 0, any = 0;

	for (; *dims != '\0'; dims++) {
		if (*dims == '[') {
			depth++;
		} else if (*dims >= '0' && *dims <= '9') {
			v = v * 10 + (*dims - '0'), num = 1;
		} else if ((*dims == ',' || *dims == ']') && num && depth == 2) {
			n *= v, v = 0, num = 0, any = 1;
		}
		if (*dims == ']' && --depth == 1)
			break;
	}
	return any ? n : 0;
}

/*
 * Parameters of rank 0's first forward step's piece: its part before or
 * after the layers, or its first layer; the main thread's launches.
 */
static int64_t
part_params(const struct job *J, int part, int32_t a)
{
	const struct graph *g = J->g;
	struct place pl;
	const struct piece *pc;
	struct param_count cnt;
	uint32_t i;

	memset(&pl, 0, sizeof(pl));
	pl.unit = U_F, pl.part = (uint8_t)part, pl.a = a, pl.mb = 0, pl.it = 0;
	pc = job_piece(J, 0, &pl);
	param_count_init(&cnt);
	for (i = 0; pc != NULL && i < pc->n; i++) {
		const struct kg_task *t = &g->task[J->pt[pc->first + i]];

		if (t->proc == J->tr[0].main)
			param_count_add(&cnt, J->r, t);
	}
	return cnt.sum;
}

/*
 * Each rank's data-parallel gradient bytes an iteration, a layer's
 * parameters (from rank 0's first forward layer's launches, an operator
 * launching kernels in a row counted once) and the gradients' element
 * size. 0, or 1 after a message.
 */
static int
params(struct job *J)
{
	const struct graph *g = J->g;
	struct place pl;
	const struct piece *pc;
	size_t i, ni = g->h.niters > 0 ? g->h.niters : 1;

	for (i = 0; i < g->ntask; i++) {
		const struct kg_task *t = &g->task[i];

		if (J->cgroup[i] == UINT32_MAX || !J->pg.g[J->cgroup[i]].dp ||
		    (t->phase != KG_PH_BWD && t->phase != KG_PH_OPT))
			continue;
		J->tr[job_task_rank(J, (uint32_t)i)].grad += (double)t->bytes / (double)ni;
		if (J->e == 0 && t->dtype != KG_NONE)
			J->e = elem_size(kg_str(J->r, t->dtype));
	}
	J->P = part_params(J, P_LAYER, 0);
	memset(&pl, 0, sizeof(pl));
	pl.unit = U_F, pl.part = P_LAYER, pl.a = 0, pl.mb = 0, pl.it = 0;
	pc = job_piece(J, 0, &pl);
	/* made sends: what the first layer takes in, its launch calls' time */
	if (J->synth) {
		int64_t nl = 0, sum = 0;

		for (i = 0; pc != NULL && i < pc->n; i++) {
			const struct kg_task *t = &g->task[J->pt[pc->first + i]];

			if (t->kind != KG_RT || t->proc != J->tr[0].main)
				continue;
			if (J->act == 0 && t->shapes != KG_NONE)
				J->act = 2 * first_numel(kg_str(J->r, t->shapes));
			sum += t->dur, nl++;
		}
		J->launch = nl > 0 ? sum / nl : 5000;
		if (J->o->act > 0)
			J->act = J->o->act;
		if (J->act <= 0) {
			errmsg("%s: section %d: layer %lld's first call has no input shapes: "
			    "give the bytes a stage sends (--activation-bytes)", J->name,
			    J->index, (long long)J->tr[0].lo);
			return 1;
		}
		J->hpre = part_params(J, P_PRE, -1);
		J->hpost = part_params(J, P_POST, -1);
	}
	if (J->pg.dp >= 2 && J->P <= 0) {
		errmsg("%s: section %d: layer %lld launches no operator with weight shapes "
		    "(aten::mm, addmm, linear with Input Dims): its parameters cannot be "
		    "counted", J->name, J->index, (long long)J->tr[0].lo);
		return 1;
	}
	if (J->pg.dp >= 2 && J->e == 0) {
		errmsg("%s: section %d: the gradient collectives have no element type: their "
		    "bytes cannot be matched to parameters", J->name, J->index);
		return 1;
	}
	return 0;
}

int
job_read(struct job *J)
{
	const struct graph *g = J->g;
	uint32_t *ids = NULL;
	size_t *start, i;
	int64_t r;

	/* the arrays of the passes below, made at once: the prefault
	 * thread faults their pages in (slots 6 on: the graph's are 0 and 1,
	 * the new job's 2 to 5) while the first passes run */
	J->tproc = xmalloc((g->ntask + 1) * sizeof(*J->tproc));
	J->trk = xmalloc((g->ntask + 1) * sizeof(*J->trk));
	J->cgroup = xmalloc((g->ntask + 1) * sizeof(*J->cgroup));
	J->outoff = xcalloc(g->ntask + 2, sizeof(*J->outoff));
	J->inoff = xcalloc(g->ntask + 2, sizeof(*J->inoff));
	J->out = xmalloc((g->nedge + 1) * sizeof(*J->out));
	J->in = xmalloc((g->nedge + 1) * sizeof(*J->in));
	J->progout = xmalloc((g->ntask + 1) * sizeof(*J->progout));
	J->pl = xcalloc(g->ntask + 1, sizeof(*J->pl));
	J->piece = xmalloc((g->ntask + 1) * sizeof(*J->piece));
	J->pt = xmalloc((g->ntask + 1) * sizeof(*J->pt));
	pf_want(g->pf, 6, J->cgroup, g->ntask * sizeof(*J->cgroup));
	pf_want(g->pf, 7, J->outoff, (g->ntask + 2) * sizeof(*J->outoff));
	pf_want(g->pf, 8, J->inoff, (g->ntask + 2) * sizeof(*J->inoff));
	pf_want(g->pf, 9, J->out, g->nedge * sizeof(*J->out));
	pf_want(g->pf, 10, J->in, g->nedge * sizeof(*J->in));
	pf_want(g->pf, 11, J->progout, g->ntask * sizeof(*J->progout));
	pf_want(g->pf, 12, J->pl, g->ntask * sizeof(*J->pl));
	pf_want(g->pf, 13, J->piece, g->ntask * sizeof(*J->piece));
	pf_want(g->pf, 14, J->pt, g->ntask * sizeof(*J->pt));
	/* each task's processor and rank, looked up once: the passes
	 * below scan and sort by them, and a task record is 176 bytes to
	 * fetch for them (the processors only until the pieces are made) */
	J->single = !g->job;
	for (i = 0; i < g->ntask; i++) {
		J->tproc[i] = g->task[i].proc;
		J->trk[i] = (int32_t)(J->single ? 0 : graph_rank(g, (uint32_t)i));
	}
	if (layout(J) != 0)
		return 1;
	index_edges(J);
	for (i = 0; i < g->ntask; i++)
		J->pl[i].unit = NUNIT, J->pl[i].a = -1, J->pl[i].mb = -1;
	/* each rank's tasks in order */
	start = xcalloc((size_t)J->world + 2, sizeof(*start));
	for (i = 0; i < g->ntask; i++)
		start[job_task_rank(J, (uint32_t)i) + 1]++;
	for (r = 0; r < J->world; r++)
		start[r + 1] += start[r];
	ids = xmalloc((g->ntask + 1) * sizeof(*ids));
	for (i = 0; i < g->ntask; i++)
		ids[start[job_task_rank(J, (uint32_t)i)]++] = (uint32_t)i;
	for (r = J->world; r > 0; r--)
		start[r] = start[r - 1];
	start[0] = 0;
	for (r = 0; r < J->world; r++) {
		host_places(J, r, ids + start[r], start[r + 1] - start[r]);
		parts(J, r, ids + start[r], start[r + 1] - start[r]);
		gpu_places(J, ids + start[r], start[r + 1] - start[r]);
		if (J->tr[r].nmb == 0) {
			errmsg("%s: section %d: rank %lld: no forward task has a micro-batch tag "
			    "(kineto2graph takes them from record_function ranges named like "
			    "\"microbatch_3\")", J->name, J->index, (long long)r);
			free(start);
			free(ids);
			return 1;
		}
	}
	for (i = 0; i < g->ntask; i++)
		if (J->pl[i].unit == NUNIT)
			J->pl[i].unit = U_EPI, J->pl[i].it = iter_index(J, g->task[i].iter);
	free(start);
	free(ids);
	make_pieces(J);
	free(J->tproc);
	J->tproc = NULL;
	pf_forget(g->pf, 6);
	return params(J);
}

void
job_release(struct job *J)
{
	pf_forget(J->g->pf, 6);
	free(J->tr), free(J->pl), free(J->piece), free(J->outoff), free(J->out), free(J->trk);
	free(J->tproc);
	free(J->inoff), free(J->in), free(J->progout), free(J->pt);
	free(J->pc), free(J->cgroup);
	pgroups_release(&J->pg);
}
