/*
 * The new job, rank by rank, from the templates' pieces (see pp.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pp.h"
#include "util.h"

#define OPMAX 1024 /* operations of a kind an iteration, kept as templates */

/* What a collective meets: ranks edges join the tasks with equal keys. */
struct ckey {
	uint32_t group;         /* str id of the new group's ranks text */
	int32_t it, mb, j, k;   /* iteration, micro-batch, new layer, its order */
	uint8_t unit, part, op;
	int64_t role;           /* its processor's role */
	uint32_t task;          /* the new task */
	int64_t rank;
};

/* An edge waiting for the next task on a processor. */
struct pend {
	uint32_t proc;
	struct kg_edge e;
};

struct nproc {
	int64_t role;
	uint32_t id;
};

struct build {
	struct job *J;
	/* the result */
	struct kg_task *t;
	uint32_t *tmpl;         /* by new task: its template */
	uint32_t *snap;         /* by new task: the last task on its `via` stream then */
	size_t nt, capt, captmpl, capsnap;
	struct kg_edge *e;
	size_t ne, cape;
	struct kg_proc *proc;
	size_t np, capp;
	struct ckey *key;
	size_t nkey, capkey;
	char **xstr;
	size_t nxstr, capxstr;
	/* templates */
	int64_t *role;          /* by template proc */
	uint32_t *viaon;        /* by template task: the stream a runtime edge binds it on */
	uint32_t *inst;         /* by template task: its copy in the piece being written */
	uint32_t *atoff, *atl;  /* by template task: the edges whose waiting call (`at`) it is */
	uint32_t **ops;         /* by template rank, op kind and iteration: piece indices */
	uint32_t **nops;        /* how many */
	int32_t opk[NOP];       /* in the iteration being written, operations of each kind so far */
	/* the rank being written */
	int64_t rank, stage;
	struct nproc *rp;
	size_t nrp, caprp;
	uint32_t *last;         /* by new proc: its last task */
	size_t caplast;
	int64_t *instrank;      /* by template task: the new rank inst[] holds its copy for */
	struct pend *pd;
	size_t npd, cappd;
	uint32_t bfirst, blast; /* a backward step's first and last task on a backward thread */
	uint32_t compute;       /* the new rank's compute stream (the layers' kernels) */
	int64_t role_max;       /* the largest stream id traced: made streams go past it */
	int failed;             /* a message was printed */
	/* counts */
	size_t lost;            /* edges with nothing to join */
	uint8_t seen[KG_NCOLL * COMM_NLINK]; /* borrowed fits warned of */
};

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
static uint32_t
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
static uint32_t
new_proc(struct build *B, uint32_t tp)
{
	return role_proc(B, B->role[tp], &B->J->g->proc[tp]);
}

static uint32_t
intern_text(struct build *B, const char *s)
{
	size_t i;

	for (i = 0; i < B->nxstr; i++)
		if (strcmp(B->xstr[i], s) == 0)
			return B->J->g->nstr + (uint32_t)i;
	VEC_PUSH(B->xstr, B->nxstr, B->capxstr, xstrndup(s, strlen(s)));
	return B->J->g->nstr + (uint32_t)(B->nxstr - 1);
}

static void
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
	o = J->progout[sy];
	for (k = J->inoff[sx]; k < J->inoff[sx + 1]; k++)
		if (J->progout[g->edge[J->in[k]].src] == J->in[k])
			n = J->in[k];
	/* the template edge whose other end is the same call as here */
	if (o != KG_NONE && g->task[g->edge[o].dst].name == g->task[sx].name)
		e = o;
	else if (n != KG_NONE && g->task[g->edge[n].src].name == g->task[sy].name)
		e = n;
	else
		e = o != KG_NONE ? o : n;
	if (e != KG_NONE) {
		d = g->edge[e];
	} else {
		kg_edge_init(&d);
		d.kind = B->proc[B->t[x].proc].kind == KG_THREAD ? KG_E_THREAD : KG_E_STREAM;
	}
	d.on = d.via = d.at = KG_NONE;
	add_edge(B, &d, y, x, KG_NONE, KG_NONE);
}

/* The three kinds of parts a template rank gives a new stage. */
struct ctx {
	int32_t it, mb;
	int64_t j;              /* new layer (global), -1 */
	int32_t jl;             /* new layer in the stage, -1 */
	uint8_t unit, part, op;
	int32_t k[64];          /* collectives so far by processor role slot */
};

