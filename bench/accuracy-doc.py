#!/usr/bin/env python3
"""Write doc/ACCURACY.md and its detail files doc/notes/accuracy-*.md from
the pieces bench/accuracy measured into its work directory T.

    bench/accuracy-doc.py T OUT RUNLINE

OUT is the main document; the detail files go to notes/ beside it. The
main document holds the summary table and each measurement's headline
rows; the detail files hold every table the scripts wrote. Nothing here
is measured: every number comes from T.
"""
import csv
import os
import re
import sys

T, out, runline = sys.argv[1], sys.argv[2], sys.argv[3]
notes_dir = os.path.join(os.path.dirname(out) or ".", "notes")
os.makedirs(notes_dir, exist_ok=True)

cols = ["trace", "rank", "iteration", "measured_ns", "simulated_ns", "error_pct",
        "exposed_compute_ns", "overlapped_ns", "exposed_comm_ns", "other_ns",
        "measured_exposed_compute_ns", "measured_overlapped_ns",
        "measured_exposed_comm_ns", "measured_other_ns", "measured_util", "simulated_util"]


def load(name):
    with open(os.path.join(T, name)) as f:
        return [dict(zip(cols, r)) for r in csv.reader(f)]


def read(name):
    p = os.path.join(T, name)
    return open(p).read() if os.path.exists(p) else ""


def intro(name):
    return open(os.path.join(os.path.dirname(os.path.abspath(__file__)), name)).read()


def stats(errs):
    errs = [abs(e) for e in errs]
    return (sum(errs) / len(errs), max(errs)) if errs else (float("nan"), float("nan"))


def error_tables(text):
    """(heading, mean |error|, max |error|, n) of each markdown table in
    text with an `error %` column (the first such column), under the last
    heading before it."""
    res, heading, hdr, errs = [], "", None, []

    def flush():
        if hdr is not None and errs:
            m, x = stats(errs)
            res.append((heading, m, x, len(errs)))

    for line in text.splitlines() + [""]:
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if hdr is None:
                hdr = cells.index("error %") if "error %" in cells else -1
                errs = []
            elif hdr >= 0 and not set(line) <= set("|-: ") and hdr < len(cells):
                try:
                    errs.append(float(cells[hdr].rstrip("%")))
                except ValueError:
                    pass
        else:
            flush()
            hdr, errs = None, []
    return res


def bold_lines(text):
    return [l for l in text.splitlines() if l.startswith("**")]


def matching(text, pattern):
    return [l for l in text.splitlines() if re.search(pattern, l)]


def first_row(text, start):
    for l in text.splitlines():
        if l.startswith(start):
            return l
    return None


# ---- the replay of every shared trace
base = load("base.csv")
real_rows = [r for r in base]
mean, mx = stats([float(r["error_pct"]) for r in base])
by_trace = {}
for r in base:
    by_trace.setdefault(r["trace"], []).append(float(r["error_pct"]))
amd = [t for t in by_trace if t.startswith("amd_rocm/")]
abl = []
for label, name in (("all dependencies", "base.csv"), ("without `event` edges", "noevent.csv"),
                    ("without `sync` edges", "nosync.csv"), ("without either", "neither.csv")):
    rows = load(name)
    m, x = stats([float(r["error_pct"]) for r in rows])
    sgn = sum(float(r["error_pct"]) for r in rows) / len(rows)
    abl.append((label, m, x, sgn))


def cat(r, c):
    span = float(r["measured_ns"])
    return 100 * (float(r[c + "_ns"]) - float(r["measured_" + c + "_ns"])) / span


replay = []
replay.append("# Replay accuracy: every iteration of every shared trace\n\n")
replay.append("Written by `bench/accuracy` (do not edit by hand); %s.\n\n" % runline)
replay.append(
    "Every Kineto trace in `../shared/traces`, every rank and iteration,\n"
    "converted by kineto2graph, simulated by graphsim from durations and\n"
    "dependencies alone, and compared by graphstat with the trace's own\n"
    "times (graphstat(1): the span and its breakdown). Excluded:\n"
    "`hta_sampled_128rank_2ranks` (events dropped from it on purpose) and\n"
    "the execution traces (`*_et.json.gz`, not Kineto traces). A trace\n"
    "without ProfilerStep is one iteration, `-`.\n\n")
