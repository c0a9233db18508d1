#!/usr/bin/env python3
"""bench/holdout-split.py KERNELS.jsonl MM_SWEEP.json.gz OUTDIR [OP_SWEEP.json.gz]: a held-out
split of a GPU's kernel sweep (../shared/gpu/kernels/GPU) for
bench/opmodel-accuracy. Every fifth measurement line is held out; a
GEMM held out is held out of the profiler trace too (its aten::mm call,
told by its dims and strides), so that the model fitted on the rest has
seen neither its event-pair timing nor its kernel. Writes
OUTDIR/train.jsonl, OUTDIR/test.jsonl, OUTDIR/train.json.gz (the trace
less the held-out calls) and OUTDIR/test.json.gz (the trace with the
held-out aten::mm calls as its only operators: their kernels' true GPU
durations).

With OP_SWEEP (scripts/record-op-sweep.py's trace), every fifth attention
shape (b, heads, s, d) is held out of it the same way: its operators
(forward and backward, every repetition) only in OUTDIR/test_ops.json.gz,
the rest in OUTDIR/train_ops.json.gz."""
import gzip
import json
import sys


def layout_of(dims, strides):
    """nt/nn/tn of an aten::mm call as record.py made it: A (m x k) is
    'n' when its last stride is 1, B (k x n) likewise."""
    (m, k), (_, n) = dims[0], dims[1]
    a = "n" if strides[0][1] == 1 else "t"
    b = "n" if strides[1][1] == 1 else "t"
    return (m, n, k, a + b)


def split(t, side, out, names):
    """Write t's events into OUTDIR/NAMES[0] (train) and NAMES[1] (test):
    side(e) says where a CPU op goes ("train", "test", or None to drop
    it); kernels, launches and the rest go to both, so a kernel whose
    operator is held out has none in the training trace. Returns the
    operators held out."""
    keep_train, keep_test = [], []
    found = 0
    for e in t["traceEvents"]:
        if e.get("cat") == "cpu_op":
            where = side(e)
            if where == "test":
                found += 1
                keep_test.append(e)
            elif where == "train":
                keep_train.append(e)
        else:
            keep_train.append(e)
            keep_test.append(e)
    for name, evs in zip(names, (keep_train, keep_test)):
        t2 = dict(t)
        t2["traceEvents"] = evs
        with gzip.open(out + "/" + name + ".json.gz", "wt") as f:
            json.dump(t2, f)
    return found


def main():
    kern, trace, out = sys.argv[1:4]
    held = set()
    with open(kern) as f, open(out + "/train.jsonl", "w") as tr, \
            open(out + "/test.jsonl", "w") as te:
        for no, line in enumerate(f, 1):
            if no == 1:
                tr.write(line)
                te.write(line)
                continue
            if no % 5 == 0:
                te.write(line)
                r = json.loads(line)
                if r.get("op") == "mm":
                    held.add((r["m"], r["n"], r["k"], r["layout"]))
            else:
                tr.write(line)
    with gzip.open(trace, "rt") as f:
        t = json.load(f)

    def side(e):
        args = e.get("args") or {}
        if e.get("name") == "aten::mm" and "Input Dims" in args:
            return "test" if layout_of(args["Input Dims"], args["Input Strides"]) in held else "train"
        return "train"  # the inputs' randn: not GEMMs, not tested
    found = split(t, side, out, ("train", "test"))
    print("held out: %d GEMM shapes, %d of them found in the trace" % (len(held), found),
          file=sys.stderr)


def attention_split(trace, out):
    """Every fifth attention shape of an op sweep held out."""
    with gzip.open(trace, "rt") as f:
        t = json.load(f)
    shapes = []
    for e in t["traceEvents"]:
        args = e.get("args") or {}
        if e.get("cat") == "cpu_op" and "ttention" in e.get("name", "") and args.get("Input Dims"):
            q = tuple(args["Input Dims"][0])
            if q not in shapes:
                shapes.append(q)
    held = set(shapes[4::5])

    def side(e):
        if "ttention" not in e.get("name", ""):
            return "train"
        dims = (e.get("args") or {}).get("Input Dims")
        # the autograd node has no dims: out of both, so that a kernel
        # whose ops are held out has no operator left in the training
        if not dims:
            return None
        return "test" if tuple(dims[0]) in held else "train"
    found = split(t, side, out, ("train_ops", "test_ops"))
    print("held out: %d of %d attention shapes (%d operator calls)" % (len(held), len(shapes), found),
          file=sys.stderr)


main()
if len(sys.argv) > 4:
    attention_split(sys.argv[4], sys.argv[3])
