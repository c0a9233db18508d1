/*
 * comm: the communication model the what-if tools re-time collectives
 * with, and its calibration from a trace's own collectives.
 *
 * A collective of type c moving a message of B bytes among n ranks takes
 *
 *     T = alpha * steps(c, n) + B * factor(c, n) / beta
 *
 * with the algorithm factors NCCL's ring uses: an all-reduce runs
 * 2(n-1) steps and moves 2(n-1)/n of the message through each link, an
 * all-gather or a reduce-scatter n-1 steps and (n-1)/n, an all-to-all
 * n-1 steps and (n-1)/n, a broadcast or reduce n-1 steps (pipelined) and
 * 1, a send or receive 1 step and 1. alpha (latency per step) and beta
 * (bus bandwidth) are fitted per collective type and per link: inside a
 * node (NVLink) or across nodes (the network), whichever the group's
 * slowest hop is; and, where that fits clearly better, separately for
 * small and large messages (NCCL's protocols trade latency for
 * bandwidth by size). A type whose samples are all of one step count
 * has its latency split into a fixed cost and a cost a step as NCCL's
 * ring model splits it, for a group of another size. A link no sample
 * tells is given (a topology): one line, or, for a built-in topology,
 * NCCL's ring model with its three protocols and their fixed costs.
 */
#ifndef KG_COMM_H
#define KG_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "kg.h"

/* The link a group's slowest hop uses. */
enum { COMM_INTRA, COMM_INTER, COMM_NLINK };

/* One observed transfer: type, group size, message bytes, link, ns. */
struct comm_sample {
	int coll;
	int64_t n;
	uint64_t bytes;
	int link;
	int64_t t;
};

/*
 * A class (type and link). Fitted: one line, or two for messages up to
 * and past a size (bytes a link moves, bytes * factor). Given by a
 * built-in topology: one line for each of NCCL's protocols, and a
 * collective takes the least of their times, as NCCL's tuner picks
 * (least set). A line is T = c0 + alpha * steps + bytes * factor / beta.
 */
struct comm_class {
	size_t samples;
	int nseg;
	int least; /* 1: the least of the lines, not the line for the size */
	struct {
		double upto;  /* this line holds up to these bytes a link */
		double c0;    /* ns, fixed (0 in a fit) */
		double alpha; /* ns per step */
		double beta;  /* bytes per ns (GB/s); 0: no bandwidth term */
	} seg[3];
	double x0;    /* the one step count of its samples; 0: several (comm_time) */
	double mape;  /* mean absolute error of the fit, % of the observed */
	int from;     /* 0: fitted on its own samples; else the type it borrows (pgroups_fit) */
	int given;    /* 1: given (comm_class_given), not fitted */
	double ymax;  /* the most bytes a link of its samples */
};

struct comm_model {
	struct comm_class c[KG_NCOLL][COMM_NLINK];
};

/*
 * Links given instead of fitted (a topology file, --net): each fills the
 * classes of its link that the job has no samples for.
 */
struct comm_given {
	int set[COMM_NLINK];
	int nccl[COMM_NLINK];    /* 1: NCCL's ring protocols on gbps (a built-in) */
	double gbps[COMM_NLINK]; /* bus bandwidth per GPU, GB/s */
	double us[COMM_NLINK];   /* latency a step, microseconds */
	int64_t gpn;             /* ranks per node; 0: not given */
};

/*
 * A topology file: lines of `nvlink GBPS US`, `network GBPS US`,
 * `gpus-per-node N`; `#` to the end of a line is a comment. 0, or -1 with
 * "LINE: what is wrong" (or the system's error) in err.
 */
int comm_given_load(const char *path, struct comm_given *g, char *err, size_t errlen);
/* "GBPS,US" for link; 0, or -1 when it is not two numbers in range. */
int comm_given_parse(const char *s, struct comm_given *g, int link);

/*
 * Fill c, of type coll on link, from a given link: one line (us a step,
 * gbps), or, for a built-in topology's link, NCCL's ring model on its
 * bandwidth: LL, LL128 (NVLink only) and Simple, each with NCCL's base
 * latency, latency a step and share of the bandwidth (comm.c).
 */
