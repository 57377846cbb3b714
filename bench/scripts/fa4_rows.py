#!/usr/bin/env python3
"""FlashAttention-4's backward on the paper's rows, timed two ways in one process, for
bench/scripts/fa4-interleaved-run.sh with FA4_GAPLESS=1.

- "anchors": as ../shared/bench/anchors.py times it: 3 warmup steps, then REPS steps, each launched and waited
  for, so that the GPU idles while Python launches the next step (and between the step's own kernels while Python
  launches them). Providers fa4-det and fa4.
- "gapless": 3 warmup steps, then REPS steps with the host two steps ahead of the GPU, as a training loop runs;
  each step is timed from the end of the one before, so the GPU never waits for Python (but for the first step,
  timed from an event recorded before Python launched it: longer, so it never sets the fastest step and moves the
  median by at most one place).
  Providers fa4-det-gapless and fa4-gapless.

Per row and provider the two protocols run back to back, in alternating order from row to row. Shapes and FLOPs
follow anchors.py (16384 tokens, hidden 2048, bf16). Writes anchors.json into RESULTS_DIR (default: the current
folder) in anchors.py's form plus each step's time ("reps", ms) and the fastest ("ms_min"); prints one JSON line
per result. Environment: SEQLENS, HDIMS, REPS (default 20), FA4_SITE (the folder FA4 was installed into).
"""
import itertools
import json
import os
import site
import sys
import time

if os.environ.get("FA4_SITE"):
    site.addsitedir(os.environ["FA4_SITE"])

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sustain_fa4 import time_gapless  # noqa: E402  (the gapless loop, shared)

TOTAL, HIDDEN = 16384, 2048
SEQLENS = [int(s) for s in os.environ.get("SEQLENS", "512,1024,2048,4096,8192,16384").split(",")]
HDIMS = [int(d) for d in os.environ.get("HDIMS", "64,128").split(",")]
REPS = int(os.environ.get("REPS", "20"))


def flops_bwd(b, h, s, d, causal):
    f = 4.0 * b * h * s * s * d * 2.5
    return f / 2 if causal else f


def time_anchors(step):
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        step()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return times


def time_gapless_reps(step):
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    return time_gapless(step, lambda launched: launched < REPS)


def main():
    from flash_attn.cute import flash_attn_func

    print(torch.__version__, torch.cuda.get_device_name(), flush=True)
    results = []
    for n, (d, causal, s) in enumerate(itertools.product(HDIMS, [False, True], SEQLENS)):
        h, b = HIDDEN // d, TOTAL // s
        torch.manual_seed(0)
        q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
        do = torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
        for det in (True, False):
            t0 = time.time()
            r = flash_attn_func(q, k, v, causal=causal, deterministic=det)
            out = r[0] if isinstance(r, tuple) else r

            def step():
                return torch.autograd.grad(out, (q, k, v), do, retain_graph=True)

            protocols = [("anchors", time_anchors), ("gapless", time_gapless_reps)]
            if n % 2:
                protocols.reverse()
            for protocol, timer in protocols:
                provider = ("fa4-det" if det else "fa4") + ("-gapless" if protocol == "gapless" else "")
                try:
                    times = timer(step)
                    ms = sorted(times)[len(times) // 2]
                    row = dict(provider=provider, hdim=d, causal=causal, seqlen=s, batch=b, heads=h, ms=ms,
                               ms_min=min(times), tflops=flops_bwd(b, h, s, d, causal) / (ms * 1e-3) / 1e12,
                               reps=times, wall_s=time.time() - t0)
                except Exception as e:  # record and go on, as anchors.py does
                    row = dict(provider=provider, hdim=d, causal=causal, seqlen=s, error=repr(e)[:300])
                results.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "reps"}), flush=True)
            del out, r
    with open(os.path.join(os.environ.get("RESULTS_DIR", "."), "anchors.json"), "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
