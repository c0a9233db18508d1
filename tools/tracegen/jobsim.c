/*
 * The job's simulation, by graphsim's simulator (common/sim.h): every
 * rank's host and streams together, so that what one rank waits for on
 * another is where that rank put it, and one model of what waits for
 * what serves both tools.
 *
 * The record is given to the simulator as a section of tasks and edges
 * (an edge: its destination starts no sooner than its source's end plus
 * the delay). Each rank has a host, on which a blocking call is two
 * tasks: the call, as long as its own time, from the host's previous
 * return (or from a task at 0 before the first) after the host-local
 * time between them; and its return, after the call and after each op
 * it waits for plus the wake-up. A GPU op waits for the host task before
 * its launch by its ready time less that task's host-local time, for its
 * stream's previous op plus the GPU's gap, and for each op it waits for
 * (an event) plus the longer gap after an event. A collective's ops, one
 * a participant, are joined by `rank` edges: each holds its stream from
 * its arrival and all end at the last arrival plus the transfer (their
 * duration). These are, to the nanosecond, the times tracegen's own
 * simulator found before (passes over the ranks until nothing moved):
 * the traces are the same bytes.
 *
 * This file only builds the section and reads the times back; the
 * record is job.c's, the waiting is common/sim.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg.h"
#include "sim.h"
#include "tg.h"
#include "util.h"

/* Task ids of one rank: a task at 0, each op, each blocking call's call
 * and return. */
struct rtask {
	uint32_t h0, gop, blk;
};

static void
add_task(struct sim *s, uint32_t *n, uint32_t proc, int64_t dur)
{
	struct kg_task t;

	memset(&t, 0, sizeof(t));
	t.id = (*n)++;
	t.proc = proc;
	t.name = KG_NONE;
	t.kind = KG_CPU;
	t.dur = dur;
	sim_task(s, &t);
}

static void
add_edge(struct sim *s, uint32_t src, uint32_t dst, int kind, int64_t delay)
{
	struct kg_edge e;

	memset(&e, 0, sizeof(e));
	e.src = src, e.dst = dst, e.kind = kind, e.delay = delay;
	e.on = e.via = e.at = KG_NONE;
	sim_edge(s, &e);
}

/*
 * After a failed run, what tracegen's own simulation said of a job that
 * deadlocks: the first rank with a blocking call or a stream's op that
 * never ended (a bug in the program).
 */
static void
deadlock(const struct tg_job *J, const struct sim *s, const struct rtask *rt, char *err,
    size_t errlen)
{
	size_t n = sim_ntasks(s), nst, i;
	uint32_t *first = xmalloc((n + 1) * sizeof(*first));
	uint32_t *names = xmalloc((n + 1) * sizeof(*names));
	uint8_t *stuck = xcalloc(n + 1, 1);
	int r, k;

	nst = sim_stuck(s, first, names, n);
	for (i = 0; i < nst; i++)
		stuck[first[i]] = 1;
	snprintf(err, errlen, "internal error: the job deadlocks");
	for (r = 0; r < J->world; r++) {
		const struct tg_rank *rk = &J->rk[r];
		size_t b;

		for (b = 0; b < rk->nblk; b++)
			if (stuck[rt[r].blk + 2 * b + 1]) {
				snprintf(err, errlen, "internal error: rank %d deadlocks at "
				    "blocking call %zu", r, b);
				goto out;
			}
		for (k = 0; k < NSTREAM; k++)
			for (b = 0; b < rk->nsq[k]; b++)
				if (stuck[rt[r].gop + rk->sq[k][b]]) {
					snprintf(err, errlen, "internal error: rank %d deadlocks on "
					    "stream %d at op %u", r, tg_stream_id[k], rk->sq[k][b]);
					goto out;
				}
	}
out:
	free(stuck);
	free(names);
	free(first);
}

