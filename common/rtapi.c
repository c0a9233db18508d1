/*
 * rtapi: the table of runtime API calls (see rtapi.h).
 */
#include "rtapi.h"

#include <stddef.h>
#include <string.h>

enum { EXACT, PREFIX };

/*
 * First match wins: an exact name before the prefix it starts with
 * (hipMemcpyWithStream before hipMemcpy...). The blocking copies are
 * the synchronous calls of each API (the CUDA runtime's and HIP's
 * cudaMemcpy / hipMemcpy, and hipMemcpyWithStream, which PyTorch on
 * ROCm calls where it calls cudaMemcpyAsync and cudaStreamSynchronize on
 * CUDA: c10/cuda/CUDAFunctions.h, memcpy_and_sync); an asynchronous copy
 * from pageable memory blocks too, which kineto2graph sees by the
 * copy's name. hipLaunchHostFunc and cudaLaunchHostFunc put work on a
 * stream that the GPU trace does not show: launches without a GPU task.
 */
static const struct {
	const char *name;
	unsigned char match, role, runtime;
} calls[] = {
	{ "cudaMemcpy", EXACT, RTAPI_COPY_SYNC, RTAPI_CUDA },
	{ "cudaMemcpy", PREFIX, RTAPI_COPY, RTAPI_CUDA },
	{ "cudaMemset", PREFIX, RTAPI_SET, RTAPI_CUDA },
	{ "cudaGraphLaunch", PREFIX, RTAPI_GRAPH, RTAPI_CUDA },
	{ "cudaLaunch", PREFIX, RTAPI_LAUNCH, RTAPI_CUDA },
	{ "cudaEventRecord", EXACT, RTAPI_RECORD, RTAPI_CUDA },
	{ "cudaStreamWaitEvent", EXACT, RTAPI_WAIT, RTAPI_CUDA },
	{ "cudaStreamSynchronize", EXACT, RTAPI_SYNC_STREAM, RTAPI_CUDA },
	{ "cudaEventSynchronize", EXACT, RTAPI_SYNC_EVENT, RTAPI_CUDA },
	{ "cudaDeviceSynchronize", EXACT, RTAPI_SYNC_DEVICE, RTAPI_CUDA },
	{ "cudaStreamBeginCapture", PREFIX, RTAPI_CAPTURE_BEGIN, RTAPI_CUDA },
	{ "cudaStreamEndCapture", EXACT, RTAPI_CAPTURE_END, RTAPI_CUDA },

	{ "cuMemcpy", PREFIX, RTAPI_COPY, RTAPI_DRIVER },
	{ "cuMemset", PREFIX, RTAPI_SET, RTAPI_DRIVER },
	{ "cuGraphLaunch", PREFIX, RTAPI_GRAPH, RTAPI_DRIVER },
	{ "cuLaunch", PREFIX, RTAPI_LAUNCH, RTAPI_DRIVER },
	{ "cuEventRecord", EXACT, RTAPI_RECORD, RTAPI_DRIVER },
	{ "cuStreamWaitEvent", EXACT, RTAPI_WAIT, RTAPI_DRIVER },
	{ "cuStreamSynchronize", EXACT, RTAPI_SYNC_STREAM, RTAPI_DRIVER },
	{ "cuEventSynchronize", EXACT, RTAPI_SYNC_EVENT, RTAPI_DRIVER },
	{ "cuCtxSynchronize", EXACT, RTAPI_SYNC_DEVICE, RTAPI_DRIVER },
	{ "cuStreamBeginCapture", PREFIX, RTAPI_CAPTURE_BEGIN, RTAPI_DRIVER },
	{ "cuStreamEndCapture", EXACT, RTAPI_CAPTURE_END, RTAPI_DRIVER },

	{ "hipMemcpy", EXACT, RTAPI_COPY_SYNC, RTAPI_HIP },
	{ "hipMemcpyWithStream", EXACT, RTAPI_COPY_SYNC, RTAPI_HIP },
	{ "hipMemcpy", PREFIX, RTAPI_COPY, RTAPI_HIP },
	{ "hipMemset", PREFIX, RTAPI_SET, RTAPI_HIP },
	{ "hipGraphLaunch", PREFIX, RTAPI_GRAPH, RTAPI_HIP },
	{ "hipLaunch", PREFIX, RTAPI_LAUNCH, RTAPI_HIP },
	{ "hipExtLaunch", PREFIX, RTAPI_LAUNCH, RTAPI_HIP },
	{ "hipModuleLaunch", PREFIX, RTAPI_LAUNCH, RTAPI_HIP },
	{ "hipExtModuleLaunch", PREFIX, RTAPI_LAUNCH, RTAPI_HIP },
	{ "hipHccModuleLaunch", PREFIX, RTAPI_LAUNCH, RTAPI_HIP },
	{ "hipEventRecord", EXACT, RTAPI_RECORD, RTAPI_HIP },
	{ "hipStreamWaitEvent", EXACT, RTAPI_WAIT, RTAPI_HIP },
	{ "hipStreamSynchronize", EXACT, RTAPI_SYNC_STREAM, RTAPI_HIP },
	{ "hipEventSynchronize", EXACT, RTAPI_SYNC_EVENT, RTAPI_HIP },
	{ "hipDeviceSynchronize", EXACT, RTAPI_SYNC_DEVICE, RTAPI_HIP },
	{ "hipCtxSynchronize", EXACT, RTAPI_SYNC_DEVICE, RTAPI_HIP },
	{ "hipStreamBeginCapture", PREFIX, RTAPI_CAPTURE_BEGIN, RTAPI_HIP },
	{ "hipStreamEndCapture", EXACT, RTAPI_CAPTURE_END, RTAPI_HIP },
};

