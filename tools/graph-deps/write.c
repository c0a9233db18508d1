/*
 * write: graph-deps --merge's second pass (see merge.c's "Two passes").
 *
 * The job section: its header (ranks, clock offsets, each rank's start,
 * the GPU and the profiler's cost where the ranks agree), the job's
 * strings and processors, then each rank's held section read again in
 * rank order, its tasks written with the job's ids, strings and clock
 * and the transfer times match.c found, its edges to a second stream in
 * memory whose frames follow the last task; then the rank edges and the
 * coverage with the matched and unmatched counts. The job is read only
 * (but for each rank's new ids and the coverage); a write error is told
 * naming the output.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "intern.h"
#include "kg.h"
#include "merge.h"
#include "util.h"

int
cmp_rank(const void *a, const void *b)
{
	const struct rank *x = *(struct rank *const *)a, *y = *(struct rank *const *)b;

	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* A collective's id in the job section. */
static uint32_t
newid(const struct job *j, uint32_t col)
{
	const struct coll *c = &j->col[col];

	return (uint32_t)(j->rk[c->rk].newtask0 + c->task);
}

/*
 * The second pass over one rank: its held section read again, its
 * tasks written to w with the job's ids, strings and clock, its edges
 * to the edge stream e. -1 with the reason in err.
 */
static int
write_rank(const struct job *j, const struct rank *rk, int64_t shift, struct kg_writer *w,
    struct kg_writer *e, char *err, size_t errlen)
{
	FILE *fp = fmemopen(rk->z, rk->nz, "rb");
	struct kg_reader r;
	struct kg_rec rec;
	/* (j->col is NULL in a job without collectives) */
	const struct coll *c = rk->ncol > 0 ? j->col + rk->col0 : NULL;
	const struct coll *cend = rk->ncol > 0 ? c + rk->ncol : NULL;
	size_t ntask = 0;
	int t, rc = -1;

	if (fp == NULL) {
		snprintf(err, errlen, "rank %lld: %s", (long long)rk->rank, strerror(errno));
		return -1;
	}
	if (kg_reader_init(&r, fp) < 0) {
		snprintf(err, errlen, "rank %lld: %s", (long long)rk->rank, r.err);
		fclose(fp);
		return -1;
	}
	r.one_section = 1;
	kg_rec_init(&rec);
	while ((t = kg_read(&r, &rec)) > 0 && t != KG_R_END) {
		if (t == KG_R_TASK) {
			struct kg_task k = rec.task;

			k.id = (uint32_t)(rk->newtask0 + ntask);
			k.proc = (uint32_t)(k.proc + rk->newproc0);
			k.name = remap(rk->smap, rk->nsmap, k.name);
			k.op = remap(rk->smap, rk->nsmap, k.op);
			k.shapes = remap(rk->smap, rk->nsmap, k.shapes);
			k.itypes = remap(rk->smap, rk->nsmap, k.itypes);
			k.pg = remap(rk->smap, rk->nsmap, k.pg);
			k.pgr = remap(rk->smap, rk->nsmap, k.pgr);
			k.dtype = remap(rk->smap, rk->nsmap, k.dtype);
			k.ts += shift;
			if (c < cend && c->task == ntask) {
				if (c->dur >= 0)
					k.dur = c->dur;
				c++;
			}
			ntask++;
			if (kg_write_task(w, &k) < 0) {
				snprintf(err, errlen, "%s", w->err);
				goto out;
			}
		} else if (t == KG_R_EDGE) {
			struct kg_edge x = rec.edge;

			x.src = (uint32_t)(rk->newtask0 + x.src);
			x.dst = (uint32_t)(rk->newtask0 + x.dst);
			if (x.via != KG_NONE)
				x.via = x.via < ntask ? (uint32_t)(x.via + rk->newtask0) : KG_NONE;
			if (x.at != KG_NONE)
				x.at = x.at < ntask ? (uint32_t)(x.at + rk->newtask0) : KG_NONE;
			if (x.on != KG_NONE)
				x.on = x.on < rk->nproc ? (uint32_t)(x.on + rk->newproc0) : KG_NONE;
			if (kg_write_edge(e, &x) < 0) {
				snprintf(err, errlen, "%s", e->err);
				goto out;
			}
		}
	}
	if (t < 0 || ntask != rk->ntask)
		snprintf(err, errlen, "rank %lld: internal error: its section read again %s",
		    (long long)rk->rank, t < 0 ? r.err : "differs");
	else
		rc = 0;
out:
	kg_rec_release(&rec);
	kg_reader_release(&r);
	fclose(fp);
	return rc;
}