replay.append("| trace | rank | iteration | measured ms | simulated ms | error % "
              "| exp. compute | overlapped | exp. comm | other |\n")
replay.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
for r in base:
    replay.append("| %s | %s | %s | %.3f | %.3f | %+.3f | %+.3f | %+.3f | %+.3f | %+.3f |\n" % (
        r["trace"], r["rank"], r["iteration"], float(r["measured_ns"]) / 1e6,
        float(r["simulated_ns"]) / 1e6, float(r["error_pct"]),
        cat(r, "exposed_compute"), cat(r, "overlapped"), cat(r, "exposed_comm"),
        cat(r, "other")))
replay.append("\nThe four category columns: the simulated minus the measured value of\n"
              "each breakdown category, in % of the measured span.\n\n")
replay.append("## What the graph keeps from the trace\n\n"
              "Task durations are the trace's, and kineto2graph keeps as edge delays\n"
              "the host time between CPU tasks, the GPU's own time between tasks up\n"
              "to 20 us, and GPU idle time that no dependency in the trace explains\n"
              "(`gap_kept`). A replay checks that the dependencies and the scheduler\n"
              "put every task where the trace has it; a missing or wrong dependency\n"
              "shows as error (the ablation below). Counts per trace:\n\n")
replay.append("| trace | gaps kept | gaps bound to another stream | waits explicit | inferred "
              "| unresolved | launches outside window | launch overlaps |\n")
replay.append("|---|---:|---:|---:|---:|---:|---:|---:|\n")
with open(os.path.join(T, "cov.csv")) as f:
    for r in csv.reader(f):
        replay.append("| " + " | ".join(r) + " |\n")
replay.append("\n## Ablation per trace\n\nMean absolute error %, with all dependencies, "
              "without `event` edges and without `sync` edges (`graph-deps --drop`):\n\n")
replay.append("| trace | all | no event | no sync |\n|---|---:|---:|---:|\n")
ne, ns = {}, {}
for r in load("noevent.csv"):
    ne.setdefault(r["trace"], []).append(abs(float(r["error_pct"])))
for r in load("nosync.csv"):
    ns.setdefault(r["trace"], []).append(abs(float(r["error_pct"])))
for t, e in by_trace.items():
    a = lambda v: sum(v) / len(v) if v else float("nan")
    replay.append("| %s | %.3f | %.3f | %.3f |\n" % (t, a([abs(x) for x in e]),
                                                     a(ne.get(t, [])), a(ns.get(t, []))))
open(os.path.join(notes_dir, "accuracy-replay.md"), "w").write("".join(replay))

# ---- jobs, the communication model, structure tags
jobs, comm, tags = read("jobs.md"), read("comm.md"), read("tags.md")
jobs_doc = ("# Multi-rank jobs, the communication model and structure tags\n\n"
            "Written by `bench/accuracy` (do not edit by hand); %s.\n\n" % runline +
            "## Ranks replayed together\n\n"
            "Merged (`graph-deps --merge`), each collective is a rendezvous: its\n"
            "kernels start when their ranks reach it and end together, the transfer\n"
            "time (the shortest traced kernel of the collective) after the last\n"
            "arrival; each rank starts where its trace starts on the job's corrected\n"
            "clock. The DLRM job is real (8 V100s); the others are tracegen's.\n\n" +
            jobs +
            "\n## Communication model: the fit on the traces' own collectives\n\n"
            "`graphstat --comm` fits `T = alpha * steps + bytes * factor / beta`\n"
            "(common/comm.h: NCCL's ring factors, a class per collective type and\n"
            "link) to the transfer times of a merged job's collectives. Residuals:\n"
            "the model's time against the observed one, in %.\n\n" + comm +
            "\n## Structure tags: inferred against the trace's own ranges\n\n"
            "`bench/tags-accuracy.py`: each tracegen job written twice with the same\n"
            "seed, with and without its micro-batch and layer ranges; of the tasks\n"
            "the ranges tag, how many the conversion without ranges tags alike, and\n"
            "how many it tags that the ranges leave untagged (kineto2graph(1),\n"
            "Structure tags). What the structure does not show is left unset and\n"
            "counted, not guessed: a pipeline stage of one layer repeats no unit\n"
            "(no layer inferred), and with one micro-batch the first stage's\n"
            "gradient zeroing is tagged micro-batch 0.\n\n" + tags)
