#!/usr/bin/env python3
"""Record the non-GEMM half of the kernel sweep under the profiler.

../shared/gpu/record.py times its attention, normalization, elementwise,
softmax, loss and optimizer rows with CUDA event pairs around one Python
call. Below a few hundred microseconds such a pair also times the host's
way through the operator (SDPA's dispatch, cuDNN's plan lookup), so the
rows of small shapes time the host, not the kernels (the README's
caveat). This script calls the same shapes under torch.profiler with
record_shapes, as record.py already does for its GEMMs (mm_sweep), so
every kernel comes with its true GPU duration and its launching
operator's Input Dims: `opmodel fit` reads it as it reads any trace.

Beyond record.py's shapes, three operators GPT traces run and no sweep
timed, which the op model's `other` class predicted 3 to 17 times too
long on gptB_L8_H2560 (aten::sum of a Linear's bias gradient,
aten::embedding_dense_backward, aten::gather): the rows summed for the
row shapes, and the token embedding's backward and a gather of its rows
for 2048 to 16384 tokens, vocabularies of 32000 and 50304 and hidden
sizes of 1024, 2560 and 4096. (Added after the first recordings of
2026-11-26, which do not have them; recorded with them later that day.)

    python3 scripts/record-op-sweep.py [--gemms KERNELS_JSONL] [--gap-ms MS] OUTDIR

writes OUTDIR/op_sweep.json.gz. Each shape runs once unprofiled (warm-up:
cuDNN plans, allocator) and then REPS times under the profiler.

--gemms adds the GEMMs of a sweep's `mm` rows (../shared/gpu/kernels/
GPU/kernels.jsonl: m, n, k and layout), called as record.py calls them
for mm_sweep. --gap-ms leaves the GPU idle MS milliseconds before each
shape's calls, and logs nvidia-smi's clocks every 20 ms to
OUTDIR/clocks.csv: record.py's sweeps ran back to back, and a GEMM loop
holds an H100 at its power limit within 200 ms, 17-19% slower than on a
cool GPU (doc/ACCURACY.md, "How fast the power limit moves the clock");
after 100 ms idle the clock is back at its boost. So `--gap-ms 100`
times every shape on a cool GPU, as a host-bound step runs its kernels,
where the sweeps time them as a GPU-bound step does. (Written on
2026-11-27 for the next device session; not run yet.)
"""
import argparse
import json
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

import gpulog

DEV = "cuda"
REPS = 3


def attention_shapes():
    # the grid of record.py's part_kernels
    for b in (1, 2, 4, 8, 16):
        for heads in (8, 16, 32, 64):
            for s in (256, 512, 1024, 2048, 4096, 8192):
                for d in (64, 128):
                    if b * heads * s * s * d <= 2 ** 38:
                        yield b, heads, s, d


def row_shapes():
    for tokens in (1024, 2048, 4096, 8192, 16384, 32768):
        for h in (512, 1024, 2048, 4096, 8192):
            yield tokens, h


