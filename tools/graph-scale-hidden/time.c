/*
 * graph-scale-hidden's times: kernels re-timed for their calls' new shapes
 * (common/reshape.h: the op model's ratio, else FLOPs or bytes), the
 * optimizer by the parameter count, collectives by the communication
 * model, and kernel launches that waited on a full launch queue.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "comm.h"
#include "hid.h"
#include "pgroup.h"
#include "reshape.h"
#include "util.h"

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
hid_unblock_launches(struct graph *g, const struct kg_reader *r)
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
gpu_factor(const struct opts *o, const struct om_call *c)
{
	struct om_desc dt, ds;
	double pt, pf;
	int v1, v2;

	if (!o->have_src)
		return 1;
	if (om_describe(c, o->to.sms, &dt) < 0 || om_describe(c, o->src.sms, &ds) < 0)
		return 1;
	pt = om_predict(&o->to, &dt, &v1);
	pf = om_predict(&o->src, &ds, &v2);
	if (pt > 0 && pf > 0 && v1 == v2)
		return pt / pf;
	if (dt.sized && ds.sized)
		return om_roofline_us(&o->to, &dt) / om_roofline_us(&o->src, &ds);
	return o->src.bytes_s / o->to.bytes_s;
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
hid_retime(const struct opts *o, struct graph *g, const struct kg_reader *r, struct pairs *ps,
    double pratio, struct counts *cn)
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
		const struct pair *p = hid_pair_of(ps, t);
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
			fv->fac = rs_factor(o->have_to ? &o->to : NULL, 132, &oc,
			    p != NULL && p->text != NULL ? p->text : oc.dims, &fv->how);
			fv->cls = om_describe(&oc, 132, &d);
			fv->gpu = gpu_factor(o, &oc);
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
hid_retime_colls(struct graph *g, const struct kg_reader *r, double pratio, double aratio, struct counts *cn)
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