open(os.path.join(notes_dir, "accuracy-jobs.md"), "w").write(jobs_doc)
dlrm = re.search(r"### param_dlrm_8rank_v100.*?Per rank and iteration: ([^\n]*)", jobs, re.S)
dlrm_line = dlrm.group(1) if dlrm else "not measured"
tag_rows = [l for l in tags.splitlines() if l.startswith("| ") and not l.startswith("| job")]
tag_exact = sum(1 for l in tag_rows if "| 100.00 |" in l)

# ---- real traces, tracegen what-ifs, op model, clocks, memory
real = read("real.md")
open(os.path.join(notes_dir, "accuracy-real.md"), "w").write(
    "# What-if predictions against real H100 traces\n\n"
    "Written by `bench/accuracy` (`bench/real-accuracy`; do not edit by hand); %s.\n\n"
    % runline + re.sub(r"^## Real traces\n", "", real))
whatif, tp = read("whatif.md"), read("tp.md")
werrs = []
for r in whatif.splitlines():
    f = [c.strip() for c in r.strip("|").split("|")]
    if len(f) < 5 or "stops" in r:
        continue
    label = f[0]
    a, _, b = label.partition("->")
    if "," not in label and a.split() and b.split() and a.split()[-1] == b.split()[0]:
        continue  # an identity
    try:
        werrs.append(float(f[4]))
    except ValueError:
        pass
wm, wx = stats(werrs)
open(os.path.join(notes_dir, "accuracy-tracegen.md"), "w").write(
    "# What-if predictions against tracegen's jobs\n\n"
    "Written by `bench/accuracy` (`bench/whatif-accuracy`, `bench/tp-accuracy`;\n"
    "do not edit by hand); %s.\n\n" % runline +
    "tracegen's jobs are simulated by tracegen on its own kernel-time model,\n"
    "which shares graphsim's assumptions: these rows check the tools' logic\n"
    "(what they copy, move and re-time), not the hardware.\n\n"
    "## graph-scale-dp, graph-scale-layers, graph-scale-pp\n\n"
    "`bench/whatif-accuracy`: the base job is tracegen's small preset (24\n"
    "layers, tp 2, pp 2, dp 2, one node of 8), merged; a graph-scale tool\n"
    "edits it, graphsim replays it, and the job's iteration time (its slowest\n"
    "rank, mean of the 2 iterations) is compared with the replay of the job\n"
    "tracegen generates with that configuration. Identities are exact; a row\n"
    "that says `stops` is the tool refusing, with its message.\n\n"
    "| what-if | base trace | target ms | predicted ms | error % |\n|---|---|---:|---:|---:|\n" +
    whatif + "\nMean absolute error %.2f%%, maximum %.2f%% over %d predictions "
    "(identities and refusals left out).\n\n" % (wm, wx, len(werrs)) +
    intro("tp-accuracy.intro.md") + tp)
tp_tables = error_tables(tp)
opm = read("opmodel.md")
open(os.path.join(notes_dir, "accuracy-opmodel.md"), "w").write(
    "# The op model: kernel times from shapes\n\n"
    "Written by `bench/accuracy` (`bench/opmodel-accuracy`; do not edit by hand); %s.\n\n"
    % runline + re.sub(r"^## [^\n]*\n", "", intro("opmodel-accuracy.intro.md")) + opm)
