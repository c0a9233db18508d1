/*
 * graph: one section of a graph stream held whole in memory, for the
 * tools that rebuild a graph rather than pass it on (graph-scale-layers).
 * Tasks and edges are decoded; `str` and `proc` records and the
 * coverage are kept as read and written back unchanged; a `sim` record
 * is dropped (the times no longer hold once the graph changes).
 *
 * The header's strings and arrays are the reader's: they stay valid until
 * the reader meets the next header, so a section must be written before
 * the next one is read.
 *
 * Memory: 192 bytes a task (sizeof(struct kg_task)) and 40 an edge, plus
 * the raw records.
 */
#ifndef KG_GRAPH_H
#define KG_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "kg.h"

struct prefault;

struct graph {
	struct kg_header h;
	int job;                /* a job section (graph-deps --merge) */
	char *raw;              /* str, proc and cov records, as read */
	size_t nraw, capraw;
	size_t *roff;           /* where each kept record starts in raw */
	uint8_t *rtype;
	size_t nr, capr, caprtype;
	struct kg_proc *proc;
	size_t nproc, capproc;
	struct kg_task *task;
	size_t ntask, captask;
	struct kg_edge *edge;
	size_t nedge, capedge;
	uint32_t nstr;          /* str records: a new string's id is nstr on */
	/* task and edge pages faulted in ahead (slots 0 and 1; a tool may
	 * use the others for its own arrays); NULL: none */
	struct prefault *pf;
};

void graph_init(struct graph *g);
void graph_release(struct graph *g);
/* Start a section: forget the last one, keep the header. */
void graph_begin(struct graph *g, const struct kg_header *h);
/* Take a record of the section (anything but its header and end). */
void graph_add(struct graph *g, const struct kg_rec *rec);
/*
 * Take a record of type `type` as read: a header begins a section, an
 * end closes it (returns 1: the section is whole), anything else is
 * added. 0 otherwise.
 */
int graph_take(struct graph *g, int type, const struct kg_rec *rec);
/* The rank a task runs on: its processor's, or the header's. */
int64_t graph_rank(const struct graph *g, uint32_t task);
/*
 * Write the section: the header h (the section's own, or a new one) with
 * `tool` added to its tools, the kept strings, the new strings xstr
 * (ids from g->nstr on), the processors (the kept ones when proc is
 * NULL), the tasks and edges given (the section's own, or rebuilt ones;
 * or, where task_at is set, the ntask tasks it makes, asked for in
 * order: a tool whose new tasks differ from their sources in a few
 * fields need not hold them whole), the coverage, the end. -1 with
 * w->err set on failure.
 */
struct graph_out {
	const struct kg_header *h;
	const char *const *xstr;
	size_t nxstr;
	const struct kg_proc *proc;
	size_t nproc;
	const struct kg_task *task;
	size_t ntask;
	void (*task_at)(void *arg, size_t i, struct kg_task *t);
	void *arg;
	const struct kg_edge *edge;
	size_t nedge;
};
int graph_write(struct kg_writer *w, const struct graph *g, const char *tool,
    const struct graph_out *o);

#endif
