/*
 * Building the graph of one trace: which events become tasks, their
 * iteration, and the dependencies of formats/graph-stream.md with the
 * rules of kineto2graph(1). The rules, in the order they run:
 *
 * 1. Iterations. ProfilerStep#N ranges on the CPU give iteration N to
 *    every CPU event that starts inside one; a GPU task takes its launch's
 *    iteration (its own start if it has no launch in the trace).
 * 2. Flattening. On each thread, CPU ops nest. The tasks are the leaves:
 *    runtime calls always, and CPU ops with no event inside them. The
 *    host time of the enclosing ops (and of Python between ops) lives on
 *    as the delay of the `thread` edge between consecutive leaves, so a
 *    thread's timeline replays exactly. User annotations are ranges, not
 *    tasks.
 * 3. Launches join by correlation; streams are serial in start order.
 * 4. Runtime calls are walked in time order across threads, tracking the
 *    last task launched on each stream, to bind synchronizations and
 *    event waits (explicit from cuda_sync records, else inferred).
 *    A launch call whose work began before it returned keeps its time
 *    until then; the rest is host time after it.
 * 5. Hand-off between the main thread and threads that run CPU ops
 *    (autograd's backward thread).
 * 6. GPU gaps: time a GPU task waited beyond what holds it in the graph
 *    is bound to another stream's task that just ended, or kept as a
 *    delay (explain_gaps).
 * 7. Structure tags: phase, micro-batch, layer and stage (tags.c, infer.c),
 *    and recomputation (recompute.c).
 * 8. Allocator events go with the task that ran them (mem_attach).
 *
 * This file is the build's course (graph_build): the events gathered and
 * sorted, the tasks selected, numbered and written with their
 * processors, the thread, launch and stream edges, the coverage. The
 * rules' own work is elsewhere: steps.c rules 1 and 2, launch.c rule 3,
 * runtime.c rule 4, deps.c rules 5 and 6 and the writing of an edge,
 * task.c a task's record and rule 8; gb.h the state they share.
 */
#include <stdlib.h>
#include <string.h>

#include "commkern.h"
#include "gb.h"
#include "k2g.h"
#include "psort.h"
#include "util.h"

/*
 * The GPU the rank ran on: deviceProperties lists the node's devices
 * (8 on the DLRM and HTA traces), so the one is the device that most of
 * the selected GPU tasks ran on (a stream's pid is its device); with no
 * GPU task, the only device listed, if one is. When the GPU tasks ran
 * on no device listed and every device listed is of one kind, that kind:
 * the process saw only such GPUs (ROCm's kernels can carry the physical
 * device while deviceProperties numbers the visible ones from 0, as in
 * the vLLM MI300X trace).
 */
static void
set_gpu(const struct trace *t, const uint32_t *gpu, size_t ngpu, struct kg_header *h)
{
	int64_t best = -1, n, bestn = 0, *per;
	size_t i, j;

	h->gpu_mem = h->gpu_sms = -1;
	if (t->ndev == 0)
		return;
	if (ngpu == 0 && t->ndev == 1)
		best = t->dev[0].id;
	per = xcalloc(t->nproc + 1, sizeof(*per));
	for (j = 0; j < ngpu; j++)
		per[t->ev[gpu[j]].proc]++;
	for (i = 0; i < t->ndev; i++) {
		for (n = 0, j = 0; j < t->nproc; j++)
			if (t->proc[j].gpu && t->proc[j].pid == t->dev[i].id)
				n += per[j];
		if (n > bestn)
			best = t->dev[i].id, bestn = n;
	}
	free(per);
	if (ngpu > 0 && bestn == 0) {
		for (i = 1; i < t->ndev; i++)
			if (t->dev[i].name != t->dev[0].name || t->dev[i].sms != t->dev[0].sms ||
			    t->dev[i].mem != t->dev[0].mem)
				return;
		best = t->dev[0].id;
	}
	for (i = 0; i < t->ndev; i++) {
		if (t->dev[i].id != best)
			continue;
		if (t->dev[i].name != KG_NONE)
			h->gpu = t->str.str[t->dev[i].name];
		h->gpu_mem = t->dev[i].mem;
		h->gpu_sms = t->dev[i].sms;
		return;
	}
}

