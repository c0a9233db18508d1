/*
 * rtapi: what a runtime API call does to the GPU, by its name. The one
 * table of the calls kgraph knows, of the CUDA runtime (cuda*), the CUDA
 * driver (cu*) and HIP (hip*) alike: a launch, a copy, a graph launch,
 * an event record or wait, a synchronize. A rule of kineto2graph's that
 * names a role holds on every runtime the table has; a tool that writes
 * a call of its own names it in the runtime the trace used.
 *
 * Names are taken as the trace writes them (Kineto writes the runtime's
 * own function names: "cudaLaunchKernel", "hipExtModuleLaunchKernel").
 * A call the table does not name is RTAPI_OTHER: a query, an allocation,
 * something that neither puts work on a stream nor waits for it.
 */
#ifndef KG_RTAPI_H
#define KG_RTAPI_H

enum rtapi_role {
	RTAPI_OTHER,
	RTAPI_LAUNCH,     /* a kernel launch */
	RTAPI_COPY,       /* an asynchronous copy */
	RTAPI_COPY_SYNC,  /* a copy the calling thread waits for */
	RTAPI_SET,        /* a memset */
	RTAPI_GRAPH,      /* a graph launch: many GPU tasks from one call */
	RTAPI_RECORD,     /* an event recorded on a stream */
	RTAPI_WAIT,       /* a stream made to wait for an event */
	RTAPI_SYNC_STREAM, /* the thread waits for a stream */
	RTAPI_SYNC_EVENT, /* the thread waits for an event */
	RTAPI_SYNC_DEVICE, /* the thread waits for every stream of the device */
	RTAPI_CAPTURE_BEGIN, /* a stream's launches are captured into a graph, */
	RTAPI_CAPTURE_END,   /* not run, until this */
	RTAPI_NROLE
};

enum rtapi_runtime { RTAPI_CUDA, RTAPI_DRIVER, RTAPI_HIP, RTAPI_NRUNTIME };

/* The role of the call named name (RTAPI_OTHER for one the table lacks). */
int rtapi_role(const char *name);

/* Does the call put work on a stream (launch, copy, set, graph launch)? */
int rtapi_puts_work(int role);

/* The runtime a call's name belongs to, or -1 when it is none's. */
int rtapi_runtime(const char *name);

/*
 * The plain call of a role in a runtime, for a tool that writes a call
 * the trace did not have: "cudaLaunchKernel" or "hipLaunchKernel" for
 * RTAPI_LAUNCH, "cudaStreamWaitEvent" or "hipStreamWaitEvent" for
 * RTAPI_WAIT; NULL for a role or a runtime without one.
 */
const char *rtapi_call(int runtime, int role);

#endif
