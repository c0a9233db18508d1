/*
 * The job: the Megatron-style program every rank runs, written once and
 * run in two modes. Recording (job_record) keeps what the simulation
 * needs: each GPU op with its modelled duration and the ops it waits
 * for, and each call that blocks the host. Emitting (job_emit) runs the
 * same program for one rank again, draws the same random numbers in the
 * same order, and writes the events with the times the simulation gave.
 * Nothing in the control flow may depend on the mode, or the two passes
 * would part.
 *
 * The model: a GPT of `layers` transformer layers cut into `pp` stages,
 * each layer's weights split `tp` ways (Megatron's column- and row-
 * parallel linears, an all-reduce after attention and after the MLP in
 * the forward pass, and one overlapped with each weight-gradient GEMM in
 * the backward pass), replicated `dp` ways with gradient buckets
 * all-reduced while the backward pass of the last micro-batch runs.
 * Ranks are laid out tensor-parallel fastest, then data-parallel, then
 * pipeline stage: rank = tp_rank + tp * (dp_rank + dp * stage).
 *
 * This file holds the job (job_init, job_release), a rank's generator
 * state made and freed (struct gen, tg.h), the two passes, and what a
 * trace holds besides its events (the header, the metadata, the closing
 * spans). The program is in parts: calls.c the host's calls (CPU ops,
 * runtime calls, launches, event waits, synchronizes), coll.c the
 * process groups and collectives, mem.c the allocator's events, layers.c
 * a micro-batch's forward and backward, schedule.c an iteration.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "util.h"

const int tg_stream_id[NSTREAM] = { 7, 13, 17, 21, 25, 29 };

/*
 * --clock-skew: rank r's host clock runs this far off the job's, in
 * [-skew, skew], from the seed and the rank alone. It moves the trace's
 * time origin (baseTimeNanoseconds), as a host whose clock is off would:
 * the events keep their times relative to it.
 */
static int64_t
clock_skew(const struct tg_cfg *cfg, int r)
{
	uint64_t z;

	if (cfg->clock_skew <= 0 || r == 0)
		return 0;
	z = cfg->seed * UINT64_C(0x9e3779b97f4a7c15) + (uint64_t)r * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	z ^= z >> 31;
	return (int64_t)(z % (uint64_t)(2 * cfg->clock_skew + 1)) - cfg->clock_skew;
}

/* "[0, 1, 2]": a group's ranks as PyTorch writes them. */
static char *
ranks_text(const int *m, int n)
{
	char *s = xmalloc((size_t)n * 13 + 3), *p = s;
	int i;

	*p++ = '[';
	for (i = 0; i < n; i++)
		p += sprintf(p, "%s%d", i ? ", " : "", m[i]);
	*p++ = ']';
	*p = '\0';
	return s;
}

static void
gen_init(struct gen *G, struct tg_job *J, int r, int emit, struct jw *w)
{
	const struct tg_cfg *c = &J->c;
	int *m = xmalloc((size_t)J->world * sizeof(int));
	int k, n, i;

	memset(G, 0, sizeof(*G));
	G->J = J, G->c = c, G->rk = &J->rk[r], G->rank = r, G->emit = emit, G->w = w;
	G->tpr = (int)(r % c->tp), G->dpr = (int)(r / c->tp % c->dp);
	G->stage = (int)(r / (c->tp * c->dp));
	G->sk = &J->sk[G->stage];
	/* the allocator's level at a step's start: bf16 parameters, their
	 * float master copy and Adam's two float states (tracegen(1)) */
	G->mstate = G->mres = c->memory ? 14 * G->sk->params : 0;
	G->first = G->stage == 0, G->last = G->stage == c->pp - 1;
	G->dev = (int)(r % c->gpus_per_node);
	G->pid = 2900000 + 131 * (int64_t)r;
	G->tid[0] = G->pid, G->tid[1] = G->pid + 17;
	G->now = G->t_first = J->rk[r].t0;
	G->corr = 1000 + 7 * (uint64_t)r;
	G->ext = 1, G->rfid = 0, G->evidx = 0, G->seqnr = 100;
	G->nitems = stage_items(J, G->stage);
	G->fwdseq = xcalloc((size_t)(c->microbatches * G->nitems), sizeof(uint64_t));
	G->bdone = xcalloc((size_t)J->nbk[G->stage] + 1, sizeof(*G->bdone));
	G->speed = 1.0 + 0.01 * fabs(tg_gauss(tg_hash(c->seed, (uint64_t)r, UINT64_C(0x5eed))));
	for (k = 0; k < NSTREAM; k++) {
		G->lastop[k] = TG_NONE;
		for (i = 0; i < NSTREAM; i++)
			G->pend[k][i] = TG_NONE;
	}
	for (k = 0; k < NGKIND; k++) {
		int g = group_id(J, k, r);

		n = group_members(J, k, r, m);
		G->gsize[k] = n;
		G->internode[k] = node_of(J, m[0]) != node_of(J, m[n - 1]);
		snprintf(G->pgname[k], sizeof(G->pgname[k]), "%d", g + 1);
		G->pgranks[k] = emit ? ranks_text(m, n) : NULL;
		G->gstart[k] = m[0];
		G->gstride[k] = n > 1 ? m[1] - m[0] : 1;
		for (i = 2; i < n; i++)
			if (m[i] - m[i - 1] != G->gstride[k])
				G->gstride[k] = -1;
	}
	free(m);
}

