#!/usr/bin/env python3
"""The structure-tag part of doc/ACCURACY.md, for bench/accuracy.

Usage: tags-accuracy.py NAME WITH.jsonl WITHOUT.jsonl
graphcat of one job converted twice by kineto2graph: from traces with
their record_function ranges, and from the same job's traces without
them (tracegen --no-annotations, same seed). Tasks are matched by kind
and correlation id (runtime calls and GPU tasks; CPU ops have none) and
rank; prints markdown: how often the tags inferred without ranges agree
with those the ranges give."""
import json
import sys
from collections import Counter


def load(path):
    tags, rank = {}, 0
    for line in open(path):
        r = json.loads(line)
        if r["r"] == "header":
            rank = r.get("rank", 0)
        elif r["r"] == "task" and "corr" in r:
            tags[(rank, r["k"], r["corr"])] = (r.get("ph"), r.get("mb"), r.get("ly"))
    return tags


name, with_f, without_f = sys.argv[1:4]
a, b = load(with_f), load(without_f)
keys = [k for k in a if k in b]
print("### %s\n" % name)
print("%d runtime calls and GPU tasks of every rank matched by correlation id "
      "(%d of %d with ranges).\n" % (len(keys), len(keys), len(a)))
print("| tag | tagged with ranges | tagged without | agree | agree % |")
print("|---|---:|---:|---:|---:|")
for i, tag in enumerate(("phase", "micro-batch", "layer")):
    have = [k for k in keys if a[k][i] is not None]
    inf = [k for k in have if b[k][i] is not None]
    ok = [k for k in inf if a[k][i] == b[k][i]]
    print("| %s | %d | %d | %d | %.2f |" % (tag, len(have), len(inf), len(ok),
          100.0 * len(ok) / len(have) if have else 0))
c = Counter((a[k][0], b[k][0]) for k in keys if a[k][0] is not None)
print("\n(With ranges, a task no range tags gets the inferred phase too.) "
      "Phase, with ranges -> without: " +
      ", ".join("%s -> %s: %d" % (x or "-", y or "-", n) for (x, y), n in sorted(c.items(), key=lambda kv: -kv[1])) + ".\n")