int
write_job(struct job *j, struct gout *g)
{
	struct kg_writer *w = &g->w, ew;
	struct rank **ord = xmalloc((j->nrk + 1) * sizeof(*ord));
	int64_t *ranks = xmalloc((j->nrk + 1) * sizeof(*ranks));
	int64_t *clk = xmalloc((j->nrk + 1) * sizeof(*clk));
	int64_t *t0 = xmalloc((j->nrk + 1) * sizeof(*t0)), first = INT64_MAX;
	const char **tools = xmalloc((j->ntools + 2) * sizeof(*tools));
	struct kg_header h;
	size_t i, t, e, nt = 0, np = 0, nedge = 0;
	int64_t tbase = INT64_MAX, world = -1;
	char *eb = NULL, err[512];
	size_t neb = 0;
	FILE *ef = NULL;
	int rc = -1, ewok = 0;

	err[0] = '\0';
	for (i = 0; i < j->nrk; i++) {
		ord[i] = &j->rk[i];
		if (j->rk[i].tbase < tbase)
			tbase = j->rk[i].tbase;
		if (j->rk[i].world > world)
			world = j->rk[i].world;
		if (j->rk[i].rank + 1 > world)
			world = j->rk[i].rank + 1;
	}
	qsort(ord, j->nrk, sizeof(*ord), cmp_rank);
	for (i = 0; i < j->nrk; i++) {
		ord[i]->newtask0 = nt;
		ord[i]->newproc0 = np;
		nt += ord[i]->ntask;
		np += ord[i]->nproc;
		ranks[i] = ord[i]->rank;
		clk[i] = ord[i]->clk;
	}
	/* Where each rank's graph begins on the job's clock. */
	for (i = 0; i < j->nrk; i++) {
		int64_t lo = ord[i]->tsmin;

		t0[i] = lo == INT64_MAX ? 0 : lo + ord[i]->tbase - tbase - ord[i]->clk;
		if (t0[i] < first)
			first = t0[i];
	}
	for (i = 0; i < j->nrk; i++)
		t0[i] -= first;
	if (j->niters > 1)
		qsort(j->iters, j->niters, sizeof(*j->iters), cmp_i64);
	for (i = 0; i < j->ntools; i++)
		tools[i] = j->tools[i];
	tools[j->ntools] = PRODUCER;
	memset(&h, 0, sizeof(h));
	h.producer = PRODUCER;
	h.rank = -1;
	h.world = world;
	h.source = "";
	h.iters = j->iters;
	h.niters = j->niters;
	h.tbase = tbase;
	h.tools = tools;
	h.ntools = j->ntools + 1;
	h.ranks = ranks;
	h.clk = clk;
	h.t0 = t0;
	/* the GPU, where every rank says the same */
	h.gpu = ord[0]->gpu;
	h.gpu_mem = ord[0]->gpu_mem;
	h.gpu_sms = ord[0]->gpu_sms;
	for (i = 1; i < j->nrk; i++) {
		if (strcmp(ord[i]->gpu, h.gpu) != 0)
			h.gpu = "";
		if (ord[i]->gpu_mem != h.gpu_mem)
			h.gpu_mem = -1;
		if (ord[i]->gpu_sms != h.gpu_sms)
			h.gpu_sms = -1;
	}
	/* The profiler's cost: the ranks' own ride on their tasks; the job
	 * says how it was found where every rank says the same (else the
	 * least sure of them: estimated over given over calibrated), the
	 * cost where they agree, and the step its slowest rank was
	 * calibrated to. */
	{
		static const char *const pname[] = { NULL, "given", "estimated", "calibrated" };
		int pc = ord[0]->pcal;

		h.pcost = ord[0]->pcost;
		h.ustep = ord[0]->ustep;
		for (i = 1; i < j->nrk; i++) {
			if (ord[i]->pcal != pc)
				pc = pc == 0 || ord[i]->pcal == 0 ? 0 : 2;
			if (ord[i]->pcost != h.pcost)
				h.pcost = -1;
			if (ord[i]->ustep > h.ustep)
				h.ustep = ord[i]->ustep;
		}
		h.pcal = pname[pc];
		if (pc != 3)
			h.ustep = -1;
	}
	h.nranks = j->nrk;
	/* This thread decodes all along as the writers' threads compress the
	 * job and its edges: one each is enough (more take its CPU). */
	kg_writer_threads(w, 1);
	if (kg_write_header(w, &h) < 0)
		goto out;
	for (i = 0; i < j->str.n; i++)
		if (kg_write_str(w, (uint32_t)i, j->str.str[i], j->str.len[i]) < 0)
			goto out;
	for (i = 0; i < j->nrk; i++)
		for (t = 0; t < ord[i]->nproc; t++) {
			struct kg_proc p = j->proc[ord[i]->proc0 + t];

			p.id = (uint32_t)(ord[i]->newproc0 + t);
			if (kg_write_proc(w, &p) < 0)
				goto out;
		}
	/* The tasks, rank by rank; the edges meanwhile to a stream in
	 * memory, whose frames follow the last task as they are. */
	ef = open_memstream(&eb, &neb);
	if (ef == NULL || kg_writer_init(&ew, ef, KG_LEVEL) < 0) {
		snprintf(err, sizeof(err), "%s", ef == NULL ? strerror(errno) : ew.err);
		goto out;
	}
	ewok = 1;
	kg_writer_threads(&ew, 1);
	for (i = 0; i < j->nrk; i++) {
		if (write_rank(j, ord[i], ord[i]->tbase - tbase - ord[i]->clk, w, &ew, err,
		    sizeof(err)) < 0)
			goto out;
		nedge += ord[i]->nedge;
	}
	if (kg_writer_finish(&ew) < 0) {
		snprintf(err, sizeof(err), "%s", ew.err);
		goto out;
	}
	kg_writer_release(&ew);
	ewok = 0;
	if (fclose(ef) != 0) {
		ef = NULL;
		snprintf(err, sizeof(err), "%s", strerror(errno));
		goto out;
	}
	ef = NULL;
	if (kg_write_frames(w, eb, neb) < 0)
		goto out;
	for (e = 0; e < nedge; e++)
		kg_writer_count(w, KG_R_EDGE);
	for (e = 0; e < j->nre; e++) {
		struct kg_edge x;

		kg_edge_init(&x);
		x.src = newid(j, j->re[e].src);
		x.dst = newid(j, j->re[e].dst);
		x.kind = KG_E_RANK;
		x.how = j->re[e].how;
		if (kg_write_edge(w, &x) < 0)
			goto out;
	}
	{
		uint64_t all = 0, matched = 0;
		char name[64];

		for (i = 0; i < j->nrk; i++) {
			all += ord[i]->colls;
			matched += ord[i]->matched;
			if (ord[i]->colls > ord[i]->matched) {
				snprintf(name, sizeof(name), "coll_unmatched:%lld", (long long)ord[i]->rank);
				kg_cov_add(&j->cov, name, (int64_t)(ord[i]->colls - ord[i]->matched));
			}
		}
		kg_cov_add(&j->cov, "coll_matched", (int64_t)matched);
		kg_cov_add(&j->cov, "coll_unmatched", (int64_t)(all - matched));
	}
	if (kg_write_cov(w, &j->cov) < 0 || kg_write_end(w) < 0)
		goto out;
	rc = 0;
out:
	if (rc < 0)
		errmsg("%s: %s", g->name, err[0] != '\0' ? err : w->err);
	if (ewok)
		kg_writer_release(&ew);
	if (ef != NULL)
		fclose(ef);
	free(eb);
	free(ord);
	free(ranks);
	free(clk);
	free(t0);
	free(tools);
	return rc < 0 ? 1 : 0;
}