clocks = read("clocks.md")
open(os.path.join(notes_dir, "accuracy-clocks.md"), "w").write(
    "# Clocks under load: why a kernel is slower in a long step than alone\n\n"
    "Written by `bench/accuracy` (`bench/clocks`, `bench/clock-model`,\n"
    "`bench/clock-dynamics`; do not edit by hand); %s.\n\n" % runline +
    re.sub(r"^## [^\n]*\n", "", intro("clocks.intro.md")) + clocks)
mem = read("memory.md")
open(os.path.join(notes_dir, "accuracy-memory.md"), "w").write(
    "# Memory: predicted peaks against torch.cuda's\n\n"
    "Written by `bench/accuracy` (`bench/memory-accuracy`; do not edit by hand); %s.\n\n"
    % runline + re.sub(r"^## Memory\n", "", mem))

# ---- the main document
gemm = first_row(opm, "| all, weighted by calls |")
gemm_cells = [c.strip() for c in gemm.strip("|").split("|")] if gemm else []
hw = re.search(r"### Hardware what-if[^\n]*\n(.*?)(?=\n### |\Z)", opm, re.S)
hw_rows = [l for l in (hw.group(1).splitlines() if hw else []) if l.startswith("|")]
mem_lines = matching(mem, r"^(Both tables together: )?\d+ predictions: mean \|error\|")
mem_heads = []
heading = ""
for l in mem.splitlines():
    if l.startswith("### "):
        heading = l[4:]
    elif re.match(r"^\d+ predictions: mean \|error\|", l):
        mem_heads.append((heading, l))
real_bold = bold_lines(real)
flops = read("flops.md") or "## FLOPs and MFU\n\nNot measured.\n"
flops_bold = bold_lines(flops)
open(os.path.join(notes_dir, "accuracy-flops.md"), "w").write(
    "# FLOPs, tokens/s and MFU of the real traces and their what-ifs\n\n"
    "Written by `bench/accuracy` (`bench/flops-accuracy`; do not edit by hand); %s.\n\n"
    % runline + re.sub(r"^## FLOPs and MFU\n", "", flops).lstrip("\n"))
unprof = read("unprofiled.md") or "## Without the profiler\n\nNot measured.\n"
unprof_bold = bold_lines(unprof)
open(os.path.join(notes_dir, "accuracy-unprofiled.md"), "w").write(
    "# Accuracy: the step without the profiler\n\n"
    "Written by `bench/accuracy` (`bench/unprofiled-accuracy`; do not edit by hand); %s.\n\n"
    % runline + unprof.split("\n", 1)[1].lstrip("\n"))
batch = read("batch.md") or "## Micro-batch and sequence\n\nNot measured.\n"
batch_bold = bold_lines(batch)
open(os.path.join(notes_dir, "accuracy-batch.md"), "w").write(
    "# Accuracy: another micro-batch size or sequence length\n\n"
    "Written by `bench/accuracy` (`bench/batch-accuracy`; do not edit by hand); %s.\n\n"
    % runline + batch.split("\n", 1)[1].lstrip("\n"))
recomp = read("recompute.md") or "## Recomputation\n\nNot measured.\n"
recomp_bold = bold_lines(recomp)
open(os.path.join(notes_dir, "accuracy-recompute.md"), "w").write(
    "# Accuracy: activation recomputation\n\n"
    "Written by `bench/accuracy` (`bench/recompute-accuracy`; do not edit by hand); %s.\n\n"
    % runline + recomp.split("\n", 1)[1].lstrip("\n"))


def pct(s):
    return s


w = open(out, "w")
w.write("# Accuracy\n\n")
w.write(
    "How close kgraph comes to what was measured: replays of traced\n"
    "iterations, what-if predictions against traces of the configuration\n"
    "predicted, kernel times from the op model, and memory peaks. The\n"
    "whole of it, and the detail files in `doc/notes/accuracy-*.md`, are\n"
    "written by `bench/accuracy` (about 10 minutes on two cores): do not\n"
    "edit by hand.\n"
    "This edition: %s.\n\n" % runline)