int
job_sim(struct tg_job *J, char *err, size_t errlen)
{
	struct sim *s = sim_new(0);
	struct rtask *rt = xcalloc((size_t)J->world + 1, sizeof(*rt));
	uint32_t *last = xmalloc((J->ninst + 1) * sizeof(*last));
	uint32_t *nmem = xcalloc(J->ninst + 1, sizeof(*nmem));
	struct kg_header h;
	struct kg_proc p;
	const int64_t *ss, *se;
	uint32_t n = 0;
	size_t i, b;
	int r, k, rc = 0;

	memset(&h, 0, sizeof(h));
	sim_begin(s, &h);
	memset(&p, 0, sizeof(p));
	p.name = KG_NONE;
	p.rank = -1;
	for (r = 0; r < J->world; r++)
		for (k = 0; k <= NSTREAM; k++) {
			p.id = (uint32_t)(r * (NSTREAM + 1) + k);
			p.kind = k == 0 ? KG_THREAD : KG_STREAM;
			sim_proc(s, &p);
		}
	for (r = 0; r < J->world; r++) {
		const struct tg_rank *rk = &J->rk[r];
		uint32_t host = (uint32_t)(r * (NSTREAM + 1));

		rt[r].h0 = n;
		add_task(s, &n, host, 0);
		rt[r].gop = n;
		for (i = 0; i < rk->ngop; i++) {
			const struct gop *o = &rk->gop[i];

			add_task(s, &n, host + 1 + o->stream,
			    o->inst != TG_NONE ? J->inst[o->inst].xfer : o->dur);
		}
		rt[r].blk = n;
		for (b = 0; b < rk->nblk; b++) {
			add_task(s, &n, host, rk->blk[b].min);
			add_task(s, &n, host, 0);
		}
	}
	for (i = 0; i < J->ninst; i++)
		last[i] = KG_NONE;
	for (r = 0; r < J->world; r++) {
		const struct tg_rank *rk = &J->rk[r];
		uint32_t base = rt[r].h0, g;
		int64_t local = 0; /* the host-local time of base's end */

		for (b = 0, g = 0; b <= rk->nblk; b++) {
			uint32_t upto = b < rk->nblk ? rk->blk[b].ngop : (uint32_t)rk->ngop;
			uint32_t call = rt[r].blk + 2 * (uint32_t)b;
			const struct blk *bk;

			/* the ops launched before this call returns */
			for (; g < upto; g++)
				add_edge(s, base, rt[r].gop + g, KG_E_LAUNCH, rk->gop[g].ready - local);
			if (b == rk->nblk)
				break;
			bk = &rk->blk[b];
			add_edge(s, base, call, KG_E_THREAD, bk->start - local);
			add_edge(s, call, call + 1, KG_E_THREAD, 0);
			for (k = 0; k < bk->ndep; k++)
				add_edge(s, rt[r].gop + rk->dep[bk->dep + k], call + 1, KG_E_SYNC,
				    bk->wake);
			base = call + 1;
			local = bk->start + bk->min;
		}
		for (k = 0; k < NSTREAM; k++)
			for (i = 1; i < rk->nsq[k]; i++)
				add_edge(s, rt[r].gop + rk->sq[k][i - 1], rt[r].gop + rk->sq[k][i],
				    KG_E_STREAM, rk->gop[rk->sq[k][i]].gap);
		for (i = 0; i < rk->ngop; i++) {
			const struct gop *o = &rk->gop[i];

			for (k = 0; k < o->ndep; k++)
				add_edge(s, rt[r].gop + rk->dep[o->dep + k], rt[r].gop + (uint32_t)i,
				    KG_E_EVENT, o->egap);
			if (o->inst == TG_NONE)
				continue;
			if (last[o->inst] != KG_NONE)
				add_edge(s, last[o->inst], rt[r].gop + (uint32_t)i, KG_E_RANK, 0);
			last[o->inst] = rt[r].gop + (uint32_t)i;
			nmem[o->inst]++;
		}
	}
	rc = sim_run(s, NULL);
	for (i = 0; i < J->ninst && rc == 0; i++)
		if (nmem[i] != J->inst[i].n) {
			snprintf(err, errlen, "internal error: collective %zu has %u of its %u "
			    "participants", i, nmem[i], J->inst[i].n);
			rc = 1;
		}
	if (rc == -1)
		deadlock(J, s, rt, err, errlen);
	else if (rc == -2)
		snprintf(err, errlen, "internal error: a simulated time leaves the format's range");
	ss = sim_starts(s), se = sim_ends(s);
	for (r = 0; r < J->world && rc == 0; r++) {
		struct tg_rank *rk = &J->rk[r];

		for (i = 0; i < rk->ngop; i++) {
			rk->gop[i].start = ss[rt[r].gop + i];
			rk->gop[i].end = se[rt[r].gop + i];
		}
		for (b = 0; b < rk->nblk; b++)
			rk->blk[b].end = se[rt[r].blk + 2 * b + 1];
	}
	free(nmem);
	free(last);
	free(rt);
	sim_free(s);
	return rc == 0 ? 0 : -1;
}
