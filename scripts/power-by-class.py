#!/usr/bin/env python3
"""The power each kind of kernel draws, and the clock the GPU keeps for it.

scripts/clock-in-step.py found GPU-bound training steps at the GPU's
power limit, their SM clock lower the more of the step is GEMMs and
attention. A model of that clock needs, per kind of kernel, the power it
draws and how its time follows the clock: measured here directly, each
kind alone in a loop, rather than fitted to the what-if predictions it
would then correct.

Phases (each SECONDS long, nvidia-smi sampling every 50 ms, one kernel
kind back to back, a synchronize every few calls; the GPU idle for 2 s
between phases):
  idle                  nothing
  gemm_8192             bf16 8192 x 8192 x 8192 matmul
  gemm_2560             bf16 [8192, 2560] x [2560, 10240] (gptB fc1)
  attn_fwd_bwd          SDPA causal [4, 20, 2048, 128], forward and backward
  layer_norm            LayerNorm forward on [8192, 2560] bf16
  add                   elementwise add on [8192, 10240] bf16
  adamw                 AdamW foreach step over 300M fp32 parameters
  gemm_duty_50          gemm_8192 half the time, the GPU idle the other half
                        (5 ms of work, 5 ms of sleep)
  gptB_L4_long          record.py's gptB_L4_H2560 step, 120 steps
For each phase it writes the calls made and the seconds they took, so
that a call's time at the phase's clock is known.

Writes OUTDIR/clocks.csv (as clock-in-step.py) and OUTDIR/phases.json.

    python3 scripts/power-by-class.py PATH/TO/record.py OUTDIR
"""
import json
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import gpulog

DEV = "cuda"
SECONDS = 6


def loop(fn, seconds, batch, sleep=0.0):
    """Call fn in batches of `batch` for `seconds`; (calls, busy seconds)."""
    calls, busy = 0, 0.0
    t0 = time.time()
    while time.time() - t0 < seconds:
        a = time.time()
        for _ in range(batch):
            fn()
        torch.cuda.synchronize()
        busy += time.time() - a
        calls += batch
        if sleep > 0:
            time.sleep(sleep)
    return calls, busy


def kernel_kinds():
    """The phases' (name, call, calls a batch, sleep after a batch), warm:
    cuBLAS's and cuDNN's plans made, the allocator's blocks taken. Their
    tensors go with the list."""
    bf = torch.bfloat16
    a8 = torch.randn(8192, 8192, device=DEV, dtype=bf)
    x25 = torch.randn(8192, 2560, device=DEV, dtype=bf)
    w25 = torch.randn(2560, 10240, device=DEV, dtype=bf)
    q = torch.randn(4, 20, 2048, 128, device=DEV, dtype=bf, requires_grad=True)
    k = torch.randn_like(q, requires_grad=True)
    v = torch.randn_like(q, requires_grad=True)
    g = torch.randn_like(q)
    ln = nn.LayerNorm(2560).to(DEV, bf)
    xa = torch.randn(8192, 10240, device=DEV, dtype=bf)
    ps = [torch.zeros(300_000_000 // 64, device=DEV, requires_grad=True) for _ in range(64)]
    for p in ps:
        p.grad = torch.randn_like(p)
    opt = torch.optim.AdamW(ps, lr=1e-4)

    def attn():
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.autograd.grad(o, (q, k, v), g)

    with torch.no_grad():
        a8 @ a8, x25 @ w25, ln(x25), xa + xa
    attn()
    opt.step()
    torch.cuda.synchronize()
    return [
        ("gemm_8192", lambda: a8 @ a8, 10, 0.0),
        ("gemm_2560", lambda: x25 @ w25, 20, 0.0),
        ("attn_fwd_bwd", attn, 10, 0.0),
        ("layer_norm", lambda: ln(x25), 50, 0.0),
        ("add", lambda: xa + xa, 50, 0.0),
        ("adamw", opt.step, 2, 0.0),
        ("gemm_duty_50", lambda: a8 @ a8, 2, 0.005),
    ]


def main():
    rec, out = gpulog.record_args("power-by-class.py")
    phases = kernel_kinds()

    smi = gpulog.sampler(os.path.join(out, "clocks.csv"), 50)
    marks = []
    try:
        time.sleep(1)
        t0 = time.time()
        time.sleep(SECONDS / 2)
        marks.append({"phase": "idle", "start": t0, "end": time.time(), "calls": 0,
                      "busy_s": 0.0})
        for name, fn, batch, sleep in phases:
            time.sleep(2)
            t0 = time.time()
            if name == "attn_fwd_bwd":
                calls, busy = loop(fn, SECONDS, batch, sleep)
            else:
                with torch.no_grad():
                    calls, busy = loop(fn, SECONDS, batch, sleep)
            marks.append({"phase": name, "start": t0, "end": time.time(), "calls": calls,
                          "busy_s": busy})
            print(f"{name}: {calls} calls, {busy / max(calls, 1) * 1e6:.1f} us a call", flush=True)
        del phases  # and their tensors
        torch.cuda.empty_cache()
        time.sleep(2)
        # record.py's gptB_L4_H2560, 120 steps: does the clock settle lower?
        step = gpulog.gptb_step(rec, 4, 2560)
        for _ in range(3):
            step()
        steps = []
        for _ in range(120):
            a = time.time()
            step()
            torch.cuda.synchronize()
            steps.append([a, time.time()])
        marks.append({"phase": "gptB_L4_long", "start": steps[0][0], "end": steps[-1][1],
                      "calls": len(steps), "busy_s": sum(b - a for a, b in steps),
                      "steps": steps})
        print(f"gptB_L4_long: first 10 steps {sum(b - a for a, b in steps[:10]) * 100:.2f} ms, "
              f"last 10 {sum(b - a for a, b in steps[-10:]) * 100:.2f} ms", flush=True)
    finally:
        gpulog.stop(smi)
    p = torch.cuda.get_device_properties(0)
    with open(os.path.join(out, "phases.json"), "w") as f:
        json.dump({"gpu": p.name, "torch": torch.__version__, "cuda": torch.version.cuda,
                   "seconds": SECONDS, "phases": marks}, f, indent=1)


if __name__ == "__main__":
    main()
