/*
 * kineto2graph's build, rule 4 (see graph.c): the runtime calls walked
 * in time order across threads (bind_runtime), tracking the last task
 * launched on each stream, to bind stream, event and device
 * synchronizations and cross-stream event waits, explicit from cuda_sync
 * records or inferred; blocking copies; the time a launch call keeps
 * when its work began before it returned. The calls whose time is cut
 * keep their new one here (set_dur; get_dur, tail_of read it). It runs
 * twice: a dry pass settles the durations and the waits' holds (rule 6
 * needs both), the second writes the edges (edge, deps.c).
 */
#include <stdlib.h>
#include <string.h>

#include "gb.h"
#include "k2g.h"
#include "rtapi.h"
#include "util.h"

/*
 * Calls whose simulated duration d differs from the trace's, d in [0,
 * original]: a synchronizing call keeps its time after the wait, a
 * blocking copy's call its time before the copy; a launch call whose work
 * began on the GPU before the call returned keeps its time until then
 * (`prefix`), and the rest of the call becomes host time after it (added
 * to the delay of its thread edge, see tail_of).
 */
static void
set_dur(struct gb *g, uint32_t x, int64_t d, int prefix)
{
	uint32_t i = umap_get(&g->newdur, x);

	if (d < 0)
		d = 0;
	if (d > g->t->ev[x].dur)
		d = g->t->ev[x].dur;
	if (i == KG_NONE) {
		umap_put(&g->newdur, x, (uint32_t)g->ndurv);
		VEC_PUSH(g->durv, g->ndurv, g->capdurv, d);
		i = (uint32_t)(g->ndurv - 1);
		grow(&g->durpre, &g->capdurpre, g->ndurv, 1);
	} else {
		g->durv[i] = d;
	}
	g->durpre[i] = (uint8_t)prefix;
}

/* Host time a prefix-cut call leaves to the gap after it. */
int64_t
tail_of(const struct gb *g, uint32_t x)
{
	uint32_t i = umap_get(&g->newdur, x);

	return i != KG_NONE && g->durpre[i] ? g->t->ev[x].dur - g->durv[i] : 0;
}

int64_t
get_dur(const struct gb *g, uint32_t x)
{
	uint32_t i = umap_get(&g->newdur, x);

	return i == KG_NONE ? g->t->ev[x].dur : g->durv[i];
}

/*
 * What a runtime call does (an rtapi role, rtapi.h: CUDA and HIP alike);
 * asked once a name (g->rtc, 0 before; the role plus one): a trace makes
 * millions of calls of a few dozen names.
 */
int
rt_role(struct gb *g, uint32_t name)
{
	int c;

	if (name < g->nrtc && g->rtc[name] != 0)
		return g->rtc[name] - 1;
	c = rtapi_role(g->t->str.str[name]);
	if (name < g->nrtc)
		g->rtc[name] = (uint8_t)(c + 1);
	return c;
}

/* What a pending cross-stream wait remembers until the next launch on its stream. */
#define NRECENT 8 /* streams a thread launched onto lately, for inference */

struct wait {
	uint32_t src;     /* GPU event the record captured, KG_NONE if none */
	uint32_t rec, at; /* the record and wait calls */
	uint32_t stream;  /* trace proc of the recording stream */
	int how;
	/* Inferred waits: candidates in order of preference, tried at the
	 * next launch; see bind_inferred. */
	uint32_t cand[NRECENT + 2], cstream[NRECENT + 2], crec[NRECENT + 2];
	int ncand;
};

struct record {
	uint32_t src, stream, call;
	int how;
};

/*
 * An inferred wait binds to the candidate, on a stream other than the
 * waiting one, that ends last without the trace contradicting it: a task
 * that ended after the waiting task started (past 1 us of clock jitter)
 * cannot have been waited for, and of the rest the latest is the one
 * that explains the waiting task's start best (a stream held back by a
 * wait starts right after what it waited for). Ties go to the earlier
 * candidate in the order they were gathered.
 */
