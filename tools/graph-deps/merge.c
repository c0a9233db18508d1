/*
 * merge: one job section from the sections of every rank.
 *
 * Each input section is one rank's graph (kineto2graph writes one per
 * trace). The job section holds all of them: strings interned anew,
 * processors tagged with their rank, ids moved up by the ranks before
 * them (ranks in ascending order), and `rank` edges joining the kernels
 * of each collective across its participants.
 *
 * Two passes. The first reads every input: its strings, processors,
 * collectives and counts are kept, and each section's zstd frames as
 * they came (a section whose frames do not begin and end with it, which
 * kgraph's writers never make, is compressed anew). The second reads
 * those frames again, rank by rank, and writes each task as it comes;
 * the edges go to a second stream in memory, passed on after the last
 * task (a record refers only to ids before it). State: the job
 * compressed, about 25 bytes a task, where holding it decoded took 176
 * bytes a task and 40 an edge (measured when this was chosen: git log).
 *
 * The files: read.c makes the first pass, match.c matches the
 * collectives and finds the clocks, write.c makes the second pass; this
 * one checks that the ranks read are of one job and runs the others in
 * turn (merge.h says who gives what).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "intern.h"
#include "kg.h"
#include "merge.h"
#include "util.h"

/*
 * Ranks of one job agree on the world size and each is inside it: a rank
 * of another job (another world, or a rank past this one's) stops the
 * merge before anything is written.
 */
static int
one_job_worlds(const struct job *j)
{
	size_t i, first = SIZE_MAX;

	for (i = 0; i < j->nrk; i++) {
		const struct rank *r = &j->rk[i];

		if (r->world <= 0)
			continue;
		if (r->rank >= r->world) {
			errmsg("%s: section %d: rank %lld of a world of %lld", r->file, r->section,
			    (long long)r->rank, (long long)r->world);
			return 1;
		}
		if (first == SIZE_MAX) {
			first = i;
		} else if (r->world != j->rk[first].world) {
			errmsg("%s: section %d: a world of %lld ranks, but %s section %d is of %lld: "
			    "not ranks of one job", r->file, r->section, (long long)r->world,
			    j->rk[first].file, j->rk[first].section, (long long)j->rk[first].world);
			return 1;
		}
	}
	return 0;
}

/*
 * Ranks of one job run the same collectives: when two or more ranks ran
 * some and none matched another rank's, they are likely not one job (or
 * not the same steps; or one job whose groups cannot be told apart), and
 * a rank none of whose collectives matched, while others did, likely
 * not of this job: both are warned about (-q silences them).
 */
static int
one_job_matched(const struct job *j)
{
	size_t i, with = 0;
	uint64_t matched = 0;

	for (i = 0; i < j->nrk; i++) {
		with += j->rk[i].colls > 0;
		matched += j->rk[i].matched;
	}
	if (with >= 2 && matched == 0) {
		warnmsg("%s: section %d: no collective of the %zu ranks matched another rank's: "
		    "not ranks of one job, or not the same steps? they are replayed without "
		    "meeting", j->rk[0].file, j->rk[0].section, j->nrk);
		return 0;
	}
	for (i = 0; i < j->nrk && with >= 2; i++)
		if (j->rk[i].colls > 0 && j->rk[i].matched == 0)
			warnmsg("%s: section %d: rank %lld: none of its %llu collectives matched "
			    "another rank's: is it of this job?", j->rk[i].file, j->rk[i].section,
			    (long long)j->rk[i].rank, (unsigned long long)j->rk[i].colls);
	return 0;
}

/*
 * Ranks of one job ran on one kind of GPU, as a rule: ranks that name
 * different ones (an A100 rank of one job with a V100 rank of another)
 * are warned about; a job of mixed GPUs is possible, so the merge goes on.
 */
