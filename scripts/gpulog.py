"""What the GPU recording scripts share: nvidia-smi's clock log and the
profiler's settings and gzip export. Imported by scripts/*.py run as
`python3 scripts/NAME.py` (their folder is on the module path); torch is
imported only by the functions that need it."""
import gzip
import importlib.util
import os
import shutil
import subprocess
import sys
import time

FIELDS = "timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu"


def sampler(path, ms):
    """Start nvidia-smi writing FIELDS, and the active clock-event
    reasons where this driver names them, to path every ms
    milliseconds; stop it with stop()."""
    fields = FIELDS
    for extra in ("clocks_event_reasons.active", "clocks_throttle_reasons.active"):
        r = subprocess.run(["nvidia-smi", "--query-gpu=" + extra, "--format=csv"],
                           capture_output=True)
        if r.returncode == 0:
            fields += "," + extra
            break
    return subprocess.Popen(["nvidia-smi", "--query-gpu=" + fields,
                             "--format=csv,noheader,nounits", "-lms", str(ms)],
                            stdout=open(path, "w"))


def record_args(script):
    """SCRIPT RECORD_PY OUTDIR: record.py loaded (load_record) and OUTDIR
    made; the usage on a wrong count of arguments."""
    if len(sys.argv) != 3:
        sys.exit("usage: %s RECORD_PY OUTDIR" % script)
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    return load_record(sys.argv[1]), out


def load_record(path):
    """../shared/gpu/record.py, given its path, as a module (its GPT)."""
    spec = importlib.util.spec_from_file_location("record", path)
    rec = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rec)
    return rec


def gptb_step(rec, layers, h):
    """A training step of record.py's GPT in its gptB family (heads of 128,
    sequence 2048, micro-batch 4, bf16 autocast, AdamW), as record.py
    runs it: a function that runs one step and returns the loss."""
    import torch
    torch.manual_seed(0)
    torch.cuda.empty_cache()
    model = rec.GPT(layers, h, h // 128, 4 * h, 2048).to("cuda")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    data = torch.randint(0, rec.VOCAB, (4, 2049), device="cuda")

    def step():
        x, y = data[:, :-1], data[:, 1:]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()
    return step


def stop(smi):
    time.sleep(0.2)  # the last sample
    smi.terminate()
    smi.wait()


def profiler_kw():
    """torch.profiler.profile's keyword arguments as record.py sets them:
    the CUDA synchronization events, where this PyTorch has them."""
    import torch
    try:
        return {"experimental_config": torch._C._profiler._ExperimentalConfig(
            enable_cuda_sync_events=True)}
    except Exception:
        return {}


def export_gz(prof, raw):
    """The profiler's trace as raw + ".gz" (raw itself removed)."""
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as fi, gzip.open(raw + ".gz", "wb", compresslevel=6) as fo:
        shutil.copyfileobj(fi, fo)
    os.remove(raw)