static void
gen_release(struct gen *G)
{
	int k;

	for (k = 0; k < NGKIND; k++)
		free(G->pgranks[k]);
	free(G->fwdseq);
	free(G->bdone);
}

static void
run(struct gen *G)
{
	int64_t it;

	for (it = 0; it < G->c->iterations; it++) {
		iteration(G, 10 + it);
	}
}

/* ------------------------------------------------------------------ */

int
job_init(struct tg_job *J, const struct tg_cfg *c, char *err, size_t errlen)
{
	int r, k, i;
	int64_t ng;

	memset(J, 0, sizeof(*J));
	J->c = *c;
	J->world = (int)(c->tp * c->pp * c->dp);
	J->lps = c->layers / c->pp;
	J->rk = xcalloc((size_t)J->world, sizeof(*J->rk));
	for (r = 0; r < J->world; r++)
		J->rk[r].t0 = 100000 + (int64_t)(tg_unit(tg_hash(c->seed, (uint64_t)r, 0x7)) * 200000);
	J->gbase[G_TP] = 0;
	J->gbase[G_DP] = J->gbase[G_TP] + (int)(J->world / c->tp);
	J->gbase[G_PP] = J->gbase[G_DP] + (int)(J->world / c->dp);
	J->gbase[G_MP] = J->gbase[G_PP] + (int)(J->world / c->pp);
	J->gbase[NGKIND] = J->gbase[G_MP] + (int)(J->world / (c->tp * c->pp));
	ng = J->gbase[NGKIND] + 2 * (int64_t)J->world;
	J->ngroups = (size_t)ng;
	J->ginst = xcalloc(J->ngroups, sizeof(*J->ginst));
	J->nginst = xcalloc(J->ngroups, sizeof(*J->nginst));
	J->capginst = xcalloc(J->ngroups, sizeof(*J->capginst));
	J->bk = xcalloc((size_t)c->pp, sizeof(*J->bk));
	J->nbk = xcalloc((size_t)c->pp, sizeof(*J->nbk));
	J->sk = xcalloc((size_t)c->pp, sizeof(*J->sk));
	make_templates(J);
	for (k = 0; k < c->pp; k++)
		make_stage(J, k, &J->sk[k]);
	for (i = 0; i < J->nkt; i++)
		if (J->kt[i].dur < 0) {
			snprintf(err, errlen, "internal error: kernel %d has no duration", i);
			return -1;
		}
	return 0;
}