static int
cmp_cpu(const void *a, const void *b)
{
	const struct ev *x = &sort_ev[*(const uint32_t *)a];
	const struct ev *y = &sort_ev[*(const uint32_t *)b];

	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->dur != y->dur) /* the enclosing event first */
		return x->dur > y->dur ? -1 : 1;
	if (x->cls != y->cls) /* an op before the runtime call it makes */
		return x->cls < y->cls ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int
cmp_time(const void *a, const void *b)
{
	const struct ev *x = &sort_ev[*(const uint32_t *)a];
	const struct ev *y = &sort_ev[*(const uint32_t *)b];

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int
cmp_outproc(const void *a, const void *b, const struct trace *t, uint32_t main)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct tproc *p = &t->proc[x], *q = &t->proc[y];

	if (p->gpu != q->gpu)
		return p->gpu - q->gpu;
	if (!p->gpu && (x == main) != (y == main))
		return x == main ? -1 : 1;
	if (p->pid != q->pid)
		return p->pid < q->pid ? -1 : 1;
	if (p->tid != q->tid)
		return p->tid < q->tid ? -1 : 1;
	return 0;
}

static const struct trace *sort_trace;
static uint32_t sort_main;

static int
cmp_outproc_q(const void *a, const void *b)
{
	return cmp_outproc(a, b, sort_trace, sort_main);
}

