#!/usr/bin/env python3
"""A profiler trace less what no kgraph tool reads from it, for keeping
in data/gpu (data/gpu/README.md): the flow events (`ac2g`, `fwdbwd`),
`cuda_sync`, and the CPU operators that enclose no CUDA runtime or
driver call on their thread (the autograd and Python-side operators
between the kernels' own). Kernels, copies, sets, launches and the
operators that launch them are kept whole, so `opmodel fit` writes the
same model file from the trimmed trace as from the whole one: check it
with `cmp` on the two models before keeping a file.

    python3 scripts/trim-trace.py IN.json.gz OUT.json.gz

With --kernels, only the GPU activities instead, as CSV (data/gpu's
clock-in-step NAME.kernels.csv.gz): t_s (start, Unix seconds: the
trace's ts plus its baseTimeNanoseconds), dur_us, cat (kernel,
gpu_memcpy, gpu_memset), name.

    python3 scripts/trim-trace.py --kernels IN.json.gz OUT.csv.gz
"""
import bisect
import gzip
import json
import sys


def kernels(d, dst):
    base = d["baseTimeNanoseconds"] / 1000.0
    ks = sorted((e for e in d["traceEvents"] if e.get("ph") == "X" and
                 e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")), key=lambda e: e["ts"])
    with gzip.open(dst, "wt", compresslevel=9) as o:
        o.write("t_s,dur_us,cat,name\n")
        for e in ks:
            o.write('%.6f,%.3f,%s,"%s"\n' % ((e["ts"] + base) / 1e6, e["dur"], e["cat"],
                                           e["name"].replace('"', '""')))
    print("%s: %d GPU activities" % (dst, len(ks)), file=sys.stderr)


def main():
    args = sys.argv[1:]
    only_kernels = args[:1] == ["--kernels"]
    if only_kernels:
        args = args[1:]
    if len(args) != 2:
        sys.exit("usage: trim-trace.py [--kernels] IN.json.gz OUT")
    src, dst = args
    op = gzip.open if src.endswith(".gz") else open
    with op(src, "rt") as f:
        d = json.load(f)
    if only_kernels:
        kernels(d, dst)
        return
    ev = d["traceEvents"]
    launch = {}
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver"):
            launch.setdefault((e.get("pid"), e.get("tid")), []).append(e["ts"])
    for v in launch.values():
        v.sort()

    def encloses(e):
        ts = launch.get((e.get("pid"), e.get("tid")))
        if not ts:
            return False
        i = bisect.bisect_left(ts, e["ts"])
        return i < len(ts) and ts[i] <= e["ts"] + e.get("dur", 0)
    out = [e for e in ev
           if e.get("cat") not in ("ac2g", "fwdbwd", "cuda_sync")
           and not (e.get("cat") == "cpu_op" and not encloses(e))]
    d["traceEvents"] = out
    with gzip.open(dst, "wt", compresslevel=9) as f:
        json.dump(d, f, separators=(",", ":"))
    print("%s: %d events -> %d" % (dst, len(ev), len(out)), file=sys.stderr)


if __name__ == "__main__":
    main()
