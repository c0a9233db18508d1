/*
 * resize: a section's (operator, dims) pairs and its times for their new
 * dims (see resize.h). The pairs' table is open addressing on the two
 * string ids; it only finds and counts. The times: kernels re-timed for
 * their calls' new shapes (common/reshape.h: the op model's ratio, else
 * FLOPs or bytes), the optimizer by the parameter count, collectives by
 * the communication model, and kernel launches that waited on a full
 * launch queue.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "comm.h"
#include "pgroup.h"
#include "reshape.h"
#include "resize.h"
#include "util.h"

static uint64_t
pkey(uint32_t op, uint32_t sh)
{
	uint64_t k = ((uint64_t)op << 32 | sh) * 0x9E3779B97F4A7C15ull;

	return k ^ (k >> 29);
}

static struct rz_pair *
pairs_get(struct rz_pairs *ps, uint32_t op, uint32_t sh, int *isnew)
{
	size_t i;

	if (2 * (ps->n + 1) > ps->nslot) {
		size_t ns = ps->nslot ? 2 * ps->nslot : 256, k;

		free(ps->slot);
		ps->slot = xcalloc(ns, sizeof(*ps->slot));
		ps->nslot = ns;
		for (k = 0; k < ps->n; k++) {
			i = pkey(ps->p[k].op, ps->p[k].sh) & (ns - 1);
			while (ps->slot[i])
				i = (i + 1) & (ns - 1);
			ps->slot[i] = (uint32_t)k + 1;
		}
	}
	i = pkey(op, sh) & (ps->nslot - 1);
	while (ps->slot[i]) {
		struct rz_pair *p = &ps->p[ps->slot[i] - 1];

		if (p->op == op && p->sh == sh) {
			*isnew = 0;
			return p;
		}
		i = (i + 1) & (ps->nslot - 1);
	}
	{
		struct rz_pair p = { op, sh, sh, 0, NULL };

		VEC_PUSH(ps->p, ps->n, ps->cap, p);
	}
	ps->slot[i] = (uint32_t)ps->n;
	*isnew = 1;
	return &ps->p[ps->n - 1];
}

void
rz_pairs_release(struct rz_pairs *ps)
{
	size_t i;

	for (i = 0; i < ps->n; i++)
		free(ps->p[i].text);
	free(ps->p);
	free(ps->slot);
	memset(ps, 0, sizeof(*ps));
}

/* The operator a task's dims belong to: a CPU op's own name, else its op. */
static uint32_t
task_op(const struct kg_task *t)
{
	return t->kind == KG_CPU ? t->name : t->op;
}

/* Every (operator, dims) pair of the section, with its count of tasks. */
void
rz_pairs_collect(const struct graph *g, struct rz_pairs *ps)
{
	size_t i;

	for (i = 0; i < g->ntask; i++) {
		const struct kg_task *t = &g->task[i];
		uint32_t op = task_op(t);
		int isnew;

		if (t->shapes != KG_NONE && op != KG_NONE)
			pairs_get(ps, op, t->shapes, &isnew)->n++;
	}
}

/* The new dims text of a task's (operator, dims), or NULL: unchanged. */
const struct rz_pair *
rz_pair_of(struct rz_pairs *ps, const struct kg_task *t)
{
	int isnew;
	uint32_t op = task_op(t);

	if (t->shapes == KG_NONE || op == KG_NONE)
		return NULL;
	return pairs_get(ps, op, t->shapes, &isnew);
}

void
rz_section_init(struct rz_section *z, const struct graph *g, const struct kg_reader *r)
{
	size_t i;

	memset(&z->ps, 0, sizeof(z->ps));
	memset(&z->cn, 0, sizeof(z->cn));
	rs_strs_init(&z->rs, g->nstr);
	rz_pairs_collect(g, &z->ps);
	z->ops = xmalloc((z->ps.n + 1) * sizeof(*z->ops));
	for (i = 0; i < z->ps.n; i++) {
		z->ops[i].op = kg_str(r, z->ps.p[i].op);
		z->ops[i].dims = kg_str(r, z->ps.p[i].sh);
		z->ops[i].n = z->ps.p[i].n;
	}
}

void
rz_section_release(struct rz_section *z)
{
	rz_pairs_release(&z->ps);
	rs_strs_release(&z->rs);
	free(z->ops);
	z->ops = NULL;
}

