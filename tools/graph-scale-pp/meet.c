/*
 * The new job's collectives: what each meets (rank edges by key), the
 * links that changed, the gradients re-timed for each stage's
 * parameters (see pp.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pp.h"
#include "util.h"

/* A collective's key: its new group, its place. */
void
coll_key(struct build *B, uint32_t nt, uint32_t u, const struct ctx *c, int32_t ord)
{
	const struct job *J = B->J;
	int coll = nt_base(B, nt)->coll;
	uint32_t grp = u == KG_NONE ? UINT32_MAX : J->cgroup[u];
	struct ckey key;
	int64_t tt = B->rank % J->tp, d = B->rank / J->tp % J->dp, s = B->stage;
	int64_t S2 = J->o->n, members[1 << 12];
	char buf[1 << 15], *p = buf;
	size_t nm = 0, i;

	memset(&key, 0, sizeof(key));
	key.it = c->it, key.mb = c->mb, key.j = (int32_t)c->jl, key.k = ord;
	key.unit = c->unit, key.part = c->part, key.op = c->op;
	key.role = u == KG_NONE ? 0 : B->role[J->g->task[u].proc];
	key.task = nt;
	key.rank = B->rank;
	if (coll == KG_COLL_SEND || coll == KG_COLL_RECV) {
		/* a pipeline pair: the lower stage's rank and the direction */
		int next = c->op == OP_SEND_NEXT || c->op == OP_RECV_NEXT;
		int64_t lo = next ? s : s - 1;

		members[nm++] = tt + J->tp * (d + J->dp * lo);
		members[nm++] = tt + J->tp * (d + J->dp * (lo + 1));
		key.op = c->op == OP_SEND_NEXT || c->op == OP_RECV_PREV; /* activations */
		key.role = 0;
		key.unit = U_OP;
		key.part = 0;
	} else if (grp != UINT32_MAX && !J->single) {
		/* the same group's shape in the new layout: which of the
		 * tensor-parallel, data-parallel and stage coordinates vary */
		const char *q = J->pg.g[grp].text;
		int64_t own = job_task_rank(J, u), sl = INT64_MAX, sh = -1;
		int vt = 0, vd = 0;
		long long v;
		int64_t a, b, x;

		while (next_number(&q, &v)) {
			if (v % J->tp != own % J->tp)
				vt = 1;
			if (v / J->tp % J->dp != own / J->tp % J->dp)
				vd = 1;
			if (v / (J->tp * J->dp) < sl)
				sl = v / (J->tp * J->dp);
			if (v / (J->tp * J->dp) > sh)
				sh = v / (J->tp * J->dp);
		}
		for (x = 0; x < S2; x++) {
			if (sl == sh ? x != s : (sh - sl + 1 < J->S && x != 0 && x != S2 - 1))
				continue;
			for (b = 0; b < J->dp; b++) {
				if (!vd && b != d)
					continue;
				for (a = 0; a < J->tp; a++)
					if ((vt || a == tt) && nm < sizeof(members) / sizeof(members[0]))
						members[nm++] = a + J->tp * (b + J->dp * x);
			}
		}
	} else {
		return; /* no group (or one traced rank standing for it): no meeting */
	}
	*p++ = '[';
	for (i = 0; i < nm && p < buf + sizeof(buf) - 24; i++)
		p += sprintf(p, "%s%lld", i ? ", " : "", (long long)members[i]);
	*p++ = ']';
	*p = '\0';
	key.group = intern_text(B, buf);
	B->t[nt].pgr = key.group;
	B->t[nt].gsize = (int64_t)nm;
	VEC_PUSH(B->key, B->nkey, B->capkey, key);
}