def calls():
    """Yield (setup) closures; each returns a function to call REPS times."""
    for b, heads, s, d in attention_shapes():
        def attn(b=b, heads=heads, s=s, d=d):
            q = torch.randn(b, heads, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
            k = torch.randn_like(q, requires_grad=True)
            v = torch.randn_like(q, requires_grad=True)
            g = torch.randn_like(q)

            def fb():
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                torch.autograd.grad(o, (q, k, v), g)
            return fb
        yield attn
    for tokens, h in row_shapes():
        def rows(tokens=tokens, h=h):
            x = torch.randn(tokens, h, device=DEV, dtype=torch.bfloat16, requires_grad=True)
            ln = nn.LayerNorm(h).to(DEV, torch.bfloat16)
            gy = torch.randn_like(x)

            def fn():
                y = ln(x)
                torch.autograd.grad(y, (x,), gy)
                with torch.no_grad():
                    F.gelu(x, approximate="tanh")
                    x + x
                    torch.softmax(x, dim=-1)
            return fn
        yield rows
    for tokens, h in row_shapes():
        def sums(tokens=tokens, h=h):
            # a Linear's bias gradient: the rows summed (aten::sum over
            # dim 0), which GPT traces run on [tokens, hidden] and
            # [tokens, 4 hidden]
            x = torch.randn(tokens, h, device=DEV, dtype=torch.bfloat16)

            def fn():
                x.sum(0)
            return fn
        yield sums
    for tokens in (2048, 8192, 16384):
        for v in (32000, 50304):
            for h in (1024, 2560, 4096):
                def emb(tokens=tokens, v=v, h=h):
                    # the token embedding: its backward
                    # (aten::embedding_dense_backward) and a gather of
                    # its rows (aten::gather), as GPT traces run them
                    w = torch.randn(v, h, device=DEV, dtype=torch.bfloat16,
                                    requires_grad=True)
                    idx = torch.randint(0, v, (tokens,), device=DEV)
                    gy = torch.randn(tokens, h, device=DEV, dtype=torch.bfloat16)
                    rows = idx[:, None].expand(tokens, h)

                    def fn():
                        y = F.embedding(idx, w)
                        torch.autograd.grad(y, (w,), gy)
                        with torch.no_grad():
                            w.gather(0, rows)
                    return fn
                yield emb
    for tokens in (1024, 4096, 8192, 16384):
        for v in (32000, 50304, 128256):
            if tokens * v * 4 > 8 * 2 ** 30:
                continue

            def ce(tokens=tokens, v=v):
                logits = torch.randn(tokens, v, device=DEV, dtype=torch.float32, requires_grad=True)
                tg = torch.randint(0, v, (tokens,), device=DEV)

                def fn():
                    loss = F.cross_entropy(logits, tg)
                    torch.autograd.grad(loss, (logits,))
                return fn
            yield ce
    for nparam in (10e6, 50e6, 100e6, 300e6, 700e6):
        def adam(nparam=nparam):
            ps = [torch.zeros(int(nparam) // 64, device=DEV, requires_grad=True) for _ in range(64)]
            for p in ps:
                p.grad = torch.randn_like(p)
            opt = torch.optim.AdamW(ps, lr=1e-4)
            return opt.step
        yield adam


def gemm_calls(path):
    """Setups of the GEMMs of a sweep's mm rows, as record.py calls them
    for mm_sweep: A (m x k) times B (k x n), each stored transposed where
    the layout's letter is t."""
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    for r in rows:
        if r.get("op") != "mm":
            continue

        def mm(m=r["m"], n=r["n"], k=r["k"], lay=r["layout"]):
            a = torch.randn((m, k) if lay[0] == "n" else (k, m), device=DEV, dtype=torch.bfloat16)
            b = torch.randn((k, n) if lay[1] == "n" else (n, k), device=DEV, dtype=torch.bfloat16)
            A = a if lay[0] == "n" else a.t()
            B = b if lay[1] == "n" else b.t()
            return lambda: torch.mm(A, B)
        yield mm


def main():
    ap = argparse.ArgumentParser(prog="record-op-sweep.py")
    ap.add_argument("--gemms", metavar="KERNELS_JSONL",
                    help="add the GEMMs of this sweep's mm rows")
    ap.add_argument("--gap-ms", type=float, default=0,
                    help="the GPU idle this long before each shape's calls")
    ap.add_argument("outdir")
    a = ap.parse_args()
    out = a.outdir
    os.makedirs(out, exist_ok=True)

    def setups():
        yield from calls()
        if a.gemms:
            yield from gemm_calls(a.gemms)
    # warm-up pass: cuDNN's plans and the allocator's blocks for every shape
    for setup in setups():
        setup()()
        torch.cuda.synchronize()
    print("warm-up done", flush=True)
    smi = gpulog.sampler(os.path.join(out, "clocks.csv"), 20) if a.gap_ms > 0 else None
    raw = os.path.join(out, "op_sweep.json")
    n = 0
    try:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                     record_shapes=True, **gpulog.profiler_kw()) as prof:
            for setup in setups():
                fn = setup()
                torch.cuda.synchronize()
                if a.gap_ms > 0:
                    time.sleep(a.gap_ms / 1000)
                for _ in range(REPS):
                    fn()
                torch.cuda.synchronize()
                n += 1
                del fn
    finally:
        if smi is not None:
            gpulog.stop(smi)
    gpulog.export_gz(prof, raw)
    p = torch.cuda.get_device_properties(0)
    print(json.dumps({"gpu": p.name, "sms": p.multi_processor_count, "shapes": n,
                      "reps": REPS, "gap_ms": a.gap_ms, "gemms": a.gemms,
                      "torch": torch.__version__, "cuda": torch.version.cuda}), flush=True)


if __name__ == "__main__":
    main()
