#!/usr/bin/env python3
"""Why attention kernels run slower inside a training step than alone.

On the shared H100 trace gptB_L8_H4096_mem, the cuDNN attention backward
on [4, 32, 2048, 128] runs 950-1020 us inside the step, and 870-872 us
when the op sweep (scripts/record-op-sweep.py) calls it alone. Two
causes are possible and this script tells them apart: the layout (the
model passes q, k and v as strided views of one qkv Linear's output,
the sweep contiguous tensors) and the load (inside a step the GPU has run
GEMMs for tens of milliseconds: power, clocks, L2).

Each phase runs under its own profiler session and is written as
OUTDIR/PHASE.json.gz (read with `opmodel check --csv`):
  alone      contiguous q, k, v, forward and backward, REPS times
  strided    q, k, v as the model makes them (split, view, transpose)
  between    strided, each call between two of the block's GEMMs, as in
             a step, the GPU idle for a second first
  hot        the same as between, right after HOT_S seconds of GEMMs
A sampler writes the SM clock, power and temperature every 50 ms to
OUTDIR/clocks.csv, and OUTDIR/phases.json says when each phase ran.

    python3 scripts/attn-in-step.py OUTDIR
"""
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

import gpulog

DEV = "cuda"
REPS = 5
HOT_S = 8
# (batch, heads, sequence, head dim): gptB at hidden 4096, 2560, 3072;
# gpt at hidden 1024
SHAPES = [(4, 32, 2048, 128), (4, 20, 2048, 128), (4, 24, 2048, 128), (8, 16, 1024, 64)]


def tensors(b, h, s, d, strided):
    c = h * d
    if strided:
        x = torch.randn(b, s, 3 * c, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        q, k, v = x.split(c, dim=2)
        q = q.view(b, s, h, d).transpose(1, 2)
        k = k.view(b, s, h, d).transpose(1, 2)
        v = v.view(b, s, h, d).transpose(1, 2)
        leaves = (x,)
    else:
        q = torch.randn(b, h, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn_like(q, requires_grad=True)
        v = torch.randn_like(q, requires_grad=True)
        leaves = (q, k, v)
    g = torch.randn(b, h, s, d, device=DEV, dtype=torch.bfloat16)
    return q, k, v, leaves, g


def call(q, k, v, leaves, g):
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.autograd.grad(o, leaves, g)


def gemms(b, h, s, d):
    # the block's fc1 forward on the same tokens: [b s, c] x [c, 4c]
    c = h * d
    a = torch.randn(b * s, c, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(c, 4 * c, device=DEV, dtype=torch.bfloat16)
    return lambda: a @ w


def phase(out, name, marks, body):
    t0 = time.time()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 record_shapes=True, **gpulog.profiler_kw()) as prof:
        body()
        torch.cuda.synchronize()
    marks.append({"phase": name, "start": t0, "end": time.time()})
    gpulog.export_gz(prof, os.path.join(out, name + ".json"))
    print(f"{name}: {time.time() - t0:.1f} s", flush=True)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: attn-in-step.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    smi = gpulog.sampler(os.path.join(out, "clocks.csv"), 50)
    marks = []
    try:
        cases = []
        for shp in SHAPES:
            cases.append((shp, tensors(*shp, False), tensors(*shp, True), gemms(*shp)))
        for shp, a, st, gm in cases:  # warm-up: cuDNN plans, allocator
            call(*a)
            call(*st)
            gm()
        torch.cuda.synchronize()

        def alone():
            for shp, a, st, gm in cases:
                for _ in range(REPS):
                    call(*a)
                torch.cuda.synchronize()

        def strided():
            for shp, a, st, gm in cases:
                for _ in range(REPS):
                    call(*st)
                torch.cuda.synchronize()

        def between():
            for shp, a, st, gm in cases:
                for _ in range(REPS):
                    gm()
                    call(*st)
                    gm()
                torch.cuda.synchronize()

        time.sleep(1)
        phase(out, "alone", marks, alone)
        time.sleep(1)
        phase(out, "strided", marks, strided)
        time.sleep(1)
        phase(out, "between", marks, between)
        big = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
        t0 = time.time()
        while time.time() - t0 < HOT_S:
            for _ in range(20):
                big @ big
            torch.cuda.synchronize()
        marks.append({"phase": "heat", "start": t0, "end": time.time()})
        phase(out, "hot", marks, between)
    finally:
        gpulog.stop(smi)
    p = torch.cuda.get_device_properties(0)
    with open(os.path.join(out, "phases.json"), "w") as f:
        json.dump({"gpu": p.name, "torch": torch.__version__, "cuda": torch.version.cuda,
                   "reps": REPS, "shapes": SHAPES, "phases": marks}, f, indent=1)
    print(json.dumps({"gpu": p.name, "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
