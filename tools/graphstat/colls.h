/*
 * colls: graphstat's report of the collectives of a job section: for
 * each rendezvous group (the kernels joined by rank edges), which rank
 * got there last and how long each of the others waited for it,
 * measured and simulated.
 */
#ifndef KG_COLLS_H
#define KG_COLLS_H

#include <stdint.h>
#include <stdio.h>

#include "comm.h"
#include "kg.h"

/* One task as graphstat holds it. */
struct stask {
	int64_t ts, te, ss, se; /* measured and simulated interval */
	int64_t us, ue;         /* simulated without the profiler's cost */
	int64_t rank, it;
	uint32_t proc, name;
	uint8_t kind;
};

struct cmember {
	int64_t rank, mwait, swait; /* waits, ns */
};

/* What a collective task moves (from its record): for the model fit. */
struct cinfo {
	uint32_t task;
	uint8_t coll;
	uint64_t bytes;
	int64_t d;                  /* its transfer time in a job section */
};

struct cgroup {
	int64_t it;
	uint32_t name;
	int coll;                   /* type, from its first member */
	uint64_t bytes;
	int64_t t;                  /* transfer time (the first member's d) */
	int link;                   /* COMM_INTRA / COMM_INTER */
	int64_t mlast, slast;       /* rank that got there last */
	int64_t mtotal, stotal;     /* waits summed over the members */
	size_t m0, nm;              /* its members in colls.mem */
};

struct colls {
	uint32_t *src, *dst;        /* rank edges, task ids */
	size_t ne, caps, capd;
	struct cinfo *ci;           /* collective tasks, in id order */
	size_t nci, capci;
	int64_t gpus_per_node;
	struct comm_model model;    /* fitted on the groups (colls_build) */
	size_t nfit;                /* groups it was fitted on */
	struct cgroup *g;
	size_t ng, capg;
	struct cmember *mem;
	size_t nmem, capmem;
	int sim;
	int predicted;              /* an edited graph: its traced times measure nothing */
};

void colls_reset(struct colls *c);
void colls_release(struct colls *c);
void colls_edge(struct colls *c, uint32_t src, uint32_t dst);
void colls_task(struct colls *c, uint32_t id, int coll, uint64_t bytes, int64_t d);
/*
 * At the section's end, with t[0..n) its tasks in id order: the groups
 * and their waits (sim: t has simulated times).
 */
void colls_build(struct colls *c, const struct stask *t, size_t n, int sim);
/* The `top` groups with the most waiting, as text lines. */
void colls_text(const struct colls *c, const struct kg_reader *r, int top);
/* One CSV row per (collective, member) on f. */
void colls_csv(const struct colls *c, const struct kg_reader *r, FILE *f, int *header);
/*
 * The communication model fitted on the section's collectives
 * (common/comm.h): its classes as text lines, and with f one CSV row per
 * collective, observed against fitted.
 */
void colls_comm(const struct colls *c, FILE *f, int *header, int text);
/* s as a CSV field: quoted, quotes doubled. */
void csv_str(FILE *f, const char *s);

#endif