w.write(
    "Real hardware is kept apart from tracegen. *Real* rows come from traces\n"
    "recorded on GPUs: `../shared/traces` (others' public traces: V100, RTX\n"
    "2080 Ti, A100, H100, and AMD MI210, MI250 and MI300X) and\n"
    "`../shared/gpu` (GPT training recorded on an H100 and an H200, with the\n"
    "step times measured without the profiler and the memory peaks).\n"
    "*tracegen* rows come from synthetic jobs whose times are tracegen's own\n"
    "model, which shares graphsim's assumptions: they check the tools' logic,\n"
    "not the hardware.\n\n")
w.write("## Summary\n\n")
w.write("| measurement | data | result | goal | details |\n|---|---|---|---|---|\n")
w.write("| replay of a traced iteration | real: %d traces (%d of them AMD), %d iterations "
        "| mean abs. error %.3f%%, max %.3f%% | under 0.5%% (Lumos reports 3.3%% mean) "
        "| [replay](notes/accuracy-replay.md) |\n" % (len(by_trace), len(amd), len(base), mean, mx))
w.write("| replay of a merged job | real: DLRM, 8 V100 ranks | %s | under 0.5%% "
        "| [jobs](notes/accuracy-jobs.md) |\n" % dlrm_line.rstrip("."))
goal_real = {"gptB": "mean 1%, max 2%", "gpt": "mean 5%, max 10%"}
goal_hidden = {"gptB": "mean 3%, max 5%", "gpt": "mean 6%"}
for l in real_bold[:2]:
    m = re.match(r"\*\*(.*?):\*\* (\d+) predictions, mean absolute error ([\d.]+)%, max "
                 r"([\d.]+)% against the traced steps", l)
    if m:
        w.write("| what-if layers and micro-batches, %s (%s) | real: H100 GPT traces "
                "| %s predictions, mean %s%%, max %s%% | %s "
                "| [real](notes/accuracy-real.md) |\n"
                % (m.group(1), "GPU-bound" if m.group(1) == "gptB" else "host-bound",
                   m.group(2), m.group(3), m.group(4), goal_real.get(m.group(1), "")))
for l in real_bold[2:]:
    m = re.match(r"\*\*(.*?):\*\* (\d+) predictions, mean absolute error ([\d.]+)%, max "
                 r"([\d.]+)%", l)
    if m and "op model" in m.group(1):
        w.write("| what-if hidden size, %s | real: H100 GPT traces | %s predictions, mean "
                "%s%%, max %s%% | %s | [real](notes/accuracy-real.md) |\n"
                % (m.groups() + (goal_hidden.get(m.group(1).split(",")[0], ""),)))
goal_unprof = {"gptB": "mean 1.5%, max 3%", "gpt": "mean 5%, max 10%"}
for l in unprof_bold:
    m = re.match(r"\*\*(.*?), (calibrated|estimated):\*\* (\d+) predictions, mean absolute "
                 r"error ([\d.]+)%, max ([\d.]+)%", l)
    if m:
        w.write("| the step without the profiler, %s (%s), %s | real: H100 GPT traces "
                "| %s what-ifs, mean %s%%, max %s%% | %s | [unprofiled](notes/accuracy-unprofiled.md) |\n"
                % (m.group(1), "GPU-bound" if m.group(1) == "gptB" else "host-bound",
                   "calibrated by --step-time" if m.group(2) == "calibrated" else "estimated",
                   m.group(3), m.group(4), m.group(5),
                   goal_unprof.get(m.group(1), "") if m.group(2) == "calibrated" else "stated"))
for l in batch_bold:
    m = re.match(r"\*\*(.*?), unprofiled:\*\* (\d+) predictions, mean absolute error ([\d.]+)%, "
                 r"max ([\d.]+)%", l)
    if m:
        w.write("| what-if micro-batch and sequence (graph-scale-batch), %s, host-bound gpt, "
                "without the profiler | real: H100 GPT traces | %s predictions, mean %s%%, max "
                "%s%% | mean 5%%, max 10%% | [batch](notes/accuracy-batch.md) |\n"
                % m.groups())
