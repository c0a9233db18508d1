#!/usr/bin/env python3
"""bench/sweep-drift.py [KERNELS_DIR]: whether a GPU's traced GEMM sweep
drifts as it runs (the sign of the GEMM error).

record.py times each GEMM of the sweep twice: by CUDA event pairs around
repeated calls (kernels.jsonl, `us`: a median) and once under the
profiler (mm_sweep.json.gz: the kernels' own durations), the traced
shapes one after the other in some 400 ms of a busy GPU. Where the event
pairs time the kernel (100 us or more: ../shared/gpu/README.md), their
ratio to the traced kernel should not depend on when in the traced sweep
the shape ran, unless the GPU's clock moved under it. Prints, by window
of the traced sweep (ms from its first kernel), the GEMMs of 100 us or
more and the median, 10th and 90th percentile of that ratio.

KERNELS_DIR defaults to ../shared/gpu/kernels/h100.
"""
import bisect
import gzip
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
K = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "gpu", "kernels", "h100")


def layout_of(dims, strides):
    """(m, n, k, layout) of an aten::mm call as record.py made it."""
    (m, k), (_, n) = dims[0], dims[1]
    a = "n" if strides[0][1] == 1 else "t"
    b = "n" if strides[1][1] == 1 else "t"
    return (m, n, k, a + b)


def main():
    with gzip.open(os.path.join(K, "mm_sweep.json.gz"), "rt") as f:
        ev = json.load(f)["traceEvents"]
    kern = {e["args"]["correlation"]: e for e in ev
            if e.get("cat") == "kernel" and "correlation" in (e.get("args") or {})}
    if not kern:
        sys.exit("sweep-drift: %s: no kernels" % K)
    t0 = min(e["ts"] for e in kern.values())
    rt = sorted((e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")
                 and "correlation" in (e.get("args") or {})), key=lambda e: e["ts"])
    rts = [e["ts"] for e in rt]
    traced = {}  # shape -> (start of its first kernel in the sweep, summed kernel us)
    for o in ev:
        a = o.get("args") or {}
        if o.get("cat") != "cpu_op" or o.get("name") != "aten::mm" or "Input Dims" not in a:
            continue
        i = bisect.bisect_left(rts, o["ts"])
        start, us = None, 0.0
        while i < len(rt) and rt[i]["ts"] <= o["ts"] + o["dur"]:
            k = kern.get(rt[i]["args"]["correlation"])
            if k is not None:
                start = k["ts"] if start is None else start
                us += k["dur"]
            i += 1
        if start is not None:
            traced[layout_of(a["Input Dims"], a["Input Strides"])] = (start - t0, us)
    rows = []
    with open(os.path.join(K, "kernels.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            key = (r.get("m"), r.get("n"), r.get("k"), r.get("layout"))
            if r.get("op") == "mm" and key in traced and traced[key][1] >= 100:
                rows.append((traced[key][0] / 1e3, r["us"] / traced[key][1]))
    print("| window of the traced sweep | GEMMs >= 100 us | event pairs / kernel, median | p10 | p90 |")
    print("|---|---:|---:|---:|---:|")
    edges = [0, 50, 100, 150, 200, 250, 300, float("inf")]
    for lo, hi in zip(edges, edges[1:]):
        v = sorted(x for t, x in rows if lo <= t < hi)
        if v:
            print("| %s ms | %d | %.3f | %.3f | %.3f |" % (
                "%g-%g" % (lo, hi) if hi != float("inf") else "%g-" % lo, len(v),
                statistics.median(v), v[len(v) // 10], v[9 * len(v) // 10]))


main()
