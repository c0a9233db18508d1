/*
 * graph-scale-dp: the all-reduces a DistributedDataParallel job traced at
 * world size 1 asked for and NCCL, alone, did not run (see make.h).
 */
#include <stdlib.h>
#include <string.h>

#include "graph-scale-dp/make.h"
#include "util.h"

/* Elements of the first tensor of an Input Dims text ("[[[4196352]],[]]"
 * or "[[4196352],[]]"); 0 when there is none or it overflows. */
static int64_t
first_numel(const char *dims)
{
	const char *p = dims;
	int64_t n = 1, v = 0;
	int digits = 0, any = 0;

	while (*p == '[')
		p++;
	for (;; p++) {
		if (*p >= '0' && *p <= '9') {
			if (v > (INT64_MAX - 9) / 10)
				return 0;
			v = v * 10 + (*p - '0'), digits = 1;
			continue;
		}
		if (digits) {
			if (v != 0 && n > INT64_MAX / v)
				return 0;
			n *= v, v = 0, digits = 0, any = 1;
		}
		if (*p != ',')
			break;
	}
	return any ? n : 0;
}

static int
is_name(const struct kg_reader *r, uint32_t id, const char *s)
{
	return id != KG_NONE && strcmp(kg_str(r, id), s) == 0;
}

int
dp_request(const struct kg_reader *r, const struct kg_task *t)
{
	return t->kind == KG_RT && is_name(r, t->op, "record_param_comms") &&
	    strstr(kg_str(r, t->name), "StreamWaitEvent") != NULL && t->shapes != KG_NONE &&
	    first_numel(kg_str(r, t->shapes)) > 0;
}

int
dp_skipped(const struct graph *g, const struct kg_reader *r)
{
	size_t i;
	int asked = 0;

	for (i = 0; i < g->ntask; i++) {
		if (g->task[i].kind == KG_COLL)
			return 0;
		if (dp_request(r, &g->task[i]))
			asked = 1;
	}
	return asked;
}

struct req {
	uint32_t call, ready; /* the request, the kernel it waits for (KG_NONE) */
	int64_t ts;
};