/* A collective's key: its new group, its place. */
static void
coll_key(struct build *B, uint32_t nt, uint32_t u, const struct ctx *c, int32_t ord)
{
	const struct job *J = B->J;
	int coll = B->t[nt].coll;
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

/*
 * Add a new task t (its proc the new one) copied from template task u
 * (KG_NONE: made here): program order after the last task on its
 * processor, and the waits that were waiting for the next task there.
 */
static uint32_t
add_task(struct build *B, struct kg_task *t, uint32_t u)
{
	uint32_t nt = (uint32_t)B->nt, np = t->proc;
	size_t q;

	t->id = nt;
	VEC_PUSH(B->t, B->nt, B->capt, *t);
	grow(&B->tmpl, &B->captmpl, B->nt, sizeof(*B->tmpl));
	grow(&B->snap, &B->capsnap, B->nt, sizeof(*B->snap));
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

/* Write one piece's copy; its own edges, and those it anchors. */
static void
emit(struct build *B, const struct piece *pc, struct ctx *c)
{
	const struct job *J = B->J;
	const struct graph *g = J->g;
	uint32_t i, k;

	if (pc == NULL)
		return;
	for (i = 0; i < pc->n; i++) {
		uint32_t u = J->pt[pc->first + i], nt;
		struct kg_task t = g->task[u];

		t.proc = new_proc(B, g->task[u].proc);
		t.stage = B->stage;
		if (c->unit == U_F || c->unit == U_B)
			t.mb = c->mb;
		t.layer = c->part == P_LAYER ? c->j : -1;
		nt = add_task(B, &t, u);
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

/* The template piece of rank k for a place, iteration it. */
static const struct piece *
find(const struct job *J, int64_t k, int32_t it, int unit, int32_t mb, int part, int32_t a)
{
	struct place pl;

	memset(&pl, 0, sizeof(pl));
	pl.it = it, pl.unit = (uint8_t)unit, pl.mb = mb, pl.part = (uint8_t)part, pl.a = a;
	return job_piece(J, (uint32_t)k, &pl);
}

struct stagecfg {
	int64_t prim;           /* the template rank for layers, prologue, epilogue */
	/* template ranks whose parts outside the layers come along, by
	 * [unit F or B][before or after the layers] */
	int64_t ends[2][2][2];
	int nends[2][2];
	int64_t n2, lo2;        /* the new stage's layers */
	int64_t nsrc;           /* the primary's */
};

/* Source layer (in the primary's stage) of the stage's new layer j. */
static int32_t
src_layer(const struct stagecfg *sc, int64_t j)
{
	int64_t n = sc->nsrc, nn = sc->n2;

	if (nn >= n)
		return (int32_t)(j * n / nn);
	if (nn == 1)
		return 0;
	return (int32_t)((2 * j * (n - 1) + (nn - 1)) / (2 * (nn - 1)));
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
	t.name = intern_text(B, "cudaLaunchKernel");
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

#define OPS1(o, m) do { int32_t mm[NOP] = { 0 }; mm[o] = (m); ops(B, sc, it, 1 << (o), mm); } while (0)

static void
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
static void
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
static uint32_t
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

/* Scale the data-parallel gradients and the optimizer to the new stage's parameters. */
static int
gradients(struct build *B, size_t from, const struct stagecfg *sc)
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
		const struct kg_task *t = &B->t[i];
		uint32_t u = B->tmpl[i];

		if (u != KG_NONE && t->kind == KG_COLL && J->cgroup[u] != UINT32_MAX &&
		    J->pg.g[J->cgroup[u]].dp && (t->phase == KG_PH_BWD || t->phase == KG_PH_OPT) &&
		    t->iter == B->t[from].iter)
			kept += (double)t->bytes;
	}
	if (J->pg.dp < 2 || kept <= 0 || prim <= 0 || J->P <= 0) {
		pr = J->P > 0 && J->S == 1 ? share : (double)sc->n2 / (double)sc->nsrc;
		ratio = 1;
	} else {
		ratio = target / kept;
		pr = share;
	}
	for (i = from; i < B->nt; i++) {
		struct kg_task *t = &B->t[i];
		uint32_t u = B->tmpl[i];
		const struct pgroup *gp;

		if (u == KG_NONE)
			continue; /* a send or receive made here */
		gp = J->cgroup[u] == UINT32_MAX ? NULL : &J->pg.g[J->cgroup[u]];

		if ((t->kind == KG_KERN && t->phase == KG_PH_OPT) ||
		    (t->kind == KG_SET && J->pl[u].unit == U_PRO)) {
			t->dur = llround((double)t->dur * pr);
		} else if (gp != NULL && gp->dp && (t->phase == KG_PH_BWD || t->phase == KG_PH_OPT) &&
		    t->bytes > 0 && ratio != 1) {
			uint64_t b = (uint64_t)llround((double)t->bytes * ratio);
			int a1, a2;
			int64_t told = comm_time(&J->m, t->coll, gp->size, t->bytes, gp->link, &a1);
			int64_t tnew = comm_time(&J->m, t->coll, gp->size, b, gp->link, &a2);

			if (told <= 0 || tnew < 0) {
				errmsg("%s: section %d: no %s in the job to fit the communication "
				    "model on", J->name, J->index, kg_coll_name[t->coll]);
				return 1;
			}
			if (pgroups_borrowed(&J->m, t->coll, gp->link, B->seen, msg, sizeof(msg)))
				warnmsg("%s: section %d: %s", J->name, J->index, msg);
			t->dur = llround((double)t->dur * (double)tnew / (double)told);
			t->bytes = b;
		}
	}
	return 0;
}

/* A collective whose group now spans nodes, or no longer does, re-timed for the link. */
static int
relink(struct build *B)
{
	const struct job *J = B->J;
	size_t i;

	for (i = 0; i < B->nkey; i++) {
		struct kg_task *t = &B->t[B->key[i].task];
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
		told = comm_time(&J->m, t->coll, gp->size, t->bytes, gp->link, &a1);
		tnew = comm_time(&J->m, t->coll, gp->size, t->bytes, link, &a2);
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
		t->dur = llround((double)t->dur * (double)tnew / (double)told);
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
static size_t
meetings(struct build *B)
{
	size_t i, j, bad = 0;

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
	B.viaon = xmalloc((g->ntask + 1) * sizeof(*B.viaon));
	B.inst = xmalloc((g->ntask + 1) * sizeof(*B.inst));
	B.instrank = xmalloc((g->ntask + 1) * sizeof(*B.instrank));
	for (i = 0; i < g->ntask; i++)
		B.viaon[i] = B.inst[i] = KG_NONE, B.instrank[i] = -1;
	for (i = 0; i < g->nedge; i++)
		if (g->edge[i].via != KG_NONE && g->edge[i].on != KG_NONE)
			B.viaon[g->edge[i].via] = g->edge[i].on;
	B.atoff = xcalloc(g->ntask + 2, sizeof(*B.atoff));
	B.atl = xmalloc((g->nedge + 1) * sizeof(*B.atl));
	for (i = 0; i < g->nedge; i++)
		if (g->edge[i].at != KG_NONE)
			B.atoff[g->edge[i].at + 1]++;
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
				if (B.failed || gradients(&B, from, &sc) != 0)
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
	h = g->h;
	h.ranks = ranks, h.t0 = t0, h.clk = clk;
	h.nranks = (size_t)W2;
	h.world = W2;
	memset(&go, 0, sizeof(go));
	go.h = &h;
	go.xstr = (const char *const *)B.xstr, go.nxstr = B.nxstr;
	go.proc = B.proc, go.nproc = B.np;
	go.task = B.t, go.ntask = B.nt;
	go.edge = B.e, go.nedge = B.ne;
	if (graph_write(w, g, producer, &go) < 0) {
		errmsg("%s", w->err);
		goto out;
	}
	rc = 0;
out:
	free(ranks), free(t0), free(clk);
	for (i = 0; i < (size_t)J->world; i++)
		free(B.ops[i]), free(B.nops[i]);
	free(B.ops), free(B.nops);
	for (i = 0; i < B.nxstr; i++)
		free(B.xstr[i]);
	free(B.xstr), free(B.role), free(B.viaon), free(B.inst), free(B.instrank), free(B.t);
	free(B.atoff), free(B.atl);
	free(B.tmpl);
	free(B.snap), free(B.e), free(B.proc), free(B.key), free(B.rp), free(B.last), free(B.pd);
	return rc;
}
