#!/usr/bin/env python3
"""Write a Kineto trace of at least MIN_BYTES (default 1e9) by repeating
the events of INPUT (plain or .gz) as consecutive iterations: copy k has
its timestamps shifted by k times the trace's span, its ProfilerStep
numbers, correlation ids and flow ids moved past those of copy k-1. The
result reads like one long profile, so kineto2graph builds a graph over
all of it instead of dropping duplicates.

usage: make-big.py INPUT OUTPUT [MIN_BYTES]"""
import gzip
import json
import re
import sys


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    min_bytes = int(sys.argv[3]) if len(sys.argv) == 4 else 1_000_000_000
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rt") as f:
        doc = json.load(f)
    events = doc.pop("traceEvents")
    ts = [float(e["ts"]) for e in events if "ts" in e and e.get("ph") == "X"]
    span = int(max(float(e["ts"]) + float(e.get("dur", 0)) for e in events
                   if "ts" in e and e.get("ph") == "X") - min(ts)) + 1000
    maxcorr = max([e.get("args", {}).get("correlation", 0) for e in events
                   if isinstance(e.get("args"), dict)] + [0]) + 1
    maxid = max([e["id"] for e in events if isinstance(e.get("id"), int)] + [0]) + 1
    steps = [int(m.group(1)) for e in events
             for m in [re.match(r"ProfilerStep#(\d+)$", str(e.get("name", "")))] if m]
    nsteps = (max(steps) - min(steps) + 1) if steps else 0
    head = json.dumps(doc)[:-1]
    with open(dst, "w") as out:
        out.write(head + (", " if doc else "") + '"traceEvents": [')
        k = 0
        first = True
        while True:
            for e in events:
                if e.get("ph") == "M" and k > 0:
                    continue
                e = dict(e)
                if "ts" in e and isinstance(e["ts"], (int, float)):
                    e["ts"] = e["ts"] + k * span
                if k and isinstance(e.get("id"), int):
                    e["id"] += k * maxid
                a = e.get("args")
                if k and isinstance(a, dict) and isinstance(a.get("correlation"), int) and a["correlation"] >= 0:
                    a = dict(a)
                    a["correlation"] += k * maxcorr
                    e["args"] = a
                m = re.match(r"ProfilerStep#(\d+)$", str(e.get("name", "")))
                if m and k:
                    e["name"] = "ProfilerStep#%d" % (int(m.group(1)) + k * nsteps)
                out.write(("" if first else ",\n") + json.dumps(e))
                first = False
            k += 1
            if out.tell() >= min_bytes:
                break
        out.write("]}\n")
    print("%s: %d copies" % (dst, k), file=sys.stderr)


main()
