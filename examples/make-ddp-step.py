#!/usr/bin/env python3
"""Write examples/ddp-step.json: one ProfilerStep of a two-layer model on
rank 0 of a 2-rank DDP job, in the PyTorch 2.x Kineto format, written for
kgraph (not recorded). A main thread runs forward and the optimizer, the
autograd thread runs backward, stream 7 computes, stream 20 runs the NCCL
all-reduce fenced by event record / stream wait (with cuda_sync records),
and loss.item() ends the step with a blocking device-to-host copy.
Kernels start no earlier than their launch ends plus 5 us and never
overlap on a stream, as on a GPU."""
import json
import sys

PID, MAIN, BWD = 4242, 4242, 4250
ev = []
corr = [100]
free = {}


def X(cat, name, tid, ts, dur, args=None, pid=PID):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args is not None:
        e["args"] = args
    ev.append(e)
    return e


def launch(tid, ts, dur, kname, stream, kdur, api="cudaLaunchKernel", cat="kernel", extra=None):
    corr[0] += 1
    c = corr[0]
    X("cuda_runtime", api, tid, ts, dur, {"correlation": c, "cbid": 211})
    kts = max(ts + dur + 5, free.get(stream, 0))
    if api == "cudaMemcpyAsync":
        kts = max(ts + 5, free.get(stream, 0))
    free[stream] = kts + kdur
    a = {"device": 0, "stream": stream, "correlation": c}
    if extra:
        a.update(extra)
    X(cat, kname, stream, kts, kdur, a, pid=0)
    ev.append({"ph": "s", "id": c, "pid": PID, "tid": tid, "ts": ts, "cat": "ac2g", "name": "ac2g"})
    ev.append({"ph": "f", "id": c, "pid": 0, "tid": stream, "ts": kts, "cat": "ac2g", "name": "ac2g", "bp": "e"})
    return c, kts


def rt(tid, name, ts, dur):
    corr[0] += 1
    X("cuda_runtime", name, tid, ts, dur, {"correlation": corr[0], "cbid": 0})
    return corr[0]


def wait_record(stream, on, rec, wait, ts):
    ev.append({"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": stream,
               "ts": ts, "dur": 1, "args": {"cuda_sync_kind": "Stream Wait Event", "stream": stream,
               "wait_on_stream": on, "wait_on_cuda_event_record_corr_id": rec,
               "correlation": wait, "device": 0}})


step = X("user_annotation", "ProfilerStep#1", MAIN, 1000, 0, {})
t = 1010
for i in range(2):
    X("cpu_op", "aten::linear", MAIN, t, 60, {"Input Dims": [[32, 1024], [1024, 1024], [1024]]})
    X("cpu_op", "aten::addmm", MAIN, t + 5, 50, {"Input Dims": [[1024], [32, 1024], [1024, 1024]]})
    launch(MAIN, t + 20, 15, "ampere_sgemm_128x64_tn", 7, 120)
    X("cpu_op", "aten::relu", MAIN, t + 70, 30, {"Input Dims": [[32, 1024]]})
    launch(MAIN, t + 80, 12, "void at::native::vectorized_elementwise_kernel<4, at::native::clamp_min_scalar_kernel>", 7, 8)
    t += 110
X("cpu_op", "aten::mse_loss", MAIN, t, 40, {"Input Dims": [[32, 1024], [32, 1024]]})
launch(MAIN, t + 10, 12, "void at::native::reduce_kernel<512, 1>", 7, 10)
t += 50
X("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", BWD, t + 30, 120, {})
X("cpu_op", "AddmmBackward0", BWD, t + 35, 110, {})
X("cpu_op", "aten::mm", BWD, t + 40, 40, {"Input Dims": [[32, 1024], [1024, 1024]]})
launch(BWD, t + 50, 14, "ampere_sgemm_128x64_nn", 7, 130)
X("cpu_op", "aten::mm", BWD, t + 90, 40, {"Input Dims": [[1024, 32], [32, 1024]]})
launch(BWD, t + 100, 14, "ampere_sgemm_128x64_nt", 7, 125)
X("cpu_op", "c10d::allreduce_", BWD, t + 160, 80, {"Input Dims": [[1048576]]})
rec = rt(BWD, "cudaEventRecord", t + 165, 5)
wait = rt(BWD, "cudaStreamWaitEvent", t + 175, 4)
wait_record(20, 7, rec, wait, t + 176)
free[20] = free[7]  # the event holds the NCCL stream until the gradients exist
launch(BWD, t + 185, 20, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 20, 300,
       extra={"Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576,
              "Group size": 2, "dtype": "Float", "Process Group Name": "0",
              "Process Group Ranks": "[0, 1]"})
t2 = t + 260
X("cpu_op", "Optimizer.step#SGD.step", MAIN, t2, 200, {})
rec2 = rt(MAIN, "cudaEventRecord", t2 + 5, 4)
w2 = rt(MAIN, "cudaStreamWaitEvent", t2 + 12, 3)
wait_record(7, 20, rec2, w2, t2 + 13)
free[7] = max(free[7], free[20])
X("cpu_op", "aten::_foreach_add_", MAIN, t2 + 20, 60, {"Input Dims": [[], []]})
launch(MAIN, t2 + 30, 15, "void at::native::multi_tensor_apply_kernel<4>", 7, 40)
X("cpu_op", "aten::item", MAIN, t2 + 100, 0, {"Input Dims": [[]]})
_, cts = launch(MAIN, t2 + 110, 0, "Memcpy DtoH (Device -> Pageable)", 7, 3,
                api="cudaMemcpyAsync", cat="gpu_memcpy", extra={"bytes": 4})
# The copy call blocks until the copy is done, then returns.
ev[-4]["dur"] = cts + 3 + 4 - (t2 + 110)
ev[-5]["dur"] = ev[-4]["dur"] + 20
# ev[-4] is the cudaMemcpyAsync call, ev[-5] aten::item around it
# The next step of the loop: the optimizer clears the gradients.
t3 = t2 + 110 + ev[-4]["dur"] + 25
X("cpu_op", "Optimizer.zero_grad#SGD.zero_grad", MAIN, t3, 15, {})
step["dur"] = t3 + 20 - 1000
doc = {"schemaVersion": 1,
       "deviceProperties": [{"id": 0, "name": "example GPU", "numSms": 108}],
       "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2},
       "traceEvents": [{"name": "thread_name", "ph": "M", "pid": PID, "tid": MAIN,
                        "args": {"name": "thread 4242 (python3)"}},
                       {"name": "thread_name", "ph": "M", "pid": PID, "tid": BWD,
                        "args": {"name": "thread 4250 (pt_autograd_0)"}}] + ev,
       "traceName": "examples/ddp-step.json"}
json.dump(doc, sys.stdout, indent=1)
sys.stdout.write("\n")