static void
one_job_gpus(const struct job *j)
{
	size_t i, first = SIZE_MAX;

	for (i = 0; i < j->nrk; i++) {
		if (j->rk[i].gpu[0] == '\0')
			continue;
		if (first == SIZE_MAX)
			first = i;
		else if (strcmp(j->rk[i].gpu, j->rk[first].gpu) != 0) {
			warnmsg("%s: section %d: rank %lld ran on %s, but rank %lld (%s section %d) "
			    "on %s: not ranks of one job?", j->rk[i].file, j->rk[i].section,
			    (long long)j->rk[i].rank, j->rk[i].gpu, (long long)j->rk[first].rank,
			    j->rk[first].file, j->rk[first].section, j->rk[first].gpu);
			return;
		}
	}
}

/*
 * The ranks' time origins (tbase, each below 2^62 ns) within the format's
 * range of times of one another: each rank's times move onto the
 * earliest's, and the clock offsets are differences of such times, so
 * every sum the merge makes of them fits an int64.
 */
static int
one_job_clock(const struct job *j)
{
	size_t i, lo = 0;

	for (i = 1; i < j->nrk; i++)
		if (j->rk[i].tbase < j->rk[lo].tbase)
			lo = i;
	for (i = 0; i < j->nrk; i++)
		if (j->rk[i].tbase - j->rk[lo].tbase >= KG_TIME_MAX) {
			errmsg("%s: section %d: a time origin (tbase) %lld ns after %s section %d's: "
			    "past the format's range of times (2^53 ns), not ranks of one run",
			    j->rk[i].file, j->rk[i].section,
			    (long long)(j->rk[i].tbase - j->rk[lo].tbase), j->rk[lo].file,
			    j->rk[lo].section);
			return 1;
		}
	return 0;
}

int
merge_run(char **paths, int n, const char *output, int verbose)
{
	struct job j;
	struct gout g;
	int64_t *ends;
	uint32_t *erk;
	size_t *istart, ninst, i;
	int rc;

	memset(&j, 0, sizeof(j));
	intern_init(&j.str);
	kg_cov_init(&j.cov);
	rc = read_inputs(&j, paths, n);
	if (rc == 0 && j.nrk == 0) {
		errmsg("no section to merge");
		rc = 1;
	}
	if (rc == 0)
		rc = one_job_worlds(&j);
	if (rc == 0)
		rc = one_job_clock(&j);
	if (rc == 0)
		one_job_gpus(&j);
	if (rc == 0) {
		match(&j, &ends, &erk, &istart, &ninst);
		rc = clocks(&j, ends, erk, istart, ninst) < 0;
		free(ends);
		free(erk);
		free(istart);
		if (rc == 0)
			rc = one_job_matched(&j);
	}
	if (rc == 0) {
		if (verbose) {
			struct rank **ord = xmalloc(j.nrk * sizeof(*ord));

			for (i = 0; i < j.nrk; i++)
				ord[i] = &j.rk[i];
			qsort(ord, j.nrk, sizeof(*ord), cmp_rank);
			for (i = 0; i < j.nrk; i++)
				fprintf(stderr, "%s: rank %lld: %zu task%s, %llu collective%s, %llu matched, "
				    "clock offset %lld ns\n", progname, (long long)ord[i]->rank,
				    ord[i]->ntask, ord[i]->ntask == 1 ? "" : "s",
				    (unsigned long long)ord[i]->colls, ord[i]->colls == 1 ? "" : "s",
				    (unsigned long long)ord[i]->matched, (long long)ord[i]->clk);
			free(ord);
		}
		if (gout_open(&g, output, KG_LEVEL) < 0) {
			rc = 1;
		} else {
			kg_writer_run(&g.w, 1); /* one job section: a cut is seen */
			rc = write_job(&j, &g);
			rc = gout_close(&g, rc, PRODUCER);
		}
	}
	intern_release(&j.str);
	i64map_release(&j.rkmap);
	i64map_release(&j.itmap);
	kg_cov_release(&j.cov);
	for (i = 0; i < j.ntools; i++)
		free(j.tools[i]);
	free(j.tools);
	for (i = 0; i < j.nrk; i++) {
		free(j.rk[i].gpu);
		free(j.rk[i].smap);
		free(j.rk[i].z);
	}
	free(j.rk);
	free(j.proc);
	free(j.col);
	free(j.iters);
	free(j.re);
	return rc;
}