void comm_class_given(struct comm_class *c, const struct comm_given *g, int coll, int link);
/* The class's lines as text ("8.40 us + 3.40 us a step, 450.0 GB/s; ..."). */
void comm_class_text(const struct comm_class *c, char *buf, size_t len);
/*
 * A built-in topology by name ("h100", "a100", "v100": one DGX-class
 * node of 8 GPUs; "mi300x": AMD's 8-GPU MI300X platform; the numbers
 * and their sources are in comm.c and graph-scale-dp(1)): fills g's
 * links (those not set already when keep is 1) and gpus-per-node. 0, or
 * -1 for an unknown name.
 */
int comm_topology_builtin(const char *name, struct comm_given *g, int keep);
/* The built-in topologies' names, ", " between them. */
extern const char comm_topology_names[];
/*
 * The built-in topology of the GPU a stream's header names (its gpu):
 * "h100" for an H100, H200 or GH200, "a100" for an A100, "v100" for a
 * V100, "mi300x" for an AMD Instinct MI300X or MI325X (comm.c has the
 * list and what it leaves out); NULL for any other name, "" or NULL.
 */
const char *comm_topology_for_gpu(const char *gpu);
/* The topology the tools fall back on where no GPU's matches. */
#define COMM_TOPOLOGY_DEFAULT "h100"
/*
 * The built-in topology a tool takes for a link the job never used on
 * that GPU: the GPU's own (comm_topology_for_gpu), else
 * COMM_TOPOLOGY_DEFAULT, and why in why (when not NULL): "" for the
 * GPU's own, else "the stream names no GPU" or "the GPU (NAME) matches
 * no built-in topology", for the tool's message.
 */
const char *comm_topology_default(const char *gpu, char *why, size_t len);

double comm_steps(int coll, int64_t n);
double comm_factor(int coll, int64_t n);
/*
 * Least squares of the relative error of T over (steps, bytes * factor)
 * for each class with samples; alpha and beta kept non-negative (a class
 * whose samples do not tell them apart is fitted on latency alone).
 */
void comm_fit(const struct comm_sample *s, size_t n, struct comm_model *m);
/*
 * The model's time for a collective, ns; -1 when its class has no fit
 * (the other link's fit stands in when only it has one: the caller is
 * told by *approx).
 */
int64_t comm_time(const struct comm_model *m, int coll, int64_t n, uint64_t bytes, int link,
    int *approx);
/*
 * The same, made not to fall as n grows at fixed bytes on one link: a fit
 * of two lines (split at a size) is not continuous, so a group whose
 * bytes a link cross the split could be timed faster than a smaller one;
 * here each line below the one for the size counts too, at the split's
 * bytes, and the time is the most of them. A fit of one line, or the
 * least of NCCL's protocols, is unchanged (already non-decreasing in n).
 */
int64_t comm_time_mono(const struct comm_model *m, int coll, int64_t n, uint64_t bytes,
    int link, int *approx);
/*
 * Whether class c's latency or bandwidth is implausible for a link of
 * gbps GB/s (the GPU's built-in topology, or the one given): a line with
 * over COMM_MAX_STEP_US microseconds a step, or a bandwidth term under
 * 1/COMM_MIN_BW_SHARE of the link's where its samples move COMM_BW_BYTES
 * a link or more (below that NCCL's latency-bound protocols keep any link
 * far from its peak: a fit on small messages alone says little of it).
 * Such a fit has taken in the time a
 * rank waited for the others (a collective's kernel starts when its rank
 * calls it and ends when the last rank has), not the transfer. 1 with
 * the reason in why, else 0.
 */
#define COMM_MAX_STEP_US 100.0
#define COMM_MIN_BW_SHARE 10.0
#define COMM_BW_BYTES (1024.0 * 1024)
int comm_implausible(const struct comm_class *c, double gbps, char *why, size_t len);

#endif