/*
 * A runtime's plain calls, for the calls a tool writes (the driver API
 * has none: PyTorch calls the runtime's, Triton the driver's).
 */
static const char *const plain[RTAPI_NRUNTIME][RTAPI_NROLE] = {
	[RTAPI_CUDA] = { [RTAPI_LAUNCH] = "cudaLaunchKernel",
	    [RTAPI_WAIT] = "cudaStreamWaitEvent", [RTAPI_RECORD] = "cudaEventRecord" },
	[RTAPI_HIP] = { [RTAPI_LAUNCH] = "hipLaunchKernel",
	    [RTAPI_WAIT] = "hipStreamWaitEvent", [RTAPI_RECORD] = "hipEventRecord" },
};

static int
find(const char *name)
{
	size_t i, n;

	if (name == NULL)
		return -1;
	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		n = strlen(calls[i].name);
		if (strncmp(name, calls[i].name, n) == 0 &&
		    (calls[i].match == PREFIX || name[n] == '\0'))
			return (int)i;
	}
	return -1;
}

int
rtapi_role(const char *name)
{
	int i = find(name);

	return i < 0 ? RTAPI_OTHER : calls[i].role;
}

int
rtapi_puts_work(int role)
{
	return role == RTAPI_LAUNCH || role == RTAPI_COPY || role == RTAPI_COPY_SYNC ||
	    role == RTAPI_SET || role == RTAPI_GRAPH;
}

int
rtapi_runtime(const char *name)
{
	int i = find(name);

	if (i >= 0)
		return calls[i].runtime;
	if (name == NULL)
		return -1;
	/* a call the table does not name still says its API */
	if (strncmp(name, "hip", 3) == 0 && name[3] >= 'A' && name[3] <= 'Z')
		return RTAPI_HIP;
	if (strncmp(name, "cuda", 4) == 0 && name[4] >= 'A' && name[4] <= 'Z')
		return RTAPI_CUDA;
	if (strncmp(name, "cu", 2) == 0 && name[2] >= 'A' && name[2] <= 'Z')
		return RTAPI_DRIVER;
	return -1;
}

const char *
rtapi_call(int runtime, int role)
{
	if (runtime < 0 || runtime >= RTAPI_NRUNTIME || role < 0 || role >= RTAPI_NROLE)
		return NULL;
	return plain[runtime][role];
}
