/*
 * graph-scale-dp's made collectives. A DistributedDataParallel job traced
 * at world size 1 shows its reducer asking NCCL for each gradient bucket's
 * all-reduce (c10d::allreduce_ around record_param_comms with the bucket's
 * size; the compute stream's event recorded and NCCL's stream made to
 * wait for it), and no kernel: NCCL, alone, runs none. To predict more
 * replicas, those all-reduces are made where they would run.
 */
#ifndef GSDP_MAKE_H
#define GSDP_MAKE_H

#include <stddef.h>

#include "graph.h"
#include "kg.h"

/* Is t a request for an all-reduce: a cudaStreamWaitEvent call inside
 * record_param_comms, whose Input Dims give the bucket's elements? */
int dp_request(const struct kg_reader *r, const struct kg_task *t);
/* Does section g ask for all-reduces it has no kernel for? */
int dp_skipped(const struct graph *g, const struct kg_reader *r);

/*
 * Write section g to w (its header's tools with `tool` added) with the
 * all-reduces made: for each cudaStreamWaitEvent call inside
 * record_param_comms, a collective kernel on a stream of its own (the
 * rank's NCCL stream), all-reduce of the bucket's elements (the first
 * tensor of the op's Input Dims) at 4 bytes each (DDP reduces gradients
 * in the parameters' type, fp32 under autocast), a group of one whose
 * ranks are "[0]", no duration (the caller times it for the new group),
 * launched by that call, after the last kernel its thread launched before
 * the request (the bucket's gradients: an event edge) and after the
 * all-reduce before it on NCCL's stream; and DDP's finalize: the compute
 * stream's first kernel of an iteration's optimizer phase waits for the
 * iteration's last all-reduce. *nmade gets their number. -1 with w->err
 * set on a write error.
 */
int dp_make(const struct graph *g, const struct kg_reader *r, struct kg_writer *w,
    const char *tool, size_t *nmade);

#endif