for l in unprof.splitlines():
    m = re.match(r"- (gptB?), calibrated, (.*): (\d+) predictions, mean absolute error ([\d.]+)%, "
                 r"max ([\d.]+)%", l)
    if m:
        w.write("| the step without the profiler, %s, calibrated, %s | real: H100 GPT traces "
                "| %s what-ifs, mean %s%%, max %s%% | %s | [unprofiled](notes/accuracy-unprofiled.md) |\n"
                % (m.group(1), m.group(2), m.group(3), m.group(4), m.group(5),
                   goal_unprof.get(m.group(1), "")))
for l in recomp_bold:
    m = re.match(r"\*\*Recomputation:\*\* (\d+) predictions, step mean absolute error ([\d.]+)%, "
                 r"max ([\d.]+)% \(worst iteration\); peak mean absolute error ([\d.]+)%, max ([\d.]+)%", l)
    if m:
        w.write("| graph-recompute full and none (step; peak) | real: H100 GPT traces, with and without "
                "torch.utils.checkpoint | %s predictions, step mean %s%%, max %s%%; peak mean %s%%, "
                "max %s%% | step mean 3%%, max 5%%; peak 5%% | [recompute](notes/accuracy-recompute.md) |\n"
                % m.groups())
    m = re.match(r"\*\*Recomputation, tracegen jobs:\*\* (\d+) predictions, step mean absolute error "
                 r"([\d.]+)%, max ([\d.]+)%; peak \(worst rank\) mean absolute error ([\d.]+)%, max ([\d.]+)%", l)
    if m:
        w.write("| graph-recompute full, selective and none across ranks (step; peak) | synthetic: "
                "tracegen jobs (tp 2, pp 2, dp 2) with and without --recompute | %s predictions, step "
                "mean %s%%, max %s%%; peak (worst rank) mean %s%%, max %s%% | step 3%%; peak 1%% "
                "| [recompute](notes/accuracy-recompute.md) |\n" % m.groups())
if len(gemm_cells) >= 8:
    w.write("| kernel times, op model (calls of 20 us or more) | real: H100 GPT traces "
            "| GEMM %s%% mean over %s calls; attention %s%% / %s%% | 5%% (the operator-level "
            "paper: 4.98%% on A100) | [op model](notes/accuracy-opmodel.md) |\n"
            % (gemm_cells[2], gemm_cells[1], gemm_cells[5], gemm_cells[7]))
hw_meas = [[x.strip() for x in l.strip("|").split("|")] for l in hw_rows
           if "measured iterations" in l]
hw_unp = [[x.strip() for x in l.strip("|").split("|")] for l in hw_rows if "unprofiled" in l]
if hw_meas and len(hw_meas[0]) >= 4:
    c = hw_meas[0]
    w.write("| the same job on another GPU, H100 -> H200 (graph-retime) | real: gptB_L8_H2560 "
            "| %s ms predicted, %s traced (%s)%s | 3%% | [op model](notes/accuracy-opmodel.md) |\n"
            % (c[2], c[1], c[3], "; %s unprofiled (%s)" % (hw_unp[0][1], hw_unp[0][3])
               if hw_unp and len(hw_unp[0]) >= 4 else ""))
for h, l in mem_heads:
    w.write("| memory peak, %s | real: H100 traces | %s | mean 3%%, max 6%% "
            "| [memory](notes/accuracy-memory.md) |\n"
            % (h.replace("`", "").replace("|", "/"), l.rstrip(".").replace("|error|", "abs. error")))
w.write("| what-if dp, layers, pp | tracegen: small preset | mean %.2f%%, max %.2f%% over %d "
        "| mean 3%%, max 6%% | [tracegen](notes/accuracy-tracegen.md) |\n" % (wm, wx, len(werrs)))
for h, m, x, n in tp_tables[:2]:
    w.write("| what-if tp, %s | tracegen | mean %.2f%%, max %.2f%% over %d | mean 3%%, max 6%% "
            "| [tracegen](notes/accuracy-tracegen.md) |\n" % (h, m, x, n))