/* Scale the data-parallel gradients and the optimizer to the new stage's parameters. */
int
scale_gradients(struct build *B, size_t from, const struct stagecfg *sc)
{
	const struct job *J = B->J;
	double Pe = (double)J->P * J->e, target, kept = 0, prim = J->tr[sc->prim].grad, ratio, pr;
	double share;
	char msg[160];
	size_t i;
	int e;

	if (J->S > 1) {
		/* the new stage's layers, and what the traced first or last
		 * stage carried beyond its layers when it comes along */
		target = (double)sc->n2 * Pe;
		for (e = 0; e < sc->nends[0][0]; e++) {
			const struct trank *t = &J->tr[sc->ends[0][0][e]];
			double h = t->grad - (double)t->n * Pe;

			target += h > 0 ? h : 0;
		}
		share = prim > 0 ? target / prim : (double)sc->n2 / (double)sc->nsrc;
	} else {
		/* one traced stage: its parameters as counted, the layers' and
		 * the embedding's and the head's */
		double mine = (double)sc->n2 * (double)J->P + (B->stage == 0 ? (double)J->hpre : 0) +
		    (B->stage == J->o->n - 1 ? (double)J->hpost : 0);
		double all = (double)sc->nsrc * (double)J->P + (double)J->hpre + (double)J->hpost;

		share = all > 0 ? mine / all : (double)sc->n2 / (double)sc->nsrc;
		target = prim * share;
	}
	for (i = from; i < B->nt; i++) {
		const struct kg_task *t = nt_base(B, i);
		uint32_t u = B->tmpl[i];

		if (u != KG_NONE && t->kind == KG_COLL && J->cgroup[u] != UINT32_MAX &&
		    J->pg.g[J->cgroup[u]].dp && (t->phase == KG_PH_BWD || t->phase == KG_PH_OPT) &&
		    t->iter == nt_base(B, from)->iter)
			kept += (double)B->t[i].bytes;
	}
	if (J->pg.dp < 2 || kept <= 0 || prim <= 0 || J->P <= 0) {
		pr = J->P > 0 && J->S == 1 ? share : (double)sc->n2 / (double)sc->nsrc;
		ratio = 1;
	} else {
		ratio = target / kept;
		pr = share;
	}
	for (i = from; i < B->nt; i++) {
		struct ntask *x = &B->t[i];
		const struct kg_task *t = nt_base(B, i);
		uint32_t u = B->tmpl[i];
		const struct pgroup *gp;

		if (u == KG_NONE)
			continue; /* a send or receive made here */
		gp = J->cgroup[u] == UINT32_MAX ? NULL : &J->pg.g[J->cgroup[u]];

		if ((t->kind == KG_KERN && t->phase == KG_PH_OPT) ||
		    (t->kind == KG_SET && J->pl[u].unit == U_PRO)) {
			x->dur = llround((double)x->dur * pr);
		} else if (gp != NULL && gp->dp && (t->phase == KG_PH_BWD || t->phase == KG_PH_OPT) &&
		    x->bytes > 0 && ratio != 1) {
			uint64_t b = (uint64_t)llround((double)x->bytes * ratio);
			int a1, a2;
			int64_t told = comm_time(&J->m, t->coll, gp->size, x->bytes, gp->link, &a1);
			int64_t tnew = comm_time(&J->m, t->coll, gp->size, b, gp->link, &a2);

			if (told <= 0 || tnew < 0) {
				errmsg("%s: section %d: no %s in the job to fit the communication "
				    "model on", J->name, J->index, kg_coll_name[t->coll]);
				return 1;
			}
			if (pgroups_borrowed(&J->m, t->coll, gp->link, B->seen, msg, sizeof(msg)))
				warnmsg("%s: section %d: %s", J->name, J->index, msg);
			x->dur = llround((double)x->dur * (double)tnew / (double)told);
			x->bytes = b;
		}
	}
	return 0;
}

/* A collective whose group now spans nodes, or no longer does, re-timed for the link. */
int
relink(struct build *B)
{
	const struct job *J = B->J;
	size_t i;

	for (i = 0; i < B->nkey; i++) {
		struct ntask *x = &B->t[B->key[i].task];
		const struct kg_task *t = nt_base(B, B->key[i].task);
		uint32_t u = B->tmpl[B->key[i].task];
		const struct pgroup *gp = u == KG_NONE || J->cgroup[u] == UINT32_MAX ? NULL :
		    &J->pg.g[J->cgroup[u]];
		const char *s = B->xstr[B->key[i].group - J->g->nstr];
		int64_t node = -1;
		int link = COMM_INTRA, a1, a2;
		long long v;
		int64_t told, tnew;
		char msg[160];

		if (gp == NULL)
			continue;
		while (next_number(&s, &v)) {
			if (node >= 0 && v / J->o->gpn != node)
				link = COMM_INTER;
			node = v / J->o->gpn;
		}
		if (link == gp->link)
			continue;
		told = comm_time(&J->m, t->coll, gp->size, x->bytes, gp->link, &a1);
		tnew = comm_time(&J->m, t->coll, gp->size, x->bytes, link, &a2);
		if (told <= 0 || tnew < 0 || a1 || a2) {
			int l = a2 || tnew < 0 ? link : gp->link;

			errmsg("%s: section %d: no %s over %s in the job to fit the communication "
			    "model on%s", J->name, J->index, kg_coll_name[t->coll],
			    l == COMM_INTER ? "the network (across nodes)" : "NVLink (inside a node)",
			    l == COMM_INTER ? " (give it with --net GBPS,US)" : "");
			return 1;
		}
		if (pgroups_borrowed(&J->m, t->coll, link, B->seen, msg, sizeof(msg)) ||
		    pgroups_borrowed(&J->m, t->coll, gp->link, B->seen, msg, sizeof(msg)))
			warnmsg("%s: section %d: %s", J->name, J->index, msg);
		x->dur = llround((double)x->dur * (double)tnew / (double)told);
	}
	return 0;
}

static int
key_cmp(const void *a, const void *b)
{
	const struct ckey *x = a, *y = b;

#define C(f) if (x->f != y->f) return x->f < y->f ? -1 : 1
	C(group); C(it); C(unit); C(mb); C(part); C(op); C(j); C(role); C(k); C(rank);
#undef C
	return 0;
}

static int
same_meeting(const struct ckey *x, const struct ckey *y)
{
	return x->group == y->group && x->it == y->it && x->unit == y->unit && x->mb == y->mb &&
	    x->part == y->part && x->op == y->op && x->j == y->j && x->role == y->role &&
	    x->k == y->k;
}

/* Rank edges: a star from each meeting's lowest rank. */
size_t
meetings(struct build *B)
{
	size_t i, j, bad = 0;

	if (B->nkey > 1) /* qsort of none: UBSan refuses its NULL */
		qsort(B->key, B->nkey, sizeof(*B->key), key_cmp);
	for (i = 0; i < B->nkey; i = j) {
		struct kg_edge e;

		for (j = i + 1; j < B->nkey && same_meeting(&B->key[i], &B->key[j]); j++) {
			kg_edge_init(&e);
			e.kind = KG_E_RANK, e.how = KG_HOW_INFERRED;
			e.src = B->key[i].task, e.dst = B->key[j].task;
			VEC_PUSH(B->e, B->ne, B->cape, e);
		}
		if ((int64_t)(j - i) != B->t[B->key[i].task].gsize)
			bad++;
	}
	return bad;
}