static int
cmp_req(const void *a, const void *b)
{
	const struct req *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

int
dp_make(const struct graph *g, const struct kg_reader *r, struct kg_writer *w,
    const char *tool, size_t *nmade)
{
	const char *xstr[3] = {
		"ncclDevKernel_AllReduce_Sum_f32 (made: NCCL runs none at world size 1)",
		"Float", "[0]"
	};
	uint32_t kname = g->nstr, fl = g->nstr + 1, ranks = g->nstr + 2;
	uint32_t nccl = (uint32_t)g->nproc, *launched, *ready;
	size_t n = g->ntask, i, k, nreq = 0, capreq = 0, ntask = n, nedge = g->nedge;
	struct kg_proc *proc = xmalloc((g->nproc + 1) * sizeof(*proc));
	struct kg_task *task;
	struct kg_edge *edge;
	struct req *req = NULL;
	int64_t tid = 0, dev = 0;
	int rc;

	/* the processors, and a stream for NCCL beside the rank's others */
	for (i = 0; i < g->nproc; i++) {
		proc[i] = g->proc[i];
		if (g->proc[i].kind == KG_STREAM) {
			dev = g->proc[i].pid;
			if (g->proc[i].tid >= tid)
				tid = g->proc[i].tid + 1;
		}
	}
	memset(&proc[nccl], 0, sizeof(proc[nccl]));
	proc[nccl].id = nccl;
	proc[nccl].kind = KG_STREAM;
	proc[nccl].pid = dev;
	proc[nccl].tid = tid;
	proc[nccl].name = KG_NONE;
	proc[nccl].rank = g->nproc > 0 ? g->proc[0].rank : -1;

	/* what each launch call launched; each thread's last kernel so far
	 * (task ids rise along a processor) */
	launched = xmalloc((n + 1) * sizeof(*launched));
	ready = xmalloc((g->nproc + 1) * sizeof(*ready));
	for (i = 0; i < n; i++)
		launched[i] = KG_NONE;
	for (i = 0; i < g->nproc; i++)
		ready[i] = KG_NONE;
	for (i = 0; i < g->nedge; i++)
		if (g->edge[i].kind == KG_E_LAUNCH && g->edge[i].src < n && g->edge[i].dst < n &&
		    g->task[g->edge[i].dst].kind == KG_KERN)
			launched[g->edge[i].src] = g->edge[i].dst;
	for (i = 0; i < n; i++) {
		const struct kg_task *t = &g->task[i];

		if (launched[i] != KG_NONE)
			ready[t->proc] = launched[i];
		if (dp_request(r, t)) {
			struct req q = { (uint32_t)i, ready[t->proc], t->ts };

			VEC_PUSH(req, nreq, capreq, q);
		}
	}
	if (nreq > 1)
		qsort(req, nreq, sizeof(*req), cmp_req);

	task = xmalloc((n + nreq + 1) * sizeof(*task));
	memcpy(task, g->task, n * sizeof(*task));
	edge = xmalloc((g->nedge + 3 * nreq + nreq + 1) * sizeof(*edge));
	memcpy(edge, g->edge, g->nedge * sizeof(*edge));
	for (k = 0; k < nreq; k++) {
		const struct kg_task *t = &g->task[req[k].call];
		struct kg_task m;
		struct kg_edge e;

		kg_task_init(&m);
		m.id = (uint32_t)ntask;
		m.proc = nccl;
		m.name = kname;
		m.kind = KG_COLL;
		m.dur = m.odur = 0;
		m.ts = t->ts + t->dur;
		m.iter = t->iter;
		m.op = t->op;
		m.shapes = t->shapes;
		m.bytes = (uint64_t)first_numel(kg_str(r, t->shapes)) * 4;
		m.coll = KG_COLL_ALLREDUCE;
		m.gsize = 1;
		m.seq = (int64_t)k;
		m.pgr = ranks;
		m.dtype = fl;
		m.phase = t->phase;
		m.mb = t->mb;
		m.layer = -1;
		m.stage = t->stage;
		task[ntask] = m;
		kg_edge_init(&e);
		e.src = req[k].call, e.dst = m.id, e.kind = KG_E_LAUNCH;
		edge[nedge++] = e;
		if (req[k].ready != KG_NONE) {
			kg_edge_init(&e);
			e.src = req[k].ready, e.dst = m.id, e.kind = KG_E_EVENT;
			edge[nedge++] = e;
		}
		if (k > 0) {
			kg_edge_init(&e);
			e.src = m.id - 1, e.dst = m.id, e.kind = KG_E_STREAM;
			edge[nedge++] = e;
		}
		ntask++;
	}
	/* DDP's finalize: the compute stream (that of the kernels the
	 * requests wait for) waits for an iteration's last all-reduce before
	 * its optimizer's first kernel */
	for (k = 0; k < nreq; k++) {
		uint32_t first = KG_NONE, s;
		int64_t it = g->task[req[k].call].iter;

		if ((k + 1 < nreq && g->task[req[k + 1].call].iter == it) ||
		    req[k].ready == KG_NONE)
			continue;
		s = g->task[req[k].ready].proc;
		for (i = 0; i < n && first == KG_NONE; i++)
			if (g->task[i].proc == s && g->task[i].iter == it &&
			    g->task[i].phase == KG_PH_OPT)
				first = (uint32_t)i;
		if (first != KG_NONE) {
			struct kg_edge e;

			kg_edge_init(&e);
			e.src = (uint32_t)(n + k), e.dst = first, e.kind = KG_E_EVENT;
			edge[nedge++] = e;
		}
	}
	*nmade = nreq;
	{
		struct graph_out go;

		memset(&go, 0, sizeof(go));
		go.xstr = xstr, go.nxstr = 3;
		go.proc = proc, go.nproc = g->nproc + 1;
		go.task = task, go.ntask = ntask;
		go.edge = edge, go.nedge = nedge;
		rc = graph_write(w, g, tool, &go);
	}
	free(proc), free(launched), free(ready), free(req), free(task), free(edge);
	return rc;
}