void
rz_pairs_ids(struct rz_pairs *ps, struct rs_strs *rs)
{
	size_t i;

	for (i = 0; i < ps->n; i++) {
		struct rz_pair *p = &ps->p[i];

		if (p->text != NULL)
			p->nsh = rs_strs_id(rs, p->text);
	}
}

void
rz_pairs_apply(struct graph *g, struct rz_pairs *ps)
{
	size_t i;

	for (i = 0; i < g->ntask; i++) {
		const struct rz_pair *p = rz_pair_of(ps, &g->task[i]);

		if (p != NULL)
			g->task[i].shapes = p->nsh;
	}
}

/*
 * Kernel launches that waited for a free slot in the CUDA launch queue
 * (a GPU-bound step more than about a thousand kernels ahead of the GPU
 * blocks its host there): longer than LAUNCH_BLOCKED_NS and ten times
 * the section's median launch. Their wait was the traced GPU's work, not
 * host work that a new size keeps: each takes the median launch time,
 * and the simulated GPU sets the pace. Returns how many.
 */
#define LAUNCH_BLOCKED_NS 50000
int64_t
rz_unblock_launches(struct graph *g, const struct kg_reader *r)
{
	int64_t *d = NULL, med, n = 0;
	size_t nd = 0, capd = 0, i;

	for (i = 0; i < g->ntask; i++)
		if (g->task[i].kind == KG_RT && strstr(kg_str(r, g->task[i].name), "Launch"))
			VEC_PUSH(d, nd, capd, g->task[i].dur);
	if (nd == 0)
		return 0;
	qsort(d, nd, sizeof(*d), cmp_i64);
	med = d[nd / 2];
	free(d);
	for (i = 0; i < g->ntask; i++) {
		struct kg_task *t = &g->task[i];

		if (t->kind == KG_RT && t->dur > LAUNCH_BLOCKED_NS && t->dur > 10 * med &&
		    strstr(kg_str(r, t->name), "Launch")) {
			t->dur = med;
			n++;
		}
	}
	return n;
}

/* graph-retime's factor between two GPUs for a call with the traced shapes. */
static double
gpu_factor(const struct om_model *to, const struct om_model *src, const struct om_call *c)
{
	struct om_desc dt, ds;
	double pt, pf;
	int v1, v2;

	if (src == NULL)
		return 1;
	if (om_describe(c, to->sms, &dt) < 0 || om_describe(c, src->sms, &ds) < 0)
		return 1;
	pt = om_predict(to, &dt, &v1);
	pf = om_predict(src, &ds, &v2);
	if (pt > 0 && pf > 0 && v1 == v2)
		return pt / pf;
	if (dt.sized && ds.sized)
		return om_roofline_us(to, &dt) / om_roofline_us(src, &ds);
	return src->bytes_s / to->bytes_s;
}

/* Calls alike (operator, shapes, longest kernel's name, kind, bytes) get
 * one factor: a graph repeats a few hundred shapes over its calls. */
struct fkey {
	uint32_t op, sh, ty, name, kind;
	uint64_t bytes;
};

struct fval {
	struct fkey key;
	int set, how, cls;
	double fac, gpu;
};

static struct fval *
fcache_get(struct fval *v, size_t cap, const struct fkey *k)
{
	size_t i = (size_t)XXH3_64bits(k, sizeof(*k)) & (cap - 1);

	while (v[i].set && memcmp(&v[i].key, k, sizeof(*k)) != 0)
		i = (i + 1) & (cap - 1);
	v[i].key = *k;
	return &v[i];
}

