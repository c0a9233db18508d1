/*
 * sim: the simulator of a section (formats/graph-stream.md), after Lumos's
 * list scheduling: processors (threads, streams) are serial; a task
 * starts when its fixed dependencies have ended (plus their delays) and
 * its processor is free. Runtime dependencies (`sync` and `event` edges
 * that name a stream `on` and a binding point `via`) are bound while
 * simulating: "the last task launched on stream `on` before `via` ran",
 * so an edit that adds or moves kernels keeps them right. Tasks joined
 * by `rank` edges rendezvous. Original timestamps are never read.
 *
 * A section is given record by record (sim_begin, then sim_proc,
 * sim_task and sim_edge as read) and run; graphsim writes what it finds,
 * kineto2graph runs a section again and again to find the profiler's
 * cost that gives a step time (sim_keep, sim_run with a cut).
 *
 * State: one section: about 33 bytes a task and 13 an edge (big arrays
 * mapped whole and grown by mremap), and with sim_keep 33 bytes a task
 * and 4 an edge more.
 */
#ifndef KG_SIM_H
#define KG_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "kg.h"

struct sim;

/* A simulator; prefault: fault its large arrays' pages in ahead on a
 * thread of its own (common/prefault.h). */
struct sim *sim_new(int prefault);
void sim_free(struct sim *s);

/*
 * The launch queue: a device holds at most n launched GPU tasks not yet
 * ended (0: unbounded); a launch call that would take a slot still held
 * blocks its thread until that slot's task ends (graphsim(1), "The
 * launch queue"). SIM_LAUNCH_QUEUE by default; set before sim_begin.
 */
#define SIM_LAUNCH_QUEUE 1024
void sim_launch_queue(struct sim *s, uint32_t n);

/* A section begins (a job section's ranks begin at their `t0`). */
void sim_begin(struct sim *s, const struct kg_header *h);
/* Its records as read, in order: the reader has checked their ids. */
void sim_proc(struct sim *s, const struct kg_proc *p);
void sim_task(struct sim *s, const struct kg_task *t);
void sim_edge(struct sim *s, const struct kg_edge *e);

/* Before the first sim_run of a section: keep what runs after the first
 * need (the durations and delays as read). */
void sim_keep(struct sim *s);
/*
 * Simulate the section: 0, -1 when some tasks can never start (a
 * cycle, or a wait on a task that never runs), or -2 when a simulated
 * time would leave the format's range (KG_TIME_MAX: a chain of long
 * tasks and delays, each in range). With cut (sim_keep
 * given; NULL: none), task x runs cut[x] ns shorter: taken off the
 * delay of the thread edges into it first (the host time before it on
 * its thread), what is left off its duration, never below 0. Each run
 * after the first starts again from the section as read.
 */
int sim_run(struct sim *s, const int64_t *cut);

/* The section's tasks, and after a run each one's start and end. */
size_t sim_ntasks(const struct sim *s);
const int64_t *sim_starts(const struct sim *s);
const int64_t *sim_ends(const struct sim *s);
/*
 * After a failed run: how many tasks never started, and the ids of the
 * first of them (up to nfirst, in first[]) and their names' str ids.
 */
size_t sim_stuck(const struct sim *s, uint32_t *first, uint32_t *names, size_t nfirst);

#endif
