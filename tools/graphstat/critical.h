/*
 * critical: graphstat --critical, the chain of tasks that set each
 * iteration's end, followed backwards from the task that ends it
 * through every dependency kind, and in a job section across ranks
 * through collectives and sends (to the member that started last, the
 * one the others waited for). Each link is a task's time on the path
 * (compute, communication, host, or waiting on another rank) or a gap
 * between two tasks (launch latency, host time between tasks, idle);
 * the links of an iteration tile its span exactly, from the span's start
 * to its end.
 *
 * State: with --critical, 8 bytes a task and 24 an edge beyond what
 * graphstat holds, for one section.
 */
#ifndef KG_CRITICAL_H
#define KG_CRITICAL_H

#include <stdint.h>

#include "colls.h"
#include "kg.h"

struct cedge {
	uint32_t src, dst;
	int64_t dl;
	int kind; /* enum kg_edge_kind */
};

struct crit {
	struct cedge *e;
	size_t ne, cape;
	int64_t *d; /* the simulator's duration, by task id */
	size_t nd, capd;
};

/* Output forms, as graphstat's: text, JSON lines, CSV. */
enum { CRIT_TEXT, CRIT_JSON, CRIT_CSV };

void crit_reset(struct crit *c);
void crit_release(struct crit *c);
void crit_task(struct crit *c, int64_t d);
void crit_edge(struct crit *c, const struct kg_edge *e);
/*
 * At a section's end, t[0..n) its tasks in id order (sim: with simulated
 * times, which the path then follows; else the measured ones), pmain and
 * pkind per processor, job for a job section: print each iteration's
 * path (a job section: each job iteration's, from its slowest rank) in
 * form fmt, with the `top` tasks and kernels by time on the path. The
 * CSV header is printed once, when *header is 0.
 */
void crit_report(struct crit *c, const struct stask *t, size_t n, int sim,
    const uint8_t *pmain, const uint8_t *pkind, int job, const struct kg_reader *r,
    int fmt, int top, int *header);

#endif