w.write("| structure tags inferred without ranges | tracegen: 9 jobs | %d of %d rows exact "
        "| exact, or left unset | [jobs](notes/accuracy-jobs.md) |\n"
        % (tag_exact, len(tag_rows)))
w.write("\nGoals, and why: a replay must be near exact (it re-runs the trace's own\n"
        "durations, so its error is the dependencies' and the scheduler's),\n"
        "where Lumos reports 3.3% mean on up to 512 H100s; a what-if is judged\n"
        "against the traced step of the configuration predicted and against\n"
        "the iteration-to-iteration noise of that trace, which the detail\n"
        "files give; the op model against the operator-level paper's 4.98%\n"
        "(A100) and 9.38% (GH200).\n\n")

w.write("## Replay\n\n")
w.write("Per trace, over its ranks and iterations (every row:\n"
        "[notes/accuracy-replay.md](notes/accuracy-replay.md)):\n\n")
w.write("| trace | iterations | mean abs. error % | max abs. error % |\n|---|---:|---:|---:|\n")
for t, e in by_trace.items():
    m, x = stats(e)
    w.write("| %s | %d | %.3f | %.3f |\n" % (t, len(e), m, x))
w.write("\nWhat each kind of dependency is worth: the same replays with it\n"
        "dropped (`graph-deps --drop`). Without the inter-stream and\n"
        "synchronization dependencies a replay overlaps too much and comes out\n"
        "short, which is Lumos's point against dPRO.\n\n")
w.write("| graph | mean abs. error % | max abs. error % | mean signed error % |\n"
        "|---|---:|---:|---:|\n")
for label, m, x, s in abl:
    w.write("| %s | %.3f | %.3f | %+.3f |\n" % (label, m, x, s))
w.write("\n## Real traces\n\n"
        "`bench/real-accuracy`: each H100 GPT configuration of `../shared/gpu`\n"
        "predicted from every other one of its family by the tool that makes the\n"
        "change (graph-scale-layers, graph-scale-pp for micro-batches,\n"
        "graph-scale-hidden); predicted and measured are medians of iterations.\n"
        "gptB is GPU-bound; gpt is host-bound, and its traced steps carry the\n"
        "profiler's own cost, which is not the same from one trace to the next.\n\n")
for l in real_bold:
    w.write("- " + l + "\n")
w.write("\nEvery prediction, the noise of each trace, and what is not modelled:\n"
        "[notes/accuracy-real.md](notes/accuracy-real.md).\n\n")
w.write("## FLOPs and MFU\n\n"
        "`bench/flops-accuracy`: graphstat's model FLOPs a step (6 N T plus causal\n"
        "attention, from the operators' shapes) against the same figure from each\n"
        "trace's meta file; the MFU of every measured trace against the GPU's dense\n"
        "bf16 peak; and the MFU each real what-if predicts against the target's.\n\n")
for l in flops_bold:
    w.write("- " + l + "\n")
w.write("\nEvery trace's FLOPs, tokens/s and MFU, traced and without the profiler,\n"
        "and each what-if's: [notes/accuracy-flops.md](notes/accuracy-flops.md).\n\n")
w.write("## Without the profiler\n\n"
        "`bench/unprofiled-accuracy`: the same what-ifs (and hidden sizes by FLOPs\n"
        "and bytes), predicting the step the job runs without the profiler\n"
        "(kineto2graph(1), UNPROFILED STEP) against the target's median step\n"
        "measured without it: the base calibrated by `--step-time` its own\n"
        "unprofiled median, and estimated without it.\n\n")
for l in unprof_bold:
    w.write("- " + l + "\n")
for l in unprof.splitlines():
    if re.match(r"- gptB?, calibrated, ", l):
        w.write("  " + l + "\n")
w.write("\nEvery prediction, each trace's cost and the spread of the measured steps:\n"
        "[notes/accuracy-unprofiled.md](notes/accuracy-unprofiled.md).\n\n")