/* Re-time the section's GPU tasks in place. */
void
rz_retime(const struct om_model *to, const struct om_model *src, struct graph *g,
    const struct kg_reader *r, struct rz_pairs *ps, double pratio, struct rz_counts *cn)
{
	size_t i, ng = 0;
	struct om_task *ot = xmalloc((g->ntask + 1) * sizeof(*ot));
	size_t *idx = xmalloc((g->ntask + 1) * sizeof(*idx));
	uint32_t *call, nc, c;
	size_t *top, cap = 64;
	double *fac;
	struct fval *cache;

	for (i = 0; i < g->ntask; i++) {
		const struct kg_task *t = &g->task[i];

		if (t->kind != KG_KERN && t->kind != KG_CPY && t->kind != KG_SET)
			continue;
		ot[ng].id = t->id, ot[ng].proc = t->proc, ot[ng].op = t->op;
		ot[ng].sh = t->shapes, ot[ng].name = t->name, ot[ng].kind = t->kind;
		ot[ng].it = t->iter, ot[ng].ts = t->ts, ot[ng].dur = t->dur;
		ot[ng].bytes = t->bytes, ot[ng].ocall = t->ocall;
		idx[ng++] = i;
	}
	call = xmalloc((ng + 1) * sizeof(*call));
	nc = om_calls(ot, ng, call);
	top = xmalloc((nc + 1) * sizeof(*top));
	fac = xmalloc((nc + 1) * sizeof(*fac));
	for (c = 0; c < nc; c++)
		top[c] = SIZE_MAX;
	for (i = 0; i < ng; i++)
		if ((c = call[i]) != UINT32_MAX &&
		    (top[c] == SIZE_MAX || ot[i].dur > ot[top[c]].dur))
			top[c] = i;
	while (cap < 2 * (size_t)nc + 2)
		cap *= 2;
	cache = xcalloc(cap, sizeof(*cache));
	for (c = 0; c < nc; c++) {
		const struct kg_task *t = &g->task[idx[top[c]]];
		const struct rz_pair *p = rz_pair_of(ps, t);
		struct fkey key;
		struct fval *fv;
		struct om_call oc;
		struct om_desc d;
		int how, cls;

		oc.op = t->op != KG_NONE ? kg_str(r, t->op) : "";
		oc.dims = t->shapes != KG_NONE ? kg_str(r, t->shapes) : NULL;
		oc.types = t->itypes != KG_NONE ? kg_str(r, t->itypes) : NULL;
		oc.kernel = kg_str(r, t->name);
		oc.kind = t->kind, oc.bytes = t->bytes, oc.layout = -1;
		memset(&key, 0, sizeof(key));
		key.op = t->op, key.sh = t->shapes, key.ty = t->itypes, key.name = t->name;
		key.kind = (uint32_t)t->kind, key.bytes = t->bytes;
		fv = fcache_get(cache, cap, &key);
		if (!fv->set) {
			fv->fac = rs_factor(to, 132, &oc,
			    p != NULL && p->text != NULL ? p->text : oc.dims, &fv->how);
			fv->cls = om_describe(&oc, 132, &d);
			fv->gpu = gpu_factor(to, src, &oc);
			fv->set = 1;
		}
		fac[c] = fv->fac;
		how = fv->how;
		cls = fv->cls;
		if ((how == RS_UNSIZED || how == RS_SAME) && cls == OM_OPTIM) {
			/* the optimizer's tensor lists, whose sizes the
			 * profiler does not record ([[],[]]): its work is
			 * per parameter */
			fac[c] = pratio;
			if (pratio != 1)
				cn->optim++;
		} else if (t->kind == KG_KERN && pratio != 1 && (oc.dims == NULL || how == RS_UNSIZED)) {
			cn->unsized++; /* no shapes to scale by: kept */
		}
		cn->model += how == RS_MODEL;
		cn->flops += how == RS_FLOPS;
		cn->bytes += how == RS_BYTES;
		fac[c] *= fv->gpu;
	}
	free(cache);
	for (i = 0; i < ng; i++) {
		struct kg_task *t = &g->task[idx[i]];

		if ((c = call[i]) != UINT32_MAX && fac[c] != 1)
			t->dur = llround((double)t->dur * fac[c]);
	}
	free(ot);
	free(idx);
	free(call);
	free(top);
	free(fac);
}

/*
 * Collectives: gradients (the data-parallel groups' reductions in the
 * backward and optimizer phases) move the new parameter bytes,
 * activations (point to point, and the forward-phase reductions of a
 * tensor-parallel group) the new hidden size's; each re-timed by the
 * communication model fitted on the job's own collectives (for a link
 * the job never used, the built-in topology of the GPU the header names,
 * h100 where none matches: comm_topology_default), as its traced time
 * times model(new bytes) / model(traced bytes).
 */
void
rz_retime_colls(struct graph *g, const struct kg_reader *r, double pratio, double aratio,
    struct rz_counts *cn)
{
	const struct kg_task **ct;
	uint32_t *grp;
	struct pgroups pg;
	struct comm_given given;
	struct comm_model m;
	size_t i, nc = 0;
	int64_t gpn = 8;

