#!/usr/bin/env python3
"""FlashAttention-4's backward timed as a series under sustained load, from a GPU at rest, for
bench/scripts/sustain-run.sh.

The GPU's power controller lets the first tens of milliseconds of load after a rest run about 10% faster than
sustained load (bench/NOTES.md run 138). A median of 20 steps mixes the two; this series shows both, with an NVML
reading per step (SM clock, board power, power or thermal limit), in the same form as the dashc harness's
"total_reps"/"main_reps".

Usage (FA4_SITE names the folder FA4 was installed into with pip --target, e.g. /tmp/site; its .pth files
count, as with site.addsitedir):
  python3 sustain_fa4.py HDIM MASK SEQLEN PROVIDER IDLE_S SECONDS OUT.json [gapless]
PROVIDER is fa4 or fa4-det. The row's shape follows anchors.py (16384 tokens, hidden 2048). The first call
compiles FA4's kernels; the GPU then rests IDLE_S seconds, runs two warmup steps and times steps for SECONDS.

By default each step is timed as anchors.py times it: launched, then waited for, so that the GPU idles while Python
launches the next step (and between the step's own kernels while Python launches them). With "gapless" the host
keeps two steps queued ahead of the GPU, as a training loop does, and each step's time runs from the end of the one
before: the GPU never waits for Python. Either way the board's energy over the timed steps is recorded ("energy":
joules, steps, wall seconds), the energy of the idle gaps included.
"""
import ctypes
import json
import os
import site
import sys
import time

if os.environ.get("FA4_SITE"):
    site.addsitedir(os.environ["FA4_SITE"])

import torch


class Nvml:
    """The few NVML entry points the harness reads too; readings are None where NVML is missing."""

    def __init__(self):
        self.dev = None
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
            handle = ctypes.c_void_p()
            # The device machines have one GPU: NVML's index 0 is CUDA's device 0.
            if self.lib.nvmlInit_v2() == 0 and self.lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)) == 0:
                self.dev = handle
        except (OSError, AttributeError):
            pass

    def read(self):
        if self.dev is None:
            return None, None, None
        mhz, mw, why = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_ulonglong()
        ok_clock = self.lib.nvmlDeviceGetClockInfo(self.dev, 1, ctypes.byref(mhz)) == 0
        ok_power = self.lib.nvmlDeviceGetPowerUsage(self.dev, ctypes.byref(mw)) == 0
        try:
            reasons = self.lib.nvmlDeviceGetCurrentClocksEventReasons
        except AttributeError:  # the name before NVML 12.2
            reasons = self.lib.nvmlDeviceGetCurrentClocksThrottleReasons
        ok_why = reasons(self.dev, ctypes.byref(why)) == 0
        limited = int(bool(why.value & (0x4 | 0x8 | 0x20 | 0x40 | 0x80))) if ok_why else None
        return (mhz.value if ok_clock else None), (mw.value / 1000.0 if ok_power else None), limited

    def energy_mj(self):
        """The board's energy counter in mJ (since the driver loaded), or None."""
        if self.dev is None:
            return None
        mj = ctypes.c_ulonglong()
        try:
            ok = self.lib.nvmlDeviceGetTotalEnergyConsumption(self.dev, ctypes.byref(mj)) == 0
        except AttributeError:
            return None
        return mj.value if ok else None


def time_gapless(step, more, after_launch=None):
    """Times steps with the host two steps ahead of the GPU while more(steps launched) holds; returns each step's
    time in ms, from the end of the step before (the first step's from an event recorded before Python launched it,
    so it includes that launch). after_launch(end event of the step just launched) runs after each launch, once the
    host has waited for the step two back. Shared with fa4_rows.py."""
    ends = [torch.cuda.Event(enable_timing=True)]
    ends[0].record()
    while more(len(ends) - 1):
        step()
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        ends.append(e)
        if len(ends) > 3:
            ends[-3].synchronize()
        if after_launch is not None:
            after_launch(e)
    torch.cuda.synchronize()
    return [ends[i].elapsed_time(ends[i + 1]) for i in range(len(ends) - 1)]


def main():
    hdim, mask, seqlen, provider, idle_s, seconds, out = sys.argv[1:8]
    gapless = sys.argv[8:9] == ["gapless"]
    hdim, seqlen, idle_s, seconds = int(hdim), int(seqlen), float(idle_s), float(seconds)
    causal = mask == "causal"
    from flash_attn.cute import flash_attn_func

    heads, batch = 2048 // hdim, 16384 // seqlen
    torch.manual_seed(0)
    shape = (batch, seqlen, heads, hdim)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    do = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    r = flash_attn_func(q, k, v, causal=causal, deterministic=provider == "fa4-det")
    o = r[0] if isinstance(r, tuple) else r

    def step():
        return torch.autograd.grad(o, (q, k, v), do, retain_graph=True)

    step()  # compiles
    torch.cuda.synchronize()
    nvml = Nvml()
    time.sleep(idle_s)
    for _ in range(2):
        step()
    torch.cuda.synchronize()
    reps = []
    mj_start = nvml.energy_mj()
    start = time.time()
    if not gapless:
        while time.time() - start < seconds:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            step()
            b.record()
            mhz, watts, limited = nvml.read() if not b.query() else (None, None, None)
            torch.cuda.synchronize()
            reps.append([a.elapsed_time(b), mhz, watts, limited])
    else:
        # A reading is taken while step i or the one before it runs (none if the GPU has finished both): the
        # readings serve the series' medians, not one step.
        readings = []
        times = time_gapless(step, lambda _: time.time() - start < seconds,
                             lambda end: readings.append(nvml.read() if not end.query() else (None, None, None)))
        reps = [[ms, *reading] for ms, reading in zip(times, readings)]
    torch.cuda.synchronize()
    wall_s = time.time() - start
    mj_end = nvml.energy_mj()
    energy = None
    if mj_start is not None and mj_end is not None and mj_end >= mj_start:
        energy = dict(joules=(mj_end - mj_start) / 1000.0, backwards=len(reps), wall_s=wall_s)
    flops = 4.0 * batch * heads * seqlen * seqlen * hdim * 2.5 * (0.5 if causal else 1.0)
    with open(out, "w") as fh:
        json.dump(dict(provider=provider, hdim=hdim, mask=mask, seqlen=seqlen, flops=flops, idle_s=idle_s,
                       gapless=gapless, total_reps=reps, energy=energy), fh)


if __name__ == "__main__":
    main()
