#!/usr/bin/env python3
"""The multi-rank part of doc/ACCURACY.md, for bench/accuracy.

Usage: job-accuracy.py NAME JOB.jsonl STAT.csv
JOB.jsonl: graphcat of a simulated job section (graph-deps --merge |
graphsim); STAT.csv: graphstat --csv of it. Prints markdown: per-rank
iteration error, and for every collective matched across ranks its
simulated end against its measured end, both from the job's start, in %
of the job's measured span; also how far apart the participants' traced
ends are once the clocks are corrected (the rendezvous model says zero).
"""
import csv
import json
import sys

name, jobf, statf = sys.argv[1:4]
tasks, rank_edges, procs, sim, header, cov = {}, [], {}, None, None, {}
for line in open(jobf):
    r = json.loads(line)
    k = r["r"]
    if k == "header":
        header = r
    elif k == "proc":
        procs[r["id"]] = r.get("rank", -1)
    elif k == "task":
        tasks[r["id"]] = r
    elif k == "edge" and r["k"] == "rank":
        rank_edges.append((r["src"], r["dst"]))
    elif k == "sim":
        sim = r
    elif k == "cov":
        cov = r["c"]
rows = list(csv.DictReader(open(statf)))
job = [r for r in rows if r["rank"] == "job"]
ranks = [r for r in rows if r["rank"] != "job"]
span = max(float(r["measured_ns"]) for r in job)

# groups: a star from the lowest rank's task
groups = {}
for s, d in rank_edges:
    groups.setdefault(s, [s]).append(d)
t0m = min(t["ts"] for t in tasks.values())
t0s = min(sim["ss"])
errs, spreads = [], []
for g in groups.values():
    mend = [tasks[i]["ts"] + tasks[i].get("od", tasks[i]["d"]) - t0m for i in g]
    send = [sim["se"][i] - t0s for i in g]
    spreads.append(100 * (max(mend) - min(mend)) / span)
    for m, s in zip(mend, send):
        errs.append(100 * (s - m) / span)

print("### %s: %d ranks merged\n" % (name, len({r["rank"] for r in ranks})))
print("`kineto2graph r*.json.gz | graph-deps --merge | graphsim | graphstat`: "
      "%d collectives matched across ranks (%d kernels; %d unmatched); clock "
      "offsets estimated, ranks %s: %s ns.\n" % (
          len(groups), cov.get("coll_matched", 0), cov.get("coll_unmatched", 0),
          ", ".join(str(r) for r in header.get("ranks", [])),
          ", ".join(str(c) for c in header.get("clk", []))))
ae_rank = [abs(float(r["error_pct"])) for r in ranks]
print("Per rank and iteration: mean absolute error %.3f%%, maximum %.3f%%.\n" % (
    sum(ae_rank) / len(ae_rank), max(ae_rank)))
print("| rank | iteration | measured ms | simulated ms | error % |")
print("|---|---:|---:|---:|---:|")
for r in ranks + job:
    print("| %s | %s | %.3f | %.3f | %+.3f |" % (r["rank"], r["iteration"],
          float(r["measured_ns"]) / 1e6, float(r["simulated_ns"]) / 1e6, float(r["error_pct"])))
ae = [abs(e) for e in errs]
print("\nCollective ends (every participant of every matched collective, %d in "
      "all), simulated against measured, from the job's start, in %% of the job's "
      "measured span (the longest iteration's): mean absolute %.3f%%, maximum %.3f%%. The traced ends of one "
      "collective's participants, after the clock correction, lie within "
      "%.3f%% of the span of each other at most (mean %.3f%%): the part of the "
      "rendezvous model (all end together) that the trace does not bear out.\n" % (
          len(errs), sum(ae) / len(ae), max(ae), max(spreads), sum(spreads) / len(spreads)))
