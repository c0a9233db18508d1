#!/usr/bin/env python3
"""How fast the GPU's power controller moves the SM clock.

scripts/power-by-class.py measured the clock each kind of kernel settles
at, alone, for seconds; a static model built on it missed the clock of
real steps by up to 207 MHz (doc/ACCURACY.md, "A first power model of
the clock"), because the controller has dynamics: a step of GEMMs and a
step of memory-bound kernels alternate faster than it settles. This
script measures those dynamics directly: a bf16 8192^3 GEMM loop
switched on and off, the clock and the power read through NVML every
few milliseconds (nvidia-smi's floor is 20 ms) in a process of its own.

Phases (the GPU idle for 2 s between them):
  idle_3s        nothing
  on_12s         GEMMs back to back for 12 s: the step response
  off_3s         nothing: the recovery
  sq_P           GEMMs half of each period P (10 ms to 2 s), idle the
                 other half, for at least 4 s and 3 periods
  duty_D         period 100 ms, GEMMs D% of it (25, 75)
Each on-window's GEMMs are timed (calls and seconds), so the time of a
GEMM at the clock of that moment is known.

Writes OUTDIR/nvml.csv (t,sm_mhz,mem_mhz,power_w,power_avg_w,temp_c,
reasons: t in seconds of time.time(); power_w the instant reading where
the driver has one, else -1; reasons NVML's clock-event bit mask),
OUTDIR/work.csv (phase,t0,t1,calls) and OUTDIR/meta.json.

    python3 scripts/clock-dynamics.py OUTDIR
"""
import json
import multiprocessing as mp
import os
import sys
import time

SAMPLE_S = 0.004


def sample(path, stop):
    """NVML readings of GPU 0 into path until stop is set."""
    import pynvml as nv
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    inst = getattr(nv, "NVML_FI_DEV_POWER_INSTANT", None)
    reasons = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        nv.nvmlDeviceGetCurrentClocksThrottleReasons
    with open(path, "w") as f:
        f.write("t,sm_mhz,mem_mhz,power_w,power_avg_w,temp_c,reasons\n")
        while not stop.is_set():
            t = time.time()
            sm = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)
            mem = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)
            pw = -1.0
            if inst is not None:
                try:
                    v = nv.nvmlDeviceGetFieldValues(h, [inst])[0]
                    if v.nvmlReturn == 0:
                        pw = v.value.uiVal / 1000.0
                except nv.NVMLError:
                    inst = None
            avg = nv.nvmlDeviceGetPowerUsage(h) / 1000.0
            temp = nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)
            f.write("%.4f,%d,%d,%.1f,%.1f,%d,%d\n" % (t, sm, mem, pw, avg, temp, reasons(h)))
            d = SAMPLE_S - (time.time() - t)
            if d > 0:
                time.sleep(d)
    nv.nvmlShutdown()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: clock-dynamics.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    import torch
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        for _ in range(3):
            a @ a
    torch.cuda.synchronize()

    work = []

    def gemms(phase, seconds):
        """GEMMs, one synchronized call at a time, for seconds."""
        t0 = time.time()
        n = 0
        with torch.no_grad():
            while time.time() - t0 < seconds:
                a @ a
                torch.cuda.synchronize()
                n += 1
        work.append((phase, t0, time.time(), n))

    def idle(seconds):
        time.sleep(seconds)

    ctx = mp.get_context("spawn")  # no fork of a process holding CUDA
    stop = ctx.Event()
    p = ctx.Process(target=sample, args=(os.path.join(out, "nvml.csv"), stop))
    p.start()
    try:
        time.sleep(1)
        t0 = time.time()
        idle(3)
        work.append(("idle_3s", t0, time.time(), 0))
        # the step response, in windows of 50 ms so each GEMM's time is known
        end = time.time() + 12
        while time.time() < end:
            gemms("on_12s", 0.05)
        t0 = time.time()
        idle(3)
        work.append(("off_3s", t0, time.time(), 0))
        for period in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0):
            idle(2)
            end = time.time() + max(4.0, 3 * period)
            while time.time() < end:
                gemms("sq_%g" % (period * 1000), period / 2)
                idle(period / 2)
            print("square %g ms done" % (period * 1000), flush=True)
        for duty in (0.25, 0.75):
            idle(2)
            end = time.time() + 4
            while time.time() < end:
                gemms("duty_%d" % (duty * 100), 0.1 * duty)
                idle(0.1 * (1 - duty))
        idle(1)
    finally:
        stop.set()
        p.join()
    with open(os.path.join(out, "work.csv"), "w") as f:
        f.write("phase,t0,t1,calls\n")
        for ph, t0, t1, n in work:
            f.write("%s,%.4f,%.4f,%d\n" % (ph, t0, t1, n))
    pr = torch.cuda.get_device_properties(0)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump({"gpu": pr.name, "sms": pr.multi_processor_count,
                   "torch": torch.__version__, "cuda": torch.version.cuda,
                   "sample_s": SAMPLE_S, "gemm": "bf16 8192x8192x8192"}, f, indent=1)
    on = [w for w in work if w[0] == "on_12s"]
    first, last = on[:10], on[-10:]
    us = lambda ws: sum(w[2] - w[1] for w in ws) / max(sum(w[3] for w in ws), 1) * 1e6
    print("on_12s: %.1f us a GEMM first 0.5 s, %.1f last 0.5 s" % (us(first), us(last)), flush=True)


if __name__ == "__main__":
    main()
