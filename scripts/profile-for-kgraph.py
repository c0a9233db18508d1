#!/usr/bin/env python3
"""Profile a PyTorch training job the way kgraph wants it (doc/COLLECTING.md).

Every rank writes DIR/rank00003.<time>.pt.trace.json.gz (the rank
zero-padded, so that names sort by rank): CPU and CUDA activity, input
shapes (and with them NCCL's metadata on the communication ops), memory
allocations, the Python stack of each operator, CUDA synchronization
events where this PyTorch has them, ProfilerStep#N around each
iteration, and record_function ranges naming phases, micro-batches and
layers. A toy model stands in for yours; copy kgraph_profiler() and the
ranges into your own loop.

    torchrun --nproc-per-node 8 scripts/profile-for-kgraph.py --out traces
    kineto2graph traces/rank*.json.gz | graph-deps --merge | graphsim | graphstat
"""
import argparse
import contextlib
import os

import torch
import torch.distributed as dist
from torch.profiler import (ProfilerActivity, profile, record_function, schedule,
                            tensorboard_trace_handler)


def kgraph_profiler(out_dir, rank, skip=2, warmup=1, active=3):
    """A profiler for `skip` untraced steps, `warmup` steps it discards,
    then `active` traced ones; call .step() once per iteration."""
    extra = {}
    try:  # the streams cudaStreamWaitEvent waits on, named (recent PyTorch)
        from torch._C._profiler import _ExperimentalConfig
        extra["experimental_config"] = _ExperimentalConfig(enable_cuda_sync_events=True)
    except (ImportError, TypeError):
        pass  # older: kineto2graph infers the waits between streams
    return profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        schedule=schedule(wait=skip, warmup=warmup, active=active, repeat=1),
        on_trace_ready=tensorboard_trace_handler(out_dir, worker_name=f"rank{rank:05d}",
                                                 use_gzip=True),
        record_shapes=True,
        profile_memory=True,  # allocations: graphstat's measured memory peak
        with_stack=True,      # module calls: layers found without ranges
        **extra)


class Toy(torch.nn.Module):
    def __init__(self, width, layers):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(layers))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            with record_function(f"layer_{i}"):  # kgraph: the layer tag
                x = torch.relu(layer(x))
        return x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="traces")
    ap.add_argument("--microbatches", type=int, default=2)
    args = ap.parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    model = Toy(1024, 4).cuda()
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with kgraph_profiler(args.out, rank) as prof:
        for _ in range(2 + 1 + 3):  # skip + warmup + active
            for m in range(args.microbatches):
                x = torch.randn(64, 1024, device="cuda")
                # DDP reduces the gradients once, after the last
                # micro-batch: no_sync() must hold the forward too, for
                # DDP decides in the forward whether the backward reduces
                last = m == args.microbatches - 1
                sync = model.no_sync if world > 1 and not last else contextlib.nullcontext
                with sync():
                    with record_function(f"microbatch_{m}/forward"):
                        loss = model(x).square().mean()
                    with record_function(f"microbatch_{m}/backward"):
                        loss.backward()
            with record_function("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            prof.step()  # ProfilerStep#N: one iteration
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