w.write("## Micro-batch and sequence\n\n"
        "`bench/batch-accuracy`: graph-scale-batch among gpt_L8_H1024 at micro-batch\n"
        "8 and 4 and at sequence 2048, both ways, the base calibrated by\n"
        "`--step-time` its own unprofiled median, against the target's median\n"
        "step measured without the profiler; the GPU-bound goal is not measured\n"
        "(no gptB trace at another micro-batch size or sequence).\n\n")
for l in batch_bold:
    w.write("- " + l + "\n")
w.write("\nThe prediction keeps its base's host time, iteration by iteration;\n"
        "where the base's recorded iterations are slower on the host than the\n"
        "target's (more Python between the operators, not longer operators:\n"
        "no rule of the sizes explains it on all three traces), so is the\n"
        "prediction.\n")
w.write("\nEvery prediction, the host's phases of each traced iteration, and\n"
        "the memory peaks: [notes/accuracy-batch.md](notes/accuracy-batch.md).\n\n")
w.write("## Recomputation\n\n"
        "`bench/recompute-accuracy`: `graph-recompute full` on a trace without\n"
        "activation recomputation against the same job traced with\n"
        "`torch.utils.checkpoint` on every block, and `graph-recompute none` the\n"
        "other way; the step against the target's traced median, the peak\n"
        "against its `peak_allocated_bytes`; and tracegen jobs traced with\n"
        "`--recompute` and without, every rank merged, each against the other.\n\n")
for l in recomp_bold:
    w.write("- " + l + "\n")
w.write("\nEvery prediction: [notes/accuracy-recompute.md](notes/accuracy-recompute.md).\n\n")
w.write("## Op model\n\n"
        "`bench/opmodel-accuracy`: XGBoost trees fitted on each GPU's kernel\n"
        "sweeps (`opmodel fit`), against every kernel of 20 us or more in the\n"
        "H100 traces, and the same job re-timed for another GPU\n"
        "(`graph-retime --model h200 --from h100`):\n\n")
if gemm:
    w.write("| calls | gemm calls | gemm mean % | gemm p90 % | attn_fwd calls | attn_fwd mean % "
            "| attn_bwd calls | attn_bwd mean % |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
    w.write(gemm + "\n\n")
if hw_rows:
    w.write("\n".join(hw_rows) + "\n\n")
w.write("The models, held-out shapes, the sign of the error and the feature\n"
        "choices: [notes/accuracy-opmodel.md](notes/accuracy-opmodel.md); why a\n"
        "kernel runs slower in a long step than alone (the GPU's power limit):\n"
        "[notes/accuracy-clocks.md](notes/accuracy-clocks.md).\n\n")
w.write("## Memory\n\n"
        "`bench/memory-accuracy`: the peak device memory graphstat predicts\n"
        "(allocator events replayed where the trace has them, state counted\n"
        "from shapes), for each trace as it is and for what-ifs, against the\n"
        "peak torch.cuda measured on the GPU:\n\n")
for h, l in mem_heads:
    w.write("- %s: %s\n" % (h, l))
w.write("\nEvery row: [notes/accuracy-memory.md](notes/accuracy-memory.md).\n\n")
w.write("## tracegen\n\n"
        "What-ifs against the jobs tracegen generates at the configuration\n"
        "predicted (its simulator shares graphsim's assumptions):\n\n")
w.write("- graph-scale-dp, -layers, -pp (`bench/whatif-accuracy`): mean %.2f%%, "
        "max %.2f%% over %d predictions\n" % (wm, wx, len(werrs)))
for h, m, x, n in tp_tables:
    w.write("- graph-scale-tp (`bench/tp-accuracy`), %s: mean %.2f%%, max %.2f%% over %d\n"
            % (h, m, x, n))
w.write("- multi-rank replay of tracegen's jobs, the communication model's fit and the\n"
        "  structure tags: [notes/accuracy-jobs.md](notes/accuracy-jobs.md)\n\n")
w.write("Every row: [notes/accuracy-tracegen.md](notes/accuracy-tracegen.md).\n")
w.close()
print("%s: %d iterations, mean %.3f%%, max %.3f%%" % (out, len(base), mean, mx))