int
graph_build(struct trace *t, const struct build_opts *o, struct kg_writer *w,
    struct kg_cov *cov, char *err, size_t errlen)
{
	struct gb g;
	struct kg_cov scratch;
	struct kg_header h;
	uint32_t *cpu = NULL, *gpu = NULL, *rts = NULL, *prevleaf, *procs = NULL;
	uint8_t *leaf;
	size_t ncpu = 0, ngpu = 0, nrt = 0, cap1 = 0, cap2 = 0, cap3 = 0, cap4 = 0, cap5 = 0;
	size_t i, nprocs = 0;
	int64_t tbase = INT64_MAX;
	int64_t *iters = NULL;
	size_t niters = 0;
	const char *tools[1];
	int rc = -1, tagged, run;
	uint32_t id;
	int64_t tagcount[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
	int64_t kcount[KG_NTASK_KIND] = { 0 }, ccount[3] = { 0, 0, 0 };
	char kname[KG_NTASK_KIND][16]; /* "tasks_KIND", the coverage's names */
	struct memtask mem;

	memset(&g, 0, sizeof(g));
	for (i = 0; i < KG_NTASK_KIND; i++)
		snprintf(kname[i], sizeof(kname[i]), "tasks_%s", kg_task_kind_name[i]);
	g.ckm = xcalloc(1, sizeof(*g.ckm));
	g.nrtc = t->str.n;
	g.rtc = xcalloc(g.nrtc + 1, sizeof(*g.rtc));
	memset(&mem, 0, sizeof(mem));
	g.t = t;
	g.o = o;
	g.w = w;
	comm_annotations(&g);

	/* Streams that only cuda_sync records name get their processor now,
	 * so the per-processor arrays below cover them. */
	for (i = 0; i < t->nsync; i++) {
		if (t->sync[i].stream >= 0)
			trace_proc(t, t->sync[i].device, t->sync[i].stream, 1);
		if (t->sync[i].wait_stream >= 0)
			trace_proc(t, t->sync[i].device, t->sync[i].wait_stream, 1);
	}
	if (find_steps(&g, err, errlen) < 0)
		goto out;
	g.noops = 1;
	for (i = 0; i < t->nev && g.noops; i++)
		if (t->ev[i].cls == EV_OP)
			g.noops = 0;
	if (g.nsteps == 0) {
		/* No ProfilerStep: the main thread is the one whose first CPU
		 * op comes first (Python's main thread starts the others);
		 * in a trace of runtime calls alone, whose first call does. */
		int64_t first = INT64_MAX;

		g.main_proc = KG_NONE;
		for (i = 0; i < t->nev; i++)
			if ((t->ev[i].cls == EV_OP || (g.noops && t->ev[i].cls == EV_RT)) &&
			    t->ev[i].ts < first)
				first = t->ev[i].ts, g.main_proc = t->ev[i].proc;
	}

	g.iter = xmalloc(t->nev * sizeof(*g.iter));
	g.sel = xcalloc(t->nev, 1);
	leaf = xcalloc(t->nev, 1);
	g.encl = xmalloc(t->nev * sizeof(*g.encl));
	g.launch = xmalloc(t->nev * sizeof(*g.launch));
	g.nextgpu = xmalloc(t->nev * sizeof(*g.nextgpu));
	umap_init(&g.newdur, 64);
	umap_init(&g.evmap, 64);
	umap_init(&g.evgap, 64);
	umap_init(&g.hoff, 64);
	for (i = 0; i < t->nev; i++) {
		const struct ev *e = &t->ev[i];

		g.encl[i] = g.launch[i] = g.nextgpu[i] = KG_NONE;
		g.iter[i] = INT32_MIN;
		if (e->cls == EV_OP || e->cls == EV_RT)
			VEC_PUSH(cpu, ncpu, cap1, (uint32_t)i);
		else if (is_gpu(e))
			VEC_PUSH(gpu, ngpu, cap2, (uint32_t)i);
	}
	sort_ev = t->ev;
	if (ncpu > 1)
		psort(cpu, ncpu, sizeof(*cpu), cmp_cpu);
	if (ngpu > 1)
		psort(gpu, ngpu, sizeof(*gpu), cmp_cpu);
	flatten(&g, cpu, ncpu, leaf);
	g.pev = xcalloc(t->nev, sizeof(*g.pev));
	profiled_events(&g, cpu, ncpu, leaf);
	join_launches(&g, cpu, ncpu, gpu, ngpu, cov);

	/* Selection: the tasks of the chosen iterations. */
	for (i = 0; i < t->nev; i++) {
		const struct ev *e = &t->ev[i];
		int task = is_gpu(e) || ((e->cls == EV_OP || e->cls == EV_RT) && leaf[i]);

		if (!task)
			continue;
		if (iter_selected(&g, g.iter[i])) {
			g.sel[i] = 1;
			VEC_PUSH(g.order, g.ntask, cap3, (uint32_t)i);
			if (e->ts < tbase)
				tbase = e->ts;
		} else {
			kg_cov_add(cov, "outside_iter", 1);
		}
	}
	if (t->nev == 0) {
		snprintf(err, errlen, "no trace events (not a Kineto trace?)");
		goto out_free;
	}
	if (g.ntask == 0) {
		snprintf(err, errlen, "no tasks in the selected iterations");
		goto out_free;
	}
	if (g.ntask > 1)
		psort(g.order, g.ntask, sizeof(*g.order), cmp_time);
	/* made only now: the peak is where the launches were joined, by a
	 * map of the correlation ids (32 MB of the 1 GB trace's 244) */
	g.task = xmalloc(t->nev * sizeof(*g.task));
	g.nextleaf = xmalloc(t->nev * sizeof(*g.nextleaf));
	for (i = 0; i < t->nev; i++)
		g.task[i] = g.nextleaf[i] = KG_NONE;
	/* ids: each run (task_run) a pass over the tasks in time order */
	for (run = 0, id = 0; run < 3; run++)
		for (i = 0; i < g.ntask; i++)
			if (task_run(&g, g.order[i]) == run)
				g.task[g.order[i]] = id++;

	/* Next selected leaf on each thread (blocking copies need it). */
	prevleaf = xmalloc(t->nproc * sizeof(*prevleaf));
	for (i = 0; i < t->nproc; i++)
		prevleaf[i] = KG_NONE;
	for (i = 0; i < ncpu; i++) {
		uint32_t x = cpu[i], p = t->ev[x].proc;

		if (!g.sel[x])
			continue;
		if (prevleaf[p] != KG_NONE)
			g.nextleaf[prevleaf[p]] = x;
		prevleaf[p] = x;
	}

	/* Output processors: threads (main first), then streams. */
	g.outproc = xmalloc(t->nproc * sizeof(*g.outproc));
	for (i = 0; i < t->nproc; i++)
		prevleaf[i] = 0, g.outproc[i] = KG_NONE;
	for (i = 0; i < g.ntask; i++)
		prevleaf[t->ev[g.order[i]].proc] = 1;
	procs = xmalloc(t->nproc * sizeof(*procs));
	for (i = 0; i < t->nproc; i++)
		if (prevleaf[i])
			procs[nprocs++] = (uint32_t)i;
	free(prevleaf);
	sort_trace = t;
	sort_main = g.main_proc;
	if (nprocs > 1)
		qsort(procs, nprocs, sizeof(*procs), cmp_outproc_q);
	for (i = 0; i < nprocs; i++)
		g.outproc[procs[i]] = (uint32_t)i;

	/* Runtime calls in time order; a dry pass settles sync durations. */
	for (i = 0; i < ncpu; i++)
		if (t->ev[cpu[i]].cls == EV_RT)
			VEC_PUSH(rts, nrt, cap4, cpu[i]);
	if (nrt > 1)
		psort(rts, nrt, sizeof(*rts), cmp_time);
	kg_cov_init(&scratch);
	g.cov = &scratch;
	g.dry = 1;
	bind_runtime(&g, rts, nrt);
	explain_gaps(&g, gpu, ngpu);
	kg_cov_release(&scratch);
	g.dry = 0;
	g.cov = cov;

	/* Write: header, strings, processors, tasks. */
	for (i = 0; i < g.nsteps; i++)
		if (iter_selected(&g, (int32_t)g.steps[i].n))
			VEC_PUSH(iters, niters, cap5, g.steps[i].n);
	memset(&h, 0, sizeof(h));
	h.producer = o->producer;
	h.source = t->file;
	h.rank = t->rank >= 0 ? t->rank : o->rank;
	h.world = t->world;
	if (trace_hash(t, err, errlen) < 0)
		goto out_free; /* rc is -1 */
	h.xxh3 = t->xxh3;
	h.tbase = t->base_ns + tbase;
	h.iters = iters;
	h.niters = niters;
	set_gpu(t, gpu, ngpu, &h);
	h.pcost = h.ustep = -1;
	if (o->pcost >= 0 && o->pcal != NULL && ncpu > 0) {
		h.pcal = o->pcal;
		h.pcost = o->pcost;
		h.ustep = o->ustep;
	}
	tools[0] = o->producer;
	h.tools = tools;
	h.ntools = 1;
	if (kg_write_header(w, &h) < 0)
		goto werr;
	for (i = 0; i < t->str.n; i++)
		if (kg_write_str(w, (uint32_t)i, t->str.str[i], t->str.len[i]) < 0)
			goto werr;
	for (i = 0; i < nprocs; i++) {
		const struct tproc *tp = &t->proc[procs[i]];
		struct kg_proc p;

		p.id = (uint32_t)i;
		p.kind = tp->gpu ? KG_STREAM : KG_THREAD;
		p.pid = tp->pid;
		p.tid = tp->tid;
		p.name = tp->name;
		p.main = procs[i] == g.main_proc;
		p.rank = -1;
		if (kg_write_proc(w, &p) < 0)
			goto werr;
	}
	/* Rule 7 tags by the ranges and by rule 5's backward runs. */
	backward_runs(&g, cpu, ncpu, leaf);
	/* the last use: a byte an event, given back before the tasks and
	 * edges are written, where the peak is */
	free(leaf);
	leaf = NULL;
	handoff_pairs(&g);
	tags_build(&g.tags, t, g.bwd, g.main_proc);
	for (i = 0; i < g.nruns; i++)
		tags_backward(&g.tags, g.iter[g.runs[i].first], t->ev[g.runs[i].first].proc,
		    t->ev[g.runs[i].first].ts, end_of(&t->ev[g.runs[i].last]));
	tags_ready(&g.tags);
	tags_infer(&g.tags, t, cpu, ncpu, g.encl, g.iter, h.rank, o->layer_ops);
	mem_attach(&g, &mem);
	/* in id order, as numbered above */
	for (run = 0; run < 3; run++) {
		for (i = 0; i < g.ntask; i++) {
			struct kg_task k;

			if (task_run(&g, g.order[i]) != run)
				continue;
			tagged = make_task(&g, g.order[i], tbase, &k);
			if (mem.peak != NULL && mem.peak[i] >= 0)
				k.mpeak = mem.peak[i], k.mrpeak = mem.rpeak[i], k.mnet = mem.net[i], k.mexc = mem.exc[i];
			if (kg_write_task(w, &k) < 0)
				goto werr;
			tagcount[0] += (tagged & TAG_PH) != 0;
			tagcount[1] += (tagged & TAG_PH_INF) != 0;
			tagcount[2] += (tagged & TAG_MB) != 0;
			tagcount[3] += (tagged & TAG_LY) != 0;
			tagcount[4] += (tagged & TAG_MB_INF) != 0;
			tagcount[5] += (tagged & TAG_LY_INF) != 0;
			tagcount[6] += (tagged & TAG_ST_INF) != 0;
			tagcount[7] += (tagged & TAG_RC) != 0;
			/* counted here, added after the loop; each name put in the
			 * coverage (at 0) where it first occurs, which is its order */
			if (kcount[k.kind]++ == 0)
				kg_cov_add(cov, kname[k.kind], 0);
			if (k.kind == KG_COLL) {
				if (ccount[0]++ == 0)
					kg_cov_add(cov, "coll_recognised", 0);
				if (k.gsize >= 0 && ccount[1]++ == 0)
					kg_cov_add(cov, "coll_meta", 0);
				if (k.bytes > 0 && ccount[2]++ == 0)
					kg_cov_add(cov, "coll_bytes", 0);
			}
		}
	}
	for (i = 0; i < KG_NTASK_KIND; i++)
		if (kcount[i] > 0)
			kg_cov_add(cov, kname[i], kcount[i]);
	if (ccount[0] > 0)
		kg_cov_add(cov, "coll_recognised", ccount[0]);
	if (ccount[1] > 0)
		kg_cov_add(cov, "coll_meta", ccount[1]);
	if (ccount[2] > 0)
		kg_cov_add(cov, "coll_bytes", ccount[2]);

	/* Edges: thread order, launches, stream order, runtime, hand-off. */
	for (i = 0; i < ncpu; i++) {
		uint32_t x = cpu[i], nx = g.nextleaf[x], ho;
		int64_t dl;

		if (!g.sel[x] || nx == KG_NONE)
			continue;
		if (t->ev[nx].ts < end_of(&t->ev[x]))
			kg_cov_add(cov, "overlap_clamped", 1);
		dl = t->ev[nx].ts - end_of(&t->ev[x]) + tail_of(&g, x);
		/* Rule 5: a task a hand-off wakes waited for it, not for
		 * work of its own thread: the gap is the hand-off's. */
		ho = umap_get(&g.hoff, nx);
		if (ho != KG_NONE && end_of(&t->ev[ho]) >= end_of(&t->ev[x]) && dl > tail_of(&g, x))
			dl = tail_of(&g, x);
		edge(&g, x, nx, KG_E_THREAD, dl, KG_HOW_TRACE, KG_NONE, KG_NONE, KG_NONE);
	}
	for (i = 0; i < ngpu; i++) {
		uint32_t x = gpu[i];

		if (!g.sel[x])
			continue;
		if (g.launch[x] != KG_NONE) {
			edge(&g, g.launch[x], x, KG_E_LAUNCH, gap_delay(&g, i, 1), KG_HOW_TRACE,
			    KG_NONE, KG_NONE, KG_NONE);
			kg_cov_add(cov, "launch_joined", 1);
		} else {
			kg_cov_add(cov, "launch_unjoined", 1);
		}
	}
	for (i = 0; i + 1 < ngpu; i++) {
		uint32_t x = gpu[i], y;
		size_t j;

		if (!g.sel[x])
			continue;
		for (j = i + 1; j < ngpu && t->ev[gpu[j]].proc == t->ev[x].proc; j++)
			if (g.sel[gpu[j]])
				break;
		if (j == ngpu || t->ev[gpu[j]].proc != t->ev[x].proc)
			continue;
		y = gpu[j];
		edge(&g, x, y, KG_E_STREAM, gap_delay(&g, j, 0), KG_HOW_TRACE, KG_NONE, KG_NONE,
		    KG_NONE);
	}
	bind_runtime(&g, rts, nrt);
	handoff(&g);
	for (i = 0; i < ngpu; i++) {
		size_t gi = i;

		if (!g.gaps[gi].set || g.gaps[gi].small)
			continue;
		if (g.gaps[gi].src != KG_NONE) {
			edge(&g, g.gaps[gi].src, gpu[i], KG_E_EVENT, 0, KG_HOW_INFERRED,
			    KG_NONE, KG_NONE, KG_NONE);
			kg_cov_add(cov, "gap_inferred", 1);
		} else if (g.gaps[gi].on_launch == 2) {
			edge(&g, g.order[0], gpu[i], KG_E_LAUNCH, g.gaps[gi].dl, KG_HOW_INFERRED,
			    KG_NONE, KG_NONE, KG_NONE);
			kg_cov_add(cov, "gap_anchored", 1);
		} else {
			kg_cov_add(cov, "gap_kept", 1);
		}
	}
	if (g.werr)
		goto werr;

	{
		/* counts that are zero are left out, as kineto2graph(1) says */
		static const char *const tagname[] = {
			"tag_phase", "tag_phase_inferred", "tag_mb", "tag_layer",
			"tag_mb_inferred", "tag_layer_inferred", "tag_stage_inferred",
			"tag_stage_unknown", "tag_mb_unmatched", "tag_layer_norepeat",
			"tag_layer_noseq", "tag_layer_steps", "tag_layer_repeats",
			"tag_layer_unit_ops", "tag_layer_modules", "tag_recompute",
			"tag_recompute_runs"
		};
		int64_t n[17];

		memcpy(n, tagcount, sizeof(tagcount));
		n[7] = g.tags.stage < 0 ? (int64_t)g.ntask : 0;
		n[8] = g.tags.mb_unmatched;
		n[9] = g.tags.ly_norepeat;
		n[10] = g.tags.ly_noseq;
		n[11] = g.tags.ly_steps;
		n[12] = g.tags.ly_reps;
		n[13] = g.tags.ly_unit;
		n[14] = g.tags.ly_module != KG_NONE ? g.tags.ly_steps : 0;
		n[15] = tagcount[7];
		n[16] = g.tags.rc_runs;
		for (i = 0; i < 17; i++)
			if (n[i] != 0)
				kg_cov_add(cov, tagname[i], n[i]);
	}
	if (mem.attached > 0)
		kg_cov_add(cov, "mem_events", mem.attached);
	if (mem.unattached > 0)
		kg_cov_add(cov, "mem_unattached", mem.unattached);
	kg_cov_add(cov, "events", (int64_t)t->nevents);
	for (i = 0; i < t->cov.n; i++)
		kg_cov_add(cov, t->cov.name[i], t->cov.val[i]);
	if (kg_write_cov(w, cov) < 0 || kg_write_end(w) < 0)
		goto werr;
	rc = 0;
	goto out_free;
werr:
	rc = -2;
out_free:
	free(iters);
	free(procs);
	free(rts);
	free(cpu);
	free(gpu);
	free(leaf);
	free(g.iter);
	free(g.sel);
	free(g.encl);
	free(g.commann);
	free(g.launch);
	free(g.nextgpu);
	free(g.nextleaf);
	free(g.pev);
	free(g.task);
	umap_release(&g.newdur);
	umap_release(&g.evmap);
	umap_release(&g.evgap);
	umap_release(&g.hoff);
	free(g.hand);
	free(g.evheld);
	free(g.gaps);
	free(g.bwd);
	free(g.mleaf);
	free(g.runs);
	tags_release(&g.tags);
	free(g.durv);
	free(g.durpre);
	free(g.order);
	free(g.outproc);
	free(mem.peak);
	free(mem.rpeak);
	free(mem.net);
	free(mem.exc);
out:
	free(g.steps);
	commkern_memo_release(g.ckm);
	free(g.ckm);
	free(g.rtc);
	return rc;
}
