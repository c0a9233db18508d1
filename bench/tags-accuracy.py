#!/usr/bin/env python3
"""The structure-tag part of doc/ACCURACY.md, for bench/accuracy.

Usage: tags-accuracy.py --header
       tags-accuracy.py NAME PP WITH.jsonl WITHOUT.jsonl

`graphcat -r` of one tracegen job converted twice by kineto2graph: from
traces with their record_function ranges, and from the same job's traces
without them (tracegen --no-annotations, same seed: the same work). Tasks
are matched by rank, kind and correlation id (runtime calls and GPU
tasks), and CPU ops, which have none, by rank, thread and place among the
thread's CPU ops. Prints markdown table rows, one per tag: of the tasks
the ranges tag, how many the conversion without ranges tags and how many
of those agree; and how many it tags that the ranges leave untagged. The
stage, which no range gives, is checked on every task against the job's
layout (Megatron: PP stages of WORLD / PP ranks each, in rank order). A
few tasks whose tags disagree are printed on standard error."""
import json
import sys

TAGS = (("phase", "ph"), ("micro-batch", "mb"), ("layer", "ly"))


def load(path):
    tags, rank, world, procs, nth = {}, 0, 1, {}, {}
    for line in open(path):
        r = json.loads(line)
        if r["r"] == "header":
            rank, world, procs, nth = r.get("rank", 0), r.get("world", 1), {}, {}
        elif r["r"] == "proc":
            procs[r["id"]] = r["tid"]
        elif r["r"] == "task":
            if "corr" in r:
                key = (rank, r["k"], r["corr"])
            else:
                tid = procs[r["p"]]
                key = (rank, "cpu", tid, nth.get(tid, 0))
                nth[tid] = nth.get(tid, 0) + 1
            tags[key] = dict((t, r.get(t)) for t in ("ph", "mb", "ly", "st", "n"))
    return tags, world


if sys.argv[1:] == ["--header"]:
    print("| job | tag | tagged with ranges | tagged without | agree | agree % "
          "| tagged without only |")
    print("|---|---|---:|---:|---:|---:|---:|")
    sys.exit(0)
if len(sys.argv) != 5:
    sys.exit(__doc__)
name, pp, with_f, without_f = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
(a, world), (b, _) = load(with_f), load(without_f)
keys = [k for k in a if k in b]
if len(keys) != len(a) or len(keys) != len(b):
    sys.exit("tags-accuracy: %s: %d tasks with ranges, %d without, %d matched"
             % (name, len(a), len(b), len(keys)))
shown = 0
for label, t in TAGS:
    have = [k for k in keys if a[k][t] is not None]
    inf = [k for k in have if b[k][t] is not None]
    ok = [k for k in inf if a[k][t] == b[k][t]]
    extra = [k for k in keys if a[k][t] is None and b[k][t] is not None]
    print("| %s | %s | %d | %d | %d | %.2f | %d |" % (
        name, label, len(have), len(inf), len(ok),
        100.0 * len(ok) / len(have) if have else 100.0, len(extra)))
    for k in have + extra:
        if a[k][t] != b[k][t] and shown < 5:
            print("%s: %s: with ranges %s, without %s" % (name, k, a[k], b[k]), file=sys.stderr)
            shown += 1
# the stage of every task, against the layout
per = world // pp
for conv, tags in (("with ranges", a), ("without", b)):
    got = [k for k in keys if tags[k]["st"] is not None]
    ok = [k for k in got if tags[k]["st"] == k[0] // per]
    print("| %s | stage (%s, against the layout) | %d | %d | %d | %.2f | |" % (
        name, conv, len(keys), len(got), len(ok), 100.0 * len(ok) / len(keys)))
