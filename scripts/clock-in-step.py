#!/usr/bin/env python3
"""The GPU's clock and power during training steps of record.py's GPT.

scripts/attn-in-step.py found that a kernel runs up to 20% slower after
seconds of GEMMs than alone: the H100 reaches its 700 W limit and lowers
its SM clock. This script asks how much of that a real step sees, and
whether a deeper model (a longer step, less idle time between steps)
runs its kernels at a lower clock: the layers what-if copies a layer's
kernels at the base trace's clock.

For each configuration it builds ../shared/gpu/record.py's GPT (the path
given), runs 3 warm-up steps, then STEPS timed steps (wall clock with a
synchronize, as record.py), then PROFILED steps under torch.profiler
(record.py's settings), sampling nvidia-smi every 20 ms throughout.
Writes OUTDIR/clocks.csv (timestamp, SM and memory clock, power,
temperature, active clock-event reasons), OUTDIR/steps.json (each step's
start and end on the same clock) and OUTDIR/NAME.json.gz traces.

    python3 scripts/clock-in-step.py PATH/TO/record.py OUTDIR
"""
import json
import os
import time

import torch
from torch.profiler import ProfilerActivity, profile

import gpulog

STEPS = 10
PROFILED = 3
# (name, layers, hidden): the gptB family (seq 2048, micro-batch 4, heads of 128)
CONFIGS = [("gptB_L4_H2560", 4, 2560), ("gptB_L8_H2560", 8, 2560),
           ("gptB_L16_H2560", 16, 2560), ("gptB_L32_H2560", 32, 2560),
           ("gptB_L8_H4096", 8, 4096)]


def main():
    rec, out = gpulog.record_args("clock-in-step.py")
    smi = gpulog.sampler(os.path.join(out, "clocks.csv"), 20)
    runs = []
    try:
        for name, layers, h in CONFIGS:
            step = gpulog.gptb_step(rec, layers, h)
            for _ in range(3):
                step()
            torch.cuda.synchronize()
            steps = []
            for _ in range(STEPS):
                t0 = time.time()
                step()
                torch.cuda.synchronize()
                steps.append([t0, time.time(), "unprofiled"])
            raw = os.path.join(out, name + ".json")
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                         record_shapes=True, **gpulog.profiler_kw()) as prof:
                for _ in range(PROFILED):
                    t0 = time.time()
                    step()
                    torch.cuda.synchronize()
                    steps.append([t0, time.time(), "profiled"])
                    prof.step()  # a ProfilerStep#N range a step, as record.py's
            gpulog.export_gz(prof, raw)
            med = sorted(e - s for s, e, k in steps if k == "unprofiled")[STEPS // 2]
            print(f"{name}: step {med * 1e3:.2f} ms", flush=True)
            runs.append({"name": name, "layers": layers, "hidden": h, "heads": h // 128,
                         "seq": 2048, "micro_batch_size": 4, "steps": steps})
            del step  # the model, its optimizer and data with it
            time.sleep(2)  # idle between configurations: the clock recovers
    finally:
        gpulog.stop(smi)
    p = torch.cuda.get_device_properties(0)
    with open(os.path.join(out, "steps.json"), "w") as f:
        json.dump({"gpu": p.name, "torch": torch.__version__, "cuda": torch.version.cuda,
                   "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
