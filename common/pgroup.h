/*
 * pgroup: the process groups of a job's collectives (the ranks text each
 * one carries, `pgr`), what each group is for, and the communication
 * model fitted on their transfer times. Shared by the what-if tools.
 *
 * A group whose forward-phase reductions (all-reduce, reduce-scatter)
 * carry more than 1 KiB on average reduces activations: tensor-parallel
 * (Megatron's row-parallel all-reduce, or with sequence parallelism its
 * reduce-scatter; a scalar reduced in the forward phase, such as a loss
 * averaged over the replicas, does not count). What a group only
 * gathers, broadcasts or exchanges in the forward phase does not make it
 * tensor-parallel: FSDP's parameter all-gather, DDP's buffer broadcast,
 * DLRM's embedding all-to-all, expert parallelism's dispatch. Of the
 * others that reduce (all-reduce, reduce-scatter, reduce) in the
 * backward and optimizer phases, the groups of the size whose reductions
 * move the most bytes there reduce the gradients (a gradient norm's
 * scalars, an embedding's gradient between the first and last stage,
 * weigh far less): they are the data-parallel groups (DDP's buckets,
 * FSDP's reduce-scatter, DLRM's dense all-reduce). Send and receive
 * (pipeline) count for neither.
 */
#ifndef KG_PGROUP_H
#define KG_PGROUP_H

#include <stddef.h>
#include <stdint.h>

#include "comm.h"
#include "kg.h"

struct pgroup {
	uint32_t pgr;     /* str id of the ranks text */
	const char *text; /* the ranks text (the reader's, until its next header) */
	int64_t size;
	int link;         /* COMM_INTRA, or COMM_INTER when its ranks span nodes */
	int fwd;          /* reduces activations in the forward phase */
	int late;         /* reduces in the backward or optimizer phase */
	int dp;           /* a data-parallel group */
	double fwdbytes;  /* moved by its forward-phase reductions */
	int64_t nfwd;
	int64_t cnt[KG_NCOLL][KG_NPHASE];  /* its collectives by type and phase */
	const char *from; /* where its ranks came from (the caller's words), or NULL */
};

struct pgroups {
	struct pgroup *g;
	size_t ng, cap;
	int64_t gpn;      /* ranks per node, for the links */
	int64_t dp;       /* after pgroups_classify: data-parallel size, -1 none */
	int64_t tp;       /* tensor-parallel size, 1 none */
	int phases;       /* some collective has a phase */
};

void pgroups_init(struct pgroups *s, int64_t gpn);
void pgroups_release(struct pgroups *s);
/* The index of the group with ranks text `text` (str id pgr), added if new. */
uint32_t pgroups_of(struct pgroups *s, uint32_t pgr, const char *text);
/* Send, receive or both: point to point, not a reduction. */
int pgroups_p2p(int coll);
/*
 * Tell the groups apart from the collectives c[0..n) (c[i] in group
 * grp[i], UINT32_MAX for none): sets fwd, late, dp, and s->dp, s->tp,
 * s->phases.
 */
void pgroups_classify(struct pgroups *s, const struct kg_task *const *c, const uint32_t *grp,
    size_t n);
/*
 * What group g does, in words, from the collectives it ran (after
 * pgroups_classify): its role and its collectives' kernels (one a
 * member) by type and phase, e.g. "data-parallel; kernels: allreduce bwd
 * 26, broadcast fwd 4".
 */
void pgroups_describe(const struct pgroups *s, const struct pgroup *g, char *buf, size_t len);
/*
 * The groups' ranks text for a list of ranks r[0..n) (sorted, distinct):
 * "[0, 1, 2]" in buf; 0, or -1 when it does not fit.
 */
int pgroups_ranks_text(const int64_t *r, size_t n, char *buf, size_t len);

/*
 * Fit the communication model on the same collectives: each
 * participant's kernel has the transfer time, so each counts once per
 * member. A link given (a topology file, --net) fills the classes of
 * that link the job has no samples for.
 * Then a type the job never ran on a link borrows the fit of the type
 * with the most samples there (its class's `from` says which): the
 * link's latency and bandwidth, with the type's own algorithm factors.
 * The tools say so when they use one (pgroups_borrowed).
 */
void pgroups_fit(const struct pgroups *s, const struct kg_task *const *c, const uint32_t *grp,
    size_t n, const struct comm_given *given, struct comm_model *m);

/* The room for pgroups_assume's sentence (a GPU's name may be in it). */
#define PGROUPS_MSGLEN 1024

/*
 * The links a prediction needs that the job never used and no one gave:
 * used[coll * COMM_NLINK + link] marks the classes the tool times. For
 * each link of m with no sample at all, needed by a used class, and not
 * set in given, given gets the link of the built-in topology of gpu (the
 * stream header's: comm_topology_default, h100 where none matches),
 * assumed[link] is set, and msg[link] holds the sentence to warn with
 * (naming the topology, and why h100 where the GPU's was not found).
 * note gets the words for the section's tools entry ("assumed network:
 * built-in h100 (50 GB/s, NCCL's ring model)"), "" when nothing was
 * assumed. Returns how many links were assumed: the caller then fits
 * again with given.
 */
int pgroups_assume(const struct comm_model *m, const uint8_t *used, const char *gpu,
    struct comm_given *given, char assumed[COMM_NLINK], char msg[COMM_NLINK][PGROUPS_MSGLEN],
    char *note, size_t notelen);

/*
 * Set aside the fitted classes of m whose latency or bandwidth is
 * implausible for their link (comm_implausible), against the link given
 * (a topology file, --net) or else the built-in topology of gpu
 * (comm_topology_default): each is replaced by that link's given class.
 * For each one replaced that used marks (as for pgroups_assume), msg
 * gets a sentence to warn with: the fit, why, and what is used instead.
 * Returns how many sentences; at most nmsg are written.
 */
int pgroups_plausible(struct comm_model *m, const uint8_t *used, const char *gpu,
    const struct comm_given *given, char (*msg)[PGROUPS_MSGLEN], int nmsg);
/*
 * Whether a collective of type coll on link is timed with a borrowed fit
 * (1, with the sentence to warn with in msg) or its own (0). Each
 * (type, link) answers 1 once: seen (KG_NCOLL x COMM_NLINK, zeroed by the
 * caller) remembers which have.
 */
int pgroups_borrowed(const struct comm_model *m, int coll, int link, uint8_t *seen, char *msg,
    size_t len);

#endif
