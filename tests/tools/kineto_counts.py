#!/usr/bin/env python3
"""Count the tasks kineto2graph should make from a Kineto trace, by kind.

    kineto_counts.py TRACE.json[.gz]
    -> cpu=N rt=N kern=N coll=N cpy=N set=N

An independent reading of which tasks kineto2graph keeps with
`--iteration all`, written from the rules below and the Kineto format,
not from the C code, so that tests/traces.bats can hold the two against
each other. One reading differs from kineto2graph(1)'s wording on
purpose: there, an event is inside an op when it starts before the op
ends, so an op of zero length never holds anything (see cpu below).

- Only complete events (ph "X") are timeline events.
- cpu: CPU ops (cat cpu_op, or Operator in PyTorch 1.8 files) that are
  leaves: no other CPU op or runtime call of the same thread lies inside
  them. ProfilerStep#N ranges are iterations, not ops. A runtime call
  never contains anything. B lies inside A when it starts at A's start
  or later but before A's end, and ends by A's end: so an event of zero
  length at A's start is inside even a zero-length A, one at A's end is
  not. Two ops with the same interval: the first in the file is the
  parent (Kineto writes a parent before its callees). At Kineto's
  microsecond clock this is right for aten::item and its callee
  aten::_local_scalar_dense, both lasting 0 at one instant (hundreds of
  times in real traces); the file cannot tell it from two calls in a row
  within one microsecond (aten::to twice, rarer), counted as nested too.
- rt: runtime calls (cuda_runtime, Runtime, cuda_driver).
- kern / coll: kernels (kernel, Kernel); coll when the name starts with
  ncclKernel_ or ncclDevKernel_.
- cpy: gpu_memcpy, Memcpy. set: gpu_memset, Memset.
- Iterations: a CPU event is in iteration N when its start lies in
  ProfilerStep#N's range [ts, ts+dur), a range cut short where the next
  step starts. A GPU event takes the iteration of the runtime call with
  the same args.correlation, else that of its own start. Events in no
  iteration are dropped; with no ProfilerStep in the trace nothing is.

Times are compared exactly: JSON numbers are read as Decimal, so float
microsecond timestamps are never rounded.

Exit 0, or 1 with a message on stderr when the file is not a Kineto trace.
"""
import bisect
import decimal
import gzip
import json
import re
import sys

STEP = re.compile(r"ProfilerStep#([0-9]+)$")
OP_CATS = ("cpu_op", "Operator")
STEP_CATS = ("cpu_op", "Operator", "user_annotation")
RT_CATS = ("cuda_runtime", "Runtime", "cuda_driver")
KERN_CATS = ("kernel", "Kernel")
CPY_CATS = ("gpu_memcpy", "Memcpy")
SET_CATS = ("gpu_memset", "Memset")
NCCL_PREFIXES = ("ncclKernel_", "ncclDevKernel_")
KINDS = ("cpu", "rt", "kern", "coll", "cpy", "set")


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data, parse_float=decimal.Decimal)


def thread_key(e):
    # PyTorch 1.8 writes CPU tids as strings of digits ("1890023232")
    # and sometimes the same tid as a number: one thread either way.
    def norm(v):
        if isinstance(v, str) and v.isdigit():
            return int(v)
        return v
    return (norm(e.get("pid")), norm(e.get("tid")))


def leaves(ops_and_rts):
    """The leaf ops of one thread. Items: (ts, end, is_rt, index)."""
    # Parents sort before what they contain: earlier start first, then
    # the later end, then an op before a runtime call, then file order.
    ev = sorted(ops_and_rts, key=lambda x: (x[0], -x[1], x[2], x[3]))
    out = []
    for i, (ts, end, is_rt, idx) in enumerate(ev):
        if is_rt:
            continue
        leaf = True
        j = i + 1
        # What starts at ts or later follows in this order: look at those
        # that start by `end` for one inside (see the module's comment).
        while j < len(ev) and ev[j][0] <= end:
            b_ts, b_end = ev[j][0], ev[j][1]
            if (b_ts == ts or b_ts < end) and b_end <= end:
                leaf = False
                break
            j += 1
        if leaf:
            out.append(idx)
    return out


def count(trace):
    if isinstance(trace, dict):
        events = trace.get("traceEvents")
    else:
        events = None
    if not isinstance(events, list):
        raise ValueError("not a Kineto trace (no traceEvents array)")
    events = [e for e in events
              if isinstance(e, dict) and e.get("ph") == "X"
              and "ts" in e and "dur" in e]

    # Iteration ranges.
    steps = {}
    for e in events:
        m = STEP.match(str(e.get("name", "")))
        if m and e.get("cat") in STEP_CATS:
            n = int(m.group(1))
            lo, hi = e["ts"], e["ts"] + e["dur"]
            if n in steps:
                lo, hi = min(lo, steps[n][0]), max(hi, steps[n][1])
            steps[n] = (lo, hi)
    ranges = sorted((lo, hi, n) for n, (lo, hi) in steps.items())
    for i in range(len(ranges) - 1):
        lo, hi, n = ranges[i]
        ranges[i] = (lo, min(hi, ranges[i + 1][0]), n)
    starts = [r[0] for r in ranges]

    def iteration(ts):
        i = bisect.bisect_right(starts, ts) - 1
        if i >= 0 and ts < ranges[i][1]:
            return ranges[i][2]
        return None

    def kept(it):
        return not ranges or it is not None

    # CPU side, thread by thread.
    threads = {}
    rt_iter = {}
    counts = dict.fromkeys(KINDS, 0)
    for i, e in enumerate(events):
        cat = e.get("cat")
        name = str(e.get("name", ""))
        if cat in OP_CATS and not STEP.match(name):
            threads.setdefault(thread_key(e), []).append(
                (e["ts"], e["ts"] + e["dur"], 0, i))
        elif cat in RT_CATS:
            threads.setdefault(thread_key(e), []).append(
                (e["ts"], e["ts"] + e["dur"], 1, i))
            it = iteration(e["ts"])
            corr = (e.get("args") or {}).get("correlation")
            if corr is not None:
                rt_iter.setdefault(corr, it)
            if kept(it):
                counts["rt"] += 1
    for evs in threads.values():
        for i in leaves(evs):
            if kept(iteration(events[i]["ts"])):
                counts["cpu"] += 1

    # GPU side.
    for e in events:
        cat = e.get("cat")
        if cat in KERN_CATS:
            kind = "coll" if str(e.get("name", "")).startswith(NCCL_PREFIXES) else "kern"
        elif cat in CPY_CATS:
            kind = "cpy"
        elif cat in SET_CATS:
            kind = "set"
        else:
            continue
        corr = (e.get("args") or {}).get("correlation")
        it = rt_iter[corr] if corr in rt_iter else iteration(e["ts"])
        if kept(it):
            counts[kind] += 1
    return counts


def main(argv):
    if len(argv) != 2:
        print("usage: kineto_counts.py TRACE", file=sys.stderr)
        return 2
    try:
        counts = count(load(argv[1]))
    except (OSError, ValueError) as err:
        print("kineto_counts.py: %s: %s" % (argv[1], err), file=sys.stderr)
        return 1
    print(" ".join("%s=%d" % (k, counts[k]) for k in KINDS))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
