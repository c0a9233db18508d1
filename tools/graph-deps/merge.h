/*
 * merge: graph-deps --merge, one job graph from one section per rank.
 * See merge.c and graph-deps(1).
 *
 * Besides merge_run, graph-deps' one entry, this header holds what the
 * merge's files share: the job as the first pass makes it (struct job,
 * its ranks and collectives) and the functions each file gives the
 * next. merge.c runs them in turn: read.c (the first pass), match.c
 * (collectives matched, clocks), write.c (the second pass); none of
 * them calls another's, nor back into merge.c.
 */
#ifndef KG_MERGE_H
#define KG_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "intern.h"
#include "kg.h"

/*
 * Read every section of paths[0..n) (NULL or "-": stdin), merge them
 * into one job section on output (NULL: stdout). verbose: a line per
 * rank on stderr. Returns the exit status.
 */
int merge_run(char **paths, int n, const char *output, int verbose);

/* the job's tools entry, and what gout_close names */
#define PRODUCER "graph-deps " KG_VERSION

/* A rank: its section's header, its counts, its frames held for the second pass. */
struct rank {
	int64_t rank, world, tbase, clk;
	char *gpu;               /* the header's (1.5), owned; "" if unknown */
	int64_t gpu_mem, gpu_sms;
	int pcal;                /* the profiler's cost (1.8): 0 none, 1 given,
	                            2 estimated, 3 calibrated */
	int64_t pcost, ustep;
	int64_t tsmin;           /* its tasks' first ts, INT64_MAX if none */
	size_t ntask, proc0, nproc, nedge, col0, ncol;
	size_t newtask0, newproc0;
	uint64_t colls, matched;
	uint32_t *smap;          /* its string ids -> the job's */
	size_t nsmap;
	char *z;                 /* the section, zstd frames from header to end */
	size_t nz, capz;
	const char *file;
	int section;
};

/* A collective, as the first pass keeps it for matching. */
struct coll {
	uint32_t task;           /* its id in its rank's section */
	uint32_t rk, proc;       /* rank index; the job's processor */
	int type;                /* enum kg_coll */
	uint32_t pg, pgr;        /* the job's string ids */
	int64_t ts, odur, gsize, seq;
	int64_t dur;             /* the transfer time once matched, else -1 */
};

/* A rank edge, between collectives (job.col indices). */
struct redge {
	uint32_t src, dst;
	int how;
};

/*
 * A set of int64 keys, each with a value: open addressing, at most half
 * full, so that taking n sections costs n lookups, not n^2 comparisons.
 */
struct i64map {
	int64_t *key;
	uint32_t *val; /* KG_NONE: an empty slot */
	size_t cap, n; /* cap: a power of two, or 0 */
};

/* The job: every rank's, as the first pass took them into it; one owner, merge_run. */
struct job {
	struct intern str;
	struct i64map rkmap, itmap; /* the ranks (to their index) and iterations taken */
	struct rank *rk;
	size_t nrk, caprk;
	struct kg_proc *proc;
	size_t nproc, capproc;
	struct coll *col;
	size_t ncol, capcol;
	int64_t *iters;
	size_t niters, capiters;
	char **tools;
	size_t ntools;
	struct kg_cov cov;
	struct redge *re;
	size_t nre, capre;
};

/* A rank's string id as the job's (KG_NONE, or one past its strings: KG_NONE). */
static inline uint32_t
remap(const uint32_t *smap, size_t n, uint32_t id)
{
	return id == KG_NONE || id >= n ? KG_NONE : smap[id];
}

/*
 * read.c: the first pass, every input read and taken into j in input
 * order; 1 after telling what stops the merge
 */
int read_inputs(struct job *j, char **paths, int n);
void i64map_release(struct i64map *m);

/* match.c: the collectives matched, the ranks' clock offsets */
void match(struct job *j, int64_t **endsp, uint32_t **erkp, size_t **istartp, size_t *ninstp);
int clocks(struct job *j, const int64_t *ends, const uint32_t *erk, const size_t *istart,
    size_t ninst);

/* write.c: the second pass, the job section written on g */
struct gout;
int write_job(struct job *j, struct gout *g);
/* struct rank pointers by rank */
int cmp_rank(const void *a, const void *b);

#endif
