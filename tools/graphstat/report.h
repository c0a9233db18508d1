/*
 * report: graphstat's rows (one per rank and iteration, and a job's
 * slowest rank per iteration) as text, JSON or CSV, and what a what-if
 * graph predicts: a graph edited by a what-if tool (the header's tools)
 * is a prediction, reported with the configuration the graph carries and,
 * with --base, the base's time and the predicted change, never as an
 * error against a measurement of another configuration.
 *
 * State: the section's collectives (a copy of each record, for the
 * groups' degrees) when the graph is a prediction; the base's rows.
 *
 * Calls between graphstat's files go one way, down this list:
 *
 *     graphstat.c        calls report.c, critical.c, colls.c, flops.c, memest.c
 *     report.c           calls flops.c (a row's rates and its "flops" object)
 *     critical.c         calls colls.c
 *     colls.c, flops.c,
 *     memest.c           call none of them
 *
 * So the text that reports a step's work (perf_text) is here, beside the
 * rows it sums, and flops.c only counts and makes rates.
 */
#ifndef KG_REPORT_H
#define KG_REPORT_H

#include <stdint.h>

#include "config.h"
#include "flops.h"
#include "kg.h"
#include "memest.h"

/* The numbers of one view (measured or simulated) of one iteration. */
struct view {
	int64_t start, end, span;
	int64_t comp, comm, over, other; /* exposed compute, exposed comm, overlapped */
	double util;                     /* mean of the 1 ms windows */
};

#define JOB INT64_MIN /* row.rank of a job's row */

/* Where a measured memory peak was reached: its task's tags. */
struct mempeak {
	int64_t alloc, reserved;  /* bytes, -1: no allocator event */
	int phase;                /* enum kg_phase */
	int64_t mb, layer;
	uint32_t name;            /* the task's operator (or its name) */
	int64_t rank;             /* the task's rank */
};

struct row {
	int64_t rank, iter;
	int sim;
	struct view m, s;
	int64_t uspan;            /* the simulated step without the profiler's cost; -1 none */
	struct mempeak mem;       /* measured (the trace's allocator events) */
	struct mempred pred;      /* predicted (memest.h) */
	int64_t devmem;           /* the GPU's memory, bytes; -1 unknown */
	struct perf perf;         /* its work and its GPUs (flops.h) */
};

/* Output forms. */
enum fmt { F_TEXT, F_JSON, F_CSV };

/* A base row: its time (simulated when the base has it, else measured). */
struct brow {
	int64_t rank, iter, ns;
	int sim;
	int64_t uns;             /* its step without the profiler's cost, -1 */
	double tps, tfl, mfu;    /* tokens/s, TFLOP/s per GPU, MFU; -1 unknown */
};

struct whatif {
	/* the section */
	int edited;              /* a what-if tool edited the graph */
	char *made;              /* the header's tools, joined */
	int64_t nranks;
	struct config cfg;       /* what the graph tells of its configuration */
	char pcal[16];           /* how the profiler's cost was found ("": none) */
	int64_t pcost, ustep;    /* its cost an event, the step it was calibrated to */
	int shown;               /* the table's layout printed for this section */
	int layout;              /* the text layout last printed: 0 none, 1 measured, 2 predicted */
	/* --base */
	const char *base;
	int collect;             /* reading the base: rows kept, nothing printed */
	struct brow *b;
	size_t nb, capb;
	int64_t base_ranks;      /* the base's number of ranks */
	size_t nrows, nbased;    /* the section's rows, and those with a base row */
};

void whatif_init(struct whatif *w);
void whatif_release(struct whatif *w);
/* A section begins: what made it. */
void whatif_header(struct whatif *w, const struct kg_header *h);
/* Each task, for the configuration. */
void whatif_task(struct whatif *w, const struct kg_task *t);
/* In text, before a section's rows: what it predicts (edited graphs) and against what. */
void whatif_text(struct whatif *w, const struct kg_reader *r, int fmt);
/*
 * At a section's end: 1 when --base was given and none of its rows
 * (iteration and rank) meets the section's, which has rows.
 */
int whatif_unrelated(const struct whatif *w);
/* One row in fmt (or kept, when reading the base). */
void print_row(int fmt, struct whatif *w, const struct row *r, int *header);
/*
 * After a section's rows (text): the median of its n iterations (the
 * job's rows, else the rank's), measured or predicted, the range of them
 * around it, and the simulated median, or the base's with --base. Nothing
 * for fewer than two.
 */
void print_median(const struct whatif *w, const struct row *rows, size_t n);
/* The base row r compares with (--base), or NULL. */
const struct brow *whatif_base_of(const struct whatif *w, const struct row *r);
/* A row's reported span: the predicted one of a prediction, else the measured. */
int64_t row_span(const struct whatif *w, const struct row *r);
/*
 * After a section's rows (text): the median of their tokens/s, TFLOP/s
 * per GPU and MFU, the FLOPs a step behind them, and the base's.
 */
void perf_text(const struct whatif *w, const struct row *rows, size_t n);
/* At a section's end (text): that its rows have no shapes to count FLOPs from. */
void perf_missing(const struct whatif *w, const struct row *rows, size_t n);

#endif