static int
bind_inferred(const struct gb *g, struct wait *wt, uint32_t gx)
{
	int i, best = -1;

	for (i = 0; i < wt->ncand; i++) {
		const struct ev *src = &g->t->ev[wt->cand[i]];

		if (wt->cstream[i] == g->t->ev[gx].proc)
			continue;
		if (end_of(src) > g->t->ev[gx].ts + 1000)
			continue;
		if (best < 0 || end_of(src) > end_of(&g->t->ev[wt->cand[best]]))
			best = i;
	}
	if (best < 0)
		return -1;
	wt->src = wt->cand[best];
	wt->stream = wt->cstream[best];
	wt->rec = wt->crec[best];
	return 0;
}

/*
 * Rule 4: runtime calls in time order across threads. `last[s]` is the
 * GPU event launched last on stream s so far.
 */
void
bind_runtime(struct gb *g, uint32_t *rts, size_t nrt)
{
	struct trace *t = g->t;
	struct kg_cov *cov = g->cov;
	struct umap syncs, recmap, waitstream;
	uint32_t *last = xmalloc(t->nproc * sizeof(*last));
	uint32_t *thr_stream = xmalloc(t->nproc * sizeof(*thr_stream));
	uint32_t (*recent)[NRECENT] = xmalloc(t->nproc * sizeof(*recent));
	uint32_t *thr_record = xmalloc(t->nproc * sizeof(*thr_record));
	char *capturing = xcalloc(t->nproc, 1); /* a thread between capture calls */
	struct wait **twait = xcalloc(t->nproc, sizeof(*twait));
	size_t *ntwait = xcalloc(t->nproc, sizeof(*ntwait));
	size_t *captwait = xcalloc(t->nproc, sizeof(*captwait));
	int64_t *thr_launch_ts = xmalloc(t->nproc * sizeof(*thr_launch_ts));
	struct wait **pend = xcalloc(t->nproc, sizeof(*pend));
	size_t *npend = xcalloc(t->nproc, sizeof(*npend));
	size_t *cappend = xcalloc(t->nproc, sizeof(*cappend));
	struct record *recs = NULL;
	size_t nrecs = 0, caprecs = 0, i, j;

	for (i = 0; i < t->nproc; i++) {
		last[i] = thr_stream[i] = thr_record[i] = KG_NONE;
		for (j = 0; j < NRECENT; j++)
			recent[i][j] = KG_NONE;
		thr_launch_ts[i] = INT64_MIN;
	}
	umap_init(&syncs, t->nsync);
	umap_init(&waitstream, t->nsync);
	umap_init(&recmap, 64);
	for (i = 0; i < t->nev; i++) {
		const struct ev *e = &t->ev[i];
		const struct syncrec *s;

		if (e->cls != EV_SYNC)
			continue;
		s = &t->sync[e->extra];
		if (e->corr != NO_CORR)
			umap_put(&syncs, e->corr, (uint32_t)i);
		/* Which stream a cudaEventRecord recorded on, named by a waiter. */
		if (s->wait_corr >= 0 && s->wait_corr < NO_CORR && s->wait_stream >= 0)
			umap_put(&waitstream, (uint32_t)s->wait_corr,
			    trace_proc(t, s->device, s->wait_stream, 1));
	}

	for (i = 0; i < nrt; i++) {
		uint32_t x = rts[i], th = t->ev[x].proc, gx, sx, prev;
		const struct ev *e = &t->ev[x];
		const struct syncrec *sr = NULL;
		int sel = g->sel[x], rc = rt_role(g, e->name);

		sx = e->corr != NO_CORR ? umap_get(&syncs, e->corr) : KG_NONE;
		if (sx != KG_NONE)
			sr = &t->sync[t->ev[sx].extra];

		if (g->nextgpu[x] != KG_NONE) { /* a launch */
			int blocking = 0;

			for (gx = g->nextgpu[x]; gx != KG_NONE; gx = g->nextgpu[gx]) {
				uint32_t s = t->ev[gx].proc;

				if (rc == RTAPI_GRAPH && g->sel[gx])
					kg_cov_add(cov, "launch_graph", 1);

				/* Waits pending on this stream bind to its next task. */
				for (j = 0; j < npend[s]; j++) {
					struct wait *wt = &pend[s][j];

					if (wt->src != KG_NONE && t->ev[wt->src].proc != s &&
					    g->sel[wt->src] && g->sel[gx]) {
						edge(g, wt->src, gx, KG_E_EVENT, 0, wt->how,
						    wt->stream, wt->rec, wt->at);
					}
					if (g->sel[gx])
						kg_cov_add(cov, wt->how == KG_HOW_EXPLICIT ?
						    "wait_explicit" : "wait_inferred", 1);
				}
				npend[s] = 0;
				/* Inferred waits on this thread bind to this launch's stream. */
				for (j = 0; j < ntwait[th]; j++) {
					struct wait *wt = &twait[th][j];
					size_t k;

					if (bind_inferred(g, wt, gx) < 0) {
						wt->src = KG_NONE;
						if (g->sel[gx])
							kg_cov_add(cov, "wait_unresolved", 1);
						continue;
					}
					for (k = 0; k < j; k++) /* one edge per source */
						if (twait[th][k].src == wt->src)
							break;
					if (k == j && wt->stream != s && g->sel[wt->src] && g->sel[gx])
						edge(g, wt->src, gx, KG_E_EVENT, 0, KG_HOW_INFERRED,
						    wt->stream, wt->rec, wt->at);
					if (g->sel[gx])
						kg_cov_add(cov, "wait_inferred", 1);
				}
				ntwait[th] = 0;
				prev = last[s];
				if (last[s] == KG_NONE || t->ev[gx].ts >= t->ev[last[s]].ts)
					last[s] = gx;
				thr_stream[th] = s;
				/* Move s to the front of the thread's recent streams. */
				for (j = 0; j < NRECENT - 1 && recent[th][j] != s; j++)
					;
				for (; j > 0; j--)
					recent[th][j] = recent[th][j - 1];
				recent[th][0] = s;
				thr_launch_ts[th] = e->ts;
				/* Blocking copies: the thread goes on only after the copy. */
				if (t->ev[gx].cls == EV_CPY && sel && g->sel[gx] &&
				    (rc == RTAPI_COPY_SYNC ||
				     (strstr(evname(g, &t->ev[gx]), "Pageable") &&
				      end_of(e) >= end_of(&t->ev[gx])))) {
					uint32_t nx = g->nextleaf[x];

					int64_t from = e->ts;

					/* The call's own time: until the copy began, less
					 * any wait for the stream's previous task. */
					if (prev != KG_NONE && end_of(&t->ev[prev]) > from)
						from = end_of(&t->ev[prev]);
					kg_cov_add(cov, "copy_blocking", 1);
					set_dur(g, x, t->ev[gx].ts - from, 0);
					blocking = 1;
					if (nx != KG_NONE)
						edge(g, gx, nx, KG_E_SYNC, t->ev[nx].ts - end_of(&t->ev[gx]),
						    KG_HOW_TRACE, s, x, KG_NONE);
				}
			}
			/* Work that began before the call returned: the call's
			 * own time ends there (rule 4, launch overlap). */
			if (!blocking && sel) {
				int64_t first = INT64_MAX;

				for (gx = g->nextgpu[x]; gx != KG_NONE; gx = g->nextgpu[gx])
					if (g->sel[gx] && t->ev[gx].ts < first)
						first = t->ev[gx].ts;
				if (first < end_of(e)) {
					set_dur(g, x, first - e->ts, 1);
					kg_cov_add(cov, "launch_overlap", 1);
				}
			}
			continue;
		}
		if (rc == RTAPI_CAPTURE_BEGIN)
			capturing[th] = 1;
		else if (rc == RTAPI_CAPTURE_END)
			capturing[th] = 0;
		else if (rtapi_puts_work(rc) && sel)
			kg_cov_add(cov, capturing[th] ? "launch_captured" : "launch_nogpu", 1);

		if (rc == RTAPI_RECORD) {
			struct record r;
			uint32_t ws = e->corr != NO_CORR ? umap_get(&waitstream, e->corr) : KG_NONE;

			r.call = x;
			r.how = ws != KG_NONE ? KG_HOW_EXPLICIT : KG_HOW_INFERRED;
			r.stream = ws != KG_NONE ? ws : thr_stream[th];
			r.src = r.stream != KG_NONE ? last[r.stream] : KG_NONE;
			VEC_PUSH(recs, nrecs, caprecs, r);
			if (e->corr != NO_CORR)
				umap_put(&recmap, e->corr, (uint32_t)(nrecs - 1));
			thr_record[th] = (uint32_t)(nrecs - 1);
		} else if (rc == RTAPI_WAIT) {
			struct wait wt;

			wt.at = x;
			if (sr != NULL && sr->kind == SYNC_WAIT_EVENT && sr->stream >= 0) {
				uint32_t b = trace_proc(t, sr->device, sr->stream, 1);
				uint32_t ri = sr->wait_corr >= 0 && sr->wait_corr < NO_CORR ?
				    umap_get(&recmap, (uint32_t)sr->wait_corr) : KG_NONE;

				wt.how = KG_HOW_EXPLICIT;
				if (ri != KG_NONE) {
					wt.src = recs[ri].src, wt.rec = recs[ri].call;
					wt.stream = recs[ri].stream;
				} else if (sr->wait_stream >= 0) {
					/* The record is before the window: bind to the
					 * recording stream as it is now. */
					wt.stream = trace_proc(t, sr->device, sr->wait_stream, 1);
					wt.src = wt.stream < t->nproc ? last[wt.stream] : KG_NONE;
					wt.rec = KG_NONE;
				} else {
					wt.src = wt.rec = wt.stream = KG_NONE;
				}
				if (wt.src == KG_NONE) {
					/* Known stream, nothing launched on it yet: no
					 * dependency. Unknown stream: unresolved. */
					if (sel)
						kg_cov_add(cov, wt.stream != KG_NONE ?
						    "wait_noop" : "wait_unresolved", 1);
				} else if (b < t->nproc) {
					grow(&pend[b], &cappend[b], npend[b] + 1, sizeof(**pend));
					pend[b][npend[b]++] = wt;
				}
			} else {
				/* Inferred, candidates in order: the event this
				 * thread recorded since its last launch; the last
				 * task of each stream the thread launched onto
				 * lately, most recent first (some traces hold no
				 * cudaEventRecord at all, and c10d records NCCL's
				 * events where the profiler does not see it); an
				 * older record of this thread. At the next launch,
				 * the first candidate on another stream that the
				 * trace does not contradict wins (bind_inferred). */
				const struct record *r = thr_record[th] != KG_NONE ?
				    &recs[thr_record[th]] : NULL;
				int fresh = r != NULL && t->ev[r->call].ts >= thr_launch_ts[th];
				int q;

				wt.how = KG_HOW_INFERRED;
				wt.ncand = 0;
				if (fresh && r->src != KG_NONE) {
					wt.cand[wt.ncand] = r->src, wt.cstream[wt.ncand] = r->stream;
					wt.crec[wt.ncand++] = r->call;
				}
				for (q = 0; q < NRECENT && recent[th][q] != KG_NONE; q++)
					if (last[recent[th][q]] != KG_NONE) {
						wt.cand[wt.ncand] = last[recent[th][q]];
						wt.cstream[wt.ncand] = recent[th][q];
						wt.crec[wt.ncand++] = KG_NONE;
					}
				if (!fresh && r != NULL && r->src != KG_NONE) {
					wt.cand[wt.ncand] = r->src, wt.cstream[wt.ncand] = r->stream;
					wt.crec[wt.ncand++] = r->call;
				}
				wt.src = wt.ncand > 0 ? wt.cand[0] : KG_NONE;
				if (wt.src != KG_NONE) {
					grow(&twait[th], &captwait[th], ntwait[th] + 1, sizeof(**twait));
					twait[th][ntwait[th]++] = wt;
				} else if (sel) {
					kg_cov_add(cov, "wait_unresolved", 1);
				}
			}
		} else if (rc == RTAPI_SYNC_STREAM || rc == RTAPI_SYNC_EVENT ||
		    rc == RTAPI_SYNC_DEVICE) {
			uint32_t src[64], on[64], via = x;
			size_t ns = 0, k;
			int how = KG_HOW_INFERRED;
			int64_t maxend = INT64_MIN;

			if (rc == RTAPI_SYNC_DEVICE) {
				/* Every stream of the device with work launched. */
				how = sr != NULL ? KG_HOW_EXPLICIT : KG_HOW_TRACE;
				for (k = 0; k < t->nproc && ns < 64; k++)
					if (t->proc[k].gpu && last[k] != KG_NONE)
						src[ns] = last[k], on[ns++] = (uint32_t)k;
			} else if (rc == RTAPI_SYNC_STREAM) {
				uint32_t s = thr_stream[th];

				if (sr != NULL && sr->stream >= 0) {
					s = trace_proc(t, sr->device, sr->stream, 1);
					how = KG_HOW_EXPLICIT;
				}
				if (s < t->nproc && last[s] != KG_NONE)
					src[ns] = last[s], on[ns++] = s;
			} else { /* event synchronize */
				uint32_t ri = thr_record[th];

				if (sr != NULL && sr->wait_corr >= 0 && sr->wait_corr < NO_CORR) {
					ri = umap_get(&recmap, (uint32_t)sr->wait_corr);
					how = KG_HOW_EXPLICIT;
				}
				if (ri != KG_NONE && recs[ri].src != KG_NONE) {
					src[ns] = recs[ri].src, on[ns++] = recs[ri].stream;
					via = recs[ri].call;
				}
			}
			for (k = 0; k < ns; k++) {
				if (end_of(&t->ev[src[k]]) > maxend)
					maxend = end_of(&t->ev[src[k]]);
				if (sel && g->sel[src[k]])
					edge(g, src[k], x, KG_E_SYNC, 0, how, on[k], via, KG_NONE);
			}
			if (sel) {
				kg_cov_add(cov, ns > 0 ? "sync_bound" : "sync_unbound", 1);
				if (ns > 0) {
					/* Keep only the time after the wait. */
					int64_t from = maxend > e->ts ? maxend : e->ts;
					int64_t d = end_of(e) - from;

					set_dur(g, x, d, 0);
				}
			}
		} else if (sr != NULL && sel) {
			kg_cov_add(cov, "sync_query", 1); /* a query: never blocks */
		}
	}
	for (i = 0; i < t->nproc; i++) {
		if (i < t->nproc && npend[i] > 0)
			kg_cov_add(cov, "wait_unresolved", (int64_t)npend[i]);
		free(pend[i]);
	}
	for (i = 0; i < t->nproc; i++) {
		if (ntwait[i] > 0)
			kg_cov_add(cov, "wait_unresolved", (int64_t)ntwait[i]);
		free(twait[i]);
	}
	free(twait);
	free(ntwait);
	free(captwait);
	free(thr_launch_ts);
	free(pend);
	free(npend);
	free(cappend);
	free(recs);
	free(last);
	free(thr_stream);
	free(recent);
	free(thr_record);
	free(capturing);
	umap_release(&syncs);
	umap_release(&recmap);
	umap_release(&waitstream);
}