	for (i = 0; i < g->ntask; i++)
		nc += g->task[i].kind == KG_COLL;
	if (nc == 0 || (pratio == 1 && aratio == 1))
		return;
	ct = xmalloc(nc * sizeof(*ct));
	grp = xmalloc(nc * sizeof(*grp));
	pgroups_init(&pg, gpn);
	nc = 0;
	for (i = 0; i < g->ntask; i++) {
		const struct kg_task *t = &g->task[i];

		if (t->kind != KG_COLL)
			continue;
		ct[nc] = t;
		grp[nc++] = t->pgr != KG_NONE ? pgroups_of(&pg, t->pgr, kg_str(r, t->pgr)) : UINT32_MAX;
	}
	pgroups_classify(&pg, ct, grp, nc);
	memset(&given, 0, sizeof(given));
	comm_topology_builtin(comm_topology_default(g->h.gpu, NULL, 0), &given, 0);
	pgroups_fit(&pg, ct, grp, nc, &given, &m);
	for (i = 0; i < nc; i++) {
		struct kg_task *t = (struct kg_task *)ct[i];
		const struct pgroup *gr = grp[i] == UINT32_MAX ? NULL : &pg.g[grp[i]];
		int64_t n = t->gsize > 0 ? t->gsize : gr != NULL ? gr->size : 1, t0, t1;
		int link = gr != NULL ? gr->link : COMM_INTRA, a0, a1;
		double f = 1;
		uint64_t nb;

		if (t->bytes <= 1024)
			continue; /* a scalar: a loss, a norm */
		if (pgroups_p2p(t->coll) || (gr != NULL && gr->fwd))
			f = aratio;
		else if (gr == NULL || gr->dp || t->phase == KG_PH_BWD || t->phase == KG_PH_OPT)
			f = pratio;
		if (f == 1)
			continue;
		nb = (uint64_t)llround((double)t->bytes * f);
		cn->colls++;
		if (n >= 2 && t->coll > KG_COLL_NONE && t->coll < KG_NCOLL) {
			t0 = comm_time(&m, t->coll, n, t->bytes, link, &a0);
			t1 = comm_time(&m, t->coll, n, nb, link, &a1);
			/* a class the job had no sample of is the built-in's,
			 * the least of NCCL's protocols (a fit's never is) */
			cn->collassumed += m.c[t->coll][link].least;
			if (t0 > 0 && t1 >= 0)
				t->dur = llround((double)t->dur * (double)t1 / (double)t0);
		}
		t->bytes = nb;
	}
	pgroups_release(&pg);
	free(ct);
	free(grp);
}

/*
 * The allocator's events (graphstat's memory estimate;
 * formats/graph-stream.md, "Memory: what an edit must keep"): a task
 * allocates what the operator it works for makes (the next kernel
 * launch on its thread: an activation's cast or norm, a product's
 * output, a weight's half copy), which grows as that operator's first
 * operand; f where no launch with shapes follows. Tasks are taken in id
 * order, by thread.
 */
void
rz_scale_memory(struct graph *g, const struct kg_reader *r, struct rz_pairs *ps, double f,
    double fopt, int layers)
{
	double *next = xmalloc((g->nproc + 1) * sizeof(*next));
	size_t i;

	for (i = 0; i < g->nproc; i++)
		next[i] = f;
	for (i = g->ntask; i-- > 0;) {
		struct kg_task *t = &g->task[i];
		const struct rz_pair *p = t->kind == KG_RT ? rz_pair_of(ps, t) : NULL;
		double ft;

		if (p != NULL && t->proc < g->nproc) {
			int64_t o = rs_first_numel(kg_str(r, p->sh));
			int64_t n = rs_first_numel(p->text != NULL ? p->text : kg_str(r, p->sh));

			next[t->proc] = o > 0 && n > 0 ? (double)n / (double)o : f;
		}
		if (t->mpeak < 0)
			continue;
		if (layers)
			ft = t->layer >= 0 ? (t->proc < g->nproc ? next[t->proc] : f) :
			    t->phase == KG_PH_OPT ? fopt : 1;
		else
			ft = t->phase == KG_PH_OPT ? fopt : t->proc < g->nproc ? next[t->proc] : f;
		if (ft == 1)
			continue;
		t->mnet = llround((double)t->mnet * ft);
		if (t->mexc >= 0)
			t->mexc = llround((double)t->mexc * ft);
	}
	free(next);
}