void
job_release(struct tg_job *J)
{
	size_t g;
	int r, k, i;

	for (r = 0; r < J->world; r++) {
		struct tg_rank *rk = &J->rk[r];

		free(rk->gop), free(rk->dep), free(rk->blk);
		for (k = 0; k < NSTREAM; k++)
			free(rk->sq[k]);
	}
	free(J->rk);
	free(J->inst);
	for (g = 0; g < J->ngroups; g++)
		free(J->ginst[g]);
	free(J->ginst), free(J->nginst), free(J->capginst);
	for (k = 0; k < J->c.pp; k++) {
		free(J->bk[k]);
		free(J->sk[k].bucket_scale);
	}
	free(J->bk), free(J->nbk);
	free(J->sk);
	for (i = 0; i < J->nkt; i++)
		free(J->kt[i].name), free(J->kt[i].args);
	free(J->kt);
	for (i = 0; i < J->not; i++)
		free(J->ot[i].name), free(J->ot[i].args);
	free(J->ot);
}

void
job_record(struct tg_job *J)
{
	struct gen G;
	int r;

	for (r = 0; r < J->world; r++) {
		gen_init(&G, J, r, 0, NULL);
		run(&G);
		gen_release(&G);
	}
}

static void
write_header(struct tg_job *J, int r, struct jw *w)
{
	const struct tg_cfg *c = &J->c;
	const struct tg_hw *hw = &c->hw;
	int *m = xmalloc((size_t)J->world * sizeof(int));
	int k, n, i;
	char buf[512];

	jw_puts(w, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n");
	for (i = 0; i < c->gpus_per_node; i++) {
		snprintf(buf, sizeof(buf), "    {\n      \"id\": %d, \"name\": ", i);
		jw_puts(w, buf);
		jw_str(w, hw->gpu);
		snprintf(buf, sizeof(buf), ", \"totalGlobalMem\": %" PRId64 ",\n"
		    "      \"computeMajor\": %d, \"computeMinor\": %d,\n"
		    "      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n"
		    "      \"regsPerBlock\": 65536, \"warpSize\": 32,\n"
		    "      \"sharedMemPerBlock\": 49152, \"numSms\": %d\n"
		    "    , \"regsPerMultiprocessor\": 65536, \"sharedMemPerBlockOptin\": %d, "
		    "\"sharedMemPerMultiprocessor\": %d\n    }%s\n",
		    (int64_t)(hw->mem_gib * 1073741824.0), hw->cc_major, hw->cc_minor, hw->sms,
		    hw->cc_major >= 9 ? 232448 : 166912, hw->cc_major >= 9 ? 233472 : 167936,
		    i + 1 < c->gpus_per_node ? "," : "");
		jw_puts(w, buf);
	}
	jw_puts(w, "  ],\n  \"cupti_version\": 22,\n  \"cuda_runtime_version\": 12040,\n"
	    "  \"cuda_driver_version\": 12040,\n");
	jw_puts(w, "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": ");
	jw_int(w, r);
	jw_puts(w, ", \"world_size\": ");
	jw_int(w, J->world);
	n = 1;
	for (k = 0; k < NGKIND; k++)
		n += group_members(J, k, r, m) > 1;
	jw_puts(w, ", \"pg_count\": ");
	jw_int(w, n);
	jw_puts(w, ", \"pg_config\": [{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", "
	    "\"backend_config\": \"cuda:nccl\", \"pg_size\": ");
	jw_int(w, J->world);
	jw_puts(w, ", \"ranks\": [");
	for (i = 0; i < J->world; i++) {
		if (i > 0)
			jw_puts(w, ", ");
		jw_int(w, i);
	}
	jw_puts(w, "]}");
	for (k = 0; k < NGKIND; k++) {
		n = group_members(J, k, r, m);
		if (n <= 1)
			continue;
		jw_puts(w, ", {\"pg_name\": \"");
		jw_int(w, group_id(J, k, r) + 1);
		jw_puts(w, "\", \"pg_desc\": \"");
		jw_puts(w, gdesc[k]);
		jw_puts(w, "\", \"backend_config\": \"cuda:nccl\", \"pg_size\": ");
		jw_int(w, n);
		jw_puts(w, ", \"ranks\": [");
		for (i = 0; i < n; i++) {
			if (i > 0)
				jw_puts(w, ", ");
			jw_int(w, m[i]);
		}
		jw_puts(w, "]}");
	}
	jw_puts(w, "], \"nccl_version\": \"2.21.5\"},\n  \"record_shapes\": 1,\n");
	snprintf(buf, sizeof(buf), "  \"trace_id\": \"%016" PRIX64 "%016" PRIX64 "\",\n",
	    tg_hash(c->seed, (uint64_t)r, 1), tg_hash(c->seed, (uint64_t)r, 2));
	jw_puts(w, buf);
	jw_puts(w, "  \"traceEvents\": [\n");
	free(m);
}

static void
write_meta(struct gen *G)
{
	struct jw *w = G->w;
	int64_t ts = TS0 + G->t_first - 50000;
	char buf[96];
	int i;

	ev_meta(w, "process_name", G->pid, 0, ts, "name", "python3", 0);
	ev_meta(w, "process_labels", G->pid, 0, ts, "labels", "CPU", 0);
	ev_meta(w, "process_sort_index", G->pid, 0, ts, "sort_index", NULL, G->pid);
	for (i = 0; i < G->c->gpus_per_node; i++) {
		snprintf(buf, sizeof(buf), "GPU %d", i);
		ev_meta(w, "process_name", i, 0, ts, "name", "python3", 0);
		ev_meta(w, "process_labels", i, 0, ts, "labels", buf, 0);
		ev_meta(w, "process_sort_index", i, 0, ts, "sort_index", NULL, 16777216 + i);
	}
	for (i = 0; i < NSTREAM; i++) {
		if (G->rk->nsq[i] == 0)
			continue;
		snprintf(buf, sizeof(buf), "stream %d ", tg_stream_id[i]);
		ev_meta(w, "thread_name", G->dev, tg_stream_id[i], ts, "name", buf, 0);
		ev_meta(w, "thread_sort_index", G->dev, tg_stream_id[i], ts, "sort_index", NULL,
		    tg_stream_id[i]);
	}
	snprintf(buf, sizeof(buf), "thread %" PRId64 " (pt_main_thread)", G->tid[0]);
	ev_meta(w, "thread_name", G->pid, G->tid[0], ts, "name", buf, 0);
	ev_meta(w, "thread_sort_index", G->pid, G->tid[0], ts, "sort_index", NULL, G->tid[0]);
	snprintf(buf, sizeof(buf), "thread %" PRId64 " (pt_autograd_0)", G->tid[1]);
	ev_meta(w, "thread_name", G->pid, G->tid[1], ts, "name", buf, 0);
	ev_meta(w, "thread_sort_index", G->pid, G->tid[1], ts, "sort_index", NULL, G->tid[1]);
}

void
job_emit(struct tg_job *J, int r, struct jw *w)
{
	struct gen G;
	int64_t start, end;
	char buf[160];

	gen_init(&G, J, r, 1, w);
	write_header(J, r, w);
	write_meta(&G);
	run(&G);
	start = TS0 + G.t_first - 50000;
	end = (G.now > G.t_last ? G.now : G.t_last) + 20000;
	ev_begin(w);
	jw_puts(w, "  {\n    \"ph\": \"X\", \"cat\": \"Trace\", \"ts\": ");
	jw_us(w, start);
	jw_puts(w, ", \"dur\": ");
	jw_us(w, TS0 + end - start);
	jw_puts(w, ",\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n"
	    "    \"name\": \"PyTorch Profiler (0)\",\n    \"args\": {\n      \"Op count\": 0\n"
	    "    }\n  }");
	ev_begin(w);
	jw_puts(w, "  {\n    \"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": ");
	jw_us(w, start);
	jw_puts(w, ", \"pid\": \"Spans\", \"tid\": 0,\n    \"args\": {\n"
	    "      \"sort_index\": 536870912\n    }\n  }");
	ev_begin(w);
	jw_puts(w, "  {\n    \"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", "
	    "\"s\": \"g\",\n    \"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": ");
	jw_us(w, start);
	jw_puts(w, "\n  }");
	ev_begin(w);
	jw_puts(w, "  {\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n"
	    "    \"pid\": \"\", \"tid\": \"\", \"ts\": ");
	jw_us(w, TS0 + end);
	jw_puts(w, "\n  }\n],\n");
	snprintf(buf, sizeof(buf), "  \"traceName\": \"rank-%d.json.gz\",\n"
	    "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": %" PRId64 "\n}\n",
	    r, BASE_NS + clock_skew(&J->c, r));
	jw_puts(w, buf);
	gen_release(&G);
}
