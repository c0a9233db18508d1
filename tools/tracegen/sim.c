/*
 * The job's own simulation: every rank's host and streams together, so
 * that what one rank waits for on another is where that rank put it.
 *
 * Each rank's host runs its record from one blocking call to the next:
 * the GPU ops it launched in between become ready on the job's clock
 * (their host-local time plus the rank's shift so far), and a blocking
 * call ends once the ops it waits for have ended. Each stream places its
 * ops in launch order: an op starts when it is ready, its stream is free
 * and the ops it waits for (event waits) have ended, plus the GPU's own
 * gap after each (longer after an event than after its stream). A collective's op arrives there; when every participant has
 * arrived, all of them end at the last arrival plus the transfer time.
 *
 * Passes over all ranks repeat until nothing moves: each pass places
 * what it can, and a pass that places nothing while work is left means
 * the program deadlocks (a bug in job.c, reported as such).
 */
#include <stdio.h>
#include <stdlib.h>

#include "tg.h"
#include "util.h"

struct rstate {
	size_t bi;        /* next blocking call */
	size_t launched;  /* ops launched so far */
	int64_t shift;    /* job clock minus host-local clock */
	size_t cur[NSTREAM];
};

static int
host_advance(struct tg_rank *rk, struct rstate *S)
{
	int prog = 0;

	for (;;) {
		size_t upto = S->bi < rk->nblk ? rk->blk[S->bi].ngop : rk->ngop;
		struct blk *b;
		int64_t t;
		uint32_t i;

		while (S->launched < upto) {
			rk->gop[S->launched++].ready += S->shift;
			prog = 1;
		}
		if (S->bi >= rk->nblk)
			return prog;
		b = &rk->blk[S->bi];
		t = b->start + S->shift + b->min;
		for (i = 0; i < b->ndep; i++) {
			int64_t e = rk->gop[rk->dep[b->dep + i]].end;

			if (e == TG_UNSET)
				return prog;
			if (e + b->wake > t)
				t = e + b->wake;
		}
		b->end = t;
		S->shift = t - (b->start + b->min);
		S->bi++;
		prog = 1;
	}
}

static int
stream_advance(struct tg_job *J, struct tg_rank *rk, struct rstate *S, int s)
{
	int prog = 0;

	while (S->cur[s] < rk->nsq[s]) {
		uint32_t g = rk->sq[s][S->cur[s]], i;
		struct gop *o = &rk->gop[g];
		struct inst *in;
		int64_t t;

		if (g >= S->launched)
			break;
		if (!o->reg) {
			t = o->ready;
			if (S->cur[s] > 0) {
				const struct gop *p = &rk->gop[rk->sq[s][S->cur[s] - 1]];

				if (p->end + o->gap > t)
					t = p->end + o->gap;
			}
			for (i = 0; i < o->ndep; i++) {
				int64_t e = rk->gop[rk->dep[o->dep + i]].end;

				if (e == TG_UNSET)
					return prog;
				if (e + o->egap > t)
					t = e + o->egap;
			}
			o->start = t;
			o->reg = 1;
			prog = 1;
			if (o->inst == TG_NONE) {
				o->end = t + o->dur;
				S->cur[s]++;
				continue;
			}
			in = &J->inst[o->inst];
			if (in->tmax == TG_UNSET || t > in->tmax)
				in->tmax = t;
			if (++in->arrived == in->n)
				in->end = in->tmax + in->xfer;
		}
		in = &J->inst[o->inst];
		if (in->end == TG_UNSET)
			break;
		o->end = in->end;
		S->cur[s]++;
		prog = 1;
	}
	return prog;
}

int
sim_run(struct tg_job *J, char *err, size_t errlen)
{
	struct rstate *S = xcalloc((size_t)J->world, sizeof(*S));
	int prog, r, s, rc = 0;

	do {
		prog = 0;
		for (r = 0; r < J->world; r++) {
			prog |= host_advance(&J->rk[r], &S[r]);
			for (s = 0; s < NSTREAM; s++)
				prog |= stream_advance(J, &J->rk[r], &S[r], s);
		}
	} while (prog);
	for (r = 0; r < J->world && rc == 0; r++) {
		if (S[r].bi < J->rk[r].nblk) {
			snprintf(err, errlen, "internal error: rank %d deadlocks at blocking call %zu",
			    r, S[r].bi);
			rc = -1;
		}
		for (s = 0; s < NSTREAM && rc == 0; s++)
			if (S[r].cur[s] < J->rk[r].nsq[s]) {
				snprintf(err, errlen, "internal error: rank %d deadlocks on stream %d "
				    "at op %u", r, tg_stream_id[s], J->rk[r].sq[s][S[r].cur[s]]);
				rc = -1;
			}
	}
	free(S);
	return rc;
}
